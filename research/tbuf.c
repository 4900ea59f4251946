/*
 * The bounded text builder the extractors (text.c, html.c, pdf.c) write
 * through, and text cut at a bound in UTF-16 code units.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"
#include "textint.h"

void
tb_init(struct tbuf *tb, size_t max_units)
{
	memset(tb, 0, sizeof(*tb));
	tb->tb_max = max_units;
}

void
tb_free(struct tbuf *tb)
{
	free(tb->tb_s);
	tb->tb_s = NULL;
	tb->tb_len = tb->tb_cap = 0;
}

static int
tb_grow(struct tbuf *tb, size_t n)
{
	char	*p;
	size_t	 cap;

	if (tb->tb_len + n + 1 <= tb->tb_cap)
		return 0;
	cap = tb->tb_cap < 4096 ? 4096 : tb->tb_cap;
	while (cap < tb->tb_len + n + 1)
		cap *= 2;
	if ((p = realloc(tb->tb_s, cap)) == NULL) {
		tb->tb_nomem = tb->tb_full = 1;
		return -1;
	}
	tb->tb_s = p;
	tb->tb_cap = cap;
	return 0;
}

int
tb_cp(struct tbuf *tb, uint32_t cp)
{
	size_t	 units = cp >= 0x10000 ? 2 : 1;

	if (tb->tb_full)
		return -1;
	if (tb->tb_units + units > tb->tb_max) {
		tb->tb_full = 1;
		return -1;
	}
	if (tb_grow(tb, 4) == -1)
		return -1;
	if (cp == 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		cp = 0xfffd;
	tb->tb_len += utf8_encode(cp, tb->tb_s + tb->tb_len);
	tb->tb_s[tb->tb_len] = '\0';
	tb->tb_units += units;
	return 0;
}

/* Newlines at the end of the output, up to 2. */
static int
tb_trailing_nl(const struct tbuf *tb)
{
	int	 n = 0;

	while (n < 2 && (size_t)n < tb->tb_len &&
	    tb->tb_s[tb->tb_len - 1 - n] == '\n')
		n++;
	return n;
}

/* Write what is pending before visible text. */
static void
tb_flush(struct tbuf *tb)
{
	const char	*p;
	int		 nl;

	if (tb->tb_len == 0) {
		tb->tb_nl = tb->tb_space = 0;
	} else if (tb->tb_nl > 0) {
		/* No space at the end of a line. */
		while (tb->tb_len > 0 && tb->tb_s[tb->tb_len - 1] == ' ') {
			tb->tb_s[--tb->tb_len] = '\0';
			tb->tb_units--;
		}
		for (nl = tb->tb_nl - tb_trailing_nl(tb); nl > 0; nl--)
			tb_cp(tb, '\n');
	} else if (tb->tb_space) {
		if (tb->tb_s[tb->tb_len - 1] != '\n' &&
		    tb->tb_s[tb->tb_len - 1] != ' ')
			tb_cp(tb, ' ');
	}
	tb->tb_nl = tb->tb_space = 0;
	if (tb->tb_pfx[0] != '\0') {
		for (p = tb->tb_pfx; *p != '\0'; p++)
			tb_cp(tb, (uint8_t)*p);
		tb->tb_pfx[0] = '\0';
	}
}

void
tb_prefix(struct tbuf *tb, const char *s)
{
	snprintf(tb->tb_pfx, sizeof(tb->tb_pfx), "%s", s);
}

void
tb_break(struct tbuf *tb, int n)
{
	if (n > tb->tb_nl)
		tb->tb_nl = n > 2 ? 2 : n;
	tb->tb_space = 0;
}

void
tb_space(struct tbuf *tb)
{
	tb->tb_space = 1;
}

void
tb_newline(struct tbuf *tb)
{
	/* A break right after a written newline counts from it. */
	if (tb->tb_nl == 0)
		tb->tb_nl = tb_trailing_nl(tb);
	if (tb->tb_nl < 2)
		tb->tb_nl++;
	tb->tb_space = 0;
}

static int
is_space_cp(uint32_t cp)
{
	return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' ||
	    cp == '\f' || cp == '\v' || cp == 0xa0;
}

static int
is_control_cp(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
}

void
tb_text(struct tbuf *tb, const char *s, size_t len)
{
	const uint8_t	*u = (const uint8_t *)s;
	size_t		 i = 0;
	uint32_t	 cp;

	while (i < len && !tb->tb_full) {
		i += utf8_decode(u + i, len - i, &cp);
		if (tb->tb_pre && cp == '\r')
			continue;
		if (tb->tb_pre && (cp == '\n' || cp == ' ' || cp == '\t')) {
			tb_flush(tb);
			if (cp != '\n' || tb->tb_len > 0)
				tb_cp(tb, cp);
			continue;
		}
		if (is_space_cp(cp)) {
			tb->tb_space = 1;
			continue;
		}
		if (is_control_cp(cp))
			continue;
		if (tb->tb_nl > 0 || tb->tb_space)
			tb_flush(tb);
		tb_cp(tb, cp);
	}
}

void
tb_raw(struct tbuf *tb, const char *s, size_t len)
{
	const uint8_t	*u = (const uint8_t *)s;
	size_t		 i = 0, run;
	uint32_t	 cp;

	if (len == 0)
		return;
	tb_flush(tb);
	while (i < len && !tb->tb_full) {
		/* Runs of printable ASCII in one go. */
		for (run = 0; i + run < len && u[i + run] >= 0x20 &&
		    u[i + run] < 0x7f; run++)
			;
		if (run > tb->tb_max - tb->tb_units) {
			run = tb->tb_max - tb->tb_units;
			tb->tb_full = 1;
		}
		if (run > 0) {
			if (tb_grow(tb, run) == -1)
				return;
			memcpy(tb->tb_s + tb->tb_len, s + i, run);
			tb->tb_len += run;
			tb->tb_s[tb->tb_len] = '\0';
			tb->tb_units += run;
			i += run;
			continue;
		}
		i += utf8_decode(u + i, len - i, &cp);
		tb_cp(tb, cp);
	}
}

/* No white space at the end, and a string even when nothing was written. */
int
tb_finish(struct tbuf *tb)
{
	while (tb->tb_len > 0 && (tb->tb_s[tb->tb_len - 1] == ' ' ||
	    tb->tb_s[tb->tb_len - 1] == '\n' ||
	    tb->tb_s[tb->tb_len - 1] == '\t' ||
	    tb->tb_s[tb->tb_len - 1] == '\r')) {
		tb->tb_len--;
		tb->tb_units--;
	}
	if (tb->tb_s == NULL && tb_grow(tb, 0) == -1)
		return -1;
	tb->tb_s[tb->tb_len] = '\0';
	return 0;
}

size_t
text_cut_units(const char *s, size_t len, size_t max_units, int *cut)
{
	const uint8_t	*u = (const uint8_t *)s;
	size_t		 i = 0, n, units = 0, w;
	uint32_t	 cp;

	while (i < len) {
		n = utf8_decode(u + i, len - i, &cp);
		w = cp >= 0x10000 ? 2 : 1;
		if (units + w > max_units)
			break;
		units += w;
		i += n;
	}
	if (cut != NULL)
		*cut = i < len;
	return i;
}
