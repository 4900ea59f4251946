/*
 * Egress's own reading of call bodies (egress/policy.c, DESIGN.md 1,
 * invariant 6): what a legitimate rebuild sends passes; every rule a
 * taken-over broker could break is refused with its name; every ceiling at
 * its value and one past it; the reader is strict JSON.  What the broker's
 * rebuild (broker/rebuild.c) writes at every level, what the reference
 * worker's requests become through it and what a research job
 * (research/agent.c) sends are admitted.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agent.h"
#include "limits.h"
#include "policy.h"
#include "precheck.h"
#include "egress_int.h"
#include "rebuild.h"

static const struct policy_model pm_low = {
	"claude-test", 128000, POLICY_LEVEL_LOW, 0
};
static const char *const srv_tools[] = { "search", "fetch_page" };
static const struct policy_mcp pc_turn = { srv_tools, 2, 0 };
static const struct policy_mcp pc_window = { srv_tools, 2, 1 };

static char	 why[300];

static enum violation
model(const char *body, const struct policy_model *pm)
{
	return policy_model_check(body, strlen(body), pm, why, sizeof(why));
}

static enum violation
mcp(const char *body, const struct policy_mcp *pc)
{
	return policy_mcp_check(body, strlen(body), pc, why, sizeof(why));
}

static struct policy_model
at_level(enum policy_level l)
{
	struct policy_model	 pm = pm_low;

	pm.pm_level = l;
	return pm;
}

#define MODEL_IS(b, pm, v) do {						\
	enum violation	 got_ = model((b), (pm));			\
	ck_assert_msg(got_ == (v), "%s for %.300s (%s), not %s",	\
	    violation_name(got_), (b), why, violation_name(v));		\
} while (0)
#define MODEL_OK(b)	MODEL_IS((b), &pm_low, VIOLATION_NONE)
#define MODEL_NO(b, v)	MODEL_IS((b), &pm_low, (v))

/* A body of the profile's model, a max_tokens and one message, then
 * rest (which starts with a comma when given). */
#define HI		"\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
#define BODY(rest)	"{\"model\":\"claude-test\",\"max_tokens\":16384," \
			HI rest "}"
/* The same with the messages given. */
#define MSGS(m)		"{\"model\":\"claude-test\",\"max_tokens\":16384," \
			"\"messages\":" m "}"
/* One user message of these blocks. */
#define BLOCKS(b)	MSGS("[{\"role\":\"user\",\"content\":[" b "]}]")
#define IMG_SRC		"{\"type\":\"base64\",\"media_type\":\"image/png\"," \
			"\"data\":\"AA==\"}"
#define IMG		"{\"type\":\"image\",\"source\":" IMG_SRC "}"
#define TXT		"{\"type\":\"text\",\"text\":\"t\"}"

/* A growing string for bodies too big to write as literals. */
struct buf {
	char	*b_s;
	size_t	 b_len;
	size_t	 b_cap;
};

static void
bputs(struct buf *b, const char *s)
{
	size_t	 n = strlen(s);
	char	*p;

	if (b->b_len + n + 1 > b->b_cap) {
		b->b_cap = (b->b_len + n + 1) * 2;
		p = realloc(b->b_s, b->b_cap);
		ck_assert_ptr_nonnull(p);
		b->b_s = p;
	}
	memcpy(b->b_s + b->b_len, s, n + 1);
	b->b_len += n;
}

/* n copies of unit, separated by commas. */
static void
brep(struct buf *b, const char *unit, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++) {
		if (i > 0)
			bputs(b, ",");
		bputs(b, unit);
	}
}

static void
bfree(struct buf *b)
{
	free(b->b_s);
	memset(b, 0, sizeof(*b));
}

START_TEST(model_legitimate)
{
	/* what rebuild_model_request() sends */
	MODEL_OK(BODY(""));
	MODEL_OK("{\"model\":\"claude-test\",\"messages\":[],\"system\":[{\"type"
	    "\":\"text\",\"text\":\"s\"}],\"tools\":[{\"name\":\"t\",\"input_"
	    "schema\":{\"type\":\"object\"}},{\"type\":\"custom\",\"name\":\"u\","
	    "\"input_schema\":{}}],\"tool_choice\":{\"type\":\"auto\"},"
	    "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048},"
	    "\"output_config\":{\"effort\":\"low\"},\"max_tokens\":16384,"
	    "\"stream\":true,\"temperature\":0.5,\"top_p\":0.9,\"top_k\":5,"
	    "\"stop_sequences\":[\"x\"]}");
	/* white space anywhere JSON allows */
	MODEL_OK(" {\n\"model\" : \"claude-test\" ,\"messages\":[ ] ,"
	    "\"max_tokens\" :1}\r\n");
	MODEL_OK(BODY(",\"thinking\":{\"type\":\"adaptive\"},\"output_config\":"
	    "{\"effort\":\"low\"}"));
	MODEL_OK(BODY(",\"thinking\":{\"type\":\"disabled\"}"));
	/* escapes decode as upstream reads them */
	MODEL_OK("{\"mod\\u0065l\":\"claude-\\u0074est\",\"max_tokens\":1,"
	    "\"messages\":[{\"r\\u006fle\":\"\\u0075ser\",\"content\":[{\"type"
	    "\":\"t\\u0065xt\",\"text\":\"x\"}]}]}");
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
	char	 b[160];

	snprintf(b, sizeof(b), "{\"model\":\"claude-test\",\"max_tokens\":%u,"
	    HI "}", 128000u);
	MODEL_OK(b);
	snprintf(b, sizeof(b), "{\"model\":\"claude-test\",\"max_tokens\":%u,"
	    HI "}", 128001u);
	MODEL_NO(b, VIOLATION_MAX_TOKENS);
	/* "max(budget + 1, ...)" is never 0, and always sent */
	MODEL_OK("{\"model\":\"claude-test\",\"max_tokens\":1," HI "}");
	MODEL_NO("{\"model\":\"claude-test\",\"max_tokens\":0," HI "}",
	    VIOLATION_MAX_TOKENS);
	MODEL_NO("{\"model\":\"claude-test\"," HI "}", VIOLATION_MAX_TOKENS);
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
	struct policy_model	 pm;
	char			 b[200];
	size_t			 i;

	for (i = 0; i < sizeof(lv) / sizeof(lv[0]); i++) {
		pm = at_level(lv[i].level);
		snprintf(b, sizeof(b), "{\"model\":\"claude-test\",\"thinking\":"
		    "{\"type\":\"enabled\",\"budget_tokens\":%u},\"max_tokens\":"
		    "40000," HI "}", lv[i].ceil);
		MODEL_IS(b, &pm, VIOLATION_NONE);
		snprintf(b, sizeof(b), "{\"model\":\"claude-test\",\"thinking\":"
		    "{\"budget_tokens\":%u,\"type\":\"enabled\"},\"max_tokens\":"
		    "40000," HI "}", lv[i].ceil + 1);
		MODEL_IS(b, &pm, VIOLATION_THINKING);
	}
	/* a research job without a level: no enabled thinking at all */
	pm = at_level(POLICY_LEVEL_NONE);
	MODEL_IS(BODY(",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
	    "1024}"), &pm, VIOLATION_THINKING);
	MODEL_IS(BODY(""), &pm, VIOLATION_NONE);
	MODEL_NO(BODY(",\"thinking\":{\"type\":\"enabled\"}"),
	    VIOLATION_THINKING);
	MODEL_NO(BODY(",\"thinking\":{\"type\":\"adaptive\",\"budget_tokens\":"
	    "1024}"), VIOLATION_THINKING);
	MODEL_NO(BODY(",\"thinking\":{\"type\":\"other\"}"),
	    VIOLATION_THINKING);
	MODEL_NO(BODY(",\"thinking\":{}"), VIOLATION_THINKING);
	MODEL_NO(BODY(",\"thinking\":\"enabled\""), VIOLATION_THINKING);
	MODEL_NO(BODY(",\"thinking\":{\"type\":\"adaptive\",\"display\":"
	    "\"full\"}"), VIOLATION_THINKING);
	MODEL_NO(BODY(",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
	    "1024,\"budget_tokens\":99999}"), VIOLATION_BODY);
	MODEL_NO(BODY(",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
	    "2048.5}"), VIOLATION_THINKING);
}
END_TEST

/*
 * The budget the rebuild writes: "an integer budget >= 1 024" that
 * "becomes min(asked, ceiling, maxOutputTokens - 1)", with "max_tokens =
 * max(budget + 1, ...)".
 */
