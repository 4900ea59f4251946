/*
 * The log writer: every line is escaped whatever its message holds (C0 and
 * C1 controls, DEL, bytes that are not UTF-8, backslashes), valid text is
 * left alone, a line is one write of at most LOG_LINE_MAX bytes that always
 * ends in its own newline and never in half an escape, and errno survives.
 */
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

/* Escape all of s; the result is a NUL-terminated static buffer. */
static const char *
esc(const char *s, size_t len)
{
	static char	 out[4 * 512 + 1];
	size_t		 n, used;

	ck_assert_uint_le(len, 512);
	n = log_escape(out, sizeof(out) - 1, s, len, &used);
	ck_assert_uint_eq(used, len);
	out[n] = '\0';
	return out;
}

START_TEST(every_c0_and_del)
{
	char	 in[1], want[8];
	int	 c;

	for (c = 0; c <= 0x7f; c++) {
		if (c >= 0x20 && c < 0x7f)
			continue;
		in[0] = (char)c;
		snprintf(want, sizeof(want), "\\x%02x", c);
		ck_assert_str_eq(esc(in, 1), want);
	}
	/* the forgeries of the audit: a new line with a priority of its own */
	ck_assert_str_eq(esc("t1\n<2>forged", 12), "t1\\x0a<2>forged");
	ck_assert_str_eq(esc("a\r\n\tb\x1b[2J", 9),
	    "a\\x0d\\x0a\\x09b\\x1b[2J");
	ck_assert_str_eq(esc("a\0b", 3), "a\\x00b");
}
END_TEST

START_TEST(every_c1_in_utf8)
{
	char	 in[2], want[16];
	int	 c;

	for (c = 0x80; c <= 0x9f; c++) {
		in[0] = (char)0xc2;
		in[1] = (char)c;
		snprintf(want, sizeof(want), "\\xc2\\x%02x", c);
		ck_assert_str_eq(esc(in, 2), want);
	}
	/* and as a lone byte (8-bit controls) */
	ck_assert_str_eq(esc("\x85", 1), "\\x85");
	ck_assert_str_eq(esc("\x9b" "2J", 3), "\\x9b2J");
}
END_TEST

START_TEST(valid_text_untouched)
{
	/* every printable ASCII character but the backslash */
	char	 ascii[0x60];
	size_t	 n = 0;
	int	 c;

	for (c = 0x20; c < 0x7f; c++)
		if (c != '\\')
			ascii[n++] = (char)c;
	ascii[n] = '\0';
	ck_assert_uint_eq(n, 0x5e);
	ck_assert_str_eq(esc(ascii, n), ascii);
}
END_TEST

START_TEST(multibyte_untouched)
{
	static const char *const ok[] = {
		"\xc2\xa0",			/* U+00A0, just past C1 */
		"caf\xc3\xa9",			/* é */
		"\xdf\xbf",			/* U+07FF */
		"\xe0\xa0\x80",			/* U+0800 */
		"\xe2\x82\xac 5",		/* € */
		"\xe2\x80\xa8",			/* U+2028 */
		"\xed\x9f\xbf",			/* U+D7FF, before surrogates */
		"\xee\x80\x80",			/* U+E000 */
		"\xef\xbf\xbf",			/* U+FFFF */
		"\xf0\x90\x80\x80",		/* U+10000 */
		"\xf0\x9d\x84\x9e",		/* 𝄞 */
		"\xf4\x8f\xbf\xbf",		/* U+10FFFF */
		"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
	};
	size_t	 i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_str_eq(esc(ok[i], strlen(ok[i])), ok[i]);
}
END_TEST

