import { CairnError, DOCUMENT_BYTES_MAX } from "../base/index.js";
import { decodeBase64, encodeBase64 } from "./Base64.js";
import type { Value, ValueObject, ValuePath } from "./Value.js";
import {
  INT64_MAX,
  INT64_MIN,
  arrayElementInvalid,
  checkFieldName,
  checkNestingDepth,
  fieldNamesOf,
  isWellFormedText,
  kindOfValue,
  setField,
  valueInvalid,
} from "./Value.js";

/**
 * Cairn's lossless JSON encoding of values, used on the wire and in segments.
 *
 * - null, booleans, strings, arrays and objects are themselves;
 * - finite numbers other than -0 are JSON numbers (JavaScript prints the shortest text
 *   that parses back to the same float64, so they round-trip exactly);
 * - -0, NaN, ±Infinity are `{"$float": "-0" | "NaN" | "Infinity" | "-Infinity"}`;
 * - bigints are `{"$integer": "<canonical decimal>"}`;
 * - bytes are `{"$bytes": "<canonical padded base64>"}`.
 *
 * Invariants: `decodeValue(encodeValue(v))` equals `v` exactly (-0 included, field order
 * kept); decoding accepts only what encoding produces, so each value has one encoding;
 * the text form of a document is at most DOCUMENT_BYTES_MAX UTF-8 bytes.
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

const SPECIAL_FLOATS: ReadonlyMap<string, number> = new Map([
  ["-0", -0],
  ["NaN", Number.NaN],
  ["Infinity", Number.POSITIVE_INFINITY],
  ["-Infinity", Number.NEGATIVE_INFINITY],
]);
const CANONICAL_DECIMAL = /^-?(0|[1-9][0-9]*)$/;

/** Encodes a value; VALUE_INVALID (with the path of the bad part) or VALUE_TOO_DEEP. */
export function encodeValue(value: Value): JsonValue {
  return encodeAt(value, 0, [], { bytesLeft: Number.POSITIVE_INFINITY });
}

/**
 * The text form of a document or other stored value; VALUE_TOO_LARGE beyond
 * DOCUMENT_BYTES_MAX. The size is also estimated while encoding, so an oversized value
 * (even one that shares subtrees, whose text would be exponentially long) fails after
 * O(DOCUMENT_BYTES_MAX) work.
 */
export function encodeValueText(value: Value): string {
  const text = JSON.stringify(encodeAt(value, 0, [], { bytesLeft: DOCUMENT_BYTES_MAX }));
  checkTextSize(text);
  return text;
}

/** Decodes an encoded value; VALUE_INVALID for anything `encodeValue` does not produce. */
export function decodeValue(json: unknown): Value {
  return decodeAt(json, 0, []);
}

/** Parses and decodes a text form; VALUE_TOO_LARGE before parsing an oversized text. */
export function decodeValueText(text: string): Value {
  if (typeof text !== "string") throw valueInvalid("encoded value text must be a string", []);
  checkTextSize(text);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CairnError("VALUE_INVALID", `encoded value is not JSON: ${(error as Error).message}`, { cause: error });
  }
  return decodeValue(json);
}

/** UTF-8 length of a JS string (lone surrogates, which values never hold, count 3 bytes). */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    if (unit < 0x80) bytes += 1;
    else if (unit < 0x800) bytes += 2;
    else if (isHighSurrogate(unit) && isLowSurrogate(text.charCodeAt(index + 1))) {
      bytes += 4;
      index++;
    } else bytes += 3;
  }
  return bytes;
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

