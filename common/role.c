#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "limits.h"
#include "log.h"
#include "role.h"
#include "sandbox.h"

/*
 * The spawner reads each child's proportional set size for daemon.stats
 * from /proc/<pid>/smaps_rollup, which the kernel opens only for a process
 * that may trace the child, and no process may once the child is not
 * dumpable.  A file opened before that goes on reading, so the child opens
 * its own first thing, before it has read a byte from anyone, and hands it
 * over.  Nothing is fatal here: without it daemon.stats has no PSS.
 */
static void
role_memory_handoff(int sock)
{
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct msghdr	 mh;
	struct iovec	 iov;
	struct cmsghdr	*c;
	char		 one = 'm';
	int		 fd;

	if ((fd = open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC)) ==
	    -1)
		log_debug("%s: smaps_rollup: %s", __func__, strerror(errno));
	else {
		memset(&mh, 0, sizeof(mh));
		memset(&cm, 0, sizeof(cm));
		iov.iov_base = &one;
		iov.iov_len = 1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
		if (sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) == -1)
			log_debug("%s: sendmsg: %s", __func__,
			    strerror(errno));
		close(fd);
	}
	close(sock);
}

/* A descriptor number of the -m option: a socket past the pipes. */
static int
role_memory_fd(enum proc_role role, const char *arg)
{
	struct stat	 st;
	char		*end;
	long		 fd;

	errno = 0;
	fd = strtol(arg, &end, 10);
	if (errno != 0 || end == arg || *end != '\0' || fd <= FD_PARENT ||
	    fd > ROLE_MEMORY_FD_MAX)
		fatalx("%s: -m %s: not a descriptor past the pipes",
		    proc_role_name(role), arg);
	if (fstat((int)fd, &st) == -1 || !S_ISSOCK(st.st_mode))
		fatalx("%s: -m %s: not a socket", proc_role_name(role), arg);
	return (int)fd;
}

void
role_args_parse(enum proc_role role, int argc, char *argv[],
    struct role_args *ra)
{
	char		 name[160];
	const char	*root = NULL;
	int		 ch, mfd = -1;

	memset(ra, 0, sizeof(*ra));
	optind = 1;
	while ((ch = getopt(argc, argv, "de:jlm:n:p:")) != -1) {
		switch (ch) {
		case 'd':
			ra->ra_debug = 1;
			break;
		case 'e':
			root = optarg;
			break;
		case 'j':
			ra->ra_journal = 1;
			break;
		case 'l':
			ra->ra_log_journal = 1;
			break;
		case 'm':
			if (mfd != -1)
				fatalx("%s: -m twice", proc_role_name(role));
			mfd = role_memory_fd(role, optarg);
			break;
		case 'n':
			ra->ra_name = optarg;
			break;
		case 'p':
			if (ra->ra_npaths == ROLE_MAXPATHS)
				fatalx("%s: too many -p paths",
				    proc_role_name(role));
			ra->ra_paths[ra->ra_npaths++] = optarg;
			break;
		default:
			fatalx("%s: usage: %s [-djl] [-e required|optional] "
			    "[-m fd] [-n name] [-p path]...",
			    proc_role_name(role), proc_role_binary(role));
		}
	}
	if (optind != argc)
		fatalx("%s: unexpected argument %s", proc_role_name(role),
		    argv[optind]);
	if (ra->ra_name != NULL)
		snprintf(name, sizeof(name), "%s[%s]", proc_role_name(role),
		    ra->ra_name);
	else
		snprintf(name, sizeof(name), "%s", proc_role_name(role));
	log_init(name, ra->ra_debug);
	if (ra->ra_log_journal)
		log_setjournal(1);
	/* Only the roles that enter an empty root have a say in it. */
	if (root != NULL) {
		if (role != PROC_BROKER && role != PROC_RESEARCH)
			fatalx("%s: -e: no empty root here",
			    proc_role_name(role));
		if (strcmp(root, "optional") == 0)
			ra->ra_root_optional = 1;
		else if (strcmp(root, "required") != 0)
			fatalx("%s: -e %s: neither required nor optional",
			    proc_role_name(role), root);
	}
	sandbox_empty_root_optional(ra->ra_root_optional);
	if (mfd != -1)
		role_memory_handoff(mfd);
}

/*
 * Configuration and control messages are small; raw data rides only where a
 * body does.  Each edge carries no more than its largest message, so a
 * peer's frame is refused by its header before anything is allocated for it
 * (DESIGN.md 1, invariant 7).
 */
#define EDGE_JSON_SMALL		(256u * 1024)
#define EDGE_DATA_NONE		0u
/* Request and response bodies: a model or tool body of 96 MiB as the
 * rebuild prints it (numbers may come out longer), turn requests with
 * 64 MiB of images in base64, results of 72 MiB, attachments. */
#define EDGE_DATA_BODY		(100u * 1024 * 1024)
/* A research report, and the search results a job is handed. */
#define EDGE_DATA_RESEARCH	(UTF8_BYTES_MAX(RESEARCH_SEARCH_TEXT_MAX) + \
				 64u * 1024)

static const struct frame_limits edge_small = {
	EDGE_JSON_SMALL, EDGE_DATA_NONE
};
static const struct frame_limits edge_body = {
	EDGE_JSON_SMALL, EDGE_DATA_BODY
};
/* A precheck run's stdout. */
static const struct frame_limits edge_docker = {
	EDGE_JSON_SMALL, PRECHECK_STDOUT_MAX
};
static const struct frame_limits edge_research = {
	EDGE_JSON_SMALL, EDGE_DATA_RESEARCH
};

