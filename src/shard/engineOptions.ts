import { z } from "zod";
import { type Clock, CairnError, HEARTBEAT_MISSES_MAX, type Random } from "../base/index.js";
import { NODE_ID_PATTERN } from "../model/index.js";
import { CONSUMER_TTL_MS_DEFAULT, RETAINED_SNAPSHOT_SPACING_MS_DEFAULT } from "../gc/index.js";
import type { LocalStore } from "../local/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import type { HybridClock } from "./HybridClock.js";
import { SNAPSHOT_FETCH_CONCURRENCY } from "../snapshots/index.js";

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
  /**
   * Where replicas forward mutations to this writer (null: not served), named in the
   * manifest at each acquire. A function is asked at acquire time (a node that learns its
   * URL once it listens).
   */
  readonly nodeUrl?: string | null | (() => string | null);
  readonly clock: Clock;
  readonly random: Random;
  /** One per node, shared by all its shards. */
  readonly hybridClock: HybridClock;
  readonly tuning?: Partial<ShardEngineTuning>;
  /**
   * The drivers the engine runs on its own cadence; default all of ENGINE_DRIVERS. A
   * caller that leaves one out runs it itself (`heartbeat()`, `runMaintenance()`,
   * `pruneLocal()`): tests that move time by hand, an embedder with its own scheduler.
   */
  readonly drivers?: readonly EngineDriver[];
  /**
   * Whether a writer whose lease renewals fail steps down (default true; see ShardEngine,
   * heartbeatMissesMax). An engine that commits nothing and only holds the lease (a
   * reshard keeping the old shards fenced, with a lock of its own) passes false: it
   * counts misses but keeps writing, and its next heartbeat tells whether it still holds
   * the lease (FENCED if not).
   */
  readonly stepDownOnFailedRenewals?: boolean;
  readonly onEvent?: (event: import("./ShardEngine.js").EngineEvent) => void;
  /**
   * Whether `open` catches the local copy up to the log's end before returning (default
   * true). A replica passes false: it serves what it has at once and its tailer catches
   * up, reporting what stops it (an unreachable bucket, a corrupt segment) as staleness.
   */
  readonly catchUpOnOpen?: boolean;
  /**
   * The newest ts of a data commit this node applied on any shard, its own or one it
   * follows from another writer (default: this shard's own). An idle shard behind it
   * ticks (tickWhenIdle), so readers of the shards' common frontier see that commit.
   */
  readonly newestCommitTs?: () => number;
  /** Whether anyone reads the shards' common frontier from the bucket (a replica); default true. Without, idle shards never tick. */
  readonly frontierWanted?: () => boolean;
  /**
   * Runs before every acquire, before the manifest is touched; throwing refuses the
   * acquire. ShardedStore passes the layout check (manifest/ReshardLock: no reshard in
   * progress, the layout this node opened is still current).
   */
  readonly beforeAcquire?: () => Promise<void>;
  /** What live branches hold of this shard (GC keeps it); ShardedStore reads the deployment's branch registry. */
  readonly branchHolds?: () => Promise<import("../manifest/index.js").ShardHolds>;
}

/**
 * While writing: "heartbeat" (lease renewal, under heartbeatDeadlineMs), "maintenance"
 * (snapshots, GC, pruning), "frontier" (the idle-shard ticks of tickWhenIdle; it runs only
 * with that on). While not writing (following, fenced, poisoned), from open to close:
 * "prune", the local history's retention (pruneLocal) on the maintenance cadence, so that
 * whoever assembles a node needs no loop of its own for its followers.
 */
