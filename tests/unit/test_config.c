/*
 * The configuration of DESIGN.md 7: every default, every limit and one past
 * it, every refusal with the field it names and the rule it states.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <check.h>
#include <errno.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buildconf.h"
#include "config.h"
#include "hostcheck.h"

#define ARENA_MAX	64

static struct config_errors	 E;
static char			*arena[ARENA_MAX];
static size_t			 narena;

static char *
keep(char *s)
{
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_lt(narena, ARENA_MAX);
	arena[narena++] = s;
	return s;
}

static void
teardown(void)
{
	while (narena > 0)
		free(arena[--narena]);
	config_errors_free(&E);
}

static char *fmt(const char *, ...) __attribute__((format(printf, 1, 2)));

/* A formatted string that lives until the end of the test. */
static char *
fmt(const char *f, ...)
{
	va_list	 ap;
	char	*s;
	int	 r;

	va_start(ap, f);
	r = vasprintf(&s, f, ap);
	va_end(ap);
	ck_assert_int_ge(r, 0);
	return keep(s);
}

/* n copies of c. */
static char *
rep(char c, size_t n)
{
	char	*s;

	s = malloc(n + 1);
	ck_assert_ptr_nonnull(s);
	memset(s, c, n);
	s[n] = '\0';
	return keep(s);
}

/* n copies of unit, joined by sep. */
static char *
join(const char *unit, const char *sep, size_t n)
{
	size_t	 ul = strlen(unit), sl = strlen(sep), i, o = 0;
	char	*s;

	s = malloc(n * (ul + sl) + 1);
	ck_assert_ptr_nonnull(s);
	for (i = 0; i < n; i++) {
		if (i > 0) {
			memcpy(s + o, sep, sl);
			o += sl;
		}
		memcpy(s + o, unit, ul);
		o += ul;
	}
	s[o] = '\0';
	return keep(s);
}

/* "[\"<prefix>0\",\"<prefix>1\",...]" with n entries. */
static char *
names_array(const char *prefix, size_t n)
{
	char	*s, *p;
	size_t	 i, sz = n * (strlen(prefix) + 16) + 3;

	s = malloc(sz);
	ck_assert_ptr_nonnull(s);
	p = s;
	*p++ = '[';
	for (i = 0; i < n; i++)
		p += snprintf(p, sz - (size_t)(p - s), "%s\"%s%zu\"",
		    i > 0 ? "," : "", prefix, i);
	*p++ = ']';
	*p = '\0';
	return keep(s);
}

static const char *const base[][2] = {
	{ "state_dir", "\"/var/lib/rtsandbox\"" },
	{ "image", "\"rtsandbox-worker:1\"" },
	{ "profiles", "{\"default\":{\"model\":\"claude-sonnet-4-5\"}}" },
	{ "upstream",
	    "{\"credential_file\":\"/etc/rtsandbox/upstream.token\"}" },
};
#define NBASE	(sizeof(base) / sizeof(base[0]))

/*
 * The minimal configuration with the named top-level fields set to the raw
 * JSON values given (NULL removes a field); pairs end with a NULL name.
 */
static char *
mk(const char *name, ...)
{
	va_list		 ap;
	const char	*n, *v, *ov[16], *on[16];
	char		*out = NULL, *tmp;
	size_t		 no = 0, i, j;
	int		 used[16] = { 0 }, first = 1;

	va_start(ap, name);
	for (n = name; n != NULL; n = va_arg(ap, const char *)) {
		ck_assert_uint_lt(no, 16);
		on[no] = n;
		ov[no++] = va_arg(ap, const char *);
	}
	va_end(ap);

	out = strdup("{");
	for (i = 0; i < NBASE; i++) {
		v = base[i][1];
		for (j = 0; j < no; j++)
			if (strcmp(on[j], base[i][0]) == 0) {
				v = ov[j];
				used[j] = 1;
			}
		if (v == NULL)
			continue;
		ck_assert_int_ge(asprintf(&tmp, "%s%s\"%s\":%s", out,
		    first ? "" : ",", base[i][0], v), 0);
		free(out);
		out = tmp;
		first = 0;
	}
	for (j = 0; j < no; j++) {
		if (used[j] || ov[j] == NULL)
			continue;
		ck_assert_int_ge(asprintf(&tmp, "%s%s\"%s\":%s", out,
		    first ? "" : ",", on[j], ov[j]), 0);
		free(out);
		out = tmp;
		first = 0;
	}
	ck_assert_int_ge(asprintf(&tmp, "%s}", out), 0);
	free(out);
	return keep(tmp);
}
#define MK(...)	mk(__VA_ARGS__, (const char *)NULL)

static struct config *
parse_buf(const char *buf, size_t len)
{
	config_errors_free(&E);
	return config_parse(buf, len, &E);
}

static struct config *
parse(const char *json)
{
	return parse_buf(json, strlen(json));
}

static void
dump(const char *json)
{
	size_t	 i;

	fprintf(stderr, "input: %.300s\n", json);
	for (i = 0; i < E.n; i++)
		fprintf(stderr, "  error: %s\n", E.lines[i]);
	for (i = 0; i < E.nwarn; i++)
		fprintf(stderr, "  warning: %s\n", E.warnings[i]);
}

/* A line "<field>: ...<rule>..."; field NULL matches any field. */
static int
has_line(char **lines, size_t n, const char *field, const char *rule)
{
	size_t	 i, fl;

	for (i = 0; i < n; i++) {
		if (field != NULL) {
			fl = strlen(field);
			if (strncmp(lines[i], field, fl) != 0 ||
			    strncmp(lines[i] + fl, ": ", 2) != 0)
				continue;
		}
		if (rule == NULL || strstr(lines[i], rule) != NULL)
			return 1;
	}
	return 0;
}

static struct config *
accepted_at(int line, const char *json)
{
	struct config	*cfg;

	if ((cfg = parse(json)) == NULL)
		dump(json);
	ck_assert_msg(cfg != NULL, "line %d: refused", line);
	ck_assert_msg(E.n == 0, "line %d: errors with a config", line);
	return cfg;
}
#define accepted(j)	accepted_at(__LINE__, (j))

static void
ok_at(int line, const char *json)
{
	config_free(accepted_at(line, json));
}
#define ok(j)		ok_at(__LINE__, (j))

static void
refused_at(int line, const char *json, const char *field, const char *rule)
{
	struct config	*cfg;
	int		 found;

	cfg = parse(json);
	found = has_line(E.lines, E.n, field, rule);
	if (cfg != NULL || !found)
		dump(json);
	config_free(cfg);
	ck_assert_msg(cfg == NULL, "line %d: accepted", line);
	ck_assert_msg(found, "line %d: no error \"%s: ...%s...\"", line,
	    field ? field : "*", rule ? rule : "");
}
#define refused(j, f, r)	refused_at(__LINE__, (j), (f), (r))

/*
 * Reloads
 */

/* What a reload of base with name set to value says: the field named, or
 * "" when it may be applied; *same whether brokers stay as they are. */
static const char *
reload_of(const char *name, const char *value, int *same)
{
	static char	 why[64];
	struct config	*o, *n;

	o = accepted(MK(NULL));
	n = accepted(MK(name, value));
	why[0] = '\0';
	if (config_reload_check(o, n, why, sizeof(why)) == 0)
		ck_assert_str_eq(why, "");
	else
		ck_assert_str_ne(why, "");
	*same = config_brokers_same(o, n);
	ck_assert_int_eq(config_brokers_same(o, o), 1);
	config_free(o);
	config_free(n);
	return why;
}

START_TEST(reload_fixed_fields)
{
	static const char *const cases[][3] = {
		{ "state_dir", "\"/var/lib/other\"", "state_dir" },
		{ "control_socket", "\"/run/other.sock\"", "control_socket" },
		{ "image", "\"rtsandbox-worker:2\"", "image" },
		{ "upstream", "{\"credential_file\":\"/etc/rtsandbox/x\"}",
		    "upstream.credential_file" },
		{ "upstream", "{\"credential\":\"hook\"}",
		    "upstream.credential_file" },
		{ "upstream", "{\"credential_file\":"
		    "\"/etc/rtsandbox/upstream.token\",\"url\":"
		    "\"https://example.com\"}", "upstream.url" },
		{ "docker", "{\"container_prefix\":\"other\"}",
		    "docker.container_prefix" },
		{ "docker", "{\"limits\":{\"memory_mib\":512}}",
		    "docker.limits.memory_mib" },
		{ "docker", "{\"runtime\":\"runsc\"}", "docker.runtime" },
		{ "time_zone", "\"Europe/Paris\"", "time_zone" },
		{ "sandbox", "{\"empty_root\":\"optional\"}",
		    "sandbox.empty_root" },
	};
	size_t	 i;
	int	 same;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_str_eq(reload_of(cases[i][0], cases[i][1], &same),
		    cases[i][2]);
}
END_TEST

START_TEST(reload_applied)
{
	int	 same;

	/* applied, brokers kept */
	ck_assert_str_eq(reload_of("timeouts", "{\"turn_ms\":5000}", &same),
	    "");
	ck_assert_int_eq(same, 1);
	ck_assert_str_eq(reload_of("default_thinking", "\"high\"", &same),
	    "");
	ck_assert_int_eq(same, 1);
	/* applied, brokers replaced at their next start */
	ck_assert_str_eq(reload_of("tools", "[\"roll_dice\"]", &same), "");
	ck_assert_int_eq(same, 0);
	ck_assert_str_eq(reload_of("profiles", "{\"default\":{\"model\":"
	    "\"claude-opus-4\"}}", &same), "");
	ck_assert_int_eq(same, 0);
	ck_assert_str_eq(reload_of("profiles", "{\"default\":{\"model\":"
	    "\"claude-sonnet-4-5\"},\"b\":{\"model\":\"m\"}}", &same),
	    "");
	ck_assert_int_eq(same, 0);
	ck_assert_str_eq(reload_of("budgets", "{\"max_calls\":3}", &same),
	    "");
	ck_assert_int_eq(same, 0);
}
END_TEST

/*
 * upstream.credentials
 */

#define TOKEN		"/etc/rtsandbox/upstream.token"

/* upstream with credential_file TOKEN (file NULL: none) and credentials. */
static char *
up_creds(const char *file, const char *credentials)
{
	if (file == NULL)
		return fmt("{\"credentials\":%s}", credentials);
	return fmt("{\"credential_file\":\"%s\",\"credentials\":%s}", file,
	    credentials);
}

/* {"<prefix>0":"<dir>/<prefix>0",...} with n entries. */
static char *
cred_map_n(const char *prefix, const char *dir, size_t n)
{
	char	*s, *p;
	size_t	 i, sz = n * (2 * strlen(prefix) + strlen(dir) + 48) + 3;

	s = malloc(sz);
	ck_assert_ptr_nonnull(s);
	p = s;
	*p++ = '{';
	for (i = 0; i < n; i++)
		p += snprintf(p, sz - (size_t)(p - s),
		    "%s\"%s%zu\":\"%s/%s%zu\"", i > 0 ? "," : "", prefix, i,
		    dir, prefix, i);
	*p++ = '}';
	*p = '\0';
	return keep(s);
}

