/*
 * Frames: the header check at and past each limit, and a frame_conn on a
 * real socketpair driven by a real event_base, against a well-behaved
 * sender (another frame_conn) and a raw one that splits, truncates, lies
 * about lengths and attaches descriptors where it likes.
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <event2/event.h>

#include "frame.h"

#define MAXREC	64

static const struct frame_limits lim_small = { 100, 50 };
static const struct frame_limits lim_big = { 65536, 4u << 20 };

/* What a receiving conn saw. */
struct rx {
	struct frame_conn	*conn;
	int			 nframes;
	char			*json[MAXREC];
	uint8_t			*data[MAXREC];
	size_t			 data_len[MAXREC];
	int			 nfds[MAXREC];
	int			 fds[MAXREC][FRAME_MAXFDS];
	int			 take_fds;	/* keep descriptors */
	int			 free_at;	/* free conn at frame */
	int			 pause_at;	/* pause at this frame */
	int			 free_on_err;
	int			 nerr;
	enum frame_err		 err;
	int			 ndrain;
	int			 in_send;	/* a send is on the stack */
};

static void
rx_frame(struct frame_conn *c, struct frame *f, void *arg)
{
	struct rx	*rx = arg;
	int		 n = rx->nframes, i;

	ck_assert_int_lt(n, MAXREC);
	ck_assert_int_eq(rx->nerr, 0);
	rx->json[n] = strndup((const char *)f->f_json, f->f_json_len);
	ck_assert_ptr_nonnull(rx->json[n]);
	ck_assert_uint_eq(strlen(rx->json[n]), f->f_json_len);
	rx->data_len[n] = f->f_data_len;
	rx->data[n] = malloc(f->f_data_len + 1);
	ck_assert_ptr_nonnull(rx->data[n]);
	if (f->f_data_len > 0)
		memcpy(rx->data[n], f->f_data, f->f_data_len);
	rx->nfds[n] = f->f_nfds;
	for (i = 0; i < FRAME_MAXFDS; i++) {
		rx->fds[n][i] = f->f_fds[i];
		if (i >= f->f_nfds)
			ck_assert_int_eq(f->f_fds[i], -1);
		else if (rx->take_fds)
			f->f_fds[i] = -1;
	}
	rx->nframes++;
	if (rx->pause_at == rx->nframes)
		frame_conn_pause(c, 1);
	if (rx->free_at == rx->nframes) {
		frame_conn_free(c);
		rx->conn = NULL;
	}
}

static void
rx_err(struct frame_conn *c, enum frame_err err, void *arg)
{
	struct rx	*rx = arg;

	ck_assert_int_eq(rx->in_send, 0);
	rx->nerr++;
	rx->err = err;
	if (rx->free_on_err) {
		frame_conn_free(c);
		rx->conn = NULL;
	}
}

static void
rx_drain(struct frame_conn *c, void *arg)
{
	struct rx	*rx = arg;

	rx->ndrain++;
}

static void
rx_clear(struct rx *rx)
{
	int	 i, j;

	for (i = 0; i < rx->nframes; i++) {
		free(rx->json[i]);
		free(rx->data[i]);
		if (rx->take_fds)
			for (j = 0; j < rx->nfds[i]; j++)
				close(rx->fds[i][j]);
	}
	if (rx->conn != NULL)
		frame_conn_free(rx->conn);
	memset(rx, 0, sizeof(*rx));
}

static double
now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
tick(evutil_socket_t fd, short what, void *arg)
{
}

/* Run the loop until cond holds, for at most ten seconds. */
#define RUN_UNTIL(base, cond) do {					\
	double	 _t0 = now();					\
	while (!(cond) && now() - _t0 < 10)				\
		event_base_loop((base), EVLOOP_ONCE);			\
	ck_assert_msg((cond), "timed out waiting for " #cond);		\
} while (0)

/* Let whatever is ready run, without waiting. */
static void
run_ready(struct event_base *base)
{
	int	 i;

	for (i = 0; i < 4; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
}

static struct event	*tick_ev;

static struct event_base *
base_new(void)
{
	struct event_base	*base;
	struct timeval		 tv = { 0, 10000 };

	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	/* Keeps EVLOOP_ONCE from blocking forever when a test goes wrong. */
	tick_ev = event_new(base, -1, EV_PERSIST, tick, NULL);
	ck_assert_ptr_nonnull(tick_ev);
	ck_assert_int_eq(event_add(tick_ev, &tv), 0);
	return base;
}

static void
base_free(struct event_base *base)
{
	event_free(tick_ev);
	tick_ev = NULL;
	event_base_free(base);
}

/* Descriptors open in this process, to catch leaks. */
static int
open_fds(void)
{
	DIR		*d;
	int		 n = 0;

	d = opendir("/proc/self/fd");
	ck_assert_ptr_nonnull(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

static void
pair(int sv[2])
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sv), 0);
}

static struct frame_conn *
conn(struct event_base *base, int fd, const struct frame_limits *in,
    const struct frame_limits *out, struct rx *rx)
{
	struct frame_conn	*c;

	c = frame_conn_new(base, fd, in, out, rx_frame, rx_err, rx);
	ck_assert_ptr_nonnull(c);
	rx->conn = c;
	return c;
}

/* A whole frame as bytes, as the peer would put it on the wire. */
static size_t
mkframe(uint8_t *buf, const char *json, const void *data, size_t dlen)
{
	size_t	 jl = strlen(json);

	frame_header_write(buf, jl, dlen);
	memcpy(buf + FRAME_HDR_LEN, json, jl);
	if (dlen > 0)
		memcpy(buf + FRAME_HDR_LEN + jl, data, dlen);
	return FRAME_HDR_LEN + jl + dlen;
}

