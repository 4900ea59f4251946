#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "netvet.h"
#include "validate.h"

#if RTSANDBOX_TEST_SEAMS
static int	nv_loopback_public;

void
nv_test_loopback_public(int on)
{
	nv_loopback_public = on != 0;
}
#endif

const char *
nv_err_to_string(enum nv_err e)
{
	switch (e) {
	case NV_OK:
		return "no error";
	case NV_URL_EMPTY:
		return "url is empty or too long";
	case NV_URL_RELATIVE:
		return "url is not absolute";
	case NV_URL_SCHEME:
		return "url scheme is not http or https";
	case NV_URL_USERINFO:
		return "url carries a user name or password";
	case NV_URL_HOST:
		return "url host is missing or malformed";
	case NV_URL_PORT:
		return "url port is not 1-65535";
	case NV_URL_CHARS:
		return "url contains control characters";
	case NV_URL_ZONE:
		return "url has an ipv6 zone index";
	case NV_ADDR_NOT_PUBLIC:
		return "address is not public";
	}
	return "unknown error";
}

int
nv_ipv4_public(const uint8_t a[4])
{
	if (a[0] == 127) {
#if RTSANDBOX_TEST_SEAMS
		return nv_loopback_public;
#else
		return 0;
#endif
	}
	if (a[0] == 0 || a[0] == 10 || a[0] >= 224)
		return 0;
	if (a[0] == 100 && (a[1] & 0xc0) == 64)
		return 0;
	if (a[0] == 169 && a[1] == 254)
		return 0;
	if (a[0] == 172 && (a[1] & 0xf0) == 16)
		return 0;
	if (a[0] == 192 && (a[1] == 168 || (a[1] == 0 && a[2] == 0) ||
	    (a[1] == 0 && a[2] == 2) || (a[1] == 88 && a[2] == 99)))
		return 0;
	if (a[0] == 198 && ((a[1] & 0xfe) == 18 ||
	    (a[1] == 51 && a[2] == 100)))
		return 0;
	if (a[0] == 203 && a[1] == 0 && a[2] == 113)
		return 0;
	return 1;
}

int
nv_ipv6_public(const uint8_t a[16], uint32_t scope_id)
{
	static const uint8_t	 mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};
	unsigned		 g0, g1;

	if (scope_id != 0)
		return 0;
	if (memcmp(a, mapped, sizeof(mapped)) == 0)
		return nv_ipv4_public(a + 12);
	g0 = (unsigned)a[0] << 8 | a[1];
	g1 = (unsigned)a[2] << 8 | a[3];
	if (g0 < 0x2000 || g0 > 0x3ffe || g0 == 0x2002)
		return 0;
	if (g0 == 0x2001 && (g1 == 0x0000 || g1 == 0x0002 || g1 == 0x0db8 ||
	    (g1 & 0xfff0) == 0x0010 || (g1 & 0xfff0) == 0x0020))
		return 0;
	return 1;
}

int
nv_sockaddr_public(const struct sockaddr *sa, size_t len)
{
	struct sockaddr_in	 sin;
	struct sockaddr_in6	 sin6;

	if (sa == NULL || len < sizeof(sa->sa_family))
		return 0;
	/* Copies: the caller's storage need not be aligned for either. */
	switch (sa->sa_family) {
	case AF_INET:
		if (len < sizeof(sin))
			return 0;
		memcpy(&sin, sa, sizeof(sin));
		return nv_ipv4_public((const uint8_t *)&sin.sin_addr);
	case AF_INET6:
		if (len < sizeof(sin6))
			return 0;
		memcpy(&sin6, sa, sizeof(sin6));
		return nv_ipv6_public(sin6.sin6_addr.s6_addr,
		    sin6.sin6_scope_id);
	}
	return 0;
}

static int
is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
to_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Length of an RFC 3986 scheme followed by ':', or 0 when there is none. */
static size_t
scheme_len(const char *s, size_t len)
{
	size_t	 i;

	if (len == 0 || !is_alpha((unsigned char)s[0]))
		return 0;
	for (i = 1; i < len; i++) {
		if (s[i] == ':')
			return i;
		if (!is_alpha((unsigned char)s[i]) &&
		    !is_digit((unsigned char)s[i]) && s[i] != '+' &&
		    s[i] != '-' && s[i] != '.')
			return 0;
	}
	return 0;
}

