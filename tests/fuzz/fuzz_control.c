/*
 * The control socket (supervisor/control.c) as a bot meets it: what a
 * client writes goes through the line reader, the JSON-RPC checks, ids,
 * $/cancelRequest, answers to the daemon's own calls, and the methods'
 * replies.  The methods are played here, each answering one of the ways
 * the daemon's do: at once, with an error, later, on a cancel, after a
 * deferred cancel, or by calling the client back.  Whatever the bytes, the
 * supervisor never aborts, a request whose client went away is forgotten,
 * and every line it writes is one JSON-RPC 2.0 object: an answer with an id
 * or a null one, or a call or notification of its own.
 *
 * Input: byte 0 says how the client leaves (CLIENT_*) and what becomes of
 * the requests still waiting at the end; the rest is written as it is, in
 * pieces of 4^(byte 0 >> 4) bytes (1, 4, 16 ...), or larger so that there
 * are at most PIECES_MAX, with a turn of the loop between them.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "control.h"
#include "log.h"
#include "supervisor.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(x)	do { if (!(x)) __builtin_trap(); } while (0)
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

/* Byte 0. */
#define CLIENT_SHUT	0x01	/* half-close once written, read on */
#define CLIENT_GONE	0x02	/* close once written, nothing read */
#define ANSWER_WAITING	0x04	/* the waiting requests are answered */
#define ERROR_WAITING	0x08	/* ... with an error */
#define PIECE(b)	((size_t)1 << (((b) >> 4) * 2))
#define PIECES_MAX	16

/* Loop turns at most after the last byte and after the close, and the
 * answers read at most. */
#define TURNS_AFTER	16
#define READ_MAX	(4u << 20)

enum wait_kind {
	WAIT_PLAIN,		/* forgets the request on cancel */
	WAIT_DEFER,		/* asks to answer a cancel itself, later */
	WAIT_ANSWER,		/* answers from inside its cancel hook */
};

struct waiter {
	struct ctl_req	*w_req;		/* NULL: gone */
	enum wait_kind	 w_kind;
	int		 w_deferred;
};

static struct supervisor	 the_sv;
static struct sockaddr_un	 sun;
static char			 dir[64];
static struct waiter		 waiters[64];
static size_t			 nwaiters;
static struct event		*later_ev;	/* answers deferred cancels */
static unsigned long		 calls_out, calls_back;

/* Methods */

static void
m_initialize(struct ctl_req *cr, cJSON *params)
{
	static const char *const allowed[] = { "client", "hooks", NULL };
	const cJSON	*hooks;
	const char	*name;

	if (ctl_params_only(cr, params, allowed) == -1)
		return;
	name = ctl_str_param(params, "client");
	hooks = cJSON_GetObjectItemCaseSensitive(params, "hooks");
	ctl_client_initialized(ctl_req_client(cr), name ? name : "fuzz",
	    cJSON_IsNumber(hooks) ? (unsigned)hooks->valueint & 0xf : 0);
	ctl_reply(cr, cJSON_CreateObject());
}

static void
m_echo(struct ctl_req *cr, cJSON *params)
{
	ctl_reply(cr, params != NULL ? cJSON_Duplicate(params, 1) : NULL);
}

static void
m_fail(struct ctl_req *cr, cJSON *params)
{
	const char	*why = ctl_str_param(params, "why");

	ctl_error(cr, RPC_APP_ERROR, "failed: %.64s", why ? why : "");
}

static void
wait_cancel(struct ctl_req *cr, void *arg)
{
	struct waiter	*w = arg;

	CHECK(w->w_req == cr);
	switch (w->w_kind) {
	case WAIT_DEFER:
		if (ctl_cancel_later(cr)) {
			w->w_deferred = 1;
			event_active(later_ev, EV_TIMEOUT, 1);
			return;
		}
		break;
	case WAIT_ANSWER:
		ctl_reply(cr, cJSON_CreateString("cancelled"));
		break;
	case WAIT_PLAIN:
		break;
	}
	w->w_req = NULL;
}

