import { CairnError, hasErrorCode, INDEX_BACKFILL_BATCH_DOCUMENTS, MUTATION_ATTEMPTS_MAX, type Random } from "../base/index.js";
import { indexRange, successorKey } from "../model/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import type { WriteUnit } from "../shard/index.js";
import { schemaCatalogObject } from "../manifest/index.js";
import { markShardBackfilled, type Catalog, type IndexInfo } from "./catalog.js";
import { decodeDocument, indexKeysOf } from "./documents.js";
import type { ShardAccess } from "./FunctionRuntime.js";

/**
 * Gives every existing document its entry in each index added to a table that already
 * existed ("backfilling" in the catalog), then marks the index ready.
 *
 * Why this is safe while mutations run: the runtime already writes a backfilling index
 * for every document it writes, and each batch here commits with the documents it
 * indexed as its read set, so a batch that raced a write to one of them fails with
 * WRITE_CONFLICT and is read and indexed again. Re-running after a crash is harmless: an
 * entry written twice is the same entry. Each shard is backfilled by its writer (`own`: the
 * shards this node writes), which records it in the stored catalog; the index is ready once
 * every shard is recorded, whichever nodes did them (a fleet), and nodes that did not
 * finish it learn so through refreshIndexStates.
 */
export interface BackfillProgress {
  readonly table: string;
  readonly index: string;
  readonly documents: number;
}

export interface BackfillOptions {
  readonly catalog: Catalog;
  /** Every shard of the deployment, in shard order. */
  readonly shards: readonly ShardAccess[];
  /** The shards to backfill here: those this node writes (default: every shard). */
  readonly own?: readonly number[];
  readonly store: ObjectStore;
  readonly random: Random;
  readonly onProgress?: (progress: BackfillProgress) => void;
}

/** Backfills the own shards of every backfilling index; returns the indexes that became ready (by this run or another node's). */
export async function backfillIndexes(options: BackfillOptions): Promise<BackfillProgress[]> {
  const done: BackfillProgress[] = [];
  const own = options.own ?? options.shards.map((_, shard) => shard);
  for (const table of options.catalog.tables) {
    for (const index of table.indexes.values()) {
      if (index.state !== "backfilling" || index.kind === "documents") continue;
      const byCreation = table.indexes.get("by_creation")!;
      const stored = (await schemaCatalogObject(options.store, options.random).read())?.value.tables.flatMap((candidate) => candidate.indexes).find((candidate) => candidate.id === index.id);
      if (stored?.state === "ready") {
        index.state = "ready";
        done.push({ table: table.name, index: index.name, documents: 0 });
        continue;
      }
      const already = new Set(stored?.backfilledShards ?? []);
      let documents = 0;
      let state: "ready" | "backfilling" = "backfilling";
      for (const shard of own) {
        if (already.has(shard)) continue;
        documents += await backfillShard(options, options.shards[shard]!, table.name, index, byCreation.id, documents);
        state = (await markShardBackfilled(options.store, options.random, index.id, shard, options.shards.length)).state;
      }
      if (state === "ready") {
        index.state = "ready";
        done.push({ table: table.name, index: index.name, documents });
      }
    }
  }
  return done;
}

/** Indexes every document of one shard; returns how many. `before`: documents of earlier shards (for progress). */
async function backfillShard(options: BackfillOptions, shard: ShardAccess, tableName: string, index: IndexInfo, byCreationId: number, before: number): Promise<number> {
      let { start } = indexRange(byCreationId, { equal: [] });
      const { end } = indexRange(byCreationId, { equal: [] });
      let documents = 0;
      let conflicts = 0;
      for (;;) {
        const readTs = shard.readTs;
        // A search index writes an entry per distinct term: fewer documents per unit keep it small.
        const batch = index.kind === "search" ? INDEX_BACKFILL_BATCH_DOCUMENTS / 16 : INDEX_BACKFILL_BATCH_DOCUMENTS;
        const rows = shard.local.indexScan(byCreationId, { start, end }, readTs, "asc", batch);
        if (rows.length === 0) break;
        const indexWrites = rows.flatMap((row) => indexKeysOf(index, decodeDocument(row.id, row.value)).map((key) => ({ indexId: index.id, key, docId: row.id })));
        const unit: WriteUnit = { readTs, documents: [], indexWrites, readSet: { documents: rows.map((row) => row.id) } };
        try {
          await shard.commit(unit);
        } catch (error) {
          if (!hasErrorCode(error, "WRITE_CONFLICT")) throw error;
          if (++conflicts >= MUTATION_ATTEMPTS_MAX) {
            throw new CairnError("WRITE_CONFLICT", `backfilling ${tableName}.${index.name}: a batch lost ${conflicts} races with writes to its documents in a row; restart to resume`, {
              cause: error,
            });
          }
          continue;
        }
        conflicts = 0;
        documents += rows.length;
        options.onProgress?.({ table: tableName, index: index.name, documents: before + documents });
        if (rows.length < batch) break;
        start = successorKey(rows[rows.length - 1]!.key);
      }
      return documents;
}