START_TEST(credentials_parsed)
{
	struct config	*cfg;

	cfg = accepted(MK(NULL));
	ck_assert_int_eq(cfg->has_credentials, 0);
	ck_assert_uint_eq(cfg->ncred_channels + cfg->ncred_speakers, 0);
	config_free(cfg);
	/* sorted by key, whatever the file's order */
	cfg = accepted(MK("upstream", up_creds(TOKEN, "{\"speakers\":{"
	    "\"bob\":\"/etc/rtsandbox/t/bob\","
	    "\"alice\":\"/etc/rtsandbox/t/a\"},"
	    "\"channels\":{\"discord:9\":\"/etc/rtsandbox/t/team\"}}")));
	ck_assert_int_eq(cfg->has_credentials, 1);
	ck_assert_int_eq(cfg->cred_fallback_none, 0);
	ck_assert_uint_eq(cfg->ncred_speakers, 2);
	ck_assert_str_eq(cfg->cred_speakers[0].key, "alice");
	ck_assert_str_eq(cfg->cred_speakers[0].file, "/etc/rtsandbox/t/a");
	ck_assert_str_eq(cfg->cred_speakers[1].key, "bob");
	ck_assert_uint_eq(cfg->ncred_channels, 1);
	ck_assert_str_eq(cfg->cred_channels[0].key, "discord:9");
	ck_assert_str_eq(cfg->cred_channels[0].file, "/etc/rtsandbox/t/team");
	ck_assert_str_eq(cfg->upstream_credential_file, TOKEN);
	config_free(cfg);
	cfg = accepted(MK("upstream", up_creds(NULL, "{\"fallback\":\"none\","
	    "\"speakers\":{\"alice\":\"/t/a\"}}")));
	ck_assert_int_eq(cfg->cred_fallback_none, 1);
	ck_assert_ptr_null(cfg->upstream_credential_file);
	ck_assert_uint_eq(E.nwarn, 0);
	config_free(cfg);
	/* nothing left to go with: a warning, not an error */
	cfg = accepted(MK("upstream", up_creds(NULL,
	    "{\"fallback\":\"none\"}")));
	ck_assert(has_line(E.warnings, E.nwarn, "upstream.credentials",
	    "every model call is refused"));
	config_free(cfg);
}
END_TEST

START_TEST(credentials_counts)
{
	struct config	*cfg;

	cfg = accepted(MK("upstream", up_creds(TOKEN, fmt("{\"channels\":%s,"
	    "\"speakers\":%s}", cred_map_n("c", "/etc/rtsandbox/t", 1000),
	    cred_map_n("s", "/etc/rtsandbox/t", 1000)))));
	ck_assert_uint_eq(cfg->ncred_channels, 1000);
	ck_assert_uint_eq(cfg->ncred_speakers, 1000);
	config_free(cfg);
	refused(MK("upstream", up_creds(TOKEN, fmt("{\"channels\":%s}",
	    cred_map_n("c", "/t", 1001)))), "upstream.credentials.channels",
	    "must have at most 1000 entries");
	refused(MK("upstream", up_creds(TOKEN, fmt("{\"speakers\":%s}",
	    cred_map_n("s", "/t", 1001)))), "upstream.credentials.speakers",
	    "must have at most 1000 entries");
}
END_TEST

START_TEST(credentials_key_lengths)
{
	/* 256 chars, also counted as UTF-16: U+1F600 is two */
	ok(MK("upstream", up_creds(TOKEN, fmt("{\"channels\":{\"%s\":\"/t\"}}",
	    rep('k', 256)))));
	refused(MK("upstream", up_creds(TOKEN, fmt("{\"channels\":{\"%s\":"
	    "\"/t\"}}", rep('k', 257)))), NULL, "channel key must be 1 to "
	    "256 chars");
	ok(MK("upstream", up_creds(TOKEN, fmt("{\"channels\":{\"%s\":\"/t\"}}",
	    join("\xf0\x9f\x98\x80", "", 128)))));
	refused(MK("upstream", up_creds(TOKEN, fmt("{\"channels\":{\"%s\":"
	    "\"/t\"}}", join("\xf0\x9f\x98\x80", "", 129)))), NULL,
	    "channel key must be 1 to 256 chars");
	ok(MK("upstream", up_creds(TOKEN, fmt("{\"speakers\":{\"%s\":\"/t\"}}",
	    rep('i', 256)))));
	refused(MK("upstream", up_creds(TOKEN, fmt("{\"speakers\":{\"%s\":"
	    "\"/t\"}}", rep('i', 257)))), NULL, "speaker id must be 1 to "
	    "256 chars");
	ok(MK("upstream", up_creds(TOKEN, fmt("{\"speakers\":{\"%s\":\"/t\"}}",
	    join("\xf0\x9f\x98\x80", "", 128)))));
	refused(MK("upstream", up_creds(TOKEN, fmt("{\"speakers\":{\"%s\":"
	    "\"/t\"}}", join("\xf0\x9f\x98\x80", "", 129)))), NULL,
	    "speaker id must be 1 to 256 chars");
	/* a path: as credential_file, at most 4096 bytes */
	ok(MK("upstream", up_creds(TOKEN, fmt("{\"speakers\":{\"a\":\"/%s\"}}",
	    rep('p', 4095)))));
	refused(MK("upstream", up_creds(TOKEN, fmt("{\"speakers\":{\"a\":"
	    "\"/%s\"}}", rep('p', 4096)))), "upstream.credentials.speakers.a",
	    "must be at most 4096 bytes");
}
END_TEST

START_TEST(credentials_directories)
{
	struct config	*cfg;
	const char	*dirs[5];

	/* credential_file's directory and three more */
	cfg = accepted(MK("upstream", up_creds(TOKEN, "{\"channels\":{"
	    "\"a\":\"/d1/a\",\"b\":\"/d2/b\"},\"speakers\":{\"c\":\"/d3/c\","
	    "\"d\":\"/d1/d\",\"e\":\"/etc/rtsandbox/e\"}}")));
	ck_assert_uint_eq(config_cred_dirs(cfg, dirs, 4), 4);
	ck_assert_str_eq(dirs[0], TOKEN);
	ck_assert_str_eq(dirs[1], "/d1/a");
	ck_assert_str_eq(dirs[2], "/d2/b");
	ck_assert_str_eq(dirs[3], "/d3/c");
	config_free(cfg);
	/* a fifth; a directory beneath another is one more too (a link on
	 * the way may lead anywhere) */
	refused(MK("upstream", up_creds(TOKEN, "{\"channels\":{"
	    "\"a\":\"/d1/a\",\"b\":\"/d2/b\"},\"speakers\":{\"c\":\"/d3/c\","
	    "\"d\":\"/d4/d\"}}")), "upstream.credentials",
	    "must be in at most 4 directories");
	refused(MK("upstream", up_creds(TOKEN, "{\"channels\":{"
	    "\"a\":\"/d1/a\",\"b\":\"/d2/b\"},\"speakers\":{\"c\":\"/d3/c\","
	    "\"d\":\"/etc/rtsandbox/x/d\"}}")), "upstream.credentials",
	    "must be in at most 4 directories");
	/* without credential_file, four of their own */
	cfg = accepted(MK("upstream", up_creds(NULL, "{\"fallback\":\"none\","
	    "\"channels\":{\"a\":\"/d1/a\",\"b\":\"/d2/b\"},\"speakers\":{"
	    "\"c\":\"/d3/c\",\"d\":\"/d4/d\"}}")));
	ck_assert_uint_eq(config_cred_dirs(cfg, dirs, 4), 4);
	ck_assert_uint_eq(config_cred_dirs(cfg, dirs, 3), 4);
	config_free(cfg);
}
END_TEST

/* What a reload from old's upstream to new's says ("" when applied). */
static const char *
cred_reload(const char *old, const char *new)
{
	static char	 why[600];
	struct config	*o, *n;

	o = accepted(MK("upstream", old));
	n = accepted(MK("upstream", new));
	why[0] = '\0';
	if (config_reload_check(o, n, why, sizeof(why)) == 0)
		ck_assert_str_eq(why, "");
	/* the files say nothing of the brokers */
	ck_assert_int_eq(config_brokers_same(o, n), 1);
	config_free(o);
	config_free(n);
	return why;
}

START_TEST(credentials_reload)
{
	const char	*plain = fmt("{\"credential_file\":\"%s\"}", TOKEN);

	/* added, changed, removed: within the directories egress has */
	ck_assert_str_eq(cred_reload(plain, up_creds(TOKEN, "{\"speakers\":{"
	    "\"a\":\"/etc/rtsandbox/a\"}}")), "");
	ck_assert_str_eq(cred_reload(up_creds(TOKEN, "{\"speakers\":{"
	    "\"a\":\"/d1/a\"}}"), up_creds(TOKEN, "{\"speakers\":{"
	    "\"a\":\"/d1/a2\",\"b\":\"/etc/rtsandbox/b\"},\"channels\":{"
	    "\"c\":\"/d1/c\"}}")), "");
	ck_assert_str_eq(cred_reload(up_creds(TOKEN, "{\"speakers\":{"
	    "\"a\":\"/d1/a\"}}"), plain), "");
	/* a directory egress was not started with */
	ck_assert_str_eq(cred_reload(up_creds(TOKEN, "{\"speakers\":{"
	    "\"a\":\"/d1/a\"}}"), up_creds(TOKEN, "{\"speakers\":{"
	    "\"a\":\"/d1/a\",\"b\":\"/d2/b\"}}")),
	    "the directory of upstream.credentials.speakers.b");
	ck_assert_str_eq(cred_reload(plain, up_creds(TOKEN, "{\"channels\":{"
	    "\"d:1\":\"/d2/c\"}}")),
	    "the directory of upstream.credentials.channels[\"d:1\"]");
	/* fallback "none" takes credential_file away: a restart */
	ck_assert_str_eq(cred_reload(up_creds(TOKEN, "{\"speakers\":{"
	    "\"a\":\"/etc/rtsandbox/a\"}}"), up_creds(NULL, "{\"fallback\":"
	    "\"none\",\"speakers\":{\"a\":\"/etc/rtsandbox/a\"}}")),
	    "upstream.credential_file");
	ck_assert_str_eq(cred_reload(up_creds(NULL, "{\"fallback\":\"none\","
	    "\"speakers\":{\"a\":\"/d1/a\"}}"), up_creds(NULL, "{\"fallback\":"
	    "\"none\",\"channels\":{\"b\":\"/d1/b\"}}")), "");
}
END_TEST

START_TEST(credentials_host_checks)
{
	struct config	*cfg;
	struct hc_cred	*v;
	size_t		 n;

	cfg = accepted(MK(NULL));
	ck_assert_ptr_null(config_hc_creds(cfg, &n));
	ck_assert_uint_eq(n, 0);
	config_free(cfg);
	cfg = accepted(MK("upstream", up_creds(TOKEN, "{\"speakers\":{"
	    "\"a b\":\"/t/s\"},\"channels\":{\"d:1\":\"/t/c\","
	    "\"e\":\"/t/e\"}}")));
	ck_assert_ptr_nonnull(v = config_hc_creds(cfg, &n));
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(v[0].hc_field,
	    "upstream.credentials.channels[\"d:1\"]");
	ck_assert_str_eq(v[0].hc_path, "/t/c");
	ck_assert_str_eq(v[1].hc_field, "upstream.credentials.channels.e");
	ck_assert_str_eq(v[2].hc_field,
	    "upstream.credentials.speakers[\"a b\"]");
	ck_assert_str_eq(v[2].hc_path, "/t/s");
	config_hc_creds_free(v, n);
	config_free(cfg);
}
END_TEST

/*
 * Defaults
 */

