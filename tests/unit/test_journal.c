/*
 * Records for the operator (common/journal.c): the journal's native
 * protocol, both ways, binary-safe where a value holds a newline; the
 * escaping of text for a log line; and a record sent on a datagram socket
 * as journald would get it.
 */
#include <sys/socket.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "journal.h"

struct fields {
	char	 name[8][80];
	char	 value[8][256];
	size_t	 vlen[8];
	int	 n;
};

static int
collect(const char *name, size_t nlen, const uint8_t *v, size_t vlen,
    void *arg)
{
	struct fields	*f = arg;

	if (f->n == 8 || nlen >= 80 || vlen >= 256)
		return -1;
	memcpy(f->name[f->n], name, nlen);
	f->name[f->n][nlen] = '\0';
	memcpy(f->value[f->n], v, vlen);
	f->value[f->n][vlen] = '\0';
	f->vlen[f->n] = vlen;
	f->n++;
	return 0;
}

/* A peer's "\nRTSANDBOX_STATUS=200" in a value stays in that value. */
START_TEST(binary_safe)
{
	uint8_t		 buf[512];
	size_t		 len = 0;
	struct fields	 f;
	const char	*evil = "t1\nRTSANDBOX_STATUS=200";

	ck_assert_int_eq(journal_encode(buf, sizeof(buf), &len,
	    "RTSANDBOX_TURN", evil, strlen(evil)), 0);
	ck_assert_int_eq(journal_encode(buf, sizeof(buf), &len,
	    "RTSANDBOX_STATUS", "502", 3), 0);
	/* the length form: NAME\n, 8 bytes little-endian, value, \n */
	ck_assert_int_eq(memcmp(buf, "RTSANDBOX_TURN\n", 15), 0);
	ck_assert_uint_eq(buf[15], strlen(evil));
	ck_assert_uint_eq(buf[16], 0);
	memset(&f, 0, sizeof(f));
	ck_assert_int_eq(journal_decode(buf, len, collect, &f), 0);
	ck_assert_int_eq(f.n, 2);
	ck_assert_str_eq(f.name[0], "RTSANDBOX_TURN");
	ck_assert_str_eq(f.value[0], evil);
	ck_assert_str_eq(f.name[1], "RTSANDBOX_STATUS");
	ck_assert_str_eq(f.value[1], "502");
	/* an empty value, and one with '=' in it */
	len = 0;
	ck_assert_int_eq(journal_encode(buf, sizeof(buf), &len, "A", "", 0),
	    0);
	ck_assert_int_eq(journal_encode(buf, sizeof(buf), &len, "B", "x=y",
	    3), 0);
	memset(&f, 0, sizeof(f));
	ck_assert_int_eq(journal_decode(buf, len, collect, &f), 0);
	ck_assert_int_eq(f.n, 2);
	ck_assert_str_eq(f.value[0], "");
	ck_assert_str_eq(f.value[1], "x=y");
}
END_TEST

/* Names: [A-Z0-9_], not '_' first, 64 at most; and the room. */
START_TEST(names_and_room)
{
	uint8_t	 buf[128];
	char	 name[JOURNAL_NAME_MAX + 2];
	size_t	 len = 0;

	memset(name, 'N', sizeof(name));
	name[JOURNAL_NAME_MAX] = '\0';
	ck_assert_int_eq(journal_encode(buf, sizeof(buf), &len, name, "v", 1),
	    0);
	name[JOURNAL_NAME_MAX] = 'N';
	name[JOURNAL_NAME_MAX + 1] = '\0';
	len = 0;
	ck_assert_int_eq(journal_encode(buf, sizeof(buf), &len, name, "v", 1),
	    -1);
	ck_assert_uint_eq(len, 0);
	ck_assert_int_eq(journal_encode(buf, sizeof(buf), &len, "_PID", "1",
	    1), -1);
	ck_assert_int_eq(journal_encode(buf, sizeof(buf), &len, "lower", "1",
	    1), -1);
	ck_assert_int_eq(journal_encode(buf, sizeof(buf), &len, "", "1", 1),
	    -1);
	/* "AB=" + 4 + "\n" = 8 bytes: fits 8, not 7 */
	ck_assert_int_eq(journal_encode(buf, 8, &len, "AB", "vvvv", 4), 0);
	ck_assert_uint_eq(len, 8);
	len = 0;
	ck_assert_int_eq(journal_encode(buf, 7, &len, "AB", "vvvv", 4), -1);
	ck_assert_uint_eq(len, 0);
}
END_TEST

static int
count(const char *name, size_t nlen, const uint8_t *v, size_t vlen,
    void *arg)
{
	(*(int *)arg)++;
	return 0;
}

START_TEST(decode_refuses)
{
	static const struct {
		const char	*s;
		size_t		 len;
	} bad[] = {
		{ "A=1", 3 },			/* no final newline */
		{ "a=1\n", 4 },			/* a bad name */
		{ "=1\n", 3 },
		{ "A\n\x05\0\0\0\0\0\0\0abc\n", 14 },	/* length past */
		{ "A\n\x03\0\0\0\0\0\0\0abcX", 15 },	/* no newline after */
		{ "A\n\x03\0\0", 5 },		/* a short length */
		{ "A\n\xff\xff\xff\xff\xff\xff\xff\xff", 10 },
	};
	size_t	 i;
	int	 n;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = 0;
		ck_assert_msg(journal_decode((const uint8_t *)bad[i].s,
		    bad[i].len, count, &n) == -1, "case %zu", i);
	}
	n = 0;
	ck_assert_int_eq(journal_decode((const uint8_t *)
	    "A\n\x03\0\0\0\0\0\0\0a\nc\nB=2\n", 18, count, &n), 0);
	ck_assert_int_eq(n, 2);
}
END_TEST

