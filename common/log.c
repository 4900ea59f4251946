#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"
#include "validate.h"

static char	 log_procname[160] = "rtsandbox";
static int	 log_debug_on;
static int	 log_journal;

void
log_init(const char *role, int debug)
{
	log_setname(role);
	log_debug_on = debug;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
}

void
log_setname(const char *name)
{
	snprintf(log_procname, sizeof(log_procname), "%s", name);
}

void
log_setjournal(int journal)
{
	log_journal = journal;
}

int
log_getjournal(void)
{
	return log_journal;
}

const char *
log_name(void)
{
	return log_procname;
}

int
log_getdebug(void)
{
	return log_debug_on;
}

/*
 * The length of the UTF-8 sequence at s (at most n bytes) when it is a
 * well-formed one that is not a C1 control (U+0080-U+009F): 2 to 4, or 0.
 * Overlong forms, surrogates and code points past U+10FFFF are not
 * well-formed.
 */
static size_t
log_utf8_len(const unsigned char *s, size_t n)
{
	size_t	 len, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((s[0] == 0xc2 && s[1] <= 0x9f) ||		/* C1 */
	    (s[0] == 0xe0 && s[1] < 0xa0) ||		/* overlong */
	    (s[0] == 0xed && s[1] > 0x9f) ||		/* surrogate */
	    (s[0] == 0xf0 && s[1] < 0x90) ||		/* overlong */
	    (s[0] == 0xf4 && s[1] > 0x8f))		/* past U+10FFFF */
		return 0;
	return len;
}

/* log_escape(), or with keep_bs a backslash as it is (escaped_line()). */
static size_t
log_escape_as(char *dst, size_t dstlen, const char *src, size_t srclen,
    size_t *used, int keep_bs)
{
	static const char	 hex[] = "0123456789abcdef";
	const unsigned char	*s = (const unsigned char *)src;
	size_t			 i = 0, o = 0, k;

	while (i < srclen) {
		if (s[i] >= 0x20 && s[i] < 0x7f && (s[i] != '\\' || keep_bs)) {
			/* A run of printable ASCII at once: most of a line. */
			for (k = i + 1; k < srclen && s[k] >= 0x20 &&
			    s[k] < 0x7f && (s[k] != '\\' || keep_bs); k++)
				;
			if (k - i > dstlen - o)
				k = i + (dstlen - o);
			if (k == i)
				break;
			memcpy(dst + o, s + i, k - i);
			o += k - i;
			i = k;
		} else if (s[i] == '\\') {
			if (o + 2 > dstlen)
				break;
			dst[o++] = '\\';
			dst[o++] = '\\';
			i++;
		} else if ((k = log_utf8_len(s + i, srclen - i)) != 0) {
			if (o + k > dstlen)
				break;
			memcpy(dst + o, s + i, k);
			o += k;
			i += k;
		} else {
			/* C0, DEL, and every byte of a C1 control or of
			 * what is not UTF-8 */
			if (o + 4 > dstlen)
				break;
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[s[i] >> 4];
			dst[o++] = hex[s[i] & 0xf];
			i++;
		}
	}
	if (used != NULL)
		*used = i;
	return o;
}

size_t
log_escape(char *dst, size_t dstlen, const char *src, size_t srclen,
    size_t *used)
{
	return log_escape_as(dst, dstlen, src, srclen, used, 0);
}

/*
 * One write per line of at most LOG_LINE_MAX bytes, which a pipe takes
 * whole (PIPE_BUF): lines of several processes never interleave, and a
 * sandboxed child needs nothing but write(2) to log.  Everything but the
 * "<N>" prefix and the final newline is escaped (log_escape), so that no
 * string a peer sent can end the line or start another with a priority of
 * its own.
 */
static void
log_write_as(int pri, const char *prefix, const char *msg, const char *err,
    int keep_bs)
{
	char	 raw[LOG_LINE_MAX], line[LOG_LINE_MAX];
	size_t	 o = 0, n;

	/* prefix, the process's name, ": ", msg, and ": " err: cut where the
	 * line ends. */
	n = str_append(raw, sizeof(raw), 0, prefix, strlen(prefix));
	n = str_append(raw, sizeof(raw), n, log_procname,
	    strlen(log_procname));
	n = str_append(raw, sizeof(raw), n, ": ", 2);
	n = str_append(raw, sizeof(raw), n, msg, strlen(msg));
	if (err != NULL) {
		n = str_append(raw, sizeof(raw), n, ": ", 2);
		n = str_append(raw, sizeof(raw), n, err, strlen(err));
	}
	if (log_journal) {
		line[o++] = '<';
		line[o++] = (char)('0' + (pri & 7));
		line[o++] = '>';
	}
	/* the newline always fits */
	o += log_escape_as(line + o, sizeof(line) - 1 - o, raw, n, NULL,
	    keep_bs);
	line[o++] = '\n';
	/* Nowhere to report a failed log write; a short one is not retried. */
	if (write(STDERR_FILENO, line, o) == -1)
		return;
}

static void
log_write(int pri, const char *prefix, const char *msg, const char *err)
{
	log_write_as(pri, prefix, msg, err, 0);
}

void
log_escaped(int warn, const char *line)
{
	int	 saved = errno;

	log_write_as(warn ? LOG_WARNING : LOG_INFO, "", line, NULL, 1);
	errno = saved;
}

static void __attribute__((format(printf, 2, 0)))
vlog(int pri, const char *fmt, va_list ap, const char *err)
{
	char	 msg[LOG_LINE_MAX];
	int	 saved = errno;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	log_write(pri, "", msg, err);
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	vlog(LOG_WARNING, fmt, ap, strerror(saved));
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_WARNING, fmt, ap, NULL);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(LOG_INFO, fmt, ap, NULL);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	 ap;

	if (!log_debug_on)
		return;
	va_start(ap, fmt);
	vlog(LOG_DEBUG, fmt, ap, NULL);
	va_end(ap);
}

static void __attribute__((noreturn, format(printf, 1, 0)))
vfatal(const char *fmt, va_list ap, const char *err)
{
	char	 msg[LOG_LINE_MAX];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	log_write(LOG_CRIT, "fatal in ", msg, err);
	exit(1);
}

void
fatal(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	vfatal(fmt, ap, strerror(saved));
}

void
fatalx(const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vfatal(fmt, ap, NULL);
}

char *
xstrdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		fatal("strdup");
	return p;
}
