#include <string.h>

#include "docklogs.h"
#include "journal.h"

struct dl_state {
	struct dock_log_lines	*ds_out;
	size_t			 ds_max;
	size_t			 ds_next;	/* ring slot for the next line */
	size_t			 ds_total;	/* lines seen */
	char			 ds_raw[DOCK_LOG_LINE_MAX];
	size_t			 ds_rawlen;
	int			 ds_rawcut;
	int			 ds_open;	/* a line has begun */
};

static void
dl_line_ends(struct dl_state *ds)
{
	char	*slot = ds->ds_out->dl_line[ds->ds_next];
	size_t	 n = ds->ds_rawlen;

	if (!ds->ds_rawcut && n > 0 && ds->ds_raw[n - 1] == '\r')
		n--;
	if (journal_escape(slot, DOCK_LOG_LINE_MAX + 1, ds->ds_raw, n) < n ||
	    ds->ds_rawcut)
		memcpy(slot + strlen(slot), "...", 4);
	ds->ds_next = (ds->ds_next + 1) % ds->ds_max;
	ds->ds_total++;
	ds->ds_rawlen = 0;
	ds->ds_rawcut = 0;
	ds->ds_open = 0;
}

static void
dl_feed(struct dl_state *ds, const uint8_t *p, size_t n)
{
	const uint8_t	*nl;
	size_t		 k, room;

	while (n > 0) {
		nl = memchr(p, '\n', n);
		k = nl != NULL ? (size_t)(nl - p) : n;
		room = sizeof(ds->ds_raw) - ds->ds_rawlen;
		if (k > room)
			ds->ds_rawcut = 1;
		memcpy(ds->ds_raw + ds->ds_rawlen, p, k > room ? room : k);
		ds->ds_rawlen += k > room ? room : k;
		ds->ds_open = 1;
		if (nl == NULL)
			return;
		dl_line_ends(ds);
		p += k + 1;
		n -= k + 1;
	}
}

static int
dl_header_ok(const uint8_t *h)
{
	return h[0] <= 2 && h[1] == 0 && h[2] == 0 && h[3] == 0;
}

int
dock_logs_parse(const uint8_t *buf, size_t len, size_t max_lines,
    struct dock_log_lines *out)
{
	static struct dl_state	 ds;
	char			 tmp[DOCK_LOG_LINE_MAX + 4];
	size_t			 at = 0, size, n, first;

	if (max_lines < 1 || max_lines > DOCK_LOGS_LINES_MAX)
		return -1;
	memset(&ds, 0, sizeof(ds));
	out->dl_n = 0;
	out->dl_cut = 0;
	ds.ds_out = out;
	ds.ds_max = max_lines;
	out->dl_framed = len >= 8 && dl_header_ok(buf);
	if (!out->dl_framed)
		dl_feed(&ds, buf, len);
	else {
		while (len - at >= 8) {
			if (!dl_header_ok(buf + at)) {
				out->dl_cut = 1;
				break;
			}
			size = (size_t)buf[at + 4] << 24 |
			    (size_t)buf[at + 5] << 16 |
			    (size_t)buf[at + 6] << 8 | buf[at + 7];
			at += 8;
			n = size < len - at ? size : len - at;
			dl_feed(&ds, buf + at, n);
			at += n;
			if (n < size)
				out->dl_cut = 1;
		}
		if (at < len && !out->dl_cut)
			out->dl_cut = 1;
	}
	if (ds.ds_open)
		dl_line_ends(&ds);
	/* The ring in order, oldest first. */
	out->dl_n = ds.ds_total < max_lines ? ds.ds_total : max_lines;
	first = ds.ds_total < max_lines ? 0 : ds.ds_next;
	if (first != 0) {
		/* rotate by reversal: [first, n) and [0, first), then all */
		size_t	 a, b;

		for (a = 0, b = first - 1; a < b; a++, b--) {
			memcpy(tmp, out->dl_line[a], sizeof(tmp));
			memcpy(out->dl_line[a], out->dl_line[b], sizeof(tmp));
			memcpy(out->dl_line[b], tmp, sizeof(tmp));
		}
		for (a = first, b = out->dl_n - 1; a < b; a++, b--) {
			memcpy(tmp, out->dl_line[a], sizeof(tmp));
			memcpy(out->dl_line[a], out->dl_line[b], sizeof(tmp));
			memcpy(out->dl_line[b], tmp, sizeof(tmp));
		}
		for (a = 0, b = out->dl_n - 1; a < b; a++, b--) {
			memcpy(tmp, out->dl_line[a], sizeof(tmp));
			memcpy(out->dl_line[a], out->dl_line[b], sizeof(tmp));
			memcpy(out->dl_line[b], tmp, sizeof(tmp));
		}
	}
	return 0;
}
