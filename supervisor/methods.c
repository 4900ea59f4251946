/*
 * Methods of the control socket that belong to the daemon as a whole.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/event.h>

#include "buildconf.h"
#include "control.h"
#include "limits.h"
#include "log.h"
#include "spawner.h"
#include "supervisor.h"
#include "validate.h"

static const struct {
	const char	*name;
	unsigned	 bit;
} hook_names[] = {
	{ "tool.call",		HOOK_TOOL_CALL },
	{ "memory.block",	HOOK_MEMORY_BLOCK },
	{ "effort.judge",	HOOK_EFFORT_JUDGE },
	{ "search.query",	HOOK_SEARCH_QUERY },
	{ "credential.get",	HOOK_CREDENTIAL_GET },
	{ "compaction.compact",	HOOK_COMPACTION },
};

static void
method_initialize(struct ctl_req *cr, cJSON *params)
{
	static const char *const allowed[] = { "client", "hooks", NULL };
	const cJSON	*client, *hooks, *h;
	cJSON		*res, *lim, *acc;
	unsigned	 bits = 0, bit;
	size_t		 i;

	if (ctl_client_is_initialized(ctl_req_client(cr))) {
		ctl_error(cr, RPC_INVALID_REQUEST,
		    "Invalid Request: already initialized");
		return;
	}
	if (ctl_params_only(cr, params, allowed) == -1)
		return;
	client = params ? cJSON_GetObjectItemCaseSensitive(params, "client") :
	    NULL;
	hooks = params ? cJSON_GetObjectItemCaseSensitive(params, "hooks") :
	    NULL;
	if (!cJSON_IsString(client) || utf8_text_check(client->valuestring,
	    strlen(client->valuestring), CLIENT_NAME_MAX) == -1 ||
	    client->valuestring[0] == '\0') {
		ctl_error(cr, RPC_INVALID_PARAMS, "Invalid params: client must "
		    "be a string of 1 to %d chars", CLIENT_NAME_MAX);
		return;
	}
	if (hooks != NULL && !cJSON_IsArray(hooks)) {
		ctl_error(cr, RPC_INVALID_PARAMS,
		    "Invalid params: hooks must be an array of hook names");
		return;
	}
	cJSON_ArrayForEach(h, hooks) {
		bit = 0;
		for (i = 0; cJSON_IsString(h) &&
		    i < sizeof(hook_names) / sizeof(hook_names[0]); i++)
			if (strcmp(h->valuestring, hook_names[i].name) == 0)
				bit = hook_names[i].bit;
		if (bit == 0) {
			ctl_error(cr, RPC_INVALID_PARAMS, "Invalid params: "
			    "unknown hook %.64s%s%s", cJSON_IsString(h) ?
			    h->valuestring : "(not a string)",
			    cJSON_IsString(h) ? "; known: tool.call, "
			    "memory.block, effort.judge, search.query" : "",
			    "");
			return;
		}
		if (bits & bit) {
			ctl_error(cr, RPC_INVALID_PARAMS,
			    "Invalid params: hook %s named twice",
			    h->valuestring);
			return;
		}
		bits |= bit;
	}
	ctl_client_initialized(ctl_req_client(cr), client->valuestring, bits);

	if ((res = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(res, "version", RTSANDBOX_VERSION) == NULL ||
	    (acc = cJSON_AddArrayToObject(res, "hooks")) == NULL ||
	    (lim = cJSON_AddObjectToObject(res, "limits")) == NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 0; i < sizeof(hook_names) / sizeof(hook_names[0]); i++)
		if (bits & hook_names[i].bit)
			cJSON_AddItemToArray(acc,
			    cJSON_CreateString(hook_names[i].name));
	cJSON_AddNumberToObject(lim, "line_bytes", CONTROL_LINE_MAX);
	cJSON_AddNumberToObject(lim, "channel_chars", CHANNEL_KEY_MAX);
	cJSON_AddNumberToObject(lim, "text_chars", TURN_TEXT_MAX);
	cJSON_AddNumberToObject(lim, "memory_chars", MEMORY_MAX);
	cJSON_AddNumberToObject(lim, "author_chars", AUTHOR_FIELD_MAX);
	cJSON_AddNumberToObject(lim, "images", IMAGES_MAX);
	cJSON_AddNumberToObject(lim, "image_bytes", IMAGE_BYTES_MAX);
	cJSON_AddNumberToObject(lim, "images_total_bytes", IMAGES_TOTAL_MAX);
	cJSON_AddNumberToObject(lim, "reply_files", REPLY_FILES_MAX);
	cJSON_AddNumberToObject(lim, "reply_file_bytes", REPLY_FILE_MAX);
	cJSON_AddNumberToObject(lim, "start_ms", sv->sv_conf->start_ms);
	cJSON_AddNumberToObject(lim, "turn_ms", sv->sv_conf->turn_ms);
	log_info("control client \"%s\" initialized", client->valuestring);
	ctl_reply(cr, res);
}

/*
 * Reading a process's memory is a round trip to the spawner, which reads
 * the file the process handed over: tens of microseconds to a
 * millisecond each, so a thousand brokers cannot be read on every
 * daemon.stats.  A broker's or research job's figures are kept: a call
 * reads at most STATS_MEM_READS of those never read yet, and gives a
 * timer STATS_MEM_ASK_READS more reads, STATS_MEM_TICK_READS of the
 * stalest every STATS_MEM_TICK_MS, of figures older than STATS_MEM_TTL_MS
 * (a budget set again by each call, never added up).  So the work of a
 * call is bounded, whatever the number of brokers and however often it
 * comes: a client that asks every second has a thousand figures renewed
 * every 25 s, and a daemon nobody asks is quiet a second after the last
 * call.  The supervisor, the spawner and the singletons are read every
 * time.
 */
