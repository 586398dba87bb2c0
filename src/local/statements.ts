import type { Statement } from "better-sqlite3";
import type { ClientReceipt } from "../model/index.js";
import type { FoldSql } from "./FoldJob.js";
import { UPDATE_META } from "./LocalMeta.js";
import { type MultiRowInsert, multiRowInsertSql, ROWS_PER_STATEMENT } from "./multiRowInsert.js";
import type { SqliteDatabase } from "./schema.js";

/**
 * Every statement the live store runs, prepared once per connection. SQLite re-prepares
 * a statement by itself when a restore swaps the tables underneath it.
 *
 * Reads at `ts` pick, per document and per index key, the newest row with `row.ts <= ts`
 * by one backwards seek on a primary key ending in `ts` (the correlated subqueries below
 * are those seeks). Scans join each index entry to its document at the same `ts` inside
 * the query: one statement per scan, never one per row.
 */

export interface DocumentRow {
  readonly table_number: number;
  readonly id: string;
  readonly ts: number;
  readonly value: string | null;
  readonly prev_ts: number | null;
}

export interface IndexEntryRow {
  readonly index_id: number;
  readonly key: Buffer;
  readonly ts: number;
  readonly doc_id: string | null;
}

export interface ReceiptRow {
  readonly client_id: string;
  readonly seq: number;
  readonly ts: number;
  readonly result: string;
  readonly route: Buffer | null;
  readonly owner: string | null;
  readonly floor_seq: number;
}

export interface ScanRow {
  readonly key: Buffer;
  readonly doc_id: string;
  /** Null when the entry's document is missing or deleted at the read ts (a dangling entry). */
  readonly doc_ts: number | null;
  readonly value: string | null;
}

export interface ScanParameters {
  readonly indexId: number;
  readonly start: Uint8Array;
  readonly end?: Uint8Array;
  readonly ts: number;
  readonly limit: number;
}

/** Scan statements of one order, by whether the range has an upper bound. */
interface ScanStatements<Parameters = ScanParameters, Row = ScanRow> {
  readonly bounded: Statement<[Parameters], Row>;
  readonly unbounded: Statement<[Parameters], Row>;
}

const LATEST_ENTRY = `e.ts = (SELECT ts FROM index_entries
  WHERE index_id = e.index_id AND key = e.key AND ts <= :ts ORDER BY ts DESC LIMIT 1)`;

const LATEST_DOCUMENT_OF_ENTRY = `(SELECT rowid FROM documents
  WHERE id = e.doc_id AND ts <= :ts ORDER BY ts DESC LIMIT 1)`;

function rangeCondition(bounded: boolean): string {
  return `e.index_id = :indexId AND e.key >= :start ${bounded ? "AND e.key < :end" : ""} AND e.ts <= :ts`;
}

function scanSql(order: "ASC" | "DESC", bounded: boolean): string {
  return `SELECT e.key AS key, e.doc_id AS doc_id, d.ts AS doc_ts, d.value AS value
    FROM index_entries AS e
    LEFT JOIN documents AS d ON d.rowid = ${LATEST_DOCUMENT_OF_ENTRY}
    WHERE ${rangeCondition(bounded)} AND ${LATEST_ENTRY} AND e.doc_id IS NOT NULL
    ORDER BY e.key ${order}
    LIMIT :limit`;
}

export interface DocumentScanRow {
  readonly id: string;
  readonly ts: number;
  readonly value: string;
}

export interface DocumentScanParameters {
  readonly tableNumber: number;
  readonly start: string;
  readonly end?: string;
  readonly ts: number;
  readonly limit: number;
}

/**
 * A table's live documents in id order at `ts`: one row per id, its newest revision at or
 * below ts, deletions left out. Ids are ASCII, so TEXT order (BINARY collation) is the
 * byte order of their keys; it walks documents_by_id (id, ts).
 */
