/*
 * egress/resp.c, the reader of an HTTP/1.1 answer: every answer is read
 * whole and then cut at every byte, and must come out the same; framing,
 * interim answers, folding, the limits at the limit and one past, and the
 * refusals.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

/* What one read of an answer gave. */
struct out {
	enum resp_status	 st;	/* RESP_DONE, RESP_MORE or RESP_ERROR */
	long			 status;
	int			 keep_alive;
	enum resp_framing	 framing;
	size_t			 nhdrs;
	char			 hdrs[4096];	/* "name: value\n" each */
	char			*body;
	size_t			 body_len;
	size_t			 extra;	/* bytes past the answer */
	const char		*err;
};

/*
 * Feed text in pieces of at most step bytes (0: all at once), then the end
 * of the connection when eof.
 */
static void
run(const char *text, size_t len, size_t step, int eof, struct out *o)
{
	struct resp	 rs;
	struct resp_hdr	 h[RESP_HDRS_MAX];
	uint8_t		*buf;
	size_t		 off = 0, n, pos, used, body, i, k;
	enum resp_status st = RESP_MORE;

	memset(o, 0, sizeof(*o));
	ck_assert_ptr_nonnull(o->body = malloc(len + 1));
	ck_assert_ptr_nonnull(buf = malloc(len + 1));
	resp_init(&rs);
	while (off < len && st != RESP_DONE && st != RESP_ERROR) {
		n = step == 0 || len - off < step ? len - off : step;
		memcpy(buf, text + off, n);
		pos = 0;
		do {
			st = resp_feed(&rs, buf + pos, n - pos, &used, &body);
			ck_assert_uint_le(used, n - pos);
			ck_assert_uint_le(body, used);
			memcpy(o->body + o->body_len, buf + pos, body);
			o->body_len += body;
			pos += used;
			if (st == RESP_HEAD) {
				ck_assert_uint_eq(body, 0);
				o->status = rs.rs_status;
				o->keep_alive = rs.rs_keep_alive;
				o->framing = rs.rs_framing;
				o->nhdrs = resp_headers(&rs, h, RESP_HDRS_MAX);
				for (i = 0, k = 0; i < o->nhdrs; i++)
					k += snprintf(o->hdrs + k,
					    sizeof(o->hdrs) - k, "%s: %s\n",
					    h[i].name, h[i].value);
			}
		} while (st == RESP_HEAD);
		if (st == RESP_MORE)
			ck_assert_uint_eq(pos, n);
		off += pos;
	}
	if (st == RESP_DONE)
		o->extra = len - off;
	else if (st == RESP_MORE && eof)
		st = resp_eof(&rs);
	o->st = st;
	o->err = rs.rs_err;
	o->body[o->body_len] = '\0';
	resp_free(&rs);
	free(buf);
}

static void
out_free(struct out *o)
{
	free(o->body);
}

/* The answer read whole, and cut at every step size, gives the same. */
static void
check(const char *text, int eof, struct out *o)
{
	struct out	 p;
	size_t		 len = strlen(text), step;

	run(text, len, 0, eof, o);
	for (step = 1; step < len; step++) {
		run(text, len, step, eof, &p);
		ck_assert_msg(p.st == o->st, "step %zu: %d, whole: %d", step,
		    p.st, o->st);
		ck_assert_int_eq(p.status, o->status);
		ck_assert_str_eq(p.hdrs, o->hdrs);
		/* Before an error, the body goes as far as the bytes went. */
		if (o->st != RESP_ERROR) {
			ck_assert_uint_eq(p.body_len, o->body_len);
			ck_assert(memcmp(p.body, o->body, o->body_len) == 0);
		}
		ck_assert_uint_eq(p.extra, o->extra);
		out_free(&p);
	}
}

