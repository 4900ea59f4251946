/*
 * The answer of a precheck run's MCP call, before it goes back to the
 * container (egress/precall.c): the JSON-RPC message is taken out of the
 * upstream's body, and looked into for the credential.  Pure functions:
 * no I/O, the tree is cJSON's.
 *
 * Levels: the message is at level 1; a member of an object or an array is
 * one level below its container; the value a string holds as JSON (its
 * trimmed text begins with '{', '[' or '"' and parses) is one level below
 * the string.  A value below PRECHECK_DEPTH_MAX levels is not looked into,
 * so it counts as carrying the credential.
 */
#ifndef RTSANDBOX_DEEPCHECK_H
#define RTSANDBOX_DEEPCHECK_H

#include <stddef.h>

#include <cjson/cJSON.h>

struct reflect;

enum deepcheck_result {
	DEEPCHECK_CLEAN = 0,
	DEEPCHECK_CARRIES,	/* the credential, or too deep to tell */
	DEEPCHECK_NOMEM,
};

const char	*deepcheck_result_to_string(enum deepcheck_result);

/*
 * The JSON-RPC message of an answer body: with sse, the last event of the
 * text/event-stream whose data (its "data:" lines, one leading space off
 * each, joined with "\n"; lines end in LF or CR LF, an event in a blank
 * line or the end of the text) is a JSON object; else the whole body, which
 * must be one.  Strict JSON (jwalk.h).  NULL when there is none (errno
 * ENOMEM when memory ran out, else 0); the caller frees it with
 * cJSON_Delete().
 */
cJSON		*deepcheck_message(const char *body, size_t len, int sse);

/*
 * Whether v holds the secret rf looks for (reflect.h, every variant it
 * knows) in any object key or string value at any level, a string's JSON
 * included, or goes below PRECHECK_DEPTH_MAX levels.  rf is left reset.
 */
enum deepcheck_result deepcheck_walk(const cJSON *v, struct reflect *rf);

/* A strict JSON value filling s[0..len) (white space around it allowed),
 * parsed; NULL when it is none. */
cJSON		*deepcheck_parse(const char *s, size_t len);

#endif
