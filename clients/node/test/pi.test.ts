/**
 * pi-roundtable-sandbox 0.7.3's Pi mode through rtsandbox-client's
 * "pi-roundtable-sandbox" entry, against the real rtsandboxd, the reference
 * worker and the fake upstream (see turns.test.ts for its rules): the
 * behaviours of 0.7.3's pi-runtime.test.ts, the runtime-level cases of its
 * pi-broker.test.ts and research-worker.test.ts, and the checks of the
 * options against the daemon's configuration.
 */
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";

import {
	AgentRunError,
	collectPiAttachments,
	PiSandboxRuntime,
	precheckScriptRunner,
	RtsandboxConfigError,
	SandboxResearchWorker,
	ScopedSandboxDelegator,
	type ChannelKey,
	type DelegationOutcome,
	type PiHostContext,
	type PiCompactRequest,
	type PiSandboxRuntimeOptions,
	type PiSandboxTurnResult,
	type PiThinkingLevel,
	type PiToolResponse,
	type PiTurnError,
} from "../src/pi-roundtable-sandbox.js";
import { Daemon, FakeUpstream, cleanupDocker, daemonKnows, inspect, seamsBuilt, segmentOf } from "./harness.js";

const MEMORY_INTRO = "\n\nWhat you remember about this channel:\n";
const PNG = Buffer.from(
	"89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
		"1f15c4890000000d49444154789c6360f8cf00000301010018dd8db4000000" +
		"0049454e44ae426082",
	"hex",
);
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const missing = daemonKnows("daemon.config") ? false : "rtsandboxd lacks daemon.config";
const seams = seamsBuilt();

const fu = new FakeUpstream();
let d: Daemon;

before(async () => {
	if (missing) return;
	await fu.start();
	d = new Daemon({ fu, seams, turnMs: 20000 });
	await d.start();
});

after(async () => {
	await d?.cleanup();
	if (fu.proc !== null) await fu.stop();
	cleanupDocker();
});

/** The options of a 0.7.3 bot that describe d's configuration. */
function options(daemon: Daemon, extra: Partial<PiSandboxRuntimeOptions> = {}): PiSandboxRuntimeOptions {
	const c = daemon.config;
	return {
		partyDir: c.state_dir,
		image: c.image,
		profiles: { default: { model: "claude-test" }, second: { model: "claude-other" } },
		oauthToken: () => "sk-bot-token",
		upstream: fu.url,
		containerPrefix: daemon.prefix,
		startTimeoutMs: c.timeouts.start_ms,
		turnTimeoutMs: c.timeouts.turn_ms,
		memory: { promptBlock: async () => "" },
		effort: { judge: async (_text, previous) => previous.level ?? "low" },
		logger: quiet,
		socket: daemon.socket,
		...extra,
	};
}

function turn(channel: ChannelKey, text: string, turnId: string, author = { id: "u1", name: "Ann" }) {
	return { channel, profile: "default", turnId, author, text, images: [] };
}

function ok(r: PiSandboxTurnResult): asserts r is Extract<PiSandboxTurnResult, { ok: true }> {
	assert.equal(r.ok, true, r.ok ? "" : `${r.error.message}: ${r.error.reason}: ${r.error.detail}`);
}

function failed(r: PiSandboxTurnResult, message: string, reason: string): PiTurnError {
	assert.equal(r.ok, false);
	if (r.ok) throw new Error("unreachable");
	assert.ok(r.error instanceof AgentRunError, "an AgentRunError");
	assert.ok(r.error instanceof Error);
	assert.equal(r.error.name, "AgentRunError");
	assert.equal(r.error.message, message);
	assert.equal(r.error.reason, reason, r.error.detail);
	return r.error;
}

