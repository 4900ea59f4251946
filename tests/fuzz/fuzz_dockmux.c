/*
 * The attach stream of a precheck run (dockerd-client/dockmux.c).  The
 * first byte cuts the rest into reads of 1-256 bytes, as a socket may.
 * stdout never passes its bound, stderr's count never passes one past
 * its, and once the parser stops it stays stopped.  The rest is also an
 * attach answer's head.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dockmux.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dock_mux	 dm;
	enum dock_mux_rc	 rc = DOCK_MUX_MORE, prev;
	const char		*why;
	size_t			 step, i, take, hl;
	int			 h;

	if (size < 1)
		return 0;
	step = 1 + data[0];
	data++;
	size--;
	dock_mux_init(&dm);
	for (i = 0; i < size; i += take) {
		take = size - i < step ? size - i : step;
		prev = rc;
		rc = dock_mux_feed(&dm, data + i, take);
		CHECK(prev == DOCK_MUX_MORE || rc == prev);
		CHECK(dm.dm_out_len <= PRECHECK_STDOUT_MAX);
		CHECK(dm.dm_err_bytes <= PRECHECK_STDERR_MAX + 1ull);
		CHECK(dm.dm_out_over == (rc == DOCK_MUX_STDOUT_OVER));
		CHECK(!dm.dm_out_over || dm.dm_out_len == PRECHECK_STDOUT_MAX);
		CHECK(!dm.dm_err_over ||
		    dm.dm_err_bytes == PRECHECK_STDERR_MAX + 1ull);
	}
	CHECK(!dock_mux_whole(&dm) || rc == DOCK_MUX_MORE);
	h = dock_attach_head((const char *)data, size, &hl, &why);
	CHECK(h >= -1 && h <= 1);
	CHECK(h != 1 || (hl >= 16 && hl <= size &&
	    hl <= DOCK_ATTACH_HEAD_MAX &&
	    memcmp(data + hl - 4, "\r\n\r\n", 4) == 0));
	CHECK(h != -1 || why != NULL);
	return 0;
}
