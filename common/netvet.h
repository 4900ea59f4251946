/*
 * The controlled fetch's pure half (PROTOCOL.md 8): URL canonicalisation and
 * the classification of addresses as public or not.  Nothing here does I/O;
 * egress resolves names and connects, and asks these functions first.
 */
#ifndef RTSANDBOX_NETVET_H
#define RTSANDBOX_NETVET_H

#include <stddef.h>
#include <stdint.h>

#include "buildconf.h"

struct sockaddr;

/* Why a URL or an address was refused; NV_OK is 0. */
enum nv_err {
	NV_OK = 0,
	NV_URL_EMPTY,		/* empty, or it or its canonical form does
				 * not fit NV_URL_MAX */
	NV_URL_RELATIVE,	/* no scheme: not absolute */
	NV_URL_SCHEME,		/* not http or https */
	NV_URL_USERINFO,	/* user name or password */
	NV_URL_HOST,		/* missing or malformed host */
	NV_URL_PORT,		/* port not 1-65535 */
	NV_URL_CHARS,		/* a control character (0x00-0x1f, 0x7f)
				 * anywhere, fragment included; spaces and
				 * non-ASCII are encoded in path and query,
				 * NV_URL_HOST in the host */
	NV_URL_ZONE,		/* IPv6 literal with a zone index */
	NV_ADDR_NOT_PUBLIC,	/* a literal address that is not public */
};
const char	*nv_err_to_string(enum nv_err);

/* Host kinds after canonicalisation. */
enum nv_host {
	NV_HOST_NAME,		/* a DNS name, lowercased, no trailing dot */
	NV_HOST_IPV4,		/* canonical dotted quad */
	NV_HOST_IPV6,		/* canonical RFC 5952 text, without brackets */
};

/* nu_canon's size, NUL included; inputs of this length or more are refused. */
#define NV_URL_MAX	16384u
#define NV_HOST_MAX	253u

struct nv_url {
	int		 nu_https;		/* else http */
	enum nv_host	 nu_kind;
	char		 nu_host[NV_HOST_MAX + 1];
	uint16_t	 nu_port;		/* explicit or the scheme's */
	uint8_t		 nu_addr[16];		/* NV_HOST_IPV4: 4 bytes, IPV6: 16 */
	/* scheme://host[:port]/path?query, fragment dropped, path at least
	 * "/"; IPv6 hosts in brackets; the default port left out. */
	char		 nu_canon[NV_URL_MAX];
	/* Offset of the path (after the authority) in nu_canon. */
	size_t		 nu_path_off;
};

/*
 * Parse and canonicalise an absolute http(s) URL of len bytes (no NUL
 * inside).  The scheme and host are lowercased; numeric IPv4 spellings
 * (2130706433, 0x7f000001, 0177.0.0.1, 127.1, 127.0.1) become dotted quads
 * as inet_aton() reads them; IPv6 literals are expanded and re-printed;
 * the fragment is dropped; characters outside the printable ASCII range
 * in path and query are percent-encoded.  A literal address is vetted here
 * too: not public -> NV_ADDR_NOT_PUBLIC.  Names are left to the resolver.
 *
 * As the WHATWG URL standard does, a host outside brackets is
 * percent-decoded first, loses one trailing dot, and is an IPv4 address or
 * refused when its last label is a number ("1.2.3.4.5", "09"); dot segments
 * of the path are removed (RFC 3986 5.2.4).  Names are ASCII letters,
 * digits, '-' and '_' in labels of 1-63, at most NV_HOST_MAX in all: IDNs
 * must come in their xn-- form.  The result is a fixed point: nu_canon
 * parses to itself.  On NV_ADDR_NOT_PUBLIC, nu_kind, nu_host and nu_addr
 * name the refused address (for the log); nu_canon is empty.
 */
enum nv_err	 nv_url_parse(const char *s, size_t len, struct nv_url *);

/*
 * A redirect's location against the URL it came from: absolute, scheme-
 * relative ("//host/p"), absolute-path ("/p") and relative ("p", "../p",
 * "?q") references (RFC 3986 5.2), then nv_url_parse() on the result.
 * Strict: a reference with a scheme is absolute, so "http:g" is refused.
 * Control characters are refused in the whole reference, fragment included.
 */
enum nv_err	 nv_url_resolve(const struct nv_url *base, const char *loc,
		    size_t len, struct nv_url *);

/* Whether an address is public by the rules of PROTOCOL.md 8: 1 or 0. */
int		 nv_ipv4_public(const uint8_t a[4]);
/* scope_id non-zero is a zone index: never public.  IPv4-mapped addresses
 * (::ffff:a.b.c.d) go by their IPv4 rule. */
int		 nv_ipv6_public(const uint8_t a[16], uint32_t scope_id);
/* AF_INET or AF_INET6 socket address; any other family is not public. */
int		 nv_sockaddr_public(const struct sockaddr *, size_t len);

#if RTSANDBOX_TEST_SEAMS
/*
 * Test builds only (meson -Dtest_seams=true): let 127.0.0.0/8 count as
 * public so fixtures on loopback can stand in for the internet.  Release
 * builds do not have this function.
 */
void		 nv_test_loopback_public(int on);
#endif

#endif
