/*
 * The spawner (DESIGN.md 1, invariant 9).  rtsandboxd forks it before the
 * supervisor confines itself; it keeps clone and exec and the helpers'
 * files, and it reads nothing but fixed-size requests from the supervisor on
 * its own socket, every field of which it checks again (bubblewrap's rule
 * for a privileged helper).  Children inherit its seccomp filter and
 * Landlock domain, so those are the union of what the helpers need until
 * they load their own; the supervisor's are left with what it uses itself.
 *
 * A child is made with clone(CLONE_PARENT): it is the supervisor's child, so
 * the supervisor reaps it, and its parent-death signal follows the
 * supervisor, as when the supervisor forked it itself.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildconf.h"
#include "journal.h"
#include "limits.h"
#include "log.h"
#include "role.h"
#include "sandbox.h"
#include "spawner.h"
#include "supervisor.h"
#include "validate.h"

/* How long the supervisor waits for the spawner's answer. */
#define SPAWNER_TIMEOUT_MS	10000

/*
 * One request: start a role with the pipes that ride with it and a channel
 * segment, read a child's memory from /proc (the supervisor's Landlock
 * domain does not reach into the spawner's, where the children are), or
 * open the configuration file rtsandboxd was started with, for a reload
 * (the supervisor's domain holds no file of the host's).
 */
enum spawn_op {
	SPAWN_START = 1,
	SPAWN_MEMORY,
	SPAWN_CONFIG,
};

struct spawn_req {
	uint32_t	 sr_op;
	uint32_t	 sr_role;
	uint32_t	 sr_nfds;
	int32_t		 sr_pid;
	char		 sr_name[SEGMENT_MAX + 1];
};

struct spawn_rep {
	int32_t		 sp_pid;
	int32_t		 sp_errno;
	int64_t		 sp_rss_kib;
	int64_t		 sp_pss_kib;
	int64_t		 sp_uss_kib;
};

static char	 helper_path[PROC__COUNT][PATH_MAX];
static int	 spawner_sock = -1;	/* the supervisor's end */
static pid_t	 spawner_child = -1;

/*
 * In the spawner: what it knows of each child it started, to read its
 * proportional set size once the child is not dumpable (role.c hands over
 * its smaps_rollup on the socket).  A pidfd tells when the child is gone,
 * whatever became of its pid since.
 */
struct spawn_mem {
	pid_t	 sm_pid;
	int	 sm_pidfd;
	int	 sm_sock;	/* -1 once the file came, or never will */
	int	 sm_fd;		/* its smaps_rollup, or -1 */
};
static struct spawn_mem	*spawn_mems;
static size_t		 spawn_nmems, spawn_mems_cap;

