/*
 * The broker's HTTP/1.1 transport on its listening socket (PROTOCOL.md 3.5):
 * one request per connection, every answer with "connection: close", bounded
 * heads, body sizes decided by the router, and the listener's timers.  What a
 * request means is the router's business; this file only moves bytes.
 *
 * Callbacks never run inside an http_*() call: they come from the event
 * loop, so the router may call anything here from inside any of them.
 */
#ifndef RTSANDBOX_HTTP_H
#define RTSANDBOX_HTTP_H

#include <stddef.h>

#include "httpparse.h"

struct event_base;
struct evbuffer;
struct http_server;
struct http_conn;

/* Not in PROTOCOL.md: how long a refused or unread request may keep
 * sending after the answer went out, so that its client reads the answer. */
#define HTTP_LINGER_MS		2000

/* The head limit counts from accept; the silence limits from the last byte
 * moved while a body is read or an answer is queued. */
struct http_limits {
	unsigned	 hl_conn_max;	/* BROKER_CONN_MAX */
	int		 hl_head_ms;	/* BROKER_HEADER_TIMEOUT_MS */
	int		 hl_silence_ms;	/* BROKER_SILENCE_MS, not for GET */
	int		 hl_linger_ms;	/* HTTP_LINGER_MS */
	/* After hl_refusals refusals within hl_refusal_ms of the first, the
	 * listener rests until that time is over; 0: it never rests. */
	unsigned	 hl_refusals;	/* BROKER_REFUSALS_MAX */
	int		 hl_refusal_ms;	/* BROKER_REFUSAL_WINDOW_MS */
};
void		 http_limits_default(struct http_limits *);

enum http_body_err {
	HTTP_BODY_TOO_LARGE = 1, /* over the maximum; nothing more is read */
	HTTP_BODY_INVALID,	/* bad chunked framing */
	HTTP_BODY_ABORTED,	/* the client closed or failed mid-body */
	HTTP_BODY_SILENCE,	/* nothing for hl_silence_ms */
	HTTP_BODY_NOMEM,	/* no memory for the body; nothing more is read */
};
const char	*http_body_err_to_string(enum http_body_err);

/* arg is the one given to http_server_new(). */
typedef void	(*http_head_cb)(struct http_conn *, const struct http_head *,
		    void *arg);
typedef void	(*http_body_cb)(struct http_conn *, const char *body,
		    size_t len, void *arg);
typedef void	(*http_body_err_cb)(struct http_conn *, enum http_body_err,
		    void *arg);
typedef void	(*http_conn_cb)(struct http_conn *, void *arg);

struct http_server_cbs {
	/*
	 * A complete, valid head.  Before returning, the router answers
	 * (http_respond*(), http_stream_start(), http_conn_kill()), asks for
	 * the body (http_read_body()), or does neither: the request is then
	 * held until it answers, with the connection watched for a close.
	 */
	http_head_cb	 on_head;
	/*
	 * Once for every connection that got on_head, whatever ended it: the
	 * answer was written, the client left, a timer fired, a kill.  An
	 * end of file after the head counts as leaving (a half-closed client
	 * is not answered).  The conn is valid until this returns; every
	 * http_*() call on it fails.  Connections that never delivered a head
	 * (answered 400, or gone) end without a callback.
	 */
	http_conn_cb	 on_close;
};

/*
 * Serve the listening socket listen_fd (made non-blocking; it stays the
 * caller's).  limits NULL means those of PROTOCOL.md 3.5.  For the whole
 * process: SIGPIPE is ignored, and malloc keeps buffers under 1 MiB on its
 * heap with up to 4 MiB free while connections are open (see http.c).
 */
struct http_server *http_server_new(struct event_base *, int listen_fd,
		    const struct http_server_cbs *, void *arg,
		    const struct http_limits *);
/* Close every connection, without callbacks.  Not from inside one of the
 * server's own callbacks. */
void		 http_server_free(struct http_server *);
/* Open connections (the refused ones are never counted). */
unsigned	 http_server_nconn(const struct http_server *);
/* Times the listener rested after too many refusals (hl_refusals). */
unsigned	 http_server_rests(const struct http_server *);
/* Let go of the buffer kept for the next connection's first read (16 KiB),
 * for an idle process to give back to the kernel. */
void		 http_server_shrink(struct http_server *);
/*
 * While corked, what is queued on any connection waits, and uncorking
 * writes it, one writev(2) per connection: a router that answers several
 * frames of one read sends them together.  Uncork before returning to the
 * loop.
 */
void		 http_server_cork(struct http_server *);
void		 http_server_uncork(struct http_server *);

