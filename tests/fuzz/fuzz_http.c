/*
 * The request head parser and the chunked decoder against arbitrary bytes,
 * cut where the input says: a prefix may only say "more", or give the whole
 * input's answer, and a body decoded in pieces or byte by byte gives what
 * it gives in one piece.  What is accepted is also checked for shape.
 *
 * Input: byte 0 picks the parser and the chunked maximum, bytes 1-4 are two
 * cut points; the rest is the stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpparse.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define NMAXIMA		(sizeof(maxima) / sizeof(maxima[0]))
#define CHECK(x)	do { if (!(x)) __builtin_trap(); } while (0)

static const uint64_t	 maxima[] = {
	0, 1, 16, 255, 4096, 65536, HTTP_LENGTH_MAX, UINT64_MAX
};

/* Parse from an allocation of exactly len bytes. */
static enum hp_status
head_parse(const uint8_t *p, size_t len, struct http_head *h)
{
	enum hp_status	 st;
	char		*copy;

	CHECK((copy = malloc(len + 1)) != NULL);
	memcpy(copy, p, len);
	st = http_parse_head(copy, len, h);
	memset(copy, 0xa5, len);
	free(copy);
	return st;
}

static void
head_shape(const struct http_head *h, size_t len)
{
	const char	*s;
	size_t		 i;

	CHECK(h->h_len >= 16 && h->h_len <= len && h->h_len <= HTTP_HEAD_MAX);
	CHECK(h->h_method[0] != '\0' && strchr(h->h_method, ' ') == NULL);
	CHECK(h->h_target[0] == '/' && h->h_path[0] == '/');
	CHECK(strncmp(h->h_target, h->h_path, strlen(h->h_path)) == 0);
	for (s = h->h_target; *s != '\0'; s++)
		CHECK(*s > 0x20 && *s < 0x7f);
	CHECK(h->h_has_query || h->h_query[0] == '\0');
	CHECK(h->h_minor == 0 || h->h_minor == 1);
	CHECK(h->h_nfields <= HTTP_FIELDS_MAX);
	for (i = 0; i < h->h_nfields; i++) {
		CHECK(h->h_fields[i].name[0] != '\0');
		for (s = h->h_fields[i].name; *s != '\0'; s++)
			CHECK(*s > 0x20 && *s < 0x7f && *s != ':' &&
			    !(*s >= 'A' && *s <= 'Z'));
		s = h->h_fields[i].value;
		CHECK(*s != ' ' && *s != '\t');
		for (; *s != '\0'; s++)
			CHECK(*s == '\t' || ((unsigned char)*s >= 0x20 &&
			    *s != 0x7f));
		CHECK(s == h->h_fields[i].value || (s[-1] != ' ' &&
		    s[-1] != '\t'));
		/* What is read as a field could be sent as one. */
		CHECK(http_field_valid(h->h_fields[i].name,
		    h->h_fields[i].value));
	}
	CHECK(h->h_framing != HTTP_BODY_CHUNKED || h->h_minor == 1);
	CHECK(h->h_framing == HTTP_BODY_LENGTH || h->h_content_length == 0);
	CHECK(h->h_content_length <= HTTP_LENGTH_MAX);
	CHECK(h->h_minor == 0 || http_head_get(h, "host") != NULL);
}

static int
head_same(const struct http_head *a, const struct http_head *b)
{
	size_t	 i;

	if (a->h_len != b->h_len || a->h_nfields != b->h_nfields ||
	    a->h_has_query != b->h_has_query ||
	    a->h_has_fragment != b->h_has_fragment ||
	    a->h_minor != b->h_minor || a->h_framing != b->h_framing ||
	    a->h_content_length != b->h_content_length ||
	    strcmp(a->h_method, b->h_method) != 0 ||
	    strcmp(a->h_target, b->h_target) != 0 ||
	    strcmp(a->h_path, b->h_path) != 0 ||
	    strcmp(a->h_query, b->h_query) != 0)
		return 0;
	for (i = 0; i < a->h_nfields; i++)
		if (strcmp(a->h_fields[i].name, b->h_fields[i].name) != 0 ||
		    strcmp(a->h_fields[i].value, b->h_fields[i].value) != 0)
			return 0;
	return 1;
}

