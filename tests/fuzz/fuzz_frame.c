/*
 * The frame reader against arbitrary bytes: the header check alone, then
 * the real frame_conn reading from a socketpair that the input is written
 * into in pieces (some carrying a descriptor), with callbacks that take
 * descriptors, pause, answer and free the conn; then frame_recv_blocking()
 * over the same bytes.
 *
 * Input: byte 0 picks the piece size and limits, byte 1 the callbacks'
 * behaviour, byte 2 where descriptors go; the rest is the stream.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "frame.h"

#define FUZZ_MAX	65536

struct fuzz_rx {
	struct frame_conn	*conn;
	uint8_t			 mode;
	int			 nframes;
	int			 nerr;
	int			 done;
	uint32_t		 sum;
	size_t			 answered;	/* bytes the conn was given */
	size_t			 swallowed;	/* and the peer read */
	const struct frame_limits *lim;
};

static struct event_base	*base;
static int			 devnull = -1;

static void
fuzz_frame_cb(struct frame_conn *c, struct frame *f, void *arg)
{
	struct fuzz_rx	*rx = arg;
	uint32_t	 i;
	int		 k;

	if (rx->nerr != 0 || f->f_json_len < 2 ||
	    f->f_json_len > rx->lim->fl_json_max ||
	    f->f_data_len > rx->lim->fl_data_max ||
	    f->f_nfds < 0 || f->f_nfds > FRAME_MAXFDS)
		abort();
	/* Touch every byte so the sanitizer sees any bad pointer. */
	for (i = 0; i < f->f_json_len; i++)
		rx->sum += f->f_json[i];
	for (i = 0; i < f->f_data_len; i++)
		rx->sum += f->f_data[i];
	for (k = 0; k < FRAME_MAXFDS; k++) {
		if ((k < f->f_nfds) != (f->f_fds[k] != -1))
			abort();
		if (f->f_fds[k] != -1 && (rx->mode & 1)) {
			close(f->f_fds[k]);
			f->f_fds[k] = -1;
		}
	}
	rx->nframes++;
	if ((rx->mode & 2) && frame_conn_send(c, f->f_json, f->f_json_len,
	    f->f_data, f->f_data_len, NULL, 0) == FRAME_OK)
		rx->answered += FRAME_HDR_LEN + f->f_json_len + f->f_data_len;
	if ((rx->mode & 4) && rx->nframes % 3 == 1)
		frame_conn_pause(c, 1);
	if ((rx->mode >> 4) != 0 && rx->nframes == (rx->mode >> 4)) {
		frame_conn_free(c);
		rx->conn = NULL;
		rx->done = 1;
	}
}

static void
fuzz_err_cb(struct frame_conn *c, enum frame_err err, void *arg)
{
	struct fuzz_rx	*rx = arg;

	if (rx->nerr++ != 0 || err == FRAME_OK)
		abort();
	rx->done = 1;
	if (rx->mode & 8) {
		frame_conn_free(c);
		rx->conn = NULL;
	}
}

/* Let the reader run; a paused reader is resumed so input keeps flowing. */
static void
fuzz_run(struct fuzz_rx *rx, int peer)
{
	uint8_t	 sink[4096];
	ssize_t	 r;
	int	 i;

	for (i = 0; i < 3; i++) {
		if (rx->conn != NULL && !rx->done)
			frame_conn_pause(rx->conn, 0);
		event_base_loop(base, EVLOOP_NONBLOCK);
		/* Swallow the answers, once there are any: a recv(2) that
		 * finds nothing was most of the harness's system calls. */
		while (rx->swallowed < rx->answered &&
		    (r = recv(peer, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
			rx->swallowed += (size_t)r;
	}
}

static void
fuzz_send(int fd, const uint8_t *p, size_t len, int with_fd)
{
	union {
		struct cmsghdr	 hdr;
		uint8_t		 buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct msghdr	 msg;
	struct cmsghdr	*cm;
	struct iovec	 iov;

	memset(&msg, 0, sizeof(msg));
	iov.iov_base = (void *)p;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (with_fd) {
		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = sizeof(cbuf.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &devnull, sizeof(int));
	}
	/* A piece the socket has no room for is dropped: that only makes
	 * another stream. */
	(void)sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

static int
lowest_free_fd(void)
{
	int	 fd;

	if ((fd = dup(devnull)) == -1)
		abort();
	close(fd);
	return fd;
}

static void
fuzz_conn(const uint8_t *p, size_t len, uint8_t ctl, uint8_t mode,
    uint8_t fdsel, const struct frame_limits *lim)
{
	struct fuzz_rx	 rx;
	size_t		 off, chunk, n;
	int		 sv[2], i, k = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		abort();
	memset(&rx, 0, sizeof(rx));
	rx.mode = mode;
	rx.lim = lim;
	rx.conn = frame_conn_new(base, sv[1], lim, lim, fuzz_frame_cb,
	    fuzz_err_cb, &rx);
	if (rx.conn == NULL)
		abort();

	chunk = 1 + (ctl & 0x1f) * (ctl & 0x20 ? 61 : 1);
	for (off = 0; off < len && !rx.done; off += n, k++) {
		n = len - off < chunk ? len - off : chunk;
		fuzz_send(sv[0], p + off, n, (fdsel & 0x80) &&
		    (k * 7 + fdsel) % 5 == 0);
		fuzz_run(&rx, sv[0]);
	}
	shutdown(sv[0], SHUT_WR);
	for (i = 0; i < 64 && !rx.done; i++)
		fuzz_run(&rx, sv[0]);
	if (!rx.done)
		abort();
	if (rx.conn != NULL)
		frame_conn_free(rx.conn);
	close(sv[0]);
}

static void
fuzz_blocking(const uint8_t *p, size_t len, const struct frame_limits *lim)
{
	struct frame	 f;
	uint8_t		*json, *data;
	int		 sv[2], i;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		abort();
	if (len > 0 && send(sv[0], p, len, MSG_NOSIGNAL) != (ssize_t)len)
		abort();
	close(sv[0]);
	while (frame_recv_blocking(sv[1], lim, &f, &json, &data) == FRAME_OK) {
		if (f.f_json_len < 2 || json[f.f_json_len] != '\0')
			abort();
		for (i = 0; i < f.f_nfds; i++)
			close(f.f_fds[i]);
		free(json);
		free(data);
	}
	close(sv[1]);
}

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct frame_limits lims[4] = {
		{ 2, 0 }, { 64, 16 }, { 1024, 4096 }, { 65536, 65536 },
	};
	const struct frame_limits *lim;
	uint32_t	 jl, dl;
	int		 before;

	if (base == NULL) {
		signal(SIGPIPE, SIG_IGN);
		if ((base = event_base_new()) == NULL ||
		    (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
			abort();
	}
	if (size < 3 || size > FUZZ_MAX)
		return 0;
	lim = &lims[(data[0] >> 6) & 3];
	if (size >= 3 + FRAME_HDR_LEN &&
	    frame_header_parse(data + 3, lim, &jl, &dl) == FRAME_OK &&
	    (jl < 2 || jl > lim->fl_json_max || dl > lim->fl_data_max))
		abort();

	before = lowest_free_fd();
	fuzz_conn(data + 3, size - 3, data[0], data[1], data[2], lim);
	fuzz_blocking(data + 3, size - 3, lim);
	/* A descriptor left open would hold the lowest free number. */
	if (lowest_free_fd() != before)
		abort();
	return 0;
}