START_TEST(model_thinking_budget)
{
	struct policy_model	 pm = at_level(POLICY_LEVEL_XHIGH);

	MODEL_OK(BODY(",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
	    "1024}"));
	MODEL_NO(BODY(",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
	    "1023}"), VIOLATION_THINKING);
	MODEL_NO(BODY(",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
	    "0}"), VIOLATION_THINKING);
	/* below max_tokens: budget + 1 */
	MODEL_OK("{\"model\":\"claude-test\",\"max_tokens\":2049,\"thinking\":{"
	    "\"type\":\"enabled\",\"budget_tokens\":2048}," HI "}");
	MODEL_NO("{\"model\":\"claude-test\",\"max_tokens\":2048,\"thinking\":{"
	    "\"type\":\"enabled\",\"budget_tokens\":2048}," HI "}",
	    VIOLATION_THINKING);
	/* below maxOutputTokens, whatever the level's ceiling */
	pm.pm_max_tokens = 4000;
	MODEL_IS("{\"model\":\"claude-test\",\"max_tokens\":4000,\"thinking\":{"
	    "\"type\":\"enabled\",\"budget_tokens\":3999}," HI "}", &pm,
	    VIOLATION_NONE);
	MODEL_IS("{\"model\":\"claude-test\",\"max_tokens\":4000,\"thinking\":{"
	    "\"type\":\"enabled\",\"budget_tokens\":4000}," HI "}", &pm,
	    VIOLATION_THINKING);
	pm.pm_max_tokens = MAX_OUTPUT_TOKENS_MIN;
	MODEL_IS("{\"model\":\"claude-test\",\"max_tokens\":1025,\"thinking\":{"
	    "\"type\":\"enabled\",\"budget_tokens\":1024}," HI "}", &pm,
	    VIOLATION_NONE);
}
END_TEST

START_TEST(model_effort)
{
	static const char *const levels[] = { "low", "medium", "high",
	    "xhigh", "max" };
	struct policy_model	 pm;
	char			 b[200];
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
		pm = at_level(lv[l].level);
		for (i = 0; i < 5; i++) {
			snprintf(b, sizeof(b), BODY(",\"output_config\":{"
			    "\"effort\":\"%s\"}"), levels[i]);
			MODEL_IS(b, &pm, i <= lv[l].top ? VIOLATION_NONE :
			    VIOLATION_EFFORT);
		}
	}
	MODEL_NO(BODY(",\"output_config\":{\"effort\":\"huge\"}"),
	    VIOLATION_EFFORT);
	MODEL_NO(BODY(",\"output_config\":{\"format\":{}}"), VIOLATION_EFFORT);
	MODEL_NO(BODY(",\"output_config\":[]"), VIOLATION_EFFORT);
	/* the rebuild writes output_config only with an effort */
	MODEL_NO(BODY(",\"output_config\":{}"), VIOLATION_EFFORT);
	pm = at_level(POLICY_LEVEL_NONE);
	MODEL_IS(BODY(",\"output_config\":{\"effort\":\"low\"}"), &pm,
	    VIOLATION_EFFORT);
}
END_TEST

/*
 * Adaptive thinking carries the level's effort where the rebuild sets it:
 * "with adaptive thinking and no requested effort, the ceiling's effort
 * is set when the level is low or medium".  At high and xhigh the rebuild
 * leaves it out (upstream's default, high, is within the ceiling); for
 * count_tokens it sends no output_config at all.  A research job without
 * a level does not think.
 */
START_TEST(model_adaptive_effort)
{
	static const struct {
		enum policy_level	 level;
		enum violation		 missing;	/* no effort */
		const char		*top;		/* the ceiling's */
		const char		*past;		/* one past it */
	} lv[] = {
		{ POLICY_LEVEL_LOW, VIOLATION_EFFORT, "low", "medium" },
		{ POLICY_LEVEL_MEDIUM, VIOLATION_EFFORT, "medium", "high" },
		{ POLICY_LEVEL_HIGH, VIOLATION_NONE, "high", "xhigh" },
		{ POLICY_LEVEL_XHIGH, VIOLATION_NONE, "max", NULL },
	};
	static const char adaptive[] = BODY(",\"thinking\":{\"type\":"
	    "\"adaptive\"}");
	struct policy_model	 pm;
	char			 b[256];
	size_t			 l;

	for (l = 0; l < sizeof(lv) / sizeof(lv[0]); l++) {
		pm = at_level(lv[l].level);
		MODEL_IS(adaptive, &pm, lv[l].missing);
		snprintf(b, sizeof(b), BODY(",\"thinking\":{\"type\":"
		    "\"adaptive\"},\"output_config\":{\"effort\":\"%s\"}"),
		    lv[l].top);
		MODEL_IS(b, &pm, VIOLATION_NONE);
		snprintf(b, sizeof(b), BODY(",\"output_config\":{\"effort\":"
		    "\"%s\"},\"thinking\":{\"type\":\"adaptive\"}"),
		    lv[l].top);
		MODEL_IS(b, &pm, VIOLATION_NONE);
		if (lv[l].past != NULL) {
			snprintf(b, sizeof(b), BODY(",\"thinking\":{\"type\":"
			    "\"adaptive\"},\"output_config\":{\"effort\":"
			    "\"%s\"}"), lv[l].past);
			MODEL_IS(b, &pm, VIOLATION_EFFORT);
		}
		/* an empty output_config is no effort either */
		MODEL_IS(BODY(",\"thinking\":{\"type\":\"adaptive\"},"
		    "\"output_config\":{}"), &pm, VIOLATION_EFFORT);
		/* count_tokens: adaptive as the rebuild leaves it */
		pm.pm_count_tokens = 1;
		MODEL_IS("{\"model\":\"claude-test\"," HI ",\"thinking\":{"
		    "\"type\":\"adaptive\"}}", &pm, VIOLATION_NONE);
		/* disabled and enabled need no effort */
		pm.pm_count_tokens = 0;
		MODEL_IS(BODY(",\"thinking\":{\"type\":\"disabled\"}"), &pm,
		    VIOLATION_NONE);
		MODEL_IS(BODY(",\"thinking\":{\"type\":\"enabled\","
		    "\"budget_tokens\":2048}"), &pm, VIOLATION_NONE);
	}
	pm = at_level(POLICY_LEVEL_NONE);
	MODEL_IS(adaptive, &pm, VIOLATION_THINKING);
	pm.pm_count_tokens = 1;
	MODEL_IS("{\"model\":\"claude-test\"," HI ",\"thinking\":{\"type\":"
	    "\"adaptive\"}}", &pm, VIOLATION_THINKING);
	pm.pm_count_tokens = 0;
	MODEL_IS(BODY(",\"thinking\":{\"type\":\"disabled\"}"), &pm,
	    VIOLATION_NONE);
}
END_TEST

/* "Not for count_tokens": max_tokens, output_config and the sampling
 * fields are left out there, and nothing else is asked. */
START_TEST(model_count_tokens)
{
	static const char *const not_sent[] = {
		"\"max_tokens\":16", "\"stream\":true", "\"temperature\":1",
		"\"top_p\":1", "\"top_k\":1", "\"stop_sequences\":[\"x\"]",
		"\"output_config\":{\"effort\":\"low\"}"
	};
	struct policy_model	 pm = pm_low;
	char			 b[200];
	size_t			 i;

	pm.pm_count_tokens = 1;
	MODEL_IS("{\"model\":\"claude-test\"," HI "}", &pm, VIOLATION_NONE);
	MODEL_IS("{\"model\":\"claude-test\"," HI ",\"system\":\"s\","
	    "\"tools\":[{\"name\":\"t\",\"input_schema\":{}}],\"tool_choice\":"
	    "{\"type\":\"any\"},\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":2048}}", &pm, VIOLATION_NONE);
	for (i = 0; i < sizeof(not_sent) / sizeof(not_sent[0]); i++) {
		snprintf(b, sizeof(b), "{\"model\":\"claude-test\"," HI ",%s}",
		    not_sent[i]);
		MODEL_IS(b, &pm, VIOLATION_FIELD);
		ck_assert_ptr_nonnull(strstr(why, "count_tokens"));
	}
	/* still the rest of the rules */
	MODEL_IS("{\"model\":\"claude-test\"}", &pm, VIOLATION_FIELD);
	MODEL_IS("{\"model\":\"claude-test\",\"thinking\":{\"type\":"
	    "\"enabled\",\"budget_tokens\":2049}," HI "}", &pm,
	    VIOLATION_THINKING);
}
END_TEST

START_TEST(model_fields_and_tools)
{
	struct buf	 b = { 0 };

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
	MODEL_OK(BODY(",\"tools\":[{\"name\":\"a\",\"input_schema\":{\"type\":"
	    "\"object\",\"properties\":{\"type\":{\"type\":\"string\"}}}}]"));
	/* "tools: at most 128" */
	bputs(&b, "{\"model\":\"claude-test\",\"max_tokens\":1," HI ",\"tools\":[");
	brep(&b, "{\"name\":\"t\",\"input_schema\":{}}", MODEL_TOOLS_MAX);
	bputs(&b, "]}");
	MODEL_OK(b.b_s);
	bfree(&b);
	bputs(&b, "{\"model\":\"claude-test\",\"max_tokens\":1," HI ",\"tools\":[");
	brep(&b, "{\"name\":\"t\",\"input_schema\":{}}", MODEL_TOOLS_MAX + 1);
	bputs(&b, "]}");
	MODEL_NO(b.b_s, VIOLATION_BODY);
	bfree(&b);
}
END_TEST

