/**
 * Scenario: reads are recorded as key ranges and writes as keys. Ranges are built from
 * points, prefixes and index queries (`eq("a", 1).gt("b", 2)`, …); containment and
 * overlap must agree with a brute-force reading of the half-open definition, and an index
 * query's range must contain exactly the stored keys of the documents the query matches.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { newDocumentId } from "../../src/model/DocumentId.js";
import { documentIndexKey } from "../../src/model/IndexKey.js";
import type { IndexBound } from "../../src/model/IndexRange.js";
import { indexRange } from "../../src/model/IndexRange.js";
import type { KeyRange } from "../../src/model/KeyRange.js";
import {
  documentKey,
  fullRange,
  indexKeyspace,
  isEmptyRange,
  keyRange,
  pointRange,
  prefixEnd,
  prefixRange,
  rangeContains,
  rangesOverlap,
  successorKey,
  tableKeyspace,
  validateKeyRange,
} from "../../src/model/KeyRange.js";
import type { Value } from "../../src/model/Value.js";
import { compareValues } from "../../src/model/compareValues.js";
import { valueArbitrary } from "./valueArbitraries.js";
import { codeOf } from "../support/errorCode.js";

const bytes = (...values: number[]) => Uint8Array.from(values);

/** Short keys over a tiny alphabet, so prefixes and 0x00/0xFF edges are common. */
const keyArbitrary = fc
  .array(fc.constantFrom(0x00, 0x01, 0x7f, 0xfe, 0xff), { maxLength: 4 })
  .map((values) => Uint8Array.from(values));
const rangeArbitrary = fc
  .tuple(keyArbitrary, fc.option(keyArbitrary, { nil: null }), fc.constantFrom("index:1", "index:2"))
  .map(([a, b, keyspace]): KeyRange => {
    if (b === null) return keyRange(keyspace, a, null);
    return Buffer.compare(a, b) <= 0 ? keyRange(keyspace, a, b) : keyRange(keyspace, b, a);
  });

function bruteContains(range: KeyRange, key: Uint8Array): boolean {
  return Buffer.compare(range.start, key) <= 0 && (range.end === null || Buffer.compare(key, range.end) < 0);
}

/** Every key up to 5 bytes over the tiny alphabet: enough to witness any overlap of the ranges above. */
const ALL_KEYS: Uint8Array[] = (() => {
  const alphabet = [0x00, 0x01, 0x7f, 0xfe, 0xff];
  let level: number[][] = [[]];
  const all: number[][] = [[]];
  for (let length = 1; length <= 5; length++) {
    level = level.flatMap((key) => alphabet.map((byte) => [...key, byte]));
    all.push(...level);
  }
  return all.map((key) => Uint8Array.from(key));
})();

