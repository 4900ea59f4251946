/*
 * Frames over a stream socket (DESIGN.md 3).  The reader keeps one buffer
 * that is never larger than the current frame (or a small base size), the
 * writer a queue of whole frames; descriptors travel with the first byte of
 * the frame they belong to.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "frame.h"
#include "log.h"

/* Read buffer kept between frames; a larger frame gets exactly its size. */
#define FRAME_RBUF	131072
/* Frames without descriptors gathered into one sendmsg(). */
#define FRAME_WIOV	16
/* Received descriptors waiting for their frame: one frame's worth plus
 * what one recvmsg() can bring. */
#define FRAME_FDQ	(2 * FRAME_MAXFDS)

union frame_cmsg {
	struct cmsghdr	 hdr;
	uint8_t		 buf[CMSG_SPACE(sizeof(int) * FRAME_MAXFDS)];
};

struct frame_out {
	TAILQ_ENTRY(frame_out)	 fo_entry;
	size_t			 fo_len;
	size_t			 fo_off;	/* bytes already sent */
	int			 fo_fds[FRAME_MAXFDS];
	int			 fo_nfds;
	uint8_t			 fo_buf[];	/* header json data */
};
TAILQ_HEAD(frame_outq, frame_out);

struct frame_conn {
	struct event_base	*c_base;
	int			 c_fd;
	struct frame_limits	 c_in;
	struct frame_limits	 c_out;
	frame_cb		 c_cb;
	frame_err_cb		 c_errcb;
	void			*c_arg;
	struct event		*c_rev;
	struct event		*c_wev;

	/*
	 * Bytes not yet delivered are c_rbuf[c_rstart..c_rstart + c_rlen),
	 * the current frame first.  Delivered frames stay where they are
	 * until the next read, so a receiver may point into them until its
	 * batch callback has returned.
	 */
	uint8_t			*c_rbuf;
	size_t			 c_rcap;
	size_t			 c_rstart;
	size_t			 c_rlen;
	size_t			 c_rbase;
	uint64_t		 c_roff;	/* stream offset of c_rstart */

	/*
	 * Received descriptors, oldest first, each with the stream offset of
	 * the last byte of the read that brought it: the kernel ends a read
	 * with the chunk that carries descriptors but may glue earlier bytes
	 * in front of it, so that last byte lies in the descriptors' frame.
	 */
	int			 c_fdq[FRAME_FDQ];
	uint64_t		 c_fdq_off[FRAME_FDQ];
	int			 c_nfdq;

	struct frame_outq	 c_outq;
	size_t			 c_pending;
	void			(*c_draincb)(struct frame_conn *, void *);
	size_t			 c_lowat;
	int			 c_drain_armed;

	void			(*c_batchcb)(struct frame_conn *, void *);
	unsigned		 c_delivered;	/* frames this read */

	/* A peer that does not read: see frame_conn_set_outq_cap(). */
	size_t			 c_oq_cap;	/* 0: none */
	unsigned		 c_oq_stall_ms;
	void			(*c_stallcb)(struct frame_conn *, void *);
	struct event		*c_stallev;
	int			 c_oq_full;	/* reading stopped for it */
	/*
	 * The kernel refused descriptors in flight (ETOOMANYREFS: the
	 * user's descriptors sent and not yet received pass the sender's
	 * RLIMIT_NOFILE): writing waits FRAME_REFS_RETRY_MS for receivers
	 * to take theirs, instead of failing the edge.
	 */
	int			 c_toomany;
	struct event		*c_retryev;
	struct frame_budget	*c_budget;	/* NULL: none */

	int			 c_shrink;	/* free c_rbuf once empty */
	int			 c_paused;
	int			 c_reading;	/* c_rev added */
	int			 c_failed;	/* err callback called */
	enum frame_err		 c_werr;	/* for the loop */
	int			 c_busy;	/* inside our handlers */
	int			 c_freed;	/* freed while busy */
};

const char *
frame_err_to_string(enum frame_err err)
{
	switch (err) {
	case FRAME_OK:
		return "no error";
	case FRAME_EOF:
		return "peer closed the connection";
	case FRAME_TRUNCATED:
		return "peer closed the connection inside a frame";
	case FRAME_IO:
		return "read or write failed";
	case FRAME_EMPTY_JSON:
		return "frame JSON shorter than 2 bytes";
	case FRAME_JSON_TOO_LONG:
		return "frame JSON too long";
	case FRAME_DATA_TOO_LONG:
		return "frame data too long";
	case FRAME_TOO_MANY_FDS:
		return "too many descriptors for one frame";
	case FRAME_BAD_CMSG:
		return "truncated or unexpected control message";
	case FRAME_OUT_OF_MEMORY:
		return "out of memory";
	case FRAME_SEND_TOO_LONG:
		return "frame to send exceeds the edge's maximum";
	}
	return "unknown frame error";
}

static uint32_t
get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void
put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

enum frame_err
frame_header_parse(const uint8_t hdr[FRAME_HDR_LEN],
    const struct frame_limits *lim, uint32_t *json_len, uint32_t *data_len)
{
	*json_len = get_be32(hdr);
	*data_len = get_be32(hdr + 4);
	if (*json_len < 2)
		return FRAME_EMPTY_JSON;
	if (*json_len > lim->fl_json_max)
		return FRAME_JSON_TOO_LONG;
	if (*data_len > lim->fl_data_max)
		return FRAME_DATA_TOO_LONG;
	return FRAME_OK;
}

