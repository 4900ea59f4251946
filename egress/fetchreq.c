/*
 * The controlled fetch (fetch.c) as research jobs and the supervisor ask
 * for it: options checked, fetches of one job bounded, the answer with its
 * body sent back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_int.h"
#include "log.h"
#include "role.h"

/*
 * The controlled fetch (PROTOCOL.md 8) for a research job or the
 * supervisor (ep NULL).  Options out of range are answered as a failed
 * fetch naming the option.
 */

void
egress_fetch_free(struct egress_fetch *ef)
{
	if (ef->ef_peer != NULL) {
		TAILQ_REMOVE(&ef->ef_peer->ep_fetches, ef, ef_entry);
		ef->ef_peer->ep_nfetches--;
	} else
		TAILQ_REMOVE(&ef->ef_egress->eg_fetches, ef, ef_entry);
	free(ef);
}

static void
egress_fetch_send(struct egress *eg, struct egress_peer *ep,
    struct msgb *mb)
{
	if (ep != NULL)
		egress_send(ep, mb);
	else
		role_send(eg->eg_rp, mb);
}

static void
egress_fetch_refuse(struct egress *eg, struct egress_peer *ep, uint64_t id,
    const char *why)
{
	struct msgb	 mb;

	log_warnx("%s fetch refused: %s", ep ? ep->ep_name : "supervisor",
	    why);
	msgb_init(&mb, MSG_EGR_FETCHED, id);
	msg_add_bool(&mb, "ok", 0);
	msg_add_str(&mb, "error", why);
	egress_fetch_send(eg, ep, &mb);
}

/* A failure's kind, for the supervisor's fetch.get (the words of
 * PiSandboxRuntime 0.7.3's safeFetch errors). */
static const char *
egress_fetch_kind(enum fetch_err e)
{
	switch (e) {
	case FETCH_BAD_URL:
	case FETCH_NOT_PUBLIC:
	case FETCH_NO_ADDRESS:
	case FETCH_BAD_REDIRECT:
		return "unsafe";
	case FETCH_TOO_LARGE:
		return "too_large";
	case FETCH_DEADLINE:
		return "timeout";
	default:
		return "failed";
	}
}

/* The host log gets the host, status, size and time, never the body. */
static void
egress_fetch_done(const struct fetch_result *fr, void *arg)
{
	struct egress_fetch	*ef = arg;
	const char		*who;
	struct msgb		 mb;

	who = ef->ef_peer != NULL ? ef->ef_peer->ep_name : "supervisor";
	msgb_init(&mb, MSG_EGR_FETCHED, ef->ef_id);
	msg_add_bool(&mb, "ok", fr->fr_ok);
	if (fr->fr_ok) {
		log_info("%s fetch %s: %ld, %zu bytes, %ld ms", who,
		    fr->fr_host, fr->fr_status, fr->fr_body_len, fr->fr_ms);
		/* none when only checked */
		if (fr->fr_status > 0)
			msg_add_uint(&mb, "status", fr->fr_status);
		msg_add_str(&mb, "url", fr->fr_url);
		if (fr->fr_content_type != NULL)
			msg_add_str(&mb, "content_type", fr->fr_content_type);
		if (fr->fr_location != NULL)
			msg_add_str(&mb, "location", fr->fr_location);
		if (fr->fr_body_len > 0)
			msg_add_data(&mb, fr->fr_body, fr->fr_body_len);
	} else {
		log_warnx("%s fetch %s: failed after %ld ms: %s", who,
		    fr->fr_host, fr->fr_ms, fr->fr_error);
		msg_add_str(&mb, "error", fr->fr_error);
		if (ef->ef_peer == NULL)
			msg_add_str(&mb, "kind", egress_fetch_kind(fr->fr_err));
	}
	egress_fetch_send(ef->ef_egress, ef->ef_peer, &mb);
	egress_fetch_free(ef);
}

static struct egress_fetch *
egress_fetch_find(struct egress_peer *ep, uint64_t id)
{
	struct egress_fetch	*ef;

	TAILQ_FOREACH(ef, &ep->ep_fetches, ef_entry)
		if (ef->ef_id == id)
			return ef;
	return NULL;
}

int
egress_fetch(struct egress *eg, struct egress_peer *ep, struct msg *m)
{
	struct egress_fetch	*ef;
	struct fetch_opts	 fo;
	const char		*url, *why;
	uint64_t		 deadline, max_bytes, max_redirects;
	char			 busy[64];
	int			 check = 0;

	if (msg_get_str(m, "url", URL_BYTES_MAX, &url) == -1 ||
	    msg_get_uint(m, "deadline_ms", 0, EGRESS_UINT_MAX, &deadline) ==
	    -1 ||
	    msg_get_uint(m, "max_bytes", 0, EGRESS_UINT_MAX, &max_bytes) ==
	    -1 ||
	    msg_get_uint(m, "max_redirects", 0, EGRESS_UINT_MAX,
	    &max_redirects) == -1 ||
	    /* only the supervisor checks without fetching */
	    (ep == NULL && egress_get_bool_opt(m, "check", &check) == -1) ||
	    msg_end(m) == -1)
		return -1;
	if (ep != NULL && egress_fetch_find(ep, m->m_id) != NULL)
		return -1;
	/* Each fetch a job asks for counts, refused or not: one more than
	 * every step can run is a job taken over (DESIGN.md 1, invariant 7). */
	if (ep != NULL && ++ep->ep_fetches_asked > RESEARCH_TOOL_CALLS_MAX) {
		egress_violation(ep, VIOLATION_BUDGET, "more fetches than a "
		    "research job makes");
		egress_fetch_refuse(eg, ep, m->m_id, "too many fetches");
		return 0;
	}
	fetch_opts_default(&fo, url);
	fo.fo_check = check;
	fo.fo_deadline_ms = deadline;
	fo.fo_max_bytes = max_bytes;
	fo.fo_max_redirects = max_redirects;
	if ((why = fetch_opts_check(&fo)) != NULL) {
		egress_fetch_refuse(eg, ep, m->m_id, why);
		return 0;
	}
	if (ep != NULL && ep->ep_nfetches >= EGRESS_PEER_FETCHES_MAX) {
		snprintf(busy, sizeof(busy), "too many fetches at once (%u)",
		    EGRESS_PEER_FETCHES_MAX);
		egress_fetch_refuse(eg, ep, m->m_id, busy);
		return 0;
	}
	if ((ef = calloc(1, sizeof(*ef))) == NULL) {
		log_warn("%s", __func__);
		egress_fetch_refuse(eg, ep, m->m_id, "egress is out of memory");
		return 0;
	}
	ef->ef_egress = eg;
	ef->ef_peer = ep;
	ef->ef_id = m->m_id;
	if (ep != NULL) {
		TAILQ_INSERT_TAIL(&ep->ep_fetches, ef, ef_entry);
		ep->ep_nfetches++;
	} else
		TAILQ_INSERT_TAIL(&eg->eg_fetches, ef, ef_entry);
	/* Answers from the event loop, never from in here. */
	ef->ef_fetch = fetch_start(&eg->eg_fetch_env, &fo, egress_fetch_done,
	    ef);
	return 0;
}
