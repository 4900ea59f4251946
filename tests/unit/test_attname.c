/*
 * supervisor/attname.c: each rule of the attachment file name in its
 * order, the tail and byte bounds at the limit and one past, and every
 * refusal.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attname.h"
#include "limits.h"
#include "validate.h"

#define S(lit)	(lit), (sizeof(lit) - 1)

static char	out[SAFE_NAME_MAX + 1];

/* n copies of unit, NUL-terminated. */
static char *
repeat(const char *unit, size_t n)
{
	size_t	 ul = strlen(unit), i;
	char	*s;

	s = malloc(ul * n + 1);
	ck_assert_ptr_nonnull(s);
	for (i = 0; i < n; i++)
		memcpy(s + i * ul, unit, ul);
	s[ul * n] = '\0';
	return s;
}

static void
name_is(const char *name, size_t len, const char *want)
{
	ck_assert_int_eq(attname_make("m1", 0, 0, name, len, out,
	    sizeof(out)), 0);
	ck_assert_msg(strncmp(out, "m1-0-", 5) == 0, "%s", out);
	ck_assert_str_eq(out + 5, want);
	ck_assert(valid_safe_name(out, strlen(out)));
}

START_TEST(message_ids)
{
	char	*s;

	ck_assert(attname_message_id_valid(S("a")));
	ck_assert(attname_message_id_valid(S("AZaz09_-")));
	ck_assert(attname_message_id_valid(S("1234567890123456789")));
	ck_assert(!attname_message_id_valid(S("")));
	ck_assert(!attname_message_id_valid(S("a.b")));
	ck_assert(!attname_message_id_valid(S("a/b")));
	ck_assert(!attname_message_id_valid(S("a b")));
	ck_assert(!attname_message_id_valid(S("..")));
	ck_assert(!attname_message_id_valid(S("\xc3\xa9")));
	ck_assert(!attname_message_id_valid("a\0b", 3));

	s = repeat("x", ATTACH_MESSAGE_ID_MAX + 1);
	ck_assert(attname_message_id_valid(s, ATTACH_MESSAGE_ID_MAX));
	ck_assert(!attname_message_id_valid(s, ATTACH_MESSAGE_ID_MAX + 1));
	ck_assert_int_eq(attname_make(s, 0, 0, S("f"), out, sizeof(out)), -1);
	ck_assert_str_eq(out, "");
	s[ATTACH_MESSAGE_ID_MAX] = '\0';
	ck_assert_int_eq(attname_make(s, 0, 0, S("f"), out, sizeof(out)), 0);
	ck_assert_uint_eq(strlen(out), ATTACH_MESSAGE_ID_MAX + 4);
	free(s);

	ck_assert_int_eq(attname_make("", 0, 0, S("f"), out, sizeof(out)), -1);
	ck_assert_int_eq(attname_make("a/b", 0, 0, S("f"), out, sizeof(out)),
	    -1);
	ck_assert_int_eq(attname_make("a.b", 1, 0, S("f"), out, sizeof(out)),
	    -1);
	ck_assert_int_eq(attname_make(NULL, 0, 0, S("f"), out, sizeof(out)),
	    -1);
}
END_TEST

START_TEST(prefixes)
{
	ck_assert_int_eq(attname_make("123", 0, 0, S("a.png"), out,
	    sizeof(out)), 0);
	ck_assert_str_eq(out, "123-0-a.png");
	ck_assert_int_eq(attname_make("123", 1, 0, S("a.png"), out,
	    sizeof(out)), 0);
	ck_assert_str_eq(out, "123-ref-0-a.png");
	ck_assert_int_eq(attname_make("123", 0, 7, S("a.png"), out,
	    sizeof(out)), 0);
	ck_assert_str_eq(out, "123-7-a.png");
	ck_assert_int_eq(attname_make("Ab_-9", 1, 12, S("a.png"), out,
	    sizeof(out)), 0);
	ck_assert_str_eq(out, "Ab_-9-ref-12-a.png");
	ck_assert_int_eq(attname_make("x", 0, 4294967295u, S("a"), out,
	    sizeof(out)), 0);
	ck_assert_str_eq(out, "x-4294967295-a");
	ck_assert_int_eq(attname_make("x", 5, 1, S("a"), out, sizeof(out)), 0);
	ck_assert_str_eq(out, "x-ref-1-a");
}
END_TEST

