/*
 * The statically linked broker resolves no name: it has no socket to use
 * one with, and seccomp would kill it at the first file the resolver
 * opened.  libevent's evutil.o refers to getaddrinfo(3) and its kin all the
 * same; defined here, they keep glibc's resolver, NSS and their dlopen out
 * of the broker's image, and every call fails.  Only the static broker
 * links this file (broker/meson.build).
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <netdb.h>
#include <stddef.h>

int
getaddrinfo(const char *node, const char *service,
    const struct addrinfo *hints, struct addrinfo **res)
{
	*res = NULL;
	return EAI_FAIL;
}

void
freeaddrinfo(struct addrinfo *res)
{
}

struct servent *
getservbyname(const char *name, const char *proto)
{
	errno = ENOENT;
	return NULL;
}

struct protoent *
getprotobynumber(int proto)
{
	errno = ENOENT;
	return NULL;
}
