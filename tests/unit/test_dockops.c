/*
 * dockerd-client/dockops.c: the container name, every refusal of the
 * Docker client's re-check, and the create body of PROTOCOL.md 7 compared
 * with an exact expected document.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "dockops.h"
#include "limits.h"

#define STATE		"/var/lib/rtsandbox"
#define RUN		STATE "/discord_123/run"
#define WORKSPACE	STATE "/discord_123/workspace"

static const struct dock_config base_config = {
	.prefix = "roundtable-sandbox",
	.label_channel = "roundtable.sandbox.channel",
	.label_profile = "roundtable.sandbox.profile",
	.image = "roundtable-worker:0.7.3",
	.state_dir = STATE,
	.time_zone = "UTC",
	.uid = 1000,
	.gid = 1001,
	.memory_mib = 1536,
	.nano_cpus = 1000000000,
	.pids = 256,
};

static const struct dock_spec base_spec = {
	.channel = "discord:123",
	.profile = "default",
	.run_dir = RUN,
	.workspace_dir = WORKSPACE,
};

/* n copies of c and a NUL, for the limit tests; the caller frees it. */
static char *
run_of(char c, size_t n)
{
	char	*s;

	s = malloc(n + 1);
	ck_assert_ptr_nonnull(s);
	memset(s, c, n);
	s[n] = '\0';
	return s;
}

static enum dock_err
check_with_run(const char *run)
{
	struct dock_spec	 ds = base_spec;

	ds.run_dir = run;
	return dock_check_spec(&base_config, &ds);
}

static enum dock_err
check_with_workspace(const char *ws)
{
	struct dock_spec	 ds = base_spec;

	ds.workspace_dir = ws;
	return dock_check_spec(&base_config, &ds);
}

/* A spec for channel ch whose binds are the right ones under state. */
static enum dock_err
check_channel(const struct dock_config *dc, const char *ch, const char *seg)
{
	struct dock_spec	 ds = base_spec;
	char			 run[8192], ws[8192];

	(void)snprintf(run, sizeof(run), "%s/%s/run", dc->state_dir, seg);
	(void)snprintf(ws, sizeof(ws), "%s/%s/workspace", dc->state_dir, seg);
	ds.channel = ch;
	ds.run_dir = run;
	ds.workspace_dir = ws;
	return dock_check_spec(dc, &ds);
}

START_TEST(name_built)
{
	char	 name[CONTAINER_NAME_MAX + 1];

	ck_assert_int_eq(dock_container_name(&base_config, "discord:123",
	    name, sizeof(name)), DOCK_OK);
	ck_assert_str_eq(name, "roundtable-sandbox-discord_123");
	/* U+1F600 is two UTF-16 code units, so two '_'. */
	ck_assert_int_eq(dock_container_name(&base_config,
	    "a\xf0\x9f\x98\x80" "b", name, sizeof(name)), DOCK_OK);
	ck_assert_str_eq(name, "roundtable-sandbox-a__b");
	ck_assert_int_eq(dock_container_name(&base_config, "-", name,
	    sizeof(name)), DOCK_OK);
	ck_assert_str_eq(name, "roundtable-sandbox--");
	ck_assert_int_eq(dock_container_name(&base_config, "../x", name,
	    sizeof(name)), DOCK_OK);
	ck_assert_str_eq(name, "roundtable-sandbox-___x");
}
END_TEST

START_TEST(name_limits)
{
	struct dock_config	 dc = base_config;
	char			 name[CONTAINER_NAME_MAX + 1];
	char			*prefix, *ch;

	/* Longest prefix and longest key: CONTAINER_NAME_MAX exactly. */
	prefix = run_of('p', CONTAINER_PREFIX_MAX);
	ch = run_of('c', CHANNEL_KEY_MAX);
	dc.prefix = prefix;
	ck_assert_int_eq(dock_container_name(&dc, ch, name, sizeof(name)),
	    DOCK_OK);
	ck_assert_uint_eq(strlen(name), CONTAINER_NAME_MAX);
	/* One byte short of room. */
	ck_assert_int_eq(dock_container_name(&dc, ch, name, sizeof(name) - 1),
	    DOCK_BAD_NAME);
	ck_assert_str_eq(name, "");
	free(ch);
	ch = run_of('c', CHANNEL_KEY_MAX + 1);
	ck_assert_int_eq(dock_container_name(&dc, ch, name, sizeof(name)),
	    DOCK_BAD_CHANNEL);
	free(ch);
	free(prefix);
	prefix = run_of('p', CONTAINER_PREFIX_MAX + 1);
	dc.prefix = prefix;
	ck_assert_int_eq(dock_container_name(&dc, "a", name, sizeof(name)),
	    DOCK_BAD_NAME);
	free(prefix);
}
END_TEST

START_TEST(name_refusals)
{
	struct dock_config	 dc = base_config;
	char			 name[CONTAINER_NAME_MAX + 1];
	static const char *const bad_prefixes[] = {
		"", "-abc", "Abc", "a_b", "a.b", "a b", "a/b", "\xc3\xa9"
	};
	size_t			 i;

	for (i = 0; i < sizeof(bad_prefixes) / sizeof(bad_prefixes[0]); i++) {
		dc.prefix = bad_prefixes[i];
		ck_assert_int_eq(dock_container_name(&dc, "a", name,
		    sizeof(name)), DOCK_BAD_NAME);
	}
	dc.prefix = NULL;
	ck_assert_int_eq(dock_container_name(&dc, "a", name, sizeof(name)),
	    DOCK_BAD_NAME);
	dc.prefix = "0-";
	ck_assert_int_eq(dock_container_name(&dc, "a", name, sizeof(name)),
	    DOCK_OK);
	ck_assert_str_eq(name, "0--a");
	ck_assert_int_eq(dock_container_name(&base_config, "", name,
	    sizeof(name)), DOCK_BAD_CHANNEL);
	ck_assert_int_eq(dock_container_name(&base_config, NULL, name,
	    sizeof(name)), DOCK_BAD_CHANNEL);
	/* Invalid UTF-8 (a lone continuation byte, an overlong '/'). */
	ck_assert_int_eq(dock_container_name(&base_config, "a\x80", name,
	    sizeof(name)), DOCK_BAD_CHANNEL);
	ck_assert_int_eq(dock_container_name(&base_config, "\xc0\xaf", name,
	    sizeof(name)), DOCK_BAD_CHANNEL);
	ck_assert_int_eq(dock_container_name(&base_config, "a", name, 0),
	    DOCK_BAD_NAME);
}
END_TEST

