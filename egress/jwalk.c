/*
 * The reader of egress's policy: strict JSON (RFC 8259), walked without
 * building anything, so a hostile body costs time linear in its size and
 * no memory.  Callers get each member of an object or element of an array
 * as the walker reaches it, and read the values they rule on again from
 * the offsets they noted.
 */
#include <stdio.h>
#include <string.h>

#include "jwalk.h"
#include "policy.h"
#include "validate.h"


static int
jw_fail(struct jw *w, const char *why)
{
	if (w->err == NULL)
		w->err = why;
	return -1;
}

void
jw_ws(struct jw *w)
{
	while (w->i < w->len && (w->s[w->i] == ' ' || w->s[w->i] == '\t' ||
	    w->s[w->i] == '\n' || w->s[w->i] == '\r'))
		w->i++;
}

int
jw_node(struct jw *w)
{
	if (w->uncounted)
		return 0;
	if (++w->nodes > POLICY_NODES_MAX)
		return jw_fail(w, "too many values and keys");
	return 0;
}

static int
jw_hex4(struct jw *w, uint32_t *v)
{
	int	 d;
	size_t	 k;

	if (w->len - w->i < 4)
		return jw_fail(w, "a truncated \\u escape");
	*v = 0;
	for (k = 0; k < 4; k++) {
		if ((d = hex_digit(w->s[w->i + k])) == -1)
			return jw_fail(w, "a bad \\u escape");
		*v = (*v << 4) | (uint32_t)d;
	}
	w->i += 4;
	return 0;
}

/* Append code point cp to out as UTF-8; *n goes past outsz when it does
 * not fit (the caller then knows the string is too long). */
static void
put_utf8(char *out, size_t outsz, size_t *n, uint32_t cp)
{
	uint8_t	 b[4];
	size_t	 k, blen;

	blen = utf8_put(b, cp);
	for (k = 0; k < blen; k++, (*n)++)
		if (out != NULL && *n < outsz)
			out[*n] = b[k];
}

/*
 * A string at w->i (its opening quote), decoded into out when out is not
 * NULL: *outlen is its decoded length, which may exceed outsz (then only
 * outsz bytes were written).  Escapes are decoded, so "mod\u0065l" is
 * "model" here as it is upstream.
 */
static int
jw_string(struct jw *w, char *out, size_t outsz, size_t *outlen)
{
	uint32_t	 cp, lo;
	size_t		 n = 0, run;
	uint8_t		 c;

	if (w->i >= w->len || w->s[w->i] != '"')
		return jw_fail(w, "a string expected");
	w->i++;
	for (;;) {
		/* Plain ASCII as it is, many bytes at once. */
		run = json_ascii_run(w->s + w->i, w->len - w->i);
		if (out != NULL && n < outsz)
			memcpy(out + n, w->s + w->i, run < outsz - n ? run :
			    outsz - n);
		n += run;
		w->i += run;
		if (w->i >= w->len)
			return jw_fail(w, "an unterminated string");
		c = w->s[w->i];
		if (c == '"') {
			w->i++;
			break;
		}
		if (c < 0x20)
			return jw_fail(w, "a control character in a string");
		if (c != '\\') {
			if (utf8_next(w->s, w->len, &w->i, &cp) == -1)
				return jw_fail(w, "a string that is not UTF-8");
			put_utf8(out, outsz, &n, cp);
			continue;
		}
		if (++w->i >= w->len)
			return jw_fail(w, "an unterminated escape");
		c = w->s[w->i++];
		switch (c) {
		case '"':
		case '\\':
		case '/':
			cp = c;
			break;
		case 'b':
			cp = '\b';
			break;
		case 'f':
			cp = '\f';
			break;
		case 'n':
			cp = '\n';
			break;
		case 'r':
			cp = '\r';
			break;
		case 't':
			cp = '\t';
			break;
		case 'u':
			if (jw_hex4(w, &cp) == -1)
				return -1;
			/* a surrogate only as a whole pair */
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return jw_fail(w, "a lone low surrogate");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (w->len - w->i < 2 || w->s[w->i] != '\\' ||
				    w->s[w->i + 1] != 'u')
					return jw_fail(w,
					    "a lone high surrogate");
				w->i += 2;
				if (jw_hex4(w, &lo) == -1)
					return -1;
				if (lo < 0xdc00 || lo > 0xdfff)
					return jw_fail(w,
					    "a lone high surrogate");
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				    (lo - 0xdc00);
			}
			break;
		default:
			return jw_fail(w, "a bad escape");
		}
		put_utf8(out, outsz, &n, cp);
	}
	if (outlen != NULL)
		*outlen = n;
	return 0;
}

