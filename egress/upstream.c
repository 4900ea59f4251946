/*
 * Outbound HTTP/1.1 calls on OpenSSL and the libevent loop (upstream.h).
 *
 * The costs are counted in system calls, which are dear on the hosts this
 * runs on.  A wake-up of a connection costs one recv() into a buffer large
 * enough for many TLS records; TLS reads that buffer through a BIO of ours,
 * every record in it is decrypted and parsed (resp.c), and the body bytes
 * found go to on_data at once, in one piece: nothing waits for more than has
 * arrived.  What TLS writes collects in a buffer that one send() empties.
 * A connection's read event stays registered for its whole life, idle in
 * the pool too, so that a server closing it is seen at once and reusing it
 * costs one peek; its write event is added only while bytes wait to go.
 *
 * Re-entrancy: callbacks run only from this file's event callbacks.  A
 * start, cancel or resume asked for while a callback is on the stack
 * (up_depth > 0) is queued on up_work, and up_settle() does it once the
 * callback has returned; up_settle() runs only at the end of this file's
 * event callbacks, never below a caller's frame.
 *
 * Pausing: on_data has consumed its bytes whatever it answers.  After
 * UP_PAUSE the read event is removed, so TCP pushes back on the upstream;
 * ciphertext already read stays in the connection's stash until the
 * resume.
 *
 * Names are resolved by getaddrinfo(3) in a thread, as glibc's resolver
 * blocks; the thread hands its answer back through a pipe (upname.c).  TLS
 * is uptls.c's, the request's bytes upreq.c's (upstreamint.h).
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "log.h"
#include "proc.h"
#include "resp.h"
#include "upstream.h"
#include "upstreamint.h"

_Static_assert(UP_RESP_HDRS_MAX == RESP_HDRS_MAX &&
    UP_RESP_HDR_BYTES_MAX == RESP_HDR_BYTES_MAX, "the reader's bounds");

static void	up_call_send(struct up_call *);
static void	up_conn_close(struct up_conn *);
static int	up_conn_pass(struct up_conn *);

const char *
up_result_to_string(enum up_result r)
{
	switch (r) {
	case UP_OK:
		return "ok";
	case UP_CONNECT_FAILED:
		return "connect failed";
	case UP_TLS_FAILED:
		return "TLS failed";
	case UP_TIMEOUT:
		return "timeout";
	case UP_ABORTED:
		return "aborted";
	case UP_PROTOCOL:
		return "protocol error";
	case UP_TOO_LARGE:
		return "response too large";
	case UP_OTHER:
		break;
	}
	return "other error";
}

char *
up_strdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		fatal("%s", __func__);
	return p;
}

/* ":port " as the pool's keys have it (in a static buffer). */
const char *
up_port_str(unsigned int port)
{
	static char	 b[16];
	char		*p = b + sizeof(b);

	*--p = '\0';
	*--p = ' ';
	do
		*--p = '0' + port % 10;
	while ((port /= 10) != 0);
	*--p = ':';
	return p;
}

/* The four strings one after another, malloc'd: a pool key without a
 * printf of its own per call. */
char *
up_join(const char *a, const char *b, const char *c, const char *d)
{
	size_t	 la = strlen(a), lb = strlen(b), lc = strlen(c),
		 ld = strlen(d);
	char	*p;

	if ((p = malloc(la + lb + lc + ld + 1)) == NULL)
		fatal("%s", __func__);
	memcpy(p, a, la);
	memcpy(p + la, b, lb);
	memcpy(p + la + lb, c, lc);
	memcpy(p + la + lb + lc, d, ld + 1);
	return p;
}

/*
 * Buffers.
 */

void
up_buf_take(struct up_buf *b, size_t n)
{
	b->ub_off += n;
	b->ub_len -= n;
	if (b->ub_len == 0)
		b->ub_off = 0;
}

/* Append, moving what is left to the front first when that makes room. */
void
up_buf_add(struct up_buf *b, const void *p, size_t n)
{
	size_t	 cap;
	uint8_t	*q;

	if (b->ub_off > 0 && b->ub_off + b->ub_len + n > b->ub_cap) {
		memmove(b->ub_p, b->ub_p + b->ub_off, b->ub_len);
		b->ub_off = 0;
	}
	if (b->ub_len + n > b->ub_cap) {
		cap = b->ub_cap == 0 ? 4096 : b->ub_cap;
		while (cap < b->ub_len + n)
			cap *= 2;
		if ((q = realloc(b->ub_p, cap)) == NULL)
			fatal("%s", __func__);
		b->ub_p = q;
		b->ub_cap = cap;
	}
	memcpy(b->ub_p + b->ub_off + b->ub_len, p, n);
	b->ub_len += n;
}

static void
up_buf_free(struct up_buf *b)
{
	free(b->ub_p);
	memset(b, 0, sizeof(*b));
}

/*
 * The event loop side.
 */

static void
up_work_push(struct up_call *c)
{
	struct upstream	*up = c->uc_up;

	if (!c->uc_queued) {
		TAILQ_INSERT_TAIL(&up->up_work, c, uc_work_entry);
		c->uc_queued = 1;
	}
	event_active(up->up_work_ev, EV_TIMEOUT, 0);
}

