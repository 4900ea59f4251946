/*
 * The steps every role's sandbox_<role>() takes, in the order of DESIGN.md
 * section 4.  Each step checks that it took effect; a failure is fatal, since
 * a child that runs with less confinement than it believes is worse than one
 * that does not run.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <linux/landlock.h>
#include <linux/magic.h>
#include <seccomp.h>
#include <sys/capability.h>
#include <event2/event.h>

#include "log.h"
#include "sandbox.h"

/*
 * The empty root.  Landlock refuses mount(2), umount2(2) and pivot_root(2)
 * to every process in a domain that handles file access, and a child
 * inherits its parent's domain across exec: so the new root is a detached
 * tmpfs made with fsopen(2) and fsmount(2), which Landlock leaves alone, and
 * entered with chroot(2), which it allows.  The detached mount is never
 * attached to the mount tree, so nothing propagates to or from it.
 *
 * The user namespace gets no uid or gid map: writing one means opening
 * /proc/self/uid_map, which an inherited Landlock domain refuses.  Unmapped,
 * the process reads its own ids as the overflow id, while the kernel keeps
 * its real ids for everything outside (signals, SO_PEERCRED, /proc): no
 * broker or research job looks at its own ids.
 */

#define SB_ROOT_NS	(CLONE_NEWUSER | CLONE_NEWNS)
#define SB_ROOT_ATTR	(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |	\
			 MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)
#define SB_ROOT_FLAGS	(ST_RDONLY | ST_NOSUID | ST_NODEV | ST_NOEXEC)

const struct sandbox_syscall sandbox_empty_root_table[] = {
	SB_ALLOW_ARG(unshare, 0, SB_ROOT_NS),
	SB_ALLOW_ARG(fsopen, 1, FSOPEN_CLOEXEC),
	SB_ALLOW_ARG(fsconfig, 1, FSCONFIG_SET_STRING),
	SB_ALLOW_ARG(fsconfig, 1, FSCONFIG_SET_FLAG),
	SB_ALLOW_ARG(fsconfig, 1, FSCONFIG_CMD_CREATE),
	SB_ALLOW_ARG(fsmount, 2, SB_ROOT_ATTR),
	SB_ALLOW(fchdir),
	SB_ALLOW(chroot),
	SB_ALLOW(chdir),
	/* the check: stat("/") and statfs("/") */
	SB_ALLOW_ARG(newfstatat, 3, 0),
	SB_ALLOW(statfs),
};
const size_t sandbox_empty_root_table_len =
    sizeof(sandbox_empty_root_table) / sizeof(sandbox_empty_root_table[0]);

/* One page and one inode, the root's: nothing can ever be created in it,
 * even were it made writable. */
static const char *const sandbox_root_opts[][2] = {
	{ "size", "4k" },
	{ "nr_inodes", "1" },
	{ "mode", "0555" },
};

static int	 sandbox_root_optional;

void
sandbox_empty_root_optional(int optional)
{
	sandbox_root_optional = optional;
}

