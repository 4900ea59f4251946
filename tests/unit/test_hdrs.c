/*
 * Header rules of egress/hdrs.c (PROTOCOL.md 3.2, 3.3): what goes upstream,
 * in which order, and which answer headers come back; every length at its
 * limit and one past it.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cred.h"
#include "hdrs.h"
#include "limits.h"
#include "reflect.h"
#include "validate.h"

#ifndef nitems
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))
#endif

static const char	token[] = "sk-ant-api03-TestToken_0123456789-abcdef";
static const char	bearer[] = "Bearer sk-ant-api03-TestToken_0123456789-abcdef";

/* n copies of unit, plus tail; freed by the caller. */
static char *
repeat(const char *unit, size_t n, const char *tail)
{
	size_t	 ul = strlen(unit), tl = strlen(tail), i;
	char	*s;

	s = malloc(ul * n + tl + 1);
	ck_assert_ptr_nonnull(s);
	for (i = 0; i < n; i++)
		memcpy(s + i * ul, unit, ul);
	memcpy(s + ul * n, tail, tl + 1);
	return s;
}

/* hr holds exactly the want list, in order. */
static void
check_list(const struct hdrs_req *hr, const struct hdr *want, size_t nwant)
{
	size_t	 i;

	ck_assert_uint_eq(hr->hr_n, nwant);
	for (i = 0; i < nwant; i++) {
		ck_assert_str_eq(hr->hr_hdr[i].name, want[i].name);
		ck_assert_str_eq(hr->hr_hdr[i].value, want[i].value);
	}
}

/* The value the model request gets for name, or NULL. */
static const char *
model_value(const struct hdr *in, size_t nin, const char *name)
{
	static struct hdrs_req	 hr;
	size_t			 i;

	hdrs_req_free(&hr);
	ck_assert_int_eq(hdrs_model_request(&hr, in, nin, token), 0);
	ck_assert_str_eq(hr.hr_hdr[hr.hr_n - 1].name, "authorization");
	for (i = 0; i < hr.hr_n; i++)
		if (strcmp(hr.hr_hdr[i].name, name) == 0)
			return hr.hr_hdr[i].value;
	return NULL;
}

static const char *
mcp_value(const struct hdr *in, size_t nin, const char *name)
{
	static struct hdrs_req	 hr;
	size_t			 i;

	hdrs_req_free(&hr);
	ck_assert_int_eq(hdrs_mcp_request(&hr, in, nin, "mcp-token"), 0);
	ck_assert_str_eq(hr.hr_hdr[hr.hr_n - 1].name, "authorization");
	ck_assert_str_eq(hr.hr_hdr[hr.hr_n - 1].value, "Bearer mcp-token");
	for (i = 0; i < hr.hr_n; i++)
		if (strcmp(hr.hr_hdr[i].name, name) == 0)
			return hr.hr_hdr[i].value;
	return NULL;
}

START_TEST(model_defaults)
{
	static const struct hdr	 want[] = {
		{ "content-type", "application/json" },
		{ "accept", "application/json, text/event-stream" },
		{ "accept-encoding", "identity" },
		{ "authorization", bearer },
	};
	struct hdrs_req		 hr;

	ck_assert_int_eq(hdrs_model_request(&hr, NULL, 0, token), 0);
	check_list(&hr, want, nitems(want));
	hdrs_req_free(&hr);
	ck_assert_uint_eq(hr.hr_n, 0);
	ck_assert_ptr_null(hr.hr_auth);
}
END_TEST

