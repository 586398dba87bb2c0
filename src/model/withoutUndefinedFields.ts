import { VALUE_DEPTH_MAX } from "../base/index.js";
import { setField } from "./Value.js";

// An `undefined` object field counts as missing (what `v.optional` declares): the
// functions runtime strips them from what handlers return and write, the client from
// the arguments it sends. Past VALUE_DEPTH_MAX a value is left as is: the value checks
// report it as too deep.

/** Whether some object field, at any depth, is `undefined` (most inputs have none, and need no copy). */
function hasUndefinedField(value: unknown, depth = 0): boolean {
  if (depth > VALUE_DEPTH_MAX || typeof value !== "object" || value === null || value instanceof Uint8Array) return false;
  if (Array.isArray(value)) return value.some((element: unknown) => hasUndefinedField(element, depth + 1));
  for (const name in value) {
    if (!Object.hasOwn(value, name)) continue;
    const field = (value as Record<string, unknown>)[name];
    if (field === undefined || hasUndefinedField(field, depth + 1)) return true;
  }
  return false;
}

/**
 * `value` without `undefined` object fields, at any depth (arrays keep their elements):
 * `value` itself when it has none, as almost every input does, else a copy.
 */
export function withoutUndefinedFields(value: unknown): unknown {
  return hasUndefinedField(value) ? copyWithoutUndefined(value, 0) : value;
}

function copyWithoutUndefined(value: unknown, depth: number): unknown {
  if (depth > VALUE_DEPTH_MAX || typeof value !== "object" || value === null || value instanceof Uint8Array) return value;
  if (Array.isArray(value)) return value.map((element: unknown) => copyWithoutUndefined(element, depth + 1));
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) {
    if (field !== undefined) setField(out, name, copyWithoutUndefined(field, depth + 1));
  }
  return out;
}
