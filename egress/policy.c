/*
 * Egress's own reading of each call body (DESIGN.md 1, invariant 6).  The
 * reader (jwalk.c) walks strict JSON without building anything: a first pass
 * checks the grammar of the whole body, counts its values and keys and
 * notes where each top-level field the policy knows begins; the checks
 * then read just those values again.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jwalk.h"
#include "limits.h"
#include "policy.h"
#include "validate.h"

/* The longest name the policy compares, decoded (a model name). */
#define POLICY_STR_MAX		MODEL_NAME_BYTES_MAX

static const char *const level_names[] = {
	[POLICY_LEVEL_NONE] = "none",
	[POLICY_LEVEL_LOW] = "low",
	[POLICY_LEVEL_MEDIUM] = "medium",
	[POLICY_LEVEL_HIGH] = "high",
	[POLICY_LEVEL_XHIGH] = "xhigh",
};

/* PROTOCOL.md 5: effort order low < medium < high < xhigh < max. */
static const char *const effort_names[] = {
	"low", "medium", "high", "xhigh", "max"
};
/* The highest effort of each level: low, medium, high, max. */
static const int effort_ceiling[] = {
	[POLICY_LEVEL_NONE] = -1,
	[POLICY_LEVEL_LOW] = 0,
	[POLICY_LEVEL_MEDIUM] = 1,
	[POLICY_LEVEL_HIGH] = 2,
	[POLICY_LEVEL_XHIGH] = 4,
};

static const char *const mcp_methods[] = {
	"initialize", "notifications/initialized", "ping", "tools/list",
	"tools/call"
};

#define nitems(a)	(sizeof(a) / sizeof((a)[0]))

int
policy_level_parse(const char *s, enum policy_level *out)
{
	size_t	 i;

	for (i = POLICY_LEVEL_LOW; i < nitems(level_names); i++)
		if (strcmp(s, level_names[i]) == 0) {
			*out = i;
			return 0;
		}
	return -1;
}

const char *
policy_level_name(enum policy_level l)
{
	if ((unsigned)l >= nitems(level_names))
		return "none";
	return level_names[l];
}

uint64_t
policy_budget_ceiling(enum policy_level l)
{
	switch (l) {
	case POLICY_LEVEL_LOW:
		return THINKING_CEIL_LOW;
	case POLICY_LEVEL_MEDIUM:
		return THINKING_CEIL_MEDIUM;
	case POLICY_LEVEL_HIGH:
		return THINKING_CEIL_HIGH;
	case POLICY_LEVEL_XHIGH:
		return THINKING_CEIL_XHIGH;
	default:
		return 0;
	}
}

static enum violation __attribute__((format(printf, 4, 5)))
refuse(enum violation v, char *why, size_t whylen, const char *fmt, ...)
{
	va_list	 ap;

	if (why != NULL && whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return v;
}

/* Whether the body's value is an object (else the caller names it). */
static int
is_object(const char *body, size_t len)
{
	size_t	 i = 0;

	while (i < len && (body[i] == ' ' || body[i] == '\t' ||
	    body[i] == '\n' || body[i] == '\r'))
		i++;
	return i < len && body[i] == '{';
}

/* Parse body, an object, and find names in it. */
static enum violation
fields_read(const char *body, size_t len, struct fields *f, char *why,
    size_t whylen)
{
	struct jw	 w;

	memset(&w, 0, sizeof(w));
	w.s = (const uint8_t *)body;
	w.len = len;
	jw_ws(&w);
	if (jw_node(&w) == -1 || jw_object(&w, 1, fields_member, f) == -1)
		return refuse(VIOLATION_BODY, why, whylen,
		    "not strict JSON: %s at byte %zu", w.err, w.i);
	jw_ws(&w);
	if (w.i != w.len)
		return refuse(VIOLATION_BODY, why, whylen,
		    "bytes after the JSON value at byte %zu", w.i);
	if (f->f_dup)
		return refuse(VIOLATION_BODY, why, whylen,
		    "\"%s\" twice", f->f_dup_name);
	return VIOLATION_NONE;
}

/*
 * The top level of a body: one object whose fields are all in names, each
 * once (not an object: notobj, with why).
 */
static enum violation
top_fields(const char *body, size_t len, const char *const *names, size_t n,
    struct fields *f, enum violation notobj, const char *notobj_why,
    char *why, size_t whylen)
{
	enum violation	 v;

	if (why != NULL && whylen > 0)
		why[0] = '\0';
	memset(f, 0, sizeof(*f));
	f->f_names = names;
	f->f_n = n;
	if (!is_object(body, len))
		return refuse(notobj, why, whylen, "%s", notobj_why);
	if ((v = fields_read(body, len, f, why, whylen)) != VIOLATION_NONE)
		return v;
	if (f->f_unknown)
		return refuse(VIOLATION_FIELD, why, whylen,
		    "field \"%s\" is not sent by the rebuild",
		    f->f_unknown_name);
	return VIOLATION_NONE;
}

/*
 * Model calls
 */

enum {
	MF_MODEL, MF_MESSAGES, MF_SYSTEM, MF_MAX_TOKENS, MF_STREAM,
	MF_TEMPERATURE, MF_TOP_P, MF_TOP_K, MF_STOP_SEQUENCES, MF_TOOLS,
	MF_TOOL_CHOICE, MF_THINKING, MF_OUTPUT_CONFIG
};
/* What the rebuild of PROTOCOL.md 5 sends, and nothing else. */
static const char *const model_fields[] = {
	"model", "messages", "system", "max_tokens", "stream", "temperature",
	"top_p", "top_k", "stop_sequences", "tools", "tool_choice",
	"thinking", "output_config"
};
/* "Not for count_tokens": the fields the rebuild leaves out there. */
#define MF_NOT_COUNT	((1u << MF_MAX_TOKENS) | (1u << MF_STREAM) |	\
			 (1u << MF_TEMPERATURE) | (1u << MF_TOP_P) |	\
			 (1u << MF_TOP_K) | (1u << MF_STOP_SEQUENCES) |	\
			 (1u << MF_OUTPUT_CONFIG))

