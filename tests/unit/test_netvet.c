/*
 * common/netvet.c: every range of PROTOCOL.md 8 at its edges, the numeric
 * spellings of an address, and each refusal of the URL parser.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netvet.h"

static struct nv_url	u, base;

static int
v4(const char *text)
{
	struct in_addr	 a;

	ck_assert_int_eq(inet_pton(AF_INET, text, &a), 1);
	return nv_ipv4_public((const uint8_t *)&a);
}

static int
v6(const char *text, uint32_t scope)
{
	struct in6_addr	 a;

	ck_assert_int_eq(inet_pton(AF_INET6, text, &a), 1);
	return nv_ipv6_public(a.s6_addr, scope);
}

static enum nv_err
parse(const char *s)
{
	return nv_url_parse(s, strlen(s), &u);
}

/* Parses, and canonicalises to want. */
static void
canon_is(const char *s, const char *want)
{
	enum nv_err	 e = parse(s);

	ck_assert_msg(e == NV_OK, "%s: %s", s, nv_err_to_string(e));
	ck_assert_str_eq(u.nu_canon, want);
}

static void
refused(const char *s, enum nv_err want)
{
	enum nv_err	 e = parse(s);

	ck_assert_msg(e == want, "%s: got \"%s\", want \"%s\"", s,
	    nv_err_to_string(e), nv_err_to_string(want));
}

/* s with n copies of c spliced in at the '*'. */
static char *
fill(const char *s, char c, size_t n)
{
	const char	*star = strchr(s, '*');
	size_t		 pre = (size_t)(star - s);
	size_t		 post = strlen(star + 1);
	char		*r;

	r = malloc(pre + n + post + 1);
	ck_assert_ptr_nonnull(r);
	memcpy(r, s, pre);
	memset(r + pre, c, n);
	memcpy(r + pre + n, star + 1, post + 1);
	return r;
}

START_TEST(ipv4_ranges)
{
	static const struct {
		/* A range's ends, and its public neighbours or NULL. */
		const char	*lo, *hi, *below, *above;
	} r[] = {
		{ "0.0.0.0", "0.255.255.255", NULL, "1.0.0.0" },
		{ "10.0.0.0", "10.255.255.255", "9.255.255.255",
		    "11.0.0.0" },
		{ "127.0.0.0", "127.255.255.255", "126.255.255.255",
		    "128.0.0.0" },
		{ "100.64.0.0", "100.127.255.255", "100.63.255.255",
		    "100.128.0.0" },
		{ "169.254.0.0", "169.254.255.255", "169.253.255.255",
		    "169.255.0.0" },
		{ "172.16.0.0", "172.31.255.255", "172.15.255.255",
		    "172.32.0.0" },
		{ "192.168.0.0", "192.168.255.255", "192.167.255.255",
		    "192.169.0.0" },
		{ "192.0.0.0", "192.0.0.255", "191.255.255.255", "192.0.1.0" },
		{ "192.0.2.0", "192.0.2.255", "192.0.1.255", "192.0.3.0" },
		{ "192.88.99.0", "192.88.99.255", "192.88.98.255",
		    "192.88.100.0" },
		{ "198.18.0.0", "198.19.255.255", "198.17.255.255",
		    "198.20.0.0" },
		{ "198.51.100.0", "198.51.100.255", "198.51.99.255",
		    "198.51.101.0" },
		{ "203.0.113.0", "203.0.113.255", "203.0.112.255",
		    "203.0.114.0" },
		{ "224.0.0.0", "255.255.255.255", "223.255.255.255", NULL },
	};
	size_t	 i;

	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		ck_assert_msg(!v4(r[i].lo), "%s", r[i].lo);
		ck_assert_msg(!v4(r[i].hi), "%s", r[i].hi);
		if (r[i].below != NULL)
			ck_assert_msg(v4(r[i].below), "%s", r[i].below);
		if (r[i].above != NULL)
			ck_assert_msg(v4(r[i].above), "%s", r[i].above);
	}
	ck_assert(v4("8.8.8.8"));
	ck_assert(v4("1.1.1.1"));
	ck_assert(!v4("239.255.255.250"));
	ck_assert(!v4("240.0.0.1"));
}
END_TEST

