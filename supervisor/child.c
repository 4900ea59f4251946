/*
 * The supervisor's children: spawn, configure, wait for ready, correlate
 * requests with replies, reap, and restart the singletons with back-off.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
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
#include "limits.h"
#include "log.h"
#include "msg.h"
#include "role.h"
#include "spawner.h"
#include "supervisor.h"
#include "violation.h"

/* How long a child has between exec and ready. */
#define CHILD_READY_TIMEOUT_MS	10000
/* Back-off for a singleton that keeps dying: 100 ms doubling to 30 s; a
 * child that lived this long before dying starts again from the bottom. */
#define CHILD_BACKOFF_MIN_MS	100
#define CHILD_BACKOFF_MAX_MS	30000
#define CHILD_STABLE_MS		30000
/* A broker or research job stopped: egress drops its edge first (no call
 * of it goes out any more), then its pipe closes, so that it acts on every
 * frame sent before (a turn's cancel answers a result being read) and
 * exits on EOF; SIGTERM after this if it has not, SIGKILL after as long
 * again: a stop always ends the process. */
#define CHILD_STOP_GRACE_MS	1000
#define CHILD_KILL_MS		1000
/* A broker's or research job's pipe is read this much at a time, more for
 * a frame that needs it. */
#define CHILD_READ_SIZE		4096

struct child_list	 children = TAILQ_HEAD_INITIALIZER(children);

/* Each broker's and research job's edge at egress has its own number. */
static uint64_t		 child_next_peer;
/* What the read buffers of every broker and research job may hold
 * together (frame.h): a peer whose frame would pass it is dropped. */
static struct frame_budget	 child_peer_budget = { SUPERVISOR_PEER_READ_MAX,
    0, 0 };
/* Egress's count of calls: of the instances before this one, and this
 * one's last word. */
static uint64_t		 egress_calls_base, egress_calls_last;
static struct child_hooks	 hooks;

static void	child_spawn(struct child *);
static void	child_down(struct child *);
static void	child_attach(struct child *, struct child *);
static void	child_egress_drop(struct child *);
static void	child_req_expired(evutil_socket_t, short, void *);

const char *
child_state_to_string(enum child_state s)
{
	switch (s) {
	case CHILD_DOWN:
		return "down";
	case CHILD_STARTING:
		return "starting";
	case CHILD_READY:
		return "ready";
	case CHILD_STOPPING:
		return "stopping";
	}
	return "unknown";
}

static long long
ms_since(const struct timespec *t)
{
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1000LL +
	    (now.tv_nsec - t->tv_nsec) / 1000000;
}

static void
timer_arm(struct child *c, long ms)
{
	struct timeval	 tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	if (evtimer_add(c->c_timer, &tv) == -1)
		fatalx("%s: evtimer_add", __func__);
}

static struct child *
child_new(enum proc_role role, const char *name, int singleton)
{
	struct child	*c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("%s", __func__);
	c->c_role = role;
	c->c_singleton = singleton;
	c->c_pid = -1;
	c->c_listen_fd = -1;
	c->c_egress_end = -1;
	c->c_next_id = 1;
	TAILQ_INIT(&c->c_reqs);
	TAILQ_INIT(&c->c_waiting);
	if (name != NULL && (c->c_name = strdup(name)) == NULL)
		fatal("%s", __func__);
	TAILQ_INSERT_TAIL(&children, c, c_entry);
	return c;
}

static void
child_free(struct child *c)
{
	TAILQ_REMOVE(&children, c, c_entry);
	if (c->c_timer != NULL)
		event_free(c->c_timer);
	if (c->c_listen_fd != -1)
		close(c->c_listen_fd);
	if (c->c_egress_end != -1)
		close(c->c_egress_end);
	free(c->c_name);
	free(c->c_channel);
	free(c->c_profile);
	free(c->c_thinking);
	if (c->c_config != NULL)
		msgb_free(c->c_config);
	free(c->c_config);
	while (c->c_ngrant > 0)
		free(c->c_grant[--c->c_ngrant]);
	free(c->c_grant);
	free(c);
}

struct child *
child_singleton(enum proc_role role)
{
	struct child	*c;

	TAILQ_FOREACH(c, &children, c_entry)
		if (c->c_singleton && c->c_role == role)
			return c;
	return NULL;
}

static const char *
child_label(const struct child *c)
{
	static char	 buf[2][300];
	static int	 i;

	i ^= 1;
	if (c->c_name != NULL)
		snprintf(buf[i], sizeof(buf[i]), "%s[%s]",
		    proc_role_name(c->c_role), c->c_name);
	else
		snprintf(buf[i], sizeof(buf[i]), "%s",
		    proc_role_name(c->c_role));
	return buf[i];
}

/*
 * A violation from a child: brokers and research jobs are cut off (the
 * channel pays: its turn ends and its container goes), the singletons are
 * restarted (a bug, logged as such).
 */
void
child_violation(struct child *c, enum violation rule, const char *why)
{
	sv->sv_count.sc_violations++;
	sv->sv_count.sc_rules[(unsigned)rule < VIOLATION__COUNT ? rule :
	    VIOLATION_NONE]++;
	if (c->c_singleton)
		log_warnx("BUG: protocol violation from %s: %s; restarting it",
		    child_label(c), why);
	else {
		log_warnx("violation (%s) by %s: %s; killing it",
		    violation_name(rule), child_label(c), why);
		if (c->c_violation == VIOLATION_NONE)
			c->c_violation = rule;
	}
	child_egress_drop(c);
	if (c->c_pid > 0)
		kill(c->c_pid, SIGKILL);
	if (c->c_conn != NULL) {
		frame_conn_free(c->c_conn);
		c->c_conn = NULL;
	}
}

int
child_refused(struct child *c, enum violation rule, const char *what)
{
	char	 why[200];

	if (refusal_note(&c->c_refusals, proc_now_ms(), child_label(c), what,
	    why, sizeof(why)) == 1) {
		child_violation(c, rule, why);
		return -1;
	}
	return 0;
}