#define STATS_MEM_TTL_MS	10000
#define STATS_MEM_READS		4
#define STATS_MEM_ASK_READS	40
#define STATS_MEM_TICK_MS	100
#define STATS_MEM_TICK_READS	4

static struct event	*stats_timer;
static unsigned		 stats_budget;	/* reads the timer may still do */
static pid_t		 stats_self;	/* the supervisor's pid */

/* A broker's or research job's figures are kept; a singleton's read. */
static int
stats_cached(const struct child *c)
{
	return !c->c_singleton;
}

static void
stats_refresh(evutil_socket_t fd, short ev, void *arg)
{
	struct timeval	 tv = { 0, STATS_MEM_TICK_MS * 1000 };
	struct child	*c, *oldest;
	uint64_t	 now = proc_now_ms();
	unsigned	 n;

	for (n = 0; n < STATS_MEM_TICK_READS; n++) {
		if (stats_budget == 0)
			return;
		oldest = NULL;
		TAILQ_FOREACH(c, &children, c_entry)
			if (stats_cached(c) && c->c_pid > 0 &&
			    (oldest == NULL || c->c_mem_ms < oldest->c_mem_ms))
				oldest = c;
		if (oldest == NULL || (oldest->c_mem_ms != 0 &&
		    now - oldest->c_mem_ms < STATS_MEM_TTL_MS))
			return;		/* all fresh: stop */
		spawner_memory(oldest->c_pid, &oldest->c_mem);
		oldest->c_mem_ms = now;
		stats_budget--;
	}
	if (evtimer_add(stats_timer, &tv) == -1)
		log_warnx("%s: evtimer_add", __func__);
}

/* A client asked: the next second renews a few of the stalest figures. */
static void
stats_asked(void)
{
	struct timeval	 tv = { 0, STATS_MEM_TICK_MS * 1000 };

	stats_budget = STATS_MEM_ASK_READS;
	if (stats_timer == NULL && (stats_timer = evtimer_new(sv->sv_base,
	    stats_refresh, NULL)) == NULL)
		fatalx("%s: evtimer_new", __func__);
	if (!evtimer_pending(stats_timer, NULL) &&
	    evtimer_add(stats_timer, &tv) == -1)
		log_warnx("%s: evtimer_add", __func__);
}

/* A JSON string of s: role, state and channel segment names. */
static void
stats_str(struct evbuffer *b, const char *s)
{
	const char	*run = s;

	evbuffer_add(b, "\"", 1);
	for (; *s != '\0'; s++) {
		if (*s != '"' && *s != '\\' && (unsigned char)*s >= 0x20)
			continue;
		evbuffer_add(b, run, (size_t)(s - run));
		evbuffer_add_printf(b, "\\u%04x", (unsigned char)*s);
		run = s + 1;
	}
	evbuffer_add(b, run, (size_t)(s - run));
	evbuffer_add(b, "\"", 1);
}