START_TEST(ipv6_ranges)
{
	static const char	*not_public[] = {
		"::", "::1", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1",
		"64:ff9b::1", "::a00:1", "100::1", "1fff:ffff::1",
		"3fff::1", "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
		"4000::1", "2002::1", "2002:808:808::1",
		"2001::1", "2001:0:ffff:ffff:ffff:ffff:ffff:ffff",
		"2001:2::1", "2001:2:ffff::1",
		"2001:db8::1", "2001:db8:ffff::1",
		"2001:10::1", "2001:1f::1", "2001:1f:ffff::1",
		"2001:20::1", "2001:2f::1", "2001:2f:ffff::1",
		"::ffff:10.0.0.1", "::ffff:127.0.0.1", "::ffff:0.0.0.0",
		"::ffff:192.168.1.1", "::ffff:224.0.0.1",
	};
	static const char	*public[] = {
		"2000::", "2000::1", "2001:1::1", "2001:3::1", "2001:f::1",
		"2001:30::1", "2001:db7::1", "2001:db9::1", "2001:4860::8888",
		"2003::1", "2a00:1450::1", "3ffe::1",
		"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
		"2001:4860:4860::8888", "::ffff:8.8.8.8",
	};
	size_t			 i;

	for (i = 0; i < sizeof(not_public) / sizeof(not_public[0]); i++)
		ck_assert_msg(!v6(not_public[i], 0), "%s", not_public[i]);
	for (i = 0; i < sizeof(public) / sizeof(public[0]); i++) {
		ck_assert_msg(v6(public[i], 0), "%s", public[i]);
		/* A zone index makes anything local. */
		ck_assert_msg(!v6(public[i], 1), "%s%%1", public[i]);
	}
	ck_assert(!v6("fe80::1", 2));
}
END_TEST

START_TEST(sockaddrs)
{
	struct sockaddr_in	 sin;
	struct sockaddr_in6	 sin6;
	struct sockaddr		 sa;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	ck_assert_int_eq(inet_pton(AF_INET, "8.8.8.8", &sin.sin_addr), 1);
	ck_assert(nv_sockaddr_public((struct sockaddr *)&sin, sizeof(sin)));
	ck_assert(!nv_sockaddr_public((struct sockaddr *)&sin,
	    sizeof(sin) - 1));
	ck_assert_int_eq(inet_pton(AF_INET, "10.0.0.1", &sin.sin_addr), 1);
	ck_assert(!nv_sockaddr_public((struct sockaddr *)&sin, sizeof(sin)));

	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	ck_assert_int_eq(inet_pton(AF_INET6, "2001:4860::8888",
	    &sin6.sin6_addr), 1);
	ck_assert(nv_sockaddr_public((struct sockaddr *)&sin6,
	    sizeof(sin6)));
	ck_assert(!nv_sockaddr_public((struct sockaddr *)&sin6,
	    sizeof(sin6) - 1));
	sin6.sin6_scope_id = 3;
	ck_assert(!nv_sockaddr_public((struct sockaddr *)&sin6,
	    sizeof(sin6)));
	ck_assert_int_eq(inet_pton(AF_INET6, "fe80::1", &sin6.sin6_addr), 1);
	ck_assert(!nv_sockaddr_public((struct sockaddr *)&sin6,
	    sizeof(sin6)));
	sin6.sin6_scope_id = 0;
	ck_assert(!nv_sockaddr_public((struct sockaddr *)&sin6,
	    sizeof(sin6)));

	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNIX;
	ck_assert(!nv_sockaddr_public(&sa, sizeof(sa)));
	ck_assert(!nv_sockaddr_public(NULL, 0));
}
END_TEST

