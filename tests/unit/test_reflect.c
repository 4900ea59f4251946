/*
 * The reflection filter of egress/reflect.c: every variant of PROTOCOL.md
 * 3.2 caught whole, split at every chunk boundary and one byte at a time,
 * exactly at the chunk that completes it and with no byte of it released;
 * clean bodies released byte for byte whatever the chunking; near misses
 * let through; and a throughput figure (printed, never asserted).
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reflect.h"
#include "validate.h"

#define S(lit)		(lit), (sizeof(lit) - 1)
#define BODY_MAX	8192

enum variant {
	V_RAW,
	V_PCT_UPPER,
	V_PCT_LOWER,
	V_PCT_MIXED,
	V_HEX_LOWER,
	V_HEX_UPPER,
	V_B64_PAD,		/* the secret alone, padded */
	V_B64_NOPAD,		/* the secret alone, unpadded */
	V_B64_ALIGN0,		/* inside a longer blob, 3 alignments */
	V_B64_ALIGN1,
	V_B64_ALIGN2,
	V_B64URL_ALIGN0,
	V_B64URL_ALIGN1,
	V_B64URL_ALIGN2,
	V_COUNT
};

static const char *const variant_names[V_COUNT] = {
	"raw", "%XX", "%xx", "mixed", "hex", "HEX", "b64 padded",
	"b64 unpadded", "b64 align 0", "b64 align 1", "b64 align 2",
	"b64url align 0", "b64url align 1", "b64url align 2",
};

static const char	filler[] =
    "data: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"Hello, "
    "world. The quick brown fox jumps over the lazy dog.\"}}\n\n";

static uint32_t	rng = 2463534242u;

static uint32_t
xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 17;
	rng ^= rng << 5;
	return rng;
}

static void
random_printable(uint8_t *p, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		p[i] = 32 + xorshift() % 95;
}

/* The secrets under test: the minimum length, a key-like one, one > 64. */
static char	sec8[] = "Zq8%x!7k";
static char	sec40[] = "sk-ant-api03-Xy7_Qa9-bT3kLm2NpR5sVw8zC1dE";
static char	sec100[101];

static void
secrets_init(void)
{
	size_t	 i;

	rng = 99;
	for (i = 0; i < 100; i++)
		sec100[i] = 33 + xorshift() % 94;
	sec100[100] = '\0';
}

static char *const	secrets[] = { sec8, sec40, sec100 };
#define NSECRETS	(sizeof(secrets) / sizeof(secrets[0]))

static void
b64url(char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '+')
			*s = '-';
		else if (*s == '/')
			*s = '_';
	}
}

/*
 * The body: filler, the variant, filler.  [*os, *oe) is where the variant
 * lies, the characters that depend on the secret alone for base64.
 */
