#ifndef RTSANDBOX_DOCKER_H
#define RTSANDBOX_DOCKER_H

void	docker_main(int, char *[]) __attribute__((noreturn));

#endif