START_TEST(model_copied_and_dropped)
{
	static const struct hdr	 in[] = {
		{ "Authorization", "Bearer dummy" },
		{ "X-App", "cli" },
		{ "cookie", "a=b" },
		{ "User-Agent", "claude-cli/1.0" },
		{ "x-api-key", "dummy" },
		{ "Host", "broker" },
		{ "ANTHROPIC-BETA", "tools-2024" },
		{ "accept-encoding", "gzip" },
		{ "Content-Type", "application/json; charset=utf-8" },
		{ "content-length", "12" },
		{ "connection", "keep-alive" },
		{ "x-forwarded-for", "1.2.3.4" },
		{ "Anthropic-Version", "2023-06-01" },
		{ "mcp-session-id", "s" },
		{ "proxy-authorization", "Basic eA==" },
		{ "accept", "text/event-stream" },
	};
	static const struct hdr	 want[] = {
		{ "content-type", "application/json; charset=utf-8" },
		{ "accept", "text/event-stream" },
		{ "accept-encoding", "identity" },
		{ "anthropic-version", "2023-06-01" },
		{ "anthropic-beta", "tools-2024" },
		{ "user-agent", "claude-cli/1.0" },
		{ "x-app", "cli" },
		{ "authorization", bearer },
	};
	struct hdrs_req		 hr;

	ck_assert_int_eq(hdrs_model_request(&hr, in, nitems(in), token), 0);
	check_list(&hr, want, nitems(want));
	ck_assert_uint_eq(hr.hr_n, HDRS_REQ_MAX);
	/* Values are the worker's own strings, not copies. */
	ck_assert_ptr_eq(hr.hr_hdr[3].value, in[12].value);
	hdrs_req_free(&hr);
}
END_TEST

START_TEST(model_limits)
{
	static const char *const	 names[] = { "anthropic-version",
	    "anthropic-beta", "content-type", "accept", "user-agent",
	    "x-app" };
	struct hdr			 in[1];
	char				*v;
	size_t				 i;

	for (i = 0; i < nitems(names); i++) {
		in[0].name = names[i];
		/* 4096 chars: ASCII, 2-byte and 4-byte (2 units) chars. */
		v = repeat("a", HEADER_VALUE_MAX, "");
		in[0].value = v;
		ck_assert_ptr_eq(model_value(in, 1, names[i]), v);
		free(v);
		v = repeat("\xc3\xa9", HEADER_VALUE_MAX, "");
		in[0].value = v;
		ck_assert_ptr_eq(model_value(in, 1, names[i]), v);
		free(v);
		v = repeat("\xf0\x9f\x98\x80", HEADER_VALUE_MAX / 2, "");
		in[0].value = v;
		ck_assert_ptr_eq(model_value(in, 1, names[i]), v);
		free(v);

		/* 4097 chars. */
		v = repeat("a", HEADER_VALUE_MAX + 1, "");
		in[0].value = v;
		ck_assert_ptr_ne(model_value(in, 1, names[i]), v);
		free(v);
		v = repeat("\xc3\xa9", HEADER_VALUE_MAX, "a");
		in[0].value = v;
		ck_assert_ptr_ne(model_value(in, 1, names[i]), v);
		free(v);
		v = repeat("a", HEADER_VALUE_MAX - 1, "\xf0\x9f\x98\x80");
		in[0].value = v;
		ck_assert_ptr_ne(model_value(in, 1, names[i]), v);
		free(v);
	}
	/* Too long a content-type or accept leaves the default. */
	v = repeat("a", HEADER_VALUE_MAX + 1, "");
	in[0].name = "content-type";
	in[0].value = v;
	ck_assert_str_eq(model_value(in, 1, "content-type"),
	    "application/json");
	in[0].name = "accept";
	ck_assert_str_eq(model_value(in, 1, "accept"),
	    "application/json, text/event-stream");
	free(v);
}
END_TEST

