#ifndef RTSANDBOX_BROKER_H
#define RTSANDBOX_BROKER_H

void	broker_main(int, char *[]) __attribute__((noreturn));

#endif
