/*
 * The engine's answers about itself.  The engine is trusted, but what it says
 * is printed on an operator's terminal and steers the create body, so every
 * string is bounded and stripped of control characters, and anything of the
 * wrong type counts as not said.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "dockinfo.h"
#include "validate.h"

void
dock_engine_info_init(struct dock_engine_info *ei)
{
	memset(ei, 0, sizeof(*ei));
	ei->ei_engine = DOCK_ENGINE_DOCKER;
	ei->ei_cgroup_version = -1;
	ei->ei_memory_limit = -1;
	ei->ei_swap_limit = -1;
	ei->ei_pids_limit = -1;
	ei->ei_cpu_quota = -1;
	ei->ei_rootless = -1;
	ei->ei_log_local = -1;
	ei->ei_log_journald = -1;
	ei->ei_controllers = -1;
}

/* src into dst, cut to fit, control characters as '?'. */
static void
copy_text(char *dst, size_t dstlen, const char *src)
{
	size_t	 i;

	(void)snprintf(dst, dstlen, "%s", src);
	for (i = 0; dst[i] != '\0'; i++)
		if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
			dst[i] = '?';
}

static const char *
str_of(const cJSON *o, const char *k)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* 1 or 0 for a boolean member, else keep *out. */
static void
bool_of(const cJSON *o, const char *k, int *out)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(o, k);

	if (cJSON_IsBool(v))
		*out = cJSON_IsTrue(v);
}

static cJSON *
parse_object(const char *buf, size_t len)
{
	cJSON	*root;

	if (buf == NULL || (root = cJSON_ParseWithLength(buf, len)) == NULL)
		return NULL;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* "1.41" as 1041; -1 for anything but two small decimal numbers. */
static long
api_number(const char *s)
{
	long	 major = 0, minor = 0;
	size_t	 i = 0, n;

	if (s == NULL)
		return -1;
	for (n = 0; s[i] >= '0' && s[i] <= '9' && n < 3; i++, n++)
		major = major * 10 + (s[i] - '0');
	if (n == 0 || s[i] != '.')
		return -1;
	for (i++, n = 0; s[i] >= '0' && s[i] <= '9' && n < 3; i++, n++)
		minor = minor * 10 + (s[i] - '0');
	if (n == 0 || s[i] != '\0')
		return -1;
	return major * 1000 + minor;
}

int
dock_parse_version(const char *buf, size_t len, struct dock_engine_info *ei)
{
	cJSON		*root;
	const cJSON	*it;
	const char	*s, *name = NULL;
	long		 want = DOCK_API_MAJOR * 1000 + DOCK_API_MINOR, api, min;

	if ((root = parse_object(buf, len)) == NULL)
		return -1;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root,
	    "Components")) {
		if ((s = str_of(it, "Name")) == NULL)
			continue;
		if (name == NULL)
			name = s;
		if (strcmp(s, "Podman Engine") == 0) {
			ei->ei_engine = DOCK_ENGINE_PODMAN;
			name = s;
		}
	}
	if (name == NULL)
		name = str_of(cJSON_GetObjectItemCaseSensitive(root,
		    "Platform"), "Name");
	if (name != NULL)
		copy_text(ei->ei_name, sizeof(ei->ei_name), name);
	if ((s = str_of(root, "Version")) != NULL)
		copy_text(ei->ei_version, sizeof(ei->ei_version), s);
	if ((s = str_of(root, "ApiVersion")) != NULL)
		copy_text(ei->ei_api_version, sizeof(ei->ei_api_version), s);
	if ((s = str_of(root, "MinAPIVersion")) != NULL)
		copy_text(ei->ei_min_api_version,
		    sizeof(ei->ei_min_api_version), s);
	/* An engine that does not say its minimum takes what it says it
	 * speaks and everything before. */
	api = api_number(ei->ei_api_version);
	min = ei->ei_min_api_version[0] == '\0' ? 0 :
	    api_number(ei->ei_min_api_version);
	ei->ei_api_ok = api >= want && min >= 0 && min <= want;
	cJSON_Delete(root);
	return 0;
}

