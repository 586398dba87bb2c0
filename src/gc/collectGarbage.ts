import { DELETE_BATCH_KEYS_MAX } from "../base/index.js";
import {
  bucketLayout,
  type SnapshotPointer,
  parseSegmentSeqno,
  parseSnapshotSeqno,
  type Manifest,
  type LeaseOwner,
  type ShardManifest,
  holdsSegment,
  NO_HOLDS,
  type ShardHolds,
} from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { readSnapshotRecords } from "../snapshots/index.js";
import { lowestNeededSeqno, type ConsumerWatermarks, type MalformedWatermark } from "./ConsumerWatermarks.js";
import { planRetention } from "./retentionPlan.js";

/**
 * Garbage collection of one shard by its lease owner (DESIGN.md §4).
 *
 * Invariants:
 * - Nothing is deleted before the manifest's `logStart` has been moved past it by a CAS
 *   made as the current owner: a fenced writer's CAS fails and it deletes nothing.
 * - floor = min(snapshot.seqno + 1, lowest seqno a live consumer still needs, the
 *   retention base's seqno + 1), so every reader can either continue from the log or
 *   restore the current snapshot, and every state within the retention window can be
 *   rebuilt (retentionPlan). A malformed watermark is reported in the result and holds
 *   nothing back.
 * - The current snapshot is never deleted; older ones that retention does not keep (and
 *   failed attempts at or below its seqno) are: first their records, then their parts.
 * - The hot path needs no LIST: deleted segments are the contiguous range between the old
 *   and new `logStart`. A periodic sweep LISTs the log to remove strays below `logStart`
 *   (a crashed GC's leftovers, a zombie's write into a collected slot).
 * - `planGarbage` reads only: it is what a pass would delete now (`cairn gc --dry-run`).
 * - What live branches hold (BranchRegistry: a snapshot, a run of segments) is never
 *   deleted, also below logStart. A pass marks the manifest (`collecting`) with the CAS
 *   that decides it, reads the registrations only after that CAS, deletes, and clears
 *   the mark: a branch registered before the CAS is seen, and one registered after it
 *   sees the mark and waits for the pass to end before it checks what it holds exists
 *   (createBranch). Without anything to delete, a pass writes nothing.
 */
export interface GarbageOptions {
  readonly store: ObjectStore;
  readonly watermarks: ConsumerWatermarks;
  readonly nowMs: number;
  readonly consumerTtlMs: number;
  /** Also LIST the log for strays below logStart. */
  readonly sweep: boolean;
  /** How far back every state stays restorable (0: off, only the current snapshot is kept). */
  readonly retentionMs: number;
  /** Snapshots kept within the window are at least this far apart. */
  readonly retainedSnapshotSpacingMs: number;
  /** Snapshot records already read (they never change): saves their GETs on the next pass. */
  readonly knownRecords?: Map<string, SnapshotPointer>;
  /** What live branches hold of this shard (read afresh on every call); nothing when absent. */
  readonly holds?: () => Promise<ShardHolds>;
}

export interface CollectGarbageOptions extends GarbageOptions {
  readonly manifest: ShardManifest;
  readonly owner: LeaseOwner;
}

/** What one pass would delete, from the manifest it read. */
export interface GarbagePlan {
  readonly logStartBefore: number;
  readonly logStartAfter: number;
  /** Segments in [logStartBefore, logStartAfter): deleted once logStart moved. */
  readonly segmentKeys: readonly string[];
  /** Records of the superseded snapshots retention does not keep (deleted before their parts). */
  readonly recordKeys: readonly string[];
  /** Parts of superseded snapshots retention does not keep, and of failed attempts at or below the current one. */
  readonly snapshotKeys: readonly string[];
  /** Segments below logStartBefore still present (only when sweeping). */
  readonly strayKeys: readonly string[];
  /** The lowest seqno a live consumer needed, if one held GC back. */
  readonly heldBackBy: number | null;
  /** The snapshot the retention window starts from (null: retention off, or no snapshot old enough yet). */
  readonly retentionBase: SnapshotPointer | null;
  /** Watermarks that could not be used; they were ignored (they hold nothing back). */
  readonly malformedWatermarks: readonly MalformedWatermark[];
}

export interface GarbageReport {
  readonly logStartBefore: number;
  readonly logStartAfter: number;
  readonly segmentsDeleted: number;
  readonly snapshotObjectsDeleted: number;
  readonly straysDeleted: number;
  /** The lowest seqno a live consumer needed, if one held GC back. */
  readonly heldBackBy: number | null;
  /** Watermarks that could not be used; they were ignored (they hold nothing back). */
  readonly malformedWatermarks: readonly MalformedWatermark[];
}