START_TEST(minimal_defaults)
{
	struct config			*cfg;
	const struct config_profile	*pr;

	cfg = accepted(MK(NULL));
	ck_assert_str_eq(cfg->state_dir, "/var/lib/rtsandbox");
	ck_assert_str_eq(cfg->control_socket, "/run/rtsandbox/control.sock");
	ck_assert_ptr_null(cfg->control_group);
	ck_assert_int_eq(cfg->has_control_group, 0);
	ck_assert_ptr_null(cfg->bot_group);
	ck_assert_int_eq(cfg->has_bot_group, 0);
	ck_assert_str_eq(cfg->image, "rtsandbox-worker:1");
	ck_assert_uint_eq(cfg->nprofiles, 1);
	ck_assert_str_eq(cfg->profiles[0].name, "default");
	ck_assert_str_eq(cfg->profiles[0].model, "claude-sonnet-4-5");
	ck_assert_uint_eq(cfg->profiles[0].nmcp, 0);
	ck_assert_str_eq(cfg->upstream_url, "https://api.anthropic.com");
	ck_assert_str_eq(cfg->upstream_credential_file,
	    "/etc/rtsandbox/upstream.token");
	ck_assert_ptr_null(cfg->upstream_ca_file);
	ck_assert_uint_eq(cfg->nmcp_servers, 0);
	ck_assert_ptr_null(cfg->mcp_credential_file);
	ck_assert_int_eq(cfg->mcp_allow_http, 0);
	ck_assert_uint_eq(cfg->ntools, 0);
	ck_assert_str_eq(cfg->docker_socket, "/var/run/docker.sock");
	ck_assert_str_eq(cfg->container_prefix, "roundtable-sandbox");
	ck_assert_str_eq(cfg->label_channel, "roundtable.sandbox.channel");
	ck_assert_str_eq(cfg->label_profile, "roundtable.sandbox.profile");
	/* no runtime: the engine's default */
	ck_assert_ptr_null(cfg->docker_runtime);
	ck_assert_uint_eq(cfg->memory_mib, 1536);
	ck_assert_uint_eq(cfg->nano_cpus, 1000000000ull);
	ck_assert_uint_eq(cfg->pids, 256);
	ck_assert_str_eq(cfg->time_zone, "UTC");
	ck_assert_uint_eq(cfg->start_ms, 90000);
	ck_assert_uint_eq(cfg->turn_ms, 600000);
	ck_assert_uint_eq(cfg->max_calls, 128);
	ck_assert_uint_eq(cfg->max_output_tokens, 128000);
	ck_assert_str_eq(cfg->default_thinking, "low");
	ck_assert_uint_eq(cfg->research_max_jobs, 2);
	ck_assert_uint_eq(cfg->research_deadline_ms, 600000);
	/* research runs with the first profile's model unless told */
	ck_assert_str_eq(cfg->research_model, "claude-sonnet-4-5");
	ck_assert_ptr_null(cfg->test_dns);
	ck_assert_int_eq(cfg->test_loopback_public, 0);
	ck_assert_ptr_null(cfg->test_fetch_ca_file);
	/* brokers and research jobs never run without their empty root
	 * unless told */
	ck_assert_int_eq(cfg->empty_root_optional, 0);
	ck_assert_uint_eq(E.nwarn, 0);
	/* 100 - strlen(state_dir) - 1 - strlen("/run/broker.sock") */
	ck_assert_uint_eq(config_max_segment_len(cfg), 100 - 18 - 1 - 16);
	pr = config_profile(cfg, "default");
	ck_assert_ptr_eq(pr, &cfg->profiles[0]);
	ck_assert_ptr_null(config_profile(cfg, "other"));
	ck_assert_ptr_null(config_mcp_server(cfg, "default"));
	config_free(cfg);
}
END_TEST

START_TEST(full_config)
{
	struct config	*cfg;
	struct group	*gr;
	const char	*json;

	json = MK(
	    "control_socket", "\"/run/rt/c.sock\"",
	    "profiles", "{\"default\":{\"model\":\"m-1\",\"mcp\":[\"docs\"]},"
	    "\"alt\":{\"model\":\"m-2\",\"mcp\":[]}}",
	    "upstream", "{\"url\":\"https://up.example:8443/\","
	    "\"credential_file\":\"/c\",\"ca_file\":\"/etc/ssl/ca.pem\"}",
	    "mcp", "{\"servers\":[{\"name\":\"docs\","
	    "\"url\":\"http://127.0.0.1:9000/mcp?x=1\","
	    "\"tools\":[\"search\",\"fetch-page\"]},"
	    "{\"name\":\"other\",\"url\":\"https://[::1]:443/\",\"tools\":[]}],"
	    "\"credential_file\":\"/etc/rtsandbox/mcp.token\","
	    "\"allow_http\":true}",
	    "tools", "[\"remember\",\"look_up\"]",
	    "docker", "{\"socket\":\"/run/docker.sock\","
	    "\"container_prefix\":\"rt\",\"label_channel\":\"x.channel\","
	    "\"label_profile\":\"x.profile\",\"limits\":{\"memory_mib\":512,"
	    "\"cpus\":0.5,\"pids\":100},\"runtime\":\"runsc\"}",
	    "time_zone", "\"America/Argentina/Buenos_Aires\"",
	    "timeouts", "{\"start_ms\":5000,\"turn_ms\":60000}",
	    "budgets", "{\"max_calls\":7,\"max_output_tokens\":4096}",
	    "default_thinking", "\"xhigh\"",
	    "sandbox", "{\"empty_root\":\"optional\"}");
	cfg = accepted(json);
	ck_assert_str_eq(cfg->control_socket, "/run/rt/c.sock");
	ck_assert_uint_eq(cfg->nprofiles, 2);
	ck_assert_str_eq(cfg->profiles[1].name, "alt");
	ck_assert_uint_eq(cfg->profiles[0].nmcp, 1);
	ck_assert_str_eq(cfg->profiles[0].mcp[0], "docs");
	ck_assert_str_eq(cfg->upstream_url, "https://up.example:8443");
	ck_assert_str_eq(cfg->upstream_ca_file, "/etc/ssl/ca.pem");
	ck_assert_uint_eq(cfg->nmcp_servers, 2);
	ck_assert_str_eq(cfg->mcp_servers[0].url,
	    "http://127.0.0.1:9000/mcp?x=1");
	ck_assert_uint_eq(cfg->mcp_servers[0].ntools, 2);
	ck_assert_str_eq(cfg->mcp_servers[0].tools[1], "fetch-page");
	ck_assert_uint_eq(cfg->mcp_servers[1].ntools, 0);
	ck_assert_ptr_eq(config_mcp_server(cfg, "other"), &cfg->mcp_servers[1]);
	ck_assert_str_eq(cfg->mcp_credential_file, "/etc/rtsandbox/mcp.token");
	ck_assert_int_eq(cfg->mcp_allow_http, 1);
	ck_assert_uint_eq(cfg->ntools, 2);
	ck_assert_str_eq(cfg->tools[1], "look_up");
	ck_assert_str_eq(cfg->docker_socket, "/run/docker.sock");
	ck_assert_str_eq(cfg->container_prefix, "rt");
	ck_assert_str_eq(cfg->label_channel, "x.channel");
	ck_assert_str_eq(cfg->label_profile, "x.profile");
	ck_assert_str_eq(cfg->docker_runtime, "runsc");
	ck_assert_uint_eq(cfg->memory_mib, 512);
	ck_assert_uint_eq(cfg->nano_cpus, 500000000ull);
	ck_assert_uint_eq(cfg->pids, 100);
	ck_assert_str_eq(cfg->time_zone, "America/Argentina/Buenos_Aires");
	ck_assert_uint_eq(cfg->start_ms, 5000);
	ck_assert_uint_eq(cfg->turn_ms, 60000);
	ck_assert_uint_eq(cfg->max_calls, 7);
	ck_assert_uint_eq(cfg->max_output_tokens, 4096);
	ck_assert_str_eq(cfg->default_thinking, "xhigh");
	ck_assert_int_eq(cfg->empty_root_optional, 1);
	config_free(cfg);

	/* A group that exists wherever the test runs: the test's own. */
	gr = getgrgid(getegid());
	ck_assert_ptr_nonnull(gr);
	cfg = accepted(MK("control_group", fmt("\"%s\"", gr->gr_name)));
	ck_assert_int_eq(cfg->has_control_group, 1);
	ck_assert_str_eq(cfg->control_group, gr->gr_name);
	ck_assert_uint_eq(cfg->control_gid, getegid());
	config_free(cfg);
}
END_TEST

/* A group of the host other than gid 0, whoever runs the test. */
static const struct group *
some_group(void)
{
	const struct group	*gr;

	setgrent();
	while ((gr = getgrent()) != NULL && gr->gr_gid == 0)
		;
	endgrent();
	ck_assert_ptr_nonnull(gr);
	return gr;
}

