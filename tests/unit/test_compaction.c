/*
 * common/compaction.c at every bound of the compaction contract
 * (rtsandbox-protocol(7), 0.7.10 and 0.7.12) and one past it: the compact
 * request, the compactor's answer, the reports, the engine's name.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "compaction.h"
#include "limits.h"

#define S_(lit)		(lit), (sizeof(lit) - 1)
#define LINE_LEN	4096

static char	errbuf[256];

/* n copies of c, NUL-terminated. */
static char *
fill(char c, size_t n)
{
	char	*s = malloc(n + 1);

	ck_assert_ptr_nonnull(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

/* A request with firstKeptEntryId id and tokensBefore tokens (text). */
static char *
request(const char *id, const char *tokens, const char *extra)
{
	char	*s;
	int	 n;

	n = asprintf(&s, "{\"reason\":\"threshold\",\"tokensBefore\":%s,"
	    "\"firstKeptEntryId\":\"%s\",\"isSplitTurn\":false,"
	    "\"messagesToSummarize\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	    "\"turnPrefixMessages\":[],\"keptMessages\":[{\"role\":"
	    "\"assistant\"}],\"readFiles\":[\"a\"],\"modifiedFiles\":[]%s}",
	    tokens, id, extra);
	ck_assert_int_ge(n, 0);
	return s;
}

static enum body_err
check_req(const char *body, struct compact_info *ci)
{
	return compact_check_request(body, strlen(body), ci, NULL, errbuf,
	    sizeof(errbuf));
}

START_TEST(request_entry_id)
{
	struct compact_info	 ci;
	char			*id, *b;

	id = fill('e', COMPACT_ENTRY_ID_MAX);
	b = request(id, "12", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_OK);
	ck_assert_str_eq(ci.ci_first_kept, id);
	ck_assert_str_eq(ci.ci_reason, "threshold");
	ck_assert_uint_eq(ci.ci_tokens_before, 12);
	free(b);
	free(id);
	id = fill('e', COMPACT_ENTRY_ID_MAX + 1);
	b = request(id, "12", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_BAD);
	ck_assert_ptr_nonnull(strstr(errbuf, "firstKeptEntryId"));
	free(b);
	free(id);
	b = request("", "12", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_BAD);
	free(b);
	/* 128 characters of two chars each: 256 chars, at the bound */
	id = malloc(128 * 4 + 1);
	for (int i = 0; i < 128; i++)
		memcpy(id + i * 4, "\xf0\x9f\x98\x80", 4);
	id[512] = '\0';
	b = request(id, "1", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_OK);
	ck_assert_str_eq(ci.ci_first_kept, id);
	free(b);
	free(id);
}
END_TEST

START_TEST(request_tokens)
{
	struct compact_info	 ci;
	char			*b;

	b = request("x", "9007199254740991", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_OK);
	ck_assert_uint_eq(ci.ci_tokens_before, COMPACT_TOKENS_MAX);
	free(b);
	b = request("x", "9007199254740992", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_BAD);
	free(b);
	b = request("x", "0", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_OK);
	free(b);
	b = request("x", "-1", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_BAD);
	free(b);
	b = request("x", "1.5", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_BAD);
	free(b);
	b = request("x", "\"1\"", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_BAD);
	free(b);
}
END_TEST

START_TEST(request_shapes)
{
	static const char *const bad[] = {
		"[]",
		"{\"reason\":\"auto\",\"tokensBefore\":1,\"firstKeptEntryId\":"
		"\"x\",\"isSplitTurn\":false,\"messagesToSummarize\":[],"
		"\"turnPrefixMessages\":[],\"keptMessages\":[],\"readFiles\":"
		"[],\"modifiedFiles\":[]}",
		/* isSplitTurn missing */
		"{\"reason\":\"manual\",\"tokensBefore\":1,\"firstKeptEntryId\":"
		"\"x\",\"messagesToSummarize\":[],\"turnPrefixMessages\":[],"
		"\"keptMessages\":[],\"readFiles\":[],\"modifiedFiles\":[]}",
		/* a message without a role */
		"{\"reason\":\"manual\",\"tokensBefore\":1,\"firstKeptEntryId\":"
		"\"x\",\"isSplitTurn\":true,\"messagesToSummarize\":[{}],"
		"\"turnPrefixMessages\":[],\"keptMessages\":[],\"readFiles\":"
		"[],\"modifiedFiles\":[]}",
		/* a role that is not a string */
		"{\"reason\":\"manual\",\"tokensBefore\":1,\"firstKeptEntryId\":"
		"\"x\",\"isSplitTurn\":true,\"messagesToSummarize\":[],"
		"\"turnPrefixMessages\":[{\"role\":1}],\"keptMessages\":[],"
		"\"readFiles\":[],\"modifiedFiles\":[]}",
		/* a file that is not a string */
		"{\"reason\":\"overflow\",\"tokensBefore\":1,"
		"\"firstKeptEntryId\":\"x\",\"isSplitTurn\":true,"
		"\"messagesToSummarize\":[],\"turnPrefixMessages\":[],"
		"\"keptMessages\":[],\"readFiles\":[1],\"modifiedFiles\":[]}",
		/* previousSummary not a string */
		"{\"reason\":\"overflow\",\"tokensBefore\":1,"
		"\"firstKeptEntryId\":\"x\",\"isSplitTurn\":true,"
		"\"messagesToSummarize\":[],\"turnPrefixMessages\":[],"
		"\"keptMessages\":[],\"readFiles\":[],\"modifiedFiles\":[],"
		"\"previousSummary\":null}",
		/* a key twice */
		"{\"reason\":\"manual\",\"reason\":\"manual\"}",
		"{\"reason\":\"manual\"",
	};
	struct compact_info	 ci;
	cJSON			*out;
	char			*b;
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(check_req(bad[i], &ci) != BODY_OK, "%zu", i);
	/* what the contract does not name does not reach the compactor */
	b = request("x", "1", ",\"previousSummary\":\"s\",\"customInstructions"
	    "\":\"c\",\"secret\":{\"a\":1}");
	ck_assert_int_eq(compact_check_request(b, strlen(b), &ci, &out,
	    errbuf, sizeof(errbuf)), BODY_OK);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(out, "secret"));
	ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(out,
	    "previousSummary"));
	ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(out,
	    "keptMessages"));
	cJSON_Delete(out);
	free(b);
}
END_TEST