export const ENGINE_DRIVERS = ["heartbeat", "maintenance", "frontier", "prune"] as const;
export type EngineDriver = (typeof ENGINE_DRIVERS)[number];

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
   * How long one heartbeat may take: one that has not answered by then counts as a miss
   * (its late answer renews nothing here), so a bucket that hangs is noticed as soon as
   * one that errors. Must be below leaseTtlMs. Default: heartbeatIntervalMs (3 s).
   */
  readonly heartbeatDeadlineMs: number;
  /**
   * Consecutive missed heartbeats (failed, or not answered within heartbeatDeadlineMs)
   * after which the writer steps down: it stops acknowledging, fails what it queued and
   * stops writing the shard until re-acquired. It steps down sooner, at once, when its
   * lease may have lapsed (less than clockSkewMsMax of it left) while renewals fail. Default
   * 3: with the default cadence three misses take ~9–18 s, so on a 10 s lease the lease
   * check usually comes first for a hanging bucket and the count for one that errors fast.
   * A success resets the count.
   */
  readonly heartbeatMissesMax: number;
  /**
   * A writer whose shard has taken no commit for this long is idle: it renews its lease
   * for idleLeaseTtlMs every idleHeartbeatIntervalMs instead, and takes the short lease
   * back with the next commit (a renewal at once, beside that commit's flush). Default 60 s.
   */
  readonly idleAfterMs: number;
  /**
   * An idle shard's lease (at least leaseTtlMs; equal turns stretching off). It is how
   * long a crashed writer's idle shard waits for a standby: the price of an idle shard's
   * requests. Default 60 s, or leaseTtlMs if that is longer.
   */
  readonly idleLeaseTtlMs: number;
  /**
   * An idle shard's heartbeat cadence (at least heartbeatIntervalMs, below
   * idleLeaseTtlMs). Every 20 s is 180 PUTs an hour: $0.66 a month per idle shard at S3
   * Standard's $0.005 per 1,000, against $4.38 at the busy cadence of 3 s. Default a third
   * of idleLeaseTtlMs up to 20 s, or heartbeatIntervalMs if that is longer.
   */
  readonly idleHeartbeatIntervalMs: number;
  /**
   * "always": every commit GETs the manifest after its create (one conditional GET, a
   * 304 almost always) and so can never acknowledge a write into a collected slot.
   * "lease": skip that GET while now + clockSkewMsMax < leaseExpiresAt, trusting clocks
   * for one round trip less per commit.
   */
  readonly verify: "always" | "lease";
  /** Largest clock difference between nodes that "lease" verification tolerates. Default 1 s. */
  readonly clockSkewMsMax: number;
  /**
   * Segments of the shard in flight at once (pipelined group commit, DESIGN.md §4): each
   * is created and verified while the ones before it still are, and acknowledged strictly
   * in log order. 1 is one flush at a time (fewest PUTs: every commit waits for the flush
   * before it); more keeps latency flat under load for up to that many PUTs (and
   * verifying GETs) per flush time. Default 4; at most PIPELINE_DEPTH_MAX.
   */
  readonly pipelineDepth: number;
  /** Write units per segment at most. Default 4096: one PUT carries up to this many mutations. */
  readonly flushUnitsMax: number;
  /** Payload bytes per segment before a flush is cut (at least one unit is always taken). Default 8 MiB. */
  readonly flushBytesMax: number;
  /** Largest single write unit. Default 16 MiB (sixteen maximal documents). */
  readonly unitBytesMax: number;
  /** Segment GETs in flight during catch-up. Default 32: ~1,300 segments/s at 25 ms per GET. */
  readonly fetchConcurrency: number;
  /**
   * Snapshot parts fetched and decoded ahead of the local store while restoring. Default
   * 4; each decoded part holds ~8 MiB of rows as objects (tens of MiB of heap), so a
   * process that must stay small (a reshard) restores with 1.
   */
  readonly snapshotFetchConcurrency: number;
  /** Restore the snapshot instead of replaying when this many segments behind it. Default 2,000. */
  readonly restoreLagSegments: number;
  /** Snapshot after this many segments since the last one. Default 1,000. */
  readonly snapshotEverySegments: number;
  /** … or this many segment bytes. Default 64 MiB: bounds replay work after a restart. */
  readonly snapshotEveryBytes: number;
  /** … or this long with any new segment. Default 10 min. */
  readonly snapshotEveryMs: number;
  /**
   * Where a snapshot's parts are deflated: "thread-pool" (the default), on libuv's thread
   * pool while the next part's rows are read, so the event loop stays free for commits
   * (inline, each 8 MiB part held it for 100-300 ms, the longest stall a busy writer had);
   * "inline" on the engine's thread (the simulation: its virtual time does not follow
   * work on another thread).
   */
  readonly snapshotDeflate: "thread-pool" | "inline";
  /**
   * How often the maintenance driver checks snapshot cadence (and prunes), and how often
   * a follower's "prune" driver prunes its local history. Default 5 s.
   */
  readonly maintenanceIntervalMs: number;
  /** GC cadence. Default 60 s: deletes are free, the manifest CAS and a LIST of snap/ are not (~$0.015/day). */
  readonly gcIntervalMs: number;
  /** Every this many GC runs, LIST the log for strays. Default 60 (hourly at the default cadence). */
  readonly gcSweepEveryRuns: number;
  /** A consumer watermark older than this stops holding GC back. Default 24 h. */
  readonly consumerTtlMs: number;
  /**
   * How far back every past state stays restorable (DESIGN.md §10a, gc/retentionPlan): GC
   * keeps the snapshot at or before now − retentionMs and the log after it. Default 0
   * here (only the current snapshot is kept); a node takes its deployment's setting from
   * globals (`retentionMs`, 7 days for a new deployment).
   */
  readonly retentionMs: number;
  /**
   * Snapshots kept within the retention window are at least this far apart. Default 24 h:
   * at a 7-day window at most ~8 full copies, and a restore replays at most a day of log.
   */
  readonly retainedSnapshotSpacingMs: number;
  /**
   * Close an idle shard's frontier with empty tick segments, so that it does not hold back
   * a multi-shard read frontier (DESIGN.md §5): within frontierTickMs of a commit on
   * another shard that this node made or applied (newestCommitTs above this shard's
   * frontier), while someone reads that frontier (frontierWanted). No ticks while every
   * shard is idle.
   * Default off (one shard; ShardedStore turns it on for several).
   */
  readonly tickWhenIdle: boolean;
  /**
   * How soon an idle shard ticks after another shard's commit. Default 250 ms: while
   * other shards commit continuously, an idle one costs at most 14,400 tick PUTs (and as
   * many verifying GETs) an hour, ~$0.08 at S3 Standard prices; none while all are idle.
   */
  readonly frontierTickMs: number;
  /** Committed units remembered for optimistic-concurrency checks. Default 100,000. */
  readonly recentWritesUnitsMax: number;
  /**
   * … holding at most this many written keys. Default 100,000 (~25 MiB): at 6,000
   * mutations/s of 4 keys each that is ~4 s of history, at a bulk insert's 50,000 keys/s
   * ~2 s; a transaction whose snapshot is older than what is kept re-runs.
   */
  readonly recentWritesKeysMax: number;
  /** … and for at most this long; an older read snapshot re-runs. Default 60 s. */
  readonly recentWritesWindowMs: number;
  /**
   * Local history kept for reads at past timestamps; older revisions a current read
   * cannot see are pruned (by the maintenance driver; on a follower, the prune driver). Default 1 h: a read, page or
   * transaction that started within the hour still sees its snapshot; a document updated
   * once a second keeps ~3,600 old revisions (~0.4 MB at 100 bytes each).
   */
  readonly historyRetentionMs: number;
  /**
   * How long a mutation's receipt answers a re-sent mutation. Default 24 h: a client
   * offline for longer that re-sends a mutation has it applied again. Each receipt is a
   * local row of ~100 bytes: 10 mutations/s keep ~86 MB of receipts.
   */
  readonly receiptRetentionMs: number;
  /**
   * How long a client's floor (the receipt holding the highest seq it acknowledged,
   * DESIGN.md §8) outlives its other receipts, so that a seq it acknowledged is refused
   * rather than applied again. Default 7 days: one row (~100 bytes plus the last result)
   * per client active in that window; a client silent for longer that re-sends a seq it
   * had acknowledged has it applied again. Below receiptRetentionMs it is that instead.
   */
  readonly receiptFloorRetentionMs: number;
}

