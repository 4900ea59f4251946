/*
 * attachments.fetch: download a chat message's attachments (and those of
 * the message it answers) with egress's controlled fetch and write them
 * through the file guard's exclusive no-follow write, one after another.
 * Declared sizes are checked before anything is downloaded; the bounds are
 * 20 candidates, 25 MiB each and 50 MiB in all.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "attname.h"
#include "control.h"
#include "limits.h"
#include "log.h"
#include "supervisor.h"
#include "validate.h"

/* Internal: a candidate's name as the chat gave it, and its content type. */
#define ATTACH_GIVEN_NAME_MAX	1024u
#define ATTACH_TYPE_MAX		256u

struct attach_item {
	char		*ai_url;
	char		*ai_name;	/* as given */
	uint64_t	 ai_size;	/* declared */
	int		 ai_has_size;
	int		 ai_ref;	/* from the referenced message */
	unsigned	 ai_index;	/* within its message */
};

struct attach_job {
	struct ctl_req		*aj_req;	/* NULL once cancelled */
	char			*aj_key;
	char			*aj_message_id;
	struct attach_item	 aj_items[ATTACH_CANDIDATES_MAX];
	size_t			 aj_n;
	size_t			 aj_pos;	/* the item being worked on */
	uint64_t		 aj_total;	/* bytes saved so far */
	char			 aj_file[SAFE_NAME_MAX + 1];
	uint64_t		 aj_file_len;
	cJSON			*aj_saved;
	cJSON			*aj_failed;
};

static void	attach_next(struct attach_job *);

static void
attach_free(struct attach_job *aj)
{
	size_t	 i;

	for (i = 0; i < aj->aj_n; i++) {
		free(aj->aj_items[i].ai_url);
		free(aj->aj_items[i].ai_name);
	}
	cJSON_Delete(aj->aj_saved);
	cJSON_Delete(aj->aj_failed);
	free(aj->aj_key);
	free(aj->aj_message_id);
	free(aj);
}

static void
attach_cancel_req(struct ctl_req *req, void *arg)
{
	struct attach_job	*aj = arg;

	/* The download in flight finishes; nothing after it starts. */
	log_info("channel %s: attachments.fetch cancelled", aj->aj_key);
	aj->aj_req = NULL;
}

static cJSON *
attach_entry(const struct attach_item *ai)
{
	cJSON	*e;

	if ((e = cJSON_CreateObject()) == NULL ||
	    cJSON_AddNumberToObject(e, "index", ai->ai_index) == NULL ||
	    cJSON_AddBoolToObject(e, "reference", ai->ai_ref) == NULL)
		fatalx("%s: out of memory", __func__);
	return e;
}

