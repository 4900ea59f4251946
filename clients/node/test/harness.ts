/**
 * What the client's tests run against: the real rtsandboxd of the build tree
 * ($RTSANDBOX_BUILD) started as the current, unprivileged user with a
 * configuration, state directory and credential of its own under /tmp; the
 * fake upstream of tests/fixtures (HTTPS with a test CA made now); the
 * reference worker's image rtsandbox-worker:latest; and the docker command.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { createInterface } from "node:readline";

export const BUILD = process.env.RTSANDBOX_BUILD ?? "";
export const TOP = process.env.RTSANDBOX_TOP ?? "";
export const IMAGE = "rtsandbox-worker:latest";
export const LABEL_CHANNEL = "roundtable.sandbox.channel";

const PREFIX_BASE = `rtnj${process.pid}x`;
let daemons = 0;

let dockerConfig: string | null = null;

export interface DockerResult {
	code: number;
	stdout: string;
	stderr: string;
}

export function docker(...args: string[]): Promise<DockerResult> {
	// HOME may be another user's when the tests run under setpriv
	const config = (dockerConfig ??= fs.mkdtempSync("/tmp/rtnj-dcfg-"));
	return new Promise((resolve) => {
		execFile(
			"docker",
			args,
			{
				timeout: 30000,
				env: { PATH: "/usr/local/bin:/usr/bin:/bin", DOCKER_CONFIG: config, HOME: config },
			},
			(err, stdout, stderr) => {
				const code = err === null ? 0 : typeof err.code === "number" ? err.code : 1;
				resolve({ code, stdout: String(stdout), stderr: String(stderr) });
			},
		);
	});
}

/** The container's inspection, or null when there is none. */
export async function inspect(name: string): Promise<Record<string, any> | null> {
	const r = await docker("inspect", "--type", "container", name);
	if (r.code !== 0) return null;
	return JSON.parse(r.stdout)[0];
}

export function sleep(ms: number): Promise<void> {
	return new Promise((r) => setTimeout(r, ms));
}

export async function waitUntil<T>(pred: () => Promise<T> | T, ms = 15000, step = 100): Promise<T> {
	const deadline = Date.now() + ms;
	for (;;) {
		const v = await pred();
		if (v || Date.now() >= deadline) return v;
		await sleep(step);
	}
}

/** PROTOCOL.md 6, for the ASCII keys of these tests. */
export function segmentOf(key: string): string {
	return key.replace(/[^A-Za-z0-9_-]/g, "_");
}

/** One JSON-RPC call on a connection of its own, apart from the client under test. */
export function rawCall(socket: string, method: string, params?: object): Promise<any> {
	return new Promise((resolve, reject) => {
		const s = net.createConnection(socket);
		let buf = "";
		s.on("error", reject);
		s.on("connect", () => {
			s.write(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { client: "harness" } }) + "\n");
			s.write(JSON.stringify({ jsonrpc: "2.0", id: 2, method, params }) + "\n");
		});
		s.on("data", (d) => {
			buf += d.toString();
			for (;;) {
				const nl = buf.indexOf("\n");
				if (nl < 0) break;
				const m = JSON.parse(buf.slice(0, nl));
				buf = buf.slice(nl + 1);
				if (m.id !== 2) continue;
				s.destroy();
				if (m.error) reject(new Error(`${method}: ${m.error.message} (${m.error.code})`));
				else resolve(m.result);
			}
		});
		s.on("close", () => reject(new Error(`${method}: connection closed`)));
	});
}

export interface FakeRequest {
	seq: number;
	path: string;
	json: any;
	token: string | null;
}

/** tests/fixtures/fake_upstream.py, driven through its control listener. */
export class FakeUpstream {
	proc: ChildProcess | null = null;
	port = 0;
	controlPort = 0;
	readonly dir = fs.mkdtempSync("/tmp/rtnj-certs-");

	get url(): string {
		return `https://127.0.0.1:${this.port}`;
	}

	get caFile(): string {
		return path.join(this.dir, "certs", "ca.pem");
	}

	async start(): Promise<void> {
		fs.chmodSync(this.dir, 0o755);
		const proc = spawn(
			"python3",
			[path.join(TOP, "tests", "fixtures", "fake_upstream.py"), "--certdir", path.join(this.dir, "certs"), "--make-certs"],
			{ stdio: ["ignore", "pipe", "inherit"], env: { PATH: "/usr/bin:/bin", PYTHONDONTWRITEBYTECODE: "1" } },
		);
		this.proc = proc;
		const lines = createInterface({ input: proc.stdout! });
		await new Promise<void>((resolve, reject) => {
			const t = setTimeout(() => reject(new Error("fake upstream did not start")), 60000);
			proc.on("exit", (code) => reject(new Error(`fake upstream exited ${code}`)));
			lines.on("line", (line) => {
				const [word, port] = line.split(" ");
				if (word === "CONTROL") this.controlPort = Number(port);
				if (word === "READY") {
					this.port = Number(port);
					clearTimeout(t);
					resolve();
				}
			});
		});
	}

	async stop(): Promise<void> {
		if (this.proc !== null && this.proc.exitCode === null) {
			const exited = new Promise((r) => this.proc!.once("exit", r));
			this.proc.kill("SIGTERM");
			await exited;
		}
		fs.rmSync(this.dir, { recursive: true, force: true });
	}

