/*
 * Records for the operator to audit: an upstream call, a failed turn, a
 * worker's last lines.  Under systemd each record is one entry of the
 * journal with structured fields (RTSANDBOX_CHANNEL=, ...), written with
 * the journal's native protocol (systemd.journal-fields(7), "Native Journal
 * Protocol") on a datagram socket the supervisor connected before any
 * sandbox; elsewhere, or when the journal does not take it, one line of the
 * log, "what: key=value ...", every value escaped.
 *
 * The encoder and the decoder are pure functions over a buffer, for Check
 * and libFuzzer.
 */
#ifndef RTSANDBOX_JOURNAL_H
#define RTSANDBOX_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

/* Where journald takes native entries. */
#define JOURNAL_SOCKET_PATH	"/run/systemd/journal/socket"
/* One record: far below a datagram's bound (SO_SNDBUF, set to twice this). */
#define JOURNAL_RECORD_MAX	(128u * 1024)
/* A field name of the journal: [A-Z0-9_], not starting with '_'. */
#define JOURNAL_NAME_MAX	64u

/*
 * A datagram socket connected to path, non-blocking and close-on-exec, or
 * -1 with errno.  Done before any sandbox: what holds it can write journal
 * entries and nothing else.
 */
int	journal_connect(const char *path);
/* The process's descriptor for records (-1: records go to the log). */
void	journal_set_fd(int);
int	journal_fd(void);

/*
 * s as text safe for one log line and one journal field: a control
 * character (U+0000-U+001F, U+007F), a byte that is not UTF-8, '\\' and
 * '"' become \xNN, \\ and \"; the rest is copied.  At most outlen - 1
 * bytes and a NUL are written, never half an escape or half a character;
 * returns the number of input bytes taken (len when all fit).
 */
size_t	journal_escape(char *out, size_t outlen, const void *s, size_t len);

/* A record being built. */
struct jrec {
	uint8_t		 jr_buf[JOURNAL_RECORD_MAX];	/* native entry */
	size_t		 jr_len;
	char		 jr_line[2048];		/* the log's line */
	size_t		 jr_linelen;
	int		 jr_priority;		/* syslog's */
	int		 jr_full;		/* a field did not fit */
};

/* A record of priority (LOG_INFO, LOG_WARNING, ...); what names it in the
 * log's line and in MESSAGE= with the fields after it. */
void	jrec_init(struct jrec *, int priority, const char *what);
/*
 * A field: name is "RTSANDBOX_" + key upper-cased in the journal, key in
 * the log's line.  Values are taken as they are (binary-safe: a value with
 * a newline is sent with its length) up to the room left; the log's line
 * gets them escaped.
 */
void	jrec_add(struct jrec *, const char *key, const void *value,
	    size_t len);
void	jrec_add_str(struct jrec *, const char *key, const char *value);
/* A value journal_escape() made: the log's line takes it as it is. */
void	jrec_add_escaped(struct jrec *, const char *key, const char *value);
void	jrec_add_uint(struct jrec *, const char *key, uint64_t);
/* Only in the journal's entry (a long text the log's line would cut). */
void	jrec_add_journal_only(struct jrec *, const char *key,
	    const void *value, size_t len);
/* To the journal when there is one and it takes the entry, else to the
 * log.  Returns 1 for the journal, 0 for the log. */
int	jrec_send(struct jrec *);

/*
 * Native protocol, one field appended to buf (of size cap, *len used):
 * "NAME=value\n", or, when value holds a newline, "NAME\n", its length as
 * 64-bit little-endian, value, "\n".  -1 when the name is not a journal
 * name or it does not fit (*len unchanged).
 */
int	journal_encode(uint8_t *buf, size_t cap, size_t *len, const char *name,
	    const void *value, size_t vlen);
/*
 * One native entry, field by field: cb gets each name and value (not
 * NUL-terminated).  -1 when the entry breaks the protocol (a field without
 * '=' or a length, a length past the end, a bad name, no final newline) or
 * cb returned -1.
 */
typedef int	(*journal_field_cb)(const char *name, size_t nlen,
		    const uint8_t *value, size_t vlen, void *arg);
int	journal_decode(const uint8_t *buf, size_t len, journal_field_cb,
	    void *arg);

#endif
