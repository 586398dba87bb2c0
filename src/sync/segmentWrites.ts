import { writeRangesOf } from "../functions/index.js";
import type { KeyRange } from "../model/index.js";
import type { Segment } from "../segments/index.js";

/**
 * The keys a segment changed, in the keyspaces queries record reads in: a point per
 * document revision and per index entry. Receipts are not readable by queries, so they
 * invalidate nothing. Fence and tick segments change nothing (they only advance ts).
 */
export function segmentWrites(segment: Segment): KeyRange[] {
  const { revisions, indexUpdates } = segment.records;
  if (revisions.length === 0 && indexUpdates.length === 0) return [];
  return writeRangesOf(revisions, indexUpdates);
}
