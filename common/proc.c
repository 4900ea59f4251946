/*
 * Process roles and the start of a child (DESIGN.md 4): fork, put the
 * inherited pipes in their slots, close everything else, exec with an
 * empty environment.
 */
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"

/* More inherited slots than any role has. */
#define PROC_SPAWN_MAXFDS	8

static const struct {
	const char	*name;
	const char	*binary;
	const char	*folder;
} proc_roles[PROC__COUNT] = {
	[PROC_SUPERVISOR] = { "supervisor", "rtsandboxd", "supervisor" },
	[PROC_FSGUARD] = { "fsguard", "rtsandbox-fsguard", "fsguard" },
	[PROC_DOCKER] = { "docker", "rtsandbox-docker", "dockerd-client" },
	[PROC_EGRESS] = { "egress", "rtsandbox-egress", "egress" },
	[PROC_BROKER] = { "broker", "rtsandbox-broker", "broker" },
	[PROC_RESEARCH] = { "research", "rtsandbox-research", "research" },
};

const char *
proc_role_name(enum proc_role r)
{
	if ((unsigned)r >= PROC__COUNT)
		return "unknown";
	return proc_roles[r].name;
}

const char *
proc_role_binary(enum proc_role r)
{
	if ((unsigned)r >= PROC__COUNT)
		return "unknown";
	return proc_roles[r].binary;
}

const char *
proc_role_folder(enum proc_role r)
{
	if ((unsigned)r >= PROC__COUNT)
		return "unknown";
	return proc_roles[r].folder;
}

/* Close every descriptor from lowfd on; /proc/self/fd when the kernel
 * predates close_range(2). */
static int
proc_close_from(int lowfd)
{
	DIR		*d;
	struct dirent	*de;
	char		*end;
	long		 fd;

	if (close_range(lowfd, ~0U, 0) == 0)
		return 0;
	if (errno != ENOSYS)
		return -1;
	if ((d = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		fd = strtol(de->d_name, &end, 10);
		if (*end == '\0' && fd >= lowfd && fd != dirfd(d))
			close(fd);
	}
	closedir(d);
	return 0;
}

/*
 * A broker runs once per channel and idles most of its life (DESIGN.md 12):
 * its heap should hold only the pages its live allocations are on.  Without
 * glibc's per-thread cache, what it frees coalesces and malloc_trim(3) can
 * give it back; with a fixed mmap threshold, a buffer of 128 KiB or more
 * (a pipe's read buffer) is always mapped and unmapped whole, not carved
 * from the heap once a larger one was freed; with no top pad, neither a
 * trim nor the heap's growth leaves free pages at its top.
 */
static char *const proc_env_empty[] = { NULL };
static char *const proc_env_broker[] = {
	"GLIBC_TUNABLES=glibc.malloc.tcache_count=0"
	    ":glibc.malloc.mmap_threshold=131072:glibc.malloc.top_pad=0",
	NULL
};

char *const *
proc_role_env(enum proc_role r)
{
	return r == PROC_BROKER ? proc_env_broker : proc_env_empty;
}

/* In the child after fork: never returns. */
static void __attribute__((noreturn))
proc_child_exec(pid_t ppid, const char *path, char *const argv[],
    char *const envp[], const int *fds, int nfds)
{
	struct sigaction	 sa;
	sigset_t		 set;
	int			 high[PROC_SPAWN_MAXFDS];
	int			 i, sig, fd;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1) {
		log_warn("%s: PR_SET_PDEATHSIG", __func__);
		_exit(127);
	}
	/* The parent died before the death signal was armed. */
	if (getppid() != ppid)
		_exit(127);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);	/* EINVAL for some */
	sigemptyset(&set);
	if (sigprocmask(SIG_SETMASK, &set, NULL) == -1)
		_exit(127);

	/*
	 * The inherited pipes may sit anywhere, slots and 0-2 included: copy
	 * them above every slot first, then fill 0-2, then the slots.
	 */
	for (i = 0; i < nfds; i++)
		if ((high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC,
		    FD_PARENT + nfds)) == -1) {
			log_warn("%s: dup of descriptor %d", __func__, fds[i]);
			_exit(127);
		}
	/* Not close-on-exec: it may land on 0-2 and stay there; anywhere
	 * else it is overwritten or closed below. */
	if ((fd = open("/dev/null", O_RDWR)) == -1) {
		log_warn("%s: /dev/null", __func__);
		_exit(127);
	}
	if (dup2(fd, STDIN_FILENO) == -1 ||
	    (fcntl(STDERR_FILENO, F_GETFD) == -1 &&
	    dup2(fd, STDERR_FILENO) == -1) ||
	    dup2(STDERR_FILENO, STDOUT_FILENO) == -1)
		_exit(127);
	for (i = 0; i < nfds; i++)
		if (dup2(high[i], FD_PARENT + i) == -1) {
			log_warn("%s: descriptor slot %d", __func__,
			    FD_PARENT + i);
			_exit(127);
		}
	if (proc_close_from(FD_PARENT + nfds) == -1) {
		log_warn("%s: closing descriptors", __func__);
		_exit(127);
	}

	execve(path, argv, envp != NULL ? envp : proc_env_empty);
	log_warn("%s: exec %s", __func__, path);
	_exit(127);
}

