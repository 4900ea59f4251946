/*
 * Egress's audit records (egress/audit.c, egress/sse.c): the first error
 * event of a server-sent event stream, found across any chunking; the
 * credential taken out of what an upstream said, in every encoding the
 * reflection filter knows; and a whole record as the journal gets it.
 */
#include <sys/socket.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "journal.h"
#include "sse.h"
#include "upstream.h"

static const char	 stream[] =
    "event: message_start\r\n"
    "data: {\"type\":\"message_start\"}\r\n\r\n"
    ": a comment\n"
    "event: content_block_delta\n"
    "data: {\"type\":\"content_block_delta\",\"delta\":\"error\"}\n\n"
    "event: error\r"
    "data: {\"type\":\"error\",\r"
    "data:  \"error\":{\"type\":\"overloaded_error\"}}\r\r"
    "event: error\n"
    "data: the second\n\n";

/* Every way to cut the stream in two, and byte by byte. */
START_TEST(sse_error_event)
{
	static struct sse_watch	 sw;
	const char		*want = "{\"type\":\"error\",\n"
				    " \"error\":{\"type\":\"overloaded_error\"}}";
	size_t			 len = sizeof(stream) - 1, cut, i;
	int			 r;

	for (cut = 0; cut <= len; cut++) {
		sse_watch_init(&sw);
		r = sse_watch_feed(&sw, stream, cut);
		r = sse_watch_feed(&sw, stream + cut, len - cut) || r;
		ck_assert_int_eq(r, 1);
		ck_assert_uint_eq(sw.sw_datalen, strlen(want));
		ck_assert_int_eq(memcmp(sw.sw_data, want, sw.sw_datalen), 0);
	}
	sse_watch_init(&sw);
	for (i = 0, r = 0; i < len; i++)
		r = sse_watch_feed(&sw, stream + i, 1);
	ck_assert_int_eq(r, 1);
	ck_assert_int_eq(memcmp(sw.sw_data, want, sw.sw_datalen), 0);
}
END_TEST

START_TEST(sse_shapes)
{
	static struct sse_watch	 sw;
	static const char *const none[] = {
		"event: ping\ndata: {}\n\n",
		"data: {\"type\":\"errors\"}\n\n",
		"data: {\"kind\":1,\"type\":\"error\"}\n\n",
		"event: error\ndata: x\n",	/* not complete */
		"event: errorx\n\n",
		"eventt: error\n\n",
	};
	size_t	 i;

	for (i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		sse_watch_init(&sw);
		ck_assert_msg(sse_watch_feed(&sw, none[i], strlen(none[i])) ==
		    0, "case %zu", i);
	}
	/* the JSON type alone, no event name, and a bare "data" line */
	sse_watch_init(&sw);
	ck_assert_int_eq(sse_watch_feed(&sw,
	    "data: { \"type\" : \"error\" }\ndata\n\n", 34), 1);
	ck_assert_uint_eq(sw.sw_datalen, 21);
	ck_assert_int_eq(memcmp(sw.sw_data, "{ \"type\" : \"error\" }\n", 21),
	    0);
	/* the event name without a space after the colon */
	sse_watch_init(&sw);
	ck_assert_int_eq(sse_watch_feed(&sw, "event:error\n\n", 13), 1);
}
END_TEST

/* Data is kept up to SSE_DATA_MAX bytes; past it, cut. */
START_TEST(sse_data_limit)
{
	static struct sse_watch	 sw;
	static char		 buf[SSE_DATA_MAX + 64];
	size_t			 n;

	for (n = SSE_DATA_MAX; n <= SSE_DATA_MAX + 1; n++) {
		memcpy(buf, "event: error\ndata:", 18);
		memset(buf + 18, 'x', n);
		memcpy(buf + 18 + n, "\n\n", 2);
		sse_watch_init(&sw);
		ck_assert_int_eq(sse_watch_feed(&sw, buf, 20 + n), 1);
		ck_assert_uint_eq(sw.sw_datalen, SSE_DATA_MAX);
		ck_assert_int_eq(sw.sw_data_cut, n > SSE_DATA_MAX);
	}
}
END_TEST

static const char	 secret[] = "sk-ant-oat01-SECRET/+token";

