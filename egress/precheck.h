/*
 * What egress admits of a precheck run's broker, on its own (DESIGN.md 1,
 * invariant 6): the broker runs the script's code, so its one route, POST
 * /mcp/<server> with one tools/call, is checked here again and the body
 * that goes upstream is written here.  Pure functions over a buffer and a
 * length.
 */
#ifndef RTSANDBOX_PRECHECK_H
#define RTSANDBOX_PRECHECK_H

#include <stddef.h>
#include <stdint.h>

#include "limits.h"
#include "violation.h"

/* A tool's name: [A-Za-z0-9_.-]{1,128}. */
#define PRECHECK_TOOL_NAME_MAX	TOOL_USE_NAME_MAX
/* Entries of an attach's grant: every tool of every server granted. */
#define PRECHECK_GRANTS_MAX	(PRECHECK_SERVERS_MAX * 128u)
/* "server/tool" */
#define PRECHECK_GRANT_BYTES_MAX \
	(MCP_SERVER_NAME_MAX + 1 + PRECHECK_TOOL_NAME_MAX)

/*
 * An entry of a grant, "server/tool": 0 with each name copied out (server
 * [a-zA-Z0-9_-]{1,100}, tool [A-Za-z0-9_.-]{1,128}, split at the first
 * '/'), else -1.
 */
int		precheck_grant_split(const char *entry,
		    char server[MCP_SERVER_NAME_MAX + 1],
		    char tool[PRECHECK_TOOL_NAME_MAX + 1]);

/* One tool granted; the names are the configuration's. */
struct precheck_grant {
	const char	*pg_server;
	const char	*pg_tool;
};

/* What the run's broker is held to now. */
struct precheck_policy {
	const struct precheck_grant	*pp_grants;
	size_t				 pp_ngrants;
	uint64_t			 pp_calls_left;
	size_t				 pp_inflight;
};

/* An admitted call: its grant, and the body egress wrote for it (NULL
 * when memory ran out; free() it). */
struct precheck_call {
	const struct precheck_grant	*pc_grant;
	char				*pc_body;
	size_t				 pc_body_len;
};

/*
 * A call of the run's broker, as egr_call carries it: kind "mcp", path "",
 * no query and no turn; a server granted; no call in flight and one left
 * of the run's; a body of at most PRECHECK_REQUEST_MAX bytes of strict JSON,
 * an object whose method is "tools/call", whose params.name is a tool
 * granted on that server and whose params.arguments is an object or
 * absent.  VIOLATION_NONE with pc filled in (pc_body
 * {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":T,
 * "arguments":A or {}}}), or the rule broken with the reason in why.
 */
enum violation	precheck_admit(const struct precheck_policy *,
		    const char *kind, const char *path, const char *query,
		    const char *server, const char *turn_id, const char *body,
		    size_t len, struct precheck_call *pc, char *why,
		    size_t whylen);

#endif
