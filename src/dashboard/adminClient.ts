import { CairnClient } from "cairn/client";
import type { LogEntry } from "./adminTypes.js";

/**
 * The page's WebSocket session: the public client library, made an admin session with
 * `client.setAdminKey(key)` (re-sent by the client on every reconnect), so that it may
 * subscribe to the system and internal functions and follow the node's logs.
 */
export function openAdminClient(onError: (error: unknown) => void): CairnClient {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  return new CairnClient(`${scheme}://${location.host}/api/sync`, { onError });
}

export interface LogBatch {
  readonly entries: readonly LogEntry[];
  readonly dropped: number;
}

/** Streams the node's log entries to `listener` in batches; returns the function that stops it. */
export function subscribeLogs(client: CairnClient, listener: (batch: LogBatch) => void): () => void {
  return client.subscribeLogs((entries, dropped) => listener({ entries: entries as readonly LogEntry[], dropped }));
}

/** The page's WebSocket session as views see it: `client` is set once the node took the admin key. */
export interface LiveSession {
  readonly client: CairnClient | null;
  /** Why there is no admin session (the node refused or lacks it, the socket failed). */
  readonly error: unknown;
  readonly connection: string;
}
