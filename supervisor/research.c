/*
 * Research jobs (DESIGN.md 9): research.run starts one sandboxed
 * rtsandbox-research process per job, answers its web_search requests
 * through the search.query hook of the client that started it, and hands
 * back its report.  A deadline over the whole job, at most max_jobs per
 * channel, and cancellation as for turns.
 */
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "control.h"
#include "limits.h"
#include "log.h"
#include "supervisor.h"
#include "validate.h"

struct research_job {
	TAILQ_ENTRY(research_job) rj_entry;
	uint64_t		 rj_id;		/* for the log */
	char			*rj_key;
	struct child		*rj_child;
	struct ctl_req		*rj_req;
	struct ctl_client	*rj_client;
	struct event		*rj_deadline;
	TAILQ_HEAD(, research_search) rj_searches;
	unsigned		 rj_nsearches;	/* in flight */
	uint64_t		 rj_searches_asked;	/* in all */
};

/* One web_search the job asked for, waiting for the client's hook. */
struct research_search {
	TAILQ_ENTRY(research_search) rs_entry;
	struct research_job	*rs_job;
	uint64_t		 rs_id;		/* the job's request id */
	struct ctl_call		*rs_call;
};

static TAILQ_HEAD(, research_job) jobs = TAILQ_HEAD_INITIALIZER(jobs);
static uint64_t			  research_next_id = 1;

struct ctl_client *
research_client(const struct child *c)
{
	struct research_job	*rj;

	TAILQ_FOREACH(rj, &jobs, rj_entry)
		if (rj->rj_child == c)
			return rj->rj_client;
	return NULL;
}

/* The jobs of a channel, or of all when key is NULL. */
static unsigned
research_count(const char *key)
{
	struct research_job	*rj;
	unsigned		 n = 0;

	TAILQ_FOREACH(rj, &jobs, rj_entry)
		if (key == NULL || strcmp(rj->rj_key, key) == 0)
			n++;
	return n;
}

static cJSON *
research_failure(const char *reason, const char *message)
{
	cJSON	*r;

	if ((r = cJSON_CreateObject()) == NULL ||
	    cJSON_AddFalseToObject(r, "ok") == NULL ||
	    cJSON_AddStringToObject(r, "reason", reason) == NULL ||
	    cJSON_AddStringToObject(r, "message", message) == NULL)
		fatalx("%s: out of memory", __func__);
	return r;
}

/* Answer the client (result may be NULL when nobody waits any more), stop
 * the process and forget the job. */
static void
research_end(struct research_job *rj, cJSON *result)
{
	struct research_search	*rs;

	if (rj->rj_req != NULL) {
		ctl_set_cancel(rj->rj_req, NULL, NULL);
		ctl_reply(rj->rj_req, result);
	} else
		cJSON_Delete(result);
	while ((rs = TAILQ_FIRST(&rj->rj_searches)) != NULL) {
		TAILQ_REMOVE(&rj->rj_searches, rs, rs_entry);
		if (rs->rs_call != NULL)
			ctl_call_withdraw(rs->rs_call);
		free(rs);
	}
	if (rj->rj_child != NULL)
		child_stop(rj->rj_child, NULL, NULL);
	TAILQ_REMOVE(&jobs, rj, rj_entry);
	event_free(rj->rj_deadline);
	free(rj->rj_key);
	free(rj);
}

static void
research_deadline(evutil_socket_t fd, short ev, void *arg)
{
	struct research_job	*rj = arg;

	log_warnx("channel %s: research job %llu ran out of time", rj->rj_key,
	    (unsigned long long)rj->rj_id);
	sv->sv_count.sc_failures++;
	research_end(rj, research_failure("timeout",
	    "the worker ran out of time"));
}

static void
research_cancel_req(struct ctl_req *req, void *arg)
{
	struct research_job	*rj = arg;

	log_info("channel %s: research job %llu cancelled", rj->rj_key,
	    (unsigned long long)rj->rj_id);
	rj->rj_req = NULL;
	rj->rj_client = NULL;
	research_end(rj, NULL);
}