START_TEST(not_utf8_escaped)
{
	ck_assert_str_eq(esc("\xc0\x80", 2), "\\xc0\\x80");	/* overlong */
	ck_assert_str_eq(esc("\xc1\xbf", 2), "\\xc1\\xbf");
	ck_assert_str_eq(esc("\xe0\x80\x8a", 3), "\\xe0\\x80\\x8a");
	ck_assert_str_eq(esc("\xf0\x80\x80\x8a", 4),
	    "\\xf0\\x80\\x80\\x8a");
	ck_assert_str_eq(esc("\xed\xa0\x80", 3), "\\xed\\xa0\\x80");
	ck_assert_str_eq(esc("\xf4\x90\x80\x80", 4),
	    "\\xf4\\x90\\x80\\x80");
	ck_assert_str_eq(esc("\xf5\x80", 2), "\\xf5\\x80");
	ck_assert_str_eq(esc("\xff", 1), "\\xff");
	/* a sequence cut short, in the middle and at the end */
	ck_assert_str_eq(esc("\xe2\x82x", 3), "\\xe2\\x82x");
	ck_assert_str_eq(esc("a\xe2\x82", 3), "a\\xe2\\x82");
	ck_assert_str_eq(esc("\xf0\x9d\x84", 3), "\\xf0\\x9d\\x84");
}
END_TEST

START_TEST(backslash_doubled)
{
	/* an escape written out by a peer cannot pass for one */
	ck_assert_str_eq(esc("\\x0a", 4), "\\\\x0a");
	ck_assert_str_eq(esc("\\", 1), "\\\\");
	ck_assert_str_eq(esc("a\\\nb", 4), "a\\\\\\x0ab");
}
END_TEST

/* Never half an escape or half a UTF-8 sequence when the room ends. */
START_TEST(room_ends_between_escapes)
{
	char	 out[16];
	size_t	 n, used;

	memset(out, '#', sizeof(out));
	n = log_escape(out, 3, "\n", 1, &used);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(used, 0);
	ck_assert_int_eq(out[0], '#');
	n = log_escape(out, 4, "\n\n", 2, &used);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(used, 1);
	ck_assert(memcmp(out, "\\x0a", 4) == 0);
	n = log_escape(out, 5, "ab\n", 3, &used);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(used, 2);
	n = log_escape(out, 1, "\\", 1, &used);
	ck_assert_uint_eq(n, 0);
	n = log_escape(out, 3, "a\xe2\x82\xac", 4, &used);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(used, 1);
	n = log_escape(out, 4, "a\xe2\x82\xac", 4, &used);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(used, 4);
	n = log_escape(out, 0, "a", 1, &used);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(used, 0);
	/* a run of printable bytes is cut where the room ends */
	n = log_escape(out, 3, "abcdef", 6, &used);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(used, 3);
	ck_assert(memcmp(out, "abc", 3) == 0);
	n = log_escape(out, 4, "ab\\c", 4, &used);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(used, 3);
	ck_assert(memcmp(out, "ab\\\\", 4) == 0);
}
END_TEST

/*
 * The writer itself, with stderr on a pipe.
 */

static int	 pipe_rd = -1;

static void
capture(void)
{
	int	 p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_ne(dup2(p[1], STDERR_FILENO), -1);
	close(p[1]);
	pipe_rd = p[0];
	ck_assert_int_eq(fcntl(pipe_rd, F_SETFL, O_NONBLOCK), 0);
}

/* One read(2) of what the pipe holds: one write, when the writer wrote
 * once.  NUL-terminated in buf; returns the length. */
static size_t
one_read(char *buf, size_t len)
{
	ssize_t	 n;

	n = read(pipe_rd, buf, len - 1);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_int_eq(read(pipe_rd, buf + n, 1), -1);	/* nothing more */
	ck_assert_int_eq(errno, EAGAIN);
	return (size_t)n;
}

START_TEST(one_line_per_message)
{
	char	 buf[2 * LOG_LINE_MAX];

	unsetenv("JOURNAL_STREAM");
	log_init("broker[c_1]", 0);
	capture();
	log_warnx("unknown turn %s", "t1\n<2>broker[c_1]: forged\r");
	one_read(buf, sizeof(buf));
	ck_assert_str_eq(buf, "broker[c_1]: unknown turn "
	    "t1\\x0a<2>broker[c_1]: forged\\x0d\n");
	/* the role's own name is escaped too */
	log_setname("x\ny");
	log_info("%s", "ok");
	one_read(buf, sizeof(buf));
	ck_assert_str_eq(buf, "x\\x0ay: ok\n");
}
END_TEST

