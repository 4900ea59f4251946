/*
 * Precheck runs (rtsandbox-protocol(7), contract 0.7.11/0.7.13):
 * precheck.run starts one sealed container for one script, with an empty
 * read-only workspace and a broker of its own that forwards only single
 * MCP tools/call requests of the tools the run was granted, never more
 * than the profile's own.  The file guard makes the run's directories and
 * socket, a broker serves them, the Docker client runs the container with
 * the run's input on its stdin and hands back its stdout; the container is
 * gone before the answer goes out, and the directories after.
 */
#include <sys/queue.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "control.h"
#include "limits.h"
#include "log.h"
#include "supervisor.h"
#include "validate.h"

/* Beyond the script's own time: the directories, the broker, creating
 * and starting the container, each bounded by its helper. */
#define PRECHECK_SETUP_MS	30000u

struct pc_run {
	TAILQ_ENTRY(pc_run)	 pr_entry;
	uint64_t		 pr_run;
	char			*pr_key;
	char			*pr_profile;
	char			 pr_name[32];	/* "precheck-<run>" */
	struct ctl_req		*pr_req;	/* NULL once answered */
	struct child		*pr_broker;
	struct event		*pr_deadline;
	char			*pr_input;
	size_t			 pr_input_len;
	char			**pr_grant;	/* "server/tool" */
	size_t			 pr_ngrant;
	struct timespec		 pr_start;
	int			 pr_made;	/* the directories may exist */
	int			 pr_making;	/* FSG_PRECHECK_MAKE in flight */
	int			 pr_docking;	/* DOCK_PRECHECK in flight */
	int			 pr_ended;
};

static TAILQ_HEAD(, pc_run)	runs = TAILQ_HEAD_INITIALIZER(runs);
static uint64_t			pc_next_run = 1;
static unsigned			pc_nruns;

static void	pc_finish(struct pc_run *);

static cJSON *
pc_failure(const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static cJSON *
pc_failure(const char *reason, const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[1200];
	cJSON	*r;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if ((r = cJSON_CreateObject()) == NULL ||
	    cJSON_AddFalseToObject(r, "ok") == NULL ||
	    cJSON_AddStringToObject(r, "reason", reason) == NULL ||
	    cJSON_AddStringToObject(r, "message", msg) == NULL)
		fatalx("%s: out of memory", __func__);
	return r;
}

static long long
pc_ms(const struct pc_run *pr)
{
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - pr->pr_start.tv_sec) * 1000LL +
	    (now.tv_nsec - pr->pr_start.tv_nsec) / 1000000;
}

/*
 * The client's answer (result NULL when nobody waits any more), once; the
 * broker is stopped and the container asked to go.  The run is forgotten
 * once the container and the directories are gone (pc_finish()).
 */
static void
pc_end(struct pc_run *pr, cJSON *result)
{
	struct child	*dk;
	struct msgb	 mb;
	const cJSON	*ok;

	if (pr->pr_ended) {
		cJSON_Delete(result);
		return;
	}
	pr->pr_ended = 1;
	if (result != NULL) {
		ok = cJSON_GetObjectItemCaseSensitive(result, "ok");
		if (cJSON_IsTrue(ok))
			log_info("channel %s: precheck run %llu answered in "
			    "%lld ms", pr->pr_key,
			    (unsigned long long)pr->pr_run, pc_ms(pr));
		else {
			sv->sv_count.sc_failures++;
			log_warnx("channel %s: precheck run %llu failed after "
			    "%lld ms: %s: %s", pr->pr_key,
			    (unsigned long long)pr->pr_run, pc_ms(pr),
			    cJSON_GetStringValue(cJSON_GetObjectItem(result,
			    "reason")), cJSON_GetStringValue(
			    cJSON_GetObjectItem(result, "message")));
		}
	}
	if (pr->pr_req != NULL) {
		ctl_set_cancel(pr->pr_req, NULL, NULL);
		ctl_reply(pr->pr_req, result);
		pr->pr_req = NULL;
	} else
		cJSON_Delete(result);
	evtimer_del(pr->pr_deadline);
	if (pr->pr_broker != NULL) {
		child_stop(pr->pr_broker, NULL, NULL);
		pr->pr_broker = NULL;
	}
	if (pr->pr_docking && (dk = child_singleton(PROC_DOCKER)) != NULL) {
		msgb_init(&mb, MSG_DOCK_PRECHECK_STOP, 0);
		msg_add_uint(&mb, "run", pr->pr_run);
		(void)child_send_msg(dk, &mb);
	}
	pc_finish(pr);
}

