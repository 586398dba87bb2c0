import { once } from "node:events";
import { createReadStream, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { z } from "zod";
import { CairnError } from "../base/index.js";
import type { Catalog } from "../functions/index.js";
import { decodeValue, parseDocumentId, type Value, type ValueObject } from "../model/index.js";

/**
 * Reading an export folder (shard/exportDeployment's format, docs/history.md) for
 * `cairn import`: its manifest, then every table's documents.jsonl a line at a time, each
 * line decoded and checked against the deployment's catalog before anything is written.
 * Bounded memory: one line, and the caller's batch.
 */
const exportManifestSchema = z.object({
  format: z.literal(1),
  deploymentId: z.string().min(1),
  atTs: z.number().int().min(0),
  numShards: z.number().int().min(1),
  tables: z.array(z.object({ name: z.string().min(1), documents: z.number().int().min(0) })),
  catalog: z.object({ tables: z.array(z.object({ name: z.string(), number: z.number().int().min(1) }).loose()) }).loose().nullable(),
});

export type ExportManifest = z.infer<typeof exportManifestSchema>;

export interface ArchiveDocument {
  readonly table: string;
  /** The document as exported: `_id`, `_creationTime` and its fields, decoded. */
  readonly document: ValueObject & { readonly _id: string; readonly _creationTime: number };
  /** Where it came from, for errors: `notes/documents.jsonl:12`. */
  readonly at: string;
  /** Its line's length: what batching bounds. */
  readonly bytes: number;
}

export const EXPORT_MANIFEST_FILE = "cairn-export.json";
const DOCUMENTS_FILE = "documents.jsonl";

/** The folder's manifest; IMPORT_INVALID when it is missing (an unfinished export, or no export) or malformed. */
export function readExportManifest(folder: string): ExportManifest {
  const path = join(folder, EXPORT_MANIFEST_FILE);
  if (!existsSync(path)) {
    throw new CairnError("IMPORT_INVALID", `${folder} has no ${EXPORT_MANIFEST_FILE}: it is not a finished \`cairn export\`; nothing was imported`);
  }
  try {
    return exportManifestSchema.parse(JSON.parse(readFileSync(path, "utf8")));
  } catch (error) {
    throw new CairnError("IMPORT_INVALID", `${path} is not an export manifest (${error instanceof Error ? error.message.split("\n")[0] : String(error)}); nothing was imported`);
  }
}

/**
 * Every table the manifest lists must exist in the deployment under the same table
 * number: ids name their table by number, and an import keeps ids (so references between
 * documents stay right). IMPORT_INVALID otherwise.
 */
export function checkCatalog(manifest: ExportManifest, catalog: Catalog): void {
  for (const { name } of manifest.tables) {
    const exported = manifest.catalog?.tables.find((table) => table.name === name);
    const here = [...catalog.tables].find((table) => table.name === name);
    if (here === undefined) {
      throw new CairnError("IMPORT_INVALID", `the archive holds table ${name}, which the app's schema does not have; nothing was imported`, { details: { table: name } });
    }
    if (exported === undefined || exported.number !== here.number) {
      throw new CairnError(
        "IMPORT_INVALID",
        `table ${name} is number ${here.number} in this deployment but ${exported?.number ?? "unknown"} in the archive: ` +
          `document ids name their table by number, so import into a new deployment (its catalog is taken from the archive) ` +
          `or one with the archive's lineage; nothing was imported`,
        { details: { table: name, here: here.number, archive: exported?.number ?? null } },
      );
    }
  }
}

/** The archive's documents, table by table, each decoded and its id checked against its table; counts checked against the manifest. */
export async function* archiveDocuments(folder: string, manifest: ExportManifest, catalog: Catalog): AsyncGenerator<ArchiveDocument> {
  for (const { name, documents } of manifest.tables) {
    const file = join(name, DOCUMENTS_FILE);
    const path = join(folder, file);
    if (!existsSync(path)) throw new CairnError("IMPORT_INVALID", `${file} is missing from the archive; nothing was imported`, { details: { file } });
    const table = catalog.table(name);
    const stream = createReadStream(path, "utf8");
    const lines = createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY });
    let count = 0;
    try {
      for await (const line of lines) {
        count++;
        const at = `${file}:${count}`;
        if (count > documents) throw truncatedOrGrown(file, documents, count);
        yield { table: name, document: decodeLine(line, at, table.number), at, bytes: line.length };
      }
    } finally {
      lines.close();
      stream.destroy();
      await once(stream, "close").catch(() => undefined);
    }
    if (count !== documents) throw truncatedOrGrown(file, documents, count);
  }
}

function decodeLine(line: string, at: string, tableNumber: number): ArchiveDocument["document"] {
  let value: Value;
  try {
    value = decodeValue(JSON.parse(line));
  } catch (error) {
    throw new CairnError("IMPORT_INVALID", `${at}: not a document in Cairn's JSON value encoding (${error instanceof Error ? error.message : String(error)}); nothing was imported`, {
      details: { at },
    });
  }
  if (typeof value !== "object" || value === null || Array.isArray(value) || value instanceof Uint8Array) {
    throw new CairnError("IMPORT_INVALID", `${at}: a document must be an object; nothing was imported`, { details: { at } });
  }
  const document = value as ValueObject;
  try {
    if (parseDocumentId(document["_id"]).tableNumber !== tableNumber) throw new Error(`its _id names table ${parseDocumentId(document["_id"]).tableNumber}`);
    if (typeof document["_creationTime"] !== "number") throw new Error("it has no numeric _creationTime");
  } catch (error) {
    throw new CairnError("IMPORT_INVALID", `${at}: ${error instanceof Error ? error.message : String(error)}; nothing was imported`, { details: { at } });
  }
  return document as ArchiveDocument["document"];
}

function truncatedOrGrown(file: string, expected: number, seen: number): CairnError {
  return new CairnError("IMPORT_INVALID", `${file} holds ${seen > expected ? "more than" : "only"} ${seen > expected ? expected : seen} document(s), the manifest says ${expected}: the archive was truncated or altered; nothing was imported`, {
    details: { file, expected, seen },
  });
}
