/*
 * dockerd-client/dockapi.c against the real Docker daemon, and against a
 * scripted fake on a Unix socket for the answers a healthy daemon never
 * gives (conflicts, malformed or oversized bodies, redirects, silence).
 *
 * The Docker tests skip, each with a notice, when the Docker socket does not
 * connect or the test image (tests/fixtures/sleeper) cannot be built.  They
 * name their containers rtsbtest<pid>-... and remove them at the end.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "dockapi.h"
#include "dockops.h"
#include "limits.h"
#include "validate.h"

#define TEST_IMAGE	"rtsandbox-test-sleeper:latest"
#define LABEL_CHANNEL	"roundtable.sandbox.channel"
#define LABEL_PROFILE	"roundtable.sandbox.profile"

static const char	*docker_socket = "/var/run/docker.sock";
static int		 docker_ok;
static char		 skip_reason[256];
static char		 prefix[32];		/* rtsbtest<pid> */
static char		 alt_image[64];		/* TEST_IMAGE tagged again */
static char		 state_dir[64];		/* mkdtemp */
static char		 scratch_dir[64];	/* sockets, docker config */
static char		 image_env[1024];	/* the image's Env, JSON */

#define NEED_DOCKER()	do {					\
	if (!docker_ok) {					\
		printf("skip %s: %s\n", __func__, skip_reason);	\
		fflush(stdout);					\
		return;						\
	}							\
} while (0)

static double
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/*
 * Runs argv, its stdout and stderr into *out (NUL-terminated, for free())
 * when out is not NULL.  Returns the exit status, or -1.
 */
