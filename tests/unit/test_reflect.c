/*
 * The reflection filter of egress/reflect.c: every variant of PROTOCOL.md
 * 3.2 caught whole, split at every chunk boundary and one byte at a time,
 * exactly at the chunk that completes it and with no byte of it released;
 * clean bodies released byte for byte whatever the chunking; near misses
 * let through; only what could begin a variant held back; and a throughput
 * figure (printed, never asserted).
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
	V_HEX_MIXED,		/* the case of each digit mixed */
	V_JSON_LOWER,		/* every byte \u00xx */
	V_JSON_UPPER,		/* every byte \u00XX */
	V_JSON_MIXED,		/* literals, \u00 in mixed case, \/ \" \\ */
	V_ALL_MIXED,		/* literals, %XX, \u00XX and \/ \" \\ */
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
	"raw", "%XX", "%xx", "mixed", "hex", "HEX", "hEx", "\\u00xx",
	"\\u00XX", "json mixed", "all mixed", "b64 padded",
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

/*
 * The secrets under test: one too short to sample, one with every byte
 * JSON escapes short, the minimum to sample, a key-like one, one > 64.
 */
static char	sec6[] = "sk-abc";
static char	secj[] = "s/k\"a\\b";
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

static char *const	secrets[] = { sec6, secj, sec8, sec40, sec100 };
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

/* JSON's short escape for c, or 0. */
static int
json_short(int c)
{
	return c == '/' || c == '"' || c == '\\' ? c : 0;
}

