/*
 * The broker: one per started channel, the worker's only way out.  It holds
 * its listening socket and its two pipes, and nothing else.  It routes every
 * request of PROTOCOL.md 3 in its order of precedence, keeps the worker's
 * turn state, and hands credential-bearing calls to egress and host tool
 * calls to the supervisor.
 */
#include <sys/queue.h>

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "bodies.h"
#include "compaction.h"
#include "broker.h"
#include "hold.h"
#include "http.h"
#include "limits.h"
#include "log.h"
#include "proc.h"
#include "rebuild.h"
#include "role.h"
#include "validate.h"

#include "brokerpriv.h"



/* The answer of GET /mcp-tools; NULL when out of memory. */
static char *
mcp_tools_json(struct broker *br)
{
	cJSON	*res, *servers, *s, *tools, *t;
	char	*json = NULL;
	size_t	 i, j;

	if ((res = cJSON_CreateObject()) == NULL ||
	    (servers = cJSON_AddArrayToObject(res, "servers")) == NULL)
		goto done;
	for (i = 0; i < br->br_nmcp; i++) {
		if ((s = cJSON_CreateObject()) == NULL)
			goto done;
		if (!cJSON_AddItemToArray(servers, s)) {
			cJSON_Delete(s);
			goto done;
		}
		if (cJSON_AddStringToObject(s, "name",
		    br->br_mcp[i].ms_name) == NULL ||
		    (tools = cJSON_AddArrayToObject(s, "tools")) == NULL)
			goto done;
		for (j = 0; j < br->br_mcp[i].ms_ntools; j++)
			if ((t = cJSON_CreateString(
			    br->br_mcp[i].ms_tools[j])) == NULL ||
			    !cJSON_AddItemToArray(tools, t)) {
				cJSON_Delete(t);
				goto done;
			}
	}
	json = body_print(res);
 done:
	cJSON_Delete(res);
	return json;
}

static void
mcp_tools(struct broker *br, struct http_conn *c)
{
	char	*json;

	window_rearm(br);
	if ((json = mcp_tools_json(br)) == NULL) {
		log_warnx("%s: out of memory", __func__);
		respond_text(c, 503, BROKER_BUSY);
		return;
	}
	respond_json(c, 200, json, strlen(json));
	free(json);
}


static int
tool_allowed(struct broker *br, const char *name)
{
	size_t	 i;

	for (i = 0; i < br->br_ntools; i++)
		if (strcmp(br->br_tools[i], name) == 0)
			return 1;
	return 0;
}

/* The body of a credential-bearing call, read; the slot was taken at
 * admission and goes with the call. */
