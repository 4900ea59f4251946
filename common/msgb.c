/*
 * The builder of frames' messages (DESIGN.md 3, STYLE.md 2-4): the JSON text
 * written as fields are added, every value checked as it is added, sent
 * with its descriptors and data by msg_send().
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "log.h"
#include "msg.h"
#include "msgint.h"
#include "validate.h"

/* Builder failures are bugs of ours: say which, once. */
static void __attribute__((format(printf, 2, 3)))
msgb_fail(struct msgb *mb, const char *fmt, ...)
{
	char	 buf[160];
	va_list	 ap;

	if (mb->mb_failed)
		return;
	mb->mb_failed = 1;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_warnx("message %s: %s", msg_type_name(mb->mb_type) != NULL ?
	    msg_type_name(mb->mb_type) : "(none)", buf);
}

/*
 * The builder writes the JSON text as fields are added, with no tree in
 * between: "{" and "t" first, each field after, "}" when it is sent.  The
 * keys written so far are kept as offsets into the text, to refuse one
 * added twice.
 */
static int
msgb_reserve(struct msgb *mb, size_t n)
{
	char	*p;
	size_t	 cap;

	if (n <= mb->mb_cap - mb->mb_len)
		return 0;
	if (n > SIZE_MAX / 2 - mb->mb_len) {
		msgb_fail(mb, "out of memory");
		return -1;
	}
	for (cap = mb->mb_cap != 0 ? mb->mb_cap : 256; cap - mb->mb_len < n;)
		cap *= 2;
	if ((p = realloc(mb->mb_buf, cap)) == NULL) {
		msgb_fail(mb, "out of memory");
		return -1;
	}
	mb->mb_buf = p;
	mb->mb_cap = cap;
	return 0;
}

static void
msgb_put(struct msgb *mb, const char *s, size_t n)
{
	memcpy(mb->mb_buf + mb->mb_len, s, n);
	mb->mb_len += n;
}

/* s as a JSON string, escaped as cJSON prints it. */
static int
msgb_put_string(struct msgb *mb, const char *s)
{
	size_t	 len = strlen(s);

	if (msgb_reserve(mb, json_quoted_len(s, len)) == -1)
		return -1;
	mb->mb_len = json_quote(mb->mb_buf + mb->mb_len, s, len) - mb->mb_buf;
	return 0;
}

/* A field added after the text was finished goes before its "}". */
static void
msgb_reopen(struct msgb *mb)
{
	if (mb->mb_closed) {
		mb->mb_len--;
		mb->mb_closed = 0;
	}
}

/*
 * ',"key":' for a new field, or -1 (the builder failed): a reserved name, a
 * key already there.  "id" goes in its own place, second.
 */
static int
msgb_key(struct msgb *mb, const char *key)
{
	size_t	 at, i, n;

	if (mb->mb_failed)
		return -1;
	if (key == NULL || strcmp(key, "t") == 0 || strcmp(key, "id") == 0) {
		msgb_fail(mb, "reserved field name");
		return -1;
	}
	if (mb->mb_nkeys == MSGB_KEYS_MAX) {
		msgb_fail(mb, "more than %d fields", MSGB_KEYS_MAX);
		return -1;
	}
	msgb_reopen(mb);
	at = mb->mb_len;
	if (msgb_reserve(mb, 1) == -1)
		return -1;
	msgb_put(mb, ",", 1);
	if (msgb_put_string(mb, key) == -1)
		return -1;
	n = mb->mb_len - at - 1;
	for (i = 0; i < mb->mb_nkeys; i++)
		if (mb->mb_keylen[i] == n && memcmp(mb->mb_buf +
		    mb->mb_keyoff[i], mb->mb_buf + at + 1, n) == 0) {
			mb->mb_len = at;
			msgb_fail(mb, "field \"%s\" added twice", key);
			return -1;
		}
	mb->mb_keyoff[mb->mb_nkeys] = at + 1;
	mb->mb_keylen[mb->mb_nkeys++] = n;
	if (msgb_reserve(mb, 1) == -1)
		return -1;
	msgb_put(mb, ":", 1);
	return 0;
}

void
msgb_init(struct msgb *mb, enum msg_type type, uint64_t id)
{
	const char	*name;
	int		 i;

	/* The key offsets are written before they are read. */
	memset(mb, 0, offsetof(struct msgb, mb_keyoff));
	for (i = 0; i < FRAME_MAXFDS; i++)
		mb->mb_fds[i] = -1;
	mb->mb_type = type;
	if ((name = msg_type_name(type)) == NULL) {
		msgb_fail(mb, "unknown message type %d", (int)type);
		return;
	}
	if (msgb_reserve(mb, 6) == -1)
		return;
	msgb_put(mb, "{\"t\":", 5);
	if (msgb_put_string(mb, name) == -1)
		return;
	mb->mb_idat = mb->mb_len;
	if (id != 0)
		msg_add_uint(mb, "id", id);
}

