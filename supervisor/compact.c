/*
 * Compaction (rtsandbox-protocol(7), contract 0.7.10 and 0.7.12): a
 * worker's compact request, which its broker checked and passed on, goes
 * to the compaction.compact hook of the client that submitted the turn,
 * with the bound identity and at most half the turn's time left (never
 * more than compaction.timeout_ms).  Every request gets an answer for the
 * worker: the compaction, checked against the request and with the
 * configuration's engine in its details, or the fallback to Pi's own
 * summary with its reason.  What the broker sends is the attacker's: it is
 * checked again, and a broker that passes on what it must have refused
 * breaks a rule.  Every compaction, fallback and report is logged for the
 * channel, with its reason and tokensBefore.
 */
#include <sys/queue.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "compaction.h"
#include "control.h"
#include "limits.h"
#include "log.h"
#include "role.h"
#include "supervisor.h"
#include "violation.h"

struct compact_job {
	TAILQ_ENTRY(compact_job) cj_entry;
	char			*cj_key;
	char			*cj_turn;
	uint64_t		 cj_peer;	/* the broker that asked */
	uint64_t		 cj_id;		/* its request */
	struct compact_info	 cj_info;
	struct ctl_call		*cj_call;
	struct event		*cj_timer;
	uint64_t		 cj_timeout_ms;
	uint64_t		 cj_start;	/* monotonic ms */
};

static TAILQ_HEAD(, compact_job) jobs = TAILQ_HEAD_INITIALIZER(jobs);

/* What a broker answered on its own, by the code it names (compact.c of
 * the broker): what the log says of it. */
static const struct {
	const char	*code;
	const char	*why;
} broker_fallbacks[] = {
	{ "none",	"the host has no compactor" },
	{ "running",	"a compaction is already running" },
	{ "count",	"the turn already asked for its 3 compactions" },
	{ "too_large",	"the request is over compaction.max_request_bytes" },
	{ "no_time",	"the turn has too little time left for the host "
			"compactor" },
	{ "invalid",	"the request is invalid" },
};

static struct compact_job *
compact_find(const char *key)
{
	struct compact_job	*cj;

	TAILQ_FOREACH(cj, &jobs, cj_entry)
		if (strcmp(cj->cj_key, key) == 0)
			return cj;
	return NULL;
}

/* The answer to the broker that asked, if it is still the channel's. */
static void
compact_send(const char *key, uint64_t peer, uint64_t id, const char *json)
{
	struct child	*b;
	struct msgb	 mb;

	if ((b = chan_broker(key)) == NULL || b->c_peer != peer)
		return;
	msgb_init(&mb, MSG_BRK_COMPACTED, id);
	msg_add_data(&mb, json, strlen(json));
	child_send_msg(b, &mb);
}

static void
compact_send_fallback(const char *key, const char *turn, uint64_t peer,
    uint64_t id, const char *why, const struct compact_info *ci)
{
	char	*json;

	if (ci != NULL && ci->ci_first_kept[0] != '\0')
		log_info("channel %s: turn %s: compaction falls back to Pi's "
		    "summary: %s (reason %s, tokensBefore %" PRIu64 ")", key,
		    turn, why, ci->ci_reason, ci->ci_tokens_before);
	else
		log_info("channel %s: turn %s: compaction falls back to Pi's "
		    "summary: %s", key, turn, why);
	if ((json = compact_fallback_json(why)) == NULL)
		fatalx("%s: out of memory", __func__);
	compact_send(key, peer, id, json);
	cJSON_free(json);
}

static void
compact_job_free(struct compact_job *cj)
{
	TAILQ_REMOVE(&jobs, cj, cj_entry);
	if (cj->cj_call != NULL)
		ctl_call_withdraw(cj->cj_call);
	if (cj->cj_timer != NULL)
		event_free(cj->cj_timer);
	free(cj->cj_key);
	free(cj->cj_turn);
	free(cj);
}

static void
compact_job_fallback(struct compact_job *cj, const char *why)
{
	compact_send_fallback(cj->cj_key, cj->cj_turn, cj->cj_peer,
	    cj->cj_id, why, &cj->cj_info);
	compact_job_free(cj);
}

static void
compact_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct compact_job	*cj = arg;
	char			 why[96];

	snprintf(why, sizeof(why), "the compactor took over %" PRIu64 " ms",
	    cj->cj_timeout_ms);
	compact_job_fallback(cj, why);
}

