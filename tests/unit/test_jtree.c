/*
 * jtree_parse(): the tree cJSON's parser builds, node for node, on texts
 * at each of its limits and one past them, and every text it refuses.
 */
#include <check.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jtree.h"

#include "../cjson_same.h"

/* text read by both; the two trees and ends alike.  The tree is returned. */
static cJSON *
both(const char *text, size_t len)
{
	const char	*e1 = NULL, *e2 = NULL;
	cJSON		*a, *b;
	int		 nomem = 1;

	a = jtree_parse(text, len, &e1, &nomem);
	ck_assert_int_eq(nomem, 0);
	b = cJSON_ParseWithLengthOpts(text, len, &e2, 0);
	ck_assert_msg((a == NULL) == (b == NULL), "%.60s: jtree %s, cJSON %s",
	    text, a ? "read" : "refused", b ? "read" : "refused");
	if (a != NULL) {
		ck_assert_ptr_eq(e1, e2);
		ck_assert_msg(same_tree(a, b), "%.60s: trees differ", text);
	}
	cJSON_Delete(b);
	return a;
}

static void
refused(const char *text)
{
	const char	*end = NULL;
	int		 nomem = 1;

	ck_assert_msg(jtree_parse(text, strlen(text), &end, &nomem) == NULL,
	    "%s: read", text);
	ck_assert_int_eq(nomem, 0);
}

START_TEST(values_as_cjson)
{
	static const char *const	 texts[] = {
		"{}", "[]", " \t\r\n{ } ", "[ ]", "null", "true", "false",
		"\"\"", "0", "-0", "1.5e-3", "-12E+2", "123456789012",
		"{\"a\":1,\"b\":[true,false,null,\"x\"],\"c\":{\"d\":{}}}",
		"[[[[]]],{},[{\"k\":\"v\"}],-1,2.5,\"s\"]",
		"{ \"a\" : [ 1 , 2 ] , \"b\" : { } }",
		"{\"a\":1,\"a\":2}",
		"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
		"\"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\\uffff\\u0001\"",
		"\"plain text longer than one word of eight bytes\"",
		"\"caf\xc3\xa9 \xe6\x9c\x8d\xe5\x8a\xa1 \xf0\x9f\x98\x80\"",
		"{\"\\u006bey\":\"v\",\"\":\"\"}",
		"[2147483647,2147483648,-2147483648,-2147483649,3e9,-3e9]",
		"[1e400,-1e400,1e-400]",
		"[0.1,0.30000000000000004,9007199254740993]",
	};
	cJSON	*t;
	size_t	 i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		t = both(texts[i], strlen(texts[i]));
		ck_assert_msg(t != NULL, "%s: refused", texts[i]);
		cJSON_Delete(t);
	}
}
END_TEST

START_TEST(numbers_saturate)
{
	cJSON	*t;

	t = both("[3e9,-3e9,1e400,7.9]", 20);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(cJSON_GetArrayItem(t, 0)->valueint, INT_MAX);
	ck_assert_int_eq(cJSON_GetArrayItem(t, 1)->valueint, INT_MIN);
	ck_assert(isinf(cJSON_GetArrayItem(t, 2)->valuedouble));
	ck_assert_int_eq(cJSON_GetArrayItem(t, 2)->valueint, INT_MAX);
	ck_assert_int_eq(cJSON_GetArrayItem(t, 3)->valueint, 7);
	cJSON_Delete(t);
}
END_TEST

/* A number is read whole however long, as Debian's cJSON reads it
 * (upstream's read 63 bytes of it at most). */
START_TEST(number_length)
{
	char	 text[1100];
	cJSON	*t;
	size_t	 n;

	for (n = 62; n <= 1024; n = n < 66 ? n + 1 : n * 2) {
		memset(text, 0, sizeof(text));
		text[0] = '[';
		memset(text + 1, '1', n);
		text[1 + n] = '.';
		text[2 + n] = '5';
		text[3 + n] = ']';
		t = both(text, strlen(text));
		ck_assert_ptr_nonnull(t);
		ck_assert(cJSON_GetArrayItem(t, 0)->valuedouble > 1e61);
		cJSON_Delete(t);
	}
}
END_TEST

/*
 * Integers of up to 15 digits are read without strtod(3): at 1 to 15
 * digits and at 16 (read by strtod(3)), each sign, every digit in every
 * place, and the bytes that end a number early or make strtod(3) stop
 * inside it.  Values are compared bit for bit, -0 included.
 */
