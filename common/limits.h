/*
 * Every number of PROTOCOL.md and of DESIGN.md section 7 and 9, once.  Each
 * constant carries the sentence it enforces; "chars" are UTF-16 code units
 * as PROTOCOL.md defines them, sizes are bytes.
 *
 * With common/ on the include path this file shadows the system's
 * <limits.h> (sys/param.h and others include it by that name), so it pulls
 * the system header in as well, from outside the guard: reached as
 * "limits.h" from common/ itself, #include_next finds this file again
 * through the include path, and only that copy's #include_next gets to the
 * system's.
 */
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winclude-next-absolute-path"
#endif
#include_next <limits.h>
#ifdef __clang__
#pragma clang diagnostic pop
#endif

#ifndef RTSANDBOX_LIMITS_H
#define RTSANDBOX_LIMITS_H

/* Conventions: "MiB = 1 048 576 bytes." */
#define MIB				1048576u
/* One UTF-16 code unit takes at most 3 UTF-8 bytes (4 bytes give 2 units). */
#define UTF8_BYTES_MAX(chars)		((chars) * 3u)

/* Conventions: "Safe file name: 1–255 chars". */
#define SAFE_NAME_MIN			1u
#define SAFE_NAME_MAX			255u

/*
 * 1. Topology
 */
/* "the host path must be at most 100 chars" (of run/broker.sock). */
#define BROKER_SOCK_PATH_MAX		100u
/* "<state>/<segment>/run/broker.sock 0600". */
#define BROKER_SOCK_MODE		0600

/*
 * 2. The worker's loop: the worker's own client timeouts, which the host's
 * timers must stay inside.
 */
/* "POST /worker/ready (client timeout 5 s)". */
#define WORKER_READY_TIMEOUT_MS		5000
/* "GET /worker/next (client timeout 55 s)". */
#define WORKER_NEXT_TIMEOUT_MS		55000
/* "POST /worker/result (client timeout 60 s)". */
#define WORKER_RESULT_TIMEOUT_MS	60000
/* "On a non-2xx answer it sleeps 250 ms and starts again at /worker/ready." */
#define WORKER_RETRY_MS			250

/*
 * 3.1 Worker routes
 */
/* "hold the request up to 45 s ... at 45 s or on client disconnect → 408". */
#define BROKER_POLL_MS			45000
_Static_assert(BROKER_POLL_MS < WORKER_NEXT_TIMEOUT_MS,
    "the long poll ends before the worker's client gives up");
/* "body limit 72 MiB" for POST /worker/result. */
#define RESULT_BODY_MAX			(72u * MIB)
/* "ok:true with text not a string or over 100 000 chars ... → 400". */
#define RESULT_TEXT_MAX			100000u
/* "files not an array or over 10 entries ... → 400". */
#define RESULT_FILES_MAX		10u
/* "ok:false with error not a string or over 10 000 chars → 400". */
#define RESULT_ERROR_MAX		10000u

/*
 * 3.2 Model calls
 */
/* "Body: at most 96 MiB, a JSON object, rebuilt field by field". */
#define MODEL_BODY_MAX			(96u * MIB)
/* "copied from the worker only when present and at most 4 096 chars". */
#define HEADER_VALUE_MAX		4096u
/* "Response headers copied only when ... the value is at most 256 chars". */
#define RESP_HEADER_VALUE_MAX		256u
/* "upstream status passed through when 200–599 (else 502 ...)". */
#define UPSTREAM_STATUS_MIN		200
#define UPSTREAM_STATUS_MAX		599
/* "At most 50 MiB per response." */
#define RESPONSE_BODY_MAX		(50u * MIB)

/*
 * 3.3 Host tools and MCP
 */
