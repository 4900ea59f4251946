/*
 * Outbound HTTP/1.1 calls over TCP and TLS (OpenSSL), on the libevent loop,
 * with a pool of kept-alive connections.  The answer is handed over as it
 * arrives (PROTOCOL.md 3.2: "The body is streamed as it arrives ... with
 * back-pressure"); nothing here buffers a whole body.  A request is sent
 * once: a connection that fails is never tried again with it.
 *
 * Re-entrancy rules, for the callers:
 * - Callbacks run from the event loop, never from inside upstream_call(),
 *   upstream_resume(), upstream_cancel() or upstream_free().
 * - Inside any callback the caller may call upstream_call(),
 *   upstream_resume() and upstream_cancel() on any call, including the one
 *   the callback is about; never upstream_free().
 */
#ifndef RTSANDBOX_UPSTREAM_H
#define RTSANDBOX_UPSTREAM_H

#include <stddef.h>

struct event_base;
struct sockaddr;
struct upstream;
struct up_call;

/* The final response header block: at most this many lines, and this many
 * bytes counting each name and value plus one; else UP_PROTOCOL. */
#define UP_RESP_HDRS_MAX		128
#define UP_RESP_HDR_BYTES_MAX		65536
/* Used when up_request.connect_timeout_ms is 0; covers TCP and TLS. */
#define UP_CONNECT_TIMEOUT_MS_DEFAULT	10000L

/* on_data's answer that stops the transfer until upstream_resume(). */
#define UP_PAUSE			1
/* The most body bytes one on_data is given. */
#define UP_DATA_MAX			(256 * 1024)

enum up_result {
	UP_OK,
	UP_CONNECT_FAILED,	/* name resolution or TCP connect */
	UP_TLS_FAILED,		/* handshake, certificate or host name */
	UP_TIMEOUT,		/* connect (TCP + TLS) took too long; after
				 * that only the caller ends a slow call */
	UP_ABORTED,		/* on_head or on_data returned -1 */
	UP_PROTOCOL,		/* bad HTTP, headers past the limits, or the
				 * connection broke mid-way */
	UP_TOO_LARGE,		/* body longer than up_request.max_body */
	UP_OTHER,		/* anything else (bad URL, out of memory) */
};

struct up_hdr {
	const char	*name;
	const char	*value;
};

struct up_request {
	/* https://..., or http:// where the caller allows it; user names and
	 * passwords in the URL are refused (the caller sends authorization). */
	const char		*url;
	/*
	 * Exactly the request headers sent, in this order, besides Host and,
	 * with a body, Content-Length; nothing else is added (no Accept,
	 * Expect, Content-Type, Accept-Encoding, Cookie, User-Agent).  Names
	 * are HTTP tokens and values hold no CR, LF or NUL; names that frame
	 * the message (host, content-length, transfer-encoding, connection,
	 * expect, te, upgrade) are refused.  Copied by upstream_call().
	 */
	const struct up_hdr	*hdrs;
	size_t			 nhdrs;
	/*
	 * Non-NULL: POST this body (body_len may be 0).  NULL: GET.  Not
	 * copied: it must stay valid and unchanged until on_end() has been
	 * called, or upstream_cancel() or upstream_free() has returned.
	 */
	const void		*body;
	size_t			 body_len;
	/* Trust only this CA file; NULL: the system bundle.  Peer and host
	 * name are always verified. */
	const char		*ca_file;
	long			 connect_timeout_ms;	/* 0: the default */
	size_t			 max_body;		/* 0: no limit */
	/*
	 * Non-NULL: connect to this AF_INET or AF_INET6 address and port and
	 * to no other (no name lookup, no proxy), while Host, SNI and the
	 * certificate check still use the URL's host.  Copied.
	 */
	const struct sockaddr	*connect_addr;
	size_t			 connect_addr_len;
};

/* on_head and on_data may be NULL; on_end may not. */
struct up_callbacks {
	/*
	 * Once, when the final (non-1xx) header block is complete: the
	 * status and the header lines in order, names lowercased, values
	 * trimmed of spaces and tabs, folded lines joined with one space.
	 * The array and its strings are valid during the call only.
	 * Return 0, or -1 to end the call with UP_ABORTED.
	 */
	int	(*on_head)(struct up_call *, long status,
		    const struct up_hdr *hdrs, size_t n, void *arg);
	/*
	 * Body bytes as they arrive: all that one read brought, up to
	 * UP_DATA_MAX at a time, decoded from chunked, never decompressed;
	 * only after on_head.  The bytes are consumed whatever the answer: 0
	 * to go on, UP_PAUSE to stop until upstream_resume(), -1 to end the
	 * call with UP_ABORTED.  buf is valid until on_flush or on_end
	 * returns, whichever comes first.
	 */
	int	(*on_data)(struct up_call *, const void *buf, size_t len,
		    void *arg);
	/*
	 * Exactly once per call that was not cancelled, last: UP_OK after the
	 * whole body, else why it failed (possibly before on_head, e.g. a
	 * Content-Length past max_body).  detail is never NULL, is for the
	 * host log only, and is valid during the call only.  The up_call is
	 * freed when on_end returns.
	 */
	void	(*on_end)(struct up_call *, enum up_result, const char *detail,
		    void *arg);
	/*
	 * May be NULL.  After on_head or on_data, once what has arrived so
	 * far has been handed over and the call goes on: what the caller
	 * holds back to send along with more may go now.  Not called when
	 * on_end follows in the same read, which is then the time.
	 */
	void	(*on_flush)(struct up_call *, void *arg);
};

/* OpenSSL and its configuration, once, before a sandbox forbids reading
 * them; upstream_new() does it too. */
void		 upstream_init(void);
/* Never returns NULL; what cannot be made is fatal. */
struct upstream	*upstream_new(struct event_base *);
/* Cancels every live call (no on_end) and frees all.  Not from a callback. */
void		 upstream_free(struct upstream *);

/*
 * Start a call; cb is copied.  NULL (logged, no callback ever) when the
 * request is refused; a URL that cannot be used ends the call with
 * UP_OTHER through on_end.
 */
struct up_call	*upstream_call(struct upstream *, const struct up_request *,
		    const struct up_callbacks *cb, void *arg);
/*
 * Lift an UP_PAUSE.  Takes effect on the next turn of the event loop, so
 * on_data is never called from inside upstream_resume().  Calling it during
 * on_data and then returning UP_PAUSE pauses and resumes at once.
 */
void		 upstream_resume(struct up_call *);
/*
 * Abort the call and forget it: no callback at all is made afterwards, not
 * even on_end, and the up_call must not be used again.  Safe from inside any
 * callback, including the call's own; inside its own on_end it does nothing.
 */
void		 upstream_cancel(struct up_call *);

/*
 * Inside on_end only: the errno of the last socket operation that failed
 * (e.g. ECONNREFUSED, or ETIMEDOUT when the connect deadline passed), or 0.
 */
int		 upstream_os_errno(const struct up_call *);

const char	*up_result_to_string(enum up_result);

#endif
