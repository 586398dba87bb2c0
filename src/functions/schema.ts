import { z } from "zod";
import { CairnError } from "../base/index.js";
import type { Id, ObjectShape } from "./values.js";

/**
 * An app's schema: its tables, each with typed fields, indexes and an optional shard key
 * (DESIGN.md §7). Built by `defineSchema({ name: defineTable({...}).index(...) })` and
 * checked when it is built: a schema that is not consistent never reaches a deployment.
 *
 * Rules (SCHEMA_INVALID otherwise):
 * - table names are identifiers (`[A-Za-z][A-Za-z0-9_]*`, at most 64 characters);
 * - field names must not start with `_` (system fields: `_id`, `_creationTime`) or `$`;
 * - every table has the system indexes `by_id` (on `_id`) and `by_creation` (on
 *   `_creationTime`); user index names are identifiers, unique per table, not starting
 *   with `by_id`/`by_creation`'s names or `_`;
 * - an index lists 1..16 distinct fields, each a declared field or a dotted path into
 *   one (`address.city`); every index key then ends with `_creationTime, _id`
 *   (DESIGN.md §6), so keys are unique and ties are ordered by age;
 * - a shard key is a declared top-level field.
 */

export const SYSTEM_INDEXES = {
  by_id: ["_id"],
  by_creation: [],
} as const satisfies Record<string, readonly string[]>;

export const INDEX_FIELDS_MAX = 16;
const NAME_LENGTH_MAX = 64;
const IDENTIFIER = /^[A-Za-z][A-Za-z0-9_]*$/;
const SCHEMA_BRAND = Symbol.for("cairn.schema");
const TABLE_BRAND = Symbol.for("cairn.table");

export interface IndexDefinition {
  readonly name: string;
  readonly fields: readonly string[];
}

/** A full-text search index (SearchQuery.ts): the text of `searchField`, with equality filters on `filterFields`. */
export interface SearchIndexDefinition {
  readonly name: string;
  readonly searchField: string;
  readonly filterFields: readonly string[];
}

export class TableDefinition<Shape extends ObjectShape = ObjectShape> {
  readonly [TABLE_BRAND] = true;
  readonly fields: Shape;
  readonly indexes: IndexDefinition[] = [];
  readonly searchIndexes: SearchIndexDefinition[] = [];
  shardKeyField: string | null = null;

  constructor(fields: Shape) {
    this.fields = fields;
  }

  /** Declares an index over `fields` (its key ends with `_creationTime, _id`). */
  index(name: string, fields: readonly (keyof Shape & string | `${keyof Shape & string}.${string}`)[]): this {
    this.indexes.push({ name, fields: [...fields] });
    return this;
  }

  /**
   * Declares a full-text search index over the string field `searchField`, filterable by
   * equality on `filterFields` (at most 16): `withSearchIndex(name, q => q.search(…))`.
   */
  searchIndex(name: string, spec: { readonly searchField: keyof Shape & string; readonly filterFields?: readonly (keyof Shape & string)[] }): this {
    const given = (typeof spec === "object" && spec !== null ? spec : {}) as { searchField?: unknown; filterFields?: unknown };
    this.searchIndexes.push({ name, searchField: given.searchField as string, filterFields: (given.filterFields ?? []) as string[] });
    return this;
  }

  /** The field whose value routes each document to a shard (used once a deployment has several). */
  shardKey(field: keyof Shape & string): this {
    this.shardKeyField = field;
    return this;
  }
}

export type AnyTables = Record<string, TableDefinition>;

/**
 * What a schema change needs acknowledged (catalog.ts, docs/functions.md#schema-changes):
 * - `drop`: tables (`"messages"`) and indexes (`"messages.by_author"`) the deployment has
 *   and this schema no longer declares, to be dropped — their data deleted by each shard's
 *   writer, in the log like any write. Without it, removing one is refused.
 * - `schemaValidation: false`: a changed field validator is accepted without checking the
 *   stored documents against it (default true: checked, refused with the first
 *   offending ids).
 */
