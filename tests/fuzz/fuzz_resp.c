/*
 * libFuzzer target: the reader of an HTTP/1.1 answer (egress/resp.c)
 * against arbitrary bytes, read whole and then in pieces.  Whatever the
 * pieces, the outcome, the head and (short of an error) the body must be
 * the same; every count it returns stays within the bytes it was given.
 *
 * Input: byte 0 seeds the piece sizes, byte 1 says whether the connection
 * ends after the bytes; the rest is the answer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "resp.h"

#define FUZZ_MAX	(256 * 1024)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct out {
	enum resp_status	 st;
	long			 status;
	enum resp_framing	 framing;
	int			 keep_alive;
	size_t			 nhdrs;
	uint32_t		 hsum;		/* of the header lines */
	uint8_t			*body;
	size_t			 body_len;
	size_t			 rest;		/* bytes after the answer */
};

static uint32_t
sum(uint32_t h, const char *s)
{
	while (*s != '\0')
		h = h * 31 + (uint8_t)*s++;
	return h * 31 + 1;
}

/* Pieces of 1..64 bytes from the seed, or everything at once (seed 0). */
static void
run(const uint8_t *in, size_t len, uint8_t seed, int eof, struct out *o)
{
	struct resp	 rs;
	struct resp_hdr	 h[RESP_HDRS_MAX];
	uint8_t		*buf;
	uint32_t	 x = seed;
	size_t		 off = 0, n, pos, used, body, i;
	enum resp_status st = RESP_MORE;

	memset(o, 0, sizeof(*o));
	if ((o->body = malloc(len + 1)) == NULL ||
	    (buf = malloc(len + 1)) == NULL)
		abort();
	resp_init(&rs);
	while (off < len && st != RESP_DONE && st != RESP_ERROR) {
		x = x * 1103515245 + 12345;
		n = seed == 0 ? len - off : 1 + (x >> 16) % 64;
		if (n > len - off)
			n = len - off;
		memcpy(buf, in + off, n);
		pos = 0;
		do {
			st = resp_feed(&rs, buf + pos, n - pos, &used, &body);
			if (used > n - pos || body > used ||
			    (st == RESP_HEAD && body != 0) ||
			    (st == RESP_MORE && pos + used != n))
				abort();
			memcpy(o->body + o->body_len, buf + pos, body);
			o->body_len += body;
			pos += used;
			if (st == RESP_HEAD) {
				o->status = rs.rs_status;
				o->framing = rs.rs_framing;
				o->keep_alive = rs.rs_keep_alive;
				o->nhdrs = resp_headers(&rs, h, RESP_HDRS_MAX);
				for (i = 0; i < o->nhdrs; i++)
					o->hsum = sum(sum(o->hsum, h[i].name),
					    h[i].value);
			}
		} while (st == RESP_HEAD);
		off += pos;
	}
	if (st == RESP_DONE)
		o->rest = len - off;
	else if (st == RESP_MORE && eof)
		st = resp_eof(&rs);
	if (st == RESP_ERROR && rs.rs_err == NULL)
		abort();
	/* Every call after an error fails again. */
	if (st == RESP_ERROR && (resp_feed(&rs, buf, 0, &used, &body) !=
	    RESP_ERROR || resp_eof(&rs) != RESP_ERROR))
		abort();
	o->st = st;
	resp_free(&rs);
	free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct out	 whole, cut;

	if (size < 2 || size > FUZZ_MAX)
		return 0;
	run(data + 2, size - 2, 0, data[1] & 1, &whole);
	run(data + 2, size - 2, data[0] | 1, data[1] & 1, &cut);
	if (whole.st != cut.st || whole.status != cut.status ||
	    whole.framing != cut.framing ||
	    whole.keep_alive != cut.keep_alive ||
	    whole.nhdrs != cut.nhdrs || whole.hsum != cut.hsum ||
	    whole.rest != cut.rest)
		abort();
	if (whole.st != RESP_ERROR && (whole.body_len != cut.body_len ||
	    memcmp(whole.body, cut.body, whole.body_len) != 0))
		abort();
	free(whole.body);
	free(cut.body);
	return 0;
}
