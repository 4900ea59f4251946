/*
 * wjson, the worker's own JSON: what RFC 8259 allows is taken, what it
 * does not is refused with the right error, every bound is tested at the
 * limit and one past it, and what the emitter writes parses back equal.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "wjson.h"

static struct wjson *
parse_lim(const char *s, size_t len, const struct wjson_limits *lim,
    enum wjson_err *errp, size_t *offp)
{
	struct wjson_error	 err;
	struct wjson		*v;

	memset(&err, 0xff, sizeof(err));
	v = wjson_parse(s, len, lim, &err);
	if (v != NULL)
		ck_assert_int_eq(err.we_err, WJSON_OK);
	else
		ck_assert_int_ne(err.we_err, WJSON_OK);
	if (errp != NULL)
		*errp = err.we_err;
	if (offp != NULL)
		*offp = err.we_offset;
	return v;
}

static struct wjson *
parse_ok(const char *s)
{
	struct wjson	*v;

	v = parse_lim(s, strlen(s), NULL, NULL, NULL);
	ck_assert_msg(v != NULL, "refused: %s", s);
	return v;
}

static enum wjson_err
parse_err_len(const char *s, size_t len, const struct wjson_limits *lim)
{
	struct wjson	*v;
	enum wjson_err	 e;

	v = parse_lim(s, len, lim, &e, NULL);
	ck_assert_msg(v == NULL, "accepted: %.*s", (int)len, s);
	return e;
}

static enum wjson_err
parse_err(const char *s)
{
	return parse_err_len(s, strlen(s), NULL);
}

static char *
emit(const struct wjson *v)
{
	char	*out;
	size_t	 len;

	out = wjson_emit_str(v, 0, &len);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(strlen(out), len);
	return out;
}

/* Parse, emit, parse again: the trees are equal and so are the texts. */
static void
round_trip(const char *s, size_t len)
{
	struct wjson	*a, *b;
	char		*ea, *eb;
	size_t		 la, lb;

	a = parse_lim(s, len, NULL, NULL, NULL);
	ck_assert_ptr_nonnull(a);
	ea = wjson_emit_str(a, 0, &la);
	ck_assert_ptr_nonnull(ea);
	b = parse_lim(ea, la, NULL, NULL, NULL);
	ck_assert_ptr_nonnull(b);
	ck_assert(wjson_equal(a, b));
	eb = wjson_emit_str(b, 0, &lb);
	ck_assert_ptr_nonnull(eb);
	ck_assert_uint_eq(la, lb);
	ck_assert(memcmp(ea, eb, la) == 0);
	free(ea);
	free(eb);
	wjson_free(a);
	wjson_free(b);
}

static char *
nested(const char *open, const char *mid, const char *close, int n)
{
	size_t	 lo = strlen(open), lm = strlen(mid), lc = strlen(close);
	char	*s, *p;
	int	 i;

	s = malloc(n * (lo + lc) + lm + 1);
	ck_assert_ptr_nonnull(s);
	p = s;
	for (i = 0; i < n; i++, p += lo)
		memcpy(p, open, lo);
	memcpy(p, mid, lm);
	p += lm;
	for (i = 0; i < n; i++, p += lc)
		memcpy(p, close, lc);
	*p = '\0';
	return s;
}

/*
 * Grammar.
 */

START_TEST(scalars)
{
	struct wjson	*v;

	v = parse_ok("null");
	ck_assert_int_eq(v->j_type, WJSON_NULL);
	wjson_free(v);
	v = parse_ok("true");
	ck_assert_int_eq(v->j_type, WJSON_BOOL);
	ck_assert_int_eq(v->j_bool, 1);
	wjson_free(v);
	v = parse_ok(" \t\r\nfalse \t\r\n");
	ck_assert_int_eq(v->j_type, WJSON_BOOL);
	ck_assert_int_eq(v->j_bool, 0);
	wjson_free(v);
	v = parse_ok("\"abc\"");
	ck_assert_int_eq(v->j_type, WJSON_STRING);
	ck_assert_uint_eq(v->j_len, 3);
	ck_assert_str_eq(v->j_str, "abc");
	wjson_free(v);
	v = parse_ok("\"\"");
	ck_assert_uint_eq(v->j_len, 0);
	ck_assert_str_eq(v->j_str, "");
	wjson_free(v);
}
END_TEST