START_TEST(model_bad_values)
{
	static const char *const	 bad[] = { "a\r\nx-injected: 1", "a\nb",
	    "a\rb", "\r", "\n", "a\x01", "\x7f", "a\x1b[0m", "\xff",
	    "\xc3", "\xed\xa0\x80", "" };
	struct hdr			 in[2];
	size_t				 i;

	in[0].name = "anthropic-version";
	for (i = 0; i < nitems(bad); i++) {
		in[0].value = bad[i];
		ck_assert_ptr_null(model_value(in, 1, "anthropic-version"));
	}
	in[0].value = NULL;
	ck_assert_ptr_null(model_value(in, 1, "anthropic-version"));
	in[0].name = NULL;
	in[0].value = "x";
	ck_assert_ptr_null(model_value(in, 1, "anthropic-version"));
	/* A tab, spaces and non-ASCII text are fine. */
	in[0].name = "user-agent";
	in[0].value = "a\tb c \xc3\xa9";
	ck_assert_str_eq(model_value(in, 1, "user-agent"), "a\tb c \xc3\xa9");

	/* The first occurrence decides. */
	in[0].name = "anthropic-beta";
	in[0].value = "first";
	in[1].name = "Anthropic-Beta";
	in[1].value = "second";
	ck_assert_str_eq(model_value(in, 2, "anthropic-beta"), "first");
	in[0].value = "bad\r\n";
	ck_assert_ptr_null(model_value(in, 2, "anthropic-beta"));
	in[0].name = in[1].name = "content-type";
	ck_assert_str_eq(model_value(in, 2, "content-type"),
	    "application/json");
}
END_TEST

START_TEST(model_token)
{
	static const char *const	 bad[] = { "", "tok en", "tok\r\n",
	    "tok\n", "tok\t", "t\xc3\xa9", "tok\x7f" };
	struct hdrs_req			 hr;
	char				*v;
	size_t				 i;

	for (i = 0; i < nitems(bad); i++) {
		errno = 0;
		ck_assert_int_eq(hdrs_model_request(&hr, NULL, 0, bad[i]), -1);
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_uint_eq(hr.hr_n, 0);
		ck_assert_ptr_null(hr.hr_auth);
		ck_assert_int_eq(hdrs_mcp_request(&hr, NULL, 0, bad[i]), -1);
	}
	ck_assert_int_eq(hdrs_model_request(&hr, NULL, 0, NULL), -1);
	ck_assert_int_eq(hdrs_model_request(&hr, NULL, 0, "x"), 0);
	ck_assert_str_eq(hr.hr_hdr[hr.hr_n - 1].value, "Bearer x");
	hdrs_req_free(&hr);

	/* As long as a credential file can hold, and one more. */
	v = repeat("k", CRED_FILE_MAX, "");
	ck_assert_int_eq(hdrs_model_request(&hr, NULL, 0, v), 0);
	ck_assert_uint_eq(strlen(hr.hr_auth), 7 + CRED_FILE_MAX);
	ck_assert(strncmp(hr.hr_auth, "Bearer kkk", 10) == 0);
	hdrs_req_free(&hr);
	free(v);
	v = repeat("k", CRED_FILE_MAX + 1, "");
	ck_assert_int_eq(hdrs_model_request(&hr, NULL, 0, v), -1);
	ck_assert_int_eq(errno, EINVAL);
	free(v);
}
END_TEST

START_TEST(mcp_request)
{
	static const struct hdr	 in[] = {
		{ "content-type", "text/plain" },
		{ "accept", "*/*" },
		{ "authorization", "Bearer dummy" },
		{ "Mcp-Protocol-Version", "2025-06-18" },
		{ "anthropic-version", "2023-06-01" },
		{ "user-agent", "x" },
		{ "MCP-SESSION-ID", "abc123" },
		{ "cookie", "a=b" },
	};
	static const struct hdr	 want[] = {
		{ "content-type", "application/json" },
		{ "accept", "application/json, text/event-stream" },
		{ "accept-encoding", "identity" },
		{ "mcp-session-id", "abc123" },
		{ "mcp-protocol-version", "2025-06-18" },
		{ "authorization", "Bearer mcp-token" },
	};
	static const struct hdr	 defaults[] = {
		{ "content-type", "application/json" },
		{ "accept", "application/json, text/event-stream" },
		{ "accept-encoding", "identity" },
		{ "authorization", "Bearer mcp-token" },
	};
	struct hdrs_req		 hr;

	ck_assert_int_eq(hdrs_mcp_request(&hr, in, nitems(in), "mcp-token"),
	    0);
	check_list(&hr, want, nitems(want));
	hdrs_req_free(&hr);
	ck_assert_int_eq(hdrs_mcp_request(&hr, NULL, 0, "mcp-token"), 0);
	check_list(&hr, defaults, nitems(defaults));
	hdrs_req_free(&hr);
}
END_TEST