START_TEST(ipv4_spellings)
{
	/* PROTOCOL.md 8's spellings of loopback: each one refused. */
	static const char	*lo[] = {
		"http://2130706433/", "http://0x7f000001/",
		"http://0X7F000001/", "http://0177.0.0.1/", "http://127.1/",
		"http://127.0.1/", "http://0x7f.1/", "http://0x7f.0.0.0x1/",
		"http://0177.0.0x0.01/", "http://127.0.0.1./",
		"http://017700000001/", "http://0x00000000007f000001/",
		"http://%31%32%37.0.0.1/", "http://%30x7f000001/",
		"http://0/", "http://0.0.0.0/", "http://10.1/",
		"http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/",
	};
	size_t			 i;

	for (i = 0; i < sizeof(lo) / sizeof(lo[0]); i++) {
		refused(lo[i], NV_ADDR_NOT_PUBLIC);
		ck_assert_str_eq(u.nu_canon, "");
	}
	/* The refused address is there for the log. */
	refused("http://0x7f.1/", NV_ADDR_NOT_PUBLIC);
	ck_assert_int_eq(u.nu_kind, NV_HOST_IPV4);
	ck_assert_str_eq(u.nu_host, "127.0.0.1");
	refused("http://[::ffff:7f00:1]/", NV_ADDR_NOT_PUBLIC);
	ck_assert_int_eq(u.nu_kind, NV_HOST_IPV6);
	ck_assert_str_eq(u.nu_host, "::ffff:127.0.0.1");
	/* The same spellings of a public address pass, canonical. */
	canon_is("http://134744072/", "http://8.8.8.8/");
	ck_assert_int_eq(u.nu_kind, NV_HOST_IPV4);
	ck_assert_str_eq(u.nu_host, "8.8.8.8");
	ck_assert_mem_eq(u.nu_addr, "\x08\x08\x08\x08", 4);
	canon_is("http://0x08080808/", "http://8.8.8.8/");
	canon_is("http://0X8080808/", "http://8.8.8.8/");
	canon_is("http://010.010.010.010/", "http://8.8.8.8/");
	canon_is("http://8.526344/", "http://8.8.8.8/");
	canon_is("http://8.8.2056/", "http://8.8.8.8/");
	canon_is("http://0x8.010.8.0x08/", "http://8.8.8.8/");
	canon_is("http://8.8.8.8./", "http://8.8.8.8/");
	canon_is("http://%38.8.8.8/", "http://8.8.8.8/");
	canon_is("http://0000000010.8.8.8/", "http://8.8.8.8/");
	canon_is("http://223.255.255.255/", "http://223.255.255.255/");
	canon_is("http://4294967295.com/", "http://4294967295.com/");
	refused("http://4294967295/", NV_ADDR_NOT_PUBLIC);
	refused("http://224.0.0.0/", NV_ADDR_NOT_PUBLIC);
}
END_TEST

START_TEST(ipv4_malformed)
{
	static const char	*bad[] = {
		"http://256.1.1.1/", "http://1.256.1.1/", "http://1.1.1.256/",
		"http://1.1.65536/", "http://1.16777216/",
		"http://4294967296/", "http://0x100000000/",
		"http://0x1ffffffff/", "http://1.2.3.4.5/", "http://0x/",
		"http://09/", "http://08.8.8.8/", "http://1..2/",
		"http://.1.2.3/", "http://1.2.3.4../", "http://foo.09/",
		"http://foo.1/", "http://a.0x/", "http://0x.1/",
		"http://0xg.1/",
		"http://99999999999999999999999/",
	};
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused(bad[i], NV_URL_HOST);
	/* Not ending in a number: a name, left to the resolver. */
	canon_is("http://0xg/", "http://0xg/");
	canon_is("http://1.2.3.4a/", "http://1.2.3.4a/");
	canon_is("http://1e3/", "http://1e3/");
	canon_is("http://1.2.3.x4/", "http://1.2.3.x4/");
	ck_assert_int_eq(u.nu_kind, NV_HOST_NAME);
}
END_TEST

