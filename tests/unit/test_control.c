/*
 * The control socket's line handling (supervisor/control.c) over a real
 * Unix socket: lines in pieces, requests before initialize, ids in flight,
 * $/cancelRequest (at once and deferred by the owner), a cancel hook that
 * answers, and the daemon's own calls to the client.  The methods are the
 * test's own; tests/fuzz/fuzz_control.c runs the same code on any bytes.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "control.h"
#include "log.h"
#include "supervisor.h"

static struct supervisor	 the_sv;
static char			 dir[64];
static struct sockaddr_un	 sun;

/* What the methods and hooks saw. */
static struct ctl_req	*waiting;	/* the one request left waiting */
static int		 hook_calls, hook_defers, hook_answers;
static int		 call_results, call_errors;
static char		 call_error[128];

static void
m_initialize(struct ctl_req *cr, cJSON *params)
{
	ctl_client_initialized(ctl_req_client(cr), "unit", 0);
	ctl_reply(cr, NULL);
}

static void
m_echo(struct ctl_req *cr, cJSON *params)
{
	ctl_reply(cr, params != NULL ? cJSON_Duplicate(params, 1) : NULL);
}

/* Cancel hooks: forget, defer, or answer all the same. */
static void
hook_forget(struct ctl_req *cr, void *arg)
{
	ck_assert_ptr_eq(cr, waiting);
	hook_calls++;
	waiting = NULL;
}

static void
hook_defer(struct ctl_req *cr, void *arg)
{
	ck_assert_ptr_eq(cr, waiting);
	hook_calls++;
	if (ctl_cancel_later(cr))
		hook_defers++;
	else
		waiting = NULL;
}

static void
hook_answer(struct ctl_req *cr, void *arg)
{
	ck_assert_ptr_eq(cr, waiting);
	hook_calls++;
	hook_answers++;
	ctl_reply(cr, cJSON_CreateString("undone"));
	waiting = NULL;
}

static void
m_wait(struct ctl_req *cr, cJSON *params)
{
	const char	*how = ctl_str_param(params, "hook");

	ck_assert_ptr_null(waiting);
	waiting = cr;
	if (how == NULL)
		ctl_set_cancel(cr, hook_forget, NULL);
	else if (strcmp(how, "defer") == 0)
		ctl_set_cancel(cr, hook_defer, NULL);
	else
		ctl_set_cancel(cr, hook_answer, NULL);
}

static void
call_done(cJSON *result, enum ctl_call_end end, void *arg)
{
	ck_assert((result == NULL) == (end != CTL_CALL_ANSWERED));
	if (result != NULL)
		call_results++;
	else {
		call_errors++;
		snprintf(call_error, sizeof(call_error), "%s",
		    ctl_call_end_to_string(end));
	}
}

static void
m_call(struct ctl_req *cr, cJSON *params)
{
	ck_assert_ptr_nonnull(ctl_client_call(ctl_req_client(cr), "tool.call",
	    cJSON_Duplicate(params, 1), call_done, NULL));
	ctl_reply(cr, NULL);
}

const struct ctl_method ctl_methods[] = {
	{ "initialize", m_initialize, 1 },
	{ "test.echo", m_echo, 1 },
	{ "test.wait", m_wait, 0 },
	{ "test.call", m_call, 0 },
	{ NULL, NULL, 0 },
};

static void
turns(int n)
{
	while (n-- > 0)
		ck_assert_int_ne(event_base_loop(the_sv.sv_base,
		    EVLOOP_NONBLOCK), -1);
}

static void
setup(void)
{
	int	 fd;

	log_init("supervisor", 0);
	memset(&the_sv, 0, sizeof(the_sv));
	sv = &the_sv;
	ck_assert_ptr_nonnull(the_sv.sv_base = event_base_new());
	snprintf(dir, sizeof(dir), "/tmp/rtsb-test-control.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/control.sock", dir);
	ck_assert_int_ne(fd = control_bind(sun.sun_path, 0, 0), -1);
	ck_assert_int_eq(control_listen(fd), 0);
	waiting = NULL;
	hook_calls = hook_defers = hook_answers = 0;
	call_results = call_errors = 0;
	call_error[0] = '\0';
}

static void
teardown(void)
{
	control_close();
	event_base_free(the_sv.sv_base);
	rmdir(dir);
}

static int
client(void)
{
	int	 fd;

	ck_assert_int_ne(fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0),
	    -1);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	turns(2);
	ck_assert_uint_eq(control_clients(), 1);
	return fd;
}

static void
put(int fd, const char *s)
{
	ck_assert_int_eq(send(fd, s, strlen(s), MSG_NOSIGNAL),
	    (ssize_t)strlen(s));
	turns(3);
}

