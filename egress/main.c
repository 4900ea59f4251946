#include "egress.h"

int
main(int argc, char *argv[])
{
	egress_main(argc, argv);
}
