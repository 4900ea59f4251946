#ifndef RTSANDBOX_SUPERVISOR_SANDBOX_H
#define RTSANDBOX_SUPERVISOR_SANDBOX_H

#include <stddef.h>

/* struct sandbox_fs_rule and the SB_FS_ flags the caller's rules use. */
#include "../common/sandbox.h"

struct event_base;

/*
 * The supervisor's drop (DESIGN.md 4).  Landlock domains and seccomp filters
 * are inherited across fork and exec, and a child can only narrow them, so
 * both are the union of what the supervisor and every child need.
 *
 * The caller passes the rules that come from the configuration: the control
 * socket's directory (read, write, socket), the helpers' directory (read,
 * exec), the state directory (read, write, socket: the file guard's) and
 * egress's credential and CA files (read, with SB_FS_PARENT like egress
 * itself).  This function adds the system's libraries and the dynamic
 * loader's cache (read, exec), /proc (read: the children's memory), /dev/null
 * (a child's standard input), the TLS and resolver files and TCP connect
 * (egress's).  Returns the event base.
 */
struct event_base	*sandbox_supervisor(const struct sandbox_fs_rule *,
			    size_t n);

#endif
