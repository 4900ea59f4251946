/**
 * The parts of the 0.7.3 surface that need no daemon: the bounds of
 * validateImages, validateReplyFiles and safeFileName at their limits and
 * one past, the thinking levels, the options 0.7.3 refused in its
 * constructor, the options rtsandbox refuses, and ScopedSandboxDelegator.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
	isPiThinkingLevel,
	PI_MEDIA_LIMITS,
	PI_THINKING_LEVELS,
	PiSandboxRuntime,
	safeFetch,
	safeFileName,
	SandboxResearchWorker,
	ScopedSandboxDelegator,
	UnsafeUrlError,
	validateImages,
	validateReplyFiles,
	type DelegationJob,
	type PiSandboxRuntimeOptions,
} from "../src/pi-roundtable-sandbox.js";

const quiet = { debug() {}, info() {}, warn() {}, error() {} };

function b64(bytes: number): string {
	return Buffer.alloc(bytes, 1).toString("base64");
}

describe("0.7.3's checks", () => {
	it("names files as the worker wire allows", () => {
		assert.equal(safeFileName("a".repeat(255)), true);
		assert.equal(safeFileName("a".repeat(256)), false);
		for (const bad of ["", ".", "..", "a/b", "a\\b", "a\u0000b", "a\u001fb", "a\u007fb", "a\u009fb"])
			assert.equal(safeFileName(bad), false, JSON.stringify(bad));
		assert.equal(safeFileName("a\u00a0b"), true);
	});

	it("bounds images: 8, 20 MiB each, 64 MiB in all, strict base64, four types", () => {
		const one = { data: "AQID", mimeType: "image/png" };
		validateImages(Array(PI_MEDIA_LIMITS.images).fill(one));
		assert.throws(() => validateImages(Array(PI_MEDIA_LIMITS.images + 1).fill(one)), /Too many images/);
		validateImages([{ data: b64(PI_MEDIA_LIMITS.imageBytes), mimeType: "image/webp" }]);
		assert.throws(
			() => validateImages([{ data: b64(PI_MEDIA_LIMITS.imageBytes + 1), mimeType: "image/png" }]),
			/Image budget exceeded/,
		);
		const big = { data: b64(PI_MEDIA_LIMITS.imageBytes), mimeType: "image/gif" };
		const rest = PI_MEDIA_LIMITS.totalImageBytes - 3 * PI_MEDIA_LIMITS.imageBytes;
		validateImages([big, big, big, { data: b64(rest), mimeType: "image/jpeg" }]);
		assert.throws(
			() => validateImages([big, big, big, { data: b64(rest + 3), mimeType: "image/jpeg" }]),
			/Image budget exceeded/,
		);
		for (const bad of [
			{ data: "bad%", mimeType: "image/png" },
			{ data: "AQI", mimeType: "image/png" },
			{ data: "AQID", mimeType: "text/plain" },
			{ data: "", mimeType: "image/png" },
		])
			assert.throws(() => validateImages([bad]), JSON.stringify(bad));
	});

	it("bounds reply files: 10, 10 MiB each, 50 MiB in all, safe names", () => {
		const one = { name: "a.txt", data: "AQID" };
		validateReplyFiles(Array(PI_MEDIA_LIMITS.files).fill(one));
		assert.throws(() => validateReplyFiles(Array(PI_MEDIA_LIMITS.files + 1).fill(one)), /Too many reply files/);
		validateReplyFiles([{ name: "big", data: b64(PI_MEDIA_LIMITS.fileBytes) }]);
		assert.throws(() => validateReplyFiles([{ name: "big", data: b64(PI_MEDIA_LIMITS.fileBytes + 1) }]));
		const ten = { name: "t", data: b64(PI_MEDIA_LIMITS.fileBytes) };
		validateReplyFiles([ten, ten, ten, ten, ten]);
		assert.throws(() => validateReplyFiles([ten, ten, ten, ten, ten, { name: "x", data: "AQID" }]), /budget/);
		for (const bad of [
			{ name: "../owner", data: "AQID" },
			{ name: "ok", data: "bad%" },
			{ name: "ok", data: "" },
		])
			assert.throws(() => validateReplyFiles([bad]), /Invalid reply file/);
	});

	it("knows the four thinking levels", () => {
		assert.deepEqual([...PI_THINKING_LEVELS], ["low", "medium", "high", "xhigh"]);
		for (const l of PI_THINKING_LEVELS) assert.equal(isPiThinkingLevel(l), true);
		for (const l of ["max", "", "LOW", undefined, 1]) assert.equal(isPiThinkingLevel(l), false);
	});
});

describe("PiSandboxRuntime's constructor", () => {
	const base: PiSandboxRuntimeOptions = {
		partyDir: "/var/lib/rtsandbox",
		image: "img",
		profiles: { p: { model: "m" } },
		oauthToken: () => "t",
		memory: { promptBlock: async () => "" },
		effort: { judge: async () => "low" },
		logger: quiet,
		socket: "/nonexistent/rtnj.sock",
	};

	it("refuses what 0.7.3 refused, with its words", () => {
		for (const partyDir of ["relative", "/"])
			assert.throws(() => new PiSandboxRuntime({ ...base, partyDir }), /Dedicated absolute state directory required/);
		assert.throws(() => new PiSandboxRuntime({ ...base, containerPrefix: "Bad" }), /Invalid container prefix/);
		new PiSandboxRuntime({ ...base, containerPrefix: "a".repeat(41) }).close();
		assert.throws(() => new PiSandboxRuntime({ ...base, containerPrefix: "a".repeat(42) }), /Invalid container prefix/);
		for (const ms of [999, 600001, 1.5]) {
			assert.throws(() => new PiSandboxRuntime({ ...base, turnTimeoutMs: ms }), /Invalid runtime deadline/);
			assert.throws(() => new PiSandboxRuntime({ ...base, startTimeoutMs: ms }), /Invalid runtime deadline/);
		}
		new PiSandboxRuntime({ ...base, turnTimeoutMs: 1000, startTimeoutMs: 600000 }).close();
	});

	it("refuses driver and fetchImpl, saying why", () => {
		const driver = {
			ensureRunning: async () => {},
			remove: async () => {},
			status: async () => ({ state: "missing" as const }),
		};
		assert.throws(() => new PiSandboxRuntime({ ...base, driver }), /driver is not supported: rtsandboxd runs the channels' containers/);
		assert.throws(
			() => new PiSandboxRuntime({ ...base, fetchImpl: async () => new Response("") }),
			/fetchImpl is not supported: rtsandboxd's egress makes every model and MCP call/,
		);
	});

	it("computes the channel's paths from partyDir before any call, and refuses aliases", () => {
		const rt = new PiSandboxRuntime(base);
		assert.equal(rt.sessionsDir("discord:123"), "/var/lib/rtsandbox/discord_123/workspace/sessions");
		assert.equal(rt.attachmentDir("discord:\u00e9\u{1f600}"), "/var/lib/rtsandbox/discord____/workspace/attachments");
		rt.attachmentDir("discord:a:b");
		assert.throws(() => rt.attachmentDir("discord:a_b"), /alias/);
		assert.throws(() => rt.sessionsDir(`d:${"x".repeat(255)}`), /Channel key too long/);
		rt.sessionsDir(`d:${"x".repeat(254)}`);
		rt.close();
	});
});

describe("safeFetch's own checks", () => {
	it("refuses bounds and URLs 0.7.3 refused, before asking the daemon", async () => {
		for (const o of [{ maxBytes: 0 }, { maxBytes: 32 * 1024 * 1024 + 1 }, { timeoutMs: 120001 }, { maxRedirects: 11 }])
			await assert.rejects(safeFetch("https://example.com/", o), (e: unknown) => e instanceof UnsafeUrlError && /bounds/.test(e.message));
		for (const url of ["ftp://example.com/", "https://u:p@example.com/", "not a url"])
			await assert.rejects(safeFetch(url), UnsafeUrlError);
		await assert.rejects(safeFetch("https://example.com/", { resolve: async () => [] }), /resolve and transport are not supported/);
	});
});

describe("SandboxResearchWorker's constructor", () => {
	it("needs fetchContent or extractFetched, as 0.7.3", () => {
		const base = { model: "m", thinking: "low" as const, search: async () => "" };
		assert.throws(() => new SandboxResearchWorker(base), /Research needs fetchContent or extractFetched/);
		new SandboxResearchWorker({ ...base, fetchContent: async () => "" });
		new SandboxResearchWorker({ ...base, extractFetched: async () => "" });
	});
});

describe("ScopedSandboxDelegator", () => {
	const request = {
		channel: "discord:channel" as const,
		target: "guest",
		author: { id: "speaker", name: "Guest" },
		title: "Research",
		task: "Check a public source",
	};

	it("fixes target, channel and author, refusing owner dispatch fields", async () => {
		const reports: DelegationJob[] = [];
		const contexts: unknown[] = [];
		const d = new ScopedSandboxDelegator({
			target: "guest",
			run: async (_task, context) => {
				contexts.push({ channel: context.channel, author: context.author });
				return "report";
			},
			deliver: async (job) => {
				reports.push(job);
			},
			logger: quiet,
		});
		for (const bad of [
			{ ...request, target: "owner" },
			{ ...request, origin: "discord:owner" as const },
			{ ...request, author: { ...request.author, tier: "owner" as const } },
		])
			assert.throws(() => d.start(bad), /scope/);
		const job = d.start(request);
		await d.idle();
		assert.deepEqual(reports, [job]);
		assert.deepEqual(contexts, [{ channel: "discord:channel", author: { id: "speaker", name: "Guest" } }]);
		await d.dispose();
	});

	it("bounds jobs per channel, titles, tasks and reports; dispose cancels", async () => {
		let cancelled = 0;
		const outcomes: unknown[] = [];
		const d = new ScopedSandboxDelegator({
			target: "guest",
			maxRunning: 1,
			run: (task, context) =>
				task === "long report"
					? Promise.resolve("r".repeat(80001))
					: new Promise((_r, reject) =>
							context.signal.addEventListener("abort", () => {
								cancelled++;
								reject(new Error("cancelled"));
							}),
						),
			deliver: async (_job, outcome) => {
				outcomes.push(outcome);
			},
			logger: quiet,
		});
		assert.throws(() => d.start({ ...request, task: "x".repeat(4001) }), /Invalid/);
		assert.throws(() => d.start({ ...request, title: "x".repeat(201) }), /Invalid/);
		d.start({ ...request, task: "long report" });
		await d.idle();
		assert.deepEqual(outcomes, [{ ok: false, error: "Sandbox task failed" }]);
		d.start({ ...request, task: "x".repeat(4000) });
		assert.throws(() => d.start(request), /too many/);
		assert.deepEqual(d.runningChannels(), ["discord:channel"]);
		await d.dispose();
		assert.equal(cancelled, 1);
		assert.deepEqual(d.runningChannels(), []);
		assert.throws(() => d.start(request), /scope/);
		for (const o of [{ maxRunning: 0 }, { maxRunning: 11 }, { timeoutMs: 999 }, { timeoutMs: 1200001 }])
			assert.throws(
				() => new ScopedSandboxDelegator({ target: "g", run: async () => "", deliver: async () => {}, logger: quiet, ...o }),
				/Invalid delegation target\/budget/,
			);
	});
});
