/*
 * The turn bodies of PROTOCOL.md 3.1, 3.3 and 4: what the worker posts as a
 * result, what the host's tool hook answers, and the turn request built
 * from turn.run.  Pure functions over a buffer and a length, or over a
 * parsed tree, shared by the broker and the supervisor.
 *
 * The error text (err, errlen; either may be NULL/0) names the field and
 * the bound for the host log; it never quotes the strings it judged.  What
 * a worker sees is only the status text of PROTOCOL.md.
 *
 * "chars" are UTF-16 code units.  Strings must be valid UTF-8.  A
 * duplicate key in any object makes the body invalid.
 */
#ifndef RTSANDBOX_BODIES_H
#define RTSANDBOX_BODIES_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "limits.h"		/* BODY_NODES_MAX */

enum body_err {
	BODY_OK = 0,
	BODY_INVALID_JSON,	/* not strict JSON: 400 Invalid result */
	BODY_MISMATCH,		/* not the pending turn's result: 409 */
	BODY_BAD,		/* a field breaks its rule: 400 */
	BODY_NOMEM,		/* out of memory, judged as a refusal */
};

const char	*body_err_to_string(enum body_err);

/* code, with err set from fmt as the checkers set it. */
enum body_err	body_fail(char *err, size_t errlen, enum body_err code,
		    const char *fmt, ...)
		    __attribute__((__format__(__printf__, 4, 5)));
/* it (what names it) is a string of valid UTF-8 and at most max chars;
 * NULL is "missing". */
enum body_err	body_check_text(const cJSON *it, const char *what,
		    size_t max, char *err, size_t errlen);

/*
 * Parse a body as strict JSON (RFC 8259) into *out; the caller frees it
 * with cJSON_Delete().  Before cJSON sees the text: valid UTF-8, no NUL
 * byte, no raw control character in a string, no \u escape that is not
 * four hex digits or that is \u0000, only JSON's four white space bytes,
 * no byte-order mark, numbers and literals as the grammar spells them, at
 * most BODY_NODES_MAX values and keys.  After: nothing but white space
 * follows, and no object anywhere holds a key twice, and every number is finite.
 */
enum body_err	body_parse(const char *body, size_t len, cJSON **out,
		    char *err, size_t errlen);

/*
 * The tree as cJSON_PrintUnformatted() prints it, byte for byte, but for
 * numbers: each in the shortest form that reads back as the same double
 * (cJSON
 * prints 15 significant digits whenever they read back within an epsilon,
 * so 9007199254740993 would leave as 9.00719925474099e+15 and
 * 0.30000000000000004 as 0.3).  Sized first and written into one
 * allocation of its exact length: strings go as runs of plain bytes, and a
 * large text is one block that the allocator can map apart and give back
 * whole.  The tree is not changed.  NULL when out of memory or for a node
 * cJSON would not print; freed with free() (or cJSON_free()).
 */
char		*body_print(const cJSON *);

/*
 * Whether two members of the object obj share a key (or one has none): 1
 * when they do, 0 when not, -1 when out of memory.
 */
int		 body_dup_keys(const cJSON *obj);

/*
 * The lexer body_parse() runs before cJSON, for parsers with bounds of
 * their own: NULL when body is a sequence of JSON tokens (the grammar is
 * left to the parser), with *nodes the number of values and keys in it,
 * an upper bound of cJSON's nodes; else what is wrong, at byte *at.  Valid
 * UTF-8 and the absence of NUL are the caller's to check.
 */
const char	*body_json_scan(const char *body, size_t len, size_t *at,
		    size_t *nodes);

/*
 * One image (4.3): exactly {"data": strict base64 decoding to 1 B-20 MiB,
 * "mimeType": image/png|image/jpeg|image/webp|image/gif}.  Other fields
 * are refused: images go to the worker as given.  *bytes (may be NULL)
 * gets the decoded size.
 */
enum body_err	body_check_image(const cJSON *img, size_t *bytes,
		    char *err, size_t errlen);

/* A list of images (4.3): an array of at most 8, 64 MiB decoded in all. */
enum body_err	body_check_images(const cJSON *arr, char *err,
		    size_t errlen);

/*
 * Reply files (4.2): an array of at most 10 {"name": safe file name,
 * "data": strict base64 of at most ceil(10 MiB / 3) * 4 chars decoding to
 * 1 B-10 MiB}, 50 MiB decoded in all.  Two files of one name are refused:
 * the host stores them side by side.  Other fields of a file are ignored;
 * whoever takes the files copies name and data only.
 */