static void
wait_new(struct ctl_req *cr, enum wait_kind kind)
{
	struct waiter	*w;

	if (nwaiters == nitems(waiters)) {
		ctl_error(cr, RPC_APP_ERROR, "busy");
		return;
	}
	w = &waiters[nwaiters++];
	w->w_req = cr;
	w->w_kind = kind;
	w->w_deferred = 0;
	ctl_set_cancel(cr, wait_cancel, w);
}

static void
m_wait(struct ctl_req *cr, cJSON *params)
{
	wait_new(cr, WAIT_PLAIN);
}

static void
m_defer(struct ctl_req *cr, cJSON *params)
{
	wait_new(cr, WAIT_DEFER);
}

static void
m_answer_on_cancel(struct ctl_req *cr, cJSON *params)
{
	wait_new(cr, WAIT_ANSWER);
}

/* The deferred cancels are answered, as a turn's is once it is undone. */
static void
later(evutil_socket_t fd, short what, void *arg)
{
	size_t	 i;

	for (i = 0; i < nwaiters; i++)
		if (waiters[i].w_req != NULL && waiters[i].w_deferred) {
			ctl_set_cancel(waiters[i].w_req, NULL, NULL);
			ctl_error(waiters[i].w_req, RPC_REQUEST_CANCELLED,
			    "Request cancelled");
			waiters[i].w_req = NULL;
		}
}

static void
call_back(cJSON *result, enum ctl_call_end end, void *arg)
{
	/* a result exactly when the client answered one */
	CHECK((result != NULL) == (end == CTL_CALL_ANSWERED));
	CHECK(end == CTL_CALL_ANSWERED || end == CTL_CALL_ERROR ||
	    end == CTL_CALL_LEFT);
	calls_back++;
}

static void
m_call(struct ctl_req *cr, cJSON *params)
{
	if (ctl_client_call(ctl_req_client(cr), "tool.call",
	    params != NULL ? cJSON_Duplicate(params, 1) : cJSON_CreateObject(),
	    call_back, NULL) != NULL)
		calls_out++;
	ctl_reply(cr, NULL);
}

static void
m_notify(struct ctl_req *cr, cJSON *params)
{
	ctl_client_notify(ctl_req_client(cr), "turn.progress",
	    params != NULL ? cJSON_Duplicate(params, 1) : cJSON_CreateObject());
	ctl_reply(cr, NULL);
}

const struct ctl_method ctl_methods[] = {
	{ "initialize", m_initialize, 1 },
	{ "test.echo", m_echo, 1 },
	{ "test.fail", m_fail, 0 },
	{ "test.wait", m_wait, 0 },
	{ "test.defer", m_defer, 0 },
	{ "test.answer_on_cancel", m_answer_on_cancel, 0 },
	{ "test.call", m_call, 0 },
	{ "test.notify", m_notify, 0 },
	{ NULL, NULL, 0 },
};

/* The client */

struct reader {
	char	*buf;
	size_t	 len;
	size_t	 total;
	int	 eof;
};

/* One line the supervisor wrote. */
static void
check_line(const char *line, size_t len)
{
	cJSON		*o, *id, *res, *err, *method;
	const cJSON	*ver;

	CHECK((o = cJSON_ParseWithLength(line, len)) != NULL);
	CHECK(cJSON_IsObject(o));
	ver = cJSON_GetObjectItemCaseSensitive(o, "jsonrpc");
	CHECK(cJSON_IsString(ver) && strcmp(ver->valuestring, "2.0") == 0);
	id = cJSON_GetObjectItemCaseSensitive(o, "id");
	res = cJSON_GetObjectItemCaseSensitive(o, "result");
	err = cJSON_GetObjectItemCaseSensitive(o, "error");
	method = cJSON_GetObjectItemCaseSensitive(o, "method");
	if (method != NULL) {
		/* a call (with one of our ids) or a notification */
		CHECK(cJSON_IsString(method) && res == NULL && err == NULL);
		CHECK(id == NULL || (cJSON_IsString(id) &&
		    strncmp(id->valuestring, "rtsandbox-", 10) == 0));
	} else {
		CHECK(id != NULL && (cJSON_IsNull(id) || cJSON_IsString(id) ||
		    cJSON_IsNumber(id)));
		CHECK((res == NULL) != (err == NULL));
		if (err != NULL)
			CHECK(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(
			    err, "code")) && cJSON_IsString(
			    cJSON_GetObjectItemCaseSensitive(err, "message")));
	}
	cJSON_Delete(o);
}

