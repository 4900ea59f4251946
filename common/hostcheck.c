/*
 * Host checks for rtsandboxctl doctor and rtsandboxd -n.  The rules are the
 * ones the daemon applies when it starts (the file guard's for the state
 * directory, egress's for credential files, the supervisor's for the control
 * socket), stated here once more so that an operator hears about them before
 * a start fails; the kernel's abilities are probed with the very sandbox
 * code the helpers run, in a child that dies instead of the caller.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/landlock.h>

#include "aclx.h"
#include "hostcheck.h"
#include "limits.h"
#include "sandbox.h"

#define SUN_PATH_MAX	(sizeof(((struct sockaddr_un *)0)->sun_path) - 1)
/* What a probe child may say on stderr, kept for the report. */
#define PROBE_OUT_MAX	400

const char *const hc_root_engine_sockets[] = {
	"/var/run/docker.sock",
	"/run/docker.sock",
	"/run/podman/podman.sock",
	"/run/containerd/containerd.sock",
	NULL
};

/* Groups that are root in all but name wherever they exist. */
static const char *const root_groups[] = {
	"root", "docker", "lxd", "incus-admin", "sudo", "wheel", "disk",
	"libvirt", NULL
};

const char *
hc_status_to_string(enum hc_status s)
{
	switch (s) {
	case HC_OK:
		return "ok";
	case HC_WARN:
		return "warn";
	case HC_FAIL:
		return "FAIL";
	}
	return "?";
}

void
hc_print(const struct hc_result *r, void *file)
{
	fprintf(file, "%-4s  %s: %s\n", hc_status_to_string(r->hr_status),
	    r->hr_name, r->hr_text);
}

void
hc_report(hc_report_fn fn, void *arg, enum hc_status st, const char *name,
    const char *fmt, ...)
{
	struct hc_result	 r;
	va_list			 ap;
	char			*p;

	memset(&r, 0, sizeof(r));
	r.hr_status = st;
	(void)snprintf(r.hr_name, sizeof(r.hr_name), "%s", name);
	va_start(ap, fmt);
	(void)vsnprintf(r.hr_text, sizeof(r.hr_text), fmt, ap);
	va_end(ap);
	/* One line each, whatever a probe or a path holds. */
	for (p = r.hr_text; *p != '\0'; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	fn(&r, arg);
}

static const char *
user_name(uid_t uid, char *buf, size_t len)
{
	struct passwd	*pw;

	if ((pw = getpwuid(uid)) != NULL)
		(void)snprintf(buf, len, "%s", pw->pw_name);
	else
		(void)snprintf(buf, len, "%lu", (unsigned long)uid);
	return buf;
}

static const char *
group_name(gid_t gid, char *buf, size_t len)
{
	struct group	*gr;

	if ((gr = getgrgid(gid)) != NULL)
		(void)snprintf(buf, len, "%s", gr->gr_name);
	else
		(void)snprintf(buf, len, "%lu", (unsigned long)gid);
	return buf;
}

/*
 * Runs fn in a child whose stderr is kept in out.  Returns the child's wait
 * status, or -1 when it could not run.
 */
static int
probe_child(int (*fn)(void), char *out, size_t outlen)
{
	char	 junk[256];
	size_t	 len = 0;
	ssize_t	 r;
	pid_t	 pid;
	int	 p[2], st;

	out[0] = '\0';
	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	(void)fflush(NULL);
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		if (dup2(p[1], STDERR_FILENO) == -1)
			_exit(126);
		_exit(fn());
	}
	close(p[1]);
	for (;;) {
		if (len + 1 < outlen)
			r = read(p[0], out + len, outlen - 1 - len);
		else
			r = read(p[0], junk, sizeof(junk));
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (len + 1 < outlen)
			len += (size_t)r;
	}
	out[len] = '\0';
	while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
		out[--len] = '\0';
	close(p[0]);
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			return -1;
	return st;
}

/*
 * User
 */

