#include "broker.h"

int
main(int argc, char *argv[])
{
	broker_main(argc, argv);
}