/** charCodeAt past the end is NaN, which is no surrogate. */
function isLowSurrogate(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

function checkTextSize(text: string): void {
  // A UTF-16 code unit is at least one UTF-8 byte, so a long string fails without a scan.
  const bytes = text.length > DOCUMENT_BYTES_MAX ? text.length : utf8ByteLength(text);
  if (bytes > DOCUMENT_BYTES_MAX) throw tooLarge(bytes);
}

function tooLarge(bytes: number | null): CairnError {
  const size = bytes === null ? "more than" : `${bytes} bytes, more than`;
  return new CairnError("VALUE_TOO_LARGE", `encoded value is ${size} the limit of ${DOCUMENT_BYTES_MAX} bytes`, {
    details: { bytes, bytesMax: DOCUMENT_BYTES_MAX },
  });
}

// ---- encoding ---------------------------------------------------------------------------

/** A lower bound of the text still allowed; each part subtracts at least its minimum size. */
interface SizeBudget {
  bytesLeft: number;
}

function spend(budget: SizeBudget, bytes: number): void {
  budget.bytesLeft -= bytes;
  if (budget.bytesLeft < 0) throw tooLarge(null);
}

function encodeAt(value: unknown, depth: number, path: ValuePath, budget: SizeBudget): JsonValue {
  switch (kindOfValue(value, path)) {
    case "null":
      spend(budget, 4);
      return null;
    case "boolean":
      spend(budget, 4);
      return value as boolean;
    case "number":
      spend(budget, 1);
      return encodeNumber(value as number);
    case "bigint":
      spend(budget, 15);
      return { $integer: (value as bigint).toString() };
    case "string":
      spend(budget, (value as string).length + 2);
      return value as string;
    case "bytes":
      spend(budget, 13 + Math.ceil((value as Uint8Array).length / 3) * 4);
      return { $bytes: encodeBase64(value as Uint8Array) };
    case "array":
      checkNestingDepth(depth, path);
      return encodeArray(value as unknown[], depth, path, budget);
    case "object":
      checkNestingDepth(depth, path);
      return encodeObject(value as ValueObject, depth, path, budget);
  }
}

function encodeNumber(value: number): JsonValue {
  if (Object.is(value, -0)) return { $float: "-0" };
  if (Number.isFinite(value)) return value;
  return { $float: String(value) };
}

function encodeArray(array: readonly unknown[], depth: number, path: ValuePath, budget: SizeBudget): JsonValue[] {
  spend(budget, 1 + array.length);
  const out: JsonValue[] = new Array<JsonValue>(array.length);
  for (let index = 0; index < array.length; index++) {
    path.push(index);
    const element = array[index];
    if (element === undefined) throw arrayElementInvalid(array, index, path);
    out[index] = encodeAt(element, depth + 1, path, budget);
    path.pop();
  }
  return out;
}

function encodeObject(object: ValueObject, depth: number, path: ValuePath, budget: SizeBudget): JsonValue {
  const names = fieldNamesOf(object, path);
  spend(budget, 1 + names.length);
  const out: { [key: string]: JsonValue } = {};
  for (const name of names) {
    spend(budget, name.length + 3);
    path.push(name);
    setField(out, name, encodeAt(object[name], depth + 1, path, budget));
    path.pop();
  }
  return out;
}

// ---- decoding ---------------------------------------------------------------------------

function decodeAt(json: unknown, depth: number, path: ValuePath): Value {
  switch (typeof json) {
    case "boolean":
      return json;
    case "number":
      return decodeNumber(json, path);
    case "string":
      if (!isWellFormedText(json)) throw valueInvalid("string contains a lone surrogate", path);
      return json;
    case "object":
      if (json === null) return null;
      if (Array.isArray(json)) return decodeArray(json, depth, path);
      return decodeObject(json, depth, path);
    default:
      throw valueInvalid(`${typeof json} is not JSON`, path);
  }
}

function decodeNumber(json: number, path: ValuePath): number {
  if (!Number.isFinite(json)) throw valueInvalid(`${json} must be encoded as {"$float": "${json}"}`, path);
  if (Object.is(json, -0)) throw valueInvalid('-0 must be encoded as {"$float": "-0"}', path);
  return json;
}

function decodeArray(json: readonly unknown[], depth: number, path: ValuePath): Value[] {
  checkNestingDepth(depth, path);
  if (Object.getPrototypeOf(json) !== Array.prototype) throw valueInvalid("array subclasses are not JSON", path);
  const out = new Array<Value>(json.length);
  for (let index = 0; index < json.length; index++) {
    path.push(index);
    const element = json[index];
    if (element === undefined) throw arrayElementInvalid(json, index, path);
    out[index] = decodeAt(element, depth + 1, path);
    path.pop();
  }
  return out;
}

function decodeObject(json: object, depth: number, path: ValuePath): Value {
  const prototype: unknown = Object.getPrototypeOf(json);
  if (prototype !== Object.prototype && prototype !== null) throw valueInvalid("only plain objects are JSON", path);
  if (Object.getOwnPropertySymbols(json).length > 0) throw valueInvalid("symbol keys are not JSON", path);
  const names = Object.keys(json);
  const fields = json as Record<string, unknown>;
  if (names.length === 1 && names[0]!.startsWith("$")) return decodeSpecial(names[0]!, fields[names[0]!], path);
  checkNestingDepth(depth, path);
  const out: ValueObject = {};
  for (const name of names) {
    checkFieldName(name, path);
    path.push(name);
    setField(out, name, decodeAt(fields[name], depth + 1, path));
    path.pop();
  }
  return out;
}

function decodeSpecial(name: string, payload: unknown, path: ValuePath): Value {
  if (typeof payload !== "string") throw valueInvalid(`${name} needs a string`, path);
  switch (name) {
    case "$float":
      return decodeSpecialFloat(payload, path);
    case "$integer":
      return decodeInteger(payload, path);
    case "$bytes": {
      const bytes = decodeBase64(payload);
      if (bytes === null) throw valueInvalid("$bytes is not canonical padded base64", path);
      return bytes;
    }
    default:
      throw valueInvalid(`unknown encoding ${JSON.stringify(name)} (field names must not start with "$")`, path);
  }
}

function decodeSpecialFloat(payload: string, path: ValuePath): number {
  const value = SPECIAL_FLOATS.get(payload);
  if (value === undefined) {
    throw valueInvalid(`$float must be "-0", "NaN", "Infinity" or "-Infinity", not ${JSON.stringify(payload)}`, path);
  }
  return value;
}

function decodeInteger(payload: string, path: ValuePath): bigint {
  // 20 characters hold any int64 in decimal; the length check keeps BigInt() cheap.
  if (payload.length > 20 || !CANONICAL_DECIMAL.test(payload) || payload === "-0") {
    throw valueInvalid(`$integer ${JSON.stringify(payload)} is not a canonical decimal int64`, path);
  }
  const value = BigInt(payload);
  if (value < INT64_MIN || value > INT64_MAX) throw valueInvalid(`$integer ${payload} is outside int64`, path);
  return value;
}
