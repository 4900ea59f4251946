/*
 * Back-pressure on request bodies.  Without it a broker held at once every
 * body its worker sent (four calls of 96 MiB and a result of 72 MiB), each
 * frame it queued for egress, and the rebuild of one: over 1.3 GiB.  One
 * body at a time at the protocol's maxima costs the worker a few seconds of
 * waiting and saves the host most of that (limits.h, BROKER_DATA_MAX).
 */
#include <sys/queue.h>

#include <stdint.h>
#include <stdlib.h>

#include <event2/event.h>

#include "hold.h"
#include "log.h"

struct hold_req {
	TAILQ_ENTRY(hold_req)	 hr_entry;
	struct http_conn	*hr_conn;
	size_t			 hr_reserve;
	int			 hr_reading;	/* let in, else waiting */
};

struct hold {
	struct event		*h_kick;
	size_t			 h_budget;
	size_t			 h_held;
	size_t			 h_nwait;
	hold_pending_fn		 h_pending;
	void			*h_arg;
	TAILQ_HEAD(, hold_req)	 h_reqs;	/* in arrival order */
};

int
hold_fits(size_t held, size_t pending, size_t reserve, size_t budget)
{
	if (held == 0 && pending == 0)
		return 1;	/* a body as large as the budget, alone */
	if (held > budget || pending > budget - held)
		return 0;
	return reserve <= budget - held - pending;
}

static void
hold_run(evutil_socket_t fd, short ev, void *arg)
{
	struct hold		*h = arg;
	struct hold_req		*hr;
	struct http_conn	*c;

	/* The first that waits, then the next: none overtakes another. */
	for (;;) {
		TAILQ_FOREACH(hr, &h->h_reqs, hr_entry)
			if (!hr->hr_reading)
				break;
		if (hr == NULL || !hold_fits(h->h_held, h->h_pending(h->h_arg),
		    hr->hr_reserve, h->h_budget))
			return;
		hr->hr_reading = 1;
		h->h_held += hr->hr_reserve;
		h->h_nwait--;
		c = hr->hr_conn;
		log_debug("%s: a body of up to %zu bytes let in, %zu held",
		    __func__, hr->hr_reserve, h->h_held);
		/* Its callbacks may run, and hold_done() free hr, inside. */
		http_conn_release_body(c);
	}
}

struct hold *
hold_new(struct event_base *base, size_t budget, hold_pending_fn pending,
    void *arg)
{
	struct hold	*h;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	if ((h->h_kick = event_new(base, -1, 0, hold_run, h)) == NULL) {
		free(h);
		return NULL;
	}
	h->h_budget = budget;
	h->h_pending = pending;
	h->h_arg = arg;
	TAILQ_INIT(&h->h_reqs);
	return h;
}

void
hold_free(struct hold *h)
{
	struct hold_req	*hr;

	if (h == NULL)
		return;
	while ((hr = TAILQ_FIRST(&h->h_reqs)) != NULL) {
		TAILQ_REMOVE(&h->h_reqs, hr, hr_entry);
		free(hr);
	}
	event_free(h->h_kick);
	free(h);
}

int
hold_read_body(struct hold *h, struct http_conn *c, size_t max,
    http_body_cb cb, http_body_err_cb ecb)
{
	const struct http_head	*hd = http_conn_head(c);
	struct hold_req		*hr;

	if (http_read_body(c, max, cb, ecb) == -1)
		return -1;
	if ((hr = calloc(1, sizeof(*hr))) == NULL) {
		/* Read now: memory is short, and the body likely fails. */
		log_warnx("%s: out of memory", __func__);
		return 0;
	}
	hr->hr_conn = c;
	/* What reading it allocates at most. */
	hr->hr_reserve = max;
	if (hd != NULL && hd->h_framing == HTTP_BODY_LENGTH &&
	    hd->h_content_length < max)
		hr->hr_reserve = hd->h_content_length;
	if (h->h_nwait == 0 && hold_fits(h->h_held, h->h_pending(h->h_arg),
	    hr->hr_reserve, h->h_budget)) {
		hr->hr_reading = 1;
		h->h_held += hr->hr_reserve;
	} else {
		http_conn_hold_body(c);
		h->h_nwait++;
		log_debug("%s: a body of up to %zu bytes waits, %zu held, %zu "
		    "bytes of frames queued", __func__, hr->hr_reserve,
		    h->h_held, h->h_pending(h->h_arg));
	}
	TAILQ_INSERT_TAIL(&h->h_reqs, hr, hr_entry);
	return 0;
}

void
hold_done(struct hold *h, struct http_conn *c)
{
	struct hold_req	*hr;

	TAILQ_FOREACH(hr, &h->h_reqs, hr_entry)
		if (hr->hr_conn == c)
			break;
	if (hr == NULL)
		return;
	TAILQ_REMOVE(&h->h_reqs, hr, hr_entry);
	if (hr->hr_reading)
		h->h_held -= hr->hr_reserve;
	else
		h->h_nwait--;
	free(hr);
	hold_kick(h);
}

void
hold_kick(struct hold *h)
{
	if (h->h_nwait > 0)
		event_active(h->h_kick, EV_TIMEOUT, 1);
}

size_t
hold_held(const struct hold *h)
{
	return h->h_held;
}

size_t
hold_waiting(const struct hold *h)
{
	return h->h_nwait;
}