int
sandbox_empty_root_probe(char *why, size_t len)
{
	struct stat	 st, mst;
	struct statfs	 sfs;
	size_t		 i;
	int		 fsfd, mfd;

	/* The kernel or its configuration may forbid user namespaces. */
	if (unshare(SB_ROOT_NS) == -1) {
		if (errno != EPERM && errno != EINVAL && errno != ENOSPC &&
		    errno != EUSERS)
			fatal("%s: unshare", __func__);
		snprintf(why, len, "no user namespace: %s", strerror(errno));
		return 0;
	}
	/* A security module may deny the namespace its capabilities
	 * (Ubuntu's AppArmor restriction); a kernel before 5.2 has no
	 * fsopen. */
	if ((fsfd = fsopen("tmpfs", FSOPEN_CLOEXEC)) == -1) {
		if (errno != EPERM && errno != EACCES && errno != ENOSYS &&
		    errno != ENODEV)
			fatal("%s: fsopen", __func__);
		snprintf(why, len, "no tmpfs in a user namespace: %s",
		    strerror(errno));
		return 0;
	}
	for (i = 0; i < sizeof(sandbox_root_opts) /
	    sizeof(sandbox_root_opts[0]); i++)
		if (fsconfig(fsfd, FSCONFIG_SET_STRING,
		    sandbox_root_opts[i][0], sandbox_root_opts[i][1], 0) == -1)
			fatal("%s: tmpfs option %s", __func__,
			    sandbox_root_opts[i][0]);
	if (fsconfig(fsfd, FSCONFIG_SET_FLAG, "ro", NULL, 0) == -1 ||
	    fsconfig(fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) == -1)
		fatal("%s: tmpfs", __func__);
	if ((mfd = fsmount(fsfd, FSMOUNT_CLOEXEC, SB_ROOT_ATTR)) == -1)
		fatal("%s: fsmount", __func__);
	if (fchdir(mfd) == -1 || chroot(".") == -1 || chdir("/") == -1)
		fatal("%s: entering the new root", __func__);

	/* "/" is the new mount, read-only, and holds no inode but its own. */
	if (fstat(mfd, &mst) == -1 || stat("/", &st) == -1 ||
	    statfs("/", &sfs) == -1)
		fatal("%s: check", __func__);
	if (st.st_dev != mst.st_dev || st.st_ino != mst.st_ino)
		fatalx("%s: / is not the new root", __func__);
	if (sfs.f_type != TMPFS_MAGIC ||
	    ((unsigned long)sfs.f_flags & SB_ROOT_FLAGS) != SB_ROOT_FLAGS ||
	    sfs.f_files != 1 || sfs.f_ffree != 0)
		fatalx("%s: / is not an empty read-only tmpfs", __func__);
	close(mfd);
	close(fsfd);
	snprintf(why, len, "applied");
	return 1;
}

int
sandbox_empty_root(void)
{
	static int	 done = -1;
	char		 why[128];

	if (done != -1)
		return done;
	if ((done = sandbox_empty_root_probe(why, sizeof(why))) == 1) {
		log_debug("empty root");
		return done;
	}
	if (!sandbox_root_optional)
		fatalx("%s, and sandbox.empty_root is not \"optional\": "
		    "refusing to run with the host's file system in view", why);
	log_warnx("%s: the host's file system stays in view, behind Landlock "
	    "and seccomp alone (sandbox.empty_root \"optional\")", why);
	return done;
}

void
sandbox_not_dumpable(void)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		fatal("%s: PR_SET_DUMPABLE", __func__);
	if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
		fatalx("%s: still dumpable", __func__);
}

/*
 * Capabilities
 */

void
sandbox_drop_caps(void)
{
	cap_t			 caps, empty;
	cap_flag_value_t	 setpcap = CAP_CLEAR;
	cap_value_t		 c, max;

	if ((caps = cap_get_proc()) == NULL)
		fatal("%s: cap_get_proc", __func__);
	if (cap_get_flag(caps, CAP_SETPCAP, CAP_EFFECTIVE, &setpcap) == -1)
		fatal("%s: cap_get_flag", __func__);

	/*
	 * Only CAP_SETPCAP may shrink the bounding set.  Without it (the usual
	 * unprivileged case) the bounding set stays, but with every other set
	 * empty and no_new_privs set next, no exec can grant a capability.
	 */
	max = cap_max_bits();
	if (setpcap == CAP_SET) {
		for (c = 0; c < max; c++)
			if (cap_drop_bound(c) == -1)
				fatal("%s: cap_drop_bound %d", __func__, c);
	} else
		log_debug("%s: no CAP_SETPCAP, bounding set left as it is",
		    __func__);

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1)
		fatal("%s: clear ambient capabilities", __func__);
	if (cap_clear(caps) == -1)
		fatal("%s: cap_clear", __func__);
	if (cap_set_proc(caps) == -1)
		fatal("%s: cap_set_proc", __func__);
	cap_free(caps);

	/* Read everything back. */
	if ((caps = cap_get_proc()) == NULL || (empty = cap_init()) == NULL)
		fatal("%s: cap_get_proc", __func__);
	if (cap_compare(caps, empty) != 0)
		fatalx("%s: capabilities left after the drop", __func__);
	cap_free(caps);
	cap_free(empty);
	for (c = 0; c < max; c++) {
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) != 0)
			fatalx("%s: ambient capability %d left", __func__, c);
		if (setpcap == CAP_SET && cap_get_bound(c) != 0)
			fatalx("%s: bounding capability %d left", __func__, c);
	}
}

