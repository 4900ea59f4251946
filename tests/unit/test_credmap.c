/*
 * Which credential file a model call goes with (egress/credmap.h): the
 * speaker's over the channel's over credential_file, or none with fallback
 * "none"; the bound of each map at its limit and one past it; one cache
 * per file, kept across a reload for credential_file alone.
 */
#include <sys/stat.h>

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "credmap.h"
#include "limits.h"

static struct credmap	cm;

static void
setup(void)
{
	memset(&cm, 0, sizeof(cm));
}

static void
teardown(void)
{
	credmap_free(&cm);
	ck_assert_ptr_null(cm.cm_files);
}

/* Where a call of channel by speaker goes: the file's path or "-". */
static const char *
from(const char *channel, const char *speaker, enum credmap_from want)
{
	struct credmap_file	*cf = (void *)1;
	enum credmap_from	 got;

	got = credmap_resolve(&cm, channel, speaker, &cf);
	ck_assert_msg(got == want, "%s/%s: %s, not %s", channel,
	    speaker != NULL ? speaker : "(none)", credmap_from_to_string(got),
	    credmap_from_to_string(want));
	if (got == CREDMAP_FROM_NONE) {
		ck_assert_ptr_null(cf);
		return "-";
	}
	ck_assert_ptr_nonnull(cf);
	return cf->cf_path;
}

START_TEST(default_only)
{
	ck_assert_int_eq(credmap_set_default(&cm, "/etc/t"), 0);
	ck_assert_str_eq(from("c", "s", CREDMAP_FROM_DEFAULT), "/etc/t");
	ck_assert_str_eq(from("c", NULL, CREDMAP_FROM_DEFAULT), "/etc/t");
	/* nothing configured at all: nothing to go with */
	credmap_free(&cm);
	ck_assert_str_eq(from("c", "s", CREDMAP_FROM_NONE), "-");
}
END_TEST

START_TEST(precedence)
{
	ck_assert_int_eq(credmap_set_default(&cm, "/etc/t"), 0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_CHANNEL, "team", "/c/team"),
	    0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "alice", "/s/a"),
	    0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "bob", "/s/b"), 0);
	/* the speaker's over the channel's over credential_file */
	ck_assert_str_eq(from("team", "alice", CREDMAP_FROM_SPEAKER), "/s/a");
	ck_assert_str_eq(from("other", "alice", CREDMAP_FROM_SPEAKER),
	    "/s/a");
	ck_assert_str_eq(from("team", "bob", CREDMAP_FROM_SPEAKER), "/s/b");
	ck_assert_str_eq(from("team", "carol", CREDMAP_FROM_CHANNEL),
	    "/c/team");
	ck_assert_str_eq(from("other", "carol", CREDMAP_FROM_DEFAULT),
	    "/etc/t");
	/* a research job has no speaker: its channel's, or the default */
	ck_assert_str_eq(from("team", NULL, CREDMAP_FROM_CHANNEL), "/c/team");
	ck_assert_str_eq(from("other", NULL, CREDMAP_FROM_DEFAULT), "/etc/t");
	/* keys are compared whole and byte for byte */
	ck_assert_str_eq(from("other", "Alice", CREDMAP_FROM_DEFAULT),
	    "/etc/t");
	ck_assert_str_eq(from("other", "alic", CREDMAP_FROM_DEFAULT),
	    "/etc/t");
	ck_assert_str_eq(from("other", "alice ", CREDMAP_FROM_DEFAULT),
	    "/etc/t");
	/* a speaker id that is a channel key names no channel's file */
	ck_assert_str_eq(from("alice", "team", CREDMAP_FROM_DEFAULT),
	    "/etc/t");
}
END_TEST

START_TEST(fallback_none)
{
	cm.cm_fallback_none = 1;
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_CHANNEL, "team", "/c/team"),
	    0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "alice", "/s/a"),
	    0);
	ck_assert_str_eq(from("x", "alice", CREDMAP_FROM_SPEAKER), "/s/a");
	ck_assert_str_eq(from("team", "carol", CREDMAP_FROM_CHANNEL),
	    "/c/team");
	ck_assert_str_eq(from("x", "carol", CREDMAP_FROM_NONE), "-");
	ck_assert_str_eq(from("x", NULL, CREDMAP_FROM_NONE), "-");
	/* never credential_file, even were one set */
	ck_assert_int_eq(credmap_set_default(&cm, "/etc/t"), 0);
	ck_assert_str_eq(from("x", "carol", CREDMAP_FROM_NONE), "-");
}
END_TEST

