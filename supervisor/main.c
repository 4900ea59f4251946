/*
 * rtsandboxd: the supervisor.  It reads the configuration, starts the file
 * guard, the Docker client and egress, serves the control socket, and starts
 * one broker per channel.
 */
#include <sys/stat.h>

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "buildconf.h"
#include "config.h"
#include "control.h"
#include "hostcheck.h"
#include "journal.h"
#include "log.h"
#include "sandbox.h"
#include "notify.h"
#include "spawner.h"
#include "supervisor.h"

/* Children get this long to exit after SIGTERM before SIGKILL. */
#define SHUTDOWN_GRACE_MS	3000

static struct supervisor sv_store;
static struct event	*ev_grace;

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: rtsandboxd [-dnv] [-f config] [-x helperdir]\n");
	exit(1);
}

static void
shutdown_check(void)
{
	if (child_count_alive() == 0) {
		log_info("every child is gone; exiting");
		event_base_loopbreak(sv->sv_base);
	}
}

static void
grace_expired(evutil_socket_t fd, short ev, void *arg)
{
	log_warnx("children still alive after %d ms; killing them",
	    SHUTDOWN_GRACE_MS);
	child_kill_all();
}

static void
sig_handler(evutil_socket_t sig, short ev, void *arg)
{
	struct timeval	 tv = { SHUTDOWN_GRACE_MS / 1000,
	    (SHUTDOWN_GRACE_MS % 1000) * 1000 };

	switch (sig) {
	case SIGTERM:
	case SIGINT:
		if (sv->sv_stopping)
			return;
		log_info("%s: shutting down", strsignal(sig));
		notify_send("STOPPING=1");
		sv->sv_stopping = 1;
		control_close();
		child_stop_all();
		if ((ev_grace = evtimer_new(sv->sv_base, grace_expired,
		    NULL)) == NULL || evtimer_add(ev_grace, &tv) == -1)
			fatalx("shutdown timer");
		shutdown_check();
		break;
	case SIGCHLD:
		child_reap();
		if (sv->sv_stopping)
			shutdown_check();
		break;
	case SIGHUP:
		if (!sv->sv_stopping)
			supervisor_reload();
		break;
	}
}

static void
print_errors(const char *path, const struct config_errors *errs)
{
	size_t	 i;

	for (i = 0; i < errs->nwarn; i++)
		fprintf(stderr, "rtsandboxd: %s: warning: %s\n", path,
		    errs->warnings[i]);
	for (i = 0; i < errs->n; i++)
		fprintf(stderr, "rtsandboxd: %s: %s\n", path, errs->lines[i]);
}

/* -n: one line per host check, on stderr; counts the failures. */
static void
check_report(const struct hc_result *r, void *arg)
{
	size_t	*failed = arg;

	fprintf(stderr, "rtsandboxd: ");
	hc_print(r, stderr);
	if (r->hr_status == HC_FAIL)
		(*failed)++;
}

/*
 * The checks of rtsandboxctl doctor that concern the daemon's own
 * processes.  The engine's (socket, image, runtime, limits) are doctor's
 * alone: the supervisor never connects to the engine, not even here.
 */
static size_t
host_checks(const struct config *cfg)
{
	struct hostcheck_params	 p;
	size_t			 failed = 0, i;

	memset(&p, 0, sizeof(p));
	p.hp_uid = getuid();
	p.hp_gid = getgid();
	p.hp_state_dir = cfg->state_dir;
	i = 0;
	if (cfg->upstream_credential_file != NULL) {
		p.hp_cred_names[i] = "upstream.credential_file";
		p.hp_cred_paths[i++] = cfg->upstream_credential_file;
	}
	if (cfg->mcp_credential_file != NULL) {
		p.hp_cred_names[i] = "mcp.credential_file";
		p.hp_cred_paths[i++] = cfg->mcp_credential_file;
	}
	p.hp_cred_list = config_hc_creds(cfg, &p.hp_ncred_list);
	p.hp_control_socket = cfg->control_socket;
	p.hp_engine_socket = cfg->docker_socket;
	p.hp_segment_room = config_max_segment_len(cfg);
	p.hp_bot_group = cfg->bot_group;
	p.hp_bot_gid = cfg->bot_gid;
	p.hp_empty_root_optional = cfg->empty_root_optional;
	hostcheck_run(&p, check_report, &failed);
	config_hc_creds_free((struct hc_cred *)p.hp_cred_list,
	    p.hp_ncred_list);
	return failed;
}

