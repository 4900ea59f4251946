/*
 * cJSON trees from JSON text (jtree.h).
 *
 * cJSON's parser walks a string twice byte by byte, to find its end and to
 * copy it, and was most of what the broker spent reading a model call's
 * body.  This one builds the same tree: a node per value allocated as
 * cJSON allocates it (so that cJSON_Delete() and every cJSON function take
 * it), strings decoded as cJSON decodes them, numbers read by strtod(3)
 * from all their bytes as Debian's cJSON reads them (upstream's 1.7.15
 * read 63 at most), the first child's prev pointing
 * at the last.  Plain bytes of a string are found and copied a run at a
 * time (json_string_run()).  fuzz_jtree compares the two on every text the
 * callers let through.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jtree.h"
#include "validate.h"

struct jt {
	const uint8_t	*s;
	size_t		 len;
	size_t		 i;
	size_t		 depth;
	int		 nomem;
};

static cJSON	*jt_value(struct jt *);

static void
jt_ws(struct jt *t)
{
	while (t->i < t->len && (t->s[t->i] == ' ' || t->s[t->i] == '\t' ||
	    t->s[t->i] == '\n' || t->s[t->i] == '\r'))
		t->i++;
}

static cJSON *
jt_node(struct jt *t, int type)
{
	cJSON	*n;

	if ((n = calloc(1, sizeof(*n))) == NULL) {
		t->nomem = 1;
		return NULL;
	}
	n->type = type;
	return n;
}

/*
 * The string at t->i (its opening quote), decoded into a new allocation
 * no longer than the text; t->i past its closing quote.  NULL when it is
 * not a string cJSON would read or out of memory (t->nomem).
 */
static char *
jt_string(struct jt *t)
{
	const uint8_t	*s = t->s;
	size_t		 end = t->i + 1;
	char		*out, *d;

	if (t->i >= t->len || s[t->i] != '"')
		return NULL;
	/* Its end, for its size: a backslash hides the byte after it, as
	 * for cJSON. */
	for (;;) {
		end += json_string_run(s + end, t->len - end);
		if (end >= t->len || s[end] < 0x20)
			return NULL;
		if (s[end] == '"')
			break;
		if (t->len - end < 2)
			return NULL;
		end += 2;
	}
	if ((out = malloc(end - t->i)) == NULL) {
		t->nomem = 1;
		return NULL;
	}
	d = out;
	if (json_string_decode(s, end + 1, &t->i, &d) == -1) {
		free(out);
		return NULL;
	}
	return out;
}

static int
jt_number_byte(uint8_t c)
{
	return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == 'e' ||
	    c == 'E' || c == '.';
}

/*
 * A number as cJSON reads one: strtod(3) of its bytes, however many.  An
 * integer of at most 15 digits, as nearly every number of a body is, is
 * exact as a double: read without strtod(3), to the same value.
 */
static cJSON *
jt_number(struct jt *t)
{
	char		 small[64], *buf = small, *after;
	const uint8_t	*s = t->s + t->i;
	size_t		 k = 0, used = 0;
	double		 d = 0;
	cJSON		*n = NULL;

	while (t->i + k < t->len && jt_number_byte(s[k]))
		k++;
	if (json_short_int(s, k, &d) == 0)
		used = k;
	else {
		if (k >= sizeof(small) && (buf = malloc(k + 1)) == NULL) {
			t->nomem = 1;
			return NULL;
		}
		memcpy(buf, s, k);
		buf[k] = '\0';
		d = strtod(buf, &after);
		used = (size_t)(after - buf);
		if (buf != small)
			free(buf);
	}
	if (used > 0 && (n = jt_node(t, cJSON_Number)) != NULL) {
		n->valuedouble = d;
		if (d >= INT_MAX)
			n->valueint = INT_MAX;
		else if (d <= (double)INT_MIN)
			n->valueint = INT_MIN;
		else
			n->valueint = (int)d;
		t->i += used;
	}
	return n;
}

/* An array or an object at t->i, its members read in turn. */
static cJSON *
jt_container(struct jt *t, int object)
{
	cJSON	*c, *last = NULL, *m;
	char	*key = NULL;
	uint8_t	 close = object ? '}' : ']';

	if (t->depth >= JTREE_DEPTH_MAX ||
	    (c = jt_node(t, object ? cJSON_Object : cJSON_Array)) == NULL)
		return NULL;
	t->depth++;
	t->i++;
	jt_ws(t);
	if (t->i < t->len && t->s[t->i] == close)
		goto done;
	for (;;) {
		jt_ws(t);
		if (object) {
			if ((key = jt_string(t)) == NULL)
				goto bad;
			jt_ws(t);
			if (t->i >= t->len || t->s[t->i] != ':')
				goto bad;
			t->i++;
			jt_ws(t);
		}
		if ((m = jt_value(t)) == NULL)
			goto bad;
		m->string = key;
		key = NULL;
		if (last == NULL)
			c->child = m;
		else {
			last->next = m;
			m->prev = last;
		}
		last = m;
		jt_ws(t);
		if (t->i < t->len && t->s[t->i] == ',') {
			t->i++;
			continue;
		}
		if (t->i < t->len && t->s[t->i] == close)
			break;
		goto bad;
	}
 done:
	if (c->child != NULL)
		c->child->prev = last;
	t->depth--;
	t->i++;
	return c;
 bad:
	free(key);
	cJSON_Delete(c);
	return NULL;
}

static int
jt_literal(struct jt *t, const char *word)
{
	size_t	 n = strlen(word);

	if (t->len - t->i < n || memcmp(t->s + t->i, word, n) != 0)
		return 0;
	t->i += n;
	return 1;
}

static cJSON *
jt_value(struct jt *t)
{
	cJSON	*n;
	char	*s;

	if (t->i >= t->len)
		return NULL;
	switch (t->s[t->i]) {
	case '"':
		if ((s = jt_string(t)) == NULL)
			return NULL;
		if ((n = jt_node(t, cJSON_String)) == NULL) {
			free(s);
			return NULL;
		}
		n->valuestring = s;
		return n;
	case '{':
		return jt_container(t, 1);
	case '[':
		return jt_container(t, 0);
	case 'n':
		return jt_literal(t, "null") ? jt_node(t, cJSON_NULL) : NULL;
	case 'f':
		return jt_literal(t, "false") ? jt_node(t, cJSON_False) : NULL;
	case 't':
		if (!jt_literal(t, "true") || (n = jt_node(t, cJSON_True)) ==
		    NULL)
			return NULL;
		n->valueint = 1;
		return n;
	case '-':
	case '0':
	case '1':
	case '2':
	case '3':
	case '4':
	case '5':
	case '6':
	case '7':
	case '8':
	case '9':
		return jt_number(t);
	}
	return NULL;
}

cJSON *
jtree_parse(const char *text, size_t len, const char **end, int *nomem)
{
	struct jt	 t;
	cJSON		*root;

	memset(&t, 0, sizeof(t));
	t.s = (const uint8_t *)text;
	t.len = len;
	jt_ws(&t);
	root = jt_value(&t);
	*nomem = t.nomem;
	if (root != NULL && end != NULL)
		*end = text + t.i;
	return root;
}
