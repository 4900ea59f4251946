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

#endif
