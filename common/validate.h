/*
 * Validators of PROTOCOL.md: pure functions over a buffer and a length, so
 * that Check suites and libFuzzer targets drive exactly what the daemon runs.
 */
#ifndef RTSANDBOX_VALIDATE_H
#define RTSANDBOX_VALIDATE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Decode UTF-8 strictly (no overlong forms, no surrogates, nothing above
 * U+10FFFF, no truncated sequence) and count UTF-16 code units: 1 per code
 * point below U+10000, 2 above.  Returns 0 and sets *units, or -1 on invalid
 * UTF-8.  NUL bytes are valid UTF-8 here; callers that need C strings use
 * utf8_text_check().
 */
int	utf8_utf16_len(const char *s, size_t len, size_t *units);

/*
 * Decode the code point at s[*i] (*i < len) and advance *i past it: 0, or
 * -1 when the bytes there are not well-formed UTF-8 (overlong forms,
 * surrogates and values above U+10FFFF included); *i is then unchanged.
 */
int	utf8_next(const uint8_t *s, size_t len, size_t *i, uint32_t *cp);

/*
 * RFC 9110 tchar, the bytes of a field name or a method: letters, digits
 * and !#$%&'*+-.^_`|~.  One bit per byte.
 */
static inline int
http_tchar(unsigned char c)
{
	static const uint64_t	 tchar[4] = {
		UINT64_C(0x03ff6cfa00000000),	/* 0-9 ! # $ % & ' * + - . */
		UINT64_C(0x57ffffffc7fffffe),	/* A-Z a-z ^ _ ` | ~ */
		0, 0,
	};

	return (tchar[c >> 6] >> (c & 63)) & 1;
}

/* The JSON string runs below, eight bytes at a time. */
#define JSON_ONES	UINT64_C(0x0101010101010101)
#define JSON_HIGHS	UINT64_C(0x8080808080808080)

/*
 * The n bytes at s as a JSON integer of at most 15 digits after an
 * optional '-': exact as a double, so *v is what strtod(3) would read.
 * -1 when they are anything else.
 */
static inline int
json_short_int(const uint8_t *s, size_t n, double *v)
{
	size_t		 k = n > 0 && s[0] == '-';
	size_t		 neg = k;
	uint64_t	 w = 0;

	if (n <= neg || n - neg > 15)
		return -1;
	for (; k < n; k++) {
		if (s[k] < '0' || s[k] > '9')
			return -1;
		w = w * 10 + (uint64_t)(s[k] - '0');
	}
	*v = neg ? -(double)w : (double)w;
	return 0;
}

/* The high bit of each byte of w that is zero, and perhaps of bytes after
 * the first (a borrow runs on): the lowest bit set is exact. */
static inline uint64_t
json_byte_zero(uint64_t w)
{
	return (w - JSON_ONES) & ~w & JSON_HIGHS;
}

/*
 * The bytes of w that are a control character, '"' or '\\' (with high,
 * or 0x80 and above too) as their high bits.  Bytes after the first such
 * byte may be marked wrongly (a borrow runs on from it), the first never:
 * the lowest bit set is exact.  A byte of 0x80 and above never reads as
 * below 0x20: ~w clears its high bit.
 */
static inline uint64_t
json_stops(uint64_t w, uint64_t high)
{
	return (w & high) | ((w - JSON_ONES * 0x20) & ~w & JSON_HIGHS) |
	    json_byte_zero(w ^ (JSON_ONES * '"')) |
	    json_byte_zero(w ^ (JSON_ONES * '\\'));
}

static inline size_t
json_run(const uint8_t *s, size_t len, uint64_t high, unsigned int top)
{
	size_t		 i = 0;
	uint64_t	 w, m;

	for (; len - i >= 8; i += 8) {
		memcpy(&w, s + i, 8);
		if ((m = json_stops(w, high)) != 0) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			return i + (size_t)__builtin_ctzll(m) / 8;
#else
			break;
#endif
		}
	}
	while (i < len && s[i] >= 0x20 && s[i] <= top && s[i] != '"' &&
	    s[i] != '\\')
		i++;
	return i;
}

/*
 * How many bytes at the start of s a JSON string holds as they are: none
 * of them a control character (below 0x20), '"' or '\\'.  The ASCII
 * variant stops at a byte of 0x80 or above too, for readers that decode
 * UTF-8 themselves.  Eight bytes at a time, and inline: the scanners of
 * whole bodies spend most of their time here, many runs only a few bytes
 * long.
 */
static inline size_t
json_string_run(const uint8_t *s, size_t len)
{
	return json_run(s, len, 0, 0xff);
}

static inline size_t
json_ascii_run(const uint8_t *s, size_t len)
{
	return json_run(s, len, JSON_HIGHS, 0x7f);
}

