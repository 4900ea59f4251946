/*
 * Egress: the only process that creates network sockets and reads
 * credentials.  Brokers and research jobs reach it over socketpairs that
 * the supervisor made and passed here as descriptors; research jobs and the
 * supervisor also ask it for controlled fetches (fetch.c).
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "audit.h"
#include "buildconf.h"
#include "cred.h"
#include "egress.h"
#include "egress_int.h"
#include "fetch.h"
#include "hdrs.h"
#include "journal.h"
#include "policy.h"
#include "reflect.h"
#include "upstream.h"
#include "validate.h"
#include "limits.h"
#include "log.h"
#include "proc.h"
#include "role.h"
#include "sandbox.h"
#include "violation.h"

/*
 * Calls held for one peer, and for every peer together; each call keeps
 * its body (up to the edge's data bound) until it ends, so these bound
 * egress's memory (DESIGN.md 1, invariant 7).  A legitimate broker has at
 * most 4 calls of its turn in flight, plus startup-window calls.  Each
 * peer has a share of its own that no other peer can take: 4 calls and
 * 16 MiB of bodies, a turn's calls in flight of any ordinary size.
 * Beyond it a peer draws on a pool every peer shares, up to its own cap:
 * a few peers that fill the pool leave every other one its share.
 */
#define EGRESS_PEER_CALLS_MAX	16u
#define EGRESS_PEER_BODY_MAX	(192u * MIB)
#define EGRESS_SHARE_CALLS	SCOPE_INFLIGHT_MAX
#define EGRESS_SHARE_BYTES	(16u * MIB)
#define EGRESS_CALLS_MAX	256u
#define EGRESS_BODY_BYTES_MAX	(512u * MIB)
/* The supervisor hears egress's count of calls at most this often. */
#define EGRESS_COUNTERS_MS	1000

char *
xstrdup_opt(const char *s)
{
	char	*p;

	if (s == NULL)
		return NULL;
	if ((p = strdup(s)) == NULL)
		fatal("strdup");
	return p;
}

/* Allocation that a peer's frame causes fails softly. */
static char * __attribute__((format(printf, 1, 2)))
xasprintf_opt(const char *fmt, ...)
{
	va_list	 ap;
	char	*p;
	int	 r;

	va_start(ap, fmt);
	r = vasprintf(&p, fmt, ap);
	va_end(ap);
	return r == -1 ? NULL : p;
}

static void
egress_peer_free(struct egress_peer *ep)
{
	struct egress_call	*ec;
	struct egress_fetch	*ef;

	while ((ec = TAILQ_FIRST(&ep->ep_calls)) != NULL) {
		if (ec->ec_up != NULL)
			upstream_cancel(ec->ec_up);
		audit_fail(ec->ec_audit, "the peer was dropped");
		egress_call_free(ec);
	}
	/* Nobody is left to read the answers. */
	while ((ef = TAILQ_FIRST(&ep->ep_fetches)) != NULL) {
		fetch_cancel(ef->ef_fetch);
		egress_fetch_free(ef);
	}
	TAILQ_REMOVE(&ep->ep_egress->eg_peers, ep, ep_entry);
	egress_profile_release(ep->ep_egress, ep->ep_profile);
	frame_conn_free(ep->ep_conn);
	free(ep->ep_name);
	free(ep->ep_channel);
	free(ep->ep_turn_id);
	free(ep->ep_turn_speaker);
	free(ep->ep_ended_turn_id);
	free(ep->ep_model);
	free(ep->ep_grants);
	free(ep);
}

/* A broken frame is a violation; the end of the edge or an I/O error
 * (the peer was killed) is not. */
static void
egress_peer_err(struct frame_conn *fc, enum frame_err err, void *arg)
{
	struct egress_peer	*ep = arg;

	if (err == FRAME_OUT_OF_MEMORY)
		log_warnx("%s dropped: egress has no room for its frame "
		    "(%zu bytes held for every peer, %zu at most)",
		    ep->ep_name, ep->ep_egress->eg_peer_read.fb_used,
		    ep->ep_egress->eg_peer_read.fb_max);
	else if (err != FRAME_EOF && err != FRAME_IO &&
	    err != FRAME_TRUNCATED)
		egress_violation(ep, VIOLATION_FRAME,
		    frame_err_to_string(err));
	else if (err != FRAME_EOF)
		log_warnx("%s edge: %s", ep->ep_name,
		    frame_err_to_string(err));
	egress_peer_free(ep);
}

/* Response headers passed on at most (the allow-list names a handful). */
#define EGRESS_RESP_HDRS	32
/* Egress runs this far ahead of what the broker acknowledged. */
#define EGRESS_WINDOW		(512u * 1024)
/* Body bytes per frame: a few fit in the broker's read buffer together,
 * and it never has to grow it for one. */
#define EGRESS_FRAME_DATA	(64u * 1024)
/*
 * An answer of a declared length up to this (a small call's, not a
 * stream's) keeps its head until its first body bytes: the broker reads,
 * writes and wakes once for it rather than twice, and its worker waits for
 * the whole body anyway.
 */
#define EGRESS_HEAD_WAIT_MAX	(64u * 1024)
_Static_assert((UP_DATA_MAX + EGRESS_FRAME_DATA - 1) / EGRESS_FRAME_DATA + 2 <=
    FRAME_SENDV_MAX, "the frames of one flush");

/* What n of a peer's calls, or bytes of its bodies, take of the pool. */
static size_t
egress_beyond(size_t n, size_t share)
{
	return n > share ? n - share : 0;
}

/* A call of len body bytes joins (add) or leaves the peer's. */
static void
egress_hold(struct egress_peer *ep, size_t len, int add)
{
	struct egress	*eg = ep->ep_egress;

	eg->eg_pool_calls -= egress_beyond(ep->ep_ncalls, EGRESS_SHARE_CALLS);
	eg->eg_pool_bytes -= egress_beyond(ep->ep_body_bytes,
	    EGRESS_SHARE_BYTES);
	if (add) {
		ep->ep_ncalls++;
		ep->ep_body_bytes += len;
		eg->eg_ncalls++;
		eg->eg_body_bytes += len;
	} else {
		ep->ep_ncalls--;
		ep->ep_body_bytes -= len;
		eg->eg_ncalls--;
		eg->eg_body_bytes -= len;
	}
	eg->eg_pool_calls += egress_beyond(ep->ep_ncalls, EGRESS_SHARE_CALLS);
	eg->eg_pool_bytes += egress_beyond(ep->ep_body_bytes,
	    EGRESS_SHARE_BYTES);
}

