import Database from "better-sqlite3";
import { CairnError, LOCAL_BUSY_TIMEOUT_MS, LOCAL_PAGE_BYTES, LOCAL_PAGE_CACHE_KIB } from "../base/index.js";

/**
 * The SQLite schema of one shard's local materialization (DESIGN.md §6).
 *
 * - `documents` and `index_entries` keep every version, unique by (key, ts), so "the
 *   newest row at or below ts" is one backwards seek on an index ending in `ts`.
 * - `documents` is a rowid table with a separate UNIQUE (id, ts) index: a fold appends
 *   the ~200-byte values at the end of the table and only the small (id, ts, rowid)
 *   entries go into a random-key B-tree. Keeping the values inside a WITHOUT ROWID
 *   primary key made every fold rewrite pages of the largest B-tree at random (measured
 *   at 1M documents: 34k against 57k documents/s per sorted fold of 200k).
 * - `index_entries` rows are small, so its primary key is its table (WITHOUT ROWID).
 * - A document id embeds its table number, so `id` alone is unique across tables;
 *   `table_number` is kept as a column for `changes` and dumps.
 * - Index keys are BLOBs: SQLite compares BLOBs with memcmp, which is exactly the order
 *   of Cairn's order-preserving keys.
 * - `documents_by_ts` serves `changes`, `maxTs` and pruning, which walk documents by time.
 *   Index entries have no such index (keeping it current cost a fifth of the fold rate):
 *   pruning sweeps them in key order instead (pruneHistory.ts).
 * - `receipts.route` is the route of the mutation's shardBy value, NULL without one: what
 *   a reshard needs to move the receipt to its lane under the new shard count (version 3).
 * - `receipts.owner` is the identity that wrote the receipt (NULL: written before owners),
 *   `receipts.floor_seq` the client's floor when it sent the mutation (0: none); a client's
 *   floor is the highest of its receipts', found by `receipts_by_floor` (version 4).
 * - `meta` holds exactly one row (`singleton = 0`), with the schema version.
 */

/** Bump when the layout changes; a file with another version is refused, never migrated silently. */
export const SCHEMA_VERSION = 4;

export type SqliteDatabase = Database.Database;

/** The data tables under a prefix: "" for the live tables, STAGING_PREFIX for a restore in progress. */
export function dataTablesSql(prefix: string): string {
  return `
    CREATE TABLE ${prefix}documents (
      table_number INTEGER NOT NULL,
      id TEXT NOT NULL,
      ts INTEGER NOT NULL,
      value TEXT,
      prev_ts INTEGER
    );
    CREATE TABLE ${prefix}index_entries (
      index_id INTEGER NOT NULL,
      key BLOB NOT NULL,
      ts INTEGER NOT NULL,
      doc_id TEXT,
      PRIMARY KEY (index_id, key, ts)
    ) WITHOUT ROWID;
    CREATE TABLE ${prefix}receipts (
      client_id TEXT NOT NULL,
      seq INTEGER NOT NULL,
      ts INTEGER NOT NULL,
      result TEXT NOT NULL,
      route BLOB,
      owner TEXT,
      floor_seq INTEGER NOT NULL,
      PRIMARY KEY (client_id, seq)
    );`;
}

/**
 * Indexes of the live tables. A restore builds them after loading (one sort instead of a
 * million random inserts), inside the transaction that swaps the tables in. The UNIQUE
 * index is what `ON CONFLICT (id, ts)` of a fold relies on.
 */
export const SECONDARY_INDEXES_SQL = `
  CREATE UNIQUE INDEX documents_by_id ON documents (id, ts);
  CREATE INDEX documents_by_ts ON documents (ts);
  CREATE INDEX receipts_by_ts ON receipts (ts);
  CREATE INDEX receipts_by_floor ON receipts (client_id, owner, floor_seq);`;

const META_TABLE_SQL = `
  CREATE TABLE meta (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 0),
    schema_version INTEGER NOT NULL,
    shard INTEGER NOT NULL,
    deployment_id TEXT NOT NULL,
    applied_seqno INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    last_hash TEXT,
    frontier_ts INTEGER NOT NULL,
    min_readable_ts INTEGER NOT NULL
  );`;

/** Tables a restore fills before swapping them in; leftovers of a crashed restore are dropped on open. */
export const STAGING_PREFIX = "restore_";
export const DATA_TABLES = ["documents", "index_entries", "receipts"] as const;

/**
 * Opens (and on first use creates) the database at `path`, refusing a file of another
 * shard or deployment, or of an unknown schema version, before changing anything in it.
 */
