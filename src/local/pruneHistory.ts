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
 * Applying that to each row with ts in [minReadableTs, belowTs] is enough, because the
 * previous prune (or restore) left at most one row per key below minReadableTs, never a
 * deletion, and `apply` refuses rows below minReadableTs. Both rules only delete rows
 * older than the row examined, so the walk by ts never deletes a row ahead of it.
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
    indexEntriesRemoved: pruneIndexEntries(db, fromTs, belowTs),
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

function pruneIndexEntries(db: SqliteDatabase, fromTs: number, belowTs: number): number {
  interface Row {
    index_id: number;
    key: Buffer;
    ts: number;
    removed: number;
  }
  const page = db.prepare<[PageCursor & { afterIndexId: number; afterKey: Uint8Array }], Row>(
    `SELECT index_id, key, ts, doc_id IS NULL AS removed FROM index_entries
     WHERE ts >= :afterTs AND ts <= :belowTs AND (ts, index_id, key) > (:afterTs, :afterIndexId, :afterKey)
     ORDER BY ts, index_id, key LIMIT :limit`,
  );
  const dropOlder = db.prepare<[number, Uint8Array, number]>(
    `DELETE FROM index_entries WHERE index_id = ? AND key = ? AND ts < ?`,
  );
  const dropThrough = db.prepare<[number, Uint8Array, number]>(
    `DELETE FROM index_entries WHERE index_id = ? AND key = ? AND ts <= ?`,
  );
  let removed = 0;
  const batch = db.transaction((rows: readonly Row[]) => {
    for (const row of rows) removed += (row.removed ? dropThrough : dropOlder).run(row.index_id, row.key, row.ts).changes;
  });
  // Index ids are never negative, so (-1, "") precedes every row at fromTs.
  let cursor = { belowTs, afterTs: fromTs, afterIndexId: -1, afterKey: new Uint8Array(0) as Uint8Array, limit: LOCAL_PRUNE_BATCH_ROWS };
  for (;;) {
    const rows = page.all(cursor);
    if (rows.length === 0) return removed;
    batch(rows);
    const last = rows[rows.length - 1]!;
    cursor = { ...cursor, afterTs: last.ts, afterIndexId: last.index_id, afterKey: last.key };
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
