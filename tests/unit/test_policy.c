/*
 * Egress's own reading of call bodies (egress/policy.c, DESIGN.md 1,
 * invariant 6): what a legitimate rebuild sends passes; every rule a
 * taken-over broker could break is refused with its name; every ceiling at
 * its value and one past it; the reader is strict JSON.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "policy.h"

static const struct policy_model pm_low = {
	"claude-test", 128000, POLICY_LEVEL_LOW
};
static const char *const srv_tools[] = { "search", "fetch_page" };
static const struct policy_mcp pc_turn = { srv_tools, 2, 0 };
static const struct policy_mcp pc_window = { srv_tools, 2, 1 };

static enum violation
model(const char *body, const struct policy_model *pm)
{
	char	 why[300];

	return policy_model_check(body, strlen(body), pm, why, sizeof(why));
}

static enum violation
mcp(const char *body, const struct policy_mcp *pc)
{
	char	 why[300];

	return policy_mcp_check(body, strlen(body), pc, why, sizeof(why));
}

#define MODEL_OK(b)	ck_assert_int_eq(model((b), &pm_low), VIOLATION_NONE)
#define MODEL_NO(b, v)	ck_assert_int_eq(model((b), &pm_low), (v))

START_TEST(model_legitimate)
{
	/* what rebuild_model_request() sends */
	MODEL_OK("{\"model\":\"claude-test\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"hi\"}],\"max_tokens\":16384}");
	MODEL_OK("{\"model\":\"claude-test\",\"messages\":[],\"system\":[{\"type"
	    "\":\"text\",\"text\":\"s\"}],\"tools\":[{\"name\":\"t\",\"input_"
	    "schema\":{\"type\":\"object\"}},{\"type\":\"custom\",\"name\":\"u\","
	    "\"input_schema\":{}}],\"tool_choice\":{\"type\":\"auto\"},"
	    "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048},"
	    "\"output_config\":{\"effort\":\"low\"},\"max_tokens\":16384,"
	    "\"stream\":true,\"temperature\":0.5,\"top_p\":0.9,\"top_k\":5,"
	    "\"stop_sequences\":[\"x\"]}");
	/* count_tokens: no max_tokens; white space anywhere JSON allows */
	MODEL_OK(" {\n\"model\" : \"claude-test\" ,\"messages\":[ ] }\r\n");
	MODEL_OK("{\"model\":\"claude-test\",\"thinking\":{\"type\":"
	    "\"adaptive\"}}");
	MODEL_OK("{\"model\":\"claude-test\",\"thinking\":{\"type\":"
	    "\"disabled\"}}");
	/* escapes decode as upstream reads them */
	MODEL_OK("{\"mod\\u0065l\":\"claude-\\u0074est\"}");
}
END_TEST

START_TEST(model_model)
{
	MODEL_NO("{\"messages\":[]}", VIOLATION_MODEL);
	MODEL_NO("{\"model\":\"claude-opus\"}", VIOLATION_MODEL);
	MODEL_NO("{\"model\":\"claude-test \"}", VIOLATION_MODEL);
	MODEL_NO("{\"model\":\"claude-tes\"}", VIOLATION_MODEL);
	MODEL_NO("{\"model\":\"claude-test\\u0000\"}", VIOLATION_MODEL);
	MODEL_NO("{\"model\":7}", VIOLATION_MODEL);
	MODEL_NO("{\"model\":[\"claude-test\"]}", VIOLATION_MODEL);
	/* twice, however spelt */
	MODEL_NO("{\"model\":\"claude-test\",\"model\":\"claude-opus\"}",
	    VIOLATION_BODY);
	MODEL_NO("{\"model\":\"claude-test\",\"m\\u006fdel\":\"x\"}",
	    VIOLATION_BODY);
}
END_TEST

START_TEST(model_max_tokens)
{
	char	 b[128];

	snprintf(b, sizeof(b), "{\"model\":\"claude-test\",\"max_tokens\":%u}",
	    128000u);
	MODEL_OK(b);
	snprintf(b, sizeof(b), "{\"model\":\"claude-test\",\"max_tokens\":%u}",
	    128001u);
	MODEL_NO(b, VIOLATION_MAX_TOKENS);
	MODEL_OK("{\"model\":\"claude-test\",\"max_tokens\":0}");
	MODEL_NO("{\"model\":\"claude-test\",\"max_tokens\":1e9}",
	    VIOLATION_MAX_TOKENS);
	MODEL_NO("{\"model\":\"claude-test\",\"max_tokens\":100.0}",
	    VIOLATION_MAX_TOKENS);
	MODEL_NO("{\"model\":\"claude-test\",\"max_tokens\":-1}",
	    VIOLATION_MAX_TOKENS);
	MODEL_NO("{\"model\":\"claude-test\",\"max_tokens\":\"5\"}",
	    VIOLATION_MAX_TOKENS);
	MODEL_NO("{\"model\":\"claude-test\",\"max_tokens\":"
	    "99999999999999999999999}", VIOLATION_MAX_TOKENS);
	MODEL_NO("{\"model\":\"claude-test\",\"max_tokens\":5,\"max_tokens\":"
	    "500000}", VIOLATION_BODY);
}
END_TEST

