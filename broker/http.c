/*
 * HTTP/1.1 over the broker's listening socket, on libevent events: a
 * connection's life and its answer (httpread.c reads its request).
 *
 * A connection carries one request: the head is collected in one flat
 * buffer (at most HTTP_HEAD_MAX + 1 bytes) and parsed once its empty line is
 * seen, the body is read only when the router asks and into one flat buffer
 * (a body of known length straight from the socket), and the answer is
 * queued on an output evbuffer and followed by a close.
 *
 * Reads are one read(2) per wake-up.  The first is tried as soon as the
 * connection is taken, and a request read whole there is answered without
 * the loop ever watching its descriptor.  Writes go out at once, in one
 * writev(2) of whatever is queued (or, while the server is corked, once it
 * is uncorked): the write event is added only when the socket did not take
 * everything, so a connection whose client keeps up costs no epoll_ctl(2)
 * for its writes.  The timers of PROTOCOL.md 3.5 are one event per
 * connection (the 10 s head limit, later the router's timer) and the
 * timeouts of the read and write events, which libevent re-arms each time
 * the event runs: they are the silence limits.
 *
 * A closed connection stays allocated until on_close has run from the
 * loop, so that no callback ever re-enters the router.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "http.h"
#include "httpint.h"
#include "limits.h"
#include "log.h"
#include "proc.h"

static void	conn_flush_done(struct http_conn *);

void
http_limits_default(struct http_limits *lim)
{
	lim->hl_conn_max = BROKER_CONN_MAX;
	lim->hl_head_ms = BROKER_HEADER_TIMEOUT_MS;
	lim->hl_silence_ms = BROKER_SILENCE_MS;
	lim->hl_linger_ms = HTTP_LINGER_MS;
	lim->hl_refusals = BROKER_REFUSALS_MAX;
	lim->hl_refusal_ms = BROKER_REFUSAL_WINDOW_MS;
}

const char *
http_body_err_to_string(enum http_body_err err)
{
	switch (err) {
	case HTTP_BODY_TOO_LARGE:
		return "body too large";
	case HTTP_BODY_INVALID:
		return "invalid body framing";
	case HTTP_BODY_ABORTED:
		return "client left during the body";
	case HTTP_BODY_SILENCE:
		return "client silent during the body";
	case HTTP_BODY_NOMEM:
		return "out of memory for the body";
	}
	return "unknown body error";
}

struct timeval *
ms_to_tv(int ms, struct timeval *tv)
{
	tv->tv_sec = ms / 1000;
	tv->tv_usec = (ms % 1000) * 1000;
	return tv;
}

static struct evbuffer *
conn_out(struct http_conn *c)
{
	return c->c_out;
}

/*
 * The silence limits: on writes whenever something is queued, on reads
 * while the body is read; never for GET.  NULL: none.
 */
static const struct timeval *
conn_silence(const struct http_conn *c, int reading, struct timeval *tv)
{
	if (c->c_get || c->c_state == C_HEAD || (reading &&
	    (c->c_state != C_BODY || c->c_body_held)))
		return NULL;
	return ms_to_tv(c->c_srv->s_lim.hl_silence_ms, tv);
}

/* Add ev, with the limit tv or, when NULL, with none (event_add(3) would
 * keep the one it had). */
static int
conn_event_add(struct event *ev, const struct timeval *tv)
{
	if (event_add(ev, tv) == -1 ||
	    (tv == NULL && event_remove_timer(ev) == -1)) {
		log_warnx("%s: event_add", __func__);
		return -1;
	}
	return 0;
}

static void	conn_writecb(evutil_socket_t, short, void *);

/*
 * Watch the reads (again) or the writes, with the silence limit of the
 * state; the event is made the first time.
 */
static int
conn_io_on(struct http_conn *c, int reading)
{
	struct event	**ev = reading ? &c->c_rev : &c->c_wev;
	struct timeval	 tv;

	if (*ev == NULL && (*ev = event_new(c->c_srv->s_base, c->c_fd,
	    (reading ? EV_READ : EV_WRITE) | EV_PERSIST,
	    reading ? conn_readcb : conn_writecb, c)) == NULL) {
		log_warnx("%s: event_new", __func__);
		return -1;
	}
	if (conn_event_add(*ev, conn_silence(c, reading, &tv)) == -1)
		return -1;
	*(reading ? &c->c_rev_on : &c->c_wev_on) = 1;
	return 0;
}