/* The first refusal of a walk through lists, and where it is told. */
struct verdict {
	enum violation	 vd_v;
	char		*vd_why;
	size_t		 vd_whylen;
};

/* Record the refusal and stop the walk: -1 with no JSON error set. */
static int __attribute__((format(printf, 3, 4)))
stop(struct verdict *vd, enum violation v, const char *fmt, ...)
{
	va_list	 ap;

	if (vd->vd_v != VIOLATION_NONE)
		return -1;
	vd->vd_v = v;
	if (vd->vd_why != NULL && vd->vd_whylen > 0) {
		va_start(ap, fmt);
		vsnprintf(vd->vd_why, vd->vd_whylen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* A walk that returned -1: the refusal it recorded, or bad JSON. */
static enum violation
walk_failed(struct verdict *vd, const struct jw *w, const char *what)
{
	if (vd->vd_v != VIOLATION_NONE)
		return vd->vd_v;
	return refuse(VIOLATION_BODY, vd->vd_why, vd->vd_whylen, "%s: %s",
	    what, w->err != NULL ? w->err : "unreadable");
}

/* Room for the longest path a refusal names:
 * "messages.1999.content.255.content.255.source.media_type". */
#define PATH_MAX_POLICY	96

/*
 * Content blocks, as the rebuild writes them (PROTOCOL.md 5): each type
 * with the keys it always writes, those it may write and those whose
 * value is a string.  The values themselves (text, ids, names, base64
 * data) are the conversation's: upstream judges them, and none of them
 * names anything upstream would fetch or spend.
 */
enum {
	BF_TYPE, BF_TEXT, BF_CACHE_CONTROL, BF_SOURCE, BF_ID, BF_NAME,
	BF_INPUT, BF_TOOL_USE_ID, BF_CONTENT, BF_IS_ERROR, BF_THINKING,
	BF_SIGNATURE, BF_DATA
};
static const char *const block_fields[] = {
	"type", "text", "cache_control", "source", "id", "name", "input",
	"tool_use_id", "content", "is_error", "thinking", "signature", "data"
};
#define BF(f)		(1u << BF_##f)

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

static const struct block_type {
	const char	*bt_name;
	int		 bt_bit;
	uint32_t	 bt_required;
	uint32_t	 bt_optional;
	uint32_t	 bt_strings;
} block_types[] = {
	{ "text", BLOCK_TEXT, BF(TYPE) | BF(TEXT), BF(CACHE_CONTROL),
	    BF(TEXT) },
	{ "image", BLOCK_IMAGE, BF(TYPE) | BF(SOURCE), 0, 0 },
	{ "tool_use", BLOCK_TOOL_USE, BF(TYPE) | BF(ID) | BF(NAME) |
	    BF(INPUT), 0, BF(ID) | BF(NAME) },
	{ "tool_result", BLOCK_TOOL_RESULT, BF(TYPE) | BF(TOOL_USE_ID),
	    BF(CONTENT) | BF(IS_ERROR), BF(TOOL_USE_ID) },
	{ "thinking", BLOCK_THINKING, BF(TYPE) | BF(THINKING) |
	    BF(SIGNATURE), 0, BF(THINKING) | BF(SIGNATURE) },
	{ "redacted_thinking", BLOCK_REDACTED, BF(TYPE) | BF(DATA), 0,
	    BF(DATA) },
};

/* 4.3: the four media types of an image. */
static const char *const image_types[] = {
	"image/png", "image/jpeg", "image/webp", "image/gif"
};

/* One content list being walked. */
struct list_ctx {
	struct verdict	*lc_vd;
	const char	*lc_body;
	size_t		 lc_len;
	const char	*lc_path;
	int		 lc_mask;
	size_t		 lc_n;
	size_t		 lc_nimages;
};

static int	check_content(struct verdict *, const char *, size_t, size_t,
		    const char *, int, int);

/* base.key into out (a path is only ever told, cut if it must be); built
 * for every element, refused or not, so joined rather than printed. */
static void
path_key(char *out, size_t outsz, const char *base, const char *key)
{
	size_t	 n;

	n = str_append(out, outsz, 0, base, strlen(base));
	n = str_append(out, outsz, n, ".", 1);
	(void)str_append(out, outsz, n, key, strlen(key));
}

static void
path_index(char *out, size_t outsz, const char *base, size_t i)
{
	size_t	 n;

	n = str_append(out, outsz, 0, base, strlen(base));
	n = str_append(out, outsz, n, ".", 1);
	(void)str_append_uint(out, outsz, n, i);
}

/* The first key of fields seen in mask, for a refusal that names it. */
static const char *
first_key(const struct fields *f, uint32_t mask)
{
	size_t	 k;

	for (k = 0; k < f->f_n; k++)
		if (mask & (1u << k))
			return f->f_names[k];
	return "?";
}

/* An object of the keys names at off, into f; -1 when refused. */
static int
read_object(struct verdict *vd, const char *body, size_t len, size_t off,
    const char *const *names, size_t n, struct fields *f, const char *path,
    int depth)
{
	struct jw	 w;

	memset(f, 0, sizeof(*f));
	f->f_names = names;
	f->f_n = n;
	jw_at(&w, body, len, off);
	if (jw_peek(&w) != '{')
		return stop(vd, VIOLATION_FIELD, "%s is not an object", path);
	if (jw_object(&w, depth, fields_member, f) == -1)
		return stop(vd, VIOLATION_BODY, "%s: %s", path,
		    w.err != NULL ? w.err : "unreadable");
	if (f->f_dup)
		return stop(vd, VIOLATION_BODY, "%s.%s twice", path,
		    f->f_dup_name);
	return 0;
}

/* The string value at off into out: 0, or -1 when it is none or does not
 * fit (the caller names it). */
static int
read_str(const char *body, size_t len, size_t off, char *out, size_t outsz)
{
	struct jw	 w;

	jw_at(&w, body, len, off);
	return jw_get_str(&w, out, outsz) == 0 ? 0 : -1;
}

static char
peek_at(const char *body, size_t len, size_t off)
{
	return off < len ? body[off] : '\0';
}

/* "cache_control kept only as {"type":"ephemeral"} plus "ttl":"1h"". */
static int
check_cache_control(struct verdict *vd, const char *body, size_t len,
    size_t off, const char *path, int depth)
{
	static const char *const names[] = { "type", "ttl" };
	struct fields	 f;
	char		 p[PATH_MAX_POLICY], s[16];

	path_key(p, sizeof(p), path, "cache_control");
	if (read_object(vd, body, len, off, names, nitems(names), &f, p,
	    depth) == -1)
		return -1;
	if (f.f_unknown)
		return stop(vd, VIOLATION_FIELD, "%s.%s is not written by the "
		    "rebuild", p, f.f_unknown_name);
	if (!(f.f_seen & 1u) || read_str(body, len, f.f_off[0], s,
	    sizeof(s)) == -1 || strcmp(s, "ephemeral") != 0)
		return stop(vd, VIOLATION_FIELD, "%s is not of type "
		    "ephemeral", p);
	if ((f.f_seen & 2u) && (read_str(body, len, f.f_off[1], s,
	    sizeof(s)) == -1 || strcmp(s, "1h") != 0))
		return stop(vd, VIOLATION_FIELD, "%s.ttl is not \"1h\"", p);
	return 0;
}

/* An image's source: base64 of a media type of 4.3, never a url, a file
 * or anything upstream would fetch. */
static int
check_source(struct verdict *vd, const char *body, size_t len, size_t off,
    const char *path, int depth)
{
	static const char *const names[] = { "type", "media_type", "data" };
	struct fields	 f;
	char		 p[PATH_MAX_POLICY], s[24];
	size_t		 k = nitems(image_types);

	path_key(p, sizeof(p), path, "source");
	if (read_object(vd, body, len, off, names, nitems(names), &f, p,
	    depth) == -1)
		return -1;
	if (!(f.f_seen & 1u))
		return stop(vd, VIOLATION_FIELD, "%s has no type", p);
	if (read_str(body, len, f.f_off[0], s, sizeof(s)) == -1)
		return stop(vd, VIOLATION_FIELD, "%s.type is not a source "
		    "type the rebuild writes", p);
	if (strcmp(s, "base64") != 0) {
		tame(s);
		return stop(vd, VIOLATION_FIELD, "%s is of type \"%s\": the "
		    "rebuild writes base64 sources only", p, s);
	}
	if (f.f_unknown)
		return stop(vd, VIOLATION_FIELD, "%s.%s is not written by the "
		    "rebuild", p, f.f_unknown_name);
	if ((f.f_seen & 2u) && read_str(body, len, f.f_off[1], s,
	    sizeof(s)) == 0)
		for (k = 0; k < nitems(image_types); k++)
			if (strcmp(s, image_types[k]) == 0)
				break;
	if (!(f.f_seen & 2u) || k == nitems(image_types))
		return stop(vd, VIOLATION_FIELD, "%s.media_type is not "
		    "image/png, image/jpeg, image/webp or image/gif", p);
	if (!(f.f_seen & 4u) || peek_at(body, len, f.f_off[2]) != '"')
		return stop(vd, VIOLATION_FIELD, "%s.data is not a string", p);
	return 0;
}

/* One block of a content list, its keys already noted in f. */
static int
check_block(struct list_ctx *lc, const struct fields *f, const char *path,
    int depth)
{
	const struct block_type	*bt = NULL;
	const char		*b = lc->lc_body;
	size_t			 len = lc->lc_len, k;
	uint32_t		 extra;
	char			 type[32];

	if (!(f->f_seen & BF(TYPE)) || read_str(b, len, f->f_off[BF_TYPE],
	    type, sizeof(type)) == -1)
		return stop(lc->lc_vd, VIOLATION_FIELD, "%s has no block type "
		    "the rebuild writes", path);
	for (k = 0; k < nitems(block_types); k++)
		if (strcmp(type, block_types[k].bt_name) == 0)
			bt = &block_types[k];
	if (bt == NULL || !(bt->bt_bit & lc->lc_mask)) {
		tame(type);
		return stop(lc->lc_vd, VIOLATION_FIELD, "%s is a \"%s\" block, "
		    "which the rebuild does not write %s", path, type,
		    lc->lc_mask == BLOCKS_NESTED ? "here (text and image only)" :
		    lc->lc_mask == BLOCKS_SYSTEM_MESSAGE ? "in a system message "
		    "(text only)" : "");
	}
	if (f->f_unknown)
		return stop(lc->lc_vd, VIOLATION_FIELD, "%s.%s is not written "
		    "by the rebuild", path, f->f_unknown_name);
	if ((extra = f->f_seen & ~(bt->bt_required | bt->bt_optional)) != 0)
		return stop(lc->lc_vd, VIOLATION_FIELD, "%s.%s is not written "
		    "by the rebuild in a %s block", path, first_key(f, extra),
		    type);
	if ((extra = bt->bt_required & ~f->f_seen) != 0)
		return stop(lc->lc_vd, VIOLATION_FIELD, "%s: a %s block without "
		    "%s", path, type, first_key(f, extra));
	for (k = 0; k < nitems(block_fields); k++)
		if ((bt->bt_strings & (1u << k)) &&
		    peek_at(b, len, f->f_off[k]) != '"')
			return stop(lc->lc_vd, VIOLATION_FIELD, "%s.%s is not a "
			    "string", path, block_fields[k]);
	if ((f->f_seen & BF(CACHE_CONTROL)) && check_cache_control(lc->lc_vd,
	    b, len, f->f_off[BF_CACHE_CONTROL], path, depth + 1) == -1)
		return -1;
	if (bt->bt_bit == BLOCK_IMAGE) {
		if (++lc->lc_nimages > IMAGES_MAX)
			return stop(lc->lc_vd, VIOLATION_BODY, "%s: more than %u "
			    "images in one list", lc->lc_path, IMAGES_MAX);
		return check_source(lc->lc_vd, b, len, f->f_off[BF_SOURCE],
		    path, depth + 1);
	}
	if (bt->bt_bit == BLOCK_TOOL_USE &&
	    peek_at(b, len, f->f_off[BF_INPUT]) != '{')
		return stop(lc->lc_vd, VIOLATION_FIELD, "%s.input is not an "
		    "object", path);
	if (bt->bt_bit != BLOCK_TOOL_RESULT)
		return 0;
	/* is_error only as true: "is_error:true kept" */
	if ((f->f_seen & BF(IS_ERROR)) &&
	    peek_at(b, len, f->f_off[BF_IS_ERROR]) != 't')
		return stop(lc->lc_vd, VIOLATION_FIELD, "%s.is_error is not "
		    "true", path);
	if (f->f_seen & BF(CONTENT)) {
		char	 p[PATH_MAX_POLICY];

		path_key(p, sizeof(p), path, "content");
		return check_content(lc->lc_vd, b, len, f->f_off[BF_CONTENT],
		    p, BLOCKS_NESTED, depth + 1);
	}
	return 0;
}

static int
block_elem(struct jw *w, void *arg, int depth)
{
	struct list_ctx	*lc = arg;
	struct fields	 f;
	char		 path[PATH_MAX_POLICY];

	if (jw_node(w) == -1)
		return -1;
	if (lc->lc_n == MODEL_BLOCKS_MAX)
		return stop(lc->lc_vd, VIOLATION_BODY, "%s: more than %u "
		    "content blocks", lc->lc_path, MODEL_BLOCKS_MAX);
	path_index(path, sizeof(path), lc->lc_path, lc->lc_n++);
	if (jw_peek(w) != '{')
		return stop(lc->lc_vd, VIOLATION_FIELD, "%s is not an object",
		    path);
	memset(&f, 0, sizeof(f));
	f.f_names = block_fields;
	f.f_n = nitems(block_fields);
	if (jw_object(w, depth, fields_member, &f) == -1)
		return -1;
	if (f.f_dup)
		return stop(lc->lc_vd, VIOLATION_BODY, "%s.%s twice", path,
		    f.f_dup_name);
	return check_block(lc, &f, path, depth);
}

/* body[off]: a string, or a list of the blocks of mask (PROTOCOL.md 5). */
static int
check_content(struct verdict *vd, const char *body, size_t len, size_t off,
    const char *path, int mask, int depth)
{
	struct list_ctx	 lc;
	struct jw	 w;

	switch (peek_at(body, len, off)) {
	case '"':
		return 0;
	case '[':
		break;
	default:
		return stop(vd, VIOLATION_FIELD, "%s is not a string or a list",
		    path);
	}
	memset(&lc, 0, sizeof(lc));
	lc.lc_vd = vd;
	lc.lc_body = body;
	lc.lc_len = len;
	lc.lc_path = path;
	lc.lc_mask = mask;
	jw_at(&w, body, len, off);
	if (jw_array(&w, depth, block_elem, &lc) == -1) {
		if (vd->vd_v == VIOLATION_NONE)
			return stop(vd, VIOLATION_BODY, "%s: %s", path,
			    w.err != NULL ? w.err : "unreadable");
		return -1;
	}
	return 0;
}

/*
 * One message: role user or assistant with content and nothing else, or
 * role system with content of text only, and the clear_at tag and the
 * output_config.effort under the ceiling the rebuild keeps of it.
 */
struct messages_ctx {
	struct verdict			*mc_vd;
	const char			*mc_body;
	size_t				 mc_len;
	size_t				 mc_n;
	const struct policy_model	*mc_pm;
};

static enum violation	check_effort(const char *, size_t, int, size_t, int,
			    const struct policy_model *, char *, size_t);

/* A system message's clear_at and output_config, as the rebuild keeps. */
static int
check_system_message(struct messages_ctx *mc, const struct fields *f,
    const char *path)
{
	struct verdict	*vd = mc->mc_vd;
	enum violation	 v;
	char		 tag[SYSTEM_CLEAR_AT_MAX + 2], why[160];
	size_t		 i;

	if (f->f_seen & 4u) {
		if (read_str(mc->mc_body, mc->mc_len, f->f_off[2], tag,
		    sizeof(tag)) == -1 || tag[0] == '\0' ||
		    strlen(tag) > SYSTEM_CLEAR_AT_MAX)
			return stop(vd, VIOLATION_FIELD, "%s.clear_at is not a "
			    "tag the rebuild keeps", path);
		for (i = 0; tag[i] != '\0'; i++)
			if (!((tag[i] >= 'a' && tag[i] <= 'z') ||
			    (tag[i] >= '0' && tag[i] <= '9') || tag[i] == '_'))
				return stop(vd, VIOLATION_FIELD, "%s.clear_at is "
				    "not a tag the rebuild keeps", path);
	}
	if (!(f->f_seen & 8u))
		return 0;
	if ((v = check_effort(mc->mc_body, mc->mc_len, 1, f->f_off[3], 0,
	    mc->mc_pm, why, sizeof(why))) != VIOLATION_NONE)
		return stop(vd, v, "%s: %s", path, why);
	return 0;
}

static int
message_elem(struct jw *w, void *arg, int depth)
{
	static const char *const names[] = { "role", "content", "clear_at",
	    "output_config" };
	struct messages_ctx	*mc = arg;
	struct fields		 f;
	char			 path[PATH_MAX_POLICY], p[PATH_MAX_POLICY];
	char			 role[16];
	int			 sys;

	if (jw_node(w) == -1)
		return -1;
	if (mc->mc_n == MODEL_MESSAGES_MAX)
		return stop(mc->mc_vd, VIOLATION_BODY, "more than %u messages",
		    MODEL_MESSAGES_MAX);
	path_index(path, sizeof(path), "messages", mc->mc_n++);
	if (jw_peek(w) != '{')
		return stop(mc->mc_vd, VIOLATION_FIELD, "%s is not an object",
		    path);
	memset(&f, 0, sizeof(f));
	f.f_names = names;
	f.f_n = nitems(names);
	if (jw_object(w, depth, fields_member, &f) == -1)
		return -1;
	if (f.f_dup)
		return stop(mc->mc_vd, VIOLATION_BODY, "%s.%s twice", path,
		    f.f_dup_name);
	if (f.f_unknown)
		return stop(mc->mc_vd, VIOLATION_FIELD, "%s.%s is not written "
		    "by the rebuild", path, f.f_unknown_name);
	if (!(f.f_seen & 1u) || read_str(mc->mc_body, mc->mc_len, f.f_off[0],
	    role, sizeof(role)) == -1 || (strcmp(role, "user") != 0 &&
	    strcmp(role, "assistant") != 0 && strcmp(role, "system") != 0))
		return stop(mc->mc_vd, VIOLATION_FIELD, "%s.role is not user, "
		    "assistant or system", path);
	sys = strcmp(role, "system") == 0;
	if (!sys && (f.f_seen & (4u | 8u)))
		return stop(mc->mc_vd, VIOLATION_FIELD, "%s.%s is kept by the "
		    "rebuild in a system message only", path,
		    (f.f_seen & 4u) ? "clear_at" : "output_config");
	if (!(f.f_seen & 2u))
		return stop(mc->mc_vd, VIOLATION_FIELD, "%s has no content",
		    path);
	if (sys && check_system_message(mc, &f, path) == -1)
		return -1;
	path_key(p, sizeof(p), path, "content");
	return check_content(mc->mc_vd, mc->mc_body, mc->mc_len, f.f_off[1],
	    p, sys ? BLOCKS_SYSTEM_MESSAGE : BLOCKS_MESSAGE, depth + 1);
}

static enum violation
check_messages(const char *body, size_t len, size_t off,
    const struct policy_model *pm, char *why, size_t whylen)
{
	struct verdict		 vd = { VIOLATION_NONE, why, whylen };
	struct messages_ctx	 mc;
	struct jw		 w;

	memset(&mc, 0, sizeof(mc));
	mc.mc_pm = pm;
	mc.mc_vd = &vd;
	mc.mc_body = body;
	mc.mc_len = len;
	jw_at(&w, body, len, off);
	if (jw_peek(&w) != '[')
		return refuse(VIOLATION_FIELD, why, whylen,
		    "messages is not a list");
	if (jw_array(&w, 2, message_elem, &mc) == -1)
		return walk_failed(&vd, &w, "messages");
	return VIOLATION_NONE;
}

static enum violation
check_system(const char *body, size_t len, size_t off, char *why,
    size_t whylen)
{
	struct verdict	 vd = { VIOLATION_NONE, why, whylen };

	(void)check_content(&vd, body, len, off, "system", BLOCKS_NESTED, 2);
	return vd.vd_v;
}

/* A sub-object of known keys: offsets noted, unknown keys and doubles
 * refused. */
static enum violation
sub_fields(const char *body, size_t len, size_t off, struct fields *f,
    const char *what, enum violation unknown, char *why, size_t whylen)
{
	struct jw	 w;

	jw_at(&w, body, len, off);
	if (jw_peek(&w) != '{')
		return refuse(unknown, why, whylen, "%s is not an object",
		    what);
	if (jw_object(&w, 2, fields_member, f) == -1)
		return refuse(VIOLATION_BODY, why, whylen, "%s: %s", what,
		    w.err);
	if (f->f_dup)
		return refuse(VIOLATION_BODY, why, whylen, "%s.%s twice",
		    what, f->f_dup_name);
	if (f->f_unknown)
		return refuse(unknown, why, whylen, "%s.%s is not sent by "
		    "the rebuild", what, f->f_unknown_name);
	return VIOLATION_NONE;
}

/*
 * thinking: adaptive, disabled, or enabled with a budget the rebuild
 * could have set: at least 1 024, at most the level's ceiling and below
 * maxOutputTokens.  A research job without a level thinks not at all
 * (adaptive thinking runs at upstream's default effort, high).
 * *adaptive and *budget tell the checks that follow.
 */
static enum violation
check_thinking(const char *body, size_t len, size_t off,
    const struct policy_model *pm, int *adaptive, uint64_t *budget,
    char *why, size_t whylen)
{
	static const char *const names[] = { "type", "budget_tokens" };
	struct fields	 f;
	struct jw	 w;
	enum violation	 v;
	char		 type[16];
	uint64_t	 ceil = policy_budget_ceiling(pm->pm_level);

	memset(&f, 0, sizeof(f));
	f.f_names = names;
	f.f_n = nitems(names);
	if ((v = sub_fields(body, len, off, &f, "thinking",
	    VIOLATION_THINKING, why, whylen)) != VIOLATION_NONE)
		return v;
	if (!(f.f_seen & 1u))
		return refuse(VIOLATION_THINKING, why, whylen,
		    "thinking without a type");
	jw_at(&w, body, len, f.f_off[0]);
	if (jw_get_str(&w, type, sizeof(type)) != 0)
		return refuse(VIOLATION_THINKING, why, whylen,
		    "thinking.type is not a known type");
	if (strcmp(type, "adaptive") == 0 || strcmp(type, "disabled") == 0) {
		if (f.f_seen & 2u)
			return refuse(VIOLATION_THINKING, why, whylen,
			    "thinking %s with a budget", type);
		*adaptive = strcmp(type, "adaptive") == 0;
		if (*adaptive && pm->pm_level == POLICY_LEVEL_NONE)
			return refuse(VIOLATION_THINKING, why, whylen,
			    "adaptive thinking without a thinking level");
		return VIOLATION_NONE;
	}
	if (strcmp(type, "enabled") != 0)
		return refuse(VIOLATION_THINKING, why, whylen,
		    "thinking.type is not a known type");
	if (!(f.f_seen & 2u))
		return refuse(VIOLATION_THINKING, why, whylen,
		    "thinking enabled without a budget");
	jw_at(&w, body, len, f.f_off[1]);
	if (jw_get_uint(&w, budget) != 0)
		return refuse(VIOLATION_THINKING, why, whylen,
		    "thinking.budget_tokens is not a plain integer");
	if (*budget > ceil)
		return refuse(VIOLATION_THINKING, why, whylen,
		    "thinking budget %llu over the %s ceiling %llu",
		    (unsigned long long)*budget,
		    policy_level_name(pm->pm_level),
		    (unsigned long long)ceil);
	if (*budget < THINKING_BUDGET_MIN)
		return refuse(VIOLATION_THINKING, why, whylen,
		    "thinking budget %llu under %u",
		    (unsigned long long)*budget, THINKING_BUDGET_MIN);
	if (*budget >= pm->pm_max_tokens)
		return refuse(VIOLATION_THINKING, why, whylen,
		    "thinking budget %llu not under the output ceiling %llu",
		    (unsigned long long)*budget,
		    (unsigned long long)pm->pm_max_tokens);
	return VIOLATION_NONE;
}

/*
 * output_config: only an effort, at most the level's.  With adaptive
 * thinking and no effort the rebuild sets the ceiling's at low and medium,
 * so there a missing effort is refused (upstream would think at its
 * default, high); at high and xhigh the rebuild leaves it out, and the
 * default is within the ceiling.  count_tokens generates nothing: the
 * rebuild sends it no output_config (refused before this is reached).
 */
static enum violation
check_effort(const char *body, size_t len, int has_config, size_t off,
    int adaptive, const struct policy_model *pm, char *why, size_t whylen)
{
	static const char *const names[] = { "effort" };
	struct fields	 f;
	struct jw	 w;
	enum violation	 v;
	char		 effort[16];
	size_t		 k;
	int		 ceil = effort_ceiling[pm->pm_level];

	if (!has_config) {
		if (adaptive && !pm->pm_count_tokens &&
		    (pm->pm_level == POLICY_LEVEL_LOW ||
		    pm->pm_level == POLICY_LEVEL_MEDIUM))
			return refuse(VIOLATION_EFFORT, why, whylen,
			    "adaptive thinking without an effort at level %s",
			    policy_level_name(pm->pm_level));
		return VIOLATION_NONE;
	}
	memset(&f, 0, sizeof(f));
	f.f_names = names;
	f.f_n = nitems(names);
	if ((v = sub_fields(body, len, off, &f, "output_config",
	    VIOLATION_EFFORT, why, whylen)) != VIOLATION_NONE)
		return v;
	if (!(f.f_seen & 1u))
		return refuse(VIOLATION_EFFORT, why, whylen,
		    "output_config without an effort");
	jw_at(&w, body, len, f.f_off[0]);
	if (jw_get_str(&w, effort, sizeof(effort)) != 0)
		return refuse(VIOLATION_EFFORT, why, whylen,
		    "output_config.effort is not a level");
	for (k = 0; k < nitems(effort_names); k++)
		if (strcmp(effort, effort_names[k]) == 0)
			break;
	if (k == nitems(effort_names))
		return refuse(VIOLATION_EFFORT, why, whylen,
		    "output_config.effort is not a level");
	if ((int)k > ceil)
		return refuse(VIOLATION_EFFORT, why, whylen,
		    "effort %s over the %s ceiling", effort,
		    policy_level_name(pm->pm_level));
	return VIOLATION_NONE;
}

/* Each tool: "type", when present, is "custom" (no server tools). */
struct tools_ctx {
	enum violation	 v;
	char		*why;
	size_t		 whylen;
	size_t		 n;
};

static int
tool_member(struct jw *w, const char *key, void *arg, int depth)
{
	struct tools_ctx	*tc = arg;
	char			 type[16];
	int			 r;

	if (key == NULL || strcmp(key, "type") != 0)
		return jw_value(w, depth);
	if ((r = jw_get_str(w, type, sizeof(type))) == -1)
		return -1;
	if (tc->v == VIOLATION_NONE && (r != 0 || strcmp(type, "custom") != 0))
		tc->v = refuse(VIOLATION_FIELD, tc->why, tc->whylen,
		    "tools.%zu is not a custom tool", tc->n);
	return 0;
}

static int
tool_elem(struct jw *w, void *arg, int depth)
{
	struct tools_ctx	*tc = arg;
	size_t			 seen_at = w->i;
	int			 r;

	if (jw_node(w) == -1)
		return -1;
	if (tc->n == MODEL_TOOLS_MAX && tc->v == VIOLATION_NONE)
		tc->v = refuse(VIOLATION_BODY, tc->why, tc->whylen,
		    "more than %u tools", MODEL_TOOLS_MAX);
	if (jw_peek(w) != '{') {
		if (tc->v == VIOLATION_NONE)
			tc->v = refuse(VIOLATION_FIELD, tc->why, tc->whylen,
			    "tools.%zu is not an object", tc->n);
		r = jw_value(w, depth);
	} else {
		struct fields	 f;
		static const char *const names[] = { "type" };

		/* a second "type" would be a second opinion upstream */
		memset(&f, 0, sizeof(f));
		f.f_names = names;
		f.f_n = 1;
		if ((r = jw_object(w, depth, fields_member, &f)) == 0) {
			if (f.f_dup && tc->v == VIOLATION_NONE)
				tc->v = refuse(VIOLATION_BODY, tc->why,
				    tc->whylen, "tools.%zu.type twice",
				    tc->n);
			w->i = seen_at;
			r = jw_object(w, depth, tool_member, tc);
		}
	}
	tc->n++;
	return r;
}

static enum violation
check_tools(const char *body, size_t len, size_t off, char *why,
    size_t whylen)
{
	struct tools_ctx	 tc;
	struct jw		 w;

	memset(&tc, 0, sizeof(tc));
	tc.why = why;
	tc.whylen = whylen;
	jw_at(&w, body, len, off);
	if (jw_peek(&w) != '[')
		return refuse(VIOLATION_FIELD, why, whylen,
		    "tools is not an array");
	if (jw_array(&w, 2, tool_elem, &tc) == -1)
		return refuse(VIOLATION_BODY, why, whylen, "tools: %s",
		    w.err);
	return tc.v;
}

enum violation
policy_model_check(const char *body, size_t len,
    const struct policy_model *pm, char *why, size_t whylen)
{
	struct fields	 f;
	struct jw	 w;
	enum violation	 v;
	char		 model[POLICY_STR_MAX + 1];
	uint64_t	 mt = 0, budget = 0;
	size_t		 k;
	int		 adaptive = 0;

	if ((v = top_fields(body, len, model_fields, nitems(model_fields), &f,
	    VIOLATION_BODY, "body is not a JSON object", why, whylen)) !=
	    VIOLATION_NONE)
		return v;

	if (!(f.f_seen & (1u << MF_MODEL)))
		return refuse(VIOLATION_MODEL, why, whylen, "no model");
	jw_at(&w, body, len, f.f_off[MF_MODEL]);
	if (jw_get_str(&w, model, sizeof(model)) != 0 ||
	    strcmp(model, pm->pm_model) != 0)
		return refuse(VIOLATION_MODEL, why, whylen,
		    "a model other than the profile's");

	if (pm->pm_count_tokens && (f.f_seen & MF_NOT_COUNT)) {
		for (k = 0; !(f.f_seen & MF_NOT_COUNT & (1u << k)); k++)
			;
		return refuse(VIOLATION_FIELD, why, whylen,
		    "field \"%s\" is not sent to count_tokens by the rebuild",
		    model_fields[k]);
	}
	if (f.f_seen & (1u << MF_MAX_TOKENS)) {
		jw_at(&w, body, len, f.f_off[MF_MAX_TOKENS]);
		if (jw_get_uint(&w, &mt) != 0)
			return refuse(VIOLATION_MAX_TOKENS, why, whylen,
			    "max_tokens is not a plain integer");
		if (mt > pm->pm_max_tokens)
			return refuse(VIOLATION_MAX_TOKENS, why, whylen,
			    "max_tokens %llu over the ceiling %llu",
			    (unsigned long long)mt,
			    (unsigned long long)pm->pm_max_tokens);
		if (mt == 0)
			return refuse(VIOLATION_MAX_TOKENS, why, whylen,
			    "max_tokens 0");
	}
	if ((f.f_seen & (1u << MF_THINKING)) &&
	    (v = check_thinking(body, len, f.f_off[MF_THINKING], pm,
	    &adaptive, &budget, why, whylen)) != VIOLATION_NONE)
		return v;
	/* "max_tokens = max(budget + 1, ...)" */
	if (budget > 0 && (f.f_seen & (1u << MF_MAX_TOKENS)) && mt <= budget)
		return refuse(VIOLATION_THINKING, why, whylen,
		    "thinking budget %llu not under max_tokens %llu",
		    (unsigned long long)budget, (unsigned long long)mt);
	if ((v = check_effort(body, len, (f.f_seen & (1u << MF_OUTPUT_CONFIG))
	    != 0, f.f_off[MF_OUTPUT_CONFIG], adaptive, pm, why, whylen)) !=
	    VIOLATION_NONE)
		return v;
	if ((f.f_seen & (1u << MF_TOOLS)) &&
	    (v = check_tools(body, len, f.f_off[MF_TOOLS], why, whylen)) !=
	    VIOLATION_NONE)
		return v;
	if (!(f.f_seen & (1u << MF_MESSAGES)))
		return refuse(VIOLATION_FIELD, why, whylen, "no messages");
	if ((v = check_messages(body, len, f.f_off[MF_MESSAGES], pm, why,
	    whylen)) != VIOLATION_NONE)
		return v;
	if ((f.f_seen & (1u << MF_SYSTEM)) &&
	    (v = check_system(body, len, f.f_off[MF_SYSTEM], why, whylen)) !=
	    VIOLATION_NONE)
		return v;
	if (!pm->pm_count_tokens && !(f.f_seen & (1u << MF_MAX_TOKENS)))
		return refuse(VIOLATION_MAX_TOKENS, why, whylen,
		    "no max_tokens");
	return VIOLATION_NONE;
}

/*
 * MCP calls
 */

enum { CF_JSONRPC, CF_ID, CF_METHOD, CF_PARAMS };
static const char *const mcp_fields[] = { "jsonrpc", "id", "method",
    "params" };

static enum violation
check_tool_call(const char *body, size_t len, size_t off,
    const struct policy_mcp *pm, struct policy_mcp_call *pc, char *why,
    size_t whylen)
{
	static const char *const names[] = { "name", "arguments" };
	struct fields	 f;
	struct jw	 w;
	char		 name[TOOL_USE_NAME_MAX + 1];
	size_t		 k;

	memset(&f, 0, sizeof(f));
	f.f_names = names;
	f.f_n = nitems(names);
	jw_at(&w, body, len, off);
	if (jw_peek(&w) != '{')
		return refuse(VIOLATION_MCP_TOOL, why, whylen,
		    "tools/call params is not an object");
	/* params holds more than name and arguments (_meta): as sent */
	if (jw_object(&w, 2, fields_member, &f) == -1)
		return refuse(VIOLATION_BODY, why, whylen, "params: %s",
		    w.err);
	if (f.f_dup)
		return refuse(VIOLATION_BODY, why, whylen, "params.%s twice",
		    f.f_dup_name);
	if (!(f.f_seen & 1u) || !(f.f_seen & 2u))
		return refuse(VIOLATION_MCP_TOOL, why, whylen,
		    "tools/call without a name or arguments");
	jw_at(&w, body, len, f.f_off[0]);
	if (jw_get_str(&w, name, sizeof(name)) != 0)
		return refuse(VIOLATION_MCP_TOOL, why, whylen,
		    "a tool the server does not allow");
	for (k = 0; k < pm->pm_ntools; k++)
		if (strcmp(pm->pm_tools[k], name) == 0)
			break;
	if (k == pm->pm_ntools) {
		tame(name);
		return refuse(VIOLATION_MCP_TOOL, why, whylen,
		    "tool %s is not allowed on this server", name);
	}
	jw_at(&w, body, len, f.f_off[1]);
	if (jw_peek(&w) != '{')
		return refuse(VIOLATION_MCP_TOOL, why, whylen,
		    "tools/call arguments is not an object");
	pc->pc_tool = pm->pm_tools[k];
	return VIOLATION_NONE;
}

enum violation
policy_mcp_check(const char *body, size_t len, const struct policy_mcp *pm,
    char *why, size_t whylen)
{
	struct policy_mcp_call	 pc;

	return policy_mcp_check_call(body, len, pm, &pc, why, whylen);
}

enum violation
policy_mcp_check_call(const char *body, size_t len,
    const struct policy_mcp *pm, struct policy_mcp_call *pc, char *why,
    size_t whylen)
{
	struct fields	 f;
	struct jw	 w;
	enum violation	 v;
	char		 s[32];
	size_t		 k;

	if ((v = top_fields(body, len, mcp_fields, nitems(mcp_fields), &f,
	    VIOLATION_MCP_METHOD, "not one JSON-RPC request object (a batch?)",
	    why, whylen)) != VIOLATION_NONE)
		return v;
	jw_at(&w, body, len, f.f_off[CF_JSONRPC]);
	if (!(f.f_seen & (1u << CF_JSONRPC)) ||
	    jw_get_str(&w, s, sizeof(s)) != 0 || strcmp(s, "2.0") != 0)
		return refuse(VIOLATION_MCP_METHOD, why, whylen,
		    "jsonrpc is not \"2.0\"");
	jw_at(&w, body, len, f.f_off[CF_METHOD]);
	if (!(f.f_seen & (1u << CF_METHOD)) ||
	    jw_get_str(&w, s, sizeof(s)) != 0)
		return refuse(VIOLATION_MCP_METHOD, why, whylen,
		    "a method outside the allow-list");
	for (k = 0; k < nitems(mcp_methods); k++)
		if (strcmp(s, mcp_methods[k]) == 0)
			break;
	if (k == nitems(mcp_methods))
		return refuse(VIOLATION_MCP_METHOD, why, whylen,
		    "method %s is outside the allow-list", s);
	pc->pc_method = mcp_methods[k];
	pc->pc_tool = NULL;
	if (strcmp(s, "tools/call") != 0)
		return VIOLATION_NONE;
	if (pm->pm_metadata_only)
		return refuse(VIOLATION_MCP_METHOD, why, whylen,
		    "tools/call without a bound turn");
	if (!(f.f_seen & (1u << CF_PARAMS)))
		return refuse(VIOLATION_MCP_TOOL, why, whylen,
		    "tools/call without params");
	return check_tool_call(body, len, f.f_off[CF_PARAMS], pm, pc, why,
	    whylen);
}