START_TEST(escape)
{
	char	 out[64];

	ck_assert_uint_eq(journal_escape(out, sizeof(out),
	    "a\nb\x7f\"\\ \xc3\xa9\xff", 10), 10);
	ck_assert_str_eq(out, "a\\x0ab\\x7f\\\"\\\\ \xc3\xa9\\xff");
	/* never half an escape or half a character */
	ck_assert_uint_eq(journal_escape(out, 5, "ab\n", 3), 2);
	ck_assert_str_eq(out, "ab");
	ck_assert_uint_eq(journal_escape(out, 6, "ab\n", 3), 2);
	ck_assert_uint_eq(journal_escape(out, 7, "ab\n", 3), 3);
	ck_assert_uint_eq(journal_escape(out, 3, "a\xc3\xa9", 3), 1);
	ck_assert_str_eq(out, "a");
	ck_assert_uint_eq(journal_escape(out, 4, "a\xc3\xa9", 3), 3);
	ck_assert_uint_eq(journal_escape(out, 1, "a", 1), 0);
	ck_assert_str_eq(out, "");
	/* a run of plain bytes is cut where the room ends, before the NUL */
	ck_assert_uint_eq(journal_escape(out, 4, "abcdef", 6), 3);
	ck_assert_str_eq(out, "abc");
	ck_assert_uint_eq(journal_escape(out, 7, "abcdef", 6), 6);
	ck_assert_str_eq(out, "abcdef");
	ck_assert_uint_eq(journal_escape(out, 4, "ab\"c", 4), 2);
	ck_assert_str_eq(out, "ab");
	ck_assert_uint_eq(journal_escape(out, 5, "ab\"c", 4), 3);
	ck_assert_str_eq(out, "ab\\\"");
}
END_TEST

/* A record on a datagram socket: one entry, field by field, MESSAGE the
 * escaped line; without a journal, the log's line alone. */
START_TEST(record)
{
	static struct jrec	 jr;
	struct fields		 f;
	uint8_t			 buf[4096];
	ssize_t			 n;
	int			 sv[2], i;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), 0);
	journal_set_fd(sv[0]);
	jrec_init(&jr, LOG_WARNING, "upstream call");
	jrec_add_str(&jr, "channel", "c 1");
	jrec_add_str(&jr, "speaker", "u\nRTSANDBOX_STATUS=200");
	jrec_add_uint(&jr, "status", 529);
	ck_assert_int_eq(jrec_send(&jr), 1);
	n = recv(sv[1], buf, sizeof(buf), 0);
	ck_assert_int_gt(n, 0);
	memset(&f, 0, sizeof(f));
	ck_assert_int_eq(journal_decode(buf, (size_t)n, collect, &f), 0);
	ck_assert_int_eq(f.n, 6);
	ck_assert_str_eq(f.name[0], "RTSANDBOX_CHANNEL");
	ck_assert_str_eq(f.value[0], "c 1");
	ck_assert_str_eq(f.value[1], "u\nRTSANDBOX_STATUS=200");
	ck_assert_str_eq(f.name[2], "RTSANDBOX_STATUS");
	ck_assert_str_eq(f.value[2], "529");
	ck_assert_str_eq(f.name[3], "MESSAGE");
	ck_assert_str_eq(f.value[3], "upstream call: channel=\"c 1\" "
	    "speaker=\"u\\x0aRTSANDBOX_STATUS=200\" status=529");
	ck_assert_str_eq(f.name[4], "PRIORITY");
	ck_assert_str_eq(f.value[4], "4");
	/* one status only, the record's */
	for (i = 0; i < f.n; i++)
		if (strcmp(f.name[i], "RTSANDBOX_STATUS") == 0)
			ck_assert_str_eq(f.value[i], "529");
	/* the journal gone: the log has it, and says so */
	close(sv[1]);
	jrec_init(&jr, LOG_INFO, "upstream call");
	jrec_add_str(&jr, "channel", "c");
	ck_assert_int_eq(jrec_send(&jr), 0);
	close(sv[0]);
	journal_set_fd(-1);
	ck_assert_int_eq(jrec_send(&jr), 0);
}
END_TEST

/* The log's line is bounded: fields past its room are left out, "..." */
START_TEST(line_room)
{
	static struct jrec	 jr;
	char			 big[1500];
	int			 i;

	memset(big, 'v', sizeof(big));
	jrec_init(&jr, LOG_INFO, "r");
	for (i = 0; i < 4; i++)
		jrec_add(&jr, "k", big, sizeof(big));
	ck_assert_uint_lt(strlen(jr.jr_line), sizeof(jr.jr_line));
	ck_assert_ptr_nonnull(strstr(jr.jr_line, " ..."));
	ck_assert(jr.jr_full);
}
END_TEST

static Suite *
journal_suite(void)
{
	Suite	*s = suite_create("journal");
	TCase	*tc = tcase_create("native");

	tcase_add_test(tc, binary_safe);
	tcase_add_test(tc, names_and_room);
	tcase_add_test(tc, decode_refuses);
	tcase_add_test(tc, escape);
	tcase_add_test(tc, record);
	tcase_add_test(tc, line_room);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(journal_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