static void
conn_io_off(struct event *ev, int *on)
{
	if (*on) {
		(void)event_del(ev);
		*on = 0;
	}
}

int
conn_read_on(struct http_conn *c)
{
	return conn_io_on(c, 1);
}

void
conn_read_off(struct http_conn *c)
{
	conn_io_off(c->c_rev, &c->c_rev_on);
}

/* The state changed: the events that are on take its limits. */
void
conn_set_timeouts(struct http_conn *c)
{
	struct timeval	 tv;

	if (c->c_rev_on)
		(void)conn_event_add(c->c_rev, conn_silence(c, 1, &tv));
	if (c->c_wev_on)
		(void)conn_event_add(c->c_wev, conn_silence(c, 0, &tv));
}

/* Let go of the descriptor and what moves bytes through it. */
static void
conn_shut(struct http_conn *c)
{
	if (c->c_rev != NULL)
		event_free(c->c_rev);
	if (c->c_wev != NULL)
		event_free(c->c_wev);
	c->c_rev = c->c_wev = NULL;
	c->c_rev_on = c->c_wev_on = 0;
	if (c->c_out != NULL)
		evbuffer_free(c->c_out);
	c->c_out = NULL;
	conn_in_free(c);
	if (close(c->c_fd) == -1)
		log_debug("%s: close: %s", __func__, strerror(errno));
	c->c_fd = -1;
	c->c_srv->s_nconn--;
}

/* -1 when libevent cannot (out of memory): the caller closes. */
static int
conn_timer_add(struct http_conn *c, int ms)
{
	struct timeval	 tv;

	if (evtimer_add(c->c_timer, ms_to_tv(ms, &tv)) == -1) {
		log_warnx("%s: evtimer_add", __func__);
		return -1;
	}
	return 0;
}

void
conn_free(struct http_conn *c, int notify)
{
	struct http_server	*srv = c->c_srv;

	TAILQ_REMOVE(&srv->s_conns, c, c_entry);
	http_watch_cancel(c);
	if (notify && c->c_routed && srv->s_cbs.on_close != NULL)
		srv->s_cbs.on_close(c, srv->s_arg);
	if (c->c_fd != -1)
		conn_shut(c);
	event_free(c->c_timer);
	http_head_free(&c->c_head);
	free(c->c_body);
	free(c);
	if (notify && TAILQ_EMPTY(&srv->s_conns) &&
	    srv->s_moved >= HTTP_TRIM_AFTER) {
		srv->s_moved = 0;
		http_server_shrink(srv);
		(void)malloc_trim(0);
	}
}

/* Close the descriptor now; on_close and the free come from the loop. */
void
conn_close(struct http_conn *c)
{
	if (c->c_state == C_CLOSED)
		return;
	http_watch_cancel(c);
	if (c->c_dirty) {
		TAILQ_REMOVE(&c->c_srv->s_dirty, c, c_dirty_entry);
		c->c_dirty = 0;
	}
	c->c_npiov = c->c_npsize = 0;
	c->c_state = C_CLOSED;
	if (c->c_status == 0 || c->c_status >= 400)
		http_refused(c->c_srv, 1 + c->c_body_in / HTTP_REFUSAL_BYTES);
	conn_shut(c);
	free(c->c_body);
	c->c_body = NULL;
	evtimer_del(c->c_timer);
	event_active(c->c_timer, EV_TIMEOUT, 1);
}

static void
conn_arm_drain(struct http_conn *c)
{
	if (c->c_state == C_STREAM && c->c_on_drain != NULL &&
	    evbuffer_get_length(conn_out(c)) > c->c_lowat)
		c->c_drain_armed = 1;
}

/* The socket took all that was queued. */
static void
conn_written(struct http_conn *c)
{
	if (c->c_state == C_FLUSH)
		conn_flush_done(c);
}

/* Copy the bytes kept by reference into the output, in order. */
static int
conn_take_refs(struct http_conn *c, size_t skip)
{
	struct evbuffer	*out = conn_out(c);
	size_t		 k;
	int		 i, rv = 0;

	for (i = 0; i < c->c_npiov; i++) {
		k = c->c_piov[i].iov_len;
		if (skip >= k) {
			skip -= k;
			continue;
		}
		rv |= evbuffer_add(out, (uint8_t *)c->c_piov[i].iov_base + skip,
		    k - skip);
		skip = 0;
	}
	c->c_npiov = c->c_npsize = 0;
	if (rv != 0) {
		log_warnx("%s: out of memory", __func__);
		conn_close(c);
		return -1;
	}
	return 0;
}

