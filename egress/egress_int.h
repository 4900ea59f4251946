/*
 * What egress's files share: its state, its peers (brokers and research
 * jobs), their calls and fetches, and the configuration they are held to.
 * Private to egress/.
 */
#ifndef RTSANDBOX_EGRESS_INT_H
#define RTSANDBOX_EGRESS_INT_H

#include <sys/queue.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "cred.h"
#include "credmap.h"
#include "frame.h"
#include "hdrs.h"
#include "fetch.h"
#include "limits.h"
#include "msg.h"
#include "policy.h"
#include "precheck.h"
#include "proc.h"
#include "violation.h"

struct audit;
struct up_call;
struct up_callbacks;
struct reflect;
struct upstream;
struct role_parent;
struct fetch_resolver;

/* Fetches one research job may have running at once; each holds up to
 * FETCH_BYTES_MAX. */
#define EGRESS_PEER_FETCHES_MAX	8u
/*
 * MCP metadata calls with no bound turn: a bucket of 2 x 32 calls refilled
 * at 32 per 10 s.  A legitimate broker's startup windows (PROTOCOL.md 3.4:
 * 32 calls each, re-armed at most every 10 s, one window in force at a
 * time) never admit more than 64 + 3.2 calls per second in any interval,
 * which is what the bucket allows.
 */
#define EGRESS_WINDOW_BURST	(2 * STARTUP_CALLS)
#define EGRESS_WINDOW_PER_MS	((double)STARTUP_CALLS / STARTUP_REARM_MS)
/* The largest integer a JSON number carries exactly. */
#define EGRESS_UINT_MAX		UINT64_C(9007199254740991)

struct egress_mcp {
	char			*em_name;
	char			*em_url;
	char			**em_tools;
	size_t			 em_ntools;
};

/*
 * A profile of the configuration: its model and its own copy of its MCP
 * servers.  A reload retires it (eg_retired) while peers attached before
 * still hold it (epr_refs), and frees it when the last is gone.
 */
struct egress_profile {
	TAILQ_ENTRY(egress_profile)	 epr_entry;
	char				*epr_name;
	char				*epr_model;
	struct egress_mcp		 epr_mcp[MCP_SERVERS_MAX];
	size_t				 epr_nmcp;
	unsigned			 epr_refs;
	int				 epr_retired;
};
TAILQ_HEAD(egress_profile_list, egress_profile);

/* One broker (or research job) edge, and the policy it is held to. */
struct egress_peer {
	TAILQ_ENTRY(egress_peer)	 ep_entry;
	struct egress			*ep_egress;
	struct frame_conn		*ep_conn;
	enum proc_role			 ep_role;
	uint64_t			 ep_id;		/* the supervisor's */
	char				*ep_name;	/* "broker[chan]" */
	char				*ep_channel;	/* its key */
	TAILQ_HEAD(, egress_call)	 ep_calls;
	size_t				 ep_ncalls;
	size_t				 ep_body_bytes;	/* of its calls */
	struct refusals			 ep_refusals;
	TAILQ_HEAD(, egress_fetch)	 ep_fetches;
	size_t				 ep_nfetches;
	uint64_t			 ep_fetches_asked;	/* in all */
	/* brokers: the profile, the bound turn and the last one ended */
	struct egress_profile		*ep_profile;
	uint64_t			 ep_max_output_tokens;	/* at attach */
	char				*ep_turn_id;
	char				*ep_turn_speaker;	/* its author */
	enum policy_level		 ep_turn_level;
	uint64_t			 ep_turn_calls_left;
	uint64_t			 ep_turn_deadline;	/* monotonic ms */
	unsigned			 ep_turn_gen;	/* 0: no turn yet */
	char				*ep_ended_turn_id;
	double				 ep_window_tokens;
	uint64_t			 ep_window_at;	/* monotonic ms */
	/* research jobs: the research model, thinking and budget */
	char				*ep_model;
	enum policy_level		 ep_level;
	uint64_t			 ep_calls_left;	/* precheck's too */
	/* a precheck run's broker: the tools granted, names of ep_profile */
	int				 ep_precheck;
	struct precheck_grant		*ep_grants;
	size_t				 ep_ngrants;
};

/* One controlled fetch, for a research job or the supervisor. */
struct egress_fetch {
	TAILQ_ENTRY(egress_fetch)	 ef_entry;
	struct egress			*ef_egress;
	struct egress_peer		*ef_peer;	/* NULL: supervisor */
	uint64_t			 ef_id;
	struct fetch			*ef_fetch;
};

/* One upstream call on behalf of a peer. */
struct egress_call {
	TAILQ_ENTRY(egress_call)	 ec_entry;
	struct egress_peer		*ec_peer;
	uint64_t			 ec_id;
	unsigned			 ec_scope;	/* turn gen; 0 window */
	struct up_call			*ec_up;
	struct reflect			*ec_reflect;
	struct audit			*ec_audit;	/* its record */
	char				*ec_body;	/* kept until on_end */
	size_t				 ec_body_len;
	char				*ec_route;
	long				 ec_status;
	int				 ec_head_sent;
	int				 ec_refused;	/* status outside 200-599 */
	int				 ec_paused;
	/* Held until the bytes that came with them were filtered: */
	struct msgb			 ec_head;
	int				 ec_head_held;
	/* a body of a declared length of at most EGRESS_HEAD_WAIT_MAX:
	 * the head waits for its first bytes, so both go in one write */
	int				 ec_head_wait;
	const void			*ec_out;	/* the filter's, released */
	size_t				 ec_outlen;
	uint64_t			 ec_unacked;
	uint64_t			 ec_bytes;
	struct timespec			 ec_start;
	char				 ec_secret[CRED_FILE_MAX];
	size_t				 ec_secret_len;
	/* waiting for the client's credential: the request as it will go */
	uint64_t			 ec_ask;	/* 0: not waiting */
	int				 ec_mcp;
	char				*ec_url;
	struct hdr			*ec_hdrs;
	size_t				 ec_nhdrs;
	/* a precheck call: its answer, read whole before any goes back */
	int				 ec_precheck;
	char				*ec_pc_buf;
	size_t				 ec_pc_len;
	size_t				 ec_pc_cap;
	int				 ec_pc_sse;	/* text/event-stream */
	const char			*ec_pc_fail;	/* its fixed text */
};