export async function collectGarbage(options: CollectGarbageOptions): Promise<GarbageReport> {
  const { store, manifest, owner } = options;
  const plan = await planGarbage(await manifest.refresh(), options);
  const anything = plan.logStartAfter > plan.logStartBefore || plan.recordKeys.length + plan.snapshotKeys.length + plan.strayKeys.length > 0;
  if (!anything) {
    return { logStartBefore: plan.logStartBefore, logStartAfter: plan.logStartBefore, segmentsDeleted: 0, snapshotObjectsDeleted: 0, straysDeleted: 0, heldBackBy: plan.heldBackBy, malformedWatermarks: plan.malformedWatermarks };
  }
  const floor = plan.logStartAfter;
  const sinceMs = options.nowMs;
  const decided = await manifest.updateAsOwner(owner, (fields) => ({ ...fields, logStart: Math.max(fields.logStart, floor), collecting: { epoch: owner.epoch, sinceMs } }));
  const logStartAfter = decided.logStart;
  // Read after the deciding CAS: a branch registered before it is held; one after it waits for the mark to clear.
  const holds = options.holds === undefined ? NO_HOLDS : await options.holds();
  const unheld = (keys: readonly string[]) => keys.filter((key) => !isHeld(manifest.shard, holds, key));
  const segmentKeys = unheld(plan.segmentKeys.filter((key) => (parseSegmentSeqno(manifest.shard, key) ?? Infinity) < logStartAfter));
  const recordKeys = unheld(plan.recordKeys);
  const snapshotKeys = unheld(plan.snapshotKeys);
  const strayKeys = unheld(plan.strayKeys);
  await deleteInBatches(store, segmentKeys);
  await deleteInBatches(store, recordKeys);
  await deleteInBatches(store, snapshotKeys);
  await deleteInBatches(store, strayKeys);
  await manifest.updateAsOwner(owner, (fields) => ({ ...fields, collecting: null }));
  return {
    logStartBefore: plan.logStartBefore,
    logStartAfter,
    segmentsDeleted: segmentKeys.length,
    snapshotObjectsDeleted: recordKeys.length + snapshotKeys.length,
    straysDeleted: strayKeys.length,
    heldBackBy: plan.heldBackBy,
    malformedWatermarks: plan.malformedWatermarks,
  };
}

/** What a pass would delete now, given the shard's current manifest. Reads only. */
export async function planGarbage(current: Manifest, options: GarbageOptions): Promise<GarbagePlan> {
  const { store } = options;
  const shard = current.shard;
  const logStartBefore = current.logStart;
  const scan = await options.watermarks.readAll();
  const consumerFloor = lowestNeededSeqno(scan.watermarks, options.nowMs, options.consumerTtlMs);
  const records = await readSnapshotRecords(store, shard, options.knownRecords);
  const retention = planRetention({
    current: current.snapshot,
    records: records.records,
    cutoffTs: options.retentionMs > 0 ? (options.nowMs - options.retentionMs) * 1000 : null,
    spacingMicros: options.retainedSnapshotSpacingMs * 1000,
  });
  const snapshotFloor = current.snapshot === null ? logStartBefore : current.snapshot.seqno + 1;
  const floor = Math.min(snapshotFloor, consumerFloor ?? Number.POSITIVE_INFINITY, retention.logStartMax ?? Number.POSITIVE_INFINITY);
  const logStartAfter = Math.max(logStartBefore, floor);
  const segmentKeys: string[] = [];
  for (let seqno = logStartBefore; seqno < logStartAfter; seqno++) segmentKeys.push(bucketLayout.segment(shard, seqno));
  const snapshotKeys = await supersededSnapshotKeys(store, current, retention.keptSnapshots);
  const strayKeys = options.sweep ? await segmentKeysBelow(store, shard, logStartBefore) : [];
  // Registrations are read only when something could go (an idle shard's pass reads nothing more).
  const candidates = segmentKeys.length + retention.doomedRecordKeys.length + snapshotKeys.length + strayKeys.length;
  const holds = candidates === 0 || options.holds === undefined ? NO_HOLDS : await options.holds();
  const unheld = (keys: readonly string[]) => keys.filter((key) => !isHeld(shard, holds, key));
  return {
    logStartBefore,
    logStartAfter,
    segmentKeys: unheld(segmentKeys),
    recordKeys: unheld(retention.doomedRecordKeys),
    snapshotKeys: unheld(snapshotKeys),
    strayKeys: unheld(strayKeys),
    heldBackBy: consumerFloor !== null && consumerFloor < Math.min(snapshotFloor, retention.logStartMax ?? Infinity) ? consumerFloor : null,
    retentionBase: retention.base,
    malformedWatermarks: scan.malformed,
  };
}

async function supersededSnapshotKeys(store: ObjectStore, current: Manifest, kept: ReadonlySet<string>): Promise<string[]> {
  const snapshot = current.snapshot;
  if (snapshot === null) return [];
  const doomed: string[] = [];
  for await (const entry of store.list(bucketLayout.snapshotsPrefix(current.shard))) {
    const prefix = entry.key.slice(0, entry.key.lastIndexOf("/") + 1);
    if (kept.has(prefix)) continue;
    const seqno = parseSnapshotSeqno(current.shard, entry.key);
    // Attempts above the current snapshot may be in progress elsewhere; they are
    // collected once a newer snapshot supersedes them.
    if (seqno !== null && seqno <= snapshot.seqno) doomed.push(entry.key);
  }
  return doomed;
}

/** Segment keys below `logStart` (the contiguous delete's leftovers and zombies' strays). */
async function segmentKeysBelow(store: ObjectStore, shard: number, logStart: number): Promise<string[]> {
  const strays: string[] = [];
  for await (const entry of store.list(bucketLayout.logPrefix(shard))) {
    const seqno = parseSegmentSeqno(shard, entry.key);
    if (seqno === null) continue;
    // Keys come in seqno order (zero-padded), so the first live segment ends the sweep.
    if (seqno >= logStart) break;
    strays.push(entry.key);
  }
  return strays;
}

/** Whether a live branch holds `key` (a segment in a held run, a held snapshot's part or record). */
function isHeld(shard: number, holds: ShardHolds, key: string): boolean {
  const seqno = parseSegmentSeqno(shard, key);
  if (seqno !== null) return holdsSegment(holds, seqno);
  if (holds.recordKeys.has(key)) return true;
  return holds.snapshotKeys.has(key.slice(0, key.lastIndexOf("/") + 1));
}

async function deleteInBatches(store: ObjectStore, keys: readonly string[]): Promise<void> {
  for (let start = 0; start < keys.length; start += DELETE_BATCH_KEYS_MAX) {
    await store.deleteMany(keys.slice(start, start + DELETE_BATCH_KEYS_MAX));
  }
}