static void
runtime_of(const cJSON *it, struct dock_runtime *dr)
{
	const cJSON	*a;
	const char	*path;

	memset(dr, 0, sizeof(*dr));
	copy_text(dr->dr_name, sizeof(dr->dr_name), it->string);
	if ((path = str_of(it, "path")) != NULL)
		copy_text(dr->dr_path, sizeof(dr->dr_path), path);
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(it,
	    "runtimeArgs")) {
		if (!cJSON_IsString(a) || dr->dr_argc == DOCK_RUNTIME_ARGC_MAX ||
		    strlen(a->valuestring) >= DOCK_RUNTIME_ARG_MAX) {
			dr->dr_args_cut = 1;
			continue;
		}
		copy_text(dr->dr_argv[dr->dr_argc++], DOCK_RUNTIME_ARG_MAX,
		    a->valuestring);
	}
}

int
dock_parse_info(const char *buf, size_t len, struct dock_engine_info *ei)
{
	cJSON		*root;
	const cJSON	*it;
	const char	*s;
	int		 rootless = 0;

	if ((root = parse_object(buf, len)) == NULL)
		return -1;
	if ((s = str_of(root, "DefaultRuntime")) != NULL &&
	    valid_runtime_name(s, strlen(s)))
		copy_text(ei->ei_default_runtime,
		    sizeof(ei->ei_default_runtime), s);
	ei->ei_nruntimes = ei->ei_runtimes_seen = 0;
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root,
	    "Runtimes")) {
		if (it->string == NULL ||
		    !valid_runtime_name(it->string, strlen(it->string)))
			continue;
		ei->ei_runtimes_seen++;
		if (ei->ei_nruntimes < DOCK_RUNTIMES_MAX)
			runtime_of(it, &ei->ei_runtimes[ei->ei_nruntimes++]);
	}
	if ((s = str_of(root, "CgroupVersion")) != NULL &&
	    (strcmp(s, "1") == 0 || strcmp(s, "2") == 0))
		ei->ei_cgroup_version = s[0] - '0';
	bool_of(root, "MemoryLimit", &ei->ei_memory_limit);
	bool_of(root, "SwapLimit", &ei->ei_swap_limit);
	bool_of(root, "PidsLimit", &ei->ei_pids_limit);
	bool_of(root, "CpuCfsQuota", &ei->ei_cpu_quota);
	it = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
	    root, "Plugins"), "Log");
	if (cJSON_IsArray(it)) {
		const cJSON	*d;

		ei->ei_log_local = ei->ei_log_journald = 0;
		cJSON_ArrayForEach(d, it) {
			if (!cJSON_IsString(d))
				continue;
			if (strcmp(d->valuestring, "local") == 0)
				ei->ei_log_local = 1;
			else if (strcmp(d->valuestring, "journald") == 0)
				ei->ei_log_journald = 1;
		}
	}
	/* Docker lists "name=rootless"; Podman's compatible answer never
	 * does, and says it in /libpod/info instead. */
	if (ei->ei_engine == DOCK_ENGINE_DOCKER) {
		cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root,
		    "SecurityOptions"))
			if (cJSON_IsString(it) &&
			    strcmp(it->valuestring, "name=rootless") == 0)
				rootless = 1;
		ei->ei_rootless = rootless;
	}
	cJSON_Delete(root);
	return 0;
}

int
dock_parse_libpod_info(const char *buf, size_t len,
    struct dock_engine_info *ei)
{
	cJSON		*root;
	const cJSON	*host, *it;
	const char	*s;
	int		 cg = 0;