/* Whether one more call of len body bytes fits the peer's share, its
 * cap and the pool. */
static int
egress_fits(const struct egress_peer *ep, size_t len)
{
	const struct egress	*eg = ep->ep_egress;
	size_t			 calls = ep->ep_ncalls + 1;

	if (calls > EGRESS_PEER_CALLS_MAX || len > EGRESS_PEER_BODY_MAX -
	    ep->ep_body_bytes)
		return 0;
	if (egress_beyond(calls, EGRESS_SHARE_CALLS) - egress_beyond(
	    ep->ep_ncalls, EGRESS_SHARE_CALLS) > EGRESS_CALLS_MAX -
	    eg->eg_pool_calls)
		return 0;
	return egress_beyond(ep->ep_body_bytes + len, EGRESS_SHARE_BYTES) -
	    egress_beyond(ep->ep_body_bytes, EGRESS_SHARE_BYTES) <=
	    EGRESS_BODY_BYTES_MAX - eg->eg_pool_bytes;
}

void
egress_call_free(struct egress_call *ec)
{
	TAILQ_REMOVE(&ec->ec_peer->ep_calls, ec, ec_entry);
	egress_hold(ec->ec_peer, ec->ec_body_len, 0);
	if (ec->ec_head_held)
		msgb_free(&ec->ec_head);
	egress_precheck_clear(ec);
	reflect_free(ec->ec_reflect);
	/* The record is written now, with the credential to take out. */
	audit_close(ec->ec_audit, ec->ec_secret, ec->ec_secret_len);
	/* The token's bytes and its NUL: nothing else was written. */
	explicit_bzero(ec->ec_secret, ec->ec_secret_len);
	for (size_t i = 0; ec->ec_hdrs != NULL && i < ec->ec_nhdrs; i++) {
		free((char *)ec->ec_hdrs[i].name);
		free((char *)ec->ec_hdrs[i].value);
	}
	free(ec->ec_hdrs);
	free(ec->ec_url);
	free(ec->ec_body);
	free(ec->ec_route);
	free(ec);
}

/*
 * Zeroed but for the secret's buffer: 16 KiB cleared and wiped per call for
 * a token of a few dozen bytes.  cred_get() and egress_cred_is() write the
 * token and its NUL, and nothing reads past them.
 */
_Static_assert(offsetof(struct egress_call, ec_secret_len) ==
    offsetof(struct egress_call, ec_secret) + CRED_FILE_MAX,
    "egress_call_alloc() skips ec_secret alone");

static struct egress_call *
egress_call_alloc(void)
{
	struct egress_call	*ec;

	if ((ec = malloc(sizeof(*ec))) == NULL)
		return NULL;
	memset(ec, 0, offsetof(struct egress_call, ec_secret));
	ec->ec_secret[0] = '\0';
	memset(&ec->ec_secret_len, 0, sizeof(*ec) -
	    offsetof(struct egress_call, ec_secret_len));
	return ec;
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

void
egress_send(struct egress_peer *ep, struct msgb *mb)
{
	if (msg_send(ep->ep_conn, mb) == -1)
		log_warnx("%s: cannot queue an answer", ep->ep_name);
}

/*
 * What a call holds back goes out now, in one write: the head, the bytes
 * the filter released, then end (may be NULL).
 */
static void
egress_flush(struct egress_call *ec, struct msgb *end)
{
	struct msgb	 data[FRAME_SENDV_MAX], *mbs[FRAME_SENDV_MAX];
	const uint8_t	*p = ec->ec_out;
	size_t		 k;
	int		 n = 0;

	if (ec->ec_head_held) {
		mbs[n++] = &ec->ec_head;
		ec->ec_head_held = 0;
		ec->ec_head_sent = 1;
	}
	while (ec->ec_outlen > 0) {
		k = ec->ec_outlen < EGRESS_FRAME_DATA ? ec->ec_outlen :
		    EGRESS_FRAME_DATA;
		msgb_init(&data[n], MSG_EGR_DATA, 0);
		msg_add_uint(&data[n], "call", ec->ec_id);
		msg_add_data(&data[n], p, k);
		mbs[n] = &data[n];
		n++;
		p += k;
		ec->ec_unacked += k;
		ec->ec_outlen -= k;
	}
	if (end != NULL)
		mbs[n++] = end;
	if (n > 0 && msg_sendv(ec->ec_peer->ep_conn, mbs, n) == -1)
		log_warnx("%s: cannot queue an answer", ec->ec_peer->ep_name);
}

/*
 * The end of a call: its audit record (audit.h) is written when the call
 * is freed, never with a credential.  A failure before the head went out drops
 * it and what was held with it, so the worker gets an answer of the
 * broker's own (PROTOCOL.md 3.2: "Any other failure → 502"); after the
 * head, the broker cuts the body.
 */
void
egress_end(struct egress_call *ec, int ok, int status, const char *why)
{
	struct msgb	 mb;

	if (!ok)
		audit_fail(ec->ec_audit, why);
	if (!ok && ec->ec_head_held) {
		msgb_free(&ec->ec_head);
		ec->ec_head_held = 0;
		ec->ec_outlen = 0;
	}
	msgb_init(&mb, MSG_EGR_END, 0);
	msg_add_uint(&mb, "call", ec->ec_id);
	msg_add_bool(&mb, "ok", ok);
	if (!ok)
		msg_add_uint(&mb, "status", status);
	/* The worker learns this much and nothing of the upstream's detail. */
	if (!ok && ec->ec_refused)
		msg_add_str(&mb, "error", "upstream_refused");
	egress_flush(ec, &mb);
}

/* A content-length of at most EGRESS_HEAD_WAIT_MAX, given once. */
static int
egress_small_body(const struct up_hdr *hdrs, size_t n)
{
	const char	*v = NULL, *p;
	uint64_t	 len = 0;
	size_t		 i;

	for (i = 0; i < n; i++)
		if (strcasecmp(hdrs[i].name, "content-length") == 0) {
			if (v != NULL)
				return 0;
			v = hdrs[i].value;
		}
	if (v == NULL || *v == '\0')
		return 0;
	for (p = v; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || len > EGRESS_HEAD_WAIT_MAX)
			return 0;
		len = len * 10 + (uint64_t)(*p - '0');
	}
	return len > 0 && len <= EGRESS_HEAD_WAIT_MAX;
}

