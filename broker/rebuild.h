/*
 * The broker never forwards what the worker sends: a model request
 * (PROTOCOL.md 5) and an MCP call (PROTOCOL.md 3.3) are read, checked and
 * built anew field by field.  Pure functions over a buffer and a length.
 */
#ifndef RTSANDBOX_REBUILD_H
#define RTSANDBOX_REBUILD_H

#include <stddef.h>
#include <stdint.h>

/* The host-judged thinking level of the bound turn (PROTOCOL.md 4.1). */
enum rebuild_level {
	LEVEL_LOW,
	LEVEL_MEDIUM,
	LEVEL_HIGH,
	LEVEL_XHIGH
};

/* "low", "medium", "high" or "xhigh": 0 and *level, else -1. */
int	rebuild_level_parse(const char *, enum rebuild_level *);

struct rebuild_params {
	const char		*model;		/* the profile's model */
	enum rebuild_level	 level;		/* the host-judged level */
	uint64_t		 max_output_tokens; /* 1025-200000, 0: 128000 */
	int			 count_tokens;	/* POST .../count_tokens */
	/* the body is the caller's malloc(3)ed buffer, freed once parsed:
	 * the rebuild of a large one does not hold it and its tree at once */
	int			 free_body;
	/* when set, a rebuild that succeeds leaves the trees it read and
	 * built here for the caller to free (rebuild_trees_free()) once the
	 * text went out, rather than before */
	struct rebuild_trees	*keep;
};

struct rebuild_trees {
	struct cJSON		*rt_in;
	struct cJSON		*rt_out;
};

/* Free what a rebuild left in rt; rt is empty after. */
void	rebuild_trees_free(struct rebuild_trees *);

/* Out of memory: the request was not judged (503, not a refusal). */
#define REBUILD_NOMEM		(-2)

/*
 * Rebuild the body of POST /anthropic/v1/messages (or of count_tokens).
 * Returns 0 with a malloc'd, NUL-terminated JSON object in *out and its
 * length in *outlen; or -1 with the reason in err, worded for the 400 that
 * rebuild_error_body() makes of it; or REBUILD_NOMEM.  A body of more than
 * MODEL_NODES_MAX values and keys is refused before it is parsed.  err is
 * always NUL-terminated and valid UTF-8 when errlen > 0.
 */
int	rebuild_model_request(const char *, size_t,
	    const struct rebuild_params *, char **, size_t *, char *, size_t);

/*
 * The 400 body in Anthropic's shape:
 * {"type":"error","error":{"type":"invalid_request_error","message":msg}}.
 * malloc'd and NUL-terminated, its length in *len; NULL when out of memory.
 */
char	*rebuild_error_body(const char *, size_t *);

/* rebuild_mcp_request() results besides 0 (rebuilt). */
#define REBUILD_MCP_INVALID	(-1)	/* 400: not a JSON-RPC request */
#define REBUILD_MCP_REFUSED	1	/* 403: "MCP method refused" */

/*
 * Rebuild the body of POST /mcp/<server>: allowed_tools is that server's
 * allow-list (ntools entries); startup is non-zero in the startup window,
 * where tools/call is refused.  Returns 0 with the rebuilt body as
 * rebuild_model_request() does, REBUILD_MCP_REFUSED or REBUILD_MCP_INVALID
 * (also for more than MCP_NODES_MAX values and keys) with the reason in
 * err, or REBUILD_NOMEM.
 */
int	rebuild_mcp_request(const char *, size_t, const char *const *, size_t,
	    int, char **, size_t *, char *, size_t);

/* rebuild_precheck_call() results besides those of rebuild_mcp_request(). */
#define REBUILD_TOO_LARGE	2	/* 413: over PRECHECK_REQUEST_MAX */

/*
 * Rebuild the body of a precheck run's POST /mcp/<server>, stricter than
 * rebuild_mcp_request(): a tools/call of a tool of allowed_tools (ntools
 * entries) with object or absent arguments, and nothing else of the
 * script's object; the id is always 1 and absent arguments are {}.
 * Returns 0 with the rebuilt body as rebuild_model_request() does,
 * REBUILD_TOO_LARGE, REBUILD_MCP_INVALID (not JSON, or over MCP_NODES_MAX
 * values and keys), REBUILD_MCP_REFUSED with the reason in err, or
 * REBUILD_NOMEM.
 */
int	rebuild_precheck_call(const char *, size_t, const char *const *,
	    size_t, char **, size_t *, char *, size_t);

/*
 * The checks every rebuild makes of a body (strict UTF-8 and JSON, no
 * repeated key, at most max_nodes values and keys) and its cJSON tree; NULL
 * with the reason in err, and *nomem set when it was not judged.
 */
struct cJSON	*rebuild_parse(const char *, size_t, size_t, int *, char *,
		    size_t);

#endif
