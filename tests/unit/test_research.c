/*
 * research/agent.c: the request of each step, the reading of each answer,
 * the tools' inputs at their bounds and past them, stop reasons, tool
 * results, the report's cut, and answers that are not messages.
 */
#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agent.h"
#include "limits.h"
#include "research.h"
#include "text.h"
#include "validate.h"

#define EMOJI	"\xf0\x9f\x98\x80"	/* U+1F600: 2 chars */

static char	 err[512];

/* A growing string. */
struct buf {
	char	*b_s;
	size_t	 b_len;
	size_t	 b_cap;
};

static void
bput(struct buf *b, const char *s, size_t n)
{
	char	*p;

	if (b->b_len + n + 1 > b->b_cap) {
		b->b_cap = (b->b_len + n + 1) * 2;
		p = realloc(b->b_s, b->b_cap);
		ck_assert_ptr_nonnull(p);
		b->b_s = p;
	}
	memcpy(b->b_s + b->b_len, s, n);
	b->b_len += n;
	b->b_s[b->b_len] = '\0';
}

static void
bputs(struct buf *b, const char *s)
{
	bput(b, s, strlen(s));
}

static void
brepeat(struct buf *b, const char *s, size_t n)
{
	while (n-- > 0)
		bputs(b, s);
}

static struct agent *
new_agent(enum agent_thinking t, uint64_t max_out, int search)
{
	struct agent_job	 job;
	struct agent		*ag;

	memset(&job, 0, sizeof(job));
	job.aj_model = "claude-test";
	job.aj_task = "Find out when the Eiffel Tower was built.";
	job.aj_author_name = "Ada";
	job.aj_thinking = t;
	job.aj_max_output_tokens = max_out;
	job.aj_search = search;
	job.aj_date = "2025-06-01";
	ag = agent_new(&job);
	ck_assert_ptr_nonnull(ag);
	return ag;
}

static cJSON *
request(const struct agent *ag)
{
	cJSON	*req;
	char	*s;
	size_t	 len;

	s = agent_request_build(ag, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(strlen(s), len);
	req = cJSON_Parse(s);
	ck_assert_ptr_nonnull(req);
	free(s);
	return req;
}

static double
num(const cJSON *obj, const char *key)
{
	const cJSON	*it = cJSON_GetObjectItemCaseSensitive(obj, key);

	ck_assert(cJSON_IsNumber(it));
	return it->valuedouble;
}

static const char *
str(const cJSON *obj, const char *key)
{
	const cJSON	*it = cJSON_GetObjectItemCaseSensitive(obj, key);

	ck_assert_msg(cJSON_IsString(it), "no string %s", key);
	return it->valuestring;
}

static const cJSON *
get(const cJSON *obj, const char *key)
{
	const cJSON	*it = cJSON_GetObjectItemCaseSensitive(obj, key);

	ck_assert_msg(it != NULL, "no field %s", key);
	return it;
}

static int
parse(const char *body, struct agent_answer *aa)
{
	return agent_answer_parse(body, strlen(body), aa, err, sizeof(err));
}

/* An answer of the given blocks (a JSON array's inside). */
static char *
answer(const char *stop, const char *blocks)
{
	char	*s;

	ck_assert_int_ge(asprintf(&s, "{\"id\":\"msg_1\",\"type\":\"message\","
	    "\"role\":\"assistant\",\"model\":\"claude-test\",\"content\":[%s],"
	    "\"stop_reason\":%s,\"usage\":{\"input_tokens\":1}}", blocks,
	    stop), 0);
	return s;
}

static char *
tool_use(const char *id, const char *name, const char *input)
{
	char	*s;

	ck_assert_int_ge(asprintf(&s, "{\"type\":\"tool_use\",\"id\":\"%s\","
	    "\"name\":\"%s\",\"input\":%s}", id, name, input), 0);
	return s;
}

/* Parse one tool_use block with input and give back its call. */
static struct agent_answer	 one;

static struct agent_call *
one_call(const char *name, const char *input)
{
	char	*tu, *body;

	agent_answer_free(&one);
	tu = tool_use("toolu_1", name, input);
	body = answer("\"tool_use\"", tu);
	ck_assert_int_eq(parse(body, &one), 0);
	ck_assert_uint_eq(one.aa_ncalls, 1);
	free(tu);
	free(body);
	return &one.aa_calls[0];
}

/*
 * Requests
 */

START_TEST(request_shape)
{
	struct agent	*ag = new_agent(AGENT_THINK_NONE, 128000, 1);
	cJSON		*req = request(ag);
	const cJSON	*tools, *t, *schema, *props, *p, *msgs, *m;

	ck_assert_str_eq(str(req, "model"), "claude-test");
	ck_assert_double_eq(num(req, "max_tokens"), 16384);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(req, "thinking"));
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(req, "stream"));
	ck_assert_ptr_nonnull(strstr(str(req, "system"),
	    "research assistant"));
	ck_assert_ptr_nonnull(strstr(str(req, "system"), "2025-06-01"));
	ck_assert_ptr_null(strstr(str(req, "system"), "not available"));

	tools = get(req, "tools");
	ck_assert_int_eq(cJSON_GetArraySize(tools), 2);
	t = cJSON_GetArrayItem(tools, 0);
	ck_assert_str_eq(str(t, "name"), "web_search");
	schema = get(t, "input_schema");
	ck_assert_str_eq(str(schema, "type"), "object");
	props = get(schema, "properties");
	ck_assert_int_eq(cJSON_GetArraySize(props), 1);
	p = get(props, "query");
	ck_assert_str_eq(str(p, "type"), "string");
	ck_assert_double_eq(num(p, "minLength"), 1);
	ck_assert_double_eq(num(p, "maxLength"), 4000);
	ck_assert_str_eq(cJSON_GetArrayItem(get(schema, "required"), 0)->
	    valuestring, "query");
	ck_assert(cJSON_IsFalse(get(schema, "additionalProperties")));

	t = cJSON_GetArrayItem(tools, 1);
	ck_assert_str_eq(str(t, "name"), "fetch_content");
	schema = get(t, "input_schema");
	p = get(get(schema, "properties"), "url");
	ck_assert_str_eq(str(p, "type"), "string");
	ck_assert_double_eq(num(p, "maxLength"), 8000);
	ck_assert_str_eq(cJSON_GetArrayItem(get(schema, "required"), 0)->
	    valuestring, "url");

	msgs = get(req, "messages");
	ck_assert_int_eq(cJSON_GetArraySize(msgs), 1);
	m = cJSON_GetArrayItem(msgs, 0);
	ck_assert_str_eq(str(m, "role"), "user");
	ck_assert_str_eq(str(m, "content"), "Research task from Ada:\n\n"
	    "Find out when the Eiffel Tower was built.");
	cJSON_Delete(req);
	agent_free(ag);

	/* Without search the prompt says so; the tools stay two. */
	ag = new_agent(AGENT_THINK_NONE, 128000, 0);
	req = request(ag);
	ck_assert_ptr_nonnull(strstr(str(req, "system"),
	    "web_search is not available"));
	ck_assert_int_eq(cJSON_GetArraySize(get(req, "tools")), 2);
	ck_assert_str_eq(agent_system(ag), str(req, "system"));
	cJSON_Delete(req);
	agent_free(ag);
}
END_TEST

