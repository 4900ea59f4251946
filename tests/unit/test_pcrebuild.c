/*
 * broker/pcrebuild.c: the one call of a precheck run.  Every refusal, the
 * envelope the broker writes whatever the script sent (id 1, absent
 * arguments {}), the 64 KiB bound at the limit and one past it.  Every
 * body it writes is admitted by egress's own reading of an MCP call
 * (egress/policy.c) and rebuilt again unchanged.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "limits.h"
#include "policy.h"
#include "rebuild.h"
#include "violation.h"

static const char *const granted[] = { "search", "fetch_page" };

static char	 err[256];

static int
run_tools(const char *body, size_t len, const char *const *tools,
    size_t ntools, char **out)
{
	size_t	 outlen = 0;
	int	 r;

	memset(err, 'x', sizeof(err));
	*out = NULL;
	r = rebuild_precheck_call(body, len, tools, ntools, out, &outlen, err,
	    sizeof(err));
	if (r == 0) {
		ck_assert_ptr_nonnull(*out);
		ck_assert_uint_eq(strlen(*out), outlen);
	} else {
		ck_assert_ptr_null(*out);
		ck_assert_uint_eq(outlen, 0);
		ck_assert_ptr_nonnull(memchr(err, '\0', sizeof(err)));
	}
	return r;
}

static int
run(const char *body, char **out)
{
	return run_tools(body, strlen(body), granted, 2, out);
}

/* The output is exactly want, egress admits it, and it rebuilds to
 * itself. */
static void
expect_len(const char *body, size_t len, const char *want)
{
	struct policy_mcp	 pm = { granted, 2, 0 };
	char			*out, *again, why[256];

	ck_assert_msg(run_tools(body, len, granted, 2, &out) == 0,
	    "refused: %.200s: %s", body, err);
	ck_assert_str_eq(out, want);
	ck_assert_msg(policy_mcp_check(out, strlen(out), &pm, why,
	    sizeof(why)) == VIOLATION_NONE, "egress refuses %s: %s", out, why);
	ck_assert_int_eq(run(out, &again), 0);
	ck_assert_str_eq(again, out);
	free(again);
	free(out);
}

static void
expect(const char *body, const char *want)
{
	expect_len(body, strlen(body), want);
}

static void
refuse_len(const char *body, size_t len, int want)
{
	char	*out;
	int	 r;

	r = run_tools(body, len, granted, 2, &out);
	ck_assert_msg(r == want, "%.200s: got %d want %d (%s)", body, r, want,
	    err);
}

static void
refuse(const char *body, int want)
{
	refuse_len(body, strlen(body), want);
}

#define CALL(name, rest)	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":" \
	"\"tools/call\",\"params\":{\"name\":\"" name "\"" rest "}}"
#define OUT(name, args)		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":" \
	"\"tools/call\",\"params\":{\"name\":\"" name "\",\"arguments\":" \
	args "}}"

START_TEST(accepted)
{
	expect(CALL("search", ",\"arguments\":{\"q\":\"x\",\"n\":[1,{}]}"),
	    OUT("search", "{\"q\":\"x\",\"n\":[1,{}]}"));
	expect(CALL("fetch_page", ",\"arguments\":{}"),
	    OUT("fetch_page", "{}"));
	/* Numbers keep their value. */
	expect(CALL("search", ",\"arguments\":{\"a\":-7.5,\"b\":1e3,"
	    "\"c\":9007199254740991}"),
	    OUT("search", "{\"a\":-7.5,\"b\":1000,\"c\":9007199254740991}"));
}
END_TEST

START_TEST(arguments_absent)
{
	expect(CALL("search", ""), OUT("search", "{}"));
	expect("{\"method\":\"tools/call\",\"params\":{\"name\":\"search\"}}",
	    OUT("search", "{}"));
}
END_TEST

/* The id, jsonrpc and every other field are the broker's, or dropped. */
START_TEST(envelope_ours)
{
	static const char *const ids[] = {
		"", "\"id\":1,", "\"id\":\"x\",", "\"id\":null,", "\"id\":-3,",
		"\"id\":{\"a\":1},", "\"id\":[1],", "\"id\":1e300,",
		"\"id\":true,",
	};
	char	 body[512];
	size_t	 i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		(void)snprintf(body, sizeof(body), "{%s\"method\":"
		    "\"tools/call\",\"params\":{\"name\":\"search\","
		    "\"arguments\":{}}}", ids[i]);
		expect(body, OUT("search", "{}"));
	}
	expect("{\"jsonrpc\":\"1.0\",\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"search\",\"arguments\":{},\"_meta\":{\"p\":1},"
	    "\"task\":{}},\"result\":5,\"error\":{},\"x\":[]}",
	    OUT("search", "{}"));
	expect("{\"params\":{\"arguments\":{\"k\":\"v\"},\"name\":\"search\"},"
	    "\"method\":\"tools/call\"}", OUT("search", "{\"k\":\"v\"}"));
}
END_TEST