enum body_err	body_check_files(const cJSON *arr, char *err,
		    size_t errlen);

/*
 * POST /worker/result (3.1), once the body was read: the decisions of
 * PROTOCOL.md from "invalid JSON" on, in their order.  Returns the HTTP
 * status to answer: 400 (not JSON, over 72 MiB, or a field broken), 409
 * (not an object, turnId not pending_turn_id, result not an object,
 * result.ok not a boolean) or 200.
 *
 * ok:true needs a string text and an array files: a missing files is
 * refused like any other non-array, as the 0.7.3 worker always sends one.
 * ok:false needs a string error; text and files are then not looked at.
 * Fields the protocol does not name are ignored (the rules end in
 * "otherwise complete the turn").
 *
 * On 200 and with result non-NULL, *result gets the "result" object,
 * detached; the caller frees it with cJSON_Delete().
 */
int		body_check_result(const char *body, size_t len,
		    const char *pending_turn_id, cJSON **result, char *err,
		    size_t errlen);

/*
 * The turn request (4.1), exactly {"turnId": safe file name, "author":
 * {"id": <=256 chars, "name": <=256 chars}, "text": <=100 000 chars,
 * "memory": <=100 000 chars, "images": list of images, "thinking":
 * low|medium|high|xhigh}.  Every field is required, no other is allowed;
 * empty author fields, text and memory pass.
 */
enum body_err	body_check_turn(const cJSON *turn, char *err,
		    size_t errlen);

struct body_turn {
	const char	*bt_turn_id;
	const char	*bt_author_id;
	const char	*bt_author_name;
	const char	*bt_text;
	const char	*bt_memory;	/* NULL: "" */
	const cJSON	*bt_images;	/* NULL: [] */
	const char	*bt_thinking;
	const char	*bt_principal_id;	/* NULL: absent */
	const char	*bt_memory_visibility;	/* NULL: absent */
};

/*
 * The JSON text of 4.1, keys in that order, without white space, checked
 * by body_check_turn() first.  Returns a NUL-terminated string to free
 * with cJSON_free(), or NULL (err tells why; *errp, when errp is non-NULL,
 * gets BODY_BAD or BODY_NOMEM).
 */
char		*body_build_turn(const struct body_turn *bt,
		    enum body_err *errp, char *err, size_t errlen);

/*
 * The host's tool answer (3.3): an object of exactly ok (boolean, required)
 * and, each optional, text (string, <=1 000 000 chars), error (string,
 * <=10 000 chars), image (one image, 4.3) and privateTo (the principal who
 * alone may read the exchange, 1 to 256 chars; contract 0.9).  Anything else is BODY_BAD or
 * BODY_INVALID_JSON, which the broker answers with 502.
 */
enum body_err	body_check_tool_answer(const char *body, size_t len,
		    char *err, size_t errlen);
/* The same over a parsed tree, such as a JSON-RPC result. */
enum body_err	body_check_tool_answer_json(const cJSON *answer, char *err,
		    size_t errlen);

/*
 * What a worker declares at POST /worker/ready (rtsandbox-protocol(7),
 * contract 0.9): {"capabilities": {"privateTo": bool, "readerRecords":
 * bool}, "privateHistory": bool}, each optional; other keys are a newer
 * worker's and ignored.  An empty body declares nothing, as a 0.7.3
 * worker's.  At most WORKER_READY_BODY_MAX bytes.
 */
struct body_ready {
	int	 br_private_to;
	int	 br_reader_records;
	int	 br_private_history;
};
enum body_err	body_check_ready(const char *body, size_t len,
		    struct body_ready *, char *err, size_t errlen);

/* 3.3: status texts of POST /tools/<name>, both 400. */
#define BODY_INVALID_INPUT	"Invalid input"
#define BODY_INVALID_TOOL_INPUT	"Invalid tool input"

/*
 * The body of POST /tools/<name> (3.3): a JSON object with an object
 * "input".  On BODY_OK, *input gets that object, detached, for the caller
 * to cJSON_Delete().  Otherwise *input is NULL and *why is the status text
 * to answer with 400: BODY_INVALID_INPUT when the body is over 96 MiB, not
 * strict JSON or not an object, BODY_INVALID_TOOL_INPUT when "input" is
 * missing or not an object.
 */
enum body_err	body_tool_input(const char *body, size_t len,
		    cJSON **input, const char **why, char *err, size_t errlen);

#endif
