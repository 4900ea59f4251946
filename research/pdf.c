/*
 * The text of a PDF's page content streams, without external programs: the
 * streams are found by their keywords (uncompressed or FlateDecode; other
 * filters, images and fonts are skipped), and inside BT ... ET the strings
 * shown by Tj, TJ, ' and " are written out, literal and hexadecimal, read
 * as windows-1252 or as UTF-16BE after a byte-order mark.
 *
 * XXX No ToUnicode maps: text in fonts with their own encodings (Identity-H
 * and the like) does not come out.  Encrypted files are not decrypted (an
 * empty user password is common, but RC4 and AES are not worth it here).
 */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "limits.h"
#include "textint.h"
#include "validate.h"

/* Streams looked at, bytes one stream inflates to, and in all. */
#define PDF_STREAMS_MAX		20000
#define PDF_STREAM_MAX		(16u * MIB)
#define PDF_INFLATE_MAX		(64u * MIB)
/* How far before "stream" its dictionary may start. */
#define PDF_DICT_MAX		4096
/* Bytes of one string, and text waiting for its operator. */
#define PDF_STRING_MAX		65536
#define PDF_PENDING_MAX		65536
/* A TJ offset at least this far (thousandths of an em) is a word gap. */
#define PDF_TJ_GAP		(-200.0)

struct pdfscan {
	struct tbuf	*ps_tb;
	int		 ps_in_text;
	int		 ps_in_array;
	double		 ps_nums[6];
	int		 ps_nnum;
	double		 ps_tm_y;
	int		 ps_have_tm;
	char		*ps_pending;	/* strings before their operator */
	size_t		 ps_plen;
	uint8_t		*ps_str;	/* one string's bytes */
	size_t		 ps_slen;
};

static int
pdf_space(uint8_t c)
{
	return c == 0 || c == '\t' || c == '\n' || c == '\f' || c == '\r' ||
	    c == ' ';
}

static int
pdf_delim(uint8_t c)
{
	return c == '(' || c == ')' || c == '<' || c == '>' || c == '[' ||
	    c == ']' || c == '{' || c == '}' || c == '/' || c == '%';
}

static int
pdf_regular(uint8_t c)
{
	return !pdf_space(c) && !pdf_delim(c);
}

static void
pending_add(struct pdfscan *ps, const char *s, size_t n)
{
	if (ps->ps_plen + n > PDF_PENDING_MAX)
		return;
	memcpy(ps->ps_pending + ps->ps_plen, s, n);
	ps->ps_plen += n;
}