export interface SchemaOptions {
  readonly drop?: { readonly tables?: readonly string[]; readonly indexes?: readonly string[] };
  readonly schemaValidation?: boolean;
}

export class SchemaDefinition<Tables extends AnyTables = AnyTables> {
  readonly [SCHEMA_BRAND] = true;
  constructor(
    readonly tables: Tables,
    readonly options: SchemaOptions = {},
  ) {}
}

export type AnySchema = SchemaDefinition;
export type TableNames<S extends AnySchema> = keyof S["tables"] & string;

/** A stored document of table `T` of schema `S`: its fields plus `_id` and `_creationTime`. */
export type Doc<S extends AnySchema, T extends TableNames<S>> = z.output<z.ZodObject<S["tables"][T]["fields"]>> & {
  readonly _id: Id<T>;
  readonly _creationTime: number;
};

/** What insert and replace take: the fields without the system fields. */
export type NewDoc<S extends AnySchema, T extends TableNames<S>> = z.input<z.ZodObject<S["tables"][T]["fields"]>>;

export function defineTable<Shape extends ObjectShape>(fields: Shape): TableDefinition<Shape> {
  if (typeof fields !== "object" || fields === null || Array.isArray(fields)) {
    throw schemaInvalid("defineTable takes an object of field validators");
  }
  return new TableDefinition(fields);
}

export function defineSchema<Tables extends AnyTables>(tables: Tables, options: SchemaOptions = {}): SchemaDefinition<Tables> {
  if (typeof tables !== "object" || tables === null || Array.isArray(tables)) {
    throw schemaInvalid("defineSchema takes an object of tables");
  }
  for (const [name, table] of Object.entries(tables)) checkTable(name, table);
  checkOptions(tables, options);
  return new SchemaDefinition(tables, options);
}

function checkOptions(tables: AnyTables, options: SchemaOptions): void {
  if (typeof options !== "object" || options === null) throw schemaInvalid("defineSchema's options must be an object: { drop?, schemaValidation? }");
  const { drop, schemaValidation } = options;
  if (schemaValidation !== undefined && typeof schemaValidation !== "boolean") throw schemaInvalid("schemaValidation must be true or false");
  if (drop === undefined) return;
  const names = (list: unknown, what: string): readonly string[] => {
    if (list === undefined) return [];
    if (!Array.isArray(list) || list.some((name) => typeof name !== "string")) throw schemaInvalid(`drop.${what} must be an array of names`);
    return list as string[];
  };
  for (const table of names(drop.tables, "tables")) {
    if (Object.hasOwn(tables, table)) throw schemaInvalid(`drop.tables names ${table}, which the schema declares: drop a table by removing it from the schema`);
  }
  for (const index of names(drop.indexes, "indexes")) {
    const [table, name, extra] = index.split(".");
    if (table === undefined || name === undefined || extra !== undefined) throw schemaInvalid(`drop.indexes names "table.index", not ${JSON.stringify(index)}`);
    const definition = tables[table];
    if (definition !== undefined && (definition.indexes.some((candidate) => candidate.name === name) || definition.searchIndexes.some((candidate) => candidate.name === name))) {
      throw schemaInvalid(`drop.indexes names ${index}, which the schema declares: drop an index by removing it from its table`);
    }
  }
}

export function isSchemaDefinition(value: unknown): value is AnySchema {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[SCHEMA_BRAND] === true;
}

