/*
 * Outbound calls: libcurl's multi socket API on the libevent loop.
 *
 * libcurl refuses curl_multi_add_handle() and curl_multi_remove_handle()
 * from inside its own callbacks, and curl_easy_pause(CURLPAUSE_CONT) hands
 * held bytes to the write callback before it returns.  So a start, cancel
 * or resume asked for while libcurl is on the stack (up_depth > 0) is queued
 * on up_work, and up_settle() does it once libcurl has returned; up_settle()
 * runs only from this file's event callbacks, never below a caller's frame.
 *
 * Pausing: on_data has consumed its bytes whatever it answers, but the write
 * callback answers UP_PAUSE with CURL_WRITEFUNC_PAUSE, for which libcurl keeps
 * the chunk and hands it over again on CURLPAUSE_CONT.  uc_skip counts those
 * bytes the caller already has.  While paused libcurl does not read the
 * socket, so TCP pushes back on the upstream.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "log.h"
#include "upstream.h"

/* libcurl reads up to this much per recv; on_data still gets at most
 * CURL_MAX_WRITE_SIZE (16 KiB) at a time. */
#define UP_RECV_BUFFER		65536L
#define UP_KEEPALIVE_IDLE_S	60L
#define UP_KEEPALIVE_INTVL_S	30L
#define UP_HBUF_INITIAL		1024

struct up_sock {
	TAILQ_ENTRY(up_sock)	 us_entry;
	struct event		*us_ev;
	short			 us_events;
};

/* A header line held as "name\0value\0" in uc_hbuf. */
struct up_hdr_off {
	size_t			 ho_name;
	size_t			 ho_value;
};

struct up_call {
	TAILQ_ENTRY(up_call)	 uc_entry;
	TAILQ_ENTRY(up_call)	 uc_work_entry;
	struct upstream		*uc_up;
	CURL			*uc_easy;
	struct curl_slist	*uc_req_hdrs;
	struct up_callbacks	 uc_cb;
	void			*uc_arg;
	size_t			 uc_max_body;
	size_t			 uc_received;
	size_t			 uc_skip;	/* held bytes on_data has had */
	long			 uc_status;
	char			*uc_hbuf;
	size_t			 uc_hlen;
	size_t			 uc_hcap;
	struct up_hdr_off	 uc_hoff[UP_RESP_HDRS_MAX];
	size_t			 uc_nhdrs;
	enum up_result		 uc_fail;	/* why we stopped libcurl */
	const char		*uc_fail_detail;
	int			 uc_added;	/* in the multi handle */
	int			 uc_queued;	/* on up_work */
	int			 uc_in_block;	/* status line seen */
	int			 uc_head_done;
	int			 uc_in_data;
	int			 uc_paused;
	int			 uc_resume;
	int			 uc_cancelled;
	int			 uc_ending;	/* on_end is running */
	int			 uc_os_errno;	/* for on_end */
	struct sockaddr_storage	 uc_pin;	/* connect_addr, if any */
	socklen_t		 uc_pin_len;
	struct curl_slist	*uc_connect_to;
	const uint8_t		*uc_body;	/* a POST's body, not copied */
	size_t			 uc_body_len;
	size_t			 uc_body_off;
	int			 uc_body_read;	/* libcurl has taken some */
	char			 uc_errbuf[CURL_ERROR_SIZE];
};

struct upstream {
	struct event_base	*up_base;
	CURLM			*up_multi;
	struct event		*up_timer;
	struct event		*up_work_ev;
	TAILQ_HEAD(, up_call)	 up_calls;
	TAILQ_HEAD(, up_call)	 up_work;
	TAILQ_HEAD(, up_sock)	 up_socks;
	int			 up_depth;	/* libcurl calls on the stack */
	int			 up_settling;
};

/* Headers that frame the message or the connection: libcurl's business. */
static const char *const up_refused_hdrs[] = {
	"host", "content-length", "transfer-encoding", "connection",
	"expect", "te", "upgrade",
};

static void	up_settle(struct upstream *);
static int	up_slist_add(struct curl_slist **, const char *);

const char *
up_result_to_string(enum up_result r)
{
	switch (r) {
	case UP_OK:
		return "ok";
	case UP_CONNECT_FAILED:
		return "connect failed";
	case UP_TLS_FAILED:
		return "TLS failed";
	case UP_TIMEOUT:
		return "timeout";
	case UP_ABORTED:
		return "aborted";
	case UP_PROTOCOL:
		return "protocol error";
	case UP_TOO_LARGE:
		return "response too large";
	case UP_OTHER:
		break;
	}
	return "other error";
}

