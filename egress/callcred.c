/*
 * The credential file of one model call (rtsandboxd.conf(5),
 * upstream.credentials), and the answer to a call that has none.
 */
#include "audit.h"
#include "credmap.h"
#include "egress_int.h"
#include "log.h"
#include "msg.h"

/*
 * A model call no credential file is for (upstream.credentials with
 * fallback "none": neither its speaker nor its channel has one) is
 * answered as the model service answers a request without a valid key:
 * 401 in its error shape, which the worker's client does not retry, before
 * any connection.  The broker passes it on as any answer.
 */
#define EGRESS_NO_CREDENTIAL_BODY \
	"{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\"," \
	"\"message\":\"No credential is configured for this speaker or " \
	"channel\"}}"

static void
egress_unauthorized(struct egress_call *ec)
{
	static const char *const hn[] = { "content-type" };
	static const char *const hv[] = { "application/json" };
	struct egress_peer	*ep = ec->ec_peer;

	if (ep->ep_role == PROC_BROKER)
		log_warnx("%s %s: no credential file for the speaker of turn "
		    "%s nor for the channel (upstream.credentials.fallback "
		    "\"none\")", ep->ep_name, ec->ec_route, ep->ep_turn_id);
	else
		log_warnx("%s %s: no credential file for the channel "
		    "(upstream.credentials.fallback \"none\")", ep->ep_name,
		    ec->ec_route);
	/* its audit record: failed on egress's side, no upstream status */
	audit_fail(ec->ec_audit, "no credential file for its speaker or "
	    "channel");
	ec->ec_status = 401;
	msgb_init(&ec->ec_head, MSG_EGR_HEAD, 0);
	msg_add_uint(&ec->ec_head, "call", ec->ec_id);
	msg_add_uint(&ec->ec_head, "status", 401);
	msg_add_strv(&ec->ec_head, "hnames", hn, 1);
	msg_add_strv(&ec->ec_head, "hvalues", hv, 1);
	ec->ec_head_held = 1;
	ec->ec_out = EGRESS_NO_CREDENTIAL_BODY;
	ec->ec_outlen = ec->ec_bytes = sizeof(EGRESS_NO_CREDENTIAL_BODY) - 1;
	egress_end(ec, 1, 0, NULL);
	egress_call_free(ec);
}

/*
 * The file a model call goes with (credmap.h): its turn's speaker's, its
 * channel's or credential_file.  -1 when there is none: the call was
 * answered and freed.
 */
int
egress_cred_file(struct egress_call *ec, const char **path,
    struct cred_cache **cache)
{
	struct egress_peer	*ep = ec->ec_peer;
	struct credmap_file	*cf;

	if (credmap_resolve(&ep->ep_egress->eg_creds, ep->ep_channel,
	    ep->ep_role == PROC_BROKER ? ep->ep_turn_speaker : NULL, &cf) ==
	    CREDMAP_FROM_NONE) {
		egress_unauthorized(ec);
		return -1;
	}
	*path = cf->cf_path;
	*cache = &cf->cf_cache;
	return 0;
}
