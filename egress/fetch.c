/*
 * The controlled fetch (PROTOCOL.md 8), as a small state machine on the
 * event loop.  Each hop: canonicalise the URL (netvet), look the name up in
 * /etc/hosts or else ask for its A and AAAA records, one evdns query each
 * and both awaited (evdns_getaddrinfo() would give up on a late family and
 * cannot tell "no such record" from a failure), vet every address, then
 * try the vetted addresses in turn through upstream.c with the connection
 * pinned to each.  A redirect is answered by a new hop; the transfer that
 * carried it is aborted.  Steps run from a deferred event, never below a
 * libcurl or evdns frame, so starting and stopping things is always
 * allowed.
 *
 * An evdns query may call back after fetch_cancel(), so each one has a
 * small holder that outlives the fetch until its callback comes.
 */
#include <sys/socket.h>
#include <sys/time.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "decode.h"
#include "fetch.h"
#include "limits.h"
#include "log.h"
#include "netvet.h"
#include "upstream.h"

/* Addresses kept per family and hop; all of them are vetted. */
#define FETCH_HOSTS_FILE	"/etc/hosts"
#define FETCH_RESOLV_CONF	"/etc/resolv.conf"
#define FETCH_HOSTS_BYTES_MAX	(1024 * 1024)
#define FETCH_ADDRS_PER_FAMILY	16
#define FETCH_ADDRS_MAX		(2 * FETCH_ADDRS_PER_FAMILY)
/* Connection failures named in the error text. */
#define FETCH_FAILS_SHOWN	4
#define FETCH_ERROR_MAX		600
#define FETCH_DETAIL_MAX	200

_Static_assert(URL_BYTES_MAX == 8192, "fetch_opts_check's text");
_Static_assert(FETCH_DEADLINE_MS_MIN == 1 && FETCH_DEADLINE_MS_MAX == 120000,
    "fetch_opts_check's text");
_Static_assert(FETCH_BYTES_MIN == 1 && FETCH_BYTES_MAX == 33554432,
    "fetch_opts_check's text");
_Static_assert(FETCH_REDIRECTS_MAX == 10, "fetch_opts_check's text");
_Static_assert(URL_BYTES_MAX < NV_URL_MAX, "a URL fits nv_url");

enum fetch_act {
	FETCH_ACT_NONE,
	FETCH_ACT_HOP,		/* resolve the current URL's host */
	FETCH_ACT_RESOLVED,	/* both queries are in: vet, then connect */
	FETCH_ACT_ATTEMPT,	/* connect to f_addrs[f_ai] */
	FETCH_ACT_FINISH,	/* call done and free */
};

struct fetch_addr {
	struct sockaddr_storage	 fa_ss;
	socklen_t		 fa_len;
};

/* One /etc/hosts line's address for one name. */
struct fetch_hosts_entry {
	char			*he_name;
	struct fetch_addr	 he_addr;
};

struct fetch_resolver {
	struct evdns_base		*rs_dns;
	struct fetch_hosts_entry	*rs_hosts;
	size_t				 rs_nhosts;
};

/* One query in flight. */
struct fetch_dnsq {
	struct fetch			*q_fetch;	/* NULL: abandoned */
	struct evdns_request		*q_req;
	int				 q_slot;	/* 0: A, 1: AAAA */
};

struct fetch {
	const struct fetch_env	*f_env;
	fetch_done_fn		 f_done;
	void			*f_arg;
	uint64_t		 f_deadline_ms;
	uint64_t		 f_max_bytes;
	uint64_t		 f_max_redirects;
	int			 f_check;	/* fo_check */
	struct timespec		 f_start;
	struct event		*f_timer;
	struct event		*f_step;
	enum fetch_act		 f_act;

	struct nv_url		*f_url;		/* the current hop */
	struct nv_url		*f_next;	/* a redirect being followed */
	int			 f_url_ok;
	unsigned		 f_redirects;

	struct fetch_dnsq	*f_q[2];
	int			 f_dns_err;	/* DNS_ERR_* of a failed query */
	char			 f_bad[INET6_ADDRSTRLEN];
	struct fetch_addr	 f_found[2][FETCH_ADDRS_PER_FAMILY];
	size_t			 f_nfound[2];
	struct fetch_addr	 f_addrs[FETCH_ADDRS_MAX];
	size_t			 f_naddrs;
	size_t			 f_ai;
	char			 f_fails[FETCH_ERROR_MAX];
	unsigned		 f_nfails;

	struct up_call		*f_up;
	int			 f_head;	/* this attempt has its head */
	int			 f_follow;	/* abort it and go to f_next */
	long			 f_status;
	struct dec		*f_dec;
	enum dec_kind		 f_kind;
	char			*f_ctype;
	char			*f_location;
	enum fetch_err		 f_perr;	/* set in on_head/on_data */
	char			 f_ptext[FETCH_ERROR_MAX];

