/*
 * Precheck runs on the event loop: each its own container and its own
 * connection to the Docker socket, whose attach stream is written and read
 * without blocking, so that a run of minutes holds up nothing else.  The
 * short calls around it (create, start, wait, remove) block up to 15 s
 * each, as every other Docker call does.  The container is gone before a
 * run's end is told, whatever the end was.
 */
#ifndef RTSANDBOX_DOCKRUN_H
#define RTSANDBOX_DOCKRUN_H

#include <stddef.h>
#include <stdint.h>

#include "dockapi.h"
#include "dockops.h"

/* The exit code told of a run the client ended, as a kill leaves it. */
#define DOCK_RUN_KILLED_CODE	137

struct dock_run_result {
	int64_t		 exit_code;
	int		 timed_out;
	int		 stdout_over;
	uint64_t	 stderr_bytes;	/* over PRECHECK_STDERR_MAX: stopped */
	const uint8_t	*out;		/* stdout */
	size_t		 out_len;
};

/* A run's end: res on success, else err (for the operator, not a guest). */
typedef void	(*dock_run_done_cb)(uint64_t msgid, uint64_t run,
		    const struct dock_run_result *res, const char *err,
		    void *arg);

struct event_base;
struct dock_runs;

/* NULL when the path does not fit a sockaddr_un. */
struct dock_runs	*dock_runs_new(struct event_base *, const char *socket,
			    struct dock_api *, const struct dock_config *,
			    dock_run_done_cb, void *arg);
/*
 * Starts a checked run; its end comes through the callback, maybe before
 * this returns.  input is copied.
 */
void			 dock_runs_start(struct dock_runs *, uint64_t msgid,
			    const struct dock_precheck *, const uint8_t *input);
/* Ends a run at once: its end is told as the error "stopped".  0 when
 * there was none of that number. */
int			 dock_runs_stop(struct dock_runs *, uint64_t run);
size_t			 dock_runs_count(const struct dock_runs *);

#endif
