#include <string.h>

#include "violation.h"

static const char *const violation_names[VIOLATION__COUNT] = {
	[VIOLATION_NONE] = "none",
#define VIOLATION_NAME(e, n)	[VIOLATION_##e] = n,
	VIOLATION_TABLE(VIOLATION_NAME)
#undef VIOLATION_NAME
};

const char *
violation_name(enum violation v)
{
	if ((unsigned)v >= VIOLATION__COUNT)
		return violation_names[VIOLATION_NONE];
	return violation_names[v];
}

enum violation
violation_from_name(const char *name)
{
	unsigned	 i;

	for (i = 1; i < VIOLATION__COUNT; i++)
		if (strcmp(violation_names[i], name) == 0)
			return i;
	return VIOLATION_NONE;
}
