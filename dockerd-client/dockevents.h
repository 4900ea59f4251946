/*
 * Docker's event stream (GET /v1.41/events), followed without blocking so
 * that the supervisor learns at once when a channel's container stops, and
 * may trust a container it saw running between turns without asking Docker
 * again.  The stream and each event are parsed by pure functions, driven by
 * Check and libFuzzer as the daemon drives them: whatever the socket says is
 * bounded and re-checked, and a stream that breaks a rule is dropped and
 * asked for again.
 */
#ifndef RTSANDBOX_DOCKEVENTS_H
#define RTSANDBOX_DOCKEVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "dockops.h"

/* The status line and headers of the answer. */
#define DOCK_EVENTS_HEAD_MAX	8192u
/* One event, a line of JSON. */
#define DOCK_EVENT_LINE_MAX	65536u
/* Back-off between attempts to follow the stream, doubling. */
#define DOCK_EVENTS_RETRY_MIN_MS	250u
#define DOCK_EVENTS_RETRY_MAX_MS	5000u

enum dock_event_action {
	DOCK_EV_DIE,		/* the container's main process ended
				 * (Podman: "died") */
	DOCK_EV_DESTROY,	/* removed (Podman: "remove") */
	DOCK_EV_OOM,		/* the kernel's OOM killer struck in it */
	DOCK_EV_PAUSE,		/* frozen: its worker answers nothing */
};

/* The events of interest; the others are skipped. */
const char	*dock_event_action_name(enum dock_event_action);

struct dock_event {
	enum dock_event_action	 action;
	char			 id[72];	/* Actor.ID, lowercase hex */
	char			 name[64];	/* <prefix>-<segment> */
	int64_t			 exit_code;	/* die only; -1 unknown */
	int64_t			 time;		/* Unix seconds; 0 unknown */
};

/*
 * One line of the stream.  1 with ev filled when it is one of the four
 * actions (or Podman's words for them) of a container named "<prefix>-..." with a valid id; 0 when it is
 * well-formed news about something else; -1 when it is not an event at all.
 */
int	dock_event_parse(const char *line, size_t len, const char *prefix,
	    struct dock_event *ev);

/*
 * The answer to GET /events: a head that must say 200, then a body, chunked
 * or not, of newline-separated JSON.  dock_stream_feed() passes every
 * complete non-empty line to cb; it returns 0, or -1 with *why when the
 * stream broke a rule (a status other than 200, a head or line too long, a
 * malformed chunk, the end of the body): the caller then drops it.
 */
enum dock_stream_state {
	DOCK_STREAM_HEAD,
	DOCK_STREAM_SIZE,	/* a chunk's size line */
	DOCK_STREAM_DATA,
	DOCK_STREAM_DATA_END,	/* the CRLF after a chunk */
	DOCK_STREAM_RAW,	/* not chunked: the body runs to EOF */
	DOCK_STREAM_BROKEN
};

typedef void	(*dock_line_cb)(const char *line, size_t len, void *arg);

struct dock_stream {
	enum dock_stream_state	 ds_state;
	int			 ds_live;	/* the 200 head was read */
	char			 ds_head[DOCK_EVENTS_HEAD_MAX];
	size_t			 ds_head_len;
	char			 ds_size[24];	/* hex digits and extension */
	size_t			 ds_size_len;
	uint64_t		 ds_left;	/* of the current chunk */
	char			*ds_line;	/* DOCK_EVENT_LINE_MAX */
	size_t			 ds_line_len;
	int			 ds_skip;	/* the rest of a line too long */
	unsigned		 ds_crlf;	/* bytes of CRLF seen */
};

/* -1 when out of memory. */
int	dock_stream_init(struct dock_stream *);
void	dock_stream_free(struct dock_stream *);
int	dock_stream_feed(struct dock_stream *, const char *p, size_t n,
	    dock_line_cb cb, void *arg, const char **why);

/*
 * The path and query of the request, filtered to containers, from since
 * (Unix seconds; 0: from now on).  malloc'd.
 */
char	*dock_events_request(int64_t since);

struct event_base;
struct dock_watch;

enum dock_watch_news {
	DOCK_WATCH_LIVE,	/* following: no stop goes unsaid from now */
	DOCK_WATCH_LOST,	/* not following any more; retrying */
	DOCK_WATCH_EVENT
};

typedef void	(*dock_watch_cb)(enum dock_watch_news, const struct dock_event *,
		    void *arg);

/*
 * Follow the stream at the Unix socket path for containers named
 * "<prefix>-...", connecting again after DOCK_EVENTS_RETRY_MIN_MS doubling
 * to _MAX_MS; after a loss it asks again from a second before it.  LOST is
 * said once after each LIVE.  NULL when the path does not fit a sockaddr_un.
 */
struct dock_watch	*dock_watch_new(struct event_base *, const char *path,
			    const char *prefix, dock_watch_cb, void *arg);
void			 dock_watch_free(struct dock_watch *);

#endif
