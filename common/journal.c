#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "journal.h"
#include "log.h"
#include "validate.h"

static int	 journal_sock = -1;

int
journal_connect(const char *path)
{
	struct sockaddr_un	 sun;
	size_t			 n = strlen(path);
	int			 fd, size = 2 * JOURNAL_RECORD_MAX;

	if (path[0] != '/' || n >= sizeof(sun.sun_path)) {
		errno = EINVAL;
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, n);
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1)
		return -1;
	/* A record must fit one datagram; a smaller buffer is only slower. */
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		int	 saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

void
journal_set_fd(int fd)
{
	journal_sock = fd;
}

int
journal_fd(void)
{
	return journal_sock;
}

size_t
journal_escape(char *out, size_t outlen, const void *in, size_t len)
{
	const uint8_t	*s = in;
	size_t		 i = 0, o = 0, next, k;
	uint32_t	 cp;
	char		 esc[5];

	if (outlen == 0)
		return 0;
	while (i < len) {
		/* A run of printable ASCII at once: most of a value. */
		for (next = i; next < len && s[next] >= 0x20 &&
		    s[next] < 0x7f && s[next] != '\\' && s[next] != '"'; next++)
			;
		if (next > i) {
			if (next - i >= outlen - o)
				next = i + (outlen - 1 - o);
			if (next == i)
				break;
			memcpy(out + o, s + i, next - i);
			o += next - i;
			i = next;
			continue;
		}
		next = i;
		if (s[i] < 0x20 || s[i] == 0x7f || s[i] == '\\' ||
		    s[i] == '"' || utf8_next(s, len, &next, &cp) == -1) {
			if (s[i] == '\\' || s[i] == '"')
				(void)snprintf(esc, sizeof(esc), "\\%c", s[i]);
			else
				(void)snprintf(esc, sizeof(esc), "\\x%02x",
				    s[i]);
			k = strlen(esc);
			if (o + k >= outlen)
				break;
			memcpy(out + o, esc, k);
			o += k;
			i++;
			continue;
		}
		if (o + (next - i) >= outlen)
			break;
		memcpy(out + o, s + i, next - i);
		o += next - i;
		i = next;
	}
	out[o] = '\0';
	return i;
}