const struct frame_limits *
edge_limits(enum proc_role from, enum proc_role to)
{
	if (from == PROC_SUPERVISOR) {
		switch (to) {
		case PROC_RESEARCH:
			return &edge_research;	/* search results */
		default:
			return &edge_body;	/* turns, attachments */
		}
	}
	if (to == PROC_SUPERVISOR) {
		switch (from) {
		case PROC_FSGUARD:
			return &edge_small;
		case PROC_DOCKER:
			return &edge_docker;	/* a precheck's stdout */
		case PROC_RESEARCH:
			return &edge_research;	/* the report */
		default:
			return &edge_body;	/* results, tool calls, fetches */
		}
	}
	/* broker <-> egress, research <-> egress: request/response bodies */
	return &edge_body;
}

struct role_parent {
	struct event_base	*rp_base;
	struct frame_conn	*rp_conn;
	enum proc_role		 rp_role;
	role_dispatch_fn	 rp_dispatch;
	role_configured_fn	 rp_configured_cb;
	void			*rp_arg;
	int			 rp_configured;
	void			(*rp_drain)(void *);
	void			*rp_drain_arg;
};

static void
role_parent_err(struct frame_conn *fc, enum frame_err err, void *arg)
{
	/* The supervisor is gone or broken: a child never outlives it. */
	if (err == FRAME_EOF) {
		log_debug("supervisor closed the pipe, exiting");
		exit(0);
	}
	fatalx("pipe to supervisor: %s", frame_err_to_string(err));
}

void
role_send(struct role_parent *rp, struct msgb *mb)
{
	enum msg_type	 t = mb->mb_type;

	if (msg_send(rp->rp_conn, mb) == -1)
		fatalx("cannot queue %s", msg_type_name(t));
}

void
role_error(struct role_parent *rp, uint64_t id, const char *fmt, ...)
{
	struct msgb	 mb;
	char		 err[512];
	va_list		 ap;

	va_start(ap, fmt);
	vsnprintf(err, sizeof(err), fmt, ap);
	va_end(ap);
	msgb_init(&mb, MSG_ERROR, id);
	msg_add_str(&mb, "error", err);
	role_send(rp, &mb);
}

static void
role_reply(struct role_parent *rp, enum msg_type t, uint64_t id)
{
	struct msgb	 mb;

	msgb_init(&mb, t, id);
	role_send(rp, &mb);
}

static void
role_parent_frame(struct frame_conn *fc, struct frame *f, void *arg)
{
	struct role_parent	*rp = arg;
	struct msg		 m;
	const char		*why;

	if (msg_parse(&m, PROC_SUPERVISOR, rp->rp_role, f) == -1)
		fatalx("protocol violation from supervisor: %s", m.m_err);

	switch (m.m_type) {
	case MSG_PING:
		if (msg_end(&m) == -1)
			fatalx("ping: %s", m.m_err);
		role_reply(rp, MSG_PONG, m.m_id);
		break;
	case MSG_CONFIG_DONE:
		if (msg_end(&m) == -1)
			fatalx("config_done: %s", m.m_err);
		if (rp->rp_configured)
			fatalx("config_done received twice");
		if (rp->rp_configured_cb != NULL &&
		    (why = rp->rp_configured_cb(rp, rp->rp_arg)) != NULL) {
			struct msgb	 mb;

			log_warnx("refusing to work: %s", why);
			msgb_init(&mb, MSG_REFUSED, 0);
			msg_add_str(&mb, "error", why);
			role_send(rp, &mb);
			/* frame_conn_send() writes an empty queue at once, so
			 * the refusal is in the pipe before it closes. */
			exit(1);
		}
		rp->rp_configured = 1;
		role_reply(rp, MSG_READY, 0);
		log_debug("configured, ready");
		break;
	default:
		if (rp->rp_dispatch(rp, &m, rp->rp_arg) == -1)
			fatalx("protocol violation from supervisor: %s",
			    m.m_err[0] ? m.m_err : msg_type_name(m.m_type));
		break;
	}
	msg_free(&m);
}

struct role_parent *
role_parent_open(struct event_base *base, enum proc_role role,
    role_dispatch_fn dispatch, role_configured_fn configured, void *arg)
{
	struct role_parent	*rp;

	if ((rp = calloc(1, sizeof(*rp))) == NULL)
		fatal("%s", __func__);
	rp->rp_base = base;
	rp->rp_role = role;
	rp->rp_dispatch = dispatch;
	rp->rp_configured_cb = configured;
	rp->rp_arg = arg;
	rp->rp_conn = frame_conn_new(base, FD_PARENT,
	    edge_limits(PROC_SUPERVISOR, role), edge_limits(role,
	    PROC_SUPERVISOR), role_parent_frame, role_parent_err, rp);
	if (rp->rp_conn == NULL)
		fatalx("%s: cannot watch the supervisor pipe", __func__);
	return rp;
}

static void
role_parent_drained(struct frame_conn *fc, void *arg)
{
	struct role_parent	*rp = arg;

	if (rp->rp_drain != NULL)
		rp->rp_drain(rp->rp_drain_arg);
}

void
role_parent_set_drain(struct role_parent *rp, void (*cb)(void *), void *arg)
{
	rp->rp_drain = cb;
	rp->rp_drain_arg = arg;
	frame_conn_set_drain_cb(rp->rp_conn, cb != NULL ?
	    role_parent_drained : NULL, 1);
}

struct frame_conn *
role_parent_conn(struct role_parent *rp)
{
	return rp->rp_conn;
}

int
role_parent_configured(const struct role_parent *rp)
{
	return rp->rp_configured;
}
