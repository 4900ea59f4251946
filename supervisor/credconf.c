/*
 * upstream.credentials of the configuration (rtsandboxd.conf(5)): a
 * credential file per channel and per speaker, and what a call of a
 * speaker and channel with none of their own goes with.  Parsed and
 * checked here, "<field>: <rule>" as the rest of config.c; the directories
 * of the files, which egress's Landlock rules name when it starts, are
 * counted here too, for the spawner and for reloads.
 */
#include <sys/types.h>

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cfgcheck.h"
#include "config.h"
#include "hostcheck.h"
#include "limits.h"
#include "validate.h"

enum { CR_CHANNELS, CR_SPEAKERS, CR_FALLBACK, CR_N };
static const char *const cr_names[CR_N] = {
	"channels", "speakers", "fallback"
};

static int
cred_cmp(const void *a, const void *b)
{
	const struct config_cred	*x = a, *y = b;

	return strcmp(x->key, y->key);
}

/*
 * channels or speakers: an object of at most CRED_MAP_MAX keys, each of 1
 * to max_units chars, to an absolute path (the rules of credential_file).
 * Sorted by key, so that a key given twice is found next to itself.
 */
static size_t
cred_map(struct cctx *c, const cJSON *obj, const char *path,
    size_t max_units, const char *what, struct config_cred **out)
{
	struct config_cred	*v;
	const cJSON		*it;
	const char		*s;
	char			 p[FIELD_PATH_MAX];
	size_t			 n, i, k = 0;

	*out = NULL;
	if (!cJSON_IsObject(obj)) {
		cerr(c, path, "must be an object of %ss to credential files",
		    what);
		return 0;
	}
	if ((n = (size_t)cJSON_GetArraySize(obj)) > CRED_MAP_MAX) {
		cerr(c, path, "must have at most %u entries", CRED_MAP_MAX);
		return 0;
	}
	if (n == 0)
		return 0;
	if ((v = calloc(n, sizeof(*v))) == NULL) {
		c->nomem = 1;
		return 0;
	}
	cJSON_ArrayForEach(it, obj) {
		path_key(p, sizeof(p), path, it->string);
		if (it->string[0] == '\0' || utf8_text_check(it->string,
		    strlen(it->string), max_units) == -1) {
			cerr(c, p, "%s must be 1 to %zu chars of valid UTF-8",
			    what, max_units);
			continue;
		}
		if ((s = abs_path(c, it, p, PATH_BYTES_MAX)) == NULL)
			continue;
		if ((v[k].key = xstrdup(c, it->string)) == NULL ||
		    (v[k].file = xstrdup(c, s)) == NULL) {
			free(v[k].key);
			v[k].key = NULL;
			continue;
		}
		k++;
	}
	qsort(v, k, sizeof(*v), cred_cmp);
	for (i = 1; i < k; i++)
		if (strcmp(v[i - 1].key, v[i].key) == 0) {
			path_key(p, sizeof(p), path, v[i].key);
			cerr(c, p, "duplicate key");
		}
	*out = v;
	return k;
}

void
config_parse_credentials(struct cctx *c, struct config *cfg,
    const cJSON *obj)
{
	const cJSON	*f[CR_N];
	const char	*s;
	size_t		 len;

	if (obj == NULL)
		return;
	if (!is_object(c, obj, "upstream.credentials"))
		return;
	cfg->has_credentials = 1;
	members(c, obj, "upstream.credentials", cr_names, f, CR_N);
	if (f[CR_FALLBACK] != NULL &&
	    (s = str_value(c, f[CR_FALLBACK], "upstream.credentials.fallback",
	    &len)) != NULL) {
		if (strcmp(s, "none") == 0)
			cfg->cred_fallback_none = 1;
		else if (strcmp(s, "default") != 0)
			cerr(c, "upstream.credentials.fallback",
			    "must be \"default\" or \"none\"");
	}
	if (f[CR_CHANNELS] != NULL)
		cfg->ncred_channels = cred_map(c, f[CR_CHANNELS],
		    "upstream.credentials.channels", CHANNEL_KEY_MAX,
		    "channel key", &cfg->cred_channels);
	if (f[CR_SPEAKERS] != NULL)
		cfg->ncred_speakers = cred_map(c, f[CR_SPEAKERS],
		    "upstream.credentials.speakers", AUTHOR_FIELD_MAX,
		    "speaker id", &cfg->cred_speakers);
}

/* The directory of path, in buf. */
static const char *
cred_dir(const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s", path);
	return dirname(buf);
}

/*
 * Adds the directory of file to dirs (each named by a file in it) unless
 * one there is the same; -1 when that makes more than max.
 */
static int
cred_dir_add(const char **dirs, size_t *n, size_t max, const char *file)
{
	char	 a[PATH_BYTES_MAX + 1], b[PATH_BYTES_MAX + 1];
	size_t	 i;

	cred_dir(file, a, sizeof(a));
	for (i = 0; i < *n; i++)
		if (strcmp(cred_dir(dirs[i], b, sizeof(b)), a) == 0)
			return 0;
	if (*n == max)
		return -1;
	dirs[(*n)++] = file;
	return 0;
}

