import { compareUtf8, type DocumentId } from "../model/index.js";
import type { Overlay } from "./Overlay.js";
import { FilePager } from "./FilePager.js";
import type { DocumentScanRow, Statements } from "./statements.js";

/**
 * A table's documents in id order at a read ts, over the overlay and the file together
 * (see Overlay's invariants): per id, a revision in the overlay at or below ts decides;
 * otherwise the file's newest live revision does. What the functions layer serves its
 * `by_id` index from: ids are the table keyspace's keys, so no index entry is stored.
 */
export interface DocumentScanRequest {
  readonly tableNumber: number;
  /** Ids as text: start <= id < end (end null: unbounded). */
  readonly start: string;
  readonly end: string | null;
  readonly ts: number;
  readonly order: "asc" | "desc";
  readonly limit: number;
}

export interface ScannedDocument {
  readonly id: DocumentId;
  readonly value: string;
  readonly docTs: number;
}

/** The file's live documents of the requested table and id range, a page at a time. */
function filePages(statements: Statements, request: DocumentScanRequest): FilePager<string, DocumentScanRow> {
  const { tableNumber, ts, order } = request;
  const scans = order === "asc" ? statements.documentsAscending : statements.documentsDescending;
  const fetch = (start: string, end: string | null, limit: number): DocumentScanRow[] =>
    end === null ? scans.unbounded.all({ tableNumber, start, ts, limit }) : scans.bounded.all({ tableNumber, start, end, ts, limit });
  const keys = { fetch, keyOf: (row: DocumentScanRow) => row.id, after: (id: string) => `${id}\u0000`, isEmpty: (start: string, end: string) => compareUtf8(start, end) >= 0 };
  return new FilePager(keys, request.start, request.end, order, Math.max(request.limit, 16));
}

export function scanDocuments(overlay: Overlay, statements: Statements, request: DocumentScanRequest): ScannedDocument[] {
  const { tableNumber, ts, order, limit } = request;
  const rows: ScannedDocument[] = [];
  const file = filePages(statements, request);
  const overlayIds = overlay.documentIds(tableNumber, request.start, request.end, order);
  let overlayNext = overlayIds.next();
  const before = (left: string, right: string) => (order === "asc" ? left < right : left > right);
  while (rows.length < limit) {
    const fileRow = file.peek();
    if (overlayNext.done === true || (fileRow !== undefined && before(fileRow.id, overlayNext.value))) {
      // The overlay holds nothing of this id: the file decides.
      if (fileRow === undefined) break;
      file.advance();
      rows.push({ id: fileRow.id as DocumentId, value: fileRow.value, docTs: fileRow.ts });
      continue;
    }
    const id = overlayNext.value;
    overlayNext = overlayIds.next();
    const fromFile = fileRow !== undefined && fileRow.id === id ? fileRow : undefined;
    if (fromFile !== undefined) file.advance();
    const revision = overlay.document(id, ts);
    if (revision === undefined) {
      // Only newer revisions in the overlay: the file's (live) one, if any, is the answer.
      if (fromFile !== undefined) rows.push({ id: id as DocumentId, value: fromFile.value, docTs: fromFile.ts });
      continue;
    }
    if (revision.value !== null) rows.push({ id: id as DocumentId, value: revision.value, docTs: revision.ts });
  }
  return rows;
}
