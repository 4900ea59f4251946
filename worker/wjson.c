/*
 * wjson: strict JSON in and out, for a worker that links nothing but libc.
 * Strings are kept decoded with their length (a \u0000 is a byte like any
 * other) and always valid UTF-8; numbers are kept as their text, so that a
 * number goes back out exactly as it came in and no locale is involved.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wjson.h"

/*
 * Byte buffers.
 */

void
wbuf_init(struct wbuf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->b_max = max;
}

static int
wbuf_grow(struct wbuf *b, size_t more)
{
	size_t	 need, cap;
	char	*p;

	if (b->b_err != 0)
		return -1;
	if (more > SIZE_MAX - 1 - b->b_len) {
		b->b_err = EFBIG;
		return -1;
	}
	need = b->b_len + more;
	if (b->b_max != 0 && need > b->b_max) {
		b->b_err = EFBIG;
		return -1;
	}
	if (need < b->b_cap)
		return 0;
	cap = b->b_cap != 0 ? b->b_cap : 256;
	while (cap <= need) {
		if (cap > SIZE_MAX / 2) {
			cap = need + 1;
			break;
		}
		cap *= 2;
	}
	/* Never hold much more than the bound allows. */
	if (b->b_max != 0 && cap > b->b_max + 1)
		cap = b->b_max + 1;
	if ((p = realloc(b->b_data, cap)) == NULL) {
		b->b_err = ENOMEM;
		return -1;
	}
	b->b_data = p;
	b->b_cap = cap;
	return 0;
}

int
wbuf_add(struct wbuf *b, const void *data, size_t len)
{
	if (wbuf_grow(b, len) == -1)
		return -1;
	if (len > 0)
		memcpy(b->b_data + b->b_len, data, len);
	b->b_len += len;
	b->b_data[b->b_len] = '\0';
	return 0;
}

int
wbuf_addstr(struct wbuf *b, const char *s)
{
	return wbuf_add(b, s, strlen(s));
}

int
wbuf_addc(struct wbuf *b, char c)
{
	return wbuf_add(b, &c, 1);
}

int
wbuf_addf(struct wbuf *b, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->b_err = EINVAL;
		return -1;
	}
	if (wbuf_grow(b, (size_t)n) == -1)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(b->b_data + b->b_len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->b_err = EINVAL;
		return -1;
	}
	b->b_len += (size_t)n;
	return 0;
}

void
wbuf_reset(struct wbuf *b)
{
	b->b_len = 0;
	b->b_err = 0;
	if (b->b_data != NULL)
		b->b_data[0] = '\0';
}

void
wbuf_free(struct wbuf *b)
{
	free(b->b_data);
	b->b_data = NULL;
	b->b_len = b->b_cap = 0;
	b->b_err = 0;
}

/* The bytes, NUL-terminated, now the caller's; NULL after any failure. */
char *
wbuf_steal(struct wbuf *b, size_t *lenp)
{
	char	*p;

	if (b->b_data == NULL && wbuf_grow(b, 0) == 0)
		b->b_data[0] = '\0';
	if (b->b_err != 0) {
		wbuf_free(b);
		return NULL;
	}
	p = b->b_data;
	if (lenp != NULL)
		*lenp = b->b_len;
	b->b_data = NULL;
	b->b_len = b->b_cap = 0;
	return p;
}

/*
 * UTF-8.
 */

/* Length of the well-formed sequence at s (1-4), or 0. */
int
wjson_utf8_next(const char *s, size_t len, unsigned long *cpp)
{
	const unsigned char	*p = (const unsigned char *)s;
	unsigned long		 cp;
	size_t			 n, i;

	if (len == 0)
		return 0;
	if (p[0] < 0x80) {
		*cpp = p[0];
		return 1;
	}
	/* 0x80-0xc1: a continuation byte, or the lead of an overlong pair. */
	if (p[0] < 0xc2)
		return 0;
	if (p[0] < 0xe0) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] < 0xf0) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] < 0xf5) {
		n = 4;
		cp = p[0] & 0x07;
	} else
		return 0;
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*cpp = cp;
	return (int)n;
}

/*
 * Bytes of the longest prefix that is well-formed UTF-8 and at most max
 * UTF-16 units, so that a cut never splits a character.
 */