function documentScanSql(order: "ASC" | "DESC", bounded: boolean): string {
  return `SELECT d.id AS id, d.ts AS ts, d.value AS value FROM documents AS d
    WHERE d.id >= :start ${bounded ? "AND d.id < :end" : ""} AND d.ts <= :ts
      AND d.ts = (SELECT ts FROM documents WHERE id = d.id AND ts <= :ts ORDER BY ts DESC LIMIT 1)
      AND d.value IS NOT NULL AND d.table_number = :tableNumber
    ORDER BY d.id ${order}
    LIMIT :limit`;
}

/** Counts what an unlimited scan would return: dangling entries are not counted. */
function countSql(bounded: boolean): string {
  return `SELECT COUNT(*) FROM index_entries AS e
    WHERE ${rangeCondition(bounded)} AND ${LATEST_ENTRY} AND e.doc_id IS NOT NULL
      AND (SELECT value IS NOT NULL FROM documents WHERE id = e.doc_id AND ts <= :ts ORDER BY ts DESC LIMIT 1)`;
}

/** The tables a fold writes; text columns travel as UTF-8 bytes (FoldJob.ts). */
const DOCUMENTS: MultiRowInsert = {
  verb: "INSERT OR REPLACE",
  table: "documents",
  columns: ["table_number", "id", "ts", "value", "prev_ts"],
  textColumns: ["id", "value"],
};
const INDEX_ENTRIES: MultiRowInsert = {
  verb: "INSERT OR REPLACE",
  table: "index_entries",
  columns: ["index_id", "key", "ts", "doc_id"],
  textColumns: ["doc_id"],
};
const RECEIPTS: MultiRowInsert = {
  verb: "INSERT OR REPLACE",
  table: "receipts",
  columns: ["client_id", "seq", "ts", "result", "route", "owner", "floor_seq"],
};

/** A receipt row as a record: a NULL owner (a receipt from before owners) and a 0 floor are left out. */
export function receiptOfRow(row: ReceiptRow): ClientReceipt {
  const { client_id, seq, ts, result, route, owner, floor_seq } = row;
  const receipt: ClientReceipt = { clientId: client_id, seq, ts, result, route };
  if (owner === null) return receipt;
  return floor_seq === 0 ? { ...receipt, owner } : { ...receipt, owner, floorSeq: floor_seq };
}

/** The columns of a receipt row, in `ClientReceipt` order. */
export const RECEIPT_COLUMNS = "client_id, seq, ts, result, route, owner, floor_seq";

/**
 * What a fold writes (foldWorker.mjs). Writes overwrite by (key, ts), so a replayed
 * segment or a fold retried after a crash changes nothing. REPLACE, not an upsert: a
 * conflict is rare (a replay) and plain inserts are ~10% faster.
 */
export const FOLD_SQL: FoldSql = {
  upsertDocument: multiRowInsertSql(DOCUMENTS, 1),
  upsertDocuments: multiRowInsertSql(DOCUMENTS, ROWS_PER_STATEMENT),
  upsertIndexEntry: multiRowInsertSql(INDEX_ENTRIES, 1),
  upsertIndexEntries: multiRowInsertSql(INDEX_ENTRIES, ROWS_PER_STATEMENT),
  upsertReceipt: multiRowInsertSql(RECEIPTS, 1),
  dropReceiptsBelowFloor: `DELETE FROM receipts WHERE client_id = ? AND seq < ? AND owner IS ?`,
  updateMeta: UPDATE_META,
  rowsPerStatement: ROWS_PER_STATEMENT,
};

export class Statements {

