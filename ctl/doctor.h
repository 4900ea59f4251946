/* rtsandboxctl doctor: the host checked against one configuration. */
#ifndef RTSANDBOX_CTL_DOCTOR_H
#define RTSANDBOX_CTL_DOCTOR_H

/* Prints one line per check; 0 when none failed, 1 otherwise. */
int	doctor_run(const char *config_path);

#endif
