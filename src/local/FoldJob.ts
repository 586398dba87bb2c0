import type { IndexUpdate } from "../model/Revision.js";
import { metaParameters } from "./LocalMeta.js";
import type { FrozenGeneration } from "./Overlay.js";

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
  readonly updateMeta: string;
}

/**
 * The job for a frozen overlay generation, its rows in key order (documents by id then
 * ts, entries by index, key, ts), so that rows of one B-tree page are written together:
 * a fold touches each leaf page once however many of its rows changed. The overlay's
 * structures are sorted already; only the document ids need a sort. It ends at the
 * generation's meta with the store's current readable floor (a prune may have raised it
 * since the last batch).
 */
export function foldJobOf(generation: FrozenGeneration, minReadableTs: number): FoldJob {
  const documents: FoldJob["documents"] = { tableNumbers: [], ids: [], ts: [], values: [], prevTs: [] };
  for (const id of [...generation.documents.keys()].sort()) {
    for (const row of generation.documents.get(id)!) {
      documents.tableNumbers.push(row.tableNumber);
      documents.ids.push(row.id);
      documents.ts.push(row.ts);
      documents.values.push(row.value);
      documents.prevTs.push(row.prevTs);
    }
  }
  const entries: IndexUpdate[] = [];
  for (const indexId of [...generation.indexes.keys()].sort((left, right) => left - right)) {
    generation.indexes.get(indexId)!.forEach((versions) => {
      for (const row of versions) entries.push(row);
    });
  }
  let keyLength = 0;
  for (const row of entries) keyLength += row.key.byteLength;
  const keyBytes = new Uint8Array(keyLength);
  const keyOffsets = new Uint32Array(entries.length + 1);
  const indexEntries: FoldJob["indexEntries"] = { indexIds: [], keyBytes, keyOffsets, ts: [], docIds: [] };
  let offset = 0;
  entries.forEach((row, at) => {
    indexEntries.indexIds.push(row.indexId);
    indexEntries.ts.push(row.ts);
    indexEntries.docIds.push(row.docId);
    keyBytes.set(row.key, offset);
    offset += row.key.byteLength;
    keyOffsets[at + 1] = offset;
  });
  const receipts: FoldJob["receipts"] = { clientIds: [], seqs: [], ts: [], results: [] };
  for (const row of generation.receipts.values()) {
    receipts.clientIds.push(row.clientId);
    receipts.seqs.push(row.seq);
    receipts.ts.push(row.ts);
    receipts.results.push(row.result);
  }
  return { documents, indexEntries, receipts, meta: metaParameters({ ...generation.meta, minReadableTs }) };
}