static void
up_work_event(evutil_socket_t fd, short events, void *arg)
{
	up_settle(arg);
}

static void
up_ev_add(struct event *ev, int *on)
{
	if (*on)
		return;
	if (event_add(ev, NULL) == -1)
		fatalx("%s: event_add", __func__);
	*on = 1;
}

static void
up_ev_del(struct event *ev, int *on)
{
	if (!*on)
		return;
	if (event_del(ev) == -1)
		fatalx("%s: event_del", __func__);
	*on = 0;
}

/*
 * Callbacks, counted so that nothing below them frees what they may use.
 */

static int
up_cb_head(struct up_call *c)
{
	struct upstream	*up = c->uc_up;
	struct up_hdr	 hdrs[UP_RESP_HDRS_MAX];
	struct resp_hdr	 rh[UP_RESP_HDRS_MAX];
	size_t		 i, n;
	int		 rv = 0;

	c->uc_head_done = 1;
	c->uc_flush = 1;
	if (c->uc_cb.on_head == NULL)
		return 0;
	n = resp_headers(&c->uc_resp, rh, UP_RESP_HDRS_MAX);
	for (i = 0; i < n; i++) {
		hdrs[i].name = rh[i].name;
		hdrs[i].value = rh[i].value;
	}
	up->up_depth++;
	rv = c->uc_cb.on_head(c, c->uc_resp.rs_status, hdrs, n, c->uc_arg);
	up->up_depth--;
	return rv;
}

static int
up_cb_data(struct up_call *c, const uint8_t *p, size_t n)
{
	struct upstream	*up = c->uc_up;
	int		 rv;

	c->uc_flush = 1;
	if (c->uc_cb.on_data == NULL)
		return 0;
	c->uc_resume = 0;
	up->up_depth++;
	rv = c->uc_cb.on_data(c, p, n, c->uc_arg);
	up->up_depth--;
	return rv;
}

/* The pass is over: what on_head and on_data were given may go out. */
static void
up_cb_flush(struct up_call *c)
{
	struct upstream	*up = c->uc_up;

	if (!c->uc_flush || c->uc_cancelled || c->uc_ending)
		return;
	c->uc_flush = 0;
	if (c->uc_cb.on_flush == NULL)
		return;
	up->up_depth++;
	c->uc_cb.on_flush(c, c->uc_arg);
	up->up_depth--;
}

/*
 * Connections.
 */

static void
up_conn_unlink_idle(struct up_conn *co)
{
	if (co->co_idle) {
		TAILQ_REMOVE(&co->co_up->up_idle, co, co_idle_entry);
		co->co_up->up_nidle--;
		co->co_idle = 0;
	}
}

static void
up_conn_close(struct up_conn *co)
{
	struct upstream	*up = co->co_up;

	up_conn_unlink_idle(co);
	if (co->co_call != NULL)
		co->co_call->uc_conn = NULL;
	TAILQ_REMOVE(&up->up_conns, co, co_entry);
	event_free(co->co_rev);
	event_free(co->co_wev);
	if (co->co_ssl != NULL)
		SSL_free(co->co_ssl);
	/* On Linux the descriptor is gone even when close() says EINTR. */
	if (close(co->co_fd) == -1 && errno != EINTR)
		log_warn("%s: close", __func__);
	up_buf_free(&co->co_stash);
	up_buf_free(&co->co_out);
	free(co->co_key);
	free(co);
}

/*
 * Send what waits; 0, or -1 with errno.  The write event stays on while
 * the call's request is not all handed over: a flush made for bytes that
 * reading produced (a TLS 1.3 session ticket arriving mid-request) may
 * empty the buffer, and the event is then what goes on with the request.
 */
static int
up_conn_flush(struct up_conn *co)
{
	struct up_buf	*b = &co->co_out;
	ssize_t		 n;

	while (b->ub_len > 0) {
		n = send(co->co_fd, b->ub_p + b->ub_off, b->ub_len,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				up_ev_add(co->co_wev, &co->co_wev_on);
				return 0;
			}
			return -1;
		}
		up_buf_take(b, (size_t)n);
	}
	if (co->co_call != NULL && co->co_state == CO_OPEN &&
	    !co->co_call->uc_sent)
		up_ev_add(co->co_wev, &co->co_wev_on);
	else
		up_ev_del(co->co_wev, &co->co_wev_on);
	return 0;
}

/* A call's connection failed: errno-style err, or 0. */
void
up_call_fail_io(struct up_call *c, enum up_result r, int err,
    const char *what)
{
	c->uc_os_errno = err;
	if (err != 0)
		snprintf(c->uc_detail, sizeof(c->uc_detail), "%s: %s", what,
		    strerror(err));
	else
		snprintf(c->uc_detail, sizeof(c->uc_detail), "%s", what);
	up_call_end(c, r, c->uc_detail);
}

/* Keep what the window still holds for the next pass. */
static void
up_conn_keep_window(struct up_conn *co)
{
	if (co->co_winlen > 0)
		up_buf_add(&co->co_stash, co->co_win, co->co_winlen);
	co->co_win = NULL;
	co->co_winlen = 0;
}

