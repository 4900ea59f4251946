/*
 * The supervisor's shared state: the configuration, its children and the
 * control socket.  It never holds the state directory, Docker, the network
 * or a credential.
 */
#ifndef RTSANDBOX_SUPERVISOR_H
#define RTSANDBOX_SUPERVISOR_H

#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>
#include <time.h>

#include "config.h"
#include "msg.h"
#include "proc.h"
#include "violation.h"

struct event_base;
struct event;
struct cJSON;
struct ctl_client;

/* Counters reported by daemon.stats. */
struct sup_counters {
	uint64_t	 sc_connections;	/* control connections accepted */
	uint64_t	 sc_requests;		/* control requests received */
	uint64_t	 sc_errors;		/* error answers sent */
	uint64_t	 sc_child_exits;	/* children reaped */
	uint64_t	 sc_child_restarts;	/* singletons restarted */
	uint64_t	 sc_violations;		/* violations seen, by anyone */
	uint64_t	 sc_rules[VIOLATION__COUNT];	/* the same by rule */
	uint64_t	 sc_turns;
	uint64_t	 sc_upstream_calls;
	uint64_t	 sc_failures;
	uint64_t	 sc_reloads;		/* SIGHUP applied */
	uint64_t	 sc_reloads_refused;
};

struct supervisor {
	struct event_base	*sv_base;
	struct config		*sv_conf;
	char			*sv_conf_path;	/* absolute, for reloads */
	/* Bumped by a reload that changes what brokers are told: a broker
	 * configured before is replaced at its channel's next start. */
	uint64_t		 sv_broker_gen;
	const char		*sv_helper_dir;	/* -x, or NULL */
	int			 sv_build_tree;	/* running uninstalled */
	int			 sv_debug;
	uid_t			 sv_uid;
	gid_t			 sv_gid;
	struct timespec		 sv_started;
	struct sup_counters	 sv_count;
	int			 sv_stopping;
};

/* sv.c */
extern struct supervisor	*sv;

/* reload.c: SIGHUP. */
void		 supervisor_reload(void);

/* child.c */
enum child_state {
	CHILD_DOWN,		/* not running; a restart may be scheduled */
	CHILD_STARTING,		/* spawned, configuration sent, no ready yet */
	CHILD_READY,
	CHILD_STOPPING,		/* asked to go; reaping pending */
};
const char	*child_state_to_string(enum child_state);

struct child;
/* A reply, or NULL when the child died or was stopped first. */
typedef void	(*child_reply_cb)(struct child *, struct msg *, void *);
/* Notified once when a child becomes ready or goes down. */
typedef void	(*child_event_cb)(struct child *, int ready, void *);
/* A message the child sent on its own (not a reply); -1 is a violation. */
typedef int	(*child_msg_cb)(struct child *, struct msg *, void *);

struct child_req {
	TAILQ_ENTRY(child_req)	 cr_entry;
	struct child		*cr_child;
	uint64_t		 cr_id;
	enum msg_type		 cr_type;
	enum msg_type		 cr_reply;
	child_reply_cb		 cr_cb;
	void			*cr_arg;
	/* waiting for the child to be ready: the request, and how long */
	struct msgb		*cr_msg;
	struct event		*cr_timer;
	uint64_t		 cr_deadline;	/* monotonic ms */
	/* a repeatable request as it was sent, to send again */
	char			*cr_json;
	size_t			 cr_json_len;
};

struct child {
	TAILQ_ENTRY(child)	 c_entry;
	enum proc_role		 c_role;
	char			*c_name;	/* brokers: the channel segment */
	pid_t			 c_pid;
	struct frame_conn	*c_conn;
	enum child_state	 c_state;
	int			 c_singleton;
	unsigned		 c_failures;	/* quick deaths in a row */
	uint64_t		 c_restarts;
	struct timespec		 c_started;
	int			 c_spawn_errno;	/* why the last start failed */
	struct event		*c_timer;	/* ready timeout or back-off */
	uint64_t		 c_next_id;
	TAILQ_HEAD(, child_req)	 c_reqs;
	TAILQ_HEAD(, child_req)	 c_waiting;	/* until it is ready */
	child_event_cb		 c_event_cb;
	child_msg_cb		 c_msg_cb;
	void			*c_event_arg;
	/* brokers and research jobs: their edge at egress (its end kept
	 * until egress is ready to take it), and whether they were stopped
	 * for breaking a rule */
	uint64_t		 c_peer;
	int			 c_egress_end;
	int			 c_dropped;	/* egress told to drop it */
	int			 c_edge_lost;	/* with the egress it was at */
	enum violation		 c_violation;
	struct refusals		 c_refusals;
	/* stopping: SIGTERM sent; who waits for the process to be gone */
	int			 c_term_sent;
	void			(*c_gone_cb)(void *);
	void			*c_gone_arg;
	/* brokers: what to send at bring-up */
	int			 c_listen_fd;
	char			*c_channel;
	char			*c_profile;
	/* research jobs: the thinking level egress holds them to */
	char			*c_thinking;
	/* brokers and research jobs: memory last read for daemon.stats */
	struct proc_mem		 c_mem;
	uint64_t		 c_mem_ms;	/* monotonic ms, 0 never */
	/* research jobs: their configuration, sent at bring-up */
	struct msgb		*c_config;
	/* precheck brokers: the tools granted, "server/tool", grouped by
	 * server; the calls and the time the run may spend */
	int			 c_precheck;
	char			**c_grant;
	size_t			 c_ngrant;
	uint64_t		 c_pc_calls;
	uint64_t		 c_pc_deadline_ms;
};
TAILQ_HEAD(child_list, child);
extern struct child_list	 children;

