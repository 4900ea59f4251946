/*
 * Channel lifecycle (DESIGN.md 6): start, stop, fresh and paths run one at
 * a time per channel, in the order they came; a start that finds another
 * start of the same profile queued last joins it instead.  Each step is a
 * request to the file guard or the Docker client, continued in its reply.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "control.h"
#include "limits.h"
#include "log.h"
#include "supervisor.h"
#include "validate.h"

enum chop_kind {
	CHOP_START,
	CHOP_STOP,
	CHOP_FRESH,
	CHOP_PATHS,
};

struct chan_waiter {
	TAILQ_ENTRY(chan_waiter)	 w_entry;
	struct ctl_req			*w_req;		/* a client's, or */
	chan_done_cb			 w_cb;		/* the daemon's own */
	void				*w_arg;
	struct chan_op			*w_op;
};

struct chan_op {
	TAILQ_ENTRY(chan_op)		 op_entry;
	struct channel			*op_chan;
	enum chop_kind			 op_kind;
	char				*op_profile;
	int				 op_running;
	TAILQ_HEAD(, chan_waiter)	 op_waiters;
	char				*op_run_dir;
	char				*op_ws_dir;
	char				*op_sessions;
	char				*op_attachments;
	uint64_t			 op_archived;
	struct event			*op_timer;	/* start_ms */
	/* stop and fresh: the broker stopped and not yet gone, and whether
	 * the container's removal has answered */
	struct child			*op_broker;
	int				 op_removed;
	/* A start stopped while a request was out (its waiters answered
	 * already): it ends with that request's reply, with this. */
	char				*op_stopped;
};

struct channel {
	TAILQ_ENTRY(channel)		 ch_entry;
	char				*ch_key;
	char				 ch_segment[SEGMENT_MAX + 1];
	struct child			*ch_broker;
	char				*ch_broker_profile;
	uint64_t			 ch_broker_gen;	/* sv_broker_gen */
	int				 ch_broker_ready;
	int				 ch_worker_ready;	/* it posted */
	struct chan_op			*ch_broker_wait;	/* op waiting */
	struct chan_op			*ch_worker_wait;	/* op waiting */
	TAILQ_HEAD(chan_op_list, chan_op) ch_ops;
	/* The container last seen running with the broker's profile and the
	 * configured image, "" when none; trusted without asking Docker
	 * while the event stream that would have said it stopped is the
	 * one followed since (ch_seen_gen). */
	char				 ch_container[72];
	uint64_t			 ch_seen_gen;
	int				 ch_oom;	/* an oom event for it */
};

static TAILQ_HEAD(, channel)	 channels = TAILQ_HEAD_INITIALIZER(channels);
/* The turns of the channels (turn.c). */
static struct chan_hooks	 turns;

/* Whether the Docker client follows the event stream, and which time. */
static int			 chan_events_live;
static uint64_t			 chan_events_gen = 1;

/*
 * Channels whose container a removal could not remove (Docker was not
 * there): removed again once the event stream is followed again, unless a
 * start of the channel succeeded meanwhile.
 */
struct chan_pending {
	TAILQ_ENTRY(chan_pending)	 p_entry;
	char				*p_key;
};
static TAILQ_HEAD(, chan_pending) pending_removals =
    TAILQ_HEAD_INITIALIZER(pending_removals);

struct chan_kill_ctx {
	char		*k_key;
	chan_done_cb	 k_cb;
	void		*k_arg;
};

static void	chan_op_run(struct chan_op *);
static void	chan_step_ensure(struct chan_op *);
static void	chan_wait_worker(struct chan_op *);
static void	chan_freshened(struct child *, struct msg *, void *);
static void	chan_pending_set(const char *, int);

void
chan_init(const struct chan_hooks *h)
{
	turns = *h;
}

static struct channel *
chan_find(const char *key)
{
	struct channel	*ch;

	TAILQ_FOREACH(ch, &channels, ch_entry)
		if (strcmp(ch->ch_key, key) == 0)
			return ch;
	return NULL;
}

static struct channel *
chan_get(const char *key)
{
	struct channel	*ch;

	if ((ch = chan_find(key)) != NULL)
		return ch;
	if ((ch = calloc(1, sizeof(*ch))) == NULL)
		fatal("%s", __func__);
	ch->ch_key = xstrdup(key);
	if (channel_segment(key, strlen(key), ch->ch_segment,
	    sizeof(ch->ch_segment)) == -1)
		fatalx("%s: unchecked channel key", __func__);
	TAILQ_INIT(&ch->ch_ops);
	TAILQ_INSERT_TAIL(&channels, ch, ch_entry);
	return ch;
}

/* A channel with nothing queued and no broker is forgotten. */
static void
chan_gc(struct channel *ch)
{
	if (!TAILQ_EMPTY(&ch->ch_ops) || ch->ch_broker != NULL)
		return;
	TAILQ_REMOVE(&channels, ch, ch_entry);
	free(ch->ch_broker_profile);
	free(ch->ch_key);
	free(ch);
}

uint64_t
chan_count(void)
{
	struct channel	*ch;
	uint64_t	 n = 0;

	TAILQ_FOREACH(ch, &channels, ch_entry)
		n++;
	return n;
}

static void
chan_waiter_cancel(struct ctl_req *req, void *arg)
{
	struct chan_waiter	*w = arg;

	/* The client let go; the operation itself goes on. */
	TAILQ_REMOVE(&w->w_op->op_waiters, w, w_entry);
	free(w);
}

static void
chan_op_free(struct chan_op *op)
{
	/* Nobody waits for that broker to be gone any more. */
	if (op->op_broker != NULL)
		op->op_broker->c_gone_cb = NULL;
	if (op->op_timer != NULL)
		event_free(op->op_timer);
	free(op->op_profile);
	free(op->op_run_dir);
	free(op->op_ws_dir);
	free(op->op_sessions);
	free(op->op_attachments);
	free(op->op_stopped);
	free(op);
}