static enum up_result
up_result_from_curl(CURLcode code)
{
	switch (code) {
	case CURLE_OK:
		return UP_OK;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
		return UP_CONNECT_FAILED;
	case CURLE_OPERATION_TIMEDOUT:
		return UP_TIMEOUT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_SHUTDOWN_FAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_CLIENTCERT:
	case CURLE_USE_SSL_FAILED:
		return UP_TLS_FAILED;
	case CURLE_FILESIZE_EXCEEDED:
		return UP_TOO_LARGE;
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_BAD_CONTENT_ENCODING:
		return UP_PROTOCOL;
	default:
		return UP_OTHER;
	}
}

/*
 * The event loop side.
 */

static void
up_work_push(struct up_call *c)
{
	struct upstream	*up = c->uc_up;

	if (!c->uc_queued) {
		TAILQ_INSERT_TAIL(&up->up_work, c, uc_work_entry);
		c->uc_queued = 1;
	}
	event_active(up->up_work_ev, EV_TIMEOUT, 0);
}

static void
up_socket_action(struct upstream *up, curl_socket_t fd, int action)
{
	CURLMcode	 rc;
	int		 running;

	up->up_depth++;
	rc = curl_multi_socket_action(up->up_multi, fd, action, &running);
	up->up_depth--;
	if (rc != CURLM_OK)
		log_warnx("%s: %s", __func__, curl_multi_strerror(rc));
}

