#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "limits.h"
#include "validate.h"

/*
 * Decode the code point at s[*i] and advance *i.  Only the well-formed byte
 * sequences of Unicode table 3-7 pass: the second-byte ranges after E0, ED,
 * F0 and F4 are what shut out overlong forms, surrogates and values above
 * U+10FFFF.
 */
int
utf8_next(const uint8_t *s, size_t len, size_t *i, uint32_t *cp)
{
	size_t		 p = *i, n, k;
	uint8_t		 c = s[p], lo = 0x80, hi = 0xbf;
	uint32_t	 v;

	if (c < 0x80) {
		*cp = c;
		*i = p + 1;
		return 0;
	}
	if (c < 0xc2)
		return -1;	/* stray continuation or overlong 2-byte lead */
	if (c < 0xe0) {
		n = 1;
		v = c & 0x1f;
	} else if (c < 0xf0) {
		n = 2;
		v = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c < 0xf5) {
		n = 3;
		v = c & 0x07;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return -1;
	if (len - p - 1 < n)
		return -1;
	if (s[p + 1] < lo || s[p + 1] > hi)
		return -1;
	for (k = 1; k <= n; k++) {
		if ((s[p + k] & 0xc0) != 0x80)
			return -1;
		v = (v << 6) | (s[p + k] & 0x3f);
	}
	*cp = v;
	*i = p + 1 + n;
	return 0;
}

int
utf8_utf16_len(const char *s, size_t len, size_t *units)
{
	const uint8_t	*u = (const uint8_t *)s;
	size_t		 i = 0, n = 0;
	uint64_t	 w;
	uint32_t	 cp;

	while (i < len) {
		/* ASCII eight bytes at a time: most text, and every frame. */
		if (len - i >= 8) {
			memcpy(&w, u + i, 8);
			if ((w & UINT64_C(0x8080808080808080)) == 0) {
				i += 8;
				n += 8;
				continue;
			}
		}
		if (u[i] < 0x80) {
			i++;
			n++;
			continue;
		}
		if (utf8_next(u, len, &i, &cp) == -1)
			return -1;
		n += cp >= 0x10000 ? 2 : 1;
	}
	*units = n;
	return 0;
}

size_t
utf8_put(uint8_t *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (uint8_t)(0xc0 | cp >> 6);
		out[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (uint8_t)(0xe0 | cp >> 12);
		out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (uint8_t)(0xf0 | cp >> 18);
	out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

/* Four hex digits at s: 0 and their value in *v, else -1. */
static int
hex4(const uint8_t *s, uint32_t *v)
{
	int	 i, d;

	*v = 0;
	for (i = 0; i < 4; i++) {
		if ((d = hex_digit(s[i])) == -1)
			return -1;
		*v = *v << 4 | (uint32_t)d;
	}
	return 0;
}

int
json_string_decode(const uint8_t *s, size_t len, size_t *i, char **dst)
{
	size_t		 p = *i + 1, k;
	char		*d = *dst;
	uint32_t	 u, lo;

	for (;;) {
		/* A run of plain bytes at once. */
		k = p + json_string_run(s + p, len - p);
		memcpy(d, s + p, k - p);
		d += k - p;
		p = k;
		if (p >= len || s[p] < 0x20)
			return -1;
		if (s[p] == '"')
			break;
		if (p + 1 >= len)
			return -1;
		switch (s[p + 1]) {
		case '"':
		case '\\':
		case '/':
			*d++ = (char)s[p + 1];
			p += 2;
			continue;
		case 'b':
			*d++ = '\b';
			p += 2;
			continue;
		case 'f':
			*d++ = '\f';
			p += 2;
			continue;
		case 'n':
			*d++ = '\n';
			p += 2;
			continue;
		case 'r':
			*d++ = '\r';
			p += 2;
			continue;
		case 't':
			*d++ = '\t';
			p += 2;
			continue;
		case 'u':
			break;
		default:
			return -1;
		}
		if (len - p < 6 || hex4(s + p + 2, &u) == -1 || u == 0)
			return -1;
		p += 6;
		if (u >= 0xdc00 && u <= 0xdfff)
			return -1;
		if (u >= 0xd800 && u <= 0xdbff) {
			/* Only a pair makes a character. */
			if (len - p < 6 || s[p] != '\\' || s[p + 1] != 'u' ||
			    hex4(s + p + 2, &lo) == -1 ||
			    lo < 0xdc00 || lo > 0xdfff)
				return -1;
			p += 6;
			u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
		}
		d += utf8_put((uint8_t *)d, u);
	}
	*d++ = '\0';
	*dst = d;
	*i = p + 1;
	return 0;
}

size_t
json_quoted_len(const char *s, size_t len)
{
	const uint8_t	*u = (const uint8_t *)s;
	size_t		 i = 0, n = len + 2;

	/* Each byte once, and what its escape adds. */
	while ((i += json_string_run(u + i, len - i)) < len) {
		switch (u[i++]) {
		case '"':
		case '\\':
		case '\b':
		case '\f':
		case '\n':
		case '\r':
		case '\t':
			n += 1;
			break;
		default:
			n += 5;
			break;
		}
	}
	return n;
}

char *
json_quote(char *d, const char *s, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	const uint8_t		*u = (const uint8_t *)s;
	size_t			 i = 0, run;

	*d++ = '"';
	for (;;) {
		run = json_string_run(u + i, len - i);
		memcpy(d, u + i, run);
		d += run;
		if ((i += run) >= len)
			break;
		*d++ = '\\';
		switch (u[i]) {
		case '"':
		case '\\':
			*d++ = (char)u[i];
			break;
		case '\b':
			*d++ = 'b';
			break;
		case '\f':
			*d++ = 'f';
			break;
		case '\n':
			*d++ = 'n';
			break;
		case '\r':
			*d++ = 'r';
			break;
		case '\t':
			*d++ = 't';
			break;
		default:
			memcpy(d, "u00", 3);
			d[3] = hex[u[i] >> 4];
			d[4] = hex[u[i] & 0xf];
			d += 5;
			break;
		}
		i++;
	}
	*d++ = '"';
	return d;
}

size_t
str_append(char *buf, size_t bufsz, size_t n, const char *s, size_t slen)
{
	if (slen > bufsz - 1 - n)
		slen = bufsz - 1 - n;
	memcpy(buf + n, s, slen);
	buf[n + slen] = '\0';
	return n + slen;
}

size_t
str_append_uint(char *buf, size_t bufsz, size_t n, uint64_t v)
{
	char	 num[24], *p = num + sizeof(num);

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	return str_append(buf, bufsz, n, p, (size_t)(num + sizeof(num) - p));
}

int
utf8_text_check(const char *s, size_t len, size_t max_units)
{
	size_t	 units;

	/* A C string of the text would end at the first NUL. */
	if (memchr(s, '\0', len) != NULL)
		return -1;
	if (utf8_utf16_len(s, len, &units) == -1)
		return -1;
	return units <= max_units ? 0 : -1;
}

static int
is_control(uint32_t cp)
{
	return cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f);
}

/* What JavaScript's \s matches outside the control ranges. */
static int
is_space(uint32_t cp)
{
	switch (cp) {
	case 0x20:
	case 0xa0:
	case 0x1680:
	case 0x2028:
	case 0x2029:
	case 0x202f:
	case 0x205f:
	case 0x3000:
	case 0xfeff:
		return 1;
	}
	return cp >= 0x2000 && cp <= 0x200a;
}

int
valid_safe_name(const char *s, size_t len)
{
	const uint8_t	*u = (const uint8_t *)s;
	size_t		 i = 0, units = 0;
	uint32_t	 cp;

	if (len == 0)
		return 0;
	if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' &&
	    s[1] == '.'))
		return 0;
	while (i < len) {
		if (utf8_next(u, len, &i, &cp) == -1)
			return 0;
		if (cp == '/' || cp == '\\' || is_control(cp))
			return 0;
		units += cp >= 0x10000 ? 2 : 1;
		if (units > SAFE_NAME_MAX)
			return 0;
	}
	return 1;
}

