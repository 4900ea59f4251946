/**
 * SandboxResearchWorker over rtsandboxd: each run is a research job in a
 * sandboxed process of the daemon's, with web_search answered here.
 */
import { PiSandboxRuntime } from "./runtime.js";
import type { Author, Logger, ResearchResult, SearchHandler, ThinkingLevel } from "./types.js";

export interface SandboxResearchWorkerOptions {
	/** Share a runtime's connection; else the worker opens its own on socket. */
	runtime?: PiSandboxRuntime;
	socket?: string;
	/** Serves web_search for runs that bring none of their own. */
	search?: SearchHandler;
	logger?: Logger;
}

export interface ResearchRun {
	channel: string;
	/** 1 to 4 000 chars once white space is trimmed from both ends. */
	task: string;
	author: Author;
	search?: SearchHandler;
	signal?: AbortSignal;
	thinking?: ThinkingLevel;
}

export class SandboxResearchWorker {
	readonly runtime: PiSandboxRuntime;
	private readonly search?: SearchHandler;
	private readonly own: boolean;

	constructor(options: SandboxResearchWorkerOptions = {}) {
		this.own = options.runtime === undefined;
		this.runtime =
			options.runtime ??
			new PiSandboxRuntime({ socket: options.socket, logger: options.logger, clientName: "sandbox-research-worker" });
		this.search = options.search;
	}

	run(run: ResearchRun): Promise<ResearchResult> {
		return this.runtime.research(run.channel, run.task, {
			author: run.author,
			search: run.search ?? this.search,
			signal: run.signal,
			thinking: run.thinking,
		});
	}

	/** Closes the connection the worker opened itself. */
	async close(): Promise<void> {
		if (this.own) await this.runtime.close();
	}
}