static void
raw_send(int fd, const void *buf, size_t len, const int *fds, int nfds)
{
	union {
		struct cmsghdr	 hdr;
		uint8_t		 buf[CMSG_SPACE(sizeof(int) * 16)];
	} cbuf;
	struct msghdr	 msg;
	struct cmsghdr	*cm;
	struct iovec	 iov;

	memset(&msg, 0, sizeof(msg));
	iov.iov_base = (void *)buf;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (nfds > 0) {
		ck_assert_int_le(nfds, 16);
		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	ck_assert_int_eq(sendmsg(fd, &msg, MSG_NOSIGNAL), (ssize_t)len);
}

static int
memfd(const char *name)
{
	int	 fd = memfd_create(name, MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	return fd;
}

static ino_t
ino(int fd)
{
	struct stat	 st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	return st.st_ino;
}

static int
is_closed(int fd)
{
	return fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

static uint8_t *
pattern(size_t len, unsigned seed)
{
	uint8_t	*p = malloc(len ? len : 1);
	size_t	 i;

	ck_assert_ptr_nonnull(p);
	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 31 + seed + (i >> 8));
	return p;
}

/*
 * Header
 */

START_TEST(header_limits)
{
	uint8_t		 h[FRAME_HDR_LEN];
	uint32_t	 jl, dl;

	frame_header_write(h, 0x01020304, 0xa0b0c0d0);
	ck_assert_int_eq(h[0], 1);
	ck_assert_int_eq(h[3], 4);
	ck_assert_int_eq(h[4], 0xa0);
	ck_assert_int_eq(h[7], 0xd0);

	frame_header_write(h, 0, 0);
	ck_assert_int_eq(frame_header_parse(h, &lim_small, &jl, &dl),
	    FRAME_EMPTY_JSON);
	frame_header_write(h, 1, 0);
	ck_assert_int_eq(frame_header_parse(h, &lim_small, &jl, &dl),
	    FRAME_EMPTY_JSON);
	frame_header_write(h, 2, 0);
	ck_assert_int_eq(frame_header_parse(h, &lim_small, &jl, &dl),
	    FRAME_OK);
	ck_assert_uint_eq(jl, 2);
	ck_assert_uint_eq(dl, 0);
	frame_header_write(h, 100, 50);
	ck_assert_int_eq(frame_header_parse(h, &lim_small, &jl, &dl),
	    FRAME_OK);
	ck_assert_uint_eq(jl, 100);
	ck_assert_uint_eq(dl, 50);
	frame_header_write(h, 101, 50);
	ck_assert_int_eq(frame_header_parse(h, &lim_small, &jl, &dl),
	    FRAME_JSON_TOO_LONG);
	frame_header_write(h, 100, 51);
	ck_assert_int_eq(frame_header_parse(h, &lim_small, &jl, &dl),
	    FRAME_DATA_TOO_LONG);
	frame_header_write(h, UINT32_MAX, UINT32_MAX);
	ck_assert_int_eq(frame_header_parse(h, &lim_small, &jl, &dl),
	    FRAME_JSON_TOO_LONG);
	ck_assert_uint_eq(jl, UINT32_MAX);
	frame_header_write(h, 2, UINT32_MAX);
	ck_assert_int_eq(frame_header_parse(h, &lim_small, &jl, &dl),
	    FRAME_DATA_TOO_LONG);
}
END_TEST

START_TEST(header_no_data_edge)
{
	const struct frame_limits lim = { 2, 0 };
	uint8_t		 h[FRAME_HDR_LEN];
	uint32_t	 jl, dl;

	frame_header_write(h, 2, 0);
	ck_assert_int_eq(frame_header_parse(h, &lim, &jl, &dl), FRAME_OK);
	frame_header_write(h, 2, 1);
	ck_assert_int_eq(frame_header_parse(h, &lim, &jl, &dl),
	    FRAME_DATA_TOO_LONG);
	frame_header_write(h, 3, 0);
	ck_assert_int_eq(frame_header_parse(h, &lim, &jl, &dl),
	    FRAME_JSON_TOO_LONG);
}
END_TEST

START_TEST(err_strings)
{
	enum frame_err	 e, f;

	for (e = FRAME_OK; e <= FRAME_SEND_TOO_LONG; e++) {
		ck_assert_ptr_nonnull(frame_err_to_string(e));
		ck_assert_str_ne(frame_err_to_string(e), "unknown frame error");
		for (f = FRAME_OK; f < e; f++)
			ck_assert_str_ne(frame_err_to_string(e),
			    frame_err_to_string(f));
	}
	ck_assert_str_eq(frame_err_to_string((enum frame_err)99),
	    "unknown frame error");
}
END_TEST

/*
 * Two conns
 */

START_TEST(conn_flags)
{
	struct event_base	*base = base_new();
	struct rx		 rx = { 0 };
	int			 sv[2], fl;

	pair(sv);
	ck_assert_int_eq(fcntl(sv[0], F_SETFD, 0), 0);
	conn(base, sv[0], &lim_small, &lim_small, &rx);
	ck_assert_int_eq(frame_conn_fd(rx.conn), sv[0]);
	fl = fcntl(sv[0], F_GETFL);
	ck_assert(fl & O_NONBLOCK);
	fl = fcntl(sv[0], F_GETFD);
	ck_assert(fl & FD_CLOEXEC);
	rx_clear(&rx);
	ck_assert(is_closed(sv[0]));
	close(sv[1]);

	/* A descriptor that is not open is refused. */
	ck_assert_ptr_null(frame_conn_new(base, sv[0], &lim_small, &lim_small,
	    rx_frame, rx_err, &rx));
	base_free(base);
}
END_TEST

START_TEST(round_trip)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 }, b = { 0 };
	uint8_t			*big = pattern(3u << 20, 7);
	uint8_t			*mid = pattern(70000, 3);
	int			 sv[2];

	pair(sv);
	conn(base, sv[0], &lim_big, &lim_big, &a);
	conn(base, sv[1], &lim_big, &lim_big, &b);

	ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, NULL, 0, NULL, 0),
	    FRAME_OK);
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"t\":\"x\"}", 9, "abc", 3,
	    NULL, 0), FRAME_OK);
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"t\":\"big\"}", 11, big,
	    3u << 20, NULL, 0), FRAME_OK);
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"t\":\"zero\"}", 12, "",
	    0, NULL, 0), FRAME_OK);
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"t\":\"mid\"}", 11, mid,
	    70000, NULL, 0), FRAME_OK);
	/* And the other way at the same time. */
	ck_assert_int_eq(frame_conn_send(b.conn, "{\"t\":\"back\"}", 12,
	    "xyz", 3, NULL, 0), FRAME_OK);

	RUN_UNTIL(base, b.nframes == 5 && a.nframes == 1);
	ck_assert_str_eq(b.json[0], "{}");
	ck_assert_uint_eq(b.data_len[0], 0);
	ck_assert_str_eq(b.json[1], "{\"t\":\"x\"}");
	ck_assert_uint_eq(b.data_len[1], 3);
	ck_assert_mem_eq(b.data[1], "abc", 3);
	ck_assert_str_eq(b.json[2], "{\"t\":\"big\"}");
	ck_assert_uint_eq(b.data_len[2], 3u << 20);
	ck_assert(memcmp(b.data[2], big, 3u << 20) == 0);
	ck_assert_str_eq(b.json[3], "{\"t\":\"zero\"}");
	ck_assert_uint_eq(b.data_len[3], 0);
	ck_assert_uint_eq(b.data_len[4], 70000);
	ck_assert(memcmp(b.data[4], mid, 70000) == 0);
	ck_assert_str_eq(a.json[0], "{\"t\":\"back\"}");
	ck_assert_int_eq(frame_conn_pending(a.conn), 0);
	ck_assert_int_eq(a.nerr + b.nerr, 0);

	/* Closing one end is a clean EOF for the other. */
	frame_conn_free(a.conn);
	a.conn = NULL;
	RUN_UNTIL(base, b.nerr == 1);
	ck_assert_int_eq(b.err, FRAME_EOF);
	run_ready(base);
	ck_assert_int_eq(b.nerr, 1);
	rx_clear(&a);
	rx_clear(&b);
	free(big);
	free(mid);
	base_free(base);
}
END_TEST

START_TEST(many_small_frames)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 }, b = { 0 };
	char			 js[32];
	int			 sv[2], i, n;

	pair(sv);
	conn(base, sv[0], &lim_big, &lim_big, &a);
	conn(base, sv[1], &lim_big, &lim_big, &b);
	for (i = 0; i < MAXREC; i++) {
		n = snprintf(js, sizeof(js), "{\"n\":%d}", i);
		ck_assert_int_eq(frame_conn_send(a.conn, js, n, NULL, 0, NULL,
		    0), FRAME_OK);
	}
	RUN_UNTIL(base, b.nframes == MAXREC);
	for (i = 0; i < MAXREC; i++) {
		snprintf(js, sizeof(js), "{\"n\":%d}", i);
		ck_assert_str_eq(b.json[i], js);
	}
	rx_clear(&a);
	rx_clear(&b);
	base_free(base);
}
END_TEST

/* Bytes of three frames, fed in pieces of the given size. */
static void
split_feed(size_t chunk)
{
	struct event_base	*base = base_new();
	struct rx		 rx = { 0 };
	uint8_t			 buf[512], *data = pattern(40, 1);
	size_t			 len = 0, off;
	int			 sv[2];

	pair(sv);
	conn(base, sv[1], &lim_small, &lim_small, &rx);
	len += mkframe(buf + len, "{\"a\":1}", data, 40);
	len += mkframe(buf + len, "{}", NULL, 0);
	len += mkframe(buf + len, "{\"c\":\"three\"}", data, 1);

	for (off = 0; off < len; off += chunk) {
		raw_send(sv[0], buf + off, len - off < chunk ? len - off :
		    chunk, NULL, 0);
		run_ready(base);
	}
	RUN_UNTIL(base, rx.nframes == 3);
	ck_assert_str_eq(rx.json[0], "{\"a\":1}");
	ck_assert_uint_eq(rx.data_len[0], 40);
	ck_assert_mem_eq(rx.data[0], data, 40);
	ck_assert_str_eq(rx.json[1], "{}");
	ck_assert_uint_eq(rx.data_len[1], 0);
	ck_assert_str_eq(rx.json[2], "{\"c\":\"three\"}");
	ck_assert_uint_eq(rx.data_len[2], 1);
	ck_assert_int_eq(rx.nerr, 0);
	close(sv[0]);
	RUN_UNTIL(base, rx.nerr == 1);
	ck_assert_int_eq(rx.err, FRAME_EOF);
	rx_clear(&rx);
	free(data);
	base_free(base);
}

