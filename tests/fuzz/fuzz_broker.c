/*
 * The broker's whole request path in one process: what a worker writes on
 * its connections goes through HTTP parsing, routing, body reading, the
 * rebuild and the framing to egress.  The other ends of the broker's two
 * pipes are played here: the supervisor configures it as the supervisor
 * does and binds a turn, egress answers every egr_call, the supervisor
 * every brk_tool_call.  Whatever the bytes, the broker never aborts or
 * exits, every frame it sends decodes as its receiver decodes it (a header
 * value egress would not copy never reaches egress), and every answer on a
 * connection is HTTP/1.1.
 *
 * Input: byte 0 sets the scene (SCENE_*); the rest is up to CONNS_MAX
 * connections separated by SEP.  A connection's first byte says how its
 * bytes are sent (CONN_*): as they are, or as the body of a request the
 * harness writes around them to routes[i] (second byte), with one header
 * of headers[j] (low half of the third byte) whose value is what comes up
 * to the first '\n', repeated 2^k times (high half), so that values past
 * every bound come from short inputs.  Each input runs the loop a bounded
 * number of times; the connections are closed at its end.
 *
 * Built with FUZZ_PRECHECK (fuzz_broker_precheck), the broker is a
 * precheck run's: each input is a fresh run of 1 to 4 calls (SCENE_LEVEL
 * + 1), or one whose deadline passed (SCENE_BIND); the supervisor hears
 * nothing but ready, and egress gets nothing but what the strict rebuild
 * of the call's server writes, unchanged by a second rebuild.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "broker.h"
#include "compaction.h"
#include "frame.h"
#include "httpparse.h"
#include "limits.h"
#include "log.h"
#include "msg.h"
#include "proc.h"
#include "rebuild.h"
#include "role.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(x)	do { if (!(x)) __builtin_trap(); } while (0)
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

#define SEP		"\xff\xff\xff\xff"
#define CONNS_MAX	24
/* Loop turns: until every connection ended, and after they are closed. */
#define TURNS_MAX	64
#define TURNS_AFTER	16
/* A repeated header value stops past the 64 KiB head limit. */
#define VALUE_MAX	(HTTP_HEAD_MAX + 4096)
/* Descriptors of the harness's own, out of the way of the slots. */
#define FD_HIGH		64
/* compaction.max_request_bytes: small, so that inputs reach past it */
#define FUZZ_COMPACT_MAX	4096

/* Byte 0. */
#define SCENE_BIND	0x01	/* a turn is bound, else no scope */
#define SCENE_SUBMIT	0x02	/* and submitted, for GET /worker/next */
#define SCENE_CANCEL	0x04	/* and cancelled */
#define SCENE_EGRESS(b)	(((b) >> 3) & 3)	/* egress's answer, below */
#define SCENE_TOOL_OK	0x20	/* tool answers are ok:true */
#define SCENE_LEVEL(b)	(((b) >> 6) & 3)

enum egress_answer {
	EGRESS_STREAM,		/* 200, two chunks, end */
	EGRESS_NO_BODY,		/* 204 */
	EGRESS_REFUSED,		/* no head: the call failed */
	EGRESS_CUT,		/* 200, a chunk, then failure mid-body */
};

/* First byte of a connection. */
#define CONN_SHAPE(b)	((b) & 3)
#define CONN_RAW	0	/* the bytes as they are */
#define CONN_LENGTH	1	/* a request with content-length */
#define CONN_CHUNKED	2	/* a request with chunked framing */
#define CONN_WRAPPED	3	/* content-length, the body in a wrapper */
#define CONN_SHUT	0x04	/* half-close once written */
#define CONN_CLOSE	0x08	/* close once written, no answer read */
#define CONN_TURNS(b)	((b) >> 4)	/* loop turns before the next one */

enum wrap {
	WRAP_NONE,
	WRAP_MODEL,
	WRAP_MCP,
	WRAP_TOOL,
	WRAP_RESULT,
};

