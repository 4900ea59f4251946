/**
 * A bot written for pi-roundtable-sandbox 0.7.3's Pi mode, as its README
 * describes the runtime: the only line changed for rtsandbox is the import
 * below.  Its deployment comes from the environment, as a bot's would; it
 * runs a short script of turns and prints one JSON line per step.
 */
import {
	type ChannelKey,
	PiSandboxRuntime,
	type PiHostContext,
	type PiImage,
	type PiSandboxTurnResult,
	type PiThinkingLevel,
	type PiToolResponse,
	PI_THINKING_LEVELS,
	isPiThinkingLevel,
	validateReplyFiles,
} from "rtsandbox-client/pi-roundtable-sandbox";

function env(name: string): string {
	const v = process.env[name];
	if (v === undefined || v === "") throw new Error(`${name} is required`);
	return v;
}

function say(step: string, detail: Record<string, unknown>): void {
	process.stdout.write(`${JSON.stringify({ step, ...detail })}\n`);
}

const logger = {
	debug: (_obj: object, _msg?: string) => {},
	info: (obj: object, msg?: string) => process.stderr.write(`info ${msg ?? ""} ${JSON.stringify(obj)}\n`),
	warn: (obj: object, msg?: string) => process.stderr.write(`warn ${msg ?? ""} ${JSON.stringify(obj)}\n`),
	error: (obj: object, msg?: string) => process.stderr.write(`error ${msg ?? ""} ${JSON.stringify(obj)}\n`),
};

// The bot's own stores, as a database adapter would keep them.
const notes = new Map<string, string>([["u1", "Ann likes dice."]]);
const judged: Array<PiThinkingLevel | undefined> = [];
const toolContexts: Array<Omit<PiHostContext, "signal">> = [];
let holdTurn: AbortController | undefined;

const runtime = new PiSandboxRuntime({
	partyDir: env("PARTY_DIR"),
	image: env("SANDBOX_IMAGE"),
	profiles: { default: { model: "claude-test" }, second: { model: "claude-other" } },
	oauthToken: () => process.env.MODEL_TOKEN ?? "unused-token",
	upstream: env("UPSTREAM"),
	containerPrefix: env("CONTAINER_PREFIX"),
	startTimeoutMs: Number(env("START_MS")),
	turnTimeoutMs: Number(env("TURN_MS")),
	memory: {
		async promptBlock(channel: ChannelKey, id: string, name: string): Promise<string> {
			return `${name} (${id}) in ${channel}: ${notes.get(id) ?? "nothing yet"}`;
		},
	},
	effort: {
		async judge(text: string, previous: { level: PiThinkingLevel | undefined }): Promise<PiThinkingLevel> {
			judged.push(previous.level);
			if (text.includes("think hard")) return "high";
			return previous.level ?? PI_THINKING_LEVELS[0];
		},
	},
	tools: {
		names: ["roll_dice"],
		async call(name: string, input: Record<string, unknown>, context: PiHostContext): Promise<PiToolResponse> {
			const { signal, ...bound } = context;
			toolContexts.push(bound);
			if (input.hold === true && holdTurn !== undefined) {
				// the guest asked for something slow; the owner cancels the turn
				holdTurn.abort();
				await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
				return { ok: false, error: "cancelled" };
			}
			const sides = typeof input.sides === "number" ? input.sides : 6;
			return { ok: true, text: `${name}: ${Math.min(4, sides)}` };
		},
	},
	logger,
});

const channel: ChannelKey = "discord:bot-1";
const author = { id: "u1", name: "Ann" };
const png: PiImage = {
	mimeType: "image/png",
	data:
		"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNg+M8AAAMBAQAY3Y20AAAAAElFTkSuQmCC",
};

function files(r: PiSandboxTurnResult): Array<{ name: string; text: string; buffer: boolean }> {
	if (!r.ok) return [];
	return r.files.map((f) => ({ name: f.name, text: Buffer.from(f.data).toString(), buffer: Buffer.isBuffer(f.data) }));
}

function outcome(r: PiSandboxTurnResult): Record<string, unknown> {
	return r.ok
		? { ok: true, text: r.text, files: files(r) }
		: { ok: false, error: r.error.message, name: r.error.name, isError: r.error instanceof Error };
}

async function main(): Promise<void> {
	say("paths", { sessions: runtime.sessionsDir(channel), attachments: runtime.attachmentDir(channel) });
	await runtime.start(channel, "default");
	say("status", { status: await runtime.status(channel) });

	const first = await runtime.runTurn({
		channel,
		profile: "default",
		turnId: "m1",
		author,
		text: 'think hard and roll [[tool:roll_dice {"sides": 6}]]',
		images: [],
	});
	say("turn1", outcome(first));

	const second = await runtime.runTurn({
		channel,
		profile: "default",
		turnId: "m2",
		author,
		text: "look at this and keep it [[file:note.txt seen]]",
		images: [png],
	});
	if (second.ok)
		validateReplyFiles(second.files.map((f) => ({ name: f.name, data: Buffer.from(f.data).toString("base64") })));
	say("turn2", outcome(second));

	holdTurn = new AbortController();
	const cancelled = await runtime.runTurn({
		channel,
		profile: "default",
		turnId: "m3",
		author,
		text: '[[tool:roll_dice {"hold": true}]]',
		images: [],
		signal: holdTurn.signal,
	});
	holdTurn = undefined;
	say("cancel", { ...outcome(cancelled), status: await runtime.status(channel) });

	await runtime.startFresh(channel);
	say("fresh", { status: await runtime.status(channel) });
	const after = await runtime.runTurn({ channel, profile: "default", turnId: "m4", author, text: "hello again", images: [] });
	say("turn4", outcome(after));

	say("hooks", {
		judged: judged.map((l) => l ?? null),
		levelsKnown: judged.every((l) => l === undefined || isPiThinkingLevel(l)),
		tools: toolContexts,
	});
	await runtime.stop(channel);
	await runtime.stopBrokers();
}

main().then(
	() => process.exit(0),
	(e: unknown) => {
		process.stderr.write(`bot failed: ${e instanceof Error ? e.stack : String(e)}\n`);
		process.exit(1);
	},
);
