/*
 * A precheck run's broker (rtsandbox-protocol(7), contract 0.7.11/0.7.13):
 * the only way out of a sealed container that runs a short script.  It
 * serves one route, POST /mcp/<granted server>, one call at a time, within
 * one scope of the run's calls and deadline made at configuration; it
 * never re-arms, and nothing of PROTOCOL.md 3 but the listener limits of
 * 3.5 is served.  The supervisor binds no turn here and hears of no call.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "broker.h"
#include "brokerpriv.h"
#include "hold.h"
#include "limits.h"
#include "log.h"
#include "proc.h"
#include "rebuild.h"

/* The container's client sends this dummy, or no authorization at all. */
#define PRECHECK_AUTH		"Bearer sandbox-dummy-key"

_Static_assert(PRECHECK_SERVERS_MAX <= MCP_SERVERS_PER_PROFILE,
    "a run's servers do not fit a broker");

int
precheck_config(struct broker *br, struct msg *m, int *precheck)
{
	*precheck = 0;
	if (!msg_has(m, "precheck"))
		return 0;
	if (msg_get_bool(m, "precheck", precheck) == -1)
		return -1;
	if (!*precheck)
		return 0;
	if (msg_get_uint(m, "deadline_ms", PRECHECK_TIMEOUT_MS_MIN,
	    PRECHECK_TIMEOUT_MS_MAX + PRECHECK_DEADLINE_SLACK_MS,
	    &br->br_deadline_ms) == -1)
		return -1;
	br->br_precheck = 1;
	return 0;
}

/*
 * The deadline: a call still in flight is cut (its worker sees the
 * connection close, egress a cancel); the calls after it get 410.
 */
static void
precheck_end(evutil_socket_t fd, short what, void *arg)
{
	struct broker	*br = arg;
	struct call	*cl, *next;

	br->br_scope->sc_ended = 1;
	log_info("run ended");
	for (cl = TAILQ_FIRST(&br->br_calls); cl != NULL; cl = next) {
		next = TAILQ_NEXT(cl, cl_entry);
		if (cl->cl_conn != NULL)
			http_conn_kill(cl->cl_conn);
	}
}

const char *
precheck_start(struct broker *br)
{
	struct timeval	 tv;

	if ((br->br_scope = scope_new(0, br->br_max_calls, proc_now_ms() +
	    br->br_deadline_ms)) == NULL)
		return "out of memory";
	if ((br->br_run_end = evtimer_new(br->br_base, precheck_end, br)) ==
	    NULL)
		return "cannot time the run";
	tv.tv_sec = br->br_deadline_ms / 1000;
	tv.tv_usec = (br->br_deadline_ms % 1000) * 1000;
	if (evtimer_add(br->br_run_end, &tv) == -1)
		return "cannot time the run";
	log_info("run of %llu calls within %llu ms",
	    (unsigned long long)br->br_max_calls,
	    (unsigned long long)br->br_deadline_ms);
	return NULL;
}

/* No authorization field, or each one exactly the dummy. */
static int
precheck_auth_ok(const struct http_head *h)
{
	size_t	 i;

	for (i = 0; i < h->h_nfields; i++)
		if (strcmp(h->h_fields[i].name, "authorization") == 0 &&
		    strcmp(h->h_fields[i].value, PRECHECK_AUTH) != 0)
			return 0;
	return 1;
}

static void
precheck_use(struct broker *br, struct http_conn *c, const char *body,
    size_t len)
{
	struct call		*cl = conn_state(c)->cs_call;
	const struct http_head	*h = http_conn_head(c);
	struct mcp_server	*ms;
	char			 err[256], *out;
	size_t			 outlen;
	int			 rc;

	ms = mcp_find(br, h->h_path + strlen("/mcp/"));
	rc = rebuild_precheck_call(body, len,
	    (const char *const *)ms->ms_tools, ms->ms_ntools, &out, &outlen,
	    err, sizeof(err));
	switch (rc) {
	case 0:
		break;
	case REBUILD_NOMEM:
		log_warnx("precheck call: out of memory");
		call_refuse(cl, 503, NULL);
		return;
	case REBUILD_TOO_LARGE:
		call_refuse(cl, 413, "Request body too large");
		return;
	case REBUILD_MCP_REFUSED:
		log_info("precheck call refused: %s", err);
		call_refuse(cl, 403, "MCP method or tool refused");
		return;
	default:
		log_info("precheck call refused: %s", err);
		call_refuse(cl, 400, BODY_INVALID_INPUT);
		return;
	}
	/* Nothing of the script's head goes on, only the rebuilt body. */
	rc = egress_send_call(cl, NULL, "mcp", "", ms->ms_name, out, outlen);
	free(out);
	if (rc != 0)
		call_refuse(cl, rc, BODY_INVALID_INPUT);
}

/* Once the body was used, the next may be read. */
static void
precheck_body(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct broker	*br = arg;

	precheck_use(br, c, body, len);
	hold_done(br->br_hold, c);
}

/* The call stays spent, whatever ended its body. */
static void
precheck_body_err(struct http_conn *c, enum http_body_err e, void *arg)
{
	struct broker		*br = arg;
	struct call		*cl = conn_state(c)->cs_call;

	hold_done(br->br_hold, c);
	if (cl == NULL)
		return;
	if (e == HTTP_BODY_TOO_LARGE)
		respond_text(c, 413, "Request body too large");
	else
		respond_body_err(c, e, BODY_INVALID_INPUT);
	call_free(cl);
}

/* The route, its rules in the order of the reference broker. */
void
precheck_route(struct broker *br, struct http_conn *c,
    const struct http_head *h)
{
	struct scope	*sc = br->br_scope;
	struct call	*cl;

	/* 1. anything but a POST to a granted server, as the script's
	 * client sends it */
	if (strcmp(h->h_method, "POST") != 0 || h->h_has_query ||
	    h->h_has_fragment || strncmp(h->h_path, "/mcp/", 5) != 0 ||
	    mcp_find(br, h->h_path + 5) == NULL || !precheck_auth_ok(h)) {
		respond_text(c, 404, "Not found");
		return;
	}
	/* 2. the run's deadline */
	if (scope_current(br) == NULL) {
		respond_text(c, 410, "Run ended");
		return;
	}
	/* 3. one call at a time, and a refused one costs nothing */
	if (sc->sc_inflight > 0) {
		respond_text(c, 409, "One call at a time");
		return;
	}
	/* 4. the budget */
	if (sc->sc_calls_left == 0) {
		respond_text(c, 429, "Call budget exhausted");
		return;
	}
	/* 5. take one call, then read its body */
	if ((cl = call_new(br, CALL_PRECHECK, c, sc)) == NULL) {
		log_warnx("%s: out of memory", __func__);
		respond_text(c, 503, BROKER_BUSY);
		return;
	}
	sc->sc_calls_left--;
	if (hold_read_body(br->br_hold, c, PRECHECK_REQUEST_MAX, precheck_body,
	    precheck_body_err) == -1) {
		call_free(cl);
		http_conn_kill(c);
	}
}

#ifdef RTSANDBOX_FUZZING
void
broker_fuzz_rerun(struct broker *br, uint64_t calls, int ended)
{
	struct scope	*sc;

	if ((sc = scope_new(0, calls, proc_now_ms() + br->br_deadline_ms)) ==
	    NULL)
		fatal("%s", __func__);
	sc->sc_ended = ended;
	br->br_scope->sc_ended = 1;
	scope_unref(br->br_scope);
	br->br_scope = sc;
}
#endif
