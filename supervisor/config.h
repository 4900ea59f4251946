/*
 * The daemon's configuration (DESIGN.md 7): one JSON file, parsed and
 * validated in full by a pure function over a buffer so that Check and
 * libFuzzer drive exactly what rtsandboxd -n runs.  Only the supervisor
 * parses it; children get their part in config_* messages.
 */
#ifndef RTSANDBOX_SUPERVISOR_CONFIG_H
#define RTSANDBOX_SUPERVISOR_CONFIG_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

/* A file of more than 1 MiB is refused before it is parsed. */
#define CONFIG_FILE_MAX		(1024u * 1024u)
/* Further errors are counted in one last line instead of being listed. */
#define CONFIG_ERRORS_MAX	100u
/* rtsandboxd -n warns when channel segments may be shorter than this. */
#define CONFIG_SEGMENT_WARN	32u

struct config_profile {
	char		 *name;
	char		 *model;
	char		**mcp;		/* server names, each in mcp_servers */
	size_t		  nmcp;
};

struct config_mcp_server {
	char		 *name;
	char		 *url;
	char		**tools;	/* tools/call allow-list */
	size_t		  ntools;
};

/* upstream.credentials: a channel key or speaker id, and its file. */
struct config_cred {
	char		 *key;
	char		 *file;
};

struct config {
	char			 *state_dir;
	char			 *control_socket;
	char			 *control_group;	/* NULL when absent */
	gid_t			  control_gid;
	int			  has_control_group;
	char			 *bot_group;		/* NULL when absent */
	gid_t			  bot_gid;
	int			  has_bot_group;
	char			 *image;
	struct config_profile	 *profiles;
	size_t			  nprofiles;
	char			 *upstream_url;		/* no trailing '/' */
	char			 *upstream_credential_file;
	char			 *upstream_ca_file;	/* NULL when absent */
	struct config_mcp_server *mcp_servers;
	size_t			  nmcp_servers;
	char			 *mcp_credential_file;	/* NULL when absent */
	/* credential "hook": asked of the client for each call instead */
	int			  upstream_credential_hook;
	/* upstream.credentials: files by channel and by speaker, each
	 * sorted by key; with fallback "none" a call with neither is
	 * refused instead of going with upstream_credential_file */
	int			  has_credentials;
	struct config_cred	 *cred_channels;
	size_t			  ncred_channels;
	struct config_cred	 *cred_speakers;
	size_t			  ncred_speakers;
	int			  cred_fallback_none;
	int			  mcp_credential_hook;
	int			  mcp_allow_http;
	char			**tools;
	size_t			  ntools;
	char			 *docker_socket;
	char			 *container_prefix;
	char			 *label_channel;
	char			 *label_profile;
	char			 *docker_runtime;	/* NULL: the engine's
							 * default */
	char			 *docker_log_driver;	/* "local" or
							 * "journald" */
	uint64_t		  memory_mib;
	uint64_t		  nano_cpus;
	uint64_t		  pids;
	char			 *time_zone;
	uint64_t		  start_ms;
	uint64_t		  turn_ms;
	uint64_t		  max_calls;
	uint64_t		  max_output_tokens;
	char			 *default_thinking;
	uint64_t		  research_max_jobs;
	uint64_t		  research_deadline_ms;
	char			 *research_model;	/* default: the first
							 * profile's model */
	/* compaction: the client's compaction.compact hook compacts
	 * workers' sessions, named engine (NULL: no host compactor) */
	char			 *compaction_engine;
	uint64_t		  compaction_timeout_ms;
	uint64_t		  compaction_max_request_bytes;
	/* precheck: runs of a script in a sealed container of their own
	 * (NULL argv: precheck.run is refused, not configured) */
	char			**precheck_argv;
	size_t			  precheck_argc;
	uint64_t		  precheck_timeout_ms;
	uint64_t		  precheck_max_calls;
	uint64_t		  precheck_max_runs;
	uint64_t		  precheck_memory_mib;
	uint64_t		  precheck_nano_cpus;
	uint64_t		  precheck_pids;
	/* sandbox.empty_root "optional": brokers and research jobs may run
	 * without their empty root where the kernel refuses one */
	int			  empty_root_optional;
	/* "test": only in builds with test seams (meson -Dtest_seams=true) */
	char			 *test_dns;		/* "IP:PORT" or NULL */
	int			  test_loopback_public;
	char			 *test_fetch_ca_file;	/* NULL when absent */
	char			 *test_journal_socket;	/* a journal fixture */
};

/*
 * Every problem found, one line each, "<field>: <rule>", so that -n can show
 * them all at once.  Start from a zeroed struct; lines are appended.
 */
struct config_errors {
	char		**lines;
	size_t		  n;
	char		**warnings;
	size_t		  nwarn;
};

/* NULL when any error was found; errs may be NULL. */
struct config	*config_parse(const char *buf, size_t len,
		    struct config_errors *errs);
/* Reads a regular file of at most CONFIG_FILE_MAX bytes, then parses it. */
struct config	*config_load(const char *path, struct config_errors *errs);
/* The same from a descriptor open on it, which is closed; path names it
 * in the errors. */
struct config	*config_load_fd(int fd, const char *path,
		    struct config_errors *errs);

/*
 * Once the supervisor is confined it cannot read the host's group
 * database: from then on a group name is checked for its form only and
 * its gid is CONFIG_GID_UNKNOWN, which a reload takes from the running
 * configuration (the name may not change without a restart anyway).
 */
#define CONFIG_GID_UNKNOWN	((gid_t)-1)
void		 config_no_lookups(void);

/*
 * A reload (SIGHUP) applies what can change while the daemon runs:
 * profiles, tools, MCP servers, budgets, timeouts, the default thinking
 * level and research settings.  The first field of new that differs from
 * old and cannot change without a restart is named in why ("image", ...);
 * -1 then, 0 when new may replace old.
 */
int		 config_reload_check(const struct config *old,
		    const struct config *new, char *why, size_t whylen);
/* The gids new could not look up, from old (after config_reload_check()). */
void		 config_keep_gids(struct config *new, const struct config *old);
/* Whether a broker configured from old would be configured the same from
 * new: the profiles, their MCP servers, the tools and the budgets. */
int		 config_brokers_same(const struct config *old,
		    const struct config *new);
void		 config_free(struct config *);
void		 config_errors_free(struct config_errors *);

/* NULL when there is no such profile (or server). */
const struct config_profile	*config_profile(const struct config *,
				    const char *name);
const struct config_mcp_server	*config_mcp_server(const struct config *,
				    const char *name);

/*
 * The directories of the model's credential files (credential_file and
 * upstream.credentials), each named by one file in it, into dirs (room
 * for max): the count, or max + 1 when there are more.
 */
size_t		 config_cred_dirs(const struct config *, const char **dirs,
		    size_t max);
/* upstream.credentials' files with their fields, for host checks (n 0:
 * none, or no memory). */
struct hc_cred;
struct hc_cred	*config_hc_creds(const struct config *, size_t *n);
void		 config_hc_creds_free(struct hc_cred *, size_t n);

/*
 * Longest channel segment whose broker socket path
 * <state_dir>/<segment>/run/broker.sock still fits in 100 chars; 0 when
 * none does.
 */
size_t		 config_max_segment_len(const struct config *);

#endif
