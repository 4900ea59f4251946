/*
 * dockerd-client/dockrun.c against the real Docker daemon: precheck runs
 * on an event loop, in the image of tests/fixtures/prechecker.  What came
 * back, what the container was while it ran, and that it is gone when the
 * end is told, whichever way it ended.
 *
 * The tests skip, each with a notice, when the Docker socket does not
 * connect or the test image cannot be built.  Containers are named
 * rtsbrun<pid>.precheck-<run> and removed at the end.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <event2/event.h>

#include "dockapi.h"
#include "dockops.h"
#include "dockrun.h"
#include "limits.h"

#define TEST_IMAGE	"rtsandbox-test-prechecker:latest"
#define LABEL_CHANNEL	"roundtable.sandbox.channel"
#define LABEL_PROFILE	"roundtable.sandbox.profile"

static const char	*docker_socket = "/var/run/docker.sock";
static int		 docker_ok;
static char		 skip_reason[256];
static char		 prefix[32];
static char		 state_dir[64];
static char		 scratch_dir[64];

#define NEED_DOCKER()	do {					\
	if (!docker_ok) {					\
		printf("skip %s: %s\n", __func__, skip_reason);	\
		fflush(stdout);					\
		return;						\
	}							\
} while (0)

/* argv's exit status, its stdout and stderr into *out when not NULL. */
static int
run_args(char **out, const char *arg0, ...)
{
	char		*av[16], *buf = NULL, *nb;
	const char	*a;
	va_list		 ap;
	size_t		 len = 0, cap = 0;
	ssize_t		 r;
	int		 n = 0, p[2], st;
	pid_t		 pid;

	va_start(ap, arg0);
	for (a = arg0; a != NULL && n < 15; a = va_arg(ap, const char *))
		av[n++] = (char *)a;
	va_end(ap);
	av[n] = NULL;
	if (pipe(p) == -1 || (pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		close(p[0]);
		if (dup2(p[1], 1) == -1 || dup2(p[1], 2) == -1)
			_exit(127);
		execvp(av[0], av);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		if (cap - len < 4096) {
			cap = cap == 0 ? 65536 : cap * 2;
			if ((nb = realloc(buf, cap)) == NULL)
				break;
			buf = nb;
		}
		if ((r = read(p[0], buf + len, cap - len - 1)) <= 0) {
			if (r == -1 && errno == EINTR)
				continue;
			break;
		}
		len += (size_t)r;
	}
	close(p[0]);
	if (buf != NULL)
		buf[len] = '\0';
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			return -1;
	if (out != NULL)
		*out = buf;
	else
		free(buf);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *
fixtures_dir(void)
{
	static char	 dir[4096];
	const char	*f = __FILE__, *slash;

	if (getenv("RTSB_FIXTURES_DIR") != NULL)
		return getenv("RTSB_FIXTURES_DIR");
	if ((slash = strrchr(f, '/')) == NULL)
		return "../fixtures";
	(void)snprintf(dir, sizeof(dir), "%.*s/../fixtures", (int)(slash - f),
	    f);
	return dir;
}

static int
ensure_image(void)
{
	char	 src[4096], dir[128], bin[192];
	char	*out = NULL;
	int	 rc;

	if (run_args(NULL, "docker", "image", "inspect", TEST_IMAGE,
	    (char *)NULL) == 0)
		return 0;
	(void)snprintf(dir, sizeof(dir), "%s/image", scratch_dir);
	(void)snprintf(bin, sizeof(bin), "%s/prechecker", dir);
	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		return -1;
	(void)snprintf(src, sizeof(src), "%s/prechecker/prechecker.c",
	    fixtures_dir());
	if ((rc = run_args(&out, "gcc", "-static", "-O2", "-o", bin, src,
	    (char *)NULL)) != 0) {
		fprintf(stderr, "building the prechecker failed (%d):\n%s\n",
		    rc, out != NULL ? out : "");
		free(out);
		return -1;
	}
	free(out);
	(void)snprintf(src, sizeof(src), "%s/prechecker/Dockerfile",
	    fixtures_dir());
	if (run_args(NULL, "cp", src, dir, (char *)NULL) != 0)
		return -1;
	setenv("DOCKER_BUILDKIT", "0", 1);
	out = NULL;
	if ((rc = run_args(&out, "docker", "build", "-q", "-t", TEST_IMAGE,
	    dir, (char *)NULL)) != 0) {
		fprintf(stderr, "docker build failed (%d):\n%s\n", rc,
		    out != NULL ? out : "");
		free(out);
		return -1;
	}
	free(out);
	return 0;
}

static struct dock_config	 conf;

static void
make_config(void)
{
	memset(&conf, 0, sizeof(conf));
	conf.prefix = prefix;
	conf.label_channel = LABEL_CHANNEL;
	conf.label_profile = LABEL_PROFILE;
	conf.image = TEST_IMAGE;
	conf.state_dir = state_dir;
	conf.time_zone = "UTC";
	conf.uid = getuid() != 0 ? getuid() : 65534;
	conf.gid = getgid() != 0 ? getgid() : 65534;
	conf.memory_mib = 512;
	conf.nano_cpus = 1000000000;
	conf.pids = 64;
}

/* The run's directories, as the file guard would have made them. */
static void
make_dirs(uint64_t run)
{
	char	 d[256];

	(void)snprintf(d, sizeof(d), "%s/.precheck", state_dir);
	ck_assert(mkdir(d, 0700) == 0 || errno == EEXIST);
	(void)snprintf(d, sizeof(d), "%s/.precheck/%llu", state_dir,
	    (unsigned long long)run);
	ck_assert(mkdir(d, 0700) == 0 || errno == EEXIST);
	(void)snprintf(d, sizeof(d), "%s/.precheck/%llu/run", state_dir,
	    (unsigned long long)run);
	ck_assert(mkdir(d, 0755) == 0 || errno == EEXIST);
	(void)snprintf(d, sizeof(d), "%s/.precheck/%llu/ws", state_dir,
	    (unsigned long long)run);
	ck_assert(mkdir(d, 0755) == 0 || errno == EEXIST);
	/* The container's user is the test's: it may read both. */
	(void)snprintf(d, sizeof(d), "%s/.precheck", state_dir);
	(void)chmod(state_dir, 0755);
	(void)chmod(d, 0755);
	(void)snprintf(d, sizeof(d), "%s/.precheck/%llu", state_dir,
	    (unsigned long long)run);
	(void)chmod(d, 0755);
}

/* What a run's end told. */
struct told {
	int		 n;
	uint64_t	 msgid, run;
	int		 ok;
	int64_t		 exit_code;
	int		 timed_out, stdout_over;
	uint64_t	 stderr_bytes;
	uint8_t		 out[PRECHECK_STDOUT_MAX];
	size_t		 out_len;
	char		 err[512];
	int		 gone;		/* no container by then */
};

static struct told		 told[4];
static int			 ntold;
static struct event_base	*base;
static struct dock_api		*da;
static struct dock_runs		*runs;

static int
container_exists(uint64_t run)
{
	char	 name[DOCK_PRECHECK_NAME_MAX + 1];

	ck_assert_int_eq(dock_precheck_name(&conf, run, name, sizeof(name)),
	    DOCK_OK);
	return run_args(NULL, "docker", "container", "inspect", name,
	    (char *)NULL) == 0;
}

static void
on_done(uint64_t msgid, uint64_t run, const struct dock_run_result *res,
    const char *err, void *arg)
{
	struct told	*t;

	ck_assert_int_lt(ntold, 4);
	t = &told[ntold++];
	t->n = ntold;
	t->msgid = msgid;
	t->run = run;
	t->gone = !container_exists(run);
	if (res != NULL) {
		t->ok = 1;
		t->exit_code = res->exit_code;
		t->timed_out = res->timed_out;
		t->stdout_over = res->stdout_over;
		t->stderr_bytes = res->stderr_bytes;
		ck_assert_uint_le(res->out_len, PRECHECK_STDOUT_MAX);
		memcpy(t->out, res->out, res->out_len);
		t->out_len = res->out_len;
	} else
		(void)snprintf(t->err, sizeof(t->err), "%s", err);
}

static void
setup(void)
{
	ntold = 0;
	memset(told, 0, sizeof(told));
	make_config();
	if (!docker_ok)
		return;
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	da = dock_api_new(docker_socket);
	ck_assert_ptr_nonnull(da);
	runs = dock_runs_new(base, docker_socket, da, &conf, on_done, NULL);
	ck_assert_ptr_nonnull(runs);
}

static void
start(uint64_t msgid, uint64_t run, const char *const *argv, size_t argc,
    const char *input, uint64_t timeout_ms)
{
	struct dock_precheck	 pc;

	memset(&pc, 0, sizeof(pc));
	pc.run = run;
	pc.channel = "discord:123";
	pc.argv = argv;
	pc.argc = argc;
	pc.memory_mib = PRECHECK_MEMORY_MIB_MIN;
	pc.nano_cpus = 500000000;
	pc.pids = PRECHECK_PIDS_MIN;
	pc.timeout_ms = timeout_ms;
	pc.input_len = strlen(input);
	make_dirs(run);
	ck_assert_int_eq(dock_check_precheck(&conf, &pc), DOCK_OK);
	dock_runs_start(runs, msgid, &pc, (const uint8_t *)input);
}

static void
on_guard(evutil_socket_t fd, short what, void *arg)
{
	event_base_loopbreak(base);
}

/* The loop until want ends were told, 60 s at most. */
static void
loop_until(int want)
{
	struct timeval	 tv = { 0, 50000 };
	struct event	*guard;
	int		 i;

	guard = evtimer_new(base, on_guard, NULL);
	for (i = 0; i < 1200 && ntold < want; i++) {
		evtimer_add(guard, &tv);
		event_base_loop(base, EVLOOP_ONCE);
	}
	event_free(guard);
	ck_assert_int_eq(ntold, want);
}

START_TEST(echo_round_trip)
{
	static const char *const argv[] = { "/prechecker", "echo" };
	char	 input[PRECHECK_INPUT_MAX + 1];

	NEED_DOCKER();
	/* The largest input: more than a socket takes at once. */
	memset(input, 'i', PRECHECK_INPUT_MAX);
	memcpy(input, "{\"x\":1}", 7);
	input[PRECHECK_INPUT_MAX] = '\0';
	start(7, 1, argv, 2, input, 30000);
	loop_until(1);
	ck_assert_msg(told[0].ok, "error: %s", told[0].err);
	ck_assert_uint_eq(told[0].msgid, 7);
	ck_assert_int_eq(told[0].exit_code, 3);
	ck_assert(!told[0].timed_out && !told[0].stdout_over);
	ck_assert_uint_eq(told[0].stderr_bytes, 5);
	ck_assert_uint_eq(told[0].out_len, PRECHECK_INPUT_MAX);
	{
		size_t	 k;

		for (k = 0; k < PRECHECK_INPUT_MAX; k++)
			if (told[0].out[k] != (uint8_t)input[k])
				break;
		ck_assert_msg(k == PRECHECK_INPUT_MAX, "differs at %zu: "
		    "%.16s", k, (char *)told[0].out + k);
	}
	ck_assert(told[0].gone);
	ck_assert_uint_eq(dock_runs_count(runs), 0);
}
END_TEST

START_TEST(sealed_container)
{
	static const char *const argv[] = { "/prechecker", "id", "two words",
	    "x" };
	char	 want[128];

	NEED_DOCKER();
	start(1, 2, argv, 4, "{}", 30000);
	loop_until(1);
	ck_assert_msg(told[0].ok, "error: %s", told[0].err);
	ck_assert_int_eq(told[0].exit_code, 0);
	told[0].out[told[0].out_len < sizeof(told[0].out) ? told[0].out_len :
	    sizeof(told[0].out) - 1] = '\0';
	(void)snprintf(want, sizeof(want), "%llu:%llu ",
	    (unsigned long long)conf.uid, (unsigned long long)conf.gid);
	ck_assert_msg(strncmp((char *)told[0].out, want, strlen(want)) == 0,
	    "out: %s", told[0].out);
	ck_assert_ptr_nonnull(strstr((char *)told[0].out, " HOME=/tmp/home"));
	ck_assert_ptr_nonnull(strstr((char *)told[0].out, " TZ=UTC"));
	ck_assert_ptr_nonnull(strstr((char *)told[0].out, " tmp=rw"));
	ck_assert_ptr_nonnull(strstr((char *)told[0].out, " ws=ro"));
	ck_assert_ptr_nonnull(strstr((char *)told[0].out,
	    " arg=two words arg=x"));
	ck_assert(told[0].gone);
}
END_TEST

/* While it runs: what Docker says of it. */
static void
on_inspect(evutil_socket_t fd, short what, void *arg)
{
	char		 name[DOCK_PRECHECK_NAME_MAX + 1], want[256];
	char		*out = NULL;
	cJSON		*root;
	const cJSON	*c, *hc, *b;

	(void)dock_precheck_name(&conf, 3, name, sizeof(name));
	ck_assert_int_eq(run_args(&out, "docker", "container", "inspect",
	    name, (char *)NULL), 0);
	root = cJSON_Parse(out);
	free(out);
	c = cJSON_GetArrayItem(root, 0);
	hc = cJSON_GetObjectItem(c, "HostConfig");
	ck_assert_str_eq(cJSON_GetObjectItem(hc, "NetworkMode")->valuestring,
	    "none");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(hc, "ReadonlyRootfs")));
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(hc,
	    "LogConfig"), "Type")->valuestring, "none");
	ck_assert_double_eq(cJSON_GetObjectItem(hc, "Memory")->valuedouble,
	    PRECHECK_MEMORY_MIB_MIN * (double)MIB);
	ck_assert_double_eq(cJSON_GetObjectItem(hc, "PidsLimit")->valuedouble,
	    PRECHECK_PIDS_MIN);
	b = cJSON_GetObjectItem(hc, "Binds");
	ck_assert_int_eq(cJSON_GetArraySize(b), 2);
	(void)snprintf(want, sizeof(want), "%s/.precheck/3/run:/broker:ro",
	    state_dir);
	ck_assert_str_eq(cJSON_GetArrayItem(b, 0)->valuestring, want);
	(void)snprintf(want, sizeof(want), "%s/.precheck/3/ws:/workspace:ro",
	    state_dir);
	ck_assert_str_eq(cJSON_GetArrayItem(b, 1)->valuestring, want);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(c, "Config"), "Labels"),
	    DOCK_PRECHECK_LABEL)->valuestring, "3");
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "State"),
	    "Status")->valuestring, "running");
	cJSON_Delete(root);
}

