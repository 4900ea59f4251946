/*
 * The pure parts of the controlled fetch: the option ranges of PROTOCOL.md
 * 8 at each limit and one past, the content-encoding names, and the
 * decoder's two bounds (wire and decoded) for identity, gzip, zlib and raw
 * deflate and brotli, at the bound and one byte past, fed whole and one
 * byte at a time; bombs, corrupt and truncated streams.  Also the refusals
 * fetch_start() makes before any name lookup or connection.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <brotli/encode.h>
#include <event2/event.h>
#include <zlib.h>

#include "decode.h"
#include "fetch.h"
#include "limits.h"
#include "upstream.h"

#define PLAIN_LEN	100000

/* Coded forms of one body. */
enum coding {
	C_IDENTITY,
	C_GZIP,
	C_ZLIB,
	C_RAW,
	C_BR,
	C_COUNT
};

static const char *const coding_names[C_COUNT] = {
	"identity", "gzip", "deflate (zlib)", "deflate (raw)", "br"
};

static const enum dec_kind coding_kinds[C_COUNT] = {
	DEC_IDENTITY, DEC_GZIP, DEC_DEFLATE, DEC_DEFLATE, DEC_BR
};

/* Text-like bytes (compressible) or noise (not). */
static uint8_t *
make_plain(size_t len, int noise)
{
	uint8_t		*p;
	uint32_t	 x = 2463534242u;
	size_t		 i;

	ck_assert_ptr_nonnull(p = malloc(len ? len : 1));
	for (i = 0; i < len; i++) {
		if (noise) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			p[i] = (uint8_t)x;
		} else
			p[i] = "the quick brown fox jumps over the lazy dog\n"
			    [(i * 7 + i / 50) % 44];
	}
	return p;
}

static uint8_t *
encode(enum coding c, const uint8_t *in, size_t len, size_t *outlen)
{
	z_stream	 z;
	uint8_t		*out;
	size_t		 cap = len + len / 2 + 1024;
	int		 wbits;

	ck_assert_ptr_nonnull(out = malloc(cap));
	switch (c) {
	case C_IDENTITY:
		memcpy(out, in, len);
		*outlen = len;
		return out;
	case C_BR:
		*outlen = cap;
		ck_assert_int_eq(BrotliEncoderCompress(5, BROTLI_DEFAULT_WINDOW,
		    BROTLI_MODE_GENERIC, len, in, outlen, out), BROTLI_TRUE);
		return out;
	default:
		wbits = c == C_GZIP ? 15 + 16 : c == C_ZLIB ? 15 : -15;
		memset(&z, 0, sizeof(z));
		ck_assert_int_eq(deflateInit2(&z, 6, Z_DEFLATED, wbits, 8,
		    Z_DEFAULT_STRATEGY), Z_OK);
		z.next_in = (Bytef *)(uintptr_t)in;
		z.avail_in = (uInt)len;
		z.next_out = out;
		z.avail_out = (uInt)cap;
		ck_assert_int_eq(deflate(&z, Z_FINISH), Z_STREAM_END);
		*outlen = cap - z.avail_out;
		deflateEnd(&z);
		return out;
	}
}

/* Decode in pieces of step bytes (0: whole). */
static enum dec_result
run(enum dec_kind k, size_t max, const uint8_t *in, size_t len, size_t step,
    struct dec **dp)
{
	struct dec	*d;
	enum dec_result	 r = DEC_OK;
	size_t		 off = 0, n;

	ck_assert_ptr_nonnull(d = dec_new(k, max));
	if (step == 0)
		step = len ? len : 1;
	while (off < len && r == DEC_OK) {
		n = len - off < step ? len - off : step;
		r = dec_feed(d, in + off, n);
		off += n;
	}
	if (r == DEC_OK)
		r = dec_finish(d);
	if (dp != NULL)
		*dp = d;
	else
		dec_free(d);
	return r;
}

static void
check_output(struct dec *d, const uint8_t *plain, size_t len)
{
	const uint8_t	*out;
	size_t		 outlen;

	out = dec_data(d, &outlen);
	ck_assert_uint_eq(outlen, len);
	ck_assert(len == 0 || memcmp(out, plain, len) == 0);
}

