/*
 * rtsandbox-probe: the per-role syscall probe of DESIGN.md 11.
 *
 *   rtsandbox-probe ROLE allowed          the role's work in its sandbox
 *   rtsandbox-probe ROLE forbidden CALL   CALL in it: must die of SIGSYS
 *   rtsandbox-probe docker curl [SOCKET]  GET /version from Docker
 *   rtsandbox-probe egress https          HTTPS to a local s_server
 *   rtsandbox-probe supervisor spawn      every role started by
 *                                         proc_spawn_sibling() under
 *                                         the spawner's sandbox
 *   rtsandbox-probe ROLE empty            the role's work in an empty
 *                                         root (broker, research): no
 *                                         path resolves, not even for stat
 *   rtsandbox-probe ROLE empty-forbidden CALL
 *                                         CALL there: must die of SIGSYS
 *   rtsandbox-probe ROLE no-root required|optional
 *                                         where the kernel refuses the
 *                                         empty root (run it under
 *                                         rtsandbox-deny): the role
 *                                         refuses to run, or runs as
 *                                         sandbox.empty_root "optional"
 *
 * Each sandbox is set up by the role's own sandbox_<role>() in a forked
 * child; the parent reports how the child ended and exits 0 only when that
 * is what was expected, 77 when the test cannot run here.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/event.h>
#include <linux/openat2.h>
#include <zlib.h>

#include "hostcheck.h"
#include "log.h"
#include "msg.h"
#include "proc.h"
#include "role.h"
#include "../../common/sandbox.h"
#include "../../broker/sandbox.h"
#include "../../dockerd-client/sandbox.h"
#include "../../egress/sandbox.h"
#include "../../egress/upstream.h"
#include "../../fsguard/sandbox.h"
#include "../../research/agent.h"
#include "../../research/sandbox.h"
#include "../../research/text.h"
#include "../../supervisor/sandbox.h"

#define PROBE_SKIP		77
#define PROBE_NOT_KILLED	3
#define DOCKER_SOCKET		"/var/run/docker.sock"

/* What the roles are given: made by the parent before the fork. */
struct probe_env {
	char	 self[PATH_MAX];	/* this executable */
	char	 state_dir[PATH_MAX];	/* fsguard's, a temp dir */
	char	 secret[PATH_MAX];	/* a file in it, for the empty root */
	int	 empty_root;		/* broker, research: enter one first */
	char	 docker_sock[PATH_MAX];
	int	 docker_ok;		/* the socket accepts */
	char	 tls_dir[PATH_MAX];	/* cert.pem, key.pem */
	char	 ca_file[PATH_MAX];	/* the self-signed cert */
	int	 tls_port;		/* 0: no s_server */
	pid_t	 tls_pid;
};

static struct probe_env	 env;
static char		 outbuf[4096];

/*
 * The event loop every role runs: a timer writes to one end of a socket
 * pair made before the sandbox, a read event on the other end counts.
 */
struct probe_loop {
	struct event_base	*base;
	struct event		*timer, *reader;
	int			 sp[2];
	int			 ticks, reads;
};

static void
probe_loop_read(evutil_socket_t fd, short ev, void *arg)
{
	struct probe_loop	*pl = arg;
	char			 buf[16];

	if (read(fd, buf, sizeof(buf)) > 0)
		pl->reads++;
}

static void
probe_loop_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct probe_loop	*pl = arg;
	struct timeval		 tv = { 0, 5000 };

	if (write(pl->sp[1], "x", 1) != 1)
		fatal("%s: write", __func__);
	if (++pl->ticks < 3)
		evtimer_add(pl->timer, &tv);
	else
		event_base_loopexit(pl->base, &tv);
}

static void
probe_loop_prepare(struct probe_loop *pl)
{
	memset(pl, 0, sizeof(*pl));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
	    pl->sp) == -1)
		fatal("socketpair");
}

static void
probe_loop_run(struct probe_loop *pl, struct event_base *base)
{
	struct timeval	 tv = { 0, 5000 };

	pl->base = base;
	if ((pl->timer = evtimer_new(base, probe_loop_tick, pl)) == NULL ||
	    (pl->reader = event_new(base, pl->sp[0], EV_READ | EV_PERSIST,
	    probe_loop_read, pl)) == NULL ||
	    event_add(pl->reader, NULL) == -1 ||
	    evtimer_add(pl->timer, &tv) == -1)
		fatalx("cannot set up the loop");
	if (event_base_dispatch(base) == -1)
		fatalx("event_base_dispatch");
	if (pl->ticks != 3 || pl->reads < 1)
		fatalx("loop: %d ticks, %d reads", pl->ticks, pl->reads);
	event_free(pl->timer);
	event_free(pl->reader);
}

/*
 * libcurl's multi interface on the libevent loop, the way the Docker client
 * and egress drive it.
 */
struct probe_curl {
	struct event_base	*base;
	CURLM			*multi;
	struct event		*timer;
	CURLcode		 result;
	int			 done;
};

static void probe_curl_check(struct probe_curl *);

static void
probe_curl_event(evutil_socket_t fd, short what, void *arg)
{
	struct probe_curl	*pc = arg;
	int			 running, flags = 0;

	if (what & EV_READ)
		flags |= CURL_CSELECT_IN;
	if (what & EV_WRITE)
		flags |= CURL_CSELECT_OUT;
	curl_multi_socket_action(pc->multi, fd, flags, &running);
	probe_curl_check(pc);
}

static void
probe_curl_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct probe_curl	*pc = arg;
	int			 running;

	curl_multi_socket_action(pc->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	probe_curl_check(pc);
}

static int
probe_curl_socket(CURL *e, curl_socket_t s, int what, void *userp,
    void *socketp)
{
	struct probe_curl	*pc = userp;
	struct event		*ev = socketp;
	short			 kind = EV_PERSIST;

	if (ev != NULL)
		event_free(ev);
	if (what == CURL_POLL_REMOVE) {
		curl_multi_assign(pc->multi, s, NULL);
		return 0;
	}
	if (what & CURL_POLL_IN)
		kind |= EV_READ;
	if (what & CURL_POLL_OUT)
		kind |= EV_WRITE;
	if ((ev = event_new(pc->base, s, kind, probe_curl_event, pc)) == NULL ||
	    event_add(ev, NULL) == -1)
		fatalx("curl socket event");
	curl_multi_assign(pc->multi, s, ev);
	return 0;
}

static int
probe_curl_timer(CURLM *multi, long ms, void *userp)
{
	struct probe_curl	*pc = userp;
	struct timeval		 tv;

	if (ms < 0)
		return evtimer_del(pc->timer);
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	return evtimer_add(pc->timer, &tv);
}

