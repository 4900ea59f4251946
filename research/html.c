/*
 * HTML to text with libxml2's HTML parser.  The page is decoded to UTF-8
 * here first (libxml2 would load converters from files for most character
 * sets), then parsed with the network off and no entity loader, bounded in
 * depth and time by SAX callbacks, and walked without recursion: scripts,
 * styles and the like left out, blocks as line breaks, white space folded,
 * links as "text (url)".
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <libxml/HTMLparser.h>
#include <libxml/SAX2.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/uri.h>
#include <libxml/xmlerror.h>

#include "text.h"
#include "textint.h"

/* Elements open at once; libxml2 would go on to any depth. */
#define HTML_DEPTH_MAX		256
/* Time for one parse. */
#define HTML_PARSE_MS		3000
/* SAX events between two looks at the clock. */
#define HTML_CLOCK_EVERY	1024
/* Bytes looked at for a <meta charset>. */
#define HTML_PRESCAN		4096
/* Links nested in links that keep their target. */
#define HTML_LINKS_NESTED	16
/* Longer link targets are left out. */
#define HTML_URL_MAX		1000
/* The title is cut there. */
#define HTML_TITLE_MAX		300

/* Work the guard lets libxml2 do, in list entries compared. */
#define GUARD_COST_MAX		(40u * 1000 * 1000)
#define GUARD_STACK		512
/* libxml2 looks an entity name up in a list of 253. */
#define GUARD_ENTITY_COST	64

static xmlParserInputPtr
html_no_entity(const char *url, const char *id, xmlParserCtxtPtr ctxt)
{
	return NULL;
}

static void
html_no_error(void *ctx, const char *msg, ...)
{
}

static void
html_no_structured_error(void *ctx, xmlErrorPtr err)
{
}

void
html_init(void)
{
	xmlInitParser();
	xmlSetExternalEntityLoader(html_no_entity);
	xmlSetGenericErrorFunc(NULL, html_no_error);
	xmlSetStructuredErrorFunc(NULL, html_no_structured_error);
}

/*
 * The guard: a pass over the markup that tokenizes the way libxml2 2.9
 * does (start tags after "<letter", attribute values quoted only after
 * "=", raw text in script and style only) and adds up the work of
 * libxml2's known slow paths.
 */

static int
g_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
g_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int
g_namech(char c)
{
	return g_alpha(c) || (c >= '0' && c <= '9') || c == '_' || c == ':' ||
	    c == '.' || c == '-';
}

static size_t
g_entities(const char *s, size_t len)
{
	const char	*p = s, *e = s + len;
	size_t		 n = 0;

	while ((p = memchr(p, '&', e - p)) != NULL) {
		n++;
		p++;
	}
	return n;
}

/* A lowercased name's hash; *end gets where it stops. */
static uint32_t
g_name(const char *s, size_t len, size_t i, size_t *end)
{
	uint32_t	 h = 2166136261u;
	char		 c;

	while (i < len && g_namech(s[i])) {
		c = s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i];
		h = (h ^ (uint8_t)c) * 16777619u;
		i++;
	}
	*end = i;
	return h;
}

/* Elements libxml2 never keeps open, and those whose content is raw. */
static const char *const g_void_names[] = {
	"area", "base", "basefont", "br", "col", "embed", "frame", "hr",
	"img", "input", "isindex", "keygen", "link", "meta", "param",
	"source", "track", "wbr",
};
#define G_NVOID	(sizeof(g_void_names) / sizeof(g_void_names[0]))
static uint32_t	 g_void_hash[G_NVOID], h_script, h_style;

static void
g_init(void)
{
	size_t	 i, end;

	if (h_script != 0)
		return;
	for (i = 0; i < G_NVOID; i++)
		g_void_hash[i] = g_name(g_void_names[i],
		    strlen(g_void_names[i]), 0, &end);
	h_style = g_name("style", 5, 0, &end);
	h_script = g_name("script", 6, 0, &end);
}

