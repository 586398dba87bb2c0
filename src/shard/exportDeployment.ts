import { once } from "node:events";
import { createWriteStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync, type WriteStream } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { CairnError, randomHex, systemClock, systemRandom, type Clock, type Random } from "../base/index.js";
import { generationStore, globalsObject, isReshardLockHeld, reshardInProgress, schemaCatalogObject, type SchemaCatalog } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { decodeRecords } from "../segments/index.js";
import { generationHolding } from "./generationHolding.js";
import { commonFrontierTs } from "./logEnds.js";
import { checkMoment, withStateAt, workDirectoryOf, type StateAtProgress } from "./stateAt.js";

/**
 * `cairn export`: a consistent dump of the deployment at one timestamp into a folder
 * (DESIGN.md §10a; the format is docs/history.md's):
 *
 *   <folder>/cairn-export.json          {format, deploymentId, atTs, at, numShards, tables, catalog}
 *   <folder>/<table>/documents.jsonl    one document a line: {"_id", "_creationTime", fields…}
 *                                       in Cairn's lossless JSON value encoding
 *
 * The layout is Convex's snapshot export's (a folder per table with documents.jsonl), so
 * tools that read one read the other. Every shard's state is built at the same ts
 * (withStateAt), so the dump is one consistent cut across shards. Without a ts, the
 * export is taken at the logs' common frontier: the newest ts every shard's log has
 * closed, settled without waiting.
 *
 * The folder appears whole or not at all: it is written beside the target under a
 * temporary name and renamed last, so a killed export leaves only that temporary folder
 * (removed by the next run) and never a folder that looks complete. Memory is bounded by
 * one shard's local store and one dump chunk.
 */
export interface ExportOptions {
  readonly source: ObjectStore;
  /** Hybrid-logical µs; default: the logs' common frontier. */
  readonly atTs?: number;
  /** The folder to create (must not exist). */
  readonly to: string;
  readonly onProgress?: (progress: ExportProgress) => void;
  readonly workDirectory?: string;
  readonly settledAfterMs?: number;
  readonly clock?: Clock;
  readonly random?: Random;
}

export type ExportProgress =
  | (StateAtProgress & { readonly shards: number })
  | { readonly phase: "export"; readonly shard: number; readonly shards: number; readonly documents: number };

export interface ExportReport {
  readonly deploymentId: string;
  readonly atTs: number;
  readonly folder: string;
  readonly documents: number;
  readonly tables: readonly { readonly name: string; readonly documents: number }[];
}

export const EXPORT_FORMAT = 1;
export const EXPORT_MANIFEST_FILE = "cairn-export.json";
export const EXPORT_DOCUMENTS_FILE = "documents.jsonl";
const PARTIAL_PREFIX = ".cairn-export-partial-";

