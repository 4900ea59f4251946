/*
 * Every function of common/bodies.c on the same input, checked against a
 * second reading of PROTOCOL.md: a naive recursive-descent JSON parser
 * decides what body_parse() must accept, and plain re-statements of 3.1,
 * 3.3, 4.1-4.3 decide every status.  The input is also cut at '\n' into
 * the fields of a turn for body_build_turn().
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bodies.h"
#include "limits.h"
#include "validate.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

/* cJSON's nesting limit: 1 000 arrays and objects deep parse. */
#define REF_DEPTH_MAX	1000

struct ref {
	const uint8_t	*r_s;
	size_t		 r_len;
	size_t		 r_i;
	int		 r_depth;
};

static int	ref_value(struct ref *);
static int	ref_number_token(struct ref *);

static void
ref_ws(struct ref *r)
{
	while (r->r_i < r->r_len && (r->r_s[r->r_i] == ' ' ||
	    r->r_s[r->r_i] == '\t' || r->r_s[r->r_i] == '\n' ||
	    r->r_s[r->r_i] == '\r'))
		r->r_i++;
}

static int
ref_peek(struct ref *r)
{
	return r->r_i < r->r_len ? r->r_s[r->r_i] : -1;
}

/* One UTF-8 sequence, told by the value it decodes to. */
static size_t
ref_utf8(const uint8_t *s, size_t len)
{
	size_t		 n, k;
	uint32_t	 v;

	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		v = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		v = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		v = s[0] & 0x07;
	} else
		return 0;
	if (len < n)
		return 0;
	for (k = 1; k < n; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[k] & 0x3f);
	}
	if ((n == 2 && v < 0x80) || (n == 3 && v < 0x800) ||
	    (n == 4 && v < 0x10000))
		return 0;
	if ((v >= 0xd800 && v <= 0xdfff) || v > 0x10ffff)
		return 0;
	return n;
}

static int
ref_hex4(struct ref *r, uint32_t *v)
{
	size_t	 k;
	int	 c;

	if (r->r_len - r->r_i < 4)
		return -1;
	*v = 0;
	for (k = 0; k < 4; k++) {
		c = r->r_s[r->r_i + k];
		if (c >= '0' && c <= '9')
			c -= '0';
		else if (c >= 'a' && c <= 'f')
			c -= 'a' - 10;
		else if (c >= 'A' && c <= 'F')
			c -= 'A' - 10;
		else
			return -1;
		*v = *v << 4 | (uint32_t)c;
	}
	r->r_i += 4;
	return 0;
}

/*
 * A string, decoded into out (room for r_len bytes) when out is non-NULL;
 * \u0000 is refused, since a C string would end there.
 */