START_TEST(split_reads)
{
	static const size_t sizes[] = { 1, 2, 3, 5, 7, 8, 9, 13, 17, 64 };

	split_feed(sizes[_i]);
}
END_TEST

/* The peer stops after `cut` bytes of a frame. */
static void
truncated(size_t cut, enum frame_err want)
{
	struct event_base	*base = base_new();
	struct rx		 rx = { 0 };
	uint8_t			 buf[128];
	size_t			 len;
	int			 sv[2];

	pair(sv);
	conn(base, sv[1], &lim_small, &lim_small, &rx);
	len = mkframe(buf, "{\"x\":\"0123456789\"}", "DATADATA", 8);
	ck_assert_uint_le(cut, len);
	if (cut > 0)
		raw_send(sv[0], buf, cut, NULL, 0);
	close(sv[0]);
	RUN_UNTIL(base, rx.nerr == 1);
	ck_assert_int_eq(rx.err, want);
	ck_assert_int_eq(rx.nframes, cut == len ? 1 : 0);
	run_ready(base);
	ck_assert_int_eq(rx.nerr, 1);
	rx_clear(&rx);
	base_free(base);
}

START_TEST(truncated_input)
{
	truncated(0, FRAME_EOF);
	truncated(4, FRAME_TRUNCATED);			/* mid-header */
	truncated(FRAME_HDR_LEN, FRAME_TRUNCATED);	/* header only */
	truncated(FRAME_HDR_LEN + 5, FRAME_TRUNCATED);	/* mid-json */
	truncated(FRAME_HDR_LEN + 18, FRAME_TRUNCATED);	/* no data */
	truncated(FRAME_HDR_LEN + 18 + 3, FRAME_TRUNCATED); /* mid-data */
	truncated(FRAME_HDR_LEN + 18 + 8, FRAME_EOF);	/* whole frame */
}
END_TEST

/* A header over the limits fails on its own, before any body arrives. */
static void
oversize(uint32_t jl, uint32_t dl, enum frame_err want)
{
	struct event_base	*base = base_new();
	struct rx		 rx = { 0 };
	uint8_t			 buf[64];
	size_t			 len;
	int			 sv[2];

	pair(sv);
	conn(base, sv[1], &lim_small, &lim_small, &rx);
	len = mkframe(buf, "{\"ok\":1}", NULL, 0);
	frame_header_write(buf + len, jl, dl);
	raw_send(sv[0], buf, len + FRAME_HDR_LEN, NULL, 0);
	RUN_UNTIL(base, rx.nerr == 1);
	ck_assert_int_eq(rx.err, want);
	ck_assert_int_eq(rx.nframes, 1);
	/* The conn is stopped: more bytes wake nothing. */
	raw_send(sv[0], buf, len, NULL, 0);
	run_ready(base);
	ck_assert_int_eq(rx.nerr, 1);
	ck_assert_int_eq(rx.nframes, 1);
	close(sv[0]);
	run_ready(base);
	ck_assert_int_eq(rx.nerr, 1);
	rx_clear(&rx);
	base_free(base);
}

START_TEST(oversize_header)
{
	oversize(UINT32_MAX, 0, FRAME_JSON_TOO_LONG);
	oversize(101, 0, FRAME_JSON_TOO_LONG);
	oversize(2, 51, FRAME_DATA_TOO_LONG);
	oversize(2, UINT32_MAX, FRAME_DATA_TOO_LONG);
	oversize(1, 0, FRAME_EMPTY_JSON);
	oversize(0, 0, FRAME_EMPTY_JSON);
}
END_TEST

START_TEST(at_limits)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 }, b = { 0 };
	char			 js[101];
	uint8_t			*data = pattern(50, 9);
	int			 sv[2];

	memset(js, ' ', 100);
	js[0] = '{';
	js[99] = '}';
	js[100] = '\0';
	pair(sv);
	conn(base, sv[0], &lim_small, &lim_small, &a);
	conn(base, sv[1], &lim_small, &lim_small, &b);
	ck_assert_int_eq(frame_conn_send(a.conn, js, 100, data, 50, NULL, 0),
	    FRAME_OK);
	ck_assert_int_eq(frame_conn_send(a.conn, js, 101, data, 50, NULL, 0),
	    FRAME_SEND_TOO_LONG);
	ck_assert_int_eq(frame_conn_send(a.conn, js, 100, data, 51, NULL, 0),
	    FRAME_SEND_TOO_LONG);
	ck_assert_int_eq(frame_conn_send(a.conn, "{", 1, NULL, 0, NULL, 0),
	    FRAME_EMPTY_JSON);
	RUN_UNTIL(base, b.nframes == 1);
	ck_assert_str_eq(b.json[0], js);
	ck_assert_uint_eq(b.data_len[0], 50);
	ck_assert_int_eq(a.nerr + b.nerr, 0);
	rx_clear(&a);
	rx_clear(&b);
	free(data);
	base_free(base);
}
END_TEST

/*
 * Descriptors
 */

static void
fds_pass(int n)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 }, b = { 0 };
	int			 sv[2], fds[FRAME_MAXFDS], i;
	ino_t			 inos[FRAME_MAXFDS];

	pair(sv);
	conn(base, sv[0], &lim_small, &lim_small, &a);
	conn(base, sv[1], &lim_small, &lim_small, &b);
	b.take_fds = 1;
	for (i = 0; i < n; i++) {
		fds[i] = memfd("pass");
		inos[i] = ino(fds[i]);
	}
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"fd\":1}", 8, "d", 1,
	    fds, n), FRAME_OK);
	/* Written at once on an idle socket, so the sender closed its
	 * copies (before the receiver can reuse the numbers). */
	for (i = 0; i < n; i++)
		ck_assert(is_closed(fds[i]));
	RUN_UNTIL(base, b.nframes == 1);
	ck_assert_int_eq(b.nfds[0], n);
	for (i = 0; i < n; i++) {
		ck_assert_int_ge(b.fds[0][i], 0);
		ck_assert_uint_eq(ino(b.fds[0][i]), inos[i]);
		ck_assert(fcntl(b.fds[0][i], F_GETFD) & FD_CLOEXEC);
	}
	rx_clear(&a);
	rx_clear(&b);
	base_free(base);
}

START_TEST(fds_one)
{
	fds_pass(1);
}
END_TEST

START_TEST(fds_max)
{
	fds_pass(FRAME_MAXFDS);
}
END_TEST

/*
 * Descriptors sent and not yet received count against the sender's
 * RLIMIT_NOFILE, for all of its user's processes (ETOOMANYREFS): past it
 * the frames wait, the edge stays up, and every frame comes with its
 * descriptors once the receiver reads.
 */
START_TEST(fds_past_the_in_flight_limit)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 }, b = { 0 };
	struct rlimit		 rl = { 64, 64 };
	int			 sv[2], fds[FRAME_MAXFDS], i, j;

	pair(sv);
	conn(base, sv[0], &lim_small, &lim_small, &a);
	conn(base, sv[1], &lim_small, &lim_small, &b);
	frame_conn_pause(b.conn, 1);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	/* 80 descriptors for 64 in flight: the last frames wait */
	for (i = 0; i < 20; i++) {
		for (j = 0; j < FRAME_MAXFDS; j++)
			fds[j] = memfd("inflight");
		ck_assert_int_eq(frame_conn_send(a.conn, "{\"fd\":1}", 8, NULL,
		    0, fds, FRAME_MAXFDS), FRAME_OK);
		run_ready(base);
	}
	ck_assert_int_eq(a.nerr, 0);
	/* The kernel holds root to no such limit (CAP_SYS_RESOURCE): as
	 * root nothing waits, and every frame must still arrive whole. */
	if (geteuid() != 0)
		ck_assert_uint_gt(frame_conn_pending(a.conn), 0);
	frame_conn_pause(b.conn, 0);
	RUN_UNTIL(base, b.nframes == 20);
	for (i = 0; i < 20; i++)
		ck_assert_int_eq(b.nfds[i], FRAME_MAXFDS);
	RUN_UNTIL(base, frame_conn_pending(a.conn) == 0);
	ck_assert_int_eq(a.nerr + b.nerr, 0);
	rx_clear(&a);
	rx_clear(&b);
	base_free(base);
}
END_TEST

