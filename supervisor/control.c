/*
 * The control socket: the host application's API.  Lines are parsed as they
 * complete; a line over the limit is answered with an error and closes that
 * connection only.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "bodies.h"
#include "control.h"
#include "limits.h"
#include "log.h"
#include "supervisor.h"
#include "validate.h"

/* An id in JSON-RPC is a number or a string; a string id is bounded. */
#define CTL_ID_MAX	1024

struct ctl_req {
	TAILQ_ENTRY(ctl_req)	 cr_entry;
	struct ctl_client	*cr_client;
	cJSON			*cr_id;		/* NULL for a notification */
	ctl_cancel_fn		 cr_cancel;
	void			*cr_cancel_arg;
	/* inside its cancel callback: an answer there is kept for after */
	int			 cr_cancelling;
	int			 cr_answered;
	int			 cr_may_defer;
	int			 cr_deferred;
};

struct ctl_call {
	TAILQ_ENTRY(ctl_call)	 cl_entry;
	struct ctl_client	*cl_client;
	uint64_t		 cl_id;
	ctl_call_cb		 cl_cb;
	void			*cl_arg;
};

struct ctl_client {
	TAILQ_ENTRY(ctl_client)	 cc_entry;
	TAILQ_HEAD(, ctl_call)	 cc_calls;
	uint64_t		 cc_next_call;
	struct bufferevent	*cc_bev;	/* writes only */
	struct event		*cc_rev;	/* ctl_read() */
	char			*cc_buf;	/* the line being read */
	size_t			 cc_len, cc_cap;
	size_t			 cc_scanned;	/* bytes known to hold no EOL */
	int			 cc_closing;	/* flush, then close */
	int			 cc_initialized;
	uint64_t		 cc_init_seq;	/* order of initialize */
	char			*cc_name;
	unsigned		 cc_hooks;
	TAILQ_HEAD(, ctl_req)	 cc_reqs;
	struct evbuffer		*cc_pending;	/* lines for ctl_flush() */
	int			 cc_flush_queued;
	TAILQ_ENTRY(ctl_client)	 cc_flush_entry;
};

static TAILQ_HEAD(, ctl_client)	 ctl_clients =
    TAILQ_HEAD_INITIALIZER(ctl_clients);
static struct evconnlistener	*ctl_listener;
static char			*ctl_path;
/* Out of descriptors or memory, accept is retried this often. */
#define CTL_ACCEPT_PAUSE_MS	100
static struct event		*ctl_accept_timer;
static int			 ctl_accept_paused;
/* Clients with lines for ctl_flush(), and the event that runs it. */
static TAILQ_HEAD(, ctl_client)	 ctl_flush_list =
    TAILQ_HEAD_INITIALIZER(ctl_flush_list);
static struct event		*ctl_flush_ev;

static void	ctl_client_free(struct ctl_client *);
/* A control client's line buffer has at least this room for a read. */
#define CTL_READ_MIN	4096

uint64_t
control_clients(void)
{
	struct ctl_client	*cc;
	uint64_t		 n = 0;

	TAILQ_FOREACH(cc, &ctl_clients, cc_entry)
		n++;
	return n;
}

/*
 * The lines a client is sent in one round of the loop leave in one
 * writev(2), once the callbacks of that round are done: the turn.progress
 * notifications that fall together (starting and container, result and
 * the answer) cost one system call.  Only what the socket does not take
 * is queued for the bufferevent: a queued line costs the loop two
 * epoll_ctl(2) and a wake-up.  A failed write queues it all, and the
 * bufferevent's own write meets the error and ends the client.
 */
static void
ctl_flush_one(struct ctl_client *cc)
{
	struct evbuffer	*out = bufferevent_get_output(cc->cc_bev);

	TAILQ_REMOVE(&ctl_flush_list, cc, cc_flush_entry);
	cc->cc_flush_queued = 0;
	while (evbuffer_get_length(cc->cc_pending) > 0 &&
	    evbuffer_write(cc->cc_pending, bufferevent_getfd(cc->cc_bev)) > 0)
		;
	if (evbuffer_get_length(cc->cc_pending) > 0 &&
	    evbuffer_add_buffer(out, cc->cc_pending) == -1) {
		log_warnx("%s: out of memory queueing an answer", __func__);
		evbuffer_drain(cc->cc_pending,
		    evbuffer_get_length(cc->cc_pending));
		cc->cc_closing = 1;
	}
}

static void
ctl_maybe_close(struct ctl_client *);

