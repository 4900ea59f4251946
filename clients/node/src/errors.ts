/** JSON-RPC error codes rtsandboxd answers with (rtsandbox-protocol(7)). */
export const RpcCode = {
	PARSE_ERROR: -32700,
	INVALID_REQUEST: -32600,
	METHOD_NOT_FOUND: -32601,
	INVALID_PARAMS: -32602,
	INTERNAL_ERROR: -32603,
	NOT_INITIALIZED: -32002,
	REQUEST_CANCELLED: -32800,
	/** A valid operation that failed; the message says why. */
	APP_ERROR: -32000,
} as const;

/** Every error this package throws. */
export class RtsandboxError extends Error {
	/** The control method that failed. */
	readonly method: string;

	constructor(method: string, message: string) {
		super(message);
		this.name = "RtsandboxError";
		this.method = method;
	}
}

/** The daemon answered the request with a JSON-RPC error. */
export class RtsandboxRpcError extends RtsandboxError {
	readonly code: number;

	constructor(method: string, code: number, message: string) {
		super(method, `${method}: ${message} (${code})`);
		this.name = "RtsandboxRpcError";
		this.code = code;
	}
}

/**
 * No answer can come: the daemon could not be reached in time, or the
 * connection dropped with the request in flight (sent is then true, and the
 * daemon may have acted on it before it went away).
 */
export class RtsandboxConnectionError extends RtsandboxError {
	readonly socket: string;
	readonly sent: boolean;

	constructor(method: string, socket: string, sent: boolean, message: string) {
		super(method, message);
		this.name = "RtsandboxConnectionError";
		this.socket = socket;
		this.sent = sent;
	}
}
