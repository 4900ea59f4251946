/*
 * The reader of an HTTP/1.1 answer (resp.h).
 *
 * Lines end at LF, with or without CR before it; a line cut by the end of
 * a buffer is kept in rs_line until its end comes.  Header lines are stored
 * as they come, names lowercased and values trimmed, a folded line joined
 * to the value before it with one space.  Body bytes are moved down over
 * the framing in front of them, so the caller hands them on as one piece.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "resp.h"

#define RESP_HBUF_INITIAL	1024
/* Content-Length and chunk sizes above this are refused. */
#define RESP_SIZE_MAX		(UINT64_C(1) << 62)

enum {
	S_STATUS,
	S_HEADER,
	S_LENGTH,
	S_CHUNK_SIZE,
	S_CHUNK_DATA,
	S_CHUNK_END,
	S_TRAILER,
	S_CLOSE,
	S_DONE,
	S_ERROR,
};

void
resp_init(struct resp *rs)
{
	memset(rs, 0, offsetof(struct resp, rs_hoff));
	rs->rs_state = S_STATUS;
}

void
resp_free(struct resp *rs)
{
	free(rs->rs_hbuf);
	free(rs->rs_line);
	rs->rs_hbuf = rs->rs_line = NULL;
	rs->rs_hlen = rs->rs_hcap = rs->rs_llen = rs->rs_lcap = 0;
}

static enum resp_status
resp_fail(struct resp *rs, const char *why)
{
	rs->rs_state = S_ERROR;
	if (rs->rs_err == NULL)
		rs->rs_err = why;
	return RESP_ERROR;
}

static int
is_space(char ch)
{
	return ch == ' ' || ch == '\t';
}