START_TEST(spec_ok)
{
	struct dock_config	 dc = base_config;

	ck_assert_int_eq(dock_check_spec(&base_config, &base_spec), DOCK_OK);
	dc.uid = dc.gid = 1;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	dc.uid = dc.gid = UINT32_MAX - 1;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	dc.state_dir = "/s";
	ck_assert_int_eq(check_channel(&dc, "discord:123", "discord_123"),
	    DOCK_OK);
}
END_TEST

START_TEST(spec_channel_limits)
{
	char	*ch, *seg;

	ch = run_of('x', CHANNEL_KEY_MAX);
	ck_assert_int_eq(check_channel(&base_config, ch, ch), DOCK_OK);
	free(ch);
	ch = run_of('x', CHANNEL_KEY_MAX + 1);
	ck_assert_int_eq(check_channel(&base_config, ch, ch),
	    DOCK_BAD_CHANNEL);
	free(ch);
	/* 128 characters above U+FFFF are 256 chars; 129 are 258. */
	ch = malloc(4 * 129 + 1);
	ck_assert_ptr_nonnull(ch);
	for (size_t i = 0; i < 129; i++)
		memcpy(ch + 4 * i, "\xf0\x9f\x98\x80", 4);
	ch[4 * 128] = '\0';
	seg = run_of('_', 256);
	ck_assert_int_eq(check_channel(&base_config, ch, seg), DOCK_OK);
	ch[4 * 128] = '\xf0';
	ch[4 * 129] = '\0';
	ck_assert_int_eq(check_channel(&base_config, ch, seg),
	    DOCK_BAD_CHANNEL);
	free(seg);
	free(ch);
	ck_assert_int_eq(check_channel(&base_config, "", "x"),
	    DOCK_BAD_CHANNEL);
	ck_assert_int_eq(check_channel(&base_config, "a\xff", "a_"),
	    DOCK_BAD_CHANNEL);
}
END_TEST

START_TEST(spec_bind_outside)
{
	struct dock_config	 dc = base_config;
	struct dock_spec	 ds = base_spec;

	ck_assert_int_eq(check_with_run("/tmp/discord_123/run"), DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_workspace("/home/discord_123/workspace"),
	    DOCK_BAD_BIND);
	/* A string prefix is not a directory prefix. */
	ck_assert_int_eq(check_with_run(STATE "2/discord_123/run"),
	    DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_workspace(STATE "2/discord_123/workspace"),
	    DOCK_BAD_BIND);
	dc.state_dir = "/state_dir";
	ds.run_dir = "/state_dir2/discord_123/run";
	ds.workspace_dir = "/state_dir/discord_123/workspace";
	ck_assert_int_eq(dock_check_spec(&dc, &ds), DOCK_BAD_BIND);
	ds.run_dir = "/state_dir/discord_123/run";
	ck_assert_int_eq(dock_check_spec(&dc, &ds), DOCK_OK);
	ds.workspace_dir = "/state_dir2/discord_123/workspace";
	ck_assert_int_eq(dock_check_spec(&dc, &ds), DOCK_BAD_BIND);
	/* The state directory itself, and "/". */
	ck_assert_int_eq(check_with_run(STATE), DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_run("/"), DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_workspace("/"), DOCK_BAD_BIND);
}
END_TEST

START_TEST(spec_bind_not_this_channel)
{
	/* Beneath the state directory, but not this channel's layout. */
	ck_assert_int_eq(check_with_run(STATE "/other/run"), DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_run(STATE "/discord_123"), DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_run(STATE "/discord_123/run/x"),
	    DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_run(STATE "/discord_123/.channel-key"),
	    DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_run(WORKSPACE), DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_workspace(RUN), DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_workspace(STATE "/discord_123/workspace2"),
	    DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_run(STATE "/discord:123/run"),
	    DOCK_BAD_BIND);
}
END_TEST

START_TEST(spec_bind_dots)
{
	static const char *const bad[] = {
		STATE "/../rtsandbox/discord_123/run",
		STATE "/discord_123/../discord_123/run",
		STATE "/discord_123/run/..",
		STATE "/discord_123/run/.",
		STATE "/./discord_123/run",
		STATE "//discord_123/run",
		STATE "/discord_123//run",
		STATE "/discord_123/run/",
		"//var/lib/rtsandbox/discord_123/run",
	};
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(check_with_run(bad[i]), DOCK_BAD_BIND);
		ck_assert_int_eq(check_with_workspace(bad[i]), DOCK_BAD_BIND);
	}
}
END_TEST

START_TEST(spec_bind_chars)
{
	static const char *const bad[] = {
		STATE "/discord_123/run:/etc",
		STATE "/discord_123/run,ro",
		STATE "/discord_123/run\r",
		STATE "/discord_123/run\n",
		STATE "/discord_123/r\nun",
		STATE "/discord_123/run\t",
		STATE "/discord_123/run\x7f",
		STATE "/discord_123/run\xff",
		"var/lib/rtsandbox/discord_123/run",
		"./discord_123/run",
		"",
	};
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(check_with_run(bad[i]), DOCK_BAD_BIND);
		ck_assert_int_eq(check_with_workspace(bad[i]), DOCK_BAD_BIND);
	}
	ck_assert_int_eq(check_with_run(NULL), DOCK_BAD_BIND);
	ck_assert_int_eq(check_with_workspace(NULL), DOCK_BAD_BIND);
}
END_TEST

START_TEST(spec_state_dir)
{
	struct dock_config	 dc = base_config;
	static const char *const bad[] = {
		"/", "", "var/lib/rtsandbox", "/var/lib/rtsandbox/",
		"/var/lib//rtsandbox", "/var/lib/./rtsandbox",
		"/var/lib/../rtsandbox", "/var/lib/rt:sandbox",
		"/var/lib/rt,sandbox", "/var/lib/rt\rsandbox",
		"/var/lib/rt\nsandbox",
	};
	char			*longdir;
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dc.state_dir = bad[i];
		/* The binds follow the state directory, so only it is wrong. */
		ck_assert_int_eq(check_channel(&dc, "discord:123",
		    "discord_123"), DOCK_BAD_CONFIG);
	}
	dc.state_dir = NULL;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
	/* A state directory so long that the binds cannot be paths. */
	longdir = run_of('d', PATH_BYTES_MAX - 1);
	longdir[0] = '/';
	dc.state_dir = longdir;
	ck_assert_int_eq(check_channel(&dc, "discord:123", "discord_123"),
	    DOCK_BAD_BIND);
	free(longdir);
}
END_TEST

