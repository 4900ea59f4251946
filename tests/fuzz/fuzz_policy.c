/*
 * libFuzzer target: egress/policy.c, egress's own reading of call bodies,
 * against the broker's rebuild (broker/rebuild.c), which is what a
 * legitimate broker sends through egress.
 *
 * Input: one option byte, then the body.  Bit 3: the MCP call has no bound
 * turn; bits 5-6: maxOutputTokens, one of 128 000, 1 025, 4 096 and
 * 200 000; the other bits are not read.  A model call is checked at every
 * level (none, a research job without one, then low .. xhigh) and on both
 * routes (/v1/messages and count_tokens): what is admitted at one level
 * and refused at the next is where a ceiling is.
 *
 * Both checks run on the body; neither may crash, and the answer is one
 * of the rules.  Then, for a model call:
 *
 * - Whatever egress admits, the rebuild could have written.  The admitted
 *   body is read by cJSON (the strict body_parse() of common/bodies.c);
 *   its skeleton, everything egress rules on (model, max_tokens, thinking,
 *   output_config, the count of tools and their type, each message's role,
 *   clear_at and output_config,
 *   each block's type and keys, each source's type and media type,
 *   cache_control, is_error, nested content) kept as it is and every
 *   payload (text, ids, names, base64 data, inputs, schemas) replaced by a
 *   plain one, goes through rebuild_model_request() with the same model,
 *   level, bound and route: it must be accepted, and what it writes must
 *   have that same structure, value for value, key for key.  So a block
 *   type, a source, a key, a role, a count, an effort or a budget that the
 *   rebuild never writes, if egress let it through, aborts here.  A
 *   research job without a level has no rebuild: there the body must not
 *   think at all, and the rest is held to the rebuild at low.
 * - Whatever the rebuild writes, egress admits: the body, read as a
 *   worker's request, is rebuilt and, when the rebuild accepts it, its
 *   output must pass egress under the same parameters.
 *
 * For MCP, what the policy admits keeps an allowed method and tool.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bodies.h"
#include "limits.h"
#include "policy.h"
#include "rebuild.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const char *const tools[] = { "search", "fetch_page" };
static const uint64_t max_outs[] = { 128000, 1025, 4096, 200000 };

static void __attribute__((noreturn, format(printf, 1, 2)))
oracle(const char *fmt, ...)
{
	va_list	 ap;

	fputs("fuzz_policy: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static cJSON *
get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static cJSON *
dup(const cJSON *v)
{
	cJSON	*c;

	if ((c = cJSON_Duplicate(v, 1)) == NULL)
		oracle("out of memory");
	return c;
}

static void
put(cJSON *o, const char *k, cJSON *v)
{
	if (v == NULL || !cJSON_AddItemToObject(o, k, v))
		oracle("out of memory");
}

/* A payload string: a plain one when it is a string, else as it is (so
 * that a value of the wrong kind still breaks the rebuild's rule). */
static cJSON *
payload_str(const cJSON *v, const char *plain)
{
	return cJSON_IsString(v) ? cJSON_CreateString(plain) : dup(v);
}

static cJSON	*skel_list(const cJSON *);

/* One block: its type and every key it has, payloads made plain. */
static cJSON *
skel_block(const cJSON *b)
{
	const cJSON	*k, *src;
	cJSON		*o, *s;

	if (!cJSON_IsObject(b))
		return dup(b);
	o = cJSON_CreateObject();
	cJSON_ArrayForEach(k, b) {
		const char	*key = k->string;

		if (strcmp(key, "type") == 0 || strcmp(key, "cache_control") ==
		    0 || strcmp(key, "is_error") == 0)
			put(o, key, dup(k));
		else if (strcmp(key, "source") == 0) {
			if (!cJSON_IsObject(k)) {
				put(o, key, dup(k));
				continue;
			}
			s = cJSON_CreateObject();
			cJSON_ArrayForEach(src, k)
				put(s, src->string, strcmp(src->string,
				    "data") == 0 ? payload_str(src, "AA==") :
				    dup(src));
			put(o, key, s);
		} else if (strcmp(key, "input") == 0)
			put(o, key, cJSON_IsObject(k) ? cJSON_CreateObject() :
			    dup(k));
		else if (strcmp(key, "content") == 0)
			put(o, key, cJSON_IsArray(k) ? skel_list(k) :
			    payload_str(k, "c"));
		else if (strcmp(key, "id") == 0 ||
		    strcmp(key, "tool_use_id") == 0)
			put(o, key, payload_str(k, "i"));
		else if (strcmp(key, "name") == 0)
			put(o, key, payload_str(k, "n"));
		else
			put(o, key, payload_str(k, ""));
	}
	return o;
}