START_TEST(numbers)
{
	static const char	*good[] = {
		"0", "-0", "1", "-1", "10", "1.5", "-0.25", "1e10", "1E10",
		"1e+10", "1E-10", "0e0", "-0.0e-0", "123.456e789",
		"123456789012345678901234567890",
		"0.00000000000000000000000000001",
	};
	static const char	*bad[] = {
		"01", "-01", "-", "+1", ".5", "1.", "1.e5", "1e", "1e+", "1e-",
		"0x10", "NaN", "Infinity", "-Infinity", "- 1", "1.5.5", "00",
		"1e5.5", "--1", "0.", "-.5",
	};
	struct wjson	*v;
	enum wjson_err	 e;
	size_t		 i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		v = parse_ok(good[i]);
		ck_assert_int_eq(v->j_type, WJSON_NUMBER);
		/* Kept as written: nothing is lost, nothing is locale's. */
		ck_assert_str_eq(v->j_str, good[i]);
		wjson_free(v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		e = parse_err(bad[i]);
		ck_assert_msg(e == WJSON_ERR_NUMBER ||
		    e == WJSON_ERR_TRAILING || e == WJSON_ERR_SYNTAX,
		    "%s: %s", bad[i],
		    wjson_err_to_string(e));
	}
	ck_assert_int_eq(parse_err("01"), WJSON_ERR_TRAILING);
	ck_assert_int_eq(parse_err("-"), WJSON_ERR_NUMBER);
	ck_assert_int_eq(parse_err("1."), WJSON_ERR_NUMBER);
	ck_assert_int_eq(parse_err("1e+"), WJSON_ERR_NUMBER);
	ck_assert_int_eq(parse_err("NaN"), WJSON_ERR_SYNTAX);
	ck_assert_int_eq(parse_err("[1.]"), WJSON_ERR_NUMBER);
}
END_TEST

START_TEST(containers)
{
	struct wjson	*v, *c;

	v = parse_ok("[]");
	ck_assert_int_eq(v->j_type, WJSON_ARRAY);
	ck_assert_uint_eq(v->j_count, 0);
	wjson_free(v);
	v = parse_ok("{}");
	ck_assert_int_eq(v->j_type, WJSON_OBJECT);
	ck_assert_uint_eq(v->j_count, 0);
	wjson_free(v);
	v = parse_ok(" { \"a\" : [ 1 , true , null , \"x\" , { } , [ ] ] ,"
	    " \"b\" : { \"c\" : -2 } } ");
	ck_assert_uint_eq(v->j_count, 2);
	c = wjson_get(v, "a");
	ck_assert(wjson_is(c, WJSON_ARRAY));
	ck_assert_uint_eq(c->j_count, 6);
	ck_assert_int_eq(c->j_head->j_type, WJSON_NUMBER);
	ck_assert_int_eq(c->j_tail->j_type, WJSON_ARRAY);
	c = wjson_get(wjson_get(v, "b"), "c");
	ck_assert_str_eq(c->j_str, "-2");
	ck_assert_ptr_null(wjson_get(v, "z"));
	ck_assert_ptr_null(wjson_get(c, "a"));
	wjson_free(v);
}
END_TEST

START_TEST(syntax_refusals)
{
	static const char	*bad[] = {
		"[", "]", "{", "}", "[1", "[1,", "[1,]", "[,1]", "[1 2]",
		"{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{,}", "{\"a\" 1}",
		"{a:1}", "{'a':1}", "['a']", "{\"a\":1}}", "[1]]", "{}{}",
		"nul", "nulll", "tru", "truex", "True", "FALSE", "None",
		"/* c */1", "1 // c", "[1,/*x*/2]", "\"abc", "\"abc\\\"",
		"[\"a\":1]", "{\"a\":1:2}", "{1:2}", "{null:1}",
		"\xef\xbb\xbf{}",
		"\f1", "1\f", "\v1", "[1\x00]", "@", "'x'", "{\"a\"::1}",
	};
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		(void)parse_err(bad[i]);
	ck_assert_int_eq(parse_err(""), WJSON_ERR_EMPTY);
	ck_assert_int_eq(parse_err(" \n\t\r"), WJSON_ERR_EMPTY);
	ck_assert_int_eq(parse_err("1 2"), WJSON_ERR_TRAILING);
	ck_assert_int_eq(parse_err("{}{}"), WJSON_ERR_TRAILING);
	ck_assert_int_eq(parse_err("[1,]"), WJSON_ERR_SYNTAX);
	ck_assert_int_eq(parse_err("truex"), WJSON_ERR_TRAILING);
	/* An embedded NUL ends nothing: the length given is the length. */
	ck_assert_int_eq(parse_err_len("1\0", 2, NULL), WJSON_ERR_TRAILING);
}
END_TEST

START_TEST(error_offsets)
{
	size_t	 off;

	ck_assert_ptr_null(parse_lim("[1,]", 4, NULL, NULL, &off));
	ck_assert_uint_eq(off, 3);
	ck_assert_ptr_null(parse_lim("1 2", 3, NULL, NULL, &off));
	ck_assert_uint_eq(off, 2);
	ck_assert_ptr_null(parse_lim("[\"a\x01\"]", 6, NULL, NULL, &off));
	ck_assert_uint_eq(off, 3);
	ck_assert_ptr_null(parse_lim("[\"\\q\"]", 6, NULL, NULL, &off));
	ck_assert_uint_eq(off, 2);
}
END_TEST