/* The process is ready, or went away before it reported. */
static void
research_child_event(struct child *c, int ready, void *arg)
{
	struct research_job	*rj = arg;
	char			 why[96];

	if (ready) {
		log_debug("channel %s: research job %llu running", rj->rj_key,
		    (unsigned long long)rj->rj_id);
		return;
	}
	rj->rj_child = NULL;
	sv->sv_count.sc_failures++;
	if (c->c_violation != VIOLATION_NONE) {
		snprintf(why, sizeof(why), "the research job broke a rule (%s) "
		    "and was stopped", violation_name(c->c_violation));
		research_end(rj, research_failure("failed", why));
	} else
		research_end(rj, research_failure("failed",
		    "the research job ended without a report"));
}

static void
research_search_answer(struct research_search *rs, int ok, const char *text,
    const char *error)
{
	struct research_job	*rj = rs->rs_job;
	struct msgb		 mb;

	msgb_init(&mb, MSG_RES_SEARCHED, rs->rs_id);
	msg_add_bool(&mb, "ok", ok);
	if (ok)
		msg_add_data(&mb, text, strlen(text));
	else
		msg_add_str(&mb, "error", error);
	if (rj->rj_child != NULL)
		child_send_msg(rj->rj_child, &mb);
	else
		msgb_free(&mb);
	TAILQ_REMOVE(&rj->rj_searches, rs, rs_entry);
	rj->rj_nsearches--;
	free(rs);
}

/* The client's search.query answer: {text}, at most
 * RESEARCH_SEARCH_TEXT_MAX chars; anything else is an error for the model. */
static void
research_search_done(cJSON *result, enum ctl_call_end end, void *arg)
{
	struct research_search	*rs = arg;
	const cJSON		*text;

	rs->rs_call = NULL;
	if (result == NULL) {
		log_info("channel %s: search.query failed: %s",
		    rs->rs_job->rj_key, ctl_call_end_to_string(end));
		research_search_answer(rs, 0, NULL, "the search failed");
		return;
	}
	text = cJSON_GetObjectItemCaseSensitive(result, "text");
	if (!cJSON_IsObject(result) || cJSON_GetArraySize(result) != 1 ||
	    !cJSON_IsString(text) || utf8_text_check(text->valuestring,
	    strlen(text->valuestring), RESEARCH_SEARCH_TEXT_MAX) == -1) {
		log_warnx("channel %s: search.query answered something other "
		    "than {text} of at most %u chars", rs->rs_job->rj_key,
		    RESEARCH_SEARCH_TEXT_MAX);
		research_search_answer(rs, 0, NULL,
		    "the search answered nothing usable");
		return;
	}
	research_search_answer(rs, 1, text->valuestring, NULL);
}

/*
 * A web_search of the job, for the client's search.query hook.  A job runs
 * at most one answer's tool calls at once, and every step's in all; past
 * either it was taken over, and is stopped before the client is asked
 * (DESIGN.md 1, invariants 6 and 7).
 */
