/*
 * What the broker's files share: its state, and the answers and messages
 * every route uses.  Private to the broker (broker.h is its interface).
 */
#ifndef RTSANDBOX_BROKERPRIV_H
#define RTSANDBOX_BROKERPRIV_H

#include <sys/queue.h>

#include <stdint.h>
#include <time.h>

#include <event2/util.h>

#include "bodies.h"
#include "http.h"
#include "msg.h"
#include "rebuild.h"
#include "role.h"

#define MCP_SERVERS_PER_PROFILE	32
#define MCP_TOOLS_PER_SERVER	128
#define HOST_TOOLS_MAX		64
/* Out of memory on one request: a status the worker's client retries, and
 * the rest of the broker goes on. */
#define BROKER_BUSY		"Broker busy"
/* Bytes are acknowledged to egress while at most LOWAT wait for the
 * worker, in batches of at least BATCH: each ack is a write here, and a
 * read and often a wake-up in egress.  BATCH is half of egress's window,
 * where egress resumes, so egress never waits for an ack that is not
 * coming. */
#define BROKER_ACK_LOWAT	(128u * 1024)
#define BROKER_ACK_BATCH	(256u * 1024)
/* What one read from egress takes at most: a streamed answer comes in
 * frames of 64 KiB, several to a write. */
#define BROKER_EGRESS_READ	(256u * 1024)
/* Quiet for this long, an idle broker gives its free memory back. */
#define BROKER_IDLE_MS		1000
/* A model or MCP call is told to the supervisor at most this long after
 * it went to egress (sup_call()). */
#define BROKER_TELL_MS		10

struct scope {
	int		 sc_refs;	/* the broker's, and each call's */
	int		 sc_turn;	/* a bound turn, else the startup window */
	int		 sc_ended;
	uint64_t	 sc_calls_left;
	unsigned	 sc_inflight;
	uint64_t	 sc_deadline;	/* monotonic ms */
	char		*sc_turn_id;
	enum rebuild_level sc_level;
	unsigned	 sc_compacts;	/* compact requests of the turn */
	unsigned	 sc_reports;	/* compaction reports */
};

struct mcp_server {
	char		*ms_name;
	char		**ms_tools;
	size_t		 ms_ntools;
};

enum call_kind {
	CALL_MODEL,
	CALL_MCP,
	CALL_TOOL,
	CALL_PRECHECK,	/* a precheck run's tools/call */
};

struct call {
	TAILQ_ENTRY(call)	 cl_entry;
	struct broker		*cl_broker;
	uint64_t		 cl_id;
	enum call_kind		 cl_kind;
	struct http_conn	*cl_conn;	/* NULL once the worker left */
	struct scope		*cl_scope;
	int			 cl_headed;	/* egress sent the head */
	int			 cl_streaming;
	int			 cl_nobody;	/* 204/205: head only */
	uint64_t		 cl_unacked;	/* bytes egress sent, not acked */
	struct timespec		 cl_start;
	TAILQ_ENTRY(call)	 cl_batch_entry;	/* data in this read */
	int			 cl_in_batch;
};

/* What a connection is doing, for on_close. */
enum conn_role {
	CONN_OTHER,
	CONN_POLL,
	CONN_RESULT,
	CONN_CALL,
	CONN_COMPACT,
};

struct conn_state {
	enum conn_role		 cs_role;
	struct call		*cs_call;
};

struct broker {
	struct event_base	*br_base;
	struct role_parent	*br_parent;
	struct frame_conn	*br_egress;
	struct http_server	*br_http;
	struct hold		*br_hold;	/* request bodies held */
	char			*br_channel;
	char			*br_profile;
	char			*br_model;
	uint64_t		 br_max_calls;
	uint64_t		 br_max_output_tokens;
	int			 br_listen_fd;
	char			**br_tools;
	size_t			 br_ntools;
	struct mcp_server	 br_mcp[MCP_SERVERS_PER_PROFILE];
	size_t			 br_nmcp;

	/* the worker */
	int			 br_ready;
	struct http_conn	*br_poll;
	struct http_conn	*br_receiving;
	char			*br_turn_id;	/* the pending turn */
	char			*br_turn_json;
	size_t			 br_turn_len;
	int			 br_turn_delivered;
	int			 br_turn_cancelled;
	int			 br_turn_private;	/* its memory is */
	struct body_ready	 br_caps;	/* the worker's last ready */