/*
 * Strict base64.  The table maps the 64 alphabet bytes to their values and
 * everything else, '=' included, to -1.
 */
static const char	b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static const int8_t	b64_value[256] = {
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 62, -1, -1, -1, 63,
	52, 53, 54, 55, 56, 57, 58, 59, 60, 61, -1, -1, -1, -1, -1, -1,
	-1,  0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14,
	15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, -1, -1, -1, -1, -1,
	-1, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
	41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
};

/*
 * The decoded size from the length and the trailing pads alone; the
 * characters themselves are checked while decoding.  A third '=' is left
 * for the alphabet check to refuse.
 */
static long long
b64_shape(const char *s, size_t len, size_t *pads)
{
	size_t	 n;

	*pads = 0;
	if (len % 4 != 0)
		return -1;
	if (len == 0)
		return 0;
	if (s[len - 1] == '=') {
		(*pads)++;
		if (s[len - 2] == '=')
			(*pads)++;
	}
	n = len / 4 * 3 - *pads;
	if (n > (size_t)LLONG_MAX)
		return -1;
	return (long long)n;
}

/*
 * Check every character and the zero unused bits of the last group; with
 * out non-NULL also write the bytes (the caller checked the room).
 */
static int
b64_walk(const char *s, size_t len, size_t pads, uint8_t *out)
{
	const uint8_t	*u = (const uint8_t *)s;
	size_t		 i, o = 0, body = len - pads;
	int		 a, b, c, d;

	/* Full groups, the last one excluded when it carries pads. */
	for (i = 0; i + 4 <= body; i += 4) {
		a = b64_value[u[i]];
		b = b64_value[u[i + 1]];
		c = b64_value[u[i + 2]];
		d = b64_value[u[i + 3]];
		if ((a | b | c | d) < 0)
			return -1;
		if (out != NULL) {
			out[o++] = (uint8_t)(a << 2 | b >> 4);
			out[o++] = (uint8_t)((b & 0x0f) << 4 | c >> 2);
			out[o++] = (uint8_t)((c & 0x03) << 6 | d);
		}
	}
	if (pads == 0)
		return 0;
	a = b64_value[u[i]];
	b = b64_value[u[i + 1]];
	if ((a | b) < 0)
		return -1;
	if (pads == 2) {
		/* "QR==" would carry 4 bits that no byte holds. */
		if ((b & 0x0f) != 0)
			return -1;
		if (out != NULL)
			out[o] = (uint8_t)(a << 2 | b >> 4);
		return 0;
	}
	c = b64_value[u[i + 2]];
	if (c < 0 || (c & 0x03) != 0)
		return -1;
	if (out != NULL) {
		out[o++] = (uint8_t)(a << 2 | b >> 4);
		out[o] = (uint8_t)((b & 0x0f) << 4 | c >> 2);
	}
	return 0;
}