static const struct {
	const char	*method;
	const char	*target;
	enum wrap	 wrap;
} routes[] = {
	{ "POST", "/anthropic/v1/messages", WRAP_MODEL },
	{ "POST", "/anthropic/v1/messages?beta=true", WRAP_MODEL },
	{ "POST", "/anthropic/v1/messages/count_tokens", WRAP_MODEL },
	{ "POST", "/mcp/files", WRAP_MCP },
	{ "POST", "/mcp/other", WRAP_MCP },
	{ "POST", "/mcp/nope", WRAP_MCP },
	{ "POST", "/tools/roll_dice", WRAP_TOOL },
	{ "POST", "/tools/nope", WRAP_TOOL },
	{ "POST", "/worker/result", WRAP_RESULT },
	{ "POST", "/worker/ready", WRAP_NONE },
	{ "GET", "/worker/next", WRAP_NONE },
	{ "GET", "/mcp-tools", WRAP_NONE },
	{ "HEAD", "/mcp-tools", WRAP_NONE },
	{ "GET", "/anthropic/v1/messages", WRAP_MODEL },
	{ "POST", "/anthropic/v1/messages#f", WRAP_MODEL },
	{ "POST", "/mcp/files?beta=true", WRAP_MCP },
	{ "PUT", "/tools/roll_dice", WRAP_TOOL },
	{ "POST", "/worker/next", WRAP_NONE },
	{ "POST", "/compaction/compact", WRAP_NONE },
	{ "POST", "/compaction/report", WRAP_NONE },
	{ "GET", "/worker/config", WRAP_NONE },
};

static const char *const headers[] = {
	"anthropic-version", "anthropic-beta", "user-agent", "x-app",
	"content-type", "accept", "mcp-session-id", "mcp-protocol-version",
	"expect", "authorization",
};

static const char *const levels[] = { "low", "medium", "high", "xhigh" };

#ifdef FUZZ_PRECHECK
static const int	 precheck = 1;
#else
static const int	 precheck = 0;
#endif
/* The granted servers and their tools. */
static const char	*files_tools[] = { "search", "fetch_page" };
static const char	*other_tools[] = { "echo" };

struct client {
	int		 fd;
	uint8_t		*out;
	size_t		 outlen;
	size_t		 outoff;
	int		 flags;
	int		 eof;
	char		 first[9];	/* the answer's first bytes */
	size_t		 nfirst;
	struct event	*ev;		/* readable: client_read() */
};

static struct event_base	*base;
static struct broker		*broker;
static struct frame_conn	*sup;	/* the supervisor's end */
static struct frame_conn	*egr;	/* egress's end */
static struct sockaddr_un	 sun;
static socklen_t		 sunlen;
static int			 ready;
static uint8_t			 scene;
static unsigned long		 nturns;
static char			 turn_id[32];	/* "" when none is bound */
static struct client		 clients[CONNS_MAX];
static size_t			 nclients;

static void
pipe_err(struct frame_conn *fc, enum frame_err err, void *arg)
{
	/* The broker never breaks its pipes, whatever the worker sent. */
	fprintf(stderr, "pipe error: %s\n", frame_err_to_string(err));
	__builtin_trap();
}

static void
send_msg(struct frame_conn *fc, struct msgb *mb)
{
	CHECK(msg_send(fc, mb) == 0);
}