START_TEST(model_thinking)
{
	static const struct {
		enum policy_level	 level;
		unsigned		 ceil;
	} lv[] = {
		{ POLICY_LEVEL_LOW, THINKING_CEIL_LOW },
		{ POLICY_LEVEL_MEDIUM, THINKING_CEIL_MEDIUM },
		{ POLICY_LEVEL_HIGH, THINKING_CEIL_HIGH },
		{ POLICY_LEVEL_XHIGH, THINKING_CEIL_XHIGH },
	};
	struct policy_model	 pm = pm_low;
	char			 b[160];
	size_t			 i;

	for (i = 0; i < sizeof(lv) / sizeof(lv[0]); i++) {
		pm.pm_level = lv[i].level;
		snprintf(b, sizeof(b), "{\"model\":\"claude-test\",\"thinking\":"
		    "{\"type\":\"enabled\",\"budget_tokens\":%u}}", lv[i].ceil);
		ck_assert_int_eq(model(b, &pm), VIOLATION_NONE);
		snprintf(b, sizeof(b), "{\"model\":\"claude-test\",\"thinking\":"
		    "{\"budget_tokens\":%u,\"type\":\"enabled\"}}",
		    lv[i].ceil + 1);
		ck_assert_int_eq(model(b, &pm), VIOLATION_THINKING);
	}
	/* a research job without a level: no enabled thinking at all */
	pm.pm_level = POLICY_LEVEL_NONE;
	ck_assert_int_eq(model("{\"model\":\"claude-test\",\"thinking\":{"
	    "\"type\":\"enabled\",\"budget_tokens\":1024}}", &pm),
	    VIOLATION_THINKING);
	ck_assert_int_eq(model("{\"model\":\"claude-test\"}", &pm),
	    VIOLATION_NONE);
	MODEL_NO("{\"model\":\"claude-test\",\"thinking\":{\"type\":"
	    "\"enabled\"}}", VIOLATION_THINKING);
	MODEL_NO("{\"model\":\"claude-test\",\"thinking\":{\"type\":\"adaptive\","
	    "\"budget_tokens\":1024}}", VIOLATION_THINKING);
	MODEL_NO("{\"model\":\"claude-test\",\"thinking\":{\"type\":\"other\"}}",
	    VIOLATION_THINKING);
	MODEL_NO("{\"model\":\"claude-test\",\"thinking\":{}}",
	    VIOLATION_THINKING);
	MODEL_NO("{\"model\":\"claude-test\",\"thinking\":\"enabled\"}",
	    VIOLATION_THINKING);
	MODEL_NO("{\"model\":\"claude-test\",\"thinking\":{\"type\":\"adaptive\","
	    "\"display\":\"full\"}}", VIOLATION_THINKING);
	MODEL_NO("{\"model\":\"claude-test\",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":1024,\"budget_tokens\":99999}}", VIOLATION_BODY);
	MODEL_NO("{\"model\":\"claude-test\",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":2048.5}}", VIOLATION_THINKING);
}
END_TEST

START_TEST(model_effort)
{
	static const char *const levels[] = { "low", "medium", "high",
	    "xhigh", "max" };
	struct policy_model	 pm = pm_low;
	char			 b[160];
	size_t			 i;
	/* highest effort index allowed per level: low medium high max */
	static const struct {
		enum policy_level	 level;
		size_t			 top;
	} lv[] = {
		{ POLICY_LEVEL_LOW, 0 }, { POLICY_LEVEL_MEDIUM, 1 },
		{ POLICY_LEVEL_HIGH, 2 }, { POLICY_LEVEL_XHIGH, 4 },
	};
	size_t			 l;

	for (l = 0; l < sizeof(lv) / sizeof(lv[0]); l++) {
		pm.pm_level = lv[l].level;
		for (i = 0; i < 5; i++) {
			snprintf(b, sizeof(b), "{\"model\":\"claude-test\","
			    "\"output_config\":{\"effort\":\"%s\"}}", levels[i]);
			ck_assert_int_eq(model(b, &pm), i <= lv[l].top ?
			    VIOLATION_NONE : VIOLATION_EFFORT);
		}
	}
	MODEL_NO("{\"model\":\"claude-test\",\"output_config\":{\"effort\":"
	    "\"huge\"}}", VIOLATION_EFFORT);
	MODEL_NO("{\"model\":\"claude-test\",\"output_config\":{\"format\":"
	    "{}}}", VIOLATION_EFFORT);
	MODEL_NO("{\"model\":\"claude-test\",\"output_config\":[]}",
	    VIOLATION_EFFORT);
	MODEL_OK("{\"model\":\"claude-test\",\"output_config\":{}}");
	pm.pm_level = POLICY_LEVEL_NONE;
	ck_assert_int_eq(model("{\"model\":\"claude-test\",\"output_config\":"
	    "{\"effort\":\"low\"}}", &pm), VIOLATION_EFFORT);
}
END_TEST

