#ifndef RTSANDBOX_DOCKER_SANDBOX_H
#define RTSANDBOX_DOCKER_SANDBOX_H

struct event_base;

/*
 * The Docker client's drop (DESIGN.md 4): no file-system access at all (a
 * connect(2) to a named socket is not a Landlock access, so docker_socket
 * needs no rule), no network but Unix sockets, no child processes.  The
 * caller calls curl_global_init() before: libcurl may read files there.
 * Returns its event base.
 */
struct event_base	*sandbox_docker(const char *docker_socket);

#endif
