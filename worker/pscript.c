/*
 * pscript: precheck scripts.  A script is parsed whole before it runs, so
 * that a line the language does not have is refused before any call is
 * made; the substitutions are checked then too, and the JSON arguments are
 * parsed with every substitution standing in as null or "".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pscript.h"

enum ps_kind {
	PS_LOG,
	PS_CALL,
	PS_JSON,
	PS_TRY,
	PS_TRY2,
	PS_WRITE,
	PS_SLEEP,
	PS_WHEN,
	PS_WAKE,
	PS_SKIP,
	PS_RETURN,
	PS_FAIL
};

enum ps_op {
	PS_OP_EQ,
	PS_OP_NE,
	PS_OP_LT,
	PS_OP_GT,
	PS_OP_CONTAINS
};

struct ps_stmt {
	enum ps_kind	 st_kind;
	unsigned int	 st_line;
	char		*st_a;		/* SERVER, METHOD, PATH or when's PATH */
	char		*st_b;		/* TOOL or try's PATH */
	char		*st_text;	/* TEXT, ARGS, BODY, JSON; NULL: none */
	unsigned int	 st_ms;
	enum ps_op	 st_op;
	struct wjson	*st_value;
	struct ps_stmt	*st_then;
};

struct pscript {
	char		*ps_buf;	/* the script, cut into words in place */
	struct ps_stmt	*ps_stmts;
	size_t		 ps_count;
};

struct ps_run {
	const struct pscript_input	*r_in;
	const struct pscript_io		*r_io;
	struct wjson			*r_last;
	struct wjson			*r_statuses;
	struct wjson			*r_writes;
	struct wjson			*r_result;
	struct wbuf			*r_err;
};

static const char	 rule_statement[] = "a statement is one of log, call, "
    "json, try, try2, write, sleep, when, wake, skip, return, fail";

static const struct wjson_limits	 answer_limits = {
	PS_ANSWER_MAX, PS_DEPTH_MAX, 0, 0
};

static int	 ps_fail(struct wbuf *, unsigned int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));

static int
ps_fail(struct wbuf *err, unsigned int line, const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[512];

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	wbuf_reset(err);
	if (line > 0)
		wbuf_addf(err, "line %u: %s", line, msg);
	else
		wbuf_addstr(err, msg);
	return -1;
}

/*
 * The input.
 */

const char *
pscript_input_err_to_string(enum pscript_input_err e)
{
	switch (e) {
	case PSCRIPT_INPUT_OK:
		return "no error";
	case PSCRIPT_INPUT_TOO_LONG:
		return "the precheck input is too long";
	case PSCRIPT_INPUT_INVALID:
		return "invalid precheck input";
	case PSCRIPT_INPUT_NOMEM:
		return "out of memory";
	}
	return "invalid precheck input";
}

/* A string member without NUL, which the language's words could not hold. */
static const struct wjson *
input_str(const struct wjson *obj, const char *key, int nonempty)
{
	const struct wjson	*v = wjson_get(obj, key);

	if (!wjson_is(v, WJSON_STRING) || memchr(v->j_str, '\0', v->j_len) !=
	    NULL || (nonempty && v->j_len == 0))
		return NULL;
	return v;
}

static int
input_servers(const struct wjson *servers)
{
	const struct wjson	*s, *tools, *t;

	if (!wjson_is(servers, WJSON_ARRAY) ||
	    servers->j_count > PS_SERVERS_MAX)
		return -1;
	for (s = servers->j_head; s != NULL; s = s->j_next) {
		if (!wjson_is(s, WJSON_OBJECT) || s->j_count != 2 ||
		    input_str(s, "name", 1) == NULL)
			return -1;
		tools = wjson_get(s, "tools");
		if (!wjson_is(tools, WJSON_ARRAY))
			return -1;
		for (t = tools->j_head; t != NULL; t = t->j_next)
			if (t->j_type != WJSON_STRING || t->j_len == 0 ||
			    memchr(t->j_str, '\0', t->j_len) != NULL)
				return -1;
	}
	return 0;
}

/* Exactly the members of the contract: the protocol is closed. */
enum pscript_input_err
pscript_input_parse(const char *buf, size_t len, struct pscript_input *in)
{
	struct wjson_limits	 lim = { PS_INPUT_MAX, PS_DEPTH_MAX, 0, 0 };
	struct wjson_error	 err;
	struct wjson		*root, *sched;

	memset(in, 0, sizeof(*in));
	if (len > PS_INPUT_MAX)
		return PSCRIPT_INPUT_TOO_LONG;
	if ((root = wjson_parse(buf, len, &lim, &err)) == NULL)
		return err.we_err == WJSON_ERR_NOMEM ? PSCRIPT_INPUT_NOMEM :
		    PSCRIPT_INPUT_INVALID;
	in->pi_root = root;
	if (!wjson_is(root, WJSON_OBJECT) || root->j_count != 6)
		goto bad;
	in->pi_script = input_str(root, "script", 0);
	in->pi_fired_at = input_str(root, "firedAt", 0);
	in->pi_time_zone = input_str(root, "timeZone", 0);
	in->pi_today = input_str(root, "today", 0);
	sched = wjson_get(root, "schedule");
	in->pi_servers = wjson_get(root, "servers");
	if (in->pi_script == NULL || in->pi_fired_at == NULL ||
	    in->pi_time_zone == NULL || in->pi_today == NULL ||
	    !wjson_is(sched, WJSON_OBJECT) || sched->j_count != 2 ||
	    input_servers(in->pi_servers) == -1)
		goto bad;
	in->pi_schedule_id = wjson_get(sched, "id");
	in->pi_schedule_title = input_str(sched, "title", 0);
	if (!wjson_is(in->pi_schedule_id, WJSON_NUMBER) ||
	    in->pi_schedule_title == NULL)
		goto bad;
	return PSCRIPT_INPUT_OK;
bad:
	pscript_input_free(in);
	return PSCRIPT_INPUT_INVALID;
}