/* The supervisor: decode what it decodes, answer tool calls. */
static void
sup_frame(struct frame_conn *fc, struct frame *f, void *arg)
{
	struct msg	 m;
	struct msgb	 mb;
	const char	*s;
	const uint8_t	*data;
	size_t		 len;
	uint64_t	 u;
	unsigned long	 bound;
	int		 n = 0, call, have;
	static const char ok[] = "{\"ok\":true,\"text\":\"4\"}";
	static const char bad[] = "{\"ok\":false,\"error\":\"no\"}";
	static const char declined[] = "{\"ok\":false,\"fallback\":"
	    "\"the compactor declined\"}";
	struct compact_info ci;

	CHECK(msg_parse(&m, PROC_BROKER, PROC_SUPERVISOR, f) == 0);
	/* A run's broker tells the supervisor of no call and no worker. */
	CHECK(!precheck || m.m_type == MSG_READY);
	switch (m.m_type) {
	case MSG_READY:
		ready = 1;
		break;
	case MSG_BRK_EVENT:
		CHECK(msg_get_str(&m, "kind", 64, &s) == 0);
		/* a count only of a batch of calls (sup_call()) */
		call = strcmp(s, "model_call") == 0 || strcmp(s, "mcp_call") == 0;
		CHECK(msg_get_str(&m, "route", HTTP_HEAD_MAX, &s) == 0 &&
		    msg_get_uint(&m, "status", 0, 599, &u) == 0);
		/* A call is held to the turn it was made in, if any: one
		 * this harness bound. */
		s = NULL;
		CHECK(msg_get_str_opt(&m, "turn_id",
		    UTF8_BYTES_MAX(SAFE_NAME_MAX), &s) == 0);
		CHECK(s == NULL || (sscanf(s, "turn-%lu%n", &bound, &n) == 1 &&
		    s[n] == '\0' && bound >= 1 && bound <= nturns));
		CHECK(msg_get_uint_opt(&m, "calls", 2, MAX_CALLS_MAX, &u,
		    &have) == 0 && (call || !have) && msg_end(&m) == 0);
		break;
	case MSG_BRK_DELIVERED:
		CHECK(msg_get_str(&m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
		    &s) == 0 && strcmp(s, turn_id) == 0);
		break;
	case MSG_BRK_RESULT:
		CHECK(msg_get_str(&m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
		    &s) == 0 && strcmp(s, turn_id) == 0 &&
		    msg_get_data(&m, &data, &len) == 0 && len > 0);
		break;
	case MSG_BRK_TOOL_CALL:
		CHECK(m.m_has_id &&
		    msg_get_str(&m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
		    &s) == 0 && strcmp(s, turn_id) == 0 &&
		    msg_get_str(&m, "name", HOST_TOOL_NAME_MAX, &s) == 0 &&
		    msg_get_data(&m, &data, &len) == 0 && len > 0);
		msgb_init(&mb, MSG_BRK_TOOL_ANSWER, m.m_id);
		msg_add_bool(&mb, "ok", (scene & SCENE_TOOL_OK) != 0);
		msg_add_bool(&mb, "private", 0);
		if (scene & SCENE_TOOL_OK)
			msg_add_data(&mb, ok, sizeof(ok) - 1);
		else
			msg_add_data(&mb, bad, sizeof(bad) - 1);
		send_msg(sup, &mb);
		break;
	case MSG_BRK_COMPACT:
		/* only what the contract allows, of the bound turn */
		CHECK(m.m_has_id &&
		    msg_get_str(&m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
		    &s) == 0 && strcmp(s, turn_id) == 0 &&
		    msg_get_data(&m, &data, &len) == 0 &&
		    len <= FUZZ_COMPACT_MAX && compact_check_request(
		    (const char *)data, len, &ci, NULL, NULL, 0) == BODY_OK);
		msgb_init(&mb, MSG_BRK_COMPACTED, m.m_id);
		msg_add_data(&mb, declined, sizeof(declined) - 1);
		send_msg(sup, &mb);
		break;
	case MSG_BRK_COMPACT_REPORT:
		CHECK(msg_get_str(&m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
		    &s) == 0 && strcmp(s, turn_id) == 0 &&
		    msg_get_data(&m, &data, &len) == 0 &&
		    compact_check_report((const char *)data, len, NULL, 0,
		    NULL, 0) == BODY_OK);
		break;
	default:
		fprintf(stderr, "unexpected %s\n", msg_type_name(m.m_type));
		__builtin_trap();
	}
	CHECK(msg_end(&m) == 0);
	msg_free(&m);
}