static void
child_req_free(struct child_req *cr)
{
	if (cr->cr_timer != NULL)
		event_free(cr->cr_timer);
	if (cr->cr_msg != NULL) {
		msgb_free(cr->cr_msg);
		free(cr->cr_msg);
	}
	free(cr->cr_json);
	free(cr);
}

/*
 * Requests a helper may carry out twice to the same effect: what its
 * answer says is true whenever it is asked (a channel's directories made,
 * a socket bound afresh, a container's state, one running, one gone).  One
 * in flight at a helper that dies is sent again once the helper is back.
 */
static int
child_repeatable(enum msg_type t)
{
	switch (t) {
	case MSG_FSG_PREPARE:
	case MSG_FSG_BIND:
	case MSG_DOCK_STATUS:
	case MSG_DOCK_ENSURE:
	case MSG_DOCK_REMOVE:
	case MSG_DOCK_LIST:
		return 1;
	default:
		return 0;
	}
}

/* Wait for the child to be ready (again), until the request's deadline. */
static void
child_req_wait(struct child *c, struct child_req *cr)
{
	uint64_t	 now = proc_now_ms(), left;
	struct timeval	 tv;

	left = cr->cr_deadline > now ? cr->cr_deadline - now : 0;
	tv.tv_sec = left / 1000;
	tv.tv_usec = (left % 1000) * 1000;
	if ((cr->cr_timer == NULL && (cr->cr_timer = evtimer_new(sv->sv_base,
	    child_req_expired, cr)) == NULL) ||
	    evtimer_add(cr->cr_timer, &tv) == -1)
		fatalx("%s: timer", __func__);
	TAILQ_INSERT_TAIL(&c->c_waiting, cr, cr_entry);
}

/*
 * Send a request to the ready child: a new one gets its id (a repeatable
 * one is kept as sent, to be sent again), one sent before goes again as it
 * was.  -1 when it could not be queued (the request is the caller's).
 */
static int
child_req_send(struct child *c, struct child_req *cr)
{
	struct msgb	*mb = cr->cr_msg;

	if (c->c_conn == NULL)
		return -1;
	if (mb != NULL) {
		cr->cr_id = c->c_next_id++;
		msg_add_uint(mb, "id", cr->cr_id);
		cr->cr_msg = NULL;
		if (!child_repeatable(mb->mb_type)) {
			int	 rc = msg_send(c->c_conn, mb);

			free(mb);
			if (rc == -1)
				return -1;
			goto sent;
		}
		cr->cr_json = msgb_json(mb, &cr->cr_json_len);
		msgb_free(mb);
		free(mb);
		if (cr->cr_json == NULL)
			return -1;
	}
	if (frame_conn_send(c->c_conn, cr->cr_json, cr->cr_json_len, NULL, 0,
	    NULL, 0) != FRAME_OK)
		return -1;
 sent:
	TAILQ_INSERT_TAIL(&c->c_reqs, cr, cr_entry);
	return 0;
}

/* A request that waited for its child longer than a start may take. */
static void
child_req_expired(evutil_socket_t fd, short ev, void *arg)
{
	struct child_req	*cr = arg;
	struct child		*c = cr->cr_child;

	TAILQ_REMOVE(&c->c_waiting, cr, cr_entry);
	log_warnx("%s was not ready within %llu ms for %s", child_label(c),
	    (unsigned long long)sv->sv_conf->start_ms,
	    msg_type_name(cr->cr_type));
	cr->cr_cb(c, NULL, cr->cr_arg);
	child_req_free(cr);
}

/* What waited for the child goes out now, in the order it came. */
static void
child_send_waiting(struct child *c)
{
	struct child_req	*cr;

	while ((cr = TAILQ_FIRST(&c->c_waiting)) != NULL) {
		TAILQ_REMOVE(&c->c_waiting, cr, cr_entry);
		evtimer_del(cr->cr_timer);
		if (child_req_send(c, cr) == -1) {
			cr->cr_cb(c, NULL, cr->cr_arg);
			child_req_free(cr);
		}
	}
}

/* The daemon stops: nothing that waits will be sent. */
static void
child_fail_waiting(struct child *c)
{
	struct child_req	*cr;

	while ((cr = TAILQ_FIRST(&c->c_waiting)) != NULL) {
		TAILQ_REMOVE(&c->c_waiting, cr, cr_entry);
		cr->cr_cb(c, NULL, cr->cr_arg);
		child_req_free(cr);
	}
}

static void
child_became_ready(struct child *c)
{
	struct child	*p;

	evtimer_del(c->c_timer);
	c->c_state = CHILD_READY;
	log_info("%s ready (pid %d)", child_label(c), (int)c->c_pid);
	/* the pipes that waited for egress, before the requests that did */
	if (c->c_role == PROC_EGRESS)
		TAILQ_FOREACH(p, &children, c_entry)
			if (p->c_egress_end != -1 && p->c_pid > 0)
				child_attach(c, p);
	child_send_waiting(c);
	if (c->c_singleton)
		hooks.ch_up(c);
	if (c->c_event_cb != NULL)
		c->c_event_cb(c, 1, c->c_event_arg);
}