	/* scopes */
	struct scope		*br_scope;	/* bound turn or window */
	uint64_t		 br_window_armed;	/* monotonic ms, 0 never */

	/* calls to egress and to the supervisor */
	TAILQ_HEAD(, call)	 br_calls;
	uint64_t		 br_next_id;
	TAILQ_HEAD(, call)	 br_batch;	/* got data from this read */
	struct event		*br_idle;	/* gives memory back */
	/* calls sent to egress, not yet told to the supervisor: all of one
	 * kind, route and turn (sup_call()) */
	uint64_t		 br_untold;
	const char		*br_untold_kind;
	char			*br_untold_route;
	char			*br_untold_turn;	/* NULL: no turn */
	struct event		*br_tell;

	/* the host compactor: NULL engine when there is none */
	char			*br_compact_engine;
	uint64_t		 br_compact_timeout_ms;
	uint64_t		 br_compact_max;
	uint64_t		 br_compact_id;	/* asked, not answered */
	struct http_conn	*br_compact_conn;	/* NULL once gone */

	/* a precheck run's broker: one scope, made at configuration */
	int			 br_precheck;
	uint64_t		 br_deadline_ms;
	struct event		*br_run_end;
};

/* call.c: calls, and the broker's rest when none is left */
/* Idle: BROKER_IDLE_MS after the last end, memory goes back. */
void		 broker_idle(evutil_socket_t, short, void *);
void		 broker_idle_later(struct broker *);
/* NULL when out of memory; the call is the conn's (CONN_CALL). */
struct call	*call_new(struct broker *, enum call_kind, struct http_conn *,
		    struct scope *);
void		 call_free(struct call *);
void		 call_refuse(struct call *, int status, const char *why);
/* 0, or the status to answer instead; h NULL: no worker header goes. */
int		 egress_send_call(struct call *, const struct http_head *,
		    const char *kind, const char *path, const char *server,
		    const char *body, size_t len);
struct mcp_server *mcp_find(struct broker *, const char *);
struct call	*call_find(struct broker *, uint64_t id);
/* A call egress could not complete: the broker's answer, or a cut body. */
void		 call_fail(struct call *, int status, const char *text);

/* scope.c */
/* NULL when out of memory. */
struct scope	*scope_new(int turn, uint64_t calls, uint64_t deadline);
void		 scope_unref(struct scope *);
/* The current scope, or NULL when none is in force. */
struct scope	*scope_current(struct broker *);
/* The startup window again, where PROTOCOL.md 3.4 allows it. */
void		 window_rearm(struct broker *);

/* answer.c */
void		 respond_text(struct http_conn *, int status, const char *);
void		 respond_json(struct http_conn *, int status, const char *,
		    size_t);
/* A body that could not be read: 400 invalid, or 503 out of memory. */
void		 respond_body_err(struct http_conn *, enum http_body_err,
		    const char *invalid);
struct conn_state *conn_state(struct http_conn *);
int		 sup_send(struct broker *, struct msgb *);
void		 sup_event(struct broker *, const char *kind,
		    const char *route, int status, const char *turn_id);
void		 sup_call(struct broker *, const char *kind,
		    const char *route, const char *turn_id);
void		 sup_tell(evutil_socket_t, short, void *);
void		 sup_untold_drop(struct broker *, const char *turn_id);

/* worker.c: the worker's own routes (PROTOCOL.md 3.1) */
void		 worker_route(struct broker *, struct http_conn *,
		    const struct http_head *);
int		 worker_private_ok(const struct broker *);
const char	*turn_stale_need(const struct broker *);
void		 worker_stale(struct broker *, const char *need);
void		 turn_deliver(struct broker *, struct http_conn *);

/* compact.c: compaction (rtsandbox-protocol(7), contract 0.7.10) */
void		 compact_config(struct broker *, struct http_conn *);
void		 compact_route(struct broker *, struct http_conn *,
		    const struct http_head *);
int		 broker_compacted(struct broker *, struct msg *);

/* precheck.c: a precheck run (rtsandbox-protocol(7), contract 0.7.11) */
/* The run's fields of CONFIG_BROKER: 0 and *precheck, or -1. */
int		 precheck_config(struct broker *, struct msg *, int *precheck);
/* At the end of configuration: the run's scope, and its end. */
const char	*precheck_start(struct broker *);
void		 precheck_route(struct broker *, struct http_conn *,
		    const struct http_head *);

#endif