static cJSON *
skel_list(const cJSON *l)
{
	const cJSON	*b;
	cJSON		*a = cJSON_CreateArray();

	if (a == NULL)
		oracle("out of memory");
	cJSON_ArrayForEach(b, l)
		if (!cJSON_AddItemToArray(a, skel_block(b)))
			oracle("out of memory");
	return a;
}

static cJSON *
skel_content(const cJSON *c)
{
	return cJSON_IsArray(c) ? skel_list(c) : payload_str(c, "c");
}

/* The body with its payloads made plain; NONE drops thinking. */
static cJSON *
skeleton(const cJSON *root, int none)
{
	static const char *const asis[] = { "model", "max_tokens", "thinking",
	    "output_config" };
	const cJSON	*v, *m, *k;
	cJSON		*s, *a, *nm, *t;
	size_t		 i;

	if ((s = cJSON_CreateObject()) == NULL)
		oracle("out of memory");
	for (i = 0; i < 4; i++)
		if ((v = get(root, asis[i])) != NULL &&
		    !(none && strcmp(asis[i], "thinking") == 0))
			put(s, asis[i], dup(v));
	if ((v = get(root, "system")) != NULL)
		put(s, "system", skel_content(v));
	if ((v = get(root, "messages")) != NULL) {
		if (!cJSON_IsArray(v))
			put(s, "messages", dup(v));
		else {
			a = cJSON_CreateArray();
			cJSON_ArrayForEach(m, v) {
				if (!cJSON_IsObject(m)) {
					cJSON_AddItemToArray(a, dup(m));
					continue;
				}
				nm = cJSON_CreateObject();
				cJSON_ArrayForEach(k, m)
					put(nm, k->string, strcmp(k->string,
					    "content") == 0 ? skel_content(k) :
					    dup(k));
				cJSON_AddItemToArray(a, nm);
			}
			put(s, "messages", a);
		}
	}
	if ((v = get(root, "tools")) != NULL) {
		if (!cJSON_IsArray(v))
			put(s, "tools", dup(v));
		else {
			a = cJSON_CreateArray();
			cJSON_ArrayForEach(m, v) {
				if (!cJSON_IsObject(m)) {
					cJSON_AddItemToArray(a, dup(m));
					continue;
				}
				t = cJSON_CreateObject();
				if ((k = get(m, "type")) != NULL)
					put(t, "type", dup(k));
				put(t, "name", cJSON_CreateString("t"));
				put(t, "input_schema", cJSON_CreateObject());
				cJSON_AddItemToArray(a, t);
			}
			put(s, "tools", a);
		}
	}
	return s;
}

/* The same keys in both objects. */
static void
same_keys(const cJSON *b, const cJSON *o, const char *what)
{
	const cJSON	*k;
	int		 nb = 0, no = 0;

	cJSON_ArrayForEach(k, b) {
		nb++;
		if (get(o, k->string) == NULL)
			oracle("%s: \"%s\" admitted, never written", what,
			    k->string);
	}
	cJSON_ArrayForEach(k, o)
		no++;
	if (nb != no)
		oracle("%s: %d keys admitted, %d written", what, nb, no);
}

