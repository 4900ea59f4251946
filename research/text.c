/*
 * What a fetched body is (its content type, or a look at its first bytes
 * when the type says nothing), and its text through the extractors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "text.h"
#include "textint.h"

#define MEDIA_TYPE_MAX	100
#define SNIFF_BYTES	1024
#define TEXT_SNIFF	4096

/*
 * Content types
 */

/* The media type, lowercased, and the charset parameter, if any. */
static void
ct_parse(const char *ct, char *type, size_t typesz, const char **charset,
    size_t *charsetlen)
{
	const char	*p = ct, *k, *v;
	size_t		 n = 0;

	*type = '\0';
	*charset = NULL;
	*charsetlen = 0;
	if (ct == NULL)
		return;
	while (*p == ' ' || *p == '\t')
		p++;
	for (; *p != '\0' && *p != ';' && *p != ' ' && *p != '\t'; p++)
		if (n + 1 < typesz)
			type[n++] = (*p >= 'A' && *p <= 'Z') ? *p + 32 : *p;
	type[n] = '\0';
	while ((p = strchr(p, ';')) != NULL) {
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		k = p;
		while (*p != '\0' && *p != '=' && *p != ';')
			p++;
		if (*p != '=')
			continue;
		if (p - k != 7 || strncasecmp(k, "charset", 7) != 0)
			continue;
		v = ++p;
		if (*v == '"') {
			v++;
			for (p = v; *p != '\0' && *p != '"'; p++)
				;
		} else
			for (p = v; *p != '\0' && *p != ';' && *p != ' ' &&
			    *p != '\t'; p++)
				;
		*charset = v;
		*charsetlen = p - v;
		return;
	}
}

