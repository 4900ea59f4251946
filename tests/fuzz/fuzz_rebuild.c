/*
 * The model-request and MCP rebuilds on any body, at every thinking level,
 * for messages and count_tokens, at both ends of maxOutputTokens.  What is
 * accepted must parse, hold only the fields PROTOCOL.md 5 allows, and be a
 * fixed point: rebuilding the output gives the output back, byte for byte.
 * What is refused must leave a message that makes a valid error body.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "limits.h"
#include "rebuild.h"
#include "validate.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

#define MODEL	"fuzz-model"

static const char *const allowed_tools[] = { "search", "fetch" };

static const char *const fields_messages[] = {
	"model", "messages", "system", "tools", "tool_choice", "thinking",
	"output_config", "max_tokens", "stream", "temperature", "top_p",
	"top_k", "stop_sequences"
};
/* count_tokens keeps the first six only. */
#define FIELDS_COUNT_TOKENS	6

static int
field_allowed(const char *key, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (strcmp(key, fields_messages[i]) == 0)
			return 1;
	return 0;
}

/* A refusal's message: NUL-terminated UTF-8, and a parsing error body. */
static void
check_refusal(const char *err, size_t errlen)
{
	cJSON	*o;
	char	*body;
	size_t	 len = 0;

	CHECK(memchr(err, '\0', errlen) != NULL);
	CHECK(err[0] != '\0');
	CHECK(utf8_text_check(err, strlen(err), SIZE_MAX) == 0);
	body = rebuild_error_body(err, &len);
	CHECK(body != NULL && strlen(body) == len);
	o = cJSON_Parse(body);
	CHECK(o != NULL);
	CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItem(o,
	    "error"), "message")->valuestring, err) == 0);
	cJSON_Delete(o);
	free(body);
}

static void
check_model_output(const char *out, const struct rebuild_params *p)
{
	cJSON		*o, *c, *mt;
	uint64_t	 max_output;

	o = cJSON_Parse(out);
	CHECK(o != NULL && cJSON_IsObject(o));
	for (c = o->child; c != NULL; c = c->next)
		CHECK(field_allowed(c->string, p->count_tokens ?
		    FIELDS_COUNT_TOKENS : sizeof(fields_messages) /
		    sizeof(fields_messages[0])));
	c = cJSON_GetObjectItemCaseSensitive(o, "model");
	CHECK(cJSON_IsString(c) && strcmp(c->valuestring, MODEL) == 0);
	CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(o, "messages")));
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o,
	    "messages")) <= (int)MODEL_MESSAGES_MAX);
	mt = cJSON_GetObjectItemCaseSensitive(o, "max_tokens");
	if (p->count_tokens)
		CHECK(mt == NULL);
	else {
		max_output = p->max_output_tokens == 0 ?
		    MAX_OUTPUT_TOKENS_DEFAULT : p->max_output_tokens;
		CHECK(cJSON_IsNumber(mt) && mt->valuedouble >= 1 &&
		    mt->valuedouble <= (double)max_output);
	}
	c = cJSON_GetObjectItemCaseSensitive(o, "stream");
	CHECK(c == NULL || cJSON_IsTrue(c));
	cJSON_Delete(o);
}

static void
fuzz_model(const char *body, size_t size, const struct rebuild_params *p)
{
	char	 err[256], *out = NULL, *again = NULL;
	size_t	 outlen = 0, againlen = 0;
	int	 r;

	r = rebuild_model_request(body, size, p, &out, &outlen, err,
	    sizeof(err));
	if (r != 0) {
		CHECK(r == -1 && out == NULL);
		check_refusal(err, sizeof(err));
		return;
	}
	CHECK(out != NULL && strlen(out) == outlen);
	check_model_output(out, p);
	r = rebuild_model_request(out, outlen, p, &again, &againlen, err,
	    sizeof(err));
	CHECK(r == 0);
	CHECK(againlen == outlen && memcmp(again, out, outlen) == 0);
	free(again);
	free(out);
}

static void
fuzz_mcp(const char *body, size_t size, int startup)
{
	char	 err[256], *out = NULL, *again = NULL;
	size_t	 outlen = 0, againlen = 0;
	cJSON	*o, *m;
	int	 r;

	r = rebuild_mcp_request(body, size, allowed_tools, 2, startup, &out,
	    &outlen, err, sizeof(err));
	if (r != 0) {
		CHECK((r == REBUILD_MCP_REFUSED || r == REBUILD_MCP_INVALID) &&
		    out == NULL);
		check_refusal(err, sizeof(err));
		return;
	}
	CHECK(out != NULL && strlen(out) == outlen);
	o = cJSON_Parse(out);
	CHECK(o != NULL && cJSON_IsObject(o));
	m = cJSON_GetObjectItemCaseSensitive(o, "method");
	CHECK(cJSON_IsString(m));
	CHECK(!startup || strcmp(m->valuestring, "tools/call") != 0);
	cJSON_Delete(o);
	r = rebuild_mcp_request(out, outlen, allowed_tools, 2, startup, &again,
	    &againlen, err, sizeof(err));
	CHECK(r == 0);
	CHECK(againlen == outlen && memcmp(again, out, outlen) == 0);
	free(again);
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t	 max_outputs[] = {
		0, MAX_OUTPUT_TOKENS_MIN, MAX_OUTPUT_TOKENS_MAX
	};
	struct rebuild_params	 p;
	const char		*body = (const char *)data;
	size_t			 l, m;
	int			 ct;

	memset(&p, 0, sizeof(p));	/* free_body 0: the input is libFuzzer's */
	p.model = MODEL;
	for (l = LEVEL_LOW; l <= LEVEL_XHIGH; l++)
		for (ct = 0; ct <= 1; ct++)
			for (m = 0; m < sizeof(max_outputs) /
			    sizeof(max_outputs[0]); m++) {
				p.level = (enum rebuild_level)l;
				p.count_tokens = ct;
				p.max_output_tokens = max_outputs[m];
				fuzz_model(body, size, &p);
			}
	fuzz_mcp(body, size, 0);
	fuzz_mcp(body, size, 1);
	return 0;
}