static void
up_sock_event(evutil_socket_t fd, short events, void *arg)
{
	struct upstream	*up = arg;
	int		 action = 0;

	if (events & EV_READ)
		action |= CURL_CSELECT_IN;
	if (events & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	up_socket_action(up, fd, action);
	up_settle(up);
}

static void
up_timer_event(evutil_socket_t fd, short events, void *arg)
{
	struct upstream	*up = arg;

	up_socket_action(up, CURL_SOCKET_TIMEOUT, 0);
	up_settle(up);
}

static void
up_work_event(evutil_socket_t fd, short events, void *arg)
{
	up_settle(arg);
}

static void
up_sock_free(struct upstream *up, struct up_sock *us)
{
	TAILQ_REMOVE(&up->up_socks, us, us_entry);
	event_free(us->us_ev);
	free(us);
}

static int
up_sock_cb(CURL *easy, curl_socket_t fd, int what, void *arg, void *sockp)
{
	struct upstream	*up = arg;
	struct up_sock	*us = sockp;
	short		 events = EV_PERSIST;

	if (what == CURL_POLL_REMOVE) {
		/* libcurl drops its own entry for fd right after this. */
		if (us != NULL)
			up_sock_free(up, us);
		return 0;
	}
	if (what & CURL_POLL_IN)
		events |= EV_READ;
	if (what & CURL_POLL_OUT)
		events |= EV_WRITE;
	if (us == NULL) {
		if ((us = calloc(1, sizeof(*us))) == NULL)
			fatal("%s", __func__);
		us->us_ev = event_new(up->up_base, fd, events, up_sock_event,
		    up);
		if (us->us_ev == NULL)
			fatalx("%s: event_new", __func__);
		TAILQ_INSERT_TAIL(&up->up_socks, us, us_entry);
		if (curl_multi_assign(up->up_multi, fd, us) != CURLM_OK)
			fatalx("%s: curl_multi_assign", __func__);
	} else if (us->us_events != events) {
		event_del(us->us_ev);
		if (event_assign(us->us_ev, up->up_base, fd, events,
		    up_sock_event, up) == -1)
			fatalx("%s: event_assign", __func__);
	} else
		return 0;
	us->us_events = events;
	if (event_add(us->us_ev, NULL) == -1)
		fatalx("%s: event_add", __func__);
	return 0;
}

static int
up_timer_cb(CURLM *multi, long timeout_ms, void *arg)
{
	struct upstream	*up = arg;
	struct timeval	 tv;

	if (timeout_ms < 0) {
		event_del(up->up_timer);
		return 0;
	}
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	if (event_add(up->up_timer, &tv) == -1)
		fatalx("%s: event_add", __func__);
	return 0;
}

/*
 * Calls.
 */

static void
up_call_free(struct up_call *c)
{
	struct upstream	*up = c->uc_up;

	if (up->up_depth > 0)
		fatalx("%s: inside libcurl", __func__);
	if (c->uc_queued)
		TAILQ_REMOVE(&up->up_work, c, uc_work_entry);
	if (c->uc_added)
		curl_multi_remove_handle(up->up_multi, c->uc_easy);
	curl_easy_cleanup(c->uc_easy);
	curl_slist_free_all(c->uc_req_hdrs);
	curl_slist_free_all(c->uc_connect_to);
	free(c->uc_hbuf);
	TAILQ_REMOVE(&up->up_calls, c, uc_entry);
	free(c);
}

/* The transfer is over for libcurl: tell the caller, once, and forget. */
static void
up_call_done(struct up_call *c, CURLcode code)
{
	struct upstream	*up = c->uc_up;
	enum up_result	 res;
	const char	*detail;
	long		 os_errno = 0;

	if (curl_easy_getinfo(c->uc_easy, CURLINFO_OS_ERRNO, &os_errno) ==
	    CURLE_OK)
		c->uc_os_errno = (int)os_errno;
	if (c->uc_fail != UP_OK) {
		res = c->uc_fail;
		detail = c->uc_fail_detail;
	} else if (code != CURLE_OK) {
		res = up_result_from_curl(code);
		detail = c->uc_errbuf[0] != '\0' ? c->uc_errbuf :
		    curl_easy_strerror(code);
	} else if (!c->uc_head_done) {
		res = UP_PROTOCOL;
		detail = "no response header";
	} else {
		res = UP_OK;
		detail = "ok";
	}
	if (c->uc_added) {
		curl_multi_remove_handle(up->up_multi, c->uc_easy);
		c->uc_added = 0;
	}
	if (!c->uc_cancelled) {
		c->uc_ending = 1;
		c->uc_cb.on_end(c, res, detail, c->uc_arg);
	}
	up_call_free(c);
}

static void
up_call_add(struct up_call *c)
{
	CURLMcode	 rc;

	if ((rc = curl_multi_add_handle(c->uc_up->up_multi, c->uc_easy)) !=
	    CURLM_OK) {
		c->uc_fail = UP_OTHER;
		c->uc_fail_detail = curl_multi_strerror(rc);
		up_call_done(c, CURLE_OK);
		return;
	}
	c->uc_added = 1;
}

static void
up_call_unpause(struct up_call *c)
{
	struct upstream	*up = c->uc_up;
	CURLcode	 code;

	c->uc_resume = 0;
	if (!c->uc_paused)
		return;
	c->uc_paused = 0;
	/* Held bytes reach on_data from in here. */
	up->up_depth++;
	code = curl_easy_pause(c->uc_easy, CURLPAUSE_CONT);
	up->up_depth--;
	if (c->uc_cancelled)
		return;		/* queued, up_settle frees it */
	/* A failure while handing held bytes over does not end the transfer
	 * inside libcurl; end it here. */
	if (code != CURLE_OK || c->uc_fail != UP_OK)
		up_call_done(c, code);
}

static void
up_settle(struct upstream *up)
{
	struct up_call	*c;
	CURLMsg		*msg;
	CURLcode	 code;
	char		*priv;
	int		 left;

	if (up->up_settling)
		return;
	up->up_settling = 1;
	for (;;) {
		if ((msg = curl_multi_info_read(up->up_multi, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			code = msg->data.result;
			if (curl_easy_getinfo(msg->easy_handle,
			    CURLINFO_PRIVATE, &priv) != CURLE_OK ||
			    priv == NULL)
				fatalx("%s: transfer without a call", __func__);
			up_call_done((struct up_call *)(void *)priv, code);
			continue;
		}
		if ((c = TAILQ_FIRST(&up->up_work)) == NULL)
			break;
		TAILQ_REMOVE(&up->up_work, c, uc_work_entry);
		c->uc_queued = 0;
		if (c->uc_cancelled)
			up_call_free(c);
		else if (!c->uc_added)
			up_call_add(c);
		else if (c->uc_resume)
			up_call_unpause(c);
	}
	up->up_settling = 0;
}

/* Stop the transfer from inside a libcurl callback; libcurl then ends it
 * with an error that uc_fail overrides. */
static size_t
up_fail(struct up_call *c, enum up_result res, const char *detail)
{
	if (c->uc_fail == UP_OK) {
		c->uc_fail = res;
		c->uc_fail_detail = detail;
	}
	return 0;
}

/* "HTTP/1.1 200 OK": the version, one or more spaces, three digits. */
static int
up_status_line(struct up_call *c, const char *s, size_t n)
{
	size_t	 i = 5;

	if (n < 5 || memcmp(s, "HTTP/", 5) != 0)
		return -1;
	while (i < n && s[i] != ' ')
		i++;
	while (i < n && s[i] == ' ')
		i++;
	if (n - i < 3 || (n - i > 3 && s[i + 3] != ' '))
		return -1;
	if (s[i] < '1' || s[i] > '9' || s[i + 1] < '0' || s[i + 1] > '9' ||
	    s[i + 2] < '0' || s[i + 2] > '9')
		return -1;
	c->uc_status = (s[i] - '0') * 100 + (s[i + 1] - '0') * 10 +
	    (s[i + 2] - '0');
	c->uc_hlen = 0;
	c->uc_nhdrs = 0;
	return 0;
}

static int
up_is_space(char ch)
{
	return ch == ' ' || ch == '\t';
}

static void
up_trim(const char **s, size_t *n)
{
	while (*n > 0 && up_is_space(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && up_is_space((*s)[*n - 1]))
		(*n)--;
}

/* Room for need more bytes of header block, within the limit. */
static int
up_hbuf_reserve(struct up_call *c, size_t need)
{
	size_t	 cap;
	char	*p;

	if (need > UP_RESP_HDR_BYTES_MAX - c->uc_hlen)
		return -1;
	if (c->uc_hlen + need <= c->uc_hcap)
		return 0;
	cap = c->uc_hcap == 0 ? UP_HBUF_INITIAL : c->uc_hcap;
	while (cap < c->uc_hlen + need)
		cap *= 2;
	if (cap > UP_RESP_HDR_BYTES_MAX)
		cap = UP_RESP_HDR_BYTES_MAX;
	if ((p = realloc(c->uc_hbuf, cap)) == NULL)
		fatal("%s", __func__);
	c->uc_hbuf = p;
	c->uc_hcap = cap;
	return 0;
}

static size_t
up_header_line(struct up_call *c, const char *s, size_t n)
{
	const char	*colon, *v;
	size_t		 i, namelen, vlen;
	char		*d;

	if (memchr(s, '\0', n) != NULL)
		return up_fail(c, UP_PROTOCOL, "NUL in a response header");
	if (up_is_space(s[0])) {
		/* obs-fold: joins the previous value, stored last. */
		if (c->uc_nhdrs == 0)
			return up_fail(c, UP_PROTOCOL,
			    "response header block starts folded");
		v = s;
		vlen = n;
		up_trim(&v, &vlen);
		if (up_hbuf_reserve(c, vlen + 1) == -1)
			return up_fail(c, UP_PROTOCOL,
			    "response headers too large");
		if (vlen > 0) {
			d = c->uc_hbuf + c->uc_hlen - 1;
			/* No space after an empty value. */
			if (c->uc_hoff[c->uc_nhdrs - 1].ho_value !=
			    c->uc_hlen - 1) {
				*d++ = ' ';
				c->uc_hlen++;
			}
			memcpy(d, v, vlen);
			d[vlen] = '\0';
			c->uc_hlen += vlen;
		}
		return 1;
	}
	if ((colon = memchr(s, ':', n)) == NULL || colon == s)
		return up_fail(c, UP_PROTOCOL, "malformed response header");
	namelen = colon - s;
	v = colon + 1;
	vlen = n - namelen - 1;
	up_trim(&v, &vlen);
	if (c->uc_nhdrs == UP_RESP_HDRS_MAX ||
	    up_hbuf_reserve(c, namelen + vlen + 2) == -1)
		return up_fail(c, UP_PROTOCOL, "response headers too large");
	c->uc_hoff[c->uc_nhdrs].ho_name = c->uc_hlen;
	d = c->uc_hbuf + c->uc_hlen;
	for (i = 0; i < namelen; i++)
		d[i] = (s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i];
	d[namelen] = '\0';
	c->uc_hoff[c->uc_nhdrs].ho_value = c->uc_hlen + namelen + 1;
	memcpy(d + namelen + 1, v, vlen);
	d[namelen + 1 + vlen] = '\0';
	c->uc_hlen += namelen + vlen + 2;
	c->uc_nhdrs++;
	return 1;
}

static size_t
up_deliver_head(struct up_call *c)
{
	struct up_hdr	 hdrs[UP_RESP_HDRS_MAX];
	size_t		 i;
	int		 rv = 0;

	for (i = 0; i < c->uc_nhdrs; i++) {
		hdrs[i].name = c->uc_hbuf + c->uc_hoff[i].ho_name;
		hdrs[i].value = c->uc_hbuf + c->uc_hoff[i].ho_value;
	}
	if (c->uc_cb.on_head != NULL)
		rv = c->uc_cb.on_head(c, c->uc_status, hdrs, c->uc_nhdrs,
		    c->uc_arg);
	free(c->uc_hbuf);
	c->uc_hbuf = NULL;
	c->uc_hlen = c->uc_hcap = c->uc_nhdrs = 0;
	if (c->uc_cancelled)
		return 0;
	if (rv != 0)
		return up_fail(c, UP_ABORTED, "refused by on_head");
	return 1;
}

/* One line per call: the status line, header lines, then an empty line;
 * 1xx blocks other than 101 are dropped, and the trailers after the body
 * too. */
static size_t
up_header_cb(char *buf, size_t size, size_t nitems, void *arg)
{
	struct up_call	*c = arg;
	size_t		 len = size * nitems, n = len;

	if (c->uc_cancelled || c->uc_fail != UP_OK)
		return 0;
	if (c->uc_head_done)
		return len;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (!c->uc_in_block) {
		if (up_status_line(c, buf, n) == -1)
			return up_fail(c, UP_PROTOCOL, "bad status line");
		c->uc_in_block = 1;
		return len;
	}
	if (n > 0)
		return up_header_line(c, buf, n) == 0 ? 0 : len;
	c->uc_in_block = 0;
	/* Nothing here asks to switch protocols. */
	if (c->uc_status == 101)
		return up_fail(c, UP_PROTOCOL, "unexpected 101 answer");
	if (c->uc_status < 200) {
		c->uc_hlen = 0;
		c->uc_nhdrs = 0;
		return len;
	}
	c->uc_head_done = 1;
	return up_deliver_head(c) == 0 ? 0 : len;
}

static size_t
up_write_cb(char *buf, size_t size, size_t nmemb, void *arg)
{
	struct up_call	*c = arg;
	size_t		 len = size * nmemb, off = 0, n;
	int		 rv;

	if (c->uc_cancelled || c->uc_fail != UP_OK)
		return 0;
	if (len == 0)
		return 0;
	if (!c->uc_head_done)
		return up_fail(c, UP_PROTOCOL, "body before the header");
	/* More held bytes: libcurl appends them to what it keeps. */
	if (c->uc_paused)
		return CURL_WRITEFUNC_PAUSE;
	if (c->uc_skip > 0) {
		off = c->uc_skip < len ? c->uc_skip : len;
		c->uc_skip -= off;
		if (off == len)
			return len;
	}
	n = len - off;
	if (c->uc_max_body > 0 && n > c->uc_max_body - c->uc_received)
		return up_fail(c, UP_TOO_LARGE, "response body over the limit");
	c->uc_received += n;
	if (c->uc_cb.on_data == NULL)
		return len;
	c->uc_in_data = 1;
	rv = c->uc_cb.on_data(c, buf + off, n, c->uc_arg);
	c->uc_in_data = 0;
	if (c->uc_cancelled)
		return 0;
	if (rv == UP_PAUSE) {
		/* libcurl keeps this whole chunk, skipped part included. */
		c->uc_paused = 1;
		c->uc_skip = len;
		return CURL_WRITEFUNC_PAUSE;
	}
	c->uc_resume = 0;
	if (rv != 0)
		return up_fail(c, UP_ABORTED, "refused by on_data");
	return len;
}

static int
up_is_tchar(unsigned char ch)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9'))
		return 1;
	return ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int
up_hdr_check(const struct up_hdr *h)
{
	const unsigned char	*p;
	size_t			 i;

	if (h->name == NULL || h->value == NULL || h->name[0] == '\0')
		return -1;
	for (p = (const unsigned char *)h->name; *p != '\0'; p++)
		if (!up_is_tchar(*p))
			return -1;
	for (p = (const unsigned char *)h->value; *p != '\0'; p++)
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return -1;
	for (i = 0; i < sizeof(up_refused_hdrs) / sizeof(up_refused_hdrs[0]);
	    i++)
		if (strcasecmp(h->name, up_refused_hdrs[i]) == 0)
			return -1;
	return 0;
}

/* An AF_INET or AF_INET6 address with a port. */
static int
up_pin_check(const struct sockaddr *sa, size_t len)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;

	switch (sa->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)(const void *)sa;
		return len >= sizeof(*sin) && sin->sin_port != 0 ? 0 : -1;
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)(const void *)sa;
		return len >= sizeof(*sin6) && sin6->sin6_port != 0 ? 0 : -1;
	default:
		return -1;
	}
}

/* Whether libcurl is about to connect to exactly the pinned address. */
static int
up_pin_matches(const struct up_call *c, const struct sockaddr *sa,
    size_t len)
{
	const struct sockaddr_in	*a4, *p4;
	const struct sockaddr_in6	*a6, *p6;

	if (sa->sa_family != c->uc_pin.ss_family)
		return 0;
	if (sa->sa_family == AF_INET && len >= sizeof(*a4)) {
		a4 = (const struct sockaddr_in *)(const void *)sa;
		p4 = (const struct sockaddr_in *)(const void *)&c->uc_pin;
		return a4->sin_port == p4->sin_port &&
		    a4->sin_addr.s_addr == p4->sin_addr.s_addr;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(*a6)) {
		a6 = (const struct sockaddr_in6 *)(const void *)sa;
		p6 = (const struct sockaddr_in6 *)(const void *)&c->uc_pin;
		return a6->sin6_port == p6->sin6_port &&
		    a6->sin6_scope_id == p6->sin6_scope_id &&
		    memcmp(&a6->sin6_addr, &p6->sin6_addr,
		    sizeof(a6->sin6_addr)) == 0;
	}
	return 0;
}

/*
 * libcurl asks for every socket it connects: with a pinned address, only
 * that one is made, so neither a lookup nor a stale connect-to entry can
 * take the call elsewhere.
 */
static curl_socket_t
up_opensocket_cb(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct up_call	*c = arg;
	int		 fd;

	if (purpose != CURLSOCKTYPE_IPCXN || a->socktype != SOCK_STREAM ||
	    !up_pin_matches(c, &a->addr, a->addrlen)) {
		up_fail(c, UP_OTHER, "connection to an address other than "
		    "the pinned one refused");
		return CURL_SOCKET_BAD;
	}
	fd = socket(a->family, a->socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    a->protocol);
	return fd == -1 ? CURL_SOCKET_BAD : fd;
}

/* "::ADDR:PORT": any host and port of the URL goes to ADDR:PORT. */
static int
up_pin_setopts(struct up_call *c, const struct up_request *req)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;
	char				 addr[INET6_ADDRSTRLEN], line[96];
	unsigned			 port;

	memcpy(&c->uc_pin, req->connect_addr, req->connect_addr->sa_family ==
	    AF_INET ? sizeof(*sin) : sizeof(*sin6));
	c->uc_pin_len = req->connect_addr->sa_family == AF_INET ?
	    sizeof(*sin) : sizeof(*sin6);
	if (c->uc_pin.ss_family == AF_INET) {
		sin = (const struct sockaddr_in *)(const void *)&c->uc_pin;
		if (inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof(addr)) ==
		    NULL)
			return -1;
		port = ntohs(sin->sin_port);
		snprintf(line, sizeof(line), "::%s:%u", addr, port);
	} else {
		sin6 = (const struct sockaddr_in6 *)(const void *)&c->uc_pin;
		if (inet_ntop(AF_INET6, &sin6->sin6_addr, addr,
		    sizeof(addr)) == NULL)
			return -1;
		port = ntohs(sin6->sin6_port);
		snprintf(line, sizeof(line), "::[%s]:%u", addr, port);
	}
	if (up_slist_add(&c->uc_connect_to, line) == -1)
		return -1;
	if (curl_easy_setopt(c->uc_easy, CURLOPT_CONNECT_TO,
	    c->uc_connect_to) != CURLE_OK ||
	    curl_easy_setopt(c->uc_easy, CURLOPT_OPENSOCKETFUNCTION,
	    up_opensocket_cb) != CURLE_OK ||
	    curl_easy_setopt(c->uc_easy, CURLOPT_OPENSOCKETDATA, c) !=
	    CURLE_OK ||
	    curl_easy_setopt(c->uc_easy, CURLOPT_NOPROXY, "*") != CURLE_OK)
		return -1;
	return 0;
}

