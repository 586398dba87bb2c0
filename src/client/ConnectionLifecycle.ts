import { assert } from "../base/index.js";
import { RECONNECT_BACKOFF_BASE_MS, RECONNECT_BACKOFF_MAX_MS } from "./limits.js";
import type { Random } from "./Random.js";

/**
 * A client's connection, as a union of states. `attempt` counts reconnect attempts
 * since the last connection that got its ConnectAck (0 for the first). `url` is the node
 * URL of the connection (connecting, connected) or of the next attempt (waiting); a
 * socket closing moves it on to `nextUrl`, the next URL of the client's list (NodeUrls).
 *
 *   state                       event                   next
 *   connecting(k, u)            connectAcked            connected(u)
 *   connecting(k, u)            socketClosed(nextUrl)   waitingToReconnect(k, delay(k), nextUrl)
 *   connected(u)                socketClosed(nextUrl)   waitingToReconnect(0, delay(0), nextUrl)   (backoff reset)
 *   waitingToReconnect(k, u)    retryTimerFired         connecting(k + 1, u)
 *   any but closed              closeRequested          closed
 *   closed                      closeRequested          closed                                    (terminal)
 *
 * "connecting" covers both opening the socket and waiting for ConnectAck: until the
 * server acknowledges the session the client cannot promise anything. Any other pair is
 * a driver bug.
 */
export type ConnectionState =
  | { readonly state: "connecting"; readonly attempt: number; readonly url: string }
  | { readonly state: "connected"; readonly url: string }
  | { readonly state: "waitingToReconnect"; readonly attempt: number; readonly delayMs: number; readonly url: string }
  | { readonly state: "closed" };

export type ConnectionEvent =
  | { readonly type: "connectAcked" }
  | { readonly type: "socketClosed"; readonly nextUrl: string }
  | { readonly type: "retryTimerFired" }
  | { readonly type: "closeRequested" };

/** The state of a new client, connecting to `url`. */
export function initialConnectionState(url: string): ConnectionState {
  return { state: "connecting", attempt: 0, url };
}

/** The state after `event`; `delayMsOf(attempt)` is the wait before reconnect attempt `attempt + 1`. */
export function nextConnectionState(
  current: ConnectionState,
  event: ConnectionEvent,
  delayMsOf: (attempt: number) => number,
): ConnectionState {
  if (event.type === "closeRequested") return { state: "closed" };
  switch (current.state) {
    case "connecting":
      if (event.type === "connectAcked") return { state: "connected", url: current.url };
      assert(event.type === "socketClosed", `connecting: unexpected ${event.type}`);
      return { state: "waitingToReconnect", attempt: current.attempt, delayMs: delayMsOf(current.attempt), url: event.nextUrl };
    case "connected":
      assert(event.type === "socketClosed", `connected: unexpected ${event.type}`);
      return { state: "waitingToReconnect", attempt: 0, delayMs: delayMsOf(0), url: event.nextUrl };
    case "waitingToReconnect":
      assert(event.type === "retryTimerFired", `waitingToReconnect: unexpected ${event.type}`);
      return { state: "connecting", attempt: current.attempt + 1, url: current.url };
    case "closed":
      assert(false, `closed: unexpected ${event.type}`);
  }
}

export interface BackoffOptions {
  readonly baseMs?: number;
  readonly maxMs?: number;
}

/**
 * Jittered exponential backoff: min(max, base·2^attempt) × (0.5 + random·0.5). Half the
 * delay is jitter, so clients that lost one server together do not return together. The
 * client passes the attempt's cycle through its URLs (NodeUrls.cycleOf): with one URL,
 * the attempt itself.
 */
export function reconnectDelayMs(attempt: number, random: Random, options: BackoffOptions = {}): number {
  const baseMs = options.baseMs ?? RECONNECT_BACKOFF_BASE_MS;
  const maxMs = options.maxMs ?? RECONNECT_BACKOFF_MAX_MS;
  const ceilingMs = Math.min(maxMs, baseMs * 2 ** Math.min(attempt, 52));
  return Math.round(ceilingMs * (0.5 + random.float() * 0.5));
}
