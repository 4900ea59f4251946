/*
 * Inside research/text.c, tbuf.c, html.c, pdf.c and charset.c: the text
 * builder every extractor writes through, and the character set decoders.
 */
#ifndef RTSANDBOX_RESEARCH_TEXTINT_H
#define RTSANDBOX_RESEARCH_TEXTINT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Output text bounded in UTF-16 code units.  tb_text() collapses white
 * space the way a browser shows it (unless tb_pre); breaks asked for with
 * tb_break() are written before the next visible character, at most two
 * newlines in a row.  Once the bound is reached, tb_full is set and
 * everything after is dropped.  tb_nomem is set when an allocation failed.
 */
struct tbuf {
	char		*tb_s;
	size_t		 tb_len;
	size_t		 tb_cap;
	size_t		 tb_units;
	size_t		 tb_max;
	int		 tb_full;
	int		 tb_nomem;
	int		 tb_space;	/* a space is pending */
	int		 tb_nl;		/* newlines pending, 0-2 */
	int		 tb_pre;	/* white space kept as it is */
	int		 tb_cut;	/* input was left out */
	char		 tb_pfx[8];	/* written before the next text */
};

void	tb_init(struct tbuf *, size_t max_units);
void	tb_free(struct tbuf *);
/* Visible text, valid UTF-8 (anything else becomes U+FFFD). */
void	tb_text(struct tbuf *, const char *, size_t);
/* A space before what comes next (unless a break is pending). */
void	tb_space(struct tbuf *);
/* Ask for n (1 or 2) line breaks before what comes next. */
void	tb_break(struct tbuf *, int n);
/* Written at the start of the next visible text ("- ", "## "). */
void	tb_prefix(struct tbuf *, const char *);
/* A line break now, even right after another (<br>). */
void	tb_newline(struct tbuf *);
/* Text as it is (after pending breaks), no white space folding. */
void	tb_raw(struct tbuf *, const char *, size_t);
/* Append one code point; 0, or -1 when it no longer fits. */
int	tb_cp(struct tbuf *, uint32_t);
/* White space at the end dropped, tb_s a string; -1 when out of memory. */
int	tb_finish(struct tbuf *);

/* Decode the UTF-8 sequence at s (len > 0): bytes used, *cp (U+FFFD and 1
 * byte for anything ill-formed). */
size_t	utf8_decode(const uint8_t *s, size_t len, uint32_t *cp);
/* Encode cp (a scalar value) into out[4]: bytes written. */
size_t	utf8_encode(uint32_t cp, char *out);

/* Character sets text_extract() decodes. */
enum cs {
	CS_UTF8,
	CS_CP1252,		/* and every ISO-8859-1 label */
	CS_UTF16LE,
	CS_UTF16BE,
	CS_ICONV,		/* converter loaded by text_init() */
};

struct charset {
	enum cs		 cs_kind;
	int		 cs_iconv;	/* index of the loaded converter */
};

/* The charset a label names (WHATWG labels, case-insensitive); -1 when
 * it names none that can be decoded here. */
int	charset_lookup(const char *label, size_t len, struct charset *);
void	charset_preload(void);
/*
 * Decode buf to UTF-8 without NUL (NUL and invalid input become U+FFFD),
 * a UTF-8 byte-order mark left out.  Returns a malloc'd NUL-terminated
 * string (length in *outlen) or NULL when out of memory.
 */
char	*charset_decode(const struct charset *, const uint8_t *buf,
	    size_t len, size_t *outlen);
/* A byte-order mark at the start of buf: its charset, else -1. */
int	charset_bom(const uint8_t *buf, size_t len, struct charset *);

/* libxml2's globals, once (html.c). */
void	html_init(void);
/* HTML to text (html.c); base_url may be NULL. */
void	html_to_text(struct tbuf *, const uint8_t *buf, size_t len,
	    const struct charset *given, const char *base_url);
/*
 * The prefix of HTML (UTF-8) libxml2 may be given: where markup would make
 * its parser slow (deep nesting, unmatched end tags, many attributes on one
 * element, many entities) the rest is left out.  Returns its length.
 */
size_t	html_guard(const char *s, size_t len);
/* PDF page text (pdf.c); returns whether the file is encrypted. */
int	pdf_to_text(struct tbuf *, const uint8_t *buf, size_t len);

#endif