function checkTable(name: string, table: unknown): void {
  if (!IDENTIFIER.test(name) || name.length > NAME_LENGTH_MAX) {
    throw schemaInvalid(`table name ${JSON.stringify(name)} is not an identifier of at most ${NAME_LENGTH_MAX} characters`);
  }
  if (typeof table !== "object" || table === null || (table as Record<symbol, unknown>)[TABLE_BRAND] !== true) {
    throw schemaInvalid(`table ${name} must be made with defineTable(...)`);
  }
  const definition = table as TableDefinition;
  for (const [field, validator] of Object.entries(definition.fields)) {
    if (field.startsWith("_") || field.startsWith("$") || field.length === 0) {
      throw schemaInvalid(`table ${name}: field ${JSON.stringify(field)} may not start with "_" or "$" (reserved for system fields and the encoding)`);
    }
    if (!(validator instanceof z.ZodType) && !isZodLike(validator)) {
      throw schemaInvalid(`table ${name}: field ${field} is not a validator (use v.string(), v.number(), …)`);
    }
  }
  const seen = new Set<string>(Object.keys(SYSTEM_INDEXES));
  for (const index of definition.indexes) checkIndex(name, definition, index, seen);
  for (const index of definition.searchIndexes) checkSearchIndex(name, definition, index, seen);
  const shardKey = definition.shardKeyField;
  if (shardKey !== null && !Object.hasOwn(definition.fields, shardKey)) {
    throw schemaInvalid(`table ${name}: shard key ${JSON.stringify(shardKey)} is not a field of the table`);
  }
}

function checkIndex(table: string, definition: TableDefinition, index: IndexDefinition, seen: Set<string>): void {
  const { name, fields } = index;
  if (typeof name !== "string" || !IDENTIFIER.test(name) || name.length > NAME_LENGTH_MAX) {
    throw schemaInvalid(`table ${table}: index name ${JSON.stringify(name)} is not an identifier`);
  }
  if (seen.has(name)) {
    throw schemaInvalid(`table ${table}: index ${name} is declared twice${name in SYSTEM_INDEXES ? " (it is a system index)" : ""}`);
  }
  seen.add(name);
  if (!Array.isArray(fields) || fields.length === 0 || fields.length > INDEX_FIELDS_MAX) {
    throw schemaInvalid(`table ${table}: index ${name} must list 1..${INDEX_FIELDS_MAX} fields`);
  }
  if (new Set(fields).size !== fields.length) throw schemaInvalid(`table ${table}: index ${name} lists a field twice`);
  for (const field of fields) {
    const top = typeof field === "string" ? field.split(".")[0]! : "";
    if (typeof field !== "string" || field.split(".").some((part) => part.length === 0) || !Object.hasOwn(definition.fields, top)) {
      throw schemaInvalid(`table ${table}: index ${name} is on ${JSON.stringify(field)}, which is not a field of the table`);
    }
  }
}

function checkSearchIndex(table: string, definition: TableDefinition, index: SearchIndexDefinition, seen: Set<string>): void {
  const { name, searchField, filterFields } = index;
  if (typeof name !== "string" || !IDENTIFIER.test(name) || name.length > NAME_LENGTH_MAX) {
    throw schemaInvalid(`table ${table}: search index name ${JSON.stringify(name)} is not an identifier`);
  }
  if (seen.has(name)) throw schemaInvalid(`table ${table}: index ${name} is declared twice`);
  seen.add(name);
  if (typeof searchField !== "string" || !Object.hasOwn(definition.fields, searchField)) {
    throw schemaInvalid(`table ${table}: search index ${name} searches ${JSON.stringify(searchField)}, which is not a field of the table`);
  }
  if (!Array.isArray(filterFields) || filterFields.length > INDEX_FIELDS_MAX) {
    throw schemaInvalid(`table ${table}: search index ${name} takes at most ${INDEX_FIELDS_MAX} filter fields`);
  }
  if (new Set(filterFields).size !== filterFields.length) throw schemaInvalid(`table ${table}: search index ${name} lists a filter field twice`);
  for (const field of filterFields) {
    if (typeof field !== "string" || !Object.hasOwn(definition.fields, field)) {
      throw schemaInvalid(`table ${table}: search index ${name} filters on ${JSON.stringify(field)}, which is not a field of the table`);
    }
    if (field === searchField) throw schemaInvalid(`table ${table}: search index ${name} filters on its search field ${field}`);
  }
}

/** A validator made by another copy of zod (an app bundled with its own) still has zod's shape. */
function isZodLike(value: unknown): boolean {
  return typeof value === "object" && value !== null && typeof (value as { safeParse?: unknown }).safeParse === "function";
}

export function schemaInvalid(message: string): CairnError {
  return new CairnError("SCHEMA_INVALID", `invalid schema: ${message}`);
}
