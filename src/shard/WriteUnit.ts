import { CairnError, DOCUMENT_BYTES_MAX } from "../base/index.js";
import { type DocumentId, type ClientReceipt, type DocumentRevision, type IndexUpdate, keyString, ROUTE_BYTES } from "../model/index.js";
import type { RecordBatch } from "../segments/index.js";
import type { PendingStamp } from "./PendingDocuments.js";

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
  /**
   * The revision this write replaces is a pending one, read through a PendingView (prevTs
   * is null then): its ts, once the writer stamps it, becomes this revision's prevTs.
   */
  readonly prevPending?: PendingStamp;
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
  /** The route of the mutation's shardBy value; null without shardBy (see ClientReceipt). */
  readonly route: Uint8Array | null;
  /** Who wrote it; see ClientReceipt.owner. */
  readonly owner?: string;
  /** The client's floor (its ackedThrough + 1) when it sent the mutation; see ClientReceipt.floorSeq. */
  readonly floorSeq?: number;
}

/** A key a unit wrote, as seen by optimistic-concurrency checks. */
export type WrittenKey =
  | { readonly kind: "document"; readonly tableNumber: number; readonly id: DocumentId }
  | {
      readonly kind: "index";
      readonly indexId: number;
      readonly key: Uint8Array;
      /** `keyString(key)`, made once: the written-key indexes hash and order keys by it (four times per key a unit writes). */
      readonly name: string;
    }
  | { readonly kind: "receipt"; readonly clientId: string; readonly seq: number };

/**
 * What a transaction read, for the optimistic-concurrency check (DESIGN.md §7): documents
 * fetched by id, and index ranges scanned (start <= key < end; end null: to the end of
 * the index), as tight as what was actually scanned.
 */
export interface ReadSet {
  readonly documents?: readonly DocumentId[];
  readonly indexRanges?: readonly { readonly indexId: number; readonly start: Uint8Array; readonly end: Uint8Array | null }[];
  /**
   * Receipts whose absence the transaction relied on: a mutation with `(clientId, seq)`
   * runs only because no receipt of that key existed at readTs, so another commit of the
   * same key after it (a duplicate sent elsewhere) makes it conflict, re-run, and find
   * the receipt, instead of applying twice.
   */
  readonly receipts?: readonly { readonly clientId: string; readonly seq: number }[];
}

export interface WriteUnit {
  /** The snapshot the transaction read; writes committed after it are checked against its reads. */
  readonly readTs: number;
  readonly documents: readonly DocumentWrite[];
  readonly indexWrites: readonly IndexWrite[];
  readonly receipt?: ReceiptWrite;
  /**
   * Serializability (DESIGN.md §7): what the transaction read. A write committed after
   * `readTs`, or queued ahead of this unit, that touches it makes the commit fail with
   * WRITE_CONFLICT. Checked through an index of written keys, in time proportional to
   * the read set. Omitted for blind writes.
   */
  readonly readSet?: ReadSet;
  /**
   * The same check as a predicate over each written key, for reads a ReadSet cannot
   * describe. It is called for every write since `readTs` (O(writes), where readSet is
   * O(reads)): use it for small loads and tests.
   */
  readonly conflictsWith?: (key: WrittenKey) => boolean;
  /**
   * The transaction read the writer's pending state (PendingView.token): its reads by id
   * saw the units queued up to `through` as well as the store at readTs. Checked against
   * writes after that unit instead of after readTs; refused (WRITE_CONFLICT) once the
   * writer is no longer in `epoch`, since the units it read may have failed.
   */
  readonly pendingRead?: PendingReadToken;
}

/** What a transaction that read a writer's pending state commits with (see WriteUnit.pendingRead). */
export interface PendingReadToken {
  readonly through: number;
  readonly epoch: number;
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
  if (unit.receipt) bytes += 48 + ROUTE_BYTES + (unit.receipt.clientId.length + unit.receipt.result.length + (unit.receipt.owner?.length ?? 0)) * 3;
  return bytes;
}

