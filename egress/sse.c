#include <string.h>

#include "sse.h"

enum { SW_NAME, SW_SPACE, SW_VALUE };
enum { SF_OTHER, SF_EVENT, SF_DATA };

void
sse_watch_init(struct sse_watch *sw)
{
	memset(sw, 0, sizeof(*sw));
}

/* The field whose name the line began with. */
static int
sse_field(const struct sse_watch *sw)
{
	if (sw->sw_namelen == 4 && memcmp(sw->sw_name, "data", 4) == 0)
		return SF_DATA;
	if (sw->sw_namelen == 5 && memcmp(sw->sw_name, "event", 5) == 0)
		return SF_EVENT;
	return SF_OTHER;
}

static void
sse_data(struct sse_watch *sw, const char *p, size_t n)
{
	size_t	 room = sizeof(sw->sw_data) - sw->sw_datalen;

	if (n > room) {
		n = room;
		sw->sw_data_cut = 1;
	}
	memcpy(sw->sw_data + sw->sw_datalen, p, n);
	sw->sw_datalen += n;
}

/* The value begins: data lines are joined with a newline. */
static void
sse_value_begins(struct sse_watch *sw)
{
	sw->sw_field = sse_field(sw);
	sw->sw_state = SW_VALUE;
	if (sw->sw_field == SF_DATA && sw->sw_data_lines++ > 0)
		sse_data(sw, "\n", 1);
	if (sw->sw_field == SF_EVENT)
		sw->sw_eventlen = 0;
}

/* Bytes of one line, no line end among them. */
static void
sse_segment(struct sse_watch *sw, const char *p, size_t n)
{
	const char	*colon;
	size_t		 k;

	sw->sw_linelen += n;
	while (n > 0) {
		switch (sw->sw_state) {
		case SW_NAME:
			colon = memchr(p, ':', n);
			k = colon != NULL ? (size_t)(colon - p) : n;
			if (sw->sw_namelen + k <= sizeof(sw->sw_name))
				memcpy(sw->sw_name + sw->sw_namelen, p, k);
			/* too long for a name looked for: never matches */
			sw->sw_namelen = sw->sw_namelen + k >
			    sizeof(sw->sw_name) ? sizeof(sw->sw_name) + 1 :
			    sw->sw_namelen + k;
			if (colon == NULL)
				return;
			p += k + 1;
			n -= k + 1;
			sw->sw_state = SW_SPACE;
			break;
		case SW_SPACE:
			sse_value_begins(sw);
			if (*p == ' ') {
				p++;
				n--;
			}
			break;
		case SW_VALUE:
			if (sw->sw_field == SF_DATA)
				sse_data(sw, p, n);
			else if (sw->sw_field == SF_EVENT) {
				k = sizeof(sw->sw_event) - 1 - sw->sw_eventlen;
				if (n > k) {
					/* longer than any name looked for */
					sw->sw_eventlen = sizeof(sw->sw_event) -
					    1;
					sw->sw_event[0] = '\0';
				} else {
					memcpy(sw->sw_event + sw->sw_eventlen,
					    p, n);
					sw->sw_eventlen += n;
				}
			}
			return;
		}
	}
}

/* Whether the data is a JSON object whose first member is "type":"error". */
static int
sse_data_is_error(const struct sse_watch *sw)
{
	static const char *const want[] = { "{", "\"type\"", ":", "\"error\"" };
	const char	*p = sw->sw_data, *end = p + sw->sw_datalen;
	size_t		 i, k;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' ||
		    *p == '\r'))
			p++;
		k = strlen(want[i]);
		if ((size_t)(end - p) < k || memcmp(p, want[i], k) != 0)
			return 0;
		p += k;
	}
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p < end && (*p == ',' || *p == '}');
}

static void
sse_line_ends(struct sse_watch *sw)
{
	if (sw->sw_linelen == 0) {
		/* a blank line: the event is complete */
		if ((sw->sw_eventlen == 5 && memcmp(sw->sw_event, "error", 5) ==
		    0) || sse_data_is_error(sw)) {
			sw->sw_found = 1;
			return;
		}
		sw->sw_eventlen = 0;
		sw->sw_datalen = 0;
		sw->sw_data_cut = 0;
		sw->sw_data_lines = 0;
		return;
	}
	/* "data" alone is a data line with an empty value */
	if (sw->sw_state == SW_NAME || sw->sw_state == SW_SPACE)
		sse_value_begins(sw);
	sw->sw_state = SW_NAME;
	sw->sw_namelen = 0;
	sw->sw_linelen = 0;
}

int
sse_watch_feed(struct sse_watch *sw, const void *buf, size_t len)
{
	const char	*p = buf, *end = p + len, *lf, *cr, *q;

	while (p < end && !sw->sw_found) {
		if (sw->sw_after_cr) {
			sw->sw_after_cr = 0;
			if (*p == '\n') {
				p++;
				continue;
			}
		}
		lf = memchr(p, '\n', (size_t)(end - p));
		cr = memchr(p, '\r', (size_t)((lf != NULL ? lf : end) - p));
		q = cr != NULL ? cr : lf != NULL ? lf : end;
		if (q > p)
			sse_segment(sw, p, (size_t)(q - p));
		if (q == end)
			break;
		sw->sw_after_cr = *q == '\r';
		sse_line_ends(sw);
		p = q + 1;
	}
	return sw->sw_found;
}
