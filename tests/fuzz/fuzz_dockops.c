/*
 * dock_check_spec() and dock_container_name() on fields split from the
 * input at NUL bytes.  Whatever the check lets through must meet
 * PROTOCOL.md 7 as read here a second, plainer way, and must make a body.
 *
 * Input: one mode byte, then NUL-separated fields: prefix, channel,
 * profile, image, state_dir, run_dir, workspace_dir, label_channel,
 * label_profile, time_zone, runtime (absent: none).  Mode bit 0 replaces the two bind sources with
 * the ones the channel should have (plus the run_dir and workspace_dir
 * fields appended when bit 1 is set), so the accepting paths get reached.
 * Bits 2-4 and 5-7 pick uid and gid at and around their bounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "dockops.h"
#include "limits.h"
#include "validate.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

enum {
	F_PREFIX, F_CHANNEL, F_PROFILE, F_IMAGE, F_STATE, F_RUN, F_WS,
	F_LCHAN, F_LPROF, F_TZ, F_RUNTIME, F_N
};

static const char *const defaults[F_N] = {
	"roundtable-sandbox", "discord:123", "default", "worker:1", "/state",
	"/state/discord_123/run", "/state/discord_123/workspace",
	"roundtable.sandbox.channel", "roundtable.sandbox.profile", "UTC",
	NULL
};

/* Docker's name rule, as a second reading. */
static int
ref_docker_name(const char *s)
{
	size_t	 i, n = strlen(s);

	if (n < 2)
		return 0;
	for (i = 0; i < n; i++)
		if (!(strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", s[i]) != NULL ||
		    (i > 0 && strchr("_.-", s[i]) != NULL)))
			return 0;
	return 1;
}

/* No "." or ".." component, no "//", not ending in "/". */
static int
ref_canonical(const char *p)
{
	return p[0] == '/' && strcmp(p, "/") != 0 &&
	    strstr(p, "//") == NULL && strstr(p, "/./") == NULL &&
	    strstr(p, "/../") == NULL && p[strlen(p) - 1] != '/' &&
	    (strlen(p) < 2 || strcmp(p + strlen(p) - 2, "/.") != 0) &&
	    (strlen(p) < 3 || strcmp(p + strlen(p) - 3, "/..") != 0);
}

static void
check_accepted(const struct dock_config *dc, const struct dock_spec *ds)
{
	char		 name[CONTAINER_NAME_MAX + 1], seg[SEGMENT_MAX + 1];
	char		 want[2 * PATH_BYTES_MAX];
	static const char *const numbers[] = {
		"Memory", "MemorySwap", "NanoCpus", "PidsLimit"
	};
	cJSON		*body, *back, *hc;
	char		*txt;
	const char	*p[2] = { ds->run_dir, ds->workspace_dir };
	size_t		 i, sl = strlen(dc->state_dir);

	CHECK(dc->uid > 0 && dc->gid > 0);
	CHECK(strcmp(dc->label_channel, dc->label_profile) != 0);
	CHECK(dc->label_channel[0] != '\0' && dc->label_profile[0] != '\0');
	CHECK(valid_image_name(dc->image, strlen(dc->image)));
	CHECK(valid_profile_name(ds->profile, strlen(ds->profile)));
	CHECK(ref_canonical(dc->state_dir));
	CHECK(channel_segment(ds->channel, strlen(ds->channel), seg,
	    sizeof(seg)) > 0);
	for (i = 0; i < 2; i++) {
		CHECK(ref_canonical(p[i]));
		CHECK(strpbrk(p[i], ":,\r\n") == NULL);
		CHECK(strncmp(p[i], dc->state_dir, sl) == 0 &&
		    p[i][sl] == '/');
		(void)snprintf(want, sizeof(want), "%s/%s/%s", dc->state_dir,
		    seg, i == 0 ? "run" : "workspace");
		CHECK(strcmp(p[i], want) == 0);
	}
	CHECK(dock_container_name(dc, ds->channel, name, sizeof(name)) ==
	    DOCK_OK);
	CHECK(ref_docker_name(name));
	CHECK(strncmp(name, dc->prefix, strlen(dc->prefix)) == 0);
	/* A body that survives printing and parsing (unless out of memory). */
	if ((body = dock_create_body(dc, ds, DOCK_ENGINE_DOCKER)) == NULL)
		return;
	hc = cJSON_GetObjectItem(body, "HostConfig");
	for (i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		/* Go reads these into int64: plain integers only. */
		if ((txt = cJSON_PrintUnformatted(cJSON_GetObjectItem(hc,
		    numbers[i]))) == NULL)
			continue;
		CHECK(strspn(txt, "0123456789") == strlen(txt));
		cJSON_free(txt);
	}
	if ((txt = cJSON_PrintUnformatted(body)) != NULL) {
		back = cJSON_Parse(txt);
		CHECK(back != NULL && cJSON_Compare(back, body, 1));
		cJSON_Delete(back);
		cJSON_free(txt);
	}
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(body, "Env")) == 9);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(hc, "Binds")) == 2);
	/* The runtime goes as it was checked, or not at all. */
	if (dc->runtime != NULL) {
		CHECK(valid_runtime_name(dc->runtime, strlen(dc->runtime)));
		CHECK(strcmp(cJSON_GetObjectItem(hc, "Runtime")->valuestring,
		    dc->runtime) == 0);
	} else
		CHECK(cJSON_GetObjectItem(hc, "Runtime") == NULL);
	cJSON_Delete(body);
	/* Podman: never a runtime it would not use; else the same body with
	 * its own log driver and user namespace. */
	body = dock_create_body(dc, ds, DOCK_ENGINE_PODMAN);
	if (dc->runtime != NULL)
		CHECK(body == NULL);
	else if (body != NULL) {
		hc = cJSON_GetObjectItem(body, "HostConfig");
		CHECK(strcmp(cJSON_GetObjectItem(hc, "UsernsMode")->valuestring,
		    "keep-id") == 0);
		CHECK(cJSON_GetObjectItem(hc, "Runtime") == NULL);
	}
	cJSON_Delete(body);
}