static int
journal_name_ok(const char *name, size_t n)
{
	size_t	 i;

	if (n == 0 || n > JOURNAL_NAME_MAX || name[0] == '_')
		return 0;
	for (i = 0; i < n; i++)
		if (!((name[i] >= 'A' && name[i] <= 'Z') ||
		    (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
			return 0;
	return 1;
}

int
journal_encode(uint8_t *buf, size_t cap, size_t *len, const char *name,
    const void *value, size_t vlen)
{
	size_t	 n = strlen(name), need, at = *len;
	int	 binary = memchr(value, '\n', vlen) != NULL;
	int	 i;

	if (!journal_name_ok(name, n))
		return -1;
	need = n + 1 + (binary ? 8 : 0) + vlen + 1;
	if (need < vlen || at > cap || need > cap - at)
		return -1;
	memcpy(buf + at, name, n);
	at += n;
	if (binary) {
		buf[at++] = '\n';
		for (i = 0; i < 8; i++)
			buf[at++] = (uint8_t)((uint64_t)vlen >> (8 * i));
	} else
		buf[at++] = '=';
	if (vlen > 0)
		memcpy(buf + at, value, vlen);
	at += vlen;
	buf[at++] = '\n';
	*len = at;
	return 0;
}

int
journal_decode(const uint8_t *buf, size_t len, journal_field_cb cb, void *arg)
{
	const uint8_t	*nl, *eq;
	size_t		 at = 0, nlen, vlen;
	uint64_t	 v;
	int		 i;

	while (at < len) {
		if ((nl = memchr(buf + at, '\n', len - at)) == NULL)
			return -1;
		eq = memchr(buf + at, '=', (size_t)(nl - (buf + at)));
		nlen = (size_t)((eq != NULL ? eq : nl) - (buf + at));
		if (!journal_name_ok((const char *)buf + at, nlen))
			return -1;
		if (eq != NULL) {
			vlen = (size_t)(nl - eq - 1);
			if (cb((const char *)buf + at, nlen, eq + 1, vlen,
			    arg) == -1)
				return -1;
			at = (size_t)(nl - buf) + 1;
			continue;
		}
		/* NAME\n, 64-bit little-endian length, value, \n */
		at = (size_t)(nl - buf) + 1;
		if (len - at < 8)
			return -1;
		for (v = 0, i = 7; i >= 0; i--)
			v = (v << 8) | buf[at + i];
		at += 8;
		if (v >= len - at || buf[at + v] != '\n')
			return -1;
		if (cb((const char *)nl - nlen, nlen, buf + at, (size_t)v,
		    arg) == -1)
			return -1;
		at += (size_t)v + 1;
	}
	return 0;
}

/* The log's line: " key=value", the value quoted when it needs to be.
 * Put together with memcpy: a record is made for every upstream call. */
static void
jrec_line(struct jrec *jr, const char *key, const void *value, size_t len,
    int escaped)
{
	char	 esc[1600], *p;
	size_t	 taken, elen, klen = strlen(key), room, n;
	int	 quote = len == 0;

	if (escaped) {
		taken = len < sizeof(esc) ? len : sizeof(esc) - 1;
		memcpy(esc, value, taken);
		esc[taken] = '\0';
	} else
		taken = journal_escape(esc, sizeof(esc), value, len);
	elen = strlen(esc);
	if (!quote && (memchr(esc, ' ', elen) != NULL ||
	    memchr(esc, '=', elen) != NULL))
		quote = 1;
	room = sizeof(jr->jr_line) - jr->jr_linelen;
	n = 1 + klen + 1 + elen + (taken < len ? 3 : 0) + (quote ? 2 : 0);
	if (n >= room) {
		/* What fitted stays; the line says it was cut. */
		jr->jr_line[jr->jr_linelen] = '\0';
		if (room > 5 && !jr->jr_full) {
			memcpy(jr->jr_line + jr->jr_linelen, " ...", 5);
			jr->jr_linelen += 4;
		}
		jr->jr_full = 1;
		return;
	}
	p = jr->jr_line + jr->jr_linelen;
	*p++ = ' ';
	memcpy(p, key, klen);
	p += klen;
	*p++ = '=';
	if (quote)
		*p++ = '"';
	memcpy(p, esc, elen);
	p += elen;
	if (taken < len) {
		memcpy(p, "...", 3);
		p += 3;
	}
	if (quote)
		*p++ = '"';
	*p = '\0';
	jr->jr_linelen += n;
}

void
jrec_init(struct jrec *jr, int priority, const char *what)
{
	jr->jr_len = 0;
	jr->jr_full = 0;
	jr->jr_priority = priority;
	jr->jr_linelen = str_append(jr->jr_line, sizeof(jr->jr_line), 0,
	    what, strlen(what));
	jr->jr_linelen = str_append(jr->jr_line, sizeof(jr->jr_line),
	    jr->jr_linelen, ":", 1);
}

static void
jrec_field(struct jrec *jr, const char *key, const void *value, size_t len)
{
	static const char	 prefix[] = "RTSANDBOX_";
	char			 name[JOURNAL_NAME_MAX + 1];
	size_t			 i, klen = strlen(key);

	/* Without a journal only the line is written (jrec_send()). */
	if (journal_sock == -1 || sizeof(prefix) - 1 + klen >= sizeof(name))
		return;
	memcpy(name, prefix, sizeof(prefix) - 1);
	for (i = 0; i <= klen; i++)	/* its NUL too */
		name[sizeof(prefix) - 1 + i] = key[i] >= 'a' && key[i] <= 'z' ?
		    (char)(key[i] - ('a' - 'A')) : key[i];
	/* The room kept for MESSAGE= and the rest at the end. */
	if (journal_encode(jr->jr_buf, sizeof(jr->jr_buf) - sizeof(jr->jr_line)
	    - 128, &jr->jr_len, name, value, len) == -1)
		jr->jr_full = 1;
}

void
jrec_add(struct jrec *jr, const char *key, const void *value, size_t len)
{
	jrec_field(jr, key, value, len);
	jrec_line(jr, key, value, len, 0);
}

void
jrec_add_escaped(struct jrec *jr, const char *key, const char *value)
{
	size_t	 len = strlen(value);

	jrec_field(jr, key, value, len);
	jrec_line(jr, key, value, len, 1);
}

void
jrec_add_str(struct jrec *jr, const char *key, const char *value)
{
	jrec_add(jr, key, value, strlen(value));
}

void
jrec_add_uint(struct jrec *jr, const char *key, uint64_t v)
{
	char	 num[24];

	jrec_add(jr, key, num, str_append_uint(num, sizeof(num), 0, v));
}

void
jrec_add_journal_only(struct jrec *jr, const char *key, const void *value,
    size_t len)
{
	jrec_field(jr, key, value, len);
}

int
jrec_send(struct jrec *jr)
{
	char	 pri[4];
	ssize_t	 n;
	int	 ok;

	if (journal_sock != -1) {
		(void)snprintf(pri, sizeof(pri), "%d", jr->jr_priority & 7);
		ok = journal_encode(jr->jr_buf, sizeof(jr->jr_buf),
		    &jr->jr_len, "MESSAGE", jr->jr_line, jr->jr_linelen) == 0 &&
		    journal_encode(jr->jr_buf, sizeof(jr->jr_buf),
		    &jr->jr_len, "PRIORITY", pri, strlen(pri)) == 0 &&
		    journal_encode(jr->jr_buf, sizeof(jr->jr_buf),
		    &jr->jr_len, "SYSLOG_IDENTIFIER", "rtsandboxd", 10) == 0;
		/* A journal that is gone or full: the log has it instead. */
		if (ok && (n = write(journal_sock, jr->jr_buf, jr->jr_len)) ==
		    (ssize_t)jr->jr_len)
			return 1;
	}
	/* every value in it was escaped (journal_escape()) */
	log_escaped(jr->jr_priority <= LOG_WARNING, jr->jr_line);
	return 0;
}
