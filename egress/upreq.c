/*
 * The upstream client's requests (upstreamint.h): checked before a call
 * starts, its URL read, and its head and small body built as the bytes
 * one write sends.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log.h"
#include "upstreamint.h"
#include "validate.h"

/* Headers that frame the message or the connection (up_request_check()). */
static const char *const up_refused_hdrs[] = {
	"host", "content-length", "transfer-encoding", "connection",
	"expect", "te", "upgrade",
};

static int
up_hdr_check(const struct up_hdr *h)
{
	const unsigned char	*p;
	size_t			 i;

	if (h->name == NULL || h->value == NULL || h->name[0] == '\0')
		return -1;
	for (p = (const unsigned char *)h->name; *p != '\0'; p++)
		if (!http_tchar(*p))
			return -1;
	for (p = (const unsigned char *)h->value; *p != '\0'; p++)
		if ((*p < 0x20 && *p != '\t') || *p == 0x7f)
			return -1;
	/* Names are tokens (checked above): their first letter, folded,
	 * rules out most of the list. */
	for (i = 0; i < sizeof(up_refused_hdrs) / sizeof(up_refused_hdrs[0]);
	    i++)
		if ((h->name[0] | 0x20) == up_refused_hdrs[i][0] &&
		    strcasecmp(h->name, up_refused_hdrs[i]) == 0)
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

int
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
up_host_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_';
}

/*
 * "http[s]://host[:port][/path][?query][#fragment]": the host (an IPv6
 * address without its brackets), the port and the request target; the
 * fragment is dropped.  NULL, or why the URL is refused.
 */
const char *
up_url_parse(struct up_call *c, const char *url, char **target)
{
	const char	*p, *a, *e, *h, *t;
	struct in6_addr	 a6;
	struct in_addr	 a4;
	size_t		 hlen, tlen;
	unsigned long	 port;
	char		*end, *d;

	if (strncasecmp(url, "https://", 8) == 0) {
		c->uc_tls = 1;
		c->uc_port = 443;
		a = url + 8;
	} else if (strncasecmp(url, "http://", 7) == 0) {
		c->uc_port = 80;
		a = url + 7;
	} else
		return "not an http or https URL";
	e = a + strcspn(a, "/?#");
	if (memchr(a, '@', e - a) != NULL)
		return "a user name in the URL";
	if (*a == '[') {
		h = a + 1;
		if ((p = memchr(h, ']', e - h)) == NULL)
			return "bad host in the URL";
		hlen = p - h;
		p++;
	} else {
		h = a;
		p = memchr(a, ':', e - a);
		hlen = (p != NULL ? p : e) - h;
		if (p == NULL)
			p = e;
		for (t = h; t < h + hlen; t++)
			if (!up_host_char(*t))
				return "bad host in the URL";
	}
	if (hlen == 0 || hlen > 255)
		return "bad host in the URL";
	if (p < e) {
		if (*p != ':' || p + 1 == e || e - p > 6)
			return "bad port in the URL";
		port = strtoul(p + 1, &end, 10);
		if (end != e || port == 0 || port > 65535 ||
		    p[1] < '0' || p[1] > '9')
			return "bad port in the URL";
		c->uc_port = port;
	}
	if ((c->uc_host = strndup(h, hlen)) == NULL)
		fatal("%s", __func__);
	if (*a == '[') {
		if (inet_pton(AF_INET6, c->uc_host, &a6) != 1)
			return "bad host in the URL";
		c->uc_numeric = 1;
	} else
		c->uc_numeric = inet_pton(AF_INET, c->uc_host, &a4) == 1;
	tlen = strcspn(e, "#");
	for (t = e; t < e + tlen; t++)
		if ((unsigned char)*t <= 0x20 || (unsigned char)*t >= 0x7f)
			return "bad character in the URL";
	if ((d = *target = malloc(tlen + 2)) == NULL)
		fatal("%s", __func__);
	if (*e != '/')
		*d++ = '/';
	memcpy(d, e, tlen);
	d[tlen] = '\0';
	return NULL;
}

/*
 * The request line and head: Host, the caller's headers in order, and with
 * a body Content-Length; a small body after them.
 */