static int
has_suffix(const char *s, const char *suffix)
{
	size_t	 n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int
type_is_text(const char *t)
{
	static const char *const texts[] = {
		"application/json", "application/xml",
		"application/javascript", "application/x-javascript",
		"application/ecmascript", "application/x-ndjson",
		"application/yaml", "application/x-yaml", "application/toml",
		"application/csv", "application/sql", "application/x-sh",
		"application/x-tex", "application/x-latex",
		"application/x-httpd-php", "application/graphql",
	};
	size_t	 i;

	if (strncmp(t, "text/", 5) == 0 || has_suffix(t, "+json") ||
	    has_suffix(t, "+xml"))
		return 1;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (strcmp(t, texts[i]) == 0)
			return 1;
	return 0;
}

static const uint8_t *
memcasemem(const uint8_t *hay, size_t len, const char *needle)
{
	size_t	 n = strlen(needle), i;

	for (i = 0; n <= len && i <= len - n; i++)
		if (strncasecmp((const char *)hay + i, needle, n) == 0)
			return hay + i;
	return NULL;
}

static int
looks_like_pdf(const uint8_t *buf, size_t len)
{
	return len >= 5 && memcmp(buf, "%PDF-", 5) == 0;
}

static int
looks_like_html(const uint8_t *buf, size_t len)
{
	size_t	 n = len < SNIFF_BYTES ? len : SNIFF_BYTES;

	return memcasemem(buf, n, "<!doctype html") != NULL ||
	    memcasemem(buf, n, "<html") != NULL;
}

/* No NUL and few control bytes in the first 4 KiB. */
static int
looks_like_text(const uint8_t *buf, size_t len)
{
	size_t	 n = len < TEXT_SNIFF ? len : TEXT_SNIFF, i, ctl = 0;

	if (len >= 2 && ((buf[0] == 0xfe && buf[1] == 0xff) ||
	    (buf[0] == 0xff && buf[1] == 0xfe)))
		return 1;
	for (i = 0; i < n; i++) {
		if (buf[i] == 0)
			return 0;
		if (buf[i] < 0x20 && buf[i] != '\t' && buf[i] != '\n' &&
		    buf[i] != '\r' && buf[i] != '\f' && buf[i] != 0x1b)
			ctl++;
	}
	return ctl * 20 <= n;
}

/* A media type fit to be quoted back: token characters only. */
static void
type_quote(const char *t, char *out, size_t outsz)
{
	size_t	 i, n = 0;

	for (i = 0; t[i] != '\0' && n + 1 < outsz; i++)
		if ((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' &&
		    t[i] <= '9') || strchr("!#$&^_.+-/", t[i]) != NULL)
			out[n++] = t[i];
	out[n] = '\0';
}

static void
plain_to_text(struct tbuf *tb, const uint8_t *buf, size_t len,
    const struct charset *given)
{
	struct charset	 cs = { CS_UTF8, -1 };
	char		*s;
	size_t		 n;

	if (charset_bom(buf, len, &cs) == -1 && given != NULL)
		cs = *given;
	if ((s = charset_decode(&cs, buf, len, &n)) == NULL) {
		tb->tb_nomem = tb->tb_full = 1;
		return;
	}
	tb_raw(tb, s, n);
	free(s);
}

void
text_init(void)
{
	charset_preload();
	html_init();
}

int
text_extract(const uint8_t *buf, size_t len, const char *content_type,
    const char *base_url, size_t max_units, struct text_out *out)
{
	struct tbuf	 tb;
	struct charset	 cs, *given = NULL;
	const char	*label;
	char		 type[MEDIA_TYPE_MAX + 1], quoted[MEDIA_TYPE_MAX + 1];
	char		 msg[MEDIA_TYPE_MAX + 96];
	size_t		 labellen, inlen = len;
	int		 cut = 0, encrypted = 0;

	memset(out, 0, sizeof(*out));
	if (len > TEXT_INPUT_MAX) {
		len = TEXT_INPUT_MAX;
		cut = 1;
	}
	ct_parse(content_type, type, sizeof(type), &label, &labellen);
	if (label != NULL && charset_lookup(label, labellen, &cs) == 0)
		given = &cs;

	if (looks_like_pdf(buf, len) || strcmp(type, "application/pdf") == 0 ||
	    strcmp(type, "application/x-pdf") == 0)
		out->to_kind = TEXT_PDF;
	else if (strcmp(type, "text/html") == 0 ||
	    strcmp(type, "application/xhtml+xml") == 0)
		out->to_kind = TEXT_HTML;
	else if (type_is_text(type))
		out->to_kind = TEXT_PLAIN;
	else if (type[0] == '\0' || strcmp(type, "application/octet-stream") ==
	    0 || strcmp(type, "binary/octet-stream") == 0 ||
	    strcmp(type, "application/unknown") == 0)
		out->to_kind = looks_like_html(buf, len) ? TEXT_HTML :
		    looks_like_text(buf, len) ? TEXT_PLAIN : TEXT_BINARY;
	else
		out->to_kind = TEXT_BINARY;

	tb_init(&tb, max_units);
	switch (out->to_kind) {
	case TEXT_HTML:
		html_to_text(&tb, buf, len, given, base_url);
		break;
	case TEXT_PLAIN:
		plain_to_text(&tb, buf, len, given);
		break;
	case TEXT_PDF:
		encrypted = pdf_to_text(&tb, buf, len);
		break;
	case TEXT_BINARY:
		type_quote(type, quoted, sizeof(quoted));
		if (quoted[0] != '\0')
			snprintf(msg, sizeof(msg), "(binary content of type "
			    "%s, %zu bytes, not shown)", quoted, inlen);
		else
			snprintf(msg, sizeof(msg), "(binary content of unknown "
			    "type, %zu bytes, not shown)", inlen);
		tb_raw(&tb, msg, strlen(msg));
		break;
	}
	if (tb.tb_nomem) {
		tb_free(&tb);
		errno = ENOMEM;
		return -1;
	}
	if (out->to_kind == TEXT_PDF && tb.tb_units == 0) {
		snprintf(msg, sizeof(msg), "PDF without extractable text "
		    "(%zu bytes%s)", inlen, encrypted ? ", encrypted" : "");
		tb_raw(&tb, msg, strlen(msg));
	}
	if (tb_finish(&tb) == -1) {
		errno = ENOMEM;
		return -1;
	}
	out->to_text = tb.tb_s;
	out->to_len = tb.tb_len;
	out->to_units = tb.tb_units;
	out->to_cut = cut || tb.tb_full || tb.tb_cut;
	return 0;
}

void
text_out_free(struct text_out *out)
{
	free(out->to_text);
	memset(out, 0, sizeof(*out));
}

char *
text_utf8(const uint8_t *buf, size_t len, const char *charset,
    size_t *outlen)
{
	struct charset	 cs = { CS_UTF8, -1 };

	if (charset != NULL && charset_lookup(charset, strlen(charset),
	    &cs) == -1)
		cs.cs_kind = CS_UTF8;
	return charset_decode(&cs, buf, len, outlen);
}
