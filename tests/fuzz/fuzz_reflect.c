/*
 * libFuzzer target: the reflection filter of egress/reflect.c against a
 * slow reference that tries every way of writing the secret at every offset
 * of the body.
 *
 * Input: secret length, a variant to splice into the body (or none), a
 * chunking seed, a splice offset, the secret, then the body.  Whatever the
 * chunking, the filter must release the body unchanged when the reference
 * finds no variant in it, and otherwise fail exactly at the chunk that
 * completes the first occurrence, having released no byte of an occurrence.
 * After every chunk it must hold back exactly the longest tail that begins
 * a variant, or, after a chunk too short to look that far back, everything
 * that could.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reflect.h"
#include "validate.h"

#define SECRET_MAX	72
#define BODY_MAX	4096
#define UNIT_MAX	6	/* "\u00XX" */
#define FORMS_MAX	12

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/*
 * The reference is not what is under test: its branches would only add
 * features for libFuzzer to keep, and its comparisons work for the
 * comparison hooks, at several times the cost of the filter itself.
 */
#define ORACLE	__attribute__((no_sanitize("coverage")))

static const char	lowerhex[] = "0123456789abcdef";
static const char	upperhex[] = "0123456789ABCDEF";

/* JSON's short escapes and what they stand for. */
static const uint8_t	json_x[] = { '"', '\\', '/', 'b', 'f', 'n', 'r', 't' };
static const uint8_t	json_c[] = { '"', '\\', '/', 8, 12, 10, 13, 9 };

struct form {
	uint8_t	 f_s[UNIT_MAX];
	size_t	 f_len;
};

/* The secret, and every way of writing each of its bytes. */
struct ref {
	const uint8_t	*s;
	size_t		 m;
	struct form	 forms[SECRET_MAX][FORMS_MAX];
	size_t		 nforms[SECRET_MAX];
	char		 run[6][SECRET_MAX * 2];
	size_t		 rl[6];
	uint8_t		 first[256];	/* bytes a variant can begin with */
};

