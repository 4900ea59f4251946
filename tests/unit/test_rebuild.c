/*
 * broker/rebuild.c against PROTOCOL.md 5 (model requests) and 3.3 (MCP):
 * every rule, every number at the limit and one past it, every refusal.
 * Outputs are compared as parsed JSON with cJSON_Compare, and each model
 * request is admitted by egress's own reading (egress/policy.c) under the
 * same model, level, output bound and route.
 */
#include <check.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "limits.h"
#include "policy.h"
#include "rebuild.h"
#include "validate.h"

#define MODEL		"claude-test-model"
#define MSGS		"\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"
#define MSGS_OUT	MSGS
#define EMOJI		"\xf0\x9f\x98\x80"	/* U+1F600: 2 chars */
/* The base64 of one zero byte, and of three. */
#define IMG1		"AA=="
#define IMG3		"AAAA"

static char	 err[512];

/* A growing string for bodies too big to write as literals. */
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

static void	bprintf(struct buf *, const char *, ...)
		    __attribute__((__format__(__printf__, 2, 3)));

static void
bprintf(struct buf *b, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;
	int	 n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	bput(b, s, (size_t)n);
	free(s);
}

/* n copies of unit, separated by sep. */
static void
brep(struct buf *b, const char *unit, size_t n, const char *sep)
{
	size_t	 i;

	for (i = 0; i < n; i++) {
		if (i > 0)
			bputs(b, sep);
		bputs(b, unit);
	}
}

/* Base64 text of n zero bytes, pads and all. */
static void
b64_zeros(struct buf *b, size_t n)
{
	static const char	*tail[] = { "", "AA==", "AAA=" };
	char			*s;
	size_t			 groups = n / 3, k;

	s = malloc(groups * 4 + 1);
	ck_assert_ptr_nonnull(s);
	for (k = 0; k < groups * 4; k++)
		s[k] = 'A';
	bput(b, s, groups * 4);
	bputs(b, tail[n % 3]);
	free(s);
}

/* {"type":"image",...} of n zero bytes. */
static void
b_image(struct buf *b, size_t n)
{
	bputs(b, "{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"");
	b64_zeros(b, n);
	bputs(b, "\"}}");
}

static struct rebuild_params
params(enum rebuild_level level, uint64_t max_output, int count_tokens)
{
	struct rebuild_params	 p;

	memset(&p, 0, sizeof(p));
	p.model = MODEL;
	p.level = level;
	p.max_output_tokens = max_output;
	p.count_tokens = count_tokens;
	return p;
}

static const struct rebuild_params	P_HIGH = {
	MODEL, LEVEL_HIGH, 0, 0, 0, NULL
};
static const struct rebuild_params	P_COUNT = {
	MODEL, LEVEL_HIGH, 0, 1, 0, NULL
};

/* What the rebuild writes, egress admits. */
static void
admitted(const char *out, size_t len, const struct rebuild_params *p)
{
	struct policy_model	 pm;
	enum violation		 v;
	char			 why[300];

	memset(&pm, 0, sizeof(pm));
	pm.pm_model = p->model;
	pm.pm_max_tokens = p->max_output_tokens == 0 ?
	    MAX_OUTPUT_TOKENS_DEFAULT : p->max_output_tokens;
	pm.pm_level = POLICY_LEVEL_LOW + (int)p->level;
	pm.pm_count_tokens = p->count_tokens;
	v = policy_model_check(out, len, &pm, why, sizeof(why));
	ck_assert_msg(v == VIOLATION_NONE, "egress refuses the rebuilt body "
	    "(%s: %s): %.300s", violation_name(v), why, out);
}

/*
 * Every rebuild of a body up to 64 KiB runs twice, first with its trees
 * handed back (rebuild_params.keep): the same answer, and the two trees
 * exactly when it rebuilt.  The larger ones, at the bounds, run once, as
 * the suite's time is theirs.
 */
static int
run_len(const char *body, size_t len, const struct rebuild_params *p,
    char **out)
{
	struct rebuild_params	 q = *p;
	struct rebuild_trees	 rt = { NULL, NULL };
	char			*kept = NULL;
	size_t			 outlen = 0, keptlen = 0;
	int			 r, rk = 0;

	if (len <= 65536 && !p->free_body && p->keep == NULL) {
		q.keep = &rt;
		rk = rebuild_model_request(body, len, &q, &kept, &keptlen, err,
		    sizeof(err));
		if (rk == 0) {
			ck_assert(cJSON_IsObject(rt.rt_in));
			ck_assert(cJSON_IsObject(rt.rt_out));
			rebuild_trees_free(&rt);
			ck_assert_ptr_null(rt.rt_in);
			ck_assert_ptr_null(rt.rt_out);
		} else
			ck_assert(rt.rt_in == NULL && rt.rt_out == NULL);
	}
	memset(err, 'x', sizeof(err));
	r = rebuild_model_request(body, len, p, out, &outlen, err,
	    sizeof(err));
	if (len <= 65536 && !p->free_body && p->keep == NULL) {
		ck_assert_int_eq(rk, r);
		if (r == 0) {
			ck_assert_uint_eq(keptlen, outlen);
			ck_assert_str_eq(kept, *out);
		}
		free(kept);
	}
	if (r == 0) {
		ck_assert_ptr_nonnull(*out);
		ck_assert_uint_eq(strlen(*out), outlen);
		admitted(*out, outlen, p);
	} else {
		ck_assert_int_eq(r, -1);
		ck_assert_ptr_null(*out);
		ck_assert_uint_eq(outlen, 0);
		ck_assert_msg(memchr(err, '\0', sizeof(err)) != NULL &&
		    err[0] != '\0', "no message");
		ck_assert_int_eq(utf8_text_check(err, strlen(err), SIZE_MAX),
		    0);
	}
	return r;
}

static int
run(const char *body, const struct rebuild_params *p, char **out)
{
	return run_len(body, strlen(body), p, out);
}

static void
same_json(const char *got, const char *want)
{
	cJSON	*g, *w;

	w = cJSON_Parse(want);
	ck_assert_msg(w != NULL, "bad expected literal %s", want);
	g = cJSON_Parse(got);
	ck_assert_msg(g != NULL, "output does not parse: %.300s", got);
	ck_assert_msg(cJSON_Compare(g, w, 1), "got  %.2000s\nwant %.2000s",
	    got, want);
	cJSON_Delete(g);
	cJSON_Delete(w);
}

/* Rebuilt output of body is want; and rebuilding it again changes nothing. */
static void
expect_p(const char *body, const struct rebuild_params *p, const char *want)
{
	char	*out = NULL, *again = NULL;

	ck_assert_msg(run(body, p, &out) == 0, "refused: %s\nbody %.300s", err,
	    body);
	same_json(out, want);
	ck_assert_msg(run(out, p, &again) == 0, "output refused: %s", err);
	ck_assert_str_eq(again, out);
	free(again);
	free(out);
}

static void
expect(const char *body, const char *want)
{
	expect_p(body, &P_HIGH, want);
}

/* body is refused, and the message contains sub when sub is given. */
static void
refuse_p(const char *body, size_t len, const struct rebuild_params *p,
    const char *sub)
{
	char	*out = NULL;

	ck_assert_msg(run_len(body, len, p, &out) == -1, "accepted: %.300s\n"
	    "out %.300s", body, out);
	if (sub != NULL)
		ck_assert_msg(strstr(err, sub) != NULL, "message \"%s\" lacks "
		    "\"%s\"", err, sub);
}

static void
refuse(const char *body, const char *sub)
{
	refuse_p(body, strlen(body), &P_HIGH, sub);
}

/* The rebuilt output of body, parsed; ck fails on refusal. */
static cJSON *
rebuilt(const char *body, const struct rebuild_params *p)
{
	char	*out = NULL;
	cJSON	*o;

	ck_assert_msg(run(body, p, &out) == 0, "refused: %s", err);
	o = cJSON_Parse(out);
	ck_assert_ptr_nonnull(o);
	free(out);
	return o;
}

static cJSON *
field(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* A request with one user message whose content is the list blocks. */
static char *
with_blocks(const char *blocks)
{
	struct buf	 b = { 0 };

	bprintf(&b, "{\"messages\":[{\"role\":\"user\",\"content\":[%s]}]}",
	    blocks);
	return b.b_s;
}

static void
expect_blocks(const char *blocks, const char *want_blocks)
{
	char	*body, *want;

	body = with_blocks(blocks);
	ck_assert_int_ge(asprintf(&want, "{\"model\":\"" MODEL "\","
	    "\"messages\":[{\"role\":\"user\",\"content\":[%s]}],"
	    "\"max_tokens\":16384}", want_blocks), 0);
	expect(body, want);
	free(want);
	free(body);
}

static void
refuse_blocks(const char *blocks, const char *sub)
{
	char	*body;

	body = with_blocks(blocks);
	refuse(body, sub);
	free(body);
}

/*
 * The body as a whole
 */

START_TEST(minimal)
{
	expect("{" MSGS "}", "{\"model\":\"" MODEL "\"," MSGS_OUT
	    ",\"max_tokens\":16384}");
	/* The worker's model never goes out. */
	expect("{\"model\":\"claude-opus-evil\"," MSGS "}",
	    "{\"model\":\"" MODEL "\"," MSGS_OUT ",\"max_tokens\":16384}");
	expect(" \r\n\t{" MSGS "} \n", "{\"model\":\"" MODEL "\"," MSGS_OUT
	    ",\"max_tokens\":16384}");
}
END_TEST

/* A body the rebuild frees once parsed: accepted, refused, not JSON, or
 * with parameters refused before it is read (the sanitizer build sees a
 * use after free or a double free). */
START_TEST(body_freed_once_parsed)
{
	static const char *const bodies[] = {
		"{" MSGS "}", "[]", "{\"messages\":", "",
	};
	struct rebuild_params	 p = P_HIGH;
	char			 why[256], *b, *out;
	size_t			 i, outlen;
	int			 rc;

	p.free_body = 1;
	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		ck_assert_ptr_nonnull(b = strdup(bodies[i]));
		rc = rebuild_model_request(b, strlen(bodies[i]), &p, &out,
		    &outlen, why, sizeof(why));
		ck_assert_int_eq(rc, i == 0 ? 0 : -1);
		if (i == 0)
			ck_assert_str_eq(out, "{\"model\":\"" MODEL "\","
			    MSGS_OUT ",\"max_tokens\":16384}");
		free(out);
	}
	p.model = NULL;
	ck_assert_ptr_nonnull(b = strdup("{" MSGS "}"));
	ck_assert_int_eq(rebuild_model_request(b, strlen(b), &p, &out,
	    &outlen, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "Invalid rebuild parameters"));
}
END_TEST

START_TEST(not_object)
{
	refuse("[]", "JSON object");
	refuse("[{" MSGS "}]", "JSON object");
	refuse("\"x\"", "JSON object");
	refuse("1", "JSON object");
	refuse("null", "JSON object");
	refuse("true", "JSON object");
	refuse_p("", 0, &P_HIGH, "empty");
}
END_TEST

START_TEST(invalid_json)
{
	refuse("{", "JSON");
	refuse("{" MSGS, "JSON");
	refuse("{" MSGS "}}", "trailing");
	/* A byte that is no JSON token is refused by the scan, before cJSON. */
	refuse("{" MSGS "} x", "an unexpected byte at byte 46");
	refuse("\xef\xbb\xbf{" MSGS "}", "JSON");
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}],"
	    "\"top_k\":01}", "malformed number");
	refuse("{" MSGS "}{}", "trailing");
	refuse("{" MSGS ",}", "JSON");
	refuse("{'messages':[]}", "JSON");
	refuse("{" MSGS ",\"x\":\"\\q\"}", "JSON");
	/* Control characters: raw inside strings, or outside white space. */
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"a\tb\"}]}",
	    "control");
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"a\nb\"}]}",
	    "control");
	refuse("{\x01" MSGS "}", "control");
	refuse("{" MSGS "\x0b}", "control");
	/* Escaped, they are text. */
	expect("{\"messages\":[{\"role\":\"user\",\"content\":\"a\\tb\\n\"}]}",
	    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"a\\tb\\n\"}],\"max_tokens\":16384}");
}
END_TEST

START_TEST(duplicate_keys)
{
	refuse("{" MSGS "," MSGS "}", "duplicate");
	refuse("{\"model\":\"a\",\"model\":\"b\"," MSGS "}", "duplicate");
	refuse("{\"messages\":[{\"role\":\"user\",\"role\":\"assistant\","
	    "\"content\":\"x\"}]}", "duplicate");
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\","
	    "\"content\":[]}]}", "duplicate");
	/* Escapes that spell the same key. */
	refuse("{\"stream\":true,\"str\\u0065am\":false," MSGS "}",
	    "duplicate");
	/* Anywhere, even in a field that is dropped or passed through. */
	refuse("{" MSGS ",\"metadata\":{\"a\":1,\"a\":2}}", "duplicate");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\","
	    "\"input\":{\"x\":{\"k\":1,\"k\":1}}}", "duplicate");
	/* Many keys, one repeated far apart. */
	{
		struct buf	 b = { 0 };
		size_t		 i;

		bputs(&b, "{" MSGS ",\"metadata\":{");
		for (i = 0; i < 5000; i++)
			bprintf(&b, "\"k%zu\":1,", i);
		bputs(&b, "\"k17\":2}}");
		refuse(b.b_s, "duplicate");
		b.b_s[b.b_len - 6] = 'x';	/* "kx7": distinct again */
		expect(b.b_s, "{\"model\":\"" MODEL "\"," MSGS_OUT
		    ",\"max_tokens\":16384}");
		free(b.b_s);
	}
	/* Case matters: these are two keys, and "Stream" is not "stream". */
	expect("{\"Stream\":true,\"stream\":false," MSGS "}",
	    "{\"model\":\"" MODEL "\"," MSGS_OUT ",\"max_tokens\":16384}");
}
END_TEST

