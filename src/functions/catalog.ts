import { createHash } from "node:crypto";
import { z } from "zod";
import { CairnError, type Random } from "../base/index.js";
import {
  type CasFields,
  SCHEMA_CATALOG_FORMAT,
  schemaCatalogObject,
  type CatalogIndex,
  type CatalogTable,
  type SchemaCatalog,
} from "../manifest/index.js";
import { encodeDocumentId, isCanonicalSpelling, parseDocumentId, tableNumberOfId, type DocumentId } from "../model/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { SYSTEM_TABLES } from "./systemTables.js";
import { checkStoredDocuments } from "./checkStoredDocuments.js";
import { jsonSchemaOf } from "./describeFunctions.js";
import type { LocalStore } from "../local/index.js";
import { SYSTEM_INDEXES, type AnySchema, type TableDefinition } from "./schema.js";

/**
 * An app's schema bound to a deployment's numbers: each table's number (embedded in its
 * document ids, naming its `table:` keyspace) and each index's id (its `index:` keyspace).
 *
 * What a schema change may do (SCHEMA_CHANGE_REFUSED otherwise, nothing written):
 * - add a table (new number) or an index (new id; on a table that existed before, the
 *   index is "backfilling" until the writer has indexed every existing document);
 * - change field validators: documents written from then on are checked against the new
 *   ones; documents already stored are not re-checked and are read back as stored;
 * - it may not remove a table or an index, change an index's fields, or change a table's
 *   shard key: data already written depends on them, and no migration path exists yet.
 */
export interface IndexInfo {
  readonly name: string;
  readonly id: number;
  /** The indexed fields as declared (dotted paths allowed). */
  readonly fields: readonly string[];
  /** The fields of a key in order: the declared ones, then `_creationTime`, `_id` (for by_id: `_id` alone). */
  readonly keyFields: readonly string[];
  /**
   * "entries": stored index entries, one per document. "documents": the `by_id` index,
   * served from the documents themselves in id order (see documentIdRange); nothing is
   * stored for it, and its reads are ranges of the table keyspace.
   */
  readonly kind: "entries" | "documents" | "search";
  /**
   * A search index's (kind "search", SearchQuery.ts): the string field it searches and
   * its filter fields. Its entries are keyed [term, ...filter values, -term frequency, _id].
   */
  readonly search?: { readonly searchField: string; readonly filterFields: readonly string[] };
  state: "ready" | "backfilling";
}

export interface TableInfo {
  readonly name: string;
  readonly number: number;
  readonly validator: z.ZodType<Record<string, unknown>>;
  readonly indexes: ReadonlyMap<string, IndexInfo>;
  readonly shardKey: string | null;
}

export class Catalog {
  private readonly byName = new Map<string, TableInfo>();
  private readonly byNumber = new Map<number, TableInfo>();

  constructor(tables: readonly TableInfo[]) {
    for (const table of tables) {
      this.byName.set(table.name, table);
      this.byNumber.set(table.number, table);
    }
  }

  /** Binds `schema` to the numbers of `stored`, which must cover every table and index of it. */
  static bind(schema: AnySchema, stored: Pick<SchemaCatalog, "tables">): Catalog {
    const tables: TableInfo[] = [];
    for (const [name, definition] of tablesOf(schema)) {
      const entry = stored.tables.find((table) => table.name === name);
      if (entry === undefined) throw new CairnError("INTERNAL", `catalog lacks table ${name}`);
      const indexes = new Map<string, IndexInfo>();
      for (const index of entry.indexes) {
        // Being dropped: no longer the app's, written by nothing, deleted by its shards' writers (dropRemoved).
        if (index.state !== "dropping") indexes.set(index.name, indexInfoOf(index));
      }
      tables.push({
        name,
        number: entry.number,
        validator: z.strictObject(definition.fields) as unknown as z.ZodType<Record<string, unknown>>,
        indexes,
        shardKey: entry.shardKey,
      });
    }
    return new Catalog(tables);
  }

