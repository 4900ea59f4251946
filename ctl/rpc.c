#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "rpc.h"

/* Answers are bounded like requests: one line of at most 128 MiB. */
#define RPC_LINE_MAX	(128u * 1024 * 1024)

struct rpc {
	int		 fd;
	char		*buf;
	size_t		 len, cap;
	double		 next_id;
};

static int
rpc_write_all(int fd, const char *p, size_t n)
{
	ssize_t	 w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= w;
	}
	return 0;
}

/* One line without its newline, or NULL on EOF or error. */
static char *
rpc_read_line(struct rpc *r)
{
	char	*nl, *line, *nbuf;
	ssize_t	 n;
	size_t	 ll;

	for (;;) {
		if (r->len > 0 && (nl = memchr(r->buf, '\n', r->len)) != NULL) {
			ll = nl - r->buf;
			if ((line = malloc(ll + 1)) == NULL)
				return NULL;
			memcpy(line, r->buf, ll);
			line[ll] = '\0';
			memmove(r->buf, nl + 1, r->len - ll - 1);
			r->len -= ll + 1;
			return line;
		}
		if (r->len > RPC_LINE_MAX) {
			fprintf(stderr, "rtsandboxctl: answer too long\n");
			return NULL;
		}
		if (r->cap - r->len < 65536) {
			r->cap = r->cap ? r->cap * 2 : 131072;
			if ((nbuf = realloc(r->buf, r->cap)) == NULL)
				return NULL;
			r->buf = nbuf;
		}
		n = read(r->fd, r->buf + r->len, r->cap - r->len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				fprintf(stderr, "rtsandboxctl: rtsandboxd closed "
				    "the connection\n");
			else
				fprintf(stderr, "rtsandboxctl: read: %s\n",
				    strerror(errno));
			return NULL;
		}
		r->len += n;
	}
}

cJSON *
rpc_call(struct rpc *r, const char *method, cJSON *params, int *code)
{
	cJSON		*req, *ans, *res, *err, *id, *c, *m;
	char		*s, *line;
	double		 myid = ++r->next_id;

	*code = 0;
	if ((req = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddStringToObject(req, "jsonrpc", "2.0");
	cJSON_AddNumberToObject(req, "id", myid);
	cJSON_AddStringToObject(req, "method", method);
	if (params != NULL)
		cJSON_AddItemToObject(req, "params", params);
	s = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	if (s == NULL)
		return NULL;
	if (rpc_write_all(r->fd, s, strlen(s)) == -1 ||
	    rpc_write_all(r->fd, "\n", 1) == -1) {
		fprintf(stderr, "rtsandboxctl: write: %s\n", strerror(errno));
		free(s);
		return NULL;
	}
	free(s);
	for (;;) {
		if ((line = rpc_read_line(r)) == NULL)
			return NULL;
		ans = cJSON_Parse(line);
		free(line);
		if (ans == NULL) {
			fprintf(stderr, "rtsandboxctl: unreadable answer\n");
			return NULL;
		}
		id = cJSON_GetObjectItemCaseSensitive(ans, "id");
		/* Notifications (progress) and other ids are not ours. */
		if (!cJSON_IsNumber(id) || id->valuedouble != myid) {
			cJSON_Delete(ans);
			continue;
		}
		break;
	}
	if ((err = cJSON_GetObjectItemCaseSensitive(ans, "error")) != NULL) {
		c = cJSON_GetObjectItemCaseSensitive(err, "code");
		m = cJSON_GetObjectItemCaseSensitive(err, "message");
		*code = cJSON_IsNumber(c) ? c->valueint : -1;
		fprintf(stderr, "rtsandboxctl: %s: %s (%d)\n", method,
		    cJSON_IsString(m) ? m->valuestring : "error", *code);
		cJSON_Delete(ans);
		return NULL;
	}
	res = cJSON_DetachItemFromObjectCaseSensitive(ans, "result");
	cJSON_Delete(ans);
	if (res == NULL)
		fprintf(stderr, "rtsandboxctl: %s: answer without result\n",
		    method);
	return res;
}

struct rpc *
rpc_open(const char *path, const char *const *hooks)
{
	struct sockaddr_un	 sun;
	struct rpc		*r;
	cJSON			*p, *h, *res;
	int			 code;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "rtsandboxctl: %s: socket path too long\n",
		    path);
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	if ((r->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		fprintf(stderr, "rtsandboxctl: socket: %s\n", strerror(errno));
		free(r);
		return NULL;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (connect(r->fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		int	 e = errno;

		fprintf(stderr, "rtsandboxctl: cannot connect to %s: %s\n",
		    path, strerror(e));
		if (e == ENOENT || e == ECONNREFUSED)
			fprintf(stderr, "rtsandboxctl: is rtsandboxd running? "
			    "(give its control socket with -s)\n");
		else if (e == EACCES)
			fprintf(stderr, "rtsandboxctl: run as the service user "
			    "or a member of control_group\n");
		rpc_close(r);
		return NULL;
	}
	if ((p = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(p, "client", "rtsandboxctl") == NULL ||
	    (h = cJSON_AddArrayToObject(p, "hooks")) == NULL) {
		cJSON_Delete(p);
		rpc_close(r);
		return NULL;
	}
	for (; hooks != NULL && *hooks != NULL; hooks++)
		cJSON_AddItemToArray(h, cJSON_CreateString(*hooks));
	if ((res = rpc_call(r, "initialize", p, &code)) == NULL) {
		rpc_close(r);
		return NULL;
	}
	cJSON_Delete(res);
	return r;
}

void
rpc_close(struct rpc *r)
{
	if (r == NULL)
		return;
	if (r->fd != -1)
		close(r->fd);
	free(r->buf);
	free(r);
}

int
rpc_write(struct rpc *r, cJSON *o)
{
	char	*s = cJSON_PrintUnformatted(o);
	int	 rc;

	cJSON_Delete(o);
	if (s == NULL)
		return -1;
	rc = rpc_write_all(r->fd, s, strlen(s)) == -1 ||
	    rpc_write_all(r->fd, "\n", 1) == -1 ? -1 : 0;
	free(s);
	return rc;
}

double
rpc_send(struct rpc *r, const char *method, cJSON *params)
{
	cJSON	*req;
	double	 id = ++r->next_id;

	if ((req = cJSON_CreateObject()) == NULL) {
		cJSON_Delete(params);
		return -1;
	}
	cJSON_AddStringToObject(req, "jsonrpc", "2.0");
	cJSON_AddNumberToObject(req, "id", id);
	cJSON_AddStringToObject(req, "method", method);
	if (params != NULL)
		cJSON_AddItemToObject(req, "params", params);
	return rpc_write(r, req) == -1 ? -1 : id;
}

cJSON *
rpc_next(struct rpc *r, int timeout_ms, int *timed_out)
{
	struct pollfd	 pfd;
	char		*line;
	cJSON		*m;
	int		 n;

	*timed_out = 0;
	/* A whole line already buffered needs no poll. */
	if (r->len == 0 || memchr(r->buf, '\n', r->len) == NULL) {
		pfd.fd = r->fd;
		pfd.events = POLLIN;
		do
			n = poll(&pfd, 1, timeout_ms);
		while (n == -1 && errno == EINTR);
		if (n == 0) {
			*timed_out = 1;
			return NULL;
		}
		if (n == -1)
			return NULL;
	}
	if ((line = rpc_read_line(r)) == NULL)
		return NULL;
	m = cJSON_Parse(line);
	free(line);
	if (m == NULL)
		fprintf(stderr, "rtsandboxctl: unreadable message\n");
	return m;
}
