/*
 * What every child role shares between exec and its event loop: the command
 * line the supervisor gives it, the frame maxima of each edge, and the pipe to
 * the supervisor with the bring-up messages (config_done -> ready, ping ->
 * pong) answered in one place.
 */
#ifndef RTSANDBOX_ROLE_H
#define RTSANDBOX_ROLE_H

#include <stddef.h>

#include "frame.h"
#include "msg.h"
#include "proc.h"

#define ROLE_MAXPATHS	8

/*
 * rtsandbox-<role> [-djl] [-e required|optional] [-m FD] [-n NAME]
 *     [-p PATH]...
 *
 * -j: egress's FD_JOURNAL is a socket to the journal, for audit records.
 * -l: stderr is the journal (the child's environment is empty, so it
 * cannot see JOURNAL_STREAM itself).  -e: whether a broker or research job
 * may run without its empty root where the kernel refuses one
 * (sandbox.empty_root); without -e it may not.  -m: a socket on which the
 * child hands its /proc/self/smaps_rollup to the spawner, which could not
 * open it once the child is not dumpable.
 */
struct role_args {
	int		 ra_debug;
	int		 ra_journal;	/* -j: FD_JOURNAL is the journal's */
	int		 ra_log_journal;	/* -l: stderr is the journal */
	int		 ra_root_optional;
	const char	*ra_name;		/* e.g. the channel segment */
	const char	*ra_paths[ROLE_MAXPATHS];	/* for Landlock */
	size_t		 ra_npaths;
};

/* The -m descriptor: after the role's inherited slots, never more than
 * this far. */
#define ROLE_MEMORY_FD_MAX	(FD_PARENT + 7)

/* Parse argv (fatal on anything unexpected), name the process in logs as
 * "<role>" or "<role>[NAME]", tell sandbox_empty_root() what -e said, and
 * hand over the memory file on the -m socket, which is then closed. */
void	role_args_parse(enum proc_role, int argc, char *argv[],
	    struct role_args *);

/* Frame maxima of the edge from one role to another. */
const struct frame_limits *edge_limits(enum proc_role from, enum proc_role to);

struct event_base;
struct role_parent;

/*
 * Handles one message from the supervisor that the common code did not;
 * returns 0, or -1 for a message the role refuses (logged by the caller as a
 * protocol violation, which ends the child).  The message is freed after.
 */
typedef int	(*role_dispatch_fn)(struct role_parent *, struct msg *, void *);
/* Called once after config_done: NULL to answer ready, or the reason the
 * child refuses to work (sent as "refused"; the child then exits). */
typedef const char *(*role_configured_fn)(struct role_parent *, void *);

struct role_parent *role_parent_open(struct event_base *, enum proc_role,
		    role_dispatch_fn, role_configured_fn, void *arg);
struct frame_conn  *role_parent_conn(struct role_parent *);
/* cb(arg) whenever what was queued to the supervisor is all written. */
void		    role_parent_set_drain(struct role_parent *,
		    void (*cb)(void *), void *arg);
int		    role_parent_configured(const struct role_parent *);
/* Queue a message to the supervisor; fatal when the pipe is gone. */
void		    role_send(struct role_parent *, struct msgb *);
/* Answer request id with "error"; the text goes to the host log only. */
void		    role_error(struct role_parent *, uint64_t id,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
