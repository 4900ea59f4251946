/*
 * Reflection filter (PROTOCOL.md 3.2).
 *
 * The fixed variants (raw, hex, base64) are looked for by sampling: each of
 * them is at least rf_lmin bytes long, so a 4-byte gram read every rf_step
 * bytes always falls inside an occurrence, at one of its first rf_step
 * offsets.  Grams are looked up with letters folded to lower case, so that
 * hex of any case hits the table; a hit is verified exactly, or digit value
 * by digit value for hex.  Verification work is counted, and a buffer that
 * exceeds its budget (a pathological body against a repetitive secret) is
 * searched again in linear time: memmem(3), and a KMP for hex.  Patterns too
 * short to sample go to that search directly.
 *
 * The escaped variant is not a fixed string: any mix of literal bytes, %XX
 * triples, JSON \u00XX and JSON short escapes, one unit per secret byte.  A
 * bit-parallel automaton matches it: shift-and over the secret, plus one
 * state vector per place inside a unit, so every parse is followed at once.
 * An occurrence with no escaped unit is the raw secret, a fixed variant,
 * and before its first escaped unit an occurrence has literal bytes only, so
 * the automaton only has to run from m-1 bytes before to 6m bytes after each
 * escaped unit that stands for a byte of the secret; it skips idle
 * stretches, and no byte goes through it twice.
 *
 * Every variant is searched for as soon as its last byte arrives.  What is
 * held back is the longest tail that is still the beginning of a variant:
 * both the automaton and the fixed patterns, as bit vectors, are run
 * backwards from the end until nothing can match, a byte or two in ordinary
 * text.  The bytes before that tail can start no occurrence, so no later
 * search has to look at them.
 *
 * Everything but the stream's own state depends on the secret alone, and
 * egress makes a filter per call with the same credential: the tables are
 * built once per secret, kept for the next call (RF_CACHE of them, the
 * model's credential and the MCP one), and shared by every stream of that
 * secret, which then costs its state vectors and its buffer.  A credential
 * that changes replaces its tables; the last stream of old ones wipes them.
 * Egress's event loop is the only user, so the cache takes no lock.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reflect.h"

#define RF_GRAM		4	/* bytes read per sample */
#define RF_FOLD		0x20202020u	/* grams compared with letters lower */
#define RF_SAMPLE_MIN	8	/* shorter patterns go to the linear search */
#define RF_STEP_MAX	256	/* denser sampling keeps the table small */
#define RF_NPAT		8	/* raw, hex, base64 and base64url x3 */
#define RF_UNIT_MAX	6	/* "\u00XX", the longest way to write a byte */
#define RF_BLOCK	(32 + RF_UNIT_MAX - 1)	/* 32 offsets and their units */
#define RF_SCAN_MIN	64	/* backward steps allowed to a call at least */
#define RF_SECRET_MAX	(SIZE_MAX / 256)	/* no size below can overflow */
#define RF_CACHE	2	/* secrets whose tables are kept */

/* Sixteen bytes at once, in whatever vector unit the target has. */
typedef uint8_t	rf_vec __attribute__((vector_size(16)));

enum rf_state {
	RF_OPEN,
	RF_FAILED,
	RF_DONE
};

/* Which backward scans a byte can keep going. */
#define RF_USED_NFA	1
#define RF_USED_FIXED	2

/* The automaton's state vectors: bit j is "j units of the secret, then". */
enum rf_st {
	RF_SD,			/* nothing more */
	RF_SP,			/* '%' */
	RF_SH,			/* '%' or "\u00", and the high digit of s[j] */
	RF_SB,			/* '\' */
	RF_SU,			/* "\u" */
	RF_SU0,			/* "\u0" */
	RF_SU00,		/* "\u00" */
	RF_NST
};

struct rf_pat {
	const uint8_t	*rp_s;
	size_t		 rp_len;
	size_t		 rp_bit;	/* first bit in the backward vectors */
	int		 rp_hex;	/* compared by digit value */
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
	size_t		 rf_step;	/* 0: linear search only */
	struct rf_ent	*rf_ent;
	size_t		 rf_nent;
	uint32_t	*rf_head;
	unsigned int	 rf_hbits;
	uint32_t	*rf_kmp;	/* KMP failure function of hex */

	/* Escaped automaton over the m secret bytes, state bits 0..m. */
	size_t		 rf_m;
	size_t		 rf_nw;		/* 64-bit words per vector */
	uint16_t	 rf_cls[256];	/* byte -> row of rf_lit; 0: not in it */
	uint16_t	 rf_esc[256];	/* x -> row of rf_lit of what \x is */
	uint8_t		 rf_start[256];	/* bytes that leave the idle state */
	uint8_t		 rf_s0;		/* the secret's first byte */
	uint8_t		 rf_s0hex[2];	/* its high digit, both cases */
	uint8_t		 rf_s0esc;	/* x of its short escape, or 'u' */
	uint8_t		 rf_used[256];	/* RF_USED_*: who has a use for it */
	rf_vec		 rf_escv[8];	/* \x that stand for a secret byte */
	size_t		 rf_nescv;
	uint64_t	*rf_words;	/* every vector below, in one block */
	size_t		 rf_nwords;
	uint64_t	*rf_lit;	/* [cls]: bit j+1 when s[j] is the byte */
	uint64_t	*rf_hi;		/* [nibble]: bit j, s[j] >> 4 */
	uint64_t	*rf_lo;		/* [nibble]: bit j+1, s[j] & 15 */
	uint64_t	*rf_st;		/* [RF_NST]: where the automaton is */
	uint64_t	*rf_live;	/* [RF_NST]: any that may still end */
	uint64_t	*rf_bk[2];	/* [RF_NST]: the backward scan */
	int		 rf_idle;
	size_t		 rf_nfa_pos;	/* stream offsets from here on */
	size_t		 rf_nfa_until;
	size_t		 rf_trig_pos;