static void
ctl_flush(evutil_socket_t fd, short ev, void *arg)
{
	struct ctl_client	*cc;

	while ((cc = TAILQ_FIRST(&ctl_flush_list)) != NULL) {
		ctl_flush_one(cc);
		ctl_maybe_close(cc);
	}
}

static void
ctl_send(struct ctl_client *cc, cJSON *obj)
{
	struct evbuffer	*out = bufferevent_get_output(cc->cc_bev);
	struct evbuffer	*to = out;
	char		*s;
	size_t		 len;

	if ((s = body_print(obj)) == NULL) {
		log_warnx("%s: out of memory serialising an answer", __func__);
		cc->cc_closing = 1;
		return;
	}
	len = strlen(s);
	/* After what the bufferevent already holds, if anything. */
	if (evbuffer_get_length(out) == 0) {
		to = cc->cc_pending;
		if (!cc->cc_flush_queued) {
			TAILQ_INSERT_TAIL(&ctl_flush_list, cc, cc_flush_entry);
			cc->cc_flush_queued = 1;
			event_active(ctl_flush_ev, EV_WRITE, 1);
		}
	}
	if (evbuffer_add(to, s, len) == -1 || evbuffer_add(to, "\n", 1) == -1) {
		log_warnx("%s: out of memory queueing an answer", __func__);
		cc->cc_closing = 1;
	}
	free(s);
}

/* Answer with an error outside any request (parse errors, long lines). */
static void
ctl_send_error(struct ctl_client *cc, const cJSON *id, int code,
    const char *msg)
{
	cJSON	*o, *e;

	sv->sv_count.sc_errors++;
	if ((o = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL)
		goto fail;
	if (id != NULL) {
		if (!cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1)))
			goto fail;
	} else if (cJSON_AddNullToObject(o, "id") == NULL)
		goto fail;
	if ((e = cJSON_AddObjectToObject(o, "error")) == NULL ||
	    cJSON_AddNumberToObject(e, "code", code) == NULL ||
	    cJSON_AddStringToObject(e, "message", msg) == NULL)
		goto fail;
	ctl_send(cc, o);
	cJSON_Delete(o);
	return;
 fail:
	cJSON_Delete(o);
	cc->cc_closing = 1;
}

static void
ctl_req_free(struct ctl_req *cr)
{
	if (cr->cr_cancelling) {
		cr->cr_answered = 1;
		return;
	}
	TAILQ_REMOVE(&cr->cr_client->cc_reqs, cr, cr_entry);
	cJSON_Delete(cr->cr_id);
	free(cr);
}

void
ctl_reply(struct ctl_req *cr, cJSON *result)
{
	cJSON	*o;

	if (cr->cr_id == NULL) {
		cJSON_Delete(result);
		ctl_req_free(cr);
		return;
	}
	if (result == NULL)
		result = cJSON_CreateObject();
	if ((o = cJSON_CreateObject()) == NULL || result == NULL ||
	    cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL ||
	    !cJSON_AddItemToObject(o, "id", cJSON_Duplicate(cr->cr_id, 1))) {
		cJSON_Delete(o);
		cJSON_Delete(result);
		ctl_error(cr, RPC_INTERNAL_ERROR, "out of memory");
		return;
	}
	cJSON_AddItemToObject(o, "result", result);
	ctl_send(cr->cr_client, o);
	cJSON_Delete(o);
	ctl_req_free(cr);
}

void
ctl_error(struct ctl_req *cr, int code, const char *fmt, ...)
{
	char	 msg[1024];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cr->cr_id != NULL)
		ctl_send_error(cr->cr_client, cr->cr_id, code, msg);
	ctl_req_free(cr);
}

void
ctl_set_cancel(struct ctl_req *cr, ctl_cancel_fn fn, void *arg)
{
	cr->cr_cancel = fn;
	cr->cr_cancel_arg = arg;
}

struct ctl_client *
ctl_req_client(struct ctl_req *cr)
{
	return cr->cr_client;
}

void
ctl_client_initialized(struct ctl_client *cc, const char *name,
    unsigned hooks)
{
	static uint64_t	 seq;

	free(cc->cc_name);
	if ((cc->cc_name = strdup(name)) == NULL)
		fatal("%s", __func__);
	cc->cc_hooks = hooks;
	cc->cc_initialized = 1;
	cc->cc_init_seq = ++seq;
}