void
hostcheck_user(uid_t uid, gid_t gid, hc_report_fn fn, void *arg)
{
	char	 u[64], g[64];

	(void)user_name(uid, u, sizeof(u));
	(void)group_name(gid, g, sizeof(g));
	if (uid == 0 || gid == 0)
		hc_report(fn, arg, HC_FAIL, "user", "uid %lu, gid %lu: "
		    "rtsandboxd refuses root, and what root can reach says "
		    "nothing of what the service user can; run this as the "
		    "service user (runuser -u rtsandbox -- ...)",
		    (unsigned long)uid, (unsigned long)gid);
	else
		hc_report(fn, arg, HC_OK, "user", "%s (uid %lu), group %s "
		    "(gid %lu)", u, (unsigned long)uid, g, (unsigned long)gid);
}

int
hostcheck_root_group(const char *name, gid_t gid)
{
	size_t	 i;

	if (gid == 0)
		return 1;
	for (i = 0; name != NULL && root_groups[i] != NULL; i++)
		if (strcmp(name, root_groups[i]) == 0)
			return 1;
	return 0;
}

/* A root-owned engine socket this process may connect to. */
static int
reaches_root_socket(const char *path, struct stat *st)
{
	return stat(path, st) == 0 && S_ISSOCK(st->st_mode) &&
	    st->st_uid == 0 && access(path, R_OK | W_OK) == 0;
}

void
hostcheck_groups(uid_t uid, gid_t gid, const char *engine_socket,
    hc_report_fn fn, void *arg)
{
	gid_t		 gids[NGROUPS_MAX + 1];
	struct stat	 st, seen[8];
	char		 u[64], g[64], found[HC_TEXT_MAX / 2];
	const char	*paths[8];
	size_t		 i, k, nseen = 0, np = 0, o = 0;
	int		 n;

	(void)user_name(uid, u, sizeof(u));
	found[0] = '\0';
	if ((n = getgroups(NGROUPS_MAX, gids)) == -1)
		n = 0;
	gids[n++] = gid;
	for (i = 0; i < (size_t)n && o < sizeof(found); i++) {
		for (k = 0; k < i; k++)
			if (gids[k] == gids[i])
				break;
		if (k < i)
			continue;
		(void)group_name(gids[i], g, sizeof(g));
		if (hostcheck_root_group(g, gids[i]))
			o += (size_t)snprintf(found + o, sizeof(found) - o,
			    "%sgroup %s", o > 0 ? ", " : "", g);
	}
	if (engine_socket != NULL)
		paths[np++] = engine_socket;
	for (i = 0; hc_root_engine_sockets[i] != NULL; i++)
		paths[np++] = hc_root_engine_sockets[i];
	for (i = 0; i < np && o < sizeof(found); i++) {
		if (!reaches_root_socket(paths[i], &st))
			continue;
		/* /var/run/docker.sock and /run/docker.sock are one. */
		for (k = 0; k < nseen; k++)
			if (seen[k].st_dev == st.st_dev &&
			    seen[k].st_ino == st.st_ino)
				break;
		if (k < nseen)
			continue;
		if (nseen < sizeof(seen) / sizeof(seen[0]))
			seen[nseen++] = st;
		o += (size_t)snprintf(found + o, sizeof(found) - o,
		    "%sroot's %s (group %s)", o > 0 ? ", " : "", paths[i],
		    group_name(st.st_gid, g, sizeof(g)));
	}
	if (o == 0) {
		hc_report(fn, arg, HC_OK, "groups", "%s is in no root-"
		    "equivalent group and reaches no root-owned engine socket",
		    u);
		return;
	}
	hc_report(fn, arg, HC_WARN, "groups", "%s has %s: whoever takes over "
	    "a process of the daemon is root on the host; a hardened host "
	    "runs rootless Podman as the service user, in no privileged group "
	    "(rtsandboxd(8), ENGINES)", u, found);
}

/*
 * The kernel
 */

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION	(1U << 0)
#endif

void
hostcheck_landlock(hc_report_fn fn, void *arg)
{
	long	 abi;

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (abi >= 1) {
		hc_report(fn, arg, HC_OK, "landlock", "ABI %ld", abi);
		return;
	}
	if (errno == EOPNOTSUPP)
		hc_report(fn, arg, HC_WARN, "landlock", "built into the kernel "
		    "but not enabled: every process runs without its file "
		    "rules; add landlock to the kernel's lsm= boot parameter");
	else
		hc_report(fn, arg, HC_WARN, "landlock", "not in this kernel "
		    "(%s): every process runs without its file rules; a kernel "
		    "of 5.13 or later with CONFIG_SECURITY_LANDLOCK has them",
		    strerror(errno));
}