int
spawner_find_helpers(void)
{
	static const enum proc_role roles[] = {
		PROC_FSGUARD, PROC_DOCKER, PROC_EGRESS, PROC_BROKER,
		PROC_RESEARCH
	};
	char		 self[PATH_MAX];
	ssize_t		 n;
	size_t		 i, blen;
	int		 rc = 0;

	/* An rtsandboxd run from its build tree finds its helpers there. */
	blen = strlen(RTSANDBOX_BUILDDIR);
	if (sv->sv_helper_dir == NULL &&
	    (n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		if (strncmp(self, RTSANDBOX_BUILDDIR, blen) == 0 &&
		    self[blen] == '/')
			sv->sv_build_tree = 1;
	}
	for (i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
		enum proc_role	 r = roles[i];
		char		*p = helper_path[r];

		if (sv->sv_helper_dir != NULL)
			n = snprintf(p, PATH_MAX, "%s/%s", sv->sv_helper_dir,
			    proc_role_binary(r));
		else if (sv->sv_build_tree)
			n = snprintf(p, PATH_MAX, "%s/%s/%s",
			    RTSANDBOX_BUILDDIR, proc_role_folder(r),
			    proc_role_binary(r));
		else
			n = snprintf(p, PATH_MAX, "%s/%s",
			    RTSANDBOX_LIBEXECDIR, proc_role_binary(r));
		if (n < 0 || n >= PATH_MAX) {
			log_warnx("helper path for %s too long",
			    proc_role_name(r));
			rc = -1;
		} else if (access(p, X_OK) == -1) {
			log_warn("helper %s", p);
			rc = -1;
		}
	}
	return rc;
}

/* Egress's: its credential directories, the CA file, the MCP credential
 * and the test CA. */
_Static_assert(CRED_DIRS_MAX + 3 <= ROLE_MAXPATHS, "egress's paths");

/* The -p paths of each role: what its Landlock ruleset allows. */
static size_t
spawner_paths(enum proc_role role, const char **paths, size_t max)
{
	const struct config	*conf = sv->sv_conf;
	size_t			 n = 0;

	switch (role) {
	case PROC_FSGUARD:
		paths[n++] = conf->state_dir;
		break;
	case PROC_DOCKER:
		paths[n++] = conf->docker_socket;
		break;
	case PROC_EGRESS:
		/* a file in each directory of the model's credentials */
		n = config_cred_dirs(conf, paths, CRED_DIRS_MAX);
		if (n > CRED_DIRS_MAX)
			fatalx("%s: credential files in more than %u "
			    "directories", __func__, CRED_DIRS_MAX);
		if (conf->upstream_ca_file != NULL)
			paths[n++] = conf->upstream_ca_file;
		if (conf->mcp_credential_file != NULL)
			paths[n++] = conf->mcp_credential_file;
#if RTSANDBOX_TEST_SEAMS
		if (conf->test_fetch_ca_file != NULL)
			paths[n++] = conf->test_fetch_ca_file;
#endif
		break;
	default:
		break;
	}
	if (n > max)
		fatalx("%s: too many paths", __func__);
	return n;
}

/* Pipes a role inherits: its pipe to the supervisor, and to egress. */
static int
spawner_role_nfds(uint32_t role)
{
	switch (role) {
	case PROC_FSGUARD:
	case PROC_DOCKER:
	case PROC_EGRESS:
		return 1;
	case PROC_BROKER:
	case PROC_RESEARCH:
		return 2;
	default:
		return -1;
	}
}

/* A name is a channel segment ([A-Za-z0-9_-]{1,256}) for the roles that
 * have one, empty for the others. */
static int
spawner_name_ok(const struct spawn_req *sr)
{
	size_t	 len, i;
	char	 c;

	if ((len = strnlen(sr->sr_name, sizeof(sr->sr_name))) ==
	    sizeof(sr->sr_name))
		return 0;
	if (sr->sr_role != PROC_BROKER && sr->sr_role != PROC_RESEARCH)
		return len == 0;
	if (len == 0)
		return 0;
	for (i = 0; i < len; i++) {
		c = sr->sr_name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return 0;
	}
	return 1;
}

/*
 * One request, received and checked: exactly one message of the request's
 * size, its descriptors in one SCM_RIGHTS message, as many as the role
 * has, each a socket.  Returns the number of descriptors (in fds), or -1
 * (every descriptor received is closed).
 */
static int
spawner_recv(int sock, struct spawn_req *sr, int *fds)
{
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int) * FRAME_MAXFDS)];
	} cm;
	struct msghdr	 mh;
	struct iovec	 iov;
	struct cmsghdr	*c;
	struct stat	 st;
	ssize_t		 n;
	int		 nfds = 0, i, ok = 1;

	memset(&mh, 0, sizeof(mh));
	iov.iov_base = sr;
	iov.iov_len = sizeof(*sr);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	do {
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	} while (n == -1 && errno == EINTR);
	if (n == 0) {
		log_debug("the supervisor closed its socket; exiting");
		_exit(0);
	}
	if (n == -1)
		fatal("%s: recvmsg", __func__);
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		int	 k, *p = (int *)(void *)CMSG_DATA(c);

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			ok = 0;
			continue;
		}
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			if (nfds < FRAME_MAXFDS)
				fds[nfds++] = p[i];
			else {
				close(p[i]);
				ok = 0;
			}
		}
	}
	if (n != sizeof(*sr) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		ok = 0;
	else if (sr->sr_op == SPAWN_CONFIG) {
		if (nfds != 0 || sr->sr_nfds != 0 || sr->sr_role != 0 ||
		    sr->sr_pid != 0 || sr->sr_name[0] != '\0')
			ok = 0;
	} else if (sr->sr_op == SPAWN_MEMORY) {
		if (nfds != 0 || sr->sr_nfds != 0 || sr->sr_role != 0 ||
		    sr->sr_pid <= 1 || sr->sr_name[0] != '\0')
			ok = 0;
	} else if (sr->sr_op != SPAWN_START || sr->sr_pid != 0 ||
	    spawner_role_nfds(sr->sr_role) != nfds ||
	    sr->sr_nfds != (uint32_t)nfds || !spawner_name_ok(sr))
		ok = 0;
	for (i = 0; ok && i < nfds; i++)
		if (fstat(fds[i], &st) == -1 || !S_ISSOCK(st.st_mode))
			ok = 0;
	if (!ok) {
		for (i = 0; i < nfds; i++)
			close(fds[i]);
		return -1;
	}
	return nfds;
}