START_TEST(model_fields_and_tools)
{
	/* fields the rebuild never sends: server-side spending and more */
	MODEL_NO("{\"model\":\"claude-test\",\"mcp_servers\":[]}",
	    VIOLATION_FIELD);
	MODEL_NO("{\"model\":\"claude-test\",\"service_tier\":\"priority\"}",
	    VIOLATION_FIELD);
	MODEL_NO("{\"model\":\"claude-test\",\"container\":\"x\"}",
	    VIOLATION_FIELD);
	MODEL_NO("{\"model\":\"claude-test\",\"a-key-much-longer-than-any-the-"
	    "rebuild-sends\":1}", VIOLATION_FIELD);
	MODEL_NO("{\"model\":\"claude-test\",\"tools\":[{\"type\":\"web_search_"
	    "20250305\",\"name\":\"web_search\"}]}", VIOLATION_FIELD);
	MODEL_NO("{\"model\":\"claude-test\",\"tools\":[{\"name\":\"a\"},{\"type"
	    "\":\"custom\",\"type\":\"bash_20250124\"}]}", VIOLATION_BODY);
	MODEL_NO("{\"model\":\"claude-test\",\"tools\":[{\"type\":7}]}",
	    VIOLATION_FIELD);
	MODEL_NO("{\"model\":\"claude-test\",\"tools\":[\"x\"]}",
	    VIOLATION_FIELD);
	MODEL_NO("{\"model\":\"claude-test\",\"tools\":{}}", VIOLATION_FIELD);
	/* a nested "type" is the tool's schema, not the tool */
	MODEL_OK("{\"model\":\"claude-test\",\"tools\":[{\"name\":\"a\","
	    "\"input_schema\":{\"type\":\"object\",\"properties\":{\"type\":"
	    "{\"type\":\"string\"}}}}]}");
}
END_TEST

/* What the peer names is told in the host's log without a control
 * character: a newline there would forge a log line of its own. */