static void
call_use(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct broker		*br = arg;
	struct conn_state	*cs = conn_state(c);
	struct call		*cl = cs->cs_call;
	const struct http_head	*h = http_conn_head(c);
	struct mcp_server	*ms;
	struct rebuild_params	 rp;
	struct rebuild_trees	 rt = { NULL, NULL };
	struct msgb		 mb;
	cJSON			*input;
	const char		*why;
	char			 err[512], *out = NULL, *json, *owned;
	size_t			 outlen;
	int			 rc;

	switch (cl->cl_kind) {
	case CALL_MODEL:
		memset(&rp, 0, sizeof(rp));
		rp.model = br->br_model;
		rp.level = cl->cl_scope->sc_level;
		rp.max_output_tokens = br->br_max_output_tokens;
		rp.count_tokens = strcmp(h->h_path,
		    "/anthropic/v1/messages/count_tokens") == 0;
		/* freed once parsed: the body and its tree are not held at
		 * once */
		if ((owned = http_body_take(c, body)) != NULL) {
			body = owned;
			rp.free_body = 1;
		}
		/* the trees are freed once the call went out */
		rp.keep = &rt;
		rc = rebuild_model_request(body, len, &rp, &out, &outlen, err,
		    sizeof(err));
		if (rc == REBUILD_NOMEM) {
			log_warnx("model request: out of memory");
			call_refuse(cl, 503, NULL);
			return;
		}
		if (rc != 0) {
			log_info("model request refused: %s", err);
			call_refuse(cl, 400, err);
			return;
		}
		rc = egress_send_call(cl, h, "model", h->h_path +
		    strlen("/anthropic"), NULL, out, outlen);
		free(out);
		rebuild_trees_free(&rt);
		if (rc != 0) {
			call_refuse(cl, rc, "Request body is too large once "
			    "rebuilt");
			return;
		}
		sup_call(br, "model_call", h->h_path, cl->cl_scope->sc_turn ?
		    cl->cl_scope->sc_turn_id : NULL);
		return;
	case CALL_MCP:
		ms = mcp_find(br, h->h_path + strlen("/mcp/"));
		rc = rebuild_mcp_request(body, len,
		    (const char *const *)ms->ms_tools, ms->ms_ntools,
		    !cl->cl_scope->sc_turn, &out, &outlen, err, sizeof(err));
		if (rc == REBUILD_NOMEM) {
			log_warnx("MCP request: out of memory");
			call_refuse(cl, 503, NULL);
			return;
		}
		if (rc != 0) {
			log_info("MCP request refused: %s", err);
			if (rc == REBUILD_MCP_REFUSED)
				call_refuse(cl, 403, "MCP method refused");
			else
				call_refuse(cl, 400, BODY_INVALID_INPUT);
			return;
		}
		rc = egress_send_call(cl, h, "mcp", "", ms->ms_name, out,
		    outlen);
		free(out);
		if (rc != 0) {
			call_refuse(cl, rc, BODY_INVALID_INPUT);
			return;
		}
		sup_call(br, "mcp_call", h->h_path, cl->cl_scope->sc_turn ?
		    cl->cl_scope->sc_turn_id : NULL);
		return;
	case CALL_PRECHECK:
		/* precheck.c reads its own bodies */
		break;
	case CALL_TOOL:
		switch (body_tool_input(body, len, &input, &why, err,
		    sizeof(err))) {
		case BODY_OK:
			break;
		case BODY_NOMEM:
			log_warnx("tool input: out of memory");
			call_refuse(cl, 503, NULL);
			return;
		default:
			call_refuse(cl, 400, why);
			return;
		}
		json = body_print(input);
		cJSON_Delete(input);
		if (json == NULL) {
			log_warnx("tool input: out of memory");
			call_refuse(cl, 503, NULL);
			return;
		}
		/* Printed numbers can be longer than the worker wrote them. */
		if (strlen(json) > edge_limits(PROC_BROKER,
		    PROC_SUPERVISOR)->fl_data_max) {
			log_info("tool input refused: %zu bytes once printed",
			    strlen(json));
			free(json);
			call_refuse(cl, 400, BODY_INVALID_INPUT);
			return;
		}
		/* Identity fields the worker sent are not passed on: the
		 * supervisor adds the bound ones. */
		msgb_init(&mb, MSG_BRK_TOOL_CALL, cl->cl_id);
		msg_add_str(&mb, "turn_id", cl->cl_scope->sc_turn_id);
		msg_add_str(&mb, "name", h->h_path + strlen("/tools/"));
		msg_add_data(&mb, json, strlen(json));
		rc = sup_send(br, &mb);
		free(json);
		if (rc == -1) {
			call_refuse(cl, 503, NULL);
			return;
		}
		sup_event(br, "tool_call", h->h_path, 0, NULL);
		return;
	}
}

/* Once the body was used, the next may be read. */
static void
call_body(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct broker	*br = arg;

	call_use(c, body, len, arg);
	hold_done(br->br_hold, c);
}

static void
call_body_err(struct http_conn *c, enum http_body_err e, void *arg)
{
	struct broker		*br = arg;
	struct conn_state	*cs = conn_state(c);
	struct call		*cl = cs->cs_call;

	hold_done(br->br_hold, c);
	if (cl == NULL)
		return;
	/* Over the limit or badly framed: the same 400 for every route. */
	respond_body_err(c, e, BODY_INVALID_INPUT);
	call_free(cl);
}

static int
is_model_path(const char *p)
{
	return strcmp(p, "/anthropic/v1/messages") == 0 ||
	    strcmp(p, "/anthropic/v1/messages/count_tokens") == 0;
}

