import { CairnError, SHARDS_MAX, randomHex, systemClock, systemRandom, type Clock, type Random } from "../base/index.js";
import { HeldReshardLock, generationKeyPrefixes, generationStore, globalsObject, isReshardLockHeld, reshardInProgress, type Globals } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { deletePrefixes, deleteRetired, keepRenewed, refuseLiveLeases } from "./layoutSwitchSteps.js";
import { readLogEnds } from "./logEnds.js";
import { generationHolding } from "./generationHolding.js";
import { checkMoment, withStateAt, workDirectoryOf, type StateAtProgress } from "./stateAt.js";
import { RESHARD_LOCK_TTL_MS_DEFAULT } from "./reshardObjectStore.js";
import { writeFirstSnapshot } from "./restoreObjectStore.js";

/**
 * `cairn restore --in-place`: makes the deployment's state at a past ts its current state
 * (DESIGN.md §10a), as a new layout generation — the reshard machinery:
 *
 * 1. Check: the ts is restorable (in the current layout's history, or in a layout an
 *    earlier in-place restore replaced and still keeps), no writer's lease is live, no
 *    reshard runs; `beforeLock` (the CLI refuses while nodes are registered live).
 * 2. Take the reshard lock (no writer may acquire the current layout meanwhile) and
 *    write, per shard, the state at the ts as the first snapshot of a fresh log in the
 *    lock's generation. The snapshots close at the newest ts the current layout ever
 *    stamped, so new writers continue above everything that happened before.
 * 3. Switch globals to it in one CAS. The previous layout is retired but **kept** until
 *    the deployment's retention ends (`keepUntil`, with the newest ts it holds), so the
 *    restore itself can be undone: a later restore at a ts before the switch reads it.
 *    (Retention 0 deletes it at once, as a reshard does.)
 *
 * Interrupted before the switch, the deployment is untouched (the next run deletes the
 * half-written generation); after it, only the cleanup of expired generations is left.
 * A commit acknowledged after `atTs` is discarded by design; it stays readable in the
 * kept layout until its retention ends.
 */
export interface RestoreInPlaceOptions {
  readonly store: ObjectStore;
  /** Hybrid-logical µs: the state of every commit stamped at or before it. */
  readonly atTs: number;
  readonly onProgress?: (progress: RestoreInPlaceProgress) => void;
  readonly workDirectory?: string;
  readonly lockTtlMs?: number;
  readonly settledAfterMs?: number;
  readonly beforeLock?: (from: Globals) => Promise<void>;
  readonly clock?: Clock;
  readonly random?: Random;
}

export type RestoreInPlaceProgress =
  | { readonly phase: "lock"; readonly generation: number }
  | (StateAtProgress & { readonly shards: number })
  | { readonly phase: "written"; readonly shard: number; readonly shards: number; readonly documents: number }
  | { readonly phase: "switch"; readonly generation: number }
  | { readonly phase: "cleanup"; readonly generation: number; readonly objectsDeleted: number };

export interface RestoreInPlaceReport {
  readonly deploymentId: string;
  readonly atTs: number;
  /** The layout the state was read from (the current one, or one an earlier restore replaced). */
  readonly fromGeneration: number;
  /** The deployment's layout now. */
  readonly generation: number;
  readonly numShards: number;
  readonly documents: number;
  /** Until when the replaced layout is kept (ms since the epoch), or null (retention 0: deleted). */
  readonly keptUntil: number | null;
  readonly objectsDeleted: number;
  /** Why deleting expired layouts stopped after the switch (null: it did not). The restore stands. */
  readonly cleanupError: string | null;
}