describe("key ranges", () => {
  it("name keyspaces and document keys", () => {
    expect(indexKeyspace(12)).toBe("index:12");
    expect(tableKeyspace(3)).toBe("table:3");
    const id = newDocumentId(3, new SeededRandom(1));
    expect(Buffer.from(documentKey(id)).toString()).toBe(id);
    expect(Buffer.from(documentKey(id.toUpperCase() as typeof id)).toString()).toBe(id);
    expect(codeOf(() => indexKeyspace(-1))).toBe("KEY_RANGE_INVALID");
    expect(codeOf(() => tableKeyspace(1.5))).toBe("KEY_RANGE_INVALID");
    expect(codeOf(() => documentKey("x" as typeof id))).toBe("DOCUMENT_ID_INVALID");
  });

  it("compute successors and prefix ends", () => {
    expect(successorKey(bytes(1, 2))).toEqual(bytes(1, 2, 0));
    expect(successorKey(bytes())).toEqual(bytes(0));
    expect(prefixEnd(bytes(1, 2))).toEqual(bytes(1, 3));
    expect(prefixEnd(bytes(1, 0xff, 0xff))).toEqual(bytes(2));
    expect(prefixEnd(bytes(0xff, 0xff))).toBeNull();
    expect(prefixEnd(bytes())).toBeNull();
  });

  it("refuse start after end and malformed parts with KEY_RANGE_INVALID", () => {
    expect(codeOf(() => keyRange("index:1", bytes(2), bytes(1)))).toBe("KEY_RANGE_INVALID");
    expect(codeOf(() => keyRange("index:1", bytes(1, 0), bytes(1)))).toBe("KEY_RANGE_INVALID");
    expect(codeOf(() => keyRange("", bytes(), null))).toBe("KEY_RANGE_INVALID");
    const notBytes = "z" as unknown as Uint8Array;
    expect(codeOf(() => validateKeyRange({ keyspace: "k", start: notBytes, end: null }))).toBe("KEY_RANGE_INVALID");
    expect(codeOf(() => validateKeyRange({ keyspace: "k", start: bytes(), end: notBytes }))).toBe("KEY_RANGE_INVALID");
    expect(codeOf(() => validateKeyRange(null as unknown as KeyRange))).toBe("KEY_RANGE_INVALID");
    expect(isEmptyRange(keyRange("index:1", bytes(1), bytes(1)))).toBe(true);
    expect(isEmptyRange(fullRange("index:1"))).toBe(false);
  });

  it("points and prefixes contain exactly their keys", () => {
    for (const key of ALL_KEYS) {
      const point = pointRange("index:1", bytes(0x01, 0xff));
      expect(rangeContains(point, "index:1", key)).toBe(Buffer.compare(key, bytes(0x01, 0xff)) === 0);
      const prefix = prefixRange("index:1", bytes(0x01, 0xff));
      expect(rangeContains(prefix, "index:1", key)).toBe(Buffer.from(key).subarray(0, 2).equals(bytes(0x01, 0xff)));
      const allFf = prefixRange("index:1", bytes(0xff));
      expect(rangeContains(allFf, "index:1", key)).toBe(key[0] === 0xff);
      expect(rangeContains(allFf, "index:2", key)).toBe(false);
    }
  });

  it("containment and overlap agree with brute force, including empty and unbounded ranges", () => {
    fc.assert(
      fc.property(rangeArbitrary, rangeArbitrary, keyArbitrary, (left, right, key) => {
        expect(rangeContains(left, left.keyspace, key)).toBe(bruteContains(left, key));
        const sameKeyspace = left.keyspace === right.keyspace;
        const witnessed = sameKeyspace && ALL_KEYS.some((k) => bruteContains(left, k) && bruteContains(right, k));
        expect(rangesOverlap(left, right)).toBe(witnessed);
        expect(rangesOverlap(right, left)).toBe(witnessed);
        expect(rangesOverlap(left, pointRange(left.keyspace, key))).toBe(bruteContains(left, key));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("index ranges from queries", () => {
  const random = new SeededRandom(99);
  const small = fc.oneof(
    fc.constantFrom<Value | undefined>(undefined, null, 0, -0, 1, 2, Number.NaN, "", "a", "ab", 1n, [], [1], {}),
    valueArbitrary,
  );

  /** What the query means, applied to field values directly. */
  function matches(
    fields: readonly (Value | undefined)[],
    equal: readonly (Value | undefined)[],
    lower?: IndexBound,
    upper?: IndexBound,
  ): boolean {
    const order = (a: Value | undefined, b: Value | undefined) =>
      a === undefined || b === undefined ? Number(b === undefined) - Number(a === undefined) : compareValues(a, b);
    if (!equal.every((value, index) => order(fields[index], value) === 0)) return false;
    const next = fields[equal.length];
    if (lower && !(lower.inclusive ? order(next, lower.value) >= 0 : order(next, lower.value) > 0)) return false;
    if (upper && !(upper.inclusive ? order(next, upper.value) <= 0 : order(next, upper.value) < 0)) return false;
    return true;
  }

  it("select exactly the keys of matching documents", () => {
    const bound = fc.option(fc.record({ value: small, inclusive: fc.boolean() }), { nil: undefined });
    fc.assert(
      fc.property(
        fc.array(fc.tuple(small, small, small), { minLength: 1, maxLength: 12 }),
        fc.nat({ max: 2 }),
        bound,
        bound,
        fc.integer({ min: 0, max: 11 }),
        (documents, equalCount, lower, upper, template) => {
          const chosen = documents[template % documents.length]!;
          const equal = chosen.slice(0, equalCount);
          const range = indexRange(4, { equal, lower, upper });
          expect(range.keyspace).toBe("index:4");
          for (const [index, fields] of documents.entries()) {
            const key = documentIndexKey(fields, index, newDocumentId(1, random));
            expect(rangeContains(range, "index:4", key)).toBe(matches(fields, equal, lower, upper));
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("cover the whole index without bounds, and give an empty range for crossed bounds", () => {
    expect(indexRange(1, { equal: [] })).toEqual(fullRange("index:1"));
    const crossed = indexRange(1, {
      equal: [1],
      lower: { value: 5, inclusive: true },
      upper: { value: 3, inclusive: true },
    });
    expect(isEmptyRange(crossed)).toBe(true);
    const equalBounds = indexRange(1, {
      equal: [],
      lower: { value: 5, inclusive: false },
      upper: { value: 5, inclusive: false },
    });
    expect(isEmptyRange(equalBounds)).toBe(true);
  });
});
