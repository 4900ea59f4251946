/*
 * The file guard's operations on the state directory (PROTOCOL.md 6), as
 * functions over directory descriptors.  None follows a symbolic link or
 * reaches outside the state directory: every path is one component looked
 * up beneath a descriptor already checked, never a string walked by the
 * kernel from the root.
 *
 * Each returns an enum fs_err; on FS_IO errno holds the cause.
 */
#ifndef RTSANDBOX_FSOPS_H
#define RTSANDBOX_FSOPS_H

#include <sys/types.h>

#include <stddef.h>
#include <time.h>

#include "limits.h"

enum fs_err {
	FS_OK = 0,
	FS_STATE_NOT_ABSOLUTE,
	FS_STATE_NOT_CANONICAL,
	FS_STATE_IS_ROOT,
	FS_STATE_TOO_LONG,
	FS_STATE_SYMLINK,
	FS_STATE_NOT_DIR,
	FS_STATE_OWNER,
	FS_STATE_MODE,
	FS_KEY_INVALID,
	FS_SEGMENT_INVALID,
	FS_SEGMENT_TOO_LONG,
	FS_SEGMENT_SYMLINK,
	FS_SEGMENT_NOT_DIR,
	FS_RUN_SYMLINK,
	FS_RUN_NOT_DIR,
	FS_WORKSPACE_SYMLINK,
	FS_WORKSPACE_NOT_DIR,
	FS_KEY_FILE_SYMLINK,
	FS_KEY_FILE_TYPE,
	FS_ALIAS,
	FS_DIR_OWNER,
	FS_RACE,
	FS_SOCK_PATH_TOO_LONG,
	FS_NAME_INVALID,
	FS_EXISTS,
	FS_BUF_TOO_SMALL,
	FS_STATE_GROUP_MODE,
	FS_NO_ACL,
	FS_IO,
};

/* An operator-readable reason; never NULL. */
const char	*fs_err_to_string(enum fs_err);

/*
 * The chat bot's group (bot_group), or none (on 0, the default): with one,
 * the state directory, each channel's directory and workspace give it
 * search (--x) only, sessions/ and its archive read (r-x), attachments/
 * read and write (rwx), each through a POSIX ACL, and the last three a
 * default ACL so that what is made in them later is the group's too,
 * whatever the umask of whoever makes it.  Nothing else is the group's.
 */
void		 fs_set_group(int on, gid_t gid);

/* What a directory of the channel is to bot_group. */
enum fs_dir_kind {
	FS_DIR_PRIVATE,		/* nothing: run/, outbox/ */
	FS_DIR_SEARCH,		/* --x: <state>, <segment>, workspace/ */
	FS_DIR_READ,		/* r-x: sessions/, its archive */
	FS_DIR_WRITE,		/* rwx: attachments/ */
};

/*
 * Open the state directory: an absolute, canonical path other than "/",
 * looked up one component at a time so that a symbolic link anywhere in it
 * is refused; the directory must belong to uid and have no group or other
 * bits, but bot_group's search bit when fs_set_group() named one: a
 * directory without it gets it (FS_NO_ACL where the file system has no
 * POSIX ACLs), any other bit is FS_STATE_GROUP_MODE.  *fd_out gets an
 * O_PATH descriptor.
 */
enum fs_err	fs_open_state_dir(const char *path, uid_t uid, int *fd_out);

/* One channel's directories, opened by fs_channel_open(). */
struct fs_channel {
	int	 chan_fd;	/* <state>/<segment> */
	int	 run_fd;	/* <segment>/run */
	int	 ws_fd;		/* <segment>/workspace */
	char	 segment[SEGMENT_MAX + 1];
};

/*
 * Create when missing and open the channel's directories, create
 * .channel-key when missing, then check that it holds exactly key: two
 * keys with the same segment get FS_ALIAS.  Every operation on a channel
 * starts here.  On failure every descriptor of ch is -1.
 */
enum fs_err	fs_channel_open(int statefd, const char *key, size_t keylen,
		    struct fs_channel *ch);
/*
 * As fs_channel_open(), for an operation that does nothing in run/: it is
 * checked (made, refused or mended) but not held, and run_fd is -1.
 */
enum fs_err	fs_channel_check(int statefd, const char *key, size_t keylen,
		    struct fs_channel *ch);
void		fs_channel_close(struct fs_channel *ch);

/*
 * Make name beneath parentfd a real directory of ours, mode 0700 (or what
 * kind gives bot_group): anything else found there (a symbolic link, a
 * file, a FIFO, a socket, a device) is removed and replaced, never
 * followed; a directory is kept with its contents.  *fd_out, unless NULL,
 * gets an O_RDONLY descriptor of it.
 */
enum fs_err	fs_own_dir(int parentfd, const char *name,
		    enum fs_dir_kind kind, int *fd_out);

/* fs_own_dir() for attachments, outbox and sessions in the workspace. */
enum fs_err	fs_own_workspace(struct fs_channel *ch);

/*
 * Bind and listen on run/broker.sock, mode 0600, replacing whatever was
 * there.  state_dir is the path fs_open_state_dir() was given: the host
 * path it makes must fit PROTOCOL.md's 100 chars.  *listen_fd is
 * non-blocking and close-on-exec.
 */
enum fs_err	fs_bind_broker_socket(struct fs_channel *ch,
		    const char *state_dir, int *listen_fd);

/*
 * A precheck run's directories, <state>/.precheck/<run>/run and ws, both
 * empty and ours, with run/broker.sock bound as fs_bind_broker_socket()
 * binds a channel's; whatever an earlier run of that number left is
 * removed first.
 */
enum fs_err	fs_precheck_make(int statefd, const char *state_dir,
		    uint64_t run, int *listen_fd);
/* Its removal: the socket, the two directories, the run's; gone is fine,
 * and nothing is followed. */
enum fs_err	fs_precheck_clean(int statefd, uint64_t run);
/* Every run an earlier daemon left. */
void		fs_precheck_clean_all(int statefd);

/*
 * Room for an archive folder name: "YYYY-MM-DDTHH-MM-SS.mmmZ" and a
 * "-<counter>" suffix, with its NUL.
 */
#define FS_ARCHIVE_FOLDER_MAX	40

/*
 * Move every top-level regular file named *.jsonl of workspace/sessions into
 * a new folder sessions/archive/<now as ISO-8601 UTC, ':' as '-'>.  *count
 * gets the number moved and folder (at least FS_ARCHIVE_FOLDER_MAX bytes)
 * the folder's name.
 */
enum fs_err	fs_archive_sessions(struct fs_channel *ch,
		    const struct timespec *now, unsigned *count, char *folder,
		    size_t folderlen);

/*
 * Write a new file workspace/attachments/<name>, mode 0600 (with
 * bot_group: 0640, the group bits being an ACL that lets bot_group read
 * it and no one else).  An existing entry of that name, a symbolic link
 * included, is FS_EXISTS and is left alone.
 */
enum fs_err	fs_write_attachment(struct fs_channel *ch, const char *name,
		    const void *data, size_t len);

/* The host paths of the channel's workspace/sessions and attachments. */
enum fs_err	fs_channel_paths(const char *state_dir,
		    const struct fs_channel *ch, char *sessions,
		    size_t sessionslen, char *attachments,
		    size_t attachmentslen);

#endif
