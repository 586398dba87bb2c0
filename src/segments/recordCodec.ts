import { type DocumentId, type ClientReceipt, type DocumentRevision, type IndexUpdate, ROUTE_BYTES } from "../model/index.js";
import { ByteReader, ByteWriter } from "./ByteWriter.js";

/**
 * Binary encoding of the records a segment or snapshot part carries. Values stay the
 * JSON text the model produced (no re-parse on the hot path); ids and keys are checked
 * by the local store when applied.
 *
 * Record layout (tag byte first):
 *   1 revision: varuint table, string id, varuint ts, varuint prevTs+1 (0 = none),
 *     u8 hasValue, [string value]
 *   2 index update: varuint indexId, bytes key, varuint ts, u8 hasDoc, [string docId]
 *   3 receipt (read only, written before receipts had routes): string clientId,
 *     varuint seq, varuint ts, string result; decodes with route null
 *   4 receipt with route: string clientId, varuint seq, varuint ts, string result,
 *     bytes route (ROUTE_BYTES bytes, or empty for null); decodes without an owner
 *   5 receipt with owner: the fields of 4, then string owner, varuint floorSeq (0 = none)
 *
 * A receipt without an owner is written as tag 4, one with an owner as tag 5.
 */
export interface RecordBatch {
  readonly revisions: readonly DocumentRevision[];
  readonly indexUpdates: readonly IndexUpdate[];
  readonly receipts: readonly ClientReceipt[];
}

export const EMPTY_RECORD_BATCH: RecordBatch = { revisions: [], indexUpdates: [], receipts: [] };

const TAG_REVISION = 1;
const TAG_INDEX_UPDATE = 2;
const TAG_RECEIPT_WITHOUT_ROUTE = 3;
const TAG_RECEIPT = 4;
const TAG_OWNED_RECEIPT = 5;
const NO_ROUTE = new Uint8Array(0);

export function encodeRecords(batch: RecordBatch, writer = new ByteWriter()): Buffer {
  for (const revision of batch.revisions) writeRevision(writer, revision);
  for (const update of batch.indexUpdates) writeIndexUpdate(writer, update);
  for (const receipt of batch.receipts) writeReceipt(writer, receipt);
  return writer.finish();
}

export function writeRevision(writer: ByteWriter, revision: DocumentRevision): void {
  writer.u8(TAG_REVISION);
  writer.varuint(revision.tableNumber);
  writer.string(revision.id);
  writer.varuint(revision.ts);
  writer.varuint(revision.prevTs === null ? 0 : revision.prevTs + 1);
  if (revision.value === null) {
    writer.u8(0);
  } else {
    writer.u8(1);
    writer.string(revision.value);
  }
}

export function writeIndexUpdate(writer: ByteWriter, update: IndexUpdate): void {
  writer.u8(TAG_INDEX_UPDATE);
  writer.varuint(update.indexId);
  writer.bytes(update.key);
  writer.varuint(update.ts);
  if (update.docId === null) {
    writer.u8(0);
  } else {
    writer.u8(1);
    writer.string(update.docId);
  }
}

export function writeReceipt(writer: ByteWriter, receipt: ClientReceipt): void {
  const owned = receipt.owner !== undefined;
  writer.u8(owned ? TAG_OWNED_RECEIPT : TAG_RECEIPT);
  writer.string(receipt.clientId);
  writer.varuint(receipt.seq);
  writer.varuint(receipt.ts);
  writer.string(receipt.result);
  writer.bytes(receipt.route ?? NO_ROUTE);
  if (owned) {
    writer.string(receipt.owner!);
    writer.varuint(receipt.floorSeq ?? 0);
  }
}

/**
 * Decodes records; throws RangeError on malformed input (callers add context).
 * `viewBytes`: keys and routes are views into `payload` (ByteReader), for rows that are
 * consumed and dropped (a snapshot part's) rather than kept (a segment's, in an overlay).
 */
export function decodeRecords(payload: Buffer, options: { readonly viewBytes?: boolean } = {}): RecordBatch {
  const reader = new ByteReader(payload, options.viewBytes ?? false);
  const revisions: DocumentRevision[] = [];
  const indexUpdates: IndexUpdate[] = [];
  const receipts: ClientReceipt[] = [];
  while (!reader.done) {
    const tag = reader.u8();
    switch (tag) {
      case TAG_REVISION:
        revisions.push(readRevision(reader));
        break;
      case TAG_INDEX_UPDATE:
        indexUpdates.push(readIndexUpdate(reader));
        break;
      case TAG_RECEIPT_WITHOUT_ROUTE:
      case TAG_RECEIPT:
      case TAG_OWNED_RECEIPT:
        receipts.push(readReceipt(reader, tag));
        break;
      default:
        throw new RangeError(`unknown record tag ${tag}`);
    }
  }
  return { revisions, indexUpdates, receipts };
}