START_TEST(timeout_kills)
{
	static const char *const argv[] = { "/prechecker", "sleep" };
	struct timeval	 tv = { 0, 300000 };
	struct event	*ev;
	struct dock_entry *ents = NULL;
	size_t		 n = 9;

	NEED_DOCKER();
	start(5, 3, argv, 2, "{}", PRECHECK_TIMEOUT_MS_MIN + 1000);
	/* Never a channel's, while it runs. */
	ck_assert_int_eq(dock_list(da, &conf, &ents, &n), DOCK_OK);
	ck_assert_uint_eq(n, 0);
	free(ents);
	ev = evtimer_new(base, on_inspect, NULL);
	evtimer_add(ev, &tv);
	loop_until(1);
	event_free(ev);
	ck_assert_msg(told[0].ok, "error: %s", told[0].err);
	ck_assert(told[0].timed_out);
	ck_assert_int_eq(told[0].exit_code, DOCK_RUN_KILLED_CODE);
	ck_assert(told[0].gone);
}
END_TEST

static void
on_stop(evutil_socket_t fd, short what, void *arg)
{
	ck_assert_int_eq(dock_runs_stop(runs, 4), 1);
	ck_assert_int_eq(dock_runs_stop(runs, 4), 0);
}

START_TEST(stop_and_duplicate)
{
	static const char *const argv[] = { "/prechecker", "sleep" };
	struct timeval	 tv = { 0, 300000 };
	struct event	*ev;

	NEED_DOCKER();
	start(8, 4, argv, 2, "{}", 60000);
	/* The same run twice: the second is refused, the first goes on. */
	start(9, 4, argv, 2, "{}", 60000);
	ck_assert_int_eq(ntold, 1);
	ck_assert(!told[0].ok);
	ck_assert_uint_eq(told[0].msgid, 9);
	ck_assert_str_eq(told[0].err, "run already in flight");
	ev = evtimer_new(base, on_stop, NULL);
	evtimer_add(ev, &tv);
	loop_until(2);
	event_free(ev);
	ck_assert(!told[1].ok);
	ck_assert_uint_eq(told[1].msgid, 8);
	ck_assert_str_eq(told[1].err, "stopped");
	ck_assert(told[1].gone);
}
END_TEST

