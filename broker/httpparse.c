/*
 * Request heads and chunked bodies (RFC 9112), read strictly: every line ends
 * in CRLF, no obs-fold, one framing, origin-form targets only.  Anything a
 * lenient server would guess about is refused, so the broker never reads a
 * request differently from the worker's client or the router.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "httpparse.h"
#include "limits.h"
#include "validate.h"

struct hp_span {
	size_t	 off;
	size_t	 len;
};

struct hp_field {
	struct hp_span	 name;
	struct hp_span	 value;
};

/* What the lines told so far, before anything is copied. */
struct hp_scan {
	struct hp_span	 method;
	struct hp_span	 target;
	struct hp_span	 path;
	struct hp_span	 query;
	int		 has_query;
	int		 has_fragment;
	int		 minor;
	size_t		 nfields;
	int		 ncl;
	uint64_t	 cl;
	int		 nte;
	int		 nhost;
	/* Last, and not cleared (3.2 KiB): only the first nfields are
	 * read, each after it was written whole. */
	struct hp_field	 fields[HTTP_FIELDS_MAX];
};

const char *
hp_err_to_string(enum hp_err err)
{
	switch (err) {
	case HP_OK:
		return "no error";
	case HP_ERR_TOO_LARGE:
		return "request head too large";
	case HP_ERR_LINE:
		return "line not ended by CRLF";
	case HP_ERR_METHOD:
		return "invalid method";
	case HP_ERR_TARGET:
		return "invalid request target";
	case HP_ERR_VERSION:
		return "unsupported HTTP version";
	case HP_ERR_FIELD_NAME:
		return "invalid header name";
	case HP_ERR_FIELD_VALUE:
		return "invalid header value";
	case HP_ERR_OBS_FOLD:
		return "folded header line";
	case HP_ERR_TOO_MANY_FIELDS:
		return "too many header fields";
	case HP_ERR_CONTENT_LENGTH:
		return "invalid content-length";
	case HP_ERR_TRANSFER_ENCODING:
		return "invalid transfer-encoding";
	case HP_ERR_FRAMING:
		return "both content-length and transfer-encoding";
	case HP_ERR_HOST:
		return "missing or repeated host";
	case HP_ERR_NOMEM:
		return "out of memory";
	}
	return "unknown head error";
}

const char *
hc_err_to_string(enum hc_err err)
{
	switch (err) {
	case HC_OK:
		return "no error";
	case HC_ERR_SIZE:
		return "invalid chunk size";
	case HC_ERR_LINE_TOO_LONG:
		return "chunk size line too long";
	case HC_ERR_EXTENSION:
		return "invalid chunk extension";
	case HC_ERR_CRLF:
		return "missing CRLF in chunked body";
	case HC_ERR_TRAILER:
		return "invalid trailer line";
	case HC_ERR_TRAILER_TOO_LARGE:
		return "trailer too large";
	case HC_ERR_TOO_LARGE:
		return "chunked body too large";
	case HC_ERR_CALLBACK:
		return "chunk data refused";
	}
	return "unknown chunked error";
}