	/* Fixed variants but raw, backwards: a bit per byte, a zero between. */
	size_t		 rf_fw;
	uint8_t		 rf_fcls[256];	/* byte -> row of rf_fmask */
	uint64_t	*rf_fmask;
	uint64_t	*rf_finit;	/* every bit of every pattern */
	uint64_t	*rf_fstart;	/* the first bit of every pattern */
	uint64_t	*rf_fbk[2];
	size_t		 rf_tailmax;	/* longest beginning of a variant */

	/* The stream: rf_buf[0] is at offset rf_base. */
	uint8_t		*rf_buf;
	size_t		 rf_cap;
	size_t		 rf_len;
	size_t		 rf_out;	/* released at the last call */
	size_t		 rf_base;
	enum rf_state	 rf_state;
	int		 rf_nomem;

	/* A stream reads the tables of rf_tpl and owns rf_mut: rf_st, rf_bk
	 * and rf_fbk.  The tables themselves are a filter that is never fed,
	 * with a count of the streams (and cache slot) that use it. */
	struct reflect	*rf_tpl;
	uint64_t	*rf_mut;
	size_t		 rf_nmut;
	size_t		 rf_hw;		/* rf_buf bytes ever written */
	unsigned int	 rf_refs;
};

/* The tables of the last secrets, most recently used first. */
static struct reflect	*rf_cache[RF_CACHE];

