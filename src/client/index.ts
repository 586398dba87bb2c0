/**
 * The client library's public surface (Node and browsers). In Node 20, which has no
 * global WebSocket, import `createNodeClient` from "./node.js" instead of constructing
 * CairnClient directly.
 */
export {
  apiOf,
  functionReference,
  type ActionReference,
  type ApiOf,
  type ArgsOf,
  type ArgsParameter,
  type FunctionReference,
  type MutationReference,
  type QueryReference,
  type ResultOf,
} from "./api.js";
export { CairnClient, type CairnClientOptions, type ConnectionListener, type MutationFunction, type PendingMutationsListener } from "./CairnClient.js";
export type { OutboxStore } from "./OutboxStore.js";
export type { LogListener } from "./ClientState.js";
export type { LogEntry } from "../sync/protocol.js";
export { indexedDbOutbox, type IndexedDbOutboxOptions } from "./indexedDbOutbox.js";
export type { PendingMutationView } from "./PendingMutationView.js";
export type { AuthIdentity } from "./AuthIdentity.js";
export { reconnectDelayMs, type ConnectionState } from "./ConnectionLifecycle.js";
export type { OptimisticLocalStore, OptimisticUpdate } from "./OptimisticUpdates.js";
export type { Random } from "./Random.js";
export type { Timers } from "./Timers.js";
export type { TokenFetcher } from "./TokenRefresher.js";
export type { WebSocketConstructor, WebSocketLike } from "./WebSocketLike.js";
export { RECONNECT_BACKOFF_BASE_MS, RECONNECT_BACKOFF_MAX_MS } from "./limits.js";
// Errors are recognised by `code` (hasErrorCode), never by instanceof: a bundle may hold its own copy.
export { hasErrorCode, type CairnError, type ErrorCode, type ErrorKind } from "../base/index.js";
export type { Value } from "../model/Value.js";
