/*
 * Sandbox helpers used by every role's sandbox_<role>(), in the order of
 * DESIGN.md 4: drop capabilities, no_new_privs, Landlock, rlimits, (libevent
 * set-up by the role), seccomp.  Every step is verified; a failure is fatal.
 */
#ifndef RTSANDBOX_SANDBOX_H
#define RTSANDBOX_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

/* An AddressSanitizer build (gcc and clang tell it apart differently). */
#if defined(__SANITIZE_ADDRESS__)
#define RTSANDBOX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RTSANDBOX_ASAN 1
#endif
#endif

/*
 * Make the root an empty, read-only tmpfs in a new user and mount namespace
 * (DESIGN.md 1, invariant 10), so that no path resolves any more, not even
 * for stat(2).  Called first, before the capability drop, which then also
 * drops what the new user namespace granted.  Returns 1 once applied (and
 * verified).  Where the kernel refuses the user namespace or the tmpfs in
 * it, a broker or research job would keep the host's file system in view,
 * with newfstatat(2) of any path allowed by the filter it inherits: so that
 * is fatal, unless sandbox_empty_root_optional(1) said the configuration
 * accepts it (sandbox.empty_root "optional"), and then it is logged as a
 * warning and 0 returned.  Anything else that fails is fatal.
 */
int	sandbox_empty_root(void);
void	sandbox_empty_root_optional(int);
/* The same steps, for a probe in a child that ends after: 1 applied, 0
 * refused by the kernel and why (nothing logged); fatal otherwise. */
int	sandbox_empty_root_probe(char *why, size_t len);

/*
 * PR_SET_DUMPABLE 0, verified: no core dump, even through a core_pattern
 * pipe, and the process's /proc files belong to root, so that no other
 * process of the service user can read its memory, descriptors or
 * environment or attach to it.  Its /proc/<pid>/status stays readable.
 */
void	sandbox_not_dumpable(void);

/* Drop every capability from every set, the bounding set and ambient set,
 * and verify that none is left. */
void	sandbox_drop_caps(void);
void	sandbox_no_new_privs(void);

/* Landlock access groups for sandbox_fs_rule.access. */
#define SB_FS_READ	0x1u	/* read files, list directories */
#define SB_FS_WRITE	0x2u	/* write, create, remove, rename beneath */
#define SB_FS_EXEC	0x4u
#define SB_FS_SOCK	0x8u	/* bind a Unix socket beneath (MAKE_SOCK) */
/* With path NULL: TCP connect to any port (Landlock ABI 4 handles network
 * access; without such a rule every TCP connect and bind is refused). */
#define SB_NET_CONNECT	0x10u
/* The rule is on the path's directory: for a file that is replaced by
 * rename (a refreshed credential), which a rule on the file would not
 * follow. */
#define SB_FS_PARENT	0x20u

struct sandbox_fs_rule {
	const char	*path;
	unsigned	 access;
};

/* System files a TLS and DNS client reads: egress reads them, and the
 * supervisor grants them because its children inherit its domain. */
extern const char *const	sandbox_netconf_paths[];
extern const size_t		sandbox_netconf_paths_len;

/*
 * Apply a Landlock ruleset that handles every file-system access the kernel
 * knows and allows only the rules given (none: no file-system access at all).
 * A rule on a regular file grants only what applies to files; a path that
 * does not exist is skipped.  From ABI 6 on, abstract Unix sockets and
 * signals are scoped to the domain too.  When the kernel has no Landlock, log
 * a notice and go on: the other layers still apply.  Returns the ABI version
 * used, or 0 when skipped.
 */
int	sandbox_landlock(const struct sandbox_fs_rule *, size_t n);
/* The same without scoping signals: for a process that must signal
 * processes of a domain beside its own (the supervisor its children). */
int	sandbox_landlock_signals(const struct sandbox_fs_rule *, size_t n);

struct sandbox_rlimit {
	int	 resource;
	rlim_t	 value;
};
/* RLIMIT_CORE 0 always; then the role's own limits (soft = hard = value; a
 * value above the current hard limit, which only privilege could raise, is
 * lowered to it with a notice).  Under AddressSanitizer, whose shadow memory
 * alone is terabytes of data mappings, RLIMIT_DATA is left as it is. */
void	sandbox_rlimits(const struct sandbox_rlimit *, size_t n);

/* One row of a seccomp allow-list.  Argument checks are exact matches on
 * argument idx (0-5) unless masked; errno_ret > 0 makes a polite deny. */
struct sandbox_syscall {
	const char	*name;
	int		 errno_ret;
	int		 argidx;	/* -1: no argument check */
	uint64_t	 argmask;	/* 0: compare whole argument */
	uint64_t	 argval;
};

#define SB_ALLOW(n)		{ #n, 0, -1, 0, 0 }
#define SB_ALLOW_ARG(n, i, v)	{ #n, 0, (i), 0, (v) }
#define SB_ALLOW_MASK(n, i, m, v) { #n, 0, (i), (m), (v) }
#define SB_DENY(n, e)		{ #n, (e), -1, 0, 0 }
#define SB_DENY_ARG(n, i, v, e)	{ #n, (e), (i), 0, (v) }

/* The calls every role needs (exit, memory, signals, time, libevent's
 * epoll and eventfd, reads and writes on its descriptors, logging). */
extern const struct sandbox_syscall	sandbox_base_table[];
extern const size_t			sandbox_base_table_len;

/* Exactly the calls sandbox_empty_root() makes beyond the base table, for
 * the filter of the process a broker or research job inherits until it
 * loads its own. */
extern const struct sandbox_syscall	sandbox_empty_root_table[];
extern const size_t			sandbox_empty_root_table_len;

/*
 * The role's event base, made between rlimits and seccomp: epoll only (the
 * base table has no other backend), environment ignored.
 */
struct event_base;
struct event_base *sandbox_event_base(void);

/*
 * Load a filter with default kill-process that allows sandbox_base_table
 * plus the role's table.  A name the running libseccomp does not know is
 * fatal (a typo must not silently open or close a call).
 */
void	sandbox_seccomp(const struct sandbox_syscall *, size_t n);

#endif