/*
 * Write what the output holds and then the bytes kept by reference, in one
 * writev(2), and copy what is left of the latter.  0 when written (or
 * tried), 1 when the output was too fragmented and took the references
 * unwritten, -1 when the connection was closed.
 */
static int
conn_write_refs(struct http_conn *c)
{
	struct evbuffer		*out = conn_out(c);
	struct evbuffer_iovec	 ev[4];
	struct iovec		 iov[4 + HTTP_PIOV_MAX];
	size_t			 evlen = evbuffer_get_length(out), k;
	ssize_t			 n;
	int			 nev = 0, i;

	/* With a length, evbuffer_peek() counts every piece the output is
	 * in; with -1 it would stop at four, and the rest of the output
	 * would go after the references. */
	if (evlen > 0 && (nev = evbuffer_peek(out, (ev_ssize_t)evlen, NULL,
	    ev, 4)) > 4)
		return conn_take_refs(c, 0) == -1 ? -1 : 1;
	for (i = 0; i < nev; i++) {
		iov[i].iov_base = ev[i].iov_base;
		iov[i].iov_len = ev[i].iov_len;
	}
	memcpy(iov + nev, c->c_piov, c->c_npiov * sizeof(iov[0]));
	do
		n = writev(c->c_fd, iov, nev + c->c_npiov);
	while (n == -1 && errno == EINTR);
	if (n == -1 && errno != EAGAIN && errno != EWOULDBLOCK) {
		log_debug("%s: writev: %s", __func__, strerror(errno));
		conn_close(c);
		return -1;
	}
	if (n <= 0)
		n = 0;
	else
		c->c_sent = 1;
	k = (size_t)n < evlen ? (size_t)n : evlen;
	if (k > 0)
		(void)evbuffer_drain(out, k);
	return conn_take_refs(c, (size_t)n - k);
}

/*
 * Write what is queued, in one writev(2); what the socket does not take is
 * left to the write event (and its silence limit), which runs until it is
 * all written.
 */
void
conn_flush(struct http_conn *c)
{
	struct evbuffer	*out;
	int		 n, rc = 1;

	if (c->c_state == C_CLOSED)
		return;
	if (c->c_wev_on) {
		conn_arm_drain(c);
		return;
	}
	out = conn_out(c);
	/* Kept references go out with what the output holds. */
	if (c->c_npiov > 0 && (rc = conn_write_refs(c)) == -1)
		return;
	if (rc == 1 && evbuffer_get_length(out) > 0) {
		n = evbuffer_write_atmost(out, c->c_fd, HTTP_WRITE_MAX);
		if (n > 0)
			c->c_sent = 1;
		if (n == -1 && errno != EAGAIN && errno != EWOULDBLOCK &&
		    errno != EINTR) {
			log_debug("%s: writev: %s", __func__, strerror(errno));
			conn_close(c);
			return;
		}
	}
	if (evbuffer_get_length(out) == 0) {
		conn_written(c);
		return;
	}
	if (conn_io_on(c, 0) == -1) {
		conn_close(c);
		return;
	}
	c->c_sent = 1;	/* from now on the write event may write any time */
	/* The drain callback counts from what the socket did not take. */
	conn_arm_drain(c);
}

/* Write now, or when the server is uncorked. */
void
conn_kick(struct http_conn *c)
{
	if (c->c_state == C_CLOSED)
		return;
	if (!c->c_srv->s_corked) {
		conn_flush(c);
		return;
	}
	if (!c->c_dirty) {
		TAILQ_INSERT_TAIL(&c->c_srv->s_dirty, c, c_dirty_entry);
		c->c_dirty = 1;
	}
}

/* Everything is written: close, or first let an unread request drain. */
static void
conn_flush_done(struct http_conn *c)
{
	if (c->c_consumed || c->c_eof) {
		conn_close(c);
		return;
	}
	if (shutdown(c->c_fd, SHUT_WR) == -1) {
		log_debug("%s: shutdown: %s", __func__, strerror(errno));
		conn_close(c);
		return;
	}
	c->c_state = C_LINGER;
	if (conn_timer_add(c, c->c_srv->s_lim.hl_linger_ms) == -1)
		conn_close(c);
}