/*
 * Plaintext that has arrived, at most UP_PLAIN_BUF: TLS decrypts into
 * up_pbuf; plain http hands over the stash, else the window.  *closed is
 * set at the end of the stream; co_tls_err when TLS failed.
 */
static size_t
up_conn_plain(struct up_conn *co, uint8_t **p, int *closed)
{
	struct upstream	*up = co->co_up;
	size_t		 got = 0, k;
	int		 r, e;

	*closed = 0;
	if (co->co_ssl == NULL) {
		if (co->co_stash.ub_len > 0) {
			*p = co->co_stash.ub_p + co->co_stash.ub_off;
			got = co->co_stash.ub_len;
			co->co_stash.ub_off = co->co_stash.ub_len = 0;
		} else if (co->co_winlen > 0) {
			*p = co->co_win;
			got = co->co_winlen;
			co->co_win = NULL;
			co->co_winlen = 0;
		} else
			*closed = co->co_eof;
		return got;
	}
	*p = up->up_pbuf;
	/* SSL_get_error() reads the queue: nothing older may be in it. */
	ERR_clear_error();
	while (got < UP_PLAIN_BUF) {
		r = SSL_read_ex(co->co_ssl, up->up_pbuf + got,
		    UP_PLAIN_BUF - got, &k);
		if (r == 1) {
			got += k;
			continue;
		}
		e = SSL_get_error(co->co_ssl, r);
		if (e == SSL_ERROR_ZERO_RETURN)
			*closed = 1;
		else if (e != SSL_ERROR_WANT_READ)
			co->co_tls_err = 1;
		break;
	}
	return got;
}

/* A connection done with its call: into the pool, or closed. */
static void
up_conn_release(struct up_conn *co, int reusable)
{
	struct upstream	*up = co->co_up;
	struct up_conn	*old, *o;
	size_t		 same = 0;

	co->co_call = NULL;
	if (!reusable || co->co_key == NULL || co->co_stash.ub_len > 0 ||
	    co->co_winlen > 0 || co->co_out.ub_len > 0 || co->co_eof) {
		up_conn_close(co);
		return;
	}
	/* Pooled connections read, to see a close. */
	up_ev_add(co->co_rev, &co->co_rev_on);
	co->co_idle_ms = proc_now_ms();
	co->co_idle = 1;
	TAILQ_INSERT_HEAD(&up->up_idle, co, co_idle_entry);
	up->up_nidle++;
	old = NULL;
	TAILQ_FOREACH(o, &up->up_idle, co_idle_entry)
		if (strcmp(o->co_key, co->co_key) == 0) {
			same++;
			old = o;
		}
	if (same > UP_POOL_PER_KEY)
		up_conn_close(old);
	else if (up->up_nidle > UP_POOL_MAX)
		up_conn_close(TAILQ_LAST(&up->up_idle, up_idleq));
}

/*
 * An idle connection has bytes or an end to show: a TLS session ticket
 * keeps it; anything else, or the end, closes it.  0 when it is kept.
 */
static int
up_conn_idle_read(struct up_conn *co)
{
	uint8_t	*p;
	size_t	 n;
	int	 closed;

	n = up_conn_plain(co, &p, &closed);
	if (n > 0 || closed || co->co_tls_err || co->co_eof ||
	    (co->co_out.ub_len > 0 && up_conn_flush(co) == -1)) {
		up_conn_close(co);
		return -1;
	}
	up_conn_keep_window(co);
	return 0;
}

/* One recv() into the window: >0 bytes, 0 at the end, -1 with errno. */
static ssize_t
up_conn_recv(struct up_conn *co)
{
	ssize_t	 n;

	do
		n = recv(co->co_fd, co->co_up->up_rbuf, UP_RECV_BUF,
		    MSG_DONTWAIT);
	while (n == -1 && errno == EINTR);
	if (n > 0) {
		co->co_win = co->co_up->up_rbuf;
		co->co_winlen = (size_t)n;
	} else if (n == 0)
		co->co_eof = 1;
	return n;
}