static int
up_request_check(const struct up_request *req, const struct up_callbacks *cb)
{
	size_t	 i;

	if (req == NULL || req->url == NULL || req->url[0] == '\0') {
		log_warnx("%s: no URL", __func__);
		return -1;
	}
	if (cb == NULL || cb->on_end == NULL) {
		log_warnx("%s: no on_end", __func__);
		return -1;
	}
	if (req->body == NULL && req->body_len > 0) {
		log_warnx("%s: body length without a body", __func__);
		return -1;
	}
	if (req->nhdrs > 0 && req->hdrs == NULL) {
		log_warnx("%s: header count without headers", __func__);
		return -1;
	}
	if (req->connect_timeout_ms < 0) {
		log_warnx("%s: negative connect timeout", __func__);
		return -1;
	}
	if (req->connect_addr != NULL && up_pin_check(req->connect_addr,
	    req->connect_addr_len) == -1) {
		log_warnx("%s: bad connect address", __func__);
		return -1;
	}
	/* Never the value: it may be a credential. */
	for (i = 0; i < req->nhdrs; i++)
		if (up_hdr_check(&req->hdrs[i]) == -1) {
			log_warnx("%s: request header %zu refused", __func__,
			    i);
			return -1;
		}
	return 0;
}

static int
up_has_hdr(const struct up_request *req, const char *name)
{
	size_t	 i;

	for (i = 0; i < req->nhdrs; i++)
		if (strcasecmp(req->hdrs[i].name, name) == 0)
			return 1;
	return 0;
}

