/*
 * The one list of every message between rtsandbox's processes (DESIGN.md 3).
 * A frame's JSON object has "t" (the wire name) and, for requests and their
 * replies, "id".  The protocol is closed by default: msg_parse() refuses a
 * type that is not in the table, a sender or receiver the table does not name,
 * a descriptor count other than the table's and raw data where none belongs;
 * typed getters refuse missing, mistyped and over-long fields; msg_end()
 * refuses whatever was not consumed.
 */
#ifndef RTSANDBOX_MSG_H
#define RTSANDBOX_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "proc.h"

#define R_SUP	(1u << PROC_SUPERVISOR)
#define R_FSG	(1u << PROC_FSGUARD)
#define R_DOCK	(1u << PROC_DOCKER)
#define R_EGR	(1u << PROC_EGRESS)
#define R_BRK	(1u << PROC_BROKER)
#define R_RES	(1u << PROC_RESEARCH)
#define R_CHILD	(R_FSG | R_DOCK | R_EGR | R_BRK | R_RES)

/*
 * X(enum suffix, wire name, senders, receivers, descriptors, raw data allowed,
 *   reply type or NONE)
 */
#define MSG_TABLE(X)							\
	/* bring-up: configuration, then config_done, answered by ready */ \
	X(CONFIG_FSGUARD,  "config_fsguard",  R_SUP, R_FSG,  0, 0, NONE) \
	X(CONFIG_DOCKER,   "config_docker",   R_SUP, R_DOCK, 0, 0, NONE) \
	X(CONFIG_EGRESS,   "config_egress",   R_SUP, R_EGR,  0, 0, NONE) \
	X(CONFIG_EGRESS_MCP, "config_egress_mcp", R_SUP, R_EGR, 0, 0, NONE) \
	X(CONFIG_EGRESS_PROFILE, "config_egress_profile", R_SUP, R_EGR, 0, 0, NONE) \
	/* upstream.credentials: one channel's or speaker's file */	\
	X(CONFIG_EGRESS_CRED, "config_egress_cred", R_SUP, R_EGR, 0, 0, NONE) \
	X(CONFIG_BROKER,   "config_broker",   R_SUP, R_BRK,  1, 0, NONE) \
	X(CONFIG_BROKER_MCP, "config_broker_mcp", R_SUP, R_BRK, 0, 0, NONE) \
	/* a broker's or research job's pipe, the other end of its FD_EGRESS, \
	 * with the policy egress holds that peer to */			\
	X(EGRESS_ATTACH,   "egress_attach",   R_SUP, R_EGR,  1, 0, NONE) \
	/* a reload: max_output_tokens, then config_egress_mcp, _profile \
	 * and _cred messages again, for the peers attached from then on */ \
	X(EGR_RELOAD,      "egr_reload",      R_SUP, R_EGR,  0, 0, NONE) \
	X(EGR_RELOADED,    "egr_reloaded",    R_SUP, R_EGR,  0, 0, NONE) \
	X(CONFIG_DONE,     "config_done",     R_SUP, R_CHILD, 0, 0, NONE) \
	X(READY,           "ready",           R_CHILD, R_SUP, 0, 0, NONE) \
	/* instead of ready: the child cannot work with what it was given */ \
	X(REFUSED,         "refused",         R_CHILD, R_SUP, 0, 0, NONE) \
	/* the failure answer to any request: {id, error} */ \
	X(ERROR,           "error",           R_CHILD, R_SUP, 0, 0, NONE) \
	/* liveness: the supervisor asks, the child answers with its id */ \
	X(PING,            "ping",            R_SUP, R_CHILD, 0, 0, PONG) \
	X(PONG,            "pong",            R_CHILD, R_SUP, 0, 0, NONE) \
	/* file guard: every operation re-checks the channel key first */ \
	X(FSG_PREPARE,     "fsg_prepare",     R_SUP, R_FSG, 0, 0, FSG_PREPARED) \
	X(FSG_PREPARED,    "fsg_prepared",    R_FSG, R_SUP, 0, 0, NONE) \
	X(FSG_BIND,        "fsg_bind",        R_SUP, R_FSG, 0, 0, FSG_BOUND) \
	X(FSG_BOUND,       "fsg_bound",       R_FSG, R_SUP, 1, 0, NONE) \
	X(FSG_FRESH,       "fsg_fresh",       R_SUP, R_FSG, 0, 0, FSG_FRESHENED) \
	X(FSG_FRESHENED,   "fsg_freshened",   R_FSG, R_SUP, 0, 0, NONE) \
	X(FSG_ATTACH,      "fsg_attach",      R_SUP, R_FSG, 0, 1, FSG_ATTACHED) \
	X(FSG_ATTACHED,    "fsg_attached",    R_FSG, R_SUP, 0, 0, NONE) \
	/* precheck runs: a run's empty directories and its broker's \
	 * socket under <state>/.precheck/<run>, and their removal {run} */ \
	X(FSG_PRECHECK_MAKE, "fsg_precheck_make", R_SUP, R_FSG, 0, 0, FSG_PRECHECK_MADE) \
	X(FSG_PRECHECK_MADE, "fsg_precheck_made", R_FSG, R_SUP, 1, 0, NONE) \
	X(FSG_PRECHECK_CLEAN, "fsg_precheck_clean", R_SUP, R_FSG, 0, 0, FSG_PRECHECK_CLEANED) \
	X(FSG_PRECHECK_CLEANED, "fsg_precheck_cleaned", R_FSG, R_SUP, 0, 0, NONE) \
	/* Docker client */ \
	X(DOCK_STATUS,     "dock_status",     R_SUP, R_DOCK, 0, 0, DOCK_STATE) \
	X(DOCK_STATE,      "dock_state",      R_DOCK, R_SUP, 0, 0, NONE) \
	X(DOCK_ENSURE,     "dock_ensure",     R_SUP, R_DOCK, 0, 0, DOCK_ENSURED) \
	X(DOCK_ENSURED,    "dock_ensured",    R_DOCK, R_SUP, 0, 0, NONE) \
	X(DOCK_REMOVE,     "dock_remove",     R_SUP, R_DOCK, 0, 0, DOCK_REMOVED) \
	X(DOCK_REMOVED,    "dock_removed",    R_DOCK, R_SUP, 0, 0, NONE) \
	X(DOCK_LIST,       "dock_list",       R_SUP, R_DOCK, 0, 0, DOCK_LISTED) \
	X(DOCK_LISTED,     "dock_listed",     R_DOCK, R_SUP, 0, 0, NONE) \
	/* a failed turn's container: its last log lines, escaped, before \
	 * it is removed {channel, lines} -> {lines, cut, missing} */	\
	X(DOCK_LOGS,       "dock_logs",       R_SUP, R_DOCK, 0, 0, DOCK_LOGGED) \
	X(DOCK_LOGGED,     "dock_logged",     R_DOCK, R_SUP, 0, 0, NONE) \
	/* a precheck run's sealed container: the raw data is its stdin, \
	 * the answer's its stdout; the container is gone when it comes. \
	 * {run, channel, entrypoint, memory_mib, nano_cpus, pids,	\
	 * timeout_ms} -> {exit_code, timed_out, stdout_over,		\
	 * stderr_bytes}; a stop ends the run at once {run} */		\
	X(DOCK_PRECHECK,   "dock_precheck",   R_SUP, R_DOCK, 0, 1, DOCK_PRECHECKED) \
	X(DOCK_PRECHECKED, "dock_prechecked", R_DOCK, R_SUP, 0, 1, NONE) \
	X(DOCK_PRECHECK_STOP, "dock_precheck_stop", R_SUP, R_DOCK, 0, 0, NONE) \
	/* the event stream: {news: live, lost, or die, destroy, oom, pause \
	 * with the container and a die's exit_code} */		\
	X(DOCK_EVENT,      "dock_event",      R_DOCK, R_SUP, 0, 0, NONE) \
	/* broker and supervisor: the worker's readiness, turns, host tools */ \
	X(BRK_WORKER_READY, "brk_worker_ready", R_BRK, R_SUP, 0, 0, NONE) \
	X(BRK_BIND,        "brk_bind",        R_SUP, R_BRK, 0, 0, NONE) \
	X(BRK_UNBIND,      "brk_unbind",      R_SUP, R_BRK, 0, 0, NONE) \
	X(BRK_SUBMIT,      "brk_submit",      R_SUP, R_BRK, 0, 1, NONE) \
	X(BRK_CANCEL,      "brk_cancel",      R_SUP, R_BRK, 0, 0, NONE) \
	X(BRK_DELIVERED,   "brk_delivered",   R_BRK, R_SUP, 0, 0, NONE) \
	X(BRK_RESULT,      "brk_result",      R_BRK, R_SUP, 0, 1, NONE) \
	X(BRK_TOOL_CALL,   "brk_tool_call",   R_BRK, R_SUP, 0, 1, BRK_TOOL_ANSWER) \
	X(BRK_TOOL_ANSWER, "brk_tool_answer", R_SUP, R_BRK, 0, 1, NONE) \
	X(BRK_EVENT,       "brk_event",       R_BRK, R_SUP, 0, 0, NONE) \
	/* compaction: the worker's request for the client's compactor, \
	 * answered with the worker's answer; its reports, to be logged */ \
	X(BRK_COMPACT,     "brk_compact",     R_BRK, R_SUP, 0, 1, BRK_COMPACTED) \
	X(BRK_COMPACTED,   "brk_compacted",   R_SUP, R_BRK, 0, 1, NONE) \
	X(BRK_COMPACT_REPORT, "brk_compact_report", R_BRK, R_SUP, 0, 1, NONE) \
	/* broker (or research job) and egress: one upstream call, streamed */ \
	X(EGR_CALL,        "egr_call",        R_BRK | R_RES, R_EGR, 0, 1, NONE) \
	X(EGR_HEAD,        "egr_head",        R_EGR, R_BRK | R_RES, 0, 0, NONE) \
	X(EGR_DATA,        "egr_data",        R_EGR, R_BRK | R_RES, 0, 1, NONE) \
	X(EGR_END,         "egr_end",         R_EGR, R_BRK | R_RES, 0, 0, NONE) \
	X(EGR_ACK,         "egr_ack",         R_BRK | R_RES, R_EGR, 0, 0, NONE) \
	X(EGR_CANCEL,      "egr_cancel",      R_BRK | R_RES, R_EGR, 0, 0, NONE) \
	/* the supervisor binds and unbinds a broker's turn at egress too, \
	 * which checks every call on its own and reports each refusal */ \
	X(EGR_BIND,        "egr_bind",        R_SUP, R_EGR, 0, 0, EGR_BOUND) \
	X(EGR_BOUND,       "egr_bound",       R_EGR, R_SUP, 0, 0, NONE) \
	X(EGR_UNBIND,      "egr_unbind",      R_SUP, R_EGR, 0, 0, NONE) \
	X(EGR_VIOLATION,   "egr_violation",   R_EGR, R_SUP, 0, 0, NONE) \
	/* a stopped broker or research job: its calls are cancelled and \
	 * its edge closed before it is signalled */			\
	X(EGR_DROP,        "egr_drop",        R_SUP, R_EGR, 0, 0, NONE) \
	/* egress's own count of the calls it made with a credential,	\
	 * at most once a second while it grows */			\
	X(EGR_COUNTERS,    "egr_counters",    R_EGR, R_SUP, 0, 0, NONE) \
	/* a credential from the client's credential.get hook, for one	\
	 * call of a peer: {peer, kind, server?, turn_id?} -> {ok, token?} */ \
	X(EGR_CRED,        "egr_cred",        R_EGR, R_SUP, 0, 0, EGR_CRED_IS) \
	X(EGR_CRED_IS,     "egr_cred_is",     R_SUP, R_EGR, 0, 0, NONE) \
	/* the controlled fetch of PROTOCOL.md 8: research jobs and the	\
	 * supervisor's attachment downloads; the answer carries the body */ \
	X(EGR_FETCH,       "egr_fetch",       R_SUP | R_RES, R_EGR, 0, 0, EGR_FETCHED) \
	X(EGR_FETCHED,     "egr_fetched",     R_EGR, R_SUP | R_RES, 0, 1, NONE) \
	/* research job: its configuration, web_search through the client's \
	 * search.query hook, and the report (DESIGN.md 9) */		\
	X(CONFIG_RESEARCH, "config_research", R_SUP, R_RES, 0, 0, NONE) \
	X(RES_SEARCH,      "res_search",      R_RES, R_SUP, 0, 0, RES_SEARCHED) \
	X(RES_SEARCHED,    "res_searched",    R_SUP, R_RES, 0, 1, NONE) \
	X(RES_REPORT,      "res_report",      R_RES, R_SUP, 0, 1, NONE)

