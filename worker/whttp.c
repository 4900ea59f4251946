/*
 * whttp: the worker's HTTP/1.1 client.  One request per connection (the
 * broker closes every connection anyway), a non-blocking socket and poll()
 * against one deadline per request, so that no step can hang past the
 * client timeout of PROTOCOL.md section 2.  Answers may be framed by
 * Content-Length, chunked, or the end of the connection.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "whttp.h"

/* Status line and headers of one answer, in all. */
#define WHTTP_HEAD_MAX		65536
/* Also the longest line: status, header or chunk size. */
#define WHTTP_BUF_SIZE		16384

struct conn {
	int		 c_fd;
	long long	 c_deadline;	/* CLOCK_MONOTONIC, ms */
	size_t		 c_off;		/* first unread byte */
	size_t		 c_end;		/* end of the bytes read */
	int		 c_eof;
	char		 c_buf[WHTTP_BUF_SIZE];
};

struct body {
	const struct whttp_request	*bd_req;
	struct whttp_response		*bd_resp;
	size_t				 bd_total;
	int				 bd_sink;
};

const char *
whttp_err_to_string(enum whttp_err e)
{
	switch (e) {
	case WHTTP_OK:
		return "no error";
	case WHTTP_ERR_PATH:
		return "socket path too long";
	case WHTTP_ERR_REQUEST:
		return "malformed request";
	case WHTTP_ERR_SOCKET:
		return "cannot create a socket";
	case WHTTP_ERR_CONNECT:
		return "cannot connect";
	case WHTTP_ERR_TIMEOUT:
		return "timed out";
	case WHTTP_ERR_IO:
		return "i/o error";
	case WHTTP_ERR_CLOSED:
		return "connection closed early";
	case WHTTP_ERR_PROTO:
		return "malformed answer";
	case WHTTP_ERR_TOO_BIG:
		return "answer too long";
	case WHTTP_ERR_SINK:
		return "answer refused";
	case WHTTP_ERR_NOMEM:
		return "out of memory";
	}
	return "unknown error";
}

static long long
now_ms(void)
{
	struct timespec	 ts;

	/* Without a clock every deadline has passed. */
	if (clock_gettime(CLOCK_MONOTONIC, &ts) == -1)
		return LLONG_MAX / 2;
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static enum whttp_err
conn_wait(struct conn *c, short events)
{
	struct pollfd	 pfd;
	long long	 left;
	int		 r;

	for (;;) {
		if ((left = c->c_deadline - now_ms()) <= 0)
			return WHTTP_ERR_TIMEOUT;
		pfd.fd = c->c_fd;
		pfd.events = events;
		pfd.revents = 0;
		r = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r == -1) {
			if (errno == EINTR)
				continue;
			return WHTTP_ERR_IO;
		}
		/* Errors and hang-ups are reported by the call that follows. */
		if (r > 0)
			return WHTTP_OK;
	}
}

