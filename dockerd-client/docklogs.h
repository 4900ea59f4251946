/*
 * A container's last log lines, as the Engine API's
 * GET /containers/<name>/logs?stdout=1&stderr=1&tail=N answers (Docker and
 * Podman alike): for a container without a TTY, as rtsandbox's are, a
 * multiplexed stream of frames, each one byte naming the stream (0 stdin,
 * 1 stdout, 2 stderr), three zero bytes, a 32-bit big-endian length and
 * that many bytes; text that does not begin as a frame is taken as it is
 * (a TTY's).  The lines are for the host's log: each is escaped
 * (journal_escape()) and cut, and only the last ones are kept, so that a
 * worker cannot write into the operator's log anything but text of its own
 * on lines of its own.
 */
#ifndef RTSANDBOX_DOCKLOGS_H
#define RTSANDBOX_DOCKLOGS_H

#include <stddef.h>
#include <stdint.h>

/* Lines asked for and kept: a timed-out worker's last words. */
#define DOCK_LOGS_LINES_MAX	200u
/* One line after escaping, in bytes; a longer one is cut, "..." after. */
#define DOCK_LOG_LINE_MAX	512u
/* Answer read at most; the rest is not waited for. */
#define DOCK_LOGS_BYTES_MAX	(256u * 1024)
/* The engine's time for it: a failed turn's answer waits this long at most. */
#define DOCK_LOGS_TIMEOUT_MS	2000

struct dock_log_lines {
	char	 dl_line[DOCK_LOGS_LINES_MAX][DOCK_LOG_LINE_MAX + 4];
	size_t	 dl_n;
	int	 dl_framed;	/* a multiplexed stream */
	int	 dl_cut;	/* a frame broke off or broke the format */
};

/*
 * The last max_lines lines (1 to DOCK_LOGS_LINES_MAX) of an answer's body.
 * A frame header that breaks the format after the first frame ends the
 * stream there (dl_cut); a last frame shorter than it says is taken as far
 * as it goes (dl_cut).  Lines end with LF; a CR before it is dropped; a
 * last line without LF counts.  Returns 0, or -1 for max_lines out of
 * range.
 */
int	dock_logs_parse(const uint8_t *buf, size_t len, size_t max_lines,
	    struct dock_log_lines *);

#endif