static const uint64_t ids[8] = { 1000, 1000, 1, 1000, UINT32_MAX - 1, 0,
    UINT32_MAX, UINT64_C(1) << 32 };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dock_config	 dc;
	struct dock_spec	 ds;
	char			*buf, *f[F_N], *run = NULL, *ws = NULL;
	char			 seg[SEGMENT_MAX + 1];
	char			 name[CONTAINER_NAME_MAX + 1];
	size_t			 i, k, start;
	uint8_t			 mode;
	enum dock_err		 e, ne;

	if (size < 1)
		return 0;
	mode = data[0];
	data++;
	size--;
	if ((buf = malloc(size + 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (k = 0; k < F_N; k++)
		f[k] = (char *)defaults[k];
	for (i = 0, k = 0, start = 0; i <= size && k < F_N; i++)
		if (i == size || buf[i] == '\0') {
			buf[i] = '\0';
			f[k++] = buf + start;
			start = i + 1;
		}

	memset(&dc, 0, sizeof(dc));
	dc.prefix = f[F_PREFIX];
	dc.label_channel = f[F_LCHAN];
	dc.label_profile = f[F_LPROF];
	dc.image = f[F_IMAGE];
	dc.state_dir = f[F_STATE];
	dc.time_zone = f[F_TZ];
	dc.runtime = f[F_RUNTIME];
	dc.uid = ids[mode >> 2 & 7];
	dc.gid = ids[mode >> 5 & 7];
	dc.memory_mib = DOCK_NUMBER_MAX / MIB;
	dc.nano_cpus = DOCK_NUMBER_MAX;
	dc.pids = CONTAINER_PIDS_MAX;
	ds.channel = f[F_CHANNEL];
	ds.profile = f[F_PROFILE];
	ds.run_dir = f[F_RUN];
	ds.workspace_dir = f[F_WS];

	if ((mode & 1) && channel_segment(ds.channel, strlen(ds.channel), seg,
	    sizeof(seg)) > 0) {
		if (asprintf(&run, "%s/%s/run%s", dc.state_dir, seg,
		    (mode & 2) ? f[F_RUN] : "") == -1)
			run = NULL;
		if (asprintf(&ws, "%s/%s/workspace%s", dc.state_dir, seg,
		    (mode & 2) ? f[F_WS] : "") == -1)
			ws = NULL;
		if (run != NULL && ws != NULL) {
			ds.run_dir = run;
			ds.workspace_dir = ws;
		}
	}

	ne = dock_container_name(&dc, ds.channel, name, sizeof(name));
	if (ne == DOCK_OK) {
		CHECK(ref_docker_name(name));
		CHECK(strlen(name) <= CONTAINER_NAME_MAX);
	} else
		CHECK(name[0] == '\0');
	e = dock_check_spec(&dc, &ds);
	if (e == DOCK_OK) {
		CHECK(ne == DOCK_OK);
		check_accepted(&dc, &ds);
	} else {
		CHECK(dock_create_body(&dc, &ds, DOCK_ENGINE_DOCKER) == NULL);
		CHECK(dock_create_body(&dc, &ds, DOCK_ENGINE_PODMAN) == NULL);
	}
	CHECK(dock_err_to_string(e) != NULL);

	free(run);
	free(ws);
	free(buf);
	return 0;
}
