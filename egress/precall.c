/*
 * A precheck run's broker (egress.c admits its calls with precheck.h): the
 * tools it was granted, and the answers of its calls, read whole, looked
 * into for the credential (deepcheck.h) and sent back as one JSON-RPC
 * message.  Nothing of the upstream's headers or errors goes back; a
 * failure is a 502 with one of a few fixed texts.
 */
#include <sys/queue.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "audit.h"
#include "deepcheck.h"
#include "egress_int.h"
#include "limits.h"
#include "log.h"
#include "msg.h"
#include "reflect.h"
#include "upstream.h"

/* The texts a run's script may see, and nothing else. */
static const char PC_TOO_LARGE[] = "upstream answer too large";
static const char PC_REFUSED[] = "upstream refused";
static const char PC_REFLECTED[] = "credential reflected";
static const char PC_NO_MESSAGE[] = "upstream returned no JSON-RPC message";
static const char PC_FAILED[] = "upstream call failed";

/* Body bytes per frame, as for every other answer. */
#define PC_FRAME_DATA	(64u * 1024)

static int
grant_find(const struct egress_peer *ep, const char *server, const char *tool)
{
	for (size_t i = 0; i < ep->ep_ngrants; i++)
		if (strcmp(ep->ep_grants[i].pg_server, server) == 0 &&
		    strcmp(ep->ep_grants[i].pg_tool, tool) == 0)
			return 1;
	return 0;
}

/*
 * The supervisor checked the grant against the channel's profile already;
 * egress checks it again, so that a grant can never be more than the
 * channel's own agent may use.
 */
