import type { Statement } from "better-sqlite3";
import { CairnError } from "../base/index.js";
import type { ClientReceipt, DocumentRevision, IndexUpdate } from "../model/index.js";
import type { DumpChunk } from "./DumpCursor.js";
import { type LocalMeta, metaParameters, UPDATE_META } from "./LocalMeta.js";
import { DATA_TABLES, dataTablesSql, dropStaging, SECONDARY_INDEXES_SQL, STAGING_PREFIX, type SqliteDatabase } from "./schema.js";
import { multiRowInsertSql, ROWS_PER_STATEMENT } from "./multiRowInsert.js";
import { type RecordKind, type RecordRules, validateRows } from "./validateRecords.js";

/**
 * Replaces a store's whole state with a dump.
 *
 * Invariants:
 * - Atomic: chunks are loaded into staging tables beside the live ones, and one final
 *   transaction drops the live tables, renames the staging tables into their place, builds
 *   the secondary indexes and writes meta. Until that commit every reader sees the old
 *   state; a crash or an error before it leaves the old state (staging leftovers are
 *   dropped on the next open).
 * - Nothing from the old state survives: documents, entries and receipts absent from the
 *   dump are gone afterwards.
 * - Every row is checked as `apply` checks it (a dump holds no deletions); a bad row or a
 *   bad meta fails with LOCAL_RESTORE_INVALID. An error raised by the chunk source itself
 *   (say, a snapshot that fails its hash) propagates unchanged. Either way the old state
 *   stays.
 * - Memory is bounded by one chunk: each is written in its own staging transaction.
 * - Documents load into a table without indexes (appends only); the swap builds its
 *   indexes with one sort each, the fast way to bulk-load a B-tree.
 */
export interface RestoreMeta {
  appliedSeqno: number;
  epoch: number;
  lastHash: string | null;
  frontierTs: number;
}

export interface RestoreOptions {
  /**
   * The rows were checked before they became durable and the source verified them by
   * hash (a snapshot of a Cairn store): only their shape and ts rules are checked again,
   * not every id and key (which is most of a restore's cost otherwise).
   */
  readonly recordsChecked?: boolean;
}

export interface RestoreStats {
  readonly documents: number;
  readonly indexEntries: number;
  readonly receipts: number;
}

export async function restoreDump(
  db: SqliteDatabase,
  chunks: AsyncIterable<DumpChunk> | Iterable<DumpChunk>,
  restoreMeta: RestoreMeta,
  current: LocalMeta,
  /** Throws once the store is closed: the chunk source may take long between chunks. */
  assertOpen: () => void,
  options: RestoreOptions = {},
  /** Called after each chunk's transaction committed (the store checkpoints alongside). */
  onChunkCommitted: () => void = () => undefined,
): Promise<{ stats: RestoreStats; meta: LocalMeta }> {
  validateRestoreMeta(restoreMeta);
  const meta: LocalMeta = {
    shard: current.shard,
    deploymentId: current.deploymentId,
    appliedSeqno: restoreMeta.appliedSeqno,
    epoch: restoreMeta.epoch,
    lastHash: restoreMeta.lastHash,
    frontierTs: restoreMeta.frontierTs,
    minReadableTs: restoreMeta.frontierTs,
  };
  dropStaging(db);
  db.exec(dataTablesSql(STAGING_PREFIX));
  try {
    const loader = new StagingLoader(db, options.recordsChecked !== true);
    for await (const chunk of chunks) {
      assertOpen();
      loader.load(chunk);
      onChunkCommitted();
    }
    assertOpen();
    swapIn(db, meta);
    return { stats: loader.stats(), meta };
  } catch (error) {
    if (db.open) dropStaging(db);
    throw error;
  }
}

const RECORD_KIND_OF_CHUNK = {
  documents: "revision",
  indexEntries: "indexUpdate",
  receipts: "receipt",
} as const satisfies Record<DumpChunk["kind"], RecordKind>;

/** Inserts rows through one statement per ROWS_PER_STATEMENT rows, and one per row for the rest. */
class BatchedInsert<Row> {
  private readonly many: Statement<unknown[]>;
  private readonly one: Statement<unknown[]>;

  constructor(
    db: SqliteDatabase,
    table: string,
    columns: readonly string[],
    private readonly values: (row: Row) => readonly unknown[],
  ) {
    const insert = { verb: "INSERT", table: `${STAGING_PREFIX}${table}`, columns } as const;
    this.many = db.prepare(multiRowInsertSql(insert, ROWS_PER_STATEMENT));
    this.one = db.prepare(multiRowInsertSql(insert, 1));
  }