START_TEST(bot_group)
{
	const struct group	*gr = some_group();
	struct config		*o, *n;
	char			 name[64], why[64];
	gid_t			 gid = gr->gr_gid;

	snprintf(name, sizeof(name), "%s", gr->gr_name);
	n = accepted(MK("bot_group", fmt("\"%s\"", name)));
	ck_assert_int_eq(n->has_bot_group, 1);
	ck_assert_str_eq(n->bot_group, name);
	ck_assert_uint_eq(n->bot_gid, gid);
	/* set, removed or changed: a restart, as the file guard holds it */
	o = accepted(MK(NULL));
	ck_assert_int_eq(config_reload_check(o, n, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "bot_group");
	ck_assert_int_eq(config_reload_check(n, o, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "bot_group");
	ck_assert_int_eq(config_reload_check(n, n, why, sizeof(why)), 0);
	ck_assert_int_eq(config_brokers_same(o, n), 1);
	config_free(o);
	config_free(n);
}
END_TEST

/* Confined, the supervisor reads no group database: a reload takes the
 * gids of the names it knows. */
START_TEST(groups_without_lookups)
{
	const struct group	*gr = some_group();
	struct config		*o, *n;
	char			 name[64], why[64];
	gid_t			 gid = gr->gr_gid;

	snprintf(name, sizeof(name), "%s", gr->gr_name);
	o = accepted(MK("bot_group", fmt("\"%s\"", name), "control_group",
	    fmt("\"%s\"", name)));
	config_no_lookups();
	n = accepted(MK("bot_group", fmt("\"%s\"", name), "control_group",
	    fmt("\"%s\"", name)));
	ck_assert_uint_eq(n->bot_gid, CONFIG_GID_UNKNOWN);
	ck_assert_uint_eq(n->control_gid, CONFIG_GID_UNKNOWN);
	ck_assert_int_eq(config_reload_check(o, n, why, sizeof(why)), 0);
	config_keep_gids(n, o);
	ck_assert_uint_eq(n->bot_gid, gid);
	ck_assert_uint_eq(n->control_gid, gid);
	config_free(n);
	/* another name is still a change, and the form still checked */
	n = accepted(MK("bot_group", "\"no_such_group_rt\"", "control_group",
	    fmt("\"%s\"", name)));
	ck_assert_int_eq(config_reload_check(o, n, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "bot_group");
	config_free(n);
	refused(MK("bot_group", "\"Wheel\""), "bot_group",
	    "must be a group name");
	config_free(o);
}
END_TEST

START_TEST(cpus_rounding)
{
	struct config	*cfg;

	cfg = accepted(MK("docker", "{\"limits\":{\"cpus\":0.01}}"));
	ck_assert_uint_eq(cfg->nano_cpus, 10000000ull);
	config_free(cfg);
	cfg = accepted(MK("docker", "{\"limits\":{\"cpus\":64}}"));
	ck_assert_uint_eq(cfg->nano_cpus, 64000000000ull);
	config_free(cfg);
	cfg = accepted(MK("docker", "{\"limits\":{\"cpus\":1.3333333333}}"));
	ck_assert_uint_eq(cfg->nano_cpus, 1333333333ull);
	config_free(cfg);
}
END_TEST

/*
 * Each rule: a top-level field set to a value, then the field the error
 * must name and the rule it must state (NULL field: accepted).
 */
struct rule_case {
	const char	*name;
	const char	*value;
	const char	*field;
	const char	*rule;
};

#define INT_START	"must be an integer from 1000 to 600000"
#define INT_CALLS	"must be an integer from 1 to 1000"
#define INT_TOKENS	"must be an integer from 1025 to 200000"
#define INT_MEMORY	"must be an integer from 64 to 65536"
#define INT_PIDS	"must be an integer from 16 to 65536"
#define NUM_CPUS	"must be a number from 0.01 to 64"
#define ABS		"must be an absolute path"
#define CANON		"must be in canonical form"
#define STR		"must be a string"
#define OBJ		"must be an object"
#define ARR		"must be an array"
#define UNKNOWN		"unknown field"
#define DUP		"duplicate key"
#define REQ		"is required"
#define PREFIX		"must match [a-z0-9][a-z0-9-]{0,40}"
#define RUNTIME		"must be the name of one of the engine's runtimes, " \
			"matching [a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}"
#define HOSTTOOL	"must match [a-z][a-z0-9_]{0,47}"
#define USETOOL		"must match [a-zA-Z0-9_-]{1,128}"
#define LABEL		"must be 1 to 128 characters of [a-z0-9._-] starting " \
			"with a letter"
#define TZ		"must be an IANA zone name"
#define THINK		"must be one of low, medium, high, xhigh"
#define HTTPS		"must be an https URL"
#define CRED		"{\"credential_file\":\"/c\""
#define SRV(url)	"{\"servers\":[{\"name\":\"a\",\"url\":\"" url "\"," \
			"\"tools\":[]}],\"credential_file\":\"/m\"}"

static const struct rule_case rules[] = {
	/* timeouts */
	{ "timeouts", "{\"start_ms\":1000}", NULL, NULL },
	{ "timeouts", "{\"start_ms\":999}", "timeouts.start_ms", INT_START },
	{ "timeouts", "{\"start_ms\":600000}", NULL, NULL },
	{ "timeouts", "{\"start_ms\":600001}", "timeouts.start_ms", INT_START },
	{ "timeouts", "{\"turn_ms\":1000}", NULL, NULL },
	{ "timeouts", "{\"turn_ms\":999}", "timeouts.turn_ms", INT_START },
	{ "timeouts", "{\"turn_ms\":600000}", NULL, NULL },
	{ "timeouts", "{\"turn_ms\":600001}", "timeouts.turn_ms", INT_START },
	{ "timeouts", "{\"start_ms\":1500.5}", "timeouts.start_ms", INT_START },
	{ "timeouts", "{\"start_ms\":1e400}", "timeouts.start_ms", INT_START },
	{ "timeouts", "{\"start_ms\":-1000}", "timeouts.start_ms", INT_START },
	{ "timeouts", "{\"start_ms\":\"5000\"}", "timeouts.start_ms",
	    INT_START },
	{ "timeouts", "{\"start_ms\":null}", "timeouts.start_ms", INT_START },
	{ "timeouts", "{\"turn_ms\":true}", "timeouts.turn_ms", INT_START },
	{ "timeouts", "{\"start_ms\":5e3}", NULL, NULL },
	{ "timeouts", "{\"start_ms\":1E+3}", NULL, NULL },
	{ "timeouts", "{\"start_ms\":1000.0}", NULL, NULL },
	{ "timeouts", "[]", "timeouts", OBJ },
	{ "timeouts", "{\"start\":1000}", "timeouts.start", UNKNOWN },
	/* budgets */
	{ "budgets", "{\"max_calls\":1}", NULL, NULL },
	{ "budgets", "{\"max_calls\":0}", "budgets.max_calls", INT_CALLS },
	{ "budgets", "{\"max_calls\":1000}", NULL, NULL },
	{ "budgets", "{\"max_calls\":1001}", "budgets.max_calls", INT_CALLS },
	{ "budgets", "{\"max_calls\":-1}", "budgets.max_calls", INT_CALLS },
	{ "budgets", "{\"max_calls\":2.5}", "budgets.max_calls", INT_CALLS },
	{ "budgets", "{\"max_calls\":[1]}", "budgets.max_calls", INT_CALLS },
	{ "budgets", "{\"max_output_tokens\":1025}", NULL, NULL },
	{ "budgets", "{\"max_output_tokens\":1024}",
	    "budgets.max_output_tokens", INT_TOKENS },
	{ "budgets", "{\"max_output_tokens\":200000}", NULL, NULL },
	{ "budgets", "{\"max_output_tokens\":200001}",
	    "budgets.max_output_tokens", INT_TOKENS },
	{ "budgets", "{\"max_output_tokens\":\"big\"}",
	    "budgets.max_output_tokens", INT_TOKENS },
	{ "budgets", "1", "budgets", OBJ },
	{ "budgets", "{\"calls\":1}", "budgets.calls", UNKNOWN },
	/* docker.limits */
	{ "docker", "{\"limits\":{\"memory_mib\":64}}", NULL, NULL },
	{ "docker", "{\"limits\":{\"memory_mib\":63}}",
	    "docker.limits.memory_mib", INT_MEMORY },
	{ "docker", "{\"limits\":{\"memory_mib\":65536}}", NULL, NULL },
	{ "docker", "{\"limits\":{\"memory_mib\":65537}}",
	    "docker.limits.memory_mib", INT_MEMORY },
	{ "docker", "{\"limits\":{\"memory_mib\":\"1g\"}}",
	    "docker.limits.memory_mib", INT_MEMORY },
	{ "docker", "{\"limits\":{\"pids\":16}}", NULL, NULL },
	{ "docker", "{\"limits\":{\"pids\":15}}", "docker.limits.pids",
	    INT_PIDS },
	{ "docker", "{\"limits\":{\"pids\":65536}}", NULL, NULL },
	{ "docker", "{\"limits\":{\"pids\":65537}}", "docker.limits.pids",
	    INT_PIDS },
	{ "docker", "{\"limits\":{\"pids\":100.5}}", "docker.limits.pids",
	    INT_PIDS },
	{ "docker", "{\"limits\":{\"cpus\":0.009}}", "docker.limits.cpus",
	    NUM_CPUS },
	{ "docker", "{\"limits\":{\"cpus\":64.01}}", "docker.limits.cpus",
	    NUM_CPUS },
	{ "docker", "{\"limits\":{\"cpus\":-1}}", "docker.limits.cpus",
	    NUM_CPUS },
	{ "docker", "{\"limits\":{\"cpus\":1e400}}", "docker.limits.cpus",
	    NUM_CPUS },
	{ "docker", "{\"limits\":{\"cpus\":\"1\"}}", "docker.limits.cpus",
	    NUM_CPUS },
	{ "docker", "{\"limits\":{\"cpus\":true}}", "docker.limits.cpus",
	    NUM_CPUS },
	{ "docker", "{\"limits\":[]}", "docker.limits", OBJ },
	{ "docker", "{\"limits\":{\"memory\":64}}", "docker.limits.memory",
	    UNKNOWN },
	/* docker */
	{ "docker", "[]", "docker", OBJ },
	{ "docker", "{\"sock\":\"/x\"}", "docker.sock", UNKNOWN },
	{ "docker", "{\"socket\":\"docker.sock\"}", "docker.socket", ABS },
	{ "docker", "{\"socket\":1}", "docker.socket", STR },
	{ "docker", "{\"container_prefix\":\"-rt\"}", "docker.container_prefix",
	    PREFIX },
	{ "docker", "{\"container_prefix\":\"Rt\"}", "docker.container_prefix",
	    PREFIX },
	{ "docker", "{\"container_prefix\":\"\"}", "docker.container_prefix",
	    PREFIX },
	{ "docker", "{\"container_prefix\":\"r_t\"}", "docker.container_prefix",
	    PREFIX },
	{ "docker", "{\"container_prefix\":7}", "docker.container_prefix",
	    STR },
	{ "docker", "{\"label_channel\":\"Channel\"}", "docker.label_channel",
	    LABEL },
	{ "docker", "{\"label_channel\":\"1channel\"}", "docker.label_channel",
	    LABEL },
	{ "docker", "{\"label_channel\":\"\"}", "docker.label_channel", LABEL },
	{ "docker", "{\"label_profile\":\"a/b\"}", "docker.label_profile",
	    LABEL },
	{ "docker", "{\"label_profile\":false}", "docker.label_profile", STR },
	{ "docker", "{\"label_channel\":\"a.b\",\"label_profile\":\"a.b\"}",
	    "docker.label_profile", "must differ from docker.label_channel" },
	{ "docker", "{\"label_channel\":\"roundtable.sandbox.profile\"}",
	    "docker.label_profile", "must differ from docker.label_channel" },
	{ "docker", "{\"label_channel\":\"a.b-c_d9\"}", NULL, NULL },
	{ "docker", "{\"runtime\":\"runsc\"}", NULL, NULL },
	{ "docker", "{\"runtime\":\"io.containerd.runsc.v1\"}", NULL, NULL },
	{ "docker", "{\"runtime\":\"R\"}", NULL, NULL },
	{ "docker", "{\"runtime\":\"\"}", "docker.runtime", RUNTIME },
	{ "docker", "{\"runtime\":\"-runsc\"}", "docker.runtime", RUNTIME },
	{ "docker", "{\"runtime\":\".runsc\"}", "docker.runtime", RUNTIME },
	{ "docker", "{\"runtime\":\"/usr/bin/runsc\"}", "docker.runtime",
	    RUNTIME },
	{ "docker", "{\"runtime\":\"run sc\"}", "docker.runtime", RUNTIME },
	{ "docker", "{\"runtime\":\"runsc --debug\"}", "docker.runtime",
	    RUNTIME },
	{ "docker", "{\"runtime\":\"r\\u00e9\"}", "docker.runtime", RUNTIME },
	{ "docker", "{\"runtime\":null}", "docker.runtime", STR },
	{ "docker", "{\"runtime\":[\"runsc\"]}", "docker.runtime", STR },
	{ "docker", "{\"runtime\":1}", "docker.runtime", STR },
	/* tools */
	{ "tools", "[]", NULL, NULL },
	{ "tools", "[\"a\"]", NULL, NULL },
	{ "tools", "[\"Remember\"]", "tools[0]", HOSTTOOL },
	{ "tools", "[\"ok\",\"9x\"]", "tools[1]", HOSTTOOL },
	{ "tools", "[\"ok\",\"a-b\"]", "tools[1]", HOSTTOOL },
	{ "tools", "[\"\"]", "tools[0]", HOSTTOOL },
	{ "tools", "[\"a\",\"b\",\"a\"]", "tools[2]", "duplicate name \"a\"" },
	{ "tools", "[1]", "tools[0]", STR },
	{ "tools", "\"a\"", "tools", ARR },
	{ "tools", "{}", "tools", ARR },
	/* state_dir */
	{ "state_dir", "\"/\"", "state_dir", "must not be \"/\"" },
	{ "state_dir", "\"var/lib/x\"", "state_dir", ABS },
	{ "state_dir", "\"\"", "state_dir", ABS },
	{ "state_dir", "\"//var\"", "state_dir", CANON },
	{ "state_dir", "\"/var//lib\"", "state_dir", CANON },
	{ "state_dir", "\"/var/lib/\"", "state_dir", CANON },
	{ "state_dir", "\"/var/./lib\"", "state_dir", CANON },
	{ "state_dir", "\"/var/../lib\"", "state_dir", CANON },
	{ "state_dir", "\"/var/lib/..\"", "state_dir", CANON },
	{ "state_dir", "\"/var/lib/.\"", "state_dir", CANON },
	{ "state_dir", "\"/var/lib/.x/..y\"", NULL, NULL },
	{ "state_dir", "\"/var/a:b\"", "state_dir", "must not contain \":\"" },
	{ "state_dir", "\"/var/a,b\"", "state_dir", "must not contain \":\"" },
	{ "state_dir", "\"/var/a\\nb\"", "state_dir",
	    "must not contain control characters" },
	{ "state_dir", "5", "state_dir", STR },
	{ "state_dir", NULL, "state_dir", REQ },
	/* control socket and group */
	{ "control_socket", "\"control.sock\"", "control_socket", ABS },
	{ "control_socket", "[]", "control_socket", STR },
	{ "control_group", "\"Wheel\"", "control_group",
	    "must be a group name matching [a-z_][a-z0-9_-]{0,31}" },
	{ "control_group", "\"-x\"", "control_group", "must be a group name" },
	{ "control_group", "\"\"", "control_group", "must be a group name" },
	{ "control_group", "\"a2345678901234567890123456789012\"",
	    "control_group", "no such group" },
	{ "control_group", "\"a23456789012345678901234567890123\"",
	    "control_group", "must be a group name" },
	{ "control_group", "\"no_such_group_rt\"", "control_group",
	    "no such group \"no_such_group_rt\"" },
	{ "control_group", "0", "control_group", STR },
	/* bot_group: the same rules, and never gid 0 */
	{ "bot_group", "\"Wheel\"", "bot_group",
	    "must be a group name matching [a-z_][a-z0-9_-]{0,31}" },
	{ "bot_group", "\"no_such_group_rt\"", "bot_group",
	    "no such group \"no_such_group_rt\"" },
	{ "bot_group", "\"root\"", "bot_group",
	    "must not be a group of gid 0" },
	{ "bot_group", "null", "bot_group", STR },
	/* image */
	{ "image", NULL, "image", REQ },
	{ "image", "\"\"", "image", "must be an image name" },
	{ "image", "\"-v\"", "image", "not starting with \"-\"" },
	{ "image", "\"a b\"", "image", "without white space" },
	{ "image", "\"a\\tb\"", "image", "must be an image name" },
	{ "image", "{}", "image", STR },
	{ "image", "\"registry.example:5000/w@sha256:00ff\"", NULL, NULL },
	/* time_zone */
	{ "time_zone", "\"Europe/Paris\"", NULL, NULL },
	{ "time_zone", "\"Etc/GMT+1\"", NULL, NULL },
	{ "time_zone", "\"Etc/GMT-14\"", NULL, NULL },
	{ "time_zone", "\"/etc/localtime\"", "time_zone", TZ },
	{ "time_zone", "\"../etc\"", "time_zone", TZ },
	{ "time_zone", "\"Europe/../x\"", "time_zone", TZ },
	{ "time_zone", "\"Europe/..\"", "time_zone", TZ },
	{ "time_zone", "\"Europe//Paris\"", "time_zone", TZ },
	{ "time_zone", "\"Europe/\"", "time_zone", TZ },
	{ "time_zone", "\"\"", "time_zone", TZ },
	{ "time_zone", "\"UTC,x\"", "time_zone", TZ },
	{ "time_zone", "\"Europe/Paris \"", "time_zone", TZ },
	{ "time_zone", "\"Europe/Zürich\"", "time_zone", TZ },
	{ "time_zone", "1", "time_zone", STR },
	/* default_thinking */
	{ "default_thinking", "\"medium\"", NULL, NULL },
	{ "default_thinking", "\"high\"", NULL, NULL },
	{ "default_thinking", "\"max\"", "default_thinking", THINK },
	{ "default_thinking", "\"LOW\"", "default_thinking", THINK },
	{ "default_thinking", "2", "default_thinking", STR },
	/* profiles */
	{ "profiles", NULL, "profiles", REQ },
	{ "profiles", "{}", "profiles", "must have from 1 to 64 profiles" },
	{ "profiles", "[]", "profiles", "must be an object" },
	{ "profiles", "{\"a b\":{\"model\":\"m\"}}", "profiles[\"a b\"]",
	    "profile name must match [a-zA-Z0-9_-]{1,100}" },
	{ "profiles", "{\"\":{\"model\":\"m\"}}", "profiles[\"\"]",
	    "profile name must match" },
	{ "profiles", "{\"a\":\"m\"}", "profiles.a", OBJ },
	{ "profiles", "{\"a\":{}}", "profiles.a.model", REQ },
	{ "profiles", "{\"a\":{\"model\":\"\"}}", "profiles.a.model",
	    "must be 1 to 256 bytes without white space or control "
	    "characters" },
	{ "profiles", "{\"a\":{\"model\":\"m 1\"}}", "profiles.a.model",
	    "without white space" },
	{ "profiles", "{\"a\":{\"model\":\"m\\u00a01\"}}", "profiles.a.model",
	    "without white space" },
	{ "profiles", "{\"a\":{\"model\":\"m\\u0085\"}}", "profiles.a.model",
	    "control characters" },
	{ "profiles", "{\"a\":{\"model\":\"m\\u007f\"}}", "profiles.a.model",
	    "control characters" },
	{ "profiles", "{\"a\":{\"model\":\"m\xe2\x80\x83x\"}}",
	    "profiles.a.model", "without white space" },
	{ "profiles", "{\"a\":{\"model\":\"m\\u3000\"}}", "profiles.a.model",
	    "without white space" },
	{ "profiles", "{\"a\":{\"model\":\"m\\u00A0\"}}", "profiles.a.model",
	    "without white space" },
	{ "profiles", "{\"a\":{\"model\":\"m-\xf0\x9f\x98\x80\"}}", NULL,
	    NULL },
	{ "profiles", "{\"a\":{\"model\":\"m-\\ud83d\\ude00\"}}", NULL,
	    NULL },
	{ "profiles", "{\"a\":{\"model\":1}}", "profiles.a.model", STR },
	{ "profiles", "{\"a\":{\"model\":\"m\",\"tools\":[]}}",
	    "profiles.a.tools", UNKNOWN },
	{ "profiles", "{\"a\":{\"model\":\"m\",\"mcp\":{}}}", "profiles.a.mcp",
	    "must be an array of server names" },
	{ "profiles", "{\"a\":{\"model\":\"m\",\"mcp\":[\"docs\"]}}",
	    "profiles.a.mcp[0]", "names no server in mcp.servers (\"docs\")" },
	{ "profiles", "{\"a\":{\"model\":\"m\",\"mcp\":[2]}}",
	    "profiles.a.mcp[0]", STR },
	{ "profiles", "{\"a\":{\"model\":\"m\",\"model\":\"n\"}}",
	    "profiles.a.model", DUP },
	{ "profiles", "{\"a\":{\"model\":\"m\"},\"a\":{\"model\":\"n\"}}",
	    "profiles.a", DUP },
	{ "profiles", "{\"a-B_9\":{\"model\":\"m\"},\"b\":{\"model\":\"m\"}}",
	    NULL, NULL },
	/* upstream */
	{ "upstream", NULL, "upstream", REQ },
	{ "upstream", "\"https://x\"", "upstream", OBJ },
	{ "upstream", "{}", "upstream.credential_file", REQ },
	{ "upstream", "{\"credential\":\"hook\"}", NULL, NULL },
	{ "upstream", "{\"credential\":\"file\"}", "upstream.credential",
	    "must be \"hook\"" },
	{ "upstream", "{\"credential\":true}", "upstream.credential",
	    "must be \"hook\"" },
	{ "upstream", CRED ",\"credential\":\"hook\"}",
	    "upstream.credential", "are exclusive" },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":"
	    "\"https://m.example/\",\"tools\":[]}],\"credential\":\"hook\"}",
	    NULL, NULL },
	{ "mcp", "{\"credential\":\"hook\",\"credential_file\":\"/m\"}",
	    "mcp.credential", "are exclusive" },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":"
	    "\"https://m.example/\",\"tools\":[]}]}", "mcp.credential_file",
	    "is required when mcp.servers is not empty" },
	/* upstream.credentials */
	{ "upstream", CRED ",\"credentials\":{}}", NULL, NULL },
	{ "upstream", CRED ",\"credentials\":[]}", "upstream.credentials",
	    OBJ },
	{ "upstream", CRED ",\"credentials\":{\"users\":{}}}",
	    "upstream.credentials.users", UNKNOWN },
	{ "upstream", CRED ",\"credentials\":{\"fallback\":\"none\","
	    "\"fallback\":\"none\"}}", "upstream.credentials.fallback", DUP },
	{ "upstream", CRED ",\"credentials\":{\"channels\":[\"/t\"]}}",
	    "upstream.credentials.channels",
	    "must be an object of channel keys to credential files" },
	{ "upstream", CRED ",\"credentials\":{\"speakers\":\"/t\"}}",
	    "upstream.credentials.speakers",
	    "must be an object of speaker ids to credential files" },
	{ "upstream", CRED ",\"credentials\":{\"speakers\":{\"a\":1}}}",
	    "upstream.credentials.speakers.a", STR },
	{ "upstream", CRED ",\"credentials\":{\"speakers\":{\"a\":\"t\"}}}",
	    "upstream.credentials.speakers.a", ABS },
	{ "upstream", CRED ",\"credentials\":{\"speakers\":{\"a\":"
	    "\"/t\\u0007\"}}}", "upstream.credentials.speakers.a",
	    "must not contain control characters" },
	{ "upstream", CRED ",\"credentials\":{\"channels\":{\"\":\"/t\"}}}",
	    "upstream.credentials.channels[\"\"]",
	    "channel key must be 1 to 256 chars of valid UTF-8" },
	{ "upstream", CRED ",\"credentials\":{\"speakers\":{\"\":\"/t\"}}}",
	    "upstream.credentials.speakers[\"\"]",
	    "speaker id must be 1 to 256 chars of valid UTF-8" },
	{ "upstream", CRED ",\"credentials\":{\"speakers\":{\"b\":\"/t\","
	    "\"a\":\"/u\",\"b\":\"/v\"}}}", "upstream.credentials.speakers.b",
	    DUP },
	{ "upstream", CRED ",\"credentials\":{\"channels\":{\"d:1\":\"/t\","
	    "\"d:1\":\"/t\"}}}", "upstream.credentials.channels[\"d:1\"]",
	    DUP },
	/* the same key as a channel and a speaker is two entries */
	{ "upstream", CRED ",\"credentials\":{\"channels\":{\"a\":\"/t\"},"
	    "\"speakers\":{\"a\":\"/u\"}}}", NULL, NULL },
	{ "upstream", CRED ",\"credentials\":{\"fallback\":\"default\"}}",
	    NULL, NULL },
	{ "upstream", CRED ",\"credentials\":{\"fallback\":\"channel\"}}",
	    "upstream.credentials.fallback",
	    "must be \"default\" or \"none\"" },
	{ "upstream", CRED ",\"credentials\":{\"fallback\":null}}",
	    "upstream.credentials.fallback", STR },
	{ "upstream", "{\"credentials\":{\"fallback\":\"none\","
	    "\"speakers\":{\"a\":\"/t\"}}}", NULL, NULL },
	{ "upstream", CRED ",\"credentials\":{\"fallback\":\"none\","
	    "\"speakers\":{\"a\":\"/t\"}}}", "upstream.credential_file",
	    "is never used with upstream.credentials.fallback \"none\"" },
	{ "upstream", "{\"credentials\":{\"speakers\":{\"a\":\"/t\"}}}",
	    "upstream.credential_file", "is required for the speakers and "
	    "channels without a file of their own" },
	{ "upstream", "{\"credentials\":{\"fallback\":\"default\"}}",
	    "upstream.credential_file", "is required for the speakers" },
	{ "upstream", "{\"credential\":\"hook\",\"credentials\":{"
	    "\"speakers\":{\"a\":\"/t\"}}}", "upstream.credentials",
	    "cannot be used with upstream.credential \"hook\"" },
	{ "upstream", "{\"credential\":\"hook\",\"credentials\":{"
	    "\"fallback\":\"none\"}}", "upstream.credentials",
	    "cannot be used with upstream.credential \"hook\"" },
	{ "upstream", "{\"credential_file\":\"token\"}",
	    "upstream.credential_file", ABS },
	{ "upstream", "{\"credential_file\":[\"/t\"]}",
	    "upstream.credential_file", STR },
	{ "upstream", CRED ",\"ca_file\":\"ca.pem\"}", "upstream.ca_file",
	    ABS },
	{ "upstream", CRED ",\"ca_file\":1}", "upstream.ca_file", STR },
	{ "upstream", CRED ",\"proxy\":\"x\"}", "upstream.proxy", UNKNOWN },
	{ "upstream", CRED ",\"url\":\"http://api.example\"}", "upstream.url",
	    HTTPS },
	{ "upstream", CRED ",\"url\":\"HTTPS://api.example\"}", "upstream.url",
	    HTTPS },
	{ "upstream", CRED ",\"url\":\"ftp://api.example\"}", "upstream.url",
	    HTTPS },
	{ "upstream", CRED ",\"url\":\"api.example\"}", "upstream.url", HTTPS },
	{ "upstream", CRED ",\"url\":\"https://\"}", "upstream.url",
	    "must have a host" },
	{ "upstream", CRED ",\"url\":\"https:///v1\"}", "upstream.url",
	    "must have a host" },
	{ "upstream", CRED ",\"url\":\"https://:443\"}", "upstream.url",
	    "must have a host" },
	{ "upstream", CRED ",\"url\":\"https://u:p@api.example\"}",
	    "upstream.url", "must not contain user info" },
	{ "upstream", CRED ",\"url\":\"https://api.example/?a=1\"}",
	    "upstream.url", "must not have a query" },
	{ "upstream", CRED ",\"url\":\"https://api.example?a=1\"}",
	    "upstream.url", "must not have a query" },
	{ "upstream", CRED ",\"url\":\"https://api.example/#x\"}",
	    "upstream.url", "must not have a fragment" },
	{ "upstream", CRED ",\"url\":\"https://api.example/v1\"}",
	    "upstream.url", "must have no path" },
	{ "upstream", CRED ",\"url\":\"https://api.example//\"}",
	    "upstream.url", "must have no path" },
	{ "upstream", CRED ",\"url\":\"https://api.example:0\"}",
	    "upstream.url", "must have a port from 1 to 65535" },
	{ "upstream", CRED ",\"url\":\"https://api.example:65536\"}",
	    "upstream.url", "must have a port from 1 to 65535" },
	{ "upstream", CRED ",\"url\":\"https://api.example:\"}",
	    "upstream.url", "must have a port from 1 to 65535" },
	{ "upstream", CRED ",\"url\":\"https://api.example:8a\"}",
	    "upstream.url", "must have a port from 1 to 65535" },
	{ "upstream", CRED ",\"url\":\"https://api.example:65535\"}", NULL,
	    NULL },
	{ "upstream", CRED ",\"url\":\"https://api.example:1\"}", NULL, NULL },
	{ "upstream", CRED ",\"url\":\"https://api .example\"}", "upstream.url",
	    "printable ASCII" },
	{ "upstream", CRED ",\"url\":\"https://api!.example\"}", "upstream.url",
	    "must have a valid host" },
	{ "upstream", CRED ",\"url\":\"https://[::1\"}", "upstream.url",
	    "must have a host" },
	{ "upstream", CRED ",\"url\":\"https://[::1]:8443/\"}", NULL, NULL },
	{ "upstream", CRED ",\"url\":\"https://[::g]/\"}", "upstream.url",
	    "must have a valid host" },
	{ "upstream", CRED ",\"url\":\"https://[::1]x/\"}", "upstream.url",
	    "must have a port from 1 to 65535" },
	{ "upstream", CRED ",\"url\":7}", "upstream.url", STR },
	/* mcp */
	{ "mcp", "[]", "mcp", OBJ },
	{ "mcp", "{\"servers\":{}}", "mcp.servers", ARR },
	{ "mcp", "{\"server\":[]}", "mcp.server", UNKNOWN },
	{ "mcp", "{\"servers\":[]}", NULL, NULL },
	{ "mcp", "{\"allow_http\":1}", "mcp.allow_http",
	    "must be true or false" },
	{ "mcp", "{\"credential_file\":\"m.token\"}", "mcp.credential_file",
	    ABS },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":\"https://m\","
	    "\"tools\":[]}]}", "mcp.credential_file",
	    "is required when mcp.servers is not empty" },
	{ "mcp", SRV("https://mcp.example/v1/mcp"), NULL, NULL },
	{ "mcp", SRV("https://mcp.example:8443"), NULL, NULL },
	{ "mcp", SRV("https://mcp.example/mcp?key=%41"), NULL, NULL },
	{ "mcp", SRV("http://mcp.example/mcp"), "mcp.servers[0].url",
	    "must be an https URL (http needs mcp.allow_http)" },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":\"http://m/x\","
	    "\"tools\":[]}],\"credential_file\":\"/m\",\"allow_http\":false}",
	    "mcp.servers[0].url", "http needs mcp.allow_http" },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":\"http://m/x\","
	    "\"tools\":[]}],\"credential_file\":\"/m\",\"allow_http\":true}",
	    NULL, NULL },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":\"ftp://m/x\","
	    "\"tools\":[]}],\"credential_file\":\"/m\",\"allow_http\":true}",
	    "mcp.servers[0].url", "must be an http or https URL" },
	{ "mcp", SRV("https://user@mcp.example"), "mcp.servers[0].url",
	    "must not contain user info" },
	{ "mcp", SRV("https://mcp.example/#top"), "mcp.servers[0].url",
	    "must not have a fragment" },
	{ "mcp", SRV("https:///mcp"), "mcp.servers[0].url",
	    "must have a host" },
	{ "mcp", SRV("https://mcp.example:99999/"), "mcp.servers[0].url",
	    "must have a port from 1 to 65535" },
	{ "mcp", SRV("https://mcp.example/a b"), "mcp.servers[0].url",
	    "printable ASCII" },
	{ "mcp", SRV("https://mcp.example/%zz"), "mcp.servers[0].url",
	    "percent-escapes" },
	{ "mcp", SRV("https://mcp.example/caf\\u00e9"), "mcp.servers[0].url",
	    "printable ASCII" },
	{ "mcp", "{\"servers\":[{\"url\":\"https://m\",\"tools\":[]}],"
	    "\"credential_file\":\"/m\"}", "mcp.servers[0].name", REQ },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"tools\":[]}],"
	    "\"credential_file\":\"/m\"}", "mcp.servers[0].url", REQ },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":\"https://m\"}],"
	    "\"credential_file\":\"/m\"}", "mcp.servers[0].tools", REQ },
	{ "mcp", "{\"servers\":[{\"name\":\"a b\",\"url\":\"https://m\","
	    "\"tools\":[]}],\"credential_file\":\"/m\"}", "mcp.servers[0].name",
	    "must match [a-zA-Z0-9_-]{1,100}" },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":\"https://m\","
	    "\"tools\":[]},{\"name\":\"a\",\"url\":\"https://n\","
	    "\"tools\":[]}],\"credential_file\":\"/m\"}", "mcp.servers[1].name",
	    "duplicate server name \"a\"" },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":\"https://m\","
	    "\"tools\":[],\"headers\":{}}],\"credential_file\":\"/m\"}",
	    "mcp.servers[0].headers", UNKNOWN },
	{ "mcp", "{\"servers\":[\"a\"],\"credential_file\":\"/m\"}",
	    "mcp.servers[0]", OBJ },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":\"https://m\","
	    "\"tools\":[\"t.x\"]}],\"credential_file\":\"/m\"}",
	    "mcp.servers[0].tools[0]", USETOOL },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":\"https://m\","
	    "\"tools\":[\"t\",\"T\",\"t\"]}],\"credential_file\":\"/m\"}",
	    "mcp.servers[0].tools[2]", "duplicate name \"t\"" },
	{ "mcp", "{\"servers\":[{\"name\":\"a\",\"url\":\"https://m\","
	    "\"tools\":\"t\"}],\"credential_file\":\"/m\"}",
	    "mcp.servers[0].tools", ARR },
	/* compaction */
	{ "compaction", "{\"engine\":\"pi-roundtable/jev@1\"}", NULL, NULL },
	{ "compaction", "{}", "compaction.engine", "is required" },
	{ "compaction", "{\"engine\":\"a b\"}", "compaction.engine",
	    "must be 1 to 100 of [a-zA-Z0-9@/._-]" },
	{ "compaction", "{\"engine\":\"\"}", "compaction.engine",
	    "must be 1 to 100" },
	{ "compaction", "{\"engine\":\"e\",\"timeout_ms\":1000}", NULL,
	    NULL },
	{ "compaction", "{\"engine\":\"e\",\"timeout_ms\":999}",
	    "compaction.timeout_ms", "from 1000 to 600000" },
	{ "compaction", "{\"engine\":\"e\",\"timeout_ms\":600000}", NULL,
	    NULL },
	{ "compaction", "{\"engine\":\"e\",\"timeout_ms\":600001}",
	    "compaction.timeout_ms", "from 1000 to 600000" },
	{ "compaction", "{\"engine\":\"e\",\"max_request_bytes\":1}", NULL,
	    NULL },
	{ "compaction", "{\"engine\":\"e\",\"max_request_bytes\":0}",
	    "compaction.max_request_bytes", "from 1 to 100663296" },
	{ "compaction", "{\"engine\":\"e\",\"max_request_bytes\":"
	    "100663296}", NULL, NULL },
	{ "compaction", "{\"engine\":\"e\",\"max_request_bytes\":"
	    "100663297}", "compaction.max_request_bytes",
	    "from 1 to 100663296" },
	{ "compaction", "{\"engine\":\"e\",\"model\":\"m\"}",
	    "compaction.model", UNKNOWN },
	{ "compaction", "[]", "compaction", OBJ },
	/* precheck */
	{ "precheck", "{}", NULL, NULL },
	{ "precheck", "{\"entrypoint\":[\"/rtsandbox-worker\",\"precheck\"]}",
	    NULL, NULL },
	{ "precheck", "{\"entrypoint\":[]}", "precheck.entrypoint",
	    "1 to 16 strings" },
	{ "precheck", "{\"entrypoint\":[\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
	    "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"]}",
	    NULL, NULL },
	{ "precheck", "{\"entrypoint\":[\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
	    "\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\","
	    "\"a\"]}", "precheck.entrypoint", "1 to 16 strings" },
	{ "precheck", "{\"entrypoint\":[\"-x\"]}", "precheck.entrypoint[0]",
	    "not starting with" },
	{ "precheck", "{\"entrypoint\":[\"a\\nb\"]}",
	    "precheck.entrypoint[0]", "without CR or LF" },
	{ "precheck", "{\"entrypoint\":[\"\"]}", "precheck.entrypoint[0]",
	    "1 to 256 bytes" },
	{ "precheck", "{\"entrypoint\":\"bun\"}", "precheck.entrypoint",
	    "array" },
	{ "precheck", "{\"timeout_ms\":1000}", NULL, NULL },
	{ "precheck", "{\"timeout_ms\":999}", "precheck.timeout_ms",
	    "from 1000 to 600000" },
	{ "precheck", "{\"timeout_ms\":600000}", NULL, NULL },
	{ "precheck", "{\"timeout_ms\":600001}", "precheck.timeout_ms",
	    "from 1000 to 600000" },
	{ "precheck", "{\"max_calls\":1}", NULL, NULL },
	{ "precheck", "{\"max_calls\":0}", "precheck.max_calls",
	    "from 1 to 100" },
	{ "precheck", "{\"max_calls\":100}", NULL, NULL },
	{ "precheck", "{\"max_calls\":101}", "precheck.max_calls",
	    "from 1 to 100" },
	{ "precheck", "{\"max_runs\":32}", NULL, NULL },
	{ "precheck", "{\"max_runs\":33}", "precheck.max_runs",
	    "from 1 to 32" },
	{ "precheck", "{\"max_runs\":0}", "precheck.max_runs",
	    "from 1 to 32" },
	{ "precheck", "{\"limits\":{\"memory_mib\":64,\"pids\":8,"
	    "\"cpus\":0.01}}", NULL, NULL },
	{ "precheck", "{\"limits\":{\"memory_mib\":63}}",
	    "precheck.limits.memory_mib", "from 64 to 1536" },
	{ "precheck", "{\"limits\":{\"memory_mib\":1536,\"pids\":256,"
	    "\"cpus\":1}}", NULL, NULL },
	{ "precheck", "{\"limits\":{\"memory_mib\":1537}}",
	    "precheck.limits.memory_mib", "from 64 to 1536" },
	{ "precheck", "{\"limits\":{\"pids\":7}}", "precheck.limits.pids",
	    "from 8 to 256" },
	{ "precheck", "{\"limits\":{\"pids\":257}}", "precheck.limits.pids",
	    "from 8 to 256" },
	{ "precheck", "{\"limits\":{\"cpus\":1.01}}", "precheck.limits.cpus",
	    "from 0.01 to 1" },
	{ "precheck", "{\"limits\":{\"cpus\":0.009}}", "precheck.limits.cpus",
	    "from 0.01 to 1" },
	{ "precheck", "{\"image\":\"x\"}", "precheck.image", UNKNOWN },
	{ "precheck", "[]", "precheck", OBJ },
	/* research */
	{ "research", "{\"max_jobs\":1}", NULL, NULL },
	{ "research", "{\"max_jobs\":0}", "research.max_jobs",
	    "from 1 to 10" },
	{ "research", "{\"max_jobs\":10}", NULL, NULL },
	{ "research", "{\"max_jobs\":11}", "research.max_jobs",
	    "from 1 to 10" },
	{ "research", "{\"deadline_ms\":1000}", NULL, NULL },
	{ "research", "{\"deadline_ms\":999}", "research.deadline_ms",
	    "from 1000 to 1200000" },
	{ "research", "{\"deadline_ms\":1200000}", NULL, NULL },
	{ "research", "{\"deadline_ms\":1200001}", "research.deadline_ms",
	    "from 1000 to 1200000" },
	{ "research", "{\"model\":\"claude-x\"}", NULL, NULL },
	{ "research", "{\"model\":\"\"}", "research.model", "1 to" },
	{ "research", "{\"model\":\"a b\"}", "research.model", "white" },
	{ "research", "{\"jobs\":1}", "research.jobs", UNKNOWN },
	{ "research", "1", "research", OBJ },
	{ "sandbox", "{\"empty_root\":\"required\"}", NULL, NULL },
	{ "sandbox", "{\"empty_root\":\"optional\"}", NULL, NULL },
	{ "sandbox", "{}", NULL, NULL },
	{ "sandbox", "{\"empty_root\":\"Optional\"}", "sandbox.empty_root",
	    "must be \"required\" (the default) or \"optional\"" },
	{ "sandbox", "{\"empty_root\":\"\"}", "sandbox.empty_root",
	    "\"optional\"" },
	{ "sandbox", "{\"empty_root\":false}", "sandbox.empty_root",
	    "string" },
	{ "sandbox", "{\"empty_root\":null}", "sandbox.empty_root",
	    "string" },
	{ "sandbox", "{\"dumpable\":true}", "sandbox.dumpable", UNKNOWN },
	{ "sandbox", "\"optional\"", "sandbox", OBJ },
	/* test seams: only a build with them knows the field */