void
pscript_input_free(struct pscript_input *in)
{
	wjson_free(in->pi_root);
	memset(in, 0, sizeof(*in));
}

int
pscript_granted(const struct pscript_input *in, const char *server,
    const char *tool)
{
	const struct wjson	*s, *t;
	const char		*name;

	if (in->pi_servers == NULL)
		return 0;
	for (s = in->pi_servers->j_head; s != NULL; s = s->j_next) {
		if ((name = wjson_get_str(s, "name", NULL)) == NULL ||
		    strcmp(name, server) != 0)
			continue;
		for (t = wjson_get(s, "tools")->j_head; t != NULL;
		    t = t->j_next)
			if (strcmp(t->j_str, tool) == 0)
				return 1;
	}
	return 0;
}

/*
 * The parser.
 */

static int
is_space(char c)
{
	return c == ' ' || c == '\t';
}

/* The next word, NUL-terminated in place; *pp moves past its spaces. */
static char *
next_word(char **pp)
{
	char	*p = *pp, *w;

	while (is_space(*p))
		p++;
	if (*p == '\0') {
		*pp = p;
		return NULL;
	}
	w = p;
	while (*p != '\0' && !is_space(*p))
		p++;
	if (*p != '\0')
		*p++ = '\0';
	while (is_space(*p))
		p++;
	*pp = p;
	return w;
}

/* The rest of the line, or NULL when there is none. */
static char *
rest(char *p)
{
	while (is_space(*p))
		p++;
	return *p == '\0' ? NULL : p;
}

/* "a.b.0": names without dots, none empty.  "." alone is the value. */
static int
path_ok(const char *p, size_t len)
{
	size_t	 i;

	if (len == 1 && p[0] == '.')
		return 1;
	if (len == 0 || p[0] == '.' || p[len - 1] == '.')
		return 0;
	for (i = 1; i < len; i++)
		if (p[i] == '.' && p[i - 1] == '.')
			return 0;
	return 1;
}

static int
subst_name_ok(const char *name, size_t len)
{
	static const char	*const names[] = { "last", "statuses",
	    "writes", "today", "firedAt", "timeZone", "schedule.id",
	    "schedule.title" };
	size_t			 i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
			return 1;
	return len > 5 && memcmp(name, "last.", 5) == 0 && name[5] != '.' &&
	    path_ok(name + 5, len - 5);
}

/* A path's value in v, or NULL: names pick members, numbers elements. */
static const struct wjson *
lookup(const struct wjson *v, const char *path, size_t len)
{
	const struct wjson	*c;
	const char		*end = path + len, *dot;
	size_t			 klen, i, idx;

	if (len == 1 && path[0] == '.')
		return v;
	while (v != NULL && path < end) {
		if ((dot = memchr(path, '.', (size_t)(end - path))) == NULL)
			dot = end;
		klen = (size_t)(dot - path);
		if (v->j_type == WJSON_OBJECT) {
			for (c = v->j_head; c != NULL; c = c->j_next)
				if (c->j_keylen == klen &&
				    memcmp(c->j_key, path, klen) == 0)
					break;
			v = c;
		} else if (v->j_type == WJSON_ARRAY) {
			if (klen == 0 || klen > 9)
				return NULL;
			for (idx = 0, i = 0; i < klen; i++) {
				if (path[i] < '0' || path[i] > '9')
					return NULL;
				idx = idx * 10 + (size_t)(path[i] - '0');
			}
			for (c = v->j_head; c != NULL && idx > 0; c = c->j_next)
				idx--;
			v = c;
		} else
			return NULL;
		path = dot < end ? dot + 1 : end;
	}
	return v;
}

static const struct wjson *
subst_value(const struct ps_run *r, const char *name, size_t len)
{
	const struct pscript_input	*in = r->r_in;

#define IS(s)	(len == sizeof(s) - 1 && memcmp(name, s, len) == 0)
	if (IS("last"))
		return r->r_last;
	if (IS("statuses"))
		return r->r_statuses;
	if (IS("writes"))
		return r->r_writes;
	if (IS("today"))
		return in->pi_today;
	if (IS("firedAt"))
		return in->pi_fired_at;
	if (IS("timeZone"))
		return in->pi_time_zone;
	if (IS("schedule.id"))
		return in->pi_schedule_id;
	if (IS("schedule.title"))
		return in->pi_schedule_title;
#undef IS
	return lookup(r->r_last, name + 5, len - 5);
}

/* v as TEXT takes it: a string as itself, anything else as JSON. */
static int
put_text(struct wbuf *out, const struct wjson *v, int escaped)
{
	struct wbuf	 tmp;
	struct wjson	*s = NULL;
	int		 rc = -1;

	if (!escaped) {
		if (v->j_type == WJSON_STRING)
			return wbuf_add(out, v->j_str, v->j_len);
		return wjson_emit(v, out);
	}
	/* Inside a JSON string: the same text, escaped, without its quotes. */
	wbuf_init(&tmp, 0);
	if (v->j_type == WJSON_STRING)
		s = wjson_string_len(v->j_str, v->j_len);
	else if (wjson_emit(v, &tmp) == 0)
		s = wjson_string_len(tmp.b_data, tmp.b_len);
	wbuf_reset(&tmp);
	if (s != NULL && wjson_emit(s, &tmp) == 0 && tmp.b_len >= 2)
		rc = wbuf_add(out, tmp.b_data + 1, tmp.b_len - 2);
	wjson_free(s);
	wbuf_free(&tmp);
	return rc;
}

