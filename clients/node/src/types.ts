/**
 * The shapes of rtsandboxd's control protocol (rtsandbox-protocol(7)) as a
 * TypeScript bot sees them through PiSandboxRuntime.
 */

/** The thinking levels the daemon knows, lowest first. */
export type ThinkingLevel = "low" | "medium" | "high" | "xhigh";

export const THINKING_LEVELS: readonly ThinkingLevel[] = [
	"low",
	"medium",
	"high",
	"xhigh",
];

/** Who wrote the guest message: each field 1 to 256 chars. */
export interface Author {
	id: string;
	name: string;
	/** The principal the speaker is (1-256 chars); the worker is told it (contract 0.9). */
	principalId?: string;
}

export type ImageMimeType =
	| "image/png"
	| "image/jpeg"
	| "image/webp"
	| "image/gif";

/** An image of a turn or a tool answer: strict base64 or raw bytes. */
export interface Image {
	data: string | Uint8Array;
	mimeType: ImageMimeType;
}

/** A file the worker put with its reply. */
export interface ReplyFile {
	name: string;
	data: Uint8Array;
}

/** Why a turn failed, as the daemon says it. */
export type TurnFailureReason =
	| "busy"
	| "invalid"
	| "start_failed"
	| "timeout"
	| "cancelled"
	| "worker_failed"
	/** The worker image declares too little for a private turn or answer: rebuild it. */
	| "stale_image"
	| "internal";

export interface TurnError {
	reason: TurnFailureReason;
	message: string;
	/** The worker's own text (guest-controlled) when reason is worker_failed. */
	workerError?: string;
}

export type TurnResult =
	| { ok: true; text: string; files: ReplyFile[] }
	| { ok: false; error: TurnError };

/** The phases a turn goes through, in order (model and tool calls repeat). */
export type TurnPhase =
	| "starting"
	| "container"
	| "ready"
	| "delivered"
	| "model_call"
	| "tool_call"
	| "result";

export interface TurnProgress {
	channel: string;
	turnId: string;
	phase: TurnPhase;
}

export interface RunTurnInput {
	channel: string;
	profile: string;
	/** A safe file name: 1-255 chars, no "/", "\\" or control character, not "." or "..". */
	turnId: string;
	author: Author;
	/** At most 100 000 chars. */
	text: string;
	/** At most 8, each 1 byte to 20 MiB, 64 MiB in all. */
	images?: Image[];
	/** Aborting it cancels the turn; the answer comes once its container is gone. */
	signal?: AbortSignal;
	/** Given: the memory hook is not asked. */
	memory?: string;
	/**
	 * Whether the memory may be read by everyone in the channel ("shared") or only by the
	 * author ("private", what the daemon assumes when this is absent).  A private memory is
	 * given only to a worker that declares it can keep it so, else the turn fails as stale_image.
	 */
	memoryVisibility?: "shared" | "private";
	/** Given: the effort hook is not asked. */
	thinking?: ThinkingLevel;
	/** This turn's progress, besides the runtime's "progress" event. */
	onProgress?: (progress: TurnProgress) => void;
}

/** What the memory adapter is asked for each turn. */
export interface MemoryRequest {
	channel: string;
	speaker: Author;
}

export interface MemoryAdapter {
	/** The memory of the channel for this speaker: at most 100 000 chars, or the turn fails. */
	promptBlock(
		request: MemoryRequest,
	): string | undefined | null | Promise<string | undefined | null>;
}

/** What the effort judge is asked for each turn. */
export interface EffortRequest {
	text: string;
	/** The level judged for the channel's last turn; absent on its first turn and after stop or startFresh. */
	previous?: ThinkingLevel;
}

export interface EffortAdapter {
	judge(request: EffortRequest): ThinkingLevel | Promise<ThinkingLevel>;
}

/** The bound identity of the turn a tool call belongs to (never what the worker claims). */
export interface ToolContext {
	channel: string;
	profile: string;
	speaker: Author;
	thinking: ThinkingLevel;
	turnId: string;
	/** Aborted when the turn settles. */
	signal: AbortSignal;
}

export interface ToolResult {
	ok: boolean;
	/** At most 1 000 000 chars. */
	text?: string;
	/** At most 10 000 chars (longer ones are cut). */
	error?: string;
	image?: Image;
	/** The one principal who may read this exchange (1-256 chars; contract 0.9). */
	privateTo?: string;
}

export type ToolHandler = (
	input: Record<string, unknown>,
	context: ToolContext,
) => ToolResult | Promise<ToolResult>;

export interface SearchContext {
	channel: string;
	signal: AbortSignal;
}

/** Answers the research job's web_search: at most 100 000 chars of results. */
export type SearchHandler = (
	query: string,
	context: SearchContext,
) => string | Promise<string>;

