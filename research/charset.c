/*
 * Character sets of fetched text.  UTF-8, windows-1252 (which the web
 * means by every ISO-8859-1 label) and UTF-16 are decoded here; the other
 * common ones through glibc converters loaded before the sandbox, since
 * loading one later would open files.  A label nobody knows is read as
 * UTF-8 with invalid bytes replaced.
 */
#include <errno.h>
#include <iconv.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "textint.h"
#include "validate.h"

#define REPLACEMENT	0xfffdu

/* The converters text_init() loads, by glibc name. */
static const char *const cs_iconv_names[] = {
	"WINDOWS-1250", "WINDOWS-1251", "WINDOWS-1253", "WINDOWS-1254",
	"WINDOWS-1255", "WINDOWS-1256", "WINDOWS-1257", "WINDOWS-1258",
	"CP874", "ISO-8859-2", "ISO-8859-3", "ISO-8859-4", "ISO-8859-5",
	"ISO-8859-6", "ISO-8859-7", "ISO-8859-8", "ISO-8859-10",
	"ISO-8859-13", "ISO-8859-14", "ISO-8859-15", "ISO-8859-16",
	"KOI8-R", "KOI8-U", "MACINTOSH", "IBM866", "CP932", "EUC-JP",
	"ISO-2022-JP", "GB18030", "BIG5-HKSCS", "UHC",
};
#define CS_NICONV	(sizeof(cs_iconv_names) / sizeof(cs_iconv_names[0]))
static iconv_t	 cs_iconv[CS_NICONV];
static int	 cs_loaded;

/* The labels of the WHATWG Encoding standard, and a few more in use. */
struct cs_label {
	const char	*cl_label;
	enum cs		 cl_kind;
	const char	*cl_iconv;
};