static size_t
make_body(enum variant v, const char *sec, uint8_t *body, size_t *os,
    size_t *oe)
{
	static const char	 lo[] = "0123456789abcdef";
	static const char	 up[] = "0123456789ABCDEF";
	const uint8_t		*s = (const uint8_t *)sec;
	uint8_t			 blob[256];
	char			 enc[512];
	size_t			 m = strlen(sec), n, i, pre, bits;

	n = strlen(filler);
	memcpy(body, filler, n);
	*os = n;
	switch (v) {
	case V_RAW:
		memcpy(body + n, s, m);
		n += m;
		break;
	case V_PCT_UPPER:
	case V_PCT_LOWER:
	case V_PCT_MIXED:
		/* Mixed: every third byte literal, the case of digits mixed. */
		for (i = 0; i < m; i++) {
			if (v == V_PCT_MIXED && i % 3 == 1) {
				body[n++] = s[i];
				continue;
			}
			body[n++] = '%';
			body[n++] = (v == V_PCT_LOWER || (v == V_PCT_MIXED &&
			    i % 2 == 0) ? lo : up)[s[i] >> 4];
			body[n++] = (v == V_PCT_UPPER || (v == V_PCT_MIXED &&
			    i % 2 == 0) ? up : lo)[s[i] & 15];
		}
		break;
	case V_HEX_LOWER:
	case V_HEX_UPPER:
		for (i = 0; i < m; i++) {
			body[n++] = (v == V_HEX_LOWER ? lo : up)[s[i] >> 4];
			body[n++] = (v == V_HEX_LOWER ? lo : up)[s[i] & 15];
		}
		break;
	case V_B64_PAD:
	case V_B64_NOPAD:
		ck_assert_int_eq(b64_encode(s, m, enc, sizeof(enc)), 0);
		if (v == V_B64_NOPAD)
			enc[strcspn(enc, "=")] = '\0';
		memcpy(body + n, enc, strlen(enc));
		*oe = n + m * 8 / 6;
		n += strlen(enc);
		goto tail;
	default:
		/* 3 + align random bytes, the secret, 4 random bytes. */
		pre = 3 + (v - V_B64_ALIGN0) % 3;
		random_printable(blob, pre);
		memcpy(blob + pre, s, m);
		random_printable(blob + pre + m, 4);
		ck_assert_int_eq(b64_encode(blob, pre + m + 4, enc,
		    sizeof(enc)), 0);
		if (v >= V_B64URL_ALIGN0)
			b64url(enc);
		memcpy(body + n, enc, strlen(enc));
		bits = 8 * pre;
		*os = n + (bits + 5) / 6;
		*oe = n + (bits + 8 * m) / 6;
		n += strlen(enc);
		goto tail;
	}
	*oe = n;
tail:
	memcpy(body + n, filler, strlen(filler));
	return n + strlen(filler);
}

struct run {
	int	 failed;
	size_t	 fail_from;	/* stream offset of the failing chunk */
	size_t	 fail_to;	/* and of its end */
	size_t	 nout;
	uint8_t	 out[BODY_MAX];
};

/* Feed body in chunks of sizes[] (the last size repeats), then finish. */
static void
run_chunks(const char *sec, const uint8_t *body, size_t n,
    const size_t *sizes, size_t nsizes, struct run *rr)
{
	struct reflect	*r;
	const void	*out;
	size_t		 off = 0, len, outlen, k = 0;

	memset(rr, 0, sizeof(*rr) - sizeof(rr->out));
	r = reflect_new(sec, strlen(sec));
	ck_assert_ptr_nonnull(r);
	while (off < n) {
		len = sizes[k < nsizes - 1 ? k++ : k];
		if (len > n - off)
			len = n - off;
		if (reflect_feed(r, body + off, len, &out, &outlen) == -1) {
			ck_assert_uint_eq(outlen, 0);
			rr->failed = 1;
			rr->fail_from = off;
			rr->fail_to = off + len;
			reflect_free(r);
			return;
		}
		ck_assert_uint_le(rr->nout + outlen, sizeof(rr->out));
		memcpy(rr->out + rr->nout, out, outlen);
		rr->nout += outlen;
		off += len;
	}
	if (reflect_finish(r, &out, &outlen) == -1) {
		rr->failed = 1;
		rr->fail_from = rr->fail_to = n;
	} else {
		memcpy(rr->out + rr->nout, out, outlen);
		rr->nout += outlen;
	}
	reflect_free(r);
}

/* Caught at the chunk holding its last byte, none of it released. */
static void
check_caught(const struct run *rr, const uint8_t *body, size_t os,
    size_t oe, const char *what, size_t split)
{
	ck_assert_msg(rr->failed, "%s not caught (split %zu)", what, split);
	ck_assert_msg(rr->fail_from < oe && oe <= rr->fail_to,
	    "%s caught in chunk [%zu, %zu), it ends at %zu (split %zu)", what,
	    rr->fail_from, rr->fail_to, oe, split);
	ck_assert_msg(rr->nout <= os, "%s: %zu bytes released, it starts at "
	    "%zu (split %zu)", what, rr->nout, os, split);
	ck_assert(memcmp(rr->out, body, rr->nout) == 0);
}