/* field-vchar, obs-text, SP and HTAB: no other control character. */
static int
is_vchar(unsigned char c)
{
	return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static int
is_ows(unsigned char c)
{
	return c == ' ' || c == '\t';
}

static int
name_is(const char *s, size_t len, const char *lname)
{
	return strlen(lname) == len && strncasecmp(s, lname, len) == 0;
}

static enum hp_err
parse_request_line(const char *buf, size_t off, size_t len,
    struct hp_scan *sc)
{
	const unsigned char	*s = (const unsigned char *)buf + off;
	size_t			 i, t, end;

	for (i = 0; i < len && http_tchar(s[i]); i++)
		;
	if (len == 0)
		return HP_ERR_LINE;
	if (i == 0 || i == len || s[i] != ' ')
		return HP_ERR_METHOD;
	sc->method.off = off;
	sc->method.len = i;

	t = ++i;
	while (i < len && s[i] >= 0x21 && s[i] <= 0x7e)
		i++;
	if (i == t || i == len || s[i] != ' ' || s[t] != '/')
		return HP_ERR_TARGET;
	sc->target.off = off + t;
	sc->target.len = i - t;

	end = i;
	sc->path.off = off + t;
	while (t < end && s[t] != '?' && s[t] != '#')
		t++;
	sc->path.len = off + t - sc->path.off;
	sc->query.off = off + t;
	if (t < end && s[t] == '?') {
		sc->has_query = 1;
		sc->query.off = off + ++t;
		while (t < end && s[t] != '#')
			t++;
	}
	sc->query.len = off + t - sc->query.off;
	sc->has_fragment = t < end;

	i++;
	if (len - i != 8 || memcmp(s + i, "HTTP/1.", 7) != 0 ||
	    (s[i + 7] != '0' && s[i + 7] != '1'))
		return HP_ERR_VERSION;
	sc->minor = s[i + 7] - '0';
	return HP_OK;
}

static enum hp_err
parse_content_length(const char *s, size_t len, struct hp_scan *sc)
{
	uint64_t	 v = 0;
	size_t		 i;

	if (len == 0)
		return HP_ERR_CONTENT_LENGTH;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return HP_ERR_CONTENT_LENGTH;
		if ((v = v * 10 + (uint64_t)(s[i] - '0')) > HTTP_LENGTH_MAX)
			return HP_ERR_CONTENT_LENGTH;
	}
	if (sc->ncl++ > 0 && v != sc->cl)
		return HP_ERR_CONTENT_LENGTH;
	sc->cl = v;
	return HP_OK;
}

static enum hp_err
parse_field(const char *buf, size_t off, size_t len, struct hp_scan *sc)
{
	const unsigned char	*s = (const unsigned char *)buf + off;
	struct hp_field		*f;
	size_t			 i, j, v, end;
	enum hp_err		 err;

	if (is_ows(s[0]))
		return HP_ERR_OBS_FOLD;
	for (i = 0; i < len && http_tchar(s[i]); i++)
		;
	if (i == 0 || i == len || s[i] != ':')
		return HP_ERR_FIELD_NAME;
	for (v = i + 1; v < len && is_ows(s[v]); v++)
		;
	for (end = len; end > v && is_ows(s[end - 1]); end--)
		;
	for (j = v; j < end; j++)
		if (!is_vchar(s[j]))
			return HP_ERR_FIELD_VALUE;
	if (sc->nfields == HTTP_FIELDS_MAX)
		return HP_ERR_TOO_MANY_FIELDS;
	f = &sc->fields[sc->nfields++];
	f->name.off = off;
	f->name.len = i;
	f->value.off = off + v;
	f->value.len = end - v;

	if (name_is((const char *)s, i, "content-length")) {
		if ((err = parse_content_length((const char *)s + v, end - v,
		    sc)) != HP_OK)
			return err;
	} else if (name_is((const char *)s, i, "transfer-encoding")) {
		if (sc->nte++ > 0 ||
		    !name_is((const char *)s + v, end - v, "chunked"))
			return HP_ERR_TRANSFER_ENCODING;
	} else if (name_is((const char *)s, i, "host")) {
		if (sc->nhost++ > 0)
			return HP_ERR_HOST;
	}
	return HP_OK;
}

static enum hp_status
head_fail(struct http_head *h, enum hp_err err)
{
	h->h_err = err;
	return HP_ERROR;
}

/*
 * One allocation: the field array, a copy of the head bytes in which every
 * piece is NUL-terminated where a delimiter (SP, ':', '?', '#', OWS or CR)
 * stood, and a copy of the target, which overlaps the path and query.
 */
static enum hp_status
head_build(const char *buf, struct hp_scan *sc, struct http_head *h)
{
	struct http_hdr	*hdrs;
	char		*copy, *target;
	size_t		 i, j, fbytes;

	fbytes = sc->nfields * sizeof(*hdrs);
	if ((h->h_arena = malloc(fbytes + h->h_len + sc->target.len + 1)) ==
	    NULL)
		return head_fail(h, HP_ERR_NOMEM);
	hdrs = h->h_arena;
	copy = (char *)h->h_arena + fbytes;
	target = copy + h->h_len;
	memcpy(copy, buf, h->h_len);
	memcpy(target, buf + sc->target.off, sc->target.len);
	target[sc->target.len] = '\0';

	copy[sc->method.len] = '\0';
	copy[sc->path.off + sc->path.len] = '\0';
	copy[sc->query.off + sc->query.len] = '\0';
	h->h_method = copy;
	h->h_target = target;
	h->h_path = copy + sc->path.off;
	h->h_query = sc->has_query ? copy + sc->query.off : "";
	for (i = 0; i < sc->nfields; i++) {
		struct hp_field	*f = &sc->fields[i];

		for (j = 0; j < f->name.len; j++)
			if (copy[f->name.off + j] >= 'A' &&
			    copy[f->name.off + j] <= 'Z')
				copy[f->name.off + j] += 'a' - 'A';
		copy[f->name.off + f->name.len] = '\0';
		copy[f->value.off + f->value.len] = '\0';
		hdrs[i].name = copy + f->name.off;
		hdrs[i].value = copy + f->value.off;
	}
	h->h_fields = hdrs;
	h->h_nfields = sc->nfields;
	return HP_DONE;
}

