/*
 * Request heads and chunked bodies: each rule at its limit and one past it,
 * each refusal, and the same answer for every split of the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "httpparse.h"

/* Parse from an allocation of exactly len bytes, so overreads are caught. */
static enum hp_status
parse_n(const char *s, size_t len, struct http_head *h)
{
	enum hp_status	 st;
	char		*copy;

	copy = malloc(len > 0 ? len : 1);
	ck_assert_ptr_nonnull(copy);
	memcpy(copy, s, len);
	st = http_parse_head(copy, len, h);
	/* The head is a copy: the input may go. */
	memset(copy, 'X', len);
	free(copy);
	return st;
}

static enum hp_status
parse(const char *s, struct http_head *h)
{
	return parse_n(s, strlen(s), h);
}

/* The error of a head that must be refused. */
static enum hp_err
refused(const char *s)
{
	struct http_head	 h;

	ck_assert_int_eq(parse(s, &h), HP_ERROR);
	ck_assert_ptr_null(h.h_arena);
	return h.h_err;
}

static void
ok_head(const char *s, struct http_head *h)
{
	ck_assert_msg(parse(s, h) == HP_DONE, "refused (%s): %s",
	    hp_err_to_string(h->h_err), s);
	ck_assert_uint_eq(h->h_len, strlen(s));
}

/* A one-field request "GET / HTTP/1.1", Host, then line. */
static enum hp_err
field_refused(const char *line)
{
	char	 buf[512];

	(void)snprintf(buf, sizeof(buf),
	    "GET / HTTP/1.1\r\nHost: broker\r\n%s\r\n\r\n", line);
	return refused(buf);
}

START_TEST(test_head_simple)
{
	struct http_head	 h;

	ok_head("GET /worker/next HTTP/1.1\r\nHost: broker\r\n\r\n", &h);
	ck_assert_str_eq(h.h_method, "GET");
	ck_assert_str_eq(h.h_target, "/worker/next");
	ck_assert_str_eq(h.h_path, "/worker/next");
	ck_assert_str_eq(h.h_query, "");
	ck_assert_int_eq(h.h_has_query, 0);
	ck_assert_int_eq(h.h_has_fragment, 0);
	ck_assert_int_eq(h.h_minor, 1);
	ck_assert_uint_eq(h.h_nfields, 1);
	ck_assert_str_eq(h.h_fields[0].name, "host");
	ck_assert_str_eq(h.h_fields[0].value, "broker");
	ck_assert_int_eq(h.h_framing, HTTP_BODY_NONE);
	http_head_free(&h);
	ck_assert_ptr_null(h.h_arena);

	/* The body that follows is not part of the head. */
	ck_assert_int_eq(parse("POST /x HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 3\r\n\r\nabc", &h), HP_DONE);
	ck_assert_uint_eq(h.h_len, strlen("POST /x HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 3\r\n\r\n"));
	ck_assert_int_eq(h.h_framing, HTTP_BODY_LENGTH);
	ck_assert_uint_eq(h.h_content_length, 3);
	http_head_free(&h);

	/* Any token is a method; what it means is the router's. */
	ok_head("M-SEARCH! / HTTP/1.1\r\nHost: b\r\n\r\n", &h);
	ck_assert_str_eq(h.h_method, "M-SEARCH!");
	http_head_free(&h);
}
END_TEST

START_TEST(test_head_prefixes)
{
	static const char	 s[] = "POST /tools/x?beta=true HTTP/1.1\r\n"
	    "Host: broker\r\nContent-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n";
	struct http_head	 h;
	size_t			 i, len = strlen(s);

	for (i = 0; i < len; i++)
		ck_assert_msg(parse_n(s, i, &h) == HP_MORE, "prefix %zu", i);
	ok_head(s, &h);
	ck_assert_int_eq(h.h_framing, HTTP_BODY_CHUNKED);
	http_head_free(&h);
}
END_TEST

START_TEST(test_request_line)
{
	struct http_head	 h;

	ok_head("GET / HTTP/1.0\r\n\r\n", &h);
	ck_assert_int_eq(h.h_minor, 0);
	http_head_free(&h);

	ck_assert_int_eq(refused("GET / HTTP/1.1\r\n\r\n"), HP_ERR_HOST);
	ck_assert_int_eq(refused("\r\nGET / HTTP/1.1\r\nHost: b\r\n\r\n"),
	    HP_ERR_LINE);
	ck_assert_int_eq(refused("GET / HTTP/1.1\nHost: b\r\n\r\n"),
	    HP_ERR_LINE);
	ck_assert_int_eq(refused("GET / HTTP/1.1\r\nHost: b\n\n"),
	    HP_ERR_LINE);
	ck_assert_int_eq(refused(" / HTTP/1.1\r\n\r\n"), HP_ERR_METHOD);
	ck_assert_int_eq(refused("G@T / HTTP/1.1\r\n\r\n"), HP_ERR_METHOD);
	ck_assert_int_eq(refused("GET\r\n\r\n"), HP_ERR_METHOD);
	ck_assert_int_eq(refused("GET\t/ HTTP/1.1\r\n\r\n"), HP_ERR_METHOD);
	ck_assert_int_eq(refused("GET  / HTTP/1.1\r\n\r\n"), HP_ERR_TARGET);
	ck_assert_int_eq(refused("GET /\r\n\r\n"), HP_ERR_TARGET);
	ck_assert_int_eq(refused("GET / HTTP/1.2\r\n\r\n"), HP_ERR_VERSION);
	ck_assert_int_eq(refused("GET / HTTP/2.0\r\n\r\n"), HP_ERR_VERSION);
	ck_assert_int_eq(refused("GET / HTTP/1.10\r\n\r\n"), HP_ERR_VERSION);
	ck_assert_int_eq(refused("GET / http/1.1\r\n\r\n"), HP_ERR_VERSION);
	ck_assert_int_eq(refused("GET / HTTP/1.1 \r\n\r\n"), HP_ERR_VERSION);
	ck_assert_int_eq(refused("GET / \r\n\r\n"), HP_ERR_VERSION);
	ck_assert_int_eq(refused("GET / HTTP/1.1\r\r\n\r\n"), HP_ERR_VERSION);
}
END_TEST