describe("PiSandboxRuntime as 0.7.3's pi-runtime.test.ts uses it", { skip: missing }, () => {
	it("keeps the sessions where 0.7.3 had them and runs turns with memory, thinking and reply files", async () => {
		await fu.reset();
		const channel: ChannelKey = "discord:123";
		const judged: Array<PiThinkingLevel | undefined> = [];
		const memory: string[][] = [];
		const rt = new PiSandboxRuntime(
			options(d, {
				memory: {
					promptBlock: async (ch, id, name) => {
						memory.push([ch, id, name]);
						return `${ch}:${id}`;
					},
				},
				effort: {
					judge: async (_text, previous) => {
						judged.push(previous.level);
						return previous.level ?? "high";
					},
				},
			}),
		);
		const sessions = path.join(d.config.state_dir, "discord_123", "workspace", "sessions");
		// synchronous, from partyDir, before any call
		assert.equal(rt.sessionsDir(channel), sessions);
		assert.equal(rt.attachmentDir(channel), path.join(d.config.state_dir, "discord_123", "workspace", "attachments"));
		fs.mkdirSync(sessions, { recursive: true, mode: 0o700 });
		fs.chmodSync(path.dirname(path.dirname(sessions)), 0o700);
		fs.chmodSync(path.dirname(sessions), 0o700);
		fs.writeFileSync(path.join(sessions, "existing.jsonl"), "existing session\n");
		for (const id of ["a", "b"]) {
			const r = await rt.runTurn({
				...turn(channel, `hello [[file:art.png AQID-${id}]]`, id, { id, name: id.toUpperCase() }),
			});
			ok(r);
			assert.equal(r.files.length, 1);
			assert.equal(r.files[0].name, "art.png");
			assert.ok(Buffer.isBuffer(r.files[0].data), "reply files are Buffers");
			assert.equal(r.files[0].data.toString(), `AQID-${id}`);
		}
		assert.deepEqual(memory, [
			[channel, "a", "A"],
			[channel, "b", "B"],
		]);
		// {level: undefined} until a level was judged for the channel
		assert.deepEqual(judged, [undefined, "high"]);
		const systems = (await fu.modelRequests()).map((q) => q.json.system as string);
		assert.ok(systems.some((s) => s.endsWith(`${MEMORY_INTRO}${channel}:a`)), "the model got A's memory");
		assert.ok(systems.some((s) => s.endsWith(`${MEMORY_INTRO}${channel}:b`)), "the model got B's memory");
		assert.equal(fs.readFileSync(path.join(sessions, "existing.jsonl"), "utf8"), "existing session\n");
		assert.equal(rt.sessionsDir(channel), sessions);
		assert.deepEqual(await rt.status(channel), {
			state: "running",
			image: d.config.image,
			profile: "default",
		});
		await rt.stop(channel);
		assert.deepEqual(await rt.status(channel), { state: "missing" });
		await rt.close();
	});

	it("cancels by the turn's signal: the exact channel container goes, the error is 0.7.3's", async () => {
		await fu.reset();
		const channel: ChannelKey = "discord:cancel";
		const rt = new PiSandboxRuntime(options(d));
		await rt.start(channel, "default");
		assert.ok(await inspect(d.container(channel)), "the container runs");
		await fu.stallModel(30);
		const controller = new AbortController();
		const done = rt.runTurn({ ...turn(channel, "hello", "m"), signal: controller.signal });
		await fu.waitForModel(1);
		controller.abort();
		const e = failed(await done, "Sandbox turn failed", "cancelled");
		assert.doesNotMatch(e.message, /cancel/);
		assert.equal(await inspect(d.container(channel)), null, "the container is gone");
		// an aborted signal never starts a turn
		failed(await rt.runTurn({ ...turn(channel, "never", "n"), signal: AbortSignal.abort() }), "Sandbox turn failed", "cancelled");
		await fu.reset();
		ok(await rt.runTurn(turn(channel, "after", "o")));
		await rt.close();
	});

	it("answers Channel is busy while the channel runs a turn", async () => {
		await fu.reset();
		const channel: ChannelKey = "discord:busy";
		const rt = new PiSandboxRuntime(options(d));
		await rt.start(channel, "default");
		await fu.stallModel(30);
		const controller = new AbortController();
		const first = rt.runTurn({ ...turn(channel, "slow", "t1"), signal: controller.signal });
		await fu.waitForModel(1);
		const e = failed(await rt.runTurn(turn(channel, "second", "t2")), "Channel is busy", "busy");
		assert.match(e.detail ?? "", /running a turn/);
		controller.abort();
		failed(await first, "Sandbox turn failed", "cancelled");
		await rt.close();
	});

	it("refuses a channel key whose segment another key has", async () => {
		const rt = new PiSandboxRuntime(options(d));
		await rt.start("discord:a:b", "default");
		rt.attachmentDir("discord:a:b");
		assert.throws(() => rt.attachmentDir("discord:a_b"), /alias/);
		// the daemon refuses it across runtimes and restarts
		const other = new PiSandboxRuntime(options(d));
		await assert.rejects(other.start("discord:a_b", "default"), /alias refused/);
		await rt.stop("discord:a:b");
		await rt.close();
		await other.close();
	});

	it("starts fresh without moving host files through links the guest planted", async () => {
		const rt = new PiSandboxRuntime(options(d));
		const channel: ChannelKey = "discord:fresh";
		const outside = fs.mkdtempSync("/tmp/rtnj-outside-");
		try {
			await rt.start(channel, "default");
			const sessions = rt.sessionsDir(channel);
			const workspace = path.dirname(sessions);
			fs.writeFileSync(path.join(outside, "owner-session.jsonl"), "owner\n");
			// sessions itself replaced by a link to a host directory
			fs.rmSync(sessions, { recursive: true, force: true });
			fs.symlinkSync(outside, sessions);
			await rt.startFresh(channel);
			assert.deepEqual(fs.readdirSync(outside), ["owner-session.jsonl"]);
			assert.ok(fs.lstatSync(sessions).isDirectory());
			// a real session, a link to a host file, and archive/ a link
			fs.writeFileSync(path.join(sessions, "guest.jsonl"), "guest\n");
			fs.symlinkSync(path.join(outside, "owner-session.jsonl"), path.join(sessions, "linked.jsonl"));
			fs.rmSync(path.join(sessions, "archive"), { recursive: true, force: true });
			fs.symlinkSync(outside, path.join(sessions, "archive"));
			await rt.startFresh(channel);
			assert.deepEqual(fs.readdirSync(outside), ["owner-session.jsonl"]);
			const archive = path.join(sessions, "archive");
			assert.ok(fs.lstatSync(archive).isDirectory());
			const [stamp] = fs.readdirSync(archive);
			assert.deepEqual(fs.readdirSync(path.join(archive, stamp)), ["guest.jsonl"]);
			assert.ok(fs.lstatSync(path.join(sessions, "linked.jsonl")).isSymbolicLink());
			// a planted attachments link is replaced at the next start
			fs.rmSync(path.join(workspace, "attachments"), { recursive: true, force: true });
			fs.symlinkSync(outside, path.join(workspace, "attachments"));
			await rt.start(channel, "default");
			assert.ok(fs.lstatSync(path.join(workspace, "attachments")).isDirectory());
			assert.deepEqual(fs.readdirSync(outside), ["owner-session.jsonl"]);
		} finally {
			await rt.stop(channel);
			await rt.close();
			fs.rmSync(outside, { recursive: true, force: true });
		}
	});

	it("runs the container sealed, with no credential, under the operator's names", async () => {
		const rt = new PiSandboxRuntime(options(d));
		const channel: ChannelKey = "discord:sealed";
		await rt.start(channel, "second");
		const c = await inspect(`${d.prefix}-${segmentOf(channel)}`);
		assert.ok(c !== null);
		assert.equal(c.HostConfig.NetworkMode, "none");
		assert.equal(c.HostConfig.ReadonlyRootfs, true);
		assert.deepEqual(c.HostConfig.CapDrop, ["ALL"]);
		assert.equal(c.Config.Labels["roundtable.sandbox.channel"], channel);
		assert.equal(c.Config.Labels["roundtable.sandbox.profile"], "second");
		assert.ok(!JSON.stringify(c.Config.Env).includes("sk-"), "no credential in the environment");
		assert.ok(c.Config.Env.includes("CLAUDE_CODE_OAUTH_TOKEN=sandbox-dummy-token"));
		await rt.stop(channel);
		await rt.close();
	});
});

