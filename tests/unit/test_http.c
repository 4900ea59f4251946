/*
 * The HTTP transport on a real listening Unix socket in a temporary
 * directory, served by a real event loop, against blocking clients in a
 * thread: the limits of PROTOCOL.md 3.5 (with shortened timers), bodies by
 * length and chunked, streamed answers with back-pressure, kills and
 * disconnects.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "hold.h"
#include "http.h"

#define KIB	1024u
#define MIB_	(1024u * 1024u)

/* test_body_nomem asks malloc for a PiB: under AddressSanitizer too it
 * must get NULL back, not a report. */
const char	*__asan_default_options(void);

const char *
__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

struct t;
typedef void	(*client_fn)(struct t *);
typedef void	(*router_fn)(struct t *, struct http_conn *,
		    const struct http_head *);

struct t {
	struct event_base	*base;
	struct http_server	*srv;
	struct http_limits	 lim;
	char			 dir[64];
	char			 path[100];
	int			 lfd;
	int			 done[2];
	struct event		*done_ev;
	struct event		*guard;
	pthread_t		 th;
	client_fn		 client;
	router_fn		 router;
	int			 want_closes;
	int			 client_done;
	int			 timed_out;

	/* The loop's side. */
	size_t			 max;
	int			 respond_on_err;
	int			 nhead;
	int			 nclose;
	int			 nbody;
	int			 nerr;
	enum http_body_err	 err;
	char			*body;
	size_t			 body_len;
	unsigned		 nconn_at_head[4];
	int			 nrv;
	int			 rv[64];
	size_t			 total;
	size_t			 sent;
	size_t			 max_pending;
	size_t			 drain_pending;
	int			 ndrain;
	int			 step;
	int			 closed_before_client;

	/* Seen by both. */
	atomic_int		 closed_by_server;
	atomic_int		 client_closed;
};

static int64_t
now_ms(void)
{
	struct timespec	 ts;

	ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &ts), 0);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* libevent's timers run on the coarse monotonic clock: a few ms early. */
#define CLOCK_SLACK_MS	20

static void
msleep(int ms)
{
	struct timespec	 ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static uint8_t
pattern(size_t i)
{
	return (uint8_t)(i % 251);
}

/* Loop side. */

static void
t_maybe_finish(struct t *t)
{
	if (t->client_done && t->nclose >= t->want_closes)
		event_base_loopbreak(t->base);
}

static void
t_on_head(struct http_conn *c, const struct http_head *h, void *arg)
{
	struct t	*t = arg;

	ck_assert_ptr_eq(http_conn_head(c), h);
	if (t->nhead < 4)
		t->nconn_at_head[t->nhead] = http_server_nconn(t->srv);
	t->nhead++;
	t->router(t, c, h);
}

static void
t_on_close(struct http_conn *c, void *arg)
{
	struct t	*t = arg;

	t->nclose++;
	if (!atomic_load(&t->client_closed))
		t->closed_before_client = 1;
	atomic_store(&t->closed_by_server, 1);
	/* Over: nothing may be sent any more. */
	ck_assert_int_eq(http_respond_text(c, 200, "late"), -1);
	ck_assert_int_eq(http_stream_write(c, "x", 1), -1);
	ck_assert_int_eq(http_conn_set_timer(c, 10, NULL), -1);
	ck_assert_uint_eq(http_conn_pending(c), 0);
	ck_assert_ptr_nonnull(http_conn_head(c));
	t_maybe_finish(t);
}

static void
t_done(evutil_socket_t fd, short ev, void *arg)
{
	struct t	*t = arg;
	char		 b;

	ck_assert_int_eq(read(fd, &b, 1), 1);
	t->client_done = 1;
	t_maybe_finish(t);
}

static void
t_guard(evutil_socket_t fd, short ev, void *arg)
{
	struct t	*t = arg;

	t->timed_out = 1;
	event_base_loopbreak(t->base);
}

static void *
t_client_main(void *arg)
{
	struct t	*t = arg;
	char		 b = 1;

	t->client(t);
	ck_assert_int_eq(write(t->done[1], &b, 1), 1);
	return NULL;
}

static void
t_init(struct t *t, router_fn router, client_fn client)
{
	memset(t, 0, sizeof(*t));
	http_limits_default(&t->lim);
	t->lim.hl_head_ms = 5000;
	t->router = router;
	t->client = client;
	t->max = MIB_;
	t->lfd = -1;
}

static void
t_settle(struct t *t)
{
	struct timeval	 tv = { 0, 20000 };
	int		 i;

	/* Let the loop see the last closes. */
	for (i = 0; i < 100 && t->srv != NULL &&
	    http_server_nconn(t->srv) > 0; i++) {
		event_base_loopexit(t->base, &tv);
		event_base_dispatch(t->base);
	}
}

static void
t_run(struct t *t)
{
	static const struct http_server_cbs	 cbs = {
		t_on_head, t_on_close
	};
	struct sockaddr_un			 sun;
	struct timeval				 tv = { 20, 0 };

	signal(SIGPIPE, SIG_IGN);
	ck_assert_ptr_nonnull(t->base = event_base_new());
	(void)snprintf(t->dir, sizeof(t->dir), "/tmp/test_http.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(t->dir));
	(void)snprintf(t->path, sizeof(t->path), "%s/broker.sock", t->dir);
	t->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(t->lfd, 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", t->path);
	ck_assert_int_eq(bind(t->lfd, (struct sockaddr *)&sun, sizeof(sun)),
	    0);
	ck_assert_int_eq(listen(t->lfd, 64), 0);
	t->srv = http_server_new(t->base, t->lfd, &cbs, t, &t->lim);
	ck_assert_ptr_nonnull(t->srv);
	ck_assert_int_ne(fcntl(t->lfd, F_GETFL) & O_NONBLOCK, 0);

	ck_assert_int_eq(pipe2(t->done, O_CLOEXEC), 0);
	t->done_ev = event_new(t->base, t->done[0], EV_READ | EV_PERSIST,
	    t_done, t);
	t->guard = evtimer_new(t->base, t_guard, t);
	ck_assert_int_eq(event_add(t->done_ev, NULL), 0);
	ck_assert_int_eq(evtimer_add(t->guard, &tv), 0);
	ck_assert_int_eq(pthread_create(&t->th, NULL, t_client_main, t), 0);
	event_base_dispatch(t->base);
	ck_assert_msg(!t->timed_out, "test timed out");
	ck_assert_int_eq(pthread_join(t->th, NULL), 0);
	t_settle(t);
}

static void
t_free(struct t *t)
{
	http_server_free(t->srv);
	event_free(t->done_ev);
	event_free(t->guard);
	close(t->done[0]);
	close(t->done[1]);
	close(t->lfd);
	unlink(t->path);
	rmdir(t->dir);
	event_base_free(t->base);
	free(t->body);
}

/* Client side: blocking sockets with a 5 s bound on every call. */

struct resp {
	char	*buf;
	size_t	 len;
	int	 eof;
	int	 status;
	char	*head;		/* NUL-terminated, each line ends in CRLF */
	char	*body;
	size_t	 body_len;
	int	 chunked_done;	/* the last chunk came */
	char	*dechunked;
	size_t	 dechunked_len;
	size_t	 dechunked_cap;
};

static int
cl_connect(struct t *t)
{
	struct sockaddr_un	 sun;
	struct timeval		 tv = { 5, 0 };
	int			 fd;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", t->path);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv,
	    sizeof(tv)), 0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv,
	    sizeof(tv)), 0);
	return fd;
}

static void
cl_send(int fd, const void *p, size_t len)
{
	const char	*s = p;
	ssize_t		 n;

	while (len > 0) {
		n = send(fd, s, len, MSG_NOSIGNAL);
		ck_assert_msg(n > 0, "send: %s", strerror(errno));
		s += n;
		len -= n;
	}
}

static void
cl_sends(int fd, const char *s)
{
	cl_send(fd, s, strlen(s));
}

static int
dechunk_cb(void *arg, const char *data, size_t len)
{
	struct resp	*r = arg;

	if (r->dechunked_len + len + 1 > r->dechunked_cap) {
		r->dechunked_cap = 2 * (r->dechunked_len + len + 1);
		r->dechunked = realloc(r->dechunked, r->dechunked_cap);
		ck_assert_ptr_nonnull(r->dechunked);
	}
	memcpy(r->dechunked + r->dechunked_len, data, len);
	r->dechunked_len += len;
	r->dechunked[r->dechunked_len] = '\0';
	return 0;
}

static int
resp_has(const struct resp *r, const char *line)
{
	char	 want[256];

	(void)snprintf(want, sizeof(want), "\r\n%s\r\n", line);
	return r->head != NULL && strstr(r->head, want) != NULL;
}

static void
resp_parse(struct resp *r)
{
	struct http_chunked	 st;
	char			*end;
	size_t			 hlen, used;

	if ((end = memmem(r->buf, r->len, "\r\n\r\n", 4)) == NULL)
		return;
	hlen = end - r->buf + 2;
	r->head = strndup(r->buf, hlen);
	ck_assert_ptr_nonnull(r->head);
	if (sscanf(r->buf, "HTTP/1.1 %d ", &r->status) != 1)
		r->status = -1;
	r->body = end + 4;
	r->body_len = r->len - hlen - 2;
	if (resp_has(r, "transfer-encoding: chunked")) {
		http_chunked_init(&st, UINT64_MAX);
		r->chunked_done = http_chunked_feed(&st, r->body, r->body_len,
		    &used, dechunk_cb, r) == HP_DONE;
	}
}

