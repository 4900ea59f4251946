/*
 * Egress: the only process that creates network sockets and reads
 * credentials.  Brokers and research jobs reach it over socketpairs that
 * the supervisor made and passed here as descriptors; research jobs and the
 * supervisor also ask it for controlled fetches (fetch.c).
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <event2/event.h>
#include <event2/util.h>

#include "buildconf.h"
#include "cred.h"
#include "egress.h"
#include "fetch.h"
#include "hdrs.h"
#include "reflect.h"
#include "upstream.h"
#include "limits.h"
#include "log.h"
#include "netvet.h"
#include "role.h"
#include "sandbox.h"

/* Fetches one research job may have running at once; each holds up to
 * FETCH_BYTES_MAX. */
#define EGRESS_PEER_FETCHES_MAX	8u
/* The largest integer a JSON number carries exactly. */
#define EGRESS_UINT_MAX		UINT64_C(9007199254740991)

struct egress_mcp {
	char			*em_name;
	char			*em_url;
};

/* One broker (or research job) edge. */
struct egress_peer {
	TAILQ_ENTRY(egress_peer)	 ep_entry;
	struct egress			*ep_egress;
	struct frame_conn		*ep_conn;
	enum proc_role			 ep_role;
	char				*ep_name;	/* "broker[chan]" */
	TAILQ_HEAD(, egress_call)	 ep_calls;
	TAILQ_HEAD(, egress_fetch)	 ep_fetches;
	size_t				 ep_nfetches;
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
	struct up_call			*ec_up;
	struct reflect			*ec_reflect;
	char				*ec_body;	/* kept until on_end */
	char				*ec_route;
	long				 ec_status;
	int				 ec_head_sent;
	int				 ec_refused;	/* status outside 200-599 */
	int				 ec_paused;
	uint64_t			 ec_unacked;
	uint64_t			 ec_bytes;
	struct timespec			 ec_start;
	char				 ec_secret[CRED_FILE_MAX];
	size_t				 ec_secret_len;
};

struct egress {
	struct event_base		*eg_base;
	char				*eg_upstream_url;
	char				*eg_credential_file;
	char				*eg_ca_file;
	char				*eg_mcp_credential_file;
	int				 eg_allow_http;
	struct egress_mcp		 eg_mcp[MCP_SERVERS_MAX];
	size_t				 eg_nmcp;
	uid_t				 eg_uid;
	struct upstream			*eg_upstream;
	int				 eg_have_config;
	TAILQ_HEAD(, egress_peer)	 eg_peers;
	struct role_parent		*eg_rp;
	struct fetch_resolver		*eg_resolver;
	struct fetch_env		 eg_fetch_env;
	TAILQ_HEAD(, egress_fetch)	 eg_fetches;	/* the supervisor's */
	char				*eg_test_dns;
	char				*eg_test_fetch_ca;
};

static char *
xstrdup_opt(const char *s)
{
	char	*p;

	if (s == NULL)
		return NULL;
	if ((p = strdup(s)) == NULL)
		fatal("strdup");
	return p;
}

static void	egress_call_free(struct egress_call *);
static void	egress_fetch_free(struct egress_fetch *);

static void
egress_peer_free(struct egress_peer *ep)
{
	struct egress_call	*ec;
	struct egress_fetch	*ef;

	while ((ec = TAILQ_FIRST(&ep->ep_calls)) != NULL) {
		if (ec->ec_up != NULL)
			upstream_cancel(ec->ec_up);
		egress_call_free(ec);
	}
	/* Nobody is left to read the answers. */
	while ((ef = TAILQ_FIRST(&ep->ep_fetches)) != NULL) {
		fetch_cancel(ef->ef_fetch);
		egress_fetch_free(ef);
	}
	TAILQ_REMOVE(&ep->ep_egress->eg_peers, ep, ep_entry);
	frame_conn_free(ep->ep_conn);
	free(ep->ep_name);
	free(ep);
}

