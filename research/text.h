/*
 * A fetched body made readable for the model (DESIGN.md 9, fetch_content):
 * HTML through libxml2's HTML parser, plain text, JSON and XML as they are,
 * PDF page text, anything else named and not shown.  Pure functions over a
 * buffer and a length; the result is always valid UTF-8 without NUL.
 */
#ifndef RTSANDBOX_RESEARCH_TEXT_H
#define RTSANDBOX_RESEARCH_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "limits.h"

/* Bytes looked at: the controlled fetch's own maximum. */
#define TEXT_INPUT_MAX		FETCH_BYTES_MAX

enum text_kind {
	TEXT_HTML,
	TEXT_PLAIN,
	TEXT_PDF,
	TEXT_BINARY,
};

struct text_out {
	char		*to_text;	/* malloc'd, NUL-terminated */
	size_t		 to_len;	/* bytes */
	size_t		 to_units;	/* UTF-16 code units */
	int		 to_cut;	/* output or input was cut short */
	enum text_kind	 to_kind;
};

/*
 * Once, before the sandbox: libxml2's globals (no entity loader, no error
 * output) and the converters of the character sets text_extract() knows
 * beyond UTF-8, windows-1252 and UTF-16.  glibc loads converters from
 * files, which the sandbox forbids; text_extract() only ever uses those
 * loaded here, and treats other labels as UTF-8.
 */
void	text_init(void);

/*
 * Make text of len bytes served as content_type (may be NULL: sniffed),
 * at most max_units UTF-16 code units of it.  base_url (may be NULL) is
 * where relative links of an HTML page lead.  Returns 0, or -1 when out of
 * memory (errno set).  Free with text_out_free().
 */
int	text_extract(const uint8_t *buf, size_t len, const char *content_type,
	    const char *base_url, size_t max_units, struct text_out *);
void	text_out_free(struct text_out *);

/*
 * Bytes in a character set as valid UTF-8 without NUL (invalid input and
 * NUL become U+FFFD), for search results and other text from a peer.
 * charset NULL means UTF-8.  Returns a malloc'd NUL-terminated string and
 * its length, or NULL when out of memory.
 */
char	*text_utf8(const uint8_t *buf, size_t len, const char *charset,
	    size_t *outlen);

/*
 * Cut valid UTF-8 at most max_units UTF-16 code units, on a code point
 * boundary (a character of two units that would straddle the limit is
 * left out).  Returns the new byte length; *cut (may be NULL) says whether
 * anything was left out.
 */
size_t	text_cut_units(const char *s, size_t len, size_t max_units, int *cut);

#endif