START_TEST(mcp_limits)
{
	static const char *const	 names[] = { "mcp-session-id",
	    "mcp-protocol-version" };
	struct hdr			 in[1];
	char				*v;
	size_t				 i;

	for (i = 0; i < nitems(names); i++) {
		in[0].name = names[i];
		v = repeat("s", MCP_HEADER_MAX, "");
		in[0].value = v;
		ck_assert_ptr_eq(mcp_value(in, 1, names[i]), v);
		free(v);
		v = repeat("\xc3\xa9", MCP_HEADER_MAX, "");
		in[0].value = v;
		ck_assert_ptr_eq(mcp_value(in, 1, names[i]), v);
		free(v);
		v = repeat("s", MCP_HEADER_MAX + 1, "");
		in[0].value = v;
		ck_assert_ptr_null(mcp_value(in, 1, names[i]));
		free(v);
		v = repeat("s", MCP_HEADER_MAX - 1, "\xf0\x9f\x98\x80");
		in[0].value = v;
		ck_assert_ptr_null(mcp_value(in, 1, names[i]));
		free(v);
		in[0].value = "a\r\nb";
		ck_assert_ptr_null(mcp_value(in, 1, names[i]));
	}
}
END_TEST

/* One filter for every check, as a call's: each check starts it afresh. */
static int
allowed(const char *name, const char *value, int mcp)
{
	static struct reflect	*rf;

	if (rf == NULL)
		ck_assert_ptr_nonnull(rf = reflect_new(token,
		    sizeof(token) - 1));
	return hdrs_response_allowed(name, value, rf, mcp);
}

#define ALLOWED(n, v, mcp)	allowed((n), (v), (mcp))

START_TEST(response_names)
{
	static const char *const	 ok[] = { "content-type",
	    "Content-Type", "CONTENT-TYPE", "request-id", "Request-Id",
	    "x-should-retry", "X-Should-Retry", "retry-after", "Retry-After",
	    "anthropic-ratelimit-requests-limit",
	    "Anthropic-RateLimit-Tokens-Remaining",
	    "anthropic-ratelimit-input-tokens-reset" };
	static const char *const	 no[] = { "set-cookie", "content-length",
	    "transfer-encoding", "connection", "location", "x-request-id",
	    "anthropic-ratelimit", "anthropic-organization-id", "server",
	    "www-authenticate", "content-type ", " content-type",
	    "content-type\r", "content-type:", "retry-after\n", "",
	    "anthropic-ratelimit-x y", "cf-ray", "request-id2",
	    "mcp-session-id" };
	size_t				 i;
	int				 mcp;

	for (mcp = 0; mcp <= 1; mcp++) {
		for (i = 0; i < nitems(ok); i++)
			ck_assert_msg(ALLOWED(ok[i], "1", mcp) == 1, "%s",
			    ok[i]);
		/* All but the last, which MCP answers may carry. */
		for (i = 0; i < nitems(no) - 1; i++)
			ck_assert_msg(ALLOWED(no[i], "1", mcp) == 0, "%s",
			    no[i]);
	}
	ck_assert_int_eq(ALLOWED(NULL, "1", 0), 0);
	ck_assert_int_eq(ALLOWED("mcp-session-id", "1", 0), 0);
	ck_assert_int_eq(ALLOWED("mcp-session-id", "1", 1), 1);
	ck_assert_int_eq(ALLOWED("Mcp-Session-Id", "1", 1), 1);
}
END_TEST

