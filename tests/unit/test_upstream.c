/*
 * egress/upstream.c against a real HTTPS server on 127.0.0.1: a Python 3
 * server this file carries, with a private CA and a server certificate made
 * by the openssl CLI at start.  Covers streaming, back-pressure with bounded
 * memory, the request headers exactly as given, refusals, every failure kind
 * and cancelling from inside the callbacks.  Throughput is printed, never
 * asserted.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <event2/event.h>

#include "log.h"
#include "upstream.h"

#define MIB_BYTES	(1024u * 1024u)
#define BIG_BYTES	(64u * MIB_BYTES)
#define RSS_GROWTH_KB	(16 * 1024)
#define LOOP_LIMIT_S	60

/* ASan holds freed blocks in a quarantine (256 MiB by default) that the RSS
 * bound would count; keep it small so that the bound still means something
 * in sanitizer builds. */
const char	*__asan_default_options(void);

const char *
__asan_default_options(void)
{
	return "quarantine_size_mb=1";
}

static const char server_py[] =
	"import http.server, socketserver, ssl, sys, threading, time\n"
	"\n"
	"CRLF = bytes([13, 10])\n"
	"NL = bytes([10])\n"
	"# Big bodies repeat this block; the test checks them against it.\n"
	"PAT = bytes(((i & 255) ^ ((i >> 8) * 7)) & 255\n"
	"            for i in range(65536))\n"
	"BLOCK = memoryview(PAT * 16)\n"
	"# Answers upstream.c must refuse, each before 'ok'.\n"
	"RAW = {\n"
	"  'nocolon': b'NoColonHere' + CRLF,\n"
	"  'foldfirst': b'  folded' + CRLF,\n"
	"  'nul': b'X-Nul: a' + bytes(1) + b'b' + CRLF,\n"
	"  'switch': b'Upgrade: x' + CRLF,\n"
	"}\n"
	"\n"
	"\n"
	"class Handler(http.server.BaseHTTPRequestHandler):\n"
	"  protocol_version = 'HTTP/1.1'\n"
	"  disable_nagle_algorithm = True\n"
	"\n"
	"  def log_message(self, *args):\n"
	"    pass\n"
	"\n"
	"  def handle(self):\n"
	"    try:\n"
	"      if isinstance(self.request, ssl.SSLSocket):\n"
	"        self.request.do_handshake()\n"
	"      super().handle()\n"
	"    except (OSError, ValueError):\n"
	"      pass\n"
	"\n"
	"  def do_GET(self):\n"
	"    path, _, query = self.path.partition('?')\n"
	"    q = dict(kv.split('=', 1) for kv in query.split('&') if kv)\n"
	"    n = int(self.headers.get('Content-Length', '0'))\n"
	"    if path == '/trickle':\n"
	"      return self.r_trickle(n)\n"
	"    body = self.rfile.read(n) if n else b''\n"
	"    route = getattr(self, 'r_' + path[1:], self.r_missing)\n"
	"    route(q, body)\n"
	"\n"
	"  do_POST = do_GET\n"
	"\n"
	"  def head(self, code, ctype, length, extra=()):\n"
	"    self.send_response(code)\n"
	"    self.send_header('Content-Type', ctype)\n"
	"    for k, v in extra:\n"
	"      self.send_header(k, v)\n"
	"    if length is None:\n"
	"      self.send_header('Transfer-Encoding', 'chunked')\n"
	"    else:\n"
	"      self.send_header('Content-Length', str(length))\n"
	"    self.end_headers()\n"
	"\n"
	"  def fixed(self, code, ctype, data, extra=()):\n"
	"    self.head(code, ctype, len(data), extra)\n"
	"    self.wfile.write(data)\n"
	"\n"
	"  def chunk(self, data):\n"
	"    self.wfile.write(b'%x' % len(data) + CRLF + data + CRLF)\n"
	"\n"
	"  # The body read a piece at a time, an interim answer after each:\n"
	"  # bytes to read while the client still sends.\n"
	"  def r_trickle(self, n):\n"
	"    got = 0\n"
	"    while got < n:\n"
	"      k = len(self.rfile.read1(min(65536, n - got)))\n"
	"      if k == 0:\n"
	"        return\n"
	"      got += k\n"
	"      self.wfile.write(b'HTTP/1.1 100 Continue' + CRLF + CRLF)\n"
	"    self.fixed(200, 'text/plain', b'B %d' % got)\n"
	"\n"
	"  def r_missing(self, q, body):\n"
	"    self.fixed(404, 'text/plain', b'missing')\n"
	"\n"
	"  def r_json(self, q, body):\n"
	"    self.fixed(200, 'application/json', b'{\"ok\":true}',\n"
	"               [('X-Mixed-Case', '  spaced value' + chr(9) + ' '),\n"
	"                ('Request-Id', 'req_1')])\n"
	"\n"
	"  def r_echo(self, q, body):\n"
	"    out = [('M %s %s' % (self.command, self.path)).encode()]\n"
	"    for k, v in self.headers.items():\n"
	"      out.append(('H %s: %s' % (k, v)).encode('latin-1'))\n"
	"    out.append(b'B %d' % len(body))\n"
	"    out = NL.join(out) + NL + body\n"
	"    self.fixed(200, 'application/octet-stream', out)\n"
	"\n"
	"  def r_big(self, q, body):\n"
	"    left = int(q['n'])\n"
	"    self.head(200, 'application/octet-stream', left)\n"
	"    while left > 0:\n"
	"      k = min(left, len(BLOCK))\n"
	"      self.wfile.write(BLOCK[:k])\n"
	"      left -= k\n"
	"\n"
	"  def r_chunked(self, q, body):\n"
	"    n, off = int(q['n']), 0\n"
	"    self.head(200, 'application/octet-stream', None)\n"
	"    while off < n:\n"
	"      k = min(4096, n - off)\n"
	"      self.chunk(PAT[off & 65535:(off & 65535) + k])\n"
	"      off += k\n"
	"    self.wfile.write(b'0' + CRLF + CRLF)\n"
	"\n"
	"  def r_sse(self, q, body):\n"
	"    n, ms = int(q['n']), int(q['ms'])\n"
	"    self.head(200, 'text/event-stream', None,\n"
	"              [('Cache-Control', 'no-cache')])\n"
	"    for i in range(n):\n"
	"      if i > 0:\n"
	"        time.sleep(ms / 1000)\n"
	"      ts = time.clock_gettime_ns(time.CLOCK_MONOTONIC)\n"
	"      self.chunk(b'data: %d %d' % (i, ts) + NL + NL)\n"
	"    self.wfile.write(b'0' + CRLF + CRLF)\n"
	"\n"
	"  def r_redirect(self, q, body):\n"
	"    self.fixed(302, 'text/plain', b'moved',\n"
	"               [('Location', '/json')])\n"
	"\n"
	"  def r_early(self, q, body):\n"
	"    self.wfile.write(b'HTTP/1.1 103 Early Hints' + CRLF +\n"
	"                     b'Link: </a.css>; rel=preload' + CRLF +\n"
	"                     CRLF)\n"
	"    self.fixed(200, 'application/json', b'{\"early\":false}')\n"
	"\n"
	"  def r_folded(self, q, body):\n"
	"    self.wfile.write(b'HTTP/1.1 200 OK' + CRLF +\n"
	"                     b'Content-Length: 2' + CRLF +\n"
	"                     b'X-Fold: first' + CRLF +\n"
	"                     b'   second ' + CRLF +\n"
	"                     b'X-Fold-Empty:' + CRLF +\n"
	"                     b' later' + CRLF + CRLF + b'ok')\n"
	"\n"
	"  def r_hbytes(self, q, body):\n"
	"    self.wfile.write(b'HTTP/1.1 200 OK' + CRLF +\n"
	"                     b'X-Big: ' + b'v' * int(q['n']) + CRLF +\n"
	"                     b'Content-Length: 2' + CRLF + CRLF + b'ok')\n"
	"\n"
	"  def r_raw(self, q, body):\n"
	"    code = b'101' if q['case'] == 'switch' else b'200'\n"
	"    self.wfile.write(b'HTTP/1.1 ' + code + b' X' + CRLF +\n"
	"                     RAW[q['case']] + b'Content-Length: 2' +\n"
	"                     CRLF + CRLF + b'ok')\n"
	"    self.close_connection = True\n"
	"\n"
	"  def r_status(self, q, body):\n"
	"    self.fixed(int(q['code']), 'application/json',\n"
	"               b'{\"type\":\"error\"}')\n"
	"\n"
	"  def r_headers(self, q, body):\n"
	"    n = int(q['n'])\n"
	"    self.fixed(200, 'text/plain', b'many',\n"
	"               [('X-H-%d' % i, 'v%d' % i) for i in range(n)])\n"
	"\n"
	"  def r_stall(self, q, body):\n"
	"    time.sleep(30)\n"
	"    self.close_connection = True\n"
	"\n"
	"\n"
	"class Server(http.server.ThreadingHTTPServer):\n"
	"  daemon_threads = True\n"
	"  request_queue_size = 256\n"
	"\n"
	"  def server_bind(self):\n"
	"    socketserver.TCPServer.server_bind(self)\n"
	"    self.server_name = self.server_address[0]\n"
	"    self.server_port = self.server_address[1]\n"
	"\n"
	"  def handle_error(self, request, client_address):\n"
	"    pass\n"
	"\n"
	"\n"
	"def main():\n"
	"  ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
	"  ctx.load_cert_chain(sys.argv[1], sys.argv[2])\n"
	"  tls = Server(('127.0.0.1', 0), Handler)\n"
	"  tls.socket = ctx.wrap_socket(tls.socket, server_side=True,\n"
	"                               do_handshake_on_connect=False)\n"
	"  plain = Server(('127.0.0.1', 0), Handler)\n"
	"  for s in (tls, plain):\n"
	"    t = threading.Thread(target=s.serve_forever, daemon=True)\n"
	"    t.start()\n"
	"  print(tls.server_address[1], plain.server_address[1],\n"
	"        flush=True)\n"
	"  # The test holds the other end of stdin: its exit ends us.\n"
	"  sys.stdin.read()\n"
	"\n"
	"\n"
	"main()\n";

