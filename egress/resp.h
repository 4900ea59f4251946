/*
 * The reader of an HTTP/1.1 answer (RFC 9112) for upstream.c: the status
 * line and the header block, interim 1xx blocks dropped, then the body by
 * its framing (Content-Length, chunked, or until the connection closes),
 * trailers read and dropped.  A pure function over buffers: Check and
 * libFuzzer drive it directly, and it allocates only the header block,
 * within its bound.
 */
#ifndef RTSANDBOX_RESP_H
#define RTSANDBOX_RESP_H

#include <stddef.h>
#include <stdint.h>

/* The final header block: at most this many lines, and this many bytes
 * counting each name and value plus one. */
#define RESP_HDRS_MAX		128
#define RESP_HDR_BYTES_MAX	65536
/* A status line, a chunk-size line or a trailer line, at most. */
#define RESP_LINE_MAX		8192

enum resp_framing {
	RESP_NONE,		/* 204, 304: no body */
	RESP_LENGTH,		/* Content-Length */
	RESP_CHUNKED,
	RESP_CLOSE,		/* until the connection closes */
};

enum resp_status {
	RESP_MORE,		/* every byte was used; more are needed */
	RESP_HEAD,		/* the final header block just ended */
	RESP_DONE,		/* the answer is complete */
	RESP_ERROR,		/* rs_err says why */
};

struct resp_hdr {
	const char	*name;
	const char	*value;
};

struct resp {
	int			 rs_state;
	long			 rs_status;
	int			 rs_minor;
	enum resp_framing	 rs_framing;
	int			 rs_keep_alive;	/* the connection may serve more */
	int			 rs_has_length;
	uint64_t		 rs_length;	/* Content-Length */
	uint64_t		 rs_left;	/* body or chunk bytes to come */
	/* The header block as "name\0value\0", lowercased names. */
	char			*rs_hbuf;
	size_t			 rs_hlen;
	size_t			 rs_hcap;
	size_t			 rs_nhdrs;
	/* A line cut by the end of a buffer, kept until its end comes. */
	char			*rs_line;
	size_t			 rs_llen;
	size_t			 rs_lcap;
	size_t			 rs_trailer;	/* trailer bytes so far */
	const char		*rs_err;
	/* Where each header's name and value start in rs_hbuf: 2 KiB that
	 * resp_init() leaves as they are, as only the first rs_nhdrs rows
	 * are ever read. */
	size_t			 rs_hoff[RESP_HDRS_MAX][2];
};

void		 resp_init(struct resp *);
void		 resp_free(struct resp *);

/*
 * Read the next len bytes of the answer in buf.  *used says how many were
 * read (all of them for RESP_MORE).  Body bytes among them are moved to the
 * front of buf, in order, and counted in *body; for RESP_HEAD *body is 0.
 * After RESP_HEAD the caller goes on with the rest of the bytes; after
 * RESP_DONE, bytes past *used are not part of this answer.  After
 * RESP_ERROR every call fails again.
 */
enum resp_status resp_feed(struct resp *, uint8_t *buf, size_t len,
		    size_t *used, size_t *body);

/* The connection closed: RESP_DONE when that ends a body framed by the
 * close, else RESP_ERROR with the reason. */
enum resp_status resp_eof(struct resp *);

/* After RESP_HEAD: the header lines in order, pointers into the reader,
 * valid until the next resp_feed().  Returns how many (at most max). */
size_t		 resp_headers(const struct resp *, struct resp_hdr *,
		    size_t max);

#endif