START_TEST(duplicates)
{
	char	 buf[1024];
	int	 i, n;

	ck_assert_int_eq(parse_err("{\"a\":1,\"a\":2}"), WJSON_ERR_DUPLICATE);
	ck_assert_int_eq(parse_err("{\"a\":1,\"b\":{\"c\":1,\"c\":1}}"),
	    WJSON_ERR_DUPLICATE);
	/* The same name spelled two ways is still the same name. */
	ck_assert_int_eq(parse_err("{\"a\":1,\"\\u0061\":2}"),
	    WJSON_ERR_DUPLICATE);
	/* A name and its prefix plus NUL differ. */
	wjson_free(parse_ok("{\"a\":1,\"a\\u0000\":2}"));
	wjson_free(parse_ok("[{\"a\":1},{\"a\":2}]"));

	/* Past eight members the check sorts; both paths must agree. */
	for (i = 0, n = 0; i < 40; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s\"k%d\":%d",
		    i == 0 ? "{" : ",", i, i);
	snprintf(buf + n, sizeof(buf) - n, "}");
	wjson_free(parse_ok(buf));
	for (i = 0, n = 0; i < 40; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s\"k%d\":%d",
		    i == 0 ? "{" : ",", i == 39 ? 0 : i, i);
	snprintf(buf + n, sizeof(buf) - n, "}");
	ck_assert_int_eq(parse_err(buf), WJSON_ERR_DUPLICATE);
	for (i = 0, n = 0; i < 9; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s\"%.*s\":1",
		    i == 0 ? "{" : ",", i + 1, "aaaaaaaaa");
	snprintf(buf + n, sizeof(buf) - n, "}");
	wjson_free(parse_ok(buf));
}
END_TEST

/*
 * Strings.
 */

START_TEST(escapes)
{
	struct wjson	*v;

	v = parse_ok("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"");
	ck_assert_uint_eq(v->j_len, 8);
	ck_assert(memcmp(v->j_str, "\"\\/\b\f\n\r\t", 8) == 0);
	wjson_free(v);
	v = parse_ok("\"\\u0041\\u00e9\\u20AC\\uffff\"");
	ck_assert_str_eq(v->j_str, "A\xc3\xa9\xe2\x82\xac\xef\xbf\xbf");
	wjson_free(v);
	v = parse_ok("\"\\ud83d\\ude00\\uD800\\uDC00\\uDBFF\\uDFFF\"");
	ck_assert_str_eq(v->j_str,
	    "\xf0\x9f\x98\x80\xf0\x90\x80\x80\xf4\x8f\xbf\xbf");
	wjson_free(v);
	v = parse_ok("\"a\\u0000b\"");
	ck_assert_uint_eq(v->j_len, 3);
	ck_assert(memcmp(v->j_str, "a\0b", 4) == 0);
	wjson_free(v);
	/* Raw DEL and C1 characters are text, not control characters. */
	v = parse_ok("\"\x7f\xc2\x80\xc2\x9f\"");
	ck_assert_uint_eq(v->j_len, 5);
	wjson_free(v);
}
END_TEST

START_TEST(escape_refusals)
{
	ck_assert_int_eq(parse_err("\"\\x41\""), WJSON_ERR_ESCAPE);
	ck_assert_int_eq(parse_err("\"\\'\""), WJSON_ERR_ESCAPE);
	ck_assert_int_eq(parse_err("\"\\U0041\""), WJSON_ERR_ESCAPE);
	ck_assert_int_eq(parse_err("\"\\u12\""), WJSON_ERR_ESCAPE);
	ck_assert_int_eq(parse_err("\"\\u12g4\""), WJSON_ERR_ESCAPE);
	ck_assert_int_eq(parse_err("\"\\u\""), WJSON_ERR_ESCAPE);
	ck_assert_int_eq(parse_err("\"\\ \""), WJSON_ERR_ESCAPE);
	ck_assert_int_eq(parse_err("\"\\0\""), WJSON_ERR_ESCAPE);
	ck_assert_int_eq(parse_err("\"\\ud800\""), WJSON_ERR_SURROGATE);
	ck_assert_int_eq(parse_err("\"\\ud800x\""), WJSON_ERR_SURROGATE);
	ck_assert_int_eq(parse_err("\"\\ud800\\u0041\""),
	    WJSON_ERR_SURROGATE);
	ck_assert_int_eq(parse_err("\"\\ud800\\ud800\""),
	    WJSON_ERR_SURROGATE);
	ck_assert_int_eq(parse_err("\"\\ud800\\n\""), WJSON_ERR_SURROGATE);
	ck_assert_int_eq(parse_err("\"\\udc00\""), WJSON_ERR_SURROGATE);
	ck_assert_int_eq(parse_err("\"\\udfff\\ud800\""),
	    WJSON_ERR_SURROGATE);
	ck_assert_int_eq(parse_err("\"\\ud800\\udc0\""), WJSON_ERR_SURROGATE);
	/* In a name as in a value. */
	ck_assert_int_eq(parse_err("{\"\\udc00\":1}"), WJSON_ERR_SURROGATE);
}
END_TEST

START_TEST(control_refusals)
{
	char	 buf[8];
	int	 c;

	for (c = 0; c < 0x20; c++) {
		buf[0] = '"';
		buf[1] = 'a';
		buf[2] = (char)c;
		buf[3] = '"';
		ck_assert_int_eq(parse_err_len(buf, 4, NULL),
		    WJSON_ERR_CONTROL);
	}
	buf[2] = 0x20;
	wjson_free(parse_lim(buf, 4, NULL, NULL, NULL));
}
END_TEST

START_TEST(utf8_refusals)
{
	static const char	*bad[] = {
		"\"\x80\"", "\"\xbf\"", "\"\xc0\x80\"", "\"\xc1\xbf\"",
		"\"\xe0\x80\x80\"", "\"\xe0\x9f\xbf\"", "\"\xed\xa0\x80\"",
		"\"\xed\xbf\xbf\"", "\"\xf0\x80\x80\x80\"",
		"\"\xf0\x8f\xbf\xbf\"", "\"\xf4\x90\x80\x80\"",
		"\"\xf5\x80\x80\x80\"", "\"\xff\"", "\"\xfe\"",
		"\"\xe2\x82\"", "\"\xe2\x82x\"", "\"\xf0\x9f\x98\"",
		"\"\xc3\"", "\"\xc3\xc3\"", "{\"\xc3\":1}",
	};
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse_err(bad[i]) == WJSON_ERR_UTF8, "%zu", i);
	/* Outside strings a high byte is no value at all. */
	ck_assert_int_eq(parse_err("\xc3\xa9"), WJSON_ERR_SYNTAX);
}
END_TEST

