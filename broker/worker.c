/*
 * The worker's own routes (PROTOCOL.md 3.1): its readiness, the poll for
 * its turn and its result.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "brokerpriv.h"
#include "hold.h"
#include "limits.h"
#include "log.h"
#include "proc.h"
#include "validate.h"


/*
 * A worker may be given a private turn, or a tool answer only one
 * principal may read, when it declared both capabilities at its last
 * /worker/ready; one that declared a private history needs them for any
 * turn (rtsandbox-protocol(7), contract 0.9).
 */
int
worker_private_ok(const struct broker *br)
{
	return br->br_caps.br_private_to && br->br_caps.br_reader_records;
}

/* What of the pending turn the worker cannot be given, or NULL. */
const char *
turn_stale_need(const struct broker *br)
{
	if (worker_private_ok(br))
		return NULL;
	if (br->br_turn_private)
		return "private memory";
	if (br->br_caps.br_private_history)
		return "a private history";
	return NULL;
}

static void	poll_timeout(struct http_conn *, void *);

/* The worker's image is too old for what the turn needs: the supervisor
 * fails the turn, naming the image; nothing of it reaches the worker. */
void
worker_stale(struct broker *br, const char *need)
{
	log_info("turn %s: the worker does not declare privateTo and "
	    "readerRecords, which %s needs", br->br_turn_id, need);
	br->br_turn_cancelled = 1;
	sup_event(br, "worker_stale", need, 409, br->br_turn_id);
}

/* A poll with no turn to give waits, at most BROKER_POLL_MS. */
static void
poll_park(struct broker *br, struct http_conn *c)
{
	if (http_conn_set_timer(c, BROKER_POLL_MS, poll_timeout) == -1) {
		respond_text(c, 503, BROKER_BUSY);
		return;
	}
	br->br_poll = c;
	conn_state(c)->cs_role = CONN_POLL;
}

void
turn_deliver(struct broker *br, struct http_conn *c)
{
	struct msgb	 mb;
	const char	*need;

	if ((need = turn_stale_need(br)) != NULL) {
		worker_stale(br, need);
		poll_park(br, c);	/* as with no turn */
		return;
	}
	br->br_turn_delivered = 1;
	/* Delivered once: the answer takes the text, not a copy of it, for
	 * a worker that reads slowly. */
	if (http_respond_owned(c, 200, "application/json", br->br_turn_json,
	    br->br_turn_len) == -1)
		http_conn_kill(c);
	br->br_turn_json = NULL;
	msgb_init(&mb, MSG_BRK_DELIVERED, 0);
	msg_add_str(&mb, "turn_id", br->br_turn_id);
	(void)sup_send(br, &mb);
	log_debug("turn %s delivered", br->br_turn_id);
}

static void
poll_timeout(struct http_conn *c, void *arg)
{
	struct broker	*br = arg;

	if (br->br_poll == c)
		br->br_poll = NULL;
	conn_state(c)->cs_role = CONN_OTHER;
	respond_text(c, 408, "Retry");
}

static void
worker_next(struct broker *br, struct http_conn *c)
{
	if (br->br_poll != NULL) {
		respond_text(c, 429, "Already waiting");
		return;
	}
	if (br->br_turn_id != NULL && !br->br_turn_delivered &&
	    !br->br_turn_cancelled) {
		turn_deliver(br, c);
		return;
	}
	poll_park(br, c);
}

static void
result_use(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct broker	*br = arg;
	struct msgb	 mb;
	cJSON		*result = NULL;
	char		 err[256], *json;
	int		 status, rc;

	br->br_receiving = NULL;
	conn_state(c)->cs_role = CONN_OTHER;
	/* The turn may have settled or changed while the body came in. */
	if (br->br_turn_id == NULL || br->br_turn_cancelled ||
	    !br->br_turn_delivered) {
		respond_text(c, 409, "No matching turn");
		return;
	}
	status = body_check_result(body, len, br->br_turn_id, &result, err,
	    sizeof(err));
	if (status != 200) {
		log_info("result refused (%d): %s", status, err);
		respond_text(c, status, status == 409 ? "No matching turn" :
		    "Invalid result");
		cJSON_Delete(result);
		return;
	}
	json = body_print(result);
	cJSON_Delete(result);
	if (json == NULL) {
		log_warnx("%s: out of memory", __func__);
		respond_text(c, 503, BROKER_BUSY);
		return;
	}
	/* Printed numbers can be longer than the worker wrote them. */
	if (strlen(json) > edge_limits(PROC_BROKER,
	    PROC_SUPERVISOR)->fl_data_max) {
		log_info("result refused: %zu bytes once printed",
		    strlen(json));
		respond_text(c, 400, "Invalid result");
		free(json);
		return;
	}
	msgb_init(&mb, MSG_BRK_RESULT, 0);
	msg_add_str(&mb, "turn_id", br->br_turn_id);
	msg_add_data(&mb, json, strlen(json));
	rc = sup_send(br, &mb);
	free(json);
	if (rc == -1) {
		respond_text(c, 503, BROKER_BUSY);
		return;
	}
	/* The supervisor logs the answered turn. */
	log_debug("turn %s: result accepted", br->br_turn_id);
	/* Complete: a second post finds no pending turn. */
	free(br->br_turn_id);
	free(br->br_turn_json);
	br->br_turn_id = br->br_turn_json = NULL;
	respond_text(c, 200, "Accepted");
}