	int			 f_finishing;
	int			 f_in_done;
	enum fetch_err		 f_err;
	char			 f_error[FETCH_ERROR_MAX];
};

const char *
fetch_err_to_string(enum fetch_err e)
{
	switch (e) {
	case FETCH_OK:
		return "ok";
	case FETCH_BAD_OPTION:
		return "option out of range";
	case FETCH_BAD_URL:
		return "URL refused";
	case FETCH_NOT_PUBLIC:
		return "address not public";
	case FETCH_NO_ADDRESS:
		return "no address";
	case FETCH_DNS:
		return "name resolution failed";
	case FETCH_CONNECT:
		return "connection failed";
	case FETCH_TLS:
		return "TLS failed";
	case FETCH_HTTP:
		return "bad answer";
	case FETCH_TOO_LARGE:
		return "answer too large";
	case FETCH_ENCODING:
		return "unsupported content-encoding";
	case FETCH_DECODE:
		return "bad compressed answer";
	case FETCH_REDIRECTS:
		return "too many redirects";
	case FETCH_BAD_REDIRECT:
		return "redirect refused";
	case FETCH_DEADLINE:
		return "deadline passed";
	case FETCH_OTHER:
		break;
	}
	return "fetch failed";
}

void
fetch_opts_default(struct fetch_opts *o, const char *url)
{
	o->fo_url = url;
	o->fo_deadline_ms = FETCH_DEADLINE_MS_DEFAULT;
	o->fo_max_bytes = FETCH_BYTES_DEFAULT;
	o->fo_max_redirects = FETCH_REDIRECTS_DEFAULT;
	o->fo_check = 0;
}

const char *
fetch_opts_check(const struct fetch_opts *o)
{
	if (o->fo_url == NULL || o->fo_url[0] == '\0' ||
	    strlen(o->fo_url) > URL_BYTES_MAX)
		return "url must be 1-8192 bytes";
	if (o->fo_deadline_ms < FETCH_DEADLINE_MS_MIN ||
	    o->fo_deadline_ms > FETCH_DEADLINE_MS_MAX)
		return "deadline_ms must be 1-120000";
	if (o->fo_max_bytes < FETCH_BYTES_MIN ||
	    o->fo_max_bytes > FETCH_BYTES_MAX)
		return "max_bytes must be 1-33554432";
	if (o->fo_max_redirects > FETCH_REDIRECTS_MAX)
		return "max_redirects must be 0-10";
	return NULL;
}

static void
fetch_dns_log(int is_warn, const char *msg)
{
	if (is_warn)
		log_warnx("resolver: %s", msg);
	else
		log_debug("resolver: %s", msg);
}

static void
fetch_hosts_add(struct fetch_resolver *rs, const struct fetch_addr *fa,
    const char *name, size_t len)
{
	struct fetch_hosts_entry	*he;
	size_t				 i;

	if (len == 0 || len > NV_HOST_MAX)
		return;
	if ((he = reallocarray(rs->rs_hosts, rs->rs_nhosts + 1,
	    sizeof(*he))) == NULL)
		fatal("%s", __func__);
	rs->rs_hosts = he;
	he += rs->rs_nhosts++;
	if ((he->he_name = strndup(name, len)) == NULL)
		fatal("%s", __func__);
	for (i = 0; i < len; i++)
		if (he->he_name[i] >= 'A' && he->he_name[i] <= 'Z')
			he->he_name[i] += 'a' - 'A';
	if (len > 1 && he->he_name[len - 1] == '.')
		he->he_name[len - 1] = '\0';
	he->he_addr = *fa;
}

