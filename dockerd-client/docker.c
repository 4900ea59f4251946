/*
 * The Docker client: the only process that connects to the Docker socket.
 * It re-checks every request it is given against its own configuration.
 */
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "dockapi.h"
#include "dockevents.h"
#include "docker.h"
#include "dockops.h"
#include "dockrun.h"
#include "limits.h"
#include "log.h"
#include "proc.h"
#include "role.h"
#include "sandbox.h"
#include "validate.h"

/* Containers reported by one list answer. */
#define DOCK_LIST_MAX	4096

struct docker {
	const char		*dk_socket_arg;	/* from argv: the sandbox's */
	struct dock_config	 dk_conf;
	struct dock_api		*dk_api;
	int			 dk_have_config;
	struct event_base	*dk_base;
	struct role_parent	*dk_rp;
	struct dock_watch	*dk_watch;
	struct dock_runs	*dk_runs;
	struct event		*dk_sweep;
};

static int
docker_config(struct docker *dk, struct msg *m)
{
	struct dock_config	*c = &dk->dk_conf;
	const char		*sock, *prefix, *lc, *lp, *image, *state, *tz;
	const char		*runtime = NULL, *logd;

	if (msg_get_str(m, "socket", PATH_BYTES_MAX, &sock) == -1 ||
	    msg_get_str(m, "container_prefix", CONTAINER_PREFIX_MAX, &prefix) ==
	    -1 ||
	    msg_get_str(m, "label_channel", DOCK_LABEL_MAX, &lc) == -1 ||
	    msg_get_str(m, "label_profile", DOCK_LABEL_MAX, &lp) == -1 ||
	    msg_get_str(m, "image", DOCK_IMAGE_MAX, &image) == -1 ||
	    msg_get_str(m, "state_dir", PATH_BYTES_MAX, &state) == -1 ||
	    msg_get_str(m, "time_zone", DOCK_TIME_ZONE_MAX, &tz) == -1 ||
	    msg_get_uint(m, "uid", 1, UINT32_MAX - 1, &c->uid) == -1 ||
	    msg_get_uint(m, "gid", 1, UINT32_MAX - 1, &c->gid) == -1 ||
	    msg_get_uint(m, "memory_mib", 1, UINT32_MAX, &c->memory_mib) == -1 ||
	    msg_get_uint(m, "nano_cpus", 1, DOCK_NUMBER_MAX, &c->nano_cpus) ==
	    -1 ||
	    msg_get_uint(m, "pids", 1, UINT32_MAX, &c->pids) == -1 ||
	    msg_get_str_opt(m, "runtime", RUNTIME_NAME_MAX, &runtime) == -1 ||
	    msg_get_str(m, "log_driver", 16, &logd) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if (strcmp(logd, "journald") == 0)
		c->log_driver = DOCK_LOG_JOURNALD;
	else if (strcmp(logd, "local") == 0)
		c->log_driver = DOCK_LOG_LOCAL;
	else {
		log_warnx("log driver %.16s refused", logd);
		return -1;
	}
	if (runtime != NULL && !valid_runtime_name(runtime, strlen(runtime))) {
		log_warnx("runtime name %.64s refused", runtime);
		return -1;
	}
	if (strcmp(sock, dk->dk_socket_arg) != 0) {
		log_warnx("docker socket %s differs from the sandboxed %s",
		    sock, dk->dk_socket_arg);
		return -1;
	}
	c->prefix = xstrdup(prefix);
	c->label_channel = xstrdup(lc);
	c->label_profile = xstrdup(lp);
	c->image = xstrdup(image);
	c->state_dir = xstrdup(state);
	c->time_zone = xstrdup(tz);
	c->runtime = runtime != NULL ? xstrdup(runtime) : NULL;
	dk->dk_have_config = 1;
	return 0;
}

/* Failures go to the host log in full and back to the supervisor, which
 * passes them only to the operator's client, never to a guest. */
static void
docker_fail(struct docker *dk, struct role_parent *rp, uint64_t id,
    const char *what, const char *channel, enum dock_err e)
{
	const char	*detail = dock_api_last_error(dk->dk_api);

	if (detail != NULL && *detail != '\0') {
		log_warnx("%s %s: %s: %s", what, channel, dock_err_to_string(e),
		    detail);
		role_error(rp, id, "%s: %s", dock_err_to_string(e), detail);
	} else {
		log_warnx("%s %s: %s", what, channel, dock_err_to_string(e));
		role_error(rp, id, "%s", dock_err_to_string(e));
	}
}

static const char *
docker_state_name(enum dock_state s)
{
	switch (s) {
	case DOCK_RUNNING:
		return "running";
	case DOCK_STOPPED:
		return "stopped";
	case DOCK_MISSING:
		break;
	}
	return "missing";
}

static int
docker_status(struct docker *dk, struct role_parent *rp, struct msg *m)
{
	struct dock_status	 st;
	struct msgb		 mb;
	const char		*channel;
	enum dock_err		 e;

	if (msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &channel) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if ((e = dock_status(dk->dk_api, &dk->dk_conf, channel, &st)) !=
	    DOCK_OK) {
		docker_fail(dk, rp, m->m_id, "status", channel, e);
		return 0;
	}
	msgb_init(&mb, MSG_DOCK_STATE, m->m_id);
	msg_add_str(&mb, "state", docker_state_name(st.state));
	if (st.state != DOCK_MISSING) {
		msg_add_str(&mb, "image", st.image);
		msg_add_str(&mb, "profile", st.profile);
		msg_add_str(&mb, "container", st.id);
		msg_add_bool(&mb, "ours", st.ours);
	}
	role_send(rp, &mb);
	return 0;
}

static int
docker_ensure(struct docker *dk, struct role_parent *rp, struct msg *m)
{
	struct dock_spec	 spec;
	struct msgb		 mb;
	char			 id[80];
	int			 recreated = 0;
	enum dock_err		 e;

	memset(&spec, 0, sizeof(spec));
	if (msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &spec.channel) ==
	    -1 ||
	    msg_get_str(m, "profile", PROFILE_NAME_MAX, &spec.profile) == -1 ||
	    msg_get_str(m, "run_dir", PATH_BYTES_MAX, &spec.run_dir) == -1 ||
	    msg_get_str(m, "workspace_dir", PATH_BYTES_MAX,
	    &spec.workspace_dir) == -1 ||
	    msg_end(m) == -1)
		return -1;
	/* Re-checked here whatever the supervisor checked before. */
	if ((e = dock_check_spec(&dk->dk_conf, &spec)) != DOCK_OK) {
		log_warnx("ensure %s: refused: %s", spec.channel,
		    dock_err_to_string(e));
		role_error(rp, m->m_id, "refused: %s", dock_err_to_string(e));
		return 0;
	}
	id[0] = '\0';
	if ((e = dock_ensure_running(dk->dk_api, &dk->dk_conf, &spec,
	    &recreated, id, sizeof(id))) != DOCK_OK) {
		docker_fail(dk, rp, m->m_id, "ensure", spec.channel, e);
		return 0;
	}
	if (recreated)
		log_info("container for %s created (%.12s, profile %s)",
		    spec.channel, id, spec.profile);
	msgb_init(&mb, MSG_DOCK_ENSURED, m->m_id);
	msg_add_bool(&mb, "recreated", recreated);
	msg_add_str(&mb, "container", id);
	role_send(rp, &mb);
	return 0;
}