static int
run(char *const argv[], char **out)
{
	int	 p[2], st;
	pid_t	 pid;
	char	*buf = NULL, *nb;
	size_t	 len = 0, cap = 0;
	ssize_t	 r;

	if (pipe(p) == -1)
		return -1;
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		close(p[0]);
		if (dup2(p[1], 1) == -1 || dup2(p[1], 2) == -1)
			_exit(127);
		execvp(argv[0], argv);
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

static int
socket_connects(const char *path)
{
	struct sockaddr_un	 sun;
	int			 s, ok;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return 0;
	strcpy(sun.sun_path, path);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 0;
	ok = connect(s, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	close(s);
	return ok;
}

static const char *
fixtures_dir(void)
{
	const char	*e;

	if ((e = getenv("RTSB_FIXTURES_DIR")) != NULL)
		return e;
#ifdef RTSB_FIXTURES_DIR
	return RTSB_FIXTURES_DIR;
#else
	/* This file's own place in the tree, as the compiler saw it. */
	{
		static char	 dir[4096];
		const char	*f = __FILE__, *slash;

		if ((slash = strrchr(f, '/')) == NULL)
			return "../fixtures";
		(void)snprintf(dir, sizeof(dir), "%.*s/../fixtures",
		    (int)(slash - f), f);
		return dir;
	}
#endif
}

/* Copies of the arguments, so that argv can be char *const[]. */
static int
run_args(char **out, const char *arg0, ...)
{
	char		*av[16];
	const char	*a;
	va_list		 ap;
	int		 n = 0, rc;

	va_start(ap, arg0);
	for (a = arg0; a != NULL && n < 15; a = va_arg(ap, const char *))
		if ((av[n++] = strdup(a)) == NULL)
			abort();
	va_end(ap);
	av[n] = NULL;
	rc = run(av, out);
	while (n > 0)
		free(av[--n]);
	return rc;
}

/*
 * The test image, built from tests/fixtures/sleeper when missing, its own
 * Env kept for assert_env(), and a second tag of it made.
 */
static int
ensure_image(void)
{
	char	 src[4096], dir[128], bin[192];
	char	*out = NULL;
	int	 rc;

	if (run_args(&out, "docker", "image", "inspect", "--format",
	    "{{json .Config.Env}}", TEST_IMAGE, (char *)NULL) != 0) {
		free(out);
		out = NULL;
		(void)snprintf(dir, sizeof(dir), "%s/image", scratch_dir);
		(void)snprintf(bin, sizeof(bin), "%s/sleeper", dir);
		if (mkdir(dir, 0700) == -1 && errno != EEXIST)
			return -1;
		(void)snprintf(src, sizeof(src), "%s/sleeper/sleeper.c",
		    fixtures_dir());
		if ((rc = run_args(&out, "gcc", "-static", "-O2", "-o", bin,
		    src, (char *)NULL)) != 0) {
			fprintf(stderr, "building the sleeper failed (%d):"
			    "\n%s\n", rc, out != NULL ? out : "");
			free(out);
			return -1;
		}
		free(out);
		out = NULL;
		(void)snprintf(src, sizeof(src), "%s/sleeper/Dockerfile",
		    fixtures_dir());
		if (run_args(NULL, "cp", src, dir, (char *)NULL) != 0)
			return -1;
		/* The legacy builder: no buildx plugin is needed offline. */
		setenv("DOCKER_BUILDKIT", "0", 1);
		if ((rc = run_args(&out, "docker", "build", "-q", "-t",
		    TEST_IMAGE, dir, (char *)NULL)) != 0) {
			fprintf(stderr, "docker build failed (%d):\n%s\n", rc,
			    out != NULL ? out : "");
			free(out);
			return -1;
		}
		free(out);
		out = NULL;
		if (run_args(&out, "docker", "image", "inspect", "--format",
		    "{{json .Config.Env}}", TEST_IMAGE, (char *)NULL) != 0) {
			free(out);
			return -1;
		}
	}
	(void)snprintf(image_env, sizeof(image_env), "%s", out);
	free(out);
	return run_args(NULL, "docker", "tag", TEST_IMAGE, alt_image,
	    (char *)NULL) == 0 ? 0 : -1;
}

static void
make_config(struct dock_config *dc, const char *image)
{
	memset(dc, 0, sizeof(*dc));
	dc->prefix = prefix;
	dc->label_channel = LABEL_CHANNEL;
	dc->label_profile = LABEL_PROFILE;
	dc->image = image;
	dc->state_dir = state_dir;
	dc->time_zone = "UTC";
	/* The container's user must not be root, whoever runs the test. */
	dc->uid = getuid() != 0 ? getuid() : 65534;
	dc->gid = getgid() != 0 ? getgid() : 65534;
	dc->memory_mib = CONTAINER_MEMORY / MIB;
	dc->nano_cpus = CONTAINER_NANO_CPUS;
	dc->pids = CONTAINER_PIDS_MAX;
}

/* state_dir is short (mkdtemp) and a segment at most 256 bytes. */
struct chan {
	char	 run[512];
	char	 ws[512];
	char	 name[CONTAINER_NAME_MAX + 1];
};

/* The channel's directories, as the file guard would have made them. */
static void
make_spec(struct dock_spec *ds, struct chan *ch, const char *channel,
    const char *profile)
{
	char	 seg[SEGMENT_MAX + 1], dir[400];

	ck_assert_int_gt(channel_segment(channel, strlen(channel), seg,
	    sizeof(seg)), 0);
	(void)snprintf(dir, sizeof(dir), "%s/%s", state_dir, seg);
	(void)snprintf(ch->run, sizeof(ch->run), "%s/run", dir);
	(void)snprintf(ch->ws, sizeof(ch->ws), "%s/workspace", dir);
	(void)snprintf(ch->name, sizeof(ch->name), "%s-%s", prefix, seg);
	ck_assert(mkdir(dir, 0700) == 0 || errno == EEXIST);
	ck_assert(mkdir(ch->run, 0700) == 0 || errno == EEXIST);
	ck_assert(mkdir(ch->ws, 0700) == 0 || errno == EEXIST);
	ds->channel = channel;
	ds->profile = profile;
	ds->run_dir = ch->run;
	ds->workspace_dir = ch->ws;
}

static struct dock_api *
api(void)
{
	struct dock_api	*da;

	da = dock_api_new(docker_socket);
	ck_assert_ptr_nonnull(da);
	return da;
}

/* `docker inspect` of one container, as cJSON (the first array item). */
static cJSON *
docker_inspect(const char *ref, cJSON **root)
{
	char	*out = NULL;

	if (run_args(&out, "docker", "inspect", "--type", "container", ref,
	    (char *)NULL) != 0) {
		free(out);
		*root = NULL;
		return NULL;
	}
	*root = cJSON_Parse(out);
	free(out);
	ck_assert_ptr_nonnull(*root);
	return cJSON_GetArrayItem(*root, 0);
}

static void
docker_cmd(const char *a, const char *b, const char *c)
{
	ck_assert_int_eq(run_args(NULL, "docker", a, b, c, (char *)NULL), 0);
}

static const cJSON *
get(const cJSON *o, const char *path)
{
	char		 key[128];
	const char	*dot;

	while ((dot = strchr(path, '.')) != NULL) {
		(void)snprintf(key, sizeof(key), "%.*s", (int)(dot - path),
		    path);
		o = cJSON_GetObjectItemCaseSensitive(o, key);
		path = dot + 1;
	}
	return cJSON_GetObjectItemCaseSensitive(o, path);
}

static void
assert_json(const cJSON *got, const char *want, const char *what)
{
	cJSON	*w;
	char	*g;

	w = cJSON_Parse(want);
	ck_assert_ptr_nonnull(w);
	g = got != NULL ? cJSON_PrintUnformatted(got) : NULL;
	ck_assert_msg(got != NULL && cJSON_Compare(w, got, 1),
	    "%s is %s, want %s", what, g != NULL ? g : "(absent)", want);
	cJSON_free(g);
	cJSON_Delete(w);
}

static void
assert_str(const cJSON *o, const char *path, const char *want)
{
	const cJSON	*v = get(o, path);

	ck_assert_msg(cJSON_IsString(v), "%s is not a string", path);
	ck_assert_str_eq(v->valuestring, want);
}

static void
assert_num(const cJSON *o, const char *path, double want)
{
	const cJSON	*v = get(o, path);

	ck_assert_msg(cJSON_IsNumber(v) && v->valuedouble == want,
	    "%s is not %.0f", path, want);
}

/* Empty: null, absent, [] or {}. */
static void
assert_empty(const cJSON *o, const char *path)
{
	const cJSON	*v = get(o, path);

	ck_assert_msg(v == NULL || cJSON_IsNull(v) ||
	    ((cJSON_IsArray(v) || cJSON_IsObject(v)) &&
	    cJSON_GetArraySize(v) == 0), "%s is not empty", path);
}

static int
is_hex64(const char *s)
{
	size_t	 i;

	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return i == 64;
}

/* Our 9 variables in order, then only the image's own (PATH). */
static void
assert_env(const cJSON *env)
{
	static const char *const ours[] = {
		"SANDBOX_PROFILE=p1", "TZ=UTC",
		"ANTHROPIC_BASE_URL=http://127.0.0.1:8080/anthropic",
		"CLAUDE_CODE_OAUTH_TOKEN=sandbox-dummy-token",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"SANDBOX_CONTENT=/app/worker/content.ts", "HOME=/tmp/home",
		"PI_CODING_AGENT_DIR=/tmp/pi-agent",
		"CLAUDE_CONFIG_DIR=/workspace/claude",
	};
	cJSON		*img;
	const cJSON	*e, *ie;
	size_t		 i = 0, n = sizeof(ours) / sizeof(ours[0]);
	int		 found;

	img = cJSON_Parse(image_env);
	cJSON_ArrayForEach(e, env) {
		ck_assert(cJSON_IsString(e));
		if (i < n) {
			ck_assert_str_eq(e->valuestring, ours[i]);
			i++;
			continue;
		}
		found = 0;
		cJSON_ArrayForEach(ie, img)
			if (cJSON_IsString(ie) &&
			    strcmp(ie->valuestring, e->valuestring) == 0)
				found = 1;
		ck_assert_msg(found, "Env has %s, from neither rtsandbox nor "
		    "the image", e->valuestring);
	}
	ck_assert_uint_eq(i, n);
	cJSON_Delete(img);
}

START_TEST(create_has_every_field)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_status	 st;
	struct dock_api		*da;
	struct chan		 ch;
	cJSON			*root;
	const cJSON		*c, *m, *nets;
	char			 id[80], want[1200], user[64];
	int			 rec, nmounts = 0;
	double			 t0;

	NEED_DOCKER();
	da = api();
	make_config(&dc, TEST_IMAGE);
	make_spec(&ds, &ch, "test:create", "p1");
	t0 = now_ms();
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	printf("timing: ensure_running, inspect+create+start: %.1f ms\n",
	    now_ms() - t0);
	ck_assert_int_eq(rec, 1);
	ck_assert(is_hex64(id));

	c = docker_inspect(ch.name, &root);
	ck_assert_ptr_nonnull(c);
	assert_str(c, "Id", id);
	(void)snprintf(want, sizeof(want), "/%s", ch.name);
	assert_str(c, "Name", want);
	ck_assert(cJSON_IsTrue(get(c, "State.Running")));

	/* Config: image, user, labels, environment. */
	assert_str(c, "Config.Image", TEST_IMAGE);
	(void)snprintf(user, sizeof(user), "%llu:%llu",
	    (unsigned long long)dc.uid, (unsigned long long)dc.gid);
	assert_str(c, "Config.User", user);
	assert_json(get(c, "Config.Labels"), "{\"" LABEL_CHANNEL
	    "\":\"test:create\",\"" LABEL_PROFILE "\":\"p1\"}", "Labels");
	assert_env(get(c, "Config.Env"));
	assert_empty(c, "Config.Volumes");
	assert_empty(c, "Config.ExposedPorts");

	/* HostConfig: every line of PROTOCOL.md 7. */
	assert_str(c, "HostConfig.NetworkMode", "none");
	ck_assert(cJSON_IsTrue(get(c, "HostConfig.ReadonlyRootfs")));
	assert_json(get(c, "HostConfig.Tmpfs"),
	    "{\"/tmp\":\"rw,nosuid,nodev,size=512m,mode=1777\"}", "Tmpfs");
	assert_num(c, "HostConfig.Memory", 1536.0 * MIB);
	assert_num(c, "HostConfig.MemorySwap", 1536.0 * MIB);
	assert_num(c, "HostConfig.NanoCpus", 1e9);
	assert_num(c, "HostConfig.PidsLimit", 256);
	assert_json(get(c, "HostConfig.Ulimits"),
	    "[{\"Name\":\"nofile\",\"Hard\":256,\"Soft\":256}]", "Ulimits");
	assert_json(get(c, "HostConfig.CapDrop"), "[\"ALL\"]", "CapDrop");
	assert_empty(c, "HostConfig.CapAdd");
	assert_json(get(c, "HostConfig.SecurityOpt"),
	    "[\"no-new-privileges\"]", "SecurityOpt");
	assert_str(c, "HostConfig.RestartPolicy.Name", "unless-stopped");
	assert_str(c, "HostConfig.LogConfig.Type", "local");
	assert_json(get(c, "HostConfig.LogConfig.Config"),
	    "{\"max-size\":\"10m\",\"max-file\":\"2\"}", "LogConfig.Config");
	(void)snprintf(want, sizeof(want),
	    "[\"%s:/run/sandbox:ro\",\"%s:/workspace\"]", ch.run, ch.ws);
	assert_json(get(c, "HostConfig.Binds"), want, "Binds");
	ck_assert(cJSON_IsFalse(get(c, "HostConfig.Privileged")));
	assert_empty(c, "HostConfig.Devices");
	assert_empty(c, "HostConfig.PortBindings");
	assert_empty(c, "HostConfig.Mounts");
	assert_empty(c, "HostConfig.VolumesFrom");
	/* What the daemon made of it: no network but "none", ro run dir. */
	nets = get(c, "NetworkSettings.Networks");
	ck_assert_int_eq(cJSON_GetArraySize(nets), 1);
	ck_assert_ptr_nonnull(cJSON_GetObjectItemCaseSensitive(nets, "none"));
	cJSON_ArrayForEach(m, get(c, "Mounts")) {
		nmounts++;
		if (strcmp(cJSON_GetObjectItem(m, "Destination")->valuestring,
		    "/run/sandbox") == 0) {
			assert_str(m, "Source", ch.run);
			ck_assert(cJSON_IsFalse(get(m, "RW")));
		} else {
			assert_str(m, "Destination", "/workspace");
			assert_str(m, "Source", ch.ws);
			ck_assert(cJSON_IsTrue(get(m, "RW")));
		}
	}
	ck_assert_int_eq(nmounts, 2);
	cJSON_Delete(root);

	ck_assert_int_eq(dock_status(da, &dc, "test:create", &st), DOCK_OK);
	ck_assert_int_eq(st.state, DOCK_RUNNING);
	ck_assert_str_eq(st.image, TEST_IMAGE);
	ck_assert_str_eq(st.profile, "p1");
	ck_assert_str_eq(st.id, id);
	ck_assert_int_eq(st.ours, 1);
	/* Another key of the same segment finds the container, labelled for
	 * the first: not its own. */
	ck_assert_int_eq(dock_status(da, &dc, "test_create", &st), DOCK_OK);
	ck_assert_int_eq(st.state, DOCK_RUNNING);
	ck_assert_int_eq(st.ours, 0);
	dock_api_free(da);
}
END_TEST

START_TEST(second_ensure_keeps)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct chan		 ch;
	char			 id1[80], id2[80];
	int			 rec;
	double			 t0;

	NEED_DOCKER();
	da = api();
	make_config(&dc, TEST_IMAGE);
	make_spec(&ds, &ch, "test:keep", "p1");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id1,
	    sizeof(id1)), DOCK_OK);
	t0 = now_ms();
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id2,
	    sizeof(id2)), DOCK_OK);
	printf("timing: ensure_running, inspect only: %.1f ms\n",
	    now_ms() - t0);
	ck_assert_int_eq(rec, 0);
	ck_assert_str_eq(id1, id2);
	dock_api_free(da);
}
END_TEST