static void
probe_curl_check(struct probe_curl *pc)
{
	CURLMsg	*msg;
	int	 left;

	while ((msg = curl_multi_info_read(pc->multi, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE) {
			pc->result = msg->data.result;
			pc->done = 1;
			event_base_loopbreak(pc->base);
		}
}

/* Run one transfer; the body is kept in buf (NUL-terminated, cut). */
struct probe_body {
	char	 buf[4096];
	size_t	 len;
};

static size_t
probe_curl_write(char *p, size_t size, size_t nmemb, void *arg)
{
	struct probe_body	*b = arg;
	size_t			 n = size * nmemb, room;

	room = sizeof(b->buf) - 1 - b->len;
	memcpy(b->buf + b->len, p, n < room ? n : room);
	b->len += n < room ? n : room;
	b->buf[b->len] = '\0';
	return n;
}

static void
probe_curl_run(struct event_base *base, CURL *easy, const char *what)
{
	struct probe_curl	 pc;
	long			 code = 0;

	memset(&pc, 0, sizeof(pc));
	pc.base = base;
	if ((pc.multi = curl_multi_init()) == NULL ||
	    (pc.timer = evtimer_new(base, probe_curl_timeout, &pc)) == NULL)
		fatalx("curl_multi_init");
	curl_multi_setopt(pc.multi, CURLMOPT_SOCKETFUNCTION,
	    probe_curl_socket);
	curl_multi_setopt(pc.multi, CURLMOPT_SOCKETDATA, &pc);
	curl_multi_setopt(pc.multi, CURLMOPT_TIMERFUNCTION, probe_curl_timer);
	curl_multi_setopt(pc.multi, CURLMOPT_TIMERDATA, &pc);
	curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 20000L);
	curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
	if (curl_multi_add_handle(pc.multi, easy) != CURLM_OK)
		fatalx("curl_multi_add_handle");
	if (event_base_dispatch(base) == -1)
		fatalx("event_base_dispatch");
	if (!pc.done)
		fatalx("%s: the loop ended before the transfer", what);
	if (pc.result != CURLE_OK)
		fatalx("%s: %s", what, curl_easy_strerror(pc.result));
	curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
	if (code != 200)
		fatalx("%s: HTTP status %ld", what, code);
	curl_multi_remove_handle(pc.multi, easy);
	curl_multi_cleanup(pc.multi);
	event_free(pc.timer);
}

static void
probe_docker_version(struct event_base *base)
{
	struct probe_body	 body;
	CURL			*easy;

	memset(&body, 0, sizeof(body));
	if ((easy = curl_easy_init()) == NULL)
		fatalx("curl_easy_init");
	curl_easy_setopt(easy, CURLOPT_UNIX_SOCKET_PATH, env.docker_sock);
	curl_easy_setopt(easy, CURLOPT_URL, "http://localhost/v1.41/version");
	curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, probe_curl_write);
	curl_easy_setopt(easy, CURLOPT_WRITEDATA, &body);
	probe_curl_run(base, easy, "docker version");
	curl_easy_cleanup(easy);
	if (strstr(body.buf, "\"ApiVersion\"") == NULL)
		fatalx("docker version: unexpected answer");
	printf("docker: %.60s...\n", body.buf);
}

/* Egress's own client (egress/upstream.c) in egress's sandbox. */
struct probe_up {
	struct event_base	*base;
	struct probe_body	 body;
	long			 status;
	enum up_result		 result;
	char			 detail[256];
	int			 done;
};

static int
probe_up_head(struct up_call *c, long status, const struct up_hdr *h,
    size_t n, void *arg)
{
	((struct probe_up *)arg)->status = status;
	return 0;
}

static int
probe_up_data(struct up_call *c, const void *p, size_t n, void *arg)
{
	probe_curl_write((char *)(uintptr_t)p, 1, n,
	    &((struct probe_up *)arg)->body);
	return 0;
}

static void
probe_up_end(struct up_call *c, enum up_result r, const char *detail,
    void *arg)
{
	struct probe_up	*pu = arg;

	pu->result = r;
	snprintf(pu->detail, sizeof(pu->detail), "%s", detail);
	pu->done = 1;
	event_base_loopbreak(pu->base);
}

static void
probe_egress_https(struct event_base *base)
{
	static const struct up_callbacks cbs = {
		probe_up_head, probe_up_data, probe_up_end, NULL
	};
	struct probe_up		 pu;
	struct up_request	 req;
	struct upstream		*up;
	char			 url[64];

	memset(&pu, 0, sizeof(pu));
	pu.base = base;
	/* A name, so that the resolver's thread runs. */
	snprintf(url, sizeof(url), "https://localhost:%d/", env.tls_port);
	memset(&req, 0, sizeof(req));
	req.url = url;
	req.ca_file = env.ca_file;
	req.connect_timeout_ms = 20000;
	up = upstream_new(base);
	if (upstream_call(up, &req, &cbs, &pu) == NULL)
		fatalx("https: the call was refused");
	if (event_base_dispatch(base) == -1)
		fatalx("event_base_dispatch");
	if (!pu.done)
		fatalx("https: the loop ended before the call");
	if (pu.result != UP_OK)
		fatalx("https: %s", pu.detail);
	if (pu.status != 200)
		fatalx("https: HTTP status %ld", pu.status);
	upstream_free(up);
	if (pu.body.len == 0)
		fatalx("https: empty answer");
	printf("egress: %zu bytes over TLS from %s\n", pu.body.len, url);
}

/*
 * The empty root (DESIGN.md 1, invariant 10).  Entered before the role's
 * sandbox, as sandbox_broker() and sandbox_research() do; 77 where the
 * kernel refuses user namespaces.
 */
static void
probe_empty_root_enter(void)
{
	struct stat	 st;
	char		 dents[512];
	long		 n, off;
	int		 fd, entries = 0;

	if (stat(env.secret, &st) == -1 || stat("/etc/passwd", &st) == -1)
		fatal("before the empty root");
	if (sandbox_empty_root() == 0) {
		printf("empty root: refused by this kernel, skipped\n");
		exit(PROBE_SKIP);
	}
	/* Before Landlock and seccomp: the paths themselves are gone. */
	if (open("/etc/passwd", O_RDONLY | O_CLOEXEC) != -1 ||
	    errno != ENOENT ||
	    open(env.secret, O_RDONLY | O_CLOEXEC) != -1 || errno != ENOENT ||
	    open("/proc/self/status", O_RDONLY | O_CLOEXEC) != -1 ||
	    errno != ENOENT)
		fatalx("a host path still opens in the empty root");
	if (open("/made", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) !=
	    -1 || errno != EROFS || mkdir("/made", 0700) != -1 ||
	    errno != EROFS)
		fatalx("the empty root is writable");
	/* "/" lists nothing but itself and its parent, which is itself. */
	if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		fatal("open /");
	while ((n = syscall(SYS_getdents64, fd, dents, sizeof(dents))) > 0)
		for (off = 0; off < n; entries++)
			off += ((struct dirent *)(dents + off))->d_reclen;
	if (n == -1 || entries != 2)
		fatalx("the root lists %d entries", entries);
	close(fd);
	printf("empty root: entered, no host path opens\n");
}

