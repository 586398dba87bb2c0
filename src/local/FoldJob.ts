import type { OverlayBatch } from "./Overlay.js";
import { metaParameters } from "./LocalMeta.js";

/**
 * One fold's rows in columns, the form in which they cross to the fold worker: a few
 * large arrays clone far faster than a million small objects, and the index keys share
 * one byte array.
 */
export interface FoldJob {
  readonly documents: {
    readonly tableNumbers: number[];
    readonly ids: string[];
    readonly ts: number[];
    readonly values: (string | null)[];
    readonly prevTs: (number | null)[];
  };
  readonly indexEntries: {
    readonly indexIds: number[];
    readonly keyBytes: Uint8Array;
    /** keyOffsets[n]..keyOffsets[n+1] is key n; one more offset than keys. */
    readonly keyOffsets: Uint32Array;
    readonly ts: number[];
    readonly docIds: (string | null)[];
  };
  readonly receipts: {
    readonly clientIds: string[];
    readonly seqs: number[];
    readonly ts: number[];
    readonly results: string[];
  };
  /** UPDATE_META parameters: where the file stands once this fold committed. */
  readonly meta: ReturnType<typeof metaParameters>;
}

/** The statements a fold runs (see statements.ts). */
export interface FoldSql {
  readonly upsertDocument: string;
  readonly upsertIndexEntry: string;
  readonly upsertReceipt: string;
  readonly appendIndexHistory: string;
  readonly updateMeta: string;
}

/**
 * The job for `batches`, in apply order, ending at the last batch's meta with the
 * store's current readable floor (a prune may have raised it since that batch).
 */
export function foldJobOf(batches: readonly OverlayBatch[], minReadableTs: number): FoldJob {
  const documents: FoldJob["documents"] = { tableNumbers: [], ids: [], ts: [], values: [], prevTs: [] };
  const receipts: FoldJob["receipts"] = { clientIds: [], seqs: [], ts: [], results: [] };
  const indexIds: number[] = [];
  const entryTs: number[] = [];
  const docIds: (string | null)[] = [];
  let keyLength = 0;
  let entryCount = 0;
  for (const batch of batches) {
    for (const row of batch.revisions) {
      documents.tableNumbers.push(row.tableNumber);
      documents.ids.push(row.id);
      documents.ts.push(row.ts);
      documents.values.push(row.value);
      documents.prevTs.push(row.prevTs);
    }
    for (const row of batch.indexUpdates) keyLength += row.key.byteLength;
    entryCount += batch.indexUpdates.length;
    for (const row of batch.receipts) {
      receipts.clientIds.push(row.clientId);
      receipts.seqs.push(row.seq);
      receipts.ts.push(row.ts);
      receipts.results.push(row.result);
    }
  }
  const keyBytes = new Uint8Array(keyLength);
  const keyOffsets = new Uint32Array(entryCount + 1);
  let offset = 0;
  let at = 0;
  for (const batch of batches) {
    for (const row of batch.indexUpdates) {
      indexIds.push(row.indexId);
      entryTs.push(row.ts);
      docIds.push(row.docId);
      keyBytes.set(row.key, offset);
      offset += row.key.byteLength;
      keyOffsets[++at] = offset;
    }
  }
  const last = batches[batches.length - 1]!.meta;
  return {
    documents,
    indexEntries: { indexIds, keyBytes, keyOffsets, ts: entryTs, docIds },
    receipts,
    meta: metaParameters({ ...last, minReadableTs }),
  };
}
