/*
 * The turn bodies of common/bodies.c at every limit of PROTOCOL.md 3.1, 3.3
 * and 4 and one past it, every refusal, and the decision order of
 * POST /worker/result.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bodies.h"
#include "limits.h"
#include "validate.h"

#define S(lit)		(lit), (sizeof(lit) - 1)
#define BIG_TIMEOUT	300

/* U+1F600, 2 chars. */
static const char	emoji[] = "\xf0\x9f\x98\x80";

static char	errbuf[256];

/* n copies of unit, then tail (may be ""); NUL-terminated. */
static char *
repeat(const char *unit, size_t n, const char *tail)
{
	size_t	 ul = strlen(unit), tl = strlen(tail), i;
	char	*s;

	s = malloc(ul * n + tl + 1);
	ck_assert_ptr_nonnull(s);
	if (ul == 1)
		memset(s, unit[0], n);
	else
		for (i = 0; i < n; i++)
			memcpy(s + i * ul, unit, ul);
	memcpy(s + ul * n, tail, tl + 1);
	return s;
}

/* The strict base64 of n bytes of 0xa5. */
static char *
b64_of(size_t n)
{
	uint8_t	*bin;
	char	*s;
	size_t	 len = b64_encoded_len(n);

	bin = malloc(n + 1);
	s = malloc(len + 1);
	ck_assert_ptr_nonnull(bin);
	ck_assert_ptr_nonnull(s);
	memset(bin, 0xa5, n);
	ck_assert_int_eq(b64_encode(bin, n, s, len + 1), 0);
	free(bin);
	return s;
}

/* A growing text for big JSON bodies. */
struct buf {
	char	*b_data;
	size_t	 b_len;
	size_t	 b_size;
};

static void
buf_add(struct buf *b, const char *s, size_t len)
{
	char	*n;

	if (b->b_len + len + 1 > b->b_size) {
		b->b_size = (b->b_len + len + 1) * 2;
		n = realloc(b->b_data, b->b_size);
		ck_assert_ptr_nonnull(n);
		b->b_data = n;
	}
	memcpy(b->b_data + b->b_len, s, len);
	b->b_len += len;
	b->b_data[b->b_len] = '\0';
}

static void
buf_str(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static cJSON *
parse(const char *json)
{
	cJSON	*j;

	ck_assert_int_eq(body_parse(json, strlen(json), &j, errbuf,
	    sizeof(errbuf)), BODY_OK);
	return j;
}

/* An image whose data is the caller's string, not a copy. */
static cJSON *
image(const char *data, const char *mime)
{
	cJSON	*o;

	o = cJSON_CreateObject();
	ck_assert_ptr_nonnull(o);
	if (data != NULL)
		cJSON_AddItemToObject(o, "data",
		    cJSON_CreateStringReference(data));
	if (mime != NULL)
		cJSON_AddItemToObject(o, "mimeType",
		    cJSON_CreateStringReference(mime));
	return o;
}

static cJSON *
file(const char *name, const char *data)
{
	cJSON	*o;

	o = cJSON_CreateObject();
	ck_assert_ptr_nonnull(o);
	if (name != NULL)
		cJSON_AddItemToObject(o, "name",
		    cJSON_CreateStringReference(name));
	if (data != NULL)
		cJSON_AddItemToObject(o, "data",
		    cJSON_CreateStringReference(data));
	return o;
}

/* File number i, named "f<i>", appended to arr. */
static void
add_file(cJSON *arr, size_t i, const char *data)
{
	cJSON	*o;
	char	 name[32];

	snprintf(name, sizeof(name), "f%zu", i);
	o = file(NULL, data);
	ck_assert_ptr_nonnull(cJSON_AddStringToObject(o, "name", name));
	cJSON_AddItemToArray(arr, o);
}

static enum body_err
check_image(const cJSON *img)
{
	return body_check_image(img, NULL, errbuf, sizeof(errbuf));
}

static enum body_err
check_images(const cJSON *arr)
{
	return body_check_images(arr, errbuf, sizeof(errbuf));
}

static enum body_err
check_files(const cJSON *arr)
{
	return body_check_files(arr, errbuf, sizeof(errbuf));
}

static int
result_n(const char *json, size_t len)
{
	int	 st;

	st = body_check_result(json, len, "t1", NULL, errbuf, sizeof(errbuf));
	if (st == 200)
		ck_assert_str_eq(errbuf, "");
	else
		ck_assert_int_gt(strlen(errbuf), 0);
	return st;
}

static int
result(const char *json)
{
	return result_n(json, strlen(json));
}

/* {"turnId":"t1","result":{"ok":true,"text":<text>,"files":[]}} */
static int
result_text(const char *text)
{
	struct buf	 b = { NULL, 0, 0 };
	int		 st;

	buf_str(&b, "{\"turnId\":\"t1\",\"result\":{\"ok\":true,\"text\":\"");
	buf_str(&b, text);
	buf_str(&b, "\",\"files\":[]}}");
	st = result_n(b.b_data, b.b_len);
	free(b.b_data);
	return st;
}

static int
result_error(const char *error)
{
	struct buf	 b = { NULL, 0, 0 };
	int		 st;

	buf_str(&b, "{\"turnId\":\"t1\",\"result\":{\"ok\":false,\"error\":\"");
	buf_str(&b, error);
	buf_str(&b, "\"}}");
	st = result_n(b.b_data, b.b_len);
	free(b.b_data);
	return st;
}

static enum body_err
answer_n(const char *json, size_t len)
{
	enum body_err	 e;
	cJSON		*j;

	e = body_check_tool_answer(json, len, errbuf, sizeof(errbuf));
	/* The tree variant agrees on whatever parses. */
	if (body_parse(json, len, &j, NULL, 0) == BODY_OK) {
		ck_assert_int_eq(body_check_tool_answer_json(j, NULL, 0), e);
		cJSON_Delete(j);
	}
	return e;
}

static enum body_err
answer(const char *json)
{
	return answer_n(json, strlen(json));
}

static const char *
tool_input_why(const char *json)
{
	const char	*why;
	cJSON		*in;

	(void)body_tool_input(json, strlen(json), &in, &why, errbuf,
	    sizeof(errbuf));
	if (why == NULL) {
		ck_assert(cJSON_IsObject(in));
		cJSON_Delete(in);
	} else
		ck_assert_ptr_null(in);
	return why;
}

/*
 * Strict JSON
 */
static enum body_err
parse_err(const char *json, size_t len)
{
	enum body_err	 e;
	cJSON		*j;

	e = body_parse(json, len, &j, errbuf, sizeof(errbuf));
	if (e == BODY_OK) {
		ck_assert_ptr_nonnull(j);
		cJSON_Delete(j);
	} else {
		ck_assert_ptr_null(j);
		ck_assert_int_gt(strlen(errbuf), 0);
	}
	return e;
}

START_TEST(json_accepts)
{
	static const char *const	 ok[] = {
		"{}", "[]", "0", "-0", "1.5", "-1.5e+10", "1E-3", "2e5",
		"true", "false", "null", "\"\"",
		" \t\r\n{ \"a\" : [ 1 , 2 ] }\n",
		"\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", "\"\\u0001\"",
		"\"\\u00e9\\u00E9\"", "\"\\ud83d\\ude00\"", "\"\xc3\xa9\"",
		"{\"a\":{\"a\":{\"a\":1}}}", "[{\"a\":1},{\"a\":1}]",
		"{\"\":1}",
	};
	size_t				 i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_msg(parse_err(ok[i], strlen(ok[i])) == BODY_OK,
		    "refused %s: %s", ok[i], errbuf);
}
END_TEST

START_TEST(json_refuses)
{
	static const char *const	 bad[] = {
		"", " ", "{", "{]", "[1,]", "{\"a\":1,}", "[1 2]", "01", "-01",
		"1.", ".5", "-", "+1", "1e", "1e+", "1.2.3", "0x10", "NaN",
		"Infinity", "tru", "nul", "truex", "True", "'a'", "\"a",
		"\"\\\"", "{} {}", "{}x", "[1]]", "\"\\u0000\"",
		"\"a\\u0000b\"", "{\"a\\u0000\":1}", "\"\\uZZZZ\"",
		"\"\\u00G0\"", "\"\\u12\"", "\"\\u\"", "\"\\x41\"",
		"\"\\U0041\"",
		"\"\\'\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud83d\\u0041\"",
		"\"a\tb\"", "\"a\nb\"", "\"\x1f\"", "{\x01}", "{\x0b}",
		"{\x0c}", "\xef\xbb\xbf{}", "\"\xc3\"", "\"\xc0\xaf\"",
		"\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\xc3\xa9",
		"{\"a\":1,\"a\":2}", "{\"a\":1,\"\\u0061\":2}",
		"[{\"x\":[{\"b\":1,\"b\":1}]}]",
		"{\"a\":{},\"b\":{\"c\":1,\"c\":1}}",
	};
	size_t				 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse_err(bad[i], strlen(bad[i])) ==
		    BODY_INVALID_JSON, "accepted %s", bad[i]);
	/* A NUL byte, raw, inside and outside a string. */
	ck_assert_int_eq(parse_err(S("{}\0")), BODY_INVALID_JSON);
	ck_assert_int_eq(parse_err(S("\"a\0b\"")), BODY_INVALID_JSON);
	ck_assert_int_eq(parse_err(NULL, 0), BODY_INVALID_JSON);
}
END_TEST

/*
 * A number past a double's range would leave as null, which is what cJSON
 * prints for it: refused, at the limit and one digit past it, anywhere in
 * the tree, and in every body that is read strictly.
 */