START_TEST(nfc)
{
	/* e + COMBINING ACUTE ACCENT composes to U+00E9. */
	name_is(S("e\xcc\x81.txt"), "\xc3\xa9.txt");
	name_is(S("\xc3\xa9.txt"), "\xc3\xa9.txt");
	/* Hangul jamo compose; ANGSTROM SIGN is replaced by U+00C5. */
	name_is(S("\xe1\x84\x92\xe1\x85\xa1\xe1\x86\xab"), "\xed\x95\x9c");
	name_is(S("\xe2\x84\xab"), "\xc3\x85");
	/* NFC, not NFKC: the ligature stays. */
	name_is(S("\xef\xac\x81"), "\xef\xac\x81");
}
END_TEST

START_TEST(replacements)
{
	name_is(S("a/b\\c"), "a_b_c");
	name_is(S("../../etc/passwd"), "__.._etc_passwd");
	name_is(S("/"), "_");
	name_is(S("a\tb\nc\rd"), "a_b_c_d");
	name_is("a\0b", 3, "a_b");
	name_is(S("\x01\x1f\x7f"), "___");
	/* U+0080 and U+009F are controls, U+00A0 is not. */
	name_is(S("a\xc2\x80" "b\xc2\x9f" "c\xc2\xa0"), "a_b_c\xc2\xa0");
	/* Full-width solidus is a character, not a separator. */
	name_is(S("a\xef\xbc\x8f" "b"), "a\xef\xbc\x8f" "b");
	name_is(S("a b:c*?\"<>|"), "a b:c*?\"<>|");
}
END_TEST

START_TEST(leading_dots)
{
	name_is(S("..hidden"), "_hidden");
	name_is(S(".hidden"), "_hidden");
	name_is(S("..."), "_");
	name_is(S("."), "_");
	name_is(S(".."), "_");
	name_is(S("a..b."), "a..b.");
	name_is(S(" .x"), " .x");
	/* Replacement comes first: "/." starts with '_', not a dot. */
	name_is(S("/.x"), "_.x");
	/* A combining mark after a dot does not compose with it. */
	name_is(S(".\xcc\x81"), "_\xcc\x81");
}
END_TEST