static void
check_clean(const struct run *rr, const uint8_t *body, size_t n,
    const char *what, size_t split)
{
	ck_assert_msg(!rr->failed, "%s: false alarm in chunk [%zu, %zu) "
	    "(split %zu)", what, rr->fail_from, rr->fail_to, split);
	ck_assert_uint_eq(rr->nout, n);
	ck_assert_msg(memcmp(rr->out, body, n) == 0, "%s: body altered", what);
}

/* Whole, split in two at every offset, one byte per chunk. */
static void
check_variant(const char *sec, enum variant v)
{
	static struct run	 rr;
	uint8_t			 body[BODY_MAX];
	size_t			 n, os, oe, k, sizes[2];

	n = make_body(v, sec, body, &os, &oe);
	sizes[0] = n;
	run_chunks(sec, body, n, sizes, 1, &rr);
	check_caught(&rr, body, os, oe, variant_names[v], n);
	for (k = 0; k <= n; k++) {
		sizes[0] = k;
		sizes[1] = n;
		run_chunks(sec, body, n, k == 0 ? sizes + 1 : sizes, k == 0 ?
		    1 : 2, &rr);
		check_caught(&rr, body, os, oe, variant_names[v], k);
	}
	sizes[0] = 1;
	run_chunks(sec, body, n, sizes, 1, &rr);
	check_caught(&rr, body, os, oe, variant_names[v], 1);
	ck_assert_int_eq(reflect_contains(sec, strlen(sec), (char *)body, n),
	    1);
}

START_TEST(variants_caught)
{
	size_t	 k;
	int	 v;

	secrets_init();
	for (k = 0; k < NSECRETS; k++)
		for (v = 0; v < V_COUNT; v++)
			check_variant(secrets[k], v);
}
END_TEST

/* Same bodies with one byte of the secret changed: all pass. */
START_TEST(near_misses)
{
	static struct run	 rr;
	uint8_t			 body[BODY_MAX];
	char			 near[128];
	size_t			 n, os, oe, k, j, m, pos[3], sizes[2];
	int			 v;

	secrets_init();
	for (k = 0; k < NSECRETS; k++) {
		m = strlen(secrets[k]);
		pos[0] = 0;
		pos[1] = m / 2;
		pos[2] = m - 1;
		for (j = 0; j < 3; j++) {
			memcpy(near, secrets[k], m + 1);
			/* Base64 looks at the low 6 bits of the first byte. */
			near[pos[j]] ^= 0x1f;
			for (v = 0; v < V_COUNT; v++) {
				/* It may not look at those of the last one. */
				if (v >= V_B64_PAD && j == 2)
					continue;
				n = make_body(v, near, body, &os, &oe);
				sizes[0] = n;
				run_chunks(secrets[k], body, n, sizes, 1, &rr);
				check_clean(&rr, body, n, variant_names[v], n);
				sizes[0] = 1;
				run_chunks(secrets[k], body, n, sizes, 1, &rr);
				check_clean(&rr, body, n, variant_names[v], 1);
				sizes[0] = os + (oe - os) / 2;
				sizes[1] = n;
				run_chunks(secrets[k], body, n, sizes, 2, &rr);
				check_clean(&rr, body, n, variant_names[v],
				    sizes[0]);
				ck_assert_int_eq(reflect_contains(secrets[k],
				    m, (char *)body, n), 0);
			}
		}
	}
}
END_TEST