START_TEST(json_number_range)
{
	static const char *const	 ok[] = {
		"1.7976931348623157e308", "-1.7976931348623157e308",
		"1e-400", "-1e-400", "[0.1e309]", "{\"a\":[1e308]}",
	};
	static const char *const	 bad[] = {
		"1.7976931348623159e308", "-1.7976931348623159e308",
		"1e309", "-1e309", "1E+400", "[1,2,1e3082]",
		"{\"a\":{\"b\":[-1e999]}}",
	};
	size_t				 i;
	cJSON				*res;
	int				 st;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_msg(parse_err(ok[i], strlen(ok[i])) == BODY_OK,
		    "refused %s: %s", ok[i], errbuf);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse_err(bad[i], strlen(bad[i])) ==
		    BODY_INVALID_JSON, "accepted %s", bad[i]);
		ck_assert_str_eq(errbuf, "a number is out of range");
	}
	ck_assert_ptr_null(tool_input_why("{\"input\":{\"n\":1e308}}"));
	ck_assert_str_eq(tool_input_why("{\"input\":{\"\":1e3082}}"),
	    "Invalid input");
	st = body_check_result(S("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"n\":1e309}}"), "t1", &res, errbuf,
	    sizeof(errbuf));
	ck_assert_int_eq(st, 400);
	ck_assert_ptr_null(res);
	ck_assert_str_eq(errbuf, "a number is out of range");
	ck_assert_int_eq(answer("{\"ok\":true,\"x\":1e999}"),
	    BODY_INVALID_JSON);
	ck_assert_str_eq(errbuf, "a number is out of range");
}
END_TEST

/*
 * body_print(): numbers that cJSON's 15 digits would change leave exact,
 * the rest as cJSON prints them, and the tree is as it was.
 */
START_TEST(print_exact_numbers)
{
	static const struct {
		const char	*in, *out;
	} cases[] = {
		{ "[9007199254740991,-9007199254740991]",
		    "[9007199254740991,-9007199254740991]" },
		{ "[0.30000000000000004,0.1,1e21,-0]",
		    "[0.30000000000000004,0.1,1e+21,-0]" },
		{ "{\"a\":[1.7976931348623157e308,5e-324]}",
		    "{\"a\":[1.7976931348623157e+308,4.94065645841247e-324]}" },
		{ "{\"n\":123456789012345678,\"s\":\"1.5\",\"t\":true}",
		    "{\"n\":1.2345678901234568e+17,\"s\":\"1.5\",\"t\":true}" },
		{ "[2147483647,2147483648,1000000000000000]",
		    "[2147483647,2147483648,1e+15]" },
		/* integers below 1e15 are written without printf: the same
		 * text as "%1.15g" */
		{ "[0,-0,7,-7,999999999999999,-999999999999999,1.0,-2e3]",
		    "[0,-0,7,-7,999999999999999,-999999999999999,1,-2000]" },
	};
	cJSON	*j, *copy, *back, *raw;
	char	*out;
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(parse_err(cases[i].in, strlen(cases[i].in)),
		    BODY_OK);
		ck_assert_int_eq(body_parse(cases[i].in, strlen(cases[i].in),
		    &j, NULL, 0), BODY_OK);
		copy = cJSON_Duplicate(j, 1);
		ck_assert_ptr_nonnull(out = body_print(j));
		ck_assert_str_eq(out, cases[i].out);
		/* Read back: the same doubles. */
		ck_assert_int_eq(body_parse(out, strlen(out), &back, NULL, 0),
		    BODY_OK);
		ck_assert(cJSON_Compare(back, copy, 1));
		/* The tree is as it was: numbers, not raw text. */
		ck_assert(cJSON_Compare(j, copy, 1));
		cJSON_free(out);
		cJSON_Delete(back);
		cJSON_Delete(copy);
		cJSON_Delete(j);
	}
	/* Raw text of the caller's own stays raw. */
	j = cJSON_CreateObject();
	raw = cJSON_CreateRaw("12345678901234567");
	cJSON_AddItemToObject(j, "id", raw);
	cJSON_AddNumberToObject(j, "n", 0.1 + 0.2);
	ck_assert_ptr_nonnull(out = body_print(j));
	ck_assert_str_eq(out, "{\"id\":12345678901234567,"
	    "\"n\":0.30000000000000004}");
	ck_assert(cJSON_IsRaw(raw));
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(j, "n")));
	cJSON_free(out);
	cJSON_Delete(j);
}
END_TEST

/* body_print() of j is byte for byte cJSON's print of it. */
static void
prints_as_cjson(const cJSON *j)
{
	char	*out, *ref;

	ck_assert_ptr_nonnull(out = body_print(j));
	ck_assert_ptr_nonnull(ref = cJSON_PrintUnformatted(j));
	ck_assert_str_eq(out, ref);
	free(out);
	cJSON_free(ref);
}

/*
 * body_print(): strings, keys, literals and containers byte for byte as
 * cJSON prints them; a node cJSON would not print is refused.
 */
START_TEST(print_as_cjson)
{
	char		 all[256], *out;
	cJSON		*j, *a, *bad;
	size_t		 i;

	/* Every byte but NUL, each next to plain text and at a word's edge. */
	for (i = 1; i < 256; i++)
		all[i - 1] = (char)i;
	all[255] = '\0';
	j = cJSON_CreateObject();
	ck_assert_ptr_nonnull(j);
	cJSON_AddStringToObject(j, all, all);
	cJSON_AddStringToObject(j, "", "");
	cJSON_AddStringToObject(j, "text", "plain text of more than a word\n"
	    "\"quoted\" \\ \x01\x1f\x7f \xc3\xa9 \xf0\x9f\x98\x80");
	a = cJSON_AddArrayToObject(j, "list");
	cJSON_AddItemToArray(a, cJSON_CreateTrue());
	cJSON_AddItemToArray(a, cJSON_CreateFalse());
	cJSON_AddItemToArray(a, cJSON_CreateNull());
	cJSON_AddItemToArray(a, cJSON_CreateObject());
	cJSON_AddItemToArray(a, cJSON_CreateArray());
	cJSON_AddItemToArray(a, cJSON_CreateRaw("{\"raw\":1}"));
	cJSON_AddItemToArray(a, cJSON_CreateString("x"));
	prints_as_cjson(j);

	/* A string without its text prints as cJSON prints it: "". */
	a = cJSON_CreateString("y");
	free(a->valuestring);
	a->valuestring = NULL;
	cJSON_AddItemToObject(j, "nil", a);
	prints_as_cjson(j);

	/* Raw text without its text, or a node of no type: nothing. */
	bad = cJSON_CreateRaw("1");
	free(bad->valuestring);
	bad->valuestring = NULL;
	cJSON_AddItemToObject(j, "bad", bad);
	ck_assert_ptr_null(body_print(j));
	ck_assert_ptr_null(cJSON_PrintUnformatted(j));
	bad->type = cJSON_Invalid;
	ck_assert_ptr_null(body_print(j));
	ck_assert_ptr_null(body_print(NULL));
	bad->type = cJSON_NULL;
	ck_assert_ptr_nonnull(out = body_print(j));
	ck_assert(strstr(out, "\"bad\":null}") != NULL);
	free(out);
	cJSON_Delete(j);
}
END_TEST

START_TEST(json_dups_sorted)
{
	struct buf	 b = { NULL, 0, 0 };
	char		 key[32];
	int		 i;

	/* Enough keys for the sorted search, the duplicate last. */
	buf_str(&b, "{");
	for (i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "%s\"k%d\":%d", i ? "," : "", i, i);
		buf_str(&b, key);
	}
	buf_str(&b, "}");
	ck_assert_int_eq(parse_err(b.b_data, b.b_len), BODY_OK);
	b.b_data[--b.b_len] = '\0';
	buf_str(&b, ",\"k57\":0}");
	ck_assert_int_eq(parse_err(b.b_data, b.b_len), BODY_INVALID_JSON);
	free(b.b_data);
}
END_TEST

START_TEST(json_nesting)
{
	char	*s;
	size_t	 n = 5000;

	s = malloc(2 * n + 1);
	ck_assert_ptr_nonnull(s);
	memset(s, '[', n);
	memset(s + n, ']', n);
	s[2 * n] = '\0';
	ck_assert_int_eq(parse_err(s, 2 * n), BODY_INVALID_JSON);
	free(s);
}
END_TEST

/* "[" and n - 1 zeros: n values. */
static char *
zeros_array(size_t n, size_t *len)
{
	char	*s;
	size_t	 i, o = 0;

	s = malloc(2 * n + 1);
	ck_assert_ptr_nonnull(s);
	s[o++] = '[';
	for (i = 1; i < n; i++) {
		s[o++] = '0';
		s[o++] = i + 1 < n ? ',' : ']';
	}
	s[o] = '\0';
	*len = o;
	return s;
}

START_TEST(json_nodes)
{
	char	*s;
	size_t	 len;

	s = zeros_array(BODY_NODES_MAX, &len);
	ck_assert_int_eq(parse_err(s, len), BODY_OK);
	free(s);
	s = zeros_array(BODY_NODES_MAX + 1, &len);
	ck_assert_int_eq(parse_err(s, len), BODY_INVALID_JSON);
	ck_assert_ptr_nonnull(strstr(errbuf, "values and keys"));
	ck_assert_int_eq(body_check_result(s, len, "t1", NULL, NULL, 0), 400);
	free(s);
	/* Keys count too: {"a":0} is three. */
	ck_assert_int_eq(parse_err(S("{\"a\":0}")), BODY_OK);
}
END_TEST

START_TEST(json_err_to_string)
{
	ck_assert_str_eq(body_err_to_string(BODY_OK), "ok");
	ck_assert_str_eq(body_err_to_string(BODY_INVALID_JSON),
	    "invalid JSON");
	ck_assert_str_eq(body_err_to_string(BODY_MISMATCH),
	    "not the pending turn");
	ck_assert_str_eq(body_err_to_string(BODY_BAD), "invalid field");
	ck_assert_str_eq(body_err_to_string(BODY_NOMEM), "out of memory");
}
END_TEST