enum msg_type {
	MSG_NONE = 0,
#define MSG_ENUM(e, w, s, r, n, d, rep)	MSG_##e,
	MSG_TABLE(MSG_ENUM)
#undef MSG_ENUM
	MSG__COUNT
};

struct msg_def {
	const char	*md_name;
	unsigned	 md_from;	/* mask of senders */
	unsigned	 md_to;		/* mask of receivers */
	int		 md_nfds;
	int		 md_data;
	enum msg_type	 md_reply;
};

const struct msg_def	*msg_def(enum msg_type);
enum msg_type		 msg_type_from_name(const char *);
const char		*msg_type_name(enum msg_type);
/* Whether t answers a request (carries the request's id). */
int			 msg_is_reply(enum msg_type);

struct cJSON;
struct msg_mem;

/* What a field of a received message holds. */
enum msg_kind {
	MSGK_NULL,
	MSGK_FALSE,
	MSGK_TRUE,
	MSGK_NUM,
	MSGK_STR,
	MSGK_ARR,	/* mf_items: its strings, NULL for any other item */
	MSGK_OTHER	/* an object */
};

struct msg_field {
	const char	*mf_key;
	const char	*mf_str;
	const char	**mf_items;	/* mf_n of them, then NULL */
	double		 mf_num;
	size_t		 mf_n;
	unsigned char	 mf_kind;
	unsigned char	 mf_used;	/* consumed by a getter */
};