static void
egress_peer_err(struct frame_conn *fc, enum frame_err err, void *arg)
{
	struct egress_peer	*ep = arg;

	if (err != FRAME_EOF)
		log_warnx("%s edge: %s", ep->ep_name,
		    frame_err_to_string(err));
	egress_peer_free(ep);
}

/* Response headers passed on at most (the allow-list names a handful). */
#define EGRESS_RESP_HDRS	32
/* Egress runs this far ahead of what the broker acknowledged. */
#define EGRESS_WINDOW		(1024u * 1024)

static void
egress_call_free(struct egress_call *ec)
{
	TAILQ_REMOVE(&ec->ec_peer->ep_calls, ec, ec_entry);
	reflect_free(ec->ec_reflect);
	explicit_bzero(ec->ec_secret, sizeof(ec->ec_secret));
	free(ec->ec_body);
	free(ec->ec_route);
	free(ec);
}

static struct egress_call *
egress_call_find(struct egress_peer *ep, uint64_t id)
{
	struct egress_call	*ec;

	TAILQ_FOREACH(ec, &ep->ep_calls, ec_entry)
		if (ec->ec_id == id)
			return ec;
	return NULL;
}

static void
egress_send(struct egress_peer *ep, struct msgb *mb)
{
	if (msg_send(ep->ep_conn, mb) == -1)
		log_warnx("%s: cannot queue an answer", ep->ep_name);
}

static long
ms_since(const struct timespec *t)
{
	struct timespec	 now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1000 +
	    (now.tv_nsec - t->tv_nsec) / 1000000;
}

/* The end of a call: logged with its channel, route, status and latency,
 * never a credential or a body. */
static void
egress_end(struct egress_call *ec, int ok, int status, const char *why)
{
	struct msgb	 mb;

	if (ok)
		log_info("%s %s: %ld, %llu bytes, %ld ms",
		    ec->ec_peer->ep_name, ec->ec_route, ec->ec_status,
		    (unsigned long long)ec->ec_bytes, ms_since(&ec->ec_start));
	else
		log_warnx("%s %s: failed after %ld ms: %s",
		    ec->ec_peer->ep_name, ec->ec_route,
		    ms_since(&ec->ec_start), why);
	msgb_init(&mb, MSG_EGR_END, 0);
	msg_add_uint(&mb, "call", ec->ec_id);
	msg_add_bool(&mb, "ok", ok);
	if (!ok)
		msg_add_uint(&mb, "status", status);
	/* The worker learns this much and nothing of the upstream's detail. */
	if (!ok && ec->ec_refused)
		msg_add_str(&mb, "error", "upstream_refused");
	egress_send(ec->ec_peer, &mb);
}

static void
egress_data(struct egress_call *ec, const void *buf, size_t len)
{
	struct msgb	 mb;

	if (len == 0)
		return;
	msgb_init(&mb, MSG_EGR_DATA, 0);
	msg_add_uint(&mb, "call", ec->ec_id);
	msg_add_data(&mb, buf, len);
	egress_send(ec->ec_peer, &mb);
	ec->ec_unacked += len;
}

static int
egress_on_head(struct up_call *up, long status, const struct up_hdr *hdrs,
    size_t n, void *arg)
{
	struct egress_call	*ec = arg;
	const char		*hn[EGRESS_RESP_HDRS], *hv[EGRESS_RESP_HDRS];
	size_t			 i, k = 0;
	struct msgb		 mb;

	ec->ec_status = status;
	/* Anything outside 200-599 is refused; redirects are errors. */
	if (status < 200 || status > 599) {
		ec->ec_refused = 1;
		return -1;
	}
	if (status >= 300 && status < 400)
		return -1;
	for (i = 0; i < n && k < EGRESS_RESP_HDRS; i++)
		if (hdrs_response_allowed(hdrs[i].name, hdrs[i].value,
		    ec->ec_secret, ec->ec_secret_len,
		    strncmp(ec->ec_route, "mcp", 3) == 0)) {
			hn[k] = hdrs[i].name;
			hv[k++] = hdrs[i].value;
		}
	msgb_init(&mb, MSG_EGR_HEAD, 0);
	msg_add_uint(&mb, "call", ec->ec_id);
	msg_add_uint(&mb, "status", status);
	msg_add_strv(&mb, "hnames", hn, k);
	msg_add_strv(&mb, "hvalues", hv, k);
	egress_send(ec->ec_peer, &mb);
	ec->ec_head_sent = 1;
	return 0;
}