START_TEST(spec_user)
{
	struct dock_config	 dc = base_config;

	dc.uid = 0;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_USER);
	dc.uid = 1000;
	dc.gid = 0;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_USER);
	dc.gid = UINT32_MAX;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_USER);
	dc.gid = 1000;
	dc.uid = UINT32_MAX;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_USER);
	dc.uid = UINT64_C(1) << 32;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_USER);
}
END_TEST

START_TEST(spec_image)
{
	struct dock_config	 dc = base_config;
	static const char *const bad[] = {
		"", "-rm", "a b", "a\tb", "a\nb", "a\rb", "a\x7f", "a\xff",
		"a\xc2\xa0" "b",
	};
	char			*img;
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dc.image = bad[i];
		ck_assert_int_eq(dock_check_spec(&dc, &base_spec),
		    DOCK_BAD_IMAGE);
	}
	dc.image = NULL;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_IMAGE);
	img = run_of('i', DOCK_IMAGE_MAX);
	dc.image = img;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	free(img);
	img = run_of('i', DOCK_IMAGE_MAX + 1);
	dc.image = img;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_IMAGE);
	free(img);
	dc.image = "registry.example:5000/team/worker@sha256:0123";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
}
END_TEST

START_TEST(spec_profile)
{
	struct dock_spec	 ds = base_spec;
	static const char *const bad[] = {
		"", "a b", "a.b", "a/b", "a:b", "\xc3\xa9", "a\n",
	};
	char			*p;
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ds.profile = bad[i];
		ck_assert_int_eq(dock_check_spec(&base_config, &ds),
		    DOCK_BAD_PROFILE);
	}
	ds.profile = NULL;
	ck_assert_int_eq(dock_check_spec(&base_config, &ds), DOCK_BAD_PROFILE);
	p = run_of('p', PROFILE_NAME_MAX);
	ds.profile = p;
	ck_assert_int_eq(dock_check_spec(&base_config, &ds), DOCK_OK);
	free(p);
	p = run_of('p', PROFILE_NAME_MAX + 1);
	ds.profile = p;
	ck_assert_int_eq(dock_check_spec(&base_config, &ds), DOCK_BAD_PROFILE);
	free(p);
}
END_TEST

START_TEST(spec_labels)
{
	struct dock_config	 dc = base_config;
	char			*l;

	dc.label_profile = dc.label_channel;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_LABEL);
	dc.label_profile = "roundtable.sandbox.channel";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_LABEL);
	dc.label_profile = "";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_LABEL);
	dc.label_profile = NULL;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_LABEL);
	dc = base_config;
	dc.label_channel = "";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_LABEL);
	dc.label_channel = "a\nb";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_LABEL);
	dc.label_channel = "a\xff";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_LABEL);
	l = run_of('l', DOCK_LABEL_MAX);
	dc.label_channel = l;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	free(l);
	l = run_of('l', DOCK_LABEL_MAX + 1);
	dc.label_channel = l;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_LABEL);
	free(l);
}
END_TEST

START_TEST(spec_time_zone)
{
	struct dock_config	 dc = base_config;
	static const char *const bad[] = {
		"", "/UTC", "UTC/", "../etc/passwd", "Europe/../UTC",
		"Europe//Paris", "./UTC", "Europe Paris", "UTC\n", "UTC:x",
	};
	static const char *const good[] = {
		"UTC", "Europe/Paris", "America/Argentina/Buenos_Aires",
		"Etc/GMT+5", "Etc/GMT-14",
	};
	char			*tz;
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		dc.time_zone = bad[i];
		ck_assert_int_eq(dock_check_spec(&dc, &base_spec),
		    DOCK_BAD_CONFIG);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		dc.time_zone = good[i];
		ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	}
	dc.time_zone = NULL;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
	tz = run_of('Z', DOCK_TIME_ZONE_MAX);
	dc.time_zone = tz;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	free(tz);
	tz = run_of('Z', DOCK_TIME_ZONE_MAX + 1);
	dc.time_zone = tz;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
	free(tz);
}
END_TEST

START_TEST(spec_limits)
{
	struct dock_config	 dc = base_config;

	dc.memory_mib = 0;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
	dc.memory_mib = DOCK_NUMBER_MAX / MIB;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	dc.memory_mib++;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
	dc.memory_mib = UINT64_MAX / 2;	/* would wrap when made bytes */
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
	dc = base_config;
	dc.nano_cpus = 0;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
	dc.nano_cpus = DOCK_NUMBER_MAX;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	dc.nano_cpus++;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
	dc = base_config;
	dc.pids = 0;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
	dc.pids = DOCK_NUMBER_MAX;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	dc.pids++;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
}
END_TEST

/* The body of PROTOCOL.md 7 for base_config and base_spec, key by key. */
static const char expected_body[] =
    "{"
    "\"Image\":\"roundtable-worker:0.7.3\","
    "\"User\":\"1000:1001\","
    "\"Labels\":{"
	"\"roundtable.sandbox.channel\":\"discord:123\","
	"\"roundtable.sandbox.profile\":\"default\"},"
    "\"Env\":["
	"\"SANDBOX_PROFILE=default\","
	"\"TZ=UTC\","
	"\"ANTHROPIC_BASE_URL=http://127.0.0.1:8080/anthropic\","
	"\"CLAUDE_CODE_OAUTH_TOKEN=sandbox-dummy-token\","
	"\"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1\","
	"\"SANDBOX_CONTENT=/app/worker/content.ts\","
	"\"HOME=/tmp/home\","
	"\"PI_CODING_AGENT_DIR=/tmp/pi-agent\","
	"\"CLAUDE_CONFIG_DIR=/workspace/claude\"],"
    "\"HostConfig\":{"
	"\"NetworkMode\":\"none\","
	"\"ReadonlyRootfs\":true,"
	"\"Tmpfs\":{\"/tmp\":\"rw,nosuid,nodev,size=512m,mode=1777\"},"
	"\"Memory\":1610612736,"
	"\"MemorySwap\":1610612736,"
	"\"NanoCpus\":1000000000,"
	"\"PidsLimit\":256,"
	"\"Ulimits\":[{\"Name\":\"nofile\",\"Soft\":256,\"Hard\":256}],"
	"\"CapDrop\":[\"ALL\"],"
	"\"SecurityOpt\":[\"no-new-privileges\"],"
	"\"RestartPolicy\":{\"Name\":\"unless-stopped\"},"
	"\"LogConfig\":{\"Type\":\"local\","
	    "\"Config\":{\"max-size\":\"10m\",\"max-file\":\"2\"}},"
	"\"Binds\":["
	    "\"" RUN ":/run/sandbox:ro\","
	    "\"" WORKSPACE ":/workspace\"]}"
    "}";

