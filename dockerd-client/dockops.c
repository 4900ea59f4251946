/*
 * PROTOCOL.md 7 as code: the container's name, the checks the Docker client
 * makes on every request whatever the supervisor already checked, and the
 * create body.  No I/O here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "dockops.h"
#include "limits.h"
#include "validate.h"

/* Names of the container's side of PROTOCOL.md 7 and 1. */
#define RUN_TARGET		"/run/sandbox"
#define WORKSPACE_TARGET	"/workspace"

/* The fixed part of the environment, in the order of PROTOCOL.md 7. */
static const char *const env_fixed[] = {
	"ANTHROPIC_BASE_URL=http://127.0.0.1:8080/anthropic",
	"CLAUDE_CODE_OAUTH_TOKEN=sandbox-dummy-token",
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	"SANDBOX_CONTENT=/app/worker/content.ts",
	"HOME=/tmp/home",
	"PI_CODING_AGENT_DIR=/tmp/pi-agent",
	"CLAUDE_CONFIG_DIR=/workspace/claude",
};

const char *
dock_err_to_string(enum dock_err e)
{
	switch (e) {
	case DOCK_OK:
		return "ok";
	case DOCK_BAD_NAME:
		return "container name refused";
	case DOCK_BAD_IMAGE:
		return "image name refused";
	case DOCK_BAD_BIND:
		return "bind source refused";
	case DOCK_BAD_USER:
		return "container user refused";
	case DOCK_BAD_LABEL:
		return "label names refused";
	case DOCK_BAD_PROFILE:
		return "profile name refused";
	case DOCK_BAD_CHANNEL:
		return "channel key refused";
	case DOCK_BAD_CONFIG:
		return "state directory, time zone or limits refused";
	case DOCK_UNREACHABLE:
		return "Docker daemon unreachable";
	case DOCK_TIMEOUT:
		return "Docker call timed out";
	case DOCK_NO_IMAGE:
		return "image not present";
	case DOCK_CONFLICT:
		return "container name in use or being removed";
	case DOCK_API:
		return "Docker refused the call";
	case DOCK_NOMEM:
		return "out of memory";
	case DOCK_BAD_RUNTIME:
		return "runtime name refused";
	case DOCK_NO_RUNTIME:
		return "runtime not available from the engine";
	case DOCK_BAD_RUN:
		return "run number refused";
	case DOCK_BAD_ENTRYPOINT:
		return "entrypoint refused";
	case DOCK_BAD_LIMITS:
		return "run limits refused";
	case DOCK_BAD_INPUT:
		return "run input refused";
	}
	return "unknown error";
}

static int
is_ascii_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/*
 * Docker reads the body as Go strings: invalid UTF-8 would arrive changed
 * (U+FFFD), so a path or label could name something other than what was
 * checked.  Every string sent is valid UTF-8 without control characters.
 */
static int
plain_text(const char *s, size_t maxbytes)
{
	size_t	 len, i;

	if (s == NULL || (len = strlen(s)) == 0 || len > maxbytes)
		return 0;
	if (utf8_text_check(s, len, maxbytes) == -1)
		return 0;
	for (i = 0; i < len; i++)
		if (is_ascii_control((unsigned char)s[i]))
			return 0;
	return 1;
}

/*
 * A bind source or the state directory: absolute, not "/", no ':' or ','
 * (they split Docker's bind syntax), no CR or LF, and canonical (no empty,
 * "." or ".." component, no trailing '/') so that comparing strings is
 * comparing places.
 */
static int
canonical_path(const char *p)
{
	size_t	 len, i, start, n;

	if (!plain_text(p, PATH_BYTES_MAX) || p[0] != '/')
		return 0;
	len = strlen(p);
	if (len == 1 || strpbrk(p, ":,\r\n") != NULL)
		return 0;
	for (start = 1, i = 1; i <= len; i++) {
		if (i < len && p[i] != '/')
			continue;
		n = i - start;
		if (n == 0 || (n == 1 && p[start] == '.') ||
		    (n == 2 && p[start] == '.' && p[start + 1] == '.'))
			return 0;
		start = i + 1;
	}
	return 1;
}