static int
g_void(uint32_t h)
{
	size_t	 i;

	for (i = 0; i < G_NVOID; i++)
		if (g_void_hash[i] == h)
			return 1;
	return 0;
}

/* Case-insensitive search for "</name" (raw text end). */
static const char *
g_raw_end(const char *s, size_t len, const char *name)
{
	size_t	 n = strlen(name), i;
	const char *p;

	for (i = 0; i + 2 + n <= len; i++) {
		if ((p = memchr(s + i, '<', len - i)) == NULL)
			return NULL;
		i = p - s;
		if (i + 2 + n <= len && s[i + 1] == '/' &&
		    strncasecmp(s + i + 2, name, n) == 0)
			return p;
	}
	return NULL;
}

size_t
html_guard(const char *s, size_t len)
{
	uint32_t	 stack[GUARD_STACK], h;
	size_t		 depth = 0, i = 0, tag, k, d, nattr, cost = 0, end;
	const char	*lt, *p;
	int		 selfclosed;

	g_init();
	while (i < len) {
		lt = memchr(s + i, '<', len - i);
		end = lt != NULL ? (size_t)(lt - s) : len;
		cost += g_entities(s + i, end - i) * GUARD_ENTITY_COST;
		if (cost > GUARD_COST_MAX)
			return i;
		if (lt == NULL)
			break;
		tag = end;
		i = tag + 1;
		if (len - i >= 3 && memcmp(s + i, "!--", 3) == 0) {
			if ((p = memmem(s + i + 3, len - i - 3, "-->", 3)) ==
			    NULL)
				return tag;
			i = p - s + 3;
			continue;
		}
		if (len - i >= 8 && strncasecmp(s + i, "!doctype", 8) == 0) {
			/* Quoted identifiers may hold '>'. */
			for (k = i + 8; k < len && s[k] != '>'; k++)
				if (s[k] == '"' || s[k] == '\'') {
					if ((p = memchr(s + k + 1, s[k],
					    len - k - 1)) == NULL)
						return tag;
					k = p - s;
				}
			if (k >= len)
				return tag;
			i = k + 1;
			continue;
		}
		if (i < len && s[i] == '?') {
			if ((p = memchr(s + i, '>', len - i)) == NULL)
				return tag;
			i = p - s + 1;
			continue;
		}
		if (i < len && s[i] == '/') {
			if (i + 1 >= len || !g_alpha(s[i + 1])) {
				i++;
				continue;
			}
			h = g_name(s, len, i + 1, &end);
			if ((p = memchr(s + end, '>', len - end)) == NULL)
				return tag;
			i = p - s + 1;
			/* libxml2 looks down its stack for the element, twice,
			 * comparing end priorities on the way. */
			d = depth < GUARD_STACK ? depth : GUARD_STACK;
			for (k = 0; k < d && stack[d - 1 - k] != h; k++)
				;
			cost += 2 * k + 1;
			if (k < d)
				depth = d - 1 - k;
			if (cost > GUARD_COST_MAX)
				return tag;
			continue;
		}
		if (i >= len || !g_alpha(s[i]))
			continue;	/* a '<' in text */

		h = g_name(s, len, i, &i);
		nattr = 0;
		while (i < len && s[i] != '>' &&
		    !(s[i] == '/' && i + 1 < len && s[i + 1] == '>')) {
			if (g_blank(s[i])) {
				i++;
				continue;
			}
			if (!g_alpha(s[i]) && s[i] != '_' && s[i] != ':' &&
			    s[i] != '.') {
				/* a bogus attribute: up to a blank or '>' */
				while (i < len && !g_blank(s[i]) &&
				    s[i] != '>' && !(s[i] == '/' &&
				    i + 1 < len && s[i + 1] == '>'))
					i++;
				continue;
			}
			g_name(s, len, i, &i);
			/* every attribute is compared with those before */
			cost += ++nattr;
			while (i < len && g_blank(s[i]))
				i++;
			if (i >= len || s[i] != '=')
				continue;
			i++;
			while (i < len && g_blank(s[i]))
				i++;
			if (i < len && (s[i] == '"' || s[i] == '\'')) {
				p = memchr(s + i + 1, s[i], len - i - 1);
				if (p == NULL)
					return tag;
				cost += g_entities(s + i, p - s - i) *
				    GUARD_ENTITY_COST;
				i = p - s + 1;
			} else {
				for (k = i; k < len && !g_blank(s[k]) &&
				    s[k] != '>'; k++)
					;
				cost += g_entities(s + i, k - i) *
				    GUARD_ENTITY_COST;
				i = k;
			}
		}
		if (cost > GUARD_COST_MAX || i >= len)
			return tag;
		if ((selfclosed = s[i] == '/'))
			i++;
		i++;
		/* libxml2 closes these at once */
		if (!selfclosed && !g_void(h)) {
			if (depth < GUARD_STACK)
				stack[depth] = h;
			depth++;
		}
		if (!selfclosed && (h == h_script || h == h_style)) {
			if ((p = g_raw_end(s + i, len - i, h == h_script ?
			    "script" : "style")) == NULL)
				return len;
			i = p - s;
		}
	}
	return len;
}