pid_t
proc_spawn(const char *path, char *const argv[], const int *fds, int nfds)
{
	pid_t	 ppid, pid;

	if (nfds < 0 || nfds > PROC_SPAWN_MAXFDS) {
		errno = EINVAL;
		return -1;
	}
	ppid = getpid();
	switch ((pid = fork())) {
	case -1:
		return -1;
	case 0:
		proc_child_exec(ppid, path, argv, NULL, fds, nfds);
	default:
		return pid;
	}
}

/*
 * The same, but the new process is the caller's parent's child (clone with
 * CLONE_PARENT): the spawner starts the supervisor's children this way, so
 * that the supervisor reaps them and their death signal follows it.
 */
pid_t
proc_spawn_sibling(const char *path, char *const argv[], char *const envp[],
    const int *fds, int nfds)
{
	pid_t	 ppid, pid;

	if (nfds < 0 || nfds > PROC_SPAWN_MAXFDS) {
		errno = EINVAL;
		return -1;
	}
	ppid = getppid();
	switch ((pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL,
	    NULL, NULL))) {
	case -1:
		return -1;
	case 0:
		proc_child_exec(ppid, path, argv, envp, fds, nfds);
	default:
		return pid;
	}
}

void
proc_child_check_fds(int nfds)
{
	struct stat	 st;
	DIR		*d;
	struct dirent	*de;
	char		*end;
	long		 fd;
	int		 sig = 0;

	for (fd = 0; fd < FD_PARENT; fd++)
		if (fcntl(fd, F_GETFD) == -1)
			fatal("%s: descriptor %ld", __func__, fd);
	for (fd = FD_PARENT; fd < FD_PARENT + nfds; fd++) {
		if (fstat(fd, &st) == -1)
			fatal("%s: inherited descriptor %ld", __func__, fd);
		if (!S_ISSOCK(st.st_mode))
			fatalx("%s: inherited descriptor %ld is not a socket",
			    __func__, fd);
	}
	if ((d = opendir("/proc/self/fd")) == NULL)
		fatal("%s: /proc/self/fd", __func__);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		errno = 0;
		fd = strtol(de->d_name, &end, 10);
		if (errno != 0 || *end != '\0' || fd < 0)
			fatalx("%s: /proc/self/fd/%s", __func__, de->d_name);
		if (fd < FD_PARENT + nfds || fd == dirfd(d))
			continue;
		fatalx("%s: descriptor %ld is open", __func__, fd);
	}
	closedir(d);

	if (prctl(PR_GET_PDEATHSIG, &sig, 0, 0, 0) == -1)
		fatal("%s: PR_GET_PDEATHSIG", __func__);
	if (sig != SIGKILL)
		fatalx("%s: no parent-death signal", __func__);
	if (getppid() == 1)
		fatalx("%s: the parent is gone", __func__);
}

/* The value in KiB of the first line starting with key in fp. */
static long
proc_kib_stream(FILE *fp, const char *key)
{
	char		 line[256];
	size_t		 klen = strlen(key);
	long		 kib = -1;
	char		*end;

	while (fgets(line, sizeof(line), fp) != NULL) {
		if (strncmp(line, key, klen) != 0)
			continue;
		errno = 0;
		kib = strtol(line + klen, &end, 10);
		if (errno != 0 || end == line + klen || kib < 0 ||
		    strncmp(end, " kB", 3) != 0)
			kib = -1;
		break;
	}
	return kib;
}

/* The value in KiB of the first line of path starting with key. */
static long
proc_status_kib(pid_t pid, const char *file, const char *key)
{
	char		 path[64];
	FILE		*fp;
	long		 kib;

	if (snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid,
	    file) >= (int)sizeof(path))
		return -1;
	if ((fp = fopen(path, "re")) == NULL)
		return -1;
	kib = proc_kib_stream(fp, key);
	fclose(fp);
	return kib;
}

/* Rss, Pss, then Private_Clean and Private_Dirty, in the rollup's order. */
static int
proc_rollup_text(char *buf, size_t n, struct proc_mem *pm)
{
	FILE	*fp;
	long	 clean, dirty;

	if ((fp = fmemopen(buf, n, "r")) == NULL)
		return -1;
	pm->pm_rss_kib = proc_kib_stream(fp, "Rss:");
	pm->pm_pss_kib = proc_kib_stream(fp, "Pss:");
	clean = proc_kib_stream(fp, "Private_Clean:");
	dirty = proc_kib_stream(fp, "Private_Dirty:");
	pm->pm_uss_kib = clean == -1 || dirty == -1 ? -1 : clean + dirty;
	fclose(fp);
	if (pm->pm_rss_kib == -1 || pm->pm_pss_kib == -1) {
		pm->pm_rss_kib = pm->pm_pss_kib = pm->pm_uss_kib = -1;
		return -1;
	}
	return 0;
}