/*
 * The hook's answer: a compaction, or null when the compactor leaves it
 * to Pi's summary.  A hook that failed says so in the log; the worker
 * hears "the compactor failed", never the client's text.
 */
static void
compact_done(cJSON *result, enum ctl_call_end end, void *arg)
{
	struct compact_job	*cj = arg;
	char			 err[256], tafter[24], *json;
	int64_t			 after;

	cj->cj_call = NULL;
	if (end != CTL_CALL_ANSWERED) {
		log_warnx("channel %s: turn %s: the compaction.compact hook "
		    "failed: %s", cj->cj_key, cj->cj_turn,
		    ctl_call_end_to_string(end));
		compact_job_fallback(cj, "the compactor failed");
		return;
	}
	if (result == NULL || cJSON_IsNull(result)) {
		compact_job_fallback(cj, "the compactor declined");
		return;
	}
	switch (compact_build_answer(result, &cj->cj_info,
	    sv->sv_conf->compaction_engine, &json, &after, err,
	    sizeof(err))) {
	case BODY_OK:
		break;
	case BODY_NOMEM:
		fatalx("%s: out of memory", __func__);
	default:
		log_warnx("channel %s: turn %s: the compactor's result is "
		    "invalid: %s", cj->cj_key, cj->cj_turn, err);
		compact_job_fallback(cj, "the compactor's result is invalid");
		return;
	}
	if (strlen(json) > edge_limits(PROC_SUPERVISOR,
	    PROC_BROKER)->fl_data_max) {
		cJSON_free(json);
		log_warnx("channel %s: turn %s: the compactor's result is "
		    "over %u bytes", cj->cj_key, cj->cj_turn,
		    edge_limits(PROC_SUPERVISOR, PROC_BROKER)->fl_data_max);
		compact_job_fallback(cj, "the compactor's result is invalid");
		return;
	}
	if (after < 0)
		snprintf(tafter, sizeof(tafter), "unknown");
	else
		snprintf(tafter, sizeof(tafter), "%" PRId64, after);
	log_info("channel %s: turn %s: host compactor answered (engine %s, "
	    "reason %s, tokensBefore %" PRIu64 ", tokensAfter %s, %" PRIu64
	    " ms)", cj->cj_key, cj->cj_turn, sv->sv_conf->compaction_engine,
	    cj->cj_info.ci_reason, cj->cj_info.ci_tokens_before, tafter,
	    proc_now_ms() - cj->cj_start);
	compact_send(cj->cj_key, cj->cj_peer, cj->cj_id, json);
	cJSON_free(json);
	compact_job_free(cj);
}

