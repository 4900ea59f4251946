/**
 * precheckScriptRunner with the options of pi-roundtable-sandbox's: each run
 * is a precheck run of rtsandboxd (precheck.run), a sealed container of the
 * daemon's with only the granted MCP tools reachable through a broker of
 * its own.  Register it as upstream's is:
 * services.get(PRECHECKS).useScriptRunner(precheckScriptRunner({ ... })).
 *
 * What the container is and may spend (image, entrypoint, limits, time,
 * calls) is rtsandboxd.json's precheck section; the servers' URLs and
 * credentials are its mcp section.  The options that describe them here
 * are taken as upstream's are and checked against what the daemon reports.
 */
import { RpcCode, RtsandboxRpcError } from "../errors.js";
import type { ChannelKey, Tier } from "./core.js";
import { hookError, Link } from "./link.js";
import type { PiSandboxRuntime } from "./runtime.js";

/** Whose schedule a script is for. */
export interface PrecheckScope {
	channel: ChannelKey;
	target: string;
	tier?: Tier;
}

/** What a precheck decides about a due schedule. */
export type PrecheckResult = { wake: false; note?: string } | { wake: true; context: string };

/** What a schedule's precheck script runs with when its schedule falls due. */
export interface PrecheckScriptContext {
	schedule: {
		id: number;
		title: string;
		channel: ChannelKey;
		target: string;
		createdTier?: Tier;
		[key: string]: unknown;
	};
	firedAt: Date;
	signal: AbortSignal;
	timeZone: string;
	today: string;
}

export interface PrecheckScriptRunner {
	run(script: string, context: PrecheckScriptContext): Promise<PrecheckResult>;
	timeoutMs?: number;
	describe(scope: PrecheckScope): Promise<string>;
}

/** An MCP server a script may call, with only the listed tools. */
export interface PrecheckMcpServer {
	/** A server of rtsandboxd.json's mcp section, in the profile. */
	name: string;
	/** Checked against rtsandboxd.json's URL of that server when given. */
	url?: string;
	tools: readonly string[];
	/** Not used: rtsandboxd reads mcp.credential_file (or asks the credential hook) for each call. */
	token?: () => string | undefined | Promise<string | undefined>;
}

export interface PrecheckScriptRunnerOptions {
	/** Checked against rtsandboxd.json's image when given. */
	image?: string;
	/** Not used: rtsandboxd makes each run's directory under its state_dir. */
	runRoot?: string;
	/** Not used: the container runs as rtsandboxd's service user. */
	uid?: number;
	gid?: number;
	/** The MCP servers and tools a script for this scope may call; never more than the profile's. */
	grant(scope: PrecheckScope): readonly PrecheckMcpServer[] | Promise<readonly PrecheckMcpServer[]>;
	/** Checked against precheck.entrypoint when given. */
	entrypoint?: readonly string[];
	/** Checked against precheck.timeout_ms when given. */
	timeoutMs?: number;
	/** Checked against precheck.max_calls when given. */
	maxCalls?: number;
	/** Checked against mcp.allow_http when given as true. */
	allowHttpMcp?: boolean;
	/** Checked against precheck.limits when given. */
	limits?: { memoryMb?: number; cpus?: number; pids?: number };
	/** Not used: rtsandboxd's Docker client runs the container. */
	driver?: unknown;
	fetchImpl?: unknown;
	/** rtsandbox: the profile whose MCP servers a grant may name; default "default". */
	profile?: string;
	/** rtsandbox: shares that runtime's connection; else the runner opens its own on socket. */
	runtime?: PiSandboxRuntime;
	/** rtsandbox: the control socket; default $RTSANDBOX_CONTROL_SOCKET, else /run/rtsandbox/control.sock. */
	socket?: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
	return typeof v === "object" && v !== null && !Array.isArray(v);
}

const SERVER_NAME = /^[a-zA-Z0-9_-]{1,100}$/;
const TOOL_NAME = /^[\w.-]{1,128}$/;

function checkServers(servers: readonly PrecheckMcpServer[]): void {
	const names = new Set<string>();
	for (const server of servers) {
		if (!isRecord(server) || typeof server.name !== "string" || !SERVER_NAME.test(server.name) || names.has(server.name))
			throw new Error("invalid or repeated precheck MCP server name");
		names.add(server.name);
		if (!Array.isArray(server.tools) || server.tools.some((t) => typeof t !== "string" || !TOOL_NAME.test(t)))
			throw new Error("invalid precheck MCP tool list");
	}
}

