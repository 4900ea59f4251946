/*
 * Credential files (DESIGN.md 7, PROTOCOL.md 3.2): read at every call, so a
 * refresher can replace them atomically (rename) at any time; a regular file
 * owned by the service user with no group or other bits, never followed
 * through a symbolic link, never logged.
 */
#ifndef RTSANDBOX_CRED_H
#define RTSANDBOX_CRED_H

#include <sys/types.h>

#include <stddef.h>

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

#endif
