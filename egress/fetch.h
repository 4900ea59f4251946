/*
 * The controlled fetch of PROTOCOL.md 8: one GET of a public http(s) URL,
 * its redirects followed by hand.  Every hop's URL is canonicalised and its
 * name resolved (all A and AAAA records, on the event loop); one address
 * that is not public refuses the fetch; the connection goes to a vetted
 * address itself while Host, SNI and the certificate use the name.  The
 * answer is read whole, bounded on the wire and after decoding.
 *
 * Nothing here knows about messages: egress answers EGR_FETCH with it, and
 * tests/tools/fetchcli runs it without the sandbox.
 */
#ifndef RTSANDBOX_FETCH_H
#define RTSANDBOX_FETCH_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct upstream;
struct fetch;
struct fetch_resolver;

struct fetch_opts {
	const char	*fo_url;
	uint64_t	 fo_deadline_ms;	/* the whole call */
	uint64_t	 fo_max_bytes;		/* wire and decoded */
	uint64_t	 fo_max_redirects;	/* 0: a 3xx is the answer */
	/* Resolve and vet the URL's addresses only, connecting nowhere:
	 * an answer of ok with no status. */
	int		 fo_check;
};

/* The defaults of PROTOCOL.md 8 for url. */
void		 fetch_opts_default(struct fetch_opts *, const char *url);
/*
 * NULL when the URL's length and every option are within PROTOCOL.md 8's
 * ranges, else a reason naming the first one that is not, e.g.
 * "max_bytes must be 1-33554432".
 */
const char	*fetch_opts_check(const struct fetch_opts *);

/* What every fetch of a process shares; must outlive its fetches. */
struct fetch_env {
	struct event_base	*fe_base;
	struct fetch_resolver	*fe_resolver;
	struct upstream		*fe_up;
	const char		*fe_ca_file;	/* NULL: the system bundle */
};

/*
 * The resolver (libevent's evdns on the loop): with nameserver NULL the
 * system's, /etc/resolv.conf and /etc/hosts read now; else only that
 * "IP:PORT" and no hosts file.  NULL when it cannot be set up.
 */
struct fetch_resolver *fetch_resolver_new(struct event_base *,
		    const char *nameserver);
/* Only once every fetch that used it has ended or been cancelled. */
void		 fetch_resolver_free(struct fetch_resolver *);

enum fetch_err {
	FETCH_OK = 0,
	FETCH_BAD_OPTION,	/* an option out of range */
	FETCH_BAD_URL,		/* not an absolute http(s) URL we accept */
	FETCH_NOT_PUBLIC,	/* an address of the name is not public */
	FETCH_NO_ADDRESS,	/* the name has no A or AAAA record */
	FETCH_DNS,		/* the name could not be resolved */
	FETCH_CONNECT,		/* no address took the connection */
	FETCH_TLS,		/* handshake or certificate */
	FETCH_HTTP,		/* a broken answer */
	FETCH_TOO_LARGE,	/* past max_bytes, declared, wire or decoded */
	FETCH_ENCODING,		/* an unknown content-encoding */
	FETCH_DECODE,		/* a corrupt or truncated coded body */
	FETCH_REDIRECTS,	/* more than max_redirects */
	FETCH_BAD_REDIRECT,	/* a location that is refused */
	FETCH_DEADLINE,		/* deadline_ms passed */
	FETCH_OTHER,
};
const char	*fetch_err_to_string(enum fetch_err);

/* Valid during the callback only. */
struct fetch_result {
	int		 fr_ok;
	enum fetch_err	 fr_err;
	/* When not ok: a reason for an operator and a model (printable
	 * ASCII), e.g. "example.com: address 10.0.0.1 is not public". */
	const char	*fr_error;
	long		 fr_status;
	/* The canonical URL of the last hop; NULL when the first did not
	 * parse. */
	const char	*fr_url;
	const char	*fr_host;	/* its host, for logs; "?" if none */
	/* Printable ASCII, at most FETCH_CTYPE_MAX bytes, else NULL. */
	const char	*fr_content_type;
	/* A 3xx answer's location, resolved and canonical, or NULL. */
	const char	*fr_location;
	const uint8_t	*fr_body;	/* decoded */
	size_t		 fr_body_len;
	unsigned	 fr_redirects;	/* followed */
	long		 fr_ms;		/* since fetch_start() */
};

#define FETCH_CTYPE_MAX		256

typedef void	(*fetch_done_fn)(const struct fetch_result *, void *arg);

/*
 * Start a fetch; opts->fo_url is copied.  done is called exactly once,
 * from the event loop (never from inside fetch_start()), unless the fetch
 * is cancelled first; the fetch is freed when done returns.  Options out of
 * range end it with FETCH_BAD_OPTION.  Never NULL.
 */
struct fetch	*fetch_start(const struct fetch_env *,
		    const struct fetch_opts *, fetch_done_fn done, void *arg);
/* Stop and free a fetch; no callback follows.  Not from its own done. */
void		 fetch_cancel(struct fetch *);

#endif
