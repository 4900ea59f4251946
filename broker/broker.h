#ifndef RTSANDBOX_BROKER_H
#define RTSANDBOX_BROKER_H

struct broker;
struct event_base;

/*
 * The broker of one channel, everything but its sandbox and its loop: it
 * watches the supervisor's pipe on FD_PARENT (proc.h) and egress's on
 * egress_fd, and reads nothing until base runs; its configuration, its
 * listening socket included, comes from the supervisor.  Fatal when the
 * pipes cannot be watched.
 */
struct broker	*broker_start(struct event_base *, int egress_fd);

#ifdef RTSANDBOX_FUZZING
#include <stdint.h>
/* fuzz_broker: a precheck broker's next input is a fresh run of calls
 * calls, or one whose deadline passed. */
void		 broker_fuzz_rerun(struct broker *, uint64_t calls,
		    int ended);
#endif

#endif
