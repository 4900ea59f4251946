/*
 * cJSON trees read from JSON text (jtree.c): the tree cJSON's parser
 * builds, node for node, in one pass that copies a string's plain bytes a
 * run at a time where cJSON copies them one by one.
 */
#ifndef RTSANDBOX_JTREE_H
#define RTSANDBOX_JTREE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* cJSON's nesting limit: arrays and objects at most this deep. */
#define JTREE_DEPTH_MAX		1000

/*
 * The JSON value at the start of text (after white space), as
 * cJSON_ParseWithLengthOpts(text, len, end, 0) of the cJSON that rtsandbox
 * links (Debian's 1.7.15, third_party/cjson) returns it for a text that
 * is valid UTF-8 without a NUL byte or a byte-order mark and that
 * body_json_scan() passed: the same nodes, types, strings, numbers and
 * links.  *end is where the value ends; what follows is the caller's.
 * NULL when the text breaks the grammar, nests deeper than
 * JTREE_DEPTH_MAX, or holds a \u escape of a lone surrogate or of U+0000
 * or a raw control character in a string; and when out of memory, with
 * *nomem set.  Any other text is read safely, within len, and refused or
 * read as cJSON would.
 */
cJSON	*jtree_parse(const char *text, size_t len, const char **end,
	    int *nomem);

#endif
