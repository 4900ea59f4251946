/*
 * The broker's listener: accepting within the connection limit of
 * PROTOCOL.md 3.5, resting when descriptors or memory run out or refusals
 * pile up, corking writes, and the connections whose reads are watched
 * later.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "http.h"
#include "httpint.h"
#include "limits.h"
#include "log.h"
#include "proc.h"

/* The connections whose time came are watched; the rest wait on. */
static void
http_watch_due(evutil_socket_t fd, short ev, void *arg)
{
	struct http_server	*srv = arg;
	struct http_conn	*c;

	while ((c = TAILQ_FIRST(&srv->s_later)) != NULL) {
		TAILQ_REMOVE(&srv->s_later, c, c_later_entry);
		c->c_watch_later = 0;
		conn_watch(c);
	}
}

int
http_watch_later(struct http_conn *c)
{
	struct http_server	*srv = c->c_srv;
	struct timeval		 tv;

	if (c->c_watch_later)
		return 0;
	/* One timer for all: a connection waits between one and two
	 * periods, which is all that is asked of it. */
	if (TAILQ_EMPTY(&srv->s_later) &&
	    evtimer_add(srv->s_later_ev, ms_to_tv(HTTP_WATCH_LATER_MS,
	    &tv)) == -1) {
		log_warnx("%s: evtimer_add", __func__);
		conn_watch(c);
		return 0;
	}
	TAILQ_INSERT_TAIL(&srv->s_later, c, c_later_entry);
	c->c_watch_later = 1;
	return 0;
}

void
http_watch_cancel(struct http_conn *c)
{
	struct http_server	*srv = c->c_srv;

	if (!c->c_watch_later)
		return;
	TAILQ_REMOVE(&srv->s_later, c, c_later_entry);
	c->c_watch_later = 0;
	if (TAILQ_EMPTY(&srv->s_later))
		evtimer_del(srv->s_later_ev);
}

/* Without its timer the listener keeps accepting rather than stop. */
static void
http_accept_pause(struct http_server *srv, int ms)
{
	struct timeval	 tv;

	if (srv->s_resting)
		return;
	if (evtimer_add(srv->s_pause, ms_to_tv(ms, &tv)) == -1) {
		log_warnx("%s: evtimer_add", __func__);
		return;
	}
	event_del(srv->s_ev);
	srv->s_resting = 1;
}

static void
http_accept_resume(evutil_socket_t fd, short ev, void *arg)
{
	struct http_server	*srv = arg;
	struct timeval		 tv;

	/* A rest lasts until the window is over: a new one begins. */
	srv->s_resting = 0;
	srv->s_refused = 0;
	if (event_add(srv->s_ev, NULL) == -1) {
		log_warnx("%s: event_add", __func__);
		if (evtimer_add(srv->s_pause, ms_to_tv(HTTP_ACCEPT_PAUSE_MS,
		    &tv)) == -1)
			log_warnx("%s: the listener stops: evtimer_add",
			    __func__);
		else
			srv->s_resting = 1;
	}
}

/*
 * A connection ended refused: answered 400 or more, closed unanswered, or
 * turned away at the connection limit; it counts n (HTTP_REFUSAL_BYTES).
 * Past hl_refusals within hl_refusal_ms, the listener rests until that
 * time is over, so that a peer that floods the broker with refused
 * requests is served at that pace (BROKER_REFUSALS_MAX).
 */
void
http_refused(struct http_server *srv, unsigned n)
{
	int64_t	 now, left;

	if (srv->s_lim.hl_refusals == 0)
		return;
	now = (int64_t)proc_now_ms();
	if (srv->s_refused == 0 ||
	    now - srv->s_refused_since >= srv->s_lim.hl_refusal_ms) {
		srv->s_refused_since = now;
		srv->s_refused = 0;
	}
	srv->s_refused = n > UINT_MAX - srv->s_refused ? UINT_MAX :
	    srv->s_refused + n;
	if (srv->s_refused < srv->s_lim.hl_refusals || srv->s_resting)
		return;
	left = srv->s_refused_since + srv->s_lim.hl_refusal_ms - now;
	if (left < 1)
		left = 1;
	srv->s_rests++;
	srv->s_rests_unlogged++;
	if (srv->s_rest_logged == 0 ||
	    now - srv->s_rest_logged >= HTTP_REST_LOG_MS) {
		log_warnx("%u refusals within %d ms: new connections "
		    "wait %lld ms (%u such rests since the last report)",
		    srv->s_refused, srv->s_lim.hl_refusal_ms, (long long)left,
		    srv->s_rests_unlogged);
		srv->s_rest_logged = now;
		srv->s_rests_unlogged = 0;
	}
	http_accept_pause(srv, (int)left);
}