/* Fields kept in the message itself; more are allocated. */
#define MSG_FIELDS_INLINE	16

/* A received message being decoded. */
struct msg {
	enum msg_type	 m_type;
	uint64_t	 m_id;
	int		 m_has_id;
	struct msg_field *m_fields;	/* in the order of the text */
	size_t		 m_nfields;
	struct cJSON	*m_tree;	/* of msg_parse()'s general reader */
	int		 m_fds[FRAME_MAXFDS];
	int		 m_nfds;
	int		 m_fdpos;
	const uint8_t	*m_data;
	uint32_t	 m_data_len;
	int		 m_failed;
	char		 m_err[160];
	struct msg_mem	*m_mem;		/* strings and arrays */
	/* written as they are read: last, not cleared */
	struct msg_field m_inline[MSG_FIELDS_INLINE];
};

/*
 * Decode a frame that arrived at role `to` from role `from`.  Takes the
 * frame's descriptors (their slots become -1).  Returns 0, or -1 with the
 * reason in m->m_err; msg_free() is needed in both cases.
 */
int	msg_parse(struct msg *, enum proc_role from, enum proc_role to,
	    struct frame *);
void	msg_free(struct msg *);

/*
 * Typed getters.  Each consumes the field; after the first failure every
 * call fails and m_err keeps the first reason.  max_bytes bounds the UTF-8
 * length of a string (which must be valid UTF-8 without NUL); strings stay
 * valid until msg_free().  _opt variants accept an absent field (or null)
 * and leave *out NULL / untouched with *present = 0.
 */
