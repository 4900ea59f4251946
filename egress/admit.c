/*
 * Egress's admission of a peer's call (DESIGN.md 1, invariant 6): what the
 * peer's policy allows, checked on egress's own before any credential is
 * read, whatever the broker already checked.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <string.h>

#include "egress_int.h"
#include "limits.h"
#include "policy.h"
#include "proc.h"


static unsigned
egress_inflight(const struct egress_peer *ep, unsigned scope)
{
	const struct egress_call	*ec;
	unsigned			 n = 0;

	TAILQ_FOREACH(ec, &ep->ep_calls, ec_entry)
		if (ec->ec_scope == scope)
			n++;
	return n;
}

/* The startup window's bucket, refilled for the time since last asked. */
static int
egress_window_take(struct egress_peer *ep)
{
	uint64_t	 now = proc_now_ms();

	ep->ep_window_tokens += (double)(now - ep->ep_window_at) *
	    EGRESS_WINDOW_PER_MS;
	if (ep->ep_window_tokens > EGRESS_WINDOW_BURST)
		ep->ep_window_tokens = EGRESS_WINDOW_BURST;
	ep->ep_window_at = now;
	if (ep->ep_window_tokens < 1)
		return -1;
	ep->ep_window_tokens -= 1;
	return 0;
}


/*
 * A precheck run's broker has one route, held to the run's grant and
 * budget with one call in flight (precheck.h); the body that goes is the
 * one egress writes.
 */
static enum violation
egress_admit_precheck(struct egress_peer *ep, const char *kind,
    const char *path, const char *query, const char *server,
    const char *turn_id, const char *body, size_t len,
    struct egress_admit *ea, char *why, size_t whylen)
{
	struct precheck_policy	 pp;
	struct precheck_call	 pc;
	enum violation		 v;

	pp.pp_grants = ep->ep_grants;
	pp.pp_ngrants = ep->ep_ngrants;
	pp.pp_calls_left = ep->ep_calls_left;
	pp.pp_inflight = ep->ep_ncalls;
	if ((v = precheck_admit(&pp, kind, path, query, server, turn_id, body,
	    len, &pc, why, whylen)) != VIOLATION_NONE)
		return v;
	ea->ea_mcp = 1;
	ea->ea_server = egress_profile_mcp(ep->ep_profile, server);
	ea->ea_scope = 1;
	ea->ea_level = POLICY_LEVEL_NONE;
	ea->ea_calls_left = &ep->ep_calls_left;
	ea->ea_call.pc_method = "tools/call";
	ea->ea_call.pc_tool = pc.pc_grant != NULL ? pc.pc_grant->pg_tool :
	    NULL;
	ea->ea_body = pc.pc_body;	/* NULL: out of memory */
	ea->ea_body_len = pc.pc_body_len;
	return VIOLATION_NONE;
}

/*
 * The scope of a call: the peer's bound turn (turn_id names it), the
 * startup window (MCP metadata only, no turn_id), or a research job's own.
 * Returns VIOLATION_NONE, or the rule; *ended is set for a call of a turn
 * that ended or ran out of time, which a broker can send while the unbind
 * is on its way: refused, but no violation.
 */
static enum violation
egress_scope(struct egress_peer *ep, const char *turn_id,
    struct egress_admit *ea, int *ended, char *why, size_t whylen)
{
	*ended = 0;
	if (ep->ep_role == PROC_RESEARCH) {
		ea->ea_scope = 1;
		ea->ea_level = ep->ep_level;
		ea->ea_model = ep->ep_model;
		ea->ea_calls_left = &ep->ep_calls_left;
		return VIOLATION_NONE;
	}
	ea->ea_model = ep->ep_profile->epr_model;
	if (turn_id == NULL) {
		if (!ea->ea_mcp) {
			snprintf(why, whylen, "a model call outside a turn");
			return VIOLATION_NO_TURN;
		}
		ea->ea_scope = 0;
		ea->ea_level = POLICY_LEVEL_NONE;
		ea->ea_calls_left = NULL;
		return VIOLATION_NONE;
	}
	if (ep->ep_turn_id != NULL && strcmp(turn_id, ep->ep_turn_id) == 0) {
		if (proc_now_ms() >= ep->ep_turn_deadline) {
			*ended = 1;
			return VIOLATION_NONE;
		}
		ea->ea_scope = ep->ep_turn_gen;
		ea->ea_level = ep->ep_turn_level;
		ea->ea_calls_left = &ep->ep_turn_calls_left;
		return VIOLATION_NONE;
	}
	if (ep->ep_ended_turn_id != NULL &&
	    strcmp(turn_id, ep->ep_ended_turn_id) == 0) {
		*ended = 1;
		return VIOLATION_NONE;
	}
	snprintf(why, whylen, "a call for a turn that is not bound");
	return VIOLATION_NO_TURN;
}