static int
up_slist_add(struct curl_slist **list, const char *line)
{
	struct curl_slist	*l;

	if ((l = curl_slist_append(*list, line)) == NULL)
		return -1;
	*list = l;
	return 0;
}

/*
 * The caller's lines, then "Name:" for each header libcurl would add by
 * itself, which suppresses it ("Name;" is how libcurl sends an empty value).
 * The caller may not send Expect, so libcurl never waits for a 100.
 */
static int
up_build_hdrs(struct up_call *c, const struct up_request *req)
{
	char	*line;
	size_t	 i;
	int	 rv;

	for (i = 0; i < req->nhdrs; i++) {
		if (req->hdrs[i].value[0] == '\0')
			rv = asprintf(&line, "%s;", req->hdrs[i].name);
		else
			rv = asprintf(&line, "%s: %s", req->hdrs[i].name,
			    req->hdrs[i].value);
		if (rv == -1)
			fatal("%s", __func__);
		rv = up_slist_add(&c->uc_req_hdrs, line);
		free(line);
		if (rv == -1)
			return -1;
	}
	if (up_slist_add(&c->uc_req_hdrs, "Expect:") == -1)
		return -1;
	if (!up_has_hdr(req, "Accept") &&
	    up_slist_add(&c->uc_req_hdrs, "Accept:") == -1)
		return -1;
	if (req->body != NULL && !up_has_hdr(req, "Content-Type") &&
	    up_slist_add(&c->uc_req_hdrs, "Content-Type:") == -1)
		return -1;
	return 0;
}

