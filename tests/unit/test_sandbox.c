/*
 * The sandbox helpers and process spawning of common/.  Every sandbox is
 * applied in a child forked by the test, which reports through its exit
 * status (or its death by SIGSYS), so Check's own process stays free.
 */
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <linux/magic.h>
#include <seccomp.h>

#include "log.h"
#include "proc.h"
#include "role.h"
#include "sandbox.h"

#define SKIPPED		77

/* In a sandboxed child: report and leave with status 1. */
#define CHILD_CHECK(c) do {						\
	if (!(c)) {							\
		dprintf(STDERR_FILENO, "%s:%d: %s failed (errno %d)\n",	\
		    __FILE__, __LINE__, #c, errno);			\
		_exit(1);						\
	}								\
} while (0)

static char	 self_exe[PATH_MAX];

static int
run_child(void (*fn)(void))
{
	pid_t	 pid;
	int	 status;

	fflush(NULL);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static void
assert_exited(int status, int code)
{
	ck_assert_msg(WIFEXITED(status), "child killed by signal %d",
	    WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	ck_assert_int_eq(WEXITSTATUS(status), code);
}

static void
assert_sigsys(int status)
{
	ck_assert_msg(WIFSIGNALED(status), "child exited %d, not killed",
	    WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	ck_assert_int_eq(WTERMSIG(status), SIGSYS);
}

/* The value of a "Cap...:" line of /proc/self/status. */
static unsigned long long
status_caps(const char *key)
{
	char			 line[256];
	FILE			*fp;
	unsigned long long	 v = ~0ULL;
	size_t			 klen = strlen(key);

	if ((fp = fopen("/proc/self/status", "re")) == NULL)
		return ~0ULL;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strncmp(line, key, klen) == 0 && line[klen] == ':')
			v = strtoull(line + klen + 1, NULL, 16);
	fclose(fp);
	return v;
}

/*
 * no_new_privs and capabilities
 */

static void
child_no_new_privs(void)
{
	CHILD_CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0);
	sandbox_no_new_privs();
	CHILD_CHECK(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
}

START_TEST(test_no_new_privs)
{
	assert_exited(run_child(child_no_new_privs), 0);
}
END_TEST

static void
child_drop_caps(void)
{
	int	 privileged = getuid() == 0;

	sandbox_drop_caps();
	CHILD_CHECK(status_caps("CapInh") == 0);
	CHILD_CHECK(status_caps("CapPrm") == 0);
	CHILD_CHECK(status_caps("CapEff") == 0);
	CHILD_CHECK(status_caps("CapAmb") == 0);
	/* The bounding set can only be emptied with CAP_SETPCAP. */
	if (privileged)
		CHILD_CHECK(status_caps("CapBnd") == 0);
	sandbox_no_new_privs();
}

START_TEST(test_drop_caps)
{
	assert_exited(run_child(child_drop_caps), 0);
}
END_TEST

/*
 * Landlock
 */

static char	 ll_inside[PATH_MAX], ll_outside[PATH_MAX];

static void
ll_setup(void)
{
	char	 path[PATH_MAX + 16];
	int	 fd;

	snprintf(ll_inside, sizeof(ll_inside), "/tmp/test_sandbox.in.XXXXXX");
	snprintf(ll_outside, sizeof(ll_outside),
	    "/tmp/test_sandbox.out.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(ll_inside));
	ck_assert_ptr_nonnull(mkdtemp(ll_outside));
	snprintf(path, sizeof(path), "%s/secret", ll_outside);
	ck_assert_int_ne(fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC,
	    0600), -1);
	ck_assert_int_eq(write(fd, "s", 1), 1);
	close(fd);
}

static void
ll_teardown(void)
{
	char	 path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/new", ll_inside);
	unlink(path);
	snprintf(path, sizeof(path), "%s/secret", ll_outside);
	unlink(path);
	rmdir(ll_inside);
	rmdir(ll_outside);
}

static void
child_landlock_dir(void)
{
	const struct sandbox_fs_rule	 rules[] = {
		{ ll_inside, SB_FS_READ | SB_FS_WRITE },
	};
	char				 path[PATH_MAX + 16];
	int				 fd;

	sandbox_no_new_privs();
	if (sandbox_landlock(rules, 1) == 0)
		_exit(SKIPPED);
	snprintf(path, sizeof(path), "%s/new", ll_inside);
	CHILD_CHECK((fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC,
	    0600)) != -1);
	CHILD_CHECK(write(fd, "x", 1) == 1);
	close(fd);
	snprintf(path, sizeof(path), "%s/secret", ll_outside);
	CHILD_CHECK(open(path, O_RDONLY | O_CLOEXEC) == -1 && errno == EACCES);
	snprintf(path, sizeof(path), "%s/made", ll_outside);
	CHILD_CHECK(mkdir(path, 0700) == -1 && errno == EACCES);
	CHILD_CHECK(open("/etc/passwd", O_RDONLY | O_CLOEXEC) == -1 &&
	    errno == EACCES);
}

START_TEST(test_landlock_dir)
{
	int	 status = run_child(child_landlock_dir);

	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIPPED) {
		printf("landlock not available: test skipped\n");
		return;
	}
	assert_exited(status, 0);
}
END_TEST

