/*
 * The supervisor's state, one per process: main.c fills it in, every part
 * of the supervisor reads it.
 */
#include "supervisor.h"

struct supervisor	*sv;