/* Every member of want is in got and equal, and got has nothing more. */
static void
compare_members(const cJSON *want, const cJSON *got, const char *where)
{
	const cJSON	*w, *g;

	ck_assert_int_eq(cJSON_GetArraySize(got), cJSON_GetArraySize(want));
	cJSON_ArrayForEach(w, want) {
		g = cJSON_GetObjectItemCaseSensitive(got, w->string);
		ck_assert_msg(g != NULL, "%s.%s missing", where, w->string);
		ck_assert_msg(cJSON_Compare(w, g, 1), "%s.%s differs",
		    where, w->string);
	}
}

START_TEST(body_exact)
{
	cJSON		*want, *got;
	const cJSON	*env, *e;
	size_t		 i = 0;

	want = cJSON_Parse(expected_body);
	ck_assert_ptr_nonnull(want);
	got = dock_create_body(&base_config, &base_spec,
	    DOCK_ENGINE_DOCKER);
	ck_assert_ptr_nonnull(got);
	compare_members(want, got, "body");
	compare_members(cJSON_GetObjectItem(want, "HostConfig"),
	    cJSON_GetObjectItem(got, "HostConfig"), "HostConfig");
	compare_members(cJSON_GetObjectItem(want, "Labels"),
	    cJSON_GetObjectItem(got, "Labels"), "Labels");
	ck_assert(cJSON_Compare(want, got, 1));
	/* Env order is part of the contract: compare it entry by entry. */
	env = cJSON_GetObjectItem(got, "Env");
	cJSON_ArrayForEach(e, env) {
		ck_assert(cJSON_IsString(e));
		ck_assert_str_eq(e->valuestring, cJSON_GetArrayItem(
		    cJSON_GetObjectItem(want, "Env"), (int)i)->valuestring);
		i++;
	}
	ck_assert_uint_eq(i, 9);
	cJSON_Delete(got);
	cJSON_Delete(want);
}
END_TEST

START_TEST(body_follows_config)
{
	struct dock_config	 dc = base_config;
	struct dock_spec	 ds = base_spec;
	cJSON			*got;
	const cJSON		*hc;
	char			*txt;

	dc.uid = 4000000000u;
	dc.gid = 7;
	dc.time_zone = "Europe/Paris";
	dc.memory_mib = 4096;
	dc.nano_cpus = 2500000000u;
	dc.pids = 100;
	dc.label_channel = "x.chan";
	dc.label_profile = "x.prof";
	ds.profile = "research";
	ds.channel = "slack:C0/\xc3\xa9";
	ds.run_dir = STATE "/slack_C0__/run";
	ds.workspace_dir = STATE "/slack_C0__/workspace";
	got = dock_create_body(&dc, &ds, DOCK_ENGINE_DOCKER);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(cJSON_GetObjectItem(got, "User")->valuestring,
	    "4000000000:7");
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(got, "Env"),
	    0)->valuestring, "SANDBOX_PROFILE=research");
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(got, "Env"),
	    1)->valuestring, "TZ=Europe/Paris");
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(got,
	    "Labels"), "x.chan")->valuestring, "slack:C0/\xc3\xa9");
	hc = cJSON_GetObjectItem(got, "HostConfig");
	ck_assert(cJSON_GetObjectItem(hc, "Memory")->valuedouble ==
	    4096.0 * MIB);
	/* Go reads these into int64: they must print as plain integers. */
	txt = cJSON_PrintUnformatted(got);
	ck_assert_ptr_nonnull(txt);
	ck_assert_ptr_nonnull(strstr(txt, "\"Memory\":4294967296,"));
	ck_assert_ptr_nonnull(strstr(txt, "\"MemorySwap\":4294967296,"));
	ck_assert_ptr_nonnull(strstr(txt, "\"NanoCpus\":2500000000,"));
	ck_assert_ptr_nonnull(strstr(txt, "\"PidsLimit\":100,"));
	ck_assert_ptr_nonnull(strstr(txt, "\"Binds\":[\"" STATE
	    "/slack_C0__/run:/run/sandbox:ro\",\"" STATE
	    "/slack_C0__/workspace:/workspace\"]"));
	cJSON_free(txt);
	cJSON_Delete(got);
}
END_TEST

START_TEST(body_largest_numbers)
{
	struct dock_config	 dc = base_config;
	cJSON			*got;
	char			*txt, want[64];

	dc.memory_mib = DOCK_NUMBER_MAX / MIB;
	dc.nano_cpus = DOCK_NUMBER_MAX;
	dc.pids = DOCK_NUMBER_MAX;
	got = dock_create_body(&dc, &base_spec, DOCK_ENGINE_DOCKER);
	ck_assert_ptr_nonnull(got);
	txt = cJSON_PrintUnformatted(got);
	ck_assert_ptr_nonnull(txt);
	(void)snprintf(want, sizeof(want), "\"Memory\":%llu,",
	    (unsigned long long)(dc.memory_mib * MIB));
	ck_assert_ptr_nonnull(strstr(txt, want));
	ck_assert_ptr_nonnull(strstr(txt, "\"NanoCpus\":999999999999999,"));
	ck_assert_ptr_nonnull(strstr(txt, "\"PidsLimit\":999999999999999,"));
	cJSON_free(txt);
	cJSON_Delete(got);
}
END_TEST