size_t
wjson_utf8_cut(const char *s, size_t len, size_t max)
{
	unsigned long	 cp;
	size_t		 off = 0, units = 0, w;
	int		 n;

	while (off < len) {
		if ((n = wjson_utf8_next(s + off, len - off, &cp)) == 0)
			break;
		w = cp >= 0x10000 ? 2 : 1;
		if (units + w > max)
			break;
		units += w;
		off += (size_t)n;
	}
	return off;
}

size_t
wjson_utf8_valid_prefix(const char *s, size_t len)
{
	return wjson_utf8_cut(s, len, SIZE_MAX);
}

int
wjson_utf8_valid(const char *s, size_t len)
{
	return wjson_utf8_valid_prefix(s, len) == len;
}

/* UTF-16 units of valid UTF-8; a stray byte counts as one. */
size_t
wjson_utf16_len(const char *s, size_t len)
{
	unsigned long	 cp;
	size_t		 off = 0, units = 0;
	int		 n;

	while (off < len) {
		if ((n = wjson_utf8_next(s + off, len - off, &cp)) == 0) {
			off++;
			units++;
			continue;
		}
		units += cp >= 0x10000 ? 2 : 1;
		off += (size_t)n;
	}
	return units;
}

static size_t
utf8_put(char *out, unsigned long cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Nodes.
 */

const char *
wjson_err_to_string(enum wjson_err e)
{
	switch (e) {
	case WJSON_OK:
		return "no error";
	case WJSON_ERR_NOMEM:
		return "out of memory";
	case WJSON_ERR_TOO_BIG:
		return "text too long";
	case WJSON_ERR_DEPTH:
		return "nested too deeply";
	case WJSON_ERR_NODES:
		return "too many values";
	case WJSON_ERR_STRING_LONG:
		return "string too long";
	case WJSON_ERR_EMPTY:
		return "no value";
	case WJSON_ERR_SYNTAX:
		return "syntax error";
	case WJSON_ERR_TRAILING:
		return "data after the value";
	case WJSON_ERR_NUMBER:
		return "bad number";
	case WJSON_ERR_CONTROL:
		return "control character in a string";
	case WJSON_ERR_ESCAPE:
		return "bad escape";
	case WJSON_ERR_SURROGATE:
		return "unpaired surrogate";
	case WJSON_ERR_UTF8:
		return "invalid UTF-8";
	case WJSON_ERR_DUPLICATE:
		return "repeated member name";
	}
	return "unknown error";
}

static struct wjson *
node_new(enum wjson_type type)
{
	struct wjson	*v;

	if ((v = calloc(1, sizeof(*v))) == NULL)
		return NULL;
	v->j_type = type;
	return v;
}

void
wjson_free(struct wjson *v)
{
	struct wjson	*c, *next;

	if (v == NULL)
		return;
	for (c = v->j_head; c != NULL; c = next) {
		next = c->j_next;
		wjson_free(c);
	}
	free(v->j_str);
	free(v->j_key);
	free(v);
}

static void
link_child(struct wjson *parent, struct wjson *v)
{
	v->j_next = NULL;
	if (parent->j_tail == NULL)
		parent->j_head = v;
	else
		parent->j_tail->j_next = v;
	parent->j_tail = v;
	parent->j_count++;
}

/*
 * The parser: recursive descent, one call per nesting level, bounded by
 * wl_depth_max (itself capped at WJSON_DEPTH_HARD).
 */

struct parser {
	const unsigned char	*p_s;
	size_t			 p_len;
	size_t			 p_pos;
	struct wjson_limits	 p_lim;
	size_t			 p_nodes;
	enum wjson_err		 p_err;
	size_t			 p_errpos;
};

static void *
parse_fail(struct parser *p, enum wjson_err e, size_t pos)
{
	if (p->p_err == WJSON_OK) {
		p->p_err = e;
		p->p_errpos = pos;
	}
	return NULL;
}

static struct wjson *
parse_node(struct parser *p, enum wjson_type type)
{
	struct wjson	*v;

	if (p->p_nodes >= p->p_lim.wl_nodes_max)
		return parse_fail(p, WJSON_ERR_NODES, p->p_pos);
	if ((v = node_new(type)) == NULL)
		return parse_fail(p, WJSON_ERR_NOMEM, p->p_pos);
	p->p_nodes++;
	return v;
}

static void
skip_ws(struct parser *p)
{
	while (p->p_pos < p->p_len) {
		switch (p->p_s[p->p_pos]) {
		case ' ':
		case '\t':
		case '\n':
		case '\r':
			p->p_pos++;
			break;
		default:
			return;
		}
	}
}

static int
hex4(const unsigned char *s, unsigned long *out)
{
	unsigned long	 v = 0;
	int		 i, d;

	for (i = 0; i < 4; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			d = s[i] - '0';
		else if (s[i] >= 'a' && s[i] <= 'f')
			d = s[i] - 'a' + 10;
		else if (s[i] >= 'A' && s[i] <= 'F')
			d = s[i] - 'A' + 10;
		else
			return -1;
		v = (v << 4) | (unsigned long)d;
	}
	*out = v;
	return 0;
}

/* A string at p_pos (the opening quote); its decoded bytes in *outp. */
static int
parse_string(struct parser *p, char **outp, size_t *lenp)
{
	const unsigned char	*s = p->p_s;
	size_t			 start, end, i, o;
	unsigned long		 cp, lo;
	char			*out;
	int			 n;

	start = ++p->p_pos;
	/* Find the closing quote first: the decoded string is never longer. */
	for (end = start; end < p->p_len; end++) {
		if (s[end] == '"')
			break;
		if (s[end] == '\\')
			end++;
	}
	if (end >= p->p_len) {
		parse_fail(p, WJSON_ERR_SYNTAX, p->p_len);
		return -1;
	}
	if ((out = malloc(end - start + 1)) == NULL) {
		parse_fail(p, WJSON_ERR_NOMEM, start);
		return -1;
	}
	o = 0;
	for (i = start; i < end; ) {
		if (o > p->p_lim.wl_string_max)
			goto toolong;
		if (s[i] == '\\') {
			/* The scan above left a byte after every backslash. */
			switch (s[i + 1]) {
			case '"':
			case '\\':
			case '/':
				out[o++] = (char)s[i + 1];
				i += 2;
				continue;
			case 'b':
				out[o++] = '\b';
				i += 2;
				continue;
			case 'f':
				out[o++] = '\f';
				i += 2;
				continue;
			case 'n':
				out[o++] = '\n';
				i += 2;
				continue;
			case 'r':
				out[o++] = '\r';
				i += 2;
				continue;
			case 't':
				out[o++] = '\t';
				i += 2;
				continue;
			case 'u':
				break;
			default:
				parse_fail(p, WJSON_ERR_ESCAPE, i);
				goto fail;
			}
			if (end - i < 6 || hex4(s + i + 2, &cp) == -1) {
				parse_fail(p, WJSON_ERR_ESCAPE, i);
				goto fail;
			}
			if (cp >= 0xdc00 && cp <= 0xdfff) {
				parse_fail(p, WJSON_ERR_SURROGATE, i);
				goto fail;
			}
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (end - i < 12 || s[i + 6] != '\\' ||
				    s[i + 7] != 'u' ||
				    hex4(s + i + 8, &lo) == -1 ||
				    lo < 0xdc00 || lo > 0xdfff) {
					parse_fail(p, WJSON_ERR_SURROGATE, i);
					goto fail;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				    (lo - 0xdc00);
				i += 6;
			}
			o += utf8_put(out + o, cp);
			i += 6;
			continue;
		}
		if (s[i] < 0x20) {
			parse_fail(p, WJSON_ERR_CONTROL, i);
			goto fail;
		}
		if (s[i] < 0x80) {
			out[o++] = (char)s[i++];
			continue;
		}
		if ((n = wjson_utf8_next((const char *)s + i, end - i,
		    &cp)) == 0) {
			parse_fail(p, WJSON_ERR_UTF8, i);
			goto fail;
		}
		memcpy(out + o, s + i, (size_t)n);
		o += (size_t)n;
		i += (size_t)n;
	}
	if (o > p->p_lim.wl_string_max)
		goto toolong;
	out[o] = '\0';
	p->p_pos = end + 1;
	*outp = out;
	*lenp = o;
	return 0;
toolong:
	parse_fail(p, WJSON_ERR_STRING_LONG, start);
fail:
	free(out);
	return -1;
}

static int
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static struct wjson *
parse_number(struct parser *p)
{
	const unsigned char	*s = p->p_s;
	size_t			 start = p->p_pos, i = p->p_pos;
	struct wjson		*v;

	if (i < p->p_len && s[i] == '-')
		i++;
	if (i >= p->p_len)
		return parse_fail(p, WJSON_ERR_NUMBER, i);
	if (s[i] == '0')
		i++;
	else if (s[i] >= '1' && s[i] <= '9') {
		while (i < p->p_len && is_digit(s[i]))
			i++;
	} else
		return parse_fail(p, WJSON_ERR_NUMBER, i);
	if (i < p->p_len && s[i] == '.') {
		i++;
		if (i >= p->p_len || !is_digit(s[i]))
			return parse_fail(p, WJSON_ERR_NUMBER, i);
		while (i < p->p_len && is_digit(s[i]))
			i++;
	}
	if (i < p->p_len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < p->p_len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= p->p_len || !is_digit(s[i]))
			return parse_fail(p, WJSON_ERR_NUMBER, i);
		while (i < p->p_len && is_digit(s[i]))
			i++;
	}
	if (i - start > p->p_lim.wl_string_max)
		return parse_fail(p, WJSON_ERR_STRING_LONG, start);
	if ((v = parse_node(p, WJSON_NUMBER)) == NULL)
		return NULL;
	if ((v->j_str = malloc(i - start + 1)) == NULL) {
		free(v);
		return parse_fail(p, WJSON_ERR_NOMEM, start);
	}
	memcpy(v->j_str, s + start, i - start);
	v->j_str[i - start] = '\0';
	v->j_len = i - start;
	p->p_pos = i;
	return v;
}