/* Read what the supervisor wrote; 1 when there was something. */
static int
client_read(int fd, struct reader *r)
{
	char	 chunk[65536], *nl, *p;
	ssize_t	 n;
	size_t	 start, before = r->total;

	while (!r->eof && r->total < READ_MAX) {
		n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			r->eof = 1;
		if (n <= 0)
			break;
		r->total += n;
		CHECK((p = realloc(r->buf, r->len + n)) != NULL);
		r->buf = p;
		memcpy(r->buf + r->len, chunk, n);
		r->len += n;
		start = 0;
		while ((nl = memchr(r->buf + start, '\n', r->len - start)) !=
		    NULL) {
			check_line(r->buf + start, nl - (r->buf + start));
			start = nl - r->buf + 1;
		}
		memmove(r->buf, r->buf + start, r->len - start);
		r->len -= start;
	}
	return r->total != before;
}

static void
turn(void)
{
	CHECK(event_base_loop(the_sv.sv_base, EVLOOP_NONBLOCK) != -1);
}

/* The socket and its directory, when libFuzzer is done. */
static void
cleanup(void)
{
	(void)unlink(sun.sun_path);
	(void)rmdir(dir);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int	 lfd;

	log_init("supervisor", 0);
	sv = &the_sv;
	CHECK((the_sv.sv_base = event_base_new()) != NULL);
	CHECK((later_ev = event_new(the_sv.sv_base, -1, 0, later, NULL)) !=
	    NULL);
	snprintf(dir, sizeof(dir), "/tmp/rtsb-fuzz-control.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/control.sock", dir);
	CHECK((lfd = control_bind(sun.sun_path, 0, 0)) != -1);
	CHECK(control_listen(lfd) == 0);
	CHECK(atexit(cleanup) == 0);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct reader	 r = { 0 };
	size_t		 off = 0, piece, n, i;
	ssize_t		 w;
	uint8_t		 how;
	int		 fd;

	if (size == 0)
		return 0;
	how = data[0];
	data++;
	size--;
	/* Small pieces, but not more than PIECES_MAX of them. */
	piece = PIECE(how);
	if (piece < size / PIECES_MAX + 1)
		piece = size / PIECES_MAX + 1;
	nwaiters = 0;
	calls_out = calls_back = 0;
	CHECK((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) != -1);
	CHECK(connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0);
	turn();
	while (off < size) {
		n = size - off < piece ? size - off : piece;
		w = send(fd, data + off, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0)
			off += w;
		else if (w == -1 && errno != EAGAIN && errno != EINTR)
			break;		/* the supervisor closed: a long line */
		turn();
		if (!(how & CLIENT_GONE))
			client_read(fd, &r);
	}
	if (how & CLIENT_SHUT)
		(void)shutdown(fd, SHUT_WR);
	/* Until the answers stop coming. */
	for (i = 0; i < TURNS_AFTER; i++) {
		turn();
		if ((how & CLIENT_GONE) || !client_read(fd, &r))
			break;
	}
	/* What still waits is answered, or left to the client's going. */
	if (how & (ANSWER_WAITING | ERROR_WAITING)) {
		for (i = 0; i < nwaiters; i++) {
			if (waiters[i].w_req == NULL)
				continue;
			ctl_set_cancel(waiters[i].w_req, NULL, NULL);
			if (how & ERROR_WAITING)
				ctl_error(waiters[i].w_req, RPC_APP_ERROR,
				    "no");
			else
				ctl_reply(waiters[i].w_req, NULL);
			waiters[i].w_req = NULL;
		}
		turn();
		if (!(how & CLIENT_GONE))
			client_read(fd, &r);
	}
	CHECK(close(fd) == 0);
	/* The supervisor sees the end and frees the client. */
	for (i = 0; i < TURNS_AFTER && control_clients() > 0; i++)
		turn();
	for (i = 0; i < nwaiters; i++)
		CHECK(waiters[i].w_req == NULL);
	CHECK(calls_back == calls_out);
	CHECK(control_clients() == 0);
	free(r.buf);
	return 0;
}
