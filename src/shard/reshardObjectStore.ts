import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock, type Clock, CairnError, SHARDS_MAX, randomHex, systemRandom, type Random } from "../base/index.js";
import { LocalStore, type DumpCursor, type LocalMeta } from "../local/index.js";
import type { ClientReceipt, DocumentRevision, IndexUpdate } from "../model/index.js";
import {
  CasObject,
  globalsObject,
  type Globals,
  generationKeyPrefixes,
  generationStore,
  manifestCodec,
  firstManifestFields,
  type Manifest,
  HeldReshardLock,
  isReshardLockHeld,
  reshardInProgress,
  bucketLayout,
  schemaCatalogObject,
} from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { writeSnapshot } from "../snapshots/index.js";
import type { ShardEngineTuning } from "./engineOptions.js";
import { HybridClock } from "./HybridClock.js";
import { LaneRouter } from "./LaneRouter.js";
import { ReroutedDump } from "./ReroutedDump.js";
import { deletePrefixes, deleteRetired, keepRenewed, refuseLiveLeases } from "./layoutSwitchSteps.js";
import { ShardEngine } from "./ShardEngine.js";

/**
 * Moves a stopped deployment to another shard count (DESIGN.md §10).
 *
 * Steps, each safe to interrupt:
 * 1. Check: `toShards` is valid, a deployment exists, no writer's lease is live (else
 *    LEASE_HELD, nothing written).
 * 2. Take the reshard lock in globals (ReshardLock: one reshard at a time, no writer of
 *    the old layout meanwhile) and delete what earlier unfinished attempts left.
 * 3. Read: become the writer of every old shard (a fence, so that no zombie writer's late
 *    segment can count after our read) and materialize it in a temporary SQLite file:
 *    its snapshot restored and its log replayed, as any writer does.
 * 4. Write: for each new shard, stream the rows of every old shard that route to it
 *    (LaneRouter, checking each document against its shard key) into a snapshot of a
 *    fresh log in the new layout generation, and create its manifest. Every row keeps its
 *    ts, and every new shard's snapshot closes at the highest ts of the old layout, so
 *    history reads and OCC stay meaningful and new writers continue above it.
 * 5. Switch: one CAS on globals names the new generation and shard count. Until then the
 *    old layout is the deployment, untouched but for the fence segments; after it the new
 *    one is.
 * 6. Delete the old generation (and anything earlier runs left retired).
 *
 * Memory is bounded: rows stream from SQLite through bounded chunks into snapshot parts.
 * A run killed anywhere is re-run: before the switch the old layout serves, and the next
 * run deletes the half-written generation; after it only the deletion is left, and the
 * next run (or a no-op run) finishes it.
 */
export interface ReshardOptions {
  readonly store: ObjectStore;
  readonly toShards: number;
  readonly onProgress?: (progress: ReshardProgress) => void;
  /** Where the temporary SQLite files go (default: a fresh directory under the OS temp dir). */
  readonly workDirectory?: string;
  /** How long the lock lasts without renewal (default 30 s); renewed every third of it. */
  readonly lockTtlMs?: number;
  /** Tuning of the engines that hold the old shards (lease TTL, heartbeat). */
  readonly tuning?: Partial<ShardEngineTuning>;
  readonly clock?: Clock;
  readonly random?: Random;
  /**
   * Runs after the checks and before the lock is taken (nothing written yet); throwing
   * refuses the reshard. `cairn reshard` refuses here while followers are registered live
   * (NODES_LIVE): the layout they serve would be retired under them.
   */
  readonly beforeLock?: (from: Globals) => Promise<void>;
}

export type ReshardProgress =
  | { readonly phase: "lock"; readonly generation: number }
  | { readonly phase: "read"; readonly shard: number; readonly shards: number; readonly documents: number }
  | { readonly phase: "write"; readonly shard: number; readonly shards: number; readonly documents: number; readonly totalDocuments: number }
  /** A new shard's snapshot and manifest are written. */
  | { readonly phase: "written"; readonly shard: number; readonly shards: number; readonly documents: number; readonly totalDocuments: number }
  | { readonly phase: "switch"; readonly generation: number; readonly numShards: number }
  | { readonly phase: "cleanup"; readonly generation: number; readonly objectsDeleted: number };

