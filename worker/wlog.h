#ifndef WLOG_H
#define WLOG_H

#define WLOG_PREFIX	"rtsandbox-worker: "

/* Logging, one write(2) per line, prefixed WLOG_PREFIX. */
void	 wlog(const char *, ...)
	    __attribute__((format(printf, 1, 2)));
void	 wlog_errno(const char *, ...)
	    __attribute__((format(printf, 1, 2)));

#endif /* WLOG_H */