START_TEST(refusals)
{
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "", "/s/a"), -1);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "a", ""), -1);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "a", "/s/a"), 0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "a", "/s/b"), -1);
	/* the same key in the other map is its own entry */
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_CHANNEL, "a", "/c/a"), 0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_CHANNEL, "a", "/c/a"), -1);
	ck_assert_uint_eq(cm.cm_nspeakers, 1);
	ck_assert_uint_eq(cm.cm_nchannels, 1);
	ck_assert_str_eq(from("a", "a", CREDMAP_FROM_SPEAKER), "/s/a");
	ck_assert_str_eq(from("a", "b", CREDMAP_FROM_CHANNEL), "/c/a");
	ck_assert_str_eq(from("b", "b", CREDMAP_FROM_NONE), "-");
}
END_TEST

/* The keys in an order of their own: k<i * 7919 mod n>. */
static void
fill(enum credmap_scope scope, const char *prefix, size_t n)
{
	char	 key[32], path[48];
	size_t	 i, j;

	for (i = 0; i < n; i++) {
		j = (i * 7919) % n;
		snprintf(key, sizeof(key), "%s%zu", prefix, j);
		snprintf(path, sizeof(path), "/f/%s%zu", prefix, j);
		ck_assert_int_eq(credmap_add(&cm, scope, key, path), 0);
	}
}

START_TEST(limits)
{
	char	 key[32], path[48];
	size_t	 i;

	fill(CREDMAP_SPEAKER, "s", CRED_MAP_MAX);
	fill(CREDMAP_CHANNEL, "c", CRED_MAP_MAX);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "one-more", "/f/x"),
	    -1);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_CHANNEL, "one-more", "/f/x"),
	    -1);
	ck_assert_uint_eq(cm.cm_nfiles, 2 * CRED_MAP_MAX);
	/* each found, whatever order it came in */
	for (i = 0; i < CRED_MAP_MAX; i++) {
		snprintf(key, sizeof(key), "s%zu", i);
		snprintf(path, sizeof(path), "/f/s%zu", i);
		ck_assert_str_eq(from("none", key, CREDMAP_FROM_SPEAKER),
		    path);
		snprintf(key, sizeof(key), "c%zu", i);
		snprintf(path, sizeof(path), "/f/c%zu", i);
		ck_assert_str_eq(from(key, "none", CREDMAP_FROM_CHANNEL),
		    path);
	}
	for (i = 1; i < CRED_MAP_MAX; i++)
		ck_assert_int_lt(strcmp(cm.cm_speakers[i - 1].ce_key,
		    cm.cm_speakers[i].ce_key), 0);
}
END_TEST

/* A file that many speakers name is one file, with one cache. */
START_TEST(files_shared)
{
	struct credmap_file	*a, *b, *c;

	ck_assert_int_eq(credmap_set_default(&cm, "/etc/t"), 0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "a", "/s/team"), 0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "b", "/s/team"), 0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_CHANNEL, "c", "/s/team"), 0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_CHANNEL, "d", "/etc/t"), 0);
	ck_assert_uint_eq(cm.cm_nfiles, 2);
	credmap_resolve(&cm, "x", "a", &a);
	credmap_resolve(&cm, "x", "b", &b);
	credmap_resolve(&cm, "c", "z", &c);
	ck_assert_ptr_eq(a, b);
	ck_assert_ptr_eq(a, c);
	credmap_resolve(&cm, "d", "z", &a);
	credmap_resolve(&cm, "x", "z", &b);
	ck_assert_ptr_eq(a, b);
}
END_TEST

