/*
 * The file guard's operations of fsguard/fsops.c against a real state
 * directory in /tmp, with the entries a hostile guest (or a careless
 * operator) could plant.  Every test also owns a sentinel directory outside
 * the state directory that planted links point at; after every test each
 * sentinel must be exactly as it was, so an operation that followed a link
 * fails the test even when it reported success.
 *
 * Runs as root and as an unprivileged user alike; the owner is getuid().
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aclx.h"
#include "fsops.h"
#include "limits.h"
#include "sandbox.h"
#include "validate.h"

#define S(lit)		(lit), (sizeof(lit) - 1)
#define KEY		"discord:1"
#define KEY_SEG		"discord_1"
#define TMPL_STATE	"/tmp/fsops-state.XXXXXX"
#define TMPL_SENTINEL	"/tmp/fsops-sentinel.XXXXXX"
#define TMPL_LEN	"/tmp/fsops-len.XXXXXX"
/* 2024-05-06T07:08:09.123Z */
#define NOW_SEC		1714979289
#define NOW_NSEC	123456789L
#define NOW_FOLDER	"2024-05-06T07-08-09.123Z"

static char	 state[PATH_MAX];
static char	 sentinel[PATH_MAX];
static char	 lenbase[PATH_MAX];	/* a /tmp tree of exact lengths */
static int	 statefd = -1;

/*
 * The sentinels, with what they held when made.  Their times are set in the
 * past, so any write after that moves them.
 */
struct sentinel_entry {
	const char	*name;
	const char	*content;	/* NULL: a directory */
	struct stat	 st;
};
static struct sentinel_entry	 sentinels[] = {
	{ ".", NULL, { 0 } },
	{ "file", "sentinel file\n", { 0 } },
	{ "keycopy", KEY, { 0 } },
	{ "keyother", "somebody else", { 0 } },
	{ "dir", NULL, { 0 } },
	{ "dir/inner.jsonl", "{\"inner\":1}\n", { 0 } },
};
#define NSENTINELS	(sizeof(sentinels) / sizeof(sentinels[0]))
/* Entries of the sentinel directory and of sentinel/dir. */
#define SENTINEL_TOP	4
#define SENTINEL_DIR	1

static void
pathf(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list	 ap;
	int	 n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	ck_assert_int_ge(n, 0);
	ck_assert_uint_lt((size_t)n, len);
}

static void
write_at(int dfd, const char *name, const void *data, size_t len)
{
	int	 fd;

	fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
	ck_assert_int_ne(fd, -1);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_int_eq(close(fd), 0);
}

/* Reads a whole regular file into buf; returns its length. */
static size_t
read_at(int dfd, const char *name, char *buf, size_t len)
{
	size_t	 off = 0;
	ssize_t	 n;
	int	 fd;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	ck_assert_msg(fd != -1, "open %s: %s", name, strerror(errno));
	while ((n = read(fd, buf + off, len - off)) > 0)
		off += n;
	ck_assert_int_eq(n, 0);
	close(fd);
	return off;
}

static void
assert_content(int dfd, const char *name, const void *want, size_t wantlen)
{
	static char	 buf[2 * 1024 * 1024];
	size_t		 n;

	n = read_at(dfd, name, buf, sizeof(buf));
	ck_assert_uint_eq(n, wantlen);
	ck_assert_msg(memcmp(buf, want, n) == 0, "%s: content differs", name);
}

static mode_t
type_at(int dfd, const char *name)
{
	struct stat	 st;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return 0;
	return st.st_mode & S_IFMT;
}

static void
assert_type(int dfd, const char *name, mode_t type)
{
	ck_assert_msg(type_at(dfd, name) == type, "%s: type %o, not %o",
	    name, (unsigned)type_at(dfd, name), (unsigned)type);
}

/* A real directory of ours with mode 0700. */
static void
assert_own_dir(int dfd, const char *name)
{
	struct stat	 st;

	ck_assert_msg(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0,
	    "%s: %s", name, strerror(errno));
	ck_assert_msg(S_ISDIR(st.st_mode), "%s is not a directory", name);
	ck_assert_uint_eq(st.st_uid, geteuid());
	ck_assert_msg((st.st_mode & 07777) == 0700, "%s: mode %o", name,
	    (unsigned)(st.st_mode & 07777));
}

static size_t
count_entries(int dfd, const char *name)
{
	struct dirent	*de;
	DIR		*d;
	size_t		 n = 0;
	int		 fd;

	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	ck_assert_msg(fd != -1, "%s: %s", name, strerror(errno));
	ck_assert_ptr_nonnull(d = fdopendir(fd));
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static int
open_dir(const char *path)
{
	int	 fd;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	ck_assert_msg(fd != -1, "%s: %s", path, strerror(errno));
	return fd;
}

/* Removes a tree without following links, whatever its modes. */
static void
rm_tree_at(int dfd, const char *name)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	int		 fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(dfd, name, 0);
		return;
	}
	ck_assert_int_eq(fchmodat(dfd, name, 0700, 0), 0);
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd != -1 && (d = fdopendir(fd)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") != 0 &&
			    strcmp(de->d_name, "..") != 0)
				rm_tree_at(dirfd(d), de->d_name);
		closedir(d);
	}
	unlinkat(dfd, name, AT_REMOVEDIR);
}

static void
sentinel_make(void)
{
	struct timespec	 past[2] = {
		{ 978307200, 0 }, { 978307200, 0 }	/* 2001-01-01 */
	};
	size_t		 i;
	int		 sfd;

	ck_assert_ptr_nonnull(mkdtemp(sentinel));
	ck_assert_int_eq(chmod(sentinel, 0755), 0);
	sfd = open_dir(sentinel);
	ck_assert_int_eq(mkdirat(sfd, "dir", 0755), 0);
	for (i = 0; i < NSENTINELS; i++)
		if (sentinels[i].content != NULL)
			write_at(sfd, sentinels[i].name, sentinels[i].content,
			    strlen(sentinels[i].content));
	/* Deepest first, so a directory's time is not moved by its files. */
	for (i = NSENTINELS; i-- > 0;) {
		ck_assert_int_eq(utimensat(sfd, sentinels[i].name, past,
		    AT_SYMLINK_NOFOLLOW), 0);
		ck_assert_int_eq(fstatat(sfd, sentinels[i].name,
		    &sentinels[i].st, AT_SYMLINK_NOFOLLOW), 0);
	}
	close(sfd);
}

static void
sentinel_check(void)
{
	struct stat	 st, *was;
	size_t		 i;
	int		 sfd;

	sfd = open_dir(sentinel);
	for (i = 0; i < NSENTINELS; i++) {
		was = &sentinels[i].st;
		ck_assert_msg(fstatat(sfd, sentinels[i].name, &st,
		    AT_SYMLINK_NOFOLLOW) == 0, "sentinel %s: %s",
		    sentinels[i].name, strerror(errno));
		ck_assert_msg(st.st_ino == was->st_ino &&
		    st.st_mode == was->st_mode && st.st_uid == was->st_uid &&
		    st.st_size == was->st_size &&
		    st.st_nlink == was->st_nlink &&
		    st.st_mtim.tv_sec == was->st_mtim.tv_sec &&
		    st.st_mtim.tv_nsec == was->st_mtim.tv_nsec &&
		    st.st_ctim.tv_sec == was->st_ctim.tv_sec &&
		    st.st_ctim.tv_nsec == was->st_ctim.tv_nsec,
		    "sentinel %s was changed", sentinels[i].name);
		if (sentinels[i].content != NULL)
			assert_content(sfd, sentinels[i].name,
			    sentinels[i].content,
			    strlen(sentinels[i].content));
	}
	ck_assert_uint_eq(count_entries(sfd, "."), SENTINEL_TOP);
	ck_assert_uint_eq(count_entries(sfd, "dir"), SENTINEL_DIR);
	close(sfd);
}

static void
setup(void)
{
	(void)umask(022);
	pathf(state, sizeof(state), "%s", TMPL_STATE);
	pathf(sentinel, sizeof(sentinel), "%s", TMPL_SENTINEL);
	lenbase[0] = '\0';
	ck_assert_ptr_nonnull(mkdtemp(state));
	ck_assert_int_eq(chmod(state, 0700), 0);
	sentinel_make();
	ck_assert_int_eq(fs_open_state_dir(state, getuid(), &statefd), FS_OK);
}

static void
teardown(void)
{
	fs_set_group(0, 0);
	sentinel_check();
	if (statefd != -1)
		close(statefd);
	statefd = -1;
	rm_tree_at(AT_FDCWD, state);
	rm_tree_at(AT_FDCWD, sentinel);
	if (lenbase[0] != '\0')
		rm_tree_at(AT_FDCWD, lenbase);
}

/* A link at dfd/name to a path beneath the sentinel directory. */
static void
plant_link(int dfd, const char *name, const char *target)
{
	char	 path[PATH_MAX];

	pathf(path, sizeof(path), "%s/%s", sentinel, target);
	ck_assert_msg(symlinkat(path, dfd, name) == 0, "symlink %s: %s",
	    name, strerror(errno));
}

static void
plant_socket(int dfd, const char *name)
{
	struct sockaddr_un	 sun;
	int			 s;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	pathf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d/%s", dfd,
	    name);
	ck_assert_int_ne(s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0),
	    -1);
	ck_assert_int_eq(bind(s, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(s);
}

static void
open_channel(const char *key, struct fs_channel *ch)
{
	enum fs_err	 e;

	e = fs_channel_open(statefd, key, strlen(key), ch);
	ck_assert_msg(e == FS_OK, "fs_channel_open %s: %s", key,
	    fs_err_to_string(e));
	ck_assert_int_ge(ch->chan_fd, 0);
	ck_assert_int_ge(ch->run_fd, 0);
	ck_assert_int_ge(ch->ws_fd, 0);
}

static void
assert_channel_closed(const struct fs_channel *ch)
{
	ck_assert_int_eq(ch->chan_fd, -1);
	ck_assert_int_eq(ch->run_fd, -1);
	ck_assert_int_eq(ch->ws_fd, -1);
}

/* The channel directory made once, for tests that then plant entries. */
static int
make_channel_dir(const char *key)
{
	struct fs_channel	 ch;
	int			 cfd;

	open_channel(key, &ch);
	ck_assert_int_ne(cfd = dup(ch.chan_fd), -1);
	fs_channel_close(&ch);
	return cfd;
}

/*
 * bot_group: search on the state directory, the channel's directory and
 * workspace, read on sessions/, read and write on attachments/, through
 * POSIX ACLs, and nothing more.  The group is one the test need not be
 * in: giving a group an ACL entry takes no membership.
 */
#define BOT_GID		4243u

/* The ACL attr of path is exactly that of aclx_build(). */
static void
assert_acl_with(int dfd, const char *name, const char *attr, unsigned owner,
    unsigned group, const uid_t *user, unsigned user_perm, int mask_of_file)
{
	uint8_t		 want[ACLX_MAX], have[ACLX_MAX + 8];
	char		 path[PATH_MAX];
	size_t		 n;
	ssize_t		 got;

	if (dfd == AT_FDCWD)
		pathf(path, sizeof(path), "%s", name);
	else
		pathf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, name);
	n = aclx_build(want, owner, BOT_GID, group, user, user_perm);
	/* a file made beneath a default ACL: its creation mode cut the
	 * mask, the entries stay as inherited */
	if (mask_of_file) {
		n = aclx_build(want, owner, BOT_GID, group | ACLX_X, user,
		    user_perm);
		want[n - 16 + 2] = (uint8_t)group;
	}
	got = getxattr(path, attr, have, sizeof(have));
	ck_assert_msg(got == (ssize_t)n && memcmp(have, want, n) == 0,
	    "%s %s: not the ACL wanted (%zd bytes: %s)", name, attr, got,
	    got == -1 ? strerror(errno) : "other entries");
}