/* Read until the server closes (or 5 s pass). */
static void
cl_read_n(int fd, struct resp *r, size_t step, int pause_every_mib)
{
	char	*tmp;
	ssize_t	 n;
	size_t	 cap = 65536, next_pause = MIB_;

	memset(r, 0, sizeof(*r));
	ck_assert_ptr_nonnull(tmp = malloc(step));
	ck_assert_ptr_nonnull(r->buf = malloc(cap));
	for (;;) {
		n = read(fd, tmp, step);
		if (n == 0) {
			r->eof = 1;
			break;
		}
		if (n == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (r->len + n + 1 > cap) {
			cap = 2 * (r->len + n + 1);
			ck_assert_ptr_nonnull(r->buf = realloc(r->buf, cap));
		}
		memcpy(r->buf + r->len, tmp, n);
		r->len += n;
		if (pause_every_mib && r->len >= next_pause) {
			msleep(pause_every_mib);
			next_pause += MIB_;
		}
	}
	r->buf[r->len] = '\0';
	free(tmp);
	resp_parse(r);
}

static void
cl_read(int fd, struct resp *r)
{
	cl_read_n(fd, r, 65536, 0);
}

static void
resp_free(struct resp *r)
{
	free(r->buf);
	free(r->head);
	free(r->dechunked);
}

/* One request on a new connection, its whole answer read. */
static void
cl_exchange(struct t *t, const char *req, struct resp *r)
{
	int	 fd = cl_connect(t);

	cl_sends(fd, req);
	cl_read(fd, r);
	close(fd);
}

static void
assert_text(const struct resp *r, int status, const char *body)
{
	char	 cl[64];

	ck_assert_msg(r->status == status, "status %d, want %d: %s",
	    r->status, status, r->buf);
	ck_assert(resp_has(r, "connection: close"));
	(void)snprintf(cl, sizeof(cl), "content-length: %zu", strlen(body));
	ck_assert_msg(resp_has(r, cl), "no %s in %s", cl, r->head);
	ck_assert_uint_eq(r->body_len, strlen(body));
	ck_assert(memcmp(r->body, body, r->body_len) == 0);
	ck_assert(r->eof);
}

/* Routers. */

static void
router_hello(struct t *t, struct http_conn *c, const struct http_head *h)
{
	t->rv[t->nrv++] = http_respond_text(c, 200, "hello");
}

static void
t_on_body(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct t	*t = arg;
	char		 msg[64];

	t->nbody++;
	free(t->body);
	ck_assert_ptr_nonnull(t->body = malloc(len + 1));
	memcpy(t->body, body, len);
	t->body[len] = '\0';
	t->body_len = len;
	(void)snprintf(msg, sizeof(msg), "got %zu", len);
	t->rv[t->nrv++] = http_respond_text(c, 200, msg);
}

static void
t_on_body_err(struct http_conn *c, enum http_body_err err, void *arg)
{
	struct t	*t = arg;

	t->nerr++;
	t->err = err;
	if (t->respond_on_err)
		t->rv[t->nrv++] = http_respond_text(c, 400, "Invalid result");
}

static void
router_body(struct t *t, struct http_conn *c, const struct http_head *h)
{
	ck_assert_int_eq(http_read_body(c, t->max, t_on_body, t_on_body_err),
	    0);
	ck_assert_int_eq(http_read_body(c, t->max, t_on_body, t_on_body_err),
	    -1);
}

/* Tests. */

static void
client_get(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "GET /hello?x HTTP/1.1\r\nHost: broker\r\n\r\n", &r);
	assert_text(&r, 200, "hello");
	ck_assert(strncmp(r.buf, "HTTP/1.1 200 OK\r\n", 17) == 0);
	ck_assert(resp_has(&r, "content-type: text/plain; charset=utf-8"));
	resp_free(&r);

	/* HEAD: the same fields, no body. */
	cl_exchange(t, "HEAD /hello HTTP/1.1\r\nHost: broker\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert(resp_has(&r, "content-length: 5"));
	ck_assert_uint_eq(r.body_len, 0);
	ck_assert(r.eof);
	resp_free(&r);

	/* HTTP/1.0 needs no Host. */
	cl_exchange(t, "GET / HTTP/1.0\r\n\r\n", &r);
	assert_text(&r, 200, "hello");
	resp_free(&r);
}

START_TEST(test_get)
{
	struct t	 t;

	t_init(&t, router_hello, client_get);
	t.want_closes = 3;
	t_run(&t);
	ck_assert_int_eq(t.nhead, 3);
	ck_assert_int_eq(t.nclose, 3);
	ck_assert_int_eq(t.rv[0], 0);
	ck_assert_uint_eq(http_server_nconn(t.srv), 0);
	t_free(&t);
}
END_TEST

static void
client_pipelined(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "GET /a HTTP/1.1\r\nHost: b\r\n\r\n"
	    "GET /b HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_null(strstr(r.body, "HTTP/1.1"));
	resp_free(&r);
}

START_TEST(test_one_request_per_connection)
{
	struct t	 t;

	t_init(&t, router_hello, client_pipelined);
	t.want_closes = 1;
	t_run(&t);
	ck_assert_int_eq(t.nhead, 1);
	t_free(&t);
}
END_TEST

static void
client_post_length(struct t *t)
{
	struct resp	 r;
	char		*body, head[128];
	size_t		 i, n = 300000;
	int		 fd;

	ck_assert_ptr_nonnull(body = malloc(n));
	for (i = 0; i < n; i++)
		body[i] = pattern(i);
	fd = cl_connect(t);
	(void)snprintf(head, sizeof(head), "POST /worker/result HTTP/1.1\r\n"
	    "Host: broker\r\nContent-Length: %zu\r\n\r\n", n);
	cl_sends(fd, head);
	cl_send(fd, body, 1000);
	msleep(20);
	cl_send(fd, body + 1000, 100000);
	msleep(20);
	cl_send(fd, body + 101000, n - 101000);
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 200, "got 300000");
	resp_free(&r);
	free(body);
}

START_TEST(test_post_length)
{
	struct t	 t;
	size_t		 i;
	int		 same = 1;

	t_init(&t, router_body, client_post_length);
	t.want_closes = 1;
	t_run(&t);
	ck_assert_int_eq(t.nbody, 1);
	ck_assert_int_eq(t.nerr, 0);
	ck_assert_uint_eq(t.body_len, 300000);
	for (i = 0; i < t.body_len; i++)
		same &= (uint8_t)t.body[i] == pattern(i);
	ck_assert(same);
	t_free(&t);
}
END_TEST

/*
 * A head of n bytes (the empty line included) with a 5-byte body behind it,
 * sent in one write or split at cut (0: not split).
 */
static void
cl_post_head_of(struct t *t, size_t n, size_t cut, struct resp *r)
{
	static const char	 start[] = "POST /x HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 5\r\nX: ";
	char			*req;
	int			 fd;

	ck_assert_ptr_nonnull(req = malloc(n + 5));
	memset(req, 'a', n);
	memcpy(req, start, sizeof(start) - 1);
	memcpy(req + n - 4, "\r\n\r\nhello", 9);
	fd = cl_connect(t);
	if (cut > 0) {
		cl_send(fd, req, cut);
		msleep(20);
	}
	cl_send(fd, req + cut, n + 5 - cut);
	cl_read(fd, r);
	close(fd);
	free(req);
}

/* The head's bound (HTTP_HEAD_MAX), the first read's size and the body
 * that came with the head. */
static void
client_head_bound(struct t *t)
{
	struct resp	 r;
	size_t		 cut;

	cl_post_head_of(t, HTTP_HEAD_MAX, 0, &r);
	assert_text(&r, 200, "got 5");
	resp_free(&r);
	/* the first read takes part, the rest grows the buffer */
	cl_post_head_of(t, HTTP_HEAD_MAX, 16000, &r);
	assert_text(&r, 200, "got 5");
	resp_free(&r);
	/* the empty line split at each of its bytes */
	for (cut = 20000 - 3; cut < 20000; cut++) {
		cl_post_head_of(t, 20000, cut, &r);
		assert_text(&r, 200, "got 5");
		resp_free(&r);
	}
	cl_post_head_of(t, HTTP_HEAD_MAX + 1, 0, &r);
	assert_text(&r, 400, "bad request");
	resp_free(&r);
	cl_post_head_of(t, HTTP_HEAD_MAX + 1, 30000, &r);
	assert_text(&r, 400, "bad request");
	resp_free(&r);
}

START_TEST(test_head_bound)
{
	struct t	 t;

	t_init(&t, router_body, client_head_bound);
	t.want_closes = 5;
	t_run(&t);
	ck_assert_int_eq(t.nbody, 5);
	ck_assert_int_eq(t.nerr, 0);
	ck_assert_str_eq(t.body, "hello");
	ck_assert_uint_eq(http_server_nconn(t.srv), 0);
	t_free(&t);
}
END_TEST

static void
client_post_chunked(struct t *t)
{
	struct resp	 r;
	char		 big[4096];
	int		 fd;

	memset(big, 'z', sizeof(big));
	fd = cl_connect(t);
	cl_sends(fd, "POST /tools/x HTTP/1.1\r\nHost: broker\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhel");
	msleep(20);
	cl_sends(fd, "lo\r\n10");
	msleep(20);
	cl_sends(fd, "00\r\n");
	cl_send(fd, big, sizeof(big));
	cl_sends(fd, "\r\n0\r\nX-Trailer: 1\r\n\r\n");
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 200, "got 4101");
	resp_free(&r);
}

