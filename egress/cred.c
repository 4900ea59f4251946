/*
 * Credential files (cred.h).  Nothing here logs: the caller reports the
 * reason, and no path through this file ever formats the content.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cred.h"

const char *
cred_err_to_string(enum cred_err e)
{
	switch (e) {
	case CRED_OK:
		return "ok";
	case CRED_MISSING:
		return "missing";
	case CRED_SYMLINK:
		return "a symbolic link";
	case CRED_OPEN:
		return "cannot be opened";
	case CRED_NOT_REGULAR:
		return "not a regular file";
	case CRED_OWNER:
		return "wrong owner";
	case CRED_MODE:
		return "group or other permission bits";
	case CRED_TOO_LARGE:
		return "too large";
	case CRED_READ:
		return "cannot be read";
	case CRED_EMPTY:
		return "empty";
	case CRED_INVALID:
		return "not a valid token";
	}
	return "unknown error";
}

static enum cred_err
cred_fail(enum cred_err e, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum cred_err
cred_fail(enum cred_err e, char *err, size_t errlen, const char *fmt, ...)
{
	va_list	 ap;

	if (errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return e;
}

static const char *
cred_type(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	return "not a regular file";
}

int
cred_token_valid(const char *s, size_t len)
{
	size_t	 i;

	if (s == NULL || len == 0)
		return 0;
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return 0;
	return 1;
}

/* Read at most max bytes; *over is set when the file has more. */
static int
cred_read_fd(int fd, char *buf, size_t max, size_t *lenp, int *over)
{
	size_t	 len = 0;
	ssize_t	 n;
	char	 c;

	*over = 0;
	for (;;) {
		if (len == max)
			n = read(fd, &c, 1);
		else
			n = read(fd, buf + len, max - len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			*lenp = len;
			return -1;
		}
		if (n == 0)
			break;
		if (len == max) {
			*over = 1;
			break;
		}
		len += n;
	}
	*lenp = len;
	return 0;
}

/* Read-only: a failing close(2) loses nothing; errno is kept. */
static void
cred_close(int fd)
{
	int	 saved = errno;

	(void)close(fd);
	errno = saved;
}

/* cred_read(), and what the file was when it was read, in *stp. */
static enum cred_err
cred_read_st(int dirfd, const char *path, uid_t owner, char *buf,
    size_t bufsz, size_t *lenp, char *err, size_t errlen, struct stat *stp)
{
	struct stat	 st;
	enum cred_err	 e = CRED_OK;
	size_t		 got = 0, len, max;
	int		 fd, over;

	memset(&st, 0, sizeof(st));
	*lenp = 0;
	if (errlen > 0)
		err[0] = '\0';
	if (bufsz == 0)
		return cred_fail(CRED_TOO_LARGE, err, errlen, "no buffer");
	buf[0] = '\0';

	fd = openat(dirfd, path,
	    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ENOENT)
			return cred_fail(CRED_MISSING, err, errlen, "missing");
		if (errno == ELOOP)
			return cred_fail(CRED_SYMLINK, err, errlen,
			    "a symbolic link");
		return cred_fail(CRED_OPEN, err, errlen, "open: %s",
		    strerror(errno));
	}
	/* Checked on the descriptor: what is read is what was checked. */
	if (fstat(fd, &st) == -1)
		e = cred_fail(CRED_READ, err, errlen, "fstat: %s",
		    strerror(errno));
	else if (!S_ISREG(st.st_mode))
		e = cred_fail(CRED_NOT_REGULAR, err, errlen, "%s",
		    cred_type(st.st_mode));
	else if (st.st_uid != owner)
		e = cred_fail(CRED_OWNER, err, errlen,
		    "owned by uid %lu, not %lu", (unsigned long)st.st_uid,
		    (unsigned long)owner);
	else if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
		e = cred_fail(CRED_MODE, err, errlen,
		    "mode %04o gives group or other access",
		    (unsigned int)(st.st_mode & 07777));
	else if (st.st_size > (off_t)CRED_FILE_MAX)
		e = cred_fail(CRED_TOO_LARGE, err, errlen,
		    "over %u bytes", CRED_FILE_MAX);
	if (e != CRED_OK) {
		cred_close(fd);
		return e;
	}

	/* It may grow after fstat: the bound holds on what is read. */
	max = bufsz - 1 < CRED_FILE_MAX ? bufsz - 1 : CRED_FILE_MAX;
	if (cred_read_fd(fd, buf, max, &got, &over) == -1)
		e = cred_fail(CRED_READ, err, errlen, "read: %s",
		    strerror(errno));
	else if (over)
		e = cred_fail(CRED_TOO_LARGE, err, errlen, "over %zu bytes",
		    max);
	cred_close(fd);

	len = got;
	if (e == CRED_OK) {
		if (len > 0 && buf[len - 1] == '\n') {
			len--;
			if (len > 0 && buf[len - 1] == '\r')
				len--;
		}
		if (len == 0)
			e = cred_fail(CRED_EMPTY, err, errlen, "empty");
		else if (!cred_token_valid(buf, len))
			e = cred_fail(CRED_INVALID, err, errlen, "not one run "
			    "of visible ASCII characters");
	}
	if (e != CRED_OK)
		len = 0;
	/* Nothing of a refused file, nor the newline, is left behind. */
	explicit_bzero(buf + len, got - len);
	buf[len] = '\0';
	*lenp = len;
	if (stp != NULL)
		*stp = st;
	return e;
}

