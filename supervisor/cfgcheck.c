/*
 * What every part of the configuration file goes through: the lexical
 * check before cJSON, the error and warning lines ("<field>: <rule>"), the
 * field paths they name, and the typed values with their rules.  The
 * fields themselves are config.c's.
 */
#include <sys/types.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cfgcheck.h"
#include "config.h"
#include "validate.h"

static char	*vline(const char *, const char *, va_list)
		    __attribute__((format(printf, 2, 0)));

int
lines_add(char ***lines, size_t *n, char *line)
{
	char	**nl;

	if (line == NULL)
		return -1;
	nl = reallocarray(*lines, *n + 1, sizeof(**lines));
	if (nl == NULL) {
		free(line);
		return -1;
	}
	nl[(*n)++] = line;
	*lines = nl;
	return 0;
}

static char *
vline(const char *field, const char *fmt, va_list ap)
{
	char	*msg, *line;

	if (vasprintf(&msg, fmt, ap) == -1)
		return NULL;
	if (asprintf(&line, "%s: %s", field, msg) == -1)
		line = NULL;
	free(msg);
	return line;
}

void
cerr(struct cctx *c, const char *field, const char *fmt, ...)
{
	va_list	 ap;
	char	*line;

	/* Past the cap only the count grows; config_parse() reports it. */
	if (c->nerr++ >= CONFIG_ERRORS_MAX || c->errs == NULL)
		return;
	va_start(ap, fmt);
	line = vline(field, fmt, ap);
	va_end(ap);
	if (lines_add(&c->errs->lines, &c->errs->n, line) == -1)
		c->nomem = 1;
}

void
cwarn(struct cctx *c, const char *field, const char *fmt, ...)
{
	va_list	 ap;
	char	*line;

	if (c->errs == NULL)
		return;
	va_start(ap, fmt);
	line = vline(field, fmt, ap);
	va_end(ap);
	if (lines_add(&c->errs->warnings, &c->errs->nwarn, line) == -1)
		c->nomem = 1;
}

/*
 * Keys and values from the file go into messages: anything that is not
 * printable ASCII is shown as \xNN so that an error stays one line.
 */
void
quote(char *out, size_t outsz, const char *s)
{
	size_t		 i, o = 0;
	unsigned char	 ch;
	char		 tmp[5];
	const char	*add;

	if (outsz == 0)
		return;
	out[0] = '\0';
	for (i = 0; s[i] != '\0'; i++) {
		if (i == QUOTE_MAX) {
			add = "...";
		} else {
			ch = (unsigned char)s[i];
			if (ch == '"' || ch == '\\') {
				tmp[0] = '\\';
				tmp[1] = (char)ch;
				tmp[2] = '\0';
			} else if (ch < 0x20 || ch > 0x7e)
				snprintf(tmp, sizeof(tmp), "\\x%02x", ch);
			else {
				tmp[0] = (char)ch;
				tmp[1] = '\0';
			}
			add = tmp;
		}
		if (o + strlen(add) >= outsz)
			break;
		memcpy(out + o, add, strlen(add) + 1);
		o += strlen(add);
		if (i == QUOTE_MAX)
			break;
	}
}

static int
is_word(const char *s)
{
	size_t	 i;

	for (i = 0; s[i] != '\0'; i++) {
		if (i >= 128)
			return 0;
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return 0;
	}
	return i > 0;
}

/* Paths are bounded by the nesting of the file, but say so if cut. */
static void
path_cut(char *out, size_t outsz, int r)
{
	if (r >= 0 && (size_t)r < outsz)
		return;
	if (outsz > 4)
		memcpy(out + outsz - 4, "...", 4);
}

/* "parent.key", or parent["key"] when the key is not a plain word. */
void
path_key(char *out, size_t outsz, const char *parent, const char *key)
{
	char	 q[QUOTE_MAX * 4 + 8];
	int	 r;

	if (is_word(key))
		r = snprintf(out, outsz, "%s%s%s", parent, *parent ? "." : "",
		    key);
	else {
		quote(q, sizeof(q), key);
		r = snprintf(out, outsz, "%s[\"%s\"]", parent, q);
	}
	path_cut(out, outsz, r);
}

void
path_index(char *out, size_t outsz, const char *parent, size_t i)
{
	path_cut(out, outsz, snprintf(out, outsz, "%s[%zu]", parent, i));
}

