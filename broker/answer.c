/*
 * What every route of the broker answers with, and what it tells the
 * supervisor.
 */
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

	if (msg_send(role_parent_conn(br->br_parent), mb) == -1) {
		log_warnx("cannot queue %s for the supervisor",
		    msg_type_name(t));
		return -1;
	}
	return 0;
}

/* turn_id: the bound turn a call was made in, which the supervisor holds
 * the call to; NULL for the startup window and the worker's routes. */
void
sup_event(struct broker *br, const char *kind, const char *route, int status,
    const char *turn_id)
{
	struct msgb	 mb;

	msgb_init(&mb, MSG_BRK_EVENT, 0);
	msg_add_str(&mb, "kind", kind);
	msg_add_str(&mb, "route", route);
	msg_add_uint(&mb, "status", status);
	if (turn_id != NULL)
		msg_add_str(&mb, "turn_id", turn_id);
	(void)sup_send(br, &mb);
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