void
frame_header_write(uint8_t hdr[FRAME_HDR_LEN], uint32_t json_len,
    uint32_t data_len)
{
	put_be32(hdr, json_len);
	put_be32(hdr + 4, data_len);
}

static void
fd_close(int fd)
{
	/* On Linux the descriptor is gone even when close() says EINTR. */
	if (fd != -1 && close(fd) == -1 && errno != EINTR)
		log_warn("%s: close", __func__);
}

static void
fds_close(int *fds, int nfds)
{
	int	 i;

	for (i = 0; i < nfds; i++) {
		fd_close(fds[i]);
		fds[i] = -1;
	}
}

static int
fd_prepare(int fd)
{
	int	 fl;

	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1) {
		log_warn("%s: O_NONBLOCK", __func__);
		return -1;
	}
	if ((fl = fcntl(fd, F_GETFD)) == -1 ||
	    fcntl(fd, F_SETFD, fl | FD_CLOEXEC) == -1) {
		log_warn("%s: FD_CLOEXEC", __func__);
		return -1;
	}
	return 0;
}

/*
 * Collect the descriptors of a received message into fds (room for max).
 * Everything received is in fds or closed, also when this fails.
 */
static enum frame_err
cmsg_take_fds(struct msghdr *msg, int *fds, int *nfds, int max)
{
	struct cmsghdr	*cm;
	enum frame_err	 err = FRAME_OK;
	size_t		 i, n;
	int		 fd;

	if (msg->msg_flags & MSG_CTRUNC)
		err = FRAME_BAD_CMSG;
	for (cm = CMSG_FIRSTHDR(msg); cm != NULL; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS) {
			err = FRAME_BAD_CMSG;
			continue;
		}
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			    sizeof(fd));
			if (*nfds < max)
				fds[(*nfds)++] = fd;
			else {
				fd_close(fd);
				if (err == FRAME_OK)
					err = FRAME_TOO_MANY_FDS;
			}
		}
	}
	return err;
}

static void
cmsg_put_fds(struct msghdr *msg, union frame_cmsg *cbuf, const int *fds,
    int nfds)
{
	struct cmsghdr	*cm;

	memset(cbuf, 0, sizeof(*cbuf));
	msg->msg_control = cbuf->buf;
	msg->msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
}

static void
conn_event_del(struct event *ev)
{
	if (event_del(ev) == -1)
		log_warnx("%s: event_del failed", __func__);
}

/* The read buffer is given back: so is its share of the budget. */
static void
conn_rbuf_free(struct frame_conn *c)
{
	if (c->c_budget != NULL)
		c->c_budget->fb_used -= c->c_rcap;
	free(c->c_rbuf);
	c->c_rbuf = NULL;
	c->c_rcap = 0;
}

/* Read when neither the receiver nor a full queue says otherwise. */
static void
conn_read_update(struct frame_conn *c)
{
	int	 want = !c->c_failed && !c->c_freed && !c->c_paused &&
	    !c->c_oq_full;

	if (want == c->c_reading)
		return;
	if (!want) {
		conn_event_del(c->c_rev);
		c->c_reading = 0;
		return;
	}
	if (event_add(c->c_rev, NULL) == -1) {
		log_warnx("%s: event_add failed", __func__);
		c->c_werr = FRAME_IO;
		event_active(c->c_wev, EV_WRITE, 1);
		return;
	}
	c->c_reading = 1;
	/* Frames already buffered would otherwise wait for the peer. */
	if (c->c_rlen > 0)
		event_active(c->c_rev, EV_READ, 1);
}

/*
 * After the queue grew or shrank: stop reading the peer while more than
 * the cap waits for it, and give it stall_ms to take something.
 */
static void
conn_outq_check(struct frame_conn *c, int progress)
{
	struct timeval	 tv;

	if (c->c_oq_cap == 0 || c->c_failed || c->c_freed)
		return;
	if (c->c_pending <= c->c_oq_cap) {
		if (c->c_oq_full) {
			c->c_oq_full = 0;
			evtimer_del(c->c_stallev);
			conn_read_update(c);
		}
		return;
	}
	if (c->c_oq_full && !progress)
		return;
	c->c_oq_full = 1;
	conn_read_update(c);
	tv.tv_sec = c->c_oq_stall_ms / 1000;
	tv.tv_usec = (c->c_oq_stall_ms % 1000) * 1000;
	if (evtimer_add(c->c_stallev, &tv) == -1)
		log_warnx("%s: evtimer_add failed", __func__);
}

static void
conn_fdq_close(struct frame_conn *c)
{
	fds_close(c->c_fdq, c->c_nfdq);
	c->c_nfdq = 0;
}