static void
spawn_mem_close(struct spawn_mem *sm)
{
	close(sm->sm_pidfd);
	if (sm->sm_sock != -1)
		close(sm->sm_sock);
	if (sm->sm_fd != -1)
		close(sm->sm_fd);
}

/* A memory read sweeps the ended children at most this often (ms). */
#define SPAWN_SWEEP_MS	1000

/* Forget every child that has ended: its pidfd is readable. */
static void
spawn_mem_sweep(void)
{
	struct pollfd	*pfd;
	size_t		 i, k;

	if (spawn_nmems == 0)
		return;
	if ((pfd = calloc(spawn_nmems, sizeof(*pfd))) == NULL)
		fatal("%s", __func__);
	for (i = 0; i < spawn_nmems; i++) {
		pfd[i].fd = spawn_mems[i].sm_pidfd;
		pfd[i].events = POLLIN;
	}
	if (poll(pfd, spawn_nmems, 0) == -1) {
		free(pfd);
		return;
	}
	for (i = k = 0; i < spawn_nmems; i++) {
		if (pfd[i].revents != 0)
			spawn_mem_close(&spawn_mems[i]);
		else
			spawn_mems[k++] = spawn_mems[i];
	}
	spawn_nmems = k;
	free(pfd);
}

/* A child just started, with the spawner's end of its -m socket (taken
 * over, closed when the child cannot be followed). */
static void
spawn_mem_add(pid_t pid, int sock)
{
	struct spawn_mem	*sm;
	size_t			 cap;
	int			 pidfd;

	spawn_mem_sweep();
	/* The supervisor waits for this answer and reaps nothing meanwhile:
	 * pid is still this child's. */
	if ((pidfd = syscall(SYS_pidfd_open, pid, 0)) == -1) {
		log_debug("%s: pidfd_open %d: %s", __func__, (int)pid,
		    strerror(errno));
		close(sock);
		return;
	}
	if (spawn_nmems == spawn_mems_cap) {
		cap = spawn_mems_cap ? spawn_mems_cap * 2 : 16;
		if ((sm = reallocarray(spawn_mems, cap, sizeof(*sm))) == NULL)
			fatal("%s", __func__);
		spawn_mems = sm;
		spawn_mems_cap = cap;
	}
	sm = &spawn_mems[spawn_nmems++];
	sm->sm_pid = pid;
	sm->sm_pidfd = pidfd;
	sm->sm_sock = sock;
	sm->sm_fd = -1;
}

/* The file the child handed over, if it did by now: checked to be its
 * own /proc/<pid>/smaps_rollup. */
