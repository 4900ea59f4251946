#ifndef RTSANDBOX_FSGUARD_H
#define RTSANDBOX_FSGUARD_H

void	fsguard_main(int, char *[]) __attribute__((noreturn));

#endif
