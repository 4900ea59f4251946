/*
 * Credential files of egress/cred.c against a real directory in /tmp: what
 * is read, what is refused, and that nothing of a refused file is left in
 * the buffer or in the message.  Runs as root and unprivileged alike; the
 * owner is getuid(), and as root one test also gives a file away.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cred.h"

#define S(lit)		(lit), (sizeof(lit) - 1)
#define TMPL_DIR	"/tmp/cred-test.XXXXXX"
#define OTHER_UID	54321

static char	dir[sizeof(TMPL_DIR)];
static int	dfd = -1;

static void
setup(void)
{
	memcpy(dir, TMPL_DIR, sizeof(TMPL_DIR));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ne(dfd, -1);
}

static void
teardown(void)
{
	char	 cmd[64 + sizeof(dir)];

	close(dfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void
put(const char *name, const void *p, size_t len, mode_t mode)
{
	int	 fd;

	/* A fresh file: a read-only one cannot be truncated unprivileged. */
	if (unlinkat(dfd, name, 0) == -1)
		ck_assert_int_eq(errno, ENOENT);
	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600);
	ck_assert_int_ne(fd, -1);
	ck_assert_int_eq(write(fd, p, len), (ssize_t)len);
	ck_assert_int_eq(fchmod(fd, mode), 0);
	ck_assert_int_eq(close(fd), 0);
}

static char	buf[CRED_FILE_MAX + 64];
static char	err[256];
static size_t	len;

static enum cred_err
rd(const char *name)
{
	memset(buf, 'Z', sizeof(buf));
	len = 12345;
	return cred_read(dfd, name, getuid(), buf, sizeof(buf), &len, err,
	    sizeof(err));
}

/* Refused: the code, a message, nothing of the content anywhere. */
static void
refused(const char *name, enum cred_err want, const char *content)
{
	enum cred_err	 e;
	size_t		 i;

	e = rd(name);
	ck_assert_msg(e == want, "%s: %s, not %s (%s)", name,
	    cred_err_to_string(e), cred_err_to_string(want), err);
	ck_assert_uint_eq(len, 0);
	ck_assert_str_ne(err, "");
	ck_assert_int_eq(buf[0], '\0');
	if (content != NULL && *content != '\0') {
		ck_assert_ptr_null(strstr(err, content));
		for (i = 0; i + strlen(content) <= sizeof(buf); i++)
			ck_assert(memcmp(buf + i, content,
			    strlen(content)) != 0);
	}
}

static void
reads(const char *name, const char *want)
{
	enum cred_err	 e;

	e = rd(name);
	ck_assert_msg(e == CRED_OK, "%s: %s (%s)", name,
	    cred_err_to_string(e), err);
	ck_assert_uint_eq(len, strlen(want));
	ck_assert_str_eq(buf, want);
	ck_assert_str_eq(err, "");
}

START_TEST(regular)
{
	put("t", S("sk-ant-api03-abc_DEF-123"), 0600);
	reads("t", "sk-ant-api03-abc_DEF-123");
	put("t", S("tok"), 0400);
	reads("t", "tok");
	put("t", S("x"), 0700);
	reads("t", "x");
	put("t", S("!~#%&'()*+,-./:;<=>?@[\\]^_`{|}\""), 0600);
	reads("t", "!~#%&'()*+,-./:;<=>?@[\\]^_`{|}\"");
}
END_TEST

START_TEST(newline)
{
	put("t", S("tok\n"), 0600);
	reads("t", "tok");
	/* The NUL takes the newline's place; beyond is untouched. */
	ck_assert_int_eq(buf[4], 'Z');
	put("t", S("tok\r\n"), 0600);
	reads("t", "tok");
	ck_assert_int_eq(buf[4], '\0');
	ck_assert_int_eq(buf[5], 'Z');
	/* One line end only, and a CR alone is no line end. */
	put("t", S("tok\n\n"), 0600);
	refused("t", CRED_INVALID, "tok");
	put("t", S("tok\r"), 0600);
	refused("t", CRED_INVALID, "tok");
	put("t", S("tok\n\r\n"), 0600);
	refused("t", CRED_INVALID, "tok");
	put("t", S("\ntok"), 0600);
	refused("t", CRED_INVALID, "tok");
}
END_TEST

START_TEST(empty)
{
	put("t", "", 0, 0600);
	refused("t", CRED_EMPTY, NULL);
	put("t", S("\n"), 0600);
	refused("t", CRED_EMPTY, NULL);
	put("t", S("\r\n"), 0600);
	refused("t", CRED_EMPTY, NULL);
	ck_assert_str_eq(err, "empty");
}
END_TEST