void
sandbox_no_new_privs(void)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		fatal("%s: PR_SET_NO_NEW_PRIVS", __func__);
	if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1)
		fatalx("%s: no_new_privs is not set", __func__);
}

/*
 * Landlock.  The system headers may predate the running kernel, so the
 * constants of later ABIs are defined here when missing.
 */

#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE		(1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV		(1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP		(1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP		(1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET	(1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL			(1ULL << 1)
#endif

/* struct landlock_ruleset_attr as of ABI 6; an older kernel is given only
 * the members it knows, by the size passed. */
struct sb_ruleset_attr {
	uint64_t	 handled_access_fs;
	uint64_t	 handled_access_net;
	uint64_t	 scoped;
};

#define LL_FS_ABI1	(LANDLOCK_ACCESS_FS_EXECUTE |			\
			 LANDLOCK_ACCESS_FS_WRITE_FILE |		\
			 LANDLOCK_ACCESS_FS_READ_FILE |			\
			 LANDLOCK_ACCESS_FS_READ_DIR |			\
			 LANDLOCK_ACCESS_FS_REMOVE_DIR |		\
			 LANDLOCK_ACCESS_FS_REMOVE_FILE |		\
			 LANDLOCK_ACCESS_FS_MAKE_CHAR |			\
			 LANDLOCK_ACCESS_FS_MAKE_DIR |			\
			 LANDLOCK_ACCESS_FS_MAKE_REG |			\
			 LANDLOCK_ACCESS_FS_MAKE_SOCK |			\
			 LANDLOCK_ACCESS_FS_MAKE_FIFO |			\
			 LANDLOCK_ACCESS_FS_MAKE_BLOCK |		\
			 LANDLOCK_ACCESS_FS_MAKE_SYM)

/* What the kernel accepts in a rule on anything but a directory. */
#define LL_FS_FILE	(LANDLOCK_ACCESS_FS_EXECUTE |			\
			 LANDLOCK_ACCESS_FS_WRITE_FILE |		\
			 LANDLOCK_ACCESS_FS_READ_FILE |			\
			 LANDLOCK_ACCESS_FS_TRUNCATE |			\
			 LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* Devices, FIFOs and symbolic links are never made; device ioctls never
 * granted. */
static uint64_t
sandbox_landlock_access(unsigned access)
{
	uint64_t	 a = 0;

	if (access & SB_FS_READ)
		a |= LANDLOCK_ACCESS_FS_READ_FILE |
		    LANDLOCK_ACCESS_FS_READ_DIR;
	if (access & SB_FS_WRITE)
		a |= LANDLOCK_ACCESS_FS_WRITE_FILE |
		    LANDLOCK_ACCESS_FS_TRUNCATE |
		    LANDLOCK_ACCESS_FS_REMOVE_DIR |
		    LANDLOCK_ACCESS_FS_REMOVE_FILE |
		    LANDLOCK_ACCESS_FS_MAKE_DIR |
		    LANDLOCK_ACCESS_FS_MAKE_REG |
		    LANDLOCK_ACCESS_FS_REFER;
	if (access & SB_FS_EXEC)
		a |= LANDLOCK_ACCESS_FS_EXECUTE;
	if (access & SB_FS_SOCK)
		a |= LANDLOCK_ACCESS_FS_MAKE_SOCK;
	return a;
}

