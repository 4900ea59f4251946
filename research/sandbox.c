/*
 * A research job reads model answers, search results and fetched pages
 * from the network, so it holds nothing: no open, no socket, no connect,
 * no execve, no fork.  Those calls kill (DESIGN.md 1, invariant 4 as for
 * the broker).  Its table is the base table and nothing more: it does not
 * even accept connections.
 */
#include <sys/resource.h>

#include <stddef.h>

#include "limits.h"
#include "../common/sandbox.h"
#include "sandbox.h"

/* Its two pipes, stdio and the event base's descriptors; memory as
 * limits.h derives it. */
static const struct sandbox_rlimit sandbox_research_rlimits[] = {
	{ RLIMIT_NOFILE, 32 },
	{ RLIMIT_NPROC, 0 },
	{ RLIMIT_DATA, RESEARCH_DATA_MAX },
};

struct event_base *
sandbox_research(void)
{
	struct event_base	*base;

	sandbox_empty_root();
	sandbox_drop_caps();
	sandbox_no_new_privs();
	sandbox_not_dumpable();
	sandbox_landlock(NULL, 0);
	sandbox_rlimits(sandbox_research_rlimits,
	    sizeof(sandbox_research_rlimits) /
	    sizeof(sandbox_research_rlimits[0]));
	base = sandbox_event_base();
	sandbox_seccomp(NULL, 0);
	return base;
}
