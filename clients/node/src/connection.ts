/**
 * One connection to rtsandboxd's control socket: JSON-RPC 2.0, one object
 * per line, several requests in flight.  It connects on first use, sends
 * initialize with the hooks it serves, and reconnects with back-off when the
 * daemon goes away; a request in flight when the connection drops fails at
 * once, and one made while it is down waits for the next connection.
 */
import { EventEmitter } from "node:events";
import * as net from "node:net";

import { RpcCode, RtsandboxConnectionError, RtsandboxRpcError } from "./errors.js";
import type { Logger } from "./types.js";

/** Lines are at most 128 MiB each way. */
export const LINE_MAX = 128 * 1024 * 1024;

export interface ConnectionOptions {
	socket: string;
	clientName: string;
	hooks: string[];
	/**
	 * Hooks of hooks that a daemon older than this client may not know:
	 * when initialize is refused for one of them, it is dropped and
	 * initialize sent again.
	 */
	optionalHooks?: string[];
	/**
	 * Answers the daemon's hook requests; a throw is answered as an error,
	 * undefined as {} and null as null.
	 */
	onRequest(method: string, params: unknown): Promise<unknown>;
	onNotification(method: string, params: unknown): void;
	logger: Logger;
	connectTimeoutMs: number;
	reconnectInitialMs: number;
	reconnectMaxMs: number;
}

/** A request on its way: cancel() withdraws it before it is sent, or sends $/cancelRequest. */
export interface Call<T = unknown> {
	result: Promise<T>;
	cancel(): void;
	/** Whether the request reached the socket. */
	sent(): boolean;
}

interface Entry {
	method: string;
	params: object | undefined;
	id: number;
	resolve(value: unknown): void;
	reject(error: Error): void;
	timer: ReturnType<typeof setTimeout> | null;
	done: boolean;
}

interface ErrorWithCode {
	code?: unknown;
	message?: unknown;
}

export class Connection extends EventEmitter {
	private readonly opts: ConnectionOptions;
	private sock: net.Socket | null = null;
	private ready = false;
	private closed = false;
	private started = false;
	private fatal: Error | null = null;
	private failures = 0;
	private lastError: string | null = null;
	private nextId = 1;
	private readonly pending = new Map<number, Entry>();
	private waiters: Entry[] = [];
	private chunks: Buffer[] = [];
	private chunkBytes = 0;
	private retry: ReturnType<typeof setTimeout> | null = null;
	private hooksRunning = 0;

	constructor(opts: ConnectionOptions) {
		super();
		this.opts = opts;
	}

	get socketPath(): string {
		return this.opts.socket;
	}

	isReady(): boolean {
		return this.ready;
	}

	/** Resolves once connected and initialized; rejects as a call would. */
	connect(): Promise<void> {
		if (this.ready) return Promise.resolve();
		const c = this.call("initialize", undefined, true);
		return c.result.then(() => undefined);
	}

	call<T = unknown>(method: string, params?: object, onlyWait = false): Call<T> {
		let entry!: Entry;
		const result = new Promise<T>((resolve, reject) => {
			entry = {
				method,
				params,
				id: 0,
				resolve: resolve as (v: unknown) => void,
				reject,
				timer: null,
				done: false,
			};
		});
		if (this.closed) {
			this.settle(entry, this.connectionError(method, false, "the runtime was closed"));
		} else if (this.fatal !== null) {
			this.settle(entry, this.fatal);
		} else if (onlyWait) {
			if (this.ready) this.settle(entry, undefined, true);
			else this.wait(entry, true);
		} else if (this.ready) {
			this.transmit(entry);
		} else {
			this.wait(entry, false);
		}
		return {
			result,
			sent: () => entry.id !== 0,
			cancel: () => this.cancel(entry),
		};
	}

	/** Ends the connection for good; what is in flight fails. */
	close(): Promise<void> {
		this.closed = true;
		if (this.retry !== null) clearTimeout(this.retry);
		this.retry = null;
		this.failAll("the runtime was closed");
		const sock = this.sock;
		if (sock === null || sock.destroyed) return Promise.resolve();
		return new Promise((resolve) => {
			sock.once("close", () => resolve());
			sock.end();
			setTimeout(() => sock.destroy(), 1000).unref();
		});
	}

	private connectionError(method: string, sent: boolean, why: string): RtsandboxConnectionError {
		return new RtsandboxConnectionError(
			method,
			this.opts.socket,
			sent,
			`${method}: ${why} (rtsandboxd at ${this.opts.socket})`,
		);
	}

	private settle(entry: Entry, value: unknown, ok = false): void {
		if (entry.done) return;
		entry.done = true;
		if (entry.timer !== null) clearTimeout(entry.timer);
		entry.timer = null;
		if (ok) entry.resolve(value);
		else entry.reject(value as Error);
		this.updateRef();
	}