/* The edge is over: stop its events and tell the owner, once. */
static void
conn_fail(struct frame_conn *c, enum frame_err err)
{
	if (c->c_failed)
		return;
	c->c_failed = 1;
	conn_event_del(c->c_rev);
	c->c_reading = 0;
	conn_event_del(c->c_wev);
	if (c->c_stallev != NULL)
		evtimer_del(c->c_stallev);
	if (c->c_retryev != NULL)
		evtimer_del(c->c_retryev);
	conn_fdq_close(c);
	c->c_errcb(c, err, c->c_arg);
}

static void
conn_destroy(struct frame_conn *c)
{
	struct frame_out	*fo;

	event_free(c->c_rev);
	event_free(c->c_wev);
	if (c->c_stallev != NULL)
		event_free(c->c_stallev);
	if (c->c_retryev != NULL)
		event_free(c->c_retryev);
	fd_close(c->c_fd);
	while ((fo = TAILQ_FIRST(&c->c_outq)) != NULL) {
		TAILQ_REMOVE(&c->c_outq, fo, fo_entry);
		fds_close(fo->fo_fds, fo->fo_nfds);
		free(fo);
	}
	conn_fdq_close(c);
	conn_rbuf_free(c);
	free(c);
}

/* Hand one complete frame that ends at stream offset end to the owner. */
static int
conn_deliver_one(struct frame_conn *c, const uint8_t *p, uint32_t json_len,
    uint32_t data_len, uint64_t end)
{
	struct frame	 f;
	int		 i;

	memset(&f, 0, sizeof(f));
	f.f_json = p + FRAME_HDR_LEN;
	f.f_json_len = json_len;
	f.f_data = data_len > 0 ? f.f_json + json_len : NULL;
	f.f_data_len = data_len;
	for (i = 0; i < FRAME_MAXFDS; i++)
		f.f_fds[i] = -1;

	while (c->c_nfdq > 0 && c->c_fdq_off[0] < end) {
		if (f.f_nfds == FRAME_MAXFDS) {
			fds_close(f.f_fds, f.f_nfds);
			conn_fail(c, FRAME_TOO_MANY_FDS);
			return -1;
		}
		f.f_fds[f.f_nfds++] = c->c_fdq[0];
		c->c_nfdq--;
		memmove(c->c_fdq, c->c_fdq + 1, c->c_nfdq * sizeof(int));
		memmove(c->c_fdq_off, c->c_fdq_off + 1,
		    c->c_nfdq * sizeof(uint64_t));
	}

	c->c_delivered++;
	c->c_cb(c, &f, c->c_arg);
	fds_close(f.f_fds, f.f_nfds);
	return 0;
}

/*
 * Deliver the complete frames at the front of the read buffer and keep the
 * rest.  Returns 0 when reading may go on, -1 when the conn failed, was
 * freed or was paused.
 */
static int
conn_deliver(struct frame_conn *c)
{
	enum frame_err	 err;
	uint32_t	 jl, dl;
	size_t		 p = 0, total;
	int		 rc = 0;
	uint8_t		*b;

	if (c->c_rbuf == NULL)		/* nothing read yet, or let go */
		return 0;
	b = c->c_rbuf + c->c_rstart;
	while (c->c_rlen - p >= FRAME_HDR_LEN) {
		err = frame_header_parse(b + p, &c->c_in, &jl, &dl);
		if (err != FRAME_OK) {
			conn_fail(c, err);
			return -1;
		}
		total = FRAME_HDR_LEN + (size_t)jl + dl;
		if (c->c_rlen - p < total)
			break;
		if (conn_deliver_one(c, b + p, jl, dl,
		    c->c_roff + p + total) == -1)
			return -1;
		p += total;
		if (c->c_freed || c->c_failed)
			return -1;
		if (!c->c_reading) {
			rc = -1;
			break;
		}
	}
	c->c_rstart += p;
	c->c_rlen -= p;
	c->c_roff += p;
	if (c->c_rlen == 0)
		c->c_rstart = 0;
	return rc;
}

/*
 * Make room for more of the current frame (or its header).  The buffer
 * grows with what arrived, at most doubling, never at once to the length
 * the header declares: a peer that sends a header of 100 MiB and nothing
 * more costs the base size.  Returns -1 when memory or the budget refuses.
 */
static int
conn_rbuf_reserve(struct frame_conn *c)
{
	uint32_t	 jl, dl;
	size_t		 want = FRAME_HDR_LEN, grown;
	uint8_t		*p;

	/* Frames delivered before are the receiver's no longer. */
	if (c->c_rlen == 0 && c->c_rcap > c->c_rbase) {
		/* Give back what a large frame needed. */
		conn_rbuf_free(c);
	}
	/* The header was checked by conn_deliver() already. */
	if (c->c_rlen >= FRAME_HDR_LEN &&
	    frame_header_parse(c->c_rbuf + c->c_rstart, &c->c_in, &jl, &dl) ==
	    FRAME_OK) {
		want = FRAME_HDR_LEN + (size_t)jl + dl;
		grown = 2 * c->c_rlen;
		if (want > grown)
			want = grown;
	}
	if (want < c->c_rbase)
		want = c->c_rbase;
	/* The current frame moves to the front when what follows it has
	 * less room than the rest of it, or than half the buffer. */
	if (c->c_rstart > 0 && (c->c_rcap - c->c_rstart < want ||
	    c->c_rcap - c->c_rstart - c->c_rlen < c->c_rbase / 2)) {
		memmove(c->c_rbuf, c->c_rbuf + c->c_rstart, c->c_rlen);
		c->c_rstart = 0;
	}
	if (c->c_rcap >= want)
		return 0;
	if (c->c_budget != NULL && want - c->c_rcap >
	    c->c_budget->fb_max - c->c_budget->fb_used) {
		log_warnx("%s: %zu bytes more would pass the budget of %zu "
		    "(%zu in use)", __func__, want - c->c_rcap,
		    c->c_budget->fb_max, c->c_budget->fb_used);
		return -1;
	}
	if ((p = realloc(c->c_rbuf, want)) == NULL) {
		log_warn("%s: realloc", __func__);
		return -1;
	}
	if (c->c_budget != NULL) {
		c->c_budget->fb_used += want - c->c_rcap;
		if (c->c_budget->fb_used > c->c_budget->fb_peak)
			c->c_budget->fb_peak = c->c_budget->fb_used;
	}
	c->c_rbuf = p;
	c->c_rcap = want;
	return 0;
}