/* Take an idle connection for key: the newest that is still open. */
static struct up_conn *
up_pool_take(struct upstream *up, const char *key)
{
	struct up_conn	*co, *next;
	uint64_t	 now = proc_now_ms();
	ssize_t		 n;
	uint8_t		 b;

	for (co = TAILQ_FIRST(&up->up_idle); co != NULL; co = next) {
		next = TAILQ_NEXT(co, co_idle_entry);
		if (strcmp(co->co_key, key) != 0)
			continue;
		if (now - co->co_idle_ms > UP_POOL_IDLE_MS) {
			up_conn_close(co);
			continue;
		}
		/* A close the loop has not been told of yet: the request
		 * would be lost, and never sent again. */
		do
			n = recv(co->co_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
		while (n == -1 && errno == EINTR);
		if (n > 0) {
			/* A session ticket keeps it; anything else not. */
			if (up_conn_recv(co) <= 0) {
				up_conn_close(co);
				continue;
			}
			if (up_conn_idle_read(co) == -1)
				continue;
		} else if (n == 0 || (errno != EAGAIN &&
		    errno != EWOULDBLOCK)) {
			up_conn_close(co);
			continue;
		}
		up_conn_unlink_idle(co);
		return co;
	}
	return NULL;
}

/*
 * The answer.
 */

/* The whole answer is in; junk: bytes came after it. */
static void
up_call_done(struct up_call *c, int junk)
{
	struct up_conn	*co = c->uc_conn;
	int		 reuse;

	c->uc_done = 1;
	reuse = c->uc_resp.rs_keep_alive && !junk && c->uc_sent &&
	    co != NULL && co->co_out.ub_len == 0;
	if (co != NULL) {
		c->uc_conn = NULL;
		up_conn_release(co, reuse);
	}
	up_call_end(c, UP_OK, "ok");
}

/*
 * Hand over the answer bytes in p (moved about in place).  -1 when the
 * call ended (it and its connection may be gone); 0 when every byte was
 * taken, the call paused or cancelled or not.
 */
static int
up_call_answer(struct up_call *c, uint8_t *p, size_t n)
{
	enum resp_status	 st;
	size_t			 pos = 0, used, body;
	int			 rv;

	for (;;) {
		st = resp_feed(&c->uc_resp, p + pos, n - pos, &used, &body);
		if (st == RESP_ERROR) {
			up_call_end(c, UP_PROTOCOL, c->uc_resp.rs_err);
			return -1;
		}
		if (body > 0) {
			if (c->uc_max_body > 0 &&
			    body > c->uc_max_body - c->uc_received) {
				up_call_end(c, UP_TOO_LARGE,
				    "response body over the limit");
				return -1;
			}
			c->uc_received += body;
			rv = up_cb_data(c, p + pos, body);
			if (c->uc_cancelled)
				return 0;
			if (rv == UP_PAUSE) {
				/* Resumed inside on_data: not paused. */
				if (!c->uc_resume)
					c->uc_paused = 1;
				c->uc_resume = 0;
			} else if (rv != 0) {
				up_call_end(c, UP_ABORTED, "refused by on_data");
				return -1;
			}
		}
		pos += used;
		if (st == RESP_DONE) {
			up_call_done(c, pos < n);
			return -1;
		}
		if (st != RESP_HEAD)
			return 0;
		/* Refused before any body byte, and before the head. */
		if (c->uc_resp.rs_has_length && c->uc_max_body > 0 &&
		    c->uc_resp.rs_length > c->uc_max_body) {
			up_call_end(c, UP_TOO_LARGE,
			    "response body over the limit");
			return -1;
		}
		rv = up_cb_head(c);
		if (c->uc_cancelled)
			return 0;
		if (rv != 0) {
			up_call_end(c, UP_ABORTED, "refused by on_head");
			return -1;
		}
		/* The rest, even none: an answer without a body ends here. */
	}
}

static void
up_call_eof(struct up_call *c)
{
	if (resp_eof(&c->uc_resp) == RESP_DONE) {
		up_call_done(c, 0);
		return;
	}
	up_call_end(c, UP_PROTOCOL, c->uc_resp.rs_err);
}

/*
 * Read what has arrived for the connection's call, and hand it on.  1 while
 * the call goes on reading; 0 when it ended (the call and the connection
 * may be gone), paused or was cancelled.
 */
static int
up_conn_pass(struct up_conn *co)
{
	struct up_call	*c = co->co_call;
	uint8_t		*p;
	size_t		 n;
	int		 closed, err;

	for (;;) {
		if (c->uc_paused || c->uc_cancelled)
			break;
		n = up_conn_plain(co, &p, &closed);
		if (co->co_out.ub_len > 0 && up_conn_flush(co) == -1) {
			err = errno;
			up_call_fail_io(c, UP_PROTOCOL, err, "send");
			return 0;
		}
		if (n > 0) {
			if (up_call_answer(c, p, n) == -1)
				return 0;
			/* The next round reuses up_pbuf: this one goes first. */
			up_cb_flush(c);
			continue;
		}
		if (closed) {
			up_call_eof(c);
			return 0;
		}
		if (co->co_tls_err) {
			up_call_end(c, UP_PROTOCOL, up_ssl_error(c->uc_detail,
			    sizeof(c->uc_detail)));
			return 0;
		}
		break;
	}
	up_conn_keep_window(co);
	if (c->uc_paused)
		up_ev_del(co->co_rev, &co->co_rev_on);
	up_cb_flush(c);
	return !c->uc_paused && !c->uc_cancelled;
}

/*
 * The request.
 */

/* Hand bytes to the connection: encrypted, or as they are.  -1 when TLS
 * cannot take them. */
static int
up_conn_put(struct up_conn *co, const uint8_t *p, size_t n)
{
	size_t	 w;

	if (co->co_ssl == NULL) {
		up_buf_add(&co->co_out, p, n);
		return 0;
	}
	/* The BIO takes every byte, so one write takes them all. */
	ERR_clear_error();
	if (SSL_write_ex(co->co_ssl, p, n, &w) != 1 || w != n)
		return -1;
	return 0;
}

/* Send the request, as far as less than UP_OUT_HIGH waits. */
static void
up_call_send(struct up_call *c)
{
	struct up_conn	*co = c->uc_conn;
	const uint8_t	*p;
	size_t		 n;
	int		 err;

	for (;;) {
		if (c->uc_sent || co->co_out.ub_len >= UP_OUT_HIGH) {
			if (up_conn_flush(co) == -1) {
				err = errno;
				up_call_fail_io(c, UP_PROTOCOL, err, "send");
				return;
			}
			/* Done, or the socket is full: its event goes on. */
			if (c->uc_sent || co->co_out.ub_len > 0)
				return;
		}
		if (c->uc_req_off < c->uc_req_len) {
			p = c->uc_req + c->uc_req_off;
			n = c->uc_req_len - c->uc_req_off;
			c->uc_req_off += n;
		} else if (c->uc_body_off < c->uc_body_len) {
			p = c->uc_body + c->uc_body_off;
			n = c->uc_body_len - c->uc_body_off;
			if (n > UP_SLICE)
				n = UP_SLICE;
			c->uc_body_off += n;
		} else {
			c->uc_sent = 1;
			continue;
		}
		if (up_conn_put(co, p, n) == -1) {
			up_call_end(c, UP_PROTOCOL, up_ssl_error(c->uc_detail,
			    sizeof(c->uc_detail)));
			return;
		}
	}
}

/*
 * Connecting.
 */

static void	up_conn_revent(evutil_socket_t, short, void *);
static void	up_conn_wevent(evutil_socket_t, short, void *);

static void
up_call_timer_off(struct up_call *c)
{
	if (c->uc_timer != NULL && evtimer_del(c->uc_timer) == -1)
		log_warnx("%s: evtimer_del", __func__);
}

/* The connection is ready for the call's request. */
static void
up_conn_open(struct up_conn *co)
{
	struct up_call	*c = co->co_call;

	co->co_state = CO_OPEN;
	up_call_timer_off(c);
	up_call_send(c);
}

/*
 * A TLS handshake (the CA bundle, certificates, the key exchange) runs
 * megabytes of libcrypto that a call's records never do: once one is done,
 * those pages are given back (proc_drop_text()), at most once a second,
 * so that egress's resident set is what its calls use.
 */
#define UP_DROP_TEXT_NS	1000000000LL

static void
up_drop_text(void)
{
	static long long	 last;
	struct timespec		 now;
	long long		 t;

	if (clock_gettime(CLOCK_MONOTONIC, &now) == -1)
		return;
	t = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
	if (last != 0 && t - last < UP_DROP_TEXT_NS)
		return;
	last = t;
	if (proc_drop_text() > 0)
		log_debug("%s: some pages were kept", __func__);
}

static void
up_conn_handshake(struct up_conn *co)
{
	struct up_call	*c = co->co_call;
	long		 v;
	int		 r, e, err;

	ERR_clear_error();
	r = SSL_connect(co->co_ssl);
	if (co->co_out.ub_len > 0 && up_conn_flush(co) == -1) {
		err = errno;
		up_call_fail_io(c, UP_TLS_FAILED, err, "send");
		return;
	}
	if (r == 1) {
		up_drop_text();
		up_conn_keep_window(co);
		up_conn_open(co);
		return;
	}
	e = SSL_get_error(co->co_ssl, r);
	if (e == SSL_ERROR_WANT_READ && !co->co_eof) {
		up_conn_keep_window(co);
		return;
	}
	if ((v = SSL_get_verify_result(co->co_ssl)) != X509_V_OK)
		snprintf(c->uc_detail, sizeof(c->uc_detail),
		    "certificate: %s", X509_verify_cert_error_string(v));
	else if (co->co_eof)
		snprintf(c->uc_detail, sizeof(c->uc_detail),
		    "connection closed in the TLS handshake");
	else
		up_ssl_error(c->uc_detail, sizeof(c->uc_detail));
	ERR_clear_error();
	up_call_end(c, UP_TLS_FAILED, c->uc_detail);
}

/* TLS for the call's host: its name (SNI and certificate) or address. */
static int
up_conn_tls(struct up_conn *co, struct up_call *c)
{
	X509_VERIFY_PARAM	*param;
	SSL_SESSION		*sess;
	SSL_CTX			*ctx;
	BIO			*b;

	if ((ctx = up_ssl_ctx(co->co_up, c->uc_ca, c->uc_detail,
	    sizeof(c->uc_detail))) == NULL)
		return -1;
	if ((co->co_ssl = SSL_new(ctx)) == NULL ||
	    (b = BIO_new(up_bio_method)) == NULL) {
		up_ssl_error(c->uc_detail, sizeof(c->uc_detail));
		return -1;
	}
	BIO_set_data(b, co);
	SSL_set_bio(co->co_ssl, b, b);
	param = SSL_get0_param(co->co_ssl);
	X509_VERIFY_PARAM_set_hostflags(param,
	    X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (SSL_set_ex_data(co->co_ssl, up_ssl_index, co) != 1 ||
	    (c->uc_numeric ? X509_VERIFY_PARAM_set1_ip_asc(param,
	    c->uc_host) != 1 :
	    (SSL_set_tlsext_host_name(co->co_ssl, c->uc_host) != 1 ||
	    SSL_set1_host(co->co_ssl, c->uc_host) != 1))) {
		up_ssl_error(c->uc_detail, sizeof(c->uc_detail));
		return -1;
	}
	if (co->co_key != NULL &&
	    (sess = up_session_find(co->co_up, co->co_key)) != NULL &&
	    SSL_set_session(co->co_ssl, sess) != 1)
		ERR_clear_error();
	SSL_set_connect_state(co->co_ssl);
	co->co_state = CO_HANDSHAKE;
	return 0;
}

/* TCP is up (or failed): on to TLS, or to the next address. */
static void
up_conn_connected(struct up_conn *co)
{
	struct up_call	*c = co->co_call;
	socklen_t	 len = sizeof(int);
	int		 err = 0;

	if (getsockopt(co->co_fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err != 0) {
		c->uc_os_errno = err;
		up_conn_close(co);
		c->uc_ai++;
		up_call_connect(c);
		return;
	}
	up_ev_del(co->co_wev, &co->co_wev_on);
	up_ev_add(co->co_rev, &co->co_rev_on);
	if (!c->uc_tls) {
		up_conn_open(co);
		return;
	}
	if (up_conn_tls(co, c) == -1) {
		up_call_end(c, UP_TLS_FAILED, c->uc_detail);
		return;
	}
	up_conn_handshake(co);
}

static void
up_sockopt(int fd, int level, int name, int value)
{
	if (setsockopt(fd, level, name, &value, sizeof(value)) == -1)
		log_warn("%s: setsockopt %d/%d", __func__, level, name);
}

/* Start a connection to the call's current address; -1 with errno. */
static int
up_conn_new(struct up_call *c)
{
	struct upstream		*up = c->uc_up;
	struct sockaddr_storage	*ss = &c->uc_addr[c->uc_ai];
	struct up_conn		*co;
	int			 fd, rc;

	if ((fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, IPPROTO_TCP)) == -1)
		return -1;
	/* Small requests go at once; a dead peer is found in minutes. */
	up_sockopt(fd, IPPROTO_TCP, TCP_NODELAY, 1);
	up_sockopt(fd, SOL_SOCKET, SO_KEEPALIVE, 1);
	up_sockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, UP_KEEPALIVE_IDLE_S);
	up_sockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, UP_KEEPALIVE_INTVL_S);
	do
		rc = connect(fd, (struct sockaddr *)ss, c->uc_addrlen[c->uc_ai]);
	while (rc == -1 && errno == EINTR);
	if (rc == -1 && errno != EINPROGRESS) {
		rc = errno;
		(void)close(fd);
		errno = rc;
		return -1;
	}
	if ((co = calloc(1, sizeof(*co))) == NULL)
		fatal("%s", __func__);
	co->co_up = up;
	co->co_fd = fd;
	co->co_state = CO_CONNECTING;
	co->co_key = c->uc_key != NULL ? up_strdup(c->uc_key) : NULL;
	if ((co->co_rev = event_new(up->up_base, fd, EV_READ | EV_PERSIST,
	    up_conn_revent, co)) == NULL ||
	    (co->co_wev = event_new(up->up_base, fd, EV_WRITE | EV_PERSIST,
	    up_conn_wevent, co)) == NULL)
		fatalx("%s: event_new", __func__);
	TAILQ_INSERT_TAIL(&up->up_conns, co, co_entry);
	co->co_call = c;
	c->uc_conn = co;
	/* connect() says when it is done by making the socket writable. */
	up_ev_add(co->co_wev, &co->co_wev_on);
	return 0;
}