/* Only HostConfig.Runtime is added, and only when configured. */
START_TEST(body_runtime)
{
	struct dock_config	 dc = base_config;
	cJSON			*want, *got, *hc;

	dc.runtime = "runsc";
	want = cJSON_Parse(expected_body);
	ck_assert_ptr_nonnull(want);
	hc = cJSON_GetObjectItem(want, "HostConfig");
	ck_assert_ptr_nonnull(cJSON_AddStringToObject(hc, "Runtime", "runsc"));
	got = dock_create_body(&dc, &base_spec, DOCK_ENGINE_DOCKER);
	ck_assert_ptr_nonnull(got);
	compare_members(hc, cJSON_GetObjectItem(got, "HostConfig"),
	    "HostConfig");
	ck_assert(cJSON_Compare(want, got, 1));
	cJSON_Delete(got);
	cJSON_Delete(want);

	dc.runtime = "io.containerd.runsc.v1";
	got = dock_create_body(&dc, &base_spec, DOCK_ENGINE_DOCKER);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(got,
	    "HostConfig"), "Runtime")->valuestring, "io.containerd.runsc.v1");
	cJSON_Delete(got);
}
END_TEST

/* Podman: the same body but for the log driver and the user namespace. */
START_TEST(body_podman)
{
	cJSON		*want, *got, *hc;

	want = cJSON_Parse(expected_body);
	ck_assert_ptr_nonnull(want);
	hc = cJSON_GetObjectItem(want, "HostConfig");
	cJSON_ReplaceItemInObjectCaseSensitive(hc, "LogConfig",
	    cJSON_Parse("{\"Type\":\"k8s-file\","
	    "\"Config\":{\"max-size\":\"10m\"}}"));
	ck_assert_ptr_nonnull(cJSON_AddStringToObject(hc, "UsernsMode",
	    "keep-id"));
	got = dock_create_body(&base_config, &base_spec, DOCK_ENGINE_PODMAN);
	ck_assert_ptr_nonnull(got);
	compare_members(hc, cJSON_GetObjectItem(got, "HostConfig"),
	    "HostConfig");
	ck_assert(cJSON_Compare(want, got, 1));
	cJSON_Delete(got);
	cJSON_Delete(want);
}
END_TEST

/* docker.log_driver "journald": the same body but for LogConfig, on both
 * engines, tagged with the channel; nothing of a key can make a template. */
START_TEST(body_journald)
{
	struct dock_config	 dc = base_config;
	struct dock_spec	 ds = base_spec;
	cJSON			*want, *got, *hc;
	enum dock_engine	 engines[] = { DOCK_ENGINE_DOCKER,
				    DOCK_ENGINE_PODMAN };
	size_t			 i;

	dc.log_driver = DOCK_LOG_JOURNALD;
	for (i = 0; i < 2; i++) {
		want = cJSON_Parse(expected_body);
		ck_assert_ptr_nonnull(want);
		hc = cJSON_GetObjectItem(want, "HostConfig");
		cJSON_ReplaceItemInObjectCaseSensitive(hc, "LogConfig",
		    cJSON_Parse("{\"Type\":\"journald\","
		    "\"Config\":{\"tag\":\"sandbox/discord:123\"}}"));
		if (engines[i] == DOCK_ENGINE_PODMAN)
			ck_assert_ptr_nonnull(cJSON_AddStringToObject(hc,
			    "UsernsMode", "keep-id"));
		got = dock_create_body(&dc, &ds, engines[i]);
		ck_assert_ptr_nonnull(got);
		ck_assert(cJSON_Compare(want, got, 1));
		cJSON_Delete(got);
		cJSON_Delete(want);
	}
	/* a key that reads as a template, or holds what no tag should */
	ds.channel = "x{{.ID}} y\xc3\xa9\xf0\x9f\x98\x80";
	ds.run_dir = STATE "/x___ID___y___/run";
	ds.workspace_dir = STATE "/x___ID___y___/workspace";
	got = dock_create_body(&dc, &ds, DOCK_ENGINE_DOCKER);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(cJSON_GetObjectItem(got, "HostConfig"),
	    "LogConfig"), "Config"), "tag")->valuestring,
	    "sandbox/x__.ID___y___");
	cJSON_Delete(got);
	/* a driver that is neither */
	dc.log_driver = (enum dock_log_driver)7;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_CONFIG);
	ck_assert_ptr_null(dock_create_body(&dc, &base_spec,
	    DOCK_ENGINE_DOCKER));
}
END_TEST

/* The tag at the longest key, of characters above U+FFFF, and a buffer
 * one byte short. */
START_TEST(log_tag_limits)
{
	char	 key[CHANNEL_KEY_MAX * 2 + 8], tag[DOCK_LOG_TAG_MAX + 1];
	char	*s;
	size_t	 i;

	s = run_of('k', CHANNEL_KEY_MAX);
	ck_assert_int_eq(dock_log_tag(s, tag, sizeof(tag)), 0);
	ck_assert_uint_eq(strlen(tag), 8 + CHANNEL_KEY_MAX);
	free(s);
	s = run_of('k', CHANNEL_KEY_MAX + 1);
	ck_assert_int_eq(dock_log_tag(s, tag, sizeof(tag)), -1);
	free(s);
	/* 128 characters above U+FFFF: 256 UTF-16 units, 512 bytes */
	for (i = 0; i < CHANNEL_KEY_MAX / 2; i++)
		memcpy(key + 4 * i, "\xf0\x9f\x98\x80", 4);
	key[4 * i] = '\0';
	ck_assert_int_eq(dock_log_tag(key, tag, sizeof(tag)), 0);
	ck_assert_uint_eq(strlen(tag), 8 + CHANNEL_KEY_MAX);
	ck_assert_int_eq(dock_log_tag("ab", tag, 11), 0);
	ck_assert_str_eq(tag, "sandbox/ab");
	ck_assert_int_eq(dock_log_tag("ab", tag, 10), -1);
	ck_assert_int_eq(dock_log_tag("", tag, sizeof(tag)), -1);
	ck_assert_int_eq(dock_log_tag("\xff", tag, sizeof(tag)), -1);
}
END_TEST

START_TEST(spec_runtime)
{
	struct dock_config	 dc = base_config;
	char			*s;

	dc.runtime = "runsc";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	s = run_of('r', RUNTIME_NAME_MAX);
	dc.runtime = s;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_OK);
	free(s);
	s = run_of('r', RUNTIME_NAME_MAX + 1);
	dc.runtime = s;
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_RUNTIME);
	free(s);
	dc.runtime = "";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_RUNTIME);
	dc.runtime = "--debug";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_RUNTIME);
	dc.runtime = "/usr/bin/runsc";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_RUNTIME);
	dc.runtime = "run\nsc";
	ck_assert_int_eq(dock_check_spec(&dc, &base_spec), DOCK_BAD_RUNTIME);
}
END_TEST

