#include <stdio.h>
#include <string.h>

#include "limits.h"
#include "log.h"
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

int
refusal_count(struct refusals *rf, uint64_t now_ms, uint64_t *log_n)
{
	rf->rf_total++;
	rf->rf_unlogged++;
	*log_n = 0;
	if (rf->rf_total == 1 ||
	    now_ms - rf->rf_logged_at >= PEER_REFUSAL_LOG_MS) {
		*log_n = rf->rf_unlogged;
		rf->rf_unlogged = 0;
		rf->rf_logged_at = now_ms;
	}
	if (rf->rf_in_window == 0 ||
	    now_ms - rf->rf_window_at >= PEER_REFUSAL_WINDOW_MS) {
		rf->rf_window_at = now_ms;
		rf->rf_in_window = 0;
	}
	return ++rf->rf_in_window > PEER_REFUSALS_MAX;
}

int
refusal_note(struct refusals *rf, uint64_t now_ms, const char *who,
    const char *what, char *why, size_t whylen)
{
	uint64_t	 logn;

	if (refusal_count(rf, now_ms, &logn) == 1) {
		snprintf(why, whylen, "more than %u refused frames within "
		    "%d ms, the last %s", PEER_REFUSALS_MAX,
		    PEER_REFUSAL_WINDOW_MS, what);
		return 1;
	}
	if (logn > 0)
		log_info("%s: %s refused (%llu refusals since the last "
		    "report)", who, what, (unsigned long long)logn);
	return 0;
}