START_TEST(request_thinking)
{
	static const struct {
		enum agent_thinking	 t;
		uint64_t		 max_out, max_tokens, budget;
	} cases[] = {
		{ AGENT_THINK_NONE, 128000, 16384, 0 },
		{ AGENT_THINK_NONE, 1025, 1025, 0 },
		{ AGENT_THINK_LOW, 128000, 18432, 2048 },
		{ AGENT_THINK_MEDIUM, 128000, 24576, 8192 },
		{ AGENT_THINK_HIGH, 128000, 32768, 16384 },
		{ AGENT_THINK_XHIGH, 128000, 49152, 32768 },
		{ AGENT_THINK_XHIGH, 200000, 49152, 32768 },
		{ AGENT_THINK_HIGH, 20000, 20000, 16384 },
		{ AGENT_THINK_HIGH, 16384, 16384, 16383 },
		{ AGENT_THINK_XHIGH, 1025, 1025, 1024 },
		{ AGENT_THINK_LOW, 2048, 2048, 2047 },
		{ AGENT_THINK_LOW, 2049, 2049, 2048 },
	};
	struct agent	*ag;
	cJSON		*req;
	const cJSON	*th;
	uint64_t	 mt, b;
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		agent_tokens(cases[i].t, cases[i].max_out, &mt, &b);
		ck_assert_uint_eq(mt, cases[i].max_tokens);
		ck_assert_uint_eq(b, cases[i].budget);
		ag = new_agent(cases[i].t, cases[i].max_out, 1);
		req = request(ag);
		ck_assert_double_eq(num(req, "max_tokens"),
		    cases[i].max_tokens);
		th = cJSON_GetObjectItemCaseSensitive(req, "thinking");
		if (cases[i].t == AGENT_THINK_NONE)
			ck_assert_ptr_null(th);
		else {
			ck_assert_ptr_nonnull(th);
			ck_assert_str_eq(str(th, "type"), "enabled");
			ck_assert_double_eq(num(th, "budget_tokens"),
			    cases[i].budget);
			ck_assert_uint_ge(cases[i].budget, THINKING_BUDGET_MIN);
			ck_assert_uint_lt(cases[i].budget, cases[i].max_tokens);
		}
		cJSON_Delete(req);
		agent_free(ag);
	}
}
END_TEST