/*
 * One part of a numeric IPv4 host as the WHATWG URL standard and
 * inet_aton() read it: 0x or 0X and at least one hex digit, a leading 0
 * for octal, else decimal.  Values saturate above 2^32 so that any number
 * of leading zeros is fine and no length overflows.
 */
static int
ipv4_part(const char *s, size_t len, uint64_t *v)
{
	unsigned	 radix = 10;
	size_t		 i = 0;
	uint64_t	 n = 0;
	int		 d;

	if (len == 0)
		return -1;
	if (len >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		radix = 16;
		i = 2;
		if (len == 2)
			return -1;	/* inet_aton() refuses a bare 0x */
	} else if (len >= 2 && s[0] == '0') {
		radix = 8;
		i = 1;
	}
	for (; i < len; i++) {
		d = radix == 16 ? hex_digit((unsigned char)s[i]) :
		    is_digit((unsigned char)s[i]) ? s[i] - '0' : -1;
		if (d < 0 || (unsigned)d >= radix)
			return -1;
		n = n * radix + (unsigned)d;
		if (n > 0xffffffffULL)
			n = 0x100000000ULL;
	}
	*v = n;
	return 0;
}

/*
 * WHATWG "ends in a number": a last label of digits, or 0x and hex digits,
 * makes the host an IPv4 address or nothing, so "1.2.3.4.5" and "09" can
 * never reach a resolver as names.
 */
static int
ends_in_number(const char *h, size_t len)
{
	size_t	 i, start = 0;

	for (i = 0; i < len; i++)
		if (h[i] == '.')
			start = i + 1;
	if (start == len)
		return 0;
	for (i = start; i < len && is_digit((unsigned char)h[i]); i++)
		;
	if (i == len)
		return 1;
	if (len - start >= 2 && h[start] == '0' &&
	    (h[start + 1] == 'x' || h[start + 1] == 'X')) {
		for (i = start + 2; i < len; i++)
			if (hex_digit((unsigned char)h[i]) < 0)
				break;
		return i == len;
	}
	return 0;
}

/* 1 to 4 parts; every part but the last is a byte, the last fills the rest. */
static int
ipv4_parse(const char *h, size_t len, uint8_t out[4])
{
	uint64_t	 parts[4], v;
	size_t		 i, start = 0, n = 0;
	uint32_t	 a;

	for (i = 0; i <= len; i++) {
		if (i < len && h[i] != '.')
			continue;
		if (n == 4)
			return -1;
		if (ipv4_part(h + start, i - start, &parts[n]) == -1)
			return -1;
		n++;
		start = i + 1;
	}
	for (i = 0; i + 1 < n; i++)
		if (parts[i] > 255)
			return -1;
	v = parts[n - 1];
	if (v >= (1ULL << (8 * (5 - n))))
		return -1;
	a = (uint32_t)v;
	for (i = 0; i + 1 < n; i++)
		a |= (uint32_t)parts[i] << (8 * (3 - i));
	out[0] = a >> 24;
	out[1] = a >> 16;
	out[2] = a >> 8;
	out[3] = a;
	return 0;
}

/* Letters, digits, '-' and '_' in labels of 1-63; the caller bounds it. */
static int
dns_name_valid(const char *h, size_t len)
{
	size_t	 i, label = 0;

	for (i = 0; i < len; i++) {
		if (h[i] == '.') {
			if (label == 0)
				return 0;
			label = 0;
			continue;
		}
		if (!is_alpha((unsigned char)h[i]) &&
		    !is_digit((unsigned char)h[i]) && h[i] != '-' &&
		    h[i] != '_')
			return 0;
		if (++label > 63)
			return 0;
	}
	return label > 0;
}

