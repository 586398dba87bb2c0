import { resolve } from "node:path";
import Database from "better-sqlite3";
import { CairnError, invalidArgument } from "../base/errors.js";
import { LOCAL_PRUNE_BATCH_ROWS } from "../base/limits.js";
import { compareBytes } from "../model/compareBytes.js";
import type { DocumentId } from "../model/DocumentId.js";
import { successorKey } from "../model/KeyRange.js";
import type { ClientReceipt, DocumentRevision, IndexUpdate } from "../model/Revision.js";
import {
  checkChangesWindow,
  checkDocumentId,
  checkIndexId,
  checkLimit,
  checkOrder,
  checkPruneTs,
  checkRange,
  checkReadTs,
  checkReceiptKey,
  mergeMetaUpdate,
} from "./checkArguments.js";
import { type DumpChunk, type DumpCursor, type DumpCursorOptions, SqliteDumpCursor, validateDumpOptions } from "./DumpCursor.js";
import { type LocalMeta, type MetaUpdate, metaParameters, readMeta } from "./LocalMeta.js";
import { type PruneStats, pruneHistory } from "./pruneHistory.js";
import { restoreDump, type RestoreMeta, type RestoreStats } from "./restore.js";
import { openDatabase, openReader, type SqliteDatabase } from "./schema.js";
import { type ScanRow, Statements } from "./statements.js";
import { type RecordRules, validateRows } from "./validateRecords.js";

/**
 * One shard's local SQLite materialization: MVCC documents, index entries and client
 * receipts, read at any timestamp from minReadableTs on (DESIGN.md §6).
 *
 * Invariants:
 * - A read at `ts` sees, per document and per index key, the newest row with row.ts <= ts;
 *   a deletion (null value, null docId) hides the key.
 * - `apply` is one transaction including meta: after a crash the file holds exactly the
 *   segments up to meta.appliedSeqno. It overwrites by (key, ts), so replaying a segment
 *   is harmless, and it checks the whole batch before writing: a bad batch changes nothing.
 * - Rows below minReadableTs are refused: writing under pruned history could make an old
 *   version visible again where a pruned deletion used to hide it.
 * - Index entries and documents are kept consistent only as given: the caller writes a
 *   document's entries in the same batch as the document. A scan that meets an entry
 *   whose document is missing or deleted at the read ts (a dangling entry: a bug of the
 *   batch that wrote it) skips it, counts it in `danglingIndexEntriesSkipped`, and still
 *   returns up to `limit` rows; `count` agrees with the scan.
 * - The in-memory meta is the committed meta row: it changes only after a commit.
 *
 * Lifecycle: open → restoring (while `restore` runs; reads see the old state, writes
 * fail with LOCAL_BUSY) → open; open | restoring → closed (every call then fails with
 * LOCAL_CLOSED; dump cursors still open are closed with the store).
 */
export interface LocalStoreOptions {
  /** A file path, or ":memory:". */
  readonly path: string;
  readonly shard: number;
  readonly deploymentId: string;
}

export interface ApplyBatch {
  readonly revisions: readonly DocumentRevision[];
  readonly indexUpdates: readonly IndexUpdate[];
  readonly receipts: readonly ClientReceipt[];
  readonly meta: MetaUpdate;
}

/** Half-open: start <= key < end; a null end is unbounded. An empty or inverted range selects nothing. */
export interface IndexScanRange {
  readonly start: Uint8Array;
  readonly end: Uint8Array | null;
}

export interface IndexScanRow {
  readonly key: Uint8Array;
  readonly id: DocumentId;
  /** The document (encoded JSON text) as of the read ts. */
  readonly value: string;
  /** Ts of that document revision. */
  readonly docTs: number;
}

export interface DocumentVersion {
  readonly value: string;
  readonly ts: number;
}

export interface StoredRows {
  readonly documents: number;
  readonly indexEntries: number;
  readonly receipts: number;
}

type Lifecycle = "open" | "restoring" | "closed";

/** Deletions and removals are what segments carry; the floor is the current minReadableTs. */
function applyRules(meta: LocalMeta): RecordRules {
  return { minTs: meta.minReadableTs, allowDeletions: true, validIds: new Set() };
}