struct egress {
	struct event_base		*eg_base;
	char				*eg_upstream_url;
	char				*eg_ca_file;
	char				*eg_mcp_credential_file;
	/* the credentials come from the client for each call instead */
	int				 eg_cred_hook;
	int				 eg_mcp_cred_hook;
	uint64_t			 eg_ask_id;
	/* the model's files: credential_file, by channel, by speaker */
	struct credmap			 eg_creds;
	struct cred_cache		 eg_mcp_cred;	/* what it held */
	int				 eg_allow_http;
	uint64_t			 eg_max_output_tokens;
	struct egress_mcp		 eg_mcp[MCP_SERVERS_MAX];
	size_t				 eg_nmcp;
	struct egress_profile_list	 eg_profiles;
	struct egress_profile_list	 eg_retired;	/* held by peers */
	int				 eg_reloading;
	uid_t				 eg_uid;
	struct upstream			*eg_upstream;
	int				 eg_have_config;
	TAILQ_HEAD(, egress_peer)	 eg_peers;
	size_t				 eg_ncalls;
	size_t				 eg_body_bytes;
	/* of them, beyond each peer's own share: the pool they share */
	size_t				 eg_pool_calls;
	size_t				 eg_pool_bytes;
	/* what the peers' read buffers hold together */
	struct frame_budget		 eg_peer_read;
	/* calls that went out with a credential, and the last count the
	 * supervisor was told */
	uint64_t			 eg_upstream_calls;
	uint64_t			 eg_upstream_told;
	struct event			*eg_counters_ev;
	struct role_parent		*eg_rp;
	struct fetch_resolver		*eg_resolver;
	struct fetch_env		 eg_fetch_env;
	TAILQ_HEAD(, egress_fetch)	 eg_fetches;	/* the supervisor's */
	char				*eg_test_dns;
	char				*eg_test_fetch_ca;
};

/* egress.c */
char		*xstrdup_opt(const char *);
/* The end of a call (ok, or the status of a failure) goes to its peer;
 * then the caller frees it. */
void		 egress_end(struct egress_call *, int ok, int status,
		    const char *why);
void		 egress_call_free(struct egress_call *);
void		 egress_send(struct egress_peer *, struct msgb *);
/* A rule broken by a peer: logged, reported to the supervisor. */
void		 egress_violation(struct egress_peer *, enum violation,
		    const char *);

/* What one admitted call is held to, decided before its body is read. */
struct egress_admit {
	int			 ea_mcp;
	const struct egress_mcp	*ea_server;
	unsigned		 ea_scope;
	enum policy_level	 ea_level;
	const char		*ea_model;
	uint64_t		*ea_calls_left;	/* NULL: the window's bucket */
	struct policy_mcp_call	 ea_call;	/* MCP: method and tool */
	char			*ea_body;	/* precheck: egress's own */
	size_t			 ea_body_len;
};

/*
 * admit.c: every rule of the peer's policy, before any credential is read:
 * kind and path, scope, budget, calls in flight, and the body itself.
 * VIOLATION_NONE, or the rule; *ended is set for a call of a turn that
 * ended, refused without a violation.
 */
enum violation	 egress_admit(struct egress_peer *, const char *kind,
		    const char *path, const char *query, const char *server,
		    const char *turn_id, const char *body, size_t len,
		    struct egress_admit *, int *ended, char *why,
		    size_t whylen);

/* conf.c: the configuration, MCP servers and profiles, reloads. */
/* An optional boolean field of m: absent is false. */
int		 egress_get_bool_opt(struct msg *, const char *, int *);
int		 egress_config(struct egress *, struct msg *);
int		 egress_config_mcp(struct egress *, struct msg *);
int		 egress_config_profile(struct egress *, struct msg *);
int		 egress_config_cred(struct egress *, struct msg *);
int		 egress_reload(struct egress *, struct msg *);
int		 egress_reloaded(struct egress *, struct msg *);
struct egress_profile *egress_profile_find(const struct egress *,
		    const char *);
const struct egress_mcp *egress_profile_mcp(const struct egress_profile *,
		    const char *);
/* A peer lets go of its profile. */
void		 egress_profile_release(struct egress *,
		    struct egress_profile *);

/* callcred.c: the file of a model call (a file of eg_creds), or -1 when
 * there is none and the call was answered 401 and freed. */
int		 egress_cred_file(struct egress_call *, const char **path,
		    struct cred_cache **);

/* precall.c: a precheck run's broker and its calls' answers. */
/* The grant of an attach, "server/tool" each, held to the profile's MCP
 * servers and their tools: 0, or -1 (errno EINVAL for a grant beyond the
 * profile or malformed, ENOMEM). */
int		 egress_precheck_grants(struct egress_peer *,
		    const char *const *grant, size_t n);
extern const struct up_callbacks egress_precheck_cbs;
/* What a precheck call holds of its answer, wiped and freed. */
void		 egress_precheck_clear(struct egress_call *);

/* fetchreq.c: the controlled fetch for a research job or (ep NULL) the
 * supervisor. */
int		 egress_fetch(struct egress *, struct egress_peer *,
		    struct msg *);
void		 egress_fetch_free(struct egress_fetch *);

#endif