  get tables(): IterableIterator<TableInfo> {
    return this.byName.values();
  }

  /** The table called `name`; INVALID_ARGUMENT if the schema has none. */
  table(name: unknown): TableInfo {
    const table = typeof name === "string" ? this.byName.get(name) : undefined;
    if (table === undefined) {
      throw new CairnError("INVALID_ARGUMENT", `no table ${JSON.stringify(name)} in the schema`, { details: { table: name } });
    }
    return table;
  }

  /**
   * The table an id belongs to, and the id in canonical (lowercase) spelling;
   * DOCUMENT_ID_INVALID for a malformed id or one of no table of the schema.
   */
  tableOfId(id: unknown): { table: TableInfo; id: DocumentId } {
    const tableNumber = tableNumberOfId(id);
    const table = this.byNumber.get(tableNumber);
    if (table === undefined) {
      throw new CairnError("DOCUMENT_ID_INVALID", `document id ${String(id)} belongs to no table of the schema (table number ${tableNumber})`, {
        details: { id, tableNumber },
      });
    }
    return { table, id: isCanonicalSpelling(id as string) ? (id as DocumentId) : encodeDocumentId(parseDocumentId(id)) };
  }

  /** For the id validators: the number of a table name. */
  readonly tableNumberOf = (name: string): number | undefined => this.byName.get(name)?.number;
}

/**
 * The catalog `schema` needs, given what the deployment stored (null: nothing yet), or
 * null when the stored one already covers the schema. SCHEMA_CHANGE_REFUSED for a change
 * the rules above forbid.
 */
export function planCatalog(schema: AnySchema, stored: SchemaCatalog | null): CasFields<SchemaCatalog> | null {
  let nextTableNumber = stored?.nextTableNumber ?? 1;
  let nextIndexId = stored?.nextIndexId ?? 1;
  const storedTables = stored?.tables ?? [];
  const dropTables = new Set(schema.options.drop?.tables ?? []);
  const dropIndexes = new Set(schema.options.drop?.indexes ?? []);
  const declaredTables = tablesOf(schema);
  let changed = stored === null;
  const tables: CatalogTable[] = [];
  for (const [name, definition] of declaredTables) {
    const existing = storedTables.find((table) => table.name === name);
    const validator = validatorFingerprint(definition);
    if (existing === undefined) {
      changed = true;
      const number = nextTableNumber++;
      const indexes = declaredIndexes(definition).map(([indexName, fields, kind]): CatalogIndex => ({ name: indexName, id: nextIndexId++, fields, state: "ready", ...kindOf(kind) }));
      tables.push({ name, number, shardKey: definition.shardKeyField, indexes, validator });
      continue;
    }
    if (existing.state === "dropping") {
      throw refused(`table ${name} is being dropped (its documents are being deleted): declare it again once that is done, or under another name`);
    }
    if (existing.shardKey !== definition.shardKeyField) {
      throw refused(`table ${name}: its shard key is ${JSON.stringify(existing.shardKey)} in the deployment and ${JSON.stringify(definition.shardKeyField)} in the schema; changing a shard key is not supported`);
    }
    const declared = declaredIndexes(definition);
    const indexes: CatalogIndex[] = [];
    for (const index of existing.indexes) {
      const match = declared.find(([indexName]) => indexName === index.name);
      if (match === undefined) {
        if (index.state !== "dropping") {
          if (!dropIndexes.has(`${name}.${index.name}`)) {
            throw refused(`table ${name}: index ${index.name} exists in the deployment but not in the schema; to drop it and delete its entries, acknowledge it: defineSchema({ … }, { drop: { indexes: [${JSON.stringify(`${name}.${index.name}`)}] } })`);
          }
          changed = true;
          const { backfilledShards: _backfilled, ...rest } = index;
          indexes.push({ ...rest, state: "dropping", droppedShards: [] });
          continue;
        }
        indexes.push(index);
        continue;
      }
      if (index.state === "dropping") throw refused(`table ${name}: index ${index.name} is being dropped: declare it again once that is done, or under another name`);
      if (JSON.stringify(match[1]) !== JSON.stringify(index.fields) || match[2] !== (index.kind ?? "entries")) {
        const describe = (fields: readonly string[], kind: string) => (kind === "search" ? `a search index of ${fields.at(-1)} filtered by [${fields.slice(0, -1).join(", ")}]` : `on [${fields.join(", ")}]`);
        throw refused(`table ${name}: index ${index.name} is ${describe(index.fields, index.kind ?? "entries")} in the deployment and ${describe(match[1], match[2])} in the schema; changing an index's fields is not supported (add a new index instead)`);
      }
      indexes.push(index);
    }
    for (const [indexName, fields, kind] of declared) {
      if (existing.indexes.some((index) => index.name === indexName)) continue;
      changed = true;
      indexes.push({ name: indexName, id: nextIndexId++, fields, state: "backfilling", ...kindOf(kind) });
    }
    if (existing.validator !== validator) changed = true;
    tables.push({ ...existing, indexes, validator });
  }
  // Tables the schema no longer declares: dropped with an acknowledgement, else refused.
  for (const table of storedTables) {
    if (declaredTables.some(([name]) => name === table.name)) continue;
    if (table.state === "dropping") {
      tables.push(table);
      continue;
    }
    if (!dropTables.has(table.name)) {
      throw refused(`table ${table.name} (table number ${table.number}) exists in the deployment but not in the schema; to drop it and delete its documents, acknowledge it: defineSchema({ … }, { drop: { tables: [${JSON.stringify(table.name)}] } })`);
    }
    changed = true;
    tables.push({ ...table, state: "dropping", droppedShards: [] });
  }
  if (!changed) return null;
  return { format: SCHEMA_CATALOG_FORMAT, nextTableNumber, nextIndexId, tables };
}