static void
child_frame(struct frame_conn *fc, struct frame *f, void *arg)
{
	struct child		*c = arg;
	struct child_req	*cr;
	struct msg		 m;

	if (msg_parse(&m, c->c_role, PROC_SUPERVISOR, f) == -1) {
		child_violation(c, VIOLATION_FRAME, m.m_err);
		msg_free(&m);
		return;
	}
	if (m.m_type == MSG_READY) {
		if (msg_end(&m) == -1 || c->c_state != CHILD_STARTING)
			child_violation(c, VIOLATION_FRAME, m.m_failed ?
			    m.m_err : "ready when not starting");
		else
			child_became_ready(c);
		msg_free(&m);
		return;
	}
	if (m.m_type == MSG_REFUSED) {
		const char	*why = "?";

		if (msg_get_str(&m, "error", 1024, &why) == -1 ||
		    msg_end(&m) == -1 || c->c_state != CHILD_STARTING) {
			child_violation(c, VIOLATION_FRAME, m.m_failed ?
			    m.m_err : "refused when not starting");
			msg_free(&m);
			return;
		}
		if (c->c_singleton) {
			/* It will refuse again: nothing to serve without it. */
			control_close();
			fatalx("%s refused to start: %s", child_label(c), why);
		}
		log_warnx("%s refused to start: %s", child_label(c), why);
		child_violation(c, VIOLATION_FRAME, "refused");
		msg_free(&m);
		return;
	}
	if (msg_is_reply(m.m_type)) {
		TAILQ_FOREACH(cr, &c->c_reqs, cr_entry)
			if (cr->cr_id == m.m_id)
				break;
		if (cr == NULL || (cr->cr_reply != m.m_type &&
		    m.m_type != MSG_ERROR)) {
			child_violation(c, VIOLATION_FRAME,
			    "reply to no request of ours");
			msg_free(&m);
			return;
		}
		TAILQ_REMOVE(&c->c_reqs, cr, cr_entry);
		cr->cr_cb(c, &m, cr->cr_arg);
		child_req_free(cr);
		msg_free(&m);
		return;
	}
	if (c->c_msg_cb != NULL && c->c_state == CHILD_READY) {
		if (c->c_msg_cb(c, &m, c->c_event_arg) == -1)
			child_violation(c, VIOLATION_FRAME, m.m_failed ?
			    m.m_err : "message out of place");
		msg_free(&m);
		return;
	}
	child_violation(c, VIOLATION_FRAME,
	    "message the supervisor does not take");
	msg_free(&m);
}

/* What one read from a broker or research job brought was handled. */
static void
child_read_done(struct frame_conn *fc, void *arg)
{
	frame_conn_shrink(fc);
}

static void
child_conn_err(struct frame_conn *fc, enum frame_err err, void *arg)
{
	struct child	*c = arg;

	/* A child that dies mid-frame, or whose pipe fails, is not one that
	 * broke the protocol: the reaper tells why it died.  A peer whose
	 * frame the supervisor has no room for is dropped, not counted. */
	if (err == FRAME_OUT_OF_MEMORY && !c->c_singleton) {
		log_warnx("%s dropped: the supervisor has no room for its "
		    "frame (%zu bytes held for every peer, %zu at most)",
		    child_label(c), child_peer_budget.fb_used,
		    child_peer_budget.fb_max);
		child_egress_drop(c);
		if (c->c_pid > 0)
			kill(c->c_pid, SIGKILL);
		frame_conn_free(c->c_conn);
		c->c_conn = NULL;
	} else if (err != FRAME_EOF && err != FRAME_TRUNCATED &&
	    err != FRAME_IO)
		child_violation(c, VIOLATION_FRAME, frame_err_to_string(err));
	else {
		log_debug("%s closed its pipe: %s", child_label(c),
		    frame_err_to_string(err));
		/* Make sure it is really gone; the reaper does the rest. */
		if (c->c_pid > 0)
			kill(c->c_pid, SIGKILL);
		frame_conn_free(c->c_conn);
		c->c_conn = NULL;
	}
}

/* A broker or research job that reads nothing of what is sent to it. */
static void
child_stalled(struct frame_conn *fc, void *arg)
{
	struct child	*c = arg;
	char		 why[120];

	snprintf(why, sizeof(why), "read nothing of %zu bytes sent to it for "
	    "%d ms", frame_conn_pending(fc), PEER_STALL_MS);
	child_violation(c, VIOLATION_STALL, why);
}

int
child_usable(const struct child *c)
{
	return c->c_state == CHILD_READY && c->c_conn != NULL &&
	    !c->c_edge_lost;
}

int
child_send_msg(struct child *c, struct msgb *mb)
{
	if (c->c_state != CHILD_READY || c->c_conn == NULL) {
		msgb_free(mb);
		return -1;
	}
	return msg_send(c->c_conn, mb);
}

/* Several messages in one write: the child reads them in one go. */
int
child_send_msgv(struct child *c, struct msgb *const *mbs, int n)
{
	int	 i;

	if (c->c_state != CHILD_READY || c->c_conn == NULL) {
		for (i = 0; i < n; i++)
			msgb_free(mbs[i]);
		return -1;
	}
	return msg_sendv(c->c_conn, mbs, n);
}

int
child_request(struct child *c, struct msgb *mb, child_reply_cb cb, void *arg)
{
	struct child_req	*cr;

	/* A helper being (re)started is waited for; a broker, or a daemon
	 * that stops, is not. */
	if ((c->c_state != CHILD_READY || c->c_conn == NULL) &&
	    (!c->c_singleton || sv->sv_stopping ||
	    c->c_state == CHILD_STOPPING)) {
		msgb_free(mb);
		return -1;
	}
	if ((cr = calloc(1, sizeof(*cr))) == NULL ||
	    (cr->cr_msg = malloc(sizeof(*mb))) == NULL)
		fatal("%s", __func__);
	*cr->cr_msg = *mb;	/* the builder is ours from here on */
	cr->cr_child = c;
	cr->cr_type = mb->mb_type;
	cr->cr_reply = msg_def(mb->mb_type)->md_reply;
	cr->cr_cb = cb;
	cr->cr_arg = arg;
	cr->cr_deadline = proc_now_ms() + sv->sv_conf->start_ms;
	if (c->c_state != CHILD_READY || c->c_conn == NULL) {
		child_req_wait(c, cr);
		log_debug("%s is %s: %s waits for it", child_label(c),
		    child_state_to_string(c->c_state),
		    msg_type_name(cr->cr_type));
		return 0;
	}
	if (child_req_send(c, cr) == -1) {
		child_req_free(cr);
		return -1;
	}
	return 0;
}