int	msg_get_str(struct msg *, const char *key, size_t max_bytes,
	    const char **out);
int	msg_get_str_opt(struct msg *, const char *key, size_t max_bytes,
	    const char **out);
int	msg_get_uint(struct msg *, const char *key, uint64_t min, uint64_t max,
	    uint64_t *out);
int	msg_get_uint_opt(struct msg *, const char *key, uint64_t min,
	    uint64_t max, uint64_t *out, int *present);
int	msg_get_int(struct msg *, const char *key, int64_t min, int64_t max,
	    int64_t *out);
int	msg_get_bool(struct msg *, const char *key, int *out);
/* An array of at most max_n strings of at most max_bytes each. *out is a
 * NULL-terminated array allocated with the message. */
int	msg_get_strv(struct msg *, const char *key, size_t max_n,
	    size_t max_bytes, const char ***out, size_t *n);
/* The next descriptor of the message, in order; the caller owns it. */
int	msg_get_fd(struct msg *, int *fd);
/* The raw bytes after the JSON, if any: they live in the frame, so only for
 * the frame callback's length. */
int	msg_get_data(struct msg *, const uint8_t **data, size_t *len);
/* Refuses fields and descriptors that were not consumed. */
int	msg_end(struct msg *);
/* Whether a field of that name is there and not consumed yet. */
int	msg_has(struct msg *, const char *key);