static void
attach_failed(struct attach_job *aj, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The current item failed; go on with the next. */
static void
attach_failed(struct attach_job *aj, const char *fmt, ...)
{
	struct attach_item	*ai = &aj->aj_items[aj->aj_pos];
	cJSON			*e;
	va_list			 ap;
	char			 why[512];

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	log_info("channel %s: attachment %s%u of message %s: %s", aj->aj_key,
	    ai->ai_ref ? "ref-" : "", ai->ai_index, aj->aj_message_id, why);
	e = attach_entry(ai);
	if (cJSON_AddStringToObject(e, "name", ai->ai_name) == NULL ||
	    cJSON_AddStringToObject(e, "reason", why) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddItemToArray(aj->aj_failed, e);
	aj->aj_pos++;
	attach_next(aj);
}

static void
attach_written(struct child *c, struct msg *m, void *arg)
{
	struct attach_job	*aj = arg;
	struct attach_item	*ai = &aj->aj_items[aj->aj_pos];
	const char		*e = "the file guard stopped before it answered";
	cJSON			*ent;

	if (m == NULL || m->m_type == MSG_ERROR) {
		if (m != NULL && (msg_get_str(m, "error", 512, &e) == -1 ||
		    msg_end(m) == -1))
			e = "unreadable error";
		attach_failed(aj, "cannot save %s: %s", aj->aj_file, e);
		return;
	}
	if (msg_end(m) == -1) {
		attach_failed(aj, "cannot save %s: %s", aj->aj_file, m->m_err);
		return;
	}
	aj->aj_total += aj->aj_file_len;
	log_info("channel %s: attachment %s saved, %llu bytes", aj->aj_key,
	    aj->aj_file, (unsigned long long)aj->aj_file_len);
	ent = attach_entry(ai);
	if (cJSON_AddStringToObject(ent, "name", ai->ai_name) == NULL ||
	    cJSON_AddStringToObject(ent, "file", aj->aj_file) == NULL ||
	    cJSON_AddNumberToObject(ent, "size", (double)aj->aj_file_len) ==
	    NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddItemToArray(aj->aj_saved, ent);
	aj->aj_pos++;
	attach_next(aj);
}

static void
attach_fetched(struct child *c, struct msg *m, void *arg)
{
	struct attach_job	*aj = arg;
	struct attach_item	*ai = &aj->aj_items[aj->aj_pos];
	const char		*e = "egress stopped before it answered";
	const char		*url, *ctype, *loc, *error, *kind;
	const uint8_t		*data;
	size_t			 len;
	uint64_t		 status = 0;
	struct child		*fg;
	struct msgb		 mb;
	int			 ok;

	if (m == NULL || m->m_type == MSG_ERROR) {
		if (m != NULL && (msg_get_str(m, "error", 512, &e) == -1 ||
		    msg_end(m) == -1))
			e = "unreadable error";
		attach_failed(aj, "%s", e);
		return;
	}
	if (msg_get_bool(m, "ok", &ok) == -1)
		goto bad;
	if (!ok) {
		if (msg_get_str(m, "error", 1024, &error) == -1 ||
		    msg_get_str_opt(m, "kind", 16, &kind) == -1 ||
		    msg_end(m) == -1)
			goto bad;
		attach_failed(aj, "%s", error);
		return;
	}
	if (msg_get_uint(m, "status", 100, 599, &status) == -1 ||
	    msg_get_str(m, "url", URL_BYTES_MAX * 3, &url) == -1 ||
	    msg_get_str_opt(m, "content_type", 1024, &ctype) == -1 ||
	    msg_get_str_opt(m, "location", URL_BYTES_MAX * 3, &loc) == -1 ||
	    msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1)
		goto bad;
	if (status < 200 || status > 299) {
		attach_failed(aj, "HTTP status %llu",
		    (unsigned long long)status);
		return;
	}
	if (len > ATTACH_FILE_BYTES_MAX ||
	    aj->aj_total + len > ATTACH_TOTAL_BYTES_MAX) {
		attach_failed(aj, "egress answered more than was asked");
		return;
	}
	if (attname_make(aj->aj_message_id, ai->ai_ref, ai->ai_index,
	    ai->ai_name, strlen(ai->ai_name), aj->aj_file,
	    sizeof(aj->aj_file)) == -1) {
		attach_failed(aj, "no file name can be made from the name");
		return;
	}
	aj->aj_file_len = len;
	msgb_init(&mb, MSG_FSG_ATTACH, 0);
	msg_add_str(&mb, "channel", aj->aj_key);
	msg_add_str(&mb, "name", aj->aj_file);
	msg_add_data(&mb, data, len);
	if ((fg = child_singleton(PROC_FSGUARD)) == NULL ||
	    child_request(fg, &mb, attach_written, aj) == -1) {
		if (fg == NULL)
			msgb_free(&mb);
		attach_failed(aj, "the file guard is not running");
	}
	return;
 bad:
	log_warnx("channel %s: egress answered a fetch badly: %s", aj->aj_key,
	    m->m_err);
	attach_failed(aj, "internal error");
}

static void
attach_finish(struct attach_job *aj)
{
	cJSON	*res;

	if (aj->aj_req != NULL) {
		ctl_set_cancel(aj->aj_req, NULL, NULL);
		if ((res = cJSON_CreateObject()) == NULL)
			fatalx("%s: out of memory", __func__);
		cJSON_AddItemToObject(res, "saved", aj->aj_saved);
		cJSON_AddItemToObject(res, "failed", aj->aj_failed);
		aj->aj_saved = aj->aj_failed = NULL;
		ctl_reply(aj->aj_req, res);
	}
	attach_free(aj);
}

static void
attach_next(struct attach_job *aj)
{
	struct attach_item	*ai;
	struct child		*eg;
	struct msgb		 mb;
	uint64_t		 left;

	if (aj->aj_pos == aj->aj_n || aj->aj_req == NULL) {
		attach_finish(aj);
		return;
	}
	ai = &aj->aj_items[aj->aj_pos];
	left = ATTACH_TOTAL_BYTES_MAX - aj->aj_total;
	/* Declared sizes are checked before downloading. */
	if (ai->ai_has_size && ai->ai_size > ATTACH_FILE_BYTES_MAX) {
		attach_failed(aj, "declared size %llu is over the limit of %u "
		    "bytes", (unsigned long long)ai->ai_size,
		    ATTACH_FILE_BYTES_MAX);
		return;
	}
	if (ai->ai_has_size && ai->ai_size > left) {
		attach_failed(aj, "declared size %llu is over the %llu bytes "
		    "left of the %u in all", (unsigned long long)ai->ai_size,
		    (unsigned long long)left, ATTACH_TOTAL_BYTES_MAX);
		return;
	}
	if (left == 0) {
		attach_failed(aj, "the %u bytes in all are used up",
		    ATTACH_TOTAL_BYTES_MAX);
		return;
	}
	msgb_init(&mb, MSG_EGR_FETCH, 0);
	msg_add_str(&mb, "url", ai->ai_url);
	msg_add_uint(&mb, "deadline_ms", FETCH_DEADLINE_MS_DEFAULT);
	msg_add_uint(&mb, "max_bytes", left < ATTACH_FILE_BYTES_MAX ? left :
	    ATTACH_FILE_BYTES_MAX);
	msg_add_uint(&mb, "max_redirects", FETCH_REDIRECTS_DEFAULT);
	if ((eg = child_singleton(PROC_EGRESS)) == NULL ||
	    child_request(eg, &mb, attach_fetched, aj) == -1) {
		if (eg == NULL)
			msgb_free(&mb);
		attach_failed(aj, "egress is not running");
	}
}

/* The channel's attachments/ is there (and repaired) before any write. */
static void
attach_prepared(struct child *c, struct msg *m, void *arg)
{
	struct attach_job	*aj = arg;
	const char		*e = "the file guard stopped before it answered";

	if (m == NULL || m->m_type == MSG_ERROR) {
		if (m != NULL && (msg_get_str(m, "error", 512, &e) == -1 ||
		    msg_end(m) == -1))
			e = "unreadable error";
		if (aj->aj_req != NULL) {
			ctl_set_cancel(aj->aj_req, NULL, NULL);
			ctl_error(aj->aj_req, RPC_APP_ERROR,
			    "cannot prepare the channel: %s", e);
			aj->aj_req = NULL;
		}
		attach_free(aj);
		return;
	}
	attach_next(aj);
}

static int
attach_items(struct ctl_req *req, struct attach_job *aj, const cJSON *arr,
    int ref)
{
	static const char *const fields[] = { "url", "name", "size",
	    "contentType", NULL };
	const char *const	*f;
	const cJSON		*it, *url, *name, *size, *ctype, *k;
	const char		*what = ref ? "reference.attachments" :
				    "attachments";
	struct attach_item	*ai;
	unsigned		 index = 0;

	if (!cJSON_IsArray(arr)) {
		ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: %s must "
		    "be an array", what);
		return -1;
	}
	cJSON_ArrayForEach(it, arr) {
		if (aj->aj_n == ATTACH_CANDIDATES_MAX) {
			ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: at "
			    "most %u attachments in all", ATTACH_CANDIDATES_MAX);
			return -1;
		}
		if (!cJSON_IsObject(it)) {
			ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: "
			    "%s.%u must be an object", what, index);
			return -1;
		}
		cJSON_ArrayForEach(k, it) {
			for (f = fields; *f != NULL; f++)
				if (strcmp(k->string, *f) == 0)
					break;
			if (*f == NULL) {
				ctl_error(req, RPC_INVALID_PARAMS, "Invalid "
				    "params: %s.%u: unknown field \"%.64s\"",
				    what, index, k->string);
				return -1;
			}
		}
		url = cJSON_GetObjectItemCaseSensitive(it, "url");
		name = cJSON_GetObjectItemCaseSensitive(it, "name");
		size = cJSON_GetObjectItemCaseSensitive(it, "size");
		ctype = cJSON_GetObjectItemCaseSensitive(it, "contentType");
		if (!cJSON_IsString(url) || url->valuestring[0] == '\0' ||
		    utf8_text_check(url->valuestring,
		    strlen(url->valuestring), URL_BYTES_MAX) == -1) {
			ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: "
			    "%s.%u.url must be a string of 1 to %u chars",
			    what, index, URL_BYTES_MAX);
			return -1;
		}
		if (!cJSON_IsString(name) || utf8_text_check(name->valuestring,
		    strlen(name->valuestring), ATTACH_GIVEN_NAME_MAX) == -1) {
			ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: "
			    "%s.%u.name must be a string of at most %u chars",
			    what, index, ATTACH_GIVEN_NAME_MAX);
			return -1;
		}
		if (size != NULL && (!cJSON_IsNumber(size) ||
		    size->valuedouble < 0 || size->valuedouble > 9.0e15 ||
		    (double)(uint64_t)size->valuedouble !=
		    size->valuedouble)) {
			ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: "
			    "%s.%u.size must be a whole number of bytes",
			    what, index);
			return -1;
		}
		if (ctype != NULL && (!cJSON_IsString(ctype) ||
		    utf8_text_check(ctype->valuestring,
		    strlen(ctype->valuestring), ATTACH_TYPE_MAX) == -1)) {
			ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: "
			    "%s.%u.contentType must be a string of at most %u "
			    "chars", what, index, ATTACH_TYPE_MAX);
			return -1;
		}
		ai = &aj->aj_items[aj->aj_n++];
		if ((ai->ai_url = strdup(url->valuestring)) == NULL ||
		    (ai->ai_name = strdup(name->valuestring)) == NULL)
			fatal("%s", __func__);
		ai->ai_has_size = size != NULL;
		ai->ai_size = size != NULL ? (uint64_t)size->valuedouble : 0;
		ai->ai_ref = ref;
		ai->ai_index = index++;
	}
	return 0;
}