#if RTSANDBOX_TEST_SEAMS
	{ "test", "{\"loopback_public\":true,\"dns\":\"127.0.0.1:53\","
	    "\"fetch_ca_file\":\"/ca.pem\"}", NULL, NULL },
	{ "test", "{\"fetch_ca_file\":\"ca.pem\"}", "test.fetch_ca_file",
	    "absolute" },
	{ "test", "{\"dns\":\"1.2.3.4 :53\"}", "test.dns", "IP:PORT" },
	{ "test", "{\"other\":1}", "test.other", UNKNOWN },
#else
	{ "test", "{\"loopback_public\":true}", "test", UNKNOWN },
	{ "test", "{}", "test", UNKNOWN },
#endif
	/* top level */
	{ "frobnicate", "1", "frobnicate", UNKNOWN },
	{ "State_dir", "\"/x\"", "State_dir", UNKNOWN },
	{ "bad key\\u0001", "1", "[\"bad key\\x01\"]", UNKNOWN },
	{ "a\\\"b", "1", "[\"a\\\"b\"]", UNKNOWN },
};

START_TEST(rule)
{
	const struct rule_case	*rc = &rules[_i];

	if (rc->field == NULL)
		ok(MK(rc->name, rc->value));
	else
		refused(MK(rc->name, rc->value), rc->field, rc->rule);
}
END_TEST