export function openDatabase(path: string, shard: number, deploymentId: string): SqliteDatabase {
  const db = connect(path, {});
  try {
    const created = !checkExisting(db, path, shard, deploymentId);
    // Only an empty file takes a page size, and only before WAL mode writes its header.
    if (created) db.pragma(`page_size = ${LOCAL_PAGE_BYTES}`);
    configure(db);
    if (created) createSchema(db, shard, deploymentId);
    dropStaging(db);
    return db;
  } catch (error) {
    db.close();
    throw error;
  }
}

/** A second, read-only connection to a file database (dump cursors read through it). */
export function openReader(path: string): SqliteDatabase {
  return connect(path, { readonly: true, fileMustExist: true });
}

export function dropStaging(db: SqliteDatabase): void {
  for (const table of DATA_TABLES) db.exec(`DROP TABLE IF EXISTS ${STAGING_PREFIX}${table}`);
}

function connect(path: string, options: Database.Options): SqliteDatabase {
  try {
    return new Database(path, options);
  } catch (error) {
    throw new CairnError("INVALID_ARGUMENT", `local store ${path} cannot be opened: ${String(error)}`, {
      cause: error,
      details: { path },
    });
  }
}

/**
 * The local copy is a cache of the bucket, which is the durable store: WAL keeps the file
 * consistent across crashes, and `synchronous = NORMAL` skips the fsync per commit. A
 * power loss may drop the last few transactions, but each transaction carries its own
 * `appliedSeqno`, so the node resumes from a consistent point and re-tails the log.
 */
export function configure(db: SqliteDatabase): void {
  for (const pragma of CONNECTION_PRAGMAS) db.pragma(pragma);
}

/** The page size the file was created with. */
export function pageBytesOf(db: SqliteDatabase): number {
  return db.pragma("page_size", { simple: true }) as number;
}

/**
 * The pragmas of every connection: `configure` (the main one) and the fold and checkpoint
 * workers' (Folder.ts), none with automatic checkpoints.
 */
export const CONNECTION_PRAGMAS = [
  "journal_mode = WAL",
  "synchronous = NORMAL",
  `cache_size = -${LOCAL_PAGE_CACHE_KIB}`,
  // Automatic checkpoints on the main connection would copy WAL back on the event loop
  // (after a restore, the whole restored file): a store's checkpoint worker runs them
  // (Folder.ts).
  "wal_autocheckpoint = 0",
  `busy_timeout = ${LOCAL_BUSY_TIMEOUT_MS}`,
] as const;

/** True if the file already holds this shard's store; throws if it holds anything else. */
function checkExisting(db: SqliteDatabase, path: string, shard: number, deploymentId: string): boolean {
  let tables: string[];
  try {
    tables = db.prepare<[], string>("SELECT name FROM sqlite_schema WHERE type = 'table'").pluck().all();
  } catch (error) {
    throw unsupported(path, `is not a SQLite database: ${String(error)}`, error);
  }
  if (tables.length === 0) return false;
  if (!tables.includes("meta")) throw unsupported(path, "is a SQLite database but not a Cairn local store");
  const version = db.prepare<[], unknown>("SELECT schema_version FROM meta").pluck().get();
  if (version !== SCHEMA_VERSION) {
    throw unsupported(path, `has schema version ${String(version)}; this build reads version ${SCHEMA_VERSION}`, undefined, {
      storedSchemaVersion: version,
    });
  }
  const row = db.prepare<[], { shard: number; deployment_id: string }>("SELECT shard, deployment_id FROM meta").get();
  if (row === undefined) throw unsupported(path, "has an empty meta table");
  if (row.shard !== shard || row.deployment_id !== deploymentId) {
    throw new CairnError(
      "LOCAL_META_MISMATCH",
      `${path} holds shard ${row.shard} of deployment ${row.deployment_id}, not shard ${shard} of ${deploymentId}`,
      { details: { path, storedShard: row.shard, storedDeploymentId: row.deployment_id, shard, deploymentId } },
    );
  }
  return true;
}

function createSchema(db: SqliteDatabase, shard: number, deploymentId: string): void {
  db.transaction(() => {
    db.exec(META_TABLE_SQL + dataTablesSql("") + SECONDARY_INDEXES_SQL);
    db.prepare(
      `INSERT INTO meta (singleton, schema_version, shard, deployment_id, applied_seqno, epoch, last_hash,
         frontier_ts, min_readable_ts) VALUES (0, ?, ?, ?, -1, 0, NULL, 0, 0)`,
    ).run(SCHEMA_VERSION, shard, deploymentId);
  })();
}

function unsupported(path: string, reason: string, cause?: unknown, details: Record<string, unknown> = {}): CairnError {
  return new CairnError("LOCAL_SCHEMA_UNSUPPORTED", `${path} ${reason}`, { cause, details: { path, ...details } });
}