/*
 * Substitutions in text.  In JSON (json set) a substitution inside a
 * string literal puts the text escaped, elsewhere the value as JSON.
 * Without a run (r NULL) only the names are checked, and each stands in
 * as "" or null.  "$${" is a literal "${".
 */
static int
subst(const struct ps_run *r, const char *s, int json, unsigned int line,
    struct wbuf *out, struct wbuf *err)
{
	const struct wjson	*v;
	const char		*end;
	size_t			 i, len = strlen(s), nlen;
	int			 in_str = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '$' && i + 2 < len && s[i + 1] == '$' &&
		    s[i + 2] == '{') {
			wbuf_add(out, "${", 2);
			i += 2;
			continue;
		}
		if (s[i] == '$' && i + 1 < len && s[i + 1] == '{') {
			end = memchr(s + i + 2, '}', len - i - 2);
			if (end == NULL)
				return ps_fail(err, line, "a ${ has no }");
			nlen = (size_t)(end - (s + i + 2));
			if (!subst_name_ok(s + i + 2, nlen))
				return ps_fail(err, line, "unknown substitution "
				    "${%.*s}", (int)(nlen > 64 ? 64 : nlen),
				    s + i + 2);
			if (r == NULL)
				v = NULL;
			else if ((v = subst_value(r, s + i + 2, nlen)) ==
			    NULL)
				return ps_fail(err, line, "${%.*s} names "
				    "nothing", (int)(nlen > 64 ? 64 : nlen),
				    s + i + 2);
			if (v == NULL) {
				if (json && !in_str)
					wbuf_add(out, "null", 4);
			} else if (json && !in_str) {
				if (wjson_emit(v, out) == -1 &&
				    out->b_err == 0)
					return ps_fail(err, line,
					    "a substitution failed");
			} else if (put_text(out, v, json) == -1 &&
			    out->b_err == 0)
				return ps_fail(err, line,
				    "a substitution failed");
			i = (size_t)(end - s);
			continue;
		}
		if (json) {
			if (in_str && s[i] == '\\' && i + 1 < len) {
				wbuf_add(out, s + i, 2);
				i++;
				continue;
			}
			if (s[i] == '"')
				in_str = !in_str;
		}
		wbuf_addc(out, s[i]);
	}
	if (out->b_err != 0)
		return ps_fail(err, line, "the text is too long");
	return 0;
}

/* The JSON of a statement, substituted and parsed; NULL with err set. */
static struct wjson *
subst_json(const struct ps_run *r, const char *s, unsigned int line,
    const char *what, struct wbuf *err)
{
	struct wjson_limits	 lim = { PS_ANSWER_MAX * 2, PS_DEPTH_MAX, 0, 0 };
	struct wbuf		 out;
	struct wjson		*v;

	wbuf_init(&out, PS_ANSWER_MAX * 2);
	if (subst(r, s, 1, line, &out, err) == -1) {
		wbuf_free(&out);
		return NULL;
	}
	v = wjson_parse(out.b_data, out.b_len, &lim, NULL);
	wbuf_free(&out);
	if (v == NULL)
		ps_fail(err, line, "%s", what);
	return v;
}

static int
check_text(const char *s, unsigned int line, struct wbuf *err)
{
	struct wbuf	 out;
	int		 rc;

	wbuf_init(&out, 0);
	rc = subst(NULL, s, 0, line, &out, err);
	wbuf_free(&out);
	return rc;
}

static int
check_args(const char *s, unsigned int line, const char *rule,
    struct wbuf *err)
{
	struct wjson	*v;
	int		 ok;

	if (s == NULL)
		return 0;
	if ((v = subst_json(NULL, s, line, rule, err)) == NULL)
		return -1;
	ok = v->j_type == WJSON_OBJECT;
	wjson_free(v);
	return ok ? 0 : ps_fail(err, line, "%s", rule);
}

/* Bytes of the JSON value at the start of s: a word, or up to the
 * bracket or quote that closes it. */
static size_t
json_span(const char *s)
{
	size_t	 i = 0;
	int	 depth = 0, in_str = 0;

	if (s[0] != '"' && s[0] != '[' && s[0] != '{') {
		while (s[i] != '\0' && !is_space(s[i]))
			i++;
		return i;
	}
	for (; s[i] != '\0'; i++) {
		if (in_str) {
			if (s[i] == '\\' && s[i + 1] != '\0')
				i++;
			else if (s[i] == '"') {
				in_str = 0;
				if (depth == 0)
					return i + 1;
			}
			continue;
		}
		if (s[i] == '"')
			in_str = 1;
		else if (s[i] == '[' || s[i] == '{')
			depth++;
		else if ((s[i] == ']' || s[i] == '}') && --depth == 0)
			return i + 1;
	}
	return i;
}

static int
parse_ms(const char *w, unsigned int *msp)
{
	unsigned long	 n = 0;
	size_t		 i, len = strlen(w);

	if (len == 0 || len > 6)
		return -1;
	for (i = 0; i < len; i++) {
		if (w[i] < '0' || w[i] > '9')
			return -1;
		n = n * 10 + (unsigned long)(w[i] - '0');
	}
	if (n > PS_SLEEP_MS_MAX)
		return -1;
	*msp = (unsigned int)n;
	return 0;
}

