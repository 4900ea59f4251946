/*
 * Rebuilding model requests (PROTOCOL.md 5) and MCP calls (PROTOCOL.md 3.3).
 *
 * The worker's body is parsed with cJSON and a new object is built from the
 * fields the contract names; nothing else of the worker's object goes out.
 * cJSON is lenient where the contract is not, so before and after parsing:
 * - the raw body must be valid UTF-8 with no NUL byte, no control character
 *   inside a string and no \u0000 escape (cJSON would cut the string there);
 * - a key given twice in any object is refused, since cJSON keeps both and
 *   the upstream might read the other one;
 * - a number that overflows a double is refused (cJSON would print null).
 * Numbers that pass through (tool inputs, schemas, MCP params) keep their
 * IEEE double value, as they would in a JavaScript worker, and are printed
 * so that they read back as that same double; the integers the rebuild
 * computes itself are printed digit for digit.
 *
 * Decisions where PROTOCOL.md 5 leaves room:
 * - cache_control must be an object of type "ephemeral" (anything else is
 *   refused); "ttl" is kept only when exactly "1h", any other ttl is dropped
 *   so the default lifetime applies.  Only text blocks and tools keep it.
 * - "at most 8 per list" (4.3) counts the images of each content list on its
 *   own (a message's content, a tool_result's content, system); the 64 MiB
 *   bound counts every image of the request.
 * - stop_sequences that break the bounds are dropped, not refused, as the
 *   other optional sampling fields are.
 * - max_tokens, when sent, must be an integer >= 1 (else refused).
 * - output_config must be an object and its effort one of the five levels;
 *   output_config is not sent to count_tokens.
 * - tool_result content may be absent; is_error is kept only when true.
 *
 * cJSON spends some 40 bytes of tree per byte of a body made of tiny
 * values, so the values and keys are counted before it parses: a body
 * over MODEL_NODES_MAX (MCP_NODES_MAX) is refused without a tree.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bodies.h"
#include "jtree.h"
#include "limits.h"
#include "rebuild.h"
#include "validate.h"

/* The structure PROTOCOL.md 5 allows fits, at 8 nodes a block. */
_Static_assert(MODEL_NODES_MAX >= MODEL_MESSAGES_MAX * MODEL_BLOCKS_MAX * 8u,
    "node cap below the structure of PROTOCOL.md 5");

/* Room for the longest JSON path an error names, e.g. messages.N.content... */
#define REBUILD_PATH_MAX	128
/* How much of a worker's string an error message repeats. */
#define REBUILD_ECHO_MAX	64

/* Block types, as a mask of what a content list accepts. */
#define BLOCK_TEXT		0x01
#define BLOCK_IMAGE		0x02
#define BLOCK_TOOL_USE		0x04
#define BLOCK_TOOL_RESULT	0x08
#define BLOCK_THINKING		0x10
#define BLOCK_REDACTED		0x20
#define BLOCKS_MESSAGE		0x3f
/* "system and nested content accept only text and image". */
#define BLOCKS_NESTED		(BLOCK_TEXT | BLOCK_IMAGE)
/* A system message amid the conversation: text only. */
#define BLOCKS_SYSTEM_MESSAGE	BLOCK_TEXT

struct rebuild {
	const struct rebuild_params	*rb_params;
	uint64_t			 rb_max_output;
	uint64_t			 rb_image_bytes;
	char				*rb_err;
	size_t				 rb_errlen;
	char				 rb_path[REBUILD_PATH_MAX];
	size_t				 rb_pathlen;
	int				 rb_nomem;	/* not judged */
};

/* Effort order "low < medium < high < xhigh < max". */
enum effort {
	EFFORT_LOW,
	EFFORT_MEDIUM,
	EFFORT_HIGH,
	EFFORT_XHIGH,
	EFFORT_MAX
};

static const char *const effort_names[] = {
	[EFFORT_LOW] = "low",
	[EFFORT_MEDIUM] = "medium",
	[EFFORT_HIGH] = "high",
	[EFFORT_XHIGH] = "xhigh",
	[EFFORT_MAX] = "max",
};

/* The table of PROTOCOL.md 5, "Thinking ceilings by the host-judged level". */
static const struct {
	enum effort	 effort;
	uint64_t	 budget;
} ceilings[] = {
	[LEVEL_LOW] = { EFFORT_LOW, THINKING_CEIL_LOW },
	[LEVEL_MEDIUM] = { EFFORT_MEDIUM, THINKING_CEIL_MEDIUM },
	[LEVEL_HIGH] = { EFFORT_HIGH, THINKING_CEIL_HIGH },
	[LEVEL_XHIGH] = { EFFORT_MAX, THINKING_CEIL_XHIGH },
};

static const char *const level_names[] = {
	[LEVEL_LOW] = "low",
	[LEVEL_MEDIUM] = "medium",
	[LEVEL_HIGH] = "high",
	[LEVEL_XHIGH] = "xhigh",
};

/* 4.3: the four media types of an image. */
static const char *const image_types[] = {
	"image/png", "image/jpeg", "image/webp", "image/gif"
};

static const char *const mcp_methods[] = {
	"initialize", "notifications/initialized", "ping", "tools/list",
	"tools/call"
};

/*
 * The keywords whose value is one schema (or, for the items of older
 * drafts, an array of schemas), those whose value is an object of schemas,
 * and those whose value is an array of schemas.  Only these are descended
 * into, so enum, const, default and examples stay data.
 */
static const char *const schema_single[] = {
	"items", "additionalItems", "unevaluatedItems", "contains",
	"additionalProperties", "unevaluatedProperties", "propertyNames",
	"not", "if", "then", "else", "contentSchema"
};
static const char *const schema_map[] = {
	"properties", "patternProperties", "$defs", "definitions",
	"dependentSchemas", "dependencies"
};
static const char *const schema_list[] = {
	"allOf", "anyOf", "oneOf", "prefixItems"
};
/* Keywords that name another document unless they are a "#..." fragment. */
static const char *const schema_refs[] = {
	"$ref", "$dynamicRef", "$recursiveRef", "$id", "$schema", "$vocabulary"
};

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

static int	fail(struct rebuild *, const char *, ...)
		    __attribute__((__format__(__printf__, 2, 3)));

/* Length of the longest prefix of s (at most len bytes) that is UTF-8. */
static size_t
utf8_prefix(const char *s, size_t len)
{
	size_t	 units, k;

	/* A cut can only break the last sequence, at most 3 bytes of it. */
	for (k = 0; k <= 3 && k <= len; k++)
		if (utf8_utf16_len(s, len - k, &units) == 0)
			return len - k;
	return 0;
}