/* The head waits for the body bytes that came with it, so that a secret
 * among the first of them is found before the head goes out. */
static int
egress_on_head(struct up_call *up, long status, const struct up_hdr *hdrs,
    size_t n, void *arg)
{
	struct egress_call	*ec = arg;
	const char		*hn[EGRESS_RESP_HDRS], *hv[EGRESS_RESP_HDRS];
	size_t			 i, k = 0;

	ec->ec_status = status;
	audit_head(ec->ec_audit, status, hdrs, n);
	/* Anything outside 200-599 is refused; redirects are errors. */
	if (status < 200 || status > 599) {
		ec->ec_refused = 1;
		return -1;
	}
	if (status >= 300 && status < 400)
		return -1;
	for (i = 0; i < n && k < EGRESS_RESP_HDRS; i++)
		if (hdrs_response_allowed(hdrs[i].name, hdrs[i].value,
		    ec->ec_reflect, strncmp(ec->ec_route, "mcp", 3) == 0)) {
			hn[k] = hdrs[i].name;
			hv[k++] = hdrs[i].value;
		}
	msgb_init(&ec->ec_head, MSG_EGR_HEAD, 0);
	msg_add_uint(&ec->ec_head, "call", ec->ec_id);
	msg_add_uint(&ec->ec_head, "status", status);
	msg_add_strv(&ec->ec_head, "hnames", hn, k);
	msg_add_strv(&ec->ec_head, "hvalues", hv, k);
	ec->ec_head_held = 1;
	ec->ec_head_wait = egress_small_body(hdrs, n);
	return 0;
}

static int
egress_on_data(struct up_call *up, const void *buf, size_t len, void *arg)
{
	struct egress_call	*ec = arg;
	const void		*out;
	size_t			 outlen;

	/* The filter's last output dies with the next feed. */
	if (ec->ec_outlen > 0)
		egress_flush(ec, NULL);
	ec->ec_bytes += len;
	audit_data(ec->ec_audit, buf, len);
	if (reflect_feed(ec->ec_reflect, buf, len, &out, &outlen) == -1) {
		log_warnx("%s %s: the credential came back in the "
		    "answer; call cut", ec->ec_peer->ep_name, ec->ec_route);
		return -1;
	}
	ec->ec_out = out;
	ec->ec_outlen = outlen;
	/* Ahead of the broker's acks, or its pipe full: what is not read
	 * stays with TCP, not here. */
	if (ec->ec_unacked + outlen > EGRESS_WINDOW ||
	    frame_conn_pending(ec->ec_peer->ep_conn) > 0) {
		ec->ec_paused = 1;
		return UP_PAUSE;
	}
	return 0;
}

static void
egress_on_flush(struct up_call *up, void *arg)
{
	struct egress_call	*ec = arg;

	/* A small answer's head goes with its body. */
	if (ec->ec_head_held && ec->ec_head_wait && ec->ec_bytes == 0)
		return;
	egress_flush(ec, NULL);
}

static void
egress_on_end(struct up_call *up, enum up_result r, const char *detail,
    void *arg)
{
	struct egress_call	*ec = arg;
	const void		*out;
	size_t			 outlen;
	char			 why[300];

	ec->ec_up = NULL;
	if (r != UP_OK) {
		snprintf(why, sizeof(why), "%s: %s", up_result_to_string(r),
		    detail);
		egress_end(ec, 0, 502, why);
	} else if (reflect_holdback(ec->ec_reflect) == 0)
		egress_end(ec, 1, 0, NULL);
	else {
		/* What was released goes before the tail replaces it. */
		egress_flush(ec, NULL);
		if (reflect_finish(ec->ec_reflect, &out, &outlen) == -1)
			egress_end(ec, 0, 502, "credential in the answer");
		else {
			ec->ec_out = out;
			ec->ec_outlen = outlen;
			egress_end(ec, 1, 0, NULL);
		}
	}
	egress_call_free(ec);
}

static const struct up_callbacks egress_up_cbs = {
	egress_on_head, egress_on_data, egress_on_end, egress_on_flush
};

/*
 * A rule broken by a peer (DESIGN.md 1, invariant 6): logged with the
 * channel, reported to the supervisor, which counts it and stops the peer.
 * Nothing more of the peer is read meanwhile.  Egress goes on.
 */
void
egress_violation(struct egress_peer *ep, enum violation v, const char *why)
{
	struct msgb	 mb;

	log_warnx("%s violation (%s): %s", ep->ep_name, violation_name(v),
	    why);
	frame_conn_pause(ep->ep_conn, 1);
	msgb_init(&mb, MSG_EGR_VIOLATION, 0);
	msg_add_uint(&mb, "peer", ep->ep_id);
	msg_add_str(&mb, "rule", violation_name(v));
	if (msg_send(role_parent_conn(ep->ep_egress->eg_rp), &mb) == -1)
		log_warnx("%s: cannot report the violation", ep->ep_name);
}

/*
 * Something a peer sent, refused without a rule broken on its own (a call
 * for a turn that ended, an acknowledgement of a call that is over):
 * counted, and logged at most once a minute.  -1 once that took the peer
 * past its allowance: a violation under rule.
 */
static int
egress_refused(struct egress_peer *ep, enum violation rule, const char *what)
{
	char	 why[200];

	if (refusal_note(&ep->ep_refusals, proc_now_ms(), ep->ep_name, what,
	    why, sizeof(why)) == 1) {
		egress_violation(ep, rule, why);
		return -1;
	}
	return 0;
}

/* The supervisor's count of calls made (daemon.stats), once a second at
 * most while it grows. */
static void
egress_counters(evutil_socket_t fd, short ev, void *arg)
{
	struct egress	*eg = arg;
	struct msgb	 mb;

	if (eg->eg_upstream_told == eg->eg_upstream_calls)
		return;
	msgb_init(&mb, MSG_EGR_COUNTERS, 0);
	msg_add_uint(&mb, "upstream_calls", eg->eg_upstream_calls);
	if (msg_send(role_parent_conn(eg->eg_rp), &mb) == 0)
		eg->eg_upstream_told = eg->eg_upstream_calls;
}

