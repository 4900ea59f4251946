/*
 * Watches a server-sent event stream as it passes to the worker, for the
 * first "error" event: an upstream that began its answer with a 200 can
 * still fail in the middle of it, which the status never shows.  The
 * stream itself goes on unchanged; this only reads it.
 *
 * An event is an error when its "event:" field is "error", or when its data
 * is a JSON object whose first member is "type": "error" (Anthropic's
 * shape).  Lines end with CR LF, LF or CR, anywhere across chunks.  What is
 * kept of an event is bounded: its name up to 16 bytes, its data up to
 * SSE_DATA_MAX bytes (the rest is looked at only for the line's end).
 */
#ifndef RTSANDBOX_SSE_H
#define RTSANDBOX_SSE_H

#include <stddef.h>

/* Data kept of one event: enough to say what went wrong. */
#define SSE_DATA_MAX	2048u

struct sse_watch {
	int	 sw_state;
	int	 sw_after_cr;	/* a CR ended the last line */
	int	 sw_field;	/* of the line being read */
	char	 sw_name[8];	/* the field's name so far */
	size_t	 sw_namelen;
	size_t	 sw_linelen;	/* bytes of the line so far */
	char	 sw_event[17];
	size_t	 sw_eventlen;
	char	 sw_data[SSE_DATA_MAX];
	size_t	 sw_datalen;
	int	 sw_data_cut;	/* more data than kept */
	int	 sw_data_lines;
	int	 sw_found;
};

void	sse_watch_init(struct sse_watch *);
/*
 * The next bytes of the stream.  Returns 1 once the first error event is
 * complete (its data is then sw_data[0..sw_datalen), cut when sw_data_cut),
 * and 1 for every call after it without looking; 0 otherwise.
 */
int	sse_watch_feed(struct sse_watch *, const void *buf, size_t len);

#endif