START_TEST(thinking_levels)
{
	enum agent_thinking	 t;

	ck_assert_int_eq(agent_thinking_parse("low", &t), 0);
	ck_assert_int_eq(t, AGENT_THINK_LOW);
	ck_assert_int_eq(agent_thinking_parse("medium", &t), 0);
	ck_assert_int_eq(t, AGENT_THINK_MEDIUM);
	ck_assert_int_eq(agent_thinking_parse("high", &t), 0);
	ck_assert_int_eq(t, AGENT_THINK_HIGH);
	ck_assert_int_eq(agent_thinking_parse("xhigh", &t), 0);
	ck_assert_int_eq(t, AGENT_THINK_XHIGH);
	ck_assert_int_eq(agent_thinking_parse("max", &t), -1);
	ck_assert_int_eq(agent_thinking_parse("", &t), -1);
	ck_assert_int_eq(agent_thinking_parse("LOW", &t), -1);
}
END_TEST

/*
 * Answers
 */

START_TEST(tool_use_blocks)
{
	struct agent_answer	 aa;
	char			*body;

	body = answer("\"tool_use\"",
	    "{\"type\":\"thinking\",\"thinking\":\"hmm\",\"signature\":\"sig\"},"
	    "{\"type\":\"text\",\"text\":\"Let me look.\"},"
	    "{\"type\":\"tool_use\",\"id\":\"toolu_a\",\"name\":\"web_search\","
	    "\"input\":{\"query\":\"eiffel tower\"}},"
	    "{\"type\":\"tool_use\",\"id\":\"toolu_b\",\"name\":"
	    "\"fetch_content\",\"input\":{\"url\":\"https://example.org/\"}},"
	    "{\"type\":\"tool_use\",\"id\":\"toolu_c\",\"name\":\"bash\","
	    "\"input\":{\"command\":\"ls\"}},"
	    "{\"type\":\"server_tool_use\",\"id\":\"x\"}");
	ck_assert_int_eq(parse(body, &aa), 0);
	ck_assert_str_eq(aa.aa_stop, "tool_use");
	ck_assert_str_eq(aa.aa_text, "Let me look.");
	ck_assert_uint_eq(aa.aa_ncalls, 3);

	ck_assert_str_eq(aa.aa_calls[0].ac_id, "toolu_a");
	ck_assert_int_eq(aa.aa_calls[0].ac_tool, AGENT_TOOL_WEB_SEARCH);
	ck_assert_str_eq(aa.aa_calls[0].ac_arg, "eiffel tower");
	ck_assert_int_eq(aa.aa_calls[0].ac_done, 0);

	ck_assert_int_eq(aa.aa_calls[1].ac_tool, AGENT_TOOL_FETCH_CONTENT);
	ck_assert_str_eq(aa.aa_calls[1].ac_arg, "https://example.org/");
	ck_assert_int_eq(aa.aa_calls[1].ac_done, 0);

	ck_assert_int_eq(aa.aa_calls[2].ac_tool, AGENT_TOOL_UNKNOWN);
	ck_assert_int_eq(aa.aa_calls[2].ac_done, 1);
	ck_assert_int_eq(aa.aa_calls[2].ac_is_error, 1);
	ck_assert_str_eq(aa.aa_calls[2].ac_result, "Tool bash not found");

	/* The blocks to send back: known types, known fields. */
	ck_assert_int_eq(cJSON_GetArraySize(aa.aa_content), 5);
	ck_assert_str_eq(str(cJSON_GetArrayItem(aa.aa_content, 0), "signature"),
	    "sig");
	ck_assert_str_eq(str(get(cJSON_GetArrayItem(aa.aa_content, 4),
	    "input"), "command"), "ls");
	agent_answer_free(&aa);
	free(body);
}
END_TEST

START_TEST(tool_inputs)
{
	struct agent_call	*ac;

	ac = one_call("web_search", "{\"query\":42}");
	ck_assert_int_eq(ac->ac_done, 1);
	ck_assert_int_eq(ac->ac_is_error, 1);
	ck_assert_str_eq(ac->ac_result,
	    "web_search needs an input object with a string query");
	ac = one_call("web_search", "\"eiffel\"");
	ck_assert_str_eq(ac->ac_result,
	    "web_search needs an input object with a string query");
	/* What goes back to the model is still a valid tool_use. */
	ck_assert(cJSON_IsObject(get(cJSON_GetArrayItem(one.aa_content, 0),
	    "input")));
	ac = one_call("web_search", "{}");
	ck_assert_int_eq(ac->ac_is_error, 1);
	ac = one_call("web_search", "{\"q\":\"x\"}");
	ck_assert_int_eq(ac->ac_is_error, 1);
	ac = one_call("web_search", "{\"query\":\"\"}");
	ck_assert_str_eq(ac->ac_result, "web_search: query must not be empty");
	ac = one_call("fetch_content", "{\"url\":null}");
	ck_assert_str_eq(ac->ac_result,
	    "fetch_content needs an input object with a string url");
	ac = one_call("fetch_content", "[\"https://x\"]");
	ck_assert_int_eq(ac->ac_is_error, 1);
	ac = one_call("fetch_content", "{\"url\":\"\"}");
	ck_assert_str_eq(ac->ac_result, "fetch_content: url must not be empty");
	/* Extra fields are not held against the model. */
	ac = one_call("web_search", "{\"query\":\"x\",\"n\":3}");
	ck_assert_int_eq(ac->ac_done, 0);
	ck_assert_str_eq(ac->ac_arg, "x");
	agent_answer_free(&one);
}
END_TEST