/* "names [a-z][a-z0-9_]{0,47}" for host tools. */
#define HOST_TOOL_NAME_MAX		48u
/* "Host tools: ... Body at most 96 MiB, a JSON object with an object input". */
#define TOOL_BODY_MAX			(96u * MIB)
/* Tool answer: "text?: ≤ 1 000 000 chars". */
#define TOOL_TEXT_MAX			1000000u
/* Tool answer: "error?: ≤ 10 000 chars". */
#define TOOL_ERROR_MAX			10000u
/* Tool answer: "image?: one valid image (4.3)". */
#define TOOL_IMAGES_MAX			1u
/* "server in the bound profile (names [a-zA-Z0-9_-]{1,100})". */
#define MCP_SERVER_NAME_MAX		100u
/*
 * PROTOCOL.md gives no MCP body bound; the 96 MiB of the other POST bodies
 * of 3.2 and 3.3 applies.
 */
#define MCP_BODY_MAX			(96u * MIB)
/* "mcp-session-id and mcp-protocol-version ... when at most 256 chars". */
#define MCP_HEADER_MAX			256u
/*
 * Internal: values and keys in one MCP body.  Its params are a model's tool
 * input, as a host tool's body is: the same bound.
 */
#define MCP_NODES_MAX			BODY_NODES_MAX

/*
 * 3.4 Scopes and budgets
 */
/* "Budget: 128 credential-bearing calls (configurable 1–1 000)". */
#define TURN_CALLS_DEFAULT		128u
#define TURN_CALLS_MIN			1u
#define TURN_CALLS_MAX			1000u
/* "at most 4 in flight" (bound turn and startup window alike). */
#define SCOPE_INFLIGHT_MAX		4u
/* "Startup window ...: exists when the broker starts; 90 s". */
#define STARTUP_WINDOW_MS		90000
/* "90 s, 32 calls, 4 in flight". */
#define STARTUP_CALLS			32u
/* "more than 10 s have passed since it was last armed". */
#define STARTUP_REARM_MS		10000

/*
 * 3.5 Listener limits
 */
/* "At most 16 connections (further ones are closed at once)". */
#define BROKER_CONN_MAX			16u
/* "10 s to receive the request headers". */
#define BROKER_HEADER_TIMEOUT_MS	10000
/* "a 120 s silence limit on body reads and writes". */
#define BROKER_SILENCE_MS		120000
/*
 * Not in PROTOCOL.md: a worker whose connections end refused (an answer of
 * 400 or more, closed unanswered, or past the 16) 64 times within a second
 * is not served for the rest of that second: its connections wait in the
 * listen queue.  A refused body counts once more per MiB read, so that
 * bodies of 64 MiB or more are refused about once a second at most.  A
 * flood of refused calls then costs its broker almost nothing instead of
 * most of a core (DESIGN.md 1, invariant 7); a worker that keeps to the
 * contract is never refused that often.
 */
#define BROKER_REFUSALS_MAX		64u
#define BROKER_REFUSAL_WINDOW_MS	1000

/*
 * Not in PROTOCOL.md: the supervisor and egress each count what a broker
 * or research job sent that they refused without it breaking a rule on its
 * own (common/violation.h: a call, tool call or result for a turn that has
 * ended, an acknowledgement of a call that is over).  A legitimate peer
 * sends a handful when a turn ends under it (its calls in flight, their
 * acknowledgements, at most 4 tool calls); past 64 within a second it is
 * stopped as a violation (DESIGN.md 1, invariant 7).  Such refusals are
 * logged at most once a minute per peer, with their count.
 */
#define PEER_REFUSALS_MAX		64u
#define PEER_REFUSAL_WINDOW_MS		1000
#define PEER_REFUSAL_LOG_MS		60000
/*
 * Not in PROTOCOL.md: back-pressure on a broker or research job that does
 * not read its pipe (DESIGN.md 1, invariant 7).  While more than 1 MiB
 * waits to be written to it, the supervisor and egress read nothing more
 * from it, so that answers to what it sends cannot pile up; one that takes
 * nothing of what waits for 30 s is stopped (a legitimate one is never
 * that busy: its longest step, the rebuild of a 96 MiB body, takes a few
 * seconds).
 */