/*
 * Limits built from long strings and long lists
 */

START_TEST(profile_name_length)
{
	ok(MK("profiles", fmt("{\"%s\":{\"model\":\"m\"}}", rep('p', 100))));
	refused(MK("profiles", fmt("{\"%s\":{\"model\":\"m\"}}",
	    rep('p', 101))), fmt("profiles.%s", rep('p', 101)),
	    "profile name must match [a-zA-Z0-9_-]{1,100}");
}
END_TEST

/* n distinct profiles "p0".."p<n-1>". */
static char *
profiles_n(size_t n)
{
	char	*s, *p;
	size_t	 i, sz = n * 40 + 3;

	s = malloc(sz);
	ck_assert_ptr_nonnull(s);
	p = s;
	*p++ = '{';
	for (i = 0; i < n; i++)
		p += snprintf(p, sz - (size_t)(p - s),
		    "%s\"p%zu\":{\"model\":\"m\"}", i > 0 ? "," : "", i);
	*p++ = '}';
	*p = '\0';
	return keep(s);
}

START_TEST(profiles_max)
{
	struct config	*cfg;

	cfg = accepted(MK("profiles", profiles_n(64)));
	ck_assert_uint_eq(cfg->nprofiles, 64);
	ck_assert_str_eq(config_profile(cfg, "p63")->name, "p63");
	config_free(cfg);
	refused(MK("profiles", profiles_n(65)), "profiles",
	    "must have from 1 to 64 profiles");
}
END_TEST