static int
method_ok(const char *m)
{
	if (*m == '\0' || strlen(m) > 16)
		return 0;
	for (; *m != '\0'; m++)
		if (*m < 'A' || *m > 'Z')
			return 0;
	return 1;
}

static int
target_ok(const char *p)
{
	const unsigned char	*u = (const unsigned char *)p;

	if (*u != '/')
		return 0;
	for (; *u != '\0'; u++)
		if (*u <= 0x20 || *u >= 0x7f)
			return 0;
	return 1;
}

static int	parse_stmt(char *, unsigned int, int, struct ps_stmt *,
		    struct wbuf *);

static int
parse_when(char *p, unsigned int line, struct ps_stmt *st, struct wbuf *err)
{
	static const char	 rule[] = "when needs PATH OP VALUE STATEMENT: "
	    "PATH is . or names joined by dots, OP one of == != < > "
	    "contains, VALUE a JSON value";
	struct wjson_limits	 lim = { PS_INPUT_MAX, PS_DEPTH_MAX, 0, 0 };
	char			*path, *op, *then;
	size_t			 n;

	if ((path = next_word(&p)) == NULL || (op = next_word(&p)) == NULL ||
	    !path_ok(path, strlen(path)) || *p == '\0')
		return ps_fail(err, line, "%s", rule);
	if (strcmp(op, "==") == 0)
		st->st_op = PS_OP_EQ;
	else if (strcmp(op, "!=") == 0)
		st->st_op = PS_OP_NE;
	else if (strcmp(op, "<") == 0)
		st->st_op = PS_OP_LT;
	else if (strcmp(op, ">") == 0)
		st->st_op = PS_OP_GT;
	else if (strcmp(op, "contains") == 0)
		st->st_op = PS_OP_CONTAINS;
	else
		return ps_fail(err, line, "%s", rule);
	n = json_span(p);
	if (p[n] != '\0' && !is_space(p[n]))
		return ps_fail(err, line, "%s", rule);
	then = p[n] != '\0' ? rest(p + n + 1) : NULL;
	p[n] = '\0';
	if ((st->st_value = wjson_parse(p, n, &lim, NULL)) == NULL)
		return ps_fail(err, line, "%s", rule);
	if (then == NULL)
		return ps_fail(err, line, "%s", rule);
	st->st_a = path;
	if ((st->st_then = calloc(1, sizeof(*st->st_then))) == NULL)
		return ps_fail(err, line, "out of memory");
	return parse_stmt(then, line, 1, st->st_then, err);
}

/* One statement of a trimmed line, cut into words in place. */
static int
parse_stmt(char *p, unsigned int line, int in_when, struct ps_stmt *st,
    struct wbuf *err)
{
	char	*kw;

	st->st_line = line;
	kw = next_word(&p);
	if (strcmp(kw, "log") == 0) {
		st->st_kind = PS_LOG;
		st->st_text = rest(p);
		return st->st_text == NULL ? 0 :
		    check_text(st->st_text, line, err);
	}
	if (strcmp(kw, "call") == 0 || strcmp(kw, "json") == 0 ||
	    strcmp(kw, "try2") == 0) {
		st->st_kind = kw[0] == 'c' ? PS_CALL : kw[0] == 'j' ? PS_JSON :
		    PS_TRY2;
		if ((st->st_a = next_word(&p)) == NULL ||
		    (st->st_b = next_word(&p)) == NULL)
			return ps_fail(err, line, "%s needs SERVER TOOL "
			    "[ARGS]", kw);
		st->st_text = rest(p);
		return check_args(st->st_text, line, "ARGS must be a JSON "
		    "object", err);
	}
	if (strcmp(kw, "try") == 0) {
		st->st_kind = PS_TRY;
		if ((st->st_a = next_word(&p)) == NULL ||
		    (st->st_b = next_word(&p)) == NULL ||
		    !method_ok(st->st_a) || !target_ok(st->st_b))
			return ps_fail(err, line, "try needs METHOD PATH "
			    "[BODY]: METHOD in capitals, PATH starting "
			    "with /");
		st->st_text = rest(p);
		return st->st_text == NULL ? 0 :
		    check_text(st->st_text, line, err);
	}
	if (strcmp(kw, "write") == 0) {
		st->st_kind = PS_WRITE;
		if ((st->st_a = next_word(&p)) == NULL)
			return ps_fail(err, line, "write needs PATH TEXT");
		st->st_text = rest(p);
		return st->st_text == NULL ? 0 :
		    check_text(st->st_text, line, err);
	}
	if (strcmp(kw, "sleep") == 0) {
		st->st_kind = PS_SLEEP;
		if ((st->st_a = next_word(&p)) == NULL || rest(p) != NULL ||
		    parse_ms(st->st_a, &st->st_ms) == -1)
			return ps_fail(err, line, "sleep needs MS, 0 to %u",
			    PS_SLEEP_MS_MAX);
		return 0;
	}
	if (strcmp(kw, "when") == 0) {
		if (in_when)
			return ps_fail(err, line, "a when cannot run another "
			    "when");
		st->st_kind = PS_WHEN;
		return parse_when(p, line, st, err);
	}
	if (strcmp(kw, "wake") == 0 || strcmp(kw, "fail") == 0) {
		st->st_kind = kw[0] == 'w' ? PS_WAKE : PS_FAIL;
		if ((st->st_text = rest(p)) == NULL)
			return ps_fail(err, line, "%s needs TEXT", kw);
		return check_text(st->st_text, line, err);
	}
	if (strcmp(kw, "skip") == 0) {
		st->st_kind = PS_SKIP;
		st->st_text = rest(p);
		return st->st_text == NULL ? 0 :
		    check_text(st->st_text, line, err);
	}
	if (strcmp(kw, "return") == 0) {
		struct wjson	*v;

		st->st_kind = PS_RETURN;
		if ((st->st_text = rest(p)) == NULL ||
		    (v = subst_json(NULL, st->st_text, line, "", err)) ==
		    NULL)
			return ps_fail(err, line, "return needs a JSON value");
		wjson_free(v);
		return 0;
	}
	return ps_fail(err, line, "unknown statement; %s", rule_statement);
}

