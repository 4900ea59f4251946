/*
 * Credential files (DESIGN.md 7, PROTOCOL.md 3.2): current at every call, so
 * a refresher can replace them (rename, or write in place) at any time,
 * without being read again while they have not changed; a regular file
 * owned by the service user with no group or other bits, never followed
 * through a symbolic link, never logged.
 */
#ifndef RTSANDBOX_CRED_H
#define RTSANDBOX_CRED_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * The largest credential file, trailing newline included.  XXX not in
 * PROTOCOL.md; belongs in common/limits.h.
 */
#define CRED_FILE_MAX	16384u

enum cred_err {
	CRED_OK = 0,
	CRED_MISSING,		/* no such file */
	CRED_SYMLINK,		/* the last component is a symbolic link */
	CRED_OPEN,		/* any other open(2) failure */
	CRED_NOT_REGULAR,	/* FIFO, directory, device, socket */
	CRED_OWNER,		/* not owned by the given user */
	CRED_MODE,		/* group or other permission bits */
	CRED_TOO_LARGE,		/* over CRED_FILE_MAX, or over the buffer */
	CRED_READ,		/* fstat(2) or read(2) failed */
	CRED_EMPTY,		/* nothing left once the newline is gone */
	CRED_INVALID		/* not a valid token */
};

const char	*cred_err_to_string(enum cred_err);

/*
 * Read the token in path (relative to dirfd, or AT_FDCWD) into buf, NUL
 * terminated, its length in *len.  The file is opened O_NOFOLLOW and
 * O_NONBLOCK (a FIFO never blocks) and checked on the open descriptor: a
 * regular file owned by owner, mode without group or other bits, at most
 * CRED_FILE_MAX bytes.  One trailing "\n" or "\r\n" is removed; what is left
 * must pass cred_token_valid().  On failure err (errlen bytes, may be 0)
 * says why, never with the content, and buf holds nothing of it.
 */
enum cred_err	 cred_read(int dirfd, const char *path, uid_t owner,
		    char *buf, size_t bufsz, size_t *len, char *err,
		    size_t errlen);

/*
 * A token goes into "authorization: Bearer <token>": 1 when s is one or more
 * visible ASCII characters (0x21-0x7e: no space, control, CR, LF or NUL).
 */
int		 cred_token_valid(const char *s, size_t len);

/*
 * The last token read from one credential file, and what the file was
 * then.  Every call looks at the path (one fstatat(2), not following a
 * link) and uses the token kept when the file is the same inode, regular,
 * owned by the owner, without group or other bits, of the same size, mtime
 * and ctime (nanoseconds) as when it was read; else it reads the file
 * again, with every check of cred_read().  Replacing the file (rename) makes
 * a new inode; writing it in place moves its mtime and ctime.  Timestamps
 * come from a clock that may tick only every few milliseconds (or seconds,
 * on some file systems), so a write in the same tick as the read would
 * leave them as they were: a read is trusted only when the file's ctime
 * was CRED_SETTLE_NS older than the moment the read began, and until then
 * every call reads the file again (the rule git uses for "racily clean"
 * index entries).
 */
#define CRED_SETTLE_NS	1000000000LL

struct cred_cache {
	char		*cc_token;	/* cc_len bytes and a NUL, or NULL */
	size_t		 cc_len;
	int		 cc_trusted;	/* the fields below may stand for it */
	dev_t		 cc_dev;
	ino_t		 cc_ino;
	off_t		 cc_size;
	struct timespec	 cc_mtim;
	struct timespec	 cc_ctim;
	uint64_t	 cc_reads;	/* times the file was read */
};

/*
 * As cred_read(), through the cache: the file is read only when it
 * changed, or when it is too new to tell.  The cache is wiped when a read
 * fails.  A cache holds the token it kept and no more, so that one per
 * file of many (upstream.credentials) costs little; cred_cache_clear()
 * wipes and frees it.
 */
enum cred_err	 cred_get(struct cred_cache *, int dirfd, const char *path,
		    uid_t owner, char *buf, size_t bufsz, size_t *len,
		    char *err, size_t errlen);
void		 cred_cache_clear(struct cred_cache *);

#endif
