/*
 * A broker's scopes (PROTOCOL.md 3.4): the bound turn, or the startup
 * window, each with its call budget and deadline.
 */
#include <stdlib.h>

#include "brokerpriv.h"
#include "limits.h"
#include "log.h"
#include "proc.h"

/* NULL when out of memory. */
struct scope *
scope_new(int turn, uint64_t calls, uint64_t deadline)
{
	struct scope	*sc;

	if ((sc = calloc(1, sizeof(*sc))) == NULL)
		return NULL;
	sc->sc_refs = 1;
	sc->sc_turn = turn;
	sc->sc_calls_left = calls;
	sc->sc_deadline = deadline;
	return sc;
}

void
scope_unref(struct scope *sc)
{
	if (sc == NULL || --sc->sc_refs > 0)
		return;
	free(sc->sc_turn_id);
	free(sc);
}

/* The current scope, or NULL when none is in force. */
struct scope *
scope_current(struct broker *br)
{
	struct scope	*sc = br->br_scope;

	if (sc == NULL || sc->sc_ended)
		return NULL;
	if (sc->sc_deadline != 0 && proc_now_ms() >= sc->sc_deadline)
		return NULL;
	return sc;
}

static int
window_used_up(const struct scope *sc)
{
	return sc->sc_ended || sc->sc_calls_left == 0 ||
	    (sc->sc_deadline != 0 && proc_now_ms() >= sc->sc_deadline);
}

/*
 * Re-arm the startup window (PROTOCOL.md 3.4): only with no turn bound,
 * when the window is absent, expired or used up, and more than 10 s after
 * it was last armed.
 */
void
window_rearm(struct broker *br)
{
	struct scope	*sc = br->br_scope;
	uint64_t	 now = proc_now_ms();

	if (sc != NULL && sc->sc_turn)
		return;
	if (sc != NULL && !window_used_up(sc))
		return;
	if (br->br_window_armed != 0 &&
	    now - br->br_window_armed <= STARTUP_REARM_MS)
		return;
	if ((sc = scope_new(0, STARTUP_CALLS, now + STARTUP_WINDOW_MS)) ==
	    NULL) {
		/* The worker asks again within a poll. */
		log_warnx("%s: out of memory", __func__);
		return;
	}
	scope_unref(br->br_scope);
	br->br_scope = sc;
	br->br_window_armed = now;
	log_debug("startup window armed");
}