static void
spawn_mem_receive(struct spawn_mem *sm)
{
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int) * FRAME_MAXFDS)];
	} cm;
	struct msghdr	 mh;
	struct iovec	 iov;
	struct cmsghdr	*c;
	char		 one, want[64], path[64], link[64];
	ssize_t		 n;
	int		 i, k, *p;

	memset(&mh, 0, sizeof(mh));
	iov.iov_base = &one;
	iov.iov_len = 1;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	n = recvmsg(sm->sm_sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;		/* not yet */
	for (c = CMSG_FIRSTHDR(&mh); n > 0 && c != NULL;
	    c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		p = (int *)(void *)CMSG_DATA(c);
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			if (sm->sm_fd == -1)
				sm->sm_fd = p[i];
			else
				close(p[i]);
		}
	}
	close(sm->sm_sock);
	sm->sm_sock = -1;
	if (sm->sm_fd == -1)
		return;
	(void)snprintf(want, sizeof(want), "/proc/%d/smaps_rollup",
	    (int)sm->sm_pid);
	(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", sm->sm_fd);
	if ((n = readlink(path, link, sizeof(link) - 1)) == -1 ||
	    (size_t)n != strlen(want) || memcmp(link, want, n) != 0) {
		log_warnx("BUG: child %d handed over another file",
		    (int)sm->sm_pid);
		close(sm->sm_fd);
		sm->sm_fd = -1;
	}
}

/*
 * Take the files handed over since the last request.  One left on its
 * socket is a descriptor in flight, and the kernel counts those of the
 * user against each sender's RLIMIT_NOFILE (ETOOMANYREFS): a thousand
 * brokers' files left there until daemon.stats asked stopped the file
 * guard handing over directories.
 */
static void
spawn_mem_collect(void)
{
	size_t	 i;

	for (i = 0; i < spawn_nmems; i++)
		if (spawn_mems[i].sm_sock != -1)
			spawn_mem_receive(&spawn_mems[i]);
}

/*
 * A child's memory: from the file it handed over, which is read whatever
 * becomes of its /proc entries (root's once it is not dumpable, hidden
 * altogether under the unit's ProtectProc=invisible); else RSS from its
 * status and, while it is still dumpable, PSS from its own file.
 */
static void
spawn_mem_read(pid_t pid, struct proc_mem *pm)
{
	static uint64_t		 swept;
	struct spawn_mem	*sm = NULL;
	size_t			 i;
	uint64_t		 now = proc_now_ms();

	/*
	 * A poll(2) of every child's pidfd: with a thousand brokers, and
	 * daemon.stats's reads, at most once a second here (each start
	 * sweeps too).  Meanwhile the last entry of a pid is its child's.
	 */
	if (swept == 0 || now - swept >= SPAWN_SWEEP_MS) {
		spawn_mem_sweep();
		swept = now;
	}
	for (i = 0; i < spawn_nmems; i++)
		if (spawn_mems[i].sm_pid == pid)
			sm = &spawn_mems[i];
	if (sm != NULL && sm->sm_sock != -1)
		spawn_mem_receive(sm);
	if (sm != NULL && sm->sm_fd != -1 &&
	    proc_rollup_fd(sm->sm_fd, pm) == 0)
		return;
	if (proc_rollup(pid, pm) == 0)
		return;
	pm->pm_rss_kib = proc_rss_kib(pid);
}

static void
spawner_reply_fd(int sock, pid_t pid, int err, const struct proc_mem *pm,
    int fd)
{
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct spawn_rep	 rep;
	struct msghdr		 mh;
	struct iovec		 iov;
	struct cmsghdr		*c;
	ssize_t			 n;

	memset(&rep, 0, sizeof(rep));
	rep.sp_pid = pid;
	rep.sp_errno = err;
	rep.sp_rss_kib = pm != NULL ? pm->pm_rss_kib : -1;
	rep.sp_pss_kib = pm != NULL ? pm->pm_pss_kib : -1;
	rep.sp_uss_kib = pm != NULL ? pm->pm_uss_kib : -1;
	memset(&mh, 0, sizeof(mh));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = &rep;
	iov.iov_len = sizeof(rep);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (fd != -1) {
		mh.msg_control = cm.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int));
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do {
		n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	} while (n == -1 && errno == EINTR);
	if (n != sizeof(rep))
		fatal("%s: send", __func__);
}

static void
spawner_reply(int sock, pid_t pid, int err, const struct proc_mem *pm)
{
	spawner_reply_fd(sock, pid, err, pm, -1);
}

