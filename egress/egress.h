#ifndef RTSANDBOX_EGRESS_H
#define RTSANDBOX_EGRESS_H

void	egress_main(int, char *[]) __attribute__((noreturn));

#endif