/* A reload: the channels' and speakers' files go, the default stays. */
START_TEST(cleared)
{
	struct credmap_file	*cf;

	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "a", "/s/a"), 0);
	ck_assert_int_eq(credmap_set_default(&cm, "/etc/t"), 0);
	ck_assert_uint_eq(cm.cm_default, 1);
	credmap_resolve(&cm, "x", "z", &cf);
	cf->cf_cache.cc_token = strdup("tok");
	cf->cf_cache.cc_len = 3;
	credmap_clear(&cm);
	ck_assert_uint_eq(cm.cm_nspeakers, 0);
	ck_assert_uint_eq(cm.cm_nfiles, 1);
	ck_assert_str_eq(from("x", "a", CREDMAP_FROM_DEFAULT), "/etc/t");
	credmap_resolve(&cm, "x", "a", &cf);
	ck_assert_str_eq(cf->cf_cache.cc_token, "tok");
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "a", "/s/a2"), 0);
	ck_assert_str_eq(from("x", "a", CREDMAP_FROM_SPEAKER), "/s/a2");
	/* without a default, nothing is left */
	credmap_free(&cm);
	cm.cm_fallback_none = 1;
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "a", "/s/a"), 0);
	credmap_clear(&cm);
	ck_assert_uint_eq(cm.cm_nfiles, 0);
	ck_assert_ptr_null(cm.cm_files);
	ck_assert_int_eq(cm.cm_fallback_none, 1);
	ck_assert_str_eq(from("x", "a", CREDMAP_FROM_NONE), "-");
}
END_TEST

/* Two speakers' files, each read through its own cache. */
START_TEST(a_cache_per_file)
{
	char			 dir[] = "/tmp/credmap-test.XXXXXX";
	char			 pa[64], pb[64], buf[64], err[128];
	struct credmap_file	*a, *b;
	struct timespec		 ts = { 1, 100000000 };
	size_t			 len;
	FILE			*f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(pa, sizeof(pa), "%s/a", dir);
	snprintf(pb, sizeof(pb), "%s/b", dir);
	ck_assert_ptr_nonnull(f = fopen(pa, "w"));
	fputs("token-a\n", f);
	fclose(f);
	ck_assert_ptr_nonnull(f = fopen(pb, "w"));
	fputs("token-b\n", f);
	fclose(f);
	ck_assert_int_eq(chmod(pa, 0600), 0);
	ck_assert_int_eq(chmod(pb, 0600), 0);
	ck_assert_int_eq(nanosleep(&ts, NULL), 0);
	cm.cm_fallback_none = 1;
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "a", pa), 0);
	ck_assert_int_eq(credmap_add(&cm, CREDMAP_SPEAKER, "b", pb), 0);
	credmap_resolve(&cm, "x", "a", &a);
	credmap_resolve(&cm, "x", "b", &b);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(cred_get(&a->cf_cache, AT_FDCWD, a->cf_path,
		    getuid(), buf, sizeof(buf), &len, err, sizeof(err)),
		    CRED_OK);
		ck_assert_str_eq(buf, "token-a");
		ck_assert_int_eq(cred_get(&b->cf_cache, AT_FDCWD, b->cf_path,
		    getuid(), buf, sizeof(buf), &len, err, sizeof(err)),
		    CRED_OK);
		ck_assert_str_eq(buf, "token-b");
	}
	/* each read once, not once per alternation */
	ck_assert_uint_eq(a->cf_cache.cc_reads, 1);
	ck_assert_uint_eq(b->cf_cache.cc_reads, 1);
	ck_assert_int_eq(unlink(pa), 0);
	ck_assert_int_eq(unlink(pb), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(credmap_from_to_string(CREDMAP_FROM_SPEAKER),
	    "the speaker's");
	ck_assert_str_eq(credmap_from_to_string(CREDMAP_FROM_CHANNEL),
	    "the channel's");
	ck_assert_str_eq(credmap_from_to_string(CREDMAP_FROM_DEFAULT),
	    "credential_file");
	ck_assert_str_eq(credmap_from_to_string(CREDMAP_FROM_NONE), "none");
	ck_assert_str_eq(credmap_from_to_string((enum credmap_from)99),
	    "unknown");
}
END_TEST

static Suite *
credmap_suite(void)
{
	Suite	*s = suite_create("credmap");
	TCase	*tc = tcase_create("credmap");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, default_only);
	tcase_add_test(tc, precedence);
	tcase_add_test(tc, fallback_none);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, limits);
	tcase_add_test(tc, files_shared);
	tcase_add_test(tc, cleared);
	tcase_add_test(tc, a_cache_per_file);
	tcase_add_test(tc, names);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner	*sr = srunner_create(credmap_suite());
	int	 failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
