/*
 * Frames between processes (DESIGN.md 3): a header of u32 json_len and
 * u32 data_len, both big-endian, then json_len bytes of one JSON object, then
 * data_len raw bytes.  Descriptors ride with the first byte of the header as
 * SCM_RIGHTS.  Each edge has its own maxima, checked before allocating.
 */
#ifndef RTSANDBOX_FRAME_H
#define RTSANDBOX_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_HDR_LEN	8
/* The most descriptors one frame may carry on any edge. */
#define FRAME_MAXFDS	4
/* After ETOOMANYREFS, descriptors are sent again this much later. */
#define FRAME_REFS_RETRY_MS	10

struct event_base;

struct frame_limits {
	uint32_t	 fl_json_max;	/* JSON bytes, at least 2 ("{}") */
	uint32_t	 fl_data_max;	/* raw bytes, may be 0 */
};

/* One received frame.  Owned by the frame layer for the callback's length;
 * a receiver that keeps a descriptor sets its slot to -1. */
struct frame {
	const uint8_t	*f_json;
	uint32_t	 f_json_len;
	const uint8_t	*f_data;
	uint32_t	 f_data_len;
	int		 f_fds[FRAME_MAXFDS];
	int		 f_nfds;
};

enum frame_err {
	FRAME_OK = 0,
	FRAME_EOF,		/* peer closed between frames */
	FRAME_TRUNCATED,	/* peer closed inside a frame */
	FRAME_IO,		/* read or write failed (errno logged) */
	FRAME_EMPTY_JSON,	/* json_len below 2 */
	FRAME_JSON_TOO_LONG,	/* json_len over the edge's maximum */
	FRAME_DATA_TOO_LONG,	/* data_len over the edge's maximum */
	FRAME_TOO_MANY_FDS,	/* more descriptors than a frame may carry */
	FRAME_BAD_CMSG,		/* truncated or foreign control message */
	FRAME_OUT_OF_MEMORY,
	FRAME_SEND_TOO_LONG,	/* local sender exceeded the edge's maximum */
};
const char	*frame_err_to_string(enum frame_err);

/* Pure header check: fills lengths and returns FRAME_OK or why it fails. */
enum frame_err	 frame_header_parse(const uint8_t hdr[FRAME_HDR_LEN],
		    const struct frame_limits *, uint32_t *json_len,
		    uint32_t *data_len);
void		 frame_header_write(uint8_t hdr[FRAME_HDR_LEN],
		    uint32_t json_len, uint32_t data_len);

struct frame_conn;

/* Called once per complete frame; the conn may be freed inside. */
typedef void	(*frame_cb)(struct frame_conn *, struct frame *, void *);
/* Called once when the edge fails or ends; the conn must not be used for
 * I/O afterwards (free it, possibly inside the callback). */
typedef void	(*frame_err_cb)(struct frame_conn *, enum frame_err, void *);

/* The conn owns fd from here on (made non-blocking and close-on-exec; closed
 * if this fails). */
struct frame_conn *frame_conn_new(struct event_base *, int fd,
		    const struct frame_limits *in, const struct frame_limits *out,
		    frame_cb, frame_err_cb, void *arg);
void		 frame_conn_free(struct frame_conn *);
int		 frame_conn_fd(const struct frame_conn *);

/*
 * Queue one frame.  Descriptors in fds are owned by the conn from this call
 * on (closed once sent, or when the conn is freed).  Returns FRAME_OK or
 * FRAME_SEND_TOO_LONG / FRAME_TOO_MANY_FDS / FRAME_OUT_OF_MEMORY (also
 * FRAME_EMPTY_JSON, and FRAME_IO once the edge has failed), in which case
 * the descriptors are closed too.  A write failure is never reported from
 * inside this call: the err callback runs from the loop.
 */
enum frame_err	 frame_conn_send(struct frame_conn *, const void *json,
		    size_t json_len, const void *data, size_t data_len,
		    const int *fds, int nfds);
/* One frame of frame_conn_sendv(): no descriptors. */
struct frame_part {
	const void	*fp_json;
	size_t		 fp_json_len;
	const void	*fp_data;
	size_t		 fp_data_len;
};
/* The most frames one frame_conn_sendv() takes. */
#define FRAME_SENDV_MAX	8

/*
 * Queue n frames, in order, as frame_conn_send() would each, nothing
 * queued if one is refused.  On an idle socket they go out in one
 * sendmsg(), and only what it did not take is copied: the caller's buffers
 * need to live only through the call.
 */
enum frame_err	 frame_conn_sendv(struct frame_conn *,
		    const struct frame_part *, int n);
/* Bytes queued and not yet written, for back-pressure. */
size_t		 frame_conn_pending(const struct frame_conn *);
/* Called when the queue drains below low-water (0 = disabled). */
void		 frame_conn_set_drain_cb(struct frame_conn *,
		    void (*)(struct frame_conn *, void *), size_t lowat);
/*
 * The read buffer kept between frames (the edge's largest frame at most):
 * a receiver of a stream reads more per wake-up with a larger one.
 */
void		 frame_conn_set_read_size(struct frame_conn *, size_t);
/* Give the read buffer back once nothing is left in it (after the read
 * in progress, if any): an edge that goes quiet keeps no buffer. */
void		 frame_conn_shrink(struct frame_conn *);
/* Stop or resume reading frames (back-pressure from the receiver). */
void		 frame_conn_pause(struct frame_conn *, int paused);

/*
 * Back-pressure on a peer that does not read what is sent to it (DESIGN.md
 * 1, invariant 7): while more than cap bytes wait to be written, the conn
 * reads no frames from the peer, so that what it answers cannot pile up.
 * If nothing at all is written for stall_ms meanwhile, stalled runs once:
 * its owner stops the peer (the conn is not freed for it).
 */
void		 frame_conn_set_outq_cap(struct frame_conn *, size_t cap,
		    unsigned stall_ms,
		    void (*stalled)(struct frame_conn *, void *));
/* Whether the conn has stopped reading for its peer's unread answers. */
int		 frame_conn_outq_full(const struct frame_conn *);

/*
 * What a process holds in read buffers for a class of peers, together: a
 * conn given a budget counts its read buffer against it, and a buffer that
 * would grow past fb_max fails that conn with FRAME_OUT_OF_MEMORY, so that
 * the peers together can never make the process run out (the one whose
 * frame does not fit is dropped, never the process).  Read buffers grow
 * with the bytes that arrived, not with the length a header declares.
 */
struct frame_budget {
	size_t		 fb_max;
	size_t		 fb_used;
	size_t		 fb_peak;
};
void		 frame_conn_set_budget(struct frame_conn *,
		    struct frame_budget *);
/*
 * Called after the frames one read brought have all been delivered (NULL:
 * none): a receiver that holds back what those frames made it send sends
 * it now, in one go.
 */
void		 frame_conn_set_batch_cb(struct frame_conn *,
		    void (*)(struct frame_conn *, void *));

/*
 * Blocking helpers for bring-up and for tests: send or receive exactly one
 * frame on a blocking descriptor.  frame_send_blocking leaves fds open (they
 * stay the caller's).  frame_recv_blocking allocates json and data
 * (NUL-terminated json) that the caller frees, and gives the caller every
 * descriptor that came with the frame.
 */
enum frame_err	 frame_send_blocking(int fd, const void *json, size_t json_len,
		    const void *data, size_t data_len, const int *fds, int nfds);
enum frame_err	 frame_recv_blocking(int fd, const struct frame_limits *,
		    struct frame *out, uint8_t **json, uint8_t **data);

#endif