START_TEST(model_length)
{
	ok(MK("profiles", fmt("{\"a\":{\"model\":\"%s\"}}", rep('m', 256))));
	refused(MK("profiles", fmt("{\"a\":{\"model\":\"%s\"}}",
	    rep('m', 257))), "profiles.a.model", "must be 1 to 256 bytes");
}
END_TEST

START_TEST(container_prefix_length)
{
	ok(MK("docker", fmt("{\"container_prefix\":\"%s\"}", rep('r', 41))));
	refused(MK("docker", fmt("{\"container_prefix\":\"%s\"}",
	    rep('r', 42))), "docker.container_prefix", PREFIX);
}
END_TEST

START_TEST(runtime_length)
{
	struct config	*cfg;

	cfg = accepted(MK("docker", fmt("{\"runtime\":\"%s\"}",
	    rep('r', 64))));
	ck_assert_uint_eq(strlen(cfg->docker_runtime), 64);
	config_free(cfg);
	refused(MK("docker", fmt("{\"runtime\":\"%s\"}", rep('r', 65))),
	    "docker.runtime", RUNTIME);
}
END_TEST

START_TEST(label_length)
{
	ok(MK("docker", fmt("{\"label_channel\":\"%s\"}", rep('l', 128))));
	refused(MK("docker", fmt("{\"label_channel\":\"%s\"}", rep('l', 129))),
	    "docker.label_channel", LABEL);
	ok(MK("docker", fmt("{\"label_profile\":\"%s\"}", rep('l', 128))));
	refused(MK("docker", fmt("{\"label_profile\":\"%s\"}", rep('l', 129))),
	    "docker.label_profile", LABEL);
}
END_TEST

START_TEST(host_tools)
{
	ok(MK("tools", fmt("[\"%s\"]", rep('t', 48))));
	refused(MK("tools", fmt("[\"%s\"]", rep('t', 49))), "tools[0]",
	    HOSTTOOL);
	ok(MK("tools", names_array("t", 64)));
	refused(MK("tools", names_array("t", 65)), "tools",
	    "must have at most 64 entries");
}
END_TEST

#define SRV_TOOLS(t)	fmt("{\"servers\":[{\"name\":\"a\"," \
			    "\"url\":\"https://m\",\"tools\":%s}]," \
			    "\"credential_file\":\"/m\"}", (t))

#define SRV_NAME(n)	fmt("{\"servers\":[{\"name\":\"%s\"," \
			    "\"url\":\"https://m\",\"tools\":[]}]," \
			    "\"credential_file\":\"/m\"}", (n))
#define SRV_URL(u)	fmt("{\"servers\":[{\"name\":\"a\"," \
			    "\"url\":\"%s\",\"tools\":[]}]," \
			    "\"credential_file\":\"/m\"}", (u))

START_TEST(mcp_tools)
{
	ok(MK("mcp", SRV_TOOLS(fmt("[\"%s\"]", rep('T', 128)))));
	refused(MK("mcp", SRV_TOOLS(fmt("[\"%s\"]", rep('T', 129)))),
	    "mcp.servers[0].tools[0]", USETOOL);
	ok(MK("mcp", SRV_TOOLS(names_array("t", 128))));
	refused(MK("mcp", SRV_TOOLS(names_array("t", 129))),
	    "mcp.servers[0].tools", "must have at most 128 entries");
}
END_TEST

/* n servers "s0".."s<n-1>", each with no tools. */
static char *
servers_n(size_t n)
{
	char	*s, *p;
	size_t	 i, sz = n * 64 + 64;

	s = malloc(sz);
	ck_assert_ptr_nonnull(s);
	p = s;
	p += snprintf(p, sz, "{\"credential_file\":\"/m\",\"servers\":[");
	for (i = 0; i < n; i++)
		p += snprintf(p, sz - (size_t)(p - s),
		    "%s{\"name\":\"s%zu\",\"url\":\"https://m\",\"tools\":[]}",
		    i > 0 ? "," : "", i);
	snprintf(p, sz - (size_t)(p - s), "]}");
	return keep(s);
}

START_TEST(mcp_servers)
{
	struct config			*cfg;
	const struct config_mcp_server	*srv;

	cfg = accepted(MK("mcp", servers_n(32), "profiles",
	    fmt("{\"a\":{\"model\":\"m\",\"mcp\":%s}}", names_array("s", 32))));
	ck_assert_uint_eq(cfg->nmcp_servers, 32);
	ck_assert_uint_eq(cfg->profiles[0].nmcp, 32);
	srv = config_mcp_server(cfg, cfg->profiles[0].mcp[31]);
	ck_assert_ptr_eq(srv, &cfg->mcp_servers[31]);
	config_free(cfg);
	refused(MK("mcp", servers_n(33)), "mcp.servers",
	    "must have at most 32 servers");
	refused(MK("mcp", servers_n(2), "profiles",
	    "{\"a\":{\"model\":\"m\",\"mcp\":[\"s1\",\"s0\",\"s1\"]}}"),
	    "profiles.a.mcp[2]", "duplicate server \"s1\"");
	refused(MK("mcp", servers_n(2), "profiles",
	    "{\"a\":{\"model\":\"m\",\"mcp\":[\"s2\"]}}"),
	    "profiles.a.mcp[0]", "names no server in mcp.servers (\"s2\")");
	refused(MK("mcp", servers_n(2), "profiles",
	    fmt("{\"a\":{\"model\":\"m\",\"mcp\":%s}}", names_array("s", 33))),
	    "profiles.a.mcp", "must have at most 32 entries");
	ok(MK("mcp", SRV_NAME(rep('s', 100))));
	refused(MK("mcp", SRV_NAME(rep('s', 101))), "mcp.servers[0].name",
	    "must match [a-zA-Z0-9_-]{1,100}");
}
END_TEST

START_TEST(url_length)
{
	/* "https://m/" is 10 bytes. */
	ok(MK("mcp", SRV_URL(fmt("https://m/%s", rep('p', 2048 - 10)))));
	refused(MK("mcp", SRV_URL(fmt("https://m/%s", rep('p', 2048 - 9)))),
	    "mcp.servers[0].url", "must be at most 2048 bytes");
}
END_TEST

START_TEST(path_lengths)
{
	struct config	*cfg;

	/* sun_path holds 107 bytes and a NUL. */
	ok(MK("control_socket", fmt("\"/%s\"", rep('s', 106))));
	refused(MK("control_socket", fmt("\"/%s\"", rep('s', 107))),
	    "control_socket", "must be at most 107 bytes");
	ok(MK("docker", fmt("{\"socket\":\"/%s\"}", rep('s', 106))));
	refused(MK("docker", fmt("{\"socket\":\"/%s\"}", rep('s', 107))),
	    "docker.socket", "must be at most 107 bytes");
	cfg = accepted(MK("state_dir", fmt("\"/%s\"", rep('d', 4095))));
	ck_assert_uint_eq(config_max_segment_len(cfg), 0);
	config_free(cfg);
	refused(MK("state_dir", fmt("\"/%s\"", rep('d', 4096))), "state_dir",
	    "must be at most 4096 bytes");
	ok(MK("upstream", fmt("{\"credential_file\":\"/%s\"}",
	    rep('c', 4095))));
	refused(MK("upstream", fmt("{\"credential_file\":\"/%s\"}",
	    rep('c', 4096))), "upstream.credential_file",
	    "must be at most 4096 bytes");
}
END_TEST

