/* A blocking JSON-RPC client of the control socket. */
#ifndef RTSANDBOX_CTL_RPC_H
#define RTSANDBOX_CTL_RPC_H

struct cJSON;
struct rpc;

/* Connect and initialize; on failure print why and return NULL. */
struct rpc	*rpc_open(const char *path, const char *const *hooks);
/*
 * Call a method and wait for its answer.  Returns the result (caller frees)
 * or NULL after printing the error; *code gets the JSON-RPC error code (0
 * for a transport failure).  params is consumed.
 */
struct cJSON	*rpc_call(struct rpc *, const char *method,
		    struct cJSON *params, int *code);
void		 rpc_close(struct rpc *);

/* The pieces of rpc_call() for commands that also answer the daemon's
 * requests and follow its notifications. */
double		 rpc_send(struct rpc *, const char *method,
		    struct cJSON *params);
/* The next message, or NULL: *timed_out says whether timeout_ms passed
 * (-1: wait for ever) or the connection failed. */
struct cJSON	*rpc_next(struct rpc *, int timeout_ms, int *timed_out);
/* Send one JSON object as a line (takes it). */
int		 rpc_write(struct rpc *, struct cJSON *);

#endif