/* After the role's sandbox: the stat(2) the base table lets through, on
 * paths that exist outside, finds nothing. */
static void
probe_empty_root_check(void)
{
	const char	*paths[] = { "/etc/passwd", env.secret, env.state_dir,
	    "/proc/self/status", "../../etc/passwd" };
	struct stat	 st;
	size_t		 i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (fstatat(AT_FDCWD, paths[i], &st, AT_EMPTY_PATH) != -1 ||
		    errno != ENOENT)
			fatalx("stat of %s in the empty root: %s", paths[i],
			    strerror(errno));
		printf("empty root: stat of %s: ENOENT\n", paths[i]);
	}
	if (fstatat(AT_FDCWD, "/", &st, AT_EMPTY_PATH) == -1 ||
	    !S_ISDIR(st.st_mode) || st.st_nlink != 2)
		fatalx("stat of / in the empty root");
}

/*
 * The role's RLIMIT_DATA (limits.h) is in force: half of it can be had, all
 * of it cannot, and the refusal is a null pointer, not the end.  Untouched,
 * neither costs memory.
 */
static void
probe_data_limit(size_t limit)
{
#ifdef RTSANDBOX_ASAN
	printf("data limit: not set under AddressSanitizer\n");
#else
	char *volatile	 p;

	if ((p = malloc(limit / 2)) == NULL)
		fatalx("data limit: %zu MiB refused", limit / 2 / MIB);
	p[0] = 1;
	free(p);
	if ((p = malloc(limit)) != NULL)
		fatalx("data limit: %zu MiB allowed", limit / MIB);
	printf("data limit: %zu MiB refused, half of it allowed\n",
	    limit / MIB);
#endif
}

/*
 * Each role's work inside its sandbox.
 */

static void
probe_work_broker(void)
{
	struct probe_loop	 pl;
	struct sockaddr_un	 sun;
	socklen_t		 len = sizeof(sun);
	struct event_base	*base;
	int			 lfd, cfd, afd;
	char			 buf[8];

	/* A listener and a pending connection, as the file guard hands
	 * over (an abstract name: no file needed). */
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1 || bind(lfd, (struct sockaddr *)&sun,
	    sizeof(sa_family_t)) == -1 || listen(lfd, 4) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sun, &len) == -1)
		fatal("listener");
	if ((cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(cfd, (struct sockaddr *)&sun, len) == -1 ||
	    write(cfd, "ping", 4) != 4)
		fatal("client");
	probe_loop_prepare(&pl);

	if (env.empty_root)
		probe_empty_root_enter();
	base = sandbox_broker();
	if (env.empty_root)
		probe_empty_root_check();
	probe_data_limit(BROKER_DATA_MAX);
	if ((afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC |
	    SOCK_NONBLOCK)) == -1)
		fatal("accept4");
	if (read(afd, buf, sizeof(buf)) != 4 || shutdown(afd, SHUT_RDWR) == -1)
		fatal("accepted connection");
	close(afd);
	probe_loop_run(&pl, base);
}