START_TEST(stopped_is_recreated)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_status	 st;
	struct dock_api		*da;
	struct chan		 ch;
	cJSON			*root;
	char			 id1[80], id2[80];
	int			 rec;

	NEED_DOCKER();
	da = api();
	make_config(&dc, TEST_IMAGE);
	make_spec(&ds, &ch, "test:stopped", "p1");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id1,
	    sizeof(id1)), DOCK_OK);
	docker_cmd("stop", "-t5", ch.name);
	ck_assert_int_eq(dock_status(da, &dc, "test:stopped", &st), DOCK_OK);
	ck_assert_int_eq(st.state, DOCK_STOPPED);
	ck_assert_str_eq(st.id, id1);
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id2,
	    sizeof(id2)), DOCK_OK);
	ck_assert_int_eq(rec, 1);
	ck_assert_str_ne(id1, id2);
	ck_assert_int_eq(dock_status(da, &dc, "test:stopped", &st), DOCK_OK);
	ck_assert_int_eq(st.state, DOCK_RUNNING);
	ck_assert_str_eq(st.id, id2);
	/* The stopped one is gone, not merely renamed. */
	ck_assert_ptr_null(docker_inspect(id1, &root));
	dock_api_free(da);
}
END_TEST

START_TEST(other_image_is_recreated)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_status	 st;
	struct dock_api		*da;
	struct chan		 ch;
	char			 id1[80], id2[80];
	int			 rec;

	NEED_DOCKER();
	da = api();
	make_config(&dc, TEST_IMAGE);
	make_spec(&ds, &ch, "test:image", "p1");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id1,
	    sizeof(id1)), DOCK_OK);
	/* Same image id, another name: Config.Image decides. */
	dc.image = alt_image;
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id2,
	    sizeof(id2)), DOCK_OK);
	ck_assert_int_eq(rec, 1);
	ck_assert_str_ne(id1, id2);
	ck_assert_int_eq(dock_status(da, &dc, "test:image", &st), DOCK_OK);
	ck_assert_str_eq(st.image, alt_image);
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id1,
	    sizeof(id1)), DOCK_OK);
	ck_assert_int_eq(rec, 0);
	ck_assert_str_eq(id1, id2);
	dock_api_free(da);
}
END_TEST

START_TEST(other_profile_is_recreated)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_status	 st;
	struct dock_api		*da;
	struct chan		 ch;
	cJSON			*root;
	const cJSON		*c;
	char			 id1[80], id2[80];
	int			 rec;

	NEED_DOCKER();
	da = api();
	make_config(&dc, TEST_IMAGE);
	make_spec(&ds, &ch, "test:profile", "p1");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id1,
	    sizeof(id1)), DOCK_OK);
	ds.profile = "p2";
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id2,
	    sizeof(id2)), DOCK_OK);
	ck_assert_int_eq(rec, 1);
	ck_assert_str_ne(id1, id2);
	ck_assert_int_eq(dock_status(da, &dc, "test:profile", &st), DOCK_OK);
	ck_assert_str_eq(st.profile, "p2");
	c = docker_inspect(id2, &root);
	ck_assert_ptr_nonnull(c);
	ck_assert_str_eq(cJSON_GetArrayItem(get(c, "Config.Env"),
	    0)->valuestring, "SANDBOX_PROFILE=p2");
	cJSON_Delete(root);
	dock_api_free(da);
}
END_TEST

START_TEST(other_channel_label_is_recreated)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct chan		 ch;
	char			 id1[80], id2[80];
	int			 rec;

	NEED_DOCKER();
	da = api();
	make_config(&dc, TEST_IMAGE);
	/* Two keys, one segment, so one container name. */
	make_spec(&ds, &ch, "test:alias", "p1");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id1,
	    sizeof(id1)), DOCK_OK);
	make_spec(&ds, &ch, "test_alias", "p1");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id2,
	    sizeof(id2)), DOCK_OK);
	ck_assert_int_eq(rec, 1);
	ck_assert_str_ne(id1, id2);
	dock_api_free(da);
}
END_TEST

START_TEST(remove_twice)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_status	 st;
	struct dock_api		*da;
	struct chan		 ch;
	cJSON			*root;
	char			 id[80];
	int			 rec;
	double			 t0;

	NEED_DOCKER();
	da = api();
	make_config(&dc, TEST_IMAGE);
	make_spec(&ds, &ch, "test:remove", "p1");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	t0 = now_ms();
	ck_assert_int_eq(dock_remove(da, &dc, "test:remove"), DOCK_OK);
	printf("timing: dock_remove of a running container: %.1f ms\n",
	    now_ms() - t0);
	ck_assert_str_eq(dock_api_last_error(da), "");
	ck_assert_int_eq(dock_remove(da, &dc, "test:remove"), DOCK_OK);
	ck_assert_str_eq(dock_api_last_error(da), "");
	ck_assert_int_eq(dock_status(da, &dc, "test:remove", &st), DOCK_OK);
	ck_assert_int_eq(st.state, DOCK_MISSING);
	ck_assert_str_eq(st.id, "");
	ck_assert_ptr_null(docker_inspect(id, &root));
	ck_assert_int_eq(dock_remove(da, &dc, ""), DOCK_BAD_CHANNEL);
	dock_api_free(da);
}
END_TEST

static const struct dock_entry *
find_entry(const struct dock_entry *ents, size_t n, const char *channel)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (strcmp(ents[i].channel, channel) == 0)
			return &ents[i];
	return NULL;
}

START_TEST(list_shows_ours)
{
	struct dock_config	 dc, dcx;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct dock_entry	*ents;
	const struct dock_entry	*e;
	struct chan		 ch;
	char			 id1[80], id2[80], idx[80], pfx[40];
	char			 want[400];
	size_t			 n;
	int			 rec;

	NEED_DOCKER();
	da = api();
	make_config(&dc, TEST_IMAGE);
	make_spec(&ds, &ch, "test:list1", "p1");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id1,
	    sizeof(id1)), DOCK_OK);
	make_spec(&ds, &ch, "test:list2", "p2");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id2,
	    sizeof(id2)), DOCK_OK);
	docker_cmd("stop", "-t5", ch.name);
	/* A prefix that merely starts like ours is another deployment. */
	make_config(&dcx, TEST_IMAGE);
	(void)snprintf(pfx, sizeof(pfx), "%sx", prefix);
	dcx.prefix = pfx;
	make_spec(&ds, &ch, "test:list3", "p3");
	ck_assert_int_eq(dock_ensure_running(da, &dcx, &ds, &rec, idx,
	    sizeof(idx)), DOCK_OK);

	ck_assert_int_eq(dock_list(da, &dc, &ents, &n), DOCK_OK);
	ck_assert_ptr_null(find_entry(ents, n, "test:list3"));
	e = find_entry(ents, n, "test:list1");
	ck_assert_ptr_nonnull(e);
	(void)snprintf(want, sizeof(want), "/%s-test_list1", prefix);
	ck_assert_str_eq(e->name, want);
	ck_assert_str_eq(e->profile, "p1");
	ck_assert_str_eq(e->state, "running");
	ck_assert_str_eq(e->image, TEST_IMAGE);
	ck_assert_str_eq(e->id, id1);
	e = find_entry(ents, n, "test:list2");
	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->profile, "p2");
	ck_assert_str_eq(e->state, "exited");
	ck_assert_str_eq(e->id, id2);
	for (size_t i = 0; i < n; i++) {
		(void)snprintf(want, sizeof(want), "/%s-", prefix);
		ck_assert(strncmp(ents[i].name, want, strlen(want)) == 0);
	}
	free(ents);

	ck_assert_int_eq(dock_list(da, &dcx, &ents, &n), DOCK_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(ents[0].channel, "test:list3");
	ck_assert_str_eq(ents[0].id, idx);
	free(ents);
	ck_assert_int_eq(dock_remove(da, &dcx, "test:list3"), DOCK_OK);
	ck_assert_int_eq(dock_list(da, &dcx, &ents, &n), DOCK_OK);
	ck_assert_uint_eq(n, 0);
	ck_assert_ptr_null(ents);
	dock_api_free(da);
}
END_TEST