describe("the hooks, as 0.7.3's pi-broker.test.ts binds them", { skip: missing }, () => {
	it("gives a host tool the bound identity and a signal that ends with the turn", async () => {
		await fu.reset();
		const calls: Array<{ name: string; input: Record<string, unknown>; context: PiHostContext }> = [];
		const rt = new PiSandboxRuntime(
			options(d, {
				effort: { judge: async () => "medium" },
				tools: {
					names: ["roll_dice"],
					call: async (name, input, context): Promise<PiToolResponse> => {
						calls.push({ name, input, context });
						return { ok: true, text: "stored" };
					},
				},
			}),
		);
		const r = await rt.runTurn(
			turn("discord:tools", '[[tool:roll_dice {"channel": "discord:owner", "author": {"id": "owner"}, "speaker": "owner"}]]', "t1", {
				id: "guest",
				name: "Guest",
			}),
		);
		ok(r);
		assert.equal(r.text, "done: stored");
		assert.equal(calls.length, 1);
		const { signal, ...context } = calls[0].context;
		assert.equal(calls[0].name, "roll_dice");
		assert.deepEqual(calls[0].input, { channel: "discord:owner", author: { id: "owner" }, speaker: "owner" });
		assert.deepEqual(context, {
			channel: "discord:tools",
			profile: "default",
			speaker: { id: "guest", name: "Guest" },
			thinking: "medium",
		});
		assert.equal(signal.aborted, true, "aborted once the turn settled");
		await rt.close();
	});

	it("answers a tool that throws with a generic failure: its words never leave the bot", async () => {
		await fu.reset();
		const rt = new PiSandboxRuntime(
			options(d, {
				tools: {
					names: ["roll_dice"],
					call: async () => {
						throw new Error("db password is hunter2");
					},
				},
			}),
		);
		const r = await rt.runTurn(turn("discord:toolfail", "[[tool:roll_dice {}]]", "t1"));
		const seen = JSON.stringify(await fu.modelRequests()) + JSON.stringify(r);
		assert.doesNotMatch(seen, /hunter2/);
		// a tool answer out of its bounds is a failure too
		const rt2 = new PiSandboxRuntime(
			options(d, {
				tools: {
					names: ["roll_dice"],
					call: async () => ({ ok: true, text: "x".repeat(1000001) }),
				},
			}),
		);
		await fu.reset();
		const r2 = await rt2.runTurn(turn("discord:toolfail", "[[tool:roll_dice {}]]", "t2"));
		assert.doesNotMatch(JSON.stringify(await fu.modelRequests()), /x{1000001}/);
		void r2;
		await rt.close();
		await rt2.close();
	});

	it("fails the turn when the memory or effort hook throws, as 0.7.3 did", async () => {
		await fu.reset();
		const rt = new PiSandboxRuntime(
			options(d, {
				memory: {
					promptBlock: async () => {
						throw new Error("database down");
					},
				},
			}),
		);
		const e = failed(await rt.runTurn(turn("discord:memfail", "hi", "t1")), "Sandbox turn failed", "internal");
		assert.match(e.detail ?? "", /memory hook failed/);
		assert.equal((await fu.modelRequests()).length, 0, "no model call");
		await rt.close();
		const rt2 = new PiSandboxRuntime(
			options(d, {
				effort: {
					judge: async () => {
						throw new Error("judge down");
					},
				},
			}),
		);
		const e2 = failed(await rt2.runTurn(turn("discord:memfail", "hi", "t2")), "Sandbox turn failed", "internal");
		assert.match(e2.detail ?? "", /effort hook failed/);
		// a level that is none of the four is a failure of the hook too
		const rt3 = new PiSandboxRuntime(options(d, { effort: { judge: async () => "max" as PiThinkingLevel } }));
		failed(await rt3.runTurn(turn("discord:memfail", "hi", "t3")), "Sandbox turn failed", "internal");
		assert.equal((await fu.modelRequests()).length, 0, "no model call");
		await rt2.close();
		await rt3.close();
	});

	it("takes images as 0.7.3's PiImage and refuses one out of bounds before the daemon", async () => {
		await fu.reset();
		const rt = new PiSandboxRuntime(options(d));
		const r = await rt.runTurn({
			...turn("discord:image", "look", "t1"),
			images: [{ data: PNG.toString("base64"), mimeType: "image/png" }],
		});
		ok(r);
		assert.equal(r.text, "echo: Ann: look");
		const last = (await fu.modelRequests()).at(-1)!;
		assert.ok(JSON.stringify(last.json.messages).includes(PNG.toString("base64")));
		failed(
			await rt.runTurn({ ...turn("discord:image", "bad", "t2"), images: [{ data: "AQID", mimeType: "text/plain" }] }),
			"Sandbox turn failed",
			"invalid",
		);
		failed(await rt.runTurn(turn("discord:image", "x".repeat(100001), "t3")), "Sandbox turn failed", "invalid");
		failed(await rt.runTurn({ ...turn("discord:image", "hi", "t4"), profile: "nope" }), "Sandbox turn failed", "invalid");
		await assert.rejects(rt.start("discord:image", "nope"), /^Error: Unknown profile$/);
		await rt.close();
	});
});

