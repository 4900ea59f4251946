/*
 * Readiness for a service manager: the sd_notify(3) protocol, one datagram
 * of "KEY=value" lines to the socket named by NOTIFY_SOCKET.  The socket is
 * made and connected before the supervisor confines itself, since its
 * filter then makes no socket and connects nowhere; later messages are a
 * send(2) on it.  (libsystemd's sd_notify() makes a socket at each call,
 * which that filter forbids.)
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"

static int	 notify_fd = -1;

int
notify_open(void)
{
	struct sockaddr_un	 sun;
	const char		*path = getenv("NOTIFY_SOCKET");
	socklen_t		 len;
	size_t			 n;

	if (path == NULL || path[0] == '\0')
		return 0;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sun.sun_path)) {
		log_warnx("NOTIFY_SOCKET %s: not a socket path", path);
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, path, n);
	/* "@name" is the abstract name "\0name", not NUL-terminated */
	if (path[0] == '@')
		sun.sun_path[0] = '\0';
	len = offsetof(struct sockaddr_un, sun_path) + n +
	    (path[0] == '@' ? 0 : 1);
	if ((notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) ==
	    -1) {
		log_warn("notify socket");
		return -1;
	}
	if (connect(notify_fd, (struct sockaddr *)&sun, len) == -1) {
		log_warn("connect to NOTIFY_SOCKET %s", path);
		close(notify_fd);
		notify_fd = -1;
		return -1;
	}
	/* not for the children, which never see the environment anyway */
	unsetenv("NOTIFY_SOCKET");
	return 1;
}

int
notify_active(void)
{
	return notify_fd != -1;
}

void
notify_send(const char *msg)
{
	if (notify_fd == -1)
		return;
	if (send(notify_fd, msg, strlen(msg), MSG_NOSIGNAL) == -1)
		log_warn("notify %s", msg);
}
