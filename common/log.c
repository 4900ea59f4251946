#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"

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

/* One write per line, so that lines of several processes never interleave
 * and a sandboxed child needs nothing but write(2) to log. */
static void
log_write(int pri, const char *prefix, const char *msg, const char *err)
{
	char	 line[2304];
	int	 n;

	if (log_journal)
		n = snprintf(line, sizeof(line), "<%d>%s%s: %s%s%s\n", pri,
		    prefix, log_procname, msg, err ? ": " : "", err ? err : "");
	else
		n = snprintf(line, sizeof(line), "%s%s: %s%s%s\n", prefix,
		    log_procname, msg, err ? ": " : "", err ? err : "");
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	/* Nowhere to report a failed log write; a short one is not retried. */
	if (write(STDERR_FILENO, line, n) == -1)
		return;
}

static void __attribute__((format(printf, 2, 0)))
vlog(int pri, const char *fmt, va_list ap, const char *err)
{
	char	 msg[2048];
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
	char	 msg[2048];

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
