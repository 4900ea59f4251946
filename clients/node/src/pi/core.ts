/**
 * The pi-roundtable 0.7 core types that pi-roundtable-sandbox 0.7.3's Pi
 * mode takes and gives, declared here so that a bot needs no other package
 * to compile against this one.  They are structural: the core's own values
 * fit them.
 */

/** `<surface>:<channel id>`, for example `discord:1234`. */
export type ChannelKey = `${string}:${string}`;

/** A pino-style logger; pino's Logger fits it. */
export interface Logger {
	debug(obj: object, msg?: string): void;
	info(obj: object, msg?: string): void;
	warn(obj: object, msg?: string): void;
	error(obj: object, msg?: string): void;
}

/** How much a speaker may do. */
export type Tier = "member" | "admin" | "owner";

/** A file attached to a chat message, as the surface reports it. */
export interface AttachmentRef {
	url: string;
	name: string;
	contentType?: string;
	size: number;
}

/**
 * The facts of an incoming message that collectPiAttachments reads; the
 * core's InboundMessage has these and more.
 */
export interface InboundMessage {
	channel: ChannelKey;
	messageId: string;
	attachments: AttachmentRef[];
	reference?: { text?: string; attachments: AttachmentRef[] };
}

/** An attachment saved in the channel's attachments/. */
export interface StoredAttachment {
	name: string;
	/** The file's name inside the channel's attachments/. */
	file: string;
	/** Its absolute host path. */
	path: string;
	contentType: string;
	size: number;
	fromReference: boolean;
}

export interface AttachmentFailure {
	name: string;
	reason: string;
	fromReference: boolean;
}

/** An image in the form the model takes. */
export interface ModelImage {
	data: string;
	mimeType: string;
}

/** Everything a turn carries besides its text. */
export interface TurnAttachments {
	files: StoredAttachment[];
	images: ModelImage[];
	failures: AttachmentFailure[];
}

/** A delegated task, as the core's delegator and ScopedSandboxDelegator describe it. */
export interface DelegationJob {
	id: number;
	channel: ChannelKey;
	origin?: ChannelKey;
	target: string;
	author: { id: string; name: string; tier?: Tier };
	title: string;
	task: string;
	startedAt: Date;
	thread?: unknown;
}

export type DelegationOutcome = { ok: true; report: string } | { ok: false; error: string };

/** A turn that could not run or failed; the core's class of the same name. */
export class AgentRunError extends Error {
	override name = "AgentRunError";
}

/** A delegation refused; the core's class of the same name. */
export class DelegationError extends Error {
	override name = "DelegationError";
}
