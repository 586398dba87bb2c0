import { LOCAL_PRUNE_BATCH_ROWS } from "../base/limits.js";
import { type LocalMeta, metaParameters, UPDATE_META } from "./LocalMeta.js";
import type { SqliteDatabase } from "./schema.js";

/**
 * Drops history that no read at or above `belowTs` can see, and receipts older than
 * `receiptsBelowTs` (receipts are not versioned: they answer re-sent mutations for as
 * long as their own retention window, independent of the history kept for reads).
 *
 * For one key (a document id, or an index id and key) and a row `r` with `r.ts <= belowTs`:
 * - every older row of the key is hidden from reads at >= belowTs by `r` (or by a newer
 *   row), so it may go;
 * - if `r` is a deletion, `r` itself may go too: the reads it answered then find nothing
 *   at or below their ts, which also reads as "deleted".
 * For documents, applying that to each row with ts in [minReadableTs, belowTs] is enough,
 * because the previous prune (or restore) left at most one row per key below
 * minReadableTs, never a deletion, and `apply` refuses rows below minReadableTs. Both
 * rules only delete rows older than the row examined, so the walk by ts never deletes a
 * row ahead of it. Index entries are walked through their history log instead (below).
 *
 * Invariants:
 * - Reads at ts >= belowTs return the same before, during and after pruning; every
 *   intermediate state (one transaction per batch) satisfies this too.
 * - minReadableTs becomes belowTs in the first transaction, before any row is removed,
 *   and never decreases: pruning below it is a no-op.
 * - Each transaction examines at most LOCAL_PRUNE_BATCH_ROWS rows.
 */
export interface PruneStats {
  readonly documentsRemoved: number;
  readonly indexEntriesRemoved: number;
  readonly receiptsRemoved: number;
  /** The readable floor after pruning. */
  readonly minReadableTs: number;
}

export function pruneHistory(
  db: SqliteDatabase,
  belowTs: number,
  current: LocalMeta,
  receiptsBelowTs = belowTs,
): { stats: PruneStats; meta: LocalMeta } {
  const fromTs = current.minReadableTs;
  const receiptsRemoved = pruneReceipts(db, receiptsBelowTs);
  if (belowTs <= fromTs) {
    return { stats: { documentsRemoved: 0, indexEntriesRemoved: 0, receiptsRemoved, minReadableTs: fromTs }, meta: current };
  }
  const meta: LocalMeta = { ...current, minReadableTs: belowTs };
  db.prepare(UPDATE_META).run(...metaParameters(meta));
  const stats: PruneStats = {
    documentsRemoved: pruneDocuments(db, fromTs, belowTs),
    indexEntriesRemoved: pruneIndexEntries(db, belowTs),
    receiptsRemoved,
    minReadableTs: belowTs,
  };
  return { stats, meta };
}

interface PageCursor {
  readonly belowTs: number;
  readonly afterTs: number;
  readonly limit: number;
}

function pruneDocuments(db: SqliteDatabase, fromTs: number, belowTs: number): number {
  interface Row {
    id: string;
    ts: number;
    deleted: number;
  }
  // `ts >= :afterTs` lets SQLite seek; the row value then skips what the last page covered.
  const page = db.prepare<[PageCursor & { afterId: string }], Row>(
    `SELECT id, ts, value IS NULL AS deleted FROM documents
     WHERE ts >= :afterTs AND ts <= :belowTs AND (ts, id) > (:afterTs, :afterId)
     ORDER BY ts, id LIMIT :limit`,
  );
  const dropOlder = db.prepare<[string, number]>(`DELETE FROM documents WHERE id = ? AND ts < ?`);
  const dropThrough = db.prepare<[string, number]>(`DELETE FROM documents WHERE id = ? AND ts <= ?`);
  let removed = 0;
  const batch = db.transaction((rows: readonly Row[]) => {
    for (const row of rows) removed += (row.deleted ? dropThrough : dropOlder).run(row.id, row.ts).changes;
  });
  // Ids are never empty, so ("", fromTs) precedes every row at fromTs.
  let cursor = { belowTs, afterTs: fromTs, afterId: "", limit: LOCAL_PRUNE_BATCH_ROWS };
  for (;;) {
    const rows = page.all(cursor);
    if (rows.length === 0) return removed;
    batch(rows);
    const last = rows[rows.length - 1]!;
    cursor = { ...cursor, afterTs: last.ts, afterId: last.id };
  }
}

/**
 * Index entries are found through `index_history`, the log of every folded index row in
 * ts order: its rows at or below `belowTs` are examined in log order (the rules above
 * hold for any row at or below belowTs, in any order) and deleted once examined. The
 * walk stops at the first row above belowTs; a row out of order behind it waits for a
 * later prune, which only delays freeing space.
 */
function pruneIndexEntries(db: SqliteDatabase, belowTs: number): number {
  interface Row {
    rowid: number;
    ts: number;
    index_id: number;
    key: Buffer;
  }
  const page = db.prepare<[number, number, number], Row>(
    `SELECT rowid, ts, index_id, key FROM index_history WHERE rowid > ? AND rowid < ? ORDER BY rowid LIMIT ?`,
  );
  const firstAbove = db.prepare<[number], number>(`SELECT MIN(rowid) FROM index_history WHERE ts > ?`).pluck();
  const entryAt = db
    .prepare<[number, Uint8Array, number], number>(`SELECT doc_id IS NULL FROM index_entries WHERE index_id = ? AND key = ? AND ts = ?`)
    .pluck();
  const dropOlder = db.prepare<[number, Uint8Array, number]>(
    `DELETE FROM index_entries WHERE index_id = ? AND key = ? AND ts < ?`,
  );
  const dropThrough = db.prepare<[number, Uint8Array, number]>(
    `DELETE FROM index_entries WHERE index_id = ? AND key = ? AND ts <= ?`,
  );
  const dropExamined = db.prepare<[number]>(`DELETE FROM index_history WHERE rowid <= ?`);
  let removed = 0;
  const batch = db.transaction((rows: readonly Row[]) => {
    for (const row of rows) {
      const removal = entryAt.get(row.index_id, row.key, row.ts);
      if (removal === undefined) continue; // Pruned already, through a newer row of its key.
      removed += (removal === 1 ? dropThrough : dropOlder).run(row.index_id, row.key, row.ts).changes;
    }
    dropExamined.run(rows[rows.length - 1]!.rowid);
  });
  // Rows after the first one above belowTs stay for a later prune (see above).
  const stopAt = firstAbove.get(belowTs) ?? Number.MAX_SAFE_INTEGER;
  let afterRowid = 0;
  for (;;) {
    const rows = page.all(afterRowid, stopAt, LOCAL_PRUNE_BATCH_ROWS);
    if (rows.length === 0) return removed;
    batch(rows);
    afterRowid = rows[rows.length - 1]!.rowid;
  }
}

function pruneReceipts(db: SqliteDatabase, belowTs: number): number {
  const drop = db.prepare<[number, number]>(
    `DELETE FROM receipts WHERE rowid IN (SELECT rowid FROM receipts WHERE ts < ? ORDER BY ts LIMIT ?)`,
  );
  let removed = 0;
  for (;;) {
    const changes = drop.run(belowTs, LOCAL_PRUNE_BATCH_ROWS).changes;
    removed += changes;
    if (changes < LOCAL_PRUNE_BATCH_ROWS) return removed;
  }
}