static size_t
ref_put(unsigned long cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Every scalar value decodes to itself; every surrogate is refused.  The
 * loop counts mismatches: a Check assertion per value would be slow.
 */
START_TEST(utf8_every_scalar)
{
	unsigned long	 cp, got, bad = 0, first = 0;
	char		 buf[4];
	size_t		 n, want;
	int		 ok;

	for (cp = 0; cp <= 0x10ffff; cp++) {
		n = ref_put(cp, buf);
		if (cp >= 0xd800 && cp <= 0xdfff)
			ok = wjson_utf8_next(buf, n, &got) == 0;
		else {
			want = cp >= 0x10000 ? 2 : 1;
			ok = wjson_utf8_next(buf, n, &got) == (int)n &&
			    got == cp && wjson_utf16_len(buf, n) == want &&
			    wjson_utf8_valid(buf, n) &&
			    /* One byte short is never a character. */
			    (n == 1 || wjson_utf8_next(buf, n - 1, &got) == 0);
		}
		if (!ok && bad++ == 0)
			first = cp;
	}
	ck_assert_msg(bad == 0, "%lu wrong, first U+%04lX", bad, first);
}
END_TEST

/* Every two-byte lead and trail: only C2-DF with 80-BF are one character. */
START_TEST(utf8_every_pair)
{
	unsigned long	 cp, bad = 0;
	char		 buf[2];
	int		 a, b, want;

	for (a = 0x80; a < 0x100; a++) {
		for (b = 0; b < 0x100; b++) {
			buf[0] = (char)a;
			buf[1] = (char)b;
			want = a >= 0xc2 && a <= 0xdf && b >= 0x80 && b <= 0xbf;
			if (wjson_utf8_next(buf, 2, &cp) != (want ? 2 : 0))
				bad++;
		}
	}
	ck_assert_uint_eq(bad, 0);
}
END_TEST

START_TEST(utf16_counts)
{
	const char	*s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";

	ck_assert_uint_eq(wjson_utf16_len("", 0), 0);
	ck_assert_uint_eq(wjson_utf16_len("abc", 3), 3);
	ck_assert_uint_eq(wjson_utf16_len(s, strlen(s)), 5);

	/* Cuts fall between characters and never split a pair. */
	ck_assert_uint_eq(wjson_utf8_cut(s, strlen(s), 0), 0);
	ck_assert_uint_eq(wjson_utf8_cut(s, strlen(s), 1), 1);
	ck_assert_uint_eq(wjson_utf8_cut(s, strlen(s), 2), 3);
	ck_assert_uint_eq(wjson_utf8_cut(s, strlen(s), 3), 6);
	ck_assert_uint_eq(wjson_utf8_cut(s, strlen(s), 4), 6);
	ck_assert_uint_eq(wjson_utf8_cut(s, strlen(s), 5), 10);
	ck_assert_uint_eq(wjson_utf8_cut(s, strlen(s), 6), 10);
	/* A cut also stops at the first byte that is not UTF-8. */
	ck_assert_uint_eq(wjson_utf8_cut("ab\xff" "cd", 5, 100), 2);
	ck_assert_uint_eq(wjson_utf8_valid_prefix("ab\xe2\x82", 4), 2);
	ck_assert(wjson_utf8_valid(s, strlen(s)));
	ck_assert(!wjson_utf8_valid("\xe2\x82", 2));
	ck_assert(wjson_utf8_valid("a\0b", 3));
}
END_TEST

/*
 * Limits.
 */

START_TEST(limit_depth)
{
	struct wjson_limits	 lim = { 0, 3, 0, 0 };
	char			*s;

	wjson_free(parse_lim("[[[1]]]", 7, &lim, NULL, NULL));
	ck_assert_int_eq(parse_err_len("[[[[1]]]]", 9, &lim), WJSON_ERR_DEPTH);
	wjson_free(parse_lim("{\"a\":{\"b\":[1]}}", 15, &lim, NULL, NULL));
	ck_assert_int_eq(parse_err_len("{\"a\":{\"b\":[[]]}}", 16, &lim),
	    WJSON_ERR_DEPTH);
	/* A scalar is depth 0, so depth 3 holds three containers. */
	wjson_free(parse_lim("[{},[],[{}]]", 12, &lim, NULL, NULL));

	/* The default, at and past it. */
	s = nested("[", "", "]", WJSON_DEPTH_DEFAULT);
	wjson_free(parse_lim(s, strlen(s), NULL, NULL, NULL));
	free(s);
	s = nested("[", "", "]", WJSON_DEPTH_DEFAULT + 1);
	ck_assert_int_eq(parse_err(s), WJSON_ERR_DEPTH);
	free(s);
	s = nested("{\"a\":", "1", "}", WJSON_DEPTH_DEFAULT + 1);
	ck_assert_int_eq(parse_err(s), WJSON_ERR_DEPTH);
	free(s);

	/* A larger request is capped where the stack stays safe. */
	lim.wl_depth_max = 100000;
	s = nested("[", "", "]", WJSON_DEPTH_HARD);
	wjson_free(parse_lim(s, strlen(s), &lim, NULL, NULL));
	free(s);
	s = nested("[", "", "]", WJSON_DEPTH_HARD + 1);
	ck_assert_int_eq(parse_err_len(s, strlen(s), &lim), WJSON_ERR_DEPTH);
	free(s);
	s = nested("[", "", "]", 200000);
	ck_assert_int_eq(parse_err_len(s, strlen(s), &lim), WJSON_ERR_DEPTH);
	free(s);
}
END_TEST

START_TEST(limit_input)
{
	struct wjson_limits	 lim = { 10, 0, 0, 0 };

	wjson_free(parse_lim("\"12345678\"", 10, &lim, NULL, NULL));
	ck_assert_int_eq(parse_err_len("\"123456789\"", 11, &lim),
	    WJSON_ERR_TOO_BIG);
	/* Spaces count: the bound is on the text, not the value. */
	ck_assert_int_eq(parse_err_len("1          ", 11, &lim),
	    WJSON_ERR_TOO_BIG);
}
END_TEST

START_TEST(limit_string)
{
	struct wjson_limits	 lim = { 0, 0, 5, 0 };

	wjson_free(parse_lim("\"abcde\"", 7, &lim, NULL, NULL));
	ck_assert_int_eq(parse_err_len("\"abcdef\"", 8, &lim),
	    WJSON_ERR_STRING_LONG);
	/* Decoded bytes count: two escapes of two bytes each and one more. */
	wjson_free(parse_lim("\"\\u00e9\\u00e9a\"", 15, &lim, NULL, NULL));
	ck_assert_int_eq(parse_err_len("\"\\u00e9\\u00e9ab\"", 16, &lim),
	    WJSON_ERR_STRING_LONG);
	ck_assert_int_eq(parse_err_len("\"\\u20ac\\u20ac\"", 14, &lim),
	    WJSON_ERR_STRING_LONG);
	/* Names and numbers are bounded the same way. */
	wjson_free(parse_lim("{\"abcde\":1}", 11, &lim, NULL, NULL));
	ck_assert_int_eq(parse_err_len("{\"abcdef\":1}", 12, &lim),
	    WJSON_ERR_STRING_LONG);
	wjson_free(parse_lim("12345", 5, &lim, NULL, NULL));
	ck_assert_int_eq(parse_err_len("123456", 6, &lim),
	    WJSON_ERR_STRING_LONG);
}
END_TEST

START_TEST(limit_nodes)
{
	struct wjson_limits	 lim = { 0, 0, 0, 3 };

	wjson_free(parse_lim("[1,2]", 5, &lim, NULL, NULL));
	ck_assert_int_eq(parse_err_len("[1,2,3]", 7, &lim), WJSON_ERR_NODES);
	wjson_free(parse_lim("{\"a\":[]}", 8, &lim, NULL, NULL));
	wjson_free(parse_lim("{\"a\":[1]}", 9, &lim, NULL, NULL));
	ck_assert_int_eq(parse_err_len("{\"a\":[1],\"b\":1}", 15, &lim),
	    WJSON_ERR_NODES);
}
END_TEST

/*
 * The emitter.
 */

START_TEST(emit_compact)
{
	struct wjson	*v;
	char		*out;

	v = parse_ok(" { \"a\" : [ 1 , true , null , \"x\" , { } , [ ] ] ,"
	    " \"b\" : { \"c\" : -2.5E+3 } } ");
	out = emit(v);
	ck_assert_str_eq(out,
	    "{\"a\":[1,true,null,\"x\",{},[]],\"b\":{\"c\":-2.5E+3}}");
	free(out);
	wjson_free(v);
}
END_TEST

START_TEST(emit_escapes)
{
	struct wjson	*v;
	char		 raw[0x20 + 3];
	char		*out;
	int		 c;

	for (c = 0; c < 0x20; c++)
		raw[c] = (char)c;
	raw[0x20] = '"';
	raw[0x21] = '\\';
	raw[0x22] = '/';
	v = wjson_string_len(raw, sizeof(raw));
	ck_assert_ptr_nonnull(v);
	out = emit(v);
	ck_assert_str_eq(out, "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005"
	    "\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f\\u0010\\u0011"
	    "\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a"
	    "\\u001b\\u001c\\u001d\\u001e\\u001f\\\"\\\\/\"");
	free(out);
	wjson_free(v);

	/* Everything else goes out as it is, as UTF-8. */
	v = parse_ok("\"\\u00e9\\ud83d\\ude00\x7f\"");
	out = emit(v);
	ck_assert_str_eq(out, "\"\xc3\xa9\xf0\x9f\x98\x80\x7f\"");
	free(out);
	wjson_free(v);

	/* Names are escaped like values. */
	v = parse_ok("{\"a\\n\\u0000\":\"\\t\"}");
	out = emit(v);
	ck_assert_str_eq(out, "{\"a\\n\\u0000\":\"\\t\"}");
	free(out);
	wjson_free(v);
}
END_TEST

START_TEST(emit_bound)
{
	struct wjson	*v;
	char		*out;
	size_t		 len;

	v = parse_ok("[\"abc\",1]");
	out = wjson_emit_str(v, 9, &len);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(len, 9);
	ck_assert_str_eq(out, "[\"abc\",1]");
	free(out);
	ck_assert_ptr_null(wjson_emit_str(v, 8, &len));
	wjson_free(v);
}
END_TEST

START_TEST(emit_round_trips)
{
	static const char	*docs[] = {
		"null", "true", "false", "0", "-1.5e-7", "\"\"", "[]", "{}",
		"\"\\u0000\\u001f\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
		"\"\\ud83d\\ude00 \\u00e9 \xe2\x82\xac \x7f\"",
		"[[[[[]]]],{\"\":{\"\":[]}}]",
		("{\"a\":1,\"b\":[true,false,null],\"c\":{\"d\":\"e\"},"
		    "\"\\u0000\":0,\"f\":123456789012345678901234567890}"),
		" [ 1 ,\n 2 ,\r\n\t3 ] ",
	};
	size_t			 i;

	for (i = 0; i < sizeof(docs) / sizeof(docs[0]); i++)
		round_trip(docs[i], strlen(docs[i]));
}
END_TEST

/*
 * Building trees.
 */

START_TEST(build_and_get)
{
	struct wjson	*o, *a, *d;
	char		*out;
	long long	 n;
	size_t		 len;

	o = wjson_object();
	ck_assert_int_eq(wjson_set(o, "s", wjson_string("x\"y")), 0);
	ck_assert_int_eq(wjson_set(o, "n", wjson_int(LLONG_MIN)), 0);
	ck_assert_int_eq(wjson_set(o, "m", wjson_int(LLONG_MAX)), 0);
	ck_assert_int_eq(wjson_set(o, "b", wjson_bool(7)), 0);
	ck_assert_int_eq(wjson_set(o, "z", wjson_null()), 0);
	a = wjson_array();
	ck_assert_int_eq(wjson_append(a, wjson_string_len("a\0b", 3)), 0);
	ck_assert_int_eq(wjson_set(o, "a", a), 0);
	out = emit(o);
	ck_assert_str_eq(out, "{\"s\":\"x\\\"y\",\"n\":-9223372036854775808,"
	    "\"m\":9223372036854775807,\"b\":true,\"z\":null,"
	    "\"a\":[\"a\\u0000b\"]}");
	free(out);

	ck_assert_str_eq(wjson_get_str(o, "s", &len), "x\"y");
	ck_assert_uint_eq(len, 3);
	ck_assert_ptr_null(wjson_get_str(o, "n", NULL));
	ck_assert_ptr_null(wjson_get_str(o, "nope", NULL));
	ck_assert_int_eq(wjson_int_value(wjson_get(o, "n"), &n), 0);
	ck_assert(n == LLONG_MIN);
	ck_assert_int_eq(wjson_int_value(wjson_get(o, "m"), &n), 0);
	ck_assert(n == LLONG_MAX);
	ck_assert_int_eq(wjson_int_value(wjson_get(o, "s"), &n), -1);

	/* Setting a name again replaces the member where it stands. */
	ck_assert_int_eq(wjson_set(o, "n", wjson_int(5)), 0);
	ck_assert_uint_eq(o->j_count, 6);
	ck_assert_int_eq(wjson_set(o, "a", wjson_int(6)), 0);
	ck_assert_int_eq(wjson_set(o, "s", wjson_int(4)), 0);
	out = emit(o);
	ck_assert_str_eq(out, "{\"s\":4,\"n\":5,\"m\":9223372036854775807,"
	    "\"b\":true,\"z\":null,\"a\":6}");
	free(out);

	/* Detached members leave the object whole, first, middle or last. */
	d = wjson_detach(o, "s");
	ck_assert_str_eq(d->j_str, "4");
	ck_assert_ptr_null(d->j_key);
	wjson_free(d);
	wjson_free(wjson_detach(o, "b"));
	wjson_free(wjson_detach(o, "a"));
	ck_assert_ptr_null(wjson_detach(o, "a"));
	ck_assert_int_eq(wjson_set(o, "t", wjson_int(7)), 0);
	ck_assert_uint_eq(o->j_count, 4);
	out = emit(o);
	ck_assert_str_eq(out,
	    "{\"n\":5,\"m\":9223372036854775807,\"z\":null,\"t\":7}");
	free(out);
	wjson_free(o);
}
END_TEST

START_TEST(build_failures)
{
	struct wjson	*o, *a;
	char		*bad;
	size_t		 len;

	ck_assert_ptr_null(wjson_string("\xc3"));
	ck_assert_ptr_null(wjson_string_len("\xed\xa0\x80", 3));
	ck_assert_ptr_null(wjson_string(NULL));
	bad = strdup("\xff");
	ck_assert_ptr_null(wjson_string_take(bad, 1));	/* freed */

	/* A member that could not be made spoils the tree for emitting. */
	o = wjson_object();
	ck_assert_int_eq(wjson_set(o, "x", wjson_string("\xc3")), -1);
	ck_assert_ptr_null(wjson_emit_str(o, 0, &len));
	ck_assert_ptr_null(wjson_copy(o));
	wjson_free(o);

	o = wjson_object();
	a = wjson_array();
	ck_assert_int_eq(wjson_append(a, NULL), -1);
	ck_assert_int_eq(wjson_set(o, "a", a), -1);
	ck_assert_ptr_null(wjson_emit_str(o, 0, &len));
	wjson_free(o);

	/* Wrong containers and names that are not UTF-8. */
	a = wjson_array();
	ck_assert_int_eq(wjson_set(a, "k", wjson_int(1)), -1);
	ck_assert(a->j_bad);
	wjson_free(a);
	o = wjson_object();
	ck_assert_int_eq(wjson_append(o, wjson_int(1)), -1);
	wjson_free(o);
	o = wjson_object();
	ck_assert_int_eq(wjson_set(o, "\xff", wjson_int(1)), -1);
	wjson_free(o);
	ck_assert_int_eq(wjson_append(NULL, wjson_int(1)), -1);
	ck_assert_int_eq(wjson_set(NULL, "a", wjson_int(1)), -1);
}
END_TEST

START_TEST(int_values)
{
	static const struct {
		const char	*text;
		int		 ok;
		long long	 value;
	} cases[] = {
		{ "0", 1, 0 },
		{ "-0", 1, 0 },
		{ "42", 1, 42 },
		{ "9223372036854775807", 1, LLONG_MAX },
		{ "9223372036854775808", 0, 0 },
		{ "-9223372036854775808", 1, LLONG_MIN },
		{ "-9223372036854775809", 0, 0 },
		{ "99999999999999999999", 0, 0 },
		{ "1.0", 0, 0 },
		{ "1e2", 0, 0 },
	};
	struct wjson	*v;
	long long	 n;
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = parse_ok(cases[i].text);
		ck_assert_int_eq(wjson_int_value(v, &n), cases[i].ok ? 0 : -1);
		if (cases[i].ok)
			ck_assert(n == cases[i].value);
		wjson_free(v);
	}
	ck_assert_int_eq(wjson_int_value(NULL, &n), -1);
}
END_TEST