describe("the options against rtsandboxd's configuration", { skip: missing }, () => {
	it("throws at the first call on a difference, naming the option, both values and the field", async () => {
		const rt = new PiSandboxRuntime(
			options(d, {
				image: "other:tag",
				maxCalls: 64,
				profiles: { default: { model: "claude-test", mcp: ["docs"] }, extra: { model: "m" } },
				timeZone: "Asia/Taipei",
				labelProfile: "my.profile",
			}),
		);
		// synchronous paths need no daemon
		rt.sessionsDir("discord:x");
		await assert.rejects(rt.runTurn(turn("discord:x", "hi", "t1")), (e: unknown) => {
			assert.ok(e instanceof RtsandboxConfigError);
			const fields = e.differences.map((x) => x.field).sort();
			assert.deepEqual(fields, [
				"budgets.max_calls",
				"docker.label_profile",
				"image",
				"profiles.default.mcp",
				"profiles.extra",
				"time_zone",
			]);
			assert.match(e.message, /image is "other:tag" but rtsandboxd has "rtsandbox-worker:latest": change image in rtsandboxd\.json/);
			assert.match(e.message, /maxCalls is 64 but rtsandboxd has 128: change budgets\.max_calls/);
			return true;
		});
		await assert.rejects(rt.status("discord:x"), RtsandboxConfigError);
		await assert.rejects(rt.start("discord:x", "default"), RtsandboxConfigError);
		await rt.close();
		// partyDir is the state directory
		const rt2 = new PiSandboxRuntime(options(d, { partyDir: "/var/lib/elsewhere" }));
		await assert.rejects(rt2.stop("discord:x"), /partyDir is "\/var\/lib\/elsewhere" but rtsandboxd has ".*": change state_dir/);
		await rt2.close();
		// the defaults of 0.7.3 are compared too: this daemon's upstream is not Anthropic's
		const rt3 = new PiSandboxRuntime(options(d, { upstream: undefined }));
		await assert.rejects(rt3.status("discord:x"), /upstream is "https:\/\/api\.anthropic\.com" .* change upstream\.url/);
		await rt3.close();
	});

	it("runs a bot whose options match, and says which socket it cannot reach", async () => {
		const rt = new PiSandboxRuntime(options(d));
		assert.deepEqual(await rt.status("discord:none"), { state: "missing" });
		await rt.close();
		const gone = new PiSandboxRuntime({ ...options(d), socket: "/tmp/rtnj-nothing-here.sock" });
		const r = await gone.runTurn(turn("discord:x", "hi", "t1"));
		const e = failed(r, "Sandbox turn failed", "internal");
		assert.match(e.detail ?? "", /rtnj-nothing-here\.sock/);
		await gone.close();
	});
});