/*
 * Resolver and TLS configuration.  /etc/resolv.conf is often a link into
 * one of the /run directories, whose file is replaced by rename: a rule on
 * the directory survives that, a rule on the file would not.
 * XXX a plain /etc/resolv.conf replaced by rename is not followed; egress
 * then resolves with glibc's defaults until it is restarted.
 */
const char *const sandbox_netconf_paths[] = {
	"/etc/ssl",
	"/etc/ca-certificates",
	"/usr/share/ca-certificates",
	"/usr/lib/ssl",
	"/etc/resolv.conf",
	"/run/systemd/resolve",
	"/run/resolvconf",
	"/etc/hosts",
	"/etc/nsswitch.conf",
	"/etc/gai.conf",
	"/etc/host.conf",
};
const size_t sandbox_netconf_paths_len =
    sizeof(sandbox_netconf_paths) / sizeof(sandbox_netconf_paths[0]);

/* The path a rule is on: the given one, or its directory. */
static const char *
sandbox_landlock_path(const struct sandbox_fs_rule *r, char *buf,
    size_t len)
{
	if (!(r->access & SB_FS_PARENT))
		return r->path;
	if ((size_t)snprintf(buf, len, "%s", r->path) >= len)
		fatalx("%s: %s: too long", __func__, r->path);
	return dirname(buf);
}

static void
sandbox_landlock_rule(int rfd, const char *path, unsigned access,
    uint64_t handled)
{
	struct landlock_path_beneath_attr	 pb;
	struct stat				 st;
	uint64_t				 allowed;
	int					 fd;

	if ((fd = open(path, O_PATH | O_CLOEXEC)) == -1) {
		if (errno == ENOENT) {
			log_debug("%s: %s does not exist, no rule", __func__,
			    path);
			return;
		}
		fatal("%s: %s", __func__, path);
	}
	if (fstat(fd, &st) == -1)
		fatal("%s: fstat %s", __func__, path);
	allowed = sandbox_landlock_access(access) & handled;
	if (!S_ISDIR(st.st_mode))
		allowed &= LL_FS_FILE;
	if (allowed == 0) {
		log_debug("%s: nothing applies to %s", __func__, path);
		close(fd);
		return;
	}
	memset(&pb, 0, sizeof(pb));
	pb.allowed_access = allowed;
	pb.parent_fd = fd;
	if (syscall(SYS_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH,
	    &pb, 0) == -1)
		fatal("%s: landlock_add_rule %s", __func__, path);
	close(fd);
}

