/*
 * pscript, the reference worker's precheck scripts, without I/O: the
 * broker, the files, the sleeps and the log are played here.  Every
 * statement, every substitution, every refusal, and each bound at the
 * limit and one past it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "limits.h"
#include "pscript.h"
#include "wjson.h"

#define FAKE_MAX	16

struct fake {
	/* Answers, in order; past the last, 500. */
	int		 f_status[FAKE_MAX];
	const char	*f_body[FAKE_MAX];
	int		 f_answers;
	/* What was asked. */
	char		*f_method[FAKE_MAX];
	char		*f_path[FAKE_MAX];
	char		*f_sent[FAKE_MAX];
	int		 f_requests;
	int		 f_pair[2];
	char		*f_pair_path;
	char		*f_pair_body;
	int		 f_write_errno;
	char		*f_write_path;
	char		*f_write_data;
	int		 f_writes;
	unsigned int	 f_slept;
	struct wbuf	 f_log;
};

static struct fake	 fk;

static int
fake_request(void *arg, const char *method, const char *path,
    const char *body, size_t len, struct wbuf *answer)
{
	struct fake	*f = arg;
	int		 i = f->f_requests++;

	ck_assert_int_lt(i, FAKE_MAX);
	f->f_method[i] = strdup(method);
	f->f_path[i] = strdup(path);
	f->f_sent[i] = body != NULL ? strndup(body, len) : NULL;
	if (i >= f->f_answers)
		return 500;
	if (f->f_body[i] != NULL)
		wbuf_addstr(answer, f->f_body[i]);
	return f->f_status[i];
}

static void
fake_request2(void *arg, const char *path, const char *body, size_t len,
    int status[2])
{
	struct fake	*f = arg;

	f->f_pair_path = strdup(path);
	f->f_pair_body = strndup(body, len);
	status[0] = f->f_pair[0];
	status[1] = f->f_pair[1];
}

static int
fake_write(void *arg, const char *path, const char *data, size_t len)
{
	struct fake	*f = arg;

	f->f_writes++;
	free(f->f_write_path);
	free(f->f_write_data);
	f->f_write_path = strdup(path);
	f->f_write_data = strndup(data, len);
	return f->f_write_errno;
}

static void
fake_sleep(void *arg, unsigned int ms)
{
	((struct fake *)arg)->f_slept += ms;
}

static void
fake_log(void *arg, const char *text, size_t len)
{
	struct fake	*f = arg;

	wbuf_add(&f->f_log, text, len);
	wbuf_addc(&f->f_log, '\n');
}

static const struct pscript_io	 fake_io = {
	fake_request, fake_request2, fake_write, fake_sleep, fake_log, &fk
};

static void
fake_setup(void)
{
	memset(&fk, 0, sizeof(fk));
	wbuf_init(&fk.f_log, 0);
}

static void
fake_teardown(void)
{
	int	 i;

	for (i = 0; i < fk.f_requests && i < FAKE_MAX; i++) {
		free(fk.f_method[i]);
		free(fk.f_path[i]);
		free(fk.f_sent[i]);
	}
	free(fk.f_pair_path);
	free(fk.f_pair_body);
	free(fk.f_write_path);
	free(fk.f_write_data);
	wbuf_free(&fk.f_log);
}

static void
answer(int status, const char *body)
{
	fk.f_status[fk.f_answers] = status;
	fk.f_body[fk.f_answers] = body;
	fk.f_answers++;
}

/* The input the host would write, around a script. */
static char *
input_for(const char *script, size_t *lenp)
{
	struct wjson	*in, *sched, *servers, *s, *tools;
	char		*out;

	in = wjson_object();
	wjson_set(in, "script", wjson_string(script));
	wjson_set(in, "firedAt", wjson_string("2025-03-01T07:00:00.000Z"));
	wjson_set(in, "timeZone", wjson_string("Europe/Paris"));
	wjson_set(in, "today", wjson_string("2025-03-01"));
	sched = wjson_object();
	wjson_set(sched, "id", wjson_int(42));
	wjson_set(sched, "title", wjson_string("Morning \"news\""));
	wjson_set(in, "schedule", sched);
	servers = wjson_array();
	s = wjson_object();
	wjson_set(s, "name", wjson_string("srv"));
	tools = wjson_array();
	wjson_append(tools, wjson_string("get"));
	wjson_append(tools, wjson_string("put"));
	wjson_set(s, "tools", tools);
	wjson_append(servers, s);
	wjson_set(in, "servers", servers);
	out = wjson_emit_str(in, 0, lenp);
	ck_assert_ptr_nonnull(out);
	wjson_free(in);
	return out;
}

