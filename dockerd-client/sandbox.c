/*
 * The Docker client speaks HTTP with libcurl to the Docker socket and to
 * nothing else: Unix sockets only.
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include <stddef.h>

#include "../common/log.h"
#include "limits.h"
#include "../common/sandbox.h"
#include "sandbox.h"

static const struct sandbox_syscall sandbox_docker_table[] = {
	/* libcurl's connections to the Docker socket. */
	SB_ALLOW_ARG(socket, 0, AF_UNIX),
	SB_ALLOW(connect),
	SB_ALLOW(setsockopt),
	SB_ALLOW(getsockname),
	SB_ALLOW(getpeername),

	/* libcurl's multi handle wakes itself through a socket pair. */
	SB_ALLOW_ARG(socketpair, 0, AF_UNIX),
	SB_ALLOW(pipe2),
};

static const struct sandbox_rlimit sandbox_docker_rlimits[] = {
	{ RLIMIT_NOFILE, 64 },
	{ RLIMIT_NPROC, 0 },
	{ RLIMIT_DATA, DOCKER_DATA_MAX },
};

struct event_base *
sandbox_docker(const char *docker_socket)
{
	struct event_base	*base;

	sandbox_drop_caps();
	sandbox_no_new_privs();
	sandbox_not_dumpable();
	sandbox_landlock(NULL, 0);
	log_debug("%s: %s reached by connect(2) alone", __func__,
	    docker_socket);
	sandbox_rlimits(sandbox_docker_rlimits,
	    sizeof(sandbox_docker_rlimits) / sizeof(sandbox_docker_rlimits[0]));
	base = sandbox_event_base();
	sandbox_seccomp(sandbox_docker_table,
	    sizeof(sandbox_docker_table) / sizeof(sandbox_docker_table[0]));
	return base;
}