/* "ADDRESS NAME [NAME...]", '#' to the end of a line is a comment. */
static void
fetch_hosts_line(struct fetch_resolver *rs, char *line)
{
	struct fetch_addr	 fa;
	struct sockaddr_in	*sin;
	struct sockaddr_in6	*sin6;
	char			*p, *tok, *save = NULL;

	sin = (struct sockaddr_in *)(void *)&fa.fa_ss;
	sin6 = (struct sockaddr_in6 *)(void *)&fa.fa_ss;

	if ((p = strchr(line, '#')) != NULL)
		*p = '\0';
	if ((tok = strtok_r(line, " \t\r\n", &save)) == NULL)
		return;
	memset(&fa, 0, sizeof(fa));
	if (inet_pton(AF_INET, tok, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		fa.fa_len = sizeof(*sin);
	} else if (inet_pton(AF_INET6, tok, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		fa.fa_len = sizeof(*sin6);
	} else
		return;
	while ((tok = strtok_r(NULL, " \t\r\n", &save)) != NULL)
		fetch_hosts_add(rs, &fa, tok, strlen(tok));
}

static void
fetch_hosts_load(struct fetch_resolver *rs, const char *path)
{
	FILE	*fp;
	char	*line = NULL;
	size_t	 cap = 0, total = 0;
	ssize_t	 n;

	if ((fp = fopen(path, "re")) == NULL) {
		log_debug("%s: %s: %s", __func__, path, strerror(errno));
		return;
	}
	while ((n = getline(&line, &cap, fp)) != -1 &&
	    (total += n) <= FETCH_HOSTS_BYTES_MAX)
		fetch_hosts_line(rs, line);
	free(line);
	fclose(fp);
}

struct fetch_resolver *
fetch_resolver_new(struct event_base *base, const char *nameserver)
{
	struct fetch_resolver	*rs;
	int			 rc;

	evdns_set_log_fn(fetch_dns_log);
	if ((rs = calloc(1, sizeof(*rs))) == NULL)
		fatal("%s", __func__);
	if ((rs->rs_dns = evdns_base_new(base, 0)) == NULL) {
		free(rs);
		return NULL;
	}
	if (nameserver != NULL) {
		if (evdns_base_nameserver_ip_add(rs->rs_dns, nameserver) !=
		    0) {
			log_warnx("%s: bad name server %s", __func__,
			    nameserver);
			fetch_resolver_free(rs);
			return NULL;
		}
		return rs;
	}
	/*
	 * Name servers and options, not the search list: a URL names a host
	 * fully, and "http://wiki/" must not become the site's own wiki.
	 * Without a usable file evdns asks 127.0.0.1, as glibc would.
	 */
	if ((rc = evdns_base_resolv_conf_parse(rs->rs_dns,
	    DNS_OPTION_NAMESERVERS | DNS_OPTION_MISC, FETCH_RESOLV_CONF)) != 0)
		log_warnx("%s: %s unusable (%d), asking 127.0.0.1", __func__,
		    FETCH_RESOLV_CONF, rc);
	fetch_hosts_load(rs, FETCH_HOSTS_FILE);
	return rs;
}

void
fetch_resolver_free(struct fetch_resolver *rs)
{
	size_t	 i;

	if (rs == NULL)
		return;
	evdns_base_free(rs->rs_dns, 0);
	for (i = 0; i < rs->rs_nhosts; i++)
		free(rs->rs_hosts[i].he_name);
	free(rs->rs_hosts);
	free(rs);
}

/* Text from a peer or a library, fit for a log line and a model. */
static void
fetch_clean(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
}

static long
fetch_ms(const struct fetch *f)
{
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - f->f_start.tv_sec) * 1000 +
	    (now.tv_nsec - f->f_start.tv_nsec) / 1000000;
}

static const char *
fetch_host(const struct fetch *f)
{
	return f->f_url_ok ? f->f_url->nu_host : "?";
}

static void
fetch_schedule(struct fetch *f, enum fetch_act act)
{
	f->f_act = act;
	event_active(f->f_step, EV_TIMEOUT, 1);
}

/* Forget the queries in flight; their callbacks free the holders. */
static void
fetch_dns_abandon(struct fetch *f)
{
	struct evdns_request	*req;
	size_t			 i;

	for (i = 0; i < 2; i++) {
		if (f->f_q[i] == NULL)
			continue;
		req = f->f_q[i]->q_req;
		f->f_q[i]->q_fetch = NULL;
		f->f_q[i] = NULL;
		evdns_cancel_request(f->f_env->fe_resolver->rs_dns, req);
	}
}

static void
fetch_stop(struct fetch *f)
{
	fetch_dns_abandon(f);
	if (f->f_up != NULL) {
		upstream_cancel(f->f_up);
		f->f_up = NULL;
	}
	event_del(f->f_timer);
}

static void __attribute__((format(printf, 3, 4)))
fetch_fail(struct fetch *f, enum fetch_err err, const char *fmt, ...)
{
	va_list	 ap;

	if (f->f_finishing)
		return;
	f->f_finishing = 1;
	f->f_err = err;
	va_start(ap, fmt);
	vsnprintf(f->f_error, sizeof(f->f_error), fmt, ap);
	va_end(ap);
	fetch_clean(f->f_error);
	fetch_stop(f);
	fetch_schedule(f, FETCH_ACT_FINISH);
}

static void
fetch_succeed(struct fetch *f)
{
	if (f->f_finishing)
		return;
	f->f_finishing = 1;
	f->f_err = FETCH_OK;
	fetch_stop(f);
	fetch_schedule(f, FETCH_ACT_FINISH);
}

static void
fetch_attempt_reset(struct fetch *f)
{
	dec_free(f->f_dec);
	f->f_dec = NULL;
	free(f->f_ctype);
	f->f_ctype = NULL;
	free(f->f_location);
	f->f_location = NULL;
	f->f_head = 0;
	f->f_follow = 0;
	f->f_status = 0;
	f->f_perr = FETCH_OK;
	f->f_ptext[0] = '\0';
}

static void
fetch_free(struct fetch *f)
{
	fetch_stop(f);
	fetch_attempt_reset(f);
	event_free(f->f_timer);
	event_free(f->f_step);
	free(f->f_url);
	free(f->f_next);
	free(f);
}

static const char *
fetch_addr_text(const struct sockaddr *sa, char *buf, size_t len)
{
	const void	*a;

	if (sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else
		a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
	if (inet_ntop(sa->sa_family, a, buf, len) == NULL)
		snprintf(buf, len, "?");
	return buf;
}

/*
 * Resolution.
 */

/* Vet one address of the name; keep it when there is room. */
static void
fetch_found(struct fetch *f, int slot, const struct sockaddr *sa,
    socklen_t len)
{
	struct fetch_addr	*fa;

	if (!nv_sockaddr_public(sa, len)) {
		if (f->f_bad[0] == '\0')
			fetch_addr_text(sa, f->f_bad, sizeof(f->f_bad));
		return;
	}
	if (f->f_nfound[slot] == FETCH_ADDRS_PER_FAMILY)
		return;
	fa = &f->f_found[slot][f->f_nfound[slot]++];
	memset(fa, 0, sizeof(*fa));
	memcpy(&fa->fa_ss, sa, len);
	fa->fa_len = len;
}

static void
fetch_dns_cb(int result, char type, int count, int ttl, void *addrs,
    void *arg)
{
	struct fetch_dnsq	*q = arg;
	struct fetch		*f = q->q_fetch;
	struct sockaddr_in	 sin;
	struct sockaddr_in6	 sin6;
	int			 i, slot = q->q_slot;

	free(q);
	if (f == NULL)
		return;		/* abandoned */
	f->f_q[slot] = NULL;
	/* "No such name" and "no such record" are empty answers; anything
	 * else leaves the list unknown. */
	if (result != DNS_ERR_NONE && result != DNS_ERR_NOTEXIST &&
	    result != DNS_ERR_NODATA)
		f->f_dns_err = result;
	for (i = 0; result == DNS_ERR_NONE && addrs != NULL && i < count;
	    i++) {
		if (type == DNS_IPv4_A && slot == 0) {
			memset(&sin, 0, sizeof(sin));
			sin.sin_family = AF_INET;
			memcpy(&sin.sin_addr, (const uint8_t *)addrs + 4 * i,
			    4);
			fetch_found(f, slot, (struct sockaddr *)&sin,
			    sizeof(sin));
		} else if (type == DNS_IPv6_AAAA && slot == 1) {
			memset(&sin6, 0, sizeof(sin6));
			sin6.sin6_family = AF_INET6;
			memcpy(&sin6.sin6_addr, (const uint8_t *)addrs + 16 * i,
			    16);
			fetch_found(f, slot, (struct sockaddr *)&sin6,
			    sizeof(sin6));
		}
	}
	if (f->f_q[0] == NULL && f->f_q[1] == NULL)
		fetch_schedule(f, FETCH_ACT_RESOLVED);
}

/* /etc/hosts first, as glibc does: a name found there is not asked. */
static int
fetch_from_hosts(struct fetch *f)
{
	const struct fetch_resolver	*rs = f->f_env->fe_resolver;
	const struct fetch_addr		*fa;
	size_t				 i;
	int				 found = 0;

	for (i = 0; i < rs->rs_nhosts; i++) {
		if (strcmp(rs->rs_hosts[i].he_name, f->f_url->nu_host) != 0)
			continue;
		fa = &rs->rs_hosts[i].he_addr;
		fetch_found(f, fa->fa_ss.ss_family == AF_INET ? 0 : 1,
		    (const struct sockaddr *)&fa->fa_ss, fa->fa_len);
		found = 1;
	}
	return found;
}

static void
fetch_resolve(struct fetch *f)
{
	struct evdns_base	*dns = f->f_env->fe_resolver->rs_dns;
	struct fetch_dnsq	*q;
	int			 i;

	f->f_dns_err = 0;
	f->f_bad[0] = '\0';
	f->f_nfound[0] = f->f_nfound[1] = 0;
	if (fetch_from_hosts(f)) {
		fetch_schedule(f, FETCH_ACT_RESOLVED);
		return;
	}
	/* evdns calls back from the loop only, never from in here. */
	for (i = 0; i < 2; i++) {
		if ((q = calloc(1, sizeof(*q))) == NULL)
			fatal("%s", __func__);
		q->q_fetch = f;
		q->q_slot = i;
		q->q_req = i == 0 ?
		    evdns_base_resolve_ipv4(dns, f->f_url->nu_host,
		    DNS_QUERY_NO_SEARCH, fetch_dns_cb, q) :
		    evdns_base_resolve_ipv6(dns, f->f_url->nu_host,
		    DNS_QUERY_NO_SEARCH, fetch_dns_cb, q);
		if (q->q_req == NULL) {
			free(q);
			f->f_dns_err = DNS_ERR_UNKNOWN;
			continue;
		}
		f->f_q[i] = q;
	}
	if (f->f_q[0] == NULL && f->f_q[1] == NULL)
		fetch_schedule(f, FETCH_ACT_RESOLVED);
}

static void
fetch_resolved(struct fetch *f)
{
	size_t	 i, s;

	if (f->f_bad[0] != '\0') {
		fetch_fail(f, FETCH_NOT_PUBLIC, "%s: address %s is not public",
		    fetch_host(f), f->f_bad);
		return;
	}
	/* An answer that is not complete could hide an address. */
	if (f->f_dns_err != 0) {
		fetch_fail(f, FETCH_DNS, "%s: the name cannot be resolved (%s)",
		    fetch_host(f), evdns_err_to_string(f->f_dns_err));
		return;
	}
	f->f_naddrs = 0;
	for (s = 0; s < 2; s++)
		for (i = 0; i < f->f_nfound[s]; i++)
			f->f_addrs[f->f_naddrs++] = f->f_found[s][i];
	if (f->f_naddrs == 0) {
		fetch_fail(f, FETCH_NO_ADDRESS, "%s: the name has no address",
		    fetch_host(f));
		return;
	}
	log_debug("fetch %s: %zu address%s", fetch_host(f), f->f_naddrs,
	    f->f_naddrs == 1 ? "" : "es");
	if (f->f_check) {
		fetch_succeed(f);
		return;
	}
	f->f_ai = 0;
	fetch_schedule(f, FETCH_ACT_ATTEMPT);
}

/* A new hop: a literal address was vetted by nv_url_parse(); a name is
 * resolved. */
static void
fetch_hop(struct fetch *f)
{
	struct sockaddr_in	*sin;
	struct sockaddr_in6	*sin6;
	struct fetch_addr	*fa = &f->f_addrs[0];

	f->f_naddrs = 0;
	f->f_nfails = 0;
	f->f_fails[0] = '\0';
	memset(fa, 0, sizeof(*fa));
	switch (f->f_url->nu_kind) {
	case NV_HOST_NAME:
		fetch_resolve(f);
		return;
	case NV_HOST_IPV4:
		sin = (struct sockaddr_in *)(void *)&fa->fa_ss;
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, f->f_url->nu_addr, 4);
		fa->fa_len = sizeof(*sin);
		break;
	case NV_HOST_IPV6:
		sin6 = (struct sockaddr_in6 *)(void *)&fa->fa_ss;
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, f->f_url->nu_addr, 16);
		fa->fa_len = sizeof(*sin6);
		break;
	}
	if (!nv_sockaddr_public((struct sockaddr *)&fa->fa_ss, fa->fa_len)) {
		fetch_fail(f, FETCH_NOT_PUBLIC, "address %s is not public",
		    fetch_host(f));
		return;
	}
	f->f_naddrs = 1;
	if (f->f_check) {
		fetch_succeed(f);
		return;
	}
	f->f_ai = 0;
	fetch_schedule(f, FETCH_ACT_ATTEMPT);
}