START_TEST(body_refused)
{
	struct dock_config	 dc = base_config;
	struct dock_spec	 ds = base_spec;

	dc.uid = 0;
	ck_assert_ptr_null(dock_create_body(&dc, &base_spec,
	    DOCK_ENGINE_DOCKER));
	ck_assert_ptr_null(dock_create_body(&dc, &base_spec,
	    DOCK_ENGINE_PODMAN));
	ds.run_dir = "/etc";
	ck_assert_ptr_null(dock_create_body(&base_config, &ds,
	    DOCK_ENGINE_DOCKER));
	ck_assert_ptr_null(dock_create_body(&base_config, &ds,
	    DOCK_ENGINE_PODMAN));
	/* Podman would run the container under its own runtime. */
	dc = base_config;
	dc.runtime = "runsc";
	ck_assert_ptr_null(dock_create_body(&dc, &base_spec,
	    DOCK_ENGINE_PODMAN));
	dc.runtime = "-runsc";
	ck_assert_ptr_null(dock_create_body(&dc, &base_spec,
	    DOCK_ENGINE_DOCKER));
}
END_TEST

START_TEST(err_strings)
{
	int	 e;

	for (e = DOCK_OK; e <= DOCK_NO_RUNTIME; e++)
		ck_assert_str_ne(dock_err_to_string((enum dock_err)e),
		    "unknown error");
	ck_assert_str_eq(dock_err_to_string(DOCK_NO_IMAGE),
	    "image not present");
	ck_assert_str_eq(dock_err_to_string((enum dock_err)999),
	    "unknown error");
}
END_TEST


/* Precheck runs. */

static const char *const pc_argv[] = { "python3", "/workspace/check.py" };

static struct dock_precheck
pc_base(void)
{
	struct dock_precheck	 pc;

	memset(&pc, 0, sizeof(pc));
	pc.run = 42;
	pc.channel = "discord:123";
	pc.argv = pc_argv;
	pc.argc = 2;
	pc.memory_mib = PRECHECK_MEMORY_MIB_DEFAULT;
	pc.nano_cpus = PRECHECK_NANO_CPUS_MAX;
	pc.pids = PRECHECK_PIDS_DEFAULT;
	pc.timeout_ms = PRECHECK_TIMEOUT_MS_DEFAULT;
	pc.input_len = 2;
	return pc;
}

static const char expected_precheck_body[] =
    "{\"Image\":\"roundtable-worker:0.7.3\",\"User\":\"1000:1001\","
    "\"Labels\":{\"roundtable.sandbox.channel\":\"discord:123\","
    "\"rtsandbox.precheck\":\"42\"},"
    "\"Env\":[\"HOME=/tmp/home\",\"TZ=UTC\"],"
    "\"Entrypoint\":[\"python3\"],\"Cmd\":[\"/workspace/check.py\"],"
    "\"Tty\":false,\"OpenStdin\":true,\"StdinOnce\":true,"
    "\"AttachStdin\":true,\"AttachStdout\":true,\"AttachStderr\":true,"
    "\"HostConfig\":{\"NetworkMode\":\"none\",\"ReadonlyRootfs\":true,"
    "\"Tmpfs\":{\"/tmp\":\"rw,noexec,nosuid,nodev,size=64m,mode=1777\"},"
    "\"Memory\":268435456,\"MemorySwap\":268435456,"
    "\"NanoCpus\":1000000000,\"PidsLimit\":32,"
    "\"Ulimits\":[{\"Name\":\"nofile\",\"Soft\":256,\"Hard\":256}],"
    "\"CapDrop\":[\"ALL\"],\"SecurityOpt\":[\"no-new-privileges\"],"
    "\"RestartPolicy\":{\"Name\":\"no\"},\"LogConfig\":{\"Type\":\"none\"},"
    "\"Binds\":[\"" STATE "/.precheck/42/run:/broker:ro\","
    "\"" STATE "/.precheck/42/ws:/workspace:ro\"]}}";

START_TEST(precheck_body_exact)
{
	struct dock_precheck	 pc = pc_base();
	cJSON			*want, *got;
	char			*txt;

	want = cJSON_Parse(expected_precheck_body);
	ck_assert_ptr_nonnull(want);
	got = dock_precheck_body(&base_config, &pc, DOCK_ENGINE_DOCKER);
	ck_assert_ptr_nonnull(got);
	txt = cJSON_PrintUnformatted(got);
	ck_assert_msg(cJSON_Compare(want, got, 1), "body is %s", txt);
	cJSON_free(txt);
	cJSON_Delete(got);
	cJSON_Delete(want);
}
END_TEST

START_TEST(precheck_body_engines)
{
	struct dock_config	 dc = base_config;
	struct dock_precheck	 pc = pc_base();
	const char		*one[] = { "cat" };
	const cJSON		*hc;
	cJSON			*got;

	pc.argv = one;
	pc.argc = 1;
	dc.runtime = "runsc";
	got = dock_precheck_body(&dc, &pc, DOCK_ENGINE_DOCKER);
	ck_assert_ptr_nonnull(got);
	hc = cJSON_GetObjectItem(got, "HostConfig");
	ck_assert_str_eq(cJSON_GetObjectItem(hc, "Runtime")->valuestring,
	    "runsc");
	ck_assert_ptr_null(cJSON_GetObjectItem(hc, "UsernsMode"));
	/* One part: the image's own Cmd must not come back. */
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(got, "Cmd")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(got, "Cmd")),
	    0);
	cJSON_Delete(got);
	/* Podman: no runtime through this API; keep-id as for channels. */
	ck_assert_ptr_null(dock_precheck_body(&dc, &pc, DOCK_ENGINE_PODMAN));
	dc.runtime = NULL;
	got = dock_precheck_body(&dc, &pc, DOCK_ENGINE_PODMAN);
	ck_assert_ptr_nonnull(got);
	hc = cJSON_GetObjectItem(got, "HostConfig");
	ck_assert_str_eq(cJSON_GetObjectItem(hc, "UsernsMode")->valuestring,
	    "keep-id");
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(hc,
	    "LogConfig"), "Type")->valuestring, "none");
	ck_assert_ptr_null(cJSON_GetObjectItem(hc, "Runtime"));
	cJSON_Delete(got);
	/* Refused requests have no body. */
	pc.run = 0;
	ck_assert_ptr_null(dock_precheck_body(&dc, &pc, DOCK_ENGINE_DOCKER));
}
END_TEST