START_TEST(ipv6_literals)
{
	canon_is("http://[2001:4860::8888]/", "http://[2001:4860::8888]/");
	ck_assert_int_eq(u.nu_kind, NV_HOST_IPV6);
	ck_assert_str_eq(u.nu_host, "2001:4860::8888");
	ck_assert_mem_eq(u.nu_addr,
	    "\x20\x01\x48\x60\0\0\0\0\0\0\0\0\0\0\x88\x88", 16);
	canon_is("https://[2001:4860:0000:0000:0000:0000:0000:8888]:8443/x",
	    "https://[2001:4860::8888]:8443/x");
	canon_is("http://[2001:4860:0:0:0:0:0:8888]:80",
	    "http://[2001:4860::8888]/");
	canon_is("http://[2A00:1450::ABCD]/", "http://[2a00:1450::abcd]/");
	canon_is("http://[::ffff:8.8.8.8]/", "http://[::ffff:8.8.8.8]/");
	canon_is("http://[::ffff:808:808]/", "http://[::ffff:8.8.8.8]/");
	refused("http://[::1]/", NV_ADDR_NOT_PUBLIC);
	refused("http://[::]/", NV_ADDR_NOT_PUBLIC);
	refused("http://[fe80::1]/", NV_ADDR_NOT_PUBLIC);
	refused("http://[2001::1]/", NV_ADDR_NOT_PUBLIC);
	refused("http://[2001:db8::1]/", NV_ADDR_NOT_PUBLIC);
	refused("http://[::ffff:10.0.0.1]/", NV_ADDR_NOT_PUBLIC);
	refused("http://[fe80::1%25eth0]/", NV_URL_ZONE);
	refused("http://[fe80::1%eth0]/", NV_URL_ZONE);
	refused("http://[2001:4860::8888%251]/", NV_URL_ZONE);
	refused("http://[]/", NV_URL_HOST);
	refused("http://[2001:4860::8888/", NV_URL_HOST);
	refused("http://[2001:4860::8888]x/", NV_URL_HOST);
	refused("http://[2001:4860::88888]/", NV_URL_HOST);
	refused("http://[8.8.8.8]/", NV_URL_HOST);
	refused("http://[example.com]/", NV_URL_HOST);
	refused("http://2001:4860::8888/", NV_URL_HOST);
	refused("http://[2001:4860::8888]:0/", NV_URL_PORT);
	refused("http://[1:2:3:4:5:6:7:8:9]/", NV_URL_HOST);
	/* The longest IPv6 text is 45 chars; one more is refused. */
	canon_is("http://[2001:4860:0000:0000:0000:0000:255.255.255.255]/",
	    "http://[2001:4860::ffff:ffff]/");
	refused("http://[02001:4860:0000:0000:0000:0000:255.255.255.255]/",
	    NV_URL_HOST);
	refused("http://[0:0:0:0:0:ffff:255.255.255.255:0]/", NV_URL_HOST);
}
END_TEST

START_TEST(schemes)
{
	canon_is("http://example.com", "http://example.com/");
	ck_assert(!u.nu_https);
	ck_assert_uint_eq(u.nu_port, 80);
	canon_is("https://example.com", "https://example.com/");
	ck_assert(u.nu_https);
	ck_assert_uint_eq(u.nu_port, 443);
	canon_is("HTTP://EXAMPLE.COM/A", "http://example.com/A");
	canon_is("HtTpS://Example.Com/", "https://example.com/");
	refused("ftp://example.com/", NV_URL_SCHEME);
	refused("file:///etc/passwd", NV_URL_SCHEME);
	refused("javascript:alert(1)", NV_URL_SCHEME);
	refused("data:text/plain,x", NV_URL_SCHEME);
	refused("httpx://example.com/", NV_URL_SCHEME);
	refused("http+unix://example.com/", NV_URL_SCHEME);
	refused("//example.com/", NV_URL_RELATIVE);
	refused("/path", NV_URL_RELATIVE);
	refused("example.com/", NV_URL_RELATIVE);
	refused("1http://example.com/", NV_URL_RELATIVE);
	refused(":", NV_URL_RELATIVE);
	refused("http:example.com", NV_URL_HOST);
	refused("http:/example.com", NV_URL_HOST);
	refused("http:", NV_URL_HOST);
	refused("http://", NV_URL_HOST);
	refused("http:///path", NV_URL_HOST);
	refused("http:\\\\example.com\\", NV_URL_HOST);
}
END_TEST

START_TEST(userinfo)
{
	refused("http://user@example.com/", NV_URL_USERINFO);
	refused("http://user:pass@example.com/", NV_URL_USERINFO);
	refused("http://@example.com/", NV_URL_USERINFO);
	refused("http://:@example.com/", NV_URL_USERINFO);
	refused("http://example.com@127.0.0.1/", NV_URL_USERINFO);
	refused("http://a%40b@example.com/", NV_URL_USERINFO);
	/* An '@' after the authority is path. */
	canon_is("http://example.com/@x", "http://example.com/@x");
	canon_is("http://example.com?@x", "http://example.com/?@x");
	canon_is("http://example.com#@x", "http://example.com/");
	/* WHATWG would cut at the backslash; neither reading is taken. */
	refused("http://evil.com\\@good.com/", NV_URL_USERINFO);
	refused("http://evil.com\\.good.com/", NV_URL_HOST);
	refused("http://evil.com\\/", NV_URL_HOST);
}
END_TEST

