/**
 * PiSandboxRuntime against the real rtsandboxd, the reference worker in a
 * real container and the fake upstream, whose model answers by rules
 * (tests/fixtures/fake_upstream.py): [[tool:NAME {json}]] asks for a tool,
 * [[file:NAME content]] makes the worker write a reply file, after tool
 * results it says "done: <results>", else "echo: <text>".  The worker puts
 * "<author name>: " before the turn's text and sends the memory as system
 * text.
 */
import assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";

import {
	PiSandboxRuntime,
	RtsandboxRpcError,
	SandboxResearchWorker,
	type EffortRequest,
	type MemoryRequest,
	type ThinkingLevel,
	type ToolContext,
	type TurnProgress,
	type TurnResult,
} from "../src/index.js";
import { Daemon, FakeUpstream, LABEL_CHANNEL, IMAGE, cleanupDocker, docker, inspect, seamsBuilt, sleep } from "./harness.js";

const AUTHOR = { id: "u1", name: "Ann" };
const MEMORY_INTRO = "\n\nWhat you remember about this channel:\n";

const fu = new FakeUpstream();
let d: Daemon;
const seams = seamsBuilt();

before(async () => {
	await fu.start();
	d = new Daemon({ fu, seams });
	await d.start();
});

after(async () => {
	await d?.cleanup();
	await fu.stop();
	cleanupDocker();
});

function ok(r: TurnResult): asserts r is Extract<TurnResult, { ok: true }> {
	assert.equal(r.ok, true, JSON.stringify(r));
}

function failed(r: TurnResult, reason: string): string {
	assert.equal(r.ok, false, JSON.stringify(r));
	if (r.ok) throw new Error("unreachable");
	assert.equal(r.error.reason, reason, JSON.stringify(r));
	assert.equal(typeof r.error.message, "string");
	return r.error.message;
}

function params(channel: string, text: string, turnId = "t1") {
	return { channel, profile: "default", turnId, author: AUTHOR, text, images: [] };
}