export interface ReshardReport {
  /** False when the deployment already had `toShards` shards (nothing but leftover cleanup ran). */
  readonly changed: boolean;
  readonly fromShards: number;
  readonly toShards: number;
  readonly generation: number;
  readonly documents: number;
  /** Per new shard: documents, index entries and receipts written. */
  readonly lanes: readonly { readonly documents: number; readonly indexEntries: number; readonly receipts: number }[];
  /** The ts the new shards' snapshots close at (the old layout's highest). */
  readonly frontierTs: number;
  readonly objectsDeleted: number;
  /**
   * Why deleting the old layout stopped, after a successful switch (null: it did not).
   * The reshard stands; the next run, even a no-op one, finishes the deletion.
   */
  readonly cleanupError: string | null;
}

export const RESHARD_LOCK_TTL_MS_DEFAULT = 30_000;
/** The old shards' leases while a reshard holds them (at most the lock's TTL). */
const ENGINE_LEASE_TTL_MS_MAX = 10_000;

export async function reshardObjectStore(options: ReshardOptions): Promise<ReshardReport> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const { store, toShards } = options;
  const onProgress = options.onProgress ?? (() => undefined);
  if (!Number.isInteger(toShards) || toShards < 1 || toShards > SHARDS_MAX) {
    throw new CairnError("INVALID_ARGUMENT", `toShards must be an integer in 1..${SHARDS_MAX}, not ${String(toShards)}`, { details: { toShards } });
  }
  const lockTtlMs = options.lockTtlMs ?? RESHARD_LOCK_TTL_MS_DEFAULT;
  // The engines' leases last as long, and must outlast the engines' clock-skew margin (1 s).
  if (!Number.isSafeInteger(lockTtlMs) || lockTtlMs < 2_000) {
    throw new CairnError("INVALID_ARGUMENT", `lockTtlMs must be an integer of at least 2000, not ${String(lockTtlMs)}`);
  }

  const globals = await globalsObject(store, random).read();
  if (globals === null) throw new CairnError("DEPLOYMENT_MISMATCH", `no Cairn deployment at ${store.description} (globals missing): nothing to reshard`);
  const from = globals.value;
  // Taking the lock would refuse too; say so before reading every manifest.
  if (isReshardLockHeld(from, clock.nowMs())) throw reshardInProgress(from.reshard!);
  const unchanged = from.numShards === toShards;
  if (unchanged && from.retired.length === 0 && from.highestGeneration <= from.generation) {
    return { changed: false, fromShards: from.numShards, toShards, generation: from.generation, documents: 0, lanes: [], frontierTs: 0, objectsDeleted: 0, cleanupError: null };
  }
  const oldStore = generationStore(store, from.generation);
  if (!unchanged) await refuseLiveLeases(oldStore, from, clock.nowMs(), random);
  if (!unchanged) await options.beforeLock?.(from);

  const owner = `reshard-${randomHex(random, 6)}`;
  const lock = await HeldReshardLock.take(store, random, { owner, nowMs: clock.nowMs(), ttlMs: lockTtlMs, toShards: unchanged ? from.numShards : toShards });
  onProgress({ phase: "lock", generation: lock.generation });
  const renewal = keepRenewed(lock, clock, lockTtlMs);
  let objectsDeleted = 0;
  const deleteGeneration = async (generation: number, numShards: number) => {
    objectsDeleted += await deletePrefixes(store, generationKeyPrefixes(generation, numShards), (deleted) =>
      onProgress({ phase: "cleanup", generation, objectsDeleted: deleted }),
    );
  };
  try {
    // Half-written generations of attempts that never switched. (Generation 0 is never
    // one of them: it is where every deployment starts.)
    for (const generation of lock.abandonedGenerations) await deleteGeneration(generation, SHARDS_MAX);
    if (unchanged) {
      await renewal.stop();
      await lock.release();
      await deleteRetired(store, random, from, clock.nowMs(), deleteGeneration);
      return { changed: false, fromShards: from.numShards, toShards, generation: from.generation, documents: 0, lanes: [], frontierTs: 0, objectsDeleted, cleanupError: null };
    }
  } catch (error) {
    await renewal.stop();
    await lock.release().catch(() => undefined);
    throw error;
  }

  const workDirectory = options.workDirectory ?? mkdtempSync(join(tmpdir(), "cairn-reshard-"));
  if (options.workDirectory !== undefined) mkdirSync(workDirectory, { recursive: true });
  const newStore = generationStore(store, lock.generation);
  const hybridClock = new HybridClock(clock);
  const engineLeaseTtlMs = Math.min(ENGINE_LEASE_TTL_MS_MAX, lockTtlMs);
  const olds: { engine: ShardEngine; local: LocalStore }[] = [];
  let switched: Globals;
  let report: Omit<ReshardReport, "objectsDeleted" | "cleanupError">;
  try {
    const catalog = (await schemaCatalogObject(store, random).read())?.value ?? null;
    // Read: every old shard fenced and materialized.
    for (let shard = 0; shard < from.numShards; shard++) {
      renewal.check();
      const local = LocalStore.open({ path: join(workDirectory, `old-${from.generation}-${shard}.sqlite`), shard, deploymentId: from.deploymentId, clock });
      let engine: ShardEngine;
      try {
        engine = await ShardEngine.open({
          store: oldStore,
          deploymentId: from.deploymentId,
          shard,
          local,
          nodeId: owner,
          nodeUrl: null,
          clock,
          random,
          hybridClock,
          // Only the lease is kept alive: no snapshots, GC or ticks on a layout being retired.
          drivers: ["heartbeat"],
          // It commits nothing: a late renewal (a long synchronous write of the new shards)
          // must not make it let go; the heartbeat before the switch checks it still owns them.
          stepDownOnFailedRenewals: false,
          // Leases no longer than the lock: a killed reshard blocks the next one only that long.
          // One snapshot part decoded at a time: the restore is the reshard's memory peak.
          tuning: {
            leaseTtlMs: engineLeaseTtlMs,
            heartbeatIntervalMs: Math.floor(engineLeaseTtlMs / 3),
            snapshotFetchConcurrency: 1,
            ...options.tuning,
            tickWhenIdle: false,
          },
        });
        await engine.acquire();
      } catch (error) {
        local.close();
        throw error;
      }
      olds.push({ engine, local });
      onProgress({ phase: "read", shard, shards: from.numShards, documents: local.storedRows().documents });
    }
    const frontierTs = Math.max(0, ...olds.map(({ engine }) => engine.readTs));
    const fromRouter = new LaneRouter(catalog, from.numShards);
    const toRouter = new LaneRouter(catalog, toShards);
    let totalDocuments = 0;
    const lanes: { documents: number; indexEntries: number; receipts: number }[] = [];
    // Write: each new shard's snapshot, streamed from every old shard, then its manifest.
    for (let lane = 0; lane < toShards; lane++) {
      renewal.check();
      const counts = { documents: 0, indexEntries: 0, receipts: 0 };
      const sources: DumpCursor[] = [];
      for (const { local } of olds) sources.push(await local.openDumpCursor());
      const meta: LocalMeta = {
        shard: lane,
        deploymentId: from.deploymentId,
        appliedSeqno: 0,
        epoch: 0,
        lastHash: reshardChainHash(from.deploymentId, lock.generation, lane),
        frontierTs,
        minReadableTs: frontierTs,
      };
      const dump = new ReroutedDump(sources, meta, (kind, row, source) => {
        switch (kind) {
          case "documents": {
            const document = row as DocumentRevision;
            if (toRouter.laneOfDocument(document) !== lane) return false;
            toRouter.checkDocument(document, source, fromRouter);
            counts.documents++;
            return true;
          }
          case "indexEntries":
            if (toRouter.laneOfIndexEntry(row as IndexUpdate) !== lane) return false;
            counts.indexEntries++;
            return true;
          case "receipts":
            if (toRouter.laneOfReceipt(row as ClientReceipt) !== lane) return false;
            counts.receipts++;
            return true;
        }
      });
      const pointer = await writeSnapshot({
        store: newStore,
        deploymentId: from.deploymentId,
        shard: lane,
        cursor: dump,
        attemptId: `reshard-${lock.generation}-${randomHex(random, 6)}`,
        onProgress: (step) =>
          onProgress({ phase: "write", shard: lane, shards: toShards, documents: step.documents, totalDocuments: totalDocuments + step.documents }),
      });
      await new CasObject<Manifest>(newStore, bucketLayout.manifest(lane), manifestCodec, random).create(firstManifestFields(from.deploymentId, lane, pointer));
      totalDocuments += counts.documents;
      lanes.push(counts);
      onProgress({ phase: "written", shard: lane, shards: toShards, documents: counts.documents, totalDocuments });
    }
    // Switch: still the writer of every old shard, and still holding the lock.
    for (const { engine } of olds) await engine.heartbeat();
    await renewal.stop();
    renewal.check();
    switched = await lock.switchLayout();
    report = { changed: true, fromShards: from.numShards, toShards, generation: switched.generation, documents: totalDocuments, lanes, frontierTs };
  } catch (error) {
    // The switch is the try's last step that can fail: nothing switched. Give the old
    // shards back and drop what we wrote.
    await renewal.stop();
    await closeAll(olds);
    await deleteGeneration(lock.generation, toShards).catch(() => undefined);
    await lock.release().catch(() => undefined);
    removeWorkDirectory(workDirectory, options.workDirectory);
    throw error;
  }
  // From here on the reshard is done and durable: nothing below may report it as failed.
  // The old layout is retired: its shards' leases end with it (a node that still has it
  // open learns from globals, DEPLOYMENT_RESHARDED, before it could acquire one again).
  const afterSwitch: Globals = switched;
  const quietly = (step: () => void) => {
    try {
      step();
    } catch {
      // A progress callback's or the file system's trouble does not undo the switch.
    }
  };
  quietly(() => onProgress({ phase: "switch", generation: afterSwitch.generation, numShards: afterSwitch.numShards }));
  await closeAll(olds);
  quietly(() => removeWorkDirectory(workDirectory, options.workDirectory));
  let cleanupError: string | null = null;
  try {
    await deleteRetired(store, random, afterSwitch, clock.nowMs(), deleteGeneration);
  } catch (error) {
    // globals still list the old generation: the next reshard (a no-op one too) deletes it.
    cleanupError = error instanceof Error ? error.message : String(error);
  }
  return { ...report, objectsDeleted, cleanupError };
}

/**
 * The chain link a new shard's first segment points back to: the hash of a segment that
 * never existed (its snapshot stands for it), unique per deployment, generation and shard.
 */
function reshardChainHash(deploymentId: string, generation: number, shard: number): string {
  return createHash("sha256").update(`cairn reshard ${deploymentId} generation ${generation} shard ${shard}`).digest("hex");
}

async function closeAll(olds: readonly { engine: ShardEngine; local: LocalStore }[]): Promise<void> {
  await Promise.allSettled(olds.map(({ engine }) => engine.close()));
  for (const { local } of olds) local.close();
}

function removeWorkDirectory(directory: string, given: string | undefined): void {
  if (given === undefined) {
    rmSync(directory, { recursive: true, force: true });
    return;
  }
  // A directory the caller gave is theirs; only our files in it go.
  for (const name of readdirSync(directory)) {
    if (/^old-\d+-\d+\.sqlite(-wal|-shm)?$/.test(name)) rmSync(join(directory, name), { force: true });
  }
}