/* The spawner's loop: never returns. */
/*
 * What the helpers open before they load their own Landlock domain, and
 * what they keep: the configuration's paths (the file guard's state
 * directory, egress's credential and CA files) and the helpers' directory.
 */
static void
spawner_sandbox(void)
{
	const struct config	*conf = sv->sv_conf;
	struct sandbox_fs_rule	 rules[16];
	const char		*dirs[CRED_DIRS_MAX + 1];
	size_t			 n = 0, i, nd;

	if (sv->sv_helper_dir != NULL)
		rules[n++] = (struct sandbox_fs_rule){ sv->sv_helper_dir,
		    SB_FS_READ | SB_FS_EXEC };
	else if (sv->sv_build_tree)
		rules[n++] = (struct sandbox_fs_rule){ RTSANDBOX_BUILDDIR,
		    SB_FS_READ | SB_FS_EXEC };
	else
		rules[n++] = (struct sandbox_fs_rule){ RTSANDBOX_LIBEXECDIR,
		    SB_FS_READ | SB_FS_EXEC };
	rules[n++] = (struct sandbox_fs_rule){ conf->state_dir,
	    SB_FS_READ | SB_FS_WRITE | SB_FS_SOCK };
	/* the configuration's directory, for reloads: it may be replaced
	 * by a rename */
	rules[n++] = (struct sandbox_fs_rule){ sv->sv_conf_path,
	    SB_FS_READ | SB_FS_PARENT };
	/* directories, since a refresher replaces files by rename; those
	 * of the model's credentials are the ones a reload may use */
	if ((nd = config_cred_dirs(conf, dirs, CRED_DIRS_MAX)) > CRED_DIRS_MAX)
		fatalx("%s: credential files in more than %u directories",
		    __func__, CRED_DIRS_MAX);
	for (i = 0; i < nd; i++)
		rules[n++] = (struct sandbox_fs_rule){ dirs[i],
		    SB_FS_READ | SB_FS_PARENT };
	if (conf->upstream_ca_file != NULL)
		rules[n++] = (struct sandbox_fs_rule){ conf->upstream_ca_file,
		    SB_FS_READ | SB_FS_PARENT };
	if (conf->mcp_credential_file != NULL)
		rules[n++] = (struct sandbox_fs_rule){
		    conf->mcp_credential_file, SB_FS_READ | SB_FS_PARENT };
#if RTSANDBOX_TEST_SEAMS
	if (conf->test_fetch_ca_file != NULL)
		rules[n++] = (struct sandbox_fs_rule){
		    conf->test_fetch_ca_file, SB_FS_READ | SB_FS_PARENT };
#endif
	sandbox_spawner(rules, n);
}

