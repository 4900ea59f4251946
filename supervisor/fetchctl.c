/*
 * The controlled fetch for the host application (rtsandbox-protocol(7)):
 * fetch.get fetches a public URL through egress, every hop vetted and
 * pinned, the body bounded; fetch.check resolves and vets a URL's
 * addresses only.  What PiSandboxRuntime 0.7.3's safeFetch and
 * assertPublicUrl did in the bot's own process, done where the network is.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "control.h"
#include "limits.h"
#include "log.h"
#include "supervisor.h"
#include "validate.h"

struct fetch_job {
	struct ctl_req	*fj_req;	/* NULL once the client let go */
	int		 fj_check;
};

static void
fetchctl_cancel(struct ctl_req *req, void *arg)
{
	struct fetch_job	*fj = arg;

	/* The fetch in flight finishes; its answer goes nowhere. */
	fj->fj_req = NULL;
}

static void
fetchctl_failed(struct fetch_job *fj, const char *kind, const char *error)
{
	cJSON	*r;

	if ((r = cJSON_CreateObject()) == NULL ||
	    cJSON_AddFalseToObject(r, "ok") == NULL ||
	    cJSON_AddStringToObject(r, "kind", kind) == NULL ||
	    cJSON_AddStringToObject(r, "error", error) == NULL)
		fatalx("%s: out of memory", __func__);
	ctl_reply(fj->fj_req, r);
}

static void
fetchctl_done(struct child *c, struct msg *m, void *arg)
{
	struct fetch_job	*fj = arg;
	const char		*url, *ctype = NULL, *loc = NULL, *error;
	const char		*kind = "failed";
	const uint8_t		*data;
	size_t			 len;
	uint64_t		 status = 0;
	int			 ok, has_status = 0;
	char			*b64;
	cJSON			*r;

	if (fj->fj_req == NULL)
		goto out;
	ctl_set_cancel(fj->fj_req, NULL, NULL);
	if (m == NULL || m->m_type == MSG_ERROR) {
		fetchctl_failed(fj, "failed", "egress stopped before it "
		    "answered");
		goto out;
	}
	if (msg_get_bool(m, "ok", &ok) == -1)
		goto bad;
	if (!ok) {
		if (msg_get_str(m, "error", 1024, &error) == -1 ||
		    msg_get_str_opt(m, "kind", 16, &kind) == -1 ||
		    msg_end(m) == -1)
			goto bad;
		fetchctl_failed(fj, kind != NULL ? kind : "failed", error);
		goto out;
	}
	if (msg_get_uint_opt(m, "status", 100, 599, &status, &has_status) ==
	    -1 ||
	    msg_get_str(m, "url", URL_BYTES_MAX * 3, &url) == -1 ||
	    msg_get_str_opt(m, "content_type", 1024, &ctype) == -1 ||
	    msg_get_str_opt(m, "location", URL_BYTES_MAX * 3, &loc) == -1 ||
	    msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1 ||
	    has_status == fj->fj_check || len > FETCH_BYTES_MAX)
		goto bad;
	if ((r = cJSON_CreateObject()) == NULL ||
	    cJSON_AddTrueToObject(r, "ok") == NULL ||
	    cJSON_AddStringToObject(r, "url", url) == NULL)
		fatalx("%s: out of memory", __func__);
	if (!fj->fj_check) {
		if ((b64 = malloc(b64_encoded_len(len) + 1)) == NULL)
			fatal("%s", __func__);
		b64_encode(data, len, b64, b64_encoded_len(len) + 1);
		cJSON_AddNumberToObject(r, "status", (double)status);
		if (ctype != NULL)
			cJSON_AddStringToObject(r, "contentType", ctype);
		cJSON_AddNumberToObject(r, "contentLength", (double)len);
		if (loc != NULL)
			cJSON_AddStringToObject(r, "location", loc);
		if (cJSON_AddStringToObject(r, "data", b64) == NULL)
			fatalx("%s: out of memory", __func__);
		free(b64);
	}
	ctl_reply(fj->fj_req, r);
	goto out;
 bad:
	log_warnx("fetch: egress answered %s", m->m_err[0] ? m->m_err :
	    "out of bounds");
	fetchctl_failed(fj, "failed", "egress answered something unreadable");
 out:
	free(fj);
}

