import { z } from "zod";
import type { App } from "./App.js";
import type { Catalog, IndexInfo } from "./catalog.js";
import type { FunctionKind, Visibility } from "./registration.js";
import { SYSTEM_INDEXES } from "./schema.js";
import { jsonSchemaOfCairnValidator } from "./values.js";

/**
 * What the admin API tells of an app (docs/admin-api.md): its functions with their
 * validators as JSON Schema (FunctionInfo), and its tables with their indexes (Table).
 *
 * Validators become JSON Schema through zod's `toJSONSchema`. Cairn's own validators that
 * zod cannot represent describe themselves (values.ts): a `v.id(table)` as
 * `{type: "string", format: "cairn-id", table}`, a `v.number()` as `{type: "number"}`.
 * Anything else zod cannot represent (bytes, int64, `v.any()`, a custom check) is `{}`,
 * and a validator zod fails on altogether describes as `{}`: one function's odd validator
 * never keeps the others from being listed.
 */

/** A JSON Schema document, as zod's `toJSONSchema` writes it. */
export type JsonSchema = { readonly [keyword: string]: unknown };

export interface FunctionInfo {
  readonly path: string;
  readonly kind: FunctionKind;
  readonly visibility: Visibility;
  /** Null for a function that takes no arguments (no `args`, or `args: {}`: the same validator). */
  readonly args: JsonSchema | null;
  /** Null for a function that declared no `returns`. */
  readonly returns: JsonSchema | null;
}

export interface IndexDescription {
  readonly name: string;
  /** A declared index's fields as declared; a system index's key fields (`by_creation`: `_creationTime`, `_id`). */
  readonly fields: readonly string[];
  readonly state: "ready" | "backfilling";
  /** `by_id` and `by_creation`, which every table has. */
  readonly system: boolean;
}

/** A table as the deployment's schema has it (the admin API's Table without `documents`). */
export interface TableDescription {
  readonly name: string;
  readonly number: number;
  readonly shardKey: string | null;
  readonly indexes: readonly IndexDescription[];
}

/** The admin API's Table: with how many documents it holds. */
export interface TableWithDocuments extends TableDescription {
  readonly documents: number;
}

/** Every function of `app`, in path order. */
export function describeFunctions(app: App): FunctionInfo[] {
  return app.entries().map(([path, definition]) => ({
    path,
    kind: definition.kind,
    visibility: definition.visibility,
    // Arguments are what a caller sends (zod's input side); a result is what the validator hands back.
    args: takesArguments(definition.args) ? jsonSchemaOf(definition.args, "input") : null,
    returns: definition.returns === null ? null : jsonSchemaOf(definition.returns, "output"),
  }));
}

/**
 * The tables of `catalog` in schema order, each with its indexes in the order the
 * deployment numbered them (system indexes first), their states as of now; with
 * `documents` (counts by table name; a table left out counts 0) each says how many
 * documents it holds.
 */
export function describeTables(catalog: Catalog): TableDescription[];
export function describeTables(catalog: Catalog, documents: ReadonlyMap<string, number>): TableWithDocuments[];
export function describeTables(catalog: Catalog, documents?: ReadonlyMap<string, number>): TableDescription[] | TableWithDocuments[] {
  return [...catalog.tables].map((table) => {
    const description: TableDescription = {
      name: table.name,
      number: table.number,
      shardKey: table.shardKey,
      indexes: [...table.indexes.values()].map(describeIndex),
    };
    return documents === undefined ? description : { ...description, documents: documents.get(table.name) ?? 0 };
  });
}

function describeIndex(index: IndexInfo): IndexDescription {
  const system = Object.hasOwn(SYSTEM_INDEXES, index.name);
  return { name: index.name, fields: [...(system ? index.keyFields : index.fields)], state: index.state, system };
}

/** Registration makes every argument validator an object: one of no fields takes nothing. */
function takesArguments(args: z.ZodType): boolean {
  const shape = (args as { readonly shape?: unknown }).shape;
  return !(typeof shape === "object" && shape !== null && Object.keys(shape).length === 0);
}

/** A validator as JSON Schema (`{}` for one zod cannot convert); also the catalog's validator fingerprint (catalog.ts). */
export function jsonSchemaOf(validator: z.ZodType, io: "input" | "output"): JsonSchema {
  try {
    return z.toJSONSchema(validator, { io, unrepresentable: describeUnrepresentable }) as JsonSchema;
  } catch {
    // Not a zod schema, or one zod's converter fails on: the list goes on without its shape.
    return {};
  }
}

/** What zod cannot represent: Cairn's ids and numbers as they describe themselves (values.ts), anything else as any value. */
function describeUnrepresentable(context: { readonly zodSchema: z.core.$ZodType }): JsonSchema | "any" {
  return jsonSchemaOfCairnValidator(context.zodSchema) ?? "any";
}
