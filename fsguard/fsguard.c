/*
 * The file guard: the only process that opens paths beneath the state
 * directory.  It holds nothing else: no network, no Docker.  Every
 * operation on a channel re-checks the channel's key first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "fsguard.h"
#include "fsops.h"
#include "limits.h"
#include "log.h"
#include "role.h"
#include "sandbox.h"

struct fsguard {
	const char	*fg_state_dir;	/* from argv: the Landlock rule */
	char		*fg_config_dir;	/* from the configuration frame */
	uid_t		 fg_uid;
	int		 fg_state_fd;
};

/* The reason of a failed operation, with errno where it says more. */
static const char *
fsguard_why(enum fs_err e)
{
	static char	 buf[300];

	if (e == FS_IO) {
		snprintf(buf, sizeof(buf), "%s: %s", fs_err_to_string(e),
		    strerror(errno));
		return buf;
	}
	return fs_err_to_string(e);
}

static int
fsguard_open_channel(struct fsguard *fg, struct role_parent *rp,
    struct msg *m, struct fs_channel *ch, const char **key, int hold_run)
{
	enum fs_err	 e;

	if (msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, key) == -1)
		return -1;
	/* Only the broker's socket is made in run/: the rest check it. */
	if ((e = (hold_run ? fs_channel_open : fs_channel_check)(
	    fg->fg_state_fd, *key, strlen(*key), ch)) != FS_OK) {
		log_warnx("channel %s: %s", ch->segment[0] ? ch->segment : "?",
		    fsguard_why(e));
		role_error(rp, m->m_id, "%s", fsguard_why(e));
		return 1;
	}
	return 0;
}

static int
fsguard_prepare(struct fsguard *fg, struct role_parent *rp, struct msg *m)
{
	struct fs_channel	 ch;
	struct msgb		 mb;
	const char		*key;
	char			 run[PATH_BYTES_MAX], ws[PATH_BYTES_MAX];
	char			 sess[PATH_BYTES_MAX], att[PATH_BYTES_MAX];
	enum fs_err		 e;
	int			 rc;

	if ((rc = fsguard_open_channel(fg, rp, m, &ch, &key, 0)) != 0 ||
	    msg_end(m) == -1) {
		if (rc == 0)
			fs_channel_close(&ch);
		return rc == 1 ? 0 : -1;
	}
	if ((e = fs_own_workspace(&ch)) != FS_OK ||
	    (e = fs_channel_paths(fg->fg_state_dir, &ch, sess, sizeof(sess),
	    att, sizeof(att))) != FS_OK) {
		role_error(rp, m->m_id, "%s", fsguard_why(e));
		fs_channel_close(&ch);
		return 0;
	}
	snprintf(run, sizeof(run), "%s/%s/run", fg->fg_state_dir, ch.segment);
	snprintf(ws, sizeof(ws), "%s/%s/workspace", fg->fg_state_dir,
	    ch.segment);
	msgb_init(&mb, MSG_FSG_PREPARED, m->m_id);
	msg_add_str(&mb, "segment", ch.segment);
	msg_add_str(&mb, "run_dir", run);
	msg_add_str(&mb, "workspace_dir", ws);
	msg_add_str(&mb, "sessions", sess);
	msg_add_str(&mb, "attachments", att);
	role_send(rp, &mb);
	fs_channel_close(&ch);
	return 0;
}

static int
fsguard_bind(struct fsguard *fg, struct role_parent *rp, struct msg *m)
{
	struct fs_channel	 ch;
	struct msgb		 mb;
	const char		*key;
	enum fs_err		 e;
	int			 rc, fd;

	if ((rc = fsguard_open_channel(fg, rp, m, &ch, &key, 1)) != 0 ||
	    msg_end(m) == -1) {
		if (rc == 0)
			fs_channel_close(&ch);
		return rc == 1 ? 0 : -1;
	}
	if ((e = fs_bind_broker_socket(&ch, fg->fg_state_dir, &fd)) != FS_OK) {
		log_warnx("channel %s: broker socket: %s", ch.segment,
		    fsguard_why(e));
		role_error(rp, m->m_id, "%s", fsguard_why(e));
	} else {
		msgb_init(&mb, MSG_FSG_BOUND, m->m_id);
		msg_add_fd(&mb, fd);
		role_send(rp, &mb);
	}
	fs_channel_close(&ch);
	return 0;
}

/* A precheck run's directories and its broker's socket, or their
 * removal. */
