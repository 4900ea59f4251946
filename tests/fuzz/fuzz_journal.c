/*
 * The journal's native protocol (common/journal.c), both ways.  The input
 * is decoded as an entry as it is; then it is cut into values at its 0xff
 * bytes, each value encoded under a field name of its own and the entry
 * decoded again: every value must come back exactly, one field each, and
 * no value can make a field of its own ("\nRTSANDBOX_STATUS=..." included).
 * Each value is also escaped: the text must hold no control character and
 * be cut only at a whole escape.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

struct want {
	const uint8_t	*v[64];
	size_t		 len[64];
	int		 n, at;
};

static int
any(const char *name, size_t nlen, const uint8_t *v, size_t vlen, void *arg)
{
	CHECK(nlen > 0 && nlen <= JOURNAL_NAME_MAX && name[0] != '_');
	return 0;
}

static int
same(const char *name, size_t nlen, const uint8_t *v, size_t vlen, void *arg)
{
	struct want	*w = arg;
	char		 expect[16];

	CHECK(w->at < w->n);
	snprintf(expect, sizeof(expect), "F%d", w->at);
	CHECK(nlen == strlen(expect) && memcmp(name, expect, nlen) == 0);
	CHECK(vlen == w->len[w->at]);
	CHECK(vlen == 0 || memcmp(v, w->v[w->at], vlen) == 0);
	w->at++;
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t	 buf[JOURNAL_RECORD_MAX];
	static char	 esc[4096];
	struct want	 w;
	const uint8_t	*p = data, *end = data + size, *cut;
	size_t		 len = 0, taken, i;
	char		 name[16];

	(void)journal_decode(data, size, any, NULL);
	memset(&w, 0, sizeof(w));
	while (p <= end && w.n < 64) {
		cut = memchr(p, 0xff, (size_t)(end - p));
		if (cut == NULL)
			cut = end;
		snprintf(name, sizeof(name), "F%d", w.n);
		if (journal_encode(buf, sizeof(buf), &len, name, p,
		    (size_t)(cut - p)) == -1)
			break;
		w.v[w.n] = p;
		w.len[w.n++] = (size_t)(cut - p);
		taken = journal_escape(esc, 1 + (size_t)(cut - p) % sizeof(esc),
		    p, (size_t)(cut - p));
		CHECK(taken <= (size_t)(cut - p));
		for (i = 0; esc[i] != '\0'; i++)
			CHECK((unsigned char)esc[i] >= 0x20 && esc[i] != 0x7f);
		if (i > 0 && esc[i - 1] == '\\')
			CHECK(i >= 2 && esc[i - 2] == '\\');
		p = cut + 1;
	}
	CHECK(journal_decode(buf, len, same, &w) == 0);
	CHECK(w.at == w.n);
	return 0;
}