static void
probe_work_fsguard(void)
{
	struct open_how		 how;
	struct probe_loop	 pl;
	struct sockaddr_un	 sun;
	struct event_base	*base;
	struct stat		 st;
	char			 dents[1024];
	int			 dfd, fd, sfd;

	probe_loop_prepare(&pl);
	base = sandbox_fsguard(env.state_dir);
	probe_data_limit(FSGUARD_DATA_MAX);

	if ((dfd = open(env.state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
	    O_NOFOLLOW)) == -1)
		fatal("state dir");
	memset(&how, 0, sizeof(how));
	how.flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC;
	how.mode = 0600;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
	if ((fd = syscall(SYS_openat2, dfd, "file", &how, sizeof(how))) == -1)
		fatal("openat2");
	if (write(fd, "data", 4) != 4 || fsync(fd) == -1 ||
	    ftruncate(fd, 2) == -1 || fchmod(fd, 0600) == -1)
		fatal("file");
	close(fd);
	if (mkdirat(dfd, "dir", 0700) == -1 ||
	    renameat(dfd, "file", dfd, "dir/file") == -1 ||
	    fstatat(dfd, "dir/file", &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    st.st_size != 2)
		fatal("directory");
	if ((fd = openat(dfd, "dir", O_RDONLY | O_DIRECTORY | O_CLOEXEC |
	    O_NOFOLLOW)) == -1 ||
	    syscall(SYS_getdents64, fd, dents, sizeof(dents)) <= 0)
		fatal("listing");
	close(fd);
	if (unlinkat(dfd, "dir/file", 0) == -1 ||
	    unlinkat(dfd, "dir", AT_REMOVEDIR) == -1)
		fatal("removal");

	/* A broker's socket. */
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/broker.sock",
	    env.state_dir) >= (int)sizeof(sun.sun_path))
		fatalx("state directory path too long");
	if ((sfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(sfd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(sfd, 16) == -1 ||
	    fchmodat(dfd, "broker.sock", 0600, 0) == -1 ||
	    unlinkat(dfd, "broker.sock", 0) == -1)
		fatal("broker socket");
	close(sfd);

	/* Nothing outside the state directory. */
	if (open("/etc/passwd", O_RDONLY | O_CLOEXEC) != -1 ||
	    errno != EACCES)
		fatalx("/etc/passwd readable");
	close(dfd);
	probe_loop_run(&pl, base);
}

static void
probe_work_docker(int request)
{
	struct probe_loop	 pl;
	struct event_base	*base;

	probe_loop_prepare(&pl);
	if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
		fatalx("curl_global_init");
	base = sandbox_docker(env.docker_sock);
	probe_data_limit(DOCKER_DATA_MAX);
	if (request)
		probe_docker_version(base);
	probe_loop_run(&pl, base);
}

/* getaddrinfo() the way libcurl's threaded resolver calls it. */
static void *
probe_resolve(void *arg)
{
	struct addrinfo	 hints, *res;
	int		*rc = arg;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_ADDRCONFIG;
	if ((*rc = getaddrinfo("localhost", "443", &hints, &res)) == 0)
		freeaddrinfo(res);
	return NULL;
}

static void
probe_work_egress(int request)
{
	const char		*files[1];
	struct probe_loop	 pl;
	struct event_base	*base;
	pthread_t		 t;
	size_t			 n = 0;
	int			 rc = -1;

	probe_loop_prepare(&pl);
	/* As egress_main(): OpenSSL before the sandbox. */
	upstream_init();
	if (env.ca_file[0] != '\0')
		files[n++] = env.ca_file;
	base = sandbox_egress(files, n);
	probe_data_limit(EGRESS_DATA_MAX);

	/* The resolver from /etc/hosts, with the netlink query, in a thread
	 * (the request below resolves "localhost" in a thread too). */
	if (pthread_create(&t, NULL, probe_resolve, &rc) != 0 ||
	    pthread_join(t, NULL) != 0)
		fatalx("resolver thread");
	if (rc != 0)
		fatalx("getaddrinfo: %s", gai_strerror(rc));
	if (request)
		probe_egress_https(base);
	probe_loop_run(&pl, base);
}

/*
 * A research job's work: a frame to the supervisor and back through the
 * message table, a model request and answer, and fetched pages made text
 * (HTML through libxml2 with a character set converter, a Flate PDF).
 */
static void
probe_work_research(void)
{
	static const char	 page[] = "<html><head><meta charset="
	    "\"windows-1251\"><title>t</title><script>x()</script></head>"
	    "<body><p>\xcf\xf0\xe8\xe2\xe5\xf2 <a href=\"/a\">link</a></p>"
	    "</body></html>";
	static const char	 content[] = "BT /F1 12 Tf 72 700 Td "
	    "(Hello PDF) Tj ET";
	static const char	 ans[] = "{\"content\":[{\"type\":"
	    "\"tool_use\",\"id\":\"t1\",\"name\":\"fetch_content\","
	    "\"input\":{\"url\":\"https://example.org/\"}}],"
	    "\"stop_reason\":\"tool_use\"}";
	static const char	 tail[] = "\nendstream\nendobj\n%%EOF\n";
	struct probe_loop	 pl;
	struct event_base	*base;
	struct agent_job	 job;
	struct agent_answer	 aa;
	struct agent		*ag;
	struct text_out		 to;
	struct frame		 f;
	struct msgb		 mb;
	struct msg		 m;
	const char		*query;
	uint8_t			*fjson, *fdata, z[256], pdf[512];
	uLongf			 zlen = sizeof(z);
	char			*json, err[128];
	size_t			 len, plen;
	int			 sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1)
		fatal("socketpair");
	probe_loop_prepare(&pl);
	text_init();
	if (env.empty_root)
		probe_empty_root_enter();
	base = sandbox_research();
	if (env.empty_root)
		probe_empty_root_check();
	probe_data_limit(RESEARCH_DATA_MAX);

	msgb_init(&mb, MSG_RES_SEARCH, 1);
	msg_add_str(&mb, "query", "eiffel tower");
	if ((json = msgb_json(&mb, &len)) == NULL ||
	    frame_send_blocking(sp[0], json, len, NULL, 0, NULL, 0) !=
	    FRAME_OK ||
	    frame_recv_blocking(sp[1], edge_limits(PROC_RESEARCH,
	    PROC_SUPERVISOR), &f, &fjson, &fdata) != FRAME_OK)
		fatalx("frame round trip");
	if (msg_parse(&m, PROC_RESEARCH, PROC_SUPERVISOR, &f) == -1 ||
	    m.m_type != MSG_RES_SEARCH || m.m_id != 1 ||
	    msg_get_str(&m, "query", RESEARCH_QUERY_MAX, &query) == -1 ||
	    msg_end(&m) == -1 || strcmp(query, "eiffel tower") != 0)
		fatalx("frame round trip: %s", m.m_err);
	msg_free(&m);
	free(json);
	free(fjson);
	free(fdata);

	memset(&job, 0, sizeof(job));
	job.aj_model = "probe-model";
	job.aj_task = "probe";
	job.aj_author_name = "";
	job.aj_thinking = AGENT_THINK_HIGH;
	job.aj_max_output_tokens = 128000;
	job.aj_search = 1;
	if ((ag = agent_new(&job)) == NULL ||
	    (json = agent_request_build(ag, &len)) == NULL)
		fatalx("model request");
	free(json);
	if (agent_answer_parse(ans, strlen(ans), &aa, err, sizeof(err)) == -1 ||
	    aa.aa_ncalls != 1)
		fatalx("model answer: %s", err);
	agent_answer_free(&aa);
	agent_free(ag);

	if (text_extract((const uint8_t *)page, strlen(page), "text/html",
	    "https://example.org/", 1000, &to) == -1 ||
	    strcmp(to.to_text, "Title: t\n\n\xd0\x9f\xd1\x80\xd0\xb8"
	    "\xd0\xb2\xd0\xb5\xd1\x82 link (https://example.org/a)") != 0)
		fatalx("html: %s", to.to_text != NULL ? to.to_text : "?");
	text_out_free(&to);
	if (compress(z, &zlen, (const Bytef *)content, strlen(content)) !=
	    Z_OK)
		fatalx("compress");
	plen = snprintf((char *)pdf, sizeof(pdf), "%%PDF-1.4\n1 0 obj\n"
	    "<< /Length %lu /Filter /FlateDecode >>\nstream\n",
	    (unsigned long)zlen);
	memcpy(pdf + plen, z, zlen);
	plen += zlen;
	memcpy(pdf + plen, tail, strlen(tail));
	plen += strlen(tail);
	if (text_extract(pdf, plen, "application/pdf", NULL, 1000, &to) == -1 ||
	    strcmp(to.to_text, "Hello PDF") != 0)
		fatalx("pdf: %s", to.to_text != NULL ? to.to_text : "?");
	text_out_free(&to);
	close(sp[0]);
	close(sp[1]);
	probe_loop_run(&pl, base);
}

/* The spawner's rules from the configuration: the helpers' directory,
 * the state directory (the file guard's), egress's CA file. */
static void
probe_spawner_rules(struct sandbox_fs_rule *rules, size_t *n,
    char *selfdir, size_t len)
{
	char	*slash;

	snprintf(selfdir, len, "%s", env.self);
	if ((slash = strrchr(selfdir, '/')) != NULL)
		*slash = '\0';
	*n = 0;
	rules[(*n)++] = (struct sandbox_fs_rule){ selfdir,
	    SB_FS_READ | SB_FS_EXEC };
	rules[(*n)++] = (struct sandbox_fs_rule){ env.state_dir,
	    SB_FS_READ | SB_FS_WRITE | SB_FS_SOCK };
	if (env.ca_file[0] != '\0')
		rules[(*n)++] = (struct sandbox_fs_rule){ env.ca_file,
		    SB_FS_READ | SB_FS_PARENT };
}

/* The supervisor's: the control socket's directory, here the state
 * directory, to remove the socket at exit. */
static void
probe_supervisor_sandbox_rule(struct sandbox_fs_rule *rule)
{
	*rule = (struct sandbox_fs_rule){ env.state_dir, SB_FS_WRITE };
}

