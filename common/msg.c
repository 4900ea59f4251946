/*
 * The message table and the typed accessors over a frame's JSON object
 * (DESIGN.md 3, STYLE.md 2-4).  Everything a peer sends is checked here
 * once: UTF-8, structure, type, roles, id, descriptors, data, and each field
 * by its getter; msg_end() refuses what nobody asked for.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "frame.h"
#include "log.h"
#include "bodies.h"
#include "msg.h"
#include "msgint.h"
#include "validate.h"

static const struct msg_def msg_defs[MSG__COUNT] = {
	[MSG_NONE] = { NULL, 0, 0, 0, 0, MSG_NONE },
#define MSG_DEF(e, w, s, r, n, d, rep)					\
	[MSG_##e] = { w, s, r, n, d, MSG_##rep },
	MSG_TABLE(MSG_DEF)
#undef MSG_DEF
};

/* The names proc_role_name() gives, kept here so the table needs no more
 * than the enum. */
static const char *const msg_roles[PROC__COUNT] = {
	[PROC_SUPERVISOR] = "supervisor",
	[PROC_FSGUARD] = "fsguard",
	[PROC_DOCKER] = "docker",
	[PROC_EGRESS] = "egress",
	[PROC_BROKER] = "broker",
	[PROC_RESEARCH] = "research",
};

struct msg_mem {
	struct msg_mem	*mm_next;
	max_align_t	 mm_data[];
};

const struct msg_def *
msg_def(enum msg_type t)
{
	if (t <= MSG_NONE || t >= MSG__COUNT)
		return NULL;
	return &msg_defs[t];
}

/* The types in the order of their names, for msg_type_from_name(). */
static uint8_t	msg_by_name[MSG__COUNT - 1];
static int	msg_by_name_ready;

static int
msg_by_name_cmp(const void *a, const void *b)
{
	return strcmp(msg_defs[*(const uint8_t *)a].md_name,
	    msg_defs[*(const uint8_t *)b].md_name);
}

/* Every frame names its type: a binary search, not a pass over the table. */
enum msg_type
msg_type_from_name(const char *name)
{
	size_t	 lo = 0, hi = MSG__COUNT - 1, mid;
	int	 t, c;

	if (name == NULL || name[0] == '\0')
		return MSG_NONE;
	if (!msg_by_name_ready) {
		for (t = MSG_NONE + 1; t < MSG__COUNT; t++)
			msg_by_name[t - 1] = (uint8_t)t;
		qsort(msg_by_name, MSG__COUNT - 1, sizeof(msg_by_name[0]),
		    msg_by_name_cmp);
		msg_by_name_ready = 1;
	}
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		t = msg_by_name[mid];
		if ((c = strcmp(name, msg_defs[t].md_name)) == 0)
			return t;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return MSG_NONE;
}

/* NULL for a value that names no message. */
const char *
msg_type_name(enum msg_type t)
{
	const struct msg_def	*md;

	return (md = msg_def(t)) == NULL ? NULL : md->md_name;
}

/* A type is a reply when some row names it as its reply; "error" answers
 * any request.  The rows' replies, as one mask. */
#define MSG_REPLY_BIT(rep, word)					\
	((unsigned)(rep) / 64 == (word) ? UINT64_C(1) << ((rep) & 63) : 0)
#define MSG_REPLY_LO(e, w, s, r, n, d, rep)	| MSG_REPLY_BIT(MSG_##rep, 0)
#define MSG_REPLY_HI(e, w, s, r, n, d, rep)	| MSG_REPLY_BIT(MSG_##rep, 1)
static const uint64_t	msg_replies[2] = {
	(0 MSG_TABLE(MSG_REPLY_LO)) & ~MSG_REPLY_BIT(MSG_NONE, 0),
	0 MSG_TABLE(MSG_REPLY_HI)
};
#undef MSG_REPLY_LO
#undef MSG_REPLY_HI
#undef MSG_REPLY_BIT
_Static_assert(MSG__COUNT <= 128, "msg_replies holds a bit per type");