static void
stats_memory(struct evbuffer *b, pid_t pid, struct child *c,
    unsigned *reads, uint64_t now)
{
	struct proc_mem	 pm;

	if (pid == stats_self) {
		if (proc_rollup(pid, &pm) == -1)
			pm.pm_rss_kib = proc_rss_kib(pid);
	} else if (c == NULL || !stats_cached(c))
		spawner_memory(pid, &pm);
	else {
		if (c->c_mem_ms == 0 && *reads < STATS_MEM_READS) {
			(*reads)++;
			spawner_memory(pid, &c->c_mem);
			c->c_mem_ms = now;
		}
		if (c->c_mem_ms == 0)
			return;
		pm = c->c_mem;
	}
	if (pm.pm_rss_kib >= 0)
		evbuffer_add_printf(b, ",\"rss_kib\":%ld", pm.pm_rss_kib);
	if (pm.pm_pss_kib >= 0)
		evbuffer_add_printf(b, ",\"pss_kib\":%ld", pm.pm_pss_kib);
	if (pm.pm_uss_kib >= 0)
		evbuffer_add_printf(b, ",\"uss_kib\":%ld", pm.pm_uss_kib);
}

/*
 * One process of daemon.stats, printed: with a thousand brokers, a tree
 * of cJSON objects would be eight thousand allocations and as many
 * numbers printed and read back on every call.
 */
static void
stats_process(struct evbuffer *b, const char *role, const char *name,
    pid_t pid, const char *state, uint64_t restarts, struct child *c,
    unsigned *reads, uint64_t now)
{
	evbuffer_add(b, evbuffer_get_length(b) > 1 ? ",{\"role\":" :
	    "{\"role\":", evbuffer_get_length(b) > 1 ? 9 : 8);
	stats_str(b, role);
	if (name != NULL) {
		evbuffer_add(b, ",\"name\":", 8);
		stats_str(b, name);
	}
	evbuffer_add(b, ",\"state\":", 9);
	stats_str(b, state);
	if (pid > 0) {
		evbuffer_add_printf(b, ",\"pid\":%ld", (long)pid);
		stats_memory(b, pid, c, reads, now);
	}
	evbuffer_add_printf(b, ",\"restarts\":%llu}",
	    (unsigned long long)restarts);
}