START_TEST(stdout_over)
{
	static const char *const argv[] = { "/prechecker", "flood-out" };

	NEED_DOCKER();
	start(1, 5, argv, 2, "{}", 30000);
	loop_until(1);
	ck_assert_msg(told[0].ok, "error: %s", told[0].err);
	ck_assert(told[0].stdout_over && !told[0].timed_out);
	ck_assert_uint_eq(told[0].out_len, PRECHECK_STDOUT_MAX);
	ck_assert(told[0].gone);
}
END_TEST

START_TEST(stderr_over)
{
	static const char *const argv[] = { "/prechecker", "flood-err" };

	NEED_DOCKER();
	start(1, 6, argv, 2, "{}", 30000);
	loop_until(1);
	ck_assert_msg(told[0].ok, "error: %s", told[0].err);
	ck_assert(!told[0].stdout_over && !told[0].timed_out);
	ck_assert_uint_eq(told[0].stderr_bytes, PRECHECK_STDERR_MAX + 1ull);
	ck_assert_uint_eq(told[0].out_len, 0);
	ck_assert(told[0].gone);
}
END_TEST

START_TEST(missing_entrypoint_fails)
{
	static const char *const argv[] = { "/no-such-program" };

	NEED_DOCKER();
	start(1, 7, argv, 1, "{}", 30000);
	loop_until(1);
	ck_assert(!told[0].ok);
	ck_assert_msg(strncmp(told[0].err, "start: ", 7) == 0, "error: %s",
	    told[0].err);
	ck_assert(told[0].gone);
}
END_TEST

