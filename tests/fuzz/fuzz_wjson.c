/*
 * wjson against arbitrary bytes.  Whatever parses must emit, the emitted
 * text must parse back to an equal tree and emit to the same bytes, every
 * string in the tree must be UTF-8, and a parse under tighter limits may
 * only refuse, never read differently.  The UTF-8 cut is checked on the
 * same bytes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wjson.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

static const struct wjson_limits	 lim_wide = {
	1u << 24, 200, 1u << 24, 1u << 20
};
static const struct wjson_limits	 lim_tight = { 4096, 4, 64, 64 };

static void
check_tree(const struct wjson *v, unsigned int depth)
{
	const struct wjson	*c;
	size_t			 n = 0;

	CHECK(depth <= lim_wide.wl_depth_max);
	CHECK(!v->j_bad);
	switch (v->j_type) {
	case WJSON_NULL:
	case WJSON_BOOL:
		CHECK(v->j_str == NULL && v->j_head == NULL);
		break;
	case WJSON_NUMBER:
	case WJSON_STRING:
		CHECK(v->j_str != NULL && v->j_str[v->j_len] == '\0');
		CHECK(wjson_utf8_valid(v->j_str, v->j_len));
		break;
	case WJSON_ARRAY:
	case WJSON_OBJECT:
		for (c = v->j_head; c != NULL; c = c->j_next) {
			if (v->j_type == WJSON_OBJECT) {
				CHECK(c->j_key != NULL);
				CHECK(wjson_utf8_valid(c->j_key, c->j_keylen));
				/* A member is reachable by its name. */
				if (memchr(c->j_key, '\0', c->j_keylen) == NULL)
					CHECK(wjson_get(v, c->j_key) == c);
			} else
				CHECK(c->j_key == NULL);
			check_tree(c, depth + 1);
			if (c->j_next == NULL)
				CHECK(v->j_tail == c);
			n++;
		}
		CHECK(n == v->j_count);
		break;
	}
}

static void
fuzz_round_trip(const char *s, size_t len)
{
	struct wjson_error	 err;
	struct wjson		*a, *b, *t, *c;
	char			*ea, *eb;
	size_t			 la, lb;

	a = wjson_parse(s, len, &lim_wide, &err);
	t = wjson_parse(s, len, &lim_tight, NULL);
	if (a == NULL) {
		CHECK(err.we_err != WJSON_OK && err.we_offset <= len);
		CHECK(wjson_err_to_string(err.we_err) != NULL);
		/* Tighter limits cannot make bad input good. */
		CHECK(t == NULL);
		return;
	}
	CHECK(err.we_err == WJSON_OK);
	check_tree(a, 0);
	if (t != NULL) {
		CHECK(wjson_equal(a, t));
		wjson_free(t);
	}

	ea = wjson_emit_str(a, 0, &la);
	/* A NUL in a string goes out escaped. */
	CHECK(ea != NULL && strlen(ea) == la);
	CHECK(wjson_utf8_valid(ea, la));
	/* Compact output is never longer than what it came from. */
	CHECK(la <= len);
	b = wjson_parse(ea, la, &lim_wide, &err);
	CHECK(b != NULL);
	CHECK(wjson_equal(a, b));
	eb = wjson_emit_str(b, 0, &lb);
	CHECK(eb != NULL && la == lb && memcmp(ea, eb, la) == 0);
	/* A bound one byte short refuses (0 is no bound); the exact one not. */
	if (la > 1)
		CHECK(wjson_emit_str(b, la - 1, &lb) == NULL);
	free(eb);
	eb = wjson_emit_str(b, la, &lb);
	CHECK(eb != NULL && lb == la);
	free(eb);

	c = wjson_copy(a);
	CHECK(c != NULL && wjson_equal(a, c));
	wjson_free(c);
	free(ea);
	wjson_free(a);
	wjson_free(b);
}

static void
fuzz_utf8(const char *s, size_t len)
{
	size_t	 valid, cut, max;

	valid = wjson_utf8_valid_prefix(s, len);
	CHECK(valid <= len && wjson_utf8_valid(s, valid));
	CHECK(wjson_utf8_valid(s, len) == (valid == len));
	max = len > 0 ? (unsigned char)s[0] : 0;
	cut = wjson_utf8_cut(s, len, max);
	CHECK(cut <= valid);
	CHECK(wjson_utf16_len(s, cut) <= max);
	/* The cut is the longest: one more character would not fit. */
	if (cut < valid) {
		unsigned long	 cp;
		int		 n;

		n = wjson_utf8_next(s + cut, len - cut, &cp);
		CHECK(n > 0);
		CHECK(wjson_utf16_len(s, cut + (size_t)n) > max);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_round_trip((const char *)data, size);
	fuzz_utf8((const char *)data, size);
	return 0;
}