static void
conn_read(struct frame_conn *c)
{
	union frame_cmsg cbuf;
	struct msghdr	 msg;
	struct iovec	 iov;
	enum frame_err	 err;
	ssize_t		 n;
	int		 fds[FRAME_MAXFDS], nfds = 0, i;

	if (c->c_failed || !c->c_reading)
		return;
	/* Frames left in the buffer by a pause come first. */
	if (conn_deliver(c) == -1)
		return;
	/* What is queued now waits for the frame still being read. */
	if (c->c_nfdq > FRAME_MAXFDS) {
		conn_fail(c, FRAME_TOO_MANY_FDS);
		return;
	}
	if (conn_rbuf_reserve(c) == -1) {
		conn_fail(c, FRAME_OUT_OF_MEMORY);
		return;
	}

	for (;;) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = c->c_rbuf + c->c_rstart + c->c_rlen;
		iov.iov_len = c->c_rcap - c->c_rstart - c->c_rlen;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = sizeof(cbuf.buf);
		n = recvmsg(c->c_fd, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n == -1 && errno == EINTR)
			continue;
		break;
	}
	if (n == -1) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return;
		log_warn("%s: recvmsg", __func__);
		conn_fail(c, FRAME_IO);
		return;
	}

	err = cmsg_take_fds(&msg, fds, &nfds, FRAME_MAXFDS);
	if (err == FRAME_OK && c->c_nfdq + nfds > FRAME_FDQ)
		err = FRAME_TOO_MANY_FDS;
	if (err != FRAME_OK) {
		fds_close(fds, nfds);
		conn_fail(c, err);
		return;
	}
	if (n == 0) {
		fds_close(fds, nfds);
		conn_fail(c, c->c_rlen == 0 ? FRAME_EOF : FRAME_TRUNCATED);
		return;
	}

	c->c_rlen += n;
	for (i = 0; i < nfds; i++) {
		c->c_fdq[c->c_nfdq] = fds[i];
		c->c_fdq_off[c->c_nfdq] = c->c_roff + c->c_rlen - 1;
		c->c_nfdq++;
	}
	if (conn_deliver(c) == -1)
		return;
	if (c->c_nfdq > FRAME_MAXFDS)
		conn_fail(c, FRAME_TOO_MANY_FDS);
}

/* Account for n bytes written: finished frames are freed with their fds. */
static void
conn_sent(struct frame_conn *c, size_t n)
{
	struct frame_out	*fo;
	size_t			 left;

	c->c_pending -= n;
	while (n > 0 && (fo = TAILQ_FIRST(&c->c_outq)) != NULL) {
		left = fo->fo_len - fo->fo_off;
		if (n < left) {
			fo->fo_off += n;
			break;
		}
		n -= left;
		TAILQ_REMOVE(&c->c_outq, fo, fo_entry);
		fds_close(fo->fo_fds, fo->fo_nfds);
		free(fo);
	}
	if (c->c_oq_full)
		conn_outq_check(c, 1);
}

static void
conn_retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct frame_conn	*c = arg;

	c->c_toomany = 0;
	if (c->c_failed || c->c_freed || TAILQ_EMPTY(&c->c_outq))
		return;
	if (event_add(c->c_wev, NULL) == -1) {
		log_warnx("%s: event_add failed", __func__);
		c->c_werr = FRAME_IO;
		event_active(c->c_wev, EV_WRITE, 1);
	}
}

/* ETOOMANYREFS: the frame stays first in the queue, tried again soon. */
static int
conn_toomany(struct frame_conn *c)
{
	struct timeval	 tv = { 0, FRAME_REFS_RETRY_MS * 1000 };

	if (!c->c_toomany)
		log_debug("%s: descriptors in flight past the limit: "
		    "sending again in %d ms", __func__, FRAME_REFS_RETRY_MS);
	c->c_toomany = 1;
	conn_event_del(c->c_wev);
	if ((c->c_retryev == NULL && (c->c_retryev = evtimer_new(c->c_base,
	    conn_retry_cb, c)) == NULL) || evtimer_add(c->c_retryev, &tv) ==
	    -1) {
		log_warnx("%s: evtimer", __func__);
		return -1;
	}
	return 0;
}

