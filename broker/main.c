/*
 * rtsandbox-broker: the order of DESIGN.md 4, the sandbox before the first
 * frame is read.
 */
#include <event2/event.h>

#include "broker.h"
#include "log.h"
#include "proc.h"
#include "role.h"
#include "sandbox.h"

int
main(int argc, char *argv[])
{
	struct role_args	 ra;
	struct event_base	*base;

	role_args_parse(PROC_BROKER, argc, argv, &ra);
	proc_child_check_fds(2);
	if (ra.ra_npaths != 0)
		fatalx("takes no -p path");
	base = sandbox_broker();
	(void)broker_start(base, FD_EGRESS);
	event_base_dispatch(base);
	fatalx("event loop ended");
}