/* Answer every waiter with a copy of result (or the error). */
static void
chan_op_answer(struct chan_op *op, const cJSON *result, const char *err)
{
	struct chan_waiter	*w;
	cJSON			*copy;

	while ((w = TAILQ_FIRST(&op->op_waiters)) != NULL) {
		TAILQ_REMOVE(&op->op_waiters, w, w_entry);
		if (w->w_req == NULL) {
			if (w->w_cb != NULL)
				w->w_cb(err, w->w_arg);
			free(w);
			continue;
		}
		ctl_set_cancel(w->w_req, NULL, NULL);
		if (err != NULL)
			ctl_error(w->w_req, RPC_APP_ERROR, "%s", err);
		else {
			if ((copy = cJSON_Duplicate(result, 1)) == NULL)
				fatalx("%s: out of memory", __func__);
			ctl_reply(w->w_req, copy);
		}
		free(w);
	}
}

/* Answer every waiter, then run the next operation of the channel. */
static void
chan_op_done(struct chan_op *op, cJSON *result, const char *err)
{
	struct channel		*ch = op->op_chan;

	if (op->op_kind == CHOP_START && err == NULL)
		chan_pending_set(ch->ch_key, 0);
	chan_op_answer(op, result, err);
	cJSON_Delete(result);
	if (ch->ch_broker_wait == op)
		ch->ch_broker_wait = NULL;
	if (ch->ch_worker_wait == op)
		ch->ch_worker_wait = NULL;
	TAILQ_REMOVE(&ch->ch_ops, op, op_entry);
	chan_op_free(op);
	if ((op = TAILQ_FIRST(&ch->ch_ops)) != NULL)
		chan_op_run(op);
	else
		chan_gc(ch);
}

static void __attribute__((format(printf, 2, 3)))
chan_op_fail(struct chan_op *op, const char *fmt, ...)
{
	char	 err[600];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(err, sizeof(err), fmt, ap);
	va_end(ap);
	log_warnx("channel %s: %s", op->op_chan->ch_segment, err);
	sv->sv_count.sc_failures++;
	chan_op_done(op, NULL, err);
}

/*
 * The reply to a request of a start that was stopped meanwhile (its
 * waiters were answered then): the start ends here, and whatever the
 * reply brought (a listening socket) is closed with the message.
 */
static int
chan_op_stopped(struct chan_op *op)
{
	char	 why[256];

	if (op->op_stopped == NULL)
		return 0;
	snprintf(why, sizeof(why), "%s", op->op_stopped);
	log_debug("channel %s: the stopped start ends",
	    op->op_chan->ch_segment);
	chan_op_done(op, NULL, why);
	return 1;
}

/* The text of a failed reply: the child died, or it answered "error". */
static const char *
chan_reply_error(struct msg *m, const char *who)
{
	static char	 buf[600];
	const char	*e;

	if (m == NULL) {
		snprintf(buf, sizeof(buf), "%s stopped before it answered",
		    who);
		return buf;
	}
	if (m->m_type != MSG_ERROR)
		return NULL;
	if (msg_get_str(m, "error", 512, &e) == -1 || msg_end(m) == -1)
		e = "unreadable error";
	snprintf(buf, sizeof(buf), "%s: %s", who, e);
	return buf;
}

static int
chan_request(struct chan_op *op, enum proc_role role, struct msgb *mb,
    child_reply_cb cb)
{
	struct child	*c = child_singleton(role);

	if (c == NULL || child_request(c, mb, cb, op) == -1) {
		if (c == NULL)
			msgb_free(mb);
		chan_op_fail(op, "%s is not running", role == PROC_FSGUARD ?
		    "the file guard" : "the Docker client");
		return -1;
	}
	return 0;
}

/* Stop the channel's broker; gone (may be NULL) is told once the process
 * is reaped. */
static void
chan_broker_stop(struct channel *ch, void (*gone)(void *), void *arg)
{
	if (ch->ch_broker == NULL)
		return;
	log_debug("channel %s: stopping its broker", ch->ch_segment);
	child_stop(ch->ch_broker, gone, arg);
	ch->ch_broker = NULL;
	ch->ch_broker_ready = 0;
	ch->ch_worker_ready = 0;
	free(ch->ch_broker_profile);
	ch->ch_broker_profile = NULL;
}

static void
chan_broker_event(struct child *c, int ready, void *arg)
{
	struct channel	*ch = arg;
	struct chan_op	*op = ch->ch_broker_wait, *wop;
	char		*key;

	if (ready) {
		ch->ch_broker_ready = 1;
		if (op != NULL) {
			ch->ch_broker_wait = NULL;
			chan_step_ensure(op);
		}
		return;
	}
	log_warnx("channel %s: broker gone", ch->ch_segment);
	ch->ch_broker = NULL;
	ch->ch_broker_ready = 0;
	ch->ch_worker_ready = 0;
	free(ch->ch_broker_profile);
	ch->ch_broker_profile = NULL;
	wop = ch->ch_worker_wait;
	ch->ch_worker_wait = NULL;
	ch->ch_broker_wait = NULL;
	/* Failing an operation may run the next one or forget ch. */
	key = xstrdup(ch->ch_key);
	if (c->c_spawn_errno != 0 && op != NULL)
		chan_op_fail(op, "the broker could not be started: %s%s",
		    strerror(c->c_spawn_errno), c->c_spawn_errno == EAGAIN ?
		    " (the service user's process limit?)" : "");
	else if (wop != NULL)
		chan_op_fail(wop, "the broker stopped before the worker was "
		    "ready");
	else if (op != NULL)
		chan_op_fail(op, "the broker stopped before it was ready");
	else
		chan_gc(ch);
	turns.ch_broker_gone(key, c);
	free(key);
}

static void
chan_seen_running(struct channel *ch, const char *id)
{
	if (strlen(id) >= sizeof(ch->ch_container) || id[0] == '\0') {
		ch->ch_container[0] = '\0';
		return;
	}
	if (strcmp(ch->ch_container, id) != 0)
		ch->ch_oom = 0;
	memcpy(ch->ch_container, id, strlen(id) + 1);
	ch->ch_seen_gen = chan_events_live ? chan_events_gen : 0;
}

static void
chan_forget_container(struct channel *ch)
{
	ch->ch_container[0] = '\0';
	ch->ch_seen_gen = 0;
	ch->ch_oom = 0;
}