const credentials = missing || (daemonKnows("credential.get") ? false : "rtsandboxd lacks the credential.get hook");

describe("credentials from the bot (credential.get)", { skip: credentials }, () => {
	let dh: Daemon;

	before(async () => {
		dh = new Daemon({
			fu,
			turnMs: 30000,
			edit: (c) => {
				c.upstream = { url: fu.url, credential: "hook", ca_file: fu.caFile };
			},
		});
		await dh.start();
	});

	after(async () => {
		await dh?.cleanup();
	});

	it("asks oauthToken for every model call; a getter that fails, answers empty or hangs fails that call only", async () => {
		await fu.reset();
		let calls = 0;
		let mode: "ok" | "throw" | "empty" | "hang" = "ok";
		const rt = new PiSandboxRuntime(
			options(dh, {
				tools: { names: ["roll_dice"], call: async () => ({ ok: true, text: "4" }) },
				oauthToken: () => {
					calls++;
					if (mode === "throw") throw new Error("refresh failed for sk-secret-in-error");
					if (mode === "empty") return "";
					if (mode === "hang") return new Promise<string>(() => {});
					return `sk-bot-${calls}`;
				},
			}),
		);
		ok(await rt.runTurn(turn("discord:cred", "[[tool:roll_dice {}]]", "t1")));
		const tokens = (await fu.modelRequests()).map((q) => q.token);
		assert.deepEqual(tokens, ["sk-bot-1", "sk-bot-2"], "read at every call");
		for (const m of ["throw", "empty", "hang"] as const) {
			await fu.reset();
			mode = m;
			const t0 = Date.now();
			const r = await rt.runTurn(turn("discord:cred", `with ${m}`, `t-${m}`));
			assert.equal(r.ok, false, m);
			assert.equal((await fu.modelRequests()).length, 0, `${m}: nothing reached the upstream`);
			assert.ok(Date.now() - t0 < 25000, `${m}: the turn went on`);
			assert.doesNotMatch(JSON.stringify(r), /sk-secret-in-error/);
		}
		mode = "ok";
		await fu.reset();
		ok(await rt.runTurn(turn("discord:cred", "again", "t9")));
		await rt.close();
		assert.doesNotMatch(dh.log(), /sk-secret-in-error|sk-bot-/, "no credential in the daemon's log");
	});

	it("refuses options without the getter the daemon asks for", async () => {
		const rt = new PiSandboxRuntime({
			...options(dh),
			oauthToken: undefined as unknown as () => string,
		});
		await assert.rejects(rt.status("discord:x"), /oauthToken is unset but rtsandboxd has "hook": change upstream\.credential/);
		await rt.close();
	});
});