/**
 * The log protocol's bound on pipelining: no writer ever has a segment in flight more
 * than this many slots past the last one it acknowledged. So a fenced writer's late
 * creates land at most PIPELINE_DEPTH_MAX - 1 slots past its successor's fence, and a
 * writer builds the segments up to there one at a time (a leftover in a slot moves only a
 * lone segment: one built after it would chain to bytes that are never in the log).
 * Raising it is a protocol change: every writer of a bucket must agree on it.
 */
export const PIPELINE_DEPTH_MAX = 8;

export const SHARD_ENGINE_DEFAULTS: ShardEngineTuning = {
  leaseTtlMs: 10_000,
  heartbeatIntervalMs: 3_000,
  heartbeatDeadlineMs: 3_000,
  heartbeatMissesMax: 3,
  idleAfterMs: 60_000,
  idleLeaseTtlMs: 60_000,
  idleHeartbeatIntervalMs: 20_000,
  verify: "always",
  clockSkewMsMax: 1_000,
  pipelineDepth: 4,
  flushUnitsMax: 4_096,
  flushBytesMax: 8 * 1024 * 1024,
  unitBytesMax: 16 * 1024 * 1024,
  fetchConcurrency: 32,
  snapshotFetchConcurrency: SNAPSHOT_FETCH_CONCURRENCY,
  restoreLagSegments: 2_000,
  snapshotEverySegments: 1_000,
  snapshotEveryBytes: 64 * 1024 * 1024,
  snapshotEveryMs: 10 * 60 * 1000,
  snapshotDeflate: "thread-pool",
  maintenanceIntervalMs: 5_000,
  gcIntervalMs: 60_000,
  gcSweepEveryRuns: 60,
  consumerTtlMs: CONSUMER_TTL_MS_DEFAULT,
  retentionMs: 0,
  retainedSnapshotSpacingMs: RETAINED_SNAPSHOT_SPACING_MS_DEFAULT,
  tickWhenIdle: false,
  frontierTickMs: 250,
  recentWritesUnitsMax: 100_000,
  recentWritesKeysMax: 100_000,
  recentWritesWindowMs: 60_000,
  historyRetentionMs: 60 * 60 * 1000,
  receiptRetentionMs: 24 * 60 * 60 * 1000,
  receiptFloorRetentionMs: 7 * 24 * 60 * 60 * 1000,
};