/* Frames queued before the reader runs: a read may glue a frame without
 * descriptors in front of one with them. */
START_TEST(fds_belong_to_their_frame)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 }, b = { 0 };
	int			 sv[2], f1, f2[2], f3;
	ino_t			 i1, i2a, i2b, i3;

	pair(sv);
	conn(base, sv[0], &lim_small, &lim_small, &a);
	conn(base, sv[1], &lim_small, &lim_small, &b);
	b.take_fds = 1;
	f1 = memfd("one");
	f2[0] = memfd("two-a");
	f2[1] = memfd("two-b");
	f3 = memfd("three");
	i1 = ino(f1);
	i2a = ino(f2[0]);
	i2b = ino(f2[1]);
	i3 = ino(f3);
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"n\":0}", 7, NULL, 0,
	    NULL, 0), FRAME_OK);
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"n\":1}", 7, NULL, 0, &f1,
	    1), FRAME_OK);
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"n\":2}", 7, "x", 1, f2,
	    2), FRAME_OK);
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"n\":3}", 7, NULL, 0,
	    NULL, 0), FRAME_OK);
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"n\":4}", 7, NULL, 0,
	    NULL, 0), FRAME_OK);
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"n\":5}", 7, NULL, 0, &f3,
	    1), FRAME_OK);
	RUN_UNTIL(base, b.nframes == 6);
	ck_assert_int_eq(b.nfds[0], 0);
	ck_assert_int_eq(b.nfds[1], 1);
	ck_assert_uint_eq(ino(b.fds[1][0]), i1);
	ck_assert_int_eq(b.nfds[2], 2);
	ck_assert_uint_eq(ino(b.fds[2][0]), i2a);
	ck_assert_uint_eq(ino(b.fds[2][1]), i2b);
	ck_assert_int_eq(b.nfds[3], 0);
	ck_assert_int_eq(b.nfds[4], 0);
	ck_assert_int_eq(b.nfds[5], 1);
	ck_assert_uint_eq(ino(b.fds[5][0]), i3);
	rx_clear(&a);
	rx_clear(&b);
	base_free(base);
}
END_TEST

START_TEST(fds_not_taken_are_closed)
{
	struct event_base	*base = base_new();
	int			 before = open_fds();
	struct rx		 a = { 0 }, b = { 0 };
	int			 sv[2], fds[2], i;

	pair(sv);
	conn(base, sv[0], &lim_small, &lim_small, &a);
	conn(base, sv[1], &lim_small, &lim_small, &b);
	fds[0] = memfd("a");
	fds[1] = memfd("b");
	ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, NULL, 0, fds, 2),
	    FRAME_OK);
	RUN_UNTIL(base, b.nframes == 1);
	ck_assert_int_eq(b.nfds[0], 2);
	for (i = 0; i < 2; i++) {
		ck_assert_int_ge(b.fds[0][i], 0);
		ck_assert(is_closed(b.fds[0][i]));
	}
	rx_clear(&a);
	rx_clear(&b);
	ck_assert_int_eq(open_fds(), before);
	base_free(base);
}
END_TEST

START_TEST(fds_too_many_to_send)
{
	struct event_base	*base = base_new();
	int			 before = open_fds();
	struct rx		 a = { 0 };
	int			 sv[2], fds[FRAME_MAXFDS + 1], i;

	pair(sv);
	conn(base, sv[0], &lim_small, &lim_small, &a);
	for (i = 0; i < FRAME_MAXFDS + 1; i++)
		fds[i] = memfd("many");
	ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, NULL, 0, fds,
	    FRAME_MAXFDS + 1), FRAME_TOO_MANY_FDS);
	for (i = 0; i < FRAME_MAXFDS + 1; i++)
		ck_assert(is_closed(fds[i]));
	/* Refusals of other kinds close them too. */
	fds[0] = memfd("long");
	ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, NULL, 51, fds, 1),
	    FRAME_SEND_TOO_LONG);
	ck_assert(is_closed(fds[0]));
	ck_assert_int_eq(frame_conn_pending(a.conn), 0);
	close(sv[1]);
	rx_clear(&a);
	ck_assert_int_eq(open_fds(), before);
	base_free(base);
}
END_TEST

/* More descriptors in one sendmsg() than a frame may carry. */
START_TEST(fds_too_many_in_one_message)
{
	struct event_base	*base = base_new();
	int			 before = open_fds();
	struct rx		 rx = { 0 };
	uint8_t			 buf[64];
	size_t			 len;
	int			 sv[2], fds[FRAME_MAXFDS + 1], i;

	pair(sv);
	conn(base, sv[1], &lim_small, &lim_small, &rx);
	for (i = 0; i < FRAME_MAXFDS + 1; i++)
		fds[i] = memfd("x");
	len = mkframe(buf, "{}", NULL, 0);
	raw_send(sv[0], buf, len, fds, FRAME_MAXFDS + 1);
	RUN_UNTIL(base, rx.nerr == 1);
	ck_assert_int_eq(rx.err, FRAME_BAD_CMSG);
	ck_assert_int_eq(rx.nframes, 0);
	run_ready(base);
	ck_assert_int_eq(rx.nerr, 1);
	for (i = 0; i < FRAME_MAXFDS + 1; i++)
		close(fds[i]);
	close(sv[0]);
	rx_clear(&rx);
	ck_assert_int_eq(open_fds(), before);
	base_free(base);
}
END_TEST

/* A peer that spreads descriptors over the pieces of one frame; the
 * second piece ends the frame or not. */
START_TEST(fds_too_many_in_one_frame)
{
	struct event_base	*base = base_new();
	int			 before = open_fds();
	struct rx		 rx = { 0 };
	uint8_t			 buf[64];
	size_t			 len;
	int			 sv[2], fds[3], i;

	pair(sv);
	conn(base, sv[1], &lim_small, &lim_small, &rx);
	for (i = 0; i < 3; i++)
		fds[i] = memfd("x");
	len = mkframe(buf, "{\"abc\":1}", NULL, 0);
	raw_send(sv[0], buf, 4, fds, 3);
	run_ready(base);
	if (_i == 0) {
		raw_send(sv[0], buf + 4, 4, fds, 3);
		raw_send(sv[0], buf + 8, len - 8, NULL, 0);
	} else
		raw_send(sv[0], buf + 4, len - 4, fds, 3);
	RUN_UNTIL(base, rx.nerr == 1);
	ck_assert_int_eq(rx.err, FRAME_TOO_MANY_FDS);
	ck_assert_int_eq(rx.nframes, 0);
	for (i = 0; i < 3; i++)
		close(fds[i]);
	close(sv[0]);
	rx_clear(&rx);
	ck_assert_int_eq(open_fds(), before);
	base_free(base);
}
END_TEST

/* Descriptors that come with a later piece of a frame are still its own. */
START_TEST(fds_mid_frame)
{
	struct event_base	*base = base_new();
	int			 before = open_fds();
	struct rx		 rx = { 0 };
	uint8_t			 buf[64];
	size_t			 len;
	int			 sv[2], fd;
	ino_t			 i1;

	pair(sv);
	conn(base, sv[1], &lim_small, &lim_small, &rx);
	rx.take_fds = 1;
	fd = memfd("late");
	i1 = ino(fd);
	len = mkframe(buf, "{\"abc\":1}", NULL, 0);
	raw_send(sv[0], buf, 10, NULL, 0);
	run_ready(base);
	raw_send(sv[0], buf + 10, len - 10, &fd, 1);
	len = mkframe(buf, "{}", NULL, 0);
	raw_send(sv[0], buf, len, NULL, 0);
	RUN_UNTIL(base, rx.nframes == 2);
	ck_assert_int_eq(rx.nfds[0], 1);
	ck_assert_uint_eq(ino(rx.fds[0][0]), i1);
	ck_assert_int_eq(rx.nfds[1], 0);
	close(fd);
	close(sv[0]);
	rx_clear(&rx);
	ck_assert_int_eq(open_fds(), before);
	base_free(base);
}
END_TEST

