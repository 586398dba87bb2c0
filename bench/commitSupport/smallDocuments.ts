import type { Random } from "../../src/base/random.js";
import { newDocumentId } from "../../src/model/DocumentId.js";
import { documentIndexKey } from "../../src/model/IndexKey.js";
import type { DocumentWrite, IndexWrite, WriteUnit } from "../../src/shard/WriteUnit.js";

/**
 * The benchmark's writes: blind inserts of small documents (~60 bytes of lossless JSON)
 * into table 1, optionally with one entry each in index 1 keyed by (n, createdAt, id),
 * as the functions layer would write them.
 */
export const BENCH_TABLE_NUMBER = 1;
export const BENCH_INDEX_ID = 1;

export interface SmallDocumentsOptions {
  readonly random: Random;
  /** Appears in every document, so that documents of different writers differ. */
  readonly label: string;
  readonly withIndex: boolean;
}

export function smallDocumentsUnit(options: SmallDocumentsOptions, readTs: number, count: number, firstN: number): WriteUnit {
  const documents: DocumentWrite[] = [];
  const indexWrites: IndexWrite[] = [];
  const createdAt = Date.now();
  for (let offset = 0; offset < count; offset++) {
    const id = newDocumentId(BENCH_TABLE_NUMBER, options.random);
    const n = firstN + offset;
    documents.push({ tableNumber: BENCH_TABLE_NUMBER, id, value: JSON.stringify({ label: options.label, n, createdAt }), prevTs: null });
    if (options.withIndex) indexWrites.push({ indexId: BENCH_INDEX_ID, key: documentIndexKey([n], createdAt, id), docId: id });
  }
  return { readTs, documents, indexWrites };
}