START_TEST(tool_bounds)
{
	struct agent_call	*ac;
	struct buf		 b = { 0 };

	/* query: 4 000 chars pass, 4 001 do not; an emoji counts 2. */
	bputs(&b, "{\"query\":\"");
	brepeat(&b, "a", 4000);
	bputs(&b, "\"}");
	ac = one_call("web_search", b.b_s);
	ck_assert_int_eq(ac->ac_done, 0);
	ck_assert_uint_eq(strlen(ac->ac_arg), 4000);
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	bputs(&b, "{\"query\":\"");
	brepeat(&b, "a", 4001);
	bputs(&b, "\"}");
	ac = one_call("web_search", b.b_s);
	ck_assert_int_eq(ac->ac_is_error, 1);
	ck_assert_str_eq(ac->ac_result,
	    "web_search: query is longer than 4000 characters");
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	bputs(&b, "{\"query\":\"");
	brepeat(&b, "a", 3999);
	bputs(&b, EMOJI "\"}");
	ac = one_call("web_search", b.b_s);
	ck_assert_int_eq(ac->ac_is_error, 1);
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	bputs(&b, "{\"query\":\"");
	brepeat(&b, "a", 3998);
	bputs(&b, EMOJI "\"}");
	ac = one_call("web_search", b.b_s);
	ck_assert_int_eq(ac->ac_done, 0);
	free(b.b_s);

	/* url: 8 000 chars pass, 8 001 do not. */
	memset(&b, 0, sizeof(b));
	bputs(&b, "{\"url\":\"https://e.org/");
	brepeat(&b, "a", 8000 - strlen("https://e.org/"));
	bputs(&b, "\"}");
	ac = one_call("fetch_content", b.b_s);
	ck_assert_int_eq(ac->ac_done, 0);
	ck_assert_uint_eq(strlen(ac->ac_arg), 8000);
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	bputs(&b, "{\"url\":\"https://e.org/");
	brepeat(&b, "a", 8001 - strlen("https://e.org/"));
	bputs(&b, "\"}");
	ac = one_call("fetch_content", b.b_s);
	ck_assert_int_eq(ac->ac_is_error, 1);
	ck_assert_str_eq(ac->ac_result,
	    "fetch_content: url is longer than 8000 characters");
	free(b.b_s);

	/* 8 000 chars that egress could not take in its 8 192 bytes. */
	memset(&b, 0, sizeof(b));
	bputs(&b, "{\"url\":\"https://e.org/");
	brepeat(&b, "\xc3\xa9", 8000 - strlen("https://e.org/"));
	bputs(&b, "\"}");
	ac = one_call("fetch_content", b.b_s);
	ck_assert_int_eq(ac->ac_is_error, 1);
	ck_assert_str_eq(ac->ac_result,
	    "fetch_content: url is longer than 8192 bytes");
	free(b.b_s);
	agent_answer_free(&one);
}
END_TEST

START_TEST(tool_names)
{
	struct agent_answer	 aa;
	struct buf		 b = { 0 };
	char			*body, *tu;

	/* 128 chars of name pass (and are not found); 129 break the
	 * answer, as do other characters and a repeated id. */
	brepeat(&b, "n", 128);
	tu = tool_use("toolu_1", b.b_s, "{}");
	body = answer("\"tool_use\"", tu);
	ck_assert_int_eq(parse(body, &aa), 0);
	ck_assert_int_eq(aa.aa_calls[0].ac_is_error, 1);
	ck_assert_int_eq(strncmp(aa.aa_calls[0].ac_result, "Tool nnnn", 9), 0);
	agent_answer_free(&aa);
	free(tu);
	free(body);
	bputs(&b, "n");
	tu = tool_use("toolu_1", b.b_s, "{}");
	body = answer("\"tool_use\"", tu);
	ck_assert_int_eq(parse(body, &aa), -1);
	free(tu);
	free(body);
	free(b.b_s);

	tu = tool_use("toolu_1", "web search", "{}");
	body = answer("\"tool_use\"", tu);
	ck_assert_int_eq(parse(body, &aa), -1);
	free(tu);
	free(body);
	tu = tool_use("toolu/1", "web_search", "{}");
	body = answer("\"tool_use\"", tu);
	ck_assert_int_eq(parse(body, &aa), -1);
	free(tu);
	free(body);
	body = answer("\"tool_use\"",
	    "{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"web_search\","
	    "\"input\":{\"query\":\"x\"}},{\"type\":\"tool_use\",\"id\":\"a\","
	    "\"name\":\"web_search\",\"input\":{\"query\":\"y\"}}");
	ck_assert_int_eq(parse(body, &aa), -1);
	ck_assert_str_eq(err, "tool_use id used twice");
	free(body);
	body = answer("\"tool_use\"",
	    "{\"type\":\"tool_use\",\"id\":\"a\",\"name\":\"web_search\"}");
	ck_assert_int_eq(parse(body, &aa), -1);
	free(body);
}
END_TEST