static struct wjson *
parse_literal(struct parser *p, const char *word, enum wjson_type type,
    int b)
{
	size_t		 n = strlen(word);
	struct wjson	*v;

	if (p->p_len - p->p_pos < n ||
	    memcmp(p->p_s + p->p_pos, word, n) != 0)
		return parse_fail(p, WJSON_ERR_SYNTAX, p->p_pos);
	if ((v = parse_node(p, type)) == NULL)
		return NULL;
	v->j_bool = b;
	p->p_pos += n;
	return v;
}

static int
key_cmp(const void *a, const void *b)
{
	const struct wjson	*x = *(const struct wjson * const *)a;
	const struct wjson	*y = *(const struct wjson * const *)b;
	size_t			 n;
	int			 r;

	n = x->j_keylen < y->j_keylen ? x->j_keylen : y->j_keylen;
	if ((r = memcmp(x->j_key, y->j_key, n)) != 0)
		return r;
	if (x->j_keylen != y->j_keylen)
		return x->j_keylen < y->j_keylen ? -1 : 1;
	return 0;
}

static int
same_key(const struct wjson *a, const struct wjson *b)
{
	return a->j_keylen == b->j_keylen &&
	    memcmp(a->j_key, b->j_key, a->j_keylen) == 0;
}

/* Small objects by pairs, large ones sorted, so no input is quadratic. */
static int
has_duplicate(struct parser *p, const struct wjson *obj)
{
	const struct wjson	 *a, *b;
	const struct wjson	**v;
	size_t			  i, n = obj->j_count;
	int			  dup = 0;

	if (n < 2)
		return 0;
	if (n <= 8) {
		for (a = obj->j_head; a != NULL; a = a->j_next)
			for (b = a->j_next; b != NULL; b = b->j_next)
				if (same_key(a, b))
					return 1;
		return 0;
	}
	if ((v = calloc(n, sizeof(*v))) == NULL) {
		parse_fail(p, WJSON_ERR_NOMEM, p->p_pos);
		return -1;
	}
	for (i = 0, a = obj->j_head; a != NULL; a = a->j_next)
		v[i++] = a;
	qsort(v, n, sizeof(*v), key_cmp);
	for (i = 1; i < n && !dup; i++)
		dup = same_key(v[i - 1], v[i]);
	free(v);
	return dup;
}