/* A rule on a file grants only file rights (no EINVAL from the kernel);
 * SB_FS_PARENT puts the rule on the directory. */
static void
child_landlock_file(void)
{
	char				 secret[PATH_MAX + 16];
	char				 cred[PATH_MAX + 16];
	struct sandbox_fs_rule		 rules[2];
	char				 c;
	int				 fd;

	snprintf(secret, sizeof(secret), "%s/secret", ll_outside);
	snprintf(cred, sizeof(cred), "%s/cred", ll_inside);
	rules[0] = (struct sandbox_fs_rule){ secret, SB_FS_READ | SB_FS_SOCK };
	rules[1] = (struct sandbox_fs_rule){ cred, SB_FS_READ | SB_FS_PARENT };
	sandbox_no_new_privs();
	if (sandbox_landlock(rules, 2) == 0)
		_exit(SKIPPED);
	CHILD_CHECK((fd = open(secret, O_RDONLY | O_CLOEXEC)) != -1);
	CHILD_CHECK(read(fd, &c, 1) == 1 && c == 's');
	close(fd);
	CHILD_CHECK(open(secret, O_WRONLY | O_CLOEXEC) == -1 &&
	    errno == EACCES);
	/* cred does not exist: its directory is readable all the same. */
	CHILD_CHECK((fd = open(ll_inside, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) != -1);
	close(fd);
	CHILD_CHECK(open(cred, O_CREAT | O_WRONLY | O_CLOEXEC, 0600) == -1 &&
	    errno == EACCES);
}

START_TEST(test_landlock_file)
{
	int	 status = run_child(child_landlock_file);

	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIPPED) {
		printf("landlock not available: test skipped\n");
		return;
	}
	assert_exited(status, 0);
}
END_TEST

static int	 ll_allow_connect;

static void
child_landlock_net(void)
{
	const struct sandbox_fs_rule	 rules[] = {
		{ NULL, SB_NET_CONNECT },
	};
	struct sockaddr_in		 sin, any;
	socklen_t			 len = sizeof(sin);
	int				 lfd, fd, abi, rc;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	any = sin;
	CHILD_CHECK((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
	    0)) != -1);
	CHILD_CHECK(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	CHILD_CHECK(listen(lfd, 4) == 0);
	CHILD_CHECK(getsockname(lfd, (struct sockaddr *)&sin, &len) == 0);

	sandbox_no_new_privs();
	abi = sandbox_landlock(rules, ll_allow_connect ? 1 : 0);
	if (abi < 4)
		_exit(SKIPPED);
	CHILD_CHECK((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
	    0)) != -1);
	rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	if (ll_allow_connect)
		CHILD_CHECK(rc == 0);
	else
		CHILD_CHECK(rc == -1 && errno == EACCES);
	close(fd);
	/* Binding a TCP port is never allowed. */
	CHILD_CHECK((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
	    0)) != -1);
	CHILD_CHECK(bind(fd, (struct sockaddr *)&any, sizeof(any)) == -1 &&
	    errno == EACCES);
	/* From ABI 6 on signals stay inside the domain. */
	if (abi >= 6)
		CHILD_CHECK(kill(getppid(), 0) == -1 && errno == EPERM);
}

START_TEST(test_landlock_net)
{
	int	 status;

	for (ll_allow_connect = 0; ll_allow_connect < 2; ll_allow_connect++) {
		status = run_child(child_landlock_net);
		if (WIFEXITED(status) && WEXITSTATUS(status) == SKIPPED) {
			printf("landlock without network rules: test "
			    "skipped\n");
			return;
		}
		assert_exited(status, 0);
	}
}
END_TEST

/*
 * The empty root
 */

/* In the empty root: no host path resolves, nothing can be made (opens:
 * the calls outside the step's own table are allowed). */
static void
empty_root_checks(int opens)
{
	char		 path[PATH_MAX + 16];
	struct stat	 st;
	struct statfs	 sfs;

	snprintf(path, sizeof(path), "%s/secret", ll_outside);
	CHILD_CHECK(stat(path, &st) == -1 && errno == ENOENT);
	CHILD_CHECK(fstatat(AT_FDCWD, path, &st, AT_EMPTY_PATH) == -1 &&
	    errno == ENOENT);
	CHILD_CHECK(stat(ll_outside, &st) == -1 && errno == ENOENT);
	CHILD_CHECK(stat("/etc/passwd", &st) == -1 && errno == ENOENT);
	if (opens) {
		CHILD_CHECK(open("/proc/self/status", O_RDONLY | O_CLOEXEC) ==
		    -1 && errno == ENOENT);
		CHILD_CHECK(mkdir("/made", 0700) == -1 && errno == EROFS);
	}
	CHILD_CHECK(statfs("/", &sfs) == 0 && sfs.f_type == TMPFS_MAGIC &&
	    (sfs.f_flags & ST_RDONLY) && sfs.f_files == 1 &&
	    sfs.f_ffree == 0);
}

