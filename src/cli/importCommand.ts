import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { CairnError, randomHex, systemRandom } from "../base/index.js";
import { Catalog, checkImportedDocument, FunctionRuntime, IMPORT_BATCH_DOCUMENTS_MAX, laneOfId, loadApp, planCatalog, resolveCatalog, STORAGE_TABLE, type App } from "../functions/index.js";
import { globalsObject, schemaCatalogObject, SCHEMA_CATALOG_FORMAT, type CasFields, type SchemaCatalog } from "../manifest/index.js";
import { assertConditionalWrites, openObjectStore, type ObjectStore } from "../objectstore/index.js";
import { ShardedStore } from "../shard/index.js";
import { convertConvexExport, isConvexExport } from "./convexArchive.js";
import { isZipPath, unzipToFolder } from "./zipArchive.js";
import { archiveDocuments, checkCatalog, readExportManifest, type ArchiveDocument, type ExportManifest } from "./importArchive.js";
import { lockLocalDirectory } from "./localDirectoryLock.js";
import { runCommandWorker } from "./commandWorker.js";
import { DEMO_APP_PATH, PROJECT_APP_PATH } from "./serveCommand.js";

export interface ImportCommandOptions {
  readonly store: string;
  readonly local: string;
  /** The export folder: a `cairn export`, or a Convex snapshot export. */
  readonly from: string;
  readonly app?: string;
  /** Shards of a new deployment made from a Convex export (default 1; a Cairn export brings its own). */
  readonly shards?: number;
  /** How the report names the archive (a ZIP's path, when `from` is where it was unpacked). */
  readonly shownAs?: string;
}

/** Documents per import mutation (and so per commit); a batch holds one shard's documents. */
const BATCH_DOCUMENTS = Math.min(500, IMPORT_BATCH_DOCUMENTS_MAX);
/** … and bytes (JSON text): well under a commit's 16 MiB, whatever the documents' sizes. */
const BATCH_BYTES = 4 * 1024 * 1024;
/** Import mutations in flight at once, over all shards. */
const BATCHES_IN_FLIGHT = 8;

/**
 * `cairn import --from <folder>`: loads a `cairn export` into this deployment (in a worker
 * thread with a capped heap, `--heap-mib`, as restore and export run) (a new one
 * is created with the archive's shard count and schema catalog), through the log like any
 * mutation — durable, replicated, and visible to live queries as it lands.
 *
 * - First the whole archive is read and every document checked against the app's schema
 *   (and its id against its table): an archive that is truncated, malformed or at odds
 *   with the schema is refused with IMPORT_INVALID before anything is written.
 * - Documents keep their ids and creation times, so references between them stay right.
 * - Idempotent and resumable: a document already there, identical, is left alone, so an
 *   import killed midway is finished by running it again; one already there with other
 *   contents is IMPORT_CONFLICT (that batch is not written).
 * - It writes as the shards' writer, so the deployment's servers must be stopped
 *   (LEASE_HELD otherwise), like `cairn gc`.
 */
export async function importCommand(options: ImportCommandOptions & { readonly heapMib?: number }): Promise<void> {
  const progress = (line: string) => process.stderr.write(`${line}\n`);
  const { heapMib, ...task } = options;
  await runCommandWorker<ImportWorkerMessage, null>("importWorker", task, {
    heapMib: heapMib ?? IMPORT_HEAP_MIB_DEFAULT,
    what: "the import",
    outOfMemoryAdvice: "run it again with a larger --heap-mib (what was written stays; a re-run writes nothing twice)",
    onMessage: (message) => (message.type === "say" ? process.stdout.write(`${message.line}\n`) : progress(message.line)),
  });
}

/** What the import worker posts: a line for stdout, or one of progress for stderr. */
export interface ImportWorkerMessage {
  readonly type: "say" | "progress";
  readonly line: string;
}

/**
 * The import's heap: a few batches of documents in flight, the engines' overlay budget
 * and the import's SQLite statements. Capped like restore's (commandWorker.ts), a bit
 * larger: it runs a node's write path.
 */
export const IMPORT_HEAP_MIB_DEFAULT = 256;

