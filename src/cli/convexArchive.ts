import { once } from "node:events";
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, writeFileSync, type WriteStream } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import Database from "better-sqlite3";
import { CairnError } from "../base/index.js";
import { cairnIdOfConvexId, convexValueToCairn, mapReferences, routeForDocument, type Catalog, type TableInfo } from "../functions/index.js";
import type { SchemaCatalog, CasFields } from "../manifest/index.js";
import { encodeValue, type ValueObject } from "../model/index.js";
import { EXPORT_MANIFEST_FILE } from "./importArchive.js";

/**
 * A Convex snapshot export (`npx convex export --path dir/`, or its ZIP unpacked): one
 * folder per table holding `documents.jsonl`, beside system folders (`_tables`,
 * `_storage`, …) that are skipped. `cairn import` turns it into a Cairn export in a work
 * folder — ids mapped and references rewritten (functions/convexDocuments), values in
 * Cairn's encoding, a manifest with the deployment's catalog — and imports that.
 *
 * Two passes over the files, bounded memory: the first maps every document's Convex id
 * to its Cairn id (which for a table with a shard key needs the document's fields) into a
 * SQLite file in the work folder, the second rewrites each document with the map.
 */
const DOCUMENTS_FILE = "documents.jsonl";

/**
 * Whether `folder` is a Convex export: no Cairn manifest, Convex's table list
 * (`_tables/documents.jsonl`, which every Convex export holds) and a table folder. A
 * folder with table folders alone is an unfinished `cairn export`, and refused as one.
 */
export function isConvexExport(folder: string): boolean {
  return !existsSync(join(folder, EXPORT_MANIFEST_FILE)) && existsSync(join(folder, "_tables", DOCUMENTS_FILE)) && convexTables(folder).length > 0;
}

function convexTables(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !entry.name.startsWith("_") && !entry.name.startsWith(".") && existsSync(join(folder, entry.name, DOCUMENTS_FILE)))
    .map((entry) => entry.name)
    .sort();
}

export interface ConvertedArchive {
  readonly folder: string;
  readonly tables: readonly { readonly name: string; readonly documents: number }[];
}

export async function convertConvexExport(
  folder: string,
  catalog: Catalog,
  catalogFields: CasFields<SchemaCatalog> | null,
  numShards: number,
  workDirectory: string,
  progress: (line: string) => void,
): Promise<ConvertedArchive> {
  const names = convexTables(folder);
  const tables = names.map((name) => {
    try {
      return catalog.table(name);
    } catch {
      throw new CairnError("IMPORT_INVALID", `the Convex export holds table ${name}, which the app's schema does not have; nothing was imported`, { details: { table: name } });
    }
  });
  const ids = new Database(join(workDirectory, "convex-ids.sqlite"));
  try {
    ids.pragma("journal_mode = OFF");
    ids.pragma("synchronous = OFF");
    ids.exec("CREATE TABLE ids (tableName TEXT NOT NULL, convexId TEXT NOT NULL, cairnId TEXT NOT NULL, PRIMARY KEY (tableName, convexId)) WITHOUT ROWID");
    const insert = ids.prepare("INSERT INTO ids (tableName, convexId, cairnId) VALUES (?, ?, ?)");
    const lookup = ids.prepare<[string, string], { cairnId: string }>("SELECT cairnId FROM ids WHERE tableName = ? AND convexId = ?");
    let mapped = 0;
    for (const table of tables) {
      const addMany = ids.transaction((rows: [string, string, string][]) => {
        for (const row of rows) insert.run(...row);
      });
      let rows: [string, string, string][] = [];
      for await (const { line, at } of lines(folder, table.name)) {
        const { convexId, fields } = parseConvexDocument(line, at);
        rows.push([table.name, convexId, cairnIdOfConvexId(table, convexId, routeForDocument(table, fields))]);
        if (rows.length >= 1_000) {
          insertOnce(addMany, rows, table.name);
          rows = [];
        }
        if (++mapped % 10_000 === 0) progress(`mapped ${mapped} Convex id(s)`);
      }
      insertOnce(addMany, rows, table.name);
    }
    const mapId = (tableName: string, convexId: string): string | null => {
      const found = lookup.get(tableName, convexId)?.cairnId;
      if (found !== undefined) return found;
      // A reference to a document not in the archive (Convex allows them): its id maps all the same, unless its route is needed.
      const table = tryTable(catalog, tableName);
      return table !== null && table.shardKey === null ? cairnIdOfConvexId(table, convexId, null) : null;
    };
    const converted = join(workDirectory, "converted");
    mkdirSync(converted);
    const counts: { name: string; documents: number }[] = [];
    for (const table of tables) counts.push({ name: table.name, documents: await convertTable(folder, converted, table, mapId, progress) });
    writeFileSync(
      join(converted, EXPORT_MANIFEST_FILE),
      `${JSON.stringify({ format: 1, deploymentId: "convex-export", atTs: 0, numShards, tables: counts.filter((table) => table.documents > 0), catalog: catalogFields }, null, 2)}\n`,
    );
    return { folder: converted, tables: counts };
  } finally {
    ids.close();
  }
}

