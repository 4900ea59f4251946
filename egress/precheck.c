/*
 * The admission of a precheck run's calls (precheck.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "deepcheck.h"
#include "precheck.h"

static int
name_char(char c, int tool)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '_' || c == '-' ||
	    (tool && c == '.');
}

static int
name_ok(const char *s, size_t len, size_t max, int tool)
{
	if (len < 1 || len > max)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!name_char(s[i], tool))
			return 0;
	return 1;
}

int
precheck_grant_split(const char *entry, char server[MCP_SERVER_NAME_MAX + 1],
    char tool[PRECHECK_TOOL_NAME_MAX + 1])
{
	const char	*slash;
	size_t		 slen, tlen;

	if ((slash = strchr(entry, '/')) == NULL)
		return -1;
	slen = (size_t)(slash - entry);
	tlen = strlen(slash + 1);
	if (!name_ok(entry, slen, MCP_SERVER_NAME_MAX, 0) ||
	    !name_ok(slash + 1, tlen, PRECHECK_TOOL_NAME_MAX, 1))
		return -1;
	memcpy(server, entry, slen);
	server[slen] = '\0';
	memcpy(tool, slash + 1, tlen);
	tool[tlen] = '\0';
	return 0;
}

static enum violation __attribute__((format(printf, 4, 5)))
refuse(enum violation v, char *why, size_t whylen, const char *fmt, ...)
{
	va_list	 ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		(void)vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return v;
}

static int
granted_server(const struct precheck_policy *pp, const char *server)
{
	for (size_t i = 0; i < pp->pp_ngrants; i++)
		if (strcmp(pp->pp_grants[i].pg_server, server) == 0)
			return 1;
	return 0;
}

static const struct precheck_grant *
granted_tool(const struct precheck_policy *pp, const char *server,
    const char *tool)
{
	for (size_t i = 0; i < pp->pp_ngrants; i++)
		if (strcmp(pp->pp_grants[i].pg_server, server) == 0 &&
		    strcmp(pp->pp_grants[i].pg_tool, tool) == 0)
			return &pp->pp_grants[i];
	return NULL;
}

/* The body that goes upstream: the names are the configuration's, the
 * arguments as parsed. */
static char *
precheck_body(const struct precheck_grant *pg, const cJSON *args)
{
	cJSON	*o, *p, *a;
	char	*s = NULL;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	a = args != NULL ? cJSON_Duplicate(args, 1) : cJSON_CreateObject();
	if (cJSON_AddStringToObject(o, "jsonrpc", "2.0") != NULL &&
	    cJSON_AddNumberToObject(o, "id", 1) != NULL &&
	    cJSON_AddStringToObject(o, "method", "tools/call") != NULL &&
	    (p = cJSON_AddObjectToObject(o, "params")) != NULL &&
	    cJSON_AddStringToObject(p, "name", pg->pg_tool) != NULL &&
	    a != NULL && cJSON_AddItemToObject(p, "arguments", a)) {
		a = NULL;
		s = cJSON_PrintUnformatted(o);
	}
	cJSON_Delete(a);
	cJSON_Delete(o);
	return s;
}

/* A key the admission reads, more than once: ambiguous, refused as the
 * policy refuses it in every other MCP body. */
static int
twice(const cJSON *o, const char *key)
{
	const cJSON	*c;
	int		 n = 0;

	for (c = o->child; c != NULL; c = c->next)
		if (c->string != NULL && strcmp(c->string, key) == 0)
			n++;
	return n > 1;
}

enum violation
precheck_admit(const struct precheck_policy *pp, const char *kind,
    const char *path, const char *query, const char *server,
    const char *turn_id, const char *body, size_t len,
    struct precheck_call *pc, char *why, size_t whylen)
{
	const cJSON	*method, *params, *name, *args;
	cJSON		*root;
	enum violation	 v = VIOLATION_NONE;

	memset(pc, 0, sizeof(*pc));
	if (why != NULL && whylen > 0)
		why[0] = '\0';
	if (strcmp(kind, "mcp") != 0)
		return refuse(VIOLATION_KIND, why, whylen,
		    "a precheck call of kind %s", kind);
	if (path[0] != '\0' || query != NULL || turn_id != NULL)
		return refuse(VIOLATION_KIND, why, whylen,
		    "a precheck call with a path, query or turn");
	if (server == NULL || !granted_server(pp, server))
		return refuse(VIOLATION_MCP_SERVER, why, whylen,
		    "MCP server %s is not granted to the run",
		    server != NULL ? server : "(none)");
	if (pp->pp_calls_left == 0)
		return refuse(VIOLATION_BUDGET, why, whylen,
		    "more calls than the run's budget");
	if (pp->pp_inflight > 0)
		return refuse(VIOLATION_IN_FLIGHT, why, whylen,
		    "a second call in flight");
	if (len > PRECHECK_REQUEST_MAX)
		return refuse(VIOLATION_BODY, why, whylen,
		    "a body of more than %u bytes", PRECHECK_REQUEST_MAX);
	errno = 0;
	if ((root = deepcheck_parse(body, len)) == NULL) {
		if (errno == ENOMEM)
			return VIOLATION_NONE;	/* pc_body NULL */
		return refuse(VIOLATION_BODY, why, whylen,
		    "a body that is not strict JSON");
	}
	if (!cJSON_IsObject(root)) {
		v = refuse(VIOLATION_BODY, why, whylen,
		    "a body that is not a JSON object");
		goto out;
	}
	params = cJSON_GetObjectItemCaseSensitive(root, "params");
	if (twice(root, "method") || twice(root, "params") ||
	    (cJSON_IsObject(params) && (twice(params, "name") ||
	    twice(params, "arguments")))) {
		v = refuse(VIOLATION_BODY, why, whylen, "a key twice");
		goto out;
	}
	method = cJSON_GetObjectItemCaseSensitive(root, "method");
	if (!cJSON_IsString(method) ||
	    strcmp(method->valuestring, "tools/call") != 0) {
		v = refuse(VIOLATION_MCP_METHOD, why, whylen,
		    "a method other than tools/call");
		goto out;
	}
	name = cJSON_GetObjectItemCaseSensitive(params, "name");
	if (!cJSON_IsObject(params) || !cJSON_IsString(name) ||
	    (pc->pc_grant = granted_tool(pp, server, name->valuestring)) ==
	    NULL) {
		v = refuse(VIOLATION_MCP_TOOL, why, whylen,
		    "a tool not granted on server %s", server);
		goto out;
	}
	args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	if (args != NULL && !cJSON_IsObject(args)) {
		pc->pc_grant = NULL;
		v = refuse(VIOLATION_FIELD, why, whylen,
		    "arguments that are not an object");
		goto out;
	}
	if ((pc->pc_body = precheck_body(pc->pc_grant, args)) != NULL)
		pc->pc_body_len = strlen(pc->pc_body);
 out:
	cJSON_Delete(root);
	return v;
}