/* What the rest of the supervisor hears of the helpers (main.c). */
struct child_hooks {
	void		(*ch_up)(struct child *);	/* ready */
	void		(*ch_down)(struct child *);	/* gone */
	child_msg_cb	  ch_docker_msg;	/* the Docker client's events */
};
void		 child_init(const struct child_hooks *);
void		 child_start_singletons(void);
struct child	*child_singleton(enum proc_role);
/* Egress's profiles and MCP servers again, after a reload. */
void		 child_egress_reload(void);
/* Start a channel's broker on a listening socket (the broker owns it from
 * here on); the event callback reports ready or down. */
struct child	*child_broker_start(const char *channel, const char *segment,
		    const char *profile, int listen_fd, child_event_cb,
		    child_msg_cb, void *arg);
/* Start the broker of a precheck run: grant ("server/tool", grouped by
 * server) is copied. */
struct child	*child_precheck_start(const char *channel, const char *name,
		    const char *profile, int listen_fd,
		    const char *const *grant, size_t ngrant, uint64_t calls,
		    uint64_t deadline_ms, child_event_cb, child_msg_cb,
		    void *arg);
/* Start a research job; config (CONFIG_RESEARCH, heap-allocated) is
 * owned by the child from here on. */
struct child	*child_research_start(const char *channel,
		    const char *segment, const char *thinking,
		    struct msgb *config, child_event_cb, child_msg_cb,
		    void *arg);
/* A broker or research job broke a rule: counted, logged, killed. */
void		 child_violation(struct child *, enum violation,
		    const char *why);
/*
 * Something a broker or research job sent was refused without breaking a
 * rule on its own (common/violation.h): counted against it and logged at
 * most once a minute.  -1 when that took it past its allowance: it was
 * stopped as a violation under rule.
 */
int		 child_refused(struct child *, enum violation rule,
		    const char *what);
/*
 * Whether a broker or research job can serve: ready, its pipe open, and
 * its edge at egress alive.  One that died and is not reaped yet, or
 * whose egress did, is replaced rather than used.
 */
int		 child_usable(const struct child *);
/* Send a message that expects no reply; -1 when the child is not ready. */
int		 child_send_msg(struct child *, struct msgb *);
int		 child_send_msgv(struct child *, struct msgb *const *, int);
void		 child_stop(struct child *, void (*gone)(void *), void *arg);
/*
 * Send a request and get the reply through cb.  A singleton that is
 * starting or restarting is waited for, start_ms at most (cb then gets
 * NULL, as when the child dies first); anything else not ready fails at
 * once (cb is then not called and -1 is returned).
 */
int		 child_request(struct child *, struct msgb *, child_reply_cb,
		    void *arg);
void		 child_reap(void);
/* Shutdown: stop every child; returns the number still alive. */
int		 child_stop_all(void);
int		 child_count_alive(void);
void		 child_kill_all(void);

/* channel.c: the channel.* methods of the control socket */
struct ctl_req;
typedef void	(*chan_done_cb)(const char *err, void *arg);
void		 chan_start(const char *key, const char *profile,
		    chan_done_cb, void *arg);
