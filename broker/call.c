/*
 * The broker's calls: each credential-bearing call from admission to its
 * end, the frame that hands it to egress, and the broker's rest once none
 * is left.  Shared by the worker's routes (broker.c) and a precheck run's
 * (precheck.c).
 */
#include <sys/queue.h>

#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "http.h"
#include "limits.h"
#include "log.h"
#include "proc.h"
#include "rebuild.h"
#include "role.h"
#include "validate.h"

#include "brokerpriv.h"

/*
 * Idle (DESIGN.md 12): BROKER_IDLE_MS after the last connection or call
 * ended, what the heap holds free, the stack below the loop and the read
 * buffers of both pipes go back to the kernel.  Re-armed by every end, so
 * a broker serving calls never wakes for it.
 */
void
broker_idle(evutil_socket_t fd, short what, void *arg)
{
	struct broker	*br = arg;

	if (!TAILQ_EMPTY(&br->br_calls) || (br->br_http != NULL &&
	    http_server_nconn(br->br_http) > 0))
		return;
	frame_conn_shrink(role_parent_conn(br->br_parent));
	frame_conn_shrink(br->br_egress);
	if (br->br_http != NULL)
		http_server_shrink(br->br_http);
	(void)malloc_trim(0);
	(void)proc_drop_stack();
}

void
broker_idle_later(struct broker *br)
{
	struct timeval	 tv = { BROKER_IDLE_MS / 1000,
	    (BROKER_IDLE_MS % 1000) * 1000 };

	if (br->br_idle != NULL && evtimer_add(br->br_idle, &tv) == -1)
		log_warnx("%s: evtimer_add", __func__);
}



/* Calls */

/* NULL when out of memory. */
struct call *
call_new(struct broker *br, enum call_kind kind, struct http_conn *c,
    struct scope *sc)
{
	struct call		*cl;
	struct conn_state	*cs;

	if ((cl = calloc(1, sizeof(*cl))) == NULL)
		return NULL;
	cl->cl_broker = br;
	cl->cl_id = ++br->br_next_id;
	cl->cl_kind = kind;
	cl->cl_conn = c;
	cl->cl_scope = sc;
	sc->sc_refs++;
	sc->sc_inflight++;
	clock_gettime(CLOCK_MONOTONIC, &cl->cl_start);
	TAILQ_INSERT_TAIL(&br->br_calls, cl, cl_entry);
	cs = conn_state(c);
	cs->cs_role = CONN_CALL;
	cs->cs_call = cl;
	return cl;
}

void
call_free(struct call *cl)
{
	struct broker	*br = cl->cl_broker;

	if (cl->cl_conn != NULL) {
		struct conn_state *cs = http_conn_get_data(cl->cl_conn);

		if (cs != NULL) {
			cs->cs_role = CONN_OTHER;
			cs->cs_call = NULL;
		}
	}
	cl->cl_scope->sc_inflight--;
	scope_unref(cl->cl_scope);
	TAILQ_REMOVE(&br->br_calls, cl, cl_entry);
	if (cl->cl_in_batch)
		TAILQ_REMOVE(&br->br_batch, cl, cl_batch_entry);
	free(cl);
	/* The read buffer for egress stays while calls come: broker_idle()
	 * gives it back. */
	if (TAILQ_EMPTY(&br->br_calls))
		broker_idle_later(br);
}

struct call *
call_find(struct broker *br, uint64_t id)
{
	struct call	*cl;

	TAILQ_FOREACH(cl, &br->br_calls, cl_entry)
		if (cl->cl_id == id)
			return cl;
	return NULL;
}

/*
 * A call egress could not complete.  A head of its that never reached the
 * worker (it came in the same read as this end) gives way to an answer of
 * the broker's own; once some of it went out, the body is cut (PROTOCOL.md
 * 3.2).
 */
void
call_fail(struct call *cl, int status, const char *text)
{
	if (cl->cl_conn != NULL) {
		if (!cl->cl_streaming)
			respond_text(cl->cl_conn, status, text);
		else if (http_stream_fail(cl->cl_conn, status, text) == -1)
			http_conn_kill(cl->cl_conn);
	}
	call_free(cl);
}

/*
 * Answer a call that never left the broker, and free it: 503 is "Broker
 * busy"; a 400 to a model call has Anthropic's error shape around why
 * (PROTOCOL.md 3.2: a 5xx would make the worker's client retry for
 * minutes); anything else is why as text.
 */
