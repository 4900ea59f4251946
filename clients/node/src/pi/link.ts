/**
 * One connection to rtsandboxd for the Pi-mode surface: the hooks it serves
 * and the daemon's configuration (daemon.config), read once per connection.
 */
import { Connection } from "../connection.js";
import { RpcCode, RtsandboxRpcError } from "../errors.js";
import { DEFAULT_SOCKET } from "../runtime.js";

/** What daemon.config answers: the fields of rtsandboxd.json a bot may rely on. */
export interface DaemonConfig {
	version: string;
	state_dir: string;
	image: string;
	profiles: Record<string, { model: string; mcp?: string[] }>;
	upstream: { url: string; credential: "file" | "hook" };
	mcp: {
		servers: { name: string; url: string; tools: string[] }[];
		allow_http: boolean;
		credential: "file" | "hook" | "none";
	};
	tools: string[];
	docker: { container_prefix: string; label_channel: string; label_profile: string };
	time_zone: string;
	timeouts: { start_ms: number; turn_ms: number };
	budgets: { max_calls: number; max_output_tokens: number };
	default_thinking: string;
	bot_group: string | null;
	/** research.model, when the daemon reports it. */
	research?: { model?: string };
	/** The precheck section, null without one. */
	precheck?: {
		entrypoint: string[];
		timeout_ms: number;
		max_calls: number;
		max_runs: number;
		limits: { memory_mib: number; cpus: number; pids: number };
	} | null;
}

export interface HookError extends Error {
	code: number;
}

export function hookError(code: number, message: string): HookError {
	const e = new Error(message) as HookError;
	e.code = code;
	return e;
}

export interface LinkLogger {
	debug?(obj: object, msg?: string): void;
	info?(obj: object, msg?: string): void;
	warn?(obj: object, msg?: string): void;
	error?(obj: object, msg?: string): void;
}

export interface LinkOptions {
	socket?: string;
	client: string;
	hooks: string[];
	/** Hooks an older daemon may refuse; they are then left out. */
	optionalHooks?: string[];
	logger: LinkLogger;
	onRequest(method: string, params: Record<string, unknown>): Promise<unknown>;
	onNotification?(method: string, params: unknown): void;
}

export function defaultSocket(): string {
	return process.env.RTSANDBOX_CONTROL_SOCKET ?? DEFAULT_SOCKET;
}

function isRecord(v: unknown): v is Record<string, unknown> {
	return typeof v === "object" && v !== null && !Array.isArray(v);
}

export class Link {
	readonly socket: string;
	readonly conn: Connection;
	private configPromise: Promise<DaemonConfig> | null = null;
	private known: DaemonConfig | null = null;

	constructor(opts: LinkOptions) {
		this.socket = opts.socket ?? defaultSocket();
		this.conn = new Connection({
			socket: this.socket,
			clientName: opts.client,
			hooks: [...opts.hooks],
			optionalHooks: opts.optionalHooks,
			onRequest: async (method, params) => {
				if (!isRecord(params)) throw hookError(RpcCode.INVALID_PARAMS, `${method}: params must be an object`);
				return opts.onRequest(method, params);
			},
			onNotification: (method, params) => opts.onNotification?.(method, params),
			logger: opts.logger,
			connectTimeoutMs: 30000,
			reconnectInitialMs: 100,
			reconnectMaxMs: 5000,
		});
		// A daemon that restarted may have another configuration.
		this.conn.on("connected", () => {
			this.configPromise = null;
		});
	}

	/** The configuration as last read, or null before the first call. */
	get config(): DaemonConfig | null {
		return this.known;
	}

	/** daemon.config, read once per connection. */
	readConfig(): Promise<DaemonConfig> {
		if (this.configPromise === null) {
			const p = this.conn
				.call<unknown>("daemon.config")
				.result.then((c) => {
					if (!isRecord(c) || typeof c.state_dir !== "string")
						throw new Error(`rtsandboxd at ${this.socket} answered daemon.config without state_dir`);
					this.known = c as unknown as DaemonConfig;
					return this.known;
				})
				.catch((e: unknown) => {
					if (this.configPromise === p) this.configPromise = null;
					if (e instanceof RtsandboxRpcError && e.code === RpcCode.METHOD_NOT_FOUND)
						throw new Error(
							`rtsandboxd at ${this.socket} has no daemon.config: it is older than this client; update rtsandboxd`,
						);
					throw e;
				});
			this.configPromise = p;
		}
		return this.configPromise;
	}

