/*
 * common/netvet.c on arbitrary input: an accepted URL re-parses to itself,
 * its literal host is public, numeric hosts agree with inet_aton(), and the
 * address rules agree with a plain prefix table of PROTOCOL.md 8.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "netvet.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

static struct nv_url	u, again;

struct prefix {
	uint8_t		 p[16];
	unsigned	 bits;
};

static const struct prefix	v4_private[] = {
	{ { 0 }, 8 }, { { 10 }, 8 }, { { 127 }, 8 }, { { 100, 64 }, 10 },
	{ { 169, 254 }, 16 }, { { 172, 16 }, 12 }, { { 192, 168 }, 16 },
	{ { 192, 0, 0 }, 24 }, { { 192, 0, 2 }, 24 }, { { 192, 88, 99 }, 24 },
	{ { 198, 18 }, 15 }, { { 198, 51, 100 }, 24 }, { { 203, 0, 113 }, 24 },
	{ { 224 }, 3 },
};

static const struct prefix	v6_private[] = {
	{ { 0x20, 0x02 }, 16 }, { { 0x20, 0x01, 0x00, 0x00 }, 32 },
	{ { 0x20, 0x01, 0x00, 0x02 }, 32 }, { { 0x20, 0x01, 0x0d, 0xb8 }, 32 },
	{ { 0x20, 0x01, 0x00, 0x10 }, 28 }, { { 0x20, 0x01, 0x00, 0x20 }, 28 },
};

static int
in_prefix(const uint8_t *a, const struct prefix *p)
{
	unsigned	 i;

	for (i = 0; i < p->bits; i++)
		if (((a[i / 8] ^ p->p[i / 8]) >> (7 - i % 8)) & 1)
			return 0;
	return 1;
}

static int
ref_v4(const uint8_t *a)
{
	size_t	 i;

	for (i = 0; i < sizeof(v4_private) / sizeof(v4_private[0]); i++)
		if (in_prefix(a, &v4_private[i]))
			return 0;
	return 1;
}

static int
ref_v6(const uint8_t *a)
{
	static const uint8_t	 mapped[12] = { [10] = 0xff, [11] = 0xff };
	unsigned		 g0 = (unsigned)a[0] << 8 | a[1];
	size_t			 i;

	if (memcmp(a, mapped, 12) == 0)
		return ref_v4(a + 12);
	if (g0 < 0x2000 || g0 > 0x3ffe)
		return 0;
	for (i = 0; i < sizeof(v6_private) / sizeof(v6_private[0]); i++)
		if (in_prefix(a, &v6_private[i]))
			return 0;
	return 1;
}

static void
fuzz_addresses(const uint8_t *data, size_t size)
{
	struct sockaddr_in6	 sin6;

	if (size >= 4)
		CHECK(nv_ipv4_public(data) == ref_v4(data));
	if (size < 16)
		return;
	CHECK(nv_ipv6_public(data, 0) == ref_v6(data));
	CHECK(nv_ipv6_public(data, 1) == 0);
	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	memcpy(sin6.sin6_addr.s6_addr, data, 16);
	CHECK(nv_sockaddr_public((struct sockaddr *)&sin6, sizeof(sin6)) ==
	    ref_v6(data));
}

/* What every accepted URL must look like. */
static void
check_accepted(const struct nv_url *p)
{
	const char	*c = p->nu_canon;
	size_t		 len = strlen(c), i;
	struct in_addr	 a4;
	struct in6_addr	 a6;

	CHECK(len > 0 && len < NV_URL_MAX);
	CHECK(strncmp(c, p->nu_https ? "https://" : "http://",
	    p->nu_https ? 8 : 7) == 0);
	CHECK(p->nu_path_off < len && c[p->nu_path_off] == '/');
	CHECK(p->nu_port != 0);
	for (i = 0; i < len; i++)
		CHECK(c[i] > 0x20 && c[i] < 0x7f && c[i] != '#');
	CHECK(strlen(p->nu_host) > 0 && strlen(p->nu_host) <= NV_HOST_MAX);

	switch (p->nu_kind) {
	case NV_HOST_IPV4:
		CHECK(inet_pton(AF_INET, p->nu_host, &a4) == 1);
		CHECK(memcmp(&a4, p->nu_addr, 4) == 0);
		CHECK(nv_ipv4_public(p->nu_addr));
		break;
	case NV_HOST_IPV6:
		CHECK(inet_pton(AF_INET6, p->nu_host, &a6) == 1);
		CHECK(memcmp(&a6, p->nu_addr, 16) == 0);
		CHECK(nv_ipv6_public(p->nu_addr, 0));
		break;
	case NV_HOST_NAME:
		/* Nothing a resolver would read as a number. */
		CHECK(inet_aton(p->nu_host, &a4) == 0);
		for (i = 0; p->nu_host[i] != '\0'; i++)
			CHECK((p->nu_host[i] >= 'a' && p->nu_host[i] <= 'z') ||
			    (p->nu_host[i] >= '0' && p->nu_host[i] <= '9') ||
			    strchr("-_.", p->nu_host[i]) != NULL);
		break;
	default:
		abort();
	}

	/* Canonical means a fixed point. */
	CHECK(nv_url_parse(c, len, &again) == NV_OK);
	CHECK(strcmp(again.nu_canon, c) == 0);
	CHECK(strcmp(again.nu_host, p->nu_host) == 0);
	CHECK(again.nu_kind == p->nu_kind && again.nu_port == p->nu_port &&
	    again.nu_https == p->nu_https &&
	    again.nu_path_off == p->nu_path_off);
	CHECK(memcmp(again.nu_addr, p->nu_addr, 16) == 0);
}

