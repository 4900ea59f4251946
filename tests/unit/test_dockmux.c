/*
 * dockerd-client/dockmux.c: the attach stream's frames, whatever way the
 * socket cuts them, the bounds of stdout and stderr at the limit and one
 * past it, every malformed header, and the attach answer's head.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dockmux.h"
#include "limits.h"

/* A frame of stream st and n bytes of c, appended to buf at *off. */
static void
frame(uint8_t *buf, size_t *off, uint8_t st, uint8_t c, uint32_t n)
{
	buf[(*off)++] = st;
	buf[(*off)++] = 0;
	buf[(*off)++] = 0;
	buf[(*off)++] = 0;
	buf[(*off)++] = (uint8_t)(n >> 24);
	buf[(*off)++] = (uint8_t)(n >> 16);
	buf[(*off)++] = (uint8_t)(n >> 8);
	buf[(*off)++] = (uint8_t)n;
	memset(buf + *off, c, n);
	*off += n;
}

static struct dock_mux *
mux(void)
{
	struct dock_mux	*dm;

	dm = malloc(sizeof(*dm));
	ck_assert_ptr_nonnull(dm);
	dock_mux_init(dm);
	return dm;
}

START_TEST(frames_any_cut)
{
	uint8_t		 buf[256];
	size_t		 len = 0, i, step;
	struct dock_mux	*dm;

	frame(buf, &len, 1, 'a', 3);
	frame(buf, &len, 2, 'e', 5);
	frame(buf, &len, 1, 'b', 0);
	frame(buf, &len, 1, 'c', 2);
	for (step = 1; step <= len; step++) {
		dm = mux();
		for (i = 0; i < len; i += step)
			ck_assert_int_eq(dock_mux_feed(dm, buf + i,
			    i + step <= len ? step : len - i), DOCK_MUX_MORE);
		ck_assert(dock_mux_whole(dm));
		ck_assert_uint_eq(dm->dm_out_len, 5);
		ck_assert(memcmp(dm->dm_out, "aaacc", 5) == 0);
		ck_assert_uint_eq(dm->dm_err_bytes, 5);
		ck_assert(!dm->dm_out_over && !dm->dm_err_over);
		free(dm);
	}
	/* Cut inside a header and inside a frame: not whole. */
	dm = mux();
	ck_assert_int_eq(dock_mux_feed(dm, buf, 4), DOCK_MUX_MORE);
	ck_assert(!dock_mux_whole(dm));
	ck_assert_int_eq(dock_mux_feed(dm, buf + 4, 6), DOCK_MUX_MORE);
	ck_assert(!dock_mux_whole(dm));
	free(dm);
}
END_TEST

START_TEST(stdout_at_and_past_limit)
{
	uint8_t		*buf;
	size_t		 len = 0;
	struct dock_mux	*dm;

	buf = malloc(PRECHECK_STDOUT_MAX + 64);
	ck_assert_ptr_nonnull(buf);
	/* Exactly the bound in two frames. */
	frame(buf, &len, 1, 'x', PRECHECK_STDOUT_MAX - 1);
	frame(buf, &len, 1, 'y', 1);
	dm = mux();
	ck_assert_int_eq(dock_mux_feed(dm, buf, len), DOCK_MUX_MORE);
	ck_assert_uint_eq(dm->dm_out_len, PRECHECK_STDOUT_MAX);
	ck_assert_int_eq(dm->dm_out[PRECHECK_STDOUT_MAX - 1], 'y');
	ck_assert(!dm->dm_out_over);
	/* One byte past it, in a frame of its own. */
	len = 0;
	frame(buf, &len, 1, 'z', 1);
	ck_assert_int_eq(dock_mux_feed(dm, buf, len), DOCK_MUX_STDOUT_OVER);
	ck_assert(dm->dm_out_over);
	ck_assert_uint_eq(dm->dm_out_len, PRECHECK_STDOUT_MAX);
	/* It says so again and takes nothing more. */
	ck_assert_int_eq(dock_mux_feed(dm, buf, len), DOCK_MUX_STDOUT_OVER);
	ck_assert_uint_eq(dm->dm_out_len, PRECHECK_STDOUT_MAX);
	free(dm);
	/* One frame one past: the bound's bytes kept. */
	len = 0;
	frame(buf, &len, 1, 'w', PRECHECK_STDOUT_MAX + 1);
	dm = mux();
	ck_assert_int_eq(dock_mux_feed(dm, buf, len), DOCK_MUX_STDOUT_OVER);
	ck_assert_uint_eq(dm->dm_out_len, PRECHECK_STDOUT_MAX);
	ck_assert_int_eq(dm->dm_out[0], 'w');
	free(dm);
	free(buf);
}
END_TEST