START_TEST(test_targets)
{
	static const char	 nul_target[] =
	    "GET /a\0 HTTP/1.1\r\nHost: b\r\n\r\n";
	struct http_head	 h;

	ok_head("POST /anthropic/v1/messages?beta=true HTTP/1.1\r\n"
	    "Host: broker\r\n\r\n", &h);
	ck_assert_str_eq(h.h_target, "/anthropic/v1/messages?beta=true");
	ck_assert_str_eq(h.h_path, "/anthropic/v1/messages");
	ck_assert_int_eq(h.h_has_query, 1);
	ck_assert_str_eq(h.h_query, "beta=true");
	ck_assert_int_eq(h.h_has_fragment, 0);
	http_head_free(&h);

	/* An empty query is still a query (PROTOCOL.md 3 rule 1). */
	ok_head("GET /worker/next? HTTP/1.1\r\nHost: b\r\n\r\n", &h);
	ck_assert_str_eq(h.h_path, "/worker/next");
	ck_assert_int_eq(h.h_has_query, 1);
	ck_assert_str_eq(h.h_query, "");
	http_head_free(&h);

	ok_head("GET /x#frag HTTP/1.1\r\nHost: b\r\n\r\n", &h);
	ck_assert_str_eq(h.h_path, "/x");
	ck_assert_int_eq(h.h_has_query, 0);
	ck_assert_int_eq(h.h_has_fragment, 1);
	ck_assert_str_eq(h.h_target, "/x#frag");
	http_head_free(&h);

	ok_head("GET /x?a=1&b#f HTTP/1.1\r\nHost: b\r\n\r\n", &h);
	ck_assert_str_eq(h.h_path, "/x");
	ck_assert_str_eq(h.h_query, "a=1&b");
	ck_assert_int_eq(h.h_has_fragment, 1);
	http_head_free(&h);

	/* A '?' after '#' belongs to the fragment. */
	ok_head("GET /x#f?a HTTP/1.1\r\nHost: b\r\n\r\n", &h);
	ck_assert_int_eq(h.h_has_query, 0);
	ck_assert_int_eq(h.h_has_fragment, 1);
	http_head_free(&h);

	ok_head("GET /?# HTTP/1.1\r\nHost: b\r\n\r\n", &h);
	ck_assert_str_eq(h.h_path, "/");
	ck_assert_int_eq(h.h_has_query, 1);
	ck_assert_str_eq(h.h_query, "");
	ck_assert_int_eq(h.h_has_fragment, 1);
	http_head_free(&h);

	ok_head("GET /%2e%2e/a HTTP/1.1\r\nHost: b\r\n\r\n", &h);
	ck_assert_str_eq(h.h_path, "/%2e%2e/a");
	http_head_free(&h);

	ck_assert_int_eq(refused("GET * HTTP/1.1\r\nHost: b\r\n\r\n"),
	    HP_ERR_TARGET);
	ck_assert_int_eq(refused("GET http://broker/ HTTP/1.1\r\nHost: b\r\n"
	    "\r\n"), HP_ERR_TARGET);
	ck_assert_int_eq(refused("CONNECT broker:80 HTTP/1.1\r\nHost: b\r\n"
	    "\r\n"), HP_ERR_TARGET);
	ck_assert_int_eq(refused("GET /a\x01 HTTP/1.1\r\nHost: b\r\n\r\n"),
	    HP_ERR_TARGET);
	ck_assert_int_eq(refused("GET /a\x7f HTTP/1.1\r\nHost: b\r\n\r\n"),
	    HP_ERR_TARGET);
	ck_assert_int_eq(refused("GET /\xc3\xa9 HTTP/1.1\r\nHost: b\r\n\r\n"),
	    HP_ERR_TARGET);
	ck_assert_int_eq(refused("GET /a\tb HTTP/1.1\r\nHost: b\r\n\r\n"),
	    HP_ERR_TARGET);
	ck_assert_int_eq(parse_n(nul_target, sizeof(nul_target) - 1, &h),
	    HP_ERROR);
	ck_assert_int_eq(h.h_err, HP_ERR_TARGET);
	/* A space inside the target leaves junk where the version goes. */
	ck_assert_int_eq(refused("GET /a b HTTP/1.1\r\nHost: b\r\n\r\n"),
	    HP_ERR_VERSION);
}
END_TEST