static int
msgb_text_ok(struct msgb *mb, const char *key, const char *s)
{
	size_t	 units;

	if (s == NULL) {
		msgb_fail(mb, "field \"%s\" is NULL", key);
		return 0;
	}
	/* A C string holds no NUL: UTF-8 is what is left to check. */
	if (utf8_utf16_len(s, strlen(s), &units) == -1) {
		msgb_fail(mb, "field \"%s\" is not valid UTF-8", key);
		return 0;
	}
	return 1;
}

void
msg_add_str(struct msgb *mb, const char *key, const char *value)
{
	if (mb->mb_failed || !msgb_text_ok(mb, key, value))
		return;
	if (msgb_key(mb, key) == 0)
		(void)msgb_put_string(mb, value);
}

/*
 * Integers go out as their decimal text, never through a double, which
 * would round large ones off by a unit or two.  "id" has its place right
 * after "t", whenever it is added.
 */
static void
msgb_add_int(struct msgb *mb, const char *key, int64_t value)
{
	char	 buf[32];
	size_t	 at, n;

	if (mb->mb_failed)
		return;
	if (value > MSG_INT_MAX || value < -MSG_INT_MAX) {
		msgb_fail(mb, "field \"%s\" beyond 2^53 - 1", key);
		return;
	}
	/* The digits after room for ",\"id\":" (below). */
	at = 6;
	n = value < 0 ? str_append(buf, sizeof(buf), at, "-", 1) : at;
	n = str_append_uint(buf, sizeof(buf), n, value < 0 ?
	    -(uint64_t)value : (uint64_t)value) - at;
	if (key == NULL || strcmp(key, "id") != 0) {
		if (msgb_key(mb, key) == 0 && msgb_reserve(mb, n) == 0)
			msgb_put(mb, buf + at, n);
		return;
	}
	if (value < 1) {
		msgb_fail(mb, "field \"id\" must be a positive integer");
		return;
	}
	if (mb->mb_has_id) {
		msgb_fail(mb, "field \"id\" added twice");
		return;
	}
	msgb_reopen(mb);
	memcpy(buf + at - 6, ",\"id\":", 6);
	at -= 6;
	n += 6;
	if (msgb_reserve(mb, n) == -1)
		return;
	memmove(mb->mb_buf + mb->mb_idat + n, mb->mb_buf + mb->mb_idat,
	    mb->mb_len - mb->mb_idat);
	memcpy(mb->mb_buf + mb->mb_idat, buf + at, n);
	mb->mb_len += n;
	for (size_t i = 0; i < mb->mb_nkeys; i++)
		mb->mb_keyoff[i] += n;
	mb->mb_has_id = 1;
}

void
msg_add_uint(struct msgb *mb, const char *key, uint64_t value)
{
	if (value > (uint64_t)MSG_INT_MAX) {
		msgb_fail(mb, "field \"%s\" beyond 2^53 - 1", key);
		return;
	}
	msgb_add_int(mb, key, (int64_t)value);
}

void
msg_add_int(struct msgb *mb, const char *key, int64_t value)
{
	msgb_add_int(mb, key, value);
}

void
msg_add_bool(struct msgb *mb, const char *key, int value)
{
	if (msgb_key(mb, key) == -1 || msgb_reserve(mb, 5) == -1)
		return;
	if (value)
		msgb_put(mb, "true", 4);
	else
		msgb_put(mb, "false", 5);
}

void
msg_add_strv(struct msgb *mb, const char *key, const char *const *v,
    size_t n)
{
	size_t	 i;

	if (mb->mb_failed)
		return;
	if (n > 0 && v == NULL) {
		msgb_fail(mb, "field \"%s\" is NULL", key);
		return;
	}
	for (i = 0; i < n; i++)
		if (!msgb_text_ok(mb, key, v[i]))
			return;
	if (msgb_key(mb, key) == -1 || msgb_reserve(mb, 1) == -1)
		return;
	msgb_put(mb, "[", 1);
	for (i = 0; i < n; i++) {
		if (i > 0) {
			if (msgb_reserve(mb, 1) == -1)
				return;
			msgb_put(mb, ",", 1);
		}
		if (msgb_put_string(mb, v[i]) == -1)
			return;
	}
	if (msgb_reserve(mb, 1) == 0)
		msgb_put(mb, "]", 1);
}

void
msg_add_fd(struct msgb *mb, int fd)
{
	if (fd < 0)
		msgb_fail(mb, "invalid descriptor");
	else if (mb->mb_failed)
		msg_close(fd);
	else if (mb->mb_nfds == FRAME_MAXFDS) {
		msg_close(fd);
		msgb_fail(mb, "more than %d descriptors", FRAME_MAXFDS);
	} else
		mb->mb_fds[mb->mb_nfds++] = fd;
}

