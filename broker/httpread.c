/*
 * The request's side of a broker connection (http.c has the answer's): the
 * head read into one flat buffer and parsed once its empty line is in, the
 * body read when the router asks, a body of known length straight into
 * place, and what comes after the request dropped.  One read(2) per
 * wake-up; the first is tried as soon as the connection is taken.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "http.h"
#include "httpint.h"
#include "log.h"

static void	conn_input(struct http_conn *);
static void	conn_body_begin(struct http_conn *);

/* The input's buffer goes, to the server's spare when it is its size. */
void
conn_in_free(struct http_conn *c)
{
	if (c->c_incap == HTTP_READ_FIRST && c->c_srv->s_spare == NULL)
		c->c_srv->s_spare = c->c_in;
	else
		free(c->c_in);
	c->c_in = NULL;
	c->c_inlen = c->c_incap = 0;
}

void
http_conn_pause_read(struct http_conn *c)
{
	if (c->c_state == C_CLOSED || c->c_paused)
		return;
	c->c_paused = 1;
	conn_read_off(c);
}

void
http_conn_resume_read(struct http_conn *c)
{
	if (c->c_state == C_CLOSED || !c->c_paused)
		return;
	c->c_paused = 0;
	/* After an end of file there is nothing more to read. */
	if (!c->c_eof && !c->c_body_held && conn_read_on(c) == -1)
		conn_close(c);
}

void
http_conn_hold_body(struct http_conn *c)
{
	if (c->c_state != C_BODY || c->c_body_held || c->c_body != NULL ||
	    c->c_body_in > 0)
		return;
	c->c_body_held = 1;
	conn_read_off(c);
	conn_set_timeouts(c);
}

void
http_conn_release_body(struct http_conn *c)
{
	if (c->c_state != C_BODY || !c->c_body_held)
		return;
	c->c_body_held = 0;
	conn_set_timeouts(c);
	if (!c->c_paused && !c->c_eof && conn_read_on(c) == -1) {
		conn_body_fail(c, HTTP_BODY_NOMEM);
		return;
	}
	conn_body_begin(c);
	/* what came with the head, or before the hold */
	if (c->c_state == C_BODY)
		conn_input(c);
}

int
http_read_body(struct http_conn *c, size_t max, http_body_cb cb,
    http_body_err_cb ecb)
{
	if (c->c_state != C_ROUTE || cb == NULL || ecb == NULL)
		return -1;
	c->c_state = C_BODY;
	c->c_body_max = max;
	c->c_on_body = cb;
	c->c_on_body_err = ecb;
	return 0;
}

static void
conn_body_done(struct http_conn *c)
{
	http_body_cb	 cb = c->c_on_body;
	char		*body = c->c_body;
	size_t		 len = c->c_body_len;

	c->c_body = NULL;
	c->c_body_len = 0;
	c->c_on_body = NULL;
	c->c_on_body_err = NULL;
	c->c_consumed = 1;
	c->c_state = C_WAIT;
	conn_set_timeouts(c);
	c->c_body_given = 0;
	c->c_body_out = body;
	c->c_in_body_cb = 1;
	cb(c, body != NULL ? body : "", len, c->c_srv->s_arg);
	c->c_in_body_cb = 0;
	c->c_body_out = NULL;
	if (!c->c_body_given)
		free(body);
}

char *
http_body_take(struct http_conn *c, const char *body)
{
	char	*p;

	if (c->c_state == C_CLOSED || c->c_body_given || !c->c_in_body_cb)
		return NULL;
	/* an empty body is a literal "", which is not ours to give */
	if ((p = c->c_body_out) == NULL && (p = strdup("")) == NULL)
		return NULL;
	c->c_body_given = 1;
	return p;
}