/*
 * Character set: a byte-order mark, the Content-Type's, a <meta> or an
 * XML declaration in the first bytes, else UTF-8.
 */

static int
prescan_label(const uint8_t *p, const uint8_t *end, struct charset *cs)
{
	const uint8_t	*v;

	while (p < end && (g_blank(*p) || *p == '='))
		p++;
	while (p < end && (*p == '"' || *p == '\''))
		p++;
	for (v = p; p < end && (g_namech(*p)); p++)
		;
	if (p == v || charset_lookup((const char *)v, p - v, cs) == -1)
		return -1;
	/* A page that could be read as ASCII is not UTF-16. */
	if (cs->cs_kind == CS_UTF16LE || cs->cs_kind == CS_UTF16BE)
		cs->cs_kind = CS_UTF8;
	return 0;
}

static const uint8_t *
find_ci(const uint8_t *p, const uint8_t *end, const char *needle)
{
	size_t	 n = strlen(needle);

	for (; p + n <= end; p++)
		if (strncasecmp((const char *)p, needle, n) == 0)
			return p;
	return NULL;
}

static int
prescan(const uint8_t *buf, size_t len, struct charset *cs)
{
	const uint8_t	*end, *p = buf, *tagend, *a;

	end = buf + (len < HTML_PRESCAN ? len : HTML_PRESCAN);
	if (end - buf >= 5 && memcmp(buf, "<?xml", 5) == 0 &&
	    (tagend = memchr(buf, '>', end - buf)) != NULL &&
	    (a = find_ci(buf, tagend, "encoding")) != NULL &&
	    prescan_label(a + 8, tagend, cs) == 0)
		return 0;
	while ((p = find_ci(p, end, "<meta")) != NULL) {
		p += 5;
		if ((tagend = memchr(p, '>', end - p)) == NULL)
			break;
		if ((a = find_ci(p, tagend, "charset")) != NULL)
			return prescan_label(a + 7, tagend, cs);
		p = tagend;
	}
	return -1;
}

/*
 * Parsing, bounded.
 */

struct hguard {
	struct timespec	 hg_start;
	unsigned	 hg_events;
	int		 hg_stopped;
	startElementSAXFunc	hg_start_el;
	charactersSAXFunc	hg_chars;
};

/* The parse under way: one at a time, the process has one thread. */
static struct hguard	*html_guard_cur;

