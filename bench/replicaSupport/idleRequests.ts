import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { ObjectStore } from "../../src/objectstore/index.js";
import { TAILER_DEFAULTS } from "../../src/replica/ShardTailer.js";
import { round } from "../kit/LatencySummary.js";
import type { RemoteEndpoint } from "../kit/RemoteEndpoint.js";
import { idleRequestCosts, type IdleRequestCosts } from "../commitSupport/requestCosts.js";
import { readNodeEntryVersion, readWatermark } from "./bucketState.js";
import type { NodePair } from "./NodePair.js";
import { byRequestClass, difference, dollarsOf, parseStoreCalls, scaled, type RequestClass, type StoreCallCounts } from "./storeCalls.js";

/**
 * Quiet time before the window, once the replica's watermark shows its position (so no
 * deferred watermark PUT is pending): past the tailer's backoff ramp after the last
 * segment (~1.7 s), so the window sees the steady idle cadence only.
 */
export const IDLE_SETTLE_MS = 3_000;
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
     * The replica's PUTs told apart by object, from the growth of the objects' CAS
     * versions over the window: its node registry entry (`nodes/{id}`, the node's, not the
     * shard's) and its consumer watermark (`s0/consumers/{id}`, published only after an
     * apply); anything else is `otherPutsPerHour`.
     */
    readonly registryPutsPerHour: number;
    readonly watermarkPutsPerHour: number;
    readonly otherPutsPerHour: number;
    /**
     * The shard's tailing as the tailer's cadence predicts it: a GET of the next slot per
     * poll (idle poll + one ~20 ms GET) and a manifest GET every manifestRefreshMs.
     */
    readonly expectedTailGetsPerHour: number;
    /** The replica's staleness at the end of the window (how long ago its copy was last known complete). */
    readonly stalenessMsAtEnd: number | null;
  };
  /** The idle writer beside it (heartbeats, registry, hint-target scans, GC), for comparison. */
  readonly writer: NodeIdleRequests;
  /** Every request the endpoint served in the window (both nodes), from its own counters. */
  readonly endpoint: IdleRequestCosts;
}

/**
 * Phase 2: with nothing committed, the replica's (and the writer's) object-store calls
 * over `seconds`, from their /metrics before and after, scaled to an hour. The replica is
 * alone on its shard, so its calls per hour are per shard-hour. `bucket` is the
 * deployment's prefix, read by this process (its reads are outside both nodes' counts,
 * and made before the endpoint's counters are reset and after they are read).
 */
export async function measureIdleRequests(pair: NodePair, endpoint: RemoteEndpoint, bucket: ObjectStore, seconds: number, pollIntervalMs: number, roundTripMs: number, progress: (message: string) => void): Promise<IdleRequestFigures> {
  await pair.awaitReplicaCaughtUp();
  await pair.awaitReplicaWatermark(bucket);
  await sleep(IDLE_SETTLE_MS);
  const { nodeId } = await pair.replica.health();
  const versionsBefore = await objectVersions(bucket, nodeId);
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
  const versionsAfter = await objectVersions(bucket, nodeId);
  const factor = 3600 / measuredSeconds;
  const replica = perHour(replicaCalls, measuredSeconds);
  const registryPuts = versionsAfter.registry - versionsBefore.registry;
  const watermarkPuts = versionsAfter.watermark - versionsBefore.watermark;
  return {
    measuredSeconds: round(measuredSeconds, 1),
    pollIntervalMs,
    replica: {
      ...replica,
      registryPutsPerHour: round(registryPuts * factor, 1),
      watermarkPutsPerHour: round(watermarkPuts * factor, 1),
      otherPutsPerHour: round((replicaCalls.create + replicaCalls.casPut - registryPuts - watermarkPuts) * factor, 1),
      expectedTailGetsPerHour: round(3_600_000 / (pollIntervalMs + roundTripMs) + 3_600_000 / TAILER_DEFAULTS.manifestRefreshMs, 0),
      stalenessMsAtEnd: (await pair.replica.health()).stalenessMs,
    },
    writer: perHour(writerCalls, measuredSeconds),
    endpoint: endpointCosts,
  };
}

/** The CAS versions of the replica's registry entry and watermark (0 for an object that does not exist). */
async function objectVersions(bucket: ObjectStore, nodeId: string): Promise<{ registry: number; watermark: number }> {
  const [registry, watermark] = await Promise.all([readNodeEntryVersion(bucket, nodeId), readWatermark(bucket, nodeId)]);
  return { registry: registry ?? 0, watermark: watermark?.version ?? 0 };
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