struct ctl_client *
ctl_client_with_hook(unsigned hook)
{
	struct ctl_client	*cc, *best = NULL;

	TAILQ_FOREACH(cc, &ctl_clients, cc_entry)
		if (cc->cc_initialized && !cc->cc_closing &&
		    (cc->cc_hooks & hook) != 0 &&
		    (best == NULL || cc->cc_init_seq > best->cc_init_seq))
			best = cc;
	return best;
}

int
ctl_client_is_initialized(const struct ctl_client *cc)
{
	return cc->cc_initialized;
}

unsigned
ctl_client_hooks(const struct ctl_client *cc)
{
	return cc->cc_hooks;
}

/*
 * Cancel one request: its owner lets go, the client hears -32800, now or,
 * when the owner asked for it (ctl_cancel_later), once the owner has undone
 * what the request started.
 */
static void
ctl_req_cancel(struct ctl_req *cr)
{
	cr->cr_cancelling = cr->cr_may_defer = 1;
	if (cr->cr_cancel != NULL)
		cr->cr_cancel(cr, cr->cr_cancel_arg);
	cr->cr_cancelling = cr->cr_may_defer = 0;
	if (cr->cr_answered)
		ctl_req_free(cr);
	else if (!cr->cr_deferred)
		ctl_error(cr, RPC_REQUEST_CANCELLED, "Request cancelled");
}

int
ctl_cancel_later(struct ctl_req *cr)
{
	if (!cr->cr_may_defer)
		return 0;
	cr->cr_deferred = 1;
	return 1;
}

/*
 * Two valid ids are the same id: strings byte for byte, integers exactly
 * (cJSON_Compare() finds numbers equal within a relative epsilon, so 2^53 -
 * 1 would match its neighbour).  body_print() echoes them exactly.
 */
static int
ctl_id_same(const cJSON *a, const cJSON *b)
{
	if (cJSON_IsString(a) && cJSON_IsString(b))
		return strcmp(a->valuestring, b->valuestring) == 0;
	return cJSON_IsNumber(a) && cJSON_IsNumber(b) &&
	    a->valuedouble == b->valuedouble;
}

static void
ctl_cancel_request(struct ctl_client *cc, const cJSON *id, cJSON *params,
    const cJSON *target)
{
	struct ctl_req	*cr;
	int		 found = 0;

	TAILQ_FOREACH(cr, &cc->cc_reqs, cr_entry) {
		if (cr->cr_id != NULL && ctl_id_same(cr->cr_id, target)) {
			ctl_req_cancel(cr);
			found = 1;
			break;
		}
	}
	if (id != NULL) {
		cJSON	*res = cJSON_CreateObject();
		cJSON	*o = cJSON_CreateObject();

		if (res == NULL || o == NULL ||
		    cJSON_AddBoolToObject(res, "cancelled", found) == NULL ||
		    cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL ||
		    !cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1))) {
			cJSON_Delete(res);
			cJSON_Delete(o);
			cc->cc_closing = 1;
			return;
		}
		cJSON_AddItemToObject(o, "result", res);
		ctl_send(cc, o);
		cJSON_Delete(o);
	}
}

static int
ctl_valid_id(const cJSON *id)
{
	double	 d;

	if (cJSON_IsString(id))
		return strlen(id->valuestring) <= CTL_ID_MAX;
	if (cJSON_IsNumber(id)) {
		d = id->valuedouble;
		/* Range first: it turns NaN and inf away before the cast. */
		return d >= -9007199254740991.0 && d <= 9007199254740991.0 &&
		    d == (double)(long long)d;
	}
	return 0;
}

static const struct ctl_method *
ctl_method_find(const char *name)
{
	const struct ctl_method	*m;

	for (m = ctl_methods; m->cm_name != NULL; m++)
		if (strcmp(m->cm_name, name) == 0)
			return m;
	return NULL;
}

/* Our ids are "rtsandbox-N": a client cannot answer what we did not ask. */
#define CTL_CALL_PREFIX	"rtsandbox-"

static void
ctl_handle_answer(struct ctl_client *cc, cJSON *root)
{
	struct ctl_call	*cl;
	cJSON		*id, *res, *err;
	unsigned long long n;
	char		*end;

	id = cJSON_GetObjectItemCaseSensitive(root, "id");
	if (!cJSON_IsString(id) || strncmp(id->valuestring, CTL_CALL_PREFIX,
	    strlen(CTL_CALL_PREFIX)) != 0) {
		log_debug("control client answered a request we did not make");
		return;
	}
	errno = 0;
	n = strtoull(id->valuestring + strlen(CTL_CALL_PREFIX), &end, 10);
	if (errno != 0 || *end != '\0')
		return;
	TAILQ_FOREACH(cl, &cc->cc_calls, cl_entry)
		if (cl->cl_id == n)
			break;
	if (cl == NULL)
		return;		/* withdrawn meanwhile */
	TAILQ_REMOVE(&cc->cc_calls, cl, cl_entry);
	res = cJSON_GetObjectItemCaseSensitive(root, "result");
	err = cJSON_GetObjectItemCaseSensitive(root, "error");
	if (res != NULL && err == NULL)
		cl->cl_cb(res, CTL_CALL_ANSWERED, cl->cl_arg);
	else
		cl->cl_cb(NULL, CTL_CALL_ERROR, cl->cl_arg);
	free(cl);
}