START_TEST(journal_priority_not_forged)
{
	char	 buf[2 * LOG_LINE_MAX];

	setenv("JOURNAL_STREAM", "8:1234", 1);
	log_init("supervisor", 0);
	capture();
	log_warnx("server %s refused", "s\n<0>supervisor: panic");
	one_read(buf, sizeof(buf));
	ck_assert_str_eq(buf, "<4>supervisor: server "
	    "s\\x0a<0>supervisor: panic refused\n");
	log_info("\xc2\x85<1>x");
	one_read(buf, sizeof(buf));
	ck_assert_str_eq(buf, "<6>supervisor: \\xc2\\x85<1>x\n");
	unsetenv("JOURNAL_STREAM");
}
END_TEST

/* A line escaped by its writer keeps its backslashes, nothing else. */
START_TEST(escaped_line_kept)
{
	char	 buf[2 * LOG_LINE_MAX];

	unsetenv("JOURNAL_STREAM");
	log_init("egress", 0);
	capture();
	log_escaped(0, "call: speaker=\"u\\x0a\\\"\" ok");
	one_read(buf, sizeof(buf));
	ck_assert_str_eq(buf, "egress: call: speaker=\"u\\x0a\\\"\" ok\n");
	/* what the writer failed to escape is escaped all the same */
	log_escaped(1, "a\nb");
	one_read(buf, sizeof(buf));
	ck_assert_str_eq(buf, "egress: a\\x0ab\n");
}
END_TEST

START_TEST(errno_kept)
{
	char	 buf[2 * LOG_LINE_MAX];

	unsetenv("JOURNAL_STREAM");
	log_init("t", 1);
	capture();
	errno = EXDEV;
	log_warnx("a\n");
	ck_assert_int_eq(errno, EXDEV);
	one_read(buf, sizeof(buf));
	errno = EXDEV;
	log_info("b");
	ck_assert_int_eq(errno, EXDEV);
	one_read(buf, sizeof(buf));
	errno = EXDEV;
	log_debug("c");
	ck_assert_int_eq(errno, EXDEV);
	one_read(buf, sizeof(buf));
	errno = EXDEV;
	log_warn("d\n");
	ck_assert_int_eq(errno, EXDEV);
	one_read(buf, sizeof(buf));
	ck_assert_str_eq(buf, "t: d\\x0a: Invalid cross-device link\n");
	/* and when the write itself fails */
	close(STDERR_FILENO);
	errno = EXDEV;
	log_warnx("e");
	ck_assert_int_eq(errno, EXDEV);
}
END_TEST

/* "t: " and the message: a line of exactly len bytes with the newline. */
static void
fill(char *msg, size_t linelen, char c)
{
	size_t	 n = linelen - strlen("t: ") - 1;

	memset(msg, c, n);
	msg[n] = '\0';
}

START_TEST(line_at_the_limit_and_past)
{
	char	 buf[2 * LOG_LINE_MAX], msg[LOG_LINE_MAX + 8];
	size_t	 n;

	unsetenv("JOURNAL_STREAM");
	log_init("t", 0);
	capture();
	/* at the limit: whole */
	fill(msg, LOG_LINE_MAX, 'a');
	log_warnx("%s", msg);
	n = one_read(buf, sizeof(buf));
	ck_assert_uint_eq(n, LOG_LINE_MAX);
	ck_assert_int_eq(buf[n - 1], '\n');
	ck_assert_int_eq(buf[n - 2], 'a');
	ck_assert(strncmp(buf, "t: aaa", 6) == 0);
	/* one past: one character less, the newline kept */
	fill(msg, LOG_LINE_MAX + 1, 'a');
	log_warnx("%s", msg);
	n = one_read(buf, sizeof(buf));
	ck_assert_uint_eq(n, LOG_LINE_MAX);
	ck_assert_int_eq(buf[n - 1], '\n');
	ck_assert_uint_eq(strspn(buf + 3, "a"), LOG_LINE_MAX - 4);
	/* far past */
	memset(msg, 'b', sizeof(msg) - 1);
	msg[sizeof(msg) - 1] = '\0';
	log_warnx("%s", msg);
	n = one_read(buf, sizeof(buf));
	ck_assert_uint_eq(n, LOG_LINE_MAX);
	ck_assert_int_eq(buf[n - 1], '\n');
}
END_TEST