long long
b64_decoded_len(const char *s, size_t len)
{
	long long	 n;
	size_t		 pads;

	if ((n = b64_shape(s, len, &pads)) == -1)
		return -1;
	if (b64_walk(s, len, pads, NULL) == -1)
		return -1;
	return n;
}

long long
b64_decode(const char *s, size_t len, uint8_t *out, size_t outsz)
{
	long long	 n;
	size_t		 pads;

	if ((n = b64_shape(s, len, &pads)) == -1)
		return -1;
	if ((unsigned long long)n > outsz)
		return -1;
	if (b64_walk(s, len, pads, out) == -1)
		return -1;
	return n;
}

size_t
b64_encoded_len(size_t n)
{
	if (n / 3 > (SIZE_MAX - 4) / 4)
		return SIZE_MAX;
	return n / 3 * 4 + (n % 3 != 0 ? 4 : 0);
}

int
b64_encode(const uint8_t *in, size_t n, char *out, size_t outsz)
{
	size_t		 i, o = 0, enc;
	uint32_t	 v;

	enc = b64_encoded_len(n);
	if (enc == SIZE_MAX || outsz <= enc)
		return -1;
	for (i = 0; i + 3 <= n; i += 3) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 |
		    in[i + 2];
		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 0x3f];
		out[o++] = b64_alphabet[(v >> 6) & 0x3f];
		out[o++] = b64_alphabet[v & 0x3f];
	}
	if (n - i == 1) {
		v = (uint32_t)in[i] << 16;
		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 0x3f];
		out[o++] = '=';
		out[o++] = '=';
	} else if (n - i == 2) {
		v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
		out[o++] = b64_alphabet[v >> 18];
		out[o++] = b64_alphabet[(v >> 12) & 0x3f];
		out[o++] = b64_alphabet[(v >> 6) & 0x3f];
		out[o++] = '=';
	}
	out[o] = '\0';
	return 0;
}

static int
is_alnum(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9');
}

/* [a-zA-Z0-9_-] */
static int
is_word(uint8_t c)
{
	return is_alnum(c) || c == '_' || c == '-';
}

