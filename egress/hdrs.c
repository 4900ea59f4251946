/*
 * Header rules of PROTOCOL.md 3.2 and 3.3 (see hdrs.h): tables of what may
 * pass, and one value rule for both directions.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cred.h"
#include "hdrs.h"
#include "limits.h"
#include "reflect.h"
#include "validate.h"

/*
 * A response header name is a token (RFC 9110 5.6.2).  XXX PROTOCOL.md gives
 * names no bound; this one belongs in common/limits.h.
 */
#define HDRS_NAME_MAX	256u

#define BEARER		"Bearer "

/* A copied header, and the slot of the default it takes over, if any. */
struct hdrs_copy {
	const char	*hc_name;
	size_t		 hc_max;
	int		 hc_slot;	/* -1: appended */
};

enum {
	SLOT_CONTENT_TYPE,
	SLOT_ACCEPT,
	SLOT_ACCEPT_ENCODING,
	SLOT_DEFAULTS
};

static const struct hdr	hdrs_defaults[SLOT_DEFAULTS] = {
	{ "content-type", "application/json" },
	{ "accept", "application/json, text/event-stream" },
	{ "accept-encoding", "identity" },
};

static const struct hdrs_copy	hdrs_model[] = {
	{ "content-type", HEADER_VALUE_MAX, SLOT_CONTENT_TYPE },
	{ "accept", HEADER_VALUE_MAX, SLOT_ACCEPT },
	{ "anthropic-version", HEADER_VALUE_MAX, -1 },
	{ "anthropic-beta", HEADER_VALUE_MAX, -1 },
	{ "user-agent", HEADER_VALUE_MAX, -1 },
	{ "x-app", HEADER_VALUE_MAX, -1 },
};

static const struct hdrs_copy	hdrs_mcp[] = {
	{ "mcp-session-id", MCP_HEADER_MAX, -1 },
	{ "mcp-protocol-version", MCP_HEADER_MAX, -1 },
};

#define HDRS_NAME(s)	{ s, sizeof(s) - 1 }
static const struct {
	const char	*hn_name;
	size_t		 hn_len;
} hdrs_resp_names[] = {
	HDRS_NAME("content-type"),
	HDRS_NAME("request-id"),
	HDRS_NAME("x-should-retry"),
	HDRS_NAME("retry-after"),
};

#ifndef nitems
#define nitems(a)	(sizeof(a) / sizeof((a)[0]))
#endif

/*
 * Non-empty, valid UTF-8 of at most max chars, and no control character but
 * HTAB: nothing that could end the header line or hide in it.
 */
static int
hdrs_value_ok(const char *v, size_t max, size_t *lenp)
{
	size_t	 len, i;

	if (v == NULL)
		return 0;
	len = strnlen(v, UTF8_BYTES_MAX(max) + 1);
	if (len == 0 || len > UTF8_BYTES_MAX(max) ||
	    utf8_text_check(v, len, max) == -1)
		return 0;
	for (i = 0; i < len; i++)
		if (((unsigned char)v[i] < 0x20 && v[i] != '\t') ||
		    v[i] == 0x7f)
			return 0;
	if (lenp != NULL)
		*lenp = len;
	return 1;
}

/* The first occurrence of name in the worker's headers, or NULL. */
static const struct hdr *
hdrs_find(const struct hdr *in, size_t nin, const char *name)
{
	size_t	 i;

	for (i = 0; i < nin; i++)
		if (in[i].name != NULL && strcasecmp(in[i].name, name) == 0)
			return &in[i];
	return NULL;
}

static int
hdrs_request(struct hdrs_req *hr, const struct hdr *in, size_t nin,
    const char *token, const struct hdrs_copy *rules, size_t nrules)
{
	const struct hdr	*h;
	size_t			 i, toklen;

	memset(hr, 0, sizeof(*hr));
	toklen = token != NULL ? strnlen(token, CRED_FILE_MAX + 1) : 0;
	if (toklen > CRED_FILE_MAX || !cred_token_valid(token, toklen)) {
		errno = EINVAL;
		return -1;
	}
	if ((hr->hr_auth = malloc(sizeof(BEARER) + toklen)) == NULL)
		return -1;
	memcpy(hr->hr_auth, BEARER, sizeof(BEARER) - 1);
	memcpy(hr->hr_auth + sizeof(BEARER) - 1, token, toklen);
	hr->hr_auth[sizeof(BEARER) - 1 + toklen] = '\0';

	for (i = 0; i < SLOT_DEFAULTS; i++)
		hr->hr_hdr[hr->hr_n++] = hdrs_defaults[i];
	for (i = 0; i < nrules; i++) {
		h = hdrs_find(in, nin, rules[i].hc_name);
		if (h == NULL || !hdrs_value_ok(h->value, rules[i].hc_max, NULL))
			continue;
		if (rules[i].hc_slot >= 0)
			hr->hr_hdr[rules[i].hc_slot].value = h->value;
		else {
			hr->hr_hdr[hr->hr_n].name = rules[i].hc_name;
			hr->hr_hdr[hr->hr_n++].value = h->value;
		}
	}
	hr->hr_hdr[hr->hr_n].name = "authorization";
	hr->hr_hdr[hr->hr_n++].value = hr->hr_auth;
	return 0;
}

int
hdrs_model_request(struct hdrs_req *hr, const struct hdr *in, size_t nin,
    const char *token)
{
	return hdrs_request(hr, in, nin, token, hdrs_model,
	    nitems(hdrs_model));
}

int
hdrs_mcp_request(struct hdrs_req *hr, const struct hdr *in, size_t nin,
    const char *token)
{
	return hdrs_request(hr, in, nin, token, hdrs_mcp, nitems(hdrs_mcp));
}

void
hdrs_req_free(struct hdrs_req *hr)
{
	if (hr->hr_auth != NULL) {
		explicit_bzero(hr->hr_auth, strlen(hr->hr_auth));
		free(hr->hr_auth);
	}
	memset(hr, 0, sizeof(*hr));
}

int
hdrs_response_allowed(const char *name, const char *value,
    struct reflect *rf, int mcp)
{
	static const char	 prefix[] = "anthropic-ratelimit-";
	size_t			 i, len, max = RESP_HEADER_VALUE_MAX;
	int			 ok = 0;

	if (name == NULL)
		return 0;
	len = strnlen(name, HDRS_NAME_MAX + 1);
	if (len == 0 || len > HDRS_NAME_MAX)
		return 0;
	/* The allow-list first: most names are not on it, most not even of
	 * the length of one of its entries.  A name equal to one of them is
	 * a token; the prefix's tail is checked. */
	for (i = 0; i < nitems(hdrs_resp_names) && !ok; i++)
		if (len == hdrs_resp_names[i].hn_len &&
		    strcasecmp(name, hdrs_resp_names[i].hn_name) == 0)
			ok = 1;
	if (!ok && len >= sizeof(prefix) - 1 &&
	    strncasecmp(name, prefix, sizeof(prefix) - 1) == 0)
		ok = 1;
	if (!ok && mcp && len == sizeof("mcp-session-id") - 1 &&
	    strcasecmp(name, "mcp-session-id") == 0) {
		ok = 1;
		max = MCP_HEADER_MAX;
	}
	if (!ok)
		return 0;
	for (i = 0; i < len; i++)
		if (!http_tchar((unsigned char)name[i]))
			return 0;
	if (!hdrs_value_ok(value, max, &len))
		return 0;
	/* Out of memory counts as found. */
	return reflect_search(rf, value, len) == 0;
}
