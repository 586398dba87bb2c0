import type { WebSocket } from "ws";
import { PINGS_MISSED_MAX } from "../base/index.js";

/**
 * One round of liveness pings over `missed` (each socket with the pings it left
 * unanswered in a row; a pong sets it back to 0): a socket at PINGS_MISSED_MAX is handed
 * to `unresponsive` (which ends it) instead of being pinged again.
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