START_TEST(empty)
{
	name_is("", 0, "file");
	name_is(NULL, 0, "file");
	ck_assert_int_eq(attname_make("m", 1, 3, "", 0, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "m-ref-3-file");
}
END_TEST

START_TEST(tail)
{
	char	*s, *want;

	s = repeat("a", ATTACH_NAME_TAIL);
	name_is(s, strlen(s), s);
	free(s);

	/* One past: the first code point goes. */
	s = repeat("a", ATTACH_NAME_TAIL + 1);
	s[0] = 'z';
	s[1] = 'b';
	name_is(s, strlen(s), s + 1);
	free(s);

	/* Counted in code points, not bytes: 120 of 2 bytes fit. */
	s = repeat("\xc3\xa9", ATTACH_NAME_TAIL);
	name_is(s, strlen(s), s);
	free(s);
	s = repeat("\xc3\xa9", ATTACH_NAME_TAIL + 1);
	name_is(s, strlen(s), s + 2);
	free(s);

	/* The tail is taken after NFC: 121 decomposed, 120 composed. */
	s = repeat("e\xcc\x81", ATTACH_NAME_TAIL);
	want = repeat("\xc3\xa9", ATTACH_NAME_TAIL);
	name_is(s, strlen(s), want);
	free(want);
	free(s);

	/* And after the leading dots shrink to one '_', which then goes. */
	s = repeat("x", ATTACH_NAME_TAIL + 11);
	memset(s, '.', 11);
	want = repeat("x", ATTACH_NAME_TAIL);
	name_is(s, strlen(s), want);
	free(want);
	free(s);
}
END_TEST

START_TEST(byte_bound)
{
	char	*s, *id, *want;
	size_t	 plen, room;

	/* 120 four-byte code points are 480 bytes: only whole ones fit. */
	s = repeat("\xf0\x9f\x98\x80", ATTACH_NAME_TAIL);
	ck_assert_int_eq(attname_make("m1", 0, 0, s, strlen(s), out,
	    sizeof(out)), 0);
	plen = strlen("m1-0-");
	room = (SAFE_NAME_MAX - plen) / 4 * 4;
	ck_assert_uint_eq(strlen(out), plen + room);
	ck_assert_str_eq(out + plen, s + strlen(s) - room);
	ck_assert(valid_safe_name(out, strlen(out)));
	free(s);

	/* The longest prefix: 100-char id, "ref", a 10-digit index. */
	id = repeat("i", ATTACH_MESSAGE_ID_MAX);
	s = repeat("\xf0\x9f\x98\x80", ATTACH_NAME_TAIL);
	ck_assert_int_eq(attname_make(id, 1, 4294967295u, s, strlen(s), out,
	    sizeof(out)), 0);
	plen = ATTACH_MESSAGE_ID_MAX + strlen("-ref-4294967295-");
	room = (SAFE_NAME_MAX - plen) / 4 * 4;
	ck_assert_uint_eq(strlen(out), plen + room);
	ck_assert_str_eq(out + plen, s + strlen(s) - room);
	ck_assert(valid_safe_name(out, strlen(out)));
	free(s);

	/* ASCII never meets the byte bound: 116 + 120 bytes. */
	plen = ATTACH_MESSAGE_ID_MAX + strlen("-ref-4294967295-");
	s = repeat("a", ATTACH_NAME_TAIL);
	ck_assert_int_eq(attname_make(id, 1, 4294967295u, s, strlen(s), out,
	    sizeof(out)), 0);
	ck_assert_uint_eq(strlen(out), plen + ATTACH_NAME_TAIL);
	free(s);
	/* 116 + 3 * 46 = 254; one more 3-byte char is 257: it goes. */
	s = repeat("\xe2\x82\xac", 47);
	ck_assert_int_eq(attname_make(id, 1, 4294967295u, s, strlen(s), out,
	    sizeof(out)), 0);
	ck_assert_uint_eq(strlen(out), plen + 3 * 46);
	want = repeat("\xe2\x82\xac", 46);
	ck_assert_str_eq(out + plen, want);
	free(want);
	free(s);
	/* 116 + 1 + 138 = 255 bytes: at the bound, all of it stays. */
	want = repeat("\xe2\x82\xac", 46);
	s = malloc(strlen(want) + 3);
	ck_assert_ptr_nonnull(s);
	s[0] = 'a';
	strcpy(s + 1, want);
	ck_assert_int_eq(attname_make(id, 1, 4294967295u, s, strlen(s), out,
	    sizeof(out)), 0);
	ck_assert_uint_eq(strlen(out), SAFE_NAME_MAX);
	ck_assert_str_eq(out + plen, s);
	/* One byte past: only the leading 'a' goes. */
	s[0] = 'b';
	s[1] = 'a';
	strcpy(s + 2, want);
	ck_assert_int_eq(attname_make(id, 1, 4294967295u, s, strlen(s), out,
	    sizeof(out)), 0);
	ck_assert_uint_eq(strlen(out), SAFE_NAME_MAX);
	ck_assert_str_eq(out + plen, s + 1);
	free(want);
	free(s);
	free(id);
}
END_TEST

START_TEST(out_sizes)
{
	/* "m-0-abc" is 7 bytes: 8 with the NUL is enough, 7 is not. */
	char	 small[16];

	ck_assert_int_eq(attname_make("m", 0, 0, S("abc"), small, 8), 0);
	ck_assert_str_eq(small, "m-0-abc");
	ck_assert_int_eq(attname_make("m", 0, 0, S("abc"), small, 7), -1);
	ck_assert_str_eq(small, "");
	ck_assert_int_eq(attname_make("m", 0, 0, S("abc"), small, 4), -1);
	ck_assert_str_eq(small, "");
	ck_assert_int_eq(attname_make("m", 0, 0, S("abc"), small, 0), -1);
	ck_assert_int_eq(attname_make("m", 0, 0, S("abc"), NULL, 8), -1);
	ck_assert_int_eq(attname_make("m", 0, 0, "", 0, small, 8), -1);
	ck_assert_int_eq(attname_make("m", 0, 0, "", 0, small, 9), 0);
	ck_assert_str_eq(small, "m-0-file");
}
END_TEST

START_TEST(invalid_utf8)
{
	static const char	*bad[] = {
		"\xff", "a\x80", "\xc3", "\xc0\xaf", "\xe0\x80\xaf",
		"\xed\xa0\x80", "\xf4\x90\x80\x80", "ok\xf0\x9f\x98",
	};
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(attname_make("m", 0, 0, bad[i],
		    strlen(bad[i]), out, sizeof(out)), -1);
		ck_assert_str_eq(out, "");
	}
	/* Non-characters and U+FFFD itself are valid UTF-8. */
	name_is(S("\xef\xbf\xbf\xef\xbf\xbd"), "\xef\xbf\xbf\xef\xbf\xbd");
}
END_TEST

static Suite *
attname_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("attname");

	tc = tcase_create("prefix");
	tcase_add_test(tc, message_ids);
	tcase_add_test(tc, prefixes);
	tcase_add_test(tc, out_sizes);
	suite_add_tcase(s, tc);

	tc = tcase_create("name");
	tcase_add_test(tc, nfc);
	tcase_add_test(tc, replacements);
	tcase_add_test(tc, leading_dots);
	tcase_add_test(tc, empty);
	tcase_add_test(tc, tail);
	tcase_add_test(tc, byte_bound);
	tcase_add_test(tc, invalid_utf8);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(attname_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