static int
egress_on_data(struct up_call *up, const void *buf, size_t len, void *arg)
{
	struct egress_call	*ec = arg;
	const void		*out;
	size_t			 outlen;

	ec->ec_bytes += len;
	if (reflect_feed(ec->ec_reflect, buf, len, &out, &outlen) == -1) {
		log_warnx("%s %s: the credential came back in the "
		    "answer; call cut", ec->ec_peer->ep_name, ec->ec_route);
		return -1;
	}
	egress_data(ec, out, outlen);
	if (ec->ec_unacked > EGRESS_WINDOW) {
		ec->ec_paused = 1;
		return UP_PAUSE;
	}
	return 0;
}

static void
egress_on_end(struct up_call *up, enum up_result r, const char *detail,
    void *arg)
{
	struct egress_call	*ec = arg;
	const void		*out;
	size_t			 outlen;

	ec->ec_up = NULL;
	if (r == UP_OK) {
		if (reflect_finish(ec->ec_reflect, &out, &outlen) == -1)
			egress_end(ec, 0, 502, "credential in the answer");
		else {
			egress_data(ec, out, outlen);
			egress_end(ec, 1, 0, NULL);
		}
	} else {
		char	 why[300];

		snprintf(why, sizeof(why), "%s: %s", up_result_to_string(r),
		    detail);
		egress_end(ec, 0, r == UP_ABORTED && ec->ec_status >= 300 &&
		    ec->ec_status < 400 ? 502 : 502, why);
	}
	egress_call_free(ec);
}

static const struct up_callbacks egress_up_cbs = {
	egress_on_head, egress_on_data, egress_on_end
};

static const struct egress_mcp *
egress_mcp_find(const struct egress *eg, const char *name)
{
	size_t	 i;

	for (i = 0; i < eg->eg_nmcp; i++)
		if (strcmp(eg->eg_mcp[i].em_name, name) == 0)
			return &eg->eg_mcp[i];
	return NULL;
}

/*
 * A call from a broker: the credential is read now, at admission, and goes
 * with this call whatever binds later.  A failure before any connection is
 * a 502.
 */