START_TEST(malformed)
{
	static const char *const bodies[] = {
		"",
		"not json",
		"[]",
		"null",
		"{\"content\":[]",
		"{\"stop_reason\":\"end_turn\"}",
		"{\"content\":{},\"stop_reason\":\"end_turn\"}",
		"{\"content\":\"text\",\"stop_reason\":\"end_turn\"}",
		"{\"content\":[1],\"stop_reason\":\"end_turn\"}",
		"{\"content\":[{}],\"stop_reason\":\"end_turn\"}",
		"{\"content\":[{\"type\":7}],\"stop_reason\":\"end_turn\"}",
		"{\"content\":[{\"type\":\"text\"}],\"stop_reason\":null}",
		"{\"content\":[{\"type\":\"text\",\"text\":1}]}",
		"{\"content\":[{\"type\":\"thinking\",\"thinking\":\"x\"}]}",
		"{\"content\":[{\"type\":\"redacted_thinking\"}]}",
		"{\"content\":[],\"stop_reason\":5}",
		"{\"content\":[{\"type\":\"text\",\"text\":\"a\\u0000b\"}]}",
		"{\"content\":[],\"content\":[]}",
		"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
		"{\"content\":[]} trailing",
	};
	struct agent_answer	 aa;
	struct buf		 b = { 0 };
	size_t			 i;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		ck_assert_msg(parse(bodies[i], &aa) == -1, "body %zu passed",
		    i);
		ck_assert_uint_gt(strlen(err), 0);
		ck_assert_ptr_null(aa.aa_calls);
		ck_assert_ptr_null(aa.aa_content);
	}

	/* 256 blocks pass, 257 do not. */
	bputs(&b, "{\"stop_reason\":\"end_turn\",\"content\":[");
	brepeat(&b, "{\"type\":\"text\",\"text\":\"a\"},", 255);
	bputs(&b, "{\"type\":\"text\",\"text\":\"a\"}]}");
	ck_assert_int_eq(parse(b.b_s, &aa), 0);
	ck_assert_uint_eq(aa.aa_text_len, 256);
	agent_answer_free(&aa);
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	bputs(&b, "{\"stop_reason\":\"end_turn\",\"content\":[");
	brepeat(&b, "{\"type\":\"text\",\"text\":\"a\"},", 256);
	bputs(&b, "{\"type\":\"text\",\"text\":\"a\"}]}");
	ck_assert_int_eq(parse(b.b_s, &aa), -1);
	free(b.b_s);

	/* No body at all (a 200 without one). */
	ck_assert_int_eq(agent_answer_parse(NULL, 0, &aa, err, sizeof(err)),
	    -1);
	ck_assert_str_eq(err, "the answer is empty");

	/* Over 8 MiB is refused before it is read. */
	ck_assert_int_eq(agent_answer_parse("{}", AGENT_ANSWER_MAX + 1, &aa,
	    err, sizeof(err)), -1);
}
END_TEST

START_TEST(error_types)
{
	char	 t[80];
	const char *b;

	b = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
	    "\"message\":\"Overloaded\"}}";
	agent_error_type(b, strlen(b), t, sizeof(t));
	ck_assert_str_eq(t, "overloaded_error");
	b = "{\"error\":{\"type\":\"Bad Type\"}}";
	agent_error_type(b, strlen(b), t, sizeof(t));
	ck_assert_str_eq(t, "");
	b = "<html>502</html>";
	agent_error_type(b, strlen(b), t, sizeof(t));
	ck_assert_str_eq(t, "");
	agent_error_type("", 0, t, sizeof(t));
	ck_assert_str_eq(t, "");
	agent_error_type(NULL, 0, t, sizeof(t));
	ck_assert_str_eq(t, "");
}
END_TEST

/*
 * The conversation
 */

static enum agent_next
take(struct agent *ag, const char *body, struct agent_answer *aa,
    const char **report, size_t *len)
{
	ck_assert_int_eq(parse(body, aa), 0);
	return agent_take_answer(ag, aa, report, len, err, sizeof(err));
}

