/*
 * Logging in the OpenBSD manner: every line names the role that wrote it, and
 * fatal()/fatalx() say which process died.  Lines go to stderr; when stderr is
 * the journal (JOURNAL_STREAM set) each line carries its syslog priority as a
 * "<N>" prefix so journald files it at the right level.
 */
#ifndef RTSANDBOX_LOG_H
#define RTSANDBOX_LOG_H

#include <stdarg.h>

/* debug: log_debug() lines are written; journal: force "<N>" prefixes. */
void	log_init(const char *role, int debug);
/* Rename this process in logs, e.g. "broker[discord_123]". */
void	log_setname(const char *name);
const char *log_name(void);
int	log_getdebug(void);

void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
/* strdup(3) or fatal(): for the copies a process cannot go on without. */
char	*xstrdup(const char *);
void	fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif
