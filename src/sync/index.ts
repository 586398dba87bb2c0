/** The sync layer's public surface: the protocol and the handler a node serves sessions with. */
export * from "./protocol.js";
export { closeReason, CLOSE_REASON_BYTES_MAX } from "./closeReason.js";
export { SyncHandler, type SessionConnection, type SyncHandlerOptions, type SyncStats } from "./SyncHandler.js";
export type { LogSource, SessionTransport } from "./Session.js";
export { sameSecret } from "./sameSecret.js";
export type { CallerOptions, SyncBackend } from "./SyncBackend.js";
export type { TokenVerifier, VerifiedToken } from "./TokenVerifier.js";
export { DEFAULT_OUTBOX_LIMITS, type OutboxLimits } from "./Outbox.js";
export { segmentWrites } from "./segmentWrites.js";
export { runtimeBackend, type ServedShards } from "./runtimeBackend.js";
export {
  LogRing,
  type LogListener,
  type LogQuery,
  type LogQueryResult,
  type LogRingOptions,
} from "./LogRing.js";
export { LogFeed, type LogEntriesFrame } from "./LogFeed.js";
