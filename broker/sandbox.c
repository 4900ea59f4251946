/*
 * The broker parses guest bytes, so it holds nothing: no open, no socket, no
 * connect, no execve.  Those calls are not even politely refused: they kill
 * (DESIGN.md 1, invariant 4).
 */
#include <sys/resource.h>

#include <malloc.h>
#include <stddef.h>

#include "limits.h"
#include "../common/sandbox.h"
#include "sandbox.h"

static const struct sandbox_syscall sandbox_broker_table[] = {
	/* The worker's connections on the socket the file guard bound. */
	SB_ALLOW(accept4),
	SB_ALLOW(getsockname),
	SB_ALLOW(setsockopt),
};

/* At most BROKER_CONN_MAX connections, its two pipes, the event base;
 * memory as limits.h derives it. */
static const struct sandbox_rlimit sandbox_broker_rlimits[] = {
	{ RLIMIT_NOFILE, 64 },
	{ RLIMIT_NPROC, 0 },
	{ RLIMIT_DATA, BROKER_DATA_MAX },
};

struct event_base *
sandbox_broker(void)
{
	struct event_base	*base;

	sandbox_empty_root();
	sandbox_drop_caps();
	sandbox_no_new_privs();
	sandbox_not_dumpable();
	sandbox_landlock(NULL, 0);
	sandbox_rlimits(sandbox_broker_rlimits,
	    sizeof(sandbox_broker_rlimits) / sizeof(sandbox_broker_rlimits[0]));
	base = sandbox_event_base();
	sandbox_seccomp(sandbox_broker_table,
	    sizeof(sandbox_broker_table) / sizeof(sandbox_broker_table[0]));
	/* Building the filter freed some 1 500 small chunks: merged back
	 * into the top of the heap now, they leave no holes for what the
	 * broker keeps to be scattered into, above and below. */
	(void)malloc_trim(0);
	return base;
}
