/*
 * What a research job reads from the network: fetched bodies through
 * text_extract() as HTML (in several character sets), PDF, plain text and
 * sniffed, the HTML guard alone, and model answers through
 * agent_answer_parse() and a step of the conversation.  The first byte
 * picks the path.  The text must be valid UTF-8 without NUL within its
 * bound; an answer that parses must give a request that parses.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "agent.h"
#include "limits.h"
#include "text.h"
#include "textint.h"
#include "validate.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

/* Small enough that the cut is reached often. */
#define FUZZ_UNITS	2000

static const char *const ctypes[] = {
	"text/html",
	"text/html; charset=windows-1251",
	"text/html; charset=shift_jis",
	"text/html; charset=utf-16be",
	"application/pdf",
	"text/plain; charset=iso-8859-1",
	"application/json",
	NULL,
	"application/octet-stream",
	"image/png",
};
#define NCTYPES	(sizeof(ctypes) / sizeof(ctypes[0]))

static void
fuzz_extract(const uint8_t *data, size_t len, const char *ctype)
{
	struct text_out	 out;
	size_t		 units;

	CHECK(text_extract(data, len, ctype, "https://example.org/a/b", FUZZ_UNITS,
	    &out) == 0);
	CHECK(out.to_text != NULL);
	CHECK(strlen(out.to_text) == out.to_len);
	CHECK(utf8_utf16_len(out.to_text, out.to_len, &units) == 0);
	CHECK(units == out.to_units);
	CHECK(units <= FUZZ_UNITS);
	text_out_free(&out);
}

static void
fuzz_answer(const uint8_t *data, size_t len)
{
	struct agent_job	 job;
	struct agent_answer	 aa;
	struct agent		*ag;
	const char		*report;
	char			 err[256], type[80], *req;
	size_t			 i, rlen, units;
	cJSON			*parsed;

	agent_error_type((const char *)data, len, type, sizeof(type));
	CHECK(strlen(type) < sizeof(type));
	if (agent_answer_parse((const char *)data, len, &aa, err,
	    sizeof(err)) == -1) {
		CHECK(err[0] != '\0');
		CHECK(aa.aa_calls == NULL && aa.aa_content == NULL);
		return;
	}
	for (i = 0; i < aa.aa_ncalls; i++) {
		CHECK(aa.aa_calls[i].ac_id != NULL);
		CHECK(aa.aa_calls[i].ac_done ? aa.aa_calls[i].ac_result != NULL :
		    aa.aa_calls[i].ac_arg != NULL);
	}
	memset(&job, 0, sizeof(job));
	job.aj_model = "fuzz";
	job.aj_task = "task";
	job.aj_author_name = "";
	job.aj_thinking = len % 5;
	job.aj_max_output_tokens = MAX_OUTPUT_TOKENS_MIN + len;
	job.aj_search = len & 1;
	CHECK((ag = agent_new(&job)) != NULL);
	switch (agent_take_answer(ag, &aa, &report, &rlen, err, sizeof(err))) {
	case AGENT_NEXT_REPORT:
		CHECK(rlen > 0);
		CHECK(utf8_utf16_len(report, rlen, &units) == 0);
		CHECK(units <= RESEARCH_REPORT_MAX);
		break;
	case AGENT_NEXT_FAIL:
		CHECK(err[0] != '\0');
		break;
	case AGENT_NEXT_TOOLS:
		for (i = 0; i < aa.aa_ncalls; i++)
			if (!aa.aa_calls[i].ac_done) {
				CHECK((aa.aa_calls[i].ac_result =
				    strdup("result")) != NULL);
				aa.aa_calls[i].ac_done = 1;
			}
		CHECK(agent_results(ag, &aa) == 0);
		CHECK((req = agent_request_build(ag, &rlen)) != NULL);
		CHECK((parsed = cJSON_ParseWithLength(req, rlen)) != NULL);
		cJSON_Delete(parsed);
		free(req);
		break;
	}
	agent_answer_free(&aa);
	agent_free(ag);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static int	 init;
	unsigned	 sel;

	if (!init) {
		text_init();
		init = 1;
	}
	if (len == 0)
		return 0;
	sel = data[0];
	data++;
	len--;
	if (sel < 0x80)
		fuzz_extract(data, len, ctypes[sel % NCTYPES]);
	else if (sel < 0xc0)
		fuzz_answer(data, len);
	else {
		/* The guard alone, on any bytes. */
		CHECK(html_guard((const char *)data, len) <= len);
	}
	return 0;
}