START_TEST(options_ranges)
{
	struct fetch_opts	 o;
	char			*url;

	fetch_opts_default(&o, "https://example.com/");
	ck_assert_ptr_null(fetch_opts_check(&o));
	ck_assert_uint_eq(o.fo_deadline_ms, 60000);
	ck_assert_uint_eq(o.fo_max_bytes, 5 * 1048576);
	ck_assert_uint_eq(o.fo_max_redirects, 5);

	o.fo_deadline_ms = 1;
	ck_assert_ptr_null(fetch_opts_check(&o));
	o.fo_deadline_ms = 0;
	ck_assert_str_eq(fetch_opts_check(&o), "deadline_ms must be 1-120000");
	o.fo_deadline_ms = 120000;
	ck_assert_ptr_null(fetch_opts_check(&o));
	o.fo_deadline_ms = 120001;
	ck_assert_str_eq(fetch_opts_check(&o), "deadline_ms must be 1-120000");
	o.fo_deadline_ms = 60000;

	o.fo_max_bytes = 1;
	ck_assert_ptr_null(fetch_opts_check(&o));
	o.fo_max_bytes = 0;
	ck_assert_str_eq(fetch_opts_check(&o), "max_bytes must be 1-33554432");
	o.fo_max_bytes = 32 * 1048576;
	ck_assert_ptr_null(fetch_opts_check(&o));
	o.fo_max_bytes = 32 * 1048576 + 1;
	ck_assert_str_eq(fetch_opts_check(&o), "max_bytes must be 1-33554432");
	o.fo_max_bytes = 1048576;

	o.fo_max_redirects = 0;
	ck_assert_ptr_null(fetch_opts_check(&o));
	o.fo_max_redirects = 10;
	ck_assert_ptr_null(fetch_opts_check(&o));
	o.fo_max_redirects = 11;
	ck_assert_str_eq(fetch_opts_check(&o), "max_redirects must be 0-10");
	o.fo_max_redirects = 5;

	ck_assert_ptr_nonnull(url = malloc(URL_BYTES_MAX + 2));
	memset(url, 'a', URL_BYTES_MAX + 1);
	memcpy(url, "http://a.example/", 17);
	url[URL_BYTES_MAX] = '\0';
	o.fo_url = url;
	ck_assert_ptr_null(fetch_opts_check(&o));
	url[URL_BYTES_MAX] = 'a';
	url[URL_BYTES_MAX + 1] = '\0';
	ck_assert_str_eq(fetch_opts_check(&o), "url must be 1-8192 bytes");
	o.fo_url = "";
	ck_assert_str_eq(fetch_opts_check(&o), "url must be 1-8192 bytes");
	free(url);
}
END_TEST

START_TEST(coding_names_parse)
{
	static const struct {
		const char	*v;
		int		 rv;
		enum dec_kind	 k;
	} t[] = {
		{ "", 0, DEC_IDENTITY },
		{ "identity", 0, DEC_IDENTITY },
		{ "Identity , ", 0, DEC_IDENTITY },
		{ "gzip", 0, DEC_GZIP },
		{ "GZip", 0, DEC_GZIP },
		{ "x-gzip", 0, DEC_GZIP },
		{ " gzip\t", 0, DEC_GZIP },
		{ "identity, gzip", 0, DEC_GZIP },
		{ "gzip, identity", 0, DEC_GZIP },
		{ "deflate", 0, DEC_DEFLATE },
		{ "br", 0, DEC_BR },
		{ "BR", 0, DEC_BR },
		{ "gzip, br", -1, DEC_IDENTITY },
		{ "gzip, gzip", -1, DEC_IDENTITY },
		{ "compress", -1, DEC_IDENTITY },
		{ "zstd", -1, DEC_IDENTITY },
		{ "gzipx", -1, DEC_IDENTITY },
		{ "g zip", -1, DEC_IDENTITY },
	};
	enum dec_kind	 k;
	size_t		 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		k = DEC_IDENTITY;
		ck_assert_msg(dec_kind_parse(t[i].v, &k) == t[i].rv,
		    "\"%s\"", t[i].v);
		if (t[i].rv == 0)
			ck_assert_msg(k == t[i].k, "\"%s\"", t[i].v);
	}
}
END_TEST

