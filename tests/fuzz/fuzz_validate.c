/*
 * Every validator of common/validate.c on the same input, each checked
 * against a second, deliberately naive reading of PROTOCOL.md so that the
 * two must agree on every byte string the fuzzer finds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"
#include "validate.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

/*
 * Reference decoder: take the bits the lead byte announces, then refuse
 * what the value itself rules out.  Returns the sequence length or 0.
 */
static size_t
ref_next(const uint8_t *s, size_t len, uint32_t *cp)
{
	size_t		 n, k;
	uint32_t	 v;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		v = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		v = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		v = s[0] & 0x07;
	} else
		return 0;
	if (len < n)
		return 0;
	for (k = 1; k < n; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[k] & 0x3f);
	}
	if ((n == 2 && v < 0x80) || (n == 3 && v < 0x800) ||
	    (n == 4 && v < 0x10000))
		return 0;
	if ((v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff)
		return 0;
	*cp = v;
	return n;
}

/* Code points of s into cps (room for len), or -1 on invalid UTF-8. */
static long
ref_decode(const uint8_t *s, size_t len, uint32_t *cps)
{
	size_t	 i = 0, k;
	long	 count = 0;

	while (i < len) {
		if ((k = ref_next(s + i, len - i, &cps[count])) == 0)
			return -1;
		i += k;
		count++;
	}
	return count;
}

static size_t
ref_units(const uint32_t *cps, long n)
{
	size_t	 u = 0;
	long	 i;

	for (i = 0; i < n; i++)
		u += cps[i] >= 0x10000 ? 2 : 1;
	return u;
}

static int
in_set(uint8_t c, const char *set)
{
	return c != '\0' && strchr(set, c) != NULL;
}

#define LOWER	"abcdefghijklmnopqrstuvwxyz"
#define UPPER	"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define DIGIT	"0123456789"
#define WORD	LOWER UPPER DIGIT "_-"

/* first{1} rest{0,max-1} */
static int
ref_pattern(const uint8_t *s, size_t len, const char *first,
    const char *rest, size_t max)
{
	size_t	 i;

	if (len < 1 || len > max || !in_set(s[0], first))
		return 0;
	for (i = 1; i < len; i++)
		if (!in_set(s[i], rest))
			return 0;
	return 1;
}

static void
fuzz_utf8(const uint8_t *data, size_t size, const uint32_t *cps, long ncp)
{
	const char	*s = (const char *)data;
	size_t		 units, ru;
	int		 nul = memchr(data, 0, size) != NULL;

	if (ncp < 0) {
		CHECK(utf8_utf16_len(s, size, &units) == -1);
		CHECK(utf8_text_check(s, size, SIZE_MAX) == -1);
		return;
	}
	ru = ref_units(cps, ncp);
	CHECK(utf8_utf16_len(s, size, &units) == 0);
	CHECK(units == ru);
	CHECK(units >= (size + 3) / 4 && units <= size);
	CHECK(utf8_text_check(s, size, SIZE_MAX) == (nul ? -1 : 0));
	CHECK(utf8_text_check(s, size, units) == (nul ? -1 : 0));
	if (units > 0)
		CHECK(utf8_text_check(s, size, units - 1) == -1);
}

/* The run readers agree with a byte-at-a-time reading, from every start. */
static void
fuzz_json_runs(const uint8_t *data, size_t size)
{
	size_t	 at, i;

	for (at = 0; at < size && at < 16; at++) {
		for (i = at; i < size && data[i] >= 0x20 && data[i] != '"' &&
		    data[i] != '\\'; i++)
			;
		CHECK(json_string_run(data + at, size - at) == i - at);
		for (i = at; i < size && data[i] >= 0x20 && data[i] < 0x80 &&
		    data[i] != '"' && data[i] != '\\'; i++)
			;
		CHECK(json_ascii_run(data + at, size - at) == i - at);
	}
}

static void
fuzz_safe_name(const uint8_t *data, size_t size, const uint32_t *cps,
    long ncp)
{
	int	 want = 1;
	long	 i;

	if (ncp <= 0 || ref_units(cps, ncp) > SAFE_NAME_MAX)
		want = 0;
	else if ((size == 1 && data[0] == '.') ||
	    (size == 2 && data[0] == '.' && data[1] == '.'))
		want = 0;
	for (i = 0; want && i < ncp; i++)
		if (cps[i] == '/' || cps[i] == '\\' || cps[i] < 0x20 ||
		    (cps[i] >= 0x7f && cps[i] < 0xa0))
			want = 0;
	CHECK(valid_safe_name((const char *)data, size) == want);
}