/* "messages: at most 2 000; role user or assistant only", each of role
 * and content and nothing else. */
START_TEST(model_messages)
{
	struct buf	 b = { 0 };

	MODEL_NO("{\"model\":\"claude-test\",\"max_tokens\":1}",
	    VIOLATION_FIELD);
	MODEL_NO(MSGS("{}"), VIOLATION_FIELD);
	MODEL_NO(MSGS("\"hi\""), VIOLATION_FIELD);
	MODEL_NO(MSGS("[\"hi\"]"), VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"developer\",\"content\":\"x\"}]"),
	    VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"User\",\"content\":\"x\"}]"),
	    VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"user\\u0000\",\"content\":\"x\"}]"),
	    VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":1,\"content\":\"x\"}]"), VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"content\":\"x\"}]"), VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"user\"}]"), VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"user\",\"content\":7}]"), VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"user\",\"content\":{}}]"),
	    VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"user\",\"content\":\"x\",\"name\":\"a\"}]"),
	    VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"user\",\"content\":\"x\",\"role\":"
	    "\"system\"}]"), VIOLATION_BODY);
	MODEL_OK(MSGS("[{\"role\":\"user\",\"content\":\"x\"},{\"content\":[],"
	    "\"role\":\"assistant\"}]"));

	/* 2 000, and one past */
	bputs(&b, "{\"model\":\"claude-test\",\"max_tokens\":1,\"messages\":[");
	brep(&b, "{\"role\":\"user\",\"content\":\"x\"}", MODEL_MESSAGES_MAX);
	bputs(&b, "]}");
	MODEL_OK(b.b_s);
	bfree(&b);
	bputs(&b, "{\"model\":\"claude-test\",\"max_tokens\":1,\"messages\":[");
	brep(&b, "{\"role\":\"user\",\"content\":\"x\"}",
	    MODEL_MESSAGES_MAX + 1);
	bputs(&b, "]}");
	MODEL_NO(b.b_s, VIOLATION_BODY);
	ck_assert_ptr_nonnull(strstr(why, "2000 messages"));
	bfree(&b);
}
END_TEST

/*
 * A system message amid the conversation: text only, the clear_at tag,
 * an effort under the ceiling; what the rebuild never writes is refused.
 */
START_TEST(model_system_messages)
{
	struct buf	 b = { 0 };
	char		 tag[SYSTEM_CLEAR_AT_MAX + 2];

	MODEL_OK(MSGS("[{\"role\":\"user\",\"content\":\"x\"},"
	    "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":"
	    "\"env\",\"cache_control\":{\"type\":\"ephemeral\"}}],"
	    "\"clear_at\":\"next_user_message\",\"output_config\":"
	    "{\"effort\":\"low\"}},{\"role\":\"system\",\"content\":\"r\"}]"));
	/* over the low ceiling */
	MODEL_NO(MSGS("[{\"role\":\"system\",\"content\":\"x\","
	    "\"output_config\":{\"effort\":\"medium\"}}]"), VIOLATION_EFFORT);
	ck_assert_ptr_nonnull(strstr(why, "messages.0: effort medium over"));
	MODEL_NO(MSGS("[{\"role\":\"system\",\"content\":\"x\","
	    "\"output_config\":{}}]"), VIOLATION_EFFORT);
	MODEL_NO(MSGS("[{\"role\":\"system\",\"content\":\"x\","
	    "\"output_config\":{\"effort\":\"low\",\"x\":1}}]"),
	    VIOLATION_EFFORT);
	/* a tool change, an image: text only */
	MODEL_NO(MSGS("[{\"role\":\"system\",\"content\":[{\"type\":"
	    "\"tool_addition\",\"tool\":{}}]}]"), VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"system\",\"content\":[" IMG "]}]"),
	    VIOLATION_FIELD);
	ck_assert_ptr_nonnull(strstr(why, "in a system message"));
	MODEL_NO(MSGS("[{\"role\":\"system\",\"content\":\"x\","
	    "\"name\":\"a\"}]"), VIOLATION_FIELD);
	/* only a system message has them */
	MODEL_NO(MSGS("[{\"role\":\"user\",\"content\":\"x\","
	    "\"clear_at\":\"a\"}]"), VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"assistant\",\"content\":\"x\","
	    "\"output_config\":{\"effort\":\"low\"}}]"), VIOLATION_FIELD);
	/* clear_at: 64 bytes of [a-z0-9_], and one past */
	memset(tag, 'z', SYSTEM_CLEAR_AT_MAX);
	tag[SYSTEM_CLEAR_AT_MAX] = '\0';
	bputs(&b, "{\"model\":\"claude-test\",\"max_tokens\":16384,"
	    "\"messages\":[{\"role\":\"system\",\"content\":\"x\","
	    "\"clear_at\":\"");
	bputs(&b, tag);
	bputs(&b, "\"}]}");
	MODEL_OK(b.b_s);
	bfree(&b);
	tag[SYSTEM_CLEAR_AT_MAX] = 'z';
	tag[SYSTEM_CLEAR_AT_MAX + 1] = '\0';
	bputs(&b, "{\"model\":\"claude-test\",\"max_tokens\":16384,"
	    "\"messages\":[{\"role\":\"system\",\"content\":\"x\","
	    "\"clear_at\":\"");
	bputs(&b, tag);
	bputs(&b, "\"}]}");
	MODEL_NO(b.b_s, VIOLATION_FIELD);
	bfree(&b);
	MODEL_NO(MSGS("[{\"role\":\"system\",\"content\":\"x\","
	    "\"clear_at\":\"\"}]"), VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"system\",\"content\":\"x\","
	    "\"clear_at\":\"A\"}]"), VIOLATION_FIELD);
	MODEL_NO(MSGS("[{\"role\":\"system\",\"content\":\"x\","
	    "\"clear_at\":1}]"), VIOLATION_FIELD);
}
END_TEST

/* Every block type the rebuild writes, with its keys as it writes them. */
START_TEST(model_blocks_written)
{
	MODEL_OK(BLOCKS(TXT "," IMG));
	MODEL_OK(BLOCKS("{\"type\":\"text\",\"text\":\"t\",\"cache_control\":{"
	    "\"type\":\"ephemeral\"}}"));
	MODEL_OK(BLOCKS("{\"type\":\"text\",\"text\":\"t\",\"cache_control\":{"
	    "\"type\":\"ephemeral\",\"ttl\":\"1h\"}}"));
	MODEL_OK(MSGS("[{\"role\":\"assistant\",\"content\":["
	    "{\"type\":\"thinking\",\"thinking\":\"hm\",\"signature\":\"c2ln\"},"
	    "{\"type\":\"redacted_thinking\",\"data\":\"cmVk\"},"
	    "{\"type\":\"text\",\"text\":\"a\"},"
	    "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"n\",\"input\":{"
	    "\"type\":\"document\",\"source\":{\"type\":\"url\"}}}]},"
	    "{\"role\":\"user\",\"content\":["
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"t1\"},"
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":\"r\"},"
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"is_error\":true,"
	    "\"content\":[" TXT "," IMG "]}]}]"));
	MODEL_OK(BODY(",\"system\":\"s\""));
	MODEL_OK(BODY(",\"system\":[" TXT "," IMG "]"));
	MODEL_OK(BODY(",\"system\":[]"));
	/* every media type of 4.3 */
	MODEL_OK(BLOCKS("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/jpeg\",\"data\":\"AA==\"}},{\"type\":"
	    "\"image\",\"source\":{\"data\":\"AA==\",\"media_type\":\"image/"
	    "webp\",\"type\":\"base64\"}},{\"type\":\"image\",\"source\":{"
	    "\"type\":\"base64\",\"media_type\":\"image/gif\",\"data\":\"\"}}"));
}
END_TEST

/* "Any other block (server tools, URL images, documents, ...) -> refused",
 * and "system and nested content accept only text and image". */