/* Write until the queue is empty or the socket is full; -1 on failure. */
static int
conn_write(struct frame_conn *c)
{
	union frame_cmsg	 cbuf;
	struct iovec		 iov[FRAME_WIOV];
	struct msghdr		 msg;
	struct frame_out	*fo, *next;
	ssize_t			 n;
	int			 niov;

	while ((fo = TAILQ_FIRST(&c->c_outq)) != NULL) {
		memset(&msg, 0, sizeof(msg));
		niov = 0;
		iov[niov].iov_base = fo->fo_buf + fo->fo_off;
		iov[niov++].iov_len = fo->fo_len - fo->fo_off;
		if (fo->fo_off == 0 && fo->fo_nfds > 0) {
			/* Alone in its sendmsg(), so the reader can tell
			 * which frame the descriptors belong to. */
			cmsg_put_fds(&msg, &cbuf, fo->fo_fds, fo->fo_nfds);
		} else {
			for (next = TAILQ_NEXT(fo, fo_entry); next != NULL &&
			    niov < FRAME_WIOV && next->fo_nfds == 0;
			    next = TAILQ_NEXT(next, fo_entry)) {
				iov[niov].iov_base = next->fo_buf;
				iov[niov++].iov_len = next->fo_len;
			}
		}
		msg.msg_iov = iov;
		msg.msg_iovlen = niov;
		n = sendmsg(c->c_fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return 0;
			if (errno == ETOOMANYREFS && fo->fo_nfds > 0)
				return conn_toomany(c);
			log_warn("%s: sendmsg", __func__);
			return -1;
		}
		conn_sent(c, n);
	}
	return 0;
}

static void
conn_check_drain(struct frame_conn *c)
{
	if (c->c_draincb == NULL || !c->c_drain_armed ||
	    c->c_pending >= c->c_lowat)
		return;
	c->c_drain_armed = 0;
	c->c_draincb(c, c->c_arg);
}

static void
conn_shrink_now(struct frame_conn *c)
{
	c->c_shrink = 0;
	if (c->c_rlen > 0 || c->c_rbuf == NULL)
		return;
	conn_rbuf_free(c);
	c->c_rstart = 0;
}

static void
conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct frame_conn	*c = arg;

	c->c_busy++;
	c->c_delivered = 0;
	conn_read(c);
	if (c->c_delivered > 0 && c->c_batchcb != NULL && !c->c_failed &&
	    !c->c_freed)
		c->c_batchcb(c, c->c_arg);
	/* The frames of this read are no longer anybody's. */
	if (c->c_shrink && !c->c_freed)
		conn_shrink_now(c);
	if (--c->c_busy == 0 && c->c_freed)
		conn_destroy(c);
}

static void
conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct frame_conn	*c = arg;

	c->c_busy++;
	if (c->c_failed || c->c_freed)
		goto out;
	if (c->c_werr != FRAME_OK) {
		conn_fail(c, c->c_werr);
		goto out;
	}
	if (conn_write(c) == -1) {
		conn_fail(c, FRAME_IO);
		goto out;
	}
	if (TAILQ_EMPTY(&c->c_outq) || c->c_toomany)
		conn_event_del(c->c_wev);
	conn_check_drain(c);
 out:
	if (--c->c_busy == 0 && c->c_freed)
		conn_destroy(c);
}

struct frame_conn *
frame_conn_new(struct event_base *base, int fd, const struct frame_limits *in,
    const struct frame_limits *out, frame_cb cb, frame_err_cb errcb, void *arg)
{
	struct frame_conn	*c;
	uint64_t		 most;

	if (fd_prepare(fd) == -1) {
		fd_close(fd);
		return NULL;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		log_warn("%s: calloc", __func__);
		fd_close(fd);
		return NULL;
	}
	c->c_base = base;
	c->c_fd = fd;
	c->c_in = *in;
	c->c_out = *out;
	c->c_cb = cb;
	c->c_errcb = errcb;
	c->c_arg = arg;
	TAILQ_INIT(&c->c_outq);
	most = (uint64_t)FRAME_HDR_LEN + in->fl_json_max + in->fl_data_max;
	c->c_rbase = most < FRAME_RBUF ? (size_t)most : FRAME_RBUF;

	c->c_rev = event_new(base, fd, EV_READ | EV_PERSIST, conn_read_cb, c);
	c->c_wev = event_new(base, fd, EV_WRITE | EV_PERSIST, conn_write_cb,
	    c);
	if (c->c_rev == NULL || c->c_wev == NULL) {
		log_warnx("%s: event_new failed", __func__);
		goto fail;
	}
	if (event_add(c->c_rev, NULL) == -1) {
		log_warnx("%s: event_add failed", __func__);
		goto fail;
	}
	c->c_reading = 1;
	return c;
 fail:
	if (c->c_rev != NULL)
		event_free(c->c_rev);
	if (c->c_wev != NULL)
		event_free(c->c_wev);
	fd_close(fd);
	free(c);
	return NULL;
}