static enum body_err
answer(const char *json, const struct compact_info *ci, char **out,
    int64_t *after)
{
	cJSON		*c = cJSON_Parse(json);
	enum body_err	 e;

	ck_assert_ptr_nonnull(c);
	e = compact_build_answer(c, ci, "host/engine-1", out, after, errbuf,
	    sizeof(errbuf));
	cJSON_Delete(c);
	return e;
}

START_TEST(answers)
{
	struct compact_info	 ci;
	cJSON			*r, *comp, *d;
	char			*out, *b;
	int64_t			 after;

	b = request("keep-1", "1000", "");
	ck_assert_int_eq(check_req(b, &ci), BODY_OK);
	free(b);
	ck_assert_int_eq(answer("{\"summary\":\"S\",\"firstKeptEntryId\":"
	    "\"keep-1\",\"tokensBefore\":1000,\"estimatedTokensAfter\":10,"
	    "\"details\":{\"engine\":\"spoofed\",\"n\":1},\"extra\":1}", &ci,
	    &out, &after), BODY_OK);
	ck_assert_int_eq(after, 10);
	r = cJSON_Parse(out);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")));
	comp = cJSON_GetObjectItemCaseSensitive(r, "compaction");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(comp,
	    "summary")->valuestring, "S");
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(comp, "extra"));
	d = cJSON_GetObjectItemCaseSensitive(comp, "details");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(d,
	    "engine")->valuestring, "host/engine-1");
	ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(d, "n")->valueint,
	    1);
	cJSON_Delete(r);
	free(out);
	/* no details, no estimate */
	ck_assert_int_eq(answer("{\"summary\":\"S\",\"firstKeptEntryId\":"
	    "\"keep-1\",\"tokensBefore\":9007199254740991}", &ci, &out,
	    &after), BODY_OK);
	ck_assert_int_eq(after, -1);
	ck_assert_ptr_nonnull(strstr(out, "\"details\":{\"engine\":"
	    "\"host/engine-1\"}"));
	ck_assert_ptr_nonnull(strstr(out, "9007199254740991"));
	ck_assert_ptr_null(strstr(out, "estimatedTokensAfter"));
	free(out);
	/* each refusal */
	ck_assert_int_eq(answer("{\"summary\":\"\",\"firstKeptEntryId\":"
	    "\"keep-1\",\"tokensBefore\":1}", &ci, &out, &after), BODY_BAD);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(answer("{\"summary\":\"S\",\"firstKeptEntryId\":"
	    "\"keep-2\",\"tokensBefore\":1}", &ci, &out, &after), BODY_BAD);
	ck_assert_int_eq(answer("{\"summary\":\"S\",\"firstKeptEntryId\":"
	    "\"keep-1\",\"tokensBefore\":9007199254740992}", &ci, &out,
	    &after), BODY_BAD);
	ck_assert_int_eq(answer("{\"summary\":\"S\",\"firstKeptEntryId\":"
	    "\"keep-1\",\"tokensBefore\":1,\"estimatedTokensAfter\":0.5}",
	    &ci, &out, &after), BODY_BAD);
	ck_assert_int_eq(answer("{\"summary\":\"S\",\"firstKeptEntryId\":"
	    "\"keep-1\",\"tokensBefore\":1,\"details\":[]}", &ci, &out,
	    &after), BODY_BAD);
	ck_assert_int_eq(answer("\"S\"", &ci, &out, &after), BODY_BAD);
	ck_assert_int_eq(answer("{\"firstKeptEntryId\":\"keep-1\","
	    "\"tokensBefore\":1}", &ci, &out, &after), BODY_BAD);
}
END_TEST