static struct wjson *
run_raw(const char *input, size_t len)
{
	struct wjson	*a;
	char		*out;
	size_t		 olen;

	out = pscript_run(input, len, &fake_io, &olen);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_le(olen, PS_OUTPUT_MAX);
	a = wjson_parse(out, olen, NULL, NULL);
	ck_assert_msg(a != NULL && a->j_type == WJSON_OBJECT &&
	    a->j_count == 2, "not an answer: %s", out);
	free(out);
	return a;
}

static struct wjson *
run(const char *script)
{
	struct wjson	*a;
	char		*in;
	size_t		 len;

	in = input_for(script, &len);
	a = run_raw(in, len);
	free(in);
	return a;
}

/* The script's result, as compact JSON. */
#define run_ok(script, want)	run_ok_at(__LINE__, script, want)
static void
run_ok_at(int line, const char *script, const char *want)
{
	struct wjson	*a, *ok;
	char		*got;

	a = run(script);
	ok = wjson_get(a, "ok");
	got = wjson_emit_str(wjson_get(a, ok != NULL && ok->j_bool ?
	    "result" : "error"), 0, NULL);
	ck_assert_msg(ok != NULL && ok->j_type == WJSON_BOOL && ok->j_bool,
	    "line %d: failed: %s", line, got);
	ck_assert_msg(strcmp(got, want) == 0, "line %d: %s, not %s", line,
	    got, want);
	free(got);
	wjson_free(a);
}

#define run_err(script, want)	run_err_at(__LINE__, script, want)
static void
run_err_at(int line, const char *script, const char *want)
{
	struct wjson	*a, *ok;
	const char	*got;

	a = run(script);
	ok = wjson_get(a, "ok");
	ck_assert_msg(ok != NULL && ok->j_type == WJSON_BOOL && !ok->j_bool,
	    "line %d: succeeded", line);
	got = wjson_get_str(a, "error", NULL);
	ck_assert_ptr_nonnull(got);
	ck_assert_msg(strcmp(got, want) == 0, "line %d: \"%s\", not \"%s\"",
	    line, got, want);
	wjson_free(a);
}

static const char	 ok_result[] = "{\"jsonrpc\":\"2.0\",\"id\":1,"
    "\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],"
    "\"n\":3,\"a\":{\"b\":[\"x\",{\"c\":true}]}}}";

START_TEST(bounds_agree)
{
	ck_assert_uint_eq(PS_INPUT_MAX, PRECHECK_INPUT_MAX);
	ck_assert_uint_eq(PS_OUTPUT_MAX, PRECHECK_STDOUT_MAX);
	ck_assert_uint_eq(PS_REQUEST_MAX, PRECHECK_REQUEST_MAX);
	ck_assert_uint_eq(PS_ANSWER_MAX, PRECHECK_RESPONSE_MAX);
	ck_assert_uint_eq(PS_ERROR_MAX, PRECHECK_ERROR_MAX);
	ck_assert_uint_eq(PS_DEPTH_MAX, PRECHECK_DEPTH_MAX);
	ck_assert_uint_eq(PS_SERVERS_MAX, PRECHECK_SERVERS_MAX);
	ck_assert_uint_eq(PS_TIMEOUT_MS, PRECHECK_TIMEOUT_MS_MAX);
}
END_TEST

START_TEST(empty_and_comments)
{
	run_ok("", "null");
	run_ok("\n\n   \n# a comment\n\t# another\r\n", "null");
	ck_assert_int_eq(fk.f_requests, 0);
}
END_TEST

START_TEST(stmt_log)
{
	run_ok("log hello  world \nlog\n  log indented", "null");
	ck_assert_str_eq(fk.f_log.b_data, "hello  world\n\nindented\n");
}
END_TEST

START_TEST(stmt_call)
{
	answer(200, ok_result);
	run_ok("call srv get {\"q\": \"a b\", \"n\": [1]}\nreturn ${last}",
	    "{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}],\"n\":3,"
	    "\"a\":{\"b\":[\"x\",{\"c\":true}]}}");
	ck_assert_int_eq(fk.f_requests, 1);
	ck_assert_str_eq(fk.f_method[0], "POST");
	ck_assert_str_eq(fk.f_path[0], "/mcp/srv");
	ck_assert_str_eq(fk.f_sent[0], "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"tools/call\",\"params\":{\"name\":\"get\","
	    "\"arguments\":{\"q\":\"a b\",\"n\":[1]}}}");
}
END_TEST