START_TEST(nul_and_utf8)
{
	static const char	 nul_raw[] =
	    "{\"messages\":[{\"role\":\"user\",\"content\":\"a\0b\"}]}";

	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"a\\u0000b\"}]}",
	    "\\u0000");
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
	    "\"metadata\":{\"user_id\":\"\\u0000\"}}", "\\u0000");
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
	    "\"k\\u0000\":1}", "\\u0000");
	refuse_p(nul_raw, sizeof(nul_raw) - 1, &P_HIGH, "NUL");
	/* An escaped backslash followed by "u0000" is text. */
	expect("{\"messages\":[{\"role\":\"user\",\"content\":"
	    "\"a\\\\u0000\"}]}",
	    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"a\\\\u0000\"}],\"max_tokens\":16384}");
	/* Other escapes decode to valid UTF-8. */
	expect("{\"messages\":[{\"role\":\"user\",\"content\":"
	    "\"\\u00e9\\ud83d\\ude00\"}]}",
	    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"\xc3\xa9" EMOJI "\"}],\"max_tokens\":16384}");
	/* Lone surrogates do not. */
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"\\ud83d\"}]}",
	    NULL);
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"\\ude00\"}]}",
	    NULL);
	/* Invalid UTF-8, in a kept field and in a dropped one. */
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\"}]}",
	    "UTF-8");
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"\xc0\x80\"}]}",
	    "UTF-8");
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"\xed\xa0\x80\""
	    "}]}", "UTF-8");
	refuse("{" MSGS ",\"metadata\":\"\xe2\x82\"}", "UTF-8");
	refuse("{" MSGS ",\"\xf8\x88\x80\x80\x80\":1}", "UTF-8");
}
END_TEST

START_TEST(number_range)
{
	/* cJSON would print these as null. */
	refuse("{" MSGS ",\"temperature\":1e999}", "range");
	refuse("{" MSGS ",\"metadata\":-1e400}", "range");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\","
	    "\"input\":{\"x\":[1e309]}}", "range");
	/* Past cJSON's nesting limit. */
	{
		struct buf	 b = { 0 };

		bputs(&b, "{" MSGS ",\"metadata\":");
		brep(&b, "[", 1001, "");
		brep(&b, "]", 1001, "");
		bputs(&b, "}");
		refuse(b.b_s, "JSON");
		free(b.b_s);
	}
	/* Passed-through numbers read back as the same double. */
	{
		char	*out = NULL, *body;

		body = with_blocks("{\"type\":\"tool_use\",\"id\":\"t\","
		    "\"name\":\"n\",\"input\":{\"a\":9007199254740993,"
		    "\"b\":12345678901234567,\"c\":0.1,\"d\":-0,\"e\":1e21,"
		    "\"f\":5e-324,\"g\":1.7976931348623157e308,"
		    "\"h\":2.2250738585072014e-308,\"i\":100,\"j\":-2.5e-3}}");
		ck_assert_int_eq(run(body, &P_HIGH, &out), 0);
		ck_assert_ptr_nonnull(strstr(out, "\"input\":{"
		    "\"a\":9007199254740992,\"b\":12345678901234568,"
		    "\"c\":0.1,\"d\":-0,\"e\":1e+21,"
		    "\"f\":4.94065645841247e-324,"
		    "\"g\":1.7976931348623157e+308,"
		    "\"h\":2.2250738585072014e-308,\"i\":100,"
		    "\"j\":-0.0025}"));
		free(out);
		free(body);
	}
	/* The largest double is a number. */
	expect_blocks("{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\","
	    "\"input\":{\"x\":1.7976931348623157e308,\"y\":-0.5,\"z\":12}}",
	    "{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"n\","
	    "\"input\":{\"x\":1.7976931348623157e308,\"y\":-0.5,\"z\":12}}");
}
END_TEST

START_TEST(dropped_fields)
{
	expect("{" MSGS ",\"metadata\":{\"user_id\":\"u\"},"
	    "\"service_tier\":\"priority\",\"mcp_servers\":[{\"type\":\"url\","
	    "\"url\":\"https://evil.example/\",\"name\":\"e\"}],"
	    "\"container\":\"c\",\"context_management\":{\"edits\":[]},"
	    "\"betas\":[\"x\"],\"anthropic_version\":\"2023-06-01\","
	    "\"extra_headers\":{\"authorization\":\"x\"},"
	    "\"inference_geo\":\"us\","
	    "\"output_format\":{\"type\":\"json_schema\"}}",
	    "{\"model\":\"" MODEL "\"," MSGS_OUT ",\"max_tokens\":16384}");
}
END_TEST

START_TEST(bad_params)
{
	struct rebuild_params	 p;
	char			*out = NULL;

	p = params(LEVEL_HIGH, MAX_OUTPUT_TOKENS_MIN - 1, 0);
	refuse_p("{" MSGS "}", strlen("{" MSGS "}"), &p, NULL);
	p = params(LEVEL_HIGH, MAX_OUTPUT_TOKENS_MAX + 1, 0);
	refuse_p("{" MSGS "}", strlen("{" MSGS "}"), &p, NULL);
	p = params((enum rebuild_level)4, 0, 0);
	refuse_p("{" MSGS "}", strlen("{" MSGS "}"), &p, NULL);
	p = params(LEVEL_HIGH, 0, 0);
	p.model = NULL;
	refuse_p("{" MSGS "}", strlen("{" MSGS "}"), &p, NULL);
	/* No error buffer at all. */
	ck_assert_int_eq(rebuild_model_request("[]", 2, &P_HIGH, &out,
	    &(size_t){ 0 }, NULL, 0), -1);
	ck_assert_ptr_null(out);
}
END_TEST

/*
 * Messages
 */

START_TEST(roles)
{
	expect("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},"
	    "{\"role\":\"assistant\",\"content\":\"b\",\"name\":\"x\","
	    "\"id\":\"y\"}]}",
	    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"a\"},{\"role\":\"assistant\",\"content\":\"b\"}],"
	    "\"max_tokens\":16384}");
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":\"a\"},"
	    "{\"role\":\"assistant\",\"content\":\"b\"},"
	    "{\"role\":\"user\",\"content\":\"c\"},"
	    "{\"role\":\"developer\",\"content\":\"d\"}]}", NULL);
	ck_assert_str_eq(err, "messages.3: Unexpected role \"developer\": the "
	    "input message role must be \"user\" or \"assistant\"");
	refuse("{\"messages\":[{\"role\":\"tool\",\"content\":\"d\"}]}", NULL);
	ck_assert_str_eq(err, "messages.0: Unexpected role \"tool\": the "
	    "input message role must be \"user\" or \"assistant\"");
	refuse("{\"messages\":[{\"role\":\"User\",\"content\":\"d\"}]}",
	    "Unexpected role \"User\"");
	refuse("{\"messages\":[{\"role\":\"\",\"content\":\"d\"}]}",
	    "Unexpected role \"\"");
	refuse("{\"messages\":[{\"content\":\"d\"}]}", "messages.0.role: "
	    "Field required");
	refuse("{\"messages\":[{\"role\":1,\"content\":\"d\"}]}",
	    "messages.0.role");
	refuse("{\"messages\":[{\"role\":\"user\"}]}",
	    "messages.0.content: Field required");
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":null}]}",
	    "messages.0.content");
	refuse("{\"messages\":[{\"role\":\"user\",\"content\":{}}]}",
	    "messages.0.content");
	refuse("{\"messages\":[\"hi\"]}", "messages.0");
	refuse("{\"messages\":[null]}", "messages.0");
}
END_TEST

/*
 * A system message amid the conversation, as Claude Code 2.1.284 sends
 * the turn's environment: rebuilt with text only, clear_at kept, its
 * effort capped at the level; other keys dropped.
 */
START_TEST(system_messages)
{
	struct rebuild_params	 low = params(LEVEL_LOW, 0, 0);
	struct rebuild_params	 count = params(LEVEL_LOW, 0, 1);
	struct buf		 b = { 0 };
	char			 tag[SYSTEM_CLEAR_AT_MAX + 2];
	static const char *const tools[] = { "tool_addition",
	    "tool_removal", "tool_definition", "image", "tool_use",
	    "thinking" };
	size_t			 i;

	expect_p("{\"messages\":[{\"role\":\"user\",\"content\":\"roll\"},"
	    "{\"role\":\"system\",\"content\":[{\"type\":\"text\","
	    "\"text\":\"# Environment\\nToday's date is 2026-10-03.\","
	    "\"cache_control\":{\"type\":\"ephemeral\"}}],"
	    "\"output_config\":{\"effort\":\"max\"},"
	    "\"clear_at\":\"next_user_message\",\"smuggled\":\"dropped\"},"
	    "{\"role\":\"system\",\"content\":\"a reminder\"}]}", &low,
	    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"roll\"},{\"role\":\"system\",\"content\":"
	    "[{\"type\":\"text\",\"text\":\"# Environment\\nToday's date is "
	    "2026-10-03.\",\"cache_control\":{\"type\":\"ephemeral\"}}],"
	    "\"clear_at\":\"next_user_message\",\"output_config\":"
	    "{\"effort\":\"low\"}},{\"role\":\"system\",\"content\":"
	    "\"a reminder\"}],\"max_tokens\":16384}");
	/* under the ceiling it stays; at high, max is lowered to high */
	expect("{\"messages\":[{\"role\":\"system\",\"content\":\"e\","
	    "\"output_config\":{\"effort\":\"low\",\"x\":1}}]}",
	    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"system\","
	    "\"content\":\"e\",\"output_config\":{\"effort\":\"low\"}}],"
	    "\"max_tokens\":16384}");
	expect("{\"messages\":[{\"role\":\"system\",\"content\":\"e\","
	    "\"output_config\":{\"effort\":\"max\"}}]}",
	    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"system\","
	    "\"content\":\"e\",\"output_config\":{\"effort\":\"high\"}}],"
	    "\"max_tokens\":16384}");
	/* no effort asked, none set; count_tokens keeps the capped one */
	expect("{\"messages\":[{\"role\":\"system\",\"content\":\"e\","
	    "\"output_config\":{}}]}",
	    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"system\","
	    "\"content\":\"e\"}],\"max_tokens\":16384}");
	expect_p("{\"messages\":[{\"role\":\"system\",\"content\":\"e\","
	    "\"output_config\":{\"effort\":\"xhigh\"}}]}", &count,
	    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"system\","
	    "\"content\":\"e\",\"output_config\":{\"effort\":\"low\"}}]}");

	/* a tool change, or any block but text: the API's words */
	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
		free(b.b_s);
		memset(&b, 0, sizeof(b));
		bprintf(&b, "{\"messages\":[{\"role\":\"user\",\"content\":"
		    "\"hi\"},{\"role\":\"system\",\"content\":[{\"type\":"
		    "\"%s\",\"tool\":{\"name\":\"late_tool\"}}]}]}", tools[i]);
		refuse(b.b_s, NULL);
		free(b.b_s);
		memset(&b, 0, sizeof(b));
		bprintf(&b, "messages.1.content.0: Input tag '%s' found using "
		    "'type' does not match any of the expected tags: 'text'",
		    tools[i]);
		ck_assert_str_eq(err, b.b_s);
	}
	free(b.b_s);
	refuse("{\"messages\":[{\"role\":\"system\",\"content\":[{\"type\":"
	    "\"text\",\"text\":\"a\"},{\"type\":\"text\"}]}]}",
	    "messages.0.content.1.text: Field required");
	refuse("{\"messages\":[{\"role\":\"system\"}]}",
	    "messages.0.content: Field required");
	refuse("{\"messages\":[{\"role\":\"system\",\"content\":\"e\","
	    "\"output_config\":\"max\"}]}",
	    "messages.0.output_config: Input should be a valid dictionary");
	refuse("{\"messages\":[{\"role\":\"system\",\"content\":\"e\","
	    "\"output_config\":{\"effort\":\"huge\"}}]}",
	    "messages.0.output_config.effort: Input should be 'low'");

	/* clear_at: a tag of 1 to 64 bytes, at the limit and one past it */
	memset(tag, 'a', SYSTEM_CLEAR_AT_MAX);
	tag[SYSTEM_CLEAR_AT_MAX] = '\0';
	memset(&b, 0, sizeof(b));
	bprintf(&b, "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":"
	    "\"system\",\"content\":\"e\",\"clear_at\":\"%s\"}],"
	    "\"max_tokens\":16384}", tag);
	expect(b.b_s, b.b_s);
	free(b.b_s);
	tag[SYSTEM_CLEAR_AT_MAX] = 'a';
	tag[SYSTEM_CLEAR_AT_MAX + 1] = '\0';
	memset(&b, 0, sizeof(b));
	bprintf(&b, "{\"messages\":[{\"role\":\"system\",\"content\":\"e\","
	    "\"clear_at\":\"%s\"}]}", tag);
	refuse(b.b_s, "messages.0.clear_at: Input should be a tag of 1 to 64");
	free(b.b_s);
	refuse("{\"messages\":[{\"role\":\"system\",\"content\":\"e\","
	    "\"clear_at\":\"\"}]}", "messages.0.clear_at");
	refuse("{\"messages\":[{\"role\":\"system\",\"content\":\"e\","
	    "\"clear_at\":\"Next\"}]}", "messages.0.clear_at");
	refuse("{\"messages\":[{\"role\":\"system\",\"content\":\"e\","
	    "\"clear_at\":7}]}", "messages.0.clear_at: Input should be a "
	    "valid string");
	/* only a system message keeps them */
	expect("{\"messages\":[{\"role\":\"user\",\"content\":\"e\","
	    "\"clear_at\":\"x\",\"output_config\":{\"effort\":\"low\"}}]}",
	    "{\"model\":\"" MODEL "\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"e\"}],\"max_tokens\":16384}");
}
END_TEST

