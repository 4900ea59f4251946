/*
 * The precheck section of the configuration (rtsandboxd.conf(5)): how a
 * precheck run's sealed container is started and what it may spend.
 * Parsed and checked here, "<field>: <rule>" as the rest of config.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cfgcheck.h"
#include "config.h"
#include "limits.h"

/* Runs at once, in all channels. */
#define PRECHECK_RUNS_MAX	32u
#define PRECHECK_RUNS_DEFAULT	4u

/* The command of upstream's worker in the Pi sandbox image. */
static const char *const precheck_argv_default[] = {
	"bun", "/app/node_modules/pi-roundtable-sandbox/worker/precheck-main.ts"
};

void
config_precheck_defaults(struct config *cfg)
{
	cfg->precheck_timeout_ms = PRECHECK_TIMEOUT_MS_DEFAULT;
	cfg->precheck_max_calls = PRECHECK_CALLS_DEFAULT;
	cfg->precheck_max_runs = PRECHECK_RUNS_DEFAULT;
	cfg->precheck_memory_mib = PRECHECK_MEMORY_MIB_DEFAULT;
	cfg->precheck_nano_cpus = PRECHECK_NANO_CPUS_MAX;
	cfg->precheck_pids = PRECHECK_PIDS_DEFAULT;
}

/* One part of the command: what the Docker client takes as it is. */
static int
precheck_arg_valid(const char *s, size_t len)
{
	return len > 0 && len <= PRECHECK_ARG_BYTES_MAX && s[0] != '-' &&
	    strpbrk(s, "\r\n") == NULL;
}

static void
parse_entrypoint(struct cctx *c, struct config *cfg, const cJSON *arr)
{
	const cJSON	*it;
	const char	*s;
	char		 p[FIELD_PATH_MAX];
	size_t		 n, i = 0, len;
	char		**v;

	if (arr == NULL) {
		n = sizeof(precheck_argv_default) /
		    sizeof(precheck_argv_default[0]);
		if ((v = calloc(n, sizeof(*v))) == NULL) {
			c->nomem = 1;
			return;
		}
		for (i = 0; i < n; i++)
			v[i] = xstrdup(c, precheck_argv_default[i]);
		cfg->precheck_argv = v;
		cfg->precheck_argc = n;
		return;
	}
	if (!cJSON_IsArray(arr) || (n = (size_t)cJSON_GetArraySize(arr)) == 0 ||
	    n > PRECHECK_ARGV_MAX) {
		cerr(c, "precheck.entrypoint", "must be an array of 1 to %u "
		    "strings", PRECHECK_ARGV_MAX);
		return;
	}
	if ((v = calloc(n, sizeof(*v))) == NULL) {
		c->nomem = 1;
		return;
	}
	cJSON_ArrayForEach(it, arr) {
		path_index(p, sizeof(p), "precheck.entrypoint", i);
		if ((s = str_value(c, it, p, &len)) != NULL) {
			if (!precheck_arg_valid(s, len))
				cerr(c, p, "must be 1 to %u bytes, not "
				    "starting with \"-\", without CR or LF",
				    PRECHECK_ARG_BYTES_MAX);
			else
				v[i] = xstrdup(c, s);
		}
		i++;
	}
	cfg->precheck_argv = v;
	cfg->precheck_argc = n;
}

enum { PL_MEMORY, PL_CPUS, PL_PIDS, PL_N };
static const char *const pl_names[PL_N] = { "memory_mib", "cpus", "pids" };

static void
parse_limits(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*f[PL_N];
	double		 v;

	if (obj == NULL || !is_object(c, obj, "precheck.limits"))
		return;
	members(c, obj, "precheck.limits", pl_names, f, PL_N);
	uint_value(c, f[PL_MEMORY], "precheck.limits.memory_mib",
	    PRECHECK_MEMORY_MIB_MIN, PRECHECK_MEMORY_MIB_MAX,
	    &cfg->precheck_memory_mib);
	uint_value(c, f[PL_PIDS], "precheck.limits.pids", PRECHECK_PIDS_MIN,
	    PRECHECK_PIDS_MAX, &cfg->precheck_pids);
	if (f[PL_CPUS] == NULL)
		return;
	v = cJSON_IsNumber(f[PL_CPUS]) ? f[PL_CPUS]->valuedouble : -1;
	if (!(v >= PRECHECK_NANO_CPUS_MIN / 1e9 &&
	    v <= PRECHECK_NANO_CPUS_MAX / 1e9))
		cerr(c, "precheck.limits.cpus", "must be a number from 0.01 "
		    "to 1");
	else
		cfg->precheck_nano_cpus = (uint64_t)(v * 1e9 + 0.5);
}

enum { PC_ENTRYPOINT, PC_TIMEOUT, PC_CALLS, PC_RUNS, PC_LIMITS, PC_N };
static const char *const pc_names[PC_N] = {
	"entrypoint", "timeout_ms", "max_calls", "max_runs", "limits"
};

void
config_parse_precheck(struct cctx *c, struct config *cfg, const cJSON *obj)
{
	const cJSON	*f[PC_N];

	if (obj == NULL || !is_object(c, obj, "precheck"))
		return;
	members(c, obj, "precheck", pc_names, f, PC_N);
	parse_entrypoint(c, cfg, f[PC_ENTRYPOINT]);
	uint_value(c, f[PC_TIMEOUT], "precheck.timeout_ms",
	    PRECHECK_TIMEOUT_MS_MIN, PRECHECK_TIMEOUT_MS_MAX,
	    &cfg->precheck_timeout_ms);
	uint_value(c, f[PC_CALLS], "precheck.max_calls", PRECHECK_CALLS_MIN,
	    PRECHECK_CALLS_MAX, &cfg->precheck_max_calls);
	uint_value(c, f[PC_RUNS], "precheck.max_runs", 1, PRECHECK_RUNS_MAX,
	    &cfg->precheck_max_runs);
	parse_limits(c, cfg, f[PC_LIMITS]);
}