/*
 * 4.3 Images
 */
START_TEST(image_mime_types)
{
	static const char *const	 ok[] = {
		"image/png", "image/jpeg", "image/webp", "image/gif"
	};
	static const char *const	 bad[] = {
		"image/svg+xml", "IMAGE/PNG", "image/jpg", "image/png ",
		"image/", "", "text/plain", "image/gif\xc2\xa0",
	};
	cJSON				*img;
	size_t				 i, bytes = 0;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		img = image("iVBORw0K", ok[i]);
		ck_assert_int_eq(body_check_image(img, &bytes, errbuf,
		    sizeof(errbuf)), BODY_OK);
		ck_assert_uint_eq(bytes, 6);
		ck_assert_str_eq(errbuf, "");
		cJSON_Delete(img);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		img = image("iVBORw0K", bad[i]);
		ck_assert_int_eq(check_image(img), BODY_BAD);
		ck_assert_ptr_nonnull(strstr(errbuf, "mimeType"));
		cJSON_Delete(img);
	}
	img = image("iVBORw0K", NULL);
	ck_assert_int_eq(check_image(img), BODY_BAD);
	cJSON_AddNumberToObject(img, "mimeType", 1);
	ck_assert_int_eq(check_image(img), BODY_BAD);
	cJSON_Delete(img);
}
END_TEST

START_TEST(image_size)
{
	char	*max, *over;
	cJSON	*img;
	size_t	 bytes = 0;

	img = image("AA==", "image/png");
	ck_assert_int_eq(body_check_image(img, &bytes, NULL, 0), BODY_OK);
	ck_assert_uint_eq(bytes, 1);
	cJSON_Delete(img);
	img = image("", "image/png");
	ck_assert_int_eq(check_image(img), BODY_BAD);
	cJSON_Delete(img);

	max = b64_of(IMAGE_BYTES_MAX);
	over = b64_of(IMAGE_BYTES_MAX + 1);
	ck_assert_uint_eq(strlen(max), IMAGE_B64_MAX);
	img = image(max, "image/webp");
	ck_assert_int_eq(body_check_image(img, &bytes, errbuf,
	    sizeof(errbuf)), BODY_OK);
	ck_assert_uint_eq(bytes, IMAGE_BYTES_MAX);
	cJSON_Delete(img);
	img = image(over, "image/webp");
	ck_assert_int_eq(check_image(img), BODY_BAD);
	cJSON_Delete(img);
	free(over);
	free(max);
}
END_TEST

START_TEST(image_refusals)
{
	static const char *const	 bad_b64[] = {
		"A", "AA=", "AB==", "AAB=", "A===", "AA=A", "=AAA", "AA AA",
		"AA==AA==", "AA-_", "AAA\n", "\xc3\xa9\xc3\xa9",
	};
	cJSON				*img, *j;
	size_t				 i;

	for (i = 0; i < sizeof(bad_b64) / sizeof(bad_b64[0]); i++) {
		img = image(bad_b64[i], "image/gif");
		ck_assert_msg(check_image(img) == BODY_BAD, "accepted %s",
		    bad_b64[i]);
		cJSON_Delete(img);
	}
	img = image(NULL, "image/gif");
	ck_assert_int_eq(check_image(img), BODY_BAD);
	cJSON_AddNumberToObject(img, "data", 0);
	ck_assert_int_eq(check_image(img), BODY_BAD);
	cJSON_Delete(img);

	/* Another field, a duplicate key, not an object. */
	j = parse("{\"data\":\"AA==\",\"mimeType\":\"image/png\",\"x\":1}");
	ck_assert_int_eq(check_image(j), BODY_BAD);
	cJSON_Delete(j);
	j = parse("{\"data\":\"AA==\",\"mimeType\":\"image/png\","
	    "\"type\":\"base64\"}");
	ck_assert_int_eq(check_image(j), BODY_BAD);
	cJSON_Delete(j);
	img = image("AA==", "image/png");
	cJSON_AddItemToObject(img, "data", cJSON_CreateString("AA=="));
	ck_assert_int_eq(check_image(img), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "duplicate"));
	cJSON_Delete(img);
	j = parse("[{\"data\":\"AA==\",\"mimeType\":\"image/png\"}]");
	ck_assert_int_eq(check_image(j), BODY_BAD);
	cJSON_Delete(j);
	ck_assert_int_eq(check_image(NULL), BODY_BAD);
	/* A member without a key. */
	img = image("AA==", "image/png");
	cJSON_AddItemToArray(img, cJSON_CreateString("x"));
	ck_assert_int_eq(check_image(img), BODY_BAD);
	cJSON_Delete(img);
}
END_TEST

START_TEST(images_count)
{
	cJSON	*arr;
	size_t	 i;

	arr = cJSON_CreateArray();
	ck_assert_int_eq(check_images(arr), BODY_OK);
	for (i = 0; i < IMAGES_MAX; i++)
		cJSON_AddItemToArray(arr, image("AA==", "image/png"));
	ck_assert_int_eq(check_images(arr), BODY_OK);
	cJSON_AddItemToArray(arr, image("AA==", "image/png"));
	ck_assert_int_eq(check_images(arr), BODY_BAD);
	cJSON_Delete(arr);

	ck_assert_int_eq(check_images(NULL), BODY_BAD);
	arr = cJSON_CreateObject();
	ck_assert_int_eq(check_images(arr), BODY_BAD);
	cJSON_Delete(arr);
	arr = parse("[{\"data\":\"AA==\",\"mimeType\":\"image/png\"},"
	    "\"AA==\"]");
	ck_assert_int_eq(check_images(arr), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "images[1]"));
	cJSON_Delete(arr);
	arr = parse("[{\"data\":\"AA==\",\"mimeType\":\"image/png\"},"
	    "{\"data\":\"AB==\",\"mimeType\":\"image/png\"}]");
	ck_assert_int_eq(check_images(arr), BODY_BAD);
	cJSON_Delete(arr);
}
END_TEST

START_TEST(images_total)
{
	char	*full, *rest, *over;
	cJSON	*arr;

	/* 3 x 20 MiB + 4 MiB = 64 MiB, then one byte more. */
	full = b64_of(IMAGE_BYTES_MAX);
	rest = b64_of(IMAGES_TOTAL_MAX - 3 * IMAGE_BYTES_MAX);
	over = b64_of(IMAGES_TOTAL_MAX - 3 * IMAGE_BYTES_MAX + 1);
	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, image(full, "image/png"));
	cJSON_AddItemToArray(arr, image(full, "image/jpeg"));
	cJSON_AddItemToArray(arr, image(full, "image/webp"));
	cJSON_AddItemToArray(arr, image(rest, "image/gif"));
	ck_assert_int_eq(check_images(arr), BODY_OK);
	cJSON_ReplaceItemInArray(arr, 3, image(over, "image/gif"));
	ck_assert_int_eq(check_images(arr), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "in all"));
	/* Within 8 images, 4 x 16 MiB + one byte more. */
	cJSON_Delete(arr);
	free(full);
	free(rest);
	free(over);

	full = b64_of(IMAGES_TOTAL_MAX / 4);
	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, image(full, "image/png"));
	cJSON_AddItemToArray(arr, image(full, "image/png"));
	cJSON_AddItemToArray(arr, image(full, "image/png"));
	cJSON_AddItemToArray(arr, image(full, "image/png"));
	ck_assert_int_eq(check_images(arr), BODY_OK);
	cJSON_AddItemToArray(arr, image("AA==", "image/png"));
	ck_assert_int_eq(check_images(arr), BODY_BAD);
	cJSON_Delete(arr);
	free(full);
}
END_TEST

/*
 * 4.2 Reply files
 */
START_TEST(files_count)
{
	cJSON	*arr;
	size_t	 i;

	arr = cJSON_CreateArray();
	ck_assert_int_eq(check_files(arr), BODY_OK);
	for (i = 0; i < REPLY_FILES_MAX; i++)
		add_file(arr, i, "AA==");
	ck_assert_int_eq(check_files(arr), BODY_OK);
	add_file(arr, i, "AA==");
	ck_assert_int_eq(check_files(arr), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "over 10"));
	cJSON_Delete(arr);
}
END_TEST

START_TEST(files_size)
{
	char	*max, *over, *b64over;
	cJSON	*arr;

	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, file("a", "AA=="));
	ck_assert_int_eq(check_files(arr), BODY_OK);
	cJSON_Delete(arr);
	/* An empty file. */
	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, file("a", ""));
	ck_assert_int_eq(check_files(arr), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "decodes to 0 bytes"));
	cJSON_Delete(arr);

	max = b64_of(REPLY_FILE_MAX);
	over = b64_of(REPLY_FILE_MAX + 1);
	b64over = b64_of(REPLY_FILE_MAX + 3);
	/* 10 MiB is exactly the base64 bound; 4 chars more break it. */
	ck_assert_uint_eq(strlen(max), REPLY_FILE_B64_MAX);
	ck_assert_uint_eq(REPLY_FILE_B64_MAX, 13981016);
	ck_assert_uint_eq(strlen(over), REPLY_FILE_B64_MAX);
	ck_assert_uint_eq(strlen(b64over), REPLY_FILE_B64_MAX + 4);
	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, file("max.bin", max));
	ck_assert_int_eq(check_files(arr), BODY_OK);
	cJSON_ReplaceItemInArray(arr, 0, file("over.bin", over));
	ck_assert_int_eq(check_files(arr), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "decodes to 10485761 bytes"));
	cJSON_ReplaceItemInArray(arr, 0, file("b64.bin", b64over));
	ck_assert_int_eq(check_files(arr), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "over 13981016 base64 chars"));
	cJSON_Delete(arr);
	free(b64over);
	free(over);
	free(max);
}
END_TEST

