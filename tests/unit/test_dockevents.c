/*
 * dockerd-client/dockevents.c: Docker's event stream as Docker 20.10 sends
 * it, every way it can be wrong, and the connection that follows it against
 * a socket of the test's own.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "dockevents.h"

#define S(lit)	(lit), (sizeof(lit) - 1)

#define ID	"2dfef019d86cc3e6b8a341b1cb0c2602db5c4af123573c7d667ed0e825bbec1e"

/* As Docker 20.10 wrote them for a container killed, then removed. */
static const char die_line[] =
    "{\"status\":\"die\",\"id\":\"" ID "\",\"from\":\"rtsandbox-worker:latest\","
    "\"Type\":\"container\",\"Action\":\"die\",\"Actor\":{\"ID\":\"" ID "\","
    "\"Attributes\":{\"exitCode\":\"137\",\"image\":\"rtsandbox-worker:latest\","
    "\"name\":\"rtsb-x1\",\"rtsandbox.channel\":\"x1\"}},\"scope\":\"local\","
    "\"time\":1796154565,\"timeNano\":1796154565495298593}";
static const char destroy_line[] =
    "{\"status\":\"destroy\",\"id\":\"" ID "\",\"from\":\"rtsandbox-worker:latest\","
    "\"Type\":\"container\",\"Action\":\"destroy\",\"Actor\":{\"ID\":\"" ID "\","
    "\"Attributes\":{\"image\":\"rtsandbox-worker:latest\",\"name\":\"rtsb-x1\","
    "\"rtsandbox.channel\":\"x1\"}},\"scope\":\"local\",\"time\":1796154565,"
    "\"timeNano\":1796154565584986534}";

static char *
event_line(const char *type, const char *action, const char *id,
    const char *name, const char *exit_code)
{
	char	*s;

	if (asprintf(&s, "{\"Type\":\"%s\",\"Action\":\"%s\",\"Actor\":{"
	    "\"ID\":\"%s\",\"Attributes\":{\"name\":\"%s\"%s%s%s}},"
	    "\"time\":1}", type, action, id, name,
	    exit_code != NULL ? ",\"exitCode\":\"" : "",
	    exit_code != NULL ? exit_code : "", exit_code != NULL ? "\"" : "") ==
	    -1)
		abort();
	return s;
}

static int
parse(const char *type, const char *action, const char *id, const char *name,
    const char *code, struct dock_event *ev)
{
	char	*l = event_line(type, action, id, name, code);
	int	 rc = dock_event_parse(l, strlen(l), "rtsb", ev);

	free(l);
	return rc;
}

START_TEST(event_die_and_destroy)
{
	struct dock_event	 ev;

	ck_assert_int_eq(dock_event_parse(S(die_line), "rtsb", &ev), 1);
	ck_assert_int_eq(ev.action, DOCK_EV_DIE);
	ck_assert_str_eq(ev.id, ID);
	ck_assert_str_eq(ev.name, "rtsb-x1");
	ck_assert_int_eq(ev.exit_code, 137);
	ck_assert_int_eq(ev.time, 1796154565);
	ck_assert_int_eq(dock_event_parse(S(destroy_line), "rtsb", &ev), 1);
	ck_assert_int_eq(ev.action, DOCK_EV_DESTROY);
	ck_assert_int_eq(ev.exit_code, -1);
	ck_assert_str_eq(dock_event_action_name(DOCK_EV_DESTROY), "destroy");
}
END_TEST

START_TEST(event_actions)
{
	struct dock_event	 ev;

	ck_assert_int_eq(parse("container", "oom", "ab", "rtsb-c", NULL, &ev),
	    1);
	ck_assert_int_eq(ev.action, DOCK_EV_OOM);
	ck_assert_int_eq(parse("container", "pause", "ab", "rtsb-c", NULL, &ev),
	    1);
	ck_assert_int_eq(ev.action, DOCK_EV_PAUSE);
	/* Podman says "died" and "remove" */
	ck_assert_int_eq(parse("container", "died", "ab", "rtsb-c", "0", &ev),
	    1);
	ck_assert_int_eq(ev.action, DOCK_EV_DIE);
	ck_assert_int_eq(ev.exit_code, 0);
	ck_assert_int_eq(parse("container", "remove", "ab", "rtsb-c", NULL,
	    &ev), 1);
	ck_assert_int_eq(ev.action, DOCK_EV_DESTROY);
	/* news of no interest */
	ck_assert_int_eq(parse("container", "start", "ab", "rtsb-c", NULL, &ev),
	    0);
	ck_assert_int_eq(parse("container", "exec_start: sh", "ab", "rtsb-c",
	    NULL, &ev), 0);
	ck_assert_int_eq(parse("network", "die", "ab", "rtsb-c", NULL, &ev), 0);
	ck_assert_int_eq(parse("container", "Die", "ab", "rtsb-c", NULL, &ev),
	    0);
}
END_TEST