START_TEST(ports)
{
	refused("http://example.com:0/", NV_URL_PORT);
	refused("http://example.com:00/", NV_URL_PORT);
	canon_is("http://example.com:1/", "http://example.com:1/");
	ck_assert_uint_eq(u.nu_port, 1);
	canon_is("http://example.com:65535/", "http://example.com:65535/");
	ck_assert_uint_eq(u.nu_port, 65535);
	refused("http://example.com:65536/", NV_URL_PORT);
	refused("http://example.com:99999999999999999999/", NV_URL_PORT);
	refused("http://example.com:-1/", NV_URL_PORT);
	refused("http://example.com:+80/", NV_URL_PORT);
	refused("http://example.com:8a/", NV_URL_PORT);
	refused("http://example.com: 80/", NV_URL_PORT);
	refused("http://example.com:80:80/", NV_URL_HOST);
	/* Default ports left out, others kept, empty means default. */
	canon_is("http://example.com:80/", "http://example.com/");
	canon_is("https://example.com:443/", "https://example.com/");
	canon_is("http://example.com:443/", "http://example.com:443/");
	ck_assert_uint_eq(u.nu_port, 443);
	canon_is("https://example.com:80/", "https://example.com:80/");
	canon_is("http://example.com:/", "http://example.com/");
	ck_assert_uint_eq(u.nu_port, 80);
	canon_is("https://example.com:", "https://example.com/");
	ck_assert_uint_eq(u.nu_port, 443);
	canon_is("http://example.com:0080/", "http://example.com/");
	canon_is("http://example.com:08080?q", "http://example.com:8080/?q");
	ck_assert_uint_eq(u.nu_path_off, strlen("http://example.com:8080"));
	/* A bad port outranks a private address. */
	refused("http://127.0.0.1:0/", NV_URL_PORT);
	refused("http://127.0.0.1:8080/", NV_ADDR_NOT_PUBLIC);
}
END_TEST

START_TEST(host_lengths)
{
	char	*s, *label63, *label64, *name;
	size_t	 i;

	label63 = fill("http://*.com/", 'a', 63);
	canon_is(label63, label63);
	label64 = fill("http://*.com/", 'a', 64);
	refused(label64, NV_URL_HOST);
	free(label64);
	free(label63);

	/* 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 */
	name = malloc(300);
	ck_assert_ptr_nonnull(name);
	memset(name, 'b', 253);
	for (i = 63; i < 253; i += 64)
		name[i] = '.';
	name[253] = '\0';
	ck_assert_uint_eq(strlen(name), 253);
	s = malloc(400);
	ck_assert_ptr_nonnull(s);
	snprintf(s, 400, "http://%s/", name);
	canon_is(s, s);
	ck_assert_uint_eq(strlen(u.nu_host), NV_HOST_MAX);
	/* The trailing dot does not count. */
	snprintf(s, 400, "http://%s./", name);
	ck_assert_int_eq(parse(s), NV_OK);
	ck_assert_uint_eq(strlen(u.nu_host), NV_HOST_MAX);
	snprintf(s, 400, "http://%s.x/", name);
	refused(s, NV_URL_HOST);
	snprintf(s, 400, "http://%sb/", name);
	refused(s, NV_URL_HOST);
	snprintf(s, 400, "http://%s../", name);
	refused(s, NV_URL_HOST);
	free(s);
	free(name);
}
END_TEST

START_TEST(host_names)
{
	canon_is("http://Example.COM./", "http://example.com/");
	ck_assert_int_eq(u.nu_kind, NV_HOST_NAME);
	ck_assert_str_eq(u.nu_host, "example.com");
	canon_is("http://a_b-c.example/", "http://a_b-c.example/");
	canon_is("http://localhost/", "http://localhost/");
	canon_is("http://%65xample.com/", "http://example.com/");
	canon_is("http://a/", "http://a/");
	refused("http://./", NV_URL_HOST);
	refused("http://../", NV_URL_HOST);
	refused("http://a..b/", NV_URL_HOST);
	refused("http://.a/", NV_URL_HOST);
	refused("http://exa mple.com/", NV_URL_HOST);
	refused("http://ex%20ample.com/", NV_URL_HOST);
	refused("http://ex%00ample.com/", NV_URL_HOST);
	refused("http://ex%2fample.com/", NV_URL_HOST);
	refused("http://ex%25ample.com/", NV_URL_HOST);
	refused("http://ex%zzample.com/", NV_URL_HOST);
	refused("http://example.com%2/", NV_URL_HOST);
	refused("http://example.com%/", NV_URL_HOST);
	refused("http://b\xc3\xbc" "cher.de/", NV_URL_HOST);
	refused("http://b%C3%BCcher.de/", NV_URL_HOST);
	refused("http://xn--bcher-kva.de*/", NV_URL_HOST);
	canon_is("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/");
	refused("http://[example]x.com/", NV_URL_HOST);
	refused("http://exa]mple.com/", NV_URL_HOST);
}
END_TEST