static struct wjson	*parse_value(struct parser *, unsigned int);

static struct wjson *
parse_array(struct parser *p, unsigned int depth)
{
	struct wjson	*arr, *v;

	if (depth >= p->p_lim.wl_depth_max)
		return parse_fail(p, WJSON_ERR_DEPTH, p->p_pos);
	if ((arr = parse_node(p, WJSON_ARRAY)) == NULL)
		return NULL;
	p->p_pos++;
	skip_ws(p);
	if (p->p_pos < p->p_len && p->p_s[p->p_pos] == ']') {
		p->p_pos++;
		return arr;
	}
	for (;;) {
		if ((v = parse_value(p, depth + 1)) == NULL)
			goto fail;
		link_child(arr, v);
		skip_ws(p);
		if (p->p_pos >= p->p_len) {
			parse_fail(p, WJSON_ERR_SYNTAX, p->p_pos);
			goto fail;
		}
		if (p->p_s[p->p_pos] == ',') {
			p->p_pos++;
			continue;
		}
		if (p->p_s[p->p_pos] == ']') {
			p->p_pos++;
			return arr;
		}
		parse_fail(p, WJSON_ERR_SYNTAX, p->p_pos);
		goto fail;
	}
fail:
	wjson_free(arr);
	return NULL;
}