static int
egress_call(struct egress_peer *ep, struct msg *m)
{
	struct egress		*eg = ep->ep_egress;
	struct egress_call	*ec;
	const struct egress_mcp	*em = NULL;
	const char		*kind, *path, *query = NULL, *server = NULL;
	const char		**hn, **hv, *credfile;
	const uint8_t		*data;
	size_t			 n, nv, len;
	uint64_t		 id;
	struct hdr		 in[8];
	struct hdrs_req		 hr;
	struct up_hdr		 uh[HDRS_REQ_MAX];
	struct up_request	 req;
	char			 url[URL_BYTES_MAX + 64], err[256];
	int			 mcp;

	if (msg_get_uint(m, "call", 1, UINT64_C(1) << 53, &id) == -1 ||
	    msg_get_str(m, "kind", 8, &kind) == -1 ||
	    msg_get_str(m, "path", 64, &path) == -1 ||
	    msg_get_str_opt(m, "query", 16, &query) == -1 ||
	    msg_get_str_opt(m, "server", MCP_SERVER_NAME_MAX, &server) == -1 ||
	    msg_get_strv(m, "hnames", 8, 64, &hn, &n) == -1 ||
	    msg_get_strv(m, "hvalues", 8, HEADER_VALUE_MAX * 4, &hv, &nv) ==
	    -1 ||
	    msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1 || n != nv)
		return -1;
	mcp = strcmp(kind, "mcp") == 0;
	if (!mcp && strcmp(kind, "model") != 0)
		return -1;
	/* A research job has the model and nothing else. */
	if (mcp && ep->ep_role != PROC_BROKER) {
		log_warnx("%s: MCP call from a research job", ep->ep_name);
		return -1;
	}
	if (egress_call_find(ep, id) != NULL)
		return -1;
	if ((ec = calloc(1, sizeof(*ec))) == NULL)
		fatal("%s", __func__);
	ec->ec_peer = ep;
	ec->ec_id = id;
	clock_gettime(CLOCK_MONOTONIC, &ec->ec_start);
	TAILQ_INSERT_TAIL(&ep->ep_calls, ec, ec_entry);

	/* Only the paths of PROTOCOL.md 3.2 and the configured servers. */
	if (mcp) {
		if (server == NULL || (em = egress_mcp_find(eg, server)) ==
		    NULL || eg->eg_mcp_credential_file == NULL)
			goto refuse;
		snprintf(url, sizeof(url), "%s", em->em_url);
		credfile = eg->eg_mcp_credential_file;
		if (asprintf(&ec->ec_route, "mcp/%s", server) == -1)
			fatal("%s", __func__);
	} else {
		if ((strcmp(path, "/v1/messages") != 0 &&
		    strcmp(path, "/v1/messages/count_tokens") != 0) ||
		    (query != NULL && strcmp(query, "beta=true") != 0))
			goto refuse;
		snprintf(url, sizeof(url), "%s%s%s%s", eg->eg_upstream_url,
		    path, query ? "?" : "", query ? query : "");
		credfile = eg->eg_credential_file;
		if ((ec->ec_route = strdup(path + 1)) == NULL)
			fatal("%s", __func__);
	}
	if (cred_read(AT_FDCWD, credfile, eg->eg_uid, ec->ec_secret,
	    sizeof(ec->ec_secret), &ec->ec_secret_len, err, sizeof(err)) !=
	    CRED_OK) {
		log_warnx("%s %s: credential %s: %s", ep->ep_name,
		    ec->ec_route, credfile, err);
		egress_end(ec, 0, 502, "no credential");
		egress_call_free(ec);
		return 0;
	}
	if ((ec->ec_reflect = reflect_new(ec->ec_secret,
	    ec->ec_secret_len)) == NULL)
		fatal("%s", __func__);
	for (size_t i = 0; i < n; i++) {
		in[i].name = hn[i];
		in[i].value = hv[i];
	}
	if ((mcp ? hdrs_mcp_request(&hr, in, n, ec->ec_secret) :
	    hdrs_model_request(&hr, in, n, ec->ec_secret)) == -1)
		fatal("%s: request headers", __func__);
	if ((ec->ec_body = malloc(len + 1)) == NULL)
		fatal("%s", __func__);
	memcpy(ec->ec_body, data, len);
	memset(&req, 0, sizeof(req));
	req.url = url;
	for (size_t i = 0; i < hr.hr_n; i++) {
		uh[i].name = hr.hr_hdr[i].name;
		uh[i].value = hr.hr_hdr[i].value;
	}
	req.hdrs = uh;
	req.nhdrs = hr.hr_n;
	req.body = ec->ec_body;
	req.body_len = len;
	/* upstream.ca_file is the operator's private CA for MCP too */
	req.ca_file = eg->eg_ca_file;
	req.max_body = RESPONSE_BODY_MAX;
	ec->ec_up = upstream_call(eg->eg_upstream, &req, &egress_up_cbs, ec);
	hdrs_req_free(&hr);
	if (ec->ec_up == NULL) {
		egress_end(ec, 0, 502, "cannot start the call");
		egress_call_free(ec);
	}
	return 0;
 refuse:
	log_warnx("%s: call to %s%s refused", ep->ep_name,
	    mcp ? "MCP server " : "", mcp ? (server ? server : "?") : path);
	if (ec->ec_route == NULL && (ec->ec_route = strdup("refused")) == NULL)
		fatal("%s", __func__);
	egress_end(ec, 0, 502, "refused");
	egress_call_free(ec);
	return 0;
}

