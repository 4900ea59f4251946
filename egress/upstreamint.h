/*
 * What the files of the upstream client share (upstream.h): its bounds,
 * its connections, calls and names, and the functions one file gives the
 * others.
 *   upstream.c  the event loop side: buffers, callbacks, connections, the
 *               answer and the request on the wire, calls;
 *   uptls.c     TLS over a connection's buffers, contexts and sessions;
 *   upname.c    names resolved in a thread, and kept;
 *   upreq.c     a call's request: checked, its URL read, its bytes built.
 */
#ifndef RTSANDBOX_UPSTREAMINT_H
#define RTSANDBOX_UPSTREAMINT_H

#include <sys/queue.h>
#include <sys/socket.h>

#include <netdb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "resp.h"
#include "upstream.h"

/* One wake-up reads at most this much, and its plaintext is at most this
 * much: one on_data. */
#define UP_RECV_BUF		(256 * 1024)
#define UP_PLAIN_BUF		UP_DATA_MAX
/* Request bodies up to this go out with the head in one write; larger
 * ones in slices, while less than UP_OUT_HIGH waits to be sent. */
#define UP_SMALL_BODY		(64 * 1024)
#define UP_SLICE		(64 * 1024)
#define UP_OUT_HIGH		(256 * 1024)
/* Idle connections kept, and for how long: less than the common server
 * idle limits, so that a connection is rarely reused as it is closed. */
#define UP_POOL_PER_KEY		8
#define UP_POOL_MAX		32
#define UP_POOL_IDLE_MS		55000
/* Resolved names kept, and for how long. */
#define UP_DNS_CACHE		16
#define UP_DNS_TTL_MS		60000
#define UP_ADDRS_MAX		16
#define UP_RESOLVE_STACK	(512 * 1024)
#define UP_SESSIONS_MAX		32
#define UP_KEEPALIVE_IDLE_S	60
#define UP_KEEPALIVE_INTVL_S	30
/* Reads in a row without going back to the loop, when each fills the
 * buffer. */
#define UP_READS_IN_A_ROW	4

struct up_buf {
	uint8_t			*ub_p;
	size_t			 ub_off;	/* first byte not taken */
	size_t			 ub_len;	/* bytes from ub_off */
	size_t			 ub_cap;
};

enum up_cstate {
	CO_CONNECTING,
	CO_HANDSHAKE,
	CO_OPEN,
};

struct up_conn {
	TAILQ_ENTRY(up_conn)	 co_entry;	/* up_conns */
	TAILQ_ENTRY(up_conn)	 co_idle_entry;	/* up_idle, while idle */
	struct upstream		*co_up;
	struct up_call		*co_call;	/* NULL: idle */
	int			 co_fd;
	struct event		*co_rev;
	struct event		*co_wev;
	int			 co_rev_on;
	int			 co_wev_on;
	SSL			*co_ssl;	/* NULL: plain http */
	enum up_cstate		 co_state;
	char			*co_key;	/* NULL: never pooled */
	/* Bytes received and not taken yet: first the stash kept from an
	 * earlier wake-up, then this wake-up's window in up_rbuf. */
	struct up_buf		 co_stash;
	uint8_t			*co_win;
	size_t			 co_winlen;
	struct up_buf		 co_out;	/* to send */
	int			 co_eof;
	int			 co_tls_err;	/* TLS failed after the handshake */
	int			 co_idle;	/* on up_idle */
	uint64_t		 co_idle_ms;	/* when it went idle */
};

struct up_call {
	TAILQ_ENTRY(up_call)	 uc_entry;
	TAILQ_ENTRY(up_call)	 uc_work_entry;
	TAILQ_ENTRY(up_call)	 uc_wait_entry;	/* on rs_waiting */
	struct upstream		*uc_up;
	struct up_callbacks	 uc_cb;
	void			*uc_arg;
	struct up_conn		*uc_conn;
	struct up_resolve	*uc_res;
	struct event		*uc_timer;	/* the connect deadline */
	long			 uc_connect_ms;
	/* where to */
	int			 uc_tls;
	char			*uc_host;	/* an IPv6 address unbracketed */
	unsigned		 uc_port;
	int			 uc_numeric;
	char			*uc_key;	/* NULL: never pooled */
	char			*uc_ca;
	size_t			 uc_naddr;
	size_t			 uc_ai;
	/* the request: its head and a small body, then a large body */
	uint8_t			*uc_req;
	size_t			 uc_req_len;
	size_t			 uc_req_off;
	const uint8_t		*uc_body;
	size_t			 uc_body_len;
	size_t			 uc_body_off;
	int			 uc_sent;
	/* the answer */
	size_t			 uc_max_body;
	size_t			 uc_received;
	int			 uc_head_done;
	int			 uc_done;
	int			 uc_flush;	/* on_flush is due */
	/* the end */
	enum up_result		 uc_fail;	/* UP_OK: not failed */
	const char		*uc_fail_detail;
	int			 uc_os_errno;
	int			 uc_queued;
	int			 uc_started;
	int			 uc_paused;
	int			 uc_resume;
	int			 uc_cancelled;
	int			 uc_ending;
	/*
	 * From here on upstream_call() clears nothing: 4 KiB of which a
	 * call reads only what it wrote first, the first uc_naddr
	 * addresses, the text in uc_detail, the answer as resp_init() and
	 * the reader leave it.
	 */
	struct resp		 uc_resp;
	char			 uc_detail[256];
	struct sockaddr_storage	 uc_addr[UP_ADDRS_MAX];
	socklen_t		 uc_addrlen[UP_ADDRS_MAX];
};