static int
fsguard_precheck(struct fsguard *fg, struct role_parent *rp, struct msg *m)
{
	struct msgb	 mb;
	uint64_t	 run;
	enum fs_err	 e;
	int		 fd;

	if (msg_get_uint(m, "run", 1, PRECHECK_RUN_MAX, &run) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if (m->m_type == MSG_FSG_PRECHECK_CLEAN) {
		if ((e = fs_precheck_clean(fg->fg_state_fd, run)) != FS_OK) {
			log_warnx("precheck run %llu: %s",
			    (unsigned long long)run, fsguard_why(e));
			role_error(rp, m->m_id, "%s", fsguard_why(e));
			return 0;
		}
		msgb_init(&mb, MSG_FSG_PRECHECK_CLEANED, m->m_id);
		role_send(rp, &mb);
		return 0;
	}
	if ((e = fs_precheck_make(fg->fg_state_fd, fg->fg_state_dir, run,
	    &fd)) != FS_OK) {
		log_warnx("precheck run %llu: %s", (unsigned long long)run,
		    fsguard_why(e));
		role_error(rp, m->m_id, "%s", fsguard_why(e));
		return 0;
	}
	msgb_init(&mb, MSG_FSG_PRECHECK_MADE, m->m_id);
	msg_add_fd(&mb, fd);
	role_send(rp, &mb);
	return 0;
}

static int
fsguard_fresh(struct fsguard *fg, struct role_parent *rp, struct msg *m)
{
	struct fs_channel	 ch;
	struct timespec		 now;
	struct msgb		 mb;
	const char		*key;
	char			 folder[FS_ARCHIVE_FOLDER_MAX + 1];
	unsigned		 count = 0;
	enum fs_err		 e;
	int			 rc;

	if ((rc = fsguard_open_channel(fg, rp, m, &ch, &key, 0)) != 0 ||
	    msg_end(m) == -1) {
		if (rc == 0)
			fs_channel_close(&ch);
		return rc == 1 ? 0 : -1;
	}
	folder[0] = '\0';
	clock_gettime(CLOCK_REALTIME, &now);
	if ((e = fs_archive_sessions(&ch, &now, &count, folder,
	    sizeof(folder))) != FS_OK ||
	    (e = fs_own_dir(ch.ws_fd, "attachments", FS_DIR_WRITE, NULL)) !=
	    FS_OK) {
		log_warnx("channel %s: fresh: %s", ch.segment, fsguard_why(e));
		role_error(rp, m->m_id, "%s", fsguard_why(e));
	} else {
		log_info("channel %s: %u session file(s) archived in %s",
		    ch.segment, count, folder);
		msgb_init(&mb, MSG_FSG_FRESHENED, m->m_id);
		msg_add_uint(&mb, "archived", count);
		msg_add_str(&mb, "folder", folder);
		role_send(rp, &mb);
	}
	fs_channel_close(&ch);
	return 0;
}

static int
fsguard_attach(struct fsguard *fg, struct role_parent *rp, struct msg *m)
{
	struct fs_channel	 ch;
	struct msgb		 mb;
	const char		*key, *name;
	const uint8_t		*data;
	size_t			 len;
	enum fs_err		 e;
	int			 rc;

	if ((rc = fsguard_open_channel(fg, rp, m, &ch, &key, 0)) != 0)
		return rc == 1 ? 0 : -1;
	if (msg_get_str(m, "name", UTF8_BYTES_MAX(SAFE_NAME_MAX), &name) ==
	    -1 || msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1) {
		fs_channel_close(&ch);
		return -1;
	}
	if ((e = fs_write_attachment(&ch, name, data, len)) != FS_OK)
		role_error(rp, m->m_id, "%s", fsguard_why(e));
	else {
		msgb_init(&mb, MSG_FSG_ATTACHED, m->m_id);
		role_send(rp, &mb);
	}
	fs_channel_close(&ch);
	return 0;
}

static int
fsguard_dispatch_supervisor(struct role_parent *rp, struct msg *m, void *arg)
{
	struct fsguard	*fg = arg;
	const char	*dir;
	uint64_t	 uid, gid, bot_gid;
	int		 has_bot;

	if (m->m_type == MSG_CONFIG_FSGUARD) {
		if (role_parent_configured(rp) || fg->fg_config_dir != NULL)
			return -1;
		if (msg_get_str(m, "state_dir", PATH_BYTES_MAX, &dir) == -1 ||
		    msg_get_uint(m, "uid", 1, UINT32_MAX - 1, &uid) == -1 ||
		    msg_get_uint(m, "gid", 1, UINT32_MAX - 1, &gid) == -1 ||
		    msg_get_uint_opt(m, "bot_gid", 1, UINT32_MAX - 1, &bot_gid,
		    &has_bot) == -1 || msg_end(m) == -1)
			return -1;
		if ((fg->fg_config_dir = strdup(dir)) == NULL)
			fatal("%s", __func__);
		fg->fg_uid = uid;
		/* before the state directory is opened: its rule depends */
		fs_set_group(has_bot, has_bot ? (gid_t)bot_gid : 0);
		return 0;
	}
	if (!role_parent_configured(rp))
		return -1;
	switch (m->m_type) {
	case MSG_FSG_PREPARE:
		return fsguard_prepare(fg, rp, m);
	case MSG_FSG_BIND:
		return fsguard_bind(fg, rp, m);
	case MSG_FSG_FRESH:
		return fsguard_fresh(fg, rp, m);
	case MSG_FSG_ATTACH:
		return fsguard_attach(fg, rp, m);
	case MSG_FSG_PRECHECK_MAKE:
	case MSG_FSG_PRECHECK_CLEAN:
		return fsguard_precheck(fg, rp, m);
	default:
		return -1;
	}
}

static const char *
fsguard_configured(struct role_parent *rp, void *arg)
{
	static char	 why[600];
	struct fsguard	*fg = arg;
	enum fs_err	 e;

	if (fg->fg_config_dir == NULL)
		return "no configuration";
	if (strcmp(fg->fg_config_dir, fg->fg_state_dir) != 0)
		return "state_dir differs from the sandboxed directory";
	if ((e = fs_open_state_dir(fg->fg_state_dir, fg->fg_uid,
	    &fg->fg_state_fd)) != FS_OK) {
		snprintf(why, sizeof(why), "state_dir %s: %s",
		    fg->fg_state_dir, fsguard_why(e));
		return why;
	}
	log_debug("state directory %s open", fg->fg_state_dir);
	/* No precheck run outlives the daemon that started it. */
	fs_precheck_clean_all(fg->fg_state_fd);
	return NULL;
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
	fg.fg_state_fd = -1;

	base = sandbox_fsguard(fg.fg_state_dir);
	role_parent_open(base, PROC_FSGUARD, fsguard_dispatch_supervisor,
	    fsguard_configured, &fg);
	event_base_dispatch(base);
	fatalx("event loop ended");
}