static void
pc_free(struct pc_run *pr)
{
	TAILQ_REMOVE(&runs, pr, pr_entry);
	pc_nruns--;
	event_free(pr->pr_deadline);
	while (pr->pr_ngrant > 0)
		free(pr->pr_grant[--pr->pr_ngrant]);
	free(pr->pr_grant);
	free(pr->pr_input);
	free(pr->pr_profile);
	free(pr->pr_key);
	free(pr);
}

static void
pc_cleaned(struct child *c, struct msg *m, void *arg)
{
	struct pc_run	*pr = arg;

	if (m == NULL || m->m_type == MSG_ERROR)
		log_warnx("precheck run %llu: its directories were not "
		    "removed", (unsigned long long)pr->pr_run);
	pc_free(pr);
}

/* Once the run has ended and its container is gone: the directories go,
 * then the run. */
static void
pc_finish(struct pc_run *pr)
{
	struct child	*fg;
	struct msgb	 mb;

	if (!pr->pr_ended || pr->pr_docking || pr->pr_making)
		return;
	if (!pr->pr_made || (fg = child_singleton(PROC_FSGUARD)) == NULL) {
		pc_free(pr);
		return;
	}
	pr->pr_made = 0;
	msgb_init(&mb, MSG_FSG_PRECHECK_CLEAN, 0);
	msg_add_uint(&mb, "run", pr->pr_run);
	if (child_request(fg, &mb, pc_cleaned, pr) == -1)
		pc_free(pr);
}

static void
pc_deadline(evutil_socket_t fd, short ev, void *arg)
{
	struct pc_run	*pr = arg;

	pc_end(pr, pc_failure("timeout", "the precheck run did not end "
	    "within %llu ms", (unsigned long long)
	    (sv->sv_conf->precheck_timeout_ms + PRECHECK_SETUP_MS)));
}

static void
pc_cancel_req(struct ctl_req *req, void *arg)
{
	struct pc_run	*pr = arg;

	log_info("channel %s: precheck run %llu cancelled", pr->pr_key,
	    (unsigned long long)pr->pr_run);
	pr->pr_req = NULL;
	pc_end(pr, NULL);
}

/* The bytes of the first max chars (UTF-16 units) of valid UTF-8 s. */
static size_t
pc_cut(const char *s, size_t len, size_t max)
{
	size_t		 i = 0, last = 0, units = 0;
	uint32_t	 cp;

	while (i < len) {
		if (utf8_next((const uint8_t *)s, len, &i, &cp) == -1)
			break;
		units += cp >= 0x10000 ? 2 : 1;
		if (units > max)
			break;
		last = i;
	}
	return last;
}