/* The input as a host: numeric spellings must read as inet_aton() does. */
static void
fuzz_host(const uint8_t *data, size_t size)
{
	char		 url[300], host[256];
	struct in_addr	 a;
	enum nv_err	 e;
	size_t		 i;

	if (size == 0 || size >= sizeof(host))
		return;
	for (i = 0; i < size; i++)
		if (strchr("0123456789abcdefxABCDEFX.", data[i]) == NULL ||
		    data[i] == '\0')
			return;
	memcpy(host, data, size);
	host[size] = '\0';
	memcpy(url, "http://", 7);
	memcpy(url + 7, host, size);
	url[7 + size] = '/';
	e = nv_url_parse(url, 8 + size, &u);
	if (inet_aton(host, &a) == 1) {
		CHECK(e == NV_OK || e == NV_ADDR_NOT_PUBLIC);
		CHECK(u.nu_kind == NV_HOST_IPV4);
		CHECK(memcmp(&a, u.nu_addr, 4) == 0);
		CHECK((e == NV_OK) == nv_ipv4_public(u.nu_addr));
	} else if ((e == NV_OK || e == NV_ADDR_NOT_PUBLIC) &&
	    u.nu_kind == NV_HOST_IPV4) {
		/* Only the trailing dot that names may carry is extra. */
		CHECK(host[size - 1] == '.');
		host[size - 1] = '\0';
		CHECK(inet_aton(host, &a) == 1);
		CHECK(memcmp(&a, u.nu_addr, 4) == 0);
	}
	if (e == NV_OK)
		check_accepted(&u);
}

static void
fuzz_urls(const uint8_t *data, size_t size)
{
	static const char	*bases[] = {
		"http://a/b/c/d;p?q", "https://example.com:8443",
		"http://[2001:4860::8888]/x/", "http://8.8.8.8/a/b/",
	};
	struct nv_url		 b;
	const char		*s = (const char *)data;
	enum nv_err		 e;

	e = nv_url_parse(s, size, &u);
	if (e == NV_OK)
		check_accepted(&u);

	CHECK(nv_url_parse(bases[size % 4], strlen(bases[size % 4]), &b) ==
	    NV_OK);
	e = nv_url_resolve(&b, s, size, &u);
	if (e == NV_OK)
		check_accepted(&u);
	CHECK(nv_err_to_string(e) != NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_addresses(data, size);
	fuzz_host(data, size);
	fuzz_urls(data, size);
	return 0;
}