static int
research_search(struct research_job *rj, struct child *c, struct msg *m)
{
	struct research_search	*rs;
	const char		*query;
	cJSON			*p;

	if (msg_get_str(m, "query", UTF8_BYTES_MAX(RESEARCH_QUERY_MAX),
	    &query) == -1 || msg_end(m) == -1)
		return -1;
	if (utf8_text_check(query, strlen(query), RESEARCH_QUERY_MAX) == -1 ||
	    query[0] == '\0')
		return -1;
	if (rj->rj_nsearches >= RESEARCH_CALLS_MAX) {
		child_violation(c, VIOLATION_IN_FLIGHT, "more web searches in "
		    "flight than one answer runs");
		return 0;
	}
	if (++rj->rj_searches_asked > RESEARCH_TOOL_CALLS_MAX) {
		child_violation(c, VIOLATION_BUDGET, "more web searches than a "
		    "research job makes");
		return 0;
	}
	if ((rs = calloc(1, sizeof(*rs))) == NULL)
		fatal("%s", __func__);
	rs->rs_job = rj;
	rs->rs_id = m->m_id;
	TAILQ_INSERT_TAIL(&rj->rj_searches, rs, rs_entry);
	rj->rj_nsearches++;
	if (rj->rj_client == NULL ||
	    (ctl_client_hooks(rj->rj_client) & HOOK_SEARCH_QUERY) == 0) {
		research_search_answer(rs, 0, NULL,
		    "web_search is not available");
		return 0;
	}
	if ((p = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(p, "channel", rj->rj_key) == NULL ||
	    cJSON_AddStringToObject(p, "query", query) == NULL)
		fatalx("%s: out of memory", __func__);
	if ((rs->rs_call = ctl_client_call(rj->rj_client, "search.query", p,
	    research_search_done, rs)) == NULL)
		research_search_answer(rs, 0, NULL,
		    "web_search is not available");
	return 0;
}

static int
research_report(struct research_job *rj, struct msg *m)
{
	const uint8_t	*data;
	const char	*error = NULL;
	size_t		 len;
	int		 ok;
	cJSON		*r;
	char		*report;

	if (msg_get_bool(m, "ok", &ok) == -1 ||
	    (!ok && msg_get_str(m, "error", 1024, &error) == -1) ||
	    msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1)
		return -1;
	if (!ok) {
		log_warnx("channel %s: research job %llu failed: %s",
		    rj->rj_key, (unsigned long long)rj->rj_id, error);
		sv->sv_count.sc_failures++;
		research_end(rj, research_failure("failed", error));
		return 0;
	}
	/* The report came from the network by way of a model: checked as
	 * text of at most 80 000 chars before the client sees it. */
	if (len == 0 || utf8_text_check((const char *)data, len,
	    RESEARCH_REPORT_MAX) == -1)
		return -1;
	if ((report = malloc(len + 1)) == NULL)
		fatal("%s", __func__);
	memcpy(report, data, len);
	report[len] = '\0';
	if ((r = cJSON_CreateObject()) == NULL ||
	    cJSON_AddTrueToObject(r, "ok") == NULL ||
	    cJSON_AddStringToObject(r, "report", report) == NULL)
		fatalx("%s: out of memory", __func__);
	free(report);
	log_info("channel %s: research job %llu reported %zu bytes",
	    rj->rj_key, (unsigned long long)rj->rj_id, len);
	research_end(rj, r);
	return 0;
}

static int
research_child_msg(struct child *c, struct msg *m, void *arg)
{
	struct research_job	*rj = arg;

	switch (m->m_type) {
	case MSG_RES_SEARCH:
		return research_search(rj, c, m);
	case MSG_RES_REPORT:
		return research_report(rj, m);
	default:
		return -1;
	}
}

/* The task without leading and trailing white space, malloc'd. */
static char *
research_trim(const char *s)
{
	size_t	 len;
	char	*t;

	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	len = strlen(s);
	while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t' ||
	    s[len - 1] == '\n' || s[len - 1] == '\r'))
		len--;
	if ((t = strndup(s, len)) == NULL)
		fatal("%s", __func__);
	return t;
}

