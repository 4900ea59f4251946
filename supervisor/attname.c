#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uninorm.h>

#include "attname.h"
#include "limits.h"
#include "validate.h"

int
attname_message_id_valid(const char *s, size_t len)
{
	size_t	 i;

	if (len < 1 || len > ATTACH_MESSAGE_ID_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

/* Length of the UTF-8 sequence led by b; the text was checked before. */
static size_t
seq_len(uint8_t b)
{
	if (b < 0x80)
		return 1;
	if (b < 0xe0)
		return 2;
	if (b < 0xf0)
		return 3;
	return 4;
}

static int
is_control(const uint8_t *p)
{
	/* U+0080-U+009F are C2 80 to C2 9F. */
	return p[0] < 0x20 || p[0] == 0x7f || (p[0] == 0xc2 && p[1] < 0xa0);
}

int
attname_make(const char *messageid, int ref, unsigned index,
    const char *name, size_t namelen, char *out, size_t outsz)
{
	const uint8_t	*src;
	uint8_t		*nfc = NULL, *p;
	size_t		 nlen = 0, i, k, o, start, cps, plen, tail, units;
	int		 n;

	if (out == NULL || outsz == 0)
		return -1;
	if (messageid == NULL || (namelen > 0 && name == NULL))
		goto fail;
	if (!attname_message_id_valid(messageid, strlen(messageid)))
		goto fail;
	if (utf8_utf16_len(name, namelen, &units) == -1)
		goto fail;
	n = snprintf(out, outsz, ref ? "%s-ref-%u-" : "%s-%u-", messageid,
	    index);
	if (n < 0 || (size_t)n >= outsz)
		goto fail;
	plen = (size_t)n;

	if (namelen == 0) {
		src = (const uint8_t *)"file";
		start = 0;
		tail = 4;
		goto done;
	}
	nfc = u8_normalize(UNINORM_NFC, (const uint8_t *)name, namelen, NULL,
	    &nlen);
	if (nfc == NULL)
		goto fail;
	p = nfc;

	/* Map in place: each replaced character shrinks to one byte. */
	for (i = 0, o = 0; i < nlen; i += k) {
		k = seq_len(p[i]);
		if (p[i] == '/' || p[i] == '\\' || is_control(p + i))
			p[o++] = '_';
		else {
			memmove(p + o, p + i, k);
			o += k;
		}
	}
	nlen = o;
	for (i = 0; i < nlen && p[i] == '.'; i++)
		;
	if (i > 0) {
		p[0] = '_';
		memmove(p + 1, p + i, nlen - i);
		nlen -= i - 1;
	}

	/*
	 * The last ATTACH_NAME_TAIL code points; fewer when the whole name
	 * would pass NAME_MAX, which counts bytes.
	 */
	start = nlen;
	for (cps = 0; start > 0 && cps < ATTACH_NAME_TAIL; cps++) {
		do {
			start--;
		} while (start > 0 && (p[start] & 0xc0) == 0x80);
	}
	tail = nlen - start;
	while (plen + tail > SAFE_NAME_MAX) {
		k = seq_len(p[start]);
		start += k;
		tail -= k;
	}
	src = p;

done:
	if (plen + tail >= outsz)
		goto fail;
	memcpy(out + plen, src + start, tail);
	out[plen + tail] = '\0';
	free(nfc);
	if (!valid_safe_name(out, plen + tail)) {
		out[0] = '\0';
		return -1;
	}
	return 0;

fail:
	free(nfc);
	out[0] = '\0';
	return -1;
}
