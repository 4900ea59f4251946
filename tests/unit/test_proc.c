/*
 * proc_drop_text(): the pages of code and read-only data it gives back
 * leave the resident set, and nothing of any kind is lost.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

/* 1 MiB of read-only data, every page of it in the file. */
#define BIG	(1u << 20)
static const unsigned char big[BIG] = {
	[0] = 1, [4096] = 2, [BIG / 2] = 3, [BIG - 1] = 4
};
/* Relocated data: RELRO in a position-independent test. */
static const char *const names[] = { "attachments", "outbox", "sessions" };
static int counter = 5;

static unsigned
big_sum(void)
{
	const volatile unsigned char	*p = big;
	unsigned			 sum = 0;
	size_t				 i;

	for (i = 0; i < BIG; i += 512)
		sum += p[i] + 1;
	return sum + p[BIG / 2] + p[BIG - 1];
}

static int
twice(int x)
{
	return 2 * x;
}

START_TEST(drop_gives_back_and_keeps)
{
	int	(*volatile fn)(int) = twice;
	char	*heap;
	unsigned sum;
	long	 before, after;

	heap = malloc(BIG);
	ck_assert_ptr_nonnull(heap);
	memset(heap, 0x5a, BIG);
	counter = 42;
	sum = big_sum();
	before = proc_rss_kib(getpid());
	ck_assert_int_gt(before, 0);

	ck_assert_int_eq(proc_drop_text(), 0);
	after = proc_rss_kib(getpid());
	/* The table alone is 1 024 KiB; code and libc go too. */
	ck_assert_msg(after + 768 <= before, "RSS %ld KiB -> %ld KiB",
	    before, after);

	/* Read-only data, relocated data, data, heap and code as they were. */
	ck_assert_uint_eq(big_sum(), sum);
	ck_assert_uint_eq(big[4096], 2);
	ck_assert_str_eq(names[1], "outbox");
	ck_assert_str_eq(names[2], "sessions");
	ck_assert_int_eq(counter, 42);
	ck_assert_int_eq(heap[0], 0x5a);
	ck_assert_int_eq(heap[BIG - 1], 0x5a);
	ck_assert_int_eq(fn(21), 42);
	free(heap);
	/* And again: what came back goes again. */
	ck_assert_int_eq(proc_drop_text(), 0);
	ck_assert_uint_eq(big_sum(), sum);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("proc");
	TCase	*tc = tcase_create("drop_text");
	SRunner	*sr;
	int	 failed;

	tcase_add_test(tc, drop_gives_back_and_keeps);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