void
conn_body_fail(struct http_conn *c, enum http_body_err err)
{
	http_body_err_cb	 ecb = c->c_on_body_err;

	conn_drop_body(c);
	if (err == HTTP_BODY_NOMEM)
		log_warnx("%s: %s", __func__, http_body_err_to_string(err));
	else
		log_debug("%s: %s", __func__, http_body_err_to_string(err));
	if (err == HTTP_BODY_ABORTED || err == HTTP_BODY_SILENCE) {
		conn_close(c);
		ecb(c, err, c->c_srv->s_arg);
		return;
	}
	c->c_state = C_WAIT;
	conn_set_timeouts(c);
	ecb(c, err, c->c_srv->s_arg);
	if (c->c_state == C_WAIT)
		conn_close(c);
}

static void
conn_body_begin(struct http_conn *c)
{
	const struct http_head	*h = &c->c_head;
	const char		*expect;

	conn_set_timeouts(c);
	switch (h->h_framing) {
	case HTTP_BODY_NONE:
		conn_body_done(c);
		return;
	case HTTP_BODY_LENGTH:
		if (h->h_content_length > c->c_body_max) {
			conn_body_fail(c, HTTP_BODY_TOO_LARGE);
			return;
		}
		if (h->h_content_length == 0) {
			conn_body_done(c);
			return;
		}
		/* Untouched pages of a large body cost nothing until sent. */
		if ((c->c_body = malloc(h->h_content_length)) == NULL) {
			log_warn("%s: malloc", __func__);
			conn_body_fail(c, HTTP_BODY_NOMEM);
			return;
		}
		c->c_body_cap = h->h_content_length;
		break;
	case HTTP_BODY_CHUNKED:
		http_chunked_init(&c->c_chunked, c->c_body_max);
		break;
	}
	expect = http_head_get(h, "expect");
	if (expect != NULL && strcasecmp(expect, "100-continue") == 0 &&
	    h->h_minor == 1 && c->c_inlen == 0 &&
	    evbuffer_add(c->c_out, "HTTP/1.1 100 Continue\r\n\r\n", 25) == 0)
		conn_kick(c);
}

static int
conn_body_append(void *arg, const char *data, size_t len)
{
	struct http_conn	*c = arg;
	size_t			 cap;
	char			*p;

	/* The decoder keeps the total within c_body_max. */
	if (c->c_body_cap - c->c_body_len < len) {
		cap = c->c_body_cap < HTTP_BODY_MIN / 2 ? HTTP_BODY_MIN :
		    c->c_body_cap * 2;
		if (cap > c->c_body_max)
			cap = c->c_body_max;
		if (cap < c->c_body_len + len)
			cap = c->c_body_len + len;
		if ((p = realloc(c->c_body, cap)) == NULL) {
			log_warn("%s: realloc", __func__);
			return -1;
		}
		c->c_body = p;
		c->c_body_cap = cap;
	}
	memcpy(c->c_body + c->c_body_len, data, len);
	c->c_body_len += len;
	c->c_body_in += len;
	c->c_srv->s_moved += len;
	return 0;
}

/* The first n bytes of the input are used. */
static void
conn_consume(struct http_conn *c, size_t n)
{
	memmove(c->c_in, c->c_in + n, c->c_inlen - n);
	c->c_inlen -= n;
	c->c_scan = 0;
}

static void
conn_read_body(struct http_conn *c)
{
	enum hp_status	 st;
	size_t		 n, used;

	if (c->c_head.h_framing == HTTP_BODY_LENGTH) {
		n = c->c_head.h_content_length - c->c_body_len;
		if (n > c->c_inlen)
			n = c->c_inlen;
		memcpy(c->c_body + c->c_body_len, c->c_in, n);
		conn_consume(c, n);
		c->c_body_len += n;
		c->c_body_in += n;
		c->c_srv->s_moved += n;
		if (c->c_body_len == c->c_head.h_content_length)
			conn_body_done(c);
		return;
	}
	/* The decoder uses all it is given until the body ends or fails. */
	while (c->c_state == C_BODY && c->c_inlen > 0) {
		st = http_chunked_feed(&c->c_chunked, c->c_in, c->c_inlen,
		    &used, conn_body_append, c);
		conn_consume(c, used);
		if (st == HP_DONE)
			conn_body_done(c);
		else if (st == HP_ERROR) {
			log_debug("%s: %s", __func__,
			    hc_err_to_string(c->c_chunked.hc_err));
			if (c->c_chunked.hc_err == HC_ERR_TOO_LARGE)
				conn_body_fail(c, HTTP_BODY_TOO_LARGE);
			else if (c->c_chunked.hc_err == HC_ERR_CALLBACK)
				/* conn_body_append() fails only for memory */
				conn_body_fail(c, HTTP_BODY_NOMEM);
			else
				conn_body_fail(c, HTTP_BODY_INVALID);
		} else if (used == 0)
			break;
	}
}

