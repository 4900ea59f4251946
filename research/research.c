/*
 * A research job (see research.h): the agent loop of agent.c driven over
 * the two pipes the job holds.  Model calls and fetches go to egress, web
 * searches to the supervisor, and the report back to the supervisor.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "agent.h"
#include "limits.h"
#include "log.h"
#include "research.h"
#include "role.h"
#include "sandbox.h"
#include "text.h"
#include "validate.h"

/* Tool calls in flight at once. */
#define RESEARCH_TOOLS_INFLIGHT	4
/* Bytes acknowledged to egress in batches of half its window
 * (EGRESS_WINDOW, egress.c: 512 KiB), where egress resumes. */
#define RESEARCH_ACK_BATCH	(256u * 1024)
/* The waits before each try of a model call after the first. */
static const int	research_retry_s[RESEARCH_RETRIES] = { 2, 8 };
/* What a peer's error text may be. */
#define RESEARCH_ERROR_MAX	1000u
/* A content type from egress. */
#define RESEARCH_CTYPE_MAX	1024u
/* A URL from egress (canonical URLs are bounded by NV_URL_MAX). */
#define RESEARCH_FETCH_URL_MAX	16384u

struct research {
	struct event_base	*rs_base;
	struct role_parent	*rs_parent;
	struct frame_conn	*rs_egress;
	struct event		*rs_timer;

	/* CONFIG_RESEARCH */
	int			 rs_have_config;
	char			*rs_channel;
	char			*rs_model;
	char			*rs_task;
	char			*rs_author_id;
	char			*rs_author_name;
	enum agent_thinking	 rs_thinking;
	uint64_t		 rs_max_output_tokens;
	int			 rs_search;

	struct agent		*rs_agent;
	int			 rs_finished;

	/* the model call in flight (0: none) */
	uint64_t		 rs_call;
	uint64_t		 rs_next_call;
	uint64_t		 rs_status;
	int			 rs_head;
	char			*rs_body;
	size_t			 rs_body_len;
	uint64_t		 rs_unacked;
	unsigned		 rs_tries;

	/* the tool calls of the last answer */
	struct agent_answer	 rs_answer;
	int			 rs_have_answer;
	unsigned		 rs_inflight;
	uint64_t		 rs_next_req;
};

static void	research_step(struct research *);
static void	tools_run(struct research *);

/* Days since 1970-01-01 to a civil date (H. Hinnant's algorithm). */
void
research_date(long long secs, char out[11])
{
	long long	 z = secs / 86400, era, doe, yoe, y, doy, mp, d, m;
	char		 buf[64];

	if (secs < 0 && secs % 86400 != 0)
		z--;
	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	y = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	if (m <= 2)
		y++;
	if (y < 0 || y > 9999)
		y = 0;
	snprintf(buf, sizeof(buf), "%04lld-%02lld-%02lld", y, m, d);
	memcpy(out, buf, 10);
	out[10] = '\0';
}

/*
 * The end
 */

static void
research_exit_drained(struct frame_conn *fc, void *arg)
{
	log_debug("report written, exiting");
	exit(0);
}

/* Send the report (or why there is none) and exit once it is written. */
static void
research_finish(struct research *rs, const char *report, size_t len,
    const char *error)
{
	struct frame_conn	*fc = role_parent_conn(rs->rs_parent);
	struct msgb		 mb;

	if (rs->rs_finished)
		return;
	rs->rs_finished = 1;
	msgb_init(&mb, MSG_RES_REPORT, 0);
	msg_add_bool(&mb, "ok", error == NULL);
	if (error != NULL) {
		log_info("research failed after %u steps: %s",
		    rs->rs_agent != NULL ? agent_steps(rs->rs_agent) : 0,
		    error);
		msg_add_str(&mb, "error", error);
	} else {
		log_info("research done after %u steps: %zu bytes of report",
		    agent_steps(rs->rs_agent), len);
		msg_add_data(&mb, report, len);
	}
	role_send(rs->rs_parent, &mb);
	if (frame_conn_pending(fc) == 0)
		exit(0);
	frame_conn_set_drain_cb(fc, research_exit_drained, 1);
}