/* Try the addresses from uc_ai on. */
void
up_call_connect(struct up_call *c)
{
	char	 what[128];

	for (; c->uc_ai < c->uc_naddr; c->uc_ai++) {
		if (up_conn_new(c) == 0)
			return;
		c->uc_os_errno = errno;
	}
	snprintf(what, sizeof(what), "connect to %s port %u", c->uc_host,
	    c->uc_port);
	up_call_fail_io(c, UP_CONNECT_FAILED, c->uc_os_errno, what);
}

static void
up_call_timeout(evutil_socket_t fd, short events, void *arg)
{
	struct up_call	*c = arg;
	struct upstream	*up = c->uc_up;

	c->uc_os_errno = ETIMEDOUT;
	snprintf(c->uc_detail, sizeof(c->uc_detail),
	    "no connection within %ld ms", c->uc_connect_ms);
	up_call_end(c, UP_TIMEOUT, c->uc_detail);
	up_settle(up);
}

/*
 * The connection's events.
 */

static void
up_conn_readable(struct up_conn *co)
{
	struct up_call	*c;
	ssize_t		 n;
	int		 i, err;

	for (i = 0; i < UP_READS_IN_A_ROW; i++) {
		if ((n = up_conn_recv(co)) == -1) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			err = errno;
			if ((c = co->co_call) == NULL)
				up_conn_close(co);
			else
				up_call_fail_io(c, co->co_state == CO_OPEN ?
				    UP_PROTOCOL : UP_TLS_FAILED, err, "recv");
			return;
		}
		if (co->co_call == NULL) {
			(void)up_conn_idle_read(co);
			return;
		}
		if (co->co_state == CO_HANDSHAKE) {
			up_conn_handshake(co);
			return;
		}
		if (co->co_state != CO_OPEN) {
			/* Bytes before connect() said it was done. */
			up_conn_keep_window(co);
			return;
		}
		if (!up_conn_pass(co) || n < UP_RECV_BUF)
			return;
	}
}