void
lex_err(struct cctx *c, const char *buf, size_t off, const char *what)
{
	size_t	 i, line = 1, col = 1;

	for (i = 0; i < off; i++) {
		if (buf[i] == '\n') {
			line++;
			col = 1;
		} else
			col++;
	}
	cerr(c, "configuration",
	    "JSON syntax error at line %zu, column %zu: %s", line, col, what);
}

int
is_digit(unsigned char ch)
{
	return ch >= '0' && ch <= '9';
}

/* Returns the offset after the number, or 0 when it breaks the grammar. */
static size_t
lex_number(const char *buf, size_t len, size_t i)
{
	const unsigned char	*u = (const unsigned char *)buf;

	if (u[i] == '-')
		i++;
	if (i >= len || !is_digit(u[i]))
		return 0;
	if (u[i] == '0')
		i++;
	else
		while (i < len && is_digit(u[i]))
			i++;
	if (i < len && u[i] == '.') {
		if (++i >= len || !is_digit(u[i]))
			return 0;
		while (i < len && is_digit(u[i]))
			i++;
	}
	if (i < len && (u[i] == 'e' || u[i] == 'E')) {
		i++;
		if (i < len && (u[i] == '+' || u[i] == '-'))
			i++;
		if (i >= len || !is_digit(u[i]))
			return 0;
		while (i < len && is_digit(u[i]))
			i++;
	}
	/* "01" would otherwise read as two tokens that cJSON merges. */
	if (i < len && (is_digit(u[i]) || u[i] == '.'))
		return 0;
	return i;
}

/* From the opening quote; returns the offset after the string, or 0. */
static size_t
lex_string(struct cctx *c, const char *buf, size_t len, size_t start)
{
	const unsigned char	*u = (const unsigned char *)buf;
	size_t			 i, k;
	int			 v, cp;

	for (i = start + 1; i < len; i++) {
		if (u[i] == '"')
			return i + 1;
		if (u[i] < 0x20) {
			lex_err(c, buf, i, u[i] == 0 ? "NUL byte" :
			    "control character in a string");
			return 0;
		}
		if (u[i] != '\\')
			continue;
		if (++i >= len)
			break;
		switch (u[i]) {
		case '"': case '\\': case '/': case 'b':
		case 'f': case 'n': case 'r': case 't':
			continue;
		case 'u':
			break;
		default:
			lex_err(c, buf, i - 1, "invalid escape");
			return 0;
		}
		for (cp = 0, k = 1; k <= 4; k++) {
			if (i + k >= len || (v = hex_digit(u[i + k])) == -1) {
				lex_err(c, buf, i - 1, "invalid \\u escape");
				return 0;
			}
			cp = cp * 16 + v;
		}
		if (cp == 0) {
			lex_err(c, buf, i - 1,
			    "\\u0000 (strings must not contain NUL)");
			return 0;
		}
		i += 4;
	}
	lex_err(c, buf, start, "unterminated string");
	return 0;
}

/*
 * Lexical pass before cJSON: cJSON lets \u0000 and raw NUL bytes cut
 * strings short without a word, and takes raw control characters, leading
 * zeros and other text JSON forbids.  Returns -1 after one error.
 */
int
lex_check(struct cctx *c, const char *buf, size_t len)
{
	const unsigned char	*u = (const unsigned char *)buf;
	size_t			 i = 0, next;

	while (i < len) {
		if (u[i] == '"') {
			if ((i = lex_string(c, buf, len, i)) == 0)
				return -1;
		} else if (u[i] == '-' || is_digit(u[i])) {
			if ((next = lex_number(buf, len, i)) == 0) {
				lex_err(c, buf, i, "invalid number");
				return -1;
			}
			i = next;
		} else if (u[i] < 0x20 && u[i] != '\t' && u[i] != '\n' &&
		    u[i] != '\r') {
			lex_err(c, buf, i, u[i] == 0 ? "NUL byte" :
			    "control character");
			return -1;
		} else
			i++;
	}
	return 0;
}

/*
 * Object members: each known name at most once, nothing unknown.  items[i]
 * is the member named names[i], or NULL.
 */
void
members(struct cctx *c, const cJSON *obj, const char *path,
    const char *const *names, const cJSON **items, size_t n)
{
	const cJSON	*it;
	char		 p[FIELD_PATH_MAX];
	size_t		 i;

	for (i = 0; i < n; i++)
		items[i] = NULL;
	cJSON_ArrayForEach(it, obj) {
		if (it->string == NULL)
			continue;
		for (i = 0; i < n; i++)
			if (strcmp(it->string, names[i]) == 0)
				break;
		path_key(p, sizeof(p), path, it->string);
		if (i == n)
			cerr(c, p, "unknown field");
		else if (items[i] != NULL)
			cerr(c, p, "duplicate key");
		else
			items[i] = it;
	}
}