/*
 * Every rule of the peer's policy, before any credential is read: kind and
 * path, scope, budget, calls in flight, and the body itself.
 */
enum violation
egress_admit(struct egress_peer *ep, const char *kind, const char *path,
    const char *query, const char *server, const char *turn_id,
    const char *body, size_t len, struct egress_admit *ea, int *ended,
    char *why, size_t whylen)
{
	struct policy_model	 pm;
	struct policy_mcp	 pc;
	enum violation		 v;

	memset(ea, 0, sizeof(*ea));
	*ended = 0;
	if (ep->ep_precheck)
		return egress_admit_precheck(ep, kind, path, query, server,
		    turn_id, body, len, ea, why, whylen);
	ea->ea_mcp = strcmp(kind, "mcp") == 0;
	if (!ea->ea_mcp && strcmp(kind, "model") != 0) {
		snprintf(why, whylen, "a call of kind %s", kind);
		return VIOLATION_KIND;
	}
	/* A research job has the model and nothing else. */
	if (ea->ea_mcp && ep->ep_role != PROC_BROKER) {
		snprintf(why, whylen, "an MCP call from a research job");
		return VIOLATION_KIND;
	}
	if (ea->ea_mcp) {
		if (server == NULL || (ea->ea_server = egress_profile_mcp(
		    ep->ep_profile, server)) == NULL) {
			snprintf(why, whylen, "MCP server %s is not in the "
			    "profile", server != NULL ? server : "(none)");
			return VIOLATION_MCP_SERVER;
		}
	} else if ((strcmp(path, "/v1/messages") != 0 &&
	    strcmp(path, "/v1/messages/count_tokens") != 0) ||
	    (query != NULL && strcmp(query, "beta=true") != 0) ||
	    server != NULL) {
		snprintf(why, whylen, "a model call to a path or query of no "
		    "model route");
		return VIOLATION_KIND;
	}
	if ((v = egress_scope(ep, turn_id, ea, ended, why, whylen)) !=
	    VIOLATION_NONE || *ended)
		return v;
	if (ea->ea_calls_left != NULL && *ea->ea_calls_left == 0) {
		snprintf(why, whylen, "more calls than the budget");
		return VIOLATION_BUDGET;
	}
	if (ea->ea_calls_left != NULL &&
	    egress_inflight(ep, ea->ea_scope) >= SCOPE_INFLIGHT_MAX) {
		snprintf(why, whylen, "more than %u calls in flight",
		    SCOPE_INFLIGHT_MAX);
		return VIOLATION_IN_FLIGHT;
	}
	if (ea->ea_mcp) {
		pc.pm_tools = (const char *const *)ea->ea_server->em_tools;
		pc.pm_ntools = ea->ea_server->em_ntools;
		pc.pm_metadata_only = ea->ea_calls_left == NULL;
		if ((v = policy_mcp_check_call(body, len, &pc, &ea->ea_call,
		    why, whylen)) != VIOLATION_NONE)
			return v;
	} else {
		pm.pm_model = ea->ea_model;
		pm.pm_max_tokens = ep->ep_max_output_tokens;
		pm.pm_level = ea->ea_level;
		pm.pm_count_tokens = strcmp(path,
		    "/v1/messages/count_tokens") == 0;
		if ((v = policy_model_check(body, len, &pm, why, whylen)) !=
		    VIOLATION_NONE)
			return v;
	}
	/* The window's bucket is spent last: a refused call costs none. */
	if (ea->ea_calls_left == NULL && egress_window_take(ep) == -1) {
		snprintf(why, whylen, "more MCP metadata calls outside a turn "
		    "than startup windows admit");
		return VIOLATION_BUDGET;
	}
	return VIOLATION_NONE;
}