START_TEST(fallback)
{
	char	*s = compact_fallback_json("the compactor declined");

	ck_assert_str_eq(s, "{\"ok\":false,\"fallback\":\"the compactor "
	    "declined\"}");
	free(s);
}
END_TEST

static enum body_err
report(const char *body, char *line)
{
	return compact_check_report(body, strlen(body), line, LINE_LEN,
	    errbuf, sizeof(errbuf));
}

START_TEST(reports)
{
	char	 line[LINE_LEN], *err, *b;
	int	 n;

	ck_assert_int_eq(report("{\"type\":\"end\",\"reason\":\"threshold\","
	    "\"aborted\":false,\"willRetry\":false,\"engine\":\"pi\","
	    "\"tokensBefore\":100,\"tokensAfter\":10,\"nextCompactionAt\":"
	    "900,\"contextAfter\":12}", line), BODY_OK);
	ck_assert_str_eq(line, "conversation compacted (engine pi, trigger "
	    "threshold, tokensBefore 100, tokensAfter 10, nextCompactionAt "
	    "900)");
	ck_assert_int_eq(report("{\"type\":\"end\",\"reason\":\"manual\","
	    "\"aborted\":true,\"willRetry\":false,\"error\":\"boom\"}", line),
	    BODY_OK);
	ck_assert_str_eq(line, "compaction failed (trigger self, aborted "
	    "true, willRetry false): boom");
	ck_assert_int_eq(report("{\"type\":\"bypass\",\"reason\":\"over the "
	    "ceiling\",\"tokensBefore\":5}", line), BODY_OK);
	ck_assert_str_eq(line, "compaction skips the host compactor for Pi's "
	    "summary (tokensBefore 5): over the ceiling");

	/* error: 10 000 chars, and one more */
	err = fill('x', COMPACT_ERROR_MAX);
	n = asprintf(&b, "{\"type\":\"end\",\"reason\":\"overflow\","
	    "\"aborted\":false,\"willRetry\":true,\"error\":\"%s\"}", err);
	ck_assert_int_ge(n, 0);
	ck_assert_int_eq(report(b, line), BODY_OK);
	/* the log keeps the head */
	ck_assert_uint_lt(strlen(line), 100 + COMPACT_LOG_TEXT_MAX);
	free(b);
	free(err);
	err = fill('x', COMPACT_ERROR_MAX + 1);
	n = asprintf(&b, "{\"type\":\"end\",\"reason\":\"overflow\","
	    "\"aborted\":false,\"willRetry\":true,\"error\":\"%s\"}", err);
	ck_assert_int_eq(report(b, line), BODY_BAD);
	ck_assert_str_eq(line, "");
	free(b);
	free(err);

	/* a bypass's reason: 1 000 chars, and one more */
	err = fill('r', COMPACT_BYPASS_REASON_MAX);
	n = asprintf(&b, "{\"type\":\"bypass\",\"reason\":\"%s\","
	    "\"tokensBefore\":1}", err);
	ck_assert_int_eq(report(b, line), BODY_OK);
	free(b);
	free(err);
	err = fill('r', COMPACT_BYPASS_REASON_MAX + 1);
	n = asprintf(&b, "{\"type\":\"bypass\",\"reason\":\"%s\","
	    "\"tokensBefore\":1}", err);
	ck_assert_int_eq(report(b, line), BODY_BAD);
	free(b);
	free(err);

	/* counts at 2^53 - 1 and past it */
	ck_assert_int_eq(report("{\"type\":\"bypass\",\"reason\":\"r\","
	    "\"tokensBefore\":9007199254740991}", line), BODY_OK);
	ck_assert_int_eq(report("{\"type\":\"bypass\",\"reason\":\"r\","
	    "\"tokensBefore\":9007199254740992}", line), BODY_BAD);
	ck_assert_int_eq(report("{\"type\":\"end\",\"reason\":\"manual\","
	    "\"aborted\":false,\"willRetry\":false,\"nextCompactionAt\":-1}",
	    line), BODY_BAD);

	/* shapes */
	ck_assert_int_eq(report("{\"type\":\"start\"}", line), BODY_BAD);
	ck_assert_int_eq(report("{\"type\":\"end\",\"reason\":\"auto\","
	    "\"aborted\":false,\"willRetry\":false}", line), BODY_BAD);
	ck_assert_int_eq(report("{\"type\":\"end\",\"reason\":\"manual\","
	    "\"aborted\":0,\"willRetry\":false}", line), BODY_BAD);
	ck_assert_int_eq(report("{\"type\":\"end\",\"reason\":\"manual\","
	    "\"aborted\":false,\"willRetry\":false,\"engine\":\"other\"}",
	    line), BODY_BAD);
	ck_assert_int_eq(report("{\"type\":\"bypass\",\"tokensBefore\":1}",
	    line), BODY_BAD);
	ck_assert_int_eq(report("[]", line), BODY_BAD);
}
END_TEST

