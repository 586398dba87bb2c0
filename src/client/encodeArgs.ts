import { VALUE_DEPTH_MAX } from "../base/limits.js";
import { setField, type Value } from "../model/Value.js";
import { encodeValue, type JsonValue } from "../model/ValueJson.js";

/**
 * Arguments as they travel: Cairn's JSON encoding, and its text, which names a query
 * subscription together with the path (two calls with equal arguments share one).
 */
export interface EncodedArgs {
  readonly json: JsonValue;
  readonly text: string;
}

/**
 * Encodes arguments (an object of values; `undefined` means none). An `undefined` field
 * counts as missing, as `v.optional` declares on the server, so it is left out at any
 * depth; anything else that is not a value fails with VALUE_INVALID naming its path.
 */
export function encodeArgs(args: unknown): EncodedArgs {
  const json = encodeValue(withoutUndefinedFields(args ?? {}, 0) as Value);
  return { json, text: JSON.stringify(json) };
}

function withoutUndefinedFields(value: unknown, depth: number): unknown {
  // Past the depth limit the value is returned as is, and encodeValue reports VALUE_TOO_DEEP.
  if (depth > VALUE_DEPTH_MAX || typeof value !== "object" || value === null || value instanceof Uint8Array) return value;
  if (Array.isArray(value)) return value.map((element: unknown) => withoutUndefinedFields(element, depth + 1));
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) {
    if (field !== undefined) setField(out, name, withoutUndefinedFields(field, depth + 1));
  }
  return out;
}