START_TEST(copy_and_equal)
{
	struct wjson	*a, *b, *c;

	a = parse_ok("{\"a\":[1,\"x\",{\"b\":null}],\"c\":true}");
	b = wjson_copy(a);
	ck_assert_ptr_nonnull(b);
	ck_assert(wjson_equal(a, b));
	wjson_free(b);

	/* Order, number spelling, and every field matter. */
	c = parse_ok("{\"c\":true,\"a\":[1,\"x\",{\"b\":null}]}");
	ck_assert(!wjson_equal(a, c));
	wjson_free(c);
	c = parse_ok("{\"a\":[1.0,\"x\",{\"b\":null}],\"c\":true}");
	ck_assert(!wjson_equal(a, c));
	wjson_free(c);
	c = parse_ok("{\"a\":[1,\"x\",{\"b\":null}],\"c\":false}");
	ck_assert(!wjson_equal(a, c));
	wjson_free(c);
	c = parse_ok("{\"a\":[1,\"x\",{\"B\":null}],\"c\":true}");
	ck_assert(!wjson_equal(a, c));
	wjson_free(c);
	c = parse_ok("{\"a\":[1,\"x\"],\"c\":true}");
	ck_assert(!wjson_equal(a, c));
	wjson_free(c);
	c = parse_ok("{\"a\":[1,\"x\\u0000\",{\"b\":null}],\"c\":true}");
	ck_assert(!wjson_equal(a, c));
	wjson_free(c);
	ck_assert(!wjson_equal(a, NULL));
	ck_assert(wjson_equal(NULL, NULL));
	wjson_free(a);
}
END_TEST