/* cp (at most U+10FFFF) as UTF-8 at out (room for 4): its length. */
size_t	utf8_put(uint8_t *out, uint32_t cp);

/*
 * The JSON string at s[*i] (its opening quote), its escapes decoded as
 * cJSON decodes them, into *dst, which has room for the text's bytes, and
 * ended with a NUL: 0 with *dst past the NUL and *i past the closing
 * quote.  -1 for a raw control character, a bad escape, a lone surrogate,
 * \u0000 (a C string would end there) or no closing quote before len.
 */
int	json_string_decode(const uint8_t *s, size_t len, size_t *i,
	    char **dst);

/*
 * s (len bytes) as a JSON string, as cJSON prints one: in quotes, '"', '\\'
 * and the control characters escaped (\b \f \n \r \t, else \u00xx), every
 * other byte as it is.  json_quoted_len() is its length; json_quote()
 * writes it at d, which has that much room, and returns the end.
 */
size_t	json_quoted_len(const char *s, size_t len);
char	*json_quote(char *d, const char *s, size_t len);

/*
 * Append slen bytes of s to the n bytes in buf (n < bufsz), as many as fit
 * with a NUL after them, as snprintf() cuts: the new length.  For text
 * built on every call, where snprintf() costs more than the text.
 */
size_t	str_append(char *buf, size_t bufsz, size_t n, const char *s,
	    size_t slen);
/* The same with v's decimal digits. */
size_t	str_append_uint(char *buf, size_t bufsz, size_t n, uint64_t v);

/* The value of a hexadecimal digit (either case), or -1. */
int	hex_digit(int c);

/* Valid UTF-8, no NUL byte, at most max_units UTF-16 code units: 0, else -1. */
int	utf8_text_check(const char *s, size_t len, size_t max_units);

/*
 * The valid_*() predicates below return 1 when the text passes, else 0.
 *
 * Safe file name: 1-255 chars, no '/', no '\\', no control character
 * (U+0000-U+001F, U+007F-U+009F), not "." and not "..", valid UTF-8.
 */
int	valid_safe_name(const char *s, size_t len);

/*
 * Strict base64: alphabet A-Z a-z 0-9 + /, '=' only as 0-2 trailing pads,
 * length a multiple of 4, and the unused bits of the last group zero.
 * b64_decoded_len() returns the decoded size or -1 when the text breaks a
 * rule; b64_decode() writes exactly that many bytes to out (outsz must be at
 * least that) and returns it, or -1.
 */
long long	b64_decoded_len(const char *s, size_t len);
long long	b64_decode(const char *s, size_t len, uint8_t *out, size_t outsz);
/* Encoded length for n bytes (without NUL); SIZE_MAX when it overflows. */
size_t		b64_encoded_len(size_t n);
/*
 * Writes b64_encoded_len(n) chars and a NUL; outsz must cover both.
 * Returns 0, or -1 when it does not.
 */
int		b64_encode(const uint8_t *in, size_t n, char *out, size_t outsz);

/*
 * Channel segment of PROTOCOL.md 6: every UTF-16 code unit outside
 * [A-Za-z0-9_-] becomes '_' (so a character above U+FFFF becomes "__").
 * The key must be valid UTF-8, 1-256 chars, without NUL.  out receives the
 * NUL-terminated segment; outsz of SEGMENT_MAX + 1 always suffices.
 * Returns the segment length, or -1 (invalid key or too small a buffer).
 */
long	channel_segment(const char *key, size_t len, char *out, size_t outsz);

/* Name patterns. Each takes a NUL-free buffer and its length. */
int	valid_profile_name(const char *s, size_t len);	/* [a-zA-Z0-9_-]{1,100} */
int	valid_mcp_server_name(const char *s, size_t len);	/* [a-zA-Z0-9_-]{1,100} */
int	valid_host_tool_name(const char *s, size_t len);	/* [a-z][a-z0-9_]{0,47} */
int	valid_tool_use_name(const char *s, size_t len);	/* [a-zA-Z0-9_-]{1,128} */
int	valid_container_prefix(const char *s, size_t len);	/* [a-z0-9][a-z0-9-]{0,40} */
/* Image: non-empty, no white space or control char, not starting with '-'. */
int	valid_image_name(const char *s, size_t len);
/* OCI runtime as the engine names it: [a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}. */
int	valid_runtime_name(const char *s, size_t len);
/* Thinking level: low, medium, high or xhigh. */
int	valid_thinking(const char *s, size_t len);
/* An IANA zone name of 1 to TIME_ZONE_BYTES_MAX bytes of [a-zA-Z0-9_+-./]:
 * no leading or trailing "/", no empty, "." or ".." component, so that TZ
 * names a zone and never a file elsewhere. */
int	time_zone_valid(const char *s, size_t len);

#endif