/* Beneath dir: its string, then a '/' so "/state2" is not beneath "/state". */
static int
beneath(const char *p, const char *dir)
{
	size_t	 dl = strlen(dir);

	return strncmp(p, dir, dl) == 0 && p[dl] == '/';
}

/* The same rule as the configuration's: a zone name, never a file path. */
static int
valid_time_zone(const char *s)
{
	size_t	 len, i, start, n;

	if (s == NULL || (len = strlen(s)) == 0 || len > DOCK_TIME_ZONE_MAX)
		return 0;
	for (start = 0, i = 0; i <= len; i++) {
		if (i < len && s[i] != '/') {
			if (!((s[i] >= 'a' && s[i] <= 'z') ||
			    (s[i] >= 'A' && s[i] <= 'Z') ||
			    (s[i] >= '0' && s[i] <= '9') ||
			    strchr("_+-.", s[i]) != NULL))
				return 0;
			continue;
		}
		n = i - start;
		if (n == 0 || (n == 1 && s[start] == '.') ||
		    (n == 2 && s[start] == '.' && s[start + 1] == '.'))
			return 0;
		start = i + 1;
	}
	return 1;
}

/* Docker's own container name rule, [a-zA-Z0-9][a-zA-Z0-9_.-]+. */
static int
docker_name_pattern(const char *s)
{
	size_t	 i;
	char	 c;

	if (s[0] == '\0' || s[1] == '\0')
		return 0;
	for (i = 0; s[i] != '\0'; i++) {
		c = s[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9'))
			continue;
		if (i > 0 && (c == '_' || c == '.' || c == '-'))
			continue;
		return 0;
	}
	return 1;
}

/* The segment of PROTOCOL.md 6 into seg (SEGMENT_MAX + 1 bytes), or -1. */
static long
segment_of(const char *channel, char *seg, size_t seglen)
{
	if (channel == NULL)
		return -1;
	return channel_segment(channel, strlen(channel), seg, seglen);
}

enum dock_err
dock_container_name(const struct dock_config *dc, const char *channel,
    char *out, size_t outlen)
{
	char	 seg[SEGMENT_MAX + 1];
	int	 n;

	if (outlen > 0)
		out[0] = '\0';
	if (dc->prefix == NULL ||
	    !valid_container_prefix(dc->prefix, strlen(dc->prefix)))
		return DOCK_BAD_NAME;
	if (segment_of(channel, seg, sizeof(seg)) < 1)
		return DOCK_BAD_CHANNEL;
	n = snprintf(out, outlen, "%s-%s", dc->prefix, seg);
	if (n < 0 || (size_t)n >= outlen || (size_t)n > CONTAINER_NAME_MAX ||
	    !docker_name_pattern(out)) {
		if (outlen > 0)
			out[0] = '\0';
		return DOCK_BAD_NAME;
	}
	return DOCK_OK;
}

static enum dock_err
check_config(const struct dock_config *dc)
{
	if (!plain_text(dc->label_channel, DOCK_LABEL_MAX) ||
	    !plain_text(dc->label_profile, DOCK_LABEL_MAX) ||
	    strcmp(dc->label_channel, dc->label_profile) == 0)
		return DOCK_BAD_LABEL;
	if (dc->prefix == NULL ||
	    !valid_container_prefix(dc->prefix, strlen(dc->prefix)))
		return DOCK_BAD_NAME;
	if (dc->image == NULL || strlen(dc->image) > DOCK_IMAGE_MAX ||
	    !valid_image_name(dc->image, strlen(dc->image)))
		return DOCK_BAD_IMAGE;
	/* (uid_t)-1 means "no change" to the kernel, never a user. */
	if (dc->uid < CONTAINER_ID_MIN || dc->uid >= UINT32_MAX ||
	    dc->gid < CONTAINER_ID_MIN || dc->gid >= UINT32_MAX)
		return DOCK_BAD_USER;
	if (!canonical_path(dc->state_dir) || !valid_time_zone(dc->time_zone))
		return DOCK_BAD_CONFIG;
	if (dc->memory_mib == 0 || dc->memory_mib > DOCK_NUMBER_MAX / MIB ||
	    dc->nano_cpus == 0 || dc->nano_cpus > DOCK_NUMBER_MAX ||
	    dc->pids == 0 || dc->pids > DOCK_NUMBER_MAX)
		return DOCK_BAD_CONFIG;
	if (dc->runtime != NULL &&
	    !valid_runtime_name(dc->runtime, strlen(dc->runtime)))
		return DOCK_BAD_RUNTIME;
	if (dc->log_driver != DOCK_LOG_LOCAL &&
	    dc->log_driver != DOCK_LOG_JOURNALD)
		return DOCK_BAD_CONFIG;
	return DOCK_OK;
}

int
dock_log_tag(const char *channel, char *out, size_t outlen)
{
	const uint8_t	*s = (const uint8_t *)channel;
	size_t		 len, i = 0, o, units;
	uint32_t	 cp;

	if (channel == NULL || (len = strlen(channel)) == 0 ||
	    utf8_utf16_len(channel, len, &units) == -1 || units >
	    CHANNEL_KEY_MAX || outlen < 9)
		return -1;
	memcpy(out, "sandbox/", 8);
	o = 8;
	while (i < len) {
		(void)utf8_next(s, len, &i, &cp);
		units = cp > 0xffff ? 2 : 1;
		if (o + units >= outlen)
			return -1;
		if (units == 1 && cp < 0x80 && ((cp >= 'a' && cp <= 'z') ||
		    (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9') ||
		    strchr("_.:/-", (int)cp) != NULL))
			out[o++] = (char)cp;
		else
			while (units-- > 0)
				out[o++] = '_';
	}
	out[o] = '\0';
	return 0;
}

/* One bind source: the general rules, then exactly <state>/<seg>/<leaf>. */
static enum dock_err
check_bind(const struct dock_config *dc, const char *seg, const char *leaf,
    const char *src)
{
	char	 want[PATH_BYTES_MAX + 1];
	int	 n;

	if (!canonical_path(src) || !beneath(src, dc->state_dir))
		return DOCK_BAD_BIND;
	n = snprintf(want, sizeof(want), "%s/%s/%s", dc->state_dir, seg, leaf);
	if (n < 0 || (size_t)n >= sizeof(want) || strcmp(src, want) != 0)
		return DOCK_BAD_BIND;
	return DOCK_OK;
}

enum dock_err
dock_check_spec(const struct dock_config *dc, const struct dock_spec *ds)
{
	char		 seg[SEGMENT_MAX + 1];
	char		 name[CONTAINER_NAME_MAX + 1];
	enum dock_err	 e;

	if ((e = check_config(dc)) != DOCK_OK)
		return e;
	if (segment_of(ds->channel, seg, sizeof(seg)) < 1)
		return DOCK_BAD_CHANNEL;
	if ((e = dock_container_name(dc, ds->channel, name, sizeof(name))) !=
	    DOCK_OK)
		return e;
	if (ds->profile == NULL ||
	    !valid_profile_name(ds->profile, strlen(ds->profile)))
		return DOCK_BAD_PROFILE;
	if ((e = check_bind(dc, seg, "run", ds->run_dir)) != DOCK_OK ||
	    (e = check_bind(dc, seg, "workspace", ds->workspace_dir)) !=
	    DOCK_OK)
		return e;
	return DOCK_OK;
}

/* cJSON_Add* return NULL when out of memory; one flag collects them. */
static void
add_str(cJSON *o, const char *k, const char *v, int *ok)
{
	if (cJSON_AddStringToObject(o, k, v) == NULL)
		*ok = 0;
}

static void
add_num(cJSON *o, const char *k, double v, int *ok)
{
	if (cJSON_AddNumberToObject(o, k, v) == NULL)
		*ok = 0;
}

static void
add_bool(cJSON *o, const char *k, int v, int *ok)
{
	if (cJSON_AddBoolToObject(o, k, v) == NULL)
		*ok = 0;
}

static void
push_str(cJSON *a, const char *v, int *ok)
{
	cJSON	*s;

	if ((s = cJSON_CreateString(v)) == NULL ||
	    !cJSON_AddItemToArray(a, s)) {
		cJSON_Delete(s);
		*ok = 0;
	}
}

/* Adds and returns a child object or array, NULL (and *ok = 0) on failure. */
static cJSON *
add_obj(cJSON *o, const char *k, int *ok)
{
	cJSON	*c;

	if ((c = cJSON_AddObjectToObject(o, k)) == NULL)
		*ok = 0;
	return c;
}

static cJSON *
add_arr(cJSON *o, const char *k, int *ok)
{
	cJSON	*c;

	if ((c = cJSON_AddArrayToObject(o, k)) == NULL)
		*ok = 0;
	return c;
}

/*
 * What seals every container, a channel's or a precheck run's: no
 * network, a read-only root with /tmp of tmpfs_opts, equal memory and
 * swap limits (no swap beyond the memory), CPUs, processes, open files,
 * no capabilities, no new privileges.
 */
static void
sealed(cJSON *hc, const char *tmpfs_opts, uint64_t memory_mib,
    uint64_t nano_cpus, uint64_t pids, int *ok)
{
	cJSON	*o, *a, *u;

	add_str(hc, "NetworkMode", "none", ok);
	add_bool(hc, "ReadonlyRootfs", 1, ok);
	if ((o = add_obj(hc, "Tmpfs", ok)) != NULL)
		add_str(o, "/tmp", tmpfs_opts, ok);
	add_num(hc, "Memory", (double)(memory_mib * MIB), ok);
	add_num(hc, "MemorySwap", (double)(memory_mib * MIB), ok);
	add_num(hc, "NanoCpus", (double)nano_cpus, ok);
	add_num(hc, "PidsLimit", (double)pids, ok);
	if ((a = add_arr(hc, "Ulimits", ok)) != NULL) {
		if ((u = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(a, u)) {
			cJSON_Delete(u);
			*ok = 0;
		} else {
			add_str(u, "Name", "nofile", ok);
			add_num(u, "Soft", CONTAINER_NOFILE, ok);
			add_num(u, "Hard", CONTAINER_NOFILE, ok);
		}
	}
	if ((a = add_arr(hc, "CapDrop", ok)) != NULL)
		push_str(a, "ALL", ok);
	if ((a = add_arr(hc, "SecurityOpt", ok)) != NULL)
		push_str(a, "no-new-privileges", ok);
}

static void
host_config(cJSON *hc, const struct dock_config *dc, const struct dock_spec *ds,
    enum dock_engine engine, int *ok)
{
	cJSON	*o, *a;
	char	*bind;
	char	 num[32], tag[DOCK_LOG_TAG_MAX + 1];

	sealed(hc, CONTAINER_TMPFS_OPTS, dc->memory_mib, dc->nano_cpus,
	    dc->pids, ok);
	if ((o = add_obj(hc, "RestartPolicy", ok)) != NULL)
		add_str(o, "Name", "unless-stopped", ok);
	(void)snprintf(num, sizeof(num), "%um", CONTAINER_LOG_SIZE / MIB);
	if (dc->log_driver == DOCK_LOG_JOURNALD) {
		if ((o = add_obj(hc, "LogConfig", ok)) != NULL) {
			add_str(o, "Type", "journald", ok);
			if ((o = add_obj(o, "Config", ok)) != NULL) {
				if (dock_log_tag(ds->channel, tag,
				    sizeof(tag)) == -1)
					*ok = 0;
				else
					add_str(o, "tag", tag, ok);
			}
		}
	} else if ((o = add_obj(hc, "LogConfig", ok)) != NULL) {
		/* Podman bounds its one k8s-file log by size alone. */
		add_str(o, "Type", engine == DOCK_ENGINE_PODMAN ? "k8s-file" :
		    "local", ok);
		if ((o = add_obj(o, "Config", ok)) != NULL) {
			add_str(o, "max-size", num, ok);
			if (engine != DOCK_ENGINE_PODMAN) {
				(void)snprintf(num, sizeof(num), "%u",
				    CONTAINER_LOG_FILES);
				add_str(o, "max-file", num, ok);
			}
		}
	}
	if (engine == DOCK_ENGINE_PODMAN)
		add_str(hc, "UsernsMode", "keep-id", ok);
	else if (dc->runtime != NULL)
		add_str(hc, "Runtime", dc->runtime, ok);
	if ((a = add_arr(hc, "Binds", ok)) == NULL)
		return;
	if (asprintf(&bind, "%s:%s:ro", ds->run_dir, RUN_TARGET) == -1)
		*ok = 0;
	else {
		push_str(a, bind, ok);
		free(bind);
	}
	if (asprintf(&bind, "%s:%s", ds->workspace_dir, WORKSPACE_TARGET) == -1)
		*ok = 0;
	else {
		push_str(a, bind, ok);
		free(bind);
	}
}

cJSON *
dock_create_body(const struct dock_config *dc, const struct dock_spec *ds,
    enum dock_engine engine)
{
	cJSON	*body, *o, *a;
	char	 buf[64 + PROFILE_NAME_MAX + DOCK_TIME_ZONE_MAX];
	size_t	 i;
	int	 ok = 1;

	/* The buffers below are sized by the limits checked here. */
	if (dock_check_spec(dc, ds) != DOCK_OK)
		return NULL;
	/* A runtime asked for and silently not used is worse than none. */
	if (engine == DOCK_ENGINE_PODMAN && dc->runtime != NULL)
		return NULL;
	if ((body = cJSON_CreateObject()) == NULL)
		return NULL;
	add_str(body, "Image", dc->image, &ok);
	(void)snprintf(buf, sizeof(buf), "%llu:%llu",
	    (unsigned long long)dc->uid, (unsigned long long)dc->gid);
	add_str(body, "User", buf, &ok);
	if ((o = add_obj(body, "Labels", &ok)) != NULL) {
		add_str(o, dc->label_channel, ds->channel, &ok);
		add_str(o, dc->label_profile, ds->profile, &ok);
	}
	if ((a = add_arr(body, "Env", &ok)) != NULL) {
		(void)snprintf(buf, sizeof(buf), "SANDBOX_PROFILE=%s",
		    ds->profile);
		push_str(a, buf, &ok);
		(void)snprintf(buf, sizeof(buf), "TZ=%s", dc->time_zone);
		push_str(a, buf, &ok);
		for (i = 0; i < sizeof(env_fixed) / sizeof(env_fixed[0]); i++)
			push_str(a, env_fixed[i], &ok);
	}
	if ((o = add_obj(body, "HostConfig", &ok)) != NULL)
		host_config(o, dc, ds, engine, &ok);
	if (!ok) {
		cJSON_Delete(body);
		return NULL;
	}
	return body;
}

/* Precheck runs. */

enum dock_err
dock_precheck_name(const struct dock_config *dc, uint64_t run, char *out,
    size_t outlen)
{
	int	 n;

	if (outlen > 0)
		out[0] = '\0';
	if (dc->prefix == NULL ||
	    !valid_container_prefix(dc->prefix, strlen(dc->prefix)))
		return DOCK_BAD_NAME;
	if (run < 1 || run > PRECHECK_RUN_MAX)
		return DOCK_BAD_RUN;
	n = snprintf(out, outlen, "%s" DOCK_PRECHECK_INFIX "%llu", dc->prefix,
	    (unsigned long long)run);
	if (n < 0 || (size_t)n >= outlen || (size_t)n > DOCK_PRECHECK_NAME_MAX ||
	    !docker_name_pattern(out)) {
		if (outlen > 0)
			out[0] = '\0';
		return DOCK_BAD_NAME;
	}
	return DOCK_OK;
}

enum dock_err
dock_precheck_dir(const struct dock_config *dc, uint64_t run, const char *leaf,
    char *out, size_t outlen)
{
	int	 n;

	if (outlen > 0)
		out[0] = '\0';
	if (!canonical_path(dc->state_dir))
		return DOCK_BAD_CONFIG;
	if (run < 1 || run > PRECHECK_RUN_MAX)
		return DOCK_BAD_RUN;
	if (leaf == NULL || (strcmp(leaf, "run") != 0 && strcmp(leaf, "ws") != 0))
		return DOCK_BAD_BIND;
	n = snprintf(out, outlen, "%s/.precheck/%llu/%s", dc->state_dir,
	    (unsigned long long)run, leaf);
	if (n < 0 || (size_t)n >= outlen || (size_t)n > PATH_BYTES_MAX ||
	    !canonical_path(out)) {
		if (outlen > 0)
			out[0] = '\0';
		return DOCK_BAD_BIND;
	}
	return DOCK_OK;
}

/* One part of the command: 1..PRECHECK_ARG_BYTES_MAX bytes, no option. */
static int
precheck_arg(const char *a)
{
	size_t	 len;

	if (a == NULL || (len = strlen(a)) == 0 ||
	    len > PRECHECK_ARG_BYTES_MAX || a[0] == '-')
		return 0;
	/* Go reads it as a string: a changed byte would run another file. */
	if (utf8_text_check(a, len, PRECHECK_ARG_BYTES_MAX) == -1)
		return 0;
	return strpbrk(a, "\r\n") == NULL;
}

enum dock_err
dock_check_precheck(const struct dock_config *dc,
    const struct dock_precheck *pc)
{
	char		 seg[SEGMENT_MAX + 1];
	char		 path[PATH_BYTES_MAX + 1];
	size_t		 i;
	enum dock_err	 e;

	if ((e = check_config(dc)) != DOCK_OK)
		return e;
	if (pc->run < 1 || pc->run > PRECHECK_RUN_MAX)
		return DOCK_BAD_RUN;
	/* Its own label must not be taken for the channel's. */
	if (strcmp(dc->label_channel, DOCK_PRECHECK_LABEL) == 0)
		return DOCK_BAD_LABEL;
	if (segment_of(pc->channel, seg, sizeof(seg)) < 1)
		return DOCK_BAD_CHANNEL;
	if (pc->argv == NULL || pc->argc < 1 || pc->argc > PRECHECK_ARGV_MAX)
		return DOCK_BAD_ENTRYPOINT;
	for (i = 0; i < pc->argc; i++)
		if (!precheck_arg(pc->argv[i]))
			return DOCK_BAD_ENTRYPOINT;
	if (pc->memory_mib < PRECHECK_MEMORY_MIB_MIN ||
	    pc->memory_mib > PRECHECK_MEMORY_MIB_MAX ||
	    pc->nano_cpus < PRECHECK_NANO_CPUS_MIN ||
	    pc->nano_cpus > PRECHECK_NANO_CPUS_MAX ||
	    pc->pids < PRECHECK_PIDS_MIN || pc->pids > PRECHECK_PIDS_MAX ||
	    pc->timeout_ms < PRECHECK_TIMEOUT_MS_MIN ||
	    pc->timeout_ms > PRECHECK_TIMEOUT_MS_MAX)
		return DOCK_BAD_LIMITS;
	if (pc->input_len < 1 || pc->input_len > PRECHECK_INPUT_MAX)
		return DOCK_BAD_INPUT;
	if ((e = dock_precheck_name(dc, pc->run, path, sizeof(path))) !=
	    DOCK_OK ||
	    (e = dock_precheck_dir(dc, pc->run, "run", path, sizeof(path))) !=
	    DOCK_OK ||
	    (e = dock_precheck_dir(dc, pc->run, "ws", path, sizeof(path))) !=
	    DOCK_OK)
		return e;
	return DOCK_OK;
}

static void
push_bind(cJSON *a, const struct dock_config *dc, uint64_t run,
    const char *leaf, const char *target, int *ok)
{
	char	 src[PATH_BYTES_MAX + 1], *bind;

	if (dock_precheck_dir(dc, run, leaf, src, sizeof(src)) != DOCK_OK ||
	    asprintf(&bind, "%s:%s:ro", src, target) == -1) {
		*ok = 0;
		return;
	}
	push_str(a, bind, ok);
	free(bind);
}

static void
precheck_host_config(cJSON *hc, const struct dock_config *dc,
    const struct dock_precheck *pc, enum dock_engine engine, int *ok)
{
	cJSON	*o, *a;
	char	 tmpfs[96];

	(void)snprintf(tmpfs, sizeof(tmpfs),
	    "rw,noexec,nosuid,nodev,size=%um,mode=1777", PRECHECK_TMP_MIB);
	sealed(hc, tmpfs, pc->memory_mib, pc->nano_cpus, pc->pids, ok);
	/* A run is removed when it ends; nothing of it is kept or restarted. */
	if ((o = add_obj(hc, "RestartPolicy", ok)) != NULL)
		add_str(o, "Name", "no", ok);
	if ((o = add_obj(hc, "LogConfig", ok)) != NULL)
		add_str(o, "Type", "none", ok);
	if (engine == DOCK_ENGINE_PODMAN)
		add_str(hc, "UsernsMode", "keep-id", ok);
	else if (dc->runtime != NULL)
		add_str(hc, "Runtime", dc->runtime, ok);
	if ((a = add_arr(hc, "Binds", ok)) == NULL)
		return;
	push_bind(a, dc, pc->run, "run", PRECHECK_BROKER_TARGET, ok);
	push_bind(a, dc, pc->run, "ws", PRECHECK_WS_TARGET, ok);
}

cJSON *
dock_precheck_body(const struct dock_config *dc,
    const struct dock_precheck *pc, enum dock_engine engine)
{
	cJSON	*body, *o, *a;
	char	 buf[64 + DOCK_TIME_ZONE_MAX];
	size_t	 i;
	int	 ok = 1;

	if (dock_check_precheck(dc, pc) != DOCK_OK)
		return NULL;
	if (engine == DOCK_ENGINE_PODMAN && dc->runtime != NULL)
		return NULL;
	if ((body = cJSON_CreateObject()) == NULL)
		return NULL;
	add_str(body, "Image", dc->image, &ok);
	(void)snprintf(buf, sizeof(buf), "%llu:%llu",
	    (unsigned long long)dc->uid, (unsigned long long)dc->gid);
	add_str(body, "User", buf, &ok);
	if ((o = add_obj(body, "Labels", &ok)) != NULL) {
		add_str(o, dc->label_channel, pc->channel, &ok);
		(void)snprintf(buf, sizeof(buf), "%llu",
		    (unsigned long long)pc->run);
		add_str(o, DOCK_PRECHECK_LABEL, buf, &ok);
	}
	if ((a = add_arr(body, "Env", &ok)) != NULL) {
		push_str(a, "HOME=/tmp/home", &ok);
		(void)snprintf(buf, sizeof(buf), "TZ=%s", dc->time_zone);
		push_str(a, buf, &ok);
	}
	if ((a = add_arr(body, "Entrypoint", &ok)) != NULL)
		push_str(a, pc->argv[0], &ok);
	if ((a = add_arr(body, "Cmd", &ok)) != NULL)
		for (i = 1; i < pc->argc; i++)
			push_str(a, pc->argv[i], &ok);
	add_bool(body, "Tty", 0, &ok);
	add_bool(body, "OpenStdin", 1, &ok);
	add_bool(body, "StdinOnce", 1, &ok);
	add_bool(body, "AttachStdin", 1, &ok);
	add_bool(body, "AttachStdout", 1, &ok);
	add_bool(body, "AttachStderr", 1, &ok);
	if ((o = add_obj(body, "HostConfig", &ok)) != NULL)
		precheck_host_config(o, dc, pc, engine, &ok);
	if (!ok) {
		cJSON_Delete(body);
		return NULL;
	}
	return body;
}