static void
child_empty_root(void)
{
	char		 path[PATH_MAX + 16];
	struct stat	 st, again;

	snprintf(path, sizeof(path), "%s/secret", ll_outside);
	CHILD_CHECK(stat(path, &st) == 0);
	sandbox_empty_root_optional(1);
	if (sandbox_empty_root() == 0)
		_exit(SKIPPED);
	empty_root_checks(1);
	/* A second call keeps the root it made. */
	CHILD_CHECK(stat("/", &st) == 0);
	CHILD_CHECK(sandbox_empty_root() == 1);
	CHILD_CHECK(stat("/", &again) == 0 && again.st_ino == st.st_ino &&
	    again.st_dev == st.st_dev);
	/* The steps after it still apply, and drop what the namespace gave. */
	sandbox_drop_caps();
	sandbox_no_new_privs();
}

/* Under a Landlock domain, as a child of the sandboxed supervisor is:
 * mount(2) and pivot_root(2) would be refused there. */
static void
child_empty_root_landlock(void)
{
	const struct sandbox_fs_rule	 rules[] = {
		{ ll_inside, SB_FS_READ },
	};

	sandbox_no_new_privs();
	if (sandbox_landlock(rules, 1) == 0)
		_exit(SKIPPED);
	CHILD_CHECK(mount("none", ll_inside, "tmpfs", 0, NULL) == -1);
	sandbox_empty_root_optional(1);
	if (sandbox_empty_root() == 0)
		_exit(SKIPPED);
	empty_root_checks(1);
}

/* Under a filter of the base table and sandbox_empty_root_table alone, as
 * the one a spawned child inherits: the step needs nothing more. */
static void
child_empty_root_table(void)
{
	sandbox_seccomp(sandbox_empty_root_table,
	    sandbox_empty_root_table_len);
	sandbox_empty_root_optional(1);
	if (sandbox_empty_root() == 0)
		_exit(SKIPPED);
	empty_root_checks(0);
}

/* The table lets unshare(2) make these two namespaces and no others. */
static void
child_empty_root_table_other_ns(void)
{
	sandbox_seccomp(sandbox_empty_root_table,
	    sandbox_empty_root_table_len);
	syscall(SYS_unshare, CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET);
	_exit(0);
}

static void
assert_applied(int status, const char *what)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == SKIPPED) {
		printf("%s: no user namespaces here, test skipped\n", what);
		return;
	}
	assert_exited(status, 0);
}

START_TEST(test_empty_root)
{
	assert_applied(run_child(child_empty_root), "empty root");
}
END_TEST

START_TEST(test_empty_root_under_landlock)
{
	assert_applied(run_child(child_empty_root_landlock),
	    "empty root under Landlock");
}
END_TEST

START_TEST(test_empty_root_table)
{
	assert_applied(run_child(child_empty_root_table),
	    "empty root under its table");
	assert_sigsys(run_child(child_empty_root_table_other_ns));
}
END_TEST

/* Each row names a call libseccomp knows; unshare only with the two
 * namespaces, the mount only read-only, nosuid, nodev and noexec. */
START_TEST(test_empty_root_table_rows)
{
	const struct sandbox_syscall	*sc;
	size_t				 i;
	int				 unshare = 0, fsmount = 0;

	ck_assert_uint_gt(sandbox_empty_root_table_len, 0);
	for (i = 0; i < sandbox_empty_root_table_len; i++) {
		sc = &sandbox_empty_root_table[i];
		ck_assert_int_ne(seccomp_syscall_resolve_name(sc->name),
		    __NR_SCMP_ERROR);
		ck_assert_int_eq(sc->errno_ret, 0);
		if (strcmp(sc->name, "unshare") == 0) {
			unshare++;
			ck_assert_int_eq(sc->argidx, 0);
			ck_assert_uint_eq(sc->argmask, 0);
			ck_assert_uint_eq(sc->argval,
			    CLONE_NEWUSER | CLONE_NEWNS);
		}
		if (strcmp(sc->name, "fsmount") == 0) {
			fsmount++;
			ck_assert_int_eq(sc->argidx, 2);
			ck_assert_uint_eq(sc->argval, MOUNT_ATTR_RDONLY |
			    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
			    MOUNT_ATTR_NOEXEC);
		}
		ck_assert_str_ne(sc->name, "mount");
		ck_assert_str_ne(sc->name, "pivot_root");
		ck_assert_str_ne(sc->name, "setns");
	}
	ck_assert_int_eq(unshare, 1);
	ck_assert_int_eq(fsmount, 1);
}
END_TEST

/*
 * Where the kernel refuses the empty root (a filter here makes it refuse
 * the user namespace, or the tmpfs in it as Ubuntu's AppArmor restriction
 * does): fatal unless the refusal is accepted, and then 0.
 */
static const char	*refuse_call = "unshare";
static int		 refuse_optional;

static void
child_empty_root_refused(void)
{
	scmp_filter_ctx	 ctx;
	struct stat	 st;
	char		 why[128];

	CHILD_CHECK((ctx = seccomp_init(SCMP_ACT_ALLOW)) != NULL);
	CHILD_CHECK(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
	    seccomp_syscall_resolve_name(refuse_call), 0) == 0);
	CHILD_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
	CHILD_CHECK(seccomp_load(ctx) == 0);
	/* the probe says why, and logs nothing (once: a second user
	 * namespace in the first, unmapped, would be refused anyway) */
	if (refuse_optional == -1) {
		CHILD_CHECK(sandbox_empty_root_probe(why, sizeof(why)) == 0);
		CHILD_CHECK(strstr(why, "Operation not permitted") != NULL);
		_exit(43);
	}
	sandbox_empty_root_optional(refuse_optional);
	CHILD_CHECK(sandbox_empty_root() == 0);
	/* accepted: the host's root is still there */
	CHILD_CHECK(stat("/etc/passwd", &st) == 0);
	_exit(42);
}