/* A warm start: the broker and worker are ready for the container that
 * runs, and Docker would have said if it had stopped since. */
static int
chan_warm(const struct channel *ch, const struct chan_op *op)
{
	return chan_events_live && ch->ch_container[0] != '\0' &&
	    ch->ch_seen_gen == chan_events_gen && ch->ch_broker != NULL &&
	    ch->ch_broker_ready && child_usable(ch->ch_broker) &&
	    ch->ch_worker_ready &&
	    ch->ch_broker_gen == sv->sv_broker_gen &&
	    strcmp(ch->ch_broker_profile, op->op_profile) == 0;
}

static void
chan_ensured(struct child *c, struct msg *m, void *arg)
{
	struct chan_op	*op = arg;
	const char	*err, *id;
	int		 recreated;

	if (chan_op_stopped(op))
		return;
	if ((err = chan_reply_error(m, "Docker")) != NULL) {
		/* The broker was made for the container that is not there:
		 * the next start must ensure again, not find it ready. */
		chan_broker_stop(op->op_chan, NULL, NULL);
		chan_forget_container(op->op_chan);
		chan_op_fail(op, "%s", err);
		return;
	}
	if (msg_get_bool(m, "recreated", &recreated) == -1 ||
	    msg_get_str(m, "container", 128, &id) == -1 || msg_end(m) == -1) {
		chan_op_fail(op, "Docker client: %s", m->m_err);
		return;
	}
	log_info("channel %s: container %.12s %s (profile %s)",
	    op->op_chan->ch_segment, id, recreated ? "created" : "kept",
	    op->op_profile);
	chan_seen_running(op->op_chan, id);
	chan_wait_worker(op);
}

static void
chan_worker_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct chan_op	*op = arg;

	op->op_chan->ch_worker_wait = NULL;
	chan_op_fail(op, "Worker did not become ready");
}

/* channel.start answers once the worker announced itself (PROTOCOL.md 2:
 * POST /worker/ready), at most start_ms after the container runs. */
static void
chan_wait_worker(struct chan_op *op)
{
	struct channel	*ch = op->op_chan;
	struct timeval	 tv;

	if (ch->ch_worker_ready) {
		chan_op_done(op, cJSON_CreateObject(), NULL);
		return;
	}
	/* Gone while Docker made the container: no worker can report. */
	if (ch->ch_broker == NULL) {
		chan_op_fail(op, "the broker stopped before the worker was "
		    "ready");
		return;
	}
	tv.tv_sec = sv->sv_conf->start_ms / 1000;
	tv.tv_usec = (sv->sv_conf->start_ms % 1000) * 1000;
	if ((op->op_timer = evtimer_new(sv->sv_base, chan_worker_timeout,
	    op)) == NULL || evtimer_add(op->op_timer, &tv) == -1)
		fatalx("%s: timer", __func__);
	ch->ch_worker_wait = op;
}

/* What a broker says on its own. */
static int
chan_broker_msg(struct child *c, struct msg *m, void *arg)
{
	struct channel	*ch = arg;
	struct chan_op	*op;
	const char	*kind, *route, *turn_id = NULL;
	uint64_t	 status, calls = 1;
	int		 have, is_call;

	switch (m->m_type) {
	case MSG_BRK_EVENT:
		/* calls: a batch of model or MCP calls (broker sup_call()) */
		if (msg_get_str(m, "kind", 32, &kind) == -1 ||
		    msg_get_str(m, "route", 512, &route) == -1 ||
		    msg_get_uint(m, "status", 0, 599, &status) == -1 ||
		    msg_get_str_opt(m, "turn_id",
		    UTF8_BYTES_MAX(SAFE_NAME_MAX), &turn_id) == -1 ||
		    msg_get_uint_opt(m, "calls", 2, MAX_CALLS_MAX, &calls,
		    &have) == -1 || msg_end(m) == -1)
			return -1;
		is_call = strcmp(kind, "model_call") == 0 ||
		    strcmp(kind, "mcp_call") == 0;
		if (have && !is_call)
			return -1;	/* a count of no calls */
		if (strcmp(kind, "worker_ready") == 0) {
			if (!ch->ch_worker_ready)
				log_info("channel %s: worker ready",
				    ch->ch_segment);
			ch->ch_worker_ready = 1;
			turns.ch_worker_ready(ch->ch_key);
			if ((op = ch->ch_worker_wait) != NULL) {
				ch->ch_worker_wait = NULL;
				chan_op_done(op, cJSON_CreateObject(), NULL);
			}
		} else if (strcmp(kind, "worker_stale") == 0)
			turns.ch_worker_stale(ch->ch_key, c, turn_id, route);
		else if (strcmp(kind, "compact_fallback") == 0)
			compact_broker_fallback(ch->ch_key, turn_id, route);
		else if (is_call)
			turns.ch_call(ch->ch_key, c, turn_id, calls);
		return 0;
	default:
		return turns.ch_broker_msg(ch->ch_key, c, m);
	}
}

static void
chan_step_ensure(struct chan_op *op)
{
	struct msgb	 mb;

	msgb_init(&mb, MSG_DOCK_ENSURE, 0);
	msg_add_str(&mb, "channel", op->op_chan->ch_key);
	msg_add_str(&mb, "profile", op->op_profile);
	msg_add_str(&mb, "run_dir", op->op_run_dir);
	msg_add_str(&mb, "workspace_dir", op->op_ws_dir);
	chan_request(op, PROC_DOCKER, &mb, chan_ensured);
}

static void
chan_bound(struct child *c, struct msg *m, void *arg)
{
	struct chan_op	*op = arg;
	struct channel	*ch = op->op_chan;
	const char	*err;
	int		 fd;

	if (chan_op_stopped(op))
		return;
	if ((err = chan_reply_error(m, "file guard")) != NULL) {
		chan_op_fail(op, "%s", err);
		return;
	}
	if (msg_get_fd(m, &fd) == -1 || msg_end(m) == -1) {
		chan_op_fail(op, "file guard: %s", m->m_err);
		return;
	}
	ch->ch_broker_profile = xstrdup(op->op_profile);
	ch->ch_broker_gen = sv->sv_broker_gen;
	ch->ch_broker_ready = 0;
	ch->ch_broker_wait = op;
	ch->ch_worker_ready = 0;
	ch->ch_broker = child_broker_start(ch->ch_key, ch->ch_segment,
	    op->op_profile, fd, chan_broker_event, chan_broker_msg, ch);
}