/** What a script for a scope is told: the contract, and the servers and tools it may call. */
function guide(servers: readonly PrecheckMcpServer[]): string {
	const reach =
		servers.length === 0
			? "Scripts for this schedule can call no MCP server, so they can only decide from the date and time."
			: `Scripts for this schedule may call only these MCP servers and tools:\n${servers.map((s) => `- ${s.name}: ${s.tools.join(", ")}`).join("\n")}`;
	return [
		"Write `export default async ({ mcp, firedAt, timeZone, today, schedule }) => result`.",
		"`result` is `{ wake: false, note? }` to skip the turn (the note, if any, is posted in small text) or `{ wake: true, context }` to wake you with `context`. Anything else, a throw, or running too long wakes you with the error.",
		"`today` is the date in the host's time zone (YYYY-MM-DD); pass it to tools instead of computing dates in UTC. `firedAt` is a Date and `timeZone` an IANA zone.",
		"Await each call before making the next; calls do not run in parallel. console output is discarded; only the returned result counts.",
		"`await mcp.call(server, tool, args)` returns the MCP tool result; `await mcp.json(server, tool, args)` returns its structured content, or its first text content parsed as JSON. A tool error throws.",
		"The script runs in a container with no network, no files of the host, and no credentials; it reaches only the tools below.",
		reach,
	].join("\n");
}

/**
 * Runs agents' precheck scripts in rtsandboxd's sealed containers, one per
 * run.  run() throws the script's error, or why the run failed, as
 * upstream's does; the core wakes the turn with it.
 */
export function precheckScriptRunner(options: PrecheckScriptRunnerOptions): PrecheckScriptRunner {
	if (typeof options?.grant !== "function") throw new Error("precheckScriptRunner needs a grant function");
	const maxCalls = options.maxCalls;
	if (maxCalls !== undefined && (!Number.isSafeInteger(maxCalls) || maxCalls < 1 || maxCalls > 100))
		throw new Error("invalid precheck MCP call budget");
	const profile = options.profile ?? "default";
	let own: Link | null = null;
	const link = (): Link => {
		if (options.runtime !== undefined) return options.runtime.link;
		own ??= new Link({
			socket: options.socket,
			client: "precheck-script-runner",
			hooks: [],
			logger: {},
			onRequest: async (method) => {
				throw hookError(RpcCode.METHOD_NOT_FOUND, `no hook ${method}`);
			},
		});
		return own;
	};
	const grant = async (scope: PrecheckScope): Promise<readonly PrecheckMcpServer[]> => {
		const servers = await options.grant(scope);
		checkServers(servers);
		return servers;
	};
	let checked: Promise<void> | null = null;
	const check = (): Promise<void> => {
		checked ??= (async () => {
			const config = await link().readConfig();
			const pc = config.precheck;
			if (pc === undefined || pc === null) throw new Error("rtsandboxd runs no precheck scripts: add a precheck section to rtsandboxd.json");
			const diffs: string[] = [];
			const want = (field: string, mine: unknown, theirs: unknown): void => {
				if (mine !== undefined && JSON.stringify(mine) !== JSON.stringify(theirs))
					diffs.push(`${field} is ${JSON.stringify(theirs)} in rtsandboxd.json, ${JSON.stringify(mine)} here`);
			};
			want("image", options.image, config.image);
			want("precheck.entrypoint", options.entrypoint, pc.entrypoint);
			want("precheck.timeout_ms", options.timeoutMs, pc.timeout_ms);
			want("precheck.max_calls", options.maxCalls, pc.max_calls);
			want("precheck.limits.memory_mib", options.limits?.memoryMb, pc.limits.memory_mib);
			want("precheck.limits.cpus", options.limits?.cpus, pc.limits.cpus);
			want("precheck.limits.pids", options.limits?.pids, pc.limits.pids);
			if (diffs.length > 0) throw new Error(`precheckScriptRunner and rtsandboxd differ: ${diffs.join("; ")}`);
		})();
		checked.catch(() => {
			checked = null;
		});
		return checked;
	};
	return {
		...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
		describe: async (scope) => guide(await grant(scope)),
		run: async (script, context) => {
			const { schedule, signal } = context;
			signal.throwIfAborted();
			await check();
			const servers = await grant({
				channel: schedule.channel,
				target: schedule.target,
				...(schedule.createdTier === undefined ? {} : { tier: schedule.createdTier }),
			});
			const call = link().conn.call<unknown>("precheck.run", {
				channel: schedule.channel,
				profile,
				script,
				firedAt: context.firedAt.toISOString(),
				timeZone: context.timeZone,
				today: context.today,
				schedule: { id: schedule.id, title: schedule.title },
				servers: servers.map(({ name, tools }) => ({ name, tools: [...tools] })),
			});
			const onAbort = (): void => call.cancel();
			signal.addEventListener("abort", onAbort, { once: true });
			let r: unknown;
			try {
				r = await call.result;
			} catch (e) {
				if (signal.aborted || (e instanceof RtsandboxRpcError && e.code === RpcCode.REQUEST_CANCELLED))
					throw new Error("the precheck run was stopped", { cause: e });
				throw e;
			} finally {
				signal.removeEventListener("abort", onAbort);
			}
			if (isRecord(r) && r.ok === true) return r.result as PrecheckResult;
			throw new Error(
				isRecord(r) && typeof r.message === "string" ? r.message.slice(0, 1000) : "the script failed",
			);
		},
	};
}
