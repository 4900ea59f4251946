/*
 * The agent of one turn.  The first user message is the turn's text (after
 * the author's name) and images, the memory goes into the system prompt;
 * then model calls alternate with tool calls until the model answers
 * without a tool call, or the call budget is spent.  write_file runs here,
 * into /workspace/outbox/<turnId>/; every other tool is the host's.
 *
 * Everything the model or a tool answers is untrusted: it is parsed with
 * bounds, and only the fields a request may carry are sent back.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "whttp.h"
#include "wjson.h"
#include "wlog.h"

/* "Content: a string, or at most 256 blocks" (PROTOCOL.md 5). */
#define SSE_BLOCKS_MAX		256
/* "tool_use (id 1–128 chars, name [a-zA-Z0-9_-]{1,128} ...)". */
#define TOOL_USE_FIELD_MAX	128u
/* Enough of an error answer to say what went wrong. */
#define ERROR_ECHO_MAX		300u

static const char	 model_path[] = "/anthropic/v1/messages";
static const char	 model_headers[] = "anthropic-version: 2023-06-01\r\n";

static const char	 system_prompt[] =
    "You are the reference worker of rtsandbox, answering one message in a "
    "chat channel. Answer in plain text. To attach a file to your reply, "
    "call the write_file tool once for each file.";
static const char	 memory_intro[] =
    "\n\nWhat you remember about this channel:\n";

static const char	 write_file_tool[] =
    "{\"name\":\"write_file\","
    "\"description\":\"Attach a file to your reply. The file is sent along "
    "with your answer.\","
    "\"input_schema\":{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\",\"description\":\"A plain file name: 1 "
    "to 255 characters, no folders, no / or \\\\, no control characters.\"},"
    "\"content\":{\"type\":\"string\",\"description\":\"The text of the "
    "file, at least one byte, at most 10 MiB.\"}},"
    "\"required\":[\"name\",\"content\"]}}";

/* Two texts and a few small fields; images are the bulk. */
static const struct wjson_limits turn_limits = {
	W_TURN_BODY_MAX, 16, W_TURN_BODY_MAX, 100000
};
static const struct wjson_limits answer_limits = {
	W_ANSWER_BODY_MAX, 128, W_ANSWER_BODY_MAX, 4000000
};

struct outfile {
	char		*of_name;
	size_t		 of_size;
};

struct turn {
	const struct agent_config *t_cfg;
	const char	*t_id;		/* in the turn's tree */
	int		 t_stream;
	int		 t_outdir;	/* -1 until the first file */
	struct outfile	 t_files[W_FILES_MAX];
	size_t		 t_nfiles;
	size_t		 t_total;
	int		 t_failed;
	char		 t_err[2048];
};

enum block_kind {
	BLOCK_OTHER,
	BLOCK_TEXT,
	BLOCK_TOOL,
	BLOCK_THINKING
};

enum sse_mode {
	SSE_UNKNOWN,		/* no byte of the body yet */
	SSE_EVENTS,
	SSE_PLAIN		/* a server may answer with plain JSON */
};

struct sse_block {
	struct wjson	*sb_block;
	enum block_kind	 sb_kind;
	int		 sb_open;
	struct wbuf	 sb_acc;	/* text, thinking or tool input */
	struct wbuf	 sb_sig;
};

/* An Anthropic message stream, folded into the shape of a plain answer. */
struct sse {
	enum sse_mode	 s_mode;
	struct wbuf	 s_plain;
	struct wbuf	 s_line;
	struct wbuf	 s_data;
	int		 s_has_data;
	int		 s_cr;		/* a line just ended on CR */
	int		 s_started;
	int		 s_stopped;
	char		*s_stop_reason;
	size_t		 s_nblocks;
	struct sse_block s_blocks[SSE_BLOCKS_MAX];
	int		 s_failed;
	char		 s_err[512];
};

static void __attribute__((format(printf, 3, 0)))
format_msg(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t	 len;

	(void)vsnprintf(buf, size, fmt, ap);
	/* Truncation may have split a character. */
	len = wjson_utf8_valid_prefix(buf, strlen(buf));
	buf[len] = '\0';
}

static void __attribute__((format(printf, 2, 3)))
turn_fail(struct turn *t, const char *fmt, ...)
{
	va_list	 ap;

	if (t->t_failed)
		return;
	t->t_failed = 1;
	va_start(ap, fmt);
	format_msg(t->t_err, sizeof(t->t_err), fmt, ap);
	va_end(ap);
}

