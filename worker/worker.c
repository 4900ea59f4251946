/*
 * rtsandbox-worker: the reference worker that runs as PID 1 in a channel's
 * container (DESIGN.md 10).  It speaks the loop of PROTOCOL.md section 2
 * to the broker's socket and hands each turn to the agent.
 *
 * The socket comes from RTSANDBOX_SOCKET and the workspace from
 * RTSANDBOX_WORKSPACE, so that the same binary runs outside Docker in
 * tests.  It resolves no names, reads no configuration and touches no file
 * but the outbox.  Started as "rtsandbox-worker precheck" it runs one
 * precheck script instead (precheck.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "precheck.h"
#include "whttp.h"
#include "wjson.h"
#include "wlog.h"

#define SOCKET_DEFAULT		"/run/sandbox/broker.sock"
#define WORKSPACE_DEFAULT	"/workspace"

/* "POST /worker/ready (client timeout 5 s)". */
#define READY_TIMEOUT_MS	5000
/* "GET /worker/next (client timeout 55 s)". */
#define NEXT_TIMEOUT_MS		55000
/* "POST /worker/result (client timeout 60 s)". */
#define RESULT_TIMEOUT_MS	60000
/* "On a non-2xx answer it sleeps 250 ms and starts again". */
#define RETRY_MS		250
/* PROTOCOL.md gives discovery no timeout; it must not hold up the loop. */
#define DISCOVERY_TIMEOUT_MS	5000
/* Short answers: "Ready", "Accepted", a refusal, the MCP list. */
#define SMALL_BODY_MAX		(1u * W_MIB)
/* The same complaint is logged again once a minute at most. */
#define LOG_REPEAT_EVERY	240

static char	 last_complaint[256];
static int	 complaint_repeats;

/*
 * A broker that is away makes the loop fail four times a second: say it
 * once, then now and then, and say when it is back.
 */
static void __attribute__((format(printf, 1, 2)))
complain(const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[sizeof(last_complaint)];

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (strcmp(msg, last_complaint) == 0 &&
	    ++complaint_repeats % LOG_REPEAT_EVERY != 0)
		return;
	if (strcmp(msg, last_complaint) != 0)
		complaint_repeats = 0;
	memcpy(last_complaint, msg, sizeof(msg));
	wlog("%s", msg);
}

static void
all_well(void)
{
	if (last_complaint[0] == '\0')
		return;
	wlog("broker answers again");
	last_complaint[0] = '\0';
	complaint_repeats = 0;
}

static void
on_signal(int sig)
{
	static const char	 msg[] = WLOG_PREFIX "stopping\n";
	ssize_t			 n;

	/*
	 * Nothing is buffered that must outlive the container, and a turn
	 * cut short is the host's to settle: leave at once, as docker stop
	 * expects of PID 1.
	 */
	n = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)n;
	_exit(0);
}