/* \u00 and two hex digits, the case of each by hi and lo. */
static size_t
json_u(uint8_t *dst, uint8_t c, int hi, int lo)
{
	static const char	 lx[] = "0123456789abcdef";
	static const char	 ux[] = "0123456789ABCDEF";

	memcpy(dst, "\\u00", 4);
	dst[4] = (hi ? ux : lx)[c >> 4];
	dst[5] = (lo ? ux : lx)[c & 15];
	return 6;
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
	case V_HEX_MIXED:
		for (i = 0; i < m; i++) {
			body[n++] = (i % 3 == 0 ? up : lo)[s[i] >> 4];
			body[n++] = (i % 2 == 0 ? up : lo)[s[i] & 15];
		}
		break;
	case V_JSON_LOWER:
	case V_JSON_UPPER:
		for (i = 0; i < m; i++)
			n += json_u(body + n, s[i], v == V_JSON_UPPER,
			    v == V_JSON_UPPER);
		break;
	case V_JSON_MIXED:
	case V_ALL_MIXED:
		/*
		 * Short escapes where they apply, else literals and \u00 of
		 * mixed case (and %XX); the last byte as \u00, as "\\" less
		 * a byte would be the raw secret still.
		 */
		for (i = 0; i < m; i++) {
			if (i < m - 1 && i % 2 == 1 && json_short(s[i])) {
				body[n++] = '\\';
				body[n++] = s[i];
				continue;
			}
			switch (i == m - 1 ? 1 :
			    i % (v == V_JSON_MIXED ? 3 : 4)) {
			case 0:
				body[n++] = s[i];
				break;
			case 1:
				n += json_u(body + n, s[i], i % 2, i % 3 != 0);
				break;
			case 2:
				n += json_u(body + n, s[i], 1, 0);
				break;
			default:
				body[n++] = '%';
				body[n++] = up[s[i] >> 4];
				body[n++] = lo[s[i] & 15];
				break;
			}
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

/*
 * Feed body in chunks of sizes[] (the last size repeats), then finish,
 * through r.
 */
static void
run_chunks_on(struct reflect *r, const uint8_t *body, size_t n,
    const size_t *sizes, size_t nsizes, struct run *rr)
{
	const void	*out;
	size_t		 off = 0, len, outlen, k = 0;

	memset(rr, 0, sizeof(*rr) - sizeof(rr->out));
	while (off < n) {
		len = sizes[k < nsizes - 1 ? k++ : k];
		if (len > n - off)
			len = n - off;
		if (reflect_feed(r, body + off, len, &out, &outlen) == -1) {
			ck_assert_uint_eq(outlen, 0);
			rr->failed = 1;
			rr->fail_from = off;
			rr->fail_to = off + len;
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
}

/*
 * The same run on a new filter and on one that ran the previous stream of
 * the same secret and was reset: they must agree to the byte.
 */
static struct reflect	*reused;
static char		*reused_sec;
static struct run	 again;

static void
run_chunks(const char *sec, const uint8_t *body, size_t n,
    const size_t *sizes, size_t nsizes, struct run *rr)
{
	struct reflect	*r;

	r = reflect_new(sec, strlen(sec));
	ck_assert_ptr_nonnull(r);
	run_chunks_on(r, body, n, sizes, nsizes, rr);
	reflect_free(r);

	if (reused == NULL || strcmp(reused_sec, sec) != 0) {
		reflect_free(reused);
		free(reused_sec);
		ck_assert_ptr_nonnull(reused_sec = strdup(sec));
		reused = reflect_new(sec, strlen(sec));
		ck_assert_ptr_nonnull(reused);
	} else
		reflect_reset(reused);
	run_chunks_on(reused, body, n, sizes, nsizes, &again);
	ck_assert_int_eq(again.failed, rr->failed);
	ck_assert_uint_eq(again.fail_from, rr->fail_from);
	ck_assert_uint_eq(again.fail_to, rr->fail_to);
	ck_assert_uint_eq(again.nout, rr->nout);
	ck_assert(memcmp(again.out, rr->out, rr->nout) == 0);
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
		for (v = 0; v < V_B64_PAD; v++) {
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

/* Feed one chunk; returns how many bytes it released in all. */
static size_t
feed(struct reflect *r, const char *chunk, size_t *total)
{
	const void	*out;
	size_t		 outlen;

	ck_assert_int_eq(reflect_feed(r, chunk, strlen(chunk), &out, &outlen),
	    0);
	*total += outlen;
	return *total;
}

/* Only the tail that could begin a variant is held back. */
START_TEST(holdback)
{
	static const struct {
		const char	*chunk;
		size_t		 held;
	} steps[] = {
		{ "data: {\"text\":\"hello world\"}\n\n", 0 },
		{ "one more line ends in s", 1 },	/* raw */
		{ "k-ab", 5 },
		{ "d", 0 },				/* "sk-abd": out */
		{ "50% and x %7", 2 },			/* %73 */
		{ "x", 0 },
		{ "path \\", 1 },			/* \u0073 */
		{ "u00", 4 },
		{ "7", 5 },
		{ "3", 6 },				/* s, escaped */
		{ "k-", 8 },
		{ "?", 0 },
		{ "hex 736", 3 },			/* 736b2d616263 */
		{ "B2D6", 7 },				/* either case */
		{ "g", 0 },
		{ "b64 c2st", 4 },			/* c2stYWJj */
		{ "YWJ", 7 },
		{ ".", 0 },
		{ "\\u0073\\u006b\\u002d\\u0061\\u0062\\u006", 35 },
	};
	struct reflect	*r;
	const void	*out;
	char		 big[1000];
	size_t		 outlen, total = 0, fed = 0, held, i;

	r = reflect_new(S("sk-abc"));
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(reflect_holdback(r), 0);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		fed += strlen(steps[i].chunk);
		ck_assert_msg(feed(r, steps[i].chunk, &total) ==
		    fed - steps[i].held, "step %zu: %zu released of %zu", i,
		    total, fed);
		ck_assert_uint_eq(reflect_holdback(r), steps[i].held);
	}
	/* The longest: all but the last byte of the all-\u00XX form. */
	ck_assert_uint_eq(reflect_holdback(r), 6 * 6 - 1);
	ck_assert_int_eq(reflect_finish(r, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, 35);
	ck_assert_uint_eq(total + outlen, fed);
	ck_assert_uint_eq(reflect_holdback(r), 0);
	reflect_free(r);

	/*
	 * Fed a byte at a time, a long tail is not looked at whole: all that
	 * could be in it is kept, never less than what begins a variant.
	 */
	memset(sec100, 'a', 99);
	sec100[99] = 'b';
	r = reflect_new(sec100, 100);
	ck_assert_ptr_nonnull(r);
	for (i = 1; i <= 300; i++) {
		ck_assert_int_eq(reflect_feed(r, "a", 1, &out, &outlen), 0);
		held = reflect_holdback(r);
		ck_assert_uint_ge(held, i < 99 ? i : 99);
		ck_assert_uint_le(held, i < 599 ? i : 599);
	}
	/* A chunk long enough looks back all the way: exact again. */
	memset(big, 'a', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(reflect_feed(r, big, strlen(big), &out, &outlen), 0);
	ck_assert_uint_eq(reflect_holdback(r), 99);
	big[0] = 'x';
	ck_assert_int_eq(reflect_feed(r, big, 1, &out, &outlen), 0);
	ck_assert_uint_eq(reflect_holdback(r), 0);
	reflect_free(r);
	secrets_init();
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
	ck_assert_uint_eq(outlen, 5);
	ck_assert_int_eq(reflect_finish(r, &out, &outlen), 0);
	ck_assert_uint_eq(outlen, 0);
	ck_assert_int_eq(reflect_feed(r, "x", 1, &out, &outlen), -1);
	ck_assert_int_eq(reflect_finish(r, &out, &outlen), -1);
	reflect_free(r);
}
END_TEST

/*
 * Filters of one secret share their tables: interleaved streams keep their
 * own state, and a stream outlives its tables' place in the cache (three
 * secrets in turn replace the two kept) and a reset of another stream.
 */
START_TEST(shared_tables)
{
	static const char	 a[] = "sk-shared-AAAAAAAAAAAAAAAAAAAA";
	static const char	 b[] = "sk-shared-BBBBBBBBBBBBBBBBBBBB";
	static const char	 c[] = "sk-shared-CCCCCCCCCCCCCCCCCCCC";
	struct reflect		*r1, *r2, *r3, *rb, *rc;
	const void		*out;
	size_t			 outlen, h = sizeof(a) / 2;

	ck_assert_ptr_nonnull(r1 = reflect_new(a, sizeof(a) - 1));
	ck_assert_ptr_nonnull(r2 = reflect_new(a, sizeof(a) - 1));
	/* r1 holds back the first half of a; r2 sees the second half
	 * alone, which is no secret. */
	ck_assert_int_eq(reflect_feed(r1, a, h, &out, &outlen), 0);
	ck_assert_uint_eq(reflect_holdback(r1), h);
	ck_assert_int_eq(reflect_feed(r2, a + h, sizeof(a) - 1 - h, &out,
	    &outlen), 0);
	/* Other secrets replace a's tables in the cache meanwhile. */
	ck_assert_ptr_nonnull(rb = reflect_new(b, sizeof(b) - 1));
	ck_assert_ptr_nonnull(rc = reflect_new(c, sizeof(c) - 1));
	ck_assert_int_eq(reflect_feed(rb, a, sizeof(a) - 1, &out, &outlen), 0);
	ck_assert_int_eq(reflect_feed(rc, b, sizeof(b) - 1, &out, &outlen), 0);
	reflect_reset(r2);
	/* r1 ends a, split across the other streams' work. */
	ck_assert_int_eq(reflect_feed(r1, a + h, sizeof(a) - 1 - h, &out,
	    &outlen), -1);
	ck_assert_int_eq(reflect_feed(r2, "hello", 5, &out, &outlen), 0);
	ck_assert_int_eq(reflect_finish(r2, &out, &outlen), 0);
	ck_assert_int_eq(reflect_feed(rc, c, sizeof(c) - 1, &out, &outlen),
	    -1);
	ck_assert_int_eq(reflect_feed(rb, b, sizeof(b) - 1, &out, &outlen),
	    -1);
	reflect_free(r1);
	reflect_free(rb);
	/* a again, from tables built anew or kept by r2. */
	ck_assert_ptr_nonnull(r3 = reflect_new(a, sizeof(a) - 1));
	reflect_free(r2);
	ck_assert_int_eq(reflect_feed(r3, a, sizeof(a) - 1, &out, &outlen),
	    -1);
	reflect_free(r3);
	reflect_free(rc);
	ck_assert_int_eq(reflect_contains(b, sizeof(b) - 1, c, sizeof(c) - 1),
	    0);
	ck_assert_int_eq(reflect_contains(c, sizeof(c) - 1, c, sizeof(c) - 1),
	    1);
}
END_TEST

/*
 * reflect_search() looks at nothing shorter than the shortest variant: the
 * secret itself is found at its length, the text one byte shorter is not,
 * and either way the filter is left reset for its stream.
 */
START_TEST(search_short)
{
	struct reflect	*r;
	const void	*out;
	size_t		 outlen;

	ck_assert_ptr_nonnull(r = reflect_new(sec40, 40));
	ck_assert_int_eq(reflect_feed(r, sec40, 20, &out, &outlen), 0);
	ck_assert_int_eq(reflect_search(r, sec40, 39), 0);
	ck_assert_uint_eq(reflect_holdback(r), 0);
	ck_assert_int_eq(reflect_search(r, sec40, 40), 1);
	ck_assert_int_eq(reflect_search(r, "k", 1), 0);
	ck_assert_int_eq(reflect_feed(r, sec40, 40, &out, &outlen), -1);
	reflect_free(r);
	ck_assert_ptr_nonnull(r = reflect_new("k", 1));
	ck_assert_int_eq(reflect_search(r, "k", 1), 1);
	ck_assert_int_eq(reflect_search(r, "", 0), 0);
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

START_TEST(json_escapes)
{
	/* Any byte as \u00XX, digits of either case, among literals. */
	ck_assert_int_eq(reflect_contains(S("sk-abc"),
	    S("x sk\\u002dab\\u0063")), 1);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("\\u0073\\u006B-abc")),
	    1);
	ck_assert_int_eq(reflect_contains(S("sk-abc"),
	    S("\\u0073\\u006b\\u002D\\u0061\\u0062\\u0063")), 1);
	ck_assert_int_eq(reflect_contains(S("sk-abc"),
	    S("\\u0073\\u006B\\u002d\\u0061\\u0062\\u0063 ")), 1);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("s\\u006bk-abc")), 0);
	/* The first escaped unit last, all of the secret before it. */
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("x: sk-ab\\u0063")),
	    1);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("x: sk-ab%63")), 1);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("x: sk-a\\u0062c")),
	    1);
	/* With %XX in the same run: each unit is decoded once. */
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("%73\\u006b-%61bc")),
	    1);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("\\u002573k-abc")), 0);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("%5Cu0073k-abc")), 0);
	/* Near misses: a wrong byte, a broken escape, not JSON. */
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("sk\\u002eabc")), 0);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("sk-ab\\u0064")), 0);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("s\\u006k-abc")), 0);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("s\\u06bk-abc")), 0);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("\\U0073k-abc")), 0);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("\\x73k-abc")), 0);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("\\u0073k-ab")), 0);
	/* Short escapes, where one stands for a byte of the secret. */
	ck_assert_int_eq(reflect_contains(S("a/b\"c\\d"),
	    S("{\"k\":\"a\\/b\\\"c\\\\d\"}")), 1);
	ck_assert_int_eq(reflect_contains(S("a/b\"c\\d"),
	    S("a\\/b\"c\\d")), 1);
	ck_assert_int_eq(reflect_contains(S("a/b\"c\\d"),
	    S("\\u0061\\/b\\u0022c\\\\d")), 1);
	ck_assert_int_eq(reflect_contains(S("a/b\"c\\d"),
	    S("a\\/b\\\"c\\\\e")), 0);
	ck_assert_int_eq(reflect_contains(S("ab\ncd"), S("\"ab\\ncd\"")), 1);
	ck_assert_int_eq(reflect_contains(S("ab\tcd"), S("\"ab\\ncd\"")), 0);
	/* \u00XX stands for a byte below 0x80 only. */
	ck_assert_int_eq(reflect_contains(S("\xc3\xa9tude"),
	    S("\\u00c3\\u00a9tude")), 0);
	ck_assert_int_eq(reflect_contains(S("\xc3\xa9tude"),
	    S("%c3\\u00a9tude")), 0);
	ck_assert_int_eq(reflect_contains(S("\xc3\xa9tude"),
	    S("%c3%A9tude")), 1);

	/* Hex, and percent triples, with the case of each digit mixed. */
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("736B2d616263")), 1);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("x736b2D616263x")), 1);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("736B2d616264")), 0);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("%73%6B%2d%61%62%63")),
	    1);
	ck_assert_int_eq(reflect_contains(S("sk-abc"), S("%73%6b-%61%62%63")),
	    1);
	ck_assert_int_eq(reflect_contains(S("jjjjjjjj"),
	    S("6a6A6a6A6A6a6a6a")), 1);
}
END_TEST