static void
assert_acl_at(int dfd, const char *name, const char *attr, unsigned owner,
    unsigned group, const uid_t *user, unsigned user_perm)
{
	assert_acl_with(dfd, name, attr, owner, group, user, user_perm, 0);
}

/* A file a process made in sessions/ (mode 0666): bot_group's r-x entry
 * inherited, the mask r--. */
static void
assert_session_file(int dfd, const char *name)
{
	assert_acl_with(dfd, name, ACLX_ACCESS, 6, ACLX_R, NULL, 0, 1);
}

static void
assert_no_acl_at(int dfd, const char *name, const char *attr)
{
	char	 path[PATH_MAX];
	uint8_t	 have[ACLX_MAX + 8];

	pathf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, name);
	ck_assert_int_eq(getxattr(path, attr, have, sizeof(have)), -1);
	ck_assert_int_eq(errno, ENODATA);
}

static mode_t
mode_at(int dfd, const char *name)
{
	struct stat	 st;

	ck_assert_int_eq(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_mode & 07777;
}

/* The state directory opened again with bot_group set. */
static void
group_setup(void)
{
	close(statefd);
	statefd = -1;
	fs_set_group(1, BOT_GID);
	ck_assert_int_eq(fs_open_state_dir(state, getuid(), &statefd), FS_OK);
}

START_TEST(group_state_dir)
{
	static const mode_t	 bad[] = { 0750, 0711, 0701, 0730, 0770 };
	uint8_t			 acl[ACLX_MAX];
	size_t			 i, n;
	int			 fd;

	group_setup();
	ck_assert_uint_eq(mode_at(AT_FDCWD, state), 0710);
	assert_acl_at(AT_FDCWD, state, ACLX_ACCESS, 7, ACLX_X, NULL, 0);
	/* as it was left: open again */
	ck_assert_int_eq(fs_open_state_dir(state, getuid(), &fd), FS_OK);
	close(fd);
	/* any other bit, for the group or others, is refused and left */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(chmod(state, bad[i]), 0);
		ck_assert_int_eq(fs_open_state_dir(state, getuid(), &fd),
		    FS_STATE_GROUP_MODE);
		ck_assert_int_eq(fd, -1);
		ck_assert_uint_eq(mode_at(AT_FDCWD, state), bad[i]);
	}
	/* the search bit, but for the owning group, not bot_group */
	ck_assert_int_eq(removexattr(state, ACLX_ACCESS), 0);
	ck_assert_int_eq(chmod(state, 0710), 0);
	ck_assert_int_eq(fs_open_state_dir(state, getuid(), &fd),
	    FS_STATE_GROUP_MODE);
	/* bot_group's search and another group's too */
	n = aclx_build(acl, 7, BOT_GID + 1, ACLX_X, NULL, 0);
	ck_assert_int_eq(setxattr(state, ACLX_ACCESS, acl, n, 0), 0);
	ck_assert_int_eq(fs_open_state_dir(state, getuid(), &fd),
	    FS_STATE_GROUP_MODE);
	/* 0700, whatever ACL it had: bot_group's, made again */
	ck_assert_int_eq(chmod(state, 0700), 0);
	ck_assert_int_eq(fs_open_state_dir(state, getuid(), &fd), FS_OK);
	close(fd);
	assert_acl_at(AT_FDCWD, state, ACLX_ACCESS, 7, ACLX_X, NULL, 0);
	/* without bot_group, the search bit is a group bit like any */
	fs_set_group(0, 0);
	ck_assert_int_eq(fs_open_state_dir(state, getuid(), &fd),
	    FS_STATE_MODE);
}
END_TEST

START_TEST(group_channel_dirs)
{
	struct fs_channel	 ch;
	uid_t			 self = geteuid();
	char			 seg[PATH_MAX];
	int			 fd;

	group_setup();
	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_own_workspace(&ch), FS_OK);
	pathf(seg, sizeof(seg), "%s/%s", state, KEY_SEG);
	ck_assert_uint_eq(mode_at(AT_FDCWD, seg), 0710);
	assert_acl_at(AT_FDCWD, seg, ACLX_ACCESS, 7, ACLX_X, NULL, 0);
	ck_assert_uint_eq(mode_at(ch.chan_fd, "workspace"), 0710);
	assert_acl_at(ch.chan_fd, "workspace", ACLX_ACCESS, 7, ACLX_X, NULL,
	    0);
	assert_no_acl_at(ch.chan_fd, "workspace", ACLX_DEFAULT);
	/* run/, .channel-key and outbox/ stay the owner's alone */
	ck_assert_uint_eq(mode_at(ch.chan_fd, "run"), 0700);
	assert_no_acl_at(ch.chan_fd, "run", ACLX_ACCESS);
	ck_assert_uint_eq(mode_at(ch.chan_fd, ".channel-key"), 0600);
	assert_no_acl_at(ch.chan_fd, ".channel-key", ACLX_ACCESS);
	ck_assert_uint_eq(mode_at(ch.ws_fd, "outbox"), 0700);
	assert_no_acl_at(ch.ws_fd, "outbox", ACLX_ACCESS);
	/* sessions/: read, and so is what is made in it */
	ck_assert_uint_eq(mode_at(ch.ws_fd, "sessions"), 0750);
	assert_acl_at(ch.ws_fd, "sessions", ACLX_ACCESS, 7, ACLX_R | ACLX_X,
	    NULL, 0);
	assert_acl_at(ch.ws_fd, "sessions", ACLX_DEFAULT, 7, ACLX_R | ACLX_X,
	    NULL, 0);
	/* attachments/: read and write, and the bot's files the owner's */
	ck_assert_uint_eq(mode_at(ch.ws_fd, "attachments"), 0770);
	assert_acl_at(ch.ws_fd, "attachments", ACLX_ACCESS, 7, 7, NULL, 0);
	assert_acl_at(ch.ws_fd, "attachments", ACLX_DEFAULT, 7, 7, &self, 7);
	/* a session file made under the strictest umask: the group reads */
	(void)umask(077);
	ck_assert_int_ne(fd = openat(ch.ws_fd, "sessions/s1.jsonl",
	    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666), -1);
	close(fd);
	(void)umask(022);
	ck_assert_uint_eq(mode_at(ch.ws_fd, "sessions/s1.jsonl"), 0640);
	assert_session_file(ch.ws_fd, "sessions/s1.jsonl");
	fs_channel_close(&ch);
}
END_TEST

/* The guest owns its workspace: what it changes is made again. */
START_TEST(group_guest_changes)
{
	struct fs_channel	 ch;
	uint8_t			 acl[ACLX_MAX];
	size_t			 n;
	int			 fd;

	group_setup();
	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_own_workspace(&ch), FS_OK);
	/* sessions/ made private, attachments/ given to others, the
	 * workspace opened to its group */
	ck_assert_int_ne(fd = openat(ch.ws_fd, "sessions", O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC), -1);
	ck_assert_int_eq(fremovexattr(fd, ACLX_DEFAULT), 0);
	ck_assert_int_eq(fchmod(fd, 02700), 0);
	close(fd);
	n = aclx_build(acl, 7, BOT_GID + 1, 7, NULL, 0);
	ck_assert_int_ne(fd = openat(ch.ws_fd, "attachments", O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC), -1);
	ck_assert_int_eq(fsetxattr(fd, ACLX_ACCESS, acl, n, 0), 0);
	close(fd);
	ck_assert_int_eq(fchmod(ch.ws_fd, 0777), 0);
	fs_channel_close(&ch);

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_own_workspace(&ch), FS_OK);
	ck_assert_uint_eq(mode_at(ch.chan_fd, "workspace"), 0710);
	assert_acl_at(ch.chan_fd, "workspace", ACLX_ACCESS, 7, ACLX_X, NULL,
	    0);
	ck_assert_uint_eq(mode_at(ch.ws_fd, "sessions"), 0750);
	assert_acl_at(ch.ws_fd, "sessions", ACLX_DEFAULT, 7, ACLX_R | ACLX_X,
	    NULL, 0);
	ck_assert_uint_eq(mode_at(ch.ws_fd, "attachments"), 0770);
	assert_acl_at(ch.ws_fd, "attachments", ACLX_ACCESS, 7, 7, NULL, 0);
	fs_channel_close(&ch);

	/* bot_group taken out of the configuration: private again */
	fs_set_group(0, 0);
	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_own_workspace(&ch), FS_OK);
	ck_assert_uint_eq(mode_at(ch.chan_fd, "workspace"), 0700);
	ck_assert_uint_eq(mode_at(ch.ws_fd, "sessions"), 0700);
	ck_assert_uint_eq(mode_at(ch.ws_fd, "attachments"), 0700);
	fs_channel_close(&ch);
}
END_TEST

START_TEST(group_archive_and_attachments)
{
	struct fs_channel	 ch;
	struct timespec		 now = { NOW_SEC, NOW_NSEC };
	char			 folder[FS_ARCHIVE_FOLDER_MAX], p[PATH_MAX];
	unsigned		 count;
	int			 fd;

	group_setup();
	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_own_workspace(&ch), FS_OK);
	ck_assert_int_ne(fd = openat(ch.ws_fd, "sessions/a.jsonl",
	    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666), -1);
	close(fd);
	ck_assert_int_eq(fs_archive_sessions(&ch, &now, &count, folder,
	    sizeof(folder)), FS_OK);
	ck_assert_uint_eq(count, 1);
	assert_acl_at(ch.ws_fd, "sessions/archive", ACLX_ACCESS, 7,
	    ACLX_R | ACLX_X, NULL, 0);
	pathf(p, sizeof(p), "sessions/archive/%s", folder);
	ck_assert_uint_eq(mode_at(ch.ws_fd, p), 0750);
	assert_acl_at(ch.ws_fd, p, ACLX_ACCESS, 7, ACLX_R | ACLX_X, NULL, 0);
	pathf(p, sizeof(p), "sessions/archive/%s/a.jsonl", folder);
	assert_session_file(ch.ws_fd, p);
	/* what the host writes there the group reads, and no one else */
	ck_assert_int_eq(fs_write_attachment(&ch, "photo.png", S("png")),
	    FS_OK);
	ck_assert_uint_eq(mode_at(ch.ws_fd, "attachments/photo.png"), 0640);
	assert_acl_at(ch.ws_fd, "attachments/photo.png", ACLX_ACCESS, 6,
	    ACLX_R, NULL, 0);
	assert_content(ch.ws_fd, "attachments/photo.png", "png", 3);
	fs_channel_close(&ch);
}
END_TEST