START_TEST(event_not_ours)
{
	struct dock_event	 ev;
	char			 id[80];

	/* another prefix, or the prefix without its dash */
	ck_assert_int_eq(parse("container", "die", "ab", "other-c", "1", &ev),
	    0);
	ck_assert_int_eq(parse("container", "die", "ab", "rtsbx", "1", &ev), 0);
	ck_assert_int_eq(parse("container", "die", "ab", "rtsb", "1", &ev), 0);
	ck_assert_int_eq(parse("container", "die", "ab", "/rtsb-c", "1", &ev),
	    0);
	/* ids: lowercase hex, at most 71 */
	ck_assert_int_eq(parse("container", "die", "AB", "rtsb-c", "1", &ev),
	    0);
	ck_assert_int_eq(parse("container", "die", "", "rtsb-c", "1", &ev), 0);
	ck_assert_int_eq(parse("container", "die", "a b", "rtsb-c", "1", &ev),
	    0);
	memset(id, 'a', 71);
	id[71] = '\0';
	ck_assert_int_eq(parse("container", "die", id, "rtsb-c", "1", &ev), 1);
	id[71] = 'a';
	id[72] = '\0';
	ck_assert_int_eq(parse("container", "die", id, "rtsb-c", "1", &ev), 0);
	/* a name of 63 bytes fits, 64 does not */
	ck_assert_int_eq(parse("container", "die", "ab", "rtsb-"
	    "0123456789012345678901234567890123456789012345678901234567",
	    "1", &ev), 1);
	ck_assert_int_eq(parse("container", "die", "ab", "rtsb-"
	    "01234567890123456789012345678901234567890123456789012345678",
	    "1", &ev), 0);
}
END_TEST

START_TEST(event_exit_codes)
{
	struct dock_event	 ev;

	ck_assert_int_eq(parse("container", "die", "ab", "rtsb-c", "255", &ev),
	    1);
	ck_assert_int_eq(ev.exit_code, 255);
	ck_assert_int_eq(parse("container", "die", "ab", "rtsb-c", "-1", &ev),
	    1);
	ck_assert_int_eq(ev.exit_code, -1);
	ck_assert_int_eq(parse("container", "die", "ab", "rtsb-c", "1e3", &ev),
	    1);
	ck_assert_int_eq(ev.exit_code, -1);
	ck_assert_int_eq(parse("container", "die", "ab", "rtsb-c", "999999999",
	    &ev), 1);
	ck_assert_int_eq(ev.exit_code, 999999999);
	ck_assert_int_eq(parse("container", "die", "ab", "rtsb-c",
	    "9999999999", &ev), 1);
	ck_assert_int_eq(ev.exit_code, -1);
}
END_TEST

START_TEST(event_not_events)
{
	struct dock_event	 ev;
	char			*big;

	ck_assert_int_eq(dock_event_parse(S("not json"), "rtsb", &ev), -1);
	ck_assert_int_eq(dock_event_parse(S("[1,2]"), "rtsb", &ev), -1);
	ck_assert_int_eq(dock_event_parse(S("\"die\""), "rtsb", &ev), -1);
	ck_assert_int_eq(dock_event_parse(S("{}"), "rtsb", &ev), 0);
	/* a valid event cut one byte short */
	ck_assert_int_eq(dock_event_parse(die_line, sizeof(die_line) - 2,
	    "rtsb", &ev), -1);
	/* past DOCK_EVENT_LINE_MAX it is not read at all */
	big = malloc(DOCK_EVENT_LINE_MAX + 1);
	memset(big, ' ', DOCK_EVENT_LINE_MAX + 1);
	memcpy(big, die_line, sizeof(die_line) - 1);
	ck_assert_int_eq(dock_event_parse(big, DOCK_EVENT_LINE_MAX, "rtsb",
	    &ev), 1);
	ck_assert_int_eq(dock_event_parse(big, DOCK_EVENT_LINE_MAX + 1, "rtsb",
	    &ev), -1);
	free(big);
}
END_TEST