static void
broker_on_head(struct http_conn *c, const struct http_head *h, void *arg)
{
	struct broker		*br = arg;
	struct conn_state	*cs;
	struct scope		*sc;
	struct call		*cl;
	const char		*p = h->h_path;
	enum call_kind		 kind;
	int			 mcp_known, tool_known, model;
	size_t			 max;

	if ((cs = calloc(1, sizeof(*cs))) == NULL) {
		log_warnx("%s: out of memory", __func__);
		respond_text(c, 503, BROKER_BUSY);
		return;
	}
	http_conn_set_data(c, cs);
	if (br->br_precheck) {
		precheck_route(br, c, h);
		return;
	}
	/* 1. fragments, and queries other than ?beta=true */
	if (h->h_has_fragment || (h->h_has_query &&
	    strcmp(h->h_query, "beta=true") != 0)) {
		respond_text(c, 404, "Not found");
		return;
	}
	/* 2. the worker's own routes */
	if (strncmp(p, "/worker/", 8) == 0 && !h->h_has_query) {
		worker_route(br, c, h);
		return;
	}
	/* 3. discovery */
	if (strcmp(p, "/mcp-tools") == 0 && strcmp(h->h_method, "GET") == 0 &&
	    !h->h_has_query) {
		mcp_tools(br, c);
		return;
	}
	/* 3b. compaction, for the bound turn */
	if (strncmp(p, "/compaction/", 12) == 0 && !h->h_has_query &&
	    (strcmp(p + 12, "compact") == 0 || strcmp(p + 12, "report") == 0)) {
		compact_route(br, c, h);
		return;
	}
	/* 4. a scope in force */
	if ((sc = scope_current(br)) == NULL) {
		respond_text(c, 410, "Turn ended");
		return;
	}
	mcp_known = strncmp(p, "/mcp/", 5) == 0 && mcp_find(br, p + 5) != NULL;
	tool_known = strncmp(p, "/tools/", 7) == 0 && tool_allowed(br, p + 7);
	model = is_model_path(p);
	/* 5. the startup window serves MCP metadata only */
	if (!sc->sc_turn && !mcp_known) {
		respond_text(c, 410, "Turn ended");
		return;
	}
	/* 6. what is not a call */
	if (strcmp(h->h_method, "POST") != 0 ||
	    (!model && !mcp_known && !tool_known) ||
	    (h->h_has_query && !model)) {
		respond_text(c, 404, "Not found");
		return;
	}
	/* 7. the budget */
	if (sc->sc_calls_left == 0 || sc->sc_inflight >= SCOPE_INFLIGHT_MAX) {
		respond_text(c, 429, "Broker budget exhausted");
		return;
	}
	/* 8. consume one call and dispatch */
	if (model) {
		kind = CALL_MODEL;
		max = MODEL_BODY_MAX;
	} else if (mcp_known) {
		kind = CALL_MCP;
		max = MCP_BODY_MAX;
	} else {
		kind = CALL_TOOL;
		max = TOOL_BODY_MAX;
	}
	if ((cl = call_new(br, kind, c, sc)) == NULL) {
		/* Not a call: the budget is left as it was. */
		log_warnx("%s: out of memory", __func__);
		respond_text(c, 503, BROKER_BUSY);
		return;
	}
	sc->sc_calls_left--;
	if (hold_read_body(br->br_hold, c, max, call_body,
	    call_body_err) == -1) {
		call_free(cl);
		http_conn_kill(c);
	}
}

static void
broker_on_close(struct http_conn *c, void *arg)
{
	struct broker		*br = arg;
	struct conn_state	*cs = http_conn_get_data(c);
	struct call		*cl;
	struct msgb		 mb;

	hold_done(br->br_hold, c);
	if (br->br_poll == c)
		br->br_poll = NULL;
	if (br->br_receiving == c)
		br->br_receiving = NULL;
	/* The supervisor still answers; the answer goes nowhere. */
	if (br->br_compact_conn == c)
		br->br_compact_conn = NULL;
	if (cs != NULL && cs->cs_role == CONN_CALL &&
	    (cl = cs->cs_call) != NULL) {
		/* The worker left: the call goes on no more. */
		cl->cl_conn = NULL;
		if (cl->cl_kind != CALL_TOOL) {
			msgb_init(&mb, MSG_EGR_CANCEL, 0);
			msg_add_uint(&mb, "call", cl->cl_id);
			/* What egress still sends for it is dropped. */
			if (msg_send(br->br_egress, &mb) == -1)
				log_warnx("cannot queue a cancel of call %llu "
				    "for egress", (unsigned long long)cl->cl_id);
			call_free(cl);
		}
		/* A tool call is freed when its answer comes. */
	}
	free(cs);
	http_conn_set_data(c, NULL);
	broker_idle_later(br);
}