export class LocalStore {
  private lifecycle: Lifecycle = "open";
  private currentMeta: LocalMeta;
  private readonly statements: Statements;
  private readonly cursors = new Set<DumpCursor>();
  private readonly writeBatch: (batch: ApplyBatch, meta: LocalMeta) => void;
  private danglingSkipped = 0;

  private constructor(
    private readonly db: SqliteDatabase,
    private readonly path: string,
  ) {
    this.currentMeta = readMeta(db);
    this.statements = new Statements(db);
    this.writeBatch = db.transaction((batch: ApplyBatch, meta: LocalMeta) => this.write(batch, meta));
  }

  /**
   * Opens the store at `options.path`, creating the schema in a new file. A file of
   * another shard or deployment fails with LOCAL_META_MISMATCH, one of an unknown schema
   * version with LOCAL_SCHEMA_UNSUPPORTED; neither is modified.
   */
  static open(options: LocalStoreOptions): LocalStore {
    const { path, shard, deploymentId } = options;
    if (typeof path !== "string" || path.length === 0) throw invalidArgument("path must be a file path or \":memory:\"");
    if (!Number.isSafeInteger(shard) || shard < 0) throw invalidArgument(`shard must be a non-negative integer, not ${String(shard)}`);
    if (typeof deploymentId !== "string" || deploymentId.length === 0) throw invalidArgument("deploymentId must be a non-empty string");
    // Dump cursors reopen the file by name: pin it against later changes of directory.
    const fullPath = path === ":memory:" ? path : resolve(path);
    return new LocalStore(openDatabase(fullPath, shard, deploymentId), fullPath);
  }

  meta(): LocalMeta {
    this.assertOpen();
    return this.currentMeta;
  }

  /** Number of dangling index entries scans have skipped since open (see the invariants). */
  get danglingIndexEntriesSkipped(): number {
    return this.danglingSkipped;
  }

  apply(batch: ApplyBatch): void {
    this.assertWritable();
    this.checkApplicable(batch);
    const meta = mergeMetaUpdate(this.currentMeta, batch.meta);
    this.writeBatch(batch, meta);
    this.currentMeta = meta;
  }

  /**
   * Throws LOCAL_APPLY_INVALID exactly when `apply` would refuse these records now (meta
   * aside), writing nothing. The shard engine runs it on every unit before queueing it,
   * so that nothing a reader's apply would refuse ever reaches the log.
   */
  checkApplicable(records: Omit<ApplyBatch, "meta">): void {
    this.assertOpen();
    if (typeof records !== "object" || records === null) throw new CairnError("LOCAL_APPLY_INVALID", "batch must be an object");
    const rules = applyRules(this.currentMeta);
    validateRows("LOCAL_APPLY_INVALID", "revision", records.revisions, rules);
    validateRows("LOCAL_APPLY_INVALID", "indexUpdate", records.indexUpdates, rules);
    validateRows("LOCAL_APPLY_INVALID", "receipt", records.receipts, rules);
  }

  /** The newest revision of `id` at or below `ts`; null if there is none or it is a deletion. */
  get(id: DocumentId, ts: number): DocumentVersion | null {
    this.assertOpen();
    checkDocumentId(id);
    checkReadTs(ts, this.currentMeta);
    const row = this.statements.getDocument.get(id, ts);
    return row === undefined || row.value === null ? null : { value: row.value, ts: row.ts };
  }

  /** `get` for each id, in one statement; the answer has one entry per id, in order. */
  getMany(ids: readonly DocumentId[], ts: number): (DocumentVersion | null)[] {
    this.assertOpen();
    if (!Array.isArray(ids)) throw invalidArgument("ids must be an array");
    for (const id of ids) checkDocumentId(id);
    checkReadTs(ts, this.currentMeta);
    const found: (DocumentVersion | null)[] = new Array<DocumentVersion | null>(ids.length).fill(null);
    if (ids.length === 0) return found;
    for (const row of this.statements.getDocuments.all({ ids: JSON.stringify(ids), ts })) {
      if (row.value !== null) found[row.position] = { value: row.value, ts: row.ts };
    }
    return found;
  }