START_TEST(test_post_chunked)
{
	struct t	 t;

	t_init(&t, router_body, client_post_chunked);
	t.want_closes = 1;
	t_run(&t);
	ck_assert_int_eq(t.nbody, 1);
	ck_assert_uint_eq(t.body_len, 4101);
	ck_assert(memcmp(t.body, "hellozzz", 8) == 0);
	ck_assert_int_eq(t.body[4100], 'z');
	t_free(&t);
}
END_TEST

static void
client_body_empty(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "POST /worker/ready HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	assert_text(&r, 200, "got 0");
	resp_free(&r);
	cl_exchange(t, "POST /worker/ready HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 0\r\n\r\n", &r);
	assert_text(&r, 200, "got 0");
	resp_free(&r);
	cl_exchange(t, "POST /x HTTP/1.1\r\nHost: b\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", &r);
	assert_text(&r, 200, "got 0");
	resp_free(&r);
}

START_TEST(test_body_empty)
{
	struct t	 t;

	t_init(&t, router_body, client_body_empty);
	t.want_closes = 3;
	t_run(&t);
	ck_assert_int_eq(t.nbody, 3);
	t_free(&t);
}
END_TEST

static void
client_body_limit(struct t *t)
{
	struct resp	 r;
	int		 fd;

	/* At the maximum. */
	cl_exchange(t, "POST /r HTTP/1.1\r\nHost: b\r\nContent-Length: 10\r\n"
	    "\r\n0123456789", &r);
	assert_text(&r, 200, "got 10");
	resp_free(&r);

	/* One past it: refused before a byte of the body was sent. */
	fd = cl_connect(t);
	cl_sends(fd, "POST /r HTTP/1.1\r\nHost: b\r\nContent-Length: 11\r\n"
	    "\r\n");
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 400, "Invalid result");
	resp_free(&r);

	/* Refused while the client goes on sending: it still gets the 400. */
	fd = cl_connect(t);
	cl_sends(fd, "POST /r HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 100000\r\n\r\n");
	msleep(50);
	{
		char	 junk[100000];

		memset(junk, 'j', sizeof(junk));
		cl_send(fd, junk, sizeof(junk));
	}
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 400, "Invalid result");
	resp_free(&r);

	/* Expect: 100-continue gets no 100 when the answer is already no. */
	fd = cl_connect(t);
	cl_sends(fd, "POST /r HTTP/1.1\r\nHost: b\r\nContent-Length: 11\r\n"
	    "Expect: 100-continue\r\n\r\n");
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 400, "Invalid result");
	resp_free(&r);
}

START_TEST(test_body_limit)
{
	struct t	 t;

	t_init(&t, router_body, client_body_limit);
	t.max = 10;
	t.respond_on_err = 1;
	t.want_closes = 4;
	t_run(&t);
	ck_assert_int_eq(t.nbody, 1);
	ck_assert_int_eq(t.nerr, 3);
	ck_assert_int_eq(t.err, HTTP_BODY_TOO_LARGE);
	ck_assert_int_eq(t.rv[1], 0);
	t_free(&t);
}
END_TEST

static void
client_chunked_limit(struct t *t)
{
	struct resp	 r;
	char		 req[512];
	int		 fd;

	memset(req, 0, sizeof(req));
	strcpy(req, "POST /r HTTP/1.1\r\nHost: b\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n64\r\n");
	memset(req + strlen(req), 'a', 100);
	strcat(req, "\r\n0\r\n\r\n");
	cl_exchange(t, req, &r);
	assert_text(&r, 200, "got 100");
	resp_free(&r);

	/* 101 in one chunk: refused at its size line. */
	fd = cl_connect(t);
	cl_sends(fd, "POST /r HTTP/1.1\r\nHost: b\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n65\r\n");
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 400, "Invalid result");
	resp_free(&r);

	/* 60 then 41. */
	memset(req, 0, sizeof(req));
	strcpy(req, "POST /r HTTP/1.1\r\nHost: b\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n3c\r\n");
	memset(req + strlen(req), 'a', 60);
	strcat(req, "\r\n29\r\n");
	cl_exchange(t, req, &r);
	assert_text(&r, 400, "Invalid result");
	resp_free(&r);
}

/* A body no malloc can hold: the router hears it, and may answer. */
static void
client_body_nomem(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "POST /r HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 1125899906842624\r\n\r\nabc", &r);
	assert_text(&r, 400, "Invalid result");
	resp_free(&r);
}

START_TEST(test_body_nomem)
{
	struct t	 t;

	t_init(&t, router_body, client_body_nomem);
	t.max = HTTP_LENGTH_MAX;
	t.respond_on_err = 1;
	t.want_closes = 1;
	t_run(&t);
	ck_assert_int_eq(t.nbody, 0);
	ck_assert_int_eq(t.nerr, 1);
	ck_assert_int_eq(t.err, HTTP_BODY_NOMEM);
	ck_assert_int_eq(t.rv[0], 0);
	ck_assert_str_eq(http_body_err_to_string(HTTP_BODY_NOMEM),
	    "out of memory for the body");
	t_free(&t);
}
END_TEST

START_TEST(test_chunked_limit)
{
	struct t	 t;

	t_init(&t, router_body, client_chunked_limit);
	t.max = 100;
	t.respond_on_err = 1;
	t.want_closes = 3;
	t_run(&t);
	ck_assert_int_eq(t.nbody, 1);
	ck_assert_int_eq(t.nerr, 2);
	ck_assert_int_eq(t.err, HTTP_BODY_TOO_LARGE);
	t_free(&t);
}
END_TEST

static void
client_chunked_invalid(struct t *t)
{
	struct resp	 r;

	/* The router does not answer: after the head, a close. */
	cl_exchange(t, "POST /r HTTP/1.1\r\nHost: b\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n5\r\nhelloXX", &r);
	ck_assert_uint_eq(r.len, 0);
	ck_assert(r.eof);
	resp_free(&r);
}

START_TEST(test_chunked_invalid)
{
	struct t	 t;

	t_init(&t, router_body, client_chunked_invalid);
	t.want_closes = 1;
	t_run(&t);
	ck_assert_int_eq(t.nerr, 1);
	ck_assert_int_eq(t.err, HTTP_BODY_INVALID);
	ck_assert_int_eq(t.nbody, 0);
	t_free(&t);
}
END_TEST

static void
client_body_aborted(struct t *t)
{
	int	 fd = cl_connect(t);

	cl_sends(fd, "POST /r HTTP/1.1\r\nHost: b\r\nContent-Length: 100\r\n"
	    "\r\n0123456789");
	msleep(50);
	atomic_store(&t->client_closed, 1);
	close(fd);
}

START_TEST(test_body_aborted)
{
	struct t	 t;

	t_init(&t, router_body, client_body_aborted);
	t.respond_on_err = 1;
	t.want_closes = 1;
	t_run(&t);
	ck_assert_int_eq(t.nerr, 1);
	ck_assert_int_eq(t.err, HTTP_BODY_ABORTED);
	/* Too late to answer. */
	ck_assert_int_eq(t.rv[0], -1);
	ck_assert_int_eq(t.nclose, 1);
	t_free(&t);
}
END_TEST

static void
client_expect(struct t *t)
{
	char		 buf[64];
	struct resp	 r;
	size_t		 n = 0;
	int		 fd = cl_connect(t);

	cl_sends(fd, "POST /r HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\n"
	    "Expect: 100-Continue\r\n\r\n");
	while (n < sizeof(buf) - 1 && (n < 4 ||
	    memcmp(buf + n - 4, "\r\n\r\n", 4) != 0)) {
		ck_assert_int_eq(read(fd, buf + n, 1), 1);
		n++;
	}
	buf[n] = '\0';
	ck_assert_str_eq(buf, "HTTP/1.1 100 Continue\r\n\r\n");
	cl_sends(fd, "abcde");
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 200, "got 5");
	resp_free(&r);
}

START_TEST(test_expect_continue)
{
	struct t	 t;

	t_init(&t, router_body, client_expect);
	t.want_closes = 1;
	t_run(&t);
	ck_assert_str_eq(t.body, "abcde");
	t_free(&t);
}
END_TEST

