/*
 * jtree_parse() against cJSON's own parser: on every text its callers let
 * through (valid UTF-8, no NUL byte, no byte-order mark, and
 * body_json_scan() passed), the same answer, the same end and the same
 * tree, node for node, links included; on any other text, no fault, no
 * leak and no read past the input.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bodies.h"
#include "jtree.h"
#include "validate.h"

#include "../cjson_same.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(e)	do { if (!(e)) abort(); } while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*s = (const char *)data, *e1 = NULL, *e2 = NULL;
	size_t		 units, at, nodes = 0;
	cJSON		*a, *b;
	int		 nomem = 0;

	/* An exact copy, so that a read past the input is seen. */
	char		*copy = malloc(size ? size : 1);

	if (copy == NULL)
		return 0;
	memcpy(copy, data, size);
	a = jtree_parse(copy, size, &e1, &nomem);
	CHECK(!nomem);
	CHECK(a == NULL || (e1 >= copy && e1 <= copy + size));
	if (size == 0 || memchr(data, '\0', size) != NULL ||
	    utf8_utf16_len(s, size, &units) == -1 ||
	    (size >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0) ||
	    body_json_scan(s, size, &at, &nodes) != NULL) {
		cJSON_Delete(a);
		free(copy);
		return 0;
	}
	b = cJSON_ParseWithLengthOpts(copy, size, &e2, 0);
	CHECK((a == NULL) == (b == NULL));
	if (a != NULL) {
		CHECK(e1 == e2);
		CHECK(same_tree(a, b));
	}
	cJSON_Delete(a);
	cJSON_Delete(b);
	free(copy);
	return 0;
}