START_TEST(call_no_args)
{
	answer(200, ok_result);
	run_ok("call srv put", "null");
	ck_assert_str_eq(fk.f_sent[0], "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"tools/call\",\"params\":{\"name\":\"put\","
	    "\"arguments\":{}}}");
}
END_TEST

START_TEST(call_not_granted)
{
	run_err("call srv nope", "srv/nope is not granted to this script");
	run_err("call other get", "other/get is not granted to this script");
	ck_assert_int_eq(fk.f_requests, 0);
}
END_TEST

START_TEST(call_statuses)
{
	static const struct {
		int		 status;
		const char	*error;
	} cases[] = {
		{ 403, "srv/get: that server or tool is not granted to this "
		    "script" },
		{ 404, "srv/get: that server is not granted to this script" },
		{ 410, "srv/get: the run ended" },
		{ 409, "srv/get: the script made two MCP calls at once; await "
		    "each before the next" },
		{ 429, "srv/get: the script made too many MCP calls" },
		{ 500, "srv/get: the broker call failed" },
		{ 201, "srv/get: the broker call failed" },
		{ 0, "srv/get: the broker call failed" },
	};
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_teardown();
		fake_setup();
		answer(cases[i].status, ok_result);
		run_err("call srv get\nlog not reached", cases[i].error);
		ck_assert_uint_eq(fk.f_log.b_len, 0);
	}
}
END_TEST

START_TEST(call_bodies)
{
	static const struct {
		const char	*body;
		const char	*error;
	} cases[] = {
		{ "", "srv/get: no answer" },
		{ "[1]", "srv/get: no answer" },
		{ "{\"result\":", "srv/get: no answer" },
		{ "{\"error\":{\"code\":-32602,\"message\":\"bad q\"}}",
		    "srv/get: bad q" },
		{ "{\"error\":{\"code\":1}}", "srv/get: failed" },
		{ "{\"result\":[]}", "srv/get: no result" },
		{ "{}", "srv/get: no result" },
		{ "{\"result\":{\"isError\":true,\"content\":[{\"type\":"
		    "\"image\"},{\"type\":\"text\",\"text\":\"it broke\"}]}}",
		    "srv/get: it broke" },
		{ "{\"result\":{\"isError\":true}}", "srv/get: failed" },
	};
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_teardown();
		fake_setup();
		answer(200, cases[i].body);
		run_err("call srv get", cases[i].error);
	}
	/* isError other than true is not an error. */
	fake_teardown();
	fake_setup();
	answer(200, "{\"result\":{\"isError\":\"yes\"}}");
	run_ok("call srv get\nreturn ${last}", "{\"isError\":\"yes\"}");
}
END_TEST

START_TEST(stmt_json)
{
	answer(200, "{\"result\":{\"structuredContent\":{\"k\":1},"
	    "\"content\":[{\"type\":\"text\",\"text\":\"[2]\"}]}}");
	answer(200, "{\"result\":{\"content\":[{\"type\":\"text\","
	    "\"text\":\"{\\\"k\\\":[3]}\"}]}}");
	answer(200, "{\"result\":{\"content\":[{\"type\":\"text\","
	    "\"text\":\"plain words\"}]}}");
	answer(200, "{\"result\":{\"content\":[]}}");
	run_ok("json srv get\nlog ${last}\njson srv get {}\nlog ${last.k.0}\n"
	    "json srv put\nlog ${last}\njson srv get\nreturn ${last}", "null");
	ck_assert_str_eq(fk.f_log.b_data, "{\"k\":1}\n3\nplain words\n");
}
END_TEST

START_TEST(stmt_try)
{
	answer(403, "{}");
	answer(200, "{}");
	run_ok("try POST /mcp/other {\"x\":\"${today}\"}\ntry GET /mcp-tools\n"
	    "try DELETE /x\nreturn ${statuses}", "[403,200,500]");
	ck_assert_int_eq(fk.f_requests, 3);
	ck_assert_str_eq(fk.f_method[0], "POST");
	ck_assert_str_eq(fk.f_path[0], "/mcp/other");
	ck_assert_str_eq(fk.f_sent[0], "{\"x\":\"2025-03-01\"}");
	ck_assert_ptr_null(fk.f_sent[1]);
	ck_assert_str_eq(fk.f_method[2], "DELETE");
}
END_TEST

START_TEST(stmt_try2)
{
	fk.f_pair[0] = 200;
	fk.f_pair[1] = 409;
	answer(0, NULL);
	run_ok("try GET /x\ntry2 srv anything {\"a\":1}\nreturn ${statuses}",
	    "[0,200,409]");
	ck_assert_str_eq(fk.f_pair_path, "/mcp/srv");
	ck_assert_str_eq(fk.f_pair_body, "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"tools/call\",\"params\":{\"name\":\"anything\","
	    "\"arguments\":{\"a\":1}}}");
}
END_TEST