START_TEST(files_total)
{
	char	*max;
	cJSON	*arr;
	size_t	 i;

	/* 5 x 10 MiB = 50 MiB, then one more byte. */
	max = b64_of(REPLY_FILE_MAX);
	arr = cJSON_CreateArray();
	for (i = 0; i < REPLY_FILES_TOTAL_MAX / REPLY_FILE_MAX; i++)
		add_file(arr, i, max);
	ck_assert_int_eq(check_files(arr), BODY_OK);
	add_file(arr, i, "AA==");
	ck_assert_int_eq(check_files(arr), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "in all"));
	cJSON_Delete(arr);
	free(max);
}
END_TEST

START_TEST(files_names)
{
	static const char *const	 bad[] = {
		"", ".", "..", "a/b", "/", "a\\b", "a\x01", "\x1f", "a\x7f",
		"a\xc2\x85", "a\xc2\x9f", "\xc3", "\xed\xa0\x80",
	};
	static const char *const	 ok[] = {
		"...", ".a", "a.", "report.pdf", "a b", "\xc2\xa0",
		"\xc3\xa9t\xc3\xa9.txt", "-rf", "~",
	};
	char				*n;
	cJSON				*arr;
	size_t				 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		arr = cJSON_CreateArray();
		cJSON_AddItemToArray(arr, file(bad[i], "AA=="));
		ck_assert_msg(check_files(arr) == BODY_BAD, "accepted %s",
		    bad[i]);
		ck_assert_ptr_nonnull(strstr(errbuf, "safe file name"));
		cJSON_Delete(arr);
	}
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		arr = cJSON_CreateArray();
		cJSON_AddItemToArray(arr, file(ok[i], "AA=="));
		ck_assert_msg(check_files(arr) == BODY_OK, "refused %s: %s",
		    ok[i], errbuf);
		cJSON_Delete(arr);
	}
	/* 255 chars, then 256; a non-BMP character counts 2. */
	n = repeat("n", SAFE_NAME_MAX, "");
	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, file(n, "AA=="));
	ck_assert_int_eq(check_files(arr), BODY_OK);
	cJSON_Delete(arr);
	free(n);
	n = repeat("n", SAFE_NAME_MAX + 1, "");
	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, file(n, "AA=="));
	ck_assert_int_eq(check_files(arr), BODY_BAD);
	cJSON_Delete(arr);
	free(n);
	n = repeat(emoji, SAFE_NAME_MAX / 2, "n");
	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, file(n, "AA=="));
	ck_assert_int_eq(check_files(arr), BODY_OK);
	cJSON_Delete(arr);
	free(n);
	n = repeat(emoji, SAFE_NAME_MAX / 2 + 1, "");
	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, file(n, "AA=="));
	ck_assert_int_eq(check_files(arr), BODY_BAD);
	cJSON_Delete(arr);
	free(n);
}
END_TEST

START_TEST(files_unique)
{
	cJSON	*arr;

	arr = cJSON_CreateArray();
	cJSON_AddItemToArray(arr, file("a.txt", "AA=="));
	cJSON_AddItemToArray(arr, file("A.txt", "AA=="));
	cJSON_AddItemToArray(arr, file("a.txt ", "AA=="));
	ck_assert_int_eq(check_files(arr), BODY_OK);
	cJSON_AddItemToArray(arr, file("a.txt", "AAA="));
	ck_assert_int_eq(check_files(arr), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "files[3].name"));
	ck_assert_ptr_nonnull(strstr(errbuf, "files[0]"));
	cJSON_Delete(arr);
}
END_TEST

START_TEST(files_shape)
{
	static const char *const	 bad[] = {
		"{}", "null", "[\"a\"]", "[null]", "[[]]", "[{}]",
		"[{\"name\":\"a\"}]", "[{\"data\":\"AA==\"}]",
		"[{\"name\":1,\"data\":\"AA==\"}]",
		"[{\"name\":\"a\",\"data\":1}]",
		"[{\"name\":\"a\",\"data\":null}]",
		"[{\"name\":\"a\",\"data\":\"AB==\"}]",
		"[{\"name\":\"a\",\"data\":\"AA\"}]",
	};
	cJSON				*j;
	size_t				 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = parse(bad[i]);
		ck_assert_msg(check_files(j) == BODY_BAD, "accepted %s",
		    bad[i]);
		cJSON_Delete(j);
	}
	ck_assert_int_eq(check_files(NULL), BODY_BAD);
	/* Fields beyond name and data are not taken, and not refused. */
	j = parse("[{\"name\":\"a\",\"data\":\"AA==\",\"mode\":\"0755\"}]");
	ck_assert_int_eq(check_files(j), BODY_OK);
	cJSON_Delete(j);
	/* A duplicate key inside a file, built past the strict parser. */
	j = cJSON_CreateArray();
	cJSON_AddItemToArray(j, file("a", "AA=="));
	cJSON_AddItemToObject(cJSON_GetArrayItem(j, 0), "name",
	    cJSON_CreateString("b"));
	ck_assert_int_eq(check_files(j), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "duplicate"));
	cJSON_Delete(j);
}
END_TEST

/*
 * 3.1 POST /worker/result
 */
START_TEST(result_accepts)
{
	cJSON	*res;
	int	 st;

	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"done\",\"files\":[]}}"), 200);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"\",\"files\":[{\"name\":\"a.txt\",\"data\":\"aGk=\"}"
	    "]}}"), 200);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":false,"
	    "\"error\":\"boom\"}}"), 200);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":false,"
	    "\"error\":\"\"}}"), 200);
	/* The id compared after decoding escapes. */
	ck_assert_int_eq(result("{\"turnId\":\"t\\u0031\",\"result\":{"
	    "\"ok\":false,\"error\":\"x\"}}"), 200);
	/* ok:false: text and files are not looked at. */
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":false,"
	    "\"error\":\"x\",\"text\":7,\"files\":\"no\"}}"), 200);
	/* Fields the protocol does not name are ignored. */
	ck_assert_int_eq(result("{\"v\":2,\"turnId\":\"t1\",\"result\":{"
	    "\"usage\":{\"in\":1},\"ok\":true,\"text\":\"x\",\"files\":[],"
	    "\"error\":5}}"), 200);

	st = body_check_result(S("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"hi\",\"files\":[]}}"), "t1", &res, errbuf,
	    sizeof(errbuf));
	ck_assert_int_eq(st, 200);
	ck_assert_ptr_nonnull(res);
	ck_assert_str_eq(cJSON_GetObjectItem(res, "text")->valuestring, "hi");
	cJSON_Delete(res);
	st = body_check_result(S("{\"turnId\":\"t2\",\"result\":{\"ok\":true,"
	    "\"text\":\"hi\",\"files\":[]}}"), "t1", &res, errbuf,
	    sizeof(errbuf));
	ck_assert_int_eq(st, 409);
	ck_assert_ptr_null(res);
}
END_TEST

START_TEST(result_invalid_json)
{
	ck_assert_int_eq(result(""), 400);
	ck_assert_int_eq(result("{"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"files\":[],}}"), 400);
	ck_assert_int_eq(result_n(S("{\"turnId\":\"t1\",\"result\":{\"ok\":"
	    "false,\"error\":\"a\0\"}}")), 400);
	/* \u0000 would cut the text short in cJSON. */
	ck_assert_int_eq(result_text("a\\u0000b"), 400);
	ck_assert_int_eq(result_text("a\\uZZZZb"), 400);
	ck_assert_int_eq(result_text("\xff"), 400);
	ck_assert_int_eq(result_text("a\nb"), 400);
	/* Duplicate keys at any depth. */
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"turnId\":\"t1\","
	    "\"result\":{\"ok\":false,\"error\":\"x\"}}"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"ok\":false,\"error\":\"x\",\"text\":\"\",\"files\":[]}}"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":false,"
	    "\"error\":\"x\"},\"extra\":[{\"a\":1,\"a\":1}]}"), 400);
}
END_TEST

START_TEST(result_body_limit)
{
	static const char	 head[] = "{\"turnId\":\"t1\",\"result\":{"
	    "\"ok\":false,\"error\":\"x\"}}";
	char			*b;

	b = malloc(RESULT_BODY_MAX + 1);
	ck_assert_ptr_nonnull(b);
	memset(b, ' ', RESULT_BODY_MAX + 1);
	memcpy(b, head, sizeof(head) - 1);
	ck_assert_int_eq(result_n(b, RESULT_BODY_MAX), 200);
	ck_assert_int_eq(result_n(b, RESULT_BODY_MAX + 1), 400);
	free(b);
}
END_TEST