START_TEST(missing_image)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_status	 st;
	struct dock_api		*da;
	struct chan		 ch;
	char			 img[64], id[80];
	int			 rec;

	NEED_DOCKER();
	da = api();
	(void)snprintf(img, sizeof(img), "%s-missing:latest", prefix);
	make_config(&dc, img);
	make_spec(&ds, &ch, "test:noimage", "p1");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_NO_IMAGE);
	ck_assert_int_eq(rec, 0);
	ck_assert_str_eq(id, "");
	printf("note: missing image: %s\n", dock_api_last_error(da));
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da), "No such image"));
	ck_assert_int_eq(dock_status(da, &dc, "test:noimage", &st), DOCK_OK);
	ck_assert_int_eq(st.state, DOCK_MISSING);
	dock_api_free(da);
}
END_TEST

/*
 * The runtime against the real daemon: its default (runc) and runc by name
 * are the same; one it does not have is refused and the container stays.
 */
START_TEST(runtime_decides)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct chan		 ch;
	cJSON			*root;
	const cJSON		*c;
	char			 id1[80], id2[80];
	int			 rec;

	NEED_DOCKER();
	da = api();
	make_config(&dc, TEST_IMAGE);
	make_spec(&ds, &ch, "test:runtime", "p1");
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id1,
	    sizeof(id1)), DOCK_OK);
	c = docker_inspect(id1, &root);
	ck_assert_ptr_nonnull(c);
	assert_str(c, "HostConfig.Runtime", "runc");
	cJSON_Delete(root);
	dc.runtime = "runc";
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id2,
	    sizeof(id2)), DOCK_OK);
	ck_assert_int_eq(rec, 0);
	ck_assert_str_eq(id1, id2);
	dc.runtime = "rtsb-no-such-runtime";
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id2,
	    sizeof(id2)), DOCK_NO_RUNTIME);
	printf("note: unknown runtime: %s\n", dock_api_last_error(da));
	ck_assert_int_eq(rec, 0);
	c = docker_inspect(id1, &root);
	ck_assert_ptr_nonnull(c);
	ck_assert(cJSON_IsTrue(get(c, "State.Running")));
	cJSON_Delete(root);
	dock_api_free(da);
}
END_TEST

/* What rtsandboxctl doctor asks, against the real daemon. */
START_TEST(engine_and_image)
{
	struct dock_engine_info	 ei;
	struct dock_image_info	 im;
	struct dock_api		*da;
	char			 img[64];
	int			 present;

	NEED_DOCKER();
	da = api();
	ck_assert_int_eq(dock_engine(da, &ei), DOCK_OK);
	ck_assert_int_eq(ei.ei_engine, DOCK_ENGINE_DOCKER);
	ck_assert_int_eq(ei.ei_api_ok, 1);
	ck_assert_str_ne(ei.ei_version, "");
	ck_assert_ptr_nonnull(dock_engine_runtime(&ei, "runc"));
	ck_assert_str_ne(ei.ei_default_runtime, "");
	ck_assert_int_ge(ei.ei_cgroup_version, 1);
	printf("note: engine %s %s, API %s (from %s), default runtime %s, "
	    "%zu runtimes, cgroup v%d, rootless %d\n", ei.ei_name,
	    ei.ei_version, ei.ei_api_version, ei.ei_min_api_version,
	    ei.ei_default_runtime, ei.ei_nruntimes, ei.ei_cgroup_version,
	    ei.ei_rootless);
	ck_assert_int_eq(dock_image(da, TEST_IMAGE, &im, &present), DOCK_OK);
	ck_assert_int_eq(present, 1);
	ck_assert_int_eq(im.im_tagged, 1);
	ck_assert(strncmp(im.im_id, "sha256:", 7) == 0);
	ck_assert_int_eq(dock_image(da, alt_image, &im, &present), DOCK_OK);
	ck_assert_int_eq(im.im_tagged, 1);
	(void)snprintf(img, sizeof(img), "%s-missing:latest", prefix);
	ck_assert_int_eq(dock_image(da, img, &im, &present), DOCK_OK);
	ck_assert_int_eq(present, 0);
	ck_assert_int_eq(dock_image(da, "-x", &im, &present), DOCK_BAD_IMAGE);
	dock_api_free(da);
}
END_TEST

/* The request is refused before any call: the socket is never tried. */
START_TEST(refused_before_any_call)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct chan		 ch;
	struct dock_entry	*ents;
	char			 id[80];
	size_t			 n;
	int			 rec = 7;

	da = dock_api_new("/nonexistent/rtsbtest/docker.sock");
	ck_assert_ptr_nonnull(da);
	make_config(&dc, TEST_IMAGE);
	make_spec(&ds, &ch, "test:refused", "p1");
	ds.run_dir = "/etc";
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_BAD_BIND);
	ck_assert_int_eq(rec, 0);
	ds.run_dir = ch.run;
	dc.runtime = "run sc";
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_BAD_RUNTIME);
	dc.runtime = NULL;
	dc.uid = 0;
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_BAD_USER);
	dc.uid = 1000;
	dc.prefix = "Bad";
	ck_assert_int_eq(dock_remove(da, &dc, "x"), DOCK_BAD_NAME);
	ck_assert_int_eq(dock_list(da, &dc, &ents, &n), DOCK_BAD_NAME);
	ck_assert_ptr_null(ents);
	dock_api_free(da);
}
END_TEST

START_TEST(api_new_refusals)
{
	char	 p[200];

	errno = 0;
	ck_assert_ptr_null(dock_api_new("run/docker.sock"));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(dock_api_new(NULL));
	memset(p, 'a', sizeof(p));
	p[0] = '/';
	p[108] = '\0';		/* sizeof(sun_path) is 108 on Linux */
	ck_assert_ptr_null(dock_api_new(p));
	ck_assert_int_eq(errno, ENAMETOOLONG);
	p[107] = '\0';
	dock_api_free(dock_api_new(p));
}
END_TEST

static void
unreachable_at(const char *path)
{
	struct dock_config	 dc;
	struct dock_status	 st;
	struct dock_api		*da;
	double			 t0, dt;

	make_config(&dc, TEST_IMAGE);
	ck_assert_ptr_nonnull(da = dock_api_new(path));
	t0 = now_ms();
	ck_assert_int_eq(dock_status(da, &dc, "test:x", &st),
	    DOCK_UNREACHABLE);
	dt = now_ms() - t0;
	printf("timing: unreachable (%s): %.1f ms\n", path, dt);
	ck_assert(dt < 1000);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da),
	    "Docker daemon unreachable at "));
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da), path));
	ck_assert_int_eq(dock_remove(da, &dc, "test:x"), DOCK_UNREACHABLE);
	dock_api_free(da);
}

/* A socket file with nobody listening, for ECONNREFUSED. */
static int
bound_socket(const char *path, int do_listen)
{
	struct sockaddr_un	 sun;
	int			 s;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	ck_assert_uint_lt(strlen(path), sizeof(sun.sun_path));
	strcpy(sun.sun_path, path);
	(void)unlink(path);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s, 0);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sun, sizeof(sun)), 0);
	if (do_listen)
		ck_assert_int_eq(listen(s, 16), 0);
	return s;
}

START_TEST(unreachable_socket)
{
	char	 path[128];
	int	 s;

	unreachable_at("/nonexistent/rtsbtest/docker.sock");
	(void)snprintf(path, sizeof(path), "%s/refused.sock", scratch_dir);
	s = bound_socket(path, 0);
	close(s);
	unreachable_at(path);
	(void)unlink(path);
}
END_TEST

