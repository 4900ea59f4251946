export { PiSandboxRuntime, DEFAULT_SOCKET } from "./runtime.js";
export { SandboxResearchWorker } from "./research.js";
export type { SandboxResearchWorkerOptions, ResearchRun } from "./research.js";
export { RpcCode, RtsandboxError, RtsandboxRpcError, RtsandboxConnectionError } from "./errors.js";
export { THINKING_LEVELS } from "./types.js";
export type * from "./types.js";
