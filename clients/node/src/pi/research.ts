/**
 * SandboxResearchWorker with 0.7.3's options and run(task, signal): each run
 * is a research job of rtsandboxd (research.run), in a sandboxed process of
 * the daemon's with web_search answered by the bot's search and
 * fetch_content by the daemon's controlled fetch.
 */
import { RpcCode, RtsandboxRpcError } from "../errors.js";
import type { ChannelKey } from "./core.js";
import { delegationScope } from "./delegator.js";
import { anySignal, hookError, Link, ResearchJobs } from "./link.js";
import type { PiSandboxRuntime } from "./runtime.js";
import type { SafeFetchResult } from "./safe-fetch.js";

export interface SandboxResearchOptions {
	/** 0.7.3's Pi model runtime; rtsandboxd makes the model calls, so it is not used. */
	modelRuntime?: unknown;
	/** Not used: the job runs in rtsandboxd's process, with no files. */
	agentDir?: string;
	/** Not used: the job runs in rtsandboxd's process, with no files. */
	workDir?: string;
	/** rtsandboxd's research.model, checked when the daemon reports it. */
	model: string;
	thinking: "low" | "medium" | "high" | "xhigh";
	/** Answers the job's web_search. */
	search(query: string, signal: AbortSignal): Promise<string>;
	/** Required as in 0.7.3 (this or fetchContent); rtsandboxd's controlled fetch and text extraction serve fetch_content. */
	extractFetched?(result: SafeFetchResult, signal: AbortSignal): Promise<string>;
	/** Required as in 0.7.3 (this or extractFetched); rtsandboxd's controlled fetch and text extraction serve fetch_content. */
	fetchContent?(url: string, signal: AbortSignal): Promise<string>;
	/** Shares that runtime's connection; else the worker opens its own on socket. */
	runtime?: PiSandboxRuntime;
	/** rtsandboxd's control socket; default $RTSANDBOX_CONTROL_SOCKET, else /run/rtsandbox/control.sock. */
	socket?: string;
	/** The channel and author of a run made outside ScopedSandboxDelegator's run. */
	channel?: ChannelKey;
	author?: { id: string; name: string };
}

/** A research job that ended without a report; reason is rtsandbox's. */
export interface ResearchError extends Error {
	reason?: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
	return typeof v === "object" && v !== null && !Array.isArray(v);
}

export class SandboxResearchWorker {
	readonly options: SandboxResearchOptions;
	#own: { link: Link; jobs: ResearchJobs } | null = null;

	constructor(options: SandboxResearchOptions) {
		if (!options.fetchContent && !options.extractFetched) throw new Error("Research needs fetchContent or extractFetched");
		this.options = options;
	}

	#connection(): { link: Link; jobs: ResearchJobs } {
		const r = this.options.runtime;
		if (r !== undefined) return { link: r.link, jobs: r.researchJobs };
		if (this.#own === null) {
			const jobs = new ResearchJobs();
			const link = new Link({
				socket: this.options.socket,
				client: "sandbox-research-worker",
				hooks: ["search.query"],
				logger: {},
				onRequest: async (method, params) => {
					if (method === "search.query") return jobs.serve(params, {});
					throw hookError(RpcCode.METHOD_NOT_FOUND, `no hook ${method}`);
				},
			});
			this.#own = { link, jobs };
		}
		return this.#own;
	}

	/** The job's report; throws when it has none, and "Research deadline exceeded" when signal aborts it. */
	async run(task: string, signal: AbortSignal): Promise<string> {
		signal.throwIfAborted();
		const scope = delegationScope.getStore() ?? {
			channel: this.options.channel,
			author: this.options.author,
		};
		if (scope.channel === undefined || scope.author === undefined)
			throw new Error(
				"SandboxResearchWorker.run needs the job's channel and author: call it from ScopedSandboxDelegator's run, or give the channel and author options",
			);
		const { link, jobs } = this.#connection();
		const config = await (this.options.runtime?.ready() ?? link.readConfig());
		const model = config.research?.model;
		if (model !== undefined && model !== this.options.model)
			throw new Error(
				`SandboxResearchWorker model is ${JSON.stringify(this.options.model)} but rtsandboxd has ${JSON.stringify(model)}: change research.model in rtsandboxd.json (or the option)`,
			);
		const controller = new AbortController();
		const remove = jobs.add({ channel: scope.channel, search: (q, s) => this.options.search(q, anySignal([s, signal])), controller });
		const call = link.conn.call<unknown>("research.run", {
			channel: scope.channel,
			author: { id: scope.author.id, name: scope.author.name },
			task,
			thinking: this.options.thinking,
		});
		const onAbort = (): void => call.cancel();
		signal.addEventListener("abort", onAbort, { once: true });
		let r: unknown;
		try {
			r = await call.result;
		} catch (e) {
			if (signal.aborted || (e instanceof RtsandboxRpcError && e.code === RpcCode.REQUEST_CANCELLED))
				throw new Error("Research deadline exceeded", { cause: e });
			throw e;
		} finally {
			signal.removeEventListener("abort", onAbort);
			controller.abort();
			remove();
		}
		if (isRecord(r) && r.ok === true && typeof r.report === "string") return r.report;
		const reason = isRecord(r) && typeof r.reason === "string" ? r.reason : "failed";
		if (reason === "timeout" || reason === "cancelled") {
			const e = new Error("Research deadline exceeded") as ResearchError;
			e.reason = reason;
			throw e;
		}
		const e = new Error(
			isRecord(r) && typeof r.message === "string" ? r.message : "the research job failed",
		) as ResearchError;
		e.reason = reason;
		throw e;
	}

	/** Closes the connection the worker opened itself.  Not in 0.7.3. */
	async close(): Promise<void> {
		await this.#own?.link.close();
		this.#own = null;
	}
}
