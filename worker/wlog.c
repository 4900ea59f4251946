/*
 * The worker's log: one write(2) per line on standard error, prefixed
 * "rtsandbox-worker: ", errno left as it was.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "wlog.h"

static void __attribute__((format(printf, 2, 0)))
vlog_line(int err, const char *fmt, va_list ap)
{
	char	 msg[2048], line[2304];
	int	 n;

	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	n = snprintf(line, sizeof(line), WLOG_PREFIX "%s%s%s\n", msg,
	    err != 0 ? ": " : "", err != 0 ? strerror(err) : "");
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	/* One write per line; a failed log write has nowhere to go. */
	if (write(STDERR_FILENO, line, (size_t)n) == -1)
		return;
}

void
wlog(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	vlog_line(0, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
wlog_errno(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	vlog_line(saved, fmt, ap);
	va_end(ap);
	errno = saved;
}