#define PEER_QUEUE_MAX			(1u * MIB)
#define PEER_STALL_MS			30000
/*
 * Not in PROTOCOL.md: what the read buffers of every broker and research
 * job may hold together, in the supervisor and in egress (frame.h).  A
 * buffer grows with the bytes that arrived, so a header alone costs
 * 128 KiB; ten frames at the edge's maximum of 100 MiB fit at once, and a
 * peer whose frame does not is dropped, never the process.
 */
#define SUPERVISOR_PEER_READ_MAX	(1024u * MIB)
#define EGRESS_PEER_READ_MAX		(1024u * MIB)

/*
 * Not in PROTOCOL.md: a credential asked of the client for one call
 * (configuration credential "hook") that has not come within 10 s fails
 * that call with a 502, as PiSandboxRuntime 0.7.3 fails a getter that
 * throws; the turn goes on.
 */
#define CRED_HOOK_MS			10000
/*
 * Not in PROTOCOL.md: upstream.credentials names a credential file for at
 * most 1 000 channels and 1 000 speakers, and these files and
 * credential_file lie in at most 4 directories: egress and the spawner
 * may read each directory named when they start, one Landlock rule each.
 */
#define CRED_MAP_MAX			1000u
#define CRED_DIRS_MAX			4u

/*
 * 4. Bodies
 */
/* 4.1: "author": {"id": ≤256 chars, "name": ≤256 chars}. */
#define AUTHOR_FIELD_MAX		256u
/*
 * rtsandbox-protocol(7), contract 0.9: "author.principalId" of 1 to 256
 * chars, "privateTo" of a tool answer the same.
 */
#define PRINCIPAL_ID_MAX		256u
/* The same: the body of POST /worker/ready, at most 16 384 bytes. */
#define WORKER_READY_BODY_MAX		16384u
/*
 * rtsandbox-protocol(7), contract 0.7.10/0.7.12: compaction.  The
 * compact request's firstKeptEntryId is 1 to 256 chars, a report's error
 * at most 10 000 and a bypass's reason at most 1 000; token counts are
 * integers from 0 to 2^53 - 1.  A turn asks for at most 3 compactions
 * and sends at most 16 reports of at most 64 KiB.  The configuration's
 * compaction.timeout_ms is 1 000 to 600 000 (120 000), max_request_bytes
 * 1 to 96 MiB (32 MiB); the compactor gets at most half the turn's time
 * left, and less than 1 000 ms of it is a fallback at once.
 */
#define COMPACT_ENTRY_ID_MAX		256u
#define COMPACT_ERROR_MAX		10000u
#define COMPACT_BYPASS_REASON_MAX	1000u
#define COMPACT_TOKENS_MAX		9007199254740991ull
#define COMPACTS_PER_TURN		3u
#define COMPACT_REPORTS_PER_TURN	16u
#define COMPACT_REPORT_BODY_MAX		(64u * 1024)
#define COMPACT_TIMEOUT_MS_MIN		1000u
#define COMPACT_TIMEOUT_MS_MAX		600000u
#define COMPACT_TIMEOUT_MS_DEFAULT	120000u
#define COMPACT_REQUEST_BYTES_MAX	(96u * MIB)
#define COMPACT_REQUEST_BYTES_DEFAULT	(32u * MIB)
#define COMPACT_ENGINE_MAX		100u
/* The log keeps the head of a report's error or reason. */
#define COMPACT_LOG_TEXT_MAX		1000u
/*
 * rtsandbox-protocol(7), contract 0.7.11/0.7.13: precheck runs.  The
 * worker reads one input of at most 64 KiB on its stdin and answers on its
 * stdout in at most 64 KiB; its stderr is read up to 128 KiB and dropped.
 * The run's broker reads a request body of at most 64 KiB and egress an
 * upstream answer of at most 1 MiB; a run makes 1 to 100 calls (16), one
 * at a time, within 1 000 to 600 000 ms (60 000).  A script's error comes
 * back as at most 1 000 chars.  The container: 64 to 1 536 MiB (256),
 * 0.01 to 1 CPU (1), 8 to 256 processes (32), its command 1 to 16 parts of
 * 1 to 256 bytes.  A JSON answer is looked into at most 64 levels deep,
 * strings that hold JSON included.  At most 32 servers are granted.
 */
