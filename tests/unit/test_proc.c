/*
 * proc_drop_text(): the pages of code and read-only data it gives back
 * leave the resident set, and nothing of any kind is lost.
 * proc_drop_stack(): the stack below the caller goes, the caller's frame
 * stays.  proc_role_env(): every role's environment is empty but a
 * broker's allocator settings, which take effect in a process started
 * with them: its small frees coalesce, a buffer of 128 KiB is mapped even
 * after a larger one was freed, and a trim leaves no free top.
 */
#include <sys/wait.h>

#include <check.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"
#include "sandbox.h"

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

/*
 * How many pages of [addr, addr + len) this process has mapped, from the
 * present bit of /proc/self/pagemap.  Nothing between the drop and this
 * count may read the test's read-only data: the kernel maps a whole folio
 * of the page cache on a fault, and a string next to the table would map
 * the table back.  Hence the path in writable data, and no libc stdio.
 */
static char	pagemap_path[] = "/proc/self/pagemap";

static size_t
present_pages(const volatile void *addr, size_t len)
{
	uintptr_t	 page = (uintptr_t)sysconf(_SC_PAGESIZE), a;
	uint64_t	 ent;
	size_t		 n = 0;
	int		 fd;

	if ((fd = open(pagemap_path, O_RDONLY | O_CLOEXEC)) == -1)
		return (size_t)-1;
	for (a = (uintptr_t)addr & ~(page - 1); a < (uintptr_t)addr + len;
	    a += page)
		if (pread(fd, &ent, sizeof(ent), (off_t)(a / page *
		    sizeof(ent))) == (ssize_t)sizeof(ent) && (ent >> 63) != 0)
			n++;
	close(fd);
	return n;
}

static size_t
pages_spanned(const volatile void *addr, size_t len)
{
	uintptr_t	 page = (uintptr_t)sysconf(_SC_PAGESIZE);

	return ((uintptr_t)addr + len - 1) / page - (uintptr_t)addr / page + 1;
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
	size_t	 before, after;
	int	 failed;

	heap = malloc(BIG);
	ck_assert_ptr_nonnull(heap);
	memset(heap, 0x5a, BIG);
	counter = 42;
	sum = big_sum();
	before = present_pages(big, BIG);

	failed = proc_drop_text();
	after = present_pages(big, BIG);
	ck_assert_int_eq(failed, 0);
	/* The whole table was mapped, and none of it is now. */
	ck_assert_uint_eq(before, pages_spanned(big, BIG));
	ck_assert_msg(after == 0, "%zu of %zu pages still mapped", after,
	    before);
	/* The heap is not given back: it was written. */
	ck_assert_uint_eq(present_pages(heap, BIG), pages_spanned(heap, BIG));

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

/* 64 KiB of stack written, deeper than any caller's frame. */
#define DEEP	(64u * 1024)

static uintptr_t __attribute__((noinline))
touch_deep(void)
{
	volatile char	 buf[DEEP];
	size_t		 i;

	for (i = 0; i < DEEP; i += 512)
		buf[i] = (char)i;
	return (uintptr_t)buf;
}

START_TEST(drop_stack_gives_back_below)
{
	volatile char	 mine[8192];
	uintptr_t	 deep;
	size_t		 i, before, after;

	for (i = 0; i < sizeof(mine); i++)
		mine[i] = (char)(i * 7);
	deep = touch_deep();
	before = present_pages((void *)deep, DEEP);
	ck_assert_uint_eq(before, pages_spanned((void *)deep, DEEP));
	ck_assert_int_eq(proc_drop_stack(), 0);
	after = present_pages((void *)deep, DEEP);
	/* The page the drop itself runs on stays, maybe its neighbour. */
	ck_assert_msg(after <= 2, "%zu of %zu pages still mapped", after,
	    before);
	for (i = 0; i < sizeof(mine); i++)
		ck_assert_int_eq(mine[i], (char)(i * 7));
	/* The stack still works below: written and read again. */
	(void)touch_deep();
	ck_assert_int_eq(proc_drop_stack(), 0);
}
END_TEST

START_TEST(role_env)
{
	char *const	*env;
	int		 r;

	for (r = 0; r < PROC__COUNT; r++) {
		env = proc_role_env(r);
		ck_assert_ptr_nonnull(env);
		if (r != PROC_BROKER) {
			ck_assert_ptr_null(env[0]);
			continue;
		}
		ck_assert_str_eq(env[0], "GLIBC_TUNABLES="
		    "glibc.malloc.tcache_count=0"
		    ":glibc.malloc.mmap_threshold=131072"
		    ":glibc.malloc.top_pad=0");
		ck_assert_ptr_null(env[1]);
	}
}
END_TEST

#define MALLOC_CHILD	"malloc-settings"

/*
 * In a process started with a broker's environment: the exit status has
 * a bit set for each setting not in force.
 */
static int
malloc_child(void)
{
	void	*small[16], *p;
	size_t	 chunk;
	int	 i, bad = 0;

	/* Freed small chunks all land in the fast bins, none in a thread
	 * cache that would count them as in use (it takes 7 of a size). */
	for (i = 0; i < 16; i++)
		if ((small[i] = malloc(48)) == NULL)
			return 0xff;
	chunk = malloc_usable_size(small[0]) + sizeof(size_t);
	for (i = 0; i < 16; i += 2)
		free(small[i]);
	if (mallinfo2().fsmblks < 8 * chunk)
		bad |= 1;
	/* Freeing a mapped 1 MiB raises glibc's own threshold above it: a
	 * fixed one still maps 128 KiB. */
	if ((p = malloc(1u << 20)) == NULL)
		return 0xff;
	free(p);
	(void)malloc_trim(0);
	if ((p = malloc(128 * 1024)) == NULL)
		return 0xff;
	if (mallinfo2().hblks != 1)
		bad |= 2;
	free(p);
	/* Grown by 64 KiB, the heap keeps less than a page free at its top
	 * (glibc's default pad is 128 KiB). */
	(void)malloc_trim(0);
	if ((p = malloc(64 * 1024)) == NULL)
		return 0xff;
	if (mallinfo2().keepcost >= (size_t)sysconf(_SC_PAGESIZE))
		bad |= 4;
	free(p);
	for (i = 1; i < 16; i += 2)
		free(small[i]);
	return bad;
}

START_TEST(broker_malloc_settings)
{
	char	*argv[] = { "test_proc", MALLOC_CHILD, NULL };
	pid_t	 pid;
	int	 status;

#ifdef RTSANDBOX_ASAN
	return;		/* AddressSanitizer's allocator is not glibc's */
#endif
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		execve("/proc/self/exe", argv, proc_role_env(PROC_BROKER));
		_exit(0x7f);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) == 0,
	    "settings not in force: %#x (1 thread cache, 2 mmap threshold, "
	    "4 top pad)", WEXITSTATUS(status));
}
END_TEST

int
main(int argc, char *argv[])
{
	Suite	*s;
	TCase	*tc;
	SRunner	*sr;
	int	 failed;

	if (argc == 2 && strcmp(argv[1], MALLOC_CHILD) == 0)
		return malloc_child();
	s = suite_create("proc");
	tc = tcase_create("drop_text");
	tcase_add_test(tc, drop_gives_back_and_keeps);
	tcase_add_test(tc, drop_stack_gives_back_below);
	tcase_add_test(tc, role_env);
	tcase_add_test(tc, broker_malloc_settings);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