long
channel_segment(const char *key, size_t len, char *out, size_t outsz)
{
	const uint8_t	*u = (const uint8_t *)key;
	size_t		 i = 0, o = 0, units;
	uint32_t	 cp;

	if (outsz > 0)
		out[0] = '\0';
	if (len == 0 || utf8_text_check(key, len, CHANNEL_KEY_MAX) == -1)
		return -1;
	/* One byte of segment per UTF-16 code unit of the key. */
	if (utf8_utf16_len(key, len, &units) == -1 || units >= outsz)
		return -1;
	while (i < len) {
		if (utf8_next(u, len, &i, &cp) == -1)
			return -1;
		if (cp < 0x80 && is_word((uint8_t)cp))
			out[o++] = (char)cp;
		else {
			out[o++] = '_';
			if (cp >= 0x10000)
				out[o++] = '_';
		}
	}
	out[o] = '\0';
	return (long)o;
}

static int
word_name(const char *s, size_t len, size_t max)
{
	size_t	 i;

	if (len == 0 || len > max)
		return 0;
	for (i = 0; i < len; i++)
		if (!is_word((uint8_t)s[i]))
			return 0;
	return 1;
}

int
valid_profile_name(const char *s, size_t len)
{
	return word_name(s, len, PROFILE_NAME_MAX);
}

int
valid_mcp_server_name(const char *s, size_t len)
{
	return word_name(s, len, MCP_SERVER_NAME_MAX);
}

int
valid_tool_use_name(const char *s, size_t len)
{
	return word_name(s, len, TOOL_USE_NAME_MAX);
}

int
valid_host_tool_name(const char *s, size_t len)
{
	size_t	 i;
	uint8_t	 c;

	if (len == 0 || len > HOST_TOOL_NAME_MAX)
		return 0;
	if (s[0] < 'a' || s[0] > 'z')
		return 0;
	for (i = 1; i < len; i++) {
		c = (uint8_t)s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '_'))
			return 0;
	}
	return 1;
}

int
valid_container_prefix(const char *s, size_t len)
{
	size_t	 i;
	uint8_t	 c;

	if (len == 0 || len > CONTAINER_PREFIX_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		c = (uint8_t)s[i];
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			continue;
		if (c == '-' && i > 0)
			continue;
		return 0;
	}
	return 1;
}

int
valid_image_name(const char *s, size_t len)
{
	const uint8_t	*u = (const uint8_t *)s;
	size_t		 i = 0;
	uint32_t	 cp;

	/* A leading '-' reads as an option to docker's command line. */
	if (len == 0 || s[0] == '-')
		return 0;
	while (i < len) {
		if (utf8_next(u, len, &i, &cp) == -1)
			return 0;
		if (is_control(cp) || is_space(cp))
			return 0;
	}
	return 1;
}

/*
 * The name of a runtime in the engine's configuration (dockerd's
 * "runtimes", a containerd shim such as io.containerd.runsc.v1): plain
 * enough that it can never read as an option, a path or another field.
 */
int
valid_runtime_name(const char *s, size_t len)
{
	size_t	 i;
	uint8_t	 c;

	if (len == 0 || len > RUNTIME_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		c = (uint8_t)s[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9'))
			continue;
		if (i > 0 && (c == '_' || c == '.' || c == '-'))
			continue;
		return 0;
	}
	return 1;
}

int
valid_thinking(const char *s, size_t len)
{
	static const char *const	 levels[] = {
		"low", "medium", "high", "xhigh"
	};
	size_t				 i;

	for (i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
		if (strlen(levels[i]) == len && memcmp(s, levels[i], len) == 0)
			return 1;
	return 0;
}

int
hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
time_zone_valid(const char *s, size_t len)
{
	size_t	 i, start = 0, n;

	if (len == 0 || len > TIME_ZONE_BYTES_MAX)
		return 0;
	for (i = 0; i <= len; i++) {
		if (i < len && s[i] != '/') {
			if (!(is_alnum((uint8_t)s[i]) ||
			    strchr("_+-.", s[i]) != NULL) || s[i] == '\0')
				return 0;
			continue;
		}
		n = i - start;
		if (n == 0 || (n == 1 && s[start] == '.') ||
		    (n == 2 && s[start] == '.' && s[start + 1] == '.'))
			return 0;
		start = i + 1;
	}
	return 1;
}
