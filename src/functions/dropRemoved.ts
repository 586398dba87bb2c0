import { CairnError, hasErrorCode, INDEX_BACKFILL_BATCH_DOCUMENTS, type Random } from "../base/index.js";
import { indexRange, successorKey, type DocumentId } from "../model/index.js";
import { schemaCatalogObject, type CatalogIndex, type CatalogTable, type SchemaCatalog } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import type { DocumentWrite, IndexWrite, WriteUnit } from "../shard/index.js";
import { indexInfoOf } from "./catalog.js";
import { decodeDocument, indexKeysOf } from "./documents.js";
import type { ShardAccess } from "./FunctionRuntime.js";

/**
 * Deletes the data of tables and indexes a schema dropped with an acknowledgement
 * (catalog "dropping", SchemaOptions.drop), then takes them out of the catalog.
 *
 * Each shard's writer deletes its shard's part, in write units like any commit: an
 * index's entries; a table's documents with every entry of every index of theirs. So the
 * deletion is in the log — replicas apply it, the next snapshot no longer holds the data,
 * and GC removes the segments and snapshots that still do once they leave the retention
 * window (a restore to a moment before the drop still has them). A writer records its
 * shard done in the catalog (CAS); the last shard done takes the table or index out.
 *
 * Safe while the app runs: nothing writes a dropped table or index any more (the schema
 * no longer has it, so no function can name it, and the catalog no longer binds it), and a
 * crash mid-way is resumed by the next run (what is deleted stays deleted; the scan starts
 * over from what is left).
 */
export interface DropProgress {
  readonly what: string;
  readonly rows: number;
}

export interface DropOptions {
  /** Every shard of the deployment, in shard order. */
  readonly shards: readonly ShardAccess[];
  /** The shards to clear here: those this node writes (default: every shard). */
  readonly own?: readonly number[];
  readonly store: ObjectStore;
  readonly random: Random;
  readonly onProgress?: (progress: DropProgress) => void;
}

/** Drops the own shards' part of everything "dropping"; returns what left the catalog (by this run or another node's). */
export async function dropRemoved(options: DropOptions): Promise<string[]> {
  const catalogObject = schemaCatalogObject(options.store, options.random);
  const stored = (await catalogObject.read())?.value;
  if (stored === undefined) return [];
  const own = options.own ?? options.shards.map((_, shard) => shard);
  const gone: string[] = [];
  for (const table of stored.tables) {
    if (table.state === "dropping") {
      const what = `table ${table.name}`;
      for (const shard of own) {
        if ((table.droppedShards ?? []).includes(shard)) continue;
        await dropTableShard(options.shards[shard]!, table, (rows) => options.onProgress?.({ what, rows }));
        if (await markDropped(options, { table: table.number }, shard)) gone.push(what);
      }
      continue;
    }
    for (const index of table.indexes) {
      if (index.state !== "dropping") continue;
      const what = `index ${table.name}.${index.name}`;
      for (const shard of own) {
        if ((index.droppedShards ?? []).includes(shard)) continue;
        await dropIndexShard(options.shards[shard]!, index, (rows) => options.onProgress?.({ what, rows }));
        if (await markDropped(options, { index: index.id }, shard)) gone.push(what);
      }
    }
  }
  return gone;
}

/** Deletes every entry of `index` on one shard. */
async function dropIndexShard(shard: ShardAccess, index: CatalogIndex, progress: (rows: number) => void): Promise<void> {
  let { start } = indexRange(index.id, { equal: [] });
  const { end } = indexRange(index.id, { equal: [] });
  let rows = 0;
  for (;;) {
    const readTs = shard.readTs;
    const entries = shard.local.indexScan(index.id, { start, end }, readTs, "asc", INDEX_BACKFILL_BATCH_DOCUMENTS);
    if (entries.length === 0) return;
    const indexWrites: IndexWrite[] = entries.map((entry) => ({ indexId: index.id, key: entry.key, docId: null }));
    await commitOrRescan(shard, { readTs, documents: [], indexWrites, readSet: {} });
    rows += entries.length;
    progress(rows);
    start = successorKey(entries.at(-1)!.key);
  }
}

/** Deletes every document of `table` on one shard, with its entries in every index of the table. */
async function dropTableShard(shard: ShardAccess, table: CatalogTable, progress: (rows: number) => void): Promise<void> {
  const indexes = table.indexes.filter((index) => index.name !== "by_id").map(indexInfoOf);
  let rows = 0;
  for (;;) {
    const readTs = shard.readTs;
    // From the start each time: what the last batch deleted is gone at the next readTs.
    const found = shard.local.documentScan(table.number, { start: "", end: null }, readTs, "asc", INDEX_BACKFILL_BATCH_DOCUMENTS / 4);
    if (found.length === 0) return;
    const documents: DocumentWrite[] = [];
    const indexWrites: IndexWrite[] = [];
    for (const row of found) {
      documents.push({ tableNumber: table.number, id: row.id, value: null, prevTs: row.docTs });
      const document = decodeDocument(row.id, row.value);
      for (const index of indexes) for (const key of indexKeysOf(index, document)) indexWrites.push({ indexId: index.id, key, docId: null });
    }
    await commitOrRescan(shard, { readTs, documents, indexWrites, readSet: { documents: found.map((row) => row.id as DocumentId) } });
    rows += found.length;
    progress(rows);
  }
}

/** Commits one batch; a conflict (a document written since the scan, by an older app on another node) only makes the caller scan again. */
async function commitOrRescan(shard: ShardAccess, unit: WriteUnit): Promise<void> {
  try {
    await shard.commit(unit);
  } catch (error) {
    if (hasErrorCode(error, "WRITE_CONFLICT")) return;
    throw error;
  }
}

/** Records `shard` done for a dropped table or index; the last shard takes it out of the catalog. Returns whether it is gone. */
async function markDropped(options: DropOptions, target: { readonly table: number } | { readonly index: number }, shard: number): Promise<boolean> {
  let gone = false;
  const shards = options.shards.length;
  const all = (done: readonly number[]) => Array.from({ length: shards }, (_, candidate) => candidate).every((candidate) => done.includes(candidate));
  await schemaCatalogObject(options.store, options.random).update((current: SchemaCatalog | null) => {
    if (current === null) throw new CairnError("INTERNAL", "the schema catalog vanished during a drop");
    const { version: _version, nonce: _nonce, ...fields } = current;
    const tables: CatalogTable[] = [];
    gone = true;
    for (const table of current.tables) {
      if ("table" in target && table.number === target.table) {
        const done = [...new Set([...(table.droppedShards ?? []), shard])].sort((a, b) => a - b);
        gone = all(done);
        if (!gone) tables.push({ ...table, droppedShards: done });
        continue;
      }
      if ("index" in target && table.indexes.some((index) => index.id === target.index)) {
        const indexes: CatalogIndex[] = [];
        for (const index of table.indexes) {
          if (index.id !== target.index) {
            indexes.push(index);
            continue;
          }
          const done = [...new Set([...(index.droppedShards ?? []), shard])].sort((a, b) => a - b);
          gone = all(done);
          if (!gone) indexes.push({ ...index, droppedShards: done });
        }
        tables.push({ ...table, indexes });
        continue;
      }
      tables.push(table);
    }
    return { ...fields, tables };
  });
  return gone;
}
