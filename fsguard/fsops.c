/*
 * The file guard's operations on the state directory (PROTOCOL.md 6).
 *
 * Every entry is looked up as a single component beneath a descriptor, with
 * O_PATH|O_NOFOLLOW: that open never follows a link, never blocks on a FIFO
 * and never opens a device, and fstat() of the result says what the entry
 * really is.  A directory is then reopened as "." beneath that descriptor,
 * which is the same inode whatever happens to the name meanwhile.  Where
 * the kernel takes only a path (chmod of an O_PATH descriptor, bind), the
 * path is /proc/self/fd/N: the kernel takes the inode the descriptor holds,
 * and Landlock checks that inode's real place beneath the state directory.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aclx.h"
#include "fsops.h"
#include "limits.h"
#include "log.h"
#include "validate.h"

#define FS_KEY_FILE		".channel-key"
#define FS_RUN_DIR		"run"
#define FS_WORKSPACE_DIR	"workspace"
#define FS_BROKER_SOCK		"broker.sock"
#define FS_PRECHECK_DIR		".precheck"
#define FS_PRECHECK_WS_DIR	"ws"
#define FS_ATTACHMENTS_DIR	"attachments"
#define FS_OUTBOX_DIR		"outbox"
#define FS_SESSIONS_DIR		"sessions"
#define FS_ARCHIVE_DIR		"archive"
#define FS_SESSION_SUFFIX	".jsonl"

/* A guest swapping an entry back and forth is refused after this many
 * repairs rather than kept busy forever. */
#define FS_OWN_DIR_TRIES	8
/* Archive folders of the same millisecond before giving up. */
#define FS_ARCHIVE_TRIES	1000
/* "/proc/self/fd/" and an int. */
#define FS_PROC_FD_MAX		32

const char *
fs_err_to_string(enum fs_err e)
{
	switch (e) {
	case FS_OK:
		return "success";
	case FS_STATE_NOT_ABSOLUTE:
		return "state directory is not an absolute path";
	case FS_STATE_NOT_CANONICAL:
		return "state directory path is not canonical "
		    "(empty, '.' or '..' component, or trailing '/')";
	case FS_STATE_IS_ROOT:
		return "state directory must not be /";
	case FS_STATE_TOO_LONG:
		return "state directory path is too long";
	case FS_STATE_SYMLINK:
		return "state directory path goes through a symbolic link";
	case FS_STATE_NOT_DIR:
		return "state directory is not a directory";
	case FS_STATE_OWNER:
		return "state directory is not owned by the service user";
	case FS_STATE_MODE:
		return "state directory has group or other permission bits";
	case FS_KEY_INVALID:
		return "channel key must be 1-256 chars of valid UTF-8";
	case FS_SEGMENT_INVALID:
		return "channel segment is not 1-256 of [A-Za-z0-9_-]";
	case FS_SEGMENT_TOO_LONG:
		return "channel segment is longer than a file name may be "
		    "(255 bytes)";
	case FS_SEGMENT_SYMLINK:
		return "channel directory is a symbolic link";
	case FS_SEGMENT_NOT_DIR:
		return "channel directory is not a directory";
	case FS_RUN_SYMLINK:
		return "channel run directory is a symbolic link";
	case FS_RUN_NOT_DIR:
		return "channel run directory is not a directory";
	case FS_WORKSPACE_SYMLINK:
		return "channel workspace is a symbolic link";
	case FS_WORKSPACE_NOT_DIR:
		return "channel workspace is not a directory";
	case FS_KEY_FILE_SYMLINK:
		return ".channel-key is a symbolic link";
	case FS_KEY_FILE_TYPE:
		return ".channel-key is not a regular file";
	case FS_ALIAS:
		return "Channel workspace alias refused";
	case FS_DIR_OWNER:
		return "a channel directory is owned by another user";
	case FS_RACE:
		return "a channel entry kept changing while it was checked";
	case FS_SOCK_PATH_TOO_LONG:
		return "broker socket path is longer than 100 chars";
	case FS_NAME_INVALID:
		return "not a safe file name";
	case FS_EXISTS:
		return "file already exists";
	case FS_BUF_TOO_SMALL:
		return "result does not fit its buffer";
	case FS_STATE_GROUP_MODE:
		return "state directory has group or other permission bits "
		    "beyond bot_group's search bit (an ACL naming bot_group "
		    "with --x, and nothing else)";
	case FS_NO_ACL:
		return "the file system of the state directory has no POSIX "
		    "ACLs, which bot_group needs (mount it with them, or "
		    "leave bot_group out)";
	case FS_IO:
		return "file system error";
	}
	return "unknown file guard error";
}

/* Cleanup on an error path must not lose the errno that FS_IO reports. */
static void
fs_close(int fd)
{
	int	 saved = errno;

	if (fd != -1)
		close(fd);
	errno = saved;
}

static void
fs_unlink(int dfd, const char *name)
{
	int	 saved = errno;

	(void)unlinkat(dfd, name, 0);
	errno = saved;
}

/* One name beneath a directory: not empty, no '/', not "." or "..". */
static int
fs_valid_component(const char *name)
{
	return name != NULL && name[0] != '\0' && strchr(name, '/') == NULL &&
	    strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
	    strlen(name) <= NAME_MAX;
}

