import { DELETE_BATCH_KEYS_MAX } from "../base/limits.js";
import { bucketLayout, parseSegmentSeqno, parseSnapshotSeqno } from "../manifest/bucketLayout.js";
import type { LeaseOwner, ShardManifest } from "../manifest/ShardManifest.js";
import type { ObjectStore } from "../objectstore/ObjectStore.js";
import { lowestNeededSeqno, type ConsumerWatermarks } from "./ConsumerWatermarks.js";

/**
 * Garbage collection of one shard by its lease owner (DESIGN.md §4).
 *
 * Invariants:
 * - Nothing is deleted before the manifest's `logStart` has been moved past it by a CAS
 *   made as the current owner: a fenced writer's CAS fails and it deletes nothing.
 * - floor = min(snapshot.seqno + 1, lowest seqno a live consumer still needs), so every
 *   reader can either continue from the log or restore the current snapshot.
 * - The current snapshot is never deleted; older ones (and failed attempts at or below
 *   its seqno) are.
 * - The hot path needs no LIST: deleted segments are the contiguous range between the old
 *   and new `logStart`. A periodic sweep LISTs the log to remove strays below `logStart`
 *   (a crashed GC's leftovers, a zombie's write into a collected slot).
 */
export interface CollectGarbageOptions {
  readonly store: ObjectStore;
  readonly manifest: ShardManifest;
  readonly owner: LeaseOwner;
  readonly watermarks: ConsumerWatermarks;
  readonly nowMs: number;
  readonly consumerTtlMs: number;
  /** Also LIST the log for strays below logStart. */
  readonly sweep: boolean;
}

export interface GarbageReport {
  readonly logStartBefore: number;
  readonly logStartAfter: number;
  readonly segmentsDeleted: number;
  readonly snapshotObjectsDeleted: number;
  readonly straysDeleted: number;
  /** The lowest seqno a live consumer needed, if one held GC back. */
  readonly heldBackBy: number | null;
}

export async function collectGarbage(options: CollectGarbageOptions): Promise<GarbageReport> {
  const { store, manifest, owner } = options;
  const shard = manifest.shard;
  const current = await manifest.refresh();
  const logStartBefore = current.logStart;
  const consumerFloor = lowestNeededSeqno(await options.watermarks.readAll(), options.nowMs, options.consumerTtlMs);
  const snapshotFloor = current.snapshot === null ? logStartBefore : current.snapshot.seqno + 1;
  const floor = Math.min(snapshotFloor, consumerFloor ?? Number.POSITIVE_INFINITY);
  let logStartAfter = logStartBefore;
  if (floor > logStartBefore) {
    const updated = await manifest.updateAsOwner(owner, (fields) => ({
      ...fields,
      logStart: Math.max(fields.logStart, floor),
    }));
    logStartAfter = updated.logStart;
  }
  const segmentKeys: string[] = [];
  for (let seqno = logStartBefore; seqno < logStartAfter; seqno++) segmentKeys.push(bucketLayout.segment(shard, seqno));
  await deleteInBatches(store, segmentKeys);

  const snapshotObjectsDeleted = await deleteSupersededSnapshots(options);
  const straysDeleted = options.sweep ? await sweepLogBelow(store, shard, logStartAfter) : 0;
  return {
    logStartBefore,
    logStartAfter,
    segmentsDeleted: segmentKeys.length,
    snapshotObjectsDeleted,
    straysDeleted,
    heldBackBy: consumerFloor !== null && consumerFloor < snapshotFloor ? consumerFloor : null,
  };
}

async function deleteSupersededSnapshots(options: CollectGarbageOptions): Promise<number> {
  const { store, manifest } = options;
  const shard = manifest.shard;
  const snapshot = manifest.current.snapshot;
  if (snapshot === null) return 0;
  const doomed: string[] = [];
  for await (const entry of store.list(bucketLayout.snapshotsPrefix(shard))) {
    if (entry.key.startsWith(snapshot.key)) continue;
    const seqno = parseSnapshotSeqno(shard, entry.key);
    // Attempts above the current snapshot may be in progress elsewhere; they are
    // collected once a newer snapshot supersedes them.
    if (seqno !== null && seqno <= snapshot.seqno) doomed.push(entry.key);
  }
  await deleteInBatches(store, doomed);
  return doomed.length;
}

/** Deletes segment keys below `logStart` that the contiguous delete did not cover. */
async function sweepLogBelow(store: ObjectStore, shard: number, logStart: number): Promise<number> {
  const strays: string[] = [];
  for await (const entry of store.list(bucketLayout.logPrefix(shard))) {
    const seqno = parseSegmentSeqno(shard, entry.key);
    if (seqno === null) continue;
    // Keys come in seqno order (zero-padded), so the first live segment ends the sweep.
    if (seqno >= logStart) break;
    strays.push(entry.key);
  }
  await deleteInBatches(store, strays);
  return strays.length;
}

async function deleteInBatches(store: ObjectStore, keys: readonly string[]): Promise<void> {
  for (let start = 0; start < keys.length; start += DELETE_BATCH_KEYS_MAX) {
    await store.deleteMany(keys.slice(start, start + DELETE_BATCH_KEYS_MAX));
  }
}
