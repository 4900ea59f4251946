/**
 * PiSandboxRuntime with pi-roundtable-sandbox 0.7.3's options, methods and
 * results, over rtsandboxd.  The daemon holds the containers, brokers and
 * credentials; the options that describe them are checked against its
 * configuration (daemon.config) at the first call, and the bot's callbacks
 * are served as the daemon's hooks.
 */
import * as fs from "node:fs";
import * as path from "node:path";

import { compactionProblem, compactionToWire, compactTimeout, CompactorStopped, runCompactor } from "../compaction.js";
import type { Call } from "../connection.js";
import { RpcCode, RtsandboxConnectionError, RtsandboxRpcError } from "../errors.js";
import { AgentRunError, type ChannelKey, type Logger } from "./core.js";
import {
	channelSegment,
	cutText,
	hookError,
	Link,
	ResearchJobs,
	type DaemonConfig,
	type LinkLogger,
} from "./link.js";
import {
	isPiThinkingLevel,
	validateCompactRequest,
	validateImages,
	type PiCompaction,
	type PiCompactRequest,
	type PiImage,
	type PiThinkingLevel,
	type PiToolResponse,
} from "./protocol.js";

/** The bound identity of the turn a host tool call belongs to. */
export interface PiHostContext {
	channel: ChannelKey;
	profile: string;
	speaker: { id: string; name: string };
	/** The host-judged level for this turn. */
	thinking: PiThinkingLevel;
	/** Aborted when the turn settles. */
	signal: AbortSignal;
}

export interface PiMcpServer {
	name: string;
	url: string;
	tools: readonly string[];
}

/**
 * The bounds of a host compactor, as pi-roundtable-sandbox has them.  In
 * rtsandbox the daemon applies its own (compaction in rtsandboxd.json: 3
 * compactions and 16 reports a turn, timeout_ms and max_request_bytes with
 * these defaults).
 */
export const PI_COMPACT_LIMITS = {
	/** A larger compact request falls back to Pi's summary unread. */
	requestBytes: 32 * 1024 * 1024,
	/** A compactor still running after this falls back to Pi's summary. */
	timeoutMs: 120000,
	/** Compact requests one turn may make; the rest fall back to Pi's summary. */
	compactsPerTurn: 3,
	/** Compaction reports one turn may send. */
	reportsPerTurn: 16,
} as const;

/**
 * Compacts a sandbox session on the host.  Served as rtsandboxd's
 * compaction.compact hook; the daemon's configuration (compaction in
 * rtsandboxd.json) says whether the workers are told of it, its engine, its
 * time and the largest request.
 */
export interface PiCompactor {
	/**
	 * The engine its compactions record in their details.  rtsandboxd records
	 * its compaction.engine instead; a difference is logged once.
	 */
	engine: string;
	/**
	 * A compaction, or undefined to leave it to Pi's own summary; a throw
	 * also falls back.  signal is aborted after the time the daemon gives
	 * (at most compaction.timeout_ms, and half what the turn has left), or
	 * when the turn ends.
	 */
	compact(request: PiCompactRequest, context: { channel: ChannelKey; signal: AbortSignal }): Promise<PiCompaction | undefined>;
	/** Checked as pi-roundtable-sandbox checks it (1 000 to 600 000); rtsandboxd's compaction.timeout_ms applies. */
	timeoutMs?: number;
	/** Checked as pi-roundtable-sandbox checks it (1 to 96 MiB); rtsandboxd's compaction.max_request_bytes applies. */
	maxRequestBytes?: number;
}

export interface PiProfile {
	model: string;
	mcp?: readonly string[];
}

export type PiContainerState = "missing" | "running" | "stopped";

export interface PiContainerStatus {
	state: PiContainerState;
	image?: string;
	profile?: string;
}

export interface PiContainerSpec {
	name: string;
	image: string;
	channel: string;
	profile: string;
	timeZone?: string;
	labelChannel?: string;
	labelProfile?: string;
	runDir: string;
	workspaceDir: string;
	uid: number;
	gid: number;
}

/** 0.7.3's container driver; rtsandboxd is the only driver here, so the option is refused. */
export interface PiContainerDriver {
	ensureRunning(spec: PiContainerSpec): Promise<void>;
	remove(name: string): Promise<void>;
	status(name: string): Promise<PiContainerStatus>;
}