const DAY_MS = 24 * 60 * 60 * 1000;
/** Longest duration option: ~31 years, so `now + duration` stays an exact integer. */
const DURATION_MS_MAX = 1e12;
const positive = (max = Number.MAX_SAFE_INTEGER) => z.number().int().min(1).max(max);
const nonNegative = (max = Number.MAX_SAFE_INTEGER) => z.number().int().min(0).max(max);

/** Every tuning option, typed and bounded; unknown names are refused (a typo must not pass silently). */
const tuningSchema = z
  .strictObject({
    leaseTtlMs: positive(DURATION_MS_MAX),
    heartbeatIntervalMs: positive(DURATION_MS_MAX),
    heartbeatDeadlineMs: positive(DURATION_MS_MAX),
    heartbeatMissesMax: positive(HEARTBEAT_MISSES_MAX),
    idleAfterMs: positive(DURATION_MS_MAX),
    idleLeaseTtlMs: positive(DURATION_MS_MAX),
    idleHeartbeatIntervalMs: positive(DURATION_MS_MAX),
    verify: z.enum(["always", "lease"]),
    clockSkewMsMax: nonNegative(DURATION_MS_MAX),
    pipelineDepth: positive(PIPELINE_DEPTH_MAX),
    flushUnitsMax: positive(1_000_000),
    flushBytesMax: positive(1024 * 1024 * 1024),
    unitBytesMax: positive(1024 * 1024 * 1024),
    fetchConcurrency: positive(1_024),
    snapshotFetchConcurrency: positive(64),
    restoreLagSegments: positive(),
    snapshotEverySegments: positive(),
    snapshotEveryBytes: positive(),
    snapshotEveryMs: positive(DURATION_MS_MAX),
    snapshotDeflate: z.enum(["thread-pool", "inline"]),
    maintenanceIntervalMs: positive(DURATION_MS_MAX),
    gcIntervalMs: positive(),
    gcSweepEveryRuns: positive(),
    consumerTtlMs: positive(DURATION_MS_MAX),
    retentionMs: nonNegative(DURATION_MS_MAX),
    retainedSnapshotSpacingMs: positive(DURATION_MS_MAX),
    tickWhenIdle: z.boolean(),
    frontierTickMs: positive(DURATION_MS_MAX),
    recentWritesUnitsMax: positive(100_000_000),
    recentWritesKeysMax: positive(1_000_000_000),
    recentWritesWindowMs: positive(DAY_MS),
    historyRetentionMs: nonNegative(DURATION_MS_MAX),
    receiptRetentionMs: nonNegative(DURATION_MS_MAX),
    receiptFloorRetentionMs: nonNegative(DURATION_MS_MAX),
  })
  .refine((tuning) => tuning.heartbeatIntervalMs < tuning.leaseTtlMs, {
    message: "heartbeatIntervalMs must be below leaseTtlMs, or the lease lapses between heartbeats",
    path: ["heartbeatIntervalMs"],
  })
  .refine((tuning) => tuning.heartbeatDeadlineMs < tuning.leaseTtlMs, {
    message: "heartbeatDeadlineMs must be below leaseTtlMs, or a heartbeat could still count as answered after the lease it renews lapsed",
    path: ["heartbeatDeadlineMs"],
  })
  .refine((tuning) => tuning.clockSkewMsMax < tuning.leaseTtlMs, {
    message: "clockSkewMsMax must be below leaseTtlMs",
    path: ["clockSkewMsMax"],
  })
  .refine((tuning) => tuning.idleLeaseTtlMs >= tuning.leaseTtlMs, {
    message: "idleLeaseTtlMs must be at least leaseTtlMs (an idle shard's lease stretches, never shrinks)",
    path: ["idleLeaseTtlMs"],
  })
  .refine((tuning) => tuning.idleHeartbeatIntervalMs >= tuning.heartbeatIntervalMs && tuning.idleHeartbeatIntervalMs < tuning.idleLeaseTtlMs, {
    message: "idleHeartbeatIntervalMs must be at least heartbeatIntervalMs and below idleLeaseTtlMs, or the idle lease lapses between heartbeats",
    path: ["idleHeartbeatIntervalMs"],
  });