enum cred_err
cred_read(int dirfd, const char *path, uid_t owner, char *buf, size_t bufsz,
    size_t *lenp, char *err, size_t errlen)
{
	return cred_read_st(dirfd, path, owner, buf, bufsz, lenp, err, errlen,
	    NULL);
}

void
cred_cache_clear(struct cred_cache *cc)
{
	if (cc->cc_token != NULL) {
		explicit_bzero(cc->cc_token, cc->cc_len + 1);
		free(cc->cc_token);
		cc->cc_token = NULL;
	}
	cc->cc_len = 0;
	cc->cc_trusted = 0;
}

static int
ts_eq(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Whether st is still the file the kept token came from (cred.h). */
static int
cred_same(const struct cred_cache *cc, const struct stat *st, uid_t owner)
{
	return cc->cc_trusted && S_ISREG(st->st_mode) &&
	    st->st_uid == owner && (st->st_mode & (S_IRWXG | S_IRWXO)) == 0 &&
	    st->st_dev == cc->cc_dev && st->st_ino == cc->cc_ino &&
	    st->st_size == cc->cc_size && ts_eq(&st->st_mtim, &cc->cc_mtim) &&
	    ts_eq(&st->st_ctim, &cc->cc_ctim);
}

enum cred_err
cred_get(struct cred_cache *cc, int dirfd, const char *path, uid_t owner,
    char *buf, size_t bufsz, size_t *lenp, char *err, size_t errlen)
{
	struct stat	 st;
	struct timespec	 before;
	enum cred_err	 e;
	long long	 changed, began;

	/* One system call when nothing changed; a failure is told by the
	 * read that follows. */
	if (cc->cc_trusted && cc->cc_token != NULL && bufsz > cc->cc_len &&
	    fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    cred_same(cc, &st, owner)) {
		memcpy(buf, cc->cc_token, cc->cc_len);
		buf[cc->cc_len] = '\0';
		*lenp = cc->cc_len;
		if (errlen > 0)
			err[0] = '\0';
		return CRED_OK;
	}
	if (clock_gettime(CLOCK_REALTIME, &before) == -1) {
		before.tv_sec = 0;
		before.tv_nsec = 0;
	}
	e = cred_read_st(dirfd, path, owner, buf, bufsz, lenp, err, errlen,
	    &st);
	cc->cc_reads++;
	cred_cache_clear(cc);
	/* Without memory for it, the token is not kept: the next call
	 * reads the file again. */
	if (e != CRED_OK || (cc->cc_token = malloc(*lenp + 1)) == NULL)
		return e;
	memcpy(cc->cc_token, buf, *lenp);
	cc->cc_token[*lenp] = '\0';
	cc->cc_len = *lenp;
	cc->cc_dev = st.st_dev;
	cc->cc_ino = st.st_ino;
	cc->cc_size = st.st_size;
	cc->cc_mtim = st.st_mtim;
	cc->cc_ctim = st.st_ctim;
	/* A change in the same clock tick as the read would not show. */
	changed = (long long)st.st_ctim.tv_sec * 1000000000LL +
	    st.st_ctim.tv_nsec;
	began = (long long)before.tv_sec * 1000000000LL + before.tv_nsec;
	cc->cc_trusted = changed + CRED_SETTLE_NS <= began;
	return CRED_OK;
}
