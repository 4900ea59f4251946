/*
 * Docker's event stream (dockevents.c): one input read as a whole stream,
 * fed in pieces the input itself chooses, and each of its lines as an event.
 * Whatever is passed on must be bounded; whatever is accepted as an event
 * must name a container of ours by a lowercase hex id.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dockevents.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

static void
check_event(const struct dock_event *ev)
{
	size_t	 i, n = strnlen(ev->id, sizeof(ev->id));

	CHECK(n > 0 && n < sizeof(ev->id));
	for (i = 0; i < n; i++)
		CHECK((ev->id[i] >= '0' && ev->id[i] <= '9') ||
		    (ev->id[i] >= 'a' && ev->id[i] <= 'f'));
	CHECK(strnlen(ev->name, sizeof(ev->name)) < sizeof(ev->name));
	CHECK(strncmp(ev->name, "rtsb-", 5) == 0);
	CHECK(ev->action <= DOCK_EV_PAUSE);
	CHECK(ev->exit_code >= -1 && ev->exit_code < 1000000000);
	CHECK(ev->exit_code == -1 || ev->action == DOCK_EV_DIE);
	CHECK(ev->time >= 0);
}

static void
on_line(const char *line, size_t len, void *arg)
{
	struct dock_event	 ev;
	size_t			*n = arg;

	CHECK(len > 0 && len <= DOCK_EVENT_LINE_MAX);
	CHECK(memchr(line, '\n', len) == NULL);
	(*n)++;
	if (dock_event_parse(line, len, "rtsb", &ev) == 1)
		check_event(&ev);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dock_stream	 ds;
	struct dock_event	 ev;
	const char		*buf = (const char *)data, *why;
	size_t			 off = 0, step, lines = 0;
	int			 rc = 0;

	if (dock_event_parse(buf, size, "rtsb", &ev) == 1)
		check_event(&ev);
	if (dock_stream_init(&ds) == -1)
		return 0;
	/* the first byte chooses the size of the pieces */
	step = size > 0 ? (size_t)data[0] % 64 + 1 : 1;
	while (off < size && rc == 0) {
		if (step > size - off)
			step = size - off;
		rc = dock_stream_feed(&ds, buf + off, step, on_line, &lines,
		    &why);
		CHECK(rc == 0 || why != NULL);
		CHECK(ds.ds_head_len <= DOCK_EVENTS_HEAD_MAX);
		CHECK(ds.ds_line_len <= DOCK_EVENT_LINE_MAX);
		off += step;
	}
	if (rc == -1)
		CHECK(dock_stream_feed(&ds, "x", 1, on_line, &lines, &why) ==
		    -1);
	dock_stream_free(&ds);
	return 0;
}