static void
guard_event(htmlParserCtxtPtr ctxt)
{
	struct hguard	*hg = html_guard_cur;
	struct timespec	 now;
	long		 ms;

	if (hg->hg_stopped || ++hg->hg_events % HTML_CLOCK_EVERY != 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	ms = (now.tv_sec - hg->hg_start.tv_sec) * 1000 +
	    (now.tv_nsec - hg->hg_start.tv_nsec) / 1000000;
	if (ms > HTML_PARSE_MS) {
		hg->hg_stopped = 1;
		xmlStopParser(ctxt);
	}
}

static void
guard_start_element(void *ctx, const xmlChar *name, const xmlChar **atts)
{
	htmlParserCtxtPtr	 ctxt = ctx;
	struct hguard		*hg = html_guard_cur;

	hg->hg_start_el(ctx, name, atts);
	if (ctxt->nameNr > HTML_DEPTH_MAX && !hg->hg_stopped) {
		hg->hg_stopped = 1;
		xmlStopParser(ctxt);
		return;
	}
	guard_event(ctxt);
}

static void
guard_characters(void *ctx, const xmlChar *ch, int len)
{
	htmlParserCtxtPtr	 ctxt = ctx;
	struct hguard		*hg = html_guard_cur;

	hg->hg_chars(ctx, ch, len);
	guard_event(ctxt);
}

static htmlDocPtr
html_parse(const char *s, size_t len, int *stopped)
{
	htmlParserCtxtPtr	 ctxt;
	htmlDocPtr		 doc;
	struct hguard		 hg;

	*stopped = 0;
	if (len == 0 || len > INT32_MAX || (ctxt = htmlNewParserCtxt()) ==
	    NULL)
		return NULL;
	memset(&hg, 0, sizeof(hg));
	clock_gettime(CLOCK_MONOTONIC, &hg.hg_start);
	hg.hg_start_el = ctxt->sax->startElement;
	hg.hg_chars = ctxt->sax->characters;
	ctxt->sax->startElement = guard_start_element;
	ctxt->sax->characters = guard_characters;
	html_guard_cur = &hg;
	doc = htmlCtxtReadMemory(ctxt, s, (int)len, NULL, "UTF-8",
	    HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
	    HTML_PARSE_NONET | HTML_PARSE_IGNORE_ENC | HTML_PARSE_COMPACT);
	html_guard_cur = NULL;
	*stopped = hg.hg_stopped;
	htmlFreeParserCtxt(ctxt);
	return doc;
}

/*
 * The walk.
 */

enum el {
	EL_OTHER,
	EL_SKIP,	/* with everything in it */
	EL_BLOCK,	/* a line of its own */
	EL_PARA,	/* a paragraph of its own */
	EL_HEADING,
	EL_LI,
	EL_BR,
	EL_HR,
	EL_PRE,
	EL_CELL,
	EL_LINK,
};

struct el_def {
	const char	*ed_name;
	enum el		 ed_kind;
};

/* Sorted by name for bsearch. */
static const struct el_def el_defs[] = {
	{ "a", EL_LINK },
	{ "address", EL_BLOCK },
	{ "article", EL_BLOCK },
	{ "aside", EL_BLOCK },
	{ "audio", EL_SKIP },
	{ "blockquote", EL_PARA },
	{ "body", EL_BLOCK },
	{ "br", EL_BR },
	{ "canvas", EL_SKIP },
	{ "caption", EL_BLOCK },
	{ "center", EL_BLOCK },
	{ "dd", EL_BLOCK },
	{ "details", EL_BLOCK },
	{ "dialog", EL_BLOCK },
	{ "dir", EL_BLOCK },
	{ "div", EL_BLOCK },
	{ "dl", EL_BLOCK },
	{ "dt", EL_BLOCK },
	{ "embed", EL_SKIP },
	{ "fieldset", EL_BLOCK },
	{ "figcaption", EL_BLOCK },
	{ "figure", EL_BLOCK },
	{ "footer", EL_BLOCK },
	{ "form", EL_BLOCK },
	{ "h1", EL_HEADING },
	{ "h2", EL_HEADING },
	{ "h3", EL_HEADING },
	{ "h4", EL_HEADING },
	{ "h5", EL_HEADING },
	{ "h6", EL_HEADING },
	{ "head", EL_SKIP },
	{ "header", EL_BLOCK },
	{ "hgroup", EL_BLOCK },
	{ "hr", EL_HR },
	{ "iframe", EL_SKIP },
	{ "legend", EL_BLOCK },
	{ "li", EL_LI },
	{ "main", EL_BLOCK },
	{ "math", EL_SKIP },
	{ "menu", EL_BLOCK },
	{ "nav", EL_SKIP },
	{ "noscript", EL_SKIP },
	{ "object", EL_SKIP },
	{ "ol", EL_BLOCK },
	{ "p", EL_PARA },
	{ "pre", EL_PRE },
	{ "script", EL_SKIP },
	{ "section", EL_BLOCK },
	{ "select", EL_SKIP },
	{ "style", EL_SKIP },
	{ "summary", EL_BLOCK },
	{ "svg", EL_SKIP },
	{ "table", EL_PARA },
	{ "tbody", EL_BLOCK },
	{ "td", EL_CELL },
	{ "template", EL_SKIP },
	{ "textarea", EL_SKIP },
	{ "tfoot", EL_BLOCK },
	{ "th", EL_CELL },
	{ "thead", EL_BLOCK },
	{ "title", EL_SKIP },
	{ "tr", EL_BLOCK },
	{ "ul", EL_BLOCK },
	{ "video", EL_SKIP },
};

static int
el_cmp(const void *key, const void *def)
{
	return strcmp(key, ((const struct el_def *)def)->ed_name);
}

static enum el
el_kind(const xmlNode *n)
{
	const struct el_def	*ed;

	if (n->type != XML_ELEMENT_NODE || n->name == NULL)
		return EL_OTHER;
	ed = bsearch(n->name, el_defs, sizeof(el_defs) / sizeof(el_defs[0]),
	    sizeof(el_defs[0]), el_cmp);
	return ed != NULL ? ed->ed_kind : EL_OTHER;
}

struct hctx {
	struct tbuf	*hc_tb;
	const char	*hc_base;
	int		 hc_pre;
	struct {
		const xmlNode	*hl_node;
		size_t		 hl_start;
		char		*hl_url;
	}		 hc_links[HTML_LINKS_NESTED];
	int		 hc_nlinks;
};

/* The first element of that name, not inside svg or math. */
static xmlNode *
find_element(xmlNode *top, const char *name)
{
	xmlNode	*n = top->children;

	while (n != NULL) {
		if (n->type == XML_ELEMENT_NODE && n->name != NULL) {
			if (strcmp((const char *)n->name, name) == 0)
				return n;
			if (strcmp((const char *)n->name, "svg") != 0 &&
			    strcmp((const char *)n->name, "math") != 0 &&
			    n->children != NULL) {
				n = n->children;
				continue;
			}
		}
		while (n->next == NULL) {
			n = n->parent;
			if (n == NULL || n == top)
				return NULL;
		}
		n = n->next;
	}
	return NULL;
}

/* A link target worth showing: absolute http(s) or mailto, resolved
 * against the base, short, without white space. */
static char *
link_target(const struct hctx *hc, const xmlNode *n)
{
	xmlChar		*href, *abs = NULL;
	const char	*h;
	char		*out = NULL;
	size_t		 len, i;

	if ((href = xmlGetNoNsProp(n, BAD_CAST "href")) == NULL)
		return NULL;
	h = (const char *)href;
	while (g_blank(*h))
		h++;
	len = strlen(h);
	while (len > 0 && g_blank(h[len - 1]))
		len--;
	if (len == 0 || len > HTML_URL_MAX || h[0] == '#' ||
	    strncasecmp(h, "javascript:", 11) == 0 ||
	    strncasecmp(h, "data:", 5) == 0)
		goto done;
	((char *)href)[h - (const char *)href + len] = '\0';
	abs = hc->hc_base != NULL ? xmlBuildURI(BAD_CAST h,
	    BAD_CAST hc->hc_base) : xmlStrdup(BAD_CAST h);
	if (abs == NULL)
		goto done;
	h = (const char *)abs;
	len = strlen(h);
	if (len > HTML_URL_MAX || (strncasecmp(h, "http://", 7) != 0 &&
	    strncasecmp(h, "https://", 8) != 0 &&
	    strncasecmp(h, "mailto:", 7) != 0))
		goto done;
	for (i = 0; i < len; i++)
		if ((unsigned char)h[i] <= 0x20 || h[i] == 0x7f)
			goto done;
	out = strdup(h);
 done:
	xmlFree(abs);
	xmlFree(href);
	return out;
}

static int
prev_is_cell(const xmlNode *n)
{
	for (n = n->prev; n != NULL; n = n->prev)
		if (n->type == XML_ELEMENT_NODE)
			return el_kind(n) == EL_CELL;
	return 0;
}

/* Returns whether to go into the node's children. */
static int
walk_enter(struct hctx *hc, const xmlNode *n)
{
	struct tbuf	*tb = hc->hc_tb;
	static const char *const hashes[] = {
		"# ", "## ", "### ", "#### ", "##### ", "###### "
	};

	if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) {
		if (n->content != NULL)
			tb_text(tb, (const char *)n->content,
			    strlen((const char *)n->content));
		return 0;
	}
	if (n->type != XML_ELEMENT_NODE)
		return 0;
	switch (el_kind(n)) {
	case EL_SKIP:
		return 0;
	case EL_BLOCK:
		tb_break(tb, 1);
		break;
	case EL_PARA:
	case EL_HR:
		tb_break(tb, 2);
		break;
	case EL_HEADING:
		tb_break(tb, 2);
		tb_prefix(tb, hashes[n->name[1] - '1']);
		break;
	case EL_LI:
		tb_break(tb, 1);
		tb_prefix(tb, "- ");
		break;
	case EL_BR:
		tb_newline(tb);
		break;
	case EL_PRE:
		tb_break(tb, 2);
		hc->hc_pre++;
		tb->tb_pre = 1;
		break;
	case EL_CELL:
		if (prev_is_cell(n)) {
			tb_space(tb);
			tb_raw(tb, "|", 1);
			tb_space(tb);
		}
		break;
	case EL_LINK:
		if (hc->hc_nlinks < HTML_LINKS_NESTED) {
			hc->hc_links[hc->hc_nlinks].hl_node = n;
			hc->hc_links[hc->hc_nlinks].hl_start = tb->tb_len;
			hc->hc_links[hc->hc_nlinks].hl_url = link_target(hc, n);
			hc->hc_nlinks++;
		}
		break;
	case EL_OTHER:
		break;
	}
	return 1;
}