START_TEST(paths)
{
	canon_is("http://example.com", "http://example.com/");
	ck_assert_uint_eq(u.nu_path_off, strlen("http://example.com"));
	canon_is("http://example.com?q=1", "http://example.com/?q=1");
	canon_is("http://example.com/?", "http://example.com/?");
	canon_is("http://example.com/a b?c d",
	    "http://example.com/a%20b?c%20d");
	canon_is("http://example.com/\xc3\xa9?\xc3\xa9",
	    "http://example.com/%C3%A9?%C3%A9");
	canon_is("http://example.com/\xff", "http://example.com/%FF");
	canon_is("http://example.com/%41%zz", "http://example.com/%41%zz");
	canon_is("http://example.com/a\\b", "http://example.com/a\\b");
	canon_is("http://example.com/a/./b/../c", "http://example.com/a/c");
	canon_is("http://example.com/../../x", "http://example.com/x");
	canon_is("http://example.com/a/..", "http://example.com/");
	canon_is("http://example.com/a/.", "http://example.com/a/");
	canon_is("http://example.com/a/..?x/../y",
	    "http://example.com/?x/../y");
	canon_is("http://example.com/..a/.b/", "http://example.com/..a/.b/");
	canon_is("http://example.com/p#frag", "http://example.com/p");
	canon_is("http://example.com/p?q#frag", "http://example.com/p?q");
	canon_is("http://example.com#", "http://example.com/");
	canon_is("http://example.com/p?q#f?g#h", "http://example.com/p?q");
	canon_is("http://example.com/~!$&'()*+,;=:@[]{}|^`\"<>",
	    "http://example.com/~!$&'()*+,;=:@[]{}|^`\"<>");
}
END_TEST

START_TEST(chars)
{
	static const char	*bad[] = {
		"http://example.com/\r\nX-Injected: 1",
		"http://example.com/\n", "http://example.com/a\tb",
		"http://example.com/\x7f", "http://example.com/\x01",
		"http://example.com/#\n", "http://example.com/?\x1f",
		"http://exa\nmple.com/", "\thttp://example.com/",
		"http://example.com/\x1b[0m",
	};
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused(bad[i], NV_URL_CHARS);
	ck_assert_int_eq(nv_url_parse("http://a/\0b", 11, &u), NV_URL_CHARS);
	ck_assert_int_eq(nv_url_parse("http://a\0/", 10, &u), NV_URL_CHARS);
	/* Spaces around the URL are not trimmed here: the caller's job. */
	refused(" http://example.com/", NV_URL_RELATIVE);
	canon_is("http://example.com/ ", "http://example.com/%20");
}
END_TEST

START_TEST(lengths)
{
	char	*s;
	size_t	 pre = strlen("http://a/");

	ck_assert_int_eq(nv_url_parse("", 0, &u), NV_URL_EMPTY);
	/* The longest input: NV_URL_MAX - 1 bytes. */
	s = fill("http://a/*", 'x', NV_URL_MAX - 1 - pre);
	ck_assert_uint_eq(strlen(s), NV_URL_MAX - 1);
	canon_is(s, s);
	free(s);
	s = fill("http://a/*", 'x', NV_URL_MAX - pre);
	refused(s, NV_URL_EMPTY);
	free(s);
	/* Encoding that would pass the bound. */
	s = fill("http://a/*", ' ', (NV_URL_MAX - 1 - pre) / 3);
	ck_assert_int_eq(parse(s), NV_OK);
	ck_assert_uint_eq(strlen(u.nu_canon), pre + (NV_URL_MAX - 1 - pre) /
	    3 * 3);
	free(s);
	s = fill("http://a/*", ' ', (NV_URL_MAX - 1 - pre) / 3 + 1);
	refused(s, NV_URL_EMPTY);
	free(s);
}
END_TEST