START_TEST(escapes_at_the_limit_and_past)
{
	char	 buf[2 * LOG_LINE_MAX], msg[LOG_LINE_MAX];
	size_t	 n, k, room = LOG_LINE_MAX - strlen("t: ") - 1;

	unsetenv("JOURNAL_STREAM");
	log_init("t", 0);
	capture();
	/*
	 * Escapes of four bytes from each offset 0-3 of the line's last
	 * four: each cut falls before an escape that does not fit whole.
	 */
	for (k = 0; k < 4; k++) {
		memset(msg, 'a', k);
		memset(msg + k, '\n', (room - k) / 4 + 1);
		msg[k + (room - k) / 4 + 1] = '\0';
		log_warnx("%s", msg);
		n = one_read(buf, sizeof(buf));
		ck_assert_uint_eq(n, strlen("t: ") + k +
		    (room - k) / 4 * 4 + 1);
		ck_assert_uint_le(n, LOG_LINE_MAX);
		ck_assert_int_eq(buf[n - 1], '\n');
		ck_assert(memcmp(buf + n - 5, "\\x0a\n", 5) == 0);
		ck_assert_ptr_null(memchr(buf, '\n', n - 1));
	}
	/* exactly at the limit with escapes: all of them */
	memset(msg, 'a', room % 4);
	memset(msg + room % 4, '\n', room / 4);
	msg[room % 4 + room / 4] = '\0';
	log_warnx("%s", msg);
	n = one_read(buf, sizeof(buf));
	ck_assert_uint_eq(n, LOG_LINE_MAX);
	/* a UTF-8 sequence that does not fit whole is left out whole */
	memset(msg, 'a', room - 2);
	memcpy(msg + room - 2, "\xe2\x82\xac", 4);
	log_warnx("%s", msg);
	n = one_read(buf, sizeof(buf));
	ck_assert_uint_eq(n, LOG_LINE_MAX - 2);
	ck_assert(memcmp(buf + n - 2, "a\n", 2) == 0);
}
END_TEST

START_TEST(fatal_is_escaped)
{
	char	 buf[2 * LOG_LINE_MAX];
	pid_t	 pid;
	int	 st;

	unsetenv("JOURNAL_STREAM");
	log_init("egress", 0);
	capture();
	if ((pid = fork()) == 0)
		fatalx("bad %s", "x\n<0>y");
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	one_read(buf, sizeof(buf));
	ck_assert_str_eq(buf, "fatal in egress: bad x\\x0a<0>y\n");
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("log");
	TCase	*tc = tcase_create("escape");
	TCase	*tw = tcase_create("writer");
	SRunner	*sr;
	int	 failed;

	tcase_add_test(tc, every_c0_and_del);
	tcase_add_test(tc, every_c1_in_utf8);
	tcase_add_test(tc, valid_text_untouched);
	tcase_add_test(tc, multibyte_untouched);
	tcase_add_test(tc, not_utf8_escaped);
	tcase_add_test(tc, backslash_doubled);
	tcase_add_test(tc, escaped_line_kept);
	tcase_add_test(tc, room_ends_between_escapes);
	suite_add_tcase(s, tc);
	tcase_add_test(tw, one_line_per_message);
	tcase_add_test(tw, journal_priority_not_forged);
	tcase_add_test(tw, errno_kept);
	tcase_add_test(tw, line_at_the_limit_and_past);
	tcase_add_test(tw, escapes_at_the_limit_and_past);
	tcase_add_test(tw, fatal_is_escaped);
	suite_add_tcase(s, tw);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
