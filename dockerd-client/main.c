#include "docker.h"

int
main(int argc, char *argv[])
{
	docker_main(argc, argv);
}