/* The next line the supervisor wrote, parsed; NULL when none came. */
static cJSON *
next_line(int fd)
{
	static char	 buf[65536];
	static size_t	 len;
	cJSON		*o;
	char		*nl;
	ssize_t		 n;
	int		 i;

	for (i = 0; i < 20; i++) {
		if ((nl = memchr(buf, '\n', len)) != NULL) {
			ck_assert_ptr_nonnull(o = cJSON_ParseWithLength(buf,
			    nl - buf));
			len -= nl - buf + 1;
			memmove(buf, nl + 1, len);
			return o;
		}
		turns(1);
		n = recv(fd, buf + len, sizeof(buf) - len, MSG_DONTWAIT);
		if (n > 0)
			len += n;
		else if (n == 0)
			break;
	}
	return NULL;
}

/* The next answer: its id as printed, and its result or error code. */
static void
expect(int fd, const char *id, const char *result, int code)
{
	cJSON	*o, *err;
	char	*s;

	ck_assert_ptr_nonnull(o = next_line(fd));
	ck_assert_ptr_nonnull(s = cJSON_PrintUnformatted(
	    cJSON_GetObjectItemCaseSensitive(o, "id")));
	ck_assert_str_eq(s, id);
	free(s);
	if (result != NULL) {
		ck_assert_ptr_nonnull(s = cJSON_PrintUnformatted(
		    cJSON_GetObjectItemCaseSensitive(o, "result")));
		ck_assert_str_eq(s, result);
		free(s);
	} else {
		err = cJSON_GetObjectItemCaseSensitive(o, "error");
		ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(err,
		    "code")->valueint, code);
	}
	cJSON_Delete(o);
}

static void
expect_nothing(int fd)
{
	cJSON	*o = next_line(fd);

	ck_assert_msg(o == NULL, "an unexpected line");
}

static void
leave(int fd)
{
	int	 i;

	close(fd);
	for (i = 0; i < 20 && control_clients() > 0; i++)
		turns(1);
	ck_assert_uint_eq(control_clients(), 0);
}

#define INIT	"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\"}\n"

START_TEST(lines_in_pieces)
{
	const char	*s = "\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,"
	    "\"method\":\"test.echo\",\"params\":{\"a\":[1,\"b\"]}}\r\n";
	char		 one[2] = { 0 };
	int		 fd = client();

	for (; *s != '\0'; s++) {
		one[0] = *s;
		put(fd, one);
	}
	expect(fd, "1", "{\"a\":[1,\"b\"]}", 0);
	expect_nothing(fd);
	leave(fd);
}
END_TEST

START_TEST(initialize_first_and_notifications)
{
	int	 fd = client();

	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test.wait\"}\n");
	expect(fd, "1", NULL, RPC_NOT_INITIALIZED);
	ck_assert_ptr_null(waiting);
	put(fd, INIT);
	expect(fd, "0", "{}", 0);
	/* a notification is run and not answered */
	put(fd, "{\"jsonrpc\":\"2.0\",\"method\":\"test.echo\"}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"test.echo\"}\n");
	expect(fd, "2", "{}", 0);
	expect_nothing(fd);
	leave(fd);
}
END_TEST

START_TEST(ids_in_flight)
{
	int	 fd = client();

	put(fd, INIT);
	expect(fd, "0", "{}", 0);
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"test.wait\"}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"test.echo\"}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":\"5\",\"method\":\"test.echo\"}\n");
	expect(fd, "5", NULL, RPC_INVALID_REQUEST);
	/* a string is another id */
	expect(fd, "\"5\"", "{}", 0);
	ck_assert_ptr_nonnull(waiting);
	ctl_reply(waiting, cJSON_CreateNumber(7));
	waiting = NULL;
	turns(1);
	expect(fd, "5", "7", 0);
	/* answered: the id is free again */
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"test.echo\"}\n");
	expect(fd, "5", "{}", 0);
	leave(fd);
	ck_assert_int_eq(hook_calls, 0);
}
END_TEST

START_TEST(cancel_request)
{
	int	 fd = client();

	put(fd, INIT);
	expect(fd, "0", "{}", 0);
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":\"w\",\"method\":\"test.wait\"}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"$/cancelRequest\","
	    "\"params\":{\"id\":\"w\"}}\n");
	expect(fd, "\"w\"", NULL, RPC_REQUEST_CANCELLED);
	expect(fd, "9", "{\"cancelled\":true}", 0);
	ck_assert_int_eq(hook_calls, 1);
	ck_assert_ptr_null(waiting);
	/* nothing of that id is in flight any more */
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"$/cancelRequest\","
	    "\"params\":{\"id\":\"w\"}}\n");
	expect(fd, "10", "{\"cancelled\":false}", 0);
	leave(fd);
	ck_assert_int_eq(hook_calls, 1);
}
END_TEST

START_TEST(cancel_deferred_by_the_owner)
{
	int	 fd = client();

	put(fd, INIT);
	expect(fd, "0", "{}", 0);
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"test.wait\","
	    "\"params\":{\"hook\":\"defer\"}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"$/cancelRequest\","
	    "\"params\":{\"id\":3}}\n");
	expect(fd, "9", "{\"cancelled\":true}", 0);
	/* the owner answers once what it started is undone */
	expect_nothing(fd);
	ck_assert_int_eq(hook_defers, 1);
	ck_assert_ptr_nonnull(waiting);
	ctl_set_cancel(waiting, NULL, NULL);
	ctl_error(waiting, RPC_REQUEST_CANCELLED, "Request cancelled");
	waiting = NULL;
	turns(1);
	expect(fd, "3", NULL, RPC_REQUEST_CANCELLED);
	leave(fd);
	ck_assert_int_eq(hook_calls, 1);
}
END_TEST

