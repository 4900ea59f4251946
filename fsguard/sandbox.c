/*
 * The file guard works beneath the state directory only, relative to
 * directory descriptors, and never follows a link the guest could have
 * planted (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, O_NOFOLLOW).  It
 * makes no links, no devices and no FIFOs: those calls kill.
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include <fcntl.h>
#include <stddef.h>

#include "limits.h"
#include "../common/sandbox.h"
#include "sandbox.h"

static const struct sandbox_syscall sandbox_fsguard_table[] = {
	/* Looking up and reading beneath the state directory. */
	SB_ALLOW(openat),
	SB_ALLOW(openat2),
	SB_ALLOW(newfstatat),
	SB_ALLOW(statx),
	SB_ALLOW(getdents64),
	SB_ALLOW_ARG(fcntl, 1, F_DUPFD_CLOEXEC),

	/* Channel directories, attachments, archived sessions. */
	SB_ALLOW(mkdirat),
	SB_ALLOW(unlinkat),
	SB_ALLOW(renameat),
	SB_ALLOW(renameat2),
	SB_ALLOW(fchmod),
	SB_ALLOW(fchmodat),
	SB_ALLOW(ftruncate),
	SB_ALLOW(fsync),
	SB_ALLOW(fdatasync),
	SB_ALLOW(umask),
	/* bot_group's ACLs, through /proc/self/fd or a file's descriptor. */
	SB_ALLOW(getxattr),
	SB_ALLOW(setxattr),
	SB_ALLOW(fsetxattr),

	/* A broker's listening socket: bound here, handed over. */
	SB_ALLOW_ARG(socket, 0, AF_UNIX),
	SB_ALLOW(bind),
	SB_ALLOW(listen),
	SB_ALLOW(getsockname),
};

static const struct sandbox_rlimit sandbox_fsguard_rlimits[] = {
	{ RLIMIT_NOFILE, 64 },
	{ RLIMIT_NPROC, 0 },
	{ RLIMIT_DATA, FSGUARD_DATA_MAX },
};

struct event_base *
sandbox_fsguard(const char *state_dir)
{
	const struct sandbox_fs_rule	 rules[] = {
		{ state_dir, SB_FS_READ | SB_FS_WRITE | SB_FS_SOCK },
	};
	struct event_base		*base;

	sandbox_drop_caps();
	sandbox_no_new_privs();
	sandbox_not_dumpable();
	sandbox_landlock(rules, sizeof(rules) / sizeof(rules[0]));
	sandbox_rlimits(sandbox_fsguard_rlimits,
	    sizeof(sandbox_fsguard_rlimits) /
	    sizeof(sandbox_fsguard_rlimits[0]));
	base = sandbox_event_base();
	sandbox_seccomp(sandbox_fsguard_table,
	    sizeof(sandbox_fsguard_table) / sizeof(sandbox_fsguard_table[0]));
	return base;
}
