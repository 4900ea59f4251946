/**
 * The parts of the 0.7.3 surface that need no daemon: the bounds of
 * validateImages, validateReplyFiles and safeFileName at their limits and
 * one past, the thinking levels, the options 0.7.3 refused in its
 * constructor, the options rtsandbox refuses, and ScopedSandboxDelegator;
 * and the compaction.compact hook of both entries, served to a fake
 * control socket that speaks the daemon's side of it.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { after, describe, it } from "node:test";

import {
	PiSandboxRuntime as RtsandboxRuntime,
	type CompactContext,
	type CompactRequest,
	type CompactionHandler,
} from "../src/index.js";
import {
	isPiThinkingLevel,
	PI_COMPACT_LIMITS,
	PI_MEDIA_LIMITS,
	PI_THINKING_LEVELS,
	PiSandboxRuntime,
	safeFetch,
	safeFileName,
	SandboxResearchWorker,
	ScopedSandboxDelegator,
	UnsafeUrlError,
	validateCompactionReport,
	validateCompactRequest,
	validateImages,
	validateReplyFiles,
	type ChannelKey,
	type DelegationJob,
	type PiCompaction,
	type PiCompactor,
	type PiCompactRequest,
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

/** One JSON-RPC message of the control socket. */
type Rpc = Record<string, any>;

/**
 * The daemon's side of the control socket, as far as these tests need it:
 * it answers initialize (refusing the hooks in refuse, as an older
 * rtsandboxd refuses one it does not know), and asks the client's hooks
 * with ids of its own kind.
 */
class FakeControl {
	readonly socket: string;
	readonly inits: Rpc[] = [];
	private readonly server: net.Server;
	private readonly dir: string;
	private conn: net.Socket | null = null;
	private connected: Promise<void>;
	private onConnected!: () => void;
	private readonly waiting = new Map<string, (m: Rpc) => void>();
	private next = 1;

	constructor(private readonly refuse: string[] = []) {
		this.dir = fs.mkdtempSync(path.join(os.tmpdir(), "rtnj-fake-"));
		this.socket = path.join(this.dir, "control.sock");
		this.connected = new Promise((r) => (this.onConnected = r));
		this.server = net.createServer((c) => this.serve(c));
	}

	listen(): Promise<void> {
		return new Promise((r) => this.server.listen(this.socket, r));
	}

	private serve(c: net.Socket): void {
		let buf = "";
		c.on("data", (d) => {
			buf += d.toString();
			for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
				const m = JSON.parse(buf.slice(0, nl)) as Rpc;
				buf = buf.slice(nl + 1);
				this.line(c, m);
			}
		});
		c.on("error", () => undefined);
	}

	private line(c: net.Socket, m: Rpc): void {
		if (m.method === "initialize") {
			this.inits.push(m.params);
			const bad = (m.params.hooks as string[]).find((h) => this.refuse.includes(h));
			if (bad !== undefined) {
				c.write(
					JSON.stringify({
						jsonrpc: "2.0",
						id: m.id,
						error: { code: -32602, message: `Invalid params: unknown hook ${bad}; known: tool.call` },
					}) + "\n",
				);
				return;
			}
			c.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { version: "fake" } }) + "\n");
			this.conn = c;
			this.onConnected();
			return;
		}
		if (typeof m.method === "string") {
			if ("id" in m)
				c.write(JSON.stringify({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "Method not found" } }) + "\n");
			return;
		}
		this.waiting.get(m.id)?.(m);
		this.waiting.delete(m.id);
	}

	/** Asks the client's hook; its answer, {result} or {error}. */
	async ask(method: string, params: object): Promise<Rpc> {
		await this.connected;
		const id = `rtsandbox-${this.next++}`;
		const answer = new Promise<Rpc>((r) => this.waiting.set(id, r));
		this.conn!.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
		return answer;
	}

	async close(): Promise<void> {
		this.conn?.destroy();
		await new Promise((r) => this.server.close(r));
		fs.rmSync(this.dir, { recursive: true, force: true });
	}
}

function compactRequest(over: Partial<PiCompactRequest> = {}): PiCompactRequest {
	return {
		reason: "threshold",
		tokensBefore: 150000,
		firstKeptEntryId: "e42",
		isSplitTurn: false,
		messagesToSummarize: [{ role: "user", content: "hello" }],
		turnPrefixMessages: [],
		keptMessages: [{ role: "assistant", content: "hi" }],
		readFiles: ["/workspace/a"],
		modifiedFiles: [],
		...over,
	};
}