/* Descriptors with no frame behind them are closed with the conn. */
START_TEST(fds_then_eof)
{
	struct event_base	*base = base_new();
	int			 before = open_fds();
	struct rx		 rx = { 0 };
	uint8_t			 buf[64];
	int			 sv[2], fd;

	pair(sv);
	conn(base, sv[1], &lim_small, &lim_small, &rx);
	fd = memfd("orphan");
	mkframe(buf, "{}", NULL, 0);
	raw_send(sv[0], buf, 3, &fd, 1);
	close(fd);
	close(sv[0]);
	RUN_UNTIL(base, rx.nerr == 1);
	ck_assert_int_eq(rx.err, FRAME_TRUNCATED);
	rx_clear(&rx);
	ck_assert_int_eq(open_fds(), before);
	base_free(base);
}
END_TEST

/*
 * Callbacks that free, pause and push back
 */

START_TEST(free_in_frame_cb)
{
	struct event_base	*base = base_new();
	struct rx		 rx = { 0 };
	uint8_t			 buf[256];
	size_t			 len = 0;
	int			 sv[2], i;

	pair(sv);
	conn(base, sv[1], &lim_small, &lim_small, &rx);
	rx.free_at = 2;
	for (i = 0; i < 5; i++)
		len += mkframe(buf + len, "{\"k\":\"v\"}", "dd", 2);
	raw_send(sv[0], buf, len, NULL, 0);
	RUN_UNTIL(base, rx.conn == NULL);
	run_ready(base);
	ck_assert_int_eq(rx.nframes, 2);
	ck_assert_int_eq(rx.nerr, 0);
	ck_assert(is_closed(sv[1]));
	close(sv[0]);
	rx_clear(&rx);
	base_free(base);
}
END_TEST

START_TEST(free_in_err_cb)
{
	struct event_base	*base = base_new();
	int			 before = open_fds();
	struct rx		 rx = { 0 };
	uint8_t			 buf[64];
	int			 sv[2];

	pair(sv);
	conn(base, sv[1], &lim_small, &lim_small, &rx);
	rx.free_on_err = 1;
	mkframe(buf, "{}", NULL, 0);
	raw_send(sv[0], buf, 5, NULL, 0);
	close(sv[0]);
	RUN_UNTIL(base, rx.nerr == 1);
	ck_assert_ptr_null(rx.conn);
	ck_assert_int_eq(rx.err, FRAME_TRUNCATED);
	ck_assert(is_closed(sv[1]));
	run_ready(base);
	ck_assert_int_eq(rx.nerr, 1);
	rx_clear(&rx);
	ck_assert_int_eq(open_fds(), before);
	base_free(base);
}
END_TEST

/* A reply sent from inside the frame callback, then the conn freed. */
static void
echo_frame(struct frame_conn *c, struct frame *f, void *arg)
{
	struct rx	*rx = arg;

	ck_assert_int_eq(frame_conn_send(c, f->f_json, f->f_json_len,
	    f->f_data, f->f_data_len, NULL, 0), FRAME_OK);
	rx->nframes++;
	if (rx->nframes == 3) {
		frame_conn_free(c);
		rx->conn = NULL;
	}
}

START_TEST(send_and_free_in_cb)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 }, b = { 0 };
	int			 sv[2], i;

	pair(sv);
	conn(base, sv[0], &lim_small, &lim_small, &a);
	b.conn = frame_conn_new(base, sv[1], &lim_small, &lim_small,
	    echo_frame, rx_err, &b);
	ck_assert_ptr_nonnull(b.conn);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(frame_conn_send(a.conn, "{\"e\":1}", 7, "z", 1,
		    NULL, 0), FRAME_OK);
	RUN_UNTIL(base, a.nframes == 3 && a.nerr == 1);
	ck_assert_int_eq(a.err, FRAME_EOF);
	ck_assert_int_eq(b.nframes, 3);
	ck_assert_str_eq(a.json[2], "{\"e\":1}");
	rx_clear(&a);
	b.nframes = 0;
	rx_clear(&b);
	base_free(base);
}
END_TEST

START_TEST(pause_resume)
{
	struct event_base	*base = base_new();
	struct rx		 rx = { 0 };
	uint8_t			 buf[256];
	size_t			 len = 0;
	int			 sv[2], i;

	pair(sv);
	conn(base, sv[1], &lim_small, &lim_small, &rx);
	rx.pause_at = 2;
	for (i = 0; i < 5; i++)
		len += mkframe(buf + len, "{\"p\":0}", NULL, 0);
	raw_send(sv[0], buf, len, NULL, 0);
	RUN_UNTIL(base, rx.nframes == 2);
	for (i = 0; i < 20; i++)
		event_base_loop(base, EVLOOP_ONCE);
	ck_assert_int_eq(rx.nframes, 2);
	/* Buffered frames come out without new bytes from the peer. */
	frame_conn_pause(rx.conn, 0);
	RUN_UNTIL(base, rx.nframes == 5);
	frame_conn_pause(rx.conn, 1);
	raw_send(sv[0], buf, len, NULL, 0);
	close(sv[0]);
	for (i = 0; i < 20; i++)
		event_base_loop(base, EVLOOP_ONCE);
	ck_assert_int_eq(rx.nframes, 5);
	ck_assert_int_eq(rx.nerr, 0);
	frame_conn_pause(rx.conn, 0);
	RUN_UNTIL(base, rx.nerr == 1);
	ck_assert_int_eq(rx.nframes, 10);
	ck_assert_int_eq(rx.err, FRAME_EOF);
	rx_clear(&rx);
	base_free(base);
}
END_TEST

START_TEST(back_pressure)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 };
	uint8_t			*data = pattern(1u << 20, 5), *got;
	size_t			 want = 0, have = 0;
	ssize_t			 n;
	int			 sv[2], i;

	pair(sv);
	conn(base, sv[0], &lim_big, &lim_big, &a);
	frame_conn_set_drain_cb(a.conn, rx_drain, 64 * 1024);
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, data,
		    1u << 20, NULL, 0), FRAME_OK);
		want += FRAME_HDR_LEN + 2 + (1u << 20);
	}
	ck_assert_uint_gt(frame_conn_pending(a.conn), 0);
	ck_assert_uint_le(frame_conn_pending(a.conn), want);
	run_ready(base);
	ck_assert_int_eq(a.ndrain, 0);

	got = malloc(want);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	while (a.ndrain == 0 || have < want) {
		n = read(sv[1], got + have, want - have);
		if (n > 0)
			have += n;
		else
			ck_assert(n == -1 && errno == EAGAIN);
		event_base_loop(base, EVLOOP_NONBLOCK);
		ck_assert(a.ndrain == 0 ||
		    frame_conn_pending(a.conn) < 64 * 1024);
	}
	ck_assert_int_eq(a.ndrain, 1);
	ck_assert_uint_eq(frame_conn_pending(a.conn), 0);
	for (i = 0; i < 8; i++)
		ck_assert(memcmp(got + i * (FRAME_HDR_LEN + 2 + (1u << 20)) +
		    FRAME_HDR_LEN + 2, data, 1u << 20) == 0);
	ck_assert_int_eq(a.nerr, 0);
	close(sv[1]);
	rx_clear(&a);
	free(data);
	free(got);
	base_free(base);
}
END_TEST

/*
 * A read buffer grows with what arrived, never at once to what a header
 * declares, and against the budget its conn shares: a frame whose buffer
 * fits the budget exactly is read, one byte more fails that conn alone.
 */