static void
chan_status_for_start(struct child *c, struct msg *m, void *arg)
{
	struct chan_op	*op = arg;
	struct channel	*ch = op->op_chan;
	const char	*err, *state, *image = NULL, *profile = NULL, *id;
	struct msgb	 mb;
	int		 recreate, ours = 0;

	if (chan_op_stopped(op))
		return;
	if ((err = chan_reply_error(m, "Docker")) != NULL) {
		chan_op_fail(op, "%s", err);
		return;
	}
	if (msg_get_str(m, "state", 16, &state) == -1 ||
	    msg_get_str_opt(m, "image", 256, &image) == -1 ||
	    msg_get_str_opt(m, "profile", 128, &profile) == -1 ||
	    msg_get_str_opt(m, "container", 128, &id) == -1 ||
	    (id != NULL && msg_get_bool(m, "ours", &ours) == -1) ||
	    msg_end(m) == -1) {
		chan_op_fail(op, "Docker client: %s", m->m_err);
		return;
	}
	recreate = strcmp(state, "running") != 0 || image == NULL ||
	    strcmp(image, sv->sv_conf->image) != 0 || profile == NULL ||
	    strcmp(profile, op->op_profile) != 0 || !ours || id == NULL;
	/* A new container, another profile or a broker configured before a
	 * reload changed what brokers are told needs a new broker. */
	if (ch->ch_broker != NULL && !recreate &&
	    child_usable(ch->ch_broker) &&
	    ch->ch_broker_gen == sv->sv_broker_gen &&
	    strcmp(ch->ch_broker_profile, op->op_profile) == 0) {
		chan_seen_running(ch, id);
		/* The inspect just made is the one ensure would make: a warm
		 * start needs no second. */
		if (ch->ch_broker_ready)
			chan_wait_worker(op);
		else
			ch->ch_broker_wait = op;
		return;
	}
	chan_broker_stop(ch, NULL, NULL);
	chan_forget_container(ch);
	msgb_init(&mb, MSG_FSG_BIND, 0);
	msg_add_str(&mb, "channel", ch->ch_key);
	chan_request(op, PROC_FSGUARD, &mb, chan_bound);
}

/* Stop and fresh go on once the container is removed and the broker is
 * gone, whichever comes last. */
static void
chan_stop_continue(struct chan_op *op)
{
	struct msgb	 mb;

	if (!op->op_removed || op->op_broker != NULL)
		return;
	if (op->op_kind == CHOP_STOP) {
		chan_op_done(op, cJSON_CreateObject(), NULL);
		return;
	}
	msgb_init(&mb, MSG_FSG_FRESH, 0);
	msg_add_str(&mb, "channel", op->op_chan->ch_key);
	chan_request(op, PROC_FSGUARD, &mb, chan_freshened);
}

static void
chan_stop_broker_gone(void *arg)
{
	struct chan_op	*op = arg;

	op->op_broker = NULL;
	chan_stop_continue(op);
}

static void
chan_removed(struct child *c, struct msg *m, void *arg)
{
	struct chan_op	*op = arg;
	const char	*err;

	if ((err = chan_reply_error(m, "Docker")) != NULL) {
		chan_op_fail(op, "%s", err);
		return;
	}
	if (msg_end(m) == -1) {
		chan_op_fail(op, "Docker client: %s", m->m_err);
		return;
	}
	log_info("channel %s: container removed", op->op_chan->ch_segment);
	chan_forget_container(op->op_chan);
	op->op_removed = 1;
	chan_stop_continue(op);
}

static void
chan_freshened(struct child *c, struct msg *m, void *arg)
{
	struct chan_op	*op = arg;
	const char	*err, *folder;
	uint64_t	 n;
	cJSON		*res;

	if ((err = chan_reply_error(m, "file guard")) != NULL) {
		chan_op_fail(op, "%s", err);
		return;
	}
	if (msg_get_uint(m, "archived", 0, UINT32_MAX, &n) == -1 ||
	    msg_get_str(m, "folder", 64, &folder) == -1 || msg_end(m) == -1) {
		chan_op_fail(op, "file guard: %s", m->m_err);
		return;
	}
	if ((res = cJSON_CreateObject()) == NULL ||
	    cJSON_AddNumberToObject(res, "archived", (double)n) == NULL)
		fatalx("%s: out of memory", __func__);
	if (n > 0)
		cJSON_AddStringToObject(res, "folder", folder);
	chan_op_done(op, res, NULL);
}

static void
chan_prepared(struct child *c, struct msg *m, void *arg)
{
	struct chan_op	*op = arg;
	struct channel	*ch = op->op_chan;
	const char	*err, *seg, *run, *ws, *sess, *att;
	struct msgb	 mb;
	cJSON		*res;

	if (chan_op_stopped(op))
		return;
	if ((err = chan_reply_error(m, "file guard")) != NULL) {
		chan_op_fail(op, "%s", err);
		return;
	}
	if (msg_get_str(m, "segment", SEGMENT_MAX, &seg) == -1 ||
	    msg_get_str(m, "run_dir", PATH_BYTES_MAX, &run) == -1 ||
	    msg_get_str(m, "workspace_dir", PATH_BYTES_MAX, &ws) == -1 ||
	    msg_get_str(m, "sessions", PATH_BYTES_MAX, &sess) == -1 ||
	    msg_get_str(m, "attachments", PATH_BYTES_MAX, &att) == -1 ||
	    msg_end(m) == -1) {
		chan_op_fail(op, "file guard: %s", m->m_err);
		return;
	}
	if (strcmp(seg, ch->ch_segment) != 0) {
		chan_op_fail(op, "file guard answered for segment %s", seg);
		return;
	}
	op->op_run_dir = xstrdup(run);
	op->op_ws_dir = xstrdup(ws);
	op->op_sessions = xstrdup(sess);
	op->op_attachments = xstrdup(att);

	switch (op->op_kind) {
	case CHOP_PATHS:
		if ((res = cJSON_CreateObject()) == NULL ||
		    cJSON_AddStringToObject(res, "sessions", sess) == NULL ||
		    cJSON_AddStringToObject(res, "attachments", att) == NULL)
			fatalx("%s: out of memory", __func__);
		chan_op_done(op, res, NULL);
		return;
	case CHOP_START:
		if (chan_warm(ch, op)) {
			chan_op_done(op, cJSON_CreateObject(), NULL);
			return;
		}
		msgb_init(&mb, MSG_DOCK_STATUS, 0);
		msg_add_str(&mb, "channel", ch->ch_key);
		chan_request(op, PROC_DOCKER, &mb, chan_status_for_start);
		return;
	case CHOP_STOP:
	case CHOP_FRESH:
		/* answered once the broker is gone too */
		op->op_broker = ch->ch_broker;
		chan_broker_stop(ch, chan_stop_broker_gone, op);
		msgb_init(&mb, MSG_DOCK_REMOVE, 0);
		msg_add_str(&mb, "channel", ch->ch_key);
		chan_request(op, PROC_DOCKER, &mb, chan_removed);
		return;
	}
}