START_TEST(role_echo_bounded)
{
	struct buf	 b = { 0 };

	bputs(&b, "{\"messages\":[{\"role\":\"");
	brep(&b, EMOJI, 1000, "");
	bputs(&b, "\",\"content\":\"x\"}]}");
	refuse(b.b_s, "Unexpected role");
	ck_assert_uint_lt(strlen(err), 200);
	free(b.b_s);
}
END_TEST

START_TEST(messages_field)
{
	refuse("{}", "messages: Field required");
	refuse("{\"messages\":{}}", "messages: Input should be a valid list");
	refuse("{\"messages\":\"hi\"}", "messages");
	/* An empty list is the upstream's to judge. */
	expect("{\"messages\":[]}", "{\"model\":\"" MODEL "\","
	    "\"messages\":[],\"max_tokens\":16384}");
}
END_TEST

START_TEST(messages_limit)
{
	struct buf	 b = { 0 };
	cJSON		*o;

	bputs(&b, "{\"messages\":[");
	brep(&b, "{\"role\":\"user\",\"content\":\"x\"}", MODEL_MESSAGES_MAX,
	    ",");
	bputs(&b, "]}");
	o = rebuilt(b.b_s, &P_HIGH);
	ck_assert_int_eq(cJSON_GetArraySize(field(o, "messages")), 2000);
	cJSON_Delete(o);
	free(b.b_s);

	memset(&b, 0, sizeof(b));
	bputs(&b, "{\"messages\":[");
	brep(&b, "{\"role\":\"user\",\"content\":\"x\"}",
	    MODEL_MESSAGES_MAX + 1, ",");
	bputs(&b, "]}");
	refuse(b.b_s, "messages: At most 2000 messages");
	free(b.b_s);
}
END_TEST

/*
 * MODEL_NODES_MAX is counted before cJSON parses: a body that is no JSON
 * value at all (it starts with ']') reaches cJSON at the cap and is refused
 * by the count one past it, without any tree.
 */
START_TEST(nodes_limit)
{
	struct buf	 b = { 0 };

	bputs(&b, "]");
	brep(&b, "0", MODEL_NODES_MAX, ",");
	refuse(b.b_s, "Request body is not valid JSON");
	bputs(&b, ",0");
	refuse(b.b_s, "Request body has more than 4194304 values and keys");
	free(b.b_s);
	/* Keys count as well: {"k":0} is three. */
	memset(&b, 0, sizeof(b));
	bputs(&b, "]");
	brep(&b, "{\"k\":0}", MODEL_NODES_MAX / 3, ",");
	brep(&b, "0", MODEL_NODES_MAX % 3, ",");
	refuse(b.b_s, "Request body is not valid JSON");
	bputs(&b, ",0");
	refuse(b.b_s, "more than 4194304 values and keys");
	free(b.b_s);
}
END_TEST

/*
 * The structure PROTOCOL.md 5 allows, filled: 2 000 messages of 256 text
 * blocks, three in four with a cache_control, 8 values and keys a block on
 * average, passes the node cap and is rebuilt.
 */
START_TEST(nodes_structure)
{
	struct buf	 b = { 0 };
	size_t		 m, k;
	cJSON		*o;

	bputs(&b, "{\"messages\":[");
	for (m = 0; m < MODEL_MESSAGES_MAX; m++) {
		bprintf(&b, "%s{\"role\":\"%s\",\"content\":[", m ? "," : "",
		    m % 2 ? "assistant" : "user");
		for (k = 0; k < MODEL_BLOCKS_MAX; k++) {
			if (k > 0)
				bputs(&b, ",");
			bputs(&b, k % 4 == 3 ?
			    "{\"type\":\"text\",\"text\":\"t\"}" :
			    "{\"type\":\"text\",\"text\":\"t\",\"cache_control\":"
			    "{\"type\":\"ephemeral\"}}");
		}
		bputs(&b, "]}");
	}
	bputs(&b, "]}");
	o = rebuilt(b.b_s, &P_HIGH);
	ck_assert_int_eq(cJSON_GetArraySize(field(o, "messages")),
	    MODEL_MESSAGES_MAX);
	ck_assert_int_eq(cJSON_GetArraySize(field(cJSON_GetArrayItem(
	    field(o, "messages"), MODEL_MESSAGES_MAX - 1), "content")),
	    MODEL_BLOCKS_MAX);
	cJSON_Delete(o);
	free(b.b_s);
}
END_TEST

START_TEST(blocks_limit)
{
	struct buf	 b = { 0 };
	char		*body;
	cJSON		*o;

	brep(&b, "{\"type\":\"text\",\"text\":\"t\"}", MODEL_BLOCKS_MAX, ",");
	body = with_blocks(b.b_s);
	o = rebuilt(body, &P_HIGH);
	ck_assert_int_eq(cJSON_GetArraySize(field(cJSON_GetArrayItem(
	    field(o, "messages"), 0), "content")), 256);
	cJSON_Delete(o);
	free(body);
	bputs(&b, ",{\"type\":\"text\",\"text\":\"t\"}");
	body = with_blocks(b.b_s);
	refuse(body, "messages.0.content: At most 256 content blocks");
	free(body);
	free(b.b_s);

	/* The same bound for system and a tool_result's content. */
	memset(&b, 0, sizeof(b));
	bputs(&b, "{" MSGS ",\"system\":[");
	brep(&b, "{\"type\":\"text\",\"text\":\"s\"}", MODEL_BLOCKS_MAX, ",");
	bputs(&b, "]}");
	o = rebuilt(b.b_s, &P_HIGH);
	ck_assert_int_eq(cJSON_GetArraySize(field(o, "system")), 256);
	cJSON_Delete(o);
	b.b_len -= 2;
	bputs(&b, ",{\"type\":\"text\",\"text\":\"s\"}]}");
	refuse(b.b_s, "system: At most 256");
	free(b.b_s);

	memset(&b, 0, sizeof(b));
	bputs(&b, "{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[");
	brep(&b, "{\"type\":\"text\",\"text\":\"r\"}", MODEL_BLOCKS_MAX, ",");
	bputs(&b, "]}");
	body = with_blocks(b.b_s);
	o = rebuilt(body, &P_HIGH);
	free(body);
	cJSON_Delete(o);
	b.b_len -= 2;
	bputs(&b, ",{\"type\":\"text\",\"text\":\"r\"}]}");
	body = with_blocks(b.b_s);
	refuse(body, "messages.0.content.0.content: At most 256");
	free(body);
	free(b.b_s);
}
END_TEST

/*
 * Content blocks
 */

START_TEST(text_blocks)
{
	expect_blocks("{\"type\":\"text\",\"text\":\"a\",\"citations\":[],"
	    "\"x\":1}", "{\"type\":\"text\",\"text\":\"a\"}");
	expect_blocks("{\"text\":\"\",\"type\":\"text\"}",
	    "{\"type\":\"text\",\"text\":\"\"}");
	refuse_blocks("{\"type\":\"text\"}",
	    "messages.0.content.0.text: Field required");
	refuse_blocks("{\"type\":\"text\",\"text\":5}",
	    "messages.0.content.0.text");
	refuse_blocks("{\"type\":\"text\",\"text\":null}", "text");
	refuse_blocks("\"text\"", "messages.0.content.0");
	refuse_blocks("{\"text\":\"a\"}", "messages.0.content.0.type");
	refuse_blocks("{\"type\":7,\"text\":\"a\"}", "type");
	refuse_blocks("{\"type\":\"TEXT\",\"text\":\"a\"}", "\"TEXT\"");
}
END_TEST

START_TEST(cache_control)
{
	expect_blocks("{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\"}}", "{\"type\":\"text\",\"text\":\"a\","
	    "\"cache_control\":{\"type\":\"ephemeral\"}}");
	expect_blocks("{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\",\"ttl\":\"1h\"}}",
	    "{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\",\"ttl\":\"1h\"}}");
	/* Another ttl leaves the default lifetime. */
	expect_blocks("{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\",\"ttl\":\"5m\"}}",
	    "{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\"}}");
	expect_blocks("{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\",\"ttl\":\"24h\",\"scope\":\"org\"}}",
	    "{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\"}}");
	expect_blocks("{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\",\"ttl\":3600}}",
	    "{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\"}}");
	refuse_blocks("{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"persistent\"}}",
	    "messages.0.content.0.cache_control");
	refuse_blocks("{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{}}", "cache_control");
	refuse_blocks("{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "\"ephemeral\"}", "cache_control");
	refuse_blocks("{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "null}", "cache_control");
	/* Blocks other than text do not carry it. */
	expect_blocks("{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"n\","
	    "\"input\":{},\"cache_control\":{\"type\":\"ephemeral\"}}",
	    "{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"n\",\"input\":{}}");
}
END_TEST

START_TEST(image_blocks)
{
	static const char *const types[] = {
		"image/png", "image/jpeg", "image/webp", "image/gif"
	};
	char	 blk[256], want[256];
	size_t	 i;

	for (i = 0; i < 4; i++) {
		snprintf(blk, sizeof(blk), "{\"type\":\"image\",\"source\":"
		    "{\"type\":\"base64\",\"media_type\":\"%s\",\"data\":\""
		    IMG3 "\",\"x\":1},\"cache_control\":{\"type\":"
		    "\"ephemeral\"},\"title\":\"t\"}", types[i]);
		snprintf(want, sizeof(want), "{\"type\":\"image\","
		    "\"source\":{\"type\":\"base64\",\"media_type\":\"%s\","
		    "\"data\":\"" IMG3 "\"}}", types[i]);
		expect_blocks(blk, want);
	}
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/svg+xml\",\"data\":\"" IMG3 "\"}}",
	    "messages.0.content.0.source.media_type");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"IMAGE/PNG\",\"data\":\"" IMG3 "\"}}",
	    "media_type");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"data\":\"" IMG3 "\"}}", "media_type");
	/* URL and file sources are refused. */
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"url\","
	    "\"url\":\"https://example.com/a.png\"}}",
	    "messages.0.content.0.source.type");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"file\","
	    "\"file_id\":\"f\"}}", "source.type");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"media_type\":"
	    "\"image/png\",\"data\":\"" IMG3 "\"}}", "source.type");
	refuse_blocks("{\"type\":\"image\"}", "source: Field required");
	refuse_blocks("{\"type\":\"image\",\"source\":\"AAAA\"}", "source");
	/* Strict base64, and at least one byte. */
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"\"}}", "source.data");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"AAA\"}}", "data");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"AA=A\"}}", "data");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"AB==\"}}", "data");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"AA-_\"}}", "data");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"AAAA \"}}", "data");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"AA===\"}}", "data");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"data:image/png;base64,"
	    "AAAA\"}}", "data");
	refuse_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":4}}", "data");
	expect_blocks("{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/gif\",\"data\":\"" IMG1 "\"}}",
	    "{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/gif\",\"data\":\"" IMG1 "\"}}");
}
END_TEST

START_TEST(image_size)
{
	struct buf	 b = { 0 };
	char		*body;
	cJSON		*o;

	b_image(&b, IMAGE_BYTES_MAX);
	body = with_blocks(b.b_s);
	o = rebuilt(body, &P_HIGH);
	ck_assert_uint_eq(strlen(field(field(cJSON_GetArrayItem(field(
	    cJSON_GetArrayItem(field(o, "messages"), 0), "content"), 0),
	    "source"), "data")->valuestring), IMAGE_B64_MAX);
	cJSON_Delete(o);
	free(body);
	free(b.b_s);

	memset(&b, 0, sizeof(b));
	b_image(&b, IMAGE_BYTES_MAX + 1);
	body = with_blocks(b.b_s);
	refuse(body, "messages.0.content.0.source.data: Image size");
	free(body);
	free(b.b_s);
}
END_TEST

START_TEST(image_count)
{
	struct buf	 b = { 0 }, body = { 0 };
	char		*p;
	cJSON		*o;

	brep(&b, "{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"" IMG3 "\"}}", IMAGES_MAX,
	    ",");
	p = with_blocks(b.b_s);
	o = rebuilt(p, &P_HIGH);
	cJSON_Delete(o);
	free(p);

	/* Eight in each of several lists is fine: the bound is per list. */
	bprintf(&body, "{\"system\":[%s],\"messages\":["
	    "{\"role\":\"user\",\"content\":[%s]},"
	    "{\"role\":\"assistant\",\"content\":\"ok\"},"
	    "{\"role\":\"user\",\"content\":[%s,{\"type\":\"tool_result\","
	    "\"tool_use_id\":\"t\",\"content\":[%s]}]}]}", b.b_s, b.b_s, b.b_s,
	    b.b_s);
	o = rebuilt(body.b_s, &P_HIGH);
	cJSON_Delete(o);
	free(body.b_s);

	/* A ninth in one list is not, wherever the list is. */
	bputs(&b, ",{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/png\",\"data\":\"" IMG3 "\"}}");
	p = with_blocks(b.b_s);
	refuse(p, "messages.0.content.8: At most 8 images");
	free(p);
	memset(&body, 0, sizeof(body));
	bprintf(&body, "{" MSGS ",\"system\":[%s]}", b.b_s);
	refuse(body.b_s, "system.8: At most 8 images");
	free(body.b_s);
	memset(&body, 0, sizeof(body));
	bprintf(&body, "{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[%s]}", b.b_s);
	refuse_blocks(body.b_s, "messages.0.content.0.content.8: At most 8");
	free(body.b_s);
	free(b.b_s);
}
END_TEST