static void
probe_work_supervisor(void)
{
	struct sandbox_fs_rule	 rule;
	struct probe_loop	 pl;
	struct sockaddr_un	 sun;
	struct event_base	*base;
	int			 lfd, cfd, afd, sp[2];

	/* The control socket is bound before the drop, as rtsandboxd binds
	 * it; a client waits on it. */
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/control.sock",
	    env.state_dir) >= (int)sizeof(sun.sun_path))
		fatalx("state directory path too long");
	if ((lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1 ||
	    bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(lfd, 4) == -1)
		fatal("control socket");
	if ((cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(cfd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		fatal("control client");
	probe_loop_prepare(&pl);
	probe_supervisor_sandbox_rule(&rule);
	base = sandbox_supervisor(&rule, 1);

	/* A control connection, a pipe for a child, the socket's removal,
	 * its own memory. */
	if ((afd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
		fatal("control connection");
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1)
		fatal("socketpair");
	close(sp[0]);
	close(sp[1]);
	close(afd);
	close(cfd);
	close(lfd);
	if (unlink(sun.sun_path) == -1)
		fatal("unlink");
	if (proc_rss_kib(getpid()) <= 0 || proc_pss_kib(getpid()) <= 0)
		fatalx("no RSS or PSS from /proc");
	probe_loop_run(&pl, base);
}

/*
 * Whether pid is dumpable, seen from outside by a process of the same
 * user: 0 when its /proc files are root's (its directory itself stays its
 * own) and its smaps_rollup will not open, 1 when they are its own, -1
 * when it cannot be told (as root).
 */
static int
probe_dumpable(pid_t pid)
{
	char		 path[64];
	struct stat	 st;
	int		 fd;

	if (getuid() == 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (stat(path, &st) == -1)
		fatal("%s", path);
	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		close(fd);
		return 1;
	}
	if (errno != EACCES && errno != EPERM)
		fatal("%s", path);
	return st.st_uid == 0 ? 0 : 1;
}

/*
 * The spawn test: a spawner in its sandbox starts every role, each of which
 * checks its descriptors, applies its own sandbox (under the filter and
 * domain it inherits) and does its work.
 */

struct probe_spawned {
	const char	*role;
	pid_t		 pid;
	int		 pipe;
	int		 status;
	int		 done;
};

static struct probe_spawned	 spawned[] = {
	{ "fsguard", -1, -1, 0, 0 },
	{ "docker", -1, -1, 0, 0 },
	{ "egress", -1, -1, 0, 0 },
	{ "broker", -1, -1, 0, 0 },
	{ "research", -1, -1, 0, 0 },
};
#define NSPAWNED	(sizeof(spawned) / sizeof(spawned[0]))

static void
probe_spawn_reap(evutil_socket_t sig, short ev, void *arg)
{
	struct event_base	*base = arg;
	size_t			 i, left = 0;
	pid_t			 pid;
	int			 status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		for (i = 0; i < NSPAWNED; i++)
			if (spawned[i].pid == pid) {
				spawned[i].status = status;
				spawned[i].done = 1;
			}
	for (i = 0; i < NSPAWNED; i++)
		if (!spawned[i].done)
			left++;
	if (left == 0)
		event_base_loopbreak(base);
}

static void
probe_spawn_timeout(evutil_socket_t fd, short ev, void *arg)
{
	size_t	 i;

	for (i = 0; i < NSPAWNED; i++)
		if (!spawned[i].done)
			kill(spawned[i].pid, SIGKILL);
}

static void
probe_work_spawn(void)
{
	struct sandbox_fs_rule	 rules[4];
	struct event_base	*base;
	struct event		*sigchld, *timeout;
	struct timeval		 tv = { 60, 0 };
	struct pollfd		 pfd;
	char			 selfdir[PATH_MAX], port[16], c;
	char			*argv[12];
	size_t			 n, i;
	long			 rss;
	pid_t			 spawner;
	int			 dumpable;
	int			 child[NSPAWNED][2], nfds[NSPAWNED];
	int			 sp[2], ep[2], pids[2], rc, status, bad = 0;

	/* The pipes are this process's, the supervisor's. */
	for (i = 0; i < NSPAWNED; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
		    sp) == -1)
			fatal("socketpair");
		spawned[i].pipe = sp[0];
		child[i][0] = sp[1];
		nfds[i] = 1;
		if (strcmp(spawned[i].role, "broker") == 0 ||
		    strcmp(spawned[i].role, "research") == 0) {
			/* ep[0] stays open until the end: EOF would mean
			 * egress is gone. */
			if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
			    ep) == -1)
				fatal("socketpair");
			child[i][nfds[i]++] = ep[1];
		}
	}

	/* The spawner, forked from it, starts each child as this process's
	 * own (CLONE_PARENT) under the spawner's sandbox, and says which. */
	if (pipe2(pids, O_CLOEXEC) == -1)
		fatal("pipe2");
	snprintf(port, sizeof(port), "%d", env.tls_port);
	/* The children and this process share stderr and stdout. */
	fflush(stdout);
	if ((spawner = fork()) == -1)
		fatal("fork");
	if (spawner == 0) {
		probe_spawner_rules(rules, &n, selfdir, sizeof(selfdir));
		sandbox_spawner(rules, n);
		for (i = 0; i < NSPAWNED; i++) {
			argv[0] = "rtsandbox-probe";
			argv[1] = "child";
			argv[2] = (char *)spawned[i].role;
			argv[3] = env.state_dir;
			argv[4] = env.docker_sock;
			argv[5] = env.docker_ok ? "1" : "0";
			argv[6] = env.ca_file[0] != '\0' ? env.ca_file : "-";
			argv[7] = port;
			argv[8] = NULL;
			spawned[i].pid = proc_spawn_sibling(env.self, argv, NULL,
			    child[i], nfds[i]);
			if (write(pids[1], &spawned[i].pid,
			    sizeof(spawned[i].pid)) != sizeof(spawned[i].pid))
				_exit(1);
		}
		_exit(0);
	}
	close(pids[1]);
	for (i = 0; i < NSPAWNED; i++) {
		if (read(pids[0], &spawned[i].pid, sizeof(spawned[i].pid)) !=
		    sizeof(spawned[i].pid) || spawned[i].pid <= 0)
			fatalx("the spawner did not start %s",
			    spawned[i].role);
		close(child[i][0]);
		if (nfds[i] == 2)
			close(child[i][1]);
	}
	close(pids[0]);
	if (waitpid(spawner, &status, 0) != spawner || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		fatalx("the spawner failed");

	/* Unconfined: the children's memory is in the spawner's domain. */
	base = sandbox_event_base();
	if ((sigchld = evsignal_new(base, SIGCHLD, probe_spawn_reap,
	    base)) == NULL || evsignal_add(sigchld, NULL) == -1 ||
	    (timeout = evtimer_new(base, probe_spawn_timeout, NULL)) == NULL ||
	    evtimer_add(timeout, &tv) == -1)
		fatalx("spawn events");

	/* Each child says when its work is done and waits: its memory is
	 * read from /proc meanwhile. */
	for (i = 0; i < NSPAWNED; i++) {
		pfd.fd = spawned[i].pipe;
		pfd.events = POLLIN;
		/* SIGCHLD of the children let go before interrupts poll. */
		while ((rc = poll(&pfd, 1, 60000)) == -1 && errno == EINTR)
			;
		if (rc != 1 || read(spawned[i].pipe, &c, 1) != 1 || c != 'R') {
			printf("spawn: %s never reported\n", spawned[i].role);
			bad = 1;
			continue;
		}
		/* Not dumpable: its /proc files are root's, and only its
		 * status (RSS) is read; as root neither tells. */
		rss = proc_rss_kib(spawned[i].pid);
		dumpable = probe_dumpable(spawned[i].pid);
		printf("spawn: %s RSS %ld KiB, %s\n", spawned[i].role, rss,
		    dumpable == 0 ? "not dumpable" : dumpable == 1 ?
		    "DUMPABLE" : "dumpable not seen as root");
		if (rss <= 0 || dumpable == 1)
			bad = 1;
		if (write(spawned[i].pipe, "Q", 1) != 1)
			fatal("write to %s", spawned[i].role);
	}
	if (event_base_dispatch(base) == -1)
		fatalx("event_base_dispatch");
	for (i = 0; i < NSPAWNED; i++) {
		if (!spawned[i].done) {
			printf("spawn: %s never ended\n", spawned[i].role);
			bad = 1;
		} else if (WIFSIGNALED(spawned[i].status)) {
			printf("spawn: %s killed by signal %d (%s)\n",
			    spawned[i].role, WTERMSIG(spawned[i].status),
			    strsignal(WTERMSIG(spawned[i].status)));
			bad = 1;
		} else if (WEXITSTATUS(spawned[i].status) != 0) {
			printf("spawn: %s exited %d\n", spawned[i].role,
			    WEXITSTATUS(spawned[i].status));
			bad = 1;
		} else
			printf("spawn: %s did its work in its sandbox\n",
			    spawned[i].role);
	}
	log_info("work done in the sandbox");
	exit(bad ? 1 : 0);
}

/* A child started by the spawn test: argv as built above. */
static void __attribute__((noreturn))
probe_child_main(int argc, char *argv[])
{
	const char	*role;
	char		 c;
	int		 broker, research;

	if (argc != 8)
		fatalx("child: bad arguments");
	role = argv[2];
	broker = strcmp(role, "broker") == 0;
	research = strcmp(role, "research") == 0;
	log_setname(role);
	/* The tables are what is tested here, wherever the kernel refuses
	 * the empty root. */
	sandbox_empty_root_optional(1);
	proc_child_check_fds(broker || research ? 2 : 1);
	snprintf(env.state_dir, sizeof(env.state_dir), "%s", argv[3]);
	snprintf(env.docker_sock, sizeof(env.docker_sock), "%s", argv[4]);
	env.docker_ok = strcmp(argv[5], "1") == 0;
	if (strcmp(argv[6], "-") != 0)
		snprintf(env.ca_file, sizeof(env.ca_file), "%s", argv[6]);
	env.tls_port = atoi(argv[7]);

	/* The inherited pipes are the role's; the work needs none. */
	if (strcmp(role, "fsguard") == 0)
		probe_work_fsguard();
	else if (strcmp(role, "docker") == 0)
		probe_work_docker(env.docker_ok);
	else if (strcmp(role, "egress") == 0)
		probe_work_egress(env.tls_port != 0);
	else if (broker)
		probe_work_broker();
	else if (research)
		probe_work_research();
	else
		fatalx("child: unknown role %s", role);
	/* The log and exit() with its atexit handlers (OpenSSL's) are part
	 * of the work. */
	log_info("work done in the sandbox");
	if (write(FD_PARENT, "R", 1) != 1 || read(FD_PARENT, &c, 1) != 1)
		fatalx("child: no word from the supervisor");
	exit(0);
}

/*
 * Forbidden calls.  Raw system calls, so that no libc wrapper does
 * something else first.
 */

static long
probe_call(const char *call)
{
	char *const	 nargv[] = { "/bin/true", NULL };
	char *const	 nenvp[] = { NULL };
	struct stat	 st;

	if (strcmp(call, "openat") == 0)
		return syscall(SYS_openat, AT_FDCWD, "/",
		    O_RDONLY | O_DIRECTORY);
	if (strcmp(call, "open-write") == 0)
		return syscall(SYS_openat, AT_FDCWD, "/tmp/rtsandbox-probe",
		    O_WRONLY | O_CREAT, 0600);
	if (strcmp(call, "socket-inet") == 0)
		return syscall(SYS_socket, AF_INET, SOCK_STREAM, 0);
	if (strcmp(call, "socket-unix") == 0)
		return syscall(SYS_socket, AF_UNIX, SOCK_STREAM, 0);
	if (strcmp(call, "connect") == 0)
		return syscall(SYS_connect, -1, NULL, 0);
	if (strcmp(call, "execve") == 0)
		return syscall(SYS_execve, nargv[0], nargv, nenvp);
	if (strcmp(call, "fork") == 0)
		return syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (strcmp(call, "kill") == 0)
		return syscall(SYS_kill, 1, 0);
	if (strcmp(call, "mmap-exec") == 0)
		return syscall(SYS_mmap, NULL, 4096, PROT_READ | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (strcmp(call, "ioctl-tiocsti") == 0)
		return syscall(SYS_ioctl, STDERR_FILENO, TIOCSTI, "x");
	if (strcmp(call, "ioctl-fionread") == 0)
		return syscall(SYS_ioctl, STDERR_FILENO, FIONREAD, &st.st_size);
	if (strcmp(call, "mkdirat") == 0)
		return syscall(SYS_mkdirat, AT_FDCWD, "/tmp/rtsandbox-probe",
		    0700);
	if (strcmp(call, "unlinkat") == 0)
		return syscall(SYS_unlinkat, AT_FDCWD, "/tmp/rtsandbox-probe",
		    0);
	if (strcmp(call, "symlinkat") == 0)
		return syscall(SYS_symlinkat, "/", AT_FDCWD,
		    "/tmp/rtsandbox-probe");
	if (strcmp(call, "linkat") == 0)
		return syscall(SYS_linkat, AT_FDCWD, "/tmp/a", AT_FDCWD,
		    "/tmp/b", 0);
	if (strcmp(call, "mknodat") == 0)
		return syscall(SYS_mknodat, AT_FDCWD, "/tmp/rtsandbox-probe",
		    S_IFIFO | 0600, 0);
	if (strcmp(call, "ptrace") == 0)
		return syscall(SYS_ptrace, PTRACE_TRACEME, 0, 0, 0);
	if (strcmp(call, "mount") == 0)
		return syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL);
	if (strcmp(call, "unshare") == 0)
		return syscall(SYS_unshare, CLONE_NEWUSER);
	if (strcmp(call, "clone-newuser") == 0)
		return syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	/* stat(2) of a path: only fstat's AT_EMPTY_PATH form is allowed */
	if (strcmp(call, "stat") == 0)
		return syscall(SYS_newfstatat, AT_FDCWD, "/", &st, 0);
	if (strcmp(call, "chroot") == 0)
		return syscall(SYS_chroot, "/");
	if (strcmp(call, "fsopen") == 0)
		return syscall(SYS_fsopen, "tmpfs", 0);
	if (strcmp(call, "chmod") == 0)
		return syscall(SYS_fchmodat, AT_FDCWD, "/tmp", 0777, 0);
	if (strcmp(call, "chown") == 0)
		return syscall(SYS_fchownat, AT_FDCWD, "/tmp", -1, -1, 0);
	if (strcmp(call, "bind") == 0)
		return syscall(SYS_bind, -1, NULL, 0);
	fatalx("unknown call %s", call);
}

static void
probe_sandbox_only(const char *role)
{
	struct sandbox_fs_rule	 rules[4];
	const char		*files[1];
	char			 selfdir[PATH_MAX];
	size_t			 n;

	if (strcmp(role, "broker") == 0)
		sandbox_broker();
	else if (strcmp(role, "fsguard") == 0)
		sandbox_fsguard(env.state_dir);
	else if (strcmp(role, "docker") == 0) {
		if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
			fatalx("curl_global_init");
		sandbox_docker(env.docker_sock);
	} else if (strcmp(role, "egress") == 0) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
			fatalx("curl_global_init");
		files[0] = env.self;
		sandbox_egress(files, 1);
	} else if (strcmp(role, "supervisor") == 0) {
		probe_supervisor_sandbox_rule(&rules[0]);
		sandbox_supervisor(rules, 1);
	} else if (strcmp(role, "spawner") == 0) {
		probe_spawner_rules(rules, &n, selfdir, sizeof(selfdir));
		sandbox_spawner(rules, n);
	} else if (strcmp(role, "research") == 0) {
		text_init();
		sandbox_research();
	} else
		fatalx("unknown role %s", role);
}