START_TEST(invalid)
{
	put("t", S("secret value"), 0600);
	refused("t", CRED_INVALID, "secret");
	put("t", S("secret\tvalue"), 0600);
	refused("t", CRED_INVALID, "secret");
	put("t", S("secret\0value"), 0600);
	refused("t", CRED_INVALID, "secret");
	put("t", S("secret\x7f"), 0600);
	refused("t", CRED_INVALID, "secret");
	put("t", S("secret\x01"), 0600);
	refused("t", CRED_INVALID, "secret");
	put("t", S("secret\xc3\xa9"), 0600);
	refused("t", CRED_INVALID, "secret");
	put("t", S(" secret"), 0600);
	refused("t", CRED_INVALID, "secret");
	put("t", S("secret\r\nx"), 0600);
	refused("t", CRED_INVALID, "secret");

	ck_assert_int_eq(cred_token_valid(S("a")), 1);
	ck_assert_int_eq(cred_token_valid(S("!~")), 1);
	ck_assert_int_eq(cred_token_valid(S("")), 0);
	ck_assert_int_eq(cred_token_valid(NULL, 0), 0);
	ck_assert_int_eq(cred_token_valid(S("a b")), 0);
	ck_assert_int_eq(cred_token_valid(S("a\x80")), 0);
}
END_TEST

START_TEST(missing)
{
	refused("nope", CRED_MISSING, NULL);
	ck_assert_str_eq(err, "missing");
	put("t", S("tok"), 0600);
	refused("t/x", CRED_OPEN, NULL);
}
END_TEST

START_TEST(symlink_refused)
{
	put("t", S("secret-token"), 0600);
	ck_assert_int_eq(symlinkat("t", dfd, "link"), 0);
	refused("link", CRED_SYMLINK, "secret-token");
	ck_assert_int_eq(symlinkat("nowhere", dfd, "dangling"), 0);
	refused("dangling", CRED_SYMLINK, NULL);
}
END_TEST

START_TEST(fifo_refused)
{
	ck_assert_int_eq(mkfifoat(dfd, "fifo", 0600), 0);
	/* A blocking open would hang here. */
	alarm(5);
	refused("fifo", CRED_NOT_REGULAR, NULL);
	alarm(0);
	ck_assert_str_eq(err, "a FIFO");
}
END_TEST

START_TEST(directory_refused)
{
	ck_assert_int_eq(mkdirat(dfd, "d", 0700), 0);
	refused("d", CRED_NOT_REGULAR, NULL);
	ck_assert_str_eq(err, "a directory");
	refused("/dev/null", CRED_NOT_REGULAR, NULL);
}
END_TEST

START_TEST(mode_refused)
{
	static const mode_t	 bad[] = { 0640, 0604, 0660, 0606, 0644,
	    0610, 0601, 0602, 0620, 0700 | 01, 0670, 0707 };
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put("t", S("secret-token"), bad[i]);
		refused("t", CRED_MODE, "secret-token");
	}
	put("t", S("tok"), 0600);
	reads("t", "tok");
}
END_TEST

START_TEST(owner_refused)
{
	put("t", S("secret-token"), 0600);
	ck_assert_int_eq(cred_read(dfd, "t", getuid() + 1, buf, sizeof(buf),
	    &len, err, sizeof(err)), CRED_OWNER);
	ck_assert_int_eq(buf[0], '\0');
	if (geteuid() == 0) {
		ck_assert_int_eq(fchownat(dfd, "t", OTHER_UID, OTHER_UID, 0),
		    0);
		refused("t", CRED_OWNER, "secret-token");
		ck_assert_int_eq(cred_read(dfd, "t", OTHER_UID, buf,
		    sizeof(buf), &len, err, sizeof(err)), CRED_OK);
		ck_assert_str_eq(buf, "secret-token");
	}
}
END_TEST