START_TEST(refused_shape)
{
	static const char *const bodies[] = {
		"[]", "[" CALL("search", ",\"arguments\":{}") "]", "\"x\"",
		"1", "null", "true", "{}",
	};
	size_t	 i;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		refuse(bodies[i], REBUILD_MCP_REFUSED);
}
END_TEST

START_TEST(refused_method)
{
	static const char *const methods[] = {
		"\"tools/list\"", "\"initialize\"", "\"ping\"",
		"\"notifications/initialized\"", "\"resources/read\"",
		"\"prompts/get\"", "\"sampling/createMessage\"",
		"\"Tools/call\"", "\"tools/call \"", "\"tools/call\\u0020\"",
		"\"\"", "null", "1", "[\"tools/call\"]", "{}",
	};
	char	 body[512];
	size_t	 i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		(void)snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\","
		    "\"id\":1,\"method\":%s,\"params\":{\"name\":\"search\","
		    "\"arguments\":{}}}", methods[i]);
		refuse(body, REBUILD_MCP_REFUSED);
	}
	refuse("{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"name\":"
	    "\"search\",\"arguments\":{}}}", REBUILD_MCP_REFUSED);
}
END_TEST

START_TEST(refused_params)
{
	refuse("{\"method\":\"tools/call\"}", REBUILD_MCP_REFUSED);
	refuse("{\"method\":\"tools/call\",\"params\":null}",
	    REBUILD_MCP_REFUSED);
	refuse("{\"method\":\"tools/call\",\"params\":[\"search\",{}]}",
	    REBUILD_MCP_REFUSED);
	refuse("{\"method\":\"tools/call\",\"params\":\"search\"}",
	    REBUILD_MCP_REFUSED);
	refuse("{\"method\":\"tools/call\",\"params\":1}",
	    REBUILD_MCP_REFUSED);
}
END_TEST

START_TEST(refused_tool)
{
	static const char *const names[] = {
		"\"delete_all\"", "\"Search\"", "\"search \"", "\"searc\"",
		"\"searchx\"", "\"\"", "[\"search\"]", "null", "1",
		"{\"name\":\"search\"}",
	};
	static const char	 call[] = CALL("search", ",\"arguments\":{}");
	char			 body[512], *out;
	size_t			 i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		(void)snprintf(body, sizeof(body), "{\"method\":\"tools/call\","
		    "\"params\":{\"name\":%s,\"arguments\":{}}}", names[i]);
		refuse(body, REBUILD_MCP_REFUSED);
	}
	refuse("{\"method\":\"tools/call\",\"params\":{\"arguments\":{}}}",
	    REBUILD_MCP_REFUSED);
	/* Another server's tool, and no tool at all. */
	{
		static const char *const other[] = { "echo" };

		ck_assert_int_eq(run_tools(call, strlen(call), other, 1, &out),
		    REBUILD_MCP_REFUSED);
	}
	ck_assert_int_eq(run_tools(call, strlen(call), NULL, 0, &out),
	    REBUILD_MCP_REFUSED);
}
END_TEST

START_TEST(refused_arguments)
{
	static const char *const args[] = {
		"[]", "[{}]", "\"{}\"", "null", "0", "true", "false", "\"\"",
	};
	char	 body[512];
	size_t	 i;

	for (i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		(void)snprintf(body, sizeof(body), "{\"method\":\"tools/call\","
		    "\"params\":{\"name\":\"search\",\"arguments\":%s}}",
		    args[i]);
		refuse(body, REBUILD_MCP_REFUSED);
	}
}
END_TEST