static void
trim(const char **s, size_t *n)
{
	while (*n > 0 && is_space(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && is_space((*s)[*n - 1]))
		(*n)--;
}

/* The longest line the current state takes. */
static size_t
line_max(const struct resp *rs)
{
	/* A header line holds a name and a value, and ": " between. */
	return rs->rs_state == S_HEADER ? RESP_HDR_BYTES_MAX + 8 :
	    RESP_LINE_MAX;
}

/*
 * The next whole line at buf[*pos..len): 1 with *line and *n set (CR LF or
 * LF cut off) and *pos past it; 0 when the line goes on past len (kept);
 * -1 when it is longer than the state allows, -2 when memory ran out.
 */
static int
next_line(struct resp *rs, const uint8_t *buf, size_t len, size_t *pos,
    const char **line, size_t *n)
{
	const uint8_t	*nl;
	size_t		 k, max = line_max(rs);
	char		*p;

	nl = memchr(buf + *pos, '\n', len - *pos);
	k = nl != NULL ? (size_t)(nl - (buf + *pos)) : len - *pos;
	if (rs->rs_llen + k > max)
		return -1;
	if (nl == NULL || rs->rs_llen > 0) {
		if (rs->rs_llen + k > rs->rs_lcap) {
			size_t cap = rs->rs_lcap == 0 ? 256 : rs->rs_lcap;

			while (cap < rs->rs_llen + k)
				cap *= 2;
			if (cap > max)
				cap = max;
			if ((p = realloc(rs->rs_line, cap)) == NULL)
				return -2;
			rs->rs_line = p;
			rs->rs_lcap = cap;
		}
		if (k > 0)
			memcpy(rs->rs_line + rs->rs_llen, buf + *pos, k);
		rs->rs_llen += k;
		if (nl == NULL) {
			*pos = len;
			return 0;
		}
		*line = rs->rs_line;
		*n = rs->rs_llen;
		rs->rs_llen = 0;
	} else {
		*line = (const char *)buf + *pos;
		*n = k;
	}
	*pos += k + 1;
	if (*n > 0 && (*line)[*n - 1] == '\r')
		(*n)--;
	return 1;
}

/* "HTTP/1.1 200 OK": the version, one or more spaces, three digits. */
static int
status_line(struct resp *rs, const char *s, size_t n)
{
	size_t	 i = 8;

	if (n < 8 || memcmp(s, "HTTP/1.", 7) != 0 ||
	    (s[7] != '0' && s[7] != '1'))
		return -1;
	if (i < n && s[i] != ' ')
		return -1;
	while (i < n && s[i] == ' ')
		i++;
	if (n - i < 3 || (n - i > 3 && s[i + 3] != ' '))
		return -1;
	if (s[i] < '1' || s[i] > '9' || s[i + 1] < '0' || s[i + 1] > '9' ||
	    s[i + 2] < '0' || s[i + 2] > '9')
		return -1;
	rs->rs_minor = s[7] - '0';
	rs->rs_status = (s[i] - '0') * 100 + (s[i + 1] - '0') * 10 +
	    (s[i + 2] - '0');
	rs->rs_hlen = 0;
	rs->rs_nhdrs = 0;
	return 0;
}

/* Room for need more bytes of header block, within the limit. */
static int
hbuf_reserve(struct resp *rs, size_t need)
{
	size_t	 cap;
	char	*p;

	if (need > RESP_HDR_BYTES_MAX - rs->rs_hlen)
		return -1;
	if (rs->rs_hlen + need <= rs->rs_hcap)
		return 0;
	cap = rs->rs_hcap == 0 ? RESP_HBUF_INITIAL : rs->rs_hcap;
	while (cap < rs->rs_hlen + need)
		cap *= 2;
	if (cap > RESP_HDR_BYTES_MAX)
		cap = RESP_HDR_BYTES_MAX;
	if ((p = realloc(rs->rs_hbuf, cap)) == NULL)
		return -1;
	rs->rs_hbuf = p;
	rs->rs_hcap = cap;
	return 0;
}

static enum resp_status
header_line(struct resp *rs, const char *s, size_t n)
{
	const char	*colon, *v;
	size_t		 i, namelen, vlen;
	char		*d;

	if (memchr(s, '\0', n) != NULL)
		return resp_fail(rs, "NUL in a response header");
	if (is_space(s[0])) {
		/* obs-fold: joins the previous value, stored last. */
		if (rs->rs_nhdrs == 0)
			return resp_fail(rs,
			    "response header block starts folded");
		v = s;
		vlen = n;
		trim(&v, &vlen);
		if (hbuf_reserve(rs, vlen + 1) == -1)
			return resp_fail(rs, "response headers too large");
		if (vlen > 0) {
			d = rs->rs_hbuf + rs->rs_hlen - 1;
			/* No space after an empty value. */
			if (rs->rs_hoff[rs->rs_nhdrs - 1][1] !=
			    rs->rs_hlen - 1) {
				*d++ = ' ';
				rs->rs_hlen++;
			}
			memcpy(d, v, vlen);
			d[vlen] = '\0';
			rs->rs_hlen += vlen;
		}
		return RESP_MORE;
	}
	if ((colon = memchr(s, ':', n)) == NULL || colon == s)
		return resp_fail(rs, "malformed response header");
	namelen = colon - s;
	v = colon + 1;
	vlen = n - namelen - 1;
	trim(&v, &vlen);
	if (rs->rs_nhdrs == RESP_HDRS_MAX ||
	    hbuf_reserve(rs, namelen + vlen + 2) == -1)
		return resp_fail(rs, "response headers too large");
	rs->rs_hoff[rs->rs_nhdrs][0] = rs->rs_hlen;
	d = rs->rs_hbuf + rs->rs_hlen;
	for (i = 0; i < namelen; i++)
		d[i] = (s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i];
	d[namelen] = '\0';
	rs->rs_hoff[rs->rs_nhdrs][1] = rs->rs_hlen + namelen + 1;
	memcpy(d + namelen + 1, v, vlen);
	d[namelen + 1 + vlen] = '\0';
	rs->rs_hlen += namelen + vlen + 2;
	rs->rs_nhdrs++;
	return RESP_MORE;
}

/* Calls fn on each comma-separated element of v, trimmed; stops at -1. */
static int
each_element(const char *v, int (*fn)(const char *, size_t, void *),
    void *arg)
{
	const char	*e, *s;
	size_t		 n;

	for (;;) {
		e = strchr(v, ',');
		n = e != NULL ? (size_t)(e - v) : strlen(v);
		s = v;
		trim(&s, &n);
		if (n > 0 && fn(s, n, arg) == -1)
			return -1;
		if (e == NULL)
			return 0;
		v = e + 1;
	}
}

struct framing_scan {
	int		 fs_chunked_last;	/* the last coding so far */
	int		 fs_codings;
	int		 fs_bad;		/* chunked before another */
	int		 fs_close;
	int		 fs_has_length;
	uint64_t	 fs_length;
};

static int
scan_coding(const char *s, size_t n, void *arg)
{
	struct framing_scan	*fs = arg;

	if (fs->fs_chunked_last)
		fs->fs_bad = 1;
	fs->fs_codings++;
	fs->fs_chunked_last = n == 7 && strncasecmp(s, "chunked", 7) == 0;
	return 0;
}

static int
scan_connection(const char *s, size_t n, void *arg)
{
	struct framing_scan	*fs = arg;

	if (n == 5 && strncasecmp(s, "close", 5) == 0)
		fs->fs_close = 1;
	return 0;
}

static int
scan_length(const char *s, size_t n, void *arg)
{
	struct framing_scan	*fs = arg;
	uint64_t		 v = 0;
	size_t			 i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9' || v > RESP_SIZE_MAX / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (fs->fs_has_length && fs->fs_length != v)
		return -1;
	fs->fs_has_length = 1;
	fs->fs_length = v;
	return 0;
}

/* The final header block is in: how its body is framed. */
static enum resp_status
decide_framing(struct resp *rs)
{
	struct framing_scan	 fs;
	const char		*name, *value;
	size_t			 i;

	memset(&fs, 0, sizeof(fs));
	for (i = 0; i < rs->rs_nhdrs; i++) {
		name = rs->rs_hbuf + rs->rs_hoff[i][0];
		value = rs->rs_hbuf + rs->rs_hoff[i][1];
		if (strcmp(name, "transfer-encoding") == 0)
			(void)each_element(value, scan_coding, &fs);
		else if (strcmp(name, "connection") == 0)
			(void)each_element(value, scan_connection, &fs);
		else if (strcmp(name, "content-length") == 0 &&
		    (value[0] == '\0' ||
		    each_element(value, scan_length, &fs) == -1))
			return resp_fail(rs, "bad Content-Length");
	}
	if (fs.fs_bad)
		return resp_fail(rs, "chunked is not the last coding");
	rs->rs_has_length = fs.fs_has_length;
	rs->rs_length = fs.fs_length;
	if (rs->rs_status == 204 || rs->rs_status == 304) {
		rs->rs_framing = RESP_NONE;
		rs->rs_state = S_DONE;
	} else if (fs.fs_codings > 0) {
		/* Transfer-Encoding overrides Content-Length (RFC 9112 6.3). */
		rs->rs_has_length = 0;
		rs->rs_framing = fs.fs_chunked_last ? RESP_CHUNKED : RESP_CLOSE;
		rs->rs_state = fs.fs_chunked_last ? S_CHUNK_SIZE : S_CLOSE;
	} else if (fs.fs_has_length) {
		rs->rs_framing = RESP_LENGTH;
		rs->rs_left = fs.fs_length;
		rs->rs_state = fs.fs_length == 0 ? S_DONE : S_LENGTH;
	} else {
		rs->rs_framing = RESP_CLOSE;
		rs->rs_state = S_CLOSE;
	}
	rs->rs_keep_alive = rs->rs_minor == 1 && !fs.fs_close &&
	    rs->rs_framing != RESP_CLOSE &&
	    !(fs.fs_codings > 0 && fs.fs_has_length);
	return RESP_HEAD;
}

/* A chunk-size line: hex digits, then maybe spaces and extensions. */
static int
chunk_size(const char *s, size_t n, uint64_t *out)
{
	uint64_t	 v = 0;
	size_t		 i;
	int		 d;

	for (i = 0; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			d = s[i] - '0';
		else if (s[i] >= 'a' && s[i] <= 'f')
			d = s[i] - 'a' + 10;
		else if (s[i] >= 'A' && s[i] <= 'F')
			d = s[i] - 'A' + 10;
		else
			break;
		if (v > RESP_SIZE_MAX / 16)
			return -1;
		v = v * 16 + (uint64_t)d;
	}
	if (i == 0)
		return -1;
	while (i < n && is_space(s[i]))
		i++;
	if (i < n && s[i] != ';')
		return -1;
	*out = v;
	return 0;
}

enum resp_status
resp_feed(struct resp *rs, uint8_t *buf, size_t len, size_t *used,
    size_t *body)
{
	const char		*line;
	size_t			 pos = 0, n, k, bw = 0;
	uint64_t		 size;
	enum resp_status	 st;
	int			 r;

	*used = 0;
	*body = 0;
	for (;;) {
		switch (rs->rs_state) {
		case S_ERROR:
			return RESP_ERROR;
		case S_DONE:
			*used = pos;
			*body = bw;
			return RESP_DONE;
		case S_LENGTH:
		case S_CHUNK_DATA:
		case S_CLOSE:
			if (pos == len)
				goto more;
			k = len - pos;
			if (rs->rs_state != S_CLOSE && k > rs->rs_left)
				k = (size_t)rs->rs_left;
			if (k > 0 && bw != pos)
				memmove(buf + bw, buf + pos, k);
			bw += k;
			pos += k;
			if (rs->rs_state == S_CLOSE)
				goto more;
			rs->rs_left -= k;
			if (rs->rs_left == 0)
				rs->rs_state = rs->rs_state == S_LENGTH ?
				    S_DONE : S_CHUNK_END;
			continue;
		default:
			break;
		}
		if (pos == len)
			break;
		if ((r = next_line(rs, buf, len, &pos, &line, &n)) == 0)
			break;
		if (r == -2)
			return resp_fail(rs, "out of memory");
		if (r == -1)
			return resp_fail(rs, rs->rs_state == S_HEADER ?
			    "response headers too large" :
			    "answer line too long");
		switch (rs->rs_state) {
		case S_STATUS:
			if (status_line(rs, line, n) == -1)
				return resp_fail(rs, "bad status line");
			rs->rs_state = S_HEADER;
			break;
		case S_HEADER:
			if (n > 0) {
				if (header_line(rs, line, n) == RESP_ERROR)
					return RESP_ERROR;
				break;
			}
			/* Nothing here asks to switch protocols. */
			if (rs->rs_status == 101)
				return resp_fail(rs, "unexpected 101 answer");
			if (rs->rs_status < 200) {
				rs->rs_state = S_STATUS;
				rs->rs_hlen = 0;
				rs->rs_nhdrs = 0;
				break;
			}
			if ((st = decide_framing(rs)) != RESP_HEAD)
				return st;
			*used = pos;
			return RESP_HEAD;
		case S_CHUNK_SIZE:
			if (chunk_size(line, n, &size) == -1)
				return resp_fail(rs, "bad chunk size");
			if (size == 0) {
				rs->rs_state = S_TRAILER;
				rs->rs_trailer = 0;
			} else {
				rs->rs_left = size;
				rs->rs_state = S_CHUNK_DATA;
			}
			break;
		case S_CHUNK_END:
			if (n != 0)
				return resp_fail(rs, "chunk not followed by "
				    "its line end");
			rs->rs_state = S_CHUNK_SIZE;
			break;
		case S_TRAILER:
			if (n == 0) {
				rs->rs_state = S_DONE;
				break;
			}
			rs->rs_trailer += n;
			if (rs->rs_trailer > RESP_HDR_BYTES_MAX)
				return resp_fail(rs, "trailers too large");
			break;
		}
	}
 more:
	*used = pos;
	*body = bw;
	return RESP_MORE;
}

enum resp_status
resp_eof(struct resp *rs)
{
	switch (rs->rs_state) {
	case S_CLOSE:
	case S_DONE:
		rs->rs_state = S_DONE;
		return RESP_DONE;
	case S_ERROR:
		return RESP_ERROR;
	case S_STATUS:
		if (rs->rs_llen == 0)
			return resp_fail(rs, "no answer");
		/* FALLTHROUGH */
	case S_HEADER:
		return resp_fail(rs, "connection closed inside the header");
	default:
		return resp_fail(rs, "connection closed inside the body");
	}
}

size_t
resp_headers(const struct resp *rs, struct resp_hdr *out, size_t max)
{
	size_t	 i;

	for (i = 0; i < rs->rs_nhdrs && i < max; i++) {
		out[i].name = rs->rs_hbuf + rs->rs_hoff[i][0];
		out[i].value = rs->rs_hbuf + rs->rs_hoff[i][1];
	}
	return i;
}