START_TEST(size_limit)
{
	static char	 big[CRED_FILE_MAX + 2];
	char		 small[8];

	memset(big, 'k', sizeof(big));
	put("t", big, CRED_FILE_MAX, 0600);
	ck_assert_int_eq(rd("t"), CRED_OK);
	ck_assert_uint_eq(len, CRED_FILE_MAX);
	put("t", big, CRED_FILE_MAX + 1, 0600);
	refused("t", CRED_TOO_LARGE, NULL);
	/* The newline counts. */
	big[CRED_FILE_MAX] = '\n';
	put("t", big, CRED_FILE_MAX + 1, 0600);
	refused("t", CRED_TOO_LARGE, NULL);
	big[CRED_FILE_MAX - 1] = '\n';
	put("t", big, CRED_FILE_MAX, 0600);
	ck_assert_int_eq(rd("t"), CRED_OK);
	ck_assert_uint_eq(len, CRED_FILE_MAX - 1);

	/* The caller's buffer bounds it too: 7 bytes and a NUL. */
	put("t", S("1234567"), 0600);
	ck_assert_int_eq(cred_read(dfd, "t", getuid(), small, sizeof(small),
	    &len, err, sizeof(err)), CRED_OK);
	ck_assert_str_eq(small, "1234567");
	put("t", S("1234567\n"), 0600);
	ck_assert_int_eq(cred_read(dfd, "t", getuid(), small, sizeof(small),
	    &len, err, sizeof(err)), CRED_TOO_LARGE);
	ck_assert_int_eq(small[0], '\0');
	ck_assert_int_eq(cred_read(dfd, "t", getuid(), small, 0, &len, err,
	    sizeof(err)), CRED_TOO_LARGE);
	/* No room for a message is fine. */
	ck_assert_int_eq(cred_read(dfd, "nope", getuid(), small,
	    sizeof(small), &len, NULL, 0), CRED_MISSING);
}
END_TEST

START_TEST(replaced_by_rename)
{
	put("t", S("first-token\n"), 0600);
	reads("t", "first-token");
	put("t.new", S("second-token\n"), 0600);
	ck_assert_int_eq(renameat(dfd, "t.new", dfd, "t"), 0);
	reads("t", "second-token");
	put("t.new", S("third\n"), 0600);
	ck_assert_int_eq(renameat(dfd, "t.new", dfd, "t"), 0);
	reads("t", "third");
}
END_TEST

START_TEST(absolute_path)
{
	char	 path[sizeof(dir) + 8];

	put("t", S("tok\n"), 0600);
	snprintf(path, sizeof(path), "%s/t", dir);
	ck_assert_int_eq(cred_read(AT_FDCWD, path, getuid(), buf, sizeof(buf),
	    &len, err, sizeof(err)), CRED_OK);
	ck_assert_str_eq(buf, "tok");
}
END_TEST

/*
 * The cache: one fstatat(2) while the file has not changed, a read when it
 * has or is too new to tell (cred.h).
 */

static struct cred_cache	cc;

static enum cred_err
get(const char *name)
{
	memset(buf, 'Z', sizeof(buf));
	len = 12345;
	return cred_get(&cc, dfd, name, getuid(), buf, sizeof(buf), &len, err,
	    sizeof(err));
}

static void
gets(const char *name, const char *want, uint64_t reads)
{
	enum cred_err	 e;

	e = get(name);
	ck_assert_msg(e == CRED_OK, "%s: %s (%s)", name,
	    cred_err_to_string(e), err);
	ck_assert_str_eq(buf, want);
	ck_assert_uint_eq(len, strlen(want));
	ck_assert_uint_eq(cc.cc_reads, reads);
}

/* Older than CRED_SETTLE_NS: a change from now on moves its ctime. */
static void
settle(void)
{
	struct timespec	 ts = { 1, 100000000 };

	ck_assert_int_eq(nanosleep(&ts, NULL), 0);
}