static void
same_value(const cJSON *b, const cJSON *o, const char *what)
{
	if ((b == NULL) != (o == NULL))
		oracle("%s: %s admitted, %s written", what,
		    b != NULL ? "present" : "absent",
		    o != NULL ? "present" : "absent");
	if (b != NULL && !cJSON_Compare(b, o, 1))
		oracle("%s: admitted and written differ", what);
}

static void	same_list(const cJSON *, const cJSON *, const char *);

static void
same_block(const cJSON *b, const cJSON *o, const char *what)
{
	const cJSON	*bs, *os, *c;

	if (!cJSON_IsObject(b) || !cJSON_IsObject(o))
		oracle("%s: not an object", what);
	same_keys(b, o, what);
	same_value(get(b, "type"), get(o, "type"), what);
	same_value(get(b, "cache_control"), get(o, "cache_control"), what);
	same_value(get(b, "is_error"), get(o, "is_error"), what);
	if ((bs = get(b, "source")) != NULL) {
		os = get(o, "source");
		same_keys(bs, os, what);
		same_value(get(bs, "type"), get(os, "type"), what);
		same_value(get(bs, "media_type"), get(os, "media_type"), what);
	}
	if ((c = get(b, "content")) != NULL) {
		if (cJSON_IsArray(c) != cJSON_IsArray(get(o, "content")))
			oracle("%s: content of another kind", what);
		if (cJSON_IsArray(c))
			same_list(c, get(o, "content"), what);
	}
}

static void
same_list(const cJSON *b, const cJSON *o, const char *what)
{
	const cJSON	*x, *y;

	if (cJSON_GetArraySize(b) != cJSON_GetArraySize(o))
		oracle("%s: %d blocks admitted, %d written", what,
		    cJSON_GetArraySize(b), cJSON_GetArraySize(o));
	for (x = b->child, y = o->child; x != NULL; x = x->next, y = y->next)
		same_block(x, y, what);
}

static void
same_content(const cJSON *b, const cJSON *o, const char *what)
{
	if ((b == NULL) != (o == NULL) || (b != NULL &&
	    cJSON_IsString(b) != cJSON_IsString(o)))
		oracle("%s: content of another kind", what);
	if (cJSON_IsArray(b))
		same_list(b, o, what);
}

/* B, admitted, against what the rebuild writes of its skeleton. */
static void
could_have_written(const cJSON *b, const struct policy_model *pm)
{
	static const char *const never_counted[] = { "max_tokens", "stream",
	    "temperature", "top_p", "top_k", "stop_sequences",
	    "output_config" };
	struct rebuild_params	 rp;
	const cJSON		*th, *x, *y;
	cJSON			*s, *o;
	char			*sb, *out = NULL, err[256];
	size_t			 outlen, i;
	int			 none = pm->pm_level == POLICY_LEVEL_NONE;

	if (!cJSON_IsObject(b))
		oracle("admitted: not an object");
	if (none) {
		/* no level: no effort, no thinking (disabled is none) */
		th = get(b, "thinking");
		if (get(b, "output_config") != NULL || (th != NULL &&
		    !cJSON_IsString(get(th, "type"))) || (th != NULL &&
		    strcmp(get(th, "type")->valuestring, "disabled") != 0))
			oracle("admitted: thinking or effort with no level");
	}
	if (pm->pm_count_tokens)
		for (i = 0; i < 7; i++)
			if (get(b, never_counted[i]) != NULL)
				oracle("admitted: %s for count_tokens",
				    never_counted[i]);

	s = skeleton(b, none);
	if ((sb = cJSON_PrintUnformatted(s)) == NULL)
		oracle("out of memory");
	cJSON_Delete(s);
	memset(&rp, 0, sizeof(rp));
	rp.model = pm->pm_model;
	rp.level = none ? LEVEL_LOW : (enum rebuild_level)(pm->pm_level -
	    POLICY_LEVEL_LOW);
	rp.max_output_tokens = pm->pm_max_tokens;
	rp.count_tokens = pm->pm_count_tokens;
	if (rebuild_model_request(sb, strlen(sb), &rp, &out, &outlen, err,
	    sizeof(err)) != 0)
		oracle("admitted, the rebuild refuses its skeleton: %s", err);
	free(sb);
	if ((o = cJSON_Parse(out)) == NULL)
		oracle("the rebuild wrote no JSON");
	free(out);

	same_value(get(b, "model"), get(o, "model"), "model");
	same_value(get(b, "max_tokens"), get(o, "max_tokens"), "max_tokens");
	if (!none)
		same_value(get(b, "thinking"), get(o, "thinking"), "thinking");
	same_value(get(b, "output_config"), get(o, "output_config"),
	    "output_config");
	if ((get(b, "tools") == NULL) != (get(o, "tools") == NULL) ||
	    cJSON_GetArraySize(get(b, "tools")) !=
	    cJSON_GetArraySize(get(o, "tools")))
		oracle("tools: another count");
	same_content(get(b, "system"), get(o, "system"), "system");
	x = get(b, "messages");
	y = get(o, "messages");
	if (!cJSON_IsArray(x) || !cJSON_IsArray(y) ||
	    cJSON_GetArraySize(x) != cJSON_GetArraySize(y))
		oracle("messages: another count");
	for (x = x->child, y = y->child; x != NULL; x = x->next, y = y->next) {
		same_keys(x, y, "message");
		same_value(get(x, "role"), get(y, "role"), "role");
		same_value(get(x, "clear_at"), get(y, "clear_at"), "clear_at");
		same_value(get(x, "output_config"), get(y, "output_config"),
		    "a message's output_config");
		same_content(get(x, "content"), get(y, "content"), "message");
	}
	cJSON_Delete(o);
}

