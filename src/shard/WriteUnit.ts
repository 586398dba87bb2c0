import { CairnError } from "../base/errors.js";
import { DOCUMENT_BYTES_MAX } from "../base/limits.js";
import { documentIdOfTable, type DocumentId } from "../model/DocumentId.js";
import { validateIndexKey } from "../model/IndexKey.js";
import type { RecordBatch } from "../segments/recordCodec.js";
import type { ClientReceipt, DocumentRevision, IndexUpdate } from "../model/Revision.js";

/**
 * What the functions layer hands the shard engine: one transaction's writes, computed
 * against the snapshot at `readTs`, without a timestamp yet (the engine stamps it when
 * the batch is flushed).
 */
export interface DocumentWrite {
  readonly tableNumber: number;
  readonly id: DocumentId;
  /** Encoded document text; null deletes the document. */
  readonly value: string | null;
  /** Timestamp of the revision this write replaces (what the transaction read). */
  readonly prevTs: number | null;
}

export interface IndexWrite {
  readonly indexId: number;
  readonly key: Uint8Array;
  readonly docId: DocumentId | null;
}

export interface ReceiptWrite {
  readonly clientId: string;
  readonly seq: number;
  readonly result: string;
}

/** A key a unit wrote, as seen by optimistic-concurrency checks. */
export type WrittenKey =
  | { readonly kind: "document"; readonly tableNumber: number; readonly id: DocumentId }
  | { readonly kind: "index"; readonly indexId: number; readonly key: Uint8Array };

export interface WriteUnit {
  /** The snapshot the transaction read; writes committed after it are checked against its reads. */
  readonly readTs: number;
  readonly documents: readonly DocumentWrite[];
  readonly indexWrites: readonly IndexWrite[];
  readonly receipt?: ReceiptWrite;
  /**
   * Serializability (DESIGN.md §7): whether a write committed or queued after `readTs`
   * invalidates what this transaction read. Omitted for blind writes.
   */
  readonly conflictsWith?: (key: WrittenKey) => boolean;
}

export interface CommitResult {
  readonly ts: number;
  readonly seqno: number;
}

/** Bytes a unit adds to a segment, before compression (a close upper estimate). */
export function unitBytes(unit: WriteUnit): number {
  let bytes = 16;
  for (const write of unit.documents) bytes += 48 + write.id.length + (write.value?.length ?? 0) * 3;
  for (const write of unit.indexWrites) bytes += 48 + write.key.byteLength + (write.docId?.length ?? 0);
  if (unit.receipt) bytes += 32 + unit.receipt.clientId.length * 3 + unit.receipt.result.length * 3;
  return bytes;
}

export function writtenKeys(unit: WriteUnit): WrittenKey[] {
  return [
    ...unit.documents.map((write): WrittenKey => ({ kind: "document", tableNumber: write.tableNumber, id: write.id })),
    ...unit.indexWrites.map((write): WrittenKey => ({ kind: "index", indexId: write.indexId, key: write.key })),
  ];
}

/** Rejects a malformed unit before it is queued, so a bad write never reaches the log. */
export function validateWriteUnit(unit: WriteUnit, unitBytesMax: number): void {
  if (!Number.isSafeInteger(unit.readTs) || unit.readTs < 0) {
    throw new CairnError("INVALID_ARGUMENT", `readTs must be a non-negative integer, got ${unit.readTs}`);
  }
  if (unit.documents.length === 0 && unit.indexWrites.length === 0 && unit.receipt === undefined) {
    throw new CairnError("INVALID_ARGUMENT", "a write unit must write something");
  }
  for (const write of unit.documents) {
    documentIdOfTable(write.id, write.tableNumber);
    if (write.value !== null && Buffer.byteLength(write.value, "utf8") > DOCUMENT_BYTES_MAX) {
      throw new CairnError("VALUE_TOO_LARGE", `document ${write.id} is larger than ${DOCUMENT_BYTES_MAX} bytes`);
    }
    if (write.prevTs !== null && (!Number.isSafeInteger(write.prevTs) || write.prevTs < 0)) {
      throw new CairnError("INVALID_ARGUMENT", `prevTs of ${write.id} must be a non-negative integer or null`);
    }
  }
  for (const write of unit.indexWrites) {
    if (!Number.isSafeInteger(write.indexId) || write.indexId < 0) {
      throw new CairnError("INVALID_ARGUMENT", `index id must be a non-negative integer, got ${write.indexId}`);
    }
    validateIndexKey(write.key);
  }
  if (unit.receipt !== undefined) {
    const { clientId, seq } = unit.receipt;
    if (typeof clientId !== "string" || clientId.length === 0 || !Number.isSafeInteger(seq) || seq < 0) {
      throw new CairnError("INVALID_ARGUMENT", "a receipt needs a non-empty clientId and a non-negative integer seq");
    }
  }
  const bytes = unitBytes(unit);
  if (bytes > unitBytesMax) {
    throw new CairnError("BATCH_TOO_LARGE", `a write unit of ~${bytes} bytes exceeds the limit of ${unitBytesMax}`, {
      details: { bytes, limit: unitBytesMax },
    });
  }
}

/** The unit's records at commit timestamp `ts`. */
export function stampUnit(unit: WriteUnit, ts: number): RecordBatch {
  const revisions: DocumentRevision[] = unit.documents.map((write) => ({ ...write, ts }));
  const indexUpdates: IndexUpdate[] = unit.indexWrites.map((write) => ({ ...write, ts }));
  const receipts: ClientReceipt[] = unit.receipt ? [{ ...unit.receipt, ts }] : [];
  return { revisions, indexUpdates, receipts };
}
