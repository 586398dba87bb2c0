import { z } from "zod";
import { INT64_MAX, INT64_MIN, isValue, type Value, isCanonicalSpelling, tableNumberOfId, type DocumentId } from "../model/index.js";
import { currentIdScope } from "./idScope.js";

/**
 * The validator vocabulary of schemas and function arguments: a thin layer over zod 4,
 * so every validator is a zod schema (usable with zod's own API) and TypeScript infers
 * document and argument types from it with no code generation.
 *
 * Each validator accepts exactly one kind of Cairn value (model/Value):
 * - `v.number()` is any float64, NaN and ±Infinity included (zod's own number refuses them);
 * - `v.int64()` is a bigint in int64 range; `v.bytes()` a Uint8Array;
 * - `v.object({...})` is strict: an unknown field is an error, not silently dropped;
 * - `v.optional(x)` may be missing (an `undefined` field counts as missing and is not stored);
 * - `v.id("table")` is a canonical document id of that table (checked against the
 *   deployment's table numbers while the runtime validates);
 * - `v.any()` is any Cairn value.
 */

/** A document id of table `TableName`. */
export type Id<TableName extends string> = DocumentId & { readonly __table: TableName };

export type Validator<T = unknown> = z.ZodType<T>;
export type Infer<V extends z.ZodType> = z.output<V>;
export type ObjectShape = Record<string, z.ZodType>;

/**
 * How Cairn's own validators that zod's `toJSONSchema` cannot represent (custom checks)
 * describe themselves as JSON Schema, for the admin API's function list (describeFunctions).
 */
const describedAs = new WeakMap<object, Readonly<Record<string, unknown>>>();

export function jsonSchemaOfCairnValidator(schema: object): Readonly<Record<string, unknown>> | undefined {
  return describedAs.get(schema);
}

function described<T extends object>(schema: T, jsonSchema: Readonly<Record<string, unknown>>): T {
  describedAs.set(schema, jsonSchema);
  return schema;
}

const number = () => described(z.custom<number>((input) => typeof input === "number", { error: "expected a number" }), { type: "number" });
const bytes = () => z.custom<Uint8Array>((input) => input instanceof Uint8Array, { error: "expected bytes (a Uint8Array)" });
const int64 = () =>
  z
    .bigint({ error: "expected an int64 (a bigint)" })
    .min(INT64_MIN, { error: "int64 below -2^63" })
    .max(INT64_MAX, { error: "int64 above 2^63-1" });

function id<TableName extends string>(tableName: TableName) {
  return described(
    z.custom<Id<TableName>>((input) => isIdOfTable(input, tableName), {
      error: `expected a document id of table "${tableName}"`,
    }),
    { type: "string", format: "cairn-id", table: tableName },
  );
}

/** One parse per check: ids are validated on every call that takes one. */
function isIdOfTable(input: unknown, tableName: string): boolean {
  let tableNumber: number;
  try {
    tableNumber = tableNumberOfId(input);
  } catch {
    return false;
  }
  // Canonical spelling only: a parseable id that is lowercase is canonical (model/DocumentId).
  if (!isCanonicalSpelling(input as string)) return false;
  const tables = currentIdScope();
  return tables === null || tables(tableName) === tableNumber;
}

export const v = {
  string: () => z.string({ error: "expected a string" }),
  number,
  int64,
  boolean: () => z.boolean({ error: "expected a boolean" }),
  null: () => z.null({ error: "expected null" }),
  bytes,
  id,
  array: <Element extends z.ZodType>(element: Element) => z.array(element, { error: "expected an array" }),
  object: <Shape extends ObjectShape>(shape: Shape) => z.strictObject(shape, { error: "expected an object" }),
  optional: <Inner extends z.ZodType>(inner: Inner) => z.optional(inner),
  union: <const Members extends readonly [z.ZodType, z.ZodType, ...z.ZodType[]]>(...members: Members) => z.union(members),
  literal: <const Literal extends string | number | boolean | bigint | null>(literal: Literal) => z.literal(literal),
  any: () => z.custom<Value>((input) => isValue(input), { error: "expected a Cairn value" }),
} as const;