/* The body as a worker's request: what the rebuild writes passes. */
static void
rebuilt_admitted(const char *body, size_t len, const struct policy_model *pm)
{
	struct rebuild_params	 rp;
	enum violation		 v;
	char			*out = NULL, err[256], why[256];
	size_t			 outlen;

	if (pm->pm_level == POLICY_LEVEL_NONE)
		return;
	memset(&rp, 0, sizeof(rp));
	rp.model = pm->pm_model;
	rp.level = (enum rebuild_level)(pm->pm_level - POLICY_LEVEL_LOW);
	rp.max_output_tokens = pm->pm_max_tokens;
	rp.count_tokens = pm->pm_count_tokens;
	if (rebuild_model_request(body, len, &rp, &out, &outlen, err,
	    sizeof(err)) != 0)
		return;
	v = policy_model_check(out, outlen, pm, why, sizeof(why));
	if (v != VIOLATION_NONE)
		oracle("the rebuild wrote what egress refuses (%s: %s)",
		    violation_name(v), why);
	free(out);
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
	cJSON			*root = NULL;
	char			 why[256];
	size_t			 len;
	int			 level, count, parsed = 0;

	if (size < 1)
		return 0;
	body = (const char *)data + 1;
	len = size - 1;
	for (level = POLICY_LEVEL_NONE; level <= POLICY_LEVEL_XHIGH; level++)
		for (count = 0; count < 2; count++) {
			memset(&pm, 0, sizeof(pm));
			pm.pm_model = "claude-test";
			pm.pm_level = level;
			pm.pm_count_tokens = count;
			pm.pm_max_tokens = max_outs[(data[0] >> 5) & 3];
			v = policy_model_check(body, len, &pm, why,
			    sizeof(why));
			if ((unsigned)v >= VIOLATION__COUNT ||
			    strlen(why) >= sizeof(why))
				abort();
			if (v == VIOLATION_NONE && !parsed++ &&
			    body_parse(body, len, &root, NULL, 0) != BODY_OK)
				root = NULL;
			if (v == VIOLATION_NONE && root != NULL)
				could_have_written(root, &pm);
			rebuilt_admitted(body, len, &pm);
		}
	cJSON_Delete(root);

	pc.pm_tools = tools;
	pc.pm_ntools = 2;
	pc.pm_metadata_only = (data[0] >> 3) & 1;
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