/* A name being resolved by a thread, which frees it when the upstream is
 * gone first. */
struct up_resolve {
	TAILQ_ENTRY(up_resolve)	 rs_entry;
	pthread_mutex_t		 rs_lock;
	int			 rs_abandoned;	/* the thread frees it */
	int			 rs_written;	/* the answer is in the pipe */
	int			 rs_wfd;
	char			*rs_host;
	int			 rs_gai;
	struct addrinfo		*rs_res;
	TAILQ_HEAD(, up_call)	 rs_waiting;
};

struct up_dns {
	char			*dn_host;
	uint64_t		 dn_until;	/* monotonic ms */
	struct sockaddr_storage	 dn_addr[UP_ADDRS_MAX];
	socklen_t		 dn_addrlen[UP_ADDRS_MAX];
	size_t			 dn_naddr;
};

struct up_ctx {
	TAILQ_ENTRY(up_ctx)	 cx_entry;
	char			*cx_ca;		/* NULL: the system's */
	SSL_CTX			*cx_ctx;
};

struct up_session {
	char			*se_key;
	SSL_SESSION		*se_sess;
};

struct upstream {
	struct event_base	*up_base;
	struct event		*up_work_ev;
	TAILQ_HEAD(, up_call)	 up_calls;
	TAILQ_HEAD(, up_call)	 up_work;
	TAILQ_HEAD(, up_conn)	 up_conns;
	TAILQ_HEAD(up_idleq, up_conn) up_idle;	/* most recent first */
	size_t			 up_nidle;
	TAILQ_HEAD(, up_ctx)	 up_ctxs;
	struct up_session	 up_sessions[UP_SESSIONS_MAX];
	TAILQ_HEAD(, up_resolve) up_resolving;
	int			 up_pipe[2];
	struct event		*up_pipe_ev;
	struct up_dns		 up_dns[UP_DNS_CACHE];
	uint8_t			*up_rbuf;
	uint8_t			*up_pbuf;
	int			 up_depth;	/* callbacks on the stack */
	int			 up_settling;
};

/* uptls.c */
extern BIO_METHOD	*up_bio_method;
extern int		 up_ssl_index;
SSL_CTX		*up_ssl_ctx(struct upstream *, const char *ca, char *err,
		    size_t errlen);
SSL_SESSION	*up_session_find(struct upstream *, const char *key);
const char	*up_ssl_error(char *buf, size_t len);

/* upname.c */
int		 up_dns_find(struct upstream *, struct up_call *);
void		 up_resolve_start(struct up_call *);
void		 up_resolve_free(struct up_resolve *);
void		 up_call_ports(struct up_call *);

/* upreq.c */
int		 up_request_check(const struct up_request *,
		    const struct up_callbacks *);
const char	*up_url_parse(struct up_call *, const char *url,
		    char **target);
void		 up_call_target(struct up_call *, const struct up_request *);
void		 up_build_request(struct up_call *, const struct up_request *,
		    const char *target);

/* upstream.c */
char		*up_strdup(const char *);
const char	*up_port_str(unsigned int);
char		*up_join(const char *, const char *, const char *,
		    const char *);
void		 up_buf_take(struct up_buf *, size_t);
void		 up_buf_add(struct up_buf *, const void *, size_t);
void		 up_call_fail_io(struct up_call *, enum up_result, int err,
		    const char *what);
void		 up_call_connect(struct up_call *);
void		 up_call_end(struct up_call *, enum up_result,
		    const char *detail);
void		 up_settle(struct upstream *);

#endif