/*
 * The state directory
 */

START_TEST(state_ok)
{
	struct stat	 a, b;
	int		 fd;

	ck_assert_int_eq(fs_open_state_dir(state, getuid(), &fd), FS_OK);
	ck_assert_int_eq(fstat(fd, &a), 0);
	ck_assert_int_eq(stat(state, &b), 0);
	ck_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	close(fd);
}
END_TEST

START_TEST(state_relative)
{
	int	 fd = 7;

	ck_assert_int_eq(fs_open_state_dir(state + 1, getuid(), &fd),
	    FS_STATE_NOT_ABSOLUTE);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(fs_open_state_dir("", getuid(), &fd),
	    FS_STATE_NOT_ABSOLUTE);
	ck_assert_int_eq(fs_open_state_dir(".", getuid(), &fd),
	    FS_STATE_NOT_ABSOLUTE);
	ck_assert_int_eq(fs_open_state_dir(NULL, getuid(), &fd),
	    FS_STATE_NOT_ABSOLUTE);
}
END_TEST

START_TEST(state_root)
{
	int	 fd;

	ck_assert_int_eq(fs_open_state_dir("/", getuid(), &fd),
	    FS_STATE_IS_ROOT);
	ck_assert_int_eq(fd, -1);
}
END_TEST

START_TEST(state_not_canonical)
{
	char		 p[PATH_MAX];
	const char	*base = state + strlen("/tmp/");
	int		 fd;

	pathf(p, sizeof(p), "%s/", state);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_NOT_CANONICAL);
	pathf(p, sizeof(p), "/tmp//%s", base);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_NOT_CANONICAL);
	pathf(p, sizeof(p), "/%s", state);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_NOT_CANONICAL);
	pathf(p, sizeof(p), "/tmp/./%s", base);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_NOT_CANONICAL);
	pathf(p, sizeof(p), "%s/.", state);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_NOT_CANONICAL);
	pathf(p, sizeof(p), "%s/../%s", state, base);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_NOT_CANONICAL);
	pathf(p, sizeof(p), "/tmp/../tmp/%s", base);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_NOT_CANONICAL);
	ck_assert_int_eq(fd, -1);
}
END_TEST

START_TEST(state_symlink)
{
	char	 p[PATH_MAX];
	int	 fd;

	ck_assert_int_eq(mkdirat(statefd, "real", 0700), 0);
	ck_assert_int_eq(mkdirat(statefd, "real/sub", 0700), 0);
	ck_assert_int_eq(symlinkat("real", statefd, "link"), 0);
	plant_link(statefd, "out", "dir");

	pathf(p, sizeof(p), "%s/real/sub", state);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd), FS_OK);
	close(fd);
	/* The last component, a middle one, and one leading outside. */
	pathf(p, sizeof(p), "%s/link", state);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_SYMLINK);
	pathf(p, sizeof(p), "%s/link/sub", state);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_SYMLINK);
	pathf(p, sizeof(p), "%s/out", state);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_SYMLINK);
	ck_assert_int_eq(fd, -1);
}
END_TEST

START_TEST(state_mode)
{
	static const mode_t	 bad[] = { 0750, 0701, 0710, 0707, 0702, 0720 };
	size_t			 i;
	int			 fd;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(chmod(state, bad[i]), 0);
		ck_assert_int_eq(fs_open_state_dir(state, getuid(), &fd),
		    FS_STATE_MODE);
		ck_assert_int_eq(fd, -1);
	}
	ck_assert_int_eq(chmod(state, 0700), 0);
	ck_assert_int_eq(fs_open_state_dir(state, getuid(), &fd), FS_OK);
	close(fd);
}
END_TEST

START_TEST(state_owner)
{
	int	 fd;

	ck_assert_int_eq(fs_open_state_dir(state, getuid() + 1, &fd),
	    FS_STATE_OWNER);
	ck_assert_int_eq(fd, -1);
	if (geteuid() != 0)
		return;
	ck_assert_int_eq(chown(state, 4242, -1), 0);
	ck_assert_int_eq(fs_open_state_dir(state, getuid(), &fd),
	    FS_STATE_OWNER);
	ck_assert_int_eq(fs_open_state_dir(state, 4242, &fd), FS_OK);
	close(fd);
	ck_assert_int_eq(chown(state, 0, -1), 0);
}
END_TEST

START_TEST(state_not_dir)
{
	char	 p[PATH_MAX];
	int	 fd;

	write_at(statefd, "file", S("x"));
	pathf(p, sizeof(p), "%s/file", state);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_NOT_DIR);
	pathf(p, sizeof(p), "%s/file/sub", state);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_NOT_DIR);
	pathf(p, sizeof(p), "%s/missing", state);
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd), FS_IO);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(fd, -1);
}
END_TEST

START_TEST(state_too_long)
{
	char	 p[PATH_BYTES_MAX + 8];
	size_t	 i;
	int	 fd;

	p[0] = '/';
	for (i = 1; i < sizeof(p) - 1; i++)
		p[i] = i % 200 == 0 ? '/' : 'a';
	p[sizeof(p) - 1] = '\0';
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_TOO_LONG);
	memset(p + 1, 'a', NAME_MAX + 1);
	p[NAME_MAX + 2] = '\0';
	ck_assert_int_eq(fs_open_state_dir(p, getuid(), &fd),
	    FS_STATE_TOO_LONG);
	ck_assert_int_eq(fd, -1);
}
END_TEST

/*
 * The channel's directories and .channel-key
 */

START_TEST(channel_layout)
{
	struct fs_channel	 ch;
	struct stat		 st;
	int			 i;

	for (i = 0; i < 2; i++) {
		open_channel(KEY, &ch);
		ck_assert_str_eq(ch.segment, KEY_SEG);
		assert_own_dir(statefd, KEY_SEG);
		assert_own_dir(ch.chan_fd, "run");
		assert_own_dir(ch.chan_fd, "workspace");
		ck_assert_int_eq(fstatat(ch.chan_fd, ".channel-key", &st,
		    AT_SYMLINK_NOFOLLOW), 0);
		ck_assert(S_ISREG(st.st_mode));
		ck_assert_uint_eq(st.st_mode & 07777, 0600);
		assert_content(ch.chan_fd, ".channel-key", S(KEY));
		ck_assert_int_ne(fcntl(ch.run_fd, F_GETFD) & FD_CLOEXEC, 0);
		fs_channel_close(&ch);
		assert_channel_closed(&ch);
	}
	/* Closing twice is harmless. */
	fs_channel_close(&ch);
	assert_channel_closed(&ch);
}
END_TEST

START_TEST(channel_alias)
{
	struct fs_channel	 ch;
	int			 cfd;

	cfd = make_channel_dir(KEY);
	ck_assert_int_eq(fs_channel_open(statefd, S("discord_1"), &ch),
	    FS_ALIAS);
	ck_assert_str_eq(fs_err_to_string(FS_ALIAS),
	    "Channel workspace alias refused");
	assert_channel_closed(&ch);
	assert_content(cfd, ".channel-key", S(KEY));
	/* And the other way round. */
	ck_assert_int_eq(fs_channel_open(statefd, S("a_b"), &ch), FS_OK);
	fs_channel_close(&ch);
	ck_assert_int_eq(fs_channel_open(statefd, S("a.b"), &ch), FS_ALIAS);
	ck_assert_int_eq(fs_channel_open(statefd, S("a\xc3\xa9"), &ch),
	    FS_OK);
	fs_channel_close(&ch);
	ck_assert_int_eq(fs_channel_open(statefd, S("a\xc3\xa8"), &ch),
	    FS_ALIAS);
	close(cfd);
}
END_TEST

START_TEST(channel_alias_no_subdirs)
{
	struct fs_channel	 ch;
	int			 cfd;

	/* A key file made by hand, no run or workspace yet. */
	ck_assert_int_eq(mkdirat(statefd, KEY_SEG, 0700), 0);
	cfd = openat(statefd, KEY_SEG, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ne(cfd, -1);
	write_at(cfd, ".channel-key", S("discord_1"));
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch), FS_ALIAS);
	ck_assert_uint_eq(count_entries(statefd, KEY_SEG), 1);
	close(cfd);
}
END_TEST

START_TEST(channel_key_content)
{
	static char		 big[CHANNEL_KEY_FILE_MAX + 100];
	struct fs_channel	 ch;
	int			 cfd;

	cfd = make_channel_dir(KEY);
	write_at(cfd, ".channel-key", S(KEY "\n"));
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch), FS_ALIAS);
	write_at(cfd, ".channel-key", S("discord:"));
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch), FS_ALIAS);
	write_at(cfd, ".channel-key", "", 0);
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch), FS_ALIAS);
	memset(big, 'x', sizeof(big));
	memcpy(big, KEY, strlen(KEY));
	write_at(cfd, ".channel-key", big, sizeof(big));
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch), FS_ALIAS);
	write_at(cfd, ".channel-key", S(KEY));
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch), FS_OK);
	fs_channel_close(&ch);
	close(cfd);
}
END_TEST