static void
fuzz_b64(const uint8_t *data, size_t size)
{
	const char	*s = (const char *)data;
	long long	 n, m;
	uint8_t		*bin;
	char		*text;
	size_t		 tl;

	/* The input as base64 text. */
	n = b64_decoded_len(s, size);
	if (n >= 0) {
		CHECK(size % 4 == 0);
		CHECK((size_t)n <= size / 4 * 3);
		CHECK((size_t)n + 2 >= size / 4 * 3);
		bin = malloc((size_t)n + 1);
		CHECK(bin != NULL);
		CHECK(b64_decode(s, size, bin, (size_t)n) == n);
		if (n > 0)
			CHECK(b64_decode(s, size, bin, (size_t)n - 1) == -1);
		/* Strictness makes the text the one encoding of its bytes. */
		tl = b64_encoded_len((size_t)n);
		CHECK(tl == size);
		text = malloc(tl + 1);
		CHECK(text != NULL);
		CHECK(b64_encode(bin, (size_t)n, text, tl + 1) == 0);
		CHECK(memcmp(text, s, size) == 0 && text[tl] == '\0');
		free(text);
		free(bin);
	} else {
		bin = malloc(size + 1);
		CHECK(bin != NULL);
		CHECK(b64_decode(s, size, bin, size) == -1);
		free(bin);
	}

	/* The input as bytes to encode. */
	tl = b64_encoded_len(size);
	CHECK(tl == (size + 2) / 3 * 4);
	text = malloc(tl + 1);
	bin = malloc(size + 1);
	CHECK(text != NULL && bin != NULL);
	CHECK(b64_encode(data, size, text, tl) == -1);
	CHECK(b64_encode(data, size, text, tl + 1) == 0);
	CHECK(strlen(text) == tl);
	m = b64_decoded_len(text, tl);
	CHECK(m == (long long)size);
	CHECK(b64_decode(text, tl, bin, size) == (long long)size);
	CHECK(memcmp(bin, data, size) == 0);
	free(bin);
	free(text);
}

static void
fuzz_segment(const uint8_t *data, size_t size, const uint32_t *cps, long ncp)
{
	char		 out[SEGMENT_MAX + 1], *exact;
	long		 n, i;
	size_t		 o = 0, units;
	int		 ok;

	units = ncp >= 0 ? ref_units(cps, ncp) : 0;
	ok = ncp > 0 && memchr(data, 0, size) == NULL &&
	    units <= CHANNEL_KEY_MAX;
	n = channel_segment((const char *)data, size, out, sizeof(out));
	if (!ok) {
		CHECK(n == -1 && out[0] == '\0');
		return;
	}
	CHECK(n >= 1 && (size_t)n == units && out[n] == '\0');
	for (i = 0; i < ncp; i++) {
		if (cps[i] < 0x80 && in_set((uint8_t)cps[i], WORD))
			CHECK(out[o++] == (char)cps[i]);
		else {
			CHECK(out[o++] == '_');
			if (cps[i] >= 0x10000)
				CHECK(out[o++] == '_');
		}
	}
	CHECK(o == (size_t)n);

	/* Only [A-Za-z0-9_-] comes out, so a segment maps to itself. */
	exact = malloc(units + 1);
	CHECK(exact != NULL);
	CHECK(channel_segment(out, (size_t)n, exact, units + 1) == n);
	CHECK(memcmp(exact, out, units + 1) == 0);
	free(exact);

	/* Exactly enough room, then one byte short. */
	exact = malloc(units + 1);
	CHECK(exact != NULL);
	CHECK(channel_segment((const char *)data, size, exact, units + 1) == n);
	CHECK(memcmp(exact, out, units + 1) == 0);
	CHECK(channel_segment((const char *)data, size, exact, units) == -1);
	free(exact);
}

static void
fuzz_names(const uint8_t *data, size_t size, const uint32_t *cps, long ncp)
{
	const char	*s = (const char *)data;
	int		 want;
	long		 i;

	CHECK(valid_profile_name(s, size) ==
	    ref_pattern(data, size, WORD, WORD, PROFILE_NAME_MAX));
	CHECK(valid_mcp_server_name(s, size) ==
	    ref_pattern(data, size, WORD, WORD, MCP_SERVER_NAME_MAX));
	CHECK(valid_tool_use_name(s, size) ==
	    ref_pattern(data, size, WORD, WORD, TOOL_USE_NAME_MAX));
	CHECK(valid_host_tool_name(s, size) ==
	    ref_pattern(data, size, LOWER, LOWER DIGIT "_",
	    HOST_TOOL_NAME_MAX));
	CHECK(valid_container_prefix(s, size) ==
	    ref_pattern(data, size, LOWER DIGIT, LOWER DIGIT "-",
	    CONTAINER_PREFIX_MAX));
	CHECK(valid_runtime_name(s, size) ==
	    ref_pattern(data, size, UPPER LOWER DIGIT, WORD ".",
	    RUNTIME_NAME_MAX));

	want = ncp > 0 && data[0] != '-';
	for (i = 0; want && i < ncp; i++) {
		if (cps[i] <= 0x20 || (cps[i] >= 0x7f && cps[i] <= 0xa0))
			want = 0;
		else if (cps[i] == 0x1680 || (cps[i] >= 0x2000 &&
		    cps[i] <= 0x200a) || cps[i] == 0x2028 || cps[i] == 0x2029 ||
		    cps[i] == 0x202f || cps[i] == 0x205f || cps[i] == 0x3000 ||
		    cps[i] == 0xfeff)
			want = 0;
	}
	CHECK(valid_image_name(s, size) == want);

	want = (size == 3 && memcmp(s, "low", 3) == 0) ||
	    (size == 6 && memcmp(s, "medium", 6) == 0) ||
	    (size == 4 && memcmp(s, "high", 4) == 0) ||
	    (size == 5 && memcmp(s, "xhigh", 5) == 0);
	CHECK(valid_thinking(s, size) == want);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t	*cps;
	long		 ncp;

	cps = malloc((size + 1) * sizeof(*cps));
	if (cps == NULL)
		return 0;
	ncp = ref_decode(data, size, cps);

	fuzz_utf8(data, size, cps, ncp);
	fuzz_json_runs(data, size);
	fuzz_safe_name(data, size, cps, ncp);
	fuzz_b64(data, size);
	fuzz_segment(data, size, cps, ncp);
	fuzz_names(data, size, cps, ncp);

	free(cps);
	return 0;
}