/* What is not strict JSON is 400, before any rule of the call. */
START_TEST(invalid)
{
	static const char	 nul[] = "{\"method\":\"tools/call\",\"params\":"
	    "{\"name\":\"search\",\"arguments\":{\"a\":\"\0\"}}}";

	refuse("", REBUILD_MCP_INVALID);
	refuse(" ", REBUILD_MCP_INVALID);
	refuse("{", REBUILD_MCP_INVALID);
	refuse("not json", REBUILD_MCP_INVALID);
	refuse(CALL("search", ",\"arguments\":{}") "x", REBUILD_MCP_INVALID);
	refuse(CALL("search", ",\"arguments\":{}") "{}", REBUILD_MCP_INVALID);
	refuse("{'method':'tools/call'}", REBUILD_MCP_INVALID);
	refuse_len(nul, sizeof(nul) - 1, REBUILD_MCP_INVALID);
	refuse(CALL("search", ",\"arguments\":{\"a\":\"\\u0000\"}"),
	    REBUILD_MCP_INVALID);
	refuse(CALL("search", ",\"arguments\":{\"a\":\"\xff\"}"),
	    REBUILD_MCP_INVALID);
	refuse(CALL("search", ",\"arguments\":{\"a\":\"\x01\"}"),
	    REBUILD_MCP_INVALID);
	refuse(CALL("search", ",\"arguments\":{\"a\":1e999}"),
	    REBUILD_MCP_INVALID);
	/* A key given twice: cJSON reads the first, an upstream maybe the
	 * last. */
	refuse("{\"method\":\"tools/call\",\"params\":{\"name\":\"search\","
	    "\"name\":\"delete_all\",\"arguments\":{}}}", REBUILD_MCP_INVALID);
	refuse("{\"method\":\"tools/list\",\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\"}}", REBUILD_MCP_INVALID);
	refuse(CALL("search", ",\"arguments\":{},\"arguments\":{}"),
	    REBUILD_MCP_INVALID);
	refuse(CALL("search", ",\"arguments\":{\"a\":1,\"a\":2}"),
	    REBUILD_MCP_INVALID);
}
END_TEST

/* A body of exactly len bytes: a call whose argument is padded. */
static char *
padded(size_t len)
{
	static const char	 head[] = "{\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\",\"arguments\":{\"p\":\"";
	static const char	 tail[] = "\"}}}";
	size_t			 fill = len - (sizeof(head) - 1) -
	    (sizeof(tail) - 1);
	char			*b;

	ck_assert_ptr_nonnull(b = malloc(len + 1));
	memcpy(b, head, sizeof(head) - 1);
	memset(b + sizeof(head) - 1, 'a', fill);
	memcpy(b + len - (sizeof(tail) - 1), tail, sizeof(tail));
	ck_assert_uint_eq(strlen(b), len);
	return b;
}

START_TEST(request_max)
{
	char	*b, *out;
	size_t	 want;

	b = padded(PRECHECK_REQUEST_MAX);
	ck_assert_int_eq(run_tools(b, PRECHECK_REQUEST_MAX, granted, 2, &out),
	    0);
	want = PRECHECK_REQUEST_MAX - strlen("{\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\",\"arguments\":{\"p\":\"") - 4;
	ck_assert_uint_eq(strlen(out), strlen(OUT("search", "{\"p\":\"\"}")) +
	    want);
	free(out);
	free(b);

	b = padded(PRECHECK_REQUEST_MAX + 1);
	refuse_len(b, PRECHECK_REQUEST_MAX + 1, REBUILD_TOO_LARGE);
	free(b);
	/* Too large is decided on the length, before any byte is read. */
	refuse_len("{", PRECHECK_REQUEST_MAX + 1, REBUILD_TOO_LARGE);
}
END_TEST

/* The reason never runs past err, however small. */
START_TEST(short_err)
{
	char	*out = NULL, small[4];
	size_t	 outlen;

	ck_assert_int_eq(rebuild_precheck_call("[]", 2, granted, 2, &out,
	    &outlen, small, sizeof(small)), REBUILD_MCP_REFUSED);
	ck_assert_uint_lt(strlen(small), sizeof(small));
	ck_assert_int_eq(rebuild_precheck_call("{", 1, granted, 2, &out,
	    &outlen, small, sizeof(small)), REBUILD_MCP_INVALID);
	ck_assert_uint_lt(strlen(small), sizeof(small));
	ck_assert_int_eq(rebuild_precheck_call("[]", 2, granted, 2, &out,
	    &outlen, NULL, 0), REBUILD_MCP_REFUSED);
}
END_TEST

static Suite *
pcrebuild_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("pcrebuild");
	tc = tcase_create("accepted");
	tcase_add_test(tc, accepted);
	tcase_add_test(tc, arguments_absent);
	tcase_add_test(tc, envelope_ours);
	suite_add_tcase(s, tc);
	tc = tcase_create("refused");
	tcase_add_test(tc, refused_shape);
	tcase_add_test(tc, refused_method);
	tcase_add_test(tc, refused_params);
	tcase_add_test(tc, refused_tool);
	tcase_add_test(tc, refused_arguments);
	tcase_add_test(tc, invalid);
	suite_add_tcase(s, tc);
	tc = tcase_create("bounds");
	tcase_add_test(tc, request_max);
	tcase_add_test(tc, short_err);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(pcrebuild_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