START_TEST(image_total)
{
	struct buf	 b = { 0 };
	size_t		 quarter = IMAGES_TOTAL_MAX / 4;

	/* Four 16 MiB images spread over two messages: 64 MiB in all. */
	bputs(&b, "{\"messages\":[{\"role\":\"user\",\"content\":[");
	b_image(&b, quarter);
	bputs(&b, ",");
	b_image(&b, quarter);
	bputs(&b, "]},{\"role\":\"assistant\",\"content\":\"a\"},"
	    "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
	    "\"tool_use_id\":\"t\",\"content\":[");
	b_image(&b, quarter);
	bputs(&b, "]},");
	b_image(&b, quarter);
	bputs(&b, "]}]");
	ck_assert_ptr_nonnull(b.b_s);
	{
		struct buf	 ok = { 0 };
		cJSON		*o;

		bput(&ok, b.b_s, b.b_len);
		bputs(&ok, "}");
		o = rebuilt(ok.b_s, &P_HIGH);
		cJSON_Delete(o);
		free(ok.b_s);
	}
	/* One byte more, in the system prompt. */
	bputs(&b, ",\"system\":[");
	b_image(&b, 1);
	bputs(&b, "]}");
	refuse(b.b_s, "system.0.source.data: Images exceed 64 MiB");
	free(b.b_s);
}
END_TEST

START_TEST(tool_use_blocks)
{
	expect_blocks("{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":"
	    "\"get-weather_2\",\"input\":{\"city\":\"Paris\",\"deep\":"
	    "{\"$ref\":\"https://evil.example/\",\"n\":[1,2.5,null,true]}},"
	    "\"caller\":{\"type\":\"direct\"}}",
	    "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":"
	    "\"get-weather_2\",\"input\":{\"city\":\"Paris\",\"deep\":"
	    "{\"$ref\":\"https://evil.example/\",\"n\":[1,2.5,null,true]}}}");
	refuse_blocks("{\"type\":\"tool_use\",\"name\":\"n\",\"input\":{}}",
	    "messages.0.content.0.id: Field required");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"\",\"name\":\"n\","
	    "\"input\":{}}", "id: String should have at least 1");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":1,\"name\":\"n\","
	    "\"input\":{}}", "id");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"i\",\"input\":{}}",
	    "name: Field required");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"\","
	    "\"input\":{}}", "name");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"a b\","
	    "\"input\":{}}", "name");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"a.b\","
	    "\"input\":{}}", "name");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"i\","
	    "\"name\":\"\xc3\xa9\",\"input\":{}}", "name");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"n\"}",
	    "input: Field required");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"n\","
	    "\"input\":[]}", "input");
	refuse_blocks("{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"n\","
	    "\"input\":\"{}\"}", "input");
}
END_TEST

/* tool_use.id and tool_result.tool_use_id of the given text. */
static void
tool_ids(const char *id, int ok)
{
	struct buf	 blk = { 0 }, want = { 0 };

	bprintf(&blk, "{\"type\":\"tool_use\",\"id\":\"%s\",\"name\":\"n\","
	    "\"input\":{}}", id);
	bprintf(&want, "{\"type\":\"tool_use\",\"id\":\"%s\",\"name\":\"n\","
	    "\"input\":{}}", id);
	if (ok)
		expect_blocks(blk.b_s, want.b_s);
	else
		refuse_blocks(blk.b_s, "messages.0.content.0.id: String "
		    "should have at most 128");
	free(blk.b_s);
	free(want.b_s);
	memset(&blk, 0, sizeof(blk));
	memset(&want, 0, sizeof(want));
	bprintf(&blk, "{\"type\":\"tool_result\",\"tool_use_id\":\"%s\"}", id);
	bprintf(&want, "{\"type\":\"tool_result\",\"tool_use_id\":\"%s\"}", id);
	if (ok)
		expect_blocks(blk.b_s, want.b_s);
	else
		refuse_blocks(blk.b_s, "tool_use_id: String should have at "
		    "most 128");
	free(blk.b_s);
	free(want.b_s);
}

START_TEST(tool_id_limits)
{
	struct buf	 b = { 0 };

	brep(&b, "a", TOOL_USE_ID_MAX, "");
	tool_ids(b.b_s, 1);
	bputs(&b, "a");
	tool_ids(b.b_s, 0);
	free(b.b_s);

	/* Non-BMP characters count 2: 64 of them are 128 chars. */
	memset(&b, 0, sizeof(b));
	brep(&b, EMOJI, TOOL_USE_ID_MAX / 2, "");
	tool_ids(b.b_s, 1);
	bputs(&b, "a");
	tool_ids(b.b_s, 0);
	free(b.b_s);

	/* 127 BMP characters of 3 bytes each and one more. */
	memset(&b, 0, sizeof(b));
	brep(&b, "\xe2\x82\xac", TOOL_USE_ID_MAX, "");
	tool_ids(b.b_s, 1);
	bputs(&b, "\xe2\x82\xac");
	tool_ids(b.b_s, 0);
	free(b.b_s);

	/* An escape counts as the character it stands for. */
	memset(&b, 0, sizeof(b));
	brep(&b, "\\ud83d\\ude00", TOOL_USE_ID_MAX / 2, "");
	tool_ids(b.b_s, 1);
	bputs(&b, "\\u0041");
	tool_ids(b.b_s, 0);
	free(b.b_s);
}
END_TEST

START_TEST(tool_name_limits)
{
	struct buf	 b = { 0 }, blk = { 0 };

	brep(&b, "n", TOOL_USE_NAME_MAX, "");
	bprintf(&blk, "{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"%s\","
	    "\"input\":{}}", b.b_s);
	expect_blocks(blk.b_s, blk.b_s);
	free(blk.b_s);
	memset(&blk, 0, sizeof(blk));
	bprintf(&blk, "{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"%sn\","
	    "\"input\":{}}", b.b_s);
	refuse_blocks(blk.b_s, "messages.0.content.0.name");
	free(blk.b_s);
	free(b.b_s);
}
END_TEST