/* The body of a POST, handed to libcurl as it asks. */
static size_t
up_read_cb(char *buf, size_t size, size_t n, void *arg)
{
	struct up_call	*c = arg;
	size_t		 len = size * n;

	c->uc_body_read = 1;
	if (len > c->uc_body_len - c->uc_body_off)
		len = c->uc_body_len - c->uc_body_off;
	memcpy(buf, c->uc_body + c->uc_body_off, len);
	c->uc_body_off += len;
	return len;
}

/*
 * libcurl sends a request again, on a new connection, when the reused one
 * it went out on died before any answer: for a model call that is a call
 * paid twice, outside every budget.  It rewinds the body first, so the body
 * may be rewound only before libcurl took any of it; after that the call
 * fails instead (CURLE_SEND_FAIL_REWIND) and the worker sees a 502.
 */
static int
up_seek_cb(void *arg, curl_off_t off, int origin)
{
	struct up_call	*c = arg;

	if (c->uc_body_read || origin != SEEK_SET || off != 0)
		return CURL_SEEKFUNC_CANTSEEK;
	c->uc_body_off = 0;
	return CURL_SEEKFUNC_OK;
}

static CURLcode
up_setopts(struct up_call *c, const struct up_request *req)
{
	CURL		*e = c->uc_easy;
	long		 cto, fresh;
	CURLcode	 rc;

	cto = req->connect_timeout_ms > 0 ? req->connect_timeout_ms :
	    UP_CONNECT_TIMEOUT_MS_DEFAULT;
	/* Pinned calls (the controlled fetch) never share a connection, nor
	 * does a POST without a body (nothing to refuse to rewind). */
	fresh = req->connect_addr != NULL ||
	    (req->body != NULL && req->body_len == 0);
	if ((rc = curl_easy_setopt(e, CURLOPT_PRIVATE, c)) != CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->uc_errbuf)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L)) != CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, fresh)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_FORBID_REUSE, fresh)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_URL, req->url)) != CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https")) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_DISALLOW_USERNAME_IN_URL, 1L)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_NETRC,
	    (long)CURL_NETRC_IGNORED)) != CURLE_OK ||
	    /* "" ignores the *_proxy environment too. */
	    (rc = curl_easy_setopt(e, CURLOPT_PROXY, "")) != CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
	    (long)CURL_HTTP_VERSION_1_1)) != CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_HTTP_CONTENT_DECODING, 0L)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->uc_req_hdrs)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_SSLVERSION,
	    (long)CURL_SSLVERSION_TLSv1_2)) != CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, cto)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_BUFFERSIZE, UP_RECV_BUFFER)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_TCP_KEEPIDLE,
	    UP_KEEPALIVE_IDLE_S)) != CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_TCP_KEEPINTVL,
	    UP_KEEPALIVE_INTVL_S)) != CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, up_header_cb)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_HEADERDATA, c)) != CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, up_write_cb)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_WRITEDATA, c)) != CURLE_OK)
		return rc;
	/* Only the given CA, not the system directory besides it. */
	if (req->ca_file != NULL &&
	    ((rc = curl_easy_setopt(e, CURLOPT_CAINFO, req->ca_file)) !=
	    CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_CAPATH, NULL)) != CURLE_OK))
		return rc;
	/* Refuses a Content-Length past the limit before any body byte;
	 * up_write_cb counts the rest. */
	if (req->max_body > 0 &&
	    (rc = curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)req->max_body)) != CURLE_OK)
		return rc;
	if (req->body != NULL && req->body_len == 0 &&
	    ((rc = curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
	    (curl_off_t)0)) != CURLE_OK ||
	    (rc = curl_easy_setopt(e, CURLOPT_POSTFIELDS, "")) != CURLE_OK))
		return rc;
	if (req->body != NULL && req->body_len > 0) {
		c->uc_body = req->body;
		c->uc_body_len = req->body_len;
		if ((rc = curl_easy_setopt(e, CURLOPT_POST, 1L)) != CURLE_OK ||
		    (rc = curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)req->body_len)) != CURLE_OK ||
		    (rc = curl_easy_setopt(e, CURLOPT_READFUNCTION,
		    up_read_cb)) != CURLE_OK ||
		    (rc = curl_easy_setopt(e, CURLOPT_READDATA, c)) !=
		    CURLE_OK ||
		    (rc = curl_easy_setopt(e, CURLOPT_SEEKFUNCTION,
		    up_seek_cb)) != CURLE_OK ||
		    (rc = curl_easy_setopt(e, CURLOPT_SEEKDATA, c)) !=
		    CURLE_OK)
			return rc;
	}
	return CURLE_OK;
}

