import { CairnError, MUTATION_DOCUMENTS_MAX } from "../base/index.js";
import { bytesEqual, compareBytes, keyString, type DocumentId } from "../model/index.js";
import type { DocumentWrite, IndexWrite, PendingStamp } from "../shard/index.js";
import type { IndexInfo, TableInfo } from "./catalog.js";
import { encodeDocument, fieldAt, indexKeyOf, indexKeysOf, type DocumentObject } from "./documents.js";
import { idKeyBytes } from "./documentIdRange.js";

/**
 * A mutation's writes before commit, per document: what it read from the snapshot
 * (`before`, with the revision's ts) and what it will be (`after`; null: deleted). Reads
 * of the mutation see `after` (a mutation reads its own writes); the write unit holds
 * each document once, with the index entries that moved between `before` and `after`.
 */
export interface PendingDocument {
  readonly table: TableInfo;
  /** `ts` null: a revision the shard's writer has pending, whose ts `stamp` will hold. */
  readonly before: { readonly document: DocumentObject; readonly ts: number | null; readonly stamp?: PendingStamp } | null;
  after: DocumentObject | null;
  /** `after` encoded (null when deleted), computed when written so size errors surface at the call. */
  text: string | null;
}

export interface PendingRow {
  readonly key: Uint8Array;
  readonly document: DocumentObject;
}

export class PendingWrites {
  private readonly documents = new Map<DocumentId, PendingDocument>();

  get size(): number {
    return this.documents.size;
  }

  get(id: DocumentId): PendingDocument | undefined {
    return this.documents.get(id);
  }

  has(id: DocumentId): boolean {
    return this.documents.has(id);
  }

  /** Records `after` for a document; `before` is kept from the first write. */
  write(id: DocumentId, table: TableInfo, before: PendingDocument["before"], after: DocumentObject | null): void {
    const text = after === null ? null : encodeDocument(after);
    const existing = this.documents.get(id);
    if (existing !== undefined) {
      existing.after = after;
      existing.text = text;
      return;
    }
    if (this.documents.size >= MUTATION_DOCUMENTS_MAX) {
      throw new CairnError("FUNCTION_LIMIT_EXCEEDED", `a mutation may write at most ${MUTATION_DOCUMENTS_MAX} documents; split the work over several mutations`, {
        details: { limit: MUTATION_DOCUMENTS_MAX },
      });
    }
    this.documents.set(id, { table, before, after, text });
  }

  /** Live pending documents of `table` whose key in `index` lies in [start, end), in `order`. */
  rowsIn(table: TableInfo, index: IndexInfo, start: Uint8Array, end: Uint8Array | null, order: "asc" | "desc"): PendingRow[] {
    const rows: PendingRow[] = [];
    for (const pending of this.documents.values()) {
      if (pending.table !== table || pending.after === null) continue;
      const keys = index.kind === "documents" ? [idKeyBytes(pending.after._id)] : indexKeysOf(index, pending.after);
      for (const key of keys) {
        if (compareBytes(key, start) >= 0 && (end === null || compareBytes(key, end) < 0)) rows.push({ key, document: pending.after });
      }
    }
    rows.sort((left, right) => compareBytes(left.key, right.key));
    return order === "asc" ? rows : rows.reverse();
  }

  /** The unit's document writes and the index entries that moved; nothing for a document inserted and deleted again. */
  toWrites(): { documents: DocumentWrite[]; indexWrites: IndexWrite[] } {
    const documents: DocumentWrite[] = [];
    const indexWrites: IndexWrite[] = [];
    for (const [id, pending] of this.documents) {
      if (pending.before === null && pending.after === null) continue;
      const stamp = pending.before?.stamp;
      documents.push({ tableNumber: pending.table.number, id, value: pending.text, prevTs: pending.before?.ts ?? null, ...(stamp ? { prevPending: stamp } : {}) });
      for (const index of pending.table.indexes.values()) {
        if (index.kind === "documents") continue;
        if (index.kind === "search") {
          // Several keys per document: the terms that left and the ones that came.
          const oldKeys = pending.before === null ? [] : indexKeysOf(index, pending.before.document);
          const newKeys = pending.after === null ? [] : indexKeysOf(index, pending.after);
          const kept = new Set(oldKeys.map(keyString));
          const added = new Set(newKeys.map(keyString));
          for (const key of oldKeys) if (!added.has(keyString(key))) indexWrites.push({ indexId: index.id, key, docId: null });
          for (const key of newKeys) if (!kept.has(keyString(key))) indexWrites.push({ indexId: index.id, key, docId: id });
          continue;
        }
        // A revision keeps its id and creation time: with the same declared fields, the same key.
        if (pending.before !== null && pending.after !== null && sameFields(index, pending.before.document, pending.after)) continue;
        const oldKey = pending.before === null ? null : indexKeyOf(index, pending.before.document);
        const newKey = pending.after === null ? null : indexKeyOf(index, pending.after);
        if (oldKey !== null && newKey !== null && bytesEqual(oldKey, newKey)) continue;
        if (oldKey !== null) indexWrites.push({ indexId: index.id, key: oldKey, docId: null });
        if (newKey !== null) indexWrites.push({ indexId: index.id, key: newKey, docId: id });
      }
    }
    return { documents, indexWrites };
  }
}

/**
 * Whether two revisions of a document surely have the same key in `index`: its declared
 * fields hold the same scalars (the same to the bit: not -0 for 0, and no NaN, whose
 * bits may differ). Objects, arrays and bytes are not compared here: their keys are.
 */
function sameFields(index: IndexInfo, before: DocumentObject, after: DocumentObject): boolean {
  for (const path of index.fields) {
    const old = fieldAt(before, path);
    const now = fieldAt(after, path);
    if (typeof old === "object" && old !== null) return false;
    if (!Object.is(old, now) || Number.isNaN(old)) return false;
  }
  return true;
}