int
egress_precheck_grants(struct egress_peer *ep, const char *const *grant,
    size_t n)
{
	char			 server[MCP_SERVER_NAME_MAX + 1];
	char			 tool[PRECHECK_TOOL_NAME_MAX + 1];
	const struct egress_mcp	*em;
	const char		*servers[PRECHECK_SERVERS_MAX];
	size_t			 i, k, nservers = 0;

	if ((ep->ep_grants = calloc(n + 1, sizeof(*ep->ep_grants))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (precheck_grant_split(grant[i], server, tool) == -1 ||
		    (em = egress_profile_mcp(ep->ep_profile, server)) == NULL)
			goto inval;
		for (k = 0; k < em->em_ntools; k++)
			if (strcmp(em->em_tools[k], tool) == 0)
				break;
		if (k == em->em_ntools)
			goto inval;
		/* twice is harmless: once is kept */
		if (grant_find(ep, em->em_name, em->em_tools[k]))
			continue;
		for (k = 0; k < nservers; k++)
			if (servers[k] == em->em_name)
				break;
		if (k == nservers) {
			if (nservers == PRECHECK_SERVERS_MAX)
				goto inval;
			servers[nservers++] = em->em_name;
		}
		for (k = 0; k < em->em_ntools; k++)
			if (strcmp(em->em_tools[k], tool) == 0)
				break;
		ep->ep_grants[ep->ep_ngrants].pg_server = em->em_name;
		ep->ep_grants[ep->ep_ngrants++].pg_tool = em->em_tools[k];
	}
	return 0;
 inval:
	free(ep->ep_grants);
	ep->ep_grants = NULL;
	ep->ep_ngrants = 0;
	errno = EINVAL;
	return -1;
}

void
egress_precheck_clear(struct egress_call *ec)
{
	if (ec->ec_pc_buf != NULL) {
		explicit_bzero(ec->ec_pc_buf, ec->ec_pc_len);
		free(ec->ec_pc_buf);
	}
	ec->ec_pc_buf = NULL;
	ec->ec_pc_len = ec->ec_pc_cap = 0;
}

static int
pc_on_head(struct up_call *up, long status, const struct up_hdr *hdrs,
    size_t n, void *arg)
{
	struct egress_call	*ec = arg;

	ec->ec_status = status;
	audit_head(ec->ec_audit, status, hdrs, n);
	if (status < 200 || status > 299) {
		ec->ec_pc_fail = PC_REFUSED;
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (strcmp(hdrs[i].name, "content-type") == 0 &&
		    strcasestr(hdrs[i].value, "text/event-stream") != NULL)
			ec->ec_pc_sse = 1;
	return 0;
}

/* The buffer grows with the bytes received, never with a length the
 * upstream declared. */
static int
pc_on_data(struct up_call *up, const void *buf, size_t len, void *arg)
{
	struct egress_call	*ec = arg;
	size_t			 cap;
	char			*p;

	audit_data(ec->ec_audit, buf, len);
	if (len > PRECHECK_RESPONSE_MAX - ec->ec_pc_len) {
		ec->ec_pc_fail = PC_TOO_LARGE;
		return -1;
	}
	if (ec->ec_pc_len + len > ec->ec_pc_cap) {
		cap = ec->ec_pc_cap > 0 ? ec->ec_pc_cap : 16384;
		while (cap < ec->ec_pc_len + len)
			cap *= 2;
		if (cap > PRECHECK_RESPONSE_MAX)
			cap = PRECHECK_RESPONSE_MAX;
		/* Copied by hand: realloc() would leave the old bytes in the
		 * heap unwiped. */
		if ((p = malloc(cap)) == NULL) {
			log_warn("%s %s: the answer", ec->ec_peer->ep_name,
			    ec->ec_route);
			ec->ec_pc_fail = PC_FAILED;
			return -1;
		}
		if (ec->ec_pc_len > 0) {
			memcpy(p, ec->ec_pc_buf, ec->ec_pc_len);
			explicit_bzero(ec->ec_pc_buf, ec->ec_pc_len);
		}
		free(ec->ec_pc_buf);
		ec->ec_pc_buf = p;
		ec->ec_pc_cap = cap;
	}
	memcpy(ec->ec_pc_buf + ec->ec_pc_len, buf, len);
	ec->ec_pc_len += len;
	return 0;
}

/*
 * The message that goes back, or the fixed text of why none does: the raw
 * body must not carry the credential, nor any key or string of the
 * message at any level, nor the message as printed.
 */
static const char *
pc_answer(struct egress_call *ec, char **out)
{
	struct reflect		*rf = ec->ec_reflect;
	enum deepcheck_result	 r;
	cJSON			*msg;
	const char		*buf = ec->ec_pc_buf != NULL ? ec->ec_pc_buf :
				    "";

	*out = NULL;
	if (ec->ec_secret_len > 0 && reflect_search(rf, buf, ec->ec_pc_len) !=
	    0)
		return PC_REFLECTED;
	errno = 0;
	if ((msg = deepcheck_message(buf, ec->ec_pc_len, ec->ec_pc_sse)) ==
	    NULL)
		return errno == ENOMEM ? PC_FAILED : PC_NO_MESSAGE;
	r = ec->ec_secret_len > 0 ? deepcheck_walk(msg, rf) : DEEPCHECK_CLEAN;
	if (r == DEEPCHECK_CLEAN)
		*out = cJSON_PrintUnformatted(msg);
	cJSON_Delete(msg);
	if (r != DEEPCHECK_CLEAN)
		return r == DEEPCHECK_CARRIES ? PC_REFLECTED : PC_FAILED;
	if (*out == NULL)
		return PC_FAILED;
	if (ec->ec_secret_len > 0 && reflect_search(rf, *out, strlen(*out)) !=
	    0) {
		free(*out);
		*out = NULL;
		return PC_REFLECTED;
	}
	return NULL;
}

static void
pc_fail(struct egress_call *ec, const char *text)
{
	struct msgb	 mb;

	audit_fail(ec->ec_audit, text);
	msgb_init(&mb, MSG_EGR_END, 0);
	msg_add_uint(&mb, "call", ec->ec_id);
	msg_add_bool(&mb, "ok", 0);
	msg_add_uint(&mb, "status", 502);
	msg_add_str(&mb, "error", text);
	egress_send(ec->ec_peer, &mb);
}

/* The head, the message in frames of PC_FRAME_DATA, the end. */
static void
pc_send(struct egress_call *ec, const char *body)
{
	static const char *const hn[] = { "content-type" };
	static const char *const hv[] = { "application/json" };
	struct msgb	 mb;
	size_t		 len = strlen(body), k;

	msgb_init(&mb, MSG_EGR_HEAD, 0);
	msg_add_uint(&mb, "call", ec->ec_id);
	msg_add_uint(&mb, "status", 200);
	msg_add_strv(&mb, "hnames", hn, 1);
	msg_add_strv(&mb, "hvalues", hv, 1);
	egress_send(ec->ec_peer, &mb);
	for (; len > 0; body += k, len -= k) {
		k = len < PC_FRAME_DATA ? len : PC_FRAME_DATA;
		msgb_init(&mb, MSG_EGR_DATA, 0);
		msg_add_uint(&mb, "call", ec->ec_id);
		msg_add_data(&mb, body, k);
		egress_send(ec->ec_peer, &mb);
	}
	msgb_init(&mb, MSG_EGR_END, 0);
	msg_add_uint(&mb, "call", ec->ec_id);
	msg_add_bool(&mb, "ok", 1);
	egress_send(ec->ec_peer, &mb);
}

static void
pc_on_end(struct up_call *up, enum up_result r, const char *detail,
    void *arg)
{
	struct egress_call	*ec = arg;
	const char		*fail = ec->ec_pc_fail;
	char			*out = NULL;

	ec->ec_up = NULL;
	if (r != UP_OK) {
		if (fail == NULL)
			fail = r == UP_TOO_LARGE ? PC_TOO_LARGE : PC_FAILED;
		if (fail == PC_FAILED)
			log_warnx("%s %s: %s: %s", ec->ec_peer->ep_name,
			    ec->ec_route, up_result_to_string(r), detail);
	} else if ((fail = pc_answer(ec, &out)) == PC_REFLECTED)
		log_warnx("%s %s: the credential came back in the answer; "
		    "not passed on", ec->ec_peer->ep_name, ec->ec_route);
	if (fail != NULL)
		pc_fail(ec, fail);
	else {
		pc_send(ec, out);
		free(out);
	}
	egress_call_free(ec);
}

const struct up_callbacks egress_precheck_cbs = {
	pc_on_head, pc_on_data, pc_on_end, NULL
};