static int
docker_remove(struct docker *dk, struct role_parent *rp, struct msg *m)
{
	struct msgb		 mb;
	const char		*channel;
	enum dock_err		 e;

	if (msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &channel) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if ((e = dock_remove(dk->dk_api, &dk->dk_conf, channel)) != DOCK_OK) {
		docker_fail(dk, rp, m->m_id, "remove", channel, e);
		return 0;
	}
	msgb_init(&mb, MSG_DOCK_REMOVED, m->m_id);
	role_send(rp, &mb);
	return 0;
}

/*
 * A failed turn's worker: its last lines, each escaped and cut in the
 * Docker client (docklogs.h), so that the supervisor gets text that fits
 * a line of its log, whatever the worker wrote.
 */
static int
docker_logs(struct docker *dk, struct role_parent *rp, struct msg *m)
{
	static struct dock_log_lines	 dl;
	const char			*v[DOCK_LOGS_LINES_MAX];
	struct msgb			 mb;
	const char			*channel;
	uint64_t			 lines;
	size_t				 i;
	int				 missing;
	enum dock_err			 e;

	if (msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &channel) == -1 ||
	    msg_get_uint(m, "lines", 1, DOCK_LOGS_LINES_MAX, &lines) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if ((e = dock_logs(dk->dk_api, &dk->dk_conf, channel, lines, &dl,
	    &missing)) != DOCK_OK) {
		docker_fail(dk, rp, m->m_id, "logs", channel, e);
		return 0;
	}
	for (i = 0; i < dl.dl_n; i++)
		v[i] = dl.dl_line[i];
	msgb_init(&mb, MSG_DOCK_LOGGED, m->m_id);
	msg_add_strv(&mb, "lines", v, dl.dl_n);
	msg_add_bool(&mb, "cut", dl.dl_cut);
	msg_add_bool(&mb, "missing", missing);
	role_send(rp, &mb);
	return 0;
}