START_TEST(tool_result_blocks)
{
	expect_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":\"done\",\"is_error\":true,\"x\":1}",
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":\"done\",\"is_error\":true}");
	expect_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"is_error\":false}",
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"t\"}");
	expect_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"is_error\":\"true\"}",
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"t\"}");
	expect_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\",\"ttl\":\"1h\"}},{\"type\":\"image\","
	    "\"source\":{\"type\":\"base64\",\"media_type\":\"image/jpeg\","
	    "\"data\":\"" IMG3 "\"}}],\"cache_control\":{\"type\":"
	    "\"ephemeral\"}}",
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[{\"type\":\"text\",\"text\":\"a\",\"cache_control\":"
	    "{\"type\":\"ephemeral\",\"ttl\":\"1h\"}},{\"type\":\"image\","
	    "\"source\":{\"type\":\"base64\",\"media_type\":\"image/jpeg\","
	    "\"data\":\"" IMG3 "\"}}]}");
	expect_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[]}",
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":[]}");
	refuse_blocks("{\"type\":\"tool_result\"}",
	    "messages.0.content.0.tool_use_id: Field required");
	refuse_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"\"}",
	    "tool_use_id");
	refuse_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":5}", "messages.0.content.0.content");
	refuse_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":{\"type\":\"text\",\"text\":\"a\"}}", "content");
	/* Nested content is text and image only. */
	refuse_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[{\"type\":\"tool_use\",\"id\":\"i\",\"name\":\"n\","
	    "\"input\":{}}]}", "messages.0.content.0.content.0: Content block "
	    "type \"tool_use\"");
	refuse_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"u\"}]}",
	    "\"tool_result\"");
	refuse_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[{\"type\":\"document\",\"source\":{\"type\":\"text\","
	    "\"media_type\":\"text/plain\",\"data\":\"x\"}}]}", "\"document\"");
	refuse_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[{\"type\":\"search_result\",\"source\":\"s\","
	    "\"title\":\"t\",\"content\":[]}]}", "\"search_result\"");
	refuse_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[{\"type\":\"thinking\",\"thinking\":\"a\","
	    "\"signature\":\"s\"}]}", "\"thinking\"");
	refuse_blocks("{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
	    "\"content\":[{\"type\":\"image\",\"source\":{\"type\":\"url\","
	    "\"url\":\"https://example.com/i.png\"}}]}", "source.type");
}
END_TEST

START_TEST(thinking_blocks)
{
	expect_blocks("{\"type\":\"thinking\",\"thinking\":\"hmm\","
	    "\"signature\":\"c2ln\",\"x\":1}", "{\"type\":\"thinking\","
	    "\"thinking\":\"hmm\",\"signature\":\"c2ln\"}");
	expect_blocks("{\"type\":\"redacted_thinking\",\"data\":\"ZW5j\","
	    "\"thinking\":\"x\"}",
	    "{\"type\":\"redacted_thinking\",\"data\":\"ZW5j\"}");
	refuse_blocks("{\"type\":\"thinking\",\"thinking\":\"hmm\"}",
	    "messages.0.content.0.signature: Field required");
	refuse_blocks("{\"type\":\"thinking\",\"signature\":\"s\"}",
	    "thinking: Field required");
	refuse_blocks("{\"type\":\"thinking\",\"thinking\":1,"
	    "\"signature\":\"s\"}", "thinking");
	refuse_blocks("{\"type\":\"thinking\",\"thinking\":\"t\","
	    "\"signature\":null}", "signature");
	refuse_blocks("{\"type\":\"redacted_thinking\"}",
	    "data: Field required");
	refuse_blocks("{\"type\":\"redacted_thinking\",\"data\":[]}", "data");
}
END_TEST

START_TEST(other_blocks)
{
	static const char *const refused[] = {
		"{\"type\":\"document\",\"source\":{\"type\":\"base64\","
		    "\"media_type\":\"application/pdf\",\"data\":\"AAAA\"}}",
		"{\"type\":\"document\",\"source\":{\"type\":\"url\","
		    "\"url\":\"https://example.com/a.pdf\"}}",
		"{\"type\":\"server_tool_use\",\"id\":\"s\",\"name\":"
		    "\"web_search\",\"input\":{}}",
		"{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"s\","
		    "\"content\":[]}",
		"{\"type\":\"web_fetch_tool_result\",\"tool_use_id\":\"s\","
		    "\"content\":{}}",
		"{\"type\":\"code_execution_tool_result\",\"tool_use_id\":"
		    "\"s\",\"content\":{}}",
		"{\"type\":\"mcp_tool_use\",\"id\":\"m\",\"name\":\"n\","
		    "\"server_name\":\"s\",\"input\":{}}",
		"{\"type\":\"mcp_tool_result\",\"tool_use_id\":\"m\"}",
		"{\"type\":\"container_upload\",\"file_id\":\"f\"}",
		"{\"type\":\"search_result\",\"source\":\"s\",\"title\":\"t\","
		    "\"content\":[]}",
		"{\"type\":\"tool_reference\",\"tool_name\":\"t\"}",
		"{\"type\":\"\"}",
	};
	size_t	 i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		refuse_blocks(refused[i], "is not accepted");
}
END_TEST

START_TEST(system_field)
{
	expect("{" MSGS ",\"system\":\"be brief\"}", "{\"model\":\"" MODEL
	    "\"," MSGS_OUT ",\"system\":\"be brief\",\"max_tokens\":16384}");
	expect("{" MSGS ",\"system\":[{\"type\":\"text\",\"text\":\"a\","
	    "\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}},"
	    "{\"type\":\"image\",\"source\":{\"type\":\"base64\","
	    "\"media_type\":\"image/webp\",\"data\":\"" IMG3 "\"}}]}",
	    "{\"model\":\"" MODEL "\"," MSGS_OUT ",\"system\":[{\"type\":"
	    "\"text\",\"text\":\"a\",\"cache_control\":{\"type\":\"ephemeral\","
	    "\"ttl\":\"1h\"}},{\"type\":\"image\",\"source\":{\"type\":"
	    "\"base64\",\"media_type\":\"image/webp\",\"data\":\"" IMG3 "\"}}],"
	    "\"max_tokens\":16384}");
	refuse("{" MSGS ",\"system\":[{\"type\":\"tool_use\",\"id\":\"i\","
	    "\"name\":\"n\",\"input\":{}}]}", "system.0: Content block type "
	    "\"tool_use\"");
	refuse("{" MSGS ",\"system\":[{\"type\":\"thinking\",\"thinking\":"
	    "\"t\",\"signature\":\"s\"}]}", "system.0");
	refuse("{" MSGS ",\"system\":[{\"type\":\"document\"}]}", "system.0");
	refuse("{" MSGS ",\"system\":5}", "system");
	refuse("{" MSGS ",\"system\":{\"type\":\"text\",\"text\":\"a\"}}",
	    "system");
	refuse("{" MSGS ",\"system\":null}", "system");
}
END_TEST

/*
 * Tools
 */

#define SCHEMA \
	"{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\"}}}"

START_TEST(tools_field)
{
	expect("{" MSGS ",\"tools\":[{\"name\":\"search\",\"description\":"
	    "\"Find\",\"input_schema\":" SCHEMA ",\"cache_control\":{\"type\":"
	    "\"ephemeral\",\"ttl\":\"1h\"},\"strict\":true,"
	    "\"defer_loading\":true,\"input_examples\":[{}]},"
	    "{\"type\":\"custom\",\"name\":\"b\",\"input_schema\":{}}]}",
	    "{\"model\":\"" MODEL "\"," MSGS_OUT ",\"tools\":[{\"name\":"
	    "\"search\",\"description\":\"Find\",\"input_schema\":" SCHEMA ","
	    "\"cache_control\":{\"type\":\"ephemeral\",\"ttl\":\"1h\"}},"
	    "{\"name\":\"b\",\"input_schema\":{}}],\"max_tokens\":16384}");
	expect("{" MSGS ",\"tools\":[]}", "{\"model\":\"" MODEL "\","
	    MSGS_OUT ",\"tools\":[],\"max_tokens\":16384}");
	refuse("{" MSGS ",\"tools\":{}}", "tools");
	refuse("{" MSGS ",\"tools\":[\"search\"]}", "tools.0");
	refuse("{" MSGS ",\"tools\":[{\"input_schema\":{}}]}",
	    "tools.0.name: Field required");
	refuse("{" MSGS ",\"tools\":[{\"name\":\"a b\",\"input_schema\":{}}]}",
	    "tools.0.name");
	refuse("{" MSGS ",\"tools\":[{\"name\":\"n\"}]}",
	    "tools.0.input_schema: Field required");
	refuse("{" MSGS ",\"tools\":[{\"name\":\"n\",\"input_schema\":true}]}",
	    "tools.0.input_schema");
	refuse("{" MSGS ",\"tools\":[{\"name\":\"n\",\"input_schema\":[]}]}",
	    "tools.0.input_schema");
	refuse("{" MSGS ",\"tools\":[{\"name\":\"n\",\"input_schema\":{},"
	    "\"description\":5}]}", "tools.0.description");
	refuse("{" MSGS ",\"tools\":[{\"name\":\"n\",\"input_schema\":{},"
	    "\"cache_control\":{\"type\":\"x\"}}]}", "tools.0.cache_control");
	/* Server tools and other typed tools are refused. */
	refuse("{" MSGS ",\"tools\":[{\"type\":\"web_search_20250305\","
	    "\"name\":\"web_search\"}]}", "tools.0: Tool type "
	    "\"web_search_20250305\"");
	refuse("{" MSGS ",\"tools\":[{\"type\":\"bash_20250124\","
	    "\"name\":\"bash\"}]}", "tools.0");
	refuse("{" MSGS ",\"tools\":[{\"type\":\"web_fetch_20250910\","
	    "\"name\":\"web_fetch\"}]}", "tools.0");
	refuse("{" MSGS ",\"tools\":[{\"type\":\"mcp_toolset\","
	    "\"mcp_server_name\":\"s\"}]}", "tools.0");
	refuse("{" MSGS ",\"tools\":[{\"type\":\"Custom\",\"name\":\"n\","
	    "\"input_schema\":{}}]}", "tools.0");
	refuse("{" MSGS ",\"tools\":[{\"type\":null,\"name\":\"n\","
	    "\"input_schema\":{}}]}", "tools.0.type");
}
END_TEST

START_TEST(tools_limit)
{
	struct buf	 b = { 0 };
	size_t		 i;
	cJSON		*o;

	bputs(&b, "{" MSGS ",\"tools\":[");
	for (i = 0; i < MODEL_TOOLS_MAX; i++)
		bprintf(&b, "%s{\"name\":\"t%zu\",\"input_schema\":{}}",
		    i > 0 ? "," : "", i);
	bputs(&b, "]}");
	o = rebuilt(b.b_s, &P_HIGH);
	ck_assert_int_eq(cJSON_GetArraySize(field(o, "tools")), 128);
	cJSON_Delete(o);
	b.b_len -= 2;
	bputs(&b, ",{\"name\":\"x\",\"input_schema\":{}}]}");
	refuse(b.b_s, "tools: At most 128 tools");
	free(b.b_s);
}
END_TEST

START_TEST(tool_name_limit)
{
	struct buf	 n = { 0 }, b = { 0 };

	brep(&n, "N", TOOL_USE_NAME_MAX, "");
	bprintf(&b, "{" MSGS ",\"tools\":[{\"name\":\"%s\",\"input_schema\":"
	    "{}}]}", n.b_s);
	cJSON_Delete(rebuilt(b.b_s, &P_HIGH));
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	bprintf(&b, "{" MSGS ",\"tools\":[{\"name\":\"%s-\",\"input_schema\":"
	    "{}}]}", n.b_s);
	refuse(b.b_s, "tools.0.name");
	free(b.b_s);

	/* The same pattern for tool_choice. */
	memset(&b, 0, sizeof(b));
	bprintf(&b, "{" MSGS ",\"tool_choice\":{\"type\":\"tool\","
	    "\"name\":\"%s\"}}", n.b_s);
	cJSON_Delete(rebuilt(b.b_s, &P_HIGH));
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	bprintf(&b, "{" MSGS ",\"tool_choice\":{\"type\":\"tool\","
	    "\"name\":\"%s_\"}}", n.b_s);
	refuse(b.b_s, "tool_choice.name");
	free(b.b_s);
	free(n.b_s);
}
END_TEST

/* One tool whose input_schema is schema: kept as sent, or refused. */
static void
schema_ok(const char *schema)
{
	char	*body, *want;

	ck_assert_int_ge(asprintf(&body, "{" MSGS ",\"tools\":[{\"name\":"
	    "\"t\",\"input_schema\":%s}]}", schema), 0);
	ck_assert_int_ge(asprintf(&want, "{\"model\":\"" MODEL "\"," MSGS_OUT
	    ",\"tools\":[{\"name\":\"t\",\"input_schema\":%s}],"
	    "\"max_tokens\":16384}", schema), 0);
	expect(body, want);
	free(want);
	free(body);
}

static void
schema_refused(const char *schema, const char *kw)
{
	char	*body, *sub;

	ck_assert_int_ge(asprintf(&body, "{" MSGS ",\"tools\":[{\"name\":"
	    "\"t\",\"input_schema\":%s}]}", schema), 0);
	ck_assert_int_ge(asprintf(&sub, "tools.0.input_schema: \"%s\" must "
	    "be a local reference", kw), 0);
	refuse(body, sub);
	free(sub);
	free(body);
}

/* tmpl with its one @ replaced by inner, malloc'd. */
static char *
subst(const char *tmpl, const char *inner)
{
	const char	*at = strchr(tmpl, '@');
	char		*s;

	ck_assert_ptr_nonnull(at);
	ck_assert_int_ge(asprintf(&s, "%.*s%s%s", (int)(at - tmpl), tmpl,
	    inner, at + 1), 0);
	return s;
}

START_TEST(schema_refs)
{
	static const char *const kws[] = {
		"$ref", "$dynamicRef", "$recursiveRef", "$id", "$schema",
		"$vocabulary"
	};
	/* Each schema position, with @ where a schema goes. */
	static const char *const positions[] = {
		"{\"properties\":{\"a\":@}}",
		("{\"properties\":{\"a\":{\"type\":\"object\",\"properties\":"
		    "{\"b\":@}}}}"),
		"{\"patternProperties\":{\"^x\":@}}",
		"{\"$defs\":{\"d\":@}}",
		"{\"definitions\":{\"d\":@}}",
		"{\"dependentSchemas\":{\"d\":@}}",
		"{\"dependencies\":{\"d\":@}}",
		"{\"items\":@}",
		"{\"items\":[{},@]}",
		"{\"prefixItems\":[{},@]}",
		"{\"additionalProperties\":@}",
		"{\"additionalItems\":@}",
		"{\"unevaluatedItems\":@}",
		"{\"unevaluatedProperties\":@}",
		"{\"contains\":@}",
		"{\"propertyNames\":@}",
		"{\"not\":@}",
		"{\"if\":@}",
		"{\"then\":@}",
		"{\"else\":@}",
		"{\"allOf\":[{},@]}",
		"{\"anyOf\":[@]}",
		"{\"oneOf\":[true,@]}",
		"{\"contentSchema\":@}",
		"{\"anyOf\":[{\"items\":{\"not\":{\"$defs\":{\"x\":@}}}}]}",
		"@",
	};
	char	 inner[128], *s;
	size_t	 i, k;

	for (i = 0; i < sizeof(positions) / sizeof(positions[0]); i++) {
		for (k = 0; k < sizeof(kws) / sizeof(kws[0]); k++) {
			/* A local fragment is fine... */
			snprintf(inner, sizeof(inner), "{\"%s\":\"#/$defs/x\"}",
			    kws[k]);
			s = subst(positions[i], inner);
			schema_ok(s);
			free(s);
			/* ...a remote one is not, nor a relative one... */
			snprintf(inner, sizeof(inner), "{\"%s\":"
			    "\"https://evil.example/s.json\"}", kws[k]);
			s = subst(positions[i], inner);
			schema_refused(s, kws[k]);
			free(s);
			snprintf(inner, sizeof(inner),
			    "{\"%s\":\"other.json#\"}", kws[k]);
			s = subst(positions[i], inner);
			schema_refused(s, kws[k]);
			free(s);
			/* ...nor a value that is not a string. */
			snprintf(inner, sizeof(inner), "{\"%s\":{\"https://x/"
			    "\":true}}", kws[k]);
			s = subst(positions[i], inner);
			schema_refused(s, kws[k]);
			free(s);
		}
	}
	schema_refused("{\"$ref\":\"\"}", "$ref");
	schema_refused("{\"$ref\":null}", "$ref");
	schema_ok("{\"$ref\":\"#\"}");
}
END_TEST

START_TEST(schema_meta_ids)
{
	static const char *const ok[] = {
		"http://json-schema.org/draft-04/schema#",
		"http://json-schema.org/draft-06/schema#",
		"http://json-schema.org/draft-07/schema#",
		"http://json-schema.org/draft-07/schema",
		"https://json-schema.org/draft-07/schema#",
		"https://json-schema.org/draft/2019-09/schema",
		"https://json-schema.org/draft/2020-12/schema",
		"http://json-schema.org/draft/2020-12/schema#",
	};
	static const char *const bad[] = {
		"http://json-schema.org/draft-05/schema#",
		"http://json-schema.org/draft-07/schema##",
		"http://json-schema.org/draft-07/schema#/x",
		"http://json-schema.org/draft-07/schema/",
		"http://json-schema.org/draft-07/hyper-schema#",
		"ftp://json-schema.org/draft-07/schema#",
		"//json-schema.org/draft-07/schema#",
		"json-schema.org/draft-07/schema#",
		"http://json-schema.org.evil.example/draft-07/schema#",
		"http://evil.example/json-schema.org/draft-07/schema#",
		"HTTP://json-schema.org/draft-07/schema#",
		"http://JSON-SCHEMA.ORG/draft-07/schema#",
		"https://json-schema.org/draft/2021-12/schema",
	};
	char	 inner[160], *s;
	size_t	 i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		snprintf(inner, sizeof(inner), "{\"$schema\":\"%s\","
		    "\"type\":\"object\"}", ok[i]);
		schema_ok(inner);
		/* at a nested schema position too */
		s = subst("{\"properties\":{\"a\":@}}", inner);
		schema_ok(s);
		free(s);
		/* only $schema names a dialect: $ref, $id do not */
		snprintf(inner, sizeof(inner), "{\"$ref\":\"%s\"}", ok[i]);
		schema_refused(inner, "$ref");
		snprintf(inner, sizeof(inner), "{\"$id\":\"%s\"}", ok[i]);
		schema_refused(inner, "$id");
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(inner, sizeof(inner), "{\"$schema\":\"%s\"}", bad[i]);
		schema_refused(inner, "$schema");
	}
}
END_TEST

START_TEST(schema_data)
{
	/* Keys inside data are not schema keywords. */
	schema_ok("{\"enum\":[{\"$ref\":\"https://evil.example/\"}]}");
	schema_ok("{\"const\":{\"$ref\":\"https://evil.example/\"}}");
	schema_ok("{\"default\":{\"$id\":\"https://evil.example/\"}}");
	schema_ok("{\"examples\":[{\"$schema\":\"https://evil.example/\"}]}");
	schema_ok("{\"properties\":{\"a\":{\"default\":{\"$ref\":"
	    "\"http://x/\"},\"enum\":[{\"$dynamicRef\":\"http://x/\"}]}}}");
	/* A property named $ref is a name, its value a schema. */
	schema_ok("{\"properties\":{\"$ref\":{\"type\":\"string\"},"
	    "\"$id\":{\"const\":\"https://x/\"}}}");
	schema_refused("{\"properties\":{\"$ref\":{\"$ref\":\"http://x/\"}}}",
	    "$ref");
	/* Annotations and unknown keywords are not descended into. */
	schema_ok("{\"title\":{\"$ref\":\"http://x/\"},\"x-meta\":"
	    "{\"$ref\":\"http://x/\"},\"description\":\"$ref http://x\"}");
	/* Numbers and nesting pass untouched. */
	schema_ok("{\"type\":\"object\",\"properties\":{\"n\":{\"type\":"
	    "\"integer\",\"minimum\":-5,\"maximum\":1e10,\"multipleOf\":0.25}},"
	    "\"required\":[\"n\"],\"additionalProperties\":false}");
}
END_TEST

/*
 * Deep enough to matter, well inside cJSON's nesting limit of 1 000.
 * cJSON_Compare() is exponential in depth, so the schema is found as text.
 */
START_TEST(schema_deep)
{
	struct buf	 b = { 0 }, body = { 0 };
	size_t		 depth = 900;
	char		*out = NULL, *again = NULL;

	brep(&b, "{\"items\":", depth, "");
	bputs(&b, "{\"$ref\":\"#/x\"}");
	brep(&b, "}", depth, "");
	bprintf(&body, "{" MSGS ",\"tools\":[{\"name\":\"t\","
	    "\"input_schema\":%s}]}", b.b_s);
	ck_assert_msg(run(body.b_s, &P_HIGH, &out) == 0, "%s", err);
	ck_assert_ptr_nonnull(strstr(out, b.b_s));
	ck_assert_int_eq(run(out, &P_HIGH, &again), 0);
	ck_assert_str_eq(out, again);
	free(again);
	free(out);
	free(body.b_s);
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	brep(&b, "{\"items\":", depth, "");
	bputs(&b, "{\"$ref\":\"http://x/\"}");
	brep(&b, "}", depth, "");
	schema_refused(b.b_s, "$ref");
	free(b.b_s);
}
END_TEST

START_TEST(tool_choice)
{
	static const char *const kept[] = {
		"{\"type\":\"auto\"}",
		"{\"type\":\"any\"}",
		"{\"type\":\"none\"}",
		"{\"type\":\"tool\",\"name\":\"get_x\"}",
		"{\"type\":\"auto\",\"disable_parallel_tool_use\":true}",
		"{\"type\":\"any\",\"disable_parallel_tool_use\":true}",
		("{\"type\":\"tool\",\"name\":\"t\","
		    "\"disable_parallel_tool_use\":true}"),
	};
	char	*body, *want;
	size_t	 i;

	for (i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		ck_assert_int_ge(asprintf(&body,
		    "{" MSGS ",\"tool_choice\":%s}", kept[i]), 0);
		ck_assert_int_ge(asprintf(&want, "{\"model\":\"" MODEL "\","
		    MSGS_OUT ",\"tool_choice\":%s,\"max_tokens\":16384}",
		    kept[i]), 0);
		expect(body, want);
		free(body);
		free(want);
	}
	expect("{" MSGS ",\"tool_choice\":{\"type\":\"auto\","
	    "\"disable_parallel_tool_use\":false,\"name\":\"x\",\"y\":1}}",
	    "{\"model\":\"" MODEL "\"," MSGS_OUT ",\"tool_choice\":{\"type\":"
	    "\"auto\"},\"max_tokens\":16384}");
	refuse("{" MSGS ",\"tool_choice\":{\"type\":\"tool\"}}",
	    "tool_choice.name: Field required");
	refuse("{" MSGS ",\"tool_choice\":{\"type\":\"tool\",\"name\":"
	    "\"a/b\"}}", "tool_choice.name");
	refuse("{" MSGS ",\"tool_choice\":{\"type\":\"required\"}}",
	    "tool_choice.type");
	refuse("{" MSGS ",\"tool_choice\":{}}", "tool_choice.type");
	refuse("{" MSGS ",\"tool_choice\":\"auto\"}", "tool_choice");
	refuse("{" MSGS ",\"tool_choice\":null}", "tool_choice");
}
END_TEST

/*
 * Thinking, effort and max_tokens
 */

static const char *const level_names[] = { "low", "medium", "high", "xhigh" };
static const uint64_t	 level_ceil[] = { 2048, 8192, 16384, 32768 };
static const char *const level_effort[] = { "low", "medium", "high", "max" };

static uint64_t
min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

START_TEST(level_parse)
{
	enum rebuild_level	 l = LEVEL_HIGH;
	size_t			 i;

	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(rebuild_level_parse(level_names[i], &l), 0);
		ck_assert_int_eq(l, (int)i);
	}
	ck_assert_int_eq(rebuild_level_parse("max", &l), -1);
	ck_assert_int_eq(rebuild_level_parse("LOW", &l), -1);
	ck_assert_int_eq(rebuild_level_parse("", &l), -1);
	ck_assert_int_eq(rebuild_level_parse("high ", &l), -1);
	ck_assert_int_eq(rebuild_level_parse(NULL, &l), -1);
	ck_assert_int_eq(l, LEVEL_XHIGH);
}
END_TEST