void
frame_conn_free(struct frame_conn *c)
{
	if (c == NULL)
		return;
	if (c->c_busy > 0) {
		/* The handler that called us frees it on its way out. */
		c->c_freed = 1;
		conn_event_del(c->c_rev);
		c->c_reading = 0;
		conn_event_del(c->c_wev);
		if (c->c_stallev != NULL)
			evtimer_del(c->c_stallev);
		if (c->c_retryev != NULL)
			evtimer_del(c->c_retryev);
		return;
	}
	conn_destroy(c);
}

int
frame_conn_fd(const struct frame_conn *c)
{
	return c->c_fd;
}

/*
 * After frames were queued (or written): a failure is reported from the
 * loop, so that a sender never sees its err callback run inside the send;
 * what the socket did not take waits for it to be writable.
 */
static enum frame_err
conn_queued(struct frame_conn *c)
{
	if (c->c_werr != FRAME_OK)
		event_active(c->c_wev, EV_WRITE, 1);
	else if (!TAILQ_EMPTY(&c->c_outq) && !c->c_toomany &&
	    event_add(c->c_wev, NULL) == -1) {
		log_warnx("%s: event_add failed", __func__);
		c->c_werr = FRAME_IO;
		event_active(c->c_wev, EV_WRITE, 1);
	}
	if (c->c_draincb != NULL && c->c_lowat > 0 &&
	    c->c_pending >= c->c_lowat)
		c->c_drain_armed = 1;
	if (!c->c_oq_full)
		conn_outq_check(c, 0);
	return FRAME_OK;
}

enum frame_err
frame_conn_send(struct frame_conn *c, const void *json, size_t json_len,
    const void *data, size_t data_len, const int *fds, int nfds)
{
	struct frame_out	*fo;
	enum frame_err		 err = FRAME_OK;
	int			 was_empty, i;

	if (nfds < 0 || nfds > FRAME_MAXFDS)
		err = FRAME_TOO_MANY_FDS;
	else if (c->c_failed || c->c_freed)
		err = FRAME_IO;
	else if (json_len < 2)
		err = FRAME_EMPTY_JSON;
	else if (json_len > c->c_out.fl_json_max ||
	    data_len > c->c_out.fl_data_max)
		err = FRAME_SEND_TOO_LONG;
	if (err != FRAME_OK) {
		for (i = 0; i < nfds; i++)
			fd_close(fds[i]);
		return err;
	}
	if (nfds == 0) {
		struct frame_part	 fp = { json, json_len, data, data_len };

		return frame_conn_sendv(c, &fp, 1);
	}

	/* Both lengths fit in 32 bits, so the sum cannot overflow. */
	fo = malloc(sizeof(*fo) + FRAME_HDR_LEN + json_len + data_len);
	if (fo == NULL) {
		log_warn("%s: malloc", __func__);
		for (i = 0; i < nfds; i++)
			fd_close(fds[i]);
		return FRAME_OUT_OF_MEMORY;
	}
	fo->fo_len = FRAME_HDR_LEN + json_len + data_len;
	fo->fo_off = 0;
	fo->fo_nfds = nfds;
	for (i = 0; i < FRAME_MAXFDS; i++)
		fo->fo_fds[i] = i < nfds ? fds[i] : -1;
	frame_header_write(fo->fo_buf, json_len, data_len);
	memcpy(fo->fo_buf + FRAME_HDR_LEN, json, json_len);
	if (data_len > 0)
		memcpy(fo->fo_buf + FRAME_HDR_LEN + json_len, data, data_len);

	was_empty = TAILQ_EMPTY(&c->c_outq);
	TAILQ_INSERT_TAIL(&c->c_outq, fo, fo_entry);
	c->c_pending += fo->fo_len;

	/*
	 * On an idle socket write at once; a failure is reported from the
	 * loop so the caller never sees its err callback run inside this.
	 */
	if (was_empty && c->c_werr == FRAME_OK && conn_write(c) == -1)
		c->c_werr = FRAME_IO;
	return conn_queued(c);
}

/* Bytes [from, from + n) of a frame seen as header, JSON and data in a
 * row, into dst. */
static void
part_copy(uint8_t *dst, const uint8_t hdr[FRAME_HDR_LEN],
    const struct frame_part *fp, size_t from, size_t n)
{
	const uint8_t	*seg[3] = { hdr, fp->fp_json, fp->fp_data };
	size_t		 len[3] = { FRAME_HDR_LEN, fp->fp_json_len,
	    fp->fp_data_len };
	size_t		 i, k;

	for (i = 0; i < 3 && n > 0; i++) {
		if (from >= len[i]) {
			from -= len[i];
			continue;
		}
		k = len[i] - from < n ? len[i] - from : n;
		memcpy(dst, seg[i] + from, k);
		dst += k;
		n -= k;
		from = 0;
	}
}