/* What the worker printed: {ok:true, result} or {ok:false, error}. */
static cJSON *
pc_answer(const uint8_t *out, size_t len)
{
	cJSON		*a, *r, *result;
	const cJSON	*ok, *error;
	char		 msg[UTF8_BYTES_MAX(PRECHECK_ERROR_MAX) + 1];
	size_t		 n;

	if (len == 0 || (a = cJSON_ParseWithLength((const char *)out,
	    len)) == NULL)
		return pc_failure("worker_failed", "the precheck worker "
		    "answered nothing it could read");
	ok = cJSON_GetObjectItemCaseSensitive(a, "ok");
	if (!cJSON_IsObject(a) || !cJSON_IsBool(ok)) {
		cJSON_Delete(a);
		return pc_failure("worker_failed", "the precheck worker "
		    "answered nothing it could read");
	}
	if (cJSON_IsFalse(ok)) {
		error = cJSON_GetObjectItemCaseSensitive(a, "error");
		if (!cJSON_IsString(error) || utf8_text_check(
		    error->valuestring, strlen(error->valuestring),
		    SIZE_MAX) == -1)
			r = pc_failure("script_failed", "the script failed");
		else {
			n = pc_cut(error->valuestring,
			    strlen(error->valuestring), PRECHECK_ERROR_MAX);
			memcpy(msg, error->valuestring, n);
			msg[n] = '\0';
			r = pc_failure("script_failed", "%s", msg);
		}
		cJSON_Delete(a);
		return r;
	}
	if ((result = cJSON_DetachItemFromObjectCaseSensitive(a,
	    "result")) == NULL && (result = cJSON_CreateNull()) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_Delete(a);
	if ((r = cJSON_CreateObject()) == NULL ||
	    cJSON_AddTrueToObject(r, "ok") == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddItemToObject(r, "result", result);
	return r;
}

static void
pc_docked(struct child *c, struct msg *m, void *arg)
{
	struct pc_run	*pr = arg;
	const uint8_t	*out;
	const char	*e;
	size_t		 len;
	int64_t		 code;
	uint64_t	 errbytes;
	int		 timed_out, over;
	cJSON		*r;

	pr->pr_docking = 0;
	if (pr->pr_ended) {
		pc_finish(pr);
		return;
	}
	if (m == NULL)
		r = pc_failure("start_failed", "the Docker client stopped "
		    "before the run ended");
	else if (m->m_type == MSG_ERROR) {
		if (msg_get_str(m, "error", 512, &e) == -1 || msg_end(m) == -1)
			e = "unreadable error";
		r = pc_failure("start_failed", "the precheck container: %s",
		    e);
	} else if (msg_get_int(m, "exit_code", INT32_MIN, INT32_MAX,
	    &code) == -1 || msg_get_bool(m, "timed_out", &timed_out) == -1 ||
	    msg_get_bool(m, "stdout_over", &over) == -1 ||
	    msg_get_uint(m, "stderr_bytes", 0, UINT64_C(1) << 53,
	    &errbytes) == -1 || msg_get_data(m, &out, &len) == -1 ||
	    msg_end(m) == -1) {
		log_warnx("precheck run %llu: the Docker client's answer is "
		    "malformed", (unsigned long long)pr->pr_run);
		r = pc_failure("internal", "the Docker client's answer was "
		    "malformed");
	} else if (timed_out)
		r = pc_failure("timeout", "the script did not end within %llu "
		    "ms", (unsigned long long)sv->sv_conf->precheck_timeout_ms);
	else if (over)
		r = pc_failure("worker_failed", "the precheck worker wrote "
		    "more than %u bytes", PRECHECK_STDOUT_MAX);
	else if (errbytes > PRECHECK_STDERR_MAX)
		r = pc_failure("worker_failed", "the precheck worker wrote "
		    "more than %u bytes to stderr", PRECHECK_STDERR_MAX);
	else if (code != 0)
		r = pc_failure("worker_failed", "the precheck worker exited "
		    "with status %lld", (long long)code);
	else
		r = pc_answer(out, len);
	if (m != NULL && m->m_type == MSG_DOCK_PRECHECKED)
		log_debug("precheck run %llu: exit %lld, %zu bytes out, %llu "
		    "to stderr", (unsigned long long)pr->pr_run,
		    (long long)code, len, (unsigned long long)errbytes);
	pc_end(pr, r);
}

/* The broker serves the socket: the container may start. */
static void
pc_broker_event(struct child *c, int ready, void *arg)
{
	const struct config	*conf = sv->sv_conf;
	struct pc_run		*pr = arg;
	struct child		*dk;
	struct msgb		 mb;

	if (!ready) {
		pr->pr_broker = NULL;
		if (c->c_violation != VIOLATION_NONE)
			pc_end(pr, pc_failure("worker_failed", "the run's "
			    "broker broke a rule (%s) and was stopped",
			    violation_name(c->c_violation)));
		else
			pc_end(pr, pc_failure("start_failed", "the run's "
			    "broker ended"));
		return;
	}
	if ((dk = child_singleton(PROC_DOCKER)) == NULL) {
		pc_end(pr, pc_failure("start_failed", "the Docker client is "
		    "not running"));
		return;
	}
	msgb_init(&mb, MSG_DOCK_PRECHECK, 0);
	msg_add_uint(&mb, "run", pr->pr_run);
	msg_add_str(&mb, "channel", pr->pr_key);
	msg_add_strv(&mb, "entrypoint", (const char *const *)conf->precheck_argv,
	    conf->precheck_argc);
	msg_add_uint(&mb, "memory_mib", conf->precheck_memory_mib);
	msg_add_uint(&mb, "nano_cpus", conf->precheck_nano_cpus);
	msg_add_uint(&mb, "pids", conf->precheck_pids);
	msg_add_uint(&mb, "timeout_ms", conf->precheck_timeout_ms);
	msg_add_data(&mb, pr->pr_input, pr->pr_input_len);
	if (child_request(dk, &mb, pc_docked, pr) == -1) {
		pc_end(pr, pc_failure("start_failed", "the Docker client is "
		    "not running"));
		return;
	}
	pr->pr_docking = 1;
}

/* A precheck broker sends nothing on its own: anything is a violation. */
static int
pc_broker_msg(struct child *c, struct msg *m, void *arg)
{
	return -1;
}

static void
pc_made(struct child *c, struct msg *m, void *arg)
{
	const struct config	*conf = sv->sv_conf;
	struct pc_run		*pr = arg;
	const char		*e;
	int			 fd = -1;

	pr->pr_making = 0;
	if (m != NULL && m->m_type == MSG_FSG_PRECHECK_MADE &&
	    (msg_get_fd(m, &fd) == -1 || msg_end(m) == -1))
		fd = -1;
	if (pr->pr_ended) {
		if (fd != -1)
			close(fd);
		pc_finish(pr);
		return;
	}
	if (fd == -1) {
		e = "the file guard stopped before it answered";
		if (m != NULL && m->m_type == MSG_ERROR &&
		    (msg_get_str(m, "error", 512, &e) == -1 ||
		    msg_end(m) == -1))
			e = "unreadable error";
		pc_end(pr, pc_failure("start_failed", "the run's directories: "
		    "%s", e));
		return;
	}
	pr->pr_broker = child_precheck_start(pr->pr_key, pr->pr_name,
	    pr->pr_profile, fd, (const char *const *)pr->pr_grant,
	    pr->pr_ngrant, conf->precheck_max_calls,
	    conf->precheck_timeout_ms + PRECHECK_DEADLINE_SLACK_MS,
	    pc_broker_event,
	    pc_broker_msg, pr);
}

/* YYYY-MM-DD at s, with month and day in range. */
static int
pc_date(const char *s)
{
	int	 i, mo, d;

	for (i = 0; i < 10; i++)
		if (i == 4 || i == 7 ? s[i] != '-' :
		    !(s[i] >= '0' && s[i] <= '9'))
			return 0;
	mo = (s[5] - '0') * 10 + s[6] - '0';
	d = (s[8] - '0') * 10 + s[9] - '0';
	return mo >= 1 && mo <= 12 && d >= 1 && d <= 31;
}

/* An ISO 8601 time as Date.toISOString() writes it, or with an offset:
 * YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|+HH:MM|-HH:MM). */
static int
pc_instant(const char *s)
{
	size_t	 i, n = strlen(s);
	int	 h, mi, se;

	if (n < 20 || n > 35 || !pc_date(s) || s[10] != 'T')
		return 0;
	for (i = 11; i < 19; i++)
		if (i == 13 || i == 16 ? s[i] != ':' :
		    !(s[i] >= '0' && s[i] <= '9'))
			return 0;
	h = (s[11] - '0') * 10 + s[12] - '0';
	mi = (s[14] - '0') * 10 + s[15] - '0';
	se = (s[17] - '0') * 10 + s[18] - '0';
	if (h > 23 || mi > 59 || se > 60)
		return 0;
	i = 19;
	if (s[i] == '.') {
		for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++)
			;
		if (i == 20 || i > 29)
			return 0;
	}
	if (s[i] == 'Z')
		return i + 1 == n;
	if ((s[i] != '+' && s[i] != '-') || n - i != 6 || s[i + 3] != ':')
		return 0;
	return s[i + 1] >= '0' && s[i + 1] <= '2' && s[i + 2] >= '0' &&
	    s[i + 2] <= '9' && s[i + 4] >= '0' && s[i + 4] <= '5' &&
	    s[i + 5] >= '0' && s[i + 5] <= '9';
}

/* The string member key of params, valid text of 1 to max chars. */
static const char *
pc_text(const cJSON *params, const char *key, size_t max)
{
	const char	*s = ctl_str_param(params, key);

	if (s == NULL || s[0] == '\0' || utf8_text_check(s, strlen(s),
	    max) == -1)
		return NULL;
	return s;
}

static int
pc_has(const char *const *v, size_t n, const char *s)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

/*
 * servers: [{name, tools: [...]}] of the profile's MCP servers and their
 * allowed tools, each once.  The grant ("server/tool") and the servers as
 * the worker is told them are built; NULL, or the error.
 */
static const char *
pc_servers(const cJSON *servers, const struct config_profile *p,
    struct pc_run *pr, cJSON *out, char *err, size_t errlen)
{
	const struct config			*conf = sv->sv_conf;
	const struct config_mcp_server		*ms;
	const cJSON				*sv_it, *name, *tools, *t;
	cJSON					*o, *ta;
	const char				*seen[PRECHECK_SERVERS_MAX];
	size_t					 i = 0, j, k;
	char					*g;

	if (servers == NULL)
		return NULL;
	if (!cJSON_IsArray(servers) || cJSON_GetArraySize(servers) >
	    (int)PRECHECK_SERVERS_MAX) {
		snprintf(err, errlen, "servers must be an array of at most %u "
		    "{name, tools}", PRECHECK_SERVERS_MAX);
		return err;
	}
	cJSON_ArrayForEach(sv_it, servers) {
		name = cJSON_GetObjectItemCaseSensitive(sv_it, "name");
		tools = cJSON_GetObjectItemCaseSensitive(sv_it, "tools");
		if (!cJSON_IsObject(sv_it) || cJSON_GetArraySize(sv_it) != 2 ||
		    !cJSON_IsString(name) || !cJSON_IsArray(tools)) {
			snprintf(err, errlen, "servers[%zu] must be {name, "
			    "tools: [tool names]}", i);
			return err;
		}
		if (!pc_has((const char *const *)p->mcp, p->nmcp,
		    name->valuestring) ||
		    (ms = config_mcp_server(conf, name->valuestring)) == NULL) {
			snprintf(err, errlen, "servers[%zu].name: %.100s is not "
			    "an MCP server of profile %s", i,
			    name->valuestring, p->name);
			return err;
		}
		if (pc_has(seen, i, ms->name)) {
			snprintf(err, errlen, "servers[%zu].name: %s is given "
			    "twice", i, ms->name);
			return err;
		}
		seen[i] = ms->name;
		if ((o = cJSON_CreateObject()) == NULL ||
		    cJSON_AddStringToObject(o, "name", ms->name) == NULL ||
		    (ta = cJSON_AddArrayToObject(o, "tools")) == NULL)
			fatalx("%s: out of memory", __func__);
		cJSON_AddItemToArray(out, o);
		j = 0;
		cJSON_ArrayForEach(t, tools) {
			if (!cJSON_IsString(t) || !pc_has((const char *const *)
			    ms->tools, ms->ntools, t->valuestring)) {
				snprintf(err, errlen, "servers[%zu].tools[%zu]: "
				    "%.128s is not an allowed tool of server "
				    "%s", i, j, cJSON_IsString(t) ?
				    t->valuestring : "(not a string)",
				    ms->name);
				return err;
			}
			for (k = 0; k < j; k++)
				if (strcmp(cJSON_GetArrayItem(tools,
				    (int)k)->valuestring, t->valuestring) == 0)
					break;
			if (k < j) {
				snprintf(err, errlen, "servers[%zu].tools[%zu]: "
				    "%s is given twice", i, j, t->valuestring);
				return err;
			}
			if (asprintf(&g, "%s/%s", ms->name,
			    t->valuestring) == -1)
				fatal("%s", __func__);
			if ((pr->pr_grant = reallocarray(pr->pr_grant,
			    pr->pr_ngrant + 1, sizeof(*pr->pr_grant))) == NULL)
				fatal("%s", __func__);
			pr->pr_grant[pr->pr_ngrant++] = g;
			if (cJSON_AddItemToArray(ta,
			    cJSON_CreateString(t->valuestring)) == 0)
				fatalx("%s: out of memory", __func__);
			j++;
		}
		i++;
	}
	return NULL;
}

/*
 * The worker's input, PrecheckWorkerInput: {script, firedAt, timeZone,
 * today, schedule: {id, title}, servers: [{name, tools}]}.  NULL, or the
 * error.
 */
static const char *
pc_input(const cJSON *params, const struct config_profile *p,
    struct pc_run *pr, char *err, size_t errlen)
{
	const cJSON	*sched, *id, *title;
	const char	*script, *fired, *tz, *today, *why;
	cJSON		*in, *so, *servers;
	char		*json;

	if ((script = pc_text(params, "script", SIZE_MAX)) == NULL)
		return "script must be a string of 1 or more chars of valid "
		    "UTF-8";
	if ((fired = ctl_str_param(params, "firedAt")) == NULL ||
	    !pc_instant(fired))
		return "firedAt must be an ISO 8601 time such as "
		    "2026-12-06T07:00:00.000Z";
	if ((tz = ctl_str_param(params, "timeZone")) == NULL ||
	    !time_zone_valid(tz, strlen(tz)))
		return "timeZone must be an IANA zone name such as Asia/Taipei";
	if ((today = ctl_str_param(params, "today")) == NULL ||
	    strlen(today) != 10 || !pc_date(today))
		return "today must be a date, YYYY-MM-DD";
	sched = cJSON_GetObjectItemCaseSensitive(params, "schedule");
	id = cJSON_GetObjectItemCaseSensitive(sched, "id");
	title = cJSON_GetObjectItemCaseSensitive(sched, "title");
	if (!cJSON_IsObject(sched) || cJSON_GetArraySize(sched) != 2 ||
	    !cJSON_IsNumber(id) || id->valuedouble != (double)(int64_t)
	    id->valuedouble || id->valuedouble > 9007199254740991.0 ||
	    id->valuedouble < -9007199254740991.0 || !cJSON_IsString(title) ||
	    utf8_text_check(title->valuestring, strlen(title->valuestring),
	    PRECHECK_TITLE_MAX) == -1) {
		snprintf(err, errlen, "schedule must be {id: an integer, "
		    "title: at most %u chars}", PRECHECK_TITLE_MAX);
		return err;
	}
	if ((in = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(in, "script", script) == NULL ||
	    cJSON_AddStringToObject(in, "firedAt", fired) == NULL ||
	    cJSON_AddStringToObject(in, "timeZone", tz) == NULL ||
	    cJSON_AddStringToObject(in, "today", today) == NULL ||
	    (so = cJSON_AddObjectToObject(in, "schedule")) == NULL ||
	    cJSON_AddNumberToObject(so, "id", id->valuedouble) == NULL ||
	    cJSON_AddStringToObject(so, "title", title->valuestring) == NULL ||
	    (servers = cJSON_AddArrayToObject(in, "servers")) == NULL)
		fatalx("%s: out of memory", __func__);
	if ((why = pc_servers(cJSON_GetObjectItemCaseSensitive(params,
	    "servers"), p, pr, servers, err, errlen)) != NULL) {
		cJSON_Delete(in);
		return why;
	}
	json = cJSON_PrintUnformatted(in);
	cJSON_Delete(in);
	if (json == NULL)
		fatalx("%s: out of memory", __func__);
	pr->pr_input = json;
	pr->pr_input_len = strlen(json);
	if (pr->pr_input_len > PRECHECK_INPUT_MAX) {
		snprintf(err, errlen, "the run's input (script, servers and "
		    "the rest) is %zu bytes, over %u", pr->pr_input_len,
		    PRECHECK_INPUT_MAX);
		return err;
	}
	return NULL;
}

void
method_precheck_run(struct ctl_req *req, cJSON *params)
{
	static const char *const allowed[] = { "channel", "profile", "script",
	    "firedAt", "timeZone", "today", "schedule", "servers", NULL };
	const struct config		*conf = sv->sv_conf;
	const struct config_profile	*p;
	const char			*key, *profile, *why;
	struct pc_run			*pr;
	struct child			*fg;
	struct msgb			 mb;
	struct timeval			 tv;
	char				 seg[SEGMENT_MAX + 1], err[600];
	uint64_t			 ms;

	if (ctl_params_only(req, params, allowed) == -1)
		return;
	key = ctl_str_param(params, "channel");
	if (key == NULL || channel_segment(key, strlen(key), seg,
	    sizeof(seg)) == -1) {
		ctl_reply(req, pc_failure("invalid", "channel must be 1 to 256 "
		    "chars of valid UTF-8"));
		return;
	}
	profile = ctl_str_param(params, "profile");
	if (profile == NULL || (p = config_profile(conf, profile)) == NULL) {
		ctl_reply(req, pc_failure("invalid", "profile must name a "
		    "profile of the configuration"));
		return;
	}
	if (conf->precheck_argv == NULL) {
		ctl_reply(req, pc_failure("invalid", "precheck runs are not "
		    "configured (no precheck section)"));
		return;
	}
	if ((pr = calloc(1, sizeof(*pr))) == NULL)
		fatal("%s", __func__);
	if ((why = pc_input(params, p, pr, err, sizeof(err))) != NULL) {
		while (pr->pr_ngrant > 0)
			free(pr->pr_grant[--pr->pr_ngrant]);
		free(pr->pr_grant);
		free(pr->pr_input);
		free(pr);
		ctl_reply(req, pc_failure("invalid", "%s", why));
		return;
	}
	if (pc_nruns >= conf->precheck_max_runs) {
		while (pr->pr_ngrant > 0)
			free(pr->pr_grant[--pr->pr_ngrant]);
		free(pr->pr_grant);
		free(pr->pr_input);
		free(pr);
		ctl_reply(req, pc_failure("busy", "%llu precheck runs are "
		    "running, as many as precheck.max_runs allows",
		    (unsigned long long)conf->precheck_max_runs));
		return;
	}
	if ((pr->pr_key = strdup(key)) == NULL ||
	    (pr->pr_profile = strdup(p->name)) == NULL)
		fatal("%s", __func__);
	pr->pr_run = pc_next_run++;
	snprintf(pr->pr_name, sizeof(pr->pr_name), "precheck-%llu",
	    (unsigned long long)pr->pr_run);
	pr->pr_req = req;
	clock_gettime(CLOCK_MONOTONIC, &pr->pr_start);
	TAILQ_INSERT_TAIL(&runs, pr, pr_entry);
	pc_nruns++;
	ctl_set_cancel(req, pc_cancel_req, pr);
	ms = conf->precheck_timeout_ms + PRECHECK_SETUP_MS;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	if ((pr->pr_deadline = evtimer_new(sv->sv_base, pc_deadline,
	    pr)) == NULL || evtimer_add(pr->pr_deadline, &tv) == -1)
		fatalx("%s: timer", __func__);
	log_info("channel %s: precheck run %llu started, %zu tool(s) granted",
	    key, (unsigned long long)pr->pr_run, pr->pr_ngrant);

	if ((fg = child_singleton(PROC_FSGUARD)) == NULL) {
		pc_end(pr, pc_failure("start_failed", "the file guard is not "
		    "running"));
		return;
	}
	msgb_init(&mb, MSG_FSG_PRECHECK_MAKE, 0);
	msg_add_uint(&mb, "run", pr->pr_run);
	if (child_request(fg, &mb, pc_made, pr) == -1) {
		pc_end(pr, pc_failure("start_failed", "the file guard is not "
		    "running"));
		return;
	}
	pr->pr_made = 1;
	pr->pr_making = 1;
}

uint64_t
precheck_running(void)
{
	return pc_nruns;
}