static void
egr_answer(uint64_t id)
{
	static const char	*hn[] = { "content-type", "request-id" };
	static const char	*hv[] = { "text/event-stream", "req_fuzz" };
	static const char	 ev[] = "event: ping\ndata: {}\n\n";
	struct msgb		 mb;
	enum egress_answer	 a = SCENE_EGRESS(scene);

	if (a != EGRESS_REFUSED) {
		msgb_init(&mb, MSG_EGR_HEAD, 0);
		msg_add_uint(&mb, "call", id);
		msg_add_uint(&mb, "status", a == EGRESS_NO_BODY ? 204 : 200);
		msg_add_strv(&mb, "hnames", hn, a == EGRESS_NO_BODY ? 1 : 2);
		msg_add_strv(&mb, "hvalues", hv, a == EGRESS_NO_BODY ? 1 : 2);
		send_msg(egr, &mb);
	}
	if (a == EGRESS_STREAM || a == EGRESS_CUT) {
		msgb_init(&mb, MSG_EGR_DATA, 0);
		msg_add_uint(&mb, "call", id);
		msg_add_data(&mb, ev, sizeof(ev) - 1);
		send_msg(egr, &mb);
	}
	if (a == EGRESS_STREAM) {
		msgb_init(&mb, MSG_EGR_DATA, 0);
		msg_add_uint(&mb, "call", id);
		msg_add_data(&mb, ev, sizeof(ev) - 1);
		send_msg(egr, &mb);
	}
	msgb_init(&mb, MSG_EGR_END, 0);
	msg_add_uint(&mb, "call", id);
	msg_add_bool(&mb, "ok", a == EGRESS_STREAM || a == EGRESS_NO_BODY);
	if (a == EGRESS_REFUSED) {
		msg_add_uint(&mb, "status", 429);
		msg_add_str(&mb, "error", "upstream_refused");
	} else if (a == EGRESS_CUT)
		msg_add_str(&mb, "error", "reflection");
	send_msg(egr, &mb);
}

/*
 * A run's call: an MCP call to a granted server without the worker's
 * headers, query or a turn, and a body the strict rebuild writes as it
 * is.
 */
static void
precheck_call(const char *path, const char *query, const char *server,
    const char *tid, size_t nhdrs, const uint8_t *data, size_t len)
{
	const char *const	*tools;
	size_t			 ntools;
	char			*out, err[256];
	size_t			 outlen;

	CHECK(strcmp(path, "") == 0 && query == NULL && tid == NULL &&
	    nhdrs == 0 && server != NULL);
	if (strcmp(server, "files") == 0) {
		tools = files_tools;
		ntools = nitems(files_tools);
	} else {
		CHECK(strcmp(server, "other") == 0);
		tools = other_tools;
		ntools = nitems(other_tools);
	}
	CHECK(rebuild_precheck_call((const char *)data, len, tools, ntools,
	    &out, &outlen, err, sizeof(err)) == 0);
	CHECK(outlen == len && memcmp(out, data, len) == 0);
	free(out);
}

/* Egress: decode an egr_call as egress_call() does, and answer it. */
static void
egr_frame(struct frame_conn *fc, struct frame *f, void *arg)
{
	struct msg	 m;
	const char	*kind, *path, *query, *server, *tid, **hn, **hv;
	const uint8_t	*data;
	size_t		 n, nv, len, i, max;
	uint64_t	 id, bytes;

	CHECK(msg_parse(&m, PROC_BROKER, PROC_EGRESS, f) == 0);
	switch (m.m_type) {
	case MSG_EGR_CALL:
		CHECK(msg_get_uint(&m, "call", 1, UINT64_C(1) << 53, &id) == 0 &&
		    msg_get_str(&m, "kind", 8, &kind) == 0 &&
		    msg_get_str(&m, "path", 64, &path) == 0 &&
		    msg_get_str_opt(&m, "query", 16, &query) == 0 &&
		    msg_get_str_opt(&m, "server", MCP_SERVER_NAME_MAX,
		    &server) == 0 &&
		    msg_get_str_opt(&m, "turn_id",
		    UTF8_BYTES_MAX(SAFE_NAME_MAX), &tid) == 0 &&
		    msg_get_strv(&m, "hnames", 8, 64, &hn, &n) == 0 &&
		    msg_get_strv(&m, "hvalues", 8, HEADER_VALUE_MAX * 4, &hv,
		    &nv) == 0 && n == nv &&
		    msg_get_data(&m, &data, &len) == 0);
		CHECK(msg_end(&m) == 0);
		CHECK(strcmp(kind, "model") == 0 || strcmp(kind, "mcp") == 0);
		max = strcmp(kind, "model") == 0 ? HEADER_VALUE_MAX :
		    MCP_HEADER_MAX;
		for (i = 0; i < n; i++)
			CHECK(http_value_copyable(hv[i], max));
		CHECK(len > 0 && data[0] == '{');
		if (precheck)
			precheck_call(path, query, server, tid, n, data, len);
		egr_answer(id);
		break;
	case MSG_EGR_ACK:
		CHECK(msg_get_uint(&m, "call", 1, UINT64_C(1) << 53, &id) == 0 &&
		    msg_get_uint(&m, "bytes", 1, UINT64_C(1) << 53, &bytes) ==
		    0);
		CHECK(msg_end(&m) == 0);
		break;
	case MSG_EGR_CANCEL:
		CHECK(msg_get_uint(&m, "call", 1, UINT64_C(1) << 53, &id) == 0);
		CHECK(msg_end(&m) == 0);
		break;
	default:
		fprintf(stderr, "unexpected %s\n", msg_type_name(m.m_type));
		__builtin_trap();
	}
	msg_free(&m);
}