/* Every operation starts with the file guard's key check. */
static void
chan_op_run(struct chan_op *op)
{
	struct msgb	 mb;

	op->op_running = 1;
	msgb_init(&mb, MSG_FSG_PREPARE, 0);
	msg_add_str(&mb, "channel", op->op_chan->ch_key);
	chan_request(op, PROC_FSGUARD, &mb, chan_prepared);
}

static struct chan_waiter *
chan_submit(struct ctl_req *req, const char *key, enum chop_kind kind,
    const char *profile, chan_done_cb cb, void *arg)
{
	struct channel		*ch = chan_get(key);
	struct chan_op		*op, *last;
	struct chan_waiter	*w;

	last = TAILQ_LAST(&ch->ch_ops, chan_op_list);
	if (kind == CHOP_START && last != NULL && last->op_kind == CHOP_START &&
	    last->op_stopped == NULL && strcmp(last->op_profile, profile) == 0)
		op = last;	/* concurrent starts share one attempt */
	else {
		if ((op = calloc(1, sizeof(*op))) == NULL)
			fatal("%s", __func__);
		op->op_chan = ch;
		op->op_kind = kind;
		if (profile != NULL)
			op->op_profile = xstrdup(profile);
		TAILQ_INIT(&op->op_waiters);
		TAILQ_INSERT_TAIL(&ch->ch_ops, op, op_entry);
	}
	if ((w = calloc(1, sizeof(*w))) == NULL)
		fatal("%s", __func__);
	w->w_req = req;
	w->w_cb = cb;
	w->w_arg = arg;
	w->w_op = op;
	TAILQ_INSERT_TAIL(&op->op_waiters, w, w_entry);
	if (req != NULL)
		ctl_set_cancel(req, chan_waiter_cancel, w);
	/* May answer at once: w is then gone. */
	if (TAILQ_FIRST(&ch->ch_ops) == op && !op->op_running) {
		chan_op_run(op);
		return NULL;
	}
	return w;
}

/* Start a channel for the daemon itself: cb gets NULL or the error, once,
 * possibly before this returns. */
void
chan_start(const char *key, const char *profile, chan_done_cb cb, void *arg)
{
	(void)chan_submit(NULL, key, CHOP_START, profile, cb, arg);
}

/*
 * Stop the start that chan_start(key, ..., arg) waits for, now: its turn
 * timed out or was cancelled, and PiSandboxRuntime 0.7.3 stopped waiting
 * for the worker as soon as the turn was aborted.  Every caller sharing
 * the attempt (a channel.start included) gets why at once.  Nothing is
 * left out: a request still at the file guard or the Docker client ends
 * the start when it replies (a socket it brings is closed), and the
 * caller removes what the start made so far, its broker and container,
 * with chan_kill() (queued before this is called, it runs next).
 */
void
chan_start_stop(const char *key, void *arg, const char *why)
{
	struct channel		*ch;
	struct chan_op		*op, *next;
	struct chan_waiter	*w = NULL;
	int			 first;

	if ((ch = chan_find(key)) == NULL)
		return;
	TAILQ_FOREACH(op, &ch->ch_ops, op_entry) {
		if (op->op_kind != CHOP_START || op->op_stopped != NULL)
			continue;
		TAILQ_FOREACH(w, &op->op_waiters, w_entry)
			if (w->w_req == NULL && w->w_arg == arg)
				break;
		if (w != NULL)
			break;
	}
	if (op == NULL)
		return;
	log_info("channel %s: start stopped: %s", ch->ch_segment, why);
	if (!op->op_running) {
		/* Queued behind another operation: it never runs. */
		first = TAILQ_FIRST(&ch->ch_ops) == op;
		next = TAILQ_NEXT(op, op_entry);
		TAILQ_REMOVE(&ch->ch_ops, op, op_entry);
		chan_op_answer(op, NULL, why);
		chan_op_free(op);
		if (first && next != NULL)
			chan_op_run(next);
		else if (first)
			chan_gc(ch);
		return;
	}
	/* Waiting for the broker or the worker: nothing is out. */
	if (ch->ch_broker_wait == op || ch->ch_worker_wait == op) {
		chan_op_done(op, NULL, why);
		return;
	}
	op->op_stopped = xstrdup(why);
	chan_op_answer(op, NULL, why);
}

/* Remove the container and stop the broker: a turn that timed out or was
 * cancelled must not go on spending.  cb (if any) gets NULL or the error
 * once the container is gone, possibly before this returns. */
static void
chan_pending_set(const char *key, int on)
{
	struct chan_pending	*p;

	TAILQ_FOREACH(p, &pending_removals, p_entry)
		if (strcmp(p->p_key, key) == 0)
			break;
	if (on && p == NULL) {
		if ((p = calloc(1, sizeof(*p))) == NULL)
			fatal("%s", __func__);
		p->p_key = xstrdup(key);
		TAILQ_INSERT_TAIL(&pending_removals, p, p_entry);
	} else if (!on && p != NULL) {
		TAILQ_REMOVE(&pending_removals, p, p_entry);
		free(p->p_key);
		free(p);
	}
}

