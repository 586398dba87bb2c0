import { compareUtf8 } from "../model/compareBytes.js";
import type { DocumentId } from "../model/DocumentId.js";
import type { Overlay } from "./Overlay.js";
import type { DocumentScanParameters, DocumentScanRow, Statements } from "./statements.js";

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

/** The file's side: pages of live documents, fetched as the merge needs them. */
class FileDocumentPages {
  private page: DocumentScanRow[] = [];
  private at = 0;
  private exhausted = false;
  private start: string;
  private end: string | null;

  constructor(
    private readonly statements: Statements,
    private readonly request: DocumentScanRequest,
    private readonly pageSize: number,
  ) {
    this.start = request.start;
    this.end = request.end;
  }

  peek(): DocumentScanRow | undefined {
    if (this.at < this.page.length) return this.page[this.at];
    if (this.exhausted) return undefined;
    this.fetch();
    return this.page[this.at];
  }

  advance(): void {
    this.at++;
  }

  private fetch(): void {
    const { tableNumber, ts, order } = this.request;
    if (this.end !== null && compareUtf8(this.start, this.end) >= 0) {
      this.exhausted = true;
      this.page = [];
      this.at = 0;
      return;
    }
    const statements = order === "asc" ? this.statements.documentsAscending : this.statements.documentsDescending;
    const parameters: DocumentScanParameters =
      this.end === null ? { tableNumber, start: this.start, ts, limit: this.pageSize } : { tableNumber, start: this.start, end: this.end, ts, limit: this.pageSize };
    this.page = this.end === null ? statements.unbounded.all(parameters) : statements.bounded.all(parameters);
    this.at = 0;
    if (this.page.length < this.pageSize) this.exhausted = true;
    else {
      const lastId = this.page[this.page.length - 1]!.id;
      if (order === "asc") this.start = `${lastId}\u0000`;
      else this.end = lastId;
    }
  }
}

export function scanDocuments(overlay: Overlay, statements: Statements, request: DocumentScanRequest): ScannedDocument[] {
  const { tableNumber, ts, order, limit } = request;
  const rows: ScannedDocument[] = [];
  const file = new FileDocumentPages(statements, request, Math.max(limit, 16));
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