static void __attribute__((format(printf, 2, 3)))
research_fail(struct research *rs, const char *fmt, ...)
{
	char	 err[512];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(err, sizeof(err), fmt, ap);
	va_end(ap);
	research_finish(rs, NULL, 0, err);
}

/*
 * Model calls
 */

static void
egress_send(struct research *rs, struct msgb *mb)
{
	if (rs->rs_egress == NULL) {
		msgb_free(mb);
		return;
	}
	if (msg_send(rs->rs_egress, mb) == -1)
		fatalx("cannot queue a message for egress");
}

static void
model_call_reset(struct research *rs)
{
	rs->rs_call = 0;
	rs->rs_status = 0;
	rs->rs_head = 0;
	free(rs->rs_body);
	rs->rs_body = NULL;
	rs->rs_body_len = 0;
	rs->rs_unacked = 0;
}

static void
research_step(struct research *rs)
{
	static const char *const hn[] = { "content-type", "anthropic-version" };
	static const char *const hv[] = { "application/json", "2023-06-01" };
	struct msgb	 mb;
	char		*body;
	size_t		 len;

	if (rs->rs_finished)
		return;
	if ((body = agent_request_build(rs->rs_agent, &len)) == NULL)
		fatalx("%s: out of memory", __func__);
	model_call_reset(rs);
	rs->rs_call = ++rs->rs_next_call;
	log_debug("step %u: model call %llu, %zu bytes",
	    agent_steps(rs->rs_agent) + 1, (unsigned long long)rs->rs_call,
	    len);
	msgb_init(&mb, MSG_EGR_CALL, 0);
	msg_add_uint(&mb, "call", rs->rs_call);
	msg_add_str(&mb, "kind", "model");
	msg_add_str(&mb, "path", "/v1/messages");
	msg_add_strv(&mb, "hnames", hn, 2);
	msg_add_strv(&mb, "hvalues", hv, 2);
	msg_add_data(&mb, body, len);
	egress_send(rs, &mb);
	free(body);
}

static void
research_timer(evutil_socket_t fd, short ev, void *arg)
{
	research_step(arg);
}

/* Try the call again later, or give up with why. */
static void
model_retry_or_fail(struct research *rs, int retry, const char *why)
{
	struct timeval	 tv = { 0, 0 };

	model_call_reset(rs);
	if (!retry || rs->rs_tries >= RESEARCH_RETRIES) {
		research_fail(rs, "%s", why);
		return;
	}
	tv.tv_sec = research_retry_s[rs->rs_tries++];
	log_info("%s; trying again in %lld s", why, (long long)tv.tv_sec);
	evtimer_add(rs->rs_timer, &tv);
}

static void
model_answer(struct research *rs)
{
	const char	*report;
	char		 err[256], type[80];
	size_t		 len;

	if (rs->rs_status != 200) {
		agent_error_type(rs->rs_body, rs->rs_body_len, type,
		    sizeof(type));
		if (type[0] != '\0')
			snprintf(err, sizeof(err), "model call failed with "
			    "status %llu (%s)",
			    (unsigned long long)rs->rs_status, type);
		else
			snprintf(err, sizeof(err), "model call failed with "
			    "status %llu", (unsigned long long)rs->rs_status);
		/* Overloaded or unavailable is worth a wait; a refusal of
		 * the request or the account (4xx) is not. */
		model_retry_or_fail(rs, rs->rs_status == 503 ||
		    rs->rs_status == 529, err);
		return;
	}
	rs->rs_tries = 0;
	if (agent_answer_parse(rs->rs_body, rs->rs_body_len, &rs->rs_answer,
	    err, sizeof(err)) == -1) {
		model_call_reset(rs);
		research_fail(rs, "the model's answer could not be read: %s",
		    err);
		return;
	}
	model_call_reset(rs);
	rs->rs_have_answer = 1;
	switch (agent_take_answer(rs->rs_agent, &rs->rs_answer, &report, &len,
	    err, sizeof(err))) {
	case AGENT_NEXT_REPORT:
		research_finish(rs, report, len, NULL);
		break;
	case AGENT_NEXT_FAIL:
		research_fail(rs, "%s", err);
		break;
	case AGENT_NEXT_TOOLS:
		rs->rs_inflight = 0;
		tools_run(rs);
		break;
	}
}

