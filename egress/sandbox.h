#ifndef RTSANDBOX_EGRESS_SANDBOX_H
#define RTSANDBOX_EGRESS_SANDBOX_H

#include <stddef.h>

struct event_base;

/*
 * Egress's drop (DESIGN.md 4): Landlock lets it read the given files
 * (credentials, CA bundle; each through its directory, since a refresher
 * replaces a credential by rename) and the system's TLS and resolver
 * configuration, and connect over TCP to any port; seccomp lets it make
 * Internet sockets and threads (libcurl's resolver) but no processes.  The
 * caller calls curl_global_init() before.  Returns its event base.
 */
struct event_base	*sandbox_egress(const char *const *read_files,
			    size_t n);

#endif
