/*
 * What http.c (connections) and httpserver.c (the listener) share; private
 * to them (http.h is the interface).
 */
#ifndef RTSANDBOX_BROKER_HTTPINT_H
#define RTSANDBOX_BROKER_HTTPINT_H

#include <sys/queue.h>
#include <sys/uio.h>

#include <stddef.h>
#include <stdint.h>

#include <event2/util.h>

#include "http.h"

/* Connections taken per wake-up of the listener: one, as the listener
 * stays ready while more wait, and trying for a second that is not there
 * is one more system call per call. */
#define HTTP_ACCEPT_BURST	1
/* How long the listener rests when descriptors or memory run out. */
#define HTTP_ACCEPT_PAUSE_MS	1000
/* Rests after refusals are logged at most once in this time. */
#define HTTP_REST_LOG_MS	60000
/* A refused request counts once more for each of these read of its body:
 * reading 96 MiB to refuse them costs what a hundred small refusals do. */
#define HTTP_REFUSAL_BYTES	(1024 * 1024)
/* Bytes per read and per writev: fewer wake-ups on large bodies. */
#define HTTP_READ_MAX		65536
/* The read tried as soon as a connection is taken: a small call whole. */
#define HTTP_READ_FIRST		16384
#define HTTP_WRITE_MAX		262144
/* Stream writes kept by reference while corked: three pieces each. */
#define HTTP_PIOV_MAX		24
/* First allocation of a chunked body, which then doubles. */
#define HTTP_BODY_MIN		16384
/*
 * The allocator: buffers under 1 MiB come from the heap and up to 4 MiB of
 * it stays free for reuse, so a stream's refills do not fault pages in and
 * out; when the last connection ends after 1 MiB or more went through, the
 * free memory goes back to the kernel (an idle broker stays small).
 */
#define HTTP_MMAP_THRESHOLD	(1024 * 1024)
#define HTTP_TRIM_THRESHOLD	(4 * 1024 * 1024)
#define HTTP_TRIM_AFTER		(1024 * 1024)

enum conn_state {
	C_HEAD,			/* collecting the head, head timer running */
	C_ROUTE,		/* inside on_head */
	C_BODY,			/* reading the body for the router */
	C_WAIT,			/* request in, no answer yet */
	C_STREAM,		/* streamed answer under way */
	C_FLUSH,		/* whole answer queued: close once written */
	C_LINGER,		/* answer written, draining an unread request */
	C_CLOSED,		/* descriptor closed, on_close due */
};

struct http_conn {
	TAILQ_ENTRY(http_conn)	 c_entry;
	struct http_server	*c_srv;
	int			 c_fd;		/* -1 once closed */
	struct event		*c_rev;		/* reads, made when first watched */
	struct event		*c_wev;		/* what the socket did not take */
	struct evbuffer		*c_out;		/* the answer, queued */
	/* Read and not used yet: the head, a chunked body, or bytes with no
	 * use that are dropped.  A body of known length is read into c_body
	 * directly. */
	char			*c_in;
	size_t			 c_inlen;
	size_t			 c_incap;
	struct event		*c_timer;
	enum conn_state		 c_state;
	struct http_head	 c_head;
	size_t			 c_scan;	/* head bytes searched */
	int			 c_routed;	/* on_head was called */
	int			 c_get;		/* GET: no silence timer */
	int			 c_consumed;	/* the request was read whole */
	int			 c_eof;		/* the client ended its side */
	int			 c_paused;
	int			 c_body_held;	/* the body waits to be read */
	int			 c_body_given;	/* on_body took the body */
	int			 c_in_body_cb;
	char			*c_body_out;	/* what on_body got, or NULL */
	int			 c_chunked_out;
	int			 c_nobody;	/* answer without body bytes */
	int			 c_rev_on;	/* c_rev is pending */
	int			 c_wev_on;	/* c_wev is pending */
	int			 c_sent;	/* some of the answer left */
	int			 c_dirty;	/* on s_dirty */
	int			 c_watch_later;	/* on s_later */
	TAILQ_ENTRY(http_conn)	 c_later_entry;
	TAILQ_ENTRY(http_conn)	 c_dirty_entry;
	/*
	 * While corked, stream bytes are not copied: they go out from the
	 * caller's buffers, after what the output holds, at the uncork, and
	 * only what the socket does not take is copied then.  Nothing is
	 * added to the output while c_npiov > 0.
	 */
	struct iovec		 c_piov[HTTP_PIOV_MAX];
	int			 c_npiov;
	char			 c_psize[HTTP_PIOV_MAX / 3][2 * sizeof(size_t) + 2];
	int			 c_npsize;