static void
egress_count_call(struct egress *eg)
{
	struct timeval	 tv = { EGRESS_COUNTERS_MS / 1000,
	    (EGRESS_COUNTERS_MS % 1000) * 1000 };

	eg->eg_upstream_calls++;
	if (eg->eg_counters_ev != NULL &&
	    !evtimer_pending(eg->eg_counters_ev, NULL) &&
	    evtimer_add(eg->eg_counters_ev, &tv) == -1)
		log_warnx("%s: evtimer_add failed", __func__);
}

/* The answer to a call that never reached the upstream. */
static void
egress_refuse_call(struct egress_peer *ep, uint64_t id, int status,
    const char *error)
{
	struct msgb	 mb;

	msgb_init(&mb, MSG_EGR_END, 0);
	msg_add_uint(&mb, "call", id);
	msg_add_bool(&mb, "ok", 0);
	msg_add_uint(&mb, "status", status);
	msg_add_str(&mb, "error", error);
	egress_send(ep, &mb);
}

/*
 * The credential is known: the request goes to the upstream with it, its
 * answer through a reflection filter of it.
 */
static void
egress_call_go(struct egress_call *ec, const char *url, const struct hdr *in,
    size_t n)
{
	struct egress		*eg = ec->ec_peer->ep_egress;
	struct hdrs_req		 hr;
	struct up_hdr		 uh[HDRS_REQ_MAX];
	struct up_request	 req;

	/* A precheck call sends none of the broker's headers. */
	if (ec->ec_precheck)
		n = 0;
	if ((ec->ec_reflect = reflect_new(ec->ec_secret,
	    ec->ec_secret_len)) == NULL ||
	    (ec->ec_mcp ? hdrs_mcp_request(&hr, in, n, ec->ec_secret) :
	    hdrs_model_request(&hr, in, n, ec->ec_secret)) == -1) {
		/* an unusable token, or memory */
		log_warn("%s %s: request headers", ec->ec_peer->ep_name,
		    ec->ec_route);
		egress_end(ec, 0, 502, "cannot build the request");
		egress_call_free(ec);
		return;
	}
	memset(&req, 0, sizeof(req));
	req.url = url;
	for (size_t i = 0; i < hr.hr_n; i++) {
		uh[i].name = hr.hr_hdr[i].name;
		uh[i].value = hr.hr_hdr[i].value;
	}
	req.hdrs = uh;
	req.nhdrs = hr.hr_n;
	req.body = ec->ec_body;
	req.body_len = ec->ec_body_len;
	/* upstream.ca_file is the operator's private CA for MCP too */
	req.ca_file = eg->eg_ca_file;
	req.max_body = ec->ec_precheck ? PRECHECK_RESPONSE_MAX :
	    RESPONSE_BODY_MAX;
	ec->ec_up = upstream_call(eg->eg_upstream, &req, ec->ec_precheck ?
	    &egress_precheck_cbs : &egress_up_cbs, ec);
	hdrs_req_free(&hr);
	if (ec->ec_up == NULL) {
		egress_end(ec, 0, 502, "cannot start the call");
		egress_call_free(ec);
		return;
	}
	egress_count_call(eg);
}

/*
 * The credential comes from the client, for this one call (configuration
 * credential_hook): the supervisor asks the client's credential.get hook
 * with the peer's channel, profile and speaker and answers with egr_cred_is
 * (egress_cred_is()).  The request waits as it will go, without the token.
 */
static void
egress_ask(struct egress_call *ec, const char *url, const struct hdr *in,
    size_t n, const char *server, const char *turn_id)
{
	struct egress_peer	*ep = ec->ec_peer;
	struct egress		*eg = ep->ep_egress;
	struct msgb		 mb;
	size_t			 i;

	if ((ec->ec_url = strdup(url)) == NULL ||
	    (ec->ec_hdrs = calloc(n + 1, sizeof(*ec->ec_hdrs))) == NULL)
		goto fail;
	for (i = 0; i < n; i++) {
		ec->ec_nhdrs = i + 1;
		if ((ec->ec_hdrs[i].name = strdup(in[i].name)) == NULL ||
		    (ec->ec_hdrs[i].value = strdup(in[i].value)) == NULL)
			goto fail;
	}
	ec->ec_nhdrs = n;
	ec->ec_ask = ++eg->eg_ask_id;
	msgb_init(&mb, MSG_EGR_CRED, ec->ec_ask);
	msg_add_uint(&mb, "peer", ep->ep_id);
	msg_add_str(&mb, "kind", ec->ec_mcp ? "mcp" : "model");
	if (server != NULL)
		msg_add_str(&mb, "server", server);
	/* the turn it was admitted for: the hook names that turn's speaker
	 * or no one */
	if (turn_id != NULL)
		msg_add_str(&mb, "turn_id", turn_id);
	if (msg_send(role_parent_conn(eg->eg_rp), &mb) == 0)
		return;
 fail:
	log_warn("%s %s: asking for the credential", ep->ep_name,
	    ec->ec_route);
	egress_end(ec, 0, 502, "no credential");
	egress_call_free(ec);
}

/* The supervisor's answer to egress_ask(): the token for that one call. */
static int
egress_cred_is(struct egress *eg, struct msg *m)
{
	struct egress_peer	*ep;
	struct egress_call	*ec = NULL;
	const char		*token = NULL;
	size_t			 len;
	int			 ok;

	if (msg_get_bool(m, "ok", &ok) == -1 || (ok && msg_get_str(m,
	    "token", CRED_FILE_MAX - 1, &token) == -1) || msg_end(m) == -1)
		return -1;
	TAILQ_FOREACH(ep, &eg->eg_peers, ep_entry) {
		TAILQ_FOREACH(ec, &ep->ep_calls, ec_entry)
			if (ec->ec_ask == m->m_id)
				break;
		if (ec != NULL)
			break;
	}
	if (ec == NULL)
		return 0;	/* cancelled meanwhile */
	ec->ec_ask = 0;
	len = token != NULL ? strlen(token) : 0;
	if (!ok || !cred_token_valid(token, len)) {
		log_warnx("%s %s: the client gave no usable credential",
		    ec->ec_peer->ep_name, ec->ec_route);
		egress_end(ec, 0, 502, "no credential");
		egress_call_free(ec);
		return 0;
	}
	memcpy(ec->ec_secret, token, len);
	ec->ec_secret[len] = '\0';	/* len < CRED_FILE_MAX, as read */
	ec->ec_secret_len = len;
	explicit_bzero((char *)token, len);
	egress_call_go(ec, ec->ec_url, ec->ec_hdrs, ec->ec_nhdrs);
	return 0;
}

