import { CairnError, FUNCTION_READ_ROWS_MAX } from "../base/index.js";
import {
  type DocumentId,
  documentKeyOfCanonical,
  indexKeyspace,
  isEmptyRange,
  keyRange,
  pointRange,
  tableKeyspace,
  type KeyRange,
  compareBytes,
} from "../model/index.js";
import type { ReadSet, WrittenKey } from "../shard/index.js";

/**
 * Everything one function run read, exactly (DESIGN.md §7): a point in a table's keyspace
 * per document read by id or returned by a scan, and the index range each scan covered,
 * tightened to the rows it returned. Subscriptions are matched against the KeyRanges; a
 * mutation's commit is checked against the same reads as a ReadSet.
 *
 * Why scanned documents are points too: a patch that leaves every indexed field alone
 * writes the document but no index key, and a query that returned the document depends
 * on its fields.
 */
export class ReadRecorder {
  private readonly documents = new Map<DocumentId, number>();
  private readonly indexRanges: { indexId: number; start: Uint8Array; end: Uint8Array | null }[] = [];
  private readonly tableRanges: { tableNumber: number; start: Uint8Array; end: Uint8Array | null }[] = [];
  private rowsRead = 0;
  private firstKey: string | null = null;

  document(tableNumber: number, id: DocumentId): void {
    this.firstKey ??= documentReadKey(id);
    this.documents.set(id, tableNumber);
  }

  indexRange(indexId: number, start: Uint8Array, end: Uint8Array | null): void {
    if (isEmptyRange({ keyspace: "", start, end })) return;
    this.firstKey ??= `index:${indexId}:${Buffer.from(start).toString("hex")}`;
    this.indexRanges.push({ indexId, start, end });
  }

  /** A scan of a table's documents in id order (the by_id index): a range of its table keyspace. */
  tableRange(tableNumber: number, start: Uint8Array, end: Uint8Array | null): void {
    if (isEmptyRange({ keyspace: "", start, end })) return;
    this.firstKey ??= `table:${tableNumber}:${Buffer.from(start).toString("hex")}`;
    this.tableRanges.push({ tableNumber, start, end });
  }

  /** Counts rows read from the store; FUNCTION_LIMIT_EXCEEDED past FUNCTION_READ_ROWS_MAX. */
  countRows(rows: number): void {
    this.rowsRead += rows;
    if (this.rowsRead > FUNCTION_READ_ROWS_MAX) {
      throw new CairnError("FUNCTION_LIMIT_EXCEEDED", `a function may read at most ${FUNCTION_READ_ROWS_MAX} rows; paginate or narrow the index range`, {
        details: { limit: FUNCTION_READ_ROWS_MAX },
      });
    }
  }

  /** What the run read first, as a string: the runtime queues re-runs that read the same thing first. */
  firstReadKey(): string | null {
    return this.firstKey;
  }

  get rows(): number {
    return this.rowsRead;
  }

  keyRanges(): KeyRange[] {
    const ranges: KeyRange[] = [];
    for (const [id, tableNumber] of this.documents) ranges.push(pointRange(tableKeyspace(tableNumber), documentKeyOfCanonical(id)));
    for (const range of this.indexRanges) ranges.push(keyRange(indexKeyspace(range.indexId), range.start, range.end));
    for (const range of this.tableRanges) ranges.push(keyRange(tableKeyspace(range.tableNumber), range.start, range.end));
    return ranges;
  }

  /**
   * Table-keyspace ranges read, as a predicate over written keys for the engine's check:
   * a ReadSet names documents and index ranges only. Null when there are none (almost
   * always); otherwise the engine calls it for each write since readTs (O(writes)).
   */
  documentRangeConflict(): ((key: WrittenKey) => boolean) | null {
    if (this.tableRanges.length === 0) return null;
    const ranges = this.tableRanges;
    return (key) =>
      key.kind === "document" &&
      ranges.some((range) => {
        if (range.tableNumber !== key.tableNumber) return false;
        const written = documentKeyOfCanonical(key.id);
        return compareBytes(range.start, written) <= 0 && (range.end === null || compareBytes(written, range.end) < 0);
      });
  }

  readSet(): ReadSet {
    return { documents: [...this.documents.keys()], indexRanges: this.indexRanges };
  }
}

/** What `firstReadKey` says when the first read was document `id` (the runtime's lanes of hot documents are keyed by it). */
export function documentReadKey(id: string): string {
  return `document:${id}`;
}