static int
docker_list(struct docker *dk, struct role_parent *rp, struct msg *m)
{
	struct dock_entry	*ents = NULL;
	struct msgb		 mb;
	const char		**v[5];
	size_t			 n = 0, i, k;
	enum dock_err		 e;

	if (msg_end(m) == -1)
		return -1;
	if ((e = dock_list(dk->dk_api, &dk->dk_conf, &ents, &n)) != DOCK_OK) {
		docker_fail(dk, rp, m->m_id, "list", "containers", e);
		return 0;
	}
	if (n > DOCK_LIST_MAX)
		n = DOCK_LIST_MAX;
	for (k = 0; k < 5; k++)
		if ((v[k] = calloc(n + 1, sizeof(char *))) == NULL)
			fatal("%s", __func__);
	for (i = 0; i < n; i++) {
		/* Docker spells names with a leading '/' */
		v[0][i] = ents[i].name[0] == '/' ? ents[i].name + 1 :
		    ents[i].name;
		v[1][i] = ents[i].channel;
		v[2][i] = ents[i].profile;
		v[3][i] = ents[i].state;
		v[4][i] = ents[i].image;
	}
	msgb_init(&mb, MSG_DOCK_LISTED, m->m_id);
	msg_add_strv(&mb, "names", v[0], n);
	msg_add_strv(&mb, "channels", v[1], n);
	msg_add_strv(&mb, "profiles", v[2], n);
	msg_add_strv(&mb, "states", v[3], n);
	msg_add_strv(&mb, "images", v[4], n);
	role_send(rp, &mb);
	for (k = 0; k < 5; k++)
		free(v[k]);
	free(ents);
	return 0;
}

/*
 * A precheck run.  Every bound is decoded loosely and checked by
 * dock_check_precheck(), so that a bad request is refused with an answer,
 * not taken for a broken supervisor.
 */