static int
ref_string(struct ref *r, uint8_t *out, size_t *outlen)
{
	size_t		 o = 0, n;
	uint32_t	 cp, lo;
	uint8_t		 c, u[4];

	if (ref_peek(r) != '"')
		return -1;
	r->r_i++;
	for (;;) {
		if (r->r_i >= r->r_len)
			return -1;
		c = r->r_s[r->r_i];
		if (c == '"') {
			r->r_i++;
			break;
		}
		if (c < 0x20)
			return -1;
		if (c >= 0x80) {
			n = ref_utf8(r->r_s + r->r_i, r->r_len - r->r_i);
			if (n == 0)
				return -1;
			if (out != NULL)
				memcpy(out + o, r->r_s + r->r_i, n);
			o += n;
			r->r_i += n;
			continue;
		}
		r->r_i++;
		if (c != '\\') {
			if (out != NULL)
				out[o] = c;
			o++;
			continue;
		}
		if (r->r_i >= r->r_len)
			return -1;
		c = r->r_s[r->r_i++];
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
			if (ref_hex4(r, &cp) == -1 || cp == 0)
				return -1;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return -1;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (r->r_len - r->r_i < 2 ||
				    r->r_s[r->r_i] != '\\' ||
				    r->r_s[r->r_i + 1] != 'u')
					return -1;
				r->r_i += 2;
				if (ref_hex4(r, &lo) == -1 || lo < 0xdc00 ||
				    lo > 0xdfff)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				    (lo - 0xdc00);
			}
			break;
		default:
			return -1;
		}
		if (cp < 0x80) {
			u[0] = (uint8_t)cp;
			n = 1;
		} else if (cp < 0x800) {
			u[0] = (uint8_t)(0xc0 | cp >> 6);
			u[1] = (uint8_t)(0x80 | (cp & 0x3f));
			n = 2;
		} else if (cp < 0x10000) {
			u[0] = (uint8_t)(0xe0 | cp >> 12);
			u[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
			u[2] = (uint8_t)(0x80 | (cp & 0x3f));
			n = 3;
		} else {
			u[0] = (uint8_t)(0xf0 | cp >> 18);
			u[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
			u[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
			u[3] = (uint8_t)(0x80 | (cp & 0x3f));
			n = 4;
		}
		if (out != NULL)
			memcpy(out + o, u, n);
		o += n;
	}
	if (outlen != NULL)
		*outlen = o;
	return 0;
}

static int
ref_digits(struct ref *r)
{
	size_t	 start = r->r_i;

	while (ref_peek(r) >= '0' && ref_peek(r) <= '9')
		r->r_i++;
	return r->r_i > start ? 0 : -1;
}

/* As strtod(3) reads it, a number past a double's range is refused. */
static int
ref_number(struct ref *r)
{
	char	*buf;
	size_t	 start = r->r_i;
	int	 finite;

	if (ref_number_token(r) == -1)
		return -1;
	if ((buf = strndup((const char *)r->r_s + start, r->r_i - start)) ==
	    NULL)
		abort();
	finite = isfinite(strtod(buf, NULL));
	free(buf);
	return finite ? 0 : -1;
}

static int
ref_number_token(struct ref *r)
{
	if (ref_peek(r) == '-')
		r->r_i++;
	if (ref_peek(r) == '0')
		r->r_i++;
	else if (ref_digits(r) == -1)
		return -1;
	if (ref_peek(r) == '.') {
		r->r_i++;
		if (ref_digits(r) == -1)
			return -1;
	}
	if (ref_peek(r) == 'e' || ref_peek(r) == 'E') {
		r->r_i++;
		if (ref_peek(r) == '+' || ref_peek(r) == '-')
			r->r_i++;
		if (ref_digits(r) == -1)
			return -1;
	}
	return 0;
}

struct ref_key {
	uint8_t	*k_data;
	size_t	 k_len;
};

static int
ref_object(struct ref *r)
{
	struct ref_key	*keys = NULL;
	size_t		 n = 0, i;
	int		 rc = -1;

	r->r_i++;
	ref_ws(r);
	if (ref_peek(r) == '}') {
		r->r_i++;
		return 0;
	}
	for (;;) {
		if ((keys = realloc(keys, (n + 1) * sizeof(*keys))) == NULL)
			abort();
		if ((keys[n].k_data = malloc(r->r_len + 1)) == NULL)
			abort();
		n++;
		if (ref_string(r, keys[n - 1].k_data, &keys[n - 1].k_len) ==
		    -1)
			goto done;
		for (i = 0; i + 1 < n; i++)
			if (keys[i].k_len == keys[n - 1].k_len &&
			    memcmp(keys[i].k_data, keys[n - 1].k_data,
			    keys[i].k_len) == 0)
				goto done;
		ref_ws(r);
		if (ref_peek(r) != ':')
			goto done;
		r->r_i++;
		if (ref_value(r) == -1)
			goto done;
		ref_ws(r);
		if (ref_peek(r) == '}') {
			r->r_i++;
			rc = 0;
			goto done;
		}
		if (ref_peek(r) != ',')
			goto done;
		r->r_i++;
		ref_ws(r);
	}
 done:
	for (i = 0; i < n; i++)
		free(keys[i].k_data);
	free(keys);
	return rc;
}

static int
ref_array(struct ref *r)
{
	r->r_i++;
	ref_ws(r);
	if (ref_peek(r) == ']') {
		r->r_i++;
		return 0;
	}
	for (;;) {
		if (ref_value(r) == -1)
			return -1;
		ref_ws(r);
		if (ref_peek(r) == ']') {
			r->r_i++;
			return 0;
		}
		if (ref_peek(r) != ',')
			return -1;
		r->r_i++;
	}
}

static int
ref_literal(struct ref *r, const char *lit)
{
	size_t	 n = strlen(lit);

	if (r->r_len - r->r_i < n || memcmp(r->r_s + r->r_i, lit, n) != 0)
		return -1;
	r->r_i += n;
	return 0;
}

static int
ref_value(struct ref *r)
{
	int	 rc;

	ref_ws(r);
	switch (ref_peek(r)) {
	case '{':
	case '[':
		if (r->r_depth >= REF_DEPTH_MAX)
			return -1;
		r->r_depth++;
		rc = ref_peek(r) == '{' ? ref_object(r) : ref_array(r);
		r->r_depth--;
		return rc;
	case '"':
		return ref_string(r, NULL, NULL);
	case 't':
		return ref_literal(r, "true");
	case 'f':
		return ref_literal(r, "false");
	case 'n':
		return ref_literal(r, "null");
	default:
		return ref_number(r);
	}
}

static int
ref_json(const uint8_t *s, size_t len)
{
	struct ref	 r = { s, len, 0, 0 };

	if (ref_value(&r) == -1)
		return -1;
	ref_ws(&r);
	return r.r_i == len ? 0 : -1;
}

/*
 * Re-statements of the rules over a tree the strict parser accepted, so
 * every string is valid UTF-8 without NUL and no key repeats.
 */
static const cJSON *
ref_get(const cJSON *obj, const char *key)
{
	const cJSON	*it;

	for (it = obj->child; it != NULL; it = it->next)
		if (strcmp(it->string, key) == 0)
			return it;
	return NULL;
}

static size_t
ref_count(const cJSON *it)
{
	size_t	 n = 0;

	for (it = it->child; it != NULL; it = it->next)
		n++;
	return n;
}

static int
ref_text(const cJSON *it, size_t max)
{
	size_t	 u;

	return cJSON_IsString(it) && utf8_utf16_len(it->valuestring,
	    strlen(it->valuestring), &u) == 0 && u <= max;
}

static int
ref_only(const cJSON *obj, const char *a, const char *b, const char *c,
    const char *d)
{
	const cJSON	*it;

	for (it = obj->child; it != NULL; it = it->next)
		if (strcmp(it->string, a) != 0 &&
		    (b == NULL || strcmp(it->string, b) != 0) &&
		    (c == NULL || strcmp(it->string, c) != 0) &&
		    (d == NULL || strcmp(it->string, d) != 0))
			return 0;
	return 1;
}

/* Every key of obj is one of the n keys. */
static int
ref_keys(const cJSON *obj, const char *const *keys, size_t n)
{
	const cJSON	*it;
	size_t		 i;

	for (it = obj->child; it != NULL; it = it->next) {
		for (i = 0; i < n; i++)
			if (strcmp(it->string, keys[i]) == 0)
				break;
		if (i == n)
			return 0;
	}
	return 1;
}

/* Contract 0.9: a principal is 1 to 256 chars. */
static int
ref_principal(const cJSON *it)
{
	return ref_text(it, 256) && it->valuestring[0] != '\0';
}

/* Decoded size of valid base64 within [min, max], else -1. */
static long long
ref_b64(const cJSON *it, size_t min, size_t max)
{
	long long	 n;

	if (!cJSON_IsString(it))
		return -1;
	n = b64_decoded_len(it->valuestring, strlen(it->valuestring));
	if (n < (long long)min || n > (long long)max)
		return -1;
	/* The base64 bound follows from the decoded one. */
	CHECK(strlen(it->valuestring) <= ((max + 2) / 3) * 4);
	return n;
}

static long long
ref_image(const cJSON *img)
{
	const cJSON	*mt;
	long long	 n;

	if (!cJSON_IsObject(img) || !ref_only(img, "data", "mimeType", NULL,
	    NULL))
		return -1;
	if ((n = ref_b64(ref_get(img, "data"), 1, 20u * MIB)) < 0)
		return -1;
	mt = ref_get(img, "mimeType");
	if (!cJSON_IsString(mt))
		return -1;
	if (strcmp(mt->valuestring, "image/png") != 0 &&
	    strcmp(mt->valuestring, "image/jpeg") != 0 &&
	    strcmp(mt->valuestring, "image/webp") != 0 &&
	    strcmp(mt->valuestring, "image/gif") != 0)
		return -1;
	return n;
}

static int
ref_images(const cJSON *arr)
{
	const cJSON	*it;
	long long	 n, total = 0;

	if (!cJSON_IsArray(arr) || ref_count(arr) > 8)
		return 0;
	for (it = arr->child; it != NULL; it = it->next) {
		if ((n = ref_image(it)) < 0)
			return 0;
		total += n;
	}
	return total <= 64ll * MIB;
}

static int
ref_files(const cJSON *arr)
{
	const cJSON	*it, *jt, *name;
	long long	 n, total = 0;

	if (!cJSON_IsArray(arr) || ref_count(arr) > 10)
		return 0;
	for (it = arr->child; it != NULL; it = it->next) {
		if (!cJSON_IsObject(it))
			return 0;
		name = ref_get(it, "name");
		if (!cJSON_IsString(name) || !valid_safe_name(name->valuestring,
		    strlen(name->valuestring)))
			return 0;
		for (jt = arr->child; jt != it; jt = jt->next)
			if (strcmp(ref_get(jt, "name")->valuestring,
			    name->valuestring) == 0)
				return 0;
		if ((n = ref_b64(ref_get(it, "data"), 1, 10u * MIB)) < 0)
			return 0;
		total += n;
	}
	return total <= 50ll * MIB;
}

static int
ref_result(const cJSON *root, const char *pending)
{
	const cJSON	*tid, *res, *ok;

	if (root == NULL)
		return 400;
	if (!cJSON_IsObject(root))
		return 409;
	tid = ref_get(root, "turnId");
	if (!cJSON_IsString(tid) || pending == NULL ||
	    strcmp(tid->valuestring, pending) != 0)
		return 409;
	res = ref_get(root, "result");
	if (!cJSON_IsObject(res))
		return 409;
	ok = ref_get(res, "ok");
	if (!cJSON_IsBool(ok))
		return 409;
	if (cJSON_IsFalse(ok))
		return ref_text(ref_get(res, "error"), 10000) ? 200 : 400;
	if (!ref_text(ref_get(res, "text"), 100000))
		return 400;
	return ref_files(ref_get(res, "files")) ? 200 : 400;
}

static int
ref_answer(const cJSON *a)
{
	static const char *const keys[] = { "ok", "text", "error", "image",
	    "privateTo" };
	const cJSON	*it;

	if (!cJSON_IsObject(a) || !ref_keys(a, keys, 5))
		return 0;
	if ((it = ref_get(a, "privateTo")) != NULL && !ref_principal(it))
		return 0;
	if (!cJSON_IsBool(ref_get(a, "ok")))
		return 0;
	if ((it = ref_get(a, "text")) != NULL && !ref_text(it, 1000000))
		return 0;
	if ((it = ref_get(a, "error")) != NULL && !ref_text(it, 10000))
		return 0;
	if ((it = ref_get(a, "image")) != NULL && ref_image(it) < 0)
		return 0;
	return 1;
}

static int
ref_turn(const cJSON *t)
{
	static const char *const keys[] = { "turnId", "author", "text",
	    "memory", "images", "thinking", "memoryVisibility" };
	static const char *const author_keys[] = { "id", "name",
	    "principalId" };
	const cJSON	*it, *au;

	if (!cJSON_IsObject(t) || !ref_keys(t, keys, 7) ||
	    ref_count(t) != 6u + (ref_get(t, "memoryVisibility") != NULL))
		return 0;
	it = ref_get(t, "memoryVisibility");
	if (it != NULL && !(cJSON_IsString(it) && (strcmp(it->valuestring,
	    "shared") == 0 || strcmp(it->valuestring, "private") == 0)))
		return 0;
	it = ref_get(t, "turnId");
	if (!cJSON_IsString(it) || !valid_safe_name(it->valuestring,
	    strlen(it->valuestring)))
		return 0;
	au = ref_get(t, "author");
	if (!cJSON_IsObject(au) || !ref_keys(au, author_keys, 3) ||
	    ref_count(au) != 2u + (ref_get(au, "principalId") != NULL) ||
	    !ref_text(ref_get(au, "id"), 256) ||
	    !ref_text(ref_get(au, "name"), 256))
		return 0;
	if ((it = ref_get(au, "principalId")) != NULL && !ref_principal(it))
		return 0;
	if (!ref_text(ref_get(t, "text"), 100000) ||
	    !ref_text(ref_get(t, "memory"), 100000))
		return 0;
	if (!ref_images(ref_get(t, "images")))
		return 0;
	it = ref_get(t, "thinking");
	return cJSON_IsString(it) && valid_thinking(it->valuestring,
	    strlen(it->valuestring));
}

/* The same tree, every number the same double (cJSON_Compare() allows an
 * epsilon). */
static int
same_exact(const cJSON *a, const cJSON *b)
{
	if ((a->type & 0xff) != (b->type & 0xff))
		return 0;
	if ((a->string == NULL) != (b->string == NULL) ||
	    (a->string != NULL && strcmp(a->string, b->string) != 0))
		return 0;
	if (cJSON_IsNumber(a))
		return a->valuedouble == b->valuedouble;
	if (cJSON_IsString(a))
		return strcmp(a->valuestring, b->valuestring) == 0;
	for (a = a->child, b = b->child; a != NULL && b != NULL;
	    a = a->next, b = b->next)
		if (!same_exact(a, b))
			return 0;
	return a == NULL && b == NULL;
}

/* Numbers as body_print() promises them, as raw text, for cJSON's printer:
 * the digits of an integer below 1e15, else the shortest of %.15g to
 * %.17g that reads back the same. */
static void
ref_numbers_raw(cJSON *n)
{
	char	 buf[40];
	int	 prec;

	if (cJSON_IsNumber(n)) {
		if (fabs(n->valuedouble) < 1e15 &&
		    n->valuedouble == floor(n->valuedouble))
			(void)snprintf(buf, sizeof(buf), "%.0f", n->valuedouble);
		else
			for (prec = 15; prec <= 17; prec++) {
				(void)snprintf(buf, sizeof(buf), "%.*g", prec,
				    n->valuedouble);
				if (strtod(buf, NULL) == n->valuedouble)
					break;
			}
		n->type = cJSON_Raw;
		CHECK((n->valuestring = strdup(buf)) != NULL);
		return;
	}
	for (n = n->child; n != NULL; n = n->next)
		ref_numbers_raw(n);
}

static void
fuzz_parse(const char *s, size_t size, cJSON *root)
{
	cJSON	*again, *copy;
	char	*text, *ref;

	if (root == NULL)
		return;
	/* What body_print() prints, the strict parser reads back the same,
	 * to the last bit of every number, and the tree is as it was. */
	CHECK((copy = cJSON_Duplicate(root, 1)) != NULL);
	text = body_print(root);
	CHECK(text != NULL);
	CHECK(same_exact(root, copy));
	/* Byte for byte what cJSON prints, numbers aside. */
	ref_numbers_raw(copy);
	CHECK((ref = cJSON_PrintUnformatted(copy)) != NULL);
	CHECK(strcmp(text, ref) == 0);
	cJSON_free(ref);
	CHECK(body_parse(text, strlen(text), &again, NULL, 0) == BODY_OK);
	CHECK(same_exact(root, again));
	cJSON_Delete(again);
	cJSON_Delete(copy);
	cJSON_free(text);
}

static void
fuzz_result(const char *s, size_t size, const cJSON *root,
    const char *pending)
{
	cJSON	*res;
	char	 err[128], tiny[3];
	int	 st, want;

	want = ref_result(root, pending);
	st = body_check_result(s, size, pending, &res, err, sizeof(err));
	CHECK(st == want);
	CHECK((st == 200) == (err[0] == '\0'));
	CHECK((st == 200) == (res != NULL));
	if (res != NULL) {
		CHECK(cJSON_IsObject(res) && res->string == NULL);
		CHECK(cJSON_Compare(res, ref_get(root, "result"), 1));
		cJSON_Delete(res);
	}
	CHECK(body_check_result(s, size, pending, NULL, tiny, sizeof(tiny)) ==
	    want);
	CHECK(strlen(tiny) < sizeof(tiny));
}

static void
fuzz_answer(const char *s, size_t size, const cJSON *root)
{
	enum body_err	 e;
	char		 err[128];

	e = body_check_tool_answer(s, size, err, sizeof(err));
	if (root == NULL) {
		CHECK(e == BODY_INVALID_JSON);
		return;
	}
	CHECK((e == BODY_OK) == ref_answer(root));
	CHECK(e == BODY_OK || e == BODY_BAD);
	CHECK((e == BODY_OK) == (err[0] == '\0'));
	CHECK(body_check_tool_answer_json(root, NULL, 0) == e);
}

/* An optional boolean. */
static int
ref_opt_bool(const cJSON *o, const char *key)
{
	const cJSON	*it = ref_get(o, key);

	return it == NULL || cJSON_IsBool(it);
}

static void
fuzz_ready(const char *s, size_t size, const cJSON *root)
{
	struct body_ready	 r;
	const cJSON		*caps;
	enum body_err		 e;
	char			 err[128];
	int			 want;

	e = body_check_ready(s, size, &r, err, sizeof(err));
	if (size == 0)
		want = 1;
	else if (root == NULL || size > WORKER_READY_BODY_MAX) {
		CHECK(e != BODY_OK);
		CHECK(r.br_private_to == 0 && r.br_reader_records == 0 &&
		    r.br_private_history == 0);
		return;
	} else {
		caps = cJSON_IsObject(root) ? ref_get(root, "capabilities") :
		    NULL;
		want = cJSON_IsObject(root) && (caps == NULL ||
		    (cJSON_IsObject(caps) && ref_opt_bool(caps, "privateTo") &&
		    ref_opt_bool(caps, "readerRecords"))) &&
		    ref_opt_bool(root, "privateHistory");
	}
	CHECK((e == BODY_OK) == want);
	CHECK((e == BODY_OK) == (err[0] == '\0'));
	if (!want) {
		CHECK(r.br_private_to == 0 && r.br_reader_records == 0 &&
		    r.br_private_history == 0);
		return;
	}
	caps = size > 0 ? ref_get(root, "capabilities") : NULL;
	CHECK(r.br_private_to == (caps != NULL &&
	    cJSON_IsTrue(ref_get(caps, "privateTo"))));
	CHECK(r.br_reader_records == (caps != NULL &&
	    cJSON_IsTrue(ref_get(caps, "readerRecords"))));
	CHECK(r.br_private_history == (size > 0 &&
	    cJSON_IsTrue(ref_get(root, "privateHistory"))));
}

static void
fuzz_tool_input(const char *s, size_t size, const cJSON *root)
{
	const cJSON	*want;
	const char	*why;
	enum body_err	 e;
	cJSON		*in;

	e = body_tool_input(s, size, &in, &why, NULL, 0);
	if (root == NULL || !cJSON_IsObject(root)) {
		CHECK(e != BODY_OK && in == NULL);
		CHECK(strcmp(why, "Invalid input") == 0);
		return;
	}
	want = ref_get(root, "input");
	if (!cJSON_IsObject(want)) {
		CHECK(e == BODY_BAD && in == NULL);
		CHECK(strcmp(why, "Invalid tool input") == 0);
		return;
	}
	CHECK(e == BODY_OK && why == NULL);
	CHECK(in->string == NULL && cJSON_Compare(in, want, 1));
	cJSON_Delete(in);
}

/* The checkers over a parsed tree, on the root and on what it holds. */
static void
fuzz_trees(const cJSON *root)
{
	const cJSON	*it;
	size_t		 bytes;
	long long	 n;
	enum body_err	 e;

	if (root == NULL)
		return;
	n = ref_image(root);
	e = body_check_image(root, &bytes, NULL, 0);
	CHECK((e == BODY_OK) == (n >= 0));
	if (e == BODY_OK)
		CHECK((long long)bytes == n);
	CHECK((body_check_images(root, NULL, 0) == BODY_OK) ==
	    ref_images(root));
	CHECK((body_check_files(root, NULL, 0) == BODY_OK) == ref_files(root));
	CHECK((body_check_turn(root, NULL, 0) == BODY_OK) == ref_turn(root));
	for (it = root->child; it != NULL; it = it->next) {
		CHECK((body_check_image(it, NULL, NULL, 0) == BODY_OK) ==
		    (ref_image(it) >= 0));
		CHECK((body_check_images(it, NULL, 0) == BODY_OK) ==
		    ref_images(it));
		CHECK((body_check_files(it, NULL, 0) == BODY_OK) ==
		    ref_files(it));
	}
}

/* A turn that passes, rebuilt from its fields, comes out the same. */
static void
fuzz_rebuild(const cJSON *root)
{
	struct body_turn	 bt;
	const cJSON		*au;
	enum body_err		 e;
	cJSON			*again;
	char			*json;

	if (root == NULL || body_check_turn(root, NULL, 0) != BODY_OK)
		return;
	au = ref_get(root, "author");
	memset(&bt, 0, sizeof(bt));
	if (ref_get(au, "principalId") != NULL)
		bt.bt_principal_id = ref_get(au, "principalId")->valuestring;
	if (ref_get(root, "memoryVisibility") != NULL)
		bt.bt_memory_visibility = ref_get(root,
		    "memoryVisibility")->valuestring;
	bt.bt_turn_id = ref_get(root, "turnId")->valuestring;
	bt.bt_author_id = ref_get(au, "id")->valuestring;
	bt.bt_author_name = ref_get(au, "name")->valuestring;
	bt.bt_text = ref_get(root, "text")->valuestring;
	bt.bt_memory = ref_get(root, "memory")->valuestring;
	bt.bt_images = ref_get(root, "images");
	bt.bt_thinking = ref_get(root, "thinking")->valuestring;
	json = body_build_turn(&bt, &e, NULL, 0);
	CHECK(e == BODY_OK && json != NULL);
	CHECK(body_parse(json, strlen(json), &again, NULL, 0) == BODY_OK);
	CHECK(cJSON_Compare(root, again, 1));
	cJSON_Delete(again);
	cJSON_free(json);
}

/* The input cut at '\n' into turnId, id, name, text, memory, thinking. */
static void
fuzz_build(const uint8_t *data, size_t size)
{
	struct body_turn	 bt;
	const char		*f[6];
	enum body_err		 e;
	cJSON			*t;
	char			*copy, *p, *nl, *json, err[128];
	size_t			 i;
	int			 want;

	if ((copy = malloc(size + 1)) == NULL)
		return;
	memcpy(copy, data, size);
	copy[size] = '\0';
	for (i = 0, p = copy; i < 6; i++) {
		f[i] = p;
		if (p != NULL && (nl = strchr(p, '\n')) != NULL) {
			*nl = '\0';
			p = nl + 1;
		} else
			p = NULL;
	}
	memset(&bt, 0, sizeof(bt));
	bt.bt_turn_id = f[0];
	bt.bt_author_id = f[1];
	bt.bt_author_name = f[2];
	bt.bt_text = f[3];
	bt.bt_memory = f[4];
	bt.bt_images = NULL;
	bt.bt_thinking = f[5];

	want = f[5] != NULL &&
	    valid_safe_name(f[0], strlen(f[0])) &&
	    utf8_text_check(f[1], strlen(f[1]), 256) == 0 &&
	    utf8_text_check(f[2], strlen(f[2]), 256) == 0 &&
	    utf8_text_check(f[3], strlen(f[3]), 100000) == 0 &&
	    utf8_text_check(f[4], strlen(f[4]), 100000) == 0 &&
	    valid_thinking(f[5], strlen(f[5]));
	json = body_build_turn(&bt, &e, err, sizeof(err));
	CHECK((json != NULL) == want);
	CHECK((e == BODY_OK) == want);
	CHECK((e == BODY_OK) == (err[0] == '\0'));
	if (json != NULL) {
		CHECK(body_parse(json, strlen(json), &t, NULL, 0) == BODY_OK);
		CHECK(body_check_turn(t, NULL, 0) == BODY_OK);
		CHECK(strcmp(ref_get(t, "turnId")->valuestring, f[0]) == 0);
		CHECK(strcmp(ref_get(ref_get(t, "author"), "id")->valuestring,
		    f[1]) == 0);
		CHECK(strcmp(ref_get(ref_get(t, "author"), "name")->valuestring,
		    f[2]) == 0);
		CHECK(strcmp(ref_get(t, "text")->valuestring, f[3]) == 0);
		CHECK(strcmp(ref_get(t, "memory")->valuestring, f[4]) == 0);
		CHECK(ref_count(ref_get(t, "images")) == 0);
		CHECK(strcmp(ref_get(t, "thinking")->valuestring, f[5]) == 0);
		cJSON_Delete(t);
		cJSON_free(json);
	}
	free(copy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*s = (const char *)data;
	const cJSON	*tid;
	enum body_err	 e;
	cJSON		*root;
	char		 err[128];
	int		 valid;

	valid = size > 0 && ref_json(data, size) == 0;
	e = body_parse(s, size, &root, err, sizeof(err));
	CHECK((e == BODY_OK) == valid);
	CHECK((e == BODY_OK) == (root != NULL));
	CHECK(e == BODY_OK || e == BODY_INVALID_JSON);
	CHECK((e == BODY_OK) == (err[0] == '\0'));

	fuzz_parse(s, size, root);
	fuzz_result(s, size, root, "t1");
	fuzz_result(s, size, root, NULL);
	/* The body's own id reaches the rules past the 409s. */
	if (root != NULL && cJSON_IsObject(root) &&
	    cJSON_IsString(tid = ref_get(root, "turnId")))
		fuzz_result(s, size, root, tid->valuestring);
	fuzz_answer(s, size, root);
	fuzz_ready(s, size, root);
	fuzz_tool_input(s, size, root);
	fuzz_trees(root);
	fuzz_rebuild(root);
	fuzz_build(data, size);

	cJSON_Delete(root);
	return 0;
}