	private async control(method: string, target: string, body?: unknown): Promise<any> {
		const res = await fetch(`http://127.0.0.1:${this.controlPort}${target}`, {
			method,
			headers: body === undefined ? {} : { "content-type": "application/json" },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		const json = await res.json();
		if (!res.ok) throw new Error(`fake upstream ${target}: ${res.status} ${JSON.stringify(json)}`);
		return json;
	}

	reset(): Promise<unknown> {
		return this.control("POST", "/reset");
	}

	script(...entries: object[]): Promise<unknown> {
		return this.control("POST", "/script", entries);
	}

	/** A model call that hangs for seconds. */
	stallModel(seconds: number): Promise<unknown> {
		return this.script({ kind: "stall", seconds, match: "/v1/messages" });
	}

	async modelRequests(): Promise<FakeRequest[]> {
		const r = await this.control("GET", "/requests?path=/v1/messages");
		return r.requests;
	}

	async waitForModel(count: number, seconds = 60): Promise<FakeRequest[]> {
		const r = await this.control("GET", `/wait?count=${count}&timeout=${seconds}&path=/v1/messages`);
		return r.requests;
	}
}

export interface DaemonOptions {
	fu: FakeUpstream;
	turnMs?: number;
	image?: string;
	seams?: boolean;
	/** Changes the configuration before it is written. */
	edit?: (config: Record<string, any>) => void;
}

/** rtsandboxd in the foreground, its own directory under /tmp and its own container prefix. */
export class Daemon {
	readonly root = fs.mkdtempSync("/tmp/rtnj-");
	readonly prefix = `${PREFIX_BASE}${++daemons}`;
	readonly socket = path.join(this.root, "control.sock");
	readonly configPath = path.join(this.root, "rtsandboxd.json");
	readonly logPath = path.join(this.root, "rtsandboxd.log");
	readonly config: Record<string, any>;
	proc: ChildProcess | null = null;

	constructor(opts: DaemonOptions) {
		fs.mkdirSync(path.join(this.root, "state"), { mode: 0o700 });
		const cred = path.join(this.root, "credential");
		fs.writeFileSync(cred, "sk-test-real-token\n", { mode: 0o600 });
		this.config = {
			state_dir: path.join(this.root, "state"),
			control_socket: this.socket,
			image: opts.image ?? IMAGE,
			profiles: { default: { model: "claude-test" }, second: { model: "claude-other" } },
			upstream: { url: opts.fu.url, credential_file: cred, ca_file: opts.fu.caFile },
			tools: ["roll_dice", "fail_tool"],
			docker: { container_prefix: this.prefix },
			timeouts: { start_ms: 60000, turn_ms: opts.turnMs ?? 60000 },
		};
		if (opts.seams) this.config.test = { loopback_public: true };
		opts.edit?.(this.config);
		fs.writeFileSync(this.configPath, JSON.stringify(this.config));
	}

	container(key: string): string {
		return `${this.prefix}-${segmentOf(key)}`;
	}

	async start(): Promise<void> {
		const log = fs.openSync(this.logPath, "a");
		this.proc = spawn(path.join(BUILD, "supervisor", "rtsandboxd"), ["-d", "-f", this.configPath], {
			stdio: ["ignore", log, log],
			env: { PATH: "/usr/bin:/bin" },
		});
		fs.closeSync(log);
		const deadline = Date.now() + 20000;
		while (Date.now() < deadline) {
			if (this.proc.exitCode !== null) throw new Error(`rtsandboxd exited ${this.proc.exitCode}:\n${this.log()}`);
			try {
				const stats = await rawCall(this.socket, "daemon.stats");
				if (stats.processes.every((p: { state: string }) => p.state === "ready")) return;
			} catch {
				// not yet
			}
			await sleep(50);
		}
		throw new Error(`rtsandboxd not ready:\n${this.log()}`);
	}

	/** SIGTERM, as a service manager stops it: containers stay. */
	async stop(): Promise<number | null> {
		const p = this.proc;
		if (p === null || p.exitCode !== null || p.signalCode !== null) return p?.exitCode ?? null;
		const exited = new Promise<number | null>((r) => p.once("exit", (code) => r(code)));
		p.kill("SIGTERM");
		return exited;
	}

	log(): string {
		try {
			return fs.readFileSync(this.logPath, "utf8");
		} catch {
			return "";
		}
	}

	async cleanup(): Promise<void> {
		await this.stop();
		const r = await docker("ps", "-a", "--format", "{{.Names}}");
		const names = r.stdout.split(/\s+/).filter((n) => n.startsWith(`${this.prefix}-`));
		if (names.length > 0) await docker("rm", "-f", ...names);
		fs.rmSync(this.root, { recursive: true, force: true });
	}
}

export function cleanupDocker(): void {
	if (dockerConfig !== null) fs.rmSync(dockerConfig, { recursive: true, force: true });
	dockerConfig = null;
}

/** Whether the build has the test seams (loopback counted as public for the controlled fetch). */
export function seamsBuilt(): boolean {
	try {
		return fs.readFileSync(path.join(BUILD, "buildconf.h"), "utf8").includes("#define RTSANDBOX_TEST_SEAMS 1");
	} catch {
		return false;
	}
}

/**
 * Whether the rtsandboxd of the build knows a control method or hook name,
 * by the name in its binary: the tests of a newer method are skipped, with
 * its name, against a daemon that lacks it.
 */
export function daemonKnows(name: string): boolean {
	try {
		return fs.readFileSync(path.join(BUILD, "supervisor", "rtsandboxd")).includes(Buffer.from(name));
	} catch {
		return false;
	}
}