  run(rows: readonly Row[]): void {
    let at = 0;
    for (; at + ROWS_PER_STATEMENT <= rows.length; at += ROWS_PER_STATEMENT) {
      const parameters: unknown[] = [];
      for (let offset = 0; offset < ROWS_PER_STATEMENT; offset++) parameters.push(...this.values(rows[at + offset]!));
      this.many.run(parameters);
    }
    for (; at < rows.length; at++) this.one.run([...this.values(rows[at]!)]);
  }
}

class StagingLoader {
  private readonly insertDocuments;
  private readonly insertIndexEntries;
  private readonly insertReceipts;
  private readonly counts = { documents: 0, indexEntries: 0, receipts: 0 };
  /** Rows of a dump are current state: any ts, no deletions. Ids seen are remembered per chunk only. */
  private readonly rules: RecordRules;
  private readonly loadChunk;

  constructor(db: SqliteDatabase, deep: boolean) {
    this.rules = { minTs: 0, allowDeletions: false, validIds: new Set(), deep };
    this.insertDocuments = new BatchedInsert<DocumentRevision>(db, "documents", ["table_number", "id", "ts", "value", "prev_ts"], (row) => [
      row.tableNumber,
      row.id,
      row.ts,
      row.value,
      row.prevTs,
    ]);
    this.insertIndexEntries = new BatchedInsert<IndexUpdate>(db, "index_entries", ["index_id", "key", "ts", "doc_id"], (row) => [
      row.indexId,
      row.key,
      row.ts,
      row.docId,
    ]);
    this.insertReceipts = new BatchedInsert<ClientReceipt>(db, "receipts", ["client_id", "seq", "ts", "result", "route", "owner", "floor_seq"], (row) => [
      row.clientId,
      row.seq,
      row.ts,
      row.result,
      row.route,
      row.owner ?? null,
      row.floorSeq ?? 0,
    ]);
    this.loadChunk = db.transaction((chunk: DumpChunk) => this.write(chunk));
  }

  load(chunk: DumpChunk): void {
    const kind = typeof chunk === "object" && chunk !== null ? chunk.kind : undefined;
    if (kind !== "documents" && kind !== "indexEntries" && kind !== "receipts") {
      throw new CairnError("LOCAL_RESTORE_INVALID", `dump chunk of unknown kind ${JSON.stringify(kind)}`);
    }
    this.rules.validIds.clear();
    validateRows("LOCAL_RESTORE_INVALID", RECORD_KIND_OF_CHUNK[kind], chunk.rows as readonly unknown[], this.rules, this.counts[kind]);
    try {
      this.loadChunk(chunk);
    } catch (error) {
      // The only row-level failure left after validation: a (key, ts) given twice.
      throw new CairnError("LOCAL_RESTORE_INVALID", `dump chunk of ${kind} cannot be loaded: ${String(error)}`, {
        cause: error,
      });
    }
    this.counts[kind] += chunk.rows.length;
  }

  stats(): RestoreStats {
    return { ...this.counts };
  }

  private write(chunk: DumpChunk): void {
    switch (chunk.kind) {
      case "documents":
        this.insertDocuments.run(chunk.rows);
        return;
      case "indexEntries":
        this.insertIndexEntries.run(chunk.rows);
        return;
      case "receipts":
        this.insertReceipts.run(chunk.rows);
        return;
    }
  }
}

function swapIn(db: SqliteDatabase, meta: LocalMeta): void {
  db.transaction(() => {
    for (const table of DATA_TABLES) {
      db.exec(`DROP TABLE ${table}; ALTER TABLE ${STAGING_PREFIX}${table} RENAME TO ${table};`);
    }
    try {
      db.exec(SECONDARY_INDEXES_SQL);
    } catch (error) {
      // The staging documents table has no key of its own: a (id, ts) given twice shows here.
      throw new CairnError("LOCAL_RESTORE_INVALID", `dump cannot be loaded: ${String(error)}`, { cause: error });
    }
    db.prepare(UPDATE_META).run(...metaParameters(meta));
  })();
}

function validateRestoreMeta(meta: RestoreMeta): void {
  const problems: string[] = [];
  if (typeof meta !== "object" || meta === null) problems.push("meta must be an object");
  else {
    if (!Number.isSafeInteger(meta.appliedSeqno) || meta.appliedSeqno < -1) problems.push("appliedSeqno must be an integer >= -1");
    if (!Number.isSafeInteger(meta.epoch) || meta.epoch < 0) problems.push("epoch must be a non-negative integer");
    if (meta.lastHash !== null && typeof meta.lastHash !== "string") problems.push("lastHash must be a string or null");
    if (!Number.isSafeInteger(meta.frontierTs) || meta.frontierTs < 0) problems.push("frontierTs must be a non-negative integer");
  }
  if (problems.length > 0) {
    throw new CairnError("LOCAL_RESTORE_INVALID", `restore meta is invalid: ${problems.join("; ")}`, {
      details: { meta },
    });
  }
}