static void
stmt_free(struct ps_stmt *st)
{
	if (st == NULL)
		return;
	wjson_free(st->st_value);
	if (st->st_then != NULL) {
		stmt_free(st->st_then);
		free(st->st_then);
	}
}

void
pscript_free(struct pscript *ps)
{
	size_t	 i;

	if (ps == NULL)
		return;
	for (i = 0; i < ps->ps_count; i++)
		stmt_free(&ps->ps_stmts[i]);
	free(ps->ps_stmts);
	free(ps->ps_buf);
	free(ps);
}

size_t
pscript_count(const struct pscript *ps)
{
	return ps->ps_count;
}

struct pscript *
pscript_parse(const char *script, size_t len, struct wbuf *err)
{
	struct pscript	*ps;
	char		*p, *end, *nl, *line;
	unsigned int	 lineno = 0;
	size_t		 llen;

	if ((ps = calloc(1, sizeof(*ps))) == NULL ||
	    (ps->ps_buf = malloc(len + 1)) == NULL ||
	    (ps->ps_stmts = calloc(PS_LINES_MAX, sizeof(*ps->ps_stmts))) ==
	    NULL) {
		ps_fail(err, 0, "out of memory");
		pscript_free(ps);
		return NULL;
	}
	if (len > 0)
		memcpy(ps->ps_buf, script, len);
	ps->ps_buf[len] = '\0';
	p = ps->ps_buf;
	end = p + len;
	while (p < end) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		*nl = '\0';
		line = p;
		p = nl + 1;
		if (++lineno > PS_LINES_MAX) {
			ps_fail(err, lineno, "a script has at most %u lines",
			    PS_LINES_MAX);
			goto fail;
		}
		if (memchr(line, '\0', (size_t)(nl - line)) != NULL) {
			ps_fail(err, lineno, "a line cannot hold a NUL");
			goto fail;
		}
		llen = (size_t)(nl - line);
		while (llen > 0 && (is_space(line[llen - 1]) ||
		    line[llen - 1] == '\r'))
			line[--llen] = '\0';
		while (is_space(*line))
			line++;
		if (*line == '\0' || *line == '#')
			continue;
		if (parse_stmt(line, lineno, 0, &ps->ps_stmts[ps->ps_count++],
		    err) == -1)
			goto fail;
	}
	return ps;
fail:
	pscript_free(ps);
	return NULL;
}

/*
 * MCP answers.
 */

/* The first text content of an MCP result, or NULL. */
static const struct wjson *
first_text(const struct wjson *result)
{
	const struct wjson	*content, *c, *t;
	const char		*type;

	content = wjson_get(result, "content");
	if (!wjson_is(content, WJSON_ARRAY))
		return NULL;
	for (c = content->j_head; c != NULL; c = c->j_next) {
		type = wjson_get_str(c, "type", NULL);
		t = wjson_get(c, "text");
		if (type != NULL && strcmp(type, "text") == 0 &&
		    wjson_is(t, WJSON_STRING))
			return t;
	}
	return NULL;
}

static const char *
status_reason(int status)
{
	switch (status) {
	case 403:
		return "that server or tool is not granted to this script";
	case 404:
		return "that server is not granted to this script";
	case 410:
		return "the run ended";
	case 409:
		return "the script made two MCP calls at once; await each "
		    "before the next";
	case 429:
		return "the script made too many MCP calls";
	}
	return "the broker call failed";
}

static void
mcp_err(struct wbuf *err, const char *server, const char *tool,
    const char *msg, size_t len)
{
	wbuf_reset(err);
	wbuf_addf(err, "%s/%s: ", server, tool);
	wbuf_add(err, msg, len);
}

struct wjson *
pscript_mcp_result(const char *server, const char *tool, int status,
    const char *body, size_t len, struct wbuf *err)
{
	struct wjson		*root, *result;
	const struct wjson	*e, *t;
	const char		*msg;
	size_t			 mlen;

	if (status != 200) {
		msg = status_reason(status);
		mcp_err(err, server, tool, msg, strlen(msg));
		return NULL;
	}
	root = wjson_parse(body, len, &answer_limits, NULL);
	if (!wjson_is(root, WJSON_OBJECT)) {
		mcp_err(err, server, tool, "no answer", 9);
		goto fail;
	}
	if (wjson_is((e = wjson_get(root, "error")), WJSON_OBJECT)) {
		if ((msg = wjson_get_str(e, "message", &mlen)) == NULL) {
			msg = "failed";
			mlen = 6;
		}
		mcp_err(err, server, tool, msg, mlen);
		goto fail;
	}
	result = wjson_get(root, "result");
	if (!wjson_is(result, WJSON_OBJECT)) {
		mcp_err(err, server, tool, "no result", 9);
		goto fail;
	}
	e = wjson_get(result, "isError");
	if (wjson_is(e, WJSON_BOOL) && e->j_bool) {
		if ((t = first_text(result)) != NULL)
			mcp_err(err, server, tool, t->j_str, t->j_len);
		else
			mcp_err(err, server, tool, "failed", 6);
		goto fail;
	}
	result = wjson_detach(root, "result");
	wjson_free(root);
	return result;
fail:
	wjson_free(root);
	return NULL;
}