void
method_attachments_fetch(struct ctl_req *req, cJSON *params)
{
	static const char *const allowed[] = { "channel", "messageId",
	    "attachments", "reference", NULL };
	const cJSON		*key, *mid, *ref, *refatt;
	struct attach_job	*aj;
	struct child		*fg;
	struct msgb		 mb;
	char			 seg[SEGMENT_MAX + 1];

	if (ctl_params_only(req, params, allowed) == -1)
		return;
	key = cJSON_GetObjectItemCaseSensitive(params, "channel");
	mid = cJSON_GetObjectItemCaseSensitive(params, "messageId");
	ref = cJSON_GetObjectItemCaseSensitive(params, "reference");
	if (!cJSON_IsString(key) || channel_segment(key->valuestring,
	    strlen(key->valuestring), seg, sizeof(seg)) == -1) {
		ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: channel "
		    "must be 1 to 256 chars of valid UTF-8");
		return;
	}
	if (!cJSON_IsString(mid) || !attname_message_id_valid(mid->valuestring,
	    strlen(mid->valuestring))) {
		ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: messageId "
		    "must be 1 to %u chars of A-Z a-z 0-9 _ -",
		    ATTACH_MESSAGE_ID_MAX);
		return;
	}
	refatt = NULL;
	if (ref != NULL) {
		refatt = cJSON_GetObjectItemCaseSensitive(ref, "attachments");
		if (!cJSON_IsObject(ref) || refatt == NULL ||
		    cJSON_GetArraySize(ref) != 1) {
			ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: "
			    "reference must be {\"attachments\": [...]}");
			return;
		}
	}
	if ((aj = calloc(1, sizeof(*aj))) == NULL ||
	    (aj->aj_key = strdup(key->valuestring)) == NULL ||
	    (aj->aj_message_id = strdup(mid->valuestring)) == NULL ||
	    (aj->aj_saved = cJSON_CreateArray()) == NULL ||
	    (aj->aj_failed = cJSON_CreateArray()) == NULL)
		fatal("%s", __func__);
	if (attach_items(req, aj, cJSON_GetObjectItemCaseSensitive(params,
	    "attachments"), 0) == -1 ||
	    (refatt != NULL && attach_items(req, aj, refatt, 1) == -1)) {
		attach_free(aj);
		return;
	}
	aj->aj_req = req;
	ctl_set_cancel(req, attach_cancel_req, aj);
	msgb_init(&mb, MSG_FSG_PREPARE, 0);
	msg_add_str(&mb, "channel", aj->aj_key);
	if ((fg = child_singleton(PROC_FSGUARD)) == NULL ||
	    child_request(fg, &mb, attach_prepared, aj) == -1) {
		if (fg == NULL)
			msgb_free(&mb);
		ctl_set_cancel(req, NULL, NULL);
		ctl_error(req, RPC_APP_ERROR, "the file guard is not running");
		attach_free(aj);
	}
}