export function writtenKeys(unit: WriteUnit): WrittenKey[] {
  const keys: WrittenKey[] = [
    ...unit.documents.map((write): WrittenKey => ({ kind: "document", tableNumber: write.tableNumber, id: write.id })),
    ...unit.indexWrites.map((write): WrittenKey => ({ kind: "index", indexId: write.indexId, key: write.key, name: keyString(write.key) })),
  ];
  if (unit.receipt !== undefined) keys.push({ kind: "receipt", clientId: unit.receipt.clientId, seq: unit.receipt.seq });
  return keys;
}

/**
 * Rejects a malformed unit before it is queued, so a bad write never reaches the log:
 * the unit's shape (plain values of the documented types, no TypeErrors later), its
 * size, and `prevTs <= readTs` (a write replaces a revision the transaction read, so the
 * commit ts, above readTs, is always above it). The records themselves are checked by
 * the local store's own apply validator (LocalStore.checkApplicable) in `commit`.
 */
export function validateWriteUnit(unit: WriteUnit, unitBytesMax: number): void {
  if (typeof unit !== "object" || unit === null) throw invalidUnit("a write unit must be an object");
  if (!Number.isSafeInteger(unit.readTs) || unit.readTs < 0) {
    throw invalidUnit(`readTs must be a non-negative integer, got ${String(unit.readTs)}`);
  }
  if (!Array.isArray(unit.documents) || !Array.isArray(unit.indexWrites)) {
    throw invalidUnit("documents and indexWrites must be arrays");
  }
  if (unit.conflictsWith !== undefined && typeof unit.conflictsWith !== "function") {
    throw invalidUnit("conflictsWith must be a function when given");
  }
  if (unit.readSet !== undefined) checkReadSet(unit.readSet);
  if (unit.pendingRead !== undefined) {
    const token = unit.pendingRead;
    if (typeof token !== "object" || token === null || !Number.isSafeInteger(token.through) || !Number.isSafeInteger(token.epoch)) {
      throw invalidUnit("pendingRead must be a PendingView's token");
    }
  }
  if (unit.documents.length === 0 && unit.indexWrites.length === 0 && unit.receipt === undefined) {
    throw invalidUnit("a write unit must write something");
  }
  unit.documents.forEach((write, index) => checkDocumentWrite(write, index, unit.readTs));
  unit.indexWrites.forEach((write, index) => checkIndexWrite(write, index));
  if (unit.receipt !== undefined) checkReceiptWrite(unit.receipt);
  const bytes = unitBytes(unit);
  if (bytes > unitBytesMax) {
    throw new CairnError("BATCH_TOO_LARGE", `a write unit of ~${bytes} bytes exceeds the limit of ${unitBytesMax}`, {
      details: { bytes, limit: unitBytesMax },
    });
  }
}

function checkDocumentWrite(write: DocumentWrite, index: number, readTs: number): void {
  const where = `documents[${index}]`;
  if (typeof write !== "object" || write === null) throw invalidUnit(`${where} must be an object`);
  if (!Number.isSafeInteger(write.tableNumber) || write.tableNumber < 0) {
    throw invalidUnit(`${where}.tableNumber must be a non-negative integer`);
  }
  if (typeof write.id !== "string") throw invalidUnit(`${where}.id must be a document id string`);
  if (write.value !== null && typeof write.value !== "string") throw invalidUnit(`${where}.value must be encoded JSON text or null`);
  if (write.value !== null && Buffer.byteLength(write.value, "utf8") > DOCUMENT_BYTES_MAX) {
    throw new CairnError("VALUE_TOO_LARGE", `document ${write.id} is larger than ${DOCUMENT_BYTES_MAX} bytes`);
  }
  if (write.prevTs !== null && !(Number.isSafeInteger(write.prevTs) && write.prevTs >= 0 && write.prevTs <= readTs)) {
    throw invalidUnit(`${where}.prevTs must be null or an integer in [0, readTs ${readTs}], got ${String(write.prevTs)}`);
  }
  if (write.prevPending !== undefined && (write.prevTs !== null || typeof write.prevPending !== "object" || write.prevPending === null)) {
    throw invalidUnit(`${where}.prevPending must be a pending revision's stamp, with prevTs null`);
  }
}

