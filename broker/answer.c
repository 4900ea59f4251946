/*
 * What every route of the broker answers with, and what it tells the
 * supervisor.
 */
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "brokerpriv.h"
#include "log.h"
#include "role.h"

void
respond_text(struct http_conn *c, int status, const char *text)
{
	if (http_respond_text(c, status, text) == -1)
		http_conn_kill(c);
}

void
respond_json(struct http_conn *c, int status, const char *json, size_t len)
{
	if (http_respond(c, status, "application/json", json, len) == -1)
		http_conn_kill(c);
}

/* Every request that reached the router has one (broker_on_head). */
struct conn_state *
conn_state(struct http_conn *c)
{
	return http_conn_get_data(c);
}

/*
 * A message to the supervisor on behalf of a request: -1 when it could not
 * be queued (out of memory), which that request answers.  A pipe that
 * failed ends the broker from the loop (role.c).
 */
int
sup_send(struct broker *br, struct msgb *mb)
{
	enum msg_type	 t = mb->mb_type;

	/* What it says comes after the calls made before it. */
	sup_tell(-1, 0, br);
	if (msg_send(role_parent_conn(br->br_parent), mb) == -1) {
		log_warnx("cannot queue %s for the supervisor",
		    msg_type_name(t));
		return -1;
	}
	return 0;
}

static void
sup_event_init(struct msgb *mb, const char *kind, const char *route,
    int status, const char *turn_id)
{
	msgb_init(mb, MSG_BRK_EVENT, 0);
	msg_add_str(mb, "kind", kind);
	msg_add_str(mb, "route", route);
	msg_add_uint(mb, "status", status);
	if (turn_id != NULL)
		msg_add_str(mb, "turn_id", turn_id);
}

/* turn_id: the bound turn a call was made in, which the supervisor holds
 * the call to; NULL for the startup window and the worker's routes. */
void
sup_event(struct broker *br, const char *kind, const char *route, int status,
    const char *turn_id)
{
	struct msgb	 mb;

	sup_event_init(&mb, kind, route, status, turn_id);
	(void)sup_send(br, &mb);
}

/* Two turn ids, either NULL for no turn. */
static int
same_turn(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/*
 * The model and MCP calls sent to egress are told to the supervisor a batch
 * at a time: one brk_event with their count ("calls", when more than one),
 * BROKER_TELL_MS after the first of the batch, before anything else the
 * broker says to the supervisor, or when a call of another kind, route or
 * turn comes.  With a message of its own at once, each small call woke the
 * supervisor just as egress was to take the call on, on the core the
 * broker had woken egress on, and waited about 20 us more for it.  The
 * supervisor holds the count to the turn's budget, as egress does, and
 * tells the client of each call.
 */
void
sup_call(struct broker *br, const char *kind, const char *route,
    const char *turn_id)
{
	struct timeval	 tv = { 0, BROKER_TELL_MS * 1000 };

	if (br->br_untold > 0 && (strcmp(br->br_untold_kind, kind) != 0 ||
	    strcmp(br->br_untold_route, route) != 0 ||
	    !same_turn(br->br_untold_turn, turn_id)))
		sup_tell(-1, 0, br);
	if (br->br_untold == 0) {
		if ((br->br_untold_route = strdup(route)) == NULL ||
		    (turn_id != NULL &&
		    (br->br_untold_turn = strdup(turn_id)) == NULL)) {
			/* Short of memory: told at once, as it can be. */
			free(br->br_untold_route);
			br->br_untold_route = NULL;
			sup_event(br, kind, route, 0, turn_id);
			return;
		}
		br->br_untold_kind = kind;
		if (evtimer_add(br->br_tell, &tv) == -1)
			log_warnx("%s: evtimer_add", __func__);
	}
	if (++br->br_untold == MAX_CALLS_MAX)
		sup_tell(-1, 0, br);
}

static void
sup_untold_clear(struct broker *br)
{
	evtimer_del(br->br_tell);
	br->br_untold = 0;
	br->br_untold_kind = NULL;
	free(br->br_untold_route);
	free(br->br_untold_turn);
	br->br_untold_route = br->br_untold_turn = NULL;
}

/* The batch goes to the supervisor now (the timer's callback too). */
void
sup_tell(evutil_socket_t fd, short ev, void *arg)
{
	struct broker	*br = arg;
	struct msgb	 mb;

	if (br->br_untold == 0)
		return;
	sup_event_init(&mb, br->br_untold_kind, br->br_untold_route, 0,
	    br->br_untold_turn);
	if (br->br_untold > 1)
		msg_add_uint(&mb, "calls", br->br_untold);
	/* cleared first: sup_send() tells what is untold */
	sup_untold_clear(br);
	(void)sup_send(br, &mb);
}

/*
 * A turn unbound: its calls not yet told are of a turn the supervisor has
 * settled, which it would refuse to count.  Dropped.
 */
void
sup_untold_drop(struct broker *br, const char *turn_id)
{
	if (br->br_untold > 0 && br->br_untold_turn != NULL &&
	    strcmp(br->br_untold_turn, turn_id) == 0)
		sup_untold_clear(br);
}

/* A worker's body that could not be read: 400 with invalid, 503 short of
 * memory; anything else closed the conn already. */
void
respond_body_err(struct http_conn *c, enum http_body_err e,
    const char *invalid)
{
	if (e == HTTP_BODY_TOO_LARGE || e == HTTP_BODY_INVALID)
		respond_text(c, 400, invalid);
	else if (e == HTTP_BODY_NOMEM)
		respond_text(c, 503, BROKER_BUSY);
}