/* Decoded bound: at the plain length passes, one less fails. */
START_TEST(decoded_bound)
{
	enum coding	 c = _i;
	uint8_t		*plain, *coded;
	size_t		 clen;
	struct dec	*d;
	size_t		 steps[] = { 0, 1, 7, 4096 }, s;

	plain = make_plain(PLAIN_LEN, 0);
	coded = encode(c, plain, PLAIN_LEN, &clen);
	for (s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
		ck_assert_msg(run(coding_kinds[c], PLAIN_LEN, coded, clen,
		    steps[s], &d) == DEC_OK, "%s step %zu", coding_names[c],
		    steps[s]);
		check_output(d, plain, PLAIN_LEN);
		ck_assert_uint_eq(dec_wire_bytes(d), clen);
		dec_free(d);
		ck_assert_msg(run(coding_kinds[c], PLAIN_LEN - 1, coded, clen,
		    steps[s], &d) == (c == C_IDENTITY ? DEC_WIRE_TOO_LARGE :
		    DEC_TOO_LARGE), "%s step %zu", coding_names[c], steps[s]);
		{
			size_t	 outlen;

			(void)dec_data(d, &outlen);
			ck_assert_uint_le(outlen, PLAIN_LEN - 1);
		}
		dec_free(d);
	}
	free(plain);
	free(coded);
}
END_TEST

/* Wire bound: noise grows when coded, so the wire passes the bound
 * first. */
START_TEST(wire_bound)
{
	enum coding	 c = _i;
	uint8_t		*plain, *coded;
	size_t		 clen;
	struct dec	*d;

	plain = make_plain(PLAIN_LEN, 1);
	coded = encode(c, plain, PLAIN_LEN, &clen);
	ck_assert_uint_ge(clen, PLAIN_LEN);
	ck_assert_int_eq(run(coding_kinds[c], clen, coded, clen, 1000, &d),
	    DEC_OK);
	check_output(d, plain, PLAIN_LEN);
	dec_free(d);
	ck_assert_int_eq(run(coding_kinds[c], clen - 1, coded, clen, 1000,
	    NULL), DEC_WIRE_TOO_LARGE);
	free(plain);
	free(coded);
}
END_TEST

/* 64 MiB of zeros in a few kilobytes, cut at 1 MiB. */
START_TEST(bomb)
{
	enum coding	 c = _i;
	size_t		 big = 64u * 1048576, clen, outlen;
	uint8_t		*zeros, *coded;
	struct dec	*d;

	if (c == C_IDENTITY)
		return;
	ck_assert_ptr_nonnull(zeros = calloc(1, big));
	coded = encode(c, zeros, big, &clen);
	free(zeros);
	ck_assert_uint_lt(clen, 1048576);
	ck_assert_int_eq(run(coding_kinds[c], 1048576, coded, clen, 4096, &d),
	    DEC_TOO_LARGE);
	(void)dec_data(d, &outlen);
	ck_assert_uint_le(outlen, 1048576);
	/* Sticky: nothing more is taken. */
	ck_assert_int_eq(dec_feed(d, coded, 1), DEC_TOO_LARGE);
	ck_assert_int_eq(dec_finish(d), DEC_TOO_LARGE);
	dec_free(d);
	free(coded);
}
END_TEST

START_TEST(truncated_and_corrupt)
{
	enum coding	 c = _i;
	uint8_t		*plain, *coded, *bad;
	size_t		 clen, i;

	if (c == C_IDENTITY)
		return;
	plain = make_plain(PLAIN_LEN, 0);
	coded = encode(c, plain, PLAIN_LEN, &clen);
	ck_assert_int_eq(run(coding_kinds[c], PLAIN_LEN, coded, clen / 2, 0,
	    NULL), DEC_TRUNCATED);
	ck_assert_int_eq(run(coding_kinds[c], PLAIN_LEN, coded, 1, 0, NULL),
	    DEC_TRUNCATED);
	ck_assert_ptr_nonnull(bad = malloc(clen));
	memcpy(bad, coded, clen);
	for (i = 10; i < clen; i++)
		bad[i] ^= 0x5a;
	ck_assert_int_ne(run(coding_kinds[c], PLAIN_LEN, bad, clen, 0, NULL),
	    DEC_OK);
	memset(bad, 0xff, clen);
	ck_assert_int_ne(run(coding_kinds[c], PLAIN_LEN, bad, clen, 0, NULL),
	    DEC_OK);
	free(bad);
	free(plain);
	free(coded);
}
END_TEST

START_TEST(empty_body)
{
	enum coding	 c = _i;
	struct dec	*d;
	size_t		 len;

	ck_assert_int_eq(run(coding_kinds[c], 1, NULL, 0, 0, &d), DEC_OK);
	(void)dec_data(d, &len);
	ck_assert_uint_eq(len, 0);
	dec_free(d);
}
END_TEST