/* mcp.json's reading of a result. */
static struct wjson *
mcp_json(struct wjson *result)
{
	struct wjson_limits	 lim = { PS_ANSWER_MAX, PS_DEPTH_MAX, 0, 0 };
	const struct wjson	*t;
	struct wjson		*v;

	if (wjson_get(result, "structuredContent") != NULL)
		return wjson_detach(result, "structuredContent");
	if ((t = first_text(result)) == NULL)
		return wjson_null();
	if ((v = wjson_parse(t->j_str, t->j_len, &lim, NULL)) != NULL)
		return v;
	return wjson_string_len(t->j_str, t->j_len);
}

const char *
pscript_errno_name(int e, char *buf, size_t len)
{
	static const struct {
		int		 en_errno;
		const char	*en_name;
	} names[] = {
		{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EIO, "EIO" },
		{ EBADF, "EBADF" }, { EAGAIN, "EAGAIN" }, { ENOMEM, "ENOMEM" },
		{ EACCES, "EACCES" }, { EFAULT, "EFAULT" }, { EBUSY, "EBUSY" },
		{ EEXIST, "EEXIST" }, { EXDEV, "EXDEV" }, { ENODEV, "ENODEV" },
		{ ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },
		{ EINVAL, "EINVAL" }, { ENFILE, "ENFILE" }, { EMFILE, "EMFILE" },
		{ ETXTBSY, "ETXTBSY" }, { EFBIG, "EFBIG" }, { ENOSPC, "ENOSPC" },
		{ ESPIPE, "ESPIPE" }, { EROFS, "EROFS" }, { EMLINK, "EMLINK" },
		{ EPIPE, "EPIPE" }, { ENAMETOOLONG, "ENAMETOOLONG" },
		{ ELOOP, "ELOOP" }, { EDQUOT, "EDQUOT" }, { EINTR, "EINTR" },
		{ ENXIO, "ENXIO" }, { EOVERFLOW, "EOVERFLOW" },
		{ EOPNOTSUPP, "EOPNOTSUPP" }, { ENOSYS, "ENOSYS" },
	};
	size_t	 i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].en_errno == e)
			return names[i].en_name;
	(void)snprintf(buf, len, "errno %d", e);
	return buf;
}

/*
 * The interpreter.
 */

/* Numbers compare by value, everything else as wjson_equal does. */
static int
value_equal(const struct wjson *a, const struct wjson *b)
{
	const struct wjson	*x, *y;

	if (a->j_type != b->j_type)
		return 0;
	switch (a->j_type) {
	case WJSON_NUMBER:
		return strtod(a->j_str, NULL) == strtod(b->j_str, NULL);
	case WJSON_ARRAY:
		if (a->j_count != b->j_count)
			return 0;
		for (x = a->j_head, y = b->j_head; x != NULL;
		    x = x->j_next, y = y->j_next)
			if (!value_equal(x, y))
				return 0;
		return 1;
	case WJSON_OBJECT:
		if (a->j_count != b->j_count)
			return 0;
		for (x = a->j_head; x != NULL; x = x->j_next) {
			for (y = b->j_head; y != NULL; y = y->j_next)
				if (y->j_keylen == x->j_keylen &&
				    memcmp(x->j_key, y->j_key, x->j_keylen) ==
				    0)
					break;
			if (y == NULL || !value_equal(x, y))
				return 0;
		}
		return 1;
	default:
		return wjson_equal(a, b);
	}
}

static int
str_cmp(const struct wjson *a, const struct wjson *b)
{
	size_t	 n = a->j_len < b->j_len ? a->j_len : b->j_len;
	int	 c;

	if ((c = memcmp(a->j_str, b->j_str, n)) != 0)
		return c;
	return a->j_len < b->j_len ? -1 : a->j_len > b->j_len;
}

static int
compare(const struct wjson *v, enum ps_op op, const struct wjson *want)
{
	const struct wjson	*c;
	double			 x, y;

	if (v == NULL)
		return op == PS_OP_NE;
	switch (op) {
	case PS_OP_EQ:
		return value_equal(v, want);
	case PS_OP_NE:
		return !value_equal(v, want);
	case PS_OP_LT:
	case PS_OP_GT:
		if (v->j_type == WJSON_NUMBER &&
		    want->j_type == WJSON_NUMBER) {
			x = strtod(v->j_str, NULL);
			y = strtod(want->j_str, NULL);
			return op == PS_OP_LT ? x < y : x > y;
		}
		if (v->j_type == WJSON_STRING &&
		    want->j_type == WJSON_STRING)
			return op == PS_OP_LT ? str_cmp(v, want) < 0 :
			    str_cmp(v, want) > 0;
		return 0;
	case PS_OP_CONTAINS:
		if (v->j_type == WJSON_STRING &&
		    want->j_type == WJSON_STRING)
			return want->j_len == 0 || memmem(v->j_str, v->j_len,
			    want->j_str, want->j_len) != NULL;
		if (v->j_type == WJSON_ARRAY) {
			for (c = v->j_head; c != NULL; c = c->j_next)
				if (value_equal(c, want))
					return 1;
			return 0;
		}
		if (v->j_type == WJSON_OBJECT &&
		    want->j_type == WJSON_STRING) {
			for (c = v->j_head; c != NULL; c = c->j_next)
				if (c->j_keylen == want->j_len &&
				    memcmp(c->j_key, want->j_str,
				    want->j_len) == 0)
					return 1;
		}
		return 0;
	}
	return 0;
}