static enum whttp_err
conn_connect(struct conn *c, const char *path)
{
	struct sockaddr_un	 sun;
	socklen_t		 len;
	enum whttp_err		 e;
	int			 err;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return WHTTP_ERR_PATH;
	memcpy(sun.sun_path, path, strlen(path));
	c->c_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (c->c_fd == -1)
		return WHTTP_ERR_SOCKET;
	if (connect(c->c_fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
		return WHTTP_OK;
	if (errno != EINPROGRESS)
		return WHTTP_ERR_CONNECT;
	if ((e = conn_wait(c, POLLOUT)) != WHTTP_OK)
		return e;
	len = sizeof(err);
	if (getsockopt(c->c_fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 ||
	    err != 0)
		return WHTTP_ERR_CONNECT;
	return WHTTP_OK;
}

/*
 * A peer that answers before it has read the whole request (the broker
 * does, for a refused result) resets the connection under us: the answer
 * may still be there to read, so EPIPE and ECONNRESET are told apart.
 */
static enum whttp_err
conn_write(struct conn *c, const char *p, size_t len, int *reset)
{
	enum whttp_err	 e;
	ssize_t		 n;

	while (len > 0) {
		n = send(c->c_fd, p, len, MSG_NOSIGNAL);
		if (n >= 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if ((e = conn_wait(c, POLLOUT)) != WHTTP_OK)
				return e;
			continue;
		}
		if (errno == EPIPE || errno == ECONNRESET) {
			*reset = 1;
			return WHTTP_OK;
		}
		return WHTTP_ERR_IO;
	}
	return WHTTP_OK;
}

static enum whttp_err
conn_fill(struct conn *c)
{
	enum whttp_err	 e;
	ssize_t		 n;

	if (c->c_off > 0) {
		memmove(c->c_buf, c->c_buf + c->c_off, c->c_end - c->c_off);
		c->c_end -= c->c_off;
		c->c_off = 0;
	}
	if (c->c_end == sizeof(c->c_buf))
		return WHTTP_ERR_PROTO;
	for (;;) {
		n = read(c->c_fd, c->c_buf + c->c_end,
		    sizeof(c->c_buf) - c->c_end);
		if (n > 0) {
			c->c_end += (size_t)n;
			return WHTTP_OK;
		}
		if (n == 0) {
			c->c_eof = 1;
			return WHTTP_OK;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if ((e = conn_wait(c, POLLIN)) != WHTTP_OK)
				return e;
			continue;
		}
		return WHTTP_ERR_IO;
	}
}

/* A line without its CR LF (a bare LF is taken too), valid until the next
 * read from the connection. */
static enum whttp_err
conn_line(struct conn *c, char **linep, size_t *lenp)
{
	enum whttp_err	 e;
	char		*nl;
	size_t		 len;

	for (;;) {
		nl = memchr(c->c_buf + c->c_off, '\n', c->c_end - c->c_off);
		if (nl != NULL) {
			*linep = c->c_buf + c->c_off;
			len = (size_t)(nl - *linep);
			c->c_off += len + 1;
			if (len > 0 && (*linep)[len - 1] == '\r')
				len--;
			(*linep)[len] = '\0';
			*lenp = len;
			return WHTTP_OK;
		}
		if (c->c_eof)
			return WHTTP_ERR_CLOSED;
		if ((e = conn_fill(c)) != WHTTP_OK)
			return e;
	}
}

static enum whttp_err
body_put(struct body *bd, const char *p, size_t len)
{
	if (len > bd->bd_req->wr_body_max - bd->bd_total)
		return WHTTP_ERR_TOO_BIG;
	bd->bd_total += len;
	if (bd->bd_sink)
		return bd->bd_req->wr_sink(bd->bd_req->wr_sink_arg,
		    bd->bd_resp, p, len) == -1 ? WHTTP_ERR_SINK : WHTTP_OK;
	if (wbuf_add(&bd->bd_resp->ws_body, p, len) == -1)
		return bd->bd_resp->ws_body.b_err == ENOMEM ?
		    WHTTP_ERR_NOMEM : WHTTP_ERR_TOO_BIG;
	return WHTTP_OK;
}

/* want bytes of body, or all until the peer closes when want is SIZE_MAX. */
static enum whttp_err
body_take(struct conn *c, struct body *bd, size_t want)
{
	enum whttp_err	 e;
	size_t		 n;

	while (want > 0) {
		if (c->c_off == c->c_end) {
			if (c->c_eof)
				return want == SIZE_MAX ? WHTTP_OK :
				    WHTTP_ERR_CLOSED;
			c->c_off = c->c_end = 0;
			if ((e = conn_fill(c)) != WHTTP_OK)
				return e;
			continue;
		}
		n = c->c_end - c->c_off;
		if (want != SIZE_MAX && n > want)
			n = want;
		if ((e = body_put(bd, c->c_buf + c->c_off, n)) != WHTTP_OK)
			return e;
		c->c_off += n;
		if (want != SIZE_MAX)
			want -= n;
	}
	return WHTTP_OK;
}

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static enum whttp_err
body_chunked(struct conn *c, struct body *bd)
{
	enum whttp_err	 e;
	char		*line;
	size_t		 len, i, size, head = 0;
	int		 d;

	for (;;) {
		if ((e = conn_line(c, &line, &len)) != WHTTP_OK)
			return e;
		size = 0;
		for (i = 0; i < len && (d = hexval(line[i])) != -1; i++) {
			/* Fifteen hex digits are more than any bound here. */
			if (i >= 15)
				return WHTTP_ERR_PROTO;
			size = size * 16 + (size_t)d;
		}
		if (i == 0 || (i < len && line[i] != ';' && line[i] != ' ' &&
		    line[i] != '\t'))
			return WHTTP_ERR_PROTO;
		if (size == 0)
			break;
		if (size > bd->bd_req->wr_body_max - bd->bd_total)
			return WHTTP_ERR_TOO_BIG;
		if ((e = body_take(c, bd, size)) != WHTTP_OK)
			return e;
		if ((e = conn_line(c, &line, &len)) != WHTTP_OK)
			return e;
		if (len != 0)
			return WHTTP_ERR_PROTO;
	}
	/* Trailers are read and dropped. */
	for (;;) {
		if ((e = conn_line(c, &line, &len)) != WHTTP_OK)
			return e;
		if (len == 0)
			return WHTTP_OK;
		if ((head += len + 2) > WHTTP_HEAD_MAX)
			return WHTTP_ERR_PROTO;
	}
}

/* ASCII only: the C library's case functions follow the locale. */
static int
name_is(const char *name, size_t len, const char *want)
{
	size_t	 i;
	char	 a;

	if (strlen(want) != len)
		return 0;
	for (i = 0; i < len; i++) {
		a = name[i];
		if (a >= 'A' && a <= 'Z')
			a = (char)(a - 'A' + 'a');
		if (a != want[i])
			return 0;
	}
	return 1;
}

static int
is_tchar(char ch)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9'))
		return 1;
	return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

struct framing {
	int		 f_chunked;
	int		 f_has_length;
	size_t		 f_length;
};

static enum whttp_err
parse_status(const char *line, size_t len, int *status)
{
	if (len < 12 || strncmp(line, "HTTP/1.", 7) != 0 ||
	    (line[7] != '0' && line[7] != '1') || line[8] != ' ' ||
	    line[9] < '1' || line[9] > '5' ||
	    line[10] < '0' || line[10] > '9' ||
	    line[11] < '0' || line[11] > '9' ||
	    (len > 12 && line[12] != ' '))
		return WHTTP_ERR_PROTO;
	*status = (line[9] - '0') * 100 + (line[10] - '0') * 10 +
	    (line[11] - '0');
	return WHTTP_OK;
}

static enum whttp_err
parse_header(char *line, size_t len, struct whttp_response *resp,
    struct framing *f)
{
	char	*colon, *v, *end;
	size_t	 nlen, vlen, n, i;

	if ((colon = memchr(line, ':', len)) == NULL || colon == line)
		return WHTTP_ERR_PROTO;
	nlen = (size_t)(colon - line);
	for (i = 0; i < nlen; i++)
		if (!is_tchar(line[i]))
			return WHTTP_ERR_PROTO;
	v = colon + 1;
	end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	vlen = (size_t)(end - v);
	if (memchr(v, '\0', vlen) != NULL)
		return WHTTP_ERR_PROTO;

	if (name_is(line, nlen, "content-length")) {
		if (vlen == 0 || vlen > 18)
			return WHTTP_ERR_PROTO;
		for (n = 0, i = 0; i < vlen; i++) {
			if (v[i] < '0' || v[i] > '9')
				return WHTTP_ERR_PROTO;
			n = n * 10 + (size_t)(v[i] - '0');
		}
		/* Two different lengths: no way to tell where the body ends. */
		if (f->f_has_length && f->f_length != n)
			return WHTTP_ERR_PROTO;
		f->f_has_length = 1;
		f->f_length = n;
	} else if (name_is(line, nlen, "transfer-encoding")) {
		/* Only chunked is asked for; anything else cannot be framed. */
		if (!name_is(v, vlen, "chunked"))
			return WHTTP_ERR_PROTO;
		f->f_chunked = 1;
	} else if (name_is(line, nlen, "content-type")) {
		n = vlen < sizeof(resp->ws_content_type) ? vlen :
		    sizeof(resp->ws_content_type) - 1;
		memcpy(resp->ws_content_type, v, n);
		resp->ws_content_type[n] = '\0';
	}
	return WHTTP_OK;
}

static enum whttp_err
read_head(struct conn *c, struct whttp_response *resp, struct framing *f)
{
	enum whttp_err	 e;
	char		*line;
	size_t		 len, total;

	for (;;) {
		memset(f, 0, sizeof(*f));
		resp->ws_content_type[0] = '\0';
		if ((e = conn_line(c, &line, &len)) != WHTTP_OK)
			return e;
		if ((e = parse_status(line, len, &resp->ws_status)) != WHTTP_OK)
			return e;
		total = len + 2;
		for (;;) {
			if ((e = conn_line(c, &line, &len)) != WHTTP_OK)
				return e;
			if (len == 0)
				break;
			if ((total += len + 2) > WHTTP_HEAD_MAX)
				return WHTTP_ERR_PROTO;
			/* Folded lines are obsolete and ambiguous. */
			if (line[0] == ' ' || line[0] == '\t')
				return WHTTP_ERR_PROTO;
			if ((e = parse_header(line, len, resp, f)) != WHTTP_OK)
				return e;
		}
		/* Interim answers (100 Continue) come before the real one. */
		if (resp->ws_status >= 200)
			return WHTTP_OK;
		if (resp->ws_status == 101)
			return WHTTP_ERR_PROTO;
	}
}

static int
path_ok(const char *path)
{
	const unsigned char	*p = (const unsigned char *)path;

	if (*p != '/')
		return 0;
	for (; *p != '\0'; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return 0;
	return 1;
}

static int
method_ok(const char *m)
{
	if (*m == '\0')
		return 0;
	for (; *m != '\0'; m++)
		if (*m < 'A' || *m > 'Z')
			return 0;
	return 1;
}

static int
has_body(const char *method)
{
	return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
}

static enum whttp_err
exchange_send(struct conn *c, const struct whttp_request *req, int *reset)
{
	struct wbuf	 head;
	enum whttp_err	 e;

	wbuf_init(&head, WHTTP_HEAD_MAX);
	wbuf_addf(&head, "%s %s HTTP/1.1\r\nHost: broker\r\n"
	    "Connection: close\r\n", req->wr_method, req->wr_path);
	if (has_body(req->wr_method))
		wbuf_addf(&head, "Content-Length: %zu\r\n", req->wr_body_len);
	if (req->wr_content_type != NULL)
		wbuf_addf(&head, "Content-Type: %s\r\n", req->wr_content_type);
	if (req->wr_extra != NULL)
		wbuf_addstr(&head, req->wr_extra);
	wbuf_addstr(&head, "\r\n");
	if (head.b_err != 0) {
		e = head.b_err == ENOMEM ? WHTTP_ERR_NOMEM : WHTTP_ERR_REQUEST;
		wbuf_free(&head);
		return e;
	}
	e = conn_write(c, head.b_data, head.b_len, reset);
	wbuf_free(&head);
	if (e != WHTTP_OK)
		return e;
	if (!*reset && req->wr_body_len > 0 &&
	    (e = conn_write(c, req->wr_body, req->wr_body_len, reset)) !=
	    WHTTP_OK)
		return e;
	return WHTTP_OK;
}

static enum whttp_err
exchange_receive(struct conn *c, const struct whttp_request *req,
    struct whttp_response *resp, int reset)
{
	struct framing	 f;
	struct body	 bd;
	enum whttp_err	 e;

	if ((e = read_head(c, resp, &f)) != WHTTP_OK)
		return reset ? WHTTP_ERR_IO : e;
	memset(&bd, 0, sizeof(bd));
	bd.bd_req = req;
	bd.bd_resp = resp;
	bd.bd_sink = req->wr_sink != NULL &&
	    resp->ws_status >= 200 && resp->ws_status <= 299;
	if (strcmp(req->wr_method, "HEAD") == 0 || resp->ws_status == 204 ||
	    resp->ws_status == 304)
		return WHTTP_OK;
	if (f.f_chunked)
		return body_chunked(c, &bd);
	if (f.f_has_length) {
		if (f.f_length > req->wr_body_max)
			return WHTTP_ERR_TOO_BIG;
		return body_take(c, &bd, f.f_length);
	}
	return body_take(c, &bd, SIZE_MAX);
}

static enum whttp_err
request_check(const struct whttp_request *req)
{
	if (!method_ok(req->wr_method) || !path_ok(req->wr_path) ||
	    req->wr_timeout_ms <= 0 ||
	    (req->wr_body_len > 0 && req->wr_body == NULL))
		return WHTTP_ERR_REQUEST;
	return WHTTP_OK;
}

static enum whttp_err
conn_start(struct conn *c, const char *sockpath,
    const struct whttp_request *req, int *reset)
{
	enum whttp_err	 e;

	c->c_fd = -1;
	c->c_off = c->c_end = 0;
	c->c_eof = 0;
	c->c_deadline = now_ms() + req->wr_timeout_ms;
	if ((e = conn_connect(c, sockpath)) != WHTTP_OK)
		return e;
	return exchange_send(c, req, reset);
}

enum whttp_err
whttp_do(const char *sockpath, const struct whttp_request *req,
    struct whttp_response *resp)
{
	struct conn	 c;
	enum whttp_err	 e;
	int		 reset = 0;

	memset(resp, 0, sizeof(*resp));
	wbuf_init(&resp->ws_body, req->wr_body_max);
	if ((e = request_check(req)) != WHTTP_OK)
		return e;
	if ((e = conn_start(&c, sockpath, req, &reset)) == WHTTP_OK)
		e = exchange_receive(&c, req, resp, reset);
	/* Nothing was written that a failed close could lose. */
	if (c.c_fd != -1)
		(void)close(c.c_fd);
	return e;
}

struct whttp_pending {
	struct conn			 p_conn;
	const struct whttp_request	*p_req;
	int				 p_reset;
};

enum whttp_err
whttp_send(const char *sockpath, const struct whttp_request *req,
    struct whttp_pending **pp)
{
	struct whttp_pending	*p;
	enum whttp_err		 e;

	*pp = NULL;
	if ((e = request_check(req)) != WHTTP_OK)
		return e;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return WHTTP_ERR_NOMEM;
	p->p_req = req;
	if ((e = conn_start(&p->p_conn, sockpath, req, &p->p_reset)) !=
	    WHTTP_OK) {
		whttp_pending_free(p);
		return e;
	}
	*pp = p;
	return WHTTP_OK;
}

enum whttp_err
whttp_receive(struct whttp_pending *p, struct whttp_response *resp)
{
	memset(resp, 0, sizeof(*resp));
	wbuf_init(&resp->ws_body, p->p_req->wr_body_max);
	return exchange_receive(&p->p_conn, p->p_req, resp, p->p_reset);
}

void
whttp_pending_free(struct whttp_pending *p)
{
	if (p == NULL)
		return;
	if (p->p_conn.c_fd != -1)
		(void)close(p->p_conn.c_fd);
	free(p);
}

void
whttp_response_free(struct whttp_response *resp)
{
	wbuf_free(&resp->ws_body);
}

enum whttp_err
whttp_call(const char *sockpath, const char *method, const char *path,
    const char *body, size_t len, int timeout_ms, size_t max,
    struct whttp_response *resp)
{
	struct whttp_request	 req;

	memset(&req, 0, sizeof(req));
	req.wr_method = method;
	req.wr_path = path;
	if (body != NULL)
		req.wr_content_type = "application/json";
	req.wr_body = body;
	req.wr_body_len = len;
	req.wr_timeout_ms = timeout_ms;
	req.wr_body_max = max;
	return whttp_do(sockpath, &req, resp);
}
