/*
 * The controlled fetch's answer body, bounded twice (PROTOCOL.md 8: "gzip,
 * deflate and br answers are decoded with the size bound applied to wire
 * and decoded bytes"): the bytes as they came (after chunked framing) and
 * the bytes after the content coding each stop one byte past the bound.
 * Pure: no I/O, so Check drives it directly.
 */
#ifndef RTSANDBOX_DECODE_H
#define RTSANDBOX_DECODE_H

#include <stddef.h>
#include <stdint.h>

enum dec_kind {
	DEC_IDENTITY,
	DEC_GZIP,		/* gzip, x-gzip; several members in a row */
	DEC_DEFLATE,		/* zlib-wrapped or raw, told by its first bytes */
	DEC_BR,
};

enum dec_result {
	DEC_OK = 0,
	DEC_WIRE_TOO_LARGE,	/* more than the bound came over the wire */
	DEC_TOO_LARGE,		/* the decoded answer passed the bound */
	DEC_CORRUPT,		/* not a valid stream of its coding */
	DEC_TRUNCATED,		/* the stream ended before its coding did */
};
const char	*dec_result_to_string(enum dec_result);
const char	*dec_kind_name(enum dec_kind);

/*
 * The coding a content-encoding value names (several header lines joined
 * with ", "): "identity" and empty members are skipped, names are matched
 * without regard to case; at most one coding is taken.  -1 for an unknown
 * coding or a stack of two.
 */
int		 dec_kind_parse(const char *value, enum dec_kind *);

struct dec;

/* max: the bound for wire and decoded bytes alike; NULL when it is 0 or
 * the coding's library refuses to start. */
struct dec	*dec_new(enum dec_kind, size_t max);
void		 dec_free(struct dec *);

/*
 * Feed wire bytes; the decoded ones are kept.  After a result other than
 * DEC_OK, every further call returns that result.  Bytes after the end of
 * a deflate or br stream, or after the last gzip member, are ignored.
 */
enum dec_result	 dec_feed(struct dec *, const void *in, size_t len);
/* The body is complete: DEC_TRUNCATED when a coded stream did not end. */
enum dec_result	 dec_finish(struct dec *);

/* The decoded bytes so far (never more than max). */
const uint8_t	*dec_data(const struct dec *, size_t *len);
/* Wire bytes fed so far. */
size_t		 dec_wire_bytes(const struct dec *);

#endif