/* Fields a builder takes (the largest message has a dozen). */
#define MSGB_KEYS_MAX	24

/* A message being built; msg_send() frees it whether or not it succeeds. */
struct msgb {
	enum msg_type	 mb_type;
	char		*mb_buf;	/* the JSON text so far */
	size_t		 mb_len;
	size_t		 mb_cap;
	size_t		 mb_idat;	/* where "id" goes: after "t" */
	int		 mb_has_id;
	int		 mb_closed;	/* "}" written */
	size_t		 mb_nkeys;
	int		 mb_fds[FRAME_MAXFDS];
	int		 mb_nfds;
	const void	*mb_data;
	size_t		 mb_data_len;
	int		 mb_failed;
	/* the keys written, quoted, for duplicates: last, not cleared */
	size_t		 mb_keyoff[MSGB_KEYS_MAX];
	size_t		 mb_keylen[MSGB_KEYS_MAX];
};

/* id 0 means "no id" (ids start at 1). */
void	msgb_init(struct msgb *, enum msg_type, uint64_t id);
void	msg_add_str(struct msgb *, const char *key, const char *value);
void	msg_add_uint(struct msgb *, const char *key, uint64_t value);
void	msg_add_int(struct msgb *, const char *key, int64_t value);
void	msg_add_bool(struct msgb *, const char *key, int value);
void	msg_add_strv(struct msgb *, const char *key, const char *const *v,
	    size_t n);
/* The builder owns fd from here on. */
void	msg_add_fd(struct msgb *, int fd);
/* Not copied: must stay valid until msg_send() returns. */
void	msg_add_data(struct msgb *, const void *data, size_t len);
void	msgb_free(struct msgb *);

struct frame_conn;
/* 0 when queued; -1 when the builder failed or the frame was refused. */
int	msg_send(struct frame_conn *, struct msgb *);
/*
 * Several messages without descriptors in one write (frame_conn_sendv()),
 * at most FRAME_SENDV_MAX; each builder is freed.  -1 as msg_send(), and
 * then none of them was queued.
 */
int	msg_sendv(struct frame_conn *, struct msgb *const *, int n);
/* Serialise without sending (tests, blocking bring-up): malloc'd JSON. */
char	*msgb_json(struct msgb *, size_t *len);

#endif
