import type { SnapshotPointer } from "../manifest/index.js";
import type { SnapshotRecord } from "../snapshots/index.js";

/**
 * Which snapshots a shard keeps, and how far its log may be collected, so that every
 * state within the retention window can be rebuilt (DESIGN.md §10a): the state at any ts
 * at or after `cutoffTs` is the newest kept snapshot at or before it plus the log after
 * that snapshot, up to the ts.
 *
 * - The **base** is the newest recorded snapshot at or before the cutoff: the log after it
 *   is kept (`logStartMax`), snapshots before it go.
 * - Between the base and the current snapshot, snapshots are thinned to at least
 *   `spacingMicros` apart (greedily, oldest first), so the window holds a bounded number
 *   of full copies and a restore replays at most about `spacingMicros` of log.
 * - The current snapshot (the manifest's) is always kept, recorded or not, and so is every
 *   record above it (an attempt that may be becoming current right now).
 * - Without a base (every snapshot is younger than the cutoff) the log is not collected
 *   at all: nothing older would be left to start from.
 * - Retention off (`cutoffTs` null): only the current snapshot is kept, and retention
 *   holds the log back nowhere (today's behaviour).
 */
/** Snapshots kept within the window are a day apart by default: ~8 full copies in 7 days, at most a day of log to replay. */
export const RETAINED_SNAPSHOT_SPACING_MS_DEFAULT = 24 * 60 * 60 * 1000;

export interface RetentionInput {
  readonly current: SnapshotPointer | null;
  /** Oldest first. */
  readonly records: readonly SnapshotRecord[];
  /** The oldest ts that must stay restorable (µs), or null when retention is off. */
  readonly cutoffTs: number | null;
  readonly spacingMicros: number;
}

export interface RetentionPlan {
  /** Key prefixes of the snapshots kept (SnapshotPointer.key). */
  readonly keptSnapshots: ReadonlySet<string>;
  /** Records of snapshots that are not kept (deleted before their parts). */
  readonly doomedRecordKeys: readonly string[];
  /** logStart may not move past this (base seqno + 1); null: retention holds nothing back. */
  readonly logStartMax: number | null;
  /** The snapshot the window starts from, if there is one. */
  readonly base: SnapshotPointer | null;
}

export function planRetention(input: RetentionInput): RetentionPlan {
  const { current, records, cutoffTs } = input;
  const kept = new Set<string>();
  if (current !== null) kept.add(current.key);
  // Records above the current snapshot may be an attempt being adopted: never touched here.
  const settled = records.filter((record) => current !== null && record.pointer.seqno <= current.seqno);
  for (const record of records) if (!settled.includes(record)) kept.add(record.pointer.key);
  let base: SnapshotPointer | null = null;
  if (cutoffTs !== null) {
    const candidates = settled.map((record) => record.pointer);
    if (current !== null && !candidates.some((pointer) => pointer.key === current.key)) candidates.push(current);
    candidates.sort((a, b) => a.seqno - b.seqno || a.ts - b.ts);
    for (const pointer of candidates) if (pointer.ts <= cutoffTs) base = pointer;
    let lastKeptTs: number | null = null;
    for (const pointer of candidates) {
      if (base !== null && pointer.seqno < base.seqno) continue;
      if (pointer === base || lastKeptTs === null || pointer.ts >= lastKeptTs + input.spacingMicros || pointer.key === current?.key) {
        kept.add(pointer.key);
        lastKeptTs = pointer.ts;
      }
    }
  }
  return {
    keptSnapshots: kept,
    doomedRecordKeys: settled.filter((record) => !kept.has(record.pointer.key)).map((record) => record.key),
    logStartMax: cutoffTs === null ? null : base === null ? 0 : base.seqno + 1,
    base,
  };
}