static const struct cs_label cs_labels[] = {
	{ "utf-8", CS_UTF8, NULL },
	{ "utf8", CS_UTF8, NULL },
	{ "unicode-1-1-utf-8", CS_UTF8, NULL },
	{ "unicode11utf8", CS_UTF8, NULL },
	{ "unicode20utf8", CS_UTF8, NULL },
	{ "x-unicode20utf8", CS_UTF8, NULL },
	{ "windows-1252", CS_CP1252, NULL },
	{ "cp1252", CS_CP1252, NULL },
	{ "x-cp1252", CS_CP1252, NULL },
	{ "iso-8859-1", CS_CP1252, NULL },
	{ "iso8859-1", CS_CP1252, NULL },
	{ "iso88591", CS_CP1252, NULL },
	{ "iso_8859-1", CS_CP1252, NULL },
	{ "iso_8859-1:1987", CS_CP1252, NULL },
	{ "latin1", CS_CP1252, NULL },
	{ "l1", CS_CP1252, NULL },
	{ "ascii", CS_CP1252, NULL },
	{ "us-ascii", CS_CP1252, NULL },
	{ "ansi_x3.4-1968", CS_CP1252, NULL },
	{ "cp819", CS_CP1252, NULL },
	{ "ibm819", CS_CP1252, NULL },
	{ "iso-ir-100", CS_CP1252, NULL },
	{ "csisolatin1", CS_CP1252, NULL },
	{ "utf-16le", CS_UTF16LE, NULL },
	{ "utf-16", CS_UTF16LE, NULL },
	{ "ucs-2", CS_UTF16LE, NULL },
	{ "unicode", CS_UTF16LE, NULL },
	{ "csunicode", CS_UTF16LE, NULL },
	{ "iso-10646-ucs-2", CS_UTF16LE, NULL },
	{ "unicodefeff", CS_UTF16LE, NULL },
	{ "utf-16be", CS_UTF16BE, NULL },
	{ "unicodefffe", CS_UTF16BE, NULL },
	{ "windows-1250", CS_ICONV, "WINDOWS-1250" },
	{ "cp1250", CS_ICONV, "WINDOWS-1250" },
	{ "x-cp1250", CS_ICONV, "WINDOWS-1250" },
	{ "windows-1251", CS_ICONV, "WINDOWS-1251" },
	{ "cp1251", CS_ICONV, "WINDOWS-1251" },
	{ "x-cp1251", CS_ICONV, "WINDOWS-1251" },
	{ "windows-1253", CS_ICONV, "WINDOWS-1253" },
	{ "cp1253", CS_ICONV, "WINDOWS-1253" },
	{ "x-cp1253", CS_ICONV, "WINDOWS-1253" },
	{ "windows-1254", CS_ICONV, "WINDOWS-1254" },
	{ "cp1254", CS_ICONV, "WINDOWS-1254" },
	{ "x-cp1254", CS_ICONV, "WINDOWS-1254" },
	{ "iso-8859-9", CS_ICONV, "WINDOWS-1254" },
	{ "iso8859-9", CS_ICONV, "WINDOWS-1254" },
	{ "iso_8859-9", CS_ICONV, "WINDOWS-1254" },
	{ "latin5", CS_ICONV, "WINDOWS-1254" },
	{ "l5", CS_ICONV, "WINDOWS-1254" },
	{ "windows-1255", CS_ICONV, "WINDOWS-1255" },
	{ "cp1255", CS_ICONV, "WINDOWS-1255" },
	{ "x-cp1255", CS_ICONV, "WINDOWS-1255" },
	{ "windows-1256", CS_ICONV, "WINDOWS-1256" },
	{ "cp1256", CS_ICONV, "WINDOWS-1256" },
	{ "x-cp1256", CS_ICONV, "WINDOWS-1256" },
	{ "windows-1257", CS_ICONV, "WINDOWS-1257" },
	{ "cp1257", CS_ICONV, "WINDOWS-1257" },
	{ "x-cp1257", CS_ICONV, "WINDOWS-1257" },
	{ "windows-1258", CS_ICONV, "WINDOWS-1258" },
	{ "cp1258", CS_ICONV, "WINDOWS-1258" },
	{ "x-cp1258", CS_ICONV, "WINDOWS-1258" },
	{ "windows-874", CS_ICONV, "CP874" },
	{ "dos-874", CS_ICONV, "CP874" },
	{ "tis-620", CS_ICONV, "CP874" },
	{ "iso-8859-11", CS_ICONV, "CP874" },
	{ "iso8859-11", CS_ICONV, "CP874" },
	{ "iso-8859-2", CS_ICONV, "ISO-8859-2" },
	{ "iso8859-2", CS_ICONV, "ISO-8859-2" },
	{ "iso_8859-2", CS_ICONV, "ISO-8859-2" },
	{ "latin2", CS_ICONV, "ISO-8859-2" },
	{ "l2", CS_ICONV, "ISO-8859-2" },
	{ "iso-8859-3", CS_ICONV, "ISO-8859-3" },
	{ "iso8859-3", CS_ICONV, "ISO-8859-3" },
	{ "latin3", CS_ICONV, "ISO-8859-3" },
	{ "l3", CS_ICONV, "ISO-8859-3" },
	{ "iso-8859-4", CS_ICONV, "ISO-8859-4" },
	{ "iso8859-4", CS_ICONV, "ISO-8859-4" },
	{ "latin4", CS_ICONV, "ISO-8859-4" },
	{ "l4", CS_ICONV, "ISO-8859-4" },
	{ "iso-8859-5", CS_ICONV, "ISO-8859-5" },
	{ "iso8859-5", CS_ICONV, "ISO-8859-5" },
	{ "cyrillic", CS_ICONV, "ISO-8859-5" },
	{ "iso-8859-6", CS_ICONV, "ISO-8859-6" },
	{ "iso8859-6", CS_ICONV, "ISO-8859-6" },
	{ "arabic", CS_ICONV, "ISO-8859-6" },
	{ "iso-8859-7", CS_ICONV, "ISO-8859-7" },
	{ "iso8859-7", CS_ICONV, "ISO-8859-7" },
	{ "greek", CS_ICONV, "ISO-8859-7" },
	{ "greek8", CS_ICONV, "ISO-8859-7" },
	{ "iso-8859-8", CS_ICONV, "ISO-8859-8" },
	{ "iso8859-8", CS_ICONV, "ISO-8859-8" },
	{ "iso-8859-8-i", CS_ICONV, "ISO-8859-8" },
	{ "hebrew", CS_ICONV, "ISO-8859-8" },
	{ "iso-8859-10", CS_ICONV, "ISO-8859-10" },
	{ "iso8859-10", CS_ICONV, "ISO-8859-10" },
	{ "latin6", CS_ICONV, "ISO-8859-10" },
	{ "l6", CS_ICONV, "ISO-8859-10" },
	{ "iso-8859-13", CS_ICONV, "ISO-8859-13" },
	{ "iso8859-13", CS_ICONV, "ISO-8859-13" },
	{ "iso-8859-14", CS_ICONV, "ISO-8859-14" },
	{ "iso8859-14", CS_ICONV, "ISO-8859-14" },
	{ "iso-8859-15", CS_ICONV, "ISO-8859-15" },
	{ "iso8859-15", CS_ICONV, "ISO-8859-15" },
	{ "iso_8859-15", CS_ICONV, "ISO-8859-15" },
	{ "latin9", CS_ICONV, "ISO-8859-15" },
	{ "l9", CS_ICONV, "ISO-8859-15" },
	{ "iso-8859-16", CS_ICONV, "ISO-8859-16" },
	{ "koi8-r", CS_ICONV, "KOI8-R" },
	{ "koi8_r", CS_ICONV, "KOI8-R" },
	{ "koi8", CS_ICONV, "KOI8-R" },
	{ "koi", CS_ICONV, "KOI8-R" },
	{ "cskoi8r", CS_ICONV, "KOI8-R" },
	{ "koi8-u", CS_ICONV, "KOI8-U" },
	{ "koi8-ru", CS_ICONV, "KOI8-U" },
	{ "macintosh", CS_ICONV, "MACINTOSH" },
	{ "mac", CS_ICONV, "MACINTOSH" },
	{ "x-mac-roman", CS_ICONV, "MACINTOSH" },
	{ "csmacintosh", CS_ICONV, "MACINTOSH" },
	{ "ibm866", CS_ICONV, "IBM866" },
	{ "cp866", CS_ICONV, "IBM866" },
	{ "866", CS_ICONV, "IBM866" },
	{ "csibm866", CS_ICONV, "IBM866" },
	{ "shift_jis", CS_ICONV, "CP932" },
	{ "shift-jis", CS_ICONV, "CP932" },
	{ "sjis", CS_ICONV, "CP932" },
	{ "ms_kanji", CS_ICONV, "CP932" },
	{ "ms932", CS_ICONV, "CP932" },
	{ "windows-31j", CS_ICONV, "CP932" },
	{ "x-sjis", CS_ICONV, "CP932" },
	{ "csshiftjis", CS_ICONV, "CP932" },
	{ "euc-jp", CS_ICONV, "EUC-JP" },
	{ "x-euc-jp", CS_ICONV, "EUC-JP" },
	{ "cseucpkdfmtjapanese", CS_ICONV, "EUC-JP" },
	{ "iso-2022-jp", CS_ICONV, "ISO-2022-JP" },
	{ "csiso2022jp", CS_ICONV, "ISO-2022-JP" },
	{ "gb18030", CS_ICONV, "GB18030" },
	{ "gbk", CS_ICONV, "GB18030" },
	{ "gb2312", CS_ICONV, "GB18030" },
	{ "gb_2312", CS_ICONV, "GB18030" },
	{ "gb_2312-80", CS_ICONV, "GB18030" },
	{ "chinese", CS_ICONV, "GB18030" },
	{ "x-gbk", CS_ICONV, "GB18030" },
	{ "csgb2312", CS_ICONV, "GB18030" },
	{ "iso-ir-58", CS_ICONV, "GB18030" },
	{ "csiso58gb231280", CS_ICONV, "GB18030" },
	{ "big5", CS_ICONV, "BIG5-HKSCS" },
	{ "big5-hkscs", CS_ICONV, "BIG5-HKSCS" },
	{ "cn-big5", CS_ICONV, "BIG5-HKSCS" },
	{ "x-x-big5", CS_ICONV, "BIG5-HKSCS" },
	{ "csbig5", CS_ICONV, "BIG5-HKSCS" },
	{ "euc-kr", CS_ICONV, "UHC" },
	{ "ks_c_5601-1987", CS_ICONV, "UHC" },
	{ "ks_c_5601-1989", CS_ICONV, "UHC" },
	{ "ksc5601", CS_ICONV, "UHC" },
	{ "ksc_5601", CS_ICONV, "UHC" },
	{ "windows-949", CS_ICONV, "UHC" },
	{ "korean", CS_ICONV, "UHC" },
	{ "cseuckr", CS_ICONV, "UHC" },
	{ "csksc56011987", CS_ICONV, "UHC" },
	{ "iso-ir-149", CS_ICONV, "UHC" },
};