#define PRECHECK_INPUT_MAX		(64u * 1024)
#define PRECHECK_STDOUT_MAX		(64u * 1024)
#define PRECHECK_STDERR_MAX		(128u * 1024)
#define PRECHECK_REQUEST_MAX		(64u * 1024)
#define PRECHECK_RESPONSE_MAX		(1024u * 1024)
#define PRECHECK_CALLS_MIN		1u
#define PRECHECK_CALLS_MAX		100u
#define PRECHECK_CALLS_DEFAULT		16u
#define PRECHECK_TIMEOUT_MS_MIN		1000u
#define PRECHECK_TIMEOUT_MS_MAX		600000u
#define PRECHECK_TIMEOUT_MS_DEFAULT	60000u
#define PRECHECK_ERROR_MAX		1000u
#define PRECHECK_MEMORY_MIB_MIN		64u
#define PRECHECK_MEMORY_MIB_MAX		1536u
#define PRECHECK_MEMORY_MIB_DEFAULT	256u
#define PRECHECK_NANO_CPUS_MIN		10000000u
#define PRECHECK_NANO_CPUS_MAX		1000000000u
#define PRECHECK_PIDS_MIN		8u
#define PRECHECK_PIDS_MAX		256u
#define PRECHECK_PIDS_DEFAULT		32u
#define PRECHECK_ARGV_MAX		16u
#define PRECHECK_ARG_BYTES_MAX		256u
#define PRECHECK_DEPTH_MAX		64u
#define PRECHECK_SERVERS_MAX		32u
/* A run's number, in its directory and its container's name. */
#define PRECHECK_RUN_MAX		9007199254740991ull
/* A schedule's title, in chars. */
#define PRECHECK_TITLE_MAX		1000u
/* The tmpfs at /tmp of a precheck container, in MiB. */
#define PRECHECK_TMP_MIB		64u
/* Not in the contract: a run's broker ends its scope at most this long
 * after the run's timeout, the time the supervisor may give the
 * container's start and stop. */
#define PRECHECK_DEADLINE_SLACK_MS	10000u
/* 4.1: "text": ≤100 000 chars. */
#define TURN_TEXT_MAX			100000u
/* 4.1: "memory": ≤100 000 chars (may be ""); DESIGN.md 6 says the same. */
#define MEMORY_MAX			100000u
/* 4.1 and 4.3: "images": [image, ...] (≤ 8); "at most 8 per list". */
#define IMAGES_MAX			8u
/* 4.3: "decoded 1 byte–20 MiB". */
#define IMAGE_BYTES_MIN			1u
#define IMAGE_BYTES_MAX			(20u * MIB)
/* 4.3 bound in base64 chars: ⌈20 MiB / 3⌉ · 4. */
#define IMAGE_B64_MAX			(((IMAGE_BYTES_MAX + 2u) / 3u) * 4u)
/* 4.3: "at most 8 per list and 64 MiB in all". */
#define IMAGES_TOTAL_MAX		(64u * MIB)
/* 4.2: "Files: at most 10". */
#define REPLY_FILES_MAX			10u
/* 4.2: "each decoded 1 byte–10 MiB". */
#define REPLY_FILE_MIN			1u
#define REPLY_FILE_MAX			(10u * MIB)
/* 4.2: "(base64 at most ⌈10 MiB/3⌉·4 chars)". */
#define REPLY_FILE_B64_MAX		(((REPLY_FILE_MAX + 2u) / 3u) * 4u)
/* 4.2: "50 MiB in all". */
#define REPLY_FILES_TOTAL_MAX		(50u * MIB)

/*
 * 5. Rebuilding a model request
 */