START_TEST(test_fields)
{
	static const char	 nul_value[] =
	    "GET / HTTP/1.1\r\nHost: b\r\nX: a\0b\r\n\r\n";
	static const char	 nul_name[] =
	    "GET / HTTP/1.1\r\nHost: b\r\nX\0: ab\r\n\r\n";
	struct http_head	 h;

	ok_head("GET / HTTP/1.1\r\nHOST: broker\r\nX-App:   cli  \t\r\n"
	    "Empty:\r\nSpaced: a  b\r\nanthropic-BETA:\tx,y\r\n"
	    "Utf8: \xc3\xa9\r\n\r\n", &h);
	ck_assert_uint_eq(h.h_nfields, 6);
	ck_assert_str_eq(h.h_fields[0].name, "host");
	ck_assert_str_eq(http_head_get(&h, "host"), "broker");
	ck_assert_str_eq(http_head_get(&h, "x-app"), "cli");
	ck_assert_str_eq(http_head_get(&h, "empty"), "");
	ck_assert_str_eq(http_head_get(&h, "spaced"), "a  b");
	ck_assert_str_eq(http_head_get(&h, "anthropic-beta"), "x,y");
	ck_assert_str_eq(http_head_get(&h, "utf8"), "\xc3\xa9");
	ck_assert_ptr_null(http_head_get(&h, "X-App"));
	ck_assert_ptr_null(http_head_get(&h, "missing"));
	http_head_free(&h);

	/* Repeated ordinary fields are kept in order. */
	ok_head("GET / HTTP/1.1\r\nHost: b\r\nA: 1\r\na: 2\r\n\r\n", &h);
	ck_assert_uint_eq(h.h_nfields, 3);
	ck_assert_str_eq(http_head_get(&h, "a"), "1");
	ck_assert_str_eq(h.h_fields[2].value, "2");
	http_head_free(&h);

	ck_assert_int_eq(field_refused("X : v"), HP_ERR_FIELD_NAME);
	ck_assert_int_eq(field_refused(": v"), HP_ERR_FIELD_NAME);
	ck_assert_int_eq(field_refused("X@Y: v"), HP_ERR_FIELD_NAME);
	ck_assert_int_eq(field_refused("X(Y): v"), HP_ERR_FIELD_NAME);
	ck_assert_int_eq(field_refused("novalue"), HP_ERR_FIELD_NAME);
	ck_assert_int_eq(field_refused("\xc3\xa9: v"), HP_ERR_FIELD_NAME);
	ck_assert_int_eq(field_refused(" folded"), HP_ERR_OBS_FOLD);
	ck_assert_int_eq(field_refused("\tfolded"), HP_ERR_OBS_FOLD);
	ck_assert_int_eq(refused("GET / HTTP/1.1\r\n Host: b\r\n\r\n"),
	    HP_ERR_OBS_FOLD);
	ck_assert_int_eq(field_refused("X: a\rb"), HP_ERR_FIELD_VALUE);
	ck_assert_int_eq(field_refused("X: a\x01"), HP_ERR_FIELD_VALUE);
	ck_assert_int_eq(field_refused("X: a\x7f"), HP_ERR_FIELD_VALUE);
	ck_assert_int_eq(field_refused("X: a\x1b[0m"), HP_ERR_FIELD_VALUE);
	ck_assert_int_eq(field_refused("X: a\nb"), HP_ERR_LINE);
	ck_assert_int_eq(refused("GET / HTTP/1.1\r\nHost: b\r\nX: a\r\r\n\r\n"),
	    HP_ERR_FIELD_VALUE);

	/* NUL in a value, in a name. */
	ck_assert_int_eq(parse_n(nul_value, sizeof(nul_value) - 1, &h),
	    HP_ERROR);
	ck_assert_int_eq(h.h_err, HP_ERR_FIELD_VALUE);
	ck_assert_int_eq(parse_n(nul_name, sizeof(nul_name) - 1, &h),
	    HP_ERROR);
	ck_assert_int_eq(h.h_err, HP_ERR_FIELD_NAME);

	/* Host: one, needed on 1.1, its value the router's. */
	ck_assert_int_eq(refused("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n"
	    "\r\n"), HP_ERR_HOST);
	ok_head("GET / HTTP/1.1\r\nHost:\r\n\r\n", &h);
	http_head_free(&h);
}
END_TEST

START_TEST(test_content_length)
{
	struct http_head	 h;

	ok_head("POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\n\r\n", &h);
	ck_assert_int_eq(h.h_framing, HTTP_BODY_LENGTH);
	ck_assert_uint_eq(h.h_content_length, 0);
	http_head_free(&h);

	ok_head("POST / HTTP/1.1\r\nHost: b\r\ncontent-length:  42 \r\n"
	    "CONTENT-LENGTH: 042\r\n\r\n", &h);
	ck_assert_uint_eq(h.h_content_length, 42);
	http_head_free(&h);

	/* 2^53 is the largest length. */
	ok_head("POST / HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 9007199254740992\r\n\r\n", &h);
	ck_assert_uint_eq(h.h_content_length, 9007199254740992ull);
	http_head_free(&h);
	ck_assert_int_eq(field_refused("Content-Length: 9007199254740993"),
	    HP_ERR_CONTENT_LENGTH);
	ck_assert_int_eq(field_refused("Content-Length: "
	    "99999999999999999999999999999999"), HP_ERR_CONTENT_LENGTH);

	ck_assert_int_eq(field_refused("Content-Length:"),
	    HP_ERR_CONTENT_LENGTH);
	ck_assert_int_eq(field_refused("Content-Length: +5"),
	    HP_ERR_CONTENT_LENGTH);
	ck_assert_int_eq(field_refused("Content-Length: -1"),
	    HP_ERR_CONTENT_LENGTH);
	ck_assert_int_eq(field_refused("Content-Length: 0x5"),
	    HP_ERR_CONTENT_LENGTH);
	ck_assert_int_eq(field_refused("Content-Length: 5,5"),
	    HP_ERR_CONTENT_LENGTH);
	ck_assert_int_eq(field_refused("Content-Length: 5 5"),
	    HP_ERR_CONTENT_LENGTH);
	ck_assert_int_eq(refused("POST / HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 5\r\nContent-Length: 6\r\n\r\n"),
	    HP_ERR_CONTENT_LENGTH);
}
END_TEST

