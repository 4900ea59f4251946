/*
 * The Docker client's own checks and the container it asks for (PROTOCOL.md
 * section 7): pure functions, no I/O, so that Check and libFuzzer drive the
 * same code the daemon runs.  Every request is re-checked here even though
 * the supervisor checked it first (DESIGN.md section 1, invariant 2).
 */
#ifndef RTSANDBOX_DOCKOPS_H
#define RTSANDBOX_DOCKOPS_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "limits.h"

/*
 * The engine behind the socket, as GET /version names it.  Rootless Podman's
 * Docker-compatible API needs two things said otherwise in the create body
 * (dock_create_body()); every other rule is the same.
 */
enum dock_engine {
	DOCK_ENGINE_DOCKER,
	DOCK_ENGINE_PODMAN
};

/*
 * The containers' log driver (configuration docker.log_driver).  Local is
 * PROTOCOL.md 7's two files of 10 MiB (Podman's one k8s-file of 10 MiB);
 * journald keeps a removed container's lines, each entry tagged
 * sandbox/<channel> (dock_log_tag()).
 */
enum dock_log_driver {
	DOCK_LOG_LOCAL = 0,
	DOCK_LOG_JOURNALD
};

/* What the configuration says; the Docker client holds one. */
struct dock_config {
	const char	*prefix;	/* [a-z0-9][a-z0-9-]{0,40} */
	/* Label names: non-empty and distinct. */
	const char	*label_channel;
	const char	*label_profile;
	const char	*image;		/* never pulled */
	const char	*state_dir;	/* absolute, canonical, not "/" */
	const char	*time_zone;	/* IANA zone name, for TZ */
	uint64_t	 uid, gid;	/* the service user; both > 0 */
	uint64_t	 memory_mib;	/* Memory = MemorySwap */
	uint64_t	 nano_cpus;
	uint64_t	 pids;
	/* HostConfig.Runtime; NULL: none sent, the engine's default. */
	const char	*runtime;
	enum dock_log_driver log_driver;
};

/* What the supervisor asks for. */
struct dock_spec {
	const char	*channel;	/* the channel key, 1-256 chars */
	const char	*profile;	/* [a-zA-Z0-9_-]{1,100} */
	/* Exactly <state_dir>/<segment>/run and .../workspace. */
	const char	*run_dir;
	const char	*workspace_dir;
};

enum dock_err {
	DOCK_OK,
	DOCK_BAD_NAME,		/* prefix or container name pattern */
	DOCK_BAD_IMAGE,
	DOCK_BAD_BIND,		/* a bind source breaks a rule */
	DOCK_BAD_USER,		/* uid or gid 0 or out of range */
	DOCK_BAD_LABEL,		/* label names empty, equal, not text */
	DOCK_BAD_PROFILE,
	DOCK_BAD_CHANNEL,
	DOCK_BAD_CONFIG,	/* state_dir, time zone or limits */
	DOCK_UNREACHABLE,	/* no connection to the Docker socket */
	DOCK_TIMEOUT,		/* over DOCKER_CALL_TIMEOUT_MS */
	DOCK_NO_IMAGE,		/* not present; never pulled */
	DOCK_CONFLICT,		/* name in use or removal in progress */
	DOCK_API,		/* any other answer, or a malformed one */
	DOCK_NOMEM,
	DOCK_BAD_RUNTIME,	/* the runtime's name breaks the pattern */
	DOCK_NO_RUNTIME,	/* the engine has no such runtime, or cannot
				 * be told one */
	/* A precheck run's request (dock_check_precheck()). */
	DOCK_BAD_RUN,		/* run number not 1..2^53-1 */
	DOCK_BAD_ENTRYPOINT,	/* its command's count or parts */
	DOCK_BAD_LIMITS,	/* memory, CPUs, processes or time */
	DOCK_BAD_INPUT		/* stdin empty or too long */
};

/*
 * Longest image reference accepted, in bytes: what Docker itself takes for
 * a repository name, and what struct dock_status can hold to compare.
 */
#define DOCK_IMAGE_MAX		255u
/* Longest label name, in bytes. */
#define DOCK_LABEL_MAX		128u
/* Longest time zone name, in bytes (the longest IANA name is 32). */
#define DOCK_TIME_ZONE_MAX	64u
/*
 * Numbers go to Docker as JSON numbers that Go reads into int64: below
 * 10^15 they print as plain integers and are exact in a double.
 */