	if ((root = parse_object(buf, len)) == NULL)
		return -1;
	host = cJSON_GetObjectItemCaseSensitive(root, "host");
	bool_of(cJSON_GetObjectItemCaseSensitive(host, "security"),
	    "rootless", &ei->ei_rootless);
	if ((s = str_of(host, "cgroupVersion")) != NULL &&
	    (strcmp(s, "v1") == 0 || strcmp(s, "v2") == 0))
		ei->ei_cgroup_version = s[1] - '0';
	it = cJSON_GetObjectItemCaseSensitive(host, "cgroupControllers");
	if (cJSON_IsArray(it)) {
		cJSON_ArrayForEach(it, it) {
			if (!cJSON_IsString(it))
				continue;
			if (strcmp(it->valuestring, "memory") == 0)
				cg |= DOCK_CG_MEMORY;
			else if (strcmp(it->valuestring, "pids") == 0)
				cg |= DOCK_CG_PIDS;
			else if (strcmp(it->valuestring, "cpu") == 0)
				cg |= DOCK_CG_CPU;
		}
		ei->ei_controllers = cg;
	}
	cJSON_Delete(root);
	return 0;
}

int
dock_parse_image(const char *buf, size_t len, const char *want,
    struct dock_image_info *im)
{
	cJSON		*root;
	const cJSON	*it;
	const char	*id;

	memset(im, 0, sizeof(*im));
	if ((root = parse_object(buf, len)) == NULL)
		return -1;
	if ((id = str_of(root, "Id")) == NULL) {
		cJSON_Delete(root);
		return -1;
	}
	copy_text(im->im_id, sizeof(im->im_id), id);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root,
	    "RepoTags")) {
		if (!cJSON_IsString(it))
			continue;
		if (want != NULL && strcmp(it->valuestring, want) == 0)
			im->im_tagged = 1;
		else if (im->im_tag[0] == '\0')
			copy_text(im->im_tag, sizeof(im->im_tag),
			    it->valuestring);
	}
	cJSON_Delete(root);
	return 0;
}

const struct dock_runtime *
dock_engine_runtime(const struct dock_engine_info *ei, const char *name)
{
	size_t	 i;

	for (i = 0; i < ei->ei_nruntimes; i++)
		if (strcmp(ei->ei_runtimes[i].dr_name, name) == 0)
			return &ei->ei_runtimes[i];
	return NULL;
}

/* Whether argv sets runsc's flag to one of the values (--f=v, -f=v, --f v). */
static int
has_flag(const struct dock_runtime *dr, const char *flag,
    const char *const *values)
{
	char		 name[64];
	const char	*a, *v;
	size_t		 i, k, fl;

	(void)snprintf(name, sizeof(name), "%s", flag);
	fl = strlen(name);
	for (i = 0; i < dr->dr_argc; i++) {
		a = dr->dr_argv[i];
		a += a[0] == '-' ? (a[1] == '-' ? 2 : 1) : 0;
		if (a == dr->dr_argv[i] || strncmp(a, name, fl) != 0)
			continue;
		if (a[fl] == '=')
			v = a + fl + 1;
		else if (a[fl] == '\0' && i + 1 < dr->dr_argc)
			v = dr->dr_argv[i + 1];
		else
			continue;
		for (k = 0; values[k] != NULL; k++)
			if (strcmp(v, values[k]) == 0)
				return 1;
	}
	return 0;
}

const char *
dock_runtime_problem(const struct dock_runtime *dr)
{
	static const char *const uds[] = { "open", "all", NULL };
	static const char *const none[] = { "none", NULL };
	size_t		 pl = strlen(dr->dr_path);

	/* gVisor by its binary's name, whatever the runtime is called. */
	if (!(pl >= 5 && strcmp(dr->dr_path + pl - 5, "runsc") == 0 &&
	    (pl == 5 || dr->dr_path[pl - 6] == '/')))
		return NULL;
	if (!has_flag(dr, "host-uds", uds))
		return "gVisor without --host-uds=open: the worker cannot "
		    "connect to its broker socket";
	if (!has_flag(dr, "network", none))
		return "gVisor without --network=none: a container with "
		    "Docker's \"none\" network does not start";
	return NULL;
}