	/** Until the next connection, at most connectTimeoutMs. */
	private wait(entry: Entry, onlyReady: boolean): void {
		entry.timer = setTimeout(() => {
			this.waiters = this.waiters.filter((w) => w !== entry);
			const why = this.lastError !== null ? `: ${this.lastError}` : "";
			this.settle(
				entry,
				this.connectionError(
					entry.method,
					false,
					`cannot reach rtsandboxd within ${this.opts.connectTimeoutMs} ms${why}`,
				),
			);
		}, this.opts.connectTimeoutMs);
		if (onlyReady) (entry as Entry & { onlyReady?: boolean }).onlyReady = true;
		this.waiters.push(entry);
		this.updateRef();
		this.start();
	}

	private cancel(entry: Entry): void {
		if (entry.done) return;
		if (entry.id === 0) {
			this.waiters = this.waiters.filter((w) => w !== entry);
			this.settle(
				entry,
				new RtsandboxRpcError(entry.method, RpcCode.REQUEST_CANCELLED, "Request cancelled before it was sent"),
			);
			return;
		}
		// The daemon answers the request itself with -32800.
		this.write({ jsonrpc: "2.0", method: "$/cancelRequest", params: { id: entry.id } });
	}

	private transmit(entry: Entry): void {
		entry.id = this.nextId++;
		this.pending.set(entry.id, entry);
		const msg: Record<string, unknown> = { jsonrpc: "2.0", id: entry.id, method: entry.method };
		if (entry.params !== undefined) msg.params = entry.params;
		if (!this.write(msg)) {
			this.pending.delete(entry.id);
			this.settle(entry, this.connectionError(entry.method, false, "the connection is not open"));
			return;
		}
		this.updateRef();
	}

	private write(msg: object): boolean {
		const sock = this.sock;
		if (sock === null || sock.destroyed || !sock.writable) return false;
		let line: string;
		try {
			line = JSON.stringify(msg) + "\n";
		} catch (e) {
			this.opts.logger.error?.({ err: String(e) }, "cannot serialise a control message");
			return false;
		}
		sock.write(line);
		return true;
	}

	/** Keep the process alive only while something waits for the daemon. */
	private updateRef(): void {
		const sock = this.sock;
		if (sock === null) return;
		const busy = this.pending.size > 0 || this.waiters.length > 0 || this.hooksRunning > 0;
		if (busy) sock.ref?.();
		else sock.unref?.();
	}

	private start(): void {
		if (this.started || this.closed) return;
		this.started = true;
		this.open();
	}

	private open(): void {
		if (this.closed || this.sock !== null || this.fatal !== null) return;
		const sock = net.createConnection(this.opts.socket);
		this.sock = sock;
		sock.on("connect", () => this.initialize(sock));
		sock.on("data", (data: Buffer) => this.onData(sock, data));
		sock.on("error", (e: NodeJS.ErrnoException) => {
			this.lastError = describe(e, this.opts.socket);
		});
		sock.on("close", () => this.onClose(sock));
		this.updateRef();
	}

	private initialize(sock: net.Socket): void {
		if (sock !== this.sock) return;
		const entry: Entry = {
			method: "initialize",
			params: { client: this.opts.clientName, hooks: this.opts.hooks },
			id: 0,
			timer: null,
			done: false,
			resolve: (res) => {
				this.ready = true;
				this.failures = 0;
				this.lastError = null;
				this.opts.logger.debug?.({ socket: this.opts.socket }, "connected to rtsandboxd");
				this.emit("connected", res);
				const waiters = this.waiters;
				this.waiters = [];
				for (const w of waiters) {
					if ((w as Entry & { onlyReady?: boolean }).onlyReady) this.settle(w, undefined, true);
					else {
						if (w.timer !== null) clearTimeout(w.timer);
						w.timer = null;
						this.transmit(w);
					}
				}
				this.updateRef();
			},
			reject: (e) => {
				const unknown =
					e instanceof RtsandboxRpcError && e.code === RpcCode.INVALID_PARAMS
						? /unknown hook ([a-z.]+)/.exec(e.message)?.[1]
						: undefined;
				if (unknown !== undefined && (this.opts.optionalHooks ?? []).includes(unknown)) {
					this.opts.logger.info?.({ hook: unknown }, "rtsandboxd does not know this hook; going on without it");
					this.opts.hooks = this.opts.hooks.filter((h) => h !== unknown);
					this.initialize(sock);
					return;
				}
				if (e instanceof RtsandboxRpcError) {
					// The daemon refused this client: trying again would not help.
					this.fatal = e;
					this.opts.logger.error?.({ err: e.message }, "rtsandboxd refused initialize");
					this.failAll(e.message, e);
					sock.destroy();
				}
			},
		};
		this.transmit(entry);
		// initialize keeps no process alive by itself
		this.updateRef();
	}