/* The start arg waits for is stopped; everyone waiting on it gets why. */
void		 chan_start_stop(const char *key, void *arg, const char *why);
void		 chan_kill(const char *key, chan_done_cb, void *arg);
struct child	*chan_broker(const char *key);
int		 chan_docker_msg(struct child *, struct msg *, void *);
void		 chan_docker_gone(void);
void		 chan_kill_pending(void);
/* What channel.c tells the turns of its channels, and asks (main.c). */
struct chan_hooks {
	int	(*ch_busy)(const char *key);
	void	(*ch_abort)(const char *key, const char *why);
	void	(*ch_forget)(const char *key);	/* its thinking level */
	void	(*ch_broker_gone)(const char *key, const struct child *);
	int	(*ch_broker_msg)(const char *key, struct child *,
		    struct msg *);
	void	(*ch_worker_ready)(const char *key);
	/* the worker declared too little for what turn_id needs */
	void	(*ch_worker_stale)(const char *key, struct child *,
		    const char *turn_id, const char *need);
	void	(*ch_container_gone)(const char *key, const char *why);
	/* n model or MCP calls the broker made in turn turn_id (or NULL) */
	void	(*ch_call)(const char *key, struct child *,
		    const char *turn_id, uint64_t n);
};
void		 chan_init(const struct chan_hooks *);

/* evidence.c: a failed turn's record, and its worker's last lines before
 * removed says the container goes (delivered: the worker had the turn). */
void		 evidence_turn_failed(const char *key, const char *turn_id,
		    const char *speaker, const struct cJSON *result,
		    int removed, int delivered);

/* compact.c: the worker's compactions, through the client's hook */
struct compact_turn {
	const char		*ct_key;
	const char		*ct_turn;
	const char		*ct_profile;
	const char		*ct_speaker_id;
	const char		*ct_speaker_name;
	struct ctl_client	*ct_client;
	uint64_t		 ct_ms_left;	/* of the turn's deadline */
	unsigned		*ct_compacts;	/* the turn's counts */
	unsigned		*ct_reports;
};
int		 compact_ask(struct child *, uint64_t id,
		    const struct compact_turn *, const uint8_t *, size_t);
void		 compact_report(struct child *, const struct compact_turn *,
		    const uint8_t *, size_t);
/* A fallback the broker answered itself, by its code. */
void		 compact_broker_fallback(const char *key, const char *turn_id,
		    const char *code);
/* The channel's turn ends: a compaction asked for falls back now. */
void		 compact_turn_end(const char *key);

/* turn.c */
int		 turn_broker_msg(const char *key, struct child *, struct msg *);
/* The channel's broker died: its turn ends now, not at its deadline. */
void		 turn_broker_gone(const char *key, const struct child *);
/* Egress died: every bound turn ends now. */
void		 turn_egress_gone(void);
void		 turn_container_gone(const char *key, const char *why);
/* The channel's worker announced itself (POST /worker/ready). */
void		 turn_worker_ready(const char *key);
void		 turn_worker_stale(const char *key, struct child *,
		    const char *turn_id, const char *need);
int		 turn_busy(const char *key);
/* The client that asked for the channel's running turn (or NULL), and the
 * turn's id, profile and speaker. */
struct ctl_client *turn_identity(const char *key, const char **turn_id,
		    const char **profile, const char **speaker_id,
		    const char **speaker_name);
void		 turn_abort(const char *key, const char *why);
void		 turn_level_forget(const char *key);
uint64_t	 chan_stop_brokers(void);
/* A phase of the channel's running turn, for its client. */
void		 turn_call(const char *key, struct child *, const char *turn_id,
		    uint64_t n);
void		 method_turn_run(struct ctl_req *, struct cJSON *);
void		 method_turn_cancel(struct ctl_req *, struct cJSON *);
uint64_t	 chan_count(void);
void		 method_channel_start(struct ctl_req *, struct cJSON *);
void		 method_channel_stop(struct ctl_req *, struct cJSON *);
void		 method_channel_fresh(struct ctl_req *, struct cJSON *);
void		 method_channel_paths(struct ctl_req *, struct cJSON *);
void		 method_channel_status(struct ctl_req *, struct cJSON *);
void		 method_channel_list(struct ctl_req *, struct cJSON *);

/* research.c and attach.c */
void		 method_research_run(struct ctl_req *, struct cJSON *);
void		 method_research_cancel(struct ctl_req *, struct cJSON *);
uint64_t	 research_running(void);
/* precheck.c */
void		 method_precheck_run(struct ctl_req *, struct cJSON *);
uint64_t	 precheck_running(void);
/* The client that asked for the job child runs, or NULL. */
struct ctl_client *research_client(const struct child *);

/* cred.c: egress asks for a credential of the client, for one call. */
int		 cred_ask(struct child *eg, struct msg *);
void		 method_attachments_fetch(struct ctl_req *, struct cJSON *);

/* fetchctl.c */
void		 method_fetch_get(struct ctl_req *, struct cJSON *);
void		 method_fetch_check(struct ctl_req *, struct cJSON *);


#endif