export async function restoreInPlace(options: RestoreInPlaceOptions): Promise<RestoreInPlaceReport> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const { store, atTs } = options;
  const onProgress = options.onProgress ?? (() => undefined);
  const lockTtlMs = options.lockTtlMs ?? RESHARD_LOCK_TTL_MS_DEFAULT;
  const globals = (await globalsObject(store, random).read())?.value ?? null;
  if (globals === null) throw new CairnError("DEPLOYMENT_MISMATCH", `no Cairn deployment at ${store.description} (globals missing): nothing to restore`);
  checkMoment(atTs, globals, clock.nowMs());
  if (isReshardLockHeld(globals, clock.nowMs())) throw reshardInProgress(globals.reshard!);
  const source = await generationHolding(store, globals, atTs, random, clock.nowMs());
  await refuseLiveLeases(generationStore(store, globals.generation), globals, clock.nowMs(), random, "restoring it in place");
  await options.beforeLock?.(globals);
  const ends = await readLogEnds(generationStore(store, globals.generation), globals.deploymentId, globals.numShards, random);
  // The newest ts the current layout ever stamped: the new one starts above it, so reads
  // and OCC stay meaningful, new writers continue above it, and every ts names one layout.
  const closedAtTs = Math.max(atTs, ...ends.map((end) => end.lastTs));

  const lock = await HeldReshardLock.take(store, random, { owner: `restore-${randomHex(random, 6)}`, nowMs: clock.nowMs(), ttlMs: lockTtlMs, toShards: source.numShards });
  onProgress({ phase: "lock", generation: lock.generation });
  const renewal = keepRenewed(lock, clock, lockTtlMs);
  let objectsDeleted = 0;
  const deleteGeneration = async (generation: number, numShards: number) => {
    objectsDeleted += await deletePrefixes(store, generationKeyPrefixes(generation, numShards), (deleted) => onProgress({ phase: "cleanup", generation, objectsDeleted: deleted }));
  };
  const workDirectory = workDirectoryOf(options.workDirectory, "cairn-restore-");
  const keep = globals.retentionMs > 0 ? { keepUntil: clock.nowMs() + globals.retentionMs, closedAtTs } : undefined;
  let switched: Globals;
  let documents = 0;
  try {
    for (const generation of lock.abandonedGenerations) await deleteGeneration(generation, SHARDS_MAX);
    const from = generationStore(store, source.generation);
    const into = generationStore(store, lock.generation);
    for (let shard = 0; shard < source.numShards; shard++) {
      renewal.check();
      const materialize = {
        store: from,
        deploymentId: globals.deploymentId,
        shard,
        atTs,
        random,
        clock,
        settledAfterMs: options.settledAfterMs,
        workDirectory: workDirectory.path,
        onProgress: (step: StateAtProgress) => onProgress({ ...step, shards: source.numShards }),
      };
      const written = await withStateAt(materialize, (state) =>
        writeFirstSnapshot(into, { deploymentId: globals.deploymentId, shard, frontierTs: closedAtTs + 1, chainSeed: `restore generation ${lock.generation}` }, state, random, () => undefined),
      );
      documents += written;
      onProgress({ phase: "written", shard, shards: source.numShards, documents: written });
    }
    await renewal.stop();
    renewal.check();
    switched = await lock.switchLayout(keep);
  } catch (error) {
    await renewal.stop();
    await deleteGeneration(lock.generation, source.numShards).catch(() => undefined);
    await lock.release().catch(() => undefined);
    throw error;
  } finally {
    workDirectory.remove();
  }
  // Done and durable from here: nothing below may report the restore as failed.
  try {
    onProgress({ phase: "switch", generation: switched.generation });
  } catch {
    // A progress callback's trouble does not undo the switch.
  }
  let cleanupError: string | null = null;
  try {
    await deleteRetired(store, random, switched, clock.nowMs(), deleteGeneration);
  } catch (error) {
    cleanupError = error instanceof Error ? error.message : String(error);
  }
  return {
    deploymentId: globals.deploymentId,
    atTs,
    fromGeneration: source.generation,
    generation: switched.generation,
    numShards: source.numShards,
    documents,
    keptUntil: keep?.keepUntil ?? null,
    objectsDeleted,
    cleanupError,
  };
}