  /**
   * Up to `limit` live entries of index `indexId` in `range` at `ts`, in key order, each
   * joined to its document at `ts`. Dangling entries are skipped and the scan continues
   * past them, so it still fills `limit` when enough live entries exist.
   */
  indexScan(indexId: number, range: IndexScanRange, ts: number, order: "asc" | "desc", limit: number): IndexScanRow[] {
    this.assertOpen();
    checkIndexId(indexId);
    checkRange(range);
    checkReadTs(ts, this.currentMeta);
    checkOrder(order);
    checkLimit(limit);
    const statements = order === "asc" ? this.statements.scanAscending : this.statements.scanDescending;
    const rows: IndexScanRow[] = [];
    let { start, end } = range;
    while (rows.length < limit && (end === null || compareBytes(start, end) < 0)) {
      const wanted = limit - rows.length;
      const page = end === null
        ? statements.unbounded.all({ indexId, start, ts, limit: wanted })
        : statements.bounded.all({ indexId, start, end, ts, limit: wanted });
      const dangling = this.collectLive(page, rows);
      if (dangling === 0 || page.length < wanted) break;
      // Dangling entries took places in the page: continue after its last key.
      const lastKey = page[page.length - 1]!.key;
      if (order === "asc") start = successorKey(lastKey);
      else end = lastKey;
    }
    return rows;
  }

  /** How many rows an unlimited `indexScan` would return. */
  count(indexId: number, range: IndexScanRange, ts: number): number {
    this.assertOpen();
    checkIndexId(indexId);
    checkRange(range);
    checkReadTs(ts, this.currentMeta);
    const { start, end } = range;
    if (end !== null && compareBytes(start, end) >= 0) return 0;
    return end === null
      ? this.statements.countUnbounded.get({ indexId, start, ts })!
      : this.statements.countBounded.get({ indexId, start, end, ts })!;
  }

  /** Revisions with afterTs < ts <= throughTs, by ts (then id), at most `limit`. */
  changes(afterTs: number, throughTs: number, limit: number): DocumentRevision[] {
    this.assertOpen();
    checkChangesWindow(afterTs, throughTs, limit, this.currentMeta);
    if (limit === 0 || throughTs <= afterTs) return [];
    return this.statements.changes.all(afterTs, throughTs, limit).map((row) => ({
      tableNumber: row.table_number,
      id: row.id as DocumentId,
      ts: row.ts,
      value: row.value,
      prevTs: row.prev_ts,
    }));
  }

  receipt(clientId: string, seq: number): ClientReceipt | null {
    this.assertOpen();
    checkReceiptKey(clientId, seq);
    const row = this.statements.receipt.get(clientId, seq);
    return row === undefined ? null : { clientId: row.client_id, seq: row.seq, ts: row.ts, result: row.result };
  }

  /**
   * Rows physically stored, history included: what pruning frees and what a snapshot
   * does not need. Counts whole tables (O(rows)): for diagnostics, not for a hot path.
   */
  storedRows(): StoredRows {
    this.assertOpen();
    return this.statements.storedRows.get()!;
  }

  /** The highest ts of any stored revision; 0 if there is none. */
  maxTs(): number {
    this.assertOpen();
    return this.statements.maxTs.get() ?? 0;
  }

  /**
   * A consistent point-in-time dump that later applies do not disturb: a file store is
   * read through a second, read-only connection holding one read transaction; an
   * in-memory store through a private serialized copy.
   */
  openDumpCursor(options: DumpCursorOptions = {}): DumpCursor {
    this.assertOpen();
    validateDumpOptions(options);
    const db = this.db.memory ? new Database(this.db.serialize()) : openReader(this.path);
    const cursor: DumpCursor = new SqliteDumpCursor(db, options, () => this.cursors.delete(cursor));
    this.cursors.add(cursor);
    return cursor;
  }

