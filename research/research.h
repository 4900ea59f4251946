/*
 * rtsandbox-research: one sandboxed process per research job (DESIGN.md 9).
 *
 *   rtsandbox-research [-d] -n SEGMENT
 *
 * Descriptors: FD_PARENT (frames with the supervisor) and FD_EGRESS (frames
 * with egress; this process is role "research" on that edge).  No files, no
 * network, nothing else (research/sandbox.c).
 *
 * Bring-up: the supervisor sends CONFIG_RESEARCH, then CONFIG_DONE; the job
 * answers READY (REFUSED when the configuration is missing) and starts at
 * once.  CONFIG_RESEARCH, no id, every field required unless marked:
 *
 *   channel            string, at most CHANNEL_KEY_BYTES_MAX bytes
 *   model              string, 1 to MODEL_NAME_BYTES_MAX bytes
 *   task               string, 1 to RESEARCH_TASK_MAX chars
 *   author_id          string, at most AUTHOR_FIELD_MAX chars (may be "")
 *   author_name        string, at most AUTHOR_FIELD_MAX chars (may be "")
 *   thinking           optional string: low | medium | high | xhigh
 *   max_output_tokens  integer, MAX_OUTPUT_TOKENS_MIN to _MAX
 *   search             boolean: whether web_search can be answered
 *
 * During the job (model call numbers, and the ids RES_SEARCH and EGR_FETCH
 * share, each start at 1 and are never reused):
 *
 *   to egress      EGR_CALL {call, kind "model", path "/v1/messages",
 *                  hnames ["content-type", "anthropic-version"], hvalues
 *                  ["application/json", "2023-06-01"]} + the request body,
 *                  one call at a time; EGR_ACK {call, bytes} as data comes;
 *                  EGR_CANCEL {call} for an answer over 8 MiB.
 *   from egress    EGR_HEAD {call, status 200-599, hnames, hvalues},
 *                  EGR_DATA {call} + data, EGR_END {call, ok, status?,
 *                  error?}.
 *   to egress      EGR_FETCH {id, url, deadline_ms 60000, max_bytes
 *                  FETCH_BYTES_DEFAULT, max_redirects 5} for fetch_content.
 *   from egress    EGR_FETCHED {id, ok, status?, url?, content_type?,
 *                  location?, error?} + the body.
 *   to supervisor  RES_SEARCH {id, query} for web_search (only when
 *                  "search" was true).
 *   from sup.      RES_SEARCHED {id, ok, error?} + the results as text
 *                  (UTF-8; invalid bytes are replaced).
 *   to supervisor  RES_REPORT {ok: true} + the report (UTF-8, at most
 *                  RESEARCH_REPORT_MAX chars, never empty), or
 *                  RES_REPORT {ok: false, error: a sentence for the user,
 *                  under 512 bytes}; then the job exits 0 once the frame
 *                  is written.
 *
 * The loop (agent.c): at most RESEARCH_STEPS_MAX model calls; the request
 * of the last one tells the model it can call no more tools, and an answer
 * that still calls one fails the job ("the research did not finish within
 * 24 steps").  The report is the final answer's text blocks joined,
 * trimmed, cut at RESEARCH_REPORT_MAX chars on a code point boundary; an
 * empty one, or stop_reason "refusal", fails the job.
 *
 * At most four tool calls are in flight at once.  A model call answered
 * 503 or 529 (unavailable, overloaded) is tried again twice, after 2 s and
 * 8 s; any other failure of a model call ends the job with "model call
 * failed with status N" and the error type of the answer when it has one.
 * The job's deadline is the supervisor's: it kills the process.
 */
#ifndef RTSANDBOX_RESEARCH_RESEARCH_H
#define RTSANDBOX_RESEARCH_RESEARCH_H

void	research_main(int argc, char *argv[]) __attribute__((noreturn));

/* "YYYY-MM-DD" of a time in seconds since the epoch, without the time zone
 * files gmtime() would read. */
void	research_date(long long secs, char out[11]);

#endif