/*
 * The transfer.
 */

static const struct up_hdr *
fetch_hdr(const struct up_hdr *h, size_t n, const char *name)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (strcmp(h[i].name, name) == 0)
			return &h[i];
	return NULL;
}

/* Every content-encoding line, joined as one list. */
static int
fetch_coding(const struct up_hdr *h, size_t n, enum dec_kind *kind,
    char *shown, size_t shownlen)
{
	char	*all = NULL, *p;
	size_t	 i;
	int	 rv;

	for (i = 0; i < n; i++) {
		if (strcmp(h[i].name, "content-encoding") != 0)
			continue;
		if (asprintf(&p, "%s%s%s", all ? all : "", all ? ", " : "",
		    h[i].value) == -1)
			fatal("%s", __func__);
		free(all);
		all = p;
	}
	if (all == NULL) {
		*kind = DEC_IDENTITY;
		return 0;
	}
	rv = dec_kind_parse(all, kind);
	snprintf(shown, shownlen, "%s", all);
	free(all);
	return rv;
}

static int
fetch_is_redirect(long status)
{
	return status == 301 || status == 302 || status == 303 ||
	    status == 307 || status == 308;
}

/* A failure found in a callback: on_end reports it. */
static int __attribute__((format(printf, 3, 4)))
fetch_refuse(struct fetch *f, enum fetch_err err, const char *fmt, ...)
{
	va_list	 ap;

	f->f_perr = err;
	va_start(ap, fmt);
	vsnprintf(f->f_ptext, sizeof(f->f_ptext), fmt, ap);
	va_end(ap);
	return -1;
}

