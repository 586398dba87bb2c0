import { CairnError, errorKindOf } from "../base/index.js";
import type { LocalMeta, LocalStore } from "../local/index.js";
import { judgeSegment, type LogPosition, type LogValidator, type Verdict, type Segment } from "../segments/index.js";

/**
 * Applies one segment at the log position to the local store (or records that it was
 * skipped as a fenced leftover) in one SQLite transaction, then advances the validator.
 * The one apply path for bootstrap, the writer's own commits and replica tailing.
 */
export function ingestSegment(
  local: LocalStore,
  validator: LogValidator,
  segment: Segment,
  /** The writer's own segment: its records passed LocalStore.checkApplicable at commit. */
  options: { readonly recordsChecked?: boolean } = {},
): Verdict {
  const verdict = judgeSegment(validator.shard, validator.position, segment);
  const { header } = segment;
  try {
    if (verdict === "apply") {
      local.apply(
        {
          ...segment.records,
          meta: { appliedSeqno: header.seqno, epoch: header.epoch, lastHash: segment.hash, frontierTs: header.maxTs },
        },
        options,
      );
    } else {
      local.apply({ revisions: [], indexUpdates: [], receipts: [], meta: { appliedSeqno: header.seqno } });
    }
  } catch (error) {
    // A durable segment whose records the local store refuses is corrupt, not bad input.
    if (errorKindOf(error) === "InvalidInput") {
      throw new CairnError("SEGMENT_INVALID", `segment ${header.seqno} of shard ${validator.shard} holds invalid records`, {
        cause: error,
        details: { shard: validator.shard, seqno: header.seqno },
      });
    }
    throw error;
  }
  validator.accept(segment);
  return verdict;
}

export function positionFromMeta(meta: LocalMeta): LogPosition {
  return {
    nextSeqno: meta.appliedSeqno + 1,
    highestEpoch: meta.epoch,
    lastHash: meta.lastHash,
    lastMaxTs: meta.frontierTs,
  };
}
