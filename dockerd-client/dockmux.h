/*
 * The multiplexed stream of an attach without a terminal: frames of an
 * 8-byte header (stream 1 stdout or 2 stderr, three zero bytes, a
 * big-endian u32 size) and their bytes.  A pure parser over what the socket
 * gave, driven by Check and libFuzzer as the daemon drives it.
 */
#ifndef RTSANDBOX_DOCKMUX_H
#define RTSANDBOX_DOCKMUX_H

#include <stddef.h>
#include <stdint.h>

#include "limits.h"

enum dock_mux_rc {
	DOCK_MUX_MORE,		/* all taken; feed the next bytes */
	DOCK_MUX_STDOUT_OVER,	/* stdout went past PRECHECK_STDOUT_MAX */
	DOCK_MUX_STDERR_OVER,	/* stderr went past PRECHECK_STDERR_MAX */
	DOCK_MUX_BROKEN		/* a header that is not one */
};

struct dock_mux {
	uint8_t		 dm_hdr[8];
	size_t		 dm_hdr_len;
	uint32_t	 dm_left;	/* of the current frame */
	uint8_t		 dm_stream;	/* of the current frame */
	/* stdout kept, at most PRECHECK_STDOUT_MAX bytes */
	uint8_t		 dm_out[PRECHECK_STDOUT_MAX];
	size_t		 dm_out_len;
	int		 dm_out_over;
	/* stderr counted up to PRECHECK_STDERR_MAX + 1, its bytes dropped */
	uint64_t	 dm_err_bytes;
	int		 dm_err_over;
};

void		 dock_mux_init(struct dock_mux *);
/*
 * Takes n bytes.  Once it said anything but MORE it says the same again
 * and takes nothing more.
 */
enum dock_mux_rc dock_mux_feed(struct dock_mux *, const uint8_t *p, size_t n);
/* Whether the stream ended between frames (a cut frame is not). */
int		 dock_mux_whole(const struct dock_mux *);
const char	*dock_mux_rc_to_string(enum dock_mux_rc);

/* The head of the attach answer, at most this long. */
#define DOCK_ATTACH_HEAD_MAX	8192u

/*
 * The head of the answer to a hijacked attach in buf: 1 with *head_len its
 * length when complete and 101 Switching Protocols (or 200, from older
 * engines), 0 when not complete yet, -1 with *why when it is any other
 * answer or longer than DOCK_ATTACH_HEAD_MAX.  The stream follows it.
 */
int		 dock_attach_head(const char *buf, size_t len,
		    size_t *head_len, const char **why);

#endif