/* Where a 3xx points, checked; 0 or -1 with the reason in f_ptext. */
static int
fetch_location(struct fetch *f, const char *loc, struct nv_url *out)
{
	enum nv_err	 e;

	e = nv_url_resolve(f->f_url, loc, strlen(loc), out);
	if (e == NV_ADDR_NOT_PUBLIC)
		return fetch_refuse(f, FETCH_NOT_PUBLIC, "%s: redirect "
		    "refused: address %s is not public", fetch_host(f),
		    out->nu_host);
	if (e != NV_OK)
		return fetch_refuse(f, FETCH_BAD_REDIRECT, "%s: redirect "
		    "refused: %s", fetch_host(f), nv_err_to_string(e));
	if (strlen(out->nu_canon) > URL_BYTES_MAX)
		return fetch_refuse(f, FETCH_BAD_REDIRECT, "%s: redirect "
		    "refused: location longer than %u bytes", fetch_host(f),
		    URL_BYTES_MAX);
	return 0;
}

static int
fetch_on_head(struct up_call *up, long status, const struct up_hdr *h,
    size_t n, void *arg)
{
	struct fetch		*f = arg;
	const struct up_hdr	*loc, *ct, *cl;
	char			 shown[64];
	unsigned long long	 len;
	char			*end;

	f->f_head = 1;
	f->f_status = status;
	loc = status >= 300 && status < 400 ? fetch_hdr(h, n, "location") :
	    NULL;
	if (loc != NULL && fetch_is_redirect(status) &&
	    f->f_max_redirects > 0) {
		if (f->f_redirects >= f->f_max_redirects)
			return fetch_refuse(f, FETCH_REDIRECTS,
			    "too many redirects (%llu)",
			    (unsigned long long)f->f_max_redirects);
		if (f->f_next == NULL &&
		    (f->f_next = malloc(sizeof(*f->f_next))) == NULL)
			fatal("%s", __func__);
		if (fetch_location(f, loc->value, f->f_next) == -1)
			return -1;
		f->f_follow = 1;
		return -1;	/* its body is of no use */
	}
	/* A 3xx returned as the answer carries where it points, when that
	 * is a URL we would fetch. */
	if (loc != NULL) {
		struct nv_url	*u;

		if ((u = malloc(sizeof(*u))) == NULL)
			fatal("%s", __func__);
		if (fetch_location(f, loc->value, u) == 0 &&
		    (f->f_location = strdup(u->nu_canon)) == NULL)
			fatal("%s", __func__);
		f->f_perr = FETCH_OK;
		f->f_ptext[0] = '\0';
		free(u);
	}
	if ((cl = fetch_hdr(h, n, "content-length")) != NULL &&
	    cl->value[0] >= '0' && cl->value[0] <= '9') {
		errno = 0;
		len = strtoull(cl->value, &end, 10);
		if (*end == '\0' && (errno == ERANGE ||
		    len > f->f_max_bytes))
			return fetch_refuse(f, FETCH_TOO_LARGE, "answer larger "
			    "than %llu bytes (content-length %.20s)",
			    (unsigned long long)f->f_max_bytes, cl->value);
	}
	if (fetch_coding(h, n, &f->f_kind, shown, sizeof(shown)) == -1)
		return fetch_refuse(f, FETCH_ENCODING, "%s: unsupported "
		    "content-encoding \"%s\"", fetch_host(f), shown);
	if ((f->f_dec = dec_new(f->f_kind, f->f_max_bytes)) == NULL)
		return fetch_refuse(f, FETCH_OTHER, "%s: cannot decode %s",
		    fetch_host(f), dec_kind_name(f->f_kind));
	if ((ct = fetch_hdr(h, n, "content-type")) != NULL &&
	    strlen(ct->value) <= FETCH_CTYPE_MAX) {
		const char	*p;

		for (p = ct->value; *p >= 0x20 && *p <= 0x7e; p++)
			;
		if (*p == '\0' && (f->f_ctype = strdup(ct->value)) == NULL)
			fatal("%s", __func__);
	}
	return 0;
}

