/*
 * Header rules of PROTOCOL.md 3.2 and 3.3: what egress sends upstream and
 * what of the answer's headers goes back towards the worker.
 *
 * A request's headers are built fresh, in this order:
 *
 *	content-type: application/json
 *	accept: application/json, text/event-stream
 *	accept-encoding: identity	(so the reflection filter sees the bytes)
 *	the worker's headers that its route allows, in the order listed below
 *	authorization: Bearer <token>
 *
 * For a model call the worker's anthropic-version, anthropic-beta,
 * content-type, accept, user-agent and x-app are copied when at most
 * HEADER_VALUE_MAX chars; a copied content-type or accept takes the place of
 * the default one (one header each, in the default's slot).  For an MCP call
 * mcp-session-id and mcp-protocol-version are copied when at most
 * MCP_HEADER_MAX chars.  Names match without regard to case and go out in
 * lower case.  Only the first occurrence of a name counts: when it breaks a
 * rule the name is not copied at all.  A value is copied when it is non-empty
 * valid UTF-8 without control characters other than HTAB (so no CR, LF or
 * NUL).  Everything else the worker sent is dropped: its authorization,
 * cookie, x-api-key, host, accept-encoding, ...
 */
#ifndef RTSANDBOX_HDRS_H
#define RTSANDBOX_HDRS_H

#include <stddef.h>

struct hdr {
	const char	*name;
	const char	*value;
};

/* The most headers a request gets: 3 defaults, 4 copies, authorization. */
#define HDRS_REQ_MAX	8

/*
 * A request's headers.  Names are static; a value points to a static
 * default, into the worker's list given (which must outlive this), or to
 * hr_auth.
 */
struct hdrs_req {
	struct hdr	 hr_hdr[HDRS_REQ_MAX];
	size_t		 hr_n;
	char		*hr_auth;	/* "Bearer <token>" */
};

/*
 * Fill hr from the worker's nin headers and the token.  0, or -1 with errno
 * EINVAL when the token is not a valid one (cred_token_valid(), at most
 * CRED_FILE_MAX bytes) or ENOMEM; hr then holds nothing to free.
 */
int	hdrs_model_request(struct hdrs_req *hr, const struct hdr *in,
	    size_t nin, const char *token);
int	hdrs_mcp_request(struct hdrs_req *hr, const struct hdr *in,
	    size_t nin, const char *token);

/* Wipe the token and free it; hr is empty after. */
void	hdrs_req_free(struct hdrs_req *hr);

/*
 * Whether an upstream response header goes back to the worker: 1 when the
 * name (any case) is content-type, request-id, x-should-retry, retry-after
 * or starts with anthropic-ratelimit-, or, when mcp is set, is also
 * mcp-session-id; the value follows the rule above, is at most
 * RESP_HEADER_VALUE_MAX (MCP_HEADER_MAX) chars and does not contain the
 * secret in any variant of reflect.h, as reflect_search() with rf finds
 * it (rf is reset afterwards).  Otherwise 0.
 */
struct reflect;
int	hdrs_response_allowed(const char *name, const char *value,
	    struct reflect *rf, int mcp);

#endif