static void
child_send(struct child *c, struct msgb *mb)
{
	if (msg_send(c->c_conn, mb) == -1)
		fatalx("cannot queue %s for %s", msg_type_name(mb->mb_type),
		    child_label(c));
}

/* upstream.credentials: the file of each channel or speaker. */
static void
child_egress_creds(struct child *c, const char *scope,
    const struct config_cred *v, size_t n)
{
	struct msgb	 mb;
	size_t		 i;

	for (i = 0; i < n; i++) {
		msgb_init(&mb, MSG_CONFIG_EGRESS_CRED, 0);
		msg_add_str(&mb, "scope", scope);
		msg_add_str(&mb, "key", v[i].key);
		msg_add_str(&mb, "file", v[i].file);
		child_send(c, &mb);
	}
}

/* Every server with its allowed tools, then every profile, then the
 * credential files of channels and speakers: egress holds each broker to
 * its own. */
static void
child_egress_tables(struct child *c, const struct config *conf)
{
	const struct config_profile *p;
	struct msgb		 mb;
	size_t			 i;

	for (i = 0; i < conf->nmcp_servers; i++) {
		msgb_init(&mb, MSG_CONFIG_EGRESS_MCP, 0);
		msg_add_str(&mb, "name", conf->mcp_servers[i].name);
		msg_add_str(&mb, "url", conf->mcp_servers[i].url);
		msg_add_strv(&mb, "tools",
		    (const char *const *)conf->mcp_servers[i].tools,
		    conf->mcp_servers[i].ntools);
		child_send(c, &mb);
	}
	for (i = 0; i < conf->nprofiles; i++) {
		p = &conf->profiles[i];
		msgb_init(&mb, MSG_CONFIG_EGRESS_PROFILE, 0);
		msg_add_str(&mb, "name", p->name);
		msg_add_str(&mb, "model", p->model);
		msg_add_strv(&mb, "mcp", (const char *const *)p->mcp,
		    p->nmcp);
		child_send(c, &mb);
	}
	child_egress_creds(c, "channel", conf->cred_channels,
	    conf->ncred_channels);
	child_egress_creds(c, "speaker", conf->cred_speakers,
	    conf->ncred_speakers);
}

/*
 * After a reload: egress's tables again, between egr_reload and
 * egr_reloaded, for the peers attached from then on.  An egress that is
 * down gets them from the configuration when it starts again; one that is
 * starting has its bring-up in the pipe before these.
 */
void
child_egress_reload(void)
{
	struct child	*c = child_singleton(PROC_EGRESS);
	struct msgb	 mb;

	if (c == NULL || c->c_conn == NULL ||
	    (c->c_state != CHILD_STARTING && c->c_state != CHILD_READY))
		return;
	msgb_init(&mb, MSG_EGR_RELOAD, 0);
	msg_add_uint(&mb, "max_output_tokens", sv->sv_conf->max_output_tokens);
	if (sv->sv_conf->cred_fallback_none)
		msg_add_str(&mb, "cred_fallback", "none");
	child_send(c, &mb);
	child_egress_tables(c, sv->sv_conf);
	msgb_init(&mb, MSG_EGR_RELOADED, 0);
	child_send(c, &mb);
}

static void	child_send(struct child *, struct msgb *);

/*
 * A precheck run's broker: no host tools, no compactor, only the granted
 * tools of each granted server, its calls and its time.
 */
static void
child_precheck_config(struct child *c)
{
	const struct config	*conf = sv->sv_conf;
	const struct config_profile *p;
	const char		*tools[MCP_TOOLS_PER_SERVER_MAX], *slash;
	struct msgb		 mb;
	char			 server[128];
	size_t			 i, j, n, len;

	if ((p = config_profile(conf, c->c_profile)) == NULL)
		fatalx("precheck broker for unknown profile %s", c->c_profile);
	msgb_init(&mb, MSG_CONFIG_BROKER, 0);
	msg_add_str(&mb, "channel", c->c_channel);
	msg_add_str(&mb, "profile", p->name);
	msg_add_str(&mb, "model", p->model);
	msg_add_uint(&mb, "max_calls", c->c_pc_calls);
	msg_add_uint(&mb, "max_output_tokens", conf->max_output_tokens);
	msg_add_strv(&mb, "tools", NULL, 0);
	msg_add_bool(&mb, "precheck", 1);
	msg_add_uint(&mb, "deadline_ms", c->c_pc_deadline_ms);
	msg_add_fd(&mb, c->c_listen_fd);
	c->c_listen_fd = -1;
	child_send(c, &mb);
	for (i = 0; i < c->c_ngrant; i = j) {
		slash = strchr(c->c_grant[i], '/');
		len = (size_t)(slash - c->c_grant[i]);
		if (len >= sizeof(server))
			fatalx("%s: grant %s", __func__, c->c_grant[i]);
		memcpy(server, c->c_grant[i], len);
		server[len] = '\0';
		for (j = i, n = 0; j < c->c_ngrant && n < MCP_TOOLS_PER_SERVER_MAX &&
		    strncmp(c->c_grant[j], server, len) == 0 &&
		    c->c_grant[j][len] == '/'; j++)
			tools[n++] = c->c_grant[j] + len + 1;
		msgb_init(&mb, MSG_CONFIG_BROKER_MCP, 0);
		msg_add_str(&mb, "name", server);
		msg_add_strv(&mb, "tools", tools, n);
		child_send(c, &mb);
	}
}