static int
sandbox_landlock_scope(const struct sandbox_fs_rule *rules, size_t n,
    int scope_signals)
{
	struct sb_ruleset_attr	 attr;
	char			 buf[PATH_MAX];
	const char		*path;
	size_t			 attrlen, i;
	int			 abi, rfd, root = 0, fd;

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (abi == -1) {
		if (errno == ENOSYS || errno == EOPNOTSUPP) {
			log_info("landlock not available, skipped");
			return 0;
		}
		fatal("%s: landlock ABI version", __func__);
	}

	memset(&attr, 0, sizeof(attr));
	attr.handled_access_fs = LL_FS_ABI1;
	attrlen = offsetof(struct sb_ruleset_attr, handled_access_net);
	if (abi >= 2)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 4) {
		attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP |
		    LANDLOCK_ACCESS_NET_CONNECT_TCP;
		attrlen = offsetof(struct sb_ruleset_attr, scoped);
	}
	if (abi >= 5)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	if (abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET |
		    (scope_signals ? LANDLOCK_SCOPE_SIGNAL : 0);
		attrlen = sizeof(attr);
	}

	for (i = 0; i < n; i++) {
		if (rules[i].path == NULL) {
			if (rules[i].access != SB_NET_CONNECT)
				fatalx("%s: rule %zu: no path", __func__, i);
			/* Not handled: no port is refused. */
			attr.handled_access_net &=
			    ~LANDLOCK_ACCESS_NET_CONNECT_TCP;
		} else if (rules[i].access & SB_NET_CONNECT)
			fatalx("%s: %s: network access on a path", __func__,
			    rules[i].path);
		else if (strcmp(sandbox_landlock_path(&rules[i], buf,
		    sizeof(buf)), "/") == 0)
			root = 1;
	}

	if ((rfd = syscall(SYS_landlock_create_ruleset, &attr, attrlen,
	    0)) == -1)
		fatal("%s: landlock_create_ruleset", __func__);
	for (i = 0; i < n; i++) {
		if (rules[i].path == NULL)
			continue;
		path = sandbox_landlock_path(&rules[i], buf, sizeof(buf));
		sandbox_landlock_rule(rfd, path, rules[i].access,
		    attr.handled_access_fs);
	}
	if (syscall(SYS_landlock_restrict_self, rfd, 0) == -1)
		fatal("%s: landlock_restrict_self", __func__);
	close(rfd);

	/* The root directory is outside every rule but "/" itself. */
	if (!root) {
		if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1)
			fatalx("%s: / still readable after restrict_self",
			    __func__);
		if (errno != EACCES)
			fatal("%s: check of /", __func__);
	}
	log_debug("landlock ABI %d, %zu rules", abi, n);
	return abi;
}

int
sandbox_landlock(const struct sandbox_fs_rule *rules, size_t n)
{
	return sandbox_landlock_scope(rules, n, 1);
}

int
sandbox_landlock_signals(const struct sandbox_fs_rule *rules, size_t n)
{
	return sandbox_landlock_scope(rules, n, 0);
}

/*
 * Resource limits
 */

static const char *
sandbox_rlimit_name(int resource)
{
	switch (resource) {
	case RLIMIT_CORE:
		return "RLIMIT_CORE";
	case RLIMIT_NOFILE:
		return "RLIMIT_NOFILE";
	case RLIMIT_NPROC:
		return "RLIMIT_NPROC";
	case RLIMIT_FSIZE:
		return "RLIMIT_FSIZE";
	case RLIMIT_AS:
		return "RLIMIT_AS";
	case RLIMIT_MEMLOCK:
		return "RLIMIT_MEMLOCK";
	case RLIMIT_DATA:
		return "RLIMIT_DATA";
	default:
		return "rlimit";
	}
}

static void
sandbox_rlimit(int resource, rlim_t value)
{
	struct rlimit	 rl;
	const char	*name = sandbox_rlimit_name(resource);

#ifdef RTSANDBOX_ASAN
	if (resource == RLIMIT_DATA) {
		log_debug("%s: %s %llu not set: the sanitizer's shadow memory "
		    "counts as data", __func__, name,
		    (unsigned long long)value);
		return;
	}
#endif
	if (getrlimit(resource, &rl) == -1)
		fatal("%s: getrlimit %s", __func__, name);
	if (value > rl.rlim_max) {
		log_info("%s %llu above the hard limit, %llu kept", name,
		    (unsigned long long)value,
		    (unsigned long long)rl.rlim_max);
		value = rl.rlim_max;
	}
	rl.rlim_cur = rl.rlim_max = value;
	if (setrlimit(resource, &rl) == -1)
		fatal("%s: setrlimit %s", __func__, name);
	if (getrlimit(resource, &rl) == -1)
		fatal("%s: getrlimit %s", __func__, name);
	if (rl.rlim_cur != value || rl.rlim_max != value)
		fatalx("%s: %s not applied", __func__, name);
}