static void
budget_frame(size_t budget, int fits)
{
	struct event_base	*base = base_new();
	struct frame_budget	 fb = { 0 };
	struct rx		 a = { 0 }, b = { 0 };
	const size_t		 dlen = 3u << 20;
	const size_t		 total = FRAME_HDR_LEN + 2 + dlen;
	uint8_t			*wire = malloc(total);
	size_t			 part = 100 * 1024;
	int			 sv[2], sw[2];

	ck_assert_ptr_nonnull(wire);
	mkframe(wire, "{}", NULL, 0);
	frame_header_write(wire, 2, dlen);
	memset(wire + FRAME_HDR_LEN + 2, 'x', dlen);
	pair(sv);
	pair(sw);
	fb.fb_max = budget;
	conn(base, sv[1], &lim_big, &lim_big, &a);
	conn(base, sw[1], &lim_big, &lim_big, &b);
	frame_conn_set_budget(a.conn, &fb);
	frame_conn_set_budget(b.conn, &fb);
	ck_assert_int_eq(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);

	/* The header and 100 KiB: the buffer is what arrived, at most
	 * doubled (or the 128 KiB a read starts with), not 3 MiB. */
	raw_send(sv[0], wire, part, NULL, 0);
	RUN_UNTIL(base, fb.fb_used > 0);
	/* the buffer is made ready for more when more comes */
	raw_send(sv[0], wire + part, 1, NULL, 0);
	part++;
	run_ready(base);
	ck_assert_uint_gt(fb.fb_used, 0);
	ck_assert_uint_le(fb.fb_used, 2 * part);
	ck_assert_int_eq(a.nerr, 0);
	/* A header alone on the other conn costs the base size. */
	raw_send(sw[0], wire, FRAME_HDR_LEN, NULL, 0);
	run_ready(base);
	raw_send(sw[0], wire + FRAME_HDR_LEN, 1, NULL, 0);
	run_ready(base);
	ck_assert_int_eq(b.nerr, 0);
	ck_assert_uint_le(fb.fb_used, 2 * part + 128 * 1024);
	close(sw[0]);
	RUN_UNTIL(base, b.nerr == 1);
	ck_assert_int_eq(b.err, FRAME_TRUNCATED);
	frame_conn_free(b.conn);
	b.conn = NULL;

	/* The rest of the frame, as the socket takes it. */
	while (part < total && a.nerr == 0) {
		ssize_t	 n = write(sv[0], wire + part, total - part);

		if (n > 0)
			part += n;
		else
			ck_assert(n == -1 && errno == EAGAIN);
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	if (fits) {
		RUN_UNTIL(base, a.nframes == 1);
		ck_assert_uint_eq(a.data_len[0], dlen);
		ck_assert_int_eq(a.nerr, 0);
		ck_assert_uint_eq(fb.fb_peak, total);
	} else {
		RUN_UNTIL(base, a.nerr == 1);
		ck_assert_int_eq(a.err, FRAME_OUT_OF_MEMORY);
		ck_assert_int_eq(a.nframes, 0);
		ck_assert_uint_le(fb.fb_peak, budget);
	}
	close(sv[0]);
	rx_clear(&a);
	rx_clear(&b);
	/* Every buffer given back is given back to the budget too. */
	ck_assert_uint_eq(fb.fb_used, 0);
	free(wire);
	base_free(base);
}

START_TEST(budget_at_limit)
{
	budget_frame(FRAME_HDR_LEN + 2 + (3u << 20), 1);
}
END_TEST

START_TEST(budget_past_limit)
{
	budget_frame(FRAME_HDR_LEN + 2 + (3u << 20) - 1, 0);
}
END_TEST

static int	 nstalled;

static void
on_stall(struct frame_conn *c, void *arg)
{
	nstalled++;
}

/*
 * A peer that does not read: past the cap of what is queued for it, its
 * frames are not read; taking something now and then keeps it from being
 * reported stalled; taking nothing for the bound reports it; reading it
 * all lets its frames in again.
 */
START_TEST(outq_cap)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 };
	uint8_t			*data = pattern(256 * 1024, 3), buf[64];
	uint8_t			 sink[65536];
	size_t			 len;
	double			 t0;
	int			 sv[2], i;

	nstalled = 0;
	pair(sv);
	conn(base, sv[0], &lim_big, &lim_big, &a);
	frame_conn_set_outq_cap(a.conn, 64 * 1024, 300, on_stall);
	ck_assert_int_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	for (i = 0; i < 32 && !frame_conn_outq_full(a.conn); i++)
		ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, data,
		    256 * 1024, NULL, 0), FRAME_OK);
	ck_assert(frame_conn_outq_full(a.conn));
	ck_assert_uint_gt(frame_conn_pending(a.conn), 64 * 1024);
	/* what the reads below take, and more */
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, data,
		    256 * 1024, NULL, 0), FRAME_OK);
	len = mkframe(buf, "{\"in\":1}", NULL, 0);
	raw_send(sv[1], buf, len, NULL, 0);
	/* Some taken every 100 ms (enough for the kernel to call the
	 * socket writable again): slow, not stalled. */
	t0 = now();
	i = 0;
	while (now() - t0 < 0.7) {
		event_base_loop(base, EVLOOP_ONCE);
		if (now() - t0 > 0.1 * (i + 1)) {
			ck_assert_int_gt(read(sv[1], sink, sizeof(sink)), 0);
			ck_assert_int_gt(read(sv[1], sink, sizeof(sink)), 0);
			ck_assert_int_gt(read(sv[1], sink, sizeof(sink)), 0);
			i++;
		}
	}
	ck_assert_uint_gt(frame_conn_pending(a.conn), 64 * 1024);
	ck_assert_int_eq(nstalled, 0);
	ck_assert_int_eq(a.nframes, 0);
	/* Nothing taken: reported once, after the bound. */
	t0 = now();
	RUN_UNTIL(base, nstalled == 1);
	ck_assert(now() - t0 >= 0.28);
	for (i = 0; i < 20; i++)
		event_base_loop(base, EVLOOP_ONCE);
	ck_assert_int_eq(nstalled, 1);
	ck_assert_int_eq(a.nframes, 0);
	/* Read it all: the peer's frame comes in. */
	while (frame_conn_pending(a.conn) > 0 || a.nframes == 0) {
		ssize_t	 n = read(sv[1], sink, sizeof(sink));

		ck_assert(n > 0 || (n == -1 && errno == EAGAIN));
		event_base_loop(base, EVLOOP_NONBLOCK);
	}
	ck_assert(!frame_conn_outq_full(a.conn));
	ck_assert_int_eq(a.nframes, 1);
	ck_assert_str_eq(a.json[0], "{\"in\":1}");
	ck_assert_int_eq(a.nerr, 0);
	close(sv[1]);
	rx_clear(&a);
	free(data);
	base_free(base);
}
END_TEST

/*
 * Several frames in one write, from the caller's buffers: what the socket
 * does not take at once is copied, so the buffers may change as soon as
 * the call returns.
 */
START_TEST(sendv_round_trip)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 }, b = { 0 };
	uint8_t			*big = pattern(3u << 20, 11);
	uint8_t			*copy = pattern(3u << 20, 11);
	struct frame_part	 fp[3] = {
		{ "{\"t\":\"a\"}", 9, "abc", 3 },
		{ "{\"t\":\"big\"}", 11, big, 3u << 20 },
		{ "{\"t\":\"c\"}", 9, NULL, 0 },
	};
	int			 sv[2];

	pair(sv);
	conn(base, sv[0], &lim_big, &lim_big, &a);
	conn(base, sv[1], &lim_big, &lim_big, &b);
	ck_assert_int_eq(frame_conn_sendv(a.conn, fp, 3), FRAME_OK);
	/* More than a socket takes at once: the rest was copied. */
	ck_assert_uint_gt(frame_conn_pending(a.conn), 0);
	memset(big, 0, 3u << 20);
	/* Queued behind them, in order. */
	ck_assert_int_eq(frame_conn_send(a.conn, "{\"t\":\"d\"}", 9, "de",
	    2, NULL, 0), FRAME_OK);
	ck_assert_int_eq(frame_conn_sendv(a.conn, fp, 1), FRAME_OK);
	RUN_UNTIL(base, b.nframes == 5);
	ck_assert_str_eq(b.json[0], "{\"t\":\"a\"}");
	ck_assert_mem_eq(b.data[0], "abc", 3);
	ck_assert_str_eq(b.json[1], "{\"t\":\"big\"}");
	ck_assert_uint_eq(b.data_len[1], 3u << 20);
	ck_assert(memcmp(b.data[1], copy, 3u << 20) == 0);
	ck_assert_str_eq(b.json[2], "{\"t\":\"c\"}");
	ck_assert_uint_eq(b.data_len[2], 0);
	ck_assert_str_eq(b.json[3], "{\"t\":\"d\"}");
	ck_assert_str_eq(b.json[4], "{\"t\":\"a\"}");
	ck_assert_int_eq(frame_conn_pending(a.conn), 0);
	ck_assert_int_eq(a.nerr + b.nerr, 0);
	rx_clear(&a);
	rx_clear(&b);
	free(big);
	free(copy);
	base_free(base);
}
END_TEST