START_TEST(model_blocks_refused)
{
	static const char *const other[] = {
		"{\"type\":\"document\",\"source\":{\"type\":\"base64\","
		    "\"media_type\":\"application/pdf\",\"data\":\"AA==\"}}",
		"{\"type\":\"document\",\"source\":{\"type\":\"url\",\"url\":"
		    "\"https://attacker.example/x.pdf\"}}",
		"{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":"
		    "\"web_fetch\",\"input\":{\"url\":\"https://attacker."
		    "example/\"}}",
		"{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"s\","
		    "\"content\":[]}",
		"{\"type\":\"web_fetch_tool_result\",\"tool_use_id\":\"s\","
		    "\"content\":{}}",
		"{\"type\":\"mcp_tool_use\",\"id\":\"m\",\"name\":\"x\","
		    "\"server_name\":\"s\",\"input\":{}}",
		"{\"type\":\"container_upload\",\"file_id\":\"file_1\"}",
		"{\"type\":\"search_result\",\"source\":\"https://a.example/\","
		    "\"title\":\"t\",\"content\":[]}",
		"{\"type\":\"text \",\"text\":\"t\"}",
		"{\"type\":\"a-block-type-much-longer-than-any-the-rebuild-"
		    "writes\"}",
		"{\"type\":7}",
		"{\"text\":\"t\"}",
		"\"t\"",
		"[]",
	};
	/* system, and a tool_result's content */
	static const char *const nested_lists[][2] = {
		{ "{\"model\":\"claude-test\",\"max_tokens\":1," HI ","
		    "\"system\":[", "]}" },
		{ "{\"model\":\"claude-test\",\"max_tokens\":1,\"messages\":[{"
		    "\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
		    "\"tool_use_id\":\"t\",\"content\":[", "]}]}]}" },
	};
	static const char *const message_only[] = {
		"{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{}}",
		"{\"type\":\"tool_result\",\"tool_use_id\":\"t\"}",
		"{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}",
		"{\"type\":\"redacted_thinking\",\"data\":\"\"}",
	};
	char	 b[512];
	size_t	 i, k;

	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		snprintf(b, sizeof(b), BLOCKS("%s"), other[i]);
		MODEL_NO(b, VIOLATION_FIELD);
		snprintf(b, sizeof(b), MSGS("[{\"role\":\"assistant\","
		    "\"content\":[" TXT ",%s]}]"), other[i]);
		MODEL_NO(b, VIOLATION_FIELD);
		for (k = 0; k < 2; k++) {
			snprintf(b, sizeof(b), "%s%s%s", nested_lists[k][0],
			    other[i], nested_lists[k][1]);
			MODEL_NO(b, VIOLATION_FIELD);
		}
	}
	for (i = 0; i < sizeof(message_only) / sizeof(message_only[0]); i++) {
		snprintf(b, sizeof(b), BLOCKS("%s"), message_only[i]);
		MODEL_OK(b);
		for (k = 0; k < 2; k++) {
			snprintf(b, sizeof(b), "%s%s%s", nested_lists[k][0],
			    message_only[i], nested_lists[k][1]);
			MODEL_NO(b, VIOLATION_FIELD);
		}
	}
	ck_assert_ptr_nonnull(strstr(why, "text and image only"));
	MODEL_NO(BODY(",\"system\":7"), VIOLATION_FIELD);
	MODEL_NO(BODY(",\"system\":{}"), VIOLATION_FIELD);
	MODEL_NO(BLOCKS("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":{}}"), VIOLATION_FIELD);
	MODEL_NO(BLOCKS("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":null}"), VIOLATION_FIELD);
	/* the path of the refusal names the block */
	MODEL_NO(MSGS("[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"user"
	    "\",\"content\":[" TXT ",{\"type\":\"tool_result\",\"tool_use_id\":"
	    "\"t\",\"content\":[" TXT ",{\"type\":\"document\"}]}]}]"),
	    VIOLATION_FIELD);
	ck_assert_ptr_nonnull(strstr(why, "messages.1.content.1.content.1"));
}
END_TEST

/* Sources: "image with a base64 source (4.3)"; never a url or a file that
 * upstream would fetch or read with the credential. */
START_TEST(model_sources)
{
	static const char *const bad[] = {
		"{\"type\":\"url\",\"url\":\"https://attacker.example/leak?d=x\"}",
		"{\"type\":\"file\",\"file_id\":\"file_011CNha8iCJcU1wXNR6q4V8w\"}",
		"{\"type\":\"text\",\"media_type\":\"text/plain\",\"data\":\"x\"}",
		"{\"type\":\"content\",\"content\":[]}",
		"{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":"
		    "\"AA==\",\"url\":\"https://attacker.example/\"}",
		"{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":"
		    "\"AA==\",\"file_id\":\"f\"}",
		"{\"type\":\"base64\",\"media_type\":\"image/bmp\",\"data\":"
		    "\"AA==\"}",
		"{\"type\":\"base64\",\"media_type\":\"application/pdf\","
		    "\"data\":\"AA==\"}",
		"{\"type\":\"base64\",\"media_type\":\"image/png \",\"data\":"
		    "\"AA==\"}",
		"{\"type\":\"base64\",\"data\":\"AA==\"}",
		"{\"type\":\"base64\",\"media_type\":\"image/png\"}",
		"{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":7}",
		"{\"media_type\":\"image/png\",\"data\":\"AA==\"}",
		"{\"type\":\"BASE64\",\"media_type\":\"image/png\",\"data\":"
		    "\"AA==\"}",
		"\"https://attacker.example/\"",
		"[]",
	};
	char	 b[512];
	size_t	 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(b, sizeof(b), BLOCKS("{\"type\":\"image\",\"source\":"
		    "%s}"), bad[i]);
		MODEL_NO(b, VIOLATION_FIELD);
		snprintf(b, sizeof(b), BODY(",\"system\":[{\"type\":\"image\","
		    "\"source\":%s}]"), bad[i]);
		MODEL_NO(b, VIOLATION_FIELD);
		snprintf(b, sizeof(b), BLOCKS("{\"type\":\"tool_result\","
		    "\"tool_use_id\":\"t\",\"content\":[{\"type\":\"image\","
		    "\"source\":%s}]}"), bad[i]);
		MODEL_NO(b, VIOLATION_FIELD);
	}
	MODEL_NO(BLOCKS("{\"type\":\"image\",\"source\":{\"type\":\"url\","
	    "\"url\":\"https://attacker.example/\"}}"), VIOLATION_FIELD);
	ck_assert_ptr_nonnull(strstr(why, "base64 sources only"));
	MODEL_NO(BLOCKS("{\"type\":\"image\"}"), VIOLATION_FIELD);
	MODEL_NO(BLOCKS("{\"type\":\"image\",\"source\":" IMG_SRC ",\"source\":"
	    "{\"type\":\"url\",\"url\":\"https://a.example/\"}}"),
	    VIOLATION_BODY);
	MODEL_NO(BLOCKS("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"type\":\"url\",\"media_type\":\"image/png\",\"data\":\"\"}}"),
	    VIOLATION_BODY);
	/* escapes decode as upstream reads them */
	MODEL_NO(BLOCKS("{\"type\":\"image\",\"source\":{\"type\":\"\\u0075rl\","
	    "\"url\":\"https://a.example/\"}}"), VIOLATION_FIELD);
	MODEL_OK(BLOCKS("{\"type\":\"image\",\"source\":{\"type\":\"base\\u0036"
	    "4\",\"media_type\":\"image\\/png\",\"data\":\"AA==\"}}"));
}
END_TEST

/* Each block with the keys the rebuild writes for it: no more, none
 * missing, strings where it moves strings. */
START_TEST(model_block_keys)
{
	static const char *const bad[] = {
		/* keys the rebuild never writes */
		"{\"type\":\"text\",\"text\":\"t\",\"citations\":[{\"type\":"
		    "\"web_search_result_location\",\"url\":\"https://a.example/"
		    "\"}]}",
		"{\"type\":\"image\",\"source\":" IMG_SRC ",\"cache_control\":{"
		    "\"type\":\"ephemeral\"}}",
		"{\"type\":\"image\",\"source\":" IMG_SRC ",\"title\":\"x\"}",
		"{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":{},"
		    "\"cache_control\":{\"type\":\"ephemeral\"}}",
		"{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"text\":\"x\"}",
		"{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\","
		    "\"data\":\"\"}",
		"{\"type\":\"redacted_thinking\",\"data\":\"\",\"text\":\"\"}",
		"{\"type\":\"text\",\"text\":\"t\",\"a-key-much-longer-than-any-"
		    "the-rebuild-writes\":1}",
		/* keys it always writes, missing */
		"{\"type\":\"text\"}",
		"{\"type\":\"tool_use\",\"name\":\"n\",\"input\":{}}",
		"{\"type\":\"tool_use\",\"id\":\"t\",\"input\":{}}",
		"{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\"}",
		"{\"type\":\"tool_result\",\"content\":\"x\"}",
		"{\"type\":\"thinking\",\"thinking\":\"\"}",
		"{\"type\":\"thinking\",\"signature\":\"\"}",
		"{\"type\":\"redacted_thinking\"}",
		/* shapes */
		"{\"type\":\"text\",\"text\":7}",
		"{\"type\":\"text\",\"text\":[\"t\"]}",
		"{\"type\":\"tool_use\",\"id\":1,\"name\":\"n\",\"input\":{}}",
		"{\"type\":\"tool_use\",\"id\":\"t\",\"name\":null,\"input\":{}}",
		"{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":[]}",
		"{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\",\"input\":"
		    "\"{}\"}",
		"{\"type\":\"tool_result\",\"tool_use_id\":{}}",
		"{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"is_error\":"
		    "false}",
		"{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"is_error\":1}",
		"{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":1}",
		"{\"type\":\"redacted_thinking\",\"data\":{}}",
		/* cache_control as the rebuild keeps it, or not at all */
		"{\"type\":\"text\",\"text\":\"t\",\"cache_control\":{\"type\":"
		    "\"ephemeral\",\"ttl\":\"5m\"}}",
		"{\"type\":\"text\",\"text\":\"t\",\"cache_control\":{\"type\":"
		    "\"persistent\"}}",
		"{\"type\":\"text\",\"text\":\"t\",\"cache_control\":{}}",
		"{\"type\":\"text\",\"text\":\"t\",\"cache_control\":{\"type\":"
		    "\"ephemeral\",\"scope\":\"org\"}}",
		"{\"type\":\"text\",\"text\":\"t\",\"cache_control\":\"ephemeral"
		    "\"}",
	};
	char	 b[512];
	size_t	 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(b, sizeof(b), BLOCKS("%s"), bad[i]);
		MODEL_NO(b, VIOLATION_FIELD);
	}
	MODEL_NO(BLOCKS("{\"type\":\"text\",\"text\":\"t\",\"text\":\"u\"}"),
	    VIOLATION_BODY);
	MODEL_NO(BLOCKS("{\"type\":\"text\",\"type\":\"document\",\"text\":"
	    "\"t\"}"), VIOLATION_BODY);
	MODEL_NO(BLOCKS("{\"type\":\"text\",\"text\":\"t\",\"cache_control\":{"
	    "\"type\":\"ephemeral\",\"ttl\":\"1h\",\"ttl\":\"5m\"}}"),
	    VIOLATION_BODY);
	MODEL_NO(BLOCKS("{\"type\":\"text\",\"text\":\"t\",\"citations\":[]}"),
	    VIOLATION_FIELD);
	ck_assert_ptr_nonnull(strstr(why, "messages.0.content.0.citations"));
}
END_TEST

