/*
 * The last lines of a container's log (dockerd-client/docklogs.c): the
 * Engine API's multiplexed frames and plain text, lines across frames, the
 * limits on lines and on each line, and streams that break off or break
 * the format.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docklogs.h"

static struct dock_log_lines	 dl;

/* One frame of stream s around n bytes of p, appended at buf + *len. */
static void
frame(uint8_t *buf, size_t *len, int s, const char *p, size_t n)
{
	buf[(*len)++] = (uint8_t)s;
	buf[(*len)++] = 0;
	buf[(*len)++] = 0;
	buf[(*len)++] = 0;
	buf[(*len)++] = (uint8_t)(n >> 24);
	buf[(*len)++] = (uint8_t)(n >> 16);
	buf[(*len)++] = (uint8_t)(n >> 8);
	buf[(*len)++] = (uint8_t)n;
	memcpy(buf + *len, p, n);
	*len += n;
}

START_TEST(frames)
{
	uint8_t	 buf[256];
	size_t	 len = 0;

	frame(buf, &len, 2, "turn t1: started\n", 17);
	frame(buf, &len, 1, "half ", 5);
	frame(buf, &len, 2, "a line\r\nlast", 12);
	ck_assert_int_eq(dock_logs_parse(buf, len, 200, &dl), 0);
	ck_assert(dl.dl_framed);
	ck_assert(!dl.dl_cut);
	ck_assert_uint_eq(dl.dl_n, 3);
	ck_assert_str_eq(dl.dl_line[0], "turn t1: started");
	ck_assert_str_eq(dl.dl_line[1], "half a line");
	ck_assert_str_eq(dl.dl_line[2], "last");
}
END_TEST

/* A TTY's answer, and whatever does not begin as a frame, is text. */
START_TEST(plain)
{
	const char	*t = "one\ntwo\n";

	ck_assert_int_eq(dock_logs_parse((const uint8_t *)t, strlen(t), 200,
	    &dl), 0);
	ck_assert(!dl.dl_framed);
	ck_assert_uint_eq(dl.dl_n, 2);
	ck_assert_str_eq(dl.dl_line[1], "two");
	ck_assert_int_eq(dock_logs_parse((const uint8_t *)"", 0, 200, &dl),
	    0);
	ck_assert_uint_eq(dl.dl_n, 0);
}
END_TEST

/* What a worker writes cannot make a line of the host's log of its own. */
START_TEST(escaped)
{
	uint8_t		 buf[256];
	size_t		 len = 0;
	const char	*t = "a\rRTSANDBOX_STATUS=200\x1b[31m\xff\"\\\n";

	frame(buf, &len, 1, t, strlen(t));
	ck_assert_int_eq(dock_logs_parse(buf, len, 200, &dl), 0);
	ck_assert_uint_eq(dl.dl_n, 1);
	ck_assert_str_eq(dl.dl_line[0],
	    "a\\x0dRTSANDBOX_STATUS=200\\x1b[31m\\xff\\\"\\\\");
}
END_TEST

/* 200 lines are kept, the last ones, in order; 201 asked is refused. */
START_TEST(lines_limit)
{
	char	*text, num[16];
	size_t	 i, o = 0;

	text = malloc(1000 * 16);
	ck_assert_ptr_nonnull(text);
	for (i = 0; i < 1000; i++)
		o += (size_t)snprintf(text + o, 16, "l%zu\n", i);
	ck_assert_int_eq(dock_logs_parse((uint8_t *)text, o,
	    DOCK_LOGS_LINES_MAX, &dl), 0);
	ck_assert_uint_eq(dl.dl_n, DOCK_LOGS_LINES_MAX);
	for (i = 0; i < DOCK_LOGS_LINES_MAX; i++) {
		snprintf(num, sizeof(num), "l%zu", 800 + i);
		ck_assert_str_eq(dl.dl_line[i], num);
	}
	/* exactly as many as kept: none lost, none rotated */
	ck_assert_int_eq(dock_logs_parse((uint8_t *)text,
	    (size_t)(strstr(text, "l200\n") - text), DOCK_LOGS_LINES_MAX,
	    &dl), 0);
	ck_assert_uint_eq(dl.dl_n, DOCK_LOGS_LINES_MAX);
	ck_assert_str_eq(dl.dl_line[0], "l0");
	ck_assert_str_eq(dl.dl_line[199], "l199");
	ck_assert_int_eq(dock_logs_parse((uint8_t *)text, o, 3, &dl), 0);
	ck_assert_uint_eq(dl.dl_n, 3);
	ck_assert_str_eq(dl.dl_line[0], "l997");
	ck_assert_str_eq(dl.dl_line[2], "l999");
	ck_assert_int_eq(dock_logs_parse((uint8_t *)text, o,
	    DOCK_LOGS_LINES_MAX + 1, &dl), -1);
	ck_assert_int_eq(dock_logs_parse((uint8_t *)text, o, 0, &dl), -1);
	free(text);
}
END_TEST

