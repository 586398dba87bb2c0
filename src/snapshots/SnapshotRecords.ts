import { z } from "zod";
import { CairnError, isCasConflict } from "../base/index.js";
import { bucketLayout, snapshotAttemptOf, snapshotPointerSchema, type SnapshotPointer } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";

/**
 * Records of complete snapshots (bucketLayout.snapshotRecord): one small create-only
 * object per snapshot attempt, written after its last part, so a record proves that its
 * parts are all there. The manifest points only at the current snapshot; the records are
 * how retention keeps older ones and how a restore finds the one at or before a
 * timestamp. A record is deleted before its parts, so it never names missing parts for
 * longer than a GC pass that was cut short (a restore then reports SNAPSHOT_MISSING).
 */
export const SNAPSHOT_RECORD_FORMAT = 1;

const recordSchema = z.object({ format: z.literal(SNAPSHOT_RECORD_FORMAT), pointer: snapshotPointerSchema });

export interface SnapshotRecord {
  readonly key: string;
  readonly pointer: SnapshotPointer;
}

export interface SnapshotRecordScan {
  /** Oldest first (by seqno, then attempt). */
  readonly records: readonly SnapshotRecord[];
  /** Keys under the prefix that are not records of this shard (never deleted on their account). */
  readonly malformed: readonly string[];
}

export function snapshotRecordKey(shard: number, pointer: SnapshotPointer): string {
  const attemptId = snapshotAttemptOf(shard, pointer.key);
  if (attemptId === null) throw new CairnError("INTERNAL", `snapshot key ${pointer.key} is not one of shard ${shard}`);
  return bucketLayout.snapshotRecord(shard, pointer.seqno, attemptId);
}

/** Records a complete snapshot. Idempotent: a retry after a lost response finds its own record. */
export async function recordSnapshot(store: ObjectStore, shard: number, pointer: SnapshotPointer): Promise<void> {
  const key = snapshotRecordKey(shard, pointer);
  try {
    await store.create(key, new TextEncoder().encode(JSON.stringify({ format: SNAPSHOT_RECORD_FORMAT, pointer })));
  } catch (error) {
    if (!isCasConflict(error)) throw error;
    // The attempt id is unique per attempt: a record already there is this attempt's own.
  }
}

/**
 * Every snapshot record of the shard, oldest first, each read and validated: one LIST,
 * and a GET for each record not in `known` (records never change, so a caller that
 * reads them again and again keeps what it read; the scan drops entries no longer listed).
 */
export async function readSnapshotRecords(store: ObjectStore, shard: number, known: Map<string, SnapshotPointer> = new Map()): Promise<SnapshotRecordScan> {
  const records: SnapshotRecord[] = [];
  const malformed: string[] = [];
  const listed = new Set<string>();
  for await (const entry of store.list(bucketLayout.snapshotRecordsPrefix(shard))) {
    listed.add(entry.key);
    let pointer = known.get(entry.key) ?? null;
    if (pointer === null) {
      const result = await store.get(entry.key);
      // Deleted by a GC pass between the LIST and the GET: it was not one to keep.
      if (result === null) continue;
      if (result === "not-modified") throw new CairnError("INTERNAL", "unconditional GET answered not-modified");
      pointer = parseRecord(result.body);
      if (pointer === null || !isRecordOf(shard, entry.key, pointer)) {
        malformed.push(entry.key);
        continue;
      }
      known.set(entry.key, pointer);
    }
    records.push({ key: entry.key, pointer });
  }
  for (const key of known.keys()) if (!listed.has(key)) known.delete(key);
  return { records, malformed };
}

function isRecordOf(shard: number, key: string, pointer: SnapshotPointer): boolean {
  const attemptId = snapshotAttemptOf(shard, pointer.key);
  return attemptId !== null && bucketLayout.snapshotRecord(shard, pointer.seqno, attemptId) === key;
}

function parseRecord(body: Uint8Array): SnapshotPointer | null {
  try {
    const parsed = recordSchema.safeParse(JSON.parse(new TextDecoder().decode(body)));
    return parsed.success ? parsed.data.pointer : null;
  } catch {
    return null;
  }
}