/* With read(2), not pread(2): the supervisor reads its own this way, and
 * its seccomp table has no pread. */
int
proc_rollup(pid_t pid, struct proc_mem *pm)
{
	char	 path[64], buf[4096];
	ssize_t	 n;
	size_t	 len = 0;
	int	 fd;

	pm->pm_rss_kib = pm->pm_pss_kib = pm->pm_uss_kib = -1;
	if (snprintf(path, sizeof(path), "/proc/%ld/smaps_rollup",
	    (long)pid) >= (int)sizeof(path) ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	while (len < sizeof(buf) - 1) {
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (len == 0)
		return -1;
	buf[len] = '\0';
	return proc_rollup_text(buf, len, pm);
}

int
proc_rollup_fd(int fd, struct proc_mem *pm)
{
	char	 buf[4096];
	ssize_t	 n;

	pm->pm_rss_kib = pm->pm_pss_kib = pm->pm_uss_kib = -1;
	/* From the start every time: the kernel makes the text anew. */
	while ((n = pread(fd, buf, sizeof(buf) - 1, 0)) == -1 &&
	    errno == EINTR)
		;
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return proc_rollup_text(buf, (size_t)n, pm);
}

long
proc_rss_kib(pid_t pid)
{
	return proc_status_kib(pid, "status", "VmRSS:");
}

long
proc_pss_kib(pid_t pid)
{
	return proc_status_kib(pid, "smaps_rollup", "Pss:");
}

struct proc_drop {
	uintptr_t	 pd_page;
	ElfW(Addr)	 pd_vdso;
	int		 pd_failed;
};

static int
proc_drop_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct proc_drop	*pd = arg;
	uintptr_t		 page = pd->pd_page, start, end;
	int			 i;

	(void)size;
	if (info->dlpi_addr == pd->pd_vdso)
		return 0;	/* the vDSO: the kernel's own pages */
	/* Text relocations write code: those copies would be lost. */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Dyn)	*d;

		if (info->dlpi_phdr[i].p_type != PT_DYNAMIC)
			continue;
		for (d = (const ElfW(Dyn) *)(info->dlpi_addr +
		    info->dlpi_phdr[i].p_vaddr); d->d_tag != DT_NULL; d++)
			if (d->d_tag == DT_TEXTREL || (d->d_tag == DT_FLAGS &&
			    (d->d_un.d_val & DF_TEXTREL)))
				return 0;
	}
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr)	*ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) ||
		    ph->p_memsz == 0)
			continue;
		/* Inward: a page shared with a writable segment stays. */
		start = (info->dlpi_addr + ph->p_vaddr + page - 1) & ~(page - 1);
		end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz) &
		    ~(page - 1);
		if (end > start &&
		    madvise((void *)start, end - start, MADV_DONTNEED) == -1)
			pd->pd_failed++;
	}
	return 0;
}

int
proc_drop_text(void)
{
	struct proc_drop	 pd;

	pd.pd_page = (uintptr_t)sysconf(_SC_PAGESIZE);
	pd.pd_vdso = (ElfW(Addr))getauxval(AT_SYSINFO_EHDR);
	pd.pd_failed = 0;
	(void)dl_iterate_phdr(proc_drop_object, &pd);
	return pd.pd_failed;
}

/* How far below the caller's frame start-up may have used the stack. */
#define PROC_STACK_DROP		(256 * 1024)
/* At most what proc_drop_below()'s frame and madvise(2) below it use. */
#define PROC_STACK_INUSE	512

/*
 * Not inlined: its frame is the deepest in use when madvise(2) runs, so the
 * page the call needs is the one PROC_STACK_INUSE under here, whichever
 * side of a page boundary the caller's frame ended on.
 */
static int __attribute__((noinline))
proc_drop_below(uintptr_t page)
{
	volatile char	 here;
	uintptr_t	 top, low;

	top = ((uintptr_t)&here - PROC_STACK_INUSE) & ~(page - 1);
	low = top - PROC_STACK_DROP;
	/* Below the stack's mapping lies the gap before any other: what is
	 * not mapped there is skipped, and reported as ENOMEM. */
	if (madvise((void *)low, top - low, MADV_DONTNEED) == -1 &&
	    errno != ENOMEM)
		return -1;
	return 0;
}

int
proc_drop_stack(void)
{
	return proc_drop_below((uintptr_t)sysconf(_SC_PAGESIZE));
}

uint64_t
proc_now_ms(void)
{
	struct timespec	 ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
