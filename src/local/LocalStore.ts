import { resolve } from "node:path";
import Database from "better-sqlite3";
import {
  CairnError,
  invalidArgument,
  LOCAL_HISTORY_REVISIONS_MAX,
  LOCAL_INDEX_SWEEP_INTERVAL_MS,
  LOCAL_FOLD_DELAY_MS,
  LOCAL_FOLD_MIN_ROWS,
  LOCAL_FOLD_MIN_BYTES,
  LOCAL_FLOOR_CACHE_ENTRIES_MAX,
  LOCAL_WAL_RESTART_BYTES,
  LOCAL_PRUNE_BATCH_ROWS,
  LOCAL_RESTORE_CHUNKS_PER_CHECKPOINT as RESTORE_CHUNKS_PER_CHECKPOINT,
  systemClock,
  type Clock,
  type Timer,
} from "../base/index.js";
import {
  compareBytes,
  compareUtf8,
  type DocumentId,
  successorKey,
  type ClientReceipt,
  type DocumentRevision,
  type IndexUpdate,
} from "../model/index.js";
import {
  checkChangesWindow,
  checkDocumentId,
  checkFloorsBelowTs,
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
import { type Folder, InlineFolder, WorkerFolder } from "./Folder.js";
import { foldJobOf } from "./FoldJob.js";
import { type LocalMeta, type MetaUpdate, readMeta } from "./LocalMeta.js";
import { Overlay } from "./Overlay.js";
import { OverlayBudget } from "./OverlayBudget.js";
import { type PruneStats, pruneHistory, type SweepCursor } from "./pruneHistory.js";
import { restoreDump, type RestoreMeta, type RestoreOptions, type RestoreStats } from "./restore.js";
import { scanDocuments, type ScannedDocument } from "./scanDocuments.js";
import { scanIndex } from "./scanIndex.js";
import { openDatabase, openReader, pageBytesOf, type SqliteDatabase } from "./schema.js";
import { receiptOfRow, Statements } from "./statements.js";
import { type RecordRules, validateRows } from "./validateRecords.js";

/**
 * One shard's local SQLite materialization: MVCC documents, index entries and client
 * receipts, read at any timestamp from minReadableTs on (DESIGN.md §6).
 *
 * Writes go to an in-memory overlay first and are folded into the file in the
 * background, in large sorted transactions (on a worker thread for a file store; see
 * Overlay and Folder). Reads merge both.
 *
 * Invariants:
 * - A read at `ts` sees, per document and per index key, the newest row with row.ts <= ts;
 *   a deletion (null value, null docId) hides the key. An applied batch is visible to
 *   every read as soon as `apply` returns, before any fold.
 * - Each fold is one transaction including meta: after a crash the file holds exactly the
 *   batches up to its meta.appliedSeqno (the last committed fold), so a reopened store
 *   resumes from there and the log replays the rest. Folds run in apply order.
 * - `apply` overwrites by (key, ts), so replaying a segment is harmless, and it checks the
 *   whole batch before taking it: a bad batch changes nothing.
 * - Rows below minReadableTs are refused: writing under pruned history could make an old
 *   version visible again where a pruned deletion used to hide it.
 * - Index entries and documents are kept consistent only as given: the caller writes a
 *   document's entries in the same batch as the document. A scan that meets an entry
 *   whose document is missing or deleted at the read ts (a dangling entry: a bug of the
 *   batch that wrote it) skips it, counts it in `danglingIndexEntriesSkipped`, and still
 *   returns up to `limit` rows; `count` agrees with the scan.
 * - `meta()` is where the store stands for readers (the last applied batch);
 *   `durableMeta()` is where the file stands (the last committed fold). Only folds,
 *   prunes and restores write the file, and never two at once.
 *
 * Lifecycle: open → restoring (while `restore` runs; reads see the old state, writes
 * fail with LOCAL_BUSY) → open; open | restoring → closed (every call then fails with
 * LOCAL_CLOSED; dump cursors still open are closed with the store; rows not yet folded
 * are dropped, as in a crash: `flush` first to keep them). A fold that fails makes the
 * store failed: every later call throws LOCAL_FOLD_FAILED (the bucket still holds every
 * segment; a restarted node catches up from the file's last fold).
 */
export interface LocalStoreOptions {
  /** A file path, or ":memory:". */
  readonly path: string;
  readonly shard: number;
  readonly deploymentId: string;
  /**
   * When folds start (defaults LOCAL_FOLD_MIN_ROWS and LOCAL_FOLD_DELAY_MS; sooner when
   * the node's overlay budget is pressed), how many unfolded rows make `room()` wait
   * when the store has a budget of its own (default LOCAL_OVERLAY_ROWS_MAX) and how large the
   * WAL grows before a fold waits for checkpoints to rewind it (LOCAL_WAL_RESTART_BYTES);
   * tests fold early and often, and bound the overlay and the WAL low.
   */
  readonly fold?: {
    readonly minRows?: number;
    readonly delayMs?: number;
    readonly overlayRowsMax?: number;
    readonly walRestartBytes?: number;
  };
  /**
   * The node's overlay budget, shared with its other stores (OverlayBudget.ts); without
   * one the store has its own, of `fold.overlayRowsMax` rows (not both).
   */
  readonly overlayBudget?: OverlayBudget;
  /** Times the delayed fold and how often an index sweep may begin (default: the system clock). */
  readonly clock?: Clock;
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

/** One revision of a document in the store's history: value null is a deletion. */
export interface StoredRevision {
  readonly ts: number;
  readonly value: string | null;
}

type Lifecycle = "open" | "restoring" | "closed";

/** A document version as the file or the overlay holds it (value null: a deletion). */
interface StoredVersion {
  readonly value: string | null;
  readonly ts: number;
}

/** The arrays `apply` reads, for a batch whose records were checked before. */
function checkBatchShape(batch: ApplyBatch): void {
  if (typeof batch !== "object" || batch === null) throw new CairnError("LOCAL_APPLY_INVALID", "batch must be an object");
  for (const kind of ["revisions", "indexUpdates", "receipts"] as const) {
    if (!Array.isArray(batch[kind])) throw new CairnError("LOCAL_APPLY_INVALID", `${kind} must be an array`);
  }
}

/** Deletions and removals are what segments carry; the floor is the current minReadableTs. */
function applyRules(meta: LocalMeta): RecordRules {
  return { minTs: meta.minReadableTs, allowDeletions: true, validIds: new Set() };
}

export class LocalStore {
  private lifecycle: Lifecycle = "open";
  private currentMeta: LocalMeta;
  private fileMeta: LocalMeta;
  private readonly statements: Statements;
  private readonly cursors = new Set<DumpCursor>();
  private readonly overlay = new Overlay();
  private readonly folder: Folder;
  private danglingSkipped = 0;
  private failure: CairnError | null = null;
  /** The fold in flight, if any. */
  private folding: Promise<void> | null = null;
  private foldTimer: Timer | null = null;
  private foldSoon: NodeJS.Immediate | null = null;
  /** Batches applied and batches folded since open: `flush` waits for the second to reach the first. */
  private appliedBatches = 0;
  private foldedBatches = 0;
  /** Set while a prune or restore writes through the main connection: no fold may start. */
  private mainWriting = false;
  /** Prunes and restores run one after the other. */
  private mainWrites: Promise<unknown> = Promise.resolve();
  private roomWaiters: (() => void)[] = [];
  private readonly leaveBudget: () => void;
  /** Receipts below this ts were pruned since open (0: none; no receipt has a negative ts). */
  private receiptsPrunedBelowTs = 0;
  /**
   * Clients' floors as `receiptFloor` last found them (overlay and file together), keyed
   * by client and owner: every mutation with a receipt asks, and the answer changes only
   * when a receipt raising it is applied (kept current here), a prune drops receipts or a
   * restore replaces the store (both clear it). Folds move receipts from the overlay to
   * the file and change no floor. Bounded: cleared when full.
   */
  private readonly floorCache = new Map<string, number>();
  /**
   * Clients' highest receipt seq (overlay and file together; -1: none), kept like
   * `floorCache`: a new mutation's seq is above it, so `receipt` answers "none" without
   * asking SQLite. A prune leaves it at most too high (a lookup then finds nothing).
   */
  private readonly receiptCeilingCache = new Map<string, number>();
  /** Receipts holding their client's floor below this ts were pruned since open (0: none). */
  private floorsPrunedBelowTs = 0;
  /** Where the bounded sweep of index entries by pruneHistoryStep continues (null: from the start). */
  private sweepCursor: SweepCursor | null = null;
  /** When the last index sweep began (monotonic ms), and whether the floor moved since. */
  private sweepBeganAtMs = Number.NEGATIVE_INFINITY;
  private sweepOwed = false;

  private constructor(
    private readonly db: SqliteDatabase,
    private readonly path: string,
    private readonly foldMinRows: number,
    private readonly foldDelayMs: number,
    /** The node's bound on unfolded rows and bytes, shared with its other stores. */
    readonly overlayBudget: OverlayBudget,
    walRestartBytes: number,
    private readonly clock: Clock,
  ) {
    this.currentMeta = readMeta(db);
    this.fileMeta = this.currentMeta;
    this.statements = new Statements(db);
    this.folder = db.memory ? new InlineFolder(db) : new WorkerFolder(path, pageBytesOf(db), walRestartBytes);
    const overlay = this.overlay;
    this.leaveBudget = overlayBudget.join({
      get unfoldedRows() {
        return overlay.rows;
      },
      get unfoldedBytes() {
        return overlay.bytes;
      },
      foldNow: () => this.startFold(),
      wakeRoomWaiters: () => this.wakeRoomWaiters(),
    });
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
    // Dump cursors and the fold worker reopen the file by name: pin it against later changes of directory.
    const fullPath = path === ":memory:" ? path : resolve(path);
    const minRows = options.fold?.minRows ?? LOCAL_FOLD_MIN_ROWS;
    const delayMs = options.fold?.delayMs ?? LOCAL_FOLD_DELAY_MS;
    if (!Number.isSafeInteger(minRows) || minRows < 0) throw invalidArgument(`fold.minRows must be a non-negative integer, not ${String(minRows)}`);
    if (!Number.isSafeInteger(delayMs) || delayMs < 0) throw invalidArgument(`fold.delayMs must be a non-negative integer, not ${String(delayMs)}`);
    const overlayRowsMax = options.fold?.overlayRowsMax;
    if (overlayRowsMax !== undefined && options.overlayBudget !== undefined) {
      throw invalidArgument("fold.overlayRowsMax bounds a store's own overlay budget: not with a shared overlayBudget");
    }
    if (overlayRowsMax !== undefined && (!Number.isSafeInteger(overlayRowsMax) || overlayRowsMax < 1)) {
      throw invalidArgument(`fold.overlayRowsMax must be a positive integer, not ${String(overlayRowsMax)}`);
    }
    const overlayBudget = options.overlayBudget ?? new OverlayBudget(overlayRowsMax === undefined ? {} : { rowsMax: overlayRowsMax });
    const walRestartBytes = options.fold?.walRestartBytes ?? LOCAL_WAL_RESTART_BYTES;
    if (!Number.isSafeInteger(walRestartBytes) || walRestartBytes < 1) {
      throw invalidArgument(`fold.walRestartBytes must be a positive integer, not ${String(walRestartBytes)}`);
    }
    return new LocalStore(openDatabase(fullPath, shard, deploymentId), fullPath, minRows, delayMs, overlayBudget, walRestartBytes, options.clock ?? systemClock);
  }

  meta(): LocalMeta {
    this.assertOpen();
    return this.currentMeta;
  }

  /** Where the file stands: the meta of the last committed fold (or prune, or restore). */
  durableMeta(): LocalMeta {
    this.assertOpen();
    return this.fileMeta;
  }

  /** Number of dangling index entries scans have skipped since open (see the invariants). */
  get danglingIndexEntriesSkipped(): number {
    return this.danglingSkipped;
  }

  /** Rows applied but not yet folded into the file (diagnostics, backpressure). */
  get unfoldedRows(): number {
    return this.overlay.rows;
  }

  /**
   * Takes `batch` (see the invariants). `recordsChecked` says the caller already ran
   * `checkApplicable` on these very records, as the writer does for every unit it
   * commits: then only their shape is checked again, not every id and key.
   */
  apply(batch: ApplyBatch, options: { readonly recordsChecked?: boolean } = {}): void {
    this.assertWritable();
    if (options.recordsChecked === true) checkBatchShape(batch);
    else this.checkApplicable(batch);
    const meta = mergeMetaUpdate(this.currentMeta, batch.meta);
    this.overlay.add({ revisions: [...batch.revisions], indexUpdates: [...batch.indexUpdates], receipts: [...batch.receipts], meta });
    for (const receipt of batch.receipts) {
      raiseRemembered(this.receiptCeilingCache, receipt.clientId, receipt.seq);
      if (receipt.floorSeq) raiseRemembered(this.floorCache, floorCacheKey(receipt.clientId, receipt.owner ?? null), receipt.floorSeq);
    }
    this.currentMeta = meta;
    this.appliedBatches++;
    this.scheduleFold();
  }

  /**
   * Resolves once every batch applied before the call is folded into the file (at once
   * if there is none). Rejects if the store closes or fails first.
   */
  async flush(): Promise<void> {
    this.assertOpen();
    const target = this.appliedBatches;
    while (this.foldedBatches < target) {
      if (this.folding === null) this.startFold();
      if (this.folding === null) {
        this.assertOpen();
        // A prune or restore holds the file: its end starts the next fold.
        await this.mainWrites;
        continue;
      }
      await this.folding;
    }
  }

  /**
   * True while `room()` would resolve at once: the store is open and healthy and the
   * node's overlays are under their budget's row and byte bounds (false otherwise, so a
   * caller that checks it before writing anywhere else learns of a closed or failed store
   * from `room()` first).
   */
  get hasRoom(): boolean {
    return this.hasRoomFor(0, 0);
  }

  /**
   * `hasRoom`, counting `rows` and `bytes` about to be applied as held already: a writer
   * with segments in flight (applied when acknowledged) builds the next one only while
   * they all fit, so its pipeline never outgrows the bounds by more than one segment.
   */
  hasRoomFor(rows: number, bytes: number): boolean {
    if (this.lifecycle === "closed" || this.failure !== null) return false;
    return this.overlayBudget.hasRoomFor(rows, bytes);
  }

  /**
   * Resolves once the node's overlays hold fewer rows and bytes than their budget
   * (OverlayBudget.ts): whoever applies faster than folds keep up (a replica far behind,
   * a writer whose commits outpace its folds) awaits it between batches, so memory stays
   * bounded. While it waits, every store of the node folds what it holds.
   */
  async room(): Promise<void> {
    this.assertOpen();
    while (!this.hasRoom) {
      this.overlayBudget.relieve();
      await new Promise<void>((resolve) => this.roomWaiters.push(resolve));
      this.assertOpen();
    }
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
    const version = this.overlay.document(id, ts) ?? this.statements.getDocument.get(id, ts);
    return version === undefined || version.value === null ? null : { value: version.value, ts: version.ts };
  }

  /**
   * The revisions of `id` the store holds, newest first, at most `limit`
   * (1..LOCAL_HISTORY_REVISIONS_MAX), deletions included. The overlay and the file are
   * merged exactly as `get` merges them: the walk is `get` at the ts just below the last
   * revision found, without hiding deletions. What pruning dropped is gone: below
   * `meta().minReadableTs` at most the one revision a read at the floor sees is left.
   * An id of no document (or any other string) has no revisions.
   */
  revisionsOf(id: DocumentId, limit: number): StoredRevision[] {
    this.assertOpen();
    checkDocumentId(id);
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > LOCAL_HISTORY_REVISIONS_MAX) {
      throw invalidArgument(`limit must be an integer in 1..${LOCAL_HISTORY_REVISIONS_MAX}, not ${String(limit)}`, { limit });
    }
    const revisions: StoredRevision[] = [];
    // Timestamps are non-negative integers, so the next older revision is the newest at or below ts - 1.
    let atOrBelow = Number.MAX_SAFE_INTEGER;
    while (revisions.length < limit && atOrBelow >= 0) {
      const version: StoredVersion | undefined = this.overlay.document(id, atOrBelow) ?? this.fileDocument(id, atOrBelow);
      if (version === undefined) break;
      revisions.push({ ts: version.ts, value: version.value });
      atOrBelow = version.ts - 1;
    }
    return revisions;
  }

  /** `get` for each id, in one statement for those the overlay does not answer; one entry per id, in order. */
  getMany(ids: readonly DocumentId[], ts: number): (DocumentVersion | null)[] {
    this.assertOpen();
    if (!Array.isArray(ids)) throw invalidArgument("ids must be an array");
    for (const id of ids) checkDocumentId(id);
    checkReadTs(ts, this.currentMeta);
    const found: (DocumentVersion | null)[] = new Array<DocumentVersion | null>(ids.length).fill(null);
    const fromFile: DocumentId[] = [];
    const positions: number[] = [];
    ids.forEach((id, position) => {
      const version = this.overlay.document(id, ts);
      if (version === undefined) {
        fromFile.push(id);
        positions.push(position);
      } else if (version.value !== null) found[position] = { value: version.value, ts: version.ts };
    });
    if (fromFile.length === 0) return found;
    for (const row of this.statements.getDocuments.all({ ids: JSON.stringify(fromFile), ts })) {
      if (row.value !== null) found[positions[row.position]!] = { value: row.value, ts: row.ts };
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
    const { start, end } = range;
    if (limit === 0 || (end !== null && compareBytes(start, end) >= 0)) return [];
    const result = scanIndex(this.overlay, this.statements, (id, atTs) => this.fileDocument(id, atTs), {
      indexId,
      start,
      end,
      ts,
      order,
      limit,
    });
    this.danglingSkipped += result.dangling;
    return result.rows;
  }

  /**
   * Up to `limit` live documents of table `tableNumber` whose ids (as text) lie in
   * [start, end) (end null: unbounded), in id order, each at its newest revision at or
   * below `ts`. Ids are their table keyspace's keys, so this is an index by id that
   * stores nothing of its own.
   */
  documentScan(
    tableNumber: number,
    range: { readonly start: string; readonly end: string | null },
    ts: number,
    order: "asc" | "desc",
    limit: number,
  ): ScannedDocument[] {
    this.assertOpen();
    if (!Number.isSafeInteger(tableNumber) || tableNumber < 0) throw invalidArgument(`table number must be a non-negative integer, not ${String(tableNumber)}`);
    if (typeof range !== "object" || range === null || typeof range.start !== "string" || (range.end !== null && typeof range.end !== "string")) {
      throw invalidArgument("a document range is { start: string, end: string | null }");
    }
    checkReadTs(ts, this.currentMeta);
    checkOrder(order);
    checkLimit(limit);
    if (limit === 0 || (range.end !== null && compareUtf8(range.start, range.end) >= 0)) return [];
    return scanDocuments(this.overlay, this.statements, { tableNumber, start: range.start, end: range.end, ts, order, limit });
  }

  /**
   * How many rows an unlimited `indexScan` would return. The file counts in one
   * statement while the overlay holds nothing that could change the answer; otherwise
   * the merged scan is walked (O(rows in range)).
   */
  count(indexId: number, range: IndexScanRange, ts: number): number {
    this.assertOpen();
    checkIndexId(indexId);
    checkRange(range);
    checkReadTs(ts, this.currentMeta);
    const { start, end } = range;
    if (end !== null && compareBytes(start, end) >= 0) return 0;
    if (!this.overlay.hasEntriesIn(indexId) && !this.overlay.hasDocuments) {
      return end === null
        ? this.statements.countUnbounded.get({ indexId, start, ts })!
        : this.statements.countBounded.get({ indexId, start, end, ts })!;
    }
    const page = 4096;
    let counted = 0;
    let from = start;
    for (;;) {
      const { rows } = scanIndex(this.overlay, this.statements, (id, atTs) => this.fileDocument(id, atTs), {
        indexId,
        start: from,
        end,
        ts,
        order: "asc",
        limit: page,
      });
      counted += rows.length;
      if (rows.length < page) return counted;
      from = successorKey(rows[rows.length - 1]!.key);
    }
  }

  /** Revisions with afterTs < ts <= throughTs, by ts (then id), at most `limit`. */
  changes(afterTs: number, throughTs: number, limit: number): DocumentRevision[] {
    this.assertOpen();
    checkChangesWindow(afterTs, throughTs, limit, this.currentMeta);
    if (limit === 0 || throughTs <= afterTs) return [];
    const byKey = new Map<string, DocumentRevision>();
    for (const row of this.statements.changes.all(afterTs, throughTs, limit)) {
      byKey.set(`${row.ts}/${row.id}`, {
        tableNumber: row.table_number,
        id: row.id as DocumentId,
        ts: row.ts,
        value: row.value,
        prevTs: row.prev_ts,
      });
    }
    // The file's first `limit` and every overlay revision in the window hold the union's first `limit`.
    for (const row of this.overlay.allRevisions()) {
      if (row.ts > afterTs && row.ts <= throughTs) byKey.set(`${row.ts}/${row.id}`, row);
    }
    return [...byKey.values()]
      .sort((left, right) => left.ts - right.ts || (left.id < right.id ? -1 : left.id > right.id ? 1 : 0))
      .slice(0, limit);
  }

  receipt(clientId: string, seq: number): ClientReceipt | null {
    this.assertOpen();
    checkReceiptKey(clientId, seq);
    if (seq > this.receiptCeiling(clientId)) return null;
    const held = this.overlay.receipt(clientId, seq);
    if (held !== undefined) return held;
    const row = this.statements.receipt.get(clientId, seq);
    return row === undefined ? null : receiptOfRow(row);
  }

  private receiptCeiling(clientId: string): number {
    return remembered(this.receiptCeilingCache, clientId, () => Math.max(this.overlay.receiptCeiling(clientId), this.statements.receiptCeiling.get(clientId) ?? -1));
  }

  /**
   * The client's floor for `owner` (null: receipts from before owners): the highest
   * floorSeq among its receipts here, 0 if none. Every seq below it was acknowledged.
   */
  receiptFloor(clientId: string, owner: string | null): number {
    this.assertOpen();
    checkReceiptKey(clientId, 0);
    return remembered(this.floorCache, floorCacheKey(clientId, owner), () =>
      Math.max(this.overlay.receiptFloor(clientId, owner), this.statements.receiptFloor.get(clientId, owner) ?? 0),
    );
  }

  /**
   * Rows physically stored, history included: what pruning frees and what a snapshot
   * does not need. Counts whole tables (O(rows)): for diagnostics, not for a hot path.
   * Rows still in the overlay count once each, so a row the file also holds (one being
   * folded, or a replay of a folded one) counts twice until the next fold.
   */
  storedRows(): StoredRows {
    this.assertOpen();
    const file = this.statements.storedRows.get()!;
    const held = this.overlay.heldRows();
    return {
      documents: file.documents + held.documents,
      indexEntries: file.indexEntries + held.indexEntries,
      receipts: file.receipts + held.receipts,
    };
  }

  /** The highest ts of any stored revision; 0 if there is none. */
  maxTs(): number {
    this.assertOpen();
    return Math.max(this.statements.maxTs.get() ?? 0, this.overlay.maxTs);
  }

  /**
   * A consistent point-in-time dump that later applies do not disturb, of the state
   * once everything applied before the call is folded (its `meta` says which): a file
   * store is read through a second, read-only connection holding one read transaction;
   * an in-memory store through a private serialized copy.
   */
  async openDumpCursor(options: DumpCursorOptions = {}): Promise<DumpCursor> {
    this.assertOpen();
    validateDumpOptions(options);
    await this.flush();
    this.assertOpen();
    const db = this.db.memory ? new Database(this.db.serialize()) : openReader(this.path);
    const cursor: DumpCursor = new SqliteDumpCursor(db, options, () => this.cursors.delete(cursor));
    this.cursors.add(cursor);
    return cursor;
  }

  /** The file this store lives in (":memory:" for an in-memory store). */
  get filePath(): string {
    return this.path;
  }

  /**
   * Replaces the whole state with a dump, atomically (see restore.ts), and sets meta from
   * `meta` with minReadableTs = meta.frontierTs. Rows applied and not yet folded are
   * replaced too.
   */
  async restore(
    chunks: AsyncIterable<DumpChunk> | Iterable<DumpChunk>,
    meta: RestoreMeta,
    options: RestoreOptions = {},
  ): Promise<RestoreStats> {
    this.assertWritable();
    this.lifecycle = "restoring";
    try {
      return await this.writeThroughMain(async () => {
        // Every page a restore writes goes through the WAL once and is copied into the file
        // by a checkpoint. The checkpoint worker (no fold runs during a restore) copies the
        // committed chunks while the next ones load, on its own core; the last checkpoint,
        // after the swap, is awaited here, so the restore's whole cost is counted as its
        // own and the first fold after it does not stall on gigabytes of WAL.
        let checkpointing: Promise<void> | null = null;
        let chunksSinceCheckpoint = 0;
        const checkpointAlongside = () => {
          if (++chunksSinceCheckpoint < RESTORE_CHUNKS_PER_CHECKPOINT || checkpointing !== null) return;
          chunksSinceCheckpoint = 0;
          checkpointing = this.folder.checkpoint("PASSIVE").finally(() => (checkpointing = null));
        };
        let result: Awaited<ReturnType<typeof restoreDump>>;
        try {
          result = await restoreDump(this.db, chunks, meta, this.currentMeta, () => this.assertOpen(), options, checkpointAlongside);
        } catch (error) {
          await checkpointing;
          throw error;
        }
        // In the same macrotask as the swap: no read sees the new file with the old overlay.
        this.overlay.clear();
        this.floorCache.clear();
        this.receiptCeilingCache.clear();
        this.receiptsPrunedBelowTs = 0;
        this.floorsPrunedBelowTs = 0;
        this.sweepCursor = null;
        this.foldedBatches = this.appliedBatches;
        this.currentMeta = result.meta;
        this.fileMeta = result.meta;
        // Only now wait for a checkpoint still running beside the swap (one at a time).
        await checkpointing;
        // TRUNCATE waits for readers of older snapshots (an open dump cursor) up to the busy
        // timeout; with one open, copy what can be copied and let the WAL be reused later.
        await this.folder.checkpoint(this.cursors.size === 0 ? "TRUNCATE" : "PASSIVE");
        return result.stats;
      });
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
   * instead of blocking on a long backlog. `done` once the floor reached `belowTs`. Each
   * step also sweeps up to LOCAL_PRUNE_BATCH_ROWS index entries further (see
   * pruneHistory.ts); `indexSweepWrapped` when this step's sweep reached the end, so a
   * full pass is over. A step with floors that earlier steps already reached does nothing.
   */
  async pruneHistoryStep(
    belowTs: number,
    receiptsBelowTs = belowTs,
    floorsBelowTs = receiptsBelowTs,
  ): Promise<PruneStats & { readonly done: boolean; readonly indexSweepWrapped: boolean }> {
    this.assertWritable();
    checkPruneTs(belowTs);
    checkPruneTs(receiptsBelowTs);
    checkFloorsBelowTs(floorsBelowTs, receiptsBelowTs);
    if (this.nothingToPrune(belowTs, receiptsBelowTs, floorsBelowTs)) return { ...this.noPrune(), done: true, indexSweepWrapped: false };
    await this.foldRowsAtOrBelow(Math.max(belowTs, receiptsBelowTs));
    return this.writeThroughMain(async () => {
      const floor = this.fileMeta.minReadableTs;
      const stepEnd = this.statements.tsAfterRows.get(floor, LOCAL_PRUNE_BATCH_ROWS);
      const stepBelowTs = stepEnd === undefined ? belowTs : Math.min(belowTs, Math.max(stepEnd, floor + 1));
      const stats = this.pruneNow(stepBelowTs, receiptsBelowTs, floorsBelowTs, { from: this.sweepCursor, maxRows: LOCAL_PRUNE_BATCH_ROWS, begin: this.indexSweepMayBegin(), owed: this.sweepOwed });
      return { ...stats, done: stats.minReadableTs >= belowTs, indexSweepWrapped: this.sweepCursor === null };
    });
  }

  /**
   * Drops history no read at or above `belowTs` can see, and receipts older than
   * `receiptsBelowTs` (by default `belowTs`), those holding their client's floor only
   * below `floorsBelowTs` (by default `receiptsBelowTs`; see pruneHistory.ts). Everything
   * applied before the call is folded first, so it is pruned too.
   */
  async pruneHistory(belowTs: number, receiptsBelowTs = belowTs, floorsBelowTs = receiptsBelowTs): Promise<PruneStats> {
    this.assertWritable();
    checkPruneTs(belowTs);
    checkPruneTs(receiptsBelowTs);
    checkFloorsBelowTs(floorsBelowTs, receiptsBelowTs);
    await this.foldRowsAtOrBelow(Math.max(belowTs, receiptsBelowTs));
    return this.writeThroughMain(async () => this.pruneNow(belowTs, receiptsBelowTs, floorsBelowTs, { from: null, maxRows: Number.MAX_SAFE_INTEGER }));
  }

  /**
   * Closes at once. Rows applied and not yet folded are dropped, as in a crash (the
   * file still says where its last fold stands, and the log has the rest): `flush`
   * first for a quick restart.
   */
  close(): void {
    if (this.lifecycle === "closed") return;
    this.lifecycle = "closed";
    this.clearFoldTimers();
    this.folder.close();
    for (const cursor of [...this.cursors]) cursor.close();
    this.db.close();
    this.wakeRoomWaiters();
    this.leaveBudget();
  }

  // ---- folding --------------------------------------------------------------------------

  /** Starts a fold now if one is due, else makes sure one will start. */
  private scheduleFold(): void {
    if (this.folding !== null || this.mainWriting || this.overlay.pendingBatches === 0) return;
    if (this.overlay.pendingRows >= this.foldMinRows || this.overlay.pendingBytes >= LOCAL_FOLD_MIN_BYTES || this.overlayBudget.foldAllDue) {
      // Not inside apply: building the job is O(rows) and belongs to no caller's latency.
      this.foldSoon ??= setImmediate(() => {
        this.foldSoon = null;
        // A node past its fold share folds every store, not only the one applying now.
        if (this.overlayBudget.foldAllDue) this.overlayBudget.relieve();
        else this.startFold();
      });
      return;
    }
    if (this.foldTimer === null) {
      this.foldTimer = this.clock.setTimer(this.foldDelayMs, () => {
        this.foldTimer = null;
        this.startFold();
      });
    }
  }

  private startFold(): void {
    if (this.lifecycle === "closed" || this.failure !== null) return;
    if (this.folding !== null || this.mainWriting || this.overlay.pendingBatches === 0) return;
    this.clearFoldTimers();
    const generation = this.overlay.takePending();
    const batches = generation.batches;
    const minReadableTs = this.currentMeta.minReadableTs;
    const metaAfter: LocalMeta = { ...generation.meta, minReadableTs };
    const folding = this.folder.fold(foldJobOf(generation, minReadableTs)).then(
      () => {
        this.folding = null;
        if (this.lifecycle === "closed") return;
        this.overlay.folded();
        this.foldedBatches += batches.length;
        this.fileMeta = metaAfter;
        this.overlayBudget.released();
        this.scheduleFold();
      },
      (error: unknown) => {
        this.folding = null;
        if (this.lifecycle !== "closed") this.fail(error);
        throw this.failure ?? error;
      },
    );
    // Awaited by flush and room; an unobserved failure is recorded in `failure`, not lost.
    folding.catch(() => undefined);
    this.folding = folding;
  }

  private fail(error: unknown): void {
    if (this.failure !== null) return;
    this.failure =
      error instanceof CairnError && error.code === "LOCAL_FOLD_FAILED"
        ? error
        : new CairnError("LOCAL_FOLD_FAILED", `local store of shard ${this.currentMeta.shard} failed to fold: ${String(error)}`, {
            cause: error,
          });
    this.clearFoldTimers();
    this.wakeRoomWaiters();
    // Its rows will never fold: they no longer count against the node's budget.
    this.leaveBudget();
  }

  /**
   * Runs `write` on the main connection with no fold in flight and none starting, after
   * any earlier prune or restore; folds resume afterwards.
   */
  private writeThroughMain<T>(write: () => Promise<T>): Promise<T> {
    const run = this.mainWrites.then(async () => {
      this.assertOpen();
      this.mainWriting = true;
      try {
        this.clearFoldTimers();
        while (this.folding !== null) await this.folding;
        this.assertOpen();
        return await write();
      } finally {
        this.mainWriting = false;
        if (this.lifecycle !== "closed") this.scheduleFold();
      }
    });
    this.mainWrites = run.catch(() => undefined);
    return run;
  }

  /**
   * A step whose floors are where earlier prunes left them, with no index sweep half
   * done, changes nothing: skip it without waiting for folds (maintenance calls it on
   * every cadence).
   */
  private nothingToPrune(belowTs: number, receiptsBelowTs: number, floorsBelowTs: number): boolean {
    return (
      belowTs <= this.currentMeta.minReadableTs &&
      receiptsBelowTs <= this.receiptsPrunedBelowTs &&
      floorsBelowTs <= this.floorsPrunedBelowTs &&
      this.sweepCursor === null &&
      !(this.sweepOwed && this.indexSweepMayBegin())
    );
  }

  /** Whether a new sweep of the index entries may begin now (LOCAL_INDEX_SWEEP_INTERVAL_MS after the last began). */
  private indexSweepMayBegin(): boolean {
    return this.clock.monotonicMs() - this.sweepBeganAtMs >= LOCAL_INDEX_SWEEP_INTERVAL_MS;
  }

  private noPrune(): PruneStats {
    return { documentsRemoved: 0, indexEntriesRemoved: 0, receiptsRemoved: 0, minReadableTs: this.currentMeta.minReadableTs };
  }

  /**
   * Pruning applies to the file, so the rows it concerns must be there: folds everything
   * applied so far if any row at or below `ts` is still in the overlay. (Rows applied
   * meanwhile are above the frontier the caller pruned below.)
   */
  private async foldRowsAtOrBelow(ts: number): Promise<void> {
    if (this.overlay.holdsRowsAtOrBelow(ts)) await this.flush();
  }

  private pruneNow(
    belowTs: number,
    receiptsBelowTs: number,
    floorsBelowTs: number,
    sweep: { from: SweepCursor | null; maxRows: number; begin?: boolean; owed?: boolean },
  ): PruneStats {
    // A floor's receipt may be pruned (floorsBelowTs): the floors are found again.
    this.floorCache.clear();
    const receipts = { belowTs: receiptsBelowTs, floorsBelowTs, examinedFromTs: this.receiptsPrunedBelowTs };
    this.receiptsPrunedBelowTs = Math.max(this.receiptsPrunedBelowTs, receiptsBelowTs);
    this.floorsPrunedBelowTs = Math.max(this.floorsPrunedBelowTs, floorsBelowTs);
    const floorBefore = this.fileMeta.minReadableTs;
    const result = pruneHistory(this.db, belowTs, this.fileMeta, receipts, sweep);
    if (result.sweepBegan) {
      this.sweepBeganAtMs = this.clock.monotonicMs();
      this.sweepOwed = false;
    } else if (result.meta.minReadableTs > floorBefore) {
      this.sweepOwed = true; // the floor moved while no sweep could begin: one is due later
    }
    // A sweep that reached the end starts over on the next step.
    this.sweepCursor = result.sweepNext;
    this.fileMeta = result.meta;
    this.currentMeta = { ...this.currentMeta, minReadableTs: result.meta.minReadableTs };
    return result.stats;
  }

  private clearFoldTimers(): void {
    this.foldTimer?.cancel();
    if (this.foldSoon !== null) clearImmediate(this.foldSoon);
    this.foldTimer = null;
    this.foldSoon = null;
  }

  private wakeRoomWaiters(): void {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const wake of waiters) wake();
  }

  private fileDocument(id: string, ts: number): StoredVersion | undefined {
    return this.statements.getDocument.get(id, ts);
  }

  private assertOpen(): void {
    if (this.lifecycle === "closed") throw new CairnError("LOCAL_CLOSED", `local store of shard ${this.currentMeta.shard} is closed`);
    if (this.failure !== null) throw this.failure;
  }

  private assertWritable(): void {
    this.assertOpen();
    if (this.lifecycle === "restoring") {
      throw new CairnError("LOCAL_BUSY", `local store of shard ${this.currentMeta.shard} is being restored`);
    }
  }
}

/** `cache`'s value for `key`, found by `find` and remembered when it has none; a full cache (LOCAL_FLOOR_CACHE_ENTRIES_MAX) is emptied first. */
function remembered(cache: Map<string, number>, key: string, find: () => number): number {
  const cached = cache.get(key);
  if (cached !== undefined) return cached;
  const found = find();
  if (cache.size >= LOCAL_FLOOR_CACHE_ENTRIES_MAX) cache.clear();
  cache.set(key, found);
  return found;
}

/** Raises a remembered value to `value`; a key not remembered stays so (it is found afresh when asked). */
function raiseRemembered(cache: Map<string, number>, key: string, value: number): void {
  const cached = cache.get(key);
  if (cached !== undefined && value > cached) cache.set(key, value);
}

function floorCacheKey(clientId: string, owner: string | null): string {
  // The owner's length first: no two (owner, clientId) pairs, null owner included, share a key.
  return owner === null ? `-${clientId}` : `${owner.length}:${owner}${clientId}`;
}