static void
fuzz_head(const uint8_t *p, size_t len, size_t cut)
{
	struct http_head	 full, pre;
	enum hp_status		 fst, pst;

	fst = head_parse(p, len, &full);
	if (fst == HP_DONE)
		head_shape(&full, len);
	cut %= len + 1;
	pst = head_parse(p, cut, &pre);
	switch (pst) {
	case HP_MORE:
		CHECK(fst != HP_DONE || cut < full.h_len);
		break;
	case HP_ERROR:
		CHECK(fst == HP_ERROR && pre.h_err == full.h_err);
		break;
	case HP_DONE:
		CHECK(fst == HP_DONE && head_same(&pre, &full));
		http_head_free(&pre);
		break;
	}
	if (fst == HP_MORE)
		CHECK(pst == HP_MORE);
	if (fst == HP_DONE)
		http_head_free(&full);
}

struct out {
	uint8_t	*buf;
	size_t	 len;
	size_t	 cap;
};

static int
out_cb(void *arg, const char *data, size_t len)
{
	struct out	*o = arg;

	CHECK(len > 0);
	if (o->len + len > o->cap) {
		o->cap = 2 * (o->len + len);
		CHECK((o->buf = realloc(o->buf, o->cap)) != NULL);
	}
	memcpy(o->buf + o->len, data, len);
	o->len += len;
	return 0;
}

struct dec {
	enum hp_status	 st;
	enum hc_err	 err;
	size_t		 consumed;
	struct out	 out;
};

/* Feed the pieces [0,c1) [c1,c2) [c2,len), each from its own allocation;
 * step 1 feeds byte by byte instead. */
static void
chunked_run(const uint8_t *p, size_t len, uint64_t max, size_t c1, size_t c2,
    int bytewise, struct dec *d)
{
	struct http_chunked	 st;
	size_t			 cuts[3], from = 0, i, used;
	char			*piece;

	memset(d, 0, sizeof(*d));
	http_chunked_init(&st, max);
	d->st = HP_MORE;
	if (bytewise) {
		for (i = 0; i < len && d->st == HP_MORE; i++) {
			d->st = http_chunked_feed(&st, (const char *)p + i, 1,
			    &used, out_cb, &d->out);
			CHECK(used <= 1);
			d->consumed += used;
		}
	} else {
		cuts[0] = c1;
		cuts[1] = c2;
		cuts[2] = len;
		for (i = 0; i < 3 && d->st == HP_MORE; i++) {
			CHECK((piece = malloc(cuts[i] - from + 1)) != NULL);
			memcpy(piece, p + from, cuts[i] - from);
			d->st = http_chunked_feed(&st, piece, cuts[i] - from,
			    &used, out_cb, &d->out);
			free(piece);
			CHECK(used <= cuts[i] - from);
			CHECK(d->st != HP_MORE || used == cuts[i] - from);
			d->consumed += used;
			from = cuts[i];
		}
	}
	d->err = st.hc_err;
	CHECK((d->st == HP_ERROR) == (d->err != HC_OK));
	CHECK(d->out.len <= max && d->consumed <= len);
}

static void
dec_same(const struct dec *a, const struct dec *b)
{
	CHECK(a->st == b->st && a->err == b->err &&
	    a->consumed == b->consumed && a->out.len == b->out.len);
	CHECK(a->out.len == 0 || memcmp(a->out.buf, b->out.buf,
	    a->out.len) == 0);
}

static void
fuzz_chunked(const uint8_t *p, size_t len, uint64_t max, size_t c1, size_t c2)
{
	struct dec	 one, split, bytes;
	size_t		 t;

	c1 %= len + 1;
	c2 %= len + 1;
	if (c1 > c2) {
		t = c1;
		c1 = c2;
		c2 = t;
	}
	chunked_run(p, len, max, len, len, 0, &one);
	chunked_run(p, len, max, c1, c2, 0, &split);
	dec_same(&one, &split);
	free(split.out.buf);
	if (len <= 4096) {
		chunked_run(p, len, max, 0, 0, 1, &bytes);
		dec_same(&one, &bytes);
		free(bytes.out.buf);
	}
	free(one.out.buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t	 c1, c2;

	if (size < 5)
		return 0;
	c1 = (size_t)data[1] << 8 | data[2];
	c2 = (size_t)data[3] << 8 | data[4];
	if (data[0] & 1)
		fuzz_head(data + 5, size - 5, c1);
	else
		fuzz_chunked(data + 5, size - 5,
		    maxima[(data[0] >> 1) % NMAXIMA],
		    c1, c2);
	return 0;
}
