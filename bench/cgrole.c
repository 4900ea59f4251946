/*
 * bench/cgrole.c -- the broker's and egress's code in one program, without
 * their sandbox, for bench/callgrind.py (not installed).
 *
 * valgrind cannot run the real rtsandbox-broker and rtsandbox-egress: their
 * seccomp tables kill the system calls valgrind makes for itself, and
 * callgrind writes its profile at exit, after the sandbox took the file
 * system away.  This program links the same libraries as those two binaries
 * and gives them a sandbox_broker() and sandbox_egress() of its own that set
 * up the same epoll event base and nothing else, so the code that runs per
 * call is the code that runs in service.  Only for measuring: it holds no
 * confinement at all.
 *
 * usage: cgrole broker [-n name]
 *        cgrole egress [-n name] [-p path]...
 * with the descriptors of rtsandbox-broker (FD_PARENT, FD_EGRESS) or of
 * rtsandbox-egress (FD_PARENT).
 */
#include <sys/stat.h>

#include <stddef.h>
#include <string.h>

#include <event2/event.h>

#include "broker.h"
#include "egress.h"
#include "log.h"
#include "proc.h"
#include "role.h"
#include "../common/sandbox.h"

/* In place of broker/sandbox.c and egress/sandbox.c, which the linker then
 * leaves out of the two libraries. */
struct event_base	*sandbox_broker(void);
struct event_base	*sandbox_egress(const char *const *, size_t);

struct event_base *
sandbox_broker(void)
{
	return sandbox_event_base();
}

struct event_base *
sandbox_egress(const char *const *read_files, size_t n)
{
	return sandbox_event_base();
}

/*
 * Linked with --wrap=proc_child_check_fds: valgrind keeps descriptors of its
 * own open in the process, which the real check would take for leaks.  The
 * inherited slots are still checked.
 */
void	__wrap_proc_child_check_fds(int);

void
__wrap_proc_child_check_fds(int nfds)
{
	struct stat	 st;
	int		 fd;

	for (fd = 0; fd < FD_PARENT + nfds; fd++)
		if (fstat(fd, &st) == -1)
			fatal("%s: descriptor %d", __func__, fd);
		else if (fd >= FD_PARENT && !S_ISSOCK(st.st_mode))
			fatalx("%s: descriptor %d is not a socket", __func__,
			    fd);
}

static void __attribute__((noreturn))
broker(int argc, char *argv[])
{
	struct role_args	 ra;
	struct event_base	*base;

	role_args_parse(PROC_BROKER, argc, argv, &ra);
	__wrap_proc_child_check_fds(2);
	base = sandbox_broker();
	(void)broker_start(base, FD_EGRESS);
	event_base_dispatch(base);
	fatalx("event loop ended");
}

int
main(int argc, char *argv[])
{
	if (argc >= 2 && strcmp(argv[1], "broker") == 0)
		broker(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "egress") == 0)
		egress_main(argc - 1, argv + 1);
	fatalx("usage: cgrole broker|egress [-n name] [-p path]...");
}
