/*
 * Two sandboxes (DESIGN.md 1, invariant 9).  The spawner's is the union of
 * what every helper needs between fork and loading its own filter and
 * Landlock domain, which it inherits and can only narrow: clone, exec, the
 * helpers' files.  The supervisor's, loaded after the spawner was forked,
 * holds only what the supervisor itself does: its pipes, the control
 * socket it already listens on, reaping and signalling its children, /proc
 * for its own memory.  No exec, no connect, no Internet socket, no chmod
 * or chown: a memory bug reachable by broker frames reaches none of them.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../common/limits.h"
#include "../common/log.h"
#include "sandbox.h"

#define CLONE_NAMESPACES	(CLONE_NEWNS | CLONE_NEWCGROUP |	\
				 CLONE_NEWUTS | CLONE_NEWIPC |		\
				 CLONE_NEWUSER | CLONE_NEWPID |		\
				 CLONE_NEWNET)

/*
 * The supervisor: frames on its pipes (base table), children's pipes
 * (socketpair), control connections (accept4), the spawner's socket,
 * reaping and stopping children, its own memory in /proc, and the control
 * socket's removal at exit.
 */
static const struct sandbox_syscall sandbox_supervisor_table[] = {
	SB_ALLOW_ARG(socketpair, 0, AF_UNIX),
	SB_ALLOW(accept4),
	SB_ALLOW(wait4),
	SB_ALLOW(waitid),
	SB_ALLOW(kill),
	SB_ALLOW(openat),
	SB_ALLOW(unlink),
	SB_ALLOW(unlinkat),
	/* the sanitizer runtimes size thread pools by it */
	SB_ALLOW(sched_getaffinity),
};

/* Every child of the uid counts against RLIMIT_NPROC, so it is left. */
static const struct sandbox_rlimit sandbox_supervisor_rlimits[] = {
	{ RLIMIT_NOFILE, 4096 },
	{ RLIMIT_DATA, SUPERVISOR_DATA_MAX },
};

static const struct sandbox_syscall sandbox_spawner_table[] = {
	/* Children: clone without namespaces (CLONE_PARENT: they are the
	 * supervisor's; clone3 is refused so that glibc falls back to
	 * clone when a child makes threads). */
	SB_ALLOW_MASK(clone, 0, CLONE_NAMESPACES, 0),
	SB_DENY(clone3, ENOSYS),

	/* proc_spawn() in the child: death signal, descriptor slots, exec. */
	SB_ALLOW_ARG(prctl, 0, PR_SET_PDEATHSIG),
	SB_ALLOW(getppid),
	SB_ALLOW_ARG(fcntl, 1, F_DUPFD_CLOEXEC),
	SB_ALLOW(dup2),
	SB_ALLOW(dup3),
	SB_ALLOW(close_range),
	SB_ALLOW(execve),
	/* a sanitizer runtime reads its binary and maps at start-up, with the
	 * old system calls */
	SB_ALLOW(open),
	SB_ALLOW(readlink),
	SB_ALLOW(readlinkat),

	/* Whether a child it started has ended (its memory file kept for
	 * daemon.stats is then closed). */
	SB_ALLOW(pidfd_open),

	/* The spawner's socket; the children's reads of /proc and
	 * /dev/null. */
	SB_ALLOW(openat),
	SB_ALLOW(getdents64),
	SB_ALLOW(newfstatat),

	/* Inherited: what the roles' tables allow beyond the above, until
	 * each loads its own (the file guard's socket, the Docker client's
	 * and egress's connect). */
	SB_ALLOW_ARG(socket, 0, AF_UNIX),
	SB_ALLOW_ARG(socketpair, 0, AF_UNIX),
	SB_ALLOW(bind),
	SB_ALLOW(listen),
	SB_ALLOW(accept4),
	SB_ALLOW(connect),
	SB_ALLOW(setsockopt),
	SB_ALLOW(getsockname),
	SB_ALLOW(getpeername),
	SB_ALLOW(umask),
	SB_ALLOW(unlinkat),
	SB_ALLOW(fchmod),
	SB_ALLOW(fchmodat),

	/*
	 * Inherited by a child until it loads its own filter: exec and the
	 * dynamic loader (executable mappings), libc's start-up, the check
	 * of its descriptors, curl_global_init() and the sandbox steps.
	 */
	SB_ALLOW(mmap),
	SB_ALLOW(mprotect),
	SB_ALLOW(arch_prctl),
	SB_ALLOW(set_tid_address),
	SB_ALLOW(set_robust_list),
	SB_ALLOW(rseq),
	/* the sanitizer runtimes size thread pools by it */
	SB_ALLOW(sched_getaffinity),
	SB_ALLOW(access),
	SB_ALLOW(pread64),
	SB_ALLOW(sysinfo),
	SB_ALLOW(getuid),
	SB_ALLOW(geteuid),
	SB_ALLOW(getgid),
	SB_ALLOW(getegid),
	SB_ALLOW_ARG(prlimit64, 0, 0),
	SB_ALLOW_ARG(prctl, 0, PR_GET_PDEATHSIG),
	SB_ALLOW(capget),
	SB_ALLOW(capset),
	SB_ALLOW_ARG(prctl, 0, PR_CAPBSET_READ),
	SB_ALLOW_ARG(prctl, 0, PR_CAPBSET_DROP),
	SB_ALLOW_ARG(prctl, 0, PR_CAP_AMBIENT),
	SB_ALLOW_ARG(prctl, 0, PR_SET_NO_NEW_PRIVS),
	SB_ALLOW_ARG(prctl, 0, PR_GET_NO_NEW_PRIVS),
	SB_ALLOW_ARG(prctl, 0, PR_SET_DUMPABLE),
	SB_ALLOW_ARG(prctl, 0, PR_GET_DUMPABLE),
	SB_ALLOW(landlock_create_ruleset),
	SB_ALLOW(landlock_add_rule),
	SB_ALLOW(landlock_restrict_self),
	SB_ALLOW(epoll_create1),
	SB_ALLOW(pipe2),
	SB_ALLOW(seccomp),

	/* Inherited: the children's own tables beyond the above. */
	SB_ALLOW_ARG(socket, 0, AF_INET),		/* egress */
	SB_ALLOW_ARG(socket, 0, AF_INET6),		/* egress */
	SB_ALLOW_ARG(socket, 0, AF_NETLINK),		/* egress */
	SB_ALLOW(sendmmsg),				/* egress */
	SB_ALLOW(uname),				/* egress */
	SB_ALLOW(openat2),				/* fsguard */
	SB_ALLOW(statx),				/* fsguard */
	SB_ALLOW(mkdirat),				/* fsguard */
	SB_ALLOW(renameat),				/* fsguard */
	SB_ALLOW(renameat2),				/* fsguard */
	SB_ALLOW(ftruncate),				/* fsguard */
	SB_ALLOW(fsync),				/* fsguard */
	SB_ALLOW(fdatasync),				/* fsguard */
	SB_ALLOW(getxattr),				/* fsguard */
	SB_ALLOW(setxattr),				/* fsguard */
	SB_ALLOW(fsetxattr),				/* fsguard */
};