/* From egress */

/* Tell egress the worker took these bytes, so it may send more. */
static void
call_ack(struct broker *br, struct call *cl)
{
	struct msgb	 mb;

	if (cl->cl_unacked == 0)
		return;
	msgb_init(&mb, MSG_EGR_ACK, 0);
	msg_add_uint(&mb, "call", cl->cl_id);
	msg_add_uint(&mb, "bytes", cl->cl_unacked);
	cl->cl_unacked = 0;
	/* Without its ack the stream would stall: cut it, the worker's
	 * client sees a truncated body (PROTOCOL.md 3.2). */
	if (msg_send(br->br_egress, &mb) == -1) {
		log_warnx("cannot queue an ack of call %llu for egress",
		    (unsigned long long)cl->cl_id);
		if (cl->cl_conn != NULL)
			http_conn_kill(cl->cl_conn);
	}
}

static void
call_drained(struct http_conn *c, void *arg)
{
	struct conn_state	*cs = http_conn_get_data(c);

	if (cs != NULL && cs->cs_call != NULL)
		call_ack(arg, cs->cs_call);
}

static int
egress_head(struct broker *br, struct call *cl, struct msg *m)
{
	const char	**hn, **hv;
	struct http_hdr	 hdrs[32];
	size_t		 n, nv, i;
	uint64_t	 status;

	if (msg_get_uint(m, "status", 200, 599, &status) == -1 ||
	    msg_get_strv(m, "hnames", 32, 128, &hn, &n) == -1 ||
	    msg_get_strv(m, "hvalues", 32, 1024, &hv, &nv) == -1 ||
	    msg_end(m) == -1 || n != nv)
		return -1;
	/* A connection closed in this same turn of the loop cannot start
	 * an answer: its on_close is due, and the body goes nowhere. */
	cl->cl_headed = 1;
	if (cl->cl_conn == NULL)
		return 0;
	for (i = 0; i < n; i++) {
		hdrs[i].name = hn[i];
		hdrs[i].value = hv[i];
	}
	if (status == 204 || status == 205 || status == 304) {
		cl->cl_nobody = 1;
		if (http_respond_hdrs(cl->cl_conn, status, hdrs, n, NULL, 0) ==
		    -1)
			http_conn_kill(cl->cl_conn);
		return 0;
	}
	if (http_stream_start(cl->cl_conn, status, hdrs, n) == -1) {
		http_conn_kill(cl->cl_conn);
		return 0;
	}
	cl->cl_streaming = 1;
	http_conn_set_drain(cl->cl_conn, BROKER_ACK_LOWAT, call_drained);
	return 0;
}