/* "Content: a string, or at most 256 blocks"; images "at most 8 per
 * list" (4.3), for a message, system and a tool_result's content. */
START_TEST(model_block_counts)
{
	static const char *const lists[] = {
		"{\"model\":\"claude-test\",\"max_tokens\":1,\"messages\":[{"
		    "\"role\":\"user\",\"content\":[",
		"{\"model\":\"claude-test\",\"max_tokens\":1," HI ",\"system\":[",
		"{\"model\":\"claude-test\",\"max_tokens\":1,\"messages\":[{"
		    "\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
		    "\"tool_use_id\":\"t\",\"content\":[",
	};
	static const char *const ends[] = { "]}]}", "]}", "]}]}]}" };
	struct buf	 b = { 0 };
	size_t		 l;

	for (l = 0; l < 3; l++) {
		bputs(&b, lists[l]);
		brep(&b, TXT, MODEL_BLOCKS_MAX);
		bputs(&b, ends[l]);
		MODEL_OK(b.b_s);
		bfree(&b);
		bputs(&b, lists[l]);
		brep(&b, TXT, MODEL_BLOCKS_MAX + 1);
		bputs(&b, ends[l]);
		MODEL_NO(b.b_s, VIOLATION_BODY);
		ck_assert_ptr_nonnull(strstr(why, "256 content blocks"));
		bfree(&b);

		bputs(&b, lists[l]);
		brep(&b, IMG, IMAGES_MAX);
		bputs(&b, ",");
		brep(&b, TXT, 10);
		bputs(&b, ends[l]);
		MODEL_OK(b.b_s);
		bfree(&b);
		bputs(&b, lists[l]);
		brep(&b, IMG, IMAGES_MAX + 1);
		bputs(&b, ends[l]);
		MODEL_NO(b.b_s, VIOLATION_BODY);
		ck_assert_ptr_nonnull(strstr(why, "8 images"));
		bfree(&b);
	}
	/* each list counts its own: 8 images in a message and 8 more in
	 * each of its tool results */
	bputs(&b, "{\"model\":\"claude-test\",\"max_tokens\":1,\"messages\":[{"
	    "\"role\":\"user\",\"content\":[");
	brep(&b, IMG, IMAGES_MAX);
	bputs(&b, ",{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\""
	    ":[");
	brep(&b, IMG, IMAGES_MAX);
	bputs(&b, "]},{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[");
	brep(&b, IMG, IMAGES_MAX);
	bputs(&b, "]}]}]}");
	MODEL_OK(b.b_s);
	bfree(&b);
}
END_TEST

/* What the peer names is told in the host's log without a control
 * character: a newline there would forge a log line of its own. */
START_TEST(why_has_no_control_character)
{
	static const char *const bodies[] = {
		BLOCKS("{\"type\":\"x\\n<0>forged\"}"),
		BLOCKS("{\"type\":\"image\",\"source\":{\"type\":\"u\\r\\nx\"}}"),
		BLOCKS("{\"type\":\"text\",\"text\":\"t\",\"\\n\\u001b[1m\":1}"),
		BODY(",\"\\nforged\":1"),
	};
	size_t	 i, k;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		MODEL_NO(bodies[i], VIOLATION_FIELD);
		for (k = 0; why[k] != '\0'; k++)
			ck_assert_msg((unsigned char)why[k] >= 0x20 &&
			    why[k] != 0x7f, "control character in %s", why);
	}
	ck_assert_int_eq(mcp("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"a\\nb\",\"arguments\":"
	    "{}}}", &pc_turn), VIOLATION_MCP_TOOL);
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
	MODEL_OK(MSGS("[{\"role\":\"user\",\"content\":\"\\ud83d\\ude00 "
	    "\xe2\x82\xac\"}]"));
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

/*
 * The cap counts each value once: the checks that read a tool or a block
 * again do not count it twice.  The tools check reads each tool twice,
 * and a schema of a little more than half the cap is within it.
 */
START_TEST(node_cap_counts_once)
{
	size_t	 n = MODEL_NODES_MAX + 1000, i, len;
	char	*b;
	const char head[] = "{\"model\":\"claude-test\",\"max_tokens\":1,"
	    HI ",\"tools\":[{\"name\":\"t\",\"input_schema\":{\"enum\":[";
	const char tail[] = "]}}]}";

	len = sizeof(head) - 1 + 2 * n - 1 + sizeof(tail) - 1;
	b = malloc(len + 1);
	ck_assert_ptr_nonnull(b);
	memcpy(b, head, sizeof(head) - 1);
	for (i = 0; i < n; i++) {
		b[sizeof(head) - 1 + 2 * i] = '0';
		b[sizeof(head) - 1 + 2 * i + 1] = ',';
	}
	memcpy(b + sizeof(head) - 1 + 2 * n - 1, tail, sizeof(tail));
	ck_assert_int_eq(policy_model_check(b, len, &pm_low, why,
	    sizeof(why)), VIOLATION_NONE);
	free(b);
}
END_TEST

/*
 * What the rebuild writes is admitted: representative requests of the
 * reference worker (worker/agent.c builds them so) and of a Claude Code
 * worker, through rebuild_model_request() at every level, output bound
 * and route, are admitted by egress under the same level and bound.
 */
