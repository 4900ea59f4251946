/*
 * common/compaction.c on the worker's bytes: the compact request, the
 * report, and the same bytes as a compactor's answer.  What is accepted
 * must say what the contract allows, what the compactor sees must pass
 * the check again unchanged, the answer must hold the request's entry and
 * the host's engine, and a refusal must leave nothing behind.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "compaction.h"
#include "limits.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)
#define LOG_LINE_MAX_FUZZ	4096

static const char *const allowed[] = {
	"reason", "tokensBefore", "firstKeptEntryId", "isSplitTurn",
	"messagesToSummarize", "turnPrefixMessages", "keptMessages",
	"previousSummary", "customInstructions", "readFiles",
	"modifiedFiles", NULL
};

static void
request(const char *s, size_t len)
{
	struct compact_info	 ci, ci2;
	const cJSON		*it;
	cJSON			*out;
	char			 err[256], *again;
	size_t			 k;

	if (compact_check_request(s, len, &ci, &out, err, sizeof(err)) !=
	    BODY_OK) {
		CHECK(out == NULL);
		CHECK(ci.ci_first_kept[0] == '\0');
		return;
	}
	CHECK(strcmp(ci.ci_reason, "manual") == 0 ||
	    strcmp(ci.ci_reason, "threshold") == 0 ||
	    strcmp(ci.ci_reason, "overflow") == 0);
	CHECK(ci.ci_first_kept[0] != '\0');
	CHECK(ci.ci_tokens_before <= COMPACT_TOKENS_MAX);
	for (it = out->child; it != NULL; it = it->next) {
		for (k = 0; allowed[k] != NULL; k++)
			if (strcmp(it->string, allowed[k]) == 0)
				break;
		CHECK(allowed[k] != NULL);
	}
	again = body_print(out);
	CHECK(again != NULL);
	CHECK(compact_check_request(again, strlen(again), &ci2, NULL, err,
	    sizeof(err)) == BODY_OK);
	CHECK(memcmp(&ci, &ci2, sizeof(ci)) == 0);
	cJSON_free(again);
	cJSON_Delete(out);
}

static void
answer(const char *s, size_t len)
{
	static const struct compact_info ci = { "manual", 7, "entry-1" };
	cJSON		*c, *r, *comp, *d;
	char		 err[256], *json;
	int64_t		 after;

	if (body_parse(s, len, &c, err, sizeof(err)) != BODY_OK)
		return;
	if (compact_build_answer(c, &ci, "engine/x", &json, &after, err,
	    sizeof(err)) != BODY_OK) {
		CHECK(json == NULL);
		cJSON_Delete(c);
		return;
	}
	cJSON_Delete(c);
	CHECK(after >= -1);
	r = cJSON_Parse(json);
	CHECK(r != NULL);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "ok")));
	comp = cJSON_GetObjectItemCaseSensitive(r, "compaction");
	CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(comp,
	    "firstKeptEntryId")->valuestring, "entry-1") == 0);
	CHECK(cJSON_GetObjectItemCaseSensitive(comp,
	    "summary")->valuestring[0] != '\0');
	d = cJSON_GetObjectItemCaseSensitive(comp, "details");
	CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(d,
	    "engine")->valuestring, "engine/x") == 0);
	cJSON_Delete(r);
	cJSON_free(json);
}

static void
report(const char *s, size_t len)
{
	char	 line[LOG_LINE_MAX_FUZZ], err[256];

	if (compact_check_report(s, len, line, sizeof(line), err,
	    sizeof(err)) == BODY_OK) {
		CHECK(len <= COMPACT_REPORT_BODY_MAX);
		CHECK(line[0] != '\0');
		CHECK(strlen(line) < sizeof(line));
	} else
		CHECK(line[0] == '\0');
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*s = (const char *)data;

	request(s, size);
	answer(s, size);
	report(s, size);
	return 0;
}