static void
walk_leave_link(struct hctx *hc, const xmlNode *n)
{
	struct tbuf	*tb = hc->hc_tb;
	const char	*t, *url;
	size_t		 len, ulen;

	if (hc->hc_nlinks == 0 || hc->hc_links[hc->hc_nlinks - 1].hl_node != n)
		return;
	hc->hc_nlinks--;
	if ((url = hc->hc_links[hc->hc_nlinks].hl_url) == NULL)
		return;
	/* The link's own text, without the white space before it. */
	t = tb->tb_s != NULL ? tb->tb_s + hc->hc_links[hc->hc_nlinks].hl_start :
	    "";
	len = tb->tb_len - hc->hc_links[hc->hc_nlinks].hl_start;
	while (len > 0 && (*t == ' ' || *t == '\n')) {
		t++;
		len--;
	}
	ulen = strlen(url);
	if (len > 0 && !(len == ulen && memcmp(t, url, len) == 0)) {
		tb_space(tb);
		tb_raw(tb, "(", 1);
		tb_raw(tb, url, ulen);
		tb_raw(tb, ")", 1);
	}
	free(hc->hc_links[hc->hc_nlinks].hl_url);
	hc->hc_links[hc->hc_nlinks].hl_url = NULL;
}

static void
walk_leave(struct hctx *hc, const xmlNode *n)
{
	struct tbuf	*tb = hc->hc_tb;

	switch (el_kind(n)) {
	case EL_BLOCK:
	case EL_LI:
		tb_break(tb, 1);
		break;
	case EL_PARA:
	case EL_HEADING:
		tb_break(tb, 2);
		break;
	case EL_PRE:
		if (--hc->hc_pre <= 0) {
			hc->hc_pre = 0;
			tb->tb_pre = 0;
		}
		tb_break(tb, 2);
		break;
	case EL_LINK:
		walk_leave_link(hc, n);
		break;
	default:
		break;
	}
}

