/*
 * The reader of egress's policy (jwalk.c): strict JSON, UTF-8 checked,
 * walked without building a tree.  A walker counts the values and keys it
 * reads against POLICY_NODES_MAX and nests at most POLICY_DEPTH_MAX deep;
 * each function returns 0, or -1 with the reason in w->err (left NULL when
 * a callback stopped the walk).
 */
#ifndef RTSANDBOX_JWALK_H
#define RTSANDBOX_JWALK_H

#include <stddef.h>
#include <stdint.h>

#include "limits.h"

/* Values and keys in one body: the broker lets in no more than
 * MODEL_NODES_MAX and its rebuild adds a handful, so twice that is never
 * reached by a legitimate call; a bound on the time a hostile one costs
 * (the reader holds no memory for them). */
#define POLICY_NODES_MAX	(2u * MODEL_NODES_MAX)

struct jw {
	const uint8_t	*s;
	size_t		 len;
	size_t		 i;
	size_t		 nodes;
	int		 uncounted;	/* a check reading again */
	const char	*err;
};

/*
 * An object at w->i.  For each member, fn gets the key (decoded, or NULL
 * when longer than any key the policy knows) with w->i at its value, and
 * must consume the value; NULL fn just checks them.
 */
typedef int	(*jw_member_fn)(struct jw *, const char *key, void *arg,
		    int depth);

#define JW_KEY_MAX	32

/* An array at w->i; fn (or jw_value) consumes each element. */
typedef int	(*jw_elem_fn)(struct jw *, void *arg, int depth);

/* Which of names an object holds, each found at most once with its
 * value's offset noted, and the first key it holds twice or not in names. */
struct fields {
	const char *const	*f_names;
	size_t			 f_n;
	size_t			 f_off[16];
	uint32_t		 f_seen;
	int			 f_unknown;	/* a field not in names */
	int			 f_dup;
	char			 f_dup_name[JW_KEY_MAX + 1];
	char			 f_unknown_name[JW_KEY_MAX + 1];
};

/* Skip white space. */
void	jw_ws(struct jw *);
/* Count one value or key against the cap. */
int	jw_node(struct jw *);
/* Any value at w->i, checked and skipped. */
int	jw_value(struct jw *, int depth);
int	jw_object(struct jw *, int depth, jw_member_fn, void *);
int	jw_array(struct jw *, int depth, jw_elem_fn, void *);
/* The byte at w->i, or NUL at the end. */
char	jw_peek(const struct jw *);
/* A string value that must fit out (NUL-terminated): 0; 1 when it is a
 * string that does not fit or holds a NUL; -2 when it is no string; -1
 * on bad JSON. */
int	jw_get_str(struct jw *, char *out, size_t outsz);
/* A plain non-negative integer (digits only, as the rebuild writes it):
 * 0; 1 for another number or a value that does not fit; -1 on bad JSON. */
int	jw_get_uint(struct jw *, uint64_t *);
/* A walker at offset off of a body already read, counting nothing. */
void	jw_at(struct jw *, const char *body, size_t len, size_t off);
/* jw_member_fn noting each of f_names once, in a struct fields. */
int	fields_member(struct jw *, const char *key, void *arg, int depth);
/* A name the peer chose, its control characters made '?'. */
void	tame(char *);

#endif
