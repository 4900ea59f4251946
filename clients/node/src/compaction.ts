/**
 * The compaction.compact hook's parts that both runtimes share: the
 * deadline the daemon gives (params.timeoutMs), the compactor's signal that
 * ends at it, and the check of a compaction against its request, the
 * daemon's own (rtsandbox-protocol(7), contract 0.7.10), so that a bad one
 * is told in the bot's log rather than only in the daemon's.
 */
import { isTokenCount } from "./pi/protocol.js";

/** The daemon's compaction.timeout_ms when it gives none: its default. */
export const COMPACT_TIMEOUT_DEFAULT_MS = 120000;

function isRecord(v: unknown): v is Record<string, unknown> {
	return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** params.timeoutMs of a compaction.compact request: a positive integer of ms, else the default. */
export function compactTimeout(value: unknown): number {
	return typeof value === "number" && Number.isSafeInteger(value) && value > 0 ? value : COMPACT_TIMEOUT_DEFAULT_MS;
}

/** How a compactor's run ended without an answer. */
export class CompactorStopped extends Error {
	override name = "CompactorStopped";
	/** "timeout": it took over the daemon's timeoutMs; "aborted": its turn ended first. */
	readonly why: "timeout" | "aborted";

	constructor(why: "timeout" | "aborted", message: string) {
		super(message);
		this.why = why;
	}
}

/**
 * Runs compact with a signal aborted after timeoutMs, or when also is;
 * settles then even if compact goes on regardless, rejecting with
 * CompactorStopped.  A compact that throws rejects with its error.
 */
export function runCompactor<T>(
	compact: (signal: AbortSignal) => T | Promise<T>,
	timeoutMs: number,
	also?: AbortSignal,
): Promise<T> {
	const controller = new AbortController();
	const { signal } = controller;
	return new Promise<T>((resolve, reject) => {
		const timer = setTimeout(() => {
			const err = new CompactorStopped("timeout", `the compactor took over ${timeoutMs} ms`);
			controller.abort(new DOMException(err.message, "TimeoutError"));
			reject(err);
		}, timeoutMs);
		(timer as { unref?: () => void }).unref?.();
		const onAlso = (): void => {
			controller.abort(also?.reason);
			reject(new CompactorStopped("aborted", "the compaction was aborted: its turn ended"));
		};
		const done = (): void => {
			clearTimeout(timer);
			also?.removeEventListener("abort", onAlso);
		};
		if (also?.aborted) {
			done();
			onAlso();
			return;
		}
		also?.addEventListener("abort", onAlso, { once: true });
		Promise.resolve()
			.then(() => compact(signal))
			.then(
				(v) => {
					done();
					resolve(v);
				},
				(e: unknown) => {
					done();
					reject(e);
				},
			);
	});
}

/**
 * What is wrong with a compactor's result for the request whose
 * firstKeptEntryId is given, as the daemon judges it; null when nothing.
 */
export function compactionProblem(result: unknown, firstKeptEntryId: string): string | null {
	if (!isRecord(result)) return "it is not an object";
	if (typeof result.summary !== "string" || result.summary.length === 0) return "summary is not a non-empty string";
	if (result.firstKeptEntryId !== firstKeptEntryId) return "firstKeptEntryId is not the request's";
	if (!isTokenCount(result.tokensBefore)) return "tokensBefore is not an integer from 0 to 2^53 - 1";
	if (result.estimatedTokensAfter !== undefined && !isTokenCount(result.estimatedTokensAfter))
		return "estimatedTokensAfter is not an integer from 0 to 2^53 - 1";
	if (result.details !== undefined && !isRecord(result.details)) return "details is not an object";
	return null;
}

/** A checked compaction with only the fields the daemon takes (it sets details.engine itself). */
export function compactionToWire(result: Record<string, unknown>): Record<string, unknown> {
	const out: Record<string, unknown> = {
		summary: result.summary,
		firstKeptEntryId: result.firstKeptEntryId,
		tokensBefore: result.tokensBefore,
	};
	if (result.estimatedTokensAfter !== undefined) out.estimatedTokensAfter = result.estimatedTokensAfter;
	if (result.details !== undefined) out.details = result.details;
	return out;
}