const compactions = missing || (daemonKnows("compaction.compact") ? false : "rtsandboxd lacks the compaction.compact hook");

describe("the host compactor (compaction)", { skip: compactions }, () => {
	let dc: Daemon;

	before(async () => {
		dc = new Daemon({
			fu,
			turnMs: 30000,
			edit: (c) => {
				c.compaction = { engine: "test/jev" };
			},
		});
		await dc.start();
	});

	after(async () => {
		await dc?.cleanup();
	});

	it("hands the worker's compact request to compaction.compact and its compaction back", async () => {
		const seen: { request: PiCompactRequest; channel: string; aborted: boolean }[] = [];
		let mode: "answer" | "decline" | "throw" = "answer";
		const rt = new PiSandboxRuntime(
			options(dc, {
				compaction: {
					engine: "test/jev",
					compact: async (request, context) => {
						seen.push({ request, channel: context.channel, aborted: context.signal.aborted });
						if (mode === "throw") throw new Error("compactor secret text");
						if (mode === "decline") return undefined;
						return { summary: "Ann wants the rolls kept.", firstKeptEntryId: request.firstKeptEntryId, tokensBefore: request.tokensBefore };
					},
				},
			}),
		);
		const r = await rt.runTurn(turn("discord:compact", "/compact keep the dice rolls", "t1"));
		ok(r);
		assert.equal(r.text, "Compacted by test/jev: Ann wants the rolls kept.");
		assert.equal(seen.length, 1);
		assert.equal(seen[0].channel, "discord:compact");
		assert.equal(seen[0].aborted, false);
		assert.equal(seen[0].request.reason, "manual");
		assert.equal(seen[0].request.firstKeptEntryId, "t1");
		assert.equal(seen[0].request.customInstructions, "keep the dice rolls");
		mode = "decline";
		const d2 = await rt.runTurn(turn("discord:compact", "/compact", "t2"));
		ok(d2);
		assert.equal(d2.text, "Compaction fell back: the compactor declined");
		mode = "throw";
		const d3 = await rt.runTurn(turn("discord:compact", "/compact", "t3"));
		ok(d3);
		assert.equal(d3.text, "Compaction fell back: the compactor failed");
		await rt.close();
		assert.doesNotMatch(dc.log(), /compactor secret text/, "the compactor's error stays with the bot");
	});
});

const prechecks = missing || (daemonKnows("precheck.run") ? false : "rtsandboxd lacks precheck.run");

describe("precheck scripts (precheckScriptRunner)", { skip: prechecks }, () => {
	let dp: Daemon;
	const schedule = { id: 4, title: "standup", channel: "discord:pc" as ChannelKey, target: "owner", createdTier: "owner" as const };
	const context = (signal = new AbortController().signal) => ({
		schedule,
		firedAt: new Date("2026-12-06T07:00:00.000Z"),
		signal,
		timeZone: "Asia/Taipei",
		today: "2026-12-06",
	});

	before(async () => {
		dp = new Daemon({
			fu,
			turnMs: 30000,
			edit: (c) => {
				c.precheck = { entrypoint: ["/rtsandbox-worker", "precheck"], timeout_ms: 20000 };
			},
		});
		await dp.start();
	});

	after(async () => {
		await dp?.cleanup();
	});

	it("runs a script with upstream's options and gives back its result or its error", async () => {
		const rt = new PiSandboxRuntime(options(dp));
		const scopes: unknown[] = [];
		const runner = precheckScriptRunner({
			image: "rtsandbox-worker:latest",
			runRoot: "/tmp/unused",
			uid: 1000,
			gid: 1000,
			entrypoint: ["/rtsandbox-worker", "precheck"],
			grant: (scope) => {
				scopes.push(scope);
				return [];
			},
			runtime: rt,
		});
		assert.equal(runner.timeoutMs, undefined);
		assert.match(await runner.describe({ channel: "discord:pc", target: "owner" }), /can call no MCP server/);
		assert.deepEqual(await runner.run("wake ${today} ${schedule.title}\n", context()), {
			wake: true,
			context: "2026-12-06 standup",
		});
		assert.deepEqual(scopes[1], { channel: "discord:pc", target: "owner", tier: "owner" });
		await assert.rejects(runner.run("fail not today\n", context()), /^Error: not today$/);
		const ac = new AbortController();
		const slow = runner.run("sleep 30000\n", context(ac.signal));
		setTimeout(() => ac.abort(), 1000);
		await assert.rejects(slow, /the precheck run was stopped/);
		const wrong = precheckScriptRunner({ maxCalls: 5, grant: () => [], runtime: rt });
		await assert.rejects(wrong.run("return 1\n", context()), /precheck\.max_calls is 16 in rtsandboxd\.json, 5 here/);
		assert.throws(() => precheckScriptRunner({ maxCalls: 101, grant: () => [] }), /invalid precheck MCP call budget/);
		await rt.close();
	});
});