START_TEST(short_integers)
{
	static const char *const	 texts[] = {
		"-0", "[0,-0,00,-00,007,-007]", "9007199254740992",
		"[1-2]", "-", "[-]", "--1", "1+", "[1e]", "[12.]", "1.", "0x10",
	};
	char	 text[64];
	cJSON	*t;
	size_t	 n, d;
	int	 neg;

	for (neg = 0; neg <= 1; neg++)
		for (n = 1; n <= 16; n++)
			for (d = 0; d <= 9; d++) {
				snprintf(text, sizeof(text), "[%s", neg ? "-" :
				    "");
				memset(text + strlen(text), (int)('0' + d), n);
				text[1 + neg + n] = '\0';
				/* The last digit other than the rest. */
				text[neg + n] = (char)('0' + (d + 1) % 10);
				strcat(text, ",1]");
				t = both(text, strlen(text));
				ck_assert_msg(t != NULL, "%s: refused", text);
				cJSON_Delete(t);
			}
	t = both("-0", 2);
	ck_assert_ptr_nonnull(t);
	ck_assert(signbit(t->valuedouble));
	cJSON_Delete(t);
	t = both("[999999999999999,-999999999999999]", 34);
	ck_assert_ptr_nonnull(t);
	ck_assert(cJSON_GetArrayItem(t, 0)->valuedouble == 999999999999999.0);
	ck_assert_int_eq(cJSON_GetArrayItem(t, 1)->valueint, INT_MIN);
	cJSON_Delete(t);
	for (n = 0; n < sizeof(texts) / sizeof(texts[0]); n++)
		cJSON_Delete(both(texts[n], strlen(texts[n])));
}
END_TEST

static char *
nested(size_t depth, size_t *len)
{
	char	*s;

	s = malloc(2 * depth + 1);
	ck_assert_ptr_nonnull(s);
	memset(s, '[', depth);
	memset(s + depth, ']', depth);
	s[2 * depth] = '\0';
	*len = 2 * depth;
	return s;
}

START_TEST(depth_limit)
{
	char	*s;
	size_t	 len;
	cJSON	*t;

	s = nested(JTREE_DEPTH_MAX, &len);
	t = both(s, len);
	ck_assert_ptr_nonnull(t);
	cJSON_Delete(t);
	free(s);
	s = nested(JTREE_DEPTH_MAX + 1, &len);
	ck_assert_ptr_null(both(s, len));
	free(s);
}
END_TEST

START_TEST(end_of_value)
{
	const char	*text = "  {\"a\":[1]}  tail", *end = NULL;
	cJSON		*t;
	int		 nomem;

	t = jtree_parse(text, strlen(text), &end, &nomem);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_eq(end, text + 11);
	cJSON_Delete(t);
	/* The length bounds the text, not a NUL. */
	t = jtree_parse("[1,2]", 3, &end, &nomem);
	ck_assert_ptr_null(t);
	t = jtree_parse("\"ab\"", 3, &end, &nomem);
	ck_assert_ptr_null(t);
}
END_TEST

START_TEST(refusals)
{
	static const char *const	 texts[] = {
		"", "   ", "[1,]", "[,1]", "[1 2]", "{\"a\" 1}", "{\"a\":}",
		"{1:2}", "{\"a\":1,}", "{,}", "[", "{", "]", "}", "tru",
		"nul", "fals", "-", "+1", ".5", "\"abc", "\"a\\\"", "\"\\x\"",
		"[\"\\u12\"]",
		/* surrogates only as a pair; U+0000 would cut the string */
		"\"\\udc00\"", "\"\\ud800\"", "\"\\ud800x\"",
		"\"\\ud800\\u0041\"", "\"\\u0000\"",
		/* a raw control character in a string */
		"\"a\x01\"",
	};
	size_t	 i;

	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		refused(texts[i]);
}
END_TEST

/* cJSON's own functions take the tree: the list's tail is found through
 * the first child's prev. */
START_TEST(cjson_takes_it)
{
	const char	*end;
	cJSON		*t, *a;
	char		*out;
	int		 nomem;

	t = jtree_parse("{\"a\":[1,2],\"b\":\"x\"}", 19, &end, &nomem);
	ck_assert_ptr_nonnull(t);
	a = cJSON_GetObjectItemCaseSensitive(t, "a");
	ck_assert_int_eq(cJSON_GetArraySize(a), 2);
	cJSON_AddItemToArray(a, cJSON_CreateNumber(3));
	cJSON_AddStringToObject(t, "c", "y");
	cJSON_DeleteItemFromObject(t, "b");
	ck_assert_ptr_nonnull(out = cJSON_PrintUnformatted(t));
	ck_assert_str_eq(out, "{\"a\":[1,2,3],\"c\":\"y\"}");
	cJSON_free(out);
	cJSON_Delete(t);
}
END_TEST

static Suite *
jtree_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("jtree");
	tc = tcase_create("parse");
	tcase_add_test(tc, values_as_cjson);
	tcase_add_test(tc, numbers_saturate);
	tcase_add_test(tc, number_length);
	tcase_add_test(tc, short_integers);
	tcase_add_test(tc, depth_limit);
	tcase_add_test(tc, end_of_value);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, cjson_takes_it);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(jtree_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
