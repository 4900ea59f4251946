/*
 * Docker's event stream: the parsers, then the connection that feeds them.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "dockapi.h"
#include "dockevents.h"
#include "log.h"

static const char *const action_names[] = {
	[DOCK_EV_DIE] = "die",
	[DOCK_EV_DESTROY] = "destroy",
	[DOCK_EV_OOM] = "oom",
	[DOCK_EV_PAUSE] = "pause",
};

#define NACTIONS	(sizeof(action_names) / sizeof(action_names[0]))

const char *
dock_event_action_name(enum dock_event_action a)
{
	return (size_t)a < NACTIONS ? action_names[a] : "unknown";
}

static const char *
member_str(const cJSON *o, const char *k)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* "-1", "0" ... "255" and the like: a decimal that fits, or -1. */
static int64_t
exit_code(const char *s)
{
	int64_t	 v = 0;
	size_t	 i;

	if (s == NULL || s[0] == '\0')
		return -1;
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 9)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

int
dock_event_parse(const char *line, size_t len, const char *prefix,
    struct dock_event *ev)
{
	const cJSON	*actor, *attrs, *t;
	const char	*type, *action, *id, *name;
	size_t		 pl = strlen(prefix), a;
	cJSON		*root;
	int		 rc = 0;

	memset(ev, 0, sizeof(*ev));
	ev->exit_code = -1;
	if (len > DOCK_EVENT_LINE_MAX ||
	    (root = cJSON_ParseWithLength(line, len)) == NULL)
		return -1;
	if (!cJSON_IsObject(root)) {
		rc = -1;
		goto done;
	}
	type = member_str(root, "Type");
	action = member_str(root, "Action");
	actor = cJSON_GetObjectItemCaseSensitive(root, "Actor");
	attrs = cJSON_GetObjectItemCaseSensitive(actor, "Attributes");
	id = member_str(actor, "ID");
	name = member_str(attrs, "name");
	if (type == NULL || action == NULL || strcmp(type, "container") != 0)
		goto done;
	for (a = 0; a < NACTIONS; a++)
		if (strcmp(action, action_names[a]) == 0)
			break;
	/* Podman's own words, where its compatible API lets them through */
	if (a == NACTIONS && strcmp(action, "died") == 0)
		a = DOCK_EV_DIE;
	if (a == NACTIONS && strcmp(action, "remove") == 0)
		a = DOCK_EV_DESTROY;
	if (a == NACTIONS || id == NULL || name == NULL)
		goto done;
	if (!dock_valid_id(id, sizeof(ev->id) - 1) ||
	    strlen(name) >= sizeof(ev->name) ||
	    strncmp(name, prefix, pl) != 0 || name[pl] != '-')
		goto done;
	ev->action = (enum dock_event_action)a;
	memcpy(ev->id, id, strlen(id) + 1);
	memcpy(ev->name, name, strlen(name) + 1);
	if (ev->action == DOCK_EV_DIE)
		ev->exit_code = exit_code(member_str(attrs, "exitCode"));
	t = cJSON_GetObjectItemCaseSensitive(root, "time");
	if (cJSON_IsNumber(t) && t->valuedouble > 0 &&
	    t->valuedouble < 1e12)
		ev->time = (int64_t)t->valuedouble;
	rc = 1;
 done:
	cJSON_Delete(root);
	return rc;
}

int
dock_stream_init(struct dock_stream *ds)
{
	memset(ds, 0, sizeof(*ds));
	if ((ds->ds_line = malloc(DOCK_EVENT_LINE_MAX)) == NULL)
		return -1;
	ds->ds_state = DOCK_STREAM_HEAD;
	return 0;
}

void
dock_stream_free(struct dock_stream *ds)
{
	free(ds->ds_line);
	ds->ds_line = NULL;
}

static int
broken(struct dock_stream *ds, const char **why, const char *what)
{
	ds->ds_state = DOCK_STREAM_BROKEN;
	*why = what;
	return -1;
}

static int
header_is(const char *h, size_t hl, const char *name)
{
	size_t	 nl = strlen(name);

	return hl > nl && h[nl] == ':' && strncasecmp(h, name, nl) == 0;
}

