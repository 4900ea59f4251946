#ifndef RTSANDBOX_RESEARCH_SANDBOX_H
#define RTSANDBOX_RESEARCH_SANDBOX_H

struct event_base;

/*
 * A research job's drop (DESIGN.md 4): an empty root (DESIGN.md 1,
 * invariant 10), no capabilities, no_new_privs, a Landlock domain
 * with no file-system access at all, no child processes, and the base
 * seccomp table alone: it reads and writes the two pipes it was given and
 * nothing else.  Returns its event base.  What the job needs from files
 * (character set converters) is loaded before, by text_init().
 */
struct event_base	*sandbox_research(void);

#endif