export interface PiSandboxRuntimeOptions {
	/** rtsandboxd's state_dir: the channels' files are <partyDir>/<segment>/workspace. */
	partyDir: string;
	/** rtsandboxd's image. */
	image: string;
	/** rtsandboxd's profiles. */
	profiles: Readonly<Record<string, PiProfile>>;
	/** Refused: rtsandboxd runs the containers. */
	driver?: PiContainerDriver;
	/** Called for each model call when rtsandboxd's upstream.credential is "hook". */
	oauthToken: () => string | Promise<string>;
	tools?: {
		names: readonly string[];
		call(name: string, input: Record<string, unknown>, context: PiHostContext): Promise<PiToolResponse>;
	};
	/** servers: rtsandboxd's mcp.servers; token() is called for each MCP call when mcp.credential is "hook". */
	mcp?: {
		servers: readonly PiMcpServer[];
		token: () => string | Promise<string>;
	};
	/** rtsandboxd's upstream.url. */
	upstream?: string;
	/** Refused: rtsandboxd's egress makes every upstream call. */
	fetchImpl?: (url: string, init: RequestInit) => Promise<Response>;
	/** rtsandboxd's budgets.max_calls. */
	maxCalls?: number;
	/** rtsandboxd's budgets.max_output_tokens. */
	maxOutputTokens?: number;
	/** rtsandboxd's mcp.allow_http. */
	allowHttpMcp?: boolean;
	/**
	 * Host-side compaction, served as the compaction.compact hook; the
	 * daemon asks it only when rtsandboxd.json has compaction.
	 */
	compaction?: PiCompactor;
	memory: {
		promptBlock(channel: ChannelKey, id: string, name: string): Promise<string>;
	};
	effort: {
		judge(text: string, previous: { level: PiThinkingLevel | undefined }): Promise<PiThinkingLevel>;
	};
	logger: Logger;
	/** rtsandboxd's time_zone. */
	timeZone?: string;
	/** rtsandboxd's docker.container_prefix. */
	containerPrefix?: string;
	/** rtsandboxd's docker.label_channel. */
	labelChannel?: string;
	/** rtsandboxd's docker.label_profile. */
	labelProfile?: string;
	/** rtsandboxd's timeouts.start_ms. */
	startTimeoutMs?: number;
	/** rtsandboxd's timeouts.turn_ms. */
	turnTimeoutMs?: number;
	/** rtsandboxd's control socket; default $RTSANDBOX_CONTROL_SOCKET, else /run/rtsandbox/control.sock. */
	socket?: string;
}

export interface PiSandboxTurn {
	channel: ChannelKey;
	profile: string;
	turnId: string;
	author: { id: string; name: string };
	text: string;
	images: PiImage[];
	signal?: AbortSignal;
}

/** rtsandbox's reason a turn failed (rtsandbox-protocol(7)). */
export type PiTurnFailureReason =
	| "busy"
	| "invalid"
	| "start_failed"
	| "timeout"
	| "cancelled"
	| "worker_failed"
	| "stale_image"
	| "internal";

/**
 * A failed turn's error: an AgentRunError worded as 0.7.3's ("Channel is
 * busy", "Sandbox turn failed"), with rtsandbox's reason and the daemon's
 * message beside the message.
 */
export interface PiTurnError extends AgentRunError {
	reason?: PiTurnFailureReason;
	/** The daemon's own words. */
	detail?: string;
	/** The worker's text (written by the guest) when reason is worker_failed. */
	workerError?: string;
}

export type PiSandboxTurnResult =
	| { ok: true; text: string; files: { name: string; data: Uint8Array }[] }
	| { ok: false; error: PiTurnError };

/** One difference between a 0.7.3 option and rtsandboxd's configuration. */
export interface ConfigDifference {
	option: string;
	/** The option's value (its 0.7.3 default when left out). */
	bot: unknown;
	/** What rtsandboxd reports. */
	daemon: unknown;
	/** The field of rtsandboxd.json to change. */
	field: string;
}

/** The bot's options do not describe the daemon it talks to. */
export class RtsandboxConfigError extends Error {
	override name = "RtsandboxConfigError";
	readonly differences: ConfigDifference[];

	constructor(socket: string, differences: ConfigDifference[]) {
		const lines = differences.map(
			(d) =>
				`${d.option} is ${show(d.bot)} but rtsandboxd has ${show(d.daemon)}: change ${d.field} in rtsandboxd.json (or the option)`,
		);
		super(`PiSandboxRuntime options differ from rtsandboxd's configuration (${socket}):\n  ${lines.join("\n  ")}`);
		this.differences = differences;
	}
}

function show(v: unknown): string {
	return v === undefined ? "unset" : JSON.stringify(v);
}

const TURN_REASONS: readonly PiTurnFailureReason[] = [
	"busy",
	"invalid",
	"start_failed",
	"timeout",
	"cancelled",
	"worker_failed",
	"stale_image",
	"internal",
];
const DEFAULT_UPSTREAM = "https://api.anthropic.com";
const DEFAULT_PREFIX = "roundtable-sandbox";
const DEFAULT_LABEL_CHANNEL = "roundtable.sandbox.channel";
const DEFAULT_LABEL_PROFILE = "roundtable.sandbox.profile";
/** The daemon waits 10 s for a credential; answer before it gives up. */
const CREDENTIAL_WAIT_MS = 9000;
const TOOL_TEXT_MAX = 1000000;
const TOOL_ERROR_MAX = 10000;
const CHANNEL_CHARS_MAX = 256;
const COMPACT_ENGINE = /^[a-zA-Z0-9@/._-]{1,100}$/;
const COMPACT_REQUEST_BYTES_MAX = 96 * 1024 * 1024;

