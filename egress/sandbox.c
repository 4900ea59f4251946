/*
 * Egress is the only process with the network: HTTP over TCP and TLS
 * (upstream.c, OpenSSL), glibc's resolver in a thread (UDP and TCP to the
 * name servers, a routing netlink query for AI_ADDRCONFIG), libevent's evdns
 * for the controlled fetch (UDP to the name servers: socket, sendto and
 * recvfrom, no new call), and reading its credential and CA files and the
 * resolver's (sandbox_netconf_paths).
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>

#include "../common/log.h"
#include "limits.h"
#include "../common/sandbox.h"
#include "sandbox.h"

static const struct sandbox_syscall sandbox_egress_table[] = {
	/* Upstream, MCP and fetch connections and the resolver; bind only
	 * for the netlink socket (TCP binds are refused by Landlock). */
	SB_ALLOW_ARG(socket, 0, AF_INET),
	SB_ALLOW_ARG(socket, 0, AF_INET6),
	SB_ALLOW_ARG(socket, 0, AF_NETLINK),
	SB_ALLOW(connect),
	SB_ALLOW(bind),
	SB_ALLOW(setsockopt),
	SB_ALLOW(getsockname),
	SB_ALLOW(getpeername),
	SB_ALLOW(sendmmsg),

	/* The resolver thread's answers come back through a pipe. */
	SB_ALLOW(pipe2),

	/* Credentials (one stat per call while unchanged), CA files and
	 * directory, resolver files: read only. */
	SB_ALLOW_MASK(openat, 2, O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY),
	SB_ALLOW(newfstatat),
	SB_ALLOW(uname),		/* the resolver's gethostname() */

	/* Names resolve in a thread: threads, never a process. */
	SB_ALLOW_MASK(clone, 0, CLONE_THREAD, CLONE_THREAD),
	SB_ALLOW(set_robust_list),
	SB_ALLOW(rseq),
	/* the sanitizer runtimes size thread pools by it */
	SB_ALLOW(sched_getaffinity),

	/* Polite denies: glibc tries clone3 before clone, and getaddrinfo
	 * asks nscd over a Unix socket before reading the files itself. */
	SB_DENY(clone3, ENOSYS),
	SB_DENY_ARG(socket, 0, AF_UNIX, EACCES),
};

/* No RLIMIT_NPROC: it counts threads, and the resolver needs them.  Their
 * stacks count as data too. */
static const struct sandbox_rlimit sandbox_egress_rlimits[] = {
	{ RLIMIT_NOFILE, 1024 },
	{ RLIMIT_DATA, EGRESS_DATA_MAX },
};

struct event_base *
sandbox_egress(const char *const *read_files, size_t n)
{
	struct sandbox_fs_rule	*rules;
	struct event_base	*base;
	size_t			 i, nrules = 0;

	rules = calloc(n + sandbox_netconf_paths_len + 1, sizeof(*rules));
	if (rules == NULL)
		fatal("%s", __func__);
	for (i = 0; i < n; i++) {
		rules[nrules].path = read_files[i];
		rules[nrules++].access = SB_FS_READ | SB_FS_PARENT;
	}
	for (i = 0; i < sandbox_netconf_paths_len; i++) {
		rules[nrules].path = sandbox_netconf_paths[i];
		rules[nrules++].access = SB_FS_READ;
	}
	rules[nrules].path = NULL;
	rules[nrules++].access = SB_NET_CONNECT;

	sandbox_drop_caps();
	sandbox_no_new_privs();
	sandbox_not_dumpable();
	sandbox_landlock(rules, nrules);
	free(rules);
	sandbox_rlimits(sandbox_egress_rlimits,
	    sizeof(sandbox_egress_rlimits) / sizeof(sandbox_egress_rlimits[0]));
	base = sandbox_event_base();
	sandbox_seccomp(sandbox_egress_table,
	    sizeof(sandbox_egress_table) / sizeof(sandbox_egress_table[0]));
	return base;
}
