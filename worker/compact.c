/*
 * The reference worker's compaction (rtsandbox-protocol(7), contracts
 * 0.7.10 and 0.7.12).  At start it asks GET /worker/config whether the
 * host has a compactor.  Its turns keep no history, so nothing grows past
 * a threshold; a guest compacts by hand, as with Pi's /compact: the turn's
 * conversation goes to POST /compaction/compact (reason "manual", any text
 * after the command as the custom instructions), the reply says what the
 * host answered, and POST /compaction/report says how it ended.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"
#include "whttp.h"
#include "wjson.h"
#include "wlog.h"

#define COMPACT_TIMEOUT_MS	600000
#define CONFIG_TIMEOUT_MS	5000
#define SMALL_MAX		(1u * W_MIB)
/* What the host answers: a summary of up to the whole conversation. */
#define ANSWER_MAX		W_ANSWER_BODY_MAX
/* "an engine of 1 to 100 of [a-zA-Z0-9@/._-]" */
#define ENGINE_MAX		100u

void
compact_config(struct agent_config *cfg)
{
	struct whttp_response	 resp;
	struct wjson		*root;
	const char		*engine;
	enum whttp_err		 e;
	size_t			 len;

	cfg->ac_compactor[0] = '\0';
	e = whttp_call(cfg->ac_socket, "GET", "/worker/config", NULL, 0,
	    CONFIG_TIMEOUT_MS, SMALL_MAX, &resp);
	if (e != WHTTP_OK)
		wlog("worker/config: %s", whttp_err_to_string(e));
	else if (resp.ws_status == 404)
		;	/* a broker of 0.7.3: no host compactor */
	else if (resp.ws_status != 200)
		wlog("worker/config: HTTP %d", resp.ws_status);
	else {
		root = wjson_parse(resp.ws_body.b_data, resp.ws_body.b_len,
		    NULL, NULL);
		engine = wjson_get_str(wjson_get(root, "compaction"), "engine",
		    &len);
		if (engine != NULL && len > 0 && len <= ENGINE_MAX &&
		    memchr(engine, '\0', len) == NULL)
			snprintf(cfg->ac_compactor, sizeof(cfg->ac_compactor),
			    "%.*s", (int)len, engine);
		else if (wjson_get(root, "compaction") != NULL)
			wlog("worker/config: malformed answer");
		wjson_free(root);
	}
	whttp_response_free(&resp);
	wlog("compaction: %s%s", cfg->ac_compactor[0] != '\0' ?
	    "host compactor " : "no host compactor",
	    cfg->ac_compactor);
}

int
compact_command(const char *text, size_t len)
{
	return len >= 8 && memcmp(text, "/compact", 8) == 0 &&
	    (len == 8 || text[8] == ' ');
}

/* The report of how it ended; its status changes nothing. */
static void
report(const struct agent_config *cfg, long long tokens,
    const struct wjson *compaction, const char *error)
{
	struct whttp_response	 resp;
	struct wjson		*r;
	long long		 after;
	char			*body;
	size_t			 len;

	r = wjson_object();
	wjson_set(r, "type", wjson_string("end"));
	wjson_set(r, "reason", wjson_string("manual"));
	wjson_set(r, "aborted", wjson_bool(0));
	wjson_set(r, "willRetry", wjson_bool(0));
	if (compaction != NULL) {
		wjson_set(r, "engine", wjson_string("extension"));
		wjson_set(r, "tokensBefore", wjson_int(tokens));
		if (wjson_int_value(wjson_get(compaction,
		    "estimatedTokensAfter"), &after) == 0 && after >= 0)
			wjson_set(r, "tokensAfter", wjson_int(after));
	} else
		wjson_set(r, "error", wjson_string_len(error,
		    wjson_utf8_cut(error, strlen(error), 10000)));
	body = wjson_emit_str(r, SMALL_MAX, &len);
	wjson_free(r);
	if (body == NULL)
		return;
	if (whttp_call(cfg->ac_socket, "POST", "/compaction/report", body, len,
	    CONFIG_TIMEOUT_MS, SMALL_MAX, &resp) == WHTTP_OK &&
	    resp.ws_status != 200)
		wlog("compaction/report: HTTP %d", resp.ws_status);
	whttp_response_free(&resp);
	free(body);
}