/* stderr of fn's child, in out; returns its status */
static int
run_child_err(void (*fn)(void), char *out, size_t len)
{
	pid_t	 pid;
	ssize_t	 n;
	size_t	 o = 0;
	int	 p[2], status;

	ck_assert_int_eq(pipe(p), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		fn();
		_exit(0);
	}
	close(p[1]);
	while (o < len - 1 && (n = read(p[0], out + o, len - 1 - o)) > 0)
		o += (size_t)n;
	out[o] = '\0';
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

START_TEST(test_empty_root_refused)
{
	static const char *const calls[] = { "unshare", "fsopen" };
	char	 out[1024];

	refuse_call = calls[_i];
	/* required (the default): the process ends, saying why */
	refuse_optional = 0;
	assert_exited(run_child_err(child_empty_root_refused, out,
	    sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "fatal in test_sandbox"));
	ck_assert_ptr_nonnull(strstr(out, "sandbox.empty_root is not "
	    "\"optional\": refusing to run"));
	ck_assert_msg(strstr(out, _i == 0 ? "no user namespace" :
	    "no tmpfs in a user namespace") != NULL, "%s", out);
	/* optional: a warning, and it goes on */
	refuse_optional = 1;
	assert_exited(run_child_err(child_empty_root_refused, out,
	    sizeof(out)), 42);
	ck_assert_ptr_nonnull(strstr(out, "the host's file system stays in "
	    "view"));
	ck_assert_ptr_null(strstr(out, "fatal"));
	refuse_optional = -1;
	assert_exited(run_child_err(child_empty_root_refused, out,
	    sizeof(out)), 43);
	ck_assert_str_eq(out, "");
}
END_TEST

/*
 * Not dumpable
 */

static void
child_not_dumpable(void)
{
	struct stat	 st;
	int		 fd;

	CHILD_CHECK(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 1);
	sandbox_not_dumpable();
	CHILD_CHECK(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0);
	/* its /proc files are root's now; it still reads its own */
	CHILD_CHECK(stat("/proc/self/fd", &st) == 0 && st.st_uid == 0);
	CHILD_CHECK((fd = open("/proc/self/smaps_rollup", O_RDONLY |
	    O_CLOEXEC)) != -1);
	close(fd);
	CHILD_CHECK(proc_pss_kib(getpid()) > 0);
	CHILD_CHECK(proc_rss_kib(getpid()) > 0);
}

START_TEST(test_not_dumpable)
{
	assert_exited(run_child(child_not_dumpable), 0);
}
END_TEST

/*
 * role_args_parse(): -e, -l and the memory file handed over on -m
 */

static int	 role_sock = -1;

static void
child_role_args(void)
{
	char	*argv[] = { "rtsandbox-broker", "-l", "-e", "optional", "-m",
	    "5", "-n", "c_1", NULL };
	struct role_args	 ra;
	struct stat		 st;

	if (role_sock != 5) {
		CHILD_CHECK(dup2(role_sock, 5) == 5);
		close(role_sock);
	}
	role_args_parse(PROC_BROKER, 8, argv, &ra);
	CHILD_CHECK(ra.ra_root_optional == 1 && ra.ra_log_journal == 1);
	CHILD_CHECK(log_getjournal() == 1);
	CHILD_CHECK(strcmp(log_name(), "broker[c_1]") == 0);
	/* the socket is closed once the file went */
	CHILD_CHECK(fstat(5, &st) == -1 && errno == EBADF);
	/* and the file goes on reading once this process is not dumpable */
	sandbox_not_dumpable();
	CHILD_CHECK(write(STDOUT_FILENO, "", 0) == 0);
	pause();
}

START_TEST(test_role_memory_handoff)
{
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct msghdr	 mh;
	struct iovec	 iov;
	struct cmsghdr	*c;
	char		 one, path[64], want[64], link[64];
	ssize_t		 n;
	struct proc_mem	 pm;
	pid_t		 pid;
	int		 sp[2], fd, status, tries;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sp), 0);
	role_sock = sp[1];
	fflush(NULL);
	if ((pid = fork()) == 0) {
		close(sp[0]);
		child_role_args();
		_exit(0);
	}
	close(sp[1]);
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = &one;
	iov.iov_len = 1;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	ck_assert_int_eq(recvmsg(sp[0], &mh, MSG_CMSG_CLOEXEC), 1);
	c = CMSG_FIRSTHDR(&mh);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(c->cmsg_type, SCM_RIGHTS);
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	/* then EOF: the child closed its end */
	ck_assert_int_eq(recv(sp[0], &one, 1, 0), 0);
	close(sp[0]);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	snprintf(want, sizeof(want), "/proc/%d/smaps_rollup", (int)pid);
	ck_assert_int_gt(n = readlink(path, link, sizeof(link) - 1), 0);
	link[n] = '\0';
	ck_assert_str_eq(link, want);
	/* once the child is not dumpable (its /proc root's), still read */
	for (tries = 0; tries < 500; tries++) {
		struct stat	 st;

		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
		if (stat(path, &st) == 0 && st.st_uid == 0)
			break;
		usleep(10000);
	}
	ck_assert_int_eq(proc_rollup_fd(fd, &pm), 0);
	ck_assert_int_gt(pm.pm_rss_kib, 0);
	ck_assert_int_gt(pm.pm_pss_kib, 0);
	ck_assert_int_le(pm.pm_pss_kib, pm.pm_rss_kib);
	/* what the process alone has: no more than its share */
	ck_assert_int_gt(pm.pm_uss_kib, 0);
	ck_assert_int_le(pm.pm_uss_kib, pm.pm_pss_kib);
	/* and again: read from the start each time */
	ck_assert_int_eq(proc_rollup_fd(fd, &pm), 0);
	ck_assert_int_gt(pm.pm_pss_kib, 0);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	/* the child gone, nothing more to read */
	ck_assert_int_eq(proc_rollup_fd(fd, &pm), -1);
	ck_assert_int_eq(pm.pm_rss_kib, -1);
	ck_assert_int_eq(pm.pm_pss_kib, -1);
	ck_assert_int_eq(pm.pm_uss_kib, -1);
	close(fd);
}
END_TEST

