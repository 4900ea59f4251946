/*
 * What a failed turn leaves for the operator: one record of its cause
 * (reason, message, whether it timed out) and, when the worker timed out
 * or failed, the worker's last log lines, read through the Docker client
 * before the container is removed.  The Docker client serves one request
 * at a time, in order, so the removal that turn_end() asks for next waits
 * for these lines, DOCK_LOGS_TIMEOUT_MS at most (docklogs.h); the answer
 * to turn.run goes once the container is gone, as before.
 */
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <cjson/cJSON.h>
#include <event2/event.h>

#include "journal.h"
#include "limits.h"
#include "log.h"
#include "supervisor.h"

/* Lines asked of the engine: PiSandboxRuntime 0.7.10's. */
#define EVIDENCE_LOG_LINES	200u
/* How long a worker's last lines may take to reach the engine's log. */
#define EVIDENCE_SETTLE_MS	300
/* A line as the Docker client escaped it (DOCK_LOG_LINE_MAX and "..."). */
#define EVIDENCE_LINE_BYTES	516u

struct evidence_logs {
	char	*el_key;
	char	*el_turn;
	int	 el_removed;	/* the container goes after this */
	struct event *el_timer;	/* until its log has settled */
};

static const char *
evidence_str(const cJSON *o, const char *k)
{
	const cJSON	*it = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* Text for one log line: control characters cannot come from the Docker
 * client, which escaped them, and are refused here all the same. */
static void
evidence_tame(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

static void
evidence_logged(struct child *dk, struct msg *m, void *arg)
{
	static struct jrec	 jr;
	static char		 all[EVIDENCE_LOG_LINES *
				    (EVIDENCE_LINE_BYTES + 1)];
	struct evidence_logs	*el = arg;
	const char		**lines, *err = NULL;
	size_t			 n = 0, i, o = 0, k;
	int			 cut = 0, missing = 0;

	if (m == NULL)
		err = "the Docker client stopped";
	else if (m->m_type == MSG_ERROR) {
		if (msg_get_str(m, "error", 512, &err) == -1)
			err = "the Docker client failed";
	} else if (m->m_type != MSG_DOCK_LOGGED ||
	    msg_get_strv(m, "lines", EVIDENCE_LOG_LINES, EVIDENCE_LINE_BYTES,
	    &lines, &n) == -1 || msg_get_bool(m, "cut", &cut) == -1 ||
	    msg_get_bool(m, "missing", &missing) == -1 || msg_end(m) == -1) {
		err = "a malformed answer";
		n = 0;
	}
	if (err != NULL) {
		jrec_init(&jr, LOG_WARNING, "worker log unavailable");
		jrec_add_str(&jr, "channel", el->el_key);
		jrec_add_str(&jr, "turn", el->el_turn);
		jrec_add_str(&jr, "error", err);
		(void)jrec_send(&jr);
		goto done;
	}
	jrec_init(&jr, LOG_WARNING, el->el_removed ?
	    "worker log before removal" : "worker log");
	jrec_add_str(&jr, "channel", el->el_key);
	jrec_add_str(&jr, "turn", el->el_turn);
	jrec_add_uint(&jr, "lines", n);
	if (cut)
		jrec_add_str(&jr, "cut", "true");
	if (missing)
		jrec_add_str(&jr, "container", "missing");
	for (i = 0; i < n; i++) {
		k = strlen(lines[i]);
		memcpy(all + o, lines[i], k);
		o += k;
		if (i + 1 < n)
			all[o++] = '\n';
	}
	jrec_add_journal_only(&jr, "worker_log", all, o);
	if (jrec_send(&jr) == 0)
		/* The log has no room for them on one line: one each. */
		for (i = 0; i < n; i++) {
			evidence_tame((char *)lines[i]);
			log_warnx("worker log: channel=%s turn=%s: %s",
			    el->el_key, el->el_turn, lines[i]);
		}
 done:
	free(el->el_key);
	free(el->el_turn);
	free(el);
}

static void
evidence_ask(struct evidence_logs *el)
{
	struct child		*dk;
	struct msgb		 mb;
	const char		*key = el->el_key, *turn_id = el->el_turn;

	if ((dk = child_singleton(PROC_DOCKER)) == NULL) {
		free(el->el_key);
		free(el->el_turn);
		free(el);
		return;
	}
	msgb_init(&mb, MSG_DOCK_LOGS, 0);
	msg_add_str(&mb, "channel", key);
	msg_add_uint(&mb, "lines", EVIDENCE_LOG_LINES);
	if (child_request(dk, &mb, evidence_logged, el) == -1) {
		log_warnx("channel %s: turn %s: the Docker client cannot read "
		    "the worker's log now", key, turn_id);
		free(el->el_key);
		free(el->el_turn);
		free(el);
	}
}

static void
evidence_settled(evutil_socket_t fd, short ev, void *arg)
{
	struct evidence_logs	*el = arg;

	event_free(el->el_timer);
	el->el_timer = NULL;
	evidence_ask(el);
}

/*
 * A container that goes is read at once: its removal waits behind the
 * read.  One that stays, after a worker that answered its failure, is
 * read EVIDENCE_SETTLE_MS later: the worker's last lines, written just
 * before its answer, may not have reached the engine's log yet.
 */
static void
evidence_worker_logs(const char *key, const char *turn_id, int removed)
{
	struct evidence_logs	*el;
	struct timeval		 tv = { 0, EVIDENCE_SETTLE_MS * 1000 };

	if ((el = calloc(1, sizeof(*el))) == NULL)
		fatal("%s", __func__);
	el->el_key = xstrdup(key);
	el->el_turn = xstrdup(turn_id);
	el->el_removed = removed;
	if (removed) {
		evidence_ask(el);
		return;
	}
	if ((el->el_timer = evtimer_new(sv->sv_base, evidence_settled,
	    el)) == NULL || evtimer_add(el->el_timer, &tv) == -1)
		fatalx("%s: timer", __func__);
}

void
evidence_turn_failed(const char *key, const char *turn_id,
    const char *speaker, const cJSON *result, int removed, int delivered)
{
	static struct jrec	 jr;
	const char		*reason, *message, *worker;
	const cJSON		*to;
	int			 timed_out;

	if (result == NULL || !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(
	    result, "ok")) || (reason = evidence_str(result, "reason")) == NULL)
		return;
	message = evidence_str(result, "message");
	worker = evidence_str(result, "workerError");
	to = cJSON_GetObjectItemCaseSensitive(result, "timedOut");
	timed_out = cJSON_IsTrue(to);
	jrec_init(&jr, LOG_WARNING, "turn failed");
	jrec_add_str(&jr, "channel", key);
	jrec_add_str(&jr, "turn", turn_id);
	if (speaker != NULL)
		jrec_add_str(&jr, "speaker", speaker);
	jrec_add_str(&jr, "reason", reason);
	jrec_add_str(&jr, "timed_out", timed_out ? "true" : "false");
	if (message != NULL)
		jrec_add(&jr, "message", message, strlen(message) > 1000 ?
		    1000 : strlen(message));
	/* the guest's own words: bounded, and escaped on the log's line */
	if (worker != NULL)
		jrec_add(&jr, "worker_error", worker, strlen(worker) > 1000 ?
		    1000 : strlen(worker));
	(void)jrec_send(&jr);
	if (delivered && (strcmp(reason, "timeout") == 0 ||
	    strcmp(reason, "worker_failed") == 0))
		evidence_worker_logs(key, turn_id, removed);
}
