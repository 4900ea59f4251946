#ifndef RTSANDBOX_NOTIFY_H
#define RTSANDBOX_NOTIFY_H

/*
 * Before the sandbox: when NOTIFY_SOCKET names a service manager's socket,
 * connect to it (1), or not (0 when unset, -1 when it cannot).
 */
int	notify_open(void);
/* Whether a service manager listens (rtsandboxd then stays in front). */
int	notify_active(void);
/* One message, e.g. "READY=1"; nothing when no manager listens. */
void	notify_send(const char *);

#endif