static int
fs_valid_segment(const char *seg)
{
	size_t	 i;

	for (i = 0; i <= SEGMENT_MAX; i++) {
		if (seg[i] == '\0')
			return i > 0;
		if (!((seg[i] >= 'A' && seg[i] <= 'Z') ||
		    (seg[i] >= 'a' && seg[i] <= 'z') ||
		    (seg[i] >= '0' && seg[i] <= '9') ||
		    seg[i] == '_' || seg[i] == '-'))
			return 0;
	}
	return 0;
}

/* The path rules of the state directory, without touching the disk. */
static enum fs_err
fs_state_path_check(const char *path)
{
	const char	*p, *end;
	size_t		 n;

	if (path == NULL || path[0] != '/')
		return FS_STATE_NOT_ABSOLUTE;
	if (strnlen(path, PATH_BYTES_MAX) >= PATH_BYTES_MAX)
		return FS_STATE_TOO_LONG;
	if (strcmp(path, "/") == 0)
		return FS_STATE_IS_ROOT;
	for (p = path + 1;; p = end + 1) {
		if ((end = strchr(p, '/')) == NULL)
			end = p + strlen(p);
		n = end - p;
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return FS_STATE_NOT_CANONICAL;
		if (n > NAME_MAX)
			return FS_STATE_TOO_LONG;
		if (*end == '\0')
			break;
	}
	return FS_OK;
}

/* chmod the very inode held by fd, which may be an O_PATH descriptor. */
static int
fs_chmod_fd(int fd, mode_t mode)
{
	char	 proc[FS_PROC_FD_MAX];

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return fchmodat(AT_FDCWD, proc, mode, 0);
}