/* "messages: at most 2 000". */
#define MODEL_MESSAGES_MAX		2000u
/* "Content: a string, or at most 256 blocks". */
#define MODEL_BLOCKS_MAX		256u
/* "tool_use (id 1–128 chars" and "tool_result (tool_use_id 1–128 chars". */
#define TOOL_USE_ID_MIN			1u
#define TOOL_USE_ID_MAX			128u
/* "name [a-zA-Z0-9_-]{1,128}". */
#define TOOL_USE_NAME_MAX		128u
/* "tools: at most 128". */
#define MODEL_TOOLS_MAX			128u
/*
 * rtsandbox-protocol(7), contract 0.7.15: a mid-conversation system
 * message keeps "clear_at", a tag of 1 to 64 bytes [a-z0-9_].
 */
#define SYSTEM_CLEAR_AT_MAX		64u
/* "enabled needs an integer budget ≥ 1 024". */
#define THINKING_BUDGET_MIN		1024u
/* Ceilings: "low | low | 2 048". */
#define THINKING_CEIL_LOW		2048u
/* "medium | medium | 8 192". */
#define THINKING_CEIL_MEDIUM		8192u
/* "high | high | 16 384". */
#define THINKING_CEIL_HIGH		16384u
/* "xhigh | max | 32 768". */
#define THINKING_CEIL_XHIGH		32768u
/* "max_tokens = max(budget + 1, min(asked or 16 384, maxOutputTokens))". */
#define MAX_TOKENS_DEFAULT		16384u
/* "maxOutputTokens 128 000 by default (configurable 1 025–200 000)". */
#define MAX_OUTPUT_TOKENS_DEFAULT	128000u
#define MAX_OUTPUT_TOKENS_MIN		1025u
#define MAX_OUTPUT_TOKENS_MAX		200000u
/* "stop_sequences kept when at most 16 strings of at most 1 000 chars". */
#define STOP_SEQUENCES_MAX		16u
#define STOP_SEQUENCE_MAX		1000u
/*
 * Internal: JSON values and keys in one model request, counted before it
 * is parsed, since cJSON spends some 100 bytes on each.  "messages: at
 * most 2 000" of "at most 256 blocks" are 512 000 blocks of 5 to 9 values
 * and keys each (a text block with its cache_control has 9): 8 a block on
 * average, and the rest for system, tools and their schemas.
 */
#define MODEL_NODES_MAX			4194304u

/*
 * 6. The channel's files
 */
/* "Channel keys are at most 256 chars" (and a key is never empty). */
#define CHANNEL_KEY_MIN			1u
#define CHANNEL_KEY_MAX			256u
/* A key of 256 chars in UTF-8: each char at most 3 bytes. */
#define CHANNEL_KEY_BYTES_MAX		UTF8_BYTES_MAX(CHANNEL_KEY_MAX)
/* ".channel-key ... re-read (at most 1 025 bytes) on every use". */
#define CHANNEL_KEY_FILE_MAX		1025u
/* "every UTF-16 code unit ... replaced by _": one byte per char of the key. */
#define SEGMENT_MAX			CHANNEL_KEY_MAX
/* "<state>/ 0700", "<state>/<segment>/ 0700", run/ and workspace/ 0700. */
#define STATE_DIR_MODE			0700
/* ".channel-key 0600, the exact channel key bytes". */
#define CHANNEL_KEY_MODE		0600
/* "Attachments written by the host are created exclusively ... (mode 0600)". */
#define ATTACHMENT_MODE			0600

/*
 * 7. The container
 */