void
call_refuse(struct call *cl, int status, const char *why)
{
	struct http_conn	*c = cl->cl_conn;
	char			*eb;
	size_t			 eblen;

	if (c == NULL) {
		call_free(cl);
		return;
	}
	if (status == 503)
		respond_text(c, 503, BROKER_BUSY);
	else if (status == 400 && cl->cl_kind == CALL_MODEL) {
		if ((eb = rebuild_error_body(why, &eblen)) == NULL) {
			log_warnx("%s: out of memory", __func__);
			respond_text(c, 503, BROKER_BUSY);
		} else {
			respond_json(c, 400, eb, eblen);
			free(eb);
		}
	} else
		respond_text(c, status, why);
	call_free(cl);
}

/* Worker headers egress may copy (it re-applies every rule). */
static const char *const model_hdrs[] = {
	"anthropic-version", "anthropic-beta", "content-type", "accept",
	"user-agent", "x-app", NULL
};
static const char *const mcp_hdrs[] = {
	"mcp-session-id", "mcp-protocol-version", NULL
};

/* Egress reads each value with a bound of HEADER_VALUE_MAX * 4 bytes. */
_Static_assert(UTF8_BYTES_MAX(HEADER_VALUE_MAX) <= HEADER_VALUE_MAX * 4 &&
    MCP_HEADER_MAX <= HEADER_VALUE_MAX, "header values egress would refuse");

/*
 * Queue a call for egress: 0, or the status to answer instead: 400 for a
 * rebuilt body over what the edge carries (numbers can grow when
 * printed), 503 when the frame could not be queued.  Without h, none of
 * the worker's headers and no query go.
 */
int
egress_send_call(struct call *cl, const struct http_head *h,
    const char *kind, const char *path, const char *server,
    const char *body, size_t len)
{
	static const char *const none[] = { NULL };
	struct broker		*br = cl->cl_broker;
	const char *const	*names = h == NULL ? none :
	    cl->cl_kind == CALL_MODEL ? model_hdrs : mcp_hdrs;
	size_t			 max = cl->cl_kind == CALL_MODEL ?
	    HEADER_VALUE_MAX : MCP_HEADER_MAX;
	const char		*hn[8], *hv[8], *v;
	size_t			 n = 0, i;
	struct msgb		 mb;

	/*
	 * A value over its bound, not UTF-8 or with a control character is
	 * dropped, not refused: PROTOCOL.md 3.2 and 3.3 drop over-long values
	 * already, and the call does not need these headers.
	 */
	for (i = 0; names[i] != NULL; i++) {
		if ((v = http_head_get(h, names[i])) == NULL)
			continue;
		if (!http_value_copyable(v, max)) {
			log_debug("call %llu: %s dropped",
			    (unsigned long long)cl->cl_id, names[i]);
			continue;
		}
		hn[n] = names[i];
		hv[n++] = v;
	}
	if (len > edge_limits(PROC_BROKER, PROC_EGRESS)->fl_data_max) {
		log_info("call %llu: rebuilt body of %zu bytes too large",
		    (unsigned long long)cl->cl_id, len);
		return 400;
	}
	msgb_init(&mb, MSG_EGR_CALL, 0);
	msg_add_uint(&mb, "call", cl->cl_id);
	msg_add_str(&mb, "kind", kind);
	msg_add_str(&mb, "path", path);
	if (h != NULL && h->h_has_query)
		msg_add_str(&mb, "query", h->h_query);
	if (server != NULL)
		msg_add_str(&mb, "server", server);
	/* the scope egress checks the call against on its own */
	if (cl->cl_scope->sc_turn)
		msg_add_str(&mb, "turn_id", cl->cl_scope->sc_turn_id);
	msg_add_strv(&mb, "hnames", hn, n);
	msg_add_strv(&mb, "hvalues", hv, n);
	msg_add_data(&mb, body, len);
	if (msg_send(br->br_egress, &mb) == -1) {
		log_warnx("cannot queue call %llu for egress",
		    (unsigned long long)cl->cl_id);
		return 503;
	}
	return 0;
}

struct mcp_server *
mcp_find(struct broker *br, const char *name)
{
	size_t	 i;

	for (i = 0; i < br->br_nmcp; i++)
		if (strcmp(br->br_mcp[i].ms_name, name) == 0)
			return &br->br_mcp[i];
	return NULL;
}
