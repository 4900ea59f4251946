/*
 * Logging in the OpenBSD manner: every line names the role that wrote it, and
 * fatal()/fatalx() say which process died.  Lines go to stderr; when stderr is
 * the journal (JOURNAL_STREAM set) each line carries its syslog priority as a
 * "<N>" prefix so journald files it at the right level.
 *
 * Messages carry strings that came from peers (turn ids, server and tool
 * names, error texts), so every line is escaped as it is written: no caller
 * can forge a line, or a journald priority, by forgetting to.
 */
#ifndef RTSANDBOX_LOG_H
#define RTSANDBOX_LOG_H

#include <stdarg.h>
#include <stddef.h>

/* A line as written, "<N>" prefix and newline included: at most PIPE_BUF,
 * so that one write(2) puts it in a pipe whole. */
#define LOG_LINE_MAX	4096

/*
 * What a line holds: printable ASCII and well-formed UTF-8 as they are; a
 * backslash as "\\"; every byte of a C0 control, DEL, a C1 control
 * (U+0080-U+009F) or of anything that is not UTF-8 as "\xNN" (lower-case
 * hex), so that "\x" in a line always stands for one byte.  Writes at most
 * dstlen bytes, never part of an escape or of a UTF-8 sequence, and no NUL;
 * returns the bytes written and, in *used when not NULL, the bytes of src
 * they stand for.
 */
size_t	log_escape(char *dst, size_t dstlen, const char *src, size_t srclen,
	    size_t *used);

/*
 * A line its writer escaped already, in log_escape()'s manner (a record of
 * key="value" fields whose own backslashes and quotes are escaped): its
 * backslashes are kept as they are, anything else is escaped as ever.
 */
void	log_escaped(int warn, const char *line);

/* debug: log_debug() lines are written; journal: force "<N>" prefixes. */
void	log_init(const char *role, int debug);
/* Rename this process in logs, e.g. "broker[discord_123]". */
void	log_setname(const char *name);
/* For a child whose environment is empty: stderr is the journal. */
void	log_setjournal(int);
int	log_getjournal(void);
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
