import { LOCAL_PRUNE_BATCH_ROWS } from "../base/index.js";
import { type LocalMeta, metaParameters, UPDATE_META } from "./LocalMeta.js";
import type { SqliteDatabase } from "./schema.js";

/**
 * Drops history that no read at or above `belowTs` can see, and receipts older than
 * `receipts.belowTs` (receipts are not versioned: they answer re-sent mutations for as
 * long as their own retention window, independent of the history kept for reads) —
 * except a receipt holding its client's floor (the highest floorSeq of its client and
 * owner), which is kept until `receipts.floorsBelowTs`: a client's floor outlives its
 * receipts, so a seq it acknowledged stays refused after they expired.
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
 * row ahead of it. Index entries are swept in key order instead (sweepIndexEntries).
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

/** Receipts older than `belowTs` go; one holding its client's floor stays until `floorsBelowTs` (<= belowTs); `examinedFromTs`: where the last prune left off. */
export interface ReceiptPrune {
  readonly belowTs: number;
  readonly floorsBelowTs: number;
  readonly examinedFromTs: number;
}

export function pruneHistory(
  db: SqliteDatabase,
  belowTs: number,
  current: LocalMeta,
  receipts: ReceiptPrune,
  /**
   * The part of the index sweep to run (default: all of it, from the start). With no
   * sweep under way (`from` null) one begins when the floor moves now, or `owed` (it moved
   * since the last sweep began), and only if `begin` allows it.
   */
  sweep: { readonly from: SweepCursor | null; readonly maxRows: number; readonly begin?: boolean; readonly owed?: boolean } = { from: null, maxRows: Number.MAX_SAFE_INTEGER },
): { stats: PruneStats; meta: LocalMeta; sweepNext: SweepCursor | null; sweepBegan: boolean } {
  const fromTs = current.minReadableTs;
  const receiptsRemoved = pruneReceipts(db, receipts);
  const meta: LocalMeta = belowTs > fromTs ? { ...current, minReadableTs: belowTs } : current;
  if (meta !== current) db.prepare(UPDATE_META).run(...metaParameters(meta));
  const documentsRemoved = meta !== current ? pruneDocuments(db, fromTs, belowTs) : 0;
  // Index keys are pruned below the floor as it now stands, wherever the sweep is: a new
  // sweep starts when the floor moved, one half done goes on.
  const sweeping = sweep.from !== null || ((meta !== current || sweep.owed === true) && sweep.begin !== false);
  const swept = sweeping ? sweepIndexEntries(db, meta.minReadableTs, sweep.from, sweep.maxRows) : { removed: 0, next: null };
  return {
    stats: { documentsRemoved, indexEntriesRemoved: swept.removed, receiptsRemoved, minReadableTs: meta.minReadableTs },
    meta,
    sweepNext: swept.next,
    sweepBegan: sweeping && sweep.from === null,
  };
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

/** Where a sweep of index entries stands: it continues after this key. */
export interface SweepCursor {
  readonly indexId: number;
  readonly key: Uint8Array;
}

export interface SweepStep {
  readonly removed: number;
  /** Null once the sweep reached the end of the table. */
  readonly next: SweepCursor | null;
}

/**
 * Index entries have no index by time (keeping one current cost a fifth of the fold
 * rate), so they are pruned by a sweep in key order instead: each key's rows are seen
 * together, and the rules above are applied with the newest row at or below belowTs as
 * `r`. A sweep may stop after about `maxRows` rows and continue from its cursor on a
 * later call with a later belowTs (each key is pruned with the belowTs of its visit,
 * never above the readable floor, so reads are unaffected); until it has passed a key,
 * that key's dead rows only take space.
 */
export function sweepIndexEntries(db: SqliteDatabase, belowTs: number, from: SweepCursor | null, maxRows: number): SweepStep {
  interface Row {
    index_id: number;
    key: Buffer;
    ts: number;
    removed: number;
  }
  const page = db.prepare<[number, Uint8Array, number], Row>(
    `SELECT index_id, key, ts, doc_id IS NULL AS removed FROM index_entries
     WHERE (index_id, key) > (?, ?) ORDER BY index_id, key, ts LIMIT ?`,
  );
  const wholeKey = db.prepare<[number, Uint8Array], Row>(
    `SELECT index_id, key, ts, doc_id IS NULL AS removed FROM index_entries WHERE index_id = ? AND key = ? ORDER BY ts`,
  );
  const dropOlder = db.prepare<[number, Uint8Array, number]>(`DELETE FROM index_entries WHERE index_id = ? AND key = ? AND ts < ?`);
  const dropThrough = db.prepare<[number, Uint8Array, number]>(`DELETE FROM index_entries WHERE index_id = ? AND key = ? AND ts <= ?`);
  let removed = 0;
  const pruneGroup = (rows: readonly Row[]) => {
    let newest = -1;
    for (let at = 0; at < rows.length && rows[at]!.ts <= belowTs; at++) newest = at;
    if (newest < 0) return;
    const row = rows[newest]!;
    if (row.removed === 1) removed += dropThrough.run(row.index_id, row.key, row.ts).changes;
    else if (newest > 0) removed += dropOlder.run(row.index_id, row.key, row.ts).changes;
  };
  const pruneGroups = db.transaction((groups: readonly (readonly Row[])[]) => groups.forEach(pruneGroup));
  // Index ids are never negative, so (-1, "") precedes every key.
  let cursor: SweepCursor = from ?? { indexId: -1, key: new Uint8Array(0) };
  let examined = 0;
  while (examined < maxRows) {
    const limit = Math.min(LOCAL_PRUNE_BATCH_ROWS, maxRows - examined + 1);
    const rows = page.all(cursor.indexId, cursor.key, limit);
    if (rows.length === 0) return { removed, next: null };
    const groups = groupByKey(rows);
    // A full page may have cut its last key's rows short: that key is read whole next time.
    if (rows.length === limit) {
      const last = groups.pop()!;
      if (groups.length === 0) groups.push(wholeKey.all(last[0]!.index_id, last[0]!.key));
    }
    pruneGroups(groups);
    examined += groups.reduce((total, group) => total + group.length, 0);
    const lastRow = groups[groups.length - 1]!.at(-1)!;
    cursor = { indexId: lastRow.index_id, key: lastRow.key };
    if (rows.length < limit) return { removed, next: null };
  }
  return { removed, next: cursor };
}

function groupByKey<Row extends { index_id: number; key: Buffer }>(rows: readonly Row[]): Row[][] {
  const groups: Row[][] = [];
  for (const row of rows) {
    const group = groups[groups.length - 1];
    const first = group?.[0];
    if (first !== undefined && first.index_id === row.index_id && first.key.equals(row.key)) group!.push(row);
    else groups.push([row]);
  }
  return groups;
}

/**
 * First every receipt below `floorsBelowTs`, then those in [floorsBelowTs, belowTs) that
 * hold no floor, walking by ts from where the last prune left off: a floor holder it
 * passes is looked at once, not in every batch (a later receipt with a higher floor
 * prunes it when folded, see statements.ts).
 */
function pruneReceipts(db: SqliteDatabase, receipts: ReceiptPrune): number {
  const dropAll = db.prepare<[number, number]>(`DELETE FROM receipts WHERE rowid IN (SELECT rowid FROM receipts WHERE ts < ? ORDER BY ts LIMIT ?)`);
  let removed = 0;
  for (;;) {
    const changes = dropAll.run(receipts.floorsBelowTs, LOCAL_PRUNE_BATCH_ROWS).changes;
    removed += changes;
    if (changes < LOCAL_PRUNE_BATCH_ROWS) break;
  }
  const dropUnlessFloor = db
    .prepare<[number, number, number], number>(
      `DELETE FROM receipts WHERE rowid IN (
         SELECT rowid FROM receipts AS r WHERE ts >= ? AND ts < ?
           AND (floor_seq = 0 OR floor_seq < (SELECT MAX(floor_seq) FROM receipts WHERE client_id = r.client_id AND owner IS r.owner))
         ORDER BY ts LIMIT ?)
       RETURNING ts`,
    )
    .pluck();
  let fromTs = Math.max(receipts.floorsBelowTs, receipts.examinedFromTs);
  for (;;) {
    const dropped = dropUnlessFloor.all(fromTs, receipts.belowTs, LOCAL_PRUNE_BATCH_ROWS);
    removed += dropped.length;
    if (dropped.length < LOCAL_PRUNE_BATCH_ROWS) return removed;
    fromTs = Math.max(fromTs, ...dropped);
  }
}
