/*
 * One audit record per upstream call egress makes for a peer: channel,
 * turn, speaker, route (the model path; the MCP server, its method and
 * the tool of a tools/call), model, status, time to the first byte of the
 * answer and to its end, bytes each way, and on failure what went wrong:
 * egress's own reason, the head of an error body, or the first error event
 * of a stream that began with a 200.  What the upstream said is cut to
 * AUDIT_ERROR_MAX bytes, cleared of the call's credential in every
 * encoding the reflection filter knows (reflect.h), and escaped.  Records
 * go to the journal or the log (journal.h) once the call is over.
 */
#ifndef RTSANDBOX_AUDIT_H
#define RTSANDBOX_AUDIT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "sse.h"

/* The upstream's words kept in a record, in bytes before escaping. */
#define AUDIT_ERROR_MAX		300u
/*
 * An error body read for its head: more than the head, so that a
 * credential that straddles the head's end is found whole and taken out
 * before the head is cut.
 */
#define AUDIT_CAPTURE_MAX	4096u
/* Egress's own reason for a failure. */
#define AUDIT_WHY_MAX		300u

struct audit {
	char		*au_channel;
	char		*au_turn;	/* NULL: no turn (startup window) */
	char		*au_speaker;
	char		*au_route;
	char		*au_model;	/* NULL: an MCP call */
	struct timespec	 au_start;
	long		 au_ttfb_ms;	/* -1: no answer's head */
	long		 au_status;	/* 0: none came */
	uint64_t	 au_bytes_out;
	uint64_t	 au_bytes_in;
	int		 au_failed;
	char		 au_why[AUDIT_WHY_MAX];
	/* an error status: the body's first bytes, as they came */
	char		*au_capture;
	size_t		 au_caplen;
	int		 au_capture_cut;	/* the body went on */
	/* a 200 stream: the first error event */
	struct sse_watch *au_sse;
	int		 au_sse_error;
};

/*
 * A record for a call admitted now; the strings are copied.  NULL when
 * memory runs out: every function below takes NULL and does nothing.
 */
struct audit	*audit_new(const char *channel, const char *turn,
		    const char *speaker, const char *route, const char *model,
		    uint64_t bytes_out);
struct up_hdr;
/* The answer's head: its status, and its headers (content-type). */
void		 audit_head(struct audit *, long status, const struct up_hdr *,
		    size_t n);
/* Body bytes as they came from the upstream, before the filter. */
void		 audit_data(struct audit *, const void *, size_t);
/* The call failed on egress's side (the first reason is kept). */
void		 audit_fail(struct audit *, const char *why);
/*
 * The call is over: the record is written, with secret (the call's
 * credential, len 0 when none was read) taken out of whatever the upstream
 * said, and freed.
 */
void		 audit_close(struct audit *, const char *secret, size_t len);

/*
 * The pure part, for Check and libFuzzer: text with every occurrence of
 * the secret in any encoding reflect.h knows replaced by "[redacted]",
 * into out (outlen bytes, NUL-terminated, cut at a character).  complete
 * says whether text is all there is: when it is not, a tail that could
 * begin an occurrence is dropped as well.  Returns the bytes written, or
 * -1 when memory ran out (out is then "[redacted]").
 */
long		 audit_redact(const char *secret, size_t slen, const char *text,
		    size_t len, int complete, char *out, size_t outlen);

#endif