START_TEST(test_transfer_encoding)
{
	struct http_head	 h;

	ok_head("POST / HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: Chunked\r\n"
	    "\r\n", &h);
	ck_assert_int_eq(h.h_framing, HTTP_BODY_CHUNKED);
	http_head_free(&h);

	ck_assert_int_eq(field_refused("Transfer-Encoding: gzip"),
	    HP_ERR_TRANSFER_ENCODING);
	ck_assert_int_eq(field_refused("Transfer-Encoding: gzip, chunked"),
	    HP_ERR_TRANSFER_ENCODING);
	ck_assert_int_eq(field_refused("Transfer-Encoding: chunked, chunked"),
	    HP_ERR_TRANSFER_ENCODING);
	ck_assert_int_eq(field_refused("Transfer-Encoding: identity"),
	    HP_ERR_TRANSFER_ENCODING);
	ck_assert_int_eq(field_refused("Transfer-Encoding:"),
	    HP_ERR_TRANSFER_ENCODING);
	ck_assert_int_eq(refused("POST / HTTP/1.1\r\nHost: b\r\n"
	    "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
	    HP_ERR_TRANSFER_ENCODING);
	ck_assert_int_eq(refused("POST / HTTP/1.1\r\nHost: b\r\n"
	    "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"),
	    HP_ERR_FRAMING);
	ck_assert_int_eq(refused("POST / HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
	    HP_ERR_FRAMING);
	ck_assert_int_eq(refused("POST / HTTP/1.0\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"), HP_ERR_TRANSFER_ENCODING);
}
END_TEST

/* "GET / HTTP/1.1\r\nHost: b\r\n" then n fields "X: 1" */
static char *
many_fields(unsigned n)
{
	char		*s, *p;
	unsigned	 i;

	s = p = malloc(32 + 8 * n);
	ck_assert_ptr_nonnull(s);
	p += sprintf(p, "GET / HTTP/1.1\r\nHost: b\r\n");
	for (i = 0; i < n; i++)
		p += sprintf(p, "X: 1\r\n");
	(void)sprintf(p, "\r\n");
	return s;
}

START_TEST(test_too_many_fields)
{
	struct http_head	 h;
	char			*s;

	s = many_fields(HTTP_FIELDS_MAX - 1);
	ok_head(s, &h);
	ck_assert_uint_eq(h.h_nfields, HTTP_FIELDS_MAX);
	http_head_free(&h);
	free(s);
	s = many_fields(HTTP_FIELDS_MAX);
	ck_assert_int_eq(refused(s), HP_ERR_TOO_MANY_FIELDS);
	free(s);
}
END_TEST

/* A head of exactly len bytes: one long field pads it. */
static char *
head_of(size_t len)
{
	static const char	 pre[] = "GET / HTTP/1.1\r\nHost: b\r\nX: ";
	char			*s;

	s = malloc(len + 1);
	ck_assert_ptr_nonnull(s);
	memset(s, 'a', len);
	memcpy(s, pre, strlen(pre));
	memcpy(s + len - 4, "\r\n\r\n", 5);
	return s;
}

START_TEST(test_head_size)
{
	struct http_head	 h;
	char			*s;

	s = head_of(HTTP_HEAD_MAX);
	ck_assert_int_eq(parse_n(s, HTTP_HEAD_MAX, &h), HP_DONE);
	ck_assert_uint_eq(h.h_len, HTTP_HEAD_MAX);
	ck_assert_uint_eq(strlen(http_head_get(&h, "x")), HTTP_HEAD_MAX - 32);
	http_head_free(&h);
	/* Without its last byte it is a prefix, not yet too large. */
	ck_assert_int_eq(parse_n(s, HTTP_HEAD_MAX - 1, &h), HP_MORE);
	free(s);

	s = head_of(HTTP_HEAD_MAX + 1);
	ck_assert_int_eq(parse_n(s, HTTP_HEAD_MAX, &h), HP_MORE);
	ck_assert_int_eq(parse_n(s, HTTP_HEAD_MAX + 1, &h), HP_ERROR);
	ck_assert_int_eq(h.h_err, HP_ERR_TOO_LARGE);
	free(s);
}
END_TEST

/*
 * Every prefix of each input gives HP_MORE, or the full input's error, or
 * (once the head is in) the same head.
 */
START_TEST(test_head_split_invariance)
{
	static const char	*cases[] = {
		"GET / HTTP/1.1\r\nHost: b\r\n\r\nbody",
		"GET / HTTP/1.1\r\nHost: b\r\nX: a\x01\r\n\r\n",
		"GET / HTTP/1.1\r\n folded\r\n\r\n",
		"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n",
		"GET / HTTP/1.0\r\n\r\n\r\n\r\n",
		("GET /x?y#z HTTP/1.1\r\nHost: b\r\nA: 1\r\nB: 2\r\n\r\n"
		    "C: 3\r\n"),
		"GET / HTTP/1.1\n\n",
	};
	struct http_head	 full, h;
	enum hp_status		 fst, st;
	size_t			 i, k, len;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		len = strlen(cases[i]);
		fst = parse_n(cases[i], len, &full);
		for (k = 0; k <= len; k++) {
			st = parse_n(cases[i], k, &h);
			if (st == HP_MORE)
				continue;
			ck_assert_int_eq(st, fst);
			if (st == HP_ERROR)
				ck_assert_int_eq(h.h_err, full.h_err);
			else {
				ck_assert_uint_eq(h.h_len, full.h_len);
				ck_assert_uint_eq(h.h_nfields, full.h_nfields);
				ck_assert_str_eq(h.h_target, full.h_target);
				http_head_free(&h);
			}
		}
		if (fst == HP_DONE)
			http_head_free(&full);
	}
}
END_TEST

/* Chunked decoding. */

struct sink {
	char	 buf[65536];
	size_t	 len;
	int	 refuse_at;	/* refuse the n-th piece (1-based), 0 never */
	int	 pieces;
};

static int
sink_cb(void *arg, const char *data, size_t len)
{
	struct sink	*sk = arg;

	ck_assert_uint_gt(len, 0);
	if (++sk->pieces == sk->refuse_at)
		return -1;
	ck_assert_uint_le(sk->len + len, sizeof(sk->buf));
	memcpy(sk->buf + sk->len, data, len);
	sk->len += len;
	return 0;
}

struct dec {
	enum hp_status	 st;
	enum hc_err	 err;
	size_t		 consumed;
	struct sink	 sink;
};

/*
 * Decode in pieces: cut[] are the offsets where a new feed starts (the
 * unconsumed rest of a piece is never fed again: a decoder eats all of a
 * piece unless it stops).
 */
static void
decode_cuts(const char *in, size_t len, uint64_t max, const size_t *cuts,
    size_t ncuts, struct dec *d)
{
	struct http_chunked	 st;
	size_t			 from = 0, to, i, used;
	char			*piece;

	memset(d, 0, sizeof(*d));
	http_chunked_init(&st, max);
	d->st = HP_MORE;
	for (i = 0; i <= ncuts && d->st == HP_MORE; i++) {
		to = i < ncuts ? cuts[i] : len;
		if (to < from)
			continue;
		piece = malloc(to - from + 1);
		ck_assert_ptr_nonnull(piece);
		memcpy(piece, in + from, to - from);
		d->st = http_chunked_feed(&st, piece, to - from, &used,
		    sink_cb, &d->sink);
		free(piece);
		if (d->st == HP_MORE)
			ck_assert_uint_eq(used, to - from);
		d->consumed += used;
		from = to;
	}
	d->err = st.hc_err;
}

static void
decode(const char *in, size_t len, uint64_t max, struct dec *d)
{
	decode_cuts(in, len, max, NULL, 0, d);
}

static void
decode_same_any_split(const char *in, size_t len, uint64_t max,
    const struct dec *want)
{
	struct dec	 d;
	size_t		 i, j, cuts[2];

	for (i = 0; i <= len; i++) {
		for (j = i; j <= len; j++) {
			cuts[0] = i;
			cuts[1] = j;
			decode_cuts(in, len, max, cuts, 2, &d);
			ck_assert_int_eq(d.st, want->st);
			ck_assert_int_eq(d.err, want->err);
			ck_assert_uint_eq(d.consumed, want->consumed);
			ck_assert_uint_eq(d.sink.len, want->sink.len);
			ck_assert(memcmp(d.sink.buf, want->sink.buf,
			    d.sink.len) == 0);
		}
	}
}

static enum hc_err
chunked_refused(const char *in, uint64_t max)
{
	struct dec	 d;

	decode(in, strlen(in), max, &d);
	ck_assert_msg(d.st == HP_ERROR, "accepted: %s", in);
	decode_same_any_split(in, strlen(in), max, &d);
	return d.err;
}

START_TEST(test_chunked_simple)
{
	static const char	 in[] = "5\r\nhello\r\nA\r\n, world! !\r\n"
	    "1;ext=1\r\n.\r\n0\r\n\r\nNEXT";
	struct dec		 d;
	size_t			 len = strlen(in);

	decode(in, len, UINT64_MAX, &d);
	ck_assert_int_eq(d.st, HP_DONE);
	ck_assert_uint_eq(d.consumed, len - 4);
	ck_assert_uint_eq(d.sink.len, 16);
	ck_assert(memcmp(d.sink.buf, "hello, world! !.", 16) == 0);
	decode_same_any_split(in, len, UINT64_MAX, &d);
}
END_TEST

START_TEST(test_chunked_byte_by_byte)
{
	static const char	 in[] = "0003\r\nabc\r\n1a ; x=\"y\"\t;z\r\n"
	    "abcdefghijklmnopqrstuvwxyz\r\n0\r\nX-Trailer: t\r\n\r\n";
	struct http_chunked	 st;
	struct sink		 sk;
	enum hp_status		 r = HP_MORE;
	size_t			 i, used, len = strlen(in);

	memset(&sk, 0, sizeof(sk));
	http_chunked_init(&st, UINT64_MAX);
	for (i = 0; i < len; i++) {
		r = http_chunked_feed(&st, in + i, 1, &used, sink_cb, &sk);
		ck_assert_uint_eq(used, 1);
		if (i + 1 < len)
			ck_assert_int_eq(r, HP_MORE);
	}
	ck_assert_int_eq(r, HP_DONE);
	ck_assert_uint_eq(sk.len, 29);
	ck_assert(memcmp(sk.buf, "abcabcdefghijklmnopqrstuvwxyz", 29) == 0);
	ck_assert_uint_eq(sk.pieces, 29);

	/* Finished: more input is not taken. */
	ck_assert_int_eq(http_chunked_feed(&st, "5\r\n", 3, &used, sink_cb,
	    &sk), HP_DONE);
	ck_assert_uint_eq(used, 0);
}
END_TEST

START_TEST(test_chunked_sizes)
{
	struct dec	 d;

	ck_assert_int_eq(chunked_refused("\r\n", UINT64_MAX), HC_ERR_SIZE);
	ck_assert_int_eq(chunked_refused(";x\r\n", UINT64_MAX), HC_ERR_SIZE);
	ck_assert_int_eq(chunked_refused("g\r\n", UINT64_MAX), HC_ERR_SIZE);
	ck_assert_int_eq(chunked_refused("-1\r\n", UINT64_MAX), HC_ERR_SIZE);
	ck_assert_int_eq(chunked_refused("+1\r\n", UINT64_MAX), HC_ERR_SIZE);
	ck_assert_int_eq(chunked_refused(" 1\r\n", UINT64_MAX), HC_ERR_SIZE);
	ck_assert_int_eq(chunked_refused("0x5\r\n", UINT64_MAX), HC_ERR_SIZE);
	ck_assert_int_eq(chunked_refused("5x\r\n", UINT64_MAX), HC_ERR_SIZE);
	ck_assert_int_eq(chunked_refused("5 x\r\n", UINT64_MAX),
	    HC_ERR_EXTENSION);
	ck_assert_int_eq(chunked_refused("5 6\r\n", UINT64_MAX),
	    HC_ERR_EXTENSION);
	ck_assert_int_eq(chunked_refused("5;a\x01\r\n", UINT64_MAX),
	    HC_ERR_EXTENSION);
	ck_assert_int_eq(chunked_refused("5;a\nb\r\n", UINT64_MAX),
	    HC_ERR_EXTENSION);
	ck_assert_int_eq(chunked_refused("5\n", UINT64_MAX), HC_ERR_SIZE);
	ck_assert_int_eq(chunked_refused("5\rx", UINT64_MAX), HC_ERR_CRLF);

	/* 2^53 is the largest chunk; the line is fine, data must follow. */
	decode("20000000000000\r\nab", 18, UINT64_MAX, &d);
	ck_assert_int_eq(d.st, HP_MORE);
	ck_assert_uint_eq(d.sink.len, 2);
	ck_assert_int_eq(chunked_refused("20000000000001\r\n", UINT64_MAX),
	    HC_ERR_SIZE);
	ck_assert_int_eq(chunked_refused("ffffffffffffffffffff\r\n",
	    UINT64_MAX), HC_ERR_SIZE);
}
END_TEST

START_TEST(test_chunked_crlf)
{
	ck_assert_int_eq(chunked_refused("5\r\nhelloX", UINT64_MAX),
	    HC_ERR_CRLF);
	ck_assert_int_eq(chunked_refused("5\r\nhello\n", UINT64_MAX),
	    HC_ERR_CRLF);
	ck_assert_int_eq(chunked_refused("5\r\nhello\r\r", UINT64_MAX),
	    HC_ERR_CRLF);
	ck_assert_int_eq(chunked_refused("5\r\nhello\r\n0\r\n\rX", UINT64_MAX),
	    HC_ERR_CRLF);
	ck_assert_int_eq(chunked_refused("0\r\n\n", UINT64_MAX),
	    HC_ERR_TRAILER);
}
END_TEST

START_TEST(test_chunked_line_length)
{
	struct dec	 d;
	char		*s;
	size_t		 n = HTTP_CHUNK_LINE_MAX;

	/* A size line of exactly the limit, extension included. */
	s = malloc(n + 16);
	ck_assert_ptr_nonnull(s);
	memset(s, 'e', n);
	memcpy(s, "1;", 2);
	memcpy(s + n, "\r\nx\r\n0\r\n\r\n", 11);
	decode(s, strlen(s), UINT64_MAX, &d);
	ck_assert_int_eq(d.st, HP_DONE);
	ck_assert_uint_eq(d.sink.len, 1);

	memset(s, 'e', n + 1);
	memcpy(s, "1;", 2);
	memcpy(s + n + 1, "\r\nx\r\n0\r\n\r\n", 11);
	decode(s, strlen(s), UINT64_MAX, &d);
	ck_assert_int_eq(d.st, HP_ERROR);
	ck_assert_int_eq(d.err, HC_ERR_LINE_TOO_LONG);
	ck_assert_uint_eq(d.consumed, n);

	/* Leading zeros count too. */
	memset(s, '0', n + 1);
	memcpy(s + n + 1, "\r\n\r\n", 5);
	decode(s, strlen(s), UINT64_MAX, &d);
	ck_assert_int_eq(d.err, HC_ERR_LINE_TOO_LONG);
	memcpy(s + n, "\r\n\r\n", 5);
	decode(s, strlen(s), UINT64_MAX, &d);
	ck_assert_int_eq(d.st, HP_DONE);
	free(s);
}
END_TEST

START_TEST(test_chunked_trailers)
{
	struct dec	 d;
	char		*s;
	size_t		 n;

	decode("0\r\nA: 1\r\nB:\r\nC-d: x y\t\r\n\r\n", 26, UINT64_MAX, &d);
	ck_assert_int_eq(d.st, HP_DONE);
	ck_assert_uint_eq(d.consumed, 26);

	ck_assert_int_eq(chunked_refused("0\r\n A: 1\r\n\r\n", UINT64_MAX),
	    HC_ERR_TRAILER);
	ck_assert_int_eq(chunked_refused("0\r\nA 1\r\n\r\n", UINT64_MAX),
	    HC_ERR_TRAILER);
	ck_assert_int_eq(chunked_refused("0\r\nA\r\n\r\n", UINT64_MAX),
	    HC_ERR_TRAILER);
	ck_assert_int_eq(chunked_refused("0\r\n:1\r\n\r\n", UINT64_MAX),
	    HC_ERR_TRAILER);
	ck_assert_int_eq(chunked_refused("0\r\nA: \x01\r\n\r\n", UINT64_MAX),
	    HC_ERR_TRAILER);
	ck_assert_int_eq(chunked_refused("0\r\nA: 1\n\r\n", UINT64_MAX),
	    HC_ERR_TRAILER);
	ck_assert_int_eq(chunked_refused("0\r\nA: 1\rx\r\n", UINT64_MAX),
	    HC_ERR_TRAILER);

	/* The trailer section at its limit (CRLFs counted), then past it. */
	n = HTTP_TRAILER_MAX;
	s = malloc(n + 16);
	ck_assert_ptr_nonnull(s);
	memcpy(s, "0\r\n", 3);
	memset(s + 3, 'v', n);
	memcpy(s + 3, "A:", 2);
	memcpy(s + 3 + n - 2, "\r\n\r\n", 5);
	decode(s, strlen(s), UINT64_MAX, &d);
	ck_assert_int_eq(d.st, HP_DONE);
	memset(s + 3, 'v', n + 1);
	memcpy(s + 3, "A:", 2);
	memcpy(s + 3 + n - 1, "\r\n\r\n", 5);
	decode(s, strlen(s), UINT64_MAX, &d);
	ck_assert_int_eq(d.st, HP_ERROR);
	ck_assert_int_eq(d.err, HC_ERR_TRAILER_TOO_LARGE);
	free(s);
}
END_TEST

START_TEST(test_chunked_max)
{
	static const char	 ten[] = "a\r\n0123456789\r\n0\r\n\r\n";
	static const char	 two[] =
	    "5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n";
	struct dec		 d;

	decode(ten, strlen(ten), 10, &d);
	ck_assert_int_eq(d.st, HP_DONE);
	ck_assert_uint_eq(d.sink.len, 10);
	decode_same_any_split(ten, strlen(ten), 10, &d);

	/* Refused at the size line, before any data of that chunk. */
	decode(ten, strlen(ten), 9, &d);
	ck_assert_int_eq(d.st, HP_ERROR);
	ck_assert_int_eq(d.err, HC_ERR_TOO_LARGE);
	ck_assert_uint_eq(d.consumed, 0);
	ck_assert_uint_eq(d.sink.len, 0);

	decode(two, strlen(two), 10, &d);
	ck_assert_int_eq(d.st, HP_DONE);
	decode(two, strlen(two), 9, &d);
	ck_assert_int_eq(d.err, HC_ERR_TOO_LARGE);
	ck_assert_uint_eq(d.consumed, 10);
	ck_assert_uint_eq(d.sink.len, 5);
	decode_same_any_split(two, strlen(two), 9, &d);

	/* An empty body under a maximum of 0. */
	decode("0\r\n\r\n", 5, 0, &d);
	ck_assert_int_eq(d.st, HP_DONE);
	ck_assert_int_eq(chunked_refused("1\r\n", 0), HC_ERR_TOO_LARGE);
	/* Leading zeros do not count. */
	decode("000a\r\n0123456789\r\n0\r\n\r\n", 23, 10, &d);
	ck_assert_int_eq(d.st, HP_DONE);
}
END_TEST

START_TEST(test_chunked_callback)
{
	struct http_chunked	 st;
	struct sink		 sk;
	size_t			 used;

	memset(&sk, 0, sizeof(sk));
	sk.refuse_at = 2;
	http_chunked_init(&st, UINT64_MAX);
	ck_assert_int_eq(http_chunked_feed(&st, "2\r\nab\r\n2\r\ncd\r\n", 14,
	    &used, sink_cb, &sk), HP_ERROR);
	ck_assert_int_eq(st.hc_err, HC_ERR_CALLBACK);
	ck_assert_uint_eq(used, 10);
	ck_assert_uint_eq(sk.len, 2);
	/* Errors are final. */
	ck_assert_int_eq(http_chunked_feed(&st, "0\r\n\r\n", 5, &used,
	    sink_cb, &sk), HP_ERROR);
	ck_assert_uint_eq(used, 0);

	/* No callback: data is checked and dropped. */
	http_chunked_init(&st, UINT64_MAX);
	ck_assert_int_eq(http_chunked_feed(&st, "2\r\nab\r\n0\r\n\r\n", 12,
	    &used, NULL, NULL), HP_DONE);
	ck_assert_uint_eq(used, 12);
}
END_TEST

static char *
repeat(const char *unit, size_t n, const char *tail)
{
	size_t	 ul = strlen(unit), tl = strlen(tail), i;
	char	*s;

	s = malloc(ul * n + tl + 1);
	ck_assert_ptr_nonnull(s);
	for (i = 0; i < n; i++)
		memcpy(s + i * ul, unit, ul);
	memcpy(s + ul * n, tail, tl + 1);
	return s;
}

/* Chars are UTF-16 code units: 4 096 of them at the limit, one past it. */
START_TEST(test_value_copyable)
{
	static const char *const units[] = { "a", "\xc3\xa9", "\xe2\x82\xac" };
	char	*v;
	size_t	 i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		v = repeat(units[i], 4096, "");
		ck_assert(http_value_copyable(v, 4096));
		free(v);
		v = repeat(units[i], 4097, "");
		ck_assert(!http_value_copyable(v, 4096));
		free(v);
	}
	/* Four bytes are two chars. */
	v = repeat("\xf0\x9f\x98\x80", 2048, "");
	ck_assert(http_value_copyable(v, 4096));
	free(v);
	v = repeat("\xf0\x9f\x98\x80", 2048, "a");
	ck_assert(!http_value_copyable(v, 4096));
	free(v);
	v = repeat("a", 100000, "");
	ck_assert(!http_value_copyable(v, 4096));
	ck_assert(!http_value_copyable(v, 256));
	free(v);
	ck_assert(http_value_copyable("", 256));
	ck_assert(http_value_copyable("2023-06-01", 256));
	ck_assert(http_value_copyable("a\tb", 256));
	/* Not UTF-8: obs-text the parser let through. */
	ck_assert(!http_value_copyable("\xff\xfe", 256));
	ck_assert(!http_value_copyable("a\xc3", 256));
	ck_assert(!http_value_copyable("\xc0\xaf", 256));
	ck_assert(!http_value_copyable("\xed\xa0\x80", 256));
	/* Control characters but HTAB. */
	ck_assert(!http_value_copyable("a\x01", 256));
	ck_assert(!http_value_copyable("a\rb", 256));
	ck_assert(!http_value_copyable("\x7f", 256));
}
END_TEST