/** The defaults with `overrides` applied, validated; INVALID_ARGUMENT naming every bad option. */
export function resolveTuning(overrides: unknown = {}): ShardEngineTuning {
  if (typeof overrides !== "object" || overrides === null || Array.isArray(overrides)) {
    throw new CairnError("INVALID_ARGUMENT", "engine tuning must be an object of options");
  }
  const merged: Record<string, unknown> = { ...SHARD_ENGINE_DEFAULTS, ...overrides };
  // The deadline follows the cadence unless set: a heartbeat is due again by then anyway.
  if ((overrides as { heartbeatDeadlineMs?: unknown }).heartbeatDeadlineMs === undefined) merged.heartbeatDeadlineMs = merged.heartbeatIntervalMs;
  // An idle shard's lease and cadence stretch the busy ones, never shorten them: a longer
  // busy lease (set for a slow bucket, say) raises the idle defaults with it.
  const given = overrides as { idleLeaseTtlMs?: unknown; idleHeartbeatIntervalMs?: unknown };
  if (given.idleLeaseTtlMs === undefined && typeof merged.leaseTtlMs === "number") merged.idleLeaseTtlMs = Math.max(SHARD_ENGINE_DEFAULTS.idleLeaseTtlMs, merged.leaseTtlMs);
  // The idle cadence: three renewals per idle lease at most 20 s apart, never faster than the busy one.
  if (given.idleHeartbeatIntervalMs === undefined && typeof merged.heartbeatIntervalMs === "number" && typeof merged.idleLeaseTtlMs === "number") {
    merged.idleHeartbeatIntervalMs = Math.max(merged.heartbeatIntervalMs, Math.min(SHARD_ENGINE_DEFAULTS.idleHeartbeatIntervalMs, Math.floor(merged.idleLeaseTtlMs / 3)));
  }
  const parsed = tuningSchema.safeParse(merged);
  if (!parsed.success) {
    throw new CairnError("INVALID_ARGUMENT", `invalid engine tuning: ${z.prettifyError(parsed.error)}`, {
      details: { issues: parsed.error.issues.map((issue) => ({ path: issue.path.join("."), message: issue.message })) },
    });
  }
  return parsed.data;
}

/** Checks the identity options of an engine (the tuning is checked by resolveTuning). */
export function validateEngineIdentity(options: ShardEngineOptions): void {
  const problems: string[] = [];
  if (!Number.isSafeInteger(options.shard) || options.shard < 0) problems.push(`shard must be a non-negative integer, not ${String(options.shard)}`);
  if (typeof options.deploymentId !== "string" || !/^[0-9a-f]{32}$/.test(options.deploymentId)) {
    problems.push(`deploymentId must be 32 lowercase hex digits, not ${JSON.stringify(options.deploymentId)}`);
  }
  if (typeof options.nodeId !== "string" || !NODE_ID_PATTERN.test(options.nodeId)) {
    problems.push(`nodeId must match ${NODE_ID_PATTERN}, not ${JSON.stringify(options.nodeId)}`);
  }
  const url = options.nodeUrl;
  if (url !== undefined && url !== null && typeof url !== "function" && !(typeof url === "string" && /^https?:\/\//.test(url) && URL.canParse(url))) {
    problems.push(`nodeUrl must be an http(s) URL, a function giving one, or null, not ${JSON.stringify(url)}`);
  }
  if (options.onEvent !== undefined && typeof options.onEvent !== "function") problems.push("onEvent must be a function");
  if (options.stepDownOnFailedRenewals !== undefined && typeof options.stepDownOnFailedRenewals !== "boolean") problems.push("stepDownOnFailedRenewals must be a boolean");
  const drivers = options.drivers;
  if (drivers !== undefined && !(Array.isArray(drivers) && drivers.every((driver) => (ENGINE_DRIVERS as readonly unknown[]).includes(driver)))) {
    problems.push(`drivers must be a list of ${ENGINE_DRIVERS.join(", ")}`);
  }
  if (problems.length > 0) throw new CairnError("INVALID_ARGUMENT", `invalid shard engine options: ${problems.join("; ")}`);
}