/* Bytes of s to repeat in an error: a bounded, whole-character prefix. */
static int
echo_len(const char *s)
{
	size_t	 len = strlen(s);

	if (len > REBUILD_ECHO_MAX)
		len = utf8_prefix(s, REBUILD_ECHO_MAX);
	return (int)len;
}

/* Record the first refusal as "path: message"; always returns -1. */
static int
fail(struct rebuild *rb, const char *fmt, ...)
{
	va_list	 ap;
	size_t	 n = 0;
	int	 r;

	if (rb->rb_errlen == 0)
		return -1;
	rb->rb_err[0] = '\0';
	if (rb->rb_pathlen > 0) {
		r = snprintf(rb->rb_err, rb->rb_errlen, "%s: ", rb->rb_path);
		if (r > 0)
			n = (size_t)r < rb->rb_errlen ? (size_t)r :
			    rb->rb_errlen - 1;
	}
	va_start(ap, fmt);
	(void)vsnprintf(rb->rb_err + n, rb->rb_errlen - n, fmt, ap);
	va_end(ap);
	/* Truncation may have split a character the worker sent. */
	n = strlen(rb->rb_err);
	rb->rb_err[utf8_prefix(rb->rb_err, n)] = '\0';
	return -1;
}

static int
oom(struct rebuild *rb)
{
	rb->rb_pathlen = 0;
	rb->rb_path[0] = '\0';
	rb->rb_nomem = 1;
	return fail(rb, "Out of memory");
}

/* Path of the next error: push a key or an index, pop to a saved length.
 * Pushed for every element, refused or not: joined, not printed. */
static size_t
path_key(struct rebuild *rb, const char *key)
{
	size_t	 old = rb->rb_pathlen, n = old;

	if (old > 0)
		n = str_append(rb->rb_path, sizeof(rb->rb_path), n, ".", 1);
	rb->rb_pathlen = str_append(rb->rb_path, sizeof(rb->rb_path), n, key,
	    strlen(key));
	return old;
}

static size_t
path_index(struct rebuild *rb, size_t i)
{
	size_t	 old = rb->rb_pathlen, n = old;

	if (old > 0)
		n = str_append(rb->rb_path, sizeof(rb->rb_path), n, ".", 1);
	rb->rb_pathlen = str_append_uint(rb->rb_path, sizeof(rb->rb_path), n,
	    i);
	return old;
}

static void
path_pop(struct rebuild *rb, size_t old)
{
	rb->rb_pathlen = old;
	rb->rb_path[old] = '\0';
}

/* Fail at path.key. */
static int
fail_at(struct rebuild *rb, const char *key, const char *msg)
{
	size_t	 old;

	old = path_key(rb, key);
	fail(rb, "%s", msg);
	path_pop(rb, old);
	return -1;
}