/* windows-1252 0x80-0x9f; the rest is ISO-8859-1. */
static const uint16_t cp1252_high[32] = {
	0x20ac, 0x0081, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021,
	0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008d, 0x017d, 0x008f,
	0x0090, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
	0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0x009d, 0x017e, 0x0178,
};

void
charset_preload(void)
{
	size_t	 i;

	if (cs_loaded)
		return;
	for (i = 0; i < CS_NICONV; i++)
		if ((cs_iconv[i] = iconv_open("UTF-8", cs_iconv_names[i])) ==
		    (iconv_t)-1)
			log_debug("%s: no converter from %s", __func__,
			    cs_iconv_names[i]);
	cs_loaded = 1;
}

int
charset_lookup(const char *label, size_t len, struct charset *cs)
{
	size_t	 i, k;

	/* Labels are compared without surrounding white space or quotes. */
	while (len > 0 && (*label == ' ' || *label == '\t' || *label == '"' ||
	    *label == '\''))
		label++, len--;
	while (len > 0 && (label[len - 1] == ' ' || label[len - 1] == '\t' ||
	    label[len - 1] == '"' || label[len - 1] == '\''))
		len--;
	for (i = 0; i < sizeof(cs_labels) / sizeof(cs_labels[0]); i++) {
		if (strlen(cs_labels[i].cl_label) != len ||
		    strncasecmp(cs_labels[i].cl_label, label, len) != 0)
			continue;
		cs->cs_kind = cs_labels[i].cl_kind;
		cs->cs_iconv = -1;
		if (cs->cs_kind != CS_ICONV)
			return 0;
		for (k = 0; k < CS_NICONV; k++)
			if (strcmp(cs_iconv_names[k], cs_labels[i].cl_iconv) ==
			    0 && cs_loaded && cs_iconv[k] != (iconv_t)-1) {
				cs->cs_iconv = k;
				return 0;
			}
		return -1;
	}
	return -1;
}