static void
broker_dispatch_egress(struct frame_conn *fc, struct frame *f, void *arg)
{
	struct broker	*br = arg;
	struct call	*cl;
	struct msg	 m;
	const uint8_t	*data;
	const char	*err = NULL;
	size_t		 len;
	uint64_t	 id, status = 502;
	int		 ok, have;

	if (msg_parse(&m, PROC_EGRESS, PROC_BROKER, f) == -1 ||
	    msg_get_uint(&m, "call", 1, UINT64_C(1) << 53, &id) == -1)
		fatalx("protocol violation from egress: %s", m.m_err);
	/* What the frames of one read make the broker write goes out at
	 * its end (broker_egress_batch), one write per connection. */
	if (br->br_http != NULL)
		http_server_cork(br->br_http);
	if ((cl = call_find(br, id)) == NULL || cl->cl_kind == CALL_TOOL) {
		/* cancelled meanwhile: what was in flight is dropped */
		msg_free(&m);
		return;
	}
	switch (m.m_type) {
	case MSG_EGR_HEAD:
		if (cl->cl_headed || egress_head(br, cl, &m) == -1)
			fatalx("egress: bad head for call %llu: %s",
			    (unsigned long long)id, m.m_err);
		break;
	case MSG_EGR_DATA:
		if (msg_get_data(&m, &data, &len) == -1 || msg_end(&m) == -1 ||
		    !cl->cl_headed)
			fatalx("egress: bad data for call %llu",
			    (unsigned long long)id);
		cl->cl_unacked += len;
		if (cl->cl_streaming && cl->cl_conn != NULL &&
		    http_stream_write(cl->cl_conn, data, len) == -1)
			http_conn_kill(cl->cl_conn);
		/* Acked, if at all, once what this read brought is written. */
		if (!cl->cl_in_batch) {
			TAILQ_INSERT_TAIL(&br->br_batch, cl, cl_batch_entry);
			cl->cl_in_batch = 1;
		}
		break;
	case MSG_EGR_END:
		if (msg_get_bool(&m, "ok", &ok) == -1 ||
		    msg_get_uint_opt(&m, "status", 400, 599, &status, &have) ==
		    -1 || msg_get_str_opt(&m, "error", 512, &err) == -1 ||
		    msg_end(&m) == -1)
			fatalx("egress: bad end: %s", m.m_err);
		if (ok) {
			if (cl->cl_streaming && cl->cl_conn != NULL)
				http_stream_end(cl->cl_conn);
			call_free(cl);
		} else
			call_fail(cl, (int)status, err != NULL &&
			    strcmp(err, "upstream_refused") == 0 ?
			    "Upstream refused" : "Broker call failed");
		break;
	default:
		fatalx("protocol violation from egress: %s",
		    msg_type_name(m.m_type));
	}
	msg_free(&m);
}

/*
 * The frames of one read are in: write what they made, then ack what went
 * to the worker, or went nowhere.  Bytes no worker reads are acked at
 * once.
 */
static void
broker_egress_batch(struct frame_conn *fc, void *arg)
{
	struct broker	*br = arg;
	struct call	*cl;

	if (br->br_http != NULL)
		http_server_uncork(br->br_http);
	while ((cl = TAILQ_FIRST(&br->br_batch)) != NULL) {
		TAILQ_REMOVE(&br->br_batch, cl, cl_batch_entry);
		cl->cl_in_batch = 0;
		if (cl->cl_conn == NULL || !cl->cl_streaming ||
		    (cl->cl_unacked >= BROKER_ACK_BATCH &&
		    http_conn_pending(cl->cl_conn) <= BROKER_ACK_LOWAT))
			call_ack(br, cl);
	}
}

static void
broker_egress_err(struct frame_conn *fc, enum frame_err err, void *arg)
{
	/* Without egress the broker cannot serve; the supervisor restarts
	 * the channel. */
	fatalx("pipe to egress: %s", frame_err_to_string(err));
}

/* From the supervisor */

static int
broker_config(struct broker *br, struct msg *m)
{
	const char	*channel, *profile, *model, **tools, *engine = NULL;
	size_t		 n, i;
	int		 have, precheck;

	/* A run has no compactor (its fields stay unread: msg_end refuses
	 * them) and no host tool. */
	if (precheck_config(br, m, &precheck) == -1 ||
	    msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &channel) == -1 ||
	    msg_get_str(m, "profile", PROFILE_NAME_MAX, &profile) == -1 ||
	    msg_get_str(m, "model", MODEL_NAME_BYTES_MAX, &model) == -1 ||
	    msg_get_uint(m, "max_calls",
	    precheck ? PRECHECK_CALLS_MIN : MAX_CALLS_MIN,
	    precheck ? PRECHECK_CALLS_MAX : MAX_CALLS_MAX,
	    &br->br_max_calls) == -1 ||
	    msg_get_uint(m, "max_output_tokens", MAX_OUTPUT_TOKENS_MIN,
	    MAX_OUTPUT_TOKENS_MAX, &br->br_max_output_tokens) == -1 ||
	    msg_get_strv(m, "tools", HOST_TOOLS_MAX, HOST_TOOL_NAME_MAX,
	    &tools, &n) == -1 || (precheck && n != 0) ||
	    (!precheck && (msg_get_str_opt(m, "compaction_engine",
	    COMPACT_ENGINE_MAX, &engine) == -1 ||
	    msg_get_uint_opt(m, "compaction_timeout_ms",
	    COMPACT_TIMEOUT_MS_MIN, COMPACT_TIMEOUT_MS_MAX,
	    &br->br_compact_timeout_ms, &have) == -1 ||
	    (engine != NULL && !have) ||
	    msg_get_uint_opt(m, "compaction_max_bytes", 1,
	    COMPACT_REQUEST_BYTES_MAX, &br->br_compact_max, &have) == -1 ||
	    (engine != NULL && !have))) ||
	    msg_get_fd(m, &br->br_listen_fd) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if (engine != NULL) {
		if (!compact_engine_valid(engine, strlen(engine)))
			return -1;
		br->br_compact_engine = xstrdup(engine);
	}
	br->br_channel = xstrdup(channel);
	br->br_profile = xstrdup(profile);
	br->br_model = xstrdup(model);
	if ((br->br_tools = calloc(n + 1, sizeof(char *))) == NULL)
		fatal("%s", __func__);
	for (i = 0; i < n; i++) {
		if (!valid_host_tool_name(tools[i], strlen(tools[i])))
			return -1;
		br->br_tools[i] = xstrdup(tools[i]);
	}
	br->br_ntools = n;
	return 0;
}