START_TEST(sendv_refused)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 };
	struct frame_part	 fp[FRAME_SENDV_MAX + 1];
	char			 json[200];
	int			 sv[2], i;

	pair(sv);
	conn(base, sv[0], &lim_small, &lim_small, &a);
	for (i = 0; i <= FRAME_SENDV_MAX; i++) {
		fp[i].fp_json = "{}";
		fp[i].fp_json_len = 2;
		fp[i].fp_data = NULL;
		fp[i].fp_data_len = 0;
	}
	ck_assert_int_eq(frame_conn_sendv(a.conn, fp, 0),
	    FRAME_SEND_TOO_LONG);
	ck_assert_int_eq(frame_conn_sendv(a.conn, fp, FRAME_SENDV_MAX + 1),
	    FRAME_SEND_TOO_LONG);
	/* One bad frame refuses them all: nothing is sent. */
	memset(json, ' ', sizeof(json));
	fp[2].fp_json = json;
	fp[2].fp_json_len = sizeof(json);
	ck_assert_int_eq(frame_conn_sendv(a.conn, fp, 3),
	    FRAME_SEND_TOO_LONG);
	fp[2].fp_json_len = 1;
	ck_assert_int_eq(frame_conn_sendv(a.conn, fp, 3), FRAME_EMPTY_JSON);
	fp[2].fp_json_len = 2;
	fp[1].fp_data = json;
	fp[1].fp_data_len = 51;
	ck_assert_int_eq(frame_conn_sendv(a.conn, fp, 3),
	    FRAME_SEND_TOO_LONG);
	ck_assert_int_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	ck_assert_int_eq(read(sv[1], json, sizeof(json)), -1);
	ck_assert_int_eq(errno, EAGAIN);
	close(sv[1]);
	rx_clear(&a);
	base_free(base);
}
END_TEST

/* The batch callback: once per read, after its frames, whose data is
 * still where the frame callback saw it. */
struct batch {
	struct rx	 rx;
	const uint8_t	*where[MAXREC];
	int		 nbatch;
	int		 seen;
	int		 intact;
};

static void
batch_frame(struct frame_conn *c, struct frame *f, void *arg)
{
	struct batch	*bt = arg;

	bt->where[bt->rx.nframes] = f->f_data;
	rx_frame(c, f, &bt->rx);
}

static void
batch_end(struct frame_conn *c, void *arg)
{
	struct batch	*bt = arg;
	int		 i;

	bt->nbatch++;
	for (; bt->seen < bt->rx.nframes; bt->seen++) {
		i = bt->seen;
		if (bt->rx.data_len[i] > 0 && memcmp(bt->where[i],
		    bt->rx.data[i], bt->rx.data_len[i]) == 0)
			bt->intact++;
	}
}

START_TEST(batch_callback)
{
	struct event_base	*base = base_new();
	struct batch		 bt;
	uint8_t			 wire[4096], *p = wire;
	char			 data[100];
	int			 sv[2], i;

	memset(&bt, 0, sizeof(bt));
	pair(sv);
	bt.rx.conn = frame_conn_new(base, sv[1], &lim_big, &lim_big,
	    batch_frame, rx_err, &bt);
	ck_assert_ptr_nonnull(bt.rx.conn);
	frame_conn_set_batch_cb(bt.rx.conn, batch_end);
	/* Three frames and half of a fourth in one write, then the rest. */
	for (i = 0; i < 4; i++) {
		memset(data, 'a' + i, sizeof(data));
		p += mkframe(p, "{}", data, sizeof(data));
	}
	raw_send(sv[0], wire, (p - wire) - 50, NULL, 0);
	RUN_UNTIL(base, bt.nbatch == 1);
	ck_assert_int_eq(bt.rx.nframes, 3);
	ck_assert_int_eq(bt.intact, 3);
	raw_send(sv[0], p - 50, 50, NULL, 0);
	RUN_UNTIL(base, bt.nbatch == 2);
	ck_assert_int_eq(bt.rx.nframes, 4);
	ck_assert_int_eq(bt.intact, 4);
	close(sv[0]);
	RUN_UNTIL(base, bt.rx.nerr == 1);
	ck_assert_int_eq(bt.nbatch, 2);
	rx_clear(&bt.rx);
	base_free(base);
}
END_TEST

/* Shrinking from inside the frame callback waits for the read to end;
 * the buffer comes back for the next frames. */
static void
shrink_frame(struct frame_conn *c, struct frame *f, void *arg)
{
	rx_frame(c, f, arg);
	frame_conn_shrink(c);
}

START_TEST(shrink_read_buffer)
{
	struct event_base	*base = base_new();
	struct rx		 b = { 0 };
	uint8_t			 wire[1024], *p = wire;
	int			 sv[2];

	pair(sv);
	b.conn = frame_conn_new(base, sv[1], &lim_big, &lim_big,
	    shrink_frame, rx_err, &b);
	ck_assert_ptr_nonnull(b.conn);
	frame_conn_set_read_size(b.conn, 64);
	p += mkframe(p, "{\"n\":1}", "abc", 3);
	p += mkframe(p, "{\"n\":2}", "defg", 4);
	raw_send(sv[0], wire, p - wire, NULL, 0);
	RUN_UNTIL(base, b.nframes == 2);
	ck_assert_mem_eq(b.data[1], "defg", 4);
	/* Between reads, at once. */
	frame_conn_shrink(b.conn);
	raw_send(sv[0], wire, p - wire, NULL, 0);
	RUN_UNTIL(base, b.nframes == 4);
	ck_assert_str_eq(b.json[3], "{\"n\":2}");
	ck_assert_mem_eq(b.data[3], "defg", 4);
	ck_assert_int_eq(b.nerr, 0);
	close(sv[0]);
	rx_clear(&b);
	base_free(base);
}
END_TEST

static void
free_on_drain(struct frame_conn *c, void *arg)
{
	struct rx	*rx = arg;

	rx->ndrain++;
	frame_conn_free(c);
	rx->conn = NULL;
}

START_TEST(free_in_drain_cb)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 }, b = { 0 };
	uint8_t			*data = pattern(1u << 20, 4);
	int			 sv[2], i;

	pair(sv);
	conn(base, sv[0], &lim_big, &lim_big, &a);
	conn(base, sv[1], &lim_big, &lim_big, &b);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, data,
		    1u << 20, NULL, 0), FRAME_OK);
	frame_conn_set_drain_cb(a.conn, free_on_drain, 1);
	RUN_UNTIL(base, a.ndrain == 1 && b.nframes == 3);
	ck_assert_ptr_null(a.conn);
	RUN_UNTIL(base, b.nerr == 1);
	ck_assert_int_eq(b.err, FRAME_EOF);
	ck_assert_int_eq(a.nerr, 0);
	rx_clear(&a);
	rx_clear(&b);
	free(data);
	base_free(base);
}
END_TEST

/* A write failure is reported from the loop, never inside the send. */
START_TEST(write_error_deferred)
{
	struct event_base	*base = base_new();
	struct rx		 a = { 0 };
	int			 sv[2], fd;

	pair(sv);
	conn(base, sv[0], &lim_small, &lim_small, &a);
	close(sv[1]);
	a.in_send = 1;
	ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, NULL, 0, NULL, 0),
	    FRAME_OK);
	a.in_send = 0;
	ck_assert_int_eq(a.nerr, 0);
	RUN_UNTIL(base, a.nerr == 1);
	ck_assert(a.err == FRAME_IO || a.err == FRAME_EOF);
	run_ready(base);
	ck_assert_int_eq(a.nerr, 1);
	/* Afterwards sends are refused and their descriptors closed. */
	fd = memfd("late");
	ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, NULL, 0, &fd, 1),
	    FRAME_IO);
	ck_assert(is_closed(fd));
	rx_clear(&a);
	base_free(base);
}
END_TEST

