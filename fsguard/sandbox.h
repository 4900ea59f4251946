#ifndef RTSANDBOX_FSGUARD_SANDBOX_H
#define RTSANDBOX_FSGUARD_SANDBOX_H

struct event_base;

/*
 * The file guard's drop (DESIGN.md 4): Landlock lets it read, write and bind
 * Unix sockets beneath state_dir and touch nothing else; no network, no
 * child processes.  Returns its event base.
 */
struct event_base	*sandbox_fsguard(const char *state_dir);

#endif