START_TEST(channel_key_limits)
{
	struct fs_channel	 ch;
	char			 key[CHANNEL_KEY_BYTES_MAX + 8];
	size_t			 i;

	/*
	 * A key of 256 chars is valid, but its 256-byte segment cannot be a
	 * directory name (NAME_MAX 255): refused with its own reason.
	 */
	memset(key, 'k', CHANNEL_KEY_MAX + 1);
	ck_assert_int_eq(fs_channel_open(statefd, key, NAME_MAX, &ch), FS_OK);
	ck_assert_uint_eq(strlen(ch.segment), NAME_MAX);
	assert_content(ch.chan_fd, ".channel-key", key, NAME_MAX);
	fs_channel_close(&ch);
	ck_assert_int_eq(fs_channel_open(statefd, key, CHANNEL_KEY_MAX, &ch),
	    FS_SEGMENT_TOO_LONG);
	assert_channel_closed(&ch);
	ck_assert_int_eq(fs_channel_open(statefd, key, CHANNEL_KEY_MAX + 1,
	    &ch), FS_KEY_INVALID);
	assert_channel_closed(&ch);

	/* Three bytes a char: 765 bytes of key, 255 of segment. */
	for (i = 0; i < CHANNEL_KEY_MAX + 1; i++)
		memcpy(key + 3 * i, "\xe2\x82\xac", 3);		/* U+20AC */
	ck_assert_int_eq(fs_channel_open(statefd, key, 3 * NAME_MAX, &ch),
	    FS_OK);
	assert_content(ch.chan_fd, ".channel-key", key, 3 * NAME_MAX);
	fs_channel_close(&ch);
	ck_assert_int_eq(fs_channel_open(statefd, key, CHANNEL_KEY_BYTES_MAX,
	    &ch), FS_SEGMENT_TOO_LONG);
	ck_assert_int_eq(fs_channel_open(statefd, key,
	    CHANNEL_KEY_BYTES_MAX + 3, &ch), FS_KEY_INVALID);

	ck_assert_int_eq(fs_channel_open(statefd, "", 0, &ch),
	    FS_KEY_INVALID);
	ck_assert_int_eq(fs_channel_open(statefd, NULL, 3, &ch),
	    FS_KEY_INVALID);
	ck_assert_int_eq(fs_channel_open(statefd, S("a\0b"), &ch),
	    FS_KEY_INVALID);
	ck_assert_int_eq(fs_channel_open(statefd, S("a\xff"), &ch),
	    FS_KEY_INVALID);
	ck_assert_int_eq(fs_channel_open(statefd, S("\xed\xa0\x80"), &ch),
	    FS_KEY_INVALID);
	ck_assert_str_eq(fs_err_to_string(FS_KEY_INVALID),
	    "channel key must be 1-256 chars of valid UTF-8");
	/* Nothing was made for a refused key. */
	ck_assert_uint_eq(count_entries(statefd, "."), 2);
}
END_TEST

START_TEST(channel_key_non_bmp)
{
	struct fs_channel	 ch;
	char			 key[4 * 129];
	size_t			 i;

	ck_assert_int_eq(fs_channel_open(statefd, S("tg:\xf0\x9f\x98\x80!"),
	    &ch), FS_OK);
	ck_assert_str_eq(ch.segment, "tg____");
	assert_own_dir(statefd, "tg____");
	assert_content(ch.chan_fd, ".channel-key", S("tg:\xf0\x9f\x98\x80!"));
	fs_channel_close(&ch);

	/* 127 characters above U+FFFF and one more char make 255; 128 make
	 * 256, a valid key whose segment is too long; 129 are too many. */
	for (i = 0; i < 129; i++)
		memcpy(key + 4 * i, "\xf0\x9f\x98\x80", 4);
	key[4 * 127] = 'z';
	ck_assert_int_eq(fs_channel_open(statefd, key, 4 * 127 + 1, &ch),
	    FS_OK);
	ck_assert_uint_eq(strlen(ch.segment), NAME_MAX);
	ck_assert_str_eq(ch.segment + NAME_MAX - 3, "__z");
	fs_channel_close(&ch);
	memcpy(key + 4 * 127, "\xf0\x9f\x98\x80", 4);
	ck_assert_int_eq(fs_channel_open(statefd, key, 4 * 128, &ch),
	    FS_SEGMENT_TOO_LONG);
	ck_assert_int_eq(fs_channel_open(statefd, key, 4 * 129, &ch),
	    FS_KEY_INVALID);
}
END_TEST

START_TEST(key_file_symlink)
{
	static const char *const targets[] = {
		"keycopy", "keyother", "missing", "dir"
	};
	struct fs_channel	 ch;
	size_t			 i;
	int			 cfd;

	cfd = make_channel_dir(KEY);
	for (i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		ck_assert_int_eq(unlinkat(cfd, ".channel-key", 0), 0);
		plant_link(cfd, ".channel-key", targets[i]);
		ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch),
		    FS_KEY_FILE_SYMLINK);
		assert_channel_closed(&ch);
		assert_type(cfd, ".channel-key", S_IFLNK);
	}
	close(cfd);
}
END_TEST

START_TEST(key_file_fifo)
{
	struct fs_channel	 ch;
	int			 cfd;

	alarm(5);
	cfd = make_channel_dir(KEY);
	ck_assert_int_eq(unlinkat(cfd, ".channel-key", 0), 0);
	ck_assert_int_eq(mkfifoat(cfd, ".channel-key", 0600), 0);
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch),
	    FS_KEY_FILE_TYPE);
	assert_channel_closed(&ch);
	/* On a fresh channel too, before run and workspace exist. */
	ck_assert_int_eq(mkdirat(statefd, "fresh", 0700), 0);
	ck_assert_int_eq(mkfifoat(statefd, "fresh/.channel-key", 0600), 0);
	ck_assert_int_eq(fs_channel_open(statefd, S("fresh"), &ch),
	    FS_KEY_FILE_TYPE);
	alarm(0);
	close(cfd);
}
END_TEST

START_TEST(key_file_other_types)
{
	struct fs_channel	 ch;
	int			 cfd;

	cfd = make_channel_dir(KEY);
	ck_assert_int_eq(unlinkat(cfd, ".channel-key", 0), 0);
	ck_assert_int_eq(mkdirat(cfd, ".channel-key", 0700), 0);
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch),
	    FS_KEY_FILE_TYPE);
	ck_assert_int_eq(unlinkat(cfd, ".channel-key", AT_REMOVEDIR), 0);
	plant_socket(cfd, ".channel-key");
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch),
	    FS_KEY_FILE_TYPE);
	assert_type(cfd, ".channel-key", S_IFSOCK);
	if (geteuid() == 0) {
		ck_assert_int_eq(unlinkat(cfd, ".channel-key", 0), 0);
		ck_assert_int_eq(mknodat(cfd, ".channel-key", S_IFCHR | 0600,
		    makedev(1, 3)), 0);
		ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch),
		    FS_KEY_FILE_TYPE);
	}
	close(cfd);
}
END_TEST

/* run/ as a link (to a directory, or to nothing), a file or a FIFO: refused
 * by open_fn, left as it is, and every descriptor of the channel closed. */
static void
assert_run_refused(int cfd, enum fs_err (*open_fn)(int, const char *, size_t,
    struct fs_channel *))
{
	struct fs_channel	 ch;

	rm_tree_at(cfd, "run");
	plant_link(cfd, "run", "dir");
	ck_assert_int_eq(open_fn(statefd, S(KEY), &ch), FS_RUN_SYMLINK);
	assert_channel_closed(&ch);
	ck_assert_int_eq(unlinkat(cfd, "run", 0), 0);
	plant_link(cfd, "run", "missing");
	ck_assert_int_eq(open_fn(statefd, S(KEY), &ch), FS_RUN_SYMLINK);
	assert_type(cfd, "run", S_IFLNK);
	ck_assert_int_eq(unlinkat(cfd, "run", 0), 0);
	write_at(cfd, "run", S("x"));
	ck_assert_int_eq(open_fn(statefd, S(KEY), &ch), FS_RUN_NOT_DIR);
	assert_content(cfd, "run", S("x"));
	assert_channel_closed(&ch);
	ck_assert_int_eq(unlinkat(cfd, "run", 0), 0);
	ck_assert_int_eq(mkfifoat(cfd, "run", 0600), 0);
	alarm(5);
	ck_assert_int_eq(open_fn(statefd, S(KEY), &ch), FS_RUN_NOT_DIR);
	alarm(0);
	ck_assert_int_eq(unlinkat(cfd, "run", 0), 0);
}

START_TEST(channel_dirs_symlink)
{
	struct fs_channel	 ch;
	int			 cfd;

	cfd = make_channel_dir(KEY);
	assert_run_refused(cfd, fs_channel_open);

	rm_tree_at(cfd, "workspace");
	plant_link(cfd, "workspace", "dir");
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch),
	    FS_WORKSPACE_SYMLINK);
	assert_channel_closed(&ch);
	ck_assert_int_eq(unlinkat(cfd, "workspace", 0), 0);
	ck_assert_int_eq(mkfifoat(cfd, "workspace", 0600), 0);
	alarm(5);
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch),
	    FS_WORKSPACE_NOT_DIR);
	alarm(0);
	ck_assert_int_eq(unlinkat(cfd, "workspace", 0), 0);
	open_channel(KEY, &ch);
	fs_channel_close(&ch);
	close(cfd);
}
END_TEST

START_TEST(channel_segment_symlink)
{
	struct fs_channel	 ch;

	plant_link(statefd, KEY_SEG, "dir");
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch),
	    FS_SEGMENT_SYMLINK);
	assert_channel_closed(&ch);
	ck_assert_int_eq(unlinkat(statefd, KEY_SEG, 0), 0);
	plant_link(statefd, KEY_SEG, "missing");
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch),
	    FS_SEGMENT_SYMLINK);
	ck_assert_int_eq(unlinkat(statefd, KEY_SEG, 0), 0);
	write_at(statefd, KEY_SEG, S(KEY));
	ck_assert_int_eq(fs_channel_open(statefd, S(KEY), &ch),
	    FS_SEGMENT_NOT_DIR);
	assert_content(statefd, KEY_SEG, S(KEY));
}
END_TEST

START_TEST(channel_modes_repaired)
{
	struct fs_channel	 ch;
	int			 cfd;

	cfd = make_channel_dir(KEY);
	ck_assert_int_eq(fchmodat(cfd, "workspace", 0755, 0), 0);
	ck_assert_int_eq(fchmodat(cfd, "run", 0, 0), 0);
	ck_assert_int_eq(fchmodat(statefd, KEY_SEG, 0711, 0), 0);
	open_channel(KEY, &ch);
	assert_own_dir(statefd, KEY_SEG);
	assert_own_dir(cfd, "run");
	assert_own_dir(cfd, "workspace");
	fs_channel_close(&ch);
	close(cfd);
}
END_TEST

/* What checks run/ without holding it refuses and mends as what opens it. */
START_TEST(channel_check_run)
{
	struct fs_channel	 ch;
	int			 cfd;

	cfd = make_channel_dir(KEY);
	ck_assert_int_eq(fs_channel_check(statefd, S(KEY), &ch), FS_OK);
	ck_assert_int_ge(ch.chan_fd, 0);
	ck_assert_int_eq(ch.run_fd, -1);
	ck_assert_int_ge(ch.ws_fd, 0);
	fs_channel_close(&ch);

	assert_run_refused(cfd, fs_channel_check);

	/* Missing: made; wrong bits, none at all included: mended. */
	ck_assert_int_eq(fs_channel_check(statefd, S(KEY), &ch), FS_OK);
	ck_assert_int_eq(ch.run_fd, -1);
	fs_channel_close(&ch);
	assert_own_dir(cfd, "run");
	ck_assert_int_eq(fchmodat(cfd, "run", 0755, 0), 0);
	ck_assert_int_eq(fs_channel_check(statefd, S(KEY), &ch), FS_OK);
	fs_channel_close(&ch);
	assert_own_dir(cfd, "run");
	ck_assert_int_eq(fchmodat(cfd, "run", 0, 0), 0);
	ck_assert_int_eq(fs_channel_check(statefd, S(KEY), &ch), FS_OK);
	fs_channel_close(&ch);
	assert_own_dir(cfd, "run");

	/* The key is read as by fs_channel_open(). */
	ck_assert_int_eq(fs_channel_check(statefd, S("discord_1"), &ch),
	    FS_ALIAS);
	assert_channel_closed(&ch);
	close(cfd);
}
END_TEST