int
charset_bom(const uint8_t *buf, size_t len, struct charset *cs)
{
	cs->cs_iconv = -1;
	if (len >= 3 && buf[0] == 0xef && buf[1] == 0xbb && buf[2] == 0xbf)
		cs->cs_kind = CS_UTF8;
	else if (len >= 2 && buf[0] == 0xfe && buf[1] == 0xff)
		cs->cs_kind = CS_UTF16BE;
	else if (len >= 2 && buf[0] == 0xff && buf[1] == 0xfe)
		cs->cs_kind = CS_UTF16LE;
	else
		return -1;
	return 0;
}

size_t
utf8_decode(const uint8_t *s, size_t len, uint32_t *cp)
{
	size_t	 i = 0;

	if (utf8_next(s, len, &i, cp) == -1) {
		*cp = REPLACEMENT;
		return 1;
	}
	return i;
}

size_t
utf8_encode(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = 0xc0 | (cp >> 6);
		out[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = 0xe0 | (cp >> 12);
		out[1] = 0x80 | ((cp >> 6) & 0x3f);
		out[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	out[0] = 0xf0 | (cp >> 18);
	out[1] = 0x80 | ((cp >> 12) & 0x3f);
	out[2] = 0x80 | ((cp >> 6) & 0x3f);
	out[3] = 0x80 | (cp & 0x3f);
	return 4;
}

/* Room for n more bytes; -1 when out of memory. */
static int
grow(char **s, size_t *cap, size_t len, size_t n)
{
	char	*p;
	size_t	 ncap;

	if (len + n + 1 <= *cap)
		return 0;
	ncap = *cap * 2 > len + n + 1 ? *cap * 2 : len + n + 1;
	if ((p = realloc(*s, ncap)) == NULL)
		return -1;
	*s = p;
	*cap = ncap;
	return 0;
}

/* One code point into a buffer made big enough beforehand. */
static size_t
put_cp(char *out, uint32_t cp)
{
	if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		cp = REPLACEMENT;
	return utf8_encode(cp, out);
}

/* UTF-8 made valid: at most 3 bytes out per byte in. */
static char *
decode_utf8(const uint8_t *buf, size_t len, size_t *outlen)
{
	char		*out;
	size_t		 i = 0, n = 0;
	uint32_t	 cp;

	if (len >= 3 && buf[0] == 0xef && buf[1] == 0xbb && buf[2] == 0xbf)
		i = 3;
	if (len > (SIZE_MAX - 1) / 3 || (out = malloc(len * 3 + 1)) == NULL)
		return NULL;
	while (i < len) {
		if (buf[i] != 0 && buf[i] < 0x80) {
			out[n++] = buf[i++];
			continue;
		}
		i += utf8_decode(buf + i, len - i, &cp);
		n += put_cp(out + n, cp);
	}
	out[n] = '\0';
	*outlen = n;
	return out;
}

static char *
decode_cp1252(const uint8_t *buf, size_t len, size_t *outlen)
{
	char		*out;
	size_t		 i, n = 0;
	uint32_t	 cp;

	if (len > (SIZE_MAX - 1) / 3 || (out = malloc(len * 3 + 1)) == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		cp = buf[i];
		if (cp >= 0x80 && cp < 0xa0)
			cp = cp1252_high[cp - 0x80];
		n += put_cp(out + n, cp);
	}
	out[n] = '\0';
	*outlen = n;
	return out;
}

static char *
decode_utf16(const uint8_t *buf, size_t len, int be, size_t *outlen)
{
	char		*out;
	size_t		 i = 0, n = 0;
	uint32_t	 u, u2;

	if (len >= 2 && ((be && buf[0] == 0xfe && buf[1] == 0xff) ||
	    (!be && buf[0] == 0xff && buf[1] == 0xfe)))
		i = 2;
	/* A unit gives at most 3 bytes, a pair 4, a stray byte 3. */
	if (len > (SIZE_MAX - 4) / 2 || (out = malloc(len * 2 + 4)) == NULL)
		return NULL;
	while (i + 1 < len) {
		u = be ? (buf[i] << 8 | buf[i + 1]) :
		    (buf[i + 1] << 8 | buf[i]);
		i += 2;
		if (u >= 0xd800 && u <= 0xdbff && i + 1 < len) {
			u2 = be ? (buf[i] << 8 | buf[i + 1]) :
			    (buf[i + 1] << 8 | buf[i]);
			if (u2 >= 0xdc00 && u2 <= 0xdfff) {
				i += 2;
				u = 0x10000 + ((u - 0xd800) << 10) +
				    (u2 - 0xdc00);
			}
		}
		n += put_cp(out + n, u);
	}
	if (i < len)
		n += put_cp(out + n, REPLACEMENT);
	out[n] = '\0';
	*outlen = n;
	return out;
}

/* Through a loaded converter; what it cannot read becomes U+FFFD. */
static char *
decode_iconv(iconv_t cd, const uint8_t *buf, size_t len, size_t *outlen)
{
	char	*out = NULL, *in = (char *)buf, *o, *clean;
	size_t	 cap, n = 0, inleft = len, outleft, r;

	cap = len < SIZE_MAX / 4 - 64 ? len * 3 + 64 : SIZE_MAX / 4;
	if ((out = malloc(cap)) == NULL)
		return NULL;
	iconv(cd, NULL, NULL, NULL, NULL);
	for (;;) {
		o = out + n;
		outleft = cap - n - 1;
		r = iconv(cd, inleft > 0 ? &in : NULL, &inleft, &o, &outleft);
		n = o - out;
		if (r != (size_t)-1) {
			if (inleft == 0)
				break;
			continue;
		}
		if (errno == E2BIG) {
			if (grow(&out, &cap, n, cap) == -1)
				goto fail;
			continue;
		}
		if (grow(&out, &cap, n, 3) == -1)
			goto fail;
		n += utf8_encode(REPLACEMENT, out + n);
		if (errno != EILSEQ || inleft == 0)
			break;		/* EINVAL: cut short at the end */
		in++;
		inleft--;
	}
	/* The converter's UTF-8 is valid; NUL still has to go. */
	clean = decode_utf8((const uint8_t *)out, n, outlen);
	free(out);
	return clean;
 fail:
	free(out);
	return NULL;
}

char *
charset_decode(const struct charset *cs, const uint8_t *buf, size_t len,
    size_t *outlen)
{
	switch (cs->cs_kind) {
	case CS_CP1252:
		return decode_cp1252(buf, len, outlen);
	case CS_UTF16LE:
		return decode_utf16(buf, len, 0, outlen);
	case CS_UTF16BE:
		return decode_utf16(buf, len, 1, outlen);
	case CS_ICONV:
		if (cs_loaded && cs->cs_iconv >= 0 &&
		    (size_t)cs->cs_iconv < CS_NICONV &&
		    cs_iconv[cs->cs_iconv] != (iconv_t)-1)
			return decode_iconv(cs_iconv[cs->cs_iconv], buf, len,
			    outlen);
		/* FALLTHROUGH */
	case CS_UTF8:
	default:
		return decode_utf8(buf, len, outlen);
	}
}
