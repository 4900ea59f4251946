/*
 * libFuzzer target: the reflection filter of egress/reflect.c against a
 * naive reference that decodes the body at every offset.
 *
 * Input: secret length, a variant to splice into the body (or none), a
 * chunking seed, a splice offset, the secret, then the body.  Whatever the
 * chunking, the filter must release the body unchanged when the reference
 * finds no variant in it, and otherwise fail exactly at the chunk that
 * completes the first occurrence, having released no byte of it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reflect.h"
#include "validate.h"

#define SECRET_MAX	72
#define BODY_MAX	4096

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char	lowerhex[] = "0123456789abcdef";
static const char	upperhex[] = "0123456789ABCDEF";

static int
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
 * Base64 characters of the secret at an alignment that do not depend on the
 * bytes around it: those on which two encodings with opposite fillers agree.
 */
static size_t
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

/* End (exclusive) of the percent/raw occurrence starting at p, or 0. */
static size_t
pct_end_at(const uint8_t *s, size_t m, const uint8_t *b, size_t n, size_t p)
{
	size_t	 cur[3 * SECRET_MAX + 2], nxt[3 * SECRET_MAX + 2];
	size_t	 ncur = 1, nnxt, i, j, k, q, best = 0;

	cur[0] = p;
	for (j = 0; j < m && ncur > 0; j++) {
		nnxt = 0;
		for (i = 0; i < ncur; i++) {
			q = cur[i];
			if (q < n && b[q] == s[j])
				nxt[nnxt++] = q + 1;
			if (q + 2 < n && b[q] == '%' && hexval(b[q + 1]) >= 0 &&
			    hexval(b[q + 2]) >= 0 &&
			    (hexval(b[q + 1]) << 4 | hexval(b[q + 2])) == s[j])
				nxt[nnxt++] = q + 3;
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
	for (i = 0; i < ncur; i++)
		if (best == 0 || cur[i] < best)
			best = cur[i];
	return best;
}

static int
hex_at(const uint8_t *s, size_t m, const uint8_t *b, size_t n, size_t p,
    int upper)
{
	size_t	 j;
	int	 hi, lo;

	if (n - p < 2 * m)
		return 0;
	for (j = 0; j < m; j++) {
		hi = hexval(b[p + 2 * j]);
		lo = hexval(b[p + 2 * j + 1]);
		if (hi < 0 || lo < 0 || (hi << 4 | lo) != s[j])
			return 0;
		if ((upper && (b[p + 2 * j] >= 'a' || b[p + 2 * j + 1] >= 'a')) ||
		    (!upper && ((b[p + 2 * j] >= 'A' && b[p + 2 * j] <= 'F') ||
		    (b[p + 2 * j + 1] >= 'A' && b[p + 2 * j + 1] <= 'F'))))
			return 0;
	}
	return 1;
}

/* Smallest end of any occurrence of any variant in b, or 0 for none. */
static size_t
first_end(const uint8_t *s, size_t m, const uint8_t *b, size_t n)
{
	char	 run[6][SECRET_MAX * 2];
	size_t	 rl[6], p, k, e, best = 0;

	for (k = 0; k < 6; k++)
		rl[k] = b64_stable(s, m, k / 2, k % 2, run[k]);
	for (p = 0; p < n; p++) {
		if ((e = pct_end_at(s, m, b, n, p)) != 0 &&
		    (best == 0 || e < best))
			best = e;
		if ((hex_at(s, m, b, n, p, 0) || hex_at(s, m, b, n, p, 1)) &&
		    (best == 0 || p + 2 * m < best))
			best = p + 2 * m;
		for (k = 0; k < 6; k++)
			if (rl[k] > 0 && rl[k] <= n - p &&
			    memcmp(b + p, run[k], rl[k]) == 0 &&
			    (best == 0 || p + rl[k] < best))
				best = p + rl[k];
	}
	return best;
}

/* Write a variant of the secret to dst; returns its length. */
static size_t
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
	static uint8_t	 body[BODY_MAX + 4 * SECRET_MAX];
	static uint8_t	 got[BODY_MAX + 4 * SECRET_MAX];
	struct reflect	*r;
	const uint8_t	*s, *in;
	const void	*out;
	size_t		 m, nin, n, at, e, hold, off, len, outlen, nout = 0;
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
	if (variant >= 1 && variant <= 12)
		n += encode(variant, s, m, in, nin, body + n);
	memcpy(body + n, in + at, nin - at);
	n += nin - at;

	e = first_end(s, m, body, n);
	if (reflect_contains((const char *)s, m, (const char *)body, n) !=
	    (e != 0))
		__builtin_trap();

	if ((r = reflect_new((const char *)s, m)) == NULL)
		abort();
	hold = reflect_holdback(r);
	if (hold != 3 * m - 1)
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
			/* Not one byte of the occurrence went out. */
			if (nout > (off > hold ? off - hold : 0))
				__builtin_trap();
			break;
		}
		memcpy(got + nout, out, outlen);
		nout += outlen;
		if (e != 0 && e <= off + len)
			__builtin_trap();	/* missed */
	}
	if (rc == 0) {
		if (e != 0)
			__builtin_trap();
		if (reflect_finish(r, &out, &outlen) == -1)
			__builtin_trap();
		memcpy(got + nout, out, outlen);
		nout += outlen;
		if (nout != n || memcmp(got, body, n) != 0)
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