START_TEST(precheck_name_and_dirs)
{
	struct dock_config	 dc = base_config;
	char			 name[DOCK_PRECHECK_NAME_MAX + 1];
	char			 dir[PATH_BYTES_MAX + 1];
	char			*pfx;

	ck_assert_int_eq(dock_precheck_name(&dc, 1, name, sizeof(name)),
	    DOCK_OK);
	ck_assert_str_eq(name, "roundtable-sandbox.precheck-1");
	ck_assert_int_eq(dock_precheck_name(&dc, PRECHECK_RUN_MAX, name,
	    sizeof(name)), DOCK_OK);
	ck_assert_str_eq(name, "roundtable-sandbox.precheck-9007199254740991");
	ck_assert_int_eq(dock_precheck_name(&dc, PRECHECK_RUN_MAX + 1, name,
	    sizeof(name)), DOCK_BAD_RUN);
	ck_assert_str_eq(name, "");
	ck_assert_int_eq(dock_precheck_name(&dc, 0, name, sizeof(name)),
	    DOCK_BAD_RUN);
	/* The longest prefix and run fit the bound. */
	pfx = run_of('a', CONTAINER_PREFIX_MAX);
	dc.prefix = pfx;
	ck_assert_int_eq(dock_precheck_name(&dc, PRECHECK_RUN_MAX, name,
	    sizeof(name)), DOCK_OK);
	ck_assert_uint_eq(strlen(name), CONTAINER_PREFIX_MAX + 10 + 16);
	ck_assert_int_eq(dock_precheck_name(&dc, 1, name, 10), DOCK_BAD_NAME);
	free(pfx);
	pfx = run_of('a', CONTAINER_PREFIX_MAX + 1);
	dc.prefix = pfx;
	ck_assert_int_eq(dock_precheck_name(&dc, 1, name, sizeof(name)),
	    DOCK_BAD_NAME);
	free(pfx);
	dc.prefix = "Bad";
	ck_assert_int_eq(dock_precheck_name(&dc, 1, name, sizeof(name)),
	    DOCK_BAD_NAME);
	dc = base_config;
	ck_assert_int_eq(dock_precheck_dir(&dc, 7, "run", dir, sizeof(dir)),
	    DOCK_OK);
	ck_assert_str_eq(dir, STATE "/.precheck/7/run");
	ck_assert_int_eq(dock_precheck_dir(&dc, 7, "ws", dir, sizeof(dir)),
	    DOCK_OK);
	ck_assert_str_eq(dir, STATE "/.precheck/7/ws");
	ck_assert_int_eq(dock_precheck_dir(&dc, 7, "..", dir, sizeof(dir)),
	    DOCK_BAD_BIND);
	ck_assert_int_eq(dock_precheck_dir(&dc, 7, "workspace", dir,
	    sizeof(dir)), DOCK_BAD_BIND);
	ck_assert_int_eq(dock_precheck_dir(&dc, 0, "run", dir, sizeof(dir)),
	    DOCK_BAD_RUN);
	dc.state_dir = "/";
	ck_assert_int_eq(dock_precheck_dir(&dc, 7, "run", dir, sizeof(dir)),
	    DOCK_BAD_CONFIG);
}
END_TEST

START_TEST(precheck_ok_at_limits)
{
	struct dock_precheck	 pc = pc_base();
	const char		*v[PRECHECK_ARGV_MAX];
	char			*big;
	size_t			 i;

	ck_assert_int_eq(dock_check_precheck(&base_config, &pc), DOCK_OK);
	pc.run = 1;
	pc.memory_mib = PRECHECK_MEMORY_MIB_MIN;
	pc.nano_cpus = PRECHECK_NANO_CPUS_MIN;
	pc.pids = PRECHECK_PIDS_MIN;
	pc.timeout_ms = PRECHECK_TIMEOUT_MS_MIN;
	pc.input_len = 1;
	ck_assert_int_eq(dock_check_precheck(&base_config, &pc), DOCK_OK);
	big = run_of('x', PRECHECK_ARG_BYTES_MAX);
	for (i = 0; i < PRECHECK_ARGV_MAX; i++)
		v[i] = big;
	pc.argv = v;
	pc.argc = PRECHECK_ARGV_MAX;
	pc.run = PRECHECK_RUN_MAX;
	pc.memory_mib = PRECHECK_MEMORY_MIB_MAX;
	pc.nano_cpus = PRECHECK_NANO_CPUS_MAX;
	pc.pids = PRECHECK_PIDS_MAX;
	pc.timeout_ms = PRECHECK_TIMEOUT_MS_MAX;
	pc.input_len = PRECHECK_INPUT_MAX;
	ck_assert_int_eq(dock_check_precheck(&base_config, &pc), DOCK_OK);
	free(big);
	/* A channel key of 256 chars, 4 bytes each. */
	pc = pc_base();
	big = malloc(256 * 4 + 1);
	ck_assert_ptr_nonnull(big);
	for (i = 0; i < 256; i++)
		memcpy(big + i * 4, "\xf0\x9f\x98\x80", 4);
	big[256 * 4] = '\0';
	pc.channel = big;
	/* A char past U+FFFF counts twice in a key: 128 of them is 256. */
	big[128 * 4] = '\0';
	ck_assert_int_eq(dock_check_precheck(&base_config, &pc), DOCK_OK);
	big[128 * 4] = '\xf0';
	big[129 * 4] = '\0';
	ck_assert_int_eq(dock_check_precheck(&base_config, &pc),
	    DOCK_BAD_CHANNEL);
	free(big);
}
END_TEST