START_TEST(channel_bad_statefd)
{
	struct fs_channel	 ch;

	ck_assert_int_eq(fs_channel_open(-1, S(KEY), &ch), FS_IO);
	ck_assert_int_eq(errno, EBADF);
	assert_channel_closed(&ch);
}
END_TEST

/*
 * Directories in the workspace
 */

static const char *const own_names[] = { "attachments", "outbox", "sessions" };
#define NOWN	(sizeof(own_names) / sizeof(own_names[0]))

START_TEST(own_fresh)
{
	struct fs_channel	 ch;
	size_t			 i;

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_own_workspace(&ch), FS_OK);
	for (i = 0; i < NOWN; i++)
		assert_own_dir(ch.ws_fd, own_names[i]);
	ck_assert_int_eq(fs_own_workspace(&ch), FS_OK);
	fs_channel_close(&ch);
}
END_TEST

/* Plants kind _i at each name, then checks each was replaced. */
START_TEST(own_replaces)
{
	struct fs_channel	 ch;
	size_t			 i;

	alarm(5);
	open_channel(KEY, &ch);
	for (i = 0; i < NOWN; i++) {
		switch (_i) {
		case 0:
			plant_link(ch.ws_fd, own_names[i], "dir");
			break;
		case 1:
			plant_link(ch.ws_fd, own_names[i], "file");
			break;
		case 2:
			plant_link(ch.ws_fd, own_names[i], "missing");
			break;
		case 3:
			write_at(ch.ws_fd, own_names[i], S("guest"));
			break;
		case 4:
			ck_assert_int_eq(mkfifoat(ch.ws_fd, own_names[i],
			    0600), 0);
			break;
		case 5:
			plant_socket(ch.ws_fd, own_names[i]);
			break;
		case 6:
			if (geteuid() != 0) {
				alarm(0);
				return;
			}
			ck_assert_int_eq(mknodat(ch.ws_fd, own_names[i],
			    S_IFCHR | 0600, makedev(1, 3)), 0);
			break;
		}
	}
	ck_assert_int_eq(fs_own_workspace(&ch), FS_OK);
	for (i = 0; i < NOWN; i++) {
		assert_own_dir(ch.ws_fd, own_names[i]);
		ck_assert_uint_eq(count_entries(ch.ws_fd, own_names[i]), 0);
	}
	fs_channel_close(&ch);
	alarm(0);
}
END_TEST

START_TEST(own_keeps_filled_dir)
{
	struct fs_channel	 ch;
	int			 fd;

	open_channel(KEY, &ch);
	ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions", 0755), 0);
	ck_assert_int_eq(fchmodat(ch.ws_fd, "sessions", 0755, 0), 0);
	write_at(ch.ws_fd, "sessions/a.jsonl", S("{}\n"));
	ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions/sub", 0700), 0);
	plant_link(ch.ws_fd, "sessions/link", "file");
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, "sessions",
	    FS_DIR_READ, &fd), FS_OK);
	assert_own_dir(ch.ws_fd, "sessions");
	ck_assert_uint_eq(count_entries(ch.ws_fd, "sessions"), 3);
	assert_content(fd, "a.jsonl", S("{}\n"));
	assert_type(fd, "link", S_IFLNK);
	ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
	close(fd);
	fs_channel_close(&ch);
}
END_TEST

START_TEST(own_mode_zero_dir)
{
	struct fs_channel	 ch;
	int			 fd;

	open_channel(KEY, &ch);
	ck_assert_int_eq(mkdirat(ch.ws_fd, "outbox", 0700), 0);
	write_at(ch.ws_fd, "outbox/reply.txt", S("hello"));
	ck_assert_int_eq(fchmodat(ch.ws_fd, "outbox", 0, 0), 0);
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, "outbox",
	    FS_DIR_PRIVATE, &fd), FS_OK);
	assert_own_dir(ch.ws_fd, "outbox");
	assert_content(fd, "reply.txt", S("hello"));
	close(fd);
	ck_assert_int_eq(fchmodat(ch.ws_fd, "outbox", 03777, 0), 0);
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, "outbox",
	    FS_DIR_PRIVATE, NULL), FS_OK);
	assert_own_dir(ch.ws_fd, "outbox");
	fs_channel_close(&ch);
}
END_TEST

START_TEST(own_dir_names)
{
	struct fs_channel	 ch;
	char			 longname[NAME_MAX + 2];
	int			 fd = 7;

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, "",
	    FS_DIR_PRIVATE, &fd), FS_NAME_INVALID);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, NULL,
	    FS_DIR_PRIVATE, NULL), FS_NAME_INVALID);
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, ".",
	    FS_DIR_PRIVATE, NULL), FS_NAME_INVALID);
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, "..",
	    FS_DIR_PRIVATE, NULL), FS_NAME_INVALID);
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, "a/b",
	    FS_DIR_PRIVATE, NULL), FS_NAME_INVALID);
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, "/tmp",
	    FS_DIR_PRIVATE, NULL), FS_NAME_INVALID);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, longname, FS_DIR_PRIVATE, NULL),
	    FS_NAME_INVALID);
	longname[NAME_MAX] = '\0';
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, longname,
	    FS_DIR_PRIVATE, NULL), FS_OK);
	ck_assert_uint_eq(count_entries(ch.ws_fd, "."), 1);
	fs_channel_close(&ch);
}
END_TEST

START_TEST(own_dir_other_owner)
{
	struct fs_channel	 ch;
	int			 fd;

	if (geteuid() != 0)
		return;
	open_channel(KEY, &ch);
	ck_assert_int_eq(mkdirat(ch.ws_fd, "outbox", 0700), 0);
	ck_assert_int_eq(fchownat(ch.ws_fd, "outbox", 4242, 4242,
	    AT_SYMLINK_NOFOLLOW), 0);
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, "outbox",
	    FS_DIR_PRIVATE, &fd), FS_DIR_OWNER);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(fs_own_workspace(&ch), FS_DIR_OWNER);
	fs_channel_close(&ch);
}
END_TEST

/*
 * The broker's socket
 */

static void
sock_path(char *buf, size_t len, const char *dir, const char *seg)
{
	pathf(buf, len, "%s/%s/run/broker.sock", dir, seg);
}

static int
connect_to(const char *path)
{
	struct sockaddr_un	 sun;
	int			 c;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	pathf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	ck_assert_int_ne(c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0),
	    -1);
	if (connect(c, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		close(c);
		return -1;
	}
	return c;
}