/* Close a client's end; its answer is no longer read. */
static void
client_close(struct client *cl)
{
	if (cl->ev != NULL) {
		event_free(cl->ev);
		cl->ev = NULL;
	}
	if (cl->fd != -1)
		close(cl->fd);
	cl->fd = -1;
}

/*
 * Read and drop the answer as the loop finds it readable: polling every
 * client before every turn of the loop was most of the harness's system
 * calls (a recv(2) that fails with EAGAIN).
 */
static void
client_read(evutil_socket_t fd, short what, void *arg)
{
	struct client	*cl = arg;
	char		 buf[65536];
	ssize_t		 r;
	size_t		 k;

	(void)what;
	while (!cl->eof) {
		r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r == 0 || (r == -1 && errno != EAGAIN && errno != EINTR))
			cl->eof = 1;
		if (r <= 0)
			break;
		for (k = 0; k < (size_t)r && cl->nfirst < sizeof(cl->first);
		    k++)
			cl->first[cl->nfirst++] = buf[k];
		if ((size_t)r < sizeof(buf))
			break;
	}
	if (cl->nfirst == sizeof(cl->first))
		CHECK(memcmp(cl->first, "HTTP/1.1 ", 9) == 0);
	if (cl->eof)
		event_del(cl->ev);
}

/* Write what is left. */
static void
clients_io(void)
{
	struct client	*cl;
	ssize_t		 r;
	size_t		 i;

	for (i = 0; i < nclients; i++) {
		cl = &clients[i];
		if (cl->fd == -1 || cl->out == NULL)
			continue;
		while (cl->outoff < cl->outlen) {
			r = send(cl->fd, cl->out + cl->outoff,
			    cl->outlen - cl->outoff, MSG_NOSIGNAL);
			if (r <= 0)
				break;
			cl->outoff += r;
		}
		if (cl->outoff == cl->outlen) {
			free(cl->out);
			cl->out = NULL;
			if (cl->flags & CONN_CLOSE) {
				client_close(cl);
				continue;
			}
			if (cl->flags & CONN_SHUT)
				(void)shutdown(cl->fd, SHUT_WR);
		}
	}
}

static int
clients_done(void)
{
	size_t	 i;

	for (i = 0; i < nclients; i++)
		if (clients[i].fd != -1 && !clients[i].eof)
			return 0;
	return 1;
}

static void
turns(int n)
{
	int	 i;

	for (i = 0; i < n; i++) {
		clients_io();
		CHECK(event_base_loop(base, EVLOOP_NONBLOCK) != -1);
	}
}

/* Move fd to FD_HIGH or above, close-on-exec. */
static int
fd_high(int fd)
{
	int	 h;

	CHECK((h = fcntl(fd, F_DUPFD_CLOEXEC, FD_HIGH)) != -1);
	CHECK(close(fd) == 0);
	return h;
}