/** One message of the worker's Pi session, as JSON. */
export type CompactMessage = { role: string } & Record<string, unknown>;

/** What the worker asks the host's compactor to summarise (compaction.compact's request). */
export interface CompactRequest {
	reason: "manual" | "threshold" | "overflow";
	tokensBefore: number;
	/** 1 to 256 chars; the compaction must keep the same. */
	firstKeptEntryId: string;
	isSplitTurn: boolean;
	messagesToSummarize: CompactMessage[];
	turnPrefixMessages: CompactMessage[];
	keptMessages: CompactMessage[];
	previousSummary?: string;
	customInstructions?: string;
	readFiles: string[];
	modifiedFiles: string[];
}

/** A compaction, in the shape of Pi's CompactionResult. */
export interface Compaction {
	/** Not empty. */
	summary: string;
	/** The request's. */
	firstKeptEntryId: string;
	/** An integer from 0 to 2^53 - 1, as the others. */
	tokensBefore: number;
	estimatedTokensAfter?: number;
	/** An object; the daemon sets its engine to compaction.engine. */
	details?: Record<string, unknown>;
}

/** The bound identity of the turn being compacted, and the compactor's time. */
export interface CompactContext {
	channel: string;
	profile: string;
	speaker: Author;
	turnId: string;
	/** rtsandboxd's compaction.engine, which the worker records. */
	engine: string;
	/** The time the daemon gives: at most compaction.timeout_ms and half what the turn has left. */
	timeoutMs: number;
	/** Aborted after timeoutMs, or when the turn settles. */
	signal: AbortSignal;
}

/**
 * Compacts a worker's session: a compaction, or null or undefined to leave
 * it to Pi's own summary.  A throw, a late answer or one the daemon cannot
 * take also falls back.
 */
export type CompactionHandler = (
	request: CompactRequest,
	context: CompactContext,
) => Compaction | null | undefined | Promise<Compaction | null | undefined>;

/** A pino-style logger: each method optional. */
export interface Logger {
	debug?(obj: object, msg?: string): void;
	info?(obj: object, msg?: string): void;
	warn?(obj: object, msg?: string): void;
	error?(obj: object, msg?: string): void;
}

export interface ChannelStatus {
	state: "missing" | "running" | "stopped";
	image?: string;
	/** Left out when the container carries no profile label. */
	profile?: string;
	container?: string;
	broker: "none" | "starting" | "ready";
	busy: boolean;
}

export interface FreshResult {
	archived: number;
	/** The archive folder under sessions/archive/, when archived > 0. */
	folder?: string;
}

export interface ChannelPaths {
	sessions: string;
	attachments: string;
}

export interface ResearchOptions {
	author: Author;
	/** Serves this job's web_search; else the runtime's search option. */
	search?: SearchHandler;
	signal?: AbortSignal;
	thinking?: ThinkingLevel;
}

export type ResearchFailureReason =
	| "invalid"
	| "busy"
	| "timeout"
	| "cancelled"
	| "failed"
	| "internal";

export type ResearchResult =
	| { ok: true; report: string }
	| { ok: false; error: { reason: ResearchFailureReason; message: string } };

export interface Attachment {
	url: string;
	name: string;
	size?: number;
	contentType?: string;
}

export interface AttachmentOptions {
	/** The attachments of the message this one answers. */
	reference?: Attachment[];
	signal?: AbortSignal;
}

export interface SavedAttachment {
	index: number;
	reference: boolean;
	name: string;
	/** The file's name in the channel's attachments/. */
	file: string;
	size: number;
}

export interface FailedAttachment {
	index: number;
	reference: boolean;
	name: string;
	reason: string;
}

export interface AttachmentsResult {
	saved: SavedAttachment[];
	failed: FailedAttachment[];
}

export interface PiSandboxRuntimeOptions {
	/** The control socket; default $RTSANDBOX_CONTROL_SOCKET, else /run/rtsandbox/control.sock. */
	socket?: string;
	memory?: MemoryAdapter;
	effort?: EffortAdapter;
	/** Host tools by name, as the daemon's configuration lists them. */
	tools?: Record<string, ToolHandler>;
	/** Serves web_search for research jobs that bring none of their own. */
	search?: SearchHandler;
	/**
	 * Serves the compaction.compact hook, which the daemon calls when
	 * rtsandboxd.json has compaction (engine, timeout_ms, max_request_bytes).
	 */
	compactor?: CompactionHandler;
	logger?: Logger;
	/** The name the daemon logs for this client; default "pi-sandbox-runtime". */
	clientName?: string;
	/** How long a call waits for the connection when the daemon is down; default 30 000 ms. */
	connectTimeoutMs?: number;
	/** Reconnection back-off: first and longest wait, default 100 and 5 000 ms. */
	reconnect?: { initialMs?: number; maxMs?: number };
}
