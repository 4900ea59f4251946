/*
 * The HTTP/1.1 request head and the chunked body decoder, as pure functions
 * over a buffer and a length (PROTOCOL.md 1 and 3.5): strict, bounded, and
 * the same answer however the bytes were split.
 */
#ifndef RTSANDBOX_HTTPPARSE_H
#define RTSANDBOX_HTTPPARSE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Internal bounds (PROTOCOL.md gives none): a head of at most 64 KiB
 * (request line, fields and the empty line) holds the largest header the
 * router copies (4 096 chars) many times over.
 */
#define HTTP_HEAD_MAX		65536u
#define HTTP_FIELDS_MAX		100u
/* Content-Length and chunk sizes above 2^53 are refused outright. */
#define HTTP_LENGTH_MAX		(1ull << 53)
/* A chunk-size line, extensions included, CRLF not counted. */
#define HTTP_CHUNK_LINE_MAX	4096u
/* All trailer lines of a chunked body, CRLFs counted. */
#define HTTP_TRAILER_MAX	16384u

enum hp_status {
	HP_MORE,		/* a valid prefix: give more bytes */
	HP_DONE,
	HP_ERROR,
};

enum hp_err {
	HP_OK = 0,
	HP_ERR_TOO_LARGE,	/* no end of head within HTTP_HEAD_MAX */
	HP_ERR_LINE,		/* no CRLF at the end, or empty request line */
	HP_ERR_METHOD,
	HP_ERR_TARGET,		/* not origin-form, or a byte not 0x21-0x7e */
	HP_ERR_VERSION,		/* not HTTP/1.1 or HTTP/1.0 */
	HP_ERR_FIELD_NAME,	/* not a token, or white space before ':' */
	HP_ERR_FIELD_VALUE,	/* a control character (NUL, CR, ...) */
	HP_ERR_OBS_FOLD,
	HP_ERR_TOO_MANY_FIELDS,
	HP_ERR_CONTENT_LENGTH,	/* not digits, over 2^53, or differing copies */
	HP_ERR_TRANSFER_ENCODING, /* other than one "chunked", or on HTTP/1.0 */
	HP_ERR_FRAMING,		/* both Content-Length and Transfer-Encoding */
	HP_ERR_HOST,		/* missing on HTTP/1.1, or repeated */
	HP_ERR_NOMEM,
};
const char	*hp_err_to_string(enum hp_err);

/* Request fields, and the extra fields of a response (both NUL-terminated). */
struct http_hdr {
	const char	*name;
	const char	*value;
};

/* The reason phrase of a status, "" for one without a common phrase. */
const char	*http_reason(int);

/*
 * An answer's head, fields already checked (http_field_valid()): the status
 * line (status 100-999), "content-type: ctype" unless ctype is NULL, the n
 * fields, framing (whole lines, or NULL), "connection: close" and the empty
 * line.  http_answer_head() writes it to d, which has
 * http_answer_head_size() bytes of room, and returns that length.
 */
size_t		 http_answer_head_size(int status, const char *ctype,
		    const struct http_hdr *, size_t n, const char *framing);
size_t		 http_answer_head(char *d, int status, const char *ctype,
		    const struct http_hdr *, size_t n, const char *framing);

enum http_framing {
	HTTP_BODY_NONE,		/* no Content-Length, no Transfer-Encoding */
	HTTP_BODY_LENGTH,
	HTTP_BODY_CHUNKED,
};

/*
 * A parsed head.  Every string is a NUL-terminated copy in h_arena, which
 * the head owns: the input buffer may go away after the call.  Field names
 * are lowercased, values have their surrounding white space trimmed.
 */
struct http_head {
	enum hp_err		 h_err;
	size_t			 h_len;		/* with the last CRLF */
	const char		*h_method;
	const char		*h_target;	/* as sent */
	const char		*h_path;	/* before '?' or '#' */
	const char		*h_query;	/* after '?', else "" */
	int			 h_has_query;	/* a '?' before any '#' */
	int			 h_has_fragment; /* '#': 404 (PROTOCOL.md 3) */
	int			 h_minor;	/* HTTP/1.h_minor: 0 or 1 */
	const struct http_hdr	*h_fields;
	size_t			 h_nfields;
	enum http_framing	 h_framing;
	uint64_t		 h_content_length;
	void			*h_arena;
};

/*
 * Parse the head at the start of buf.  HP_DONE: h is filled (h_len bytes
 * used) and must be released with http_head_free().  HP_MORE: buf is a valid
 * prefix of a head.  HP_ERROR: h_err says why.  Only HP_DONE allocates.  A
 * prefix's HP_DONE or HP_ERROR is the answer for every longer input too.
 */
enum hp_status	 http_parse_head(const char *buf, size_t len,
		    struct http_head *h);
void		 http_head_free(struct http_head *);
/* The first value of the lowercase field name, or NULL. */
const char	*http_head_get(const struct http_head *, const char *name);
/* A field fit to send: a token name, no control character but HTAB in the
 * value. */
int		 http_field_valid(const char *name, const char *value);
/*
 * A request field value fit to copy to another process (PROTOCOL.md 3.2,
 * 3.3): valid UTF-8 of at most max_chars chars (UTF-16 code units), no
 * NUL, no control character but HTAB.  The parser lets obs-text through,
 * which need not be UTF-8.
 */
int		 http_value_copyable(const char *value, size_t max_chars);

/*
 * Chunked body decoder.  Feed any split of the body; chunk data goes to the
 * callback in pieces, everything else (sizes, extensions, CRLFs, trailers)
 * is checked and dropped.  Errors are final.
 */
enum hc_err {
	HC_OK = 0,
	HC_ERR_SIZE,		/* no hex digit, or a chunk over 2^53 */
	HC_ERR_LINE_TOO_LONG,	/* size line over HTTP_CHUNK_LINE_MAX */
	HC_ERR_EXTENSION,	/* junk after the size or in an extension */
	HC_ERR_CRLF,		/* no CRLF after a size line or chunk data */
	HC_ERR_TRAILER,		/* a trailer line that is not a field */
	HC_ERR_TRAILER_TOO_LARGE,
	HC_ERR_TOO_LARGE,	/* a chunk takes the body over the maximum */
	HC_ERR_CALLBACK,	/* the data callback refused */
};
const char	*hc_err_to_string(enum hc_err);

struct http_chunked {
	int		 hc_state;
	enum hc_err	 hc_err;
	uint64_t	 hc_max;	/* most data bytes in all */
	uint64_t	 hc_total;	/* data bytes of the chunks so far */
	uint64_t	 hc_size;	/* size being read, then data left */
	size_t		 hc_line;	/* bytes of the current size line */
	size_t		 hc_trailer;	/* trailer bytes so far */
};

/* Data callback: 0 to go on, -1 to stop with HC_ERR_CALLBACK.  NULL: the
 * data is skipped. */
typedef int	(*http_chunked_cb)(void *arg, const char *data, size_t len);

void		 http_chunked_init(struct http_chunked *, uint64_t max);
/*
 * *consumed is set to the bytes of in used: all of them for HP_MORE, up to
 * the end of the last CRLF for HP_DONE, those before the offending byte for
 * HP_ERROR.  The total size is checked against max as soon as a size digit
 * takes it over, before any of that chunk's data is read.
 */
enum hp_status	 http_chunked_feed(struct http_chunked *, const char *in,
		    size_t len, size_t *consumed, http_chunked_cb, void *arg);

#endif
