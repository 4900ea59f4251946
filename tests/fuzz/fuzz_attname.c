/*
 * supervisor/attname.c against a second reading of its rules that works
 * on an array of code points: the two must build the same file name, and
 * every name built must be a safe one.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistr.h>
#include <uninorm.h>

#include "attname.h"
#include "limits.h"
#include "validate.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

static size_t
enc_len(uint32_t cp)
{
	return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* The rules of attname.h in their order, one step at a time. */
static int
ref_make(const char *prefix, const uint8_t *name, size_t len, char *out,
    size_t outsz)
{
	uint8_t		*nfc, *tail;
	uint32_t	*cps;
	size_t		 nlen = 0, ncp = 0, i, o, start, bytes, tlen = 0;
	size_t		 plen = strlen(prefix);

	if (len == 0) {
		snprintf(out, outsz, "%sfile", prefix);
		return 0;
	}
	nfc = u8_normalize(UNINORM_NFC, name, len, NULL, &nlen);
	CHECK(nfc != NULL);
	cps = u8_to_u32(nfc, nlen, NULL, &ncp);
	CHECK(cps != NULL);
	free(nfc);

	for (i = 0; i < ncp; i++)
		if (cps[i] == '/' || cps[i] == '\\' || cps[i] < 0x20 ||
		    (cps[i] >= 0x7f && cps[i] <= 0x9f))
			cps[i] = '_';
	for (i = 0; i < ncp && cps[i] == '.'; i++)
		;
	if (i > 0) {
		cps[0] = '_';
		for (o = 1; i < ncp; )
			cps[o++] = cps[i++];
		ncp = o;
	}
	start = ncp > ATTACH_NAME_TAIL ? ncp - ATTACH_NAME_TAIL : 0;
	for (;;) {
		for (bytes = 0, i = start; i < ncp; i++)
			bytes += enc_len(cps[i]);
		if (plen + bytes <= SAFE_NAME_MAX)
			break;
		start++;
	}
	tail = u32_to_u8(cps + start, ncp - start, NULL, &tlen);
	CHECK(tail != NULL && tlen == bytes);
	CHECK(plen + tlen < outsz);
	memcpy(out, prefix, plen);
	memcpy(out + plen, tail, tlen);
	out[plen + tlen] = '\0';
	free(tail);
	free(cps);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		 out[SAFE_NAME_MAX + 1], want[SAFE_NAME_MAX + 1];
	char		 id[ATTACH_MESSAGE_ID_MAX + 2], prefix[160];
	const char	*name;
	size_t		 idlen, namelen, units, i;
	unsigned	 index;
	int		 ref, r, ok;

	/* The message id validator on the raw bytes. */
	ok = size >= 1 && size <= ATTACH_MESSAGE_ID_MAX;
	for (i = 0; ok && i < size; i++)
		ok = (data[i] >= 'a' && data[i] <= 'z') ||
		    (data[i] >= 'A' && data[i] <= 'Z') ||
		    (data[i] >= '0' && data[i] <= '9') || data[i] == '_' ||
		    data[i] == '-';
	CHECK(attname_message_id_valid((const char *)data, size) == ok);

	/* Header: flags, a 4-byte index, an id length; the rest is id+name. */
	if (size < 6)
		return 0;
	ref = data[0] & 1;
	index = (unsigned)data[1] << 24 | (unsigned)data[2] << 16 |
	    (unsigned)data[3] << 8 | data[4];
	idlen = data[5] % (ATTACH_MESSAGE_ID_MAX + 2);
	if (data[0] & 2) {
		/* A valid id of that length, so the name rules get the work. */
		memset(id, 'i', sizeof(id));
		idlen = idlen == 0 ? 1 : idlen > ATTACH_MESSAGE_ID_MAX ?
		    ATTACH_MESSAGE_ID_MAX : idlen;
		name = (const char *)data + 6;
		namelen = size - 6;
	} else {
		/* Any bytes, one past the longest id included. */
		if (idlen > size - 6)
			idlen = size - 6;
		memcpy(id, data + 6, idlen);
		name = (const char *)data + 6 + idlen;
		namelen = size - 6 - idlen;
	}
	id[idlen] = '\0';

	r = attname_make(id, ref, index, name, namelen, out, sizeof(out));
	/* An id is a C string: a NUL inside it ends it. */
	ok = attname_message_id_valid(id, strlen(id)) &&
	    utf8_utf16_len(name, namelen, &units) == 0;
	if (!ok) {
		CHECK(r == -1 && out[0] == '\0');
		return 0;
	}
	CHECK(r == 0);
	CHECK(valid_safe_name(out, strlen(out)));
	CHECK(strlen(out) <= SAFE_NAME_MAX);

	snprintf(prefix, sizeof(prefix), ref ? "%s-ref-%u-" : "%s-%u-", id,
	    index);
	CHECK(ref_make(prefix, (const uint8_t *)name, namelen, want,
	    sizeof(want)) == 0);
	CHECK(strcmp(out, want) == 0);

	/* Exactly enough room, then one byte short. */
	CHECK(attname_make(id, ref, index, name, namelen, want,
	    strlen(out) + 1) == 0);
	CHECK(strcmp(out, want) == 0);
	CHECK(attname_make(id, ref, index, name, namelen, want,
	    strlen(out)) == -1);
	return 0;
}