int
is_object(struct cctx *c, const cJSON *it, const char *path)
{
	if (cJSON_IsObject(it))
		return 1;
	cerr(c, path, "must be an object");
	return 0;
}

/* The string's text, valid UTF-8 without NUL; NULL after an error. */
const char *
str_value(struct cctx *c, const cJSON *it, const char *path, size_t *lenp)
{
	const char	*s;
	size_t		 len;

	if (!cJSON_IsString(it) || it->valuestring == NULL) {
		cerr(c, path, "must be a string");
		return NULL;
	}
	s = it->valuestring;
	len = strlen(s);
	if (utf8_text_check(s, len, CONFIG_FILE_MAX) != 0) {
		cerr(c, path, "must be valid UTF-8 text");
		return NULL;
	}
	*lenp = len;
	return s;
}

void
uint_value(struct cctx *c, const cJSON *it, const char *path, uint64_t min,
    uint64_t max, uint64_t *out)
{
	double	 v;

	if (it == NULL)
		return;
	if (cJSON_IsNumber(it)) {
		v = it->valuedouble;
		/* Range first: it turns NaN away and makes the cast defined. */
		if (v >= (double)min && v <= (double)max &&
		    (double)(uint64_t)v == v) {
			*out = (uint64_t)v;
			return;
		}
	}
	cerr(c, path, "must be an integer from %llu to %llu",
	    (unsigned long long)min, (unsigned long long)max);
}

void
bool_value(struct cctx *c, const cJSON *it, const char *path, int *out)
{
	if (it == NULL)
		return;
	if (cJSON_IsBool(it))
		*out = cJSON_IsTrue(it);
	else
		cerr(c, path, "must be true or false");
}

/* C0, DEL or C1 in UTF-8 text. */
static int
has_control(const char *s, size_t len)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i;

	for (i = 0; i < len; i++) {
		if (u[i] < 0x20 || u[i] == 0x7f)
			return 1;
		if (u[i] == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 &&
		    u[i + 1] <= 0x9f)
			return 1;
	}
	return 0;
}

/* White space as JavaScript's \s has it, or a control character. */
int
has_space_or_control(const char *s, size_t len)
{
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i = 0;
	uint32_t		 cp;

	if (has_control(s, len))
		return 1;
	while (i < len) {
		/* The text is valid UTF-8 by now: decode without checks. */
		if (u[i] < 0x80)
			cp = u[i++];
		else if (u[i] < 0xe0) {
			cp = (u[i] & 0x1f) << 6 | (u[i + 1] & 0x3f);
			i += 2;
		} else if (u[i] < 0xf0) {
			cp = (u[i] & 0x0f) << 12 | (u[i + 1] & 0x3f) << 6 |
			    (u[i + 2] & 0x3f);
			i += 3;
		} else {
			cp = 0x10000;
			i += 4;
		}
		switch (cp) {
		case 0x20:
		case 0xa0:
		case 0x1680:
		case 0x2028:
		case 0x2029:
		case 0x202f:
		case 0x205f:
		case 0x3000:
		case 0xfeff:
			return 1;
		}
		if (cp >= 0x2000 && cp <= 0x200a)
			return 1;
	}
	return 0;
}

/* An absolute path of at most max bytes; NULL after an error. */
const char *
abs_path(struct cctx *c, const cJSON *it, const char *path, size_t max)
{
	const char	*s;
	size_t		 len;

	if ((s = str_value(c, it, path, &len)) == NULL)
		return NULL;
	if (s[0] != '/') {
		cerr(c, path, "must be an absolute path");
		return NULL;
	}
	if (len > max) {
		cerr(c, path, "must be at most %zu bytes", max);
		return NULL;
	}
	if (has_control(s, len)) {
		cerr(c, path, "must not contain control characters");
		return NULL;
	}
	return s;
}

/* Only one spelling per directory, so that paths compare as strings. */
int
canonical_path(const char *s)
{
	const char	*p = s, *e;
	size_t		 n;

	while (*p == '/') {
		e = strchr(p + 1, '/');
		n = e != NULL ? (size_t)(e - p - 1) : strlen(p + 1);
		if (n == 0)
			return 0;
		if ((n == 1 && p[1] == '.') ||
		    (n == 2 && p[1] == '.' && p[2] == '.'))
			return 0;
		p += n + 1;
	}
	return 1;
}