static void
conn_route(struct http_conn *c)
{
	struct http_server	*srv = c->c_srv;
	const struct http_head	*h = &c->c_head;

	c->c_state = C_ROUTE;
	c->c_routed = 1;
	c->c_get = strcmp(h->h_method, "GET") == 0;
	c->c_nobody = strcmp(h->h_method, "HEAD") == 0;
	c->c_consumed = h->h_framing == HTTP_BODY_NONE ||
	    (h->h_framing == HTTP_BODY_LENGTH && h->h_content_length == 0);
	conn_set_timeouts(c);
	srv->s_cbs.on_head(c, h, srv->s_arg);
	if (c->c_state == C_ROUTE)
		c->c_state = C_WAIT;
	else if (c->c_state == C_BODY && !c->c_body_held)
		conn_body_begin(c);
}

/*
 * The end of the head in the input: the first "\r\n\r\n" whose last byte is
 * at c_scan or after, by the line ends (a head's few dozen, where a search
 * for the four bytes compares at every one).  NULL when there is none yet.
 */
static const char *
conn_head_end(const struct http_conn *c)
{
	const char	*in = c->c_in, *end = in + c->c_inlen, *p;

	for (p = in + c->c_scan; p < end &&
	    (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
		if (p - in >= 3 && p[-1] == '\r' && p[-2] == '\n' &&
		    p[-3] == '\r')
			return p - 3;
	return NULL;
}

static void
conn_read_head(struct http_conn *c)
{
	const char	*end;
	size_t		 n;

	if (c->c_inlen == 0)
		return;
	end = conn_head_end(c);
	if (end == NULL && c->c_inlen <= HTTP_HEAD_MAX) {
		c->c_scan = c->c_inlen > 3 ? c->c_inlen - 3 : 0;
		return;
	}
	n = end == NULL ? c->c_inlen : (size_t)(end - c->c_in) + 4;
	if (n > HTTP_HEAD_MAX + 1)
		n = HTTP_HEAD_MAX + 1;
	if (http_parse_head(c->c_in, n, &c->c_head) != HP_DONE) {
		log_debug("%s: %s", __func__,
		    hp_err_to_string(c->c_head.h_err));
		conn_bad_request(c);
		return;
	}
	conn_consume(c, c->c_head.h_len);
	evtimer_del(c->c_timer);
	conn_route(c);
}

static void
conn_input(struct http_conn *c)
{
	enum conn_state	 prev;

	do {
		prev = c->c_state;
		switch (c->c_state) {
		case C_HEAD:
			conn_read_head(c);
			break;
		case C_BODY:
			/* held: what came stays in the input */
			if (c->c_body_held)
				return;
			conn_read_body(c);
			break;
		case C_ROUTE:
		case C_CLOSED:
			return;
		case C_WAIT:
		case C_STREAM:
		case C_FLUSH:
		case C_LINGER:
			/* One request per connection: the rest is dropped. */
			c->c_inlen = 0;
			break;
		}
	} while (c->c_state != prev);
	/* The head's buffer is not kept for a call that waits or streams. */
	if (c->c_inlen == 0 && c->c_in != NULL && c->c_state != C_HEAD &&
	    c->c_state != C_BODY)
		conn_in_free(c);
}

/*
 * Room in the input for the next read: up to HTTP_HEAD_MAX + 1 bytes for
 * the head (the parser's answer for more is the same), HTTP_READ_MAX for a
 * chunked body, HTTP_READ_FIRST otherwise.  -1: no memory.
 */
static int
conn_in_room(struct http_conn *c)
{
	size_t	 want, cap;
	char	*p;

	if (c->c_state == C_HEAD)
		want = c->c_inlen < HTTP_READ_FIRST ? HTTP_READ_FIRST :
		    HTTP_HEAD_MAX + 1;
	else if (c->c_state == C_BODY)
		want = HTTP_READ_MAX;
	else
		want = HTTP_READ_FIRST;
	if (c->c_incap >= want && c->c_inlen < c->c_incap)
		return 0;
	if (c->c_in == NULL && want == HTTP_READ_FIRST &&
	    c->c_srv->s_spare != NULL) {
		c->c_in = c->c_srv->s_spare;
		c->c_srv->s_spare = NULL;
		c->c_incap = HTTP_READ_FIRST;
		return 0;
	}
	cap = want > c->c_incap ? want : c->c_incap;
	if ((p = realloc(c->c_in, cap)) == NULL) {
		log_warn("%s: realloc", __func__);
		return -1;
	}
	c->c_in = p;
	c->c_incap = cap;
	return 0;
}

/* The client ended its side. */
static void
conn_eof(struct http_conn *c)
{
	c->c_eof = 1;
	switch (c->c_state) {
	case C_HEAD:
		if (c->c_inlen > 0)
			conn_bad_request(c);
		else
			conn_close(c);
		break;
	case C_BODY:
		conn_body_fail(c, HTTP_BODY_ABORTED);
		break;
	case C_FLUSH:
		/* Half-closed: the answer may still be read. */
		break;
	case C_ROUTE:
	case C_WAIT:
	case C_STREAM:
	case C_LINGER:
		conn_close(c);
		break;
	case C_CLOSED:
		break;
	}
}

/*
 * One read(2): straight into the body while a body of known length is read
 * and nothing else is waiting in the input, else into the input; then what
 * it brought is used, or the end or the error acted on.
 */
void
conn_read(struct http_conn *c)
{
	char	*dst;
	size_t	 room;
	ssize_t	 n;
	int	 direct;

	direct = c->c_state == C_BODY && !c->c_body_held &&
	    c->c_inlen == 0 && c->c_head.h_framing == HTTP_BODY_LENGTH &&
	    c->c_body != NULL;
	if (direct) {
		dst = c->c_body + c->c_body_len;
		room = c->c_head.h_content_length - c->c_body_len;
		if (room > HTTP_READ_MAX)
			room = HTTP_READ_MAX;
	} else {
		if (conn_in_room(c) == -1) {
			if (c->c_state == C_BODY)
				conn_body_fail(c, HTTP_BODY_NOMEM);
			else
				conn_close(c);
			return;
		}
		dst = c->c_in + c->c_inlen;
		room = c->c_incap - c->c_inlen;
	}
	/* Each state's reads leave room or stop; none should be here. */
	if (room == 0) {
		log_warnx("%s: no room to read", __func__);
		conn_read_off(c);
		return;
	}
	do
		n = read(c->c_fd, dst, room);
	while (n == -1 && errno == EINTR);
	if (n > 0 && direct) {
		c->c_body_len += (size_t)n;
		c->c_body_in += (size_t)n;
		c->c_srv->s_moved += (size_t)n;
		if (c->c_body_len == c->c_head.h_content_length)
			conn_body_done(c);
		return;
	}
	if (n > 0) {
		c->c_inlen += (size_t)n;
		conn_input(c);
		return;
	}
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	/* Nothing more will come. */
	conn_read_off(c);
	if (n == 0)
		conn_eof(c);
	else
		conn_failed(c, "read");
}

void
conn_readcb(evutil_socket_t fd, short what, void *arg)
{
	struct http_conn	*c = arg;

	/* The read limit is set only while a body is read. */
	if (what & EV_TIMEOUT) {
		if (c->c_state == C_BODY)
			conn_body_fail(c, HTTP_BODY_SILENCE);
		else
			conn_close(c);
		return;
	}
	conn_read(c);
}