START_TEST(report_size)
{
	char	 line[LINE_LEN], *b;
	size_t	 head, pad;

	/* exactly COMPACT_REPORT_BODY_MAX bytes, then one more */
	head = strlen("{\"type\":\"bypass\",\"reason\":\"r\","
	    "\"tokensBefore\":1}");
	pad = COMPACT_REPORT_BODY_MAX - head;
	b = malloc(COMPACT_REPORT_BODY_MAX + 2);
	memcpy(b, "{\"type\":\"bypass\",\"reason\":\"r\",\"tokensBefore\":1}",
	    head);
	memset(b + head, ' ', pad + 1);
	ck_assert_int_eq(compact_check_report(b, COMPACT_REPORT_BODY_MAX,
	    line, sizeof(line), errbuf, sizeof(errbuf)), BODY_OK);
	ck_assert_int_eq(compact_check_report(b, COMPACT_REPORT_BODY_MAX + 1,
	    line, sizeof(line), errbuf, sizeof(errbuf)), BODY_BAD);
	free(b);
}
END_TEST

START_TEST(engines)
{
	char	*s;

	ck_assert(compact_engine_valid(S_("pi-roundtable/jev@1.2_x")));
	ck_assert(!compact_engine_valid(S_("")));
	ck_assert(!compact_engine_valid(S_("a b")));
	ck_assert(!compact_engine_valid(S_("a:b")));
	s = fill('e', COMPACT_ENGINE_MAX);
	ck_assert(compact_engine_valid(s, strlen(s)));
	free(s);
	s = fill('e', COMPACT_ENGINE_MAX + 1);
	ck_assert(!compact_engine_valid(s, strlen(s)));
	free(s);
}
END_TEST

static Suite *
compaction_suite(void)
{
	Suite	*s = suite_create("compaction");
	TCase	*tc = tcase_create("compaction");

	tcase_add_test(tc, request_entry_id);
	tcase_add_test(tc, request_tokens);
	tcase_add_test(tc, request_shapes);
	tcase_add_test(tc, answers);
	tcase_add_test(tc, fallback);
	tcase_add_test(tc, reports);
	tcase_add_test(tc, report_size);
	tcase_add_test(tc, engines);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(compaction_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