void
sandbox_rlimits(const struct sandbox_rlimit *limits, size_t n)
{
	size_t	 i;

	sandbox_rlimit(RLIMIT_CORE, 0);
	for (i = 0; i < n; i++)
		sandbox_rlimit(limits[i].resource, limits[i].value);
}

/*
 * The event base
 */

struct event_base *
sandbox_event_base(void)
{
	struct event_config	*cfg;
	struct event_base	*base;

	if ((cfg = event_config_new()) == NULL)
		fatalx("%s: event_config_new", __func__);
	if (event_config_avoid_method(cfg, "select") == -1 ||
	    event_config_avoid_method(cfg, "poll") == -1 ||
	    event_config_set_flag(cfg, EVENT_BASE_FLAG_IGNORE_ENV) == -1)
		fatalx("%s: event_config", __func__);
	base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (base == NULL)
		fatalx("%s: no epoll event base", __func__);
	if (strcmp(event_base_get_method(base), "epoll") != 0)
		fatalx("%s: event method %s", __func__,
		    event_base_get_method(base));
	return base;
}

/*
 * seccomp.  The base table is what glibc and libevent's epoll loop need once
 * the base exists (epoll_create1 and the signal pipe are made before the
 * filter): the loop itself, I/O on descriptors held, memory, signals, time
 * and logging to stderr.
 */

const struct sandbox_syscall sandbox_base_table[] = {
	/* Ending a thread or the process. */
	SB_ALLOW(exit),
	SB_ALLOW(exit_group),
	SB_ALLOW(restart_syscall),

	/* malloc: brk and mmap arenas, madvise and munmap to give back, mremap
	 * for large realloc; nothing is ever mapped executable. */
	SB_ALLOW(brk),
	SB_ALLOW_MASK(mmap, 2, ~(uint64_t)(PROT_READ | PROT_WRITE), 0),
	SB_ALLOW_MASK(mprotect, 2, ~(uint64_t)(PROT_READ | PROT_WRITE), 0),
	SB_ALLOW(munmap),
	SB_ALLOW(mremap),
	SB_ALLOW(madvise),
	SB_ALLOW(futex),
	SB_ALLOW(getrandom),

	/* Signals: libevent's signal events set handlers that write to its
	 * pipe; SIGPIPE is ignored. */
	SB_ALLOW(rt_sigaction),
	SB_ALLOW(rt_sigprocmask),
	SB_ALLOW(rt_sigreturn),
	/* the sanitizer runtimes set up alternate signal stacks */
	SB_ALLOW(sigaltstack),

	/* Time (the vDSO's fallbacks) and identity for logs. */
	SB_ALLOW(clock_gettime),
	SB_ALLOW(gettimeofday),
	SB_ALLOW(getpid),
	SB_ALLOW(gettid),
	/* ownership checks compare with our own ids */
	SB_ALLOW(getuid),
	SB_ALLOW(geteuid),
	SB_ALLOW(getgid),
	SB_ALLOW(getegid),

	/* The event loop, and waiting on one descriptor outside it. */
	SB_ALLOW(epoll_wait),
	SB_ALLOW(epoll_pwait),
	SB_ALLOW(epoll_ctl),
	SB_ALLOW(poll),
	SB_ALLOW(ppoll),

	/* I/O on descriptors already held: frames with descriptors ride
	 * sendmsg/recvmsg.  No role reads through evbuffer_read(), which
	 * would ask FIONREAD first: ioctl(2) only hears that there is no
	 * terminal (below). */
	SB_ALLOW(read),
	SB_ALLOW(write),
	SB_ALLOW(readv),
	SB_ALLOW(writev),
	SB_ALLOW(recvmsg),
	SB_ALLOW(sendmsg),
	SB_ALLOW(recvfrom),
	SB_ALLOW(sendto),
	SB_ALLOW(close),
	SB_ALLOW(shutdown),
	SB_ALLOW(getsockopt),

	/* Descriptor flags: non-blocking and close-on-exec only. */
	SB_ALLOW_ARG(fcntl, 1, F_GETFL),
	SB_ALLOW_ARG(fcntl, 1, F_SETFL),
	SB_ALLOW_ARG(fcntl, 1, F_GETFD),
	SB_ALLOW_ARG(fcntl, 1, F_SETFD),

	/* fstat(): glibc asks newfstatat(fd, "", AT_EMPTY_PATH). */
	SB_ALLOW(fstat),
	SB_ALLOW_MASK(newfstatat, 3, AT_EMPTY_PATH, AT_EMPTY_PATH),

	/* dprintf(3) of the log: lseek, fstat, and isatty() when stderr is a
	 * character device, which is told it is no terminal. */
	SB_ALLOW(lseek),
	SB_DENY_ARG(ioctl, 1, TCGETS, ENOTTY),
};
const size_t sandbox_base_table_len =
    sizeof(sandbox_base_table) / sizeof(sandbox_base_table[0]);

