/*
 * msg_parse() and the getters against arbitrary JSON.  After a successful
 * parse every remaining field goes through a getter picked by the input,
 * then the descriptors, the data and msg_end(); a message of the same type
 * and id is built again and must parse.
 *
 * Input: byte 0 the sender, byte 1 the receiver, byte 2 the number of
 * descriptors and whether raw data follows, byte 3 the getters' choices and
 * bounds; the rest is the JSON.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include "frame.h"
#include "msg.h"

#define FUZZ_MAX	65536
#define FUZZ_KEYS	64

static int	 devnull = -1;

static int
lowest_free_fd(void)
{
	int	 fd;

	if ((fd = dup(devnull)) == -1)
		abort();
	close(fd);
	return fd;
}

/* One getter on one field, chosen by sel. */
static void
fuzz_get(struct msg *m, const char *key, unsigned sel)
{
	const char	*s, **sv;
	uint64_t	 u;
	int64_t		 i;
	size_t		 n, k, max = (sel >> 3) * 17;
	int		 b, present;

	switch (sel % 8) {
	case 0:
		if (msg_get_str(m, key, max, &s) == 0 &&
		    (strlen(s) > max || s[strlen(s)] != '\0'))
			abort();
		break;
	case 1:
		if (msg_get_str_opt(m, key, max, &s) == 0 && s != NULL &&
		    strlen(s) > max)
			abort();
		break;
	case 2:
		if (msg_get_uint(m, key, sel, UINT64_MAX >> sel % 64, &u) ==
		    0 && (u < sel || u > (UINT64_MAX >> sel % 64)))
			abort();
		break;
	case 3:
		if (msg_get_uint_opt(m, key, 0, max, &u, &present) == 0 &&
		    present && u > max)
			abort();
		break;
	case 4:
		if (msg_get_int(m, key, -(int64_t)max, max, &i) == 0 &&
		    (i < -(int64_t)max || i > (int64_t)max))
			abort();
		break;
	case 5:
		if (msg_get_bool(m, key, &b) == 0 && b != 0 && b != 1)
			abort();
		break;
	case 6:
		if (msg_get_strv(m, key, sel % 7, max, &sv, &n) == 0) {
			if (n > sel % 7 || sv[n] != NULL)
				abort();
			for (k = 0; k < n; k++)
				if (strlen(sv[k]) > max)
					abort();
		}
		break;
	default:
		/* Left for msg_end() to refuse. */
		break;
	}
}

static void
fuzz_rebuild(const struct msg *m, enum proc_role from, enum proc_role to)
{
	const struct msg_def	*md = msg_def(m->m_type);
	struct msgb		 mb;
	struct msg		 m2;
	struct frame		 f;
	size_t			 len;
	char			*json;
	int			 k;

	msgb_init(&mb, m->m_type, m->m_id);
	for (k = 0; k < md->md_nfds; k++)
		msg_add_fd(&mb, dup(devnull));
	msg_add_str(&mb, "s", "\xc3\xa9");
	if ((json = msgb_json(&mb, &len)) == NULL)
		abort();
	memset(&f, 0, sizeof(f));
	f.f_json = (const uint8_t *)json;
	f.f_json_len = len;
	for (k = 0; k < FRAME_MAXFDS; k++) {
		f.f_fds[k] = mb.mb_fds[k];
		mb.mb_fds[k] = -1;
	}
	f.f_nfds = mb.mb_nfds;
	mb.mb_nfds = 0;
	msgb_free(&mb);
	if (msg_parse(&m2, from, to, &f) == -1 || m2.m_type != m->m_type ||
	    m2.m_id != m->m_id)
		abort();
	msg_free(&m2);
	free(json);
}

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct frame	 f;
	struct msg	 m;
	char		*keys[FUZZ_KEYS];
	const uint8_t	*d;
	enum proc_role	 from, to;
	size_t		 nkeys = 0, k, dlen;
	int		 fd, before, i;

	if (devnull == -1 &&
	    (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		abort();
	if (size < 4 || size > FUZZ_MAX)
		return 0;
	before = lowest_free_fd();
	from = data[0] % (PROC__COUNT + 1);
	to = data[1] % (PROC__COUNT + 1);

	/* An exact-size copy, so reading past the end is caught. */
	memset(&f, 0, sizeof(f));
	f.f_json_len = size - 4;
	if ((f.f_json = malloc(f.f_json_len ? f.f_json_len : 1)) == NULL)
		abort();
	memcpy((uint8_t *)f.f_json, data + 4, f.f_json_len);
	if (data[2] & 0x80) {
		f.f_data = data;
		f.f_data_len = 4;
	}
	for (i = 0; i < FRAME_MAXFDS; i++)
		f.f_fds[i] = -1;
	f.f_nfds = data[2] % (FRAME_MAXFDS + 1);
	for (i = 0; i < f.f_nfds; i++)
		if ((f.f_fds[i] = dup(devnull)) == -1)
			abort();

	if (msg_parse(&m, from, to, &f) == 0) {
		if (m.m_type <= MSG_NONE || m.m_type >= MSG__COUNT ||
		    m.m_err[0] != '\0' || from >= PROC__COUNT ||
		    to >= PROC__COUNT)
			abort();
		fuzz_rebuild(&m, from, to);
		/* The getters detach fields, so walk a copy of the keys. */
		for (i = 0; i < (int)m.m_nfields && nkeys < FUZZ_KEYS; i++)
			if ((keys[nkeys++] = strdup(m.m_fields[i].mf_key)) ==
			    NULL)
				abort();
		for (k = 0; k < nkeys; k++)
			fuzz_get(&m, keys[k], data[3] + k * 11);
		if (data[3] & 1)
			for (i = 0; i < m.m_nfds; i++)
				if (msg_get_fd(&m, &fd) == 0)
					close(fd);
		if (msg_get_data(&m, &d, &dlen) == 0 && dlen != f.f_data_len)
			abort();
		if (msg_end(&m) == -1 && m.m_err[0] == '\0')
			abort();
		for (k = 0; k < nkeys; k++)
			free(keys[k]);
	} else if (m.m_err[0] == '\0' || !m.m_failed)
		abort();
	for (i = 0; i < FRAME_MAXFDS; i++)
		if (f.f_fds[i] != -1)
			abort();
	msg_free(&m);
	free((void *)f.f_json);
	if (lowest_free_fd() != before)
		abort();
	return 0;
}
