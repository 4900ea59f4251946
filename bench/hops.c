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
 * usage: hops [-n CALLS] [-e] [-j]
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

/* About what a tiny model call and its answer weigh on the wire. */
#define REQ	300
#define RESP	600
#define WARMUP	200

static int use_epoll;

static void
readn(int fd, char *buf, size_t n)
{
	size_t	 got = 0;
	ssize_t	 r;

	while (got < n) {
		r = read(fd, buf + got, n - got);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(r == 0 ? 0 : 1);
		got += (size_t)r;
	}
}

static void
writen(int fd, const char *buf, size_t n)
{
	size_t	 put = 0;
	ssize_t	 w;

	while (put < n) {
		w = write(fd, buf + put, n - put);
		if (w == -1 && errno == EINTR)
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
await(int ep)
{
	struct epoll_event	 ev;

	if (!use_epoll)
		return;
	while (epoll_wait(ep, &ev, 1, -1) != 1)
		if (errno != EINTR)
			_exit(1);
}

static void
nodelay(int fd)
{
	int	 one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == -1)
		err(1, "TCP_NODELAY");
}

static int
tcp_connect(const struct sockaddr_in *sin)
{
	int	 fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) == -1)
		err(1, "connect upstream");
	nodelay(fd);
	return fd;
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
	int	 fd = *(int *)arg;
	char	 req[REQ], resp[RESP];

	memset(resp, 'u', sizeof(resp));
	for (;;) {
		readn(fd, req, sizeof(req));
		writen(fd, resp, sizeof(resp));
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
	char		 req[REQ], resp[RESP];
	int		 up = tcp_connect(&r->up), ep;

	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		_exit(1);
	watch(ep, r->pair);
	watch(ep, up);
	for (;;) {
		await(ep);
		readn(r->pair, req, sizeof(req));
		writen(up, req, sizeof(req));
		await(ep);
		readn(up, resp, sizeof(resp));
		writen(r->pair, resp, sizeof(resp));
	}
}

static void
broker(void *arg)
{
	struct relay	*r = arg;
	char		 req[REQ], resp[RESP];
	int		 fd, ep;

	if ((ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		_exit(1);
	watch(ep, r->listen);
	watch(ep, r->pair);
	for (;;) {
		await(ep);
		if ((fd = accept4(r->listen, NULL, NULL, SOCK_CLOEXEC)) == -1)
			continue;
		watch(ep, fd);
		await(ep);
		readn(fd, req, sizeof(req));
		writen(r->pair, req, sizeof(req));
		await(ep);
		readn(r->pair, resp, sizeof(resp));
		writen(fd, resp, sizeof(resp));
		close(fd);	/* also leaves the epoll set */
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
	double	 t0 = now_us();
	int	 fd;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == -1)
		err(1, "connect broker");
	writen(fd, req, REQ);
	readn(fd, resp, RESP);
	close(fd);
	return now_us() - t0;
}

static double
call_direct(int fd, const char *req, char *resp)
{
	double	 t0 = now_us();

	writen(fd, req, REQ);
	readn(fd, resp, RESP);
	return now_us() - t0;
}

int
main(int argc, char *argv[])
{
	struct relay		 r;
	struct sockaddr_un	 sun = { .sun_family = AF_UNIX };
	socklen_t		 len = sizeof(r.up);
	char			 req[REQ], resp[RESP];
	double			*viab, *direct, *added, cpu[2][2];
	int			 calls = 2000, json = 0, ch, lfd, pair[2], dfd, i;
	pid_t			 kids[3];

	while ((ch = getopt(argc, argv, "n:ej")) != -1) {
		switch (ch) {
		case 'n':
			calls = atoi(optarg);
			if (calls < 10 || calls > 10000000)
				errx(2, "-n: between 10 and 10000000 calls");
			break;
		case 'e':
			use_epoll = 1;
			break;
		case 'j':
			json = 1;
			break;
		default:
			fprintf(stderr, "usage: hops [-n CALLS] [-e] [-j]\n");
			return 2;
		}
	}
	memset(req, 'q', sizeof(req));

	/* The upstream. */
	memset(&r.up, 0, sizeof(r.up));
	r.up.sin_family = AF_INET;
	r.up.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(lfd, (struct sockaddr *)&r.up, sizeof(r.up)) == -1 ||
	    listen(lfd, 16) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&r.up, &len) == -1)
		err(1, "upstream listener");
	kids[0] = spawn(upstream, &lfd);
	close(lfd);

	/* Broker and egress, joined as rtsandbox joins them. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == -1)
		err(1, "socketpair");
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/tmp/hops.%d.sock",
	    (int)getpid());
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

	dfd = tcp_connect(&r.up);
	if ((viab = calloc((size_t)calls, sizeof(*viab))) == NULL ||
	    (direct = calloc((size_t)calls, sizeof(*direct))) == NULL ||
	    (added = calloc((size_t)calls, sizeof(*added))) == NULL)
		err(1, "calloc");
	for (i = 0; i < WARMUP; i++) {
		call_broker(&sun, req, resp);
		call_direct(dfd, req, resp);
	}
	cpu[0][0] = cpu_us(kids[2]);
	cpu[1][0] = cpu_us(kids[1]);
	/* Interleaved, so that both see the same machine. */
	for (i = 0; i < calls; i++) {
		viab[i] = call_broker(&sun, req, resp);
		direct[i] = call_direct(dfd, req, resp);
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
		printf("{\"calls\": %d, \"epoll\": %s, \"relay_syscalls\": %d, "
		    "\"via_p50\": %.1f, \"via_p99\": %.1f, "
		    "\"direct_p50\": %.1f, \"direct_p99\": %.1f, "
		    "\"added_p50\": %.1f, \"broker_cpu\": %.1f, "
		    "\"egress_cpu\": %.1f}\n", calls,
		    use_epoll ? "true" : "false", use_epoll ? 16 : 10,
		    pct(viab, calls, 50), pct(viab, calls, 99),
		    pct(direct, calls, 50), pct(direct, calls, 99),
		    pct(added, calls, 50), (cpu[0][1] - cpu[0][0]) / calls,
		    (cpu[1][1] - cpu[1][0]) / calls);
	} else {
		printf("%d small calls each way, interleaved; broker and "
		    "egress %s, %d system calls between them per call\n", calls,
		    use_epoll ? "wait in epoll_wait before each read" :
		    "block in read", use_epoll ? 16 : 10);
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
