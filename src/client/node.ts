import WebSocket from "ws";
import { CairnClient, type CairnClientOptions } from "./CairnClient.js";
import type { WebSocketConstructor } from "./WebSocketLike.js";

/**
 * The client in Node, which (in version 20) has no global WebSocket: the `ws` package's
 * is passed instead. Node only, and not part of index.ts, so browser bundles never
 * include `ws`.
 */

/** `ws`'s WebSocket as the client's subset of the API (its event types are richer than the subset's). */
export const NodeWebSocket = WebSocket as unknown as WebSocketConstructor;

/** A client of one sync URL, or of several nodes' (as `new CairnClient(urls, options)`). */
export function createNodeClient(urls: string | readonly string[], options: Omit<CairnClientOptions, "WebSocket"> = {}): CairnClient {
  return new CairnClient(urls, { ...options, WebSocket: NodeWebSocket });
}

// A file outbox (node:fs) is Node-only too: browsers use indexedDbOutbox from index.ts.
export { fileOutbox } from "./fileOutbox.js";