static void
conn_enter_flush(struct http_conn *c)
{
	c->c_state = C_FLUSH;
	c->c_on_timer = NULL;
	evtimer_del(c->c_timer);
	conn_set_timeouts(c);
	/* What the client still sends is dropped, even if it was paused. */
	if (c->c_paused && !c->c_eof && conn_read_on(c) == -1) {
		conn_close(c);
		return;
	}
	c->c_paused = 0;
	conn_kick(c);
}

static int
conn_can_answer(const struct http_conn *c)
{
	return c->c_state == C_ROUTE || c->c_state == C_BODY ||
	    c->c_state == C_WAIT;
}

/* An answer ends a body read in progress; the rest is dropped. */
void
conn_drop_body(struct http_conn *c)
{
	free(c->c_body);
	c->c_body = NULL;
	c->c_on_body = NULL;
	c->c_on_body_err = NULL;
}

static int
fields_valid(const char *ctype, const struct http_hdr *hdrs, size_t n)
{
	size_t	 i;

	if (ctype != NULL && !http_field_valid("content-type", ctype))
		return 0;
	for (i = 0; i < n; i++) {
		/* The framing fields are this file's alone. */
		if (hdrs[i].name == NULL || hdrs[i].value == NULL ||
		    !http_field_valid(hdrs[i].name, hdrs[i].value) ||
		    strcasecmp(hdrs[i].name, "content-length") == 0 ||
		    strcasecmp(hdrs[i].name, "transfer-encoding") == 0 ||
		    strcasecmp(hdrs[i].name, "connection") == 0)
			return 0;
	}
	return 1;
}

/* framing: the content-length or transfer-encoding line, or NULL.  The
 * head is written in one piece of the output. */
static int
conn_put_head(struct http_conn *c, int status, const char *ctype,
    const struct http_hdr *hdrs, size_t n, const char *framing)
{
	struct evbuffer_iovec	 v;

	c->c_status = status;
	if (evbuffer_reserve_space(conn_out(c), http_answer_head_size(status,
	    ctype, hdrs, n, framing), &v, 1) != 1)
		return -1;
	v.iov_len = http_answer_head(v.iov_base, status, ctype, hdrs, n,
	    framing);
	return evbuffer_commit_space(conn_out(c), &v, 1);
}

static void
conn_free_owned(const void *data, size_t len, void *arg)
{
	free((void *)(uintptr_t)data);
}

/* owned: body is the caller's malloc(3)ed buffer, freed once written
 * (or at once, when it is not). */
static int
conn_answer_owned(struct http_conn *c, int status, const char *ctype,
    const struct http_hdr *hdrs, size_t n, const void *body, size_t len,
    int owned)
{
	char	 framing[64];
	int	 rv;

	if (status < 200 || status > 599 || !fields_valid(ctype, hdrs, n) ||
	    ((status == 204 || status == 304 || status == 205) && len > 0)) {
		if (owned)
			free((void *)(uintptr_t)body);
		return -1;
	}
	conn_drop_body(c);
	if (status == 204 || status == 304)
		framing[0] = '\0';
	else
		(void)snprintf(framing, sizeof(framing),
		    "content-length: %zu\r\n", len);
	rv = conn_put_head(c, status, ctype, hdrs, n,
	    framing[0] != '\0' ? framing : NULL);
	if (rv == 0 && len > 0 && !c->c_nobody && owned) {
		rv = evbuffer_add_reference(conn_out(c), body, len,
		    conn_free_owned, NULL);
		owned = rv != 0;
	} else if (rv == 0 && len > 0 && !c->c_nobody)
		rv = evbuffer_add(conn_out(c), body, len);
	if (owned)
		free((void *)(uintptr_t)body);
	c->c_srv->s_moved += len;
	if (rv != 0) {
		log_warnx("%s: out of memory", __func__);
		conn_close(c);
		return -1;
	}
	conn_enter_flush(c);
	return 0;
}

static int
conn_answer(struct http_conn *c, int status, const char *ctype,
    const struct http_hdr *hdrs, size_t n, const void *body, size_t len)
{
	return conn_answer_owned(c, status, ctype, hdrs, n, body, len, 0);
}

int
http_respond_owned(struct http_conn *c, int status, const char *content_type,
    void *body, size_t len)
{
	if (!conn_can_answer(c)) {
		free(body);
		return -1;
	}
	return conn_answer_owned(c, status, content_type, NULL, 0, body, len,
	    1);
}

