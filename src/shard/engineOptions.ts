import type { Clock } from "../base/clock.js";
import type { Random } from "../base/random.js";
import { CONSUMER_TTL_MS_DEFAULT } from "../gc/ConsumerWatermarks.js";
import type { LocalStore } from "../local/index.js";
import type { ObjectStore } from "../objectstore/ObjectStore.js";
import type { HybridClock } from "./HybridClock.js";

/**
 * How a shard engine is assembled and tuned. Every default states its trade-off; costs
 * are S3 Standard list prices (PUT $0.005 / 1000, GET $0.0004 / 1000).
 */
export interface ShardEngineOptions {
  readonly store: ObjectStore;
  readonly deploymentId: string;
  readonly shard: number;
  /** The shard's materialization; the caller opens and closes it. */
  readonly local: LocalStore;
  /** This node's identity in the manifest; unique per process incarnation. */
  readonly nodeId: string;
  /** Where replicas forward mutations to this writer (null: not served). */
  readonly nodeUrl?: string | null;
  readonly clock: Clock;
  readonly random: Random;
  /** One per node, shared by all its shards. */
  readonly hybridClock: HybridClock;
  readonly tuning?: Partial<ShardEngineTuning>;
  readonly onEvent?: (event: import("./ShardEngine.js").EngineEvent) => void;
}

export interface ShardEngineTuning {
  /**
   * How long a writer's lease lasts without a heartbeat. A crashed writer's shard takes
   * writes again after at most this long (a graceful stop hands over at once).
   * Default 10 s.
   */
  readonly leaseTtlMs: number;
  /**
   * Heartbeat cadence. Every 3 s is 28,800 PUTs a day per shard (~$0.14/day) and leaves
   * two missed heartbeats of slack before a 10 s lease lapses.
   */
  readonly heartbeatIntervalMs: number;
  /**
   * "always": every commit GETs the manifest after its create (one conditional GET, a
   * 304 almost always) and so can never acknowledge a write into a collected slot.
   * "lease": skip that GET while now + clockSkewMsMax < leaseExpiresAt, trusting clocks
   * for one round trip less per commit.
   */
  readonly verify: "always" | "lease";
  /** Largest clock difference between nodes that "lease" verification tolerates. Default 1 s. */
  readonly clockSkewMsMax: number;
  /** Write units per segment at most. Default 4096: one PUT carries up to this many mutations. */
  readonly flushUnitsMax: number;
  /** Payload bytes per segment before a flush is cut (at least one unit is always taken). Default 8 MiB. */
  readonly flushBytesMax: number;
  /** Largest single write unit. Default 16 MiB (sixteen maximal documents). */
  readonly unitBytesMax: number;
  /** Segment GETs in flight during catch-up. Default 32: ~1,300 segments/s at 25 ms per GET. */
  readonly fetchConcurrency: number;
  /** Restore the snapshot instead of replaying when this many segments behind it. Default 2,000. */
  readonly restoreLagSegments: number;
  /** Snapshot after this many segments since the last one. Default 1,000. */
  readonly snapshotEverySegments: number;
  /** … or this many segment bytes. Default 64 MiB: bounds replay work after a restart. */
  readonly snapshotEveryBytes: number;
  /** … or this long with any new segment. Default 10 min. */
  readonly snapshotEveryMs: number;
  /** How often the maintenance driver checks snapshot cadence. Default 5 s. */
  readonly maintenanceIntervalMs: number;
  /** GC cadence. Default 60 s: deletes are free, the manifest CAS and a LIST of snap/ are not (~$0.015/day). */
  readonly gcIntervalMs: number;
  /** Every this many GC runs, LIST the log for strays. Default 60 (hourly at the default cadence). */
  readonly gcSweepEveryRuns: number;
  /** A consumer watermark older than this stops holding GC back. Default 24 h. */
  readonly consumerTtlMs: number;
  /**
   * Append an empty tick segment every heartbeat when nothing was committed, so that an
   * idle shard does not hold back a multi-shard read frontier. Default off (one shard).
   */
  readonly tickWhenIdle: boolean;
  /** Committed units remembered for optimistic-concurrency checks. Default 100,000. */
  readonly recentWritesUnitsMax: number;
  /** … and for at most this long; an older read snapshot re-runs. Default 60 s. */
  readonly recentWritesWindowMs: number;
}

export const SHARD_ENGINE_DEFAULTS: ShardEngineTuning = {
  leaseTtlMs: 10_000,
  heartbeatIntervalMs: 3_000,
  verify: "always",
  clockSkewMsMax: 1_000,
  flushUnitsMax: 4_096,
  flushBytesMax: 8 * 1024 * 1024,
  unitBytesMax: 16 * 1024 * 1024,
  fetchConcurrency: 32,
  restoreLagSegments: 2_000,
  snapshotEverySegments: 1_000,
  snapshotEveryBytes: 64 * 1024 * 1024,
  snapshotEveryMs: 10 * 60 * 1000,
  maintenanceIntervalMs: 5_000,
  gcIntervalMs: 60_000,
  gcSweepEveryRuns: 60,
  consumerTtlMs: CONSUMER_TTL_MS_DEFAULT,
  tickWhenIdle: false,
  recentWritesUnitsMax: 100_000,
  recentWritesWindowMs: 60_000,
};