static void
child_send_config(struct child *c)
{
	const struct config	*conf = sv->sv_conf;
	const struct config_profile *p;
	struct msgb		 mb;
	size_t			 i;

	switch (c->c_role) {
	case PROC_FSGUARD:
		msgb_init(&mb, MSG_CONFIG_FSGUARD, 0);
		msg_add_str(&mb, "state_dir", conf->state_dir);
		msg_add_uint(&mb, "uid", sv->sv_uid);
		msg_add_uint(&mb, "gid", sv->sv_gid);
		if (conf->has_bot_group)
			msg_add_uint(&mb, "bot_gid", conf->bot_gid);
		child_send(c, &mb);
		break;
	case PROC_DOCKER:
		msgb_init(&mb, MSG_CONFIG_DOCKER, 0);
		msg_add_str(&mb, "socket", conf->docker_socket);
		msg_add_str(&mb, "container_prefix", conf->container_prefix);
		msg_add_str(&mb, "label_channel", conf->label_channel);
		msg_add_str(&mb, "label_profile", conf->label_profile);
		msg_add_str(&mb, "image", conf->image);
		msg_add_str(&mb, "state_dir", conf->state_dir);
		msg_add_str(&mb, "time_zone", conf->time_zone);
		msg_add_uint(&mb, "uid", sv->sv_uid);
		msg_add_uint(&mb, "gid", sv->sv_gid);
		msg_add_uint(&mb, "memory_mib", conf->memory_mib);
		msg_add_uint(&mb, "nano_cpus", conf->nano_cpus);
		msg_add_uint(&mb, "pids", conf->pids);
		if (conf->docker_runtime != NULL)
			msg_add_str(&mb, "runtime", conf->docker_runtime);
		msg_add_str(&mb, "log_driver", conf->docker_log_driver);
		child_send(c, &mb);
		break;
	case PROC_EGRESS:
		msgb_init(&mb, MSG_CONFIG_EGRESS, 0);
		msg_add_str(&mb, "upstream_url", conf->upstream_url);
		if (conf->upstream_credential_file != NULL)
			msg_add_str(&mb, "credential_file",
			    conf->upstream_credential_file);
		if (conf->upstream_credential_hook)
			msg_add_bool(&mb, "credential_hook", 1);
		if (conf->cred_fallback_none)
			msg_add_str(&mb, "cred_fallback", "none");
		if (conf->mcp_credential_hook)
			msg_add_bool(&mb, "mcp_credential_hook", 1);
		if (conf->upstream_ca_file != NULL)
			msg_add_str(&mb, "ca_file", conf->upstream_ca_file);
		if (conf->mcp_credential_file != NULL)
			msg_add_str(&mb, "mcp_credential_file",
			    conf->mcp_credential_file);
		msg_add_bool(&mb, "allow_http", conf->mcp_allow_http);
		msg_add_uint(&mb, "uid", sv->sv_uid);
		msg_add_uint(&mb, "max_output_tokens", conf->max_output_tokens);
#if RTSANDBOX_TEST_SEAMS
		if (conf->test_dns != NULL)
			msg_add_str(&mb, "test_dns", conf->test_dns);
		if (conf->test_loopback_public)
			msg_add_bool(&mb, "test_loopback_public", 1);
		if (conf->test_fetch_ca_file != NULL)
			msg_add_str(&mb, "test_fetch_ca_file",
			    conf->test_fetch_ca_file);
#endif
		child_send(c, &mb);
		child_egress_tables(c, conf);
		break;
	case PROC_BROKER:
		if (c->c_precheck) {
			child_precheck_config(c);
			break;
		}
		if ((p = config_profile(conf, c->c_profile)) == NULL)
			fatalx("broker for unknown profile %s", c->c_profile);
		msgb_init(&mb, MSG_CONFIG_BROKER, 0);
		msg_add_str(&mb, "channel", c->c_channel);
		msg_add_str(&mb, "profile", p->name);
		msg_add_str(&mb, "model", p->model);
		msg_add_uint(&mb, "max_calls", conf->max_calls);
		msg_add_uint(&mb, "max_output_tokens", conf->max_output_tokens);
		msg_add_strv(&mb, "tools", (const char *const *)conf->tools,
		    conf->ntools);
		if (conf->compaction_engine != NULL) {
			msg_add_str(&mb, "compaction_engine",
			    conf->compaction_engine);
			msg_add_uint(&mb, "compaction_timeout_ms",
			    conf->compaction_timeout_ms);
			msg_add_uint(&mb, "compaction_max_bytes",
			    conf->compaction_max_request_bytes);
		}
		msg_add_fd(&mb, c->c_listen_fd);
		c->c_listen_fd = -1;
		child_send(c, &mb);
		/* the profile's MCP servers and their allowed tools */
		for (i = 0; i < p->nmcp; i++) {
			const struct config_mcp_server *ms;

			if ((ms = config_mcp_server(conf, p->mcp[i])) == NULL)
				fatalx("profile %s: unknown MCP server %s",
				    p->name, p->mcp[i]);
			msgb_init(&mb, MSG_CONFIG_BROKER_MCP, 0);
			msg_add_str(&mb, "name", ms->name);
			msg_add_strv(&mb, "tools",
			    (const char *const *)ms->tools, ms->ntools);
			child_send(c, &mb);
		}
		break;
	case PROC_RESEARCH:
		/* Built by the caller; sent once (a job is never restarted). */
		if (c->c_config == NULL)
			fatalx("%s: research job without configuration",
			    __func__);
		child_send(c, c->c_config);
		free(c->c_config);
		c->c_config = NULL;
		break;
	default:
		fatalx("%s: no configuration for %s", __func__,
		    proc_role_name(c->c_role));
	}
	msgb_init(&mb, MSG_CONFIG_DONE, 0);
	child_send(c, &mb);
}

static void
child_timer(evutil_socket_t fd, short ev, void *arg)
{
	struct child	*c = arg;

	switch (c->c_state) {
	case CHILD_STARTING:
		log_warnx("%s did not become ready within %d ms; killing it",
		    child_label(c), CHILD_READY_TIMEOUT_MS);
		if (c->c_pid > 0)
			kill(c->c_pid, SIGKILL);
		break;
	case CHILD_STOPPING:
		if (c->c_pid <= 0)
			break;
		if (!c->c_term_sent) {
			log_debug("%s did not exit on EOF: SIGTERM",
			    child_label(c));
			kill(c->c_pid, SIGTERM);
			c->c_term_sent = 1;
			timer_arm(c, CHILD_KILL_MS);
		} else {
			log_warnx("%s did not exit on SIGTERM within %d ms: "
			    "SIGKILL", child_label(c), CHILD_KILL_MS);
			kill(c->c_pid, SIGKILL);
		}
		break;
	case CHILD_DOWN:
		/* a broker or research job that could not be started: its
		 * owner hears of it from here, not inside the call that made
		 * it (child_spawn) */
		if (!c->c_singleton) {
			child_down(c);
			break;
		}
		if (!sv->sv_stopping) {
			c->c_restarts++;
			sv->sv_count.sc_child_restarts++;
			child_spawn(c);
		}
		break;
	default:
		break;
	}
}

