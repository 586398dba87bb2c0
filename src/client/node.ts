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

export function createNodeClient(url: string, options: Omit<CairnClientOptions, "WebSocket"> = {}): CairnClient {
  return new CairnClient(url, { ...options, WebSocket: NodeWebSocket });
}