static const char *const worker_requests[] = {
	/* the reference worker's first request: images, then the text */
	"{\"model\":\"claude\",\"max_tokens\":4096,\"system\":\"You are the "
	    "reference worker.\\n\\nWhat you remember about this channel:\\n"
	    "x\",\"messages\":[{\"role\":\"user\",\"content\":[" IMG ","
	    "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":"
	    "\"image/jpeg\",\"data\":\"AAAA\"}},{\"type\":\"text\",\"text\":"
	    "\"A: hello\"}]}],\"tools\":[{\"name\":\"write_file\",\"description"
	    "\":\"Attach a file.\",\"input_schema\":{\"type\":\"object\","
	    "\"properties\":{\"name\":{\"type\":\"string\"},\"content\":{\"type"
	    "\":\"string\"}},\"required\":[\"name\",\"content\"]}}],\"stream\":"
	    "true}",
	/* its next request: the model's blocks and the tools' results */
	"{\"model\":\"claude\",\"max_tokens\":4096,\"system\":\"s\",\"messages\":"
	    "[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"A: "
	    "roll\"}]},{\"role\":\"assistant\",\"content\":[{\"type\":"
	    "\"thinking\",\"thinking\":\"roll it\",\"signature\":\"c2ln\"},"
	    "{\"type\":\"redacted_thinking\",\"data\":\"cmVk\"},{\"type\":\"text"
	    "\",\"text\":\"Rolling.\"},{\"type\":\"tool_use\",\"id\":\"toolu_01\","
	    "\"name\":\"roll_dice\",\"input\":{\"sides\":6}},{\"type\":\"tool_use"
	    "\",\"id\":\"toolu_02\",\"name\":\"chart\",\"input\":{}},{\"type\":"
	    "\"tool_use\",\"id\":\"toolu_03\",\"name\":\"write_file\",\"input\":"
	    "{\"name\":\"a.txt\",\"content\":\"x\"}}]},{\"role\":\"user\","
	    "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_01\","
	    "\"content\":\"4\"},{\"type\":\"tool_result\",\"tool_use_id\":"
	    "\"toolu_02\",\"content\":[{\"type\":\"text\",\"text\":\"a chart\"},"
	    IMG "]},{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_03\","
	    "\"content\":\"name is taken\",\"is_error\":true}]}],\"tools\":[{"
	    "\"name\":\"write_file\",\"input_schema\":{\"type\":\"object\"}}]}",
	/* Claude Code: cached system blocks, adaptive thinking, an effort,
	 * meta-schemas, fields the rebuild drops */
	"{\"model\":\"claude-opus-4-6\",\"max_tokens\":32000,\"system\":[{"
	    "\"type\":\"text\",\"text\":\"You are Claude Code.\",\"cache_control"
	    "\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}},{\"type\":\"text\","
	    "\"text\":\"env\",\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":"
	    "\"5m\"}}],\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
	    "\"text\",\"text\":\"<system-reminder>x</system-reminder>\"},{"
	    "\"type\":\"text\",\"text\":\"hi\",\"cache_control\":{\"type\":"
	    "\"ephemeral\"}}]}],\"tools\":[{\"name\":\"Bash\",\"description\":"
	    "\"Run\",\"input_schema\":{\"$schema\":\"http://json-schema.org/"
	    "draft-07/schema#\",\"type\":\"object\",\"properties\":{\"command\":"
	    "{\"type\":\"string\"}},\"required\":[\"command\"],"
	    "\"additionalProperties\":false}}],\"tool_choice\":{\"type\":\"auto"
	    "\"},\"thinking\":{\"type\":\"adaptive\"},\"output_config\":{\"effort"
	    "\":\"max\"},\"metadata\":{\"user_id\":\"u\"},\"stream\":true,"
	    "\"temperature\":1,\"context_management\":{\"edits\":[]}}",
	/* adaptive thinking with no effort asked */
	"{\"model\":\"m\",\"max_tokens\":64000,\"messages\":[{\"role\":\"user\","
	    "\"content\":\"hi\"}],\"thinking\":{\"type\":\"adaptive\"},"
	    "\"stream\":true}",
	/* enabled thinking over every ceiling, a long history */
	"{\"model\":\"m\",\"max_tokens\":128000,\"messages\":[{\"role\":\"user\","
	    "\"content\":\"hi\"},{\"role\":\"assistant\",\"content\":\"hello\"},"
	    "{\"role\":\"user\",\"content\":\"again\"}],\"thinking\":{\"type\":"
	    "\"enabled\",\"budget_tokens\":100000},\"top_k\":5,\"top_p\":0.5,"
	    "\"stop_sequences\":[\"END\"],\"tool_choice\":{\"type\":\"tool\","
	    "\"name\":\"t\",\"disable_parallel_tool_use\":true},\"tools\":[{"
	    "\"type\":\"custom\",\"name\":\"t\",\"input_schema\":{},"
	    "\"cache_control\":{\"type\":\"ephemeral\"}}]}",
	/* the least: no max_tokens asked, an effort without thinking */
	"{\"messages\":[],\"output_config\":{\"effort\":\"low\"},\"thinking\":{"
	    "\"type\":\"disabled\"},\"stream\":false}",
	"{\"messages\":[{\"role\":\"assistant\",\"content\":[]}],\"thinking\":"
	    "{\"type\":\"enabled\",\"budget_tokens\":1024},\"max_tokens\":1}",
};

static enum violation
rebuilt_check(const char *body, enum rebuild_level level, uint64_t max_out,
    int count_tokens)
{
	struct rebuild_params	 rp;
	struct policy_model	 pm;
	enum violation		 v;
	char			*out = NULL, err[256];
	size_t			 outlen;

	memset(&rp, 0, sizeof(rp));
	rp.model = "claude-test";
	rp.level = level;
	rp.max_output_tokens = max_out;
	rp.count_tokens = count_tokens;
	ck_assert_msg(rebuild_model_request(body, strlen(body), &rp, &out,
	    &outlen, err, sizeof(err)) == 0, "rebuild refused: %s", err);
	memset(&pm, 0, sizeof(pm));
	pm.pm_model = "claude-test";
	pm.pm_max_tokens = max_out;
	pm.pm_level = POLICY_LEVEL_LOW + level;
	pm.pm_count_tokens = count_tokens;
	v = policy_model_check(out, outlen, &pm, why, sizeof(why));
	ck_assert_msg(v == VIOLATION_NONE, "level %d, %llu, count %d: %s "
	    "(%s) for %.500s", level, (unsigned long long)max_out,
	    count_tokens, violation_name(v), why, out);
	free(out);
	return v;
}

START_TEST(rebuilt_admitted)
{
	static const uint64_t	 outs[] = {
		MAX_OUTPUT_TOKENS_MIN, 4096, MAX_OUTPUT_TOKENS_DEFAULT,
		MAX_OUTPUT_TOKENS_MAX
	};
	size_t			 i, o;
	int			 l, c;

	for (i = 0; i < sizeof(worker_requests) / sizeof(worker_requests[0]);
	    i++)
		for (l = LEVEL_LOW; l <= LEVEL_XHIGH; l++)
			for (o = 0; o < sizeof(outs) / sizeof(outs[0]); o++)
				for (c = 0; c < 2; c++)
					rebuilt_check(worker_requests[i], l,
					    outs[o], c);
}
END_TEST

/* The rebuild at the limits it enforces: 2 000 messages of 256 blocks
 * with 8 images each, in a message and in a tool result, 128 tools. */
START_TEST(rebuilt_admitted_at_limits)
{
	struct buf	 b = { 0 };
	size_t		 i;

	bputs(&b, "{\"messages\":[");
	for (i = 0; i < MODEL_MESSAGES_MAX; i++) {
		if (i > 0)
			bputs(&b, ",");
		bputs(&b, i % 2 == 0 ? "{\"role\":\"user\",\"content\":[" :
		    "{\"role\":\"assistant\",\"content\":[");
		if (i == 0) {
			brep(&b, IMG, IMAGES_MAX);
			bputs(&b, ",{\"type\":\"tool_result\",\"tool_use_id\":"
			    "\"t\",\"content\":[");
			brep(&b, IMG, IMAGES_MAX);
			bputs(&b, "]},");
			brep(&b, TXT, MODEL_BLOCKS_MAX - IMAGES_MAX - 1);
		} else
			brep(&b, TXT, i < 4 ? MODEL_BLOCKS_MAX : 1);
		bputs(&b, "]}");
	}
	bputs(&b, "],\"system\":[");
	brep(&b, IMG, IMAGES_MAX);
	bputs(&b, "],\"tools\":[");
	brep(&b, "{\"name\":\"t\",\"input_schema\":{}}", MODEL_TOOLS_MAX);
	bputs(&b, "]}");
	rebuilt_check(b.b_s, LEVEL_LOW, MAX_OUTPUT_TOKENS_DEFAULT, 0);
	rebuilt_check(b.b_s, LEVEL_XHIGH, MAX_OUTPUT_TOKENS_DEFAULT, 1);
	bfree(&b);
}
END_TEST

/*
 * A research job's requests (research/agent.c builds its own), at every
 * thinking level, none included, and every output bound: the first, and
 * one far into the job with thinking, tool calls and their results, up to
 * the last step's, whose results of an answer of 256 tool calls are the
 * most blocks one message holds.
 */
static void
research_admitted(const struct agent *ag, enum agent_thinking t,
    uint64_t max_out)
{
	struct policy_model	 pm;
	enum violation		 v;
	char			*s;
	size_t			 len;

	s = agent_request_build(ag, &len);
	ck_assert_ptr_nonnull(s);
	memset(&pm, 0, sizeof(pm));
	pm.pm_model = "claude-test";
	pm.pm_max_tokens = max_out;
	pm.pm_level = (enum policy_level)t;	/* NONE, LOW, ... XHIGH */
	v = policy_model_check(s, len, &pm, why, sizeof(why));
	ck_assert_msg(v == VIOLATION_NONE, "thinking %d, %llu: %s (%s)", t,
	    (unsigned long long)max_out, violation_name(v), why);
	free(s);
}