/**
 * The tables whose field validators changed since the deployment recorded them (its
 * fingerprint differs): their stored documents are checked against the new ones before
 * the change is accepted (checkStoredDocuments). A table recorded without a fingerprint
 * (by a version before this check) is taken as it is.
 */
export function validatorChanges(schema: AnySchema, stored: SchemaCatalog): string[] {
  const changed: string[] = [];
  for (const [name, definition] of tablesOf(schema)) {
    const existing = stored.tables.find((table) => table.name === name);
    if (existing?.validator !== undefined && existing.state !== "dropping" && existing.validator !== validatorFingerprint(definition)) changed.push(name);
  }
  return changed;
}

/** What stored documents a changed validator is checked against: each shard's local copy, at its readTs. */
export interface StoredDocuments {
  readonly shards: readonly { readonly local: LocalStore; readonly readTs: number }[];
}

/**
 * Reads the deployment's catalog, extends it for `schema` with a CAS if needed, and binds
 * the schema to it. With `documents`, a table whose field validators changed is checked
 * first: every stored document must pass the new validators, else SCHEMA_CHANGE_REFUSED
 * naming the first offending ids and nothing is written (`schemaValidation: false` in
 * the schema's options skips the check).
 */
export async function resolveCatalog(store: ObjectStore, schema: AnySchema, random: Random, documents?: StoredDocuments): Promise<Catalog> {
  const object = schemaCatalogObject(store, random);
  if (documents !== undefined && schema.options.schemaValidation !== false) {
    const current = await object.read();
    const changed = current === null ? [] : validatorChanges(schema, current.value);
    if (changed.length > 0) {
      const planned = planCatalog(schema, current!.value) ?? current!.value;
      const catalog = Catalog.bind(schema, planned);
      checkStoredDocuments(catalog, changed.map((name) => catalog.table(name)), documents.shards);
    }
  }
  const snapshot = await object.update((current) => planCatalog(schema, current));
  if (snapshot === null) throw new CairnError("INTERNAL", "the schema catalog is missing after an update");
  return Catalog.bind(schema, snapshot.value);
}

