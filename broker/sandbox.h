#ifndef RTSANDBOX_BROKER_SANDBOX_H
#define RTSANDBOX_BROKER_SANDBOX_H

struct event_base;

/*
 * The broker's drop (DESIGN.md 4): an empty root (DESIGN.md 1, invariant 10),
 * no capabilities, no_new_privs, a Landlock domain with no file-system
 * access at all, no child processes, and a seccomp table that lets it
 * accept, read and write on the descriptors it was given and nothing else.
 * Returns its event base.
 */
struct event_base	*sandbox_broker(void);

#endif