/*
 * The variants of the short secrets cut in three at every pair of offsets
 * in and around them: caught at the chunk that completes them, nothing of
 * them released.
 */
START_TEST(split_three)
{
	static struct run	 rr;
	static char *const	 shorts[] = { sec6, secj, sec8 };
	uint8_t			 body[BODY_MAX];
	size_t			 n, os, oe, k, i, j, lo, hi, sizes[3];
	int			 v;

	for (k = 0; k < sizeof(shorts) / sizeof(shorts[0]); k++)
		for (v = V_PCT_MIXED; v < V_COUNT; v++) {
			n = make_body(v, shorts[k], body, &os, &oe);
			lo = os > 2 ? os - 2 : 0;
			hi = oe + 2;
			for (i = lo; i <= hi; i++)
				for (j = i + 1; j <= hi; j++) {
					sizes[0] = i == 0 ? j : i;
					sizes[1] = i == 0 ? n : j - i;
					sizes[2] = n;
					run_chunks(shorts[k], body, n, sizes,
					    i == 0 ? 2 : 3, &rr);
					check_caught(&rr, body, os, oe,
					    variant_names[v], i * 1000 + j);
				}
		}
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
	/* A partial match overlapping the real one. */
	ck_assert_int_eq(reflect_contains(S("aab"), S("616161626")), 1);
	ck_assert_int_eq(reflect_contains(S("aab"), S("6161616")), 0);
	/* Hex in mixed case. */
	ck_assert_int_eq(reflect_contains(S("zzz"), S("7a7A7a")), 1);
	ck_assert_int_eq(reflect_contains(S("zzz"), S("7a7A7b")), 0);
	ck_assert_int_eq(reflect_contains(S("7bytes!"), S("N2J5dGVzIQ")),
	    1);
	ck_assert_int_eq(reflect_contains(S("7bytes!"), S("N2J5dGVxIQ")),
	    0);
	/* The last character also holds padding bits: not looked at. */
	ck_assert_int_eq(reflect_contains(S("7bytes!"), S("N2J5dGVzIq")),
	    1);
	/* "\n" is a whole secret of one newline. */
	ck_assert_int_eq(reflect_contains(S("\n"), S("x\\n")), 1);
	ck_assert_int_eq(reflect_contains(S("\n"), S("x\\")), 0);
	r = reflect_new("k", 1);
	ck_assert_uint_eq(reflect_holdback(r), 0);
	reflect_free(r);
}
END_TEST

