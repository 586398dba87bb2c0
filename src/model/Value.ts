import { CairnError, FIELD_NAME_LENGTH_MAX, VALUE_DEPTH_MAX } from "../base/index.js";

/**
 * A Cairn value: what documents, function arguments and results are made of.
 *
 * Invariants of every valid value (checked by `validateValue` and by every encoder):
 * - numbers are any float64, including -0, NaN and ±Infinity;
 * - bigints are int64 (INT64_MIN..INT64_MAX);
 * - strings and field names are well-formed Unicode (no lone surrogates), because index
 *   keys and size limits are defined on UTF-8 bytes and a lone surrogate has none;
 * - bytes are Uint8Array (a Buffer is accepted and comes back as a plain Uint8Array);
 * - arrays are dense `Array`s; objects are plain (prototype Object.prototype or null) and
 *   have no symbol keys;
 * - field names are non-empty, at most FIELD_NAME_LENGTH_MAX UTF-16 code units, and do
 *   not start with `$`: the lossless JSON encoding spells special values as one-field
 *   objects such as `{"$bytes": "..."}`, so a user field starting with `$` could be
 *   mistaken for one; reserving the prefix keeps the encoding unambiguous without escaping;
 * - nesting: at most VALUE_DEPTH_MAX arrays/objects inside one another (a scalar at the
 *   top has nesting 0, `[[1]]` has nesting 2). Walkers check depth while descending, so a
 *   hostile or cyclic input fails with VALUE_TOO_DEEP instead of exhausting the stack.
 */
export type Value = null | boolean | number | bigint | string | Uint8Array | Value[] | ValueObject;

export type ValueObject = { [field: string]: Value };

/** The kinds of value, in their sort order (see compareValues and IndexKey). */
export const VALUE_KINDS = ["null", "boolean", "number", "bigint", "string", "bytes", "array", "object"] as const;

export type ValueKind = (typeof VALUE_KINDS)[number];

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/** The field names and array indexes from the root to the part being looked at. */
export type ValuePath = (string | number)[];

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** In a `u` regex a valid surrogate pair is one code point, so this matches lone halves only. */
const LONE_SURROGATE = /\p{Cs}/u;

/** `.items[3].price`; fields that are not identifiers are quoted: `["a b"]`. */
export function formatPath(path: readonly (string | number)[]): string {
  if (path.length === 0) return "(root)";
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += IDENTIFIER.test(part) ? `.${part}` : `[${JSON.stringify(part)}]`;
  }
  return out;
}

export function valueInvalid(message: string, path: readonly (string | number)[]): CairnError {
  const where = formatPath(path);
  return new CairnError("VALUE_INVALID", `invalid value at ${where}: ${message}`, { details: { path: where } });
}

export function isWellFormedText(text: string): boolean {
  // Native where the runtime has it (Node 20, current browsers): no regex per string.
  return hasIsWellFormed ? (text as { isWellFormed(): boolean } & string).isWellFormed() : !LONE_SURROGATE.test(text);
}

const hasIsWellFormed = typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function";

/**
 * The kind of `value`, after checking everything about it that does not need descending
 * into its children. Throws VALUE_INVALID for anything that is not a Value.
 */
export function kindOfValue(value: unknown, path: ValuePath): ValueKind {
  switch (typeof value) {
    case "boolean":
      return "boolean";
    case "number":
      return "number";
    case "bigint":
      if (value < INT64_MIN || value > INT64_MAX) throw valueInvalid(`bigint ${value} is outside int64`, path);
      return "bigint";
    case "string":
      if (!isWellFormedText(value)) throw valueInvalid("string contains a lone surrogate", path);
      return "string";
    case "object":
      return kindOfObject(value, path);
    default:
      throw valueInvalid(`${typeof value} is not a value`, path);
  }
}

function kindOfObject(value: object | null, path: ValuePath): ValueKind {
  if (value === null) return "null";
  if (value instanceof Uint8Array) return "bytes";
  const prototype: unknown = Object.getPrototypeOf(value);
  if (Array.isArray(value)) {
    if (prototype !== Array.prototype) throw valueInvalid("array subclasses are not values", path);
    return "array";
  }
  if (prototype === Object.prototype || prototype === null) return "object";
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  throw valueInvalid(`${typeof name === "string" ? name : "class instance"} is not a value (only plain objects)`, path);
}

/**
 * The own field names of a plain object, checked. Order is the object's own order, which
 * the JSON encoding keeps; index keys sort them instead.
 */
export function fieldNamesOf(object: object, path: ValuePath): string[] {
  if (Object.getOwnPropertySymbols(object).length > 0) throw valueInvalid("symbol keys are not allowed", path);
  const names = Object.keys(object);
  for (const name of names) checkFieldName(name, path);
  return names;
}

export function checkFieldName(name: string, path: ValuePath): void {
  if (name.length === 0) throw valueInvalid("field names must not be empty", path);
  if (name.length > FIELD_NAME_LENGTH_MAX) {
    throw valueInvalid(`field name longer than ${FIELD_NAME_LENGTH_MAX} characters`, path);
  }
  if (name.startsWith("$")) {
    throw valueInvalid(`field name ${JSON.stringify(name)} starts with "$", which is reserved for the encoding`, path);
  }
  if (!isWellFormedText(name)) throw valueInvalid("field name contains a lone surrogate", path);
}

/** Call when entering a container whose parent is at `depth` (the root's parent is 0). */
export function checkNestingDepth(depth: number, path: ValuePath): void {
  if (depth >= VALUE_DEPTH_MAX) {
    const where = formatPath(path);
    throw new CairnError("VALUE_TOO_DEEP", `value nests deeper than ${VALUE_DEPTH_MAX} at ${where}`, {
      details: { path: where },
    });
  }
}

/** Reading a hole gives undefined; say which it was, since both are invalid. */
export function arrayElementInvalid(array: readonly unknown[], index: number, path: ValuePath): CairnError {
  return valueInvalid(index in array ? "undefined is not a value" : "sparse arrays are not values", path);
}

/** Plain assignment of "__proto__" would replace the prototype instead of adding a field. */
export function setField<T>(object: Record<string, T>, name: string, value: T): void {
  if (name !== "__proto__") object[name] = value;
  else Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
}

export function validateValue(value: unknown): asserts value is Value {
  validateAt(value, 0, []);
}

export function isValue(value: unknown): value is Value {
  try {
    validateValue(value);
    return true;
  } catch {
    return false;
  }
}

function validateAt(value: unknown, depth: number, path: ValuePath): void {
  const kind = kindOfValue(value, path);
  if (kind === "array") validateArray(value as unknown[], depth, path);
  else if (kind === "object") validateObject(value as Record<string, unknown>, depth, path);
}

function validateArray(array: readonly unknown[], depth: number, path: ValuePath): void {
  checkNestingDepth(depth, path);
  for (let index = 0; index < array.length; index++) {
    path.push(index);
    const element = array[index];
    if (element === undefined) throw arrayElementInvalid(array, index, path);
    validateAt(element, depth + 1, path);
    path.pop();
  }
}

function validateObject(object: Record<string, unknown>, depth: number, path: ValuePath): void {
  checkNestingDepth(depth, path);
  for (const name of fieldNamesOf(object, path)) {
    path.push(name);
    validateAt(object[name], depth + 1, path);
    path.pop();
  }
}