/* Same length, same inode: only the timestamps tell. */
static void
rewrite(const char *name, const char *text)
{
	int	 fd;

	fd = openat(dfd, name, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ck_assert_int_ne(fd, -1);
	ck_assert_int_eq(write(fd, text, strlen(text)),
	    (ssize_t)strlen(text));
	ck_assert_int_eq(close(fd), 0);
}

static void
cache_setup(void)
{
	setup();
	memset(&cc, 0, sizeof(cc));
}

static void
cache_teardown(void)
{
	cred_cache_clear(&cc);
	ck_assert_ptr_null(cc.cc_token);
	teardown();
}

/* What the cache keeps is the token and no more, and goes when cleared. */
START_TEST(cache_holds_the_token)
{
	put("t", S("kept-token\r\n"), 0600);
	settle();
	gets("t", "kept-token", 1);
	ck_assert_ptr_nonnull(cc.cc_token);
	ck_assert_uint_eq(cc.cc_len, 10);
	ck_assert_str_eq(cc.cc_token, "kept-token");
	cred_cache_clear(&cc);
	ck_assert_ptr_null(cc.cc_token);
	ck_assert_uint_eq(cc.cc_len, 0);
	ck_assert_int_eq(cc.cc_trusted, 0);
	gets("t", "kept-token", 2);
}
END_TEST

START_TEST(cache_reused)
{
	put("t", S("kept-token\n"), 0600);
	settle();
	gets("t", "kept-token", 1);
	gets("t", "kept-token", 1);
	gets("t", "kept-token", 1);
}
END_TEST

START_TEST(cache_rewritten_in_place)
{
	put("t", S("token-AAAA\n"), 0600);
	settle();
	gets("t", "token-AAAA", 1);
	rewrite("t", "token-BBBB\n");
	gets("t", "token-BBBB", 2);
	gets("t", "token-BBBB", 3);	/* new again: read until settled */
}
END_TEST

/* A file younger than CRED_SETTLE_NS is read at every call: a rewrite in
 * the same clock tick would leave its timestamps as they were. */
START_TEST(cache_new_file_read_each_time)
{
	put("t", S("token-AAAA\n"), 0600);
	gets("t", "token-AAAA", 1);
	ck_assert_int_eq(cc.cc_trusted, 0);
	rewrite("t", "token-BBBB\n");
	gets("t", "token-BBBB", 2);
	gets("t", "token-BBBB", 3);
}
END_TEST

START_TEST(cache_replaced_by_rename)
{
	put("t", S("token-AAAA\n"), 0600);
	settle();
	gets("t", "token-AAAA", 1);
	put("t.new", S("token-BBBB\n"), 0600);
	ck_assert_int_eq(renameat(dfd, "t.new", dfd, "t"), 0);
	gets("t", "token-BBBB", 2);
}
END_TEST

START_TEST(cache_refusals_still_apply)
{
	put("t", S("token-AAAA\n"), 0600);
	settle();
	gets("t", "token-AAAA", 1);
	ck_assert_int_eq(fchmodat(dfd, "t", 0640, 0), 0);
	ck_assert_int_eq(get("t"), CRED_MODE);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(cc.cc_trusted, 0);
	ck_assert_int_eq(cc.cc_len, 0);
	ck_assert_int_eq(fchmodat(dfd, "t", 0600, 0), 0);
	gets("t", "token-AAAA", 3);
	ck_assert_int_eq(unlinkat(dfd, "t", 0), 0);
	ck_assert_int_eq(symlinkat("/etc/passwd", dfd, "t"), 0);
	ck_assert_int_eq(get("t"), CRED_SYMLINK);
	ck_assert_int_eq(unlinkat(dfd, "t", 0), 0);
	ck_assert_int_eq(get("t"), CRED_MISSING);
	ck_assert_uint_eq(len, 0);
}
END_TEST

START_TEST(err_strings)
{
	enum cred_err	 e, f;

	for (e = CRED_OK; e <= CRED_INVALID; e++) {
		ck_assert_ptr_nonnull(cred_err_to_string(e));
		for (f = CRED_OK; f < e; f++)
			ck_assert_str_ne(cred_err_to_string(e),
			    cred_err_to_string(f));
	}
}
END_TEST

static Suite *
cred_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("cred");

	tc = tcase_create("read");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, regular);
	tcase_add_test(tc, newline);
	tcase_add_test(tc, empty);
	tcase_add_test(tc, invalid);
	tcase_add_test(tc, replaced_by_rename);
	tcase_add_test(tc, absolute_path);
	suite_add_tcase(s, tc);

	tc = tcase_create("refuse");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, missing);
	tcase_add_test(tc, symlink_refused);
	tcase_add_test(tc, fifo_refused);
	tcase_add_test(tc, directory_refused);
	tcase_add_test(tc, mode_refused);
	tcase_add_test(tc, owner_refused);
	tcase_add_test(tc, size_limit);
	tcase_add_test(tc, err_strings);
	suite_add_tcase(s, tc);

	tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, cache_setup, cache_teardown);
	tcase_add_test(tc, cache_holds_the_token);
	tcase_add_test(tc, cache_reused);
	tcase_add_test(tc, cache_rewritten_in_place);
	tcase_add_test(tc, cache_new_file_read_each_time);
	tcase_add_test(tc, cache_replaced_by_rename);
	tcase_add_test(tc, cache_refusals_still_apply);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(cred_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