/**
 * The deployment's catalog bound to `schema` without changing it: a replica serves the
 * schema its writer registered. SCHEMA_NOT_DEPLOYED when the schema has tables or indexes
 * the deployment does not (start the writer with this app first); SCHEMA_CHANGE_REFUSED
 * as for the writer when they disagree.
 */
export async function readCatalog(store: ObjectStore, schema: AnySchema, random: Random): Promise<Catalog> {
  const snapshot = await schemaCatalogObject(store, random).read();
  const planned = planCatalog(schema, snapshot?.value ?? null);
  // A follower serves the validators of its own app: a fingerprint the writer recorded otherwise (or not at all) is no reason to refuse.
  const fingerprintsOnly = planned !== null && snapshot !== null && sameWithoutFingerprints(planned, snapshot.value);
  if (snapshot === null || (planned !== null && !fingerprintsOnly)) {
    const known = new Set((snapshot?.value.tables ?? []).flatMap((table) => [table.name, ...table.indexes.map((index) => `${table.name}.${index.name}`)]));
    const missing = (planned?.tables ?? []).flatMap((table) => [table.name, ...table.indexes.map((index) => `${table.name}.${index.name}`)]).filter((name) => !known.has(name));
    throw new CairnError(
      "SCHEMA_NOT_DEPLOYED",
      snapshot === null
        ? "the deployment has no schema yet: start its writer with this app first"
        : `the app declares ${missing.join(", ")}, which the deployment does not have yet: start (or restart) its writer with this app first`,
      { details: { missing } },
    );
  }
  return Catalog.bind(schema, snapshot.value);
}

/**
 * Records in the stored catalog that every document of `shard` has its entry in index
 * `indexId`; once every shard of the deployment has, the index is "ready". Returns the
 * index's state and the shards done (nothing changes for an index already ready).
 */
export async function markShardBackfilled(
  store: ObjectStore,
  random: Random,
  indexId: number,
  shard: number,
  numShards: number,
): Promise<{ readonly state: "ready" | "backfilling"; readonly backfilledShards: readonly number[] }> {
  let result: { state: "ready" | "backfilling"; backfilledShards: readonly number[] } = { state: "ready", backfilledShards: [] };
  await schemaCatalogObject(store, random).update((current) => {
    if (current === null) throw new CairnError("INTERNAL", "the schema catalog vanished during a backfill");
    const index = current.tables.flatMap((table) => table.indexes).find((candidate) => candidate.id === indexId);
    if (index === undefined || index.state === "ready") {
      result = { state: "ready", backfilledShards: [] };
      return null;
    }
    const done = [...new Set([...(index.backfilledShards ?? []), shard])].sort((a, b) => a - b);
    const ready = Array.from({ length: numShards }, (_, candidate) => candidate).every((candidate) => done.includes(candidate));
    result = { state: ready ? "ready" : "backfilling", backfilledShards: ready ? [] : done };
    const { version: _version, nonce: _nonce, ...fields } = current;
    return {
      ...fields,
      tables: current.tables.map((table) => ({
        ...table,
        indexes: table.indexes.map((candidate): CatalogIndex => {
          if (candidate.id !== indexId) return candidate;
          const { backfilledShards: _done, ...rest } = candidate;
          return ready ? { ...rest, state: "ready" } : { ...rest, state: "backfilling", backfilledShards: done };
        }),
      })),
    };
  });
  return result;
}

/**
 * Reads the stored catalog and marks ready, in `catalog`, every index another node
 * finished backfilling meanwhile; returns them as `table.index`. A node serving an index
 * that was "backfilling" when it started calls this until none is.
 */