static int
broker_config_mcp(struct broker *br, struct msg *m)
{
	struct mcp_server	*ms;
	const char		*name, **tools;
	size_t			 n, i;

	if (br->br_nmcp == MCP_SERVERS_PER_PROFILE ||
	    (br->br_precheck && br->br_nmcp == PRECHECK_SERVERS_MAX) ||
	    msg_get_str(m, "name", MCP_SERVER_NAME_MAX, &name) == -1 ||
	    msg_get_strv(m, "tools", MCP_TOOLS_PER_SERVER, TOOL_USE_NAME_MAX,
	    &tools, &n) == -1 || msg_end(m) == -1 ||
	    !valid_mcp_server_name(name, strlen(name)))
		return -1;
	ms = &br->br_mcp[br->br_nmcp++];
	ms->ms_name = xstrdup(name);
	if ((ms->ms_tools = calloc(n + 1, sizeof(char *))) == NULL)
		fatal("%s", __func__);
	for (i = 0; i < n; i++)
		ms->ms_tools[i] = xstrdup(tools[i]);
	ms->ms_ntools = n;
	return 0;
}

static int
broker_bind(struct broker *br, struct msg *m)
{
	const char	*turn_id, *thinking;
	uint64_t	 deadline_ms, calls;
	enum rebuild_level level;
	struct scope	*sc;

	if (msg_get_str(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
	    &turn_id) == -1 ||
	    msg_get_str(m, "thinking", 8, &thinking) == -1 ||
	    msg_get_uint(m, "deadline_ms", 1, TIMEOUT_MS_MAX,
	    &deadline_ms) == -1 ||
	    msg_get_uint(m, "max_calls", MAX_CALLS_MIN, MAX_CALLS_MAX,
	    &calls) == -1 ||
	    msg_end(m) == -1 || rebuild_level_parse(thinking, &level) == -1)
		return -1;
	if ((sc = scope_new(1, calls, proc_now_ms() + deadline_ms)) == NULL)
		fatal("%s", __func__);
	sc->sc_turn_id = xstrdup(turn_id);
	sc->sc_level = level;
	/* The first bind removes the startup window. */
	if (br->br_scope != NULL)
		br->br_scope->sc_ended = 1;
	scope_unref(br->br_scope);
	br->br_scope = sc;
	log_debug("turn %s bound (%s, %llu ms)", turn_id, thinking,
	    (unsigned long long)deadline_ms);
	return 0;
}

/*
 * PROTOCOL.md 3.1: a result being read when its turn ends is "read
 * aborted ... → 400 Invalid result", answered before the connection goes.
 */
static void
result_abort(struct broker *br, const char *turn_id)
{
	struct http_conn	*c = br->br_receiving;
	struct conn_state	*cs;

	if (c == NULL || br->br_turn_id == NULL ||
	    strcmp(br->br_turn_id, turn_id) != 0)
		return;
	br->br_receiving = NULL;
	if ((cs = http_conn_get_data(c)) != NULL)
		cs->cs_role = CONN_OTHER;
	log_info("turn %s ended while its result was read", turn_id);
	respond_text(c, 400, "Invalid result");
}