/* TEXT substituted; NULL with the error set. */
static char *
run_text(struct ps_run *r, const struct ps_stmt *st, size_t *lenp)
{
	struct wbuf	 out;

	wbuf_init(&out, PS_ANSWER_MAX * 2);
	if (st->st_text != NULL &&
	    subst(r, st->st_text, 0, st->st_line, &out, r->r_err) == -1) {
		wbuf_free(&out);
		return NULL;
	}
	if (out.b_err != 0) {
		wbuf_free(&out);
		ps_fail(r->r_err, st->st_line, "out of memory");
		return NULL;
	}
	if (!wjson_utf8_valid(out.b_data, out.b_len)) {
		wbuf_free(&out);
		ps_fail(r->r_err, st->st_line, "the text is not UTF-8");
		return NULL;
	}
	return wbuf_steal(&out, lenp);
}

/* The body of tools/call, or NULL with the error set. */
static char *
call_body(struct ps_run *r, const struct ps_stmt *st, size_t *lenp)
{
	struct wjson	*req, *params, *args;
	char		*body;

	if (st->st_text != NULL) {
		args = subst_json(r, st->st_text, st->st_line,
		    "ARGS must be a JSON object", r->r_err);
		if (args == NULL)
			return NULL;
		if (args->j_type != WJSON_OBJECT) {
			wjson_free(args);
			ps_fail(r->r_err, st->st_line, "ARGS must be a JSON "
			    "object");
			return NULL;
		}
	} else
		args = wjson_object();
	req = wjson_object();
	params = wjson_object();
	wjson_set(params, "name", wjson_string(st->st_b));
	wjson_set(params, "arguments", args);
	wjson_set(req, "jsonrpc", wjson_string("2.0"));
	wjson_set(req, "id", wjson_int(1));
	wjson_set(req, "method", wjson_string("tools/call"));
	wjson_set(req, "params", params);
	body = wjson_emit_str(req, PS_REQUEST_MAX, lenp);
	wjson_free(req);
	if (body == NULL)
		ps_fail(r->r_err, st->st_line, "%s/%s: the arguments are "
		    "too long", st->st_a, st->st_b);
	return body;
}

static char *
mcp_path(const char *server)
{
	struct wbuf	 b;

	wbuf_init(&b, 0);
	wbuf_addf(&b, "/mcp/%s", server);
	return wbuf_steal(&b, NULL);
}

static int
set_last(struct ps_run *r, struct wjson *v, unsigned int line)
{
	if (v == NULL)
		return ps_fail(r->r_err, line, "out of memory");
	wjson_free(r->r_last);
	r->r_last = v;
	return 0;
}

static int
run_call(struct ps_run *r, const struct ps_stmt *st)
{
	struct wbuf	 answer;
	struct wjson	*result;
	char		*body, *path;
	size_t		 len;
	int		 status;

	if (!pscript_granted(r->r_in, st->st_a, st->st_b)) {
		wbuf_reset(r->r_err);
		wbuf_addf(r->r_err, "%s/%s is not granted to this script",
		    st->st_a, st->st_b);
		return -1;
	}
	if ((body = call_body(r, st, &len)) == NULL)
		return -1;
	if ((path = mcp_path(st->st_a)) == NULL) {
		free(body);
		return ps_fail(r->r_err, st->st_line, "out of memory");
	}
	wbuf_init(&answer, PS_ANSWER_MAX);
	status = r->r_io->pio_request(r->r_io->pio_arg, "POST", path, body,
	    len, &answer);
	free(path);
	free(body);
	result = pscript_mcp_result(st->st_a, st->st_b, status,
	    answer.b_data != NULL ? answer.b_data : "", answer.b_len,
	    r->r_err);
	wbuf_free(&answer);
	if (result == NULL)
		return -1;
	if (st->st_kind == PS_JSON) {
		struct wjson	*v = mcp_json(result);

		wjson_free(result);
		result = v;
	}
	return set_last(r, result, st->st_line);
}

static int
run_try(struct ps_run *r, const struct ps_stmt *st)
{
	struct wbuf	 answer;
	char		*body = NULL;
	size_t		 len = 0;
	int		 status;

	if (st->st_text != NULL && (body = run_text(r, st, &len)) == NULL)
		return -1;
	wbuf_init(&answer, PS_ANSWER_MAX);
	status = r->r_io->pio_request(r->r_io->pio_arg, st->st_a, st->st_b,
	    body, len, &answer);
	wbuf_free(&answer);
	free(body);
	if (wjson_append(r->r_statuses, wjson_int(status)) == -1)
		return ps_fail(r->r_err, st->st_line, "out of memory");
	return 0;
}

static int
run_try2(struct ps_run *r, const struct ps_stmt *st)
{
	char	*body, *path;
	size_t	 len;
	int	 status[2] = { 0, 0 };

	if ((body = call_body(r, st, &len)) == NULL)
		return -1;
	if ((path = mcp_path(st->st_a)) == NULL) {
		free(body);
		return ps_fail(r->r_err, st->st_line, "out of memory");
	}
	r->r_io->pio_request2(r->r_io->pio_arg, path, body, len, status);
	free(path);
	free(body);
	if (wjson_append(r->r_statuses, wjson_int(status[0])) == -1 ||
	    wjson_append(r->r_statuses, wjson_int(status[1])) == -1)
		return ps_fail(r->r_err, st->st_line, "out of memory");
	return 0;
}

