/*
 * The control socket (DESIGN.md 5): JSON-RPC 2.0, one object per line, several
 * requests in flight per connection.  Methods answer through ctl_reply() or
 * ctl_error(), at once or later; a request whose client goes away or that is
 * cancelled calls its cancel hook and is answered no more.
 */
#ifndef RTSANDBOX_CONTROL_H
#define RTSANDBOX_CONTROL_H

#include <stdint.h>
#include <sys/types.h>

struct cJSON;
struct ctl_req;
struct ctl_client;

#define RPC_PARSE_ERROR		-32700
#define RPC_INVALID_REQUEST	-32600
#define RPC_METHOD_NOT_FOUND	-32601
#define RPC_INVALID_PARAMS	-32602
#define RPC_INTERNAL_ERROR	-32603
#define RPC_NOT_INITIALIZED	-32002
#define RPC_REQUEST_CANCELLED	-32800
/* An operation that was valid but failed; the message says why. */
#define RPC_APP_ERROR		-32000

/* params is the request's "params" (NULL when absent); the method does not
 * own it beyond its call. */
typedef void	(*ctl_method_fn)(struct ctl_req *, struct cJSON *params);
typedef void	(*ctl_cancel_fn)(struct ctl_req *, void *);

struct ctl_method {
	const char	*cm_name;
	ctl_method_fn	 cm_fn;
	int		 cm_before_init;	/* callable before initialize */
};

/* Before the sandbox: make the socket, mode and group final; its fd. */
int	control_bind(const char *path, int has_group, gid_t gid);
/* After: serve it. */
int	control_listen(int fd);
void	control_close(void);
uint64_t control_clients(void);

/* Answer a request (takes result) or fail it; both free the request. */
void	ctl_reply(struct ctl_req *, struct cJSON *result);
void	ctl_error(struct ctl_req *, int code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
/*
 * Refuse params members outside allowed (NULL-terminated); 0, or the
 * request is answered with -32602 naming the field and -1.  params may be
 * NULL (no params at all).
 */
int	ctl_params_only(struct ctl_req *, const struct cJSON *params,
	    const char *const *allowed);
/* The string member key of params, or NULL when absent or not a string. */
const char *ctl_str_param(const struct cJSON *params, const char *key);

/* Called when the request is cancelled or its client disconnects. */
void	ctl_set_cancel(struct ctl_req *, ctl_cancel_fn, void *);
/*
 * From inside the cancel callback of a $/cancelRequest: the owner answers
 * the request itself later (with RPC_REQUEST_CANCELLED), once what it
 * started is undone.  1 when that is so, 0 when the client has gone and
 * the request is freed on return.
 */
int	ctl_cancel_later(struct ctl_req *);
struct ctl_client *ctl_req_client(struct ctl_req *);

/* What the client declared in initialize. */
void	ctl_client_initialized(struct ctl_client *, const char *name,
	    unsigned hooks);
int	ctl_client_is_initialized(const struct ctl_client *);
unsigned ctl_client_hooks(const struct ctl_client *);

/*
 * A request from the daemon to a client (a hook): cb gets the client's
 * result, or NULL and how the call ended without one.  What the client
 * says in an error answer is never passed on: it is the bot's exception
 * text, which may hold what must reach neither a worker nor the log.
 * Returns a handle, or NULL when the client cannot be asked (cb is then
 * not called).
 */
enum ctl_call_end {
	CTL_CALL_ANSWERED,	/* result holds the answer */
	CTL_CALL_ERROR,		/* the client answered with an error */
	CTL_CALL_LEFT,		/* the client disconnected; the requests it
				 * made are cancelled right after */
};
const char	*ctl_call_end_to_string(enum ctl_call_end);
struct ctl_call;
typedef void	(*ctl_call_cb)(struct cJSON *result, enum ctl_call_end,
		    void *arg);
struct ctl_call	*ctl_client_call(struct ctl_client *, const char *method,
		    struct cJSON *params, ctl_call_cb, void *arg);
/* Forget a call: its answer is dropped, cb is not called. */
void		 ctl_call_withdraw(struct ctl_call *);
/* A notification to a client (takes params). */
void		 ctl_client_notify(struct ctl_client *, const char *method,
		    struct cJSON *params);

/* Hooks a client may implement. */
#define HOOK_TOOL_CALL		0x1u
#define HOOK_MEMORY_BLOCK	0x2u
#define HOOK_EFFORT_JUDGE	0x4u
#define HOOK_SEARCH_QUERY	0x8u
#define HOOK_CREDENTIAL_GET	0x10u
#define HOOK_COMPACTION		0x20u

/* The client that declared hook and was initialized last, or NULL. */
struct ctl_client *ctl_client_with_hook(unsigned hook);

/* The method table lives in methods.c. */
extern const struct ctl_method	ctl_methods[];

#endif