/*
 * An admitted call's audit record: the peer's channel, the bound turn and
 * its speaker (none in the startup window or for a research job), the
 * route, and the model the policy held it to.
 */
static struct audit *
egress_audit_new(const struct egress_peer *ep, const struct egress_admit *ea,
    const char *path, const char *query, const char *turn_id, size_t len)
{
	char	 route[64 + 2 * MCP_SERVER_NAME_MAX + 64];
	size_t	 n;
	int	 bound = ep->ep_role == PROC_BROKER && ea->ea_calls_left != NULL;

	if (ea->ea_mcp)
		(void)snprintf(route, sizeof(route), "mcp %s %s%s%s",
		    ea->ea_server->em_name, ea->ea_call.pc_method != NULL ?
		    ea->ea_call.pc_method : "?", ea->ea_call.pc_tool != NULL ?
		    " " : "", ea->ea_call.pc_tool != NULL ?
		    ea->ea_call.pc_tool : "");
	else {
		/* Every model call: joined, not printed. */
		n = str_append(route, sizeof(route), 0, "model ", 6);
		n = str_append(route, sizeof(route), n, path, strlen(path));
		if (query != NULL) {
			n = str_append(route, sizeof(route), n, "?", 1);
			(void)str_append(route, sizeof(route), n, query,
			    strlen(query));
		}
	}
	return audit_new(ep->ep_channel != NULL ? ep->ep_channel : "?",
	    bound ? turn_id : NULL, bound ? ep->ep_turn_speaker : NULL, route,
	    ea->ea_mcp ? NULL : ea->ea_model, len);
}

/* base, path and "?" query in url, as snprintf() would put them: the
 * length they take, which is bufsz or more when they do not fit. */
static int
egress_url(char *url, size_t bufsz, const char *base, const char *path,
    const char *query)
{
	size_t	 bl = strlen(base), pl = strlen(path);
	size_t	 ql = query != NULL ? strlen(query) + 1 : 0, n;

	if (bl + pl + ql >= bufsz)
		return (int)bufsz;
	n = str_append(url, bufsz, 0, base, bl);
	n = str_append(url, bufsz, n, path, pl);
	if (query != NULL) {
		n = str_append(url, bufsz, n, "?", 1);
		n = str_append(url, bufsz, n, query, ql - 1);
	}
	return (int)n;
}

/*
 * A call from a broker or research job, admitted by the peer's policy; the
 * credential is read now, at admission, and goes with this call whatever
 * binds later.  Nothing a peer sends ends egress: a frame that breaks the
 * message table closes that peer's edge (the caller), a call that breaks
 * the policy is refused and reported, and a failure before any connection
 * is a 502.
 */