void
up_build_request(struct up_call *c, const struct up_request *req,
    const char *target)
{
	struct up_buf	 b;
	char		 line[64];
	size_t		 i, n;

	memset(&b, 0, sizeof(b));
	if (req->body != NULL)
		up_buf_add(&b, "POST ", 5);
	else
		up_buf_add(&b, "GET ", 4);
	up_buf_add(&b, target, strlen(target));
	up_buf_add(&b, " HTTP/1.1\r\nHost: ", 17);
	if (c->uc_numeric && strchr(c->uc_host, ':') != NULL) {
		up_buf_add(&b, "[", 1);
		up_buf_add(&b, c->uc_host, strlen(c->uc_host));
		up_buf_add(&b, "]", 1);
	} else
		up_buf_add(&b, c->uc_host, strlen(c->uc_host));
	if (c->uc_port != (c->uc_tls ? 443u : 80u)) {
		n = str_append_uint(line, sizeof(line),
		    str_append(line, sizeof(line), 0, ":", 1), c->uc_port);
		up_buf_add(&b, line, n);
	}
	up_buf_add(&b, "\r\n", 2);
	for (i = 0; i < req->nhdrs; i++) {
		up_buf_add(&b, req->hdrs[i].name, strlen(req->hdrs[i].name));
		up_buf_add(&b, ":", 1);
		if (req->hdrs[i].value[0] != '\0') {
			up_buf_add(&b, " ", 1);
			up_buf_add(&b, req->hdrs[i].value,
			    strlen(req->hdrs[i].value));
		}
		up_buf_add(&b, "\r\n", 2);
	}
	if (req->body != NULL) {
		up_buf_add(&b, "Content-Length: ", 16);
		n = str_append_uint(line, sizeof(line), 0, req->body_len);
		up_buf_add(&b, line, n);
		up_buf_add(&b, "\r\n", 2);
	}
	up_buf_add(&b, "\r\n", 2);
	if (req->body != NULL && req->body_len <= UP_SMALL_BODY)
		up_buf_add(&b, req->body, req->body_len);
	else if (req->body != NULL) {
		c->uc_body = req->body;
		c->uc_body_len = req->body_len;
	}
	c->uc_req = b.ub_p;
	c->uc_req_len = b.ub_len;
}

/* Where the call goes: a pinned address, an address in the URL, or a
 * name to resolve.  A pinned call has a connection of its own. */
void
up_call_target(struct up_call *c, const struct up_request *req)
{
	struct sockaddr_in	*sin;
	struct sockaddr_in6	*sin6;

	if (req->connect_addr != NULL) {
		memcpy(&c->uc_addr[0], req->connect_addr,
		    req->connect_addr->sa_family == AF_INET ? sizeof(*sin) :
		    sizeof(*sin6));
		c->uc_addrlen[0] = req->connect_addr->sa_family == AF_INET ?
		    sizeof(*sin) : sizeof(*sin6);
		c->uc_naddr = 1;
		/* The pin's port, not the URL's. */
		c->uc_port = ntohs(req->connect_addr->sa_family == AF_INET ?
		    ((const struct sockaddr_in *)(const void *)
		    req->connect_addr)->sin_port :
		    ((const struct sockaddr_in6 *)(const void *)
		    req->connect_addr)->sin6_port);
		return;
	}
	if (c->uc_numeric) {
		if (strchr(c->uc_host, ':') != NULL) {
			sin6 = (struct sockaddr_in6 *)(void *)&c->uc_addr[0];
			sin6->sin6_family = AF_INET6;
			(void)inet_pton(AF_INET6, c->uc_host, &sin6->sin6_addr);
			c->uc_addrlen[0] = sizeof(*sin6);
		} else {
			sin = (struct sockaddr_in *)(void *)&c->uc_addr[0];
			sin->sin_family = AF_INET;
			(void)inet_pton(AF_INET, c->uc_host, &sin->sin_addr);
			c->uc_addrlen[0] = sizeof(*sin);
		}
		c->uc_naddr = 1;
	}
	c->uc_key = up_join(c->uc_tls ? "https://" : "http://", c->uc_host,
	    up_port_str(c->uc_port), c->uc_ca != NULL ? c->uc_ca : "");
}