START_TEST(research_requests_admitted)
{
	static const uint64_t	 outs[] = {
		MAX_OUTPUT_TOKENS_MIN, MAX_OUTPUT_TOKENS_DEFAULT,
		MAX_OUTPUT_TOKENS_MAX
	};
	struct agent_job	 job;
	struct agent_answer	 aa;
	struct agent		*ag;
	struct buf		 b = { 0 };
	const char		*report;
	char			 blk[160], err[128];
	size_t			 rlen, o, i, ncalls;
	unsigned		 step;
	int			 t;

	ck_assert_int_eq(POLICY_LEVEL_XHIGH, AGENT_THINK_XHIGH);
	for (t = AGENT_THINK_NONE; t <= AGENT_THINK_XHIGH; t++)
		for (o = 0; o < sizeof(outs) / sizeof(outs[0]); o++) {
			memset(&job, 0, sizeof(job));
			job.aj_model = "claude-test";
			job.aj_task = "Find out when the tower was built.";
			job.aj_author_name = "Ada";
			job.aj_thinking = t;
			job.aj_max_output_tokens = outs[o];
			job.aj_search = o % 2;
			job.aj_date = "2025-06-01";
			ck_assert_ptr_nonnull(ag = agent_new(&job));
			research_admitted(ag, t, outs[o]);
			for (step = 1; step < RESEARCH_STEPS_MAX; step++) {
				/* the last answer calls as many tools as an
				 * answer may hold blocks */
				ncalls = step + 1 == RESEARCH_STEPS_MAX ?
				    MODEL_BLOCKS_MAX : 2;
				bputs(&b, "{\"content\":[");
				if (ncalls < MODEL_BLOCKS_MAX)
					bputs(&b, "{\"type\":\"thinking\","
					    "\"thinking\":\"plan\",\"signature"
					    "\":\"c2ln\"},{\"type\":\"redacted_"
					    "thinking\",\"data\":\"cmVk\"},"
					    "{\"type\":\"text\",\"text\":\"Let "
					    "me look.\"},{\"type\":\"server_"
					    "tool_use\",\"id\":\"s\"},");
				for (i = 0; i < ncalls; i++) {
					snprintf(blk, sizeof(blk), "%s{\"type\""
					    ":\"tool_use\",\"id\":\"t%u_%zu\","
					    "\"name\":\"%s\",\"input\":{\"%s\":"
					    "\"x\"}}", i > 0 ? "," : "", step,
					    i, i % 2 ? "fetch_content" :
					    "web_search", i % 2 ? "url" :
					    "query");
					bputs(&b, blk);
				}
				bputs(&b, "],\"stop_reason\":\"tool_use\"}");
				ck_assert_int_eq(agent_answer_parse(b.b_s,
				    b.b_len, &aa, err, sizeof(err)), 0);
				bfree(&b);
				ck_assert_int_eq(agent_take_answer(ag, &aa,
				    &report, &rlen, err, sizeof(err)),
				    AGENT_NEXT_TOOLS);
				for (i = 0; i < aa.aa_ncalls; i++)
					if (!aa.aa_calls[i].ac_done &&
					    i % 3 == 0) {
						aa.aa_calls[i].ac_result =
						    strdup("Status: 200\n\n"
						    "page");
						aa.aa_calls[i].ac_done = 1;
					}
				ck_assert_int_eq(agent_results(ag, &aa), 0);
				agent_answer_free(&aa);
				research_admitted(ag, t, outs[o]);
			}
			agent_free(ag);
		}
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


/*
 * Precheck runs (egress/precheck.c): one route, a granted tool, one call
 * at a time within the run's budget; the body that goes is egress's.
 */
static const struct precheck_grant pg_run[] = {
	{ "docs", "search" }, { "docs", "fetch.page" }, { "git", "log" }
};

#define PC_CALL(tool, args) \
	"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\"," \
	"\"params\":{\"name\":\"" tool "\"" args "}}"

static enum violation
pre(const char *kind, const char *path, const char *query,
    const char *server, const char *turn, const char *body, uint64_t left,
    size_t inflight, struct precheck_call *pc)
{
	struct precheck_policy	 pp = { pg_run, 3, left, inflight };

	return precheck_admit(&pp, kind, path, query, server, turn, body,
	    strlen(body), pc, why, sizeof(why));
}

static enum violation
pre_body(const char *server, const char *body)
{
	struct precheck_call	 pc;
	enum violation		 v;

	v = pre("mcp", "", NULL, server, NULL, body, 1, 0, &pc);
	free(pc.pc_body);
	return v;
}

START_TEST(precheck_admitted)
{
	struct precheck_call	 pc;

	ck_assert_int_eq(pre("mcp", "", NULL, "docs", NULL, PC_CALL("search",
	    ",\"arguments\":{\"q\":\"x\",\"n\":[1,{}]}"), 1, 0, &pc),
	    VIOLATION_NONE);
	ck_assert_str_eq(pc.pc_body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"search\",\"arguments\":"
	    "{\"q\":\"x\",\"n\":[1,{}]}}}");
	ck_assert_uint_eq(pc.pc_body_len, strlen(pc.pc_body));
	ck_assert_ptr_eq(pc.pc_grant, &pg_run[0]);
	free(pc.pc_body);
	/* no arguments: an empty object; the peer's other fields dropped */
	ck_assert_int_eq(pre("mcp", "", NULL, "git", NULL, "{\"method\":"
	    "\"tools/call\",\"x\":1,\"params\":{\"name\":\"log\",\"_meta\":"
	    "{\"a\":1}}}", 1, 0, &pc), VIOLATION_NONE);
	ck_assert_str_eq(pc.pc_body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"log\",\"arguments\":{}}}");
	free(pc.pc_body);
	/* an escaped name is the name; the configuration's goes */
	ck_assert_int_eq(pre("mcp", "", NULL, "docs", NULL,
	    PC_CALL("fetch\\u002epage", ""), 1, 0, &pc), VIOLATION_NONE);
	ck_assert_ptr_eq(pc.pc_grant, &pg_run[1]);
	free(pc.pc_body);
}
END_TEST

START_TEST(precheck_route)
{
	struct precheck_call	 pc;
	const char		*ok = PC_CALL("search", "");

	ck_assert_int_eq(pre("model", "", NULL, "docs", NULL, ok, 1, 0, &pc),
	    VIOLATION_KIND);
	ck_assert_int_eq(pre("model", "/v1/messages", NULL, NULL, NULL, ok, 1,
	    0, &pc), VIOLATION_KIND);
	ck_assert_int_eq(pre("mcp", "/v1/messages", NULL, "docs", NULL, ok, 1,
	    0, &pc), VIOLATION_KIND);
	ck_assert_int_eq(pre("mcp", "", "beta=true", "docs", NULL, ok, 1, 0,
	    &pc), VIOLATION_KIND);
	ck_assert_int_eq(pre("mcp", "", NULL, "docs", "turn-1", ok, 1, 0,
	    &pc), VIOLATION_KIND);
	ck_assert_int_eq(pre("mcp", "", NULL, NULL, NULL, ok, 1, 0, &pc),
	    VIOLATION_MCP_SERVER);
	ck_assert_int_eq(pre("mcp", "", NULL, "other", NULL, ok, 1, 0, &pc),
	    VIOLATION_MCP_SERVER);
	ck_assert_int_eq(pre("mcp", "", NULL, "Docs", NULL, ok, 1, 0, &pc),
	    VIOLATION_MCP_SERVER);
	ck_assert_ptr_null(pc.pc_body);
}
END_TEST

START_TEST(precheck_budget_and_in_flight)
{
	struct precheck_call	 pc;
	const char		*ok = PC_CALL("search", "");
	uint64_t		 left;

	/* a run of the most calls: each admitted, then none */
	for (left = PRECHECK_CALLS_MAX; left > 0; left--) {
		ck_assert_int_eq(pre("mcp", "", NULL, "docs", NULL, ok, left,
		    0, &pc), VIOLATION_NONE);
		free(pc.pc_body);
	}
	ck_assert_int_eq(pre("mcp", "", NULL, "docs", NULL, ok, 0, 0, &pc),
	    VIOLATION_BUDGET);
	/* one in flight at most */
	ck_assert_int_eq(pre("mcp", "", NULL, "docs", NULL, ok, 5, 1, &pc),
	    VIOLATION_IN_FLIGHT);
	ck_assert_ptr_null(pc.pc_body);
}
END_TEST

START_TEST(precheck_bodies)
{
	char	*big;
	size_t	 head;

	ck_assert_int_eq(pre_body("docs", PC_CALL("log", "")),
	    VIOLATION_MCP_TOOL);	/* git's, not docs' */
	ck_assert_int_eq(pre_body("git", PC_CALL("search", "")),
	    VIOLATION_MCP_TOOL);
	ck_assert_int_eq(pre_body("docs", PC_CALL("searc", "")),
	    VIOLATION_MCP_TOOL);
	ck_assert_int_eq(pre_body("docs", "{\"method\":\"tools/call\"}"),
	    VIOLATION_MCP_TOOL);
	ck_assert_int_eq(pre_body("docs", "{\"method\":\"tools/call\","
	    "\"params\":[\"search\"]}"), VIOLATION_MCP_TOOL);
	ck_assert_int_eq(pre_body("docs", "{\"method\":\"tools/call\","
	    "\"params\":{\"name\":1}}"), VIOLATION_MCP_TOOL);
	ck_assert_int_eq(pre_body("docs", "{\"method\":\"tools/list\","
	    "\"params\":{\"name\":\"search\"}}"), VIOLATION_MCP_METHOD);
	ck_assert_int_eq(pre_body("docs", "{\"params\":{\"name\":\"search\"}}"),
	    VIOLATION_MCP_METHOD);
	ck_assert_int_eq(pre_body("docs", PC_CALL("search",
	    ",\"arguments\":[]")), VIOLATION_FIELD);
	ck_assert_int_eq(pre_body("docs", PC_CALL("search",
	    ",\"arguments\":null")), VIOLATION_FIELD);
	ck_assert_int_eq(pre_body("docs", PC_CALL("search",
	    ",\"arguments\":\"{}\"")), VIOLATION_FIELD);
	ck_assert_int_eq(pre_body("docs", "[" PC_CALL("search", "") "]"),
	    VIOLATION_BODY);
	ck_assert_int_eq(pre_body("docs", PC_CALL("search", "") " {}"),
	    VIOLATION_BODY);
	ck_assert_int_eq(pre_body("docs", "{\"method\":\"tools/call\","),
	    VIOLATION_BODY);
	ck_assert_int_eq(pre_body("docs", ""), VIOLATION_BODY);
	ck_assert_int_eq(pre_body("docs", "{\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\",\"name\":\"x\"}}"),
	    VIOLATION_BODY);
	ck_assert_int_eq(pre_body("docs", "{\"method\":\"tools/call\","
	    "\"method\":\"tools/call\",\"params\":{\"name\":\"search\"}}"),
	    VIOLATION_BODY);
	ck_assert_int_eq(pre_body("docs", PC_CALL("search",
	    ",\"arguments\":{},\"arguments\":{}")), VIOLATION_BODY);
	ck_assert_int_eq(pre_body("docs", "{\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\",\"arguments\":{\"a\":\"\xff\"}}}"),
	    VIOLATION_BODY);

	/* PRECHECK_REQUEST_MAX bytes, then one more */
	ck_assert_ptr_nonnull(big = malloc(PRECHECK_REQUEST_MAX + 2));
	head = (size_t)sprintf(big, "%s", PC_CALL("search",
	    ",\"arguments\":{\"q\":\""));
	memset(big + head, 'a', PRECHECK_REQUEST_MAX - head - 4);
	strcpy(big + PRECHECK_REQUEST_MAX - 4, "\"}}}");
	ck_assert_uint_eq(strlen(big), PRECHECK_REQUEST_MAX);
	ck_assert_int_eq(pre_body("docs", big), VIOLATION_NONE);
	strcpy(big + PRECHECK_REQUEST_MAX - 4, "\"}}} ");
	ck_assert_int_eq(pre_body("docs", big), VIOLATION_BODY);
	free(big);
}
END_TEST

START_TEST(precheck_grant_entries)
{
	char	 server[MCP_SERVER_NAME_MAX + 1];
	char	 tool[PRECHECK_TOOL_NAME_MAX + 1];
	char	 e[400];

	ck_assert_int_eq(precheck_grant_split("my-srv_1/fetch.page-2_x",
	    server, tool), 0);
	ck_assert_str_eq(server, "my-srv_1");
	ck_assert_str_eq(tool, "fetch.page-2_x");
	ck_assert_int_eq(precheck_grant_split("docs", server, tool), -1);
	ck_assert_int_eq(precheck_grant_split("/search", server, tool), -1);
	ck_assert_int_eq(precheck_grant_split("docs/", server, tool), -1);
	ck_assert_int_eq(precheck_grant_split("do.cs/search", server, tool),
	    -1);
	ck_assert_int_eq(precheck_grant_split("docs/a/b", server, tool), -1);
	ck_assert_int_eq(precheck_grant_split("docs/se arch", server, tool),
	    -1);
	ck_assert_int_eq(precheck_grant_split("docs/s\xc3\xa9", server, tool),
	    -1);
	/* each name at its length and one past it */
	memset(e, 's', MCP_SERVER_NAME_MAX);
	strcpy(e + MCP_SERVER_NAME_MAX, "/t");
	ck_assert_int_eq(precheck_grant_split(e, server, tool), 0);
	ck_assert_uint_eq(strlen(server), MCP_SERVER_NAME_MAX);
	memset(e, 's', MCP_SERVER_NAME_MAX + 1);
	strcpy(e + MCP_SERVER_NAME_MAX + 1, "/t");
	ck_assert_int_eq(precheck_grant_split(e, server, tool), -1);
	strcpy(e, "s/");
	memset(e + 2, 't', PRECHECK_TOOL_NAME_MAX);
	e[2 + PRECHECK_TOOL_NAME_MAX] = '\0';
	ck_assert_int_eq(precheck_grant_split(e, server, tool), 0);
	ck_assert_uint_eq(strlen(tool), PRECHECK_TOOL_NAME_MAX);
	strcat(e, "t");
	ck_assert_int_eq(precheck_grant_split(e, server, tool), -1);
}
END_TEST

/* egress re-checks a grant against the profile (egress/precall.c) */
START_TEST(precheck_grant_profile)
{
	static char		*docs_tools[] = { "search", "fetch.page" };
	static char		*git_tools[] = { "log" };
	struct egress_profile	 epr;
	struct egress_peer	 ep;
	const char		*ok[] = { "docs/search", "git/log",
				    "docs/search" };
	const char		*bad[][1] = { { "docs/log" }, { "other/x" },
				    { "git/search" }, { "docs" },
				    { "docs/fetch_page" } };

	memset(&epr, 0, sizeof(epr));
	epr.epr_mcp[0].em_name = "docs";
	epr.epr_mcp[0].em_tools = docs_tools;
	epr.epr_mcp[0].em_ntools = 2;
	epr.epr_mcp[1].em_name = "git";
	epr.epr_mcp[1].em_tools = git_tools;
	epr.epr_mcp[1].em_ntools = 1;
	epr.epr_nmcp = 2;
	memset(&ep, 0, sizeof(ep));
	ep.ep_profile = &epr;

	ck_assert_int_eq(egress_precheck_grants(&ep, ok, 3), 0);
	ck_assert_uint_eq(ep.ep_ngrants, 2);	/* once each */
	ck_assert_ptr_eq(ep.ep_grants[0].pg_server, epr.epr_mcp[0].em_name);
	ck_assert_ptr_eq(ep.ep_grants[1].pg_tool, git_tools[0]);
	free(ep.ep_grants);
	ep.ep_grants = NULL;
	ep.ep_ngrants = 0;
	ck_assert_int_eq(egress_precheck_grants(&ep, ok, 0), 0);
	ck_assert_uint_eq(ep.ep_ngrants, 0);
	free(ep.ep_grants);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ep.ep_grants = NULL;
		ep.ep_ngrants = 0;
		ck_assert_int_eq(egress_precheck_grants(&ep, bad[i], 1), -1);
		ck_assert_ptr_null(ep.ep_grants);
	}
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
	tcase_add_test(tc, model_thinking_budget);
	tcase_add_test(tc, model_effort);
	tcase_add_test(tc, model_adaptive_effort);
	tcase_add_test(tc, model_count_tokens);
	tcase_add_test(tc, model_fields_and_tools);
	suite_add_tcase(s, tc);

	tc = tcase_create("content");
	tcase_add_test(tc, model_messages);
	tcase_add_test(tc, model_system_messages);
	tcase_add_test(tc, model_blocks_written);
	tcase_add_test(tc, model_blocks_refused);
	tcase_add_test(tc, model_sources);
	tcase_add_test(tc, model_block_keys);
	tcase_add_test(tc, model_block_counts);
	suite_add_tcase(s, tc);

	tc = tcase_create("json");
	tcase_add_test(tc, why_has_no_control_character);
	tcase_add_test(tc, strict_json);
	tcase_add_test(tc, strict_json_depth_and_nul);
	tcase_add_test(tc, strict_json_node_cap);
	tcase_add_test(tc, node_cap_counts_once);
	suite_add_tcase(s, tc);

	tc = tcase_create("legitimate");
	tcase_add_test(tc, rebuilt_admitted);
	tcase_add_test(tc, rebuilt_admitted_at_limits);
	tcase_add_test(tc, research_requests_admitted);
	suite_add_tcase(s, tc);

	tc = tcase_create("mcp");
	tcase_add_test(tc, mcp_methods);
	tcase_add_test(tc, mcp_tool_calls);
	tcase_add_test(tc, levels);
	suite_add_tcase(s, tc);

	tc = tcase_create("precheck");
	tcase_add_test(tc, precheck_admitted);
	tcase_add_test(tc, precheck_route);
	tcase_add_test(tc, precheck_budget_and_in_flight);
	tcase_add_test(tc, precheck_bodies);
	tcase_add_test(tc, precheck_grant_entries);
	tcase_add_test(tc, precheck_grant_profile);
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
