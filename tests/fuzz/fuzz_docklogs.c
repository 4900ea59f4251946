/*
 * A container's last log lines (dockerd-client/docklogs.c).  The first byte
 * chooses how many lines are asked for (1-200); the rest is the Engine
 * API's answer.  Every line kept must be bounded and hold no control
 * character, never more lines than asked.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docklogs.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct dock_log_lines	 dl;
	size_t				 max, i, j, n;

	if (size < 1)
		return 0;
	max = 1 + data[0] % DOCK_LOGS_LINES_MAX;
	CHECK(dock_logs_parse(data + 1, size - 1, max, &dl) == 0);
	CHECK(dl.dl_n <= max);
	for (i = 0; i < dl.dl_n; i++) {
		n = strnlen(dl.dl_line[i], sizeof(dl.dl_line[i]));
		CHECK(n <= DOCK_LOG_LINE_MAX + 3);
		for (j = 0; j < n; j++)
			CHECK((unsigned char)dl.dl_line[i][j] >= 0x20 &&
			    dl.dl_line[i][j] != 0x7f);
	}
	return 0;
}