START_TEST(free_with_queue)
{
	struct event_base	*base = base_new();
	int			 before = open_fds();
	struct rx		 a = { 0 };
	uint8_t			*data = pattern(1u << 20, 2);
	int			 sv[2], fd, i;

	pair(sv);
	conn(base, sv[0], &lim_big, &lim_big, &a);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, data,
		    1u << 20, NULL, 0), FRAME_OK);
	fd = memfd("queued");
	ck_assert_int_eq(frame_conn_send(a.conn, "{}", 2, NULL, 0, &fd, 1),
	    FRAME_OK);
	ck_assert(!is_closed(fd));
	rx_clear(&a);
	ck_assert(is_closed(fd));
	close(sv[1]);
	free(data);
	ck_assert_int_eq(open_fds(), before);
	base_free(base);
}
END_TEST

/*
 * Blocking helpers
 */

START_TEST(blocking_round_trip)
{
	struct frame	 f;
	uint8_t		*json, *data;
	int		 sv[2], fd;
	ino_t		 i1;

	pair(sv);
	fd = memfd("blocking");
	i1 = ino(fd);
	ck_assert_int_eq(frame_send_blocking(sv[0], "{\"b\":1}", 7, "DATA", 4,
	    &fd, 1), FRAME_OK);
	/* The caller keeps its own descriptors. */
	ck_assert(!is_closed(fd));
	ck_assert_int_eq(frame_send_blocking(sv[0], "{}", 2, NULL, 0, NULL,
	    0), FRAME_OK);
	ck_assert_int_eq(frame_recv_blocking(sv[1], &lim_small, &f, &json,
	    &data), FRAME_OK);
	ck_assert_str_eq((char *)json, "{\"b\":1}");
	ck_assert_ptr_eq(f.f_json, json);
	ck_assert_uint_eq(f.f_json_len, 7);
	ck_assert_uint_eq(f.f_data_len, 4);
	ck_assert_mem_eq(data, "DATA", 4);
	ck_assert_int_eq(f.f_nfds, 1);
	ck_assert_uint_eq(ino(f.f_fds[0]), i1);
	ck_assert_int_eq(f.f_fds[1], -1);
	close(f.f_fds[0]);
	free(json);
	free(data);
	ck_assert_int_eq(frame_recv_blocking(sv[1], &lim_small, &f, &json,
	    &data), FRAME_OK);
	ck_assert_str_eq((char *)json, "{}");
	ck_assert_ptr_null(data);
	ck_assert_int_eq(f.f_nfds, 0);
	free(json);

	ck_assert_int_eq(frame_send_blocking(sv[0], "{", 1, NULL, 0, NULL, 0),
	    FRAME_EMPTY_JSON);
	ck_assert_int_eq(frame_send_blocking(sv[0], "{}", 2, NULL, 0, NULL,
	    FRAME_MAXFDS + 1), FRAME_TOO_MANY_FDS);
	close(sv[0]);
	ck_assert_int_eq(frame_recv_blocking(sv[1], &lim_small, &f, &json,
	    &data), FRAME_EOF);
	ck_assert_ptr_null(json);
	ck_assert_ptr_null(data);
	close(sv[1]);
	close(fd);
}
END_TEST

START_TEST(blocking_errors)
{
	struct frame	 f;
	uint8_t		 buf[64], *json, *data;
	size_t		 len;
	int		 sv[2], fd, fds[FRAME_MAXFDS + 1], i;
	int		 before = open_fds();

	/* Truncated, with a descriptor that must not leak. */
	pair(sv);
	fd = memfd("trunc");
	len = mkframe(buf, "{\"abc\":1}", NULL, 0);
	raw_send(sv[0], buf, len - 1, &fd, 1);
	close(fd);
	close(sv[0]);
	ck_assert_int_eq(frame_recv_blocking(sv[1], &lim_small, &f, &json,
	    &data), FRAME_TRUNCATED);
	ck_assert_int_eq(f.f_nfds, 0);
	ck_assert_ptr_null(json);
	close(sv[1]);

	/* Over the limit. */
	pair(sv);
	frame_header_write(buf, 101, 0);
	raw_send(sv[0], buf, FRAME_HDR_LEN, NULL, 0);
	ck_assert_int_eq(frame_recv_blocking(sv[1], &lim_small, &f, &json,
	    &data), FRAME_JSON_TOO_LONG);
	close(sv[0]);
	close(sv[1]);

	/* More descriptors than a frame may carry. */
	pair(sv);
	for (i = 0; i < FRAME_MAXFDS + 1; i++)
		fds[i] = memfd("many");
	len = mkframe(buf, "{}", NULL, 0);
	raw_send(sv[0], buf, len, fds, FRAME_MAXFDS + 1);
	ck_assert_int_eq(frame_recv_blocking(sv[1], &lim_small, &f, &json,
	    &data), FRAME_BAD_CMSG);
	ck_assert_int_eq(f.f_nfds, 0);
	for (i = 0; i < FRAME_MAXFDS + 1; i++)
		close(fds[i]);
	close(sv[0]);
	close(sv[1]);

	/* Not a socket. */
	ck_assert_int_eq(pipe(sv), 0);
	ck_assert_int_eq(frame_send_blocking(sv[1], "{}", 2, NULL, 0, NULL, 0),
	    FRAME_IO);
	close(sv[0]);
	close(sv[1]);
	ck_assert_int_eq(open_fds(), before);
}
END_TEST

/* A frame larger than the socket buffer, from another process. */
START_TEST(blocking_large)
{
	struct frame	 f;
	uint8_t		*json, *data, *big = pattern(2u << 20, 11);
	pid_t		 pid;
	int		 sv[2], st;

	pair(sv);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(sv[1]);
		_exit(frame_send_blocking(sv[0], "{\"l\":2}", 7, big, 2u << 20,
		    NULL, 0) == FRAME_OK ? 0 : 1);
	}
	close(sv[0]);
	ck_assert_int_eq(frame_recv_blocking(sv[1], &lim_big, &f, &json,
	    &data), FRAME_OK);
	ck_assert_uint_eq(f.f_data_len, 2u << 20);
	ck_assert(memcmp(data, big, 2u << 20) == 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	free(json);
	free(data);
	free(big);
	close(sv[1]);
}
END_TEST

static Suite *
frame_suite(void)
{
	Suite	*s = suite_create("frame");
	TCase	*tc;

	tc = tcase_create("header");
	tcase_add_test(tc, header_limits);
	tcase_add_test(tc, header_no_data_edge);
	tcase_add_test(tc, err_strings);
	suite_add_tcase(s, tc);

	tc = tcase_create("conn");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, conn_flags);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, many_small_frames);
	tcase_add_loop_test(tc, split_reads, 0, 10);
	tcase_add_test(tc, truncated_input);
	tcase_add_test(tc, oversize_header);
	tcase_add_test(tc, at_limits);
	suite_add_tcase(s, tc);

	tc = tcase_create("fds");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, fds_one);
	tcase_add_test(tc, fds_max);
	tcase_add_test(tc, fds_past_the_in_flight_limit);
	tcase_add_test(tc, fds_belong_to_their_frame);
	tcase_add_test(tc, fds_not_taken_are_closed);
	tcase_add_test(tc, fds_too_many_to_send);
	tcase_add_test(tc, fds_too_many_in_one_message);
	tcase_add_loop_test(tc, fds_too_many_in_one_frame, 0, 2);
	tcase_add_test(tc, fds_mid_frame);
	tcase_add_test(tc, fds_then_eof);
	suite_add_tcase(s, tc);

	tc = tcase_create("callbacks");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, free_in_frame_cb);
	tcase_add_test(tc, free_in_err_cb);
	tcase_add_test(tc, send_and_free_in_cb);
	tcase_add_test(tc, pause_resume);
	tcase_add_test(tc, back_pressure);
	tcase_add_test(tc, budget_at_limit);
	tcase_add_test(tc, budget_past_limit);
	tcase_add_test(tc, outq_cap);
	tcase_add_test(tc, sendv_round_trip);
	tcase_add_test(tc, sendv_refused);
	tcase_add_test(tc, batch_callback);
	tcase_add_test(tc, shrink_read_buffer);
	tcase_add_test(tc, free_in_drain_cb);
	tcase_add_test(tc, write_error_deferred);
	tcase_add_test(tc, free_with_queue);
	suite_add_tcase(s, tc);

	tc = tcase_create("blocking");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, blocking_round_trip);
	tcase_add_test(tc, blocking_errors);
	tcase_add_test(tc, blocking_large);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	signal(SIGPIPE, SIG_IGN);
	sr = srunner_create(frame_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