static int
egress_call(struct egress_peer *ep, struct msg *m)
{
	struct egress		*eg = ep->ep_egress;
	struct egress_call	*ec;
	struct egress_admit	 ea;
	const char		*kind, *path, *query = NULL, *server = NULL;
	const char		*turn_id = NULL;
	const char		**hn, **hv, *credfile = NULL, *url_base;
	struct cred_cache	*cache = NULL;
	const uint8_t		*data;
	size_t			 n, nv, len;
	uint64_t		 id;
	struct hdr		 in[8];
	char			 url[URL_BYTES_MAX + 64], err[256], why[300];
	enum violation		 v;
	int			 ended, rc;

	if (msg_get_uint(m, "call", 1, UINT64_C(1) << 53, &id) == -1 ||
	    msg_get_str(m, "kind", 8, &kind) == -1 ||
	    msg_get_str(m, "path", 64, &path) == -1 ||
	    msg_get_str_opt(m, "query", 16, &query) == -1 ||
	    msg_get_str_opt(m, "server", MCP_SERVER_NAME_MAX, &server) == -1 ||
	    msg_get_str_opt(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
	    &turn_id) == -1 ||
	    msg_get_strv(m, "hnames", 8, 64, &hn, &n) == -1 ||
	    msg_get_strv(m, "hvalues", 8, HEADER_VALUE_MAX * 4, &hv, &nv) ==
	    -1 ||
	    msg_get_data(m, &data, &len) == -1 || msg_end(m) == -1 || n != nv)
		return -1;
	/* Ids are the peer's to choose, once each while the call lives. */
	if (egress_call_find(ep, id) != NULL)
		return -1;

	v = egress_admit(ep, kind, path, query, server, turn_id,
	    (const char *)data, len, &ea, &ended, why, sizeof(why));
	if (v == VIOLATION_NONE && ep->ep_precheck) {
		if (ea.ea_body == NULL) {
			log_warn("%s: call refused", ep->ep_name);
			egress_refuse_call(ep, id, 503, "busy");
			return 0;
		}
		/* What goes is egress's body, with none of the broker's
		 * headers. */
		data = (const uint8_t *)ea.ea_body;
		len = ea.ea_body_len;
		n = 0;
	}
	if (v != VIOLATION_NONE) {
		egress_violation(ep, v, why);
		egress_refuse_call(ep, id, 403, "refused");
		return 0;
	}
	if (ended) {
		if (egress_refused(ep, VIOLATION_NO_TURN, "a call for a turn "
		    "that has ended") == 0)
			egress_refuse_call(ep, id, 410, "turn_ended");
		return 0;
	}
	/* Resources, not rules: a legitimate peer may meet them under load. */
	if (!egress_fits(ep, len)) {
		log_warnx("%s: call refused: egress holds %zu calls and %zu "
		    "body bytes, %zu and %zu of them this peer's", ep->ep_name,
		    eg->eg_ncalls, eg->eg_body_bytes, ep->ep_ncalls,
		    ep->ep_body_bytes);
		free(ea.ea_body);
		egress_refuse_call(ep, id, 503, "busy");
		return 0;
	}
	if (ea.ea_calls_left != NULL)
		(*ea.ea_calls_left)--;
	if ((ec = egress_call_alloc()) == NULL ||
	    (ec->ec_body = ea.ea_body != NULL ? ea.ea_body :
	    malloc(len + 1)) == NULL ||
	    (ec->ec_route = ea.ea_mcp ? xasprintf_opt("mcp/%s",
	    ea.ea_server->em_name) : strdup(path + 1)) == NULL) {
		log_warn("%s: call refused", ep->ep_name);
		if (ec != NULL) {
			free(ec->ec_body);
			free(ec);
		} else
			free(ea.ea_body);
		egress_refuse_call(ep, id, 503, "busy");
		return 0;
	}
	if (ec->ec_body != ea.ea_body)
		memcpy(ec->ec_body, data, len);
	ec->ec_body_len = len;
	ec->ec_precheck = ep->ep_precheck;
	ec->ec_audit = egress_audit_new(ep, &ea, path, query, turn_id, len);
	ec->ec_peer = ep;
	ec->ec_id = id;
	ec->ec_scope = ea.ea_scope;
	clock_gettime(CLOCK_MONOTONIC, &ec->ec_start);
	TAILQ_INSERT_TAIL(&ep->ep_calls, ec, ec_entry);
	egress_hold(ep, len, 1);

	if (ea.ea_mcp) {
		if (eg->eg_mcp_credential_file == NULL &&
		    !eg->eg_mcp_cred_hook) {
			egress_end(ec, 0, 502, "no MCP credential configured");
			egress_call_free(ec);
			return 0;
		}
		url_base = ea.ea_server->em_url;
		credfile = eg->eg_mcp_credential_file;
		cache = &eg->eg_mcp_cred;
		rc = snprintf(url, sizeof(url), "%s", url_base);
	} else {
		if (!eg->eg_cred_hook && egress_cred_file(ec, &credfile,
		    &cache) == -1)
			return 0;
		rc = egress_url(url, sizeof(url), eg->eg_upstream_url, path,
		    query);
	}
	if (rc < 0 || (size_t)rc >= sizeof(url)) {
		egress_end(ec, 0, 502, "URL too long");
		egress_call_free(ec);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		in[i].name = hn[i];
		in[i].value = hv[i];
	}
	ec->ec_mcp = ea.ea_mcp;
	if (ea.ea_mcp ? eg->eg_mcp_cred_hook : eg->eg_cred_hook) {
		egress_ask(ec, url, in, n, server, turn_id);
		return 0;
	}
	/* Current at this call, read again only when it changed (cred.h). */
	if (cred_get(cache, AT_FDCWD, credfile, eg->eg_uid, ec->ec_secret,
	    sizeof(ec->ec_secret), &ec->ec_secret_len, err, sizeof(err)) !=
	    CRED_OK) {
		log_warnx("%s %s: credential %s: %s", ep->ep_name,
		    ec->ec_route, credfile, err);
		egress_end(ec, 0, 502, "no credential");
		egress_call_free(ec);
		return 0;
	}
	egress_call_go(ec, url, in, n);
	return 0;
}

static void
egress_call_resume(struct egress_call *ec)
{
	if (ec->ec_paused && ec->ec_unacked <= EGRESS_WINDOW / 2 &&
	    frame_conn_pending(ec->ec_peer->ep_conn) == 0 &&
	    ec->ec_up != NULL) {
		ec->ec_paused = 0;
		upstream_resume(ec->ec_up);
	}
}

/* The pipe to the peer has room again. */
static void
egress_peer_drained(struct frame_conn *fc, void *arg)
{
	struct egress_peer	*ep = arg;
	struct egress_call	*ec;

	TAILQ_FOREACH(ec, &ep->ep_calls, ec_entry)
		egress_call_resume(ec);
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
	if ((ec = egress_call_find(ep, id)) == NULL) {
		/* ended meanwhile, or never was */
		(void)egress_refused(ep, VIOLATION_FRAME, "an "
		    "acknowledgement of no call");
		return 0;
	}
	ec->ec_unacked = bytes > ec->ec_unacked ? 0 : ec->ec_unacked - bytes;
	egress_call_resume(ec);
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
	if ((ec = egress_call_find(ep, id)) == NULL) {
		(void)egress_refused(ep, VIOLATION_FRAME, "a cancel of no "
		    "call");
		return 0;
	}
	audit_fail(ec->ec_audit, "cancelled by the worker");
	if (ec->ec_up != NULL)
		upstream_cancel(ec->ec_up);
	egress_call_free(ec);
	return 0;
}

/* A frame outside the message table closes only that peer's edge. */
static void
egress_peer_violation(struct egress_peer *ep, struct msg *m)
{
	egress_violation(ep, VIOLATION_FRAME, m->m_err[0] ? m->m_err :
	    msg_type_name(m->m_type));
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

static struct egress_peer *
egress_peer_find(struct egress *eg, uint64_t id)
{
	struct egress_peer	*ep;

	TAILQ_FOREACH(ep, &eg->eg_peers, ep_entry)
		if (ep->ep_id == id)
			return ep;
	return NULL;
}

/* A peer that reads nothing of what egress sends it. */
static void
egress_peer_stalled(struct frame_conn *fc, void *arg)
{
	struct egress_peer	*ep = arg;
	char			 why[120];

	snprintf(why, sizeof(why), "read nothing of %zu bytes sent to it for "
	    "%d ms", frame_conn_pending(fc), PEER_STALL_MS);
	egress_violation(ep, VIOLATION_STALL, why);
}

/*
 * The kernel's buffer of a peer's pipe, as large as the window the peer
 * acks, where net.core.wmem_max allows: a window in flight then waits in
 * the pipe, not in egress's heap, and never stops the upstream read while
 * the peer keeps up.  Elsewhere egress pauses the read (egress_on_data).
 */
static void
egress_pipe_size(int fd)
{
	int	 size = EGRESS_WINDOW;

	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size)) == -1)
		log_warn("%s: SO_SNDBUF", __func__);
}

/*
 * A broker's edge with its profile, or a research job's ("role":
 * "research") with the research model, its thinking level and its budget.
 */