START_TEST(err_strings)
{
	enum nv_err	 e;
	const char	*s;

	ck_assert_str_eq(nv_err_to_string(NV_ADDR_NOT_PUBLIC),
	    "address is not public");
	for (e = NV_OK; e <= NV_ADDR_NOT_PUBLIC; e++) {
		s = nv_err_to_string(e);
		ck_assert_ptr_nonnull(s);
		ck_assert(s[0] >= 'a' && s[0] <= 'z');
		ck_assert_str_ne(s, "unknown error");
	}
	ck_assert_str_eq(nv_err_to_string((enum nv_err)99), "unknown error");
}
END_TEST

static void
resolves(const char *loc, const char *want)
{
	enum nv_err	 e;

	e = nv_url_resolve(&base, loc, strlen(loc), &u);
	ck_assert_msg(e == NV_OK, "%s: %s", loc, nv_err_to_string(e));
	ck_assert_msg(strcmp(u.nu_canon, want) == 0, "%s: %s, want %s", loc,
	    u.nu_canon, want);
}

START_TEST(resolve_rfc3986)
{
	/* RFC 3986 5.4.1 and 5.4.2 (fragments dropped). */
	static const char	*t[][2] = {
		{ "g", "http://a/b/c/g" },
		{ "./g", "http://a/b/c/g" },
		{ "g/", "http://a/b/c/g/" },
		{ "/g", "http://a/g" },
		{ "//g", "http://g/" },
		{ "?y", "http://a/b/c/d;p?y" },
		{ "g?y", "http://a/b/c/g?y" },
		{ "#s", "http://a/b/c/d;p?q" },
		{ "g#s", "http://a/b/c/g" },
		{ "g?y#s", "http://a/b/c/g?y" },
		{ ";x", "http://a/b/c/;x" },
		{ "g;x", "http://a/b/c/g;x" },
		{ "g;x?y#s", "http://a/b/c/g;x?y" },
		{ "", "http://a/b/c/d;p?q" },
		{ ".", "http://a/b/c/" },
		{ "./", "http://a/b/c/" },
		{ "..", "http://a/b/" },
		{ "../", "http://a/b/" },
		{ "../g", "http://a/b/g" },
		{ "../..", "http://a/" },
		{ "../../", "http://a/" },
		{ "../../g", "http://a/g" },
		{ "../../../g", "http://a/g" },
		{ "../../../../g", "http://a/g" },
		{ "/./g", "http://a/g" },
		{ "/../g", "http://a/g" },
		{ "g.", "http://a/b/c/g." },
		{ ".g", "http://a/b/c/.g" },
		{ "g..", "http://a/b/c/g.." },
		{ "..g", "http://a/b/c/..g" },
		{ "./../g", "http://a/b/g" },
		{ "./g/.", "http://a/b/c/g/" },
		{ "g/./h", "http://a/b/c/g/h" },
		{ "g/../h", "http://a/b/c/h" },
		{ "g;x=1/./y", "http://a/b/c/g;x=1/y" },
		{ "g;x=1/../y", "http://a/b/c/y" },
		{ "g?y/./x", "http://a/b/c/g?y/./x" },
		{ "g?y/../x", "http://a/b/c/g?y/../x" },
		{ "g#s/./x", "http://a/b/c/g" },
		{ "g#s/../x", "http://a/b/c/g" },
	};
	size_t			 i;

	ck_assert_int_eq(parse("http://a/b/c/d;p?q#f"), NV_OK);
	base = u;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		resolves(t[i][0], t[i][1]);

	/* Strict (5.4.2): a scheme makes the reference absolute. */
	ck_assert_int_eq(nv_url_resolve(&base, "g:h", 3, &u), NV_URL_SCHEME);
	ck_assert_int_eq(nv_url_resolve(&base, "http:g", 6, &u),
	    NV_URL_HOST);
}
END_TEST