static void
child_role_bad(void)
{
	char	*argv[] = { "rtsandbox-fsguard", "-e", "optional", NULL };
	struct role_args	 ra;

	role_args_parse(PROC_FSGUARD, 3, argv, &ra);
}

static void
child_role_bad_value(void)
{
	char	*argv[] = { "rtsandbox-research", "-e", "maybe", NULL };
	struct role_args	 ra;

	role_args_parse(PROC_RESEARCH, 3, argv, &ra);
}

static void
child_role_bad_fd(void)
{
	char	*argv[] = { "rtsandbox-broker", "-m", "3", NULL };
	struct role_args	 ra;

	role_args_parse(PROC_BROKER, 3, argv, &ra);
}

static void
child_role_not_socket(void)
{
	char	*argv[] = { "rtsandbox-broker", "-m", "6", NULL };
	struct role_args	 ra;

	CHILD_CHECK(dup2(STDIN_FILENO, 6) == 6);
	role_args_parse(PROC_BROKER, 3, argv, &ra);
}

/* Without -e the empty root is required. */
static void
child_role_default(void)
{
	char	*argv[] = { "rtsandbox-broker", NULL };
	struct role_args	 ra;

	sandbox_empty_root_optional(1);
	role_args_parse(PROC_BROKER, 1, argv, &ra);
	CHILD_CHECK(ra.ra_root_optional == 0);
	refuse_call = "unshare";
	refuse_optional = 0;
	child_empty_root_refused();
}

START_TEST(test_role_args_refused)
{
	char	 out[1024];

	assert_exited(run_child_err(child_role_bad, out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "-e: no empty root here"));
	assert_exited(run_child_err(child_role_bad_value, out, sizeof(out)),
	    1);
	ck_assert_ptr_nonnull(strstr(out, "neither required nor optional"));
	assert_exited(run_child_err(child_role_bad_fd, out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "not a descriptor past the pipes"));
	assert_exited(run_child_err(child_role_not_socket, out, sizeof(out)),
	    1);
	ck_assert_ptr_nonnull(strstr(out, "not a socket"));
	assert_exited(run_child_err(child_role_default, out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "refusing to run"));
}
END_TEST

/*
 * rlimits
 */

static void
child_rlimits(void)
{
	const struct sandbox_rlimit	 limits[] = {
		{ RLIMIT_NOFILE, 32 },
		{ RLIMIT_NPROC, 0 },
	};
	struct rlimit			 rl;
	pid_t				 pid;

	sandbox_rlimits(limits, 2);
	CHILD_CHECK(getrlimit(RLIMIT_CORE, &rl) == 0);
	CHILD_CHECK(rl.rlim_cur == 0 && rl.rlim_max == 0);
	CHILD_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	CHILD_CHECK(rl.rlim_cur == 32 && rl.rlim_max == 32);
	CHILD_CHECK(getrlimit(RLIMIT_NPROC, &rl) == 0);
	CHILD_CHECK(rl.rlim_cur == 0 && rl.rlim_max == 0);
	CHILD_CHECK(fcntl(0, F_DUPFD_CLOEXEC, 32) == -1 && errno == EINVAL);
	/* RLIMIT_NPROC binds every user but root. */
	if (getuid() != 0) {
		pid = fork();
		if (pid == 0)
			_exit(0);
		CHILD_CHECK(pid == -1 && errno == EAGAIN);
	}
	/* Raising a hard limit again is refused. */
	rl.rlim_cur = rl.rlim_max = 64;
	if (getuid() != 0)
		CHILD_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == -1);
}

START_TEST(test_rlimits)
{
	assert_exited(run_child(child_rlimits), 0);
}
END_TEST

#define DATA_LIMIT	(64u << 20)

#ifndef RTSANDBOX_ASAN
/* What is mapped already counts, so an allocation of the limit itself
 * fails, and fails as a null pointer. */
