import { CairnError, LOCAL_DUMP_CHUNK_BYTES_MAX, LOCAL_DUMP_ROWS_PER_CHUNK } from "../base/index.js";
import type { DocumentId, ClientReceipt, DocumentRevision, IndexUpdate } from "../model/index.js";
import { type LocalMeta, readMeta } from "./LocalMeta.js";
import type { SqliteDatabase } from "./schema.js";
import { RECEIPT_COLUMNS, receiptOfRow, type DocumentRow, type IndexEntryRow, type ReceiptRow } from "./statements.js";

/**
 * A point-in-time dump of a shard's current state, in bounded chunks: every document's
 * newest revision unless it is a deletion, every index key's newest entry unless it is a
 * removal (both included with `includeRemovals`), and every receipt. Documents come
 * first, then index entries, then receipts, each in the order of its SQLite key: ids and
 * client ids by their UTF-8 bytes, index keys by their bytes (see restore's MergedDump).
 *
 * Invariants:
 * - Every chunk reflects the same instant, the one `meta` describes, however long the
 *   caller takes and whatever is applied to the store meanwhile: the cursor reads a
 *   private connection holding one read transaction (WAL), or a private in-memory copy.
 * - A chunk holds at most `rowsPerChunk` rows and, unless a single row is larger, at most
 *   LOCAL_DUMP_CHUNK_BYTES_MAX bytes of values; rows are streamed, never loaded at once.
 */
export type DumpChunk =
  | { readonly kind: "documents"; readonly rows: readonly DocumentRevision[] }
  | { readonly kind: "indexEntries"; readonly rows: readonly IndexUpdate[] }
  | { readonly kind: "receipts"; readonly rows: readonly ClientReceipt[] };

export interface DumpCursor {
  /** The state the dump reflects (appliedSeqno etc.). */
  readonly meta: LocalMeta;
  /** The next chunk, or null at the end. */
  next(): DumpChunk | null;
  /** Ends the read transaction and releases the connection; idempotent. */
  close(): void;
}

export interface DumpCursorOptions {
  readonly rowsPerChunk?: number;
  /**
   * Also yield a deletion (value null) for a document whose newest revision deletes it,
   * and a removal (docId null) for an index key whose newest entry removes it: a dump of
   * changes, to overlay on an older state (a restore's replay of the log after its base
   * snapshot). Default false: current state only.
   */
  readonly includeRemovals?: boolean;
}

interface Phase {
  readonly kind: DumpChunk["kind"];
  readonly sql: string;
  /** The record for a row with its share of the byte budget, or null for a removal a dump of current state leaves out. */
  readonly toRecord: (row: unknown, includeRemovals: boolean) => { readonly record: object; readonly bytes: number } | null;
}

/** Per-row overhead in the byte budget: ids, numbers and object headers. */
const ROW_OVERHEAD_BYTES = 64;

/** A row's share of a chunk's byte budget (LOCAL_DUMP_CHUNK_BYTES_MAX): what any producer of dump chunks counts. */
export function dumpRowBytes(kind: DumpChunk["kind"], row: DumpChunk["rows"][number]): number {
  switch (kind) {
    case "documents":
      return ROW_OVERHEAD_BYTES + ((row as DocumentRevision).value?.length ?? 0);
    case "indexEntries":
      return ROW_OVERHEAD_BYTES + (row as IndexUpdate).key.length;
    case "receipts": {
      const receipt = row as ClientReceipt;
      return ROW_OVERHEAD_BYTES + receipt.clientId.length + receipt.result.length + (receipt.owner?.length ?? 0);
    }
  }
}

const PHASES: readonly Phase[] = [
  {
    kind: "documents",
    // One row per id: with a single max() SQLite takes the other columns from that row.
    sql: `SELECT table_number, id, MAX(ts) AS ts, value, prev_ts FROM documents GROUP BY id ORDER BY id`,
    toRecord: (row, includeRemovals) => {
      const { table_number, id, ts, value, prev_ts } = row as DocumentRow;
      if (value === null && !includeRemovals) return null;
      const record: DocumentRevision = { tableNumber: table_number, id: id as DocumentId, ts, value, prevTs: prev_ts };
      return { record, bytes: dumpRowBytes("documents", record) };
    },
  },
  {
    kind: "indexEntries",
    sql: `SELECT index_id, key, MAX(ts) AS ts, doc_id FROM index_entries GROUP BY index_id, key ORDER BY index_id, key`,
    toRecord: (row, includeRemovals) => {
      const { index_id, key, ts, doc_id } = row as IndexEntryRow;
      if (doc_id === null && !includeRemovals) return null;
      const record: IndexUpdate = { indexId: index_id, key, ts, docId: doc_id as DocumentId | null };
      return { record, bytes: dumpRowBytes("indexEntries", record) };
    },
  },
  {
    kind: "receipts",
    sql: `SELECT ${RECEIPT_COLUMNS} FROM receipts ORDER BY client_id, seq`,
    toRecord: (row) => {
      const record: ClientReceipt = receiptOfRow(row as ReceiptRow);
      return { record, bytes: dumpRowBytes("receipts", record) };
    },
  },
];

/**
 * A cursor over `db`, which it owns and closes. `db` must be private to the cursor; for
 * a shared file, a read-only connection: the cursor opens its read transaction here.
 */
export class SqliteDumpCursor implements DumpCursor {
  readonly meta: LocalMeta;
  private readonly rowsPerChunk: number;
  private readonly includeRemovals: boolean;
  private phaseIndex = 0;
  private rows: Iterator<unknown> | null = null;
  private closed = false;

  constructor(
    private readonly db: SqliteDatabase,
    options: DumpCursorOptions,
    private readonly onClose: () => void,
  ) {
    this.rowsPerChunk = options.rowsPerChunk ?? LOCAL_DUMP_ROWS_PER_CHUNK;
    this.includeRemovals = options.includeRemovals ?? false;
    try {
      // The first read after BEGIN fixes the snapshot every later chunk reads.
      db.exec("BEGIN");
      this.meta = readMeta(db);
    } catch (error) {
      db.close();
      throw error;
    }
  }

  next(): DumpChunk | null {
    if (this.closed) throw new CairnError("LOCAL_CLOSED", "dump cursor is closed");
    while (this.phaseIndex < PHASES.length) {
      const chunk = this.fill(PHASES[this.phaseIndex]!);
      if (chunk !== null) return chunk;
      this.phaseIndex++;
      this.rows = null;
    }
    return null;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.rows?.return?.();
    this.rows = null;
    this.db.close();
    this.onClose();
  }

  /** Up to one chunk of the phase's rows; null once the phase is exhausted. */
  private fill(phase: Phase): DumpChunk | null {
    this.rows ??= this.db.prepare(phase.sql).iterate();
    const records: object[] = [];
    let bytes = 0;
    while (records.length < this.rowsPerChunk && bytes < LOCAL_DUMP_CHUNK_BYTES_MAX) {
      const step = this.rows.next();
      if (step.done === true) break;
      const converted = phase.toRecord(step.value, this.includeRemovals);
      if (converted === null) continue;
      records.push(converted.record);
      bytes += converted.bytes;
    }
    if (records.length === 0) return null;
    return { kind: phase.kind, rows: records } as DumpChunk;
  }
}

export function validateDumpOptions(options: DumpCursorOptions): void {
  const rows = options.rowsPerChunk;
  if (rows !== undefined && !(Number.isSafeInteger(rows) && rows > 0)) {
    throw new CairnError("INVALID_ARGUMENT", `rowsPerChunk must be a positive integer, not ${String(rows)}`);
  }
}