START_TEST(deferred_cancel_then_the_client_leaves)
{
	int	 fd = client();

	put(fd, INIT);
	expect(fd, "0", "{}", 0);
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"test.wait\","
	    "\"params\":{\"hook\":\"defer\"}}\n"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\","
	    "\"params\":{\"id\":3}}\n");
	turns(2);
	ck_assert_int_eq(hook_defers, 1);
	/* the hook is told again, and may not defer this time */
	leave(fd);
	ck_assert_int_eq(hook_calls, 2);
	ck_assert_int_eq(hook_defers, 1);
	ck_assert_ptr_null(waiting);
}
END_TEST

/* A hook that answers all the same: its answer stands, and a client that
 * left frees the request once (it was freed twice before). */
START_TEST(cancel_hook_that_answers)
{
	int	 fd = client();

	put(fd, INIT);
	expect(fd, "0", "{}", 0);
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"test.wait\","
	    "\"params\":{\"hook\":\"answer\"}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"$/cancelRequest\","
	    "\"params\":{\"id\":4}}\n");
	expect(fd, "4", "\"undone\"", 0);
	expect(fd, "9", "{\"cancelled\":true}", 0);
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"test.wait\","
	    "\"params\":{\"hook\":\"answer\"}}\n");
	leave(fd);
	ck_assert_int_eq(hook_answers, 2);
	ck_assert_ptr_null(waiting);
}
END_TEST

START_TEST(calls_to_the_client)
{
	cJSON		*o;
	const cJSON	*id, *method;
	int		 fd = client();

	put(fd, INIT);
	expect(fd, "0", "{}", 0);
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test.call\","
	    "\"params\":{\"n\":1}}\n");
	ck_assert_ptr_nonnull(o = next_line(fd));
	id = cJSON_GetObjectItemCaseSensitive(o, "id");
	method = cJSON_GetObjectItemCaseSensitive(o, "method");
	ck_assert(cJSON_IsString(id) && cJSON_IsString(method));
	ck_assert_str_eq(id->valuestring, "rtsandbox-1");
	ck_assert_str_eq(method->valuestring, "tool.call");
	cJSON_Delete(o);
	expect(fd, "1", "{}", 0);
	/* answers to what was not asked change nothing */
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":\"rtsandbox-2\",\"result\":{}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":\"rtsandbox-1x\",\"result\":{}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
	ck_assert_int_eq(call_results + call_errors, 0);
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":\"rtsandbox-1\",\"result\":{}}\n"
	    "{\"jsonrpc\":\"2.0\",\"id\":\"rtsandbox-1\",\"result\":{}}\n");
	ck_assert_int_eq(call_results, 1);
	/* an error answer, and a call the client leaves unanswered */
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"test.call\","
	    "\"params\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":3,"
	    "\"method\":\"test.call\",\"params\":{}}\n");
	put(fd, "{\"jsonrpc\":\"2.0\",\"id\":\"rtsandbox-2\",\"error\":"
	    "{\"code\":1,\"message\":\"token=sk-live-SECRET\"}}\n");
	ck_assert_int_eq(call_errors, 1);
	/* the client's own words stay with the client */
	ck_assert_str_eq(call_error, "the client answered with an error");
	leave(fd);
	ck_assert_int_eq(call_results, 1);
	ck_assert_int_eq(call_errors, 2);
	ck_assert_str_eq(call_error, "the client disconnected");
}
END_TEST

START_TEST(string_id_bound)
{
	char	 line[2200], id[1100];
	int	 fd = client();

	memset(id, 'i', 1025);
	id[1025] = '\0';
	snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\","
	    "\"method\":\"test.echo\"}\n", id);
	put(fd, line);
	expect(fd, "null", NULL, RPC_INVALID_REQUEST);
	id[1024] = '\0';
	snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\","
	    "\"method\":\"test.echo\"}\n", id);
	put(fd, line);
	snprintf(line, sizeof(line), "\"%s\"", id);
	expect(fd, line, "{}", 0);
	leave(fd);
}
END_TEST

static Suite *
control_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("control");
	tc = tcase_create("lines");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, lines_in_pieces);
	tcase_add_test(tc, initialize_first_and_notifications);
	tcase_add_test(tc, ids_in_flight);
	tcase_add_test(tc, string_id_bound);
	suite_add_tcase(s, tc);
	tc = tcase_create("cancel");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, cancel_request);
	tcase_add_test(tc, cancel_deferred_by_the_owner);
	tcase_add_test(tc, deferred_cancel_then_the_client_leaves);
	tcase_add_test(tc, cancel_hook_that_answers);
	suite_add_tcase(s, tc);
	tc = tcase_create("calls");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, calls_to_the_client);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(control_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