static cJSON *
daemon_stats(void)
{
	const struct sup_counters *k = &sv->sv_count;
	struct timespec		 now;
	struct child		*c;
	cJSON			*res, *cnt, *rules;
	struct evbuffer		*b;
	const char		*text;
	uint64_t		 brokers = 0, ms = proc_now_ms();
	unsigned		 i, reads = 0;

	clock_gettime(CLOCK_MONOTONIC, &now);
	stats_asked();
	if ((res = cJSON_CreateObject()) == NULL ||
	    (b = evbuffer_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_add(b, "[", 1);
	if (stats_self == 0)
		stats_self = getpid();	/* one syscall, not one per process */
	stats_process(b, "supervisor", NULL, stats_self, "ready", 0, NULL,
	    &reads, ms);
	/* It reads its own figures; it holds nothing per channel. */
	if (spawner_pid() > 0)
		stats_process(b, "spawner", NULL, spawner_pid(), "ready", 0,
		    NULL, &reads, ms);
	TAILQ_FOREACH(c, &children, c_entry) {
		if (c->c_role == PROC_BROKER)
			brokers++;
		stats_process(b, proc_role_name(c->c_role), c->c_name,
		    c->c_pid, child_state_to_string(c->c_state),
		    c->c_restarts, c, &reads, ms);
	}
	evbuffer_add(b, "]", 2);	/* and its NUL */
	if ((text = (const char *)evbuffer_pullup(b, -1)) == NULL ||
	    cJSON_AddRawToObject(res, "processes", text) == NULL ||
	    (cnt = cJSON_AddObjectToObject(res, "counters")) == NULL)
		fatalx("%s: out of memory", __func__);
	evbuffer_free(b);
	cJSON_AddStringToObject(res, "version", RTSANDBOX_VERSION);
	cJSON_AddNumberToObject(res, "uptime_s",
	    (double)(now.tv_sec - sv->sv_started.tv_sec));
	cJSON_AddNumberToObject(res, "brokers", brokers);
	cJSON_AddNumberToObject(res, "channels", chan_count());
	cJSON_AddNumberToObject(res, "research_jobs", research_running());
	cJSON_AddNumberToObject(cnt, "control_clients", control_clients());
	cJSON_AddNumberToObject(cnt, "control_connections",
	    k->sc_connections);
	cJSON_AddNumberToObject(cnt, "control_requests", k->sc_requests);
	cJSON_AddNumberToObject(cnt, "control_errors", k->sc_errors);
	cJSON_AddNumberToObject(cnt, "child_exits", k->sc_child_exits);
	cJSON_AddNumberToObject(cnt, "child_restarts", k->sc_child_restarts);
	cJSON_AddNumberToObject(cnt, "violations", k->sc_violations);
	if ((rules = cJSON_AddObjectToObject(cnt, "violations_by_rule")) ==
	    NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 1; i < VIOLATION__COUNT; i++)
		cJSON_AddNumberToObject(rules, violation_name(i),
		    k->sc_rules[i]);
	cJSON_AddNumberToObject(cnt, "turns", k->sc_turns);
	cJSON_AddNumberToObject(cnt, "upstream_calls", k->sc_upstream_calls);
	cJSON_AddNumberToObject(cnt, "failures", k->sc_failures);
	cJSON_AddNumberToObject(cnt, "reloads", k->sc_reloads);
	cJSON_AddNumberToObject(cnt, "reloads_refused", k->sc_reloads_refused);
	return res;
}

static void
method_daemon_stats(struct ctl_req *cr, cJSON *params)
{
	static const char *const allowed[] = { NULL };

	if (ctl_params_only(cr, params, allowed) == -1)
		return;
	ctl_reply(cr, daemon_stats());
}

/*
 * What the daemon runs with, for a client that stands in for
 * PiSandboxRuntime 0.7.3's options: every setting a bot could read from
 * them, never a credential or where one is kept: only whether each comes
 * from a file, from the client's credential.get hook, or (MCP) nowhere.
 */
/* The precheck section as it runs, or null without one. */
static void
daemon_config_precheck(cJSON *res, const struct config *cfg)
{
	cJSON	*o, *lim, *argv;
	size_t	 i;

	if (cfg->precheck_argv == NULL) {
		cJSON_AddNullToObject(res, "precheck");
		return;
	}
	if ((o = cJSON_AddObjectToObject(res, "precheck")) == NULL ||
	    (argv = cJSON_AddArrayToObject(o, "entrypoint")) == NULL ||
	    (lim = cJSON_AddObjectToObject(o, "limits")) == NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 0; i < cfg->precheck_argc; i++)
		cJSON_AddItemToArray(argv,
		    cJSON_CreateString(cfg->precheck_argv[i]));
	cJSON_AddNumberToObject(o, "timeout_ms",
	    (double)cfg->precheck_timeout_ms);
	cJSON_AddNumberToObject(o, "max_calls", (double)cfg->precheck_max_calls);
	cJSON_AddNumberToObject(o, "max_runs", (double)cfg->precheck_max_runs);
	cJSON_AddNumberToObject(lim, "memory_mib",
	    (double)cfg->precheck_memory_mib);
	cJSON_AddNumberToObject(lim, "cpus",
	    (double)cfg->precheck_nano_cpus / 1e9);
	cJSON_AddNumberToObject(lim, "pids", (double)cfg->precheck_pids);
}

static cJSON *
daemon_config(const struct config *cfg)
{
	const struct config_profile	*p;
	const struct config_mcp_server	*m;
	cJSON				*res, *o, *pr, *arr, *srv;
	size_t				 i, j;

	if ((res = cJSON_CreateObject()) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddStringToObject(res, "version", RTSANDBOX_VERSION);
	cJSON_AddStringToObject(res, "state_dir", cfg->state_dir);
	cJSON_AddStringToObject(res, "image", cfg->image);
	if ((o = cJSON_AddObjectToObject(res, "profiles")) == NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 0; i < cfg->nprofiles; i++) {
		p = &cfg->profiles[i];
		if ((pr = cJSON_AddObjectToObject(o, p->name)) == NULL ||
		    cJSON_AddStringToObject(pr, "model", p->model) == NULL ||
		    (arr = cJSON_AddArrayToObject(pr, "mcp")) == NULL)
			fatalx("%s: out of memory", __func__);
		for (j = 0; j < p->nmcp; j++)
			cJSON_AddItemToArray(arr,
			    cJSON_CreateString(p->mcp[j]));
	}
	if ((o = cJSON_AddObjectToObject(res, "upstream")) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddStringToObject(o, "url", cfg->upstream_url);
	cJSON_AddStringToObject(o, "credential",
	    cfg->upstream_credential_hook ? "hook" : "file");
	if ((o = cJSON_AddObjectToObject(res, "mcp")) == NULL ||
	    (arr = cJSON_AddArrayToObject(o, "servers")) == NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 0; i < cfg->nmcp_servers; i++) {
		m = &cfg->mcp_servers[i];
		if ((srv = cJSON_CreateObject()) == NULL ||
		    cJSON_AddStringToObject(srv, "name", m->name) == NULL ||
		    cJSON_AddStringToObject(srv, "url", m->url) == NULL ||
		    (pr = cJSON_AddArrayToObject(srv, "tools")) == NULL)
			fatalx("%s: out of memory", __func__);
		for (j = 0; j < m->ntools; j++)
			cJSON_AddItemToArray(pr,
			    cJSON_CreateString(m->tools[j]));
		cJSON_AddItemToArray(arr, srv);
	}
	cJSON_AddBoolToObject(o, "allow_http", cfg->mcp_allow_http);
	cJSON_AddStringToObject(o, "credential", cfg->mcp_credential_hook ?
	    "hook" : cfg->mcp_credential_file != NULL ? "file" : "none");
	if ((arr = cJSON_AddArrayToObject(res, "tools")) == NULL)
		fatalx("%s: out of memory", __func__);
	for (i = 0; i < cfg->ntools; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(cfg->tools[i]));
	if ((o = cJSON_AddObjectToObject(res, "docker")) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddStringToObject(o, "container_prefix", cfg->container_prefix);
	cJSON_AddStringToObject(o, "label_channel", cfg->label_channel);
	cJSON_AddStringToObject(o, "label_profile", cfg->label_profile);
	cJSON_AddStringToObject(res, "time_zone", cfg->time_zone);
	if ((o = cJSON_AddObjectToObject(res, "timeouts")) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddNumberToObject(o, "start_ms", (double)cfg->start_ms);
	cJSON_AddNumberToObject(o, "turn_ms", (double)cfg->turn_ms);
	if ((o = cJSON_AddObjectToObject(res, "budgets")) == NULL)
		fatalx("%s: out of memory", __func__);
	cJSON_AddNumberToObject(o, "max_calls", (double)cfg->max_calls);
	cJSON_AddNumberToObject(o, "max_output_tokens",
	    (double)cfg->max_output_tokens);
	cJSON_AddStringToObject(res, "default_thinking",
	    cfg->default_thinking);
	if (cfg->has_bot_group)
		cJSON_AddStringToObject(res, "bot_group", cfg->bot_group);
	else
		cJSON_AddNullToObject(res, "bot_group");
	daemon_config_precheck(res, cfg);
	return res;
}

static void
method_daemon_config(struct ctl_req *cr, cJSON *params)
{
	static const char *const allowed[] = { NULL };

	if (ctl_params_only(cr, params, allowed) == -1)
		return;
	ctl_reply(cr, daemon_config(sv->sv_conf));
}

static void
method_daemon_stop_brokers(struct ctl_req *cr, cJSON *params)
{
	static const char *const allowed[] = { NULL };
	cJSON		*res;
	uint64_t	 n;

	if (ctl_params_only(cr, params, allowed) == -1)
		return;
	n = chan_stop_brokers();
	log_info("%llu broker(s) stopped on request; containers kept",
	    (unsigned long long)n);
	if ((res = cJSON_CreateObject()) == NULL ||
	    cJSON_AddNumberToObject(res, "stopped", (double)n) == NULL)
		fatalx("%s: out of memory", __func__);
	ctl_reply(cr, res);
}

const struct ctl_method ctl_methods[] = {
	{ "initialize",		method_initialize,	1 },
	{ "daemon.stats",	method_daemon_stats,	0 },
	{ "daemon.config",	method_daemon_config,	0 },
	{ "daemon.stop_brokers", method_daemon_stop_brokers, 0 },
	{ "channel.start",	method_channel_start,	0 },
	{ "channel.stop",	method_channel_stop,	0 },
	{ "channel.fresh",	method_channel_fresh,	0 },
	{ "channel.paths",	method_channel_paths,	0 },
	{ "channel.status",	method_channel_status,	0 },
	{ "channel.list",	method_channel_list,	0 },
	{ "turn.run",		method_turn_run,	0 },
	{ "turn.cancel",	method_turn_cancel,	0 },
	{ "research.run",	method_research_run,	0 },
	{ "research.cancel",	method_research_cancel,	0 },
	{ "precheck.run",	method_precheck_run,	0 },
	{ "attachments.fetch",	method_attachments_fetch, 0 },
	{ "fetch.get",		method_fetch_get,	0 },
	{ "fetch.check",	method_fetch_check,	0 },
	{ NULL,			NULL,			0 }
};