static int
broker_unbind(struct broker *br, struct msg *m)
{
	const char	*turn_id;

	if (msg_get_str(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
	    &turn_id) == -1 || msg_end(m) == -1)
		return -1;
	result_abort(br, turn_id);
	sup_untold_drop(br, turn_id);
	if (br->br_scope != NULL && br->br_scope->sc_turn &&
	    strcmp(br->br_scope->sc_turn_id, turn_id) == 0) {
		br->br_scope->sc_ended = 1;
		scope_unref(br->br_scope);
		br->br_scope = NULL;
	}
	if (br->br_turn_id != NULL && strcmp(br->br_turn_id, turn_id) == 0) {
		free(br->br_turn_id);
		free(br->br_turn_json);
		br->br_turn_id = br->br_turn_json = NULL;
	}
	log_debug("turn %s unbound", turn_id);
	return 0;
}

static int
broker_submit(struct broker *br, struct msg *m)
{
	const char	*turn_id, *need;
	const uint8_t	*data;
	size_t		 len;
	int		 private;

	if (msg_get_str(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
	    &turn_id) == -1 || msg_get_bool(m, "private", &private) == -1 ||
	    msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1 ||
	    br->br_turn_id != NULL)
		return -1;
	br->br_turn_id = xstrdup(turn_id);
	br->br_turn_private = private;
	if ((br->br_turn_json = malloc(len)) == NULL)
		fatal("%s", __func__);
	memcpy(br->br_turn_json, data, len);
	br->br_turn_len = len;
	br->br_turn_delivered = 0;
	br->br_turn_cancelled = 0;
	/* Known stale now: the turn fails at once, not when polled. */
	if (br->br_ready && (need = turn_stale_need(br)) != NULL) {
		worker_stale(br, need);
		return 0;
	}
	if (br->br_poll != NULL) {
		struct http_conn	*c = br->br_poll;

		br->br_poll = NULL;
		conn_state(c)->cs_role = CONN_OTHER;
		http_conn_set_timer(c, 0, NULL);
		/* A worker that died while it waited never gets the turn:
		 * it stays for the next poll (delivered at most once). */
		if (http_conn_alive(c))
			turn_deliver(br, c);
		else
			http_conn_kill(c);
	}
	return 0;
}

static int
broker_cancel(struct broker *br, struct msg *m)
{
	const char	*turn_id;

	if (msg_get_str(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
	    &turn_id) == -1 || msg_end(m) == -1)
		return -1;
	result_abort(br, turn_id);
	if (br->br_turn_id != NULL && strcmp(br->br_turn_id, turn_id) == 0)
		br->br_turn_cancelled = 1;
	return 0;
}

static int
broker_tool_answer(struct broker *br, struct msg *m)
{
	struct call	*cl;
	const uint8_t	*data;
	size_t		 len;
	int		 ok, private;

	if (msg_get_bool(m, "ok", &ok) == -1 ||
	    msg_get_bool(m, "private", &private) == -1 ||
	    msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1)
		return -1;
	if ((cl = call_find(br, m->m_id)) == NULL || cl->cl_kind != CALL_TOOL)
		return -1;
	/* An answer only one principal may read, never to a worker that
	 * cannot keep it so: refused without a byte of it. */
	if (private && !worker_private_ok(br)) {
		if (cl->cl_conn != NULL)
			respond_text(cl->cl_conn, 409, "Worker image is stale");
		if (br->br_turn_id != NULL)
			worker_stale(br, "a private tool answer");
		call_free(cl);
		return 0;
	}
	if (cl->cl_conn != NULL) {
		if (ok)
			respond_json(cl->cl_conn, 200, (const char *)data, len);
		else
			respond_text(cl->cl_conn, 502, "Broker call failed");
	}
	call_free(cl);
	return 0;
}