/* Clean bodies come out whole whatever the chunking. */
static void
check_passthrough(const char *sec, const uint8_t *body, size_t n,
    const char *what)
{
	static struct run	 rr;
	size_t			 k, sizes[64];

	for (k = 0; k <= n; k++) {
		sizes[0] = k;
		sizes[1] = n;
		run_chunks(sec, body, n, k == 0 ? sizes + 1 : sizes,
		    k == 0 ? 1 : 2, &rr);
		check_clean(&rr, body, n, what, k);
	}
	sizes[0] = 1;
	run_chunks(sec, body, n, sizes, 1, &rr);
	check_clean(&rr, body, n, what, 1);
	for (k = 0; k < 64; k++)
		sizes[k] = 1 + xorshift() % 37;
	run_chunks(sec, body, n, sizes, 64, &rr);
	check_clean(&rr, body, n, what, 0);
}

START_TEST(passthrough)
{
	uint8_t	 body[BODY_MAX];
	size_t	 k, n, m;

	secrets_init();
	for (k = 0; k < NSECRETS; k++) {
		m = strlen(secrets[k]);
		n = strlen(filler);
		memcpy(body, filler, n);
		check_passthrough(secrets[k], body, n, "filler");
		random_printable(body, 700);
		check_passthrough(secrets[k], body, 700, "random");
		check_passthrough(secrets[k], body, 0, "empty");
		check_passthrough(secrets[k], body, 1, "one byte");

		/* Ending with all but the last byte of the secret. */
		memcpy(body + n, secrets[k], m - 1);
		check_passthrough(secrets[k], body, n + m - 1, "raw prefix");
	}
}
END_TEST

/* Ending with all but the last unit of each encoding: out at finish. */
START_TEST(prefix_released_at_finish)
{
	static struct run	 rr;
	uint8_t			 body[BODY_MAX];
	size_t			 k, n, os, oe, sizes[1];
	int			 v;

	secrets_init();
	for (k = 0; k < NSECRETS; k++)
		for (v = 0; v <= V_HEX_UPPER; v++) {
			n = make_body(v, secrets[k], body, &os, &oe);
			n = oe - 1;
			sizes[0] = 7;
			run_chunks(secrets[k], body, n, sizes, 1, &rr);
			check_clean(&rr, body, n, variant_names[v], 7);
			check_passthrough(secrets[k], body, n,
			    variant_names[v]);
		}
}
END_TEST

START_TEST(holdback)
{
	static const size_t	 lens[] = { 1, 2, 7, 8, 40, 64, 100 };
	struct reflect		*r;
	const void		*out;
	size_t			 outlen, total = 0, i;
	uint8_t			 chunk[100];

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		r = reflect_new(sec100, lens[i]);
		ck_assert_ptr_nonnull(r);
		ck_assert_uint_eq(reflect_holdback(r), 3 * lens[i] - 1);
		reflect_free(r);
	}

	r = reflect_new(sec40, 40);
	ck_assert_uint_eq(reflect_holdback(r), 119);
	memset(chunk, '.', sizeof(chunk));
	for (i = 1; i <= 5; i++) {
		ck_assert_int_eq(reflect_feed(r, chunk, 50, &out, &outlen), 0);
		total += outlen;
		/* Everything but the last 119 bytes goes out at once. */
		ck_assert_uint_eq(total, 50 * i > 119 ? 50 * i - 119 : 0);
	}
	ck_assert_int_eq(reflect_finish(r, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, 119);
	ck_assert_uint_eq(total + outlen, 250);
	reflect_free(r);
}
END_TEST