static int
fetch_on_data(struct up_call *up, const void *buf, size_t len, void *arg)
{
	struct fetch	*f = arg;

	switch (dec_feed(f->f_dec, buf, len)) {
	case DEC_OK:
		return 0;
	case DEC_WIRE_TOO_LARGE:
		return fetch_refuse(f, FETCH_TOO_LARGE, "answer larger than "
		    "%llu bytes", (unsigned long long)f->f_max_bytes);
	case DEC_TOO_LARGE:
		return fetch_refuse(f, FETCH_TOO_LARGE, "answer larger than "
		    "%llu bytes once decoded (%s)",
		    (unsigned long long)f->f_max_bytes,
		    dec_kind_name(f->f_kind));
	case DEC_CORRUPT:
	case DEC_TRUNCATED:
	default:
		return fetch_refuse(f, FETCH_DECODE, "%s: corrupt compressed "
		    "answer (%s)", fetch_host(f), dec_kind_name(f->f_kind));
	}
}

/* Refused, reset, unreachable or timed out: the next address may do. */
static int
fetch_connect_level(struct fetch *f, enum up_result r, int err)
{
	if (f->f_head)
		return 0;
	if (r == UP_TIMEOUT)
		return 1;
	if (r != UP_CONNECT_FAILED && r != UP_TLS_FAILED && r != UP_PROTOCOL)
		return 0;
	switch (err) {
	case ECONNREFUSED:
	case ECONNRESET:
	case ECONNABORTED:
	case ENETUNREACH:
	case EHOSTUNREACH:
	case ENETDOWN:
	case EHOSTDOWN:
	case ETIMEDOUT:
		return 1;
	default:
		return 0;
	}
}