static void
up_conn_writable(struct up_conn *co)
{
	struct up_call	*c = co->co_call;
	int		 err;

	if (co->co_state == CO_CONNECTING) {
		up_conn_connected(co);
		return;
	}
	if (up_conn_flush(co) == -1) {
		err = errno;
		if (c == NULL)
			up_conn_close(co);
		else
			up_call_fail_io(c, co->co_state == CO_OPEN ?
			    UP_PROTOCOL : UP_TLS_FAILED, err, "send");
		return;
	}
	if (c != NULL && co->co_state == CO_OPEN && !c->uc_sent &&
	    co->co_out.ub_len == 0)
		up_call_send(c);
}

static void
up_conn_revent(evutil_socket_t fd, short events, void *arg)
{
	struct up_conn	*co = arg;
	struct upstream	*up = co->co_up;

	up_conn_readable(co);
	up_settle(up);
}

static void
up_conn_wevent(evutil_socket_t fd, short events, void *arg)
{
	struct up_conn	*co = arg;
	struct upstream	*up = co->co_up;

	up_conn_writable(co);
	up_settle(up);
}

/*
 * Calls.
 */

static void
up_call_free(struct up_call *c)
{
	struct upstream	*up = c->uc_up;

	if (c->uc_queued)
		TAILQ_REMOVE(&up->up_work, c, uc_work_entry);
	if (c->uc_res != NULL)
		TAILQ_REMOVE(&c->uc_res->rs_waiting, c, uc_wait_entry);
	/* A connection still attached is in the middle of this call. */
	if (c->uc_conn != NULL)
		up_conn_close(c->uc_conn);
	if (c->uc_timer != NULL)
		event_free(c->uc_timer);
	resp_free(&c->uc_resp);
	TAILQ_REMOVE(&up->up_calls, c, uc_entry);
	free(c->uc_host);
	free(c->uc_key);
	free(c->uc_ca);
	free(c->uc_req);
	free(c);
}