static void
client_conn_limit(struct t *t)
{
	struct resp	 r;
	int		 fds[16], fd, i;

	for (i = 0; i < 16; i++)
		fds[i] = cl_connect(t);
	/* The 17th is accepted and closed at once. */
	fd = cl_connect(t);
	cl_read(fd, &r);
	ck_assert(r.eof);
	ck_assert_uint_eq(r.len, 0);
	close(fd);
	resp_free(&r);

	/* The 16 are alive. */
	cl_sends(fds[0], "GET / HTTP/1.1\r\nHost: b\r\n\r\n");
	cl_read(fds[0], &r);
	assert_text(&r, 200, "hello");
	resp_free(&r);
	close(fds[0]);

	/* Its slot is free again once its answer is read. */
	cl_exchange(t, "GET / HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	assert_text(&r, 200, "hello");
	resp_free(&r);

	for (i = 1; i < 16; i++) {
		cl_sends(fds[i], "GET / HTTP/1.1\r\nHost: b\r\n\r\n");
		cl_read(fds[i], &r);
		assert_text(&r, 200, "hello");
		resp_free(&r);
		close(fds[i]);
	}
}

START_TEST(test_conn_limit)
{
	struct t	 t;

	t_init(&t, router_hello, client_conn_limit);
	t.want_closes = 17;
	t_run(&t);
	ck_assert_int_eq(t.nhead, 17);
	ck_assert_uint_eq(t.nconn_at_head[0], 16);
	ck_assert_uint_eq(t.nconn_at_head[1], 16);
	ck_assert_uint_eq(http_server_nconn(t.srv), 0);
	t_free(&t);
}
END_TEST

static void
client_slowloris(struct t *t)
{
	static const char	 part[] = "GET / HTTP/1.1\r\nHost";
	struct resp		 r;
	int64_t			 t0;
	size_t			 i;
	int			 fd;

	fd = cl_connect(t);
	t0 = now_ms();
	for (i = 0; i < 10; i++) {
		cl_send(fd, part + i, 1);
		msleep(20);
	}
	cl_read(fd, &r);
	close(fd);
	ck_assert_int_ge(now_ms() - t0, t->lim.hl_head_ms - CLOCK_SLACK_MS);
	assert_text(&r, 400, "bad request");
	ck_assert(strncmp(r.buf, "HTTP/1.1 400 Bad Request\r\n", 26) == 0);
	resp_free(&r);

	/* A head that never ends in CRLF CRLF is cut the same way. */
	fd = cl_connect(t);
	cl_sends(fd, "GET / HTTP/1.1\nHost: b\n\n");
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 400, "bad request");
	resp_free(&r);
}

START_TEST(test_slowloris)
{
	struct t	 t;

	t_init(&t, router_hello, client_slowloris);
	t.lim.hl_head_ms = 300;
	t_run(&t);
	ck_assert_int_eq(t.nhead, 0);
	ck_assert_int_eq(t.nclose, 0);
	ck_assert_uint_eq(http_server_nconn(t.srv), 0);
	t_free(&t);
}
END_TEST

static void
client_bad_heads(struct t *t)
{
	static const char	*bad[] = {
		"GET / HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: b\r\n folded\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 1\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: b\r\nContent-Length: 1\r\n"
		    "Content-Length: 2\r\n\r\n",
		"GET http://b/ HTTP/1.1\r\nHost: b\r\n\r\n",
		"GET / HTTP/2.0\r\nHost: b\r\n\r\n",
		"\x16\x03\x01\x02\x01\x01\xfc\x03\x03\r\n\r\n",
	};
	struct resp		 r;
	char			*big;
	size_t			 i, n = 70000;
	int			 fd;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cl_exchange(t, bad[i], &r);
		assert_text(&r, 400, "bad request");
		resp_free(&r);
	}

	/* A head over 64 KiB: the client may go on sending and still
	 * reads the answer. */
	ck_assert_ptr_nonnull(big = malloc(n));
	memset(big, 'a', n);
	memcpy(big, "GET / HTTP/1.1\r\nHost: b\r\nX: ", 28);
	memcpy(big + n - 4, "\r\n\r\n", 4);
	fd = cl_connect(t);
	cl_send(fd, big, n);
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 400, "bad request");
	resp_free(&r);
	free(big);

	/* The client ends its side inside the head. */
	fd = cl_connect(t);
	cl_sends(fd, "GET / HT");
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 400, "bad request");
	resp_free(&r);

	/* Connected and gone: nothing to answer. */
	fd = cl_connect(t);
	close(fd);
}

START_TEST(test_bad_heads)
{
	struct t	 t;

	t_init(&t, router_hello, client_bad_heads);
	t_run(&t);
	ck_assert_int_eq(t.nhead, 0);
	ck_assert_int_eq(t.nclose, 0);
	ck_assert_uint_eq(http_server_nconn(t.srv), 0);
	t_free(&t);
}
END_TEST

static void
t_on_body_refuse(struct http_conn *c, const char *body, size_t len,
    void *arg)
{
	struct t	*t = arg;

	t->nbody++;
	t->rv[t->nrv++] = http_respond_text(c, 413, "too much");
}

/* A 404 for "/no", a 413 once the body of "/body" is read, a 200 for
 * anything else. */
static void
router_refuse(struct t *t, struct http_conn *c, const struct http_head *h)
{
	int	 no = strncmp(h->h_target, "/no", 3) == 0;

	if (strcmp(h->h_target, "/body") == 0) {
		ck_assert_int_eq(http_read_body(c, 8 * MIB_, t_on_body_refuse,
		    t_on_body_err), 0);
		return;
	}
	t->rv[t->nrv++] = http_respond_text(c, no ? 404 : 200,
	    no ? "no" : "hello");
}

static void
cl_refused(struct t *t, int n)
{
	struct resp	 r;
	int		 i;

	for (i = 0; i < n; i++) {
		cl_exchange(t, "GET /no HTTP/1.1\r\nHost: b\r\n\r\n", &r);
		assert_text(&r, 404, "no");
		resp_free(&r);
	}
}

/*
 * A good request, served once the rest that began at t0 is over: the
 * rests-th.  The server counts a refused connection when it sees the
 * client's close, which can come after the next connection is accepted:
 * the request waits until the server has counted (5 s at most).
 */
static void
cl_served_after_rest(struct t *t, int64_t t0, unsigned rests)
{
	struct resp	 r;
	int		 i;

	/* a word the loop writes, read from this thread: it only grows */
	for (i = 0; i < 5000 && http_server_rests(t->srv) < rests; i++)
		msleep(1);
	ck_assert_uint_ge(http_server_rests(t->srv), rests);
	cl_exchange(t, "GET / HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	ck_assert_int_ge(now_ms() - t0, t->lim.hl_refusal_ms - CLOCK_SLACK_MS);
	assert_text(&r, 200, "hello");
	resp_free(&r);
}

static void
client_refusals(struct t *t)
{
	struct resp	 r;
	int64_t		 t0;
	size_t		 len = 3 * MIB_ + 256;
	char		*big;
	int		 i, n, fd;

	/* Answers under 400 are not refusals. */
	for (i = 0; i < 3 * (int)t->lim.hl_refusals; i++) {
		cl_exchange(t, "GET / HTTP/1.1\r\nHost: b\r\n\r\n", &r);
		assert_text(&r, 200, "hello");
		resp_free(&r);
	}

	/* Three 404 and a bad head: the listener rests until the window
	 * that began with the first is over, and the next connection,
	 * taken into the listen queue, is served only then. */
	t0 = now_ms();
	cl_refused(t, (int)t->lim.hl_refusals - 1);
	cl_exchange(t, "GET / HTTP/1.1\r\n\r\n", &r);
	assert_text(&r, 400, "bad request");
	resp_free(&r);
	cl_served_after_rest(t, t0, 1);

	/* A new window: one refusal fewer than the bound rests nothing. */
	cl_refused(t, (int)t->lim.hl_refusals - 1);
	msleep(t->lim.hl_refusal_ms + 50);

	/* Connections closed unanswered count too. */
	t0 = now_ms();
	for (i = 0; i < (int)t->lim.hl_refusals; i++) {
		fd = cl_connect(t);
		ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
		cl_read(fd, &r);
		ck_assert_uint_eq(r.len, 0);
		ck_assert(r.eof);
		resp_free(&r);
		close(fd);
	}
	cl_served_after_rest(t, t0, 2);
	msleep(t->lim.hl_refusal_ms + 50);

	/* A refused body counts once more per MiB read: 3 MiB and the
	 * answer are four refusals. */
	ck_assert_ptr_nonnull(big = malloc(len));
	n = snprintf(big, len, "POST /body HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: %u\r\n\r\n", 3 * MIB_);
	memset(big + n, 'x', 3 * MIB_);
	t0 = now_ms();
	fd = cl_connect(t);
	cl_send(fd, big, n + 3 * MIB_);
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 413, "too much");
	resp_free(&r);
	free(big);
	cl_served_after_rest(t, t0, 3);
}

START_TEST(test_refusals_rest)
{
	struct t	 t;

	t_init(&t, router_refuse, client_refusals);
	t.lim.hl_refusals = 4;
	t.lim.hl_refusal_ms = 500;
	t.want_closes = 3 * 4 + 3 + 1 + 3 + 1 + 2;
	t_run(&t);
	ck_assert_uint_eq(http_server_rests(t.srv), 3);
	ck_assert_int_eq(t.nbody, 1);
	ck_assert_uint_eq(http_server_nconn(t.srv), 0);
	t_free(&t);
}
END_TEST

static void
client_body_silence(struct t *t)
{
	struct resp	 r;
	int64_t		 t0;
	int		 fd, i;

	/* Half a body, then nothing: cut without an answer. */
	fd = cl_connect(t);
	t0 = now_ms();
	cl_sends(fd, "POST /r HTTP/1.1\r\nHost: b\r\nContent-Length: 10\r\n"
	    "\r\n01234");
	cl_read(fd, &r);
	close(fd);
	ck_assert_int_ge(now_ms() - t0, t->lim.hl_silence_ms - CLOCK_SLACK_MS);
	ck_assert_uint_eq(r.len, 0);
	ck_assert(r.eof);
	resp_free(&r);

	/* Slow but never silent that long: no total limit. */
	fd = cl_connect(t);
	t0 = now_ms();
	cl_sends(fd, "POST /r HTTP/1.1\r\nHost: b\r\nContent-Length: 10\r\n"
	    "\r\n");
	for (i = 0; i < 10; i++) {
		msleep(t->lim.hl_silence_ms / 3);
		cl_send(fd, "x", 1);
	}
	cl_read(fd, &r);
	close(fd);
	ck_assert_int_gt(now_ms() - t0, 3 * t->lim.hl_silence_ms);
	assert_text(&r, 200, "got 10");
	resp_free(&r);
}