START_TEST(why_has_no_control_character)
{
	char	 why[300];
	size_t	 k;
	static const char body[] = "{\"model\":\"claude-test\",\"\\n<0>"
	    "forged\\u001b[1m\":1}";
	static const char call[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method"
	    "\":\"tools/call\",\"params\":{\"name\":\"a\\nb\",\"arguments"
	    "\":{}}}";

	ck_assert_int_eq(policy_model_check(body, sizeof(body) - 1, &pm_low,
	    why, sizeof(why)), VIOLATION_FIELD);
	for (k = 0; why[k] != '\0'; k++)
		ck_assert_msg((unsigned char)why[k] >= 0x20 && why[k] != 0x7f,
		    "control character in %s", why);
	ck_assert_int_eq(policy_mcp_check(call, sizeof(call) - 1, &pc_turn,
	    why, sizeof(why)), VIOLATION_MCP_TOOL);
	ck_assert_ptr_null(strchr(why, '\n'));
}
END_TEST

START_TEST(strict_json)
{
	static const char *const bad[] = {
		"",
		" ",
		"[]",
		"\"model\"",
		"{\"model\":\"claude-test\"",
		"{\"model\":\"claude-test\"}x",
		"{\"model\":\"claude-test\"}{}",
		"{\"model\":\"claude-test\",}",
		"{\"model\" \"claude-test\"}",
		"{'model':'claude-test'}",
		"{\"model\":\"claude-test\",\"messages\":[1,]}",
		"{\"model\":\"claude-test\",\"messages\":[01]}",
		"{\"model\":\"claude-test\",\"messages\":[1.]}",
		"{\"model\":\"claude-test\",\"messages\":[.5]}",
		"{\"model\":\"claude-test\",\"messages\":[+1]}",
		"{\"model\":\"claude-test\",\"messages\":[NaN]}",
		"{\"model\":\"claude-test\",\"messages\":[tru]}",
		"{\"model\":\"claude-test\",\"messages\":\"a\tb\"}",
		"{\"model\":\"claude-test\",\"messages\":\"\\x\"}",
		"{\"model\":\"claude-test\",\"messages\":\"\\u12\"}",
		"{\"model\":\"claude-test\",\"messages\":\"\\ud800\"}",
		"{\"model\":\"claude-test\",\"messages\":\"\\udc00\"}",
		"{\"model\":\"claude-test\",\"messages\":\"\\ud800\\u0041\"}",
		"{\"model\":\"claude-test\",\"messages\":\"\xc0\xae\"}",
		"{\"model\":\"claude-test\",\"messages\":\"\xed\xa0\x80\"}",
		"{\"model\":\"claude-test\",\"messages\":\"\xff\"}",
		"{\"model\":\"claude-test\",\"messages\":/*c*/[]}",
		"\xef\xbb\xbf{\"model\":\"claude-test\"}",
	};
	size_t	 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(model(bad[i], &pm_low) == VIOLATION_BODY,
		    "accepted: %s", bad[i]);
	/* a surrogate pair, and UTF-8 that is fine */
	MODEL_OK("{\"model\":\"claude-test\",\"messages\":\"\\ud83d\\ude00 "
	    "\xe2\x82\xac\"}");
}
END_TEST

START_TEST(strict_json_depth_and_nul)
{
	size_t	 n = POLICY_DEPTH_MAX + 10, i;
	char	*b;
	char	 nul[] = "{\"model\":\"claude-test\",\"messages\":\"a\0b\"}";

	b = malloc(2 * n + 64);
	ck_assert_ptr_nonnull(b);
	strcpy(b, "{\"model\":\"claude-test\",\"messages\":");
	for (i = 0; i < n; i++)
		strcat(b, "[");
	for (i = 0; i < n; i++)
		strcat(b, "]");
	strcat(b, "}");
	ck_assert_int_eq(model(b, &pm_low), VIOLATION_BODY);
	free(b);
	/* a raw NUL is a control character in a string */
	ck_assert_int_eq(policy_model_check(nul, sizeof(nul) - 1, &pm_low,
	    NULL, 0), VIOLATION_BODY);
}
END_TEST

START_TEST(strict_json_node_cap)
{
	/* "[0,0,...]" past the cap costs time, never memory */
	size_t	 n = 2u * MODEL_NODES_MAX + 1, i, len;
	char	*b;
	const char head[] = "{\"model\":\"claude-test\",\"messages\":[";

	len = sizeof(head) - 1 + 2 * n + 2;
	b = malloc(len + 1);
	ck_assert_ptr_nonnull(b);
	memcpy(b, head, sizeof(head) - 1);
	for (i = 0; i < n; i++) {
		b[sizeof(head) - 1 + 2 * i] = '0';
		b[sizeof(head) - 1 + 2 * i + 1] = ',';
	}
	b[len - 3] = '0';
	b[len - 2] = ']';
	b[len - 1] = '}';
	b[len] = '\0';
	ck_assert_int_eq(policy_model_check(b, len, &pm_low, NULL, 0),
	    VIOLATION_BODY);
	free(b);
}
END_TEST

#define MCP_OK(b, pc)	ck_assert_int_eq(mcp((b), (pc)), VIOLATION_NONE)
#define MCP_NO(b, pc, v) ck_assert_int_eq(mcp((b), (pc)), (v))

START_TEST(mcp_methods)
{
	static const char *const meta[] = { "initialize",
	    "notifications/initialized", "ping", "tools/list" };
	char	 b[160];
	size_t	 i;

	for (i = 0; i < 4; i++) {
		snprintf(b, sizeof(b), "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
		    "\"%s\",\"params\":{}}", meta[i]);
		MCP_OK(b, &pc_window);
		MCP_OK(b, &pc_turn);
	}
	MCP_OK("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
	    &pc_window);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}",
	    &pc_turn, VIOLATION_MCP_METHOD);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\"}",
	    &pc_turn, VIOLATION_MCP_METHOD);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sampling/create"
	    "Message\"}", &pc_turn, VIOLATION_MCP_METHOD);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list/\"}",
	    &pc_turn, VIOLATION_MCP_METHOD);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":1}", &pc_turn,
	    VIOLATION_MCP_METHOD);
	MCP_NO("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", &pc_turn,
	    VIOLATION_MCP_METHOD);
	MCP_NO("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", &pc_turn,
	    VIOLATION_MCP_METHOD);
	MCP_NO("{\"id\":1,\"method\":\"ping\"}", &pc_turn,
	    VIOLATION_MCP_METHOD);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"method\":"
	    "\"resources/read\"}", &pc_turn, VIOLATION_BODY);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"extra\":1}",
	    &pc_turn, VIOLATION_FIELD);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"", &pc_turn,
	    VIOLATION_BODY);
}
END_TEST