	call<T>(method: string, params?: object): Promise<T> {
		return this.conn.call<T>(method, params).result;
	}

	close(): Promise<void> {
		return this.conn.close();
	}
}

/** One shared link per socket for the free functions (safeFetch, collectPiAttachments). */
const shared = new Map<string, Link>();

export function sharedLink(socket?: string): Link {
	const path = socket ?? defaultSocket();
	let link = shared.get(path);
	if (link === undefined) {
		link = new Link({
			socket: path,
			client: "pi-roundtable-sandbox",
			hooks: [],
			logger: {},
			onRequest: async (method) => {
				throw hookError(RpcCode.METHOD_NOT_FOUND, `no hook ${method}`);
			},
		});
		shared.set(path, link);
	}
	return link;
}

/** PROTOCOL.md 6: every UTF-16 code unit outside [A-Za-z0-9_-] becomes "_". */
export function channelSegment(channel: string): string {
	let out = "";
	for (let i = 0; i < channel.length; i++) {
		const c = channel.charCodeAt(i);
		const ok =
			(c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c === 0x2d;
		out += ok ? channel[i] : "_";
	}
	return out;
}

/** A research job in flight on a link: who serves its web_search. */
export interface ResearchJob {
	channel: string;
	search(query: string, signal: AbortSignal): Promise<string>;
	controller: AbortController;
}

const SEARCH_TEXT_MAX = 100000;

/** The jobs of one link, by channel, and the search.query hook that serves them. */
export class ResearchJobs {
	private readonly jobs = new Map<string, ResearchJob[]>();

	add(job: ResearchJob): () => void {
		const list = this.jobs.get(job.channel) ?? [];
		list.push(job);
		this.jobs.set(job.channel, list);
		return () => {
			const now = (this.jobs.get(job.channel) ?? []).filter((j) => j !== job);
			if (now.length > 0) this.jobs.set(job.channel, now);
			else this.jobs.delete(job.channel);
		};
	}

	/** search.query {channel, query} → {text}; a job's search that throws tells the model the search failed. */
	async serve(params: Record<string, unknown>, logger: LinkLogger): Promise<unknown> {
		const channel = String(params.channel);
		const job = (this.jobs.get(channel) ?? [])[0];
		if (job === undefined) throw hookError(RpcCode.METHOD_NOT_FOUND, "web_search is not available");
		let text: unknown;
		try {
			text = await job.search(String(params.query), job.controller.signal);
		} catch (e) {
			logger.warn?.({ channel, err: e instanceof Error ? e.message : String(e) }, "research search failed");
			throw hookError(RpcCode.APP_ERROR, "search failed");
		}
		if (typeof text !== "string") throw hookError(RpcCode.APP_ERROR, "search answered no text");
		return { text: cutText(text, SEARCH_TEXT_MAX) };
	}
}

/** At most max UTF-16 units, never ending on half a surrogate pair. */
export function cutText(text: string, max: number): string {
	if (text.length <= max) return text;
	const c = text.charCodeAt(max - 1);
	return text.slice(0, c >= 0xd800 && c <= 0xdbff ? max - 1 : max);
}

/** Aborted when any of the signals is; AbortSignal.any where Node lacks it. */
export function anySignal(signals: AbortSignal[]): AbortSignal {
	const c = new AbortController();
	for (const s of signals) {
		if (s.aborted) {
			c.abort(s.reason);
			break;
		}
		s.addEventListener("abort", () => c.abort(s.reason), { once: true });
	}
	return c.signal;
}

/** Aborted after ms, unref'd so that it keeps no process alive. */
export function timeoutSignal(ms: number): AbortSignal {
	const c = new AbortController();
	const t = setTimeout(() => c.abort(new DOMException("The operation timed out.", "TimeoutError")), ms);
	(t as { unref?: () => void }).unref?.();
	return c.signal;
}