enum frame_err
frame_conn_sendv(struct frame_conn *c, const struct frame_part *fp, int n)
{
	uint8_t			 hdr[FRAME_SENDV_MAX][FRAME_HDR_LEN];
	struct iovec		 iov[3 * FRAME_SENDV_MAX];
	struct frame_out	*fo[FRAME_SENDV_MAX];
	struct msghdr		 msg;
	size_t			 sent = 0, sent0, total, left;
	ssize_t			 w;
	int			 i, niov = 0;

	if (n < 1 || n > FRAME_SENDV_MAX)
		return FRAME_SEND_TOO_LONG;
	if (c->c_failed || c->c_freed)
		return FRAME_IO;
	for (i = 0; i < n; i++) {
		if (fp[i].fp_json_len < 2)
			return FRAME_EMPTY_JSON;
		if (fp[i].fp_json_len > c->c_out.fl_json_max ||
		    fp[i].fp_data_len > c->c_out.fl_data_max)
			return FRAME_SEND_TOO_LONG;
		frame_header_write(hdr[i], fp[i].fp_json_len,
		    fp[i].fp_data_len);
		iov[niov].iov_base = hdr[i];
		iov[niov++].iov_len = FRAME_HDR_LEN;
		iov[niov].iov_base = (void *)fp[i].fp_json;
		iov[niov++].iov_len = fp[i].fp_json_len;
		if (fp[i].fp_data_len > 0) {
			iov[niov].iov_base = (void *)fp[i].fp_data;
			iov[niov++].iov_len = fp[i].fp_data_len;
		}
	}
	/* On an idle socket: at once, and straight from the caller's
	 * buffers; a failure is reported from the loop. */
	if (TAILQ_EMPTY(&c->c_outq) && c->c_werr == FRAME_OK) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov;
		msg.msg_iovlen = niov;
		do
			w = sendmsg(c->c_fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
		while (w == -1 && errno == EINTR);
		if (w >= 0)
			sent = (size_t)w;
		else if (errno != EAGAIN && errno != EWOULDBLOCK) {
			log_warn("%s: sendmsg", __func__);
			c->c_werr = FRAME_IO;
		}
	}
	/* What is left is copied. */
	sent0 = sent;
	memset(fo, 0, sizeof(fo));
	for (i = 0; i < n; i++) {
		total = FRAME_HDR_LEN + fp[i].fp_json_len + fp[i].fp_data_len;
		if (sent >= total) {
			sent -= total;
			continue;
		}
		left = total - sent;
		if ((fo[i] = malloc(sizeof(*fo[i]) + left)) == NULL) {
			log_warn("%s: malloc", __func__);
			while (--i >= 0)
				free(fo[i]);
			/* The peer may have some of these frames: the edge
			 * is broken. */
			if (sent0 > 0)
				c->c_werr = FRAME_IO;
			if (c->c_werr != FRAME_OK)
				event_active(c->c_wev, EV_WRITE, 1);
			return FRAME_OUT_OF_MEMORY;
		}
		fo[i]->fo_len = left;
		fo[i]->fo_off = 0;
		fo[i]->fo_nfds = 0;
		memset(fo[i]->fo_fds, -1, sizeof(fo[i]->fo_fds));
		part_copy(fo[i]->fo_buf, hdr[i], &fp[i], sent, left);
		sent = 0;
	}
	for (i = 0; i < n; i++)
		if (fo[i] != NULL) {
			TAILQ_INSERT_TAIL(&c->c_outq, fo[i], fo_entry);
			c->c_pending += fo[i]->fo_len;
		}
	return conn_queued(c);
}

void
frame_conn_set_read_size(struct frame_conn *c, size_t n)
{
	uint64_t	 most;

	most = (uint64_t)FRAME_HDR_LEN + c->c_in.fl_json_max +
	    c->c_in.fl_data_max;
	c->c_rbase = n < most ? n : (size_t)most;
}

void
frame_conn_shrink(struct frame_conn *c)
{
	c->c_shrink = 1;
	if (c->c_busy == 0)
		conn_shrink_now(c);
}

void
frame_conn_set_batch_cb(struct frame_conn *c,
    void (*cb)(struct frame_conn *, void *))
{
	c->c_batchcb = cb;
}

size_t
frame_conn_pending(const struct frame_conn *c)
{
	return c->c_pending;
}

void
frame_conn_set_drain_cb(struct frame_conn *c,
    void (*cb)(struct frame_conn *, void *), size_t lowat)
{
	c->c_draincb = cb;
	c->c_lowat = lowat;
	c->c_drain_armed = cb != NULL && lowat > 0 && c->c_pending >= lowat;
}

void
frame_conn_pause(struct frame_conn *c, int paused)
{
	if (c->c_failed || c->c_freed)
		return;
	c->c_paused = paused != 0;
	conn_read_update(c);
}

static void
conn_stall_cb(evutil_socket_t fd, short what, void *arg)
{
	struct frame_conn	*c = arg;

	if (c->c_failed || c->c_freed || !c->c_oq_full)
		return;
	log_warnx("peer took nothing of %zu queued bytes for %u ms",
	    c->c_pending, c->c_oq_stall_ms);
	c->c_busy++;
	c->c_stallcb(c, c->c_arg);
	if (--c->c_busy == 0 && c->c_freed)
		conn_destroy(c);
}

void
frame_conn_set_outq_cap(struct frame_conn *c, size_t cap, unsigned stall_ms,
    void (*stalled)(struct frame_conn *, void *))
{
	if (c->c_stallev == NULL && (c->c_stallev = evtimer_new(c->c_base,
	    conn_stall_cb, c)) == NULL) {
		log_warnx("%s: evtimer_new failed", __func__);
		return;
	}
	c->c_oq_cap = cap;
	c->c_oq_stall_ms = stall_ms;
	c->c_stallcb = stalled;
	conn_outq_check(c, 0);
}