int
http_respond_hdrs(struct http_conn *c, int status, const struct http_hdr *hdrs,
    size_t n, const void *body, size_t len)
{
	if (!conn_can_answer(c))
		return -1;
	return conn_answer(c, status, NULL, hdrs, n, body, len);
}

int
http_respond(struct http_conn *c, int status, const char *content_type,
    const void *body, size_t len)
{
	if (!conn_can_answer(c))
		return -1;
	return conn_answer(c, status, content_type, NULL, 0, body, len);
}

int
http_respond_text(struct http_conn *c, int status, const char *text)
{
	return http_respond(c, status, "text/plain; charset=utf-8", text,
	    strlen(text));
}

/* PROTOCOL.md 3.5: "Failure before headers → 400 bad request". */
void
conn_bad_request(struct http_conn *c)
{
	if (conn_answer(c, 400, "text/plain; charset=utf-8", NULL, 0,
	    "bad request", 11) == 0 && c->c_state == C_FLUSH &&
	    /* The head phase has no silence limit: bound the flush. */
	    conn_timer_add(c, c->c_srv->s_lim.hl_linger_ms) == -1)
		conn_close(c);
}

int
http_stream_start(struct http_conn *c, int status, const struct http_hdr *hdrs,
    size_t n)
{
	const char	*framing = NULL;

	if (!conn_can_answer(c) || status < 200 || status > 599 ||
	    !fields_valid(NULL, hdrs, n))
		return -1;
	conn_drop_body(c);
	if (status == 204 || status == 304)
		c->c_nobody = 1;
	else if (status == 205) {
		c->c_nobody = 1;
		framing = "content-length: 0\r\n";
	} else if (c->c_head.h_minor == 1) {
		/* Also for HEAD, whose answer has the same fields. */
		c->c_chunked_out = !c->c_nobody;
		framing = "transfer-encoding: chunked\r\n";
	}
	if (conn_put_head(c, status, NULL, hdrs, n, framing) != 0) {
		log_warnx("%s: out of memory", __func__);
		conn_close(c);
		return -1;
	}
	c->c_state = C_STREAM;
	conn_set_timeouts(c);
	conn_kick(c);
	return 0;
}

/* "<hex>\r\n" at the front of b (2 * sizeof(size_t) + 2 bytes); its
 * length. */
static size_t
chunk_size_line(char *b, size_t n)
{
	char	 t[2 * sizeof(size_t) + 2];
	size_t	 i = sizeof(t);

	t[--i] = '\n';
	t[--i] = '\r';
	do {
		t[--i] = "0123456789abcdef"[n & 15];
		n >>= 4;
	} while (n != 0);
	memcpy(b, t + i, sizeof(t) - i);
	return sizeof(t) - i;
}

static int
put_chunk_size(struct evbuffer *out, size_t n)
{
	char	 b[2 * sizeof(size_t) + 2];

	return evbuffer_add(out, b, chunk_size_line(b, n));
}

/* Keep len bytes at p by reference, for conn_write_refs(). */
static void
conn_ref(struct http_conn *c, const void *p, size_t len)
{
	c->c_piov[c->c_npiov].iov_base = (void *)(uintptr_t)p;
	c->c_piov[c->c_npiov++].iov_len = len;
}

int
http_stream_write(struct http_conn *c, const void *data, size_t len)
{
	struct evbuffer	*out;
	char		*line;
	int		 rv = 0;

	if (c->c_state != C_STREAM)
		return -1;
	if (len == 0 || c->c_nobody)
		return 0;
	out = conn_out(c);
	c->c_srv->s_moved += len;
	if (c->c_srv->s_corked && !c->c_wev_on &&
	    c->c_npiov + 3 <= HTTP_PIOV_MAX) {
		if (c->c_chunked_out) {
			line = c->c_psize[c->c_npsize++];
			conn_ref(c, line, chunk_size_line(line, len));
		}
		conn_ref(c, data, len);
		if (c->c_chunked_out)
			conn_ref(c, "\r\n", 2);
		conn_kick(c);
		return 0;
	}
	if (c->c_npiov > 0 && conn_take_refs(c, 0) == -1)
		return -1;
	if (c->c_chunked_out)
		rv |= put_chunk_size(out, len);
	rv |= evbuffer_add(out, data, len);
	if (c->c_chunked_out)
		rv |= evbuffer_add(out, "\r\n", 2);
	if (rv != 0) {
		log_warnx("%s: out of memory", __func__);
		conn_close(c);
		return -1;
	}
	conn_kick(c);
	return 0;
}