START_TEST(stmt_write)
{
	char	 buf[32];

	run_ok("write /tmp/a one ${schedule.id}\nreturn ${writes}", "[\"ok\"]");
	ck_assert_str_eq(fk.f_write_path, "/tmp/a");
	ck_assert_str_eq(fk.f_write_data, "one 42");
	fk.f_write_errno = EROFS;
	run_ok("write /workspace/x\nwrite /etc/y z\nreturn ${writes}",
	    "[\"EROFS\",\"EROFS\"]");
	ck_assert_str_eq(fk.f_write_data, "z");
	fk.f_write_errno = EACCES;
	run_ok("write /x y\nreturn ${writes}", "[\"EACCES\"]");
	ck_assert_str_eq(pscript_errno_name(ENOENT, buf, sizeof(buf)),
	    "ENOENT");
	ck_assert_str_eq(pscript_errno_name(9999, buf, sizeof(buf)),
	    "errno 9999");
}
END_TEST

START_TEST(stmt_sleep)
{
	run_ok("sleep 0\nsleep 250\nsleep 600000", "null");
	ck_assert_uint_eq(fk.f_slept, 600250);
	run_err("sleep 600001", "line 1: sleep needs MS, 0 to 600000");
	run_err("\nsleep", "line 2: sleep needs MS, 0 to 600000");
	run_err("sleep -1", "line 1: sleep needs MS, 0 to 600000");
	run_err("sleep 1.5", "line 1: sleep needs MS, 0 to 600000");
	run_err("sleep 10 20", "line 1: sleep needs MS, 0 to 600000");
	run_err("sleep 1000000000000", "line 1: sleep needs MS, 0 to 600000");
}
END_TEST

START_TEST(stmt_when)
{
	answer(200, ok_result);
	run_ok("call srv get\n"
	    "when n == 3 log eq\n"
	    "when n == 3.0 log eq-value\n"
	    "when n != 3 log no\n"
	    "when n != 4 log ne\n"
	    "when n < 4 log lt\n"
	    "when n > 4 log no\n"
	    "when n > 2 log gt\n"
	    "when content.0.text == \"hi\" log text\n"
	    "when content.0.text contains \"h\" log sub\n"
	    "when content.0.text < \"hz\" log strlt\n"
	    "when a.b contains \"x\" log elem\n"
	    "when a.b contains {\"c\":true} log elem-object\n"
	    "when a contains \"b\" log member\n"
	    "when a == {\"b\": [\"x\", {\"c\": true}]} log deep\n"
	    "when missing == null log no\n"
	    "when missing != null log absent\n"
	    "when missing.deeper < 1 log no\n"
	    "when content.9 == 1 log no\n"
	    "when . contains \"n\" log root\n"
	    "when n contains 3 log no\n"
	    "when n < \"4\" log no\n"
	    "when n > 2 wake n is ${last.n}\n"
	    "skip not reached",
	    "{\"wake\":true,\"context\":\"n is 3\"}");
	ck_assert_str_eq(fk.f_log.b_data, "eq\neq-value\nne\nlt\ngt\ntext\n"
	    "sub\nstrlt\nelem\nelem-object\nmember\ndeep\nabsent\nroot\n");
}
END_TEST

START_TEST(when_refused)
{
	static const char	 rule[] = "when needs PATH OP VALUE STATEMENT: "
	    "PATH is . or names joined by dots, OP one of == != < > contains, "
	    "VALUE a JSON value";
	char			 want[256];

	(void)snprintf(want, sizeof(want), "line 1: %s", rule);
	run_err("when", want);
	run_err("when a == 1", want);
	run_err("when a =~ 1 log x", want);
	run_err("when a == nope log x", want);
	run_err("when a == {\"x\": log x", want);
	run_err("when a == \"x\"log x", want);
	run_err("when a..b == 1 log x", want);
	run_err("when .a == 1 log x", want);
	run_err("when a. == 1 log x", want);
	run_err("when a == 1 when b == 2 log x",
	    "line 1: a when cannot run another when");
	run_err("when a == 1 frob", "line 1: unknown statement; a statement is "
	    "one of log, call, json, try, try2, write, sleep, when, wake, skip, "
	    "return, fail");
	/* A when that is false still refuses a bad statement: parsed first. */
	run_err("when a == 1 sleep x", "line 1: sleep needs MS, 0 to 600000");
}
END_TEST