static const char openssl_cnf[] =
	"[req]\n"
	"distinguished_name = dn\n"
	"prompt = no\n"
	"[dn]\n"
	"CN = rtsandbox test\n"
	"[ca_ext]\n"
	"basicConstraints = critical,CA:TRUE\n"
	"keyUsage = critical,keyCertSign,cRLSign\n"
	"subjectKeyIdentifier = hash\n"
	"[srv_ext]\n"
	"basicConstraints = critical,CA:FALSE\n"
	"keyUsage = critical,digitalSignature\n"
	"extendedKeyUsage = serverAuth\n"
	"subjectAltName = IP:127.0.0.1\n"
	"subjectKeyIdentifier = hash\n"
	"authorityKeyIdentifier = keyid\n";

static char	 tmpdir[] = "/tmp/test_upstream.XXXXXX";
static char	 ca_pem[256];
static int	 tls_port;
static int	 plain_port;
static pid_t	 server_pid = -1;
static int	 server_stdin = -1;

static const char *const tmp_files[] = {
	"openssl.cnf", "ca.key", "ca.pem", "server.key", "server.csr",
	"server.pem", "server.py",
};

static void	die(const char *) __attribute__((noreturn));

static void
die(const char *what)
{
	fprintf(stderr, "test_upstream: %s%s%s\n", what, errno ? ": " : "",
	    errno ? strerror(errno) : "");
	exit(1);
}

static void
tmp_path(char *buf, size_t len, const char *name)
{
	int	 n;

	n = snprintf(buf, len, "%s/%s", tmpdir, name);
	if (n < 0 || (size_t)n >= len)
		die("path too long");
}

static void
write_file(const char *path, const char *text)
{
	size_t	 len = strlen(text), off = 0;
	ssize_t	 n;
	int	 fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) == -1)
		die(path);
	while (off < len) {
		if ((n = write(fd, text + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			die(path);
		}
		off += n;
	}
	if (close(fd) == -1)
		die(path);
}

/* Run a command quietly; 0 when it exits 0. */
static int
run(const char *const argv[])
{
	pid_t	 pid;
	int	 status, fd;

	switch (pid = fork()) {
	case -1:
		return -1;
	case 0:
		if ((fd = open("/dev/null", O_RDWR)) == -1 ||
		    dup2(fd, STDOUT_FILENO) == -1 ||
		    dup2(fd, STDERR_FILENO) == -1)
			_exit(127);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void
server_start(void)
{
	char	 cnf[256], cakey[256], srvkey[256], csr[256], srvpem[256];
	char	 py[256];
	const char *const ca_cmd[] = { "openssl", "req", "-x509",
	    "-config", cnf, "-extensions", "ca_ext", "-newkey", "ec",
	    "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
	    "-keyout", cakey, "-out", ca_pem, "-days", "2",
	    "-subj", "/CN=rtsandbox test CA", NULL };
	const char *const csr_cmd[] = { "openssl", "req", "-new",
	    "-config", cnf, "-newkey", "ec",
	    "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
	    "-keyout", srvkey, "-out", csr, "-subj", "/CN=127.0.0.1", NULL };
	const char *const sign_cmd[] = { "openssl", "x509", "-req",
	    "-in", csr, "-CA", ca_pem, "-CAkey", cakey, "-set_serial", "2",
	    "-days", "2", "-sha256", "-extfile", cnf, "-extensions",
	    "srv_ext", "-out", srvpem, NULL };
	int	 in[2], out[2];
	FILE	*f;

	if (mkdtemp(tmpdir) == NULL)
		die("mkdtemp");
	tmp_path(cnf, sizeof(cnf), "openssl.cnf");
	tmp_path(cakey, sizeof(cakey), "ca.key");
	tmp_path(ca_pem, sizeof(ca_pem), "ca.pem");
	tmp_path(srvkey, sizeof(srvkey), "server.key");
	tmp_path(csr, sizeof(csr), "server.csr");
	tmp_path(srvpem, sizeof(srvpem), "server.pem");
	tmp_path(py, sizeof(py), "server.py");
	write_file(cnf, openssl_cnf);
	write_file(py, server_py);

	if (run(ca_cmd) == -1 || run(csr_cmd) == -1 || run(sign_cmd) == -1) {
		errno = 0;
		die("openssl could not make the certificates");
	}

	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1)
		die("pipe2");
	switch (server_pid = fork()) {
	case -1:
		die("fork");
	case 0:
		if (dup2(in[0], STDIN_FILENO) == -1 ||
		    dup2(out[1], STDOUT_FILENO) == -1)
			_exit(127);
		execl("/usr/bin/python3", "python3", "-I", "-B", py, srvpem,
		    srvkey, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	server_stdin = in[1];
	if ((f = fdopen(out[0], "r")) == NULL)
		die("fdopen");
	if (fscanf(f, "%d %d", &tls_port, &plain_port) != 2) {
		errno = 0;
		die("the test server did not start");
	}
	fclose(f);
}

static void
server_stop(void)
{
	char	 path[256];
	size_t	 i;

	if (server_stdin != -1)
		close(server_stdin);
	if (server_pid > 0) {
		kill(server_pid, SIGTERM);
		while (waitpid(server_pid, NULL, 0) == -1 && errno == EINTR)
			continue;
	}
	for (i = 0; i < sizeof(tmp_files) / sizeof(tmp_files[0]); i++) {
		tmp_path(path, sizeof(path), tmp_files[i]);
		unlink(path);
	}
	rmdir(tmpdir);
}

/*
 * One event base and upstream per test; h_run() turns the loop until every
 * call started has ended or been cancelled.
 */
static struct {
	struct event_base	*base;
	struct upstream		*up;
	int			 pending;
	int			 timed_out;
} H;

static uint64_t
now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double
cpu_s(void)
{
	struct rusage	 ru;

	if (getrusage(RUSAGE_SELF, &ru) == -1)
		return 0;
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static long
rss_kb(void)
{
	char	 line[256];
	long	 kb = -1;
	FILE	*f;

	if ((f = fopen("/proc/self/status", "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void
h_setup(void)
{
	H.base = event_base_new();
	ck_assert_ptr_nonnull(H.base);
	H.up = upstream_new(H.base);
	ck_assert_ptr_nonnull(H.up);
	H.pending = 0;
	H.timed_out = 0;
}

static void
h_teardown(void)
{
	upstream_free(H.up);
	event_base_free(H.base);
}

static void
h_guard(evutil_socket_t fd, short events, void *arg)
{
	H.timed_out = 1;
}

static void
h_run(void)
{
	struct timeval	 tv = { LOOP_LIMIT_S, 0 };
	struct event	*guard;

	guard = evtimer_new(H.base, h_guard, NULL);
	ck_assert_ptr_nonnull(guard);
	ck_assert_int_eq(evtimer_add(guard, &tv), 0);
	while (H.pending > 0 && !H.timed_out)
		if (event_base_loop(H.base, EVLOOP_ONCE) != 0)
			break;
	event_free(guard);
	ck_assert_msg(!H.timed_out, "calls pending after %d s", LOOP_LIMIT_S);
	ck_assert_int_eq(H.pending, 0);
}

/* Turn the loop a while longer, for callbacks that should not come. */
static void
h_quiet(int ms)
{
	struct timeval	 tv = { 0, ms * 1000 };

	ck_assert_int_eq(event_base_loopexit(H.base, &tv), 0);
	ck_assert_int_ne(event_base_dispatch(H.base), -1);
}

/* Nothing left registered: no socket, no timer. */
static void
h_assert_idle(void)
{
	ck_assert_int_eq(event_base_loop(H.base, EVLOOP_NONBLOCK), 1);
}

static unsigned char
pat(size_t off)
{
	unsigned int	 i = off & 0xffff;

	return ((i & 255) ^ ((i >> 8) * 7)) & 255;
}

/* One call: what the callbacks saw, and what they are told to do. */
struct tcall {
	struct up_call	*call;
	int		 nhead;
	int		 ndata;
	int		 nend;
	long		 status;
	char		 hdrs[8192];	/* "name: value\n" each */
	size_t		 nhdrs;
	unsigned char	*body;
	size_t		 body_len;
	size_t		 keep;		/* body bytes kept, at most */
	size_t		 total;
	size_t		 bad_bytes;
	enum up_result	 result;
	char		 detail[256];
	int		 os_errno;
	uint64_t	 t_start;
	uint64_t	 t_first;
	uint64_t	 t_end;
	long		 rss_max;
	int		 data_while_paused;
	int		 after_cancel;

	int		 check_pattern;
	int		 head_ret;
	int		 cancel_in_head;
	int		 cancel_at;	/* inside this on_data, 1-based */
	int		 fail_at;
	int		 pause_every;
	int		 pause_ms;
	int		 long_pause_at;
	int		 long_pause_ms;
	int		 resume_inline;
	void		(*hook)(struct tcall *);
	void		(*end_hook)(struct tcall *, struct up_call *);

	int		 paused;
	int		 cancelled;
	struct event	*resume_ev;
};

static void
tc_cancel(struct tcall *tc)
{
	if (tc->resume_ev != NULL)
		event_del(tc->resume_ev);
	upstream_cancel(tc->call);
	tc->cancelled = 1;
	tc->call = NULL;
	H.pending--;
}

static void
tc_free(struct tcall *tc)
{
	if (tc->resume_ev != NULL)
		event_free(tc->resume_ev);
	free(tc->body);
	tc->body = NULL;
	tc->resume_ev = NULL;
}

static int
tc_head(struct up_call *c, long status, const struct up_hdr *h, size_t n,
    void *arg)
{
	struct tcall	*tc = arg;
	size_t		 i, off = 0;
	int		 w;

	if (tc->cancelled) {
		tc->after_cancel++;
		return -1;
	}
	ck_assert_ptr_eq(c, tc->call);
	tc->nhead++;
	tc->status = status;
	tc->nhdrs = n;
	for (i = 0; i < n; i++) {
		w = snprintf(tc->hdrs + off, sizeof(tc->hdrs) - off, "%s: %s\n",
		    h[i].name, h[i].value);
		if (w < 0 || (size_t)w >= sizeof(tc->hdrs) - off)
			break;
		off += w;
	}
	if (tc->cancel_in_head) {
		tc_cancel(tc);
		return 0;
	}
	return tc->head_ret;
}

static void
tc_resume(evutil_socket_t fd, short events, void *arg)
{
	struct tcall	*tc = arg;

	tc->paused = 0;
	upstream_resume(tc->call);
}

static int
tc_pause(struct tcall *tc, int ms)
{
	struct timeval	 tv = { ms / 1000, (ms % 1000) * 1000 };

	if (tc->resume_ev == NULL) {
		tc->resume_ev = evtimer_new(H.base, tc_resume, tc);
		ck_assert_ptr_nonnull(tc->resume_ev);
	}
	tc->paused = 1;
	ck_assert_int_eq(evtimer_add(tc->resume_ev, &tv), 0);
	return UP_PAUSE;
}

static int
tc_data(struct up_call *c, const void *buf, size_t len, void *arg)
{
	struct tcall		*tc = arg;
	const unsigned char	*p = buf;
	size_t			 i, k;
	long			 rss;

	if (tc->cancelled) {
		tc->after_cancel++;
		return -1;
	}
	ck_assert_ptr_eq(c, tc->call);
	ck_assert_uint_gt(len, 0);
	ck_assert_int_eq(tc->nhead, 1);
	if (tc->paused)
		tc->data_while_paused++;
	if (tc->ndata++ == 0)
		tc->t_first = now_ns();
	if (tc->check_pattern)
		for (i = 0; i < len; i++)
			if (p[i] != pat(tc->total + i))
				tc->bad_bytes++;
	if (tc->body_len < tc->keep) {
		k = tc->keep - tc->body_len < len ? tc->keep - tc->body_len :
		    len;
		if (tc->body == NULL) {
			tc->body = malloc(tc->keep + 1);
			ck_assert_ptr_nonnull(tc->body);
		}
		memcpy(tc->body + tc->body_len, p, k);
		tc->body_len += k;
		tc->body[tc->body_len] = '\0';
	}
	tc->total += len;
	if (tc->ndata % 64 == 0 && (rss = rss_kb()) > tc->rss_max)
		tc->rss_max = rss;
	if (tc->hook != NULL) {
		tc->hook(tc);
		tc->hook = NULL;
	}
	if (tc->ndata == tc->cancel_at) {
		tc_cancel(tc);
		return 0;
	}
	if (tc->ndata == tc->fail_at)
		return -1;
	if (tc->resume_inline) {
		upstream_resume(tc->call);
		return UP_PAUSE;
	}
	if (tc->long_pause_at > 0 && tc->ndata % tc->long_pause_at == 0)
		return tc_pause(tc, tc->long_pause_ms);
	if (tc->pause_every)
		return tc_pause(tc, tc->pause_ms);
	return 0;
}

static void
tc_end(struct up_call *c, enum up_result r, const char *detail, void *arg)
{
	struct tcall	*tc = arg;

	if (tc->cancelled) {
		tc->after_cancel++;
		return;
	}
	ck_assert_ptr_eq(c, tc->call);
	ck_assert_ptr_nonnull(detail);
	tc->nend++;
	tc->result = r;
	snprintf(tc->detail, sizeof(tc->detail), "%s", detail);
	tc->os_errno = upstream_os_errno(c);
	tc->t_end = now_ns();
	tc->call = NULL;
	H.pending--;
	if (tc->end_hook != NULL)
		tc->end_hook(tc, c);
}

static const struct up_callbacks tc_cb = { tc_head, tc_data, tc_end, NULL };

/* A request with its URL; TLS to the test server unless changed. */
struct treq {
	struct up_request	 r;
	char			 url[256];
};

static struct up_request *
treq(struct treq *q, int tls, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static struct up_request *
treq(struct treq *q, int tls, const char *fmt, ...)
{
	char	 path[200];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	memset(&q->r, 0, sizeof(q->r));
	snprintf(q->url, sizeof(q->url), "%s://127.0.0.1:%d%s",
	    tls ? "https" : "http", tls ? tls_port : plain_port, path);
	q->r.url = q->url;
	q->r.ca_file = ca_pem;
	q->r.connect_timeout_ms = 5000;
	return &q->r;
}

static struct up_call *
tc_start(struct tcall *tc, const struct up_request *r)
{
	tc->t_start = now_ns();
	if (tc->keep == 0)
		tc->keep = 65536;
	tc->call = upstream_call(H.up, r, &tc_cb, tc);
	if (tc->call != NULL)
		H.pending++;
	return tc->call;
}

static void
tc_assert_ok(struct tcall *tc)
{
	ck_assert_msg(tc->nend == 1 && tc->result == UP_OK,
	    "nend %d result %s (%s)", tc->nend,
	    up_result_to_string(tc->result), tc->detail);
}

static void
tc_assert_fail(struct tcall *tc, enum up_result want)
{
	ck_assert_msg(tc->nend == 1 && tc->result == want,
	    "nend %d result %s (%s), want %s", tc->nend,
	    up_result_to_string(tc->result), tc->detail,
	    up_result_to_string(want));
	ck_assert_str_ne(tc->detail, "");
}

/* tc->hdrs holds the line "name: value". */
static int
tc_has_hdr(const struct tcall *tc, const char *line)
{
	const char	*p = tc->hdrs;
	size_t		 len = strlen(line);

	for (;;) {
		if (strncmp(p, line, len) == 0 && p[len] == '\n')
			return 1;
		if ((p = strchr(p, '\n')) == NULL || *++p == '\0')
			return 0;
	}
}

/* What /echo saw: "M method path", "H name: value" lines, "B len", body. */
struct echo {
	char			 method[256];
	char			 hdr[32][512];
	int			 nhdr;
	const unsigned char	*body;
	size_t			 body_len;
};

static void
echo_parse(const struct tcall *tc, struct echo *e)
{
	const char	*p = (const char *)tc->body, *end, *nl;
	size_t		 n;

	ck_assert_ptr_nonnull(p);
	end = p + tc->body_len;
	memset(e, 0, sizeof(*e));
	while (p < end) {
		ck_assert_ptr_nonnull(nl = memchr(p, '\n', end - p));
		n = nl - p;
		if (n > 2 && p[0] == 'B' && p[1] == ' ') {
			e->body = (const unsigned char *)nl + 1;
			e->body_len = end - (nl + 1);
			ck_assert_uint_eq(strtoul(p + 2, NULL, 10),
			    e->body_len);
			return;
		}
		if (p[0] == 'M') {
			ck_assert_uint_lt(n, sizeof(e->method));
			memcpy(e->method, p, n);
		} else {
			ck_assert_int_lt(e->nhdr, 32);
			ck_assert_uint_lt(n, sizeof(e->hdr[0]));
			memcpy(e->hdr[e->nhdr++], p, n);
		}
		p = nl + 1;
	}
	ck_abort_msg("echo without a body line");
}

static int
echo_count(const struct echo *e, const char *line)
{
	int	 i, n = 0;

	for (i = 0; i < e->nhdr; i++)
		if (strcmp(e->hdr[i], line) == 0)
			n++;
	return n;
}

/* Prefix match on the header name, case-insensitive. */
static int
echo_count_name(const struct echo *e, const char *name)
{
	size_t	 len = strlen(name);
	int	 i, n = 0;

	for (i = 0; i < e->nhdr; i++)
		if (strncasecmp(e->hdr[i] + 2, name, len) == 0 &&
		    e->hdr[i][2 + len] == ':')
			n++;
	return n;
}

/*
 * Plain answers.
 */

START_TEST(test_json)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/json")));
	h_run();
	tc_assert_ok(&tc);
	ck_assert_str_eq(tc.detail, "ok");
	ck_assert_int_eq(tc.nhead, 1);
	ck_assert_int_eq(tc.status, 200);
	ck_assert(tc_has_hdr(&tc, "content-type: application/json"));
	/* Names lowercased, values trimmed of spaces and tabs. */
	ck_assert(tc_has_hdr(&tc, "x-mixed-case: spaced value"));
	ck_assert(tc_has_hdr(&tc, "request-id: req_1"));
	ck_assert(tc_has_hdr(&tc, "content-length: 11"));
	ck_assert_uint_eq(tc.body_len, 11);
	ck_assert_str_eq((char *)tc.body, "{\"ok\":true}");
	ck_assert_int_eq(tc.after_cancel, 0);
	tc_free(&tc);
}
END_TEST

START_TEST(test_plain_http)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 0, "/json")));
	h_run();
	tc_assert_ok(&tc);
	ck_assert_int_eq(tc.status, 200);
	ck_assert_str_eq((char *)tc.body, "{\"ok\":true}");
	tc_free(&tc);
}
END_TEST

START_TEST(test_error_status_passes)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/status?code=529")));
	h_run();
	tc_assert_ok(&tc);
	ck_assert_int_eq(tc.status, 529);
	ck_assert_str_eq((char *)tc.body, "{\"type\":\"error\"}");
	tc_free(&tc);
}
END_TEST

START_TEST(test_redirect_not_followed)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/redirect")));
	h_run();
	tc_assert_ok(&tc);
	ck_assert_int_eq(tc.nhead, 1);
	ck_assert_int_eq(tc.status, 302);
	ck_assert(tc_has_hdr(&tc, "location: /json"));
	ck_assert_str_eq((char *)tc.body, "moved");
	tc_free(&tc);
}
END_TEST

START_TEST(test_interim_1xx_dropped)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/early")));
	h_run();
	tc_assert_ok(&tc);
	ck_assert_int_eq(tc.nhead, 1);
	ck_assert_int_eq(tc.status, 200);
	ck_assert(strstr(tc.hdrs, "link:") == NULL);
	ck_assert_str_eq((char *)tc.body, "{\"early\":false}");
	tc_free(&tc);
}
END_TEST

START_TEST(test_folded_header)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/folded")));
	h_run();
	tc_assert_ok(&tc);
	ck_assert(tc_has_hdr(&tc, "x-fold: first second"));
	ck_assert(tc_has_hdr(&tc, "x-fold-empty: later"));
	ck_assert_str_eq((char *)tc.body, "ok");
	tc_free(&tc);
}
END_TEST

/* UP_RESP_HDRS_MAX lines pass, one more fails.  The server adds Server,
 * Date, Content-Type and Content-Length to the X-H-n lines. */
START_TEST(test_header_count_limit)
{
	struct tcall	 at = { 0 }, past = { 0 };
	struct treq	 q;

	ck_assert_ptr_nonnull(tc_start(&at,
	    treq(&q, 1, "/headers?n=%d", UP_RESP_HDRS_MAX - 4)));
	ck_assert_ptr_nonnull(tc_start(&past,
	    treq(&q, 1, "/headers?n=%d", UP_RESP_HDRS_MAX - 3)));
	h_run();
	tc_assert_ok(&at);
	ck_assert_uint_eq(at.nhdrs, UP_RESP_HDRS_MAX);
	tc_assert_fail(&past, UP_PROTOCOL);
	ck_assert_int_eq(past.nhead, 0);
	tc_free(&at);
	tc_free(&past);
}
END_TEST

/* UP_RESP_HDR_BYTES_MAX counts each name and value plus one: here
 * "x-big" and "content-length" and "2", 24 bytes besides the value. */
START_TEST(test_header_bytes_limit)
{
	struct tcall	 at = { 0 }, past = { 0 };
	struct treq	 q;

	ck_assert_ptr_nonnull(tc_start(&at,
	    treq(&q, 1, "/hbytes?n=%d", UP_RESP_HDR_BYTES_MAX - 24)));
	ck_assert_ptr_nonnull(tc_start(&past,
	    treq(&q, 1, "/hbytes?n=%d", UP_RESP_HDR_BYTES_MAX - 23)));
	h_run();
	tc_assert_ok(&at);
	ck_assert_uint_eq(at.nhdrs, 2);
	ck_assert_str_eq((char *)at.body, "ok");
	tc_assert_fail(&past, UP_PROTOCOL);
	ck_assert_int_eq(past.nhead, 0);
	tc_free(&at);
	tc_free(&past);
}
END_TEST

/* Header blocks upstream.c refuses; a 101 nobody asked for. */
START_TEST(test_malformed_answers)
{
	static const char *const cases[] = {
		"nocolon", "foldfirst", "nul", "switch",
	};
	struct tcall	 tc[4] = { { 0 } };
	struct treq	 q;
	int		 i;

	for (i = 0; i < 4; i++)
		ck_assert_ptr_nonnull(tc_start(&tc[i],
		    treq(&q, 1, "/raw?case=%s", cases[i])));
	h_run();
	for (i = 0; i < 4; i++) {
		tc_assert_fail(&tc[i], UP_PROTOCOL);
		ck_assert_int_eq(tc[i].nhead + tc[i].ndata, 0);
		printf("malformed %s: %s\n", cases[i], tc[i].detail);
	}
}
END_TEST

/*
 * The request exactly as given.
 */

START_TEST(test_request_post_exact)
{
	static const struct up_hdr hdrs[] = {
		{ "content-type", "application/json" },
		{ "anthropic-version", "2023-06-01" },
		{ "x-app", "cli" },
		{ "x-empty", "" },
		{ "authorization", "Bearer sk-test-credential" },
		{ "x-tab", "a\tb" },
	};
	struct tcall	 tc = { 0 };
	struct treq	 q;
	struct echo	 e;
	struct up_request *r;
	unsigned char	*body;
	char		 line[128];
	size_t		 i, len = 3 * MIB_BYTES / 2 + 7;

	/* Past 1 MiB, where some clients ask "Expect: 100-continue", and
	 * past what goes out with the head in one write. */
	ck_assert_ptr_nonnull(body = malloc(len));
	for (i = 0; i < len; i++)
		body[i] = pat(i * 13);
	r = treq(&q, 1, "/echo");
	r->hdrs = hdrs;
	r->nhdrs = sizeof(hdrs) / sizeof(hdrs[0]);
	r->body = body;
	r->body_len = len;
	tc.keep = len + 4096;
	ck_assert_ptr_nonnull(tc_start(&tc, r));
	h_run();
	tc_assert_ok(&tc);
	echo_parse(&tc, &e);
	ck_assert_str_eq(e.method, "M POST /echo");
	snprintf(line, sizeof(line), "H Host: 127.0.0.1:%d", tls_port);
	ck_assert_int_eq(echo_count(&e, line), 1);
	snprintf(line, sizeof(line), "H Content-Length: %zu", len);
	ck_assert_int_eq(echo_count(&e, line), 1);
	ck_assert_int_eq(echo_count(&e, "H content-type: application/json"),
	    1);
	ck_assert_int_eq(echo_count(&e, "H anthropic-version: 2023-06-01"), 1);
	ck_assert_int_eq(echo_count(&e, "H x-app: cli"), 1);
	ck_assert_int_eq(echo_count(&e, "H x-empty: "), 1);
	ck_assert_int_eq(echo_count(&e,
	    "H authorization: Bearer sk-test-credential"), 1);
	ck_assert_int_eq(echo_count(&e, "H x-tab: a\tb"), 1);
	/* Nothing else: no Expect, Accept, Accept-Encoding, User-Agent. */
	ck_assert_int_eq(e.nhdr, 8);
	ck_assert_int_eq(echo_count_name(&e, "expect"), 0);
	ck_assert_int_eq(echo_count_name(&e, "accept"), 0);
	ck_assert_int_eq(echo_count_name(&e, "accept-encoding"), 0);
	ck_assert_uint_eq(e.body_len, len);
	ck_assert(memcmp(e.body, body, len) == 0);
	free(body);
	tc_free(&tc);
}
END_TEST

/*
 * Bytes that arrive while the request is still going out (interim answers
 * here, a TLS 1.3 session ticket in life) are read, and the socket written
 * then too: the rest of the request goes on after that write, whoever made
 * it.  The server reads the body a piece at a time and answers each piece.
 */
START_TEST(test_request_with_answers_meanwhile)
{
	struct tcall	 tc;
	struct treq	 q;
	struct up_request *r;
	unsigned char	*body;
	char		 want[64];
	size_t		 len = 8 * MIB_BYTES;
	int		 i;

	ck_assert_ptr_nonnull(body = malloc(len));
	memset(body, 'x', len);
	for (i = 0; i < 6; i++) {
		memset(&tc, 0, sizeof(tc));
		r = treq(&q, i % 2 == 0, "/trickle");
		r->body = body;
		r->body_len = len;
		tc.keep = 64;
		ck_assert_ptr_nonnull(tc_start(&tc, r));
		h_run();
		tc_assert_ok(&tc);
		snprintf(want, sizeof(want), "B %zu", len);
		ck_assert_uint_eq(tc.body_len, strlen(want));
		ck_assert(memcmp(tc.body, want, tc.body_len) == 0);
		tc_free(&tc);
	}
	free(body);
}
END_TEST

START_TEST(test_request_get_bare)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;
	struct echo	 e;
	char		 line[128];

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/echo?x=1")));
	h_run();
	tc_assert_ok(&tc);
	echo_parse(&tc, &e);
	ck_assert_str_eq(e.method, "M GET /echo?x=1");
	snprintf(line, sizeof(line), "H Host: 127.0.0.1:%d", tls_port);
	ck_assert_int_eq(echo_count(&e, line), 1);
	ck_assert_int_eq(e.nhdr, 1);
	ck_assert_uint_eq(e.body_len, 0);
	tc_free(&tc);
}
END_TEST

START_TEST(test_request_accept_given)
{
	static const struct up_hdr hdrs[] = {
		{ "accept", "application/json, text/event-stream" },
		{ "accept-encoding", "identity" },
		{ "user-agent", "claude-cli/1.0" },
		{ "content-type", "application/json" },
	};
	struct tcall	 tc = { 0 };
	struct treq	 q;
	struct echo	 e;
	struct up_request *r;

	r = treq(&q, 1, "/echo");
	r->hdrs = hdrs;
	r->nhdrs = sizeof(hdrs) / sizeof(hdrs[0]);
	r->body = "{}";
	r->body_len = 2;
	ck_assert_ptr_nonnull(tc_start(&tc, r));
	h_run();
	tc_assert_ok(&tc);
	echo_parse(&tc, &e);
	ck_assert_int_eq(echo_count(&e,
	    "H accept: application/json, text/event-stream"), 1);
	ck_assert_int_eq(echo_count(&e, "H accept-encoding: identity"), 1);
	ck_assert_int_eq(echo_count(&e, "H user-agent: claude-cli/1.0"), 1);
	ck_assert_int_eq(echo_count(&e, "H content-type: application/json"),
	    1);
	ck_assert_int_eq(echo_count(&e, "H Content-Length: 2"), 1);
	ck_assert_int_eq(echo_count_name(&e, "accept"), 1);
	ck_assert_int_eq(echo_count_name(&e, "content-type"), 1);
	ck_assert_int_eq(e.nhdr, 6);
	ck_assert_uint_eq(e.body_len, 2);
	ck_assert(memcmp(e.body, "{}", 2) == 0);
	tc_free(&tc);
}
END_TEST

START_TEST(test_request_refused)
{
	static const struct up_hdr bad[] = {
		{ "x-inject", "a\r\nx-evil: 1" },
		{ "x-lf", "a\nb" },
		{ "x-cr", "a\rb" },
		{ "x-ctl", "a\001b" },
		{ "x-del", "a\177b" },
		{ "bad name", "v" },
		{ "bad:name", "v" },
		{ "", "v" },
		{ "Host", "evil.example" },
		{ "content-length", "5" },
		{ "Transfer-Encoding", "chunked" },
		{ "connection", "close" },
		{ "expect", "100-continue" },
		{ "te", "trailers" },
		{ "upgrade", "h2c" },
	};
	static const struct up_callbacks no_end = { tc_head, tc_data, NULL, NULL };
	struct tcall	 tc = { 0 };
	struct treq	 q;
	struct up_request *r;
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = treq(&q, 1, "/json");
		r->hdrs = &bad[i];
		r->nhdrs = 1;
		ck_assert_msg(tc_start(&tc, r) == NULL, "header %zu taken", i);
	}
	r = treq(&q, 1, "/json");
	r->body_len = 3;
	ck_assert_ptr_null(tc_start(&tc, r));
	r = treq(&q, 1, "/json");
	r->nhdrs = 1;
	ck_assert_ptr_null(tc_start(&tc, r));
	r = treq(&q, 1, "/json");
	r->url = NULL;
	ck_assert_ptr_null(tc_start(&tc, r));
	r = treq(&q, 1, "/json");
	r->connect_timeout_ms = -1;
	ck_assert_ptr_null(tc_start(&tc, r));
	r = treq(&q, 1, "/json");
	ck_assert_ptr_null(upstream_call(H.up, r, &no_end, &tc));
	ck_assert_int_eq(H.pending, 0);
	h_assert_idle();
	ck_assert_int_eq(tc.nhead + tc.ndata + tc.nend, 0);
}
END_TEST

/* A URL upstream.c refuses still ends through on_end, with no head. */
START_TEST(test_bad_urls)
{
	struct tcall	 scheme = { 0 }, userinfo = { 0 };
	struct treq	 q1, q2;
	struct up_request *r;

	r = treq(&q1, 1, "/json");
	snprintf(q1.url, sizeof(q1.url), "ftp://127.0.0.1:%d/", tls_port);
	ck_assert_ptr_nonnull(tc_start(&scheme, r));
	r = treq(&q2, 1, "/json");
	snprintf(q2.url, sizeof(q2.url), "https://user:pw@127.0.0.1:%d/json",
	    tls_port);
	ck_assert_ptr_nonnull(tc_start(&userinfo, r));
	h_run();
	tc_assert_fail(&scheme, UP_OTHER);
	tc_assert_fail(&userinfo, UP_OTHER);
	ck_assert_int_eq(scheme.nhead + userinfo.nhead, 0);
}
END_TEST

/*
 * Failures.
 */

START_TEST(test_untrusted_certificate)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;
	struct up_request *r;

	r = treq(&q, 1, "/json");
	r->ca_file = NULL;	/* the system bundle does not hold our CA */
	ck_assert_ptr_nonnull(tc_start(&tc, r));
	h_run();
	tc_assert_fail(&tc, UP_TLS_FAILED);
	ck_assert_int_eq(tc.nhead, 0);
	printf("untrusted certificate: %s\n", tc.detail);
}
END_TEST

START_TEST(test_wrong_host_name)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;
	struct up_request *r;

	/* The certificate names IP:127.0.0.1 only. */
	r = treq(&q, 1, "/json");
	snprintf(q.url, sizeof(q.url), "https://localhost:%d/json",
	    tls_port);
	ck_assert_ptr_nonnull(tc_start(&tc, r));
	h_run();
	tc_assert_fail(&tc, UP_TLS_FAILED);
	ck_assert_int_eq(tc.nhead, 0);
}
END_TEST

START_TEST(test_closed_port)
{
	struct sockaddr_in	 sin;
	socklen_t		 slen = sizeof(sin);
	struct tcall		 tc = { 0 };
	struct treq		 q;
	int			 fd, port;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ne(fd = socket(AF_INET, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &slen), 0);
	port = ntohs(sin.sin_port);
	close(fd);
	treq(&q, 1, "/json");
	snprintf(q.url, sizeof(q.url), "https://127.0.0.1:%d/json", port);
	ck_assert_ptr_nonnull(tc_start(&tc, &q.r));
	h_run();
	tc_assert_fail(&tc, UP_CONNECT_FAILED);
}
END_TEST

/* The kernel completes TCP into the backlog; TLS never answers. */
START_TEST(test_connect_timeout)
{
	struct sockaddr_in	 sin;
	socklen_t		 slen = sizeof(sin);
	struct tcall		 tc = { 0 };
	struct treq		 q;
	int			 fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ne(fd = socket(AF_INET, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(fd, 4), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &slen), 0);
	treq(&q, 1, "/json");
	snprintf(q.url, sizeof(q.url), "https://127.0.0.1:%d/json",
	    ntohs(sin.sin_port));
	q.r.connect_timeout_ms = 300;
	ck_assert_ptr_nonnull(tc_start(&tc, &q.r));
	h_run();
	tc_assert_fail(&tc, UP_TIMEOUT);
	printf("connect timeout 300 ms: ended after %.0f ms\n",
	    (tc.t_end - tc.t_start) / 1e6);
	close(fd);
}
END_TEST

/*
 * A pinned address: the connection goes there and nowhere else, while the
 * Host header and the certificate check keep the URL's name.
 */

static struct sockaddr_in
pin_addr(const char *ip, int port)
{
	struct sockaddr_in	 sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	ck_assert_int_eq(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
	return sin;
}

START_TEST(test_pinned_address)
{
	struct tcall		 tc = { 0 }, tls = { 0 }, ref = { 0 };
	struct treq		 q1, q2, q3;
	struct sockaddr_in	 a1, a2, a3;
	struct echo		 e;
	char			 line[128];

	/* No name lookup: pinned.invalid does not resolve. */
	treq(&q1, 0, "/echo");
	snprintf(q1.url, sizeof(q1.url), "http://pinned.invalid:%d/echo",
	    plain_port);
	a1 = pin_addr("127.0.0.1", plain_port);
	q1.r.connect_addr = (struct sockaddr *)&a1;
	q1.r.connect_addr_len = sizeof(a1);
	ck_assert_ptr_nonnull(tc_start(&tc, &q1.r));
	/* The certificate names 127.0.0.1, not the URL's host. */
	treq(&q2, 1, "/json");
	snprintf(q2.url, sizeof(q2.url), "https://pinned.invalid:%d/json",
	    tls_port);
	a2 = pin_addr("127.0.0.1", tls_port);
	q2.r.connect_addr = (struct sockaddr *)&a2;
	q2.r.connect_addr_len = sizeof(a2);
	ck_assert_ptr_nonnull(tc_start(&tls, &q2.r));
	/* Pinned where nothing listens: refused, even though the URL's own
	 * address would answer. */
	treq(&q3, 0, "/json");
	a3 = pin_addr("127.0.0.2", plain_port);
	q3.r.connect_addr = (struct sockaddr *)&a3;
	q3.r.connect_addr_len = sizeof(a3);
	ck_assert_ptr_nonnull(tc_start(&ref, &q3.r));
	h_run();
	tc_assert_ok(&tc);
	echo_parse(&tc, &e);
	snprintf(line, sizeof(line), "H Host: pinned.invalid:%d", plain_port);
	ck_assert_int_eq(echo_count(&e, line), 1);
	tc_free(&tc);
	tc_assert_fail(&tls, UP_TLS_FAILED);
	tc_assert_fail(&ref, UP_CONNECT_FAILED);
	ck_assert_int_eq(ref.os_errno, ECONNREFUSED);
}
END_TEST

START_TEST(test_pinned_address_refused)
{
	struct tcall		 tc = { 0 };
	struct treq		 q;
	struct sockaddr_in	 sin = pin_addr("127.0.0.1", plain_port);
	struct sockaddr_in	 noport = pin_addr("127.0.0.1", 0);
	struct sockaddr		 unix_sa;

	treq(&q, 0, "/json");
	q.r.connect_addr = (struct sockaddr *)&sin;
	q.r.connect_addr_len = sizeof(sin) - 1;
	ck_assert_ptr_null(tc_start(&tc, &q.r));
	q.r.connect_addr = (struct sockaddr *)&noport;
	q.r.connect_addr_len = sizeof(noport);
	ck_assert_ptr_null(tc_start(&tc, &q.r));
	memset(&unix_sa, 0, sizeof(unix_sa));
	unix_sa.sa_family = AF_UNIX;
	q.r.connect_addr = &unix_sa;
	q.r.connect_addr_len = sizeof(unix_sa);
	ck_assert_ptr_null(tc_start(&tc, &q.r));
	ck_assert_int_eq(H.pending, 0);
}
END_TEST

/*
 * Body limits: at the limit and one past, with a Content-Length (refused
 * before any body byte) and chunked (counted as it comes).
 */

START_TEST(test_max_body)
{
	struct tcall	 tc[4] = { { 0 } };
	struct treq	 q;
	struct up_request *r;
	int		 i;

	for (i = 0; i < 4; i++) {
		r = treq(&q, 1, "/%s?n=100000", i < 2 ? "big" : "chunked");
		r->max_body = i % 2 == 0 ? 100000 : 99999;
		tc[i].check_pattern = 1;
		ck_assert_ptr_nonnull(tc_start(&tc[i], r));
	}
	h_run();
	tc_assert_ok(&tc[0]);
	ck_assert_uint_eq(tc[0].total, 100000);
	tc_assert_fail(&tc[1], UP_TOO_LARGE);
	ck_assert_int_eq(tc[1].ndata, 0);
	tc_assert_ok(&tc[2]);
	ck_assert_uint_eq(tc[2].total, 100000);
	tc_assert_fail(&tc[3], UP_TOO_LARGE);
	ck_assert_uint_le(tc[3].total, 99999);
	for (i = 0; i < 4; i++) {
		ck_assert_uint_eq(tc[i].bad_bytes, 0);
		tc_free(&tc[i]);
	}
}
END_TEST

/*
 * Streaming and back-pressure.
 */

START_TEST(test_sse_streams)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;
	unsigned long long ts_last = 0, ts;
	const char	*p;
	int		 seq, n = 0;

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/sse?n=5&ms=200")));
	h_run();
	tc_assert_ok(&tc);
	ck_assert(tc_has_hdr(&tc, "content-type: text/event-stream"));
	for (p = (char *)tc.body; (p = strstr(p, "data: ")) != NULL; p++) {
		ck_assert_int_eq(sscanf(p, "data: %d %llu", &seq, &ts), 2);
		ck_assert_int_eq(seq, n);
		ts_last = ts;
		n++;
	}
	ck_assert_int_eq(n, 5);
	/* The first event was here before the server wrote the last. */
	ck_assert_uint_lt(tc.t_first, ts_last);
	ck_assert_int_ge(tc.ndata, 2);
	printf("sse: first event %.1f ms before the last was sent\n",
	    (ts_last - tc.t_first) / 1e6);
	tc_free(&tc);
}
END_TEST

/* Pause after every chunk, resumed by a timer; a few long pauses give the
 * server time to fill memory if pausing did not stop reading. */
START_TEST(test_backpressure_bounded)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;
	long		 before, after;
	double		 s;

	tc.check_pattern = 1;
	tc.pause_every = 1;
	tc.pause_ms = 0;
	tc.long_pause_at = 64;
	tc.long_pause_ms = 300;
	before = rss_kb();
	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/big?n=%u",
	    BIG_BYTES)));
	h_run();
	after = rss_kb();
	tc_assert_ok(&tc);
	ck_assert_uint_eq(tc.total, BIG_BYTES);
	ck_assert_uint_eq(tc.bad_bytes, 0);
	ck_assert_int_eq(tc.data_while_paused, 0);
	if (after > tc.rss_max)
		tc.rss_max = after;
	s = (tc.t_end - tc.t_start) / 1e9;
	printf("paused after each of %d chunks: %u MiB in %.2f s "
	    "(%.0f MiB/s with %d long pauses), RSS %ld -> max %ld kB\n",
	    tc.ndata, BIG_BYTES / MIB_BYTES, s, BIG_BYTES / MIB_BYTES / s,
	    tc.ndata / tc.long_pause_at, before, tc.rss_max);
	ck_assert_int_lt(tc.rss_max - before, RSS_GROWTH_KB);
	tc_free(&tc);
}
END_TEST

START_TEST(test_throughput)
{
	struct tcall	 tc[2] = { { 0 } };
	struct treq	 q;
	long		 before;
	double		 s, cpu;
	int		 i;

	before = rss_kb();
	for (i = 0; i < 2; i++) {
		cpu = cpu_s();
		ck_assert_ptr_nonnull(tc_start(&tc[i], treq(&q, 1,
		    "/big?n=%u", BIG_BYTES)));
		h_run();
		cpu = cpu_s() - cpu;
		tc_assert_ok(&tc[i]);
		ck_assert_uint_eq(tc[i].total, BIG_BYTES);
		s = (tc[i].t_end - tc[i].t_start) / 1e9;
		printf("throughput, %s connection: %u MiB in %.3f s = "
		    "%.0f MiB/s, %.2f CPU s/GiB, %d on_data calls, "
		    "RSS +%ld kB\n", i == 0 ? "new" : "reused",
		    BIG_BYTES / MIB_BYTES, s, BIG_BYTES / MIB_BYTES / s,
		    cpu * 1024 / (BIG_BYTES / MIB_BYTES), tc[i].ndata,
		    tc[i].rss_max - before);
		ck_assert_int_lt(tc[i].rss_max - before, RSS_GROWTH_KB);
		tc_free(&tc[i]);
	}
}
END_TEST

/* upstream_resume() inside on_data, then UP_PAUSE: paused and resumed. */
START_TEST(test_resume_inside_data)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	tc.check_pattern = 1;
	tc.resume_inline = 1;
	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/big?n=%u",
	    4 * MIB_BYTES)));
	h_run();
	tc_assert_ok(&tc);
	ck_assert_uint_eq(tc.total, 4 * MIB_BYTES);
	ck_assert_uint_eq(tc.bad_bytes, 0);
	tc_free(&tc);
}
END_TEST

START_TEST(test_resume_chunked)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	tc.check_pattern = 1;
	tc.pause_every = 1;
	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/chunked?n=%u",
	    4 * MIB_BYTES + 123)));
	h_run();
	tc_assert_ok(&tc);
	ck_assert_uint_eq(tc.total, 4 * MIB_BYTES + 123);
	ck_assert_uint_eq(tc.bad_bytes, 0);
	ck_assert_int_eq(tc.data_while_paused, 0);
	tc_free(&tc);
}
END_TEST

/*
 * Cancelling and aborting.
 */

static void
cancel_cb(evutil_socket_t fd, short events, void *arg)
{
	tc_cancel(arg);
}

START_TEST(test_stall_cancel)
{
	struct timeval	 tv = { 0, 300000 };
	struct tcall	 tc = { 0 };
	struct treq	 q;
	struct event	*ev;

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/stall")));
	ev = evtimer_new(H.base, cancel_cb, &tc);
	ck_assert_int_eq(evtimer_add(ev, &tv), 0);
	h_run();
	event_free(ev);
	h_quiet(200);
	ck_assert_int_eq(tc.nhead + tc.ndata + tc.nend + tc.after_cancel, 0);
	h_assert_idle();
}
END_TEST

START_TEST(test_cancel_before_loop)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/json")));
	tc_cancel(&tc);
	h_assert_idle();
	ck_assert_int_eq(tc.nhead + tc.ndata + tc.nend, 0);
}
END_TEST

/* After a cancel the multi handle still serves new calls. */
static void
then_json(void)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/json")));
	h_run();
	tc_assert_ok(&tc);
	ck_assert_str_eq((char *)tc.body, "{\"ok\":true}");
	tc_free(&tc);
}

START_TEST(test_cancel_inside_data)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	tc.cancel_at = 3;
	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/big?n=%u",
	    BIG_BYTES)));
	h_run();
	h_quiet(200);
	ck_assert_int_eq(tc.ndata, 3);
	ck_assert_int_eq(tc.nend + tc.after_cancel, 0);
	tc_free(&tc);
	then_json();
}
END_TEST

START_TEST(test_cancel_inside_head)
{
	struct tcall	 tc = { 0 };
	struct treq	 q;

	tc.cancel_in_head = 1;
	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/big?n=%u",
	    BIG_BYTES)));
	h_run();
	h_quiet(200);
	ck_assert_int_eq(tc.nhead, 1);
	ck_assert_int_eq(tc.ndata + tc.nend + tc.after_cancel, 0);
	then_json();
}
END_TEST

START_TEST(test_cancel_while_paused)
{
	struct timeval	 tv = { 0, 200000 };
	struct tcall	 tc = { 0 };
	struct treq	 q;
	struct event	*ev;

	tc.pause_every = 1;
	tc.pause_ms = 1000;
	ck_assert_ptr_nonnull(tc_start(&tc, treq(&q, 1, "/big?n=%u",
	    BIG_BYTES)));
	ev = evtimer_new(H.base, cancel_cb, &tc);
	ck_assert_int_eq(evtimer_add(ev, &tv), 0);
	h_run();
	event_free(ev);
	h_quiet(200);
	ck_assert_int_eq(tc.ndata, 1);
	ck_assert_int_eq(tc.nend + tc.after_cancel, 0);
	tc_free(&tc);
	then_json();
}
END_TEST

