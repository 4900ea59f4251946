/*
 * Compaction (rtsandbox-protocol(7), contract 0.7.10 and 0.7.12).  With a
 * host compactor configured, GET /worker/config tells the worker its
 * engine; inside a bound turn POST /compaction/compact goes to the
 * supervisor, which asks the client's compaction.compact hook, and POST
 * /compaction/report to the supervisor's log.  Whatever keeps a request
 * from the compactor is answered here as the fallback to Pi's own summary,
 * {"ok":false,"fallback":...} with 200, and the supervisor hears its code
 * (a brk_event "compact_fallback") to log it for the channel.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "brokerpriv.h"
#include "compaction.h"
#include "hold.h"
#include "limits.h"
#include "log.h"
#include "proc.h"

void
compact_config(struct broker *br, struct http_conn *c)
{
	cJSON	*r, *cp;
	char	*json;

	if ((r = cJSON_CreateObject()) == NULL ||
	    (cp = cJSON_AddObjectToObject(r, "compaction")) == NULL ||
	    cJSON_AddStringToObject(cp, "engine", br->br_compact_engine) ==
	    NULL || (json = body_print(r)) == NULL) {
		cJSON_Delete(r);
		respond_text(c, 503, BROKER_BUSY);
		return;
	}
	cJSON_Delete(r);
	respond_json(c, 200, json, strlen(json));
	cJSON_free(json);
}

/* code: what the supervisor logs (compact.c there has the table). */
static void
compact_fallback(struct broker *br, struct http_conn *c, const char *code,
    const char *reason)
{
	struct scope	*sc = scope_current(br);
	char		*json;

	if ((json = compact_fallback_json(reason)) == NULL) {
		respond_text(c, 503, BROKER_BUSY);
		return;
	}
	respond_json(c, 200, json, strlen(json));
	cJSON_free(json);
	sup_event(br, "compact_fallback", code, 200, sc != NULL &&
	    sc->sc_turn ? sc->sc_turn_id : NULL);
}

/* The turn the request came in, still bound; else 410 was answered. */
static struct scope *
compact_scope(struct broker *br, struct http_conn *c)
{
	struct scope	*sc = scope_current(br);

	if (sc == NULL || !sc->sc_turn) {
		respond_text(c, 410, "Turn ended");
		return NULL;
	}
	return sc;
}

/* The worker's body to the supervisor, of the scope's turn; -1 when it
 * could not be queued, answered 503. */
static int
compact_forward(struct broker *br, struct http_conn *c, struct scope *sc,
    enum msg_type type, uint64_t id, const char *body, size_t len)
{
	struct msgb	 mb;

	msgb_init(&mb, type, id);
	msg_add_str(&mb, "turn_id", sc->sc_turn_id);
	msg_add_data(&mb, body, len);
	if (sup_send(br, &mb) == -1) {
		respond_text(c, 503, BROKER_BUSY);
		return -1;
	}
	return 0;
}

static void
report_use(struct broker *br, struct http_conn *c, const char *body,
    size_t len)
{
	struct scope	*sc;
	char		 err[256];

	if ((sc = compact_scope(br, c)) == NULL)
		return;
	switch (compact_check_report(body, len, NULL, 0, err, sizeof(err))) {
	case BODY_OK:
		break;
	case BODY_NOMEM:
		respond_text(c, 503, BROKER_BUSY);
		return;
	default:
		log_info("compaction report refused: %s", err);
		respond_text(c, 400, "Invalid report");
		return;
	}
	if (compact_forward(br, c, sc, MSG_BRK_COMPACT_REPORT, 0, body,
	    len) == 0)
		respond_text(c, 200, "Accepted");
}

/* Once the body was used, the next may be read (as every route does). */
static void
report_body(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct broker	*br = arg;

	report_use(br, c, body, len);
	hold_done(br->br_hold, c);
}

static void
report_body_err(struct http_conn *c, enum http_body_err e, void *arg)
{
	struct broker	*br = arg;

	hold_done(br->br_hold, c);
	respond_body_err(c, e, "Invalid report");
}