static void
sandbox_seccomp_add(scmp_filter_ctx ctx, const struct sandbox_syscall *sc)
{
	struct scmp_arg_cmp	 cmp;
	uint32_t		 action;
	int			 nr, rc;

	nr = seccomp_syscall_resolve_name(sc->name);
	if (nr == __NR_SCMP_ERROR)
		fatalx("%s: unknown system call %s", __func__, sc->name);
	if (nr < 0) {
		/* A call this architecture does not have. */
		log_debug("%s: %s does not exist here", __func__, sc->name);
		return;
	}
	action = sc->errno_ret > 0 ? SCMP_ACT_ERRNO(sc->errno_ret) :
	    SCMP_ACT_ALLOW;
	if (sc->argidx < 0)
		rc = seccomp_rule_add(ctx, action, nr, 0);
	else {
		if (sc->argidx > 5)
			fatalx("%s: %s: argument %d", __func__, sc->name,
			    sc->argidx);
		memset(&cmp, 0, sizeof(cmp));
		cmp.arg = sc->argidx;
		if (sc->argmask != 0) {
			cmp.op = SCMP_CMP_MASKED_EQ;
			cmp.datum_a = sc->argmask;
			cmp.datum_b = sc->argval;
		} else {
			cmp.op = SCMP_CMP_EQ;
			cmp.datum_a = sc->argval;
		}
		rc = seccomp_rule_add_array(ctx, action, nr, 1, &cmp);
	}
	if (rc < 0)
		fatalx("%s: %s: %s", __func__, sc->name, strerror(-rc));
}

void
sandbox_seccomp(const struct sandbox_syscall *table, size_t n)
{
	scmp_filter_ctx	 ctx;
	size_t		 i;
	int		 rc;

	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL)
		fatalx("%s: seccomp_init", __func__);
	/* A call through a foreign ABI (i386, x32) kills as well; every
	 * thread gets the filter (egress resolves names in threads). */
	if ((rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_KILL_PROCESS)) < 0 ||
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) < 0)
		fatalx("%s: seccomp_attr_set: %s", __func__, strerror(-rc));
	for (i = 0; i < sandbox_base_table_len; i++)
		sandbox_seccomp_add(ctx, &sandbox_base_table[i]);
	for (i = 0; i < n; i++)
		sandbox_seccomp_add(ctx, &table[i]);
	if ((rc = seccomp_load(ctx)) < 0)
		fatalx("%s: seccomp_load: %s", __func__, strerror(-rc));
	seccomp_release(ctx);
}

/* Fuzz targets run unsandboxed and keep their leak checks. */
#if defined(RTSANDBOX_ASAN) && !defined(RTSANDBOX_FUZZING)
const char	*__asan_default_options(void);

/*
 * A sandboxed process cannot run LeakSanitizer's exit-time scan (it stops
 * the world with clone, ptrace and prctl, all outside the tables), and its
 * children get an empty environment: so the default is set here.
 */
const char *
__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif
