/*
 * bench/hops.c -- the least two relaying processes can add to a small call
 * on this machine.
 *
 * A small model call through rtsandbox crosses two processes that a direct
 * keep-alive call does not: the channel's broker (a new Unix connection per
 * call, PROTOCOL.md 3) and egress (one frame each way on the socket pair
 * between them).  This program measures the same shape with nothing else in
 * it: fixed-size messages, blocking reads and writes, no parsing, no TLS, no
 * event loop unless -e asks for one.  What it prints as "added" is a floor:
 * no broker and egress that keep the split can add less on this host.
 *
 *   upstream  a TCP listener on loopback; a child per connection answers
 *             every REQ bytes read with RESP bytes (keep-alive);
 *   egress    reads REQ from the socket pair, writes it to its own
 *             keep-alive TCP connection to the upstream, reads RESP back and
 *             writes it to the socket pair: 4 system calls per call;
 *   broker    accepts a Unix connection, reads REQ, writes it to the socket
 *             pair, reads RESP, writes it to the client and closes: 6;
 *   client    this process: CALLS calls each way, interleaved, through the
 *             broker (socket, connect, write, read, close) and directly on
 *             its own keep-alive TCP connection to the upstream (write, read).
 *
 * With -e, broker and egress wait in epoll_wait(2) before every read, as
 * an event loop does, with the new connection added to its set: 4 more
 * system calls per call in the broker and 2 in egress.
 *
 * With -t, egress's connection to the upstream and the client's direct one
 * speak TLS 1.3, as rtsandbox's egress and its benchmarks' direct client
 * do (a key and certificate made at start, not verified; no session
 * tickets; one read a record): the same system calls, and the cost of
 * sealing and opening each message on top.  The relays still parse
 * nothing.
 *
 * With -l PATH -u PORT, the same two relays stand in front of another
 * program's client and upstream instead of this one's: the broker listens
 * on PATH, egress keeps one TLS 1.3 connection to the HTTPS upstream on
 * 127.0.0.1:PORT (-e and -t are implied; the certificate is not verified),
 * and each relays a message in one read, as a request written at once and
 * an answer written in one TLS record arrive.  hops prints
 * {"broker": PID, "egress": PID} and relays until its standard input ends.
 * bench/passthrough.py sends its small calls through them and through
 * rtsandbox's broker and egress in turn, and reads the four processes' CPU:
 * the floor in front of the very client and upstream the pair serves.
 *
 * usage: hops [-n CALLS] [-e] [-t] [-j] | hops -l PATH -u PORT
 *   -j prints one JSON object instead of the table, for bench/passthrough.py.
 */

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/* About what a tiny model call and its answer weigh on the wire. */
#define REQ	300
#define RESP	600
#define WARMUP	200
/* With -l: what one read may bring. */
#define MSG_MAX	65536

static int	 use_epoll;
static int	 in_place;	/* -l: a message is what one read brings */
static SSL_CTX	*srv_ctx;	/* with -t */
static SSL_CTX	*cli_ctx;

/* A connection: TLS on top of fd when ssl is not NULL. */
struct conn {
	int	 fd;
	SSL	*ssl;
};

/* n bytes, or with -l what the first read brings; the count read. */
static size_t
readn(struct conn *c, char *buf, size_t n)
{
	size_t	 got = 0;
	ssize_t	 r;

	while (got < n && (got == 0 || !in_place)) {
		if (c->ssl != NULL)
			r = SSL_read(c->ssl, buf + got, (int)(n - got));
		else
			r = read(c->fd, buf + got, n - got);
		if (r == -1 && c->ssl == NULL && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(r == 0 ? 0 : 1);
		got += (size_t)r;
	}
	return got;
}

static void
writen(struct conn *c, const char *buf, size_t n)
{
	size_t	 put = 0;
	ssize_t	 w;

	while (put < n) {
		if (c->ssl != NULL)
			w = SSL_write(c->ssl, buf + put, (int)(n - put));
		else
			w = write(c->fd, buf + put, n - put);
		if (w == -1 && c->ssl == NULL && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(1);
		put += (size_t)w;
	}
}

/* With -e: fd joins the event loop's set (a new connection, or once at start). */
static void
watch(int ep, int fd)
{
	struct epoll_event	 ev = { .events = EPOLLIN, .data.fd = fd };

	if (use_epoll && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) == -1)
		_exit(1);
}

/*
 * With -e: an event loop's wait, one epoll_wait(2) until fd is readable.
 * Each set holds the descriptors its process reads in turn, and only the one
 * about to be read can be ready, so the wait ends on it.
 */
static void
await(int ep, struct conn *c)
{
	struct epoll_event	 ev;

	if (!use_epoll || (c->ssl != NULL && SSL_has_pending(c->ssl)))
		return;
	while (epoll_wait(ep, &ev, 1, -1) != 1)
		if (errno != EINTR)
			_exit(1);
}

/* One hop of a message: wait for it on from, read it whole, write it to. */
static void
relay(int ep, struct conn *from, struct conn *to, char *buf, size_t n)
{
	await(ep, from);
	writen(to, buf, readn(from, buf, n));
}

static void
nodelay(int fd)
{
	int	 one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		err(1, "TCP_NODELAY");
}

static void	tls_fail(const char *) __attribute__((noreturn));

static void
tls_fail(const char *what)
{
	char	 buf[256];

	ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
	errx(1, "%s: %s", what, buf);
}

/* With -t: a P-256 key and a certificate for it, signed by itself. */
static void
tls_setup(void)
{
	EVP_PKEY	*key;
	X509		*x;
	X509_NAME	*name;

	if ((key = EVP_EC_gen("P-256")) == NULL || (x = X509_new()) == NULL)
		tls_fail("key");
	name = X509_get_subject_name(x);
	if (X509_set_version(x, X509_VERSION_3) != 1 ||
	    ASN1_INTEGER_set(X509_get_serialNumber(x), 1) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), 0) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x), 86400) == NULL ||
	    X509_set_pubkey(x, key) != 1 ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	    (const unsigned char *)"hops", -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, name) != 1 ||
	    X509_sign(x, key, EVP_sha256()) == 0)
		tls_fail("certificate");
	if ((srv_ctx = SSL_CTX_new(TLS_server_method())) == NULL ||
	    (cli_ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    SSL_CTX_set_min_proto_version(srv_ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_set_min_proto_version(cli_ctx, TLS1_3_VERSION) != 1 ||
	    SSL_CTX_use_certificate(srv_ctx, x) != 1 ||
	    SSL_CTX_use_PrivateKey(srv_ctx, key) != 1 ||
	    SSL_CTX_set_num_tickets(srv_ctx, 0) != 1)
		tls_fail("context");
	/* A record in one read(2), as egress reads many at once. */
	SSL_CTX_set_read_ahead(srv_ctx, 1);
	SSL_CTX_set_read_ahead(cli_ctx, 1);
	SSL_CTX_set_verify(cli_ctx, SSL_VERIFY_NONE, NULL);
	X509_free(x);
	EVP_PKEY_free(key);
}

static void
tls_start(struct conn *c, int server)
{
	c->ssl = NULL;
	if (srv_ctx == NULL)
		return;
	if ((c->ssl = SSL_new(server ? srv_ctx : cli_ctx)) == NULL ||
	    SSL_set_fd(c->ssl, c->fd) != 1 ||
	    (server ? SSL_accept(c->ssl) : SSL_connect(c->ssl)) != 1)
		tls_fail("handshake");
}

static void
tcp_connect(const struct sockaddr_in *sin, struct conn *c)
{
	if ((c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(c->fd, (const struct sockaddr *)sin, sizeof(*sin)) == -1)
		err(1, "connect upstream");
	nodelay(c->fd);
	tls_start(c, 0);
}

static pid_t
spawn(void (*fn)(void *), void *arg)
{
	pid_t	 pid;

	if ((pid = fork()) == -1)
		err(1, "fork");
	if (pid == 0) {
		fn(arg);
		_exit(0);
	}
	return pid;
}

static void
upstream_conn(void *arg)
{
	struct conn	 c = { .fd = *(int *)arg };
	char		 req[REQ], resp[RESP];

	tls_start(&c, 1);
	memset(resp, 'u', sizeof(resp));
	for (;;) {
		readn(&c, req, sizeof(req));
		writen(&c, resp, sizeof(resp));
	}
}

static void
upstream(void *arg)
{
	int	 lfd = *(int *)arg, fd;

	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			continue;
		nodelay(fd);
		spawn(upstream_conn, &fd);
		close(fd);
	}
}

struct relay {
	int			 pair;
	int			 listen;
	struct sockaddr_in	 up;
};

static void
egress(void *arg)
{
	struct relay	*r = arg;
	static char	 req[MSG_MAX], resp[MSG_MAX];
	struct conn	 pair = { .fd = r->pair }, up;
	int		 ep;

	tcp_connect(&r->up, &up);
	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		_exit(1);
	watch(ep, pair.fd);
	watch(ep, up.fd);
	for (;;) {
		relay(ep, &pair, &up, req, in_place ? sizeof(req) : REQ);
		relay(ep, &up, &pair, resp, in_place ? sizeof(resp) : RESP);
	}
}

static void
broker(void *arg)
{
	struct relay	*r = arg;
	static char	 req[MSG_MAX], resp[MSG_MAX];
	struct conn	 pair = { .fd = r->pair }, cl = { .fd = -1 };
	struct conn	 lis = { .fd = r->listen };
	int		 ep;

	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		_exit(1);
	watch(ep, lis.fd);
	watch(ep, pair.fd);
	for (;;) {
		await(ep, &lis);
		if ((cl.fd = accept4(lis.fd, NULL, NULL, SOCK_CLOEXEC)) == -1)
			continue;
		watch(ep, cl.fd);
		relay(ep, &cl, &pair, req, in_place ? sizeof(req) : REQ);
		relay(ep, &pair, &cl, resp, in_place ? sizeof(resp) : RESP);
		close(cl.fd);	/* also leaves the epoll set */
	}
}

static double
now_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Time on a CPU so far, from /proc/PID/schedstat, in µs. */
static double
cpu_us(pid_t pid)
{
	char			 path[64];
	unsigned long long	 ns = 0;
	FILE			*f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		err(1, "%s", path);
	if (fscanf(f, "%llu", &ns) != 1)
		errx(1, "%s: no run time", path);
	fclose(f);
	return ns / 1e3;
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double
pct(double *v, int n, int p)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[(n - 1) * p / 100];
}

static double
call_broker(const struct sockaddr_un *sun, const char *req, char *resp)
{
	double		 t0 = now_us();
	struct conn	 c = { .ssl = NULL };

	if ((c.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(c.fd, (const struct sockaddr *)sun, sizeof(*sun)) == -1)
		err(1, "connect broker");
	writen(&c, req, REQ);
	readn(&c, resp, RESP);
	close(c.fd);
	return now_us() - t0;
}

static double
call_direct(struct conn *c, const char *req, char *resp)
{
	double	 t0 = now_us();

	writen(c, req, REQ);
	readn(c, resp, RESP);
	return now_us() - t0;
}

/*
 * -l: the relays serve until standard input ends (their user is done), then
 * go; the caller reads their CPU from /proc while they run.
 */
static int
serve_in_place(const char *path, pid_t broker_pid, pid_t egress_pid)
{
	char	 c;

	printf("{\"broker\": %d, \"egress\": %d}\n", (int)broker_pid,
	    (int)egress_pid);
	fflush(stdout);
	while (read(STDIN_FILENO, &c, 1) > 0 || errno == EINTR)
		;
	unlink(path);
	kill(broker_pid, SIGKILL);
	kill(egress_pid, SIGKILL);
	waitpid(broker_pid, NULL, 0);
	waitpid(egress_pid, NULL, 0);
	return 0;
}

int
main(int argc, char *argv[])
{
	struct relay		 r;
	struct sockaddr_un	 sun = { .sun_family = AF_UNIX };
	socklen_t		 len = sizeof(r.up);
	char			 req[REQ], resp[RESP];
	double			*viab, *direct, *added, cpu[2][2];
	struct conn		 dc;
	int			 calls = 2000, json = 0, tls = 0, ch, lfd, i;
	int			 pair[2], port = 0;
	const char		*path = NULL;
	pid_t			 kids[3];

	while ((ch = getopt(argc, argv, "n:etjl:u:")) != -1) {
		switch (ch) {
		case 'n':
			calls = atoi(optarg);
			if (calls < 10 || calls > 10000000)
				errx(2, "-n: between 10 and 10000000 calls");
			break;
		case 'e':
			use_epoll = 1;
			break;
		case 't':
			tls = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 'l':
			path = optarg;
			if (strlen(path) >= sizeof(sun.sun_path))
				errx(2, "-l: a path of at most %zu bytes",
				    sizeof(sun.sun_path) - 1);
			break;
		case 'u':
			port = atoi(optarg);
			if (port < 1 || port > 65535)
				errx(2, "-u: a TCP port");
			break;
		default:
			fprintf(stderr, "usage: hops [-n CALLS] [-e] [-t] [-j] | "
			    "hops -l PATH -u PORT\n");
			return 2;
		}
	}
	if ((path == NULL) != (port == 0))
		errx(2, "-l and -u go together");
	if (path != NULL)
		in_place = use_epoll = tls = 1;
	memset(req, 'q', sizeof(req));
	if (tls)
		tls_setup();

	/* The upstream: the caller's with -u, else a child of this one. */
	memset(&r.up, 0, sizeof(r.up));
	r.up.sin_family = AF_INET;
	r.up.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	r.up.sin_port = htons((uint16_t)port);
	if (!in_place) {
		if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) ==
		    -1 || bind(lfd, (struct sockaddr *)&r.up, sizeof(r.up)) ==
		    -1 || listen(lfd, 16) == -1 || getsockname(lfd,
		    (struct sockaddr *)&r.up, &len) == -1)
			err(1, "upstream listener");
		kids[0] = spawn(upstream, &lfd);
		close(lfd);
	}

	/* Broker and egress, joined as rtsandbox joins them. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == -1)
		err(1, "socketpair");
	if (path != NULL)
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	else
		snprintf(sun.sun_path, sizeof(sun.sun_path),
		    "/tmp/hops.%d.sock", (int)getpid());
	unlink(sun.sun_path);
	if ((r.listen = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(r.listen, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(r.listen, 16) == -1)
		err(1, "broker listener %s", sun.sun_path);
	r.pair = pair[1];
	kids[1] = spawn(egress, &r);
	r.pair = pair[0];
	kids[2] = spawn(broker, &r);
	close(pair[0]);
	close(pair[1]);
	close(r.listen);
	if (in_place)
		return serve_in_place(sun.sun_path, kids[2], kids[1]);

	tcp_connect(&r.up, &dc);
	if ((viab = calloc((size_t)calls, sizeof(*viab))) == NULL ||
	    (direct = calloc((size_t)calls, sizeof(*direct))) == NULL ||
	    (added = calloc((size_t)calls, sizeof(*added))) == NULL)
		err(1, "calloc");
	for (i = 0; i < WARMUP; i++) {
		call_broker(&sun, req, resp);
		call_direct(&dc, req, resp);
	}
	cpu[0][0] = cpu_us(kids[2]);
	cpu[1][0] = cpu_us(kids[1]);
	/* Interleaved, so that both see the same machine. */
	for (i = 0; i < calls; i++) {
		viab[i] = call_broker(&sun, req, resp);
		direct[i] = call_direct(&dc, req, resp);
		added[i] = viab[i] - direct[i];
	}
	cpu[0][1] = cpu_us(kids[2]);
	cpu[1][1] = cpu_us(kids[1]);
	unlink(sun.sun_path);
	for (i = 0; i < 3; i++) {
		kill(kids[i], SIGKILL);
		waitpid(kids[i], NULL, 0);
	}

	if (json) {
		printf("{\"calls\": %d, \"epoll\": %s, \"tls\": %s, "
		    "\"relay_syscalls\": %d, "
		    "\"via_p50\": %.1f, \"via_p99\": %.1f, "
		    "\"direct_p50\": %.1f, \"direct_p99\": %.1f, "
		    "\"added_p50\": %.1f, \"broker_cpu\": %.1f, "
		    "\"egress_cpu\": %.1f}\n", calls,
		    use_epoll ? "true" : "false", tls ? "true" : "false",
		    use_epoll ? 16 : 10,
		    pct(viab, calls, 50), pct(viab, calls, 99),
		    pct(direct, calls, 50), pct(direct, calls, 99),
		    pct(added, calls, 50), (cpu[0][1] - cpu[0][0]) / calls,
		    (cpu[1][1] - cpu[1][0]) / calls);
	} else {
		printf("%d small calls each way, interleaved; broker and "
		    "egress %s, %d system calls between them per call%s\n",
		    calls, use_epoll ? "wait in epoll_wait before each read" :
		    "block in read", use_epoll ? 16 : 10, tls ? "; egress's "
		    "leg to the upstream and the direct call in TLS 1.3" : "");
		printf("  via two relays  p50 %7.1f us   p99 %7.1f us\n",
		    pct(viab, calls, 50), pct(viab, calls, 99));
		printf("  direct          p50 %7.1f us   p99 %7.1f us\n",
		    pct(direct, calls, 50), pct(direct, calls, 99));
		printf("  added           p50 %7.1f us   (per call, paired)\n",
		    pct(added, calls, 50));
		printf("  CPU per call    broker %.1f us, egress %.1f us\n",
		    (cpu[0][1] - cpu[0][0]) / calls,
		    (cpu[1][1] - cpu[1][0]) / calls);
	}
	free(viab);
	free(direct);
	free(added);
	return 0;
}