static void
compact_use(struct broker *br, struct http_conn *c, const char *body,
    size_t len)
{
	struct compact_info	 ci;
	struct scope		*sc;
	char			 err[256];

	if ((sc = compact_scope(br, c)) == NULL)
		return;
	/* Another came in whole while this one's body was on its way. */
	if (br->br_compact_id != 0) {
		compact_fallback(br, c, "running", "a compaction is already "
		    "running");
		return;
	}
	switch (compact_check_request(body, len, &ci, NULL, err,
	    sizeof(err))) {
	case BODY_OK:
		break;
	case BODY_NOMEM:
		respond_text(c, 503, BROKER_BUSY);
		return;
	default:
		log_info("compact request refused: %s", err);
		compact_fallback(br, c, "invalid", "the request is invalid");
		return;
	}
	if (compact_forward(br, c, sc, MSG_BRK_COMPACT, ++br->br_next_id,
	    body, len) == -1)
		return;
	br->br_compact_id = br->br_next_id;
	br->br_compact_conn = c;
	conn_state(c)->cs_role = CONN_COMPACT;
}

static void
compact_body(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct broker	*br = arg;

	compact_use(br, c, body, len);
	hold_done(br->br_hold, c);
}

static void
compact_body_err(struct http_conn *c, enum http_body_err e, void *arg)
{
	struct broker	*br = arg;
	char		 why[96];

	hold_done(br->br_hold, c);
	if (e == HTTP_BODY_TOO_LARGE) {
		snprintf(why, sizeof(why), "the request is over %" PRIu64
		    " bytes", br->br_compact_max);
		compact_fallback(br, c, "too_large", why);
	} else
		respond_body_err(c, e, "Invalid request");
}

/* POST /compaction/compact, in the order of the 0.7.12 broker. */
static void
compact_request(struct broker *br, struct http_conn *c,
    const struct http_head *h, struct scope *sc)
{
	uint64_t	 now = proc_now_ms(), left, timeout;
	char		 why[96];

	if (br->br_compact_engine == NULL) {
		compact_fallback(br, c, "none", "the host has no compactor");
		return;
	}
	if (br->br_compact_id != 0) {
		compact_fallback(br, c, "running", "a compaction is already "
		    "running");
		return;
	}
	if (++sc->sc_compacts > COMPACTS_PER_TURN) {
		snprintf(why, sizeof(why), "the turn already asked for %u "
		    "compactions", COMPACTS_PER_TURN);
		compact_fallback(br, c, "count", why);
		return;
	}
	if (h->h_framing == HTTP_BODY_LENGTH &&
	    h->h_content_length > br->br_compact_max) {
		snprintf(why, sizeof(why), "the request is over %" PRIu64
		    " bytes", br->br_compact_max);
		compact_fallback(br, c, "too_large", why);
		return;
	}
	/* Pi's own summary must still fit after a compactor that runs out
	 * of time: the supervisor gives it at most half of what is left. */
	left = sc->sc_deadline > now ? sc->sc_deadline - now : 0;
	timeout = left / 2 < br->br_compact_timeout_ms ? left / 2 :
	    br->br_compact_timeout_ms;
	if (timeout < COMPACT_TIMEOUT_MS_MIN) {
		compact_fallback(br, c, "no_time", "the turn has too little "
		    "time left for the host compactor");
		return;
	}
	if (hold_read_body(br->br_hold, c, br->br_compact_max, compact_body,
	    compact_body_err) == -1)
		http_conn_kill(c);
}

void
compact_route(struct broker *br, struct http_conn *c,
    const struct http_head *h)
{
	struct scope	*sc;

	if (strcmp(h->h_method, "POST") != 0) {
		respond_text(c, 404, "Not found");
		return;
	}
	if ((sc = compact_scope(br, c)) == NULL)
		return;
	if (strcmp(h->h_path, "/compaction/compact") == 0) {
		compact_request(br, c, h, sc);
		return;
	}
	/* A turn compacts a few times at most; more reports only fill the
	 * host's log. */
	if (++sc->sc_reports > COMPACT_REPORTS_PER_TURN) {
		respond_text(c, 429, "Report budget exhausted");
		return;
	}
	if (hold_read_body(br->br_hold, c, COMPACT_REPORT_BODY_MAX,
	    report_body, report_body_err) == -1)
		http_conn_kill(c);
}

/* The supervisor's answer: the body the worker gets, as it is. */
int
broker_compacted(struct broker *br, struct msg *m)
{
	struct http_conn	*c;
	const uint8_t		*data;
	size_t			 len;

	if (msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1 ||
	    m->m_id == 0 || m->m_id != br->br_compact_id)
		return -1;
	br->br_compact_id = 0;
	if ((c = br->br_compact_conn) == NULL)
		return 0;
	br->br_compact_conn = NULL;
	conn_state(c)->cs_role = CONN_OTHER;
	respond_json(c, 200, (const char *)data, len);
	return 0;
}