START_TEST(gzip_members_and_trailers)
{
	uint8_t		*plain, *a, *b, *both;
	size_t		 alen, blen;
	struct dec	*d;
	const uint8_t	*out;
	size_t		 outlen;

	plain = make_plain(5000, 0);
	a = encode(C_GZIP, plain, 3000, &alen);
	b = encode(C_GZIP, plain + 3000, 2000, &blen);
	ck_assert_ptr_nonnull(both = malloc(alen + blen + 8));
	memcpy(both, a, alen);
	memcpy(both + alen, b, blen);
	ck_assert_int_eq(run(DEC_GZIP, 5000, both, alen + blen, 0, &d),
	    DEC_OK);
	check_output(d, plain, 5000);
	dec_free(d);
	ck_assert_int_eq(run(DEC_GZIP, 5000, both, alen + blen, 1, &d),
	    DEC_OK);
	check_output(d, plain, 5000);
	dec_free(d);
	/* Bytes after the end of a stream that are no member are ignored. */
	free(a);
	a = encode(C_ZLIB, plain, 5000, &alen);
	memcpy(both, a, alen);
	memcpy(both + alen, "trailer!", 8);
	ck_assert_int_eq(run(DEC_DEFLATE, 5000, both, alen + 8, 0, &d),
	    DEC_OK);
	out = dec_data(d, &outlen);
	ck_assert_uint_eq(outlen, 5000);
	ck_assert(memcmp(out, plain, 5000) == 0);
	dec_free(d);
	free(a);
	free(b);
	free(both);
	free(plain);
}
END_TEST

/*
 * What follows a gzip member and is no member is ignored up to the end of
 * the answer, however it is cut: a later 0x1f at the start of a piece does
 * not start a member that the whole answer would have ignored (found by
 * fuzz_decode).
 */
START_TEST(gzip_trailer_any_pieces)
{
	static const size_t	 steps[] = { 0, 1, 2, 7 };
	uint8_t			*plain, *a, *b, *all;
	size_t			 alen, blen, i;
	struct dec		*d;

	plain = make_plain(3000, 0);
	a = encode(C_GZIP, plain, 1000, &alen);
	b = encode(C_GZIP, plain + 1000, 2000, &blen);
	ck_assert_ptr_nonnull(all = malloc(alen + 1 + blen));
	memcpy(all, a, alen);
	all[alen] = '\0';
	memcpy(all + alen + 1, b, blen);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		ck_assert_int_eq(run(DEC_GZIP, 3000, all, alen + 1 + blen,
		    steps[i], &d), DEC_OK);
		check_output(d, plain, 1000);
		dec_free(d);
	}
	free(a);
	free(b);
	free(all);
	free(plain);
}
END_TEST

START_TEST(no_zero_bound)
{
	ck_assert_ptr_null(dec_new(DEC_IDENTITY, 0));
	ck_assert_str_eq(dec_result_to_string(DEC_TOO_LARGE),
	    "decoded answer too large");
}
END_TEST

/*
 * fetch_start(): refusals before any lookup or connection, each answered
 * from the event loop and never from inside fetch_start().
 */
struct outcome {
	int		 called;
	enum fetch_err	 err;
	char		 error[600];
};

static int	 in_start;

static void
outcome_done(const struct fetch_result *fr, void *arg)
{
	struct outcome	*o = arg;

	ck_assert_int_eq(in_start, 0);
	o->called++;
	o->err = fr->fr_err;
	snprintf(o->error, sizeof(o->error), "%s", fr->fr_error ?
	    fr->fr_error : "");
}

static void
start_one(struct fetch_env *env, const char *url, uint64_t max_bytes,
    struct outcome *o)
{
	struct fetch_opts	 fo;

	memset(o, 0, sizeof(*o));
	fetch_opts_default(&fo, url);
	fo.fo_max_bytes = max_bytes;
	in_start = 1;
	ck_assert_ptr_nonnull(fetch_start(env, &fo, outcome_done, o));
	in_start = 0;
	ck_assert_int_eq(o->called, 0);
}