START_TEST(ending)
{
	run_ok("wake look at ${today}\nlog not reached",
	    "{\"wake\":true,\"context\":\"look at 2025-03-01\"}");
	ck_assert_uint_eq(fk.f_log.b_len, 0);
	run_ok("skip", "{\"wake\":false}");
	run_ok("skip   nothing new  ", "{\"wake\":false,\"note\":\"nothing new\"}");
	run_ok("return [1, \"two\", {\"three\": null}]",
	    "[1,\"two\",{\"three\":null}]");
	run_ok("return 7", "7");
	run_ok("return \"s\"", "\"s\"");
	run_err("fail it is ${timeZone}\nwake no", "it is Europe/Paris");
	run_err("wake", "line 1: wake needs TEXT");
	run_err("fail", "line 1: fail needs TEXT");
	run_err("return", "line 1: return needs a JSON value");
	run_err("return {", "line 1: return needs a JSON value");
	run_err("return 1 2", "line 1: return needs a JSON value");
}
END_TEST

START_TEST(substitutions)
{
	answer(200, "{\"result\":{\"s\":\"a\\\"b\",\"o\":{\"k\":[1,2]},"
	    "\"t\":\"line\\nbreak\"}}");
	answer(404, "{}");
	answer(200, "{\"result\":{\"structuredContent\":\"just text\"}}");
	fk.f_write_errno = EROFS;
	run_ok("log ${last}\n"
	    "call srv get\n"
	    "log ${last.s} ${last.o} ${last.o.k.1}\n"
	    "log ${firedAt} ${timeZone} ${today} ${schedule.id} "
	    "${schedule.title}\n"
	    "log $${today} costs $5\n"
	    "try GET /x\n"
	    "write /y\n"
	    "log ${statuses} ${writes}\n"
	    "json srv get\n"
	    "log ${last}\n"
	    "return {\"in\": \"${schedule.title} ${statuses}\", "
	    "\"out\": ${schedule.title}, \"n\": ${schedule.id}, "
	    "\"l\": ${last}, \"w\": ${writes}, \"lit\": \"$${x}\"}",
	    "{\"in\":\"Morning \\\"news\\\" [404]\",\"out\":\"Morning "
	    "\\\"news\\\"\",\"n\":42,\"l\":\"just text\",\"w\":[\"EROFS\"],"
	    "\"lit\":\"${x}\"}");
	ck_assert_str_eq(fk.f_log.b_data, "null\n"
	    "a\"b {\"k\":[1,2]} 2\n"
	    "2025-03-01T07:00:00.000Z Europe/Paris 2025-03-01 42 "
	    "Morning \"news\"\n"
	    "${today} costs $5\n"
	    "[404] [\"EROFS\"]\n"
	    "just text\n");
}
END_TEST

START_TEST(substitutions_in_args)
{
	answer(200, "{\"result\":{\"s\":\"a\\\"b\\n\",\"o\":{\"k\":1}}}");
	answer(200, ok_result);
	run_ok("call srv get\ncall srv put {\"q\": \"x ${last.s} ${last.o}\", "
	    "\"o\": ${last.o}, \"s\": ${last.s}}", "null");
	ck_assert_str_eq(fk.f_sent[1], "{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"tools/call\",\"params\":{\"name\":\"put\","
	    "\"arguments\":{\"q\":\"x a\\\"b\\n {\\\"k\\\":1}\","
	    "\"o\":{\"k\":1},\"s\":\"a\\\"b\\n\"}}}");
}
END_TEST

START_TEST(substitution_refused)
{
	run_err("log ${nope}", "line 1: unknown substitution ${nope}");
	run_err("log ${last.}", "line 1: unknown substitution ${last.}");
	run_err("log ${last..a}", "line 1: unknown substitution ${last..a}");
	run_err("log ${schedule}", "line 1: unknown substitution ${schedule}");
	run_err("log ok\nwake ${today", "line 2: a ${ has no }");
	/* Names are checked before anything runs. */
	ck_assert_uint_eq(fk.f_log.b_len, 0);
	run_err("log ${last.a}", "line 1: ${last.a} names nothing");
	answer(200, ok_result);
	run_err("call srv get\nlog ${last.content.1}",
	    "line 2: ${last.content.1} names nothing");
}
END_TEST