void
msg_add_data(struct msgb *mb, const void *data, size_t len)
{
	if (mb->mb_failed)
		return;
	if (mb->mb_data != NULL || (data == NULL && len > 0)) {
		msgb_fail(mb, "invalid or repeated data");
		return;
	}
	mb->mb_data = data;
	mb->mb_data_len = len;
}

void
msgb_free(struct msgb *mb)
{
	int	 i;

	free(mb->mb_buf);
	mb->mb_buf = NULL;
	mb->mb_len = mb->mb_cap = 0;
	for (i = 0; i < FRAME_MAXFDS; i++) {
		msg_close(mb->mb_fds[i]);
		mb->mb_fds[i] = -1;
	}
	mb->mb_nfds = 0;
	/* Later msg_add_*() calls on a freed builder do nothing. */
	mb->mb_failed = 1;
}

/* The finished text, in the builder's buffer (NUL-terminated), or NULL
 * when the builder failed or breaks the table. */
static const char *
msgb_text(struct msgb *mb, size_t *len)
{
	const struct msg_def	*md;

	if (mb->mb_failed)
		return NULL;
	md = msg_def(mb->mb_type);
	/* The table binds the sender as much as the receiver. */
	if (mb->mb_nfds != md->md_nfds) {
		msgb_fail(mb, "needs %d descriptors, has %d", md->md_nfds,
		    mb->mb_nfds);
		return NULL;
	}
	if (mb->mb_data_len > 0 && !md->md_data) {
		msgb_fail(mb, "may not carry data");
		return NULL;
	}
	if (!mb->mb_has_id && msg_needs_id(mb->mb_type)) {
		msgb_fail(mb, "needs an id");
		return NULL;
	}
	if (!mb->mb_closed) {
		if (msgb_reserve(mb, 2) == -1)
			return NULL;
		msgb_put(mb, "}", 1);
		mb->mb_buf[mb->mb_len] = '\0';
		mb->mb_closed = 1;
	}
	*len = mb->mb_len;
	return mb->mb_buf;
}

char *
msgb_json(struct msgb *mb, size_t *len)
{
	const char	*text;
	char		*s;

	if ((text = msgb_text(mb, len)) == NULL)
		return NULL;
	if ((s = malloc(*len + 1)) == NULL) {
		msgb_fail(mb, "out of memory");
		return NULL;
	}
	memcpy(s, text, *len + 1);
	return s;
}

int
msg_send(struct frame_conn *c, struct msgb *mb)
{
	enum frame_err	 err;
	size_t		 len;
	const char	*json;
	int		 i;

	if ((json = msgb_text(mb, &len)) == NULL) {
		msgb_free(mb);
		return -1;
	}
	err = frame_conn_send(c, json, len, mb->mb_data, mb->mb_data_len,
	    mb->mb_fds, mb->mb_nfds);
	/* The conn owns the descriptors now, even when it refused them. */
	for (i = 0; i < FRAME_MAXFDS; i++)
		mb->mb_fds[i] = -1;
	mb->mb_nfds = 0;
	if (err != FRAME_OK)
		log_warnx("%s: %s: %s", __func__, msg_type_name(mb->mb_type),
		    frame_err_to_string(err));
	msgb_free(mb);
	return err == FRAME_OK ? 0 : -1;
}

int
msg_sendv(struct frame_conn *c, struct msgb *const *mbs, int n)
{
	struct frame_part	 fp[FRAME_SENDV_MAX];
	enum frame_err		 err = FRAME_OK;
	int			 i, ok = 1;

	if (n < 1 || n > FRAME_SENDV_MAX) {
		for (i = 0; i < n; i++)
			msgb_free(mbs[i]);
		return -1;
	}
	for (i = 0; i < n; i++) {
		fp[i].fp_json = NULL;
		if (!ok || mbs[i]->mb_nfds > 0)
			ok = 0;
		else if ((fp[i].fp_json = msgb_text(mbs[i],
		    &fp[i].fp_json_len)) == NULL)
			ok = 0;
		fp[i].fp_data = mbs[i]->mb_data;
		fp[i].fp_data_len = mbs[i]->mb_data_len;
	}
	if (ok && (err = frame_conn_sendv(c, fp, n)) != FRAME_OK)
		log_warnx("%s: %s and %d more: %s", __func__,
		    msg_type_name(mbs[0]->mb_type), n - 1,
		    frame_err_to_string(err));
	for (i = 0; i < n; i++)
		msgb_free(mbs[i]);
	return ok && err == FRAME_OK ? 0 : -1;
}