START_TEST(start_refusals)
{
	static const struct {
		const char	*url;
		uint64_t	 max_bytes;
		enum fetch_err	 err;
		const char	*error;
	} t[] = {
		{ "http://10.0.0.1/", 1, FETCH_NOT_PUBLIC,
		    "address 10.0.0.1 is not public" },
		{ "http://2130706433/", 1, FETCH_NOT_PUBLIC,
		    "address 127.0.0.1 is not public" },
		{ "http://0x7f000001/", 1, FETCH_NOT_PUBLIC,
		    "address 127.0.0.1 is not public" },
		{ "http://0177.0.0.1/", 1, FETCH_NOT_PUBLIC,
		    "address 127.0.0.1 is not public" },
		{ "http://127.1/", 1, FETCH_NOT_PUBLIC,
		    "address 127.0.0.1 is not public" },
		{ "http://[::1]/", 1, FETCH_NOT_PUBLIC,
		    "address ::1 is not public" },
		{ "http://[::ffff:10.0.0.1]/", 1, FETCH_NOT_PUBLIC, NULL },
		{ "http://[fe80::1%25eth0]/", 1, FETCH_BAD_URL, NULL },
		{ "ftp://example.com/", 1, FETCH_BAD_URL, NULL },
		{ "http://user:pw@example.com/", 1, FETCH_BAD_URL, NULL },
		{ "/relative", 1, FETCH_BAD_URL, NULL },
		{ "http://example.com/", 0, FETCH_BAD_OPTION,
		    "max_bytes must be 1-33554432" },
	};
	struct event_base	*base;
	struct fetch_env	 env;
	struct outcome		 o[sizeof(t) / sizeof(t[0])];
	size_t			 i;

	ck_assert_ptr_nonnull(base = event_base_new());
	memset(&env, 0, sizeof(env));
	env.fe_base = base;
	env.fe_up = upstream_new(base);
	/* A name server that is never asked. */
	ck_assert_ptr_nonnull(env.fe_resolver = fetch_resolver_new(base,
	    "127.0.0.1:9"));
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		start_one(&env, t[i].url, t[i].max_bytes, &o[i]);
	ck_assert_int_eq(event_base_loop(base, EVLOOP_NONBLOCK), 0);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		ck_assert_msg(o[i].called == 1, "%s", t[i].url);
		ck_assert_msg(o[i].err == t[i].err, "%s: %s", t[i].url,
		    o[i].error);
		if (t[i].error != NULL)
			ck_assert_str_eq(o[i].error, t[i].error);
	}
	upstream_free(env.fe_up);
	fetch_resolver_free(env.fe_resolver);
	event_base_free(base);
}
END_TEST

START_TEST(cancel_is_silent)
{
	struct event_base	*base;
	struct fetch_env	 env;
	struct fetch_opts	 fo;
	struct fetch		*f1, *f2;
	struct outcome		 o1, o2;

	ck_assert_ptr_nonnull(base = event_base_new());
	memset(&env, 0, sizeof(env));
	env.fe_base = base;
	env.fe_up = upstream_new(base);
	ck_assert_ptr_nonnull(env.fe_resolver = fetch_resolver_new(base,
	    "127.0.0.1:9"));
	memset(&o1, 0, sizeof(o1));
	memset(&o2, 0, sizeof(o2));
	/* Cancelled with its refusal scheduled. */
	fetch_opts_default(&fo, "http://10.0.0.1/");
	f1 = fetch_start(&env, &fo, outcome_done, &o1);
	fetch_cancel(f1);
	/* Cancelled while its name is being looked up. */
	fetch_opts_default(&fo, "http://name.invalid/");
	f2 = fetch_start(&env, &fo, outcome_done, &o2);
	ck_assert_int_eq(event_base_loop(base, EVLOOP_NONBLOCK), 0);
	fetch_cancel(f2);
	ck_assert_int_eq(event_base_loop(base, EVLOOP_NONBLOCK), 0);
	ck_assert_int_eq(o1.called, 0);
	ck_assert_int_eq(o2.called, 0);
	upstream_free(env.fe_up);
	fetch_resolver_free(env.fe_resolver);
	event_base_free(base);
}
END_TEST

static Suite *
fetch_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("fetch");

	tc = tcase_create("options");
	tcase_add_test(tc, options_ranges);
	tcase_add_test(tc, coding_names_parse);
	suite_add_tcase(s, tc);

	tc = tcase_create("decode");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, decoded_bound, 0, C_COUNT);
	tcase_add_loop_test(tc, wire_bound, 0, C_COUNT);
	tcase_add_loop_test(tc, bomb, 0, C_COUNT);
	tcase_add_loop_test(tc, truncated_and_corrupt, 0, C_COUNT);
	tcase_add_loop_test(tc, empty_body, 0, C_COUNT);
	tcase_add_test(tc, gzip_members_and_trailers);
	tcase_add_test(tc, gzip_trailer_any_pieces);
	tcase_add_test(tc, no_zero_bound);
	suite_add_tcase(s, tc);

	tc = tcase_create("start");
	tcase_add_test(tc, start_refusals);
	tcase_add_test(tc, cancel_is_silent);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(fetch_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
