import { CairnError } from "../base/index.js";
import type { Segment } from "./Segment.js";

/**
 * The validity rule of DESIGN.md §4 as a state machine over segments in seqno order.
 *
 * - The log is contiguous: segments arrive at `nextSeqno`, nothing is skipped.
 * - A segment whose epoch is lower than the highest epoch of an earlier valid segment is
 *   a fenced writer's leftover: every reader skips it.
 * - Valid segments chain: `prevHash` equals the hash of the previous valid segment, and
 *   timestamps strictly increase. A valid segment that breaks either is corruption.
 */
export interface LogPosition {
  /** The seqno the next segment must have. */
  readonly nextSeqno: number;
  /** Epoch of the last valid segment (0 before any). */
  readonly highestEpoch: number;
  /** Hash of the last valid segment (null before any). */
  readonly lastHash: string | null;
  /** maxTs of the last valid segment: the closed frontier (0 before any). */
  readonly lastMaxTs: number;
}

export type Verdict = "apply" | "skip";

export const LOG_START: LogPosition = { nextSeqno: 0, highestEpoch: 0, lastHash: null, lastMaxTs: 0 };

export class LogValidator {
  private current: LogPosition;

  constructor(
    readonly shard: number,
    start: LogPosition,
  ) {
    this.current = start;
  }

  get position(): LogPosition {
    return this.current;
  }

  /** Moves to a position established elsewhere (a restored snapshot). */
  reset(position: LogPosition): void {
    this.current = position;
  }

  /** What a reader must do with `segment`; advances the position either way. */
  accept(segment: Segment): Verdict {
    const verdict = judgeSegment(this.shard, this.current, segment);
    const { header } = segment;
    this.current =
      verdict === "skip"
        ? { ...this.current, nextSeqno: header.seqno + 1 }
        : { nextSeqno: header.seqno + 1, highestEpoch: header.epoch, lastHash: segment.hash, lastMaxTs: header.maxTs };
    return verdict;
  }
}

/** Pure form of the rule, for callers that must decide before committing to a position. */
export function judgeSegment(shard: number, position: LogPosition, segment: Segment): Verdict {
  const { header } = segment;
  if (header.seqno !== position.nextSeqno) {
    throw new CairnError("INTERNAL", `segment ${header.seqno} offered at position ${position.nextSeqno}`);
  }
  if (header.epoch < position.highestEpoch) return "skip";
  if (header.prevHash !== position.lastHash) {
    throw new CairnError(
      "SEGMENT_CHAIN_BROKEN",
      `segment ${header.seqno} of shard ${shard} does not chain to the segment before it ` +
        `(prevHash ${header.prevHash ?? "none"}, expected ${position.lastHash ?? "none"})`,
      { details: { shard, seqno: header.seqno } },
    );
  }
  if (header.minTs <= position.lastMaxTs) {
    throw new CairnError(
      "SEGMENT_CHAIN_BROKEN",
      `segment ${header.seqno} of shard ${shard} goes back in time (minTs ${header.minTs} <= ${position.lastMaxTs})`,
      { details: { shard, seqno: header.seqno } },
    );
  }
  return "apply";
}
