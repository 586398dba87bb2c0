import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../../src/base/errors.js";
import type { ServeChild } from "../kit/ServeChild.js";
import { BenchSocket, FRAME_WAIT_MS_MAX } from "./BenchSocket.js";
import { FLEET_CONNECT_BATCH } from "./ClientFleet.js";

/**
 * Opens `count` raw sockets, FLEET_CONNECT_BATCH at a time (as the client fleet connects),
 * each with `connectOf(index)`'s Connect and then `then(socket, index)` (its subscriptions),
 * awaited per batch. On any failure the sockets opened so far are closed and the error
 * thrown.
 */
export async function openSockets(
  syncUrl: string,
  count: number,
  connectOf: (index: number) => Parameters<typeof BenchSocket.connect>[1],
  then: (socket: BenchSocket, index: number) => Promise<void>,
  onBatch?: (opened: number) => void,
): Promise<BenchSocket[]> {
  const sockets: BenchSocket[] = [];
  try {
    for (let start = 0; start < count; start += FLEET_CONNECT_BATCH) {
      const indexes = Array.from({ length: Math.min(FLEET_CONNECT_BATCH, count - start) }, (_, at) => start + at);
      const batch = await Promise.allSettled(
        indexes.map(async (index) => {
          const socket = await BenchSocket.connect(syncUrl, connectOf(index));
          sockets[index] = socket;
          await then(socket, index);
          return socket;
        }),
      );
      const failed = batch.find((opened) => opened.status === "rejected");
      if (failed !== undefined) throw failed.reason;
      onBatch?.(start + indexes.length);
    }
    return sockets;
  } catch (error) {
    await closeSockets(sockets.filter((socket) => socket !== undefined));
    throw error;
  }
}

export async function closeSockets(sockets: readonly BenchSocket[]): Promise<void> {
  await Promise.all(sockets.map((socket) => socket.close()));
}

/**
 * Waits until the server holds at most `sessions` sessions: once a closed socket's session
 * is gone from the count, the server has also registered its subscriptions for resume
 * (Session.close registers before it leaves the handler).
 */
export async function sessionsDownTo(server: ServeChild, sessions: number): Promise<void> {
  const deadline = performance.now() + FRAME_WAIT_MS_MAX;
  for (;;) {
    const held = (await server.adminStatus()).sync.sessions;
    if (held <= sessions) return;
    if (performance.now() > deadline) throw new CairnError("TIMEOUT", `the server still holds ${held} sessions, not ${sessions}, ${FRAME_WAIT_MS_MAX} ms after the sockets closed`);
    await sleep(50);
  }
}
