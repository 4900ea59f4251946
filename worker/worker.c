/*
 * rtsandbox-worker: the reference worker that runs inside a channel's
 * container.  This first version only stays up until it is told to stop,
 * which is what the container lifecycle needs; the turn loop of PROTOCOL.md
 * section 2 builds on it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile sig_atomic_t	 stop;

static void
on_signal(int sig)
{
	stop = sig;
}

int
main(void)
{
	struct sigaction	 sa;

	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;
	/* As PID 1 in the container, only handled signals reach us. */
	if (sigaction(SIGTERM, &sa, NULL) == -1 ||
	    sigaction(SIGINT, &sa, NULL) == -1) {
		perror("sigaction");
		return 1;
	}
	while (!stop)
		pause();
	return 0;
}