static void
backoff(void)
{
	struct timespec	 ts;

	ts.tv_sec = RETRY_MS / 1000;
	ts.tv_nsec = (long)(RETRY_MS % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		continue;
}

/* Once at start; the agent has no use for the list yet, so it is logged. */
static void
discover(const struct agent_config *cfg)
{
	struct whttp_response	 resp;
	struct wjson		*list, *servers;
	enum whttp_err		 e;

	e = whttp_call(cfg->ac_socket, "GET", "/mcp-tools", NULL, 0,
	    DISCOVERY_TIMEOUT_MS, SMALL_BODY_MAX, &resp);
	if (e != WHTTP_OK)
		wlog("mcp-tools: %s", whttp_err_to_string(e));
	else if (resp.ws_status != 200)
		wlog("mcp-tools: HTTP %d", resp.ws_status);
	else {
		list = wjson_parse(resp.ws_body.b_data, resp.ws_body.b_len,
		    NULL, NULL);
		servers = wjson_get(list, "servers");
		if (wjson_is(servers, WJSON_ARRAY))
			wlog("mcp-tools: %zu server%s", servers->j_count,
			    servers->j_count == 1 ? "" : "s");
		else
			wlog("mcp-tools: malformed answer");
		wjson_free(list);
	}
	whttp_response_free(&resp);
}

/*
 * What this worker keeps (rtsandbox-protocol(7), contract 0.9): nothing
 * of one turn reaches another, so an exchange only one principal may
 * read stays theirs (privateTo), nobody else ever reads a turn's memory
 * (readerRecords), and there is no history to replay.
 */
static const char	 ready_body[] = "{\"capabilities\":{\"privateTo\":true,"
    "\"readerRecords\":true},\"privateHistory\":false}";

static int
announce(const struct agent_config *cfg)
{
	struct whttp_response	 resp;
	enum whttp_err		 e;
	int			 status;

	e = whttp_call(cfg->ac_socket, "POST", "/worker/ready", ready_body,
	    sizeof(ready_body) - 1, READY_TIMEOUT_MS, SMALL_BODY_MAX, &resp);
	status = resp.ws_status;
	whttp_response_free(&resp);
	if (e != WHTTP_OK) {
		complain("/worker/ready: %s", whttp_err_to_string(e));
		return -1;
	}
	if (status < 200 || status > 299) {
		complain("/worker/ready: HTTP %d", status);
		return -1;
	}
	return 0;
}

/* The turn's body, or NULL: no turn this time. */
static char *
poll_turn(const struct agent_config *cfg, size_t *lenp)
{
	struct whttp_response	 resp;
	enum whttp_err		 e;
	char			*body = NULL;

	e = whttp_call(cfg->ac_socket, "GET", "/worker/next", NULL, 0,
	    NEXT_TIMEOUT_MS, W_TURN_BODY_MAX, &resp);
	if (e != WHTTP_OK)
		complain("/worker/next: %s", whttp_err_to_string(e));
	else if (resp.ws_status == 200) {
		all_well();
		body = wbuf_steal(&resp.ws_body, lenp);
	} else if (resp.ws_status == 408)
		all_well();	/* the long poll ran out: the idle case */
	else
		complain("/worker/next: HTTP %d", resp.ws_status);
	whttp_response_free(&resp);
	return body;
}

static void
post_result(const struct agent_config *cfg, const char *body, size_t len)
{
	struct whttp_response	 resp;
	enum whttp_err		 e;

	/* Its status changes nothing (PROTOCOL.md 2), but the log helps. */
	e = whttp_call(cfg->ac_socket, "POST", "/worker/result", body, len,
	    RESULT_TIMEOUT_MS, SMALL_BODY_MAX, &resp);
	if (e != WHTTP_OK)
		wlog("/worker/result: %s", whttp_err_to_string(e));
	else if (resp.ws_status < 200 || resp.ws_status > 299)
		wlog("/worker/result: HTTP %d", resp.ws_status);
	whttp_response_free(&resp);
}

int
main(int argc, char *argv[])
{
	struct agent_config	 cfg;
	struct sigaction	 sa;
	char			*turn, *result;
	size_t			 len, rlen;

	/* "/rtsandbox-worker precheck": a precheck container's one run. */
	if (argc >= 2 && strcmp(argv[1], "precheck") == 0)
		precheck_main();

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigfillset(&sa.sa_mask);
	/* As PID 1 in the container, only handled signals reach us. */
	if (sigaction(SIGTERM, &sa, NULL) == -1 ||
	    sigaction(SIGINT, &sa, NULL) == -1) {
		wlog_errno("sigaction");
		return 1;
	}
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGPIPE, &sa, NULL) == -1) {
		wlog_errno("sigaction");
		return 1;
	}

	memset(&cfg, 0, sizeof(cfg));
	if ((cfg.ac_socket = getenv("RTSANDBOX_SOCKET")) == NULL ||
	    *cfg.ac_socket == '\0')
		cfg.ac_socket = SOCKET_DEFAULT;
	if ((cfg.ac_workspace = getenv("RTSANDBOX_WORKSPACE")) == NULL ||
	    *cfg.ac_workspace == '\0')
		cfg.ac_workspace = WORKSPACE_DEFAULT;
	wlog("started, broker at %s", cfg.ac_socket);

	discover(&cfg);
	compact_config(&cfg);
	for (;;) {
		/* Ready before every poll: a restarted host learns of us. */
		if (announce(&cfg) == -1) {
			backoff();
			continue;
		}
		if ((turn = poll_turn(&cfg, &len)) == NULL) {
			backoff();
			continue;
		}
		result = agent_turn(&cfg, turn, len, &rlen);
		free(turn);
		if (result != NULL) {
			post_result(&cfg, result, rlen);
			free(result);
		}
	}
}