START_TEST(test_field_valid)
{
	ck_assert(http_field_valid("content-type", "text/event-stream"));
	ck_assert(http_field_valid("x-a", ""));
	ck_assert(http_field_valid("x-a", "a\tb \xc3\xa9"));
	ck_assert(!http_field_valid("", "v"));
	ck_assert(!http_field_valid("x a", "v"));
	ck_assert(!http_field_valid("x:", "v"));
	ck_assert(!http_field_valid("x", "a\r\nb: c"));
	ck_assert(!http_field_valid("x", "a\nb"));
	ck_assert(!http_field_valid("x", "\x7f"));
}
END_TEST

START_TEST(test_err_strings)
{
	int	 i;

	for (i = HP_OK; i <= HP_ERR_NOMEM; i++)
		ck_assert_str_ne(hp_err_to_string(i), "unknown head error");
	for (i = HC_OK; i <= HC_ERR_CALLBACK; i++)
		ck_assert_str_ne(hc_err_to_string(i), "unknown chunked error");
}
END_TEST

/* An answer's head, written in one piece: its size is what is written. */
START_TEST(answer_head)
{
	static const struct http_hdr	 h[] = {
		{ "request-id", "req_1" }, { "x-a", "" }
	};
	static const char		 want[] = "HTTP/1.1 200 OK\r\n"
	    "content-type: text/plain\r\nrequest-id: req_1\r\nx-a: \r\n"
	    "content-length: 3\r\nconnection: close\r\n\r\n";
	char				 buf[256];
	size_t				 n;

	n = http_answer_head_size(200, "text/plain", h, 2,
	    "content-length: 3\r\n");
	ck_assert_uint_eq(n, sizeof(want) - 1);
	memset(buf, 'x', sizeof(buf));
	ck_assert_uint_eq(http_answer_head(buf, 200, "text/plain", h, 2,
	    "content-length: 3\r\n"), n);
	ck_assert(memcmp(buf, want, n) == 0);
	ck_assert_int_eq(buf[n], 'x');

	n = http_answer_head(buf, 299, NULL, NULL, 0, NULL);
	ck_assert_uint_eq(n, http_answer_head_size(299, NULL, NULL, 0, NULL));
	buf[n] = '\0';
	ck_assert_str_eq(buf, "HTTP/1.1 299 \r\nconnection: close\r\n\r\n");
	ck_assert_str_eq(http_reason(429), "Too Many Requests");
}
END_TEST