static void
assert_listening(int lfd, int runfd, const char *path)
{
	struct stat	 st;
	socklen_t	 sl;
	int		 on = 0, c, a;

	ck_assert_int_eq(fstatat(runfd, "broker.sock", &st,
	    AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_uint_eq(st.st_uid, geteuid());
	sl = sizeof(on);
	ck_assert_int_eq(getsockopt(lfd, SOL_SOCKET, SO_ACCEPTCONN, &on, &sl),
	    0);
	ck_assert_int_eq(on, 1);
	ck_assert_int_ne(fcntl(lfd, F_GETFL) & O_NONBLOCK, 0);
	ck_assert_int_ne(fcntl(lfd, F_GETFD) & FD_CLOEXEC, 0);
	c = connect_to(path);
	ck_assert_msg(c != -1, "connect %s: %s", path, strerror(errno));
	ck_assert_int_ne(a = accept(lfd, NULL, NULL), -1);
	ck_assert_int_eq(write(c, "ping", 4), 4);
	close(c);
	close(a);
}

START_TEST(sock_bound)
{
	struct fs_channel	 ch;
	char			 path[PATH_MAX];
	int			 lfd;

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_bind_broker_socket(&ch, state, &lfd), FS_OK);
	sock_path(path, sizeof(path), state, KEY_SEG);
	assert_listening(lfd, ch.run_fd, path);
	close(lfd);
	/* A second start replaces the socket of the first. */
	ck_assert_int_eq(fs_bind_broker_socket(&ch, state, &lfd), FS_OK);
	assert_listening(lfd, ch.run_fd, path);
	close(lfd);
	ck_assert_uint_eq(count_entries(ch.chan_fd, "run"), 1);
	fs_channel_close(&ch);
}
END_TEST

START_TEST(sock_stale)
{
	struct fs_channel	 ch;
	char			 path[PATH_MAX];
	int			 lfd;

	open_channel(KEY, &ch);
	sock_path(path, sizeof(path), state, KEY_SEG);
	switch (_i) {
	case 0:
		write_at(ch.run_fd, "broker.sock", S("stale"));
		break;
	case 1:
		plant_link(ch.run_fd, "broker.sock", "file");
		break;
	case 2:
		plant_link(ch.run_fd, "broker.sock", "missing");
		break;
	case 3:
		plant_link(ch.run_fd, "broker.sock", "dir");
		break;
	case 4:
		plant_socket(ch.run_fd, "broker.sock");
		break;
	case 5:
		ck_assert_int_eq(mkdirat(ch.run_fd, "broker.sock", 0700), 0);
		break;
	case 6:
		ck_assert_int_eq(mkfifoat(ch.run_fd, "broker.sock", 0600), 0);
		break;
	}
	ck_assert_int_eq(fs_bind_broker_socket(&ch, state, &lfd), FS_OK);
	assert_listening(lfd, ch.run_fd, path);
	close(lfd);
	fs_channel_close(&ch);
}
END_TEST

/* A state directory of exactly len bytes: prefix, then padding. */
static void
make_state_of_len(char *out, size_t outlen, const char *prefix, size_t len)
{
	char	 name[NAME_MAX + 1];
	size_t	 n, pl = strlen(prefix);

	if (lenbase[0] == '\0') {
		pathf(lenbase, sizeof(lenbase), "%s", TMPL_LEN);
		ck_assert_ptr_nonnull(mkdtemp(lenbase));
	}
	n = len - strlen(lenbase) - 1;
	ck_assert_uint_gt(n, pl);
	memcpy(name, prefix, pl);
	memset(name + pl, 'a', n - pl);
	name[n] = '\0';
	pathf(out, outlen, "%s/%s", lenbase, name);
	ck_assert_uint_eq(strlen(out), len);
	ck_assert_int_eq(mkdir(out, 0700), 0);
}

/* Bind in a state directory made of prefix and padding to len bytes. */
static enum fs_err
bind_in(const char *prefix, size_t len, size_t wantchars)
{
	struct fs_channel	 ch;
	char			 dir[PATH_MAX], path[PATH_MAX];
	enum fs_err		 e;
	size_t			 units;
	int			 sfd, lfd;

	make_state_of_len(dir, sizeof(dir), prefix, len);
	ck_assert_int_eq(fs_open_state_dir(dir, getuid(), &sfd), FS_OK);
	ck_assert_int_eq(fs_channel_open(sfd, S("k"), &ch), FS_OK);
	sock_path(path, sizeof(path), dir, "k");
	ck_assert_int_eq(utf8_utf16_len(path, strlen(path), &units), 0);
	ck_assert_uint_eq(units, wantchars);
	e = fs_bind_broker_socket(&ch, dir, &lfd);
	if (e == FS_OK) {
		assert_listening(lfd, ch.run_fd, path);
		close(lfd);
	} else {
		ck_assert_int_eq(lfd, -1);
		assert_type(ch.run_fd, "broker.sock", 0);
	}
	fs_channel_close(&ch);
	close(sfd);
	return e;
}

START_TEST(sock_path_limit)
{
	/* "<dir>/k/run/broker.sock" is the directory and 18 more. */
	ck_assert_int_eq(bind_in("", 82, 100), FS_OK);
	ck_assert_int_eq(bind_in("", 83, 101), FS_SOCK_PATH_TOO_LONG);
	ck_assert_int_eq(bind_in("", 60, 78), FS_OK);
	/* Chars, not bytes: U+00E9 is two bytes and one char, U+1F600
	 * four bytes and two chars. */
	ck_assert_int_eq(bind_in("\xc3\xa9", 83, 100), FS_OK);
	ck_assert_int_eq(bind_in("\xc3\xa9", 84, 101), FS_SOCK_PATH_TOO_LONG);
	ck_assert_int_eq(bind_in("\xf0\x9f\x98\x80", 84, 100), FS_OK);
	ck_assert_int_eq(bind_in("\xf0\x9f\x98\x80", 85, 101),
	    FS_SOCK_PATH_TOO_LONG);
	ck_assert_str_eq(fs_err_to_string(FS_SOCK_PATH_TOO_LONG),
	    "broker socket path is longer than 100 chars");
}
END_TEST

/*
 * Precheck runs: <state>/.precheck/<run>/{run,ws}
 */

static void
pc_sock_path(char *buf, size_t len, const char *dir, uint64_t run)
{
	pathf(buf, len, "%s/.precheck/%llu/run/broker.sock", dir,
	    (unsigned long long)run);
}

START_TEST(precheck_made_and_cleaned)
{
	char	 path[PATH_MAX];
	int	 lfd, runfd, pcfd;

	ck_assert_int_eq(fs_precheck_make(statefd, state, 7, &lfd), FS_OK);
	ck_assert_int_ge(pcfd = openat(statefd, ".precheck/7", O_RDONLY |
	    O_DIRECTORY | O_NOFOLLOW), 0);
	/* run/ holds the socket, ws/ nothing; both private to the owner */
	ck_assert_uint_eq(count_entries(pcfd, "ws"), 0);
	ck_assert_uint_eq(count_entries(pcfd, "run"), 1);
	assert_type(pcfd, "ws", S_IFDIR);
	ck_assert_int_ge(runfd = openat(pcfd, "run", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW), 0);
	pc_sock_path(path, sizeof(path), state, 7);
	assert_listening(lfd, runfd, path);
	close(lfd);
	close(runfd);
	close(pcfd);
	ck_assert_int_eq(fs_precheck_clean(statefd, 7), FS_OK);
	assert_type(statefd, ".precheck/7", 0);
	/* gone already is fine, and so is a run never made */
	ck_assert_int_eq(fs_precheck_clean(statefd, 7), FS_OK);
	ck_assert_int_eq(fs_precheck_clean(statefd, 8), FS_OK);
	ck_assert_int_eq(fs_precheck_make(statefd, state, 0, &lfd),
	    FS_NAME_INVALID);
	ck_assert_int_eq(lfd, -1);
	ck_assert_int_eq(fs_precheck_make(statefd, state,
	    PRECHECK_RUN_MAX + 1, &lfd), FS_NAME_INVALID);
	ck_assert_int_eq(fs_precheck_make(statefd, state, PRECHECK_RUN_MAX,
	    &lfd), FS_OK);
	close(lfd);
	ck_assert_int_eq(fs_precheck_clean(statefd, PRECHECK_RUN_MAX), FS_OK);
}
END_TEST

/* What an earlier run (or anyone) left under a run's name is replaced,
 * and a link is never followed. */
START_TEST(precheck_planted)
{
	int	 lfd, pcfd;

	switch (_i) {
	case 0:
		plant_link(statefd, ".precheck", "dir");
		break;
	case 1:
		ck_assert_int_eq(mkdirat(statefd, ".precheck", 0700), 0);
		plant_link(statefd, ".precheck/3", "dir");
		break;
	case 2:
		ck_assert_int_eq(mkdirat(statefd, ".precheck", 0700), 0);
		ck_assert_int_eq(mkdirat(statefd, ".precheck/3", 0700), 0);
		plant_link(statefd, ".precheck/3/run", "dir");
		break;
	case 3:
		ck_assert_int_eq(mkdirat(statefd, ".precheck", 0700), 0);
		ck_assert_int_eq(fs_precheck_make(statefd, state, 3, &lfd),
		    FS_OK);
		close(lfd);
		break;
	}
	ck_assert_int_eq(fs_precheck_make(statefd, state, 3, &lfd), FS_OK);
	close(lfd);
	ck_assert_int_ge(pcfd = openat(statefd, ".precheck/3", O_RDONLY |
	    O_DIRECTORY | O_NOFOLLOW), 0);
	ck_assert_uint_eq(count_entries(pcfd, "ws"), 0);
	close(pcfd);
	fs_precheck_clean_all(statefd);
	assert_type(statefd, ".precheck/3", 0);
}
END_TEST

START_TEST(precheck_path_limit)
{
	char	 dir[PATH_MAX];
	int	 sfd, lfd;

	/* "<dir>/.precheck/1/run/broker.sock" is the directory and 28
	 * more. */
	make_state_of_len(dir, sizeof(dir), "p", 72);
	ck_assert_int_eq(fs_open_state_dir(dir, getuid(), &sfd), FS_OK);
	ck_assert_int_eq(fs_precheck_make(sfd, dir, 1, &lfd), FS_OK);
	close(lfd);
	ck_assert_int_eq(fs_precheck_make(sfd, dir, 10, &lfd),
	    FS_SOCK_PATH_TOO_LONG);
	ck_assert_int_eq(lfd, -1);
	ck_assert_int_eq(fs_precheck_clean(sfd, 1), FS_OK);
	close(sfd);
}
END_TEST

START_TEST(sock_refusals)
{
	struct fs_channel	 ch;
	char			 longdir[200];
	int			 lfd = 7;

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_bind_broker_socket(&ch, "relative", &lfd),
	    FS_STATE_NOT_ABSOLUTE);
	ck_assert_int_eq(lfd, -1);
	memset(longdir, 'a', sizeof(longdir));
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	ck_assert_int_eq(fs_bind_broker_socket(&ch, longdir, &lfd),
	    FS_SOCK_PATH_TOO_LONG);
	pathf(ch.segment, sizeof(ch.segment), "../x");
	ck_assert_int_eq(fs_bind_broker_socket(&ch, state, &lfd),
	    FS_SEGMENT_INVALID);
	ch.segment[0] = '\0';
	ck_assert_int_eq(fs_bind_broker_socket(&ch, state, &lfd),
	    FS_SEGMENT_INVALID);
	assert_type(ch.run_fd, "broker.sock", 0);
	fs_channel_close(&ch);
}
END_TEST

/*
 * Everything the file guard does, inside a Landlock domain that allows the
 * state directory only, as sandbox_fsguard() sets it up: the socket is
 * bound through /proc/self/fd, which Landlock checks at the directory's
 * real place.
 */
static int
landlock_child(void)
{
	struct sandbox_fs_rule	 rule;
	struct fs_channel	 ch;
	struct timespec		 now = { NOW_SEC, NOW_NSEC };
	char			 p[PATH_MAX], folder[FS_ARCHIVE_FOLDER_MAX];
	unsigned		 count;
	int			 sfd, lfd, fd, abi;

	rule.path = state;
	rule.access = SB_FS_READ | SB_FS_WRITE | SB_FS_SOCK;
	sandbox_no_new_privs();
	/* A kernel without Landlock runs the file guard without it too. */
	abi = sandbox_landlock(&rule, 1);
	pathf(p, sizeof(p), "%s/file", sentinel);
	if (abi > 0 && ((fd = open(p, O_RDONLY | O_CLOEXEC)) != -1 ||
	    errno != EACCES))
		return 3;
	if (fs_open_state_dir(state, getuid(), &sfd) != FS_OK)
		return 4;
	if (fs_channel_open(sfd, S(KEY), &ch) != FS_OK)
		return 5;
	if (fs_own_workspace(&ch) != FS_OK)
		return 6;
	if (fs_bind_broker_socket(&ch, state, &lfd) != FS_OK)
		return 7;
	sock_path(p, sizeof(p), state, KEY_SEG);
	if ((fd = connect_to(p)) == -1 || (fd = accept(lfd, NULL, NULL)) == -1)
		return 8;
	close(lfd);
	if (fs_write_attachment(&ch, "a.bin", S("data")) != FS_OK)
		return 9;
	if (fs_write_attachment(&ch, "evil", S("data")) != FS_EXISTS)
		return 10;
	if (fs_own_dir(ch.ws_fd, "outbox", FS_DIR_PRIVATE, NULL) != FS_OK)
		return 11;
	if (fs_archive_sessions(&ch, &now, &count, folder,
	    sizeof(folder)) != FS_OK || count != 1 ||
	    strcmp(folder, NOW_FOLDER) != 0)
		return 12;
	fs_channel_close(&ch);
	close(sfd);
	return 0;
}