static enum nv_err
parse_ipv6(const char *s, size_t len, struct nv_url *u)
{
	char		 text[INET6_ADDRSTRLEN];
	struct in6_addr	 a;

	if (memchr(s, '%', len) != NULL)
		return NV_URL_ZONE;
	if (len == 0 || len >= sizeof(text))
		return NV_URL_HOST;
	memcpy(text, s, len);
	text[len] = '\0';
	if (inet_pton(AF_INET6, text, &a) != 1)
		return NV_URL_HOST;
	if (inet_ntop(AF_INET6, &a, u->nu_host, sizeof(u->nu_host)) == NULL)
		return NV_URL_HOST;
	u->nu_kind = NV_HOST_IPV6;
	memcpy(u->nu_addr, a.s6_addr, 16);
	return nv_ipv6_public(u->nu_addr, 0) ? NV_OK : NV_ADDR_NOT_PUBLIC;
}

/*
 * A host outside brackets: percent-decoded first, as the WHATWG standard
 * does, so "%31%32%37.0.0.1" is vetted as 127.0.0.1 and not passed on as a
 * name.  No IDNA: names must reach here in their ASCII form.
 */
static enum nv_err
parse_host(const char *s, size_t len, struct nv_url *u)
{
	char	 h[NV_HOST_MAX + 2];
	size_t	 i, n = 0;
	int	 c, hi, lo;

	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c == '%') {
			if (len - i < 3 ||
			    (hi = hex_digit((unsigned char)s[i + 1])) < 0 ||
			    (lo = hex_digit((unsigned char)s[i + 2])) < 0)
				return NV_URL_HOST;
			c = hi << 4 | lo;
			i += 2;
		}
		/* One byte more than a name may have, for a trailing dot. */
		if (n == NV_HOST_MAX + 1)
			return NV_URL_HOST;
		h[n++] = (char)to_lower(c);
	}
	if (n > 0 && h[n - 1] == '.')
		n--;
	if (n == 0)
		return NV_URL_HOST;

	if (ends_in_number(h, n)) {
		if (ipv4_parse(h, n, u->nu_addr) == -1)
			return NV_URL_HOST;
		if (inet_ntop(AF_INET, u->nu_addr, u->nu_host,
		    sizeof(u->nu_host)) == NULL)
			return NV_URL_HOST;
		u->nu_kind = NV_HOST_IPV4;
		return nv_ipv4_public(u->nu_addr) ? NV_OK : NV_ADDR_NOT_PUBLIC;
	}
	if (n > NV_HOST_MAX || !dns_name_valid(h, n))
		return NV_URL_HOST;
	memcpy(u->nu_host, h, n);
	u->nu_host[n] = '\0';
	u->nu_kind = NV_HOST_NAME;
	return NV_OK;
}

static enum nv_err
parse_port(const char *s, size_t len, int https, uint16_t *port)
{
	unsigned long	 v = 0;
	size_t		 i;

	if (len == 0) {
		*port = https ? 443 : 80;
		return NV_OK;
	}
	for (i = 0; i < len; i++) {
		if (!is_digit((unsigned char)s[i]))
			return NV_URL_PORT;
		v = v * 10 + (unsigned long)(s[i] - '0');
		if (v > 65535)
			return NV_URL_PORT;
	}
	if (v == 0)
		return NV_URL_PORT;
	*port = (uint16_t)v;
	return NV_OK;
}

/*
 * RFC 3986 5.2.4 over a path that starts with '/', in place; returns the
 * new length.  The output never outgrows the input, and the input is read
 * ahead of where the output is written.
 */