/* The entry itself, whatever it is, without following or opening it. */
static int
fs_entry(int dfd, const char *name, struct stat *st)
{
	int	 fd;

	if ((fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	if (fstat(fd, st) == -1) {
		fs_close(fd);
		return -1;
	}
	return fd;
}

/* bot_group, when the configuration names one. */
static int	 fs_group_on;
static gid_t	 fs_group_gid;

void
fs_set_group(int on, gid_t gid)
{
	fs_group_on = on;
	fs_group_gid = on ? gid : 0;
}

/* Without bot_group every directory is private. */
static enum fs_dir_kind
fs_kind(enum fs_dir_kind kind)
{
	return fs_group_on ? kind : FS_DIR_PRIVATE;
}

/* What bot_group may do in a directory of that kind. */
static unsigned
fs_kind_perm(enum fs_dir_kind kind)
{
	switch (kind) {
	case FS_DIR_SEARCH:
		return ACLX_X;
	case FS_DIR_READ:
		return ACLX_R | ACLX_X;
	case FS_DIR_WRITE:
		return ACLX_R | ACLX_W | ACLX_X;
	default:
		return 0;
	}
}

/* The mode a directory of that kind shows, its group bits the mask. */
static mode_t
fs_kind_mode(enum fs_dir_kind kind)
{
	if (fs_kind(kind) == FS_DIR_PRIVATE)
		return STATE_DIR_MODE;
	return aclx_mode(ACLX_R | ACLX_W | ACLX_X, fs_kind_perm(kind), 0);
}

/*
 * The ACL attr of the inode fd holds (which may be an O_PATH descriptor)
 * made want, unless it is already: one getxattr(2) when it is.
 */
static enum fs_err
fs_acl_make(int fd, const char *attr, const uint8_t *want, size_t wantlen)
{
	char		 proc[FS_PROC_FD_MAX];
	uint8_t		 have[ACLX_MAX + 8];
	ssize_t		 n;

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = getxattr(proc, attr, have, sizeof(have));
	if (n == (ssize_t)wantlen && memcmp(have, want, wantlen) == 0)
		return FS_OK;
	/* none, or one longer than any of ours: replaced */
	if (n == -1 && errno != ENODATA && errno != ERANGE)
		return errno == EOPNOTSUPP ? FS_NO_ACL : FS_IO;
	if (setxattr(proc, attr, want, wantlen, 0) == -1)
		return errno == EOPNOTSUPP ? FS_NO_ACL : FS_IO;
	return FS_OK;
}

/* Whether the inode fd holds has exactly that ACL. */
static int
fs_acl_is(int fd, const char *attr, const uint8_t *want, size_t wantlen)
{
	char		 proc[FS_PROC_FD_MAX];
	uint8_t		 have[ACLX_MAX + 8];
	ssize_t		 n;

	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = getxattr(proc, attr, have, sizeof(have));
	return n == (ssize_t)wantlen && memcmp(have, want, wantlen) == 0;
}

/*
 * bot_group's ACLs on a directory of ours: the access ACL of its kind and,
 * but for search, the default ACL its new entries inherit, with a named
 * entry for the file guard's own user in attachments/ so that what the
 * bot puts there is the worker's to read.  The guest may have changed
 * them in its workspace: they are made again.
 */
static enum fs_err
fs_dir_acl(int pathfd, enum fs_dir_kind kind)
{
	uint8_t		 acl[ACLX_MAX];
	unsigned	 perm = fs_kind_perm(kind);
	unsigned	 all = ACLX_R | ACLX_W | ACLX_X;
	uid_t		 self = geteuid();
	enum fs_err	 e;
	size_t		 n;

	n = aclx_build(acl, all, fs_group_gid, perm, NULL, 0);
	if ((e = fs_acl_make(pathfd, ACLX_ACCESS, acl, n)) != FS_OK ||
	    kind == FS_DIR_SEARCH)
		return e;
	n = aclx_build(acl, all, fs_group_gid, perm,
	    kind == FS_DIR_WRITE ? &self : NULL, all);
	return fs_acl_make(pathfd, ACLX_DEFAULT, acl, n);
}

/* The file guard's own uid, asked once: every check of every turn needs it. */
static uid_t
fs_euid(void)
{
	static uid_t	 uid;
	static int	 known;

	if (!known) {
		uid = geteuid();
		known = 1;
	}
	return uid;
}

/*
 * A directory the file guard keeps must be its own with mode 0700, or the
 * ACL its kind gives bot_group: the guest of the same uid may have changed
 * the bits, another uid may not own anything here.
 */
static enum fs_err
fs_dir_fix(int pathfd, const struct stat *st, enum fs_dir_kind kind)
{
	enum fs_err	 e;

	if (st->st_uid != fs_euid())
		return FS_DIR_OWNER;
	if (fs_kind(kind) == FS_DIR_PRIVATE) {
		if ((st->st_mode & 07777) != STATE_DIR_MODE &&
		    fs_chmod_fd(pathfd, STATE_DIR_MODE) == -1)
			return FS_IO;
		return FS_OK;
	}
	if ((e = fs_dir_acl(pathfd, kind)) != FS_OK)
		return e;
	/* An ACL sets the permission bits, not setuid, setgid or sticky. */
	if ((st->st_mode & 07000) != 0 &&
	    fs_chmod_fd(pathfd, fs_kind_mode(kind)) == -1)
		return FS_IO;
	return FS_OK;
}

/* A readable descriptor of the directory pathfd holds, not of its name. */
static int
fs_reopen_dir(int pathfd)
{
	return openat(pathfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static int
fs_write_all(int fd, const void *data, size_t len)
{
	const char	*p = data;
	ssize_t		 n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= n;
	}
	return 0;
}

/*
 * The state directory and bot_group: the group's search bit is given to a
 * directory without group or other bits, and is the only one allowed.
 */
static enum fs_err
fs_state_group(int fd, const struct stat *st)
{
	uint8_t		 acl[ACLX_MAX];
	size_t		 n;

	n = aclx_build(acl, ACLX_R | ACLX_W | ACLX_X, fs_group_gid, ACLX_X,
	    NULL, 0);
	if ((st->st_mode & 077) == 0)
		return fs_acl_make(fd, ACLX_ACCESS, acl, n);
	if ((st->st_mode & 077) == 010 && fs_acl_is(fd, ACLX_ACCESS, acl, n))
		return FS_OK;
	return FS_STATE_GROUP_MODE;
}

enum fs_err
fs_open_state_dir(const char *path, uid_t uid, int *fd_out)
{
	char		 comp[NAME_MAX + 1];
	const char	*p, *end;
	struct stat	 st;
	enum fs_err	 e;
	size_t		 n;
	int		 fd, next;

	*fd_out = -1;
	if ((e = fs_state_path_check(path)) != FS_OK)
		return e;
	if ((fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return FS_IO;
	for (p = path + 1;; p = end + 1) {
		if ((end = strchr(p, '/')) == NULL)
			end = p + strlen(p);
		n = end - p;
		memcpy(comp, p, n);
		comp[n] = '\0';
		next = fs_entry(fd, comp, &st);
		fs_close(fd);
		if ((fd = next) == -1)
			return FS_IO;
		if (S_ISLNK(st.st_mode))
			e = FS_STATE_SYMLINK;
		else if (!S_ISDIR(st.st_mode))
			e = FS_STATE_NOT_DIR;
		if (e != FS_OK) {
			fs_close(fd);
			return e;
		}
		if (*end == '\0')
			break;
	}
	if (st.st_uid != uid)
		e = FS_STATE_OWNER;
	else if (!fs_group_on && (st.st_mode & 077) != 0)
		e = FS_STATE_MODE;
	else if (fs_group_on)
		e = fs_state_group(fd, &st);
	if (e != FS_OK) {
		fs_close(fd);
		return e;
	}
	*fd_out = fd;
	return FS_OK;
}

/*
 * A directory of the channel that the guest cannot replace (the segment,
 * run, the workspace mount point): made when missing, refused when it is
 * anything but a directory.  O_DIRECTORY refuses anything else before it
 * is opened, so nothing planted can block, and O_NOFOLLOW a symlink: one
 * openat(2) and one fstat(2) for a directory that is there, as on every
 * turn.
 */
static enum fs_err
fs_channel_dir_fixed(int dfd, const char *name, enum fs_dir_kind kind,
    enum fs_err symlink_err, enum fs_err notdir_err, int *fd_out)
{
	struct stat	 st;
	enum fs_err	 e = FS_OK;
	int		 pfd;

	if ((pfd = fs_entry(dfd, name, &st)) == -1)
		return FS_IO;
	if (S_ISLNK(st.st_mode))
		e = symlink_err;
	else if (!S_ISDIR(st.st_mode))
		e = notdir_err;
	else if ((e = fs_dir_fix(pfd, &st, kind)) == FS_OK &&
	    (*fd_out = fs_reopen_dir(pfd)) == -1)
		e = FS_IO;
	if (e != FS_OK && e != FS_IO)
		log_warnx("%s: %s: %s", __func__, name, fs_err_to_string(e));
	fs_close(pfd);
	return e;
}

static enum fs_err
fs_channel_dir(int dfd, const char *name, enum fs_dir_kind kind,
    enum fs_err symlink_err, enum fs_err notdir_err, int *fd_out)
{
	struct stat	 st;
	enum fs_err	 e = FS_OK;
	int		 fd, made = 0;

	*fd_out = -1;
	while ((fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC)) == -1) {
		if (errno == ENOENT && !made) {
			if (mkdirat(dfd, name, STATE_DIR_MODE) == -1 &&
			    errno != EEXIST)
				return FS_IO;
			made = 1;
			continue;
		}
		/* Not a directory, or mode bits that keep even its owner
		 * out: told apart, and mended, through a descriptor that
		 * needs no permission. */
		if (errno == ENOTDIR || errno == EACCES)
			return fs_channel_dir_fixed(dfd, name, kind,
			    symlink_err, notdir_err, fd_out);
		return FS_IO;
	}
	if (fstat(fd, &st) == -1)
		e = FS_IO;
	else
		e = fs_dir_fix(fd, &st, kind);
	if (e != FS_OK && e != FS_IO)
		log_warnx("%s: %s: %s", __func__, name, fs_err_to_string(e));
	if (e != FS_OK)
		fs_close(fd);
	else
		*fd_out = fd;
	return e;
}

/*
 * Create .channel-key when missing, then read it back: a key whose segment
 * another key already uses finds that key there.
 */
static enum fs_err
fs_key_check(int chanfd, const char *key, size_t keylen)
{
	char		 buf[CHANNEL_KEY_FILE_MAX];
	struct stat	 st, rst;
	enum fs_err	 e = FS_OK;
	size_t		 len = 0;
	ssize_t		 n;
	int		 fd;

	if (fstatat(chanfd, FS_KEY_FILE, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno != ENOENT)
			return FS_IO;
		fd = openat(chanfd, FS_KEY_FILE, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, CHANNEL_KEY_MODE);
		if (fd == -1 && errno != EEXIST)
			return FS_IO;
		if (fd != -1) {
			/* fsync: an empty key file after a crash would
			 * refuse the channel for good. */
			if (fchmod(fd, CHANNEL_KEY_MODE) == -1 ||
			    fs_write_all(fd, key, keylen) == -1 ||
			    fsync(fd) == -1) {
				fs_close(fd);
				fs_unlink(chanfd, FS_KEY_FILE);
				return FS_IO;
			}
			if (close(fd) == -1) {
				fs_unlink(chanfd, FS_KEY_FILE);
				return FS_IO;
			}
		}
		if (fstatat(chanfd, FS_KEY_FILE, &st, AT_SYMLINK_NOFOLLOW) ==
		    -1)
			return FS_IO;
	}

	/* Only a regular file is opened, so nothing planted can block. */
	if (S_ISLNK(st.st_mode))
		e = FS_KEY_FILE_SYMLINK;
	else if (!S_ISREG(st.st_mode))
		e = FS_KEY_FILE_TYPE;
	if (e != FS_OK) {
		log_warnx("%s: %s", __func__, fs_err_to_string(e));
		return e;
	}
	fd = openat(chanfd, FS_KEY_FILE,
	    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd == -1)
		return FS_IO;
	if (fstat(fd, &rst) == -1) {
		fs_close(fd);
		return FS_IO;
	}
	if (!S_ISREG(rst.st_mode) || rst.st_dev != st.st_dev ||
	    rst.st_ino != st.st_ino) {
		fs_close(fd);
		return FS_RACE;
	}
	/* A regular file read to its size is whole: no read for the end. */
	while (len < sizeof(buf)) {
		if ((n = read(fd, buf + len, sizeof(buf) - len)) == -1) {
			if (errno == EINTR)
				continue;
			fs_close(fd);
			return FS_IO;
		}
		if (n == 0)
			break;
		len += n;
		if (rst.st_size >= 0 && len >= (size_t)rst.st_size)
			break;
	}
	fs_close(fd);
	if (len != keylen || memcmp(buf, key, keylen) != 0) {
		log_warnx("%s: %s holds another key", __func__, FS_KEY_FILE);
		return FS_ALIAS;
	}
	return FS_OK;
}

/*
 * As fs_channel_dir() for a private directory nothing is done in (run/):
 * one fstatat(2) when it is as it should be, else made, refused or mended
 * there.
 */
static enum fs_err
fs_channel_dir_check(int dfd, const char *name, enum fs_err symlink_err,
    enum fs_err notdir_err)
{
	struct stat	 st;
	enum fs_err	 e;
	int		 fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == fs_euid() &&
	    (st.st_mode & 07777) == STATE_DIR_MODE)
		return FS_OK;
	if ((e = fs_channel_dir(dfd, name, FS_DIR_PRIVATE, symlink_err,
	    notdir_err, &fd)) == FS_OK)
		fs_close(fd);
	return e;
}

static enum fs_err
fs_channel_open_run(int statefd, const char *key, size_t keylen,
    struct fs_channel *ch, int hold_run)
{
	enum fs_err	 e;

	ch->chan_fd = ch->run_fd = ch->ws_fd = -1;
	ch->segment[0] = '\0';
	if (key == NULL ||
	    channel_segment(key, keylen, ch->segment, sizeof(ch->segment)) < 1)
		return FS_KEY_INVALID;
	/* PROTOCOL.md allows 256 chars, so 256 segment bytes; Linux file
	 * systems store 255. */
	if (strlen(ch->segment) > NAME_MAX)
		return FS_SEGMENT_TOO_LONG;

	/* The key first: an alias never gets to touch the other channel's
	 * run or workspace. */
	if ((e = fs_channel_dir(statefd, ch->segment, FS_DIR_SEARCH,
	    FS_SEGMENT_SYMLINK, FS_SEGMENT_NOT_DIR, &ch->chan_fd)) != FS_OK ||
	    (e = fs_key_check(ch->chan_fd, key, keylen)) != FS_OK ||
	    (e = hold_run ? fs_channel_dir(ch->chan_fd, FS_RUN_DIR,
	    FS_DIR_PRIVATE, FS_RUN_SYMLINK, FS_RUN_NOT_DIR, &ch->run_fd) :
	    fs_channel_dir_check(ch->chan_fd, FS_RUN_DIR, FS_RUN_SYMLINK,
	    FS_RUN_NOT_DIR)) != FS_OK ||
	    (e = fs_channel_dir(ch->chan_fd, FS_WORKSPACE_DIR, FS_DIR_SEARCH,
	    FS_WORKSPACE_SYMLINK, FS_WORKSPACE_NOT_DIR, &ch->ws_fd)) != FS_OK) {
		fs_channel_close(ch);
		return e;
	}
	return FS_OK;
}

enum fs_err
fs_channel_open(int statefd, const char *key, size_t keylen,
    struct fs_channel *ch)
{
	return fs_channel_open_run(statefd, key, keylen, ch, 1);
}

enum fs_err
fs_channel_check(int statefd, const char *key, size_t keylen,
    struct fs_channel *ch)
{
	return fs_channel_open_run(statefd, key, keylen, ch, 0);
}

void
fs_channel_close(struct fs_channel *ch)
{
	fs_close(ch->chan_fd);
	fs_close(ch->run_fd);
	fs_close(ch->ws_fd);
	ch->chan_fd = ch->run_fd = ch->ws_fd = -1;
}

enum fs_err
fs_own_dir(int parentfd, const char *name, enum fs_dir_kind kind, int *fd_out)
{
	struct stat	 st;
	enum fs_err	 e;
	int		 tries, pfd, fd;

	if (fd_out != NULL)
		*fd_out = -1;
	if (!fs_valid_component(name))
		return FS_NAME_INVALID;
	/* As it should be, and nothing to hold: one fstatat(2). */
	if (fd_out == NULL && fs_kind(kind) == FS_DIR_PRIVATE &&
	    fstatat(parentfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode) && st.st_uid == fs_euid() &&
	    (st.st_mode & 07777) == STATE_DIR_MODE)
		return FS_OK;
	for (tries = 0; tries < FS_OWN_DIR_TRIES; tries++) {
		if ((pfd = fs_entry(parentfd, name, &st)) == -1) {
			if (errno != ENOENT)
				return FS_IO;
			if (mkdirat(parentfd, name, STATE_DIR_MODE) == -1 &&
			    errno != EEXIST)
				return FS_IO;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			fs_close(pfd);
			log_warnx("%s: %s is not a directory, replaced",
			    __func__, name);
			/* unlinkat() without AT_REMOVEDIR fails on a
			 * directory swapped in meanwhile: look again. */
			if (unlinkat(parentfd, name, 0) == -1 &&
			    errno != ENOENT && errno != EISDIR)
				return FS_IO;
			if (mkdirat(parentfd, name, STATE_DIR_MODE) == -1 &&
			    errno != EEXIST)
				return FS_IO;
			continue;
		}
		if ((e = fs_dir_fix(pfd, &st, kind)) != FS_OK) {
			fs_close(pfd);
			return e;
		}
		if (fd_out != NULL) {
			if ((fd = fs_reopen_dir(pfd)) == -1) {
				fs_close(pfd);
				return FS_IO;
			}
			*fd_out = fd;
		}
		fs_close(pfd);
		return FS_OK;
	}
	log_warnx("%s: %s: gave up after %d repairs", __func__, name, tries);
	return FS_RACE;
}

enum fs_err
fs_own_workspace(struct fs_channel *ch)
{
	static const struct {
		const char		*name;
		enum fs_dir_kind	 kind;
	} dirs[] = {
		{ FS_ATTACHMENTS_DIR,	FS_DIR_WRITE },
		{ FS_OUTBOX_DIR,	FS_DIR_PRIVATE },
		{ FS_SESSIONS_DIR,	FS_DIR_READ },
	};
	enum fs_err	 e;
	size_t		 i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if ((e = fs_own_dir(ch->ws_fd, dirs[i].name, dirs[i].kind,
		    NULL)) != FS_OK)
			return e;
	return FS_OK;
}

/* Chars as PROTOCOL.md counts them; bytes bound them from above. */
static size_t
fs_path_chars(const char *s, size_t len)
{
	size_t	 units;

	if (utf8_utf16_len(s, len, &units) == -1)
		return len;
	return units;
}

/*
 * Bind and listen on broker.sock beneath run_fd, whose host path is host
 * (checked against PROTOCOL.md's 100 chars by the caller).
 */
static enum fs_err
fs_bind_sock_at(int run_fd, int *listen_fd)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	enum fs_err		 e;
	mode_t			 mask;
	int			 s, pfd, rc;

	/* Whatever a previous run left there is removed, never followed. */
	if (unlinkat(run_fd, FS_BROKER_SOCK, 0) == -1 && errno != ENOENT &&
	    (errno != EISDIR ||
	    unlinkat(run_fd, FS_BROKER_SOCK, AT_REMOVEDIR) == -1))
		return FS_IO;

	/*
	 * bind() takes a path: the run directory is reached through its
	 * descriptor, so no component of the path is looked up again.
	 */
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)snprintf(sun.sun_path, sizeof(sun.sun_path),
	    "/proc/self/fd/%d/%s", run_fd, FS_BROKER_SOCK);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1)
		return FS_IO;
	/* The socket is never reachable with more than 0600. */
	mask = umask(0177);
	rc = bind(s, (struct sockaddr *)&sun, sizeof(sun));
	(void)umask(mask);
	if (rc == -1) {
		fs_close(s);
		return FS_IO;
	}

	/* A default ACL on the directory overrides the umask: set the mode
	 * on the inode itself, then read it back. */
	e = FS_IO;
	if ((pfd = fs_entry(run_fd, FS_BROKER_SOCK, &st)) == -1)
		goto fail;
	if (!S_ISSOCK(st.st_mode)) {
		e = FS_RACE;
		goto fail;
	}
	if (fs_chmod_fd(pfd, BROKER_SOCK_MODE) == -1 || fstat(pfd, &st) == -1)
		goto fail;
	if (!S_ISSOCK(st.st_mode) ||
	    (st.st_mode & 07777) != BROKER_SOCK_MODE) {
		e = FS_RACE;
		goto fail;
	}
	fs_close(pfd);
	pfd = -1;
	/* The broker serves at most BROKER_CONN_MAX at once. */
	if (listen(s, BROKER_CONN_MAX) == -1)
		goto fail;
	*listen_fd = s;
	return FS_OK;

fail:
	fs_close(pfd);
	fs_close(s);
	fs_unlink(run_fd, FS_BROKER_SOCK);
	return e;
}