static void
fetch_note_fail(struct fetch *f, enum up_result r, int err)
{
	const struct fetch_addr	*fa = &f->f_addrs[f->f_ai];
	char			 addr[INET6_ADDRSTRLEN], one[160];
	size_t			 len = strlen(f->f_fails);

	fetch_addr_text((const struct sockaddr *)&fa->fa_ss, addr,
	    sizeof(addr));
	if (r == UP_TIMEOUT)
		snprintf(one, sizeof(one), "%s: no connection within %ld ms",
		    addr, (long)FETCH_CONNECT_MS);
	else
		snprintf(one, sizeof(one), "%s: %s", addr, strerror(err));
	log_debug("fetch %s: %s", fetch_host(f), one);
	if (f->f_nfails++ < FETCH_FAILS_SHOWN)
		snprintf(f->f_fails + len, sizeof(f->f_fails) - len, "%s%s",
		    len > 0 ? "; " : "", one);
	else if (f->f_nfails == FETCH_FAILS_SHOWN + 1)
		snprintf(f->f_fails + len, sizeof(f->f_fails) - len, "; ...");
}

static void
fetch_on_end(struct up_call *up, enum up_result r, const char *detail,
    void *arg)
{
	struct fetch	*f = arg;
	struct nv_url	*u;
	char		 d[FETCH_DETAIL_MAX];
	int		 err = upstream_os_errno(up);
	enum dec_result	 dr;

	f->f_up = NULL;
	if (f->f_perr != FETCH_OK) {
		fetch_fail(f, f->f_perr, "%s", f->f_ptext);
		return;
	}
	if (f->f_follow) {
		u = f->f_url;
		f->f_url = f->f_next;
		f->f_next = u;
		f->f_redirects++;
		fetch_attempt_reset(f);
		log_debug("fetch: redirect %u to %s", f->f_redirects,
		    f->f_url->nu_host);
		fetch_schedule(f, FETCH_ACT_HOP);
		return;
	}
	if (r == UP_OK) {
		if ((dr = dec_finish(f->f_dec)) != DEC_OK) {
			fetch_fail(f, FETCH_DECODE, "%s: %s (%s)",
			    fetch_host(f), dec_result_to_string(dr),
			    dec_kind_name(f->f_kind));
			return;
		}
		fetch_succeed(f);
		return;
	}
	if (fetch_connect_level(f, r, err)) {
		fetch_note_fail(f, r, err);
		if (++f->f_ai < f->f_naddrs) {
			fetch_attempt_reset(f);
			fetch_schedule(f, FETCH_ACT_ATTEMPT);
		} else
			fetch_fail(f, FETCH_CONNECT, "connection to every "
			    "address of %s failed: %s", fetch_host(f),
			    f->f_fails);
		return;
	}
	snprintf(d, sizeof(d), "%s", detail);
	switch (r) {
	case UP_TLS_FAILED:
		fetch_fail(f, FETCH_TLS, "%s: TLS failed: %s", fetch_host(f),
		    d);
		break;
	case UP_PROTOCOL:
	case UP_TOO_LARGE:
		fetch_fail(f, FETCH_HTTP, "%s: bad answer: %s", fetch_host(f),
		    d);
		break;
	case UP_CONNECT_FAILED:
		fetch_fail(f, FETCH_CONNECT, "%s: connection failed: %s",
		    fetch_host(f), d);
		break;
	default:
		fetch_fail(f, FETCH_OTHER, "%s: %s: %s", fetch_host(f),
		    up_result_to_string(r), d);
		break;
	}
}

static const struct up_callbacks fetch_up_cbs = {
	fetch_on_head, fetch_on_data, fetch_on_end, NULL
};

static void
fetch_attempt(struct fetch *f)
{
	/* Nothing that names the client beyond what HTTP needs. */
	static const struct up_hdr	 hdrs[] = {
		{ "accept", "*/*" },
		{ "accept-encoding", "identity" },
		{ "user-agent", "rtsandbox" },
	};
	struct fetch_addr		 fa = f->f_addrs[f->f_ai];
	struct up_request		 req;

	if (fa.fa_ss.ss_family == AF_INET)
		((struct sockaddr_in *)(void *)&fa.fa_ss)->sin_port =
		    htons(f->f_url->nu_port);
	else
		((struct sockaddr_in6 *)(void *)&fa.fa_ss)->sin6_port =
		    htons(f->f_url->nu_port);
	fetch_attempt_reset(f);
	memset(&req, 0, sizeof(req));
	req.url = f->f_url->nu_canon;
	req.hdrs = hdrs;
	req.nhdrs = sizeof(hdrs) / sizeof(hdrs[0]);
	req.ca_file = f->f_env->fe_ca_file;
	req.connect_timeout_ms = FETCH_CONNECT_MS;
	req.connect_addr = (const struct sockaddr *)&fa.fa_ss;
	req.connect_addr_len = fa.fa_len;
	if ((f->f_up = upstream_call(f->f_env->fe_up, &req, &fetch_up_cbs,
	    f)) == NULL)
		fetch_fail(f, FETCH_OTHER, "%s: cannot start the request",
		    fetch_host(f));
}

