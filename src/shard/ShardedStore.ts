import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { systemClock, type Clock, CairnError, hasErrorCode, systemRandom, type Random } from "../base/index.js";
import { LocalStore, OverlayBudget, SCHEMA_VERSION, type LocalStoreOptions } from "../local/index.js";
import { globalsObject, openGlobals, generationStore, claimLayoutForWriting, holdsOf, readBranchRegistry } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import type { ShardEngineTuning } from "./engineOptions.js";
import { HybridClock } from "./HybridClock.js";
import { ShardEngine, type EngineEvent } from "./ShardEngine.js";

/**
 * A node's view of a whole deployment: the globals, and one engine plus one local SQLite
 * file per shard, all sharing the node's hybrid clock so that timestamps are comparable
 * across shards.
 */
export interface ShardedStoreOptions {
  readonly store: ObjectStore;
  /** Directory of the local SQLite files (one per shard), or ":memory:" for tests. */
  readonly localDirectory: string;
  readonly nodeId: string;
  readonly nodeUrl?: string | null | (() => string | null);
  /** Shard count for a new deployment; an existing deployment must match if given. */
  readonly numShards?: number;
  readonly clock?: Clock;
  readonly random?: Random;
  readonly tuning?: Partial<ShardEngineTuning>;
  readonly onEvent?: (event: EngineEvent) => void;
  /**
   * What every shard's local copy may hold unfolded, together (default: a budget of
   * LOCAL_OVERLAY_ROWS_MAX rows and LOCAL_OVERLAY_BYTES_MAX bytes for the whole node).
   */
  readonly overlayBudget?: OverlayBudget;
  /** Retention of a new deployment (default 7 days); an existing deployment keeps its own. */
  readonly retentionMs?: number;
  /** Refuse a bucket without a deployment instead of creating one (replicas never create). */
  readonly mustExist?: boolean;
  /** See ShardEngineOptions.catchUpOnOpen (default true). */
  readonly catchUpOnOpen?: boolean;
  /** See ShardEngineOptions.frontierWanted (default: always). */
  readonly frontierWanted?: () => boolean;
}

export class ShardedStore {
  private constructor(
    readonly deploymentId: string,
    /** The layout generation the shards were opened in (manifest/layoutGeneration). */
    readonly generation: number,
    /** The store the shards of that generation live in. */
    readonly shardStore: ObjectStore,
    readonly engines: readonly ShardEngine[],
    private readonly locals: readonly LocalStore[],
    readonly hybridClock: HybridClock,
  ) {}

  static async open(options: ShardedStoreOptions): Promise<ShardedStore> {
    const clock = options.clock ?? systemClock;
    const random = options.random ?? systemRandom;
    const globals = await openGlobals(options.store, {
      clock,
      random,
      ...(options.numShards !== undefined ? { numShards: options.numShards } : {}),
      ...(options.mustExist ? { mustExist: true } : {}),
      ...(options.retentionMs !== undefined ? { retentionMs: options.retentionMs } : {}),
    });
    const { deploymentId, numShards, generation } = globals.value;
    const shardStore = generationStore(options.store, generation);
    const hybridClock = new HybridClock(clock);
    const locals: LocalStore[] = [];
    const engines: ShardEngine[] = [];
    const overlayBudget = options.overlayBudget ?? new OverlayBudget();
    try {
      for (let shard = 0; shard < numShards; shard++) {
        const path = localPath(options.localDirectory, deploymentId, generation, shard);
        const local = openLocalCopy({ path, shard, deploymentId, clock, overlayBudget }, options.onEvent);
        locals.push(local);
        engines.push(
          await ShardEngine.open({
            store: shardStore,
            deploymentId,
            shard,
            local,
            nodeId: options.nodeId,
            nodeUrl: options.nodeUrl ?? null,
            clock,
            random,
            hybridClock,
            // Idle shards tick so that a cross-shard read frontier keeps moving.
            // The deployment's retention, unless the caller tunes it.
            tuning: { tickWhenIdle: numShards > 1, retentionMs: globals.value.retentionMs, ...options.tuning },
            newestCommitTs: () => engines.reduce((newest, engine) => Math.max(newest, engine.lastDataTs), 0),
            ...(options.frontierWanted ? { frontierWanted: options.frontierWanted } : {}),
            // No writer of a layout a reshard is reading or has replaced.
            beforeAcquire: () => claimLayoutForWriting(options.store, random, () => clock.nowMs(), generation),
            branchHolds: async () => holdsOf((await readBranchRegistry(options.store, random)).registrations.map((read) => read.value), generation, shard, clock.nowMs()),
            ...(options.onEvent ? { onEvent: options.onEvent } : {}),
            ...(options.catchUpOnOpen === false ? { catchUpOnOpen: false } : {}),
          }),
        );
      }
      // A data segment applied on one shard closes the others' frontiers at once (leading
      // edge; the frontier driver covers the rest): cross-shard reads see it in one round trip.
      for (const engine of engines) {
        engine.onSegmentApplied((segment) => {
          if (segment.header.kind !== "data") return;
          for (const other of engines) if (other !== engine) other.frontierTickSoon();
        });
      }
      await checkStillCurrent(options.store, random, generation);
    } catch (error) {
      await Promise.allSettled(engines.map((engine) => engine.close()));
      for (const local of locals) local.close();
      throw error;
    }
    return new ShardedStore(deploymentId, generation, shardStore, engines, locals, hybridClock);
  }