function checkIndexWrite(write: IndexWrite, index: number): void {
  const where = `indexWrites[${index}]`;
  if (typeof write !== "object" || write === null) throw invalidUnit(`${where} must be an object`);
  if (!Number.isSafeInteger(write.indexId) || write.indexId < 0) throw invalidUnit(`${where}.indexId must be a non-negative integer`);
  if (!(write.key instanceof Uint8Array)) throw invalidUnit(`${where}.key must be a Uint8Array`);
  if (write.docId !== null && typeof write.docId !== "string") throw invalidUnit(`${where}.docId must be a document id string or null`);
}

function checkReadSet(readSet: ReadSet): void {
  if (typeof readSet !== "object" || readSet === null) throw invalidUnit("readSet must be an object");
  const { documents = [], indexRanges = [], receipts = [] } = readSet;
  if (!Array.isArray(receipts) || receipts.some((receipt) => typeof receipt !== "object" || receipt === null || typeof receipt.clientId !== "string" || !Number.isSafeInteger(receipt.seq))) {
    throw invalidUnit("readSet.receipts must be an array of { clientId: string, seq: integer }");
  }
  if (!Array.isArray(documents) || documents.some((id) => typeof id !== "string")) {
    throw invalidUnit("readSet.documents must be an array of document id strings");
  }
  if (!Array.isArray(indexRanges)) throw invalidUnit("readSet.indexRanges must be an array");
  indexRanges.forEach((range, index) => {
    const where = `readSet.indexRanges[${index}]`;
    if (typeof range !== "object" || range === null) throw invalidUnit(`${where} must be an object`);
    if (!Number.isSafeInteger(range.indexId) || range.indexId < 0) throw invalidUnit(`${where}.indexId must be a non-negative integer`);
    if (!(range.start instanceof Uint8Array)) throw invalidUnit(`${where}.start must be a Uint8Array`);
    if (range.end !== null && !(range.end instanceof Uint8Array)) throw invalidUnit(`${where}.end must be a Uint8Array or null`);
  });
}

function checkReceiptWrite(receipt: ReceiptWrite): void {
  if (typeof receipt !== "object" || receipt === null) throw invalidUnit("receipt must be an object");
  const { clientId, seq, result, route, owner, floorSeq } = receipt;
  if (typeof clientId !== "string" || clientId.length === 0 || !Number.isSafeInteger(seq) || seq < 0) {
    throw invalidUnit("a receipt needs a non-empty clientId and a non-negative integer seq");
  }
  if (owner !== undefined && typeof owner !== "string") throw invalidUnit("a receipt's owner must be a string");
  if (floorSeq !== undefined && !(Number.isSafeInteger(floorSeq) && floorSeq >= 0 && floorSeq <= seq)) {
    throw invalidUnit("a receipt's floorSeq must be an integer from 0 to its seq");
  }
  if (typeof result !== "string") throw invalidUnit("a receipt's result must be JSON text");
  if (route !== null && !(route instanceof Uint8Array && route.byteLength === ROUTE_BYTES)) {
    throw invalidUnit(`a receipt's route must be null or a Uint8Array of ${ROUTE_BYTES} bytes`);
  }
}

function pendingPrevTs(write: DocumentWrite, ts: number): number {
  const prevTs = write.prevPending!.ts;
  // The unit it read was queued before this one, so it is stamped first, and lower.
  if (prevTs === null || prevTs >= ts) throw new CairnError("INTERNAL", `document ${write.id}: the pending revision it replaces was not stamped before it`);
  return prevTs;
}

function invalidUnit(reason: string): CairnError {
  return new CairnError("INVALID_ARGUMENT", `invalid write unit: ${reason}`);
}

/**
 * The unit's records at commit timestamp `ts`. A revision replacing a pending one takes
 * its stamp as prevTs; `provisional` (a check before the unit is queued) leaves it null.
 */
export function stampUnit(unit: WriteUnit, ts: number, provisional = false): RecordBatch {
  const revisions: DocumentRevision[] = unit.documents.map((write) => ({
    tableNumber: write.tableNumber,
    id: write.id,
    value: write.value,
    prevTs: write.prevPending === undefined || provisional ? write.prevTs : pendingPrevTs(write, ts),
    ts,
  }));
  const indexUpdates: IndexUpdate[] = unit.indexWrites.map((write) => ({ ...write, ts }));
  const receipts: ClientReceipt[] = unit.receipt ? [{ ...unit.receipt, ts }] : [];
  return { revisions, indexUpdates, receipts };
}