static void
model_ack(struct research *rs)
{
	struct msgb	 mb;

	msgb_init(&mb, MSG_EGR_ACK, 0);
	msg_add_uint(&mb, "call", rs->rs_call);
	msg_add_uint(&mb, "bytes", rs->rs_unacked);
	rs->rs_unacked = 0;
	egress_send(rs, &mb);
}

static int
egress_head(struct research *rs, struct msg *m)
{
	const char	**hn, **hv;
	size_t		  n, nv;

	if (rs->rs_head ||
	    msg_get_uint(m, "status", UPSTREAM_STATUS_MIN, UPSTREAM_STATUS_MAX,
	    &rs->rs_status) == -1 ||
	    msg_get_strv(m, "hnames", 32, 128, &hn, &n) == -1 ||
	    msg_get_strv(m, "hvalues", 32, 1024, &hv, &nv) == -1 ||
	    msg_end(m) == -1 || n != nv)
		return -1;
	rs->rs_head = 1;
	return 0;
}

static int
egress_data(struct research *rs, struct msg *m)
{
	struct msgb	 mb;
	const uint8_t	*data;
	size_t		 len;
	char		*p;

	if (!rs->rs_head || msg_get_data(m, &data, &len) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if (rs->rs_body_len + len > AGENT_ANSWER_MAX) {
		msgb_init(&mb, MSG_EGR_CANCEL, 0);
		msg_add_uint(&mb, "call", rs->rs_call);
		egress_send(rs, &mb);
		model_call_reset(rs);
		research_fail(rs, "the model's answer is larger than %u bytes",
		    AGENT_ANSWER_MAX);
		return 0;
	}
	if ((p = realloc(rs->rs_body, rs->rs_body_len + len + 1)) == NULL)
		fatal("%s", __func__);
	memcpy(p + rs->rs_body_len, data, len);
	rs->rs_body = p;
	rs->rs_body_len += len;
	rs->rs_body[rs->rs_body_len] = '\0';
	rs->rs_unacked += len;
	if (rs->rs_unacked >= RESEARCH_ACK_BATCH)
		model_ack(rs);
	return 0;
}

static int
egress_end(struct research *rs, struct msg *m)
{
	const char	*err = NULL;
	uint64_t	 status = 502;
	char		 why[160];
	int		 ok, have;

	if (msg_get_bool(m, "ok", &ok) == -1 ||
	    msg_get_uint_opt(m, "status", 100, 599, &status, &have) == -1 ||
	    msg_get_str_opt(m, "error", 512, &err) == -1 || msg_end(m) == -1)
		return -1;
	if (ok) {
		if (!rs->rs_head)
			return -1;
		model_answer(rs);
		return 0;
	}
	/* Egress could not reach the model service or gave up on it. */
	if (err != NULL && strcmp(err, "upstream_refused") == 0)
		snprintf(why, sizeof(why), "model call failed with status "
		    "%llu (upstream refused)", (unsigned long long)status);
	else
		snprintf(why, sizeof(why), "model call failed with status "
		    "%llu", (unsigned long long)status);
	model_retry_or_fail(rs, 0, why);
	return 0;
}

/*
 * Tools
 */

static struct agent_call *
tool_find(struct research *rs, uint64_t req, enum agent_tool tool)
{
	size_t	 i;

	if (!rs->rs_have_answer)
		return NULL;
	for (i = 0; i < rs->rs_answer.aa_ncalls; i++)
		if (rs->rs_answer.aa_calls[i].ac_req == req &&
		    rs->rs_answer.aa_calls[i].ac_tool == tool &&
		    !rs->rs_answer.aa_calls[i].ac_done)
			return &rs->rs_answer.aa_calls[i];
	return NULL;
}

static void
tool_result(struct agent_call *ac, char *text, int is_error)
{
	free(ac->ac_result);
	ac->ac_result = text;
	ac->ac_is_error = is_error;
	ac->ac_done = 1;
	ac->ac_req = 0;
}

static void
tool_start(struct research *rs, struct agent_call *ac)
{
	struct msgb	 mb;

	ac->ac_req = ++rs->rs_next_req;
	rs->rs_inflight++;
	if (ac->ac_tool == AGENT_TOOL_WEB_SEARCH) {
		log_debug("web_search %llu", (unsigned long long)ac->ac_req);
		msgb_init(&mb, MSG_RES_SEARCH, ac->ac_req);
		msg_add_str(&mb, "query", ac->ac_arg);
		role_send(rs->rs_parent, &mb);
	} else {
		log_debug("fetch_content %llu", (unsigned long long)ac->ac_req);
		msgb_init(&mb, MSG_EGR_FETCH, ac->ac_req);
		msg_add_str(&mb, "url", ac->ac_arg);
		msg_add_uint(&mb, "deadline_ms", FETCH_DEADLINE_MS_DEFAULT);
		msg_add_uint(&mb, "max_bytes", FETCH_BYTES_DEFAULT);
		msg_add_uint(&mb, "max_redirects", FETCH_REDIRECTS_DEFAULT);
		egress_send(rs, &mb);
	}
}

/* Start what may start; once every call is done, the next step. */
static void
tools_run(struct research *rs)
{
	struct agent_answer	*aa = &rs->rs_answer;
	size_t			 i, done = 0;

	for (i = 0; i < aa->aa_ncalls; i++) {
		if (aa->aa_calls[i].ac_done) {
			done++;
			continue;
		}
		if (aa->aa_calls[i].ac_req == 0 &&
		    rs->rs_inflight < RESEARCH_TOOLS_INFLIGHT)
			tool_start(rs, &aa->aa_calls[i]);
	}
	if (done < aa->aa_ncalls)
		return;
	if (agent_results(rs->rs_agent, aa) == -1)
		fatalx("%s: out of memory", __func__);
	agent_answer_free(aa);
	rs->rs_have_answer = 0;
	research_step(rs);
}

static char *
xasprintf_text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
xasprintf_text(const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		fatal("vasprintf");
	va_end(ap);
	return s;
}

/* A peer's error text, shown to the model: printable and short. */
static void
error_text(const char *err, char *out, size_t outsz)
{
	size_t	 n;

	snprintf(out, outsz, "%s", err != NULL && err[0] != '\0' ? err :
	    "no reason given");
	n = text_cut_units(out, strlen(out), 300, NULL);
	out[n] = '\0';
}

static int
research_searched(struct research *rs, struct msg *m)
{
	struct agent_call	*ac;
	const uint8_t		*data;
	const char		*err = NULL;
	char			*text, *s, why[1100];
	size_t			 len, n;
	int			 ok, cut;

	if (msg_get_bool(m, "ok", &ok) == -1 ||
	    msg_get_str_opt(m, "error", RESEARCH_ERROR_MAX, &err) == -1 ||
	    msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1)
		return -1;
	if (rs->rs_finished)
		return 0;
	if ((ac = tool_find(rs, m->m_id, AGENT_TOOL_WEB_SEARCH)) == NULL)
		return -1;
	rs->rs_inflight--;
	if (!ok) {
		error_text(err, why, sizeof(why));
		tool_result(ac, xasprintf_text("web_search failed: %s", why),
		    1);
	} else {
		if ((s = text_utf8(data, len, NULL, &n)) == NULL)
			fatal("%s", __func__);
		n = text_cut_units(s, n, RESEARCH_SEARCH_TEXT_MAX, &cut);
		s[n] = '\0';
		if (n == 0)
			text = xasprintf_text("(no results)");
		else if (cut)
			text = xasprintf_text("%s\n\n[results cut at %u "
			    "characters]", s, RESEARCH_SEARCH_TEXT_MAX);
		else
			text = xasprintf_text("%s", s);
		free(s);
		tool_result(ac, text, 0);
	}
	tools_run(rs);
	return 0;
}

static int
research_fetched(struct research *rs, struct msg *m)
{
	struct agent_call	*ac;
	struct text_out		 to;
	const uint8_t		*data;
	const char		*url = NULL, *ctype = NULL, *location = NULL;
	const char		*err = NULL;
	char			 why[1100], loc[600], head[32];
	uint64_t		 status = 0;
	size_t			 len;
	int			 ok, have;

	if (msg_get_bool(m, "ok", &ok) == -1 ||
	    msg_get_uint_opt(m, "status", 0, 999, &status, &have) == -1 ||
	    msg_get_str_opt(m, "url", RESEARCH_FETCH_URL_MAX, &url) == -1 ||
	    msg_get_str_opt(m, "content_type", RESEARCH_CTYPE_MAX, &ctype) ==
	    -1 ||
	    msg_get_str_opt(m, "location", RESEARCH_FETCH_URL_MAX, &location) ==
	    -1 ||
	    msg_get_str_opt(m, "error", RESEARCH_ERROR_MAX, &err) == -1 ||
	    msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1)
		return -1;
	if (rs->rs_finished)
		return 0;
	if ((ac = tool_find(rs, m->m_id, AGENT_TOOL_FETCH_CONTENT)) == NULL)
		return -1;
	rs->rs_inflight--;
	if (!ok) {
		error_text(err, why, sizeof(why));
		loc[0] = '\0';
		if (location != NULL)
			snprintf(loc, sizeof(loc), " (redirected to %.500s)",
			    location);
		tool_result(ac, xasprintf_text("fetch_content failed: %s%s",
		    why, loc), 1);
		tools_run(rs);
		return 0;
	}
	if (url == NULL)
		url = ac->ac_arg;
	if (text_extract(data, len, ctype, url, RESEARCH_PAGE_TEXT_MAX,
	    &to) == -1)
		fatal("%s: text_extract", __func__);
	/* Where the text came from, and whether it is all there. */
	head[0] = '\0';
	if (have)
		snprintf(head, sizeof(head), "Status: %llu\n",
		    (unsigned long long)status);
	if (to.to_cut)
		tool_result(ac, xasprintf_text("URL: %s\n%s\n%s\n\n[content "
		    "cut at %u characters]", url, head, to.to_text,
		    RESEARCH_PAGE_TEXT_MAX), 0);
	else
		tool_result(ac, xasprintf_text("URL: %s\n%s\n%s", url, head,
		    to.to_text), 0);
	text_out_free(&to);
	tools_run(rs);
	return 0;
}

/*
 * Peers
 */

static void
research_dispatch_egress(struct frame_conn *fc, struct frame *f, void *arg)
{
	struct research	*rs = arg;
	struct msg	 m;
	uint64_t	 call;
	int		 rc = -1;

	if (msg_parse(&m, PROC_EGRESS, PROC_RESEARCH, f) == -1)
		fatalx("protocol violation from egress: %s", m.m_err);
	if (m.m_type == MSG_EGR_FETCHED) {
		rc = research_fetched(rs, &m);
		goto done;
	}
	if (msg_get_uint(&m, "call", 1, UINT64_C(1) << 53, &call) == -1)
		goto done;
	if (call != rs->rs_call || rs->rs_finished) {
		/* a call given up meanwhile: what was in flight is dropped */
		msg_free(&m);
		return;
	}
	switch (m.m_type) {
	case MSG_EGR_HEAD:
		rc = egress_head(rs, &m);
		break;
	case MSG_EGR_DATA:
		rc = egress_data(rs, &m);
		break;
	case MSG_EGR_END:
		rc = egress_end(rs, &m);
		break;
	default:
		break;
	}
 done:
	if (rc == -1)
		fatalx("protocol violation from egress: %s",
		    m.m_err[0] ? m.m_err : msg_type_name(m.m_type));
	msg_free(&m);
}

static void
research_egress_err(struct frame_conn *fc, enum frame_err err, void *arg)
{
	struct research	*rs = arg;

	frame_conn_free(fc);
	rs->rs_egress = NULL;
	if (rs->rs_finished)
		return;
	log_warnx("pipe to egress: %s", frame_err_to_string(err));
	research_fail(rs, "the connection to egress was lost");
}

static int
research_config(struct research *rs, struct msg *m)
{
	const char	*channel, *model, *task, *author_id, *author_name;
	const char	*thinking = NULL;
	size_t		 units;

	if (msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &channel) == -1 ||
	    msg_get_str(m, "model", MODEL_NAME_BYTES_MAX, &model) == -1 ||
	    msg_get_str(m, "task", UTF8_BYTES_MAX(RESEARCH_TASK_MAX), &task) ==
	    -1 ||
	    msg_get_str(m, "author_id", UTF8_BYTES_MAX(AUTHOR_FIELD_MAX),
	    &author_id) == -1 ||
	    msg_get_str(m, "author_name", UTF8_BYTES_MAX(AUTHOR_FIELD_MAX),
	    &author_name) == -1 ||
	    msg_get_str_opt(m, "thinking", 8, &thinking) == -1 ||
	    msg_get_uint(m, "max_output_tokens", MAX_OUTPUT_TOKENS_MIN,
	    MAX_OUTPUT_TOKENS_MAX, &rs->rs_max_output_tokens) == -1 ||
	    msg_get_bool(m, "search", &rs->rs_search) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if (model[0] == '\0' ||
	    utf8_utf16_len(task, strlen(task), &units) == -1 || units == 0 ||
	    units > RESEARCH_TASK_MAX ||
	    utf8_text_check(author_id, strlen(author_id), AUTHOR_FIELD_MAX) ==
	    -1 ||
	    utf8_text_check(author_name, strlen(author_name),
	    AUTHOR_FIELD_MAX) == -1)
		return -1;
	rs->rs_thinking = AGENT_THINK_NONE;
	if (thinking != NULL && agent_thinking_parse(thinking,
	    &rs->rs_thinking) == -1)
		return -1;
	rs->rs_channel = xstrdup(channel);
	rs->rs_model = xstrdup(model);
	rs->rs_task = xstrdup(task);
	rs->rs_author_id = xstrdup(author_id);
	rs->rs_author_name = xstrdup(author_name);
	rs->rs_have_config = 1;
	return 0;
}

static int
research_dispatch_supervisor(struct role_parent *rp, struct msg *m, void *arg)
{
	struct research	*rs = arg;

	switch (m->m_type) {
	case MSG_CONFIG_RESEARCH:
		if (role_parent_configured(rp) || rs->rs_have_config)
			return -1;
		return research_config(rs, m);
	case MSG_RES_SEARCHED:
		if (!role_parent_configured(rp))
			return -1;
		return research_searched(rs, m);
	default:
		return -1;
	}
}

static const char *
research_configured(struct role_parent *rp, void *arg)
{
	struct research	*rs = arg;
	struct agent_job job;
	struct timespec	 ts;
	struct timeval	 now = { 0, 0 };
	char		 date[11];

	if (!rs->rs_have_config)
		return "no configuration";
	clock_gettime(CLOCK_REALTIME, &ts);
	research_date(ts.tv_sec, date);
	memset(&job, 0, sizeof(job));
	job.aj_model = rs->rs_model;
	job.aj_task = rs->rs_task;
	job.aj_author_name = rs->rs_author_name;
	job.aj_thinking = rs->rs_thinking;
	job.aj_max_output_tokens = rs->rs_max_output_tokens;
	job.aj_search = rs->rs_search;
	job.aj_date = date;
	if ((rs->rs_agent = agent_new(&job)) == NULL)
		return "out of memory";
	/* The first step runs from the loop, after ready is on its way. */
	if ((rs->rs_timer = evtimer_new(rs->rs_base, research_timer,
	    rs)) == NULL || evtimer_add(rs->rs_timer, &now) == -1)
		return "cannot set a timer";
	log_info("research for %s (%s, thinking %s, search %s)",
	    rs->rs_channel, rs->rs_model, rs->rs_thinking == AGENT_THINK_NONE ?
	    "off" : "on", rs->rs_search ? "on" : "off");
	return NULL;
}

void
research_main(int argc, char *argv[])
{
	struct role_args	 ra;
	static struct research	 rs;

	role_args_parse(PROC_RESEARCH, argc, argv, &ra);
	proc_child_check_fds(2);
	if (ra.ra_npaths != 0)
		fatalx("takes no -p path");
	/* Converters and libxml2's globals, before the sandbox. */
	text_init();
	rs.rs_base = sandbox_research();
	rs.rs_parent = role_parent_open(rs.rs_base, PROC_RESEARCH,
	    research_dispatch_supervisor, research_configured, &rs);
	rs.rs_egress = frame_conn_new(rs.rs_base, FD_EGRESS,
	    edge_limits(PROC_EGRESS, PROC_RESEARCH),
	    edge_limits(PROC_RESEARCH, PROC_EGRESS),
	    research_dispatch_egress, research_egress_err, &rs);
	if (rs.rs_egress == NULL)
		fatalx("cannot watch the egress pipe");
	event_base_dispatch(rs.rs_base);
	fatalx("event loop ended");
}