START_TEST(result_mismatch)
{
	static const char *const	 m[] = {
		"[]", "\"t1\"", "null", "1", "true",
		"{}",
		"{\"result\":{\"ok\":false,\"error\":\"x\"}}",
		"{\"turnId\":\"t2\",\"result\":{\"ok\":false,\"error\":\"x\"}}",
		"{\"turnId\":\"T1\",\"result\":{\"ok\":false,\"error\":\"x\"}}",
		"{\"turnId\":\"t1 \",\"result\":{\"ok\":false,"
		    "\"error\":\"x\"}}",
		"{\"turnId\":\"\",\"result\":{\"ok\":false,\"error\":\"x\"}}",
		"{\"turnId\":1,\"result\":{\"ok\":false,\"error\":\"x\"}}",
		"{\"turnId\":null,\"result\":{\"ok\":false,\"error\":\"x\"}}",
		"{\"turnId\":[\"t1\"],\"result\":{\"ok\":false,"
		    "\"error\":\"x\"}}",
		"{\"turnId\":\"t1\"}",
		"{\"turnId\":\"t1\",\"result\":null}",
		"{\"turnId\":\"t1\",\"result\":[]}",
		"{\"turnId\":\"t1\",\"result\":\"ok\"}",
		"{\"turnId\":\"t1\",\"result\":{}}",
		"{\"turnId\":\"t1\",\"result\":{\"ok\":1,\"error\":\"x\"}}",
		"{\"turnId\":\"t1\",\"result\":{\"ok\":\"true\",\"text\":\"x\","
		    "\"files\":[]}}",
		"{\"turnId\":\"t1\",\"result\":{\"ok\":null,\"error\":\"x\"}}",
		"{\"turnId\":\"t1\",\"result\":{\"Ok\":true,\"text\":\"x\","
		    "\"files\":[]}}",
	};
	size_t				 i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		ck_assert_msg(result(m[i]) == 409, "not 409: %s", m[i]);
	/* No pending turn at all. */
	ck_assert_int_eq(body_check_result(S("{\"turnId\":\"t1\",\"result\":"
	    "{\"ok\":false,\"error\":\"x\"}}"), NULL, NULL, NULL, 0), 409);
}
END_TEST

START_TEST(result_text_limit)
{
	char	*t;

	t = repeat("a", RESULT_TEXT_MAX, "");
	ck_assert_int_eq(result_text(t), 200);
	free(t);
	t = repeat("a", RESULT_TEXT_MAX + 1, "");
	ck_assert_int_eq(result_text(t), 400);
	ck_assert_ptr_nonnull(strstr(errbuf, "result.text"));
	free(t);
	/* A non-BMP character counts 2. */
	t = repeat(emoji, RESULT_TEXT_MAX / 2, "");
	ck_assert_int_eq(result_text(t), 200);
	free(t);
	t = repeat(emoji, RESULT_TEXT_MAX / 2, "a");
	ck_assert_int_eq(result_text(t), 400);
	free(t);
	t = repeat("a", RESULT_TEXT_MAX - 1, emoji);
	ck_assert_int_eq(result_text(t), 400);
	free(t);
	/* Escapes count as what they decode to. */
	t = repeat("\\u00e9", RESULT_TEXT_MAX, "");
	ck_assert_int_eq(result_text(t), 200);
	free(t);
	t = repeat("\\ud83d\\ude00", RESULT_TEXT_MAX / 2, "\\n");
	ck_assert_int_eq(result_text(t), 400);
	free(t);

	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"files\":[]}}"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":1,\"files\":[]}}"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":null,\"files\":[]}}"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":[\"x\"],\"files\":[]}}"), 400);
}
END_TEST

START_TEST(result_error_limit)
{
	char	*t;

	t = repeat("e", RESULT_ERROR_MAX, "");
	ck_assert_int_eq(result_error(t), 200);
	free(t);
	t = repeat("e", RESULT_ERROR_MAX + 1, "");
	ck_assert_int_eq(result_error(t), 400);
	ck_assert_ptr_nonnull(strstr(errbuf, "result.error"));
	free(t);
	t = repeat(emoji, RESULT_ERROR_MAX / 2, "");
	ck_assert_int_eq(result_error(t), 200);
	free(t);
	t = repeat(emoji, RESULT_ERROR_MAX / 2, "e");
	ck_assert_int_eq(result_error(t), 400);
	free(t);

	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":"
	    "{\"ok\":false}}"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":false,"
	    "\"error\":{}}}"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":false,"
	    "\"error\":null,\"text\":\"x\"}}"), 400);
}
END_TEST

START_TEST(result_files_rules)
{
	struct buf	 b = { NULL, 0, 0 };
	char		 f[64];
	size_t		 i;

	/* A missing files is refused like any other non-array. */
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\"}}"), 400);
	ck_assert_ptr_nonnull(strstr(errbuf, "result.files"));
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"files\":{}}}"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"files\":null}}"), 400);

	buf_str(&b, "{\"turnId\":\"t1\",\"result\":{\"ok\":true,\"text\":\"x\","
	    "\"files\":[");
	for (i = 0; i < RESULT_FILES_MAX; i++) {
		snprintf(f, sizeof(f),
		    "%s{\"name\":\"f%zu\",\"data\":\"AA==\"}", i ? "," : "", i);
		buf_str(&b, f);
	}
	buf_str(&b, "]}}");
	ck_assert_int_eq(result_n(b.b_data, b.b_len), 200);
	b.b_len -= 3;
	buf_str(&b, ",{\"name\":\"f10\",\"data\":\"AA==\"}]}}");
	ck_assert_int_eq(result_n(b.b_data, b.b_len), 400);
	free(b.b_data);

	/* Reply files invalid (4.2). */
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"files\":[{\"name\":\"a\",\"data\":\"\"}]}}"),
	    400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"files\":[{\"name\":\"..\",\"data\":\"AA==\"}]}}"),
	    400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"files\":[{\"name\":\"a\\u0000b\",\"data\":"
	    "\"AA==\"}]}}"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"files\":[{\"name\":\"a\",\"data\":\"AA==\"},"
	    "{\"name\":\"a\",\"data\":\"AA==\"}]}}"), 400);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"files\":[{\"name\":\"a\",\"data\":\"A A=\"}]}}"),
	    400);
}
END_TEST

START_TEST(result_files_total)
{
	struct buf	 b = { NULL, 0, 0 };
	char		*max, f[32];
	size_t		 i;

	/* 5 x 10 MiB: 50 MiB in all, under the 72 MiB body limit. */
	max = b64_of(REPLY_FILE_MAX);
	buf_str(&b, "{\"turnId\":\"t1\",\"result\":{\"ok\":true,\"text\":\"x\","
	    "\"files\":[");
	for (i = 0; i < REPLY_FILES_TOTAL_MAX / REPLY_FILE_MAX; i++) {
		snprintf(f, sizeof(f), "%s{\"name\":\"p%zu\",\"data\":\"",
		    i ? "," : "", i);
		buf_str(&b, f);
		buf_str(&b, max);
		buf_str(&b, "\"}");
	}
	buf_str(&b, "]}}");
	ck_assert_uint_le(b.b_len, RESULT_BODY_MAX);
	ck_assert_int_eq(result_n(b.b_data, b.b_len), 200);
	b.b_len -= 3;
	buf_str(&b, ",{\"name\":\"one\",\"data\":\"AA==\"}]}}");
	ck_assert_uint_le(b.b_len, RESULT_BODY_MAX);
	ck_assert_int_eq(result_n(b.b_data, b.b_len), 400);
	ck_assert_ptr_nonnull(strstr(errbuf, "in all"));
	free(b.b_data);
	free(max);
}
END_TEST

START_TEST(result_order)
{
	struct buf	 b = { NULL, 0, 0 };
	char		*t;

	/* Invalid JSON first, even with every other fault. */
	ck_assert_int_eq(result("{\"turnId\":\"t2\",\"result\":7,}"), 400);
	/* 409 before any 400 of the fields. */
	ck_assert_int_eq(result("{\"turnId\":\"t2\",\"result\":{\"ok\":true,"
	    "\"text\":5,\"files\":7}}"), 409);
	ck_assert_int_eq(result("{\"turnId\":\"t2\",\"result\":"
	    "{\"ok\":false}}"), 409);
	ck_assert_int_eq(result("{\"result\":{\"ok\":true,\"text\":1}}"), 409);
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":\"no\","
	    "\"text\":5,\"files\":7,\"error\":8}}"), 409);
	ck_assert_int_eq(result("{\"turnId\":\"t2\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"files\":[{\"name\":\"..\",\"data\":\"\"}]}}"),
	    409);
	t = repeat("a", RESULT_TEXT_MAX + 1, "");
	buf_str(&b, "{\"turnId\":\"t2\",\"result\":{\"ok\":true,\"text\":\"");
	buf_str(&b, t);
	buf_str(&b, "\",\"files\":[]}}");
	ck_assert_int_eq(result_n(b.b_data, b.b_len), 409);
	free(b.b_data);
	free(t);
	/* Among the 400s: text, then the files' count, then the files. */
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":1,\"files\":[{\"name\":\"..\",\"data\":\"\"}]}}"), 400);
	ck_assert_ptr_nonnull(strstr(errbuf, "result.text"));
	ck_assert_int_eq(result("{\"turnId\":\"t1\",\"result\":{\"ok\":true,"
	    "\"text\":\"x\",\"files\":[{\"name\":\"..\",\"data\":\"\"}]}}"),
	    400);
	ck_assert_ptr_nonnull(strstr(errbuf, "result.files[0].name"));
	/* Duplicate keys are invalid JSON: 400 before the 409 rules. */
	ck_assert_int_eq(result("{\"turnId\":\"t2\",\"result\":{\"ok\":1,"
	    "\"ok\":2}}"), 400);
}
END_TEST

/*
 * 4.1 The turn request
 */
static struct body_turn
turn_base(void)
{
	struct body_turn	 bt;

	memset(&bt, 0, sizeof(bt));
	bt.bt_turn_id = "t1";
	bt.bt_author_id = "u1";
	bt.bt_author_name = "Ann";
	bt.bt_text = "hi";
	bt.bt_memory = "";
	bt.bt_thinking = "low";
	return bt;
}

/* Build, and check the text again as the worker would parse it. */
static enum body_err
build(const struct body_turn *bt)
{
	enum body_err	 e;
	cJSON		*j;
	char		*json;

	errbuf[0] = 'x';
	json = body_build_turn(bt, &e, errbuf, sizeof(errbuf));
	if (e != BODY_OK) {
		ck_assert_ptr_null(json);
		ck_assert_int_gt(strlen(errbuf), 0);
		return e;
	}
	ck_assert_ptr_nonnull(json);
	ck_assert_str_eq(errbuf, "");
	j = parse(json);
	ck_assert_int_eq(body_check_turn(j, errbuf, sizeof(errbuf)), BODY_OK);
	cJSON_Delete(j);
	cJSON_free(json);
	return e;
}