START_TEST(mcp_tool_calls)
{
	MCP_OK("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params"
	    "\":{\"name\":\"search\",\"arguments\":{\"q\":\"x\"},\"_meta\":{}}}",
	    &pc_turn);
	MCP_OK("{\"params\":{\"arguments\":{},\"name\":\"fetch_page\"},\"method"
	    "\":\"tools/call\",\"jsonrpc\":\"2.0\",\"id\":\"a\"}", &pc_turn);
	/* outside a turn, never */
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params"
	    "\":{\"name\":\"search\",\"arguments\":{}}}", &pc_window,
	    VIOLATION_MCP_METHOD);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params"
	    "\":{\"name\":\"delete_all\",\"arguments\":{}}}", &pc_turn,
	    VIOLATION_MCP_TOOL);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params"
	    "\":{\"name\":\"searc\",\"arguments\":{}}}", &pc_turn,
	    VIOLATION_MCP_TOOL);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params"
	    "\":{\"name\":\"search\",\"arguments\":[]}}", &pc_turn,
	    VIOLATION_MCP_TOOL);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params"
	    "\":{\"name\":\"search\"}}", &pc_turn, VIOLATION_MCP_TOOL);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\"}",
	    &pc_turn, VIOLATION_MCP_TOOL);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params"
	    "\":[\"search\"]}", &pc_turn, VIOLATION_MCP_TOOL);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params"
	    "\":{\"name\":\"search\",\"name\":\"delete_all\",\"arguments\":{}}}",
	    &pc_turn, VIOLATION_BODY);
	MCP_NO("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params"
	    "\":{\"name\":\"sea\\u0072ch\",\"arguments\":{}},\"params\":{}}",
	    &pc_turn, VIOLATION_BODY);
	/* an escaped name is the name */
	MCP_OK("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params"
	    "\":{\"name\":\"sea\\u0072ch\",\"arguments\":{}}}", &pc_turn);
}
END_TEST

START_TEST(levels)
{
	enum policy_level	 l;

	ck_assert_int_eq(policy_level_parse("low", &l), 0);
	ck_assert_int_eq(l, POLICY_LEVEL_LOW);
	ck_assert_int_eq(policy_level_parse("xhigh", &l), 0);
	ck_assert_int_eq(l, POLICY_LEVEL_XHIGH);
	ck_assert_int_eq(policy_level_parse("none", &l), -1);
	ck_assert_int_eq(policy_level_parse("max", &l), -1);
	ck_assert_int_eq(policy_level_parse("", &l), -1);
	ck_assert_uint_eq(policy_budget_ceiling(POLICY_LEVEL_NONE), 0);
	ck_assert_uint_eq(policy_budget_ceiling(POLICY_LEVEL_HIGH),
	    THINKING_CEIL_HIGH);
	ck_assert_str_eq(policy_level_name(POLICY_LEVEL_MEDIUM), "medium");
	ck_assert_str_eq(violation_name(VIOLATION_MCP_TOOL), "mcp_tool");
	ck_assert_int_eq(violation_from_name("mcp_tool"), VIOLATION_MCP_TOOL);
	ck_assert_int_eq(violation_from_name("none"), VIOLATION_NONE);
	ck_assert_int_eq(violation_from_name("nope"), VIOLATION_NONE);
}
END_TEST

static Suite *
policy_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("policy");

	tc = tcase_create("model");
	tcase_add_test(tc, model_legitimate);
	tcase_add_test(tc, model_model);
	tcase_add_test(tc, model_max_tokens);
	tcase_add_test(tc, model_thinking);
	tcase_add_test(tc, model_effort);
	tcase_add_test(tc, model_fields_and_tools);
	suite_add_tcase(s, tc);

	tc = tcase_create("json");
	tcase_add_test(tc, why_has_no_control_character);
	tcase_add_test(tc, strict_json);
	tcase_add_test(tc, strict_json_depth_and_nul);
	tcase_add_test(tc, strict_json_node_cap);
	suite_add_tcase(s, tc);

	tc = tcase_create("mcp");
	tcase_add_test(tc, mcp_methods);
	tcase_add_test(tc, mcp_tool_calls);
	tcase_add_test(tc, levels);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(policy_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
