/*
 * The configuration parser's own toolkit (cfgcheck.c), shared by config.c
 * and credconf.c and nothing else: the lexical pass, the "<field>: <rule>"
 * lines, field paths and the typed values.  Every function reports through
 * a struct cctx and never stops at the first problem.
 */
#ifndef RTSANDBOX_SUPERVISOR_CFGCHECK_H
#define RTSANDBOX_SUPERVISOR_CFGCHECK_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cJSON;
struct config_errors;

/* Room for the longest field path, keys shortened by path_key(). */
#define FIELD_PATH_MAX		512
/* Keys and values quoted in messages are cut to this many bytes. */
#define QUOTE_MAX		64

struct cctx {
	struct config_errors	*errs;
	size_t			 nerr;
	int			 nomem;
};

/* Appends line (taken) to lines; -1 when memory ran out. */
int		 lines_add(char ***lines, size_t *n, char *line);
/* An error or a warning about field; past CONFIG_ERRORS_MAX errors only
 * counted. */
void		 cerr(struct cctx *, const char *field, const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));
void		 cwarn(struct cctx *, const char *field, const char *fmt, ...)
		    __attribute__((format(printf, 3, 4)));
/* s printable and cut, for a message: out has QUOTE_MAX * 4 + 8 bytes. */
void		 quote(char *out, size_t outsz, const char *s);
/* "parent.key" (or parent["key"]) and "parent[i]". */
void		 path_key(char *out, size_t outsz, const char *parent,
		    const char *key);
void		 path_index(char *out, size_t outsz, const char *parent,
		    size_t i);
/* A syntax error at byte off, by line and column. */
void		 lex_err(struct cctx *, const char *buf, size_t off,
		    const char *what);
/* The JSON grammar cJSON lets through; -1 after one error. */
int		 lex_check(struct cctx *, const char *buf, size_t len);
int		 is_digit(unsigned char);

/* Object members: names[i] into items[i] (or NULL); an unknown or
 * repeated name is an error. */
void		 members(struct cctx *, const struct cJSON *obj,
		    const char *path, const char *const *names,
		    const struct cJSON **items, size_t n);
int		 is_object(struct cctx *, const struct cJSON *,
		    const char *path);
/* Valid UTF-8 text without NUL; NULL after an error. */
const char	*str_value(struct cctx *, const struct cJSON *,
		    const char *path, size_t *lenp);
/* Unchanged when it is NULL or after an error. */
void		 uint_value(struct cctx *, const struct cJSON *,
		    const char *path, uint64_t min, uint64_t max,
		    uint64_t *out);
void		 bool_value(struct cctx *, const struct cJSON *,
		    const char *path, int *out);
/* White space as JavaScript's \s has it, or a control character. */
int		 has_space_or_control(const char *s, size_t len);
/* An absolute path of at most max bytes; NULL after an error. */
const char	*abs_path(struct cctx *, const struct cJSON *, const char *path,
		    size_t max);
/* No "//", no "." or ".." component, no trailing "/". */
int		 canonical_path(const char *s);

struct config;
struct config_cred;

/* credconf.c: upstream.credentials.  Parsed before credential_file's
 * source is, checked after. */
void		 config_parse_credentials(struct cctx *, struct config *,
		    const struct cJSON *);
void		 config_check_credentials(struct cctx *,
		    const struct config *);
/* -1 when a file of new is in a directory none of old's is in; why names
 * its field. */
int		 config_cred_reload_check(const struct config *old,
		    const struct config *new, char *why, size_t whylen);
void		 config_creds_free(struct config_cred *, size_t);
int		 config_creds_same(const struct config_cred *, size_t,
		    const struct config_cred *, size_t);

/* cfgprecheck.c: the precheck section; defaults set, then parsed. */
void		 config_precheck_defaults(struct config *);
void		 config_parse_precheck(struct cctx *, struct config *,
		    const struct cJSON *);

/* strdup() that notes exhausted memory instead of failing. */
static inline char *
xstrdup(struct cctx *c, const char *s)
{
	char	*p;

	if (s == NULL)
		return NULL;
	if ((p = strdup(s)) == NULL)
		c->nomem = 1;
	return p;
}

#endif