static struct wjson *
parse_object(struct parser *p, unsigned int depth)
{
	struct wjson	*obj, *v;
	char		*key;
	size_t		 keylen, at;
	int		 dup;

	if (depth >= p->p_lim.wl_depth_max)
		return parse_fail(p, WJSON_ERR_DEPTH, p->p_pos);
	if ((obj = parse_node(p, WJSON_OBJECT)) == NULL)
		return NULL;
	at = p->p_pos++;
	skip_ws(p);
	if (p->p_pos < p->p_len && p->p_s[p->p_pos] == '}') {
		p->p_pos++;
		return obj;
	}
	for (;;) {
		skip_ws(p);
		if (p->p_pos >= p->p_len || p->p_s[p->p_pos] != '"') {
			parse_fail(p, WJSON_ERR_SYNTAX, p->p_pos);
			goto fail;
		}
		if (parse_string(p, &key, &keylen) == -1)
			goto fail;
		skip_ws(p);
		if (p->p_pos >= p->p_len || p->p_s[p->p_pos] != ':') {
			free(key);
			parse_fail(p, WJSON_ERR_SYNTAX, p->p_pos);
			goto fail;
		}
		p->p_pos++;
		if ((v = parse_value(p, depth + 1)) == NULL) {
			free(key);
			goto fail;
		}
		v->j_key = key;
		v->j_keylen = keylen;
		link_child(obj, v);
		skip_ws(p);
		if (p->p_pos >= p->p_len) {
			parse_fail(p, WJSON_ERR_SYNTAX, p->p_pos);
			goto fail;
		}
		if (p->p_s[p->p_pos] == ',') {
			p->p_pos++;
			continue;
		}
		if (p->p_s[p->p_pos] == '}') {
			p->p_pos++;
			break;
		}
		parse_fail(p, WJSON_ERR_SYNTAX, p->p_pos);
		goto fail;
	}
	if ((dup = has_duplicate(p, obj)) != 0) {
		if (dup == 1)
			parse_fail(p, WJSON_ERR_DUPLICATE, at);
		goto fail;
	}
	return obj;
fail:
	wjson_free(obj);
	return NULL;
}

static struct wjson *
parse_value(struct parser *p, unsigned int depth)
{
	struct wjson	*v;
	size_t		 at;

	skip_ws(p);
	if (p->p_pos >= p->p_len)
		return parse_fail(p, WJSON_ERR_SYNTAX, p->p_pos);
	switch (p->p_s[p->p_pos]) {
	case '{':
		return parse_object(p, depth);
	case '[':
		return parse_array(p, depth);
	case '"':
		at = p->p_pos;
		if ((v = parse_node(p, WJSON_STRING)) == NULL)
			return NULL;
		if (parse_string(p, &v->j_str, &v->j_len) == -1) {
			free(v);
			return parse_fail(p, WJSON_ERR_SYNTAX, at);
		}
		return v;
	case 't':
		return parse_literal(p, "true", WJSON_BOOL, 1);
	case 'f':
		return parse_literal(p, "false", WJSON_BOOL, 0);
	case 'n':
		return parse_literal(p, "null", WJSON_NULL, 0);
	default:
		if (p->p_s[p->p_pos] == '-' || is_digit(p->p_s[p->p_pos]))
			return parse_number(p);
		return parse_fail(p, WJSON_ERR_SYNTAX, p->p_pos);
	}
}

struct wjson *
wjson_parse(const char *buf, size_t len, const struct wjson_limits *lim,
    struct wjson_error *err)
{
	struct parser	 p;
	struct wjson	*v = NULL;

