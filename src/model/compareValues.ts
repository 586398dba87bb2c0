import type { Value, ValueKind, ValueObject } from "./Value.js";
import { VALUE_KINDS, checkNestingDepth } from "./Value.js";
import { compareBytes } from "./compareBytes.js";

/**
 * The total order of values, identical to the byte order of their index keys
 * (`encodeIndexKey`), so that a query can reason about values and the store about bytes.
 *
 * - kinds: null < boolean < number < bigint < string < bytes < array < object;
 * - false < true;
 * - numbers: float64 order with -0 < +0 and NaN (any NaN) after +Infinity;
 * - strings: Unicode code point order, which is UTF-8 byte order. This differs from JS
 *   `<`, which compares UTF-16 code units: "\u{1F600}" < "\uFF00" in JS, but not here;
 * - bytes: byte-wise, a prefix first;
 * - arrays: element by element, a prefix first;
 * - objects: as the list of (field name, value) pairs in field-name order, a prefix first.
 *
 * Arguments must be valid values; depth is still checked so a cyclic input fails cleanly.
 */
export function compareValues(left: Value, right: Value): -1 | 0 | 1 {
  return compareAt(left, right, 0);
}

const KIND_RANK: Readonly<Record<ValueKind, number>> = Object.fromEntries(
  VALUE_KINDS.map((kind, rank) => [kind, rank]),
) as Record<ValueKind, number>;

/** Kind without validation: callers pass values that are already valid. */
export function kindOf(value: Value): ValueKind {
  switch (typeof value) {
    case "boolean":
    case "number":
    case "bigint":
    case "string":
      return typeof value as ValueKind;
    default:
      if (value === null) return "null";
      if (value instanceof Uint8Array) return "bytes";
      return Array.isArray(value) ? "array" : "object";
  }
}

function compareAt(left: Value, right: Value, depth: number): -1 | 0 | 1 {
  const leftKind = kindOf(left);
  const rightKind = kindOf(right);
  if (leftKind !== rightKind) return KIND_RANK[leftKind] < KIND_RANK[rightKind] ? -1 : 1;
  switch (leftKind) {
    case "null":
      return 0;
    case "boolean":
      return sign(Number(left) - Number(right));
    case "number":
      return compareNumbers(left as number, right as number);
    case "bigint":
      return left === right ? 0 : (left as bigint) < (right as bigint) ? -1 : 1;
    case "string":
      return compareStrings(left as string, right as string);
    case "bytes":
      return compareBytes(left as Uint8Array, right as Uint8Array);
    case "array":
      checkNestingDepth(depth, []);
      return compareArrays(left as Value[], right as Value[], depth);
    case "object":
      checkNestingDepth(depth, []);
      return compareObjects(left as ValueObject, right as ValueObject, depth);
  }
}

function sign(difference: number): -1 | 0 | 1 {
  return difference < 0 ? -1 : difference > 0 ? 1 : 0;
}

/** float64 total order: -Infinity < … < -0 < +0 < … < +Infinity < NaN. */
export function compareNumbers(left: number, right: number): -1 | 0 | 1 {
  if (Number.isNaN(left) || Number.isNaN(right)) return sign(Number(Number.isNaN(left)) - Number(Number.isNaN(right)));
  if (left !== right) return left < right ? -1 : 1;
  if (left !== 0) return 0;
  // Both are zeros: 1/-0 is -Infinity, 1/+0 is +Infinity.
  return sign(1 / left - 1 / right);
}

/**
 * Code point order. UTF-16 code unit order agrees with it except where one string has a
 * surrogate (U+D800–DFFF, half of a code point above U+FFFF) and the other a unit in
 * U+E000–FFFF: the surrogate's code point is larger. Strings must be well-formed.
 */
export function compareStrings(left: string, right: string): -1 | 0 | 1 {
  if (left === right) return 0;
  const length = Math.min(left.length, right.length);
  for (let index = 0; index < length; index++) {
    const leftUnit = left.charCodeAt(index);
    const rightUnit = right.charCodeAt(index);
    if (leftUnit !== rightUnit) return leftUnit >= 0xd800 && rightUnit >= 0xd800
      ? sign(surrogatesLast(leftUnit) - surrogatesLast(rightUnit))
      : leftUnit < rightUnit ? -1 : 1;
  }
  return left.length < right.length ? -1 : 1;
}

function surrogatesLast(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit + 0x2000;
}

function compareArrays(left: readonly Value[], right: readonly Value[], depth: number): -1 | 0 | 1 {
  const length = Math.min(left.length, right.length);
  for (let index = 0; index < length; index++) {
    const order = compareAt(left[index]!, right[index]!, depth + 1);
    if (order !== 0) return order;
  }
  return sign(left.length - right.length);
}

function compareObjects(left: ValueObject, right: ValueObject, depth: number): -1 | 0 | 1 {
  const leftNames = sortedFieldNames(left);
  const rightNames = sortedFieldNames(right);
  const length = Math.min(leftNames.length, rightNames.length);
  for (let index = 0; index < length; index++) {
    const leftName = leftNames[index]!;
    const rightName = rightNames[index]!;
    const order = compareStrings(leftName, rightName) || compareAt(left[leftName]!, right[rightName]!, depth + 1);
    if (order !== 0) return order;
  }
  return sign(leftNames.length - rightNames.length);
}

/** Field names in code point order: the order objects compare and index keys spell them. */
export function sortedFieldNames(object: ValueObject): string[] {
  return Object.keys(object).sort(compareStrings);
}