function isRecord(v: unknown): v is Record<string, unknown> {
	return typeof v === "object" && v !== null && !Array.isArray(v);
}

function messageOf(e: unknown): string {
	return e instanceof Error ? e.message : String(e);
}

/** The daemon's own words of an RPC error, without "method: " and " (code)". */
function daemonWords(e: RtsandboxRpcError): string {
	let m = e.message;
	if (m.startsWith(`${e.method}: `)) m = m.slice(e.method.length + 2);
	const tail = ` (${e.code})`;
	if (m.endsWith(tail)) m = m.slice(0, -tail.length);
	return m;
}

/** A lifecycle failure as 0.7.3 throws it: an Error in the daemon's words, the RPC error as its cause. */
function lifecycleError(e: unknown): unknown {
	if (e instanceof RtsandboxRpcError) {
		const err = new Error(daemonWords(e), { cause: e });
		return err;
	}
	return e;
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
	const x = [...(a ?? [])].sort();
	const y = [...(b ?? [])].sort();
	return x.length === y.length && x.every((v, i) => v === y[i]);
}

function trimSlash(url: string): string {
	return url.endsWith("/") ? url.slice(0, -1) : url;
}

function turnFailed(
	message: "Channel is busy" | "Sandbox turn failed",
	reason: PiTurnFailureReason,
	detail: string,
	workerError?: string,
): PiSandboxTurnResult {
	const error = new AgentRunError(message) as PiTurnError;
	error.reason = reason;
	error.detail = detail;
	if (workerError !== undefined) error.workerError = workerError;
	return { ok: false, error };
}

/** Runs every promise with a deadline; the getter's own value or error never reaches the daemon's logs. */
function within<T>(ms: number, p: Promise<T>): Promise<T> {
	return new Promise<T>((resolve, reject) => {
		const t = setTimeout(() => reject(new Error("timed out")), ms);
		p.then(
			(v) => {
				clearTimeout(t);
				resolve(v);
			},
			(e) => {
				clearTimeout(t);
				reject(e);
			},
		);
	});
}

interface ActiveTurn {
	controller: AbortController;
}

/** The runtimes of this process, for collectPiAttachments to find a channel's directory. */
export const runtimes = new Set<PiSandboxRuntime>();

/** Opt-in full Pi mode over rtsandboxd. */
export class PiSandboxRuntime {
	readonly #options: PiSandboxRuntimeOptions;
	readonly #partyDir: string;
	readonly #link: Link;
	readonly #jobs = new ResearchJobs();
	readonly #turns = new Map<string, ActiveTurn>();
	readonly #segments = new Map<string, string>();
	#checked: Promise<DaemonConfig> | null = null;
	#checkedConfig: DaemonConfig | null = null;
	/** The daemon's engines already told to differ from the compactor's. */
	readonly #engineWarned = new Set<string>();

