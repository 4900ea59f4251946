/*
 * Two cJSON trees alike node for node, links included: what a parser that
 * builds cJSON's trees is held to (tests/unit/test_jtree.c,
 * tests/fuzz/fuzz_jtree.c).
 */
#ifndef RTSANDBOX_TESTS_CJSON_SAME_H
#define RTSANDBOX_TESTS_CJSON_SAME_H

#include <string.h>

#include <cjson/cJSON.h>

static int
same_text(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Types, values, keys and children; each child's prev the one before it,
 * the first child's the last. */
static int
same_tree(const cJSON *a, const cJSON *b)
{
	const cJSON	*x, *y, *lx = NULL, *ly = NULL;

	if (a->type != b->type || a->valueint != b->valueint ||
	    memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0 ||
	    !same_text(a->valuestring, b->valuestring) ||
	    !same_text(a->string, b->string))
		return 0;
	for (x = a->child, y = b->child; x != NULL && y != NULL;
	    x = x->next, y = y->next) {
		if (!same_tree(x, y))
			return 0;
		if (x != a->child && (x->prev != lx || y->prev != ly))
			return 0;
		lx = x;
		ly = y;
	}
	if (x != NULL || y != NULL)
		return 0;
	return a->child == NULL || (a->child->prev == lx &&
	    b->child->prev == ly);
}

#endif
