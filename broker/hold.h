/*
 * The request bodies a broker holds at once (DESIGN.md 1, invariant 7):
 * back-pressure, not refusal.  A body is read when what is held (the
 * bodies being read, each counted at its Content-Length or, chunked, at
 * its route's maximum, and the frames still queued to egress and the
 * supervisor) leaves room for it, or when nothing is held; else it waits
 * unread, in arrival order, and the worker's writes stop.
 */
#ifndef RTSANDBOX_BROKER_HOLD_H
#define RTSANDBOX_BROKER_HOLD_H

#include <stddef.h>

#include "http.h"

struct event_base;
struct hold;

/* Bytes queued in frames and not yet written, from the caller. */
typedef size_t	(*hold_pending_fn)(void *);

/* Whether a body of reserve bytes may be read now: a pure rule. */
int		 hold_fits(size_t held, size_t pending, size_t reserve,
		    size_t budget);

struct hold	*hold_new(struct event_base *, size_t budget,
		    hold_pending_fn, void *arg);
void		 hold_free(struct hold *);
/*
 * http_read_body() for a conn inside on_head, now or once there is room;
 * -1 when http_read_body() refuses.  The router calls hold_done() from both
 * body callbacks and from on_close.
 */
int		 hold_read_body(struct hold *, struct http_conn *, size_t max,
		    http_body_cb, http_body_err_cb);
/* The conn's body was read and used, failed, or the conn closed: what it
 * held goes (the next body is let in from the loop, once the caller's
 * buffers are freed). */
void		 hold_done(struct hold *, struct http_conn *);
/* Something held elsewhere went (a frame queue drained): let in what
 * fits now. */
void		 hold_kick(struct hold *);
/* Bytes held by bodies being read, and bodies waiting, for the log and
 * the tests. */
size_t		 hold_held(const struct hold *);
size_t		 hold_waiting(const struct hold *);

#endif