/*
 * Read the body, from inside on_head only (-1 otherwise).  Exactly one of
 * the callbacks follows.  on_body gets the whole body (chunked decoded),
 * valid until it returns; an empty body is on_body(conn, "", 0).  A
 * Content-Length over max is HTTP_BODY_TOO_LARGE before anything is read; a
 * chunked body fails as soon as a chunk size takes it over.  After
 * HTTP_BODY_TOO_LARGE, _INVALID or _NOMEM the router may answer from the
 * callback, else the connection is closed; after _ABORTED and _SILENCE it
 * is closed.
 * An "expect: 100-continue" is honoured here.
 */
int		 http_read_body(struct http_conn *, size_t max, http_body_cb,
		    http_body_err_cb);
/*
 * From inside on_body: the body becomes the caller's to free(3), to be
 * let go of before the callback returns (NULL when it cannot be given).
 */
char		*http_body_take(struct http_conn *, const char *body);

/*
 * Back-pressure on bodies: right after http_read_body(), hold the body
 * unread (nothing allocated, no silence timer: the wait is the router's,
 * not the client's; the client's writes stop when the socket is full), and
 * release it later to be read as http_read_body() would have; either of
 * its callbacks may run inside the release.  A close while held is seen
 * at the release at the latest.
 */
void		 http_conn_hold_body(struct http_conn *);
void		 http_conn_release_body(struct http_conn *);

/*
 * A whole answer, then close once written: status 200-599, content-type
 * when not NULL, content-length (no body for 204 and 304, "0" for 205; a
 * body there is refused), connection: close, and extra fields (tokens as
 * names, no control characters in values; content-length,
 * transfer-encoding and connection are refused).  A response body is not
 * sent for HEAD.  An unread request body is dropped.  0, or -1 when this
 * conn can no longer answer or a field is refused (nothing was sent).
 */
int		 http_respond(struct http_conn *, int status,
		    const char *content_type, const void *body, size_t len);
int		 http_respond_hdrs(struct http_conn *, int status,
		    const struct http_hdr *, size_t nhdrs, const void *body,
		    size_t len);
/* http_respond() of a malloc(3)ed body that is not copied: it is freed
 * once written, or at once when it cannot be sent. */
int		 http_respond_owned(struct http_conn *, int status,
		    const char *content_type, void *body, size_t len);
/* text/plain; charset=utf-8 with the NUL-terminated text as body. */
int		 http_respond_text(struct http_conn *, int status,
		    const char *text);

/*
 * A streamed answer with chunked transfer-encoding (close-delimited for an
 * HTTP/1.0 client): the head now, data as it comes, http_stream_end() for
 * the last chunk, or http_conn_kill() so that the client sees a truncated
 * body.  Writes of 0 bytes do nothing.  http_stream_write_buffer() moves
 * the evbuffer's contents without copying.  0, or -1 when not streaming.
 */
int		 http_stream_start(struct http_conn *, int status,
		    const struct http_hdr *, size_t nhdrs);
int		 http_stream_write(struct http_conn *, const void *, size_t);
int		 http_stream_write_buffer(struct http_conn *,
		    struct evbuffer *);
int		 http_stream_end(struct http_conn *);

/*
 * A streamed answer that failed: while nothing of it has reached the
 * socket (the head waits for a write, or for the uncork), it is replaced by
 * a whole answer of status and text, and 0; else -1, and the caller cuts
 * the connection so that the client sees a truncated body.
 */
int		 http_stream_fail(struct http_conn *, int status,
		    const char *text);

/* Close now, dropping what was not written; on_close follows. */
void		 http_conn_kill(struct http_conn *);
/*
 * Whether the client may still be there: not when it ended its side or
 * its socket says so now (one recv(2) with MSG_PEEK).  Asked before a
 * request held for long is answered with something that must not be lost.
 */
int		 http_conn_alive(const struct http_conn *);

/* Back-pressure: bytes queued and not yet written. */
size_t		 http_conn_pending(const struct http_conn *);
/* Call cb once each time pending falls to lowat or below after being
 * above it while streaming. */
void		 http_conn_set_drain(struct http_conn *, size_t lowat,
		    http_conn_cb);
/* Stop or resume reading the socket (no silence timer while stopped);
 * bytes already received are still processed. */
void		 http_conn_pause_read(struct http_conn *);
void		 http_conn_resume_read(struct http_conn *);

/* One timer per conn for the router, once the head is in: cb after ms
 * (replaces the previous one); cb NULL cancels.  -1 once the whole answer
 * is queued, or when the timer cannot be set (then none is). */
int		 http_conn_set_timer(struct http_conn *, int ms, http_conn_cb);

void		 http_conn_set_data(struct http_conn *, void *);
void		*http_conn_get_data(const struct http_conn *);
/* The request's head, valid until on_close returns; NULL before it. */
const struct http_head *http_conn_head(const struct http_conn *);

#endif