describe("turns", () => {
	it("runs a turn with a host tool and a reply file", async () => {
		await fu.reset();
		const toolCalls: Array<{ input: Record<string, unknown>; ctx: ToolContext }> = [];
		const rt = new PiSandboxRuntime({
			socket: d.socket,
			tools: {
				roll_dice: async (input, ctx) => {
					toolCalls.push({ input, ctx });
					return { ok: true, text: "4" };
				},
			},
		});
		const events: TurnProgress[] = [];
		rt.on("progress", (p: TurnProgress) => events.push(p));
		const seen: string[] = [];
		const content = "Hello from inside the sandbox, \u00fcn\u00efc\u00f6de \u2713";
		const text = `roll [[tool:roll_dice {"sides":6}]] and [[file:hello.txt ${content}]]`;
		const r = await rt.runTurn({ ...params("turn:1", text), onProgress: (p) => seen.push(p.phase) });
		ok(r);
		const body = Buffer.from(content);
		assert.equal(r.text, `done: 4\nWrote hello.txt (${body.length} bytes); it goes with the reply.`);
		assert.equal(r.files.length, 1);
		assert.equal(r.files[0].name, "hello.txt");
		assert.ok(r.files[0].data instanceof Uint8Array);
		assert.deepEqual(Buffer.from(r.files[0].data), body);
		// the tool got the bound identity and a live signal
		assert.equal(toolCalls.length, 1);
		assert.deepEqual(toolCalls[0].input, { sides: 6 });
		const { signal, ...ctx } = toolCalls[0].ctx;
		assert.deepEqual(ctx, { channel: "turn:1", profile: "default", speaker: AUTHOR, thinking: "low", turnId: "t1" });
		// aborted once the turn settled
		assert.equal(signal.aborted, true);
		assert.deepEqual(seen.slice(0, 4), ["starting", "container", "ready", "delivered"]);
		assert.equal(seen.at(-1), "result");
		assert.ok(seen.includes("tool_call"), seen.join());
		assert.deepEqual(
			events.map((e) => e.phase),
			seen,
		);
		assert.ok(events.every((e) => e.channel === "turn:1" && e.turnId === "t1"));
		// the model saw the real credential, the tool result and the author
		const reqs = await fu.modelRequests();
		assert.equal(reqs.length, 2);
		assert.equal(reqs[0].token, "sk-test-real-token");
		// images as bytes or base64, one tiny PNG
		const png = Buffer.from(
			"89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
				"1f15c4890000000d49444154789c6360f8cf00000301010018dd8db4000000" +
				"0049454e44ae426082",
			"hex",
		);
		const r2 = await rt.runTurn({
			...params("turn:1", "look", "t2"),
			images: [{ data: new Uint8Array(png), mimeType: "image/png" }],
		});
		ok(r2);
		assert.equal(r2.text, "echo: Ann: look");
		const last = (await fu.modelRequests()).at(-1)!;
		const blocks = last.json.messages[0].content;
		assert.ok(
			JSON.stringify(blocks).includes(png.toString("base64")),
			"the image reached the model",
		);
		await rt.close();
	});

	it("calls 0.7.3-style memory and effort adapters with the right arguments", async () => {
		await fu.reset();
		const memoryCalls: MemoryRequest[] = [];
		const judgeCalls: EffortRequest[] = [];
		const levels: ThinkingLevel[] = ["high", "medium"];
		let memory = "remember X";
		const thinkingSeen: string[] = [];
		const rt = new PiSandboxRuntime({
			socket: d.socket,
			memory: {
				async promptBlock(req) {
					memoryCalls.push(req);
					return memory;
				},
			},
			effort: {
				judge(req) {
					judgeCalls.push(req);
					return levels.shift() ?? "low";
				},
			},
			tools: {
				roll_dice: (_input, ctx) => {
					thinkingSeen.push(ctx.thinking);
					return { ok: true, text: "4" };
				},
			},
		});
		const key = "hooks:1";
		ok(await rt.runTurn(params(key, "think [[tool:roll_dice {}]]")));
		assert.deepEqual(memoryCalls, [{ channel: key, speaker: AUTHOR }]);
		// a channel's first turn has no previous level
		assert.deepEqual(judgeCalls, [{ text: "think [[tool:roll_dice {}]]" }]);
		assert.ok(!("previous" in judgeCalls[0]));
		assert.deepEqual(thinkingSeen, ["high"]);
		let reqs = await fu.modelRequests();
		assert.ok(reqs[0].json.system.endsWith(MEMORY_INTRO + "remember X"));
		// the next turn: previous is the level the last one was judged at
		memory = "second memory";
		ok(await rt.runTurn(params(key, "again [[tool:roll_dice {}]]", "t2")));
		assert.deepEqual(judgeCalls[1], { text: "again [[tool:roll_dice {}]]", previous: "high" });
		assert.deepEqual(thinkingSeen, ["high", "medium"]);
		reqs = await fu.modelRequests();
		assert.ok(reqs.at(-1)!.json.system.endsWith(MEMORY_INTRO + "second memory"));
		// memory and thinking given: neither adapter is asked
		ok(await rt.runTurn({ ...params(key, "[[tool:roll_dice {}]]", "t3"), memory: "given", thinking: "xhigh" }));
		assert.equal(memoryCalls.length, 2);
		assert.equal(judgeCalls.length, 2);
		assert.equal(thinkingSeen.at(-1), "xhigh");
		// a memory block over 100 000 chars fails the turn, as under 0.7.3
		memory = "m".repeat(100001);
		const before = (await fu.modelRequests()).length;
		const msg = failed(await rt.runTurn(params(key, "too much", "t4")), "invalid");
		assert.equal(msg, "Memory context too large");
		assert.equal((await fu.modelRequests()).length, before);
		// at the limit it is the turn's memory
		memory = "m".repeat(100000);
		ok(await rt.runTurn(params(key, "at the limit", "t5")));
		assert.ok((await fu.modelRequests()).at(-1)!.json.system.endsWith(MEMORY_INTRO + memory));
		await rt.close();
	});

	it("cancels a turn by its signal, answering once the container is gone", async () => {
		await fu.reset();
		const rt = new PiSandboxRuntime({ socket: d.socket, tools: {} });
		const key = "cancel:1";
		await fu.stallModel(30);
		const ac = new AbortController();
		const pending = rt.runTurn({ ...params(key, "to be cancelled"), signal: ac.signal });
		await fu.waitForModel(1);
		assert.ok(await inspect(d.container(key)), "the container runs");
		const t0 = Date.now();
		ac.abort();
		const msg = failed(await pending, "cancelled");
		assert.match(msg, /cancelled/);
		assert.ok(Date.now() - t0 < 15000);
		assert.equal(await inspect(d.container(key)), null, "the container is gone");
		assert.equal((await rt.status(key)).busy, false);
		// an aborted signal never starts a turn
		failed(await rt.runTurn({ ...params(key, "never", "t0"), signal: AbortSignal.abort() }), "cancelled");
		// the channel goes on
		const r = await rt.runTurn(params(key, "after", "t2"));
		ok(r);
		assert.equal(r.text, "echo: Ann: after");
		await rt.close();
	});

	it("answers busy while the channel runs a turn", async () => {
		await fu.reset();
		const rt = new PiSandboxRuntime({ socket: d.socket });
		const key = "busy:1";
		await rt.start(key, "default");
		await fu.stallModel(30);
		const ac = new AbortController();
		const first = rt.runTurn({ ...params(key, "slow one"), signal: ac.signal });
		await fu.waitForModel(1);
		const msg = failed(await rt.runTurn(params(key, "second", "t2")), "busy");
		assert.match(msg, /running a turn/);
		assert.equal((await rt.status(key)).busy, true);
		// another channel is not busy
		const other = await rt.runTurn(params("busy:2", "other channel"));
		ok(other);
		ac.abort();
		failed(await first, "cancelled");
		await rt.close();
	});

	it("gives failures with their reasons", async () => {
		await fu.reset();
		const rt = new PiSandboxRuntime({
			socket: d.socket,
			tools: {
				roll_dice: () => {
					throw new Error("no dice today");
				},
			},
		});
		const key = "errors:1";
		// inputs the daemon refuses before anything starts
		assert.match(failed(await rt.runTurn(params(key, "x".repeat(100001))), "invalid"), /text/);
		assert.match(failed(await rt.runTurn(params(key, "hi", "../up")), "invalid"), /turnId/);
		assert.match(failed(await rt.runTurn({ ...params(key, "hi"), profile: "nope" }), "invalid"), /profile/);
		assert.match(
			failed(
				await rt.runTurn({ ...params(key, "hi"), images: [{ data: "not base64!", mimeType: "image/png" }] }),
				"invalid",
			),
			/image/,
		);
		assert.equal((await fu.modelRequests()).length, 0);
		// lifecycle calls reject with the daemon's error, naming the field
		await assert.rejects(rt.start(key, "nope"), (e: unknown) => {
			assert.ok(e instanceof RtsandboxRpcError);
			assert.equal(e.code, -32602);
			assert.equal(e.method, "channel.start");
			assert.match(e.message, /unknown profile "nope"/);
			return true;
		});
		await assert.rejects(rt.status(""), (e: unknown) => e instanceof RtsandboxRpcError && /channel/.test(e.message));
		// a tool that throws: the model sees its error
		const r = await rt.runTurn(params(key, "[[tool:roll_dice {}]]", "t2"));
		ok(r);
		assert.equal(r.text, "done: no dice today");
		// a tool of the configuration this runtime does not serve
		const r2 = await rt.runTurn(params(key, "[[tool:fail_tool {}]]", "t3"));
		ok(r2);
		assert.equal(r2.text, "done: Tool fail_tool is not available");
		await rt.close();
	});

	it("leaves profile out of the status of a container without the profile label", async () => {
		const rt = new PiSandboxRuntime({ socket: d.socket });
		const key = "label:1";
		assert.deepEqual(await rt.status(key), { state: "missing", broker: "none", busy: false });
		const r = await docker("create", "--name", d.container(key), "--label", `${LABEL_CHANNEL}=${key}`, IMAGE);
		assert.equal(r.code, 0, r.stderr);
		const st = await rt.status(key);
		assert.equal(st.state, "stopped");
		assert.equal(st.image, IMAGE);
		assert.ok(!("profile" in st), JSON.stringify(st));
		// a start replaces it with one of the profile
		await rt.start(key, "second");
		const now = await rt.status(key);
		assert.equal(now.state, "running");
		assert.equal(now.profile, "second");
		assert.equal(now.broker, "ready");
		const fresh = await rt.startFresh(key);
		assert.equal(fresh.archived, 0);
		assert.equal(await inspect(d.container(key)), null);
		await rt.stop(key);
		await rt.close();
	});
});