/* Lines the stream passed on, joined by '|'. */
struct lines {
	char	 buf[200000];
	size_t	 len;
	int	 n;
};

static void
on_line(const char *line, size_t len, void *arg)
{
	struct lines	*l = arg;

	ck_assert_uint_lt(l->len + len + 1, sizeof(l->buf));
	if (l->n++ > 0)
		l->buf[l->len++] = '|';
	memcpy(l->buf + l->len, line, len);
	l->len += len;
	l->buf[l->len] = '\0';
}

static const char head_chunked[] =
    "HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nContent-Type: application/json\r\n"
    "Docker-Experimental: false\r\nServer: Docker/20.10.24+dfsg1 (linux)\r\n"
    "Date: Tue, 01 Dec 2026 19:49:25 GMT\r\nTransfer-Encoding: chunked\r\n\r\n";

static int
feed(struct dock_stream *ds, const char *p, size_t n, struct lines *l,
    const char **why)
{
	return dock_stream_feed(ds, p, n, on_line, l, why);
}

/* The chunks of a body, each with its size line. */
static size_t
chunked(char *out, size_t outlen, const char *const *parts)
{
	size_t	 n = 0;

	for (; *parts != NULL; parts++)
		n += (size_t)snprintf(out + n, outlen - n, "%zx\r\n%s\r\n",
		    strlen(*parts), *parts);
	return n;
}

START_TEST(stream_chunked)
{
	struct dock_stream	 ds;
	static struct lines	 l;
	const char		*why;
	const char *const	 parts[] = { "{\"a\":1}\n{\"b\":2}\r\n{\"c\":3}\r\n",
	    "{\"d\":", "4}\n", NULL };
	char			 body[256];
	size_t			 i, n;

	memset(&l, 0, sizeof(l));
	n = chunked(body, sizeof(body), parts);
	ck_assert_int_eq(dock_stream_init(&ds), 0);
	ck_assert_int_eq(feed(&ds, S(head_chunked), &l, &why), 0);
	ck_assert_int_eq(ds.ds_live, 1);
	ck_assert_int_eq(ds.ds_state, DOCK_STREAM_SIZE);
	/* byte by byte, as a slow socket would give it */
	for (i = 0; i < n; i++)
		ck_assert_int_eq(feed(&ds, body + i, 1, &l, &why), 0);
	ck_assert_str_eq(l.buf, "{\"a\":1}|{\"b\":2}|{\"c\":3}|{\"d\":4}");
	ck_assert_int_eq(l.n, 4);
	/* a chunk extension is allowed */
	ck_assert_int_eq(feed(&ds, S("3;x=1\r\n{}\n\r\n"), &l, &why), 0);
	ck_assert_int_eq(l.n, 5);
	/* the last chunk ends it */
	ck_assert_int_eq(feed(&ds, S("0\r\n\r\n"), &l, &why), -1);
	ck_assert_str_eq(why, "the stream ended");
	ck_assert_int_eq(feed(&ds, S("1\r\n"), &l, &why), -1);
	dock_stream_free(&ds);
}
END_TEST

START_TEST(stream_raw)
{
	struct dock_stream	 ds;
	static struct lines	 l;
	const char		*why;

	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(dock_stream_init(&ds), 0);
	ck_assert_int_eq(feed(&ds, S("HTTP/1.0 200 OK\r\nContent-Type: x\r\n"
	    "\r\n{\"a\":1}\n{\"b\""), &l, &why), 0);
	ck_assert_int_eq(ds.ds_state, DOCK_STREAM_RAW);
	ck_assert_int_eq(feed(&ds, S(":2}\n"), &l, &why), 0);
	ck_assert_str_eq(l.buf, "{\"a\":1}|{\"b\":2}");
	dock_stream_free(&ds);
}
END_TEST

static const char *
broken_by(const char *p, size_t n)
{
	struct dock_stream	 ds;
	static struct lines	 l;
	const char		*why = NULL;

	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(dock_stream_init(&ds), 0);
	if (feed(&ds, p, n, &l, &why) == 0)
		why = NULL;
	else
		ck_assert_ptr_nonnull(why);
	dock_stream_free(&ds);
	return why;
}

