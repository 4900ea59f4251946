/*
 * The answer of a precheck run's MCP call (egress/deepcheck.c): its JSON-RPC
 * message taken out of a JSON body or an event stream, and the look for the
 * credential at every level of it, in every form the reflection filter
 * knows, strings that hold JSON included, down to PRECHECK_DEPTH_MAX levels.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "deepcheck.h"
#include "limits.h"
#include "reflect.h"

#define SECRET	"sk-test-Zq7Rt3Wv9pLm2Xc8"

static enum deepcheck_result
check_body(const char *body)
{
	struct reflect		*rf;
	enum deepcheck_result	 r;
	cJSON			*msg;

	ck_assert_ptr_nonnull(rf = reflect_new(SECRET, strlen(SECRET)));
	msg = deepcheck_message(body, strlen(body), 0);
	ck_assert_msg(msg != NULL, "no message in %.80s", body);
	r = deepcheck_walk(msg, rf);
	cJSON_Delete(msg);
	reflect_free(rf);
	return r;
}

static void
b64(const char *in, int url, char *out)
{
	static const char std[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static const char uri[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	const char		*t = url ? uri : std;
	const unsigned char	*p = (const unsigned char *)in;
	size_t			 n = strlen(in), i;
	unsigned		 v;

	for (i = 0; i + 2 < n; i += 3) {
		v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
		*out++ = t[v >> 18 & 63];
		*out++ = t[v >> 12 & 63];
		*out++ = t[v >> 6 & 63];
		*out++ = t[v & 63];
	}
	if (n - i == 1) {
		v = (unsigned)p[i] << 16;
		*out++ = t[v >> 18 & 63];
		*out++ = t[v >> 12 & 63];
	} else if (n - i == 2) {
		v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
		*out++ = t[v >> 18 & 63];
		*out++ = t[v >> 12 & 63];
		*out++ = t[v >> 6 & 63];
	}
	*out = '\0';
}

START_TEST(clean_passes)
{
	ck_assert_int_eq(check_body("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":"
	    "{\"content\":[{\"type\":\"text\",\"text\":\"sk-test nothing\"}]}}"),
	    DEEPCHECK_CLEAN);
	ck_assert_int_eq(check_body("{}"), DEEPCHECK_CLEAN);
}
END_TEST

START_TEST(plain)
{
	ck_assert_int_eq(check_body("{\"result\":{\"text\":\"the key is "
	    SECRET " ok\"}}"), DEEPCHECK_CARRIES);
}
END_TEST

START_TEST(json_escaped)
{
	/* JSON text whose decoded string holds the secret escaped again */
	ck_assert_int_eq(check_body("{\"result\":\"\\\\u0073k-test-Zq7Rt3Wv9p"
	    "Lm2Xc8\"}"), DEEPCHECK_CARRIES);
	/* escaped in the JSON itself: decoded, it is the secret */
	ck_assert_int_eq(check_body("{\"result\":\"\\u0073k\\u002dtest-Zq7Rt3"
	    "Wv9pLm2Xc8\"}"), DEEPCHECK_CARRIES);
}
END_TEST

START_TEST(base64_forms)
{
	char	 enc[128], body[256];

	b64(SECRET, 0, enc);
	snprintf(body, sizeof(body), "{\"result\":\"%s\"}", enc);
	ck_assert_int_eq(check_body(body), DEEPCHECK_CARRIES);
	b64("xx" SECRET "yy", 1, enc);
	snprintf(body, sizeof(body), "{\"result\":[\"a\",\"%s\"]}", enc);
	ck_assert_int_eq(check_body(body), DEEPCHECK_CARRIES);
	/* one that only base64url can be */
	b64("\xfb\xff" SECRET, 1, enc);
	ck_assert_ptr_nonnull(strpbrk(enc, "-_"));
	snprintf(body, sizeof(body), "{\"r\":\"%s\"}", enc);
	ck_assert_int_eq(check_body(body), DEEPCHECK_CARRIES);
}
END_TEST

