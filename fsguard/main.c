#include "fsguard.h"

int
main(int argc, char *argv[])
{
	fsguard_main(argc, argv);
}