char *
compact_turn(const struct agent_config *cfg, const char *turn_id,
    const struct wjson *first, const char *text, size_t textlen,
    size_t *lenp, char *err, size_t errlen)
{
	struct whttp_response	 resp;
	struct wjson		*req, *msgs, *files, *ans, *comp;
	const char		*summary, *why;
	long long		 tokens;
	char			*body, *out = NULL;
	size_t			 len, slen, wlen;
	enum whttp_err		 e;
	struct wbuf		 b;

	if (cfg->ac_compactor[0] == '\0') {
		static const char none[] = "No host compactor: this worker "
		    "keeps no history to compact";

		if ((out = strdup(none)) == NULL)
			snprintf(err, errlen, "out of memory");
		*lenp = sizeof(none) - 1;
		return out;
	}
	/* The conversation to summarize: this turn's message. */
	req = wjson_object();
	msgs = wjson_array();
	wjson_append(msgs, wjson_copy(first));
	body = wjson_emit_str(msgs, W_REQUEST_BODY_MAX, &len);
	free(body);
	tokens = (long long)(len / 4);
	wjson_set(req, "reason", wjson_string("manual"));
	wjson_set(req, "tokensBefore", wjson_int(tokens));
	wjson_set(req, "firstKeptEntryId", wjson_string(turn_id));
	wjson_set(req, "isSplitTurn", wjson_bool(0));
	wjson_set(req, "messagesToSummarize", msgs);
	wjson_set(req, "turnPrefixMessages", wjson_array());
	wjson_set(req, "keptMessages", wjson_array());
	if (textlen > 9)
		wjson_set(req, "customInstructions", wjson_string_len(text + 9,
		    textlen - 9));
	files = wjson_array();
	wjson_set(req, "readFiles", files);
	wjson_set(req, "modifiedFiles", wjson_array());
	body = wjson_emit_str(req, W_REQUEST_BODY_MAX, &len);
	wjson_free(req);
	if (body == NULL) {
		snprintf(err, errlen, "the compact request could not be "
		    "encoded");
		return NULL;
	}
	e = whttp_call(cfg->ac_socket, "POST", "/compaction/compact", body, len,
	    COMPACT_TIMEOUT_MS, ANSWER_MAX, &resp);
	free(body);
	if (e != WHTTP_OK || resp.ws_status != 200) {
		if (e != WHTTP_OK)
			snprintf(err, errlen, "compaction/compact: %s",
			    whttp_err_to_string(e));
		else
			snprintf(err, errlen, "compaction/compact: HTTP %d",
			    resp.ws_status);
		whttp_response_free(&resp);
		report(cfg, tokens, NULL, err);
		return NULL;
	}
	ans = wjson_parse(resp.ws_body.b_data, resp.ws_body.b_len, NULL,
	    NULL);
	whttp_response_free(&resp);
	comp = wjson_get(ans, "compaction");
	summary = wjson_get_str(comp, "summary", &slen);
	wbuf_init(&b, 0);
	if (summary != NULL && slen > 0) {
		wbuf_addf(&b, "Compacted by %s: ", cfg->ac_compactor);
		wbuf_add(&b, summary, slen);
		report(cfg, tokens, comp, NULL);
	} else if ((why = wjson_get_str(ans, "fallback", &wlen)) != NULL) {
		/* Pi would summarize on its own; a turn of one message has
		 * nothing more to keep. */
		snprintf(err, errlen, "the host compactor fell back: %.*s",
		    (int)wjson_utf8_cut(why, wlen, 1000), why);
		wbuf_addstr(&b, "Compaction fell back: ");
		wbuf_add(&b, why, wlen);
		report(cfg, tokens, NULL, err);
		err[0] = '\0';
	} else {
		snprintf(err, errlen, "compaction/compact: malformed answer");
		report(cfg, tokens, NULL, err);
		wjson_free(ans);
		wbuf_free(&b);
		return NULL;
	}
	wjson_free(ans);
	if (b.b_err != 0) {
		snprintf(err, errlen, "out of memory");
		wbuf_free(&b);
		return NULL;
	}
	out = wbuf_steal(&b, lenp);
	return out;
}
