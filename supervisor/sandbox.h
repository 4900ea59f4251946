#ifndef RTSANDBOX_SUPERVISOR_SANDBOX_H
#define RTSANDBOX_SUPERVISOR_SANDBOX_H

#include <stddef.h>

/* struct sandbox_fs_rule and the SB_FS_ flags the caller's rules use. */
#include "../common/sandbox.h"

struct event_base;

/*
 * The spawner's drop (DESIGN.md 4).  Landlock domains and seccomp filters
 * are inherited across fork and exec, and a child can only narrow them, so
 * both are the union of what every helper needs.  The caller passes the
 * rules that come from the configuration: the helpers' directory (read,
 * exec), the state directory (read, write, socket: the file guard's) and
 * egress's credential and CA files (read, with SB_FS_PARENT like egress
 * itself).  This function adds the system's libraries and the dynamic
 * loader's cache (read, exec), /proc (read), /dev/null (a child's standard
 * input), the TLS and resolver files and TCP connect (egress's).
 */
void			 sandbox_spawner(const struct sandbox_fs_rule *,
			    size_t n);

/*
 * The supervisor's own drop, after the spawner was forked: the caller's
 * rules (the control socket's directory, to remove the socket at exit) and
 * /proc (read).  Its Landlock domain does not scope signals: its children
 * are in the spawner's.  Returns the event base.
 */
struct event_base	*sandbox_supervisor(const struct sandbox_fs_rule *,
			    size_t n);

#endif