START_TEST(response_values)
{
	static const char *const	 names[] = { "content-type",
	    "request-id", "x-should-retry", "retry-after",
	    "anthropic-ratelimit-requests-remaining", "mcp-session-id" };
	char				*v;
	size_t				 i;

	for (i = 0; i < nitems(names); i++) {
		v = repeat("v", RESP_HEADER_VALUE_MAX, "");
		ck_assert_int_eq(ALLOWED(names[i], v, 1), 1);
		free(v);
		v = repeat("\xc3\xa9", RESP_HEADER_VALUE_MAX, "");
		ck_assert_int_eq(ALLOWED(names[i], v, 1), 1);
		free(v);
		v = repeat("v", RESP_HEADER_VALUE_MAX + 1, "");
		ck_assert_int_eq(ALLOWED(names[i], v, 1), 0);
		free(v);
		v = repeat("v", RESP_HEADER_VALUE_MAX - 1, "\xf0\x9f\x98\x80");
		ck_assert_int_eq(ALLOWED(names[i], v, 1), 0);
		free(v);
		ck_assert_int_eq(ALLOWED(names[i], "a\r\nset-cookie: x", 1),
		    0);
		ck_assert_int_eq(ALLOWED(names[i], "a\nb", 1), 0);
		ck_assert_int_eq(ALLOWED(names[i], "\xff", 1), 0);
		ck_assert_int_eq(ALLOWED(names[i], "", 1), 0);
		ck_assert_int_eq(ALLOWED(names[i], NULL, 1), 0);
		ck_assert_int_eq(ALLOWED(names[i], "a\tb", 1), 1);
	}
}
END_TEST

START_TEST(response_secret)
{
	static const char *const	 leaks[] = {
		"sk-ant-api03-TestToken_0123456789-abcdef",
		"x sk-ant-api03-TestToken_0123456789-abcdef y",
		"sk%2Dant%2Dapi03%2DTestToken%5F0123456789%2Dabcdef",
	};
	struct reflect			*other;
	char				 enc[256];
	size_t				 i;
	int				 mcp;

	/* Each value is searched alone: halves in two headers are not one. */
	ck_assert_int_eq(ALLOWED("request-id", "sk-ant-api03-TestToken_", 0),
	    1);
	ck_assert_int_eq(ALLOWED("retry-after", "0123456789-abcdef", 0), 1);
	for (mcp = 0; mcp <= 1; mcp++) {
		for (i = 0; i < nitems(leaks); i++) {
			ck_assert_int_eq(ALLOWED("request-id", leaks[i], mcp),
			    0);
			ck_assert_int_eq(ALLOWED("mcp-session-id", leaks[i],
			    mcp), 0);
		}
		ck_assert_int_eq(b64_encode((const unsigned char *)token,
		    sizeof(token) - 1, enc, sizeof(enc)), 0);
		ck_assert_int_eq(ALLOWED("content-type", enc, mcp), 0);
		ck_assert_int_eq(ALLOWED("request-id", "req_0123456789", mcp),
		    1);
	}
	/* Another token's answer is not this one's business. */
	ck_assert_ptr_nonnull(other = reflect_new("other", 5));
	ck_assert_int_eq(hdrs_response_allowed("request-id", leaks[0], other,
	    0), 1);
	reflect_free(other);
}
END_TEST

static Suite *
hdrs_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("hdrs");

	tc = tcase_create("model");
	tcase_add_test(tc, model_defaults);
	tcase_add_test(tc, model_copied_and_dropped);
	tcase_add_test(tc, model_limits);
	tcase_add_test(tc, model_bad_values);
	tcase_add_test(tc, model_token);
	suite_add_tcase(s, tc);

	tc = tcase_create("mcp");
	tcase_add_test(tc, mcp_request);
	tcase_add_test(tc, mcp_limits);
	suite_add_tcase(s, tc);

	tc = tcase_create("response");
	tcase_add_test(tc, response_names);
	tcase_add_test(tc, response_values);
	tcase_add_test(tc, response_secret);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(hdrs_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