static int
egress_attach(struct egress *eg, struct msg *m)
{
	struct egress_peer	*ep;
	struct egress_profile	*epr = NULL;
	const char		*channel, *role, *profile = NULL;
	const char		*model = NULL, *thinking = NULL;
	const char		**grant = NULL;
	enum policy_level	 level = POLICY_LEVEL_NONE;
	enum proc_role		 r;
	uint64_t		 id, calls = 0;
	size_t			 ngrant = 0;
	int			 fd, precheck = 0;

	if (msg_get_uint(m, "peer", 1, UINT64_C(1) << 53, &id) == -1 ||
	    msg_get_str(m, "channel", CHANNEL_KEY_BYTES_MAX, &channel) == -1 ||
	    msg_get_str(m, "role", 16, &role) == -1)
		return -1;
	if (strcmp(role, "broker") == 0) {
		r = PROC_BROKER;
		if (msg_get_str(m, "profile", PROFILE_NAME_MAX, &profile) ==
		    -1 || (epr = egress_profile_find(eg, profile)) == NULL)
			return -1;
	} else if (strcmp(role, "precheck") == 0) {
		/* the run's broker is the broker's binary */
		r = PROC_BROKER;
		precheck = 1;
		if (msg_get_str(m, "profile", PROFILE_NAME_MAX, &profile) ==
		    -1 || (epr = egress_profile_find(eg, profile)) == NULL ||
		    msg_get_strv(m, "grant", PRECHECK_GRANTS_MAX,
		    PRECHECK_GRANT_BYTES_MAX, &grant, &ngrant) == -1 ||
		    msg_get_uint(m, "max_calls", PRECHECK_CALLS_MIN,
		    PRECHECK_CALLS_MAX, &calls) == -1)
			return -1;
	} else if (strcmp(role, "research") == 0) {
		r = PROC_RESEARCH;
		if (msg_get_str(m, "model", MODEL_NAME_BYTES_MAX, &model) ==
		    -1 || msg_get_str_opt(m, "thinking", 8, &thinking) == -1 ||
		    msg_get_uint(m, "max_calls", 1, TURN_CALLS_MAX, &calls) ==
		    -1 || (thinking != NULL &&
		    policy_level_parse(thinking, &level) == -1))
			return -1;
	} else
		return -1;
	if (msg_get_fd(m, &fd) == -1 || msg_end(m) == -1)
		return -1;
	if (egress_peer_find(eg, id) != NULL) {
		close(fd);
		return -1;
	}
	/* Short of memory, the peer goes without an edge (it stops on the
	 * closed pipe); egress goes on. */
	if ((ep = calloc(1, sizeof(*ep))) == NULL ||
	    asprintf(&ep->ep_name, "%s[%s]", precheck ? "precheck" :
	    proc_role_name(r), channel) == -1) {
		log_warn("%s: peer %llu", __func__, (unsigned long long)id);
		free(ep);
		close(fd);
		return 0;
	}
	ep->ep_channel = xstrdup_opt(channel);
	ep->ep_egress = eg;
	ep->ep_role = r;
	ep->ep_id = id;
	ep->ep_profile = epr;
	/* A grant beyond the profile is the supervisor's bug, as any other
	 * attach that breaks the message's rules. */
	if (precheck && egress_precheck_grants(ep, grant, ngrant) == -1) {
		int	 bad = errno == EINVAL;

		log_warn("%s: the grant of %s", __func__, ep->ep_name);
		free(ep->ep_name);
		free(ep->ep_channel);
		free(ep);
		close(fd);
		return bad ? -1 : 0;
	}
	ep->ep_precheck = precheck;
	if (epr != NULL)
		epr->epr_refs++;
	ep->ep_max_output_tokens = eg->eg_max_output_tokens;
	ep->ep_model = xstrdup_opt(model);
	ep->ep_level = level;
	ep->ep_calls_left = calls;
	ep->ep_window_tokens = EGRESS_WINDOW_BURST;
	ep->ep_window_at = proc_now_ms();
	TAILQ_INIT(&ep->ep_calls);
	TAILQ_INIT(&ep->ep_fetches);
	egress_pipe_size(fd);
	ep->ep_conn = frame_conn_new(eg->eg_base, fd,
	    edge_limits(r, PROC_EGRESS), edge_limits(PROC_EGRESS, r),
	    egress_dispatch_peer, egress_peer_err, ep);
	if (ep->ep_conn == NULL) {
		log_warnx("%s: cannot watch the %s edge", __func__,
		    ep->ep_name);
		egress_profile_release(eg, epr);
		free(ep->ep_grants);
		free(ep->ep_model);
		free(ep->ep_channel);
		free(ep->ep_name);
		free(ep);
		return 0;
	}
	/* Called once all that was queued is written. */
	frame_conn_set_drain_cb(ep->ep_conn, egress_peer_drained, 1);
	/* What a peer can make egress hold is bounded (DESIGN.md 1,
	 * invariant 7). */
	frame_conn_set_budget(ep->ep_conn, &eg->eg_peer_read);
	frame_conn_set_outq_cap(ep->ep_conn, PEER_QUEUE_MAX, PEER_STALL_MS,
	    egress_peer_stalled);
	TAILQ_INSERT_TAIL(&eg->eg_peers, ep, ep_entry);
	log_debug("%s attached (peer %llu)", ep->ep_name,
	    (unsigned long long)id);
	return 0;
}

/*
 * A stopped broker or research job (DESIGN.md 1, invariant 7): its calls
 * in flight are cancelled and its edge closed, so that nothing it sends
 * goes out any more, whether or not the process has ended yet.  A peer
 * that is gone already is no news.
 */
static int
egress_drop(struct egress *eg, struct msg *m)
{
	struct egress_peer	*ep;
	uint64_t		 id;

	if (msg_get_uint(m, "peer", 1, UINT64_C(1) << 53, &id) == -1 ||
	    msg_end(m) == -1)
		return -1;
	if ((ep = egress_peer_find(eg, id)) == NULL)
		return 0;
	log_info("%s dropped: stopped by the supervisor (%zu calls in "
	    "flight cancelled)", ep->ep_name, ep->ep_ncalls);
	egress_peer_free(ep);
	return 0;
}

