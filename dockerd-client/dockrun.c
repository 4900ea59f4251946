/*
 * Precheck runs (dockrun.h): create, attach, start, feed stdin, read the
 * multiplexed stream to its end, wait, remove, tell.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "dockmux.h"
#include "dockrun.h"
#include "limits.h"
#include "log.h"

struct dock_run {
	struct dock_runs	*r_runs;
	uint64_t		 r_msgid;
	uint64_t		 r_run;
	char			 r_id[80];	/* the container's */
	int			 r_fd;		/* the attach stream */
	struct event		*r_read;
	struct event		*r_write;
	struct event		*r_timer;
	uint8_t			*r_input;
	size_t			 r_input_len;
	size_t			 r_input_off;
	struct dock_mux		 r_mux;
};

struct dock_runs {
	struct event_base	*rs_base;
	struct sockaddr_un	 rs_sun;
	struct dock_api		*rs_api;
	const struct dock_config *rs_conf;
	dock_run_done_cb	 rs_cb;
	void			*rs_arg;
	struct dock_run		*rs_run[DOCKER_PRECHECK_RUNS_MAX];
};

struct dock_runs *
dock_runs_new(struct event_base *base, const char *socket,
    struct dock_api *da, const struct dock_config *dc, dock_run_done_cb cb,
    void *arg)
{
	struct dock_runs	*rs;

	if (strlen(socket) >= sizeof(rs->rs_sun.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if ((rs = calloc(1, sizeof(*rs))) == NULL)
		fatal("%s", __func__);
	rs->rs_base = base;
	rs->rs_sun.sun_family = AF_UNIX;
	memcpy(rs->rs_sun.sun_path, socket, strlen(socket) + 1);
	rs->rs_api = da;
	rs->rs_conf = dc;
	rs->rs_cb = cb;
	rs->rs_arg = arg;
	return rs;
}

size_t
dock_runs_count(const struct dock_runs *rs)
{
	size_t	 i, n = 0;

	for (i = 0; i < DOCKER_PRECHECK_RUNS_MAX; i++)
		if (rs->rs_run[i] != NULL)
			n++;
	return n;
}

static void
run_free(struct dock_run *r)
{
	struct dock_runs	*rs = r->r_runs;
	size_t			 i;

	for (i = 0; i < DOCKER_PRECHECK_RUNS_MAX; i++)
		if (rs->rs_run[i] == r)
			rs->rs_run[i] = NULL;
	if (r->r_read != NULL)
		event_free(r->r_read);
	if (r->r_write != NULL)
		event_free(r->r_write);
	if (r->r_timer != NULL)
		event_free(r->r_timer);
	if (r->r_fd != -1)
		close(r->r_fd);
	free(r->r_input);
	free(r);
}

/*
 * The container goes first, whatever happened; a removal that fails is
 * the answer then, for a run must not be told over while it may go on.
 */
static void
run_end(struct dock_run *r, const struct dock_run_result *res,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
run_end(struct dock_run *r, const struct dock_run_result *res,
    const char *fmt, ...)
{
	struct dock_runs	*rs = r->r_runs;
	char			 err[512];
	va_list			 ap;
	enum dock_err		 e;
	uint64_t		 msgid = r->r_msgid, run = r->r_run;

	err[0] = '\0';
	if (fmt != NULL) {
		va_start(ap, fmt);
		(void)vsnprintf(err, sizeof(err), fmt, ap);
		va_end(ap);
	}
	/* The stream closes before the removal kills what is left. */
	if (r->r_fd != -1) {
		if (r->r_read != NULL)
			event_del(r->r_read);
		if (r->r_write != NULL)
			event_del(r->r_write);
		close(r->r_fd);
		r->r_fd = -1;
	}
	/* Without an id, a create that failed may yet have made it. */
	e = r->r_id[0] != '\0' ? dock_remove_id(rs->rs_api, r->r_id) :
	    dock_precheck_remove(rs->rs_api, rs->rs_conf, run);
	if (e != DOCK_OK) {
		log_warnx("precheck %" PRIu64 ": removing %.12s: %s: %s", run,
		    r->r_id, dock_err_to_string(e),
		    dock_api_last_error(rs->rs_api));
		(void)snprintf(err, sizeof(err), "remove: %s: %s",
		    dock_err_to_string(e), dock_api_last_error(rs->rs_api));
		res = NULL;
	}
	/* res may point into the run: it is told before it is freed. */
	rs->rs_cb(msgid, run, err[0] == '\0' ? res : NULL,
	    err[0] != '\0' ? err : NULL, rs->rs_arg);
	run_free(r);
}

/* A Docker call's failure, worded as the other requests' are. */
static void
run_fail(struct dock_run *r, const char *what, enum dock_err e)
{
	const char	*detail = dock_api_last_error(r->r_runs->rs_api);

	if (detail != NULL && *detail != '\0')
		run_end(r, NULL, "%s: %s: %s", what, dock_err_to_string(e),
		    detail);
	else
		run_end(r, NULL, "%s: %s", what, dock_err_to_string(e));
}

/* Ended by the client: killed with what came so far. */
static void
run_killed(struct dock_run *r, int timed_out)
{
	struct dock_run_result	 res;

	memset(&res, 0, sizeof(res));
	res.exit_code = DOCK_RUN_KILLED_CODE;
	res.timed_out = timed_out;
	res.stdout_over = r->r_mux.dm_out_over;
	res.stderr_bytes = r->r_mux.dm_err_bytes;
	res.out = r->r_mux.dm_out;
	res.out_len = r->r_mux.dm_out_len;
	run_end(r, &res, NULL);
}

/* The stream ended: the container's process did. */
static void
run_eof(struct dock_run *r)
{
	struct dock_run_result	 res;
	enum dock_err		 e;

	memset(&res, 0, sizeof(res));
	if ((e = dock_wait_id(r->r_runs->rs_api, r->r_id, &res.exit_code)) !=
	    DOCK_OK) {
		run_fail(r, "wait", e);
		return;
	}
	res.stderr_bytes = r->r_mux.dm_err_bytes;
	res.out = r->r_mux.dm_out;
	res.out_len = r->r_mux.dm_out_len;
	run_end(r, &res, NULL);
}

/* Bytes of the stream; 1 when the run ended on them. */
static int
run_take(struct dock_run *r, const uint8_t *p, size_t n)
{
	enum dock_mux_rc	 rc;

	switch ((rc = dock_mux_feed(&r->r_mux, p, n))) {
	case DOCK_MUX_MORE:
		return 0;
	case DOCK_MUX_STDOUT_OVER:
		log_info("precheck %" PRIu64 ": stdout over %u bytes, stopped",
		    r->r_run, PRECHECK_STDOUT_MAX);
		run_killed(r, 0);
		return 1;
	case DOCK_MUX_STDERR_OVER:
		log_info("precheck %" PRIu64 ": stderr over %u bytes, stopped",
		    r->r_run, PRECHECK_STDERR_MAX);
		run_killed(r, 0);
		return 1;
	case DOCK_MUX_BROKEN:
		break;
	}
	run_end(r, NULL, "attach: %s", dock_mux_rc_to_string(rc));
	return 1;
}

static void
run_read(evutil_socket_t fd, short what, void *arg)
{
	struct dock_run	*r = arg;
	uint8_t		 buf[16384];
	ssize_t		 n;

	if ((n = read(fd, buf, sizeof(buf))) == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		run_end(r, NULL, "attach: read: %s", strerror(errno));
		return;
	}
	if (n == 0) {
		run_eof(r);
		return;
	}
	(void)run_take(r, buf, (size_t)n);
}

static void
run_write(evutil_socket_t fd, short what, void *arg)
{
	struct dock_run	*r = arg;
	ssize_t		 n;

	n = send(fd, r->r_input + r->r_input_off,
	    r->r_input_len - r->r_input_off, MSG_NOSIGNAL);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		/* A script that reads no stdin may end before it is fed:
		 * what it wrote is still read. */
		log_debug("precheck %" PRIu64 ": stdin: %s", r->r_run,
		    strerror(errno));
		event_del(r->r_write);
		return;
	}
	if ((r->r_input_off += (size_t)n) < r->r_input_len)
		return;
	event_del(r->r_write);
	/* EOF on the container's stdin; its output still comes. */
	if (shutdown(fd, SHUT_WR) == -1)
		log_debug("precheck %" PRIu64 ": shutdown: %s", r->r_run,
		    strerror(errno));
}

static void
run_timeout(evutil_socket_t unused, short what, void *arg)
{
	struct dock_run	*r = arg;

	log_info("precheck %" PRIu64 ": over its time, stopped", r->r_run);
	run_killed(r, 1);
}

static double
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * The attach request, and its answer's head read within the time of a
 * Docker call: the engine answers it at once.  Stream bytes that came with
 * the head are fed on.  NULL on success, else what failed.
 */
static const char *
run_attach(struct dock_run *r, char *why, size_t whylen)
{
	struct dock_runs	*rs = r->r_runs;
	struct pollfd		 pfd;
	char			 req[256], head[DOCK_ATTACH_HEAD_MAX];
	const char		*bad;
	size_t			 hl = 0, used;
	ssize_t			 n;
	double			 end;
	int			 len, rc;

	if ((r->r_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1 ||
	    connect(r->r_fd, (struct sockaddr *)&rs->rs_sun,
	    sizeof(rs->rs_sun)) == -1) {
		(void)snprintf(why, whylen, "attach: Docker daemon unreachable "
		    "at %s: %s", rs->rs_sun.sun_path, strerror(errno));
		return why;
	}
	len = snprintf(req, sizeof(req), "POST /v1.41/containers/%s/attach?"
	    "stream=1&stdin=1&stdout=1&stderr=1 HTTP/1.1\r\nHost: docker\r\n"
	    "User-Agent: rtsandbox\r\nContent-Length: 0\r\n"
	    "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n", r->r_id);
	/* Far below a fresh socket's buffer: all of it or nothing. */
	if (len < 0 || (size_t)len >= sizeof(req) ||
	    (n = send(r->r_fd, req, (size_t)len, MSG_NOSIGNAL)) != len) {
		(void)snprintf(why, whylen, "attach: cannot send the request");
		return why;
	}
	end = now_ms() + DOCKER_CALL_TIMEOUT_MS;
	for (;;) {
		pfd.fd = r->r_fd;
		pfd.events = POLLIN;
		if ((rc = poll(&pfd, 1, (int)(end - now_ms()) > 0 ?
		    (int)(end - now_ms()) : 0)) == -1) {
			if (errno == EINTR)
				continue;
			(void)snprintf(why, whylen, "attach: poll: %s",
			    strerror(errno));
			return why;
		}
		if (rc == 0) {
			(void)snprintf(why, whylen, "attach: Docker call timed "
			    "out after %d ms", DOCKER_CALL_TIMEOUT_MS);
			return why;
		}
		/* Past the head, bytes stay in the socket for the loop. */
		if ((n = recv(r->r_fd, head + hl, sizeof(head) - hl,
		    MSG_PEEK)) == -1) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			(void)snprintf(why, whylen, "attach: read: %s",
			    strerror(errno));
			return why;
		}
		if (n == 0) {
			(void)snprintf(why, whylen, "attach: Docker closed the "
			    "connection");
			return why;
		}
		switch (dock_attach_head(head, hl + (size_t)n, &used, &bad)) {
		case -1:
			(void)snprintf(why, whylen, "attach: %s", bad);
			return why;
		case 0:
			/* Consume what was peeked: all of it is head. */
			if (recv(r->r_fd, head + hl, (size_t)n, 0) != n) {
				(void)snprintf(why, whylen, "attach: read: %s",
				    strerror(errno));
				return why;
			}
			hl += (size_t)n;
			continue;
		default:
			if (recv(r->r_fd, head + hl, used - hl, 0) !=
			    (ssize_t)(used - hl)) {
				(void)snprintf(why, whylen, "attach: read: %s",
				    strerror(errno));
				return why;
			}
			return NULL;
		}
	}
}

void
dock_runs_start(struct dock_runs *rs, uint64_t msgid,
    const struct dock_precheck *pc, const uint8_t *input)
{
	struct dock_run	*r;
	struct timeval	 tv;
	char		 why[512];
	const char	*failed;
	size_t		 i, slot = DOCKER_PRECHECK_RUNS_MAX;
	enum dock_err	 e;

	for (i = 0; i < DOCKER_PRECHECK_RUNS_MAX; i++) {
		if (rs->rs_run[i] == NULL) {
			if (slot == DOCKER_PRECHECK_RUNS_MAX)
				slot = i;
		} else if (rs->rs_run[i]->r_run == pc->run) {
			rs->rs_cb(msgid, pc->run, NULL, "run already in flight",
			    rs->rs_arg);
			return;
		}
	}
	if (slot == DOCKER_PRECHECK_RUNS_MAX) {
		(void)snprintf(why, sizeof(why), "more than %u runs in flight",
		    DOCKER_PRECHECK_RUNS_MAX);
		rs->rs_cb(msgid, pc->run, NULL, why, rs->rs_arg);
		return;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->r_input = malloc(pc->input_len)) == NULL)
		fatal("%s", __func__);
	memcpy(r->r_input, input, pc->input_len);
	r->r_input_len = pc->input_len;
	r->r_runs = rs;
	r->r_msgid = msgid;
	r->r_run = pc->run;
	r->r_fd = -1;
	dock_mux_init(&r->r_mux);
	rs->rs_run[slot] = r;

	if ((e = dock_precheck_create(rs->rs_api, rs->rs_conf, pc, r->r_id,
	    sizeof(r->r_id))) != DOCK_OK) {
		run_fail(r, "create", e);
		return;
	}
	if ((failed = run_attach(r, why, sizeof(why))) != NULL) {
		run_end(r, NULL, "%s", failed);
		return;
	}
	if ((e = dock_start_id(rs->rs_api, r->r_id)) != DOCK_OK) {
		run_fail(r, "start", e);
		return;
	}
	if ((r->r_read = event_new(rs->rs_base, r->r_fd, EV_READ | EV_PERSIST,
	    run_read, r)) == NULL ||
	    (r->r_write = event_new(rs->rs_base, r->r_fd,
	    EV_WRITE | EV_PERSIST, run_write, r)) == NULL ||
	    (r->r_timer = evtimer_new(rs->rs_base, run_timeout, r)) == NULL)
		fatal("%s", __func__);
	tv.tv_sec = (time_t)(pc->timeout_ms / 1000);
	tv.tv_usec = (suseconds_t)(pc->timeout_ms % 1000) * 1000;
	if (event_add(r->r_read, NULL) == -1 ||
	    event_add(r->r_write, NULL) == -1 ||
	    evtimer_add(r->r_timer, &tv) == -1) {
		run_end(r, NULL, "cannot follow the run");
		return;
	}
	log_debug("precheck %" PRIu64 ": started %.12s", r->r_run, r->r_id);
}

int
dock_runs_stop(struct dock_runs *rs, uint64_t run)
{
	size_t	 i;

	for (i = 0; i < DOCKER_PRECHECK_RUNS_MAX; i++)
		if (rs->rs_run[i] != NULL && rs->rs_run[i]->r_run == run) {
			log_info("precheck %" PRIu64 ": stopped", run);
			run_end(rs->rs_run[i], NULL, "stopped");
			return 1;
		}
	return 0;
}
