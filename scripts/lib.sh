# Shared by the scripts: the service user, the staging of the tree, and the
# host set-up.  Sourced, not run.

RTSB_USER=${RTSB_USER:-rtsandbox}
# The chat bot's user of the bot_group tests: in a group of its own that the
# service user is not in.
RTSB_BOT_USER=${RTSB_BOT_USER:-rtsandbox-bot}
RTSB_WORK=${RTSB_WORK:-/var/tmp/rtsandbox}
RTSB_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

say() { printf '==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

need_root() {
	[ "$(id -u)" -eq 0 ] || die "run this as root: it installs packages, starts dockerd and creates the service user $RTSB_USER"
}

# Debian packages the build, the tests and the demo need (the last line:
# the Debian package's build, lintian and systemd-sysusers).
RTSB_PACKAGES="meson ninja-build pkg-config gcc libc6-dev patch clang libclang-rt-14-dev
 libevent-dev libcjson-dev libcap-dev libseccomp-dev libcurl4-openssl-dev
 libssl-dev zlib1g-dev libbrotli-dev libxml2-dev libunistring-dev check docker.io
 openssl python3 python3-brotli util-linux procps mandoc rsync nodejs
 build-essential debhelper dpkg-dev lintian systemd"

install_packages() {
	local missing="" p
	for p in $RTSB_PACKAGES; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		    grep -q 'install ok installed' || missing="$missing $p"
	done
	# The Node client's tests install their compiler with npm.  A Node.js
	# from outside Debian brings its own npm, which Debian's would replace.
	command -v npm >/dev/null 2>&1 || missing="$missing npm"
	if [ -n "$missing" ]; then
		say "installing:$missing"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-install-recommends $missing >/dev/null
	fi
}

docker_running() {
	docker version --format '{{.Server.Version}}' >/dev/null 2>&1
}

start_docker() {
	if docker_running; then
		return 0
	fi
	say "starting dockerd"
	mkdir -p /var/log
	nohup dockerd --iptables=false --bridge=none --ip-forward=false \
	    >>/var/log/rtsandbox-dockerd.log 2>&1 &
	for _ in $(seq 1 60); do
		docker_running && return 0
		sleep 0.5
	done
	tail -n 20 /var/log/rtsandbox-dockerd.log >&2
	die "dockerd did not start"
}

# SIGTERM to dockerd (it stops its containers), SIGKILL after 60 s, then
# started again once it and its containerd are gone.
restart_docker() {
	local pid t0=$SECONDS
	pid=$(pidof dockerd || true)
	if [ -n "$pid" ]; then
		say "restarting dockerd"
		# shellcheck disable=SC2086
		kill -TERM $pid
		for _ in $(seq 1 120); do
			pidof dockerd >/dev/null || break
			sleep 0.5
		done
		if pidof dockerd >/dev/null; then
			say "dockerd did not stop in 60 s: SIGKILL"
			# shellcheck disable=SC2086
			kill -KILL $(pidof dockerd) 2>/dev/null || true
			sleep 1
		fi
		# the containerd that dockerd ran, and a pid file left behind
		for _ in $(seq 1 40); do
			pgrep -f '^containerd --config /var/run/docker/containerd' \
			    >/dev/null || break
			sleep 0.5
		done
		pidof dockerd >/dev/null || rm -f /var/run/docker.pid
		say "dockerd stopped in $((SECONDS - t0)) s"
	fi
	start_docker
	chgrp docker /var/run/docker.sock
	chmod 0660 /var/run/docker.sock
}

make_user() {
	getent group docker >/dev/null || groupadd --system docker
	if ! id "$RTSB_USER" >/dev/null 2>&1; then
		say "creating service user $RTSB_USER"
		useradd --system --user-group --groups docker \
		    --home-dir /var/lib/rtsandbox --create-home \
		    --shell /usr/sbin/nologin "$RTSB_USER"
	fi
	id -nG "$RTSB_USER" | grep -qw docker || usermod -aG docker "$RTSB_USER"
	# dockerd may have made the socket before the group existed
	[ -S /var/run/docker.sock ] && chgrp docker /var/run/docker.sock
	chmod 0660 /var/run/docker.sock 2>/dev/null || true
}

# A second unprivileged user, for the tests of bot_group
# (tests/integration/test_botgroup.py): they run as the service user and
# reach the state directory as this one through a container of its uid.
make_bot_user() {
	if ! id "$RTSB_BOT_USER" >/dev/null 2>&1; then
		say "creating test user $RTSB_BOT_USER"
		useradd --system --user-group --no-create-home \
		    --shell /usr/sbin/nologin "$RTSB_BOT_USER"
	fi
	! id -nG "$RTSB_USER" | grep -qw "$RTSB_BOT_USER" ||
	    die "$RTSB_USER must not be in the group $RTSB_BOT_USER"
}

setup_host() {
	need_root
	install_packages
	start_docker
	make_user
	make_bot_user
}

# Copy the tree to a place the service user can read and own, so that a
# checkout under /root works as well as anywhere else.
stage_tree() {
	local dest=$1
	mkdir -p "$dest"
	chmod 0755 "$RTSB_WORK" 2>/dev/null || true
	rsync -a --delete --exclude '/build*' --exclude '.git' \
	    "$RTSB_TOP"/ "$dest"/
	chown -R "$RTSB_USER:$RTSB_USER" "$dest"
}

as_user() {
	setpriv --reuid="$RTSB_USER" --regid="$RTSB_USER" --init-groups \
	    --reset-env -- env HOME=/var/lib/rtsandbox \
	    PATH=/usr/local/bin:/usr/bin:/bin "$@"
}

# The same in the background, with $! the command's own pid (a function
# put in the background would leave $! a subshell that kill does not reach
# through).
as_user_bg() {
	setpriv --reuid="$RTSB_USER" --regid="$RTSB_USER" --init-groups \
	    --reset-env -- env HOME=/var/lib/rtsandbox \
	    PATH=/usr/local/bin:/usr/bin:/bin "$@" &
}