/* A broker's or research job's pipe to egress, with the policy egress
 * holds that peer to. */
static void
child_attach(struct child *eg, struct child *c)
{
	struct msgb	 mb;

	msgb_init(&mb, MSG_EGRESS_ATTACH, 0);
	msg_add_uint(&mb, "peer", c->c_peer);
	msg_add_str(&mb, "channel", c->c_channel);
	if (c->c_role == PROC_RESEARCH) {
		msg_add_str(&mb, "role", "research");
		msg_add_str(&mb, "model", sv->sv_conf->research_model);
		if (c->c_thinking != NULL)
			msg_add_str(&mb, "thinking", c->c_thinking);
		msg_add_uint(&mb, "max_calls", RESEARCH_MODEL_CALLS_MAX);
	} else if (c->c_precheck) {
		msg_add_str(&mb, "role", "precheck");
		msg_add_str(&mb, "profile", c->c_profile);
		msg_add_strv(&mb, "grant", (const char *const *)c->c_grant,
		    c->c_ngrant);
		msg_add_uint(&mb, "max_calls", c->c_pc_calls);
	} else {
		msg_add_str(&mb, "role", "broker");
		msg_add_str(&mb, "profile", c->c_profile);
	}
	msg_add_fd(&mb, c->c_egress_end);
	c->c_egress_end = -1;
	child_send(eg, &mb);
}

static void
child_spawn(struct child *c)
{
	int		 sp[2], ep[2] = { -1, -1 }, fds[2], nfds = 1;
	struct child	*eg;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1) {
		c->c_spawn_errno = errno;
		log_warn("%s: socketpair for %s", __func__, child_label(c));
		goto retry;
	}
	fds[0] = sp[1];
	if (c->c_role == PROC_BROKER || c->c_role == PROC_RESEARCH) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
		    ep) == -1) {
			c->c_spawn_errno = errno;
			log_warn("%s: egress socketpair", __func__);
			close(sp[0]);
			close(sp[1]);
			goto retry;
		}
		fds[nfds++] = ep[1];
	}

	c->c_pid = spawner_spawn(c->c_role, c->c_name, fds, nfds);
	c->c_spawn_errno = c->c_pid == -1 ? errno : 0;
	close(sp[1]);
	if (ep[1] != -1)
		close(ep[1]);
	if (c->c_pid == -1) {
		log_warn("%s: cannot start %s", __func__, child_label(c));
		close(sp[0]);
		if (ep[0] != -1)
			close(ep[0]);
		goto retry;
	}
	clock_gettime(CLOCK_MONOTONIC, &c->c_started);
	c->c_state = CHILD_STARTING;
	c->c_conn = frame_conn_new(sv->sv_base, sp[0],
	    edge_limits(c->c_role, PROC_SUPERVISOR),
	    edge_limits(PROC_SUPERVISOR, c->c_role), child_frame,
	    child_conn_err, c);
	if (c->c_conn == NULL)
		fatalx("%s: cannot watch the pipe of %s", __func__,
		    child_label(c));
	/* What a broker or research job can make the supervisor hold is
	 * bounded (DESIGN.md 1, invariant 7); one per channel, small frames
	 * mostly: no read buffer is kept between them (DESIGN.md 12, a
	 * thousand idle channels). */
	if (!c->c_singleton) {
		frame_conn_set_budget(c->c_conn, &child_peer_budget);
		frame_conn_set_outq_cap(c->c_conn, PEER_QUEUE_MAX,
		    PEER_STALL_MS, child_stalled);
		frame_conn_set_read_size(c->c_conn, CHILD_READ_SIZE);
		frame_conn_set_batch_cb(c->c_conn, child_read_done);
	}
	log_debug("%s started (pid %d)", child_label(c), (int)c->c_pid);
	child_send_config(c);
	timer_arm(c, CHILD_READY_TIMEOUT_MS);

	if (ep[0] != -1) {
		/* The egress end of the pipe goes to egress, now or once it is
		 * ready: until then the child waits for its first frame. */
		c->c_egress_end = ep[0];
		/* its number now: a turn may be bound before egress is
		 * ready, and that request waits behind the attach */
		c->c_peer = ++child_next_peer;
		/* An egress whose pipe is gone, not yet reaped, is not:
		 * the next one takes the pipe once it is ready. */
		if ((eg = child_singleton(PROC_EGRESS)) != NULL &&
		    child_usable(eg))
			child_attach(eg, c);
		else
			log_debug("%s: egress is not ready yet",
			    child_label(c));
	}
	return;
 retry:
	c->c_state = CHILD_DOWN;
	timer_arm(c, c->c_singleton ? CHILD_BACKOFF_MAX_MS : 0);
}

/*
 * What egress says on its own: a broker or research job broke a rule.
 * The peer is stopped like one the supervisor caught itself.  A peer that
 * is gone meanwhile is no news; a rule egress does not name is its bug.
 */
