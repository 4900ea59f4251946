/**
 * PiSandboxRuntime over rtsandboxd: the surface of pi-roundtable-sandbox
 * 0.7.3's runtime, with the container, broker and turn state held by the
 * daemon.  The memory, effort, tool, search and compactor callbacks are
 * served as the daemon's hooks on the runtime's one connection.
 */
import { EventEmitter } from "node:events";

import { compactionProblem, compactionToWire, compactTimeout, CompactorStopped, runCompactor } from "./compaction.js";
import { Connection, type Call } from "./connection.js";
import { RpcCode, RtsandboxConnectionError, RtsandboxError, RtsandboxRpcError } from "./errors.js";
import { validateCompactRequest } from "./pi/protocol.js";
import {
	THINKING_LEVELS,
	type Attachment,
	type AttachmentOptions,
	type AttachmentsResult,
	type Author,
	type ChannelPaths,
	type ChannelStatus,
	type CompactRequest,
	type FreshResult,
	type Image,
	type Logger,
	type PiSandboxRuntimeOptions,
	type ReplyFile,
	type ResearchOptions,
	type ResearchResult,
	type RunTurnInput,
	type SearchHandler,
	type ThinkingLevel,
	type ToolHandler,
	type ToolResult,
	type TurnError,
	type TurnFailureReason,
	type TurnProgress,
	type TurnResult,
} from "./types.js";

export const DEFAULT_SOCKET = "/run/rtsandbox/control.sock";

/** The longest tool error the daemon passes on (PROTOCOL.md 3.3). */
const TOOL_ERROR_MAX = 10000;

const TURN_REASONS: readonly TurnFailureReason[] = [
	"busy",
	"invalid",
	"start_failed",
	"timeout",
	"cancelled",
	"worker_failed",
	"internal",
];

interface TurnState {
	controller: AbortController;
	onProgress?: (p: TurnProgress) => void;
}

interface ResearchJob {
	search?: SearchHandler;
	controller: AbortController;
}

interface HookError extends Error {
	code: number;
}

function hookError(code: number, message: string): HookError {
	const e = new Error(message) as HookError;
	e.code = code;
	return e;
}

function toBase64(data: string | Uint8Array): string {
	if (typeof data === "string") return data;
	return Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("base64");
}