/* A daemon that accepts and never answers: the 15 s bound must end it. */
START_TEST(silent_daemon_times_out)
{
	struct dock_config	 dc;
	struct dock_status	 st;
	struct dock_api		*da;
	char			 path[128];
	double			 t0, dt;
	int			 s;

	(void)snprintf(path, sizeof(path), "%s/silent.sock", scratch_dir);
	s = bound_socket(path, 1);
	make_config(&dc, TEST_IMAGE);
	ck_assert_ptr_nonnull(da = dock_api_new(path));
	t0 = now_ms();
	ck_assert_int_eq(dock_status(da, &dc, "test:x", &st), DOCK_TIMEOUT);
	dt = now_ms() - t0;
	printf("timing: silent daemon: DOCK_TIMEOUT after %.1f ms\n", dt);
	ck_assert(dt >= DOCKER_CALL_TIMEOUT_MS - 50);
	ck_assert(dt < DOCKER_CALL_TIMEOUT_MS + 2000);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da), "timed out"));
	dock_api_free(da);
	close(s);
	(void)unlink(path);
}
END_TEST

/*
 * A scripted daemon: answers each request with the next step, on the same
 * connection while the client keeps it, and writes every request it got to
 * a pipe for the test to read.
 */
struct fake_step {
	int		 status;
	const char	*body;		/* sent with its Content-Length */
	const char	*headers;	/* extra lines, each ending CRLF */
	size_t		 chunked;	/* > 0: this many bytes, chunked */
	size_t		 declared;	/* > 0: claim this length only */
};

struct fake {
	pid_t	 pid;
	int	 log;
	char	 path[128];
};

static int
read_request(int c, char *buf, size_t cap, size_t *len)
{
	char	*end, *cl;
	size_t	 want = 0;
	ssize_t	 r;

	*len = 0;
	for (;;) {
		buf[*len] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) != NULL) {
			if (want == 0 && (cl = strcasestr(buf,
			    "\ncontent-length:")) != NULL && cl < end)
				want = strtoul(cl + 16, NULL, 10);
			if (*len >= (size_t)(end + 4 - buf) + want)
				return 0;
		}
		if (*len + 1 >= cap)
			return -1;
		if ((r = read(c, buf + *len, cap - *len - 1)) <= 0)
			return -1;
		*len += (size_t)r;
	}
}

static void
fake_answer(int c, const struct fake_step *st)
{
	char	 head[1024], chunk[65536 + 16];
	size_t	 left, n;
	int	 hl;

	if (st->chunked > 0) {
		hl = snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\n"
		    "Content-Type: application/json\r\n"
		    "Transfer-Encoding: chunked\r\n%s\r\n", st->status,
		    st->headers != NULL ? st->headers : "");
		(void)!write(c, head, (size_t)hl);
		memset(chunk, ' ', sizeof(chunk));
		for (left = st->chunked; left > 0; left -= n) {
			n = left > 65536 ? 65536 : left;
			hl = snprintf(head, sizeof(head), "%zx\r\n", n);
			if (write(c, head, (size_t)hl) == -1 ||
			    write(c, chunk, n) == -1 ||
			    write(c, "\r\n", 2) == -1)
				return;
		}
		(void)!write(c, "0\r\n\r\n", 5);
		return;
	}
	hl = snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n%s\r\n",
	    st->status, st->declared > 0 ? st->declared :
	    (st->body != NULL ? strlen(st->body) : 0),
	    st->headers != NULL ? st->headers : "");
	(void)!write(c, head, (size_t)hl);
	if (st->declared == 0 && st->body != NULL)
		(void)!write(c, st->body, strlen(st->body));
}

static void
fake_start(struct fake *f, const struct fake_step *steps, size_t n)
{
	static char	 req[1 << 20];
	int		 ls, p[2], c = -1;
	size_t		 i, len;

	(void)snprintf(f->path, sizeof(f->path), "%s/fake.sock", scratch_dir);
	ls = bound_socket(f->path, 1);
	ck_assert_int_eq(pipe(p), 0);
	f->pid = fork();
	ck_assert_int_ge(f->pid, 0);
	if (f->pid == 0) {
		signal(SIGPIPE, SIG_IGN);
		close(p[0]);
		for (i = 0; i < n; ) {
			if (c == -1 && (c = accept(ls, NULL, NULL)) == -1)
				_exit(1);
			if (read_request(c, req, sizeof(req), &len) == -1) {
				/* The client closed; it may come back. */
				close(c);
				c = -1;
				continue;
			}
			(void)!write(p[1], req, len);
			(void)!write(p[1], "\n--\n", 4);
			fake_answer(c, &steps[i++]);
		}
		close(p[1]);
		for (;;)
			pause();
	}
	close(p[1]);
	close(ls);
	f->log = p[0];
}

