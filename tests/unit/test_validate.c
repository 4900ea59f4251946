/*
 * The validators of common/validate.c at every limit of PROTOCOL.md and one
 * past it, and every refusal they make.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "validate.h"

#define S(lit)	(lit), (sizeof(lit) - 1)

static const char	emoji[] = "\xf0\x9f\x98\x80";	/* U+1F600 */
static const char	e_acute[] = "\xc3\xa9";		/* U+00E9 */

/* n copies of the NUL-terminated unit, plus a NUL; *len gets the length. */
static char *
repeat(const char *unit, size_t n, size_t *len)
{
	size_t	 ul = strlen(unit), i;
	char	*s;

	s = malloc(ul * n + 1);
	ck_assert_ptr_nonnull(s);
	for (i = 0; i < n; i++)
		memcpy(s + i * ul, unit, ul);
	s[ul * n] = '\0';
	*len = ul * n;
	return s;
}

/* Like repeat() with one extra unit appended. */
static char *
repeat_plus(const char *unit, size_t n, const char *tail, size_t *len)
{
	size_t	 tl = strlen(tail);
	char	*s, *r;

	s = repeat(unit, n, len);
	r = realloc(s, *len + tl + 1);
	ck_assert_ptr_nonnull(r);
	memcpy(r + *len, tail, tl + 1);
	*len += tl;
	return r;
}

static long
units_of(const char *s, size_t len)
{
	size_t	 u;

	if (utf8_utf16_len(s, len, &u) == -1)
		return -1;
	return (long)u;
}

