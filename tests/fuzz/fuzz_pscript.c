/*
 * pscript, the worker's precheck scripts.  The first byte picks what the
 * rest is (its value modulo 4): 0 a script for the parser alone, 1 a whole
 * input on the worker's stdin, 2 a script and, after the first 0xff byte,
 * the body of every answer the broker gives it (status 200), 3 an MCP
 * answer for mcp.call's reading.  Whatever runs, the answer is one JSON
 * object within the bounds of stdout, with an error of at most 1 000
 * chars.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pscript.h"
#include "wjson.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

struct fuzz_broker {
	const char	*fb_body;
	size_t		 fb_len;
};

static int
fake_request(void *arg, const char *method, const char *path,
    const char *body, size_t len, struct wbuf *answer)
{
	const struct fuzz_broker	*fb = arg;

	CHECK(method != NULL && path != NULL && path[0] == '/');
	CHECK(body != NULL || len == 0);
	(void)wbuf_add(answer, fb->fb_body, fb->fb_len);
	return 200;
}

static void
fake_request2(void *arg, const char *path, const char *body, size_t len,
    int status[2])
{
	CHECK(len <= PS_REQUEST_MAX && body != NULL);
	CHECK(strncmp(path, "/mcp/", 5) == 0);
	status[0] = 200;
	status[1] = 409;
}

static int
fake_write(void *arg, const char *path, const char *data, size_t len)
{
	return EROFS;
}

static void
fake_sleep(void *arg, unsigned int ms)
{
	CHECK(ms <= PS_SLEEP_MS_MAX);
}

static void
fake_log(void *arg, const char *text, size_t len)
{
	CHECK(wjson_utf8_valid(text, len));
}

static void
check_answer(char *out, size_t len)
{
	struct wjson	*a, *ok;
	const char	*err;
	size_t		 elen;

	CHECK(out != NULL && len <= PS_OUTPUT_MAX && strlen(out) == len);
	a = wjson_parse(out, len, NULL, NULL);
	CHECK(wjson_is(a, WJSON_OBJECT) && a->j_count == 2);
	ok = wjson_get(a, "ok");
	CHECK(wjson_is(ok, WJSON_BOOL));
	if (ok->j_bool)
		CHECK(wjson_get(a, "result") != NULL);
	else {
		err = wjson_get_str(a, "error", &elen);
		CHECK(err != NULL && wjson_utf16_len(err, elen) <=
		    PS_ERROR_MAX);
	}
	wjson_free(a);
	free(out);
}

static void
fuzz_run(const char *input, size_t len, const char *body, size_t blen)
{
	struct fuzz_broker	 fb = { body, blen };
	struct pscript_io	 io = { fake_request, fake_request2,
	    fake_write, fake_sleep, fake_log, &fb };
	size_t			 olen;

	check_answer(pscript_run(input, len, &io, &olen), olen);
}

static void
fuzz_script(const char *s, size_t len)
{
	struct pscript	*ps;
	struct wbuf	 err;

	wbuf_init(&err, 0);
	ps = pscript_parse(s, len, &err);
	if (ps == NULL)
		CHECK(err.b_len > 0 && strncmp(err.b_data, "line ", 5) == 0);
	else
		CHECK(pscript_count(ps) <= PS_LINES_MAX);
	pscript_free(ps);
	wbuf_free(&err);
}

/* A script in the input a host would write, when it is UTF-8. */
static void
fuzz_script_run(const char *s, size_t len)
{
	const char	*sep;
	struct wjson	*in, *sched, *servers, *srv, *tools;
	char		*text;
	size_t		 slen, tlen;

	sep = memchr(s, 0xff, len);
	slen = sep != NULL ? (size_t)(sep - s) : len;
	in = wjson_object();
	wjson_set(in, "script", wjson_string_len(s, slen));
	wjson_set(in, "firedAt", wjson_string("2025-03-01T07:00:00.000Z"));
	wjson_set(in, "timeZone", wjson_string("UTC"));
	wjson_set(in, "today", wjson_string("2025-03-01"));
	sched = wjson_object();
	wjson_set(sched, "id", wjson_int(1));
	wjson_set(sched, "title", wjson_string("t"));
	wjson_set(in, "schedule", sched);
	servers = wjson_array();
	srv = wjson_object();
	wjson_set(srv, "name", wjson_string("srv"));
	tools = wjson_array();
	wjson_append(tools, wjson_string("get"));
	wjson_set(srv, "tools", tools);
	wjson_append(servers, srv);
	wjson_set(in, "servers", servers);
	text = wjson_emit_str(in, 0, &tlen);
	wjson_free(in);
	if (text == NULL)
		return;
	fuzz_run(text, tlen, sep != NULL ? sep + 1 : "",
	    sep != NULL ? len - slen - 1 : 0);
	free(text);
}

static void
fuzz_mcp(const char *s, size_t len)
{
	struct wjson	*r;
	struct wbuf	 err;

	wbuf_init(&err, 0);
	r = pscript_mcp_result("srv", "get", 200, s, len, &err);
	if (r != NULL)
		CHECK(r->j_type == WJSON_OBJECT && err.b_len == 0);
	else
		CHECK(err.b_len > 9 && strncmp(err.b_data, "srv/get: ", 9) == 0);
	wjson_free(r);
	wbuf_free(&err);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*s = (const char *)data + 1;

	if (size == 0)
		return 0;
	switch (data[0] % 4) {
	case 0:
		fuzz_script(s, size - 1);
		break;
	case 1:
		fuzz_run(s, size - 1, "{\"result\":{}}", 13);
		break;
	case 2:
		fuzz_script_run(s, size - 1);
		break;
	case 3:
		fuzz_mcp(s, size - 1);
		break;
	}
	return 0;
}