static int
child_egress_msg(struct child *eg, struct msg *m, void *arg)
{
	struct child	*c;
	const char	*rule;
	uint64_t	 peer, calls;
	enum violation	 v;
	char		 why[128];

	/* daemon.stats's upstream_calls: what every egress so far counted,
	 * not what brokers say they sent. */
	if (m->m_type == MSG_EGR_COUNTERS) {
		if (msg_get_uint(m, "upstream_calls", 0, UINT64_C(1) << 53,
		    &calls) == -1 || msg_end(m) == -1 ||
		    calls < egress_calls_last)
			return -1;
		egress_calls_last = calls;
		sv->sv_count.sc_upstream_calls = egress_calls_base + calls;
		return 0;
	}
	if (m->m_type == MSG_EGR_CRED)
		return cred_ask(eg, m);
	if (m->m_type != MSG_EGR_VIOLATION ||
	    msg_get_uint(m, "peer", 1, UINT64_C(1) << 53, &peer) == -1 ||
	    msg_get_str(m, "rule", 32, &rule) == -1 || msg_end(m) == -1 ||
	    (v = violation_from_name(rule)) == VIOLATION_NONE)
		return -1;
	TAILQ_FOREACH(c, &children, c_entry)
		if (c->c_peer == peer && !c->c_singleton)
			break;
	if (c == NULL || c->c_pid <= 0) {
		sv->sv_count.sc_violations++;
		sv->sv_count.sc_rules[v]++;
		log_warnx("egress refused a call (%s) of a peer that is gone",
		    rule);
		return 0;
	}
	snprintf(why, sizeof(why), "egress refused a call (%s)", rule);
	child_violation(c, v, why);
	return 0;
}

void
child_init(const struct child_hooks *h)
{
	static const enum proc_role singles[] = {
		PROC_FSGUARD, PROC_DOCKER, PROC_EGRESS
	};
	struct child	*c;
	size_t		 i;

	hooks = *h;
	for (i = 0; i < sizeof(singles) / sizeof(singles[0]); i++) {
		c = child_new(singles[i], NULL, 1);
		if ((c->c_timer = evtimer_new(sv->sv_base, child_timer,
		    c)) == NULL)
			fatalx("%s: evtimer_new", __func__);
		if (singles[i] == PROC_EGRESS)
			c->c_msg_cb = child_egress_msg;
		if (singles[i] == PROC_DOCKER)
			c->c_msg_cb = h->ch_docker_msg;
	}
}

void
child_start_singletons(void)
{
	struct child	*c;

	TAILQ_FOREACH(c, &children, c_entry)
		if (c->c_singleton && c->c_state == CHILD_DOWN)
			child_spawn(c);
}

struct child *
child_broker_start(const char *channel, const char *segment,
    const char *profile, int listen_fd, child_event_cb cb, child_msg_cb mcb,
    void *arg)
{
	struct child	*c;

	c = child_new(PROC_BROKER, segment, 0);
	if ((c->c_timer = evtimer_new(sv->sv_base, child_timer, c)) == NULL ||
	    (c->c_channel = strdup(channel)) == NULL ||
	    (c->c_profile = strdup(profile)) == NULL)
		fatal("%s", __func__);
	c->c_listen_fd = listen_fd;
	c->c_event_cb = cb;
	c->c_msg_cb = mcb;
	c->c_event_arg = arg;
	child_spawn(c);
	return c;
}

struct child *
child_precheck_start(const char *channel, const char *name,
    const char *profile, int listen_fd, const char *const *grant,
    size_t ngrant, uint64_t calls, uint64_t deadline_ms, child_event_cb cb,
    child_msg_cb mcb, void *arg)
{
	struct child	*c;
	size_t		 i;

	c = child_new(PROC_BROKER, name, 0);
	if ((c->c_timer = evtimer_new(sv->sv_base, child_timer, c)) == NULL ||
	    (c->c_channel = strdup(channel)) == NULL ||
	    (c->c_profile = strdup(profile)) == NULL ||
	    (ngrant > 0 && (c->c_grant = calloc(ngrant,
	    sizeof(*c->c_grant))) == NULL))
		fatal("%s", __func__);
	for (i = 0; i < ngrant; i++) {
		if ((c->c_grant[i] = strdup(grant[i])) == NULL)
			fatal("%s", __func__);
		c->c_ngrant++;
	}
	c->c_precheck = 1;
	c->c_pc_calls = calls;
	c->c_pc_deadline_ms = deadline_ms;
	c->c_listen_fd = listen_fd;
	c->c_event_cb = cb;
	c->c_msg_cb = mcb;
	c->c_event_arg = arg;
	child_spawn(c);
	return c;
}

/* A research job: config is its CONFIG_RESEARCH, owned from here on. */
struct child *
child_research_start(const char *channel, const char *segment,
    const char *thinking, struct msgb *config, child_event_cb cb,
    child_msg_cb mcb, void *arg)
{
	struct child	*c;

	c = child_new(PROC_RESEARCH, segment, 0);
	if ((c->c_timer = evtimer_new(sv->sv_base, child_timer, c)) == NULL ||
	    (c->c_channel = strdup(channel)) == NULL ||
	    (thinking != NULL && (c->c_thinking = strdup(thinking)) == NULL))
		fatal("%s", __func__);
	c->c_config = config;
	c->c_event_cb = cb;
	c->c_msg_cb = mcb;
	c->c_event_arg = arg;
	child_spawn(c);
	return c;
}

/*
 * Egress lets go of a broker's or research job's edge: its calls in
 * flight are cancelled and nothing it sends goes out any more.  Sent
 * before the child is signalled, so that a process that outlives its stop
 * spends nothing meanwhile.
 */
static void
child_egress_drop(struct child *c)
{
	struct child	*eg = child_singleton(PROC_EGRESS);
	struct msgb	 mb;

	if (c->c_singleton || c->c_peer == 0 || c->c_egress_end != -1 ||
	    c->c_dropped || eg == NULL || eg->c_state != CHILD_READY)
		return;
	c->c_dropped = 1;
	msgb_init(&mb, MSG_EGR_DROP, 0);
	msg_add_uint(&mb, "peer", c->c_peer);
	child_send_msg(eg, &mb);
}

/* A broker or research job is stopped for good: the caller lets go of
 * it; gone (may be NULL) is called once the process is reaped. */