	memset(&p, 0, sizeof(p));
	p.p_s = (const unsigned char *)buf;
	p.p_len = len;
	if (lim != NULL)
		p.p_lim = *lim;
	if (p.p_lim.wl_input_max == 0)
		p.p_lim.wl_input_max = WJSON_INPUT_DEFAULT;
	if (p.p_lim.wl_depth_max == 0)
		p.p_lim.wl_depth_max = WJSON_DEPTH_DEFAULT;
	if (p.p_lim.wl_depth_max > WJSON_DEPTH_HARD)
		p.p_lim.wl_depth_max = WJSON_DEPTH_HARD;
	if (p.p_lim.wl_string_max == 0)
		p.p_lim.wl_string_max = WJSON_STRING_DEFAULT;
	if (p.p_lim.wl_nodes_max == 0)
		p.p_lim.wl_nodes_max = WJSON_NODES_DEFAULT;

	if (len > p.p_lim.wl_input_max)
		parse_fail(&p, WJSON_ERR_TOO_BIG, 0);
	else {
		skip_ws(&p);
		if (p.p_pos >= len)
			parse_fail(&p, WJSON_ERR_EMPTY, p.p_pos);
		else if ((v = parse_value(&p, 0)) != NULL) {
			skip_ws(&p);
			if (p.p_pos != len) {
				parse_fail(&p, WJSON_ERR_TRAILING, p.p_pos);
				wjson_free(v);
				v = NULL;
			}
		}
	}
	if (err != NULL) {
		err->we_err = v != NULL ? WJSON_OK : p.p_err;
		err->we_offset = v != NULL ? 0 : p.p_errpos;
	}
	return v;
}

/*
 * The emitter.
 */

static int
emit_string(struct wbuf *b, const char *s, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	const unsigned char	*u = (const unsigned char *)s;
	size_t			 i, start = 0;
	char			 esc[6];

	wbuf_addc(b, '"');
	for (i = 0; i < len; i++) {
		if (u[i] >= 0x20 && u[i] != '"' && u[i] != '\\')
			continue;
		wbuf_add(b, s + start, i - start);
		start = i + 1;
		esc[0] = '\\';
		switch (u[i]) {
		case '"':
		case '\\':
			esc[1] = (char)u[i];
			break;
		case '\b':
			esc[1] = 'b';
			break;
		case '\f':
			esc[1] = 'f';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		case '\t':
			esc[1] = 't';
			break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[u[i] >> 4];
			esc[5] = hex[u[i] & 0xf];
			wbuf_add(b, esc, 6);
			continue;
		}
		wbuf_add(b, esc, 2);
	}
	wbuf_add(b, s + start, len - start);
	wbuf_addc(b, '"');
	return b->b_err != 0 ? -1 : 0;
}

static int
emit_value(const struct wjson *v, struct wbuf *b)
{
	const struct wjson	*c;

	if (v->j_bad)
		return -1;
	switch (v->j_type) {
	case WJSON_NULL:
		wbuf_add(b, "null", 4);
		break;
	case WJSON_BOOL:
		if (v->j_bool)
			wbuf_add(b, "true", 4);
		else
			wbuf_add(b, "false", 5);
		break;
	case WJSON_NUMBER:
		wbuf_add(b, v->j_str, v->j_len);
		break;
	case WJSON_STRING:
		return emit_string(b, v->j_str, v->j_len);
	case WJSON_ARRAY:
		wbuf_addc(b, '[');
		for (c = v->j_head; c != NULL; c = c->j_next) {
			if (c != v->j_head)
				wbuf_addc(b, ',');
			if (emit_value(c, b) == -1)
				return -1;
		}
		wbuf_addc(b, ']');
		break;
	case WJSON_OBJECT:
		wbuf_addc(b, '{');
		for (c = v->j_head; c != NULL; c = c->j_next) {
			if (c != v->j_head)
				wbuf_addc(b, ',');
			if (emit_string(b, c->j_key, c->j_keylen) == -1)
				return -1;
			wbuf_addc(b, ':');
			if (emit_value(c, b) == -1)
				return -1;
		}
		wbuf_addc(b, '}');
		break;
	}
	return b->b_err != 0 ? -1 : 0;
}

int
wjson_emit(const struct wjson *v, struct wbuf *b)
{
	if (v == NULL)
		return -1;
	return emit_value(v, b);
}

