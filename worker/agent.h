/*
 * The reference worker's agent: one turn of PROTOCOL.md 4.1 in, one
 * result of 4.2 out, with model calls, host tools and write_file in
 * between, all through the broker's socket.
 */
#ifndef AGENT_H
#define AGENT_H

#include <stddef.h>

/*
 * The numbers of PROTOCOL.md that the worker keeps to.  The worker is built
 * from worker/ alone (a static binary that shares no code with the host),
 * so they are restated here rather than taken from common/limits.h.
 */
#define W_MIB			1048576u
/* "ok:true with text ... over 100 000 chars → 400". */
#define W_RESULT_TEXT_MAX	100000u
/* "ok:false with error ... over 10 000 chars → 400". */
#define W_RESULT_ERROR_MAX	10000u
/* "Files: at most 10; each decoded 1 byte–10 MiB ...; 50 MiB in all." */
#define W_FILES_MAX		10u
#define W_FILE_MAX		(10u * W_MIB)
#define W_FILES_TOTAL_MAX	(50u * W_MIB)
/* POST /worker/result: "body limit 72 MiB". */
#define W_RESULT_BODY_MAX	(72u * W_MIB)
/* Model and tool requests: "Body: at most 96 MiB". */
#define W_REQUEST_BODY_MAX	(96u * W_MIB)
/* Model answers: "At most 50 MiB per response." */
#define W_ANSWER_BODY_MAX	(50u * W_MIB)
/*
 * A turn carries two texts of 100 000 chars and images of "64 MiB in all"
 * (about 85.4 MiB of base64); the request bound covers that.
 */
#define W_TURN_BODY_MAX		W_REQUEST_BODY_MAX
/* "Safe file name: 1–255 chars". */
#define W_SAFE_NAME_MAX		255u
/* Host tools: "names [a-z][a-z0-9_]{0,47}". */
#define W_TOOL_NAME_MAX		48u

/* The agent's own bounds. */
#define W_MODEL_CALLS_MAX	12
/* The host bounds the turn; these only catch a broker that went away. */
#define W_MODEL_TIMEOUT_MS	600000
#define W_TOOL_TIMEOUT_MS	600000

struct agent_config {
	const char	*ac_socket;
	const char	*ac_workspace;
	char		 ac_compactor[101];	/* the host's engine, or "" */
};

struct wjson;

char	*agent_turn(const struct agent_config *, const char *, size_t,
	    size_t *);
int	 agent_safe_name(const char *, size_t);

/* compact.c: GET /worker/config, once at start */
void	 compact_config(struct agent_config *);
/* Whether a turn's text is the guest's "/compact [instructions]". */
int	 compact_command(const char *, size_t);
/* That turn: the reply, or NULL with err set. */
char	*compact_turn(const struct agent_config *, const char *turn_id,
	    const struct wjson *first, const char *text, size_t textlen,
	    size_t *lenp, char *err, size_t errlen);

#endif /* AGENT_H */