START_TEST(redact_encodings)
{
	static const char *const forms[] = {
		"sk-ant-oat01-SECRET/+token",
		"sk-ant-oat01-SECRET%2F%2btoken",
		"c2stYW50LW9hdDAxLVNFQ1JFVC8rdG9rZW4=",
		"c2stYW50LW9hdDAxLVNFQ1JFVC8rdG9rZW4",
		"c2stYW50LW9hdDAxLVNFQ1JFVC8rdG9rZW4",
		"736b2d616e742d6f617430312d5345435245542f2b746f6b656e",
		"736B2D616E742D6F617430312D5345435245542F2B746F6B656E",
		"sk-ant-oat01-SECRET\\/+token",
	};
	char	 in[256], out[512];
	size_t	 i;
	long	 n;

	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		snprintf(in, sizeof(in), "{\"error\":\"bad key %s here\"}",
		    forms[i]);
		n = audit_redact(secret, strlen(secret), in, strlen(in), 1,
		    out, sizeof(out));
		ck_assert_int_ge(n, 0);
		/* base64 keeps the last character or two, which hold bits
		 * of the secret's end and of what follows (reflect.h) */
		ck_assert_msg(strncmp(out, "{\"error\":\"bad key [redacted]",
		    28) == 0 && strlen(out) <= 28 + 3 + 7 &&
		    strcmp(out + strlen(out) - 7, " here\"}") == 0,
		    "form %zu: %s", i, out);
	}
	/* twice, and nothing to take out */
	snprintf(in, sizeof(in), "%s%s.", secret, secret);
	ck_assert_int_ge(audit_redact(secret, strlen(secret), in, strlen(in),
	    1, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "[redacted][redacted].");
	ck_assert_int_eq(audit_redact(secret, strlen(secret), "fine", 4, 1,
	    out, sizeof(out)), 4);
	ck_assert_str_eq(out, "fine");
	/* a marker beside what is left spells the secret: nothing said */
	ck_assert_int_eq(audit_redact("]]]]]]]]", 8, "]]]]]]]]]]]]]]]", 15, 1,
	    out, sizeof(out)), 10);
	ck_assert_str_eq(out, "[redacted]");
	/* no credential read: copied */
	ck_assert_int_eq(audit_redact("", 0, "fine", 4, 1, out, sizeof(out)),
	    4);
}
END_TEST

/* A head that ends inside the secret: the part of it is not kept; the out
 * buffer bounds the result. */
START_TEST(redact_cut)
{
	char	 in[128], out[128];
	size_t	 k;

	for (k = 1; k < strlen(secret); k++) {
		snprintf(in, sizeof(in), "key %.*s", (int)k, secret);
		ck_assert_int_ge(audit_redact(secret, strlen(secret), in,
		    strlen(in), 0, out, sizeof(out)), 0);
		ck_assert_msg(strstr(out, "sk-") == NULL, "%zu: %s", k, out);
	}
	ck_assert_int_eq(audit_redact(secret, strlen(secret), "abcdef", 6, 1,
	    out, 4), 3);
	ck_assert_str_eq(out, "abc");
}
END_TEST

struct got {
	char	 name[16][40];
	char	 value[16][1600];
	int	 n;
};

static int
collect(const char *name, size_t nlen, const uint8_t *v, size_t vlen,
    void *arg)
{
	struct got	*g = arg;

	if (g->n == 16 || nlen >= 40 || vlen >= 1600)
		return -1;
	memcpy(g->name[g->n], name, nlen);
	g->name[g->n][nlen] = '\0';
	memcpy(g->value[g->n], v, vlen);
	g->value[g->n][vlen] = '\0';
	g->n++;
	return 0;
}

static const char *
field(const struct got *g, const char *name)
{
	int	 i;

	for (i = 0; i < g->n; i++)
		if (strcmp(g->name[i], name) == 0)
			return g->value[i];
	return NULL;
}

static void
record(struct audit *au, struct got *g)
{
	static uint8_t	 buf[JOURNAL_RECORD_MAX];
	int		 sv[2];
	ssize_t		 n;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	journal_set_fd(sv[0]);
	audit_close(au, secret, strlen(secret));
	n = recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT);
	ck_assert_int_gt(n, 0);
	memset(g, 0, sizeof(*g));
	ck_assert_int_eq(journal_decode(buf, (size_t)n, collect, g), 0);
	journal_set_fd(-1);
	close(sv[0]);
	close(sv[1]);
}