START_TEST(test_body_silence)
{
	struct t	 t;

	t_init(&t, router_body, client_body_silence);
	t.lim.hl_silence_ms = 300;
	t.max = 100;
	t.respond_on_err = 1;
	t.want_closes = 2;
	t_run(&t);
	ck_assert_int_eq(t.nerr, 1);
	ck_assert_int_eq(t.err, HTTP_BODY_SILENCE);
	ck_assert_int_eq(t.rv[0], -1);
	ck_assert_int_eq(t.nbody, 1);
	t_free(&t);
}
END_TEST

static void
held_timeout(struct http_conn *c, void *arg)
{
	struct t	*t = arg;

	t->rv[t->nrv++] = http_respond_text(c, 408, "Retry");
}

static void
router_hold(struct t *t, struct http_conn *c, const struct http_head *h)
{
	http_conn_set_data(c, t);
	ck_assert_ptr_eq(http_conn_get_data(c), t);
	if (strcmp(h->h_path, "/worker/next") == 0)
		ck_assert_int_eq(http_conn_set_timer(c, 3 *
		    t->lim.hl_silence_ms, held_timeout), 0);
	/* Anything else is held until the client leaves. */
}

static void
client_get_held(struct t *t)
{
	struct resp	 r;
	int64_t		 t0;

	t0 = now_ms();
	cl_exchange(t, "GET /worker/next HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	ck_assert_int_ge(now_ms() - t0, 3 * t->lim.hl_silence_ms -
	    CLOCK_SLACK_MS);
	assert_text(&r, 408, "Retry");
	ck_assert(strncmp(r.buf, "HTTP/1.1 408 Request Timeout\r\n", 30) == 0);
	resp_free(&r);
}

START_TEST(test_get_held)
{
	struct t	 t;

	t_init(&t, router_hold, client_get_held);
	t.lim.hl_silence_ms = 200;
	t.want_closes = 1;
	t_run(&t);
	ck_assert_int_eq(t.rv[0], 0);
	t_free(&t);
}
END_TEST

static void
client_held_disconnect(struct t *t)
{
	int	 fd;

	fd = cl_connect(t);
	cl_sends(fd, "GET /held HTTP/1.1\r\nHost: b\r\n\r\n");
	msleep(100);
	atomic_store(&t->client_closed, 1);
	close(fd);

	/* The same for a POST whose body was read. */
	fd = cl_connect(t);
	cl_sends(fd, "POST /held HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\n"
	    "\r\n");
	msleep(100);
	close(fd);
}

START_TEST(test_held_disconnect)
{
	struct t	 t;

	t_init(&t, router_hold, client_held_disconnect);
	t.want_closes = 2;
	t_run(&t);
	ck_assert_int_eq(t.nhead, 2);
	ck_assert_int_eq(t.nclose, 2);
	ck_assert_int_eq(t.closed_before_client, 0);
	t_free(&t);
}
END_TEST

static void
stream_tick(struct http_conn *c, void *arg)
{
	struct t	*t = arg;
	struct evbuffer	*buf;
	char		 msg[32];

	(void)snprintf(msg, sizeof(msg), "data: %d\n\n", t->step++);
	if (t->step == 3) {
		/* Moved, not copied. */
		ck_assert_ptr_nonnull(buf = evbuffer_new());
		ck_assert_int_eq(evbuffer_add(buf, msg, strlen(msg)), 0);
		t->rv[t->nrv++] = http_stream_write_buffer(c, buf);
		ck_assert_uint_eq(evbuffer_get_length(buf), 0);
		t->rv[t->nrv++] = http_stream_write_buffer(c, buf);
		evbuffer_free(buf);
	} else {
		t->rv[t->nrv++] = http_stream_write(c, msg, strlen(msg));
		t->rv[t->nrv++] = http_stream_write(c, "", 0);
	}
	if (t->step == 5)
		t->rv[t->nrv++] = http_stream_end(c);
	else
		t->rv[t->nrv++] = http_conn_set_timer(c, 30, stream_tick);
}

static void
router_stream(struct t *t, struct http_conn *c, const struct http_head *h)
{
	static const struct http_hdr	 hdrs[] = {
		{ "content-type", "text/event-stream" },
		{ "request-id", "req_1" },
	};

	t->step = 0;
	t->rv[t->nrv++] = http_stream_start(c, 200, hdrs, 2);
	ck_assert_int_eq(http_stream_start(c, 200, hdrs, 2), -1);
	ck_assert_int_eq(http_respond_text(c, 200, "no"), -1);
	stream_tick(c, t);
}

