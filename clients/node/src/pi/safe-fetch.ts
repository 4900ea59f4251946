/**
 * safeFetch and assertPublicUrl of 0.7.3, served by rtsandboxd's controlled
 * fetch (PROTOCOL.md 8): egress resolves, vets every address and redirect,
 * pins the connection and bounds the answer.  The bot process itself never
 * connects to the URL.
 */
import { RpcCode, RtsandboxRpcError } from "../errors.js";
import { sharedLink, type Link } from "./link.js";
import { runtimes } from "./runtime.js";

export class UnsafeUrlError extends Error {
	override name = "UnsafeUrlError";
}

/** The response declared a body over the limit; status and headers let a caller report the size. */
export class ResponseTooLargeError extends UnsafeUrlError {
	readonly status: number;
	readonly headers: Headers;

	constructor(message: string, status: number, headers: Headers) {
		super(message);
		this.status = status;
		this.headers = headers;
	}
}

export interface ResolvedAddress {
	address: string;
	family: number;
}

export interface SafeFetchOptions {
	signal?: AbortSignal;
	/** 1 ms to 120 s; default 60 s. */
	timeoutMs?: number;
	/** 1 byte to 32 MiB; default 5 MiB. */
	maxBytes?: number;
	/** 0 to 10; default 5. */
	maxRedirects?: number;
	/** false: a redirect is returned with its location instead of followed. */
	followRedirects?: boolean;
	/** Refused unless empty: rtsandboxd's controlled fetch sends fixed headers. */
	headers?: Record<string, string>;
	/** Refused: rtsandboxd's egress resolves names. */
	resolve?: (hostname: string) => Promise<readonly ResolvedAddress[]>;
	/** Refused: rtsandboxd's egress makes the connection. */
	transport?: (
		url: URL,
		address: ResolvedAddress,
		signal: AbortSignal,
		maxBytes: number,
		headers?: Record<string, string>,
	) => Promise<SafeFetchResult>;
	/** rtsandboxd's control socket; default a PiSandboxRuntime's, else $RTSANDBOX_CONTROL_SOCKET or /run/rtsandbox/control.sock. */
	socket?: string;
}

export interface SafeFetchResult {
	url: string;
	status: number;
	statusText?: string;
	headers: Headers;
	data: Uint8Array;
}

/** What fetch.get answers (the daemon's method for this function). */
interface FetchAnswer {
	ok: boolean;
	url?: string;
	status?: number;
	statusText?: string;
	contentType?: string;
	contentLength?: number;
	location?: string;
	data?: string;
	kind?: "unsafe" | "too_large" | "timeout" | "failed";
	error?: string;
}

const FETCH_METHOD = "fetch.get";
const CHECK_METHOD = "fetch.check";

