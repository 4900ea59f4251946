/*
 * Turns (DESIGN.md 6): one per channel at a time, a deadline over the whole
 * turn, every input bound checked, the channel started, the broker bound to
 * the host's identity, the turn submitted, the reply files checked again on
 * the host, and the broker unbound in every outcome.  A turn that times out
 * or is cancelled takes the channel's container with it.
 */
#include <sys/queue.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "bodies.h"
#include "compaction.h"
#include "control.h"
#include "limits.h"
#include "log.h"
#include "supervisor.h"
#include "validate.h"

enum turn_state {
	TURN_STARTING,		/* waiting for the channel, then egress */
	TURN_SUBMITTED,		/* with the broker */
	TURN_ENDED,		/* answered; waiting for the start or the bind
				 * at egress to return */
};

/* Starts of a channel one turn makes again when the broker or egress it
 * was being bound at went away before the turn reached a broker. */
#define TURN_RESTARTS_MAX	2

/* Host tool calls of one turn at once: the broker's scope has at most 4
 * calls in flight (PROTOCOL.md 3.4), tool calls among them. */
#define TURN_TOOLS_INFLIGHT_MAX	SCOPE_INFLIGHT_MAX

struct turn_tool {
	TAILQ_ENTRY(turn_tool)	 tt_entry;
	struct turn		*tt_turn;
	uint64_t		 tt_id;		/* the broker's request id */
	struct ctl_call		*tt_call;
	char			 tt_name[HOST_TOOL_NAME_MAX + 1];
};

struct turn {
	TAILQ_ENTRY(turn)	 t_entry;
	enum turn_state		 t_state;
	int			 t_starting;	/* chan_start not answered */
	int			 t_binding;	/* egr_bind not answered */
	uint64_t		 t_peer;	/* the broker's edge at egress */
	int			 t_egress_bound;
	int			 t_bound_early;	/* while the channel starts */
	int			 t_delivered;	/* the worker took it */
	unsigned		 t_restarts;	/* turn_restart() */
	unsigned		 t_ntools;
	unsigned		 t_compacts;	/* compaction requests */
	unsigned		 t_reports;	/* and reports */
	uint64_t		 t_max_calls;	/* the budget bound at egress */
	uint64_t		 t_calls;	/* of it, those the broker made */
	char			*t_key;
	char			*t_profile;
	char			*t_id;
	char			*t_json;	/* the turn request of 4.1 */
	char			 t_thinking[8];
	char			*t_author_id;
	char			*t_author_name;
	char			*t_principal_id;	/* NULL: not given */
	char			*t_visibility;	/* NULL: not given (private) */
	char			*t_text;
	char			*t_memory;	/* NULL: from the hook or "" */
	cJSON			*t_images;
	int			 t_hooks;	/* hook answers awaited */
	struct ctl_call		*t_memory_call;
	struct ctl_call		*t_judge_call;
	struct ctl_req		*t_req;
	struct ctl_client	*t_client;
	struct event		*t_deadline;
	struct timespec		 t_started;
	TAILQ_HEAD(, turn_tool)	 t_tools;
};

static TAILQ_HEAD(, turn)	 turns = TAILQ_HEAD_INITIALIZER(turns);

/*
 * A channel's levels: the one its last turn ran at, for a turn with
 * neither thinking nor the effort.judge hook, and the one effort.judge
 * gave last, the hook's previous (as PiSandboxRuntime 0.7.3's judged
 * level: none until the hook judged one).
 */
struct turn_level {
	TAILQ_ENTRY(turn_level)	 tl_entry;
	char			*tl_key;
	char			 tl_level[8];
	char			 tl_judged[8];	/* "" until judged */
};
static TAILQ_HEAD(, turn_level)	 levels = TAILQ_HEAD_INITIALIZER(levels);

static struct turn *
turn_find(const char *key)
{
	struct turn	*t;

	TAILQ_FOREACH(t, &turns, t_entry)
		if (t->t_state != TURN_ENDED && strcmp(t->t_key, key) == 0)
			return t;
	return NULL;
}

/* The level the channel's last turn ran at, or (judged) the one
 * effort.judge gave last; NULL when none (a first turn, or after
 * channel.stop or channel.fresh). */
static const char *
turn_level_get(const char *key, int judged)
{
	struct turn_level	*tl;

	TAILQ_FOREACH(tl, &levels, tl_entry)
		if (strcmp(tl->tl_key, key) == 0) {
			if (!judged)
				return tl->tl_level;
			return tl->tl_judged[0] != '\0' ? tl->tl_judged :
			    NULL;
		}
	return NULL;
}

static void
turn_level_set(const char *key, const char *level, int judged)
{
	struct turn_level	*tl;

	TAILQ_FOREACH(tl, &levels, tl_entry)
		if (strcmp(tl->tl_key, key) == 0)
			break;
	if (tl == NULL) {
		if ((tl = calloc(1, sizeof(*tl))) == NULL ||
		    (tl->tl_key = strdup(key)) == NULL)
			fatal("%s", __func__);
		TAILQ_INSERT_TAIL(&levels, tl, tl_entry);
	}
	snprintf(tl->tl_level, sizeof(tl->tl_level), "%s", level);
	if (judged)
		snprintf(tl->tl_judged, sizeof(tl->tl_judged), "%s", level);
}

