#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bodies.h"
#include "jtree.h"
#include "limits.h"
#include "validate.h"

/* 3.1 counts the files with the 4.2 bound that body_files() applies. */
_Static_assert(RESULT_FILES_MAX == REPLY_FILES_MAX, "files bound of 3.1");

/* Objects with more keys than this are sorted to find duplicates. */
#define BODY_DUPS_PAIRWISE	16u

static const char *const	body_mime_types[] = {
	"image/png", "image/jpeg", "image/webp", "image/gif"
};



const char *
body_err_to_string(enum body_err e)
{
	switch (e) {
	case BODY_OK:
		return "ok";
	case BODY_INVALID_JSON:
		return "invalid JSON";
	case BODY_MISMATCH:
		return "not the pending turn";
	case BODY_BAD:
		return "invalid field";
	case BODY_NOMEM:
		return "out of memory";
	}
	return "unknown error";
}

enum body_err
body_fail(char *err, size_t errlen, enum body_err code, const char *fmt, ...)
{
	va_list	 ap;

	if (err != NULL && errlen > 0) {
		va_start(ap, fmt);
		(void)vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

static void
body_ok(char *err, size_t errlen)
{
	if (err != NULL && errlen > 0)
		err[0] = '\0';
}

/*
 * The strict lexer run before cJSON.  cJSON 1.7.15 reads a \u escape with a
 * non-hex digit as U+0000 and so cuts the string short, keeps raw control
 * characters in strings, takes any byte up to 0x20 as white space, skips a
 * byte-order mark and reads "01" or "1." as numbers.
 */
static int
json_is_hex(uint8_t c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' &&
	    (c | 0x20) <= 'f');
}

static int
json_is_digit(uint8_t c)
{
	return c >= '0' && c <= '9';
}

/* The bytes cJSON takes as part of a number. */
static int
json_is_number_byte(uint8_t c)
{
	return json_is_digit(c) || c == '+' || c == '-' || c == '.' ||
	    c == 'e' || c == 'E';
}

static const char *
json_scan_string(const uint8_t *s, size_t len, size_t *i)
{
	size_t	 p = *i + 1, k;

	while (p < len) {
		p += json_string_run(s + p, len - p);
		if (p >= len)
			break;
		if (s[p] == '"') {
			*i = p + 1;
			return NULL;
		}
		if (s[p] < 0x20)
			return "a raw control character in a string";
		if (s[p] != '\\') {
			p++;
			continue;
		}
		if (p + 1 >= len)
			break;
		switch (s[p + 1]) {
		case '"':
		case '\\':
		case '/':
		case 'b':
		case 'f':
		case 'n':
		case 'r':
		case 't':
			p += 2;
			continue;
		case 'u':
			break;
		default:
			return "an invalid escape";
		}
		if (len - p < 6)
			break;
		for (k = 2; k < 6; k++)
			if (!json_is_hex(s[p + k]))
				return "a \\u escape without four hex digits";
		if (memcmp(s + p + 2, "0000", 4) == 0)
			return "\\u0000";
		p += 6;
	}
	return "an unterminated string";
}

static const char *
json_scan_number(const uint8_t *s, size_t len, size_t *i)
{
	size_t	 p = *i;

	if (s[p] == '-')
		p++;
	if (p < len && s[p] == '0')
		p++;
	else if (p < len && s[p] >= '1' && s[p] <= '9') {
		while (p < len && json_is_digit(s[p]))
			p++;
	} else
		return "a malformed number";
	if (p < len && s[p] == '.') {
		if (++p >= len || !json_is_digit(s[p]))
			return "a malformed number";
		while (p < len && json_is_digit(s[p]))
			p++;
	}
	if (p < len && (s[p] == 'e' || s[p] == 'E')) {
		if (++p < len && (s[p] == '+' || s[p] == '-'))
			p++;
		if (p >= len || !json_is_digit(s[p]))
			return "a malformed number";
		while (p < len && json_is_digit(s[p]))
			p++;
	}
	/* cJSON would read on: "01", "1.2.3". */
	if (p < len && json_is_number_byte(s[p]))
		return "a malformed number";
	*i = p;
	return NULL;
}

/* Also counts the values and keys, for each of which cJSON makes a node. */
static const char *
json_scan(const char *body, size_t len, size_t *at, size_t *nodes)
{
	static const char *const	 literals[] = {
		"true", "false", "null"
	};
	const uint8_t			*s = (const uint8_t *)body;
	const char			*why;
	size_t				 i = 0, k, n;

	while (i < len) {
		*at = i;
		switch (s[i]) {
		case ' ':
		case '\t':
		case '\n':
		case '\r':
		case '}':
		case ']':
		case ':':
		case ',':
			i++;
			continue;
		case '{':
		case '[':
			i++;
			break;
		case '"':
			if ((why = json_scan_string(s, len, &i)) != NULL)
				return why;
			break;
		case 't':
		case 'f':
		case 'n':
			for (k = 0; k < sizeof(literals) / sizeof(literals[0]);
			    k++) {
				n = strlen(literals[k]);
				if (len - i >= n && memcmp(s + i, literals[k],
				    n) == 0)
					break;
			}
			if (k == sizeof(literals) / sizeof(literals[0]))
				return "an unknown literal";
			i += n;
			break;
		default:
			if (s[i] != '-' && !json_is_digit(s[i]))
				return "an unexpected byte";
			if ((why = json_scan_number(s, len, &i)) != NULL)
				return why;
			break;
		}
		(*nodes)++;
	}
	return NULL;
}

const char *
body_json_scan(const char *body, size_t len, size_t *at, size_t *nodes)
{
	*at = 0;
	*nodes = 0;
	return json_scan(body, len, at, nodes);
}

static int
body_key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * 1 when two members of obj share a key, 0 when none do, -1 on ENOMEM.  A
 * member without a key (cJSON_AddItemToArray() on an object) is as
 * ambiguous as a duplicate.  Small objects, every one a model call's body
 * holds in practice, are compared pair by pair; larger ones sorted, so that
 * no object costs n^2.
 */
int
body_dup_keys(const cJSON *obj)
{
	const cJSON	 *it, *jt;
	const char	**keys;
	size_t		  n = 0, i;
	int		  dup = 0;

	for (it = obj->child; it != NULL; it = it->next) {
		if (it->string == NULL)
			return 1;
		n++;
	}
	if (n < 2)
		return 0;
	if (n <= BODY_DUPS_PAIRWISE) {
		for (it = obj->child; it != NULL; it = it->next)
			for (jt = it->next; jt != NULL; jt = jt->next)
				if (strcmp(it->string, jt->string) == 0)
					return 1;
		return 0;
	}
	if ((keys = calloc(n, sizeof(*keys))) == NULL)
		return -1;
	for (i = 0, it = obj->child; it != NULL; it = it->next)
		keys[i++] = it->string;
	qsort(keys, n, sizeof(*keys), body_key_cmp);
	for (i = 1; i < n && !dup; i++)
		dup = strcmp(keys[i - 1], keys[i]) == 0;
	free(keys);
	return dup;
}

/*
 * No object repeats a key, and every number is finite: a number past a
 * double's range would reach the other side as null, which cJSON prints
 * for it.  Depth is bounded by cJSON's nesting limit of the parse.
 */
static enum body_err
body_tree_check(const cJSON *it, char *err, size_t errlen)
{
	const cJSON	*c;
	enum body_err	 e;

	if (cJSON_IsNumber(it) && !isfinite(it->valuedouble))
		return body_fail(err, errlen, BODY_INVALID_JSON,
		    "a number is out of range");
	if (cJSON_IsObject(it)) {
		switch (body_dup_keys(it)) {
		case 1:
			return body_fail(err, errlen, BODY_INVALID_JSON,
			    "an object has a duplicate key");
		case -1:
			return body_fail(err, errlen, BODY_NOMEM,
			    "out of memory");
		}
	} else if (!cJSON_IsArray(it))
		return BODY_OK;
	for (c = it->child; c != NULL; c = c->next)
		if ((e = body_tree_check(c, err, errlen)) != BODY_OK)
			return e;
	return BODY_OK;
}

enum body_err
body_parse(const char *body, size_t len, cJSON **out, char *err,
    size_t errlen)
{
	const char	*why, *end = NULL;
	cJSON		*root;
	size_t		 units, at = 0, nodes = 0;
	enum body_err	 e;
	int		 nomem;

	*out = NULL;
	if (body == NULL || len == 0)
		return body_fail(err, errlen, BODY_INVALID_JSON, "empty body");
	if (memchr(body, '\0', len) != NULL)
		return body_fail(err, errlen, BODY_INVALID_JSON,
		    "body contains a NUL byte");
	if (utf8_utf16_len(body, len, &units) == -1)
		return body_fail(err, errlen, BODY_INVALID_JSON,
		    "body is not valid UTF-8");
	if ((why = json_scan(body, len, &at, &nodes)) != NULL)
		return body_fail(err, errlen, BODY_INVALID_JSON,
		    "body is not JSON: %s at byte %zu", why, at);
	if (nodes > BODY_NODES_MAX)
		return body_fail(err, errlen, BODY_INVALID_JSON,
		    "body has over %u values and keys (%zu)", BODY_NODES_MAX,
		    nodes);
	if ((root = jtree_parse(body, len, &end, &nomem)) == NULL)
		return nomem ? body_fail(err, errlen, BODY_NOMEM,
		    "out of memory") : body_fail(err, errlen, BODY_INVALID_JSON,
		    "body is not JSON (or nests too deep)");
	for (; end < body + len; end++) {
		if (*end != ' ' && *end != '\t' && *end != '\n' &&
		    *end != '\r') {
			cJSON_Delete(root);
			return body_fail(err, errlen, BODY_INVALID_JSON,
			    "body has bytes after the JSON value");
		}
	}
	if ((e = body_tree_check(root, err, errlen)) != BODY_OK) {
		cJSON_Delete(root);
		return e;
	}
	*out = root;
	body_ok(err, errlen);
	return BODY_OK;
}

/* Room for any number's text: "-1.7976931348623157e+308" and a NUL. */
#define BODY_NUMBER_MAX	32

/*
 * A finite number's text in buf: the digits of an integer below 1e15 in
 * magnitude ("-0" for -0), as "%1.15g" prints them without the printf;
 * else the shortest of 15, 16 or 17 significant digits that reads back as
 * the same double.  "null" for one that is not finite, as cJSON prints it.
 * Its length.
 */
static size_t
print_number(double d, char *out)
{
	char		 buf[BODY_NUMBER_MAX], *p = buf + sizeof(buf);
	uint64_t	 v;
	int		 prec, n = 0;

	if (!isfinite(d)) {
		memcpy(out, "null", 4);
		return 4;
	}
	if (fabs(d) < 1e15 && d == (double)(int64_t)d) {
		v = (uint64_t)fabs(d);
		do {
			*--p = (char)('0' + v % 10);
			v /= 10;
		} while (v != 0);
		if (signbit(d))
			*--p = '-';
		memcpy(out, p, (size_t)(buf + sizeof(buf) - p));
		return (size_t)(buf + sizeof(buf) - p);
	}
	/* Written whole where it is sure to fit: a shorter try may be
	 * followed by a longer one. */
	for (prec = 15; prec <= 17; prec++) {
		n = snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	memcpy(out, buf, (size_t)n);
	return (size_t)n;
}

/* A string as cJSON prints it, "" for one without its text. */
static size_t
print_string_len(const char *s)
{
	return s != NULL ? json_quoted_len(s, strlen(s)) : 2;
}

static char *
print_string(char *p, const char *s)
{
	return json_quote(p, s != NULL ? s : "", s != NULL ? strlen(s) : 0);
}

/* What print_value() writes for n added to *len: 0, or -1 for a node
 * cJSON would not print (an invalid type, raw text without its text). */
static int
print_len(const cJSON *n, size_t *len)
{
	char		 num[BODY_NUMBER_MAX];
	const cJSON	*c;

	switch (n->type & 0xff) {
	case cJSON_NULL:
	case cJSON_True:
		*len += 4;
		return 0;
	case cJSON_False:
		*len += 5;
		return 0;
	case cJSON_Number:
		*len += print_number(n->valuedouble, num);
		return 0;
	case cJSON_Raw:
		if (n->valuestring == NULL)
			return -1;
		*len += strlen(n->valuestring);
		return 0;
	case cJSON_String:
		*len += print_string_len(n->valuestring);
		return 0;
	case cJSON_Array:
	case cJSON_Object:
		*len += 2;
		for (c = n->child; c != NULL; c = c->next) {
			if (c != n->child)
				(*len)++;
			if ((n->type & 0xff) == cJSON_Object)
				*len += print_string_len(c->string) + 1;
			if (print_len(c, len) == -1)
				return -1;
		}
		return 0;
	}
	return -1;
}

/* n at p, which print_len() sized; past what it wrote. */
static char *
print_value(char *p, const cJSON *n)
{
	const cJSON	*c;
	size_t		 k;

	switch (n->type & 0xff) {
	case cJSON_NULL:
		memcpy(p, "null", 4);
		return p + 4;
	case cJSON_True:
		memcpy(p, "true", 4);
		return p + 4;
	case cJSON_False:
		memcpy(p, "false", 5);
		return p + 5;
	case cJSON_Number:
		return p + print_number(n->valuedouble, p);
	case cJSON_Raw:
		k = strlen(n->valuestring);
		memcpy(p, n->valuestring, k);
		return p + k;
	case cJSON_String:
		return print_string(p, n->valuestring);
	}
	*p++ = (n->type & 0xff) == cJSON_Object ? '{' : '[';
	for (c = n->child; c != NULL; c = c->next) {
		if (c != n->child)
			*p++ = ',';
		if ((n->type & 0xff) == cJSON_Object) {
			p = print_string(p, c->string);
			*p++ = ':';
		}
		p = print_value(p, c);
	}
	*p++ = (n->type & 0xff) == cJSON_Object ? '}' : ']';
	return p;
}

char *
body_print(const cJSON *tree)
{
	size_t	 len = 0;
	char	*s, *end;

	if (tree == NULL || print_len(tree, &len) == -1 ||
	    (s = malloc(len + 1)) == NULL)
		return NULL;
	end = print_value(s, tree);
	*end = '\0';
	return s;
}

/* Duplicates in the one object a checker is looking at. */
static enum body_err
body_check_dups(const cJSON *obj, const char *what, char *err, size_t errlen)
{
	switch (body_dup_keys(obj)) {
	case 1:
		return body_fail(err, errlen, BODY_BAD,
		    "%s has a duplicate key", what);
	case -1:
		return body_fail(err, errlen, BODY_NOMEM, "out of memory");
	}
	return BODY_OK;
}

/* Every member of obj is one of the NULL-terminated names. */
static int
body_only_keys(const cJSON *obj, const char *const *names)
{
	const cJSON	*it;
	size_t		 k;

	for (it = obj->child; it != NULL; it = it->next) {
		if (it->string == NULL)
			return 0;
		for (k = 0; names[k] != NULL; k++)
			if (strcmp(it->string, names[k]) == 0)
				break;
		if (names[k] == NULL)
			return 0;
	}
	return 1;
}

enum body_err
body_check_text(const cJSON *it, const char *what, size_t max, char *err,
    size_t errlen)
{
	size_t	 units;

	if (it == NULL)
		return body_fail(err, errlen, BODY_BAD, "%s is missing", what);
	if (!cJSON_IsString(it) || it->valuestring == NULL)
		return body_fail(err, errlen, BODY_BAD, "%s is not a string",
		    what);
	if (utf8_utf16_len(it->valuestring, strlen(it->valuestring),
	    &units) == -1)
		return body_fail(err, errlen, BODY_BAD,
		    "%s is not valid UTF-8", what);
	if (units > max)
		return body_fail(err, errlen, BODY_BAD,
		    "%s is over %zu chars (%zu)", what, max, units);
	return BODY_OK;
}

/*
 * Strict base64 of at most b64max chars decoding to min-max bytes; *bytes
 * gets the decoded size.
 */
static enum body_err
body_check_b64(const cJSON *it, const char *what, size_t b64max, size_t min,
    size_t max, size_t *bytes, char *err, size_t errlen)
{
	size_t		 len;
	long long	 n;

	if (it == NULL)
		return body_fail(err, errlen, BODY_BAD, "%s is missing", what);
	if (!cJSON_IsString(it) || it->valuestring == NULL)
		return body_fail(err, errlen, BODY_BAD, "%s is not a string",
		    what);
	len = strlen(it->valuestring);
	if (len > b64max)
		return body_fail(err, errlen, BODY_BAD,
		    "%s is over %zu base64 chars (%zu)", what, b64max, len);
	if ((n = b64_decoded_len(it->valuestring, len)) < 0)
		return body_fail(err, errlen, BODY_BAD,
		    "%s is not strict base64", what);
	if ((unsigned long long)n < min || (unsigned long long)n > max)
		return body_fail(err, errlen, BODY_BAD,
		    "%s decodes to %lld bytes, not %zu-%zu", what, n, min, max);
	*bytes = (size_t)n;
	return BODY_OK;
}

static enum body_err
body_image(const cJSON *img, const char *what, size_t *bytes, char *err,
    size_t errlen)
{
	static const char *const	 keys[] = { "data", "mimeType", NULL };
	const cJSON			*mt;
	char				 sub[64 + sizeof(".data")];
	size_t				 k, n;
	enum body_err			 e;

	if (img == NULL)
		return body_fail(err, errlen, BODY_BAD, "%s is missing", what);
	if (!cJSON_IsObject(img))
		return body_fail(err, errlen, BODY_BAD,
		    "%s is not an object", what);
	if ((e = body_check_dups(img, what, err, errlen)) != BODY_OK)
		return e;
	if (!body_only_keys(img, keys))
		return body_fail(err, errlen, BODY_BAD,
		    "%s has a field other than data and mimeType", what);
	(void)snprintf(sub, sizeof(sub), "%s.data", what);
	if ((e = body_check_b64(cJSON_GetObjectItemCaseSensitive(img, "data"),
	    sub, IMAGE_B64_MAX, IMAGE_BYTES_MIN, IMAGE_BYTES_MAX, &n, err,
	    errlen)) != BODY_OK)
		return e;
	mt = cJSON_GetObjectItemCaseSensitive(img, "mimeType");
	if (mt == NULL)
		return body_fail(err, errlen, BODY_BAD,
		    "%s.mimeType is missing", what);
	if (!cJSON_IsString(mt) || mt->valuestring == NULL)
		return body_fail(err, errlen, BODY_BAD,
		    "%s.mimeType is not a string", what);
	for (k = 0; k < sizeof(body_mime_types) / sizeof(body_mime_types[0]);
	    k++)
		if (strcmp(mt->valuestring, body_mime_types[k]) == 0)
			break;
	if (k == sizeof(body_mime_types) / sizeof(body_mime_types[0]))
		return body_fail(err, errlen, BODY_BAD,
		    "%s.mimeType is not image/png, image/jpeg, image/webp or "
		    "image/gif", what);
	if (bytes != NULL)
		*bytes = n;
	return BODY_OK;
}

static enum body_err
body_images(const cJSON *arr, const char *what, char *err, size_t errlen)
{
	const cJSON	*it;
	char		 sub[64];
	size_t		 i = 0, n = 0, total = 0;
	enum body_err	 e;

	if (arr == NULL)
		return body_fail(err, errlen, BODY_BAD, "%s is missing", what);
	if (!cJSON_IsArray(arr))
		return body_fail(err, errlen, BODY_BAD, "%s is not an array",
		    what);
	for (it = arr->child; it != NULL; it = it->next, i++) {
		if (i == IMAGES_MAX)
			return body_fail(err, errlen, BODY_BAD,
			    "%s has over %u images", what, IMAGES_MAX);
		(void)snprintf(sub, sizeof(sub), "%s[%zu]", what, i);
		if ((e = body_image(it, sub, &n, err, errlen)) != BODY_OK)
			return e;
		/* At most 8 times 20 MiB: no overflow. */
		total += n;
		if (total > IMAGES_TOTAL_MAX)
			return body_fail(err, errlen, BODY_BAD,
			    "%s decode to over %u bytes in all", what,
			    IMAGES_TOTAL_MAX);
	}
	return BODY_OK;
}

enum body_err
body_check_image(const cJSON *img, size_t *bytes, char *err, size_t errlen)
{
	enum body_err	 e;

	if ((e = body_image(img, "image", bytes, err, errlen)) == BODY_OK)
		body_ok(err, errlen);
	return e;
}

enum body_err
body_check_images(const cJSON *arr, char *err, size_t errlen)
{
	enum body_err	 e;

	if ((e = body_images(arr, "images", err, errlen)) == BODY_OK)
		body_ok(err, errlen);
	return e;
}

static enum body_err
body_files(const cJSON *arr, const char *what, char *err, size_t errlen)
{
	const cJSON	*it, *name, *names[REPLY_FILES_MAX];
	char		 sub[64];
	size_t		 i = 0, k, n, total = 0;
	enum body_err	 e;

	if (arr == NULL)
		return body_fail(err, errlen, BODY_BAD, "%s is missing", what);
	if (!cJSON_IsArray(arr))
		return body_fail(err, errlen, BODY_BAD, "%s is not an array",
		    what);
	for (it = arr->child; it != NULL; it = it->next, i++) {
		if (i == REPLY_FILES_MAX)
			return body_fail(err, errlen, BODY_BAD,
			    "%s has over %u files", what, REPLY_FILES_MAX);
		(void)snprintf(sub, sizeof(sub), "%s[%zu]", what, i);
		if (!cJSON_IsObject(it))
			return body_fail(err, errlen, BODY_BAD,
			    "%s is not an object", sub);
		if ((e = body_check_dups(it, sub, err, errlen)) != BODY_OK)
			return e;
		name = cJSON_GetObjectItemCaseSensitive(it, "name");
		if (name == NULL)
			return body_fail(err, errlen, BODY_BAD,
			    "%s.name is missing", sub);
		if (!cJSON_IsString(name) || name->valuestring == NULL)
			return body_fail(err, errlen, BODY_BAD,
			    "%s.name is not a string", sub);
		if (!valid_safe_name(name->valuestring,
		    strlen(name->valuestring)))
			return body_fail(err, errlen, BODY_BAD,
			    "%s.name is not a safe file name", sub);
		for (k = 0; k < i; k++)
			if (strcmp(names[k]->valuestring,
			    name->valuestring) == 0)
				return body_fail(err, errlen, BODY_BAD,
				    "%s.name is the name of %s[%zu] too", sub,
				    what, k);
		names[i] = name;
		(void)snprintf(sub, sizeof(sub), "%s[%zu].data", what, i);
		if ((e = body_check_b64(cJSON_GetObjectItemCaseSensitive(it,
		    "data"), sub, REPLY_FILE_B64_MAX, REPLY_FILE_MIN,
		    REPLY_FILE_MAX, &n, err, errlen)) != BODY_OK)
			return e;
		/* At most 10 times 10 MiB: no overflow. */
		total += n;
		if (total > REPLY_FILES_TOTAL_MAX)
			return body_fail(err, errlen, BODY_BAD,
			    "%s decode to over %u bytes in all", what,
			    REPLY_FILES_TOTAL_MAX);
	}
	return BODY_OK;
}

enum body_err
body_check_files(const cJSON *arr, char *err, size_t errlen)
{
	enum body_err	 e;

	if ((e = body_files(arr, "files", err, errlen)) == BODY_OK)
		body_ok(err, errlen);
	return e;
}

/* Take a member out of its parsed object, as a value without a key. */
static cJSON *
body_detach(cJSON *obj, cJSON *member)
{
	cJSON	*it;

	it = cJSON_DetachItemViaPointer(obj, member);
	cJSON_free(it->string);
	it->string = NULL;
	return it;
}

/* The HTTP status of each outcome of POST /worker/result (3.1). */
static int
body_result_status(enum body_err e)
{
	switch (e) {
	case BODY_OK:
		return 200;
	case BODY_MISMATCH:
		return 409;
	default:
		return 400;
	}
}

static enum body_err
body_result(const char *body, size_t len, const char *pending_turn_id,
    cJSON **result, char *err, size_t errlen)
{
	const cJSON	*tid, *ok;
	cJSON		*root, *res;
	enum body_err	 e;

	if (len > RESULT_BODY_MAX)
		return body_fail(err, errlen, BODY_INVALID_JSON,
		    "body is over %u bytes", RESULT_BODY_MAX);
	if ((e = body_parse(body, len, &root, err, errlen)) != BODY_OK)
		return e;
	if (!cJSON_IsObject(root)) {
		e = body_fail(err, errlen, BODY_MISMATCH,
		    "body is not an object");
		goto done;
	}
	tid = cJSON_GetObjectItemCaseSensitive(root, "turnId");
	if (!cJSON_IsString(tid) || tid->valuestring == NULL ||
	    pending_turn_id == NULL ||
	    strcmp(tid->valuestring, pending_turn_id) != 0) {
		e = body_fail(err, errlen, BODY_MISMATCH,
		    "turnId is not the pending turn's");
		goto done;
	}
	res = cJSON_GetObjectItemCaseSensitive(root, "result");
	if (!cJSON_IsObject(res)) {
		e = body_fail(err, errlen, BODY_MISMATCH,
		    "result is not an object");
		goto done;
	}
	ok = cJSON_GetObjectItemCaseSensitive(res, "ok");
	if (!cJSON_IsBool(ok)) {
		e = body_fail(err, errlen, BODY_MISMATCH,
		    "result.ok is not a boolean");
		goto done;
	}

	/* The files rules of 3.1 (an array, at most 10) open body_files(). */
	if (cJSON_IsTrue(ok)) {
		if ((e = body_check_text(cJSON_GetObjectItemCaseSensitive(res,
		    "text"), "result.text", RESULT_TEXT_MAX, err, errlen)) !=
		    BODY_OK)
			goto done;
		if ((e = body_files(cJSON_GetObjectItemCaseSensitive(res,
		    "files"), "result.files", err, errlen)) != BODY_OK)
			goto done;
	} else if ((e = body_check_text(cJSON_GetObjectItemCaseSensitive(res,
	    "error"), "result.error", RESULT_ERROR_MAX, err, errlen)) !=
	    BODY_OK)
		goto done;

	e = BODY_OK;
	body_ok(err, errlen);
	if (result != NULL)
		*result = body_detach(root, res);
 done:
	cJSON_Delete(root);
	return e;
}

int
body_check_result(const char *body, size_t len, const char *pending_turn_id,
    cJSON **result, char *err, size_t errlen)
{
	if (result != NULL)
		*result = NULL;
	return body_result_status(body_result(body, len, pending_turn_id,
	    result, err, errlen));
}

/* A principal: a string of 1 to PRINCIPAL_ID_MAX chars. */
static enum body_err
body_check_principal(const cJSON *it, const char *what, char *err,
    size_t errlen)
{
	enum body_err	 e;

	if ((e = body_check_text(it, what, PRINCIPAL_ID_MAX, err, errlen)) !=
	    BODY_OK)
		return e;
	if (it->valuestring[0] == '\0')
		return body_fail(err, errlen, BODY_BAD, "%s is empty", what);
	return BODY_OK;
}

enum body_err
body_check_turn(const cJSON *turn, char *err, size_t errlen)
{
	static const char *const	 keys[] = {
		"turnId", "author", "text", "memory", "memoryVisibility",
		"images", "thinking", NULL
	};
	static const char *const	 author_keys[] = { "id", "name",
		"principalId", NULL };
	const cJSON			*it;
	enum body_err			 e;

	if (turn == NULL || !cJSON_IsObject(turn))
		return body_fail(err, errlen, BODY_BAD,
		    "turn is not an object");
	if ((e = body_check_dups(turn, "turn", err, errlen)) != BODY_OK)
		return e;
	if (!body_only_keys(turn, keys))
		return body_fail(err, errlen, BODY_BAD,
		    "turn has a field other than turnId, author, text, memory, "
		    "memoryVisibility, images and thinking");

	it = cJSON_GetObjectItemCaseSensitive(turn, "turnId");
	if (it == NULL)
		return body_fail(err, errlen, BODY_BAD, "turnId is missing");
	if (!cJSON_IsString(it) || it->valuestring == NULL)
		return body_fail(err, errlen, BODY_BAD,
		    "turnId is not a string");
	if (!valid_safe_name(it->valuestring, strlen(it->valuestring)))
		return body_fail(err, errlen, BODY_BAD,
		    "turnId is not a safe file name");

	it = cJSON_GetObjectItemCaseSensitive(turn, "author");
	if (it == NULL)
		return body_fail(err, errlen, BODY_BAD, "author is missing");
	if (!cJSON_IsObject(it))
		return body_fail(err, errlen, BODY_BAD,
		    "author is not an object");
	if ((e = body_check_dups(it, "author", err, errlen)) != BODY_OK)
		return e;
	if (!body_only_keys(it, author_keys))
		return body_fail(err, errlen, BODY_BAD,
		    "author has a field other than id, name and principalId");
	if ((e = body_check_text(cJSON_GetObjectItemCaseSensitive(it, "id"),
	    "author.id", AUTHOR_FIELD_MAX, err, errlen)) != BODY_OK)
		return e;
	if ((e = body_check_text(cJSON_GetObjectItemCaseSensitive(it, "name"),
	    "author.name", AUTHOR_FIELD_MAX, err, errlen)) != BODY_OK)
		return e;
	if (cJSON_GetObjectItemCaseSensitive(it, "principalId") != NULL &&
	    (e = body_check_principal(cJSON_GetObjectItemCaseSensitive(it,
	    "principalId"), "author.principalId", err, errlen)) != BODY_OK)
		return e;
	it = cJSON_GetObjectItemCaseSensitive(turn, "memoryVisibility");
	if (it != NULL && (!cJSON_IsString(it) || it->valuestring == NULL ||
	    (strcmp(it->valuestring, "shared") != 0 &&
	    strcmp(it->valuestring, "private") != 0)))
		return body_fail(err, errlen, BODY_BAD,
		    "memoryVisibility is not shared or private");

	if ((e = body_check_text(cJSON_GetObjectItemCaseSensitive(turn,
	    "text"), "text", TURN_TEXT_MAX, err, errlen)) != BODY_OK)
		return e;
	if ((e = body_check_text(cJSON_GetObjectItemCaseSensitive(turn,
	    "memory"), "memory", MEMORY_MAX, err, errlen)) != BODY_OK)
		return e;
	if ((e = body_images(cJSON_GetObjectItemCaseSensitive(turn, "images"),
	    "images", err, errlen)) != BODY_OK)
		return e;

	it = cJSON_GetObjectItemCaseSensitive(turn, "thinking");
	if (it == NULL)
		return body_fail(err, errlen, BODY_BAD, "thinking is missing");
	if (!cJSON_IsString(it) || it->valuestring == NULL ||
	    !valid_thinking(it->valuestring, strlen(it->valuestring)))
		return body_fail(err, errlen, BODY_BAD,
		    "thinking is not low, medium, high or xhigh");
	body_ok(err, errlen);
	return BODY_OK;
}

char *
body_build_turn(const struct body_turn *bt, enum body_err *errp, char *err,
    size_t errlen)
{
	cJSON		*turn, *author;
	char		*json = NULL;
	enum body_err	 e = BODY_NOMEM;

	if ((turn = cJSON_CreateObject()) == NULL)
		goto done;
	/* A NULL string adds nothing: body_check_turn() names it missing. */
	if (bt->bt_turn_id != NULL &&
	    cJSON_AddStringToObject(turn, "turnId", bt->bt_turn_id) == NULL)
		goto done;
	if ((author = cJSON_AddObjectToObject(turn, "author")) == NULL)
		goto done;
	if (bt->bt_author_id != NULL &&
	    cJSON_AddStringToObject(author, "id", bt->bt_author_id) == NULL)
		goto done;
	if (bt->bt_author_name != NULL &&
	    cJSON_AddStringToObject(author, "name", bt->bt_author_name) ==
	    NULL)
		goto done;
	/* Only when given: a 0.7.3 caller's turn is the same to the byte. */
	if (bt->bt_principal_id != NULL && cJSON_AddStringToObject(author,
	    "principalId", bt->bt_principal_id) == NULL)
		goto done;
	if (bt->bt_text != NULL &&
	    cJSON_AddStringToObject(turn, "text", bt->bt_text) == NULL)
		goto done;
	if (cJSON_AddStringToObject(turn, "memory", bt->bt_memory != NULL ?
	    bt->bt_memory : "") == NULL)
		goto done;
	if (bt->bt_memory_visibility != NULL && cJSON_AddStringToObject(turn,
	    "memoryVisibility", bt->bt_memory_visibility) == NULL)
		goto done;
	/*
	 * A reference prints the caller's images without copying up to
	 * 64 MiB of base64, and cJSON_Delete() leaves them alone.  cJSON
	 * takes no const, but only reads through it.
	 */
	if (bt->bt_images == NULL) {
		if (cJSON_AddArrayToObject(turn, "images") == NULL)
			goto done;
	} else if (!cJSON_AddItemReferenceToObject(turn, "images",
	    (cJSON *)(uintptr_t)bt->bt_images))
		goto done;
	if (bt->bt_thinking != NULL &&
	    cJSON_AddStringToObject(turn, "thinking", bt->bt_thinking) == NULL)
		goto done;

	if ((e = body_check_turn(turn, err, errlen)) != BODY_OK)
		goto done;
	if ((json = body_print(turn)) == NULL)
		e = BODY_NOMEM;
 done:
	if (e == BODY_NOMEM)
		body_fail(err, errlen, e, "out of memory");
	cJSON_Delete(turn);
	if (errp != NULL)
		*errp = e;
	return json;
}

enum body_err
body_check_tool_answer_json(const cJSON *answer, char *err, size_t errlen)
{
	static const char *const	 keys[] = {
		"ok", "text", "error", "image", "privateTo", NULL
	};
	const cJSON			*it;
	enum body_err			 e;

	if (answer == NULL || !cJSON_IsObject(answer))
		return body_fail(err, errlen, BODY_BAD,
		    "tool answer is not an object");
	if ((e = body_tree_check(answer, err, errlen)) != BODY_OK)
		return e;
	if (!body_only_keys(answer, keys))
		return body_fail(err, errlen, BODY_BAD,
		    "tool answer has a field other than ok, text, error, "
		    "image and privateTo");
	if ((it = cJSON_GetObjectItemCaseSensitive(answer, "privateTo")) !=
	    NULL && (e = body_check_principal(it, "tool answer privateTo",
	    err, errlen)) != BODY_OK)
		return e;
	if (!cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(answer, "ok")))
		return body_fail(err, errlen, BODY_BAD,
		    "tool answer ok is not a boolean");
	if ((it = cJSON_GetObjectItemCaseSensitive(answer, "text")) != NULL &&
	    (e = body_check_text(it, "tool answer text", TOOL_TEXT_MAX, err,
	    errlen)) != BODY_OK)
		return e;
	if ((it = cJSON_GetObjectItemCaseSensitive(answer, "error")) != NULL &&
	    (e = body_check_text(it, "tool answer error", TOOL_ERROR_MAX, err,
	    errlen)) != BODY_OK)
		return e;
	if ((it = cJSON_GetObjectItemCaseSensitive(answer, "image")) != NULL &&
	    (e = body_image(it, "tool answer image", NULL, err, errlen)) !=
	    BODY_OK)
		return e;
	body_ok(err, errlen);
	return BODY_OK;
}

/* One optional boolean of o; -1 when present and not a boolean. */
static int
body_opt_bool(const cJSON *o, const char *key, int *v)
{
	const cJSON	*it = cJSON_GetObjectItemCaseSensitive(o, key);

	*v = 0;
	if (it == NULL)
		return 0;
	if (!cJSON_IsBool(it))
		return -1;
	*v = cJSON_IsTrue(it);
	return 0;
}

enum body_err
body_check_ready(const char *body, size_t len, struct body_ready *r,
    char *err, size_t errlen)
{
	const cJSON	*caps;
	cJSON		*root;
	enum body_err	 e;

	memset(r, 0, sizeof(*r));
	if (len == 0) {
		body_ok(err, errlen);
		return BODY_OK;
	}
	if (len > WORKER_READY_BODY_MAX)
		return body_fail(err, errlen, BODY_BAD, "ready body over %u "
		    "bytes", WORKER_READY_BODY_MAX);
	if ((e = body_parse(body, len, &root, err, errlen)) != BODY_OK)
		return e;
	e = BODY_BAD;
	if (!cJSON_IsObject(root)) {
		body_fail(err, errlen, e, "ready body is not an object");
		goto done;
	}
	caps = cJSON_GetObjectItemCaseSensitive(root, "capabilities");
	if (caps != NULL && !cJSON_IsObject(caps)) {
		body_fail(err, errlen, e, "capabilities is not an object");
		goto done;
	}
	if (caps != NULL && (body_opt_bool(caps, "privateTo",
	    &r->br_private_to) == -1 || body_opt_bool(caps, "readerRecords",
	    &r->br_reader_records) == -1)) {
		body_fail(err, errlen, e, "capabilities.privateTo and "
		    "capabilities.readerRecords are booleans");
		goto done;
	}
	if (body_opt_bool(root, "privateHistory", &r->br_private_history) ==
	    -1) {
		body_fail(err, errlen, e, "privateHistory is not a boolean");
		goto done;
	}
	e = BODY_OK;
	body_ok(err, errlen);
 done:
	cJSON_Delete(root);
	if (e != BODY_OK)
		memset(r, 0, sizeof(*r));
	return e;
}

enum body_err
body_check_tool_answer(const char *body, size_t len, char *err,
    size_t errlen)
{
	cJSON		*answer;
	enum body_err	 e;

	if ((e = body_parse(body, len, &answer, err, errlen)) != BODY_OK)
		return e;
	e = body_check_tool_answer_json(answer, err, errlen);
	cJSON_Delete(answer);
	return e;
}

enum body_err
body_tool_input(const char *body, size_t len, cJSON **input,
    const char **why, char *err, size_t errlen)
{
	cJSON		*root, *in;
	enum body_err	 e;

	*input = NULL;
	*why = BODY_INVALID_INPUT;
	if (len > TOOL_BODY_MAX)
		return body_fail(err, errlen, BODY_BAD,
		    "body is over %u bytes", TOOL_BODY_MAX);
	if ((e = body_parse(body, len, &root, err, errlen)) != BODY_OK)
		return e;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return body_fail(err, errlen, BODY_BAD,
		    "body is not an object");
	}
	in = cJSON_GetObjectItemCaseSensitive(root, "input");
	if (!cJSON_IsObject(in)) {
		cJSON_Delete(root);
		*why = BODY_INVALID_TOOL_INPUT;
		return body_fail(err, errlen, BODY_BAD,
		    "input is missing or not an object");
	}
	*input = body_detach(root, in);
	cJSON_Delete(root);
	*why = NULL;
	body_ok(err, errlen);
	return BODY_OK;
}
