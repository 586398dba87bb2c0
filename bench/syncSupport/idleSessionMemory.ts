import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../../src/base/errors.js";
import { round } from "../kit/LatencySummary.js";
import { BenchSocket } from "./BenchSocket.js";
import { FLEET_CONNECT_BATCH } from "./ClientFleet.js";
import { InspectorSession, type InspectedMemory } from "./InspectorSession.js";
import type { ServeChild } from "../kit/ServeChild.js";

export interface IdleSessionMemoryFigures {
  readonly sessions: number;
  readonly before: InspectedMemory;
  readonly after: InspectedMemory;
  /** (after − before) / sessions, KiB, of the JS heap in use after a full GC. */
  readonly heapKiBPerSession: number;
  /** The same for buffers and other memory outside the heap that V8 accounts for (ws and http buffers). */
  readonly externalKiBPerSession: number;
  /** The same for the resident set: heap, native allocations (sockets' libuv handles and buffers, http parsers) and allocator slack. */
  readonly rssKiBPerSession: number;
}

/** Settle time after the sessions connect, before the GC and the reading: their handshakes' garbage and timers have run. */
const SETTLE_MS = 2_000;

/**
 * Phase 3: the server's memory after a full GC (through its inspector) before and after
 * `count` more raw sockets open a session (Connect, ConnectAck) and then stay idle.
 *
 * The target is judged on RSS: it holds everything a session costs the process — its JS
 * objects, and the native side the heap misses (the socket's libuv handle, the HTTP
 * parser it upgraded from, ws's buffers). RSS moves in steps of the heap's pages, but
 * over 1,000 sessions a step is ~1 KiB per session, small beside the 50 KiB target. The
 * heap figure, taken after a GC, says how much of it is JS. (Kernel socket buffers are
 * not in RSS; an idle socket's are empty.)
 */
export async function measureIdleSessionMemory(server: ServeChild, count: number, onProgress: (line: string) => void): Promise<IdleSessionMemoryFigures> {
  if (server.inspectorUrl === null) throw new CairnError("INTERNAL", "measuring session memory needs the server started with --inspect");
  const inspector = await InspectorSession.open(server.inspectorUrl);
  const sockets: BenchSocket[] = [];
  try {
    const sessionsBefore = (await server.adminStatus()).sync.sessions;
    const before = await collectedMemory(inspector);
    for (let start = 0; start < count; start += FLEET_CONNECT_BATCH) {
      const batch = await Promise.allSettled(Array.from({ length: Math.min(FLEET_CONNECT_BATCH, count - start) }, () => BenchSocket.connect(server.syncUrl)));
      for (const opened of batch) if (opened.status === "fulfilled") sockets.push(opened.value);
      const failed = batch.find((opened) => opened.status === "rejected");
      if (failed !== undefined) throw failed.reason;
    }
    onProgress(`   ${sockets.length} idle sessions connected; settling…`);
    const sessionsAfter = (await server.adminStatus()).sync.sessions;
    if (sessionsAfter - sessionsBefore !== count) throw new CairnError("INTERNAL", `the server counts ${sessionsAfter - sessionsBefore} new sessions, not ${count}`);
    const after = await collectedMemory(inspector);
    const perSession = (field: keyof InspectedMemory) => round((after[field] - before[field]) / count / 1024, 2);
    return {
      sessions: count,
      before,
      after,
      heapKiBPerSession: perSession("heapUsed"),
      externalKiBPerSession: perSession("external"),
      rssKiBPerSession: perSession("rss"),
    };
  } finally {
    await Promise.all(sockets.map((socket) => socket.close()));
    await inspector.close();
  }
}

async function collectedMemory(inspector: InspectorSession): Promise<InspectedMemory> {
  await sleep(SETTLE_MS);
  await inspector.collectGarbage();
  return inspector.memoryUsage();
}