START_TEST(turn_exact_json)
{
	struct body_turn	 bt = turn_base();
	cJSON			*imgs;
	enum body_err		 e;
	char			*json;

	json = body_build_turn(&bt, &e, NULL, 0);
	ck_assert_int_eq(e, BODY_OK);
	ck_assert_str_eq(json, "{\"turnId\":\"t1\",\"author\":{\"id\":\"u1\","
	    "\"name\":\"Ann\"},\"text\":\"hi\",\"memory\":\"\",\"images\":[],"
	    "\"thinking\":\"low\"}");
	cJSON_free(json);

	imgs = parse("[{\"data\":\"AA==\",\"mimeType\":\"image/png\"}]");
	bt.bt_images = imgs;
	bt.bt_memory = NULL;
	bt.bt_text = "say \"hi\"\n\\ \xc3\xa9";
	bt.bt_thinking = "xhigh";
	json = body_build_turn(&bt, &e, NULL, 0);
	ck_assert_int_eq(e, BODY_OK);
	ck_assert_str_eq(json, "{\"turnId\":\"t1\",\"author\":{\"id\":\"u1\","
	    "\"name\":\"Ann\"},\"text\":\"say \\\"hi\\\"\\n\\\\ \xc3\xa9\","
	    "\"memory\":\"\",\"images\":[{\"data\":\"AA==\",\"mimeType\":"
	    "\"image/png\"}],\"thinking\":\"xhigh\"}");
	cJSON_free(json);
	/* The caller's images are still whole. */
	ck_assert_int_eq(check_images(imgs), BODY_OK);
	cJSON_Delete(imgs);
}
END_TEST

START_TEST(turn_author)
{
	struct body_turn	 bt = turn_base();
	char			*s;

	bt.bt_author_id = "";
	bt.bt_author_name = "";
	ck_assert_int_eq(build(&bt), BODY_OK);

	s = repeat("i", AUTHOR_FIELD_MAX, "");
	bt.bt_author_id = s;
	bt.bt_author_name = s;
	ck_assert_int_eq(build(&bt), BODY_OK);
	free(s);
	s = repeat("i", AUTHOR_FIELD_MAX + 1, "");
	bt = turn_base();
	bt.bt_author_id = s;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "author.id"));
	bt = turn_base();
	bt.bt_author_name = s;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "author.name"));
	free(s);
	s = repeat(emoji, AUTHOR_FIELD_MAX / 2, "");
	bt = turn_base();
	bt.bt_author_name = s;
	ck_assert_int_eq(build(&bt), BODY_OK);
	free(s);
	s = repeat(emoji, AUTHOR_FIELD_MAX / 2, "n");
	bt.bt_author_name = s;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	free(s);

	bt = turn_base();
	bt.bt_author_id = "\xc3";
	ck_assert_int_eq(build(&bt), BODY_BAD);
	bt = turn_base();
	bt.bt_author_id = NULL;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "author.id is missing"));
	bt = turn_base();
	bt.bt_author_name = NULL;
	ck_assert_int_eq(build(&bt), BODY_BAD);
}
END_TEST

/* Contract 0.9: principalId of 1 to 256 chars and memoryVisibility, only
 * when given, in 4.1's order. */
START_TEST(turn_principal_visibility)
{
	struct body_turn	 bt = turn_base();
	char			*s, *json;
	enum body_err		 e;

	json = body_build_turn(&bt, &e, errbuf, sizeof(errbuf));
	ck_assert_str_eq(json, "{\"turnId\":\"t1\",\"author\":{\"id\":\"u1\","
	    "\"name\":\"Ann\"},\"text\":\"hi\",\"memory\":\"\",\"images\":[],"
	    "\"thinking\":\"low\"}");
	cJSON_free(json);
	bt.bt_principal_id = "p1";
	bt.bt_memory_visibility = "shared";
	json = body_build_turn(&bt, &e, errbuf, sizeof(errbuf));
	ck_assert_str_eq(json, "{\"turnId\":\"t1\",\"author\":{\"id\":\"u1\","
	    "\"name\":\"Ann\",\"principalId\":\"p1\"},\"text\":\"hi\","
	    "\"memory\":\"\",\"memoryVisibility\":\"shared\",\"images\":[],"
	    "\"thinking\":\"low\"}");
	cJSON_free(json);
	bt.bt_memory_visibility = "private";
	ck_assert_int_eq(build(&bt), BODY_OK);
	bt.bt_memory_visibility = "public";
	ck_assert_int_eq(build(&bt), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "memoryVisibility"));
	bt = turn_base();
	s = repeat(emoji, PRINCIPAL_ID_MAX / 2, "");
	bt.bt_principal_id = s;
	ck_assert_int_eq(build(&bt), BODY_OK);
	free(s);
	s = repeat(emoji, PRINCIPAL_ID_MAX / 2, "p");
	bt.bt_principal_id = s;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "author.principalId is over 256"));
	free(s);
	bt.bt_principal_id = "";
	ck_assert_int_eq(build(&bt), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "author.principalId is empty"));
}
END_TEST

/* The body of POST /worker/ready. */
START_TEST(ready_bodies)
{
	struct body_ready	 r;
	char			*s;

	memset(&r, 0xff, sizeof(r));
	ck_assert_int_eq(body_check_ready("", 0, &r, errbuf, sizeof(errbuf)),
	    BODY_OK);
	ck_assert_int_eq(r.br_private_to | r.br_reader_records |
	    r.br_private_history, 0);
	ck_assert_int_eq(body_check_ready(S("{\"capabilities\":{\"privateTo\":"
	    "true,\"readerRecords\":true,\"later\":[]},\"privateHistory\":true,"
	    "\"more\":1}"), &r, errbuf, sizeof(errbuf)), BODY_OK);
	ck_assert_int_eq(r.br_private_to & r.br_reader_records &
	    r.br_private_history, 1);
	ck_assert_int_eq(body_check_ready(S("{\"capabilities\":{\"privateTo\":"
	    "false}}"), &r, errbuf, sizeof(errbuf)), BODY_OK);
	ck_assert_int_eq(r.br_private_to | r.br_reader_records, 0);
	ck_assert_int_eq(body_check_ready(S("{\"capabilities\":{\"privateTo\":"
	    "\"true\"}}"), &r, errbuf, sizeof(errbuf)), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "booleans"));
	ck_assert_int_eq(body_check_ready(S("{\"capabilities\":true}"), &r,
	    errbuf, sizeof(errbuf)), BODY_BAD);
	ck_assert_int_eq(body_check_ready(S("{\"privateHistory\":null}"), &r,
	    errbuf, sizeof(errbuf)), BODY_BAD);
	ck_assert_int_eq(body_check_ready(S("[]"), &r, errbuf,
	    sizeof(errbuf)), BODY_BAD);
	ck_assert_int_ne(body_check_ready(S("{"), &r, errbuf, sizeof(errbuf)),
	    BODY_OK);
	/* at the limit and one past */
	s = repeat(" ", WORKER_READY_BODY_MAX - 2, "");
	s[0] = '{';
	s[WORKER_READY_BODY_MAX - 3] = '}';
	ck_assert_int_eq(body_check_ready(s, WORKER_READY_BODY_MAX - 2, &r,
	    errbuf, sizeof(errbuf)), BODY_OK);
	free(s);
	s = repeat(" ", WORKER_READY_BODY_MAX, "");
	s[0] = '{';
	s[WORKER_READY_BODY_MAX - 1] = '}';
	ck_assert_int_eq(body_check_ready(s, WORKER_READY_BODY_MAX, &r,
	    errbuf, sizeof(errbuf)), BODY_OK);
	free(s);
	s = repeat(" ", WORKER_READY_BODY_MAX + 1, "");
	s[0] = '{';
	s[WORKER_READY_BODY_MAX] = '}';
	ck_assert_int_eq(body_check_ready(s, WORKER_READY_BODY_MAX + 1, &r,
	    errbuf, sizeof(errbuf)), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "16384"));
	free(s);
}
END_TEST

START_TEST(turn_text_memory)
{
	struct body_turn	 bt = turn_base();
	char			*s;

	s = repeat("t", TURN_TEXT_MAX, "");
	bt.bt_text = s;
	bt.bt_memory = s;
	ck_assert_int_eq(build(&bt), BODY_OK);
	free(s);
	s = repeat("t", TURN_TEXT_MAX + 1, "");
	bt = turn_base();
	bt.bt_text = s;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "text"));
	bt = turn_base();
	bt.bt_memory = s;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "memory"));
	free(s);
	s = repeat(emoji, MEMORY_MAX / 2, "m");
	bt = turn_base();
	bt.bt_memory = s;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	bt.bt_memory = s + 1;	/* not UTF-8 any more */
	ck_assert_int_eq(build(&bt), BODY_BAD);
	bt.bt_memory = s + 4;	/* (MEMORY_MAX / 2 - 1) * 2 + 1 chars */
	ck_assert_int_eq(build(&bt), BODY_OK);
	free(s);

	bt = turn_base();
	bt.bt_text = "";
	bt.bt_memory = "";
	ck_assert_int_eq(build(&bt), BODY_OK);
	bt.bt_memory = NULL;
	ck_assert_int_eq(build(&bt), BODY_OK);
	bt.bt_text = NULL;
	ck_assert_int_eq(build(&bt), BODY_BAD);
}
END_TEST