static void __attribute__((noreturn))
spawner_main(int sock)
{
	const char	*paths[ROLE_MAXPATHS];
	char		*argv[12 + 2 * ROLE_MAXPATHS], mfd[16];
	struct spawn_req sr;
	int		 fds[FRAME_MAXFDS + 2], nfds, nrecv, ac, err, msock[2];
	size_t		 np, i;
	struct proc_mem	 pm;
	pid_t		 pid;

	log_init("spawner", sv->sv_debug);
	spawner_sandbox();
	for (;;) {
		memset(&sr, 0, sizeof(sr));
		if ((nfds = spawner_recv(sock, &sr, fds)) == -1) {
			log_warnx("BUG: a request the spawner refuses");
			spawner_reply(sock, -1, EINVAL, NULL);
			continue;
		}
		spawn_mem_collect();
		if (sr.sr_op == SPAWN_MEMORY) {
			spawn_mem_read(sr.sr_pid, &pm);
			spawner_reply(sock, sr.sr_pid, 0, &pm);
			continue;
		}
		if (sr.sr_op == SPAWN_CONFIG) {
			/* the path it was started with, nothing asked for;
			 * O_NONBLOCK: a FIFO there must not hang it */
			int	 cfd = open(sv->sv_conf_path, O_RDONLY |
			    O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

			spawner_reply_fd(sock, cfd == -1 ? -1 : 1,
			    cfd == -1 ? errno : 0, NULL, cfd);
			if (cfd != -1)
				close(cfd);
			continue;
		}
		ac = 0;
		argv[ac++] = (char *)proc_role_binary(sr.sr_role);
		if (sv->sv_debug)
			argv[ac++] = "-d";
		if (log_getjournal())
			argv[ac++] = "-l";
		/* Egress writes its audit records to the journal itself
		 * (journal.h), on the socket connected before any sandbox. */
		nrecv = nfds;
		if (sr.sr_role == PROC_EGRESS && journal_fd() != -1) {
			argv[ac++] = "-j";
			fds[nfds++] = journal_fd();
		}
		/* said every time: a broker never runs without its empty
		 * root but for this */
		if (sr.sr_role == PROC_BROKER || sr.sr_role == PROC_RESEARCH) {
			argv[ac++] = "-e";
			argv[ac++] = sv->sv_conf->empty_root_optional ?
			    "optional" : "required";
		}
		/* the socket for its memory file, in the slot after its
		 * pipes */
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
		    msock) == -1) {
			log_warn("%s: socketpair", __func__);
			msock[0] = msock[1] = -1;
		} else {
			fds[nfds] = msock[1];
			(void)snprintf(mfd, sizeof(mfd), "%d", FD_PARENT + nfds);
			argv[ac++] = "-m";
			argv[ac++] = mfd;
		}
		if (sr.sr_name[0] != '\0') {
			argv[ac++] = "-n";
			argv[ac++] = sr.sr_name;
		}
		np = spawner_paths(sr.sr_role, paths, ROLE_MAXPATHS);
		for (i = 0; i < np; i++) {
			argv[ac++] = "-p";
			argv[ac++] = (char *)paths[i];
		}
		argv[ac] = NULL;
		pid = proc_spawn_sibling(helper_path[sr.sr_role], argv,
		    proc_role_env(sr.sr_role), fds, nfds + (msock[1] != -1));
		err = pid == -1 ? errno : 0;
		for (i = 0; i < (size_t)nrecv; i++)
			close(fds[i]);
		if (msock[1] != -1) {
			close(msock[1]);
			if (pid == -1)
				close(msock[0]);
			else
				spawn_mem_add(pid, msock[0]);
		}
		spawner_reply(sock, pid, err, NULL);
	}
}

void
spawner_start(void)
{
	int	 sp[2], pfd, jfd;
	pid_t	 ppid = getpid();

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1)
		fatal("%s: socketpair", __func__);
	switch ((spawner_child = fork())) {
	case -1:
		fatal("%s: fork", __func__);
	case 0:
		/* It lives exactly as long as the supervisor, and holds
		 * nothing of it but its socket (no control socket). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == -1)
			fatal("%s: PR_SET_PDEATHSIG", __func__);
		if (getppid() != ppid)
			_exit(0);
		/* and the journal's socket, which egress gets a copy of:
		 * both above their slots first, so neither takes the other's */
		if ((pfd = fcntl(sp[1], F_DUPFD_CLOEXEC, FD_PARENT + 2)) == -1 ||
		    (journal_fd() != -1 && ((jfd = fcntl(journal_fd(),
		    F_DUPFD_CLOEXEC, FD_PARENT + 2)) == -1 ||
		    dup3(jfd, FD_PARENT + 1, O_CLOEXEC) == -1)) ||
		    dup3(pfd, FD_PARENT, O_CLOEXEC) == -1 ||
		    close_range(journal_fd() != -1 ? FD_PARENT + 2 :
		    FD_PARENT + 1, ~0U, 0) == -1)
			fatal("%s: descriptors", __func__);
		if (journal_fd() != -1)
			journal_set_fd(FD_PARENT + 1);
		signal(SIGPIPE, SIG_IGN);
		spawner_main(FD_PARENT);
	default:
		close(sp[1]);
		spawner_sock = sp[0];
		log_debug("spawner started (pid %d)", (int)spawner_child);
	}
}

int
spawner_is(pid_t pid)
{
	return pid == spawner_child;
}

