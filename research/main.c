#include "research.h"

int
main(int argc, char *argv[])
{
	research_main(argc, argv);
}
