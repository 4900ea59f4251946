/**
 * The shapes and bounds of pi-roundtable-sandbox 0.7.3's Pi mode, as a bot
 * imports them: the worker wire (PROTOCOL.md 4), its limits, and the checks
 * 0.7.3 exports.  rtsandboxd enforces the same bounds on its side; these are
 * the bot's own early checks.
 */

export const PI_RUN_DIR = "/run/sandbox";
export const PI_WORKSPACE = "/workspace";
export const PI_BROKER_SOCKET = "broker.sock";
export const PI_ATTACHMENTS = "attachments";
export const PI_OUTBOX = "outbox";
export const PI_FORWARDER_PORT = 8080;

/** Images of a turn or a tool answer, and reply files: counts and decoded bytes. */
export const PI_MEDIA_LIMITS = {
	images: 8,
	imageBytes: 20 * 1024 * 1024,
	totalImageBytes: 64 * 1024 * 1024,
	files: 10,
	fileBytes: 10 * 1024 * 1024,
	totalFileBytes: 50 * 1024 * 1024,
} as const;

export const PI_THINKING_LEVELS = ["low", "medium", "high", "xhigh"] as const;
export type PiThinkingLevel = (typeof PI_THINKING_LEVELS)[number];

/** An image as the worker and the model take it: strict base64 and its type. */
export interface PiImage {
	data: string;
	mimeType: string;
}

/** The turn the worker receives (PROTOCOL.md 4.1). */
export interface PiTurnRequest {
	turnId: string;
	author: { id: string; name: string };
	text: string;
	memory: string;
	images: PiImage[];
	thinking: PiThinkingLevel;
}

/** A file the worker put with its reply, base64 on the wire. */
export interface PiReplyFile {
	name: string;
	data: string;
}

export type PiTurnResponse =
	| { ok: true; text: string; files: PiReplyFile[] }
	| { ok: false; error: string };

/** What a host tool answers (PROTOCOL.md 3.3). */
export interface PiToolResponse {
	ok: boolean;
	/** At most 1 000 000 chars. */
	text?: string;
	/** At most 10 000 chars. */
	error?: string;
	image?: PiImage;
}

/** What the worker's tools know of a turn. */
export interface PiTurnContext {
	authorId: string;
	authorName: string;
	outbox: string;
	memory: string;
}

/** The answer of the broker's GET /mcp-tools. */
export interface PiMcpDiscovery {
	servers: { name: string; tools: string[] }[];
}

const IMAGE_TYPES: readonly string[] = ["image/png", "image/jpeg", "image/webp", "image/gif"];
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** "/", "\" and the control characters U+0000-U+001F, U+007F-U+009F. */
const UNSAFE_NAME = /[/\\\p{Cc}]/u;