static void
client_stream(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "GET /s HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert(resp_has(&r, "transfer-encoding: chunked"));
	ck_assert(resp_has(&r, "connection: close"));
	ck_assert(resp_has(&r, "content-type: text/event-stream"));
	ck_assert(resp_has(&r, "request-id: req_1"));
	ck_assert_ptr_null(strstr(r.head, "content-length"));
	ck_assert(r.chunked_done);
	ck_assert_str_eq(r.dechunked, "data: 0\n\ndata: 1\n\ndata: 2\n\n"
	    "data: 3\n\ndata: 4\n\n");
	ck_assert(r.eof);
	resp_free(&r);

	/* HTTP/1.0: no chunks, the close ends the body. */
	cl_exchange(t, "GET /s HTTP/1.0\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_null(strstr(r.head, "transfer-encoding"));
	ck_assert(resp_has(&r, "connection: close"));
	ck_assert_str_eq(r.body, "data: 0\n\ndata: 1\n\ndata: 2\n\n"
	    "data: 3\n\ndata: 4\n\n");
	resp_free(&r);
}

START_TEST(test_stream)
{
	struct t	 t;
	int		 i;

	t_init(&t, router_stream, client_stream);
	t.want_closes = 2;
	t_run(&t);
	for (i = 0; i < t.nrv; i++)
		ck_assert_int_eq(t.rv[i], 0);
	t_free(&t);
}
END_TEST

#define BP_BLOCK	(64 * KIB)
#define BP_HIGH		(1 * MIB_)
#define BP_LOW		(256 * KIB)
#define BP_TOTAL	(8 * MIB_)

static void
bp_fill(struct t *t, struct http_conn *c)
{
	char	 block[BP_BLOCK];
	size_t	 i, n, pending;

	while (http_conn_pending(c) < BP_HIGH && t->sent < t->total) {
		n = t->total - t->sent < BP_BLOCK ? t->total - t->sent :
		    BP_BLOCK;
		for (i = 0; i < n; i++)
			block[i] = pattern(t->sent + i);
		ck_assert_int_eq(http_stream_write(c, block, n), 0);
		t->sent += n;
		if ((pending = http_conn_pending(c)) > t->max_pending)
			t->max_pending = pending;
	}
	if (t->sent == t->total)
		ck_assert_int_eq(http_stream_end(c), 0);
}

static void
bp_drain(struct http_conn *c, void *arg)
{
	struct t	*t = arg;
	size_t		 pending = http_conn_pending(c);

	t->ndrain++;
	if (pending > t->drain_pending)
		t->drain_pending = pending;
	bp_fill(t, c);
}

static void
router_backpressure(struct t *t, struct http_conn *c,
    const struct http_head *h)
{
	ck_assert_int_eq(http_stream_start(c, 200, NULL, 0), 0);
	http_conn_set_drain(c, BP_LOW, bp_drain);
	bp_fill(t, c);
}

static void
client_backpressure(struct t *t)
{
	struct resp	 r;
	size_t		 i;
	int		 fd;

	fd = cl_connect(t);
	cl_sends(fd, "GET /s HTTP/1.1\r\nHost: b\r\n\r\n");
	/* A slow reader: the server's queue fills up first. */
	msleep(200);
	cl_read_n(fd, &r, 4096, 5);
	close(fd);
	ck_assert_int_eq(r.status, 200);
	ck_assert(r.chunked_done);
	ck_assert_uint_eq(r.dechunked_len, BP_TOTAL);
	for (i = 0; i < r.dechunked_len; i++)
		if ((uint8_t)r.dechunked[i] != pattern(i))
			ck_abort_msg("byte %zu differs", i);
	resp_free(&r);
}

START_TEST(test_backpressure)
{
	struct t	 t;

	t_init(&t, router_backpressure, client_backpressure);
	t.total = BP_TOTAL;
	t.want_closes = 1;
	t_run(&t);
	ck_assert_uint_eq(t.sent, BP_TOTAL);
	/* The queue reached the high mark but never far past it. */
	ck_assert_uint_ge(t.max_pending, BP_HIGH);
	ck_assert_uint_le(t.max_pending, BP_HIGH + BP_BLOCK + 64);
	ck_assert_int_ge(t.ndrain, 5);
	ck_assert_uint_le(t.drain_pending, BP_LOW);
	t_free(&t);
}
END_TEST

/*
 * Corked: a stream's writes wait for the uncork and go out from the
 * caller's buffers, and what the socket did not take is copied then, so
 * the buffers may change once the uncork returns.
 */
#define CORK_BYTES	(2 * MIB_)

static void
router_cork(struct t *t, struct http_conn *c, const struct http_head *h)
{
	uint8_t	*buf;
	size_t	 i;

	ck_assert_ptr_nonnull(buf = malloc(CORK_BYTES));
	for (i = 0; i < CORK_BYTES; i++)
		buf[i] = pattern(i);
	http_server_cork(t->srv);
	ck_assert_int_eq(http_stream_start(c, 200, NULL, 0), 0);
	for (i = 0; i < CORK_BYTES; i += CORK_BYTES / 4)
		ck_assert_int_eq(http_stream_write(c, buf + i,
		    CORK_BYTES / 4), 0);
	ck_assert_int_eq(http_stream_end(c), 0);
	/* Nothing left yet, and only the head was copied. */
	ck_assert_uint_lt(http_conn_pending(c), 256);
	http_server_uncork(t->srv);
	memset(buf, 0, CORK_BYTES);
	free(buf);
}

/* GET /s, after sleep_ms, and the pattern's first len bytes back, chunked. */
static void
client_pattern(struct t *t, int sleep_ms, size_t len)
{
	struct resp	 r;
	size_t		 i;
	int		 fd;

	fd = cl_connect(t);
	cl_sends(fd, "GET /s HTTP/1.1\r\nHost: b\r\n\r\n");
	if (sleep_ms > 0)
		msleep(sleep_ms);
	cl_read(fd, &r);
	close(fd);
	ck_assert_int_eq(r.status, 200);
	ck_assert(r.chunked_done);
	ck_assert_uint_eq(r.dechunked_len, len);
	for (i = 0; i < r.dechunked_len; i++)
		if ((uint8_t)r.dechunked[i] != pattern(i))
			ck_abort_msg("byte %zu differs", i);
	resp_free(&r);
}

static void
client_cork(struct t *t)
{
	/* A slow reader: most of it is copied at the uncork. */
	client_pattern(t, 100, CORK_BYTES);
}

START_TEST(test_corked_stream)
{
	struct t	 t;

	t_init(&t, router_cork, client_cork);
	t.want_closes = 1;
	t_run(&t);
	t_free(&t);
}
END_TEST

/*
 * Corked, with more writes than are kept by reference: the first ones are
 * copied into the output, in many pieces, and the later ones kept by
 * reference again; at the uncork all of the output goes before them.
 */
#define MANY_WRITES	40
#define MANY_BLOCK	16384

static void
router_cork_many(struct t *t, struct http_conn *c, const struct http_head *h)
{
	uint8_t	*buf;
	size_t	 i;

	ck_assert_ptr_nonnull(buf = malloc(MANY_WRITES * MANY_BLOCK));
	for (i = 0; i < MANY_WRITES * MANY_BLOCK; i++)
		buf[i] = pattern(i);
	http_server_cork(t->srv);
	ck_assert_int_eq(http_stream_start(c, 200, NULL, 0), 0);
	for (i = 0; i < MANY_WRITES; i++)
		ck_assert_int_eq(http_stream_write(c, buf + i * MANY_BLOCK,
		    MANY_BLOCK), 0);
	ck_assert_int_eq(http_stream_end(c), 0);
	http_server_uncork(t->srv);
	memset(buf, 0, MANY_WRITES * MANY_BLOCK);
	free(buf);
}

static void
client_cork_many(struct t *t)
{
	client_pattern(t, 0, MANY_WRITES * MANY_BLOCK);
}

START_TEST(test_corked_many_writes)
{
	struct t	 t;

	t_init(&t, router_cork_many, client_cork_many);
	t.want_closes = 1;
	t_run(&t);
	t_free(&t);
}
END_TEST

/*
 * A stream that fails before any of it left is answered whole instead;
 * once some of it left, the caller has to cut it.
 */
static void
router_stream_fail(struct t *t, struct http_conn *c,
    const struct http_head *h)
{
	int	 early = strcmp(h->h_path, "/early") == 0;

	if (early)
		http_server_cork(t->srv);
	ck_assert_int_eq(http_stream_start(c, 529, NULL, 0), 0);
	ck_assert_int_eq(http_stream_write(c, "partial", 7), 0);
	if (early) {
		ck_assert_int_eq(http_stream_fail(c, 502,
		    "Broker call failed"), 0);
		ck_assert_int_eq(http_stream_write(c, "more", 4), -1);
		http_server_uncork(t->srv);
		return;
	}
	ck_assert_int_eq(http_stream_fail(c, 502, "Broker call failed"), -1);
	http_conn_kill(c);
}

static void
client_stream_fail(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "POST /early HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 0\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 502);
	ck_assert(resp_has(&r, "content-length: 18"));
	ck_assert_str_eq(r.body, "Broker call failed");
	resp_free(&r);
	cl_exchange(t, "POST /late HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 0\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 529);
	ck_assert(!r.chunked_done);
	ck_assert_str_eq(r.dechunked, "partial");
	resp_free(&r);
}

START_TEST(test_stream_fail)
{
	struct t	 t;

	t_init(&t, router_stream_fail, client_stream_fail);
	t.want_closes = 2;
	t_run(&t);
	t_free(&t);
}
END_TEST

static void
kill_tick(struct http_conn *c, void *arg)
{
	struct t	*t = arg;

	http_conn_kill(c);
	t->rv[t->nrv++] = http_stream_write(c, "more", 4);
	t->rv[t->nrv++] = http_stream_end(c);
	ck_assert_uint_eq(http_conn_pending(c), 0);
	/* Twice is harmless. */
	http_conn_kill(c);
}

static void
router_kill(struct t *t, struct http_conn *c, const struct http_head *h)
{
	ck_assert_int_eq(http_stream_start(c, 200, NULL, 0), 0);
	ck_assert_int_eq(http_stream_write(c, "partial", 7), 0);
	ck_assert_int_eq(http_conn_set_timer(c, 50, kill_tick), 0);
}

static void
client_kill(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "POST /anthropic/v1/messages HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 0\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert(resp_has(&r, "transfer-encoding: chunked"));
	ck_assert(!r.chunked_done);
	ck_assert_str_eq(r.dechunked, "partial");
	resp_free(&r);
}

START_TEST(test_kill)
{
	struct t	 t;

	t_init(&t, router_kill, client_kill);
	t.want_closes = 1;
	t_run(&t);
	ck_assert_int_eq(t.nclose, 1);
	ck_assert_int_eq(t.rv[0], -1);
	ck_assert_int_eq(t.rv[1], -1);
	t_free(&t);
}
END_TEST

static void
router_big(struct t *t, struct http_conn *c, const struct http_head *h)
{
	char	*buf;

	ck_assert_ptr_nonnull(buf = calloc(1, 4 * MIB_));
	ck_assert_int_eq(http_stream_start(c, 200, NULL, 0), 0);
	ck_assert_int_eq(http_stream_write(c, buf, 4 * MIB_), 0);
	ck_assert_int_eq(http_stream_end(c), 0);
	free(buf);
}

static void
client_write_silence(struct t *t)
{
	struct resp	 r;
	int		 fd, i;

	/* A POST whose client stops reading is cut. */
	fd = cl_connect(t);
	cl_sends(fd, "POST /anthropic/v1/messages HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: 0\r\n\r\n");
	for (i = 0; i < 300 && !atomic_load(&t->closed_by_server); i++)
		msleep(10);
	atomic_store(&t->client_closed, 1);
	close(fd);

	/* A GET has no silence timer. */
	fd = cl_connect(t);
	cl_sends(fd, "GET /big HTTP/1.1\r\nHost: b\r\n\r\n");
	msleep(3 * t->lim.hl_silence_ms);
	cl_read(fd, &r);
	close(fd);
	ck_assert(r.chunked_done);
	ck_assert_uint_eq(r.dechunked_len, 4 * MIB_);
	resp_free(&r);
}

START_TEST(test_write_silence)
{
	struct t	 t;

	t_init(&t, router_big, client_write_silence);
	t.lim.hl_silence_ms = 200;
	t.want_closes = 2;
	t_run(&t);
	ck_assert_int_eq(t.closed_before_client, 1);
	ck_assert_int_eq(t.nclose, 2);
	t_free(&t);
}
END_TEST

static void
router_checks(struct t *t, struct http_conn *c, const struct http_head *h)
{
	static const struct http_hdr	 cl[] = { { "Content-Length", "4" } };
	static const struct http_hdr	 te[] = {
		{ "transfer-encoding", "chunked" } };
	static const struct http_hdr	 conn[] = { { "connection", "x" } };
	static const struct http_hdr	 name[] = { { "bad name", "v" } };
	static const struct http_hdr	 empty[] = { { "", "v" } };
	static const struct http_hdr	 crlf[] = { { "x", "a\r\nb: c" } };
	static const struct http_hdr	 ctl[] = { { "x", "a\x01" } };
	static const struct http_hdr	 ok[] = { { "x-ok", "1\t2" } };
	int				 i = 0;

	t->rv[i++] = http_respond_hdrs(c, 200, cl, 1, "made", 4);
	t->rv[i++] = http_respond_hdrs(c, 200, te, 1, "made", 4);
	t->rv[i++] = http_respond_hdrs(c, 200, conn, 1, "made", 4);
	t->rv[i++] = http_respond_hdrs(c, 200, name, 1, "made", 4);
	t->rv[i++] = http_respond_hdrs(c, 200, empty, 1, "made", 4);
	t->rv[i++] = http_respond_hdrs(c, 200, crlf, 1, "made", 4);
	t->rv[i++] = http_respond_hdrs(c, 200, ctl, 1, "made", 4);
	t->rv[i++] = http_stream_start(c, 200, crlf, 1);
	t->rv[i++] = http_respond(c, 200, "text/plain\r\nx: y", "made", 4);
	t->rv[i++] = http_respond_text(c, 199, "made");
	t->rv[i++] = http_respond_text(c, 600, "made");
	t->rv[i++] = http_respond(c, 204, NULL, "made", 4);
	t->rv[i++] = http_stream_write(c, "made", 4);
	t->rv[i++] = http_stream_end(c);
	t->nrv = i;
	/* Nothing went out so far; now a valid answer. */
	ck_assert_uint_eq(http_conn_pending(c), 0);
	ck_assert_int_eq(http_respond_hdrs(c, 201, ok, 1, "made", 4), 0);
	ck_assert_int_eq(http_respond_text(c, 200, "again"), -1);
	ck_assert_int_eq(http_stream_start(c, 200, NULL, 0), -1);
	ck_assert_int_eq(http_conn_set_timer(c, 10, held_timeout), -1);
	ck_assert_int_eq(http_read_body(c, 10, t_on_body, t_on_body_err), -1);
}

static void
client_checks(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "GET / HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	assert_text(&r, 201, "made");
	ck_assert(resp_has(&r, "x-ok: 1\t2"));
	ck_assert(strncmp(r.buf, "HTTP/1.1 201 Created\r\n", 22) == 0);
	ck_assert_ptr_null(strstr(r.head, "content-type"));
	resp_free(&r);
}

START_TEST(test_respond_checks)
{
	struct t	 t;
	int		 i;

	t_init(&t, router_checks, client_checks);
	t.want_closes = 1;
	t_run(&t);
	for (i = 0; i < t.nrv; i++)
		ck_assert_msg(t.rv[i] == -1, "check %d accepted", i);
	t_free(&t);
}
END_TEST

static void
router_no_body(struct t *t, struct http_conn *c, const struct http_head *h)
{
	if (strcmp(h->h_path, "/204") == 0)
		t->rv[t->nrv++] = http_respond(c, 204, NULL, NULL, 0);
	else if (strcmp(h->h_path, "/205") == 0)
		t->rv[t->nrv++] = http_respond(c, 205, NULL, NULL, 0);
	else {
		t->rv[t->nrv++] = http_stream_start(c, 204, NULL, 0);
		t->rv[t->nrv++] = http_stream_write(c, "x", 1);
		t->rv[t->nrv++] = http_stream_end(c);
	}
}

static void
client_no_body(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "GET /204 HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_ptr_null(strstr(r.head, "content-length"));
	ck_assert_uint_eq(r.body_len, 0);
	resp_free(&r);
	cl_exchange(t, "GET /205 HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	assert_text(&r, 205, "");
	resp_free(&r);
	cl_exchange(t, "GET /stream204 HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 204);
	ck_assert_ptr_null(strstr(r.head, "transfer-encoding"));
	ck_assert_uint_eq(r.body_len, 0);
	resp_free(&r);
}

START_TEST(test_no_body_statuses)
{
	struct t	 t;
	int		 i;

	t_init(&t, router_no_body, client_no_body);
	t.want_closes = 3;
	t_run(&t);
	for (i = 0; i < t.nrv; i++)
		ck_assert_int_eq(t.rv[i], 0);
	t_free(&t);
}
END_TEST

static void
resume_tick(struct http_conn *c, void *arg)
{
	http_conn_resume_read(c);
}

static void
router_paused(struct t *t, struct http_conn *c, const struct http_head *h)
{
	router_body(t, c, h);
	http_conn_pause_read(c);
	ck_assert_int_eq(http_conn_set_timer(c, 3 * t->lim.hl_silence_ms,
	    resume_tick), 0);
}

static void
client_paused(struct t *t)
{
	struct resp	 r;
	int		 fd;

	fd = cl_connect(t);
	cl_sends(fd, "POST /r HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\n"
	    "\r\n");
	msleep(50);
	cl_sends(fd, "abcde");
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 200, "got 5");
	resp_free(&r);
}

START_TEST(test_pause_read)
{
	struct t	 t;

	/* Paused longer than the silence limit: no silence while paused. */
	t_init(&t, router_paused, client_paused);
	t.lim.hl_silence_ms = 100;
	t.want_closes = 1;
	t_run(&t);
	ck_assert_int_eq(t.nbody, 1);
	ck_assert_int_eq(t.nerr, 0);
	t_free(&t);
}
END_TEST

static void
free_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct t	*t = arg;

	http_server_free(t->srv);
	t->srv = NULL;
}

static void
router_free(struct t *t, struct http_conn *c, const struct http_head *h)
{
	struct timeval	 tv = { 0, 50000 };

	/* A held request when the broker goes away. */
	ck_assert_int_eq(event_base_once(t->base, -1, EV_TIMEOUT, free_tick, t,
	    &tv), 0);
}

static void
client_free(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "GET / HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	ck_assert_uint_eq(r.len, 0);
	resp_free(&r);
}

START_TEST(test_server_free)
{
	struct t	 t;

	t_init(&t, router_free, client_free);
	t_run(&t);
	ck_assert_ptr_null(t.srv);
	ck_assert_int_eq(t.nclose, 0);
	t_free(&t);
}
END_TEST

START_TEST(test_server_args)
{
	static const struct http_server_cbs	 cbs = { t_on_head, NULL };
	static const struct http_server_cbs	 nocbs = { NULL, NULL };
	struct http_limits			 lim;
	struct event_base			*base;
	struct http_server			*srv;
	int					 sv[2];

	ck_assert_ptr_nonnull(base = event_base_new());
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	http_limits_default(&lim);
	ck_assert_uint_eq(lim.hl_conn_max, 16);
	ck_assert_int_eq(lim.hl_head_ms, 10000);
	ck_assert_int_eq(lim.hl_silence_ms, 120000);
	ck_assert_ptr_null(http_server_new(base, sv[0], &nocbs, NULL, NULL));
	ck_assert_uint_eq(lim.hl_refusals, 64);
	ck_assert_int_eq(lim.hl_refusal_ms, 1000);
	lim.hl_refusal_ms = 0;
	ck_assert_ptr_null(http_server_new(base, sv[0], &cbs, NULL, &lim));
	lim.hl_refusals = 0;
	ck_assert_ptr_nonnull(srv = http_server_new(base, sv[0], &cbs, NULL,
	    &lim));
	http_server_free(srv);
	lim.hl_conn_max = 0;
	ck_assert_ptr_null(http_server_new(base, sv[0], &cbs, NULL, &lim));
	ck_assert_ptr_null(http_server_new(base, -1, &cbs, NULL, NULL));
	ck_assert_ptr_nonnull(srv = http_server_new(base, sv[0], &cbs, NULL,
	    NULL));
	ck_assert_uint_eq(http_server_nconn(srv), 0);
	http_server_free(srv);
	http_server_free(NULL);
	ck_assert_str_eq(http_body_err_to_string(HTTP_BODY_SILENCE),
	    "client silent during the body");
	close(sv[0]);
	close(sv[1]);
	event_base_free(base);
}
END_TEST

/*
 * Bodies held unread (back-pressure), given to the router, and answers
 * that take their body without a copy.
 */

static void
release_tick(struct http_conn *c, void *arg)
{
	struct t	*t = arg;

	t->step = t->nbody;	/* none read before the release */
	http_conn_release_body(c);
}

static void
router_held_body(struct t *t, struct http_conn *c, const struct http_head *h)
{
	router_body(t, c, h);
	http_conn_hold_body(c);
	ck_assert_int_eq(http_conn_set_timer(c, 3 * t->lim.hl_silence_ms,
	    release_tick), 0);
}

/* A body far larger than the socket takes: while held, the client can
 * send no more than the socket holds (nothing is read into the broker). */
static void
client_held_body(struct t *t)
{
	struct resp	 r;
	char		 head[128], *big;
	size_t		 len = 4 * MIB_, sent = 0;
	ssize_t		 n;
	int64_t		 t0;
	int		 fd;

	ck_assert_ptr_nonnull(big = malloc(len));
	memset(big, 'b', len);
	fd = cl_connect(t);
	(void)snprintf(head, sizeof(head), "POST /r HTTP/1.1\r\nHost: b\r\n"
	    "Content-Length: %zu\r\n\r\n", len);
	cl_sends(fd, head);
	t0 = now_ms();
	while (now_ms() - t0 < t->lim.hl_silence_ms) {
		n = send(fd, big + sent, len - sent, MSG_NOSIGNAL |
		    MSG_DONTWAIT);
		if (n > 0)
			sent += (size_t)n;
		else
			msleep(5);
	}
	ck_assert_uint_lt(sent, len / 2);
	cl_send(fd, big + sent, len - sent);
	cl_read(fd, &r);
	close(fd);
	assert_text(&r, 200, "got 4194304");
	resp_free(&r);
	free(big);
}

START_TEST(test_body_held)
{
	struct t	 t;

	/* Held three silence limits: no silence while held. */
	t_init(&t, router_held_body, client_held_body);
	t.lim.hl_silence_ms = 300;
	t.max = 8 * MIB_;
	t.want_closes = 1;
	t_run(&t);
	ck_assert_int_eq(t.step, 0);
	ck_assert_int_eq(t.nbody, 1);
	ck_assert_int_eq(t.nerr, 0);
	t_free(&t);
}
END_TEST

static void
taken_body(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct t	*t = arg;
	char		*mine, msg[64];

	ck_assert_ptr_nonnull(mine = http_body_take(c, body));
	/* once */
	ck_assert_ptr_null(http_body_take(c, body));
	t->nbody++;
	t->body_len = len;
	(void)snprintf(msg, sizeof(msg), "took %zu %.3s", len, mine);
	free(mine);
	t->rv[t->nrv++] = http_respond_text(c, 200, msg);
}

static void
router_take(struct t *t, struct http_conn *c, const struct http_head *h)
{
	ck_assert_int_eq(http_read_body(c, t->max, taken_body, t_on_body_err),
	    0);
}

static void
client_take(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "POST /r HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\n"
	    "\r\nabcde", &r);
	assert_text(&r, 200, "took 5 abc");
	resp_free(&r);
	cl_exchange(t, "POST /r HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\n"
	    "\r\n", &r);
	assert_text(&r, 200, "took 0 ");
	resp_free(&r);
	cl_exchange(t, "POST /r HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n3\r\nxyz\r\n0\r\n\r\n", &r);
	assert_text(&r, 200, "took 3 xyz");
	resp_free(&r);
}

START_TEST(test_body_take)
{
	struct t	 t;

	t_init(&t, router_take, client_take);
	t.want_closes = 3;
	t_run(&t);
	ck_assert_int_eq(t.nbody, 3);
	t_free(&t);
}
END_TEST

static void
router_owned(struct t *t, struct http_conn *c, const struct http_head *h)
{
	char	*b;

	ck_assert_ptr_nonnull(b = strdup(h->h_path + 1));
	t->rv[t->nrv++] = http_respond_owned(c, 200, "text/plain", b,
	    strlen(b));
	/* this conn answered: refused, and the body freed all the same */
	ck_assert_ptr_nonnull(b = strdup("again"));
	t->rv[t->nrv++] = http_respond_owned(c, 200, "text/plain", b, 5);
}

static void
client_owned(struct t *t)
{
	struct resp	 r;

	cl_exchange(t, "GET /mine HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	assert_text(&r, 200, "mine");
	resp_free(&r);
	/* HEAD: the body is not sent, and freed */
	cl_exchange(t, "HEAD /mine HTTP/1.1\r\nHost: b\r\n\r\n", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.body_len, 0);
	resp_free(&r);
}

START_TEST(test_respond_owned)
{
	struct t	 t;

	t_init(&t, router_owned, client_owned);
	t.want_closes = 2;
	t_run(&t);
	ck_assert_int_eq(t.nrv, 4);
	ck_assert_int_eq(t.rv[0], 0);
	ck_assert_int_eq(t.rv[1], -1);
	ck_assert_int_eq(t.rv[2], 0);
	ck_assert_int_eq(t.rv[3], -1);
	t_free(&t);
}
END_TEST

/*
 * broker/hold.c: the rule, and three bodies of 60 bytes under a budget of
 * 100 read one after the other, in order, with frames queued holding the
 * next back.
 */

START_TEST(test_hold_fits)
{
	/* alone, whatever its size */
	ck_assert_int_eq(hold_fits(0, 0, 200, 100), 1);
	ck_assert_int_eq(hold_fits(0, 0, 100, 100), 1);
	/* at the budget and one past it */
	ck_assert_int_eq(hold_fits(40, 0, 60, 100), 1);
	ck_assert_int_eq(hold_fits(40, 0, 61, 100), 0);
	ck_assert_int_eq(hold_fits(0, 40, 60, 100), 1);
	ck_assert_int_eq(hold_fits(0, 40, 61, 100), 0);
	ck_assert_int_eq(hold_fits(20, 20, 60, 100), 1);
	ck_assert_int_eq(hold_fits(20, 20, 61, 100), 0);
	/* queued frames alone hold a body back */
	ck_assert_int_eq(hold_fits(0, 1, 100, 100), 0);
	ck_assert_int_eq(hold_fits(0, 101, 1, 100), 0);
	ck_assert_int_eq(hold_fits(101, 0, 0, 100), 0);
	ck_assert_int_eq(hold_fits(SIZE_MAX, SIZE_MAX, SIZE_MAX, 100), 0);
}
END_TEST

static struct hold	*th_hold;
static size_t		 th_pending;
static int		 th_order[8], th_norder;
static size_t		 th_waiting[8];

static size_t
th_pending_fn(void *arg)
{
	return th_pending;
}

static void
th_drained(evutil_socket_t fd, short ev, void *arg)
{
	th_pending = 0;
	hold_kick(th_hold);
}

static void
th_body(struct http_conn *c, const char *body, size_t len, void *arg)
{
	struct t	*t = arg;
	struct timeval	 tv = { 0, 100000 };

	t->nbody++;
	th_waiting[th_norder] = hold_waiting(th_hold);
	th_order[th_norder++] = body[0] - '0';
	ck_assert_uint_eq(hold_held(th_hold), 60);
	t->rv[t->nrv++] = http_respond_text(c, 200, "ok");
	hold_done(th_hold, c);
	/* the first leaves a frame queued for a while */
	if (th_norder == 1) {
		th_pending = 1;
		ck_assert_int_eq(event_base_once(t->base, -1, EV_TIMEOUT,
		    th_drained, t, &tv), 0);
	}
}

static void
th_body_err(struct http_conn *c, enum http_body_err e, void *arg)
{
	hold_done(th_hold, c);
	t_on_body_err(c, e, arg);
}

static void
router_hold_budget(struct t *t, struct http_conn *c,
    const struct http_head *h)
{
	if (th_hold == NULL)
		ck_assert_ptr_nonnull(th_hold = hold_new(t->base, 100,
		    th_pending_fn, NULL));
	ck_assert_int_eq(hold_read_body(th_hold, c, t->max, th_body,
	    th_body_err), 0);
}

static void
client_hold_budget(struct t *t)
{
	struct resp	 r;
	int		 fd[3], i;
	char		 req[256];

	for (i = 0; i < 3; i++) {
		fd[i] = cl_connect(t);
		(void)snprintf(req, sizeof(req), "POST /r HTTP/1.1\r\n"
		    "Host: b\r\nContent-Length: 60\r\n\r\n");
		cl_sends(fd[i], req);
		msleep(30);
	}
	/* bodies from the last to the first */
	for (i = 2; i >= 0; i--) {
		memset(req, '0' + i, 60);
		cl_send(fd[i], req, 60);
	}
	for (i = 0; i < 3; i++) {
		cl_read(fd[i], &r);
		close(fd[i]);
		assert_text(&r, 200, "ok");
		resp_free(&r);
	}
}

START_TEST(test_hold_budget)
{
	struct t	 t;

	th_hold = NULL;
	th_pending = th_norder = 0;
	t_init(&t, router_hold_budget, client_hold_budget);
	t.want_closes = 3;
	t_run(&t);
	ck_assert_int_eq(t.nbody, 3);
	/* in the order they came, whatever order their bytes came in */
	ck_assert_int_eq(th_order[0], 0);
	ck_assert_int_eq(th_order[1], 1);
	ck_assert_int_eq(th_order[2], 2);
	ck_assert_uint_eq(th_waiting[0], 2);
	ck_assert_uint_eq(th_waiting[1], 1);
	ck_assert_uint_eq(th_waiting[2], 0);
	ck_assert_uint_eq(hold_held(th_hold), 0);
	ck_assert_uint_eq(hold_waiting(th_hold), 0);
	hold_free(th_hold);
	t_free(&t);
}
END_TEST

static Suite *
http_suite(void)
{
	Suite	*s = suite_create("http");
	TCase	*tc;

	tc = tcase_create("server");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_server_args);
	tcase_add_test(tc, test_get);
	tcase_add_test(tc, test_one_request_per_connection);
	tcase_add_test(tc, test_post_length);
	tcase_add_test(tc, test_post_chunked);
	tcase_add_test(tc, test_body_empty);
	tcase_add_test(tc, test_body_limit);
	tcase_add_test(tc, test_body_nomem);
	tcase_add_test(tc, test_chunked_limit);
	tcase_add_test(tc, test_chunked_invalid);
	tcase_add_test(tc, test_body_aborted);
	tcase_add_test(tc, test_expect_continue);
	tcase_add_test(tc, test_conn_limit);
	tcase_add_test(tc, test_refusals_rest);
	tcase_add_test(tc, test_slowloris);
	tcase_add_test(tc, test_bad_heads);
	tcase_add_test(tc, test_head_bound);
	tcase_add_test(tc, test_body_silence);
	tcase_add_test(tc, test_get_held);
	tcase_add_test(tc, test_held_disconnect);
	tcase_add_test(tc, test_stream);
	tcase_add_test(tc, test_backpressure);
	tcase_add_test(tc, test_kill);
	tcase_add_test(tc, test_corked_stream);
	tcase_add_test(tc, test_corked_many_writes);
	tcase_add_test(tc, test_stream_fail);
	tcase_add_test(tc, test_write_silence);
	tcase_add_test(tc, test_respond_checks);
	tcase_add_test(tc, test_no_body_statuses);
	tcase_add_test(tc, test_pause_read);
	tcase_add_test(tc, test_body_held);
	tcase_add_test(tc, test_body_take);
	tcase_add_test(tc, test_respond_owned);
	tcase_add_test(tc, test_hold_fits);
	tcase_add_test(tc, test_hold_budget);
	tcase_add_test(tc, test_server_free);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(http_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