/* The head is complete in ds_head: 200, and chunked or not. */
static int
head_done(struct dock_stream *ds, const char **why)
{
	const char	*p = ds->ds_head, *end = ds->ds_head + ds->ds_head_len;
	const char	*eol, *v;
	int		 chunked = 0;

	if (ds->ds_head_len < 12 || (strncmp(p, "HTTP/1.1 ", 9) != 0 &&
	    strncmp(p, "HTTP/1.0 ", 9) != 0))
		return broken(ds, why, "not an HTTP answer");
	if (strncmp(p + 9, "200", 3) != 0 || (ds->ds_head_len > 12 &&
	    p[12] != ' ' && p[12] != '\r'))
		return broken(ds, why, "the answer is not 200");
	while ((eol = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		if (header_is(p, (size_t)(eol - p), "Transfer-Encoding")) {
			for (v = p + 18; v + 7 <= eol; v++)
				if (strncasecmp(v, "chunked", 7) == 0)
					chunked = 1;
		}
		p = eol + 1;
	}
	ds->ds_live = 1;
	ds->ds_state = chunked ? DOCK_STREAM_SIZE : DOCK_STREAM_RAW;
	return 0;
}

/* The chunk's size line, without its CRLF. */
static int
size_done(struct dock_stream *ds, const char **why)
{
	uint64_t	 v = 0;
	size_t		 i;
	int		 c;

	for (i = 0; i < ds->ds_size_len && ds->ds_size[i] != ';'; i++) {
		c = (unsigned char)ds->ds_size[i];
		if (i >= 8)
			return broken(ds, why, "a chunk size too large");
		if (c >= '0' && c <= '9')
			v = v * 16 + (uint64_t)(c - '0');
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			v = v * 16 + (uint64_t)((c | 0x20) - 'a' + 10);
		else
			return broken(ds, why, "a malformed chunk size");
	}
	if (i == 0)
		return broken(ds, why, "a malformed chunk size");
	if (v == 0)
		return broken(ds, why, "the stream ended");
	ds->ds_size_len = 0;
	ds->ds_left = v;
	ds->ds_state = DOCK_STREAM_DATA;
	return 0;
}

/* Body bytes into lines; a line too long is skipped whole. */
static int
body(struct dock_stream *ds, const char *p, size_t n, dock_line_cb cb,
    void *arg)
{
	const char	*nl;
	size_t		 take;

	while (n > 0) {
		nl = memchr(p, '\n', n);
		take = nl != NULL ? (size_t)(nl - p) : n;
		if (!ds->ds_skip) {
			if (ds->ds_line_len + take > DOCK_EVENT_LINE_MAX) {
				ds->ds_skip = 1;
				ds->ds_line_len = 0;
			} else {
				memcpy(ds->ds_line + ds->ds_line_len, p, take);
				ds->ds_line_len += take;
			}
		}
		if (nl == NULL)
			return 0;
		if (ds->ds_skip)
			log_warnx("docker events: an event longer than %u "
			    "bytes skipped", DOCK_EVENT_LINE_MAX);
		else {
			if (ds->ds_line_len > 0 &&
			    ds->ds_line[ds->ds_line_len - 1] == '\r')
				ds->ds_line_len--;
			if (ds->ds_line_len > 0)
				cb(ds->ds_line, ds->ds_line_len, arg);
		}
		ds->ds_skip = 0;
		ds->ds_line_len = 0;
		p += take + 1;
		n -= take + 1;
	}
	return 0;
}

int
dock_stream_feed(struct dock_stream *ds, const char *p, size_t n,
    dock_line_cb cb, void *arg, const char **why)
{
	size_t	 take;
	char	 c;

	*why = NULL;
	while (n > 0) {
		switch (ds->ds_state) {
		case DOCK_STREAM_BROKEN:
			return broken(ds, why, "the stream broke before");
		case DOCK_STREAM_HEAD:
			if (ds->ds_head_len == sizeof(ds->ds_head))
				return broken(ds, why, "a head too large");
			ds->ds_head[ds->ds_head_len++] = *p++;
			n--;
			if (ds->ds_head_len >= 4 && memcmp(ds->ds_head +
			    ds->ds_head_len - 4, "\r\n\r\n", 4) == 0 &&
			    head_done(ds, why) == -1)
				return -1;
			break;
		case DOCK_STREAM_SIZE:
			c = *p++;
			n--;
			if (c == '\r')
				break;
			if (c == '\n') {
				if (size_done(ds, why) == -1)
					return -1;
				break;
			}
			if (ds->ds_size_len == sizeof(ds->ds_size))
				return broken(ds, why, "a chunk size line too "
				    "long");
			ds->ds_size[ds->ds_size_len++] = c;
			break;
		case DOCK_STREAM_DATA:
			take = n < ds->ds_left ? n : (size_t)ds->ds_left;
			body(ds, p, take, cb, arg);
			p += take;
			n -= take;
			if ((ds->ds_left -= take) == 0) {
				ds->ds_state = DOCK_STREAM_DATA_END;
				ds->ds_crlf = 0;
			}
			break;
		case DOCK_STREAM_DATA_END:
			c = *p++;
			n--;
			if (c != (ds->ds_crlf == 0 ? '\r' : '\n'))
				return broken(ds, why, "a chunk without its "
				    "CRLF");
			if (++ds->ds_crlf == 2)
				ds->ds_state = DOCK_STREAM_SIZE;
			break;
		case DOCK_STREAM_RAW:
			body(ds, p, n, cb, arg);
			n = 0;
			break;
		}
	}
	return 0;
}

static void
pct_encode(char *out, const char *in)
{
	static const char	 hex[] = "0123456789ABCDEF";
	unsigned char		 c;

	for (; (c = (unsigned char)*in) != '\0'; in++) {
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.' || c == '~')
			*out++ = (char)c;
		else {
			*out++ = '%';
			*out++ = hex[c >> 4];
			*out++ = hex[c & 15];
		}
	}
	*out = '\0';
}

/*
 * Containers only; the actions are picked here, not by an "event" filter:
 * Podman matches one against its own names ("died", "remove"), so that a
 * filter of Docker's names lets nothing through, and it sends its head only
 * with the first event that passes.
 */
char *
dock_events_request(int64_t since)
{
	char	 enc[120], *req;

	pct_encode(enc, "{\"type\":[\"container\"]}");
	if (since > 0) {
		if (asprintf(&req, "/v1.41/events?since=%" PRId64
		    "&filters=%s", since, enc) == -1)
			return NULL;
	} else if (asprintf(&req, "/v1.41/events?filters=%s", enc) == -1)
		return NULL;
	return req;
}

/* The connection. */

struct dock_watch {
	struct event_base	*dw_base;
	struct sockaddr_un	 dw_sun;
	char			*dw_prefix;
	dock_watch_cb		 dw_cb;
	void			*dw_arg;
	int			 dw_fd;
	struct event		*dw_read;
	struct event		*dw_retry;
	unsigned		 dw_backoff_ms;
	int			 dw_live;
	int64_t			 dw_since;	/* ask from here after a loss */
	struct dock_stream	 dw_stream;
};

static void	dock_watch_connect(evutil_socket_t, short, void *);

static void
dock_watch_line(const char *line, size_t len, void *arg)
{
	struct dock_watch	*dw = arg;
	struct dock_event	 ev;

	switch (dock_event_parse(line, len, dw->dw_prefix, &ev)) {
	case 1:
		dw->dw_cb(DOCK_WATCH_EVENT, &ev, dw->dw_arg);
		break;
	case -1:
		log_warnx("docker events: a line that is not an event "
		    "skipped");
		break;
	default:
		break;
	}
}

static void
dock_watch_drop(struct dock_watch *dw, const char *why)
{
	struct timeval	 tv;

	if (dw->dw_read != NULL) {
		event_free(dw->dw_read);
		dw->dw_read = NULL;
	}
	if (dw->dw_fd != -1) {
		close(dw->dw_fd);
		dw->dw_fd = -1;
	}
	dock_stream_free(&dw->dw_stream);
	if (dw->dw_live) {
		log_warnx("docker events: not following any more: %s", why);
		dw->dw_live = 0;
		/* a second before, for what came while it was read */
		dw->dw_since = (int64_t)time(NULL) - 1;
		dw->dw_backoff_ms = DOCK_EVENTS_RETRY_MIN_MS;
		dw->dw_cb(DOCK_WATCH_LOST, NULL, dw->dw_arg);
	} else {
		log_debug("docker events: %s", why);
		dw->dw_backoff_ms = dw->dw_backoff_ms * 2;
		if (dw->dw_backoff_ms > DOCK_EVENTS_RETRY_MAX_MS)
			dw->dw_backoff_ms = DOCK_EVENTS_RETRY_MAX_MS;
	}
	tv.tv_sec = dw->dw_backoff_ms / 1000;
	tv.tv_usec = (dw->dw_backoff_ms % 1000) * 1000;
	evtimer_add(dw->dw_retry, &tv);
}

static void
dock_watch_read(evutil_socket_t fd, short what, void *arg)
{
	struct dock_watch	*dw = arg;
	char			 buf[16384];
	const char		*why;
	ssize_t			 n;
	int			 was_live = dw->dw_stream.ds_live;

	if ((n = read(fd, buf, sizeof(buf))) == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		dock_watch_drop(dw, strerror(errno));
		return;
	}
	if (n == 0) {
		dock_watch_drop(dw, "Docker closed the stream");
		return;
	}
	if (dock_stream_feed(&dw->dw_stream, buf, (size_t)n, dock_watch_line,
	    dw, &why) == -1) {
		dock_watch_drop(dw, why);
		return;
	}
	if (!was_live && dw->dw_stream.ds_live) {
		log_info("docker events: following");
		dw->dw_live = 1;
		dw->dw_backoff_ms = DOCK_EVENTS_RETRY_MIN_MS;
		dw->dw_cb(DOCK_WATCH_LIVE, NULL, dw->dw_arg);
	}
}

static void
dock_watch_connect(evutil_socket_t unused, short what, void *arg)
{
	struct dock_watch	*dw = arg;
	char			*path, *req = NULL;
	ssize_t			 n;
	int			 fd, len;

	if (dock_stream_init(&dw->dw_stream) == -1) {
		dock_watch_drop(dw, "out of memory");
		return;
	}
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		dock_watch_drop(dw, strerror(errno));
		return;
	}
	dw->dw_fd = fd;
	/* A Unix socket connects at once or not at all (EAGAIN). */
	if (connect(fd, (struct sockaddr *)&dw->dw_sun,
	    sizeof(dw->dw_sun)) == -1) {
		dock_watch_drop(dw, strerror(errno));
		return;
	}
	if ((path = dock_events_request(dw->dw_since)) == NULL ||
	    (len = asprintf(&req, "GET %s HTTP/1.1\r\nHost: docker\r\n"
	    "User-Agent: rtsandbox\r\n\r\n", path)) == -1) {
		free(path);
		dock_watch_drop(dw, "out of memory");
		return;
	}
	free(path);
	/* Far below a fresh socket's buffer: all of it or nothing. */
	n = write(fd, req, (size_t)len);
	free(req);
	if (n != len) {
		dock_watch_drop(dw, n == -1 ? strerror(errno) :
		    "a short write");
		return;
	}
	if ((dw->dw_read = event_new(dw->dw_base, fd, EV_READ | EV_PERSIST,
	    dock_watch_read, dw)) == NULL ||
	    event_add(dw->dw_read, NULL) == -1)
		dock_watch_drop(dw, "cannot wait for the answer");
}