function isRecord(v: unknown): v is Record<string, unknown> {
	return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Decoded size of strict base64 already checked against BASE64 and length % 4. */
function decodedBytes(data: string): number {
	let pads = 0;
	if (data.endsWith("==")) pads = 2;
	else if (data.endsWith("=")) pads = 1;
	return (data.length / 4) * 3 - pads;
}

function strictBase64(data: string, maxBytes: number): boolean {
	return data.length % 4 === 0 && data.length <= Math.ceil(maxBytes / 3) * 4 && BASE64.test(data);
}

export function isPiThinkingLevel(value: unknown): value is PiThinkingLevel {
	return typeof value === "string" && (PI_THINKING_LEVELS as readonly string[]).includes(value);
}

/** 1 to 255 chars, no "/", "\" or control character, not "." or "..". */
export function safeFileName(name: string): boolean {
	return name.length > 0 && name.length <= 255 && !UNSAFE_NAME.test(name) && name !== "." && name !== "..";
}

/** At most 8 images of PNG, JPEG, WebP or GIF, each 1 byte to 20 MiB, 64 MiB in all. */
export function validateImages(images: unknown): asserts images is PiImage[] {
	if (!Array.isArray(images) || images.length > PI_MEDIA_LIMITS.images) throw new Error("Too many images");
	let total = 0;
	for (const image of images) {
		if (
			!isRecord(image) ||
			typeof image.data !== "string" ||
			typeof image.mimeType !== "string" ||
			!IMAGE_TYPES.includes(image.mimeType) ||
			!strictBase64(image.data, PI_MEDIA_LIMITS.imageBytes)
		)
			throw new Error("Invalid or oversized image");
		const size = decodedBytes(image.data);
		total += size;
		if (size === 0 || size > PI_MEDIA_LIMITS.imageBytes || total > PI_MEDIA_LIMITS.totalImageBytes)
			throw new Error("Image budget exceeded");
	}
}

/** At most 10 files with safe names, each 1 byte to 10 MiB, 50 MiB in all. */
export function validateReplyFiles(files: unknown): asserts files is PiReplyFile[] {
	if (!Array.isArray(files) || files.length > PI_MEDIA_LIMITS.files) throw new Error("Too many reply files");
	let total = 0;
	for (const file of files) {
		if (
			!isRecord(file) ||
			typeof file.name !== "string" ||
			!safeFileName(file.name) ||
			typeof file.data !== "string" ||
			file.data.length === 0 ||
			!strictBase64(file.data, PI_MEDIA_LIMITS.fileBytes)
		)
			throw new Error("Invalid reply file");
		const size = decodedBytes(file.data);
		total += size;
		if (size > PI_MEDIA_LIMITS.fileBytes || total > PI_MEDIA_LIMITS.totalFileBytes)
			throw new Error("Reply file budget exceeded");
	}
}

/**
 * What the worker learns of the host at start (GET /worker/config);
 * compaction is left out when the host has no compactor.  rtsandboxd
 * answers it from compaction.engine in rtsandboxd.json.
 */
export interface PiWorkerConfig {
	compaction?: { engine: string };
}

/** One Pi AgentMessage of the worker's session, as JSON. */
export type PiCompactMessage = { role: string } & Record<string, unknown>;

/** The worker's compaction preparation: what the host's compactor is asked to summarise. */
export interface PiCompactRequest {
	/** A manual compact, the context threshold, or an overflow. */
	reason: "manual" | "threshold" | "overflow";
	tokensBefore: number;
	/** The first session entry kept (1 to 256 chars); the compaction must keep the same. */
	firstKeptEntryId: string;
	/** Whether the cut falls inside a turn; turnPrefixMessages then hold that turn's start. */
	isSplitTurn: boolean;
	messagesToSummarize: PiCompactMessage[];
	turnPrefixMessages: PiCompactMessage[];
	/** The messages from firstKeptEntryId on, which stay in the context. */
	keptMessages: PiCompactMessage[];
	previousSummary?: string;
	customInstructions?: string;
	/** Files only read, and files written or edited, in the summarised messages. */
	readFiles: string[];
	modifiedFiles: string[];
}

/** A compaction the host's compactor wrote, in the shape of Pi's CompactionResult. */
export interface PiCompaction {
	/** Not empty. */
	summary: string;
	/** The request's. */
	firstKeptEntryId: string;
	tokensBefore: number;
	estimatedTokensAfter?: number;
	/** An object; its engine is set to the host's engine. */
	details?: unknown;
}

/** What the worker is answered: a compaction, or a fallback to Pi's own summary and why. */
export type PiCompactResponse = { ok: true; compaction: PiCompaction } | { ok: false; fallback: string };

/** What the worker tells the host of its compactions, for the host's log. */
export type PiCompactionReport =
	| {
			type: "bypass";
			/** Why the hard ceiling went to Pi's summary without the host's compactor (at most 1 000 chars). */
			reason: string;
			tokensBefore: number;
	  }
	| {
			type: "end";
			reason: PiCompactRequest["reason"];
			aborted: boolean;
			willRetry: boolean;
			/** Left out when the compaction failed. */
			engine?: "extension" | "pi";
			tokensBefore?: number;
			tokensAfter?: number;
			nextCompactionAt?: number;
			/** At most 10 000 chars. */
			error?: string;
	  };

const COMPACT_REASONS: readonly string[] = ["manual", "threshold", "overflow"];

/** A token count: an integer from 0 to 2^53 - 1. */
export function isTokenCount(value: unknown): value is number {
	return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isMessages(value: unknown): value is PiCompactMessage[] {
	return Array.isArray(value) && value.every((m) => isRecord(m) && typeof m.role === "string");
}

function isStrings(value: unknown): value is string[] {
	return Array.isArray(value) && value.every((s) => typeof s === "string");
}

function optionalString(value: unknown): boolean {
	return value === undefined || typeof value === "string";
}

/** The compact request's shape and bounds, as the worker wire gives them. */
export function validateCompactRequest(value: unknown): asserts value is PiCompactRequest {
	const ok =
		isRecord(value) &&
		COMPACT_REASONS.includes(value.reason as string) &&
		isTokenCount(value.tokensBefore) &&
		typeof value.firstKeptEntryId === "string" &&
		value.firstKeptEntryId.length >= 1 &&
		value.firstKeptEntryId.length <= 256 &&
		typeof value.isSplitTurn === "boolean" &&
		isMessages(value.messagesToSummarize) &&
		isMessages(value.turnPrefixMessages) &&
		isMessages(value.keptMessages) &&
		optionalString(value.previousSummary) &&
		optionalString(value.customInstructions) &&
		isStrings(value.readFiles) &&
		isStrings(value.modifiedFiles);
	if (!ok) throw new Error("Invalid compact request");
}

/** A compaction report's shape and bounds. */
export function validateCompactionReport(value: unknown): asserts value is PiCompactionReport {
	let ok = false;
	if (isRecord(value) && value.type === "bypass")
		ok = typeof value.reason === "string" && value.reason.length <= 1000 && isTokenCount(value.tokensBefore);
	else if (isRecord(value) && value.type === "end")
		ok =
			COMPACT_REASONS.includes(value.reason as string) &&
			typeof value.aborted === "boolean" &&
			typeof value.willRetry === "boolean" &&
			(value.engine === undefined || value.engine === "extension" || value.engine === "pi") &&
			[value.tokensBefore, value.tokensAfter, value.nextCompactionAt].every((n) => n === undefined || isTokenCount(n)) &&
			(value.error === undefined || (typeof value.error === "string" && value.error.length <= 10000));
	if (!ok) throw new Error("Invalid compaction report");
}