/* Ends the fake and returns every request it saw, for free(). */
static char *
fake_stop(struct fake *f)
{
	static const size_t	 cap = 1 << 20;
	char			*buf;
	size_t			 len = 0;
	ssize_t			 r;

	(void)kill(f->pid, SIGKILL);
	(void)waitpid(f->pid, NULL, 0);
	buf = malloc(cap);
	ck_assert_ptr_nonnull(buf);
	while (len < cap - 1 && (r = read(f->log, buf + len,
	    cap - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	close(f->log);
	(void)unlink(f->path);
	return buf;
}

static size_t
count_of(const char *hay, const char *needle)
{
	size_t	 n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

#define HEX64	"0123456789abcdef0123456789abcdef" \
		"0123456789abcdef0123456789abcdef"
#define HEX64B	"fedcba9876543210fedcba9876543210" \
		"fedcba9876543210fedcba9876543210"

/* What a Docker engine says about itself when first asked. */
#define DOCKER_VERSION	{ 200, "{\"Version\":\"20.10.24\",\"ApiVersion\":" \
	"\"1.41\",\"MinAPIVersion\":\"1.12\",\"Components\":[{\"Name\":" \
	"\"Engine\",\"Version\":\"20.10.24\"}]}", NULL, 0, 0 }
#define DOCKER_INFO	{ 200, "{\"DefaultRuntime\":\"runc\",\"Runtimes\":" \
	"{\"runc\":{\"path\":\"runc\"},\"runsc\":{\"path\":" \
	"\"/usr/bin/runsc\",\"runtimeArgs\":[\"--host-uds=open\"," \
	"\"--network=none\"]}}}", NULL, 0, 0 }
#define PODMAN_VERSION	{ 200, "{\"Version\":\"4.3.1\",\"ApiVersion\":" \
	"\"1.41\",\"MinAPIVersion\":\"1.24\",\"Components\":[{\"Name\":" \
	"\"Podman Engine\",\"Version\":\"4.3.1\"}]}", NULL, 0, 0 }

START_TEST(fake_request_shapes)
{
	struct fake_step	 steps[] = {
		DOCKER_VERSION,
		DOCKER_INFO,
		/* Running, other profile: replaced. */
		{ 200, "{\"Id\":\"" HEX64 "\",\"Name\":\"/rtsb-test_shape\","
		    "\"Config\":{\"Image\":\"" TEST_IMAGE "\",\"Labels\":{\""
		    LABEL_CHANNEL "\":\"test:shape\",\"" LABEL_PROFILE
		    "\":\"old\"}},\"State\":{\"Running\":true}}", NULL, 0, 0 },
		{ 204, NULL, NULL, 0, 0 },
		{ 201, "{\"Id\":\"" HEX64B "\",\"Warnings\":[\"swap limit\"]}",
		    NULL, 0, 0 },
		{ 304, NULL, NULL, 0, 0 },
	};
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct fake		 f;
	struct chan		 ch;
	cJSON			*want, *got;
	char			*log, *body;
	char			 id[80];
	int			 rec;

	make_config(&dc, TEST_IMAGE);
	dc.prefix = "rtsb";
	make_spec(&ds, &ch, "test:shape", "new");
	/* Whatever the environment says, the socket is used directly. */
	setenv("http_proxy", "http://127.0.0.1:9", 1);
	setenv("ALL_PROXY", "http://127.0.0.1:9", 1);
	fake_start(&f, steps, sizeof(steps) / sizeof(steps[0]));
	ck_assert_ptr_nonnull(da = dock_api_new(f.path));
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	ck_assert_int_eq(rec, 1);
	ck_assert_str_eq(id, HEX64B);
	dock_api_free(da);
	log = fake_stop(&f);
	/* What the engine is, asked once, before anything else. */
	ck_assert_ptr_eq(strstr(log, "GET /v1.41/version HTTP/1.1\r\n"), log);
	ck_assert_ptr_nonnull(strstr(log, "GET /v1.41/info HTTP/1.1\r\n"));
	ck_assert_ptr_nonnull(strstr(log,
	    "GET /v1.41/containers/rtsb-test_shape/json HTTP/1.1\r\n"));
	ck_assert_ptr_nonnull(strstr(log, "\r\nHost: localhost\r\n"));
	ck_assert_ptr_nonnull(strstr(log,
	    "DELETE /v1.41/containers/" HEX64 "?force=true HTTP/1.1\r\n"));
	ck_assert_ptr_nonnull(strstr(log,
	    "POST /v1.41/containers/create?name=rtsb-test_shape HTTP/1.1\r\n"));
	ck_assert_ptr_nonnull(strstr(log,
	    "POST /v1.41/containers/" HEX64B "/start HTTP/1.1\r\n"));
	ck_assert_ptr_nonnull(strstr(log,
	    "\r\nContent-Type: application/json\r\n"));
	ck_assert_ptr_null(strcasestr(log, "Expect:"));
	ck_assert_ptr_null(strcasestr(log, "Accept-Encoding"));
	/* The create body is dock_create_body(), byte for byte. */
	body = strstr(strstr(log, "POST /v1.41/containers/create"),
	    "\r\n\r\n") + 4;
	*strstr(body, "\n--\n") = '\0';
	want = dock_create_body(&dc, &ds, DOCK_ENGINE_DOCKER);
	got = cJSON_Parse(body);
	ck_assert_ptr_nonnull(got);
	ck_assert(cJSON_Compare(want, got, 1));
	cJSON_Delete(want);
	cJSON_Delete(got);
	free(log);
	unsetenv("http_proxy");
	unsetenv("ALL_PROXY");
}
END_TEST

START_TEST(fake_create_refusals)
{
	struct fake_step	 steps[] = {
		DOCKER_VERSION,
		DOCKER_INFO,
		{ 404, "{\"message\":\"No such container: rtsb-test_c\"}", NULL,
		    0, 0 },
		{ 409, "{\"message\":\"Conflict. The container name "
		    "\\\"/rtsb-test_c\\\" is already in use\"}", NULL, 0, 0 },
		{ 404, "{\"message\":\"No such container: rtsb-test_c\"}", NULL,
		    0, 0 },
		{ 404, "{\"message\":\"No such image: nothere:1\"}", NULL, 0,
		    0 },
		{ 404, "{\"message\":\"No such container: rtsb-test_c\"}", NULL,
		    0, 0 },
		{ 201, "{\"Id\":\"" HEX64B "\"}", NULL, 0, 0 },
		{ 500, "{\"message\":\"cannot start:\\nline two\"}", NULL, 0,
		    0 },
		{ 409, "{\"message\":\"removal of container rtsb-test_c is "
		    "already in progress\"}", NULL, 0, 0 },
	};
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct fake		 f;
	struct chan		 ch;
	char			*log;
	char			 id[80];
	int			 rec;

	make_config(&dc, TEST_IMAGE);
	dc.prefix = "rtsb";
	make_spec(&ds, &ch, "test:c", "p1");
	fake_start(&f, steps, sizeof(steps) / sizeof(steps[0]));
	ck_assert_ptr_nonnull(da = dock_api_new(f.path));
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_CONFLICT);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da),
	    "is already in use"));
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_NO_IMAGE);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da),
	    "No such image: nothere:1"));
	/* Created but not started: recreated says a container is new. */
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_API);
	ck_assert_int_eq(rec, 1);
	ck_assert_str_eq(id, "");
	/* One line for the log, whatever Docker's message holds. */
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da),
	    "500 cannot start:?line two"));
	ck_assert_int_eq(dock_remove(da, &dc, "test:c"), DOCK_CONFLICT);
	dock_api_free(da);
	log = fake_stop(&f);
	free(log);
}
END_TEST

START_TEST(fake_malformed_answers)
{
	struct fake_step	 steps[] = {
		{ 200, "not json", NULL, 0, 0 },
		{ 200, "{\"Id\":\"" HEX64 "\",\"Name\":\"/someone-else\","
		    "\"Config\":{},\"State\":{\"Running\":true}}", NULL, 0, 0 },
		{ 200, "{\"Id\":\"../../etc\",\"Name\":\"/rtsb-test_m\","
		    "\"Config\":{},\"State\":{}}", NULL, 0, 0 },
		{ 301, "", "Location: http://localhost/v1.41/containers/"
		    "rtsb-test_m/json\r\n", 0, 0 },
		{ 200, "{}", NULL, 0, 0 },
		DOCKER_VERSION,
		DOCKER_INFO,
		{ 404, "{\"message\":\"No such container\"}", NULL, 0, 0 },
		{ 201, "{\"Id\":\"xyz\"}", NULL, 0, 0 },
	};
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_status	 st;
	struct dock_api		*da;
	struct dock_entry	*ents;
	struct fake		 f;
	struct chan		 ch;
	char			*log, id[80];
	size_t			 n;
	int			 rec;

	make_config(&dc, TEST_IMAGE);
	dc.prefix = "rtsb";
	make_spec(&ds, &ch, "test:m", "p1");
	fake_start(&f, steps, sizeof(steps) / sizeof(steps[0]));
	ck_assert_ptr_nonnull(da = dock_api_new(f.path));
	ck_assert_int_eq(dock_status(da, &dc, "test:m", &st), DOCK_API);
	ck_assert_int_eq(dock_status(da, &dc, "test:m", &st), DOCK_API);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da),
	    "answered for /someone-else"));
	ck_assert_int_eq(dock_status(da, &dc, "test:m", &st), DOCK_API);
	/* A redirect is an answer, not a place to go. */
	ck_assert_int_eq(dock_status(da, &dc, "test:m", &st), DOCK_API);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da), "301"));
	ck_assert_int_eq(dock_list(da, &dc, &ents, &n), DOCK_API);
	ck_assert_ptr_null(ents);
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_API);
	ck_assert_int_eq(rec, 0);
	dock_api_free(da);
	log = fake_stop(&f);
	/* One request per call: the 301 was not followed. */
	ck_assert_uint_eq(count_of(log, "\n--\n"), 9);
	ck_assert_uint_eq(count_of(log,
	    "GET /v1.41/containers/rtsb-test_m/json HTTP/1.1\r\n"), 5);
	free(log);
}
END_TEST

/* A running container of channel test:rt, image, profile p1 and runtime. */
#define RUNNING_AS(rt)	{ 200, "{\"Id\":\"" HEX64 "\",\"Name\":" \
	"\"/rtsb-test_rt\",\"Config\":{\"Image\":\"" TEST_IMAGE "\"," \
	"\"Labels\":{\"" LABEL_CHANNEL "\":\"test:rt\",\"" LABEL_PROFILE \
	"\":\"p1\"}},\"HostConfig\":{\"Runtime\":\"" rt "\"}," \
	"\"State\":{\"Running\":true}}", NULL, 0, 0 }

/* The runtime decides as the image does; one the engine lacks changes
 * nothing, after the engine was asked again whether it has it now. */