function insertOnce(addMany: (rows: [string, string, string][]) => void, rows: [string, string, string][], tableName: string): void {
  try {
    addMany(rows);
  } catch (error) {
    if ((error as { code?: string }).code !== "SQLITE_CONSTRAINT_PRIMARYKEY") throw error;
    throw new CairnError("IMPORT_INVALID", `${tableName}/${DOCUMENTS_FILE} holds one _id twice; nothing was imported`, { details: { table: tableName } });
  }
}

/** One table's documents rewritten into the Cairn export at `converted`; how many. */
async function convertTable(
  folder: string,
  converted: string,
  table: TableInfo,
  mapId: (tableName: string, convexId: string) => string | null,
  progress: (line: string) => void,
): Promise<number> {
  mkdirSync(join(converted, table.name));
  const out = createWriteStream(join(converted, table.name, DOCUMENTS_FILE));
  let documents = 0;
  try {
    for await (const { line, at } of lines(folder, table.name)) {
      const { convexId, creationTime, fields } = parseConvexDocument(line, at);
      const id = mapId(table.name, convexId)!;
      const document = { _id: id, _creationTime: creationTime, ...(mapReferences(table.validator, fields, mapId) as ValueObject) };
      await write(out, `${JSON.stringify(encodeValue(document))}\n`);
      if (++documents % 10_000 === 0) progress(`converted ${documents} document(s) of ${table.name}`);
    }
  } finally {
    out.end();
    await once(out, "close");
  }
  return documents;
}

async function write(out: WriteStream, text: string): Promise<void> {
  if (!out.write(text)) await once(out, "drain");
}

async function* lines(folder: string, tableName: string): AsyncGenerator<{ line: string; at: string }> {
  const file = join(tableName, DOCUMENTS_FILE);
  const stream = createReadStream(join(folder, file), "utf8");
  const reader = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
  let number = 0;
  try {
    for await (const line of reader) {
      number++;
      if (line.trim() === "") continue;
      yield { line, at: `${file}:${number}` };
    }
  } finally {
    reader.close();
    stream.destroy();
  }
}

function parseConvexDocument(line: string, at: string): { convexId: string; creationTime: number; fields: ValueObject } {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (error) {
    throw new CairnError("IMPORT_INVALID", `${at}: not JSON (${error instanceof Error ? error.message : String(error)}); nothing was imported`, { details: { at } });
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) throw new CairnError("IMPORT_INVALID", `${at}: a document must be an object; nothing was imported`, { details: { at } });
  const { _id: convexId, _creationTime: creationTime, ...rest } = json as Record<string, unknown>;
  if (typeof convexId !== "string" || convexId.length === 0) throw new CairnError("IMPORT_INVALID", `${at}: a document needs a string _id; nothing was imported`, { details: { at } });
  if (typeof creationTime !== "number" || !Number.isFinite(creationTime)) {
    throw new CairnError("IMPORT_INVALID", `${at}: a document needs a numeric _creationTime; nothing was imported`, { details: { at } });
  }
  return { convexId, creationTime, fields: convexValueToCairn(rest, at) as ValueObject };
}

function tryTable(catalog: Catalog, name: string): TableInfo | null {
  try {
    return catalog.table(name);
  } catch {
    return null;
  }
}
