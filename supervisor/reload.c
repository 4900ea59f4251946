/*
 * SIGHUP: the configuration file read again, through the spawner (the
 * supervisor's Landlock domain holds no file of the host's), and applied
 * when only what may change while the daemon runs changed
 * (config_reload_check()).  Otherwise, or when it does not parse, it is
 * refused with a logged reason and nothing changes.
 *
 * What changed reaches each process when it next needs it: turns and
 * starts read the timeouts and budgets when they begin, egress gets the
 * new profiles and MCP servers for the peers attached from then on (those
 * attached before keep theirs), and a broker configured from the old
 * configuration is replaced at its channel's next start.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "spawner.h"
#include "supervisor.h"

static void
reload_refused(void)
{
	sv->sv_count.sc_reloads_refused++;
}

void
supervisor_reload(void)
{
	struct config_errors	 errs;
	struct config		*old = sv->sv_conf, *new;
	char			 why[600];
	size_t			 i;
	int			 fd, same;

	log_info("SIGHUP: reading %s again", sv->sv_conf_path);
	if ((fd = spawner_open_config()) == -1) {
		log_warn("reload refused: %s", sv->sv_conf_path);
		reload_refused();
		return;
	}
	memset(&errs, 0, sizeof(errs));
	new = config_load_fd(fd, sv->sv_conf_path, &errs);
	for (i = 0; i < errs.nwarn; i++)
		log_warnx("reload: %s: warning: %s", sv->sv_conf_path,
		    errs.warnings[i]);
	for (i = 0; i < errs.n; i++)
		log_warnx("reload refused: %s: %s", sv->sv_conf_path,
		    errs.lines[i]);
	config_errors_free(&errs);
	if (new == NULL) {
		reload_refused();
		return;
	}
	if (config_reload_check(old, new, why, sizeof(why)) == -1) {
		log_warnx("reload refused: %s changed, which takes a restart "
		    "of rtsandboxd; nothing was changed", why);
		config_free(new);
		reload_refused();
		return;
	}
	config_keep_gids(new, old);
	same = config_brokers_same(old, new);
	sv->sv_conf = new;
	if (!same)
		sv->sv_broker_gen++;
	child_egress_reload();
	config_free(old);
	sv->sv_count.sc_reloads++;
	log_info("configuration reloaded%s", same ? "" : "; each broker is "
	    "replaced at its channel's next start");
}