START_TEST(precheck_past_limits)
{
	struct dock_precheck	 pc;
	const char		*v[PRECHECK_ARGV_MAX + 1];
	char			*big;
	size_t			 i;

#define REFUSED(field, value, err) do {					\
	pc = pc_base();							\
	pc.field = (value);						\
	ck_assert_int_eq(dock_check_precheck(&base_config, &pc), (err));\
	ck_assert_ptr_null(dock_precheck_body(&base_config, &pc,	\
	    DOCK_ENGINE_DOCKER));					\
} while (0)
	REFUSED(run, 0, DOCK_BAD_RUN);
	REFUSED(run, PRECHECK_RUN_MAX + 1, DOCK_BAD_RUN);
	REFUSED(run, UINT64_MAX, DOCK_BAD_RUN);
	REFUSED(memory_mib, PRECHECK_MEMORY_MIB_MIN - 1, DOCK_BAD_LIMITS);
	REFUSED(memory_mib, PRECHECK_MEMORY_MIB_MAX + 1, DOCK_BAD_LIMITS);
	REFUSED(nano_cpus, PRECHECK_NANO_CPUS_MIN - 1, DOCK_BAD_LIMITS);
	REFUSED(nano_cpus, PRECHECK_NANO_CPUS_MAX + 1, DOCK_BAD_LIMITS);
	REFUSED(pids, PRECHECK_PIDS_MIN - 1, DOCK_BAD_LIMITS);
	REFUSED(pids, PRECHECK_PIDS_MAX + 1, DOCK_BAD_LIMITS);
	REFUSED(timeout_ms, PRECHECK_TIMEOUT_MS_MIN - 1, DOCK_BAD_LIMITS);
	REFUSED(timeout_ms, PRECHECK_TIMEOUT_MS_MAX + 1, DOCK_BAD_LIMITS);
	REFUSED(input_len, 0, DOCK_BAD_INPUT);
	REFUSED(input_len, PRECHECK_INPUT_MAX + 1, DOCK_BAD_INPUT);
	REFUSED(channel, NULL, DOCK_BAD_CHANNEL);
	REFUSED(channel, "", DOCK_BAD_CHANNEL);
	REFUSED(channel, "bad\xff", DOCK_BAD_CHANNEL);
	REFUSED(argc, 0, DOCK_BAD_ENTRYPOINT);
	REFUSED(argv, NULL, DOCK_BAD_ENTRYPOINT);
	big = run_of('x', PRECHECK_ARG_BYTES_MAX + 1);
	for (i = 0; i <= PRECHECK_ARGV_MAX; i++)
		v[i] = "ok";
	pc = pc_base();
	pc.argv = v;
	pc.argc = PRECHECK_ARGV_MAX + 1;
	ck_assert_int_eq(dock_check_precheck(&base_config, &pc),
	    DOCK_BAD_ENTRYPOINT);
	pc.argc = 2;
	v[1] = big;
	ck_assert_int_eq(dock_check_precheck(&base_config, &pc),
	    DOCK_BAD_ENTRYPOINT);
	{
		static const char *const bad[] = {
			"", "-c", "--rm", "a\nb", "a\rb", "\n", "a\xff",
			"\xc0\x80",
		};
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			v[0] = "ok";
			v[1] = bad[i];
			ck_assert_msg(dock_check_precheck(&base_config, &pc) ==
			    DOCK_BAD_ENTRYPOINT, "argv[1] #%zu", i);
			v[0] = bad[i];
			v[1] = "ok";
			ck_assert_msg(dock_check_precheck(&base_config, &pc) ==
			    DOCK_BAD_ENTRYPOINT, "argv[0] #%zu", i);
		}
	}
	free(big);
	/* The configuration is re-checked too. */
	{
		struct dock_config	 dc = base_config;

		pc = pc_base();
		dc.label_channel = DOCK_PRECHECK_LABEL;
		ck_assert_int_eq(dock_check_precheck(&dc, &pc),
		    DOCK_BAD_LABEL);
		dc = base_config;
		dc.uid = 0;
		ck_assert_int_eq(dock_check_precheck(&dc, &pc),
		    DOCK_BAD_USER);
		dc = base_config;
		dc.image = "Bad Image";
		ck_assert_int_eq(dock_check_precheck(&dc, &pc),
		    DOCK_BAD_IMAGE);
		dc = base_config;
		dc.state_dir = "/var/lib/../x";
		ck_assert_int_eq(dock_check_precheck(&dc, &pc),
		    DOCK_BAD_CONFIG);
	}
#undef REFUSED
}
END_TEST

START_TEST(precheck_err_strings)
{
	ck_assert_str_eq(dock_err_to_string(DOCK_BAD_RUN),
	    "run number refused");
	ck_assert_str_eq(dock_err_to_string(DOCK_BAD_ENTRYPOINT),
	    "entrypoint refused");
	ck_assert_str_eq(dock_err_to_string(DOCK_BAD_LIMITS),
	    "run limits refused");
	ck_assert_str_eq(dock_err_to_string(DOCK_BAD_INPUT),
	    "run input refused");
}
END_TEST

static Suite *
dockops_suite(void)
{
	Suite	*s = suite_create("dockops");
	TCase	*tc;

	tc = tcase_create("name");
	tcase_add_test(tc, name_built);
	tcase_add_test(tc, name_limits);
	tcase_add_test(tc, name_refusals);
	suite_add_tcase(s, tc);
	tc = tcase_create("check");
	tcase_add_test(tc, spec_ok);
	tcase_add_test(tc, spec_channel_limits);
	tcase_add_test(tc, spec_bind_outside);
	tcase_add_test(tc, spec_bind_not_this_channel);
	tcase_add_test(tc, spec_bind_dots);
	tcase_add_test(tc, spec_bind_chars);
	tcase_add_test(tc, spec_state_dir);
	tcase_add_test(tc, spec_user);
	tcase_add_test(tc, spec_image);
	tcase_add_test(tc, spec_profile);
	tcase_add_test(tc, spec_labels);
	tcase_add_test(tc, spec_time_zone);
	tcase_add_test(tc, spec_limits);
	tcase_add_test(tc, spec_runtime);
	suite_add_tcase(s, tc);
	tc = tcase_create("body");
	tcase_add_test(tc, body_exact);
	tcase_add_test(tc, body_follows_config);
	tcase_add_test(tc, body_largest_numbers);
	tcase_add_test(tc, body_runtime);
	tcase_add_test(tc, body_podman);
	tcase_add_test(tc, body_journald);
	tcase_add_test(tc, log_tag_limits);
	tcase_add_test(tc, body_refused);
	tcase_add_test(tc, err_strings);
	suite_add_tcase(s, tc);
	tc = tcase_create("precheck");
	tcase_add_test(tc, precheck_body_exact);
	tcase_add_test(tc, precheck_body_engines);
	tcase_add_test(tc, precheck_name_and_dirs);
	tcase_add_test(tc, precheck_ok_at_limits);
	tcase_add_test(tc, precheck_past_limits);
	tcase_add_test(tc, precheck_err_strings);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(dockops_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