char *
wjson_emit_str(const struct wjson *v, size_t max, size_t *lenp)
{
	struct wbuf	 b;

	wbuf_init(&b, max);
	if (wjson_emit(v, &b) == -1) {
		wbuf_free(&b);
		return NULL;
	}
	return wbuf_steal(&b, lenp);
}

/* Deep equality; members are compared in order, as they were written. */
int
wjson_equal(const struct wjson *a, const struct wjson *b)
{
	const struct wjson	*x, *y;

	if (a == NULL || b == NULL)
		return a == b;
	if (a->j_type != b->j_type)
		return 0;
	switch (a->j_type) {
	case WJSON_NULL:
		return 1;
	case WJSON_BOOL:
		return !a->j_bool == !b->j_bool;
	case WJSON_NUMBER:
	case WJSON_STRING:
		return a->j_len == b->j_len &&
		    memcmp(a->j_str, b->j_str, a->j_len) == 0;
	case WJSON_ARRAY:
	case WJSON_OBJECT:
		if (a->j_count != b->j_count)
			return 0;
		for (x = a->j_head, y = b->j_head; x != NULL && y != NULL;
		    x = x->j_next, y = y->j_next) {
			if (a->j_type == WJSON_OBJECT && !same_key(x, y))
				return 0;
			if (!wjson_equal(x, y))
				return 0;
		}
		return x == NULL && y == NULL;
	}
	return 0;
}