void
child_stop(struct child *c, void (*gone)(void *), void *arg)
{
	c->c_event_cb = NULL;
	c->c_msg_cb = NULL;
	c->c_gone_cb = gone;
	c->c_gone_arg = arg;
	child_egress_drop(c);
	c->c_state = CHILD_STOPPING;
	if (c->c_conn != NULL) {
		frame_conn_free(c->c_conn);
		c->c_conn = NULL;
	}
	if (c->c_pid > 0)
		timer_arm(c, CHILD_STOP_GRACE_MS);
	else
		child_down(c);
}

/* The child is gone: fail its requests, then restart or forget it. */
static void
child_down(struct child *c)
{
	struct child_req	*cr;
	struct child		*p;
	long long		 lived;
	long			 delay;
	int			 was_stopping = c->c_state == CHILD_STOPPING;
	int			 was_ready = c->c_state == CHILD_READY;

	if (c->c_conn != NULL) {
		frame_conn_free(c->c_conn);
		c->c_conn = NULL;
	}
	evtimer_del(c->c_timer);
	/* Sent and unanswered: it may have been carried out or not.  What
	 * is safe to repeat goes again once a helper is back, within the
	 * request's deadline; the rest fails now. */
	while ((cr = TAILQ_FIRST(&c->c_reqs)) != NULL) {
		TAILQ_REMOVE(&c->c_reqs, cr, cr_entry);
		if (c->c_singleton && cr->cr_json != NULL &&
		    !sv->sv_stopping && proc_now_ms() < cr->cr_deadline) {
			log_info("%s stopped holding %s: sent again once it "
			    "is back", child_label(c),
			    msg_type_name(cr->cr_type));
			child_req_wait(c, cr);
			continue;
		}
		cr->cr_cb(c, NULL, cr->cr_arg);
		child_req_free(cr);
	}
	c->c_pid = -1;
	c->c_state = CHILD_DOWN;
	if (c->c_role == PROC_EGRESS) {
		egress_calls_base += egress_calls_last;
		egress_calls_last = 0;
		/* Every edge attached to it went with it: a broker or job
		 * with one cannot make a call any more. */
		TAILQ_FOREACH(p, &children, c_entry)
			if (!p->c_singleton && p->c_peer != 0 &&
			    p->c_egress_end == -1)
				p->c_edge_lost = 1;
	}
	if (c->c_singleton)
		hooks.ch_down(c);
	if (!c->c_singleton) {
		if (c->c_event_cb != NULL && !was_stopping)
			c->c_event_cb(c, 0, c->c_event_arg);
		if (c->c_gone_cb != NULL)
			c->c_gone_cb(c->c_gone_arg);
		child_free(c);
		return;
	}
	if (sv->sv_stopping) {
		child_fail_waiting(c);
		return;
	}
	/* The back-off is for a helper that cannot start; one that served
	 * and then died (killed, or a crash) comes back at once. */
	lived = ms_since(&c->c_started);
	if (was_ready || lived >= CHILD_STABLE_MS)
		c->c_failures = 0;
	delay = CHILD_BACKOFF_MIN_MS;
	for (unsigned i = 0; i < c->c_failures && delay < CHILD_BACKOFF_MAX_MS;
	    i++)
		delay *= 2;
	if (delay > CHILD_BACKOFF_MAX_MS)
		delay = CHILD_BACKOFF_MAX_MS;
	c->c_failures++;
	log_info("restarting %s in %ld ms", child_label(c), delay);
	timer_arm(c, delay);
}

void
child_reap(void)
{
	struct child	*c;
	pid_t		 pid;
	int		 status;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid == 0)
			break;
		if (pid == -1) {
			if (errno == EINTR)
				continue;
			if (errno != ECHILD)
				log_warn("waitpid");
			break;
		}
		sv->sv_count.sc_child_exits++;
		TAILQ_FOREACH(c, &children, c_entry)
			if (c->c_pid == pid)
				break;
		if (c == NULL) {
			/* Nothing could be started without it. */
			if (spawner_is(pid) && !sv->sv_stopping)
				fatalx("the spawner (pid %d) died", (int)pid);
			log_debug("reaped unknown pid %d", (int)pid);
			continue;
		}
		if (WIFSIGNALED(status))
			log_warnx("%s (pid %d) killed by signal %d (%s)%s",
			    child_label(c), (int)pid, WTERMSIG(status),
			    strsignal(WTERMSIG(status)),
			    WTERMSIG(status) == SIGSYS ?
			    ": a system call outside its seccomp table" : "");
		else if (WEXITSTATUS(status) != 0 || !c->c_singleton)
			(c->c_state == CHILD_STOPPING || sv->sv_stopping ?
			    log_debug : log_warnx)("%s (pid %d) exited with "
			    "status %d", child_label(c), (int)pid,
			    WEXITSTATUS(status));
		else
			log_warnx("%s (pid %d) exited", child_label(c),
			    (int)pid);
		child_down(c);
	}
}

int
child_count_alive(void)
{
	struct child	*c;
	int		 n = 0;

	TAILQ_FOREACH(c, &children, c_entry)
		if (c->c_pid > 0)
			n++;
	return n;
}

int
child_stop_all(void)
{
	struct child	*c;

	TAILQ_FOREACH(c, &children, c_entry) {
		evtimer_del(c->c_timer);
		child_fail_waiting(c);
		if (c->c_conn != NULL) {
			/* EOF on its pipe ends a child; SIGTERM in case it
			 * is busy. */
			frame_conn_free(c->c_conn);
			c->c_conn = NULL;
		}
		if (c->c_pid > 0) {
			c->c_state = CHILD_STOPPING;
			kill(c->c_pid, SIGTERM);
		}
	}
	return child_count_alive();
}

void
child_kill_all(void)
{
	struct child	*c;

	TAILQ_FOREACH(c, &children, c_entry)
		if (c->c_pid > 0)
			kill(c->c_pid, SIGKILL);
}