static int
broker_dispatch_supervisor(struct role_parent *rp, struct msg *m, void *arg)
{
	struct broker	*br = arg;

	switch (m->m_type) {
	case MSG_CONFIG_BROKER:
		if (role_parent_configured(rp) || br->br_channel != NULL)
			return -1;
		return broker_config(br, m);
	case MSG_CONFIG_BROKER_MCP:
		if (role_parent_configured(rp) || br->br_channel == NULL)
			return -1;
		return broker_config_mcp(br, m);
	default:
		break;
	}
	/* A run is no turn: the supervisor sends it none of these. */
	if (!role_parent_configured(rp) || br->br_precheck)
		return -1;
	switch (m->m_type) {
	case MSG_BRK_BIND:
		return broker_bind(br, m);
	case MSG_BRK_UNBIND:
		return broker_unbind(br, m);
	case MSG_BRK_SUBMIT:
		return broker_submit(br, m);
	case MSG_BRK_CANCEL:
		return broker_cancel(br, m);
	case MSG_BRK_TOOL_ANSWER:
		return broker_tool_answer(br, m);
	case MSG_BRK_COMPACTED:
		return broker_compacted(br, m);
	default:
		return -1;
	}
}

/* Frames queued for egress and the supervisor, not yet written. */
static size_t
broker_frames_pending(void *arg)
{
	struct broker	*br = arg;

	return frame_conn_pending(br->br_egress) +
	    frame_conn_pending(role_parent_conn(br->br_parent));
}

static void
broker_frames_drained(void *arg)
{
	struct broker	*br = arg;

	if (br->br_hold != NULL)
		hold_kick(br->br_hold);
}

static void
broker_egress_drained(struct frame_conn *fc, void *arg)
{
	broker_frames_drained(arg);
}

static const char *
broker_configured(struct role_parent *rp, void *arg)
{
	static const struct http_server_cbs cbs = {
		broker_on_head, broker_on_close
	};
	struct broker		*br = arg;
	struct http_limits	 lim;

	if (br->br_channel == NULL)
		return "no configuration";
	http_limits_default(&lim);
#ifdef RTSANDBOX_FUZZING
	/* fuzz_broker's inputs are thousands of workers a second on one
	 * broker: resting would leave most of them unserved. */
	lim.hl_refusals = 0;
#endif
	br->br_http = http_server_new(br->br_base, br->br_listen_fd, &cbs, br,
	    &lim);
	if (br->br_http == NULL)
		return "cannot serve the listening socket";
	if ((br->br_hold = hold_new(br->br_base, BROKER_BODY_HOLD_MAX,
	    broker_frames_pending, br)) == NULL)
		return "out of memory";
	/* a body that waits is let in once the queues are empty */
	frame_conn_set_drain_cb(br->br_egress, broker_egress_drained, 1);
	role_parent_set_drain(br->br_parent, broker_frames_drained, br);
	/* The startup window exists when the broker starts; a run's one
	 * scope, made now, is all it ever has. */
	if (br->br_precheck) {
		const char	*why;

		if ((why = precheck_start(br)) != NULL)
			return why;
	} else
		window_rearm(br);
	log_info("serving %s (profile %s)", br->br_channel, br->br_profile);
	/* The pages of code only start-up ran go back now, what reading the
	 * configuration left free once the loop is idle: a thousand idle
	 * brokers are most of the daemon (DESIGN.md 12). */
	(void)proc_drop_text();
	broker_idle_later(br);
	return NULL;
}

struct broker *
broker_start(struct event_base *base, int egress_fd)
{
	struct broker	*br;

	if ((br = calloc(1, sizeof(*br))) == NULL)
		fatal("%s", __func__);
	br->br_listen_fd = -1;
	TAILQ_INIT(&br->br_calls);
	TAILQ_INIT(&br->br_batch);
	br->br_base = base;
	br->br_parent = role_parent_open(base, PROC_BROKER,
	    broker_dispatch_supervisor, broker_configured, br);
	br->br_egress = frame_conn_new(base, egress_fd,
	    edge_limits(PROC_EGRESS, PROC_BROKER),
	    edge_limits(PROC_BROKER, PROC_EGRESS),
	    broker_dispatch_egress, broker_egress_err, br);
	if (br->br_egress == NULL)
		fatalx("cannot watch the egress pipe");
	frame_conn_set_batch_cb(br->br_egress, broker_egress_batch);
	/* Room for the rest of a frame and the next few besides. */
	frame_conn_set_read_size(br->br_egress, BROKER_EGRESS_READ);
	if ((br->br_idle = evtimer_new(base, broker_idle, br)) == NULL ||
	    (br->br_tell = evtimer_new(base, sup_tell, br)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	return br;
}