function isRecord(v: unknown): v is Record<string, unknown> {
	return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The link of this process's first runtime on that socket, else the shared one. */
export function linkFor(socket?: string): Link {
	for (const r of runtimes) if (socket === undefined || r.socket === socket) return r.link;
	return sharedLink(socket);
}

function target(raw: string): URL {
	let url: URL;
	try {
		url = new URL(raw);
	} catch {
		throw new UnsafeUrlError("Invalid URL");
	}
	if (!["http:", "https:"].includes(url.protocol) || url.username || url.password)
		throw new UnsafeUrlError("Only credential-free HTTP(S) URLs are allowed");
	url.hash = "";
	return url;
}

function refuseSeams(options: SafeFetchOptions): void {
	if (options.resolve !== undefined || options.transport !== undefined)
		throw new Error(
			"resolve and transport are not supported: rtsandboxd's egress resolves, vets and connects; leave them out",
		);
	if (options.headers !== undefined && Object.keys(options.headers).length > 0)
		throw new Error("headers are not supported: rtsandboxd's controlled fetch sends its own fixed request headers");
}

function missing(e: unknown, method: string, link: Link): never {
	if (e instanceof RtsandboxRpcError && e.code === RpcCode.METHOD_NOT_FOUND)
		throw new Error(`rtsandboxd at ${link.socket} has no ${method}: it is older than this client; update rtsandboxd`, {
			cause: e,
		});
	throw e;
}

function answerError(a: FetchAnswer, headers: Headers): Error {
	const text = typeof a.error === "string" && a.error !== "" ? a.error : "fetch failed";
	switch (a.kind) {
		case "unsafe":
			return new UnsafeUrlError(text);
		case "too_large":
			return typeof a.status === "number"
				? new ResponseTooLargeError(text, a.status, headers)
				: new UnsafeUrlError(text);
		case "timeout":
			return new DOMException(text, "TimeoutError");
		default:
			return new Error(text);
	}
}

function answerHeaders(a: FetchAnswer): Headers {
	const h = new Headers();
	if (typeof a.contentType === "string") h.set("content-type", a.contentType);
	if (typeof a.contentLength === "number") h.set("content-length", String(a.contentLength));
	if (typeof a.location === "string") h.set("location", a.location);
	return h;
}

/**
 * Fetch a public HTTP(S) URL through rtsandboxd's controlled fetch: every
 * hop vetted and pinned, the body bounded.  Rejects with UnsafeUrlError for
 * a URL or an address refused, and with the signal's reason when aborted.
 */
export async function safeFetch(raw: string, options: SafeFetchOptions = {}): Promise<SafeFetchResult> {
	const maxBytes = options.maxBytes ?? 5 * 1024 * 1024;
	const timeoutMs = options.timeoutMs ?? 60000;
	const redirects = options.maxRedirects ?? 5;
	if (
		!Number.isSafeInteger(maxBytes) ||
		maxBytes < 1 ||
		maxBytes > 32 * 1024 * 1024 ||
		!Number.isSafeInteger(timeoutMs) ||
		timeoutMs < 1 ||
		timeoutMs > 120000 ||
		!Number.isSafeInteger(redirects) ||
		redirects < 0 ||
		redirects > 10
	)
		throw new UnsafeUrlError("Invalid fetch bounds");
	refuseSeams(options);
	const url = target(raw);
	options.signal?.throwIfAborted();
	const link = linkFor(options.socket);
	const params: Record<string, unknown> = {
		url: url.href,
		timeoutMs,
		maxBytes,
		maxRedirects: redirects,
		followRedirects: options.followRedirects !== false,
	};
	const call = link.conn.call<unknown>(FETCH_METHOD, params);
	const signal = options.signal;
	let onAbort: (() => void) | undefined;
	const aborted = new Promise<never>((_resolve, reject) => {
		if (signal === undefined) return;
		onAbort = () => {
			call.cancel();
			reject(signal.reason);
		};
		signal.addEventListener("abort", onAbort, { once: true });
	});
	let a: unknown;
	try {
		a = await Promise.race([call.result, aborted]);
	} catch (e) {
		if (signal?.aborted) throw signal.reason;
		missing(e, FETCH_METHOD, link);
	} finally {
		if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort);
	}
	if (!isRecord(a)) throw new Error(`${FETCH_METHOD}: an answer of no known shape`);
	const answer = a as unknown as FetchAnswer;
	const headers = answerHeaders(answer);
	if (answer.ok !== true) throw answerError(answer, headers);
	const data = Buffer.from(typeof answer.data === "string" ? answer.data : "", "base64");
	if (data.byteLength > maxBytes) throw new UnsafeUrlError("Response body too large");
	const result: SafeFetchResult = {
		url: typeof answer.url === "string" ? answer.url : url.href,
		status: Number(answer.status),
		headers,
		data,
	};
	if (typeof answer.statusText === "string") result.statusText = answer.statusText;
	return result;
}

/**
 * Refuse a URL that is not credential-free HTTP(S) or does not resolve only
 * to public addresses, as rtsandboxd's controlled fetch vets them.  It does
 * not pin a later connection: fetch that URL with safeFetch.
 */
export async function assertPublicUrl(
	raw: string,
	resolve?: (hostname: string) => Promise<readonly ResolvedAddress[]>,
): Promise<URL> {
	if (resolve !== undefined)
		throw new Error("resolve is not supported: rtsandboxd's egress resolves names; leave it out");
	const url = target(raw);
	const link = linkFor();
	let a: unknown;
	try {
		a = await link.call<unknown>(CHECK_METHOD, { url: url.href });
	} catch (e) {
		missing(e, CHECK_METHOD, link);
	}
	if (!isRecord(a)) throw new Error(`${CHECK_METHOD}: an answer of no known shape`);
	if (a.ok !== true) throw new UnsafeUrlError(typeof a.error === "string" ? a.error : "URL resolves to a non-public address");
	return url;
}
