/*
 * libFuzzer target: egress/decode.c, the bounded decoder of gzip, deflate
 * and br answers of the controlled fetch, and the content-encoding names.
 *
 * Input: the coding, the bound, a chunking seed, then the body.  Fed whole
 * and fed in chunks, the decoder must give the same result and the same
 * bytes; it never holds more than the bound, never counts more wire bytes
 * than it was given, and identity passes the body through unchanged.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static enum dec_result
run(enum dec_kind k, size_t max, const uint8_t *in, size_t len,
    unsigned seed, uint8_t **out, size_t *outlen)
{
	struct dec	*d;
	enum dec_result	 r = DEC_OK;
	const uint8_t	*data;
	size_t		 off = 0, n, wire = 0;

	if ((d = dec_new(k, max)) == NULL)
		abort();
	while (off < len && r == DEC_OK) {
		n = seed == 0 ? len - off : 1 + (seed * 7 + off) % (seed + 1);
		if (n > len - off)
			n = len - off;
		r = dec_feed(d, in + off, n);
		wire += n;
		off += n;
		if (dec_wire_bytes(d) > wire)
			abort();
	}
	if (r == DEC_OK)
		r = dec_finish(d);
	data = dec_data(d, outlen);
	if (*outlen > max)
		abort();
	if ((*out = malloc(*outlen + 1)) == NULL)
		abort();
	if (*outlen > 0)
		memcpy(*out, data, *outlen);
	dec_free(d);
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *buf, size_t len)
{
	static const enum dec_kind kinds[] = {
		DEC_IDENTITY, DEC_GZIP, DEC_DEFLATE, DEC_BR
	};
	enum dec_kind	 k, parsed;
	enum dec_result	 r1, r2;
	uint8_t		*o1, *o2;
	size_t		 l1, l2, max;
	unsigned	 seed;
	char		 name[16];

	if (len < 4)
		return 0;
	k = kinds[buf[0] % 4];
	max = 1 + ((size_t)buf[1] << 8 | buf[2]) * 16;
	seed = buf[3] % 64;
	buf += 4;
	len -= 4;

	/* The names a content-encoding header may give. */
	memcpy(name, buf, len < sizeof(name) - 1 ? len : sizeof(name) - 1);
	name[len < sizeof(name) - 1 ? len : sizeof(name) - 1] = '\0';
	if (dec_kind_parse(name, &parsed) == 0 &&
	    strcmp(dec_kind_name(parsed), "?") == 0)
		abort();

	r1 = run(k, max, buf, len, 0, &o1, &l1);
	r2 = run(k, max, buf, len, seed, &o2, &l2);
	if (r1 == DEC_OK && (r2 != DEC_OK || l1 != l2 ||
	    memcmp(o1, o2, l1) != 0))
		abort();
	if (k == DEC_IDENTITY && r1 == DEC_OK &&
	    (l1 != len || (len > 0 && memcmp(o1, buf, len) != 0)))
		abort();
	free(o1);
	free(o2);
	return 0;
}
