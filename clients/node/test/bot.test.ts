/**
 * The 0.7.3 bot of test/bot, installed from this package's npm pack tarball
 * into a project of its own and compiled with tsc --strict by run.py
 * ($RTSANDBOX_BOT_DIR), run for real against rtsandboxd: under Node its
 * compiled JavaScript, under Bun its TypeScript source, as Bun users run it.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";

import { Daemon, FakeUpstream, cleanupDocker, daemonKnows } from "./harness.js";

const BOT_DIR = process.env.RTSANDBOX_BOT_DIR ?? "";
const isBun = typeof (globalThis as { Bun?: unknown }).Bun !== "undefined";
const skip = !daemonKnows("daemon.config")
	? "rtsandboxd lacks daemon.config"
	: BOT_DIR === ""
		? "RTSANDBOX_BOT_DIR is not set: run.py packs the package and builds the bot"
		: false;

const fu = new FakeUpstream();
let d: Daemon;

before(async () => {
	if (skip) return;
	await fu.start();
	d = new Daemon({ fu, turnMs: 30000 });
	await d.start();
});

after(async () => {
	await d?.cleanup();
	if (fu.proc !== null) await fu.stop();
	cleanupDocker();
});

function runBot(): Promise<{ code: number | null; steps: Record<string, any>; stderr: string }> {
	const args = isBun ? [path.join(BOT_DIR, "bot.ts")] : [path.join(BOT_DIR, "out", "bot.js")];
	const child = spawn(process.execPath, args, {
		cwd: BOT_DIR,
		env: {
			PATH: "/usr/local/bin:/usr/bin:/bin",
			HOME: process.env.HOME ?? "/tmp",
			RTSANDBOX_CONTROL_SOCKET: d.socket,
			PARTY_DIR: d.config.state_dir,
			SANDBOX_IMAGE: d.config.image,
			UPSTREAM: fu.url,
			CONTAINER_PREFIX: d.prefix,
			START_MS: String(d.config.timeouts.start_ms),
			TURN_MS: String(d.config.timeouts.turn_ms),
		},
		stdio: ["ignore", "pipe", "pipe"],
	});
	let out = "";
	let err = "";
	child.stdout.on("data", (b) => (out += b));
	child.stderr.on("data", (b) => (err += b));
	return new Promise((resolve) => {
		child.on("close", (code) => {
			const steps: Record<string, any> = {};
			for (const line of out.split("\n").filter((l) => l !== "")) {
				const o = JSON.parse(line);
				steps[o.step] = o;
			}
			resolve({ code, steps, stderr: err });
		});
	});
}

describe(`a 0.7.3 bot, only its import changed, under ${isBun ? "Bun" : "Node"}`, { skip }, () => {
	it("runs two turns with a host tool, an image, reply files, memory and effort, a cancel and startFresh", async () => {
		await fu.reset();
		const { code, steps, stderr } = await runBot();
		assert.equal(code, 0, stderr);
		const channelDir = path.join(d.config.state_dir, "discord_bot-1", "workspace");
		assert.deepEqual(steps.paths, {
			step: "paths",
			sessions: path.join(channelDir, "sessions"),
			attachments: path.join(channelDir, "attachments"),
		});
		assert.deepEqual(steps.status.status, { state: "running", image: d.config.image, profile: "default" });
		assert.deepEqual(steps.turn1, { step: "turn1", ok: true, text: "done: roll_dice: 4", files: [] });
		assert.deepEqual(steps.turn2.files, [{ name: "note.txt", text: "seen", buffer: true }]);
		assert.equal(steps.turn2.ok, true);
		assert.deepEqual(
			{ ok: steps.cancel.ok, error: steps.cancel.error, name: steps.cancel.name, isError: steps.cancel.isError },
			{ ok: false, error: "Sandbox turn failed", name: "AgentRunError", isError: true },
		);
		assert.equal(steps.cancel.status.state, "missing", "the cancelled turn's container is gone");
		assert.equal(steps.fresh.status.state, "missing");
		assert.equal(steps.turn4.ok, true);
		assert.equal(steps.turn4.text, "echo: Ann: hello again");
		// previous is {level: undefined} on the first turn and after startFresh
		assert.deepEqual(steps.hooks.judged, [null, "high", "high", null]);
		assert.deepEqual(steps.hooks.tools[0], {
			channel: "discord:bot-1",
			profile: "default",
			speaker: { id: "u1", name: "Ann" },
			thinking: "high",
		});
		const reqs = await fu.modelRequests();
		const systems = reqs.map((q) => String(q.json.system));
		assert.ok(systems.some((s) => s.includes("Ann (u1) in discord:bot-1: Ann likes dice.")), "the memory reached the model");
		assert.ok(JSON.stringify(reqs).includes("iVBORw0KGgo"), "the image reached the model");
		assert.ok(reqs.every((q) => q.token === "sk-test-real-token"), "the daemon's credential, never the bot's");
	});
});
