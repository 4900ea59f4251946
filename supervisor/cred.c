/*
 * Credentials from the client (configuration: upstream.credential or
 * mcp.credential "hook"): egress asks, for one call of a broker or research
 * job, and the supervisor asks the credential.get hook of the client that
 * asked for that channel's turn (or job), naming the channel, profile and
 * speaker; with no turn (a broker's startup window), the client that
 * declared the hook and was initialized last.  The token goes to egress
 * for that call alone: it is never logged, kept or sent anywhere else.
 * A hook that fails, answers no usable token or does not answer within
 * CRED_HOOK_MS fails that call with a 502; the turn goes on.  A call of a
 * turn that is no longer the channel's by the time egress asks (it may
 * end, and another begin, while the question is on its way) gets no
 * token: the hook would name the next turn's speaker.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "control.h"
#include "limits.h"
#include "log.h"
#include "supervisor.h"
#include "validate.h"

/* The most a token may take: egress's own bound (cred.h). */
#define CRED_TOKEN_MAX		16383u

struct cred_req {
	uint64_t		 cq_egress;	/* which egress asked */
	uint64_t		 cq_id;		/* egress's request */
	uint64_t		 cq_peer;
	struct ctl_call		*cq_call;
	struct event		*cq_timer;
	char			 cq_who[64];	/* for the log */
};

static void
cred_answer(struct cred_req *cq, const char *token)
{
	struct child	*eg = child_singleton(PROC_EGRESS);
	struct msgb	 mb;

	if (cq->cq_call != NULL)
		ctl_call_withdraw(cq->cq_call);
	event_free(cq->cq_timer);
	/* An egress that restarted meanwhile asked nothing of this. */
	if (eg != NULL && eg->c_restarts == cq->cq_egress &&
	    eg->c_state == CHILD_READY) {
		msgb_init(&mb, MSG_EGR_CRED_IS, cq->cq_id);
		msg_add_bool(&mb, "ok", token != NULL);
		if (token != NULL)
			msg_add_str(&mb, "token", token);
		child_send_msg(eg, &mb);
	}
	free(cq);
}

static void
cred_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct cred_req	*cq = arg;

	log_warnx("%s: credential.get did not answer within %d ms",
	    cq->cq_who, CRED_HOOK_MS);
	cred_answer(cq, NULL);
}

/* {"token": a non-empty string}; nothing else, nothing of it logged. */
static void
cred_done(cJSON *result, enum ctl_call_end end, void *arg)
{
	struct cred_req	*cq = arg;
	const cJSON	*tok;
	size_t		 len;

	cq->cq_call = NULL;
	tok = result != NULL ? cJSON_GetObjectItemCaseSensitive(result,
	    "token") : NULL;
	if (end != CTL_CALL_ANSWERED || !cJSON_IsObject(result) ||
	    cJSON_GetArraySize(result) != 1 || !cJSON_IsString(tok) ||
	    (len = strlen(tok->valuestring)) == 0 || len > CRED_TOKEN_MAX ||
	    utf8_text_check(tok->valuestring, len, len) == -1) {
		log_warnx("%s: credential.get %s", cq->cq_who,
		    end != CTL_CALL_ANSWERED ? ctl_call_end_to_string(end) :
		    "answered no token");
		cred_answer(cq, NULL);
		return;
	}
	cred_answer(cq, tok->valuestring);
	explicit_bzero(tok->valuestring, len);
}

int
cred_ask(struct child *eg, struct msg *m)
{
	struct cred_req		*cq;
	struct child		*c;
	struct ctl_client	*client = NULL;
	const char		*kind, *server = NULL, *profile = NULL;
	const char		*sid = NULL, *sname = NULL, *turn_id = NULL;
	const char		*current = NULL;
	struct timeval		 tv = { CRED_HOOK_MS / 1000,
	    (CRED_HOOK_MS % 1000) * 1000 };
	uint64_t		 peer;
	cJSON			*p, *sp;

	if (msg_get_uint(m, "peer", 1, UINT64_C(1) << 53, &peer) == -1 ||
	    msg_get_str(m, "kind", 8, &kind) == -1 ||
	    msg_get_str_opt(m, "server", MCP_SERVER_NAME_MAX, &server) == -1 ||
	    msg_get_str_opt(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
	    &turn_id) == -1 || msg_end(m) == -1 ||
	    (strcmp(kind, "model") != 0 && strcmp(kind, "mcp") != 0))
		return -1;
	if ((cq = calloc(1, sizeof(*cq))) == NULL)
		fatal("%s", __func__);
	cq->cq_egress = eg->c_restarts;
	cq->cq_id = m->m_id;
	cq->cq_peer = peer;
	if ((cq->cq_timer = evtimer_new(sv->sv_base, cred_timeout, cq)) ==
	    NULL)
		fatalx("%s: timer", __func__);
	TAILQ_FOREACH(c, &children, c_entry)
		if (!c->c_singleton && c->c_peer == peer)
			break;
	if (c == NULL || c->c_channel == NULL) {
		snprintf(cq->cq_who, sizeof(cq->cq_who), "peer %llu",
		    (unsigned long long)peer);
		log_warnx("%s: a credential for a peer that is gone",
		    cq->cq_who);
		cred_answer(cq, NULL);
		return 0;
	}
	snprintf(cq->cq_who, sizeof(cq->cq_who), "%s[%s]",
	    proc_role_name(c->c_role), c->c_name != NULL ? c->c_name : "");
	if (c->c_role == PROC_RESEARCH)
		client = research_client(c);
	else {
		client = turn_identity(c->c_channel, &current, &profile, &sid,
		    &sname);
		profile = c->c_profile;
		if (turn_id != NULL && (current == NULL ||
		    strcmp(current, turn_id) != 0)) {
			log_warnx("%s: a credential for a call of turn %s, "
			    "which has ended", cq->cq_who, turn_id);
			cred_answer(cq, NULL);
			return 0;
		}
	}
	if (client == NULL || (ctl_client_hooks(client) &
	    HOOK_CREDENTIAL_GET) == 0)
		client = ctl_client_with_hook(HOOK_CREDENTIAL_GET);
	if (client == NULL) {
		log_warnx("%s: no client serves credential.get", cq->cq_who);
		cred_answer(cq, NULL);
		return 0;
	}
	if ((p = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(p, "kind", kind) == NULL ||
	    cJSON_AddStringToObject(p, "channel", c->c_channel) == NULL)
		fatalx("%s: out of memory", __func__);
	if (profile != NULL)
		cJSON_AddStringToObject(p, "profile", profile);
	else
		cJSON_AddNullToObject(p, "profile");
	if (sid != NULL) {
		if ((sp = cJSON_AddObjectToObject(p, "speaker")) == NULL ||
		    cJSON_AddStringToObject(sp, "id", sid) == NULL ||
		    cJSON_AddStringToObject(sp, "name", sname) == NULL)
			fatalx("%s: out of memory", __func__);
	} else
		cJSON_AddNullToObject(p, "speaker");
	if (server != NULL)
		cJSON_AddStringToObject(p, "server", server);
	if ((cq->cq_call = ctl_client_call(client, "credential.get", p,
	    cred_done, cq)) == NULL) {
		cred_answer(cq, NULL);
		return 0;
	}
	if (evtimer_add(cq->cq_timer, &tv) == -1)
		fatalx("%s: timer", __func__);
	return 0;
}