START_TEST(leftovers_swept)
{
	char		 name[DOCK_PRECHECK_NAME_MAX + 1], lab[64];
	struct dock_entry *ents = NULL;
	size_t		 n = 9, removed = 0;

	NEED_DOCKER();
	(void)dock_precheck_name(&conf, 99, name, sizeof(name));
	(void)snprintf(lab, sizeof(lab), "%s=discord:1", LABEL_CHANNEL);
	ck_assert_int_eq(run_args(NULL, "docker", "create", "--name", name,
	    "--label", DOCK_PRECHECK_LABEL "=99", "--label", lab, TEST_IMAGE,
	    "sleep", (char *)NULL), 0);
	ck_assert_int_eq(dock_list(da, &conf, &ents, &n), DOCK_OK);
	ck_assert_uint_eq(n, 0);
	free(ents);
	ck_assert_int_eq(dock_precheck_sweep(da, &conf, &removed), DOCK_OK);
	ck_assert_uint_eq(removed, 1);
	ck_assert(!container_exists(99));
	ck_assert_int_eq(dock_precheck_sweep(da, &conf, &removed), DOCK_OK);
	ck_assert_uint_eq(removed, 0);
}
END_TEST

static Suite *
dockrun_suite(void)
{
	Suite	*s = suite_create("dockrun");
	TCase	*tc;

	tc = tcase_create("docker");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, echo_round_trip);
	tcase_add_test(tc, sealed_container);
	tcase_add_test(tc, timeout_kills);
	tcase_add_test(tc, stop_and_duplicate);
	tcase_add_test(tc, stdout_over);
	tcase_add_test(tc, stderr_over);
	tcase_add_test(tc, missing_entrypoint_fails);
	tcase_add_test(tc, leftovers_swept);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner		*sr;
	struct dock_api	*a;
	size_t		 n;
	char		 cfg[128];
	int		 failed;

	if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
		return EXIT_FAILURE;
	if (getenv("RTSB_DOCKER_SOCKET") != NULL)
		docker_socket = getenv("RTSB_DOCKER_SOCKET");
	(void)snprintf(prefix, sizeof(prefix), "rtsbrun%ld", (long)getpid());
	(void)snprintf(state_dir, sizeof(state_dir), "/tmp/rtsbstateXXXXXX");
	(void)snprintf(scratch_dir, sizeof(scratch_dir),
	    "/tmp/rtsbscratchXXXXXX");
	if (mkdtemp(state_dir) == NULL || mkdtemp(scratch_dir) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	(void)snprintf(cfg, sizeof(cfg), "%s/docker-config", scratch_dir);
	(void)mkdir(cfg, 0700);
	setenv("DOCKER_CONFIG", cfg, 1);
	(void)snprintf(cfg, sizeof(cfg), "unix://%s", docker_socket);
	setenv("DOCKER_HOST", cfg, 1);
	if (access(docker_socket, W_OK) == -1)
		(void)snprintf(skip_reason, sizeof(skip_reason),
		    "%s cannot be written", docker_socket);
	else if (ensure_image() == -1)
		(void)snprintf(skip_reason, sizeof(skip_reason),
		    "test image %s cannot be built or found", TEST_IMAGE);
	else
		docker_ok = 1;
	if (!docker_ok)
		printf("notice: Docker tests skip: %s\n", skip_reason);
	fflush(stdout);
	sr = srunner_create(dockrun_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (docker_ok && (a = dock_api_new(docker_socket)) != NULL) {
		make_config();
		(void)dock_precheck_sweep(a, &conf, &n);
		dock_api_free(a);
	}
	(void)run_args(NULL, "rm", "-rf", state_dir, scratch_dir,
	    (char *)NULL);
	curl_global_cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