/* "Created through the Docker Engine API ... 15 s per call". */
#define DOCKER_CALL_TIMEOUT_MS		15000
/* Precheck runs the Docker client follows at once; more are refused. */
#define DOCKER_PRECHECK_RUNS_MAX	16u
/* "prefix [a-z0-9][a-z0-9-]{0,40}". */
#define CONTAINER_PREFIX_MAX		41u
/* "Name <prefix>-<segment>". */
#define CONTAINER_NAME_MAX	(CONTAINER_PREFIX_MAX + 1u + SEGMENT_MAX)
/* "User = the service user's uid:gid (both > 0)". */
#define CONTAINER_ID_MIN		1u
/* "Tmpfs: {"/tmp": "rw,nosuid,nodev,size=512m,mode=1777"}". */
#define CONTAINER_TMPFS_OPTS		"rw,nosuid,nodev,size=512m,mode=1777"
#define CONTAINER_TMPFS_SIZE		(512ull * MIB)
#define CONTAINER_TMPFS_MODE		01777
/* "Memory = MemorySwap = 1 536 MiB". */
#define CONTAINER_MEMORY		(1536ull * MIB)
/* "NanoCpus = 1e9". */
#define CONTAINER_NANO_CPUS		1000000000ull
/* "PidsLimit 256". */
#define CONTAINER_PIDS_MAX		256u
/* "Ulimits nofile 256/256". */
#define CONTAINER_NOFILE		256u
/* "bounded logs (local driver, 10 MiB × 2)". */
#define CONTAINER_LOG_SIZE		(10u * MIB)
#define CONTAINER_LOG_FILES		2u
/* HostConfig.Runtime, when docker.runtime names one (rtsandboxd.conf(5)):
 * a name of the engine's runtimes, [a-zA-Z0-9][a-zA-Z0-9_.-]{0,63}. */
#define RUNTIME_NAME_MAX		64u

/*
 * 8. Controlled fetch
 */
/* "3 s per address to connect (TLS included)". */
#define FETCH_CONNECT_MS		3000
/* "deadline 60 s (1 ms–120 s) for the whole call". */
#define FETCH_DEADLINE_MS_DEFAULT	60000
#define FETCH_DEADLINE_MS_MIN		1
#define FETCH_DEADLINE_MS_MAX		120000
/* "5 MiB (1 B–32 MiB)", on wire and decoded bytes alike. */
#define FETCH_BYTES_DEFAULT		(5u * MIB)
#define FETCH_BYTES_MIN			1u
#define FETCH_BYTES_MAX			(32u * MIB)
/* "5 redirects (0–10)". */
#define FETCH_REDIRECTS_DEFAULT		5u
#define FETCH_REDIRECTS_MIN		0u
#define FETCH_REDIRECTS_MAX		10u

/*
 * DESIGN.md 5: the control socket
 */
/* "Lines are at most 128 MiB." */
#define CONTROL_LINE_MAX		(128u * MIB)
/* "(control_socket, mode 0600, or 0660 with control_group)". */
#define CONTROL_SOCK_MODE		0600
#define CONTROL_SOCK_MODE_GROUP		0660

/*
 * DESIGN.md 7: configuration
 */
/* "profiles | name ([a-zA-Z0-9_-]{1,100})". */
#define PROFILE_NAME_MAX		100u
/* "timeouts | start_ms 90 000, turn_ms 600 000 (each 1 000–600 000)". */
#define START_MS_DEFAULT		90000
#define TURN_MS_DEFAULT			600000
#define TIMEOUT_MS_MIN			1000
#define TIMEOUT_MS_MAX			600000
/* "budgets | max_calls 128 (1–1 000)": the bound turn's budget of 3.4. */
#define MAX_CALLS_DEFAULT		TURN_CALLS_DEFAULT
#define MAX_CALLS_MIN			TURN_CALLS_MIN
#define MAX_CALLS_MAX			TURN_CALLS_MAX

/*
 * DESIGN.md 9: research worker
 */
