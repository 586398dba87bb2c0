import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { round } from "../commitSupport/LatencySummary.js";
import type { RemoteEndpoint } from "../commitSupport/RemoteEndpoint.js";
import { idleRequestCosts, type IdleRequestCosts } from "../commitSupport/requestCosts.js";
import type { NodeChild } from "./NodeChild.js";
import type { NodePair } from "./NodePair.js";
import { byRequestClass, difference, dollarsOf, parseStoreCalls, scaled, type RequestClass, type StoreCallCounts } from "./storeCalls.js";

/**
 * Quiet time before the window: past the tailer's backoff ramp after the last segment
 * (~1.7 s) and the watermark publish that follows an apply (at most 1 s later), so the
 * window sees the steady idle cadence only.
 */
export const IDLE_SETTLE_MS = 5_000;
/** Progress lines during the window this often. */
const PROGRESS_EVERY_MS = 30_000;
const HOURS_PER_MONTH = 24 * 30;

/** One node's store calls over the window, and the same scaled to an hour. */
export interface NodeIdleRequests {
  readonly calls: StoreCallCounts;
  readonly callsPerHour: Record<keyof StoreCallCounts, number>;
  readonly requestsPerHour: Record<RequestClass, number>;
  readonly dollarsPerHour: number;
  readonly dollarsPer30Days: number;
}

export interface IdleRequestFigures {
  readonly measuredSeconds: number;
  readonly pollIntervalMs: number;
  readonly replica: NodeIdleRequests & {
    /**
     * The node registry's share (DESIGN.md §9): each refresh, every 10 s, is one GET and
     * one PUT of `nodes/{id}` (a CAS update), so its GETs are taken to equal the PUTs of an
     * idle replica (whose watermark PUTs only follow an apply).
     */
    readonly registryGetsPerHour: number;
    /** The rest: the shard's tailing (a GET of the next slot per poll, a manifest GET every 15 s). */
    readonly tailGetsPerShardHour: number;
    /** The replica's staleness at the end of the window (how long ago its copy was last known complete). */
    readonly stalenessMsAtEnd: number | null;
  };
  /** The idle writer beside it (heartbeats, registry, GC), for comparison. */
  readonly writer: NodeIdleRequests;
  /** Every request the endpoint served in the window (both nodes), from its own counters. */
  readonly endpoint: IdleRequestCosts;
}

/**
 * Phase 2: with nothing committed, the replica's (and the writer's) object-store calls
 * over `seconds`, from their /metrics before and after, scaled to an hour. The replica is
 * alone on its shard, so its calls per hour are per shard-hour.
 */
export async function measureIdleRequests(pair: NodePair, endpoint: RemoteEndpoint, seconds: number, pollIntervalMs: number, progress: (message: string) => void): Promise<IdleRequestFigures> {
  await pair.awaitReplicaCaughtUp();
  await sleep(IDLE_SETTLE_MS);
  const replicaBefore = parseStoreCalls(await pair.replica.metrics());
  const writerBefore = parseStoreCalls(await pair.writer.metrics());
  await endpoint.resetCounters();
  const startedMs = performance.now();
  for (let waitedMs = 0; waitedMs < seconds * 1000; waitedMs += PROGRESS_EVERY_MS) {
    await sleep(Math.min(PROGRESS_EVERY_MS, seconds * 1000 - waitedMs));
    if (waitedMs + PROGRESS_EVERY_MS < seconds * 1000) progress(`   ${Math.round((performance.now() - startedMs) / 1000)} of ${seconds} s`);
  }
  const replicaCalls = difference(parseStoreCalls(await pair.replica.metrics()), replicaBefore);
  const writerCalls = difference(parseStoreCalls(await pair.writer.metrics()), writerBefore);
  const measuredSeconds = (performance.now() - startedMs) / 1000;
  const endpointCosts = idleRequestCosts(await endpoint.counters(), measuredSeconds);
  const replica = perHour(replicaCalls, measuredSeconds);
  const registryGetsPerHour = replica.requestsPerHour.PUT;
  return {
    measuredSeconds: round(measuredSeconds, 1),
    pollIntervalMs,
    replica: {
      ...replica,
      registryGetsPerHour,
      tailGetsPerShardHour: round(replica.requestsPerHour.GET - registryGetsPerHour, 1),
      stalenessMsAtEnd: (await pair.replica.health()).stalenessMs,
    },
    writer: perHour(writerCalls, measuredSeconds),
    endpoint: endpointCosts,
  };
}

/** Reads a node's calls so far (for windows measured elsewhere). */
export async function storeCallsOf(node: NodeChild): Promise<StoreCallCounts> {
  return parseStoreCalls(await node.metrics());
}

function perHour(calls: StoreCallCounts, seconds: number): NodeIdleRequests {
  const factor = 3600 / seconds;
  const classes = byRequestClass(calls);
  const dollarsPerHour = dollarsOf(classes) * factor;
  return {
    calls,
    callsPerHour: scaled(calls, factor),
    requestsPerHour: scaled(classes, factor),
    dollarsPerHour: round(dollarsPerHour, 6),
    dollarsPer30Days: round(dollarsPerHour * HOURS_PER_MONTH, 4),
  };
}