static void
http_accept(evutil_socket_t fd, short ev, void *arg)
{
	struct http_server	*srv = arg;
	int			 i, s;

	for (i = 0; i < HTTP_ACCEPT_BURST && !srv->s_resting; i++) {
		if ((s = accept4(fd, NULL, NULL,
		    SOCK_NONBLOCK | SOCK_CLOEXEC)) == -1) {
			switch (errno) {
			case EINTR:
			case ECONNABORTED:
				continue;
			case EAGAIN:
				return;
			case EMFILE:
			case ENFILE:
			case ENOBUFS:
			case ENOMEM:
				log_warn("%s: accept4", __func__);
				http_accept_pause(srv, HTTP_ACCEPT_PAUSE_MS);
				return;
			default:
				log_warn("%s: accept4", __func__);
				return;
			}
		}
		/* PROTOCOL.md 3.5: "further ones are closed at once". */
		if (srv->s_nconn >= srv->s_lim.hl_conn_max) {
			log_debug("%s: %u connections, refused", __func__,
			    srv->s_nconn);
			if (close(s) == -1)
				log_warn("%s: close", __func__);
			http_refused(srv, 1);
			continue;
		}
		conn_new(srv, s);
	}
}

struct http_server *
http_server_new(struct event_base *base, int fd,
    const struct http_server_cbs *cbs, void *arg,
    const struct http_limits *lim)
{
	struct http_server	*srv;
	struct sigaction	 sa;
	int			 fl;

	if (cbs == NULL || cbs->on_head == NULL || (lim != NULL &&
	    (lim->hl_conn_max == 0 || lim->hl_head_ms <= 0 ||
	    lim->hl_silence_ms <= 0 || lim->hl_linger_ms <= 0 ||
	    (lim->hl_refusals > 0 && lim->hl_refusal_ms <= 0)))) {
		log_warnx("%s: invalid arguments", __func__);
		return NULL;
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    ((fl & O_NONBLOCK) == 0 &&
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)) {
		log_warn("%s: O_NONBLOCK", __func__);
		return NULL;
	}
	if (mallopt(M_MMAP_THRESHOLD, HTTP_MMAP_THRESHOLD) != 1 ||
	    mallopt(M_TRIM_THRESHOLD, HTTP_TRIM_THRESHOLD) != 1)
		log_warnx("%s: mallopt", __func__);
	/* Bufferevents write with writev(2): a client that left must give
	 * EPIPE, not a SIGPIPE that ends the broker. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPIPE, &sa, NULL) == -1) {
		log_warn("%s: sigaction", __func__);
		return NULL;
	}
	if ((srv = calloc(1, sizeof(*srv))) == NULL) {
		log_warn("%s: calloc", __func__);
		return NULL;
	}
	srv->s_base = base;
	srv->s_cbs = *cbs;
	srv->s_arg = arg;
	if (lim != NULL)
		srv->s_lim = *lim;
	else
		http_limits_default(&srv->s_lim);
	TAILQ_INIT(&srv->s_conns);
	TAILQ_INIT(&srv->s_dirty);
	TAILQ_INIT(&srv->s_later);
	if ((srv->s_ev = event_new(base, fd, EV_READ | EV_PERSIST,
	    http_accept, srv)) == NULL ||
	    (srv->s_pause = evtimer_new(base, http_accept_resume, srv)) ==
	    NULL ||
	    (srv->s_later_ev = evtimer_new(base, http_watch_due, srv)) ==
	    NULL || event_add(srv->s_ev, NULL) == -1) {
		log_warnx("%s: event_new", __func__);
		if (srv->s_ev != NULL)
			event_free(srv->s_ev);
		if (srv->s_pause != NULL)
			event_free(srv->s_pause);
		if (srv->s_later_ev != NULL)
			event_free(srv->s_later_ev);
		free(srv);
		return NULL;
	}
	return srv;
}

void
http_server_free(struct http_server *srv)
{
	struct http_conn	*c;

	if (srv == NULL)
		return;
	while ((c = TAILQ_FIRST(&srv->s_conns)) != NULL)
		conn_free(c, 0);
	event_free(srv->s_ev);
	event_free(srv->s_pause);
	event_free(srv->s_later_ev);
	free(srv->s_spare);
	free(srv);
}

void
http_server_shrink(struct http_server *srv)
{
	free(srv->s_spare);
	srv->s_spare = NULL;
}

unsigned
http_server_nconn(const struct http_server *srv)
{
	return srv->s_nconn;
}

unsigned
http_server_rests(const struct http_server *srv)
{
	return srv->s_rests;
}

void
http_server_cork(struct http_server *srv)
{
	srv->s_corked = 1;
}

void
http_server_uncork(struct http_server *srv)
{
	struct http_conn	*c;

	srv->s_corked = 0;
	while ((c = TAILQ_FIRST(&srv->s_dirty)) != NULL) {
		TAILQ_REMOVE(&srv->s_dirty, c, c_dirty_entry);
		c->c_dirty = 0;
		conn_flush(c);
	}
}