START_TEST(args_refused)
{
	run_err("call srv", "line 1: call needs SERVER TOOL [ARGS]");
	run_err("json", "line 1: json needs SERVER TOOL [ARGS]");
	run_err("try2 srv", "line 1: try2 needs SERVER TOOL [ARGS]");
	run_err("call srv get [1]", "line 1: ARGS must be a JSON object");
	run_err("call srv get {\"a\":}", "line 1: ARGS must be a JSON object");
	run_err("call srv get {} x", "line 1: ARGS must be a JSON object");
	/* Substitutions stand in as null: this is no JSON whatever they are. */
	run_err("call srv get\ncall srv get {\"a\": ${last.s}x}",
	    "line 2: ARGS must be a JSON object");
	run_err("try get /x", "line 1: try needs METHOD PATH [BODY]: METHOD "
	    "in capitals, PATH starting with /");
	run_err("try GET x", "line 1: try needs METHOD PATH [BODY]: METHOD "
	    "in capitals, PATH starting with /");
	run_err("try GET", "line 1: try needs METHOD PATH [BODY]: METHOD "
	    "in capitals, PATH starting with /");
	run_err("write", "line 1: write needs PATH TEXT");
}
END_TEST

START_TEST(not_this_language)
{
	static const char	 unknown[] = "line 1: unknown statement; a "
	    "statement is one of log, call, json, try, try2, write, sleep, "
	    "when, wake, skip, return, fail";

	run_err("const r = await mcp.call('srv', 'get', {});\n"
	    "return { wake: true };", unknown);
	run_err("Log x", unknown);
	run_err("log ok\n\n# fine\nwakeup now", "line 4: unknown statement; a "
	    "statement is one of log, call, json, try, try2, write, sleep, "
	    "when, wake, skip, return, fail");
	ck_assert_int_eq(fk.f_requests, 0);
}
END_TEST

START_TEST(lines_bound)
{
	struct wbuf	 s;
	unsigned int	 i;

	wbuf_init(&s, 0);
	for (i = 0; i < PS_LINES_MAX - 1; i++)
		wbuf_addstr(&s, "log x\n");
	wbuf_addstr(&s, "skip\n");
	run_ok(s.b_data, "{\"wake\":false}");
	ck_assert_uint_eq(fk.f_log.b_len, 2 * (PS_LINES_MAX - 1));
	wbuf_addstr(&s, "#");
	run_err(s.b_data, "line 1001: a script has at most 1000 lines");
	/* Blank lines count: they are lines. */
	wbuf_reset(&s);
	for (i = 0; i < PS_LINES_MAX; i++)
		wbuf_addstr(&s, "\n");
	run_ok(s.b_data, "null");
	wbuf_addstr(&s, "skip");
	run_err(s.b_data, "line 1001: a script has at most 1000 lines");
	wbuf_free(&s);
}
END_TEST

/* An input of exactly len bytes: the script is padded with a comment. */
static char *
input_of(size_t len)
{
	char	*in, *script;
	size_t	 base, n;

	in = input_for("skip\n#", &base);
	free(in);
	ck_assert_uint_ge(len, base);
	script = malloc(len - base + 7);
	memcpy(script, "skip\n#", 6);
	memset(script + 6, 'x', len - base);
	script[len - base + 6] = '\0';
	in = input_for(script, &n);
	free(script);
	ck_assert_uint_eq(n, len);
	return in;
}

START_TEST(input_bound)
{
	struct wjson	*a;
	char		*in;

	in = input_of(PS_INPUT_MAX);
	a = run_raw(in, PS_INPUT_MAX);
	ck_assert(wjson_get(a, "ok")->j_bool);
	wjson_free(a);
	free(in);
	in = input_of(PS_INPUT_MAX + 1);
	a = run_raw(in, PS_INPUT_MAX + 1);
	ck_assert(!wjson_get(a, "ok")->j_bool);
	ck_assert_str_eq(wjson_get_str(a, "error", NULL),
	    "the precheck input is too long");
	wjson_free(a);
	free(in);
}
END_TEST