static int
jw_digits(struct jw *w)
{
	size_t	 start = w->i;

	while (w->i < w->len && w->s[w->i] >= '0' && w->s[w->i] <= '9')
		w->i++;
	return w->i > start ? 0 : jw_fail(w, "a bad number");
}

static int
jw_number(struct jw *w)
{
	if (w->i < w->len && w->s[w->i] == '-')
		w->i++;
	if (w->i < w->len && w->s[w->i] == '0')
		w->i++;
	else if (jw_digits(w) == -1)
		return -1;
	if (w->i < w->len && w->s[w->i] == '.') {
		w->i++;
		if (jw_digits(w) == -1)
			return -1;
	}
	if (w->i < w->len && (w->s[w->i] == 'e' || w->s[w->i] == 'E')) {
		w->i++;
		if (w->i < w->len && (w->s[w->i] == '+' || w->s[w->i] == '-'))
			w->i++;
		if (jw_digits(w) == -1)
			return -1;
	}
	return 0;
}

static int
jw_literal(struct jw *w, const char *lit)
{
	size_t	 n = strlen(lit);

	if (w->len - w->i < n || memcmp(w->s + w->i, lit, n) != 0)
		return jw_fail(w, "a bad literal");
	w->i += n;
	return 0;
}

int
jw_object(struct jw *w, int depth, jw_member_fn fn, void *arg)
{
	char	 key[JW_KEY_MAX + 1];
	size_t	 klen;

	if (depth > POLICY_DEPTH_MAX)
		return jw_fail(w, "nested too deep");
	if (w->i >= w->len || w->s[w->i] != '{')
		return jw_fail(w, "an object expected");
	w->i++;
	jw_ws(w);
	if (w->i < w->len && w->s[w->i] == '}') {
		w->i++;
		return 0;
	}
	for (;;) {
		jw_ws(w);
		if (jw_node(w) == -1 ||
		    jw_string(w, key, JW_KEY_MAX, &klen) == -1)
			return -1;
		jw_ws(w);
		if (w->i >= w->len || w->s[w->i] != ':')
			return jw_fail(w, "a ':' expected");
		w->i++;
		jw_ws(w);
		/* a NUL in a key matches no name the policy knows */
		if (klen > JW_KEY_MAX || memchr(key, '\0', klen) != NULL)
			klen = 0;
		key[klen] = '\0';
		if (fn != NULL) {
			if (fn(w, klen > 0 ? key : NULL, arg, depth + 1) == -1)
				return -1;
		} else if (jw_value(w, depth + 1) == -1)
			return -1;
		jw_ws(w);
		if (w->i < w->len && w->s[w->i] == ',') {
			w->i++;
			continue;
		}
		if (w->i < w->len && w->s[w->i] == '}') {
			w->i++;
			return 0;
		}
		return jw_fail(w, "a ',' or '}' expected");
	}
}

int
jw_array(struct jw *w, int depth, jw_elem_fn fn, void *arg)
{
	if (depth > POLICY_DEPTH_MAX)
		return jw_fail(w, "nested too deep");
	if (w->i >= w->len || w->s[w->i] != '[')
		return jw_fail(w, "an array expected");
	w->i++;
	jw_ws(w);
	if (w->i < w->len && w->s[w->i] == ']') {
		w->i++;
		return 0;
	}
	for (;;) {
		jw_ws(w);
		if ((fn != NULL ? fn(w, arg, depth + 1) :
		    jw_value(w, depth + 1)) == -1)
			return -1;
		jw_ws(w);
		if (w->i < w->len && w->s[w->i] == ',') {
			w->i++;
			continue;
		}
		if (w->i < w->len && w->s[w->i] == ']') {
			w->i++;
			return 0;
		}
		return jw_fail(w, "a ',' or ']' expected");
	}
}