START_TEST(hex)
{
	char	 body[256], *p;
	size_t	 i;

	p = body + sprintf(body, "{\"result\":{\"blob\":\"");
	for (i = 0; i < strlen(SECRET); i++)
		p += sprintf(p, i % 2 ? "%02X" : "%02x",
		    (unsigned char)SECRET[i]);
	strcpy(p, "\"}}");
	ck_assert_int_eq(check_body(body), DEEPCHECK_CARRIES);
}
END_TEST

START_TEST(in_a_key)
{
	ck_assert_int_eq(check_body("{\"result\":{\"" SECRET "\":1}}"),
	    DEEPCHECK_CARRIES);
	ck_assert_int_eq(check_body("{\"result\":[{\"x\":{\"pre" SECRET
	    "\":null}}]}"), DEEPCHECK_CARRIES);
}
END_TEST

START_TEST(string_holding_json)
{
	char	 enc[128], body[256];

	/* a string that holds JSON that holds it */
	ck_assert_int_eq(check_body("{\"result\":{\"text\":\"{\\\"a\\\":"
	    "\\\"" SECRET "\\\"}\"}}"), DEEPCHECK_CARRIES);
	/* inside JSON inside a string inside JSON inside a string */
	ck_assert_int_eq(check_body("{\"r\":\" [\\\"{\\\\\\\"k\\\\\\\":"
	    "\\\\\\\"" SECRET "\\\\\\\"}\\\"]\"}"), DEEPCHECK_CARRIES);
	/* escaped twice: the outer string shows "\\u0073k...", which
	 * holds no form of it; the inner string is \u0073k..., which does */
	ck_assert_int_eq(check_body("{\"r\":\"[\\\"\\\\\\\\u0073k-test-"
	    "Zq7Rt3Wv9pLm2Xc8\\\"]\"}"), DEEPCHECK_CARRIES);
	b64(SECRET, 0, enc);
	snprintf(body, sizeof(body), "{\"r\":\"[1,\\\"%s\\\"]\"}", enc);
	ck_assert_int_eq(check_body(body), DEEPCHECK_CARRIES);
	/* unparseable JSON-looking text is fine */
	ck_assert_int_eq(check_body("{\"r\":\"{not json\"}"),
	    DEEPCHECK_CLEAN);
	ck_assert_int_eq(check_body("{\"r\":\" [1,2,{\\\"a\\\":\\\"b\\\"}]\"}"),
	    DEEPCHECK_CLEAN);
}
END_TEST

/* n arrays nested, the outermost a member of the message's "r": the
 * innermost at level n + 1 */
static char *
nested(unsigned n, const char *inner)
{
	size_t	 len = 2 * n + strlen(inner) + 16;
	char	*s, *p;

	ck_assert_ptr_nonnull(s = malloc(len));
	p = s + sprintf(s, "{\"r\":");
	for (unsigned i = 0; i < n; i++)
		*p++ = '[';
	p += sprintf(p, "%s", inner);
	for (unsigned i = 0; i < n; i++)
		*p++ = ']';
	strcpy(p, "}");
	return s;
}

START_TEST(depth)
{
	char	*s;

	/* the message at level 1, its member at 2: 63 arrays more reach
	 * level 64 exactly */
	s = nested(PRECHECK_DEPTH_MAX - 1, "");
	ck_assert_int_eq(check_body(s), DEEPCHECK_CLEAN);
	free(s);
	s = nested(PRECHECK_DEPTH_MAX, "");
	ck_assert_int_eq(check_body(s), DEEPCHECK_CARRIES);
	free(s);
	/* a scalar is a level of its own */
	s = nested(PRECHECK_DEPTH_MAX - 2, "1");
	ck_assert_int_eq(check_body(s), DEEPCHECK_CLEAN);
	free(s);
	s = nested(PRECHECK_DEPTH_MAX - 1, "1");
	ck_assert_int_eq(check_body(s), DEEPCHECK_CARRIES);
	free(s);
	/* a string's JSON is one level below the string: the string at 63,
	 * its array at 64 */
	s = nested(PRECHECK_DEPTH_MAX - 3, "\"[]\"");
	ck_assert_int_eq(check_body(s), DEEPCHECK_CLEAN);
	free(s);
	s = nested(PRECHECK_DEPTH_MAX - 2, "\"[]\"");
	ck_assert_int_eq(check_body(s), DEEPCHECK_CARRIES);
	free(s);
	/* a string at level 64 that is no JSON */
	s = nested(PRECHECK_DEPTH_MAX - 2, "\"plain\"");
	ck_assert_int_eq(check_body(s), DEEPCHECK_CLEAN);
	free(s);
}
END_TEST