/*
 * A turn bound to a broker's channel (DESIGN.md 6): its calls are admitted
 * from now on, up to its budget and its deadline.  Answered, so that the
 * supervisor hands the turn to the broker only once egress knows it.  A
 * peer that is gone is an error answer, not a violation: a broker can die
 * between the supervisor's bind and this.
 */
static int
egress_bind(struct egress *eg, struct msg *m)
{
	struct egress_peer	*ep;
	const char		*turn_id, *thinking, *speaker = NULL;
	enum policy_level	 level;
	uint64_t		 id, calls, deadline_ms;
	struct msgb		 mb;

	if (msg_get_uint(m, "peer", 1, UINT64_C(1) << 53, &id) == -1 ||
	    msg_get_str(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
	    &turn_id) == -1 ||
	    msg_get_str(m, "thinking", 8, &thinking) == -1 ||
	    msg_get_uint(m, "max_calls", MAX_CALLS_MIN, MAX_CALLS_MAX,
	    &calls) == -1 ||
	    msg_get_uint(m, "deadline_ms", 1, TIMEOUT_MS_MAX, &deadline_ms) ==
	    -1 || msg_get_str_opt(m, "speaker", UTF8_BYTES_MAX(AUTHOR_FIELD_MAX),
	    &speaker) == -1 || msg_end(m) == -1 ||
	    policy_level_parse(thinking, &level) == -1)
		return -1;
	if ((ep = egress_peer_find(eg, id)) == NULL ||
	    ep->ep_role != PROC_BROKER || ep->ep_precheck) {
		role_error(eg->eg_rp, m->m_id, "no broker edge %llu",
		    (unsigned long long)id);
		return 0;
	}
	free(ep->ep_turn_id);
	ep->ep_turn_id = xstrdup_opt(turn_id);
	free(ep->ep_turn_speaker);
	ep->ep_turn_speaker = xstrdup_opt(speaker);
	ep->ep_turn_level = level;
	ep->ep_turn_calls_left = calls;
	ep->ep_turn_deadline = proc_now_ms() + deadline_ms;
	ep->ep_turn_gen++;
	log_debug("%s: turn %s bound (%s, %llu calls)", ep->ep_name, turn_id,
	    thinking, (unsigned long long)calls);
	msgb_init(&mb, MSG_EGR_BOUND, m->m_id);
	role_send(eg->eg_rp, &mb);
	return 0;
}

static int
egress_unbind(struct egress *eg, struct msg *m)
{
	struct egress_peer	*ep;
	const char		*turn_id;
	uint64_t		 id;

	if (msg_get_uint(m, "peer", 1, UINT64_C(1) << 53, &id) == -1 ||
	    msg_get_str(m, "turn_id", UTF8_BYTES_MAX(SAFE_NAME_MAX),
	    &turn_id) == -1 || msg_end(m) == -1)
		return -1;
	if ((ep = egress_peer_find(eg, id)) == NULL || ep->ep_turn_id == NULL ||
	    strcmp(ep->ep_turn_id, turn_id) != 0)
		return 0;
	free(ep->ep_ended_turn_id);
	ep->ep_ended_turn_id = ep->ep_turn_id;
	ep->ep_turn_id = NULL;
	log_debug("%s: turn %s unbound", ep->ep_name, turn_id);
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
		if (role_parent_configured(rp) && !eg->eg_reloading)
			return -1;
		return egress_config_mcp(eg, m);
	case MSG_CONFIG_EGRESS_PROFILE:
		if (role_parent_configured(rp) && !eg->eg_reloading)
			return -1;
		return egress_config_profile(eg, m);
	case MSG_CONFIG_EGRESS_CRED:
		if (!eg->eg_have_config ||
		    (role_parent_configured(rp) && !eg->eg_reloading))
			return -1;
		return egress_config_cred(eg, m);
	case MSG_EGR_RELOAD:
		if (!role_parent_configured(rp) || eg->eg_reloading)
			return -1;
		return egress_reload(eg, m);
	case MSG_EGR_RELOADED:
		if (!eg->eg_reloading)
			return -1;
		return egress_reloaded(eg, m);
	case MSG_EGR_BIND:
		if (!role_parent_configured(rp))
			return -1;
		return egress_bind(eg, m);
	case MSG_EGR_UNBIND:
		if (!role_parent_configured(rp))
			return -1;
		return egress_unbind(eg, m);
	case MSG_EGRESS_ATTACH:
		if (!role_parent_configured(rp))
			return -1;
		return egress_attach(eg, m);
	case MSG_EGR_DROP:
		if (!role_parent_configured(rp))
			return -1;
		return egress_drop(eg, m);
	case MSG_EGR_CRED_IS:
		if (!role_parent_configured(rp))
			return -1;
		return egress_cred_is(eg, m);
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
	if ((eg->eg_counters_ev = evtimer_new(eg->eg_base, egress_counters,
	    eg)) == NULL)
		return "cannot set up a timer";
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
	/* What only start-up ran (OpenSSL's set-up above all) is given
	 * back; upstream.c does the same after a TLS handshake. */
	(void)proc_drop_text();
	return NULL;
}

void
egress_main(int argc, char *argv[])
{
	struct role_args	 ra;
	struct egress		 eg;

	role_args_parse(PROC_EGRESS, argc, argv, &ra);
	/* The journal's socket, connected by the supervisor (journal.h). */
	proc_child_check_fds(ra.ra_journal ? 2 : 1);
	if (ra.ra_journal)
		journal_set_fd(FD_JOURNAL);
	memset(&eg, 0, sizeof(eg));
	eg.eg_peer_read.fb_max = EGRESS_PEER_READ_MAX;
	TAILQ_INIT(&eg.eg_peers);
	TAILQ_INIT(&eg.eg_fetches);
	TAILQ_INIT(&eg.eg_profiles);
	TAILQ_INIT(&eg.eg_retired);

	/* OpenSSL loads what it needs before the sandbox. */
	upstream_init();
	eg.eg_base = sandbox_egress(ra.ra_paths, ra.ra_npaths);
	eg.eg_rp = role_parent_open(eg.eg_base, PROC_EGRESS,
	    egress_dispatch_supervisor, egress_configured, &eg);
	event_base_dispatch(eg.eg_base);
	fatalx("event loop ended");
}