enum hp_status
http_parse_head(const char *buf, size_t len, struct http_head *h)
{
	struct hp_scan	 sc;
	const char	*nlp;
	size_t		 lim, pos, nl;
	enum hp_err	 err;

	memset(h, 0, sizeof(*h));
	memset(&sc, 0, offsetof(struct hp_scan, fields));
	lim = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;
	for (pos = 0;; pos = nl + 1) {
		if ((nlp = memchr(buf + pos, '\n', lim - pos)) == NULL)
			return len > HTTP_HEAD_MAX ?
			    head_fail(h, HP_ERR_TOO_LARGE) : HP_MORE;
		nl = nlp - buf;
		if (nl == pos || buf[nl - 1] != '\r')
			return head_fail(h, HP_ERR_LINE);
		if (pos == 0)
			err = parse_request_line(buf, pos, nl - 1 - pos, &sc);
		else if (nl - 1 == pos)
			break;
		else
			err = parse_field(buf, pos, nl - 1 - pos, &sc);
		if (err != HP_OK)
			return head_fail(h, err);
	}

	if (sc.ncl > 0 && sc.nte > 0)
		return head_fail(h, HP_ERR_FRAMING);
	if (sc.nte > 0 && sc.minor == 0)
		return head_fail(h, HP_ERR_TRANSFER_ENCODING);
	if (sc.nhost == 0 && sc.minor == 1)
		return head_fail(h, HP_ERR_HOST);
	h->h_len = nl + 1;
	h->h_has_query = sc.has_query;
	h->h_has_fragment = sc.has_fragment;
	h->h_minor = sc.minor;
	if (sc.nte > 0)
		h->h_framing = HTTP_BODY_CHUNKED;
	else if (sc.ncl > 0) {
		h->h_framing = HTTP_BODY_LENGTH;
		h->h_content_length = sc.cl;
	}
	return head_build(buf, &sc, h);
}

void
http_head_free(struct http_head *h)
{
	free(h->h_arena);
	memset(h, 0, sizeof(*h));
}

const char *
http_head_get(const struct http_head *h, const char *name)
{
	size_t	 i;

	for (i = 0; i < h->h_nfields; i++)
		if (strcmp(h->h_fields[i].name, name) == 0)
			return h->h_fields[i].value;
	return NULL;
}

int
http_field_valid(const char *name, const char *value)
{
	const unsigned char	*p;

	if (*name == '\0')
		return 0;
	for (p = (const unsigned char *)name; *p != '\0'; p++)
		if (!http_tchar(*p))
			return 0;
	for (p = (const unsigned char *)value; *p != '\0'; p++)
		if (!is_vchar(*p))
			return 0;
	return 1;
}

int
http_value_copyable(const char *value, size_t max_chars)
{
	const unsigned char	*p;
	size_t			 len;

	/* No char takes more than 3 bytes: nothing longer needs reading. */
	len = strnlen(value, UTF8_BYTES_MAX(max_chars) + 1);
	if (len > UTF8_BYTES_MAX(max_chars) ||
	    utf8_text_check(value, len, max_chars) == -1)
		return 0;
	for (p = (const unsigned char *)value; *p != '\0'; p++)
		if (!is_vchar(*p))
			return 0;
	return 1;
}

enum {
	HC_S_SIZE,		/* hex digits */
	HC_S_SIZE_WS,		/* white space after the digits */
	HC_S_EXT,		/* extensions, ignored up to CR */
	HC_S_SIZE_LF,
	HC_S_DATA,
	HC_S_DATA_CR,
	HC_S_DATA_LF,
	HC_S_TRAILER,		/* start of a trailer line or the last CRLF */
	HC_S_TRAILER_NAME,
	HC_S_TRAILER_VALUE,
	HC_S_TRAILER_LF,
	HC_S_END_LF,
	HC_S_DONE,
	HC_S_ERROR,
};