static void
data_limit_holds(void)
{
	struct rlimit	 rl;
	char *volatile	 p;

	CHILD_CHECK((p = malloc(DATA_LIMIT / 2)) != NULL);
	p[0] = 1;
	free(p);
	CHILD_CHECK((p = malloc(DATA_LIMIT)) == NULL && errno == ENOMEM);
	/* Small blocks still come, from what is left. */
	CHILD_CHECK((p = malloc(4096)) != NULL);
	free(p);
	/* And it cannot be raised again. */
	rl.rlim_cur = rl.rlim_max = 2 * (rlim_t)DATA_LIMIT;
	if (getuid() != 0)
		CHILD_CHECK(setrlimit(RLIMIT_DATA, &rl) == -1);
}
#endif

/* RLIMIT_DATA, except under AddressSanitizer, whose shadow memory is
 * data: there the limit is left as it was. */
static void
child_rlimit_data(void)
{
	const struct sandbox_rlimit	 limits[] = {
		{ RLIMIT_DATA, DATA_LIMIT },
	};
	struct rlimit			 before, rl;

	CHILD_CHECK(getrlimit(RLIMIT_DATA, &before) == 0);
	sandbox_rlimits(limits, 1);
	CHILD_CHECK(getrlimit(RLIMIT_DATA, &rl) == 0);
#ifdef RTSANDBOX_ASAN
	CHILD_CHECK(rl.rlim_cur == before.rlim_cur &&
	    rl.rlim_max == before.rlim_max);
#else
	CHILD_CHECK(rl.rlim_cur == DATA_LIMIT && rl.rlim_max == DATA_LIMIT &&
	    before.rlim_max >= DATA_LIMIT);
	data_limit_holds();
#endif
}

START_TEST(test_rlimit_data)
{
	assert_exited(run_child(child_rlimit_data), 0);
}
END_TEST

/*
 * seccomp
 */

static void
child_seccomp_kill(void)
{
	const struct sandbox_syscall	 table[] = {
		SB_ALLOW(getppid),
	};
	char				 buf[PATH_MAX];

	sandbox_seccomp(table, 1);
	CHILD_CHECK(getppid() > 0);
	syscall(SYS_getcwd, buf, sizeof(buf));
	_exit(0);
}

START_TEST(test_seccomp_kills)
{
	assert_sigsys(run_child(child_seccomp_kill));
}
END_TEST

static void
child_seccomp_deny(void)
{
	const struct sandbox_syscall	 table[] = {
		SB_DENY(uname, EPERM),
		SB_DENY_ARG(socket, 0, AF_INET, EACCES),
		SB_ALLOW_ARG(socket, 0, AF_INET6),
	};
	struct utsname			 u;
	int				 fd;

	sandbox_seccomp(table, sizeof(table) / sizeof(table[0]));
	CHILD_CHECK(uname(&u) == -1 && errno == EPERM);
	CHILD_CHECK(socket(AF_INET, SOCK_STREAM, 0) == -1 && errno == EACCES);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHILD_CHECK(fd != -1 || errno == EAFNOSUPPORT);
	/* An argument no row matches kills. */
	syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
	_exit(0);
}

START_TEST(test_seccomp_deny)
{
	assert_sigsys(run_child(child_seccomp_deny));
}
END_TEST

static void
child_seccomp_unknown(void)
{
	const struct sandbox_syscall	 table[] = {
		SB_ALLOW(no_such_call),
	};

	sandbox_seccomp(table, 1);
	_exit(0);
}

START_TEST(test_seccomp_unknown_name)
{
	int	 status = run_child(child_seccomp_unknown);

	ck_assert(WIFEXITED(status));
	ck_assert_int_ne(WEXITSTATUS(status), 0);
}
END_TEST

static void
child_seccomp_exec_mapping(void)
{
	sandbox_seccomp(NULL, 0);
	CHILD_CHECK(mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED);
	mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
	    -1, 0);
	_exit(0);
}

START_TEST(test_seccomp_no_exec_mapping)
{
	assert_sigsys(run_child(child_seccomp_exec_mapping));
}
END_TEST

/* A real libevent loop under the base table alone. */
struct loop_state {
	struct event_base	*base;
	struct event		*timer;
	int			 sp[2];
	int			 ticks, bytes;
};

static void
loop_read(evutil_socket_t fd, short ev, void *arg)
{
	struct loop_state	*ls = arg;
	char			 buf[64];
	ssize_t			 n;

	if ((n = read(fd, buf, sizeof(buf))) > 0)
		ls->bytes += n;
}

static void
loop_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct loop_state	*ls = arg;
	struct timeval		 tv = { 0, 2000 };

	CHILD_CHECK(write(ls->sp[1], "tick", 4) == 4);
	if (++ls->ticks < 5)
		evtimer_add(ls->timer, &tv);
	else
		event_base_loopexit(ls->base, &tv);
}