static size_t
remove_dot_segments(char *p, size_t len)
{
	size_t	 i = 0, o = 0;

	while (i < len) {
		if (len - i >= 3 && memcmp(p + i, "/./", 3) == 0)
			i += 2;
		else if (len - i == 2 && memcmp(p + i, "/.", 2) == 0) {
			p[i + 1] = '/';
			i += 1;
		} else if ((len - i >= 4 && memcmp(p + i, "/../", 4) == 0) ||
		    (len - i == 3 && memcmp(p + i, "/..", 3) == 0)) {
			if (len - i == 3)
				p[i + 2] = '/';
			i += len - i == 3 ? 2 : 3;
			while (o > 0 && p[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else {
			/* Move one segment, with its leading '/'. */
			do {
				p[o++] = p[i++];
			} while (i < len && p[i] != '/');
		}
	}
	return o;
}

struct canon {
	char	*buf;
	size_t	 len, size;
};

static int
put(struct canon *c, const char *s, size_t n)
{
	if (c->size - c->len <= n)
		return -1;
	memcpy(c->buf + c->len, s, n);
	c->len += n;
	c->buf[c->len] = '\0';
	return 0;
}

/* Path or query bytes: spaces and bytes above 0x7e percent-encoded. */
static int
put_encoded(struct canon *c, const char *s, size_t n)
{
	static const char	 hex[] = "0123456789ABCDEF";
	char			 e[3];
	size_t			 i;
	unsigned char		 b;

	for (i = 0; i < n; i++) {
		b = (unsigned char)s[i];
		if (b > 0x20 && b < 0x7f) {
			if (put(c, (const char *)&b, 1) == -1)
				return -1;
			continue;
		}
		e[0] = '%';
		e[1] = hex[b >> 4];
		e[2] = hex[b & 0x0f];
		if (put(c, e, 3) == -1)
			return -1;
	}
	return 0;
}

enum nv_err
nv_url_parse(const char *s, size_t len, struct nv_url *u)
{
	char		 path[NV_URL_MAX];
	struct canon	 c;
	const char	*auth, *port = NULL, *rest, *end = s + len, *sep;
	size_t		 sl, alen, hlen, plen = 0, pathlen, i;
	enum nv_err	 e;
	char		 pbuf[8];

	memset(u, 0, sizeof(*u));
	if (len == 0 || len >= NV_URL_MAX)
		return NV_URL_EMPTY;
	/* The URL ends up in a request line: no CR, LF or NUL, not even in
	 * the fragment that is dropped. */
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return NV_URL_CHARS;

	if ((sl = scheme_len(s, len)) == 0)
		return NV_URL_RELATIVE;
	if (sl == 5 && strncasecmp(s, "https", 5) == 0)
		u->nu_https = 1;
	else if (sl != 4 || strncasecmp(s, "http", 4) != 0)
		return NV_URL_SCHEME;
	/* WHATWG takes "http:host" and "http:/host" too; only "//" is read. */
	if (len - sl - 1 < 2 || s[sl + 1] != '/' || s[sl + 2] != '/')
		return NV_URL_HOST;

	auth = s + sl + 3;
	for (rest = auth; rest < end && *rest != '/' && *rest != '?' &&
	    *rest != '#'; rest++)
		;
	alen = (size_t)(rest - auth);
	if (memchr(auth, '@', alen) != NULL)
		return NV_URL_USERINFO;
	if (memchr(auth, '\\', alen) != NULL)
		return NV_URL_HOST;

	if (alen > 0 && auth[0] == '[') {
		if ((sep = memchr(auth, ']', alen)) == NULL)
			return NV_URL_HOST;
		hlen = (size_t)(sep - auth) + 1;
		if (hlen < alen) {
			if (auth[hlen] != ':')
				return NV_URL_HOST;
			port = auth + hlen + 1;
			plen = alen - hlen - 1;
		}
		if ((e = parse_ipv6(auth + 1, hlen - 2, u)) != NV_OK &&
		    e != NV_ADDR_NOT_PUBLIC)
			return e;
	} else {
		hlen = alen;
		if ((sep = memrchr(auth, ':', alen)) != NULL) {
			hlen = (size_t)(sep - auth);
			port = sep + 1;
			plen = alen - hlen - 1;
		}
		if ((e = parse_host(auth, hlen, u)) != NV_OK &&
		    e != NV_ADDR_NOT_PUBLIC)
			return e;
	}
	/* A malformed port is the louder fault than a private address. */
	if (parse_port(port, plen, u->nu_https, &u->nu_port) != NV_OK)
		return NV_URL_PORT;
	if (e != NV_OK)
		return e;

	c.buf = u->nu_canon;
	c.size = sizeof(u->nu_canon);
	c.len = 0;
	if (put(&c, u->nu_https ? "https://" : "http://",
	    u->nu_https ? 8 : 7) == -1)
		return NV_URL_EMPTY;
	if (u->nu_kind == NV_HOST_IPV6 && put(&c, "[", 1) == -1)
		return NV_URL_EMPTY;
	if (put(&c, u->nu_host, strlen(u->nu_host)) == -1)
		return NV_URL_EMPTY;
	if (u->nu_kind == NV_HOST_IPV6 && put(&c, "]", 1) == -1)
		return NV_URL_EMPTY;
	if (u->nu_port != (u->nu_https ? 443 : 80)) {
		snprintf(pbuf, sizeof(pbuf), ":%u", (unsigned)u->nu_port);
		if (put(&c, pbuf, strlen(pbuf)) == -1)
			return NV_URL_EMPTY;
	}
	u->nu_path_off = c.len;

	for (i = 0; rest + i < end && rest[i] != '?' && rest[i] != '#'; i++)
		;
	pathlen = i;
	if (pathlen == 0) {
		path[0] = '/';
		pathlen = 1;
	} else {
		memcpy(path, rest, pathlen);
		pathlen = remove_dot_segments(path, pathlen);
	}
	if (put_encoded(&c, path, pathlen) == -1)
		return NV_URL_EMPTY;
	rest += i;
	if (rest < end && *rest == '?') {
		for (i = 0; rest + i < end && rest[i] != '#'; i++)
			;
		if (put_encoded(&c, rest, i) == -1)
			return NV_URL_EMPTY;
	}
	return NV_OK;
}

enum nv_err
nv_url_resolve(const struct nv_url *base, const char *loc, size_t len,
    struct nv_url *u)
{
	char		 t[NV_URL_MAX];
	struct canon	 c;
	const char	*bpath, *bq, *rq = NULL;
	size_t		 i, rplen, rqlen = 0, bplen, bqlen, slash;

	memset(u, 0, sizeof(*u));
	for (i = 0; i < len; i++)
		if ((unsigned char)loc[i] < 0x20 || loc[i] == 0x7f)
			return NV_URL_CHARS;
	/* The fragment never leaves here. */
	for (i = 0; i < len && loc[i] != '#'; i++)
		;
	len = i;
	if (scheme_len(loc, len) != 0)
		return nv_url_parse(loc, len, u);

	c.buf = t;
	c.size = sizeof(t);
	c.len = 0;
	if (len >= 2 && loc[0] == '/' && loc[1] == '/') {
		if (put(&c, base->nu_canon, base->nu_https ? 6 : 5) == -1 ||
		    put(&c, loc, len) == -1)
			return NV_URL_EMPTY;
		return nv_url_parse(t, c.len, u);
	}

	bpath = base->nu_canon + base->nu_path_off;
	bq = strchr(bpath, '?');
	bplen = bq != NULL ? (size_t)(bq - bpath) : strlen(bpath);
	bqlen = bq != NULL ? strlen(bq) : 0;
	for (rplen = 0; rplen < len && loc[rplen] != '?'; rplen++)
		;
	if (rplen < len) {
		rq = loc + rplen;
		rqlen = len - rplen;
	}

	/* nv_url_parse() removes the dot segments of every path it reads. */
	if (put(&c, base->nu_canon, base->nu_path_off) == -1)
		return NV_URL_EMPTY;
	if (rplen == 0) {
		if (put(&c, bpath, bplen) == -1)
			return NV_URL_EMPTY;
		if (rq == NULL) {
			rq = bq;
			rqlen = bqlen;
		}
	} else if (loc[0] == '/') {
		if (put(&c, loc, rplen) == -1)
			return NV_URL_EMPTY;
	} else {
		/* Merge: the base path up to its last '/', never empty. */
		for (slash = bplen; slash > 0 && bpath[slash - 1] != '/';
		    slash--)
			;
		if (slash == 0) {
			if (put(&c, "/", 1) == -1)
				return NV_URL_EMPTY;
		} else if (put(&c, bpath, slash) == -1)
			return NV_URL_EMPTY;
		if (put(&c, loc, rplen) == -1)
			return NV_URL_EMPTY;
	}
	if (rq != NULL && put(&c, rq, rqlen) == -1)
		return NV_URL_EMPTY;
	return nv_url_parse(t, c.len, u);
}
