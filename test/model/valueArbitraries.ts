/**
 * fast-check generators for Cairn values, shared by the model's property tests.
 *
 * Leaves mix edge cases on purpose (-0, NaN, ±Infinity, int64 bounds, strings that are
 * prefixes of one another, "\0", surrogate-pair characters next to U+E000–FFFF, bytes
 * 0x00/0xFF) with fully random ones, so that generated pairs often tie or differ only
 * deep inside, where order bugs hide.
 */
import fc from "fast-check";
import type { Value } from "../../src/model/Value.js";
import { INT64_MAX, INT64_MIN } from "../../src/model/Value.js";

const EDGE_NUMBERS = [
  0, -0, Number.NaN, Infinity, -Infinity, 1, -1, 0.5, 2 ** 53, Number.MIN_VALUE, -Number.MIN_VALUE, Number.MAX_VALUE,
];
const EDGE_BIGINTS = [0n, 1n, -1n, INT64_MIN, INT64_MAX, 2n ** 53n, -(2n ** 32n)];
const EDGE_STRINGS = [
  "", "a", "ab", "abc", "b", "\u0000", "a\u0000", "a\u0000b",
  "\u00ff", "\uffff", "\ue000", "\u{10000}", "\u{1f600}", "\ufeff",
];
const EDGE_FIELD_NAMES = ["a", "b", "ab", "_id", "x\u0000", "\u{1f600}", "\uff00", "__proto__", "constructor", "a b"];

export const numberArbitrary: fc.Arbitrary<number> = fc.oneof(fc.constantFrom(...EDGE_NUMBERS), fc.double());
export const bigintArbitrary: fc.Arbitrary<bigint> = fc.oneof(
  fc.constantFrom(...EDGE_BIGINTS),
  fc.bigInt(INT64_MIN, INT64_MAX),
);
export const stringArbitrary: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...EDGE_STRINGS),
  fc.string({ unit: "binary", maxLength: 6 }),
  fc.string({ unit: fc.constantFrom("a", "b", "\u0000", "\uffff", "\u{10000}"), maxLength: 4 }),
);
export const bytesArbitrary: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ maxLength: 8 }),
  fc.array(fc.constantFrom(0x00, 0x01, 0xff), { maxLength: 4 }).map((bytes) => Uint8Array.from(bytes)),
);
export const fieldNameArbitrary: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...EDGE_FIELD_NAMES),
  fc.string({ unit: "binary", minLength: 1, maxLength: 5 }).filter((name) => !name.startsWith("$")),
);

export const leafArbitrary: fc.Arbitrary<Value> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  numberArbitrary,
  bigintArbitrary,
  stringArbitrary,
  bytesArbitrary,
);

export const valueArbitrary: fc.Arbitrary<Value> = fc.letrec<{ value: Value }>((tie) => ({
  value: fc.oneof(
    { maxDepth: 4, depthSize: "small" },
    leafArbitrary,
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(fieldNameArbitrary, tie("value"), { maxKeys: 4 }),
  ),
})).value;

/** A tuple element: a value or a missing field. */
export const tupleArbitrary: fc.Arbitrary<(Value | undefined)[]> = fc.array(
  fc.oneof({ weight: 1, arbitrary: fc.constant(undefined) }, { weight: 6, arbitrary: valueArbitrary }),
  { maxLength: 4 },
);

/** Exact equality: -0 is not 0, NaN is NaN, field order matters, bytes by content. */
export function sameValue(left: Value | undefined, right: Value | undefined): boolean {
  if (typeof left === "number" || typeof right === "number") return Object.is(left, right);
  if (left instanceof Uint8Array || right instanceof Uint8Array) {
    return left instanceof Uint8Array && right instanceof Uint8Array && Buffer.from(left).equals(right);
  }
  if (Array.isArray(left) || Array.isArray(right)) {
    return (
      Array.isArray(left) &&
      Array.isArray(right) &&
      left.length === right.length &&
      left.every((element, index) => sameValue(element, right[index]))
    );
  }
  if (typeof left === "object" && left !== null && typeof right === "object" && right !== null) {
    // Object.entries, not left[name]: an own "__proto__" field must not read the prototype.
    const leftFields = Object.entries(left);
    const rightFields = Object.entries(right);
    return (
      leftFields.length === rightFields.length &&
      leftFields.every(([name, value], index) => name === rightFields[index]![0] && sameValue(value, rightFields[index]![1]))
    );
  }
  return left === right;
}
