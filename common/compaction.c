#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compaction.h"
#include "validate.h"

static const char *const compact_reasons[] = {
	"manual", "threshold", "overflow", NULL
};

int
compact_engine_valid(const char *s, size_t len)
{
	size_t	 i;

	if (len == 0 || len > COMPACT_ENGINE_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '@' ||
		    s[i] == '/' || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

/* A string of valid UTF-8 and min to max chars; NULL is "missing". */
static enum body_err
cp_text(const cJSON *it, const char *what, size_t min, size_t max,
    char *err, size_t errlen)
{
	size_t	 units = 0;

	if (body_check_text(it, what, max, err, errlen) != BODY_OK)
		return BODY_BAD;
	(void)utf8_utf16_len(it->valuestring, strlen(it->valuestring),
	    &units);
	if (units < min)
		return body_fail(err, errlen, BODY_BAD, units == 0 ?
		    "%s is empty" : "%s is under %zu chars", what, min);
	return BODY_OK;
}

/* A token count: an integer from 0 to 2^53 - 1 (Number.isSafeInteger). */
static enum body_err
cp_tokens(const cJSON *it, const char *what, int optional, uint64_t *v,
    char *err, size_t errlen)
{
	double	 d;

	if (it == NULL) {
		if (optional)
			return BODY_OK;
		return body_fail(err, errlen, BODY_BAD, "%s is missing", what);
	}
	d = cJSON_IsNumber(it) ? it->valuedouble : -1;
	/* in range first: that makes the cast defined */
	if (!isfinite(d) || d < 0 || d > (double)COMPACT_TOKENS_MAX ||
	    d != (double)(uint64_t)d)
		return body_fail(err, errlen, BODY_BAD, "%s is not an integer "
		    "from 0 to 2^53 - 1", what);
	if (v != NULL)
		*v = (uint64_t)d;
	return BODY_OK;
}

static enum body_err
cp_bool(const cJSON *it, const char *what, char *err, size_t errlen)
{
	if (!cJSON_IsBool(it))
		return body_fail(err, errlen, BODY_BAD, "%s is not a boolean",
		    what);
	return BODY_OK;
}

/* One of the NULL-terminated names; its index, or -1. */
static int
cp_one_of(const cJSON *it, const char *const *names)
{
	size_t	 i;

	if (!cJSON_IsString(it) || it->valuestring == NULL)
		return -1;
	for (i = 0; names[i] != NULL; i++)
		if (strcmp(it->valuestring, names[i]) == 0)
			return (int)i;
	return -1;
}

/* What triggered a compaction: its index in compact_reasons, or -1. */
static int
cp_reason(const cJSON *obj, char *err, size_t errlen)
{
	int	 r;

	if ((r = cp_one_of(cJSON_GetObjectItemCaseSensitive(obj, "reason"),
	    compact_reasons)) == -1)
		body_fail(err, errlen, BODY_BAD, "reason is not manual, "
		    "threshold or overflow");
	return r;
}

/* Pi's AgentMessage list: objects whose role is a string. */
static enum body_err
cp_messages(const cJSON *it, const char *what, char *err, size_t errlen)
{
	const cJSON	*m, *role;
	size_t		 i = 0;

	if (!cJSON_IsArray(it))
		return body_fail(err, errlen, BODY_BAD, "%s is not an array",
		    what);
	cJSON_ArrayForEach(m, it) {
		role = cJSON_IsObject(m) ?
		    cJSON_GetObjectItemCaseSensitive(m, "role") : NULL;
		if (!cJSON_IsString(role))
			return body_fail(err, errlen, BODY_BAD, "%s.%zu is not "
			    "an object with a string role", what, i);
		i++;
	}
	return BODY_OK;
}

static enum body_err
cp_strings(const cJSON *it, const char *what, char *err, size_t errlen)
{
	const cJSON	*s;
	size_t		 i = 0;

	if (!cJSON_IsArray(it))
		return body_fail(err, errlen, BODY_BAD, "%s is not an array",
		    what);
	cJSON_ArrayForEach(s, it) {
		if (!cJSON_IsString(s))
			return body_fail(err, errlen, BODY_BAD, "%s.%zu is not "
			    "a string", what, i);
		i++;
	}
	return BODY_OK;
}

/* Every member of obj that is not one of the names goes. */
static void
cp_keep_only(cJSON *obj, const char *const *names)
{
	cJSON	*it, *next;
	size_t	 k;

	for (it = obj->child; it != NULL; it = next) {
		next = it->next;
		for (k = 0; names[k] != NULL; k++)
			if (it->string != NULL &&
			    strcmp(it->string, names[k]) == 0)
				break;
		if (names[k] == NULL)
			cJSON_Delete(cJSON_DetachItemViaPointer(obj, it));
	}
}

enum body_err
compact_check_request(const char *body, size_t len, struct compact_info *ci,
    cJSON **out, char *err, size_t errlen)
{
	static const char *const	 keys[] = {
		"reason", "tokensBefore", "firstKeptEntryId", "isSplitTurn",
		"messagesToSummarize", "turnPrefixMessages", "keptMessages",
		"previousSummary", "customInstructions", "readFiles",
		"modifiedFiles", NULL
	};
	const cJSON	*it;
	cJSON		*root;
	enum body_err	 e;
	int		 r;

	memset(ci, 0, sizeof(*ci));
	if (out != NULL)
		*out = NULL;
	if ((e = body_parse(body, len, &root, err, errlen)) != BODY_OK)
		return e;
	e = BODY_BAD;
	if (!cJSON_IsObject(root)) {
		body_fail(err, errlen, e, "compact request is not an object");
		goto done;
	}
	if ((r = cp_reason(root, err, errlen)) == -1)
		goto done;
	snprintf(ci->ci_reason, sizeof(ci->ci_reason), "%s",
	    compact_reasons[r]);
	if (cp_tokens(cJSON_GetObjectItemCaseSensitive(root, "tokensBefore"),
	    "tokensBefore", 0, &ci->ci_tokens_before, err, errlen) != BODY_OK)
		goto done;
	it = cJSON_GetObjectItemCaseSensitive(root, "firstKeptEntryId");
	if (cp_text(it, "firstKeptEntryId", 1, COMPACT_ENTRY_ID_MAX, err,
	    errlen) != BODY_OK)
		goto done;
	snprintf(ci->ci_first_kept, sizeof(ci->ci_first_kept), "%s",
	    it->valuestring);
	if (cp_bool(cJSON_GetObjectItemCaseSensitive(root, "isSplitTurn"),
	    "isSplitTurn", err, errlen) != BODY_OK ||
	    cp_messages(cJSON_GetObjectItemCaseSensitive(root,
	    "messagesToSummarize"), "messagesToSummarize", err, errlen) !=
	    BODY_OK ||
	    cp_messages(cJSON_GetObjectItemCaseSensitive(root,
	    "turnPrefixMessages"), "turnPrefixMessages", err, errlen) !=
	    BODY_OK ||
	    cp_messages(cJSON_GetObjectItemCaseSensitive(root,
	    "keptMessages"), "keptMessages", err, errlen) != BODY_OK ||
	    cp_strings(cJSON_GetObjectItemCaseSensitive(root, "readFiles"),
	    "readFiles", err, errlen) != BODY_OK ||
	    cp_strings(cJSON_GetObjectItemCaseSensitive(root,
	    "modifiedFiles"), "modifiedFiles", err, errlen) != BODY_OK)
		goto done;
	if (((it = cJSON_GetObjectItemCaseSensitive(root,
	    "previousSummary")) != NULL && !cJSON_IsString(it)) ||
	    ((it = cJSON_GetObjectItemCaseSensitive(root,
	    "customInstructions")) != NULL && !cJSON_IsString(it))) {
		body_fail(err, errlen, e, "previousSummary and "
		    "customInstructions are strings when given");
		goto done;
	}
	e = BODY_OK;
	body_fail(err, errlen, e, "ok");
	if (out != NULL) {
		cp_keep_only(root, keys);
		*out = root;
		root = NULL;
	}
 done:
	cJSON_Delete(root);
	if (e != BODY_OK)
		memset(ci, 0, sizeof(*ci));
	return e;
}

enum body_err
compact_build_answer(const cJSON *c, const struct compact_info *ci,
    const char *engine, char **json, int64_t *after, char *err,
    size_t errlen)
{
	const cJSON	*summary, *first, *details;
	cJSON		*res, *comp, *d;
	uint64_t	 before = 0, est = 0;
	int		 have_est;

	*json = NULL;
	*after = -1;
	if (!cJSON_IsObject(c))
		return body_fail(err, errlen, BODY_BAD, "the compaction is not "
		    "an object");
	summary = cJSON_GetObjectItemCaseSensitive(c, "summary");
	if (!cJSON_IsString(summary) || summary->valuestring[0] == '\0')
		return body_fail(err, errlen, BODY_BAD, "summary is not a "
		    "non-empty string");
	first = cJSON_GetObjectItemCaseSensitive(c, "firstKeptEntryId");
	if (!cJSON_IsString(first) ||
	    strcmp(first->valuestring, ci->ci_first_kept) != 0)
		return body_fail(err, errlen, BODY_BAD,
		    "firstKeptEntryId is not the request's");
	if (cp_tokens(cJSON_GetObjectItemCaseSensitive(c, "tokensBefore"),
	    "tokensBefore", 0, &before, err, errlen) != BODY_OK)
		return BODY_BAD;
	have_est = cJSON_GetObjectItemCaseSensitive(c,
	    "estimatedTokensAfter") != NULL;
	if (cp_tokens(cJSON_GetObjectItemCaseSensitive(c,
	    "estimatedTokensAfter"), "estimatedTokensAfter", 1, &est, err,
	    errlen) != BODY_OK)
		return BODY_BAD;
	details = cJSON_GetObjectItemCaseSensitive(c, "details");
	if (details != NULL && !cJSON_IsObject(details))
		return body_fail(err, errlen, BODY_BAD, "details is not an "
		    "object");
	if ((res = cJSON_CreateObject()) == NULL ||
	    cJSON_AddTrueToObject(res, "ok") == NULL ||
	    (comp = cJSON_AddObjectToObject(res, "compaction")) == NULL ||
	    cJSON_AddStringToObject(comp, "summary", summary->valuestring) ==
	    NULL || cJSON_AddStringToObject(comp, "firstKeptEntryId",
	    ci->ci_first_kept) == NULL ||
	    cJSON_AddNumberToObject(comp, "tokensBefore", (double)before) ==
	    NULL || (have_est && cJSON_AddNumberToObject(comp,
	    "estimatedTokensAfter", (double)est) == NULL))
		goto nomem;
	/* The host's engine, whatever the compactor wrote there. */
	d = details != NULL ? cJSON_Duplicate(details, 1) :
	    cJSON_CreateObject();
	if (d == NULL)
		goto nomem;
	cJSON_DeleteItemFromObjectCaseSensitive(d, "engine");
	if (cJSON_AddStringToObject(d, "engine", engine) == NULL) {
		cJSON_Delete(d);
		goto nomem;
	}
	cJSON_AddItemToObject(comp, "details", d);
	if ((*json = body_print(res)) == NULL)
		goto nomem;
	cJSON_Delete(res);
	if (have_est)
		*after = (int64_t)est;
	body_fail(err, errlen, BODY_OK, "ok");
	return BODY_OK;
 nomem:
	cJSON_Delete(res);
	return body_fail(err, errlen, BODY_NOMEM, "out of memory");
}

char *
compact_fallback_json(const char *reason)
{
	cJSON	*r;
	char	*s;

	if ((r = cJSON_CreateObject()) == NULL ||
	    cJSON_AddFalseToObject(r, "ok") == NULL ||
	    cJSON_AddStringToObject(r, "fallback", reason) == NULL) {
		cJSON_Delete(r);
		return NULL;
	}
	s = body_print(r);
	cJSON_Delete(r);
	return s;
}

/* The head of a string, at most max chars, cut between characters. */
static void
cp_head(char *dst, size_t dstlen, const char *s, size_t max)
{
	size_t	 i = 0, units = 0, n;

	while (s[i] != '\0' && units < max) {
		n = ((unsigned char)s[i] < 0x80) ? 1 :
		    ((unsigned char)s[i] < 0xe0) ? 2 :
		    ((unsigned char)s[i] < 0xf0) ? 3 : 4;
		units += n == 4 ? 2 : 1;
		if (units > max)
			break;
		i += n;
	}
	if (i >= dstlen)
		i = dstlen - 1;
	/* never half a character */
	while (i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	memcpy(dst, s, i);
	dst[i] = '\0';
}

enum body_err
compact_check_report(const char *body, size_t len, char *line,
    size_t linelen, char *err, size_t errlen)
{
	static const char *const	 engines[] = { "extension", "pi",
		NULL };
	static const char *const	 types[] = { "bypass", "end", NULL };
	const cJSON	*it, *eng, *error;
	cJSON		*root;
	enum body_err	 e;
	uint64_t	 before = 0, tafter, next;
	char		 head[UTF8_BYTES_MAX(COMPACT_LOG_TEXT_MAX) + 1];
	char		 nums[128];
	int		 r, off;

	if (line != NULL && linelen > 0)
		line[0] = '\0';
	if (len > COMPACT_REPORT_BODY_MAX)
		return body_fail(err, errlen, BODY_BAD, "report body over %u "
		    "bytes", COMPACT_REPORT_BODY_MAX);
	if ((e = body_parse(body, len, &root, err, errlen)) != BODY_OK)
		return e;
	e = BODY_BAD;
	if (!cJSON_IsObject(root) || (r = cp_one_of(
	    cJSON_GetObjectItemCaseSensitive(root, "type"), types)) == -1) {
		body_fail(err, errlen, e, "report is not an object of type "
		    "bypass or end");
		goto done;
	}
	if (r == 0) {
		it = cJSON_GetObjectItemCaseSensitive(root, "reason");
		if (cp_text(it, "reason", 0, COMPACT_BYPASS_REASON_MAX, err,
		    errlen) != BODY_OK || cp_tokens(
		    cJSON_GetObjectItemCaseSensitive(root, "tokensBefore"),
		    "tokensBefore", 0, &before, err, errlen) != BODY_OK)
			goto done;
		cp_head(head, sizeof(head), it->valuestring,
		    COMPACT_LOG_TEXT_MAX);
		if (line != NULL)
			snprintf(line, linelen, "compaction skips the host "
			    "compactor for Pi's summary (tokensBefore %llu): "
			    "%s", (unsigned long long)before, head);
		e = BODY_OK;
		goto done;
	}
	if ((r = cp_reason(root, err, errlen)) == -1)
		goto done;
	eng = cJSON_GetObjectItemCaseSensitive(root, "engine");
	error = cJSON_GetObjectItemCaseSensitive(root, "error");
	before = tafter = next = UINT64_MAX;
	if (cp_bool(cJSON_GetObjectItemCaseSensitive(root, "aborted"),
	    "aborted", err, errlen) != BODY_OK ||
	    cp_bool(cJSON_GetObjectItemCaseSensitive(root, "willRetry"),
	    "willRetry", err, errlen) != BODY_OK ||
	    cp_tokens(cJSON_GetObjectItemCaseSensitive(root, "tokensBefore"),
	    "tokensBefore", 1, &before, err, errlen) != BODY_OK ||
	    cp_tokens(cJSON_GetObjectItemCaseSensitive(root, "tokensAfter"),
	    "tokensAfter", 1, &tafter, err, errlen) != BODY_OK ||
	    cp_tokens(cJSON_GetObjectItemCaseSensitive(root,
	    "nextCompactionAt"), "nextCompactionAt", 1, &next, err,
	    errlen) != BODY_OK)
		goto done;
	if (eng != NULL && cp_one_of(eng, engines) == -1) {
		body_fail(err, errlen, e, "engine is not extension or pi");
		goto done;
	}
	if (error != NULL && cp_text(error, "error", 0, COMPACT_ERROR_MAX,
	    err, errlen) != BODY_OK)
		goto done;
	e = BODY_OK;
	if (line == NULL)
		goto done;
	/* The trigger as the host's own sessions log it. */
	off = snprintf(nums, sizeof(nums), "trigger %s",
	    r == 0 ? "self" : compact_reasons[r]);
	if (before != UINT64_MAX)
		off += snprintf(nums + off, sizeof(nums) - off,
		    ", tokensBefore %llu", (unsigned long long)before);
	if (eng == NULL) {
		cp_head(head, sizeof(head), error != NULL ?
		    error->valuestring : "", COMPACT_LOG_TEXT_MAX);
		snprintf(line, linelen, "compaction failed (%s, aborted %s, "
		    "willRetry %s)%s%s", nums, cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(root, "aborted")) ?
		    "true" : "false", cJSON_IsTrue(
		    cJSON_GetObjectItemCaseSensitive(root, "willRetry")) ?
		    "true" : "false", error != NULL ? ": " : "", head);
		goto done;
	}
	if (tafter != UINT64_MAX)
		off += snprintf(nums + off, sizeof(nums) - off,
		    ", tokensAfter %llu", (unsigned long long)tafter);
	if (next != UINT64_MAX)
		snprintf(nums + off, sizeof(nums) - off,
		    ", nextCompactionAt %llu", (unsigned long long)next);
	snprintf(line, linelen, "conversation compacted (engine %s, %s)",
	    eng->valuestring, nums);
 done:
	if (e == BODY_OK)
		body_fail(err, errlen, e, "ok");
	else if (line != NULL && linelen > 0)
		line[0] = '\0';
	cJSON_Delete(root);
	return e;
}
