import { CairnError, hasErrorCode, isCasConflict } from "../base/index.js";
import { bucketLayout } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { type LogPosition, readSegment, type Segment } from "../segments/index.js";

/**
 * Creates a writer's next segment at the tail of the log (DESIGN.md §4, commit and
 * acquire step 4), resolving every way a create-only PUT can fail:
 *
 * - conflict or lost response, slot holds our bytes → our create landed;
 * - slot holds a higher epoch → another writer fenced us (FENCED);
 * - slot holds a lower epoch → a fenced writer's segment landed first: it is handed to
 *   `ingest` (applied or skipped by the validity rule) and we try the next slot;
 * - lost response and the slot is still empty → create again (create-only is safe to
 *   repeat);
 * - anything else → thrown unchanged: the caller treats the outcome as unknown.
 */
export interface AppendContext {
  readonly store: ObjectStore;
  readonly deploymentId: string;
  readonly shard: number;
  readonly epoch: number;
  /** Where the log stands after `ingest` took a leftover in: the slot to build for next. */
  position(): LogPosition;
  /**
   * Takes a lower-epoch segment found at the tail through the validity rule, once a
   * manifest read after its GET shows the slot was not collected (else: FENCED). A
   * pipelined writer refuses (throws) unless this segment is its only one in flight: the
   * ones built after it chain to bytes that will never be in the log.
   */
  ingest(segment: Segment): Promise<void>;
}

/** Leftovers of fenced writers at the tail are rare (one per takeover at most); bound the loop anyway. */
const LEFTOVER_SLOTS_MAX = 16;
/** Re-creates after a lost response that left the slot empty. */
const CREATE_ATTEMPTS_MAX = 4;

/**
 * Creates `first` (built for the tail) and resolves its fate. When a fenced writer's
 * leftover holds the slot, `ingest` takes it in and `rebuild` makes the segment again for
 * the position after it: fresh timestamps above everything before it.
 */
export async function appendSegment(
  context: AppendContext,
  first: Segment,
  rebuild: (position: LogPosition) => Segment,
): Promise<Segment> {
  let segment = first;
  for (let slot = 0; slot < LEFTOVER_SLOTS_MAX; slot++) {
    const existing = await createOrReadSlot(context, segment);
    if (existing === null || existing.bytes.equals(segment.bytes)) return segment;
    if (existing.header.epoch > context.epoch) {
      throw new CairnError(
        "FENCED",
        `shard ${context.shard}: slot ${segment.header.seqno} holds epoch ${existing.header.epoch}; epoch ${context.epoch} is fenced`,
        { details: { shard: context.shard, seqno: segment.header.seqno, epoch: existing.header.epoch } },
      );
    }
    if (existing.header.epoch === context.epoch) {
      throw new CairnError(
        "INTERNAL",
        `shard ${context.shard}: slot ${segment.header.seqno} holds a different segment of our own epoch ${context.epoch}`,
      );
    }
    await context.ingest(existing);
    segment = rebuild(context.position());
  }
  throw new CairnError("INTERNAL", `shard ${context.shard}: more than ${LEFTOVER_SLOTS_MAX} leftover segments at the tail`);
}

async function createOrReadSlot(context: AppendContext, segment: Segment): Promise<Segment | null> {
  const { seqno } = segment.header;
  const key = bucketLayout.segment(context.shard, seqno);
  for (let attempt = 1; ; attempt++) {
    try {
      await context.store.create(key, segment.bytes);
      return null;
    } catch (error) {
      const conflict = isCasConflict(error);
      if (!conflict && !hasErrorCode(error, "STORE_AMBIGUOUS_OUTCOME")) throw error;
      const existing = await readSegment(context.store, { deploymentId: context.deploymentId, shard: context.shard, seqno });
      if (existing !== null) return existing;
      // A conflict on a slot that is empty again means it was collected under us.
      if (conflict || attempt >= CREATE_ATTEMPTS_MAX) throw error;
    }
  }
}