/*
 * The end.
 */

static void
fetch_deliver(struct fetch *f)
{
	struct fetch_result	 fr;

	memset(&fr, 0, sizeof(fr));
	fr.fr_ok = f->f_err == FETCH_OK;
	fr.fr_err = f->f_err;
	fr.fr_error = fr.fr_ok ? NULL : f->f_error;
	fr.fr_url = f->f_url_ok ? f->f_url->nu_canon : NULL;
	fr.fr_host = fetch_host(f);
	fr.fr_redirects = f->f_redirects;
	fr.fr_ms = fetch_ms(f);
	if (fr.fr_ok) {
		fr.fr_status = f->f_status;
		fr.fr_content_type = f->f_ctype;
		fr.fr_location = f->f_location;
		/* a check connects nowhere: no body */
		if (f->f_dec != NULL)
			fr.fr_body = dec_data(f->f_dec, &fr.fr_body_len);
	}
	f->f_in_done = 1;
	f->f_done(&fr, f->f_arg);
	fetch_free(f);
}

static void
fetch_step_cb(evutil_socket_t fd, short events, void *arg)
{
	struct fetch	*f = arg;
	enum fetch_act	 act = f->f_act;

	f->f_act = FETCH_ACT_NONE;
	/* A failure overtakes whatever was scheduled before it. */
	if (f->f_finishing && act != FETCH_ACT_FINISH)
		return;
	switch (act) {
	case FETCH_ACT_HOP:
		fetch_hop(f);
		break;
	case FETCH_ACT_RESOLVED:
		fetch_resolved(f);
		break;
	case FETCH_ACT_ATTEMPT:
		fetch_attempt(f);
		break;
	case FETCH_ACT_FINISH:
		fetch_deliver(f);
		break;
	case FETCH_ACT_NONE:
		break;
	}
}

static void
fetch_deadline_cb(evutil_socket_t fd, short events, void *arg)
{
	struct fetch	*f = arg;

	fetch_fail(f, FETCH_DEADLINE, "deadline of %llu ms passed",
	    (unsigned long long)f->f_deadline_ms);
}

struct fetch *
fetch_start(const struct fetch_env *env, const struct fetch_opts *o,
    fetch_done_fn done, void *arg)
{
	struct fetch	*f;
	struct timeval	 tv;
	const char	*why;
	enum nv_err	 e;

	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    (f->f_url = malloc(sizeof(*f->f_url))) == NULL)
		fatal("%s", __func__);
	clock_gettime(CLOCK_MONOTONIC, &f->f_start);
	f->f_env = env;
	f->f_done = done;
	f->f_arg = arg;
	f->f_deadline_ms = o->fo_deadline_ms;
	f->f_max_bytes = o->fo_max_bytes;
	f->f_max_redirects = o->fo_max_redirects;
	f->f_check = o->fo_check;
	if ((f->f_step = event_new(env->fe_base, -1, 0, fetch_step_cb, f)) ==
	    NULL ||
	    (f->f_timer = evtimer_new(env->fe_base, fetch_deadline_cb, f)) ==
	    NULL)
		fatalx("%s: event_new", __func__);
	if ((why = fetch_opts_check(o)) != NULL) {
		fetch_fail(f, FETCH_BAD_OPTION, "%s", why);
		return f;
	}
	e = nv_url_parse(o->fo_url, strlen(o->fo_url), f->f_url);
	if (e == NV_ADDR_NOT_PUBLIC) {
		fetch_fail(f, FETCH_NOT_PUBLIC, "address %s is not public",
		    f->f_url->nu_host);
		return f;
	}
	if (e != NV_OK) {
		fetch_fail(f, FETCH_BAD_URL, "url refused: %s",
		    nv_err_to_string(e));
		return f;
	}
	f->f_url_ok = 1;
	tv.tv_sec = f->f_deadline_ms / 1000;
	tv.tv_usec = (f->f_deadline_ms % 1000) * 1000;
	if (evtimer_add(f->f_timer, &tv) == -1)
		fatalx("%s: evtimer_add", __func__);
	fetch_schedule(f, FETCH_ACT_HOP);
	return f;
}

void
fetch_cancel(struct fetch *f)
{
	if (f == NULL || f->f_in_done)
		return;
	fetch_free(f);
}