static void
turn_progress(struct turn *t, const char *phase)
{
	cJSON	*p;

	if (t->t_client == NULL)
		return;
	if ((p = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(p, "channel", t->t_key) == NULL ||
	    cJSON_AddStringToObject(p, "turnId", t->t_id) == NULL ||
	    cJSON_AddStringToObject(p, "phase", phase) == NULL)
		fatalx("%s: out of memory", __func__);
	ctl_client_notify(t->t_client, "turn.progress", p);
}

static void
turn_free(struct turn *t)
{
	struct turn_tool	*tt;

	while ((tt = TAILQ_FIRST(&t->t_tools)) != NULL) {
		TAILQ_REMOVE(&t->t_tools, tt, tt_entry);
		if (tt->tt_call != NULL)
			ctl_call_withdraw(tt->tt_call);
		free(tt);
	}
	if (t->t_memory_call != NULL)
		ctl_call_withdraw(t->t_memory_call);
	if (t->t_judge_call != NULL)
		ctl_call_withdraw(t->t_judge_call);
	TAILQ_REMOVE(&turns, t, t_entry);
	free(t->t_text);
	free(t->t_memory);
	cJSON_Delete(t->t_images);
	if (t->t_deadline != NULL)
		event_free(t->t_deadline);
	free(t->t_key);
	free(t->t_profile);
	free(t->t_id);
	free(t->t_json);
	free(t->t_author_id);
	free(t->t_author_name);
	free(t->t_principal_id);
	free(t->t_visibility);
	free(t);
}

/* A failure keeps its cause: reason, message, and whether the turn's
 * deadline ended it. */
static cJSON *
turn_failure(const char *reason, const char *message, const char *worker)
{
	cJSON	*r;

	if ((r = cJSON_CreateObject()) == NULL ||
	    cJSON_AddFalseToObject(r, "ok") == NULL ||
	    cJSON_AddStringToObject(r, "reason", reason) == NULL ||
	    cJSON_AddStringToObject(r, "message", message) == NULL ||
	    cJSON_AddBoolToObject(r, "timedOut",
	    strcmp(reason, "timeout") == 0) == NULL)
		fatalx("%s: out of memory", __func__);
	if (worker != NULL)
		cJSON_AddStringToObject(r, "workerError", worker);
	return r;
}

/* The turn leaves egress: its broker's calls are refused from now on. */
static void
turn_egress_unbind(struct turn *t)
{
	struct child	*eg;
	struct msgb	 mb;

	if (!t->t_egress_bound)
		return;
	t->t_egress_bound = 0;
	if ((eg = child_singleton(PROC_EGRESS)) == NULL)
		return;
	msgb_init(&mb, MSG_EGR_UNBIND, 0);
	msg_add_uint(&mb, "peer", t->t_peer);
	msg_add_str(&mb, "turn_id", t->t_id);
	child_send_msg(eg, &mb);
}

/* An answer held until the turn's container is gone. */
struct turn_reply {
	struct ctl_req	*tr_req;
	cJSON		*tr_result;	/* NULL: the request was cancelled */
};

static void
turn_reply_cancel(struct ctl_req *req, void *arg)
{
	struct turn_reply	*tr = arg;

	/* The client let go; the control socket answered it. */
	tr->tr_req = NULL;
}

static void
turn_reply_send(const char *err, void *arg)
{
	struct turn_reply	*tr = arg;

	if (err != NULL)
		log_warnx("a turn's container may be left: %s", err);
	if (tr->tr_req != NULL) {
		ctl_set_cancel(tr->tr_req, NULL, NULL);
		if (tr->tr_result == NULL)
			ctl_error(tr->tr_req, RPC_REQUEST_CANCELLED,
			    "Request cancelled");
		else
			ctl_reply(tr->tr_req, tr->tr_result);
	} else
		cJSON_Delete(tr->tr_result);
	free(tr);
}

/*
 * Settle the turn: unbind the broker and egress always; on a timeout or a
 * cancel also remove the container, whatever the worker inside does, and
 * answer only once it is gone (as PiSandboxRuntime 0.7.3 does): a client
 * that starts the next turn at once finds no runaway session.
 */
static void
turn_end(struct turn *t, cJSON *result, int kill)
{
	struct turn_reply	*tr;
	struct child		*b;
	struct msgb		 mb;
	const cJSON		*reason;
	char			 why[96];

	reason = cJSON_GetObjectItemCaseSensitive(result, "reason");
	snprintf(why, sizeof(why), "Start stopped: the channel's turn %s",
	    result == NULL ? "was cancelled" : !cJSON_IsString(reason) ?
	    "ended" : strcmp(reason->valuestring, "timeout") == 0 ?
	    "timed out" : strcmp(reason->valuestring, "cancelled") == 0 ?
	    "was cancelled" : "failed");

	/* Recorded, and the worker's last lines asked for before the
	 * removal below is. */
	evidence_turn_failed(t->t_key, t->t_id, t->t_author_id, result, kill,
	    t->t_state == TURN_SUBMITTED);

	/* A hook's late answer has nothing left to feed. */
	if (t->t_memory_call != NULL) {
		ctl_call_withdraw(t->t_memory_call);
		t->t_memory_call = NULL;
	}
	if (t->t_judge_call != NULL) {
		ctl_call_withdraw(t->t_judge_call);
		t->t_judge_call = NULL;
	}
	turn_egress_unbind(t);
	compact_turn_end(t->t_key);
	if (t->t_state == TURN_SUBMITTED &&
	    (b = chan_broker(t->t_key)) != NULL) {
		if (kill) {
			msgb_init(&mb, MSG_BRK_CANCEL, 0);
			msg_add_str(&mb, "turn_id", t->t_id);
			child_send_msg(b, &mb);
		}
		msgb_init(&mb, MSG_BRK_UNBIND, 0);
		msg_add_str(&mb, "turn_id", t->t_id);
		child_send_msg(b, &mb);
	}
	if (t->t_req != NULL && kill) {
		turn_progress(t, "result");
		if ((tr = calloc(1, sizeof(*tr))) == NULL)
			fatal("%s", __func__);
		tr->tr_req = t->t_req;
		tr->tr_result = result;
		ctl_set_cancel(t->t_req, turn_reply_cancel, tr);
		t->t_req = NULL;
		chan_kill(t->t_key, turn_reply_send, tr);	/* may answer now */
	} else if (t->t_req != NULL) {
		ctl_set_cancel(t->t_req, NULL, NULL);
		turn_progress(t, "result");
		ctl_reply(t->t_req, result);
		t->t_req = NULL;
	} else {
		cJSON_Delete(result);
		if (kill)
			chan_kill(t->t_key, NULL, NULL);
	}
	t->t_state = TURN_ENDED;
	/* The start it waits for stops now, and the removal queued above
	 * runs next; turn_started() frees t on the way. */
	if (kill && t->t_starting) {
		chan_start_stop(t->t_key, t, why);
		return;
	}
	if (!t->t_starting && !t->t_binding)
		turn_free(t);
}

/* A broker that broke a rule: stopped, and its turn with it. */
static void
turn_violation(struct turn *t, struct child *b, enum violation rule,
    const char *why)
{
	char	 msg[160];

	child_violation(b, rule, why);
	snprintf(msg, sizeof(msg), "The channel's broker broke a rule (%s) "
	    "and was stopped", violation_name(rule));
	sv->sv_count.sc_failures++;
	turn_end(t, turn_failure("worker_failed", msg, NULL), 1);
}

/*
 * A call of the bound turn's budget, as the broker reports it: a model or
 * MCP call it sent to egress, or a host tool call.  Egress holds the first
 * two to the budget on its own; the supervisor holds the broker's word to
 * it as well, so that a broker taken over can neither have the client's
 * tool.call hook called nor the client notified without end (DESIGN.md 1,
 * invariants 6 and 7).  -1 once the broker broke the budget and was
 * stopped (the turn ended with it).
 */
static int
turn_count_call(struct turn *t, struct child *b)
{
	if (++t->t_calls <= t->t_max_calls)
		return 0;
	turn_violation(t, b, VIOLATION_BUDGET, "more calls than the turn's "
	    "budget");
	return -1;
}

static void
turn_deadline(evutil_socket_t fd, short ev, void *arg)
{
	struct turn	*t = arg;

	log_warnx("channel %s: turn %s timed out", t->t_key, t->t_id);
	sv->sv_count.sc_failures++;
	turn_end(t, turn_failure("timeout", "The turn ran out of time", NULL),
	    1);
}

static void
turn_cancel_req(struct ctl_req *req, void *arg)
{
	struct turn	*t = arg;

	/* $/cancelRequest: the turn stops, and its -32800 goes once its
	 * container is gone, as any cancel's answer.  The client left: the
	 * control socket forgets the request. */
	log_info("channel %s: turn %s cancelled", t->t_key, t->t_id);
	if (!ctl_cancel_later(req)) {
		t->t_req = NULL;
		t->t_client = NULL;
	}
	turn_end(t, NULL, 1);
}

/* The turn request of 4.1, once memory and thinking are known. */
static int
turn_build(struct turn *t)
{
	struct body_turn	 bt;
	enum body_err		 be;
	char			 err[256], *json;

	memset(&bt, 0, sizeof(bt));
	bt.bt_turn_id = t->t_id;
	bt.bt_author_id = t->t_author_id;
	bt.bt_author_name = t->t_author_name;
	bt.bt_principal_id = t->t_principal_id;
	bt.bt_text = t->t_text;
	bt.bt_memory = t->t_memory;
	bt.bt_memory_visibility = t->t_visibility;
	bt.bt_images = t->t_images;
	bt.bt_thinking = t->t_thinking;
	if ((json = body_build_turn(&bt, &be, err, sizeof(err))) == NULL) {
		turn_end(t, turn_failure("invalid", err, NULL), 0);
		return -1;
	}
	free(t->t_json);
	if ((t->t_json = strdup(json)) == NULL)
		fatal("%s", __func__);
	cJSON_free(json);
	return 0;
}

static void	turn_submit(struct turn *);
static void	turn_bind(struct turn *, const struct child *);
static void	turn_deliver(struct turn *);

static void
turn_started(const char *err, void *arg)
{
	struct turn	*t = arg;

	t->t_starting = 0;
	if (t->t_state == TURN_ENDED) {
		if (!t->t_binding)
			turn_free(t);
		return;
	}
	if (err != NULL) {
		turn_end(t, turn_failure("start_failed", err, NULL), 0);
		return;
	}
	turn_progress(t, "ready");
	if (t->t_hooks > 0)
		return;
	if (!t->t_bound_early)
		turn_submit(t);
	else if (!t->t_binding)
		turn_deliver(t);
	/* else turn_bound() delivers it */
}

static uint64_t
turn_ms_left(const struct turn *t)
{
	struct timespec	 now;
	long long	 elapsed;

	clock_gettime(CLOCK_MONOTONIC, &now);
	elapsed = (now.tv_sec - t->t_started.tv_sec) * 1000 +
	    (now.tv_nsec - t->t_started.tv_nsec) / 1000000;
	return elapsed >= (long long)sv->sv_conf->turn_ms ? 1 :
	    sv->sv_conf->turn_ms - elapsed;
}

/*
 * The broker the turn was being bound at, or egress, went away before the
 * turn reached a broker: nothing of it was carried out, so the channel is
 * started again (a broker that died, or whose egress did, is replaced)
 * and the turn bound anew, within its own deadline.  -1 when it has been
 * started again too often already.
 */
static int
turn_restart(struct turn *t, const char *why)
{
	if (t->t_state != TURN_STARTING || t->t_binding ||
	    t->t_restarts >= TURN_RESTARTS_MAX)
		return -1;
	t->t_restarts++;
	log_info("channel %s: turn %s: %s; starting the channel again",
	    t->t_key, t->t_id, why);
	turn_egress_unbind(t);
	t->t_bound_early = 0;
	if (!t->t_starting) {
		/* turn_started() binds it once the start is done */
		t->t_starting = 1;
		chan_start(t->t_key, t->t_profile, turn_started, t);
	}
	return 0;
}

/* Egress knows the turn: once the channel is started, on to the broker. */
static void
turn_bound(struct child *eg, struct msg *m, void *arg)
{
	struct turn	*t = arg;

	t->t_binding = 0;
	if (m != NULL && m->m_type == MSG_EGR_BOUND && msg_end(m) == 0)
		t->t_egress_bound = 1;
	if (t->t_state == TURN_ENDED) {
		turn_egress_unbind(t);
		if (!t->t_starting)
			turn_free(t);
		return;
	}
	if (!t->t_egress_bound && turn_restart(t, m == NULL ?
	    "egress stopped before it bound the turn" :
	    "egress could not bind the turn") == 0)
		return;
	if (!t->t_egress_bound) {
		turn_end(t, turn_failure("start_failed", m == NULL ?
		    "egress stopped before it bound the turn" :
		    "egress could not bind the turn", NULL), 0);
		return;
	}
	if (!t->t_starting)
		turn_deliver(t);
	/* else turn_started() delivers it */
}

/* Bind the broker egress bound and hand the turn over. */
static void
turn_deliver(struct turn *t)
{
	struct child	*b;
	struct msgb	 bind, submit;
	struct msgb	*mbs[2] = { &bind, &submit };

	/* A broker killed a moment ago is not handed the turn: what died
	 * is reaped first (one waitpid), and forgotten by its channel. */
	child_reap();
	if (t->t_state != TURN_STARTING)
		return;
	/* The broker egress bound must still be the channel's. */
	if ((b = chan_broker(t->t_key)) == NULL || b->c_peer != t->t_peer) {
		/* Bound early, for the broker the start then replaced. */
		if (t->t_bound_early && b != NULL && b->c_peer != 0) {
			turn_egress_unbind(t);
			t->t_bound_early = 0;
			turn_bind(t, b);
			return;
		}
		if (turn_restart(t, "the channel's broker stopped") == 0)
			return;
		turn_end(t, turn_failure("start_failed",
		    "the channel's broker stopped", NULL), 0);
		return;
	}
	/* The broker's scope ends with the turn's own deadline. */
	msgb_init(&bind, MSG_BRK_BIND, 0);
	msg_add_str(&bind, "turn_id", t->t_id);
	msg_add_str(&bind, "thinking", t->t_thinking);
	msg_add_uint(&bind, "deadline_ms", turn_ms_left(t));
	msg_add_uint(&bind, "max_calls", t->t_max_calls);
	msgb_init(&submit, MSG_BRK_SUBMIT, 0);
	msg_add_str(&submit, "turn_id", t->t_id);
	/* memoryVisibility: "private" unless the caller said "shared" */
	msg_add_bool(&submit, "private", t->t_memory != NULL &&
	    t->t_memory[0] != '\0' && (t->t_visibility == NULL ||
	    strcmp(t->t_visibility, "shared") != 0));
	msg_add_data(&submit, t->t_json, strlen(t->t_json));
	/* One write: the broker reads both in one go. */
	if (child_send_msgv(b, mbs, 2) == -1) {
		if (turn_restart(t, "the channel's broker is not running") ==
		    0)
			return;
		turn_end(t, turn_failure("start_failed",
		    "the channel's broker is not running", NULL), 0);
		return;
	}
	t->t_state = TURN_SUBMITTED;
	log_debug("channel %s: turn %s submitted", t->t_key, t->t_id);
}

/*
 * Bind the turn at egress for broker b, which holds the broker to it on
 * its own (DESIGN.md 1, invariant 6); the broker is bound after.
 */
static void
turn_bind(struct turn *t, const struct child *b)
{
	struct child	*eg;
	struct msgb	 mb;

	t->t_peer = b->c_peer;
	/* One budget for egress, the broker and the supervisor, whatever a
	 * reload does meanwhile. */
	t->t_max_calls = sv->sv_conf->max_calls;
	msgb_init(&mb, MSG_EGR_BIND, 0);
	msg_add_uint(&mb, "peer", t->t_peer);
	msg_add_str(&mb, "turn_id", t->t_id);
	msg_add_str(&mb, "thinking", t->t_thinking);
	msg_add_uint(&mb, "max_calls", t->t_max_calls);
	msg_add_uint(&mb, "deadline_ms", turn_ms_left(t));
	/* the speaker of each call's audit record, and whose credential
	 * its model calls go with (upstream.credentials) */
	msg_add_str(&mb, "speaker", t->t_author_id);
	if ((eg = child_singleton(PROC_EGRESS)) == NULL ||
	    child_request(eg, &mb, turn_bound, t) == -1) {
		if (eg == NULL)
			msgb_free(&mb);
		turn_end(t, turn_failure("start_failed",
		    "egress is not running", NULL), 0);
		return;
	}
	t->t_binding = 1;
}

/* Both the channel and the hooks are done: bind at egress, then deliver. */
static void
turn_submit(struct turn *t)
{
	struct child	*b;

	if (turn_build(t) == -1)
		return;
	if ((b = chan_broker(t->t_key)) == NULL || b->c_peer == 0) {
		if (turn_restart(t, "the channel's broker is not running") ==
		    0)
			return;
		turn_end(t, turn_failure("start_failed",
		    "the channel's broker is not running", NULL), 0);
		return;
	}
	turn_bind(t, b);
}

/*
 * With no hook to wait for, what egress is told is known at once: a
 * channel that has a broker has the turn bound at egress while its start
 * check runs, and a warm turn waits for one round trip instead of two.
 * The broker gets it only once the channel is started; should the start
 * replace the broker, turn_deliver() binds the turn again for the new one.
 * Until then a broker that runs the attacker's code could spend calls of
 * its own channel's turn, as it can once the turn is delivered.
 */
static void
turn_bind_early(struct turn *t)
{
	struct child	*b;

	if (t->t_hooks > 0 || !t->t_starting || t->t_state != TURN_STARTING ||
	    (b = chan_broker(t->t_key)) == NULL || b->c_peer == 0)
		return;
	if (turn_build(t) == -1)
		return;
	t->t_bound_early = 1;
	turn_bind(t, b);
}

/*
 * The worker's result, checked by the broker and again here: a broker that
 * passes on what PROTOCOL.md 3.1 refuses breaks a rule.
 */
static int
turn_result(struct turn *t, struct child *b, const uint8_t *data,
    size_t len)
{
	cJSON		*r, *ok, *text, *files, *f, *out, *arr, *e;
	char		 err[256];

	if (body_parse((const char *)data, len, &r, err, sizeof(err)) !=
	    BODY_OK) {
		turn_violation(t, b, VIOLATION_RESULT, err);
		return 0;
	}
	ok = cJSON_GetObjectItemCaseSensitive(r, "ok");
	text = cJSON_GetObjectItemCaseSensitive(r, "text");
	files = cJSON_GetObjectItemCaseSensitive(r, "files");
	e = cJSON_GetObjectItemCaseSensitive(r, "error");
	if (!cJSON_IsObject(r) || !cJSON_IsBool(ok))
		snprintf(err, sizeof(err), "result.ok is not a boolean");
	else if (cJSON_IsTrue(ok) && (!cJSON_IsString(text) ||
	    utf8_text_check(text->valuestring, strlen(text->valuestring),
	    RESULT_TEXT_MAX) == -1))
		snprintf(err, sizeof(err), "result.text is not a string of at "
		    "most %u chars", RESULT_TEXT_MAX);
	else if (cJSON_IsTrue(ok) && body_check_files(files, err,
	    sizeof(err)) != BODY_OK)
		;	/* err says which */
	else if (cJSON_IsFalse(ok) && (!cJSON_IsString(e) ||
	    utf8_text_check(e->valuestring, strlen(e->valuestring),
	    RESULT_ERROR_MAX) == -1))
		snprintf(err, sizeof(err), "result.error is not a string of "
		    "at most %u chars", RESULT_ERROR_MAX);
	else
		err[0] = '\0';
	if (err[0] != '\0') {
		cJSON_Delete(r);
		turn_violation(t, b, VIOLATION_RESULT, err);
		return 0;
	}
	if (cJSON_IsTrue(ok)) {
		if ((out = cJSON_CreateObject()) == NULL ||
		    cJSON_AddTrueToObject(out, "ok") == NULL ||
		    cJSON_AddStringToObject(out, "text", text->valuestring) ==
		    NULL || (arr = cJSON_AddArrayToObject(out, "files")) == NULL)
			fatalx("%s: out of memory", __func__);
		/* name and data only, whatever else the worker put there */
		cJSON_ArrayForEach(f, files) {
			if ((e = cJSON_CreateObject()) == NULL)
				fatalx("%s: out of memory", __func__);
			cJSON_AddStringToObject(e, "name",
			    cJSON_GetObjectItemCaseSensitive(f,
			    "name")->valuestring);
			cJSON_AddStringToObject(e, "data",
			    cJSON_GetObjectItemCaseSensitive(f,
			    "data")->valuestring);
			cJSON_AddItemToArray(arr, e);
		}
		cJSON_Delete(r);
		turn_level_set(t->t_key, t->t_thinking, 0);
		log_info("channel %s: turn %s answered", t->t_key, t->t_id);
		turn_end(t, out, 0);
		return 0;
	}
	out = turn_failure("worker_failed", "The worker failed",
	    e->valuestring);
	cJSON_Delete(r);
	sv->sv_count.sc_failures++;
	turn_end(t, out, 0);
	return 0;
}

static void
turn_tool_answer(struct turn_tool *tt, int ok, int private, const char *json)
{
	struct turn	*t = tt->tt_turn;
	struct child	*b;
	struct msgb	 mb;

	if ((b = chan_broker(t->t_key)) != NULL) {
		msgb_init(&mb, MSG_BRK_TOOL_ANSWER, tt->tt_id);
		msg_add_bool(&mb, "ok", ok);
		/* privateTo: only for a worker that declared it can keep it */
		msg_add_bool(&mb, "private", private);
		msg_add_data(&mb, json, strlen(json));
		child_send_msg(b, &mb);
	}
	TAILQ_REMOVE(&t->t_tools, tt, tt_entry);
	t->t_ntools--;
	free(tt);
}

/*
 * The client's tool.call answer.  A hook that failed gives the worker what
 * PiSandboxRuntime 0.7.3's broker gave it when the host tool threw: 502
 * "Broker call failed", never the exception's text, which stays with the
 * client; the log says which tool, not what the client said.
 */
static void
turn_tool_done(cJSON *result, enum ctl_call_end end, void *arg)
{
	struct turn_tool	*tt = arg;
	char			 err[256], *json;

	tt->tt_call = NULL;
	if (result == NULL) {
		log_warnx("channel %s: turn %s: the tool.call hook for %s "
		    "failed: %s", tt->tt_turn->t_key, tt->tt_turn->t_id,
		    tt->tt_name, ctl_call_end_to_string(end));
		turn_tool_answer(tt, 0, 0, "{}");
		return;
	}
	if (body_check_tool_answer_json(result, err, sizeof(err)) != BODY_OK) {
		log_warnx("channel %s: tool answer refused: %s",
		    tt->tt_turn->t_key, err);
		turn_tool_answer(tt, 0, 0, "{}");
		return;
	}
	if ((json = body_print(result)) == NULL)
		fatalx("%s: out of memory", __func__);
	turn_tool_answer(tt, 1, cJSON_GetObjectItemCaseSensitive(result,
	    "privateTo") != NULL, json);
	free(json);
}

static int
turn_tool_known(const char *name)
{
	size_t	 i;

	for (i = 0; i < sv->sv_conf->ntools; i++)
		if (strcmp(sv->sv_conf->tools[i], name) == 0)
			return 1;
	return 0;
}

/*
 * A host tool call of the bound turn: the hook of the client that
 * submitted the turn gets the bound identity, never what the worker
 * claimed.  What the broker admitted is checked again: a tool of the
 * configuration, a request id not in use, at most TURN_TOOLS_INFLIGHT_MAX
 * at once, an object for input.
 */
static int
turn_tool_call(struct turn *t, struct child *b, uint64_t id,
    const char *name, const uint8_t *data, size_t len)
{
	struct turn_tool	*tt;
	cJSON			*p, *input, *ctx, *sp;
	char			 err[256];

	if (!turn_tool_known(name)) {
		turn_violation(t, b, VIOLATION_HOST_TOOL, "a host tool that "
		    "is not in the configuration");
		return 0;
	}
	TAILQ_FOREACH(tt, &t->t_tools, tt_entry)
		if (tt->tt_id == id) {
			turn_violation(t, b, VIOLATION_TOOL_CALL,
			    "a tool call id in use");
			return 0;
		}
	if (t->t_ntools >= TURN_TOOLS_INFLIGHT_MAX) {
		turn_violation(t, b, VIOLATION_TOOL_CALL, "more tool calls in "
		    "flight than a turn allows");
		return 0;
	}
	if (body_parse((const char *)data, len, &input, err, sizeof(err)) !=
	    BODY_OK || !cJSON_IsObject(input)) {
		cJSON_Delete(input);
		turn_violation(t, b, VIOLATION_TOOL_CALL, "a tool input that "
		    "is not a JSON object");
		return 0;
	}
	if (turn_count_call(t, b) == -1) {
		cJSON_Delete(input);
		return 0;
	}
	if ((tt = calloc(1, sizeof(*tt))) == NULL)
		fatal("%s", __func__);
	tt->tt_turn = t;
	tt->tt_id = id;
	snprintf(tt->tt_name, sizeof(tt->tt_name), "%s", name);
	TAILQ_INSERT_TAIL(&t->t_tools, tt, tt_entry);
	t->t_ntools++;
	/* No hook to ask. */
	if (t->t_client == NULL ||
	    (ctl_client_hooks(t->t_client) & HOOK_TOOL_CALL) == 0) {
		cJSON_Delete(input);
		turn_tool_answer(tt, 0, 0, "{}");
		return 0;
	}
	turn_progress(t, "tool_call");
	if ((p = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(p, "name", name) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddItemToObject(p, "input", input);
	if ((ctx = cJSON_AddObjectToObject(p, "context")) == NULL ||
	    cJSON_AddStringToObject(ctx, "channel", t->t_key) == NULL ||
	    cJSON_AddStringToObject(ctx, "profile", t->t_profile) == NULL ||
	    (sp = cJSON_AddObjectToObject(ctx, "speaker")) == NULL ||
	    cJSON_AddStringToObject(sp, "id", t->t_author_id) == NULL ||
	    cJSON_AddStringToObject(sp, "name", t->t_author_name) == NULL ||
	    cJSON_AddStringToObject(ctx, "thinking", t->t_thinking) == NULL ||
	    cJSON_AddStringToObject(ctx, "turnId", t->t_id) == NULL)
		fatalx("%s: out of memory", __func__);
	tt->tt_call = ctl_client_call(t->t_client, "tool.call", p,
	    turn_tool_done, tt);
	if (tt->tt_call == NULL)
		turn_tool_answer(tt, 0, 0, "{}");
	return 0;
}

/* Whether turn_id names the channel's turn, submitted and not settled. */
static int
turn_is(const struct turn *t, const char *turn_id)
{
	return t != NULL && t->t_state == TURN_SUBMITTED &&
	    strcmp(turn_id, t->t_id) == 0;
}

/* A compact request or report of the bound turn (compact.c); one of no
 * submitted turn is refused, and a request answered with the fallback. */
static int
turn_compaction(struct turn *t, struct child *b, struct msg *m,
    const char *turn_id, const uint8_t *data, size_t len)
{
	struct compact_turn	 ct;
	struct msgb		 mb;
	char			*json;

	if (!turn_is(t, turn_id)) {
		if (child_refused(b, VIOLATION_NO_TURN, "a compaction of no "
		    "submitted turn") == 0 && m->m_type == MSG_BRK_COMPACT &&
		    m->m_id != 0) {
			if ((json = compact_fallback_json("the compaction was "
			    "aborted")) == NULL)
				fatalx("%s: out of memory", __func__);
			msgb_init(&mb, MSG_BRK_COMPACTED, m->m_id);
			msg_add_data(&mb, json, strlen(json));
			child_send_msg(b, &mb);
			cJSON_free(json);
		}
		return 0;
	}
	memset(&ct, 0, sizeof(ct));
	ct.ct_key = t->t_key;
	ct.ct_turn = t->t_id;
	ct.ct_profile = t->t_profile;
	ct.ct_speaker_id = t->t_author_id;
	ct.ct_speaker_name = t->t_author_name;
	ct.ct_client = t->t_client;
	ct.ct_ms_left = turn_ms_left(t);
	ct.ct_compacts = &t->t_compacts;
	ct.ct_reports = &t->t_reports;
	if (m->m_type == MSG_BRK_COMPACT)
		return compact_ask(b, m->m_id, &ct, data, len);
	compact_report(b, &ct, data, len);
	return 0;
}

/*
 * What a broker says of its turn.  A turn that settled meanwhile is named
 * now and then by a legitimate broker (its worker's last tool call, its
 * result, as the unbind is on its way): refused and counted, so that one
 * that keeps naming it is stopped (DESIGN.md 1, invariant 7).
 */
int
turn_broker_msg(const char *key, struct child *c, struct msg *m)
{
	struct turn	*t = turn_find(key);
	const char	*turn_id, *name;
	const uint8_t	*data;
	size_t		 len;
	struct msgb	 mb;

	switch (m->m_type) {
	case MSG_BRK_DELIVERED:
		if (msg_get_str(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
		    &turn_id) == -1 || msg_end(m) == -1)
			return -1;
		/* Once: a broker taken over could say it without end. */
		if (!turn_is(t, turn_id) || t->t_delivered) {
			(void)child_refused(c, VIOLATION_FRAME, "a delivery "
			    "of no turn waiting for one");
			return 0;
		}
		t->t_delivered = 1;
		turn_progress(t, "delivered");
		return 0;
	case MSG_BRK_RESULT:
		if (msg_get_str(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
		    &turn_id) == -1 || msg_get_data(m, &data, &len) == -1 ||
		    msg_end(m) == -1)
			return -1;
		if (!turn_is(t, turn_id)) {
			(void)child_refused(c, VIOLATION_RESULT, "a result "
			    "of no submitted turn");
			return 0;
		}
		return turn_result(t, c, data, len);
	case MSG_BRK_TOOL_CALL:
		if (msg_get_str(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
		    &turn_id) == -1 ||
		    msg_get_str(m, "name", HOST_TOOL_NAME_MAX, &name) == -1 ||
		    msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1)
			return -1;
		if (turn_is(t, turn_id))
			return turn_tool_call(t, c, m->m_id, name, data, len);
		/* the worker gets a 502 */
		if (child_refused(c, VIOLATION_TOOL_CALL, "a tool call of no "
		    "submitted turn") == 0) {
			msgb_init(&mb, MSG_BRK_TOOL_ANSWER, m->m_id);
			msg_add_bool(&mb, "ok", 0);
			msg_add_bool(&mb, "private", 0);
			msg_add_data(&mb, "{}", 2);
			child_send_msg(c, &mb);
		}
		return 0;
	case MSG_BRK_COMPACT:
	case MSG_BRK_COMPACT_REPORT:
		if (msg_get_str(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
		    &turn_id) == -1 || msg_get_data(m, &data, &len) == -1 ||
		    msg_end(m) == -1)
			return -1;
		return turn_compaction(t, c, m, turn_id, data, len);
	default:
		return -1;
	}
}

/* channel.stop, channel.fresh and daemon.stop_brokers end a running turn
 * as cancelled; the caller takes care of the container. */
/*
 * The broker found the worker's image too old for the turn: it did not
 * declare privateTo and readerRecords at /worker/ready, and the turn's
 * memory, a tool's answer or the worker's own history is private.  The
 * turn fails with the image named; the container stays, for the turns it
 * can run.
 */
void
turn_worker_stale(const char *key, struct child *b, const char *turn_id,
    const char *need)
{
	static const char *const needs[] = { "private memory",
	    "a private history", "a private tool answer" };
	struct turn		*t = turn_find(key);
	char			 msg[512];
	size_t			 i;

	/* the broker's word, held to what a broker says */
	for (i = 0; i < sizeof(needs) / sizeof(needs[0]); i++)
		if (strcmp(need, needs[i]) == 0)
			break;
	if (i == sizeof(needs) / sizeof(needs[0]))
		need = "the turn";
	if (turn_id == NULL || !turn_is(t, turn_id)) {
		(void)child_refused(b, VIOLATION_FRAME, "a stale worker of no "
		    "submitted turn");
		return;
	}
	snprintf(msg, sizeof(msg), "The worker image %s is stale: it does "
	    "not declare the capabilities privateTo and readerRecords, which "
	    "%s needs; rebuild it", sv->sv_conf->image, need);
	log_warnx("channel %s: turn %s: %s", t->t_key, t->t_id, msg);
	turn_end(t, turn_failure("stale_image", msg, NULL), 0);
}

void
turn_abort(const char *key, const char *why)
{
	struct turn	*t = turn_find(key);

	if (t == NULL)
		return;
	log_info("channel %s: turn %s cancelled: %s", key, t->t_id, why);
	turn_end(t, turn_failure("cancelled", why, NULL), 0);
}

/*
 * The channel's broker is gone while its turn was bound or being bound:
 * nothing can answer the turn any more, so it ends now, and the container
 * goes as for a cancel.
 */
void
turn_broker_gone(const char *key, const struct child *b)
{
	struct turn	*t = turn_find(key);
	char		 msg[160];

	if (t == NULL || (t->t_state != TURN_SUBMITTED && !t->t_binding))
		return;
	/* Bound early while the start, which may replace the broker, runs:
	 * turn_deliver() binds it again, or the start fails it. */
	if (t->t_starting && b->c_violation == VIOLATION_NONE)
		return;
	/* Not handed to it yet: the turn's egress bind answers, and
	 * turn_bound() starts the channel again. */
	if (t->t_state != TURN_SUBMITTED && b->c_violation == VIOLATION_NONE)
		return;
	if (b->c_violation != VIOLATION_NONE)
		snprintf(msg, sizeof(msg), "The channel's broker broke a rule "
		    "(%s) and was stopped", violation_name(b->c_violation));
	else
		snprintf(msg, sizeof(msg), "The channel's broker stopped");
	log_warnx("channel %s: turn %s: %s", key, t->t_id, msg);
	sv->sv_count.sc_failures++;
	turn_end(t, turn_failure(b->c_violation != VIOLATION_NONE ?
	    "worker_failed" : "internal", msg, NULL), 1);
}

/*
 * Egress is gone: no bound turn can reach the upstream any more, and its
 * brokers follow it.  Each ends now, as for a cancel, saying why.
 */
void
turn_egress_gone(void)
{
	struct turn	*t, *next;

	for (t = TAILQ_FIRST(&turns); t != NULL; t = next) {
		next = TAILQ_NEXT(t, t_entry);
		/* Its egr_bind was asked once the pipe had closed, before
		 * the death was reaped: it waits for the egress that follows
		 * (child_request()), and one that was sent has had its
		 * answer of none already (turn_bound()). */
		if (t->t_binding)
			continue;
		/* Bound early, the channel still starting: bound again by
		 * turn_submit() once it is, at the egress that follows. */
		if (t->t_state == TURN_STARTING && !t->t_binding &&
		    t->t_bound_early) {
			t->t_egress_bound = 0;
			t->t_bound_early = 0;
			continue;
		}
		if (t->t_state != TURN_SUBMITTED && !t->t_binding)
			continue;
		log_warnx("channel %s: turn %s: egress stopped", t->t_key,
		    t->t_id);
		sv->sv_count.sc_failures++;
		/* nothing to unbind: that egress is gone */
		t->t_egress_bound = 0;
		turn_end(t, turn_failure("internal", "Egress stopped during "
		    "the turn", NULL), 1);
	}
}

/*
 * The worker announced itself while its turn was delivered and not yet
 * answered: it restarted (or gave up), and will never answer that turn
 * (PROTOCOL.md 3.1: a turn is delivered at most once).
 */
void
turn_worker_ready(const char *key)
{
	struct turn	*t = turn_find(key);

	if (t == NULL || t->t_state != TURN_SUBMITTED || !t->t_delivered)
		return;
	log_warnx("channel %s: turn %s: the worker started again before it "
	    "answered", key, t->t_id);
	sv->sv_count.sc_failures++;
	turn_end(t, turn_failure("worker_failed", "The worker stopped before "
	    "it answered", NULL), 1);
}

/*
 * The channel's container stopped under its turn: the worker is gone with
 * it, and nothing can answer the turn any more.  A turn the worker had not
 * taken yet waits for it: the container starts again (its restart policy),
 * the worker announces itself and takes the turn from the same broker,
 * which hands a turn out at most once; else the deadline ends it.
 */
void
turn_container_gone(const char *key, const char *why)
{
	struct turn	*t = turn_find(key);

	if (t == NULL || t->t_state != TURN_SUBMITTED)
		return;
	if (!t->t_delivered) {
		log_warnx("channel %s: turn %s: %s before the worker took "
		    "it; waiting for the worker to start again", key, t->t_id,
		    why);
		return;
	}
	log_warnx("channel %s: turn %s: %s", key, t->t_id, why);
	sv->sv_count.sc_failures++;
	turn_end(t, turn_failure("worker_failed", why, NULL), 1);
}

void
turn_level_forget(const char *key)
{
	struct turn_level	*tl;

	TAILQ_FOREACH(tl, &levels, tl_entry)
		if (strcmp(tl->tl_key, key) == 0) {
			TAILQ_REMOVE(&levels, tl, tl_entry);
			free(tl->tl_key);
			free(tl);
			return;
		}
}

struct ctl_client *
turn_identity(const char *key, const char **turn_id, const char **profile,
    const char **id, const char **name)
{
	struct turn	*t = turn_find(key);

	if (t == NULL)
		return NULL;
	*turn_id = t->t_id;
	*profile = t->t_profile;
	*id = t->t_author_id;
	*name = t->t_author_name;
	return t->t_client;
}

int
turn_busy(const char *key)
{
	return turn_find(key) != NULL;
}

/* n model or MCP calls, told at once: of another turn, of one that
 * settled meanwhile or of the startup window (turn_id NULL), they are not
 * the running turn's.  Each is counted and told to the client until one
 * is past the budget, which stops the turn. */
void
turn_call(const char *key, struct child *b, const char *turn_id, uint64_t n)
{
	struct turn	*t = turn_find(key);

	/* Startup-window MCP calls name no turn. */
	if (turn_id == NULL)
		return;
	if (!turn_is(t, turn_id)) {
		(void)child_refused(b, VIOLATION_NO_TURN, "a call event of no "
		    "submitted turn");
		return;
	}
	while (n-- > 0 && turn_count_call(t, b) == 0)
		turn_progress(t, "model_call");
}

static void
turn_hook_done(struct turn *t)
{
	if (--t->t_hooks == 0 && !t->t_starting && t->t_state == TURN_STARTING)
		turn_submit(t);
}

/*
 * A memory.block or effort.judge hook that failed fails its turn, as a
 * promptBlock() or judge() that threw under PiSandboxRuntime 0.7.3 did:
 * the turn does not go on with no memory or a level nobody judged.  What
 * the client said stays with the client.
 */
static void
turn_hook_failed(struct turn *t, const char *hook, const char *message,
    const char *why)
{
	log_warnx("channel %s: turn %s: the %s hook failed: %s", t->t_key,
	    t->t_id, hook, why);
	t->t_hooks--;
	sv->sv_count.sc_failures++;
	turn_end(t, turn_failure("internal", message, NULL), 0);
}

/*
 * memory.block answers {"text": ...}; over 100 000 chars fails the turn
 * as invalid, as under PiSandboxRuntime 0.7.3, and an error or any other
 * answer as internal.
 */
static void
turn_memory_done(cJSON *result, enum ctl_call_end end, void *arg)
{
	struct turn	*t = arg;
	cJSON		*text;
	size_t		 units;

	t->t_memory_call = NULL;
	/* Its client left: the turn is cancelled right after. */
	if (end == CTL_CALL_LEFT) {
		t->t_hooks--;
		return;
	}
	text = cJSON_IsObject(result) ? cJSON_GetObjectItemCaseSensitive(
	    result, "text") : NULL;
	if (result == NULL) {
		turn_hook_failed(t, "memory.block", "memory hook failed",
		    ctl_call_end_to_string(end));
		return;
	}
	if (!cJSON_IsString(text) || utf8_utf16_len(text->valuestring,
	    strlen(text->valuestring), &units) == -1) {
		turn_hook_failed(t, "memory.block", "memory hook failed",
		    "an answer other than {\"text\": string}");
		return;
	}
	if (units > MEMORY_MAX) {
		log_warnx("channel %s: memory.block gave %zu chars, over %u",
		    t->t_key, units, MEMORY_MAX);
		t->t_hooks--;
		turn_end(t, turn_failure("invalid", "Memory context too large",
		    NULL), 0);
		return;
	}
	free(t->t_memory);
	if ((t->t_memory = strdup(text->valuestring)) == NULL)
		fatal("%s", __func__);
	turn_hook_done(t);
}

/* effort.judge answers {"level": ...}; an error or any other answer fails
 * the turn. */
static void
turn_judge_done(cJSON *result, enum ctl_call_end end, void *arg)
{
	struct turn	*t = arg;
	cJSON		*level;

	t->t_judge_call = NULL;
	if (end == CTL_CALL_LEFT) {
		t->t_hooks--;
		return;
	}
	level = cJSON_IsObject(result) ? cJSON_GetObjectItemCaseSensitive(
	    result, "level") : NULL;
	if (result == NULL) {
		turn_hook_failed(t, "effort.judge", "effort hook failed",
		    ctl_call_end_to_string(end));
		return;
	}
	if (!cJSON_IsString(level) || !valid_thinking(level->valuestring,
	    strlen(level->valuestring))) {
		turn_hook_failed(t, "effort.judge", "effort hook failed",
		    "an answer other than {\"level\": low, medium, high or "
		    "xhigh}");
		return;
	}
	snprintf(t->t_thinking, sizeof(t->t_thinking), "%s",
	    level->valuestring);
	/* remembered now: a turn that then fails still sets it */
	turn_level_set(t->t_key, t->t_thinking, 1);
	turn_hook_done(t);
}

void
method_turn_run(struct ctl_req *req, cJSON *params)
{
	static const char *const allowed[] = { "channel", "profile", "turnId",
	    "author", "text", "images", "memory", "memoryVisibility",
	    "thinking", NULL };
	const char		*key, *profile, *thinking, *memory, *previous;
	const char		*judged;
	const cJSON		*author, *images;
	struct body_turn	 bt;
	struct turn		*t;
	struct timeval		 tv;
	enum body_err		 be;
	char			 seg[SEGMENT_MAX + 1], err[256], *json;
	unsigned		 hooks;
	int			 thinking_given;

	if (ctl_params_only(req, params, allowed) == -1)
		return;
	key = ctl_str_param(params, "channel");
	profile = ctl_str_param(params, "profile");
	if (key == NULL || channel_segment(key, strlen(key), seg,
	    sizeof(seg)) == -1) {
		ctl_reply(req, turn_failure("invalid", "channel must be 1 to "
		    "256 chars of valid UTF-8", NULL));
		return;
	}
	if (profile == NULL || config_profile(sv->sv_conf, profile) == NULL) {
		ctl_reply(req, turn_failure("invalid", "unknown profile", NULL));
		return;
	}
	if (turn_find(key) != NULL) {
		ctl_reply(req, turn_failure("busy",
		    "the channel is running a turn", NULL));
		return;
	}
	author = cJSON_GetObjectItemCaseSensitive(params, "author");
	images = cJSON_GetObjectItemCaseSensitive(params, "images");
	memory = ctl_str_param(params, "memory");
	thinking = ctl_str_param(params, "thinking");
	if (cJSON_GetObjectItemCaseSensitive(params, "thinking") != NULL &&
	    (thinking == NULL || !valid_thinking(thinking, strlen(thinking)))) {
		ctl_reply(req, turn_failure("invalid",
		    "thinking must be low, medium, high or xhigh", NULL));
		return;
	}
	thinking_given = thinking != NULL;
	previous = turn_level_get(key, 0);
	judged = turn_level_get(key, 1);
	if (thinking == NULL)
		thinking = previous != NULL ? previous :
		    sv->sv_conf->default_thinking;
	memset(&bt, 0, sizeof(bt));
	bt.bt_turn_id = ctl_str_param(params, "turnId");
	bt.bt_author_id = cJSON_IsObject(author) ? ctl_str_param(author, "id") :
	    NULL;
	bt.bt_author_name = cJSON_IsObject(author) ? ctl_str_param(author,
	    "name") : NULL;
	bt.bt_principal_id = cJSON_IsObject(author) ? ctl_str_param(author,
	    "principalId") : NULL;
	bt.bt_memory_visibility = ctl_str_param(params, "memoryVisibility");
	bt.bt_text = ctl_str_param(params, "text");
	bt.bt_memory = memory;
	bt.bt_images = images;
	bt.bt_thinking = thinking;
	if (bt.bt_turn_id == NULL || bt.bt_author_id == NULL ||
	    bt.bt_author_name == NULL || bt.bt_text == NULL ||
	    (images != NULL && !cJSON_IsArray(images)) ||
	    (cJSON_GetObjectItemCaseSensitive(params, "memory") != NULL &&
	    memory == NULL) ||
	    (cJSON_GetObjectItemCaseSensitive(params, "memoryVisibility") !=
	    NULL && bt.bt_memory_visibility == NULL) ||
	    (cJSON_IsObject(author) && cJSON_GetObjectItemCaseSensitive(author,
	    "principalId") != NULL && bt.bt_principal_id == NULL)) {
		ctl_reply(req, turn_failure("invalid", "turnId, author{id,name} "
		    "and text are required strings; images an array; memory, "
		    "memoryVisibility and author.principalId strings", NULL));
		return;
	}
	/* Every bound is checked now, before anything starts. */
	if ((json = body_build_turn(&bt, &be, err, sizeof(err))) == NULL) {
		ctl_reply(req, turn_failure("invalid", err, NULL));
		return;
	}
	cJSON_free(json);

	if ((t = calloc(1, sizeof(*t))) == NULL)
		fatal("%s", __func__);
	TAILQ_INIT(&t->t_tools);
	if ((t->t_key = strdup(key)) == NULL ||
	    (t->t_profile = strdup(profile)) == NULL ||
	    (t->t_id = strdup(bt.bt_turn_id)) == NULL ||
	    (t->t_author_id = strdup(bt.bt_author_id)) == NULL ||
	    (t->t_author_name = strdup(bt.bt_author_name)) == NULL ||
	    (t->t_text = strdup(bt.bt_text)) == NULL ||
	    (memory != NULL && (t->t_memory = strdup(memory)) == NULL) ||
	    (bt.bt_principal_id != NULL && (t->t_principal_id =
	    strdup(bt.bt_principal_id)) == NULL) ||
	    (bt.bt_memory_visibility != NULL && (t->t_visibility =
	    strdup(bt.bt_memory_visibility)) == NULL) ||
	    (images != NULL && (t->t_images = cJSON_Duplicate(images,
	    1)) == NULL))
		fatal("%s", __func__);
	snprintf(t->t_thinking, sizeof(t->t_thinking), "%s", thinking);
	t->t_req = req;
	t->t_client = ctl_req_client(req);
	TAILQ_INSERT_TAIL(&turns, t, t_entry);
	sv->sv_count.sc_turns++;
	ctl_set_cancel(req, turn_cancel_req, t);

	clock_gettime(CLOCK_MONOTONIC, &t->t_started);
	tv.tv_sec = sv->sv_conf->turn_ms / 1000;
	tv.tv_usec = (sv->sv_conf->turn_ms % 1000) * 1000;
	if ((t->t_deadline = evtimer_new(sv->sv_base, turn_deadline, t)) ==
	    NULL || evtimer_add(t->t_deadline, &tv) == -1)
		fatalx("%s: timer", __func__);
	turn_progress(t, "starting");
	/* The hooks run while the channel starts (DESIGN.md 6). */
	hooks = ctl_client_hooks(t->t_client);
	if (memory == NULL && (hooks & HOOK_MEMORY_BLOCK)) {
		cJSON	*p = cJSON_CreateObject();

		cJSON_AddStringToObject(p, "channel", key);
		cJSON_AddStringToObject(p, "id", t->t_author_id);
		cJSON_AddStringToObject(p, "name", t->t_author_name);
		if ((t->t_memory_call = ctl_client_call(t->t_client,
		    "memory.block", p, turn_memory_done, t)) != NULL)
			t->t_hooks++;
	}
	if (!thinking_given && (hooks & HOOK_EFFORT_JUDGE)) {
		cJSON	*p = cJSON_CreateObject();

		cJSON_AddStringToObject(p, "text", t->t_text);
		/* only a level the hook judged before: a level given in
		 * turn.run or default_thinking is no judgement */
		if (judged != NULL)
			cJSON_AddStringToObject(p, "previous", judged);
		if ((t->t_judge_call = ctl_client_call(t->t_client,
		    "effort.judge", p, turn_judge_done, t)) != NULL)
			t->t_hooks++;
	}
	t->t_starting = 1;
	turn_progress(t, "container");
	chan_start(key, profile, turn_started, t);
	turn_bind_early(t);
}

void
method_turn_cancel(struct ctl_req *req, cJSON *params)
{
	const char	*key = ctl_str_param(params, "channel");
	struct turn	*t;
	cJSON		*res;

	if (key == NULL || cJSON_GetArraySize(params) != 1) {
		ctl_error(req, RPC_INVALID_PARAMS,
		    "Invalid params: turn.cancel needs {\"channel\": key}");
		return;
	}
	if ((t = turn_find(key)) != NULL) {
		log_info("channel %s: turn %s cancelled", key, t->t_id);
		turn_end(t, turn_failure("cancelled", "The turn was cancelled",
		    NULL), 1);
	}
	if ((res = cJSON_CreateObject()) == NULL ||
	    cJSON_AddBoolToObject(res, "cancelled", t != NULL) == NULL)
		fatalx("%s: out of memory", __func__);
	ctl_reply(req, res);
}