const char *
ctl_call_end_to_string(enum ctl_call_end e)
{
	switch (e) {
	case CTL_CALL_ANSWERED:
		return "answered";
	case CTL_CALL_ERROR:
		return "the client answered with an error";
	case CTL_CALL_LEFT:
		return "the client disconnected";
	}
	return "unknown";
}

struct ctl_call *
ctl_client_call(struct ctl_client *cc, const char *method, cJSON *params,
    ctl_call_cb cb, void *arg)
{
	struct ctl_call	*cl;
	cJSON		*o;
	char		 id[64];

	if (cc->cc_closing) {
		cJSON_Delete(params);
		return NULL;
	}
	if ((cl = calloc(1, sizeof(*cl))) == NULL)
		fatal("%s", __func__);
	cl->cl_client = cc;
	cl->cl_id = ++cc->cc_next_call;
	cl->cl_cb = cb;
	cl->cl_arg = arg;
	snprintf(id, sizeof(id), CTL_CALL_PREFIX "%llu",
	    (unsigned long long)cl->cl_id);
	if ((o = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL ||
	    cJSON_AddStringToObject(o, "id", id) == NULL ||
	    cJSON_AddStringToObject(o, "method", method) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddItemToObject(o, "params", params);
	ctl_send(cc, o);
	cJSON_Delete(o);
	TAILQ_INSERT_TAIL(&cc->cc_calls, cl, cl_entry);
	return cl;
}

void
ctl_call_withdraw(struct ctl_call *cl)
{
	TAILQ_REMOVE(&cl->cl_client->cc_calls, cl, cl_entry);
	free(cl);
}

void
ctl_client_notify(struct ctl_client *cc, const char *method, cJSON *params)
{
	cJSON	*o;

	if (cc->cc_closing) {
		cJSON_Delete(params);
		return;
	}
	if ((o = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(o, "jsonrpc", "2.0") == NULL ||
	    cJSON_AddStringToObject(o, "method", method) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddItemToObject(o, "params", params);
	ctl_send(cc, o);
	cJSON_Delete(o);
}

static void
ctl_handle_line(struct ctl_client *cc, const char *line, size_t len)
{
	const struct ctl_method	*m;
	struct ctl_req		*cr;
	cJSON			*root, *it, *id = NULL, *method = NULL;
	cJSON			*params = NULL, *ver = NULL;
	size_t			 units;

	sv->sv_count.sc_requests++;
	if (utf8_utf16_len(line, len, &units) == -1) {
		ctl_send_error(cc, NULL, RPC_PARSE_ERROR,
		    "Parse error: invalid UTF-8");
		return;
	}
	if ((root = cJSON_ParseWithLength(line, len)) == NULL) {
		ctl_send_error(cc, NULL, RPC_PARSE_ERROR,
		    "Parse error: not a JSON value");
		return;
	}
	if (cJSON_IsArray(root)) {
		ctl_send_error(cc, NULL, RPC_INVALID_REQUEST,
		    "Invalid Request: batches are not supported");
		goto done;
	}
	if (!cJSON_IsObject(root)) {
		ctl_send_error(cc, NULL, RPC_INVALID_REQUEST,
		    "Invalid Request: not an object");
		goto done;
	}
	if (cJSON_GetObjectItemCaseSensitive(root, "method") == NULL &&
	    (cJSON_GetObjectItemCaseSensitive(root, "result") != NULL ||
	    cJSON_GetObjectItemCaseSensitive(root, "error") != NULL)) {
		ctl_handle_answer(cc, root);
		goto done;
	}
	cJSON_ArrayForEach(it, root) {
		cJSON	**slot;

		if (strcmp(it->string, "jsonrpc") == 0)
			slot = &ver;
		else if (strcmp(it->string, "id") == 0)
			slot = &id;
		else if (strcmp(it->string, "method") == 0)
			slot = &method;
		else if (strcmp(it->string, "params") == 0)
			slot = &params;
		else {
			ctl_send_error(cc, NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: unknown member");
			goto done;
		}
		if (*slot != NULL) {
			ctl_send_error(cc, NULL, RPC_INVALID_REQUEST,
			    "Invalid Request: duplicate member");
			goto done;
		}
		*slot = it;
	}
	if (id != NULL && cJSON_IsNull(id)) {
		ctl_send_error(cc, NULL, RPC_INVALID_REQUEST,
		    "Invalid Request: id must be a number or a string");
		goto done;
	}
	if (id != NULL && !ctl_valid_id(id)) {
		ctl_send_error(cc, NULL, RPC_INVALID_REQUEST,
		    "Invalid Request: id must be an integer or a string of at "
		    "most 1024 bytes");
		goto done;
	}
	if (ver == NULL || !cJSON_IsString(ver) ||
	    strcmp(ver->valuestring, "2.0") != 0) {
		ctl_send_error(cc, id, RPC_INVALID_REQUEST,
		    "Invalid Request: jsonrpc must be \"2.0\"");
		goto done;
	}
	if (method == NULL || !cJSON_IsString(method)) {
		ctl_send_error(cc, id, RPC_INVALID_REQUEST,
		    "Invalid Request: method must be a string");
		goto done;
	}
	if (params != NULL && !cJSON_IsObject(params)) {
		if (id != NULL)
			ctl_send_error(cc, id, RPC_INVALID_PARAMS,
			    "Invalid params: params must be an object");
		goto done;
	}
	if (strcmp(method->valuestring, "$/cancelRequest") == 0) {
		cJSON	*target = params ? cJSON_GetObjectItemCaseSensitive(
		    params, "id") : NULL;

		if (target == NULL || !ctl_valid_id(target) ||
		    cJSON_GetArraySize(params) != 1) {
			if (id != NULL)
				ctl_send_error(cc, id, RPC_INVALID_PARAMS,
				    "Invalid params: $/cancelRequest needs "
				    "exactly {\"id\": <request id>}");
			goto done;
		}
		ctl_cancel_request(cc, id, params, target);
		goto done;
	}
	if ((m = ctl_method_find(method->valuestring)) == NULL) {
		if (id != NULL)
			ctl_send_error(cc, id, RPC_METHOD_NOT_FOUND,
			    "Method not found");
		goto done;
	}
	if (!m->cm_before_init && !cc->cc_initialized) {
		if (id != NULL)
			ctl_send_error(cc, id, RPC_NOT_INITIALIZED,
			    "Server not initialized: call initialize first");
		goto done;
	}
	if (id != NULL) {
		TAILQ_FOREACH(cr, &cc->cc_reqs, cr_entry) {
			if (cr->cr_id != NULL &&
			    ctl_id_same(cr->cr_id, id)) {
				ctl_send_error(cc, id, RPC_INVALID_REQUEST,
				    "Invalid Request: id already in flight");
				goto done;
			}
		}
	}
	if ((cr = calloc(1, sizeof(*cr))) == NULL)
		fatal("%s", __func__);
	cr->cr_client = cc;
	if (id != NULL && (cr->cr_id = cJSON_Duplicate(id, 1)) == NULL)
		fatal("%s", __func__);
	TAILQ_INSERT_TAIL(&cc->cc_reqs, cr, cr_entry);
	m->cm_fn(cr, params);
 done:
	cJSON_Delete(root);
}

static void
ctl_too_long(struct ctl_client *cc)
{
	char	 msg[128];

	snprintf(msg, sizeof(msg), "Invalid Request: line longer than %llu "
	    "bytes", (unsigned long long)CONTROL_LINE_MAX);
	ctl_send_error(cc, NULL, RPC_INVALID_REQUEST, msg);
	log_warnx("control client sent a line over %llu bytes; closing it",
	    (unsigned long long)CONTROL_LINE_MAX);
	cc->cc_closing = 1;
	event_del(cc->cc_rev);
}

static void
ctl_maybe_close(struct ctl_client *cc)
{
	if (cc->cc_closing && !cc->cc_flush_queued &&
	    evbuffer_get_length(bufferevent_get_output(cc->cc_bev)) == 0)
		ctl_client_free(cc);
}

/*
 * Lines are read straight into the client's own buffer, one read(2) per
 * wake-up (a bufferevent asks FIONREAD first, a system call of its own),
 * and each byte is looked at once however the line arrives.  The
 * bufferevent only writes.  End of file or an error ends the client and
 * what it asked for.
 */
static void
ctl_read(evutil_socket_t fd, short ev, void *arg)
{
	struct ctl_client	*cc = arg;
	size_t			 want, start = 0, len, cap;
	ssize_t			 n;
	char			*nl, *nbuf;

	if (cc->cc_cap - cc->cc_len < CTL_READ_MIN &&
	    cc->cc_cap < CONTROL_LINE_MAX + 2) {
		cap = cc->cc_cap ? cc->cc_cap : CTL_READ_MIN;
		while (cap - cc->cc_len < CTL_READ_MIN)
			cap *= 2;
		if ((nbuf = realloc(cc->cc_buf, cap)) == NULL)
			fatal("%s", __func__);
		cc->cc_buf = nbuf;
		cc->cc_cap = cap;
	}
	/* Never hold more than one byte past the longest line. */
	want = cc->cc_cap - cc->cc_len;
	if (want > CONTROL_LINE_MAX + 2 - cc->cc_len)
		want = CONTROL_LINE_MAX + 2 - cc->cc_len;
	do
		n = read(fd, cc->cc_buf + cc->cc_len, want);
	while (n == -1 && errno == EINTR);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (n <= 0) {
		if (n == -1)
			log_debug("control client: %s", strerror(errno));
		ctl_client_free(cc);
		return;
	}
	cc->cc_len += n;
	while (!cc->cc_closing && (nl = memchr(cc->cc_buf + cc->cc_scanned,
	    '\n', cc->cc_len - cc->cc_scanned)) != NULL) {
		len = nl - (cc->cc_buf + start);
		if (len > CONTROL_LINE_MAX) {
			ctl_too_long(cc);
			break;
		}
		if (len > 0 && cc->cc_buf[start + len - 1] == '\r')
			len--;
		if (len > 0)
			ctl_handle_line(cc, cc->cc_buf + start, len);
		start = cc->cc_scanned = nl - cc->cc_buf + 1;
	}
	if (!cc->cc_closing) {
		memmove(cc->cc_buf, cc->cc_buf + start, cc->cc_len - start);
		cc->cc_len -= start;
		cc->cc_scanned = cc->cc_len;
		if (cc->cc_len > CONTROL_LINE_MAX)
			ctl_too_long(cc);
	}
	if (cc->cc_closing)
		cc->cc_len = cc->cc_scanned = 0;
	/* A long line's buffer goes back once the line is done. */
	if (cc->cc_len == 0 && cc->cc_cap > 65536) {
		free(cc->cc_buf);
		cc->cc_buf = NULL;
		cc->cc_cap = 0;
	}
	ctl_maybe_close(cc);
}

static void
ctl_write(struct bufferevent *bev, void *arg)
{
	ctl_maybe_close(arg);
}

static void
ctl_event(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_client	*cc = arg;

	if (what & BEV_EVENT_ERROR)
		log_debug("control client: %s", strerror(errno));
	ctl_client_free(cc);
}

static void
ctl_client_free(struct ctl_client *cc)
{
	struct ctl_req	*cr;
	struct ctl_call	*cl;

	/* Hooks it was asked will not be answered. */
	while ((cl = TAILQ_FIRST(&cc->cc_calls)) != NULL) {
		TAILQ_REMOVE(&cc->cc_calls, cl, cl_entry);
		cl->cl_cb(NULL, CTL_CALL_LEFT, cl->cl_arg);
		free(cl);
	}
	/* A client that goes away cancels what it asked for.  A hook that
	 * answers all the same is let be, as in ctl_req_cancel(): the
	 * request is freed here, once. */
	while ((cr = TAILQ_FIRST(&cc->cc_reqs)) != NULL) {
		cr->cr_cancelling = 1;
		if (cr->cr_cancel != NULL)
			cr->cr_cancel(cr, cr->cr_cancel_arg);
		cr->cr_cancelling = 0;
		ctl_req_free(cr);
	}
	TAILQ_REMOVE(&ctl_clients, cc, cc_entry);
	if (cc->cc_flush_queued)
		TAILQ_REMOVE(&ctl_flush_list, cc, cc_flush_entry);
	evbuffer_free(cc->cc_pending);
	event_free(cc->cc_rev);
	bufferevent_free(cc->cc_bev);
	/* a descriptor came free: accept at once rather than at the timer */
	if (ctl_accept_paused && ctl_listener != NULL)
		evconnlistener_enable(ctl_listener);
	free(cc->cc_buf);
	free(cc->cc_name);
	free(cc);
}

static void
ctl_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct ctl_client	*cc;

	if ((cc = calloc(1, sizeof(*cc))) == NULL) {
		log_warn("%s", __func__);
		close(fd);
		return;
	}
	TAILQ_INIT(&cc->cc_reqs);
	TAILQ_INIT(&cc->cc_calls);
	if (ctl_flush_ev == NULL &&
	    (ctl_flush_ev = event_new(sv->sv_base, -1, 0, ctl_flush,
	    NULL)) == NULL)
		fatalx("%s: event_new", __func__);
	if ((cc->cc_pending = evbuffer_new()) == NULL) {
		log_warnx("%s: evbuffer_new failed", __func__);
		close(fd);
		free(cc);
		return;
	}
	cc->cc_bev = bufferevent_socket_new(sv->sv_base, fd,
	    BEV_OPT_CLOSE_ON_FREE);
	if (cc->cc_bev == NULL) {
		log_warnx("%s: bufferevent_socket_new failed", __func__);
		evbuffer_free(cc->cc_pending);
		close(fd);
		free(cc);
		return;
	}
	bufferevent_setcb(cc->cc_bev, NULL, ctl_write, ctl_event, cc);
	if ((cc->cc_rev = event_new(sv->sv_base, fd, EV_READ | EV_PERSIST,
	    ctl_read, cc)) == NULL || event_add(cc->cc_rev, NULL) == -1 ||
	    bufferevent_enable(cc->cc_bev, EV_WRITE) == -1) {
		log_warnx("%s: cannot watch a control client", __func__);
		if (cc->cc_rev != NULL)
			event_free(cc->cc_rev);
		evbuffer_free(cc->cc_pending);
		bufferevent_free(cc->cc_bev);
		free(cc);
		return;
	}
	TAILQ_INSERT_TAIL(&ctl_clients, cc, cc_entry);
	sv->sv_count.sc_connections++;
	if (ctl_accept_paused) {
		log_info("control socket accepts again");
		ctl_accept_paused = 0;
	}
	log_debug("control client connected");
}

static void
ctl_accept_resume(evutil_socket_t fd, short ev, void *arg)
{
	if (ctl_listener != NULL)
		evconnlistener_enable(ctl_listener);
}

/*
 * EMFILE and friends: the connection stays in the backlog and the socket
 * stays readable, so accepting again at once would spin.  Stop accepting,
 * keep serving those already connected, and try again a little later or
 * as soon as one of them leaves; one log line for the whole episode.
 */
static void
ctl_accept_error(struct evconnlistener *l, void *arg)
{
	struct timeval	 tv = { 0, CTL_ACCEPT_PAUSE_MS * 1000 };
	int		 e = EVUTIL_SOCKET_ERROR();

	if (e != EMFILE && e != ENFILE && e != ENOBUFS && e != ENOMEM) {
		log_warn("control socket accept");
		return;
	}
	if (!ctl_accept_paused)
		log_warnx("control socket accept: %s; accepting again every %d "
		    "ms until it passes", strerror(e), CTL_ACCEPT_PAUSE_MS);
	ctl_accept_paused = 1;
	evconnlistener_disable(l);
	if (ctl_accept_timer == NULL && (ctl_accept_timer = evtimer_new(
	    sv->sv_base, ctl_accept_resume, NULL)) == NULL)
		fatalx("%s: timer", __func__);
	evtimer_add(ctl_accept_timer, &tv);
}

/* A socket at path that answers belongs to a running daemon; one that
 * refuses is stale and may go. */
static int
ctl_remove_stale(const char *path)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	int			 fd, rc;

	if (lstat(path, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		log_warnx("control socket %s exists and is not a socket", path);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	if (rc == 0) {
		log_warnx("control socket %s: another rtsandboxd is listening "
		    "there", path);
		return -1;
	}
	if (unlink(path) == -1) {
		log_warn("unlink %s", path);
		return -1;
	}
	return 0;
}

/*
 * The directory of the control socket: a real directory (not a link) owned
 * by the service user or root that no one else may write to, so that no one
 * can swap the socket's name between its bind and its group change.
 */
static int
ctl_dir_open(const char *path, char *name, size_t namesz)
{
	struct stat	 st;
	char		 dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char	*slash;
	int		 dfd;

	if ((slash = strrchr(path, '/')) == NULL || slash[1] == '\0' ||
	    (size_t)snprintf(name, namesz, "%s", slash + 1) >= namesz) {
		log_warnx("control socket %s: not an absolute path to a socket",
		    path);
		return -1;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 :
	    (int)(slash - path), path);
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		log_warn("control socket directory %s", dir);
		return -1;
	}
	if (fstat(dfd, &st) == -1) {
		log_warn("control socket directory %s", dir);
		close(dfd);
		return -1;
	}
	if ((st.st_uid != getuid() && st.st_uid != 0) ||
	    (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
		log_warnx("control socket directory %s: must be owned by the "
		    "service user or root and not writable by group or others "
		    "(owner %lu, mode %04o)", dir, (unsigned long)st.st_uid,
		    (unsigned)(st.st_mode & 07777));
		close(dfd);
		return -1;
	}
	return dfd;
}

/*
 * Make the control socket, before the supervisor confines itself: the
 * umask gives it its final mode at bind, the group is set on the name in a
 * directory no one else writes to, and the result is checked.
 */
int
control_bind(const char *path, int has_group, gid_t gid)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	char			 name[sizeof(sun.sun_path)];
	mode_t			 old, mode = has_group ? CONTROL_SOCK_MODE_GROUP :
	    CONTROL_SOCK_MODE;
	int			 fd, dfd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("control socket %s: path too long", path);
		return -1;
	}
	if ((dfd = ctl_dir_open(path, name, sizeof(name))) == -1)
		return -1;
	if (ctl_remove_stale(path) == -1) {
		close(dfd);
		return -1;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1) {
		log_warn("control socket");
		close(dfd);
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	old = umask(0777 & ~mode);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		log_warn("bind %s", path);
		umask(old);
		goto fail;
	}
	umask(old);
	if (has_group && fchownat(dfd, name, (uid_t)-1, gid,
	    AT_SYMLINK_NOFOLLOW) == -1) {
		log_warn("control socket %s: group", path);
		goto unlink;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISSOCK(st.st_mode) || (st.st_mode & 07777) != mode ||
	    st.st_uid != getuid() || (has_group && st.st_gid != gid)) {
		log_warnx("control socket %s: not the socket just made with "
		    "mode %04o", path, (unsigned)mode);
		goto unlink;
	}
	if (listen(fd, 64) == -1) {
		log_warn("listen %s", path);
		goto unlink;
	}
	close(dfd);
	if ((ctl_path = strdup(path)) == NULL)
		fatal("%s", __func__);
	log_info("control socket %s (mode %04o)", path, (unsigned)mode);
	return fd;
 unlink:
	unlinkat(dfd, name, 0);
 fail:
	close(fd);
	close(dfd);
	return -1;
}

/* Serve the socket control_bind() made, once the event base exists. */
int
control_listen(int fd)
{
	ctl_listener = evconnlistener_new(sv->sv_base, ctl_accept, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
	if (ctl_listener == NULL) {
		log_warnx("control socket %s: cannot listen", ctl_path);
		unlink(ctl_path);
		close(fd);
		return -1;
	}
	evconnlistener_set_error_cb(ctl_listener, ctl_accept_error);
	return 0;
}

void
control_close(void)
{
	struct ctl_client	*cc;

	if (ctl_listener != NULL) {
		evconnlistener_free(ctl_listener);
		ctl_listener = NULL;
	}
	if (ctl_accept_timer != NULL) {
		event_free(ctl_accept_timer);
		ctl_accept_timer = NULL;
	}
	/* What the last round said still leaves, as far as sockets take. */
	while ((cc = TAILQ_FIRST(&ctl_flush_list)) != NULL)
		ctl_flush_one(cc);
	if (ctl_flush_ev != NULL) {
		event_free(ctl_flush_ev);
		ctl_flush_ev = NULL;
	}
	while ((cc = TAILQ_FIRST(&ctl_clients)) != NULL)
		ctl_client_free(cc);
	if (ctl_path != NULL) {
		if (unlink(ctl_path) == -1 && errno != ENOENT)
			log_warn("unlink %s", ctl_path);
		free(ctl_path);
		ctl_path = NULL;
	}
}

int
ctl_params_only(struct ctl_req *cr, const cJSON *params,
    const char *const *allowed)
{
	const cJSON		*it;
	const char *const	*a;

	cJSON_ArrayForEach(it, params) {
		for (a = allowed; *a != NULL; a++)
			if (strcmp(it->string, *a) == 0)
				break;
		if (*a == NULL) {
			ctl_error(cr, RPC_INVALID_PARAMS,
			    "Invalid params: unknown field \"%.64s\"",
			    it->string);
			return -1;
		}
	}
	return 0;
}

const char *
ctl_str_param(const cJSON *params, const char *key)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(params, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}