/*
 * Brokers and research jobs refuse to run without their empty root unless
 * the configuration accepts it (role.c, -e): said at start, not at the
 * first channel.
 */
static void
empty_root_check(const struct config *cfg)
{
	char	 why[HC_TEXT_MAX];

	switch (hostcheck_empty_root(why, sizeof(why))) {
	case 1:
		log_debug("brokers and research jobs run in an empty root");
		break;
	case 0:
		if (!cfg->empty_root_optional)
			fatalx("sandbox.empty_root is \"required\" and this "
			    "host refuses brokers and research jobs their empty "
			    "root (%s): refusing to start; allow unprivileged "
			    "user namespaces, or set sandbox.empty_root to "
			    "\"optional\" to accept the host's file system in "
			    "their view", why);
		log_warnx("no empty root for brokers and research jobs (%s), "
		    "accepted by sandbox.empty_root \"optional\": they see the "
		    "host's file system, behind Landlock and seccomp alone",
		    why);
		break;
	default:
		fatalx("the empty root of brokers and research jobs failed "
		    "(%s)", why);
	}
}

/* The directory of a path, in buf. */
static const char *
dir_of(const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s", path);
	return dirname(buf);
}

/*
 * The supervisor's own sandbox, once the spawner holds what starting a
 * child takes: the control socket's directory (to remove the socket at
 * exit) and what sandbox_supervisor() adds.
 */
static struct event_base *
supervisor_sandbox(void)
{
	struct sandbox_fs_rule	 rules[1];
	static char		 ctldir[PATH_MAX];

	rules[0] = (struct sandbox_fs_rule){ dir_of(
	    sv->sv_conf->control_socket, ctldir, sizeof(ctldir)),
	    SB_FS_WRITE };
	return sandbox_supervisor(rules, 1);
}

/*
 * Under systemd (its JOURNAL_STREAM) audit records go to the journal as
 * structured entries: the socket is connected now, before the sandboxes,
 * for the supervisor, and the spawner hands egress a copy (journal.h).
 */
static void
journal_open(void)
{
	const char	*path = NULL;
	int		 fd;

	if (getenv("JOURNAL_STREAM") != NULL)
		path = JOURNAL_SOCKET_PATH;
#if RTSANDBOX_TEST_SEAMS
	if (sv->sv_conf->test_journal_socket != NULL)
		path = sv->sv_conf->test_journal_socket;
#endif
	if (path == NULL)
		return;
	if ((fd = journal_connect(path)) == -1) {
		log_warn("journal socket %s: records go to the log", path);
		return;
	}
	journal_set_fd(fd);
}

/* Once every helper first answered ready: the daemon serves. */
static void
supervisor_ready_check(void)
{
	static int	 told;
	struct child	*c;

	if (told)
		return;
	TAILQ_FOREACH(c, &children, c_entry)
		if (c->c_singleton && c->c_state != CHILD_READY)
			return;
	told = 1;
	log_info("every helper is ready");
	notify_send("READY=1\nSTATUS=serving");
}

static void
helper_up(struct child *c)
{
	/* removals that waited for the file guard and the Docker client */
	if (c->c_role == PROC_FSGUARD || c->c_role == PROC_DOCKER)
		chan_kill_pending();
	supervisor_ready_check();
}

static void
helper_down(struct child *c)
{
	if (c->c_role == PROC_EGRESS)
		turn_egress_gone();
	if (c->c_role == PROC_DOCKER)
		chan_docker_gone();
}

static const struct child_hooks helper_hooks = {
	.ch_up = helper_up,
	.ch_down = helper_down,
	.ch_docker_msg = chan_docker_msg,
};

static const struct chan_hooks turn_hooks = {
	.ch_busy = turn_busy,
	.ch_abort = turn_abort,
	.ch_forget = turn_level_forget,
	.ch_broker_gone = turn_broker_gone,
	.ch_broker_msg = turn_broker_msg,
	.ch_worker_ready = turn_worker_ready,
	.ch_worker_stale = turn_worker_stale,
	.ch_container_gone = turn_container_gone,
	.ch_call = turn_call,
};