START_TEST(sock_landlock)
{
	struct fs_channel	 ch;
	struct stat		 st;
	pid_t			 pid;
	int			 status;

	/* Stale and planted entries for the child to deal with. */
	open_channel(KEY, &ch);
	plant_link(ch.run_fd, "broker.sock", "file");
	ck_assert_int_eq(mkdirat(ch.ws_fd, "attachments", 0700), 0);
	plant_link(ch.ws_fd, "attachments/evil", "file");
	plant_link(ch.ws_fd, "outbox", "dir");
	ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions", 0700), 0);
	write_at(ch.ws_fd, "sessions/s.jsonl", S("s"));
	ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions/x", 0700), 0);
	ck_assert_int_eq(fchmodat(ch.ws_fd, "sessions", 0, 0), 0);

	ck_assert_int_ne(pid = fork(), -1);
	if (pid == 0)
		_exit(landlock_child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "child failed at step %d", WEXITSTATUS(status));

	ck_assert_int_eq(fstatat(ch.run_fd, "broker.sock", &st,
	    AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	assert_own_dir(ch.ws_fd, "outbox");
	assert_own_dir(ch.ws_fd, "sessions");
	assert_type(ch.ws_fd, "sessions/x", S_IFDIR);
	assert_type(ch.ws_fd, "sessions/s.jsonl", 0);
	assert_content(ch.ws_fd, "sessions/archive/" NOW_FOLDER "/s.jsonl",
	    S("s"));
	assert_content(ch.ws_fd, "attachments/a.bin", S("data"));
	assert_type(ch.ws_fd, "attachments/evil", S_IFLNK);
	fs_channel_close(&ch);
}
END_TEST

/*
 * Archiving sessions
 */

START_TEST(archive_moves)
{
	struct fs_channel	 ch;
	struct timespec		 now = { NOW_SEC, NOW_NSEC };
	char			 folder[FS_ARCHIVE_FOLDER_MAX];
	unsigned		 count = 99;
	int			 sfd, tfd;

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_own_workspace(&ch), FS_OK);
	sfd = openat(ch.ws_fd, "sessions", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ne(sfd, -1);
	write_at(sfd, "a.jsonl", S("{\"a\":1}\n"));
	write_at(sfd, "b.jsonl", S("{\"b\":2}\n"));
	write_at(sfd, "c.txt", S("c"));
	write_at(sfd, "a.jsonl.bak", S("bak"));
	write_at(sfd, "jsonl", S("no dot"));
	plant_link(sfd, "d.jsonl", "file");
	plant_link(sfd, "g.jsonl", "dir/inner.jsonl");
	ck_assert_int_eq(mkdirat(sfd, "e.jsonl", 0700), 0);
	write_at(sfd, "e.jsonl/inner.jsonl", S("inner"));
	ck_assert_int_eq(mkfifoat(sfd, "f.jsonl", 0600), 0);
	plant_socket(sfd, "h.jsonl");

	ck_assert_int_eq(fs_archive_sessions(&ch, &now, &count, folder,
	    sizeof(folder)), FS_OK);
	ck_assert_uint_eq(count, 2);
	ck_assert_str_eq(folder, NOW_FOLDER);
	assert_own_dir(sfd, "archive");
	assert_own_dir(sfd, "archive/" NOW_FOLDER);
	tfd = openat(sfd, "archive/" NOW_FOLDER, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ne(tfd, -1);
	ck_assert_uint_eq(count_entries(tfd, "."), 2);
	assert_content(tfd, "a.jsonl", S("{\"a\":1}\n"));
	assert_content(tfd, "b.jsonl", S("{\"b\":2}\n"));
	assert_type(sfd, "a.jsonl", 0);
	assert_type(sfd, "b.jsonl", 0);
	assert_content(sfd, "c.txt", S("c"));
	assert_content(sfd, "a.jsonl.bak", S("bak"));
	assert_content(sfd, "jsonl", S("no dot"));
	assert_type(sfd, "d.jsonl", S_IFLNK);
	assert_type(sfd, "g.jsonl", S_IFLNK);
	assert_type(sfd, "e.jsonl", S_IFDIR);
	assert_content(sfd, "e.jsonl/inner.jsonl", S("inner"));
	assert_type(sfd, "f.jsonl", S_IFIFO);
	assert_type(sfd, "h.jsonl", S_IFSOCK);
	close(tfd);
	close(sfd);
	fs_channel_close(&ch);
}
END_TEST

START_TEST(archive_folder_names)
{
	struct fs_channel	 ch;
	struct timespec		 now = { NOW_SEC, NOW_NSEC }, epoch = { 0, 0 };
	struct timespec		 late = { 4102444799, 999999999 };
	static const struct {
		struct timespec	 ts;
		const char	*name;
	} dates[] = {
		{ { 1709164800, 1000000 }, "2024-02-29T00-00-00.001Z" },
		{ { 951868799, 0 }, "2000-02-29T23-59-59.000Z" },
		{ { 951868800, 0 }, "2000-03-01T00-00-00.000Z" },
		{ { -1, 0 }, "1969-12-31T23-59-59.000Z" },
		{ { -86400, 0 }, "1969-12-31T00-00-00.000Z" },
		{ { 253402300799, 0 }, "9999-12-31T23-59-59.000Z" },
		{ { 253402300800, 0 }, "10000-01-01T00-00-00.000Z" },
	};
	char			 folder[FS_ARCHIVE_FOLDER_MAX];
	unsigned		 count;
	size_t			 i;

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_archive_sessions(&ch, &now, &count, folder,
	    sizeof(folder)), FS_OK);
	ck_assert_str_eq(folder, NOW_FOLDER);
	ck_assert_uint_eq(count, 0);
	ck_assert_int_eq(fs_archive_sessions(&ch, &now, &count, folder,
	    sizeof(folder)), FS_OK);
	ck_assert_str_eq(folder, NOW_FOLDER "-1");
	ck_assert_int_eq(fs_archive_sessions(&ch, &now, &count, folder,
	    sizeof(folder)), FS_OK);
	ck_assert_str_eq(folder, NOW_FOLDER "-2");
	ck_assert_int_eq(fs_archive_sessions(&ch, &epoch, &count, folder,
	    sizeof(folder)), FS_OK);
	ck_assert_str_eq(folder, "1970-01-01T00-00-00.000Z");
	ck_assert_int_eq(fs_archive_sessions(&ch, &late, &count, folder,
	    sizeof(folder)), FS_OK);
	ck_assert_str_eq(folder, "2099-12-31T23-59-59.999Z");
	for (i = 0; i < sizeof(dates) / sizeof(dates[0]); i++) {
		ck_assert_int_eq(fs_archive_sessions(&ch, &dates[i].ts, &count,
		    folder, sizeof(folder)), FS_OK);
		ck_assert_str_eq(folder, dates[i].name);
	}
	ck_assert_uint_eq(count_entries(ch.ws_fd, "sessions/archive"),
	    5 + sizeof(dates) / sizeof(dates[0]));
	ck_assert_int_eq(fs_archive_sessions(&ch, &now, &count, folder,
	    FS_ARCHIVE_FOLDER_MAX - 1), FS_BUF_TOO_SMALL);
	ck_assert_uint_eq(count_entries(ch.ws_fd, "sessions/archive"),
	    5 + sizeof(dates) / sizeof(dates[0]));
	fs_channel_close(&ch);
}
END_TEST

START_TEST(archive_planted_dirs)
{
	struct fs_channel	 ch;
	struct timespec		 now = { NOW_SEC, NOW_NSEC };
	char			 folder[FS_ARCHIVE_FOLDER_MAX];
	unsigned		 count;

	alarm(5);
	open_channel(KEY, &ch);
	switch (_i) {
	case 0:
		/* Following this link would move the sentinel's file. */
		plant_link(ch.ws_fd, "sessions", "dir");
		break;
	case 1:
		ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions", 0700), 0);
		plant_link(ch.ws_fd, "sessions/archive", "dir");
		write_at(ch.ws_fd, "sessions/s.jsonl", S("s"));
		break;
	case 2:
		ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions", 0700), 0);
		write_at(ch.ws_fd, "sessions/archive", S("file"));
		write_at(ch.ws_fd, "sessions/s.jsonl", S("s"));
		break;
	case 3:
		ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions", 0700), 0);
		ck_assert_int_eq(mkfifoat(ch.ws_fd, "sessions/archive", 0600),
		    0);
		write_at(ch.ws_fd, "sessions/s.jsonl", S("s"));
		break;
	case 4:
		ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions", 0700), 0);
		ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions/archive", 0700),
		    0);
		plant_link(ch.ws_fd, "sessions/archive/" NOW_FOLDER, "dir");
		write_at(ch.ws_fd, "sessions/s.jsonl", S("s"));
		break;
	case 5:
		ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions", 0700), 0);
		ck_assert_int_eq(mkdirat(ch.ws_fd, "sessions/archive", 0700),
		    0);
		write_at(ch.ws_fd, "sessions/archive/" NOW_FOLDER, S("f"));
		write_at(ch.ws_fd, "sessions/s.jsonl", S("s"));
		break;
	}
	ck_assert_int_eq(fs_archive_sessions(&ch, &now, &count, folder,
	    sizeof(folder)), FS_OK);
	ck_assert_str_eq(folder, NOW_FOLDER);
	assert_own_dir(ch.ws_fd, "sessions");
	assert_own_dir(ch.ws_fd, "sessions/archive");
	assert_own_dir(ch.ws_fd, "sessions/archive/" NOW_FOLDER);
	if (_i == 0)
		ck_assert_uint_eq(count, 0);
	else {
		ck_assert_uint_eq(count, 1);
		assert_content(ch.ws_fd, "sessions/archive/" NOW_FOLDER
		    "/s.jsonl", S("s"));
	}
	fs_channel_close(&ch);
	alarm(0);
}
END_TEST

START_TEST(archive_many)
{
	struct fs_channel	 ch;
	struct timespec		 now = { NOW_SEC, 0 };
	char			 folder[FS_ARCHIVE_FOLDER_MAX], name[64];
	unsigned		 count, i;
	int			 sfd;

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_own_dir(ch.ws_fd, "sessions",
	    FS_DIR_READ, &sfd), FS_OK);
	for (i = 0; i < 500; i++) {
		pathf(name, sizeof(name), "s%u.jsonl", i);
		write_at(sfd, name, name, strlen(name));
		pathf(name, sizeof(name), "t%u.txt", i);
		write_at(sfd, name, S("t"));
	}
	ck_assert_int_eq(fs_archive_sessions(&ch, &now, &count, folder,
	    sizeof(folder)), FS_OK);
	ck_assert_uint_eq(count, 500);
	ck_assert_uint_eq(count_entries(sfd, "."), 501);
	pathf(name, sizeof(name), "archive/%s", folder);
	ck_assert_uint_eq(count_entries(sfd, name), 500);
	close(sfd);
	fs_channel_close(&ch);
}
END_TEST

/*
 * Attachments
 */

START_TEST(attach_write)
{
	static const char	 data[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
	struct fs_channel	 ch;
	struct stat		 st;

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_write_attachment(&ch, "photo.png", data,
	    sizeof(data) - 1), FS_OK);
	assert_own_dir(ch.ws_fd, "attachments");
	ck_assert_int_eq(fstatat(ch.ws_fd, "attachments/photo.png", &st,
	    AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	assert_content(ch.ws_fd, "attachments/photo.png", data,
	    sizeof(data) - 1);
	ck_assert_int_eq(fs_write_attachment(&ch, "empty", "", 0), FS_OK);
	assert_content(ch.ws_fd, "attachments/empty", "", 0);
	ck_assert_int_eq(fs_write_attachment(&ch, "r\xc3\xa9sum\xc3\xa9 1.pdf",
	    S("pdf")), FS_OK);
	fs_channel_close(&ch);
}
END_TEST

START_TEST(attach_large)
{
	struct fs_channel	 ch;
	size_t			 len = 2 * 1024 * 1024, i;
	char			*data;

	ck_assert_ptr_nonnull(data = malloc(len));
	for (i = 0; i < len; i++)
		data[i] = (char)(i * 7 + i / 251);
	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_write_attachment(&ch, "big.bin", data, len),
	    FS_OK);
	assert_content(ch.ws_fd, "attachments/big.bin", data, len);
	fs_channel_close(&ch);
	free(data);
}
END_TEST

START_TEST(attach_exists)
{
	struct fs_channel	 ch;

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_write_attachment(&ch, "a.txt", S("first")),
	    FS_OK);
	ck_assert_int_eq(fs_write_attachment(&ch, "a.txt", S("second")),
	    FS_EXISTS);
	assert_content(ch.ws_fd, "attachments/a.txt", S("first"));
	ck_assert_int_eq(mkdirat(ch.ws_fd, "attachments/d", 0700), 0);
	ck_assert_int_eq(fs_write_attachment(&ch, "d", S("x")), FS_EXISTS);
	ck_assert_int_eq(mkfifoat(ch.ws_fd, "attachments/p", 0600), 0);
	alarm(5);
	ck_assert_int_eq(fs_write_attachment(&ch, "p", S("x")), FS_EXISTS);
	alarm(0);
	fs_channel_close(&ch);
}
END_TEST

