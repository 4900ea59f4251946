/*
 * precheck: "/rtsandbox-worker precheck", one run of a precheck script
 * (rtsandbox-protocol(7), precheck.run).  The input comes on stdin, the
 * one answer goes to stdout, everything else to stderr; the only way out
 * of the container is the broker's socket, which PRECHECK_BROKER_SOCKET
 * names outside one.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "precheck.h"
#include "pscript.h"
#include "whttp.h"
#include "wjson.h"
#include "wlog.h"

#define PRECHECK_SOCKET_DEFAULT	"/broker/broker.sock"

struct precheck_ctx {
	const char	*pc_socket;
};

static const char	 nomem_answer[] =
    "{\"ok\":false,\"error\":\"out of memory\"}";

static int
io_request(void *arg, const char *method, const char *path, const char *body,
    size_t len, struct wbuf *answer)
{
	const struct precheck_ctx	*pc = arg;
	struct whttp_response		 resp;
	enum whttp_err			 e;
	int				 status;

	e = whttp_call(pc->pc_socket, method, path, body, len, PS_TIMEOUT_MS,
	    PS_ANSWER_MAX, &resp);
	if (e != WHTTP_OK) {
		wlog("%s %s: %s", method, path, whttp_err_to_string(e));
		whttp_response_free(&resp);
		return 0;
	}
	status = resp.ws_status;
	if (wbuf_add(answer, resp.ws_body.b_data != NULL ?
	    resp.ws_body.b_data : "", resp.ws_body.b_len) == -1)
		status = 0;
	whttp_response_free(&resp);
	return status;
}

static void
io_request2(void *arg, const char *path, const char *body, size_t len,
    int status[2])
{
	const struct precheck_ctx	*pc = arg;
	struct whttp_request		 req;
	struct whttp_response		 resp;
	struct whttp_pending		*p[2];
	enum whttp_err			 e;
	int				 i;

	memset(&req, 0, sizeof(req));
	req.wr_method = "POST";
	req.wr_path = path;
	req.wr_content_type = "application/json";
	req.wr_body = body;
	req.wr_body_len = len;
	req.wr_timeout_ms = PS_TIMEOUT_MS;
	req.wr_body_max = PS_ANSWER_MAX;
	for (i = 0; i < 2; i++)
		if ((e = whttp_send(pc->pc_socket, &req, &p[i])) != WHTTP_OK)
			wlog("POST %s: %s", path, whttp_err_to_string(e));
	for (i = 0; i < 2; i++) {
		status[i] = 0;
		if (p[i] == NULL)
			continue;
		if ((e = whttp_receive(p[i], &resp)) == WHTTP_OK)
			status[i] = resp.ws_status;
		else
			wlog("POST %s: %s", path, whttp_err_to_string(e));
		whttp_response_free(&resp);
		whttp_pending_free(p[i]);
	}
}

static int
io_write(void *arg, const char *path, const char *data, size_t len)
{
	ssize_t	 n;
	int	 fd, e = 0;

	(void)arg;
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC |
	    O_NOFOLLOW, 0644)) == -1)
		return errno;
	while (len > 0) {
		if ((n = write(fd, data, len)) == -1) {
			if (errno == EINTR)
				continue;
			e = errno;
			break;
		}
		data += n;
		len -= (size_t)n;
	}
	if (close(fd) == -1 && e == 0)
		e = errno;
	return e;
}

static void
io_sleep(void *arg, unsigned int ms)
{
	struct timespec	 ts;

	(void)arg;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		continue;
}

/* The script's own lines, as they are: stderr is the host's to drop. */
static void
io_log(void *arg, const char *text, size_t len)
{
	struct wbuf	 line;
	ssize_t		 n;

	(void)arg;
	wbuf_init(&line, 0);
	wbuf_add(&line, text, len);
	wbuf_addc(&line, '\n');
	/* A failed log write has nowhere to go. */
	if (line.b_err == 0)
		n = write(STDERR_FILENO, line.b_data, line.b_len);
	else
		n = -1;
	(void)n;
	wbuf_free(&line);
}

/* At most max bytes, and one more to tell that there were more. */
static char *
read_input(size_t max, size_t *lenp)
{
	char	*buf;
	size_t	 len = 0;
	ssize_t	 n;

	if ((buf = malloc(max + 1)) == NULL)
		return NULL;
	while (len <= max) {
		n = read(STDIN_FILENO, buf + len, max + 1 - len);
		if (n == 0)
			break;
		if (n == -1) {
			if (errno == EINTR)
				continue;
			wlog_errno("stdin");
			free(buf);
			return NULL;
		}
		len += (size_t)n;
	}
	*lenp = len;
	return buf;
}

static void
put_answer(const char *out, size_t len)
{
	ssize_t	 n;

	while (len > 0) {
		if ((n = write(STDOUT_FILENO, out, len)) == -1) {
			if (errno == EINTR)
				continue;
			wlog_errno("stdout");
			return;
		}
		out += n;
		len -= (size_t)n;
	}
}

void
precheck_main(void)
{
	static const char	 unread[] = "the precheck input cannot be read";
	struct precheck_ctx	 pc;
	struct pscript_io	 io;
	struct sigaction	 sa;
	char			*input, *out;
	size_t			 len, olen;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) == -1)
		wlog_errno("sigaction");
	pc.pc_socket = getenv("PRECHECK_BROKER_SOCKET");
	if (pc.pc_socket == NULL || *pc.pc_socket == '\0')
		pc.pc_socket = PRECHECK_SOCKET_DEFAULT;
	memset(&io, 0, sizeof(io));
	io.pio_request = io_request;
	io.pio_request2 = io_request2;
	io.pio_write = io_write;
	io.pio_sleep = io_sleep;
	io.pio_log = io_log;
	io.pio_arg = &pc;

	if ((input = read_input(PS_INPUT_MAX, &len)) == NULL)
		out = pscript_answer_error(unread, sizeof(unread) - 1, &olen);
	else
		out = pscript_run(input, len, &io, &olen);
	free(input);
	if (out == NULL)
		put_answer(nomem_answer, sizeof(nomem_answer) - 1);
	else
		put_answer(out, olen);
	free(out);
	exit(0);
}