void
http_chunked_init(struct http_chunked *st, uint64_t max)
{
	memset(st, 0, sizeof(*st));
	st->hc_state = HC_S_SIZE;
	st->hc_max = max;
}

static enum hp_status
chunked_fail(struct http_chunked *st, enum hc_err err, size_t *consumed,
    size_t at)
{
	st->hc_state = HC_S_ERROR;
	st->hc_err = err;
	*consumed = at;
	return HP_ERROR;
}

enum hp_status
http_chunked_feed(struct http_chunked *st, const char *in, size_t len,
    size_t *consumed, http_chunked_cb cb, void *arg)
{
	const unsigned char	*s = (const unsigned char *)in;
	size_t			 i, k;
	uint64_t		 size;
	int			 d;

	*consumed = 0;
	if (st->hc_state == HC_S_DONE)
		return HP_DONE;
	if (st->hc_state == HC_S_ERROR)
		return HP_ERROR;
	for (i = 0; i < len; i++) {
		unsigned char	 c = s[i];

		switch (st->hc_state) {
		case HC_S_SIZE:
			if ((d = hex_digit(c)) != -1) {
				size = st->hc_size * 16 + (uint64_t)d;
				if (size > HTTP_LENGTH_MAX)
					return chunked_fail(st, HC_ERR_SIZE,
					    consumed, i);
				if (size > st->hc_max - st->hc_total)
					return chunked_fail(st,
					    HC_ERR_TOO_LARGE, consumed, i);
				st->hc_size = size;
				break;
			}
			if (st->hc_line == 0)
				return chunked_fail(st, HC_ERR_SIZE, consumed,
				    i);
			if (c == '\r')
				st->hc_state = HC_S_SIZE_LF;
			else if (c == ';')
				st->hc_state = HC_S_EXT;
			else if (is_ows(c))
				st->hc_state = HC_S_SIZE_WS;
			else
				return chunked_fail(st, HC_ERR_SIZE, consumed,
				    i);
			break;
		case HC_S_SIZE_WS:
			if (c == '\r')
				st->hc_state = HC_S_SIZE_LF;
			else if (c == ';')
				st->hc_state = HC_S_EXT;
			else if (!is_ows(c))
				return chunked_fail(st, HC_ERR_EXTENSION,
				    consumed, i);
			break;
		case HC_S_EXT:
			if (c == '\r')
				st->hc_state = HC_S_SIZE_LF;
			else if (!is_vchar(c))
				return chunked_fail(st, HC_ERR_EXTENSION,
				    consumed, i);
			break;
		case HC_S_SIZE_LF:
			if (c != '\n')
				return chunked_fail(st, HC_ERR_CRLF, consumed,
				    i);
			st->hc_total += st->hc_size;
			st->hc_line = 0;
			st->hc_state = st->hc_size == 0 ? HC_S_TRAILER :
			    HC_S_DATA;
			continue;
		case HC_S_DATA:
			k = len - i;
			if (k > st->hc_size)
				k = st->hc_size;
			if (cb != NULL && cb(arg, in + i, k) == -1)
				return chunked_fail(st, HC_ERR_CALLBACK,
				    consumed, i);
			st->hc_size -= k;
			if (st->hc_size == 0)
				st->hc_state = HC_S_DATA_CR;
			i += k - 1;
			continue;
		case HC_S_DATA_CR:
			if (c != '\r')
				return chunked_fail(st, HC_ERR_CRLF, consumed,
				    i);
			st->hc_state = HC_S_DATA_LF;
			continue;
		case HC_S_DATA_LF:
			if (c != '\n')
				return chunked_fail(st, HC_ERR_CRLF, consumed,
				    i);
			st->hc_state = HC_S_SIZE;
			continue;
		case HC_S_TRAILER:
			if (c == '\r') {
				st->hc_state = HC_S_END_LF;
				continue;
			}
			if (!http_tchar(c))
				return chunked_fail(st, HC_ERR_TRAILER,
				    consumed, i);
			st->hc_state = HC_S_TRAILER_NAME;
			break;
		case HC_S_TRAILER_NAME:
			if (c == ':')
				st->hc_state = HC_S_TRAILER_VALUE;
			else if (!http_tchar(c))
				return chunked_fail(st, HC_ERR_TRAILER,
				    consumed, i);
			break;
		case HC_S_TRAILER_VALUE:
			if (c == '\r')
				st->hc_state = HC_S_TRAILER_LF;
			else if (!is_vchar(c))
				return chunked_fail(st, HC_ERR_TRAILER,
				    consumed, i);
			break;
		case HC_S_TRAILER_LF:
			if (c != '\n')
				return chunked_fail(st, HC_ERR_TRAILER,
				    consumed, i);
			st->hc_state = HC_S_TRAILER;
			break;
		case HC_S_END_LF:
			if (c != '\n')
				return chunked_fail(st, HC_ERR_CRLF, consumed,
				    i);
			st->hc_state = HC_S_DONE;
			*consumed = i + 1;
			return HP_DONE;
		}

		/* Bytes of a size line or of the trailer, which are bounded. */
		if (st->hc_state == HC_S_SIZE || st->hc_state == HC_S_SIZE_WS ||
		    st->hc_state == HC_S_EXT) {
			if (++st->hc_line > HTTP_CHUNK_LINE_MAX)
				return chunked_fail(st, HC_ERR_LINE_TOO_LONG,
				    consumed, i);
		} else if (st->hc_state >= HC_S_TRAILER &&
		    st->hc_state <= HC_S_TRAILER_LF &&
		    ++st->hc_trailer > HTTP_TRAILER_MAX)
			return chunked_fail(st, HC_ERR_TRAILER_TOO_LARGE,
			    consumed, i);
	}
	*consumed = len;
	return HP_MORE;
}