export async function exportDeployment(options: ExportOptions): Promise<ExportReport> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const { source } = options;
  const onProgress = options.onProgress ?? (() => undefined);
  const folder = resolve(options.to);
  if (existsSync(folder)) throw new CairnError("INVALID_ARGUMENT", `${folder} already exists: export into a folder that does not exist yet`, { details: { folder } });
  const globals = (await globalsObject(source, random).read())?.value ?? null;
  if (globals === null) throw new CairnError("DEPLOYMENT_MISMATCH", `no Cairn deployment at ${source.description} (globals missing): nothing to export`);
  if (isReshardLockHeld(globals, clock.nowMs())) throw reshardInProgress(globals.reshard!);
  const catalog = (await schemaCatalogObject(source, random).read())?.value ?? null;
  const atTs = options.atTs ?? (await commonFrontierTs(generationStore(source, globals.generation), globals.deploymentId, globals.numShards, random, clock));
  checkMoment(atTs, globals, clock.nowMs());
  // The layout whose history holds the ts: the current one, or one an in-place restore replaced and keeps.
  const layout = await generationHolding(source, globals, atTs, random, clock.nowMs());
  const shardStore = generationStore(source, layout.generation);

  mkdirSync(dirname(folder), { recursive: true });
  // What earlier killed runs into this folder left.
  for (const name of readdirSync(dirname(folder))) {
    if (name.startsWith(`${PARTIAL_PREFIX}${basename(folder)}-`)) rmSync(join(dirname(folder), name), { recursive: true, force: true });
  }
  const partial = join(dirname(folder), `${PARTIAL_PREFIX}${basename(folder)}-${randomHex(random, 4)}`);
  mkdirSync(partial);
  const workDirectory = workDirectoryOf(options.workDirectory, "cairn-export-");
  const files = new TableFiles(partial, catalog);
  try {
    for (let shard = 0; shard < layout.numShards; shard++) {
      const materialize = {
        store: shardStore,
        deploymentId: globals.deploymentId,
        shard,
        atTs,
        random,
        clock,
        settledAfterMs: options.settledAfterMs,
        workDirectory: workDirectory.path,
        onProgress: (step: StateAtProgress) => onProgress({ ...step, shards: layout.numShards }),
      };
      await withStateAt(materialize, async (state) => {
        let documents = 0;
        for (let chunk = await state.next(); chunk !== null && chunk.kind === "documents"; chunk = await state.next()) {
          // A run of the base snapshot's records comes still encoded: an export needs their values.
          const rows = "encoded" in chunk ? decodeRecords(Buffer.from(chunk.encoded.buffer, chunk.encoded.byteOffset, chunk.encoded.byteLength)).revisions : chunk.rows;
          for (const row of rows) await files.write(row.tableNumber, row.id, row.value!);
          documents += rows.length;
          onProgress({ phase: "export", shard, shards: layout.numShards, documents });
        }
      });
    }
    const tables = await files.close();
    writeFileSync(
      join(partial, EXPORT_MANIFEST_FILE),
      `${JSON.stringify(
        {
          format: EXPORT_FORMAT,
          deploymentId: globals.deploymentId,
          atTs,
          at: new Date(Math.floor(atTs / 1000)).toISOString(),
          numShards: layout.numShards,
          tables,
          catalog: catalog === null ? null : { nextTableNumber: catalog.nextTableNumber, nextIndexId: catalog.nextIndexId, tables: catalog.tables },
        },
        null,
        2,
      )}\n`,
    );
    renameSync(partial, folder);
    return { deploymentId: globals.deploymentId, atTs, folder, documents: tables.reduce((sum, table) => sum + table.documents, 0), tables };
  } catch (error) {
    await files.close().catch(() => undefined);
    rmSync(partial, { recursive: true, force: true });
    throw error;
  } finally {
    workDirectory.remove();
  }
}

/** One documents.jsonl per table, opened on its first document, written with backpressure. */
class TableFiles {
  private readonly streams = new Map<number, { readonly name: string; readonly stream: WriteStream; documents: number }>();

  constructor(
    private readonly folder: string,
    private readonly catalog: SchemaCatalog | null,
  ) {}

  async write(tableNumber: number, id: string, text: string): Promise<void> {
    let table = this.streams.get(tableNumber);
    if (table === undefined) {
      const name = this.catalog?.tables.find((candidate) => candidate.number === tableNumber)?.name ?? `_table${tableNumber}`;
      mkdirSync(join(this.folder, name));
      table = { name, stream: createWriteStream(join(this.folder, name, EXPORT_DOCUMENTS_FILE)), documents: 0 };
      this.streams.set(tableNumber, table);
    }
    // The stored text is the document without its id: the id goes first, the rest as stored.
    const line = `{"_id":${JSON.stringify(id)}${text.length > 2 ? `,${text.slice(1)}` : "}"}\n`;
    table.documents++;
    if (!table.stream.write(line)) await once(table.stream, "drain");
  }

  /** Ends every file; the tables written and their document counts, by name. */
  async close(): Promise<{ name: string; documents: number }[]> {
    const tables = [...this.streams.values()];
    await Promise.all(tables.map(({ stream }) => new Promise<void>((done, fail) => stream.end((error?: Error | null) => (error ? fail(error) : done())))));
    this.streams.clear();
    return tables.map(({ name, documents }) => ({ name, documents })).sort((a, b) => a.name.localeCompare(b.name));
  }
}