enum fs_err
fs_bind_broker_socket(struct fs_channel *ch, const char *state_dir,
    int *listen_fd)
{
	char		 host[sizeof(((struct sockaddr_un *)0)->sun_path)];
	enum fs_err	 e;
	int		 n;

	*listen_fd = -1;
	if ((e = fs_state_path_check(state_dir)) != FS_OK)
		return e;
	if (!fs_valid_segment(ch->segment))
		return FS_SEGMENT_INVALID;
	n = snprintf(host, sizeof(host), "%s/%s/%s/%s", state_dir,
	    ch->segment, FS_RUN_DIR, FS_BROKER_SOCK);
	if (n < 0 || (size_t)n >= sizeof(host) ||
	    fs_path_chars(host, n) > BROKER_SOCK_PATH_MAX)
		return FS_SOCK_PATH_TOO_LONG;
	return fs_bind_sock_at(ch->run_fd, listen_fd);
}

/*
 * Precheck runs: <state>/.precheck/<run>/{run,ws}.  A channel's segment
 * is [a-zA-Z0-9_-], so ".precheck" is never one.
 */
static int
fs_precheck_name(uint64_t run, char *buf, size_t len)
{
	int	 n;

	if (run == 0 || run > PRECHECK_RUN_MAX)
		return -1;
	n = snprintf(buf, len, "%llu", (unsigned long long)run);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

enum fs_err
fs_precheck_make(int statefd, const char *state_dir, uint64_t run,
    int *listen_fd)
{
	char		 host[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char		 name[24];
	enum fs_err	 e;
	int		 n, pcfd = -1, runfd = -1, rfd = -1;

	*listen_fd = -1;
	if ((e = fs_state_path_check(state_dir)) != FS_OK)
		return e;
	if (fs_precheck_name(run, name, sizeof(name)) == -1)
		return FS_NAME_INVALID;
	n = snprintf(host, sizeof(host), "%s/%s/%s/%s/%s", state_dir,
	    FS_PRECHECK_DIR, name, FS_RUN_DIR, FS_BROKER_SOCK);
	if (n < 0 || (size_t)n >= sizeof(host) ||
	    fs_path_chars(host, n) > BROKER_SOCK_PATH_MAX)
		return FS_SOCK_PATH_TOO_LONG;
	/* A run of the same number an earlier daemon left goes first. */
	if ((e = fs_precheck_clean(statefd, run)) != FS_OK)
		return e;
	if ((e = fs_own_dir(statefd, FS_PRECHECK_DIR, FS_DIR_PRIVATE,
	    &pcfd)) != FS_OK ||
	    (e = fs_own_dir(pcfd, name, FS_DIR_PRIVATE, &runfd)) != FS_OK ||
	    (e = fs_own_dir(runfd, FS_PRECHECK_WS_DIR, FS_DIR_PRIVATE,
	    NULL)) != FS_OK ||
	    (e = fs_own_dir(runfd, FS_RUN_DIR, FS_DIR_PRIVATE, &rfd)) != FS_OK)
		goto done;
	e = fs_bind_sock_at(rfd, listen_fd);
 done:
	fs_close(rfd);
	fs_close(runfd);
	fs_close(pcfd);
	if (e != FS_OK)
		(void)fs_precheck_clean(statefd, run);
	return e;
}

/* Remove an empty directory beneath dfd; gone already is fine. */
static int
fs_rmdir_at(int dfd, const char *name)
{
	return unlinkat(dfd, name, AT_REMOVEDIR) == -1 && errno != ENOENT ?
	    -1 : 0;
}

enum fs_err
fs_precheck_clean(int statefd, uint64_t run)
{
	char		 name[24];
	enum fs_err	 e = FS_OK;
	int		 pcfd, runfd = -1, rfd = -1;

	if (fs_precheck_name(run, name, sizeof(name)) == -1)
		return FS_NAME_INVALID;
	/* not there, or not a directory: no run of it to remove, and
	 * fs_precheck_make() replaces what is there */
	if ((pcfd = openat(statefd, FS_PRECHECK_DIR, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1)
		return errno == ENOENT || errno == ELOOP || errno == ENOTDIR ?
		    FS_OK : FS_IO;
	if ((runfd = openat(pcfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			goto done;
		/* not a directory: whatever it is goes, never followed */
		e = unlinkat(pcfd, name, 0) == -1 && errno != ENOENT ?
		    FS_IO : FS_OK;
		goto done;
	}
	/* Both were mounted read-only: only the socket was ever made. */
	if ((rfd = openat(runfd, FS_RUN_DIR, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) != -1) {
		if (unlinkat(rfd, FS_BROKER_SOCK, 0) == -1 && errno != ENOENT)
			e = FS_IO;
	} else if (errno != ENOENT &&
	    unlinkat(runfd, FS_RUN_DIR, 0) == -1 && errno != ENOENT)
		e = FS_IO;
	if (e == FS_OK && (fs_rmdir_at(runfd, FS_RUN_DIR) == -1 ||
	    fs_rmdir_at(runfd, FS_PRECHECK_WS_DIR) == -1 ||
	    fs_rmdir_at(pcfd, name) == -1))
		e = FS_IO;
 done:
	fs_close(rfd);
	fs_close(runfd);
	fs_close(pcfd);
	return e;
}

void
fs_precheck_clean_all(int statefd)
{
	struct dirent	*de;
	DIR		*d;
	uint64_t	 run;
	char		*end;
	int		 pcfd;

	if ((pcfd = openat(statefd, FS_PRECHECK_DIR, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1)
		return;
	if ((d = fdopendir(pcfd)) == NULL) {
		fs_close(pcfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		errno = 0;
		run = strtoull(de->d_name, &end, 10);
		if (errno != 0 || *end != '\0')
			continue;
		if (fs_precheck_clean(statefd, run) != FS_OK)
			log_warn("%s/%s: not removed", FS_PRECHECK_DIR,
			    de->d_name);
	}
	closedir(d);
}

/*
 * "2024-05-06T07-08-09.123Z": ISO-8601 UTC with ':' as '-' for file names.
 * The civil date is computed here (proleptic Gregorian, H. Hinnant's
 * algorithm) because glibc's gmtime_r() reads /etc/localtime on first use,
 * a file outside the state directory.
 */
static enum fs_err
fs_archive_name(const struct timespec *now, char *buf, size_t len)
{
	long long	 days, secs, era, doe, yoe, doy, mp, year, month, day;
	long		 ms;
	int		 n;

	days = (long long)now->tv_sec / 86400;
	secs = (long long)now->tv_sec % 86400;
	if (secs < 0) {
		secs += 86400;
		days--;
	}
	days += 719468;		/* from 1970-01-01 to 0000-03-01 */
	era = (days >= 0 ? days : days - 146096) / 146097;
	doe = days - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	day = doy - (153 * mp + 2) / 5 + 1;
	month = mp < 10 ? mp + 3 : mp - 9;
	year = yoe + era * 400 + (month <= 2);

	ms = now->tv_nsec / 1000000;
	if (ms < 0 || ms > 999)
		ms = 0;
	n = snprintf(buf, len, "%04lld-%02lld-%02lldT"
	    "%02lld-%02lld-%02lld.%03ldZ", year, month, day, secs / 3600,
	    secs / 60 % 60, secs % 60, ms);
	if (n < 0 || (size_t)n >= len)
		return FS_BUF_TOO_SMALL;
	return FS_OK;
}

/*
 * A folder of that name made fresh beneath archivefd, with a counter
 * suffix when one of the same millisecond exists already.
 */
static enum fs_err
fs_archive_folder(int archivefd, const char *base, char *name, size_t len,
    int *fd_out)
{
	struct stat	 st;
	enum fs_err	 e;
	int		 tries, k = 0, pfd;

	*fd_out = -1;
	for (tries = 0; tries < FS_ARCHIVE_TRIES; tries++) {
		if (k == 0)
			(void)snprintf(name, len, "%s", base);
		else if ((size_t)snprintf(name, len, "%s-%d", base, k) >= len)
			return FS_BUF_TOO_SMALL;
		if (mkdirat(archivefd, name, STATE_DIR_MODE) == -1) {
			if (errno != EEXIST)
				return FS_IO;
			if ((pfd = fs_entry(archivefd, name, &st)) == -1) {
				if (errno != ENOENT)
					return FS_IO;
				continue;
			}
			fs_close(pfd);
			if (S_ISDIR(st.st_mode)) {
				k++;
				continue;
			}
			/* Planted under the name the host wanted. */
			log_warnx("%s: %s is not a directory, replaced",
			    __func__, name);
			if (unlinkat(archivefd, name, 0) == -1 &&
			    errno != ENOENT && errno != EISDIR)
				return FS_IO;
			continue;
		}
		if ((pfd = fs_entry(archivefd, name, &st)) == -1) {
			if (errno != ENOENT)
				return FS_IO;
			k++;
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			fs_close(pfd);
			k++;
			continue;
		}
		if ((e = fs_dir_fix(pfd, &st, FS_DIR_READ)) != FS_OK) {
			fs_close(pfd);
			return e;
		}
		*fd_out = pfd;
		return FS_OK;
	}
	return FS_EXISTS;
}

static int
fs_is_session(const char *name)
{
	size_t	 n = strlen(name), sl = sizeof(FS_SESSION_SUFFIX) - 1;

	return n >= sl && strcmp(name + n - sl, FS_SESSION_SUFFIX) == 0;
}

enum fs_err
fs_archive_sessions(struct fs_channel *ch, const struct timespec *now,
    unsigned *count, char *folder, size_t folderlen)
{
	char		 base[FS_ARCHIVE_FOLDER_MAX];
	struct dirent	*de;
	struct stat	 st;
	DIR		*dir = NULL;
	enum fs_err	 e;
	int		 sfd = -1, afd = -1, tfd = -1, saved;

	*count = 0;
	if (folderlen < FS_ARCHIVE_FOLDER_MAX)
		return FS_BUF_TOO_SMALL;
	folder[0] = '\0';
	if ((e = fs_archive_name(now, base, sizeof(base))) != FS_OK)
		return e;
	if ((e = fs_own_dir(ch->ws_fd, FS_SESSIONS_DIR, FS_DIR_READ, &sfd)) !=
	    FS_OK)
		return e;
	if ((e = fs_own_dir(sfd, FS_ARCHIVE_DIR, FS_DIR_READ, &afd)) !=
	    FS_OK ||
	    (e = fs_archive_folder(afd, base, folder, folderlen, &tfd)) !=
	    FS_OK)
		goto done;

	e = FS_IO;
	if ((dir = fdopendir(sfd)) == NULL)
		goto done;
	sfd = -1;
	for (;;) {
		errno = 0;
		if ((de = readdir(dir)) == NULL) {
			if (errno != 0)
				goto done;
			break;
		}
		if (!fs_is_session(de->d_name))
			continue;
		if (fstatat(dirfd(dir), de->d_name, &st,
		    AT_SYMLINK_NOFOLLOW) == -1) {
			if (errno == ENOENT)
				continue;
			goto done;
		}
		/* Links, directories and FIFOs stay where the guest put
		 * them. */
		if (!S_ISREG(st.st_mode))
			continue;
		if (renameat2(dirfd(dir), de->d_name, tfd, de->d_name,
		    RENAME_NOREPLACE) == -1) {
			if (errno == ENOENT || errno == EEXIST) {
				log_warnx("%s: %s not archived: %s", __func__,
				    de->d_name, strerror(errno));
				continue;
			}
			goto done;
		}
		(*count)++;
	}
	e = FS_OK;

done:
	if (dir != NULL) {
		saved = errno;
		(void)closedir(dir);
		errno = saved;
	}
	fs_close(sfd);
	fs_close(afd);
	fs_close(tfd);
	return e;
}

enum fs_err
fs_write_attachment(struct fs_channel *ch, const char *name,
    const void *data, size_t len)
{
	uint8_t		 acl[ACLX_MAX];
	enum fs_err	 e;
	size_t		 n;
	int		 afd, fd, rc;

	if (name == NULL || !valid_safe_name(name, strlen(name)))
		return FS_NAME_INVALID;
	if ((e = fs_own_dir(ch->ws_fd, FS_ATTACHMENTS_DIR, FS_DIR_WRITE,
	    &afd)) != FS_OK)
		return e;
	fd = openat(afd, name,
	    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
	    ATTACHMENT_MODE);
	if (fd == -1) {
		e = errno == EEXIST ? FS_EXISTS : FS_IO;
		fs_close(afd);
		return e;
	}
	/* bot_group reads it, whatever the default ACL above says now. */
	if (fs_group_on) {
		n = aclx_build(acl, ACLX_R | ACLX_W, fs_group_gid, ACLX_R,
		    NULL, 0);
		rc = fsetxattr(fd, ACLX_ACCESS, acl, n, 0);
	} else
		rc = fchmod(fd, ATTACHMENT_MODE);
	e = FS_IO;
	if (rc == -1 && errno == EOPNOTSUPP)
		e = FS_NO_ACL;
	if (rc == -1 || fs_write_all(fd, data, len) == -1) {
		fs_close(fd);
		goto fail;
	}
	if (close(fd) == -1)
		goto fail;
	fs_close(afd);
	return FS_OK;

fail:
	/* No partial attachment is left for the guest to take as whole. */
	fs_unlink(afd, name);
	fs_close(afd);
	return e;
}

enum fs_err
fs_channel_paths(const char *state_dir, const struct fs_channel *ch,
    char *sessions, size_t sessionslen, char *attachments,
    size_t attachmentslen)
{
	enum fs_err	 e;
	int		 n;

	if ((e = fs_state_path_check(state_dir)) != FS_OK)
		return e;
	if (!fs_valid_segment(ch->segment))
		return FS_SEGMENT_INVALID;
	n = snprintf(sessions, sessionslen, "%s/%s/%s/%s", state_dir,
	    ch->segment, FS_WORKSPACE_DIR, FS_SESSIONS_DIR);
	if (n < 0 || (size_t)n >= sessionslen)
		return FS_BUF_TOO_SMALL;
	n = snprintf(attachments, attachmentslen, "%s/%s/%s/%s", state_dir,
	    ch->segment, FS_WORKSPACE_DIR, FS_ATTACHMENTS_DIR);
	if (n < 0 || (size_t)n >= attachmentslen)
		return FS_BUF_TOO_SMALL;
	return FS_OK;
}