static int
run_write(struct ps_run *r, const struct ps_stmt *st)
{
	char	*text, buf[32];
	size_t	 len;
	int	 e;

	if ((text = run_text(r, st, &len)) == NULL)
		return -1;
	e = r->r_io->pio_write(r->r_io->pio_arg, st->st_a, text, len);
	free(text);
	if (wjson_append(r->r_writes, wjson_string(e == 0 ? "ok" :
	    pscript_errno_name(e, buf, sizeof(buf)))) == -1)
		return ps_fail(r->r_err, st->st_line, "out of memory");
	return 0;
}

/* 0: on to the next, 1: the script ended with a result, -1: an error. */
static int
run_stmt(struct ps_run *r, const struct ps_stmt *st)
{
	struct wjson	*res;
	char		*text;
	size_t		 len;

	switch (st->st_kind) {
	case PS_LOG:
		if ((text = run_text(r, st, &len)) == NULL)
			return -1;
		r->r_io->pio_log(r->r_io->pio_arg, text, len);
		free(text);
		return 0;
	case PS_CALL:
	case PS_JSON:
		return run_call(r, st);
	case PS_TRY:
		return run_try(r, st);
	case PS_TRY2:
		return run_try2(r, st);
	case PS_WRITE:
		return run_write(r, st);
	case PS_SLEEP:
		r->r_io->pio_sleep(r->r_io->pio_arg, st->st_ms);
		return 0;
	case PS_WHEN:
		if (!compare(lookup(r->r_last, st->st_a, strlen(st->st_a)),
		    st->st_op, st->st_value))
			return 0;
		return run_stmt(r, st->st_then);
	case PS_WAKE:
	case PS_SKIP:
		res = wjson_object();
		wjson_set(res, "wake", wjson_bool(st->st_kind == PS_WAKE));
		if (st->st_text != NULL) {
			if ((text = run_text(r, st, &len)) == NULL) {
				wjson_free(res);
				return -1;
			}
			wjson_set(res, st->st_kind == PS_WAKE ? "context" :
			    "note", wjson_string_take(text, len));
		}
		if (res == NULL || res->j_bad) {
			wjson_free(res);
			return ps_fail(r->r_err, st->st_line,
			    "out of memory");
		}
		r->r_result = res;
		return 1;
	case PS_RETURN:
		if ((res = subst_json(r, st->st_text, st->st_line,
		    "return needs a JSON value", r->r_err)) == NULL)
			return -1;
		r->r_result = res;
		return 1;
	case PS_FAIL:
		if ((text = run_text(r, st, &len)) == NULL)
			return -1;
		wbuf_reset(r->r_err);
		wbuf_add(r->r_err, text, len);
		free(text);
		return -1;
	}
	return ps_fail(r->r_err, st->st_line, "%s", rule_statement);
}

/*
 * Answers.
 */

char *
pscript_answer_error(const char *msg, size_t len, size_t *lenp)
{
	struct wjson	*a;
	char		*out;

	len = wjson_utf8_cut(msg, len, PS_ERROR_MAX);
	a = wjson_object();
	wjson_set(a, "ok", wjson_bool(0));
	wjson_set(a, "error", wjson_string_len(msg, len));
	out = wjson_emit_str(a, PS_OUTPUT_MAX, lenp);
	wjson_free(a);
	return out;
}

char *
pscript_answer_ok(const struct wjson *result, size_t *lenp)
{
	static const char	 too_long[] = "the result is too long";
	struct wbuf		 b;

	wbuf_init(&b, PS_OUTPUT_MAX);
	wbuf_addstr(&b, "{\"ok\":true,\"result\":");
	if (result != NULL)
		(void)wjson_emit(result, &b);
	else
		wbuf_addstr(&b, "null");
	wbuf_addc(&b, '}');
	if (b.b_err == EFBIG) {
		wbuf_free(&b);
		return pscript_answer_error(too_long, sizeof(too_long) - 1,
		    lenp);
	}
	if (b.b_err != 0) {
		wbuf_free(&b);
		return NULL;
	}
	return wbuf_steal(&b, lenp);
}

char *
pscript_run(const char *input, size_t len, const struct pscript_io *io,
    size_t *lenp)
{
	struct pscript_input	 in;
	struct pscript		*ps = NULL;
	struct ps_run		 r;
	struct wbuf		 err;
	enum pscript_input_err	 ie;
	const char		*msg;
	char			*out;
	size_t			 i;
	int			 rc = 0;

	if ((ie = pscript_input_parse(input, len, &in)) != PSCRIPT_INPUT_OK) {
		msg = pscript_input_err_to_string(ie);
		return pscript_answer_error(msg, strlen(msg), lenp);
	}
	wbuf_init(&err, 0);
	memset(&r, 0, sizeof(r));
	r.r_in = &in;
	r.r_io = io;
	r.r_err = &err;
	r.r_last = wjson_null();
	r.r_statuses = wjson_array();
	r.r_writes = wjson_array();
	if (r.r_last == NULL || r.r_statuses == NULL || r.r_writes == NULL)
		rc = ps_fail(&err, 0, "out of memory");
	else if ((ps = pscript_parse(in.pi_script->j_str,
	    in.pi_script->j_len, &err)) == NULL)
		rc = -1;
	for (i = 0; rc == 0 && i < ps->ps_count; i++)
		rc = run_stmt(&r, &ps->ps_stmts[i]);
	if (rc == -1)
		out = pscript_answer_error(err.b_data != NULL ? err.b_data :
		    "", err.b_len, lenp);
	else
		out = pscript_answer_ok(r.r_result, lenp);
	wjson_free(r.r_result);
	wjson_free(r.r_last);
	wjson_free(r.r_statuses);
	wjson_free(r.r_writes);
	wbuf_free(&err);
	pscript_free(ps);
	pscript_input_free(&in);
	return out;
}