START_TEST(stop_reasons)
{
	struct agent		*ag = new_agent(AGENT_THINK_NONE, 128000, 1);
	struct agent_answer	 aa;
	const char		*report;
	size_t			 len;
	char			*body;

	body = answer("\"end_turn\"", "{\"type\":\"text\",\"text\":\"  The "
	    "tower \"},{\"type\":\"text\",\"text\":\"was built in 1889.\\n\"}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len),
	    AGENT_NEXT_REPORT);
	ck_assert_uint_eq(len, strlen("The tower was built in 1889."));
	ck_assert_int_eq(strncmp(report, "The tower was built in 1889.", len),
	    0);
	agent_answer_free(&aa);
	free(body);

	/* end_turn is final even with a tool_use block. */
	body = answer("\"end_turn\"", "{\"type\":\"text\",\"text\":\"done\"},"
	    "{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"web_search\","
	    "\"input\":{\"query\":\"x\"}}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len),
	    AGENT_NEXT_REPORT);
	agent_answer_free(&aa);
	free(body);

	/* No tool_use: final whatever the stop reason. */
	body = answer("\"max_tokens\"", "{\"type\":\"text\",\"text\":\"cut\"}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len),
	    AGENT_NEXT_REPORT);
	agent_answer_free(&aa);
	free(body);
	body = answer("null", "{\"type\":\"text\",\"text\":\"x\"}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len),
	    AGENT_NEXT_REPORT);
	agent_answer_free(&aa);
	free(body);

	body = answer("\"refusal\"", "{\"type\":\"text\",\"text\":\"no\"}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len), AGENT_NEXT_FAIL);
	ck_assert_str_eq(err, "the model declined the task");
	agent_answer_free(&aa);
	free(body);

	body = answer("\"end_turn\"", "{\"type\":\"text\",\"text\":\" \\n\"}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len), AGENT_NEXT_FAIL);
	ck_assert_str_eq(err, "the model gave an empty report");
	agent_answer_free(&aa);
	free(body);
	body = answer("\"end_turn\"", "");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len), AGENT_NEXT_FAIL);
	agent_answer_free(&aa);
	free(body);

	body = answer("\"tool_use\"", "{\"type\":\"tool_use\",\"id\":\"t\","
	    "\"name\":\"web_search\",\"input\":{\"query\":\"x\"}}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len),
	    AGENT_NEXT_TOOLS);
	agent_answer_free(&aa);
	free(body);
	agent_free(ag);
}
END_TEST

START_TEST(report_cut)
{
	struct buf	 b = { 0 };
	const char	*start;

	brepeat(&b, "a", 80000);
	ck_assert_uint_eq(agent_report(b.b_s, b.b_len, &start), 80000);
	bputs(&b, "a");
	ck_assert_uint_eq(agent_report(b.b_s, b.b_len, &start), 80000);
	free(b.b_s);

	/* A character of two units at the limit is left out whole. */
	memset(&b, 0, sizeof(b));
	brepeat(&b, "a", 79999);
	bputs(&b, EMOJI);
	ck_assert_uint_eq(agent_report(b.b_s, b.b_len, &start), 79999);
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	brepeat(&b, "a", 79998);
	bputs(&b, EMOJI);
	ck_assert_uint_eq(agent_report(b.b_s, b.b_len, &start), 80002);
	free(b.b_s);

	/* Trimmed first, then cut. */
	memset(&b, 0, sizeof(b));
	bputs(&b, "\n\n  ");
	brepeat(&b, "b", 80000);
	bputs(&b, " \n");
	ck_assert_uint_eq(agent_report(b.b_s, b.b_len, &start), 80000);
	ck_assert_int_eq(start[0], 'b');
	free(b.b_s);
	ck_assert_uint_eq(agent_report(" \t\r\n", 4, &start), 0);
}
END_TEST