START_TEST(turn_images)
{
	struct body_turn	 bt = turn_base();
	cJSON			*imgs;
	size_t			 i;

	imgs = cJSON_CreateArray();
	bt.bt_images = imgs;
	ck_assert_int_eq(build(&bt), BODY_OK);
	for (i = 0; i < IMAGES_MAX; i++)
		cJSON_AddItemToArray(imgs, image("AA==", "image/jpeg"));
	ck_assert_int_eq(build(&bt), BODY_OK);
	cJSON_AddItemToArray(imgs, image("AA==", "image/jpeg"));
	ck_assert_int_eq(build(&bt), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "images"));
	cJSON_Delete(imgs);

	imgs = parse("[{\"data\":\"AA==\",\"mimeType\":\"image/bmp\"}]");
	bt.bt_images = imgs;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	cJSON_Delete(imgs);
	imgs = parse("{\"data\":\"AA==\",\"mimeType\":\"image/png\"}");
	bt.bt_images = imgs;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	cJSON_Delete(imgs);
}
END_TEST

START_TEST(turn_thinking)
{
	static const char *const	 ok[] = {
		"low", "medium", "high", "xhigh"
	};
	static const char *const	 bad[] = {
		"", "max", "LOW", "low ", "Medium", "none", "xhigh\n",
	};
	struct body_turn		 bt = turn_base();
	size_t				 i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		bt.bt_thinking = ok[i];
		ck_assert_int_eq(build(&bt), BODY_OK);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bt.bt_thinking = bad[i];
		ck_assert_int_eq(build(&bt), BODY_BAD);
		ck_assert_ptr_nonnull(strstr(errbuf, "thinking"));
	}
	bt.bt_thinking = NULL;
	ck_assert_int_eq(build(&bt), BODY_BAD);
}
END_TEST

START_TEST(turn_id)
{
	static const char *const	 bad[] = {
		"", ".", "..", "a/b", "a\\b", "a\x01", "a\xc2\x80",
	};
	struct body_turn		 bt = turn_base();
	char				*s;
	size_t				 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bt.bt_turn_id = bad[i];
		ck_assert_int_eq(build(&bt), BODY_BAD);
		ck_assert_ptr_nonnull(strstr(errbuf, "turnId"));
	}
	s = repeat("d", SAFE_NAME_MAX, "");
	bt.bt_turn_id = s;
	ck_assert_int_eq(build(&bt), BODY_OK);
	free(s);
	s = repeat("d", SAFE_NAME_MAX + 1, "");
	bt.bt_turn_id = s;
	ck_assert_int_eq(build(&bt), BODY_BAD);
	free(s);
	bt.bt_turn_id = NULL;
	ck_assert_int_eq(build(&bt), BODY_BAD);
}
END_TEST

START_TEST(turn_check_shape)
{
	static const char	 good[] = "{\"turnId\":\"t1\",\"author\":{"
	    "\"id\":\"u\",\"name\":\"n\"},\"text\":\"\",\"memory\":\"\","
	    "\"images\":[],\"thinking\":\"high\"}";
	static const char *const bad[] = {
		"[]", "{}",
		/* each field missing */
		"{\"author\":{\"id\":\"u\",\"name\":\"n\"},\"text\":\"\","
		    "\"memory\":\"\",\"images\":[],\"thinking\":\"high\"}",
		"{\"turnId\":\"t1\",\"text\":\"\",\"memory\":\"\","
		    "\"images\":[],\"thinking\":\"high\"}",
		"{\"turnId\":\"t1\",\"author\":{\"id\":\"u\",\"name\":\"n\"},"
		    "\"memory\":\"\",\"images\":[],\"thinking\":\"high\"}",
		"{\"turnId\":\"t1\",\"author\":{\"id\":\"u\",\"name\":\"n\"},"
		    "\"text\":\"\",\"images\":[],\"thinking\":\"high\"}",
		"{\"turnId\":\"t1\",\"author\":{\"id\":\"u\",\"name\":\"n\"},"
		    "\"text\":\"\",\"memory\":\"\",\"thinking\":\"high\"}",
		"{\"turnId\":\"t1\",\"author\":{\"id\":\"u\",\"name\":\"n\"},"
		    "\"text\":\"\",\"memory\":\"\",\"images\":[]}",
		/* another field, at the top and in author */
		"{\"turnId\":\"t1\",\"author\":{\"id\":\"u\",\"name\":\"n\"},"
		    "\"text\":\"\",\"memory\":\"\",\"images\":[],"
		    "\"thinking\":\"high\",\"channel\":\"c\"}",
		"{\"turnId\":\"t1\",\"author\":{\"id\":\"u\",\"name\":\"n\","
		    "\"bot\":false},\"text\":\"\",\"memory\":\"\","
		    "\"images\":[],\"thinking\":\"high\"}",
		/* wrong types */
		"{\"turnId\":1,\"author\":{\"id\":\"u\",\"name\":\"n\"},"
		    "\"text\":\"\",\"memory\":\"\",\"images\":[],"
		    "\"thinking\":\"high\"}",
		"{\"turnId\":\"t1\",\"author\":\"u\",\"text\":\"\","
		    "\"memory\":\"\",\"images\":[],\"thinking\":\"high\"}",
		"{\"turnId\":\"t1\",\"author\":{\"id\":1,\"name\":\"n\"},"
		    "\"text\":\"\",\"memory\":\"\",\"images\":[],"
		    "\"thinking\":\"high\"}",
		"{\"turnId\":\"t1\",\"author\":{\"id\":\"u\",\"name\":\"n\"},"
		    "\"text\":\"\",\"memory\":null,\"images\":[],"
		    "\"thinking\":\"high\"}",
		"{\"turnId\":\"t1\",\"author\":{\"id\":\"u\",\"name\":\"n\"},"
		    "\"text\":\"\",\"memory\":\"\",\"images\":[],"
		    "\"thinking\":3}",
	};
	cJSON			*j;
	size_t			 i;

	j = parse(good);
	ck_assert_int_eq(body_check_turn(j, errbuf, sizeof(errbuf)), BODY_OK);
	/* A duplicate key, built past the strict parser. */
	cJSON_AddItemToObject(cJSON_GetObjectItem(j, "author"), "id",
	    cJSON_CreateString("v"));
	ck_assert_int_eq(body_check_turn(j, errbuf, sizeof(errbuf)), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "duplicate"));
	cJSON_AddItemToObject(j, "text", cJSON_CreateString(""));
	ck_assert_int_eq(body_check_turn(j, errbuf, sizeof(errbuf)), BODY_BAD);
	cJSON_Delete(j);
	ck_assert_int_eq(body_check_turn(NULL, errbuf, sizeof(errbuf)),
	    BODY_BAD);

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = parse(bad[i]);
		ck_assert_msg(body_check_turn(j, errbuf, sizeof(errbuf)) ==
		    BODY_BAD, "accepted %s", bad[i]);
		cJSON_Delete(j);
	}
}
END_TEST

/*
 * 3.3 Host tools
 */
START_TEST(answer_shapes)
{
	static const char *const	 ok[] = {
		"{\"ok\":true}", "{\"ok\":false}",
		"{\"ok\":true,\"text\":\"r\"}",
		"{\"ok\":false,\"error\":\"e\"}",
		"{\"ok\":true,\"text\":\"\",\"error\":\"\"}",
		"{\"ok\":true,\"image\":{\"data\":\"AA==\",\"mimeType\":"
		    "\"image/png\"}}",
		"{\"image\":{\"mimeType\":\"image/gif\",\"data\":\"AAA=\"},"
		    "\"text\":\"t\",\"ok\":true}",
	};
	static const char *const	 bad[] = {
		"[]", "\"ok\"", "null", "{}",
		"{\"text\":\"r\"}",
		"{\"ok\":1}", "{\"ok\":\"true\"}", "{\"ok\":null}",
		"{\"ok\":true,\"text\":1}", "{\"ok\":true,\"text\":null}",
		"{\"ok\":true,\"text\":[\"r\"]}",
		"{\"ok\":false,\"error\":1}", "{\"ok\":false,\"error\":null}",
		"{\"ok\":false,\"error\":{}}",
		"{\"ok\":true,\"image\":null}",
		"{\"ok\":true,\"image\":\"AA==\"}",
		"{\"ok\":true,\"image\":[]}",
		"{\"ok\":true,\"image\":{\"data\":\"\",\"mimeType\":"
		    "\"image/png\"}}",
		"{\"ok\":true,\"image\":{\"data\":\"AA==\",\"mimeType\":"
		    "\"image/tiff\"}}",
		"{\"ok\":true,\"image\":{\"data\":\"AA==\"}}",
		"{\"ok\":true,\"image\":{\"data\":\"AA==\",\"mimeType\":"
		    "\"image/png\",\"alt\":\"\"}}",
		"{\"ok\":true,\"images\":[]}",
		"{\"ok\":true,\"content\":\"r\"}",
		"{\"ok\":true,\"Text\":\"r\"}",
	};
	size_t				 i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_msg(answer(ok[i]) == BODY_OK, "refused %s: %s", ok[i],
		    errbuf);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(answer(bad[i]) == BODY_BAD, "accepted %s",
		    bad[i]);
		ck_assert_int_gt(strlen(errbuf), 0);
	}
	ck_assert_int_eq(answer("{\"ok\":true"), BODY_INVALID_JSON);
	ck_assert_int_eq(answer("{\"ok\":true,\"ok\":true}"),
	    BODY_INVALID_JSON);
	ck_assert_int_eq(answer("{\"ok\":true,\"text\":\"a\\u0000\"}"),
	    BODY_INVALID_JSON);
	ck_assert_int_eq(answer("{\"ok\":true,\"image\":{\"data\":\"AA==\","
	    "\"data\":\"AA==\",\"mimeType\":\"image/png\"}}"),
	    BODY_INVALID_JSON);
	ck_assert_int_eq(body_check_tool_answer_json(NULL, NULL, 0), BODY_BAD);
}
END_TEST