/* The call is over: tell the caller, once, unless it cancelled, and
 * forget it. */
void
up_call_end(struct up_call *c, enum up_result r, const char *detail)
{
	struct upstream	*up = c->uc_up;

	if (up->up_depth > 0)
		fatalx("%s: inside a callback", __func__);
	if (c->uc_ending)
		return;
	c->uc_ending = 1;
	up_call_timer_off(c);
	if (!c->uc_cancelled) {
		up->up_depth++;
		c->uc_cb.on_end(c, r, detail != NULL && detail[0] != '\0' ?
		    detail : up_result_to_string(r), c->uc_arg);
		up->up_depth--;
	}
	up_call_free(c);
}

static void
up_call_start(struct up_call *c)
{
	struct upstream	*up = c->uc_up;
	struct up_conn	*co;
	struct timeval	 tv;

	if (c->uc_fail != UP_OK) {
		up_call_end(c, c->uc_fail, c->uc_fail_detail);
		return;
	}
	if (c->uc_key != NULL && (co = up_pool_take(up, c->uc_key)) != NULL) {
		co->co_call = c;
		c->uc_conn = co;
		up_call_send(c);
		return;
	}
	if ((c->uc_timer = evtimer_new(up->up_base, up_call_timeout, c)) ==
	    NULL)
		fatalx("%s: evtimer_new", __func__);
	/*
	 * The loop's cached time is from before this call's body was read
	 * and checked, which can take seconds for the largest: the
	 * deadline counts from now.
	 */
	event_base_update_cache_time(up->up_base);
	tv.tv_sec = c->uc_connect_ms / 1000;
	tv.tv_usec = (c->uc_connect_ms % 1000) * 1000;
	if (evtimer_add(c->uc_timer, &tv) == -1)
		fatalx("%s: evtimer_add", __func__);
	if (c->uc_naddr > 0 || up_dns_find(up, c)) {
		up_call_ports(c);
		up_call_connect(c);
		return;
	}
	up_resolve_start(c);
}

static void
up_call_unpause(struct up_call *c)
{
	struct up_conn	*co = c->uc_conn;

	c->uc_resume = 0;
	if (!c->uc_paused || co == NULL)
		return;
	c->uc_paused = 0;
	/* What was read before the pause comes first. */
	if (up_conn_pass(co))
		up_ev_add(co->co_rev, &co->co_rev_on);
}

void
up_settle(struct upstream *up)
{
	struct up_call	*c;

	if (up->up_settling)
		return;
	up->up_settling = 1;
	while ((c = TAILQ_FIRST(&up->up_work)) != NULL) {
		TAILQ_REMOVE(&up->up_work, c, uc_work_entry);
		c->uc_queued = 0;
		if (c->uc_cancelled)
			up_call_free(c);
		else if (!c->uc_started) {
			c->uc_started = 1;
			up_call_start(c);
		} else if (c->uc_resume)
			up_call_unpause(c);
	}
	up->up_settling = 0;
}