  /**
   * Replaces the whole state with a dump, atomically (see restore.ts), and sets meta from
   * `meta` with minReadableTs = meta.frontierTs.
   */
  async restore(chunks: AsyncIterable<DumpChunk> | Iterable<DumpChunk>, meta: RestoreMeta): Promise<RestoreStats> {
    this.assertWritable();
    this.lifecycle = "restoring";
    try {
      const result = await restoreDump(this.db, chunks, meta, this.currentMeta, () => this.assertOpen());
      this.currentMeta = result.meta;
      return result.stats;
    } finally {
      if (this.lifecycle === "restoring") this.lifecycle = "open";
    }
  }

  /**
   * Empties the store (as a new file is), atomically: for a local copy found to disagree
   * with the bucket, before it is rebuilt from the bucket.
   */
  async reset(): Promise<void> {
    await this.restore([], { appliedSeqno: -1, epoch: 0, lastHash: null, frontierTs: 0 });
  }

  /**
   * One bounded step towards `pruneHistory(belowTs, receiptsBelowTs)`: prunes up to the
   * ts at which LOCAL_PRUNE_BATCH_ROWS document revisions past the readable floor have
   * been covered (or to `belowTs`, if nearer), so a caller can yield between steps
   * instead of blocking on a long backlog. `done` once the floor reached `belowTs`.
   */
  pruneHistoryStep(belowTs: number, receiptsBelowTs = belowTs): PruneStats & { readonly done: boolean } {
    this.assertWritable();
    checkPruneTs(belowTs);
    const floor = this.currentMeta.minReadableTs;
    const stepEnd = this.statements.tsAfterRows.get(floor, LOCAL_PRUNE_BATCH_ROWS);
    const stepBelowTs = stepEnd === undefined ? belowTs : Math.min(belowTs, Math.max(stepEnd, floor + 1));
    const stats = this.pruneHistory(stepBelowTs, receiptsBelowTs);
    return { ...stats, done: stats.minReadableTs >= belowTs };
  }

  /**
   * Drops history no read at or above `belowTs` can see, and receipts older than
   * `receiptsBelowTs` (by default `belowTs`; see pruneHistory.ts).
   */
  pruneHistory(belowTs: number, receiptsBelowTs = belowTs): PruneStats {
    this.assertWritable();
    checkPruneTs(belowTs);
    checkPruneTs(receiptsBelowTs);
    const result = pruneHistory(this.db, belowTs, this.currentMeta, receiptsBelowTs);
    this.currentMeta = result.meta;
    return result.stats;
  }

  close(): void {
    if (this.lifecycle === "closed") return;
    this.lifecycle = "closed";
    for (const cursor of [...this.cursors]) cursor.close();
    this.db.close();
  }

  private write(batch: ApplyBatch, meta: LocalMeta): void {
    const { upsertDocument, upsertIndexEntry, upsertReceipt, updateMeta } = this.statements;
    for (const row of batch.revisions) upsertDocument.run(row.tableNumber, row.id, row.ts, row.value, row.prevTs);
    for (const row of batch.indexUpdates) upsertIndexEntry.run(row.indexId, row.key, row.ts, row.docId);
    for (const row of batch.receipts) upsertReceipt.run(row.clientId, row.seq, row.ts, row.result);
    updateMeta.run(...metaParameters(meta));
  }

  /** Appends the page's live rows to `rows`; returns how many dangling rows it skipped. */
  private collectLive(page: readonly ScanRow[], rows: IndexScanRow[]): number {
    let dangling = 0;
    for (const row of page) {
      if (row.value === null || row.doc_ts === null) {
        dangling++;
        continue;
      }
      rows.push({ key: row.key, id: row.doc_id as DocumentId, value: row.value, docTs: row.doc_ts });
    }
    this.danglingSkipped += dangling;
    return dangling;
  }

  private assertOpen(): void {
    if (this.lifecycle === "closed") throw new CairnError("LOCAL_CLOSED", `local store of shard ${this.currentMeta.shard} is closed`);
  }

  private assertWritable(): void {
    this.assertOpen();
    if (this.lifecycle === "restoring") {
      throw new CairnError("LOCAL_BUSY", `local store of shard ${this.currentMeta.shard} is being restored`);
    }
  }
}