static void
walk(struct hctx *hc, xmlNode *top)
{
	xmlNode	*n = top->children;

	while (n != NULL && !hc->hc_tb->tb_full) {
		if (walk_enter(hc, n)) {
			if (n->children != NULL) {
				n = n->children;
				continue;
			}
			walk_leave(hc, n);
		}
		while (n->next == NULL) {
			n = n->parent;
			if (n == NULL || n == top)
				return;
			walk_leave(hc, n);
		}
		n = n->next;
	}
}

static void
emit_title(struct tbuf *tb, xmlNode *top)
{
	xmlNode	*t;
	xmlChar	*s;
	size_t	 len;

	if ((t = find_element(top, "title")) == NULL ||
	    (s = xmlNodeGetContent(t)) == NULL)
		return;
	len = text_cut_units((const char *)s, strlen((const char *)s),
	    HTML_TITLE_MAX, NULL);
	if (strspn((const char *)s, " \t\r\n") >= len) {
		xmlFree(s);
		return;
	}
	tb_text(tb, "Title: ", 7);
	tb_text(tb, (const char *)s, len);
	tb_break(tb, 2);
	xmlFree(s);
}

/* <base href>, itself resolved against the page's URL. */
static char *
base_url(xmlNode *top, const char *page)
{
	xmlNode	*b;
	xmlChar	*href, *abs;
	char	*out = NULL;

	if ((b = find_element(top, "base")) == NULL ||
	    (href = xmlGetNoNsProp(b, BAD_CAST "href")) == NULL)
		return page != NULL ? strdup(page) : NULL;
	abs = page != NULL ? xmlBuildURI(href, BAD_CAST page) :
	    xmlStrdup(href);
	if (abs != NULL)
		out = strdup((const char *)abs);
	xmlFree(abs);
	xmlFree(href);
	return out;
}