static char *
mem_dup(const char *s, size_t len)
{
	char	*p;

	if ((p = malloc(len + 1)) == NULL)
		return NULL;
	if (len > 0)
		memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

struct wjson *
wjson_copy(const struct wjson *v)
{
	const struct wjson	*c;
	struct wjson		*n, *cc;

	if (v == NULL || v->j_bad)
		return NULL;
	if ((n = node_new(v->j_type)) == NULL)
		return NULL;
	n->j_bool = v->j_bool;
	if (v->j_str != NULL) {
		if ((n->j_str = mem_dup(v->j_str, v->j_len)) == NULL)
			goto fail;
		n->j_len = v->j_len;
	}
	for (c = v->j_head; c != NULL; c = c->j_next) {
		if ((cc = wjson_copy(c)) == NULL)
			goto fail;
		if (c->j_key != NULL) {
			if ((cc->j_key = mem_dup(c->j_key, c->j_keylen)) ==
			    NULL) {
				wjson_free(cc);
				goto fail;
			}
			cc->j_keylen = c->j_keylen;
		}
		link_child(n, cc);
	}
	return n;
fail:
	wjson_free(n);
	return NULL;
}

/*
 * Building trees.
 */

struct wjson *
wjson_null(void)
{
	return node_new(WJSON_NULL);
}

struct wjson *
wjson_bool(int b)
{
	struct wjson	*v;

	if ((v = node_new(WJSON_BOOL)) != NULL)
		v->j_bool = b != 0;
	return v;
}

struct wjson *
wjson_int(long long n)
{
	struct wjson	*v;
	char		 buf[32];
	int		 len;

	len = snprintf(buf, sizeof(buf), "%lld", n);
	if (len < 0 || (size_t)len >= sizeof(buf))
		return NULL;
	if ((v = node_new(WJSON_NUMBER)) == NULL)
		return NULL;
	if ((v->j_str = mem_dup(buf, (size_t)len)) == NULL) {
		free(v);
		return NULL;
	}
	v->j_len = (size_t)len;
	return v;
}

struct wjson *
wjson_string_take(char *s, size_t len)
{
	struct wjson	*v;

	if (s == NULL || !wjson_utf8_valid(s, len) ||
	    (v = node_new(WJSON_STRING)) == NULL) {
		free(s);
		return NULL;
	}
	v->j_str = s;
	v->j_len = len;
	return v;
}

struct wjson *
wjson_string_len(const char *s, size_t len)
{
	char	*p;

	if (!wjson_utf8_valid(s, len) || (p = mem_dup(s, len)) == NULL)
		return NULL;
	return wjson_string_take(p, len);
}

struct wjson *
wjson_string(const char *s)
{
	if (s == NULL)
		return NULL;
	return wjson_string_len(s, strlen(s));
}

struct wjson *
wjson_array(void)
{
	return node_new(WJSON_ARRAY);
}

struct wjson *
wjson_object(void)
{
	return node_new(WJSON_OBJECT);
}

int
wjson_append(struct wjson *arr, struct wjson *v)
{
	if (arr == NULL || arr->j_type != WJSON_ARRAY || v == NULL ||
	    v->j_key != NULL) {
		wjson_free(v);
		if (arr != NULL)
			arr->j_bad = 1;
		return -1;
	}
	if (v->j_bad)
		arr->j_bad = 1;
	link_child(arr, v);
	return arr->j_bad ? -1 : 0;
}

int
wjson_set(struct wjson *obj, const char *key, struct wjson *v)
{
	struct wjson	*c, *prev = NULL;
	size_t		 keylen;

	if (obj == NULL || obj->j_type != WJSON_OBJECT || v == NULL ||
	    key == NULL || !wjson_utf8_valid(key, strlen(key)))
		goto fail;
	keylen = strlen(key);
	free(v->j_key);
	if ((v->j_key = mem_dup(key, keylen)) == NULL)
		goto fail;
	v->j_keylen = keylen;
	if (v->j_bad)
		obj->j_bad = 1;
	for (c = obj->j_head; c != NULL; prev = c, c = c->j_next) {
		if (!same_key(c, v))
			continue;
		v->j_next = c->j_next;
		if (prev == NULL)
			obj->j_head = v;
		else
			prev->j_next = v;
		if (obj->j_tail == c)
			obj->j_tail = v;
		c->j_next = NULL;
		wjson_free(c);
		return obj->j_bad ? -1 : 0;
	}
	link_child(obj, v);
	return obj->j_bad ? -1 : 0;
fail:
	wjson_free(v);
	if (obj != NULL)
		obj->j_bad = 1;
	return -1;
}

static struct wjson *
member(const struct wjson *obj, const char *key, struct wjson **prevp)
{
	struct wjson	*c, *prev = NULL;
	size_t		 keylen;

	if (obj == NULL || obj->j_type != WJSON_OBJECT || key == NULL)
		return NULL;
	keylen = strlen(key);
	for (c = obj->j_head; c != NULL; prev = c, c = c->j_next) {
		if (c->j_keylen == keylen &&
		    memcmp(c->j_key, key, keylen) == 0) {
			if (prevp != NULL)
				*prevp = prev;
			return c;
		}
	}
	return NULL;
}

struct wjson *
wjson_get(const struct wjson *obj, const char *key)
{
	return member(obj, key, NULL);
}

/* Unlink a member and hand it over, so that big strings move, not copy. */
struct wjson *
wjson_detach(struct wjson *obj, const char *key)
{
	struct wjson	*c, *prev = NULL;

	if ((c = member(obj, key, &prev)) == NULL)
		return NULL;
	if (prev == NULL)
		obj->j_head = c->j_next;
	else
		prev->j_next = c->j_next;
	if (obj->j_tail == c)
		obj->j_tail = prev;
	obj->j_count--;
	c->j_next = NULL;
	free(c->j_key);
	c->j_key = NULL;
	c->j_keylen = 0;
	return c;
}

const char *
wjson_get_str(const struct wjson *obj, const char *key, size_t *lenp)
{
	const struct wjson	*v;

	if ((v = wjson_get(obj, key)) == NULL || v->j_type != WJSON_STRING)
		return NULL;
	if (lenp != NULL)
		*lenp = v->j_len;
	return v->j_str;
}

int
wjson_is(const struct wjson *v, enum wjson_type type)
{
	return v != NULL && v->j_type == type;
}

/* An integer without fraction or exponent that fits a long long. */
int
wjson_int_value(const struct wjson *v, long long *out)
{
	unsigned long long	 n = 0, lim;
	size_t			 i = 0;
	int			 neg = 0;

	if (!wjson_is(v, WJSON_NUMBER) || v->j_len == 0)
		return -1;
	if (v->j_str[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i >= v->j_len)
		return -1;
	lim = neg ? (unsigned long long)LLONG_MAX + 1 : LLONG_MAX;
	for (; i < v->j_len; i++) {
		if (!is_digit((unsigned char)v->j_str[i]))
			return -1;
		if (n > (lim - (unsigned long long)(v->j_str[i] - '0')) / 10)
			return -1;
		n = n * 10 + (unsigned long long)(v->j_str[i] - '0');
	}
	if (neg)
		*out = n == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN :
		    -(long long)n;
	else
		*out = (long long)n;
	return 0;
}
