/**
 * ScopedSandboxDelegator of 0.7.3: one declared target, a channel-local
 * report and a host-bound author.  Its run callback runs with the job's
 * channel and author in scope, so a SandboxResearchWorker called from it
 * knows which channel's research job to start.
 */
import { AsyncLocalStorage } from "node:async_hooks";

import { anySignal, timeoutSignal } from "./link.js";
import {
	DelegationError,
	type ChannelKey,
	type DelegationJob,
	type DelegationOutcome,
	type Logger,
} from "./core.js";

export interface ScopedDelegatorOptions {
	target: string;
	/** 1 to 10 jobs per channel; default 2. */
	maxRunning?: number;
	/** 1 000 to 1 200 000 ms; default 600 000. */
	timeoutMs?: number;
	run(
		task: string,
		context: { channel: ChannelKey; author: { id: string; name: string }; signal: AbortSignal },
	): Promise<string>;
	deliver(job: DelegationJob, result: DelegationOutcome): Promise<void>;
	logger: Logger;
}

/** The job a run callback works for. */
export interface DelegationScope {
	channel: ChannelKey;
	author: { id: string; name: string };
}

export const delegationScope = new AsyncLocalStorage<DelegationScope>();

const REPORT_MAX = 80000;

interface Running {
	controller: AbortController;
	channel: ChannelKey;
	done: Promise<void>;
}

export class ScopedSandboxDelegator {
	readonly #options: ScopedDelegatorOptions;
	readonly #jobs = new Map<number, Running>();
	#next = 1;
	#closed = false;

	constructor(options: ScopedDelegatorOptions) {
		const running = options.maxRunning ?? 2;
		const timeout = options.timeoutMs ?? 600000;
		if (
			!options.target ||
			!Number.isSafeInteger(running) ||
			running < 1 ||
			running > 10 ||
			!Number.isSafeInteger(timeout) ||
			timeout < 1000 ||
			timeout > 1200000
		)
			throw new Error("Invalid delegation target/budget");
		this.#options = options;
	}

	start(request: Omit<DelegationJob, "id" | "startedAt" | "thread">): DelegationJob {
		if (this.#closed || request.target !== this.#options.target || request.origin || request.author.tier)
			throw new DelegationError("Delegation scope refused");
		if (!request.title.trim() || request.title.length > 200 || !request.task.trim() || request.task.length > 4000)
			throw new DelegationError("Invalid delegation title/task");
		const busy = [...this.#jobs.values()].filter((j) => j.channel === request.channel).length;
		if (busy >= (this.#options.maxRunning ?? 2)) throw new DelegationError("This channel has too many running tasks");
		const job: DelegationJob = {
			id: this.#next++,
			channel: request.channel,
			target: this.#options.target,
			author: { id: request.author.id, name: request.author.name },
			title: request.title.trim(),
			task: request.task.trim(),
			startedAt: new Date(),
		};
		const controller = new AbortController();
		const signal = anySignal([controller.signal, timeoutSignal(this.#options.timeoutMs ?? 600000)]);
		const scope: DelegationScope = { channel: job.channel, author: { ...job.author } };
		const done = (async () => {
			let result: DelegationOutcome;
			try {
				const report = await delegationScope.run(scope, () =>
					this.#options.run(job.task, { channel: job.channel, author: { ...job.author }, signal }),
				);
				signal.throwIfAborted();
				if (typeof report !== "string" || report.length > REPORT_MAX) throw new Error("Research report too large");
				result = { ok: true, report };
			} catch {
				result = { ok: false, error: "Sandbox task failed" };
			}
			await this.#options.deliver(job, result);
		})()
			.catch(() => this.#options.logger.error({ channel: job.channel, job: job.id }, "Sandbox task report failed"))
			.finally(() => this.#jobs.delete(job.id));
		this.#jobs.set(job.id, { controller, channel: job.channel, done });
		return job;
	}

	runningChannels(): ChannelKey[] {
		return [...this.#jobs.values()].map((j) => j.channel);
	}

	async idle(): Promise<void> {
		await Promise.all([...this.#jobs.values()].map((j) => j.done));
	}

	async dispose(): Promise<void> {
		this.#closed = true;
		for (const j of this.#jobs.values()) j.controller.abort();
		await this.idle();
	}
}