/*
 * Bodies that defeat sampling go through the linear fallback; a tail that
 * could begin the secret for ever, fed in small chunks, costs a bounded
 * look back per chunk.
 */
START_TEST(pathological)
{
	static const char *const	 units[] = { "a", "%61", "6161",
	    "\\u0061", "6A6a", "a" };
	static uint8_t			 body[1 << 20];
	struct reflect			*r;
	const void			*out;
	char				 sec[101];
	size_t				 outlen, total, off, i, n, u, chunk;
	size_t				 pass;

	memset(sec, 'a', 99);
	sec[99] = 'b';
	sec[100] = '\0';
	for (pass = 0; pass < sizeof(units) / sizeof(units[0]); pass++) {
		u = strlen(units[pass]);
		for (i = 0; i < sizeof(body); i++)
			body[i] = units[pass][i % u];
		/* The last pass: 7 bytes at a time, over less of it. */
		chunk = pass == 5 ? 7 : 4096;
		n = pass == 5 ? 7 << 15 : sizeof(body);
		r = reflect_new(pass == 4 ? "jjjjjjjjjjjjjjjjjjjjjjjjjjjjjjj!" :
		    sec, pass == 4 ? 32 : 100);
		total = 0;
		for (off = 0; off < n; off += chunk) {
			ck_assert_int_eq(reflect_feed(r, body + off, chunk,
			    &out, &outlen), 0);
			ck_assert(memcmp(out, body + total, outlen) == 0);
			total += outlen;
			ck_assert_uint_le(reflect_holdback(r), 6 * 100 - 1);
		}
		ck_assert_int_eq(reflect_finish(r, &out, &outlen), 0);
		ck_assert_uint_eq(total + outlen, n);
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

/* Server-sent events of 1024 bytes, as the benchmarks' fake upstream
 * streams them. */
static void
sse_text(uint8_t *p, size_t n)
{
	static const char	 head[] = "event: content_block_delta\n"
	    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
	    "{\"type\":\"text_delta\",\"text\":\"";
	static const char	 tail[] = "\"}}\n\n";
	uint8_t			 ev[1024];
	size_t			 i, k = sizeof(head) - 1;

	memcpy(ev, head, k);
	for (i = k; i < sizeof(ev) - (sizeof(tail) - 1); i++)
		ev[i] = "lorem ipsum dolor sit amet "[i % 27];
	memcpy(ev + i, tail, sizeof(tail) - 1);
	for (i = 0; i < n; i += sizeof(ev))
		memcpy(p + i, ev, n - i < sizeof(ev) ? n - i : sizeof(ev));
}

/* The filter's cost, printed: 64 MiB in chunks of the given size. */
static void
throughput_of(const char *what, const uint8_t *body, size_t n, size_t chunk)
{
	struct reflect	*r;
	const void	*out;
	char		 sec[100];
	size_t		 off, outlen, total = 0;
	double		 t, c, best = 0, bestcpu = 0;
	int		 rep;

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
	printf("reflect: 64 MiB %s, 100-byte secret, %zu KiB chunks: %.0f "
	    "MiB/s, %.3f CPU s per GiB\n", what, chunk / 1024, 64 / best,
	    bestcpu * 16);
}

START_TEST(throughput)
{
	const size_t	 n = 64u << 20;
	uint8_t		*body;

	body = malloc(n);
	ck_assert_ptr_nonnull(body);
	rng = 7;
	random_printable(body, n);
	throughput_of("random printable", body, n, 16384);
	/* What egress feeds it: one read's worth (UP_DATA_MAX) of events. */
	sse_text(body, n);
	throughput_of("server-sent events", body, n, 256 * 1024);
	throughput_of("server-sent events", body, n, 16384);
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
	tcase_add_test(tc, json_escapes);
	tcase_add_test(tc, split_three);
	tcase_add_test(tc, short_secrets);
	suite_add_tcase(s, tc);

	tc = tcase_create("stream");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, passthrough);
	tcase_add_test(tc, prefix_released_at_finish);
	tcase_add_test(tc, holdback);
	tcase_add_test(tc, sticky);
	tcase_add_test(tc, shared_tables);
	tcase_add_test(tc, search_short);
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