const COMPACT_CONTEXT = {
	channel: "discord:c1",
	profile: "p",
	speaker: { id: "u1", name: "Ann" },
	turnId: "t1",
	engine: "host-compactor",
};

function compactParams(over: Record<string, unknown> = {}): Record<string, unknown> {
	return { request: compactRequest(), context: COMPACT_CONTEXT, timeoutMs: 5000, ...over };
}

interface Logged {
	level: string;
	obj: object;
	msg?: string;
}

function recorder(): { logger: PiSandboxRuntimeOptions["logger"]; lines: Logged[] } {
	const lines: Logged[] = [];
	const at =
		(level: string) =>
		(obj: object, msg?: string): void => {
			lines.push({ level, obj, msg });
		};
	return { lines, logger: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") } };
}

describe("compaction: the wire's checks", () => {
	it("checks a compact request and a report at their bounds", () => {
		validateCompactRequest(compactRequest({ firstKeptEntryId: "x".repeat(256), previousSummary: "s", customInstructions: "c" }));
		for (const bad of [
			{ reason: "other" },
			{ tokensBefore: -1 },
			{ tokensBefore: 1.5 },
			{ firstKeptEntryId: "" },
			{ firstKeptEntryId: "x".repeat(257) },
			{ messagesToSummarize: [{ content: "no role" }] },
			{ keptMessages: {} },
			{ previousSummary: 1 },
			{ readFiles: [1] },
		])
			assert.throws(() => validateCompactRequest({ ...compactRequest(), ...bad }), /Invalid compact request/, JSON.stringify(bad));
		validateCompactionReport({ type: "bypass", reason: "r".repeat(1000), tokensBefore: 0 });
		validateCompactionReport({ type: "end", reason: "manual", aborted: false, willRetry: false, engine: "pi", tokensAfter: 3 });
		for (const bad of [
			{ type: "bypass", reason: "r".repeat(1001), tokensBefore: 0 },
			{ type: "end", reason: "manual", aborted: false, willRetry: false, engine: "other" },
			{ type: "end", reason: "manual", aborted: false, willRetry: false, error: "e".repeat(10001) },
			{ type: "other" },
		])
			assert.throws(() => validateCompactionReport(bad), /Invalid compaction report/);
		assert.deepEqual(PI_COMPACT_LIMITS, { requestBytes: 32 * 1024 * 1024, timeoutMs: 120000, compactsPerTurn: 3, reportsPerTurn: 16 });
	});
});

describe("PiSandboxRuntime's compaction option", () => {
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
	const compactor = (over: Partial<PiCompactor> = {}): PiCompactor => ({
		engine: "host-compactor",
		compact: async () => undefined,
		...over,
	});
	const fakes: FakeControl[] = [];
	const runtimes: PiSandboxRuntime[] = [];

	after(async () => {
		for (const rt of runtimes) await rt.close();
		for (const f of fakes) await f.close();
	});

	async function served(
		c: PiCompactor,
		over: Partial<PiSandboxRuntimeOptions> = {},
		refuse: string[] = [],
	): Promise<{ fake: FakeControl; rt: PiSandboxRuntime }> {
		const fake = new FakeControl(refuse);
		fakes.push(fake);
		await fake.listen();
		const rt = new PiSandboxRuntime({ ...base, socket: fake.socket, compaction: c, ...over });
		runtimes.push(rt);
		await rt.link.conn.connect();
		return { fake, rt };
	}

	it("checks the compactor as pi-roundtable-sandbox does, at construction", () => {
		const bad: Partial<PiCompactor>[] = [
			{ engine: "" },
			{ engine: "has space" },
			{ engine: "x".repeat(101) },
			{ engine: 7 as unknown as string },
			{ timeoutMs: 999 },
			{ timeoutMs: 1000.5 },
			{ timeoutMs: Number.NaN },
			{ maxRequestBytes: 0 },
			{ maxRequestBytes: 96 * 1024 * 1024 + 1 },
			{ maxRequestBytes: 1.5 },
			{ compact: undefined as unknown as PiCompactor["compact"] },
		];
		for (const o of bad)
			assert.throws(() => new PiSandboxRuntime({ ...base, compaction: compactor(o) }), /^Error: Invalid compactor$/, JSON.stringify(o));
		for (const o of [
			{ engine: "x".repeat(100) },
			{ engine: "@scope/pkg_v1.2-x" },
			{ timeoutMs: 1000 },
			{ timeoutMs: 300000 },
			{ maxRequestBytes: 1 },
			{ maxRequestBytes: 96 * 1024 * 1024 },
		])
			new PiSandboxRuntime({ ...base, compaction: compactor(o) }).close();
		// its time must leave half the turn for Pi's own summary
		assert.throws(
			() => new PiSandboxRuntime({ ...base, compaction: compactor({ timeoutMs: 300001 }) }),
			/The compactor's timeout must leave half the turn/,
		);
		assert.throws(
			() => new PiSandboxRuntime({ ...base, turnTimeoutMs: 10000, compaction: compactor({ timeoutMs: 5001 }) }),
			/The compactor's timeout must leave half the turn/,
		);
		new PiSandboxRuntime({ ...base, turnTimeoutMs: 10000, compaction: compactor() }).close();
	});

	it("declares compaction.compact only with a compactor, and leaves it out for a daemon that lacks it", async () => {
		const without = new FakeControl();
		fakes.push(without);
		await without.listen();
		const rt = new PiSandboxRuntime({ ...base, socket: without.socket });
		runtimes.push(rt);
		await rt.link.conn.connect();
		assert.ok(!without.inits[0].hooks.includes("compaction.compact"));
		const { fake } = await served(compactor());
		assert.ok(fake.inits[0].hooks.includes("compaction.compact"));
		const { fake: old } = await served(compactor(), {}, ["compaction.compact"]);
		assert.equal(old.inits.length, 2);
		assert.ok(old.inits[0].hooks.includes("compaction.compact"));
		assert.ok(!old.inits[1].hooks.includes("compaction.compact"));
	});

	it("answers the compaction, null when the compactor declines, an error when it throws", async () => {
		const seen: { request: PiCompactRequest; channel: ChannelKey; aborted: boolean }[] = [];
		let answer: () => Promise<PiCompaction | undefined> = async () => undefined;
		const { fake } = await served(
			compactor({
				compact: async (request, { channel, signal }) => {
					seen.push({ request, channel, aborted: signal.aborted });
					return answer();
				},
			}),
		);
		answer = async () => ({
			summary: "S",
			firstKeptEntryId: "e42",
			tokensBefore: 150000,
			estimatedTokensAfter: 900,
			details: { readFiles: ["/workspace/a"] },
			extra: "dropped",
		}) as PiCompaction;
		let r = await fake.ask("compaction.compact", compactParams());
		assert.deepEqual(r.result, {
			summary: "S",
			firstKeptEntryId: "e42",
			tokensBefore: 150000,
			estimatedTokensAfter: 900,
			details: { readFiles: ["/workspace/a"] },
		});
		assert.deepEqual(seen, [{ request: compactRequest(), channel: "discord:c1", aborted: false }]);
		answer = async () => undefined;
		r = await fake.ask("compaction.compact", compactParams());
		assert.ok("result" in r && r.result === null, JSON.stringify(r));
		answer = async () => {
			throw new Error("the summariser is down: sk-secret");
		};
		r = await fake.ask("compaction.compact", compactParams());
		assert.equal(r.error.code, -32000);
		assert.doesNotMatch(r.error.message, /sk-secret/);
		for (const bad of [
			{ summary: "", firstKeptEntryId: "e42", tokensBefore: 1 },
			{ summary: "S", firstKeptEntryId: "other", tokensBefore: 1 },
			{ summary: "S", firstKeptEntryId: "e42", tokensBefore: -1 },
			{ summary: "S", firstKeptEntryId: "e42", tokensBefore: 1, estimatedTokensAfter: 0.5 },
			{ summary: "S", firstKeptEntryId: "e42", tokensBefore: 1, details: ["x"] },
		]) {
			answer = async () => bad as PiCompaction;
			r = await fake.ask("compaction.compact", compactParams());
			assert.equal(r.error?.code, -32000, JSON.stringify(bad));
		}
		r = await fake.ask("compaction.compact", compactParams({ request: { ...compactRequest(), reason: "bored" } }));
		assert.equal(r.error?.code, -32602);
	});

	it("aborts the compactor's signal after the daemon's timeoutMs, and answers then", async () => {
		let signal: AbortSignal | undefined;
		const { fake } = await served(
			compactor({
				timeoutMs: 120000,
				compact: (_request, context) => {
					signal = context.signal;
					return new Promise(() => {}); // never, and deaf to its signal
				},
			}),
		);
		const t0 = Date.now();
		const r = await fake.ask("compaction.compact", compactParams({ timeoutMs: 300 }));
		const took = Date.now() - t0;
		assert.equal(r.error?.code, -32000);
		assert.ok(took >= 290 && took < 5000, `answered after ${took} ms`);
		assert.equal(signal?.aborted, true);
		assert.equal((signal?.reason as DOMException).name, "TimeoutError");
	});

	it("warns once when its engine is not the daemon's, and still answers", async () => {
		const { logger, lines } = recorder();
		const { fake } = await served(
			compactor({
				engine: "mine",
				compact: async () => ({ summary: "S", firstKeptEntryId: "e42", tokensBefore: 1 }),
			}),
			{ logger },
		);
		for (let i = 0; i < 3; i++) {
			const r = await fake.ask("compaction.compact", compactParams());
			assert.equal(r.result?.summary, "S");
		}
		const warned = lines.filter((l) => l.level === "warn" && /engine differs/.test(l.msg ?? ""));
		assert.equal(warned.length, 1);
		assert.deepEqual(warned[0].obj, { engine: "mine", daemonEngine: "host-compactor" });
	});
});

describe("the rtsandbox API's compactor", () => {
	const fakes: FakeControl[] = [];
	const runtimes: RtsandboxRuntime[] = [];

	after(async () => {
		for (const rt of runtimes) await rt.close();
		for (const f of fakes) await f.close();
	});

	async function served(compactor?: CompactionHandler): Promise<FakeControl> {
		const fake = new FakeControl();
		fakes.push(fake);
		await fake.listen();
		const rt = new RtsandboxRuntime({ socket: fake.socket, compactor, logger: {} });
		runtimes.push(rt);
		await rt.connect();
		return fake;
	}

	it("declares the hook with a compactor, gives it the bound context, and answers what it returns", async () => {
		assert.ok(!(await served()).inits[0].hooks.includes("compaction.compact"));
		const calls: { request: CompactRequest; context: Omit<CompactContext, "signal"> }[] = [];
		let answer: unknown = null;
		const fake = await served((request, { signal, ...context }) => {
			calls.push({ request, context });
			assert.equal(signal.aborted, false);
			return answer as null;
		});
		assert.ok(fake.inits[0].hooks.includes("compaction.compact"));
		let r = await fake.ask("compaction.compact", compactParams({ timeoutMs: 2500 }));
		assert.ok("result" in r && r.result === null, JSON.stringify(r));
		assert.deepEqual(calls, [{ request: compactRequest(), context: { ...COMPACT_CONTEXT, timeoutMs: 2500 } }]);
		answer = undefined;
		r = await fake.ask("compaction.compact", compactParams());
		assert.equal(r.result, null);
		answer = { summary: "S", firstKeptEntryId: "e42", tokensBefore: 7, details: { a: 1 } };
		r = await fake.ask("compaction.compact", compactParams());
		assert.deepEqual(r.result, answer);
		answer = { summary: "S", firstKeptEntryId: "nope", tokensBefore: 7 };
		r = await fake.ask("compaction.compact", compactParams());
		assert.match(r.error?.message ?? "", /firstKeptEntryId is not the request's/);
	});

	it("answers at the daemon's timeoutMs with the signal aborted, and passes a throw on as an error", async () => {
		let signal: AbortSignal | undefined;
		let mode: "hang" | "throw" = "hang";
		const fake = await served(async (_request, context) => {
			signal = context.signal;
			if (mode === "throw") throw new Error("no summary today");
			await new Promise((r) => context.signal.addEventListener("abort", r));
			return { summary: "late", firstKeptEntryId: "e42", tokensBefore: 1 };
		});
		const t0 = Date.now();
		let r = await fake.ask("compaction.compact", compactParams({ timeoutMs: 200 }));
		assert.ok(Date.now() - t0 >= 190);
		assert.match(r.error?.message ?? "", /the compactor took over 200 ms/);
		assert.equal(signal?.aborted, true);
		mode = "throw";
		r = await fake.ask("compaction.compact", compactParams());
		assert.match(r.error?.message ?? "", /no summary today/);
	});
});
