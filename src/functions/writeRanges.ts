import { type DocumentId, documentKeyOfCanonical, indexKeyspace, pointRange, tableKeyspace, type KeyRange } from "../model/index.js";

/**
 * The keys a set of writes changed, as KeyRanges of the same keyspaces reads record: a
 * point per document in its table keyspace, a point per index entry in its index keyspace.
 * Takes a write unit's writes or a segment's records alike.
 */
export function writeRangesOf(
  documents: readonly { readonly tableNumber: number; readonly id: DocumentId }[],
  indexWrites: readonly { readonly indexId: number; readonly key: Uint8Array }[],
): KeyRange[] {
  return [
    ...documents.map((write) => pointRange(tableKeyspace(write.tableNumber), documentKeyOfCanonical(write.id))),
    ...indexWrites.map((write) => pointRange(indexKeyspace(write.indexId), write.key)),
  ];
}