int
compact_ask(struct child *b, uint64_t id, const struct compact_turn *ct,
    const uint8_t *data, size_t len)
{
	struct compact_job	*cj;
	struct compact_info	 ci;
	struct timeval		 tv;
	cJSON			*req, *p, *ctx, *sp;
	char			 err[256], why[96];
	uint64_t		 timeout;

	if (id == 0)
		return -1;
	/* The broker answers these itself: one that asks breaks a rule. */
	if (sv->sv_conf->compaction_engine == NULL ||
	    len > sv->sv_conf->compaction_max_request_bytes ||
	    compact_find(ct->ct_key) != NULL ||
	    *ct->ct_compacts >= COMPACTS_PER_TURN) {
		if (child_refused(b, VIOLATION_KIND, "a compact request the "
		    "broker must answer itself") == 0)
			compact_send_fallback(ct->ct_key, ct->ct_turn,
			    b->c_peer, id, "the request is refused", NULL);
		return 0;
	}
	switch (compact_check_request((const char *)data, len, &ci, &req,
	    err, sizeof(err))) {
	case BODY_OK:
		break;
	case BODY_NOMEM:
		fatalx("%s: out of memory", __func__);
	default:
		if (child_refused(b, VIOLATION_BODY, err) == 0)
			compact_send_fallback(ct->ct_key, ct->ct_turn,
			    b->c_peer, id, "the request is invalid", NULL);
		return 0;
	}
	(*ct->ct_compacts)++;
	timeout = ct->ct_ms_left / 2;
	if (timeout > sv->sv_conf->compaction_timeout_ms)
		timeout = sv->sv_conf->compaction_timeout_ms;
	/* By the supervisor's clock, not the broker's. */
	if (timeout < COMPACT_TIMEOUT_MS_MIN) {
		cJSON_Delete(req);
		compact_send_fallback(ct->ct_key, ct->ct_turn, b->c_peer, id,
		    "the turn has too little time left for the host "
		    "compactor", &ci);
		return 0;
	}
	if (ct->ct_client == NULL || (ctl_client_hooks(ct->ct_client) &
	    HOOK_COMPACTION) == 0) {
		cJSON_Delete(req);
		compact_send_fallback(ct->ct_key, ct->ct_turn, b->c_peer, id,
		    "the client has no compaction.compact hook", &ci);
		return 0;
	}
	if ((cj = calloc(1, sizeof(*cj))) == NULL ||
	    (cj->cj_key = strdup(ct->ct_key)) == NULL ||
	    (cj->cj_turn = strdup(ct->ct_turn)) == NULL)
		fatal("%s", __func__);
	TAILQ_INSERT_TAIL(&jobs, cj, cj_entry);
	cj->cj_peer = b->c_peer;
	cj->cj_id = id;
	cj->cj_info = ci;
	cj->cj_timeout_ms = timeout;
	cj->cj_start = proc_now_ms();
	if ((p = cJSON_CreateObject()) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddItemToObject(p, "request", req);
	if ((ctx = cJSON_AddObjectToObject(p, "context")) == NULL ||
	    cJSON_AddStringToObject(ctx, "channel", ct->ct_key) == NULL ||
	    cJSON_AddStringToObject(ctx, "profile", ct->ct_profile) == NULL ||
	    (sp = cJSON_AddObjectToObject(ctx, "speaker")) == NULL ||
	    cJSON_AddStringToObject(sp, "id", ct->ct_speaker_id) == NULL ||
	    cJSON_AddStringToObject(sp, "name", ct->ct_speaker_name) ==
	    NULL || cJSON_AddStringToObject(ctx, "turnId", ct->ct_turn) ==
	    NULL || cJSON_AddStringToObject(ctx, "engine",
	    sv->sv_conf->compaction_engine) == NULL ||
	    cJSON_AddNumberToObject(p, "timeoutMs", (double)timeout) == NULL)
		fatalx("%s: out of memory", __func__);
	tv.tv_sec = timeout / 1000;
	tv.tv_usec = (timeout % 1000) * 1000;
	if ((cj->cj_timer = evtimer_new(sv->sv_base, compact_timeout, cj)) ==
	    NULL || evtimer_add(cj->cj_timer, &tv) == -1)
		fatalx("%s: timer", __func__);
	log_info("channel %s: turn %s: compaction asked of the host compactor "
	    "(reason %s, tokensBefore %" PRIu64 ", %" PRIu64 " ms at most)",
	    ct->ct_key, ct->ct_turn, ci.ci_reason, ci.ci_tokens_before,
	    timeout);
	if ((cj->cj_call = ctl_client_call(ct->ct_client, "compaction.compact",
	    p, compact_done, cj)) == NULL) {
		snprintf(why, sizeof(why), "the compactor failed");
		compact_job_fallback(cj, why);
	}
	return 0;
}

void
compact_report(struct child *b, const struct compact_turn *ct,
    const uint8_t *data, size_t len)
{
	char	 line[LOG_LINE_MAX], err[256];

	if (*ct->ct_reports >= COMPACT_REPORTS_PER_TURN) {
		(void)child_refused(b, VIOLATION_BUDGET, "more compaction "
		    "reports than a turn allows");
		return;
	}
	(*ct->ct_reports)++;
	switch (compact_check_report((const char *)data, len, line,
	    sizeof(line), err, sizeof(err))) {
	case BODY_OK:
		log_info("channel %s: turn %s: %s", ct->ct_key, ct->ct_turn,
		    line);
		return;
	case BODY_NOMEM:
		fatalx("%s: out of memory", __func__);
	default:
		(void)child_refused(b, VIOLATION_BODY, err);
		return;
	}
}

void
compact_broker_fallback(const char *key, const char *turn_id,
    const char *code)
{
	size_t	 i;

	for (i = 0; i < sizeof(broker_fallbacks) /
	    sizeof(broker_fallbacks[0]); i++)
		if (strcmp(code, broker_fallbacks[i].code) == 0) {
			log_info("channel %s: turn %s: compaction falls back "
			    "to Pi's summary: %s", key, turn_id != NULL ?
			    turn_id : "none", broker_fallbacks[i].why);
			return;
		}
}

void
compact_turn_end(const char *key)
{
	struct compact_job	*cj;

	if ((cj = compact_find(key)) != NULL)
		compact_job_fallback(cj, "the compaction was aborted");
}