/* "web_search (query 1–4 000 chars". */
#define RESEARCH_QUERY_MIN		1u
#define RESEARCH_QUERY_MAX		4000u
/* "fetch_content (url at most 8 000 chars". */
#define RESEARCH_URL_MAX		8000u
/* "At most 2 jobs per channel". */
#define RESEARCH_JOBS_MAX		2u
/* "task at most 4 000 chars". */
#define RESEARCH_TASK_MAX		4000u
/* "report at most 80 000 chars". */
#define RESEARCH_REPORT_MAX		80000u
/* "600 s deadline" by default, configurable 1-1 200 s. */
#define RESEARCH_DEADLINE_MS		600000
#define RESEARCH_DEADLINE_MS_MIN	1000
#define RESEARCH_DEADLINE_MS_MAX	1200000
/* "at most 2 jobs per channel (configurable 1-10)". */
#define RESEARCH_JOBS_MIN		1u
#define RESEARCH_JOBS_LIMIT		10u
/* Internal: what a search.query hook may answer, and what one
 * fetch_content hands the model, in chars. */
#define RESEARCH_SEARCH_TEXT_MAX	100000u
#define RESEARCH_PAGE_TEXT_MAX		100000u
/* Internal: model calls one job may make before it must answer. */
#define RESEARCH_STEPS_MAX		24u
/* Internal: tries of one research model call after the first (an
 * overloaded upstream). */
#define RESEARCH_RETRIES		2u
/* Internal: model calls of one research job in all, each step with its
 * tries; egress holds the job to it. */
#define RESEARCH_MODEL_CALLS_MAX	(RESEARCH_STEPS_MAX * (1 + RESEARCH_RETRIES))
/* Internal: a model answer is read up to this size. */
#define RESEARCH_ANSWER_MAX		(8u * MIB)
/* Internal: tool result text one job hands the model in all, in UTF-8
 * bytes (a rough measure of tokens for Latin and CJK text alike); past it
 * the model is told to write its report. */
#define RESEARCH_READ_MAX		400000u
/* Internal: tool calls run for one answer; later ones get an error. */
#define RESEARCH_CALLS_MAX		16u
/* Internal: web_search and fetch_content calls of one job in all, each
 * step's over every step; the supervisor holds a job's searches to it,
 * and egress its fetches. */
#define RESEARCH_TOOL_CALLS_MAX		(RESEARCH_STEPS_MAX * RESEARCH_CALLS_MAX)

/*
 * DESIGN.md 9 / attachments.fetch
 */
/* "at most 20 candidates (25 MiB each, 50 MiB in all". */
#define ATTACH_CANDIDATES_MAX		20u
#define ATTACH_FILE_BYTES_MAX		(25u * MIB)
#define ATTACH_TOTAL_BYTES_MAX		(50u * MIB)
/* "name ... last 120 chars, empty -> file". */
#define ATTACH_NAME_TAIL		120u
/* Internal: a chat message id in a file name. */
#define ATTACH_MESSAGE_ID_MAX		100u

/*
 * DESIGN.md 1, invariant 7: "Memory and time spent for a peer are bounded
 * per peer (... RLIMIT_AS or RLIMIT_DATA ...)".  RLIMIT_DATA of each role:
 * brk and private writable mappings (malloc's arenas and large blocks,
 * thread stacks), whether touched or not.  Each is the most the role holds
 * at once for legitimate input, derived below and checked as peak VmData
 * with the integration suites and drivers at the protocol's maxima, with
 * headroom; past it malloc fails.
 */
/*
 * The file guard holds one frame from the supervisor at a time, at most
 * 256 KiB of JSON and 100 MiB of data (an attachment of at most 25 MiB
 * today), on 0.4 MiB of its own: 20.4 MiB measured for a 20 MiB
 * attachment.
 */
#define FSGUARD_DATA_MAX		(128u * MIB)
/*
 * The Docker client, one call at a time: an answer of at most 4 MiB
 * (dockapi.h) and its cJSON tree, 20 MiB for a 4 MiB container list, on
 * 1.2 MiB of its own.
 */