/* A line of DOCK_LOG_LINE_MAX bytes whole; one more byte is cut, "..."
 * after; escapes never cut in half. */
START_TEST(line_limit)
{
	char	 line[DOCK_LOG_LINE_MAX + 2];

	memset(line, 'x', sizeof(line));
	ck_assert_int_eq(dock_logs_parse((uint8_t *)line, DOCK_LOG_LINE_MAX,
	    200, &dl), 0);
	ck_assert_uint_eq(strlen(dl.dl_line[0]), DOCK_LOG_LINE_MAX);
	ck_assert_int_eq(dock_logs_parse((uint8_t *)line,
	    DOCK_LOG_LINE_MAX + 1, 200, &dl), 0);
	ck_assert_uint_eq(strlen(dl.dl_line[0]), DOCK_LOG_LINE_MAX + 3);
	ck_assert_str_eq(dl.dl_line[0] + DOCK_LOG_LINE_MAX, "...");
	memset(line, '\x01', sizeof(line));
	ck_assert_int_eq(dock_logs_parse((uint8_t *)line, 200, 200, &dl), 0);
	ck_assert_uint_eq(strlen(dl.dl_line[0]), DOCK_LOG_LINE_MAX / 4 * 4 +
	    3);
}
END_TEST

/* A frame shorter than it says, a broken header after the first frame,
 * and a header alone: what came is kept, dl_cut says so. */
START_TEST(broken)
{
	uint8_t	 buf[256];
	size_t	 len = 0;

	frame(buf, &len, 1, "ok\n", 3);
	frame(buf, &len, 2, "partial line", 12);
	ck_assert_int_eq(dock_logs_parse(buf, len - 4, 200, &dl), 0);
	ck_assert(dl.dl_cut);
	ck_assert_uint_eq(dl.dl_n, 2);
	ck_assert_str_eq(dl.dl_line[1], "partial ");
	len = 0;
	frame(buf, &len, 1, "ok\n", 3);
	frame(buf, &len, 5, "bad\n", 4);
	ck_assert_int_eq(dock_logs_parse(buf, len, 200, &dl), 0);
	ck_assert(dl.dl_cut);
	ck_assert_uint_eq(dl.dl_n, 1);
	ck_assert_str_eq(dl.dl_line[0], "ok");
	len = 0;
	frame(buf, &len, 1, "ok\n", 3);
	buf[len++] = 1;
	buf[len++] = 0;
	ck_assert_int_eq(dock_logs_parse(buf, len, 200, &dl), 0);
	ck_assert(dl.dl_cut);
	ck_assert_uint_eq(dl.dl_n, 1);
}
END_TEST

static Suite *
docklogs_suite(void)
{
	Suite	*s = suite_create("docklogs");
	TCase	*tc = tcase_create("parse");

	tcase_add_test(tc, frames);
	tcase_add_test(tc, plain);
	tcase_add_test(tc, escaped);
	tcase_add_test(tc, lines_limit);
	tcase_add_test(tc, line_limit);
	tcase_add_test(tc, broken);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(docklogs_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