START_TEST(stderr_at_and_past_limit)
{
	uint8_t		*buf;
	size_t		 len = 0;
	struct dock_mux	*dm;

	buf = malloc(PRECHECK_STDERR_MAX + 64);
	ck_assert_ptr_nonnull(buf);
	frame(buf, &len, 2, 'e', PRECHECK_STDERR_MAX);
	dm = mux();
	ck_assert_int_eq(dock_mux_feed(dm, buf, len), DOCK_MUX_MORE);
	ck_assert_uint_eq(dm->dm_err_bytes, PRECHECK_STDERR_MAX);
	ck_assert_uint_eq(dm->dm_out_len, 0);
	len = 0;
	frame(buf, &len, 2, 'e', 1);
	ck_assert_int_eq(dock_mux_feed(dm, buf, len), DOCK_MUX_STDERR_OVER);
	ck_assert_uint_eq(dm->dm_err_bytes, PRECHECK_STDERR_MAX + 1ull);
	ck_assert(dm->dm_err_over);
	ck_assert_int_eq(dock_mux_feed(dm, buf, len), DOCK_MUX_STDERR_OVER);
	free(dm);
	/* Its bytes never reach stdout. */
	len = 0;
	frame(buf, &len, 2, 'e', 10);
	frame(buf, &len, 1, 'o', 1);
	dm = mux();
	ck_assert_int_eq(dock_mux_feed(dm, buf, len), DOCK_MUX_MORE);
	ck_assert_uint_eq(dm->dm_out_len, 1);
	ck_assert_int_eq(dm->dm_out[0], 'o');
	free(dm);
	free(buf);
}
END_TEST

START_TEST(malformed_headers)
{
	static const uint8_t bad[][8] = {
		{ 0, 0, 0, 0, 0, 0, 0, 1 },	/* stdin */
		{ 3, 0, 0, 0, 0, 0, 0, 1 },	/* Docker's own error */
		{ 4, 0, 0, 0, 0, 0, 0, 1 },
		{ 0xff, 0, 0, 0, 0, 0, 0, 1 },
		{ 1, 1, 0, 0, 0, 0, 0, 1 },
		{ 1, 0, 1, 0, 0, 0, 0, 1 },
		{ 2, 0, 0, 1, 0, 0, 0, 1 },
		{ 'H', 'T', 'T', 'P', '/', '1', '.', '1' },
	};
	struct dock_mux	*dm;
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dm = mux();
		ck_assert_msg(dock_mux_feed(dm, bad[i], 8) == DOCK_MUX_BROKEN,
		    "header %zu", i);
		ck_assert(!dock_mux_whole(dm));
		ck_assert_int_eq(dock_mux_feed(dm, bad[0], 1),
		    DOCK_MUX_BROKEN);
		free(dm);
	}
	ck_assert_str_eq(dock_mux_rc_to_string(DOCK_MUX_BROKEN),
	    "a malformed stream frame");
	ck_assert_str_eq(dock_mux_rc_to_string((enum dock_mux_rc)99),
	    "unknown");
}
END_TEST

START_TEST(attach_heads)
{
	static const char ok101[] = "HTTP/1.1 101 UPGRADED\r\n"
	    "Content-Type: application/vnd.docker.raw-stream\r\n"
	    "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n\x01\x00";
	static const char ok200[] = "HTTP/1.1 200 OK\r\n\r\n";
	const char	*why;
	size_t		 hl, i;
	char		*big;

	ck_assert_int_eq(dock_attach_head(ok101, sizeof(ok101) - 1, &hl,
	    &why), 1);
	ck_assert_uint_eq(hl, sizeof(ok101) - 3);
	ck_assert_int_eq(dock_attach_head(ok200, sizeof(ok200) - 1, &hl,
	    &why), 1);
	ck_assert_uint_eq(hl, sizeof(ok200) - 1);
	/* Every cut before its end waits for more. */
	for (i = 0; i < sizeof(ok101) - 3; i++)
		ck_assert_int_eq(dock_attach_head(ok101, i, &hl, &why), 0);
	ck_assert_int_eq(dock_attach_head("HTTP/1.1 404 Not Found\r\n\r\n",
	    26, &hl, &why), -1);
	ck_assert_int_eq(dock_attach_head("HTTP/1.1 1010\r\n\r\n", 17, &hl,
	    &why), -1);
	ck_assert_int_eq(dock_attach_head("HTTP/2 101 x\r\n\r\n", 16, &hl,
	    &why), -1);
	ck_assert_int_eq(dock_attach_head("\r\n\r\n", 4, &hl, &why), -1);
	ck_assert_ptr_nonnull(why);
	/* A head of exactly the bound, then one past it. */
	big = malloc(DOCK_ATTACH_HEAD_MAX + 2);
	ck_assert_ptr_nonnull(big);
	memset(big, 'h', DOCK_ATTACH_HEAD_MAX + 1);
	memcpy(big, "HTTP/1.1 101 x\r\n", 16);
	memcpy(big + DOCK_ATTACH_HEAD_MAX - 4, "\r\n\r\n", 4);
	ck_assert_int_eq(dock_attach_head(big, DOCK_ATTACH_HEAD_MAX, &hl,
	    &why), 1);
	ck_assert_uint_eq(hl, DOCK_ATTACH_HEAD_MAX);
	memset(big + DOCK_ATTACH_HEAD_MAX - 4, 'h', 4);
	memcpy(big + DOCK_ATTACH_HEAD_MAX - 3, "\r\n\r\n", 4);
	ck_assert_int_eq(dock_attach_head(big, DOCK_ATTACH_HEAD_MAX + 1, &hl,
	    &why), -1);
	ck_assert_int_eq(dock_attach_head(big, DOCK_ATTACH_HEAD_MAX - 1, &hl,
	    &why), 0);
	free(big);
}
END_TEST

static Suite *
dockmux_suite(void)
{
	Suite	*s = suite_create("dockmux");
	TCase	*tc;

	tc = tcase_create("stream");
	tcase_add_test(tc, frames_any_cut);
	tcase_add_test(tc, stdout_at_and_past_limit);
	tcase_add_test(tc, stderr_at_and_past_limit);
	tcase_add_test(tc, malformed_headers);
	tcase_add_test(tc, attach_heads);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(dockmux_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
