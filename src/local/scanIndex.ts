import { compareBytes, type DocumentId, successorKey, type DocumentRevision, keyString } from "../model/index.js";
import { newestEntry, type Overlay } from "./Overlay.js";
import { FilePager } from "./FilePager.js";
import type { ScanRow, Statements } from "./statements.js";

/**
 * An index scan over the overlay and the file together (see Overlay's invariants): per
 * key, a version in the overlay at or below the read ts decides; otherwise the file's
 * newest live entry does. Each chosen entry is joined to its document the same way (the
 * overlay's revision if it has one at or below ts, else the file's). Entries whose
 * document is missing or deleted at ts are dangling: skipped and counted.
 */
export interface ScanRequest {
  readonly indexId: number;
  readonly start: Uint8Array;
  readonly end: Uint8Array | null;
  readonly ts: number;
  readonly order: "asc" | "desc";
  readonly limit: number;
}

export interface ScannedRow {
  readonly key: Uint8Array;
  readonly id: DocumentId;
  readonly value: string;
  readonly docTs: number;
}

export interface ScanResult {
  readonly rows: ScannedRow[];
  readonly dangling: number;
}

/** The file's live entries of the requested range (joined to the file's documents), a page at a time. */
function filePages(statements: Statements, request: ScanRequest): FilePager<Uint8Array, ScanRow> {
  const { indexId, ts, order } = request;
  const scans = order === "asc" ? statements.scanAscending : statements.scanDescending;
  const fetch = (start: Uint8Array, end: Uint8Array | null, limit: number): ScanRow[] =>
    end === null ? scans.unbounded.all({ indexId, start, ts, limit }) : scans.bounded.all({ indexId, start, end, ts, limit });
  const keys = { fetch, keyOf: (row: ScanRow) => row.key, after: successorKey, isEmpty: (start: Uint8Array, end: Uint8Array) => compareBytes(start, end) >= 0 };
  return new FilePager(keys, request.start, request.end, order, Math.max(request.limit, 16));
}

export function scanIndex(
  overlay: Overlay,
  statements: Statements,
  /** The file's newest revision of a document at or below ts. */
  fileDocument: (id: string, ts: number) => { value: string | null; ts: number } | undefined,
  request: ScanRequest,
): ScanResult {
  const { indexId, ts, order, limit } = request;
  const rows: ScannedRow[] = [];
  let dangling = 0;
  const file = filePages(statements, request);
  const overlayEntries = overlay.entries(indexId, keyString(request.start), request.end === null ? null : keyString(request.end), order);
  let overlayNext = overlayEntries.next();
  const before = (left: string, right: string) => (order === "asc" ? left < right : left > right);

  const push = (key: Uint8Array, docId: string, document: { value: string | null; ts: number } | undefined) => {
    if (document === undefined || document.value === null) {
      dangling++;
      return;
    }
    rows.push({ key, id: docId as DocumentId, value: document.value, docTs: document.ts });
  };
  const overlayDocument = (id: string): DocumentRevision | undefined => overlay.document(id, ts);

  while (rows.length < limit) {
    const fileRow = file.peek();
    const fileKey = fileRow === undefined ? undefined : keyString(fileRow.key);
    if (overlayNext.done === true) {
      if (fileRow === undefined) break;
      file.advance();
      const revision = overlayDocument(fileRow.doc_id);
      push(fileRow.key, fileRow.doc_id, revision ?? (fileRow.doc_ts === null ? undefined : { value: fileRow.value, ts: fileRow.doc_ts }));
      continue;
    }
    const entry = overlayNext.value;
    if (fileKey !== undefined && before(fileKey, entry.key)) {
      file.advance();
      const revision = overlayDocument(fileRow!.doc_id);
      push(fileRow!.key, fileRow!.doc_id, revision ?? (fileRow!.doc_ts === null ? undefined : { value: fileRow!.value, ts: fileRow!.doc_ts }));
      continue;
    }
    overlayNext = overlayEntries.next();
    const version = newestEntry(entry, ts);
    if (version === undefined) continue; // Only newer versions here: the file decides this key.
    if (fileKey === entry.key) file.advance(); // The overlay's version is newer than the file's.
    if (version.docId === null) continue; // Removed at ts.
    const revision = overlayDocument(version.docId);
    // A copy, as a Buffer like the file's keys: callers get one type, and cannot reach into the overlay.
    push(Buffer.from(version.key), version.docId, revision ?? fileDocument(version.docId, ts));
  }
  return { rows, dangling };
}
