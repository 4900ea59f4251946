/*
 * wjson: the worker's own JSON, because the worker is a static binary that
 * links nothing but libc.  The parser takes RFC 8259 and nothing more (no
 * comments, no trailing commas, no NaN, UTF-8 only, no lone surrogates, no
 * repeated member names) within caller-given bounds; the emitter writes
 * compact JSON that the parser reads back to an equal tree.
 */
#ifndef WJSON_H
#define WJSON_H

#include <stdarg.h>
#include <stddef.h>

/* A growable byte buffer that always keeps a NUL after its bytes. */
struct wbuf {
	char		*b_data;
	size_t		 b_len;
	size_t		 b_cap;
	size_t		 b_max;		/* 0: no bound */
	int		 b_err;		/* sticky: ENOMEM or EFBIG */
};

void		 wbuf_init(struct wbuf *, size_t);
int		 wbuf_add(struct wbuf *, const void *, size_t);
int		 wbuf_addstr(struct wbuf *, const char *);
int		 wbuf_addc(struct wbuf *, char);
int		 wbuf_addf(struct wbuf *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
void		 wbuf_reset(struct wbuf *);
void		 wbuf_free(struct wbuf *);
char		*wbuf_steal(struct wbuf *, size_t *);

enum wjson_type {
	WJSON_NULL,
	WJSON_BOOL,
	WJSON_NUMBER,
	WJSON_STRING,
	WJSON_ARRAY,
	WJSON_OBJECT
};

struct wjson {
	enum wjson_type	 j_type;
	int		 j_bool;
	int		 j_bad;		/* a member could not be added */
	char		*j_str;		/* a string, or a number's text */
	size_t		 j_len;
	char		*j_key;		/* the member's name */
	size_t		 j_keylen;
	struct wjson	*j_head;	/* first element or member */
	struct wjson	*j_tail;
	struct wjson	*j_next;
	size_t		 j_count;
};

/* A zero field takes the default below. */
struct wjson_limits {
	size_t		 wl_input_max;	/* bytes of text */
	unsigned int	 wl_depth_max;	/* containers nested */
	size_t		 wl_string_max;	/* bytes, decoded */
	size_t		 wl_nodes_max;	/* values in all */
};

#define WJSON_INPUT_DEFAULT	(16u * 1048576u)
#define WJSON_DEPTH_DEFAULT	64u
/* The parser recurses once per level: a bound for the stack's sake. */
#define WJSON_DEPTH_HARD	1000u
#define WJSON_STRING_DEFAULT	(16u * 1048576u)
#define WJSON_NODES_DEFAULT	1000000u

enum wjson_err {
	WJSON_OK = 0,
	WJSON_ERR_NOMEM,
	WJSON_ERR_TOO_BIG,
	WJSON_ERR_DEPTH,
	WJSON_ERR_NODES,
	WJSON_ERR_STRING_LONG,
	WJSON_ERR_EMPTY,
	WJSON_ERR_SYNTAX,
	WJSON_ERR_TRAILING,
	WJSON_ERR_NUMBER,
	WJSON_ERR_CONTROL,
	WJSON_ERR_ESCAPE,
	WJSON_ERR_SURROGATE,
	WJSON_ERR_UTF8,
	WJSON_ERR_DUPLICATE
};

struct wjson_error {
	enum wjson_err	 we_err;
	size_t		 we_offset;	/* byte where it was found */
};

const char	*wjson_err_to_string(enum wjson_err);

struct wjson	*wjson_parse(const char *, size_t,
		    const struct wjson_limits *, struct wjson_error *);
void		 wjson_free(struct wjson *);

/* Emitting refuses a tree with a bad node and stops at the buffer's bound. */
int		 wjson_emit(const struct wjson *, struct wbuf *);
char		*wjson_emit_str(const struct wjson *, size_t, size_t *);
int		 wjson_equal(const struct wjson *, const struct wjson *);
struct wjson	*wjson_copy(const struct wjson *);

/*
 * Constructors return NULL when out of memory or, for strings, when the
 * bytes are not UTF-8; wjson_string_take frees its argument on failure.
 */
struct wjson	*wjson_null(void);
struct wjson	*wjson_bool(int);
struct wjson	*wjson_int(long long);
struct wjson	*wjson_string(const char *);
struct wjson	*wjson_string_len(const char *, size_t);
struct wjson	*wjson_string_take(char *, size_t);
struct wjson	*wjson_array(void);
struct wjson	*wjson_object(void);

/*
 * Both take the value whatever happens: on failure (NULL value, no memory,
 * wrong container) it is freed, the container is marked bad and -1 is
 * returned, so a builder may check once, when it emits.  wjson_set
 * replaces a member of the same name.
 */
int		 wjson_append(struct wjson *, struct wjson *);
int		 wjson_set(struct wjson *, const char *, struct wjson *);

struct wjson	*wjson_get(const struct wjson *, const char *);
struct wjson	*wjson_detach(struct wjson *, const char *);
const char	*wjson_get_str(const struct wjson *, const char *, size_t *);
int		 wjson_is(const struct wjson *, enum wjson_type);
int		 wjson_int_value(const struct wjson *, long long *);

/* UTF-8 and the UTF-16 "chars" that PROTOCOL.md counts. */
int		 wjson_utf8_valid(const char *, size_t);
size_t		 wjson_utf8_valid_prefix(const char *, size_t);
size_t		 wjson_utf16_len(const char *, size_t);
size_t		 wjson_utf8_cut(const char *, size_t, size_t);
int		 wjson_utf8_next(const char *, size_t, unsigned long *);

#endif /* WJSON_H */