struct up_call *
upstream_call(struct upstream *up, const struct up_request *req,
    const struct up_callbacks *cb, void *arg)
{
	struct up_call	*c;
	CURLcode	 rc;

	if (up_request_check(req, cb) == -1)
		return NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("%s", __func__);
	c->uc_up = up;
	c->uc_cb = *cb;
	c->uc_arg = arg;
	c->uc_max_body = req->max_body;
	if ((c->uc_easy = curl_easy_init()) == NULL) {
		log_warnx("%s: curl_easy_init failed", __func__);
		free(c);
		return NULL;
	}
	if (up_build_hdrs(c, req) == -1) {
		log_warnx("%s: cannot build the request headers", __func__);
		goto fail;
	}
	if ((rc = up_setopts(c, req)) != CURLE_OK) {
		log_warnx("%s: %s", __func__, curl_easy_strerror(rc));
		goto fail;
	}
	if (req->connect_addr != NULL && up_pin_setopts(c, req) == -1) {
		log_warnx("%s: cannot pin the connect address", __func__);
		goto fail;
	}
	TAILQ_INSERT_TAIL(&up->up_calls, c, uc_entry);
	if (up->up_depth > 0) {
		up_work_push(c);
		return c;
	}
	if (curl_multi_add_handle(up->up_multi, c->uc_easy) != CURLM_OK) {
		log_warnx("%s: curl_multi_add_handle failed", __func__);
		TAILQ_REMOVE(&up->up_calls, c, uc_entry);
		goto fail;
	}
	c->uc_added = 1;
	return c;
 fail:
	curl_easy_cleanup(c->uc_easy);
	curl_slist_free_all(c->uc_req_hdrs);
	curl_slist_free_all(c->uc_connect_to);
	free(c);
	return NULL;
}