START_TEST(image_length)
{
	ok(MK("image", fmt("\"%s\"", rep('i', 1024))));
	refused(MK("image", fmt("\"%s\"", rep('i', 1025))), "image",
	    "must be an image name of 1 to 1024 bytes");
}
END_TEST

START_TEST(time_zone_length)
{
	ok(MK("time_zone", fmt("\"%s\"", rep('Z', 64))));
	refused(MK("time_zone", fmt("\"%s\"", rep('Z', 65))), "time_zone", TZ);
}
END_TEST

/*
 * The broker socket path: a warning, never an error.
 */
START_TEST(segment_room)
{
	struct config	*cfg;
	char		*dir;

	/* 100 - 1 - 16 - 51 = 32: no warning yet. */
	dir = fmt("/%s", rep('s', 50));
	cfg = accepted(MK("state_dir", fmt("\"%s\"", dir)));
	ck_assert_uint_eq(config_max_segment_len(cfg), 32);
	ck_assert_uint_eq(E.nwarn, 0);
	config_free(cfg);

	dir = fmt("/%s", rep('s', 51));
	cfg = accepted(MK("state_dir", fmt("\"%s\"", dir)));
	ck_assert_uint_eq(config_max_segment_len(cfg), 31);
	ck_assert_uint_eq(E.nwarn, 1);
	ck_assert(has_line(E.warnings, E.nwarn, "state_dir",
	    "segments of only 31 chars"));
	config_free(cfg);

	/* 100 - 1 - 16 = 83 bytes of state_dir leave nothing. */
	dir = fmt("/%s", rep('s', 82));
	cfg = accepted(MK("state_dir", fmt("\"%s\"", dir)));
	ck_assert_uint_eq(config_max_segment_len(cfg), 0);
	ck_assert(has_line(E.warnings, E.nwarn, "state_dir",
	    "segments of only 0 chars"));
	config_free(cfg);
}
END_TEST

/*
 * Syntax, encoding, duplicates and collection of errors
 */

START_TEST(not_an_object)
{
	refused("[]", "configuration", "must be a JSON object");
	refused("\"x\"", "configuration", "must be a JSON object");
	refused("null", "configuration", "must be a JSON object");
	refused("", "configuration", "empty file");
	refused("  \n", "configuration", "JSON syntax error");
	refused("{", "configuration", "JSON syntax error at line 1");
	refused("{\"a\":1,}", "configuration", "JSON syntax error");
	refused(fmt("%s x", MK(NULL)), "configuration", "text after the end");
	refused(fmt("%s{}", MK(NULL)), "configuration", "text after the end");
	refused("{\"a\":01}", "configuration", "invalid number");
	refused("{\"a\":+1}", "configuration", "JSON syntax error");
	refused("{\"a\":1.}", "configuration", "invalid number");
	refused("{\"a\":-}", "configuration", "invalid number");
	refused("{\"a\":\"x\\q\"}", "configuration", "invalid escape");
	refused("{\"a\":\"x\\u12\"}", "configuration", "invalid \\u escape");
	refused("{\"a\":\"\\udc00\"}", "configuration", "JSON syntax error");
	refused("{\"a\":\"\\ud800\"}", "configuration", "JSON syntax error");
	refused("{\"a\":\"x", "configuration", "unterminated string");
	refused("{\n\n  \"a\": tru }", "configuration",
	    "JSON syntax error at line 3");
	/* Trailing white space is fine. */
	ok(fmt("\n%s\r\n\t ", MK(NULL)));
}
END_TEST

START_TEST(nul_and_control)
{
	static const char	 raw_nul[] = "{\"image\":\"a\0b\"}";
	static const char	 raw_nul_out[] = "{\"image\":\"a\"} \0";
	const char		*j;

	ck_assert_ptr_null(parse_buf(raw_nul, sizeof(raw_nul) - 1));
	ck_assert(has_line(E.lines, E.n, "configuration", "NUL byte"));
	ck_assert_ptr_null(parse_buf(raw_nul_out, sizeof(raw_nul_out) - 1));
	ck_assert(has_line(E.lines, E.n, "configuration", "NUL byte"));
	/* An escaped NUL would silently cut the string short. */
	j = MK("image", "\"rtsandbox-worker\\u0000:evil\"");
	refused(j, "configuration",
	    "\\u0000 (strings must not contain NUL)");
	refused(MK("image", "\"a\tb\""), "configuration",
	    "control character in a string");
	refused("{\"a\":1}\x0c", "configuration", "control character");
}
END_TEST

START_TEST(invalid_utf8)
{
	refused(MK("image", "\"worker\xff\""), "image",
	    "must be valid UTF-8 text");
	refused(MK("profiles", "{\"a\":{\"model\":\"\xc0\xaf\"}}"),
	    "profiles.a.model", "must be valid UTF-8 text");
	refused(MK("state_dir", "\"/var/\xed\xa0\x80\""), "state_dir",
	    "must be valid UTF-8 text");
	/* A key: shown escaped, still named. */
	refused(MK("x\xe9", "1"), "[\"x\\xe9\"]", UNKNOWN);
	/* Valid UTF-8 where the rule allows it. */
	ok(MK("image", "\"w\xc3\xa9:1\""));
}
END_TEST

START_TEST(duplicate_keys)
{
	const char	*m = MK(NULL);

	refused(fmt("%.*s,\"image\":\"other\"}", (int)strlen(m) - 1, m),
	    "image", DUP);
	refused(MK("timeouts", "{\"start_ms\":1000,\"start_ms\":1000}"),
	    "timeouts.start_ms", DUP);
	refused(MK("docker", "{\"limits\":{\"pids\":16,\"pids\":17}}"),
	    "docker.limits.pids", DUP);
	refused(MK("mcp", "{\"allow_http\":true,\"allow_http\":true}"),
	    "mcp.allow_http", DUP);
	refused(MK("upstream", CRED ",\"credential_file\":\"/d\"}"),
	    "upstream.credential_file", DUP);
}
END_TEST

START_TEST(many_errors)
{
	struct config	*cfg;

	cfg = parse(MK("state_dir", "\"/\"", "image", NULL, "profiles", "{}",
	    "timeouts", "{\"start_ms\":999,\"turn_ms\":600001}",
	    "budgets", "{\"max_calls\":0}", "default_thinking", "\"max\"",
	    "extra", "true"));
	ck_assert_ptr_null(cfg);
	ck_assert_uint_eq(E.n, 8);
	ck_assert(has_line(E.lines, E.n, "state_dir", "must not be \"/\""));
	ck_assert(has_line(E.lines, E.n, "image", REQ));
	ck_assert(has_line(E.lines, E.n, "profiles", "from 1 to 64"));
	ck_assert(has_line(E.lines, E.n, "timeouts.start_ms", INT_START));
	ck_assert(has_line(E.lines, E.n, "timeouts.turn_ms", INT_START));
	ck_assert(has_line(E.lines, E.n, "budgets.max_calls", INT_CALLS));
	ck_assert(has_line(E.lines, E.n, "default_thinking", THINK));
	ck_assert(has_line(E.lines, E.n, "extra", UNKNOWN));
}
END_TEST

START_TEST(error_cap)
{
	struct config	*cfg;
	char		*json;

	/*
	 * 200 unknown fields and 4 required ones missing: 100 listed, then
	 * one line with the rest.
	 */
	json = fmt("{%s}", join("\"u\":1", ",", 200));
	cfg = parse(json);
	ck_assert_ptr_null(cfg);
	ck_assert_uint_eq(E.n, CONFIG_ERRORS_MAX + 1);
	ck_assert(has_line(E.lines, E.n, "configuration",
	    "104 more errors not shown"));
}
END_TEST

START_TEST(size_limit)
{
	char	*big;
	size_t	 len;

	/* Padding with spaces keeps the text valid JSON at any size. */
	big = rep(' ', CONFIG_FILE_MAX + 1);
	memcpy(big, MK(NULL), strlen(MK(NULL)));
	len = CONFIG_FILE_MAX;
	config_free(accepted_at(__LINE__, fmt("%.*s", (int)len, big)));
	ck_assert_ptr_null(parse_buf(big, CONFIG_FILE_MAX + 1));
	ck_assert(has_line(E.lines, E.n, "configuration",
	    "must be at most 1048576 bytes"));
}
END_TEST

START_TEST(null_errors)
{
	const char	*j = MK("state_dir", "\"/\"");

	ck_assert_ptr_null(config_parse(j, strlen(j), NULL));
}
END_TEST

/*
 * config_load
 */

START_TEST(load_file)
{
	struct config	*cfg;
	char		 path[] = "/tmp/test_config.XXXXXX";
	const char	*json = MK(NULL);
	int		 fd;

	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	config_errors_free(&E);
	cfg = config_load(path, &E);
	unlink(path);
	ck_assert_ptr_nonnull(cfg);
	ck_assert_str_eq(cfg->image, "rtsandbox-worker:1");
	config_free(cfg);
}
END_TEST

START_TEST(load_missing)
{
	const char	*path = "/nonexistent/rtsandboxd.json";

	config_errors_free(&E);
	ck_assert_ptr_null(config_load(path, &E));
	ck_assert_uint_eq(E.n, 1);
	ck_assert(has_line(E.lines, E.n, path, strerror(ENOENT)));

	config_errors_free(&E);
	ck_assert_ptr_null(config_load("/", &E));
	ck_assert(has_line(E.lines, E.n, "/", "not a regular file"));
}
END_TEST

static Suite *
config_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("config");

	tc = tcase_create("defaults");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, minimal_defaults);
	tcase_add_test(tc, full_config);
	tcase_add_test(tc, cpus_rounding);
	tcase_add_test(tc, bot_group);
	tcase_add_test(tc, groups_without_lookups);
	suite_add_tcase(s, tc);

	tc = tcase_create("rules");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_loop_test(tc, rule, 0, sizeof(rules) / sizeof(rules[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, profile_name_length);
	tcase_add_test(tc, profiles_max);
	tcase_add_test(tc, model_length);
	tcase_add_test(tc, container_prefix_length);
	tcase_add_test(tc, label_length);
	tcase_add_test(tc, runtime_length);
	tcase_add_test(tc, host_tools);
	tcase_add_test(tc, mcp_tools);
	tcase_add_test(tc, mcp_servers);
	tcase_add_test(tc, url_length);
	tcase_add_test(tc, path_lengths);
	tcase_add_test(tc, image_length);
	tcase_add_test(tc, time_zone_length);
	tcase_add_test(tc, segment_room);
	suite_add_tcase(s, tc);

	tc = tcase_create("syntax");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, not_an_object);
	tcase_add_test(tc, nul_and_control);
	tcase_add_test(tc, invalid_utf8);
	tcase_add_test(tc, duplicate_keys);
	tcase_add_test(tc, many_errors);
	tcase_add_test(tc, error_cap);
	tcase_add_test(tc, size_limit);
	tcase_add_test(tc, null_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("reload");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, reload_fixed_fields);
	tcase_add_test(tc, reload_applied);
	suite_add_tcase(s, tc);

	tc = tcase_create("credentials");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, credentials_parsed);
	tcase_add_test(tc, credentials_counts);
	tcase_add_test(tc, credentials_key_lengths);
	tcase_add_test(tc, credentials_directories);
	tcase_add_test(tc, credentials_reload);
	tcase_add_test(tc, credentials_host_checks);
	suite_add_tcase(s, tc);

	tc = tcase_create("load");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, load_file);
	tcase_add_test(tc, load_missing);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(config_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