START_TEST(wbuf_bounds)
{
	struct wbuf	 b;
	char		*p;
	size_t		 len;

	wbuf_init(&b, 10);
	ck_assert_int_eq(wbuf_add(&b, "0123456789", 10), 0);
	ck_assert_str_eq(b.b_data, "0123456789");
	ck_assert_int_eq(wbuf_addc(&b, 'x'), -1);
	ck_assert_int_eq(b.b_err, EFBIG);
	/* Sticky: nothing more goes in, even what would fit. */
	wbuf_reset(&b);
	ck_assert_int_eq(b.b_err, 0);
	ck_assert_int_eq(wbuf_addf(&b, "%d-%s", 12345, "abcd"), 0);
	ck_assert_str_eq(b.b_data, "12345-abcd");
	ck_assert_int_eq(wbuf_addf(&b, "%d", 1), -1);
	ck_assert_ptr_null(wbuf_steal(&b, &len));

	wbuf_init(&b, 0);
	p = wbuf_steal(&b, &len);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_eq(p, "");
	free(p);
	wbuf_free(&b);
}
END_TEST

START_TEST(err_strings)
{
	int	 e;

	for (e = WJSON_OK; e <= WJSON_ERR_DUPLICATE; e++)
		ck_assert_str_ne(wjson_err_to_string(e), "unknown error");
	ck_assert_str_eq(wjson_err_to_string(WJSON_ERR_DUPLICATE + 1),
	    "unknown error");
}
END_TEST