/* Canonical UTF-8 of any value up to 0x1FFFFF, surrogates included. */
static size_t
enc_utf8(uint32_t cp, uint8_t *o)
{
	if (cp < 0x80) {
		o[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (uint8_t)(0xc0 | cp >> 6);
		o[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (uint8_t)(0xe0 | cp >> 12);
		o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (uint8_t)(0xf0 | cp >> 18);
	o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

/* An encoding of cp in exactly n bytes, overlong when n is too many. */
static void
enc_utf8_n(uint32_t cp, size_t n, uint8_t *o)
{
	static const uint8_t	 lead[] = { 0, 0, 0xc0, 0xe0, 0xf0 };
	size_t			 k;

	for (k = n - 1; k > 0; k--) {
		o[k] = (uint8_t)(0x80 | (cp & 0x3f));
		cp >>= 6;
	}
	o[0] = (uint8_t)(lead[n] | cp);
}

/*
 * UTF-8 and UTF-16 counting
 */

START_TEST(utf16_ascii)
{
	ck_assert_int_eq(units_of("", 0), 0);
	ck_assert_int_eq(units_of(S("a")), 1);
	ck_assert_int_eq(units_of(S("discord:123")), 11);
	/* NUL is valid UTF-8; utf8_text_check() is what refuses it. */
	ck_assert_int_eq(units_of(S("a\0b")), 3);
}
END_TEST

START_TEST(utf16_multibyte)
{
	ck_assert_int_eq(units_of(S("\xc2\x80")), 1);		/* U+0080 */
	ck_assert_int_eq(units_of(S("\xdf\xbf")), 1);		/* U+07FF */
	ck_assert_int_eq(units_of(S("\xc3\xa9t\xc3\xa9")), 3);
	ck_assert_int_eq(units_of(S("\xe0\xa0\x80")), 1);	/* U+0800 */
	ck_assert_int_eq(units_of(S("\xe2\x82\xac")), 1);	/* U+20AC */
	ck_assert_int_eq(units_of(S("\xed\x9f\xbf")), 1);	/* U+D7FF */
	ck_assert_int_eq(units_of(S("\xee\x80\x80")), 1);	/* U+E000 */
	ck_assert_int_eq(units_of(S("\xef\xbf\xbf")), 1);	/* U+FFFF */
	ck_assert_int_eq(units_of(S("\xf0\x90\x80\x80")), 2);	/* U+10000 */
	ck_assert_int_eq(units_of(S("\xf0\x9f\x98\x80")), 2);	/* U+1F600 */
	ck_assert_int_eq(units_of(S("\xf4\x8f\xbf\xbf")), 2);	/* U+10FFFF */
	/* "a" + é + € + 😀 = 1 + 1 + 1 + 2 */
	ck_assert_int_eq(units_of(S("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80")),
	    5);
}
END_TEST

/*
 * The loops count mismatches and assert once: Check's per-assertion
 * bookkeeping would make a million assertions take seconds.
 */
START_TEST(utf16_every_scalar)
{
	uint8_t		 b[4];
	uint32_t	 cp, first_bad = 0;
	size_t		 n, bad = 0;
	long		 want;

	for (cp = 0; cp <= 0x10ffff; cp++) {
		n = enc_utf8(cp, b);
		want = cp >= 0xd800 && cp <= 0xdfff ? -1 :
		    cp >= 0x10000 ? 2 : 1;
		if (units_of((char *)b, n) != want && bad++ == 0)
			first_bad = cp;
	}
	ck_assert_msg(bad == 0, "%zu wrong, first U+%04X", bad,
	    (unsigned)first_bad);

	/* Above U+10FFFF in the 4-byte form. */
	for (cp = 0x110000; cp <= 0x1fffff; cp++)
		if (units_of((char *)b, enc_utf8(cp, b)) != -1)
			bad++;
	ck_assert_uint_eq(bad, 0);

	/* Every overlong form of the 2-, 3- and 4-byte ranges. */
	for (cp = 0; cp < 0x10000; cp++) {
		if (cp < 0x80) {
			enc_utf8_n(cp, 2, b);
			bad += units_of((char *)b, 2) != -1;
		}
		if (cp < 0x800) {
			enc_utf8_n(cp, 3, b);
			bad += units_of((char *)b, 3) != -1;
		}
		enc_utf8_n(cp, 4, b);
		bad += units_of((char *)b, 4) != -1;
	}
	ck_assert_uint_eq(bad, 0);
}
END_TEST

START_TEST(utf8_invalid)
{
	/* Overlong NUL, then overlong forms of the 2-, 3- and 4-byte ranges. */
	ck_assert_int_eq(units_of(S("\xc0\x80")), -1);
	ck_assert_int_eq(units_of(S("\xc1\xbf")), -1);
	ck_assert_int_eq(units_of(S("\xe0\x80\x80")), -1);
	ck_assert_int_eq(units_of(S("\xe0\x9f\xbf")), -1);
	ck_assert_int_eq(units_of(S("\xf0\x80\x80\x80")), -1);
	ck_assert_int_eq(units_of(S("\xf0\x8f\xbf\xbf")), -1);
	ck_assert_int_eq(units_of(S("\xed\xa0\x80")), -1);	/* U+D800 */
	ck_assert_int_eq(units_of(S("\xed\xbf\xbf")), -1);	/* U+DFFF */
	/* A CESU-8 pair for U+1F600 is two surrogates. */
	ck_assert_int_eq(units_of(S("\xed\xa0\xbd\xed\xb8\x80")), -1);
	ck_assert_int_eq(units_of(S("\xf4\x90\x80\x80")), -1);	/* U+110000 */
	ck_assert_int_eq(units_of(S("\xf5\x80\x80\x80")), -1);
	ck_assert_int_eq(units_of(S("\xf7\xbf\xbf\xbf")), -1);
	ck_assert_int_eq(units_of(S("\xf8\x88\x80\x80\x80")), -1);
	ck_assert_int_eq(units_of(S("\xfe")), -1);
	ck_assert_int_eq(units_of(S("\xff")), -1);
	/* Truncated at the end of the buffer. */
	ck_assert_int_eq(units_of(S("\xc3")), -1);
	ck_assert_int_eq(units_of(S("\xe2\x82")), -1);
	ck_assert_int_eq(units_of(S("\xf0\x9f\x98")), -1);
	ck_assert_int_eq(units_of(S("ok\xf0\x9f")), -1);
	/* The length, not a NUL, ends the buffer. */
	ck_assert_int_eq(units_of("\xc3\xa9", 1), -1);
	ck_assert_int_eq(units_of("\xf0\x9f\x98\x80", 3), -1);
	/* Truncated by a byte that is not a continuation. */
	ck_assert_int_eq(units_of(S("\xc3" "A")), -1);
	ck_assert_int_eq(units_of(S("\xe2" "A\xac")), -1);
	ck_assert_int_eq(units_of(S("\xe2\x82" "A")), -1);
	ck_assert_int_eq(units_of(S("\xf0\x9f\x98" "A")), -1);
	ck_assert_int_eq(units_of(S("\xc3\xc3\xa9")), -1);
	/* Stray continuations. */
	ck_assert_int_eq(units_of(S("\x80")), -1);
	ck_assert_int_eq(units_of(S("\xbf")), -1);
	ck_assert_int_eq(units_of(S("a\x80" "b")), -1);
	ck_assert_int_eq(units_of(S("\xc3\xa9\xa9")), -1);
	ck_assert_int_eq(units_of(S("\xf0\x9f\x98\x80\x80")), -1);
}
END_TEST

START_TEST(text_check_limits)
{
	char	*s;
	size_t	 len;

	ck_assert_int_eq(utf8_text_check("", 0, TURN_TEXT_MAX), 0);
	ck_assert_int_eq(utf8_text_check("", 0, 0), 0);
	ck_assert_int_eq(utf8_text_check(S("a"), 0), -1);

	s = repeat("a", TURN_TEXT_MAX, &len);
	ck_assert_int_eq(utf8_text_check(s, len, TURN_TEXT_MAX), 0);
	free(s);
	s = repeat("a", TURN_TEXT_MAX + 1, &len);
	ck_assert_int_eq(utf8_text_check(s, len, TURN_TEXT_MAX), -1);
	free(s);

	/* A non-BMP char counts 2: 50 000 of them make 100 000 chars. */
	s = repeat(emoji, TURN_TEXT_MAX / 2, &len);
	ck_assert_int_eq(units_of(s, len), TURN_TEXT_MAX);
	ck_assert_int_eq(utf8_text_check(s, len, TURN_TEXT_MAX), 0);
	free(s);
	s = repeat(emoji, TURN_TEXT_MAX / 2 + 1, &len);
	ck_assert_int_eq(utf8_text_check(s, len, TURN_TEXT_MAX), -1);
	free(s);
	s = repeat_plus(emoji, TURN_TEXT_MAX / 2, "a", &len);
	ck_assert_int_eq(utf8_text_check(s, len, TURN_TEXT_MAX), -1);
	free(s);

	/* A BMP char of 3 bytes counts 1: bytes are not the measure. */
	s = repeat("\xe2\x82\xac", TURN_TEXT_MAX, &len);
	ck_assert_int_eq(utf8_text_check(s, len, TURN_TEXT_MAX), 0);
	free(s);
	s = repeat("\xe2\x82\xac", TURN_TEXT_MAX + 1, &len);
	ck_assert_int_eq(utf8_text_check(s, len, TURN_TEXT_MAX), -1);
	free(s);

	s = repeat("a", RESULT_ERROR_MAX, &len);
	ck_assert_int_eq(utf8_text_check(s, len, RESULT_ERROR_MAX), 0);
	ck_assert_int_eq(utf8_text_check(s, len, RESULT_ERROR_MAX - 1), -1);
	free(s);

	s = repeat("a", AUTHOR_FIELD_MAX, &len);
	ck_assert_int_eq(utf8_text_check(s, len, AUTHOR_FIELD_MAX), 0);
	free(s);
	s = repeat("a", AUTHOR_FIELD_MAX + 1, &len);
	ck_assert_int_eq(utf8_text_check(s, len, AUTHOR_FIELD_MAX), -1);
	free(s);
}
END_TEST

START_TEST(text_check_refusals)
{
	ck_assert_int_eq(utf8_text_check(S("a\0b"), 100), -1);
	ck_assert_int_eq(utf8_text_check(S("\0"), 100), -1);
	ck_assert_int_eq(utf8_text_check(S("ab\0"), 100), -1);
	ck_assert_int_eq(utf8_text_check(S("\xc0\x80"), 100), -1);
	ck_assert_int_eq(utf8_text_check(S("\xed\xa0\x80"), 100), -1);
	ck_assert_int_eq(utf8_text_check(S("\xf4\x90\x80\x80"), 100), -1);
	ck_assert_int_eq(utf8_text_check(S("\xe2\x82"), 100), -1);
	ck_assert_int_eq(utf8_text_check(S("\x80"), 100), -1);
	/* Control characters are text; only NUL is refused. */
	ck_assert_int_eq(utf8_text_check(S("\x01\t\n\x7f\xc2\x9f"), 100), 0);
}
END_TEST

/*
 * Safe file names
 */

START_TEST(safe_name_length)
{
	char	*s;
	size_t	 len;

	ck_assert_int_eq(valid_safe_name("", 0), 0);
	ck_assert_int_eq(valid_safe_name(S("a")), 1);

	s = repeat("a", SAFE_NAME_MAX, &len);
	ck_assert_int_eq(valid_safe_name(s, len), 1);
	free(s);
	s = repeat("a", SAFE_NAME_MAX + 1, &len);
	ck_assert_int_eq(valid_safe_name(s, len), 0);
	free(s);

	/* Multi-byte chars count 1 each, however many bytes. */
	s = repeat(e_acute, SAFE_NAME_MAX, &len);
	ck_assert_uint_eq(len, 2 * SAFE_NAME_MAX);
	ck_assert_int_eq(valid_safe_name(s, len), 1);
	free(s);
	s = repeat(e_acute, SAFE_NAME_MAX + 1, &len);
	ck_assert_int_eq(valid_safe_name(s, len), 0);
	free(s);
	s = repeat("\xe2\x82\xac", SAFE_NAME_MAX, &len);
	ck_assert_int_eq(valid_safe_name(s, len), 1);
	free(s);

	/* Non-BMP chars count 2: 127 of them and one 'a' make 255. */
	s = repeat_plus(emoji, SAFE_NAME_MAX / 2, "a", &len);
	ck_assert_int_eq(valid_safe_name(s, len), 1);
	free(s);
	s = repeat(emoji, SAFE_NAME_MAX / 2 + 1, &len);
	ck_assert_int_eq(valid_safe_name(s, len), 0);
	free(s);
	s = repeat_plus(emoji, SAFE_NAME_MAX / 2, "ab", &len);
	ck_assert_int_eq(valid_safe_name(s, len), 0);
	free(s);
}
END_TEST

START_TEST(safe_name_chars)
{
	ck_assert_int_eq(valid_safe_name(S(".")), 0);
	ck_assert_int_eq(valid_safe_name(S("..")), 0);
	ck_assert_int_eq(valid_safe_name(S("...")), 1);
	ck_assert_int_eq(valid_safe_name(S(".hidden")), 1);
	ck_assert_int_eq(valid_safe_name(S("a..")), 1);
	ck_assert_int_eq(valid_safe_name(S("report.pdf")), 1);
	ck_assert_int_eq(valid_safe_name(S("with space")), 1);
	ck_assert_int_eq(valid_safe_name(S("/")), 0);
	ck_assert_int_eq(valid_safe_name(S("a/b")), 0);
	ck_assert_int_eq(valid_safe_name(S("../etc")), 0);
	ck_assert_int_eq(valid_safe_name(S("\\")), 0);
	ck_assert_int_eq(valid_safe_name(S("a\\b")), 0);
	ck_assert_int_eq(valid_safe_name(S("a\0b")), 0);
	ck_assert_int_eq(valid_safe_name(S("\0")), 0);
	/* The edges of both control ranges. */
	ck_assert_int_eq(valid_safe_name(S("a\x01")), 0);
	ck_assert_int_eq(valid_safe_name(S("a\x1f")), 0);	/* U+001F */
	ck_assert_int_eq(valid_safe_name(S("a\x20")), 1);	/* U+0020 */
	ck_assert_int_eq(valid_safe_name(S("a\x7e")), 1);	/* U+007E */
	ck_assert_int_eq(valid_safe_name(S("a\x7f")), 0);	/* U+007F */
	ck_assert_int_eq(valid_safe_name(S("a\xc2\x80")), 0);	/* U+0080 */
	ck_assert_int_eq(valid_safe_name(S("a\xc2\x9f")), 0);	/* U+009F */
	ck_assert_int_eq(valid_safe_name(S("a\xc2\xa0")), 1);	/* U+00A0 */
	ck_assert_int_eq(valid_safe_name(S("\t")), 0);
	ck_assert_int_eq(valid_safe_name(S("a\n")), 0);
	/* Invalid UTF-8. */
	/* Overlong '.' and '/'. */
	ck_assert_int_eq(valid_safe_name(S("\xc0\xae")), 0);
	ck_assert_int_eq(valid_safe_name(S("\xc0\xaf")), 0);
	ck_assert_int_eq(valid_safe_name(S("a\xed\xa0\x80")), 0);
	ck_assert_int_eq(valid_safe_name(S("a\xff")), 0);
	ck_assert_int_eq(valid_safe_name(S("a\xe2\x82")), 0);
	ck_assert_int_eq(valid_safe_name(S("\xf0\x9f\x98\x80.png")), 1);
}
END_TEST

/*
 * Strict base64
 */

static void
b64_ok(const char *text, const char *want, size_t wantlen)
{
	uint8_t		 buf[64];
	size_t		 len = strlen(text);

	ck_assert_int_eq(b64_decoded_len(text, len), (long long)wantlen);
	ck_assert_int_eq(b64_decode(text, len, buf, sizeof(buf)),
	    (long long)wantlen);
	ck_assert(memcmp(buf, want, wantlen) == 0);
}

static void
b64_bad(const char *text, size_t len)
{
	uint8_t		 buf[64];

	ck_assert_msg(b64_decoded_len(text, len) == -1, "len of \"%.*s\"",
	    (int)len, text);
	ck_assert_msg(b64_decode(text, len, buf, sizeof(buf)) == -1,
	    "decode of \"%.*s\"", (int)len, text);
}

START_TEST(b64_vectors)
{
	static const struct {
		const char	*plain;
		const char	*text;
	} v[] = {
		{ "", "" },
		{ "f", "Zg==" },
		{ "fo", "Zm8=" },
		{ "foo", "Zm9v" },
		{ "foob", "Zm9vYg==" },
		{ "fooba", "Zm9vYmE=" },
		{ "foobar", "Zm9vYmFy" },
		{ "A", "QQ==" },
		{ "AB", "QUI=" },
		{ "ABC", "QUJD" },
	};
	char	 out[64];
	size_t	 i, n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		n = strlen(v[i].plain);
		b64_ok(v[i].text, v[i].plain, n);
		ck_assert_uint_eq(b64_encoded_len(n), strlen(v[i].text));
		ck_assert_int_eq(b64_encode((const uint8_t *)v[i].plain, n,
		    out, sizeof(out)), 0);
		ck_assert_str_eq(out, v[i].text);
	}
	/* Every alphabet character and the bytes 0x00 and 0xff. */
	b64_ok("+/+/", "\xfb\xff\xbf", 3);
	b64_ok("AAAA", "\0\0\0", 3);
	b64_ok("////", "\xff\xff\xff", 3);
	b64_ok("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789+/",
	    "\x00\x10\x83\x10\x51\x87\x20\x92\x8b\x30\xd3\x8f\x41\x14\x93"
	    "\x51\x55\x97\x61\x96\x9b\x71\xd7\x9f\x82\x18\xa3\x92\x59\xa7"
	    "\xa2\x9a\xab\xb2\xdb\xaf\xc3\x1c\xb3\xd3\x5d\xb7\xe3\x9e\xbb"
	    "\xf3\xdf\xbf", 48);
}
END_TEST

START_TEST(b64_empty)
{
	uint8_t	 b;

	ck_assert_int_eq(b64_decoded_len("", 0), 0);
	ck_assert_int_eq(b64_decode("", 0, &b, 0), 0);
	ck_assert_int_eq(b64_decode("", 0, NULL, 0), 0);
}
END_TEST

START_TEST(b64_refusals)
{
	/* Length not a multiple of 4. */
	b64_bad(S("Q"));
	b64_bad(S("QQ"));
	b64_bad(S("QQ="));
	b64_bad(S("QUJ"));
	b64_bad(S("QUJDQ"));
	b64_bad(S("QUJDQQ==Q"));
	/* Characters outside the alphabet, url-safe and white space too. */
	b64_bad(S("QU*D"));
	b64_bad(S("QU-D"));
	b64_bad(S("QU_D"));
	b64_bad(S("QUJ\n"));
	b64_bad(S("QU D"));
	b64_bad(S("QUJD\r\n\r\n"));
	b64_bad(S("QU\0D"));
	b64_bad(S("QU\xc3\xa9"));
	b64_bad(S("\xffUJD"));
	b64_bad(S("Q\x80=="));
	/* '=' anywhere but the last two places. */
	b64_bad(S("=QQQ"));
	b64_bad(S("Q=QQ"));
	b64_bad(S("Q=Q="));
	b64_bad(S("QQ=Q"));
	b64_bad(S("QQ==QUJD"));
	b64_bad(S("QUI=QUI="));
	/* Three and four pads. */
	b64_bad(S("Q==="));
	b64_bad(S("===="));
	b64_bad(S("QUJD===="));
	/* Non-zero unused bits of the last group. */
	b64_bad(S("QR=="));
	b64_bad(S("QB=="));
	b64_bad(S("Q/=="));
	b64_bad(S("QUJ="));
	b64_bad(S("QUK="));
	b64_bad(S("QU/="));
	b64_bad(S("Zm9vYh=="));
	b64_bad(S("Zm9vYmF="));
}
END_TEST

START_TEST(b64_unused_bits_all)
{
	char	 t[5];
	int	 v;
	static const char a[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	/* Two pads: only values with the low 4 bits clear pass. */
	for (v = 0; v < 64; v++) {
		t[0] = 'Q';
		t[1] = a[v];
		t[2] = t[3] = '=';
		ck_assert_int_eq(b64_decoded_len(t, 4),
		    ((v & 0x0f) == 0 ? 1 : -1));
	}
	/* One pad: only values with the low 2 bits clear pass. */
	for (v = 0; v < 64; v++) {
		t[0] = 'Q';
		t[1] = 'U';
		t[2] = a[v];
		t[3] = '=';
		ck_assert_int_eq(b64_decoded_len(t, 4),
		    ((v & 0x03) == 0 ? 2 : -1));
	}
}
END_TEST

START_TEST(b64_room)
{
	uint8_t	 buf[8];
	char	 out[9];

	ck_assert_int_eq(b64_decode(S("QUJD"), buf, 3), 3);
	ck_assert_int_eq(b64_decode(S("QUJD"), buf, 2), -1);
	ck_assert_int_eq(b64_decode(S("QUI="), buf, 2), 2);
	ck_assert_int_eq(b64_decode(S("QUI="), buf, 1), -1);
	ck_assert_int_eq(b64_decode(S("QQ=="), buf, 1), 1);
	ck_assert_int_eq(b64_decode(S("QQ=="), buf, 0), -1);

	/* Encoding needs the text and a NUL. */
	ck_assert_int_eq(b64_encode((const uint8_t *)"ABC", 3, out, 5), 0);
	ck_assert_str_eq(out, "QUJD");
	ck_assert_int_eq(b64_encode((const uint8_t *)"ABC", 3, out, 4), -1);
	ck_assert_int_eq(b64_encode((const uint8_t *)"", 0, out, 1), 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(b64_encode((const uint8_t *)"", 0, out, 0), -1);

	ck_assert_uint_eq(b64_encoded_len(SIZE_MAX), SIZE_MAX);
	ck_assert_uint_eq(b64_encoded_len(SIZE_MAX / 4 * 3), SIZE_MAX);
}
END_TEST

START_TEST(b64_round_trip)
{
	uint8_t		 in[301], back[301];
	char		 text[405];
	size_t		 n, i, tl, pads;
	unsigned	 seed = 12345;

	for (n = 0; n <= 300; n++) {
		for (i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			in[i] = (uint8_t)(seed >> 16);
		}
		tl = b64_encoded_len(n);
		ck_assert_uint_eq(tl, (n + 2) / 3 * 4);
		ck_assert_int_eq(b64_encode(in, n, text, sizeof(text)), 0);
		ck_assert_uint_eq(strlen(text), tl);
		/* Decoded size = len·3/4 − pads. */
		pads = (tl > 0 && text[tl - 1] == '=') +
		    (tl > 1 && text[tl - 2] == '=');
		ck_assert_uint_eq(pads, (3 - n % 3) % 3);
		ck_assert_int_eq(b64_decoded_len(text, tl),
		    (long long)(tl / 4 * 3 - pads));
		ck_assert_int_eq(b64_decode(text, tl, back, n), (long long)n);
		ck_assert(memcmp(in, back, n) == 0);
	}
}
END_TEST

START_TEST(b64_limits)
{
	uint8_t		*bin;
	char		*text;
	size_t		 tl;

	/* 4.2 and 4.3 give the base64 bound as ⌈bytes/3⌉·4 chars. */
	ck_assert_uint_eq(b64_encoded_len(REPLY_FILE_MAX), REPLY_FILE_B64_MAX);
	ck_assert_uint_eq(b64_encoded_len(IMAGE_BYTES_MAX), IMAGE_B64_MAX);

	bin = calloc(1, REPLY_FILE_MAX + 3);
	text = malloc(REPLY_FILE_B64_MAX + 5);
	ck_assert_ptr_nonnull(bin);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(b64_encode(bin, REPLY_FILE_MAX, text,
	    REPLY_FILE_B64_MAX + 1), 0);
	tl = strlen(text);
	ck_assert_uint_eq(tl, REPLY_FILE_B64_MAX);
	ck_assert_int_eq(b64_decoded_len(text, tl), REPLY_FILE_MAX);
	ck_assert_int_eq(b64_decode(text, tl, bin, REPLY_FILE_MAX),
	    REPLY_FILE_MAX);
	ck_assert_int_eq(b64_decode(text, tl, bin, REPLY_FILE_MAX - 1), -1);
	/*
	 * 10 MiB leaves one byte in the last group, so two more bytes still
	 * fit that many chars: the char bound is a pre-check, the decoded
	 * size is what the rule is about.
	 */
	ck_assert_int_eq(b64_encode(bin, REPLY_FILE_MAX + 2, text,
	    REPLY_FILE_B64_MAX + 1), 0);
	tl = strlen(text);
	ck_assert_uint_eq(tl, REPLY_FILE_B64_MAX);
	ck_assert_int_eq(b64_decoded_len(text, tl), REPLY_FILE_MAX + 2);
	ck_assert_uint_eq(b64_encoded_len(REPLY_FILE_MAX + 3),
	    REPLY_FILE_B64_MAX + 4);
	free(bin);
	free(text);
}
END_TEST

/*
 * Channel segments
 */

static void
seg_ok(const char *key, size_t len, const char *want)
{
	char	 out[SEGMENT_MAX + 1];

	ck_assert_int_eq(channel_segment(key, len, out, sizeof(out)),
	    (long)strlen(want));
	ck_assert_str_eq(out, want);
}

START_TEST(segment_mapping)
{
	seg_ok(S("discord:123"), "discord_123");
	seg_ok(S("a-b_C9z"), "a-b_C9z");
	seg_ok(S("."), "_");
	seg_ok(S(".."), "__");
	seg_ok(S("../x"), "___x");
	seg_ok(S("a/b\\c d"), "a_b_c_d");
	seg_ok(S("\x01\x7f"), "__");
	seg_ok(S("\xc3\xa9"), "_");
	seg_ok(S("\xe2\x82\xac"), "_");
	seg_ok(S("\xf0\x9f\x98\x80"), "__");
	seg_ok(S("a\xf0\x9f\x98\x80" "b"), "a__b");
	seg_ok(S("slack:T01/C02\xc3\xa9"), "slack_T01_C02_");
}
END_TEST

START_TEST(segment_limits)
{
	char	 out[SEGMENT_MAX + 1], *s, *want;
	size_t	 len, wl;

	s = repeat("a", CHANNEL_KEY_MAX, &len);
	ck_assert_int_eq(channel_segment(s, len, out, sizeof(out)),
	    CHANNEL_KEY_MAX);
	ck_assert_str_eq(out, s);
	free(s);
	s = repeat("a", CHANNEL_KEY_MAX + 1, &len);
	ck_assert_int_eq(channel_segment(s, len, out, sizeof(out)), -1);
	ck_assert_str_eq(out, "");
	free(s);

	/* 128 non-BMP chars are 256 chars of key and 256 bytes of segment. */
	s = repeat(emoji, CHANNEL_KEY_MAX / 2, &len);
	want = repeat("_", SEGMENT_MAX, &wl);
	ck_assert_int_eq(channel_segment(s, len, out, sizeof(out)),
	    SEGMENT_MAX);
	ck_assert_str_eq(out, want);
	free(want);
	free(s);
	s = repeat(emoji, CHANNEL_KEY_MAX / 2 + 1, &len);
	ck_assert_int_eq(channel_segment(s, len, out, sizeof(out)), -1);
	free(s);
	s = repeat_plus("a", CHANNEL_KEY_MAX - 1, emoji, &len);
	ck_assert_int_eq(channel_segment(s, len, out, sizeof(out)), -1);
	free(s);

	/* 256 three-byte chars: the longest key in bytes. */
	s = repeat("\xe2\x82\xac", CHANNEL_KEY_MAX, &len);
	ck_assert_uint_eq(len, CHANNEL_KEY_BYTES_MAX);
	ck_assert_int_eq(channel_segment(s, len, out, sizeof(out)),
	    SEGMENT_MAX);
	free(s);
	s = repeat("\xe2\x82\xac", CHANNEL_KEY_MAX + 1, &len);
	ck_assert_int_eq(channel_segment(s, len, out, sizeof(out)), -1);
	free(s);
}
END_TEST

START_TEST(segment_refusals)
{
	char	 out[SEGMENT_MAX + 1];

	ck_assert_int_eq(channel_segment("", 0, out, sizeof(out)), -1);
	ck_assert_int_eq(channel_segment(S("a\0b"), out, sizeof(out)), -1);
	ck_assert_int_eq(channel_segment(S("\0"), out, sizeof(out)), -1);
	ck_assert_int_eq(channel_segment(S("a\xff"), out, sizeof(out)), -1);
	ck_assert_int_eq(channel_segment(S("\xc0\xba"), out, sizeof(out)), -1);
	ck_assert_int_eq(channel_segment(S("\xed\xa0\x80"), out, sizeof(out)),
	    -1);
	ck_assert_int_eq(channel_segment(S("a\xf0\x9f"), out, sizeof(out)),
	    -1);

	/* The buffer must hold the segment and its NUL. */
	ck_assert_int_eq(channel_segment(S("abc"), out, 4), 3);
	ck_assert_int_eq(channel_segment(S("abc"), out, 3), -1);
	ck_assert_int_eq(channel_segment(S("\xf0\x9f\x98\x80"), out, 3), 2);
	ck_assert_int_eq(channel_segment(S("\xf0\x9f\x98\x80"), out, 2), -1);
	ck_assert_int_eq(channel_segment(S("a"), NULL, 0), -1);
}
END_TEST

/*
 * Name patterns
 */

/* max copies of unit pass, max + 1 do not, and neither does "". */
static void
name_limit(int (*fn)(const char *, size_t), const char *unit, size_t max)
{
	char	*s;
	size_t	 len;

	s = repeat(unit, max, &len);
	ck_assert_int_eq(fn(s, len), 1);
	free(s);
	s = repeat(unit, max + 1, &len);
	ck_assert_int_eq(fn(s, len), 0);
	free(s);
	ck_assert_int_eq(fn("", 0), 0);
}

/* The characters every [a-zA-Z0-9_-] pattern refuses. */
static void
word_refusals(int (*fn)(const char *, size_t))
{
	ck_assert_int_eq(fn(S("a.b")), 0);
	ck_assert_int_eq(fn(S("a b")), 0);
	ck_assert_int_eq(fn(S("a/b")), 0);
	ck_assert_int_eq(fn(S("a:b")), 0);
	ck_assert_int_eq(fn(S("a\0b")), 0);
	ck_assert_int_eq(fn(S("a\n")), 0);
	ck_assert_int_eq(fn(S("\xc3\xa9")), 0);
	ck_assert_int_eq(fn(S("a@")), 0);
	ck_assert_int_eq(fn(S("a`")), 0);
	ck_assert_int_eq(fn(S("a[")), 0);
	ck_assert_int_eq(fn(S("a{")), 0);
	ck_assert_int_eq(fn(S("AZaz09_-")), 1);
	ck_assert_int_eq(fn(S("-")), 1);
	ck_assert_int_eq(fn(S("_")), 1);
}

START_TEST(name_profile)
{
	name_limit(valid_profile_name, "a", PROFILE_NAME_MAX);
	name_limit(valid_profile_name, "Z", 100);
	word_refusals(valid_profile_name);
	ck_assert_int_eq(valid_profile_name(S("default")), 1);
}
END_TEST

START_TEST(name_mcp_server)
{
	name_limit(valid_mcp_server_name, "-", MCP_SERVER_NAME_MAX);
	name_limit(valid_mcp_server_name, "9", 100);
	word_refusals(valid_mcp_server_name);
	ck_assert_int_eq(valid_mcp_server_name(S("github")), 1);
}
END_TEST

START_TEST(name_tool_use)
{
	name_limit(valid_tool_use_name, "_", TOOL_USE_NAME_MAX);
	name_limit(valid_tool_use_name, "x", 128);
	word_refusals(valid_tool_use_name);
	ck_assert_int_eq(valid_tool_use_name(S("write_file")), 1);
}
END_TEST

START_TEST(name_host_tool)
{
	char	*s;
	size_t	 len;

	/* 'a' then 47 more: the limit; one more is past it. */
	s = repeat_plus("z0_", 15, "ab_", &len);
	ck_assert_uint_eq(len, HOST_TOOL_NAME_MAX);
	ck_assert_int_eq(valid_host_tool_name(s, len), 1);
	free(s);
	s = repeat_plus("z0_", 15, "ab_x", &len);
	ck_assert_int_eq(valid_host_tool_name(s, len), 0);
	free(s);
	name_limit(valid_host_tool_name, "z", 48);

	ck_assert_int_eq(valid_host_tool_name("", 0), 0);
	ck_assert_int_eq(valid_host_tool_name(S("a")), 1);
	ck_assert_int_eq(valid_host_tool_name(S("web_search")), 1);
	ck_assert_int_eq(valid_host_tool_name(S("a_1")), 1);
	ck_assert_int_eq(valid_host_tool_name(S("A")), 0);
	ck_assert_int_eq(valid_host_tool_name(S("aB")), 0);
	ck_assert_int_eq(valid_host_tool_name(S("1a")), 0);
	ck_assert_int_eq(valid_host_tool_name(S("_a")), 0);
	ck_assert_int_eq(valid_host_tool_name(S("a-b")), 0);
	ck_assert_int_eq(valid_host_tool_name(S("a.b")), 0);
	ck_assert_int_eq(valid_host_tool_name(S("a b")), 0);
	ck_assert_int_eq(valid_host_tool_name(S("a\0")), 0);
	ck_assert_int_eq(valid_host_tool_name(S("a{")), 0);
	ck_assert_int_eq(valid_host_tool_name(S("a`")), 0);
	ck_assert_int_eq(valid_host_tool_name(S("\xc3\xa9")), 0);
}
END_TEST

START_TEST(name_container_prefix)
{
	char	*s;
	size_t	 len;

	name_limit(valid_container_prefix, "a", CONTAINER_PREFIX_MAX);
	name_limit(valid_container_prefix, "0", 41);
	s = repeat_plus("r", 1, "----------------------------------------",
	    &len);
	ck_assert_uint_eq(len, CONTAINER_PREFIX_MAX);
	ck_assert_int_eq(valid_container_prefix(s, len), 1);
	free(s);
	s = repeat_plus("r", 1, "-----------------------------------------",
	    &len);
	ck_assert_int_eq(valid_container_prefix(s, len), 0);
	free(s);

	ck_assert_int_eq(valid_container_prefix(S("roundtable-sandbox")), 1);
	ck_assert_int_eq(valid_container_prefix(S("a")), 1);
	ck_assert_int_eq(valid_container_prefix(S("9")), 1);
	ck_assert_int_eq(valid_container_prefix(S("a-")), 1);
	ck_assert_int_eq(valid_container_prefix(S("-a")), 0);
	ck_assert_int_eq(valid_container_prefix(S("-")), 0);
	ck_assert_int_eq(valid_container_prefix(S("Abc")), 0);
	ck_assert_int_eq(valid_container_prefix(S("a_b")), 0);
	ck_assert_int_eq(valid_container_prefix(S("a.b")), 0);
	ck_assert_int_eq(valid_container_prefix(S("a b")), 0);
	ck_assert_int_eq(valid_container_prefix(S("a/b")), 0);
	ck_assert_int_eq(valid_container_prefix(S("a\0")), 0);
	ck_assert_int_eq(valid_container_prefix(S("\xc3\xa9")), 0);
}
END_TEST

START_TEST(name_runtime)
{
	name_limit(valid_runtime_name, "r", RUNTIME_NAME_MAX);
	ck_assert_int_eq(valid_runtime_name(S("runc")), 1);
	ck_assert_int_eq(valid_runtime_name(S("runsc")), 1);
	ck_assert_int_eq(valid_runtime_name(S("io.containerd.runsc.v1")), 1);
	ck_assert_int_eq(valid_runtime_name(S("kata-qemu")), 1);
	ck_assert_int_eq(valid_runtime_name(S("R_1")), 1);
	ck_assert_int_eq(valid_runtime_name(S("9")), 1);
	ck_assert_int_eq(valid_runtime_name(S("-runc")), 0);
	ck_assert_int_eq(valid_runtime_name(S(".runc")), 0);
	ck_assert_int_eq(valid_runtime_name(S("_runc")), 0);
	ck_assert_int_eq(valid_runtime_name(S("/usr/bin/runsc")), 0);
	ck_assert_int_eq(valid_runtime_name(S("a/b")), 0);
	ck_assert_int_eq(valid_runtime_name(S("a b")), 0);
	ck_assert_int_eq(valid_runtime_name(S("a:b")), 0);
	ck_assert_int_eq(valid_runtime_name(S("a=b")), 0);
	ck_assert_int_eq(valid_runtime_name(S("a\0b")), 0);
	ck_assert_int_eq(valid_runtime_name(S("a\n")), 0);
	ck_assert_int_eq(valid_runtime_name(S("\xc3\xa9")), 0);
}
END_TEST

START_TEST(name_image)
{
	ck_assert_int_eq(valid_image_name("", 0), 0);
	ck_assert_int_eq(valid_image_name(S("alpine")), 1);
	ck_assert_int_eq(valid_image_name(S("rtsandbox-worker:0.1.0")), 1);
	ck_assert_int_eq(valid_image_name(
	    S("registry.example.com:5000/team/worker@sha256:0123abcd")), 1);
	ck_assert_int_eq(valid_image_name(S("a-")), 1);
	ck_assert_int_eq(valid_image_name(S("-")), 0);
	ck_assert_int_eq(valid_image_name(S("-alpine")), 0);
	ck_assert_int_eq(valid_image_name(S("--privileged")), 0);
	ck_assert_int_eq(valid_image_name(S(" alpine")), 0);
	ck_assert_int_eq(valid_image_name(S("alpine ")), 0);
	ck_assert_int_eq(valid_image_name(S("a b")), 0);
	ck_assert_int_eq(valid_image_name(S("a\tb")), 0);
	ck_assert_int_eq(valid_image_name(S("a\nb")), 0);
	ck_assert_int_eq(valid_image_name(S("a\rb")), 0);
	ck_assert_int_eq(valid_image_name(S("a\vb")), 0);
	ck_assert_int_eq(valid_image_name(S("a\fb")), 0);
	ck_assert_int_eq(valid_image_name(S("a\0b")), 0);
	ck_assert_int_eq(valid_image_name(S("a\x1f")), 0);
	ck_assert_int_eq(valid_image_name(S("a\x7f")), 0);
	ck_assert_int_eq(valid_image_name(S("a\xc2\x85")), 0);	/* NEL */
	ck_assert_int_eq(valid_image_name(S("a\xc2\xa0" "b")), 0);
	ck_assert_int_eq(valid_image_name(S("a\xe2\x80\x8a")), 0);
	ck_assert_int_eq(valid_image_name(S("a\xe2\x80\xa8")), 0);
	ck_assert_int_eq(valid_image_name(S("a\xe3\x80\x80")), 0);
	ck_assert_int_eq(valid_image_name(S("a\xef\xbb\xbf")), 0);
	ck_assert_int_eq(valid_image_name(S("a\xff")), 0);
	ck_assert_int_eq(valid_image_name(S("a\xe2\x82")), 0);
}
END_TEST

/* str_append() cuts as snprintf() would: a NUL always, never past bufsz. */
START_TEST(append_cut)
{
	char	 b[8];
	size_t	 n;

	n = str_append(b, sizeof(b), 0, "abc", 3);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(b, "abc");
	n = str_append(b, sizeof(b), n, ".", 1);
	n = str_append_uint(b, sizeof(b), n, 42);
	ck_assert_uint_eq(n, 6);
	ck_assert_str_eq(b, "abc.42");
	/* seven bytes and the NUL fill it; the eighth is cut */
	ck_assert_uint_eq(str_append(b, sizeof(b), n, "x", 1), 7);
	ck_assert_str_eq(b, "abc.42x");
	ck_assert_uint_eq(str_append(b, sizeof(b), 7, "y", 1), 7);
	ck_assert_str_eq(b, "abc.42x");
	ck_assert_uint_eq(str_append(b, sizeof(b), 0, "", 0), 0);
	ck_assert_str_eq(b, "");
	ck_assert_uint_eq(str_append_uint(b, sizeof(b), 0, 0), 1);
	ck_assert_str_eq(b, "0");
	ck_assert_uint_eq(str_append_uint(b, sizeof(b), 0, UINT64_MAX), 7);
	ck_assert_str_eq(b, "1844674");
	ck_assert_uint_eq(str_append_uint(b, 1, 0, 5), 0);
	ck_assert_str_eq(b, "");
}
END_TEST

/* The run readers against one byte at a time: every byte value at every
 * position of a word and of the tail, and runs that end at the buffer. */
static size_t
run_ref(const uint8_t *s, size_t len, unsigned int top)
{
	size_t	 i = 0;

	while (i < len && s[i] >= 0x20 && s[i] <= top && s[i] != '"' &&
	    s[i] != '\\')
		i++;
	return i;
}

START_TEST(json_runs_every_byte)
{
	uint8_t		 buf[40];
	size_t		 len, pos;
	unsigned int	 c;

	for (len = 0; len <= sizeof(buf); len++) {
		memset(buf, 'a', sizeof(buf));
		ck_assert_uint_eq(json_string_run(buf, len), len);
		ck_assert_uint_eq(json_ascii_run(buf, len), len);
		for (pos = 0; pos < len; pos++)
			for (c = 0; c <= 0xff; c++) {
				buf[pos] = (uint8_t)c;
				ck_assert_uint_eq(json_string_run(buf, len),
				    run_ref(buf, len, 0xff));
				ck_assert_uint_eq(json_ascii_run(buf, len),
				    run_ref(buf, len, 0x7f));
				buf[pos] = 'a';
			}
	}
}
END_TEST

/* Words of several stop bytes and bytes around them, whose borrows could
 * mark a byte wrongly: a fixed pseudo-random walk over them. */
START_TEST(json_runs_mixed_words)
{
	static const uint8_t	 pick[] = {
		0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d,
		0x7e, 0x7f, 0x80, 0x9f, 0xa0, 0xc3, 0xff, 'a'
	};
	uint8_t		 buf[24];
	uint32_t	 x = 2463534242u;
	size_t		 n, i, len;

	for (n = 0; n < 200000; n++) {
		for (i = 0; i < sizeof(buf); i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			/* mostly plain, so that the stops come late too */
			buf[i] = (x & 0x300) != 0 ? 'a' :
			    pick[x % sizeof(pick)];
		}
		len = x % (sizeof(buf) + 1);
		ck_assert_uint_eq(json_string_run(buf, len),
		    run_ref(buf, len, 0xff));
		ck_assert_uint_eq(json_ascii_run(buf, len),
		    run_ref(buf, len, 0x7f));
	}
}
END_TEST

START_TEST(json_runs_stops)
{
	static const uint8_t	 t[] = "0123456789abcdef\\"
	    "\x1f\x7f\xc3\xa9\"";

	/* Each stop byte ends the run there, past a whole word of text. */
	ck_assert_uint_eq(json_string_run(t, sizeof(t) - 1), 16);
	ck_assert_uint_eq(json_string_run(t + 17, sizeof(t) - 18), 0);
	/* 0x7f and UTF-8 pass the string run, not the ASCII one. */
	ck_assert_uint_eq(json_string_run(t + 18, sizeof(t) - 19), 3);
	ck_assert_uint_eq(json_ascii_run(t + 18, sizeof(t) - 19), 1);
	ck_assert_uint_eq(json_string_run(t, 0), 0);
	/* A byte below 0x20 next to bytes of 0x80 and above in one word. */
	ck_assert_uint_eq(json_string_run((const uint8_t *)
	    "\xff\xff\xff\x01\xff\xff\xff\xff", 8), 3);
	ck_assert_uint_eq(json_string_run((const uint8_t *)
	    "\x21\x21\x21\x21\x21\x21\x21\x20", 8), 8);
	ck_assert_uint_eq(json_string_run((const uint8_t *)
	    "\x23\x23\x23\x23\x5b\x5d\x5c\x20", 8), 6);
}
END_TEST

/* http_tchar(): RFC 9110's tchar, every byte. */
START_TEST(tchar_every_byte)
{
	int	 c, want;

	for (c = 0; c < 256; c++) {
		want = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		    (c >= 'A' && c <= 'Z') ||
		    (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
		ck_assert_msg(http_tchar((unsigned char)c) == want,
		    "byte 0x%02x", c);
	}
}
END_TEST

START_TEST(thinking_levels)
{
	ck_assert_int_eq(valid_thinking(S("low")), 1);
	ck_assert_int_eq(valid_thinking(S("medium")), 1);
	ck_assert_int_eq(valid_thinking(S("high")), 1);
	ck_assert_int_eq(valid_thinking(S("xhigh")), 1);
	ck_assert_int_eq(valid_thinking("", 0), 0);
	ck_assert_int_eq(valid_thinking(S("max")), 0);
	ck_assert_int_eq(valid_thinking(S("Low")), 0);
	ck_assert_int_eq(valid_thinking(S("HIGH")), 0);
	ck_assert_int_eq(valid_thinking(S("lo")), 0);
	ck_assert_int_eq(valid_thinking(S("lowx")), 0);
	ck_assert_int_eq(valid_thinking(S("xhig")), 0);
	ck_assert_int_eq(valid_thinking(S(" low")), 0);
	ck_assert_int_eq(valid_thinking(S("low\0")), 0);
	ck_assert_int_eq(valid_thinking(S("none")), 0);
	/* The length, not a NUL, ends the text. */
	ck_assert_int_eq(valid_thinking("highway", 4), 1);
	ck_assert_int_eq(valid_thinking("low", 2), 0);
}
END_TEST

static Suite *
validate_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("validate");

	tc = tcase_create("utf8");
	tcase_add_test(tc, utf16_ascii);
	tcase_add_test(tc, utf16_multibyte);
	tcase_add_test(tc, utf16_every_scalar);
	tcase_add_test(tc, utf8_invalid);
	tcase_add_test(tc, text_check_limits);
	tcase_add_test(tc, text_check_refusals);
	tcase_add_test(tc, json_runs_every_byte);
	tcase_add_test(tc, json_runs_stops);
	tcase_add_test(tc, json_runs_mixed_words);
	suite_add_tcase(s, tc);

	tc = tcase_create("safe_name");
	tcase_add_test(tc, safe_name_length);
	tcase_add_test(tc, safe_name_chars);
	suite_add_tcase(s, tc);

	tc = tcase_create("base64");
	tcase_add_test(tc, b64_vectors);
	tcase_add_test(tc, b64_empty);
	tcase_add_test(tc, b64_refusals);
	tcase_add_test(tc, b64_unused_bits_all);
	tcase_add_test(tc, b64_room);
	tcase_add_test(tc, b64_round_trip);
	tcase_add_test(tc, b64_limits);
	suite_add_tcase(s, tc);

	tc = tcase_create("segment");
	tcase_add_test(tc, segment_mapping);
	tcase_add_test(tc, segment_limits);
	tcase_add_test(tc, segment_refusals);
	suite_add_tcase(s, tc);

	tc = tcase_create("names");
	tcase_add_test(tc, name_profile);
	tcase_add_test(tc, name_mcp_server);
	tcase_add_test(tc, name_tool_use);
	tcase_add_test(tc, name_host_tool);
	tcase_add_test(tc, name_container_prefix);
	tcase_add_test(tc, name_image);
	tcase_add_test(tc, name_runtime);
	tcase_add_test(tc, thinking_levels);
	tcase_add_test(tc, tchar_every_byte);
	tcase_add_test(tc, append_cut);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(validate_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
