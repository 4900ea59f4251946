/*
 * Process roles, the descriptor slots a child inherits, and the fork + exec
 * of a child with an empty environment (DESIGN.md 4).
 */
#ifndef RTSANDBOX_PROC_H
#define RTSANDBOX_PROC_H

#include <sys/types.h>

#include <stdint.h>

enum proc_role {
	PROC_SUPERVISOR = 0,
	PROC_FSGUARD,
	PROC_DOCKER,
	PROC_EGRESS,
	PROC_BROKER,
	PROC_RESEARCH,
	PROC__COUNT
};

/* Inherited descriptor slots. */
#define FD_PARENT	3	/* the frame pipe to the supervisor */
#define FD_EGRESS	4	/* a broker's or research job's pipe to egress */
#define FD_JOURNAL	4	/* egress's socket to the journal (-j) */

const char	*proc_role_name(enum proc_role);	/* "fsguard" */
const char	*proc_role_binary(enum proc_role);	/* "rtsandbox-fsguard" */
const char	*proc_role_folder(enum proc_role);	/* "fsguard" */

/*
 * Fork and exec path with argv and an empty environment.  In the child,
 * fds[0..nfds-1] become FD_PARENT, FD_EGRESS, ...; 0 is /dev/null, 2 stays
 * (logs), 1 becomes 2, every other descriptor is closed; the child gets
 * PR_SET_PDEATHSIG SIGKILL and its own process group is not made.  The
 * descriptors in fds stay open in the caller.  Returns the pid or -1.
 */
pid_t	proc_spawn(const char *path, char *const argv[], const int *fds,
	    int nfds);

/*
 * The same with the caller's parent as the new process's parent, and envp
 * as the environment (NULL: an empty one).
 */
pid_t	proc_spawn_sibling(const char *path, char *const argv[],
	    char *const envp[], const int *fds, int nfds);

/*
 * The environment a role is started with: empty, but for a broker's
 * allocator settings (proc.c).
 */
char *const *proc_role_env(enum proc_role);

/*
 * First thing in a child: check that 0-2 and exactly the nfds inherited
 * slots starting at FD_PARENT are open, that the slots are sockets, and that
 * nothing else is; fatal otherwise.  Also re-checks the parent-death signal
 * (the parent may have died before the exec).
 */
void	proc_child_check_fds(int nfds);

/*
 * Give back the resident pages of every loaded object's code and read-only
 * data: its PT_LOAD segments without PF_W, whole pages only.  They were
 * never written (relocated data, RELRO included, is in the writable
 * segment), so nothing is lost: a page used again faults back in from the
 * page cache, where the pages given back stay, shared.  The vDSO is left
 * alone.  Needs no file and no /proc: dl_iterate_phdr(3) and madvise(2)
 * with MADV_DONTNEED.  Returns the number of madvise calls that failed.
 */
int	proc_drop_text(void);
/*
 * Give back the pages of the stack below the caller's frame that start-up
 * used (sandbox set-up, configuration): a process that waits in its event
 * loop from there on touches them again only as deep as it goes.
 */
int	proc_drop_stack(void);

/* Resident and proportional set size in KiB from /proc; -1 when unknown. */
long	proc_rss_kib(pid_t);
long	proc_pss_kib(pid_t);
/* A process's resident, proportional and unique (private) set sizes in
 * KiB, each -1 when unknown. */
struct proc_mem {
	long	pm_rss_kib;
	long	pm_pss_kib;
	long	pm_uss_kib;
};
/* From a descriptor open on a /proc/<pid>/smaps_rollup, which goes on
 * reading when the process is no longer dumpable and its /proc entries
 * are closed or hidden (hidepid): 0, or -1 with each value unknown -1. */
int	proc_rollup_fd(int, struct proc_mem *);
/* The same from /proc/<pid>/smaps_rollup, while it may be read. */
int	proc_rollup(pid_t, struct proc_mem *);

/* The monotonic clock in ms, from the vDSO: no system call. */
uint64_t proc_now_ms(void);

#endif