void
method_research_run(struct ctl_req *req, cJSON *params)
{
	static const char *const allowed[] = { "channel", "author", "task",
	    "thinking", NULL };
	const struct config	*conf = sv->sv_conf;
	const char		*key, *thinking, *aid, *aname;
	const cJSON		*author;
	struct research_job	*rj;
	struct msgb		*mb;
	struct timeval		 tv;
	char			 seg[SEGMENT_MAX + 1], *task;
	unsigned		 running;

	if (ctl_params_only(req, params, allowed) == -1)
		return;
	key = ctl_str_param(params, "channel");
	if (key == NULL || channel_segment(key, strlen(key), seg,
	    sizeof(seg)) == -1) {
		ctl_reply(req, research_failure("invalid", "channel must be 1 "
		    "to 256 chars of valid UTF-8"));
		return;
	}
	author = cJSON_GetObjectItemCaseSensitive(params, "author");
	aid = cJSON_IsObject(author) ? ctl_str_param(author, "id") : NULL;
	aname = cJSON_IsObject(author) ? ctl_str_param(author, "name") : NULL;
	if (aid == NULL || aname == NULL || cJSON_GetArraySize(author) != 2 ||
	    utf8_text_check(aid, strlen(aid), AUTHOR_FIELD_MAX) == -1 ||
	    utf8_text_check(aname, strlen(aname), AUTHOR_FIELD_MAX) == -1 ||
	    aid[0] == '\0' || aname[0] == '\0') {
		ctl_reply(req, research_failure("invalid", "author must be "
		    "{id, name}, each 1 to 256 chars"));
		return;
	}
	thinking = ctl_str_param(params, "thinking");
	if (cJSON_GetObjectItemCaseSensitive(params, "thinking") != NULL &&
	    (thinking == NULL || !valid_thinking(thinking, strlen(thinking)))) {
		ctl_reply(req, research_failure("invalid",
		    "thinking must be low, medium, high or xhigh"));
		return;
	}
	if (ctl_str_param(params, "task") == NULL) {
		ctl_reply(req, research_failure("invalid",
		    "task must be a string"));
		return;
	}
	task = research_trim(ctl_str_param(params, "task"));
	if (task[0] == '\0' || utf8_text_check(task, strlen(task),
	    RESEARCH_TASK_MAX) == -1) {
		free(task);
		ctl_reply(req, research_failure("invalid", "task must be 1 to "
		    "4000 chars of valid UTF-8 after trimming"));
		return;
	}
	if (conf->research_model == NULL) {
		free(task);
		ctl_reply(req, research_failure("invalid",
		    "no model is configured for research"));
		return;
	}
	if ((running = research_count(key)) >= conf->research_max_jobs) {
		free(task);
		ctl_reply(req, research_failure("busy", running == 1 ?
		    "the channel runs a research job already" :
		    "the channel runs as many research jobs as it may"));
		return;
	}

	if ((rj = calloc(1, sizeof(*rj))) == NULL ||
	    (rj->rj_key = strdup(key)) == NULL ||
	    (mb = calloc(1, sizeof(*mb))) == NULL)
		fatal("%s", __func__);
	TAILQ_INIT(&rj->rj_searches);
	rj->rj_id = research_next_id++;
	rj->rj_req = req;
	rj->rj_client = ctl_req_client(req);
	TAILQ_INSERT_TAIL(&jobs, rj, rj_entry);
	ctl_set_cancel(req, research_cancel_req, rj);
	tv.tv_sec = conf->research_deadline_ms / 1000;
	tv.tv_usec = (conf->research_deadline_ms % 1000) * 1000;
	if ((rj->rj_deadline = evtimer_new(sv->sv_base, research_deadline,
	    rj)) == NULL || evtimer_add(rj->rj_deadline, &tv) == -1)
		fatalx("%s: timer", __func__);

	msgb_init(mb, MSG_CONFIG_RESEARCH, 0);
	msg_add_str(mb, "channel", key);
	msg_add_str(mb, "model", conf->research_model);
	msg_add_str(mb, "task", task);
	msg_add_str(mb, "author_id", aid);
	msg_add_str(mb, "author_name", aname);
	if (thinking != NULL)
		msg_add_str(mb, "thinking", thinking);
	msg_add_uint(mb, "max_output_tokens", conf->max_output_tokens);
	msg_add_bool(mb, "search", (ctl_client_hooks(rj->rj_client) &
	    HOOK_SEARCH_QUERY) != 0);
	free(task);
	log_info("channel %s: research job %llu started", key,
	    (unsigned long long)rj->rj_id);
	rj->rj_child = child_research_start(key, seg, thinking, mb,
	    research_child_event, research_child_msg, rj);
}

void
method_research_cancel(struct ctl_req *req, cJSON *params)
{
	const char		*key = ctl_str_param(params, "channel");
	struct research_job	*rj, *next;
	uint64_t		 n = 0;
	cJSON			*res;

	if (key == NULL || cJSON_GetArraySize(params) != 1) {
		ctl_error(req, RPC_INVALID_PARAMS, "Invalid params: "
		    "research.cancel needs {\"channel\": key}");
		return;
	}
	for (rj = TAILQ_FIRST(&jobs); rj != NULL; rj = next) {
		next = TAILQ_NEXT(rj, rj_entry);
		if (strcmp(rj->rj_key, key) != 0)
			continue;
		log_info("channel %s: research job %llu cancelled", key,
		    (unsigned long long)rj->rj_id);
		research_end(rj, research_failure("cancelled",
		    "the research job was cancelled"));
		n++;
	}
	if ((res = cJSON_CreateObject()) == NULL ||
	    cJSON_AddNumberToObject(res, "cancelled", (double)n) == NULL)
		fatalx("%s: out of memory", __func__);
	ctl_reply(req, res);
}

uint64_t
research_running(void)
{
	return research_count(NULL);
}