static void
chan_killed(const char *err, void *arg)
{
	struct chan_kill_ctx	*k = arg;

	if (err != NULL)
		log_warnx("channel %s: its container is removed again once "
		    "the file guard and Docker are back", k->k_key);
	chan_pending_set(k->k_key, err != NULL);
	if (k->k_cb != NULL)
		k->k_cb(err, k->k_arg);
	free(k->k_key);
	free(k);
}

void
chan_kill(const char *key, chan_done_cb cb, void *arg)
{
	struct chan_kill_ctx	*k;

	log_info("channel %s: removing its container", key);
	if ((k = calloc(1, sizeof(*k))) == NULL)
		fatal("%s", __func__);
	k->k_key = xstrdup(key);
	k->k_cb = cb;
	k->k_arg = arg;
	(void)chan_submit(NULL, key, CHOP_STOP, NULL, chan_killed, k);
}

/* Docker, its event stream or the file guard is back: the removals that
 * failed while one was away. */
void
chan_kill_pending(void)
{
	TAILQ_HEAD(, chan_pending)	 todo = TAILQ_HEAD_INITIALIZER(todo);
	struct chan_pending		*p;

	/* a removal that fails again at once puts its key back */
	TAILQ_CONCAT(&todo, &pending_removals, p_entry);
	while ((p = TAILQ_FIRST(&todo)) != NULL) {
		TAILQ_REMOVE(&todo, p, p_entry);
		if (!turns.ch_busy(p->p_key))
			chan_kill(p->p_key, NULL, NULL);
		free(p->p_key);
		free(p);
	}
}

struct child *
chan_broker(const char *key)
{
	struct channel	*ch = chan_find(key);

	return ch != NULL && ch->ch_broker_ready &&
	    child_usable(ch->ch_broker) ? ch->ch_broker : NULL;
}

/* Parameters: channel (1-256 chars), profile where asked. */
static int
chan_params(struct ctl_req *req, cJSON *params, int want_profile,
    const char **key, const char **profile)
{
	const cJSON	*it, *k = NULL, *p = NULL;
	char		 seg[SEGMENT_MAX + 1];

	cJSON_ArrayForEach(it, params) {
		if (strcmp(it->string, "channel") == 0)
			k = it;
		else if (want_profile && strcmp(it->string, "profile") == 0)
			p = it;
		else {
			ctl_error(req, RPC_INVALID_PARAMS,
			    "Invalid params: unknown field \"%.64s\"",
			    it->string);
			return -1;
		}
	}
	if (!cJSON_IsString(k) || channel_segment(k->valuestring,
	    strlen(k->valuestring), seg, sizeof(seg)) == -1) {
		ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: channel "
		    "must be a string of 1 to %u chars of valid UTF-8",
		    CHANNEL_KEY_MAX);
		return -1;
	}
	*key = k->valuestring;
	if (!want_profile)
		return 0;
	if (!cJSON_IsString(p)) {
		ctl_error(req, RPC_INVALID_PARAMS,
		    "Invalid params: profile must be a string");
		return -1;
	}
	if (config_profile(sv->sv_conf, p->valuestring) == NULL) {
		ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: unknown "
		    "profile \"%.100s\"", p->valuestring);
		return -1;
	}
	*profile = p->valuestring;
	return 0;
}

void
method_channel_start(struct ctl_req *req, cJSON *params)
{
	const char	*key, *profile;

	if (chan_params(req, params, 1, &key, &profile) == 0)
		(void)chan_submit(req, key, CHOP_START, profile, NULL, NULL);
}

/* stop and fresh end the channel's turn first and forget its level. */
void
method_channel_stop(struct ctl_req *req, cJSON *params)
{
	const char	*key;

	if (chan_params(req, params, 0, &key, NULL) == -1)
		return;
	turns.ch_abort(key, "The channel was stopped");
	turns.ch_forget(key);
	(void)chan_submit(req, key, CHOP_STOP, NULL, NULL, NULL);
}

void
method_channel_fresh(struct ctl_req *req, cJSON *params)
{
	const char	*key;

	if (chan_params(req, params, 0, &key, NULL) == -1)
		return;
	turns.ch_abort(key, "The channel was started fresh");
	turns.ch_forget(key);
	(void)chan_submit(req, key, CHOP_FRESH, NULL, NULL, NULL);
}

/* daemon.stop_brokers: turns cancelled, brokers stopped, containers kept;
 * the next start binds a new broker and the worker re-announces itself. */
uint64_t
chan_stop_brokers(void)
{
	struct channel	*ch, *next;
	struct chan_op	*op;
	uint64_t	 n = 0;

	for (ch = TAILQ_FIRST(&channels); ch != NULL; ch = next) {
		next = TAILQ_NEXT(ch, ch_entry);
		turns.ch_abort(ch->ch_key, "The daemon stopped its brokers");
		if (ch->ch_broker == NULL)
			continue;
		/* A start waiting on this broker fails; it may free ch. */
		op = ch->ch_broker_wait != NULL ? ch->ch_broker_wait :
		    ch->ch_worker_wait;
		ch->ch_broker_wait = ch->ch_worker_wait = NULL;
		chan_broker_stop(ch, NULL, NULL);
		n++;
		if (op != NULL)
			chan_op_fail(op, "the daemon stopped its brokers");
		else
			chan_gc(ch);
	}
	return n;
}

void
method_channel_paths(struct ctl_req *req, cJSON *params)
{
	const char	*key;

	if (chan_params(req, params, 0, &key, NULL) == 0)
		(void)chan_submit(req, key, CHOP_PATHS, NULL, NULL, NULL);
}

/* Read-only requests to the Docker client carry their ctl_req; a client
 * that goes away first leaves a request with no one to answer. */
struct chan_query {
	struct ctl_req	*q_req;
	char		*q_key;
};

static void
chan_query_cancel(struct ctl_req *req, void *arg)
{
	struct chan_query	*q = arg;

	q->q_req = NULL;
}

