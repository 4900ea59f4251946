/**
 * pi-roundtable-sandbox 0.7.3's Pi-mode surface over rtsandboxd: a bot
 * written for 0.7.3 imports "rtsandbox-client/pi-roundtable-sandbox"
 * instead of "pi-roundtable-sandbox" and runs unchanged against a daemon
 * whose configuration its options describe.
 */
export {
	PI_COMPACT_LIMITS,
	PiSandboxRuntime,
	RtsandboxConfigError,
	type ConfigDifference,
	type PiCompactor,
	type PiContainerDriver,
	type PiContainerSpec,
	type PiContainerState,
	type PiContainerStatus,
	type PiHostContext,
	type PiMcpServer,
	type PiProfile,
	type PiSandboxRuntimeOptions,
	type PiSandboxTurn,
	type PiSandboxTurnResult,
	type PiTurnError,
	type PiTurnFailureReason,
} from "./pi/runtime.js";
export {
	isPiThinkingLevel,
	PI_ATTACHMENTS,
	PI_BROKER_SOCKET,
	PI_FORWARDER_PORT,
	PI_MEDIA_LIMITS,
	PI_OUTBOX,
	PI_RUN_DIR,
	PI_THINKING_LEVELS,
	PI_WORKSPACE,
	safeFileName,
	validateCompactionReport,
	validateCompactRequest,
	validateImages,
	validateReplyFiles,
	type PiCompaction,
	type PiCompactionReport,
	type PiCompactMessage,
	type PiCompactRequest,
	type PiCompactResponse,
	type PiImage,
	type PiMcpDiscovery,
	type PiReplyFile,
	type PiThinkingLevel,
	type PiToolResponse,
	type PiTurnContext,
	type PiTurnRequest,
	type PiTurnResponse,
	type PiWorkerConfig,
} from "./pi/protocol.js";
export { collectPiAttachments, type PiAttachmentOptions } from "./pi/attachments.js";
export {
	assertPublicUrl,
	ResponseTooLargeError,
	safeFetch,
	UnsafeUrlError,
	type ResolvedAddress,
	type SafeFetchOptions,
	type SafeFetchResult,
} from "./pi/safe-fetch.js";
export { SandboxResearchWorker, type ResearchError, type SandboxResearchOptions } from "./pi/research.js";
export {
	precheckScriptRunner,
	type PrecheckMcpServer,
	type PrecheckResult,
	type PrecheckScope,
	type PrecheckScriptContext,
	type PrecheckScriptRunner,
	type PrecheckScriptRunnerOptions,
} from "./pi/precheck.js";
export { ScopedSandboxDelegator, type ScopedDelegatorOptions } from "./pi/delegator.js";
export {
	AgentRunError,
	DelegationError,
	type AttachmentFailure,
	type AttachmentRef,
	type ChannelKey,
	type DelegationJob,
	type DelegationOutcome,
	type InboundMessage,
	type Logger,
	type ModelImage,
	type StoredAttachment,
	type Tier,
	type TurnAttachments,
} from "./pi/core.js";
