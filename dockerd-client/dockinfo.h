/*
 * What the engine says about itself: GET /version, GET /info, Podman's
 * GET /libpod/info and GET /images/<name>/json, read by pure functions over
 * a buffer and a length so that Check and libFuzzer drive the same code the
 * Docker client and rtsandboxctl doctor run.
 */
#ifndef RTSANDBOX_DOCKINFO_H
#define RTSANDBOX_DOCKINFO_H

#include <stddef.h>

#include "dockops.h"
#include "limits.h"

/* Runtimes kept from one /info answer; more are counted, not kept. */
#define DOCK_RUNTIMES_MAX	32u
/* A runtime's path and arguments, as kept. */
#define DOCK_RUNTIME_PATH_MAX	256u
#define DOCK_RUNTIME_ARGC_MAX	16u
#define DOCK_RUNTIME_ARG_MAX	128u
/* Every path is pinned to this Engine API version. */
#define DOCK_API_MAJOR		1
#define DOCK_API_MINOR		41

/* The controllers a container's limits need (Podman's cgroupControllers). */
#define DOCK_CG_MEMORY		0x1u
#define DOCK_CG_PIDS		0x2u
#define DOCK_CG_CPU		0x4u
#define DOCK_CG_ALL		(DOCK_CG_MEMORY | DOCK_CG_PIDS | DOCK_CG_CPU)

struct dock_runtime {
	char	 dr_name[RUNTIME_NAME_MAX + 1];
	char	 dr_path[DOCK_RUNTIME_PATH_MAX];
	char	 dr_argv[DOCK_RUNTIME_ARGC_MAX][DOCK_RUNTIME_ARG_MAX];
	size_t	 dr_argc;
	int	 dr_args_cut;	/* some did not fit and are not kept */
};

struct dock_engine_info {
	/* GET /version */
	enum dock_engine	 ei_engine;
	char			 ei_name[64];		/* "Docker Engine", ... */
	char			 ei_version[64];
	char			 ei_api_version[16];	/* newest it speaks */
	char			 ei_min_api_version[16];
	int			 ei_api_ok;	/* speaks v1.41 */
	/* GET /info; -1 where the answer did not say */
	char			 ei_default_runtime[RUNTIME_NAME_MAX + 1];
	struct dock_runtime	 ei_runtimes[DOCK_RUNTIMES_MAX];
	size_t			 ei_nruntimes;
	size_t			 ei_runtimes_seen;
	int			 ei_cgroup_version;	/* 1, 2 or -1 */
	int			 ei_memory_limit;
	int			 ei_swap_limit;
	int			 ei_pids_limit;
	int			 ei_cpu_quota;
	int			 ei_rootless;
	/* GET /info Plugins.Log: the log drivers docker.log_driver may
	 * name, 1 listed, 0 not, -1 no list */
	int			 ei_log_local;
	int			 ei_log_journald;
	/* Podman's GET /libpod/info: DOCK_CG_* it may use, -1 unknown */
	int			 ei_controllers;
};

struct dock_image_info {
	char	 im_id[80];		/* "sha256:..." */
	int	 im_tagged;		/* one of its RepoTags is the name asked */
	char	 im_tag[256];		/* else its first RepoTag, or "" */
};

/* Sets every member to "not said" (-1, "", none). */
void	dock_engine_info_init(struct dock_engine_info *);

/*
 * Each reads one answer's body into ei (members the answer has no word on
 * keep their value) and returns 0, or -1 when it is not the JSON object it
 * should be.  A string that does not fit its member is cut, never
 * overflowed; names of runtimes that break valid_runtime_name() are skipped.
 */
int	dock_parse_version(const char *buf, size_t len,
	    struct dock_engine_info *);
int	dock_parse_info(const char *buf, size_t len, struct dock_engine_info *);
int	dock_parse_libpod_info(const char *buf, size_t len,
	    struct dock_engine_info *);
/* GET /images/<name>/json: -1 unless an object with an Id. */
int	dock_parse_image(const char *buf, size_t len, const char *want,
	    struct dock_image_info *);

/* The runtime of that name, or NULL. */
const struct dock_runtime *dock_engine_runtime(const struct dock_engine_info *,
	    const char *name);
/*
 * Why a channel's worker cannot run under this runtime, or NULL: gVisor
 * (a path ending in runsc) needs --host-uds=open (or all) to connect to its
 * bind-mounted broker socket, and --network=none to start with Docker's
 * "none" network.
 */
const char *dock_runtime_problem(const struct dock_runtime *);

#endif