START_TEST(results_round)
{
	struct agent		*ag = new_agent(AGENT_THINK_HIGH, 128000, 0);
	struct agent_answer	 aa;
	const char		*report;
	size_t			 len;
	char			*body;
	cJSON			*req;
	const cJSON		*msgs, *m, *c, *b;

	body = answer("\"tool_use\"",
	    "{\"type\":\"thinking\",\"thinking\":\"plan\",\"signature\":\"s1\"},"
	    "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"web_search\","
	    "\"input\":{\"query\":\"q\"}},"
	    "{\"type\":\"tool_use\",\"id\":\"t2\",\"name\":\"fetch_content\","
	    "\"input\":{\"url\":\"https://e.org/\"}},"
	    "{\"type\":\"tool_use\",\"id\":\"t3\",\"name\":\"nope\","
	    "\"input\":{}}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len), AGENT_NEXT_TOOLS);
	free(body);
	/* Without search, web_search is answered at once. */
	ck_assert_int_eq(aa.aa_calls[0].ac_done, 1);
	ck_assert_int_eq(aa.aa_calls[0].ac_is_error, 1);
	ck_assert_str_eq(aa.aa_calls[0].ac_result,
	    "web_search is not available");
	ck_assert_int_eq(aa.aa_calls[1].ac_done, 0);
	aa.aa_calls[1].ac_result = strdup("URL: https://e.org/\nStatus: 200\n"
	    "\npage");
	aa.aa_calls[1].ac_done = 1;
	ck_assert_int_eq(agent_results(ag, &aa), 0);
	agent_answer_free(&aa);
	ck_assert_uint_eq(agent_steps(ag), 1);

	req = request(ag);
	msgs = get(req, "messages");
	ck_assert_int_eq(cJSON_GetArraySize(msgs), 3);
	m = cJSON_GetArrayItem(msgs, 1);
	ck_assert_str_eq(str(m, "role"), "assistant");
	c = get(m, "content");
	ck_assert_int_eq(cJSON_GetArraySize(c), 4);
	ck_assert_str_eq(str(cJSON_GetArrayItem(c, 0), "type"), "thinking");
	ck_assert_str_eq(str(cJSON_GetArrayItem(c, 1), "id"), "t1");
	m = cJSON_GetArrayItem(msgs, 2);
	ck_assert_str_eq(str(m, "role"), "user");
	c = get(m, "content");
	ck_assert_int_eq(cJSON_GetArraySize(c), 3);
	b = cJSON_GetArrayItem(c, 0);
	ck_assert_str_eq(str(b, "type"), "tool_result");
	ck_assert_str_eq(str(b, "tool_use_id"), "t1");
	ck_assert_str_eq(str(b, "content"), "web_search is not available");
	ck_assert(cJSON_IsTrue(get(b, "is_error")));
	b = cJSON_GetArrayItem(c, 1);
	ck_assert_str_eq(str(b, "tool_use_id"), "t2");
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(b, "is_error"));
	ck_assert_int_eq(strncmp(str(b, "content"), "URL: https://e.org/", 19),
	    0);
	b = cJSON_GetArrayItem(c, 2);
	ck_assert_str_eq(str(b, "tool_use_id"), "t3");
	ck_assert_str_eq(str(b, "content"), "Tool nope not found");
	ck_assert(cJSON_IsTrue(get(b, "is_error")));
	cJSON_Delete(req);
	agent_free(ag);
}
END_TEST