START_TEST(fake_runtime)
{
	struct fake_step	 steps[] = {
		DOCKER_VERSION,
		DOCKER_INFO,
		/* runsc configured, the container runs under runc */
		RUNNING_AS("runc"),
		{ 204, NULL, NULL, 0, 0 },
		{ 201, "{\"Id\":\"" HEX64B "\"}", NULL, 0, 0 },
		{ 204, NULL, NULL, 0, 0 },
		/* under runsc now: kept */
		RUNNING_AS("runsc"),
		/* kata: not there, asked again, still not there */
		DOCKER_INFO,
		/* nothing configured: the default, runc, is wanted */
		RUNNING_AS("runsc"),
		{ 204, NULL, NULL, 0, 0 },
		{ 201, "{\"Id\":\"" HEX64 "\"}", NULL, 0, 0 },
		{ 204, NULL, NULL, 0, 0 },
		RUNNING_AS("runc"),
	};
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct fake		 f;
	struct chan		 ch;
	char			*log, *body;
	char			 id[80];
	cJSON			*got;
	int			 rec;

	make_config(&dc, TEST_IMAGE);
	dc.prefix = "rtsb";
	dc.runtime = "runsc";
	make_spec(&ds, &ch, "test:rt", "p1");
	fake_start(&f, steps, sizeof(steps) / sizeof(steps[0]));
	ck_assert_ptr_nonnull(da = dock_api_new(f.path));
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	ck_assert_int_eq(rec, 1);
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	ck_assert_int_eq(rec, 0);
	ck_assert_str_eq(id, HEX64);
	dc.runtime = "kata";
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_NO_RUNTIME);
	ck_assert_int_eq(rec, 0);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da),
	    "runtime kata is not one of the engine's"));
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da), "(runc runsc)"));
	dc.runtime = NULL;
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	ck_assert_int_eq(rec, 1);
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	ck_assert_int_eq(rec, 0);
	dock_api_free(da);
	log = fake_stop(&f);
	/* Asked what it is once; /info once more for kata only. */
	ck_assert_uint_eq(count_of(log, "GET /v1.41/version "), 1);
	ck_assert_uint_eq(count_of(log, "GET /v1.41/info "), 2);
	ck_assert_uint_eq(count_of(log, "DELETE "), 2);
	body = strstr(strstr(log, "POST /v1.41/containers/create"),
	    "\r\n\r\n") + 4;
	*strstr(body, "\n--\n") = '\0';
	got = cJSON_Parse(body);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(got,
	    "HostConfig"), "Runtime")->valuestring, "runsc");
	cJSON_Delete(got);
	body += strlen(body) + 4;
	body = strstr(strstr(body, "POST /v1.41/containers/create"),
	    "\r\n\r\n") + 4;
	*strstr(body, "\n--\n") = '\0';
	got = cJSON_Parse(body);
	ck_assert_ptr_nonnull(got);
	ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetObjectItem(got,
	    "HostConfig"), "Runtime"));
	cJSON_Delete(got);
	free(log);
}
END_TEST

/* Podman: asked once what it is, never for a runtime; its own body. */
START_TEST(fake_podman)
{
	struct fake_step	 steps[] = {
		PODMAN_VERSION,
		{ 404, "{\"message\":\"no such container\"}", NULL, 0, 0 },
		{ 201, "{\"Id\":\"" HEX64B "\",\"Warnings\":[]}", NULL, 0,
		    0 },
		{ 204, NULL, NULL, 0, 0 },
		/* Podman says "oci" for every container's runtime. */
		RUNNING_AS("oci"),
	};
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct fake		 f;
	struct chan		 ch;
	char			*log, *body;
	char			 id[80];
	cJSON			*want, *got;
	int			 rec;

	make_config(&dc, TEST_IMAGE);
	dc.prefix = "rtsb";
	make_spec(&ds, &ch, "test:rt", "p1");
	fake_start(&f, steps, sizeof(steps) / sizeof(steps[0]));
	ck_assert_ptr_nonnull(da = dock_api_new(f.path));
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	ck_assert_int_eq(rec, 1);
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	ck_assert_int_eq(rec, 0);
	/* A runtime asked of Podman: refused before any call. */
	dc.runtime = "runsc";
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_NO_RUNTIME);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da),
	    "containers.conf"));
	dock_api_free(da);
	log = fake_stop(&f);
	ck_assert_uint_eq(count_of(log, "\n--\n"), 5);
	ck_assert_uint_eq(count_of(log, "/info "), 0);
	body = strstr(strstr(log, "POST /v1.41/containers/create"),
	    "\r\n\r\n") + 4;
	*strstr(body, "\n--\n") = '\0';
	dc.runtime = NULL;
	want = dock_create_body(&dc, &ds, DOCK_ENGINE_PODMAN);
	got = cJSON_Parse(body);
	ck_assert_ptr_nonnull(got);
	ck_assert(cJSON_Compare(want, got, 1));
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(got,
	    "HostConfig"), "UsernsMode")->valuestring, "keep-id");
	cJSON_Delete(want);
	cJSON_Delete(got);
	free(log);
}
END_TEST

/* The engine is asked again once its socket stopped answering: another
 * may be there now, wanting another body. */
START_TEST(fake_engine_replaced)
{
	struct fake_step	 docker_steps[] = {
		DOCKER_VERSION,
		DOCKER_INFO,
		{ 404, "{\"message\":\"No such container\"}", NULL, 0, 0 },
		{ 201, "{\"Id\":\"" HEX64 "\"}", NULL, 0, 0 },
		{ 204, NULL, NULL, 0, 0 },
	};
	struct fake_step	 podman_steps[] = {
		PODMAN_VERSION,
		{ 404, "{\"message\":\"no such container\"}", NULL, 0, 0 },
		{ 201, "{\"Id\":\"" HEX64B "\"}", NULL, 0, 0 },
		{ 204, NULL, NULL, 0, 0 },
	};
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct fake		 f;
	struct chan		 ch;
	char			*log, id[80];
	int			 rec;

	make_config(&dc, TEST_IMAGE);
	dc.prefix = "rtsb";
	make_spec(&ds, &ch, "test:swap", "p1");
	fake_start(&f, docker_steps, 5);
	ck_assert_ptr_nonnull(da = dock_api_new(f.path));
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	log = fake_stop(&f);
	ck_assert_ptr_null(strstr(log, "keep-id"));
	free(log);
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_UNREACHABLE);
	fake_start(&f, podman_steps, 4);
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_OK);
	ck_assert_str_eq(id, HEX64B);
	dock_api_free(da);
	log = fake_stop(&f);
	ck_assert_ptr_eq(strstr(log, "GET /v1.41/version "), log);
	ck_assert_ptr_nonnull(strstr(log, "\"UsernsMode\":\"keep-id\""));
	free(log);
}
END_TEST

/* An engine that does not speak v1.41 is named with its versions. */
START_TEST(fake_api_versions)
{
	struct fake_step	 steps[] = {
		{ 200, "{\"Version\":\"29.0.0\",\"ApiVersion\":\"1.52\","
		    "\"MinAPIVersion\":\"1.44\"}", NULL, 0, 0 },
		{ 200, "{\"Version\":\"19.03\",\"ApiVersion\":\"1.40\"}",
		    NULL, 0, 0 },
		{ 200, "[]", NULL, 0, 0 },
		{ 400, "{\"message\":\"client version 1.41 is too old\"}",
		    NULL, 0, 0 },
	};
	struct dock_config	 dc;
	struct dock_spec	 ds;
	struct dock_api		*da;
	struct fake		 f;
	struct chan		 ch;
	char			*log, id[80];
	int			 rec;

	make_config(&dc, TEST_IMAGE);
	dc.prefix = "rtsb";
	make_spec(&ds, &ch, "test:v", "p1");
	fake_start(&f, steps, sizeof(steps) / sizeof(steps[0]));
	ck_assert_ptr_nonnull(da = dock_api_new(f.path));
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_API);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da),
	    "speaks Engine API 1.44 to 1.52, not v1.41"));
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_API);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da),
	    "speaks Engine API ? to 1.40"));
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_API);
	ck_assert_int_eq(dock_ensure_running(da, &dc, &ds, &rec, id,
	    sizeof(id)), DOCK_API);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da), "too old"));
	ck_assert_int_eq(rec, 0);
	dock_api_free(da);
	log = fake_stop(&f);
	ck_assert_uint_eq(count_of(log, "GET /v1.41/version "), 4);
	ck_assert_uint_eq(count_of(log, "/containers/"), 0);
	free(log);
}
END_TEST

/* A list answer of exactly len bytes: "[" spaces "]". */
static char *
padded_array(size_t len)
{
	char	*s;

	s = malloc(len + 1);
	ck_assert_ptr_nonnull(s);
	memset(s, ' ', len);
	s[0] = '[';
	s[len - 1] = ']';
	s[len] = '\0';
	return s;
}