/* The helpers' own filter with nothing added: getppid(2) is not in it. */
static int
probe_seccomp(void)
{
	sandbox_no_new_privs();
	sandbox_seccomp(NULL, 0);
	(void)syscall(SYS_getppid);
	return 3;
}

void
hostcheck_seccomp(hc_report_fn fn, void *arg)
{
	char	 out[PROBE_OUT_MAX];
	int	 st;

	st = probe_child(probe_seccomp, out, sizeof(out));
	if (st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
		hc_report(fn, arg, HC_OK, "seccomp", "a call outside a "
		    "process's table kills it");
	else if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 3)
		hc_report(fn, arg, HC_FAIL, "seccomp", "a filter loaded but "
		    "did not stop a call outside its table: rtsandboxd must "
		    "not run on this kernel");
	else
		hc_report(fn, arg, HC_FAIL, "seccomp", "no filter could be "
		    "loaded (%s): rtsandboxd cannot start its helpers; it needs "
		    "a kernel with CONFIG_SECCOMP_FILTER and libseccomp 2.5",
		    out[0] != '\0' ? out : "the probe did not run");
}

static int
probe_userns(void)
{
	char	 why[128];
	int	 rc;

	rc = sandbox_empty_root_probe(why, sizeof(why));
	dprintf(STDERR_FILENO, "%s", why);
	return rc == 1 ? 0 : 2;
}

int
hostcheck_empty_root(char *why, size_t len)
{
	char	 out[PROBE_OUT_MAX];
	int	 st;

	st = probe_child(probe_userns, out, sizeof(out));
	(void)snprintf(why, len, "%s", out[0] != '\0' ? out :
	    "the probe did not run");
	if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 1;
	if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 2)
		return 0;
	return -1;
}

void
hostcheck_userns(int optional, hc_report_fn fn, void *arg)
{
	char		 why[PROBE_OUT_MAX];
	const char	*field = optional ? "sandbox.empty_root \"optional\"" :
	    "sandbox.empty_root \"required\"";

	switch (hostcheck_empty_root(why, sizeof(why))) {
	case 1:
		hc_report(fn, arg, HC_OK, "user namespaces", "brokers and "
		    "research jobs run in an empty root (%s)", field);
		break;
	case 0:
		if (optional)
			hc_report(fn, arg, HC_WARN, "user namespaces", "%s, "
			    "accepted as missing (%s): brokers and research "
			    "jobs keep the host's file system in view, confined "
			    "by Landlock and seccomp alone; allow unprivileged "
			    "user namespaces (sysctl user.max_user_namespaces, "
			    "kernel.apparmor_restrict_unprivileged_userns=0)",
			    why, field);
		else
			hc_report(fn, arg, HC_FAIL, "user namespaces", "%s: "
			    "rtsandboxd refuses to start, since brokers and "
			    "research jobs would keep the host's file system "
			    "in view (%s); allow unprivileged user namespaces "
			    "(sysctl user.max_user_namespaces, "
			    "kernel.apparmor_restrict_unprivileged_userns=0), or "
			    "accept their absence with sandbox.empty_root "
			    "\"optional\"", why, field);
		break;
	default:
		hc_report(fn, arg, HC_FAIL, "user namespaces", "the empty "
		    "root failed (%s): brokers and research jobs cannot start",
		    why);
		break;
	}
}

/*
 * Files
 */

enum hc_status
hostcheck_state_stat(const char *path, const struct stat *st, uid_t uid,
    char *text, size_t len)
{
	char	 u[64];

	(void)user_name(uid, u, sizeof(u));
	if (S_ISLNK(st->st_mode)) {
		(void)snprintf(text, len, "%s is a symbolic link: make it the "
		    "directory itself", path);
		return HC_FAIL;
	}
	if (!S_ISDIR(st->st_mode)) {
		(void)snprintf(text, len, "%s is not a directory", path);
		return HC_FAIL;
	}
	if (st->st_uid != uid) {
		(void)snprintf(text, len, "%s is owned by uid %lu, not %s: "
		    "chown %s %s", path, (unsigned long)st->st_uid, u, u, path);
		return HC_FAIL;
	}
	if ((st->st_mode & 077) != 0) {
		(void)snprintf(text, len, "%s has mode %04o, which lets group "
		    "or others in: chmod 0700 %s", path,
		    (unsigned)(st->st_mode & 07777), path);
		return HC_FAIL;
	}
	(void)snprintf(text, len, "%s: owned by %s, mode %04o", path, u,
	    (unsigned)(st->st_mode & 07777));
	return HC_OK;
}