describe("research and attachments", { skip: missing || (seams ? false : "needs a build with -Dtest_seams=true") }, () => {
	let web: http.Server;
	let base = "";

	before(async () => {
		web = http.createServer((req, res) => {
			if (req.url === "/notes.txt") {
				res.writeHead(200, { "content-type": "text/plain" });
				res.end("plain notes\n");
			} else if (req.url === "/pic") {
				res.writeHead(200, { "content-type": "image/png" });
				res.end(PNG);
			} else {
				res.writeHead(404);
				res.end("no such page");
			}
		});
		await new Promise<void>((r) => web.listen(0, "127.0.0.1", r));
		base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
	});

	after(() => new Promise<void>((r) => web.close(() => r())));

	it("runs a research job from ScopedSandboxDelegator's run with 0.7.3's SandboxResearchWorker", async () => {
		await fu.reset();
		const queries: string[] = [];
		const rt = new PiSandboxRuntime(options(d));
		const worker = new SandboxResearchWorker({
			modelRuntime: {},
			agentDir: "/tmp/unused",
			workDir: "/tmp/unused",
			model: "claude-test",
			thinking: "low",
			search: async (query) => {
				queries.push(query);
				return "1. Fastnet Rock - 54 m";
			},
			extractFetched: async () => "unused",
			runtime: rt,
		});
		const outcomes: DelegationOutcome[] = [];
		const delegator = new ScopedSandboxDelegator({
			target: "guest",
			run: (task, context) => worker.run(task, context.signal),
			deliver: async (_job, outcome) => {
				outcomes.push(outcome);
			},
			logger: quiet,
		});
		delegator.start({
			channel: "discord:research",
			target: "guest",
			author: { id: "u1", name: "Ann" },
			title: "Height",
			task: `height? [[tool:web_search {"query": "fastnet height"}]] [[tool:fetch_content {"url": "${base}/notes.txt"}]]`,
		});
		await delegator.idle();
		assert.equal(outcomes.length, 1);
		assert.equal(outcomes[0].ok, true, JSON.stringify(outcomes));
		assert.match(outcomes[0].ok ? outcomes[0].report : "", /Fastnet Rock - 54 m/);
		assert.match(outcomes[0].ok ? outcomes[0].report : "", /plain notes/);
		assert.deepEqual(queries, ["fastnet height"]);
		// outside a delegator it needs the channel
		await assert.rejects(worker.run("x", new AbortController().signal), /needs the job's channel and author/);
		// an aborted signal: 0.7.3's words
		await assert.rejects(worker.run("x", AbortSignal.abort()), (e: unknown) => (e as { name?: string }).name === "AbortError");
		const mine = new SandboxResearchWorker({
			model: "claude-test",
			thinking: "low",
			search: async () => "",
			fetchContent: async () => "",
			socket: d.socket,
			channel: "discord:research",
			author: { id: "u1", name: "Ann" },
		});
		await fu.script({ kind: "stall", seconds: 30, before_headers: true, match: "/v1/messages" });
		const ac = new AbortController();
		const pending = mine.run("slow", ac.signal);
		await fu.waitForModel(1 + (await fu.modelRequests()).length);
		ac.abort();
		await assert.rejects(pending, /Research deadline exceeded/);
		await mine.close();
		await delegator.dispose();
		await rt.close();
	});

	it("collects a message's attachments into the channel's attachments/ with 0.7.3's result", async () => {
		const rt = new PiSandboxRuntime(options(d));
		const channel: ChannelKey = "discord:att";
		const prepared: Array<[number, string]> = [];
		const r = await collectPiAttachments(
			{
				channel,
				messageId: "m1",
				attachments: [
					{ url: `${base}/notes.txt`, name: "notes.txt", size: 12 },
					{ url: `${base}/pic`, name: "../pic.png", size: PNG.length },
					{ url: `${base}/missing`, name: "gone.txt", size: 1 },
					{ url: `${base}/notes.txt`, name: "huge.bin", size: 25 * 1024 * 1024 + 1 },
				],
				reference: { attachments: [{ url: `${base}/notes.txt`, name: "ref.txt", size: 12, contentType: "text/plain" }] },
			},
			rt.attachmentDir(channel),
			{
				prepareImage: async (data, mimeType) => {
					prepared.push([data.byteLength, mimeType]);
					return { data: Buffer.from(data).toString("base64"), mimeType };
				},
			},
		);
		const dir = rt.attachmentDir(channel);
		assert.deepEqual(
			r.files.map((f) => [f.name, f.file, f.path, f.size, f.fromReference]),
			[
				["notes.txt", "m1-0-notes.txt", path.join(dir, "m1-0-notes.txt"), 12, false],
				["../pic.png", "m1-1-__pic.png", path.join(dir, "m1-1-__pic.png"), PNG.length, false],
				["ref.txt", "m1-ref-0-ref.txt", path.join(dir, "m1-ref-0-ref.txt"), 12, true],
			],
		);
		assert.equal(r.files[1].contentType, "image/png");
		assert.equal(r.files[2].contentType, "text/plain");
		assert.equal(fs.readFileSync(path.join(dir, "m1-0-notes.txt"), "utf8"), "plain notes\n");
		assert.deepEqual(prepared, [[PNG.length, "image/png"]]);
		assert.deepEqual(r.images, [{ data: PNG.toString("base64"), mimeType: "image/png" }]);
		assert.deepEqual(
			r.failures.map((f) => [f.name, f.reason, f.fromReference]),
			[
				["huge.bin", `larger than 25 MB (${25 * 1024 * 1024 + 1} bytes)`, false],
				["gone.txt", "download failed with HTTP 404", false],
			],
		);
		// only the channel's own attachments/
		await assert.rejects(
			collectPiAttachments({ channel, messageId: "m2", attachments: [] }, "/tmp", { prepareImage: async () => ({ data: "", mimeType: "" }) }),
			/writes discord:att's attachments only to/,
		);
		await rt.close();
	});
});

const fetching = missing || (seams ? false : "needs a build with -Dtest_seams=true") || (daemonKnows("fetch.get") && daemonKnows("fetch.check") ? false : "rtsandboxd lacks fetch.get and fetch.check");

describe("safeFetch and assertPublicUrl through the daemon's controlled fetch", { skip: fetching }, () => {
	let web: http.Server;
	let base = "";

	before(async () => {
		web = http.createServer((req, res) => {
			if (req.url === "/page") {
				res.writeHead(200, { "content-type": "text/html" });
				res.end("<p>public page</p>");
			} else if (req.url === "/moved") {
				res.writeHead(302, { location: "/page" });
				res.end();
			} else {
				res.writeHead(404);
				res.end();
			}
		});
		await new Promise<void>((r) => web.listen(0, "127.0.0.1", r));
		base = `http://127.0.0.1:${(web.address() as AddressInfo).port}`;
	});

	after(() => new Promise<void>((r) => web.close(() => r())));

	it("fetches bounded bytes, follows or returns redirects, and refuses what is not public", async () => {
		const { safeFetch, assertPublicUrl, UnsafeUrlError } = await import("../src/pi-roundtable-sandbox.js");
		const rt = new PiSandboxRuntime(options(d));
		const r = await safeFetch(`${base}/moved`);
		assert.equal(r.status, 200);
		assert.equal(r.url, `${base}/page`);
		assert.equal(Buffer.from(r.data).toString(), "<p>public page</p>");
		assert.equal(r.headers.get("content-type"), "text/html");
		const hop = await safeFetch(`${base}/moved`, { followRedirects: false });
		assert.equal(hop.status, 302);
		// resolved against the URL that answered, as egress vets it
		assert.equal(hop.headers.get("location"), `${base}/page`);
		await assert.rejects(safeFetch(`${base}/page`, { maxBytes: 5 }), UnsafeUrlError);
		for (const url of ["http://10.0.0.1/", "http://169.254.169.254/latest", "http://[::ffff:10.0.0.1]/"]) {
			await assert.rejects(safeFetch(url), UnsafeUrlError, url);
			await assert.rejects(assertPublicUrl(url), UnsafeUrlError, url);
		}
		assert.equal((await assertPublicUrl(`${base}/page`)).href, `${base}/page`);
		const ac = new AbortController();
		ac.abort(new Error("stop"));
		await assert.rejects(safeFetch(`${base}/page`, { signal: ac.signal }), /stop/);
		await rt.close();
	});
});
