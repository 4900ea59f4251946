/*
 * The host as the daemon will meet it: each check looks at one thing a
 * process of rtsandboxd will need (or must not have) and says what to do when
 * it is wrong.  rtsandboxctl doctor runs them all next to its engine checks;
 * rtsandboxd -n runs them after the configuration.  Checks that probe the
 * kernel do it in a child, with the sandbox code the helpers run.
 */
#ifndef RTSANDBOX_HOSTCHECK_H
#define RTSANDBOX_HOSTCHECK_H

#include <sys/types.h>
#include <sys/stat.h>

#include <stddef.h>

enum hc_status {
	HC_OK,
	HC_WARN,	/* the daemon runs, with less than it could have */
	HC_FAIL		/* the daemon will not start, or a channel cannot */
};

/* One line: "ok    name: text". */
#define HC_NAME_MAX	32
#define HC_TEXT_MAX	640

struct hc_result {
	enum hc_status	 hr_status;
	char		 hr_name[HC_NAME_MAX];
	char		 hr_text[HC_TEXT_MAX];
};

typedef void	(*hc_report_fn)(const struct hc_result *, void *);

const char	*hc_status_to_string(enum hc_status);
/* The line on the stdio stream file: an hc_report_fn. */
void		 hc_print(const struct hc_result *, void *file);
/* Build and report one result. */
void		 hc_report(hc_report_fn, void *, enum hc_status,
		    const char *name, const char *fmt, ...)
		    __attribute__((format(printf, 5, 6)));

/* egress reads a credential file of at most this many bytes. */
#define HC_CREDENTIAL_MAX	16384u
/* Below this many characters left for a channel's segment, a warning. */
#define HC_SEGMENT_WARN		32u

/* The well-known places of engine sockets that run as root. */
extern const char *const	hc_root_engine_sockets[];

/* One credential file among several: the field that names it, its path. */
struct hc_cred {
	const char	*hc_field;
	const char	*hc_path;
};

struct hostcheck_params {
	uid_t		 hp_uid;
	gid_t		 hp_gid;
	const char	*hp_state_dir;
	/* "upstream.credential_file", path; NULL names end the list */
	const char	*hp_cred_names[2];
	const char	*hp_cred_paths[2];
	/* upstream.credentials' files, under that name */
	const struct hc_cred *hp_cred_list;
	size_t		 hp_ncred_list;
	const char	*hp_control_socket;
	const char	*hp_engine_socket;
	size_t		 hp_segment_room;	/* config_max_segment_len() */
	const char	*hp_bot_group;		/* bot_group, or NULL */
	gid_t		 hp_bot_gid;
	int		 hp_empty_root_optional; /* sandbox.empty_root */
};

/*
 * Every host check, in order: user, groups, landlock, seccomp, user
 * namespaces, state_dir, credentials, control socket, socket paths.  With
 * p->hp_state_dir NULL (no valid configuration) only the first five.
 */
void	hostcheck_run(const struct hostcheck_params *, hc_report_fn, void *);

/* The checks one by one. */
void	hostcheck_user(uid_t, gid_t, hc_report_fn, void *);
void	hostcheck_groups(uid_t, gid_t, const char *engine_socket,
	    hc_report_fn, void *);
void	hostcheck_landlock(hc_report_fn, void *);
void	hostcheck_seccomp(hc_report_fn, void *);
/* optional: sandbox.empty_root "optional" (a warning, not a failure,
 * where the kernel refuses the empty root). */
void	hostcheck_userns(int optional, hc_report_fn, void *);
/* Whether brokers and research jobs can have their empty root here, tried
 * in a child: 1 yes, 0 the kernel refuses it, -1 it failed otherwise; why
 * in why. */
int	hostcheck_empty_root(char *why, size_t len);
void	hostcheck_state_dir(const char *, uid_t, hc_report_fn, void *);
/* The same with bot_group (group NULL: none), whose search bit the state
 * directory may have. */
void	hostcheck_state_dir_bot(const char *, uid_t, const char *group,
	    gid_t, hc_report_fn, void *);
void	hostcheck_credential(const char *name, const char *path, uid_t,
	    hc_report_fn, void *);
/*
 * The same for each file of a list, under one name: a file that fails
 * (or warns) is a line of its own that starts with its field; those that
 * pass are one line together.
 */
void	hostcheck_credential_list(const char *name, const struct hc_cred *,
	    size_t n, uid_t, hc_report_fn, void *);
void	hostcheck_control_socket(const char *, uid_t, hc_report_fn, void *);
void	hostcheck_socket_paths(const char *control, const char *engine,
	    size_t segment_room, hc_report_fn, void *);

/*
 * Pure judgements, for Check.  Each returns the status and writes why into
 * text (and what to do when it is not HC_OK).
 */
/* A group whose members are root in all but name. */
int		 hostcheck_root_group(const char *name, gid_t);
/* The state directory itself: a directory of uid, no group/other bits. */
enum hc_status	 hostcheck_state_stat(const char *path, const struct stat *,
		    uid_t, char *text, size_t);
/*
 * The same with bot_group: 0700, to which the file guard adds the group's
 * search bit, or 0710 where acl_ok says that an ACL gives it to the group
 * alone; acl_ok -1 says the file system has no ACLs.
 */
enum hc_status	 hostcheck_state_bot_stat(const char *path, const struct stat *,
		    uid_t, const char *group, int acl_ok, char *text, size_t);
/* A credential file, on its descriptor: egress's rules. */
enum hc_status	 hostcheck_cred_stat(const char *path, const struct stat *,
		    uid_t, char *text, size_t);
/* The control socket's directory: uid's or root's, no group/other write. */
enum hc_status	 hostcheck_ctldir_stat(const char *dir, const struct stat *,
		    uid_t, char *text, size_t);

#endif