enum hc_status
hostcheck_state_bot_stat(const char *path, const struct stat *st, uid_t uid,
    const char *group, int acl_ok, char *text, size_t len)
{
	if (acl_ok == -1) {
		(void)snprintf(text, len, "the file system of %s has no POSIX "
		    "ACLs, which bot_group (%s) needs: mount it with them, or "
		    "leave bot_group out", path, group);
		return HC_FAIL;
	}
	if (S_ISDIR(st->st_mode) && st->st_uid == uid &&
	    (st->st_mode & 077) == 010 && acl_ok) {
		(void)snprintf(text, len, "%s: mode %04o, search for %s "
		    "(bot_group) alone", path,
		    (unsigned)(st->st_mode & 07777), group);
		return HC_OK;
	}
	if (S_ISDIR(st->st_mode) && st->st_uid == uid &&
	    (st->st_mode & 077) != 0) {
		(void)snprintf(text, len, "%s has mode %04o%s, which lets "
		    "group or others in beyond the search bit of %s "
		    "(bot_group): setfacl -b %s; chmod 0700 %s, and the file "
		    "guard gives %s its bit", path,
		    (unsigned)(st->st_mode & 07777), (st->st_mode & 077) ==
		    010 ? " without an ACL naming it alone" : "", group, path,
		    path, group);
		return HC_FAIL;
	}
	/* otherwise as without bot_group */
	return hostcheck_state_stat(path, st, uid, text, len);
}

void
hostcheck_state_dir(const char *path, uid_t uid, hc_report_fn fn, void *arg)
{
	hostcheck_state_dir_bot(path, uid, NULL, 0, fn, arg);
}

void
hostcheck_state_dir_bot(const char *path, uid_t uid, const char *group,
    gid_t gid, hc_report_fn fn, void *arg)
{
	uint8_t		 want[ACLX_MAX], have[ACLX_MAX + 8];
	size_t		 wantlen;
	ssize_t		 got;
	char		 prefix[PATH_MAX], text[HC_TEXT_MAX], u[64];
	struct stat	 st;
	size_t		 i, n = strlen(path);
	enum hc_status	 s;

	if (path[0] != '/' || n >= sizeof(prefix)) {
		hc_report(fn, arg, HC_FAIL, "state_dir", "%s is not an "
		    "absolute path", path);
		return;
	}
	/* Every component, as the file guard walks it: no link anywhere. */
	for (i = 1; i <= n; i++) {
		if (i < n && path[i] != '/')
			continue;
		memcpy(prefix, path, i);
		prefix[i] = '\0';
		if (lstat(prefix, &st) == -1) {
			if (errno == ENOENT)
				hc_report(fn, arg, HC_FAIL, "state_dir", "%s "
				    "does not exist: install -d -m 0700 -o %s "
				    "%s", prefix, user_name(uid, u, sizeof(u)),
				    path);
			else
				hc_report(fn, arg, HC_FAIL, "state_dir",
				    "%s: %s", prefix, strerror(errno));
			return;
		}
		if (i < n && (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode))) {
			hc_report(fn, arg, HC_FAIL, "state_dir", "%s is %s: "
			    "the file guard follows no link on the way to the "
			    "state directory", prefix, S_ISLNK(st.st_mode) ?
			    "a symbolic link" : "not a directory");
			return;
		}
	}
	if (group == NULL)
		s = hostcheck_state_stat(path, &st, uid, text, sizeof(text));
	else {
		wantlen = aclx_build(want, ACLX_R | ACLX_W | ACLX_X, gid,
		    ACLX_X, NULL, 0);
		got = getxattr(path, ACLX_ACCESS, have, sizeof(have));
		s = hostcheck_state_bot_stat(path, &st, uid, group,
		    got == -1 && errno == EOPNOTSUPP ? -1 :
		    got == (ssize_t)wantlen && memcmp(have, want, wantlen) == 0,
		    text, sizeof(text));
	}
	hc_report(fn, arg, s, "state_dir", "%s", text);
}