static int
docker_precheck(struct docker *dk, struct role_parent *rp, struct msg *m)
{
	struct dock_precheck	 pc;
	const char		**argv;
	const uint8_t		*data = NULL;
	size_t			 argc, dlen = 0;
	enum dock_err		 e;

	memset(&pc, 0, sizeof(pc));
	if (msg_get_uint(m, "run", 0, UINT64_MAX, &pc.run) == -1 ||
	    msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &pc.channel) ==
	    -1 ||
	    msg_get_strv(m, "entrypoint", PRECHECK_ARGV_MAX + 1,
	    PRECHECK_ARG_BYTES_MAX + 1, &argv, &argc) == -1 ||
	    msg_get_uint(m, "memory_mib", 0, UINT64_MAX, &pc.memory_mib) ==
	    -1 ||
	    msg_get_uint(m, "nano_cpus", 0, UINT64_MAX, &pc.nano_cpus) == -1 ||
	    msg_get_uint(m, "pids", 0, UINT64_MAX, &pc.pids) == -1 ||
	    msg_get_uint(m, "timeout_ms", 0, UINT64_MAX, &pc.timeout_ms) ==
	    -1 ||
	    msg_get_data(m, &data, &dlen) == -1 ||
	    msg_end(m) == -1)
		return -1;
	pc.argv = argv;
	pc.argc = argc;
	pc.input_len = dlen;
	if ((e = dock_check_precheck(&dk->dk_conf, &pc)) != DOCK_OK) {
		log_warnx("precheck %llu: refused: %s",
		    (unsigned long long)pc.run, dock_err_to_string(e));
		role_error(rp, m->m_id, "refused: %s", dock_err_to_string(e));
		return 0;
	}
	dock_runs_start(dk->dk_runs, m->m_id, &pc, data);
	return 0;
}

static void
docker_precheck_done(uint64_t msgid, uint64_t run,
    const struct dock_run_result *res, const char *err, void *arg)
{
	struct docker	*dk = arg;
	struct msgb	 mb;

	if (res == NULL) {
		log_warnx("precheck %llu: %s", (unsigned long long)run, err);
		role_error(dk->dk_rp, msgid, "%s", err);
		return;
	}
	log_debug("precheck %llu: exit %lld%s%s, %zu bytes out, %llu on "
	    "stderr", (unsigned long long)run, (long long)res->exit_code,
	    res->timed_out ? ", timed out" : "",
	    res->stdout_over ? ", stdout over" : "", res->out_len,
	    (unsigned long long)res->stderr_bytes);
	msgb_init(&mb, MSG_DOCK_PRECHECKED, msgid);
	msg_add_int(&mb, "exit_code", res->exit_code);
	msg_add_bool(&mb, "timed_out", res->timed_out);
	msg_add_bool(&mb, "stdout_over", res->stdout_over);
	msg_add_uint(&mb, "stderr_bytes", res->stderr_bytes);
	msg_add_data(&mb, res->out, res->out_len);
	role_send(dk->dk_rp, &mb);
}

static int
docker_precheck_stop(struct docker *dk, struct msg *m)
{
	uint64_t	 run;

	if (msg_get_uint(m, "run", 0, UINT64_MAX, &run) == -1 ||
	    msg_end(m) == -1)
		return -1;
	/* A run that ended meanwhile has had its answer. */
	if (!dock_runs_stop(dk->dk_runs, run))
		log_debug("precheck %llu: stop: no such run",
		    (unsigned long long)run);
	return 0;
}

static int
docker_dispatch_supervisor(struct role_parent *rp, struct msg *m, void *arg)
{
	struct docker	*dk = arg;

	if (m->m_type == MSG_CONFIG_DOCKER) {
		if (role_parent_configured(rp) || dk->dk_have_config)
			return -1;
		return docker_config(dk, m);
	}
	if (!role_parent_configured(rp))
		return -1;
	/* XXX one call at a time, each at most 15 s: channels wait for
	 * each other's Docker calls. */
	switch (m->m_type) {
	case MSG_DOCK_STATUS:
		return docker_status(dk, rp, m);
	case MSG_DOCK_ENSURE:
		return docker_ensure(dk, rp, m);
	case MSG_DOCK_REMOVE:
		return docker_remove(dk, rp, m);
	case MSG_DOCK_LIST:
		return docker_list(dk, rp, m);
	case MSG_DOCK_LOGS:
		return docker_logs(dk, rp, m);
	case MSG_DOCK_PRECHECK:
		return docker_precheck(dk, rp, m);
	case MSG_DOCK_PRECHECK_STOP:
		return docker_precheck_stop(dk, m);
	default:
		return -1;
	}
}