int
jw_value(struct jw *w, int depth)
{
	if (jw_node(w) == -1)
		return -1;
	if (w->i >= w->len)
		return jw_fail(w, "a value expected");
	switch (w->s[w->i]) {
	case '{':
		return jw_object(w, depth, NULL, NULL);
	case '[':
		return jw_array(w, depth, NULL, NULL);
	case '"':
		return jw_string(w, NULL, 0, NULL);
	case 't':
		return jw_literal(w, "true");
	case 'f':
		return jw_literal(w, "false");
	case 'n':
		return jw_literal(w, "null");
	default:
		return jw_number(w);
	}
}

char
jw_peek(const struct jw *w)
{
	return w->i < w->len ? (char)w->s[w->i] : '\0';
}

/* A string value that must fit out (NUL-terminated): 0; 1 when it is a
 * string that does not fit or holds a NUL; -2 when it is no string; -1
 * on bad JSON. */
int
jw_get_str(struct jw *w, char *out, size_t outsz)
{
	size_t	 n;

	if (jw_peek(w) != '"') {
		if (jw_value(w, 1) == -1)
			return -1;
		return -2;
	}
	if (jw_string(w, out, outsz - 1, &n) == -1)
		return -1;
	if (n > outsz - 1 || memchr(out, '\0', n) != NULL)
		return 1;
	out[n] = '\0';
	return 0;
}

/* A plain non-negative integer (digits only, as the rebuild writes it):
 * 0; 1 for another number or a value that does not fit; -1 on bad JSON. */
int
jw_get_uint(struct jw *w, uint64_t *v)
{
	size_t	 start = w->i, k;

	if (jw_value(w, 1) == -1)
		return -1;
	*v = 0;
	if (start == w->i)
		return 1;
	for (k = start; k < w->i; k++) {
		if (w->s[k] < '0' || w->s[k] > '9')
			return 1;
		if (*v > (UINT64_MAX - 9) / 10)
			return 1;
		*v = *v * 10 + (w->s[k] - '0');
	}
	/* "0" alone is plain; "007" is no JSON number and failed above */
	return 0;
}

/* A name the peer chose, fit to be told in a log line: no control
 * character (a newline would forge a line of its own). */
void
tame(char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = '?';
}

int
fields_member(struct jw *w, const char *key, void *arg, int depth)
{
	struct fields	*f = arg;
	size_t		 k;

	for (k = 0; key != NULL && k < f->f_n; k++)
		if (strcmp(key, f->f_names[k]) == 0)
			break;
	if (key == NULL || k == f->f_n) {
		if (!f->f_unknown) {
			snprintf(f->f_unknown_name, sizeof(f->f_unknown_name),
			    "%s", key != NULL ? key : "(a long key)");
			tame(f->f_unknown_name);
		}
		f->f_unknown = 1;
	} else if (f->f_seen & (1u << k)) {
		if (!f->f_dup)
			snprintf(f->f_dup_name, sizeof(f->f_dup_name), "%s",
			    key);
		f->f_dup = 1;
	} else {
		f->f_seen |= 1u << k;
		f->f_off[k] = w->i;
	}
	return jw_value(w, depth);
}

/*
 * A walker positioned at one value of the body already read.  The first
 * pass counted every value once; the checks read some of them again (a
 * block, then its source), which must not count against the cap twice.
 */
void
jw_at(struct jw *w, const char *body, size_t len, size_t off)
{
	memset(w, 0, sizeof(*w));
	w->s = (const uint8_t *)body;
	w->len = len;
	w->i = off;
	w->uncounted = 1;
}