static int __attribute__((format(printf, 2, 3)))
sse_fail(struct sse *s, const char *fmt, ...)
{
	va_list	 ap;

	if (!s->s_failed) {
		s->s_failed = 1;
		va_start(ap, fmt);
		format_msg(s->s_err, sizeof(s->s_err), fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* For "%.*s": bytes of at most max chars of s, never splitting one. */
static int
cut(const char *s, size_t len, size_t max)
{
	return (int)wjson_utf8_cut(s, len, max);
}

static int
streq(const char *a, const char *b)
{
	return a != NULL && strcmp(a, b) == 0;
}

int
agent_safe_name(const char *s, size_t len)
{
	unsigned long	 cp;
	size_t		 off = 0, units = 0;
	int		 n;

	if (len == 0 || (len == 1 && s[0] == '.') ||
	    (len == 2 && s[0] == '.' && s[1] == '.'))
		return 0;
	while (off < len) {
		if ((n = wjson_utf8_next(s + off, len - off, &cp)) == 0)
			return 0;
		if (cp == '/' || cp == '\\' || cp < 0x20 ||
		    (cp >= 0x7f && cp <= 0x9f))
			return 0;
		units += cp >= 0x10000 ? 2 : 1;
		off += (size_t)n;
	}
	return units <= W_SAFE_NAME_MAX;
}

/* Host tools: "names [a-z][a-z0-9_]{0,47}"; the name goes into a path. */
static int
host_tool_name(const char *s, size_t len)
{
	size_t	 i;

	if (len == 0 || len > W_TOOL_NAME_MAX || s[0] < 'a' || s[0] > 'z')
		return 0;
	for (i = 1; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

/* What a tool_use may carry back: "name [a-zA-Z0-9_-]{1,128}". */
static int
tool_use_name(const char *s, size_t len)
{
	size_t	 i;

	if (len == 0 || len > TOOL_USE_FIELD_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

static char *
base64(const unsigned char *in, size_t len, size_t *outlen)
{
	static const char	 abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t			 i, o = 0;
	unsigned long		 v;
	char			*out;

	if ((out = malloc((len + 2) / 3 * 4 + 1)) == NULL)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		v = (unsigned long)in[i] << 16 | (unsigned long)in[i + 1] << 8 |
		    in[i + 2];
		out[o++] = abc[v >> 18];
		out[o++] = abc[(v >> 12) & 63];
		out[o++] = abc[(v >> 6) & 63];
		out[o++] = abc[v & 63];
	}
	if (i < len) {
		v = (unsigned long)in[i] << 16;
		if (i + 1 < len)
			v |= (unsigned long)in[i + 1] << 8;
		out[o++] = abc[v >> 18];
		out[o++] = abc[(v >> 12) & 63];
		out[o++] = i + 1 < len ? abc[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

static struct wjson *
typed_object(const char *type)
{
	struct wjson	*o;

	if ((o = wjson_object()) != NULL)
		wjson_set(o, "type", wjson_string(type));
	return o;
}

static struct wjson *
text_block(const char *s, size_t len)
{
	struct wjson	*b;

	if ((b = typed_object("text")) != NULL)
		wjson_set(b, "text", wjson_string_len(s, len));
	return b;
}

/* A string node from a message; never NULL unless out of memory. */
static struct wjson * __attribute__((format(printf, 1, 2)))
message_string(const char *fmt, ...)
{
	va_list	 ap;
	char	 buf[1024];

	va_start(ap, fmt);
	format_msg(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return wjson_string(buf);
}

/*
 * The first request.
 */

static int
mime_ok(const char *m)
{
	return streq(m, "image/png") || streq(m, "image/jpeg") ||
	    streq(m, "image/webp") || streq(m, "image/gif");
}

static struct wjson *
first_message(struct turn *t, struct wjson *turn)
{
	struct wjson	*msg, *content, *images, *img, *src, *data, *blk;
	const char	*text, *name, *mime;
	size_t		 textlen, namelen, n = 0;
	struct wbuf	 b;

	if ((text = wjson_get_str(turn, "text", &textlen)) == NULL) {
		turn_fail(t, "the turn has no text");
		return NULL;
	}
	if ((content = wjson_array()) == NULL) {
		turn_fail(t, "out of memory");
		return NULL;
	}
	images = wjson_get(turn, "images");
	for (img = wjson_is(images, WJSON_ARRAY) ? images->j_head : NULL;
	    img != NULL; img = img->j_next, n++) {
		mime = wjson_get_str(img, "mimeType", NULL);
		if (!mime_ok(mime) ||
		    !wjson_is(wjson_get(img, "data"), WJSON_STRING)) {
			turn_fail(t, "turn image %zu is malformed", n);
			wjson_free(content);
			return NULL;
		}
		/* Moved, not copied: images are the bulk of a turn. */
		data = wjson_detach(img, "data");
		src = typed_object("base64");
		wjson_set(src, "media_type", wjson_string(mime));
		wjson_set(src, "data", data);
		blk = typed_object("image");
		wjson_set(blk, "source", src);
		wjson_append(content, blk);
	}

	wbuf_init(&b, 0);
	name = wjson_get_str(wjson_get(turn, "author"), "name", &namelen);
	if (name != NULL && namelen > 0) {
		wbuf_add(&b, name, namelen);
		wbuf_add(&b, ": ", 2);
	}
	wbuf_add(&b, text, textlen);
	if (b.b_err == 0)
		wjson_append(content, text_block(b.b_data, b.b_len));
	else
		content->j_bad = 1;
	wbuf_free(&b);

	msg = wjson_object();
	wjson_set(msg, "role", wjson_string("user"));
	wjson_set(msg, "content", content);
	if (msg == NULL || msg->j_bad) {
		turn_fail(t, "out of memory");
		wjson_free(msg);
		return NULL;
	}
	return msg;
}

static struct wjson *
build_request(struct turn *t, struct wjson *turn)
{
	struct wjson		*req, *msgs, *tools, *first;
	struct wjson_error	 err;
	const char		*memory;
	size_t			 memlen;
	struct wbuf		 sys;

	if ((first = first_message(t, turn)) == NULL)
		return NULL;
	wbuf_init(&sys, 0);
	wbuf_addstr(&sys, system_prompt);
	memory = wjson_get_str(turn, "memory", &memlen);
	if (memory != NULL && memlen > 0) {
		wbuf_addstr(&sys, memory_intro);
		wbuf_add(&sys, memory, memlen);
	}
	req = wjson_object();
	wjson_set(req, "model", wjson_string("claude"));
	wjson_set(req, "max_tokens", wjson_int(4096));
	if (sys.b_err == 0)
		wjson_set(req, "system", wjson_string_len(sys.b_data,
		    sys.b_len));
	else if (req != NULL)
		req->j_bad = 1;
	wbuf_free(&sys);
	msgs = wjson_array();
	wjson_append(msgs, first);
	wjson_set(req, "messages", msgs);
	tools = wjson_array();
	wjson_append(tools, wjson_parse(write_file_tool,
	    sizeof(write_file_tool) - 1, NULL, &err));
	wjson_set(req, "tools", tools);
	if (t->t_stream)
		wjson_set(req, "stream", wjson_bool(1));
	if (req == NULL || req->j_bad) {
		turn_fail(t, "out of memory");
		wjson_free(req);
		return NULL;
	}
	return req;
}

/*
 * Model answers.
 */

static void
model_error(struct turn *t, int ncall, const struct whttp_response *resp)
{
	struct wjson		*ans;
	const struct wjson	*e;
	const char		*type = NULL, *msg = NULL;
	size_t			 tlen = 0, mlen = 0;

	ans = wjson_parse(resp->ws_body.b_data, resp->ws_body.b_len,
	    &answer_limits, NULL);
	if ((e = wjson_get(ans, "error")) != NULL) {
		type = wjson_get_str(e, "type", &tlen);
		msg = wjson_get_str(e, "message", &mlen);
	}
	if (msg != NULL)
		turn_fail(t, "model call %d failed: HTTP %d (%.*s: %.*s)",
		    ncall, resp->ws_status,
		    type != NULL ? cut(type, tlen, 64) : 5,
		    type != NULL ? type : "error",
		    cut(msg, mlen, ERROR_ECHO_MAX), msg);
	else
		turn_fail(t, "model call %d failed: HTTP %d", ncall,
		    resp->ws_status);
	wjson_free(ans);
}

static struct wjson *
parse_message(struct turn *t, int ncall, const char *buf, size_t len)
{
	struct wjson		*msg;
	struct wjson_error	 err;

	if ((msg = wjson_parse(buf, len, &answer_limits, &err)) == NULL) {
		turn_fail(t, "model call %d: malformed answer (%s)", ncall,
		    wjson_err_to_string(err.we_err));
		return NULL;
	}
	if (!wjson_is(wjson_get(msg, "content"), WJSON_ARRAY)) {
		turn_fail(t, "model call %d: answer without content", ncall);
		wjson_free(msg);
		return NULL;
	}
	return msg;
}

static struct sse *
sse_new(void)
{
	struct sse	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	wbuf_init(&s->s_plain, W_ANSWER_BODY_MAX);
	wbuf_init(&s->s_line, W_ANSWER_BODY_MAX);
	wbuf_init(&s->s_data, W_ANSWER_BODY_MAX);
	return s;
}

static void
sse_free(struct sse *s)
{
	size_t	 i;

	if (s == NULL)
		return;
	for (i = 0; i < s->s_nblocks; i++) {
		wjson_free(s->s_blocks[i].sb_block);
		wbuf_free(&s->s_blocks[i].sb_acc);
		wbuf_free(&s->s_blocks[i].sb_sig);
	}
	wbuf_free(&s->s_plain);
	wbuf_free(&s->s_line);
	wbuf_free(&s->s_data);
	free(s->s_stop_reason);
	free(s);
}

static struct sse_block *
sse_index(struct sse *s, const struct wjson *ev)
{
	long long	 idx;

	if (wjson_int_value(wjson_get(ev, "index"), &idx) == -1 || idx < 0 ||
	    (size_t)idx >= s->s_nblocks || !s->s_blocks[idx].sb_open) {
		sse_fail(s, "model stream: event for no open block");
		return NULL;
	}
	return &s->s_blocks[idx];
}

static int
sse_block_start(struct sse *s, struct wjson *ev)
{
	struct sse_block	*sb;
	struct wjson		*cb;
	const char		*type, *v;
	size_t			 len;
	long long		 idx;

	if (wjson_int_value(wjson_get(ev, "index"), &idx) == -1 ||
	    idx < 0 || (size_t)idx != s->s_nblocks ||
	    s->s_nblocks >= SSE_BLOCKS_MAX)
		return sse_fail(s, "model stream: block out of order");
	cb = wjson_detach(ev, "content_block");
	if ((type = wjson_get_str(cb, "type", NULL)) == NULL) {
		wjson_free(cb);
		return sse_fail(s, "model stream: block without a type");
	}
	sb = &s->s_blocks[s->s_nblocks++];
	memset(sb, 0, sizeof(*sb));
	sb->sb_block = cb;
	sb->sb_open = 1;
	wbuf_init(&sb->sb_acc, W_ANSWER_BODY_MAX);
	wbuf_init(&sb->sb_sig, W_ANSWER_BODY_MAX);
	if (strcmp(type, "text") == 0) {
		sb->sb_kind = BLOCK_TEXT;
		if ((v = wjson_get_str(cb, "text", &len)) != NULL)
			wbuf_add(&sb->sb_acc, v, len);
	} else if (strcmp(type, "tool_use") == 0)
		sb->sb_kind = BLOCK_TOOL;
	else if (strcmp(type, "thinking") == 0) {
		sb->sb_kind = BLOCK_THINKING;
		if ((v = wjson_get_str(cb, "thinking", &len)) != NULL)
			wbuf_add(&sb->sb_acc, v, len);
		if ((v = wjson_get_str(cb, "signature", &len)) != NULL)
			wbuf_add(&sb->sb_sig, v, len);
	} else
		sb->sb_kind = BLOCK_OTHER;
	if (sb->sb_acc.b_err != 0 || sb->sb_sig.b_err != 0)
		return sse_fail(s, "model stream: out of memory");
	return 0;
}

static int
sse_block_delta(struct sse *s, const struct wjson *ev)
{
	struct sse_block	*sb;
	const struct wjson	*d;
	const char		*type, *v = NULL;
	struct wbuf		*to = NULL;
	size_t			 len;

	if ((sb = sse_index(s, ev)) == NULL)
		return -1;
	d = wjson_get(ev, "delta");
	if ((type = wjson_get_str(d, "type", NULL)) == NULL)
		return sse_fail(s, "model stream: delta without a type");
	if (strcmp(type, "text_delta") == 0 && sb->sb_kind == BLOCK_TEXT) {
		v = wjson_get_str(d, "text", &len);
		to = &sb->sb_acc;
	} else if (strcmp(type, "input_json_delta") == 0 &&
	    sb->sb_kind == BLOCK_TOOL) {
		v = wjson_get_str(d, "partial_json", &len);
		to = &sb->sb_acc;
	} else if (strcmp(type, "thinking_delta") == 0 &&
	    sb->sb_kind == BLOCK_THINKING) {
		v = wjson_get_str(d, "thinking", &len);
		to = &sb->sb_acc;
	} else if (strcmp(type, "signature_delta") == 0 &&
	    sb->sb_kind == BLOCK_THINKING) {
		v = wjson_get_str(d, "signature", &len);
		to = &sb->sb_sig;
	} else if (strcmp(type, "text_delta") == 0 ||
	    strcmp(type, "input_json_delta") == 0 ||
	    strcmp(type, "thinking_delta") == 0 ||
	    strcmp(type, "signature_delta") == 0)
		return sse_fail(s, "model stream: %s for another kind of "
		    "block", type);
	else	/* citations and later kinds carry nothing we send */
		return 0;
	if (v == NULL)
		return sse_fail(s, "model stream: malformed %s", type);
	if (wbuf_add(to, v, len) == -1)
		return sse_fail(s, "model stream: answer too long");
	return 0;
}

static int
sse_block_stop(struct sse *s, const struct wjson *ev)
{
	struct sse_block	*sb;
	struct wjson		*input;
	struct wjson_error	 err;

	if ((sb = sse_index(s, ev)) == NULL)
		return -1;
	sb->sb_open = 0;
	switch (sb->sb_kind) {
	case BLOCK_TEXT:
		wjson_set(sb->sb_block, "text", wjson_string_len(
		    sb->sb_acc.b_data != NULL ? sb->sb_acc.b_data : "",
		    sb->sb_acc.b_len));
		break;
	case BLOCK_TOOL:
		/* The input arrives as pieces of JSON text, whole only now. */
		if (sb->sb_acc.b_len > 0) {
			input = wjson_parse(sb->sb_acc.b_data, sb->sb_acc.b_len,
			    &answer_limits, &err);
			if (!wjson_is(input, WJSON_OBJECT)) {
				wjson_free(input);
				return sse_fail(s, "model stream: tool input "
				    "is not a JSON object");
			}
			wjson_set(sb->sb_block, "input", input);
		} else if (!wjson_is(wjson_get(sb->sb_block, "input"),
		    WJSON_OBJECT))
			wjson_set(sb->sb_block, "input", wjson_object());
		break;
	case BLOCK_THINKING:
		wjson_set(sb->sb_block, "thinking", wjson_string_len(
		    sb->sb_acc.b_data != NULL ? sb->sb_acc.b_data : "",
		    sb->sb_acc.b_len));
		wjson_set(sb->sb_block, "signature", wjson_string_len(
		    sb->sb_sig.b_data != NULL ? sb->sb_sig.b_data : "",
		    sb->sb_sig.b_len));
		break;
	case BLOCK_OTHER:
		break;
	}
	wbuf_free(&sb->sb_acc);
	wbuf_free(&sb->sb_sig);
	if (sb->sb_block->j_bad)
		return sse_fail(s, "model stream: out of memory");
	return 0;
}

static int
sse_event(struct sse *s, const char *data, size_t len)
{
	struct wjson		*ev;
	struct wjson_error	 err;
	const struct wjson	*e;
	const char		*type, *v, *m;
	size_t			 vlen = 0, mlen = 0;
	int			 r = 0;

	if (s->s_stopped)
		return 0;
	if ((ev = wjson_parse(data, len, &answer_limits, &err)) == NULL)
		return sse_fail(s, "model stream: malformed event (%s)",
		    wjson_err_to_string(err.we_err));
	if ((type = wjson_get_str(ev, "type", NULL)) == NULL)
		r = sse_fail(s, "model stream: event without a type");
	else if (strcmp(type, "message_start") == 0)
		s->s_started = 1;
	else if (strcmp(type, "error") == 0) {
		e = wjson_get(ev, "error");
		v = wjson_get_str(e, "type", &vlen);
		m = wjson_get_str(e, "message", &mlen);
		r = sse_fail(s, "model stream failed: %.*s: %.*s",
		    v != NULL ? cut(v, vlen, 64) : 5, v != NULL ? v : "error",
		    m != NULL ? cut(m, mlen, ERROR_ECHO_MAX) : 0,
		    m != NULL ? m : "");
	} else if (!s->s_started && (strncmp(type, "content_block_", 14) == 0 ||
	    strncmp(type, "message_", 8) == 0))
		r = sse_fail(s, "model stream: %.*s before message_start",
		    cut(type, strlen(type), 64), type);
	else if (strcmp(type, "content_block_start") == 0)
		r = sse_block_start(s, ev);
	else if (strcmp(type, "content_block_delta") == 0)
		r = sse_block_delta(s, ev);
	else if (strcmp(type, "content_block_stop") == 0)
		r = sse_block_stop(s, ev);
	else if (strcmp(type, "message_delta") == 0) {
		v = wjson_get_str(wjson_get(ev, "delta"), "stop_reason", &vlen);
		if (v != NULL) {
			free(s->s_stop_reason);
			if ((s->s_stop_reason = strdup(v)) == NULL)
				r = sse_fail(s, "model stream: out of memory");
		}
	} else if (strcmp(type, "message_stop") == 0)
		s->s_stopped = 1;
	wjson_free(ev);
	return r;
}

/* One line of the stream, without its end. */
static int
sse_line(struct sse *s, const char *line, size_t len)
{
	const char	*colon, *v;
	size_t		 flen, vlen;
	int		 r;

	if (len == 0) {
		if (!s->s_has_data)
			return 0;
		r = sse_event(s, s->s_data.b_data, s->s_data.b_len);
		wbuf_reset(&s->s_data);
		s->s_has_data = 0;
		return r;
	}
	if (line[0] == ':')
		return 0;
	if ((colon = memchr(line, ':', len)) != NULL) {
		flen = (size_t)(colon - line);
		v = colon + 1;
		vlen = len - flen - 1;
		if (vlen > 0 && *v == ' ') {
			v++;
			vlen--;
		}
	} else {
		flen = len;
		v = "";
		vlen = 0;
	}
	/* The event name repeats the data's "type", which is what counts. */
	if (flen != 4 || memcmp(line, "data", 4) != 0)
		return 0;
	if (s->s_has_data)
		wbuf_addc(&s->s_data, '\n');
	wbuf_add(&s->s_data, v, vlen);
	s->s_has_data = 1;
	if (s->s_data.b_err != 0)
		return sse_fail(s, "model stream: answer too long");
	return 0;
}

/* Lines end with CR LF, LF or CR, and a CR LF may span two reads. */
static int
sse_feed(struct sse *s, const char *p, size_t len)
{
	size_t	 i, start = 0;

	for (i = 0; i < len; i++) {
		if (p[i] != '\r' && p[i] != '\n')
			continue;
		if (p[i] == '\n' && s->s_cr && i == start) {
			s->s_cr = 0;
			start = i + 1;
			continue;
		}
		if (wbuf_add(&s->s_line, p + start, i - start) == -1)
			return sse_fail(s, "model stream: answer too long");
		if (sse_line(s, s->s_line.b_data != NULL ? s->s_line.b_data :
		    "", s->s_line.b_len) == -1)
			return -1;
		wbuf_reset(&s->s_line);
		s->s_cr = p[i] == '\r';
		start = i + 1;
	}
	if (start < len) {
		s->s_cr = 0;
		if (wbuf_add(&s->s_line, p + start, len - start) == -1)
			return sse_fail(s, "model stream: answer too long");
	}
	return 0;
}

static int
ct_is(const char *ct, const char *want)
{
	size_t	 n = strlen(want), i;
	char	 c;

	for (i = 0; i < n; i++) {
		c = ct[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != want[i])
			return 0;
	}
	return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ';
}

static int
sse_sink(void *arg, const struct whttp_response *resp, const char *p,
    size_t len)
{
	struct sse	*s = arg;

	if (s->s_mode == SSE_UNKNOWN)
		s->s_mode = ct_is(resp->ws_content_type, "text/event-stream") ?
		    SSE_EVENTS : SSE_PLAIN;
	if (s->s_mode == SSE_PLAIN)
		return wbuf_add(&s->s_plain, p, len) == -1 ?
		    sse_fail(s, "model answer too long") : 0;
	return sse_feed(s, p, len);
}

static struct wjson *
sse_message(struct turn *t, int ncall, struct sse *s)
{
	struct wjson	*msg, *content;
	size_t		 i;

	if (s->s_mode == SSE_PLAIN)
		return parse_message(t, ncall, s->s_plain.b_data,
		    s->s_plain.b_len);
	if (s->s_mode == SSE_UNKNOWN || !s->s_stopped) {
		turn_fail(t, "model call %d: the stream ended before "
		    "message_stop", ncall);
		return NULL;
	}
	for (i = 0; i < s->s_nblocks; i++) {
		if (s->s_blocks[i].sb_open) {
			turn_fail(t, "model call %d: a block of the stream was "
			    "never closed", ncall);
			return NULL;
		}
	}
	msg = wjson_object();
	content = wjson_array();
	for (i = 0; i < s->s_nblocks; i++) {
		wjson_append(content, s->s_blocks[i].sb_block);
		s->s_blocks[i].sb_block = NULL;
	}
	wjson_set(msg, "content", content);
	if (s->s_stop_reason != NULL)
		wjson_set(msg, "stop_reason", wjson_string(s->s_stop_reason));
	if (msg == NULL || msg->j_bad) {
		turn_fail(t, "out of memory");
		wjson_free(msg);
		return NULL;
	}
	return msg;
}

static struct wjson *
model_call(struct turn *t, int ncall, const struct wjson *req)
{
	struct whttp_request	 hr;
	struct whttp_response	 resp;
	struct wjson		*msg = NULL;
	struct sse		*s = NULL;
	enum whttp_err		 e;
	char			*body;
	size_t			 len;

	if ((body = wjson_emit_str(req, W_REQUEST_BODY_MAX, &len)) == NULL) {
		turn_fail(t, "model call %d: the request is too large",
		    ncall);
		return NULL;
	}
	if (t->t_stream && (s = sse_new()) == NULL) {
		free(body);
		turn_fail(t, "out of memory");
		return NULL;
	}
	memset(&hr, 0, sizeof(hr));
	hr.wr_method = "POST";
	hr.wr_path = model_path;
	hr.wr_content_type = "application/json";
	hr.wr_extra = model_headers;
	hr.wr_body = body;
	hr.wr_body_len = len;
	hr.wr_timeout_ms = W_MODEL_TIMEOUT_MS;
	hr.wr_body_max = W_ANSWER_BODY_MAX;
	if (s != NULL) {
		hr.wr_sink = sse_sink;
		hr.wr_sink_arg = s;
	}
	e = whttp_do(t->t_cfg->ac_socket, &hr, &resp);
	free(body);
	if (e == WHTTP_ERR_SINK && s != NULL && s->s_failed)
		turn_fail(t, "model call %d: %s", ncall, s->s_err);
	else if (e != WHTTP_OK)
		turn_fail(t, "model call %d failed: %s", ncall,
		    whttp_err_to_string(e));
	else if (resp.ws_status < 200 || resp.ws_status > 299)
		model_error(t, ncall, &resp);
	else if (s != NULL)
		msg = sse_message(t, ncall, s);
	else
		msg = parse_message(t, ncall, resp.ws_body.b_data,
		    resp.ws_body.b_len);
	whttp_response_free(&resp);
	sse_free(s);
	return msg;
}

/*
 * Only the blocks and fields that a request may carry go back to the
 * model; anything else an answer holds is dropped here.
 */
static struct wjson *
clean_content(struct turn *t, int ncall, const struct wjson *content,
    size_t *ntools)
{
	const struct wjson	*b, *input;
	struct wjson		*out, *nb = NULL;
	const char		*type = NULL, *id, *name, *v, *sig;
	size_t			 idlen, namelen, vlen, siglen;

	*ntools = 0;
	if ((out = wjson_array()) == NULL) {
		turn_fail(t, "out of memory");
		return NULL;
	}
	for (b = content->j_head; b != NULL; b = b->j_next) {
		type = wjson_get_str(b, "type", NULL);
		if (streq(type, "text")) {
			if ((v = wjson_get_str(b, "text", &vlen)) == NULL)
				goto bad;
			nb = text_block(v, vlen);
		} else if (streq(type, "tool_use")) {
			id = wjson_get_str(b, "id", &idlen);
			name = wjson_get_str(b, "name", &namelen);
			input = wjson_get(b, "input");
			if (id == NULL || idlen == 0 ||
			    wjson_utf16_len(id, idlen) > TOOL_USE_FIELD_MAX ||
			    name == NULL || !tool_use_name(name, namelen) ||
			    !wjson_is(input, WJSON_OBJECT))
				goto bad;
			nb = typed_object("tool_use");
			wjson_set(nb, "id", wjson_string_len(id, idlen));
			wjson_set(nb, "name", wjson_string_len(name, namelen));
			wjson_set(nb, "input", wjson_copy(input));
			(*ntools)++;
		} else if (streq(type, "thinking")) {
			v = wjson_get_str(b, "thinking", &vlen);
			sig = wjson_get_str(b, "signature", &siglen);
			if (v == NULL || sig == NULL)
				goto bad;
			nb = typed_object("thinking");
			wjson_set(nb, "thinking", wjson_string_len(v, vlen));
			wjson_set(nb, "signature", wjson_string_len(sig,
			    siglen));
		} else if (streq(type, "redacted_thinking")) {
			if ((v = wjson_get_str(b, "data", &vlen)) == NULL)
				goto bad;
			nb = typed_object("redacted_thinking");
			wjson_set(nb, "data", wjson_string_len(v, vlen));
		} else
			continue;
		if (wjson_append(out, nb) == -1) {
			turn_fail(t, "out of memory");
			wjson_free(out);
			return NULL;
		}
	}
	return out;
bad:
	turn_fail(t, "model call %d: malformed %.*s block in the answer",
	    ncall, type != NULL ? cut(type, strlen(type), 64) : 7,
	    type != NULL ? type : "content");
	wjson_free(out);
	return NULL;
}

/*
 * Tools.
 */

static int
outdir_open(struct turn *t)
{
	int	 ws, ob;

	if (t->t_outdir != -1)
		return 0;
	if ((ws = open(t->t_cfg->ac_workspace, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		wlog_errno("turn %s: %s", t->t_id, t->t_cfg->ac_workspace);
		return -1;
	}
	/*
	 * The host makes outbox/ and replaces a planted link by a folder;
	 * here a link or a file in its place only makes the write fail.
	 */
	if ((mkdirat(ws, "outbox", 0700) == -1 && errno != EEXIST) ||
	    (ob = openat(ws, "outbox", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		wlog_errno("turn %s: outbox", t->t_id);
		(void)close(ws);
		return -1;
	}
	(void)close(ws);
	if ((mkdirat(ob, t->t_id, 0700) == -1 && errno != EEXIST) ||
	    (t->t_outdir = openat(ob, t->t_id, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1) {
		wlog_errno("turn %s: outbox folder", t->t_id);
		(void)close(ob);
		t->t_outdir = -1;
		return -1;
	}
	(void)close(ob);
	return 0;
}

static struct wjson *
write_file(struct turn *t, const struct wjson *input, int *is_error)
{
	const char	*name, *content, *p;
	size_t		 namelen, len, left;
	ssize_t		 n;
	char		*copy;
	int		 fd, saved;

	*is_error = 1;
	name = wjson_get_str(input, "name", &namelen);
	content = wjson_get_str(input, "content", &len);
	if (name == NULL || content == NULL)
		return wjson_string("write_file needs a string name and a "
		    "string content.");
	if (!agent_safe_name(name, namelen))
		return wjson_string("write_file: the name must be a plain file "
		    "name of 1 to 255 characters, without / or \\ or control "
		    "characters, and not . or ..");
	if (len == 0)
		return wjson_string("write_file: the content must not be "
		    "empty.");
	if (len > W_FILE_MAX)
		return wjson_string("write_file: a file may hold at most "
		    "10 MiB.");
	if (t->t_nfiles >= W_FILES_MAX)
		return wjson_string("write_file: a reply may carry at most 10 "
		    "files.");
	if (len > W_FILES_TOTAL_MAX - t->t_total)
		return wjson_string("write_file: the files of a reply may hold "
		    "at most 50 MiB in all.");
	if (outdir_open(t) == -1)
		return wjson_string("write_file: the outbox folder cannot be "
		    "used.");
	if ((copy = strdup(name)) == NULL)
		return wjson_string("write_file: out of memory.");

	/* The name is a plain file name: no separator, no NUL. */
	fd = openat(t->t_outdir, name, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1) {
		saved = errno;
		free(copy);
		if (saved == EEXIST)
			return message_string("write_file: %s already exists.",
			    name);
		errno = saved;
		wlog_errno("turn %s: write_file", t->t_id);
		return message_string("write_file: %s cannot be created (%s).",
		    name, strerror(saved));
	}
	saved = 0;
	for (p = content, left = len; left > 0; ) {
		if ((n = write(fd, p, left)) == -1) {
			if (errno == EINTR)
				continue;
			saved = errno;
			break;
		}
		/* Not for a regular file; but never spin on it. */
		if (n == 0) {
			saved = EIO;
			break;
		}
		p += n;
		left -= (size_t)n;
	}
	/* A failed close can be a failed write that was deferred. */
	if (close(fd) == -1 && saved == 0)
		saved = errno;
	if (saved != 0) {
		/* Half a file must not be mistaken for the reply's. */
		if (unlinkat(t->t_outdir, name, 0) == -1)
			wlog_errno("turn %s: unlink", t->t_id);
		free(copy);
		return message_string("write_file: %s could not be written "
		    "(%s).", name, strerror(saved));
	}
	t->t_files[t->t_nfiles].of_name = copy;
	t->t_files[t->t_nfiles].of_size = len;
	t->t_nfiles++;
	t->t_total += len;
	*is_error = 0;
	return message_string("Wrote %s (%zu bytes); it goes with the reply.",
	    name, len);
}

static struct wjson *
host_tool(struct turn *t, const char *name, size_t namelen,
    const struct wjson *input, int *is_error)
{
	struct whttp_request	 hr;
	struct whttp_response	 resp;
	struct wjson		*body, *ans = NULL, *out = NULL, *img, *src;
	const struct wjson	*ok, *image;
	enum whttp_err		 e;
	const char		*text, *mime, *data;
	char			 path[16 + W_TOOL_NAME_MAX];
	char			*req;
	size_t			 len, textlen, datalen;

	*is_error = 1;
	if (!host_tool_name(name, namelen))
		return message_string("There is no tool named %.*s.",
		    cut(name, namelen, 128), name);
	body = wjson_object();
	wjson_set(body, "input", wjson_copy(input));
	req = wjson_emit_str(body, W_REQUEST_BODY_MAX, &len);
	wjson_free(body);
	if (req == NULL)
		return message_string("Tool %s: the input is too large.", name);
	(void)snprintf(path, sizeof(path), "/tools/%s", name);

	memset(&hr, 0, sizeof(hr));
	hr.wr_method = "POST";
	hr.wr_path = path;
	hr.wr_content_type = "application/json";
	hr.wr_body = req;
	hr.wr_body_len = len;
	hr.wr_timeout_ms = W_TOOL_TIMEOUT_MS;
	hr.wr_body_max = W_ANSWER_BODY_MAX;
	e = whttp_do(t->t_cfg->ac_socket, &hr, &resp);
	free(req);
	if (e != WHTTP_OK) {
		out = message_string("Tool %s failed: %s.", name,
		    whttp_err_to_string(e));
		goto done;
	}
	if (resp.ws_status != 200) {
		/* The broker's refusals are one short line of text. */
		len = strcspn(resp.ws_body.b_data != NULL ?
		    resp.ws_body.b_data : "", "\r\n");
		out = message_string("Tool %s failed: HTTP %d %.*s", name,
		    resp.ws_status, cut(resp.ws_body.b_data != NULL ?
		    resp.ws_body.b_data : "", len, ERROR_ECHO_MAX),
		    resp.ws_body.b_data != NULL ? resp.ws_body.b_data : "");
		goto done;
	}
	ans = wjson_parse(resp.ws_body.b_data, resp.ws_body.b_len,
	    &answer_limits, NULL);
	if (!wjson_is((ok = wjson_get(ans, "ok")), WJSON_BOOL)) {
		out = message_string("Tool %s gave a malformed answer.", name);
		goto done;
	}
	if (!ok->j_bool) {
		if ((text = wjson_get_str(ans, "error", &textlen)) != NULL &&
		    textlen > 0)
			out = wjson_string_len(text, textlen);
		else
			out = message_string("Tool %s failed.", name);
		goto done;
	}
	*is_error = 0;
	text = wjson_get_str(ans, "text", &textlen);
	image = wjson_get(ans, "image");
	mime = wjson_get_str(image, "mimeType", NULL);
	data = wjson_get_str(image, "data", &datalen);
	if (image == NULL || !mime_ok(mime) || data == NULL) {
		if (text != NULL && textlen > 0)
			out = wjson_string_len(text, textlen);
		else
			out = wjson_string("(no output)");
		goto done;
	}
	out = wjson_array();
	if (text != NULL && textlen > 0)
		wjson_append(out, text_block(text, textlen));
	src = typed_object("base64");
	wjson_set(src, "media_type", wjson_string(mime));
	wjson_set(src, "data", wjson_string_len(data, datalen));
	img = typed_object("image");
	wjson_set(img, "source", src);
	wjson_append(out, img);
done:
	whttp_response_free(&resp);
	wjson_free(ans);
	/* An answer that could not be built is still a tool_result. */
	if (out == NULL || out->j_bad) {
		wjson_free(out);
		*is_error = 1;
		out = wjson_string("The tool's answer could not be used.");
	}
	return out;
}

static struct wjson *
run_tools(struct turn *t, const struct wjson *content)
{
	const struct wjson	*b;
	struct wjson		*results, *r, *out;
	const char		*name, *id;
	size_t			 namelen;
	int			 is_error;

	if ((results = wjson_array()) == NULL)
		return NULL;
	for (b = content->j_head; b != NULL; b = b->j_next) {
		if (!streq(wjson_get_str(b, "type", NULL), "tool_use"))
			continue;
		id = wjson_get_str(b, "id", NULL);
		name = wjson_get_str(b, "name", &namelen);
		if (strcmp(name, "write_file") == 0)
			out = write_file(t, wjson_get(b, "input"), &is_error);
		else
			out = host_tool(t, name, namelen, wjson_get(b, "input"),
			    &is_error);
		wlog("turn %s: tool %s: %s", t->t_id, name,
		    is_error ? "error" : "ok");
		r = typed_object("tool_result");
		wjson_set(r, "tool_use_id", wjson_string(id));
		wjson_set(r, "content", out);
		if (is_error)
			wjson_set(r, "is_error", wjson_bool(1));
		wjson_append(results, r);
	}
	return results;
}

static char *
reply_text(const struct wjson *content, size_t *lenp)
{
	const struct wjson	*b;
	const char		*v;
	size_t			 len;
	struct wbuf		 out;

	wbuf_init(&out, 0);
	for (b = content->j_head; b != NULL; b = b->j_next) {
		if (!streq(wjson_get_str(b, "type", NULL), "text"))
			continue;
		if ((v = wjson_get_str(b, "text", &len)) != NULL)
			wbuf_add(&out, v, len);
	}
	return wbuf_steal(&out, lenp);
}

/* The reply text, or NULL with the turn failed. */
static char *
agent_run(struct turn *t, struct wjson *turn, size_t *lenp)
{
	struct wjson	*req, *msgs, *msg, *clean, *results, *m;
	const char	*ctext;
	char		*text = NULL, cerr[1200];
	size_t		 ntools, ctextlen;
	int		 ncall;

	if ((req = build_request(t, turn)) == NULL)
		return NULL;
	msgs = wjson_get(req, "messages");
	if ((ctext = wjson_get_str(turn, "text", &ctextlen)) != NULL &&
	    compact_command(ctext, ctextlen)) {
		if ((text = compact_turn(t->t_cfg, t->t_id, msgs->j_head, ctext,
		    ctextlen, lenp, cerr, sizeof(cerr))) == NULL)
			turn_fail(t, "%s", cerr);
		wjson_free(req);
		return text;
	}
	for (ncall = 1; ; ncall++) {
		if ((msg = model_call(t, ncall, req)) == NULL)
			break;
		clean = clean_content(t, ncall, wjson_get(msg, "content"),
		    &ntools);
		wjson_free(msg);
		if (clean == NULL)
			break;
		if (ntools == 0) {
			if ((text = reply_text(clean, lenp)) == NULL)
				turn_fail(t, "out of memory");
			wjson_free(clean);
			break;
		}
		/* Tools run only when the model may still see their results. */
		if (ncall >= W_MODEL_CALLS_MAX) {
			turn_fail(t, "stopped after %d model calls without a "
			    "final answer", W_MODEL_CALLS_MAX);
			wjson_free(clean);
			break;
		}
		results = run_tools(t, clean);
		m = wjson_object();
		wjson_set(m, "role", wjson_string("assistant"));
		wjson_set(m, "content", clean);
		wjson_append(msgs, m);
		m = wjson_object();
		wjson_set(m, "role", wjson_string("user"));
		wjson_set(m, "content", results);
		if (wjson_append(msgs, m) == -1) {
			turn_fail(t, "out of memory");
			break;
		}
	}
	wjson_free(req);
	return text;
}

/*
 * The result.
 */

static struct wjson *
read_file(struct turn *t, const struct outfile *of)
{
	struct stat	 st;
	unsigned char	*buf;
	char		*b64;
	size_t		 got = 0, b64len = 0;
	ssize_t		 n;
	int		 fd;

	/* O_NONBLOCK: whatever sits under the name, the open cannot hang. */
	fd = openat(t->t_outdir, of->of_name, O_RDONLY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		wlog_errno("turn %s: read back", t->t_id);
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_size < 1 ||
	    (size_t)st.st_size > W_FILE_MAX ||
	    (size_t)st.st_size != of->of_size) {
		wlog("turn %s: a reply file changed after it was written",
		    t->t_id);
		(void)close(fd);
		return NULL;
	}
	if ((buf = malloc(of->of_size + 1)) == NULL) {
		(void)close(fd);
		return NULL;
	}
	/* One byte more than expected tells a file that grew. */
	while (got < of->of_size + 1) {
		n = read(fd, buf + got, of->of_size + 1 - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	(void)close(fd);
	if (got != of->of_size) {
		wlog("turn %s: a reply file changed after it was written",
		    t->t_id);
		free(buf);
		return NULL;
	}
	b64 = base64(buf, got, &b64len);
	free(buf);
	return wjson_string_take(b64, b64len);
}

static struct wjson *
reply_files(struct turn *t)
{
	struct wjson	*files, *f, *data;
	size_t		 i;

	if ((files = wjson_array()) == NULL)
		return NULL;
	for (i = 0; i < t->t_nfiles; i++) {
		if ((data = read_file(t, &t->t_files[i])) == NULL) {
			wjson_free(files);
			return NULL;
		}
		f = wjson_object();
		wjson_set(f, "name", wjson_string(t->t_files[i].of_name));
		wjson_set(f, "data", data);
		wjson_append(files, f);
	}
	if (files->j_bad) {
		wjson_free(files);
		return NULL;
	}
	return files;
}

static char *
result_body(struct turn *t, const char *text, size_t textlen, size_t *lenp)
{
	struct wjson	*root, *r, *files = NULL;
	char		*out;

	if (!t->t_failed && (files = reply_files(t)) == NULL)
		turn_fail(t, "the reply files could not be read back");
	root = wjson_object();
	wjson_set(root, "turnId", wjson_string(t->t_id));
	r = wjson_object();
	if (!t->t_failed) {
		wjson_set(r, "ok", wjson_bool(1));
		wjson_set(r, "text", wjson_string_len(text,
		    wjson_utf8_cut(text, textlen, W_RESULT_TEXT_MAX)));
		wjson_set(r, "files", files);
	} else {
		wjson_set(r, "ok", wjson_bool(0));
		wjson_set(r, "error", wjson_string_len(t->t_err,
		    wjson_utf8_cut(t->t_err, strlen(t->t_err),
		    W_RESULT_ERROR_MAX)));
	}
	wjson_set(root, "result", r);
	out = wjson_emit_str(root, W_RESULT_BODY_MAX, lenp);
	wjson_free(root);
	return out;
}

/*
 * Runs one turn and returns the body for POST /worker/result, or NULL
 * when the turn cannot be answered at all (no usable turnId).
 */
char *
agent_turn(const struct agent_config *cfg, const char *body, size_t len,
    size_t *outlen)
{
	struct wjson		*turn;
	struct wjson_error	 err;
	struct turn		 t;
	const char		*id, *text;
	char			*reply = NULL, *out;
	size_t			 idlen, textlen = 0, replylen = 0, i;

	if ((turn = wjson_parse(body, len, &turn_limits, &err)) == NULL) {
		wlog("turn refused: %s at byte %zu",
		    wjson_err_to_string(err.we_err), err.we_offset);
		return NULL;
	}
	id = wjson_get_str(turn, "turnId", &idlen);
	if (id == NULL || !agent_safe_name(id, idlen)) {
		wlog("turn refused: no usable turnId");
		wjson_free(turn);
		return NULL;
	}
	memset(&t, 0, sizeof(t));
	t.t_cfg = cfg;
	t.t_id = id;
	t.t_outdir = -1;
	text = wjson_get_str(turn, "text", &textlen);
	t.t_stream = text != NULL && memmem(text, textlen, "[[stream]]",
	    10) != NULL;
	wlog("turn %s: started%s", id, t.t_stream ? " (streamed)" : "");

	if ((reply = agent_run(&t, turn, &replylen)) == NULL)
		replylen = 0;
	out = result_body(&t, reply != NULL ? reply : "", replylen, outlen);
	if (out == NULL && !t.t_failed) {
		/* Within the limits this cannot happen; say so, not nothing. */
		turn_fail(&t, "the reply could not be encoded");
		out = result_body(&t, "", 0, outlen);
	}
	if (t.t_failed)
		wlog("turn %s: failed: %s", id, t.t_err);
	else
		wlog("turn %s: answered, %zu file%s", id, t.t_nfiles,
		    t.t_nfiles == 1 ? "" : "s");

	for (i = 0; i < t.t_nfiles; i++)
		free(t.t_files[i].of_name);
	if (t.t_outdir != -1)
		(void)close(t.t_outdir);
	free(reply);
	wjson_free(turn);
	return out;
}