int
http_stream_write_buffer(struct http_conn *c, struct evbuffer *buf)
{
	struct evbuffer	*out;
	size_t		 len = evbuffer_get_length(buf);
	int		 rv = 0;

	if (c->c_state != C_STREAM)
		return -1;
	if (len == 0 || c->c_nobody)
		return evbuffer_drain(buf, len);
	if (c->c_npiov > 0 && conn_take_refs(c, 0) == -1)
		return -1;
	out = conn_out(c);
	if (c->c_chunked_out)
		rv |= put_chunk_size(out, len);
	rv |= evbuffer_add_buffer(out, buf);
	if (c->c_chunked_out)
		rv |= evbuffer_add(out, "\r\n", 2);
	c->c_srv->s_moved += len;
	if (rv != 0) {
		log_warnx("%s: out of memory", __func__);
		conn_close(c);
		return -1;
	}
	conn_kick(c);
	return 0;
}

int
http_stream_end(struct http_conn *c)
{
	if (c->c_state != C_STREAM)
		return -1;
	if (c->c_chunked_out && c->c_npiov > 0 &&
	    c->c_npiov < HTTP_PIOV_MAX) {
		conn_ref(c, "0\r\n\r\n", 5);
		conn_enter_flush(c);
		return 0;
	}
	if (c->c_npiov > 0 && conn_take_refs(c, 0) == -1)
		return -1;
	if (c->c_chunked_out &&
	    evbuffer_add(conn_out(c), "0\r\n\r\n", 5) != 0) {
		log_warnx("%s: out of memory", __func__);
		conn_close(c);
		return -1;
	}
	conn_enter_flush(c);
	return 0;
}

int
http_stream_fail(struct http_conn *c, int status, const char *text)
{
	struct evbuffer	*out;

	if (c->c_state != C_STREAM || c->c_sent)
		return -1;
	/* Nothing left: the head and what followed are dropped. */
	out = conn_out(c);
	(void)evbuffer_drain(out, evbuffer_get_length(out));
	c->c_npiov = c->c_npsize = 0;
	c->c_chunked_out = 0;
	c->c_nobody = strcmp(c->c_head.h_method, "HEAD") == 0;
	c->c_on_drain = NULL;
	c->c_drain_armed = 0;
	c->c_state = C_WAIT;
	if (http_respond_text(c, status, text) == -1)
		return -1;
	return 0;
}

void
http_conn_kill(struct http_conn *c)
{
	conn_close(c);
}