void
html_to_text(struct tbuf *tb, const uint8_t *buf, size_t len,
    const struct charset *given, const char *page_url)
{
	struct charset	 cs = { CS_UTF8, -1 };
	struct hctx	 hc;
	htmlDocPtr	 doc;
	xmlNode		*top;
	char		*s, *base;
	size_t		 n, plen;
	int		 stopped, i;

	if (charset_bom(buf, len, &cs) == 0)
		;
	else if (given != NULL)
		cs = *given;
	else if (prescan(buf, len, &cs) == -1) {
		cs.cs_kind = CS_UTF8;
		cs.cs_iconv = -1;
	}
	if ((s = charset_decode(&cs, buf, len, &n)) == NULL) {
		tb->tb_nomem = tb->tb_full = 1;
		return;
	}
	plen = html_guard(s, n);
	doc = html_parse(s, plen, &stopped);
	free(s);
	if (plen < n || stopped)
		tb->tb_cut = 1;
	if (doc == NULL)
		return;
	top = (xmlNode *)doc;
	memset(&hc, 0, sizeof(hc));
	hc.hc_tb = tb;
	base = base_url(top, page_url);
	hc.hc_base = base;
	emit_title(tb, top);
	walk(&hc, top);
	for (i = 0; i < hc.hc_nlinks; i++)
		free(hc.hc_links[i].hl_url);
	tb->tb_pre = 0;
	free(base);
	xmlFreeDoc(doc);
}
