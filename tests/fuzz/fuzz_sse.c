/*
 * Egress's watch for an error event (egress/sse.c) and the credential taken
 * out of an upstream's words (egress/audit.c).  The first byte chooses where
 * the stream is cut into pieces; the stream fed whole and fed in pieces
 * must give the same answer and the same data, which is bounded.  Then the
 * input's first 8 bytes (when printable) are taken as a secret and the rest
 * as what an upstream said: the result, however cut, never holds the
 * secret raw.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "sse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sse_watch	 a, b;
	static char		 out[AUDIT_ERROR_MAX + 1];
	size_t			 step, i, n;
	int			 ra, rb = 0;

	if (size < 1)
		return 0;
	step = 1 + data[0] % 16;
	data++;
	size--;
	sse_watch_init(&a);
	ra = sse_watch_feed(&a, data, size);
	sse_watch_init(&b);
	for (i = 0; i < size; i += n) {
		n = size - i < step ? size - i : step;
		rb = sse_watch_feed(&b, data + i, n);
	}
	CHECK(ra == rb);
	CHECK(a.sw_datalen <= SSE_DATA_MAX);
	if (ra) {
		CHECK(a.sw_datalen == b.sw_datalen);
		CHECK(memcmp(a.sw_data, b.sw_data, a.sw_datalen) == 0);
	}
	if (size > 8) {
		for (i = 0; i < 8; i++)
			if (data[i] < 0x21 || data[i] > 0x7e)
				return 0;
		/* the marker itself cannot be told from such a secret */
		if (memmem("[redacted]", 10, data, 8) != NULL)
			return 0;
		(void)audit_redact((const char *)data, 8,
		    (const char *)data + 8, size - 8, data[0] & 1, out,
		    sizeof(out));
		CHECK(strlen(out) < sizeof(out));
		for (i = 0; i + 8 <= strlen(out); i++)
			CHECK(memcmp(out + i, data, 8) != 0);
	}
	return 0;
}