static enum body_err
answer_field(const char *field, const char *value)
{
	struct buf	 b = { NULL, 0, 0 };
	enum body_err	 e;

	buf_str(&b, "{\"ok\":true,\"");
	buf_str(&b, field);
	buf_str(&b, "\":\"");
	buf_str(&b, value);
	buf_str(&b, "\"}");
	e = answer_n(b.b_data, b.b_len);
	free(b.b_data);
	return e;
}

START_TEST(answer_limits)
{
	char	*s;

	s = repeat("t", TOOL_TEXT_MAX, "");
	ck_assert_int_eq(answer_field("text", s), BODY_OK);
	free(s);
	s = repeat("t", TOOL_TEXT_MAX + 1, "");
	ck_assert_int_eq(answer_field("text", s), BODY_BAD);
	free(s);
	s = repeat(emoji, TOOL_TEXT_MAX / 2, "");
	ck_assert_int_eq(answer_field("text", s), BODY_OK);
	free(s);
	s = repeat(emoji, TOOL_TEXT_MAX / 2, "t");
	ck_assert_int_eq(answer_field("text", s), BODY_BAD);
	free(s);

	s = repeat("e", TOOL_ERROR_MAX, "");
	ck_assert_int_eq(answer_field("error", s), BODY_OK);
	free(s);
	s = repeat("e", TOOL_ERROR_MAX + 1, "");
	ck_assert_int_eq(answer_field("error", s), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "error"));
	free(s);
	s = repeat(emoji, TOOL_ERROR_MAX / 2, "e");
	ck_assert_int_eq(answer_field("error", s), BODY_BAD);
	free(s);

	/* contract 0.9: privateTo, 1 to 256 chars */
	s = repeat("p", PRINCIPAL_ID_MAX, "");
	ck_assert_int_eq(answer_field("privateTo", s), BODY_OK);
	free(s);
	s = repeat("p", PRINCIPAL_ID_MAX + 1, "");
	ck_assert_int_eq(answer_field("privateTo", s), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "privateTo"));
	free(s);
	ck_assert_int_eq(answer_field("privateTo", ""), BODY_BAD);
	ck_assert_int_eq(answer("{\"ok\":true,\"privateTo\":7}"), BODY_BAD);
}
END_TEST

START_TEST(answer_image_limit)
{
	struct buf	 b = { NULL, 0, 0 };
	char		*s;

	s = b64_of(IMAGE_BYTES_MAX);
	buf_str(&b, "{\"ok\":true,\"image\":{\"mimeType\":\"image/png\","
	    "\"data\":\"");
	buf_str(&b, s);
	buf_str(&b, "\"}}");
	ck_assert_int_eq(answer_n(b.b_data, b.b_len), BODY_OK);
	free(s);
	free(b.b_data);
	memset(&b, 0, sizeof(b));
	s = b64_of(IMAGE_BYTES_MAX + 1);
	buf_str(&b, "{\"ok\":true,\"image\":{\"mimeType\":\"image/png\","
	    "\"data\":\"");
	buf_str(&b, s);
	buf_str(&b, "\"}}");
	ck_assert_int_eq(answer_n(b.b_data, b.b_len), BODY_BAD);
	free(s);
	free(b.b_data);
}
END_TEST

START_TEST(tool_input_texts)
{
	const char	*why;
	cJSON		*in;

	ck_assert_int_eq(body_tool_input(S("{\"input\":{\"q\":\"x\"},"
	    "\"speaker\":{\"id\":\"forged\"}}"), &in, &why, errbuf,
	    sizeof(errbuf)), BODY_OK);
	ck_assert_ptr_null(why);
	ck_assert_str_eq(errbuf, "");
	ck_assert_str_eq(cJSON_GetObjectItem(in, "q")->valuestring, "x");
	ck_assert_ptr_null(in->string);
	cJSON_Delete(in);
	ck_assert_ptr_null(tool_input_why("{\"input\":{}}"));

	ck_assert_str_eq(tool_input_why(""), "Invalid input");
	ck_assert_str_eq(tool_input_why("{"), "Invalid input");
	ck_assert_str_eq(tool_input_why("[]"), "Invalid input");
	ck_assert_str_eq(tool_input_why("\"input\""), "Invalid input");
	ck_assert_str_eq(tool_input_why("null"), "Invalid input");
	ck_assert_str_eq(tool_input_why("{\"input\":{},\"input\":{}}"),
	    "Invalid input");
	ck_assert_str_eq(tool_input_why("{\"input\":{\"a\":1,\"a\":2}}"),
	    "Invalid input");
	ck_assert_str_eq(tool_input_why("{\"input\":{\"a\":\"\\u0000\"}}"),
	    "Invalid input");

	ck_assert_str_eq(tool_input_why("{}"), "Invalid tool input");
	ck_assert_str_eq(tool_input_why("{\"Input\":{}}"),
	    "Invalid tool input");
	ck_assert_str_eq(tool_input_why("{\"input\":[]}"),
	    "Invalid tool input");
	ck_assert_str_eq(tool_input_why("{\"input\":null}"),
	    "Invalid tool input");
	ck_assert_str_eq(tool_input_why("{\"input\":\"{}\"}"),
	    "Invalid tool input");
	ck_assert_str_eq(tool_input_why("{\"input\":1}"), "Invalid tool input");
}
END_TEST

START_TEST(tool_input_limit)
{
	static const char	 head[] = "{\"input\":{}}";
	const char		*why;
	cJSON			*in;
	char			*b;

	b = malloc(TOOL_BODY_MAX + 1);
	ck_assert_ptr_nonnull(b);
	memset(b, '\n', TOOL_BODY_MAX + 1);
	memcpy(b, head, sizeof(head) - 1);
	ck_assert_int_eq(body_tool_input(b, TOOL_BODY_MAX, &in, &why, NULL, 0),
	    BODY_OK);
	cJSON_Delete(in);
	ck_assert_int_eq(body_tool_input(b, TOOL_BODY_MAX + 1, &in, &why,
	    errbuf, sizeof(errbuf)), BODY_BAD);
	ck_assert_str_eq(why, "Invalid input");
	ck_assert_ptr_null(in);
	free(b);
}
END_TEST

/* Error texts are cut to the room given, never overrun. */
START_TEST(err_room)
{
	char	 small[8];

	memset(small, 'x', sizeof(small));
	ck_assert_int_eq(body_check_result(S("[]"), "t1", NULL, small, 4),
	    409);
	ck_assert_int_eq(small[3], '\0');
	ck_assert_int_eq(small[4], 'x');
	ck_assert_int_eq(body_check_result(S("[]"), "t1", NULL, small, 0),
	    409);
	ck_assert_int_eq(body_check_tool_answer(S("{}"), NULL, 0), BODY_BAD);
}
END_TEST

static Suite *
bodies_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("bodies");

	tc = tcase_create("json");
	tcase_add_test(tc, json_accepts);
	tcase_add_test(tc, json_refuses);
	tcase_add_test(tc, json_number_range);
	tcase_add_test(tc, print_exact_numbers);
	tcase_add_test(tc, print_as_cjson);
	tcase_add_test(tc, json_dups_sorted);
	tcase_add_test(tc, json_nesting);
	tcase_add_test(tc, json_nodes);
	tcase_add_test(tc, json_err_to_string);
	tcase_add_test(tc, err_room);
	suite_add_tcase(s, tc);

	tc = tcase_create("images");
	tcase_set_timeout(tc, BIG_TIMEOUT);
	tcase_add_test(tc, image_mime_types);
	tcase_add_test(tc, image_size);
	tcase_add_test(tc, image_refusals);
	tcase_add_test(tc, images_count);
	tcase_add_test(tc, images_total);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_set_timeout(tc, BIG_TIMEOUT);
	tcase_add_test(tc, files_count);
	tcase_add_test(tc, files_size);
	tcase_add_test(tc, files_total);
	tcase_add_test(tc, files_names);
	tcase_add_test(tc, files_unique);
	tcase_add_test(tc, files_shape);
	suite_add_tcase(s, tc);

	tc = tcase_create("result");
	tcase_set_timeout(tc, BIG_TIMEOUT);
	tcase_add_test(tc, result_accepts);
	tcase_add_test(tc, result_invalid_json);
	tcase_add_test(tc, result_body_limit);
	tcase_add_test(tc, result_mismatch);
	tcase_add_test(tc, result_text_limit);
	tcase_add_test(tc, result_error_limit);
	tcase_add_test(tc, result_files_rules);
	tcase_add_test(tc, result_files_total);
	tcase_add_test(tc, result_order);
	suite_add_tcase(s, tc);

	tc = tcase_create("turn");
	tcase_set_timeout(tc, BIG_TIMEOUT);
	tcase_add_test(tc, turn_exact_json);
	tcase_add_test(tc, turn_author);
	tcase_add_test(tc, turn_principal_visibility);
	tcase_add_test(tc, ready_bodies);
	tcase_add_test(tc, turn_text_memory);
	tcase_add_test(tc, turn_images);
	tcase_add_test(tc, turn_thinking);
	tcase_add_test(tc, turn_id);
	tcase_add_test(tc, turn_check_shape);
	suite_add_tcase(s, tc);

	tc = tcase_create("tools");
	tcase_set_timeout(tc, BIG_TIMEOUT);
	tcase_add_test(tc, answer_shapes);
	tcase_add_test(tc, answer_limits);
	tcase_add_test(tc, answer_image_limit);
	tcase_add_test(tc, tool_input_texts);
	tcase_add_test(tc, tool_input_limit);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(bodies_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
