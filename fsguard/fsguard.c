/*
 * The file guard: the only process that opens paths beneath the state
 * directory.  It holds nothing else: no network, no Docker.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <event2/event.h>

#include "fsguard.h"
#include "limits.h"
#include "log.h"
#include "role.h"
#include "sandbox.h"

struct fsguard {
	const char	*fg_state_dir;	/* from argv: the Landlock rule */
	char		*fg_config_dir;	/* from the configuration frame */
	uid_t		 fg_uid;
	gid_t		 fg_gid;
};

static int
fsguard_dispatch_supervisor(struct role_parent *rp, struct msg *m, void *arg)
{
	struct fsguard	*fg = arg;
	const char	*dir;
	uint64_t	 uid, gid;

	switch (m->m_type) {
	case MSG_CONFIG_FSGUARD:
		if (role_parent_configured(rp) || fg->fg_config_dir != NULL)
			return -1;
		if (msg_get_str(m, "state_dir", PATH_BYTES_MAX, &dir) == -1 ||
		    msg_get_uint(m, "uid", 1, UINT32_MAX - 1, &uid) == -1 ||
		    msg_get_uint(m, "gid", 1, UINT32_MAX - 1, &gid) == -1 ||
		    msg_end(m) == -1)
			return -1;
		if (strcmp(dir, fg->fg_state_dir) != 0) {
			log_warnx("state_dir %s differs from the sandboxed %s",
			    dir, fg->fg_state_dir);
			return -1;
		}
		if ((fg->fg_config_dir = strdup(dir)) == NULL)
			fatal("%s", __func__);
		fg->fg_uid = uid;
		fg->fg_gid = gid;
		return 0;
	default:
		return -1;
	}
}

static int
fsguard_configured(struct role_parent *rp, void *arg)
{
	struct fsguard	*fg = arg;

	return fg->fg_config_dir == NULL ? -1 : 0;
}

void
fsguard_main(int argc, char *argv[])
{
	struct role_args	 ra;
	struct fsguard		 fg;
	struct event_base	*base;

	role_args_parse(PROC_FSGUARD, argc, argv, &ra);
	proc_child_check_fds(1);
	if (ra.ra_npaths != 1)
		fatalx("needs exactly one -p path: the state directory");
	memset(&fg, 0, sizeof(fg));
	fg.fg_state_dir = ra.ra_paths[0];

	base = sandbox_fsguard(fg.fg_state_dir);
	role_parent_open(base, PROC_FSGUARD, fsguard_dispatch_supervisor,
	    fsguard_configured, &fg);
	event_base_dispatch(base);
	fatalx("event loop ended");
}