static Suite *
wjson_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("wjson");

	tc = tcase_create("grammar");
	tcase_add_test(tc, scalars);
	tcase_add_test(tc, numbers);
	tcase_add_test(tc, containers);
	tcase_add_test(tc, syntax_refusals);
	tcase_add_test(tc, error_offsets);
	tcase_add_test(tc, duplicates);
	suite_add_tcase(s, tc);

	tc = tcase_create("strings");
	tcase_add_test(tc, escapes);
	tcase_add_test(tc, escape_refusals);
	tcase_add_test(tc, control_refusals);
	tcase_add_test(tc, utf8_refusals);
	tcase_add_test(tc, utf8_every_scalar);
	tcase_add_test(tc, utf8_every_pair);
	tcase_add_test(tc, utf16_counts);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_test(tc, limit_depth);
	tcase_add_test(tc, limit_input);
	tcase_add_test(tc, limit_string);
	tcase_add_test(tc, limit_nodes);
	suite_add_tcase(s, tc);

	tc = tcase_create("emit");
	tcase_add_test(tc, emit_compact);
	tcase_add_test(tc, emit_escapes);
	tcase_add_test(tc, emit_bound);
	tcase_add_test(tc, emit_round_trips);
	suite_add_tcase(s, tc);

	tc = tcase_create("build");
	tcase_add_test(tc, build_and_get);
	tcase_add_test(tc, build_failures);
	tcase_add_test(tc, int_values);
	tcase_add_test(tc, copy_and_equal);
	tcase_add_test(tc, wbuf_bounds);
	tcase_add_test(tc, err_strings);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(wjson_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
