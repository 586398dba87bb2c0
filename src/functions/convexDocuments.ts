import { createHash } from "node:crypto";
import type { z } from "zod";
import { CairnError } from "../base/index.js";
import { decodeBase64, encodeDocumentId, ROUTE_BYTES, type DocumentId, type Value, type ValueObject } from "../model/index.js";
import type { TableInfo } from "./catalog.js";
import { jsonSchemaOfCairnValidator } from "./values.js";

/**
 * Documents of a Convex snapshot export, made Cairn documents (`cairn import` of Convex's
 * layout, docs/history.md):
 *
 * - Values come in Convex's JSON encoding: `{"$integer": <base64 of a little-endian
 *   int64>}`, `{"$float": <base64 of a little-endian float64>}` (NaN, ±Infinity, -0),
 *   `{"$bytes": <base64>}`; everything else is itself.
 * - A Convex id is not a Cairn id. Each document gets the Cairn id its Convex id maps to:
 *   its table's number and 16 bytes of sha256 over the Convex id — and, in a table with a
 *   shard key, its shard key's route in the first 8 (as any id of that table) — so a
 *   re-run maps every document to the same id (and `cairn import` stays idempotent).
 * - References are rewritten the same way wherever the table's validator says `v.id(t)`:
 *   the referenced document's Cairn id. A reference into a table with a shard key needs
 *   that document's route, so it must be in the archive.
 */

/** A Convex-encoded JSON value as a Cairn value; IMPORT_INVALID naming `at` when it is not one. */
export function convexValueToCairn(json: unknown, at: string): Value {
  if (json === null || typeof json === "boolean" || typeof json === "string" || typeof json === "number") return json;
  if (Array.isArray(json)) return json.map((element, index) => convexValueToCairn(element, `${at}[${index}]`));
  if (typeof json !== "object") throw invalid(at, `a ${typeof json} is no value`);
  const entries = Object.entries(json as Record<string, unknown>);
  if (entries.length === 1 && entries[0]![0].startsWith("$")) {
    const [tag, encoded] = entries[0]!;
    const bytes = typeof encoded === "string" ? decodeBase64(encoded) : null;
    if (bytes === null) throw invalid(at, `${tag} must hold base64`);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    switch (tag) {
      case "$integer":
        if (bytes.byteLength !== 8) throw invalid(at, "$integer must be 8 bytes");
        return view.getBigInt64(0, true);
      case "$float":
        if (bytes.byteLength !== 8) throw invalid(at, "$float must be 8 bytes");
        return view.getFloat64(0, true);
      case "$bytes":
        return bytes;
      default:
        throw invalid(at, `unknown tag ${tag}`);
    }
  }
  const object: Record<string, Value> = {};
  for (const [key, value] of entries) object[key] = convexValueToCairn(value, `${at}.${key}`);
  return object;
}

/** The Cairn id a Convex document id maps to in `table`, given the document's route (a table with a shard key) or null. */
export function cairnIdOfConvexId(table: TableInfo, convexId: string, route: Uint8Array | null): DocumentId {
  const random = new Uint8Array(createHash("sha256").update(`convex ${convexId}`, "utf8").digest().subarray(0, 16));
  if (table.shardKey !== null) {
    if (route === null || route.byteLength !== ROUTE_BYTES) throw new CairnError("INTERNAL", `a document of ${table.name} needs its route`);
    random.set(route, 0);
  }
  return encodeDocumentId({ tableNumber: table.number, random });
}

/**
 * `value` with every string at a `v.id(t)` position of `validator` replaced by what
 * `mapId(t, string)` answers (null: not an id of t). In a union, the first member the
 * mapped value satisfies is taken.
 */
export function mapReferences(validator: z.ZodType, value: Value, mapId: (tableName: string, convexId: string) => string | null): Value {
  const described = jsonSchemaOfCairnValidator(validator);
  if (described?.["format"] === "cairn-id" && typeof value === "string") return mapId(String(described["table"]), value) ?? value;
  const def = (validator as unknown as { _zod: { def: Record<string, unknown> } })._zod.def;
  switch (def["type"]) {
    case "object": {
      if (typeof value !== "object" || value === null || Array.isArray(value) || value instanceof Uint8Array) return value;
      const shape = def["shape"] as Record<string, z.ZodType>;
      const mapped: Record<string, Value> = {};
      for (const [key, field] of Object.entries(value as ValueObject)) mapped[key] = shape[key] === undefined ? field : mapReferences(shape[key], field, mapId);
      return mapped;
    }
    case "array":
      return Array.isArray(value) ? value.map((element) => mapReferences(def["element"] as z.ZodType, element, mapId)) : value;
    case "optional":
    case "nullable":
      return mapReferences(def["innerType"] as z.ZodType, value, mapId);
    case "union": {
      // The member the mapped value satisfies (an id member only once its string was mapped: a Convex id is no Cairn id).
      for (const option of def["options"] as z.ZodType[]) {
        const mapped = mapReferences(option, value, mapId);
        if (option.safeParse(mapped).success) return mapped;
      }
      return value;
    }
    default:
      return value;
  }
}

function invalid(at: string, reason: string): CairnError {
  return new CairnError("IMPORT_INVALID", `${at}: not a value in Convex's JSON encoding (${reason}); nothing was imported`, { details: { at } });
}