static void
result_body(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct broker	*br = arg;

	result_use(c, body, len, arg);
	hold_done(br->br_hold, c);
}

static void
result_body_err(struct http_conn *c, enum http_body_err e, void *arg)
{
	struct broker	*br = arg;

	hold_done(br->br_hold, c);

	br->br_receiving = NULL;
	conn_state(c)->cs_role = CONN_OTHER;
	respond_body_err(c, e, "Invalid result");
}

static void
worker_result(struct broker *br, struct http_conn *c)
{
	/* Decided before reading the body. */
	if (br->br_turn_id == NULL || !br->br_turn_delivered ||
	    br->br_turn_cancelled) {
		respond_text(c, 409, "No matching turn");
		return;
	}
	if (br->br_receiving != NULL) {
		respond_text(c, 429, "Already receiving");
		return;
	}
	br->br_receiving = c;
	conn_state(c)->cs_role = CONN_RESULT;
	if (hold_read_body(br->br_hold, c, RESULT_BODY_MAX, result_body,
	    result_body_err) == -1) {
		br->br_receiving = NULL;
		http_conn_kill(c);
	}
}

static void
ready_use(struct broker *br, struct http_conn *c, const char *body,
    size_t len)
{
	struct body_ready	 caps;
	char			 err[128];

	if (body_check_ready(body, len, &caps, err, sizeof(err)) != BODY_OK) {
		log_info("ready refused: %s", err);
		respond_text(c, 400, "Invalid ready");
		return;
	}
	br->br_caps = caps;
	/*
	 * The supervisor hears of the first, and of one that comes while
	 * the turn handed over is unanswered: the worker started again and
	 * will never answer it.  One posted after every turn, as the
	 * reference worker does, tells it nothing.
	 */
	if (!br->br_ready) {
		log_info("worker ready");
		sup_event(br, "worker_ready", "/worker/ready", 200, NULL);
	} else if (br->br_turn_id != NULL && br->br_turn_delivered)
		sup_event(br, "worker_ready", "/worker/ready", 200, NULL);
	br->br_ready = 1;
	window_rearm(br);
	respond_text(c, 200, "Ready");
}

static void
ready_body(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct broker	*br = arg;

	ready_use(br, c, body, len);
	hold_done(br->br_hold, c);
}

static void
ready_body_err(struct http_conn *c, enum http_body_err e, void *arg)
{
	struct broker	*br = arg;

	hold_done(br->br_hold, c);
	respond_body_err(c, e, "Invalid ready");
}

void
worker_route(struct broker *br, struct http_conn *c,
    const struct http_head *h)
{
	const char	*m = h->h_method, *p = h->h_path;

	if (strcmp(p, "/worker/ready") == 0 && strcmp(m, "POST") == 0) {
		if (hold_read_body(br->br_hold, c, WORKER_READY_BODY_MAX,
		    ready_body, ready_body_err) == -1)
			http_conn_kill(c);
	} else if (strcmp(p, "/worker/next") == 0 && strcmp(m, "GET") == 0)
		worker_next(br, c);
	else if (strcmp(p, "/worker/result") == 0 && strcmp(m, "POST") == 0)
		worker_result(br, c);
	/* 0.7.10: the host compactor's engine; 404, as a 0.7.3 broker
	 * answers, is "none" to the worker */
	else if (strcmp(p, "/worker/config") == 0 && strcmp(m, "GET") == 0 &&
	    br->br_compact_engine != NULL)
		compact_config(br, c);
	else
		respond_text(c, 404, "Not found");
}