struct dock_watch *
dock_watch_new(struct event_base *base, const char *path, const char *prefix,
    dock_watch_cb cb, void *arg)
{
	struct dock_watch	*dw;
	struct timeval		 now = { 0, 0 };

	if (strlen(path) >= sizeof(dw->dw_sun.sun_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if ((dw = calloc(1, sizeof(*dw))) == NULL ||
	    (dw->dw_prefix = strdup(prefix)) == NULL ||
	    (dw->dw_retry = evtimer_new(base, dock_watch_connect, dw)) ==
	    NULL)
		fatal("%s", __func__);
	dw->dw_base = base;
	dw->dw_sun.sun_family = AF_UNIX;
	memcpy(dw->dw_sun.sun_path, path, strlen(path) + 1);
	dw->dw_cb = cb;
	dw->dw_arg = arg;
	dw->dw_fd = -1;
	dw->dw_backoff_ms = DOCK_EVENTS_RETRY_MIN_MS / 2;
	evtimer_add(dw->dw_retry, &now);
	return dw;
}

void
dock_watch_free(struct dock_watch *dw)
{
	if (dw == NULL)
		return;
	if (dw->dw_read != NULL)
		event_free(dw->dw_read);
	if (dw->dw_fd != -1)
		close(dw->dw_fd);
	dock_stream_free(&dw->dw_stream);
	event_free(dw->dw_retry);
	free(dw->dw_prefix);
	free(dw);
}