/* What the event stream says goes to the supervisor as it comes. */
static void
docker_watch_news(enum dock_watch_news news, const struct dock_event *ev,
    void *arg)
{
	struct docker	*dk = arg;
	struct msgb	 mb;

	msgb_init(&mb, MSG_DOCK_EVENT, 0);
	switch (news) {
	case DOCK_WATCH_LIVE:
		msg_add_str(&mb, "news", "live");
		break;
	case DOCK_WATCH_LOST:
		msg_add_str(&mb, "news", "lost");
		break;
	case DOCK_WATCH_EVENT:
		log_debug("docker events: %s %.12s (%s)",
		    dock_event_action_name(ev->action), ev->id, ev->name);
		msg_add_str(&mb, "news", dock_event_action_name(ev->action));
		msg_add_str(&mb, "container", ev->id);
		if (ev->exit_code >= 0)
			msg_add_uint(&mb, "exit_code", (uint64_t)ev->exit_code);
		break;
	}
	role_send(dk->dk_rp, &mb);
}

/* An earlier daemon's runs are nobody's now: they go. */
static void
docker_sweep(evutil_socket_t unused, short what, void *arg)
{
	struct docker	*dk = arg;
	size_t		 n = 0;
	enum dock_err	 e;

	if ((e = dock_precheck_sweep(dk->dk_api, &dk->dk_conf, &n)) !=
	    DOCK_OK)
		log_warnx("precheck leftovers: %s: %s", dock_err_to_string(e),
		    dock_api_last_error(dk->dk_api));
	if (n > 0)
		log_info("precheck leftovers: %zu removed", n);
}

static const char *
docker_configured(struct role_parent *rp, void *arg)
{
	struct docker	*dk = arg;
	struct timeval	 now = { 0, 0 };

	if (!dk->dk_have_config)
		return "no configuration";
	if ((dk->dk_api = dock_api_new(dk->dk_socket_arg)) == NULL)
		return "cannot set up the Docker API client";
	dk->dk_rp = rp;
	if ((dk->dk_watch = dock_watch_new(dk->dk_base, dk->dk_socket_arg,
	    dk->dk_conf.prefix, docker_watch_news, dk)) == NULL)
		return "the Docker socket path is too long";
	if ((dk->dk_runs = dock_runs_new(dk->dk_base, dk->dk_socket_arg,
	    dk->dk_api, &dk->dk_conf, docker_precheck_done, dk)) == NULL)
		return "the Docker socket path is too long";
	/* After ready: the sweep may wait on a slow engine. */
	if ((dk->dk_sweep = evtimer_new(dk->dk_base, docker_sweep, dk)) ==
	    NULL || evtimer_add(dk->dk_sweep, &now) == -1)
		return "cannot schedule the removal of leftover runs";
	/* libcurl brings TLS libraries a Unix socket never needs: what
	 * loading and setting them up ran is given back. */
	(void)proc_drop_text();
	return NULL;
}

void
docker_main(int argc, char *argv[])
{
	struct role_args	 ra;
	struct docker		 dk;
	struct event_base	*base;

	role_args_parse(PROC_DOCKER, argc, argv, &ra);
	proc_child_check_fds(1);
	if (ra.ra_npaths != 1)
		fatalx("needs exactly one -p path: the Docker socket");
	memset(&dk, 0, sizeof(dk));
	dk.dk_socket_arg = ra.ra_paths[0];

	/* libcurl reads nothing after this; the sandbox comes next. */
	if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
		fatalx("curl_global_init failed");
	base = sandbox_docker(dk.dk_socket_arg);
	dk.dk_base = base;
	role_parent_open(base, PROC_DOCKER, docker_dispatch_supervisor,
	    docker_configured, &dk);
	event_base_dispatch(base);
	fatalx("event loop ended");
}