	char			*c_body;
	size_t			 c_body_len;
	size_t			 c_body_cap;
	size_t			 c_body_max;
	struct http_chunked	 c_chunked;
	http_body_cb		 c_on_body;
	http_body_err_cb	 c_on_body_err;

	http_conn_cb		 c_on_timer;
	http_conn_cb		 c_on_drain;
	size_t			 c_lowat;
	int			 c_drain_armed;
	int			 c_status;	/* of the answer, 0: none */
	size_t			 c_body_in;	/* body bytes read */
	void			*c_data;
};
TAILQ_HEAD(http_connq, http_conn);

struct http_server {
	struct event_base	*s_base;
	struct event		*s_ev;
	struct event		*s_pause;
	struct http_server_cbs	 s_cbs;
	void			*s_arg;
	struct http_limits	 s_lim;
	unsigned		 s_nconn;
	struct http_connq	 s_conns;
	size_t			 s_moved;	/* bytes since the last trim */
	int			 s_corked;
	TAILQ_HEAD(, http_conn)	 s_dirty;	/* to write when uncorked */
	TAILQ_HEAD(, http_conn)	 s_later;	/* to watch from s_later_ev */
	struct event		*s_later_ev;
	/* A first read's buffer (HTTP_READ_FIRST) kept for the next
	 * connection: no allocation of 16 KiB per call. */
	char			*s_spare;
	int			 s_resting;	/* the listener waits for s_pause */
	unsigned		 s_refused;	/* refusals in the window */
	int64_t			 s_refused_since; /* the window's start, ms */
	unsigned		 s_rests;
	unsigned		 s_rests_unlogged;
	int64_t			 s_rest_logged;	/* ms, or 0 */
};

/*
 * A connection whose request was read whole at once and waits for its
 * answer is watched for reading only from this long on: a small call
 * answered and closed before then costs the loop no epoll_ctl(2) to add
 * it and none to delete it, and a client that leaves a long call is
 * still noticed (PROTOCOL.md 3.5 sets no limit this touches).
 */
#define HTTP_WATCH_LATER_MS	50

/* http.c, for the listener */
void		 conn_new(struct http_server *, int fd);
void		 conn_free(struct http_conn *, int notify);
void		 conn_flush(struct http_conn *);
struct timeval	*ms_to_tv(int ms, struct timeval *);
/* The connection's reads are watched from now on. */
void		 conn_watch(struct http_conn *);

/* http.c, for httpread.c */
/* Close the descriptor now; on_close and the free come from the loop. */
void		 conn_close(struct http_conn *);
/* Write what is queued now, or when the server is uncorked. */
void		 conn_kick(struct http_conn *);
/* Watch the reads (again), with the silence limit of the state: 0 or -1. */
int		 conn_read_on(struct http_conn *);
void		 conn_read_off(struct http_conn *);
/* The state changed: the events that are on take its limits. */
void		 conn_set_timeouts(struct http_conn *);
/* PROTOCOL.md 3.5's 400 for a failure before the head is whole. */
void		 conn_bad_request(struct http_conn *);
/* An answer ends a body read in progress; the rest is dropped. */
void		 conn_drop_body(struct http_conn *);
/* A read or a write failed (errno): a body read ends, else a close. */
void		 conn_failed(struct http_conn *, const char *what);

/* httpread.c */
/* One read(2) of the request, and what it brought used. */
void		 conn_read(struct http_conn *);
void		 conn_readcb(evutil_socket_t, short, void *);
/* The input's buffer goes, to the server's spare when it is its size. */
void		 conn_in_free(struct http_conn *);
/* The body read fails: the router hears it, or the connection closes. */
void		 conn_body_fail(struct http_conn *, enum http_body_err);

/* httpserver.c */
/* n more refusals: past the allowance the listener rests. */
void		 http_refused(struct http_server *, unsigned n);
/* Watch c's reads once HTTP_WATCH_LATER_MS have passed (if it is still
 * open), or now when that cannot be arranged: 0, or -1 (close it). */
int		 http_watch_later(struct http_conn *);
/* c leaves the list of connections to watch later. */
void		 http_watch_cancel(struct http_conn *);

#endif