int
msg_is_reply(enum msg_type t)
{
	if (t == MSG_ERROR)
		return 1;
	return t > MSG_NONE && t < MSG__COUNT &&
	    (msg_replies[t / 64] >> (t % 64)) & 1;
}

int
msg_needs_id(enum msg_type t)
{
	return msg_defs[t].md_reply != MSG_NONE || msg_is_reply(t);
}

void
msg_close(int fd)
{
	if (fd != -1 && close(fd) == -1 && errno != EINTR)
		log_warn("%s: close", __func__);
}

static int __attribute__((format(printf, 2, 3)))
msg_fail(struct msg *m, const char *fmt, ...)
{
	va_list	 ap;

	if (!m->m_failed) {
		va_start(ap, fmt);
		vsnprintf(m->m_err, sizeof(m->m_err), fmt, ap);
		va_end(ap);
		m->m_failed = 1;
	}
	return -1;
}

/* Peer text fit for a log line: printable ASCII, shortened. */
static const char *
msg_quote(char *buf, size_t bufsz, const char *s)
{
	size_t	 i, n = 0;

	for (i = 0; s[i] != '\0' && n + 4 < bufsz; i++) {
		if (i == 32) {
			memcpy(buf + n, "...", 3);
			n += 3;
			break;
		}
		buf[n++] = s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' &&
		    s[i] != '\\' ? s[i] : '?';
	}
	buf[n] = '\0';
	return buf;
}

/*
 * Before cJSON sees the text: valid UTF-8, and no NUL, raw or escaped, that
 * would end a C string early.
 */
static int
msg_check_text(struct msg *m, const char *json, size_t len)
{
	size_t	 i, units;

	const char	*p;

	if (memchr(json, '\0', len) != NULL)
		return msg_fail(m, "message contains a NUL byte");
	if (utf8_utf16_len(json, len, &units) == -1)
		return msg_fail(m, "message is not valid UTF-8");
	i = 0;
	while (i < len && (p = memchr(json + i, '\\', len - i)) != NULL) {
		i = p - json;
		if (i + 5 < len && (json[i + 1] | 0x20) == 'u' &&
		    memcmp(json + i + 2, "0000", 4) == 0)
			return msg_fail(m, "message contains \\u0000");
		i += 2;	/* past the escaped character, maybe a backslash */
	}
	return 0;
}

static void *
msg_alloc(struct msg *m, size_t len)
{
	struct msg_mem	*mm;

	if ((mm = malloc(sizeof(*mm) + len)) == NULL)
		return NULL;
	mm->mm_next = m->m_mem;
	m->m_mem = mm;
	return mm->mm_data;
}

/*
 * Two readers fill the same table of fields.  msg_lex() reads the shape
 * every message has in practice, an object of at most MSG_FIELDS_INLINE
 * strings, numbers, literals and arrays of strings, in one pass over the
 * text and with one allocation; whatever it does not take, for any reason,
 * goes to msg_tree(): the strict lexer, cJSON and the checks of
 * body_parse(), which also word every refusal.  So msg_lex() only has to
 * accept exactly what msg_tree() would accept, and read it the same.
 */

static void	msg_free_mem(struct msg *);

/* Strings of an array msg_lex() reads; more go to msg_tree(). */
#define MSG_LEX_ITEMS	64
/* The longest number msg_lex() reads. */
#define MSG_LEX_NUM	64