int
frame_conn_outq_full(const struct frame_conn *c)
{
	return c->c_oq_full;
}

void
frame_conn_set_budget(struct frame_conn *c, struct frame_budget *b)
{
	if (c->c_budget != NULL)
		c->c_budget->fb_used -= c->c_rcap;
	c->c_budget = b;
	if (b != NULL) {
		b->fb_used += c->c_rcap;
		if (b->fb_used > b->fb_peak)
			b->fb_peak = b->fb_used;
	}
}

/* Skip n written bytes in an iovec array. */
static void
iov_advance(struct iovec **iov, int *niov, size_t n)
{
	while (n > 0 && *niov > 0) {
		if (n < (*iov)->iov_len) {
			(*iov)->iov_base = (uint8_t *)(*iov)->iov_base + n;
			(*iov)->iov_len -= n;
			return;
		}
		n -= (*iov)->iov_len;
		(*iov)++;
		(*niov)--;
	}
}

enum frame_err
frame_send_blocking(int fd, const void *json, size_t json_len,
    const void *data, size_t data_len, const int *fds, int nfds)
{
	union frame_cmsg cbuf;
	struct msghdr	 msg;
	struct iovec	 iovs[3], *iov = iovs;
	uint8_t		 hdr[FRAME_HDR_LEN];
	ssize_t		 n;
	int		 niov = 0, fds_sent = 0;

	if (nfds < 0 || nfds > FRAME_MAXFDS)
		return FRAME_TOO_MANY_FDS;
	if (json_len < 2)
		return FRAME_EMPTY_JSON;
	if (json_len > UINT32_MAX || data_len > UINT32_MAX)
		return FRAME_SEND_TOO_LONG;
	frame_header_write(hdr, json_len, data_len);
	iovs[niov].iov_base = hdr;
	iovs[niov++].iov_len = sizeof(hdr);
	iovs[niov].iov_base = (void *)json;
	iovs[niov++].iov_len = json_len;
	if (data_len > 0) {
		iovs[niov].iov_base = (void *)data;
		iovs[niov++].iov_len = data_len;
	}

	while (niov > 0) {
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = iov;
		msg.msg_iovlen = niov;
		if (!fds_sent && nfds > 0)
			cmsg_put_fds(&msg, &cbuf, fds, nfds);
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			log_warn("%s: sendmsg", __func__);
			return FRAME_IO;
		}
		if (n > 0)
			fds_sent = 1;
		iov_advance(&iov, &niov, n);
	}
	return FRAME_OK;
}

/*
 * Read exactly len bytes into buf, adding any descriptors to f.  *got counts
 * the bytes read before an end of file.
 */
static enum frame_err
recv_exact(int fd, uint8_t *buf, size_t len, struct frame *f, size_t *got)
{
	union frame_cmsg cbuf;
	struct msghdr	 msg;
	struct iovec	 iov;
	enum frame_err	 err;
	ssize_t		 n;

	*got = 0;
	while (*got < len) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = buf + *got;
		iov.iov_len = len - *got;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = sizeof(cbuf.buf);
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			log_warn("%s: recvmsg", __func__);
			return FRAME_IO;
		}
		err = cmsg_take_fds(&msg, f->f_fds, &f->f_nfds, FRAME_MAXFDS);
		if (err != FRAME_OK)
			return err;
		if (n == 0)
			return FRAME_TRUNCATED;
		*got += n;
	}
	return FRAME_OK;
}

enum frame_err
frame_recv_blocking(int fd, const struct frame_limits *lim, struct frame *out,
    uint8_t **json, uint8_t **data)
{
	uint8_t		 hdr[FRAME_HDR_LEN];
	enum frame_err	 err;
	uint32_t	 jl, dl;
	size_t		 got;
	int		 i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < FRAME_MAXFDS; i++)
		out->f_fds[i] = -1;
	*json = NULL;
	*data = NULL;

	if ((err = recv_exact(fd, hdr, sizeof(hdr), out, &got)) != FRAME_OK) {
		if (err == FRAME_TRUNCATED && got == 0)
			err = FRAME_EOF;
		goto fail;
	}
	if ((err = frame_header_parse(hdr, lim, &jl, &dl)) != FRAME_OK)
		goto fail;
	if ((*json = malloc((size_t)jl + 1)) == NULL ||
	    (dl > 0 && (*data = malloc(dl)) == NULL)) {
		log_warn("%s: malloc", __func__);
		err = FRAME_OUT_OF_MEMORY;
		goto fail;
	}
	if ((err = recv_exact(fd, *json, jl, out, &got)) != FRAME_OK)
		goto fail;
	(*json)[jl] = '\0';
	if (dl > 0 && (err = recv_exact(fd, *data, dl, out, &got)) != FRAME_OK)
		goto fail;

	out->f_json = *json;
	out->f_json_len = jl;
	out->f_data = *data;
	out->f_data_len = dl;
	return FRAME_OK;
 fail:
	fds_close(out->f_fds, out->f_nfds);
	out->f_nfds = 0;
	free(*json);
	free(*data);
	*json = NULL;
	*data = NULL;
	return err;
}