/* One request and its answer; fatal when the spawner is gone. */
static void
spawner_call(struct spawn_req *sr, const int *fds, int nfds,
    struct spawn_rep *rep, int *fdp)
{
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int) * FRAME_MAXFDS)];
	} cm;
	struct msghdr		 mh;
	struct iovec		 iov;
	struct cmsghdr		*c;
	struct pollfd		 pfd;
	ssize_t			 n;
	int			 r;

	memset(&mh, 0, sizeof(mh));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = sr;
	iov.iov_len = sizeof(*sr);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (nfds > 0) {
		mh.msg_control = cm.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(spawner_sock, &mh, MSG_NOSIGNAL);
	} while (n == -1 && errno == EINTR);
	if (n != sizeof(*sr))
		fatal("the spawner is gone: sendmsg");

	/* A fork and exec away: the answer comes at once or never. */
	pfd.fd = spawner_sock;
	pfd.events = POLLIN;
	do {
		r = poll(&pfd, 1, SPAWNER_TIMEOUT_MS);
	} while (r == -1 && errno == EINTR);
	if (r != 1)
		fatalx("the spawner did not answer");
	memset(&mh, 0, sizeof(mh));
	memset(&cm, 0, sizeof(cm));
	iov.iov_base = rep;
	iov.iov_len = sizeof(*rep);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	do {
		n = recvmsg(spawner_sock, &mh, MSG_CMSG_CLOEXEC);
	} while (n == -1 && errno == EINTR);
	if (n != sizeof(*rep))
		fatalx("the spawner is gone");
	for (c = CMSG_FIRSTHDR(&mh); c != NULL; c = CMSG_NXTHDR(&mh, c)) {
		int	 k, i, *p = (int *)(void *)CMSG_DATA(c);

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			if (fdp != NULL && *fdp == -1)
				*fdp = p[i];
			else
				close(p[i]);
		}
	}
}

pid_t
spawner_spawn(enum proc_role role, const char *name, const int *fds,
    int nfds)
{
	struct spawn_req	 sr;
	struct spawn_rep	 rep;

	if (nfds < 1 || nfds > FRAME_MAXFDS || (name != NULL &&
	    strlen(name) >= sizeof(sr.sr_name))) {
		errno = EINVAL;
		return -1;
	}
	memset(&sr, 0, sizeof(sr));
	sr.sr_op = SPAWN_START;
	sr.sr_role = role;
	sr.sr_nfds = nfds;
	if (name != NULL)
		memcpy(sr.sr_name, name, strlen(name));
	spawner_call(&sr, fds, nfds, &rep, NULL);
	if (rep.sp_pid <= 0) {
		errno = rep.sp_errno > 0 ? rep.sp_errno : EINVAL;
		return -1;
	}
	return rep.sp_pid;
}

pid_t
spawner_pid(void)
{
	return spawner_child;
}

void
spawner_memory(pid_t pid, struct proc_mem *pm)
{
	struct spawn_req	 sr;
	struct spawn_rep	 rep;

	pm->pm_rss_kib = pm->pm_pss_kib = pm->pm_uss_kib = -1;
	if (pid <= 1)
		return;
	memset(&sr, 0, sizeof(sr));
	sr.sr_op = SPAWN_MEMORY;
	sr.sr_pid = pid;
	spawner_call(&sr, NULL, 0, &rep, NULL);
	if (rep.sp_pid == pid) {
		pm->pm_rss_kib = rep.sp_rss_kib;
		pm->pm_pss_kib = rep.sp_pss_kib;
		pm->pm_uss_kib = rep.sp_uss_kib;
	}
}

int
spawner_open_config(void)
{
	struct spawn_req	 sr;
	struct spawn_rep	 rep;
	int			 fd = -1;

	memset(&sr, 0, sizeof(sr));
	sr.sr_op = SPAWN_CONFIG;
	spawner_call(&sr, NULL, 0, &rep, &fd);
	if (rep.sp_pid != 1 || fd == -1) {
		if (fd != -1)
			close(fd);
		errno = rep.sp_errno > 0 ? rep.sp_errno : EIO;
		return -1;
	}
	return fd;
}