static void
configure(void)
{
	static const char	*tools[] = { "roll_dice", "lookup" };
	struct msgb		 mb;
	int			 lfd, i;

	/* An abstract socket: no file to leave behind. */
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1,
	    "rtsandbox-fuzz-broker.%d", (int)getpid());
	sunlen = offsetof(struct sockaddr_un, sun_path) + 1 +
	    strlen(sun.sun_path + 1);
	CHECK((lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) != -1);
	CHECK(bind(lfd, (struct sockaddr *)&sun, sunlen) == 0);
	CHECK(listen(lfd, 64) == 0);

	msgb_init(&mb, MSG_CONFIG_BROKER, 0);
	msg_add_str(&mb, "channel", "fuzz:1");
	msg_add_str(&mb, "profile", "default");
	msg_add_str(&mb, "model", "claude-fuzz");
	msg_add_uint(&mb, "max_output_tokens", MAX_OUTPUT_TOKENS_DEFAULT);
	if (precheck) {
		/* a run: no host tool, no compactor, its own bounds */
		msg_add_bool(&mb, "precheck", 1);
		msg_add_uint(&mb, "deadline_ms", PRECHECK_TIMEOUT_MS_MAX);
		msg_add_uint(&mb, "max_calls", PRECHECK_CALLS_MAX);
		msg_add_strv(&mb, "tools", tools, 0);
	} else {
		msg_add_uint(&mb, "max_calls", TURN_CALLS_MAX);
		msg_add_strv(&mb, "tools", tools, nitems(tools));
		msg_add_str(&mb, "compaction_engine", "fuzz/engine");
		msg_add_uint(&mb, "compaction_timeout_ms",
		    COMPACT_TIMEOUT_MS_DEFAULT);
		msg_add_uint(&mb, "compaction_max_bytes", FUZZ_COMPACT_MAX);
	}
	msg_add_fd(&mb, lfd);
	send_msg(sup, &mb);
	msgb_init(&mb, MSG_CONFIG_BROKER_MCP, 0);
	msg_add_str(&mb, "name", "files");
	msg_add_strv(&mb, "tools", files_tools, nitems(files_tools));
	send_msg(sup, &mb);
	msgb_init(&mb, MSG_CONFIG_BROKER_MCP, 0);
	msg_add_str(&mb, "name", "other");
	msg_add_strv(&mb, "tools", other_tools, nitems(other_tools));
	send_msg(sup, &mb);
	msgb_init(&mb, MSG_CONFIG_DONE, 0);
	send_msg(sup, &mb);
	for (i = 0; i < TURNS_MAX && !ready; i++)
		turns(1);
	CHECK(ready);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int	 s[2], e[2], in_use;

	log_init("broker", 0);
	signal(SIGPIPE, SIG_IGN);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, s) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, e) == 0);
	s[0] = fd_high(s[0]);
	s[1] = fd_high(s[1]);
	e[0] = fd_high(e[0]);
	e[1] = fd_high(e[1]);
	/* The broker reads its supervisor on FD_PARENT, as a child does;
	 * an inherited descriptor there is moved out of the way. */
	in_use = fcntl(FD_PARENT, F_GETFD) != -1;
	if (in_use)
		(void)fd_high(FD_PARENT);
	CHECK(dup2(s[1], FD_PARENT) == FD_PARENT);
	CHECK(close(s[1]) == 0);

	CHECK((base = event_base_new()) != NULL);
	CHECK((broker = broker_start(base, e[1])) != NULL);
	sup = frame_conn_new(base, s[0], edge_limits(PROC_BROKER,
	    PROC_SUPERVISOR), edge_limits(PROC_SUPERVISOR, PROC_BROKER),
	    sup_frame, pipe_err, NULL);
	egr = frame_conn_new(base, e[0], edge_limits(PROC_BROKER,
	    PROC_EGRESS), edge_limits(PROC_EGRESS, PROC_BROKER), egr_frame,
	    pipe_err, NULL);
	CHECK(sup != NULL && egr != NULL);
	configure();
	return 0;
}