static void
child_base_loop(void)
{
	struct loop_state	 ls;
	struct event		*rd;
	struct timeval		 tv = { 0, 2000 };
	struct timespec		 ts;
	struct stat		 st;
	char			*p;
	int			 flags, null;

	memset(&ls, 0, sizeof(ls));
	CHILD_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    ls.sp) == 0);
	/* The log on a character device, as on a terminal. */
	CHILD_CHECK((null = open("/dev/null", O_WRONLY | O_CLOEXEC)) != -1);
	CHILD_CHECK(dup2(null, STDERR_FILENO) != -1);
	ls.base = sandbox_event_base();
	sandbox_seccomp(NULL, 0);

	CHILD_CHECK((flags = fcntl(ls.sp[0], F_GETFL)) != -1);
	CHILD_CHECK(fcntl(ls.sp[0], F_SETFL, flags | O_NONBLOCK) == 0);
	CHILD_CHECK(fstat(ls.sp[0], &st) == 0 && S_ISSOCK(st.st_mode));
	CHILD_CHECK(clock_gettime(CLOCK_MONOTONIC, &ts) == 0);
	/* malloc: brk, then mmap and mremap for large blocks. */
	CHILD_CHECK((p = malloc(100)) != NULL);
	free(p);
	CHILD_CHECK((p = malloc(8 << 20)) != NULL);
	memset(p, 1, 8 << 20);
	CHILD_CHECK((p = realloc(p, 32 << 20)) != NULL);
	free(p);

	CHILD_CHECK((ls.timer = evtimer_new(ls.base, loop_tick, &ls)) != NULL);
	CHILD_CHECK((rd = event_new(ls.base, ls.sp[0], EV_READ | EV_PERSIST,
	    loop_read, &ls)) != NULL);
	CHILD_CHECK(event_add(rd, NULL) == 0);
	CHILD_CHECK(evtimer_add(ls.timer, &tv) == 0);
	CHILD_CHECK(event_base_dispatch(ls.base) == 0);
	CHILD_CHECK(ls.ticks == 5 && ls.bytes == 20);
	event_free(rd);
	event_free(ls.timer);
	event_base_free(ls.base);
	log_info("base table: %d ticks, %d bytes", ls.ticks, ls.bytes);
	log_warnx("and again");
}

START_TEST(test_base_table_event_loop)
{
	assert_exited(run_child(child_base_loop), 0);
}
END_TEST

/*
 * proc
 */

START_TEST(test_role_names)
{
	ck_assert_str_eq(proc_role_name(PROC_FSGUARD), "fsguard");
	ck_assert_str_eq(proc_role_binary(PROC_DOCKER), "rtsandbox-docker");
	ck_assert_str_eq(proc_role_folder(PROC_DOCKER), "dockerd-client");
	ck_assert_str_eq(proc_role_binary(PROC_SUPERVISOR), "rtsandboxd");
	ck_assert_str_eq(proc_role_binary(PROC_RESEARCH),
	    "rtsandbox-research");
	ck_assert_str_eq(proc_role_name(PROC__COUNT), "unknown");
}
END_TEST

/* Run path under proc_spawn() with its output (fd 2, and 1 with it)
 * captured in buf. */
static int
spawn_capture(const char *path, char *const argv[], const int *fds,
    int nfds, char *buf, size_t len)
{
	size_t	 off = 0;
	ssize_t	 n;
	pid_t	 pid;
	int	 p[2], saved, status;

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_ne(saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0),
	    -1);
	ck_assert_int_ne(dup2(p[1], STDERR_FILENO), -1);
	pid = proc_spawn(path, argv, fds, nfds);
	ck_assert_int_ne(dup2(saved, STDERR_FILENO), -1);
	close(saved);
	close(p[1]);
	ck_assert_int_ne(pid, -1);
	while (off < len - 1 && (n = read(p[0], buf + off,
	    len - 1 - off)) > 0)
		off += n;
	buf[off] = '\0';
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

START_TEST(test_spawn_empty_environment)
{
	char *const	 argv[] = { "env", NULL };
	char		 out[4096];
	int		 status;

	ck_assert_int_eq(setenv("RTSANDBOX_TEST_LEAK", "1", 1), 0);
	status = spawn_capture("/usr/bin/env", argv, NULL, 0, out,
	    sizeof(out));
	assert_exited(status, 0);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_spawn_descriptors)
{
	char *const	 argv[] = { "ls", "-1", "/proc/self/fd", NULL };
	char		 out[4096];
	int		 sp[2], stray, status, fds[1];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sp), 0);
	/* Not close-on-exec: proc_spawn must close it all the same. */
	ck_assert_int_ne(stray = open("/dev/null", O_RDONLY), -1);
	fds[0] = sp[1];
	status = spawn_capture("/bin/ls", argv, fds, 1, out, sizeof(out));
	assert_exited(status, 0);
	/* 0-2, the one slot, and ls's own directory descriptor. */
	ck_assert_str_eq(out, "0\n1\n2\n3\n4\n");
	close(stray);
	close(sp[0]);
	close(sp[1]);
}
END_TEST

/* Pipes sitting in each other's slots, swapped: each must end up in its
 * own.  The spawned process is this test binary (see main). */
static void
child_spawn_swapped(void)
{
	char *const	 argv[] = { "test_sandbox", "--child-fds", NULL };
	int		 a[2], b[2], fds[2], status;
	char		 c;
	pid_t		 pid;

	/* Clear of the slots first. */
	CHILD_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, a) == 0);
	CHILD_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, b) == 0);
	CHILD_CHECK((a[0] = fcntl(a[0], F_DUPFD, 10)) != -1);
	CHILD_CHECK((b[0] = fcntl(b[0], F_DUPFD, 10)) != -1);
	CHILD_CHECK(dup2(a[1], FD_EGRESS) != -1);
	CHILD_CHECK(dup2(b[1], FD_PARENT) != -1);
	fds[0] = FD_EGRESS;	/* a: must become FD_PARENT */
	fds[1] = FD_PARENT;	/* b: must become FD_EGRESS */
	CHILD_CHECK((pid = proc_spawn(self_exe, argv, fds, 2)) != -1);
	close(FD_PARENT);
	close(FD_EGRESS);
	close(a[1]);
	close(b[1]);
	CHILD_CHECK(read(a[0], &c, 1) == 1 && c == 'P');
	CHILD_CHECK(read(b[0], &c, 1) == 1 && c == 'E');
	CHILD_CHECK(waitpid(pid, &status, 0) == pid);
	CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