const char *
http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 204: return "No Content";
	case 205: return "Reset Content";
	case 206: return "Partial Content";
	case 301: return "Moved Permanently";
	case 302: return "Found";
	case 303: return "See Other";
	case 304: return "Not Modified";
	case 307: return "Temporary Redirect";
	case 308: return "Permanent Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Content";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	}
	/* The reason phrase may be empty (RFC 9112 4). */
	return "";
}

static char *
head_put(char *d, const char *s, size_t n)
{
	memcpy(d, s, n);
	return d + n;
}

/* Writes the head to d when d is not NULL; its length either way. */
static size_t
answer_head(char *d, int status, const char *ctype,
    const struct http_hdr *hdrs, size_t n, const char *framing)
{
	static const char	 end[] = "connection: close\r\n\r\n";
	const char		*reason = http_reason(status);
	char			 code[4], *s = d;
	size_t			 len = 0, i, k;

	code[0] = '0' + status / 100 % 10;
	code[1] = '0' + status / 10 % 10;
	code[2] = '0' + status % 10;
	code[3] = ' ';
#define HEAD_PUT(p, l)	do {						\
	k = (l);							\
	if (s != NULL)							\
		s = head_put(s, (p), k);				\
	len += k;							\
} while (0)
	HEAD_PUT("HTTP/1.1 ", 9);
	HEAD_PUT(code, 4);
	HEAD_PUT(reason, strlen(reason));
	HEAD_PUT("\r\n", 2);
	if (ctype != NULL) {
		HEAD_PUT("content-type: ", 14);
		HEAD_PUT(ctype, strlen(ctype));
		HEAD_PUT("\r\n", 2);
	}
	for (i = 0; i < n; i++) {
		HEAD_PUT(hdrs[i].name, strlen(hdrs[i].name));
		HEAD_PUT(": ", 2);
		HEAD_PUT(hdrs[i].value, strlen(hdrs[i].value));
		HEAD_PUT("\r\n", 2);
	}
	if (framing != NULL)
		HEAD_PUT(framing, strlen(framing));
	HEAD_PUT(end, sizeof(end) - 1);
#undef HEAD_PUT
	return len;
}

size_t
http_answer_head_size(int status, const char *ctype,
    const struct http_hdr *hdrs, size_t n, const char *framing)
{
	return answer_head(NULL, status, ctype, hdrs, n, framing);
}

size_t
http_answer_head(char *d, int status, const char *ctype,
    const struct http_hdr *hdrs, size_t n, const char *framing)
{
	return answer_head(d, status, ctype, hdrs, n, framing);
}