	private onData(sock: net.Socket, data: Buffer): void {
		if (sock !== this.sock) return;
		let start = 0;
		for (;;) {
			const nl = data.indexOf(10, start);
			if (nl === -1) break;
			let line = data.subarray(start, nl);
			if (this.chunks.length > 0) {
				this.chunks.push(line);
				line = Buffer.concat(this.chunks, this.chunkBytes + line.length);
				this.chunks = [];
				this.chunkBytes = 0;
			}
			start = nl + 1;
			this.onLine(line);
			if (sock !== this.sock) return;
		}
		if (start < data.length) {
			const rest = data.subarray(start);
			this.chunks.push(rest);
			this.chunkBytes += rest.length;
			if (this.chunkBytes > LINE_MAX) {
				this.lastError = `an answer longer than ${LINE_MAX} bytes`;
				this.opts.logger.error?.({ socket: this.opts.socket }, "rtsandboxd sent a line over the limit");
				sock.destroy();
			}
		}
	}

	private onLine(buf: Buffer): void {
		let end = buf.length;
		if (end > 0 && buf[end - 1] === 13) end--;
		if (end === 0) return;
		let msg: Record<string, unknown>;
		try {
			msg = JSON.parse(buf.toString("utf8", 0, end));
		} catch {
			this.opts.logger.warn?.({ bytes: end }, "rtsandboxd sent a line that is not JSON");
			return;
		}
		if (typeof msg !== "object" || msg === null) return;
		if (typeof msg.method === "string") {
			if ("id" in msg) this.onRequest(msg.id, msg.method, msg.params);
			else this.opts.onNotification(msg.method, msg.params);
			return;
		}
		if (typeof msg.id !== "number") return;
		const entry = this.pending.get(msg.id);
		if (entry === undefined) return;
		this.pending.delete(msg.id);
		if ("error" in msg) {
			const err = (msg.error ?? {}) as ErrorWithCode;
			const code = typeof err.code === "number" ? err.code : RpcCode.INTERNAL_ERROR;
			const text = typeof err.message === "string" ? err.message : "error without a message";
			this.settle(entry, new RtsandboxRpcError(entry.method, code, text));
		} else {
			this.settle(entry, msg.result, true);
		}
	}

	private onRequest(id: unknown, method: string, params: unknown): void {
		const sock = this.sock;
		this.hooksRunning++;
		this.updateRef();
		Promise.resolve()
			.then(() => this.opts.onRequest(method, params))
			.then(
				// null is an answer of its own (compaction.compact's "declined")
				(result) => ({ jsonrpc: "2.0", id, result: result === undefined ? {} : result }),
				(e: ErrorWithCode) => ({
					jsonrpc: "2.0",
					id,
					error: {
						code: typeof e?.code === "number" ? e.code : RpcCode.INTERNAL_ERROR,
						message: typeof e?.message === "string" ? e.message : String(e),
					},
				}),
			)
			.then((answer) => {
				// A hook of a connection that dropped is answered no more.
				if (sock === this.sock) this.write(answer);
			})
			.finally(() => {
				this.hooksRunning--;
				this.updateRef();
			});
	}

	private failAll(why: string, error?: Error): void {
		const waiters = this.waiters;
		this.waiters = [];
		for (const w of waiters) this.settle(w, error ?? this.connectionError(w.method, false, why));
		const pending = [...this.pending.values()];
		this.pending.clear();
		for (const p of pending) this.settle(p, error ?? this.connectionError(p.method, true, why));
	}

	private onClose(sock: net.Socket): void {
		if (sock !== this.sock) return;
		this.sock = null;
		this.chunks = [];
		this.chunkBytes = 0;
		const wasReady = this.ready;
		this.ready = false;
		const why = this.lastError !== null ? `: ${this.lastError}` : "";
		// Only what was sent fails now; what waits goes with the next connection.
		const pending = [...this.pending.values()];
		this.pending.clear();
		for (const p of pending) {
			if (p.method === "initialize") continue;
			this.settle(
				p,
				this.connectionError(
					p.method,
					true,
					`the connection to rtsandboxd was lost${why}; the outcome is unknown`,
				),
			);
		}
		if (wasReady) {
			this.opts.logger.warn?.({ socket: this.opts.socket, err: this.lastError }, "lost the connection to rtsandboxd");
			this.emit("disconnected", this.lastError);
		}
		if (this.closed || this.fatal !== null) return;
		const delay = Math.min(
			this.opts.reconnectMaxMs,
			this.opts.reconnectInitialMs * 2 ** Math.min(this.failures, 16),
		);
		this.failures++;
		this.retry = setTimeout(() => {
			this.retry = null;
			this.open();
		}, delay);
		this.retry.unref?.();
	}
}

function describe(e: NodeJS.ErrnoException, socket: string): string {
	switch (e.code) {
		case "ENOENT":
		case "ECONNREFUSED":
			return `${e.code}: is rtsandboxd running with control_socket ${socket}?`;
		case "EACCES":
			return "EACCES: run as the service user or a member of control_group";
		default:
			return e.message;
	}
}
