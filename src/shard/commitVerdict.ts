import type { FenceRecord, Manifest } from "../manifest/index.js";

/**
 * Whether a segment this writer created is part of the log, decided from a manifest read
 * after the create (DESIGN.md §4 commit, verify step). Pure, so every case is tested
 * directly.
 *
 * Rules, for a segment of epoch `e` created at slot `s`:
 * - `s >= logStart`: the slot was never collected (GC raises logStart before it deletes),
 *   so the segment there is ours and durable. A newer epoch in the manifest means we
 *   were fenced after it landed: acknowledge, then stop writing.
 * - `s < logStart`: the slot was collected at some time, either after our segment was
 *   included in the log (durable) or before our stalled create landed in the emptied
 *   slot (never part of the log). The first segment of a newer epoch in the log is that
 *   epoch's fence, and the writer's segments before `s` are in the log (it judges its
 *   pipelined segments in log order, each only once the one before was found durable),
 *   so ours was included iff `s` is below the first fence of an epoch above `e`. The fence of epoch e+1, when recorded, is that first fence and
 *   decides both ways. When e+1 left no record (it crashed before recording, or it is
 *   older than the records kept), a later epoch's fence f still proves exclusion when
 *   `s >= f`, but not inclusion: then the outcome is unknown, never a definite failure.
 */
export type CommitVerdict =
  /** In the log. `newerEpoch`: a successor exists; acknowledge, then stop writing. */
  | { readonly kind: "durable"; readonly newerEpoch: boolean }
  /** Never part of the log: the writer is fenced and the write failed. */
  | { readonly kind: "lost"; readonly reason: string }
  /** Cannot be decided from the bucket: the writer must report an unknown outcome. */
  | { readonly kind: "unknown"; readonly reason: string };

export function judgeCreatedSegment(manifest: Manifest, seqno: number, epoch: number): CommitVerdict {
  if (seqno >= manifest.logStart) return { kind: "durable", newerEpoch: manifest.epoch > epoch };
  const collected = `slot ${seqno} was collected (logStart ${manifest.logStart})`;
  const next = manifest.fences.find((fence) => fence.epoch === epoch + 1);
  if (next !== undefined) {
    return seqno < next.seqno
      ? { kind: "durable", newerEpoch: true }
      : { kind: "lost", reason: `${collected} and epoch ${next.epoch} fenced at ${next.seqno}, at or below it` };
  }
  const later = firstFenceAbove(manifest.fences, epoch);
  if (later !== undefined && seqno >= later.seqno) {
    return { kind: "lost", reason: `${collected} and epoch ${later.epoch} fenced at ${later.seqno}, at or below it` };
  }
  return { kind: "unknown", reason: `${collected} and the manifest no longer records where epoch ${epoch + 1} fenced` };
}

function firstFenceAbove(fences: readonly FenceRecord[], epoch: number): FenceRecord | undefined {
  let first: FenceRecord | undefined;
  for (const fence of fences) if (fence.epoch > epoch && (first === undefined || fence.epoch < first.epoch)) first = fence;
  return first;
}