static cJSON *
message(const char *body, int sse)
{
	return deepcheck_message(body, strlen(body), sse);
}

static void
is_message(cJSON *m, const char *want)
{
	char	*s;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(s = cJSON_PrintUnformatted(m));
	ck_assert_str_eq(s, want);
	free(s);
	cJSON_Delete(m);
}

START_TEST(json_body)
{
	is_message(message(" {\"id\": 1,\n \"result\": {}} \r\n", 0),
	    "{\"id\":1,\"result\":{}}");
	ck_assert_ptr_null(message("[1]", 0));
	ck_assert_ptr_null(message("\"x\"", 0));
	ck_assert_ptr_null(message("{} {}", 0));
	ck_assert_ptr_null(message("{\"a\":1,}", 0));
	ck_assert_ptr_null(message("", 0));
	/* an event stream is not read as one without its content-type */
	ck_assert_ptr_null(message("data: {}\n\n", 0));
	/* bad UTF-8 */
	ck_assert_ptr_null(message("{\"a\":\"\xff\"}", 0));
}
END_TEST

START_TEST(sse_data_joined)
{
	is_message(message("event: message\r\ndata: {\"id\":1,\r\ndata:"
	    "\"result\":\r\ndata:  {}}\r\n\r\n", 1),
	    "{\"id\":1,\"result\":{}}");
	/* the end of the text ends the event */
	is_message(message("data: {\"a\":\ndata: 2}", 1), "{\"a\":2}");
	/* comments and other fields are not data */
	is_message(message(": hi\nid: 4\ndata: {\"b\":true}\nretry: 1\n\n", 1),
	    "{\"b\":true}");
}
END_TEST

START_TEST(sse_last_wins)
{
	is_message(message("data: {\"n\":1}\n\ndata: {\"n\":2}\n\n", 1),
	    "{\"n\":2}");
	/* the last one that parses to an object */
	is_message(message("data: {\"n\":1}\n\ndata: {\"n\":2}\n\n"
	    "data: [3]\n\ndata: not json\n\n\n\n", 1), "{\"n\":2}");
	/* lines joined across what was meant as two events without a blank
	 * line: one event, not JSON; the earlier one stands */
	is_message(message("data: {\"n\":1}\n\ndata: {\"n\":2}\n"
	    "data: {\"n\":3}\n", 1), "{\"n\":1}");
}
END_TEST

START_TEST(sse_no_message)
{
	ck_assert_ptr_null(message("", 1));
	ck_assert_ptr_null(message("\n\n\n", 1));
	ck_assert_ptr_null(message("event: x\n\n", 1));
	ck_assert_ptr_null(message("data: [1]\n\ndata: 2\n\n", 1));
	ck_assert_ptr_null(message("data:\n\n", 1));
	/* data: must start the line */
	ck_assert_ptr_null(message(" data: {}\n\n", 1));
	ck_assert_ptr_null(message("{\"a\":1}", 1));
}
END_TEST

static Suite *
deepcheck_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("deepcheck");

	tc = tcase_create("walk");
	tcase_add_test(tc, clean_passes);
	tcase_add_test(tc, plain);
	tcase_add_test(tc, json_escaped);
	tcase_add_test(tc, base64_forms);
	tcase_add_test(tc, hex);
	tcase_add_test(tc, in_a_key);
	tcase_add_test(tc, string_holding_json);
	tcase_add_test(tc, depth);
	suite_add_tcase(s, tc);

	tc = tcase_create("message");
	tcase_add_test(tc, json_body);
	tcase_add_test(tc, sse_data_joined);
	tcase_add_test(tc, sse_last_wins);
	tcase_add_test(tc, sse_no_message);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(deepcheck_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