static cJSON *
get(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static int
is_str(const cJSON *v, const char *s)
{
	return cJSON_IsString(v) && strcmp(v->valuestring, s) == 0;
}

static size_t
units_of(const char *s)
{
	size_t	 u = 0;

	/* The body passed utf8_utf16_len() and cJSON escapes encode well. */
	(void)utf8_utf16_len(s, strlen(s), &u);
	return u;
}

/*
 * Move item out of the worker's tree into out under a constant key: big
 * strings such as image data are never copied.
 */
static void
move(cJSON *out, const char *key, cJSON *from, cJSON *item)
{
	cJSON_AddItemToObjectCS(out, key, cJSON_DetachItemViaPointer(from,
	    item));
}

static int
add(struct rebuild *rb, cJSON *out, const char *key, cJSON *item)
{
	if (item == NULL)
		return oom(rb);
	cJSON_AddItemToObjectCS(out, key, item);
	return 0;
}

static int
add_str(struct rebuild *rb, cJSON *out, const char *key, const char *s)
{
	return add(rb, out, key, cJSON_CreateString(s));
}

/* cJSON prints large integers with %g; these are printed digit for digit. */
static int
add_uint(struct rebuild *rb, cJSON *out, const char *key, uint64_t v)
{
	char	 buf[24];

	(void)str_append_uint(buf, sizeof(buf), 0, v);
	return add(rb, out, key, cJSON_CreateRaw(buf));
}

/*
 * An integral number at least min, saturated at 2^53 (beyond every bound
 * it is compared with): 0 and *v, -1 when v is not one.
 */
static int
get_uint(const cJSON *n, double min, uint64_t *v)
{
	double	 d;

	if (!cJSON_IsNumber(n))
		return -1;
	d = n->valuedouble;
	if (!isfinite(d) || d < min)
		return -1;
	/* Every double from 2^53 up is an integer. */
	if (d >= 9007199254740992.0) {
		*v = UINT64_C(9007199254740992);
		return 0;
	}
	*v = (uint64_t)d;
	return (double)*v == d ? 0 : -1;
}

/*
 * The raw body: valid UTF-8, no NUL, and what cJSON lets through that JSON
 * does not or that it would mangle: control characters outside white space
 * or inside strings, and the \u0000 escape that cuts its strings short.
 * The string tracking agrees with cJSON's on every body cJSON accepts.
 */
static int
lex_check(struct rebuild *rb, const char *b, size_t len)
{
	size_t		 i, units;
	unsigned char	 c;
	int		 in_string = 0;

	if (len == 0)
		return fail(rb, "Request body is empty");
	if (memchr(b, '\0', len) != NULL)
		return fail(rb, "Request body contains a NUL byte");
	if (utf8_utf16_len(b, len, &units) == -1)
		return fail(rb, "Request body is not valid UTF-8");
	for (i = 0; i < len; i++) {
		c = (unsigned char)b[i];
		if (!in_string) {
			if (c == '"')
				in_string = 1;
			else if (c < 0x20 && c != '\t' && c != '\n' &&
			    c != '\r')
				return fail(rb, "Request body is not valid "
				    "JSON: control character");
			continue;
		}
		if ((i += json_string_run((const uint8_t *)b + i, len - i)) >=
		    len)
			break;
		c = (unsigned char)b[i];
		if (c == '"')
			in_string = 0;
		else if (c < 0x20)
			return fail(rb, "Request body is not valid JSON: "
			    "control character in a string");
		else if (c == '\\') {
			if (len - i > 5 && b[i + 1] == 'u' &&
			    memcmp(b + i + 2, "0000", 4) == 0)
				return fail(rb, "Request body contains a "
				    "\\u0000 escape");
			i++;
		}
	}
	return 0;
}

/*
 * Every object of the tree without a repeated key and every number finite.
 * cJSON's nesting limit bounds the recursion.
 */
static int
tree_check(struct rebuild *rb, const cJSON *n)
{
	const cJSON	*c;
	int		 r;

	if (cJSON_IsNumber(n) && !isfinite(n->valuedouble))
		return fail(rb, "Request body has a number out of range");
	if (cJSON_IsObject(n)) {
		if ((r = body_dup_keys(n)) == -1)
			return oom(rb);
		if (r == 1)
			return fail(rb, "Request body has a duplicate key");
	}
	if (cJSON_IsObject(n) || cJSON_IsArray(n))
		for (c = n->child; c != NULL; c = c->next)
			if (tree_check(rb, c) == -1)
				return -1;
	return 0;
}

/*
 * The checks, the node count and the parse in between; NULL on refusal or
 * when out of memory (rb_nomem).  A parse that fails after the scan passed
 * is a grammar error or a nesting too deep: both are refused.
 */
static cJSON *
parse_body(struct rebuild *rb, const char *b, size_t len, size_t max_nodes)
{
	cJSON		*root;
	const char	*end = NULL, *why;
	size_t		 at, nodes;
	int		 nomem;

	if (lex_check(rb, b, len) == -1)
		return NULL;
	if ((why = body_json_scan(b, len, &at, &nodes)) != NULL) {
		fail(rb, "Request body is not valid JSON: %s at byte %zu", why,
		    at);
		return NULL;
	}
	if (nodes > max_nodes) {
		fail(rb, "Request body has more than %zu values and keys",
		    max_nodes);
		return NULL;
	}
	if ((root = jtree_parse(b, len, &end, &nomem)) == NULL) {
		if (nomem)
			oom(rb);
		else
			fail(rb, "Request body is not valid JSON");
		return NULL;
	}
	while (end < b + len && (*end == ' ' || *end == '\t' ||
	    *end == '\n' || *end == '\r'))
		end++;
	if (end != b + len) {
		cJSON_Delete(root);
		fail(rb, "Request body is not valid JSON: trailing data");
		return NULL;
	}
	if (tree_check(rb, root) == -1) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/*
 * cache_control: kept only as {"type":"ephemeral"} plus "ttl":"1h" when
 * given; another shape is refused, another ttl dropped.
 */
static int
rebuild_cache_control(struct rebuild *rb, cJSON *from, cJSON *out)
{
	cJSON	*cc, *cco;
	size_t	 old;

	if ((cc = get(from, "cache_control")) == NULL)
		return 0;
	old = path_key(rb, "cache_control");
	if (!cJSON_IsObject(cc) || !is_str(get(cc, "type"), "ephemeral")) {
		fail(rb, "Only {\"type\":\"ephemeral\"} is accepted");
		path_pop(rb, old);
		return -1;
	}
	path_pop(rb, old);
	if (add(rb, out, "cache_control", cco = cJSON_CreateObject()) == -1 ||
	    add_str(rb, cco, "type", "ephemeral") == -1)
		return -1;
	if (is_str(get(cc, "ttl"), "1h") && add_str(rb, cco, "ttl", "1h") == -1)
		return -1;
	return 0;
}

/* A required string field of a block, moved to out. */
static int
need_string(struct rebuild *rb, cJSON *from, const char *key, cJSON *out)
{
	cJSON	*v;

	if ((v = get(from, key)) == NULL)
		return fail_at(rb, key, "Field required");
	if (!cJSON_IsString(v))
		return fail_at(rb, key, "Input should be a valid string");
	move(out, key, from, v);
	return 0;
}

/* tool_use.id and tool_result.tool_use_id: 1-128 chars. */
static int
need_tool_id(struct rebuild *rb, cJSON *from, const char *key, cJSON *out)
{
	cJSON	*v;
	size_t	 u;

	if ((v = get(from, key)) != NULL && cJSON_IsString(v)) {
		u = units_of(v->valuestring);
		if (u < TOOL_USE_ID_MIN)
			return fail_at(rb, key, "String should have at least "
			    "1 character");
		if (u > TOOL_USE_ID_MAX)
			return fail_at(rb, key, "String should have at most "
			    "128 characters");
	}
	return need_string(rb, from, key, out);
}

/* A name of [a-zA-Z0-9_-]{1,128}, moved to out. */
static int
need_name(struct rebuild *rb, cJSON *from, cJSON *out)
{
	cJSON	*v;

	if ((v = get(from, "name")) != NULL && cJSON_IsString(v) &&
	    !valid_tool_use_name(v->valuestring, strlen(v->valuestring)))
		return fail_at(rb, "name", "String should match pattern "
		    "'^[a-zA-Z0-9_-]{1,128}$'");
	return need_string(rb, from, "name", out);
}

static int
block_text(struct rebuild *rb, cJSON *b, cJSON *nb)
{
	if (need_string(rb, b, "text", nb) == -1)
		return -1;
	return rebuild_cache_control(rb, b, nb);
}

/* 4.3 for a base64 image block; *nimages counts the images of its list. */
static int
block_image(struct rebuild *rb, cJSON *b, cJSON *nb, size_t *nimages)
{
	cJSON		*src, *t, *mt, *data, *ns;
	long long	 n;
	size_t		 i, old;
	int		 r = -1;

	if (++*nimages > IMAGES_MAX)
		return fail(rb, "At most %u images per content list",
		    IMAGES_MAX);
	if ((src = get(b, "source")) == NULL)
		return fail_at(rb, "source", "Field required");
	if (!cJSON_IsObject(src))
		return fail_at(rb, "source",
		    "Input should be a valid dictionary");
	old = path_key(rb, "source");
	t = get(src, "type");
	if (!is_str(t, "base64")) {
		if (cJSON_IsString(t))
			fail_at(rb, "type", "Only base64 image sources are "
			    "accepted");
		else
			fail_at(rb, "type", "Field required");
		goto done;
	}
	mt = get(src, "media_type");
	for (i = 0; i < nitems(image_types); i++)
		if (is_str(mt, image_types[i]))
			break;
	if (i == nitems(image_types)) {
		fail_at(rb, "media_type", "Input should be 'image/jpeg', "
		    "'image/png', 'image/gif' or 'image/webp'");
		goto done;
	}
	if ((data = get(src, "data")) == NULL || !cJSON_IsString(data)) {
		fail_at(rb, "data", data == NULL ? "Field required" :
		    "Input should be a valid string");
		goto done;
	}
	n = b64_decoded_len(data->valuestring, strlen(data->valuestring));
	if (n < 0) {
		fail_at(rb, "data", "Invalid base64 data");
		goto done;
	}
	if ((unsigned long long)n < IMAGE_BYTES_MIN ||
	    (unsigned long long)n > IMAGE_BYTES_MAX) {
		fail_at(rb, "data", "Image size must be 1 byte to 20 MiB");
		goto done;
	}
	rb->rb_image_bytes += (uint64_t)n;
	if (rb->rb_image_bytes > IMAGES_TOTAL_MAX) {
		fail_at(rb, "data", "Images exceed 64 MiB in all");
		goto done;
	}
	if (add(rb, nb, "source", ns = cJSON_CreateObject()) == -1 ||
	    add_str(rb, ns, "type", "base64") == -1)
		goto done;
	move(ns, "media_type", src, mt);
	move(ns, "data", src, data);
	r = 0;
 done:
	path_pop(rb, old);
	return r;
}

static int	rebuild_list(struct rebuild *, cJSON *, int, cJSON **);

static int
block_tool_use(struct rebuild *rb, cJSON *b, cJSON *nb)
{
	cJSON	*in;

	if (need_tool_id(rb, b, "id", nb) == -1 ||
	    need_name(rb, b, nb) == -1)
		return -1;
	if ((in = get(b, "input")) == NULL)
		return fail_at(rb, "input", "Field required");
	if (!cJSON_IsObject(in))
		return fail_at(rb, "input",
		    "Input should be a valid dictionary");
	move(nb, "input", b, in);
	return 0;
}

static int
block_tool_result(struct rebuild *rb, cJSON *b, cJSON *nb)
{
	cJSON	*c, *nl;
	size_t	 old;

	if (need_tool_id(rb, b, "tool_use_id", nb) == -1)
		return -1;
	if ((c = get(b, "content")) != NULL) {
		if (cJSON_IsString(c))
			move(nb, "content", b, c);
		else if (cJSON_IsArray(c)) {
			old = path_key(rb, "content");
			if (rebuild_list(rb, c, BLOCKS_NESTED, &nl) == -1) {
				path_pop(rb, old);
				return -1;
			}
			path_pop(rb, old);
			cJSON_AddItemToObjectCS(nb, "content", nl);
		} else
			return fail_at(rb, "content", "Input should be a "
			    "valid string or list");
	}
	if (cJSON_IsTrue(get(b, "is_error")) &&
	    add(rb, nb, "is_error", cJSON_CreateTrue()) == -1)
		return -1;
	return 0;
}

/* One block of a content list whose accepted types are in mask. */
static int
rebuild_block(struct rebuild *rb, cJSON *b, int mask, size_t *nimages,
    cJSON *list)
{
	static const struct {
		const char	*name;
		int		 bit;
	} types[] = {
		{ "text", BLOCK_TEXT },
		{ "image", BLOCK_IMAGE },
		{ "tool_use", BLOCK_TOOL_USE },
		{ "tool_result", BLOCK_TOOL_RESULT },
		{ "thinking", BLOCK_THINKING },
		{ "redacted_thinking", BLOCK_REDACTED },
	};
	cJSON		*t, *nb;
	size_t		 i;

	if (!cJSON_IsObject(b))
		return fail(rb, "Input should be a valid dictionary");
	if ((t = get(b, "type")) == NULL || !cJSON_IsString(t))
		return fail_at(rb, "type", "Field required");
	for (i = 0; i < nitems(types); i++)
		if (strcmp(t->valuestring, types[i].name) == 0)
			break;
	/*
	 * In a system message, the API's own words: Claude Code reads
	 * "Input tag 'tool_addition'" and resends its tools whole.
	 */
	if ((i == nitems(types) || (types[i].bit & mask) == 0) &&
	    mask == BLOCKS_SYSTEM_MESSAGE)
		return fail(rb, "Input tag '%.*s' found using 'type' does not "
		    "match any of the expected tags: 'text'",
		    echo_len(t->valuestring), t->valuestring);
	if (i == nitems(types) || (types[i].bit & mask) == 0)
		return fail(rb, "Content block type \"%.*s\" is not accepted",
		    echo_len(t->valuestring), t->valuestring);
	if ((nb = cJSON_CreateObject()) == NULL)
		return oom(rb);
	cJSON_AddItemToArray(list, nb);
	if (add_str(rb, nb, "type", types[i].name) == -1)
		return -1;
	switch (types[i].bit) {
	case BLOCK_TEXT:
		return block_text(rb, b, nb);
	case BLOCK_IMAGE:
		return block_image(rb, b, nb, nimages);
	case BLOCK_TOOL_USE:
		return block_tool_use(rb, b, nb);
	case BLOCK_TOOL_RESULT:
		return block_tool_result(rb, b, nb);
	case BLOCK_THINKING:
		if (need_string(rb, b, "thinking", nb) == -1)
			return -1;
		return need_string(rb, b, "signature", nb);
	default:
		return need_string(rb, b, "data", nb);
	}
}

/* A content list: at most 256 blocks of the types in mask, 8 images. */
static int
rebuild_list(struct rebuild *rb, cJSON *arr, int mask, cJSON **out)
{
	cJSON	*b;
	size_t	 i = 0, nimages = 0, old;

	if ((*out = cJSON_CreateArray()) == NULL)
		return oom(rb);
	for (b = arr->child; b != NULL; b = b->next, i++) {
		if (i == MODEL_BLOCKS_MAX) {
			fail(rb, "At most %u content blocks", MODEL_BLOCKS_MAX);
			goto bad;
		}
		old = path_index(rb, i);
		if (rebuild_block(rb, b, mask, &nimages, *out) == -1) {
			path_pop(rb, old);
			goto bad;
		}
		path_pop(rb, old);
	}
	return 0;
 bad:
	cJSON_Delete(*out);
	*out = NULL;
	return -1;
}

/* from.key: a string (moved) or a list of blocks of mask; absent is 0. */
static int
rebuild_content(struct rebuild *rb, cJSON *from, const char *key, int mask,
    cJSON *out)
{
	cJSON	*c, *nl;
	size_t	 old;

	if ((c = get(from, key)) == NULL)
		return 0;
	if (cJSON_IsString(c)) {
		move(out, key, from, c);
		return 0;
	}
	if (!cJSON_IsArray(c))
		return fail_at(rb, key, "Input should be a valid string or "
		    "list");
	old = path_key(rb, key);
	if (rebuild_list(rb, c, mask, &nl) == -1) {
		path_pop(rb, old);
		return -1;
	}
	path_pop(rb, old);
	cJSON_AddItemToObjectCS(out, key, nl);
	return 0;
}

static int	effort_capped(struct rebuild *, cJSON *, int, enum effort *);

/*
 * clear_at, kept as sent when it is a tag the API could define: 1 to
 * SYSTEM_CLEAR_AT_MAX bytes of lower-case letters, digits and '_'
 * ("next_user_message").
 */
static int
rebuild_clear_at(struct rebuild *rb, cJSON *m, cJSON *nm)
{
	cJSON		*c;
	size_t		 n;
	const char	*p;

	if ((c = get(m, "clear_at")) == NULL)
		return 0;
	if (!cJSON_IsString(c))
		return fail_at(rb, "clear_at", "Input should be a valid string");
	for (p = c->valuestring, n = 0; *p != '\0'; p++, n++)
		if (n == SYSTEM_CLEAR_AT_MAX || !((*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '_'))
			break;
	if (n == 0 || *p != '\0')
		return fail_at(rb, "clear_at", "Input should be a tag of 1 to "
		    "64 lower-case letters, digits and '_'");
	move(nm, "clear_at", m, c);
	return 0;
}

/*
 * A system message amid the conversation (Claude Code sends the turn's
 * environment so): rebuilt as role, content of text only, clear_at, and
 * output_config.effort capped at the level as the top-level effort is.
 * Nothing else of it is kept.
 */
static int
rebuild_system_message(struct rebuild *rb, cJSON *m, cJSON *nm)
{
	cJSON		*noc;
	enum effort	 want;
	int		 r;

	if (rebuild_content(rb, m, "content", BLOCKS_SYSTEM_MESSAGE, nm) ==
	    -1 || rebuild_clear_at(rb, m, nm) == -1)
		return -1;
	if ((r = effort_capped(rb, m, 0, &want)) <= 0)
		return r;
	if (add(rb, nm, "output_config", noc = cJSON_CreateObject()) == -1)
		return -1;
	return add_str(rb, noc, "effort", effort_names[want]);
}

static int
rebuild_message(struct rebuild *rb, cJSON *m, cJSON *list)
{
	cJSON	*role, *nm;
	int	 sys;

	if (!cJSON_IsObject(m))
		return fail(rb, "Input should be a valid dictionary");
	if ((role = get(m, "role")) == NULL)
		return fail_at(rb, "role", "Field required");
	if (!cJSON_IsString(role))
		return fail_at(rb, "role", "Input should be a valid string");
	sys = strcmp(role->valuestring, "system") == 0;
	if (strcmp(role->valuestring, "user") != 0 &&
	    strcmp(role->valuestring, "assistant") != 0 && !sys)
		return fail(rb, "Unexpected role \"%.*s\": the input message "
		    "role must be \"user\" or \"assistant\"",
		    echo_len(role->valuestring), role->valuestring);
	if (get(m, "content") == NULL)
		return fail_at(rb, "content", "Field required");
	if ((nm = cJSON_CreateObject()) == NULL)
		return oom(rb);
	cJSON_AddItemToArray(list, nm);
	move(nm, "role", m, role);
	if (sys)
		return rebuild_system_message(rb, m, nm);
	return rebuild_content(rb, m, "content", BLOCKS_MESSAGE, nm);
}

/*
 * A list of at most max items under key, each rebuilt by fn into the new
 * list; required says whether a missing key is refused.
 */
static int
rebuild_items(struct rebuild *rb, cJSON *root, cJSON *out, const char *key,
    int required, size_t max, const char *noun,
    int (*fn)(struct rebuild *, cJSON *, cJSON *))
{
	cJSON	*items, *it, *list;
	size_t	 i = 0, old, top;
	int	 r = -1;

	if ((items = get(root, key)) == NULL)
		return required ? fail_at(rb, key, "Field required") : 0;
	if (!cJSON_IsArray(items))
		return fail_at(rb, key, "Input should be a valid list");
	if (add(rb, out, key, list = cJSON_CreateArray()) == -1)
		return -1;
	old = path_key(rb, key);
	top = rb->rb_pathlen;
	for (it = items->child; it != NULL; it = it->next, i++) {
		if (i == max) {
			fail(rb, "At most %zu %s", max, noun);
			goto done;
		}
		path_index(rb, i);
		if (fn(rb, it, list) == -1)
			goto done;
		path_pop(rb, top);
	}
	r = 0;
 done:
	path_pop(rb, old);
	return r;
}

static int
rebuild_messages(struct rebuild *rb, cJSON *root, cJSON *out)
{
	return rebuild_items(rb, root, out, "messages", 1, MODEL_MESSAGES_MAX,
	    "messages", rebuild_message);
}

static int
rebuild_system(struct rebuild *rb, cJSON *root, cJSON *out)
{
	return rebuild_content(rb, root, "system", BLOCKS_NESTED, out);
}

/*
 * PROTOCOL.md 5: "$schema may also be one of the published JSON Schema
 * meta-schema identifiers (draft-04, -06, -07, 2019-09, 2020-12; http or
 * https; with or without a trailing #)", as Claude Code writes in every
 * tool.  They name a dialect, not a document anyone fetches.
 */
static int
meta_schema_id(const char *v)
{
	static const char *const ids[] = {
		"json-schema.org/draft-04/schema",
		"json-schema.org/draft-06/schema",
		"json-schema.org/draft-07/schema",
		"json-schema.org/draft/2019-09/schema",
		"json-schema.org/draft/2020-12/schema",
	};
	size_t	 i, n;

	if (strncmp(v, "https://", 8) == 0)
		v += 8;
	else if (strncmp(v, "http://", 7) == 0)
		v += 7;
	else
		return 0;
	for (i = 0; i < nitems(ids); i++) {
		n = strlen(ids[i]);
		if (strncmp(v, ids[i], n) == 0 &&
		    (v[n] == '\0' || (v[n] == '#' && v[n + 1] == '\0')))
			return 1;
	}
	return 0;
}

/* A schema position: its reference keywords, then its subschemas. */
static int
schema_check(struct rebuild *rb, const cJSON *s)
{
	const cJSON	*v, *c;
	size_t		 i;

	if (!cJSON_IsObject(s))
		return 0;	/* true, false, or not a schema at all */
	for (i = 0; i < nitems(schema_refs); i++) {
		if ((v = get(s, schema_refs[i])) == NULL)
			continue;
		if (cJSON_IsString(v) && strcmp(schema_refs[i], "$schema") == 0 &&
		    meta_schema_id(v->valuestring))
			continue;
		if (!cJSON_IsString(v) || v->valuestring[0] != '#')
			return fail(rb, "\"%s\" must be a local reference "
			    "(\"#...\")", schema_refs[i]);
	}
	for (i = 0; i < nitems(schema_single); i++) {
		if ((v = get(s, schema_single[i])) == NULL)
			continue;
		if (cJSON_IsArray(v)) {
			for (c = v->child; c != NULL; c = c->next)
				if (schema_check(rb, c) == -1)
					return -1;
		} else if (schema_check(rb, v) == -1)
			return -1;
	}
	for (i = 0; i < nitems(schema_map); i++) {
		if ((v = get(s, schema_map[i])) == NULL || !cJSON_IsObject(v))
			continue;
		for (c = v->child; c != NULL; c = c->next)
			if (schema_check(rb, c) == -1)
				return -1;
	}
	for (i = 0; i < nitems(schema_list); i++) {
		if ((v = get(s, schema_list[i])) == NULL || !cJSON_IsArray(v))
			continue;
		for (c = v->child; c != NULL; c = c->next)
			if (schema_check(rb, c) == -1)
				return -1;
	}
	return 0;
}

static int
rebuild_tool(struct rebuild *rb, cJSON *t, cJSON *list)
{
	cJSON	*type, *schema, *desc, *nt;
	size_t	 old;
	int	 r;

	if (!cJSON_IsObject(t))
		return fail(rb, "Input should be a valid dictionary");
	if ((type = get(t, "type")) != NULL && !is_str(type, "custom")) {
		if (cJSON_IsString(type))
			return fail(rb, "Tool type \"%.*s\" is not accepted",
			    echo_len(type->valuestring), type->valuestring);
		return fail_at(rb, "type", "Input should be 'custom'");
	}
	if ((desc = get(t, "description")) != NULL && !cJSON_IsString(desc))
		return fail_at(rb, "description",
		    "Input should be a valid string");
	if ((schema = get(t, "input_schema")) == NULL)
		return fail_at(rb, "input_schema", "Field required");
	if (!cJSON_IsObject(schema))
		return fail_at(rb, "input_schema",
		    "Input should be a valid dictionary");
	old = path_key(rb, "input_schema");
	r = schema_check(rb, schema);
	path_pop(rb, old);
	if (r == -1)
		return -1;
	if ((nt = cJSON_CreateObject()) == NULL)
		return oom(rb);
	cJSON_AddItemToArray(list, nt);
	if (need_name(rb, t, nt) == -1)
		return -1;
	if (desc != NULL)
		move(nt, "description", t, desc);
	move(nt, "input_schema", t, schema);
	return rebuild_cache_control(rb, t, nt);
}

static int
rebuild_tools(struct rebuild *rb, cJSON *root, cJSON *out)
{
	return rebuild_items(rb, root, out, "tools", 0, MODEL_TOOLS_MAX,
	    "tools", rebuild_tool);
}

static int
rebuild_tool_choice(struct rebuild *rb, cJSON *root, cJSON *out)
{
	static const char *const types[] = { "auto", "any", "tool", "none" };
	cJSON	*tc, *t, *ntc;
	size_t	 i, old;
	int	 r = -1;

	if ((tc = get(root, "tool_choice")) == NULL)
		return 0;
	if (!cJSON_IsObject(tc))
		return fail_at(rb, "tool_choice",
		    "Input should be a valid dictionary");
	old = path_key(rb, "tool_choice");
	t = get(tc, "type");
	for (i = 0; i < nitems(types); i++)
		if (is_str(t, types[i]))
			break;
	if (i == nitems(types)) {
		fail_at(rb, "type", "Input should be 'auto', 'any', 'tool' "
		    "or 'none'");
		goto done;
	}
	if (add(rb, out, "tool_choice", ntc = cJSON_CreateObject()) == -1 ||
	    add_str(rb, ntc, "type", types[i]) == -1)
		goto done;
	if (strcmp(types[i], "tool") == 0 && need_name(rb, tc, ntc) == -1)
		goto done;
	if (cJSON_IsTrue(get(tc, "disable_parallel_tool_use")) &&
	    add(rb, ntc, "disable_parallel_tool_use",
	    cJSON_CreateTrue()) == -1)
		goto done;
	r = 0;
 done:
	path_pop(rb, old);
	return r;
}

/*
 * thinking: adaptive and disabled kept, enabled clamped to the level's
 * ceiling and below maxOutputTokens.  *budget is the final budget (0 when
 * none), *adaptive tells the effort rule that follows.
 */
static int
rebuild_thinking(struct rebuild *rb, cJSON *root, cJSON *out,
    uint64_t *budget, int *adaptive)
{
	cJSON		*th, *t, *nth;
	uint64_t	 asked, b;
	size_t		 old;
	int		 r = -1;

	*budget = 0;
	*adaptive = 0;
	if ((th = get(root, "thinking")) == NULL)
		return 0;
	if (!cJSON_IsObject(th))
		return fail_at(rb, "thinking",
		    "Input should be a valid dictionary");
	old = path_key(rb, "thinking");
	t = get(th, "type");
	if (is_str(t, "adaptive") || is_str(t, "disabled")) {
		*adaptive = is_str(t, "adaptive");
		if (add(rb, out, "thinking", nth = cJSON_CreateObject()) ==
		    -1 || add_str(rb, nth, "type", t->valuestring) == -1)
			goto done;
		r = 0;
		goto done;
	}
	if (!is_str(t, "enabled")) {
		fail_at(rb, "type", "Input should be 'enabled', 'adaptive' "
		    "or 'disabled'");
		goto done;
	}
	if (get(th, "budget_tokens") == NULL) {
		fail_at(rb, "budget_tokens", "Field required");
		goto done;
	}
	if (get_uint(get(th, "budget_tokens"), 0, &asked) == -1) {
		fail_at(rb, "budget_tokens", "Input should be a valid "
		    "integer");
		goto done;
	}
	if (asked < THINKING_BUDGET_MIN) {
		fail_at(rb, "budget_tokens", "Input should be greater than "
		    "or equal to 1024");
		goto done;
	}
	b = asked;
	if (b > ceilings[rb->rb_params->level].budget)
		b = ceilings[rb->rb_params->level].budget;
	if (b > rb->rb_max_output - 1)
		b = rb->rb_max_output - 1;
	if (add(rb, out, "thinking", nth = cJSON_CreateObject()) == -1 ||
	    add_str(rb, nth, "type", "enabled") == -1 ||
	    add_uint(rb, nth, "budget_tokens", b) == -1)
		goto done;
	*budget = b;
	r = 0;
 done:
	path_pop(rb, old);
	return r;
}

/*
 * from.output_config.effort lowered to the ceiling, or the ceiling for
 * adaptive thinking at low and medium: 1 with *want set, 0 for none, -1
 * refused.
 */
static int
effort_capped(struct rebuild *rb, cJSON *from, int adaptive,
    enum effort *want)
{
	cJSON		*oc, *e;
	enum effort	 ceil = ceilings[rb->rb_params->level].effort;
	size_t		 i;

	e = NULL;
	if ((oc = get(from, "output_config")) != NULL) {
		if (!cJSON_IsObject(oc))
			return fail_at(rb, "output_config",
			    "Input should be a valid dictionary");
		e = get(oc, "effort");
	}
	if (e != NULL) {
		for (i = 0; i < nitems(effort_names); i++)
			if (is_str(e, effort_names[i]))
				break;
		if (i == nitems(effort_names))
			return fail_at(rb, "output_config.effort", "Input "
			    "should be 'low', 'medium', 'high', 'xhigh' or "
			    "'max'");
		*want = (enum effort)i < ceil ? (enum effort)i : ceil;
		return 1;
	}
	if (adaptive && (rb->rb_params->level == LEVEL_LOW ||
	    rb->rb_params->level == LEVEL_MEDIUM)) {
		*want = ceil;
		return 1;
	}
	return 0;
}

static int
rebuild_effort(struct rebuild *rb, cJSON *root, cJSON *out, int adaptive)
{
	cJSON		*noc;
	enum effort	 want;
	int		 r;

	if ((r = effort_capped(rb, root, adaptive, &want)) <= 0)
		return r;
	if (add(rb, out, "output_config", noc = cJSON_CreateObject()) == -1)
		return -1;
	return add_str(rb, noc, "effort", effort_names[want]);
}

/* "max(budget + 1, min(asked or 16 384, maxOutputTokens))". */
static int
rebuild_max_tokens(struct rebuild *rb, cJSON *root, cJSON *out,
    uint64_t budget)
{
	cJSON		*mt;
	uint64_t	 asked = MAX_TOKENS_DEFAULT, v;

	if ((mt = get(root, "max_tokens")) != NULL &&
	    get_uint(mt, 1, &asked) == -1)
		return fail_at(rb, "max_tokens", "Input should be an integer "
		    "greater than or equal to 1");
	v = asked < rb->rb_max_output ? asked : rb->rb_max_output;
	if (v < budget + 1)
		v = budget + 1;
	return add_uint(rb, out, "max_tokens", v);
}

/* Optional sampling fields: kept when they are what they should be. */
static int
rebuild_sampling(struct rebuild *rb, cJSON *root, cJSON *out)
{
	static const char *const numbers[] = {
		"temperature", "top_p", "top_k"
	};
	cJSON	*v, *c, *list;
	size_t	 i, n = 0;

	if (cJSON_IsTrue(get(root, "stream")) &&
	    add(rb, out, "stream", cJSON_CreateTrue()) == -1)
		return -1;
	for (i = 0; i < nitems(numbers); i++)
		if ((v = get(root, numbers[i])) != NULL &&
		    cJSON_IsNumber(v) && isfinite(v->valuedouble))
			move(out, numbers[i], root, v);
	if ((v = get(root, "stop_sequences")) == NULL || !cJSON_IsArray(v))
		return 0;
	for (c = v->child; c != NULL; c = c->next, n++)
		if (n == STOP_SEQUENCES_MAX || !cJSON_IsString(c) ||
		    units_of(c->valuestring) > STOP_SEQUENCE_MAX)
			return 0;
	if (add(rb, out, "stop_sequences", list = cJSON_CreateArray()) == -1)
		return -1;
	while ((c = v->child) != NULL)
		cJSON_AddItemToArray(list, cJSON_DetachItemViaPointer(v, c));
	return 0;
}

/* Print out into *out; 0, or -1 when out of memory. */
static int
emit(struct rebuild *rb, cJSON *o, char **out, size_t *outlen)
{
	if ((*out = body_print(o)) == NULL)
		return oom(rb);
	*outlen = strlen(*out);
	return 0;
}

/* parse_body() for the rebuilds of other files. */
cJSON *
rebuild_parse(const char *b, size_t len, size_t max_nodes, int *nomem,
    char *err, size_t errlen)
{
	struct rebuild	 rb;
	cJSON		*root;

	memset(&rb, 0, sizeof(rb));
	rb.rb_err = err;
	rb.rb_errlen = err != NULL ? errlen : 0;
	if (rb.rb_errlen > 0)
		err[0] = '\0';
	root = parse_body(&rb, b, len, max_nodes);
	*nomem = rb.rb_nomem;
	return root;
}

int
rebuild_level_parse(const char *s, enum rebuild_level *level)
{
	size_t	 i;

	if (s == NULL)
		return -1;
	for (i = 0; i < nitems(level_names); i++)
		if (strcmp(s, level_names[i]) == 0) {
			*level = (enum rebuild_level)i;
			return 0;
		}
	return -1;
}

int
rebuild_model_request(const char *body, size_t len,
    const struct rebuild_params *p, char **out, size_t *outlen, char *err,
    size_t errlen)
{
	struct rebuild	 rb;
	cJSON		*root = NULL, *o = NULL;
	uint64_t	 budget;
	int		 adaptive, r = -1;

	memset(&rb, 0, sizeof(rb));
	rb.rb_params = p;
	rb.rb_err = err;
	rb.rb_errlen = err != NULL ? errlen : 0;
	if (rb.rb_errlen > 0)
		err[0] = '\0';
	*out = NULL;
	*outlen = 0;

	/* The host's own settings: a bad one is a bug, not the worker's. */
	if (p == NULL || p->model == NULL || (unsigned)p->level >=
	    nitems(ceilings) || (rb.rb_max_output = p->max_output_tokens ==
	    0 ? MAX_OUTPUT_TOKENS_DEFAULT : p->max_output_tokens) <
	    MAX_OUTPUT_TOKENS_MIN || rb.rb_max_output > MAX_OUTPUT_TOKENS_MAX) {
		if (p != NULL && p->free_body)
			free((void *)(uintptr_t)body);
		return fail(&rb, "Invalid rebuild parameters");
	}

	root = parse_body(&rb, body, len, MODEL_NODES_MAX);
	if (p->free_body)
		free((void *)(uintptr_t)body);
	if (root == NULL)
		return rb.rb_nomem ? REBUILD_NOMEM : -1;
	if (!cJSON_IsObject(root)) {
		fail(&rb, "Request body must be a JSON object");
		goto done;
	}
	if ((o = cJSON_CreateObject()) == NULL) {
		oom(&rb);
		goto done;
	}
	if (add_str(&rb, o, "model", p->model) == -1 ||
	    rebuild_messages(&rb, root, o) == -1 ||
	    rebuild_system(&rb, root, o) == -1 ||
	    rebuild_tools(&rb, root, o) == -1 ||
	    rebuild_tool_choice(&rb, root, o) == -1 ||
	    rebuild_thinking(&rb, root, o, &budget, &adaptive) == -1)
		goto done;
	if (!p->count_tokens &&
	    (rebuild_effort(&rb, root, o, adaptive) == -1 ||
	    rebuild_max_tokens(&rb, root, o, budget) == -1 ||
	    rebuild_sampling(&rb, root, o) == -1))
		goto done;
	r = emit(&rb, o, out, outlen);
 done:
	if (r == 0 && p->keep != NULL) {
		p->keep->rt_in = root;
		p->keep->rt_out = o;
		return 0;
	}
	cJSON_Delete(o);
	cJSON_Delete(root);
	return r == -1 && rb.rb_nomem ? REBUILD_NOMEM : r;
}

void
rebuild_trees_free(struct rebuild_trees *rt)
{
	cJSON_Delete(rt->rt_in);
	cJSON_Delete(rt->rt_out);
	rt->rt_in = rt->rt_out = NULL;
}

char *
rebuild_error_body(const char *msg, size_t *len)
{
	cJSON	*o, *e;
	char	*m, *s = NULL;
	size_t	 ml;

	/* The body must stay valid JSON text whatever the caller passes. */
	if (msg == NULL || (ml = utf8_prefix(msg, strlen(msg))) == 0) {
		msg = "Invalid request";
		ml = strlen(msg);
	}
	if ((m = strndup(msg, ml)) == NULL)
		return NULL;
	if ((o = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(o, "type", "error") == NULL ||
	    (e = cJSON_AddObjectToObject(o, "error")) == NULL ||
	    cJSON_AddStringToObject(e, "type", "invalid_request_error") ==
	    NULL || cJSON_AddStringToObject(e, "message", m) == NULL)
		goto done;
	if ((s = cJSON_PrintUnformatted(o)) != NULL && len != NULL)
		*len = strlen(s);
 done:
	cJSON_Delete(o);
	free(m);
	return s;
}

static int
mcp_tool_allowed(const char *name, const char *const *allowed, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (allowed[i] != NULL && strcmp(allowed[i], name) == 0)
			return 1;
	return 0;
}

int
rebuild_mcp_request(const char *body, size_t len,
    const char *const *allowed_tools, size_t ntools, int startup, char **out,
    size_t *outlen, char *err, size_t errlen)
{
	struct rebuild	 rb;
	cJSON		*root, *o = NULL, *id, *method, *params, *name;
	size_t		 i;
	int		 r = REBUILD_MCP_INVALID;

	memset(&rb, 0, sizeof(rb));
	rb.rb_err = err;
	rb.rb_errlen = err != NULL ? errlen : 0;
	if (rb.rb_errlen > 0)
		err[0] = '\0';
	*out = NULL;
	*outlen = 0;

	if ((root = parse_body(&rb, body, len, MCP_NODES_MAX)) == NULL)
		return rb.rb_nomem ? REBUILD_NOMEM : REBUILD_MCP_INVALID;
	if (cJSON_IsArray(root)) {
		fail(&rb, "MCP method refused");
		r = REBUILD_MCP_REFUSED;
		goto done;
	}
	if (!cJSON_IsObject(root)) {
		fail(&rb, "Request body must be a JSON object");
		goto done;
	}
	if (!is_str(get(root, "jsonrpc"), "2.0")) {
		fail(&rb, "jsonrpc must be \"2.0\"");
		goto done;
	}
	if ((method = get(root, "method")) == NULL ||
	    !cJSON_IsString(method)) {
		fail(&rb, "method must be a string");
		goto done;
	}
	if ((id = get(root, "id")) != NULL && !cJSON_IsString(id) &&
	    !cJSON_IsNumber(id)) {
		fail(&rb, "id must be a string or a number");
		goto done;
	}
	if ((params = get(root, "params")) != NULL &&
	    !cJSON_IsObject(params) && !cJSON_IsArray(params)) {
		fail(&rb, "params must be an object or an array");
		goto done;
	}

	/* Closed by default: the metadata methods and allowed tool calls. */
	r = REBUILD_MCP_REFUSED;
	for (i = 0; i < nitems(mcp_methods); i++)
		if (strcmp(method->valuestring, mcp_methods[i]) == 0)
			break;
	if (i == nitems(mcp_methods)) {
		fail(&rb, "MCP method refused");
		goto done;
	}
	if (strcmp(method->valuestring, "tools/call") == 0 && (startup ||
	    !cJSON_IsObject(params) ||
	    (name = get(params, "name")) == NULL || !cJSON_IsString(name) ||
	    !mcp_tool_allowed(name->valuestring, allowed_tools, ntools) ||
	    !cJSON_IsObject(get(params, "arguments")))) {
		fail(&rb, "MCP method refused");
		goto done;
	}

	r = REBUILD_MCP_INVALID;
	if ((o = cJSON_CreateObject()) == NULL) {
		oom(&rb);
		goto done;
	}
	if (add_str(&rb, o, "jsonrpc", "2.0") == -1)
		goto done;
	if (id != NULL)
		move(o, "id", root, id);
	move(o, "method", root, method);
	if (params != NULL)
		move(o, "params", root, params);
	if (emit(&rb, o, out, outlen) == 0)
		r = 0;
 done:
	cJSON_Delete(o);
	cJSON_Delete(root);
	return r != 0 && rb.rb_nomem ? REBUILD_NOMEM : r;
}