	constructor(options: PiSandboxRuntimeOptions) {
		if (options.driver !== undefined)
			throw new Error(
				"driver is not supported: rtsandboxd runs the channels' containers itself (its docker settings in rtsandboxd.json); leave driver out",
			);
		if (options.fetchImpl !== undefined)
			throw new Error(
				"fetchImpl is not supported: rtsandboxd's egress makes every model and MCP call (upstream and mcp in rtsandboxd.json); leave fetchImpl out",
			);
		if (typeof options.partyDir !== "string" || !path.isAbsolute(options.partyDir) || options.partyDir === "/")
			throw new Error("Dedicated absolute state directory required");
		if (!/^[a-z0-9][a-z0-9-]{0,40}$/.test(options.containerPrefix ?? DEFAULT_PREFIX))
			throw new Error("Invalid container prefix");
		for (const timeout of [options.turnTimeoutMs ?? 600000, options.startTimeoutMs ?? 90000])
			if (!Number.isSafeInteger(timeout) || timeout < 1000 || timeout > 600000)
				throw new Error("Invalid runtime deadline");
		if (options.compaction) checkCompactor(options.compaction, options.turnTimeoutMs ?? 600000);
		this.#options = options;
		this.#partyDir = path.resolve(options.partyDir);
		const hooks = ["search.query", "memory.block", "effort.judge"];
		if (options.tools !== undefined) hooks.push("tool.call");
		if (options.oauthToken !== undefined || options.mcp?.token !== undefined) hooks.push("credential.get");
		if (options.compaction) hooks.push("compaction.compact");
		this.#link = new Link({
			socket: options.socket,
			client: "pi-sandbox-runtime",
			hooks,
			// a daemon without credential.get never asks: its daemon.config
			// says "file"; one without compaction.compact has its workers
			// compact with Pi's summary alone
			optionalHooks: ["credential.get", "compaction.compact"],
			logger: this.#log,
			onRequest: (method, params) => this.#serve(method, params),
		});
		this.#link.conn.on("connected", () => {
			this.#checked = null;
		});
		runtimes.add(this);
	}

	/** The logger's methods, each called only when there. */
	get #log(): LinkLogger {
		const l = this.#options.logger as Partial<Logger> | undefined;
		return {
			debug: (o, m) => l?.debug?.call(l, o, m),
			info: (o, m) => l?.info?.call(l, o, m),
			warn: (o, m) => l?.warn?.call(l, o, m),
			error: (o, m) => l?.error?.call(l, o, m),
		};
	}

	/** The control socket this runtime talks to. */
	get socket(): string {
		return this.#link.socket;
	}

	/** @internal the connection, for SandboxResearchWorker and collectPiAttachments. */
	get link(): Link {
		return this.#link;
	}

	/** @internal */
	get researchJobs(): ResearchJobs {
		return this.#jobs;
	}

	/**
	 * Connects and compares the options with daemon.config, once per
	 * connection; rejects with RtsandboxConfigError on a difference.
	 */
	ready(): Promise<DaemonConfig> {
		if (this.#checked === null) {
			const p = this.#link.readConfig().then((config) => {
				this.#compare(config);
				this.#checkedConfig = config;
				return config;
			});
			this.#checked = p;
			// A connection failure is tried again at the next call; a
			// difference stays until the daemon comes back changed.
			p.catch((e: unknown) => {
				if (this.#checked === p && !(e instanceof RtsandboxConfigError)) this.#checked = null;
			});
		}
		return this.#checked;
	}

	#compare(c: DaemonConfig): void {
		const o = this.#options;
		const diffs: ConfigDifference[] = [];
		const diff = (option: string, bot: unknown, daemon: unknown, field: string): void => {
			diffs.push({ option, bot, daemon, field });
		};
		if (!this.#sameDir(c.state_dir)) diff("partyDir", o.partyDir, c.state_dir, "state_dir");
		if (o.image !== c.image) diff("image", o.image, c.image, "image");
		for (const [name, p] of Object.entries(o.profiles ?? {})) {
			const d = Object.prototype.hasOwnProperty.call(c.profiles ?? {}, name) ? c.profiles[name] : undefined;
			if (d === undefined) {
				diff(`profiles.${name}`, p, undefined, `profiles.${name}`);
				continue;
			}
			if (p.model !== d.model) diff(`profiles.${name}.model`, p.model, d.model, `profiles.${name}.model`);
			if (!sameList(p.mcp, d.mcp)) diff(`profiles.${name}.mcp`, p.mcp ?? [], d.mcp ?? [], `profiles.${name}.mcp`);
		}
		const servers = c.mcp?.servers ?? [];
		for (const s of o.mcp?.servers ?? []) {
			const i = servers.findIndex((d) => d.name === s.name);
			if (i < 0) {
				diff(`mcp.servers (${s.name})`, s, undefined, "mcp.servers");
				continue;
			}
			const d = servers[i];
			if (trimSlash(s.url) !== trimSlash(d.url)) diff(`mcp.servers (${s.name}).url`, s.url, d.url, `mcp.servers[${i}].url`);
			if (!sameList(s.tools, d.tools))
				diff(`mcp.servers (${s.name}).tools`, s.tools, d.tools, `mcp.servers[${i}].tools`);
		}
		for (const name of o.tools?.names ?? [])
			if (!(c.tools ?? []).includes(name)) diff(`tools.names (${name})`, name, c.tools ?? [], "tools");
		const upstream = trimSlash(o.upstream ?? DEFAULT_UPSTREAM);
		if (upstream !== trimSlash(c.upstream?.url ?? "")) diff("upstream", upstream, c.upstream?.url, "upstream.url");
		const num = (option: string, bot: number, daemon: number | undefined, field: string): void => {
			if (bot !== daemon) diff(option, bot, daemon, field);
		};
		num("maxCalls", o.maxCalls ?? 128, c.budgets?.max_calls, "budgets.max_calls");
		num("maxOutputTokens", o.maxOutputTokens ?? 128000, c.budgets?.max_output_tokens, "budgets.max_output_tokens");
		num("startTimeoutMs", o.startTimeoutMs ?? 90000, c.timeouts?.start_ms, "timeouts.start_ms");
		num("turnTimeoutMs", o.turnTimeoutMs ?? 600000, c.timeouts?.turn_ms, "timeouts.turn_ms");
		if ((o.allowHttpMcp ?? false) !== c.mcp?.allow_http)
			diff("allowHttpMcp", o.allowHttpMcp ?? false, c.mcp?.allow_http, "mcp.allow_http");
		if ((o.timeZone ?? "UTC") !== c.time_zone) diff("timeZone", o.timeZone ?? "UTC", c.time_zone, "time_zone");
		const docker = c.docker ?? ({} as DaemonConfig["docker"]);
		if ((o.containerPrefix ?? DEFAULT_PREFIX) !== docker.container_prefix)
			diff("containerPrefix", o.containerPrefix ?? DEFAULT_PREFIX, docker.container_prefix, "docker.container_prefix");
		if ((o.labelChannel ?? DEFAULT_LABEL_CHANNEL) !== docker.label_channel)
			diff("labelChannel", o.labelChannel ?? DEFAULT_LABEL_CHANNEL, docker.label_channel, "docker.label_channel");
		if ((o.labelProfile ?? DEFAULT_LABEL_PROFILE) !== docker.label_profile)
			diff("labelProfile", o.labelProfile ?? DEFAULT_LABEL_PROFILE, docker.label_profile, "docker.label_profile");
		if (c.upstream?.credential === "hook" && typeof o.oauthToken !== "function")
			diff("oauthToken", undefined, "hook", "upstream.credential");
		if (c.mcp?.credential === "hook" && typeof o.mcp?.token !== "function")
			diff("mcp.token", undefined, "hook", "mcp.credential");
		if (diffs.length > 0) throw new RtsandboxConfigError(this.#link.socket, diffs);
		if (c.upstream?.credential === "file" && typeof o.oauthToken === "function")
			this.#log.info?.(
				{ socket: this.#link.socket },
				"rtsandboxd reads the model credential from upstream.credential_file; oauthToken is not called",
			);
		for (const name of c.tools ?? [])
			if (!(o.tools?.names ?? []).includes(name))
				this.#log.warn?.({ tool: name }, "rtsandboxd's tools lists a tool this runtime does not serve; its calls fail");
	}

	#sameDir(stateDir: string): boolean {
		if (typeof stateDir !== "string") return false;
		if (path.resolve(stateDir) === this.#partyDir) return true;
		try {
			return fs.realpathSync(this.#partyDir) === fs.realpathSync(stateDir);
		} catch {
			return false;
		}
	}

	/** <state_dir>/<segment>/workspace, as rtsandboxd makes it (PROTOCOL.md 6). */
	#workspace(channel: ChannelKey): string {
		const dir = this.workspaceOf(channel);
		const segment = path.basename(path.dirname(dir));
		const other = this.#segments.get(segment);
		if (other !== undefined && other !== channel) throw new Error("Channel workspace alias refused");
		this.#segments.set(segment, channel);
		return dir;
	}

	/** @internal The channel's workspace, without taking its segment. */
	workspaceOf(channel: ChannelKey): string {
		if (typeof channel !== "string" || channel.length === 0 || channel.length > CHANNEL_CHARS_MAX)
			throw new Error("Channel key too long");
		const root = this.#checkedConfig !== null ? path.resolve(this.#checkedConfig.state_dir) : this.#partyDir;
		return path.join(root, channelSegment(channel), "workspace");
	}

	attachmentDir(channel: ChannelKey): string {
		return path.join(this.#workspace(channel), "attachments");
	}

	sessionsDir(channel: ChannelKey): string {
		return path.join(this.#workspace(channel), "sessions");
	}

	async status(channel: ChannelKey): Promise<PiContainerStatus> {
		await this.ready();
		let r: Record<string, unknown>;
		try {
			r = await this.#link.call<Record<string, unknown>>("channel.status", { channel });
		} catch (e) {
			throw lifecycleError(e);
		}
		const out: PiContainerStatus = { state: r.state as PiContainerState };
		if (typeof r.image === "string") out.image = r.image;
		if (typeof r.profile === "string") out.profile = r.profile;
		return out;
	}

	async start(channel: ChannelKey, profile: string): Promise<void> {
		await this.ready();
		if (!Object.prototype.hasOwnProperty.call(this.#options.profiles, profile)) throw new Error("Unknown profile");
		try {
			await this.#link.call("channel.start", { channel, profile });
		} catch (e) {
			throw lifecycleError(e);
		}
	}

	async stop(channel: ChannelKey): Promise<void> {
		await this.ready();
		try {
			await this.#link.call("channel.stop", { channel });
		} catch (e) {
			throw lifecycleError(e);
		}
	}

	async startFresh(channel: ChannelKey): Promise<void> {
		await this.ready();
		let r: { archived?: number; folder?: string };
		try {
			r = await this.#link.call<{ archived?: number; folder?: string }>("channel.fresh", { channel });
		} catch (e) {
			throw lifecycleError(e);
		}
		this.#log.info?.({ channel, archived: r.archived ?? 0 }, "Sandbox conversation archived");
	}

	async stopBrokers(): Promise<void> {
		for (const t of this.#turns.values()) t.controller.abort();
		await this.ready();
		try {
			await this.#link.call("daemon.stop_brokers");
		} catch (e) {
			throw lifecycleError(e);
		}
	}

	/** Closes the connection to rtsandboxd; calls in flight fail.  Not in 0.7.3, which had none. */
	async close(): Promise<void> {
		runtimes.delete(this);
		for (const t of this.#turns.values()) t.controller.abort();
		await this.#link.close();
	}

	async runTurn(turn: PiSandboxTurn): Promise<PiSandboxTurnResult> {
		try {
			await this.ready();
		} catch (e) {
			// The daemon out of reach is a failed turn; options that do
			// not describe it are the bot's to fix, and throw.
			if (e instanceof RtsandboxConnectionError) return turnFailed("Sandbox turn failed", "internal", e.message);
			throw e;
		}
		const { channel, signal } = turn;
		if (signal?.aborted) return turnFailed("Sandbox turn failed", "cancelled", "The turn was cancelled before it started");
		if (!Object.prototype.hasOwnProperty.call(this.#options.profiles, turn.profile))
			return turnFailed("Sandbox turn failed", "invalid", "Unknown profile");
		try {
			validateImages(turn.images ?? []);
		} catch (e) {
			return turnFailed("Sandbox turn failed", "invalid", messageOf(e));
		}
		const params = {
			channel,
			profile: turn.profile,
			turnId: turn.turnId,
			author: { id: turn.author?.id, name: turn.author?.name },
			text: turn.text,
			images: (turn.images ?? []).map((i) => ({ data: i.data, mimeType: i.mimeType })),
		};
		const key = `${channel}\u0000${turn.turnId}`;
		const active: ActiveTurn = { controller: new AbortController() };
		const mine = !this.#turns.has(key);
		if (mine) this.#turns.set(key, active);
		const call = this.#link.conn.call<unknown>("turn.run", params);
		const onAbort = (): void => call.cancel();
		signal?.addEventListener("abort", onAbort, { once: true });
		try {
			return fromWire(await call.result);
		} catch (e) {
			return await this.#failed(e, channel, call);
		} finally {
			signal?.removeEventListener("abort", onAbort);
			active.controller.abort();
			if (mine) this.#turns.delete(key);
		}
	}

	async #failed(e: unknown, channel: string, call: Call): Promise<PiSandboxTurnResult> {
		if (e instanceof RtsandboxRpcError && e.code === RpcCode.REQUEST_CANCELLED) {
			// Answered at once; the removal of the container is queued with
			// the channel's operations, so channel.paths returns after it.
			if (call.sent()) await this.#link.call("channel.paths", { channel }).catch(() => undefined);
			return turnFailed("Sandbox turn failed", "cancelled", "The turn was cancelled");
		}
		if (e instanceof RtsandboxConnectionError) {
			this.#log.warn?.({ channel, err: e.message }, "turn failed with the connection to rtsandboxd");
			return turnFailed("Sandbox turn failed", "internal", e.message);
		}
		if (e instanceof RtsandboxRpcError) {
			const reason = e.code === RpcCode.INVALID_PARAMS || e.code === RpcCode.INVALID_REQUEST ? "invalid" : "internal";
			return turnFailed("Sandbox turn failed", reason, daemonWords(e));
		}
		throw e;
	}

	async #serve(method: string, params: Record<string, unknown>): Promise<unknown> {
		switch (method) {
			case "tool.call":
				return this.#toolCall(params);
			case "memory.block":
				return this.#memory(params);
			case "effort.judge":
				return this.#judge(params);
			case "credential.get":
				return this.#credential(params);
			case "search.query":
				return this.#jobs.serve(params, this.#log);
			case "compaction.compact":
				return this.#compact(params);
			default:
				throw hookError(RpcCode.METHOD_NOT_FOUND, `no hook ${method}`);
		}
	}

	async #memory(params: Record<string, unknown>): Promise<unknown> {
		const channel = String(params.channel) as ChannelKey;
		let text: unknown;
		try {
			text = await this.#options.memory.promptBlock(channel, String(params.id), String(params.name));
		} catch (e) {
			// The daemon fails the turn, as 0.7.3 did.
			this.#log.warn?.({ channel, err: messageOf(e) }, "memory.promptBlock failed");
			throw hookError(RpcCode.APP_ERROR, "memory hook failed");
		}
		if (typeof text !== "string") {
			this.#log.warn?.({ channel }, "memory.promptBlock answered no string");
			throw hookError(RpcCode.APP_ERROR, "memory hook failed");
		}
		return { text };
	}

	async #judge(params: Record<string, unknown>): Promise<unknown> {
		// previous is left out (or null) until a level was judged for the channel
		const previous = isPiThinkingLevel(params.previous) ? params.previous : undefined;
		let level: unknown;
		try {
			level = await this.#options.effort.judge(String(params.text), { level: previous });
		} catch (e) {
			this.#log.warn?.({ err: messageOf(e) }, "effort.judge failed");
			throw hookError(RpcCode.APP_ERROR, "effort hook failed");
		}
		if (!isPiThinkingLevel(level)) {
			this.#log.warn?.({ level: String(level) }, "effort.judge answered no thinking level");
			throw hookError(RpcCode.APP_ERROR, "effort hook failed");
		}
		return { level };
	}

	async #toolCall(params: Record<string, unknown>): Promise<unknown> {
		const tools = this.#options.tools;
		const name = String(params.name);
		const ctx = isRecord(params.context) ? params.context : {};
		const channel = String(ctx.channel) as ChannelKey;
		if (tools === undefined || !tools.names.includes(name)) {
			this.#log.warn?.({ channel, tool: name }, "a host tool this runtime does not serve");
			throw hookError(RpcCode.APP_ERROR, "host tool failed");
		}
		const speaker = isRecord(ctx.speaker) ? ctx.speaker : {};
		const turn = this.#turns.get(`${channel}\u0000${String(ctx.turnId)}`);
		const context: PiHostContext = {
			channel,
			profile: String(ctx.profile),
			speaker: { id: String(speaker.id), name: String(speaker.name) },
			thinking: String(ctx.thinking) as PiThinkingLevel,
			signal: turn?.controller.signal ?? AbortSignal.abort(),
		};
		let result: PiToolResponse;
		try {
			result = await tools.call(name, isRecord(params.input) ? params.input : {}, context);
		} catch (e) {
			// The exception's text stays here: the worker gets a generic failure.
			this.#log.warn?.({ channel, tool: name, err: messageOf(e) }, "host tool failed");
			throw hookError(RpcCode.APP_ERROR, "host tool failed");
		}
		if (
			!isRecord(result) ||
			typeof result.ok !== "boolean" ||
			(result.text !== undefined && (typeof result.text !== "string" || result.text.length > TOOL_TEXT_MAX)) ||
			(result.error !== undefined && (typeof result.error !== "string" || result.error.length > TOOL_ERROR_MAX))
		) {
			this.#log.warn?.({ channel, tool: name }, "host tool answered out of its bounds");
			throw hookError(RpcCode.APP_ERROR, "host tool failed");
		}
		const out: PiToolResponse = { ok: result.ok };
		if (result.text !== undefined) out.text = result.text;
		if (result.error !== undefined) out.error = cutText(result.error, TOOL_ERROR_MAX);
		if (result.image !== undefined) {
			try {
				validateImages([result.image]);
			} catch {
				this.#log.warn?.({ channel, tool: name }, "host tool answered an invalid image");
				throw hookError(RpcCode.APP_ERROR, "host tool failed");
			}
			out.image = { data: result.image.data, mimeType: result.image.mimeType };
		}
		return out;
	}

	/**
	 * compaction.compact {request, context, timeoutMs} → the compaction, or
	 * null when the compactor declines.  An error answer (the compactor
	 * threw, took too long or answered a bad compaction) also falls back to
	 * Pi's summary; why stays in this log.
	 */
	async #compact(params: Record<string, unknown>): Promise<unknown> {
		const compactor = this.#options.compaction;
		const ctx = isRecord(params.context) ? params.context : {};
		const channel = String(ctx.channel) as ChannelKey;
		if (!compactor) throw hookError(RpcCode.METHOD_NOT_FOUND, "no hook compaction.compact");
		const request = params.request;
		try {
			validateCompactRequest(request);
		} catch {
			this.#log.warn?.({ channel }, "rtsandboxd sent a compact request of no known shape");
			throw hookError(RpcCode.INVALID_PARAMS, "invalid compact request");
		}
		const engine = typeof ctx.engine === "string" ? ctx.engine : undefined;
		if (engine !== undefined && engine !== compactor.engine && !this.#engineWarned.has(engine)) {
			this.#engineWarned.add(engine);
			this.#log.warn?.(
				{ engine: compactor.engine, daemonEngine: engine },
				"the compactor's engine differs from rtsandboxd's compaction.engine, which its compactions record; change one of them",
			);
		}
		const timeoutMs = compactTimeout(params.timeoutMs);
		const turn = this.#turns.get(`${channel}\u0000${String(ctx.turnId)}`);
		const started = Date.now();
		let result: unknown;
		try {
			result = await runCompactor(
				(signal) => compactor.compact(request, { channel, signal }),
				timeoutMs,
				turn?.controller.signal,
			);
		} catch (e) {
			if (e instanceof CompactorStopped)
				this.#log.warn?.({ channel, engine: compactor.engine, timeoutMs }, `compaction falls back to Pi's summary: ${e.message}`);
			else
				this.#log.warn?.(
					{ channel, engine: compactor.engine, err: messageOf(e) },
					"compaction falls back to Pi's summary: the compactor failed",
				);
			throw hookError(RpcCode.APP_ERROR, "the compactor failed");
		}
		if (result === undefined || result === null) {
			this.#log.info?.({ channel, engine: compactor.engine }, "compaction falls back to Pi's summary: the compactor declined");
			return null;
		}
		const problem = compactionProblem(result, request.firstKeptEntryId);
		if (problem !== null) {
			this.#log.warn?.(
				{ channel, engine: compactor.engine, problem },
				"compaction falls back to Pi's summary: the compactor's result is invalid",
			);
			throw hookError(RpcCode.APP_ERROR, "the compactor's result is invalid");
		}
		const out = compactionToWire(result as unknown as Record<string, unknown>);
		this.#log.info?.(
			{
				channel,
				engine: compactor.engine,
				tokensBefore: out.tokensBefore,
				tokensAfter: out.estimatedTokensAfter,
				latencyMs: Date.now() - started,
			},
			"host compactor answered",
		);
		return out;
	}

	async #credential(params: Record<string, unknown>): Promise<unknown> {
		const kind = params.kind;
		const getter =
			kind === "model" ? this.#options.oauthToken : kind === "mcp" ? this.#options.mcp?.token : undefined;
		const what = { kind: String(kind), channel: String(params.channel), server: params.server };
		if (typeof getter !== "function") {
			this.#log.warn?.(what, "rtsandboxd asked for a credential this runtime has no getter for");
			throw hookError(RpcCode.APP_ERROR, "credential unavailable");
		}
		let token: unknown;
		try {
			token = await within(CREDENTIAL_WAIT_MS, Promise.resolve().then(() => getter()));
		} catch (e) {
			// never the getter's words: they may hold the secret
			this.#log.warn?.({ ...what, err: e instanceof Error ? e.name : typeof e }, "credential getter failed");
			throw hookError(RpcCode.APP_ERROR, "credential unavailable");
		}
		if (typeof token !== "string" || token.length === 0) {
			this.#log.warn?.(what, "credential getter gave no token");
			throw hookError(RpcCode.APP_ERROR, "credential unavailable");
		}
		return { token };
	}
}

