/*
 * The message table and its accessors: every row built with msg_add_*()
 * and read back with the getters, and every refusal of msg_parse(), the
 * getters, msg_end() and the builder.
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <event2/event.h>

#include "frame.h"
#include "msg.h"

#define INT53	9007199254740991ULL	/* 2^53 - 1 */

static int
memfd(const char *name)
{
	int	 fd = memfd_create(name, MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	return fd;
}

static int
is_closed(int fd)
{
	return fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

static ino_t
ino(int fd)
{
	struct stat	 st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	return st.st_ino;
}

static enum proc_role
first_role(unsigned mask)
{
	int	 r;

	for (r = 0; r < PROC__COUNT; r++)
		if (mask & (1u << r))
			return r;
	ck_abort_msg("empty role mask");
	return PROC__COUNT;
}

/* Parse json (length len, or strlen when len is 0) as a frame would bring
 * it. */
static int
parse_len(struct msg *m, enum proc_role from, enum proc_role to,
    const char *json, size_t len, const int *fds, int nfds, const void *data,
    size_t dlen)
{
	struct frame	 f;
	int		 i, rc;

	memset(&f, 0, sizeof(f));
	f.f_json = (const uint8_t *)json;
	f.f_json_len = len ? len : strlen(json);
	f.f_data = data;
	f.f_data_len = dlen;
	for (i = 0; i < FRAME_MAXFDS; i++)
		f.f_fds[i] = i < nfds ? fds[i] : -1;
	f.f_nfds = nfds;
	rc = msg_parse(m, from, to, &f);
	/* Whatever the outcome, the message took the descriptors. */
	for (i = 0; i < FRAME_MAXFDS; i++)
		ck_assert_int_eq(f.f_fds[i], -1);
	return rc;
}

static int
parse(struct msg *m, enum proc_role from, enum proc_role to, const char *json)
{
	return parse_len(m, from, to, json, 0, NULL, 0, NULL, 0);
}

/* A supervisor-to-fsguard message with extra fields, parsed. */
static void
parse_cfg(struct msg *m, const char *fields)
{
	char	 buf[8192];

	snprintf(buf, sizeof(buf), "{\"t\":\"config_fsguard\"%s%s}",
	    fields[0] ? "," : "", fields);
	ck_assert_msg(parse(m, PROC_SUPERVISOR, PROC_FSGUARD, buf) == 0,
	    "%s: %s", buf, m->m_err);
}

static void
refused(const char *json, enum proc_role from, enum proc_role to,
    const char *why)
{
	struct msg	 m;

	ck_assert_msg(parse(&m, from, to, json) == -1, "accepted %s", json);
	ck_assert_int_eq(m.m_failed, 1);
	/* The reason starts with why; the strict lexer may add where. */
	ck_assert_msg(strncmp(m.m_err, why, strlen(why)) == 0,
	    "reason \"%s\", expected \"%s\"", m.m_err, why);
	/* Sticky: the getters and msg_end() refuse too. */
	ck_assert_int_eq(msg_end(&m), -1);
	ck_assert_msg(strncmp(m.m_err, why, strlen(why)) == 0,
	    "reason \"%s\" after msg_end", m.m_err);
	msg_free(&m);
}

/*
 * The table
 */

START_TEST(table_names)
{
	const struct msg_def	*md;
	int			 t, u;

	ck_assert_ptr_null(msg_def(MSG_NONE));
	ck_assert_ptr_null(msg_def(MSG__COUNT));
	ck_assert_ptr_null(msg_def((enum msg_type)-1));
	ck_assert_ptr_null(msg_type_name(MSG_NONE));
	ck_assert_int_eq(msg_type_from_name("nope"), MSG_NONE);
	ck_assert_int_eq(msg_type_from_name(""), MSG_NONE);
	ck_assert_int_eq(msg_type_from_name(NULL), MSG_NONE);
	ck_assert_int_eq(msg_type_from_name("READY"), MSG_NONE);
	for (t = MSG_NONE + 1; t < MSG__COUNT; t++) {
		md = msg_def(t);
		ck_assert_ptr_nonnull(md);
		ck_assert_str_eq(msg_type_name(t), md->md_name);
		ck_assert_int_eq(msg_type_from_name(md->md_name), t);
		ck_assert_uint_ne(md->md_from, 0);
		ck_assert_uint_ne(md->md_to, 0);
		ck_assert_int_ge(md->md_nfds, 0);
		ck_assert_int_le(md->md_nfds, FRAME_MAXFDS);
		ck_assert_int_ge(md->md_reply, MSG_NONE);
		ck_assert_int_lt(md->md_reply, MSG__COUNT);
		for (u = MSG_NONE + 1; u < t; u++)
			ck_assert_str_ne(msg_def(u)->md_name, md->md_name);
	}
	ck_assert_int_eq(msg_def(MSG_PING)->md_reply, MSG_PONG);
	ck_assert_int_eq(msg_def(MSG_CONFIG_BROKER)->md_nfds, 1);
}
END_TEST

/* Requests and replies carry ids; "error" answers any request. */
static int
needs_id(enum msg_type t)
{
	int	 u;

	if (msg_def(t)->md_reply != MSG_NONE || t == MSG_ERROR)
		return 1;
	for (u = MSG_NONE + 1; u < MSG__COUNT; u++)
		if (msg_def(u)->md_reply == t)
			return 1;
	return 0;
}

/* Every row, with a field of each kind, through the builder and back. */
START_TEST(row_round_trip)
{
	static const char *const v[] = { "a", "", "\xc3\xa9t\xc3\xa9" };
	const struct msg_def	*md = msg_def(_i);
	const char		*s, **sv;
	struct msgb		 mb;
	struct msg		 m;
	struct frame		 f;
	uint64_t		 u, id = needs_id(_i) ? 42 : 0;
	int64_t			 i64;
	size_t			 len, n;
	char			*json;
	int			 b, k, fd;
	ino_t			 inos[FRAME_MAXFDS];

	msgb_init(&mb, _i, id);
	msg_add_str(&mb, "s", "h\xc3\xa9llo \"quoted\"\n");
	msg_add_uint(&mb, "u", INT53);
	msg_add_int(&mb, "i", -12345);
	msg_add_bool(&mb, "b", 1);
	msg_add_bool(&mb, "f", 0);
	msg_add_strv(&mb, "v", v, 3);
	msg_add_strv(&mb, "e", NULL, 0);
	for (k = 0; k < md->md_nfds; k++) {
		fd = memfd("row");
		inos[k] = ino(fd);
		msg_add_fd(&mb, fd);
	}
	ck_assert_int_eq(mb.mb_failed, 0);
	json = msgb_json(&mb, &len);
	ck_assert_ptr_nonnull(json);
	ck_assert_uint_eq(strlen(json), len);
	ck_assert(strncmp(json, "{\"t\":\"", 6) == 0);
	if (id != 0)
		ck_assert_ptr_nonnull(strstr(json, "\",\"id\":42,"));

	memset(&f, 0, sizeof(f));
	f.f_json = (const uint8_t *)json;
	f.f_json_len = len;
	for (k = 0; k < FRAME_MAXFDS; k++) {
		f.f_fds[k] = mb.mb_fds[k];
		mb.mb_fds[k] = -1;
	}
	f.f_nfds = mb.mb_nfds;
	mb.mb_nfds = 0;
	msgb_free(&mb);

	ck_assert_msg(msg_parse(&m, first_role(md->md_from),
	    first_role(md->md_to), &f) == 0, "%s: %s", json, m.m_err);
	ck_assert_int_eq(m.m_type, _i);
	ck_assert_int_eq(m.m_has_id, id != 0);
	ck_assert_uint_eq(m.m_id, id);
	ck_assert_int_eq(msg_get_str(&m, "s", 64, &s), 0);
	ck_assert_str_eq(s, "h\xc3\xa9llo \"quoted\"\n");
	ck_assert_int_eq(msg_get_uint(&m, "u", 0, UINT64_MAX, &u), 0);
	ck_assert_uint_eq(u, INT53);
	ck_assert_int_eq(msg_get_int(&m, "i", INT64_MIN, INT64_MAX, &i64), 0);
	ck_assert_int_eq(i64, -12345);
	ck_assert_int_eq(msg_get_bool(&m, "b", &b), 0);
	ck_assert_int_eq(b, 1);
	ck_assert_int_eq(msg_get_bool(&m, "f", &b), 0);
	ck_assert_int_eq(b, 0);
	ck_assert_int_eq(msg_get_strv(&m, "v", 3, 5, &sv, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(sv[0], "a");
	ck_assert_str_eq(sv[1], "");
	ck_assert_str_eq(sv[2], "\xc3\xa9t\xc3\xa9");
	ck_assert_ptr_null(sv[3]);
	ck_assert_int_eq(msg_get_strv(&m, "e", 0, 0, &sv, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(sv[0]);
	for (k = 0; k < md->md_nfds; k++) {
		ck_assert_int_eq(msg_get_fd(&m, &fd), 0);
		ck_assert_uint_eq(ino(fd), inos[k]);
		close(fd);
	}
	ck_assert_int_eq(msg_end(&m), 0);
	/* Strings live until msg_free(). */
	ck_assert_str_eq(s, "h\xc3\xa9llo \"quoted\"\n");
	msg_free(&m);
	free(json);
}
END_TEST

static void
got_frame(struct frame_conn *c, struct frame *f, void *arg)
{
	struct msg	*m = arg;

	ck_assert_int_eq(msg_parse(m, PROC_SUPERVISOR, PROC_BROKER, f), 0);
}

static void
got_err(struct frame_conn *c, enum frame_err err, void *arg)
{
	ck_abort_msg("frame error %s", frame_err_to_string(err));
}

/* msg_send() over a real conn, with a descriptor. */
START_TEST(send_over_conn)
{
	static const struct frame_limits lim = { 1024, 0 };
	struct event_base	*base;
	struct frame_conn	*a, *b;
	struct msgb		 mb;
	struct msg		 m;
	const char		*s;
	char			 big[1100];
	int			 sv[2], fd, got, i;
	ino_t			 i1;

	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	memset(&m, 0, sizeof(m));
	a = frame_conn_new(base, sv[0], &lim, &lim, got_frame, got_err, &m);
	b = frame_conn_new(base, sv[1], &lim, &lim, got_frame, got_err, &m);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	fd = memfd("sock");
	i1 = ino(fd);
	msgb_init(&mb, MSG_CONFIG_BROKER, 0);
	msg_add_str(&mb, "channel", "discord_123");
	msg_add_fd(&mb, fd);
	ck_assert_int_eq(msg_send(a, &mb), 0);
	ck_assert_ptr_null(mb.mb_buf);
	for (i = 0; i < 100 && m.m_type == MSG_NONE; i++)
		event_base_loop(base, EVLOOP_ONCE);
	ck_assert_int_eq(m.m_type, MSG_CONFIG_BROKER);
	ck_assert_int_eq(msg_get_str(&m, "channel", 256, &s), 0);
	ck_assert_str_eq(s, "discord_123");
	ck_assert_int_eq(msg_get_fd(&m, &got), 0);
	ck_assert_uint_eq(ino(got), i1);
	ck_assert_int_eq(msg_end(&m), 0);
	msg_free(&m);
	close(got);

	/* Refused by the table on the sending side: no descriptor. */
	msgb_init(&mb, MSG_CONFIG_BROKER, 0);
	msg_add_str(&mb, "channel", "x");
	ck_assert_int_eq(msg_send(a, &mb), -1);
	/* And one too many, which the builder closes. */
	msgb_init(&mb, MSG_READY, 0);
	fd = memfd("extra");
	msg_add_fd(&mb, fd);
	ck_assert_int_eq(msg_send(a, &mb), -1);
	ck_assert(is_closed(fd));
	/* Longer than the edge allows: refused by the conn, fd closed. */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	msgb_init(&mb, MSG_CONFIG_BROKER, 0);
	msg_add_str(&mb, "channel", big);
	fd = memfd("long");
	msg_add_fd(&mb, fd);
	ck_assert_int_eq(msg_send(a, &mb), -1);
	ck_assert(is_closed(fd));
	ck_assert_int_eq(frame_conn_pending(a), 0);
	frame_conn_free(a);
	frame_conn_free(b);
	event_base_free(base);
}
END_TEST

/*
 * msg_parse() refusals
 */

START_TEST(parse_structure)
{
	refused("{\"t\":\"ready\"} x", PROC_BROKER, PROC_SUPERVISOR,
	    "message is not valid JSON");
	refused("{\"t\":\"ready\"", PROC_BROKER, PROC_SUPERVISOR,
	    "message is not valid JSON");
	refused("[\"ready\"]", PROC_BROKER, PROC_SUPERVISOR,
	    "message is not a JSON object");
	refused("\"ready\"", PROC_BROKER, PROC_SUPERVISOR,
	    "message is not a JSON object");
	refused("{}", PROC_BROKER, PROC_SUPERVISOR, "field \"t\" missing");
	refused("{\"t\":1}", PROC_BROKER, PROC_SUPERVISOR,
	    "field \"t\" is not a string");
	refused("{\"t\":\"x\"}", PROC_BROKER, PROC_SUPERVISOR,
	    "unknown message type \"x\"");
	refused("{\"t\":\"Ready\"}", PROC_BROKER, PROC_SUPERVISOR,
	    "unknown message type \"Ready\"");
	refused("{\"t\":\"a\\nb\\\"c\"}", PROC_BROKER, PROC_SUPERVISOR,
	    "unknown message type \"a?b?c\"");
	refused("{\"t\":\"0123456789012345678901234567890123456789\"}",
	    PROC_BROKER, PROC_SUPERVISOR,
	    "unknown message type \"01234567890123456789012345678901...\"");
	refused("{\"T\":\"ready\"}", PROC_BROKER, PROC_SUPERVISOR,
	    "field \"t\" missing");
}
END_TEST

/*
 * Two readers: the one-pass reader of flat messages, and the general one
 * for anything else (objects, arrays of other values, more than
 * MSG_FIELDS_INLINE fields or MSG_LEX_ITEMS strings, anything refused).
 * Both sides of each of its bounds read the same, and what the first
 * leaves alone is refused in the general reader's words.
 */
static void
read_fsguard(const char *fields, struct msg *m)
{
	char	 buf[16384];

	snprintf(buf, sizeof(buf), "{\"t\":\"config_fsguard\",%s}", fields);
	ck_assert_msg(parse(m, PROC_SUPERVISOR, PROC_FSGUARD, buf) == 0,
	    "%s: %s", buf, m->m_err);
}

START_TEST(parse_readers)
{
	const char	**v, *str;
	struct msg	 m;
	char		 buf[8192], *p;
	size_t		 n, i;
	int64_t		 i64;
	int		 nf;

	/* Escapes, pairs, literals, numbers as JSON and cJSON read them. */
	read_fsguard("\"s\":\"\\u00e9\\u20ac\\ud83d\\ude00\\/\\\"\","
	    "\"a\":[\"x\",\"\\u0041\"],\"b\":false,\"n\":-0,\"e\":1e2,"
	    "\"z\":null", &m);
	ck_assert_int_eq(msg_get_str(&m, "s", 64, &str), 0);
	ck_assert_str_eq(str, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/\"");
	ck_assert_int_eq(msg_get_strv(&m, "a", 2, 1, &v, &n), 0);
	ck_assert_str_eq(v[1], "A");
	ck_assert_int_eq(msg_get_bool(&m, "b", &nf), 0);
	ck_assert_int_eq(nf, 0);
	ck_assert_int_eq(msg_get_int(&m, "n", -1, 1, &i64), 0);
	ck_assert(i64 == 0);
	ck_assert_int_eq(msg_get_int(&m, "e", 0, 100, &i64), 0);
	ck_assert(i64 == 100);
	ck_assert_int_eq(msg_get_str_opt(&m, "z", 1, &str), 0);
	ck_assert_ptr_null(str);
	ck_assert_int_eq(msg_end(&m), 0);
	msg_free(&m);

	/* Refused in the general reader's words. */
	refused("{\"t\":\"ready\",\"s\":\"\\ud83d\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON");
	refused("{\"t\":\"ready\",\"s\":\"\\ude00\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON");
	refused("{\"t\":\"ready\",\"n\":1e400}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON: a number is out of "
	    "range");
	refused("{\"t\":\"ready\",\"n\":01}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON");
	refused("{\"t\":\"ready\",\"x\":1,\"x\":2}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON: an object has a "
	    "duplicate key");
	refused("{\"t\":\"ready\",,\"x\":1}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON");
	refused("{\"t\":\"ready\",\"x\":tru}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON");
	refused("{\"t\":\"ready\",\"x\":[\"a\",]}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON");

	/* Objects, and arrays of other values, are read too. */
	read_fsguard("\"o\":{\"k\":[1]},\"a\":[\"x\",2]", &m);
	ck_assert_int_eq(msg_get_str(&m, "o", 10, &str), -1);
	ck_assert_str_eq(m.m_err, "field \"o\" is not a string");
	msg_free(&m);
	read_fsguard("\"a\":[\"x\",2]", &m);
	ck_assert_int_eq(msg_get_strv(&m, "a", 2, 10, &v, &n), -1);
	ck_assert_str_eq(m.m_err, "field \"a[1]\" is not a string");
	msg_free(&m);

	/* MSG_FIELDS_INLINE fields with "t", and one more. */
	for (nf = MSG_FIELDS_INLINE - 1; nf <= MSG_FIELDS_INLINE; nf++) {
		p = buf;
		for (i = 0; i < (size_t)nf; i++)
			p += sprintf(p, "%s\"k%zu\":%zu", i ? "," : "", i, i);
		read_fsguard(buf, &m);
		ck_assert_uint_eq(m.m_nfields, (size_t)nf + 1);
		for (i = 0; i < (size_t)nf; i++) {
			snprintf(buf, sizeof(buf), "k%zu", i);
			ck_assert_int_eq(msg_get_int(&m, buf, 0, 100, &i64), 0);
			ck_assert(i64 == (int64_t)i);
		}
		ck_assert_int_eq(msg_end(&m), 0);
		msg_free(&m);
	}

	/* A number of 63 bytes (the one-pass reader's longest) and of 64
	 * (the general reader's) read the same. */
	for (nf = 61; nf <= 62; nf++) {
		p = buf + sprintf(buf, "\"n\":1.");
		memset(p, '0', nf);
		p[nf] = '\0';
		read_fsguard(buf, &m);
		ck_assert_int_eq(msg_get_int(&m, "n", 0, 2, &i64), 0);
		ck_assert(i64 == 1);
		ck_assert_int_eq(msg_end(&m), 0);
		msg_free(&m);
	}

	/* 64 strings in an array, and 65. */
	for (nf = 64; nf <= 65; nf++) {
		p = buf + sprintf(buf, "\"a\":[");
		for (i = 0; i < (size_t)nf; i++)
			p += sprintf(p, "%s\"s%zu\"", i ? "," : "", i);
		strcpy(p, "]");
		read_fsguard(buf, &m);
		ck_assert_int_eq(msg_get_strv(&m, "a", 65, 4, &v, &n), 0);
		ck_assert_uint_eq(n, (size_t)nf);
		ck_assert_str_eq(v[nf - 1], nf == 64 ? "s63" : "s64");
		ck_assert_ptr_null(v[nf]);
		msg_free(&m);
	}
}
END_TEST

START_TEST(parse_whitespace_ok)
{
	struct msg	 m;

	ck_assert_int_eq(parse(&m, PROC_BROKER, PROC_SUPERVISOR,
	    " \n{ \"t\" : \"ready\" }\r\n\t "), 0);
	ck_assert_int_eq(msg_end(&m), 0);
	msg_free(&m);
}
END_TEST

START_TEST(parse_utf8)
{
	refused("{\"t\":\"ready\",\"x\":\"\xff\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid UTF-8");
	/* Overlong '/', a surrogate, beyond U+10FFFF, truncated. */
	refused("{\"t\":\"ready\",\"x\":\"\xc0\xaf\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid UTF-8");
	refused("{\"t\":\"ready\",\"x\":\"\xed\xa0\x80\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid UTF-8");
	refused("{\"t\":\"ready\",\"x\":\"\xf4\x90\x80\x80\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid UTF-8");
	refused("{\"t\":\"ready\",\"x\":\"\xe2\x82\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid UTF-8");
	/* Escaped lone surrogates are refused by the parser. */
	refused("{\"t\":\"ready\",\"x\":\"\\ud800\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON");
	refused("{\"t\":\"ready\",\"x\":\"\\udc00x\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON");
}
END_TEST

START_TEST(parse_nul)
{
	struct msg	 m;
	const char	*s;
	static const char raw[] = "{\"t\":\"ready\",\"x\":\"a\0b\"}";

	refused("{\"t\":\"ready\",\"x\":\"a\\u0000b\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message contains \\u0000");
	refused("{\"t\":\"ready\",\"x\\u0000\":1}", PROC_BROKER,
	    PROC_SUPERVISOR, "message contains \\u0000");
	refused("{\"t\":\"ready\",\"x\":\"\\U0000\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message contains \\u0000");
	refused("{\"t\":\"ready\",\"x\":\"\\\\\\u0000\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message contains \\u0000");
	ck_assert_int_eq(parse_len(&m, PROC_BROKER, PROC_SUPERVISOR, raw,
	    sizeof(raw) - 1, NULL, 0, NULL, 0), -1);
	ck_assert_str_eq(m.m_err, "message contains a NUL byte");
	msg_free(&m);

	/* An escaped backslash followed by "u0000" is plain text. */
	ck_assert_int_eq(parse(&m, PROC_BROKER, PROC_SUPERVISOR,
	    "{\"t\":\"ready\",\"x\":\"\\\\u0000\"}"), 0);
	ck_assert_int_eq(msg_get_str(&m, "x", 16, &s), 0);
	ck_assert_str_eq(s, "\\u0000");
	ck_assert_int_eq(msg_end(&m), 0);
	msg_free(&m);
	/* Other escapes of control characters are fine. */
	ck_assert_int_eq(parse(&m, PROC_BROKER, PROC_SUPERVISOR,
	    "{\"t\":\"ready\",\"x\":\"\\u0001\\u0000\"}"), -1);
	msg_free(&m);
	ck_assert_int_eq(parse(&m, PROC_BROKER, PROC_SUPERVISOR,
	    "{\"t\":\"ready\",\"x\":\"\\u0001\\t\"}"), 0);
	ck_assert_int_eq(msg_get_str(&m, "x", 16, &s), 0);
	ck_assert_str_eq(s, "\x01\t");
	msg_free(&m);
}
END_TEST

START_TEST(parse_duplicates)
{
	refused("{\"t\":\"ready\",\"t\":\"ready\"}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON: an object has a duplicate key");
	refused("{\"t\":\"ping\",\"id\":1,\"id\":2}", PROC_SUPERVISOR,
	    PROC_BROKER, "message is not valid JSON: an object has a duplicate key");
	refused("{\"a\":1,\"t\":\"ready\",\"b\":2,\"a\":3}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON: an object has a duplicate key");
	/* Escapes are compared after decoding. */
	refused("{\"t\":\"ready\",\"a\":1,\"\\u0061\":2}", PROC_BROKER,
	    PROC_SUPERVISOR, "message is not valid JSON: an object has a duplicate key");
}
END_TEST

START_TEST(parse_roles)
{
	struct msg	 m;

	refused("{\"t\":\"ready\"}", PROC_SUPERVISOR, PROC_SUPERVISOR,
	    "message \"ready\" may not be sent by supervisor");
	refused("{\"t\":\"config_fsguard\"}", PROC_BROKER, PROC_FSGUARD,
	    "message \"config_fsguard\" may not be sent by broker");
	refused("{\"t\":\"config_fsguard\"}", PROC_SUPERVISOR, PROC_DOCKER,
	    "message \"config_fsguard\" may not be received by docker");
	refused("{\"t\":\"ready\"}", PROC_BROKER, PROC_EGRESS,
	    "message \"ready\" may not be received by egress");
	refused("{\"t\":\"ready\"}", PROC__COUNT, PROC_SUPERVISOR,
	    "unknown role");
	/* Every child may send ready. */
	ck_assert_int_eq(parse(&m, PROC_RESEARCH, PROC_SUPERVISOR,
	    "{\"t\":\"ready\"}"), 0);
	msg_free(&m);
}
END_TEST

static void
fd_count(const char *json, enum proc_role from, enum proc_role to,
    int nfds, const char *why)
{
	struct msg	 m;
	int		 fds[FRAME_MAXFDS], i, rc;

	for (i = 0; i < FRAME_MAXFDS; i++)
		fds[i] = i < nfds ? memfd("count") : -1;
	rc = parse_len(&m, from, to, json, 0, fds, nfds, NULL, 0);
	if (why == NULL)
		ck_assert_msg(rc == 0, "%s", m.m_err);
	else {
		ck_assert_int_eq(rc, -1);
		ck_assert_str_eq(m.m_err, why);
	}
	ck_assert_int_eq(m.m_nfds, nfds);
	msg_free(&m);
	/* Refused or not, msg_free() closed what nobody took. */
	for (i = 0; i < nfds; i++)
		ck_assert(is_closed(fds[i]));
}

START_TEST(parse_fd_count)
{
	const char	*cb = "{\"t\":\"config_broker\"}";
	char		 why[128];

	fd_count(cb, PROC_SUPERVISOR, PROC_BROKER, 0,
	    "message \"config_broker\" needs 1 descriptor, got 0");
	fd_count(cb, PROC_SUPERVISOR, PROC_BROKER, 2,
	    "message \"config_broker\" needs 1 descriptor, got 2");
	fd_count(cb, PROC_SUPERVISOR, PROC_BROKER, 1, NULL);
	fd_count("{\"t\":\"ready\"}", PROC_BROKER, PROC_SUPERVISOR, 1,
	    "message \"ready\" needs 0 descriptors, got 1");
	snprintf(why, sizeof(why), "message \"ready\" needs 0 descriptors, "
	    "got %d", FRAME_MAXFDS);
	fd_count("{\"t\":\"ready\"}", PROC_BROKER, PROC_SUPERVISOR,
	    FRAME_MAXFDS, why);
}
END_TEST

START_TEST(parse_data)
{
	struct msg	 m;
	const uint8_t	*d;
	size_t		 n;

	ck_assert_int_eq(parse_len(&m, PROC_BROKER, PROC_SUPERVISOR,
	    "{\"t\":\"ready\"}", 0, NULL, 0, "abc", 3), -1);
	ck_assert_str_eq(m.m_err, "message \"ready\" may not carry data");
	msg_free(&m);
	ck_assert_int_eq(parse(&m, PROC_BROKER, PROC_SUPERVISOR,
	    "{\"t\":\"ready\"}"), 0);
	ck_assert_int_eq(msg_get_data(&m, &d, &n), 0);
	ck_assert_uint_eq(n, 0);
	msg_free(&m);
}
END_TEST

START_TEST(parse_ids)
{
	struct msg	 m;

	refused("{\"t\":\"ping\"}", PROC_SUPERVISOR, PROC_BROKER,
	    "message \"ping\" needs an id");
	refused("{\"t\":\"pong\"}", PROC_BROKER, PROC_SUPERVISOR,
	    "message \"pong\" needs an id");
	refused("{\"t\":\"ping\",\"id\":0}", PROC_SUPERVISOR, PROC_BROKER,
	    "field \"id\" is not an integer in [1, 2^53 - 1]");
	refused("{\"t\":\"ping\",\"id\":-1}", PROC_SUPERVISOR, PROC_BROKER,
	    "field \"id\" is not an integer in [1, 2^53 - 1]");
	refused("{\"t\":\"ping\",\"id\":1.5}", PROC_SUPERVISOR, PROC_BROKER,
	    "field \"id\" is not an integer in [1, 2^53 - 1]");
	refused("{\"t\":\"ping\",\"id\":\"1\"}", PROC_SUPERVISOR, PROC_BROKER,
	    "field \"id\" is not an integer in [1, 2^53 - 1]");
	refused("{\"t\":\"ping\",\"id\":null}", PROC_SUPERVISOR, PROC_BROKER,
	    "field \"id\" is not an integer in [1, 2^53 - 1]");
	refused("{\"t\":\"ping\",\"id\":9007199254740992}", PROC_SUPERVISOR,
	    PROC_BROKER, "field \"id\" is not an integer in [1, 2^53 - 1]");
	/* Past a double's range: not a number the message may hold. */
	refused("{\"t\":\"ping\",\"id\":1e400}", PROC_SUPERVISOR,
	    PROC_BROKER, "message is not valid JSON: a number is out of range");
	refused("{\"t\":\"config_fsguard\",\"n\":-1e400}", PROC_SUPERVISOR,
	    PROC_FSGUARD, "message is not valid JSON: a number is out of range");

	ck_assert_int_eq(parse(&m, PROC_SUPERVISOR, PROC_BROKER,
	    "{\"t\":\"ping\",\"id\":9007199254740991}"), 0);
	ck_assert_uint_eq(m.m_id, INT53);
	ck_assert_int_eq(msg_end(&m), 0);
	msg_free(&m);
	ck_assert_int_eq(parse(&m, PROC_SUPERVISOR, PROC_BROKER,
	    "{\"id\":1,\"t\":\"ping\"}"), 0);
	ck_assert_uint_eq(m.m_id, 1);
	msg_free(&m);
	/* Optional elsewhere, and then not a leftover. */
	ck_assert_int_eq(parse(&m, PROC_BROKER, PROC_SUPERVISOR,
	    "{\"t\":\"ready\",\"id\":7}"), 0);
	ck_assert_int_eq(m.m_has_id, 1);
	ck_assert_uint_eq(m.m_id, 7);
	ck_assert_int_eq(msg_end(&m), 0);
	msg_free(&m);
	ck_assert_int_eq(parse(&m, PROC_BROKER, PROC_SUPERVISOR,
	    "{\"t\":\"ready\"}"), 0);
	ck_assert_int_eq(m.m_has_id, 0);
	ck_assert_uint_eq(m.m_id, 0);
	msg_free(&m);
}
END_TEST

/*
 * Getters
 */

START_TEST(get_missing_and_leftover)
{
	struct msg	 m;
	const char	*s;

	parse_cfg(&m, "\"channel\":\"c\"");
	ck_assert_int_eq(msg_get_str(&m, "name", 10, &s), -1);
	ck_assert_str_eq(m.m_err, "field \"name\" missing");
	msg_free(&m);

	parse_cfg(&m, "\"channel\":\"c\",\"extra\":true");
	ck_assert_int_eq(msg_get_str(&m, "channel", 10, &s), 0);
	ck_assert_int_eq(msg_end(&m), -1);
	ck_assert_str_eq(m.m_err, "field \"extra\" not consumed");
	msg_free(&m);

	parse_cfg(&m, "\"bad\\nkey\\u00e9\":1");
	ck_assert_int_eq(msg_end(&m), -1);
	ck_assert_str_eq(m.m_err, "field \"bad?key??\" not consumed");
	msg_free(&m);

	/* A field can be taken once. */
	parse_cfg(&m, "\"channel\":\"c\"");
	ck_assert_int_eq(msg_get_str(&m, "channel", 10, &s), 0);
	ck_assert_int_eq(msg_get_str(&m, "channel", 10, &s), -1);
	ck_assert_str_eq(m.m_err, "field \"channel\" missing");
	msg_free(&m);
}
END_TEST

START_TEST(get_wrong_types)
{
	struct msg	 m;
	const char	*s, **sv;
	uint64_t	 u;
	int64_t		 i;
	size_t		 n;
	int		 b;

	parse_cfg(&m, "\"x\":1");
	ck_assert_int_eq(msg_get_str(&m, "x", 10, &s), -1);
	ck_assert_str_eq(m.m_err, "field \"x\" is not a string");
	msg_free(&m);
	parse_cfg(&m, "\"x\":null");
	ck_assert_int_eq(msg_get_str(&m, "x", 10, &s), -1);
	ck_assert_str_eq(m.m_err, "field \"x\" is not a string");
	msg_free(&m);
	parse_cfg(&m, "\"x\":\"1\"");
	ck_assert_int_eq(msg_get_uint(&m, "x", 0, 10, &u), -1);
	ck_assert_str_eq(m.m_err, "field \"x\" is not a number");
	msg_free(&m);
	parse_cfg(&m, "\"x\":true");
	ck_assert_int_eq(msg_get_int(&m, "x", 0, 10, &i), -1);
	ck_assert_str_eq(m.m_err, "field \"x\" is not a number");
	msg_free(&m);
	parse_cfg(&m, "\"x\":1");
	ck_assert_int_eq(msg_get_bool(&m, "x", &b), -1);
	ck_assert_str_eq(m.m_err, "field \"x\" is not a boolean");
	msg_free(&m);
	parse_cfg(&m, "\"x\":\"true\"");
	ck_assert_int_eq(msg_get_bool(&m, "x", &b), -1);
	msg_free(&m);
	parse_cfg(&m, "\"x\":null");
	ck_assert_int_eq(msg_get_bool(&m, "x", &b), -1);
	msg_free(&m);
	parse_cfg(&m, "\"x\":\"a\"");
	ck_assert_int_eq(msg_get_strv(&m, "x", 4, 4, &sv, &n), -1);
	ck_assert_str_eq(m.m_err, "field \"x\" is not an array");
	msg_free(&m);
	parse_cfg(&m, "\"x\":{\"0\":\"a\"}");
	ck_assert_int_eq(msg_get_strv(&m, "x", 4, 4, &sv, &n), -1);
	ck_assert_str_eq(m.m_err, "field \"x\" is not an array");
	msg_free(&m);
	parse_cfg(&m, "\"x\":[\"a\",2]");
	ck_assert_int_eq(msg_get_strv(&m, "x", 4, 4, &sv, &n), -1);
	ck_assert_str_eq(m.m_err, "field \"x[1]\" is not a string");
	msg_free(&m);
	parse_cfg(&m, "\"x\":[\"a\",[\"b\"]]");
	ck_assert_int_eq(msg_get_strv(&m, "x", 4, 4, &sv, &n), -1);
	msg_free(&m);
}
END_TEST

START_TEST(get_string_lengths)
{
	struct msg	 m;
	const char	*s;
	char		 fields[1024], val[600];

	/* 256 bytes is the limit: at it and one past. */
	memset(val, 'c', 257);
	val[256] = '\0';
	snprintf(fields, sizeof(fields), "\"channel\":\"%s\"", val);
	parse_cfg(&m, fields);
	ck_assert_int_eq(msg_get_str(&m, "channel", 256, &s), 0);
	ck_assert_uint_eq(strlen(s), 256);
	msg_free(&m);
	val[256] = 'c';
	val[257] = '\0';
	snprintf(fields, sizeof(fields), "\"channel\":\"%s\"", val);
	parse_cfg(&m, fields);
	ck_assert_int_eq(msg_get_str(&m, "channel", 256, &s), -1);
	ck_assert_str_eq(m.m_err, "field \"channel\" longer than 256 bytes");
	msg_free(&m);

	/* Bytes, not characters: three of U+00E9 are six bytes. */
	parse_cfg(&m, "\"x\":\"\xc3\xa9\xc3\xa9\xc3\xa9\"");
	ck_assert_int_eq(msg_get_str(&m, "x", 5, &s), -1);
	msg_free(&m);
	parse_cfg(&m, "\"x\":\"\\u00e9\\u00e9\\u00e9\"");
	ck_assert_int_eq(msg_get_str(&m, "x", 6, &s), 0);
	ck_assert_str_eq(s, "\xc3\xa9\xc3\xa9\xc3\xa9");
	msg_free(&m);
	/* An escaped pair becomes four bytes. */
	parse_cfg(&m, "\"x\":\"\\ud83d\\ude00\"");
	ck_assert_int_eq(msg_get_str(&m, "x", 3, &s), -1);
	msg_free(&m);
	parse_cfg(&m, "\"x\":\"\\ud83d\\ude00\"");
	ck_assert_int_eq(msg_get_str(&m, "x", 4, &s), 0);
	ck_assert_str_eq(s, "\xf0\x9f\x98\x80");
	msg_free(&m);
	parse_cfg(&m, "\"x\":\"\"");
	ck_assert_int_eq(msg_get_str(&m, "x", 0, &s), 0);
	ck_assert_str_eq(s, "");
	msg_free(&m);
}
END_TEST

START_TEST(get_optional)
{
	struct msg	 m;
	const char	*s = "unset";
	uint64_t	 u = 99;
	int		 present = 7;

	parse_cfg(&m, "\"a\":null,\"n\":null");
	ck_assert_int_eq(msg_get_str_opt(&m, "a", 10, &s), 0);
	ck_assert_ptr_null(s);
	s = "unset";
	ck_assert_int_eq(msg_get_str_opt(&m, "b", 10, &s), 0);
	ck_assert_ptr_null(s);
	ck_assert_int_eq(msg_get_uint_opt(&m, "n", 0, 5, &u, &present), 0);
	ck_assert_int_eq(present, 0);
	ck_assert_uint_eq(u, 99);
	present = 7;
	ck_assert_int_eq(msg_get_uint_opt(&m, "m", 0, 5, &u, &present), 0);
	ck_assert_int_eq(present, 0);
	ck_assert_int_eq(msg_end(&m), 0);
	msg_free(&m);

	parse_cfg(&m, "\"a\":\"here\",\"n\":5");
	ck_assert_int_eq(msg_get_str_opt(&m, "a", 10, &s), 0);
	ck_assert_str_eq(s, "here");
	ck_assert_int_eq(msg_get_uint_opt(&m, "n", 0, 5, &u, &present), 0);
	ck_assert_int_eq(present, 1);
	ck_assert_uint_eq(u, 5);
	ck_assert_int_eq(msg_end(&m), 0);
	msg_free(&m);

	/* Present but wrong is still wrong. */
	parse_cfg(&m, "\"a\":3");
	ck_assert_int_eq(msg_get_str_opt(&m, "a", 10, &s), -1);
	msg_free(&m);
	parse_cfg(&m, "\"n\":6");
	ck_assert_int_eq(msg_get_uint_opt(&m, "n", 0, 5, &u, &present), -1);
	ck_assert_int_eq(present, 0);
	msg_free(&m);
}
END_TEST

static int
get_uint(const char *num, uint64_t min, uint64_t max, uint64_t *out,
    char *err, size_t errsz)
{
	struct msg	 m;
	char		 fields[128];
	int		 rc;

	snprintf(fields, sizeof(fields), "\"n\":%s", num);
	parse_cfg(&m, fields);
	rc = msg_get_uint(&m, "n", min, max, out);
	snprintf(err, errsz, "%s", m.m_err);
	msg_free(&m);
	return rc;
}

static int
get_int(const char *num, int64_t min, int64_t max, int64_t *out)
{
	struct msg	 m;
	char		 fields[128];
	int		 rc;

	snprintf(fields, sizeof(fields), "\"n\":%s", num);
	parse_cfg(&m, fields);
	rc = msg_get_int(&m, "n", min, max, out);
	msg_free(&m);
	return rc;
}

START_TEST(get_integers)
{
	uint64_t	 u;
	int64_t		 i;
	char		 err[160];

	ck_assert_int_eq(get_uint("10", 10, 20, &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u, 10);
	ck_assert_int_eq(get_uint("20", 10, 20, &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u, 20);
	ck_assert_int_eq(get_uint("9", 10, 20, &u, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "field \"n\" out of range [10, 20]");
	ck_assert_int_eq(get_uint("21", 10, 20, &u, err, sizeof(err)), -1);
	ck_assert_int_eq(get_uint("-1", 0, 20, &u, err, sizeof(err)), -1);
	ck_assert_int_eq(get_uint("0", 0, 20, &u, err, sizeof(err)), 0);
	ck_assert_int_eq(get_uint("-0", 0, 20, &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u, 0);
	ck_assert_int_eq(get_uint("1.0", 0, 20, &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u, 1);
	ck_assert_int_eq(get_uint("1e1", 0, 20, &u, err, sizeof(err)), 0);
	ck_assert_uint_eq(u, 10);
	ck_assert_int_eq(get_uint("9007199254740991", 0, UINT64_MAX, &u, err,
	    sizeof(err)), 0);
	ck_assert_uint_eq(u, INT53);
	ck_assert_int_eq(get_uint("9007199254740992", 0, UINT64_MAX, &u, err,
	    sizeof(err)), -1);
	ck_assert_str_eq(err, "field \"n\" is not an integer within 2^53 - 1");
	ck_assert_int_eq(get_uint("18446744073709551615", 0, UINT64_MAX, &u,
	    err, sizeof(err)), -1);
	ck_assert_int_eq(get_uint("4294967295", 0, UINT32_MAX, &u, err,
	    sizeof(err)), 0);
	ck_assert_int_eq(get_uint("4294967296", 0, UINT32_MAX, &u, err,
	    sizeof(err)), -1);
	/* Not integral. */
	ck_assert_int_eq(get_uint("1.5", 0, 20, &u, err, sizeof(err)), -1);
	ck_assert_str_eq(err, "field \"n\" is not an integer within 2^53 - 1");
	ck_assert_int_eq(get_uint("0.1e1", 0, 20, &u, err, sizeof(err)), 0);
	ck_assert_int_eq(get_uint("1e-1", 0, 20, &u, err, sizeof(err)), -1);
	ck_assert_int_eq(get_uint("4503599627370495.5", 0, UINT64_MAX, &u,
	    err, sizeof(err)), -1);

	ck_assert_int_eq(get_int("-5", -5, 5, &i), 0);
	ck_assert_int_eq(i, -5);
	ck_assert_int_eq(get_int("5", -5, 5, &i), 0);
	ck_assert_int_eq(get_int("-6", -5, 5, &i), -1);
	ck_assert_int_eq(get_int("6", -5, 5, &i), -1);
	ck_assert_int_eq(get_int("-9007199254740991", INT64_MIN, INT64_MAX,
	    &i), 0);
	ck_assert_int_eq(i, -(int64_t)INT53);
	ck_assert_int_eq(get_int("-9007199254740992", INT64_MIN, INT64_MAX,
	    &i), -1);
	ck_assert_int_eq(get_int("9007199254740992", INT64_MIN, INT64_MAX,
	    &i), -1);
	ck_assert_int_eq(get_int("-0.5", -5, 5, &i), -1);
	/* Fifteen digits are read without strtod(), sixteen with it: the
	 * same integers either way. */
	ck_assert_int_eq(get_uint("999999999999999", 0, UINT64_MAX, &u, err,
	    sizeof(err)), 0);
	ck_assert_uint_eq(u, 999999999999999ULL);
	ck_assert_int_eq(get_uint("1000000000000000", 0, UINT64_MAX, &u, err,
	    sizeof(err)), 0);
	ck_assert_uint_eq(u, 1000000000000000ULL);
	ck_assert_int_eq(get_int("-999999999999999", INT64_MIN, INT64_MAX,
	    &i), 0);
	ck_assert_int_eq(i, -999999999999999LL);
	ck_assert_int_eq(get_int("-1000000000000001", INT64_MIN, INT64_MAX,
	    &i), 0);
	ck_assert_int_eq(i, -1000000000000001LL);
	ck_assert_int_eq(get_uint("123456789012345e1", 0, UINT64_MAX, &u, err,
	    sizeof(err)), 0);
	ck_assert_uint_eq(u, 1234567890123450ULL);
}
END_TEST

START_TEST(get_strv_limits)
{
	struct msg	 m;
	const char	**sv;
	size_t		 n;

	parse_cfg(&m, "\"v\":[\"ab\",\"cd\",\"ef\"]");
	ck_assert_int_eq(msg_get_strv(&m, "v", 3, 2, &sv, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(sv[2], "ef");
	ck_assert_ptr_null(sv[3]);
	msg_free(&m);

	parse_cfg(&m, "\"v\":[\"ab\",\"cd\",\"ef\"]");
	ck_assert_int_eq(msg_get_strv(&m, "v", 2, 2, &sv, &n), -1);
	ck_assert_str_eq(m.m_err, "field \"v\" has more than 2 items");
	msg_free(&m);

	parse_cfg(&m, "\"v\":[\"ab\",\"cde\"]");
	ck_assert_int_eq(msg_get_strv(&m, "v", 2, 2, &sv, &n), -1);
	ck_assert_str_eq(m.m_err, "field \"v[1]\" longer than 2 bytes");
	msg_free(&m);

	parse_cfg(&m, "\"v\":[]");
	ck_assert_int_eq(msg_get_strv(&m, "v", 0, 2, &sv, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(sv[0]);
	msg_free(&m);

	parse_cfg(&m, "\"v\":[\"a\"]");
	ck_assert_int_eq(msg_get_strv(&m, "v", 0, 2, &sv, &n), -1);
	msg_free(&m);

	/* Several arrays in one message, all freed by msg_free(). */
	parse_cfg(&m, "\"v\":[\"a\"],\"w\":[\"b\",\"c\"]");
	ck_assert_int_eq(msg_get_strv(&m, "v", 1, 1, &sv, &n), 0);
	ck_assert_str_eq(sv[0], "a");
	ck_assert_int_eq(msg_get_strv(&m, "w", 2, 1, &sv, &n), 0);
	ck_assert_str_eq(sv[1], "c");
	ck_assert_int_eq(msg_end(&m), 0);
	msg_free(&m);
}
END_TEST

START_TEST(get_sticky)
{
	struct msg	 m;
	const char	*s;
	uint64_t	 u;
	int		 b, fd;

	parse_cfg(&m, "\"a\":1,\"b\":\"ok\",\"c\":true,\"d\":2");
	ck_assert_int_eq(msg_get_str(&m, "a", 10, &s), -1);
	ck_assert_str_eq(m.m_err, "field \"a\" is not a string");
	/* Valid fields fail now too, and the first reason stays. */
	ck_assert_int_eq(msg_get_str(&m, "b", 10, &s), -1);
	ck_assert_int_eq(msg_get_bool(&m, "c", &b), -1);
	ck_assert_int_eq(msg_get_uint(&m, "d", 0, 5, &u), -1);
	ck_assert_int_eq(msg_get_str(&m, "zz", 10, &s), -1);
	ck_assert_int_eq(msg_get_fd(&m, &fd), -1);
	ck_assert_int_eq(msg_end(&m), -1);
	ck_assert_str_eq(m.m_err, "field \"a\" is not a string");
	msg_free(&m);
}
END_TEST

START_TEST(get_fds)
{
	struct msg	 m;
	int		 fds[1], got;
	ino_t		 i1;

	fds[0] = memfd("get");
	i1 = ino(fds[0]);
	ck_assert_int_eq(parse_len(&m, PROC_SUPERVISOR, PROC_BROKER,
	    "{\"t\":\"config_broker\"}", 0, fds, 1, NULL, 0), 0);
	/* Not taken: msg_end() refuses, msg_free() closes. */
	ck_assert_int_eq(msg_end(&m), -1);
	ck_assert_str_eq(m.m_err, "1 descriptor not taken");
	msg_free(&m);
	ck_assert(is_closed(fds[0]));

	fds[0] = memfd("get2");
	i1 = ino(fds[0]);
	ck_assert_int_eq(parse_len(&m, PROC_SUPERVISOR, PROC_BROKER,
	    "{\"t\":\"config_broker\"}", 0, fds, 1, NULL, 0), 0);
	ck_assert_int_eq(msg_get_fd(&m, &got), 0);
	ck_assert_uint_eq(ino(got), i1);
	ck_assert_int_eq(msg_get_fd(&m, &got), -1);
	ck_assert_str_eq(m.m_err, "descriptor 2 missing");
	msg_free(&m);
	/* Taken: the caller's now. */
	ck_assert(!is_closed(got));
	close(got);
}
END_TEST

/*
 * Builder
 */

START_TEST(builder_refusals)
{
	static const char *const bad[] = { "ok", "\xff" };
	struct msgb	 mb;
	size_t		 len;
	int		 fd, fds[FRAME_MAXFDS + 1], i;

	msgb_init(&mb, MSG_NONE, 0);
	ck_assert_int_eq(mb.mb_failed, 1);
	ck_assert_ptr_null(msgb_json(&mb, &len));
	msgb_free(&mb);
	msgb_init(&mb, MSG__COUNT, 0);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);

	msgb_init(&mb, MSG_READY, 0);
	msg_add_str(&mb, "t", "ping");
	ck_assert_int_eq(mb.mb_failed, 1);
	/* No-ops after the failure; descriptors are closed. */
	msg_add_str(&mb, "x", "y");
	fd = memfd("after");
	msg_add_fd(&mb, fd);
	ck_assert(is_closed(fd));
	ck_assert_ptr_null(msgb_json(&mb, &len));
	msgb_free(&mb);

	msgb_init(&mb, MSG_READY, 0);
	msg_add_str(&mb, "x", "y");
	msg_add_uint(&mb, "x", 1);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);

	msgb_init(&mb, MSG_READY, 0);
	msg_add_str(&mb, "x", "\xc0\xaf");
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);
	msgb_init(&mb, MSG_READY, 0);
	msg_add_str(&mb, "x", NULL);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);
	msgb_init(&mb, MSG_READY, 0);
	msg_add_strv(&mb, "x", bad, 2);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);

	msgb_init(&mb, MSG_READY, 0);
	msg_add_uint(&mb, "n", INT53);
	ck_assert_int_eq(mb.mb_failed, 0);
	msg_add_uint(&mb, "m", INT53 + 1);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);
	msgb_init(&mb, MSG_READY, 0);
	msg_add_int(&mb, "n", -(int64_t)INT53);
	ck_assert_int_eq(mb.mb_failed, 0);
	msg_add_int(&mb, "m", -(int64_t)INT53 - 1);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);
	msgb_init(&mb, MSG_PING, INT53 + 1);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);
	msgb_init(&mb, MSG_READY, 0);
	msg_add_uint(&mb, "id", 0);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);
	msgb_init(&mb, MSG_READY, 0);
	msg_add_str(&mb, "id", "1");
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);

	/* The table binds the sender: id, descriptors, data. */
	msgb_init(&mb, MSG_PING, 0);
	ck_assert_ptr_null(msgb_json(&mb, &len));
	msgb_free(&mb);
	msgb_init(&mb, MSG_READY, 0);
	msg_add_data(&mb, "abc", 3);
	ck_assert_ptr_null(msgb_json(&mb, &len));
	msgb_free(&mb);
	msgb_init(&mb, MSG_CONFIG_BROKER, 0);
	ck_assert_ptr_null(msgb_json(&mb, &len));
	msgb_free(&mb);

	msgb_init(&mb, MSG_READY, 0);
	msg_add_fd(&mb, -1);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);
	msgb_init(&mb, MSG_READY, 0);
	msg_add_data(&mb, "a", 1);
	msg_add_data(&mb, "b", 1);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);
	msgb_init(&mb, MSG_READY, 0);
	msg_add_strv(&mb, "v", NULL, 1);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);

	msgb_init(&mb, MSG_CONFIG_BROKER, 0);
	for (i = 0; i < FRAME_MAXFDS + 1; i++) {
		fds[i] = memfd("many");
		msg_add_fd(&mb, fds[i]);
	}
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);
	for (i = 0; i < FRAME_MAXFDS + 1; i++)
		ck_assert(is_closed(fds[i]));
}
END_TEST

START_TEST(builder_order)
{
	struct msgb	 mb;
	size_t		 len;
	char		*json;

	/* An id added after other fields still comes second. */
	msgb_init(&mb, MSG_PING, 0);
	msg_add_str(&mb, "a", "b");
	msg_add_uint(&mb, "id", 12);
	json = msgb_json(&mb, &len);
	ck_assert_ptr_nonnull(json);
	ck_assert_str_eq(json, "{\"t\":\"ping\",\"id\":12,\"a\":\"b\"}");
	free(json);
	msgb_free(&mb);

	msgb_init(&mb, MSG_PONG, 3);
	msg_add_bool(&mb, "z", 0);
	json = msgb_json(&mb, &len);
	ck_assert_str_eq(json, "{\"t\":\"pong\",\"id\":3,\"z\":false}");
	free(json);
	msgb_free(&mb);

	msgb_init(&mb, MSG_READY, 0);
	json = msgb_json(&mb, &len);
	ck_assert_str_eq(json, "{\"t\":\"ready\"}");
	ck_assert_uint_eq(len, 13);
	free(json);
	/* msgb_free() twice is harmless. */
	msgb_free(&mb);
	msgb_free(&mb);
}
END_TEST

/*
 * The builder writes the text itself: strings escaped as JSON needs them
 * (and as cJSON printed them), read back the same; fields added after the
 * text was made go before its end; at most MSGB_KEYS_MAX fields.
 */
START_TEST(builder_text)
{
	static const char	 odd[] = "q\"b\\s/\x01\x1f\b\f\n\r\t \x7f "
	    "\xc3\xa9\xf0\x9f\x98\x80";
	static const char *const v[] = { "", odd, "z" };
	const char		**got, *str;
	struct msgb		 mb;
	struct msg		 m;
	size_t			 len, n;
	int64_t			 i64;
	char			*json, key[16];
	int			 i;

	msgb_init(&mb, MSG_CONFIG_FSGUARD, 0);
	msg_add_str(&mb, "s", odd);
	msg_add_int(&mb, "n", -(int64_t)INT53);
	msg_add_strv(&mb, "v", v, 3);
	msg_add_strv(&mb, "e", NULL, 0);
	json = msgb_json(&mb, &len);
	ck_assert_ptr_nonnull(json);
	ck_assert_str_eq(json, "{\"t\":\"config_fsguard\",\"s\":\"q\\\"b\\\\s/"
	    "\\u0001\\u001f\\b\\f\\n\\r\\t \x7f \xc3\xa9\xf0\x9f\x98\x80\","
	    "\"n\":-9007199254740991,\"v\":[\"\",\"q\\\"b\\\\s/\\u0001\\u001f"
	    "\\b\\f\\n\\r\\t \x7f \xc3\xa9\xf0\x9f\x98\x80\",\"z\"],\"e\":[]}");
	/* Added after the text was made: before its end. */
	msg_add_bool(&mb, "b", 1);
	free(json);
	json = msgb_json(&mb, &len);
	ck_assert_ptr_nonnull(json);
	ck_assert_uint_eq(strlen(json), len);
	ck_assert(len > 11 && strcmp(json + len - 11, "],\"b\":true}") == 0);
	ck_assert_int_eq(parse(&m, PROC_SUPERVISOR, PROC_FSGUARD, json), 0);
	ck_assert_int_eq(msg_get_str(&m, "s", 100, &str), 0);
	ck_assert_str_eq(str, odd);
	ck_assert_int_eq(msg_get_int(&m, "n", -(int64_t)INT53, 0, &i64), 0);
	ck_assert(i64 == -(int64_t)INT53);
	ck_assert_int_eq(msg_get_strv(&m, "v", 3, 100, &got, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(got[0], "");
	ck_assert_str_eq(got[1], odd);
	ck_assert_str_eq(got[2], "z");
	ck_assert_ptr_null(got[3]);
	ck_assert_int_eq(msg_get_strv(&m, "e", 3, 100, &got, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(msg_get_bool(&m, "b", &i), 0);
	ck_assert_int_eq(i, 1);
	ck_assert_int_eq(msg_end(&m), 0);
	msg_free(&m);
	free(json);
	msgb_free(&mb);

	/* MSGB_KEYS_MAX fields, and one more. */
	msgb_init(&mb, MSG_CONFIG_FSGUARD, 0);
	for (i = 0; i < MSGB_KEYS_MAX; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		msg_add_uint(&mb, key, i);
	}
	ck_assert_int_eq(mb.mb_failed, 0);
	json = msgb_json(&mb, &len);
	ck_assert_ptr_nonnull(json);
	free(json);
	msg_add_uint(&mb, "one_more", 1);
	ck_assert_int_eq(mb.mb_failed, 1);
	msgb_free(&mb);
}
END_TEST

/* msg_is_reply() is the table's reply column read backwards, for every
 * type, those past the 64th too. */
START_TEST(table_replies)
{
	int	 t, u, want;

	for (t = MSG_NONE; t < MSG__COUNT; t++) {
		want = t == MSG_ERROR;
		for (u = MSG_NONE + 1; u < MSG__COUNT; u++)
			if ((int)msg_def(u)->md_reply == t && t != MSG_NONE)
				want = 1;
		ck_assert_msg(msg_is_reply(t) == want, "%s", t == MSG_NONE ?
		    "(none)" : msg_type_name(t));
	}
	ck_assert_int_eq(msg_is_reply(MSG__COUNT), 0);
}
END_TEST

static Suite *
msg_suite(void)
{
	Suite	*s = suite_create("msg");
	TCase	*tc;

	tc = tcase_create("table");
	tcase_add_test(tc, table_names);
	tcase_add_test(tc, table_replies);
	tcase_add_loop_test(tc, row_round_trip, MSG_NONE + 1, MSG__COUNT);
	tcase_add_test(tc, send_over_conn);
	suite_add_tcase(s, tc);

	tc = tcase_create("parse");
	tcase_add_test(tc, parse_structure);
	tcase_add_test(tc, parse_readers);
	tcase_add_test(tc, parse_whitespace_ok);
	tcase_add_test(tc, parse_utf8);
	tcase_add_test(tc, parse_nul);
	tcase_add_test(tc, parse_duplicates);
	tcase_add_test(tc, parse_roles);
	tcase_add_test(tc, parse_fd_count);
	tcase_add_test(tc, parse_data);
	tcase_add_test(tc, parse_ids);
	suite_add_tcase(s, tc);

	tc = tcase_create("get");
	tcase_add_test(tc, get_missing_and_leftover);
	tcase_add_test(tc, get_wrong_types);
	tcase_add_test(tc, get_string_lengths);
	tcase_add_test(tc, get_optional);
	tcase_add_test(tc, get_integers);
	tcase_add_test(tc, get_strv_limits);
	tcase_add_test(tc, get_sticky);
	tcase_add_test(tc, get_fds);
	suite_add_tcase(s, tc);

	tc = tcase_create("build");
	tcase_add_test(tc, builder_refusals);
	tcase_add_test(tc, builder_order);
	tcase_add_test(tc, builder_text);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	signal(SIGPIPE, SIG_IGN);
	sr = srunner_create(msg_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