/* The system files every helper's loader and libraries read. */
static const struct sandbox_fs_rule sandbox_spawner_fs[] = {
	{ "/usr/lib", SB_FS_READ | SB_FS_EXEC },
	{ "/lib", SB_FS_READ | SB_FS_EXEC },
	{ "/lib64", SB_FS_READ | SB_FS_EXEC },
	{ "/etc/ld.so.cache", SB_FS_READ },
	{ "/proc", SB_FS_READ },
	{ "/dev/null", SB_FS_READ | SB_FS_WRITE },
	{ NULL, SB_NET_CONNECT },
};
#define SANDBOX_SPAWNER_FS_LEN \
	(sizeof(sandbox_spawner_fs) / sizeof(sandbox_spawner_fs[0]))

void
sandbox_spawner(const struct sandbox_fs_rule *caller, size_t n)
{
	struct sandbox_fs_rule	*rules;
	struct sandbox_syscall	*table;
	size_t			 i, nrules = 0;

	rules = calloc(n + SANDBOX_SPAWNER_FS_LEN +
	    sandbox_netconf_paths_len, sizeof(*rules));
	if (rules == NULL)
		fatal("%s", __func__);
	for (i = 0; i < n; i++)
		rules[nrules++] = caller[i];
	memcpy(rules + nrules, sandbox_spawner_fs,
	    sizeof(sandbox_spawner_fs));
	nrules += SANDBOX_SPAWNER_FS_LEN;
	for (i = 0; i < sandbox_netconf_paths_len; i++) {
		rules[nrules].path = sandbox_netconf_paths[i];
		rules[nrules++].access = SB_FS_READ;
	}

	sandbox_drop_caps();
	sandbox_no_new_privs();
	sandbox_not_dumpable();
	sandbox_landlock(rules, nrules);
	free(rules);
	sandbox_rlimits(sandbox_supervisor_rlimits,
	    sizeof(sandbox_supervisor_rlimits) /
	    sizeof(sandbox_supervisor_rlimits[0]));
	/* and what brokers and research jobs call to enter an empty root */
	n = sizeof(sandbox_spawner_table) / sizeof(sandbox_spawner_table[0]);
	if ((table = calloc(n + sandbox_empty_root_table_len,
	    sizeof(*table))) == NULL)
		fatal("%s", __func__);
	memcpy(table, sandbox_spawner_table, sizeof(sandbox_spawner_table));
	memcpy(table + n, sandbox_empty_root_table,
	    sandbox_empty_root_table_len * sizeof(*table));
	sandbox_seccomp(table, n + sandbox_empty_root_table_len);
	free(table);
}

struct event_base *
sandbox_supervisor(const struct sandbox_fs_rule *caller, size_t n)
{
	struct sandbox_fs_rule	*rules;
	struct event_base	*base;
	size_t			 i, nrules = 0;

	if ((rules = calloc(n + 1, sizeof(*rules))) == NULL)
		fatal("%s", __func__);
	for (i = 0; i < n; i++)
		rules[nrules++] = caller[i];
	/* its own memory for daemon.stats */
	rules[nrules++] = (struct sandbox_fs_rule){ "/proc", SB_FS_READ };

	sandbox_drop_caps();
	sandbox_no_new_privs();
	sandbox_not_dumpable();
	/* Its children live in the spawner's domain, beside its own: it
	 * must still stop them. */
	sandbox_landlock_signals(rules, nrules);
	free(rules);
	sandbox_rlimits(sandbox_supervisor_rlimits,
	    sizeof(sandbox_supervisor_rlimits) /
	    sizeof(sandbox_supervisor_rlimits[0]));
	base = sandbox_event_base();
	sandbox_seccomp(sandbox_supervisor_table,
	    sizeof(sandbox_supervisor_table) /
	    sizeof(sandbox_supervisor_table[0]));
	return base;
}
