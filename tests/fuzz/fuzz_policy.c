/*
 * libFuzzer target: egress/policy.c, egress's own reading of call bodies.
 *
 * Input: one byte choosing the level and whether the MCP call has a bound
 * turn, then the body.  Both checks run on it; neither may crash, and the
 * answer is one of the rules.  Whatever the policy admits is read again by
 * cJSON (through the strict body_parse() of common/bodies.c): where cJSON
 * reads it too, what upstream would see must keep every rule the policy
 * stands for (the model, max_tokens, the thinking budget, custom tools; for
 * MCP an allowed method and tool).  A differential between the two readers
 * is exactly what a taken-over broker would look for.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bodies.h"
#include "limits.h"
#include "policy.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char *const tools[] = { "search", "fetch_page" };

static const cJSON *
get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static void
check_model(const cJSON *root, const struct policy_model *pm)
{
	const cJSON	*m, *mt, *th, *b, *t, *tl;

	if (!cJSON_IsObject(root))
		abort();
	m = get(root, "model");
	if (!cJSON_IsString(m) || strcmp(m->valuestring, pm->pm_model) != 0)
		abort();
	if ((mt = get(root, "max_tokens")) != NULL &&
	    (!cJSON_IsNumber(mt) || mt->valuedouble > pm->pm_max_tokens ||
	    mt->valuedouble < 0))
		abort();
	if ((th = get(root, "thinking")) != NULL) {
		t = get(th, "type");
		if (!cJSON_IsString(t))
			abort();
		if (strcmp(t->valuestring, "enabled") == 0) {
			b = get(th, "budget_tokens");
			if (!cJSON_IsNumber(b) || b->valuedouble >
			    policy_budget_ceiling(pm->pm_level))
				abort();
		} else if (strcmp(t->valuestring, "adaptive") != 0 &&
		    strcmp(t->valuestring, "disabled") != 0)
			abort();
	}
	if ((tl = get(root, "tools")) != NULL) {
		if (!cJSON_IsArray(tl))
			abort();
		cJSON_ArrayForEach(t, tl) {
			const cJSON	*ty = get(t, "type");

			if (ty != NULL && (!cJSON_IsString(ty) ||
			    strcmp(ty->valuestring, "custom") != 0))
				abort();
		}
	}
}

static void
check_mcp(const cJSON *root, const struct policy_mcp *pc)
{
	static const char *const meta[] = { "initialize",
	    "notifications/initialized", "ping", "tools/list" };
	const cJSON	*m, *p, *n;
	size_t		 i;

	if (!cJSON_IsObject(root))
		abort();
	m = get(root, "method");
	if (!cJSON_IsString(m))
		abort();
	for (i = 0; i < 4; i++)
		if (strcmp(m->valuestring, meta[i]) == 0)
			return;
	if (strcmp(m->valuestring, "tools/call") != 0 || pc->pm_metadata_only)
		abort();
	p = get(root, "params");
	n = get(p, "name");
	if (!cJSON_IsString(n) || !cJSON_IsObject(get(p, "arguments")))
		abort();
	for (i = 0; i < pc->pm_ntools; i++)
		if (strcmp(n->valuestring, pc->pm_tools[i]) == 0)
			return;
	abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_model	 pm;
	struct policy_mcp	 pc;
	enum violation		 v;
	const char		*body;
	cJSON			*root;
	char			 why[256];
	size_t			 len;

	if (size < 1)
		return 0;
	pm.pm_model = "claude-test";
	pm.pm_max_tokens = 128000;
	pm.pm_level = data[0] % 5;
	pc.pm_tools = tools;
	pc.pm_ntools = 2;
	pc.pm_metadata_only = (data[0] >> 3) & 1;
	body = (const char *)data + 1;
	len = size - 1;

	v = policy_model_check(body, len, &pm, why, sizeof(why));
	if ((unsigned)v >= VIOLATION__COUNT || strlen(why) >= sizeof(why))
		abort();
	if (v == VIOLATION_NONE && body_parse(body, len, &root, NULL, 0) ==
	    BODY_OK) {
		check_model(root, &pm);
		cJSON_Delete(root);
	}
	v = policy_mcp_check(body, len, &pc, why, sizeof(why));
	if ((unsigned)v >= VIOLATION__COUNT)
		abort();
	if (v == VIOLATION_NONE && body_parse(body, len, &root, NULL, 0) ==
	    BODY_OK) {
		check_mcp(root, &pc);
		cJSON_Delete(root);
	}
	return 0;
}
