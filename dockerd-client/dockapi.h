/*
 * The Docker Engine API calls of PROTOCOL.md 7, over the Unix socket, one
 * synchronous libcurl call at a time, each bounded by DOCKER_CALL_TIMEOUT_MS.
 * Paths are pinned to /v1.41/.  The caller runs curl_global_init() first.
 */
#ifndef RTSANDBOX_DOCKAPI_H
#define RTSANDBOX_DOCKAPI_H

#include <stddef.h>
#include <stdint.h>

#include "dockinfo.h"
#include "docklogs.h"
#include "dockops.h"

/* Largest answer read from Docker; a longer one is DOCK_API. */
#define DOCK_RESPONSE_MAX	(4u * 1048576u)
/* Room kept for the last error, for the host log only. */
#define DOCK_ERROR_MAX		512u

struct dock_api;

/*
 * NULL with errno ENAMETOOLONG when the path does not fit a sockaddr_un,
 * EINVAL when it is not absolute, ENOMEM when out of memory.
 */
struct dock_api	*dock_api_new(const char *socket_path);
void		 dock_api_free(struct dock_api *);
/*
 * What went wrong in the last call that failed: Docker's "message", or what
 * libcurl said.  For the host log, never for a guest.  "" when nothing.
 */
const char	*dock_api_last_error(struct dock_api *);
/* A container id: 1 to maxlen lowercase hex digits. */
int		 dock_valid_id(const char *, size_t maxlen);

enum dock_state {
	DOCK_MISSING,
	DOCK_RUNNING,
	DOCK_STOPPED		/* created, exited, dead, or paused */
};

struct dock_status {
	enum dock_state	 state;
	char		 image[256];	/* Config.Image, as created */
	char		 profile[128];	/* the profile label */
	char		 id[80];
	int		 ours;		/* the channel label names the channel
					 * asked about */
};

/* GET /containers/<name>/json; 404 is DOCK_MISSING. */
enum dock_err	 dock_status(struct dock_api *, const struct dock_config *,
		    const char *channel, struct dock_status *);

/*
 * Keep the container when it runs with the configured image, runtime (the
 * engine's default when none is configured) and this channel's and
 * profile's labels; otherwise force-remove it, create it from
 * dock_create_body() and start it.  *recreated says which; id receives the
 * running container's id.  A failed start leaves the new container behind
 * (stopped, so the next call replaces it) with *recreated 1 and id "".
 *
 * The first call asks the engine what it is (GET /version, and GET /info of
 * Docker for its runtimes), and again after the socket was unreachable.  A
 * runtime the engine does not have, or any runtime asked of Podman, is
 * DOCK_NO_RUNTIME before anything is removed.
 */
enum dock_err	 dock_ensure_running(struct dock_api *,
		    const struct dock_config *, const struct dock_spec *,
		    int *recreated, char *id, size_t idlen);

/* DELETE /containers/<name>?force=true; a missing container is DOCK_OK. */
enum dock_err	 dock_remove(struct dock_api *, const struct dock_config *,
		    const char *channel);

/*
 * The container's last lines (GET /containers/<name>/logs, stdout and
 * stderr, tail=lines), within DOCK_LOGS_TIMEOUT_MS and DOCK_LOGS_BYTES_MAX:
 * what came by then is kept (dl_cut).  A missing container is DOCK_OK with
 * *missing 1 and no lines.
 */
enum dock_err	 dock_logs(struct dock_api *, const struct dock_config *,
		    const char *channel, size_t lines, struct dock_log_lines *,
		    int *missing);

struct dock_entry {
	char	 name[300];	/* as listed, with a leading '/' */
	char	 channel[1024];
	char	 profile[128];
	char	 state[32];	/* "running", "exited", "created", ... */
	char	 image[256];
	char	 id[80];
};

/*
 * For rtsandboxctl doctor: what the engine is (GET /version; GET /info;
 * Podman's GET /libpod/info, whose failure leaves its members unknown), and
 * whether an image is there (GET /images/<name>/json; *present 0 on 404).
 */
enum dock_err	 dock_engine(struct dock_api *, struct dock_engine_info *);
enum dock_err	 dock_image(struct dock_api *, const char *image,
		    struct dock_image_info *, int *present);

/*
 * The containers that carry the channel label and whose name starts with
 * "/<prefix>-".  *out is an array of *n entries for free(), NULL when none.
 */
enum dock_err	 dock_list(struct dock_api *, const struct dock_config *,
		    struct dock_entry **out, size_t *n);

/*
 * A precheck run's container (dock_precheck_body()), made after its name's
 * leftover is force-removed; id receives its id.  The engine is asked what
 * it is first, as by dock_ensure_running().
 */
enum dock_err	 dock_precheck_create(struct dock_api *,
		    const struct dock_config *, const struct dock_precheck *,
		    char *id, size_t idlen);
/* POST /containers/<id>/start. */
enum dock_err	 dock_start_id(struct dock_api *, const char *id);
/* DELETE /containers/<id>?force=true; a missing container is DOCK_OK. */
enum dock_err	 dock_remove_id(struct dock_api *, const char *id);
/* The run's container removed by its name; missing is DOCK_OK. */
enum dock_err	 dock_precheck_remove(struct dock_api *,
		    const struct dock_config *, uint64_t run);
/* POST /containers/<id>/wait: the exit code once it is not running. */
enum dock_err	 dock_wait_id(struct dock_api *, const char *id,
		    int64_t *code);
/*
 * Force-removes every "<prefix>.precheck-*" container carrying the
 * precheck label: an earlier daemon's runs.  *removed counts them.
 */
enum dock_err	 dock_precheck_sweep(struct dock_api *,
		    const struct dock_config *, size_t *removed);

#endif
