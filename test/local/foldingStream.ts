import { SeededRandom } from "../../src/base/random.js";
import { type DocumentId, newDocumentId } from "../../src/model/DocumentId.js";
import { encodeIndexKey } from "../../src/model/IndexKey.js";
import type { ApplyBatch } from "../../src/local/index.js";

/**
 * A deterministic stream of batches for the crash tests: batch `seqno` writes
 * STREAM_BATCH_DOCUMENTS new documents at ts = seqno + 1, each with an entry in index 1
 * (by n) and index 2 (by label), as a segment of that seqno would.
 */
export const STREAM_BATCHES = 5;
export const STREAM_BATCH_DOCUMENTS = 8_000;

export function streamIds(seqno: number): DocumentId[] {
  const random = new SeededRandom(10_000 + seqno);
  return Array.from({ length: STREAM_BATCH_DOCUMENTS }, () => newDocumentId(1, random));
}

export function streamBatch(seqno: number): ApplyBatch {
  const ts = seqno + 1;
  const ids = streamIds(seqno);
  return {
    revisions: ids.map((id, n) => ({ tableNumber: 1, id, ts, value: JSON.stringify({ seqno, n, pad: "x".repeat(120) }), prevTs: null })),
    indexUpdates: ids.flatMap((id, n) => [
      { indexId: 1, key: encodeIndexKey([seqno * STREAM_BATCH_DOCUMENTS + n, id]), ts, docId: id },
      { indexId: 2, key: encodeIndexKey([`label-${n % 97}`, id]), ts, docId: id },
    ]),
    receipts: [{ clientId: "stream", seq: seqno, ts, result: `{"seqno":${seqno}}`, route: null }],
    meta: { appliedSeqno: seqno, epoch: 1, lastHash: `h${seqno}`, frontierTs: ts },
  };
}
