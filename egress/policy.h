/*
 * What egress checks in the body of each call on its own, whatever the
 * broker or research job that sent it claims (DESIGN.md 1, invariant 6):
 * a peer's code is assumed to be the attacker's, so the credential is only
 * ever spent within the peer's profile.  Pure functions over a buffer and a
 * length.
 *
 * The body is read as strict JSON (RFC 8259, UTF-8 checked, at most
 * POLICY_NODES_MAX values and keys, nesting at most POLICY_DEPTH_MAX) by a
 * reader that builds no tree, so a hostile body costs time linear in its
 * size and no memory.  A key the policy looks at may appear once.
 */
#ifndef RTSANDBOX_POLICY_H
#define RTSANDBOX_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "violation.h"

/* cJSON's own nesting limit: the broker never sends deeper bodies. */
#define POLICY_DEPTH_MAX	1000

/* The thinking levels of PROTOCOL.md 5; NONE is a research job without. */
enum policy_level {
	POLICY_LEVEL_NONE = 0,
	POLICY_LEVEL_LOW,
	POLICY_LEVEL_MEDIUM,
	POLICY_LEVEL_HIGH,
	POLICY_LEVEL_XHIGH,
};

/* "low", "medium", "high", "xhigh": 0, else -1. */
int		policy_level_parse(const char *, enum policy_level *);
const char	*policy_level_name(enum policy_level);
/* PROTOCOL.md 5's "highest thinking budget" of a level (0 for NONE). */
uint64_t	policy_budget_ceiling(enum policy_level);

/* A model call: /v1/messages or /v1/messages/count_tokens. */
struct policy_model {
	const char		*pm_model;	/* the profile's model */
	uint64_t		 pm_max_tokens;	/* maxOutputTokens */
	enum policy_level	 pm_level;	/* the bound turn's */
	int			 pm_count_tokens; /* .../count_tokens */
};

/*
 * The body of a model call, as the rebuild of PROTOCOL.md 5 makes it:
 * only the fields the rebuild sends (for count_tokens, none of max_tokens,
 * output_config and the sampling fields); "model" the profile's;
 * "max_tokens" present, a plain integer from 1 to the ceiling; "thinking"
 * disabled, adaptive (not for a research job without a level), or enabled
 * with a budget from 1 024 to the level's ceiling and below max_tokens;
 * "output_config" only an effort at most the level's, present with
 * adaptive thinking at low and medium; at most 128 tools, each custom;
 * "messages" at most 2 000 of role user or assistant and content; content
 * and "system" a string or at most 256 blocks (8 images) of the types,
 * keys and shapes the rebuild writes: text, image of a base64 source and
 * a media type of 4.3, tool_use, tool_result, thinking, redacted_thinking,
 * system and tool_result content text and image only.  Returns
 * VIOLATION_NONE, or the rule broken with the reason in why: "field" for
 * a field, block, source, role or key the rebuild never writes (or one it
 * always does, missing), "body" for a list over its count.
 */
enum violation	policy_model_check(const char *body, size_t len,
		    const struct policy_model *, char *why, size_t whylen);

/* An MCP call to one server. */
struct policy_mcp {
	const char *const	*pm_tools;	/* the server's allowed tools */
	size_t			 pm_ntools;
	int			 pm_metadata_only; /* no bound turn */
};

/*
 * The body of an MCP call as PROTOCOL.md 3.3 rebuilds it: one JSON-RPC
 * request object (no batch) of jsonrpc, id, method and params; a method
 * of the allow-list; tools/call only with a bound turn, a params.name the
 * server allows and an object params.arguments.
 */
enum violation	policy_mcp_check(const char *body, size_t len,
		    const struct policy_mcp *, char *why, size_t whylen);

/* What an admitted MCP call asks, for its audit record: names from the
 * allow-lists, never the peer's bytes. */
struct policy_mcp_call {
	const char	*pc_method;
	const char	*pc_tool;	/* tools/call only, else NULL */
};
/* policy_mcp_check(), and on VIOLATION_NONE what the call asks. */
enum violation	policy_mcp_check_call(const char *body, size_t len,
		    const struct policy_mcp *, struct policy_mcp_call *,
		    char *why, size_t whylen);

#endif