/* Unbind the last input's turn; bind, submit and cancel as byte 0 says. */
static void
set_scene(uint8_t b)
{
	struct msgb	 mb;
	char		 turn[256];
	int		 n;

	scene = b;
	if (precheck) {
		broker_fuzz_rerun(broker, 1 + SCENE_LEVEL(b),
		    (b & SCENE_BIND) != 0);
		return;
	}
	if (turn_id[0] != '\0') {
		msgb_init(&mb, MSG_BRK_UNBIND, 0);
		msg_add_str(&mb, "turn_id", turn_id);
		send_msg(sup, &mb);
		turn_id[0] = '\0';
	}
	if (!(b & SCENE_BIND))
		return;
	(void)snprintf(turn_id, sizeof(turn_id), "turn-%lu", ++nturns);
	msgb_init(&mb, MSG_BRK_BIND, 0);
	msg_add_str(&mb, "turn_id", turn_id);
	msg_add_str(&mb, "thinking", levels[SCENE_LEVEL(b)]);
	msg_add_uint(&mb, "deadline_ms", TIMEOUT_MS_MAX);
	msg_add_uint(&mb, "max_calls", TURN_CALLS_MAX);
	send_msg(sup, &mb);
	if (!(b & SCENE_SUBMIT))
		return;
	n = snprintf(turn, sizeof(turn), "{\"turnId\":\"%s\",\"author\":"
	    "{\"id\":\"u1\",\"name\":\"Ann\"},\"text\":\"hi\",\"memory\":\"\","
	    "\"images\":[],\"thinking\":\"%s\"}", turn_id,
	    levels[SCENE_LEVEL(b)]);
	msgb_init(&mb, MSG_BRK_SUBMIT, 0);
	msg_add_str(&mb, "turn_id", turn_id);
	msg_add_bool(&mb, "private", 0);
	msg_add_data(&mb, turn, (size_t)n);
	send_msg(sup, &mb);
	if (b & SCENE_CANCEL) {
		msgb_init(&mb, MSG_BRK_CANCEL, 0);
		msg_add_str(&mb, "turn_id", turn_id);
		send_msg(sup, &mb);
	}
}

/* Append to a growing buffer. */
struct out {
	uint8_t	*b;
	size_t	 len;
	size_t	 cap;
};

static void
put(struct out *o, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (o->len + n > o->cap) {
		o->cap = (o->len + n) * 2 + 64;
		CHECK((o->b = realloc(o->b, o->cap)) != NULL);
	}
	memcpy(o->b + o->len, p, n);
	o->len += n;
}

static void
puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/*
 * The body of a templated request, in its route's wrapper; an empty part
 * is a valid one, so that a few bytes of input reach every route's end.
 */
static void
wrapped_body(struct out *o, enum wrap w, const uint8_t *p, size_t n)
{
	static const char *const fill[] = {
		[WRAP_NONE] = "",
		[WRAP_MODEL] = "\"hi\"",
		[WRAP_MCP] = "{}",
		[WRAP_TOOL] = "{}",
		[WRAP_RESULT] = "{\"ok\":true,\"text\":\"done\",\"files\":[]}",
	};

	if (n == 0) {
		p = (const uint8_t *)fill[w];
		n = strlen(fill[w]);
	}
	switch (w) {
	case WRAP_MODEL:
		puts_(o, "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true,"
		    "\"messages\":[{\"role\":\"user\",\"content\":");
		put(o, p, n);
		puts_(o, "}]}");
		break;
	case WRAP_MCP:
		puts_(o, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
		    "\"tools/call\",\"params\":{\"name\":\"search\","
		    "\"arguments\":");
		put(o, p, n);
		puts_(o, "}}");
		break;
	case WRAP_TOOL:
		puts_(o, "{\"input\":");
		put(o, p, n);
		puts_(o, "}");
		break;
	case WRAP_RESULT:
		puts_(o, "{\"turnId\":\"");
		puts_(o, turn_id);
		puts_(o, "\",\"result\":");
		put(o, p, n);
		puts_(o, "}");
		break;
	case WRAP_NONE:
		put(o, p, n);
		break;
	}
}