function fromBase64(data: string): Uint8Array {
	const b = Buffer.from(data, "base64");
	return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

function imageToWire(image: Image): { data: string; mimeType: string } {
	return { data: toBase64(image.data), mimeType: image.mimeType };
}

function isObject(v: unknown): v is Record<string, unknown> {
	return typeof v === "object" && v !== null && !Array.isArray(v);
}

function messageOf(e: unknown): string {
	return e instanceof Error ? e.message : String(e);
}

function turnKey(channel: string, turnId: string): string {
	return `${channel}\u0000${turnId}`;
}

export class PiSandboxRuntime extends EventEmitter {
	readonly socket: string;
	private readonly options: PiSandboxRuntimeOptions;
	private readonly logger: Logger;
	private readonly conn: Connection;
	private readonly turns = new Map<string, TurnState>();
	private readonly jobs = new Map<string, ResearchJob[]>();

	constructor(options: PiSandboxRuntimeOptions = {}) {
		super();
		this.options = options;
		this.logger = options.logger ?? {};
		this.socket = options.socket ?? process.env.RTSANDBOX_CONTROL_SOCKET ?? DEFAULT_SOCKET;
		const hooks = ["tool.call", "search.query"];
		if (options.memory !== undefined) hooks.push("memory.block");
		if (options.effort !== undefined) hooks.push("effort.judge");
		if (options.compactor !== undefined) hooks.push("compaction.compact");
		this.conn = new Connection({
			socket: this.socket,
			clientName: options.clientName ?? "pi-sandbox-runtime",
			hooks,
			// an older daemon refuses it, and its workers compact on their own
			optionalHooks: ["compaction.compact"],
			onRequest: (method, params) => this.serveHook(method, params),
			onNotification: (method, params) => this.notified(method, params),
			logger: this.logger,
			connectTimeoutMs: options.connectTimeoutMs ?? 30000,
			reconnectInitialMs: options.reconnect?.initialMs ?? 100,
			reconnectMaxMs: options.reconnect?.maxMs ?? 5000,
		});
		this.conn.on("connected", (info) => this.emit("connected", info));
		this.conn.on("disconnected", (why) => this.emit("disconnected", why));
	}

	/** Connect now rather than on the first call. */
	connect(): Promise<void> {
		return this.conn.connect();
	}

	/** Close the connection; calls in flight fail. */
	close(): Promise<void> {
		for (const t of this.turns.values()) t.controller.abort();
		return this.conn.close();
	}

	/** Start the channel's container and broker; resolves once its worker is ready. */
	async start(channel: string, profile: string): Promise<void> {
		await this.call("channel.start", { channel, profile });
	}

	/** Cancel its turn, remove the container, stop the broker, forget the judged level. */
	async stop(channel: string): Promise<void> {
		await this.call("channel.stop", { channel });
	}

	status(channel: string): Promise<ChannelStatus> {
		return this.call<ChannelStatus>("channel.status", { channel });
	}

	/** Stop, then archive the channel's sessions. */
	startFresh(channel: string): Promise<FreshResult> {
		return this.call<FreshResult>("channel.fresh", { channel });
	}

	/** Cancel every turn and stop every broker; containers stay.  Answers how many stopped. */
	async stopBrokers(): Promise<number> {
		const r = await this.call<{ stopped: number }>("daemon.stop_brokers");
		return r.stopped;
	}

	paths(channel: string): Promise<ChannelPaths> {
		return this.call<ChannelPaths>("channel.paths", { channel });
	}

	/** Cancel the channel's running turn, whoever started it; whether one ran. */
	async cancelTurn(channel: string): Promise<boolean> {
		const r = await this.call<{ cancelled: boolean }>("turn.cancel", { channel });
		return r.cancelled;
	}

	/** The daemon's processes and counters (daemon.stats). */
	stats(): Promise<Record<string, unknown>> {
		return this.call<Record<string, unknown>>("daemon.stats");
	}

	/** Run one turn.  Never throws for the daemon's or the connection's failures: they come as { ok: false }. */
	async runTurn(input: RunTurnInput): Promise<TurnResult> {
		const { channel, turnId, signal } = input;
		if (signal?.aborted) return cancelledTurn("The turn was cancelled before it started");
		const params: Record<string, unknown> = {
			channel,
			profile: input.profile,
			turnId,
			author:
				input.author?.principalId !== undefined
					? { id: input.author?.id, name: input.author?.name, principalId: input.author.principalId }
					: { id: input.author?.id, name: input.author?.name },
			text: input.text,
			images: (input.images ?? []).map(imageToWire),
		};
		if (input.memory !== undefined) params.memory = input.memory;
		if (input.memoryVisibility !== undefined) params.memoryVisibility = input.memoryVisibility;
		if (input.thinking !== undefined) params.thinking = input.thinking;
		const key = turnKey(channel, turnId);
		const state: TurnState = { controller: new AbortController(), onProgress: input.onProgress };
		const mine = !this.turns.has(key);
		if (mine) this.turns.set(key, state);
		const call = this.conn.call<unknown>("turn.run", params);
		const onAbort = (): void => call.cancel();
		signal?.addEventListener("abort", onAbort, { once: true });
		try {
			return turnFromWire(await call.result);
		} catch (e) {
			return await this.turnFailed(e, channel, call);
		} finally {
			signal?.removeEventListener("abort", onAbort);
			state.controller.abort();
			if (mine) this.turns.delete(key);
		}
	}

	private async turnFailed(e: unknown, channel: string, call: Call): Promise<TurnResult> {
		if (e instanceof RtsandboxRpcError && e.code === RpcCode.REQUEST_CANCELLED) {
			if (call.sent()) {
				// The daemon answers a cancelled request at once and removes
				// the container in the channel's queue of operations:
				// channel.paths, queued after it, returns once it is gone.
				await this.conn
					.call("channel.paths", { channel })
					.result.catch(() => undefined);
			}
			return cancelledTurn("The turn was cancelled");
		}
		if (e instanceof RtsandboxConnectionError) {
			this.logger.warn?.({ channel, err: e.message }, "turn failed with the connection");
			return { ok: false, error: { reason: "internal", message: e.message } };
		}
		if (e instanceof RtsandboxRpcError) {
			const reason =
				e.code === RpcCode.INVALID_PARAMS || e.code === RpcCode.INVALID_REQUEST
					? "invalid"
					: "internal";
			return { ok: false, error: { reason, message: e.message } };
		}
		throw e;
	}

	/** Run a research job; the report, or why there is none. */
	async research(channel: string, task: string, options: ResearchOptions): Promise<ResearchResult> {
		const { signal } = options;
		if (signal?.aborted)
			return { ok: false, error: { reason: "cancelled", message: "the research job was cancelled" } };
		const params: Record<string, unknown> = {
			channel,
			author: { id: options.author?.id, name: options.author?.name },
			task,
		};
		if (options.thinking !== undefined) params.thinking = options.thinking;
		const job: ResearchJob = { search: options.search, controller: new AbortController() };
		const list = this.jobs.get(channel) ?? [];
		list.push(job);
		this.jobs.set(channel, list);
		const call = this.conn.call<unknown>("research.run", params);
		const onAbort = (): void => call.cancel();
		signal?.addEventListener("abort", onAbort, { once: true });
		try {
			const r = await call.result;
			if (isObject(r) && r.ok === true && typeof r.report === "string") return { ok: true, report: r.report };
			if (isObject(r) && r.ok === false)
				return {
					ok: false,
					error: {
						reason: (typeof r.reason === "string" ? r.reason : "failed") as "failed",
						message: typeof r.message === "string" ? r.message : "the research job failed",
					},
				};
			return { ok: false, error: { reason: "internal", message: "research.run: an answer of no known shape" } };
		} catch (e) {
			if (e instanceof RtsandboxRpcError && e.code === RpcCode.REQUEST_CANCELLED)
				return { ok: false, error: { reason: "cancelled", message: "the research job was cancelled" } };
			if (e instanceof RtsandboxError) return { ok: false, error: { reason: "internal", message: e.message } };
			throw e;
		} finally {
			signal?.removeEventListener("abort", onAbort);
			job.controller.abort();
			const now = (this.jobs.get(channel) ?? []).filter((j) => j !== job);
			if (now.length > 0) this.jobs.set(channel, now);
			else this.jobs.delete(channel);
		}
	}

	/** Cancel the channel's research jobs; how many ran. */
	async cancelResearch(channel: string): Promise<number> {
		const r = await this.call<{ cancelled: number }>("research.cancel", { channel });
		return r.cancelled;
	}

	/**
	 * Download a chat message's files (and those of the message it answers)
	 * into the channel's attachments/.  Refusals of the request reject with
	 * RtsandboxRpcError; a file that cannot be had is listed in failed.
	 */
	async fetchAttachments(
		channel: string,
		messageId: string,
		attachments: Attachment[],
		options: AttachmentOptions = {},
	): Promise<AttachmentsResult> {
		const params: Record<string, unknown> = { channel, messageId, attachments };
		if (options.reference !== undefined) params.reference = { attachments: options.reference };
		const call = this.conn.call<AttachmentsResult>("attachments.fetch", params);
		const onAbort = (): void => call.cancel();
		if (options.signal?.aborted) call.cancel();
		options.signal?.addEventListener("abort", onAbort, { once: true });
		try {
			return await call.result;
		} finally {
			options.signal?.removeEventListener("abort", onAbort);
		}
	}

	private call<T>(method: string, params?: object): Promise<T> {
		return this.conn.call<T>(method, params).result;
	}

	private notified(method: string, params: unknown): void {
		if (method !== "turn.progress" || !isObject(params)) return;
		const p = params as unknown as TurnProgress;
		const t = this.turns.get(turnKey(p.channel, p.turnId));
		if (t?.onProgress !== undefined) {
			try {
				t.onProgress(p);
			} catch (e) {
				this.logger.warn?.({ err: messageOf(e) }, "onProgress threw");
			}
		}
		this.emit("progress", p);
	}

	private async serveHook(method: string, params: unknown): Promise<unknown> {
		if (!isObject(params)) throw hookError(RpcCode.INVALID_PARAMS, `${method}: params must be an object`);
		switch (method) {
			case "tool.call":
				return this.toolCall(params);
			case "memory.block":
				return this.memoryBlock(params);
			case "effort.judge":
				return this.effortJudge(params);
			case "search.query":
				return this.searchQuery(params);
			case "compaction.compact":
				return this.compact(params);
			default:
				throw hookError(RpcCode.METHOD_NOT_FOUND, `no hook ${method}`);
		}
	}

	private async toolCall(params: Record<string, unknown>): Promise<unknown> {
		const name = String(params.name);
		const ctx = isObject(params.context) ? params.context : {};
		const channel = String(ctx.channel);
		const turnId = String(ctx.turnId);
		const handler: ToolHandler | undefined = Object.prototype.hasOwnProperty.call(this.options.tools ?? {}, name)
			? this.options.tools?.[name]
			: undefined;
		if (handler === undefined) {
			this.logger.warn?.({ channel, tool: name }, "a tool call for a tool this runtime does not serve");
			return { ok: false, error: `Tool ${name} is not available` };
		}
		const turn = this.turns.get(turnKey(channel, turnId));
		const signal = turn?.controller.signal ?? new AbortController().signal;
		let result: ToolResult;
		try {
			result = await handler(isObject(params.input) ? params.input : {}, {
				channel,
				profile: String(ctx.profile),
				speaker: (isObject(ctx.speaker) ? ctx.speaker : { id: "", name: "" }) as unknown as Author,
				thinking: String(ctx.thinking) as ThinkingLevel,
				turnId,
				signal,
			});
		} catch (e) {
			this.logger.warn?.({ channel, tool: name, err: messageOf(e) }, "tool handler threw");
			return { ok: false, error: messageOf(e).slice(0, TOOL_ERROR_MAX) };
		}
		if (!isObject(result) || typeof result.ok !== "boolean") {
			this.logger.warn?.({ channel, tool: name }, "tool handler answered without a boolean ok");
			return { ok: false, error: `Tool ${name} answered nothing usable` };
		}
		const out: Record<string, unknown> = { ok: result.ok };
		if (result.text !== undefined) out.text = result.text;
		if (result.error !== undefined) out.error = String(result.error).slice(0, TOOL_ERROR_MAX);
		if (result.image !== undefined) out.image = imageToWire(result.image);
		if (result.privateTo !== undefined) out.privateTo = result.privateTo;
		return out;
	}

	private async memoryBlock(params: Record<string, unknown>): Promise<unknown> {
		const memory = this.options.memory;
		if (memory === undefined) throw hookError(RpcCode.METHOD_NOT_FOUND, "no memory adapter");
		const channel = String(params.channel);
		try {
			const text = await memory.promptBlock({
				channel,
				speaker: { id: String(params.id), name: String(params.name) },
			});
			return { text: text ?? "" };
		} catch (e) {
			// The daemon then runs the turn without memory.
			this.logger.warn?.({ channel, err: messageOf(e) }, "memory.promptBlock failed");
			throw e;
		}
	}

	private async effortJudge(params: Record<string, unknown>): Promise<unknown> {
		const effort = this.options.effort;
		if (effort === undefined) throw hookError(RpcCode.METHOD_NOT_FOUND, "no effort judge");
		const request: { text: string; previous?: ThinkingLevel } = { text: String(params.text) };
		if (typeof params.previous === "string") request.previous = params.previous as ThinkingLevel;
		let level: ThinkingLevel;
		try {
			level = await effort.judge(request);
		} catch (e) {
			// The daemon then keeps the previous level or its default.
			this.logger.warn?.({ err: messageOf(e) }, "effort.judge failed");
			throw e;
		}
		if (!THINKING_LEVELS.includes(level))
			this.logger.warn?.({ level }, "effort.judge answered a level the daemon does not know");
		return { level };
	}

	/** compaction.compact {request, context, timeoutMs} → the compaction, or null to decline. */
	private async compact(params: Record<string, unknown>): Promise<unknown> {
		const compactor = this.options.compactor;
		if (compactor === undefined) throw hookError(RpcCode.METHOD_NOT_FOUND, "no compactor");
		const ctx = isObject(params.context) ? params.context : {};
		const channel = String(ctx.channel);
		const turnId = String(ctx.turnId);
		const request = params.request;
		try {
			validateCompactRequest(request);
		} catch {
			this.logger.warn?.({ channel }, "rtsandboxd sent a compact request of no known shape");
			throw hookError(RpcCode.INVALID_PARAMS, "compaction.compact: invalid request");
		}
		const timeoutMs = compactTimeout(params.timeoutMs);
		const speaker = isObject(ctx.speaker) ? ctx.speaker : {};
		let result: unknown;
		try {
			result = await runCompactor(
				(signal) =>
					compactor(request as CompactRequest, {
						channel,
						profile: String(ctx.profile),
						speaker: { id: String(speaker.id), name: String(speaker.name) },
						turnId,
						engine: String(ctx.engine),
						timeoutMs,
						signal,
					}),
				timeoutMs,
				this.turns.get(turnKey(channel, turnId))?.controller.signal,
			);
		} catch (e) {
			// The daemon then falls back to Pi's own summary.
			if (e instanceof CompactorStopped) this.logger.warn?.({ channel, turnId, timeoutMs }, e.message);
			else this.logger.warn?.({ channel, turnId, err: messageOf(e) }, "compactor threw");
			throw e instanceof CompactorStopped ? hookError(RpcCode.APP_ERROR, e.message) : e;
		}
		if (result === undefined || result === null) return null;
		const problem = compactionProblem(result, request.firstKeptEntryId);
		if (problem !== null) {
			this.logger.warn?.({ channel, turnId, problem }, "compactor answered a compaction the daemon refuses");
			throw hookError(RpcCode.APP_ERROR, `the compactor's result is invalid: ${problem}`);
		}
		return compactionToWire(result as Record<string, unknown>);
	}

	private async searchQuery(params: Record<string, unknown>): Promise<unknown> {
		const channel = String(params.channel);
		const job = (this.jobs.get(channel) ?? []).find((j) => j.search !== undefined);
		const search = job?.search ?? this.options.search;
		if (search === undefined) throw hookError(RpcCode.METHOD_NOT_FOUND, "web_search is not available");
		const signal = job?.controller.signal ?? new AbortController().signal;
		const text = await search(String(params.query), { channel, signal });
		return { text: String(text) };
	}
}

function cancelledTurn(message: string): TurnResult {
	return { ok: false, error: { reason: "cancelled", message } };
}

function turnFromWire(r: unknown): TurnResult {
	if (isObject(r) && r.ok === true && typeof r.text === "string" && Array.isArray(r.files)) {
		const files: ReplyFile[] = r.files.map((f: unknown) => {
			const o = isObject(f) ? f : {};
			return { name: String(o.name), data: fromBase64(String(o.data)) };
		});
		return { ok: true, text: r.text, files };
	}
	if (isObject(r) && r.ok === false) {
		const reason = TURN_REASONS.includes(r.reason as TurnFailureReason)
			? (r.reason as TurnFailureReason)
			: "internal";
		const error: TurnError = {
			reason,
			message: typeof r.message === "string" ? r.message : "the turn failed",
		};
		if (typeof r.workerError === "string") error.workerError = r.workerError;
		return { ok: false, error };
	}
	return { ok: false, error: { reason: "internal", message: "turn.run: an answer of no known shape" } };
}