#define DOCKER_DATA_MAX			(64u * MIB)
/*
 * Egress serves every channel: the call bodies it holds, at most 512 MiB in
 * all (EGRESS_BODY_BYTES_MAX, egress.c), as much again in frames on their
 * way in, a 512 KiB answer window for each of at most 256 calls, and fetches:
 * 8 at once per research job of 5 MiB read and 5 MiB decoded (eight jobs:
 * 640 MiB) and attachment downloads of 50 MiB in all.  About 2 GiB, and a
 * third more for threads, TLS and fragmentation.  Measured: 482 MiB for one
 * channel's four calls of 96 MiB, 204 MiB for a research job sending a
 * 96 MiB conversation.
 */
#define EGRESS_DATA_MAX			(3072u * MIB)
/*
 * A broker reads one request body of the protocol's largest at a time
 * (BROKER_BODY_HOLD_MAX below: the others wait unread, back-pressure), and
 * frees it once parsed.  It holds at once: the rebuild of one model call
 * at MODEL_NODES_MAX (cJSON's tree, some 320 MiB, the 96 MiB it prints and
 * the frame to egress it queues, as large), a turn of 64 MiB of images
 * (86 MiB of JSON, handed to the worker's answer without a copy), a host
 * tool's answer of 1 000 000 chars and a 20 MiB image, and what the heap
 * keeps of the trees before.  Measured with tests/integration/test_maxima.py
 * (all of these at once, then a 72 MiB result): 842 MiB of VmData at the
 * peak with the four calls in flight, where it was 1330 MiB when every body
 * was read as it came and the turn copied; 746 MiB where egress admits
 * one of them and refuses the rest as busy (EGRESS_PEER_BODY_MAX).  So
 * 1 GiB, a fifth more than the first.
 */
#define BROKER_DATA_MAX			(1024u * MIB)
/*
 * Internal: the request bodies a broker reads at once and the frames it
 * has queued, beyond which a further body waits unread (broker/hold.c): a
 * body counts at its Content-Length or, chunked, at its route's maximum,
 * so the largest body is read alone.
 */
#define BROKER_BODY_HOLD_MAX		MODEL_BODY_MAX
/*
 * A research job holds its conversation (at most the 100 MiB a frame to
 * egress carries: 314 MiB measured while sending a 96 MiB one), one answer
 * of at most RESEARCH_ANSWER_MAX and one page of FETCH_BYTES_DEFAULT with
 * libxml2's tree of it: 394 MiB measured for the densest 5 MiB page of
 * those tried (<br> elements of six attributes), 498 MiB with that page
 * read into a conversation of 92 MiB.
 */
#define RESEARCH_DATA_MAX		(768u * MIB)
/*
 * The supervisor serves every channel.  For one channel at its maximum it
 * held 342 MiB for a turn with 64 MiB of images, 501 MiB for a turn and a
 * 72 MiB result, 800 MiB for four 96 MiB tool calls in flight (each parsed
 * and sent on to the client's hook); room for five such channels at once.
 * The spawner has the same, which every helper lowers for itself.
 */
#define SUPERVISOR_DATA_MAX		(4096ull * MIB)

/*
 * Internal bounds: not in PROTOCOL.md, but every string that crosses a
 * process edge has one.
 */
/* A path in the configuration (PATH_MAX of Linux). */
#define PATH_BYTES_MAX			4096u
/* An upstream or MCP URL in the configuration. */
#define URL_BYTES_MAX			8192u
/* MCP servers in the configuration, and tools of each. */
#define MCP_SERVERS_MAX			32u
#define MCP_TOOLS_PER_SERVER_MAX	128u
/* An IANA time zone name (time_zone, a precheck run's timeZone). */
#define TIME_ZONE_BYTES_MAX		64u
/* A profile's model name. */
#define MODEL_NAME_BYTES_MAX		256u
/* The client name given to initialize on the control socket. */
#define CLIENT_NAME_MAX			256u
/*
 * JSON values and object keys in one turn body (bodies.h) or host tool
 * body.  PROTOCOL.md gives no such bound, but without one a 72 MiB result
 * of "[0,0,...]" costs cJSON some 3 GB and half a minute; the turn bodies
 * need a few dozen, a model's tool input at most its output tokens.
 */
#define BODY_NODES_MAX			262144u

#endif