static struct chan_query *
chan_query_new(struct ctl_req *req, const char *key)
{
	struct chan_query	*q;

	if ((q = calloc(1, sizeof(*q))) == NULL)
		fatal("%s", __func__);
	q->q_req = req;
	if (key != NULL)
		q->q_key = xstrdup(key);
	ctl_set_cancel(req, chan_query_cancel, q);
	return q;
}

static void
chan_query_free(struct chan_query *q)
{
	if (q->q_req != NULL)
		ctl_set_cancel(q->q_req, NULL, NULL);
	free(q->q_key);
	free(q);
}

static int
chan_query_send(struct chan_query *q, struct msgb *mb, child_reply_cb cb)
{
	struct child	*c = child_singleton(PROC_DOCKER);

	if (c == NULL || child_request(c, mb, cb, q) == -1) {
		if (c == NULL)
			msgb_free(mb);
		ctl_error(q->q_req, RPC_APP_ERROR,
		    "the Docker client is not running");
		q->q_req = NULL;
		chan_query_free(q);
		return -1;
	}
	return 0;
}

static void
chan_status_answer(struct child *c, struct msg *m, void *arg)
{
	struct chan_query	*q = arg;
	struct channel		*ch;
	const char		*err, *state, *image = NULL, *profile = NULL;
	const char		*id = NULL;
	cJSON			*res;
	int			 ours;

	if (q->q_req == NULL)
		goto done;
	if ((err = chan_reply_error(m, "Docker")) != NULL) {
		ctl_error(q->q_req, RPC_APP_ERROR, "%s", err);
		q->q_req = NULL;
		goto done;
	}
	if (msg_get_str(m, "state", 16, &state) == -1 ||
	    msg_get_str_opt(m, "image", 256, &image) == -1 ||
	    msg_get_str_opt(m, "profile", 128, &profile) == -1 ||
	    msg_get_str_opt(m, "container", 128, &id) == -1 ||
	    (id != NULL && msg_get_bool(m, "ours", &ours) == -1) ||
	    msg_end(m) == -1) {
		ctl_error(q->q_req, RPC_APP_ERROR, "Docker client: %s",
		    m->m_err);
		q->q_req = NULL;
		goto done;
	}
	ch = chan_find(q->q_key);
	if ((res = cJSON_CreateObject()) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddStringToObject(res, "state", state);
	if (image != NULL)
		cJSON_AddStringToObject(res, "image", image);
	/* a container without the profile label has no profile */
	if (profile != NULL && profile[0] != '\0')
		cJSON_AddStringToObject(res, "profile", profile);
	if (id != NULL)
		cJSON_AddStringToObject(res, "container", id);
	cJSON_AddStringToObject(res, "broker", ch == NULL ||
	    ch->ch_broker == NULL ? "none" : ch->ch_broker_ready ? "ready" :
	    "starting");
	cJSON_AddBoolToObject(res, "busy", turns.ch_busy(q->q_key));
	ctl_set_cancel(q->q_req, NULL, NULL);
	ctl_reply(q->q_req, res);
	q->q_req = NULL;
 done:
	chan_query_free(q);
}

/* The key passed the file guard's check: now Docker's view. */
static void
chan_status_prepared(struct child *c, struct msg *m, void *arg)
{
	struct chan_query	*q = arg;
	const char		*err;
	struct msgb		 mb;

	if (q->q_req == NULL) {
		chan_query_free(q);
		return;
	}
	if ((err = chan_reply_error(m, "file guard")) != NULL) {
		ctl_error(q->q_req, RPC_APP_ERROR, "%s", err);
		q->q_req = NULL;
		chan_query_free(q);
		return;
	}
	msgb_init(&mb, MSG_DOCK_STATUS, 0);
	msg_add_str(&mb, "channel", q->q_key);
	chan_query_send(q, &mb, chan_status_answer);
}

/*
 * Like every channel method, the status goes through the file guard's key
 * check first: a key whose segment another key owns is refused, not
 * answered with the other channel's container.  It does not wait for the
 * channel's queued operations.
 */
void
method_channel_status(struct ctl_req *req, cJSON *params)
{
	struct chan_query	*q;
	struct msgb		 mb;
	struct child		*fsg = child_singleton(PROC_FSGUARD);
	const char		*key;

	if (chan_params(req, params, 0, &key, NULL) == -1)
		return;
	q = chan_query_new(req, key);
	msgb_init(&mb, MSG_FSG_PREPARE, 0);
	msg_add_str(&mb, "channel", key);
	if (fsg == NULL || child_request(fsg, &mb, chan_status_prepared,
	    q) == -1) {
		if (fsg == NULL)
			msgb_free(&mb);
		ctl_error(q->q_req, RPC_APP_ERROR,
		    "the file guard is not running");
		q->q_req = NULL;
		chan_query_free(q);
	}
}

static void
chan_list_answer(struct child *c, struct msg *m, void *arg)
{
	struct chan_query	*q = arg;
	const char		**v[5];
	const char		*names[] = { "names", "channels", "profiles",
	    "states", "images" };
	size_t			 n[5], i, k;
	const char		*err;
	cJSON			*res, *arr, *o;

	if (q->q_req == NULL)
		goto done;
	if ((err = chan_reply_error(m, "Docker")) != NULL) {
		ctl_error(q->q_req, RPC_APP_ERROR, "%s", err);
		q->q_req = NULL;
		goto done;
	}
	for (k = 0; k < 5; k++)
		if (msg_get_strv(m, names[k], 4096, 1024, &v[k], &n[k]) == -1)
			break;
	if (k < 5 || msg_end(m) == -1 || n[1] != n[0] || n[2] != n[0] ||
	    n[3] != n[0] || n[4] != n[0]) {
		ctl_error(q->q_req, RPC_APP_ERROR, "Docker client: %s",
		    m->m_failed ? m->m_err : "lists of different lengths");
		q->q_req = NULL;
		goto done;
	}
	if ((res = cJSON_CreateObject()) == NULL ||
	    (arr = cJSON_AddArrayToObject(res, "containers")) == NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 0; i < n[0]; i++) {
		if ((o = cJSON_CreateObject()) == NULL)
			fatalx("%s: out of memory", __func__);
		cJSON_AddStringToObject(o, "name", v[0][i]);
		cJSON_AddStringToObject(o, "channel", v[1][i]);
		cJSON_AddStringToObject(o, "profile", v[2][i]);
		cJSON_AddStringToObject(o, "state", v[3][i]);
		cJSON_AddStringToObject(o, "image", v[4][i]);
		cJSON_AddItemToArray(arr, o);
	}
	ctl_set_cancel(q->q_req, NULL, NULL);
	ctl_reply(q->q_req, res);
	q->q_req = NULL;
 done:
	chan_query_free(q);
}

void
method_channel_list(struct ctl_req *req, cJSON *params)
{
	struct chan_query	*q;
	struct msgb		 mb;

	if (params != NULL && cJSON_GetArraySize(params) != 0) {
		ctl_error(req, RPC_INVALID_PARAMS,
		    "Invalid params: channel.list takes none");
		return;
	}
	q = chan_query_new(req, NULL);
	msgb_init(&mb, MSG_DOCK_LIST, 0);
	chan_query_send(q, &mb, chan_list_answer);
}

/*
 * The channel's container stopped (or is not the one that ran): a start
 * waiting for its worker fails now, and so does its turn, each saying why,
 * instead of at their deadlines.
 */
static void
chan_container_gone(struct channel *ch, const char *why)
{
	struct chan_op	*op = ch->ch_worker_wait;
	char		*key = xstrdup(ch->ch_key);

	log_warnx("channel %s: %s", ch->ch_segment, why);
	chan_forget_container(ch);
	if (op != NULL) {
		ch->ch_worker_wait = NULL;
		/* may forget ch */
		chan_op_fail(op, "the container stopped before the worker was "
		    "ready");
	}
	turns.ch_container_gone(key, why);
	free(key);
}

static struct channel *
chan_by_container(const char *id)
{
	struct channel	*ch;

	TAILQ_FOREACH(ch, &channels, ch_entry)
		if (strcmp(ch->ch_container, id) == 0)
			return ch;
	return NULL;
}

/* After the stream was lost: a channel whose turn is running is asked
 * about, for a stop that came while nobody listened. */
static void
chan_rechecked(struct child *c, struct msg *m, void *arg)
{
	char		*id = arg;
	struct channel	*ch = chan_by_container(id);
	const char	*state, *image = NULL, *profile = NULL, *now = NULL;
	int		 ours;

	if (ch == NULL || m == NULL || m->m_type == MSG_ERROR ||
	    msg_get_str(m, "state", 16, &state) == -1 ||
	    msg_get_str_opt(m, "image", 256, &image) == -1 ||
	    msg_get_str_opt(m, "profile", 128, &profile) == -1 ||
	    msg_get_str_opt(m, "container", 128, &now) == -1 ||
	    (now != NULL && msg_get_bool(m, "ours", &ours) == -1) ||
	    msg_end(m) == -1) {
		free(id);
		return;
	}
	if (strcmp(state, "running") != 0 || now == NULL ||
	    strcmp(now, id) != 0)
		chan_container_gone(ch, "The worker's container stopped while "
		    "Docker was not followed");
	else
		chan_seen_running(ch, id);
	free(id);
}

static void
chan_recheck_busy(void)
{
	struct child	*dk = child_singleton(PROC_DOCKER);
	struct channel	*ch;
	struct msgb	 mb;

	if (dk == NULL)
		return;
	TAILQ_FOREACH(ch, &channels, ch_entry) {
		if (ch->ch_container[0] == '\0' || !turns.ch_busy(ch->ch_key))
			continue;
		msgb_init(&mb, MSG_DOCK_STATUS, 0);
		msg_add_str(&mb, "channel", ch->ch_key);
		(void)child_request(dk, &mb, chan_rechecked,
		    xstrdup(ch->ch_container));
	}
}

/*
 * What the Docker client says on its own: the event stream.  Its words are
 * checked like any reply: a container is lowercase hex, an exit code a
 * small number, the news one of six.
 */
int
chan_docker_msg(struct child *c, struct msg *m, void *arg)
{
	struct channel	*ch;
	const char	*news, *id;
	uint64_t	 code = 0;
	char		 why[128];
	size_t		 i;
	int		 has_code;

	if (msg_get_str(m, "news", 16, &news) == -1)
		return -1;
	if (strcmp(news, "live") == 0 || strcmp(news, "lost") == 0) {
		if (msg_end(m) == -1)
			return -1;
		chan_events_gen++;
		chan_events_live = news[1] == 'i';
		if (chan_events_live) {
			chan_recheck_busy();
			chan_kill_pending();
		}
		return 0;
	}
	if ((strcmp(news, "die") != 0 && strcmp(news, "destroy") != 0 &&
	    strcmp(news, "oom") != 0 && strcmp(news, "pause") != 0) ||
	    msg_get_str(m, "container", 71, &id) == -1 ||
	    msg_get_uint_opt(m, "exit_code", 0, 255, &code, &has_code) == -1 ||
	    msg_end(m) == -1)
		return -1;
	for (i = 0; id[i] != '\0'; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		    (id[i] >= 'a' && id[i] <= 'f')))
			return -1;
	if (i == 0)
		return -1;
	if ((ch = chan_by_container(id)) == NULL)
		return 0;	/* one that is gone already, or not ours */
	if (strcmp(news, "oom") == 0) {
		ch->ch_oom = 1;
		return 0;
	}
	if (strcmp(news, "pause") == 0) {
		/* not stopped, but not to be trusted as running either */
		ch->ch_seen_gen = 0;
		return 0;
	}
	if (ch->ch_oom)
		snprintf(why, sizeof(why), "The worker's container ran out of "
		    "memory");
	else if (has_code)
		snprintf(why, sizeof(why), "The worker's container stopped "
		    "(exit code %" PRIu64 ")", code);
	else
		snprintf(why, sizeof(why), "The worker's container %s",
		    news[1] == 'i' ? "stopped" : "was removed");
	chan_container_gone(ch, why);
	return 0;
}

/* The Docker client is gone, and its event stream with it. */
void
chan_docker_gone(void)
{
	chan_events_live = 0;
	chan_events_gen++;
}
