/*
 * The spawner (DESIGN.md 1, invariant 9): a process forked from rtsandboxd
 * before the supervisor confines itself, which keeps what starting a child
 * takes (fork, exec, the helpers' files) so that the supervisor, which reads
 * what brokers send, holds none of it.
 */
#ifndef RTSANDBOX_SPAWNER_H
#define RTSANDBOX_SPAWNER_H

#include <sys/types.h>

#include "proc.h"

/* Resolve and check every helper's path (before the spawner starts). */
int	spawner_find_helpers(void);
/* Fork the spawner; fatal when it cannot start. */
void	spawner_start(void);
/* Whether pid is the spawner's (the supervisor reaps it too). */
int	spawner_is(pid_t);

/*
 * Start a helper of role with the given pipes (1 for the singletons, 2 for
 * brokers and research jobs) and name (a channel segment, or NULL).  The
 * child is the supervisor's own (clone with CLONE_PARENT): the supervisor
 * reaps it and its parent-death signal follows the supervisor.  The pipes
 * stay the caller's.  Returns the pid, or -1 with errno set.
 */
pid_t	spawner_spawn(enum proc_role, const char *name, const int *fds,
	    int nfds);

/* A child's resident and proportional set size in KiB (-1: unknown),
 * read by the spawner, whose Landlock domain holds the children. */
void	spawner_memory(pid_t, struct proc_mem *);
/* The spawner's own pid, or -1. */
pid_t	spawner_pid(void);

/* The configuration file rtsandboxd was started with, opened again by the
 * spawner for a reload: a descriptor, or -1 with errno set. */
int	spawner_open_config(void);

#endif