struct up_call *
upstream_call(struct upstream *up, const struct up_request *req,
    const struct up_callbacks *cb, void *arg)
{
	struct up_call	*c;
	const char	*why;
	char		*target = NULL;

	if (up_request_check(req, cb) == -1)
		return NULL;
	if ((c = malloc(sizeof(*c))) == NULL)
		fatal("%s", __func__);
	memset(c, 0, offsetof(struct up_call, uc_resp));
	c->uc_detail[0] = '\0';
	c->uc_up = up;
	c->uc_cb = *cb;
	c->uc_arg = arg;
	c->uc_max_body = req->max_body;
	c->uc_connect_ms = req->connect_timeout_ms > 0 ?
	    req->connect_timeout_ms : UP_CONNECT_TIMEOUT_MS_DEFAULT;
	resp_init(&c->uc_resp);
	if (req->ca_file != NULL)
		c->uc_ca = up_strdup(req->ca_file);
	if ((why = up_url_parse(c, req->url, &target)) != NULL) {
		/* Answered through on_end, as any other failure. */
		c->uc_fail = UP_OTHER;
		c->uc_fail_detail = why;
	} else {
		up_call_target(c, req);
		up_build_request(c, req, target);
	}
	free(target);
	TAILQ_INSERT_TAIL(&up->up_calls, c, uc_entry);
	up_work_push(c);
	return c;
}

int
upstream_os_errno(const struct up_call *c)
{
	return c->uc_os_errno;
}

void
upstream_resume(struct up_call *c)
{
	if (c == NULL || c->uc_cancelled || c->uc_ending)
		return;
	c->uc_resume = 1;
	/* Inside on_data, the answer to it decides (up_call_answer()). */
	if (c->uc_paused)
		up_work_push(c);
}

void
upstream_cancel(struct up_call *c)
{
	struct upstream	*up;

	if (c == NULL || c->uc_cancelled || c->uc_ending)
		return;
	up = c->uc_up;
	c->uc_cancelled = 1;
	if (up->up_depth > 0 || up->up_settling) {
		up_work_push(c);
		return;
	}
	up_call_free(c);
	/* Nothing left for the work event to do. */
	if (TAILQ_EMPTY(&up->up_work) && event_del(up->up_work_ev) == -1)
		log_warnx("%s: event_del", __func__);
}

struct upstream *
upstream_new(struct event_base *base)
{
	struct upstream	*up;

	upstream_init();
	if ((up = calloc(1, sizeof(*up))) == NULL)
		fatal("%s", __func__);
	up->up_base = base;
	TAILQ_INIT(&up->up_calls);
	TAILQ_INIT(&up->up_work);
	TAILQ_INIT(&up->up_conns);
	TAILQ_INIT(&up->up_idle);
	TAILQ_INIT(&up->up_ctxs);
	TAILQ_INIT(&up->up_resolving);
	up->up_pipe[0] = up->up_pipe[1] = -1;
	if ((up->up_work_ev = event_new(base, -1, 0, up_work_event, up)) ==
	    NULL)
		fatalx("%s: event_new", __func__);
	/* Pages are touched only as far as the largest read went. */
	if ((up->up_rbuf = malloc(UP_RECV_BUF)) == NULL ||
	    (up->up_pbuf = malloc(UP_PLAIN_BUF)) == NULL)
		fatal("%s", __func__);
	return up;
}

void
upstream_free(struct upstream *up)
{
	struct up_resolve	*rs;
	struct up_ctx		*cx;
	struct up_call		*c;
	struct up_conn		*co;
	size_t			 i;
	int			 mine;

	if (up == NULL)
		return;
	if (up->up_depth > 0 || up->up_settling)
		fatalx("%s: called from a callback", __func__);
	while ((c = TAILQ_FIRST(&up->up_calls)) != NULL) {
		c->uc_cancelled = 1;
		up_call_free(c);
	}
	while ((co = TAILQ_FIRST(&up->up_conns)) != NULL)
		up_conn_close(co);
	/* A thread still resolving frees its own; one whose answer is in
	 * the pipe is ours. */
	while ((rs = TAILQ_FIRST(&up->up_resolving)) != NULL) {
		TAILQ_REMOVE(&up->up_resolving, rs, rs_entry);
		pthread_mutex_lock(&rs->rs_lock);
		mine = rs->rs_written;
		rs->rs_abandoned = 1;
		pthread_mutex_unlock(&rs->rs_lock);
		if (mine)
			up_resolve_free(rs);
	}
	if (up->up_pipe_ev != NULL)
		event_free(up->up_pipe_ev);
	for (i = 0; i < 2; i++)
		if (up->up_pipe[i] != -1 && close(up->up_pipe[i]) == -1 &&
		    errno != EINTR)
			log_warn("%s: close", __func__);
	while ((cx = TAILQ_FIRST(&up->up_ctxs)) != NULL) {
		TAILQ_REMOVE(&up->up_ctxs, cx, cx_entry);
		SSL_CTX_free(cx->cx_ctx);
		free(cx->cx_ca);
		free(cx);
	}
	for (i = 0; i < UP_SESSIONS_MAX; i++) {
		if (up->up_sessions[i].se_sess != NULL)
			SSL_SESSION_free(up->up_sessions[i].se_sess);
		free(up->up_sessions[i].se_key);
	}
	for (i = 0; i < UP_DNS_CACHE; i++)
		free(up->up_dns[i].dn_host);
	event_free(up->up_work_ev);
	free(up->up_rbuf);
	free(up->up_pbuf);
	free(up);
}