START_TEST(sticky)
{
	struct reflect	*r;
	const void	*out;
	size_t		 outlen;

	r = reflect_new(sec40, 40);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(reflect_feed(r, "hello ", 6, &out, &outlen), 0);
	ck_assert_int_eq(reflect_feed(r, sec40, 40, &out, &outlen), -1);
	ck_assert_uint_eq(outlen, 0);
	ck_assert_int_eq(reflect_feed(r, "clean", 5, &out, &outlen), -1);
	ck_assert_uint_eq(outlen, 0);
	ck_assert_int_eq(reflect_feed(r, "", 0, &out, &outlen), -1);
	ck_assert_int_eq(reflect_finish(r, &out, &outlen), -1);
	ck_assert_uint_eq(outlen, 0);
	reflect_free(r);

	/* A finished stream takes nothing more. */
	r = reflect_new(sec40, 40);
	ck_assert_int_eq(reflect_feed(r, "hello", 5, &out, &outlen), 0);
	ck_assert_int_eq(reflect_finish(r, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, 5);
	ck_assert_int_eq(reflect_feed(r, "x", 1, &out, &outlen), -1);
	ck_assert_int_eq(reflect_finish(r, &out, &outlen), -1);
	reflect_free(r);
}
END_TEST

START_TEST(percent_parses)
{
	/* A '%' of the secret, literal or as %25. */
	ck_assert_int_eq(reflect_contains(S("ab%41cdef"), S("x ab%41cdef")),
	    1);
	ck_assert_int_eq(reflect_contains(S("ab%41cdef"),
	    S("x ab%2541cdef")), 1);
	ck_assert_int_eq(reflect_contains(S("ab%41cdef"),
	    S("x %61%62%25%34%31%63%64%65%66")), 1);
	/* %41 is 'A', not the secret's "%41". */
	ck_assert_int_eq(reflect_contains(S("ab%41cdef"), S("x abAcdef")),
	    0);
	/* A triple that swallows the secret's first byte hides nothing. */
	ck_assert_int_eq(reflect_contains(S("1bcdefgh"), S("%41%62cdefgh")),
	    1);
	ck_assert_int_eq(reflect_contains(S("1bcdefgh"), S("%4%31bcdefgh")),
	    1);
	/* Either case in one triple; a broken triple is not one. */
	ck_assert_int_eq(reflect_contains(S("jjjjjjjj"),
	    S("%6a%6A%6aj%6Aj%6aj")), 1);
	ck_assert_int_eq(reflect_contains(S("jjjjjjjj"),
	    S("%6a%6A%6aj%6Aj%6%j")), 0);
	ck_assert_int_eq(reflect_contains(S("jjjjjjjj"),
	    S("%6a%6A%6aj%6Aj%6gj")), 0);
	/* "%2561" decodes to "%61", not to "a". */
	ck_assert_int_eq(reflect_contains(S("aaaaaaaa"),
	    S("%2561%2561%2561%2561%2561%2561%2561%2561")), 0);
}
END_TEST

START_TEST(short_secrets)
{
	struct reflect	*r;

	ck_assert_ptr_null(reflect_new("", 0));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(reflect_contains(S("k"), S("xyz")), 0);
	/* Base64 of one byte at alignment 0 is one character: "a". */
	ck_assert_int_eq(reflect_contains(S("k"), S("abc")), 1);
	ck_assert_int_eq(reflect_contains(S("k"), S("abkc")), 1);
	ck_assert_int_eq(reflect_contains(S("k"), S("ab%6Bc")), 1);
	ck_assert_int_eq(reflect_contains(S("k"), S("ab6bc")), 1);
	ck_assert_int_eq(reflect_contains(S("key"), S("a6b6579")), 1);
	ck_assert_int_eq(reflect_contains(S("key"), S("a6B6579")), 1);
	ck_assert_int_eq(reflect_contains(S("key"), S("a2V5")), 1);
	/* Hex in mixed case is not looked for. */
	ck_assert_int_eq(reflect_contains(S("zzz"), S("7a7A7a")), 0);
	ck_assert_int_eq(reflect_contains(S("7bytes!"), S("N2J5dGVzIQ")),
	    1);
	ck_assert_int_eq(reflect_contains(S("7bytes!"), S("N2J5dGVxIQ")),
	    0);
	/* The last character also holds padding bits: not looked at. */
	ck_assert_int_eq(reflect_contains(S("7bytes!"), S("N2J5dGVzIq")),
	    1);
	r = reflect_new("k", 1);
	ck_assert_uint_eq(reflect_holdback(r), 2);
	reflect_free(r);
}
END_TEST

/* Bodies that defeat sampling go through the linear fallback. */
START_TEST(pathological)
{
	static uint8_t	 body[1 << 20];
	struct reflect	*r;
	const void	*out;
	char		 sec[101];
	size_t		 outlen, total, off, i;
	int		 pass;

	memset(sec, 'a', 99);
	sec[99] = 'b';
	sec[100] = '\0';
	for (pass = 0; pass < 3; pass++) {
		if (pass == 0)
			memset(body, 'a', sizeof(body));
		else
			for (i = 0; i < sizeof(body); i++)
				body[i] = pass == 1 ? "%61"[i % 3] :
				    "6161"[i % 4];
		r = reflect_new(sec, 100);
		total = 0;
		for (off = 0; off < sizeof(body); off += 4096) {
			ck_assert_int_eq(reflect_feed(r, body + off, 4096,
			    &out, &outlen), 0);
			ck_assert(memcmp(out, body + total, outlen) == 0);
			total += outlen;
		}
		ck_assert_int_eq(reflect_finish(r, &out, &outlen), 0);
		ck_assert_uint_eq(total + outlen, sizeof(body));
		reflect_free(r);
	}
	memcpy(body + sizeof(body) - 100, sec, 100);
	ck_assert_int_eq(reflect_contains(sec, 100, (char *)body,
	    sizeof(body)), 1);
}
END_TEST

static double
now(clockid_t clock)
{
	struct timespec	 ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 64 MiB of random printable bytes in 16 KiB chunks. */
START_TEST(throughput)
{
	const size_t	 n = 64u << 20, chunk = 16384;
	struct reflect	*r;
	const void	*out;
	uint8_t		*body;
	char		 sec[100];
	size_t		 off, outlen, total = 0;
	double		 t, c, best = 0, bestcpu = 0;
	int		 rep;

	body = malloc(n);
	ck_assert_ptr_nonnull(body);
	rng = 7;
	random_printable(body, n);
	random_printable((uint8_t *)sec, sizeof(sec));
	for (rep = 0; rep < 3; rep++) {
		r = reflect_new(sec, sizeof(sec));
		ck_assert_ptr_nonnull(r);
		total = 0;
		t = now(CLOCK_MONOTONIC);
		c = now(CLOCK_PROCESS_CPUTIME_ID);
		for (off = 0; off < n; off += chunk) {
			ck_assert_int_eq(reflect_feed(r, body + off, chunk,
			    &out, &outlen), 0);
			if (memcmp(out, body + total, outlen < 64 ? outlen :
			    64) != 0)
				ck_abort_msg("body altered");
			total += outlen;
		}
		ck_assert_int_eq(reflect_finish(r, &out, &outlen), 0);
		t = now(CLOCK_MONOTONIC) - t;
		c = now(CLOCK_PROCESS_CPUTIME_ID) - c;
		total += outlen;
		ck_assert_uint_eq(total, n);
		if (best == 0 || t < best)
			best = t;
		if (bestcpu == 0 || c < bestcpu)
			bestcpu = c;
		reflect_free(r);
	}
	printf("reflect: 64 MiB random printable, 100-byte secret, 16 KiB "
	    "chunks: %.0f MiB/s (%.0f MiB per CPU second)\n", 64 / best,
	    64 / bestcpu);
	free(body);
}
END_TEST

static Suite *
reflect_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("reflect");

	tc = tcase_create("variants");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, variants_caught);
	tcase_add_test(tc, near_misses);
	tcase_add_test(tc, percent_parses);
	tcase_add_test(tc, short_secrets);
	suite_add_tcase(s, tc);

	tc = tcase_create("stream");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, passthrough);
	tcase_add_test(tc, prefix_released_at_finish);
	tcase_add_test(tc, holdback);
	tcase_add_test(tc, sticky);
	tcase_add_test(tc, pathological);
	suite_add_tcase(s, tc);

	tc = tcase_create("throughput");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, throughput);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(reflect_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
