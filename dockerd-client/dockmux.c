/*
 * The attach stream's frames (dockmux.h).  No I/O here.
 */
#include <string.h>

#include "dockmux.h"

#define STREAM_STDOUT	1
#define STREAM_STDERR	2

void
dock_mux_init(struct dock_mux *dm)
{
	dm->dm_hdr_len = 0;
	dm->dm_left = 0;
	dm->dm_stream = 0;
	dm->dm_out_len = 0;
	dm->dm_out_over = 0;
	dm->dm_err_bytes = 0;
	dm->dm_err_over = 0;
}

const char *
dock_mux_rc_to_string(enum dock_mux_rc rc)
{
	switch (rc) {
	case DOCK_MUX_MORE:
		return "more";
	case DOCK_MUX_STDOUT_OVER:
		return "stdout over its bound";
	case DOCK_MUX_STDERR_OVER:
		return "stderr over its bound";
	case DOCK_MUX_BROKEN:
		return "a malformed stream frame";
	}
	return "unknown";
}

static enum dock_mux_rc
state(const struct dock_mux *dm)
{
	if (dm->dm_stream == 0xff)
		return DOCK_MUX_BROKEN;
	if (dm->dm_out_over)
		return DOCK_MUX_STDOUT_OVER;
	if (dm->dm_err_over)
		return DOCK_MUX_STDERR_OVER;
	return DOCK_MUX_MORE;
}

enum dock_mux_rc
dock_mux_feed(struct dock_mux *dm, const uint8_t *p, size_t n)
{
	enum dock_mux_rc	 rc;
	size_t			 take, room;

	while ((rc = state(dm)) == DOCK_MUX_MORE && n > 0) {
		if (dm->dm_left == 0) {
			take = sizeof(dm->dm_hdr) - dm->dm_hdr_len;
			if (take > n)
				take = n;
			memcpy(dm->dm_hdr + dm->dm_hdr_len, p, take);
			dm->dm_hdr_len += take;
			p += take;
			n -= take;
			if (dm->dm_hdr_len < sizeof(dm->dm_hdr))
				break;
			dm->dm_hdr_len = 0;
			/* stdin (0) and Docker's own errors (3) never come
			 * to a run without a terminal that is well */
			if ((dm->dm_hdr[0] != STREAM_STDOUT &&
			    dm->dm_hdr[0] != STREAM_STDERR) ||
			    dm->dm_hdr[1] != 0 || dm->dm_hdr[2] != 0 ||
			    dm->dm_hdr[3] != 0) {
				dm->dm_stream = 0xff;
				break;
			}
			dm->dm_stream = dm->dm_hdr[0];
			dm->dm_left = (uint32_t)dm->dm_hdr[4] << 24 |
			    (uint32_t)dm->dm_hdr[5] << 16 |
			    (uint32_t)dm->dm_hdr[6] << 8 |
			    (uint32_t)dm->dm_hdr[7];
			continue;
		}
		take = n < dm->dm_left ? n : dm->dm_left;
		if (dm->dm_stream == STREAM_STDOUT) {
			room = PRECHECK_STDOUT_MAX - dm->dm_out_len;
			if (take > room) {
				memcpy(dm->dm_out + dm->dm_out_len, p, room);
				dm->dm_out_len += room;
				dm->dm_out_over = 1;
				break;
			}
			memcpy(dm->dm_out + dm->dm_out_len, p, take);
			dm->dm_out_len += take;
		} else {
			room = PRECHECK_STDERR_MAX - dm->dm_err_bytes;
			if (take > room) {
				dm->dm_err_bytes = PRECHECK_STDERR_MAX + 1ull;
				dm->dm_err_over = 1;
				break;
			}
			dm->dm_err_bytes += take;
		}
		p += take;
		n -= take;
		dm->dm_left -= (uint32_t)take;
	}
	return state(dm);
}

int
dock_mux_whole(const struct dock_mux *dm)
{
	return state(dm) == DOCK_MUX_MORE && dm->dm_left == 0 &&
	    dm->dm_hdr_len == 0;
}

int
dock_attach_head(const char *buf, size_t len, size_t *head_len,
    const char **why)
{
	size_t	 i;

	*head_len = 0;
	*why = NULL;
	for (i = 0; i + 4 <= len && i + 4 <= DOCK_ATTACH_HEAD_MAX; i++)
		if (memcmp(buf + i, "\r\n\r\n", 4) == 0)
			break;
	if (i + 4 > len || i + 4 > DOCK_ATTACH_HEAD_MAX) {
		if (len >= DOCK_ATTACH_HEAD_MAX) {
			*why = "an attach answer head too long";
			return -1;
		}
		return 0;
	}
	if (i < 12 || (memcmp(buf, "HTTP/1.1 ", 9) != 0 &&
	    memcmp(buf, "HTTP/1.0 ", 9) != 0) ||
	    (memcmp(buf + 9, "101", 3) != 0 &&
	    memcmp(buf + 9, "200", 3) != 0) ||
	    (i > 12 && buf[12] != ' ' && buf[12] != '\r')) {
		*why = "the attach was not switched to a stream";
		return -1;
	}
	*head_len = i + 4;
	return 1;
}