#define DOCK_NUMBER_MAX		999999999999999ull

const char	*dock_err_to_string(enum dock_err);

/* Longest journald tag: "sandbox/" and 2 bytes per char of the key. */
#define DOCK_LOG_TAG_MAX	(8u + 2u * CHANNEL_KEY_MAX)
/*
 * "sandbox/<channel>" with every UTF-16 code unit outside [A-Za-z0-9_.:/-]
 * replaced by '_': nothing of Docker's tag template ("{{...}}") can come
 * from a key.  -1 when the key is not 1-256 chars of UTF-8 or out is too
 * small (DOCK_LOG_TAG_MAX + 1 bytes suffice).
 */
int		 dock_log_tag(const char *channel, char *out, size_t outlen);

/*
 * <prefix>-<segment> into out (CONTAINER_NAME_MAX + 1 bytes suffice), and
 * checked against Docker's own name pattern [a-zA-Z0-9][a-zA-Z0-9_.-]+.
 */
enum dock_err	 dock_container_name(const struct dock_config *,
		    const char *channel, char *out, size_t outlen);

/*
 * The configuration and the request, all of it, against PROTOCOL.md 7: the
 * first rule broken decides the answer.
 */
enum dock_err	 dock_check_spec(const struct dock_config *,
		    const struct dock_spec *);

/*
 * The body of POST /containers/create, exactly PROTOCOL.md 7 and nothing
 * else, plus HostConfig.Runtime when the configuration names one.  For
 * Podman two members differ: LogConfig is "k8s-file" with the same size
 * bound (Podman has no "local" driver), and UsernsMode is "keep-id", so that
 * the service user's uid and gid in the container are the service user's
 * on the host, as under Docker, and no host id maps to the container's
 * root.  NULL when dock_check_spec() refuses the request, when Podman is
 * asked for a runtime (its compatible API ignores HostConfig.Runtime), or
 * when out of memory.  The caller frees it with cJSON_Delete().
 */
cJSON		*dock_create_body(const struct dock_config *,
		    const struct dock_spec *, enum dock_engine);

/*
 * A precheck run: a short script in a sealed container of its own, stdin
 * in, stdout out, its run's broker socket the only way out.
 */
struct dock_precheck {
	uint64_t		 run;		/* 1..PRECHECK_RUN_MAX */
	const char		*channel;	/* the channel label only */
	const char *const	*argv;		/* Entrypoint, then Cmd */
	size_t			 argc;
	uint64_t		 memory_mib;	/* Memory = MemorySwap */
	uint64_t		 nano_cpus;
	uint64_t		 pids;
	uint64_t		 timeout_ms;	/* from the start */
	size_t			 input_len;	/* stdin bytes */
};

/* The label that marks a precheck run's container; its value the run. */
#define DOCK_PRECHECK_LABEL	"rtsandbox.precheck"
/* "<prefix>.precheck-": the '.' is in no channel container's name. */
#define DOCK_PRECHECK_INFIX	".precheck-"
/* Longest precheck container name: prefix, infix and 16 digits. */
#define DOCK_PRECHECK_NAME_MAX	(CONTAINER_PREFIX_MAX + 10u + 16u)
/* The binds' targets in a precheck container. */
#define PRECHECK_BROKER_TARGET	"/broker"
#define PRECHECK_WS_TARGET	"/workspace"

/*
 * <prefix>.precheck-<run> into out (DOCK_PRECHECK_NAME_MAX + 1 bytes
 * suffice).
 */
enum dock_err	 dock_precheck_name(const struct dock_config *, uint64_t run,
		    char *out, size_t outlen);

/*
 * <state_dir>/.precheck/<run>/<leaf> into out, leaf "run" or "ws": made by
 * the file guard, derived here, never taken from a request.
 */
enum dock_err	 dock_precheck_dir(const struct dock_config *, uint64_t run,
		    const char *leaf, char *out, size_t outlen);

/* The configuration and the request against their bounds in limits.h. */
enum dock_err	 dock_check_precheck(const struct dock_config *,
		    const struct dock_precheck *);

/*
 * The create body of a precheck run's container: sealed as a channel's is,
 * with the run's limits, no restart policy and no log, its two binds
 * read-only, the environment HOME and TZ only, and stdin open for one
 * attach.  NULL when refused, as dock_create_body().
 */
cJSON		*dock_precheck_body(const struct dock_config *,
		    const struct dock_precheck *, enum dock_engine);

#endif