export async function refreshIndexStates(store: ObjectStore, random: Random, catalog: Catalog): Promise<string[]> {
  const snapshot = await schemaCatalogObject(store, random).read();
  if (snapshot === null) return [];
  const ready = new Set(snapshot.value.tables.flatMap((table) => table.indexes.filter((index) => index.state === "ready").map((index) => index.id)));
  const flipped: string[] = [];
  for (const table of catalog.tables) {
    for (const index of table.indexes.values()) {
      if (index.state === "backfilling" && ready.has(index.id)) {
        index.state = "ready";
        flipped.push(`${table.name}.${index.name}`);
      }
    }
  }
  return flipped;
}

/** Whether any index of `catalog` is still being backfilled. */
export function backfilling(catalog: Catalog): boolean {
  for (const table of catalog.tables) for (const index of table.indexes.values()) if (index.state === "backfilling") return true;
  return false;
}

/** The app's tables, then Cairn's system tables (scheduledFunctions.ts), which every deployment has. */
function tablesOf(schema: AnySchema): [string, TableDefinition][] {
  return [...Object.entries(schema.tables), ...Object.entries(SYSTEM_TABLES)];
}

/** Every index of a table as the catalog records it: name, fields (a search index's: its filter fields, then its search field), kind. */
function declaredIndexes(definition: TableDefinition): [string, string[], "entries" | "search"][] {
  return [
    ...Object.entries(SYSTEM_INDEXES).map(([name, fields]): [string, string[], "entries"] => [name, [...fields], "entries"]),
    ...definition.indexes.map((index): [string, string[], "entries"] => [index.name, [...index.fields], "entries"]),
    ...definition.searchIndexes.map((index): [string, string[], "search"] => [index.name, [...index.filterFields, index.searchField], "search"]),
  ];
}

function sameWithoutFingerprints(planned: Pick<SchemaCatalog, "tables" | "nextTableNumber" | "nextIndexId">, stored: SchemaCatalog): boolean {
  const strip = (catalog: Pick<SchemaCatalog, "tables" | "nextTableNumber" | "nextIndexId">) =>
    JSON.stringify({ next: [catalog.nextTableNumber, catalog.nextIndexId], tables: [...catalog.tables].sort((left, right) => left.number - right.number).map(({ validator: _validator, ...table }) => table) });
  return strip(planned) === strip(stored);
}

/** A stored index as the runtime uses it (how its keys are made); a "dropping" one reads as ready (dropRemoved reads its keys). */
export function indexInfoOf(index: CatalogIndex): IndexInfo {
  const state = index.state === "backfilling" ? "backfilling" : "ready";
  if (index.kind === "search") {
    const filterFields = index.fields.slice(0, -1);
    return {
      name: index.name,
      id: index.id,
      fields: index.fields,
      keyFields: ["(term)", ...filterFields, "(frequency)", "_id"],
      kind: "search",
      search: { searchField: index.fields.at(-1)!, filterFields },
      state,
    };
  }
  const byId = index.name === "by_id";
  return {
    name: index.name,
    id: index.id,
    fields: index.fields,
    keyFields: byId ? ["_id"] : [...index.fields, "_creationTime", "_id"],
    kind: byId ? "documents" : "entries",
    state,
  };
}

/** SHA-256 of a table's field validators as JSON Schema (what a change of them is recognized by; a refine's code is not in it). */
export function validatorFingerprint(definition: TableDefinition): string {
  const schema = jsonSchemaOf(z.strictObject(definition.fields) as unknown as z.ZodType, "input");
  return createHash("sha256").update(JSON.stringify(schema)).digest("hex");
}

function kindOf(kind: "entries" | "search"): { kind?: "search" } {
  return kind === "search" ? { kind } : {};
}

function refused(message: string): CairnError {
  return new CairnError("SCHEMA_CHANGE_REFUSED", `schema change refused: ${message}`);
}