static int
msg_lex_ws(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A number of JSON's grammar at s[*i], finite, as cJSON reads it. */
static int
msg_lex_number(const uint8_t *s, size_t len, size_t *i, double *v)
{
	char		 buf[MSG_LEX_NUM];
	size_t		 p = *i, n;
	int		 integer = 1;
	char		*end;

	if (p < len && s[p] == '-')
		p++;
	if (p < len && s[p] == '0')
		p++;
	else if (p < len && s[p] >= '1' && s[p] <= '9')
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	else
		return -1;
	if (p < len && s[p] == '.') {
		integer = 0;
		if (++p >= len || s[p] < '0' || s[p] > '9')
			return -1;
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	}
	if (p < len && (s[p] == 'e' || s[p] == 'E')) {
		integer = 0;
		if (++p < len && (s[p] == '+' || s[p] == '-'))
			p++;
		if (p >= len || s[p] < '0' || s[p] > '9')
			return -1;
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
	}
	n = p - *i;
	/* An integer of up to 15 digits, as every number a frame carries, is
	 * exact as a double: no strtod(). */
	if (integer && json_short_int(s + *i, n, v) == 0) {
		*i = p;
		return 0;
	}
	if (n >= sizeof(buf))
		return -1;
	memcpy(buf, s + *i, n);
	buf[n] = '\0';
	*v = strtod(buf, &end);
	if (end != buf + n || !isfinite(*v))
		return -1;
	*i = p;
	return 0;
}

static size_t
msg_lex_skip_ws(const uint8_t *s, size_t len, size_t p)
{
	while (p < len && msg_lex_ws(s[p]))
		p++;
	return p;
}

static int
msg_lex(struct msg *m, const char *json, size_t len)
{
	const uint8_t		*s = (const uint8_t *)json;
	const char		*items[MSG_LEX_ITEMS], **v;
	struct msg_field	*f;
	size_t			 p, n = 0, i, k;
	char			*arena, *d;

	if ((arena = msg_alloc(m, len + 1)) == NULL)
		return -1;
	d = arena;
	p = msg_lex_skip_ws(s, len, 0);
	if (p >= len || s[p] != '{')
		return -1;
	p = msg_lex_skip_ws(s, len, p + 1);
	if (p < len && s[p] == '}')
		p++;
	else for (;;) {
		if (n == MSG_FIELDS_INLINE || p >= len || s[p] != '"')
			return -1;
		f = &m->m_inline[n++];
		memset(f, 0, sizeof(*f));
		f->mf_key = d;
		if (json_string_decode(s, len, &p, &d) == -1)
			return -1;
		p = msg_lex_skip_ws(s, len, p);
		if (p >= len || s[p] != ':')
			return -1;
		p = msg_lex_skip_ws(s, len, p + 1);
		if (p >= len)
			return -1;
		switch (s[p]) {
		case '"':
			f->mf_kind = MSGK_STR;
			f->mf_str = d;
			if (json_string_decode(s, len, &p, &d) == -1)
				return -1;
			break;
		case 't':
			if (len - p < 4 || memcmp(s + p, "true", 4) != 0)
				return -1;
			f->mf_kind = MSGK_TRUE;
			p += 4;
			break;
		case 'f':
			if (len - p < 5 || memcmp(s + p, "false", 5) != 0)
				return -1;
			f->mf_kind = MSGK_FALSE;
			p += 5;
			break;
		case 'n':
			if (len - p < 4 || memcmp(s + p, "null", 4) != 0)
				return -1;
			f->mf_kind = MSGK_NULL;
			p += 4;
			break;
		case '[':
			f->mf_kind = MSGK_ARR;
			k = 0;
			p = msg_lex_skip_ws(s, len, p + 1);
			if (p < len && s[p] == ']')
				p++;
			else for (;;) {
				if (k == MSG_LEX_ITEMS || p >= len ||
				    s[p] != '"')
					return -1;
				items[k++] = d;
				if (json_string_decode(s, len, &p, &d) == -1)
					return -1;
				p = msg_lex_skip_ws(s, len, p);
				if (p < len && s[p] == ']') {
					p++;
					break;
				}
				if (p >= len || s[p] != ',')
					return -1;
				p = msg_lex_skip_ws(s, len, p + 1);
			}
			if ((v = msg_alloc(m, (k + 1) * sizeof(*v))) == NULL)
				return -1;
			memcpy(v, items, k * sizeof(*v));
			v[k] = NULL;
			f->mf_items = v;
			f->mf_n = k;
			break;
		default:
			/* Objects and other values in arrays: msg_tree(). */
			if (s[p] != '-' && (s[p] < '0' || s[p] > '9'))
				return -1;
			f->mf_kind = MSGK_NUM;
			if (msg_lex_number(s, len, &p, &f->mf_num) == -1)
				return -1;
			break;
		}
		p = msg_lex_skip_ws(s, len, p);
		if (p < len && s[p] == '}') {
			p++;
			break;
		}
		if (p >= len || s[p] != ',')
			return -1;
		p = msg_lex_skip_ws(s, len, p + 1);
	}
	if (msg_lex_skip_ws(s, len, p) != len)
		return -1;
	/* A key twice: msg_tree() says which. */
	for (i = 0; i < n; i++)
		for (k = i + 1; k < n; k++)
			if (strcmp(m->m_inline[i].mf_key,
			    m->m_inline[k].mf_key) == 0)
				return -1;
	m->m_fields = m->m_inline;
	m->m_nfields = n;
	return 0;
}

/* The general reader: the strict lexer, cJSON, every check, every word. */
static int
msg_tree(struct msg *m, const char *json, size_t len)
{
	struct msg_field	*f;
	const cJSON		*it, *e;
	const char		**v;
	size_t			 n = 0, k;
	char			 err[160];

	if (body_parse(json, len, &m->m_tree, err, sizeof(err)) != BODY_OK)
		return msg_fail(m, "message is not valid JSON: %s", err);
	if (!cJSON_IsObject(m->m_tree))
		return msg_fail(m, "message is not a JSON object");
	for (it = m->m_tree->child; it != NULL; it = it->next)
		n++;
	if (n <= MSG_FIELDS_INLINE)
		m->m_fields = m->m_inline;
	else if ((m->m_fields = msg_alloc(m, n * sizeof(*f))) == NULL)
		return msg_fail(m, "out of memory");
	memset(m->m_fields, 0, n * sizeof(*f));
	for (f = m->m_fields, it = m->m_tree->child; it != NULL;
	    it = it->next, f++) {
		f->mf_key = it->string;
		if (cJSON_IsString(it) && it->valuestring != NULL) {
			f->mf_kind = MSGK_STR;
			f->mf_str = it->valuestring;
		} else if (cJSON_IsNumber(it)) {
			f->mf_kind = MSGK_NUM;
			f->mf_num = it->valuedouble;
		} else if (cJSON_IsTrue(it))
			f->mf_kind = MSGK_TRUE;
		else if (cJSON_IsFalse(it))
			f->mf_kind = MSGK_FALSE;
		else if (cJSON_IsNull(it))
			f->mf_kind = MSGK_NULL;
		else if (cJSON_IsArray(it)) {
			f->mf_kind = MSGK_ARR;
			for (e = it->child; e != NULL; e = e->next)
				f->mf_n++;
			/* Items that are not strings stay NULL. */
			if ((v = msg_alloc(m, (f->mf_n + 1) * sizeof(*v))) ==
			    NULL)
				return msg_fail(m, "out of memory");
			for (k = 0, e = it->child; e != NULL; e = e->next)
				v[k++] = cJSON_IsString(e) ? e->valuestring :
				    NULL;
			v[k] = NULL;
			f->mf_items = v;
		} else
			f->mf_kind = MSGK_OTHER;
	}
	m->m_nfields = n;
	return 0;
}

#ifdef RTSANDBOX_FUZZING
/* The fuzzers hold msg_lex() to what msg_tree() reads of the same text. */
static void
msg_lex_agrees(const struct msg *m, const char *json, size_t len)
{
	const struct msg_field	*a, *b;
	struct msg		 t;
	size_t			 i, k;

	memset(&t, 0, sizeof(t));
	if (msg_tree(&t, json, len) == -1 || t.m_nfields != m->m_nfields)
		abort();
	for (i = 0; i < m->m_nfields; i++) {
		a = &m->m_fields[i];
		b = &t.m_fields[i];
		if (strcmp(a->mf_key, b->mf_key) != 0 ||
		    a->mf_kind != b->mf_kind || a->mf_n != b->mf_n ||
		    (a->mf_kind == MSGK_STR && strcmp(a->mf_str,
		    b->mf_str) != 0) || (a->mf_kind == MSGK_NUM &&
		    memcmp(&a->mf_num, &b->mf_num, sizeof(double)) != 0))
			abort();
		for (k = 0; a->mf_kind == MSGK_ARR && k <= a->mf_n; k++)
			if ((a->mf_items[k] == NULL) !=
			    (b->mf_items[k] == NULL) || (a->mf_items[k] !=
			    NULL && strcmp(a->mf_items[k], b->mf_items[k]) != 0))
				abort();
	}
	cJSON_Delete(t.m_tree);
	msg_free_mem(&t);
}
#endif

/* The field not consumed yet with this key, or NULL. */
static struct msg_field *
msg_find(struct msg *m, const char *key)
{
	size_t	 i;

	for (i = 0; i < m->m_nfields; i++)
		if (!m->m_fields[i].mf_used &&
		    strcmp(m->m_fields[i].mf_key, key) == 0)
			return &m->m_fields[i];
	return NULL;
}

/* Consume a field; its strings live until msg_free(). */
static struct msg_field *
msg_take(struct msg *m, const char *key)
{
	struct msg_field	*f;

	if ((f = msg_find(m, key)) != NULL)
		f->mf_used = 1;
	return f;
}

/* An integral number within +-(2^53 - 1). */
static int
msg_num(const struct msg_field *f, int64_t *v)
{
	double	 d;

	if (f->mf_kind != MSGK_NUM)
		return -1;
	d = f->mf_num;
	/* Written so that NaN fails too. */
	if (!(d >= -MSG_INT_MAX && d <= MSG_INT_MAX))
		return -1;
	if (d != (double)(int64_t)d)
		return -1;
	*v = (int64_t)d;
	return 0;
}

int
msg_parse(struct msg *m, enum proc_role from, enum proc_role to,
    struct frame *f)
{
	const struct msg_def	*md;
	const char		*json = (const char *)f->f_json;
	struct msg_field	*t, *id;
	int64_t			 v;
	char			 q[48];
	int			 i;

	memset(m, 0, offsetof(struct msg, m_inline));
	for (i = 0; i < FRAME_MAXFDS; i++)
		m->m_fds[i] = -1;
	/* Take the descriptors first: msg_free() closes them in any case. */
	for (i = 0; i < f->f_nfds && i < FRAME_MAXFDS; i++) {
		m->m_fds[i] = f->f_fds[i];
		f->f_fds[i] = -1;
	}
	m->m_nfds = i;
	m->m_data = f->f_data;
	m->m_data_len = f->f_data_len;

	if ((unsigned)from >= PROC__COUNT || (unsigned)to >= PROC__COUNT)
		return msg_fail(m, "unknown role");
	if (json == NULL || f->f_json_len < 2)
		return msg_fail(m, "message is not a JSON object");
	if (msg_check_text(m, json, f->f_json_len) == -1)
		return -1;
	if (msg_lex(m, json, f->f_json_len) == -1) {
		/* Nothing of the first reading is kept. */
		msg_free_mem(m);
		if (msg_tree(m, json, f->f_json_len) == -1)
			return -1;
	}
#ifdef RTSANDBOX_FUZZING
	else
		msg_lex_agrees(m, json, f->f_json_len);
#endif

	if ((t = msg_take(m, "t")) == NULL)
		return msg_fail(m, "field \"t\" missing");
	if (t->mf_kind != MSGK_STR)
		return msg_fail(m, "field \"t\" is not a string");
	if ((m->m_type = msg_type_from_name(t->mf_str)) == MSG_NONE)
		return msg_fail(m, "unknown message type \"%s\"",
		    msg_quote(q, sizeof(q), t->mf_str));
	md = msg_def(m->m_type);
	if ((md->md_from & (1u << from)) == 0)
		return msg_fail(m, "message \"%s\" may not be sent by %s",
		    md->md_name, msg_roles[from]);
	if ((md->md_to & (1u << to)) == 0)
		return msg_fail(m, "message \"%s\" may not be received by %s",
		    md->md_name, msg_roles[to]);

	if ((id = msg_take(m, "id")) != NULL) {
		if (msg_num(id, &v) == -1 || v < 1)
			return msg_fail(m, "field \"id\" is not an integer "
			    "in [1, 2^53 - 1]");
		m->m_id = v;
		m->m_has_id = 1;
	} else if (msg_needs_id(m->m_type))
		return msg_fail(m, "message \"%s\" needs an id", md->md_name);

	if (m->m_nfds != md->md_nfds)
		return msg_fail(m, "message \"%s\" needs %d descriptor%s, "
		    "got %d", md->md_name, md->md_nfds,
		    md->md_nfds == 1 ? "" : "s", m->m_nfds);
	if (m->m_data_len > 0 && !md->md_data)
		return msg_fail(m, "message \"%s\" may not carry data",
		    md->md_name);
	return 0;
}

static void
msg_free_mem(struct msg *m)
{
	struct msg_mem	*mm;

	while ((mm = m->m_mem) != NULL) {
		m->m_mem = mm->mm_next;
		free(mm);
	}
	m->m_fields = NULL;
	m->m_nfields = 0;
}

void
msg_free(struct msg *m)
{
	int	 i;

	cJSON_Delete(m->m_tree);
	m->m_tree = NULL;
	for (i = 0; i < FRAME_MAXFDS; i++) {
		msg_close(m->m_fds[i]);
		m->m_fds[i] = -1;
	}
	m->m_nfds = m->m_fdpos = 0;
	msg_free_mem(m);
}

int
msg_has(struct msg *m, const char *key)
{
	return !m->m_failed && msg_find(m, key) != NULL;
}

/* The field, taken, or NULL after a failure. */
static struct msg_field *
msg_field(struct msg *m, const char *key)
{
	struct msg_field	*f;

	if (m->m_failed)
		return NULL;
	if ((f = msg_take(m, key)) == NULL)
		msg_fail(m, "field \"%s\" missing", key);
	return f;
}

/* For _opt getters: 1 when the field is absent or null (then taken). */
static int
msg_absent(struct msg *m, const char *key)
{
	struct msg_field	*f;

	if ((f = msg_find(m, key)) == NULL)
		return 1;
	if (f->mf_kind == MSGK_NULL) {
		f->mf_used = 1;
		return 1;
	}
	return 0;
}

/* s, of the field or item named by key (and index i when i >= 0). */
static int
msg_str_check(struct msg *m, const char *key, long i, const char *s,
    size_t max_bytes, const char **out)
{
	char	 what[96];
	size_t	 len;

	if (i >= 0)
		snprintf(what, sizeof(what), "%s[%ld]", key, i);
	else
		snprintf(what, sizeof(what), "%s", key);
	if (s == NULL)
		return msg_fail(m, "field \"%s\" is not a string", what);
	len = strlen(s);
	if (len > max_bytes)
		return msg_fail(m, "field \"%s\" longer than %zu bytes", what,
		    max_bytes);
	if (utf8_text_check(s, len, len) == -1)
		return msg_fail(m, "field \"%s\" is not valid UTF-8 text",
		    what);
	*out = s;
	return 0;
}

/* A string of at most max_bytes, valid UTF-8 text; the name of the field
 * is formatted only for a refusal. */
static int
msg_str_ok(const char *s, size_t max_bytes)
{
	size_t	 len;

	return s != NULL && (len = strnlen(s, max_bytes + 1)) <= max_bytes &&
	    utf8_text_check(s, len, len) == 0;
}

int
msg_get_str(struct msg *m, const char *key, size_t max_bytes,
    const char **out)
{
	struct msg_field	*f;
	const char		*s;

	if ((f = msg_field(m, key)) == NULL)
		return -1;
	s = f->mf_kind == MSGK_STR ? f->mf_str : NULL;
	if (msg_str_ok(s, max_bytes)) {
		*out = s;
		return 0;
	}
	return msg_str_check(m, key, -1, s, max_bytes, out);
}

int
msg_get_str_opt(struct msg *m, const char *key, size_t max_bytes,
    const char **out)
{
	if (m->m_failed)
		return -1;
	if (msg_absent(m, key)) {
		*out = NULL;
		return 0;
	}
	return msg_get_str(m, key, max_bytes, out);
}

static int
msg_get_num(struct msg *m, const char *key, int64_t *v)
{
	struct msg_field	*f;

	if ((f = msg_field(m, key)) == NULL)
		return -1;
	if (f->mf_kind != MSGK_NUM)
		return msg_fail(m, "field \"%s\" is not a number", key);
	if (msg_num(f, v) == -1)
		return msg_fail(m, "field \"%s\" is not an integer within "
		    "2^53 - 1", key);
	return 0;
}

int
msg_get_uint(struct msg *m, const char *key, uint64_t min, uint64_t max,
    uint64_t *out)
{
	int64_t	 v = 0;

	if (msg_get_num(m, key, &v) == -1)
		return -1;
	if (v < 0 || (uint64_t)v < min || (uint64_t)v > max)
		return msg_fail(m, "field \"%s\" out of range [%llu, %llu]",
		    key, (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

int
msg_get_uint_opt(struct msg *m, const char *key, uint64_t min, uint64_t max,
    uint64_t *out, int *present)
{
	if (present != NULL)
		*present = 0;
	if (m->m_failed)
		return -1;
	if (msg_absent(m, key))
		return 0;
	if (msg_get_uint(m, key, min, max, out) == -1)
		return -1;
	if (present != NULL)
		*present = 1;
	return 0;
}

int
msg_get_int(struct msg *m, const char *key, int64_t min, int64_t max,
    int64_t *out)
{
	int64_t	 v = 0;

	if (msg_get_num(m, key, &v) == -1)
		return -1;
	if (v < min || v > max)
		return msg_fail(m, "field \"%s\" out of range [%lld, %lld]",
		    key, (long long)min, (long long)max);
	*out = v;
	return 0;
}

int
msg_get_bool(struct msg *m, const char *key, int *out)
{
	struct msg_field	*f;

	if ((f = msg_field(m, key)) == NULL)
		return -1;
	if (f->mf_kind != MSGK_TRUE && f->mf_kind != MSGK_FALSE)
		return msg_fail(m, "field \"%s\" is not a boolean", key);
	*out = f->mf_kind == MSGK_TRUE;
	return 0;
}

int
msg_get_strv(struct msg *m, const char *key, size_t max_n, size_t max_bytes,
    const char ***out, size_t *n)
{
	struct msg_field	*f;
	const char		*s;
	size_t			 i;

	if ((f = msg_field(m, key)) == NULL)
		return -1;
	if (f->mf_kind != MSGK_ARR)
		return msg_fail(m, "field \"%s\" is not an array", key);
	if (f->mf_n > max_n)
		return msg_fail(m, "field \"%s\" has more than %zu "
		    "items", key, max_n);
	for (i = 0; i < f->mf_n; i++)
		if (!msg_str_ok(s = f->mf_items[i], max_bytes))
			return msg_str_check(m, key, (long)i, s, max_bytes,
			    &s);
	/* NULL-terminated, and the message's to free. */
	*out = f->mf_items;
	*n = f->mf_n;
	return 0;
}

int
msg_get_fd(struct msg *m, int *fd)
{
	if (m->m_failed)
		return -1;
	if (m->m_fdpos >= m->m_nfds)
		return msg_fail(m, "descriptor %d missing", m->m_fdpos + 1);
	*fd = m->m_fds[m->m_fdpos];
	m->m_fds[m->m_fdpos++] = -1;
	return 0;
}

int
msg_get_data(struct msg *m, const uint8_t **data, size_t *len)
{
	if (m->m_failed)
		return -1;
	*data = m->m_data;
	*len = m->m_data_len;
	return 0;
}

int
msg_end(struct msg *m)
{
	char	 q[48];
	size_t	 i;

	if (m->m_failed)
		return -1;
	for (i = 0; i < m->m_nfields; i++)
		if (!m->m_fields[i].mf_used)
			return msg_fail(m, "field \"%s\" not consumed",
			    msg_quote(q, sizeof(q), m->m_fields[i].mf_key));
	if (m->m_fdpos < m->m_nfds)
		return msg_fail(m, "%d descriptor%s not taken",
		    m->m_nfds - m->m_fdpos,
		    m->m_nfds - m->m_fdpos == 1 ? "" : "s");
	return 0;
}