static void
round_trip(struct agent *ag, const char *result, const cJSON **last,
    cJSON **req)
{
	struct agent_answer	 aa;
	const char		*report;
	size_t			 len;
	char			*body;

	body = answer("\"tool_use\"", "{\"type\":\"tool_use\",\"id\":\"t\","
	    "\"name\":\"fetch_content\",\"input\":{\"url\":\"https://x/\"}}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len), AGENT_NEXT_TOOLS);
	free(body);
	aa.aa_calls[0].ac_result = strdup(result);
	aa.aa_calls[0].ac_done = 1;
	ck_assert_int_eq(agent_results(ag, &aa), 0);
	agent_answer_free(&aa);
	*req = request(ag);
	*last = cJSON_GetArrayItem(get(*req, "messages"),
	    cJSON_GetArraySize(get(*req, "messages")) - 1);
}

START_TEST(steps_limit)
{
	struct agent		*ag = new_agent(AGENT_THINK_NONE, 128000, 1);
	struct agent_answer	 aa;
	const cJSON		*last, *c;
	const char		*report;
	size_t			 len;
	unsigned		 i;
	char			*body;
	cJSON			*req;

	for (i = 1; i < RESEARCH_STEPS_MAX; i++) {
		round_trip(ag, "r", &last, &req);
		c = get(last, "content");
		/* The request of the last step says so. */
		if (i == RESEARCH_STEPS_MAX - 1) {
			ck_assert_int_eq(cJSON_GetArraySize(c), 2);
			ck_assert_str_eq(str(cJSON_GetArrayItem(c, 1), "type"),
			    "text");
			ck_assert_ptr_nonnull(strstr(str(cJSON_GetArrayItem(c,
			    1), "text"), "last step"));
		} else
			ck_assert_int_eq(cJSON_GetArraySize(c), 1);
		cJSON_Delete(req);
	}
	ck_assert_uint_eq(agent_steps(ag), RESEARCH_STEPS_MAX - 1);
	body = answer("\"tool_use\"", "{\"type\":\"tool_use\",\"id\":\"t\","
	    "\"name\":\"web_search\",\"input\":{\"query\":\"more\"}}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len), AGENT_NEXT_FAIL);
	ck_assert_str_eq(err, "the research did not finish within 24 steps");
	agent_answer_free(&aa);
	free(body);
	agent_free(ag);

	/* A report at the last step is a report. */
	ag = new_agent(AGENT_THINK_NONE, 128000, 1);
	for (i = 1; i < RESEARCH_STEPS_MAX; i++) {
		round_trip(ag, "r", &last, &req);
		cJSON_Delete(req);
	}
	body = answer("\"end_turn\"", "{\"type\":\"text\",\"text\":\"ok\"}");
	ck_assert_int_eq(take(ag, body, &aa, &report, &len), AGENT_NEXT_REPORT);
	agent_answer_free(&aa);
	free(body);
	agent_free(ag);
}
END_TEST

START_TEST(read_budget)
{
	struct agent	*ag = new_agent(AGENT_THINK_NONE, 128000, 1);
	struct buf	 b = { 0 };
	const cJSON	*last, *r;
	cJSON		*req;
	size_t		 n;

	brepeat(&b, "x", 150000);
	/* 150 000 + 150 000 bytes fit; the third is cut to what is left. */
	round_trip(ag, b.b_s, &last, &req);
	cJSON_Delete(req);
	round_trip(ag, b.b_s, &last, &req);
	cJSON_Delete(req);
	round_trip(ag, b.b_s, &last, &req);
	r = cJSON_GetArrayItem(get(last, "content"), 0);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(r, "is_error"));
	n = strlen(str(r, "content"));
	ck_assert_uint_le(n, AGENT_READ_MAX - 300000);
	ck_assert_ptr_nonnull(strstr(str(r, "content"), "[cut: the research "
	    "has read as much as it can hold]"));
	cJSON_Delete(req);
	/* Then every result is an error asking for the report. */
	round_trip(ag, "tiny", &last, &req);
	r = cJSON_GetArrayItem(get(last, "content"), 0);
	ck_assert(cJSON_IsTrue(get(r, "is_error")));
	ck_assert_ptr_nonnull(strstr(str(r, "content"), "write the report"));
	cJSON_Delete(req);
	/* Errors are not counted and still pass. */
	free(b.b_s);
	agent_free(ag);
}
END_TEST

START_TEST(calls_limit)
{
	struct agent		*ag = new_agent(AGENT_THINK_NONE, 128000, 1);
	struct agent_answer	 aa;
	struct buf		 b = { 0 };
	const char		*report;
	size_t			 len, i;
	char			 blk[160];

	for (i = 0; i < AGENT_CALLS_MAX + 2; i++) {
		snprintf(blk, sizeof(blk), "%s{\"type\":\"tool_use\",\"id\":"
		    "\"t%zu\",\"name\":\"web_search\",\"input\":{\"query\":"
		    "\"q\"}}", i > 0 ? "," : "", i);
		bputs(&b, blk);
	}
	{
		char	*body = answer("\"tool_use\"", b.b_s);

		ck_assert_int_eq(take(ag, body, &aa, &report, &len),
		    AGENT_NEXT_TOOLS);
		free(body);
	}
	for (i = 0; i < AGENT_CALLS_MAX; i++)
		ck_assert_int_eq(aa.aa_calls[i].ac_done, 0);
	for (; i < AGENT_CALLS_MAX + 2; i++) {
		ck_assert_int_eq(aa.aa_calls[i].ac_done, 1);
		ck_assert_int_eq(aa.aa_calls[i].ac_is_error, 1);
	}
	agent_answer_free(&aa);
	free(b.b_s);
	agent_free(ag);
}
END_TEST

START_TEST(dates)
{
	char	 d[11];

	research_date(0, d);
	ck_assert_str_eq(d, "1970-01-01");
	research_date(951782400, d);	/* leap day */
	ck_assert_str_eq(d, "2000-02-29");
	research_date(1735689599, d);
	ck_assert_str_eq(d, "2024-12-31");
	research_date(1735689600, d);
	ck_assert_str_eq(d, "2025-01-01");
	research_date(4107542400LL, d);
	ck_assert_str_eq(d, "2100-03-01");
	research_date(-1, d);
	ck_assert_str_eq(d, "1969-12-31");
}
END_TEST

static Suite *
research_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("research");

	tc = tcase_create("request");
	tcase_add_test(tc, request_shape);
	tcase_add_test(tc, request_thinking);
	tcase_add_test(tc, thinking_levels);
	suite_add_tcase(s, tc);

	tc = tcase_create("answer");
	tcase_add_test(tc, tool_use_blocks);
	tcase_add_test(tc, tool_inputs);
	tcase_add_test(tc, tool_bounds);
	tcase_add_test(tc, tool_names);
	tcase_add_test(tc, malformed);
	tcase_add_test(tc, error_types);
	suite_add_tcase(s, tc);

	tc = tcase_create("conversation");
	tcase_add_test(tc, stop_reasons);
	tcase_add_test(tc, report_cut);
	tcase_add_test(tc, results_round);
	tcase_add_test(tc, steps_limit);
	tcase_add_test(tc, read_budget);
	tcase_add_test(tc, calls_limit);
	tcase_add_test(tc, dates);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(research_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