START_TEST(thinking_enabled_table)
{
	static const uint64_t	 asked[] = {
		1024, 1025, 2047, 2048, 2049, 5000, 8192, 8193, 16384, 16385,
		32768, 32769, 100000, 127999, 128000, 1000000
	};
	struct rebuild_params	 p;
	char			*body, *want;
	uint64_t		 b;
	size_t			 l, i;

	for (l = 0; l < 4; l++)
		for (i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
			p = params((enum rebuild_level)l, 0, 0);
			b = min_u64(asked[i], level_ceil[l]);
			ck_assert_int_ge(asprintf(&body, "{" MSGS
			    ",\"thinking\":{\"type\":\"enabled\","
			    "\"budget_tokens\":%llu,"
			    "\"display\":\"x\"}}",
			    (unsigned long long)asked[i]), 0);
			ck_assert_int_ge(asprintf(&want, "{\"model\":\""
			    MODEL "\"," MSGS_OUT ",\"thinking\":{\"type\":"
			    "\"enabled\",\"budget_tokens\":%llu},"
			    "\"max_tokens\":%llu}",
			    (unsigned long long)b, (unsigned long long)
			    (b + 1 > 16384 ? b + 1 : 16384)), 0);
			expect_p(body, &p, want);
			free(body);
			free(want);
		}
}
END_TEST

START_TEST(thinking_adaptive_disabled)
{
	struct rebuild_params	 p;
	char			*want;
	size_t			 l;

	for (l = 0; l < 4; l++) {
		p = params((enum rebuild_level)l, 0, 0);
		/* Adaptive with no effort: the ceiling's for low and medium. */
		if (l <= LEVEL_MEDIUM)
			ck_assert_int_ge(asprintf(&want, "{\"model\":\"" MODEL
			    "\"," MSGS_OUT ",\"thinking\":{\"type\":"
			    "\"adaptive\"},\"output_config\":{\"effort\":"
			    "\"%s\"},\"max_tokens\":16384}", level_effort[l]),
			    0);
		else
			ck_assert_int_ge(asprintf(&want, "{\"model\":\"" MODEL
			    "\"," MSGS_OUT ",\"thinking\":{\"type\":"
			    "\"adaptive\"},\"max_tokens\":16384}"), 0);
		expect_p("{" MSGS ",\"thinking\":{\"type\":\"adaptive\","
		    "\"budget_tokens\":5000}}", &p, want);
		/* An output_config without effort is no requested effort. */
		expect_p("{" MSGS ",\"thinking\":{\"type\":\"adaptive\"},"
		    "\"output_config\":{\"format\":{\"type\":\"json\"}}}", &p,
		    want);
		free(want);
		/* Disabled is kept and sets nothing. */
		expect_p("{" MSGS ",\"thinking\":{\"type\":\"disabled\","
		    "\"budget_tokens\":2048}}", &p, "{\"model\":\"" MODEL "\","
		    MSGS_OUT ",\"thinking\":{\"type\":\"disabled\"},"
		    "\"max_tokens\":16384}");
		/* No thinking at all sets nothing either. */
		expect_p("{" MSGS "}", &p, "{\"model\":\"" MODEL "\"," MSGS_OUT
		    ",\"max_tokens\":16384}");
	}
}
END_TEST

START_TEST(thinking_refused)
{
	expect("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":1024}}", "{\"model\":\"" MODEL "\"," MSGS_OUT
	    ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},"
	    "\"max_tokens\":16384}");
	refuse("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":1023}}", "thinking.budget_tokens: Input should "
	    "be greater than or equal to 1024");
	refuse("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":0}}", "thinking.budget_tokens");
	refuse("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":-2048}}", "thinking.budget_tokens");
	refuse("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":2048.5}}", "thinking.budget_tokens");
	refuse("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":\"2048\"}}", "thinking.budget_tokens");
	refuse("{" MSGS ",\"thinking\":{\"type\":\"enabled\"}}",
	    "thinking.budget_tokens: Field required");
	refuse("{" MSGS ",\"thinking\":{\"type\":\"on\"}}", "thinking.type");
	refuse("{" MSGS ",\"thinking\":{\"type\":\"Adaptive\"}}",
	    "thinking.type");
	refuse("{" MSGS ",\"thinking\":{}}", "thinking.type");
	refuse("{" MSGS ",\"thinking\":true}", "thinking");
	refuse("{" MSGS ",\"thinking\":\"enabled\"}", "thinking");
	refuse("{" MSGS ",\"thinking\":null}", "thinking");
	/* A huge budget is an integer and clamps. */
	expect("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":1e300}}", "{\"model\":\"" MODEL "\"," MSGS_OUT
	    ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":16384},"
	    "\"max_tokens\":16385}");
	/* So is 2048.0. */
	expect("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":2048.0}}", "{\"model\":\"" MODEL "\"," MSGS_OUT
	    ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048},"
	    "\"max_tokens\":16384}");
}
END_TEST

START_TEST(effort_lowering)
{
	static const char *const efforts[] = {
		"low", "medium", "high", "xhigh", "max"
	};
	/* The ceiling's position in the effort order, per level. */
	static const size_t	 ceil_index[] = { 0, 1, 2, 4 };
	struct rebuild_params	 p;
	char			*body, *want;
	size_t			 l, e;
	int			 adaptive;

	for (adaptive = 0; adaptive <= 1; adaptive++)
		for (l = 0; l < 4; l++)
			for (e = 0; e < 5; e++) {
				p = params((enum rebuild_level)l, 0, 0);
				ck_assert_int_ge(asprintf(&body, "{" MSGS
				    "%s,\"output_config\":{\"effort\":\"%s\","
				    "\"format\":{}}}", adaptive ?
				    ",\"thinking\":{\"type\":\"adaptive\"}" :
				    "", efforts[e]), 0);
				ck_assert_int_ge(asprintf(&want, "{\"model\":\""
				    MODEL "\"," MSGS_OUT "%s,\"output_config\":"
				    "{\"effort\":\"%s\"},\"max_tokens\":16384}",
				    adaptive ?
				    ",\"thinking\":{\"type\":\"adaptive\"}" :
				    "", efforts[e < ceil_index[l] ? e :
				    ceil_index[l]]), 0);
				expect_p(body, &p, want);
				free(body);
				free(want);
			}
	refuse("{" MSGS ",\"output_config\":{\"effort\":\"extreme\"}}",
	    "output_config.effort");
	refuse("{" MSGS ",\"output_config\":{\"effort\":\"LOW\"}}",
	    "output_config.effort");
	refuse("{" MSGS ",\"output_config\":{\"effort\":3}}",
	    "output_config.effort");
	refuse("{" MSGS ",\"output_config\":{\"effort\":null}}",
	    "output_config.effort");
	refuse("{" MSGS ",\"output_config\":\"high\"}", "output_config");
	/* With enabled thinking the effort is lowered the same way. */
	p = params(LEVEL_LOW, 0, 0);
	expect_p("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":4096},\"output_config\":{\"effort\":\"max\"}}",
	    &p, "{\"model\":\"" MODEL "\"," MSGS_OUT ",\"thinking\":{\"type\":"
	    "\"enabled\",\"budget_tokens\":2048},\"output_config\":{\"effort\":"
	    "\"low\"},\"max_tokens\":16384}");
	/* Without an effort, output_config is dropped. */
	expect("{" MSGS ",\"output_config\":{\"format\":{\"type\":"
	    "\"json_schema\"}}}", "{\"model\":\"" MODEL "\"," MSGS_OUT
	    ",\"max_tokens\":16384}");
}
END_TEST

/* max_tokens of body rebuilt with max_output and level high. */
static uint64_t
max_tokens_of(const char *body, uint64_t max_output)
{
	struct rebuild_params	 p = params(LEVEL_XHIGH, max_output, 0);
	cJSON			*o, *mt;
	uint64_t		 v;
	char			*out = NULL;

	ck_assert_msg(run(body, &p, &out) == 0, "refused: %s", err);
	o = cJSON_Parse(out);
	ck_assert_ptr_nonnull(o);
	mt = field(o, "max_tokens");
	ck_assert_ptr_nonnull(mt);
	v = (uint64_t)mt->valuedouble;
	/* Printed digit for digit. */
	{
		char	 s[64];

		snprintf(s, sizeof(s), "\"max_tokens\":%llu",
		    (unsigned long long)v);
		ck_assert_ptr_nonnull(strstr(out, s));
	}
	cJSON_Delete(o);
	free(out);
	return v;
}

START_TEST(max_tokens_formula)
{
	/* min(asked or 16 384, maxOutputTokens). */
	ck_assert_uint_eq(max_tokens_of("{" MSGS "}", 0), 16384);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":1}", 0), 1);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":1000}", 0),
	    1000);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":127999}", 0),
	    127999);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":128000}", 0),
	    128000);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":128001}", 0),
	    128000);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":1e20}", 0),
	    128000);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":"
	    "18446744073709551617}", 0), 128000);
	ck_assert_uint_eq(max_tokens_of("{" MSGS "}", 1025), 1025);
	ck_assert_uint_eq(max_tokens_of("{" MSGS "}", 16383), 16383);
	ck_assert_uint_eq(max_tokens_of("{" MSGS "}", 200000), 16384);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":300000}",
	    200000), 200000);
	/* max(budget + 1, ...). */
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":100,"
	    "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048}}", 0),
	    2049);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"thinking\":{\"type\":"
	    "\"enabled\",\"budget_tokens\":32768}}", 0), 32769);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":40000,"
	    "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":32768}}", 0),
	    40000);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":32769,"
	    "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":32768}}", 0),
	    32769);
	/* Adaptive and disabled thinking have no budget. */
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":5,"
	    "\"thinking\":{\"type\":\"adaptive\"}}", 0), 5);
	ck_assert_uint_eq(max_tokens_of("{" MSGS ",\"max_tokens\":5,"
	    "\"thinking\":{\"type\":\"disabled\"}}", 0), 5);
	refuse("{" MSGS ",\"max_tokens\":0}", "max_tokens");
	refuse("{" MSGS ",\"max_tokens\":-1}", "max_tokens");
	refuse("{" MSGS ",\"max_tokens\":1.5}", "max_tokens");
	refuse("{" MSGS ",\"max_tokens\":\"100\"}", "max_tokens");
	refuse("{" MSGS ",\"max_tokens\":null}", "max_tokens");
}
END_TEST