int
http_conn_alive(const struct http_conn *c)
{
	char	 b;
	ssize_t	 n;

	if (c->c_fd == -1 || c->c_eof)
		return 0;
	n = recv(c->c_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return n != 0 && (n > 0 || errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR);
}

size_t
http_conn_pending(const struct http_conn *c)
{
	if (c->c_out == NULL)
		return 0;
	return evbuffer_get_length(c->c_out);
}

void
http_conn_set_drain(struct http_conn *c, size_t lowat, http_conn_cb cb)
{
	c->c_lowat = lowat;
	c->c_on_drain = cb;
	c->c_drain_armed = 0;
	if (c->c_state == C_STREAM)
		conn_arm_drain(c);
}

int
http_conn_set_timer(struct http_conn *c, int ms, http_conn_cb cb)
{
	if (c->c_state != C_ROUTE && c->c_state != C_BODY &&
	    c->c_state != C_WAIT && c->c_state != C_STREAM)
		return -1;
	evtimer_del(c->c_timer);
	c->c_on_timer = cb;
	if (cb != NULL && conn_timer_add(c, ms < 0 ? 0 : ms) == -1) {
		c->c_on_timer = NULL;
		return -1;
	}
	return 0;
}

void
http_conn_set_data(struct http_conn *c, void *data)
{
	c->c_data = data;
}

void *
http_conn_get_data(const struct http_conn *c)
{
	return c->c_data;
}

const struct http_head *
http_conn_head(const struct http_conn *c)
{
	return c->c_routed ? &c->c_head : NULL;
}

/* A read or a write failed: a body read ends, anything else closes. */
void
conn_failed(struct http_conn *c, const char *what)
{
	log_debug("%s: %s: %s", __func__, what, strerror(errno));
	if (c->c_state == C_BODY)
		conn_body_fail(c, HTTP_BODY_ABORTED);
	else
		conn_close(c);
}

static void
conn_writecb(evutil_socket_t fd, short what, void *arg)
{
	struct http_conn	*c = arg;
	size_t			 len;
	int			 n;

	if (what & EV_TIMEOUT) {
		log_debug("%s: write silence", __func__);
		conn_close(c);
		return;
	}
	if (evbuffer_get_length(c->c_out) > 0) {
		n = evbuffer_write_atmost(c->c_out, c->c_fd, HTTP_WRITE_MAX);
		if (n == 0 || (n == -1 && errno != EAGAIN &&
		    errno != EWOULDBLOCK && errno != EINTR)) {
			if (n == 0)
				errno = EPIPE;
			conn_failed(c, "writev");
			return;
		}
	}
	len = evbuffer_get_length(c->c_out);
	/* All out: the next writes go straight to the socket again. */
	if (len == 0)
		conn_io_off(c->c_wev, &c->c_wev_on);
	if (c->c_state == C_FLUSH && len == 0)
		conn_flush_done(c);
	else if (c->c_state == C_STREAM && c->c_drain_armed &&
	    len <= c->c_lowat) {
		c->c_drain_armed = 0;
		c->c_on_drain(c, c->c_srv->s_arg);
	}
}

static void
conn_timercb(evutil_socket_t fd, short ev, void *arg)
{
	struct http_conn	*c = arg;
	http_conn_cb		 cb;

	switch (c->c_state) {
	case C_CLOSED:
		conn_free(c, 1);
		break;
	case C_HEAD:
		log_debug("%s: head timeout", __func__);
		conn_bad_request(c);
		break;
	case C_FLUSH:
	case C_LINGER:
		conn_close(c);
		break;
	case C_ROUTE:
	case C_BODY:
	case C_WAIT:
	case C_STREAM:
		if ((cb = c->c_on_timer) != NULL) {
			c->c_on_timer = NULL;
			cb(c, c->c_srv->s_arg);
		}
		break;
	}
}

void
conn_watch(struct http_conn *c)
{
	if (c->c_state == C_CLOSED || c->c_paused || c->c_body_held)
		return;
	if (conn_read_on(c) == -1) {
		log_warnx("%s: cannot watch the connection", __func__);
		conn_close(c);
	}
}

void
conn_new(struct http_server *srv, int fd)
{
	struct http_conn	*c;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		log_warn("%s: calloc", __func__);
		goto fail;
	}
	if ((c->c_timer = evtimer_new(srv->s_base, conn_timercb, c)) ==
	    NULL) {
		log_warnx("%s: evtimer_new", __func__);
		goto fail;
	}
	if ((c->c_out = evbuffer_new()) == NULL) {
		log_warnx("%s: evbuffer_new", __func__);
		goto fail;
	}
	c->c_srv = srv;
	c->c_fd = fd;
	c->c_state = C_HEAD;
	if (conn_timer_add(c, srv->s_lim.hl_head_ms) == -1)
		goto fail;
	TAILQ_INSERT_TAIL(&srv->s_conns, c, c_entry);
	srv->s_nconn++;
	/*
	 * A worker connects and writes its request at once, so by the time
	 * the connection is taken the request is usually there: read it now,
	 * rather than after a round of the loop.  Its reads are watched only
	 * after that: a request answered and closed there never has the loop
	 * watch its descriptor (an epoll_ctl(2) to add, one to delete).
	 */
	conn_read(c);
	/* Closed: freed from its timer.  Paused or its body held: its
	 * owner resumes it.  Read whole and waiting for its answer: watched
	 * a little later, if still there. */
	if (c->c_state == C_CLOSED || c->c_paused || c->c_body_held ||
	    c->c_eof)
		return;
	if (c->c_state == C_WAIT && c->c_consumed) {
		if (http_watch_later(c) == -1)
			conn_close(c);
		return;
	}
	if (conn_read_on(c) == -1) {
		log_warnx("%s: cannot watch the connection", __func__);
		conn_close(c);
	}
	return;
 fail:
	if (c != NULL) {
		if (c->c_out != NULL)
			evbuffer_free(c->c_out);
		if (c->c_timer != NULL)
			event_free(c->c_timer);
		free(c);
	}
	if (close(fd) == -1)
		log_warn("%s: close", __func__);
}
