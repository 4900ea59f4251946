/*
 * pscript: the precheck scripts of the reference worker, a line-oriented
 * language of its own (rtsandbox-worker(8) defines it).  Everything here is
 * pure: the requests to the broker, the files written, the sleeps and the
 * log go through a struct pscript_io that the caller gives, so that the
 * parser and the interpreter are tested and fuzzed without I/O.
 */
#ifndef PSCRIPT_H
#define PSCRIPT_H

#include <stddef.h>

#include "wjson.h"

/*
 * The bounds of rtsandbox-protocol(7) for precheck runs, restated from
 * common/limits.h (the worker shares no code with the host); the unit
 * suite checks that they agree.
 */
#define PS_INPUT_MAX		(64u * 1024)	/* PRECHECK_INPUT_MAX */
#define PS_OUTPUT_MAX		(64u * 1024)	/* PRECHECK_STDOUT_MAX */
#define PS_REQUEST_MAX		(64u * 1024)	/* PRECHECK_REQUEST_MAX */
#define PS_ANSWER_MAX		(1024u * 1024)	/* PRECHECK_RESPONSE_MAX */
#define PS_ERROR_MAX		1000u		/* PRECHECK_ERROR_MAX */
#define PS_DEPTH_MAX		64u		/* PRECHECK_DEPTH_MAX */
#define PS_SERVERS_MAX		32u		/* PRECHECK_SERVERS_MAX */
#define PS_TIMEOUT_MS		600000		/* PRECHECK_TIMEOUT_MS_MAX */

/* The language's own: lines of a script, and the longest sleep. */
#define PS_LINES_MAX		1000u
#define PS_SLEEP_MS_MAX		600000u

struct pscript_io {
	/* One request: its status (0: no answer), its body in the buffer. */
	int	 (*pio_request)(void *, const char *method, const char *path,
		    const char *body, size_t len, struct wbuf *answer);
	/* Two POSTs of one body, both sent before either answer is read. */
	void	 (*pio_request2)(void *, const char *path, const char *body,
		    size_t len, int status[2]);
	/* Creates or truncates the file: 0 or an errno. */
	int	 (*pio_write)(void *, const char *path, const char *data,
		    size_t len);
	void	 (*pio_sleep)(void *, unsigned int ms);
	void	 (*pio_log)(void *, const char *text, size_t len);
	void	*pio_arg;
};

/* The run's input, as the host writes it on the worker's stdin. */
struct pscript_input {
	struct wjson		*pi_root;
	const struct wjson	*pi_script;
	const struct wjson	*pi_fired_at;
	const struct wjson	*pi_time_zone;
	const struct wjson	*pi_today;
	const struct wjson	*pi_schedule_id;
	const struct wjson	*pi_schedule_title;
	const struct wjson	*pi_servers;
};

enum pscript_input_err {
	PSCRIPT_INPUT_OK = 0,
	PSCRIPT_INPUT_TOO_LONG,
	PSCRIPT_INPUT_INVALID,
	PSCRIPT_INPUT_NOMEM
};

const char	*pscript_input_err_to_string(enum pscript_input_err);
enum pscript_input_err pscript_input_parse(const char *, size_t,
		    struct pscript_input *);
void		 pscript_input_free(struct pscript_input *);

struct pscript;

/* NULL with the error ("line N: ...") in err when the script is refused. */
struct pscript	*pscript_parse(const char *, size_t, struct wbuf *err);
void		 pscript_free(struct pscript *);
size_t		 pscript_count(const struct pscript *);

/* Whether the input grants server/tool. */
int		 pscript_granted(const struct pscript_input *, const char *,
		    const char *);
/* An MCP answer read as mcp.call reads it: the result, or NULL and err. */
struct wjson	*pscript_mcp_result(const char *server, const char *tool,
		    int status, const char *body, size_t len, struct wbuf *err);
/* "EROFS" for EROFS; "errno N" for what has no name here. */
const char	*pscript_errno_name(int, char *, size_t);

/*
 * The answer for stdout: {"ok":true,"result":R} or {"ok":false,"error":E},
 * E cut to PS_ERROR_MAX chars.  NULL only when out of memory.
 */
char		*pscript_answer_ok(const struct wjson *, size_t *);
char		*pscript_answer_error(const char *, size_t, size_t *);

/* A whole run: the input's bytes in, the answer out. */
char		*pscript_run(const char *, size_t, const struct pscript_io *,
		    size_t *);

#endif /* PSCRIPT_H */
