/*
 * Reflection filter (PROTOCOL.md 3.2).
 *
 * The fixed variants (raw, hex, base64) are looked for by sampling: each of
 * them is at least rf_lmin bytes long, so a 4-byte gram read every rf_step
 * bytes always falls inside an occurrence, at one of its first rf_step
 * offsets.  A gram found in the table of those leading grams is verified
 * with memcmp.  Verification work is counted, and a buffer that exceeds its
 * budget (a pathological body against a repetitive secret) is searched again
 * with memmem(3), which glibc runs in linear time.  Patterns too short to
 * sample go to memmem directly.
 *
 * The percent-encoded variant is not a fixed string.  A bit-parallel
 * automaton matches it: shift-and over the secret, plus one state vector
 * after a '%' and one after the first hex digit of a triple, so any mix of
 * literal bytes and triples is followed, every parse at once.  An
 * occurrence with no triple in it is the raw secret, a fixed variant, so the
 * automaton only has to run from 3(m-1) bytes before to 3m bytes after each
 * triple that decodes to a byte of the secret; it skips idle stretches, and
 * no byte goes through it twice.
 *
 * Every variant is searched for as soon as its last byte arrives, and the
 * last 3m-1 bytes are held back, so no byte of an occurrence is released.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reflect.h"

#define RF_GRAM		4	/* bytes read per sample */
#define RF_SAMPLE_MIN	8	/* shorter patterns go to memmem(3) */
#define RF_STEP_MAX	256	/* denser sampling keeps the table small */
#define RF_NPAT		9	/* raw, hex x2, base64 and base64url x3 */
#define RF_SECRET_MAX	((SIZE_MAX - 64) / 16)

/* Sixteen bytes at once, in whatever vector unit the target has. */
typedef uint8_t	rf_vec __attribute__((vector_size(16)));

enum rf_state {
	RF_OPEN,
	RF_FAILED,
	RF_DONE
};

struct rf_pat {
	const uint8_t	*rp_s;
	size_t		 rp_len;
};

/* A leading gram of a pattern: gram re_gram is at re_off in re_pat. */
struct rf_ent {
	uint32_t	 re_gram;
	uint32_t	 re_next;	/* index + 1 in rf_ent, 0 ends a chain */
	uint16_t	 re_pat;
	uint16_t	 re_off;
};

struct reflect {
	/* Fixed variants. */
	uint8_t		*rf_pool;
	size_t		 rf_poolsz;
	struct rf_pat	 rf_pat[RF_NPAT];
	size_t		 rf_npat;
	size_t		 rf_lmin;
	size_t		 rf_lmax;
	size_t		 rf_step;	/* 0: memmem(3) only */
	struct rf_ent	*rf_ent;
	size_t		 rf_nent;
	uint32_t	*rf_head;
	unsigned int	 rf_hbits;

	/* Percent automaton over the m secret bytes, state bits 0..m. */
	size_t		 rf_m;
	size_t		 rf_nw;		/* 64-bit words per vector */
	uint16_t	 rf_cls[256];	/* byte -> row of rf_lit; 0: not in it */
	uint8_t		 rf_start[256];	/* bytes that leave the idle state */
	uint64_t	*rf_words;	/* every vector below, in one block */
	size_t		 rf_nwords;
	uint64_t	*rf_lit;	/* [cls]: bit j+1 when s[j] is the byte */
	uint64_t	*rf_hi;		/* [nibble]: bit j, s[j] >> 4 */
	uint64_t	*rf_lo;		/* [nibble]: bit j+1, s[j] & 15 */
	uint64_t	*rf_d0;		/* j bytes matched */
	uint64_t	*rf_d1;		/* j bytes and a '%' */
	uint64_t	*rf_d2;		/* j bytes, '%', high digit of s[j] */
	int		 rf_idle;
	size_t		 rf_nfa_pos;	/* stream offsets from here on */
	size_t		 rf_nfa_until;
	size_t		 rf_trig_pos;

	/* The stream: rf_buf[0] is at offset rf_base. */
	uint8_t		*rf_buf;
	size_t		 rf_cap;
	size_t		 rf_len;
	size_t		 rf_out;	/* released at the last call */
	size_t		 rf_base;
	size_t		 rf_hold;
	enum rf_state	 rf_state;
	int		 rf_nomem;
};

/* Hex digit value + 1, 0 for any other byte. */
static const uint8_t	rf_hex1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5,
	['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

/* Where *out points when nothing is released, so it is never NULL. */
static const uint8_t	rf_none[1];

static const char	rf_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char	rf_b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void
rf_add_pat(struct reflect *r, const uint8_t *s, size_t len)
{
	size_t	 k;

	if (len == 0)
		return;
	for (k = 0; k < r->rf_npat; k++)
		if (r->rf_pat[k].rp_len == len &&
		    memcmp(r->rf_pat[k].rp_s, s, len) == 0)
			return;
	r->rf_pat[r->rf_npat].rp_s = s;
	r->rf_pat[r->rf_npat].rp_len = len;
	r->rf_npat++;
}

/*
 * The base64 characters that depend on the secret alone when it starts
 * `align' bytes into a 3-byte group: the 6-bit windows at bits 6k of the
 * encoded stream that lie wholly inside the secret's bits.
 */
static size_t
rf_b64_stable(const uint8_t *s, size_t m, size_t align, const char *alpha,
    uint8_t *dst)
{
	size_t		 k, k0, k1, bit, i, n = 0;
	unsigned int	 v, sh;

	k0 = (8 * align + 5) / 6;
	k1 = (8 * align + 8 * m) / 6;
	for (k = k0; k < k1; k++) {
		bit = 6 * k - 8 * align;
		i = bit / 8;
		sh = bit % 8;
		v = (unsigned int)s[i] << 8;
		if (i + 1 < m)
			v |= s[i + 1];
		dst[n++] = alpha[(v >> (10 - sh)) & 63];
	}
	return n;
}

static int
rf_build_fixed(struct reflect *r, const uint8_t *s, size_t m)
{
	static const char	 lower[] = "0123456789abcdef";
	static const char	 upper[] = "0123456789ABCDEF";
	uint8_t			*p;
	size_t			 i, k, j, n, nb;
	uint32_t		 g, h;

	/* raw m, hex 2m twice, six base64 runs of at most 4m/3 each */
	r->rf_poolsz = 13 * m + 16;
	if ((r->rf_pool = malloc(r->rf_poolsz)) == NULL)
		return -1;
	p = r->rf_pool;
	memcpy(p, s, m);
	rf_add_pat(r, p, m);
	p += m;
	for (i = 0; i < m; i++) {
		p[2 * i] = lower[s[i] >> 4];
		p[2 * i + 1] = lower[s[i] & 15];
		p[2 * m + 2 * i] = upper[s[i] >> 4];
		p[2 * m + 2 * i + 1] = upper[s[i] & 15];
	}
	rf_add_pat(r, p, 2 * m);
	rf_add_pat(r, p + 2 * m, 2 * m);
	p += 4 * m;
	for (i = 0; i < 3; i++) {
		n = rf_b64_stable(s, m, i, rf_b64, p);
		rf_add_pat(r, p, n);
		p += n;
		n = rf_b64_stable(s, m, i, rf_b64url, p);
		rf_add_pat(r, p, n);
		p += n;
	}

	r->rf_lmin = SIZE_MAX;
	for (k = 0; k < r->rf_npat; k++) {
		if (r->rf_pat[k].rp_len < r->rf_lmin)
			r->rf_lmin = r->rf_pat[k].rp_len;
		if (r->rf_pat[k].rp_len > r->rf_lmax)
			r->rf_lmax = r->rf_pat[k].rp_len;
	}
	if (r->rf_lmin < RF_SAMPLE_MIN)
		return 0;

	r->rf_step = r->rf_lmin - RF_GRAM + 1;
	if (r->rf_step > RF_STEP_MAX)
		r->rf_step = RF_STEP_MAX;
	r->rf_nent = r->rf_npat * r->rf_step;
	for (r->rf_hbits = 6; ((size_t)1 << r->rf_hbits) < 2 * r->rf_nent;
	    r->rf_hbits++)
		;
	nb = (size_t)1 << r->rf_hbits;
	r->rf_ent = calloc(r->rf_nent, sizeof(*r->rf_ent));
	r->rf_head = calloc(nb, sizeof(*r->rf_head));
	if (r->rf_ent == NULL || r->rf_head == NULL)
		return -1;
	n = 0;
	for (k = 0; k < r->rf_npat; k++)
		for (j = 0; j < r->rf_step; j++) {
			memcpy(&g, r->rf_pat[k].rp_s + j, RF_GRAM);
			h = (g * 2654435761u) >> (32 - r->rf_hbits);
			r->rf_ent[n].re_gram = g;
			r->rf_ent[n].re_pat = k;
			r->rf_ent[n].re_off = j;
			r->rf_ent[n].re_next = r->rf_head[h];
			r->rf_head[h] = ++n;
		}
	return 0;
}

static int
rf_build_nfa(struct reflect *r, const uint8_t *s, size_t m)
{
	size_t		 ncls = 1, j, nw;
	uint64_t	*w;

	for (j = 0; j < m; j++)
		if (r->rf_cls[s[j]] == 0)
			r->rf_cls[s[j]] = ncls++;
	nw = r->rf_nw = m / 64 + 1;
	r->rf_nwords = (ncls + 16 + 16 + 3) * nw;
	if ((r->rf_words = calloc(r->rf_nwords, sizeof(*w))) == NULL)
		return -1;
	w = r->rf_words;
	r->rf_lit = w;
	r->rf_hi = w + ncls * nw;
	r->rf_lo = r->rf_hi + 16 * nw;
	r->rf_d0 = r->rf_lo + 16 * nw;
	r->rf_d1 = r->rf_d0 + nw;
	r->rf_d2 = r->rf_d1 + nw;
	for (j = 0; j < m; j++) {
		r->rf_lit[r->rf_cls[s[j]] * nw + (j + 1) / 64] |=
		    (uint64_t)1 << ((j + 1) % 64);
		r->rf_hi[(s[j] >> 4) * nw + j / 64] |= (uint64_t)1 << (j % 64);
		r->rf_lo[(s[j] & 15) * nw + (j + 1) / 64] |=
		    (uint64_t)1 << ((j + 1) % 64);
	}
	r->rf_start[s[0]] = 1;
	r->rf_start['%'] = 1;
	r->rf_d0[0] = 1;
	r->rf_idle = 1;
	return 0;
}

struct reflect *
reflect_new(const char *secret, size_t len)
{
	struct reflect	*r;

	if (len == 0 || len > RF_SECRET_MAX) {
		errno = EINVAL;
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->rf_m = len;
	r->rf_hold = 3 * len - 1;
	r->rf_state = RF_OPEN;
	if (rf_build_fixed(r, (const uint8_t *)secret, len) == -1 ||
	    rf_build_nfa(r, (const uint8_t *)secret, len) == -1) {
		reflect_free(r);
		errno = ENOMEM;
		return NULL;
	}
	return r;
}

void
reflect_free(struct reflect *r)
{
	if (r == NULL)
		return;
	/* What is derived from the secret is as good as the secret. */
	if (r->rf_pool != NULL)
		explicit_bzero(r->rf_pool, r->rf_poolsz);
	if (r->rf_ent != NULL)
		explicit_bzero(r->rf_ent, r->rf_nent * sizeof(*r->rf_ent));
	if (r->rf_words != NULL)
		explicit_bzero(r->rf_words, r->rf_nwords * sizeof(uint64_t));
	free(r->rf_pool);
	free(r->rf_ent);
	free(r->rf_head);
	free(r->rf_words);
	free(r->rf_buf);
	explicit_bzero(r, sizeof(*r));
	free(r);
}

size_t
reflect_holdback(const struct reflect *r)
{
	return r->rf_hold;
}

static int
rf_fixed_memmem(const struct reflect *r, const uint8_t *b, size_t n)
{
	size_t	 k;

	for (k = 0; k < r->rf_npat; k++)
		if (r->rf_pat[k].rp_len <= n &&
		    memmem(b, n, r->rf_pat[k].rp_s, r->rf_pat[k].rp_len) != NULL)
			return 1;
	return 0;
}

/* Whether a fixed variant lies wholly inside b[0..n). */
static int
rf_fixed(const struct reflect *r, const uint8_t *b, size_t n)
{
	const struct rf_ent	*e;
	const struct rf_pat	*pat;
	size_t			 i, at, work = 0, budget;
	uint32_t		 g, h, x;

	if (r->rf_step == 0)
		return rf_fixed_memmem(r, b, n);
	if (n < r->rf_lmin)
		return 0;
	budget = 4 * n;
	for (i = 0; i <= n - RF_GRAM; i += r->rf_step) {
		memcpy(&g, b + i, RF_GRAM);
		h = (g * 2654435761u) >> (32 - r->rf_hbits);
		for (x = r->rf_head[h]; x != 0; x = e->re_next) {
			e = &r->rf_ent[x - 1];
			work++;
			if (e->re_gram != g || e->re_off > i)
				continue;
			at = i - e->re_off;
			pat = &r->rf_pat[e->re_pat];
			if (pat->rp_len > n - at)
				continue;
			work += pat->rp_len;
			if (memcmp(b + at, pat->rp_s, pat->rp_len) == 0)
				return 1;
		}
		if (work > budget)
			return rf_fixed_memmem(r, b, n);
	}
	return 0;
}

static void
rf_nfa_reset(struct reflect *r)
{
	memset(r->rf_d0, 0, r->rf_nw * sizeof(uint64_t));
	memset(r->rf_d1, 0, r->rf_nw * sizeof(uint64_t));
	memset(r->rf_d2, 0, r->rf_nw * sizeof(uint64_t));
	r->rf_d0[0] = 1;
	r->rf_idle = 1;
}

/* One byte through the automaton: 1 when the secret just ended. */
static int
rf_nfa_step(struct reflect *r, uint8_t c)
{
	const uint64_t	*lit, *hi, *lo;
	uint64_t	*d0 = r->rf_d0, *d1 = r->rf_d1, *d2 = r->rf_d2;
	uint64_t	 o0, o1, o2, n0, n1, n2, c0 = 0, c2 = 0, any = 0;
	size_t		 i, nw = r->rf_nw;
	unsigned int	 h = rf_hex1[c];

	lit = r->rf_lit + r->rf_cls[c] * nw;
	hi = r->rf_hi + (h != 0 ? h - 1 : 0) * nw;
	lo = r->rf_lo + (h != 0 ? h - 1 : 0) * nw;
	for (i = 0; i < nw; i++) {
		o0 = d0[i];
		o1 = d1[i];
		o2 = d2[i];
		n0 = ((o0 << 1) | c0) & lit[i];
		n1 = c == '%' ? o0 : 0;
		n2 = 0;
		if (h != 0) {
			n0 |= ((o2 << 1) | c2) & lo[i];
			n2 = o1 & hi[i];
		}
		c0 = o0 >> 63;
		c2 = o2 >> 63;
		d0[i] = n0;
		d1[i] = n1;
		d2[i] = n2;
		any |= n0 | n1 | n2;
	}
	/* Bit 0 is the empty prefix, matched everywhere. */
	d0[0] |= 1;
	r->rf_idle = any == 0;
	return (d0[r->rf_m / 64] >> (r->rf_m % 64)) & 1;
}

/* Run the automaton up to stream offset stop over b (at rf_base). */
static int
rf_nfa_run(struct reflect *r, const uint8_t *b, size_t stop)
{
	size_t	 pos = r->rf_nfa_pos, base = r->rf_base;

	while (pos < stop) {
		if (r->rf_idle) {
			while (pos < stop && !r->rf_start[b[pos - base]])
				pos++;
			if (pos == stop)
				break;
		}
		if (rf_nfa_step(r, b[pos - base]))
			return 1;
		pos++;
	}
	r->rf_nfa_pos = stop;
	return 0;
}

static rf_vec
rf_vec_ishex(rf_vec v)
{
	return (rf_vec)(v - '0' < 10) | (rf_vec)((v | 0x20) - 'a' < 6);
}

/*
 * The first offset in [i, lim) of a '%' and two hex digits, or lim; b must
 * hold lim + 2 bytes.  Sixteen offsets at a time: in text a '%' alone is too
 * common for memchr(3) to go far.
 */
static size_t
rf_next_triple(const uint8_t *b, size_t i, size_t lim)
{
	rf_vec		 v0, v1, v2, hit[2];
	uint64_t	 w[2];
	size_t		 k, h;

	for (; lim - i >= 32; i += 32) {
		for (h = 0; h < 2; h++) {
			memcpy(&v0, b + i + 16 * h, 16);
			memcpy(&v1, b + i + 16 * h + 1, 16);
			memcpy(&v2, b + i + 16 * h + 2, 16);
			hit[h] = (rf_vec)(v0 == '%') & rf_vec_ishex(v1) &
			    rf_vec_ishex(v2);
		}
		v0 = hit[0] | hit[1];
		memcpy(w, &v0, sizeof(w));
		if ((w[0] | w[1]) != 0)
			for (k = 0; k < 32; k++)
				if (hit[k / 16][k % 16] != 0)
					return i + k;
	}
	for (; i < lim; i++)
		if (b[i] == '%' && rf_hex1[b[i + 1]] != 0 &&
		    rf_hex1[b[i + 2]] != 0)
			return i;
	return lim;
}

/*
 * Look at every triple not looked at yet (a '%' is looked at once two bytes
 * follow it), and run the automaton around those that decode to a byte of
 * the secret.
 */
static int
rf_percent(struct reflect *r, const uint8_t *b, size_t n)
{
	size_t		 base = r->rf_base, end = base + n, t, from;
	size_t		 m = r->rf_m;
	unsigned int	 hi, lo;

	if (r->rf_nfa_pos < r->rf_nfa_until &&
	    rf_nfa_run(r, b, r->rf_nfa_until < end ? r->rf_nfa_until : end))
		return 1;
	if (n < 3)
		return 0;
	t = r->rf_trig_pos > base ? r->rf_trig_pos : base;
	while ((t = base + rf_next_triple(b, t - base, n - 2)) < end - 2) {
		hi = rf_hex1[b[t - base + 1]] - 1;
		lo = rf_hex1[b[t - base + 2]] - 1;
		if (r->rf_cls[hi << 4 | lo] != 0) {
			/* The held-back bytes always reach back this far. */
			from = t > 3 * (m - 1) ? t - 3 * (m - 1) : 0;
			if (from < base)
				from = base;
			if (r->rf_nfa_pos < from) {
				rf_nfa_reset(r);
				r->rf_nfa_pos = from;
			}
			if (r->rf_nfa_until < t + 3 * m)
				r->rf_nfa_until = t + 3 * m;
			if (rf_nfa_run(r, b,
			    r->rf_nfa_until < end ? r->rf_nfa_until : end))
				return 1;
		}
		t++;
	}
	r->rf_trig_pos = t;
	return 0;
}

/* Drop what the previous call released. */
static void
rf_compact(struct reflect *r)
{
	if (r->rf_out == 0)
		return;
	memmove(r->rf_buf, r->rf_buf + r->rf_out, r->rf_len - r->rf_out);
	r->rf_base += r->rf_out;
	r->rf_len -= r->rf_out;
	r->rf_out = 0;
}

static int
rf_reserve(struct reflect *r, size_t len)
{
	uint8_t	*nb;
	size_t	 need, cap;

	if (len > SIZE_MAX - r->rf_len)
		return -1;
	need = r->rf_len + len;
	if (need <= r->rf_cap)
		return 0;
	cap = r->rf_cap != 0 ? r->rf_cap : 4096;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if ((nb = realloc(r->rf_buf, cap)) == NULL)
		return -1;
	r->rf_buf = nb;
	r->rf_cap = cap;
	return 0;
}

int
reflect_feed(struct reflect *r, const void *in, size_t len,
    const void **out, size_t *outlen)
{
	size_t	 old, from, lmax = r->rf_lmax;

	*out = rf_none;
	*outlen = 0;
	if (r->rf_state != RF_OPEN)
		return -1;
	if (len == 0)
		return 0;
	rf_compact(r);
	if (rf_reserve(r, len) == -1) {
		r->rf_state = RF_FAILED;
		r->rf_nomem = 1;
		errno = ENOMEM;
		return -1;
	}
	memcpy(r->rf_buf + r->rf_len, in, len);
	old = r->rf_len;
	r->rf_len += len;

	/*
	 * Only occurrences that end in the new bytes are new: the fixed ones
	 * start at most lmax - 1 bytes back (lmax <= 2m, within the held-back
	 * bytes), and the automaton keeps its own place.
	 */
	from = old > lmax - 1 ? old - (lmax - 1) : 0;
	if (rf_fixed(r, r->rf_buf + from, r->rf_len - from) ||
	    rf_percent(r, r->rf_buf, r->rf_len)) {
		r->rf_state = RF_FAILED;
		return -1;
	}
	if (r->rf_len > r->rf_hold) {
		r->rf_out = r->rf_len - r->rf_hold;
		*out = r->rf_buf;
		*outlen = r->rf_out;
	}
	return 0;
}

int
reflect_finish(struct reflect *r, const void **out, size_t *outlen)
{
	*out = rf_none;
	*outlen = 0;
	if (r->rf_state != RF_OPEN)
		return -1;
	/* Every occurrence was looked for when its last byte came in. */
	rf_compact(r);
	r->rf_state = RF_DONE;
	r->rf_out = r->rf_len;
	if (r->rf_len > 0)
		*out = r->rf_buf;
	*outlen = r->rf_len;
	return 0;
}

int
reflect_contains(const char *secret, size_t slen, const char *s, size_t len)
{
	struct reflect	*r;
	const void	*out;
	size_t		 outlen;
	int		 rv = 0;

	if ((r = reflect_new(secret, slen)) == NULL)
		return -1;
	if (reflect_feed(r, s, len, &out, &outlen) == -1)
		rv = r->rf_nomem ? -1 : 1;
	reflect_free(r);
	return rv;
}