static int
egress_ack(struct egress_peer *ep, struct msg *m)
{
	struct egress_call	*ec;
	uint64_t		 id, bytes;

	if (msg_get_uint(m, "call", 1, UINT64_C(1) << 53, &id) == -1 ||
	    msg_get_uint(m, "bytes", 0, UINT64_C(1) << 53, &bytes) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if ((ec = egress_call_find(ep, id)) == NULL)
		return 0;	/* ended meanwhile */
	ec->ec_unacked = bytes > ec->ec_unacked ? 0 : ec->ec_unacked - bytes;
	if (ec->ec_paused && ec->ec_unacked <= EGRESS_WINDOW / 2 &&
	    ec->ec_up != NULL) {
		ec->ec_paused = 0;
		upstream_resume(ec->ec_up);
	}
	return 0;
}

static int
egress_cancel(struct egress_peer *ep, struct msg *m)
{
	struct egress_call	*ec;
	uint64_t		 id;

	if (msg_get_uint(m, "call", 1, UINT64_C(1) << 53, &id) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if ((ec = egress_call_find(ep, id)) == NULL)
		return 0;
	log_info("%s %s: cancelled by the worker after %ld ms",
	    ep->ep_name, ec->ec_route ? ec->ec_route : "?",
	    ms_since(&ec->ec_start));
	if (ec->ec_up != NULL)
		upstream_cancel(ec->ec_up);
	egress_call_free(ec);
	return 0;
}

/*
 * The controlled fetch (PROTOCOL.md 8) for a research job or the
 * supervisor (ep NULL).  Options out of range are answered as a failed
 * fetch naming the option.
 */

static void
egress_fetch_free(struct egress_fetch *ef)
{
	if (ef->ef_peer != NULL) {
		TAILQ_REMOVE(&ef->ef_peer->ep_fetches, ef, ef_entry);
		ef->ef_peer->ep_nfetches--;
	} else
		TAILQ_REMOVE(&ef->ef_egress->eg_fetches, ef, ef_entry);
	free(ef);
}

static void
egress_fetch_send(struct egress *eg, struct egress_peer *ep,
    struct msgb *mb)
{
	if (ep != NULL)
		egress_send(ep, mb);
	else
		role_send(eg->eg_rp, mb);
}

static void
egress_fetch_refuse(struct egress *eg, struct egress_peer *ep, uint64_t id,
    const char *why)
{
	struct msgb	 mb;

	log_warnx("%s fetch refused: %s", ep ? ep->ep_name : "supervisor",
	    why);
	msgb_init(&mb, MSG_EGR_FETCHED, id);
	msg_add_bool(&mb, "ok", 0);
	msg_add_str(&mb, "error", why);
	egress_fetch_send(eg, ep, &mb);
}

/* The host log gets the host, status, size and time, never the body. */
static void
egress_fetch_done(const struct fetch_result *fr, void *arg)
{
	struct egress_fetch	*ef = arg;
	const char		*who;
	struct msgb		 mb;

	who = ef->ef_peer != NULL ? ef->ef_peer->ep_name : "supervisor";
	msgb_init(&mb, MSG_EGR_FETCHED, ef->ef_id);
	msg_add_bool(&mb, "ok", fr->fr_ok);
	if (fr->fr_ok) {
		log_info("%s fetch %s: %ld, %zu bytes, %ld ms", who,
		    fr->fr_host, fr->fr_status, fr->fr_body_len, fr->fr_ms);
		msg_add_uint(&mb, "status", fr->fr_status);
		msg_add_str(&mb, "url", fr->fr_url);
		if (fr->fr_content_type != NULL)
			msg_add_str(&mb, "content_type", fr->fr_content_type);
		if (fr->fr_location != NULL)
			msg_add_str(&mb, "location", fr->fr_location);
		if (fr->fr_body_len > 0)
			msg_add_data(&mb, fr->fr_body, fr->fr_body_len);
	} else {
		log_warnx("%s fetch %s: failed after %ld ms: %s", who,
		    fr->fr_host, fr->fr_ms, fr->fr_error);
		msg_add_str(&mb, "error", fr->fr_error);
	}
	egress_fetch_send(ef->ef_egress, ef->ef_peer, &mb);
	egress_fetch_free(ef);
}

static struct egress_fetch *
egress_fetch_find(struct egress_peer *ep, uint64_t id)
{
	struct egress_fetch	*ef;

	TAILQ_FOREACH(ef, &ep->ep_fetches, ef_entry)
		if (ef->ef_id == id)
			return ef;
	return NULL;
}

static int
egress_fetch(struct egress *eg, struct egress_peer *ep, struct msg *m)
{
	struct egress_fetch	*ef;
	struct fetch_opts	 fo;
	const char		*url, *why;
	uint64_t		 deadline, max_bytes, max_redirects;
	char			 busy[64];

	if (msg_get_str(m, "url", URL_BYTES_MAX, &url) == -1 ||
	    msg_get_uint(m, "deadline_ms", 0, EGRESS_UINT_MAX, &deadline) ==
	    -1 ||
	    msg_get_uint(m, "max_bytes", 0, EGRESS_UINT_MAX, &max_bytes) ==
	    -1 ||
	    msg_get_uint(m, "max_redirects", 0, EGRESS_UINT_MAX,
	    &max_redirects) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if (ep != NULL && egress_fetch_find(ep, m->m_id) != NULL)
		return -1;
	fo.fo_url = url;
	fo.fo_deadline_ms = deadline;
	fo.fo_max_bytes = max_bytes;
	fo.fo_max_redirects = max_redirects;
	if ((why = fetch_opts_check(&fo)) != NULL) {
		egress_fetch_refuse(eg, ep, m->m_id, why);
		return 0;
	}
	if (ep != NULL && ep->ep_nfetches >= EGRESS_PEER_FETCHES_MAX) {
		snprintf(busy, sizeof(busy), "too many fetches at once (%u)",
		    EGRESS_PEER_FETCHES_MAX);
		egress_fetch_refuse(eg, ep, m->m_id, busy);
		return 0;
	}
	if ((ef = calloc(1, sizeof(*ef))) == NULL)
		fatal("%s", __func__);
	ef->ef_egress = eg;
	ef->ef_peer = ep;
	ef->ef_id = m->m_id;
	if (ep != NULL) {
		TAILQ_INSERT_TAIL(&ep->ep_fetches, ef, ef_entry);
		ep->ep_nfetches++;
	} else
		TAILQ_INSERT_TAIL(&eg->eg_fetches, ef, ef_entry);
	/* Answers from the event loop, never from in here. */
	ef->ef_fetch = fetch_start(&eg->eg_fetch_env, &fo, egress_fetch_done,
	    ef);
	return 0;
}

/* A violation closes only that peer's edge. */
static void
egress_peer_violation(struct egress_peer *ep, struct msg *m)
{
	log_warnx("%s protocol violation: %s", ep->ep_name,
	    m->m_err[0] ? m->m_err : msg_type_name(m->m_type));
	msg_free(m);
	egress_peer_free(ep);
}

/*
 * A broker's or a research job's edge; msg_parse() takes the sender from
 * the edge, so the message table decides who may fetch (research jobs) and
 * egress_call() who may reach MCP (brokers).
 */
static void
egress_dispatch_peer(struct frame_conn *fc, struct frame *f, void *arg)
{
	struct egress_peer	*ep = arg;
	struct msg		 m;
	int			 rc = -1;

	if (msg_parse(&m, ep->ep_role, PROC_EGRESS, f) == 0) {
		switch (m.m_type) {
		case MSG_EGR_CALL:
			rc = egress_call(ep, &m);
			break;
		case MSG_EGR_ACK:
			rc = egress_ack(ep, &m);
			break;
		case MSG_EGR_CANCEL:
			rc = egress_cancel(ep, &m);
			break;
		case MSG_EGR_FETCH:
			rc = egress_fetch(ep->ep_egress, ep, &m);
			break;
		default:
			break;
		}
	}
	if (rc == -1) {
		egress_peer_violation(ep, &m);
		return;
	}
	msg_free(&m);
}

#if RTSANDBOX_TEST_SEAMS
/* An optional boolean: absent is false. */
static int
egress_get_bool_opt(struct msg *m, const char *key, int *out)
{
	*out = 0;
	if (m->m_obj == NULL ||
	    cJSON_GetObjectItemCaseSensitive(m->m_obj, key) == NULL)
		return 0;
	return msg_get_bool(m, key, out);
}

/*
 * Test builds only: the fetch's name server, loopback counted as public,
 * and the CA the fetch trusts.  A release build refuses these fields at
 * msg_end().
 */
static int
egress_config_seams(struct egress *eg, struct msg *m)
{
	struct sockaddr_storage	 ss;
	const char		*dns = NULL, *ca = NULL;
	int			 loopback, sslen = sizeof(ss);

	if (msg_get_str_opt(m, "test_dns", 64, &dns) == -1 ||
	    msg_get_str_opt(m, "test_fetch_ca_file", PATH_BYTES_MAX, &ca) ==
	    -1 ||
	    egress_get_bool_opt(m, "test_loopback_public", &loopback) == -1)
		return -1;
	if (dns != NULL && evutil_parse_sockaddr_port(dns,
	    (struct sockaddr *)&ss, &sslen) == -1)
		return -1;
	eg->eg_test_dns = xstrdup_opt(dns);
	eg->eg_test_fetch_ca = xstrdup_opt(ca);
	if (loopback) {
		log_warnx("test seam: loopback addresses count as public");
		nv_test_loopback_public(1);
	}
	return 0;
}
#endif

static int
egress_config(struct egress *eg, struct msg *m)
{
	const char	*url, *cred, *ca, *mcpcred;
	uint64_t	 uid;
	int		 allow_http;

	if (msg_get_str(m, "upstream_url", URL_BYTES_MAX, &url) == -1 ||
	    msg_get_str(m, "credential_file", PATH_BYTES_MAX, &cred) == -1 ||
	    msg_get_str_opt(m, "ca_file", PATH_BYTES_MAX, &ca) == -1 ||
	    msg_get_str_opt(m, "mcp_credential_file", PATH_BYTES_MAX,
	    &mcpcred) == -1 ||
	    msg_get_bool(m, "allow_http", &allow_http) == -1 ||
	    msg_get_uint(m, "uid", 1, UINT32_MAX - 1, &uid) == -1)
		return -1;
#if RTSANDBOX_TEST_SEAMS
	if (egress_config_seams(eg, m) == -1)
		return -1;
#endif
	if (msg_end(m) == -1)
		return -1;
	eg->eg_uid = uid;
	eg->eg_upstream_url = xstrdup_opt(url);
	eg->eg_credential_file = xstrdup_opt(cred);
	eg->eg_ca_file = xstrdup_opt(ca);
	eg->eg_mcp_credential_file = xstrdup_opt(mcpcred);
	eg->eg_allow_http = allow_http;
	eg->eg_have_config = 1;
	return 0;
}

static int
egress_config_mcp(struct egress *eg, struct msg *m)
{
	const char	*name, *url;

	if (msg_get_str(m, "name", MCP_SERVER_NAME_MAX, &name) == -1 ||
	    msg_get_str(m, "url", URL_BYTES_MAX, &url) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if (eg->eg_nmcp == MCP_SERVERS_MAX)
		return -1;
	eg->eg_mcp[eg->eg_nmcp].em_name = xstrdup_opt(name);
	eg->eg_mcp[eg->eg_nmcp].em_url = xstrdup_opt(url);
	eg->eg_nmcp++;
	return 0;
}

/* A broker's edge, or a research job's ("role": "research"). */
static int
egress_attach(struct egress *eg, struct msg *m)
{
	struct egress_peer	*ep;
	const char		*channel, *role = NULL;
	enum proc_role		 r;
	int			 fd;

	if (msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &channel) == -1 ||
	    msg_get_str_opt(m, "role", 16, &role) == -1 ||
	    msg_get_fd(m, &fd) == -1 || msg_end(m) == -1)
		return -1;
	if (role == NULL || strcmp(role, "broker") == 0)
		r = PROC_BROKER;
	else if (strcmp(role, "research") == 0)
		r = PROC_RESEARCH;
	else
		return -1;
	if ((ep = calloc(1, sizeof(*ep))) == NULL)
		fatal("%s", __func__);
	ep->ep_egress = eg;
	ep->ep_role = r;
	if (asprintf(&ep->ep_name, "%s[%s]", proc_role_name(r), channel) ==
	    -1)
		fatal("%s", __func__);
	TAILQ_INIT(&ep->ep_calls);
	TAILQ_INIT(&ep->ep_fetches);
	ep->ep_conn = frame_conn_new(eg->eg_base, fd,
	    edge_limits(r, PROC_EGRESS), edge_limits(PROC_EGRESS, r),
	    egress_dispatch_peer, egress_peer_err, ep);
	if (ep->ep_conn == NULL)
		fatalx("%s: cannot watch the %s edge", __func__, ep->ep_name);
	TAILQ_INSERT_TAIL(&eg->eg_peers, ep, ep_entry);
	log_debug("%s attached", ep->ep_name);
	return 0;
}

static int
egress_dispatch_supervisor(struct role_parent *rp, struct msg *m, void *arg)
{
	struct egress	*eg = arg;

	switch (m->m_type) {
	case MSG_CONFIG_EGRESS:
		if (role_parent_configured(rp) || eg->eg_have_config)
			return -1;
		return egress_config(eg, m);
	case MSG_CONFIG_EGRESS_MCP:
		if (role_parent_configured(rp))
			return -1;
		return egress_config_mcp(eg, m);
	case MSG_EGRESS_ATTACH:
		if (!role_parent_configured(rp))
			return -1;
		return egress_attach(eg, m);
	case MSG_EGR_FETCH:
		if (!role_parent_configured(rp))
			return -1;
		return egress_fetch(eg, NULL, m);
	default:
		return -1;
	}
}

static const char *
egress_configured(struct role_parent *rp, void *arg)
{
	struct egress	*eg = arg;

	if (!eg->eg_have_config)
		return "no configuration";
	if ((eg->eg_upstream = upstream_new(eg->eg_base)) == NULL)
		return "cannot set up the upstream client";
	/* Reads /etc/resolv.conf and /etc/hosts now, which Landlock lets
	 * egress read (sandbox_netconf_paths). */
	if ((eg->eg_resolver = fetch_resolver_new(eg->eg_base,
	    eg->eg_test_dns)) == NULL)
		return "cannot set up the resolver";
	eg->eg_fetch_env.fe_base = eg->eg_base;
	eg->eg_fetch_env.fe_resolver = eg->eg_resolver;
	eg->eg_fetch_env.fe_up = eg->eg_upstream;
	/* NULL: the system bundle, never the upstream's private CA. */
	eg->eg_fetch_env.fe_ca_file = eg->eg_test_fetch_ca;
	return NULL;
}

void
egress_main(int argc, char *argv[])
{
	struct role_args	 ra;
	struct egress		 eg;

	role_args_parse(PROC_EGRESS, argc, argv, &ra);
	proc_child_check_fds(1);
	memset(&eg, 0, sizeof(eg));
	TAILQ_INIT(&eg.eg_peers);
	TAILQ_INIT(&eg.eg_fetches);

	/* OpenSSL and the resolver load what they need before the sandbox. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		fatalx("curl_global_init failed");
	eg.eg_base = sandbox_egress(ra.ra_paths, ra.ra_npaths);
	eg.eg_rp = role_parent_open(eg.eg_base, PROC_EGRESS,
	    egress_dispatch_supervisor, egress_configured, &eg);
	event_base_dispatch(eg.eg_base);
	fatalx("event loop ended");
}