static void
pending_cp(struct pdfscan *ps, uint32_t cp)
{
	char	 b[4];

	if (cp == 0 || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		cp = 0xfffd;
	pending_add(ps, b, utf8_encode(cp, b));
}

/* A string's bytes as text: UTF-16BE after FE FF, else windows-1252.
 * Strings of two-byte glyph codes (NUL bytes) or mostly control bytes
 * are no text. */
static void
string_done(struct pdfscan *ps)
{
	static const uint16_t	 high[32] = {
		0x20ac, 0, 0x201a, 0x0192, 0x201e, 0x2026, 0x2020, 0x2021,
		0x02c6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017d, 0,
		0, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
		0x02dc, 0x2122, 0x0161, 0x203a, 0x0153, 0, 0x017e, 0x0178,
	};
	const uint8_t	*s = ps->ps_str;
	size_t		 n = ps->ps_slen, i, ctl = 0;
	uint32_t	 u, u2;

	if (n >= 2 && s[0] == 0xfe && s[1] == 0xff) {
		for (i = 2; i + 1 < n; i += 2) {
			u = s[i] << 8 | s[i + 1];
			if (u >= 0xd800 && u <= 0xdbff && i + 3 < n) {
				u2 = s[i + 2] << 8 | s[i + 3];
				if (u2 >= 0xdc00 && u2 <= 0xdfff) {
					u = 0x10000 + ((u - 0xd800) << 10) +
					    (u2 - 0xdc00);
					i += 2;
				}
			}
			pending_cp(ps, u < 0x20 ? ' ' : u);
		}
		return;
	}
	if (memchr(s, 0, n) != NULL)
		return;
	for (i = 0; i < n; i++)
		if (s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			ctl++;
	if (ctl * 4 > n)
		return;
	for (i = 0; i < n; i++) {
		u = s[i];
		if (u < 0x20)
			u = ' ';
		else if (u >= 0x80 && u < 0xa0)
			u = high[u - 0x80];
		if (u != 0)
			pending_cp(ps, u);
	}
}

static void
str_byte(struct pdfscan *ps, uint8_t c)
{
	if (ps->ps_slen < PDF_STRING_MAX)
		ps->ps_str[ps->ps_slen++] = c;
}

/* A literal string from just after its '('; returns where it ends. */
static size_t
literal_string(struct pdfscan *ps, const uint8_t *d, size_t n, size_t i)
{
	int	 depth = 1, k, v;

	ps->ps_slen = 0;
	while (i < n) {
		uint8_t c = d[i++];

		if (c == '(')
			depth++;
		else if (c == ')' && --depth == 0)
			break;
		if (c != '\\') {
			str_byte(ps, c);
			continue;
		}
		if (i >= n)
			break;
		c = d[i++];
		switch (c) {
		case 'n': str_byte(ps, '\n'); break;
		case 'r': str_byte(ps, '\r'); break;
		case 't': str_byte(ps, '\t'); break;
		case 'b': str_byte(ps, '\b'); break;
		case 'f': str_byte(ps, '\f'); break;
		case '\r':
			if (i < n && d[i] == '\n')
				i++;
			break;
		case '\n':
			break;
		default:
			if (c >= '0' && c <= '7') {
				v = c - '0';
				for (k = 0; k < 2 && i < n && d[i] >= '0' &&
				    d[i] <= '7'; k++)
					v = v * 8 + d[i++] - '0';
				str_byte(ps, v & 0xff);
			} else
				str_byte(ps, c);
		}
	}
	string_done(ps);
	return i;
}

/* A hexadecimal string from just after its '<'. */
static size_t
hex_string(struct pdfscan *ps, const uint8_t *d, size_t n, size_t i)
{
	int	 hi = -1, v;

	ps->ps_slen = 0;
	for (; i < n && d[i] != '>'; i++) {
		if ((v = hex_digit(d[i])) < 0)
			continue;
		if (hi < 0)
			hi = v;
		else {
			str_byte(ps, hi << 4 | v);
			hi = -1;
		}
	}
	if (hi >= 0)
		str_byte(ps, hi << 4);
	string_done(ps);
	return i < n ? i + 1 : i;
}

static size_t
number(struct pdfscan *ps, const uint8_t *d, size_t n, size_t i)
{
	double	 v = 0, scale = 0;
	int	 neg = 0, k;

	if (d[i] == '+' || d[i] == '-')
		neg = d[i++] == '-';
	for (; i < n && ((d[i] >= '0' && d[i] <= '9') || d[i] == '.'); i++) {
		if (d[i] == '.') {
			if (scale == 0)
				scale = 1;
			continue;
		}
		v = v * 10 + (d[i] - '0');
		if (scale != 0)
			scale *= 10;
	}
	if (scale != 0)
		v /= scale;
	if (neg)
		v = -v;
	if (ps->ps_in_array) {
		if (v <= PDF_TJ_GAP)
			pending_add(ps, " ", 1);
		return i;
	}
	if (ps->ps_nnum == 6) {
		for (k = 0; k < 5; k++)
			ps->ps_nums[k] = ps->ps_nums[k + 1];
		ps->ps_nnum = 5;
	}
	ps->ps_nums[ps->ps_nnum++] = v;
	return i;
}

/* Inline image data after ID: up to EI between white space. */
static size_t
skip_inline_image(const uint8_t *d, size_t n, size_t i)
{
	for (; i + 2 <= n; i++)
		if (d[i] == 'E' && d[i + 1] == 'I' && i > 0 &&
		    pdf_space(d[i - 1]) && (i + 2 == n || pdf_space(d[i + 2])))
			return i + 2;
	return n;
}

static void
show(struct pdfscan *ps)
{
	if (ps->ps_in_text && ps->ps_plen > 0)
		tb_text(ps->ps_tb, ps->ps_pending, ps->ps_plen);
}

static void
operator(struct pdfscan *ps, const uint8_t *op, size_t len)
{
	struct tbuf	*tb = ps->ps_tb;
	double		 y;

#define OP(s)	(len == sizeof(s) - 1 && memcmp(op, s, len) == 0)
	if (OP("BT"))
		ps->ps_in_text = 1;
	else if (OP("ET")) {
		ps->ps_in_text = 0;
		tb_space(tb);
	} else if (!ps->ps_in_text)
		;
	else if (OP("Tj") || OP("TJ"))
		show(ps);
	else if (OP("'") || OP("\"")) {
		tb_break(tb, 1);
		show(ps);
	} else if (OP("T*"))
		tb_break(tb, 1);
	else if (OP("Td") || OP("TD")) {
		if (ps->ps_nnum >= 2 && ps->ps_nums[ps->ps_nnum - 1] != 0)
			tb_break(tb, 1);
		else
			tb_space(tb);
	} else if (OP("Tm") && ps->ps_nnum >= 6) {
		y = ps->ps_nums[5];
		if (ps->ps_have_tm && y != ps->ps_tm_y)
			tb_break(tb, 1);
		else
			tb_space(tb);
		ps->ps_tm_y = y;
		ps->ps_have_tm = 1;
	}
#undef OP
	ps->ps_plen = 0;
	ps->ps_nnum = 0;
}

static void
content(struct pdfscan *ps, const uint8_t *d, size_t n)
{
	size_t	 i = 0, k;

	ps->ps_in_text = ps->ps_in_array = 0;
	ps->ps_plen = 0;
	ps->ps_nnum = 0;
	while (i < n && !ps->ps_tb->tb_full) {
		uint8_t c = d[i];

		if (pdf_space(c)) {
			i++;
		} else if (c == '%') {
			while (i < n && d[i] != '\n' && d[i] != '\r')
				i++;
		} else if (c == '(') {
			i = literal_string(ps, d, n, i + 1);
		} else if (c == '<') {
			if (i + 1 < n && d[i + 1] == '<')
				i += 2;
			else
				i = hex_string(ps, d, n, i + 1);
		} else if (c == '[') {
			ps->ps_in_array = 1;
			i++;
		} else if (c == ']') {
			ps->ps_in_array = 0;
			i++;
		} else if (c == '/') {
			for (i++; i < n && pdf_regular(d[i]); i++)
				;
		} else if ((c >= '0' && c <= '9') || c == '+' || c == '-' ||
		    c == '.') {
			i = number(ps, d, n, i);
		} else if (pdf_delim(c)) {
			i++;
		} else {
			for (k = i; k < n && pdf_regular(d[k]); k++)
				;
			operator(ps, d + i, k - i);
			if (k - i == 2 && d[i] == 'I' && d[i + 1] == 'D')
				k = skip_inline_image(d, n, k);
			i = k;
		}
	}
}

/*
 * The file's streams.
 */

/* Is key in the dictionary text, followed by a delimiter? Returns where
 * its value starts, else NULL. */
static const uint8_t *
dict_key(const uint8_t *dict, size_t n, const char *key)
{
	size_t		 kl = strlen(key);
	const uint8_t	*p = dict, *e = dict + n;

	while ((p = memmem(p, e - p, key, kl)) != NULL) {
		p += kl;
		if (p == e || !pdf_regular(*p)) {
			while (p < e && pdf_space(*p))
				p++;
			return p;
		}
	}
	return NULL;
}

static int
dict_is(const uint8_t *dict, size_t n, const char *key, const char *value)
{
	const uint8_t	*v;
	size_t		 vl = strlen(value);

	return (v = dict_key(dict, n, key)) != NULL &&
	    (size_t)(dict + n - v) >= vl && memcmp(v, value, vl) == 0 &&
	    (v + vl == dict + n || !pdf_regular(v[vl]));
}

/* 0: no filter, 1: FlateDecode alone, -1: anything else. */
static int
dict_filter(const uint8_t *dict, size_t n)
{
	const uint8_t	*v, *e = dict + n;
	int		 names = 0, flate = 0;
	size_t		 k;

	if ((v = dict_key(dict, n, "/Filter")) == NULL)
		return 0;
	if (v < e && *v == '[')
		v++;
	else if (v < e && *v == '/')
		e = v + 1;	/* one name */
	else
		return -1;	/* an indirect reference, or nothing */
	for (; v < e && *v != ']'; v++) {
		if (*v != '/')
			continue;
		for (k = 1; v + k < dict + n && pdf_regular(v[k]); k++)
			;
		names++;
		if ((k == 12 && memcmp(v, "/FlateDecode", 12) == 0) ||
		    (k == 3 && memcmp(v, "/Fl", 3) == 0))
			flate++;
		v += k - 1;
	}
	if (names == 0)
		return 0;
	return names == 1 && flate == 1 ? 1 : -1;
}

static int
dict_skip(const uint8_t *dict, size_t n)
{
	const uint8_t	*p;

	if ((p = dict_key(dict, n, "/DecodeParms")) != NULL &&
	    dict_key(p, dict + n - p, "/Predictor") != NULL)
		return 1;
	return dict_is(dict, n, "/Subtype", "/Image") ||
	    dict_is(dict, n, "/Type", "/XRef") ||
	    dict_is(dict, n, "/Type", "/ObjStm") ||
	    dict_is(dict, n, "/Type", "/Metadata") ||
	    dict_is(dict, n, "/Type", "/EmbeddedFile") ||
	    dict_key(dict, n, "/Length1") != NULL ||
	    dict_key(dict, n, "/Length2") != NULL ||
	    dict_key(dict, n, "/Length3") != NULL ||
	    dict_is(dict, n, "/Subtype", "/Type1C") ||
	    dict_is(dict, n, "/Subtype", "/CIDFontType0C") ||
	    dict_is(dict, n, "/Subtype", "/OpenType");
}

/* Inflate at most max bytes; what decoded before an error is kept. */
static uint8_t *
inflate_stream(const uint8_t *in, size_t inlen, size_t max, size_t *outlen)
{
	z_stream	 z;
	uint8_t		*out = NULL, *p;
	size_t		 cap = 0, len = 0;
	int		 rc = Z_OK, raw;

	*outlen = 0;
	for (raw = 0; raw < 2; raw++) {
		memset(&z, 0, sizeof(z));
		if ((raw ? inflateInit2(&z, -15) : inflateInit(&z)) != Z_OK)
			return out;
		z.next_in = (Bytef *)in;
		z.avail_in = inlen > UINT32_MAX ? UINT32_MAX : inlen;
		len = 0;
		do {
			if (len == cap) {
				if (cap >= max)
					break;
				cap = cap == 0 ? 65536 : cap * 2;
				if (cap > max)
					cap = max;
				if ((p = realloc(out, cap)) == NULL) {
					inflateEnd(&z);
					*outlen = len;
					return out;
				}
				out = p;
			}
			z.next_out = out + len;
			z.avail_out = cap - len;
			rc = inflate(&z, Z_NO_FLUSH);
			len = cap - z.avail_out;
		} while (rc == Z_OK);
		inflateEnd(&z);
		/* A zlib header that is not there: try raw deflate once. */
		if (len > 0 || rc != Z_DATA_ERROR)
			break;
	}
	*outlen = len;
	return out;
}

/* The dictionary ending in ">>" at end (exclusive): where it starts. */
static const uint8_t *
dict_start(const uint8_t *buf, const uint8_t *end)
{
	const uint8_t	*p = end - 2, *lim;
	int		 depth = 0;

	lim = end - buf > PDF_DICT_MAX ? end - PDF_DICT_MAX : buf;
	while (p > lim) {
		if (p[0] == '>' && p[1] == '>') {
			depth++;
			p--;
		} else if (p[0] == '<' && p[1] == '<') {
			if (--depth == 0)
				return p;
			p--;
		}
		p--;
	}
	return NULL;
}

int
pdf_to_text(struct tbuf *tb, const uint8_t *buf, size_t len)
{
	struct pdfscan	 ps;
	const uint8_t	*p, *e, *dict, *data, *dend;
	uint8_t		*inflated;
	size_t		 pos = 0, j, total = 0, n;
	unsigned	 streams = 0;
	int		 filter;

	/* Strings in an encrypted file are ciphertext. */
	if (memmem(buf, len, "/Encrypt", 8) != NULL)
		return 1;
	memset(&ps, 0, sizeof(ps));
	ps.ps_tb = tb;
	if ((ps.ps_pending = malloc(PDF_PENDING_MAX)) == NULL ||
	    (ps.ps_str = malloc(PDF_STRING_MAX)) == NULL) {
		tb->tb_nomem = tb->tb_full = 1;
		goto done;
	}
	while (pos < len && !tb->tb_full &&
	    (p = memmem(buf + pos, len - pos, "stream", 6)) != NULL) {
		j = p - buf;
		pos = j + 6;
		if (j >= 3 && memcmp(p - 3, "end", 3) == 0)
			continue;
		while (j > 0 && pdf_space(buf[j - 1]))
			j--;
		if (j < 4 || buf[j - 1] != '>' || buf[j - 2] != '>')
			continue;
		if (++streams > PDF_STREAMS_MAX)
			break;
		if ((dict = dict_start(buf, buf + j)) == NULL)
			continue;
		data = p + 6;
		if (data < buf + len && *data == '\r')
			data++;
		if (data < buf + len && *data == '\n')
			data++;
		if ((e = memmem(data, buf + len - data, "endstream", 9)) ==
		    NULL)
			break;
		pos = e - buf + 9;
		dend = e;
		if (dend > data && dend[-1] == '\n')
			dend--;
		if (dend > data && dend[-1] == '\r')
			dend--;
		if (dict_skip(dict, buf + j - dict) ||
		    (filter = dict_filter(dict, buf + j - dict)) == -1)
			continue;
		if (filter == 0) {
			content(&ps, data, dend - data);
			continue;
		}
		if (total >= PDF_INFLATE_MAX)
			continue;
		inflated = inflate_stream(data, dend - data,
		    PDF_INFLATE_MAX - total < PDF_STREAM_MAX ?
		    PDF_INFLATE_MAX - total : PDF_STREAM_MAX, &n);
		total += n;
		if (inflated != NULL)
			content(&ps, inflated, n);
		free(inflated);
	}
 done:
	free(ps.ps_pending);
	free(ps.ps_str);
	return 0;
}