/* The bytes a connection sends, from its part of the input. */
static void
conn_bytes(struct out *o, int flags, const uint8_t *p, size_t n)
{
	struct out	 body = { 0 };
	const uint8_t	*nl;
	char		 line[64];
	size_t		 r, hd, copies, vlen, off, k;

	if (CONN_SHAPE(flags) == CONN_RAW || n < 2) {
		put(o, p, n);
		return;
	}
	r = p[0] % nitems(routes);
	hd = (p[1] & 15) % nitems(headers);
	copies = (size_t)1 << (p[1] >> 4);
	p += 2;
	n -= 2;
	vlen = (nl = memchr(p, '\n', n)) != NULL ? (size_t)(nl - p) : 0;
	puts_(o, routes[r].method);
	puts_(o, " ");
	puts_(o, routes[r].target);
	puts_(o, " HTTP/1.1\r\nHost: broker\r\n");
	if (nl != NULL) {
		puts_(o, headers[hd]);
		puts_(o, ": ");
		for (k = 0; k < copies && k * vlen < VALUE_MAX; k++)
			put(o, p, vlen);
		puts_(o, "\r\n");
		p += vlen + 1;
		n -= vlen + 1;
	}
	if (CONN_SHAPE(flags) == CONN_WRAPPED)
		wrapped_body(&body, routes[r].wrap, p, n);
	else
		put(&body, p, n);
	if (CONN_SHAPE(flags) == CONN_CHUNKED) {
		puts_(o, "Transfer-Encoding: chunked\r\n\r\n");
		/* Chunks of 1 to 16 bytes, as the body's first byte says. */
		k = body.len > 0 ? (body.b[0] & 15) + 1 : 1;
		for (off = 0; off < body.len; off += k) {
			if (k > body.len - off)
				k = body.len - off;
			(void)snprintf(line, sizeof(line), "%zx\r\n", k);
			puts_(o, line);
			put(o, body.b + off, k);
			puts_(o, "\r\n");
		}
		puts_(o, "0\r\n\r\n");
	} else {
		(void)snprintf(line, sizeof(line),
		    "Content-Length: %zu\r\n\r\n", body.len);
		puts_(o, line);
		put(o, body.b, body.len);
	}
	free(body.b);
}

static void
conn_open(const uint8_t *p, size_t n)
{
	struct client	*cl = &clients[nclients];
	struct out	 o = { 0 };
	int		 fd;

	cl->flags = n > 0 ? p[0] : 0;
	conn_bytes(&o, cl->flags, p + (n > 0), n - (n > 0));
	CHECK((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) != -1);
	CHECK(connect(fd, (struct sockaddr *)&sun, sunlen) == 0);
	cl->fd = fd_high(fd);
	CHECK((cl->ev = event_new(base, cl->fd, EV_READ | EV_PERSIST,
	    client_read, cl)) != NULL && event_add(cl->ev, NULL) == 0);
	cl->out = o.b;
	cl->outlen = o.len;
	cl->outoff = 0;
	cl->eof = 0;
	cl->nfirst = 0;
	if (cl->out == NULL) {
		/* Nothing to send: an empty connection. */
		CHECK((cl->out = malloc(1)) != NULL);
		cl->outlen = 0;
	}
	nclients++;
	turns(1 + CONN_TURNS(cl->flags));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t	*p, *end, *sep;
	size_t		 i;
	int		 t;

	if (size == 0)
		return 0;
	set_scene(data[0]);
	turns(2);
	nclients = 0;
	p = data + 1;
	end = data + size;
	while (p <= end && nclients < CONNS_MAX) {
		sep = memmem(p, end - p, SEP, 4);
		conn_open(p, (sep != NULL ? sep : end) - p);
		if (sep == NULL)
			break;
		p = sep + 4;
	}
	for (t = 0; t < TURNS_MAX && !clients_done(); t++)
		turns(1);
	for (i = 0; i < nclients; i++) {
		free(clients[i].out);
		clients[i].out = NULL;
		client_close(&clients[i]);
	}
	turns(TURNS_AFTER);
	return 0;
}