START_TEST(max_output_interplay)
{
	struct rebuild_params	 p;

	/* The smallest maxOutputTokens leaves a budget of 1 024. */
	p = params(LEVEL_XHIGH, MAX_OUTPUT_TOKENS_MIN, 0);
	expect_p("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":32768}}", &p, "{\"model\":\"" MODEL "\","
	    MSGS_OUT ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
	    "1024},\"max_tokens\":1025}");
	p = params(LEVEL_LOW, MAX_OUTPUT_TOKENS_MIN, 0);
	expect_p("{" MSGS ",\"max_tokens\":1,\"thinking\":{\"type\":"
	    "\"enabled\",\"budget_tokens\":1024}}", &p, "{\"model\":\"" MODEL
	    "\"," MSGS_OUT ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":1024},\"max_tokens\":1025}");
	/* maxOutputTokens - 1 below the level's ceiling. */
	p = params(LEVEL_XHIGH, 4000, 0);
	expect_p("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":8192}}", &p, "{\"model\":\"" MODEL "\","
	    MSGS_OUT ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
	    "3999},\"max_tokens\":4000}");
	p = params(LEVEL_HIGH, 16385, 0);
	expect_p("{" MSGS ",\"max_tokens\":90000,\"thinking\":{\"type\":"
	    "\"enabled\",\"budget_tokens\":20000}}", &p, "{\"model\":\"" MODEL
	    "\"," MSGS_OUT ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":16384},\"max_tokens\":16385}");
	p = params(LEVEL_HIGH, 16384, 0);
	expect_p("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":20000}}", &p, "{\"model\":\"" MODEL "\","
	    MSGS_OUT ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
	    "16383},\"max_tokens\":16384}");
	/* The largest maxOutputTokens. */
	p = params(LEVEL_XHIGH, MAX_OUTPUT_TOKENS_MAX, 0);
	expect_p("{" MSGS ",\"max_tokens\":200001,\"thinking\":{\"type\":"
	    "\"enabled\",\"budget_tokens\":99999}}", &p, "{\"model\":\"" MODEL
	    "\"," MSGS_OUT ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":32768},\"max_tokens\":200000}");
	/* count_tokens clamps the budget too. */
	p = params(LEVEL_XHIGH, 4000, 1);
	expect_p("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":8192}}", &p, "{\"model\":\"" MODEL "\","
	    MSGS_OUT ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":"
	    "3999}}");
}
END_TEST

/*
 * Sampling fields
 */

START_TEST(stream_field)
{
	expect("{" MSGS ",\"stream\":true}", "{\"model\":\"" MODEL "\","
	    MSGS_OUT ",\"max_tokens\":16384,\"stream\":true}");
	expect("{" MSGS ",\"stream\":false}", "{\"model\":\"" MODEL "\","
	    MSGS_OUT ",\"max_tokens\":16384}");
	expect("{" MSGS ",\"stream\":\"true\"}", "{\"model\":\"" MODEL "\","
	    MSGS_OUT ",\"max_tokens\":16384}");
	expect("{" MSGS ",\"stream\":1}", "{\"model\":\"" MODEL "\","
	    MSGS_OUT ",\"max_tokens\":16384}");
	expect("{" MSGS ",\"stream\":null}", "{\"model\":\"" MODEL "\","
	    MSGS_OUT ",\"max_tokens\":16384}");
}
END_TEST

START_TEST(sampling_numbers)
{
	expect("{" MSGS ",\"temperature\":0.7,\"top_p\":0.95,\"top_k\":40}",
	    "{\"model\":\"" MODEL "\"," MSGS_OUT ",\"max_tokens\":16384,"
	    "\"temperature\":0.7,\"top_p\":0.95,\"top_k\":40}");
	expect("{" MSGS ",\"temperature\":0,\"top_p\":1,\"top_k\":-3}",
	    "{\"model\":\"" MODEL "\"," MSGS_OUT ",\"max_tokens\":16384,"
	    "\"temperature\":0,\"top_p\":1,\"top_k\":-3}");
	expect("{" MSGS ",\"temperature\":\"0.7\",\"top_p\":null,"
	    "\"top_k\":[1]}", "{\"model\":\"" MODEL "\"," MSGS_OUT
	    ",\"max_tokens\":16384}");
}
END_TEST

static void
stop_sequences(const char *list, int kept)
{
	char	*body, *want;

	ck_assert_int_ge(asprintf(&body, "{" MSGS ",\"stop_sequences\":%s}",
	    list), 0);
	if (kept)
		ck_assert_int_ge(asprintf(&want, "{\"model\":\"" MODEL "\","
		    MSGS_OUT ",\"max_tokens\":16384,\"stop_sequences\":%s}",
		    list), 0);
	else
		ck_assert_int_ge(asprintf(&want, "{\"model\":\"" MODEL "\","
		    MSGS_OUT ",\"max_tokens\":16384}"), 0);
	expect(body, want);
	free(body);
	free(want);
}

START_TEST(stop_sequences_limits)
{
	struct buf	 b = { 0 }, s = { 0 };

	stop_sequences("[]", 1);
	stop_sequences("[\"\\n\\nHuman:\",\"END\"]", 1);
	bputs(&b, "[");
	brep(&b, "\"x\"", STOP_SEQUENCES_MAX, ",");
	bputs(&b, "]");
	stop_sequences(b.b_s, 1);
	b.b_len--;
	bputs(&b, ",\"y\"]");
	stop_sequences(b.b_s, 0);
	free(b.b_s);

	brep(&s, "s", STOP_SEQUENCE_MAX, "");
	memset(&b, 0, sizeof(b));
	bprintf(&b, "[\"a\",\"%s\"]", s.b_s);
	stop_sequences(b.b_s, 1);
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	bprintf(&b, "[\"a\",\"%ss\"]", s.b_s);
	stop_sequences(b.b_s, 0);
	free(b.b_s);
	free(s.b_s);

	/* 500 non-BMP characters are 1 000 chars. */
	memset(&s, 0, sizeof(s));
	brep(&s, EMOJI, STOP_SEQUENCE_MAX / 2, "");
	memset(&b, 0, sizeof(b));
	bprintf(&b, "[\"%s\"]", s.b_s);
	stop_sequences(b.b_s, 1);
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	bprintf(&b, "[\"%s.\"]", s.b_s);
	stop_sequences(b.b_s, 0);
	free(b.b_s);
	free(s.b_s);

	stop_sequences("[\"a\",1]", 0);
	stop_sequences("[null]", 0);
	stop_sequences("\"END\"", 0);
	stop_sequences("{\"a\":\"b\"}", 0);
}
END_TEST

/*
 * count_tokens
 */

