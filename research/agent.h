/*
 * The research agent's pure half (DESIGN.md 9): the Messages API request of
 * each step, the reading of each answer, the two tools' inputs, the tool
 * results sent back, and the report.  No I/O: research.c carries requests
 * and results between egress, the supervisor and these functions.
 *
 * Answers come from the network: they are parsed strictly (common/bodies.c)
 * and every field is checked before use.
 */
#ifndef RTSANDBOX_RESEARCH_AGENT_H
#define RTSANDBOX_RESEARCH_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "limits.h"

struct cJSON;

/* The bounds of a job are RESEARCH_* in limits.h. */
#define AGENT_ANSWER_MAX	RESEARCH_ANSWER_MAX
#define AGENT_READ_MAX		RESEARCH_READ_MAX
#define AGENT_CALLS_MAX		RESEARCH_CALLS_MAX

enum agent_thinking {
	AGENT_THINK_NONE,
	AGENT_THINK_LOW,
	AGENT_THINK_MEDIUM,
	AGENT_THINK_HIGH,
	AGENT_THINK_XHIGH,
};

/* "low", "medium", "high", "xhigh": 0 and *t; else -1. */
int	agent_thinking_parse(const char *, enum agent_thinking *);

/*
 * max_tokens = min(16 384 + ceiling, max_output_tokens), and with thinking
 * a budget of min(ceiling, max_tokens - 1), which is at least 1 024 since
 * max_output_tokens is at least 1 025.  *budget is 0 without thinking.
 */
void	agent_tokens(enum agent_thinking, uint64_t max_output_tokens,
	    uint64_t *max_tokens, uint64_t *budget);

struct agent_job {
	const char		*aj_model;
	const char		*aj_task;
	const char		*aj_author_name;	/* may be "" */
	enum agent_thinking	 aj_thinking;
	uint64_t		 aj_max_output_tokens;
	int			 aj_search;	/* web_search can be answered */
	const char		*aj_date;	/* "YYYY-MM-DD" or NULL */
};

enum agent_tool {
	AGENT_TOOL_WEB_SEARCH,
	AGENT_TOOL_FETCH_CONTENT,
	AGENT_TOOL_UNKNOWN,
};

/* One tool_use block of an answer, and its result once known. */
struct agent_call {
	char		*ac_id;
	char		*ac_name;
	enum agent_tool	 ac_tool;
	char		*ac_arg;	/* the query or the url, when valid */
	char		*ac_result;	/* the tool_result text */
	int		 ac_is_error;
	int		 ac_done;	/* ac_result is set */
	uint64_t	 ac_req;	/* research.c: request id in flight */
};

struct agent_answer {
	char			*aa_stop;	/* stop_reason, "" if none */
	char			*aa_text;	/* the text blocks, joined */
	size_t			 aa_text_len;
	struct agent_call	*aa_calls;
	size_t			 aa_ncalls;
	struct cJSON		*aa_content;	/* blocks to send back */
};

/*
 * Read a 200 answer of the Messages API.  Returns 0, or -1 with the reason
 * in err (NUL-terminated, never quoting the answer) for a body that is not
 * a message: not strict JSON, content not an array of at most 256 objects,
 * a block without its fields, a tool_use id or name that is not
 * [a-zA-Z0-9_-]{1,128}, the same id twice.  Calls to unknown tools and
 * inputs that break the tools' rules are not malformed: their results are
 * set here (ac_done, ac_is_error); a url must also fit egress's
 * URL_BYTES_MAX.  Free with agent_answer_free().
 */
int	agent_answer_parse(const char *body, size_t len, struct agent_answer *,
	    char *err, size_t errlen);
void	agent_answer_free(struct agent_answer *);

/* The error type of an error body ({"error":{"type":"..."}}), when it is
 * [a-z_]{1,64}; else "". */
void	agent_error_type(const char *body, size_t len, char *out,
	    size_t outsz);

/*
 * The report of a final answer: its text trimmed and cut at
 * RESEARCH_REPORT_MAX UTF-16 code units on a code point boundary.
 * Returns its length in bytes (0: empty); *start gets where it begins.
 */
size_t	agent_report(const char *text, size_t len, const char **start);

struct agent;

/* NULL when out of memory.  The job's strings are copied. */
struct agent	*agent_new(const struct agent_job *);
void		 agent_free(struct agent *);
/* Answers taken so far. */
unsigned	 agent_steps(const struct agent *);
/* The system prompt (for tests). */
const char	*agent_system(const struct agent *);

/* The body of the next POST /v1/messages, malloc'd and NUL-terminated;
 * NULL when out of memory. */
char	*agent_request_build(const struct agent *, size_t *len);

enum agent_next {
	AGENT_NEXT_TOOLS,	/* run the calls without ac_done, then
				 * agent_results() and the next request */
	AGENT_NEXT_REPORT,	/* *report, *report_len: the report */
	AGENT_NEXT_FAIL,	/* err: why, for the user */
};

/*
 * Take a parsed answer.  It is final when stop_reason is "end_turn" or it
 * calls no tool: then the report, or a failure ("refusal", empty text).
 * Else its blocks join the conversation and calls that will not run get
 * their results: web_search when the job has no search, calls past
 * AGENT_CALLS_MAX.  An answer that still calls tools at step
 * RESEARCH_STEPS_MAX fails the job.  *report points into the answer.
 */
enum agent_next	 agent_take_answer(struct agent *, struct agent_answer *,
		    const char **report, size_t *report_len, char *err,
		    size_t errlen);

/*
 * Once every call of the answer is done: one user message of tool_result
 * blocks, in order.  Result text is cut to what is left of AGENT_READ_MAX
 * (with a note); once it is used up, results are errors asking for the
 * report.  Before the last step, a text block says so.  -1 when out of
 * memory.
 */
int	agent_results(struct agent *, struct agent_answer *);

#endif