/* Hex digit value + 1, 0 for any other byte. */
static const uint8_t	rf_hex1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5,
	['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

/* JSON's short escapes: what \x stands for, 0 when it is not one. */
static const uint8_t	rf_json[256] = {
	['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b', ['f'] = '\f',
	['n'] = '\n', ['r'] = '\r', ['t'] = '\t',
};

/* Where *out points when nothing is released, so it is never NULL. */
static const uint8_t	rf_none[1];

static const char	rf_b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char	rf_b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static void
rf_add_pat(struct reflect *r, const uint8_t *s, size_t len, int hex)
{
	size_t	 k;

	if (len == 0)
		return;
	for (k = 0; k < r->rf_npat; k++)
		if (r->rf_pat[k].rp_len == len &&
		    r->rf_pat[k].rp_hex == hex &&
		    memcmp(r->rf_pat[k].rp_s, s, len) == 0)
			return;
	r->rf_pat[r->rf_npat].rp_s = s;
	r->rf_pat[r->rf_npat].rp_len = len;
	r->rf_pat[r->rf_npat].rp_hex = hex;
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

static uint32_t
rf_gram(const uint8_t *p)
{
	uint32_t	 g;

	memcpy(&g, p, RF_GRAM);
	return g | RF_FOLD;
}

static int
rf_build_fixed(struct reflect *r, const uint8_t *s, size_t m)
{
	static const char	 lower[] = "0123456789abcdef";
	uint8_t			*p;
	size_t			 i, k, j, n, nb;
	uint32_t		 g, h;

	/* raw m, hex 2m, six base64 runs of at most 4m/3 + 1 each */
	r->rf_poolsz = 11 * m + 16;
	if ((r->rf_pool = malloc(r->rf_poolsz)) == NULL)
		return -1;
	p = r->rf_pool;
	memcpy(p, s, m);
	rf_add_pat(r, p, m, 0);
	p += m;
	for (i = 0; i < m; i++) {
		p[2 * i] = lower[s[i] >> 4];
		p[2 * i + 1] = lower[s[i] & 15];
	}
	rf_add_pat(r, p, 2 * m, 1);
	p += 2 * m;
	for (i = 0; i < 3; i++) {
		n = rf_b64_stable(s, m, i, rf_b64, p);
		rf_add_pat(r, p, n, 0);
		p += n;
		n = rf_b64_stable(s, m, i, rf_b64url, p);
		rf_add_pat(r, p, n, 0);
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
			g = rf_gram(r->rf_pat[k].rp_s + j);
			h = (g * 2654435761u) >> (32 - r->rf_hbits);
			r->rf_ent[n].re_gram = g;
			r->rf_ent[n].re_pat = k;
			r->rf_ent[n].re_off = j;
			r->rf_ent[n].re_next = r->rf_head[h];
			r->rf_head[h] = ++n;
		}
	return 0;
}

static void
rf_setbit(uint64_t *v, size_t bit)
{
	v[bit / 64] |= (uint64_t)1 << (bit % 64);
}

/* The bytes that stand for pattern byte c: hex digits in either case. */
static size_t
rf_spellings(const struct rf_pat *pat, uint8_t c, uint8_t sp[2])
{
	sp[0] = c;
	if (pat->rp_hex && c >= 'a' && c <= 'f') {
		sp[1] = c - 'a' + 'A';
		return 2;
	}
	return 1;
}

/*
 * The automaton, the backward vectors of the fixed patterns but raw (raw is
 * the automaton's all-literal parse), and the KMP table, in one block.
 */
static int
rf_build_vectors(struct reflect *r, const uint8_t *s, size_t m)
{
	struct rf_pat	*pat;
	uint8_t		 sp[2];
	size_t		 ncls = 1, nfcls = 1, j, k, i, e, nw, fw, bit = 0;
	uint64_t	*w;
	uint32_t	*kmp;

	for (j = 0; j < m; j++)
		if (r->rf_cls[s[j]] == 0)
			r->rf_cls[s[j]] = ncls++;
	for (i = 0; i < 256; i++)
		if (rf_json[i] != 0 &&
		    (r->rf_esc[i] = r->rf_cls[rf_json[i]]) != 0)
			r->rf_escv[r->rf_nescv++] = (rf_vec){ 0 } + (uint8_t)i;
	for (k = 1; k < r->rf_npat; k++) {
		pat = &r->rf_pat[k];
		pat->rp_bit = bit;
		bit += pat->rp_len + 1;
		for (i = 0; i < pat->rp_len; i++)
			for (e = rf_spellings(pat, pat->rp_s[i], sp); e-- > 0;)
				if (r->rf_fcls[sp[e]] == 0)
					r->rf_fcls[sp[e]] = nfcls++;
	}
	nw = r->rf_nw = m / 64 + 1;
	fw = r->rf_fw = bit / 64 + 1;
	r->rf_nwords = (ncls + 16 + 16 + 4 * RF_NST) * nw + (nfcls + 4) * fw +
	    m + 1;
	if ((r->rf_words = calloc(r->rf_nwords, sizeof(*w))) == NULL)
		return -1;
	w = r->rf_words;
	r->rf_lit = w;
	r->rf_hi = r->rf_lit + ncls * nw;
	r->rf_lo = r->rf_hi + 16 * nw;
	r->rf_st = r->rf_lo + 16 * nw;
	r->rf_live = r->rf_st + RF_NST * nw;
	r->rf_bk[0] = r->rf_live + RF_NST * nw;
	r->rf_bk[1] = r->rf_bk[0] + RF_NST * nw;
	r->rf_fmask = r->rf_bk[1] + RF_NST * nw;
	r->rf_finit = r->rf_fmask + nfcls * fw;
	r->rf_fstart = r->rf_finit + fw;
	r->rf_fbk[0] = r->rf_fstart + fw;
	r->rf_fbk[1] = r->rf_fbk[0] + fw;
	r->rf_kmp = (uint32_t *)(r->rf_fbk[1] + fw);

	for (j = 0; j < m; j++) {
		rf_setbit(r->rf_lit + r->rf_cls[s[j]] * nw, j + 1);
		rf_setbit(r->rf_hi + (s[j] >> 4) * nw, j);
		rf_setbit(r->rf_lo + (s[j] & 15) * nw, j + 1);
		rf_setbit(r->rf_live + RF_SD * nw, j);
		rf_setbit(r->rf_live + RF_SP * nw, j);
		rf_setbit(r->rf_live + RF_SH * nw, j);
		/* \u00XX and the short escapes stand for ASCII only. */
		if (s[j] < 0x80)
			for (k = RF_SB; k <= RF_SU00; k++)
				rf_setbit(r->rf_live + k * nw, j);
	}
	for (k = 1; k < r->rf_npat; k++) {
		pat = &r->rf_pat[k];
		rf_setbit(r->rf_fstart, pat->rp_bit);
		for (i = 0; i < pat->rp_len; i++) {
			rf_setbit(r->rf_finit, pat->rp_bit + i);
			for (e = rf_spellings(pat, pat->rp_s[i], sp); e-- > 0;)
				rf_setbit(r->rf_fmask + r->rf_fcls[sp[e]] * fw,
				    pat->rp_bit + i);
		}
	}

	/* The hex pattern is rf_pat[1]: nothing else is 2m long and hex. */
	pat = &r->rf_pat[1];
	kmp = r->rf_kmp;
	kmp[0] = 0;
	for (i = 1, k = 0; i < pat->rp_len; i++) {
		while (k > 0 && pat->rp_s[i] != pat->rp_s[k])
			k = kmp[k - 1];
		if (pat->rp_s[i] == pat->rp_s[k])
			k++;
		kmp[i] = k;
	}

	r->rf_s0 = s[0];
	r->rf_s0hex[0] = "0123456789abcdef"[s[0] >> 4];
	r->rf_s0hex[1] = "0123456789ABCDEF"[s[0] >> 4];
	r->rf_s0esc = 'u';
	for (i = 0; i < 256; i++)
		if (rf_json[i] == s[0] && s[0] != 0)
			r->rf_s0esc = i;
	r->rf_start[s[0]] = 1;
	r->rf_start['%'] = 1;
	r->rf_start['\\'] = 1;
	for (i = 0; i < 256; i++)
		r->rf_used[i] = (r->rf_cls[i] != 0 || r->rf_esc[i] != 0 ||
		    rf_hex1[i] != 0 || i == '%' || i == '\\' || i == 'u' ?
		    RF_USED_NFA : 0) | (r->rf_fcls[i] != 0 ? RF_USED_FIXED : 0);
	r->rf_st[RF_SD * nw] = 1;
	r->rf_idle = 1;
	r->rf_tailmax = RF_UNIT_MAX * m - 1;
	return 0;
}

static void	rf_nfa_reset(struct reflect *);
static void	rf_tables_unref(struct reflect *);

/* Tables for a secret: a filter that is never fed itself. */
static struct reflect *
rf_tables_new(const uint8_t *secret, size_t len)
{
	struct reflect	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->rf_m = len;
	r->rf_state = RF_OPEN;
	r->rf_refs = 1;
	if (rf_build_fixed(r, secret, len) == -1 ||
	    rf_build_vectors(r, secret, len) == -1) {
		rf_tables_unref(r);
		return NULL;
	}
	return r;
}

static void
rf_tables_unref(struct reflect *t)
{
	if (--t->rf_refs > 0)
		return;
	/* What is derived from the secret is as good as the secret. */
	if (t->rf_pool != NULL)
		explicit_bzero(t->rf_pool, t->rf_poolsz);
	if (t->rf_ent != NULL)
		explicit_bzero(t->rf_ent, t->rf_nent * sizeof(*t->rf_ent));
	if (t->rf_words != NULL)
		explicit_bzero(t->rf_words, t->rf_nwords * sizeof(uint64_t));
	free(t->rf_pool);
	free(t->rf_ent);
	free(t->rf_head);
	free(t->rf_words);
	explicit_bzero(t, sizeof(*t));
	free(t);
}

/* The tables of this secret, from the cache or built and cached; the
 * caller gets a reference of its own. */
static struct reflect *
rf_tables(const uint8_t *secret, size_t len)
{
	struct reflect	*t;
	size_t		 i;

	for (i = 0; i < RF_CACHE; i++) {
		t = rf_cache[i];
		/* The pool begins with the raw secret. */
		if (t != NULL && t->rf_m == len &&
		    memcmp(t->rf_pool, secret, len) == 0)
			break;
	}
	if (i == RF_CACHE) {
		if ((t = rf_tables_new(secret, len)) == NULL)
			return NULL;
		i = RF_CACHE - 1;
		if (rf_cache[i] != NULL)
			rf_tables_unref(rf_cache[i]);
		rf_cache[i] = t;	/* the cache's reference */
	}
	memmove(rf_cache + 1, rf_cache, i * sizeof(rf_cache[0]));
	rf_cache[0] = t;
	t->rf_refs++;
	return t;
}

struct reflect *
reflect_new(const char *secret, size_t len)
{
	struct reflect	*t, *r;
	size_t		 nst;

	if (len == 0 || len > RF_SECRET_MAX) {
		errno = EINVAL;
		return NULL;
	}
	if ((t = rf_tables((const uint8_t *)secret, len)) == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if ((r = malloc(sizeof(*r))) == NULL) {
		rf_tables_unref(t);
		errno = ENOMEM;
		return NULL;
	}
	/* The tables' scalars and small arrays by value, their vectors by
	 * reference; the vectors a stream changes are its own. */
	memcpy(r, t, sizeof(*r));
	r->rf_tpl = t;
	r->rf_refs = 0;
	nst = RF_NST * t->rf_nw;
	r->rf_nmut = 3 * nst + 2 * t->rf_fw;
	if ((r->rf_mut = calloc(r->rf_nmut, sizeof(uint64_t))) == NULL) {
		free(r);
		rf_tables_unref(t);
		errno = ENOMEM;
		return NULL;
	}
	r->rf_st = r->rf_mut;
	r->rf_bk[0] = r->rf_st + nst;
	r->rf_bk[1] = r->rf_bk[0] + nst;
	r->rf_fbk[0] = r->rf_bk[1] + nst;
	r->rf_fbk[1] = r->rf_fbk[0] + t->rf_fw;
	rf_nfa_reset(r);
	return r;
}

void
reflect_free(struct reflect *r)
{
	if (r == NULL)
		return;
	/* The stream's state and what it held back follow the secret. */
	explicit_bzero(r->rf_mut, r->rf_nmut * sizeof(uint64_t));
	free(r->rf_mut);
	if (r->rf_buf != NULL)
		explicit_bzero(r->rf_buf, r->rf_hw);
	free(r->rf_buf);
	rf_tables_unref(r->rf_tpl);
	explicit_bzero(r, sizeof(*r));
	free(r);
}

size_t
reflect_holdback(const struct reflect *r)
{
	return r->rf_len - r->rf_out;
}

/* Hex of the secret in b[0..n), digits of either case, in linear time. */
static int
rf_hex_search(const struct reflect *r, const uint8_t *b, size_t n)
{
	const struct rf_pat	*pat = &r->rf_pat[1];
	size_t			 i, k = 0;

	for (i = 0; i < n; i++) {
		while (k > 0 && rf_hex1[b[i]] != rf_hex1[pat->rp_s[k]])
			k = r->rf_kmp[k - 1];
		if (rf_hex1[b[i]] == rf_hex1[pat->rp_s[k]] &&
		    ++k == pat->rp_len)
			return 1;
	}
	return 0;
}

static int
rf_fixed_slow(const struct reflect *r, const uint8_t *b, size_t n)
{
	size_t	 k;

	for (k = 0; k < r->rf_npat; k++) {
		if (r->rf_pat[k].rp_len > n)
			continue;
		if (r->rf_pat[k].rp_hex ? rf_hex_search(r, b, n) :
		    memmem(b, n, r->rf_pat[k].rp_s,
		    r->rf_pat[k].rp_len) != NULL)
			return 1;
	}
	return 0;
}

static int
rf_pat_at(const struct rf_pat *pat, const uint8_t *b)
{
	size_t	 i;

	if (!pat->rp_hex)
		return memcmp(b, pat->rp_s, pat->rp_len) == 0;
	for (i = 0; i < pat->rp_len; i++)
		if (rf_hex1[b[i]] != rf_hex1[pat->rp_s[i]])
			return 0;
	return 1;
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
		return rf_fixed_slow(r, b, n);
	if (n < r->rf_lmin)
		return 0;
	budget = 4 * n;
	for (i = 0; i <= n - RF_GRAM; i += r->rf_step) {
		g = rf_gram(b + i);
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
			if (rf_pat_at(pat, b + at))
				return 1;
		}
		if (work > budget)
			return rf_fixed_slow(r, b, n);
	}
	return 0;
}

static void
rf_nfa_reset(struct reflect *r)
{
	memset(r->rf_st, 0, RF_NST * r->rf_nw * sizeof(uint64_t));
	r->rf_st[RF_SD * r->rf_nw] = 1;
	r->rf_idle = 1;
}

/* A whole word of ones when the condition holds, of zeros otherwise. */
static uint64_t
rf_mask(int cond)
{
	return -(uint64_t)(cond != 0);
}

/* One byte through the automaton: 1 when the secret just ended. */
static int
rf_nfa_step(struct reflect *r, uint8_t c)
{
	const uint64_t	*lit, *esc, *hi, *lo;
	uint64_t	*d = r->rf_st, *p, *hh, *b, *u, *u0, *u00;
	uint64_t	 od, ob, oh, cd = 0, cb = 0, ch = 0, any = 0;
	uint64_t	 mpct, mbs, mu, mz, masc;
	size_t		 i, nw = r->rf_nw;
	unsigned int	 h = rf_hex1[c];

	p = d + RF_SP * nw;
	hh = d + RF_SH * nw;
	b = d + RF_SB * nw;
	u = d + RF_SU * nw;
	u0 = d + RF_SU0 * nw;
	u00 = d + RF_SU00 * nw;
	/* Row 0 of rf_lit is all zeros: no transition. */
	lit = r->rf_lit + r->rf_cls[c] * nw;
	esc = r->rf_lit + r->rf_esc[c] * nw;
	hi = h != 0 ? r->rf_hi + (h - 1) * nw : r->rf_lit;
	lo = h != 0 ? r->rf_lo + (h - 1) * nw : r->rf_lit;
	mpct = rf_mask(c == '%');
	mbs = rf_mask(c == '\\');
	mu = rf_mask(c == 'u');
	mz = rf_mask(c == '0');
	masc = rf_mask(h != 0 && h <= 8);
	for (i = 0; i < nw; i++) {
		od = d[i];
		ob = b[i];
		oh = hh[i];
		d[i] = (((od << 1) | cd) & lit[i]) |
		    (((oh << 1) | ch) & lo[i]) | (((ob << 1) | cb) & esc[i]);
		hh[i] = (p[i] | (u00[i] & masc)) & hi[i];
		p[i] = od & mpct;
		u00[i] = u0[i] & mz;
		u0[i] = u[i] & mz;
		u[i] = ob & mu;
		b[i] = od & mbs;
		cd = od >> 63;
		cb = ob >> 63;
		ch = oh >> 63;
		any |= d[i] | hh[i] | p[i] | u00[i] | u0[i] | u[i] | b[i];
	}
	/* Bit 0 is the empty prefix, matched everywhere. */
	d[0] |= 1;
	r->rf_idle = any == 0;
	return (d[r->rf_m / 64] >> (r->rf_m % 64)) & 1;
}

/*
 * One byte backwards: y receives the states from which c leads into x.
 * Returns whether any is left.
 */
static int
rf_nfa_back(const struct reflect *r, uint8_t c, const uint64_t *x,
    uint64_t *y)
{
	const uint64_t	*lit, *esc, *hi, *lo;
	uint64_t	 vd, vb, vh, cd = 0, cb = 0, ch = 0, any = 0;
	uint64_t	 mpct, mbs, mu, mz, masc;
	size_t		 i, nw = r->rf_nw;
	unsigned int	 h = rf_hex1[c];

	lit = r->rf_lit + r->rf_cls[c] * nw;
	esc = r->rf_lit + r->rf_esc[c] * nw;
	hi = h != 0 ? r->rf_hi + (h - 1) * nw : r->rf_lit;
	lo = h != 0 ? r->rf_lo + (h - 1) * nw : r->rf_lit;
	mpct = rf_mask(c == '%');
	mbs = rf_mask(c == '\\');
	mu = rf_mask(c == 'u');
	mz = rf_mask(c == '0');
	masc = rf_mask(h != 0 && h <= 8);
	for (i = nw; i-- > 0;) {
		vd = x[RF_SD * nw + i] & lit[i];
		vb = x[RF_SD * nw + i] & esc[i];
		vh = x[RF_SD * nw + i] & lo[i];
		y[RF_SD * nw + i] = (vd >> 1) | (cd << 63) |
		    (x[RF_SP * nw + i] & mpct) | (x[RF_SB * nw + i] & mbs);
		y[RF_SB * nw + i] = (vb >> 1) | (cb << 63) |
		    (x[RF_SU * nw + i] & mu);
		y[RF_SH * nw + i] = (vh >> 1) | (ch << 63);
		y[RF_SP * nw + i] = x[RF_SH * nw + i] & hi[i];
		y[RF_SU00 * nw + i] = x[RF_SH * nw + i] & hi[i] & masc;
		y[RF_SU0 * nw + i] = x[RF_SU00 * nw + i] & mz;
		y[RF_SU * nw + i] = x[RF_SU0 * nw + i] & mz;
		cd = vd & 1;
		cb = vb & 1;
		ch = vh & 1;
		any |= y[RF_SD * nw + i] | y[RF_SB * nw + i] |
		    y[RF_SH * nw + i] | y[RF_SP * nw + i] |
		    y[RF_SU00 * nw + i] | y[RF_SU0 * nw + i] |
		    y[RF_SU * nw + i];
	}
	return any != 0;
}

/*
 * The same for the fixed patterns: bit i is "x from pattern byte i on".
 * Returns whether any is left, and in *start whether a pattern's first.
 */
static int
rf_fixed_back(const struct reflect *r, uint8_t c, const uint64_t *x,
    uint64_t *y, int *start)
{
	const uint64_t	*mask = r->rf_fmask + r->rf_fcls[c] * r->rf_fw;
	uint64_t	 carry = 0, any = 0, first = 0;
	size_t		 i;

	for (i = r->rf_fw; i-- > 0;) {
		y[i] = ((x[i] >> 1) | (carry << 63)) & mask[i];
		carry = x[i] & 1;
		any |= y[i];
		first |= y[i] & r->rf_fstart[i];
	}
	*start = first != 0;
	return any != 0;
}

/*
 * The length of the longest tail of the buffer that is the beginning of a
 * variant (not a whole one: that was looked for already).  At most budget
 * bytes are looked at; when that is not enough, every byte that could be
 * in such a tail is kept.
 */
static size_t
rf_tail(struct reflect *r, size_t budget)
{
	const uint8_t	*b = r->rf_buf;
	const uint64_t	*x = r->rf_live, *fx = r->rf_finit;
	size_t		 len = r->rf_len, lo, p, keep = 0, cur = 0;
	int		 nfa = 1, fix = r->rf_npat > 1, start;

	lo = len > r->rf_tailmax ? len - r->rf_tailmax : 0;
	/* The first step starts from every state, the next ones alternate. */
	for (p = len; p > lo && (nfa || fix); budget--, cur ^= 1) {
		if (budget == 0)
			return len - lo;
		p--;
		/* A byte a scan has no use for ends it, vectors unread. */
		if (nfa && (r->rf_used[b[p]] & RF_USED_NFA) == 0)
			nfa = 0;
		if (fix && (r->rf_used[b[p]] & RF_USED_FIXED) == 0)
			fix = 0;
		if (nfa) {
			nfa = rf_nfa_back(r, b[p], x, r->rf_bk[cur]);
			x = r->rf_bk[cur];
			if (x[RF_SD * r->rf_nw] & 1)
				keep = len - p;
		}
		if (fix) {
			fix = rf_fixed_back(r, b[p], fx, r->rf_fbk[cur],
			    &start);
			fx = r->rf_fbk[cur];
			if (start)
				keep = len - p;
		}
	}
	return keep;
}

/* Bit i for each byte i of the eight in w that has its high bit set. */
static uint32_t
rf_movemask(uint64_t w)
{
	return ((w & 0x8080808080808080ull) * 0x0002040810204081ull) >> 56;
}

/*
 * The first offset in [i, n) where the idle automaton may leave the idle
 * state, or n: the secret's first byte, or the first two bytes of a unit
 * for it.  The last byte of b is looked at alone.
 */
static size_t
rf_next_start(const struct reflect *r, const uint8_t *b, size_t i, size_t n)
{
	rf_vec		 v, v1, hit;
	uint64_t	 w[2];

	for (; n - i >= 17; i += 16) {
		memcpy(&v, b + i, 16);
		memcpy(&v1, b + i + 1, 16);
		hit = (rf_vec)(v == r->rf_s0) | ((rf_vec)(v == '%') &
		    ((rf_vec)(v1 == r->rf_s0hex[0]) |
		    (rf_vec)(v1 == r->rf_s0hex[1]))) | ((rf_vec)(v == '\\') &
		    ((rf_vec)(v1 == 'u') | (rf_vec)(v1 == r->rf_s0esc)));
		memcpy(w, &hit, sizeof(w));
		if ((w[0] | w[1]) != 0)
			return i + __builtin_ctz(rf_movemask(w[0]) |
			    rf_movemask(w[1]) << 8);
	}
	for (; i < n && !r->rf_start[b[i]]; i++)
		;
	return i;
}

/* Run the automaton up to stream offset stop over b (at rf_base). */
static int
rf_nfa_run(struct reflect *r, const uint8_t *b, size_t stop)
{
	size_t	 pos = r->rf_nfa_pos, base = r->rf_base;

	while (pos < stop) {
		if (r->rf_idle) {
			pos = base + rf_next_start(r, b, pos - base,
			    stop - base);
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
 * 0xff for each offset k of b[0..16) that may begin an escaped unit: a '%'
 * and two hex digits, or a '\' and "u00" and an ASCII high digit or a short
 * escape of a byte of the secret; b must hold 20 bytes.
 */
static rf_vec
rf_escape_vec(const struct reflect *r, const uint8_t *b)
{
	rf_vec		 v0, v1, v2, v3, v4, esc;
	size_t		 k;

	memcpy(&v0, b, 16);
	memcpy(&v1, b + 1, 16);
	memcpy(&v2, b + 2, 16);
	memcpy(&v3, b + 3, 16);
	memcpy(&v4, b + 4, 16);
	esc = (rf_vec)(v1 == 'u') & (rf_vec)(v2 == '0') & (rf_vec)(v3 == '0') &
	    (rf_vec)(v4 - '0' < 8);
	for (k = 0; k < r->rf_nescv; k++)
		esc |= (rf_vec)(v1 == r->rf_escv[k]);
	return ((rf_vec)(v0 == '%') & rf_vec_ishex(v1) & rf_vec_ishex(v2)) |
	    ((rf_vec)(v0 == '\\') & esc);
}

/*
 * Bit k for each offset k of b[0..32) that may begin an escaped unit; b
 * must hold 36 bytes.  Sixteen offsets at a time: in text a '%' or a '\'
 * alone is too common for memchr(3) to go far.
 */
static uint32_t
rf_escape_mask(const struct reflect *r, const uint8_t *b)
{
	rf_vec		 h0, h1, any;
	uint64_t	 w[2];
	uint32_t	 mask;

	/* Most blocks of text have neither '%' nor '\': settle those first. */
	memcpy(&h0, b, 16);
	memcpy(&h1, b + 16, 16);
	any = (rf_vec)(h0 == '%') | (rf_vec)(h0 == '\\') |
	    (rf_vec)(h1 == '%') | (rf_vec)(h1 == '\\');
	memcpy(w, &any, sizeof(w));
	if ((w[0] | w[1]) == 0)
		return 0;
	h0 = rf_escape_vec(r, b);
	h1 = rf_escape_vec(r, b + 16);
	any = h0 | h1;
	memcpy(w, &any, sizeof(w));
	if ((w[0] | w[1]) == 0)
		return 0;
	memcpy(w, &h0, sizeof(w));
	mask = rf_movemask(w[0]) | rf_movemask(w[1]) << 8;
	memcpy(w, &h1, sizeof(w));
	return mask | rf_movemask(w[0]) << 16 | rf_movemask(w[1]) << 24;
}

/*
 * Whether the escaped unit at b (n bytes follow) stands for a byte of the
 * secret: 1 or 0, -1 when that depends on bytes still to come.
 */
static int
rf_unit(const struct reflect *r, const uint8_t *b, size_t n)
{
	if (b[0] == '%') {
		if (n < 3)
			return -1;
		return rf_hex1[b[1]] != 0 && rf_hex1[b[2]] != 0 &&
		    r->rf_cls[(rf_hex1[b[1]] - 1) << 4 | (rf_hex1[b[2]] - 1)];
	}
	if (n < 2)
		return -1;
	if (b[1] != 'u')
		return r->rf_esc[b[1]] != 0;
	if ((n > 2 && b[2] != '0') || (n > 3 && b[3] != '0') ||
	    (n > 4 && (rf_hex1[b[4]] == 0 || rf_hex1[b[4]] > 8)) ||
	    (n > 5 && rf_hex1[b[5]] == 0))
		return 0;
	if (n < 6)
		return -1;
	return r->rf_cls[(rf_hex1[b[4]] - 1) << 4 | (rf_hex1[b[5]] - 1)] != 0;
}

/* Run the automaton around an escaped unit at stream offset at. */
static int
rf_trigger(struct reflect *r, const uint8_t *b, size_t at, size_t end)
{
	size_t	 base = r->rf_base, from;

	/* No occurrence starts in what was released. */
	from = at - base > r->rf_m - 1 ? at - (r->rf_m - 1) : base;
	if (r->rf_nfa_pos < from) {
		rf_nfa_reset(r);
		r->rf_nfa_pos = from;
	}
	if (r->rf_nfa_until < at + RF_UNIT_MAX * r->rf_m)
		r->rf_nfa_until = at + RF_UNIT_MAX * r->rf_m;
	return rf_nfa_run(r, b, r->rf_nfa_until < end ? r->rf_nfa_until : end);
}

/*
 * Look at every escaped unit not looked at yet (once it is whole), and run
 * the automaton around those that stand for a byte of the secret.
 */
static int
rf_escaped(struct reflect *r, const uint8_t *b, size_t n)
{
	size_t		 base = r->rf_base, end = base + n, t, at;
	uint32_t	 mask;
	int		 k;

	if (r->rf_nfa_pos < r->rf_nfa_until &&
	    rf_nfa_run(r, b, r->rf_nfa_until < end ? r->rf_nfa_until : end))
		return 1;
	t = r->rf_trig_pos > base ? r->rf_trig_pos - base : 0;
	/*
	 * Blocks of 32 offsets whose units all have their bytes, the last
	 * one overlapping the one before; then the last few one at a time.
	 */
	while (n - t >= RF_UNIT_MAX && n >= RF_BLOCK) {
		at = n - t >= RF_BLOCK ? t : n - RF_BLOCK;
		for (mask = rf_escape_mask(r, b + at) >> (t - at); mask != 0;
		    mask &= mask - 1) {
			k = __builtin_ctz(mask);
			if (rf_unit(r, b + t + k, n - t - k) == 1 &&
			    rf_trigger(r, b, base + t + k, end))
				return 1;
		}
		t = at + 32;
	}
	for (; t < n; t++) {
		if (b[t] != '%' && b[t] != '\\')
			continue;
		if ((k = rf_unit(r, b + t, n - t)) == -1)
			break;
		if (k == 1 && rf_trigger(r, b, base + t, end))
			return 1;
	}
	r->rf_trig_pos = base + t;
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
	if (need > r->rf_cap) {
		cap = r->rf_cap != 0 ? r->rf_cap : 4096;
		while (cap < need)
			cap = cap > SIZE_MAX / 2 ? need : cap * 2;
		if ((nb = realloc(r->rf_buf, cap)) == NULL)
			return -1;
		r->rf_buf = nb;
		r->rf_cap = cap;
	}
	/* What reflect_reset() and reflect_free() wipe. */
	if (need > r->rf_hw)
		r->rf_hw = need;
	return 0;
}

/*
 * reflect_feed() when nothing is held back: the chunk is searched where it
 * is, released from there, and only the tail it holds back is copied.
 */
static int
rf_feed_direct(struct reflect *r, const uint8_t *in, size_t len,
    const void **out, size_t *outlen)
{
	uint8_t	*buf = r->rf_buf;
	size_t	 cap = r->rf_cap, budget, keep;
	int	 hit;

	hit = rf_fixed(r, in, len) || rf_escaped(r, in, len);
	if (!hit) {
		/* rf_tail() reads the stream from rf_buf. */
		r->rf_buf = (uint8_t *)(uintptr_t)in;
		r->rf_len = len;
		budget = len < r->rf_tailmax ? RF_SCAN_MIN + 4 * len :
		    r->rf_tailmax;
		keep = rf_tail(r, budget);
		r->rf_buf = buf;
		r->rf_cap = cap;
		r->rf_len = 0;
	}
	if (hit) {
		r->rf_state = RF_FAILED;
		return -1;
	}
	if (rf_reserve(r, keep) == -1) {
		r->rf_state = RF_FAILED;
		r->rf_nomem = 1;
		errno = ENOMEM;
		return -1;
	}
	if (keep > 0)
		memcpy(r->rf_buf, in + len - keep, keep);
	r->rf_len = keep;
	r->rf_base += len - keep;
	r->rf_out = 0;
	if (len > keep) {
		*out = in;
		*outlen = len - keep;
	}
	return 0;
}

int
reflect_feed(struct reflect *r, const void *in, size_t len,
    const void **out, size_t *outlen)
{
	size_t	 old, from, budget, lmax = r->rf_lmax;

	*out = rf_none;
	*outlen = 0;
	if (r->rf_state != RF_OPEN)
		return -1;
	if (len == 0)
		return 0;
	rf_compact(r);
	if (r->rf_len == 0)
		return rf_feed_direct(r, in, len, out, outlen);
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
	 * start at most lmax - 1 bytes back, and never before the buffer,
	 * which begins with the held-back tail; the automaton keeps its place.
	 */
	from = old > lmax - 1 ? old - (lmax - 1) : 0;
	if (rf_fixed(r, r->rf_buf + from, r->rf_len - from) ||
	    rf_escaped(r, r->rf_buf, r->rf_len)) {
		r->rf_state = RF_FAILED;
		return -1;
	}
	/* Bounded per call; large chunks always get an exact answer. */
	budget = len < r->rf_tailmax ? RF_SCAN_MIN + 4 * len : r->rf_tailmax;
	r->rf_out = r->rf_len - rf_tail(r, budget);
	if (r->rf_out > 0) {
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

void
reflect_reset(struct reflect *r)
{
	/* Held-back bytes can be most of the secret: every byte the buffer
	 * ever held goes. */
	if (r->rf_buf != NULL)
		explicit_bzero(r->rf_buf, r->rf_hw);
	r->rf_hw = 0;
	rf_nfa_reset(r);
	r->rf_nfa_pos = r->rf_nfa_until = r->rf_trig_pos = 0;
	r->rf_len = r->rf_out = r->rf_base = 0;
	r->rf_state = RF_OPEN;
	r->rf_nomem = 0;
}

int
reflect_search(struct reflect *r, const char *s, size_t len)
{
	const void	*out;
	size_t		 outlen;
	int		 rv = 0;

	reflect_reset(r);
	/* Every variant is at least rf_lmin bytes long (raw is one of them,
	 * and the escaped one takes a byte or more per secret byte): a
	 * shorter text, a header value most often, holds none. */
	if (len < r->rf_lmin)
		return 0;
	if (reflect_feed(r, s, len, &out, &outlen) == -1)
		rv = r->rf_nomem ? -1 : 1;
	reflect_reset(r);
	return rv;
}

int
reflect_contains(const char *secret, size_t slen, const char *s, size_t len)
{
	struct reflect	*r;
	int		 rv;

	if ((r = reflect_new(secret, slen)) == NULL)
		return -1;
	rv = reflect_search(r, s, len);
	reflect_free(r);
	return rv;
}