/* An error status: the head of its body, the credential out, escaped. */
START_TEST(record_error_body)
{
	struct up_hdr	 h = { "Content-Type", "application/json" };
	struct audit	*au;
	struct got	 g;
	static char	 body[AUDIT_CAPTURE_MAX + 100];

	au = audit_new("discord:1", "t-1", "u\n1", "model /v1/messages",
	    "claude-x", 123);
	ck_assert_ptr_nonnull(au);
	audit_head(au, 529, &h, 1);
	snprintf(body, sizeof(body), "{\"message\":\"bad %s\x01\"}", secret);
	audit_data(au, body, strlen(body));
	record(au, &g);
	ck_assert_str_eq(field(&g, "RTSANDBOX_CHANNEL"), "discord:1");
	ck_assert_str_eq(field(&g, "RTSANDBOX_TURN"), "t-1");
	ck_assert_str_eq(field(&g, "RTSANDBOX_SPEAKER"), "u\n1");
	ck_assert_str_eq(field(&g, "RTSANDBOX_ROUTE"), "model /v1/messages");
	ck_assert_str_eq(field(&g, "RTSANDBOX_MODEL"), "claude-x");
	ck_assert_str_eq(field(&g, "RTSANDBOX_STATUS"), "529");
	ck_assert_ptr_nonnull(field(&g, "RTSANDBOX_TTFB_MS"));
	ck_assert_ptr_nonnull(field(&g, "RTSANDBOX_MS"));
	ck_assert_str_eq(field(&g, "RTSANDBOX_BYTES_OUT"), "123");
	ck_assert_uint_eq(strtoul(field(&g, "RTSANDBOX_BYTES_IN"), NULL, 10),
	    strlen(body));
	ck_assert_str_eq(field(&g, "RTSANDBOX_ERROR"),
	    "body: {\\\"message\\\":\\\"bad [redacted]\\x01\\\"}");
	ck_assert_str_eq(field(&g, "PRIORITY"), "4");
	ck_assert_ptr_null(strstr(field(&g, "MESSAGE"), "SECRET"));

	/* a long body: the head, AUDIT_ERROR_MAX bytes, then "..." */
	au = audit_new("c", NULL, NULL, "mcp files tools/call echo", NULL, 1);
	audit_head(au, 500, &h, 1);
	memset(body, 'x', sizeof(body));
	audit_data(au, body, sizeof(body));
	record(au, &g);
	ck_assert_ptr_null(field(&g, "RTSANDBOX_TURN"));
	ck_assert_ptr_null(field(&g, "RTSANDBOX_MODEL"));
	ck_assert_uint_eq(strlen(field(&g, "RTSANDBOX_ERROR")),
	    6 + AUDIT_ERROR_MAX + 3);
}
END_TEST

/* A 200 stream with an error event: recorded once, the status kept. */
START_TEST(record_stream_error)
{
	struct up_hdr	 h = { "content-type", "text/event-stream; x=1" };
	struct audit	*au;
	struct got	 g;
	char		 ev[256];

	au = audit_new("c", "t", "s", "model /v1/messages", "m", 10);
	audit_head(au, 200, &h, 1);
	audit_data(au, stream, 60);
	snprintf(ev, sizeof(ev), "event: error\ndata: {\"type\":\"error\","
	    "\"message\":\"%s\"}\n\nevent: error\ndata: two\n\n", secret);
	audit_data(au, ev, strlen(ev));
	record(au, &g);
	ck_assert_str_eq(field(&g, "RTSANDBOX_STATUS"), "200");
	ck_assert_str_eq(field(&g, "RTSANDBOX_ERROR"), "stream error event: "
	    "{\\\"type\\\":\\\"error\\\",\\\"message\\\":\\\"[redacted]\\\"}");
	/* an ordinary 200: no error, info */
	au = audit_new("c", "t", "s", "model /v1/messages", "m", 10);
	audit_head(au, 200, &h, 1);
	audit_data(au, stream, 60);
	record(au, &g);
	ck_assert_ptr_null(field(&g, "RTSANDBOX_ERROR"));
	ck_assert_str_eq(field(&g, "PRIORITY"), "6");
	/* egress's own failure before any head */
	au = audit_new("c", "t", "s", "model /v1/messages", "m", 10);
	audit_fail(au, "no credential");
	audit_fail(au, "later");
	record(au, &g);
	ck_assert_str_eq(field(&g, "RTSANDBOX_STATUS"), "0");
	ck_assert_ptr_null(field(&g, "RTSANDBOX_TTFB_MS"));
	ck_assert_str_eq(field(&g, "RTSANDBOX_ERROR"), "no credential");
}
END_TEST

static Suite *
audit_suite(void)
{
	Suite	*s = suite_create("audit");
	TCase	*tc;

	tc = tcase_create("sse");
	tcase_add_test(tc, sse_error_event);
	tcase_add_test(tc, sse_shapes);
	tcase_add_test(tc, sse_data_limit);
	suite_add_tcase(s, tc);
	tc = tcase_create("redact");
	tcase_add_test(tc, redact_encodings);
	tcase_add_test(tc, redact_cut);
	suite_add_tcase(s, tc);
	tc = tcase_create("record");
	tcase_add_test(tc, record_error_body);
	tcase_add_test(tc, record_stream_error);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(audit_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