START_TEST(length)
{
	struct out	 o;

	check("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Content-Length: 11\r\n\r\n{\"ok\":true}", 0, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	ck_assert_int_eq(o.status, 200);
	ck_assert_int_eq(o.framing, RESP_LENGTH);
	ck_assert_int_eq(o.keep_alive, 1);
	ck_assert_str_eq(o.hdrs, "content-type: application/json\n"
	    "content-length: 11\n");
	ck_assert_str_eq(o.body, "{\"ok\":true}");
	out_free(&o);
	/* What follows is the next answer's, not this one's. */
	check("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1", 0,
	    &o);
	ck_assert_str_eq(o.body, "ok");
	ck_assert_uint_eq(o.extra, 8);
	out_free(&o);
	check("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	ck_assert_uint_eq(o.body_len, 0);
	out_free(&o);
}
END_TEST

START_TEST(chunked)
{
	struct out	 o;

	check("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5\r\nhello\r\n1;ext=\"a b\"\r\n,\r\n"
	    "6  ; x\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n", 0, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	ck_assert_int_eq(o.framing, RESP_CHUNKED);
	ck_assert_int_eq(o.keep_alive, 1);
	ck_assert_str_eq(o.body, "hello, world");
	out_free(&o);
	/* LF alone ends lines too; hex digits of either case. */
	check("HTTP/1.1 200 OK\nTransfer-Encoding: gzip, Chunked\n\n"
	    "A\nabcdefghij\n0\n\n", 0, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	ck_assert_str_eq(o.body, "abcdefghij");
	out_free(&o);
	/* Transfer-Encoding wins over Content-Length, and the connection
	 * is not kept. */
	check("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", 0, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	ck_assert_str_eq(o.body, "ok");
	ck_assert_int_eq(o.keep_alive, 0);
	out_free(&o);
}
END_TEST

START_TEST(until_close)
{
	struct out	 o;

	check("HTTP/1.1 200 OK\r\n\r\nall of it", 1, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	ck_assert_int_eq(o.framing, RESP_CLOSE);
	ck_assert_int_eq(o.keep_alive, 0);
	ck_assert_str_eq(o.body, "all of it");
	out_free(&o);
	/* A coding other than chunked last: the close ends it. */
	check("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz", 1, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	ck_assert_int_eq(o.framing, RESP_CLOSE);
	out_free(&o);
	/* HTTP/1.0, or "connection: close": not kept. */
	check("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 0, &o);
	ck_assert_int_eq(o.keep_alive, 0);
	out_free(&o);
	check("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\n"
	    "Content-Length: 1\r\n\r\nx", 0, &o);
	ck_assert_int_eq(o.keep_alive, 0);
	out_free(&o);
}
END_TEST

START_TEST(no_body)
{
	static const char *const answers[] = {
		"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
	};
	struct out	 o;
	size_t		 i;

	for (i = 0; i < 2; i++) {
		check(answers[i], 0, &o);
		ck_assert_int_eq(o.st, RESP_DONE);
		ck_assert_int_eq(o.framing, RESP_NONE);
		ck_assert_uint_eq(o.body_len, 0);
		out_free(&o);
	}
}
END_TEST

START_TEST(interim)
{
	struct out	 o;

	check("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\n"
	    "Link: </a.css>\r\n\r\nHTTP/1.1 529 Overloaded\r\n"
	    "Content-Length: 2\r\n\r\n{}", 0, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	ck_assert_int_eq(o.status, 529);
	ck_assert_str_eq(o.hdrs, "content-length: 2\n");
	ck_assert_str_eq(o.body, "{}");
	out_free(&o);
	check("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", 0,
	    &o);
	ck_assert_int_eq(o.st, RESP_ERROR);
	ck_assert_str_eq(o.err, "unexpected 101 answer");
	out_free(&o);
}
END_TEST

START_TEST(folding)
{
	struct out	 o;

	check("HTTP/1.1 200 OK\r\nX-Fold: first\r\n   second \r\n"
	    "X-Empty:\r\n later\r\nX-Spaced:  a\tb \t\r\n"
	    "Content-Length: 0\r\n\r\n", 0, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	ck_assert_str_eq(o.hdrs, "x-fold: first second\nx-empty: later\n"
	    "x-spaced: a\tb\ncontent-length: 0\n");
	out_free(&o);
}
END_TEST

START_TEST(refused)
{
	static const struct {
		const char	*text;
		const char	*why;
	} cases[] = {
		{ "HTTP/2 200\r\n\r\n", "bad status line" },
		{ "HTTP/1.1 20 OK\r\n\r\n", "bad status line" },
		{ "HTTP/1.1 099 X\r\n\r\n", "bad status line" },
		{ "HTTP/1.1 2000 X\r\n\r\n", "bad status line" },
		{ "ICY 200 OK\r\n\r\n", "bad status line" },
		{ "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
		    "malformed response header" },
		{ "HTTP/1.1 200 OK\r\n: novalue\r\n\r\n",
		    "malformed response header" },
		{ "HTTP/1.1 200 OK\r\n folded first\r\n\r\n",
		    "response header block starts folded" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
		    "Content-Length: 2\r\n\r\nxx", "bad Content-Length" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nxx",
		    "bad Content-Length" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		    "bad Content-Length" },
		{ "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
		    "bad Content-Length" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n"
		    "\r\n", "bad Content-Length" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
		    "chunked is not the last coding" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "x\r\n", "bad chunk size" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "\r\n", "bad chunk size" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "1 x\r\n", "bad chunk size" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "10000000000000000\r\n", "bad chunk size" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "2\r\nokX\r\n", "chunk not followed by its line end" },
	};
	struct out	 o;
	size_t		 i;
	char		 nul[] = "HTTP/1.1 200 OK\r\nX-Nul: a?b\r\n\r\n";

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		check(cases[i].text, 0, &o);
		ck_assert_msg(o.st == RESP_ERROR, "case %zu: %d", i, o.st);
		ck_assert_str_eq(o.err, cases[i].why);
		out_free(&o);
	}
	nul[strlen("HTTP/1.1 200 OK\r\nX-Nul: a")] = '\0';
	run(nul, sizeof(nul) - 1, 0, 0, &o);
	ck_assert_int_eq(o.st, RESP_ERROR);
	ck_assert_str_eq(o.err, "NUL in a response header");
	out_free(&o);
}
END_TEST

START_TEST(cut_short)
{
	static const struct {
		const char	*text;
		const char	*why;
	} cases[] = {
		{ "", "no answer" },
		{ "HTTP/1.1 200", "connection closed inside the header" },
		{ "HTTP/1.1 200 OK\r\nX: y\r\n",
		    "connection closed inside the header" },
		{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc",
		    "connection closed inside the body" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "5\r\nabcde\r\n", "connection closed inside the body" },
		{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "0\r\n", "connection closed inside the body" },
	};
	struct out	 o;
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run(cases[i].text, strlen(cases[i].text), 0, 1, &o);
		ck_assert_msg(o.st == RESP_ERROR, "case %zu: %d", i, o.st);
		ck_assert_str_eq(o.err, cases[i].why);
		out_free(&o);
	}
}
END_TEST

/* A block of n headers X-H-i: v; extra is appended to the last value. */
static char *
headers(size_t n, size_t extra)
{
	char	*t, *p;
	size_t	 i;

	ck_assert_ptr_nonnull(t = malloc(64 + n * 32 + extra));
	p = t + sprintf(t, "HTTP/1.1 200 OK\r\n");
	for (i = 0; i < n; i++)
		p += sprintf(p, "X-H-%03zu: v\r\n", i);
	if (extra > 0) {
		p -= 2;
		memset(p, 'w', extra);
		p += extra;
		p += sprintf(p, "\r\n");
	}
	sprintf(p, "\r\n");
	return t;
}

START_TEST(limits)
{
	struct out	 o;
	char		*t;

	/* Lines: at the limit and one past. */
	t = headers(RESP_HDRS_MAX, 0);
	run(t, strlen(t), 0, 1, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	ck_assert_uint_eq(o.nhdrs, RESP_HDRS_MAX);
	out_free(&o);
	free(t);
	t = headers(RESP_HDRS_MAX + 1, 0);
	run(t, strlen(t), 0, 1, &o);
	ck_assert_int_eq(o.st, RESP_ERROR);
	ck_assert_str_eq(o.err, "response headers too large");
	out_free(&o);
	free(t);
	/* Bytes: each name and value plus one; "x-h-000" and "v" are 10
	 * with theirs, so one header of 7 + 2 + RESP_HDR_BYTES_MAX - 10
	 * bytes of value in all is at the limit. */
	t = headers(1, RESP_HDR_BYTES_MAX - 10);
	run(t, strlen(t), 0, 1, &o);
	ck_assert_int_eq(o.st, RESP_DONE);
	out_free(&o);
	free(t);
	t = headers(1, RESP_HDR_BYTES_MAX - 9);
	run(t, strlen(t), 7, 1, &o);
	ck_assert_int_eq(o.st, RESP_ERROR);
	ck_assert_str_eq(o.err, "response headers too large");
	out_free(&o);
	free(t);
}
END_TEST

static Suite *
resp_suite(void)
{
	Suite	*s = suite_create("resp");
	TCase	*tc = tcase_create("answers");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, length);
	tcase_add_test(tc, chunked);
	tcase_add_test(tc, until_close);
	tcase_add_test(tc, no_body);
	tcase_add_test(tc, interim);
	tcase_add_test(tc, folding);
	tcase_add_test(tc, refused);
	tcase_add_test(tc, cut_short);
	tcase_add_test(tc, limits);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(resp_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