function readRevision(reader: ByteReader): DocumentRevision {
  const tableNumber = reader.varuint();
  const id = reader.string() as DocumentId;
  const ts = reader.varuint();
  const prevTsPlusOne = reader.varuint();
  const value = readFlag(reader) ? reader.string() : null;
  return { tableNumber, id, ts, value, prevTs: prevTsPlusOne === 0 ? null : prevTsPlusOne - 1 };
}

function readIndexUpdate(reader: ByteReader): IndexUpdate {
  const indexId = reader.varuint();
  const key = reader.bytes();
  const ts = reader.varuint();
  const docId = readFlag(reader) ? (reader.string() as DocumentId) : null;
  return { indexId, key, ts, docId };
}

function readReceipt(reader: ByteReader, tag: number): ClientReceipt {
  const clientId = reader.string();
  const seq = reader.varuint();
  const ts = reader.varuint();
  const result = reader.string();
  const route = tag === TAG_RECEIPT_WITHOUT_ROUTE ? null : readRoute(reader);
  if (tag !== TAG_OWNED_RECEIPT) return { clientId, seq, ts, result, route };
  const owner = reader.string();
  const floorSeq = reader.varuint();
  return floorSeq === 0 ? { clientId, seq, ts, result, route, owner } : { clientId, seq, ts, result, route, owner, floorSeq };
}

function readRoute(reader: ByteReader): Uint8Array | null {
  const route = reader.bytes();
  if (route.byteLength === 0) return null;
  if (route.byteLength !== ROUTE_BYTES) throw new RangeError(`a receipt's route has ${ROUTE_BYTES} bytes, not ${route.byteLength}`);
  return route;
}

function readFlag(reader: ByteReader): boolean {
  const flag = reader.u8();
  if (flag > 1) throw new RangeError(`invalid presence flag ${flag}`);
  return flag === 1;
}

/**
 * Walks encoded records without decoding them (but receipts): per record its kind, its
 * byte range and where its key lies, so that a merge can compare keys and copy runs of
 * records as they are (a restore's MergedDump). Throws RangeError on malformed input.
 */
export class RecordScanner {
  /** The current record's kind (after `next()` returned true). */
  kind: "documents" | "indexEntries" | "receipts" = "documents";
  /** The current record's bytes: [start, end) of the payload. */
  start = 0;
  end = 0;
  /** A revision's id (its UTF-8 bytes) or an index update's key: [keyStart, keyEnd). */
  keyStart = 0;
  keyEnd = 0;
  /** An index update's index. */
  indexId = 0;
  /** The current receipt, decoded (receipts are few, and a merge needs their owner and floor). */
  receipt: ClientReceipt | null = null;
  private readonly reader: ByteReader;

  constructor(readonly payload: Buffer) {
    this.reader = new ByteReader(payload, true);
  }

  /** Moves to the next record; false at the end. */
  next(): boolean {
    const reader = this.reader;
    if (reader.done) return false;
    this.start = reader.position;
    const tag = reader.u8();
    switch (tag) {
      case TAG_REVISION:
        this.kind = "documents";
        reader.varuint();
        this.keyStart = reader.skipBytes();
        this.keyEnd = reader.position;
        reader.varuint();
        reader.varuint();
        if (readFlag(reader)) reader.skipBytes();
        break;
      case TAG_INDEX_UPDATE:
        this.kind = "indexEntries";
        this.indexId = reader.varuint();
        this.keyStart = reader.skipBytes();
        this.keyEnd = reader.position;
        reader.varuint();
        if (readFlag(reader)) reader.skipBytes();
        break;
      case TAG_RECEIPT_WITHOUT_ROUTE:
      case TAG_RECEIPT:
      case TAG_OWNED_RECEIPT:
        this.kind = "receipts";
        this.receipt = readReceipt(reader, tag);
        break;
      default:
        throw new RangeError(`unknown record tag ${tag}`);
    }
    this.end = reader.position;
    return true;
  }
}