START_TEST(input_refused)
{
	static const char	*const bad[] = {
		"",
		"not json",
		"[]",
		"\"script\"",
		"{}",
		/* a member missing, one too many, of the wrong type */
		"{\"script\":\"skip\",\"firedAt\":\"f\",\"timeZone\":\"z\","
		    "\"today\":\"t\",\"schedule\":{\"id\":1,\"title\":\"x\"}}",
		"{\"script\":\"skip\",\"firedAt\":\"f\",\"timeZone\":\"z\","
		    "\"today\":\"t\",\"schedule\":{\"id\":1,\"title\":\"x\"},"
		    "\"servers\":[],\"extra\":1}",
		"{\"script\":1,\"firedAt\":\"f\",\"timeZone\":\"z\","
		    "\"today\":\"t\",\"schedule\":{\"id\":1,\"title\":\"x\"},"
		    "\"servers\":[]}",
		"{\"script\":\"skip\",\"firedAt\":\"f\",\"timeZone\":\"z\","
		    "\"today\":\"t\",\"schedule\":{\"id\":\"1\",\"title\":\"x\"},"
		    "\"servers\":[]}",
		"{\"script\":\"skip\",\"firedAt\":\"f\",\"timeZone\":\"z\","
		    "\"today\":\"t\",\"schedule\":{\"id\":1,\"title\":\"x\","
		    "\"more\":2},\"servers\":[]}",
		"{\"script\":\"skip\",\"firedAt\":\"f\",\"timeZone\":\"z\","
		    "\"today\":\"t\",\"schedule\":{\"id\":1,\"title\":\"x\"},"
		    "\"servers\":[{\"name\":\"s\"}]}",
		"{\"script\":\"skip\",\"firedAt\":\"f\",\"timeZone\":\"z\","
		    "\"today\":\"t\",\"schedule\":{\"id\":1,\"title\":\"x\"},"
		    "\"servers\":[{\"name\":\"\",\"tools\":[]}]}",
		"{\"script\":\"skip\",\"firedAt\":\"f\",\"timeZone\":\"z\","
		    "\"today\":\"t\",\"schedule\":{\"id\":1,\"title\":\"x\"},"
		    "\"servers\":[{\"name\":\"s\",\"tools\":[1]}]}",
		"{\"script\":\"sk\\u0000ip\",\"firedAt\":\"f\",\"timeZone\":"
		    "\"z\",\"today\":\"t\",\"schedule\":{\"id\":1,\"title\":"
		    "\"x\"},\"servers\":[]}",
		/* a repeated member */
		"{\"script\":\"skip\",\"script\":\"skip\",\"timeZone\":\"z\","
		    "\"today\":\"t\",\"schedule\":{\"id\":1,\"title\":\"x\"},"
		    "\"servers\":[]}",
	};
	struct wjson	*a;
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		a = run_raw(bad[i], strlen(bad[i]));
		ck_assert_msg(!wjson_get(a, "ok")->j_bool, "took %s", bad[i]);
		ck_assert_str_eq(wjson_get_str(a, "error", NULL),
		    "invalid precheck input");
		wjson_free(a);
	}
}
END_TEST

static struct wbuf *
servers_input(unsigned int n, struct wbuf *b)
{
	unsigned int	 i;

	wbuf_init(b, 0);
	wbuf_addstr(b, "{\"script\":\"call s31 t\",\"firedAt\":\"f\","
	    "\"timeZone\":\"z\",\"today\":\"t\",\"schedule\":{\"id\":1,"
	    "\"title\":\"x\"},\"servers\":[");
	for (i = 0; i < n; i++)
		wbuf_addf(b, "%s{\"name\":\"s%u\",\"tools\":[\"t\"]}",
		    i > 0 ? "," : "", i);
	wbuf_addstr(b, "]}");
	return b;
}

START_TEST(servers_bound)
{
	struct wbuf	 b;
	struct wjson	*a;

	answer(200, ok_result);
	servers_input(PS_SERVERS_MAX, &b);
	a = run_raw(b.b_data, b.b_len);
	ck_assert(wjson_get(a, "ok")->j_bool);
	ck_assert_str_eq(fk.f_path[0], "/mcp/s31");
	wjson_free(a);
	wbuf_free(&b);
	servers_input(PS_SERVERS_MAX + 1, &b);
	a = run_raw(b.b_data, b.b_len);
	ck_assert_str_eq(wjson_get_str(a, "error", NULL),
	    "invalid precheck input");
	wjson_free(a);
	wbuf_free(&b);
}
END_TEST

static void
error_cut(const char *msg, size_t len, size_t want)
{
	struct wjson	*a;
	const char	*got;
	char		*out;
	size_t		 olen, glen;

	out = pscript_answer_error(msg, len, &olen);
	ck_assert_ptr_nonnull(out);
	a = wjson_parse(out, olen, NULL, NULL);
	ck_assert_ptr_nonnull(a);
	got = wjson_get_str(a, "error", &glen);
	ck_assert_uint_eq(glen, want);
	ck_assert(memcmp(got, msg, glen) == 0);
	wjson_free(a);
	free(out);
}

