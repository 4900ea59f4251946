/*
 * whttp: HTTP/1.1 over the broker's Unix socket, one request per
 * connection, every step bounded by the request's deadline.
 */
#ifndef WHTTP_H
#define WHTTP_H

#include <stddef.h>

#include "wjson.h"

struct whttp_response;

/* Takes a piece of a 2xx body as it arrives; -1 abandons the request. */
typedef int	(*whttp_sink)(void *, const struct whttp_response *,
		    const char *, size_t);

struct whttp_request {
	const char	*wr_method;
	const char	*wr_path;	/* checked: no space, CR or LF */
	const char	*wr_content_type; /* NULL: none */
	const char	*wr_extra;	/* header lines, each ending CRLF */
	const void	*wr_body;
	size_t		 wr_body_len;
	int		 wr_timeout_ms;	/* for the whole exchange */
	size_t		 wr_body_max;	/* of the answer's body */
	whttp_sink	 wr_sink;	/* NULL: collect in ws_body */
	void		*wr_sink_arg;
};

/* With a sink, ws_body still collects the body of a non-2xx answer. */
struct whttp_response {
	int		 ws_status;
	char		 ws_content_type[128];
	struct wbuf	 ws_body;
};

enum whttp_err {
	WHTTP_OK = 0,
	WHTTP_ERR_PATH,		/* socket path does not fit */
	WHTTP_ERR_REQUEST,	/* the request itself is malformed */
	WHTTP_ERR_SOCKET,
	WHTTP_ERR_CONNECT,
	WHTTP_ERR_TIMEOUT,
	WHTTP_ERR_IO,
	WHTTP_ERR_CLOSED,	/* the peer closed before the answer ended */
	WHTTP_ERR_PROTO,	/* not an HTTP/1.x answer we can frame */
	WHTTP_ERR_TOO_BIG,
	WHTTP_ERR_SINK,
	WHTTP_ERR_NOMEM
};

const char	*whttp_err_to_string(enum whttp_err);
enum whttp_err	 whttp_do(const char *, const struct whttp_request *,
		    struct whttp_response *);
/* A request with a JSON body (or none) and nothing else to set: the
 * answer's body in resp, at most max bytes. */
enum whttp_err	 whttp_call(const char *sockpath, const char *method,
		    const char *path, const char *body, size_t len,
		    int timeout_ms, size_t max, struct whttp_response *);
void		 whttp_response_free(struct whttp_response *);

/*
 * A request sent whose answer is read later, so that two can be in
 * flight at once; the request must outlive it.
 */
struct whttp_pending;
enum whttp_err	 whttp_send(const char *, const struct whttp_request *,
		    struct whttp_pending **);
enum whttp_err	 whttp_receive(struct whttp_pending *,
		    struct whttp_response *);
void		 whttp_pending_free(struct whttp_pending *);

#endif /* WHTTP_H */