START_TEST(fake_answer_size_bound)
{
	char			*at, *over;
	struct fake_step	 steps[5];
	struct dock_config	 dc;
	struct dock_api		*da;
	struct dock_entry	*ents;
	struct fake		 f;
	char			*log;
	size_t			 n;

	at = padded_array(DOCK_RESPONSE_MAX);
	over = padded_array(DOCK_RESPONSE_MAX + 1);
	memset(steps, 0, sizeof(steps));
	steps[0] = (struct fake_step){ 200, at, NULL, 0, 0 };
	steps[1] = (struct fake_step){ 200, over, NULL, 0, 0 };
	steps[2] = (struct fake_step){ 200, NULL, NULL, 0, 5u * MIB };
	steps[3] = (struct fake_step){ 200, NULL, NULL, 5u * MIB, 0 };
	steps[4] = (struct fake_step){ 200, "[]", NULL, 0, 0 };
	make_config(&dc, TEST_IMAGE);
	fake_start(&f, steps, 5);
	ck_assert_ptr_nonnull(da = dock_api_new(f.path));
	ck_assert_int_eq(dock_list(da, &dc, &ents, &n), DOCK_OK);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(dock_list(da, &dc, &ents, &n), DOCK_API);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da), "over"));
	ck_assert_int_eq(dock_list(da, &dc, &ents, &n), DOCK_API);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da), "over"));
	ck_assert_int_eq(dock_list(da, &dc, &ents, &n), DOCK_API);
	ck_assert_ptr_nonnull(strstr(dock_api_last_error(da), "over"));
	/* The handle recovers after an aborted answer. */
	ck_assert_int_eq(dock_list(da, &dc, &ents, &n), DOCK_OK);
	dock_api_free(da);
	log = fake_stop(&f);
	free(log);
	free(at);
	free(over);
}
END_TEST

START_TEST(fake_list_filters)
{
	struct fake_step	 steps[] = {
		{ 200, "["
		    "{\"Id\":\"" HEX64 "\","
		    "\"Names\":[\"/x/rtsb-a\",\"/rtsb-a\"],"
		    "\"Image\":\"img:1\",\"State\":\"running\",\"Labels\":{\""
		    LABEL_CHANNEL "\":\"a\",\"" LABEL_PROFILE "\":\"p\"}},"
		    "{\"Id\":\"" HEX64B "\",\"Names\":[\"/rtsbx-b\"],"
		    "\"State\":\"running\",\"Labels\":{\"" LABEL_CHANNEL
		    "\":\"b\"}},"
		    "{\"Id\":\"" HEX64B "\",\"Names\":[\"/rtsb-c\"],"
		    "\"State\":\"exited\",\"Labels\":{}},"
		    "{\"Id\":\"" HEX64B "\",\"Names\":[\"/other\"],"
		    "\"Labels\":{\"" LABEL_CHANNEL "\":\"d\"}},"
		    "17,"
		    "{\"Id\":\"" HEX64B "\",\"Names\":[\"/rtsb-e\"],"
		    "\"State\":\"created\",\"Labels\":{\"" LABEL_CHANNEL
		    "\":\"e\"}}"
		    "]", NULL, 0, 0 },
	};
	struct dock_config	 dc;
	struct dock_api		*da;
	struct dock_entry	*ents;
	struct fake		 f;
	char			*log;
	size_t			 n;

	make_config(&dc, TEST_IMAGE);
	dc.prefix = "rtsb";
	fake_start(&f, steps, 1);
	ck_assert_ptr_nonnull(da = dock_api_new(f.path));
	ck_assert_int_eq(dock_list(da, &dc, &ents, &n), DOCK_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(ents[0].name, "/rtsb-a");
	ck_assert_str_eq(ents[0].channel, "a");
	ck_assert_str_eq(ents[0].profile, "p");
	ck_assert_str_eq(ents[0].state, "running");
	ck_assert_str_eq(ents[0].image, "img:1");
	ck_assert_str_eq(ents[0].id, HEX64);
	ck_assert_str_eq(ents[1].name, "/rtsb-e");
	ck_assert_str_eq(ents[1].profile, "");
	ck_assert_str_eq(ents[1].state, "created");
	free(ents);
	dock_api_free(da);
	log = fake_stop(&f);
	ck_assert_ptr_nonnull(strstr(log, "GET /v1.41/containers/json?all=1&"
	    "filters=%7B%22label%22%3A%5B%22roundtable.sandbox.channel%22%5D"
	    "%7D HTTP/1.1\r\n"));
	free(log);
}
END_TEST

static Suite *
dockapi_suite(void)
{
	Suite	*s = suite_create("dockapi");
	TCase	*tc;

	tc = tcase_create("docker");
	/* Several Docker calls of up to 15 s each. */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, create_has_every_field);
	tcase_add_test(tc, second_ensure_keeps);
	tcase_add_test(tc, stopped_is_recreated);
	tcase_add_test(tc, other_image_is_recreated);
	tcase_add_test(tc, other_profile_is_recreated);
	tcase_add_test(tc, other_channel_label_is_recreated);
	tcase_add_test(tc, remove_twice);
	tcase_add_test(tc, list_shows_ours);
	tcase_add_test(tc, missing_image);
	tcase_add_test(tc, runtime_decides);
	tcase_add_test(tc, engine_and_image);
	suite_add_tcase(s, tc);
	tc = tcase_create("transport");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, refused_before_any_call);
	tcase_add_test(tc, api_new_refusals);
	tcase_add_test(tc, unreachable_socket);
	tcase_add_test(tc, silent_daemon_times_out);
	tcase_add_test(tc, fake_request_shapes);
	tcase_add_test(tc, fake_create_refusals);
	tcase_add_test(tc, fake_malformed_answers);
	tcase_add_test(tc, fake_answer_size_bound);
	tcase_add_test(tc, fake_list_filters);
	tcase_add_test(tc, fake_runtime);
	tcase_add_test(tc, fake_podman);
	tcase_add_test(tc, fake_engine_replaced);
	tcase_add_test(tc, fake_api_versions);
	suite_add_tcase(s, tc);
	return s;
}

static void
rm_rf(const char *dir)
{
	if (dir[0] != '\0')
		(void)run_args(NULL, "rm", "-rf", dir, (char *)NULL);
}

/* Every container this run made, under either prefix. */
static void
cleanup(void)
{
	struct dock_config	 dc;
	struct dock_api		*da;
	struct dock_entry	*ents;
	char			 pfx[40];
	size_t			 n, i;
	int			 k;

	if ((da = dock_api_new(docker_socket)) == NULL)
		return;
	make_config(&dc, TEST_IMAGE);
	for (k = 0; k < 2; k++) {
		(void)snprintf(pfx, sizeof(pfx), "%s%s", prefix,
		    k == 0 ? "" : "x");
		dc.prefix = pfx;
		if (dock_list(da, &dc, &ents, &n) != DOCK_OK)
			continue;
		for (i = 0; i < n; i++)
			if (dock_remove(da, &dc, ents[i].channel) != DOCK_OK)
				fprintf(stderr, "cleanup: %s: %s\n",
				    ents[i].name, dock_api_last_error(da));
		free(ents);
	}
	dock_api_free(da);
	(void)run_args(NULL, "docker", "rmi", alt_image, (char *)NULL);
}

int
main(void)
{
	SRunner	*sr;
	char	 cfg[128];
	int	 failed;

	if (curl_global_init(CURL_GLOBAL_NOTHING) != CURLE_OK)
		return EXIT_FAILURE;
	if (getenv("RTSB_DOCKER_SOCKET") != NULL)
		docker_socket = getenv("RTSB_DOCKER_SOCKET");
	(void)snprintf(prefix, sizeof(prefix), "rtsbtest%ld", (long)getpid());
	(void)snprintf(alt_image, sizeof(alt_image), "%s-alt:latest", prefix);
	(void)snprintf(state_dir, sizeof(state_dir), "/tmp/rtsbstateXXXXXX");
	(void)snprintf(scratch_dir, sizeof(scratch_dir),
	    "/tmp/rtsbscratchXXXXXX");
	if (mkdtemp(state_dir) == NULL || mkdtemp(scratch_dir) == NULL) {
		perror("mkdtemp");
		return EXIT_FAILURE;
	}
	/* The docker command's own settings, away from whoever's HOME. */
	(void)snprintf(cfg, sizeof(cfg), "%s/docker-config", scratch_dir);
	(void)mkdir(cfg, 0700);
	setenv("DOCKER_CONFIG", cfg, 1);
	(void)snprintf(cfg, sizeof(cfg), "unix://%s", docker_socket);
	setenv("DOCKER_HOST", cfg, 1);

	if (!socket_connects(docker_socket))
		(void)snprintf(skip_reason, sizeof(skip_reason),
		    "%s does not connect", docker_socket);
	else if (ensure_image() == -1)
		(void)snprintf(skip_reason, sizeof(skip_reason),
		    "test image %s cannot be built or found", TEST_IMAGE);
	else
		docker_ok = 1;
	if (!docker_ok)
		printf("notice: Docker tests skip: %s\n", skip_reason);
	fflush(stdout);

	sr = srunner_create(dockapi_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (docker_ok)
		cleanup();
	rm_rf(state_dir);
	rm_rf(scratch_dir);
	curl_global_cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