enum hc_status
hostcheck_cred_stat(const char *path, const struct stat *st, uid_t uid,
    char *text, size_t len)
{
	char	 u[64];

	(void)user_name(uid, u, sizeof(u));
	if (!S_ISREG(st->st_mode)) {
		(void)snprintf(text, len, "%s is not a regular file", path);
		return HC_FAIL;
	}
	if (st->st_uid != uid) {
		(void)snprintf(text, len, "%s is owned by uid %lu, not %s: "
		    "chown %s %s", path, (unsigned long)st->st_uid, u, u, path);
		return HC_FAIL;
	}
	if ((st->st_mode & 077) != 0) {
		(void)snprintf(text, len, "%s has mode %04o, which lets group "
		    "or others in: chmod 0600 %s", path,
		    (unsigned)(st->st_mode & 07777), path);
		return HC_FAIL;
	}
	if (st->st_size > (off_t)HC_CREDENTIAL_MAX) {
		(void)snprintf(text, len, "%s holds %lld bytes, more than the "
		    "%u egress reads", path, (long long)st->st_size,
		    HC_CREDENTIAL_MAX);
		return HC_FAIL;
	}
	if (st->st_size == 0) {
		(void)snprintf(text, len, "%s is empty: every call needing it "
		    "fails until it holds the token", path);
		return HC_WARN;
	}
	(void)snprintf(text, len, "%s: owned by %s, mode %04o", path, u,
	    (unsigned)(st->st_mode & 07777));
	return HC_OK;
}

/* One credential file, opened as egress opens it (the last component
 * never a link): its status, and why in text. */
static enum hc_status
hostcheck_cred_file(const char *path, uid_t uid, char *text, size_t len)
{
	struct stat	 st;
	int		 fd, saved;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
	    O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			(void)snprintf(text, len, "%s does not exist: write "
			    "the token there, mode 0600", path);
		else if (errno == ELOOP)
			(void)snprintf(text, len, "%s is a symbolic link, "
			    "which egress does not follow", path);
		else
			(void)snprintf(text, len, "%s: %s", path,
			    strerror(errno));
		return HC_FAIL;
	}
	if (fstat(fd, &st) == -1) {
		saved = errno;
		close(fd);
		(void)snprintf(text, len, "%s: %s", path, strerror(saved));
		return HC_FAIL;
	}
	close(fd);
	return hostcheck_cred_stat(path, &st, uid, text, len);
}

void
hostcheck_credential(const char *name, const char *path, uid_t uid,
    hc_report_fn fn, void *arg)
{
	char		 text[HC_TEXT_MAX];
	enum hc_status	 s;

	s = hostcheck_cred_file(path, uid, text, sizeof(text));
	hc_report(fn, arg, s, name, "%s", text);
}

void
hostcheck_credential_list(const char *name, const struct hc_cred *v,
    size_t n, uid_t uid, hc_report_fn fn, void *arg)
{
	char		 text[HC_TEXT_MAX], u[64];
	enum hc_status	 s;
	size_t		 i, ok = 0;

	for (i = 0; i < n; i++) {
		s = hostcheck_cred_file(v[i].hc_path, uid, text,
		    sizeof(text));
		if (s == HC_OK)
			ok++;
		else
			hc_report(fn, arg, s, name, "%s: %s", v[i].hc_field,
			    text);
	}
	if (ok > 0) {
		(void)user_name(uid, u, sizeof(u));
		hc_report(fn, arg, HC_OK, name, "%zu of %zu files owned by "
		    "%s, without group or other bits", ok, n, u);
	}
}

enum hc_status
hostcheck_ctldir_stat(const char *dir, const struct stat *st, uid_t uid,
    char *text, size_t len)
{
	if (!S_ISDIR(st->st_mode)) {
		(void)snprintf(text, len, "in %s, which is not a directory",
		    dir);
		return HC_FAIL;
	}
	if ((st->st_uid != uid && st->st_uid != 0) ||
	    (st->st_mode & (S_IWGRP | S_IWOTH)) != 0) {
		(void)snprintf(text, len, "in %s (owner %lu, mode %04o), which "
		    "must be the service user's or root's and writable by "
		    "neither group nor others: the socket is named there "
		    "before the supervisor confines itself", dir,
		    (unsigned long)st->st_uid, (unsigned)(st->st_mode & 07777));
		return HC_FAIL;
	}
	(void)snprintf(text, len, "in %s (owner %lu, mode %04o)", dir,
	    (unsigned long)st->st_uid, (unsigned)(st->st_mode & 07777));
	return HC_OK;
}

