import type { WebSocket } from "ws";
import { PINGS_MISSED_MAX } from "../base/index.js";

/**
 * One round of liveness pings over `missed` (each socket with the pings it left
 * unanswered in a row; any sign of life sets it back to 0): a socket at PINGS_MISSED_MAX
 * is handed to `unresponsive` (which ends it) instead of being pinged again.
 */
export function pingSockets(missed: Map<WebSocket, number>, unresponsive: (ws: WebSocket, missed: number) => void): void {
  for (const [ws, count] of missed) {
    if (count >= PINGS_MISSED_MAX) {
      unresponsive(ws, count);
      continue;
    }
    missed.set(ws, count + 1);
    ws.ping();
  }
}

/**
 * `ws` showed it is alive: a pong, or any frame it sent. A peer busy sending (a client
 * streaming mutations whose pongs queue behind its frames, one whose runtime answers
 * pings late) is not taken for dead while its frames arrive.
 */
export function aliveNow(missed: Map<WebSocket, number>, ws: WebSocket): void {
  if (missed.has(ws)) missed.set(ws, 0);
}