static Suite *
httpparse_suite(void)
{
	Suite	*s = suite_create("httpparse");
	TCase	*tc;

	tc = tcase_create("head");
	tcase_add_test(tc, test_head_simple);
	tcase_add_test(tc, test_head_prefixes);
	tcase_add_test(tc, test_request_line);
	tcase_add_test(tc, test_targets);
	tcase_add_test(tc, test_fields);
	tcase_add_test(tc, test_content_length);
	tcase_add_test(tc, test_transfer_encoding);
	tcase_add_test(tc, test_too_many_fields);
	tcase_add_test(tc, test_head_size);
	tcase_add_test(tc, test_head_split_invariance);
	tcase_add_test(tc, test_field_valid);
	tcase_add_test(tc, test_value_copyable);
	suite_add_tcase(s, tc);

	tc = tcase_create("chunked");
	tcase_add_test(tc, test_chunked_simple);
	tcase_add_test(tc, test_chunked_byte_by_byte);
	tcase_add_test(tc, test_chunked_sizes);
	tcase_add_test(tc, test_chunked_crlf);
	tcase_add_test(tc, test_chunked_line_length);
	tcase_add_test(tc, test_chunked_trailers);
	tcase_add_test(tc, test_chunked_max);
	tcase_add_test(tc, test_chunked_callback);
	tcase_add_test(tc, test_err_strings);
	tcase_add_test(tc, answer_head);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(httpparse_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