int
main(int argc, char *argv[])
{
	const char		*path = RTSANDBOX_CONFIG;
	struct config_errors	 errs;
	struct event		*ev_term, *ev_int, *ev_chld, *ev_hup;
	char			*cwd = NULL;
	int			 ch, debug = 0, verbose = 0, check = 0, ctlfd;

	sv = &sv_store;
	while ((ch = getopt(argc, argv, "df:nvx:")) != -1) {
		switch (ch) {
		case 'd':
			debug = 1;
			break;
		case 'f':
			path = optarg;
			break;
		case 'n':
			check = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'x':
			sv->sv_helper_dir = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	log_init("supervisor", debug || verbose);
	sv->sv_debug = debug || verbose;

	sv->sv_uid = getuid();
	sv->sv_gid = getgid();
	if (sv->sv_uid == 0 || geteuid() == 0 || sv->sv_gid == 0 ||
	    getegid() == 0) {
		fprintf(stderr, "rtsandboxd: refusing to run with uid 0 or gid "
		    "0.\nCreate a service user in the docker group and start "
		    "rtsandboxd as that user, for example:\n"
		    "  useradd --system --user-group --groups docker "
		    "--home-dir /var/lib/rtsandbox rtsandbox\n"
		    "  runuser -u rtsandbox -- rtsandboxd -f %s\n", path);
		exit(1);
	}

	/* absolute: rtsandboxd leaves its directory, and reloads read it
	 * again */
	if (path[0] == '/')
		sv->sv_conf_path = xstrdup(path);
	else if ((cwd = getcwd(NULL, 0)) == NULL ||
	    asprintf(&sv->sv_conf_path, "%s/%s", cwd, path) == -1)
		fatal("configuration path");
	free(cwd);
	memset(&errs, 0, sizeof(errs));
	sv->sv_conf = config_load(path, &errs);
	print_errors(path, &errs);
	if (sv->sv_conf == NULL) {
		config_errors_free(&errs);
		exit(1);
	}
	config_errors_free(&errs);
	if (check) {
		fprintf(stderr, "rtsandboxd: %s: configuration OK\n", path);
		if (host_checks(sv->sv_conf) > 0) {
			fprintf(stderr, "rtsandboxd: %s: the host is not ready "
			    "for it\n", path);
			exit(1);
		}
		fprintf(stderr, "rtsandboxd: engine, image, runtime and "
		    "limits: rtsandboxctl doctor -f %s asks the engine\n", path);
		exit(0);
	}
	if (spawner_find_helpers() == -1)
		fatalx("helper programs missing; give their directory with -x");
	empty_root_check(sv->sv_conf);

	/* A service manager that waits for READY=1 keeps rtsandboxd in
	 * front; otherwise it detaches unless -d. */
	if (notify_open() == -1)
		fatalx("cannot reach the service manager's NOTIFY_SOCKET");
	if (!debug && !notify_active() && daemon(0, 1) == -1)
		fatal("daemon");
	clock_gettime(CLOCK_MONOTONIC, &sv->sv_started);
	signal(SIGPIPE, SIG_IGN);

	/* What needs more than the supervisor keeps happens first: the
	 * control socket with its final mode, then the spawner. */
	if ((ctlfd = control_bind(sv->sv_conf->control_socket,
	    sv->sv_conf->has_control_group, sv->sv_conf->control_gid)) == -1)
		fatalx("cannot serve the control socket");
	journal_open();
	spawner_start();
	sv->sv_base = supervisor_sandbox();
	/* the group database is out of reach now: reloads keep the gids */
	config_no_lookups();
	if ((ev_term = evsignal_new(sv->sv_base, SIGTERM, sig_handler,
	    NULL)) == NULL ||
	    (ev_int = evsignal_new(sv->sv_base, SIGINT, sig_handler,
	    NULL)) == NULL ||
	    (ev_chld = evsignal_new(sv->sv_base, SIGCHLD, sig_handler,
	    NULL)) == NULL ||
	    (ev_hup = evsignal_new(sv->sv_base, SIGHUP, sig_handler,
	    NULL)) == NULL ||
	    evsignal_add(ev_term, NULL) == -1 ||
	    evsignal_add(ev_int, NULL) == -1 ||
	    evsignal_add(ev_chld, NULL) == -1 ||
	    evsignal_add(ev_hup, NULL) == -1)
		fatalx("cannot watch signals");

	if (control_listen(ctlfd) == -1)
		fatalx("cannot serve the control socket");
	chan_init(&turn_hooks);
	child_init(&helper_hooks);
	child_start_singletons();
	log_info("rtsandboxd %s started (pid %d)", RTSANDBOX_VERSION,
	    (int)getpid());

	event_base_dispatch(sv->sv_base);

	event_free(ev_term);
	event_free(ev_int);
	event_free(ev_chld);
	event_free(ev_hup);
	if (ev_grace != NULL)
		event_free(ev_grace);
	config_free(sv->sv_conf);
	exit(0);
}