/* memcmp(3) without the fuzzer's hook on it. */
ORACLE static int
same(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

ORACLE static int
hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Every unit that one pass of percent or JSON decoding turns into c: c
 * itself, %XX, \u00XX for ASCII, a short escape; hex digits of either case.
 */
ORACLE static size_t
unit_forms(uint8_t c, struct form *f)
{
	const char	*hi, *lo;
	size_t		 n = 0, k;

	f[n].f_s[0] = c;
	f[n++].f_len = 1;
	for (k = 0; k < 4; k++) {
		hi = k & 1 ? upperhex : lowerhex;
		lo = k & 2 ? upperhex : lowerhex;
		f[n].f_s[0] = '%';
		f[n].f_s[1] = hi[c >> 4];
		f[n].f_s[2] = lo[c & 15];
		f[n++].f_len = 3;
		if (c < 0x80) {
			memcpy(f[n].f_s, "\\u00", 4);
			f[n].f_s[4] = hi[c >> 4];
			f[n].f_s[5] = lo[c & 15];
			f[n++].f_len = 6;
		}
	}
	for (k = 0; k < sizeof(json_x); k++)
		if (json_c[k] == c) {
			f[n].f_s[0] = '\\';
			f[n].f_s[1] = json_x[k];
			f[n++].f_len = 2;
		}
	return n;
}

/*
 * Base64 characters of the secret at an alignment that do not depend on the
 * bytes around it: those on which two encodings with opposite fillers agree.
 */
ORACLE static size_t
b64_stable(const uint8_t *s, size_t m, size_t align, int url, char *dst)
{
	uint8_t	 in[2][SECRET_MAX + 8];
	char	 enc[2][(SECRET_MAX + 8) / 3 * 4 + 8];
	size_t	 n, f, k, first = SIZE_MAX, last = 0, i;

	f = 2 + (3 - (align + m + 2) % 3) % 3;
	n = align + m + f;
	for (i = 0; i < 2; i++) {
		memset(in[i], i == 0 ? 0x00 : 0xff, n);
		memcpy(in[i] + align, s, m);
		if (b64_encode(in[i], n, enc[i], sizeof(enc[i])) == -1)
			abort();
	}
	for (k = 0; k < n / 3 * 4; k++)
		if (enc[0][k] == enc[1][k]) {
			if (first == SIZE_MAX)
				first = k;
			last = k;
		}
	if (first == SIZE_MAX)
		return 0;
	for (k = first; k <= last; k++) {
		if (enc[0][k] != enc[1][k])
			abort();	/* the stable characters are one run */
		dst[k - first] = enc[0][k];
		if (url && dst[k - first] == '+')
			dst[k - first] = '-';
		else if (url && dst[k - first] == '/')
			dst[k - first] = '_';
	}
	return last - first + 1;
}

ORACLE static void
ref_init(struct ref *R, const uint8_t *s, size_t m)
{
	size_t	 j, k;

	memset(R->first, 0, sizeof(R->first));
	R->s = s;
	R->m = m;
	for (j = 0; j < m; j++)
		R->nforms[j] = unit_forms(s[j], R->forms[j]);
	for (k = 0; k < 6; k++)
		R->rl[k] = b64_stable(s, m, k / 2, k % 2, R->run[k]);
	for (k = 0; k < R->nforms[0]; k++)
		R->first[R->forms[0][k].f_s[0]] = 1;
	R->first[(uint8_t)lowerhex[s[0] >> 4]] = 1;
	R->first[(uint8_t)upperhex[s[0] >> 4]] = 1;
	for (k = 0; k < 6; k++)
		if (R->rl[k] > 0)
			R->first[(uint8_t)R->run[k][0]] = 1;
}

/*
 * Parse b[p..n) as units of the secret, every parse at once.  With whole
 * set, the smallest end of m whole units (0: none); else whether b[p..n)
 * is the beginning of such a parse, shorter than a whole one.
 */
ORACLE static size_t
esc_parse(const struct ref *R, const uint8_t *b, size_t n, size_t p,
    int whole)
{
	size_t			 cur[UNIT_MAX * SECRET_MAX + 1];
	size_t			 nxt[UNIT_MAX * SECRET_MAX + 1];
	size_t			 ncur = 1, nnxt, i, j, k, q, best = 0;
	const struct form	*f;

	cur[0] = p;
	for (j = 0; j < R->m && ncur > 0; j++) {
		nnxt = 0;
		for (i = 0; i < ncur; i++) {
			q = cur[i];
			if (!whole && q == n && j > 0)
				return 1;
			for (k = 0; k < R->nforms[j]; k++) {
				f = &R->forms[j][k];
				if (q + f->f_len <= n) {
					if (same(b + q, f->f_s, f->f_len))
						nxt[nnxt++] = q + f->f_len;
				} else if (!whole && q < n &&
				    same(b + q, f->f_s, n - q))
					return 1;
			}
		}
		/* Keep each position once. */
		ncur = 0;
		for (i = 0; i < nnxt; i++) {
			for (k = 0; k < ncur; k++)
				if (cur[k] == nxt[i])
					break;
			if (k == ncur)
				cur[ncur++] = nxt[i];
		}
	}
	if (!whole)
		return 0;
	for (i = 0; i < ncur; i++)
		if (best == 0 || cur[i] < best)
			best = cur[i];
	return best;
}

/* Hex digits of the secret from b[p], k of them (2m for all). */
ORACLE static int
hex_at(const struct ref *R, const uint8_t *b, size_t p, size_t k)
{
	size_t	 i;

	for (i = 0; i < k; i++)
		if (hexval(b[p + i]) != (i % 2 == 0 ? R->s[i / 2] >> 4 :
		    R->s[i / 2] & 15))
			return 0;
	return 1;
}

/* The smallest end of an occurrence that starts at p, up to n; 0: none. */
ORACLE static size_t
end_from(const struct ref *R, const uint8_t *b, size_t n, size_t p)
{
	size_t	 best, k;

	best = esc_parse(R, b, n, p, 1);
	if (2 * R->m <= n - p && hex_at(R, b, p, 2 * R->m) &&
	    (best == 0 || p + 2 * R->m < best))
		best = p + 2 * R->m;
	for (k = 0; k < 6; k++)
		if (R->rl[k] > 0 && R->rl[k] <= n - p &&
		    same(b + p, (const uint8_t *)R->run[k], R->rl[k]) &&
		    (best == 0 || p + R->rl[k] < best))
			best = p + R->rl[k];
	return best;
}

/* Smallest end of any occurrence of any variant in b, or 0 for none. */
ORACLE static size_t
first_end(const struct ref *R, const uint8_t *b, size_t n)
{
	size_t	 p, e, best = 0;

	for (p = 0; p < n; p++)
		if ((e = end_from(R, b, n, p)) != 0 && (best == 0 || e < best))
			best = e;
	return best;
}

/* Whether b[p..n) is the beginning of a variant, and not a whole one. */
ORACLE static int
begins(const struct ref *R, const uint8_t *b, size_t n, size_t p)
{
	size_t	 k;

	if (!R->first[b[p]])
		return 0;
	if (esc_parse(R, b, n, p, 0))
		return 1;
	if (n - p < 2 * R->m && hex_at(R, b, p, n - p))
		return 1;
	for (k = 0; k < 6; k++)
		if (n - p < R->rl[k] && same(b + p,
		    (const uint8_t *)R->run[k], n - p))
			return 1;
	return 0;
}

/*
 * What must be held back after b[0..n): the longest tail that begins a
 * variant.  No beginning is as long as 6m, the all-\u00XX form.
 */
ORACLE static size_t
must_hold(const struct ref *R, const uint8_t *b, size_t n)
{
	size_t	 p;

	for (p = n > UNIT_MAX * R->m ? n - UNIT_MAX * R->m : 0; p < n; p++)
		if (begins(R, b, n, p))
			return n - p;
	return 0;
}

ORACLE static int
noise_bit(const uint8_t *noise, size_t nnoise, size_t i, unsigned int k)
{
	if (nnoise == 0)
		return (i * 7 + k) % 3 == 0;
	return (noise[(i + k) % nnoise] >> ((i + k) % 8)) & 1;
}

/* One unit for c, picked by noise: any form when all is set, else JSON. */
ORACLE static size_t
encode_unit(uint8_t c, const uint8_t *noise, size_t nnoise, size_t i,
    int all, uint8_t *dst)
{
	struct form	 f[FORMS_MAX];
	size_t		 n, k, pick = 0;

	n = unit_forms(c, f);
	for (k = 0; k < 4; k++)
		pick = pick << 1 | noise_bit(noise, nnoise, i, k);
	pick %= n;
	/* JSON only: no %XX, unless c has no other escaped form. */
	if (!all && f[pick].f_s[0] == '%')
		pick = c < 0x80 ? pick + 1 : 0;
	memcpy(dst, f[pick].f_s, f[pick].f_len);
	return f[pick].f_len;
}

/* Write a variant of the secret to dst; returns its length. */
ORACLE static size_t
encode(int variant, const uint8_t *s, size_t m, const uint8_t *noise,
    size_t nnoise, uint8_t *dst)
{
	uint8_t	 in[SECRET_MAX + 4];
	char	 enc[(SECRET_MAX + 4) / 3 * 4 + 8];
	size_t	 i, n = 0, align;

	switch (variant) {
	case 1:
		memcpy(dst, s, m);
		return m;
	case 2:
	case 3:
	case 4:
		for (i = 0; i < m; i++) {
			/* 4: literal or triple, and either case, by noise. */
			if (variant == 4 && nnoise > 0 &&
			    (noise[i % nnoise] >> (i % 7)) & 1) {
				dst[n++] = s[i];
				continue;
			}
			dst[n++] = '%';
			if (variant == 3 || (variant == 4 && nnoise > 0 &&
			    (noise[(i + 1) % nnoise] & 1))) {
				dst[n++] = lowerhex[s[i] >> 4];
				dst[n++] = lowerhex[s[i] & 15];
			} else {
				dst[n++] = upperhex[s[i] >> 4];
				dst[n++] = upperhex[s[i] & 15];
			}
		}
		return n;
	case 5:
	case 6:
		for (i = 0; i < m; i++) {
			dst[n++] = (variant == 5 ? lowerhex : upperhex)[s[i] >> 4];
			dst[n++] = (variant == 5 ? lowerhex : upperhex)[s[i] & 15];
		}
		return n;
	case 13:
	case 15:
		/* 13: JSON escapes and literals; 15: every form. */
		for (i = 0; i < m; i++)
			n += encode_unit(s[i], noise, nnoise, i, variant == 15,
			    dst + n);
		return n;
	case 14:
		/* Hex, the case of each digit by noise. */
		for (i = 0; i < 2 * m; i++)
			dst[n++] = (noise_bit(noise, nnoise, i, 0) ? upperhex :
			    lowerhex)[(s[i / 2] >> (i % 2 == 0 ? 4 : 0)) & 15];
		return n;
	default:
		/* 7-12: base64 of noise, secret, noise, in whole. */
		align = (variant - 7) % 3;
		for (i = 0; i < align; i++)
			in[n++] = nnoise > 0 ? noise[i % nnoise] : 0;
		memcpy(in + n, s, m);
		n += m;
		in[n++] = nnoise > 0 ? noise[0] : 0;
		if (b64_encode(in, n, enc, sizeof(enc)) == -1)
			abort();
		n = strlen(enc);
		if (variant >= 10)
			for (i = 0; i < n; i++) {
				if (enc[i] == '+')
					enc[i] = '-';
				else if (enc[i] == '/')
					enc[i] = '_';
			}
		memcpy(dst, enc, n);
		return n;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t	 body[BODY_MAX + UNIT_MAX * SECRET_MAX];
	static uint8_t	 got[BODY_MAX + UNIT_MAX * SECRET_MAX];
	static struct ref R;
	struct reflect	*r;
	const uint8_t	*s, *in;
	const void	*out;
	size_t		 m, nin, n, at, e, off, len, outlen, nout = 0, p;
	size_t		 held, want, most, budget, tailmax;
	size_t		 maxchunk;
	uint32_t	 x;
	int		 variant, rc = 0;

	if (size < 5)
		return 0;
	m = 1 + data[0] % SECRET_MAX;
	variant = data[1] % 16;
	maxchunk = data[2] & 0x7f;
	x = data[2] | (uint32_t)data[3] << 8 | 1;
	if (size < 4 + m)
		return 0;
	s = data + 4;
	in = data + 4 + m;
	nin = size - 4 - m;
	if (nin > BODY_MAX)
		nin = BODY_MAX;

	/* The body, with a variant spliced in at a chosen offset. */
	at = nin > 0 ? data[3] % (nin + 1) : 0;
	memcpy(body, in, at);
	n = at;
	if (variant >= 1)
		n += encode(variant, s, m, in, nin, body + n);
	memcpy(body + n, in + at, nin - at);
	n += nin - at;

	ref_init(&R, s, m);
	e = first_end(&R, body, n);
	if (reflect_contains((const char *)s, m, (const char *)body, n) !=
	    (e != 0))
		__builtin_trap();

	if ((r = reflect_new((const char *)s, m)) == NULL)
		abort();
	tailmax = UNIT_MAX * m - 1;
	if (reflect_holdback(r) != 0)
		__builtin_trap();
	for (off = 0; off < n; off += len) {
		len = n - off;
		if (maxchunk != 0) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			if (len > 1 + x % maxchunk)
				len = 1 + x % maxchunk;
		}
		rc = reflect_feed(r, body + off, len, &out, &outlen);
		if (rc == -1) {
			/* Exactly at the chunk that completes it. */
			if (e == 0 || e <= off || e > off + len)
				__builtin_trap();
			/*
			 * Not one byte of an occurrence went out: none ended
			 * by off, so none that did start before off + 1 - 6m.
			 */
			p = off + 1 > UNIT_MAX * m ? off + 1 - UNIT_MAX * m : 0;
			for (; p < nout; p++)
				if (end_from(&R, body, off + len, p) != 0)
					__builtin_trap();
			break;
		}
		if (e != 0 && e <= off + len)
			__builtin_trap();	/* missed */
		memcpy(got + nout, out, outlen);
		held = off + len - nout - outlen;
		if (reflect_holdback(r) != held)
			__builtin_trap();

		/*
		 * Exactly the longest beginning of a variant, unless the
		 * chunk was too short to look that far back (reflect.h):
		 * then whatever could be one, up to 6m - 1 bytes.
		 */
		want = must_hold(&R, body, off + len);
		most = off + len - nout < tailmax ? off + len - nout : tailmax;
		budget = len < tailmax ? 64 + 4 * len : tailmax;
		if (held != want && (budget >= most || held != most))
			__builtin_trap();
		nout += outlen;
	}
	if (rc == 0) {
		if (e != 0)
			__builtin_trap();
		if (reflect_finish(r, &out, &outlen) == -1)
			__builtin_trap();
		memcpy(got + nout, out, outlen);
		nout += outlen;
		if (nout != n || memcmp(got, body, n) != 0 ||
		    reflect_holdback(r) != 0)
			__builtin_trap();
	} else {
		if (memcmp(got, body, nout) != 0)
			__builtin_trap();
		/* Sticky. */
		if (reflect_feed(r, "x", 1, &out, &outlen) != -1 ||
		    reflect_finish(r, &out, &outlen) != -1)
			__builtin_trap();
	}
	reflect_free(r);
	return 0;
}