/* The i-th file of upstream.credentials, channels first; NULL past them. */
static const struct config_cred *
cred_nth(const struct config *cfg, size_t i, const char **section)
{
	if (i < cfg->ncred_channels) {
		*section = "upstream.credentials.channels";
		return &cfg->cred_channels[i];
	}
	i -= cfg->ncred_channels;
	if (i < cfg->ncred_speakers) {
		*section = "upstream.credentials.speakers";
		return &cfg->cred_speakers[i];
	}
	return NULL;
}

/*
 * Paths compare as strings: a directory named twice the same way is one
 * rule, any other spelling another (a link may lead anywhere).
 */
size_t
config_cred_dirs(const struct config *cfg, const char **dirs, size_t max)
{
	const struct config_cred	*e;
	const char			*section;
	size_t				 n = 0, i;

	if (cfg->upstream_credential_file != NULL)
		(void)cred_dir_add(dirs, &n, max,
		    cfg->upstream_credential_file);
	for (i = 0; (e = cred_nth(cfg, i, &section)) != NULL; i++)
		if (cred_dir_add(dirs, &n, max, e->file) == -1)
			return max + 1;
	return n;
}

void
config_check_credentials(struct cctx *c, const struct config *cfg)
{
	const char	*dirs[CRED_DIRS_MAX + 1];

	if (!cfg->has_credentials)
		return;
	if (cfg->upstream_credential_hook) {
		cerr(c, "upstream.credentials", "cannot be used with "
		    "upstream.credential \"hook\": the hook is asked with the "
		    "channel and speaker of each call");
		return;
	}
	if (cfg->cred_fallback_none && cfg->upstream_credential_file != NULL)
		cerr(c, "upstream.credential_file", "is never used with "
		    "upstream.credentials.fallback \"none\": remove one of "
		    "them");
	else if (!cfg->cred_fallback_none &&
	    cfg->upstream_credential_file == NULL)
		cerr(c, "upstream.credential_file", "is required for the "
		    "speakers and channels without a file of their own (or "
		    "upstream.credentials.fallback \"none\" refuses their "
		    "calls)");
	if (config_cred_dirs(cfg, dirs, CRED_DIRS_MAX) > CRED_DIRS_MAX)
		cerr(c, "upstream.credentials", "the credential files, "
		    "upstream.credential_file's included, must be in at most "
		    "%u directories (egress reads each directory it was "
		    "started with)", CRED_DIRS_MAX);
	if (cfg->cred_fallback_none && cfg->ncred_channels == 0 &&
	    cfg->ncred_speakers == 0)
		cwarn(c, "upstream.credentials", "no channel or speaker has a "
		    "credential file, and fallback is \"none\": every model "
		    "call is refused");
}

/*
 * The directories of new's files must be among old's: egress and the
 * spawner confined themselves to old's when they started.  The first
 * entry of new in another names the field in why.
 */
int
config_cred_reload_check(const struct config *o, const struct config *n,
    char *why, size_t whylen)
{
	const struct config_cred	*e;
	const char			*dirs[CRED_DIRS_MAX + 1], *section;
	char				 p[FIELD_PATH_MAX];
	char				 a[PATH_BYTES_MAX + 1];
	char				 b[PATH_BYTES_MAX + 1];
	size_t				 nd, i, j;

	if ((nd = config_cred_dirs(o, dirs, CRED_DIRS_MAX)) > CRED_DIRS_MAX)
		nd = CRED_DIRS_MAX;
	for (i = 0; (e = cred_nth(n, i, &section)) != NULL; i++) {
		cred_dir(e->file, a, sizeof(a));
		for (j = 0; j < nd; j++)
			if (strcmp(cred_dir(dirs[j], b, sizeof(b)), a) == 0)
				break;
		if (j < nd)
			continue;
		path_key(p, sizeof(p), section, e->key);
		snprintf(why, whylen, "the directory of %s", p);
		return -1;
	}
	return 0;
}

/* The configuration's fields of its credential files, for host checks. */
struct hc_cred *
config_hc_creds(const struct config *cfg, size_t *np)
{
	const struct config_cred	*e;
	const char			*section;
	struct hc_cred			*v;
	char				 p[FIELD_PATH_MAX];
	size_t				 n, i;

	*np = 0;
	n = cfg->ncred_channels + cfg->ncred_speakers;
	if (n == 0 || (v = calloc(n, sizeof(*v))) == NULL)
		return NULL;
	for (i = 0; (e = cred_nth(cfg, i, &section)) != NULL; i++) {
		path_key(p, sizeof(p), section, e->key);
		if ((v[i].hc_field = strdup(p)) == NULL) {
			config_hc_creds_free(v, i);
			return NULL;
		}
		v[i].hc_path = e->file;
	}
	*np = n;
	return v;
}

void
config_hc_creds_free(struct hc_cred *v, size_t n)
{
	size_t	 i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free((char *)v[i].hc_field);
	free(v);
}

void
config_creds_free(struct config_cred *v, size_t n)
{
	size_t	 i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++) {
		free(v[i].key);
		free(v[i].file);
	}
	free(v);
}

int
config_creds_same(const struct config_cred *a, size_t na,
    const struct config_cred *b, size_t nb)
{
	size_t	 i;

	if (na != nb)
		return 0;
	for (i = 0; i < na; i++)
		if (strcmp(a[i].key, b[i].key) != 0 ||
		    strcmp(a[i].file, b[i].file) != 0)
			return 0;
	return 1;
}