/** The import itself (in importWorker's thread): `say` for its report, `progress` for the way there. */
export async function runImport(options: ImportCommandOptions, say: (line: string) => void, progress: (line: string) => void): Promise<void> {
  if (isZipPath(options.from)) {
    // A ZIP (Convex's default export, or `cairn export --to x.zip`): unpacked into a work folder first.
    const unzipped = mkdtempSync(join(tmpdir(), "cairn-import-zip-"));
    try {
      progress(`unpacking ${resolve(options.from)}…`);
      await unzipToFolder(resolve(options.from), unzipped);
      return await runImport({ ...options, from: unzipped, shownAs: resolve(options.from) }, say, progress);
    } finally {
      rmSync(unzipped, { recursive: true, force: true });
    }
  }
  const given = resolve(options.from);
  const convex = isConvexExport(given);
  if (!convex) readExportManifest(given);
  const app = await loadApp(options.app ?? (existsSync(PROJECT_APP_PATH) ? resolve(PROJECT_APP_PATH) : DEMO_APP_PATH));
  const store = await openObjectStore(options.store);
  const work = convex ? mkdtempSync(join(tmpdir(), "cairn-import-convex-")) : null;
  try {
    // A Convex export becomes a Cairn export first: ids mapped, references rewritten (convexArchive.ts).
    const folder = convex ? (await convertConvex(store, given, app, options.shards ?? 1, work!, progress)).folder : given;
    const manifest = withoutStoredFiles(readExportManifest(folder), say);
    await assertConditionalWrites(store);
    // Everything is checked before anything is written (a new deployment is not even created
    // for an archive that is refused), against the catalog the import will write with.
    const total = await checkArchive(folder, manifest, await plannedCatalog(store, manifest, app.schema), progress);
    const localLock = await lockLocalDirectory(options.local);
    try {
      const fresh = (await globalsObject(store, systemRandom).read()) === null;
      const sharded = await ShardedStore.open({
        store,
        localDirectory: resolve(options.local),
        nodeId: `import-${randomHex(systemRandom, 6)}`,
        ...(fresh ? { numShards: manifest.numShards } : {}),
      });
      try {
        await seedCatalog(store, manifest);
        const catalog = await resolveCatalog(store, app.schema, systemRandom);
        checkCatalog(manifest, catalog);
        await sharded.acquireAll();
        const runtime = new FunctionRuntime({ app, catalog, shards: { shards: sharded.engines, get readTs() { return sharded.readTs; } } });
        const counts = await writeAll(runtime, catalog, sharded.numShards, archiveDocuments(folder, manifest, catalog), (done) =>
          progress(`imported ${done.written + done.unchanged}/${total} document(s) (${done.written} written, ${done.unchanged} there already)`),
        );
        say(`imported ${total} document(s) from ${convex ? `${options.shownAs ?? given} (a Convex export: ids mapped)` : `${options.shownAs ?? folder} (exported from deployment ${manifest.deploymentId} at ts ${manifest.atTs})`}: ${counts.written} written, ${counts.unchanged} there already`);
        for (const table of manifest.tables) say(`  ${table.name}: ${table.documents} document(s)`);
      } finally {
        await sharded.close();
      }
    } finally {
      await localLock.release();
    }
  } finally {
    await store.close();
    if (work !== null) rmSync(work, { recursive: true, force: true });
  }
}

/** The Convex export at `folder` as a Cairn export in `work`, against the catalog the import will write with (the deployment's, or a new one's). */
async function convertConvex(store: ObjectStore, folder: string, app: App, shards: number, work: string, progress: (line: string) => void) {
  const stored = (await schemaCatalogObject(store, systemRandom).read())?.value ?? null;
  const planned = planCatalog(app.schema, stored);
  const fields: CasFields<SchemaCatalog> | null = planned ?? (stored === null ? null : { format: stored.format, nextTableNumber: stored.nextTableNumber, nextIndexId: stored.nextIndexId, tables: stored.tables });
  if (fields === null) throw new CairnError("IMPORT_INVALID", "the app's schema has no tables to import into; nothing was imported");
  const catalog = Catalog.bind(app.schema, fields);
  const globals = (await globalsObject(store, systemRandom).read())?.value ?? null;
  return convertConvexExport(folder, catalog, fields, globals?.numShards ?? shards, work, progress);
}

/** The catalog an archive's catalog is, as the deployment would store it. */
function archivedCatalog(manifest: ExportManifest): CasFields<SchemaCatalog> | null {
  if (manifest.catalog === null) return null;
  const archived = manifest.catalog as unknown as Omit<SchemaCatalog, "format" | "version" | "nonce">;
  return { format: SCHEMA_CATALOG_FORMAT, nextTableNumber: archived.nextTableNumber, nextIndexId: archived.nextIndexId, tables: archived.tables };
}

/** A deployment without a schema catalog yet takes the archive's, so that table numbers (and so ids) stay what they were. */
async function seedCatalog(store: ObjectStore, manifest: ExportManifest): Promise<void> {
  const archived = archivedCatalog(manifest);
  if (archived !== null) await schemaCatalogObject(store, systemRandom).update((current) => (current === null ? archived : null));
}

/** The catalog the import will write with (the deployment's, or the archive's for a new one, plus the app's additions), computed without writing. */
async function plannedCatalog(store: ObjectStore, manifest: ExportManifest, schema: App["schema"]): Promise<Catalog> {
  const stored = (await schemaCatalogObject(store, systemRandom).read())?.value ?? null;
  const base = stored ?? (archivedCatalog(manifest) === null ? null : ({ ...archivedCatalog(manifest)!, version: 1, nonce: "planned" } as SchemaCatalog));
  const planned = planCatalog(schema, base);
  const catalog = Catalog.bind(schema, (planned === null ? base : { ...planned, version: 1, nonce: "planned" }) as SchemaCatalog);
  checkCatalog(manifest, catalog);
  return catalog;
}

/** Reads the whole archive and checks every document; returns how many there are. */
async function checkArchive(folder: string, manifest: ExportManifest, catalog: Catalog, progress: (line: string) => void): Promise<number> {
  let total = 0;
  for await (const { table, document, at } of archiveDocuments(folder, manifest, catalog)) {
    checked(catalog, table, document, at);
    if (++total % 10_000 === 0) progress(`checked ${total} document(s)`);
  }
  return total;
}

function checked(catalog: Catalog, table: string, document: ArchiveDocument["document"], at: string): void {
  try {
    checkImportedDocument(catalog, table, document);
  } catch (error) {
    const { code } = error as { code?: string };
    throw new CairnError("IMPORT_INVALID", `${at}: ${error instanceof Error ? error.message : String(error)}${code ? ` [${code}]` : ""}; nothing was imported`, { cause: error });
  }
}

interface Counts {
  written: number;
  unchanged: number;
}

/** Writes the documents in batches of one shard each, a few batches in flight at once. */
async function writeAll(
  runtime: FunctionRuntime,
  catalog: Catalog,
  numShards: number,
  documents: AsyncIterable<ArchiveDocument>,
  onProgress: (counts: Counts) => void,
): Promise<Counts> {
  const counts: Counts = { written: 0, unchanged: 0 };
  const buffers = new Map<number, { rows: { table: string; document: ArchiveDocument["document"] }[]; bytes: number }>();
  const inFlight = new Set<Promise<void>>();
  let failure: unknown = null;
  const send = async (batch: { table: string; document: ArchiveDocument["document"] }[]) => {
    while (inFlight.size >= BATCHES_IN_FLIGHT) await Promise.race(inFlight);
    if (failure !== null) throw failure;
    const running = runtime
      .runMutation("_system:importBatch", { documents: batch }, { internal: true })
      .then((run) => {
        const { written, unchanged } = run.value as unknown as Counts;
        counts.written += written;
        counts.unchanged += unchanged;
        onProgress(counts);
      })
      .catch((error: unknown) => {
        failure ??= error;
      })
      .finally(() => inFlight.delete(running));
    inFlight.add(running);
  };
  for await (const { table, document, bytes } of documents) {
    const lane = laneOfId(catalog.table(table), document._id as never, numShards);
    let buffer = buffers.get(lane);
    if (buffer !== undefined && buffer.bytes + bytes > BATCH_BYTES) {
      await send(buffer.rows);
      buffer = undefined;
    }
    if (buffer === undefined) {
      buffer = { rows: [], bytes: 0 };
      buffers.set(lane, buffer);
    }
    buffer.rows.push({ table, document });
    buffer.bytes += bytes;
    if (buffer.rows.length >= BATCH_DOCUMENTS) {
      buffers.delete(lane);
      await send(buffer.rows);
    }
  }
  for (const buffer of buffers.values()) if (buffer.rows.length > 0) await send(buffer.rows);
  await Promise.all(inFlight);
  if (failure !== null) throw failure;
  return counts;
}

/**
 * An export holds `_storage` documents but not the files' bytes (they are objects of the
 * source's bucket): importing the documents would make files whose bytes are nowhere, so
 * they are left out, and said so.
 */
function withoutStoredFiles(manifest: ExportManifest, say: (line: string) => void): ExportManifest {
  const files = manifest.tables.find((table) => table.name === STORAGE_TABLE);
  if (files === undefined) return manifest;
  if (files.documents > 0) say(`${files.documents} stored file(s) not imported: an export holds their documents, not their bytes`);
  return { ...manifest, tables: manifest.tables.filter((table) => table.name !== STORAGE_TABLE) };
}