START_TEST(error_bound)
{
	char	 msg[1100 * 4];
	char	 script[sizeof(msg) + 8];

	memset(msg, 'a', sizeof(msg));
	error_cut(msg, PS_ERROR_MAX, PS_ERROR_MAX);
	error_cut(msg, PS_ERROR_MAX + 1, PS_ERROR_MAX);
	/* 999 chars and a two-byte one: 1 000 chars, 1 001 bytes, whole. */
	memcpy(msg + 999, "\xc3\xa9", 2);
	error_cut(msg, 1001, 1001);
	error_cut(msg, 1002, 1001);
	/* A character of two UTF-16 units at 1 000 does not fit. */
	memcpy(msg + 999, "\xf0\x9f\x98\x80", 4);
	error_cut(msg, 1003, 999);
	/* The same through a script's fail. */
	memset(msg, 'b', sizeof(msg));
	memcpy(script, "fail ", 5);
	memcpy(script + 5, msg, PS_ERROR_MAX + 1);
	script[5 + PS_ERROR_MAX + 1] = '\0';
	msg[PS_ERROR_MAX] = '\0';
	run_err(script, msg);
	script[5 + PS_ERROR_MAX] = '\0';
	run_err(script, msg);
}
END_TEST

/* A tool's answer of n bytes of text, as mcp.json gives it back. */
static char *
text_answer(size_t n, char **want)
{
	struct wbuf	 s;
	size_t		 base;

	wbuf_init(&s, 0);
	wbuf_addstr(&s, "{\"result\":{\"structuredContent\":\"");
	base = s.b_len - 1;
	while (s.b_len < base + 1 + n)
		wbuf_addc(&s, 'r');
	wbuf_addstr(&s, "\"}}");
	*want = strndup(s.b_data + base, n + 2);
	return wbuf_steal(&s, NULL);
}

START_TEST(result_bound)
{
	char	*a, *b, *want;
	size_t	 room;

	/* {"ok":true,"result":"..."} is 23 bytes around the string. */
	room = PS_OUTPUT_MAX - 23;
	a = text_answer(room, &want);
	answer(200, a);
	run_ok("json srv get\nreturn ${last}", want);
	free(want);
	b = text_answer(room + 1, &want);
	answer(200, b);
	run_err("json srv get\nreturn ${last}", "the result is too long");
	free(want);
	free(a);
	free(b);
}
END_TEST

START_TEST(parse_direct)
{
	struct pscript	*ps;
	struct wbuf	 err;

	wbuf_init(&err, 0);
	ps = pscript_parse("log a\n# b\n\nskip", 15, &err);
	ck_assert_ptr_nonnull(ps);
	ck_assert_uint_eq(pscript_count(ps), 2);
	pscript_free(ps);
	ps = pscript_parse("log a\nlog \0b", 12, &err);
	ck_assert_ptr_null(ps);
	ck_assert_str_eq(err.b_data, "line 2: a line cannot hold a NUL");
	wbuf_free(&err);
}
END_TEST

static Suite *
pscript_suite(void)
{
	Suite	*s = suite_create("pscript");
	TCase	*tc;

	tc = tcase_create("statements");
	tcase_add_checked_fixture(tc, fake_setup, fake_teardown);
	tcase_add_test(tc, bounds_agree);
	tcase_add_test(tc, empty_and_comments);
	tcase_add_test(tc, stmt_log);
	tcase_add_test(tc, stmt_call);
	tcase_add_test(tc, call_no_args);
	tcase_add_test(tc, call_not_granted);
	tcase_add_test(tc, call_statuses);
	tcase_add_test(tc, call_bodies);
	tcase_add_test(tc, stmt_json);
	tcase_add_test(tc, stmt_try);
	tcase_add_test(tc, stmt_try2);
	tcase_add_test(tc, stmt_write);
	tcase_add_test(tc, stmt_sleep);
	tcase_add_test(tc, stmt_when);
	tcase_add_test(tc, when_refused);
	tcase_add_test(tc, ending);
	suite_add_tcase(s, tc);

	tc = tcase_create("substitutions");
	tcase_add_checked_fixture(tc, fake_setup, fake_teardown);
	tcase_add_test(tc, substitutions);
	tcase_add_test(tc, substitutions_in_args);
	tcase_add_test(tc, substitution_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("refusals");
	tcase_add_checked_fixture(tc, fake_setup, fake_teardown);
	tcase_add_test(tc, args_refused);
	tcase_add_test(tc, not_this_language);
	tcase_add_test(tc, input_refused);
	tcase_add_test(tc, parse_direct);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, fake_setup, fake_teardown);
	tcase_add_test(tc, lines_bound);
	tcase_add_test(tc, input_bound);
	tcase_add_test(tc, servers_bound);
	tcase_add_test(tc, error_bound);
	tcase_add_test(tc, result_bound);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(pscript_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