START_TEST(stream_refusals)
{
	char	*big;
	size_t	 n;

	ck_assert_str_eq(broken_by(S("HTTP/1.1 400 Bad Request\r\n\r\n")),
	    "the answer is not 200");
	ck_assert_str_eq(broken_by(S("HTTP/1.1 2000 OK\r\n\r\n")),
	    "the answer is not 200");
	ck_assert_str_eq(broken_by(S("SSH-2.0-x\r\n\r\n")),
	    "not an HTTP answer");
	ck_assert_str_eq(broken_by(S("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "chunked\r\n\r\nzz\r\n")), "a malformed chunk size");
	ck_assert_str_eq(broken_by(S("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n\r\n")), "a malformed chunk size");
	ck_assert_str_eq(broken_by(S("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n123456789\r\n")), "a chunk size too large");
	ck_assert_ptr_null(broken_by(S("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n12345678\r\n")));
	ck_assert_str_eq(broken_by(S("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n1\r\nab\r\n")), "a chunk without its CRLF");
	ck_assert_str_eq(broken_by(S("HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n1;aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n")),
	    "a chunk size line too long");
	/* a head of exactly DOCK_EVENTS_HEAD_MAX is read, one more is not */
	big = malloc(DOCK_EVENTS_HEAD_MAX + 16);
	n = DOCK_EVENTS_HEAD_MAX;
	memset(big, 'x', n);
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	memcpy(big + n - 4, "\r\n\r\n", 4);
	ck_assert_ptr_null(broken_by(big, n));
	memset(big, 'x', n + 1);
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	memcpy(big + n + 1 - 4, "\r\n\r\n", 4);
	ck_assert_str_eq(broken_by(big, n + 1), "a head too large");
	free(big);
}
END_TEST

START_TEST(stream_long_lines)
{
	struct dock_stream	 ds;
	static struct lines	 l;
	const char		*why;
	char			*big;
	size_t			 n = DOCK_EVENT_LINE_MAX + 1;

	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(dock_stream_init(&ds), 0);
	ck_assert_int_eq(feed(&ds, S("HTTP/1.1 200 OK\r\n\r\n"), &l, &why), 0);
	big = malloc(n + 1);
	/* DOCK_EVENT_LINE_MAX bytes and the newline: passed on */
	memset(big, 'a', n);
	big[n - 1] = '\n';
	ck_assert_int_eq(feed(&ds, big, n, &l, &why), 0);
	ck_assert_int_eq(l.n, 1);
	ck_assert_uint_eq(l.len, DOCK_EVENT_LINE_MAX);
	/* one more: skipped whole, and the stream goes on */
	memset(&l, 0, sizeof(l));
	memset(big, 'b', n + 1);
	big[n] = '\n';
	ck_assert_int_eq(feed(&ds, big, n + 1, &l, &why), 0);
	ck_assert_int_eq(feed(&ds, S("{\"x\":1}\r\n\n"), &l, &why), 0);
	ck_assert_str_eq(l.buf, "{\"x\":1}");
	free(big);
	dock_stream_free(&ds);
}
END_TEST

START_TEST(request_filters)
{
	char	*r = dock_events_request(0);

	ck_assert_str_eq(r, "/v1.41/events?filters=%7B%22type%22%3A%5B%22"
	    "container%22%5D%7D");
	free(r);
	r = dock_events_request(1796154565);
	ck_assert_ptr_nonnull(strstr(r, "?since=1796154565&filters=%7B"));
	free(r);
}
END_TEST

/* The connection, against a listener of the test's own. */

struct fake {
	struct event_base	*base;
	int			 lfd;
	int			 cfd;
	char			 req[4096];
	size_t			 reqlen;
	char			 first_req[4096];
	int			 accepts;
	int			 news[3];
	struct dock_event	 last;
	int			 step;
};

static void
fake_news(enum dock_watch_news n, const struct dock_event *ev, void *arg)
{
	struct fake	*f = arg;
	char		 buf[1024];
	int		 len;

	f->news[n]++;
	if (ev != NULL)
		f->last = *ev;
	if (n == DOCK_WATCH_LIVE && f->accepts == 1) {
		/* one event, then Docker goes away */
		len = snprintf(buf, sizeof(buf), "%zx\r\n%s\n\r\n",
		    sizeof(die_line), die_line);
		ck_assert_int_eq(write(f->cfd, buf, (size_t)len), len);
		close(f->cfd);
		f->cfd = -1;
	}
	if (n == DOCK_WATCH_LIVE && f->accepts == 2)
		event_base_loopbreak(f->base);
}

static void
fake_accept(evutil_socket_t fd, short what, void *arg)
{
	struct fake	*f = arg;
	const char	 head[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n";
	ssize_t		 n;
	int		 c;

	if ((c = accept(fd, NULL, NULL)) == -1)
		return;
	f->accepts++;
	/* the request is small and comes at once */
	n = read(c, f->req, sizeof(f->req) - 1);
	ck_assert_int_gt(n, 0);
	f->req[n] = '\0';
	if (f->accepts == 1)
		memcpy(f->first_req, f->req, (size_t)n + 1);
	ck_assert_int_eq(write(c, head, sizeof(head) - 1),
	    (ssize_t)sizeof(head) - 1);
	f->cfd = c;
}

START_TEST(watch_follows_and_comes_back)
{
	struct fake		 f;
	struct sockaddr_un	 sun;
	struct dock_watch	*dw;
	struct event		*ev;
	char			 dir[] = "/tmp/rtsb-dockev-XXXXXX";

	memset(&f, 0, sizeof(f));
	f.cfd = -1;
	ck_assert_ptr_nonnull(mkdtemp(dir));
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/docker.sock", dir);
	f.base = event_base_new();
	ck_assert_int_ge(f.lfd = socket(AF_UNIX, SOCK_STREAM, 0), 0);
	ck_assert_int_eq(bind(f.lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(listen(f.lfd, 4), 0);
	ev = event_new(f.base, f.lfd, EV_READ | EV_PERSIST, fake_accept, &f);
	event_add(ev, NULL);
	dw = dock_watch_new(f.base, sun.sun_path, "rtsb", fake_news, &f);
	ck_assert_ptr_nonnull(dw);
	event_base_dispatch(f.base);
	/* live, the event, lost when Docker closed, live again */
	ck_assert_int_eq(f.accepts, 2);
	ck_assert_int_eq(f.news[DOCK_WATCH_LIVE], 2);
	ck_assert_int_eq(f.news[DOCK_WATCH_EVENT], 1);
	ck_assert_int_eq(f.news[DOCK_WATCH_LOST], 1);
	ck_assert_str_eq(f.last.id, ID);
	ck_assert_ptr_nonnull(strstr(f.first_req, "GET /v1.41/events?filters="));
	ck_assert_ptr_null(strstr(f.first_req, "since="));
	/* asked again from a second before the loss */
	ck_assert_ptr_nonnull(strstr(f.req, "GET /v1.41/events?since="));
	dock_watch_free(dw);
	event_free(ev);
	event_base_free(f.base);
	close(f.lfd);
	if (f.cfd != -1)
		close(f.cfd);
	unlink(sun.sun_path);
	rmdir(dir);
}
END_TEST

START_TEST(watch_path_too_long)
{
	struct event_base	*base = event_base_new();
	char			 path[200];

	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	errno = 0;
	ck_assert_ptr_null(dock_watch_new(base, path, "rtsb", fake_news, NULL));
	ck_assert_int_eq(errno, ENAMETOOLONG);
	event_base_free(base);
}
END_TEST

static Suite *
dockevents_suite(void)
{
	Suite	*s = suite_create("dockevents");
	TCase	*tc;

	tc = tcase_create("event");
	tcase_add_test(tc, event_die_and_destroy);
	tcase_add_test(tc, event_actions);
	tcase_add_test(tc, event_not_ours);
	tcase_add_test(tc, event_exit_codes);
	tcase_add_test(tc, event_not_events);
	suite_add_tcase(s, tc);
	tc = tcase_create("stream");
	tcase_add_test(tc, stream_chunked);
	tcase_add_test(tc, stream_raw);
	tcase_add_test(tc, stream_refusals);
	tcase_add_test(tc, stream_long_lines);
	tcase_add_test(tc, request_filters);
	suite_add_tcase(s, tc);
	tc = tcase_create("watch");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, watch_follows_and_comes_back);
	tcase_add_test(tc, watch_path_too_long);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(dockevents_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