void
hostcheck_control_socket(const char *path, uid_t uid, hc_report_fn fn,
    void *arg)
{
	char		 dir[PATH_MAX], text[HC_TEXT_MAX];
	const char	*slash;
	struct stat	 st;
	enum hc_status	 s;

	if ((slash = strrchr(path, '/')) == NULL || slash[1] == '\0') {
		hc_report(fn, arg, HC_FAIL, "control_socket", "%s names no "
		    "socket", path);
		return;
	}
	(void)snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 :
	    (int)(slash - path), path);
	if (lstat(dir, &st) == -1) {
		hc_report(fn, arg, HC_FAIL, "control_socket", "%s: %s%s", dir,
		    strerror(errno), errno == ENOENT ? ": make it, owned by "
		    "the service user, mode 0755" : "");
		return;
	}
	if (S_ISLNK(st.st_mode)) {
		hc_report(fn, arg, HC_FAIL, "control_socket", "%s is a "
		    "symbolic link", dir);
		return;
	}
	s = hostcheck_ctldir_stat(dir, &st, uid, text, sizeof(text));
	hc_report(fn, arg, s, "control_socket", "%s %s", path, text);
}

void
hostcheck_socket_paths(const char *control, const char *engine,
    size_t segment_room, hc_report_fn fn, void *arg)
{
	size_t	 cl = strlen(control), el = engine != NULL ? strlen(engine) : 0;

	if (cl > SUN_PATH_MAX || el > SUN_PATH_MAX) {
		hc_report(fn, arg, HC_FAIL, "socket paths", "%s is longer "
		    "than the %zu bytes of a socket address", cl > SUN_PATH_MAX ?
		    control : engine, SUN_PATH_MAX);
		return;
	}
	if (segment_room == 0) {
		hc_report(fn, arg, HC_FAIL, "socket paths", "state_dir is too "
		    "long for any broker socket to fit %u characters: choose "
		    "a shorter one", BROKER_SOCK_PATH_MAX);
		return;
	}
	hc_report(fn, arg, segment_room < HC_SEGMENT_WARN ? HC_WARN : HC_OK,
	    "socket paths", "control socket %zu and engine socket %zu of %zu "
	    "bytes; broker sockets leave %zu characters for a channel's "
	    "segment%s", cl, el, SUN_PATH_MAX, segment_room,
	    segment_room < HC_SEGMENT_WARN ? ": channels with longer keys "
	    "cannot start; choose a shorter state_dir" : "");
}

void
hostcheck_run(const struct hostcheck_params *p, hc_report_fn fn, void *arg)
{
	size_t	 i;

	hostcheck_user(p->hp_uid, p->hp_gid, fn, arg);
	hostcheck_groups(p->hp_uid, p->hp_gid, p->hp_engine_socket, fn, arg);
	hostcheck_landlock(fn, arg);
	hostcheck_seccomp(fn, arg);
	hostcheck_userns(p->hp_empty_root_optional, fn, arg);
	if (p->hp_state_dir == NULL)
		return;
	hostcheck_state_dir_bot(p->hp_state_dir, p->hp_uid, p->hp_bot_group,
	    p->hp_bot_gid, fn, arg);
	for (i = 0; i < 2 && p->hp_cred_names[i] != NULL; i++)
		hostcheck_credential(p->hp_cred_names[i], p->hp_cred_paths[i],
		    p->hp_uid, fn, arg);
	if (p->hp_ncred_list > 0)
		hostcheck_credential_list("upstream.credentials",
		    p->hp_cred_list, p->hp_ncred_list, p->hp_uid, fn, arg);
	hostcheck_control_socket(p->hp_control_socket, p->hp_uid, fn, arg);
	hostcheck_socket_paths(p->hp_control_socket, p->hp_engine_socket,
	    p->hp_segment_room, fn, arg);
}