/**
 * A compactor as pi-roundtable-sandbox's runtime and broker check it: its
 * timeout (by default a third of the turn, at most 120 s) must leave half
 * the turn; its engine is [a-zA-Z0-9@/._-]{1,100}, its timeout 1 000 to
 * 600 000 ms and its largest request 1 byte to 96 MiB.
 */
function checkCompactor(compactor: PiCompactor, turnTimeoutMs: number): void {
	if (typeof compactor !== "object" || typeof compactor.compact !== "function") throw new Error("Invalid compactor");
	const timeoutMs =
		compactor.timeoutMs ?? Math.max(1000, Math.min(PI_COMPACT_LIMITS.timeoutMs, Math.floor(turnTimeoutMs / 3)));
	if (timeoutMs > turnTimeoutMs / 2) throw new Error("The compactor's timeout must leave half the turn");
	const bytes = compactor.maxRequestBytes ?? PI_COMPACT_LIMITS.requestBytes;
	if (
		typeof compactor.engine !== "string" ||
		!COMPACT_ENGINE.test(compactor.engine) ||
		!Number.isSafeInteger(timeoutMs) ||
		timeoutMs < 1000 ||
		timeoutMs > 600000 ||
		!Number.isSafeInteger(bytes) ||
		bytes < 1 ||
		bytes > COMPACT_REQUEST_BYTES_MAX
	)
		throw new Error("Invalid compactor");
}

function fromWire(r: unknown): PiSandboxTurnResult {
	if (isRecord(r) && r.ok === true && typeof r.text === "string" && Array.isArray(r.files)) {
		const files = r.files.map((f: unknown) => {
			const o = isRecord(f) ? f : {};
			return { name: String(o.name), data: Buffer.from(String(o.data), "base64") };
		});
		return { ok: true, text: r.text, files };
	}
	if (isRecord(r) && r.ok === false) {
		const reason = TURN_REASONS.includes(r.reason as PiTurnFailureReason) ? (r.reason as PiTurnFailureReason) : "internal";
		const detail = typeof r.message === "string" ? r.message : "the turn failed";
		const workerError = typeof r.workerError === "string" ? r.workerError : undefined;
		return turnFailed(reason === "busy" ? "Channel is busy" : "Sandbox turn failed", reason, detail, workerError);
	}
	return turnFailed("Sandbox turn failed", "internal", "turn.run: an answer of no known shape");
}