describe("research and attachments", { skip: seams ? false : "needs a build with -Dtest_seams=true" }, () => {
	let web: http.Server;
	let base = "";
	const seen: string[] = [];

	before(async () => {
		web = http.createServer((req, res) => {
			seen.push(req.url ?? "");
			if (req.url === "/notes.txt") {
				res.writeHead(200, { "content-type": "text/plain" });
				res.end("plain notes\n");
			} else {
				res.writeHead(404);
				res.end("no such page");
			}
		});
		await new Promise<void>((r) => web.listen(0, "127.0.0.1", r));
		base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
	});

	after(() => new Promise<void>((r) => web.close(() => r())));

	it("runs a research job with web_search served by the bot", async () => {
		await fu.reset();
		const queries: Array<{ query: string; channel: string }> = [];
		const worker = new SandboxResearchWorker({
			socket: d.socket,
			search: async (query, ctx) => {
				queries.push({ query, channel: ctx.channel });
				return "1. Fastnet Rock - 54 m";
			},
		});
		const r = await worker.run({
			channel: "r:1",
			task: `height? [[tool:web_search {"query": "fastnet height"}]] [[tool:fetch_content {"url": "${base}/notes.txt"}]]`,
			author: AUTHOR,
		});
		assert.equal(r.ok, true, JSON.stringify(r));
		if (!r.ok) return;
		assert.match(r.report, /Fastnet Rock - 54 m/);
		assert.match(r.report, /plain notes/);
		assert.deepEqual(queries, [{ query: "fastnet height", channel: "r:1" }]);
		// a task the daemon refuses
		const bad = await worker.run({ channel: "r:1", task: "   ", author: AUTHOR });
		assert.deepEqual(bad.ok ? null : bad.error.reason, "invalid");
		// cancelled by its signal
		await fu.script({ kind: "stall", seconds: 30, before_headers: true, match: "/v1/messages" });
		const ac = new AbortController();
		const pending = worker.run({ channel: "r:1", task: "slow", author: AUTHOR, signal: ac.signal });
		await fu.waitForModel(3);
		ac.abort();
		const c = await pending;
		assert.deepEqual(c.ok ? null : c.error.reason, "cancelled");
		await worker.close();
	});

	it("fetches attachments into the channel's attachments/", async () => {
		const rt = new PiSandboxRuntime({ socket: d.socket });
		const r = await rt.fetchAttachments("a:1", "m1", [{ url: `${base}/notes.txt`, name: "notes.txt" }], {
			reference: [{ url: `${base}/missing`, name: "gone.txt" }],
		});
		assert.deepEqual(r.saved, [{ index: 0, reference: false, name: "notes.txt", file: "m1-0-notes.txt", size: 12 }]);
		assert.equal(r.failed.length, 1);
		assert.match(r.failed[0].reason, /404/);
		const dir = (await rt.paths("a:1")).attachments;
		assert.equal(fs.readFileSync(path.join(dir, "m1-0-notes.txt"), "utf8"), "plain notes\n");
		await assert.rejects(
			rt.fetchAttachments("a:1", "bad/id", []),
			(e: unknown) => e instanceof RtsandboxRpcError && e.code === -32602 && /messageId/.test(e.message),
		);
		await rt.close();
		await sleep(0);
	});
});