  get numShards(): number {
    return this.engines.length;
  }

  /** The engine of `shard`; INVALID_ARGUMENT for a shard the deployment does not have. */
  engine(shard: number): ShardEngine {
    const engine = Number.isSafeInteger(shard) ? this.engines[shard] : undefined;
    if (engine === undefined) {
      throw new CairnError("INVALID_ARGUMENT", `no shard ${String(shard)} in a deployment of ${this.engines.length} shard(s) (0..${this.engines.length - 1})`, {
        details: { shard, numShards: this.engines.length },
      });
    }
    return engine;
  }

  /** The local copy of `shard` (reads); INVALID_ARGUMENT for a shard the deployment does not have. */
  local(shard: number): LocalStore {
    this.engine(shard);
    return this.locals[shard]!;
  }

  /** Becomes the writer of every shard. */
  async acquireAll(): Promise<void> {
    for (const engine of this.engines) await engine.acquire();
  }

  /**
   * One timestamp at which every shard's local copy is complete (DESIGN.md §5): with one
   * shard its last applied ts, with several the minimum of their closed frontiers.
   */
  get readTs(): number {
    if (this.engines.length === 1) return this.engines[0]!.readTs;
    let min = Number.POSITIVE_INFINITY;
    for (const engine of this.engines) min = Math.min(min, engine.closedTs);
    return min;
  }

  /**
   * Relinquishes every lease this node holds and closes the local files, folding what
   * they hold in memory first so that a restart resumes without re-reading the log.
   */
  async close(): Promise<void> {
    try {
      await Promise.all(this.engines.map((engine) => engine.close()));
      await Promise.all(this.locals.map((local) => local.flush()));
    } finally {
      for (const local of this.locals) local.close();
    }
  }
}

/**
 * Opens a shard's local copy. The copy is a cache of the bucket: one written by an older
 * build in an older layout is deleted and rebuilt from the bucket (reported as an
 * event), while one of a newer build is refused, so that a rollback never destroys it.
 */
function openLocalCopy(options: LocalStoreOptions, onEvent: ShardedStoreOptions["onEvent"]): LocalStore {
  const { path, shard } = options;
  try {
    return LocalStore.open(options);
  } catch (error) {
    const stored = hasErrorCode(error, "LOCAL_SCHEMA_UNSUPPORTED") ? (error as CairnError).details.storedSchemaVersion : undefined;
    if (typeof stored !== "number" || stored >= SCHEMA_VERSION) throw error;
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
    onEvent?.({ type: "local-rebuilt", shard, reason: `its local copy had schema version ${stored}; this build uses ${SCHEMA_VERSION}` });
    return LocalStore.open(options);
  }
}

/**
 * A reshard that switched `globals` while this node opened its shards (after it read
 * them) would leave it serving the old layout: opening an old shard whose manifest the
 * reshard already deleted even creates an empty one. One more read of `globals` after
 * opening catches that; the node fails to start with a clear error instead.
 */
async function checkStillCurrent(store: ObjectStore, random: Random, generation: number): Promise<void> {
  const current = await globalsObject(store, random).read();
  if (current !== null && current.value.generation === generation) return;
  throw new CairnError(
    "DEPLOYMENT_RESHARDED",
    `the deployment at ${store.description} was resharded while this node opened it; start it again to serve the new layout`,
    { details: { openedGeneration: generation, currentGeneration: current?.value.generation ?? null } },
  );
}

function localPath(directory: string, deploymentId: string, generation: number, shard: number): string {
  if (directory === ":memory:") return ":memory:";
  // Each generation has its own files: a reshard's shard 0 is not the old shard 0.
  const deploymentDirectory = generation === 0 ? join(directory, deploymentId) : join(directory, deploymentId, `g${generation}`);
  mkdirSync(deploymentDirectory, { recursive: true });
  return join(deploymentDirectory, `shard-${shard}.sqlite`);
}