/*
 * The parent side.
 */

static int
probe_run_program(char *const argv[], int quiet)
{
	pid_t	 pid;
	int	 status, fd;

	switch ((pid = fork())) {
	case -1:
		fatal("fork");
	case 0:
		if (quiet && (fd = open("/dev/null", O_WRONLY)) != -1) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) == -1)
		fatal("waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int
probe_free_port(void)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 fd, port;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1)
		fatal("free port");
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

static int
probe_tcp_connects(int port)
{
	struct sockaddr_in	 sin;
	int			 fd, rc;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		fatal("socket");
	rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	close(fd);
	return rc == 0;
}

/* A self-signed certificate for localhost and openssl s_server -www on a
 * loopback port; 0 when openssl is not there. */
static int
probe_tls_start(void)
{
	char	 cert[PATH_MAX + 16], key[PATH_MAX + 16], accept[32];
	char	 san[] = "subjectAltName=DNS:localhost,IP:127.0.0.1";
	char	 subj[] = "/CN=localhost";
	int	 i, fd;

	snprintf(env.tls_dir, sizeof(env.tls_dir), "/tmp/rtsandbox-tls.XXXXXX");
	if (mkdtemp(env.tls_dir) == NULL)
		fatal("mkdtemp");
	snprintf(cert, sizeof(cert), "%s/cert.pem", env.tls_dir);
	snprintf(key, sizeof(key), "%s/key.pem", env.tls_dir);
	{
		char *const argv[] = { "openssl", "req", "-x509", "-newkey",
		    "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		    "-keyout", key, "-out", cert, "-days", "1", "-subj", subj,
		    "-addext", san, NULL };

		if (probe_run_program(argv, 1) != 0) {
			printf("openssl cannot make a certificate\n");
			return 0;
		}
	}
	if (snprintf(env.ca_file, sizeof(env.ca_file), "%s", cert) >=
	    (int)sizeof(env.ca_file))
		fatalx("certificate path too long");
	env.tls_port = probe_free_port();
	snprintf(accept, sizeof(accept), "127.0.0.1:%d", env.tls_port);
	switch ((env.tls_pid = fork())) {
	case -1:
		fatal("fork");
	case 0:
		/* Never outlive the test. */
		prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
		if ((fd = open("/dev/null", O_RDWR)) != -1) {
			dup2(fd, STDIN_FILENO);
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		execlp("openssl", "openssl", "s_server", "-accept", accept,
		    "-cert", cert, "-key", key, "-www", "-quiet", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 100; i++) {
		if (probe_tcp_connects(env.tls_port))
			return 1;
		usleep(50000);
	}
	fatalx("openssl s_server did not start");
}

static void
probe_tls_stop(void)
{
	char	 path[PATH_MAX + 16];

	if (env.tls_pid > 0) {
		kill(env.tls_pid, SIGTERM);
		waitpid(env.tls_pid, NULL, 0);
	}
	if (env.tls_dir[0] == '\0')
		return;
	snprintf(path, sizeof(path), "%s/cert.pem", env.tls_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/key.pem", env.tls_dir);
	unlink(path);
	rmdir(env.tls_dir);
}

static int
probe_have_openssl(void)
{
	char *const	 argv[] = { "openssl", "version", NULL };

	return probe_run_program(argv, 1) == 0;
}

static int
probe_docker_connects(const char *path)
{
	struct sockaddr_un	 sun;
	int			 fd, rc;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if ((size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s",
	    path) >= sizeof(sun.sun_path))
		return 0;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		fatal("socket");
	rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	return rc == 0;
}

static void
probe_cleanup(void)
{
	probe_tls_stop();
	if (env.secret[0] != '\0')
		unlink(env.secret);
	if (env.state_dir[0] != '\0')
		rmdir(env.state_dir);
}

/* A file under the state directory: what a taken-over broker must not
 * learn exists. */
static void
probe_secret_make(void)
{
	int	 fd;

	if (snprintf(env.secret, sizeof(env.secret), "%s/.channel-key",
	    env.state_dir) >= (int)sizeof(env.secret))
		fatalx("state directory path too long");
	if ((fd = open(env.secret, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) == -1 || write(fd, "discord:1", 9) != 9 || close(fd) == -1)
		fatal("%s", env.secret);
}

/* Wait for the child; 0 when it ended as expected. */
static int
probe_judge(pid_t pid, int expect_sigsys, const char *what)
{
	int	 status;

	if (waitpid(pid, &status, 0) == -1)
		fatal("waitpid");
	if (WIFSIGNALED(status)) {
		printf("%s: killed by signal %d (%s)\n", what,
		    WTERMSIG(status), strsignal(WTERMSIG(status)));
		return expect_sigsys && WTERMSIG(status) == SIGSYS ? 0 : 1;
	}
	if (WEXITSTATUS(status) == PROBE_NOT_KILLED)
		printf("%s: the call returned, the process lives\n", what);
	else
		printf("%s: exited %d\n", what, WEXITSTATUS(status));
	if (WEXITSTATUS(status) == PROBE_SKIP)
		return PROBE_SKIP;
	return !expect_sigsys && WEXITSTATUS(status) == 0 ? 0 : 1;
}

/* no-root required: the role must end by its own fatal error (exit 1),
 * which says why, before its work, not by a signal.  Its stderr is on
 * the pipe errfd. */
static int
probe_judge_refused(pid_t pid, int errfd, const char *what)
{
	char	 buf[4096];
	size_t	 len = 0;
	ssize_t	 n;
	int	 status;

	while (len < sizeof(buf) - 1 && (n = read(errfd, buf + len,
	    sizeof(buf) - 1 - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			fatal("read");
		len += (size_t)n;
	}
	buf[len] = '\0';
	close(errfd);
	printf("%s: said: %s", what, buf);
	if (waitpid(pid, &status, 0) == -1)
		fatal("waitpid");
	if (WIFSIGNALED(status)) {
		printf("%s: killed by signal %d (%s)\n", what,
		    WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 1;
	}
	printf("%s: exited %d\n", what, WEXITSTATUS(status));
	return WEXITSTATUS(status) == 1 && strstr(buf, "fatal in ") != NULL &&
	    strstr(buf, "sandbox.empty_root is not \"optional\": refusing "
	    "to run") != NULL ? 0 : 1;
}

static void __attribute__((noreturn))
usage(void)
{
	fprintf(stderr, "usage: rtsandbox-probe role allowed\n"
	    "       rtsandbox-probe role forbidden call\n"
	    "       rtsandbox-probe docker curl [socket]\n"
	    "       rtsandbox-probe egress https\n"
	    "       rtsandbox-probe supervisor spawn\n"
	    "       rtsandbox-probe broker|research empty\n"
	    "       rtsandbox-probe broker|research empty-forbidden call\n"
	    "       rtsandbox-probe broker|research no-root "
	    "required|optional\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	const char	*role, *mode, *call = NULL;
	char		 what[128], why[640];
	ssize_t		 n;
	pid_t		 pid;
	int		 rc, no_root = 0, errpipe[2];

	log_init("probe", 0);
	/* A buffer of our own: glibc would fstat stdout and ask the terminal
	 * on first use, inside a sandbox. */
	setvbuf(stdout, outbuf, _IOLBF, sizeof(outbuf));
	if (argc >= 2 && strcmp(argv[1], "child") == 0)
		probe_child_main(argc, argv);
	if (argc < 3)
		usage();
	role = argv[1];
	mode = argv[2];
	if (strcmp(mode, "forbidden") == 0 ||
	    strcmp(mode, "empty-forbidden") == 0) {
		if (argc != 4)
			usage();
		call = argv[3];
	} else if (strcmp(mode, "no-root") == 0) {
		if (argc != 4 || (strcmp(role, "broker") != 0 &&
		    strcmp(role, "research") != 0) ||
		    (strcmp(argv[3], "required") != 0 &&
		    strcmp(argv[3], "optional") != 0))
			usage();
		no_root = strcmp(argv[3], "required") == 0 ? 1 : 2;
	} else if (strcmp(mode, "curl") == 0) {
		if (argc > 4 || strcmp(role, "docker") != 0)
			usage();
	} else if (argc != 3)
		usage();

	if ((n = readlink("/proc/self/exe", env.self,
	    sizeof(env.self) - 1)) == -1)
		fatal("readlink /proc/self/exe");
	env.self[n] = '\0';
	snprintf(env.state_dir, sizeof(env.state_dir),
	    "/tmp/rtsandbox-probe.XXXXXX");
	if (mkdtemp(env.state_dir) == NULL)
		fatal("mkdtemp");
	snprintf(env.docker_sock, sizeof(env.docker_sock), "%s",
	    argc == 4 && strcmp(mode, "curl") == 0 ? argv[3] : DOCKER_SOCKET);
	env.docker_ok = probe_docker_connects(env.docker_sock);
	if (strncmp(mode, "empty", 5) == 0) {
		if (strcmp(role, "broker") != 0 &&
		    strcmp(role, "research") != 0)
			usage();
		env.empty_root = 1;
		probe_secret_make();
	}

	if (strcmp(mode, "curl") == 0 && !env.docker_ok) {
		printf("docker curl: %s does not accept connections, "
		    "skipped\n", env.docker_sock);
		probe_cleanup();
		return PROBE_SKIP;
	}
	if ((strcmp(mode, "https") == 0 || strcmp(mode, "spawn") == 0) &&
	    probe_have_openssl() && !probe_tls_start())
		env.tls_port = 0;
	if (strcmp(mode, "https") == 0 && env.tls_port == 0) {
		printf("egress https: no openssl, skipped\n");
		probe_cleanup();
		return PROBE_SKIP;
	}

	if (no_root && hostcheck_empty_root(why, sizeof(why)) != 0)
		fatalx("%s no-root: the kernel grants the empty root here (%s); "
		    "run the probe under rtsandbox-deny EPERM:unshare", role,
		    why);

	if (call != NULL)
		snprintf(what, sizeof(what), "%s %s %s", role, mode, call);
	else if (no_root)
		snprintf(what, sizeof(what), "%s %s %s", role, mode, argv[3]);
	else
		snprintf(what, sizeof(what), "%s %s", role, mode);
	if (no_root == 1 && pipe2(errpipe, O_CLOEXEC) == -1)
		fatal("pipe2");
	fflush(stdout);
	switch ((pid = fork())) {
	case -1:
		fatal("fork");
	case 0:
		if (no_root == 1 && dup2(errpipe[1], STDERR_FILENO) == -1)
			_exit(2);
		log_setname(role);
		/* What is tested is the table, wherever the kernel refuses
		 * the empty root; but for no-root, which tests that. */
		sandbox_empty_root_optional(no_root != 1);
		if (call != NULL) {
			if (env.empty_root)
				probe_empty_root_enter();
			probe_sandbox_only(role);
			probe_call(call);
			_exit(PROBE_NOT_KILLED);
		}
		if (strcmp(mode, "spawn") == 0 &&
		    strcmp(role, "supervisor") == 0)
			probe_work_spawn();
		else if (strcmp(mode, "curl") == 0)
			probe_work_docker(1);
		else if (strcmp(mode, "https") == 0 &&
		    strcmp(role, "egress") == 0)
			probe_work_egress(1);
		else if (strcmp(mode, "allowed") != 0 &&
		    strcmp(mode, "empty") != 0 && !no_root)
			usage();
		else if (strcmp(role, "broker") == 0)
			probe_work_broker();
		else if (strcmp(role, "fsguard") == 0)
			probe_work_fsguard();
		else if (strcmp(role, "docker") == 0)
			probe_work_docker(0);
		else if (strcmp(role, "egress") == 0)
			probe_work_egress(0);
		else if (strcmp(role, "supervisor") == 0)
			probe_work_supervisor();
		else if (strcmp(role, "research") == 0)
			probe_work_research();
		else
			usage();
		log_info("work done in the sandbox");
		exit(0);
	}
	if (no_root == 1) {
		close(errpipe[1]);
		rc = probe_judge_refused(pid, errpipe[0], what);
	} else
		rc = probe_judge(pid, call != NULL, what);
	probe_cleanup();
	printf("%s: %s\n", what, rc == 0 ? "as expected" :
	    rc == PROBE_SKIP ? "skipped" : "NOT as expected");
	return rc;
}
