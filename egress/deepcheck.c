/*
 * The message of a precheck answer and the deep look for the credential
 * in it (deepcheck.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "deepcheck.h"
#include "jwalk.h"
#include "limits.h"
#include "reflect.h"

const char *
deepcheck_result_to_string(enum deepcheck_result r)
{
	switch (r) {
	case DEEPCHECK_CLEAN:
		return "clean";
	case DEEPCHECK_CARRIES:
		return "carries the credential";
	case DEEPCHECK_NOMEM:
		return "out of memory";
	}
	return "?";
}

/*
 * jwalk's reader says whether it is strict JSON (UTF-8 checked) and
 * nothing else: cJSON alone would take trailing bytes, raw control
 * characters and bad UTF-8.
 */
cJSON *
deepcheck_parse(const char *s, size_t len)
{
	struct jw	 w;
	cJSON		*v;

	errno = 0;
	memset(&w, 0, sizeof(w));
	w.s = (const uint8_t *)s;
	w.len = len;
	jw_ws(&w);
	if (jw_value(&w, 0) == -1)
		return NULL;
	jw_ws(&w);
	if (w.i != len)
		return NULL;
	/* cJSON nests less deep than jwalk: NULL with errno 0. */
	errno = 0;
	if ((v = cJSON_ParseWithLength(s, len)) == NULL && errno != ENOMEM)
		errno = 0;
	return v;
}

static cJSON *
parse_object(const char *s, size_t len)
{
	cJSON	*v;

	if ((v = deepcheck_parse(s, len)) != NULL && !cJSON_IsObject(v)) {
		cJSON_Delete(v);
		return NULL;
	}
	return v;
}

/* The event's data, if any, becomes the message when it is an object. */
static int
sse_event_end(const char *data, size_t datalen, int have, cJSON **msg)
{
	cJSON	*v;

	if (!have)
		return 0;
	errno = 0;
	if ((v = parse_object(data, datalen)) == NULL)
		return errno == ENOMEM ? -1 : 0;
	cJSON_Delete(*msg);
	*msg = v;
	return 0;
}

static cJSON *
sse_message(const char *body, size_t len)
{
	cJSON		*msg = NULL;
	char		*data;
	const char	*p = body, *end = body + len, *nl, *val;
	size_t		 linelen, datalen = 0, vlen;
	int		 have = 0;

	/* The data joined is never longer than the text. */
	if ((data = malloc(len + 1)) == NULL)
		return NULL;
	while (p < end) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		linelen = (size_t)(nl - p);
		if (linelen > 0 && p[linelen - 1] == '\r')
			linelen--;
		if (linelen == 0) {
			if (sse_event_end(data, datalen, have, &msg) == -1)
				goto nomem;
			have = 0;
			datalen = 0;
		} else if (linelen >= 5 && memcmp(p, "data:", 5) == 0) {
			val = p + 5;
			vlen = linelen - 5;
			if (vlen > 0 && *val == ' ') {
				val++;
				vlen--;
			}
			if (have)
				data[datalen++] = '\n';
			memcpy(data + datalen, val, vlen);
			datalen += vlen;
			have = 1;
		}
		p = nl < end ? nl + 1 : end;
	}
	if (sse_event_end(data, datalen, have, &msg) == -1)
		goto nomem;
	free(data);
	errno = 0;
	return msg;
 nomem:
	free(data);
	cJSON_Delete(msg);
	errno = ENOMEM;
	return NULL;
}

cJSON *
deepcheck_message(const char *body, size_t len, int sse)
{
	cJSON	*v;

	if (sse)
		return sse_message(body, len);
	errno = 0;
	v = parse_object(body, len);
	if (v == NULL && errno != ENOMEM)
		errno = 0;
	return v;
}

static enum deepcheck_result
holds(struct reflect *rf, const char *s)
{
	switch (reflect_search(rf, s, strlen(s))) {
	case 0:
		return DEEPCHECK_CLEAN;
	case 1:
		return DEEPCHECK_CARRIES;
	default:
		return DEEPCHECK_NOMEM;
	}
}

static enum deepcheck_result	walk(const cJSON *, struct reflect *,
				    unsigned);

/* A string's JSON, when it looks like some, one level below it. */
static enum deepcheck_result
walk_inner(const char *s, struct reflect *rf, unsigned level)
{
	enum deepcheck_result	 r;
	const char		*t = s;
	cJSON			*v;

	while (*t == ' ' || *t == '\t' || *t == '\n' || *t == '\r')
		t++;
	if (*t != '{' && *t != '[' && *t != '"')
		return DEEPCHECK_CLEAN;
	errno = 0;
	if ((v = deepcheck_parse(t, strlen(t))) == NULL)
		return errno == ENOMEM ? DEEPCHECK_NOMEM : DEEPCHECK_CLEAN;
	r = walk(v, rf, level + 1);
	cJSON_Delete(v);
	return r;
}

static enum deepcheck_result
walk(const cJSON *v, struct reflect *rf, unsigned level)
{
	enum deepcheck_result	 r;
	const cJSON		*c;

	if (level > PRECHECK_DEPTH_MAX)
		return DEEPCHECK_CARRIES;
	if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
		for (c = v->child; c != NULL; c = c->next) {
			if (c->string != NULL &&
			    (r = holds(rf, c->string)) != DEEPCHECK_CLEAN)
				return r;
			if ((r = walk(c, rf, level + 1)) != DEEPCHECK_CLEAN)
				return r;
		}
		return DEEPCHECK_CLEAN;
	}
	if (cJSON_IsString(v) && v->valuestring != NULL) {
		if ((r = holds(rf, v->valuestring)) != DEEPCHECK_CLEAN)
			return r;
		return walk_inner(v->valuestring, rf, level);
	}
	return DEEPCHECK_CLEAN;
}

enum deepcheck_result
deepcheck_walk(const cJSON *v, struct reflect *rf)
{
	return walk(v, rf, 1);
}