START_TEST(attach_symlink_name)
{
	struct fs_channel	 ch;

	open_channel(KEY, &ch);
	ck_assert_int_eq(mkdirat(ch.ws_fd, "attachments", 0700), 0);
	plant_link(ch.ws_fd, "attachments/evil", "file");
	plant_link(ch.ws_fd, "attachments/new", "created-by-follow");
	plant_link(ch.ws_fd, "attachments/todir", "dir");
	ck_assert_int_eq(fs_write_attachment(&ch, "evil", S("pwned")),
	    FS_EXISTS);
	ck_assert_int_eq(fs_write_attachment(&ch, "new", S("pwned")),
	    FS_EXISTS);
	ck_assert_int_eq(fs_write_attachment(&ch, "todir", S("pwned")),
	    FS_EXISTS);
	assert_type(ch.ws_fd, "attachments/evil", S_IFLNK);
	assert_type(ch.ws_fd, "attachments/new", S_IFLNK);
	fs_channel_close(&ch);
}
END_TEST

START_TEST(attach_bad_names)
{
	static const char *const bad[] = {
		"", ".", "..", "a/b", "/etc/passwd", "a\\b", "a\x01", "\x7f",
		"a\xc2\x85", "a\xff", "\xc0\xae", "../x", "tab\t"
	};
	struct fs_channel	 ch;
	char			 name[SAFE_NAME_MAX + 2], wide[401];
	size_t			 i;

	open_channel(KEY, &ch);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(fs_write_attachment(&ch, bad[i], S("x")) ==
		    FS_NAME_INVALID, "name %zu accepted", i);
	ck_assert_int_eq(fs_write_attachment(&ch, NULL, S("x")),
	    FS_NAME_INVALID);
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	ck_assert_int_eq(fs_write_attachment(&ch, name, S("x")),
	    FS_NAME_INVALID);
	name[SAFE_NAME_MAX] = '\0';
	ck_assert_int_eq(fs_write_attachment(&ch, name, S("x")), FS_OK);
	ck_assert_uint_eq(count_entries(ch.ws_fd, "attachments"), 1);
	/* A safe name of 200 chars but 400 bytes is more than the file
	 * system holds. */
	for (i = 0; i < 200; i++)
		memcpy(wide + 2 * i, "\xc3\xa9", 2);
	wide[400] = '\0';
	ck_assert_int_eq(fs_write_attachment(&ch, wide, S("x")), FS_IO);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	wide[2 * 127] = '\0';
	ck_assert_int_eq(fs_write_attachment(&ch, wide, S("x")), FS_OK);
	fs_channel_close(&ch);
}
END_TEST

START_TEST(attach_dir_planted)
{
	struct fs_channel	 ch;

	alarm(5);
	open_channel(KEY, &ch);
	switch (_i) {
	case 0:
		plant_link(ch.ws_fd, "attachments", "dir");
		break;
	case 1:
		plant_link(ch.ws_fd, "attachments", "missing");
		break;
	case 2:
		write_at(ch.ws_fd, "attachments", S("file"));
		break;
	case 3:
		ck_assert_int_eq(mkfifoat(ch.ws_fd, "attachments", 0600), 0);
		break;
	}
	ck_assert_int_eq(fs_write_attachment(&ch, "inner.jsonl", S("x")),
	    FS_OK);
	assert_own_dir(ch.ws_fd, "attachments");
	assert_content(ch.ws_fd, "attachments/inner.jsonl", S("x"));
	fs_channel_close(&ch);
	alarm(0);
}
END_TEST

START_TEST(attach_write_fails)
{
	struct fs_channel	 ch;
	struct rlimit		 rl, small;
	static char		 data[8192];

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_own_workspace(&ch), FS_OK);
	ck_assert(signal(SIGXFSZ, SIG_IGN) != SIG_ERR);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
	small = rl;
	small.rlim_cur = 4096;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &small), 0);
	ck_assert_int_eq(fs_write_attachment(&ch, "big", data, sizeof(data)),
	    FS_IO);
	ck_assert_int_eq(errno, EFBIG);
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	assert_type(ch.ws_fd, "attachments/big", 0);
	fs_channel_close(&ch);
}
END_TEST

/*
 * Host paths and reasons
 */

START_TEST(paths)
{
	struct fs_channel	 ch;
	char			 s[PATH_MAX], a[PATH_MAX], want[PATH_MAX];
	size_t			 n;

	open_channel(KEY, &ch);
	ck_assert_int_eq(fs_channel_paths(state, &ch, s, sizeof(s), a,
	    sizeof(a)), FS_OK);
	pathf(want, sizeof(want), "%s/%s/workspace/sessions", state, KEY_SEG);
	ck_assert_str_eq(s, want);
	n = strlen(want);
	pathf(want, sizeof(want), "%s/%s/workspace/attachments", state,
	    KEY_SEG);
	ck_assert_str_eq(a, want);
	ck_assert_int_eq(fs_channel_paths(state, &ch, s, n + 1, a,
	    sizeof(a)), FS_OK);
	ck_assert_int_eq(fs_channel_paths(state, &ch, s, n, a, sizeof(a)),
	    FS_BUF_TOO_SMALL);
	ck_assert_int_eq(fs_channel_paths(state, &ch, s, sizeof(s), a,
	    strlen(want)), FS_BUF_TOO_SMALL);
	ck_assert_int_eq(fs_channel_paths("rel", &ch, s, sizeof(s), a,
	    sizeof(a)), FS_STATE_NOT_ABSOLUTE);
	ck_assert_int_eq(fs_channel_paths("/", &ch, s, sizeof(s), a,
	    sizeof(a)), FS_STATE_IS_ROOT);
	pathf(ch.segment, sizeof(ch.segment), "a/../b");
	ck_assert_int_eq(fs_channel_paths(state, &ch, s, sizeof(s), a,
	    sizeof(a)), FS_SEGMENT_INVALID);
	fs_channel_close(&ch);
}
END_TEST

START_TEST(err_strings)
{
	const char	*s[FS_IO + 1];
	int		 i, j;

	for (i = FS_OK; i <= FS_IO; i++) {
		s[i] = fs_err_to_string((enum fs_err)i);
		ck_assert_ptr_nonnull(s[i]);
		ck_assert_uint_gt(strlen(s[i]), 0);
		ck_assert_msg(strncmp(s[i], "unknown", 7) != 0,
		    "no reason for %d", i);
		for (j = 0; j < i; j++)
			ck_assert_str_ne(s[i], s[j]);
	}
	ck_assert_str_eq(fs_err_to_string((enum fs_err)(FS_IO + 1)),
	    "unknown file guard error");
	ck_assert_str_eq(fs_err_to_string(FS_SEGMENT_SYMLINK),
	    "channel directory is a symbolic link");
}
END_TEST

static Suite *
fsops_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("fsops");

	tc = tcase_create("state");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, state_ok);
	tcase_add_test(tc, state_relative);
	tcase_add_test(tc, state_root);
	tcase_add_test(tc, state_not_canonical);
	tcase_add_test(tc, state_symlink);
	tcase_add_test(tc, state_mode);
	tcase_add_test(tc, state_owner);
	tcase_add_test(tc, state_not_dir);
	tcase_add_test(tc, state_too_long);
	suite_add_tcase(s, tc);

	tc = tcase_create("channel");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, channel_layout);
	tcase_add_test(tc, channel_alias);
	tcase_add_test(tc, channel_alias_no_subdirs);
	tcase_add_test(tc, channel_key_content);
	tcase_add_test(tc, channel_key_limits);
	tcase_add_test(tc, channel_key_non_bmp);
	tcase_add_test(tc, key_file_symlink);
	tcase_add_test(tc, key_file_fifo);
	tcase_add_test(tc, key_file_other_types);
	tcase_add_test(tc, channel_dirs_symlink);
	tcase_add_test(tc, channel_segment_symlink);
	tcase_add_test(tc, channel_modes_repaired);
	tcase_add_test(tc, channel_check_run);
	tcase_add_test(tc, channel_bad_statefd);
	suite_add_tcase(s, tc);

	tc = tcase_create("own");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, own_fresh);
	tcase_add_loop_test(tc, own_replaces, 0, 7);
	tcase_add_test(tc, own_keeps_filled_dir);
	tcase_add_test(tc, own_mode_zero_dir);
	tcase_add_test(tc, own_dir_names);
	tcase_add_test(tc, own_dir_other_owner);
	suite_add_tcase(s, tc);

	tc = tcase_create("socket");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, sock_bound);
	tcase_add_loop_test(tc, sock_stale, 0, 7);
	tcase_add_test(tc, sock_path_limit);
	tcase_add_test(tc, sock_refusals);
	tcase_add_test(tc, sock_landlock);
	tcase_add_test(tc, precheck_made_and_cleaned);
	tcase_add_loop_test(tc, precheck_planted, 0, 4);
	tcase_add_test(tc, precheck_path_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("archive");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, archive_moves);
	tcase_add_test(tc, archive_folder_names);
	tcase_add_loop_test(tc, archive_planted_dirs, 0, 6);
	tcase_add_test(tc, archive_many);
	suite_add_tcase(s, tc);

	tc = tcase_create("attachments");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, attach_write);
	tcase_add_test(tc, attach_large);
	tcase_add_test(tc, attach_exists);
	tcase_add_test(tc, attach_symlink_name);
	tcase_add_test(tc, attach_bad_names);
	tcase_add_loop_test(tc, attach_dir_planted, 0, 4);
	tcase_add_test(tc, attach_write_fails);
	suite_add_tcase(s, tc);

	tc = tcase_create("group");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, group_state_dir);
	tcase_add_test(tc, group_channel_dirs);
	tcase_add_test(tc, group_guest_changes);
	tcase_add_test(tc, group_archive_and_attachments);
	suite_add_tcase(s, tc);

	tc = tcase_create("paths");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, paths);
	tcase_add_test(tc, err_strings);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(fsops_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
