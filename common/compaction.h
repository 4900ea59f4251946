/*
 * Compaction (rtsandbox-protocol(7), contract 0.7.10 and 0.7.12): the
 * worker's compact request, the host compactor's answer and the worker's
 * reports, each judged against the contract's bounds.  Pure functions,
 * shared by the broker (the first check) and the supervisor (the second:
 * what a broker passes on is the attacker's).  Error texts name the field
 * and the rule, never the string judged; the body_err codes are bodies.h's.
 */
#ifndef RTSANDBOX_COMPACTION_H
#define RTSANDBOX_COMPACTION_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "bodies.h"
#include "limits.h"

/* What a compact request says that the host logs and holds the answer to. */
struct compact_info {
	char		ci_reason[16];	/* manual, threshold, overflow */
	uint64_t	ci_tokens_before;
	char		ci_first_kept[UTF8_BYTES_MAX(COMPACT_ENTRY_ID_MAX) + 1];
};

/* compaction.engine: [a-zA-Z0-9@/._-]{1,100}. */
int		compact_engine_valid(const char *s, size_t len);

/*
 * POST /compaction/compact: {reason: manual|threshold|overflow,
 * tokensBefore: 0..2^53-1, firstKeptEntryId: 1..256 chars, isSplitTurn:
 * bool, messagesToSummarize, turnPrefixMessages, keptMessages: arrays of
 * objects whose role is a string, previousSummary?, customInstructions?:
 * strings, readFiles, modifiedFiles: arrays of strings}.  Keys the
 * contract does not name are dropped.  On BODY_OK *ci is filled and, when
 * out is not NULL, *out gets the request as the compactor is to see it
 * (the caller frees it with cJSON_Delete()).
 */
enum body_err	compact_check_request(const char *body, size_t len,
		    struct compact_info *ci, cJSON **out, char *err,
		    size_t errlen);

/*
 * The compactor's compaction for the request ci: {summary: a non-empty
 * string, firstKeptEntryId: ci's, tokensBefore: 0..2^53-1,
 * estimatedTokensAfter?: the same, details?: an object}.  On BODY_OK
 * *json gets the worker's answer, {"ok":true,"compaction":{...}} with
 * details.engine set to engine (free()), and *after the tokens after, or
 * -1 when not given.
 */
enum body_err	compact_build_answer(const cJSON *compaction,
		    const struct compact_info *ci, const char *engine,
		    char **json, int64_t *after, char *err, size_t errlen);

/* {"ok":false,"fallback":reason}, to free(); NULL when out of memory. */
char		*compact_fallback_json(const char *reason);

/*
 * POST /compaction/report, at most COMPACT_REPORT_BODY_MAX bytes: {type:
 * "bypass", reason: <=1 000 chars, tokensBefore} or {type: "end", reason:
 * manual|threshold|overflow, aborted, willRetry: bools, engine?:
 * extension|pi, tokensBefore?, tokensAfter?, nextCompactionAt?: token
 * counts, error?: <=10 000 chars}; other keys are a newer worker's and
 * ignored.  On BODY_OK line gets what the host logs of it, with the head
 * (COMPACT_LOG_TEXT_MAX chars) of a reason or error.
 */
enum body_err	compact_check_report(const char *body, size_t len,
		    char *line, size_t linelen, char *err, size_t errlen);

#endif