#define FULL_BODY \
	"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":" \
	"[{\"type\":\"text\",\"text\":\"a\"}]}],\"system\":\"s\"," \
	"\"tools\":[{\"name\":\"t\",\"input_schema\":{}}]," \
	"\"tool_choice\":{\"type\":\"any\"}," \
	"\"thinking\":{\"type\":\"adaptive\"}," \
	"\"output_config\":{\"effort\":\"high\"}," \
	"\"max_tokens\":500,\"stream\":true,\"temperature\":1," \
	"\"top_p\":0.5,\"top_k\":5,\"stop_sequences\":[\"x\"]," \
	"\"metadata\":{\"user_id\":\"u\"},\"service_tier\":\"auto\"}"

START_TEST(count_tokens_fields)
{
	struct rebuild_params	 p;

	expect_p(FULL_BODY, &P_COUNT, "{\"model\":\"" MODEL "\","
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
	    "\"text\":\"a\"}]}],\"system\":\"s\",\"tools\":[{\"name\":\"t\","
	    "\"input_schema\":{}}],\"tool_choice\":{\"type\":\"any\"},"
	    "\"thinking\":{\"type\":\"adaptive\"}}");
	/* The same body for messages keeps the rest. */
	expect(FULL_BODY, "{\"model\":\"" MODEL "\","
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
	    "\"text\":\"a\"}]}],\"system\":\"s\",\"tools\":[{\"name\":\"t\","
	    "\"input_schema\":{}}],\"tool_choice\":{\"type\":\"any\"},"
	    "\"thinking\":{\"type\":\"adaptive\"},\"output_config\":"
	    "{\"effort\":\"high\"},\"max_tokens\":500,\"stream\":true,"
	    "\"temperature\":1,\"top_p\":0.5,\"top_k\":5,"
	    "\"stop_sequences\":[\"x\"]}");
	/* Even adaptive at low sets no effort for count_tokens. */
	p = params(LEVEL_LOW, 0, 1);
	expect_p(FULL_BODY, &p, "{\"model\":\"" MODEL "\","
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
	    "\"text\":\"a\"}]}],\"system\":\"s\",\"tools\":[{\"name\":\"t\","
	    "\"input_schema\":{}}],\"tool_choice\":{\"type\":\"any\"},"
	    "\"thinking\":{\"type\":\"adaptive\"}}");
	expect_p("{" MSGS "}", &P_COUNT, "{\"model\":\"" MODEL "\"," MSGS_OUT
	    "}");
	/* The same refusals apply. */
	refuse_p("{\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}",
	    strlen("{\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}"),
	    &P_COUNT, "messages.0: Unexpected role");
	refuse_p("{" MSGS ",\"thinking\":{\"type\":\"enabled\","
	    "\"budget_tokens\":1023}}", strlen("{" MSGS ",\"thinking\":"
	    "{\"type\":\"enabled\",\"budget_tokens\":1023}}"), &P_COUNT,
	    "budget_tokens");
}
END_TEST

START_TEST(rich_round_trip)
{
	static const char	 body[] =
	    "{\"model\":\"x\",\"system\":[{\"type\":\"text\",\"text\":\"sys\","
	    "\"cache_control\":{\"type\":\"ephemeral\"}}],"
	    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
	    "\"text\":\"q \\\"quoted\\\" \\u00e9\\n\"},{\"type\":\"image\","
	    "\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\","
	    "\"data\":\"iVBORw0KGgo=\"}}]},{\"role\":\"assistant\","
	    "\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\","
	    "\"signature\":\"s\"},{\"type\":\"redacted_thinking\","
	    "\"data\":\"d\"},{\"type\":\"tool_use\",\"id\":\"toolu_01\","
	    "\"name\":\"calc\",\"input\":{\"a\":9007199254740993,"
	    "\"b\":[0.1,1e-7,-0]}}]},{\"role\":\"user\",\"content\":"
	    "[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_01\","
	    "\"content\":[{\"type\":\"text\",\"text\":\"42\"}],"
	    "\"is_error\":true}]}],\"tools\":[{\"name\":\"calc\","
	    "\"input_schema\":{\"type\":\"object\",\"$defs\":{\"n\":{\"type\":"
	    "\"number\"}},\"properties\":{\"a\":{\"$ref\":\"#/$defs/n\"}}}}],"
	    "\"tool_choice\":{\"type\":\"auto\"},\"thinking\":{\"type\":"
	    "\"enabled\",\"budget_tokens\":12000},\"max_tokens\":8000,"
	    "\"stream\":true,\"temperature\":1}";
	struct rebuild_params	 p;
	char			*out = NULL, *again = NULL;
	size_t			 l;
	int			 ct;

	for (l = 0; l < 4; l++)
		for (ct = 0; ct <= 1; ct++) {
			p = params((enum rebuild_level)l, 0, ct);
			ck_assert_int_eq(run(body, &p, &out), 0);
			ck_assert_int_eq(run(out, &p, &again), 0);
			ck_assert_str_eq(out, again);
			free(out);
			free(again);
		}
}
END_TEST

/*
 * Error bodies
 */

START_TEST(error_body)
{
	char	*s;
	size_t	 len = 0;

	s = rebuild_error_body("messages.0: Unexpected role \"system\": the "
	    "input message role must be \"user\" or \"assistant\"", &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(strlen(s), len);
	same_json(s, "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"invalid_request_error\",\"message\":\"messages.0: Unexpected "
	    "role \\\"system\\\": the input message role must be \\\"user\\\" "
	    "or \\\"assistant\\\"\"}}");
	free(s);

	s = rebuild_error_body("a\nb\\c\x01", &len);
	same_json(s, "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"invalid_request_error\",\"message\":\"a\\nb\\\\c\\u0001\"}}");
	free(s);

	/* A message cut inside a character loses that character only. */
	s = rebuild_error_body("ab\xf0\x9f\x98", &len);
	same_json(s, "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"invalid_request_error\",\"message\":\"ab\"}}");
	ck_assert_int_eq(utf8_text_check(s, len, SIZE_MAX), 0);
	free(s);

	/* Nothing usable: a generic message. */
	s = rebuild_error_body(NULL, NULL);
	same_json(s, "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"invalid_request_error\",\"message\":\"Invalid request\"}}");
	free(s);
	s = rebuild_error_body("\xff bad", &len);
	same_json(s, "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"invalid_request_error\",\"message\":\"Invalid request\"}}");
	free(s);
	s = rebuild_error_body("", &len);
	same_json(s, "{\"type\":\"error\",\"error\":{\"type\":"
	    "\"invalid_request_error\",\"message\":\"Invalid request\"}}");
	free(s);
}
END_TEST

START_TEST(error_truncated)
{
	static const char	 sys[] = "{\"messages\":[{\"role\":"
	    "\"tool\",\"content\":\"x\"}]}";
	static const char	 acute[] = "{\"messages\":[{\"role\":\""
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\",\"content\":\"x\"}]}";
	char			 small[12], *out = NULL;
	size_t			 outlen;
	int			 r;

	r = rebuild_model_request(sys, sizeof(sys) - 1, &P_HIGH, &out,
	    &outlen, small, sizeof(small));
	ck_assert_int_eq(r, -1);
	ck_assert_str_eq(small, "messages.0:");

	/* The cut falls inside the two-byte character: it goes. */
	r = rebuild_model_request(acute, sizeof(acute) - 1, &P_HIGH, &out,
	    &outlen, err, 40);
	ck_assert_int_eq(r, -1);
	ck_assert_int_eq(utf8_text_check(err, strlen(err), SIZE_MAX), 0);
	ck_assert_str_eq(err, "messages.0: Unexpected role \"\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9");
}
END_TEST

/*
 * MCP
 */

static const char *const allowed[] = { "search", "fetch_page" };

static int
mcp(const char *body, int startup, char **out)
{
	size_t	 outlen = 0;
	int	 r;

	memset(err, 'x', sizeof(err));
	r = rebuild_mcp_request(body, strlen(body), allowed, 2, startup, out,
	    &outlen, err, sizeof(err));
	if (r == 0) {
		ck_assert_ptr_nonnull(*out);
		ck_assert_uint_eq(strlen(*out), outlen);
	} else {
		ck_assert_ptr_null(*out);
		ck_assert_ptr_nonnull(memchr(err, '\0', sizeof(err)));
	}
	return r;
}

static void
mcp_expect(const char *body, int startup, const char *want)
{
	char	*out = NULL, *again = NULL;

	ck_assert_msg(mcp(body, startup, &out) == 0, "refused: %s: %s", body,
	    err);
	same_json(out, want);
	ck_assert_int_eq(mcp(out, startup, &again), 0);
	ck_assert_str_eq(out, again);
	free(out);
	free(again);
}

static void
mcp_refuse(const char *body, int startup, int want)
{
	char	*out = NULL;
	int	 r;

	r = mcp(body, startup, &out);
	ck_assert_msg(r == want, "%s: got %d want %d (%s)", body, r, want,
	    err);
	if (want == REBUILD_MCP_REFUSED)
		ck_assert_str_eq(err, "MCP method refused");
}

START_TEST(mcp_metadata)
{
	int	 s;

	for (s = 0; s <= 1; s++) {
		mcp_expect("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
		    "\"initialize\",\"params\":{\"protocolVersion\":"
		    "\"2025-06-18\",\"capabilities\":{\"sampling\":{}},"
		    "\"clientInfo\":{\"name\":\"w\",\"version\":\"1\"}},"
		    "\"extra\":{\"a\":1},\"result\":5}", s,
		    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
		    "\"params\":{\"protocolVersion\":\"2025-06-18\","
		    "\"capabilities\":{\"sampling\":{}},\"clientInfo\":"
		    "{\"name\":\"w\",\"version\":\"1\"}}}");
		mcp_expect("{\"jsonrpc\":\"2.0\",\"method\":"
		    "\"notifications/initialized\"}", s,
		    "{\"jsonrpc\":\"2.0\",\"method\":"
		    "\"notifications/initialized\"}");
		mcp_expect("{\"method\":\"ping\",\"id\":\"p-1\",\"jsonrpc\":"
		    "\"2.0\"}", s,
		    "{\"jsonrpc\":\"2.0\",\"id\":\"p-1\",\"method\":\"ping\"}");
		mcp_expect("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
		    "\"tools/list\",\"params\":{\"cursor\":\"c\"}}", s,
		    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\","
		    "\"params\":{\"cursor\":\"c\"}}");
		mcp_expect("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":"
		    "\"tools/list\",\"params\":[]}", s,
		    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\","
		    "\"params\":[]}");
		mcp_expect("{\"jsonrpc\":\"2.0\",\"id\":-7.5,\"method\":"
		    "\"ping\"}", s,
		    "{\"jsonrpc\":\"2.0\",\"id\":-7.5,\"method\":\"ping\"}");
		mcp_expect("{\"jsonrpc\":\"2.0\",\"id\":9007199254740991,"
		    "\"method\":\"ping\"}", s,
		    "{\"jsonrpc\":\"2.0\",\"id\":9007199254740991,"
		    "\"method\":\"ping\"}");
	}
}
END_TEST

START_TEST(mcp_tools_call)
{
	mcp_expect("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\",\"arguments\":{\"q\":\"x\","
	    "\"n\":[1,{}]},\"_meta\":{\"progressToken\":1}}}", 0,
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\",\"arguments\":{\"q\":\"x\","
	    "\"n\":[1,{}]},\"_meta\":{\"progressToken\":1}}}");
	mcp_expect("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"fetch_page\",\"arguments\":{}}}", 0,
	    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"fetch_page\",\"arguments\":{}}}");
	/* Not during the startup window. */
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\",\"arguments\":{}}}", 1,
	    REBUILD_MCP_REFUSED);
	/* Only allowed tools, by exact name. */
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"delete_all\",\"arguments\":{}}}", 0,
	    REBUILD_MCP_REFUSED);
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"Search\",\"arguments\":{}}}", 0,
	    REBUILD_MCP_REFUSED);
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search \",\"arguments\":{}}}", 0,
	    REBUILD_MCP_REFUSED);
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"searc\",\"arguments\":{}}}", 0,
	    REBUILD_MCP_REFUSED);
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":[\"search\"],\"arguments\":{}}}", 0,
	    REBUILD_MCP_REFUSED);
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"arguments\":{}}}", 0, REBUILD_MCP_REFUSED);
	/* arguments an object. */
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\"}}", 0, REBUILD_MCP_REFUSED);
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\",\"arguments\":[]}}", 0,
	    REBUILD_MCP_REFUSED);
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\",\"arguments\":\"{}\"}}", 0,
	    REBUILD_MCP_REFUSED);
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":{\"name\":\"search\",\"arguments\":null}}", 0,
	    REBUILD_MCP_REFUSED);
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\"}",
	    0, REBUILD_MCP_REFUSED);
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
	    "\"params\":[\"search\",{}]}", 0, REBUILD_MCP_REFUSED);
	/* An empty allow-list allows no call. */
	{
		static const char	 call[] = "{\"jsonrpc\":\"2.0\","
		    "\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		    "\"search\",\"arguments\":{}}}";
		char			*out = NULL;
		size_t			 outlen;

		ck_assert_int_eq(rebuild_mcp_request(call, sizeof(call) - 1,
		    NULL, 0, 0, &out, &outlen, err, sizeof(err)),
		    REBUILD_MCP_REFUSED);
	}
}
END_TEST

START_TEST(mcp_refused_methods)
{
	static const char *const methods[] = {
		"resources/list", "resources/read", "resources/templates/list",
		"resources/subscribe", "prompts/list", "prompts/get",
		"sampling/createMessage", "completion/complete",
		"logging/setLevel", "roots/list", "elicitation/create",
		"notifications/cancelled", "notifications/roots/list_changed",
		"tools/List", "TOOLS/LIST", "ping ", "", "initialize\\u0020",
	};
	char	*body;
	size_t	 i;
	int	 s;

	for (s = 0; s <= 1; s++)
		for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
			ck_assert_int_ge(asprintf(&body, "{\"jsonrpc\":\"2.0\","
			    "\"id\":1,\"method\":\"%s\",\"params\":{}}",
			    methods[i]), 0);
			mcp_refuse(body, s, REBUILD_MCP_REFUSED);
			free(body);
		}
	/* Batches. */
	mcp_refuse("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", 0,
	    REBUILD_MCP_REFUSED);
	mcp_refuse("[]", 0, REBUILD_MCP_REFUSED);
}
END_TEST

START_TEST(mcp_invalid)
{
	static const char *const bodies[] = {
		"{\"id\":1,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
		"{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}",
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
		    "\"params\":\"x\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
		    "\"params\":null}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
		    "\"method\":\"tools/list\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
		    "\"params\":{\"name\":\"search\",\"name\":\"evil\","
		    "\"arguments\":{}}}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000\",\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1e999,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"",
		"\"ping\"",
		"1",
		"null",
		"{\"Jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
	};
	size_t	 i;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
		mcp_refuse(bodies[i], 0, REBUILD_MCP_INVALID);
	/* "Method" is not "method": nothing names the method. */
	mcp_refuse("{\"jsonrpc\":\"2.0\",\"id\":1,\"Method\":\"ping\"}", 0,
	    REBUILD_MCP_INVALID);
}
END_TEST

/* MCP_NODES_MAX values and keys pass, one more is refused unparsed. */
START_TEST(mcp_nodes_limit)
{
	struct buf	 b = { 0 };
	char		*out = NULL;
	const char	*head = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"search\",\"arguments\":"
	    "{\"a\":[";
	size_t		 nhead = 15;	/* values and keys of head */

	bputs(&b, head);
	brep(&b, "0", MCP_NODES_MAX - nhead, ",");
	bputs(&b, "]}}}");
	ck_assert_msg(mcp(b.b_s, 0, &out) == 0, "refused: %s", err);
	free(out);
	free(b.b_s);
	memset(&b, 0, sizeof(b));
	bputs(&b, head);
	brep(&b, "0", MCP_NODES_MAX - nhead + 1, ",");
	bputs(&b, "]}}}");
	mcp_refuse(b.b_s, 0, REBUILD_MCP_INVALID);
	ck_assert_str_eq(err, "Request body has more than 262144 values and "
	    "keys");
	free(b.b_s);
}
END_TEST

static Suite *
rebuild_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("rebuild");

	tc = tcase_create("body");
	tcase_add_test(tc, minimal);
	tcase_add_test(tc, body_freed_once_parsed);
	tcase_add_test(tc, not_object);
	tcase_add_test(tc, invalid_json);
	tcase_add_test(tc, duplicate_keys);
	tcase_add_test(tc, nul_and_utf8);
	tcase_add_test(tc, number_range);
	tcase_add_test(tc, dropped_fields);
	tcase_add_test(tc, bad_params);
	suite_add_tcase(s, tc);

	tc = tcase_create("messages");
	tcase_add_test(tc, roles);
	tcase_add_test(tc, system_messages);
	tcase_add_test(tc, role_echo_bounded);
	tcase_add_test(tc, messages_field);
	tcase_add_test(tc, messages_limit);
	tcase_add_test(tc, blocks_limit);
	tcase_add_test(tc, nodes_limit);
	tcase_add_test(tc, nodes_structure);
	suite_add_tcase(s, tc);

	tc = tcase_create("blocks");
	tcase_add_test(tc, text_blocks);
	tcase_add_test(tc, cache_control);
	tcase_add_test(tc, image_blocks);
	tcase_add_test(tc, image_count);
	tcase_add_test(tc, tool_use_blocks);
	tcase_add_test(tc, tool_id_limits);
	tcase_add_test(tc, tool_name_limits);
	tcase_add_test(tc, tool_result_blocks);
	tcase_add_test(tc, thinking_blocks);
	tcase_add_test(tc, other_blocks);
	tcase_add_test(tc, system_field);
	suite_add_tcase(s, tc);

	/* Bodies of 28 and 90 MB. */
	tc = tcase_create("image_bytes");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, image_size);
	tcase_add_test(tc, image_total);
	suite_add_tcase(s, tc);

	tc = tcase_create("tools");
	tcase_add_test(tc, tools_field);
	tcase_add_test(tc, tools_limit);
	tcase_add_test(tc, tool_name_limit);
	tcase_add_test(tc, schema_refs);
	tcase_add_test(tc, schema_meta_ids);
	tcase_add_test(tc, schema_data);
	tcase_add_test(tc, schema_deep);
	tcase_add_test(tc, tool_choice);
	suite_add_tcase(s, tc);

	tc = tcase_create("thinking");
	tcase_add_test(tc, level_parse);
	tcase_add_test(tc, thinking_enabled_table);
	tcase_add_test(tc, thinking_adaptive_disabled);
	tcase_add_test(tc, thinking_refused);
	tcase_add_test(tc, effort_lowering);
	tcase_add_test(tc, max_tokens_formula);
	tcase_add_test(tc, max_output_interplay);
	suite_add_tcase(s, tc);

	tc = tcase_create("sampling");
	tcase_add_test(tc, stream_field);
	tcase_add_test(tc, sampling_numbers);
	tcase_add_test(tc, stop_sequences_limits);
	tcase_add_test(tc, count_tokens_fields);
	tcase_add_test(tc, rich_round_trip);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, error_body);
	tcase_add_test(tc, error_truncated);
	suite_add_tcase(s, tc);

	tc = tcase_create("mcp");
	tcase_add_test(tc, mcp_metadata);
	tcase_add_test(tc, mcp_tools_call);
	tcase_add_test(tc, mcp_refused_methods);
	tcase_add_test(tc, mcp_invalid);
	tcase_add_test(tc, mcp_nodes_limit);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(rebuild_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