int
upstream_os_errno(const struct up_call *c)
{
	return c->uc_os_errno;
}

void
upstream_resume(struct up_call *c)
{
	if (c == NULL || c->uc_cancelled || c->uc_ending)
		return;
	if (!c->uc_paused && !c->uc_in_data)
		return;
	c->uc_resume = 1;
	up_work_push(c);
}

void
upstream_cancel(struct up_call *c)
{
	if (c == NULL || c->uc_cancelled || c->uc_ending)
		return;
	c->uc_cancelled = 1;
	if (c->uc_up->up_depth > 0)
		up_work_push(c);
	else
		up_call_free(c);
}

struct upstream *
upstream_new(struct event_base *base)
{
	struct upstream	*up;

	if ((up = calloc(1, sizeof(*up))) == NULL)
		fatal("%s", __func__);
	up->up_base = base;
	TAILQ_INIT(&up->up_calls);
	TAILQ_INIT(&up->up_work);
	TAILQ_INIT(&up->up_socks);
	if ((up->up_timer = event_new(base, -1, 0, up_timer_event, up)) ==
	    NULL ||
	    (up->up_work_ev = event_new(base, -1, 0, up_work_event, up)) ==
	    NULL)
		fatalx("%s: event_new", __func__);
	if ((up->up_multi = curl_multi_init()) == NULL)
		fatalx("%s: curl_multi_init", __func__);
	if (curl_multi_setopt(up->up_multi, CURLMOPT_SOCKETFUNCTION,
	    up_sock_cb) != CURLM_OK ||
	    curl_multi_setopt(up->up_multi, CURLMOPT_SOCKETDATA, up) !=
	    CURLM_OK ||
	    curl_multi_setopt(up->up_multi, CURLMOPT_TIMERFUNCTION,
	    up_timer_cb) != CURLM_OK ||
	    curl_multi_setopt(up->up_multi, CURLMOPT_TIMERDATA, up) !=
	    CURLM_OK)
		fatalx("%s: curl_multi_setopt", __func__);
	return up;
}

void
upstream_free(struct upstream *up)
{
	struct up_call	*c;
	struct up_sock	*us;

	if (up == NULL)
		return;
	if (up->up_depth > 0 || up->up_settling)
		fatalx("%s: called from a callback", __func__);
	while ((c = TAILQ_FIRST(&up->up_calls)) != NULL) {
		c->uc_cancelled = 1;
		up_call_free(c);
	}
	/* May still report sockets of cached connections as removed. */
	curl_multi_cleanup(up->up_multi);
	while ((us = TAILQ_FIRST(&up->up_socks)) != NULL)
		up_sock_free(up, us);
	event_free(up->up_timer);
	event_free(up->up_work_ev);
	free(up);
}