/* An optional integer parameter in [min, max], def when absent. */
static int
fetchctl_uint(struct ctl_req *req, const cJSON *params, const char *key,
    uint64_t min, uint64_t max, uint64_t def, uint64_t *out)
{
	const cJSON	*it = cJSON_GetObjectItemCaseSensitive(params, key);

	*out = def;
	if (it == NULL)
		return 0;
	if (!cJSON_IsNumber(it) || it->valuedouble != (double)(uint64_t)
	    it->valuedouble || it->valuedouble < (double)min ||
	    it->valuedouble > (double)max) {
		ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: %s must "
		    "be an integer from %llu to %llu", key,
		    (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = (uint64_t)it->valuedouble;
	return 0;
}

static void
fetchctl_start(struct ctl_req *req, const char *url, uint64_t deadline,
    uint64_t max_bytes, uint64_t redirects, int check)
{
	struct fetch_job	*fj;
	struct child		*eg;
	struct msgb		 mb;

	if ((fj = calloc(1, sizeof(*fj))) == NULL)
		fatal("%s", __func__);
	fj->fj_req = req;
	fj->fj_check = check;
	msgb_init(&mb, MSG_EGR_FETCH, 0);
	msg_add_str(&mb, "url", url);
	msg_add_uint(&mb, "deadline_ms", deadline);
	msg_add_uint(&mb, "max_bytes", max_bytes);
	msg_add_uint(&mb, "max_redirects", redirects);
	if (check)
		msg_add_bool(&mb, "check", 1);
	ctl_set_cancel(req, fetchctl_cancel, fj);
	if ((eg = child_singleton(PROC_EGRESS)) == NULL ||
	    child_request(eg, &mb, fetchctl_done, fj) == -1) {
		if (eg == NULL)
			msgb_free(&mb);
		ctl_set_cancel(req, NULL, NULL);
		ctl_error(req, RPC_APP_ERROR, "egress is not running");
		free(fj);
	}
}

static const char *
fetchctl_url(struct ctl_req *req, const cJSON *params)
{
	const cJSON	*u = cJSON_GetObjectItemCaseSensitive(params, "url");

	if (!cJSON_IsString(u) || u->valuestring[0] == '\0' ||
	    strlen(u->valuestring) > URL_BYTES_MAX) {
		ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: url must "
		    "be a string of 1 to %u bytes", URL_BYTES_MAX);
		return NULL;
	}
	return u->valuestring;
}

void
method_fetch_get(struct ctl_req *req, cJSON *params)
{
	static const char *const allowed[] = { "url", "timeoutMs",
	    "maxBytes", "maxRedirects", "followRedirects", NULL };
	const cJSON	*fr;
	const char	*url;
	uint64_t	 deadline, max_bytes, redirects;

	if (ctl_params_only(req, params, allowed) == -1 ||
	    (url = fetchctl_url(req, params)) == NULL ||
	    fetchctl_uint(req, params, "timeoutMs", FETCH_DEADLINE_MS_MIN,
	    FETCH_DEADLINE_MS_MAX, FETCH_DEADLINE_MS_DEFAULT, &deadline) ==
	    -1 ||
	    fetchctl_uint(req, params, "maxBytes", FETCH_BYTES_MIN,
	    FETCH_BYTES_MAX, FETCH_BYTES_DEFAULT, &max_bytes) == -1 ||
	    fetchctl_uint(req, params, "maxRedirects", FETCH_REDIRECTS_MIN,
	    FETCH_REDIRECTS_MAX, FETCH_REDIRECTS_DEFAULT, &redirects) == -1)
		return;
	fr = cJSON_GetObjectItemCaseSensitive(params, "followRedirects");
	if (fr != NULL && !cJSON_IsBool(fr)) {
		ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: "
		    "followRedirects must be true or false");
		return;
	}
	/* With redirects off, the 3xx is the answer, with its location. */
	if (cJSON_IsFalse(fr))
		redirects = 0;
	fetchctl_start(req, url, deadline, max_bytes, redirects, 0);
}

void
method_fetch_check(struct ctl_req *req, cJSON *params)
{
	static const char *const allowed[] = { "url", NULL };
	const char	*url;

	if (ctl_params_only(req, params, allowed) == -1 ||
	    (url = fetchctl_url(req, params)) == NULL)
		return;
	fetchctl_start(req, url, FETCH_DEADLINE_MS_DEFAULT, FETCH_BYTES_MIN,
	    0, 1);
}
