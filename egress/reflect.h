/*
 * Reflection filter of PROTOCOL.md 3.2: an upstream answer must not carry
 * the secret back to the worker, raw or encoded.  A stream fails when any
 * of these occurs in it:
 *
 * - raw, or escaped: one unit per secret byte, each unit the literal byte,
 *   a %XX triple, a JSON \u00XX escape (for a byte below 0x80) or a JSON
 *   short escape (\" \\ \/ \b \f \n \r \t) that stands for it, in any mix,
 *   hex digits of either case.  Units decode in one pass: "%2561" is "%61",
 *   not "a", and "\u0025" is '%' only;
 * - hex of every byte, each digit in either case;
 * - base64 and base64url, with or without padding, at each of the three
 *   alignments the secret can take inside a longer encoded blob: only the
 *   characters that depend on the secret's bits alone are looked for, so a
 *   standalone encoding, padded or not, is caught as well.
 *
 * The filter holds back the longest tail of the stream that is still the
 * beginning of some variant, and releases the rest, so that no byte of an
 * occurrence is released before the occurrence is complete, whatever the
 * chunking, while text that can begin none goes out at once.  It reports an
 * occurrence at the call that completes it.  Its work is linear in the bytes
 * fed, plus per call at most twice the secret's length looked at again and
 * 64 bytes looked at backwards; its bit vectors take a word per 64 bytes of
 * secret.
 *
 * Not looked for: other encodings (\uXXXX of non-ASCII characters, "\/"
 * inside base64, base64 broken into lines, one encoding inside another).
 */
#ifndef RTSANDBOX_REFLECT_H
#define RTSANDBOX_REFLECT_H

#include <stddef.h>

struct reflect;

/*
 * A filter for one stream.  Any secret of at least one byte works; one
 * shorter than a few bytes matches often, by its nature.  NULL with errno
 * EINVAL for an empty secret, ENOMEM when memory runs out.  The secret is
 * copied; reflect_free() wipes what was derived from it.
 */
struct reflect	*reflect_new(const char *secret, size_t len);

/*
 * Feed the next chunk.  *out and *outlen receive the bytes that are safe to
 * pass on now (*outlen may be 0); the pointer is valid until the next call,
 * and may point into in, which must then stay as it is until that call.
 * When nothing was held back, the chunk is searched where it is and only
 * what it holds back is copied; else the filter's buffer holds the
 * held-back bytes and the chunk.
 * Returns 0, or -1 once the secret was seen, memory ran out (errno ENOMEM)
 * or the stream was finished: -1 is sticky and nothing more is released.
 */
int		 reflect_feed(struct reflect *, const void *in, size_t len,
		    const void **out, size_t *outlen);

/* End of stream: the held-back tail, or -1 as for reflect_feed(). */
int		 reflect_finish(struct reflect *, const void **out,
		    size_t *outlen);

/*
 * Bytes fed but not released yet.  After reflect_feed() returned 0: the
 * longest tail that begins a variant, at most 6 bytes per secret byte less
 * one.  A call looks back over at most 64 + 4 bytes per byte it is fed; if
 * that does not settle the tail, it keeps what it held before and its
 * chunk, up to the last 6m - 1 bytes.
 */
size_t		 reflect_holdback(const struct reflect *);

void		 reflect_free(struct reflect *);

/*
 * The filter as reflect_new() made it, for another stream of the same
 * secret: what it held back is wiped, and a -1 of the last one forgotten.
 */
void		 reflect_reset(struct reflect *);

/*
 * Whether s holds the secret in any variant, searched from a reset filter
 * that is reset again afterwards: 1 when it does, 0 when it does not, -1
 * when memory ran out.
 */
int		 reflect_search(struct reflect *, const char *s, size_t len);

/*
 * Whether s (a header value, say) contains the secret in any variant: 1 when
 * it does, 0 when it does not, -1 when memory ran out; callers treat any
 * non-zero result as a match.
 */
int		 reflect_contains(const char *secret, size_t slen,
		    const char *s, size_t len);

#endif