  readonly getDocument: Statement<[string, number], { value: string | null; ts: number }>;
  /** Ids travel as one JSON array, so a batch of gets is one statement. */
  readonly getDocuments: Statement<[{ ids: string; ts: number }], { position: number; value: string | null; ts: number }>;
  readonly scanAscending: ScanStatements;
  readonly scanDescending: ScanStatements;
  readonly documentsAscending: ScanStatements<DocumentScanParameters, DocumentScanRow>;
  readonly documentsDescending: ScanStatements<DocumentScanParameters, DocumentScanRow>;
  readonly countBounded: Statement<[Omit<ScanParameters, "limit">], number>;
  readonly countUnbounded: Statement<[Omit<ScanParameters, "limit">], number>;
  readonly changes: Statement<[number, number, number], DocumentRow>;
  readonly receipt: Statement<[string, number], ReceiptRow>;
  /** The highest seq among a client's receipts (null: none), by the primary key. */
  readonly receiptCeiling: Statement<[string], number | null>;
  /** The highest floor among a client's receipts of one owner (0: none), by receipts_by_floor. */
  readonly receiptFloor: Statement<[string, string | null], number>;
  readonly maxTs: Statement<[], number | null>;
  /** The ts of the `n`-th document revision at or after a ts (for bounded pruning steps). */
  readonly tsAfterRows: Statement<[number, number], number>;
  readonly storedRows: Statement<[], { documents: number; indexEntries: number; receipts: number }>;

  constructor(db: SqliteDatabase) {
    this.getDocument = db.prepare(`SELECT value, ts FROM documents WHERE id = ? AND ts <= ? ORDER BY ts DESC LIMIT 1`);
    this.getDocuments = db.prepare(
      `SELECT CAST(j.key AS INTEGER) AS position, d.value AS value, d.ts AS ts
       FROM json_each(:ids) AS j CROSS JOIN documents AS d
       WHERE d.id = j.value
         AND d.ts = (SELECT ts FROM documents WHERE id = j.value AND ts <= :ts ORDER BY ts DESC LIMIT 1)`,
    );
    this.scanAscending = { bounded: db.prepare(scanSql("ASC", true)), unbounded: db.prepare(scanSql("ASC", false)) };
    this.scanDescending = { bounded: db.prepare(scanSql("DESC", true)), unbounded: db.prepare(scanSql("DESC", false)) };
    this.documentsAscending = { bounded: db.prepare(documentScanSql("ASC", true)), unbounded: db.prepare(documentScanSql("ASC", false)) };
    this.documentsDescending = { bounded: db.prepare(documentScanSql("DESC", true)), unbounded: db.prepare(documentScanSql("DESC", false)) };
    this.countBounded = db.prepare<[Omit<ScanParameters, "limit">], number>(countSql(true)).pluck();
    this.countUnbounded = db.prepare<[Omit<ScanParameters, "limit">], number>(countSql(false)).pluck();
    this.changes = db.prepare(
      `SELECT table_number, id, ts, value, prev_ts FROM documents
       WHERE ts > ? AND ts <= ? ORDER BY ts, id LIMIT ?`,
    );
    this.receipt = db.prepare(`SELECT ${RECEIPT_COLUMNS} FROM receipts WHERE client_id = ? AND seq = ?`);
    this.receiptCeiling = db.prepare<[string], number | null>(`SELECT MAX(seq) FROM receipts WHERE client_id = ?`).pluck();
    this.receiptFloor = db
      .prepare<[string, string | null], number>(`SELECT COALESCE(MAX(floor_seq), 0) FROM receipts WHERE client_id = ? AND owner IS ?`)
      .pluck();
    this.maxTs = db.prepare<[], number | null>(`SELECT MAX(ts) FROM documents`).pluck();
    this.tsAfterRows = db
      .prepare<[number, number], number>(`SELECT ts FROM documents WHERE ts >= ? ORDER BY ts LIMIT 1 OFFSET ?`)
      .pluck();
    this.storedRows = db.prepare(
      `SELECT (SELECT COUNT(*) FROM documents) AS documents, (SELECT COUNT(*) FROM index_entries) AS indexEntries,
         (SELECT COUNT(*) FROM receipts) AS receipts`,
    );
  }
}