START_TEST(test_spawn_swapped_slots)
{
	assert_exited(run_child(child_spawn_swapped), 0);
}
END_TEST

/* A child that expects one more slot than it was given dies. */
static void
child_spawn_missing_slot(void)
{
	char *const	 argv[] = { "test_sandbox", "--child-fds-3", NULL };
	int		 sp[2], status, fds[2];
	pid_t		 pid;

	CHILD_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sp) == 0);
	fds[0] = sp[1];
	fds[1] = sp[1];
	CHILD_CHECK((pid = proc_spawn(self_exe, argv, fds, 2)) != -1);
	CHILD_CHECK(waitpid(pid, &status, 0) == pid);
	CHILD_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

START_TEST(test_spawn_check_fds_refuses)
{
	assert_exited(run_child(child_spawn_missing_slot), 0);
}
END_TEST

START_TEST(test_spawn_exec_failure)
{
	char *const	 argv[] = { "nothing", NULL };
	char		 out[4096];
	int		 status;

	status = spawn_capture("/nonexistent/rtsandbox-nothing", argv, NULL,
	    0, out, sizeof(out));
	assert_exited(status, 127);
	ck_assert_ptr_nonnull(strstr(out, "/nonexistent/rtsandbox-nothing"));
}
END_TEST

START_TEST(test_rss_pss)
{
	ck_assert_int_gt(proc_rss_kib(getpid()), 0);
	ck_assert_int_gt(proc_pss_kib(getpid()), 0);
	ck_assert_int_eq(proc_rss_kib(-5), -1);
}
END_TEST

/* The far end of test_spawn_swapped_slots and its refusal. */
static int
child_fds_main(int nfds)
{
	log_init("test_sandbox[child]", 0);
	proc_child_check_fds(nfds);
	if (write(FD_PARENT, "P", 1) != 1 || write(FD_EGRESS, "E", 1) != 1)
		return 1;
	return 0;
}

static Suite *
sandbox_suite(void)
{
	Suite	*s = suite_create("sandbox");
	TCase	*tc;

	tc = tcase_create("privileges");
	tcase_add_test(tc, test_no_new_privs);
	tcase_add_test(tc, test_drop_caps);
	tcase_add_test(tc, test_rlimits);
	tcase_add_test(tc, test_rlimit_data);
	tcase_add_test(tc, test_not_dumpable);
	suite_add_tcase(s, tc);

	tc = tcase_create("landlock");
	tcase_add_checked_fixture(tc, ll_setup, ll_teardown);
	tcase_add_test(tc, test_landlock_dir);
	tcase_add_test(tc, test_landlock_file);
	tcase_add_test(tc, test_landlock_net);
	suite_add_tcase(s, tc);

	tc = tcase_create("empty root");
	tcase_add_checked_fixture(tc, ll_setup, ll_teardown);
	tcase_add_test(tc, test_empty_root);
	tcase_add_test(tc, test_empty_root_under_landlock);
	tcase_add_test(tc, test_empty_root_table);
	tcase_add_test(tc, test_empty_root_table_rows);
	tcase_add_loop_test(tc, test_empty_root_refused, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("seccomp");
	tcase_add_test(tc, test_seccomp_kills);
	tcase_add_test(tc, test_seccomp_deny);
	tcase_add_test(tc, test_seccomp_unknown_name);
	tcase_add_test(tc, test_seccomp_no_exec_mapping);
	tcase_add_test(tc, test_base_table_event_loop);
	suite_add_tcase(s, tc);

	tc = tcase_create("proc");
	tcase_add_test(tc, test_role_names);
	tcase_add_test(tc, test_spawn_empty_environment);
	tcase_add_test(tc, test_spawn_descriptors);
	tcase_add_test(tc, test_spawn_swapped_slots);
	tcase_add_test(tc, test_spawn_check_fds_refuses);
	tcase_add_test(tc, test_spawn_exec_failure);
	tcase_add_test(tc, test_rss_pss);
	tcase_add_test(tc, test_role_memory_handoff);
	tcase_add_test(tc, test_role_args_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(int argc, char *argv[])
{
	SRunner	*sr;
	ssize_t	 n;
	int	 failed;

	if (argc == 2 && strcmp(argv[1], "--child-fds") == 0)
		return child_fds_main(2);
	if (argc == 2 && strcmp(argv[1], "--child-fds-3") == 0)
		return child_fds_main(3);

	log_init("test_sandbox", 0);
	if ((n = readlink("/proc/self/exe", self_exe,
	    sizeof(self_exe) - 1)) == -1) {
		perror("readlink /proc/self/exe");
		return 1;
	}
	self_exe[n] = '\0';

	sr = srunner_create(sandbox_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
