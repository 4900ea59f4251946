/**
 * What a bot written for PiSandboxRuntime 0.7.3 relies on across turns and
 * restarts: the judged level as the judge sees it, deadlines, and a daemon
 * that goes away and comes back while the runtime lives.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import {
	PiSandboxRuntime,
	RtsandboxConnectionError,
	type EffortRequest,
	type ThinkingLevel,
	type TurnResult,
} from "../src/index.js";
import { Daemon, FakeUpstream, cleanupDocker, inspect, sleep, waitUntil } from "./harness.js";

const AUTHOR = { id: "u1", name: "Ann" };
const fu = new FakeUpstream();
const daemons: Daemon[] = [];

before(() => fu.start());

after(async () => {
	for (const d of daemons) await d.cleanup();
	await fu.stop();
	cleanupDocker();
});

async function daemon(opts: { turnMs?: number; image?: string } = {}): Promise<Daemon> {
	const d = new Daemon({ fu, ...opts });
	daemons.push(d);
	await d.start();
	return d;
}

function params(channel: string, text: string, turnId: string) {
	return { channel, profile: "default", turnId, author: AUTHOR, text };
}

function reasonOf(r: TurnResult): string | null {
	return r.ok ? null : r.error.reason;
}

describe("0.7.3 semantics", () => {
	it("passes the judge previous only once the channel has a judged level", async () => {
		await fu.reset();
		const d = await daemon({ turnMs: 4000 });
		const seen: EffortRequest[] = [];
		let next: ThinkingLevel = "high";
		const rt = new PiSandboxRuntime({
			socket: d.socket,
			effort: {
				judge: async (req) => {
					seen.push(req);
					return next;
				},
			},
		});
		const key = "judge:1";
		// started apart, so that no turn below spends its deadline on it
		await rt.start(key, "default");
		assert.equal((await rt.runTurn(params(key, "one", "t1"))).ok, true);
		assert.deepEqual(seen.at(-1), { text: "one" });
		// a turn that times out still sets the level it was judged at,
		// and is answered once its container is gone
		next = "xhigh";
		await fu.stallModel(20);
		const r = await rt.runTurn(params(key, "two", "t2"));
		assert.equal(reasonOf(r), "timeout", JSON.stringify(r));
		assert.equal(await inspect(d.container(key)), null);
		assert.deepEqual(seen.at(-1), { text: "two", previous: "high" });
		await fu.reset();
		await rt.start(key, "default");
		next = "medium";
		assert.equal((await rt.runTurn(params(key, "three", "t3"))).ok, true);
		assert.deepEqual(seen.at(-1), { text: "three", previous: "xhigh" });
		// after stop and startFresh, a first turn again
		await rt.stop(key);
		await rt.start(key, "default");
		assert.equal((await rt.runTurn(params(key, "four", "t4"))).ok, true);
		assert.deepEqual(seen.at(-1), { text: "four" });
		await rt.startFresh(key);
		await rt.start(key, "default");
		assert.equal((await rt.runTurn(params(key, "five", "t5"))).ok, true);
		assert.deepEqual(seen.at(-1), { text: "five" });
		await rt.close();
		await d.cleanup();
	});
});

describe("the connection", () => {
	it("fails a turn in flight when the daemon restarts, and goes on after", async () => {
		await fu.reset();
		const d = await daemon();
		let disconnects = 0;
		let connects = 0;
		const rt = new PiSandboxRuntime({ socket: d.socket, reconnect: { initialMs: 50, maxMs: 500 } });
		rt.on("disconnected", () => disconnects++);
		rt.on("connected", () => connects++);
		const key = "restart:1";
		assert.equal((await rt.runTurn(params(key, "before", "t1"))).ok, true);
		assert.equal(connects, 1);
		await fu.stallModel(30);
		const pending = rt.runTurn(params(key, "in flight", "t2"));
		await fu.waitForModel(2);
		assert.equal(await d.stop(), 0, d.log().slice(-2000));
		const r = await pending;
		assert.equal(reasonOf(r), "internal");
		assert.match(r.ok ? "" : r.error.message, /turn\.run: the connection to rtsandboxd was lost/);
		assert.match(r.ok ? "" : r.error.message, new RegExp(d.socket));
		assert.equal(disconnects, 1);
		// a call made while the daemon is down waits for it
		const waiting = rt.status(key);
		await sleep(300);
		await d.start();
		const st = await waiting;
		assert.equal(st.state, "running");
		assert.equal(connects, 2);
		// the same channel, its kept container, the same runtime
		await fu.reset();
		const again = await rt.runTurn(params(key, "after the restart", "t3"));
		assert.equal(again.ok, true, JSON.stringify(again));
		assert.equal(again.ok && again.text, "echo: Ann: after the restart");
		await rt.close();
		// closed: calls fail at once
		await assert.rejects(rt.status(key), RtsandboxConnectionError);
		await d.cleanup();
	});

	it("says which socket it cannot reach, and why", async () => {
		const rt = new PiSandboxRuntime({ socket: "/tmp/rtnj-nothing-here.sock", connectTimeoutMs: 500 });
		await assert.rejects(rt.start("x:1", "default"), (e: unknown) => {
			assert.ok(e instanceof RtsandboxConnectionError);
			assert.equal(e.sent, false);
			assert.equal(e.method, "channel.start");
			assert.match(e.message, /cannot reach rtsandboxd within 500 ms: ENOENT: is rtsandboxd running/);
			assert.match(e.message, /\/tmp\/rtnj-nothing-here\.sock/);
			return true;
		});
		const r = await rt.runTurn(params("x:1", "hi", "t1"));
		assert.equal(reasonOf(r), "internal");
		await rt.close();
	});

	it("answers start_failed when the channel cannot start", async () => {
		const d = await daemon({ image: "rtsandbox-worker:no-such-tag" });
		const rt = new PiSandboxRuntime({ socket: d.socket });
		const r = await rt.runTurn(params("nostart:1", "hi", "t1"));
		assert.equal(reasonOf(r), "start_failed", JSON.stringify(r));
		assert.match(r.ok ? "" : r.error.message, /Docker/);
		await assert.rejects(rt.start("nostart:1", "default"), /channel\.start: Docker/);
		await waitUntil(async () => !(await rt.status("nostart:1")).busy);
		await rt.close();
		await d.cleanup();
	});
});
