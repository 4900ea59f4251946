/*
 * The rules a broker or research job can break (DESIGN.md 1, invariants 6
 * to 8).  Egress and the supervisor each check what a peer sends on their
 * own; a refusal names its rule, is logged with the channel and counted in
 * daemon.stats under that name.  A legitimate broker never breaks any of
 * them, so each one means the peer runs someone else's code.
 */
#ifndef RTSANDBOX_VIOLATION_H
#define RTSANDBOX_VIOLATION_H

#include <stdint.h>

/* X(enum suffix, name in logs and daemon.stats) */
#define VIOLATION_TABLE(X)						\
	/* a frame the message table refuses, or a descriptor count,	\
	 * size or field out of place */				\
	X(FRAME,	"frame")					\
	/* a call kind, path or query the peer may not use */		\
	X(KIND,		"kind")						\
	/* a body over its bound, not strict JSON, over the node cap,	\
	 * with a key twice, or a list over its count (messages, blocks, \
	 * images, tools) */						\
	X(BODY,		"body")						\
	/* a field, role, content block, source or key the rebuild	\
	 * never writes (or one it always writes, missing), a tool that	\
	 * is not custom */						\
	X(FIELD,	"field")					\
	X(MODEL,	"model")					\
	X(MAX_TOKENS,	"max_tokens")					\
	/* a budget the rebuild never sets, adaptive thinking with no	\
	 * level */							\
	X(THINKING,	"thinking")					\
	/* over the ceiling, or missing with adaptive thinking at low	\
	 * or medium */							\
	X(EFFORT,	"effort")					\
	/* an MCP server outside the peer's profile */			\
	X(MCP_SERVER,	"mcp_server")					\
	/* an MCP method outside the allow-list, or tools/call outside a \
	 * bound turn */						\
	X(MCP_METHOD,	"mcp_method")					\
	X(MCP_TOOL,	"mcp_tool")					\
	/* a call for no bound turn, or for a turn that was never bound */ \
	X(NO_TURN,	"no_turn")					\
	/* more calls than the turn's, the window's or the job's budget */ \
	X(BUDGET,	"budget")					\
	/* more calls in flight than a scope allows */			\
	X(IN_FLIGHT,	"in_flight")					\
	/* a host tool that is not in the configuration's tools */	\
	X(HOST_TOOL,	"host_tool")					\
	/* a tool call id in use, or more tool calls in flight than a	\
	 * turn allows */						\
	X(TOOL_CALL,	"tool_call")					\
	/* a turn result that breaks a bound of PROTOCOL.md 4.2 */	\
	X(RESULT,	"result")					\
	/* a peer that reads nothing of what is sent to it for		\
	 * PEER_STALL_MS while PEER_QUEUE_MAX waits */			\
	X(STALL,	"stall")

enum violation {
	VIOLATION_NONE = 0,
#define VIOLATION_ENUM(e, n)	VIOLATION_##e,
	VIOLATION_TABLE(VIOLATION_ENUM)
#undef VIOLATION_ENUM
	VIOLATION__COUNT
};

/*
 * What a peer sent that was refused without being a violation on its own:
 * a call for a turn that has ended, a tool call, a result or an
 * acknowledgement that names no live turn or call.  A legitimate peer
 * sends a few of these when a turn ends under it; one that sends more than
 * PEER_REFUSALS_MAX within PEER_REFUSAL_WINDOW_MS runs someone else's code
 * (DESIGN.md 1, invariant 7).  Each peer has one of these; refusals are
 * logged at most once per PEER_REFUSAL_LOG_MS, with their count.
 */
struct refusals {
	uint64_t	 rf_window_at;	/* monotonic ms the window began */
	unsigned	 rf_in_window;
	uint64_t	 rf_logged_at;	/* monotonic ms of the last line */
	uint64_t	 rf_unlogged;	/* counted since that line */
	uint64_t	 rf_total;
};

/*
 * Count one refusal at now_ms.  Returns 1 once the peer is past its
 * allowance, else 0.  *log_n is set to the number of refusals a log line
 * due now covers (this one included), or 0 when none is due.
 */
int		 refusal_count(struct refusals *, uint64_t now_ms,
		    uint64_t *log_n);
/*
 * The same for peer who's refusal of what: logs the line when one is due;
 * returns 1 once past the allowance, with why saying so for the
 * violation, else 0.
 */
int		 refusal_note(struct refusals *, uint64_t now_ms,
		    const char *who, const char *what, char *why,
		    size_t whylen);

/* "model"; "none" for VIOLATION_NONE and anything out of range. */
const char	*violation_name(enum violation);
/* The rule of that name; VIOLATION_NONE when there is none. */
enum violation	 violation_from_name(const char *);

#endif