START_TEST(test_abort_from_callbacks)
{
	struct tcall	 head = { 0 }, data = { 0 };
	struct treq	 q;

	head.head_ret = -1;
	data.fail_at = 2;
	ck_assert_ptr_nonnull(tc_start(&head, treq(&q, 1, "/big?n=%u",
	    BIG_BYTES)));
	ck_assert_ptr_nonnull(tc_start(&data, treq(&q, 1, "/big?n=%u",
	    BIG_BYTES)));
	h_run();
	tc_assert_fail(&head, UP_ABORTED);
	ck_assert_int_eq(head.ndata, 0);
	tc_assert_fail(&data, UP_ABORTED);
	ck_assert_int_eq(data.ndata, 2);
	tc_free(&head);
	tc_free(&data);
}
END_TEST

/* Inside one call's on_data: cancel another call and start a third. */
static struct tcall	 cross_b, cross_c;
static struct treq	 cross_q;

static void
cross_hook(struct tcall *tc)
{
	tc_cancel(&cross_b);
	ck_assert_ptr_nonnull(tc_start(&cross_c, treq(&cross_q, 1, "/json")));
}

START_TEST(test_cross_call_reentry)
{
	struct tcall	 a = { 0 };
	struct treq	 qa, qb;

	memset(&cross_b, 0, sizeof(cross_b));
	memset(&cross_c, 0, sizeof(cross_c));
	ck_assert_ptr_nonnull(tc_start(&cross_b, treq(&qb, 1, "/stall")));
	a.hook = cross_hook;
	a.check_pattern = 1;
	ck_assert_ptr_nonnull(tc_start(&a, treq(&qa, 1, "/big?n=%u",
	    8 * MIB_BYTES)));
	h_run();
	tc_assert_ok(&a);
	ck_assert_uint_eq(a.total, 8 * MIB_BYTES);
	ck_assert_uint_eq(a.bad_bytes, 0);
	ck_assert_int_eq(cross_b.nhead + cross_b.nend + cross_b.after_cancel,
	    0);
	tc_assert_ok(&cross_c);
	ck_assert_str_eq((char *)cross_c.body, "{\"ok\":true}");
	tc_free(&a);
	tc_free(&cross_c);
}
END_TEST

/* Inside on_end: cancel and resume on the ending call do nothing, and a
 * new call starts. */
static struct tcall	 chain_b;
static struct treq	 chain_q;

static void
chain_end(struct tcall *tc, struct up_call *c)
{
	upstream_cancel(c);
	upstream_resume(c);
	ck_assert_ptr_nonnull(tc_start(&chain_b, treq(&chain_q, 1, "/json")));
}

START_TEST(test_calls_from_on_end)
{
	struct tcall	 a = { 0 };
	struct treq	 q;

	memset(&chain_b, 0, sizeof(chain_b));
	a.end_hook = chain_end;
	ck_assert_ptr_nonnull(tc_start(&a, treq(&q, 1, "/json")));
	h_run();
	tc_assert_ok(&a);
	tc_assert_ok(&chain_b);
	ck_assert_str_eq((char *)chain_b.body, "{\"ok\":true}");
	tc_free(&a);
	tc_free(&chain_b);
}
END_TEST

/* upstream_free() with a call paused and one waiting: no callback, no
 * leak (the sanitizer build checks). */
START_TEST(test_free_with_live_calls)
{
	struct tcall	 paused = { 0 }, stalled = { 0 };
	struct treq	 q;

	paused.pause_every = 1;
	paused.pause_ms = 10000;
	ck_assert_ptr_nonnull(tc_start(&paused, treq(&q, 1, "/big?n=%u",
	    BIG_BYTES)));
	ck_assert_ptr_nonnull(tc_start(&stalled, treq(&q, 1, "/stall")));
	h_quiet(500);
	ck_assert_int_eq(paused.ndata, 1);
	ck_assert_int_eq(paused.nend + stalled.nhead + stalled.nend, 0);
	upstream_free(H.up);
	H.up = upstream_new(H.base);
	h_quiet(100);
	ck_assert_int_eq(paused.ndata, 1);
	ck_assert_int_eq(paused.nend + stalled.nend, 0);
	tc_free(&paused);
}
END_TEST

START_TEST(test_concurrent)
{
	enum { N = 32 };
	struct tcall	 tc[N];
	struct treq	 q[N];
	struct up_hdr	 hdr[N];
	struct echo	 e;
	char		 id[N][24], want[64];
	int		 i;

	memset(tc, 0, sizeof(tc));
	for (i = 0; i < N; i++) {
		snprintf(id[i], sizeof(id[i]), "call-%d", i);
		hdr[i].name = "x-id";
		hdr[i].value = id[i];
		treq(&q[i], 1, "/echo");
		q[i].r.hdrs = &hdr[i];
		q[i].r.nhdrs = 1;
		tc[i].pause_every = i % 2;
		ck_assert_ptr_nonnull(tc_start(&tc[i], &q[i].r));
	}
	h_run();
	for (i = 0; i < N; i++) {
		tc_assert_ok(&tc[i]);
		echo_parse(&tc[i], &e);
		snprintf(want, sizeof(want), "H x-id: call-%d", i);
		ck_assert_int_eq(echo_count(&e, want), 1);
		tc_free(&tc[i]);
	}
}
END_TEST

static Suite *
upstream_suite(void)
{
	Suite	*s = suite_create("upstream");
	TCase	*tc;

	tc = tcase_create("answers");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_plain_http);
	tcase_add_test(tc, test_error_status_passes);
	tcase_add_test(tc, test_redirect_not_followed);
	tcase_add_test(tc, test_interim_1xx_dropped);
	tcase_add_test(tc, test_folded_header);
	tcase_add_test(tc, test_header_count_limit);
	tcase_add_test(tc, test_header_bytes_limit);
	tcase_add_test(tc, test_malformed_answers);
	suite_add_tcase(s, tc);

	tc = tcase_create("request");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_request_post_exact);
	tcase_add_test(tc, test_request_with_answers_meanwhile);
	tcase_add_test(tc, test_request_get_bare);
	tcase_add_test(tc, test_request_accept_given);
	tcase_add_test(tc, test_request_refused);
	tcase_add_test(tc, test_bad_urls);
	suite_add_tcase(s, tc);

	tc = tcase_create("failures");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_untrusted_certificate);
	tcase_add_test(tc, test_wrong_host_name);
	tcase_add_test(tc, test_closed_port);
	tcase_add_test(tc, test_connect_timeout);
	tcase_add_test(tc, test_pinned_address);
	tcase_add_test(tc, test_pinned_address_refused);
	tcase_add_test(tc, test_max_body);
	suite_add_tcase(s, tc);

	tc = tcase_create("streaming");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sse_streams);
	tcase_add_test(tc, test_backpressure_bounded);
	tcase_add_test(tc, test_throughput);
	tcase_add_test(tc, test_resume_inside_data);
	tcase_add_test(tc, test_resume_chunked);
	tcase_add_test(tc, test_concurrent);
	suite_add_tcase(s, tc);

	tc = tcase_create("cancel");
	tcase_add_checked_fixture(tc, h_setup, h_teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_stall_cancel);
	tcase_add_test(tc, test_cancel_before_loop);
	tcase_add_test(tc, test_cancel_inside_data);
	tcase_add_test(tc, test_cancel_inside_head);
	tcase_add_test(tc, test_cancel_while_paused);
	tcase_add_test(tc, test_abort_from_callbacks);
	tcase_add_test(tc, test_cross_call_reentry);
	tcase_add_test(tc, test_calls_from_on_end);
	tcase_add_test(tc, test_free_with_live_calls);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	log_init("test_upstream", 0);
	signal(SIGPIPE, SIG_IGN);
	/* A proxy from the environment would break every call. */
	if (setenv("https_proxy", "http://127.0.0.1:9", 1) == -1 ||
	    setenv("http_proxy", "http://127.0.0.1:9", 1) == -1 ||
	    setenv("ALL_PROXY", "http://127.0.0.1:9", 1) == -1)
		die("setenv");
	server_start();
	sr = srunner_create(upstream_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	server_stop();
	return failed == 0 ? 0 : 1;
}