START_TEST(resolve_more)
{
	ck_assert_int_eq(parse("https://example.com:8443"), NV_OK);
	base = u;
	resolves("x", "https://example.com:8443/x");
	resolves("", "https://example.com:8443/");
	resolves("//other.example/p", "https://other.example/p");
	resolves("//other.example:8443", "https://other.example:8443/");
	resolves("http://Other.Example/p#f", "http://other.example/p");
	resolves("HTTPS://x.example", "https://x.example/");
	resolves("?a b", "https://example.com:8443/?a%20b");
	resolves("\xc3\xa9", "https://example.com:8443/%C3%A9");

	ck_assert_int_eq(nv_url_resolve(&base, "//127.0.0.1/", 12, &u),
	    NV_ADDR_NOT_PUBLIC);
	ck_assert_int_eq(nv_url_resolve(&base, "//u@x.example/", 14, &u),
	    NV_URL_USERINFO);
	ck_assert_int_eq(nv_url_resolve(&base, "http://[::1]/", 13, &u),
	    NV_ADDR_NOT_PUBLIC);
	ck_assert_int_eq(nv_url_resolve(&base, "ftp://x/", 8, &u),
	    NV_URL_SCHEME);
	ck_assert_int_eq(nv_url_resolve(&base, "x\r\nY: z", 7, &u),
	    NV_URL_CHARS);
	/* Control characters are refused even in the dropped fragment. */
	ck_assert_int_eq(nv_url_resolve(&base, "x#\n", 3, &u), NV_URL_CHARS);
	ck_assert_int_eq(nv_url_resolve(&base, "///x", 4, &u), NV_URL_HOST);

	/* The base's query stays only for an empty reference. */
	ck_assert_int_eq(parse("http://example.com/a/b?q"), NV_OK);
	base = u;
	resolves("#x", "http://example.com/a/b?q");
	resolves("c", "http://example.com/a/c");
	resolves("?", "http://example.com/a/b?");
	resolves("/", "http://example.com/");
}
END_TEST

START_TEST(resolve_lengths)
{
	char	*s;
	size_t	 pre = strlen("http://a/");

	ck_assert_int_eq(parse("http://a/"), NV_OK);
	base = u;
	s = fill("*", 'x', NV_URL_MAX - 1 - pre);
	ck_assert_int_eq(nv_url_resolve(&base, s, strlen(s), &u), NV_OK);
	ck_assert_uint_eq(strlen(u.nu_canon), NV_URL_MAX - 1);
	free(s);
	s = fill("*", 'x', NV_URL_MAX - pre);
	ck_assert_int_eq(nv_url_resolve(&base, s, strlen(s), &u),
	    NV_URL_EMPTY);
	free(s);
}
END_TEST

#if RTSANDBOX_TEST_SEAMS
START_TEST(seam_loopback)
{
	nv_test_loopback_public(1);
	ck_assert(v4("127.0.0.1"));
	ck_assert(v4("127.255.255.255"));
	ck_assert(v6("::ffff:127.0.0.1", 0));
	/* Only 127/8. */
	ck_assert(!v4("10.0.0.1"));
	ck_assert(!v4("0.0.0.0"));
	ck_assert(!v4("169.254.1.1"));
	ck_assert(!v6("::1", 0));
	ck_assert(!v6("::ffff:127.0.0.1", 1));
	canon_is("http://127.0.0.1:8080/x", "http://127.0.0.1:8080/x");
	canon_is("http://0x7f000001/", "http://127.0.0.1/");
	refused("http://[::1]/", NV_ADDR_NOT_PUBLIC);
	refused("http://10.0.0.1/", NV_ADDR_NOT_PUBLIC);

	nv_test_loopback_public(0);
	ck_assert(!v4("127.0.0.1"));
	refused("http://127.0.0.1/", NV_ADDR_NOT_PUBLIC);
}
END_TEST
#endif

static Suite *
netvet_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("netvet");

	tc = tcase_create("addresses");
	tcase_add_test(tc, ipv4_ranges);
	tcase_add_test(tc, ipv6_ranges);
	tcase_add_test(tc, sockaddrs);
	suite_add_tcase(s, tc);

	tc = tcase_create("hosts");
	tcase_add_test(tc, ipv4_spellings);
	tcase_add_test(tc, ipv4_malformed);
	tcase_add_test(tc, ipv6_literals);
	tcase_add_test(tc, host_lengths);
	tcase_add_test(tc, host_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("urls");
	tcase_add_test(tc, schemes);
	tcase_add_test(tc, userinfo);
	tcase_add_test(tc, ports);
	tcase_add_test(tc, paths);
	tcase_add_test(tc, chars);
	tcase_add_test(tc, lengths);
	tcase_add_test(tc, err_strings);
	suite_add_tcase(s, tc);

	tc = tcase_create("resolve");
	tcase_add_test(tc, resolve_rfc3986);
	tcase_add_test(tc, resolve_more);
	tcase_add_test(tc, resolve_lengths);
	suite_add_tcase(s, tc);

#if RTSANDBOX_TEST_SEAMS
	tc = tcase_create("seams");
	tcase_add_test(tc, seam_loopback);
	suite_add_tcase(s, tc);
#endif
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(netvet_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
