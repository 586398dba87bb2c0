/**
 * Scenario: values become index keys whose byte order is the value order. For random
 * tuples, Buffer.compare of the encodings agrees with compareValues element by element;
 * decoding inverts encoding exactly; and no byte string — random, truncated or
 * corrupted — makes the decoder crash or accept something it would not produce.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { VALUE_DEPTH_MAX } from "../../src/base/limits.js";
import { SeededRandom } from "../../src/base/random.js";
import { newDocumentId } from "../../src/model/DocumentId.js";
import {
  decodeDocumentIndexKey,
  decodeIndexKey,
  documentIndexKey,
  encodeIndexKey,
  indexKeyPrefix,
  validateIndexKey,
} from "../../src/model/IndexKey.js";
import type { Value } from "../../src/model/Value.js";
import { compareStrings, compareValues } from "../../src/model/compareValues.js";
import { sameValue, tupleArbitrary, valueArbitrary } from "./valueArbitraries.js";
import { codeOf } from "../support/errorCode.js";

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}

function byteOrder(left: Uint8Array, right: Uint8Array): number {
  return Math.sign(Buffer.compare(left, right));
}

/** Tuple order with missing (undefined) first, then compareValues; a prefix first. */
function compareTuples(left: readonly (Value | undefined)[], right: readonly (Value | undefined)[]): number {
  for (let index = 0; index < Math.min(left.length, right.length); index++) {
    const [a, b] = [left[index], right[index]];
    const order =
      a === undefined || b === undefined ? Number(b === undefined) - Number(a === undefined) : compareValues(a, b);
    if (order !== 0) return order;
  }
  return Math.sign(left.length - right.length);
}

/** Decoding either refuses with INDEX_KEY_INVALID or returns a tuple that re-encodes to `bytes`. */
function expectDecodesCanonicallyOrRefuses(bytes: Uint8Array): void {
  let tuple: (Value | undefined)[];
  try {
    tuple = decodeIndexKey(bytes);
  } catch (error) {
    expect((error as { code?: string }).code).toBe("INDEX_KEY_INVALID");
    expect(codeOf(() => validateIndexKey(bytes))).toBe("INDEX_KEY_INVALID");
    return;
  }
  expect(hex(encodeIndexKey(tuple))).toBe(hex(bytes));
  validateIndexKey(bytes);
}

/** `key` with the byte at `at` (mod its length) set to `byte`, or cut short there, decodes canonically or is refused. */
function expectDamagedDecodesCanonicallyOrRefuses(key: Uint8Array, at: number, byte: number, truncate: boolean): void {
  if (key.length === 0) return;
  const position = at % key.length;
  const changed = truncate ? key.subarray(0, position) : key.slice();
  if (!truncate) changed[position] = byte;
  expectDecodesCanonicallyOrRefuses(changed);
}

describe("the order of kinds and of values within a kind", () => {
  it("sorts an ascending list of values ascending, by bytes and by compareValues", () => {
    const ascending: (Value | undefined)[] = [
      undefined,
      null,
      false,
      true,
      -Infinity,
      -Number.MAX_VALUE,
      -1,
      -Number.MIN_VALUE,
      -0,
      0,
      Number.MIN_VALUE,
      1,
      2 ** 53,
      Infinity,
      Number.NaN,
      -(2n ** 63n),
      -1n,
      0n,
      2n ** 63n - 1n,
      "",
      "\u0000",
      "a",
      "a\u0000",
      "a\u0000b",
      "a\u0001",
      "ab",
      "b",
      "\uff00",
      "\u{1f600}", // above U+FF00 by code point, though JS "<" puts it below
      new Uint8Array(0),
      Uint8Array.of(0),
      Uint8Array.of(0, 0),
      Uint8Array.of(0, 255),
      Uint8Array.of(1),
      Uint8Array.of(255),
      [],
      [null],
      [1],
      [1, 2],
      [1, "a"],
      [2],
      [[]],
      {},
      { a: null },
      { a: 1 },
      { a: 1, b: 1 },
      { a: 2 },
      { b: 0 },
    ];
    const keys = ascending.map((value) => encodeIndexKey([value]));
    for (let index = 1; index < ascending.length; index++) {
      expect(byteOrder(keys[index - 1]!, keys[index]!), `${index - 1} < ${index}`).toBe(-1);
      const [left, right] = [ascending[index - 1], ascending[index]];
      if (left !== undefined && right !== undefined) expect(compareValues(left, right)).toBe(-1);
    }
  });

  it("treats every NaN as one value, and -0 apart from +0", () => {
    const otherNaN = new Float64Array(new BigUint64Array([0xfff8_0000_0000_0001n]).buffer)[0]!;
    expect(Number.isNaN(otherNaN)).toBe(true);
    expect(hex(encodeIndexKey([otherNaN]))).toBe(hex(encodeIndexKey([Number.NaN])));
    expect(compareValues(otherNaN, Number.NaN)).toBe(0);
    expect(compareValues(-0, 0)).toBe(-1);
  });

  it("orders strings by code point, which differs from JavaScript's < for astral characters", () => {
    expect("\u{1f600}" < "\uff00").toBe(true);
    expect(compareStrings("\u{1f600}", "\uff00")).toBe(1);
    expect(compareStrings("\ud7ff", "\u{10000}")).toBe(-1);
  });

  it("orders object fields by code point regardless of insertion order", () => {
    expect(hex(encodeIndexKey([{ b: 1, a: 2 }]))).toBe(hex(encodeIndexKey([{ a: 2, b: 1 }])));
    expect(compareValues({ "\u{1f600}": 1, "\uff00": 1 }, { "\uff00": 1, "\u{1f600}": 1 })).toBe(0);
  });
});

describe("properties over random values", () => {
  it("byte order of encoded values equals compareValues", () => {
    fc.assert(
      fc.property(valueArbitrary, valueArbitrary, (left, right) => {
        const order = compareValues(left, right);
        expect(byteOrder(encodeIndexKey([left]), encodeIndexKey([right]))).toBe(order);
        expect(compareValues(right, left)).toBe(order === 0 ? 0 : -order);
      }),
      { numRuns: 5000 },
    );
  });

  it("byte order of encoded tuples equals the tuple order, missing first, prefixes first", () => {
    fc.assert(
      fc.property(tupleArbitrary, tupleArbitrary, (left, right) => {
        expect(byteOrder(encodeIndexKey(left), encodeIndexKey(right))).toBe(compareTuples(left, right));
      }),
      { numRuns: 3000 },
    );
  });

  it("a shared tuple prefix is a byte prefix, and tuples sharing a first element order by the rest", () => {
    fc.assert(
      fc.property(tupleArbitrary, tupleArbitrary, tupleArbitrary, (prefix, left, right) => {
        const prefixKey = hex(indexKeyPrefix(prefix));
        expect(hex(encodeIndexKey([...prefix, ...left])).startsWith(prefixKey)).toBe(true);
        const order = byteOrder(encodeIndexKey([...prefix, ...left]), encodeIndexKey([...prefix, ...right]));
        expect(order).toBe(compareTuples(left, right));
      }),
      { numRuns: 1000 },
    );
  });

  it("compareValues is a total order: transitive on random triples", () => {
    fc.assert(
      fc.property(valueArbitrary, valueArbitrary, valueArbitrary, (a, b, c) => {
        const sorted = [a, b, c].sort(compareValues);
        expect(compareValues(sorted[0]!, sorted[1]!)).toBeLessThanOrEqual(0);
        expect(compareValues(sorted[1]!, sorted[2]!)).toBeLessThanOrEqual(0);
        expect(compareValues(sorted[0]!, sorted[2]!)).toBeLessThanOrEqual(0);
      }),
      { numRuns: 2000 },
    );
  });

  it("decoding inverts encoding exactly (up to field order, which keys sort)", () => {
    fc.assert(
      fc.property(tupleArbitrary, (tuple) => {
        const key = encodeIndexKey(tuple);
        const decoded = decodeIndexKey(key);
        expect(decoded.length).toBe(tuple.length);
        decoded.forEach((value, index) => {
          const original = tuple[index];
          if (original === undefined) expect(value).toBeUndefined();
          else expect(compareValues(value!, original)).toBe(0);
        });
        expect(hex(encodeIndexKey(decoded))).toBe(hex(key));
        validateIndexKey(key);
      }),
      { numRuns: 3000 },
    );
  });

  it("random bytes never crash the decoder", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => expectDecodesCanonicallyOrRefuses(bytes)),
      { numRuns: 20_000 },
    );
  });

  it("random bytes over the key alphabet (tags, 0x00, 0xFF) never crash the decoder", () => {
    const keyByte = fc.constantFrom(0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x61, 0xff, 0x80);
    const keyBytes = fc.array(keyByte, { maxLength: 40 }).map((bytes) => Uint8Array.from(bytes));
    fc.assert(
      fc.property(keyBytes, (bytes) => expectDecodesCanonicallyOrRefuses(bytes)),
      { numRuns: 20_000 },
    );
  });

  it("corrupted and truncated valid keys never crash the decoder", () => {
    fc.assert(
      fc.property(tupleArbitrary, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.boolean(), (tuple, at, byte, truncate) =>
        expectDamagedDecodesCanonicallyOrRefuses(encodeIndexKey(tuple), at, byte, truncate),
      ),
      { numRuns: 10_000 },
    );
  });
});

describe("the fast check of scalar keys agrees with the decoder", () => {
  const scalar = fc.oneof(
    fc.constantFrom<Value | undefined>(undefined, null, true, false, Number.NaN, Infinity, -Infinity, 0, -0, ""),
    fc.double(),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    fc.string({ maxLength: 6 }),
    fc.uint8Array({ maxLength: 6 }),
  );
  it("on scalar tuples with one byte set to an edge value or cut short", () => {
    const edgeByte = fc.constantFrom(0x00, 0x01, 0x7f, 0x80, 0xf0, 0xf8, 0xff, 0x0f, 0x07);
    fc.assert(
      fc.property(fc.array(scalar, { maxLength: 4 }), fc.nat(), edgeByte, fc.boolean(), (tuple, at, byte, truncate) => {
        const key = encodeIndexKey(tuple);
        expectDecodesCanonicallyOrRefuses(key);
        expectDamagedDecodesCanonicallyOrRefuses(key, at, byte, truncate);
      }),
      { numRuns: 20_000 },
    );
  });

  it("refuses every NaN but the canonical one, in either sign form", () => {
    for (const bytes of [
      [0x05, 0xff, 0xf8, 0, 0, 0, 0, 0, 1],
      [0x05, 0x00, 0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
      [0x05, 0xff, 0xf0, 0, 0, 0, 0, 0, 1],
    ]) {
      expect(codeOf(() => validateIndexKey(Uint8Array.from(bytes)))).toBe("INDEX_KEY_INVALID");
    }
    validateIndexKey(encodeIndexKey([Number.NaN, Infinity, -Infinity]));
  });
});

describe("non-canonical and invalid encodings", () => {
  const invalid: [string, number[]][] = [
    ["an unknown tag", [0x0b]],
    ["tag 0x00 at the top", [0x00]],
    ["a truncated number", [0x05, 0x80, 0, 0]],
    ["a truncated bigint", [0x06, 0x80]],
    ["a non-canonical NaN", [0x05, 0xff, 0xf8, 0, 0, 0, 0, 0, 1]],
    ["a negative NaN", [0x05, 0x00, 0x07, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]],
    ["an unterminated string", [0x07, 0x61]],
    ["a string ending in a lone 0x00", [0x07, 0x61, 0x00]],
    ["a bad escape", [0x07, 0x00, 0x02]],
    ["invalid UTF-8", [0x07, 0xc3, 0x28, 0x00, 0x01]],
    ["an encoded surrogate", [0x07, 0xed, 0xa0, 0x80, 0x00, 0x01]],
    ["an overlong UTF-8 sequence", [0x07, 0xc0, 0x80, 0x00, 0x01]],
    ["an unterminated array", [0x09, 0x02]],
    ["missing inside an array", [0x09, 0x01, 0x00]],
    ["an unterminated object", [0x0a, 0x07, 0x61, 0x00, 0x01, 0x02]],
    ["an object field without a name tag", [0x0a, 0x02, 0x02, 0x00]],
    ["an object name without a value", [0x0a, 0x07, 0x61, 0x00, 0x01, 0x00]],
    ["object fields out of order", [0x0a, 0x07, 0x62, 0x00, 0x01, 0x02, 0x07, 0x61, 0x00, 0x01, 0x02, 0x00]],
    ["a duplicate field", [0x0a, 0x07, 0x61, 0x00, 0x01, 0x02, 0x07, 0x61, 0x00, 0x01, 0x02, 0x00]],
    ["an empty field name", [0x0a, 0x07, 0x00, 0x01, 0x02, 0x00]],
    ["a $ field name", [0x0a, 0x07, 0x24, 0x00, 0x01, 0x02, 0x00]],
  ];
  for (const [name, bytes] of invalid) {
    it(`refuses ${name}`, () => {
      expect(codeOf(() => validateIndexKey(Uint8Array.from(bytes)))).toBe("INDEX_KEY_INVALID");
    });
  }

  it(`refuses nesting deeper than ${VALUE_DEPTH_MAX} and accepts exactly ${VALUE_DEPTH_MAX}`, () => {
    const key = (depth: number) => Uint8Array.from([...Array<number>(depth).fill(0x09), ...Array<number>(depth).fill(0x00)]);
    expect(decodeIndexKey(key(VALUE_DEPTH_MAX))).toHaveLength(1);
    expect(codeOf(() => validateIndexKey(key(VALUE_DEPTH_MAX + 1)))).toBe("INDEX_KEY_INVALID");
    expect(codeOf(() => validateIndexKey(key(100_000)))).toBe("INDEX_KEY_INVALID");
  });

  it("refuses what is not a Uint8Array", () => {
    expect(codeOf(() => validateIndexKey("0102" as unknown as Uint8Array))).toBe("INDEX_KEY_INVALID");
  });

  it("accepts the empty tuple, a leading byte-order mark, and a __proto__ field", () => {
    expect(decodeIndexKey(new Uint8Array(0))).toEqual([]);
    expect(decodeIndexKey(encodeIndexKey(["\ufeffx"]))).toEqual(["\ufeffx"]);
    const object = JSON.parse('{"__proto__": 1}') as Value;
    const [decoded] = decodeIndexKey(encodeIndexKey([object]));
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(sameValue(decoded, object)).toBe(true);
  });

  it("refuses values that are not values, with the value error", () => {
    expect(codeOf(() => encodeIndexKey([1, { a: [undefined as unknown as Value] }]))).toBe("VALUE_INVALID");
    expect(codeOf(() => encodeIndexKey([{ $a: 1 }]))).toBe("VALUE_INVALID");
    expect(codeOf(() => encodeIndexKey([2n ** 64n]))).toBe("VALUE_INVALID");
  });
});

describe("document index keys", () => {
  const random = new SeededRandom(7);

  it("end in creation time and id, decode back, and order ties by creation time then id", () => {
    const first = newDocumentId(3, random);
    const second = newDocumentId(3, random);
    const key = documentIndexKey(["x", undefined], 1_700_000_000_000.5, first);
    expect(decodeDocumentIndexKey(key)).toEqual({
      fieldValues: ["x", undefined],
      creationTime: 1_700_000_000_000.5,
      id: first,
    });
    const older = documentIndexKey(["x", undefined], 1, second);
    expect(byteOrder(older, key)).toBe(-1);
    const [low, high] = [first, second].sort();
    expect(byteOrder(documentIndexKey([1], 5, low!), documentIndexKey([1], 5, high!))).toBe(-1);
    expect(hex(key).startsWith(hex(indexKeyPrefix(["x", undefined])))).toBe(true);
  });

  it("store the canonical id even when given another spelling", () => {
    const id = newDocumentId(9, random);
    const upper = id.toUpperCase() as typeof id;
    expect(decodeDocumentIndexKey(documentIndexKey([], 1, upper)).id).toBe(id);
  });

  it("refuse a bad creation time or id, and keys that do not end in (time, id)", () => {
    const id = newDocumentId(1, random);
    expect(codeOf(() => documentIndexKey([], Number.NaN, id))).toBe("INVALID_ARGUMENT");
    expect(codeOf(() => documentIndexKey([], 1, "nope" as typeof id))).toBe("DOCUMENT_ID_INVALID");
    expect(codeOf(() => decodeDocumentIndexKey(encodeIndexKey([1])))).toBe("INDEX_KEY_INVALID");
    expect(codeOf(() => decodeDocumentIndexKey(encodeIndexKey([1, "x"])))).toBe("INDEX_KEY_INVALID");
    expect(codeOf(() => decodeDocumentIndexKey(encodeIndexKey([1, id.toUpperCase()])))).toBe("INDEX_KEY_INVALID");
    expect(codeOf(() => decodeDocumentIndexKey(encodeIndexKey(["t", id])))).toBe("INDEX_KEY_INVALID");
  });
});

describe("keys held in Buffers (as SQLite returns them)", () => {
  it("validating and decoding never write into the caller's bytes or alias them", () => {
    fc.assert(
      fc.property(tupleArbitrary, (tuple) => {
        const encoded = encodeIndexKey(tuple);
        const pooled = Buffer.alloc(encoded.length + 16);
        const view = pooled.subarray(8, 8 + encoded.length);
        view.set(encoded);
        const before = Buffer.from(pooled);
        validateIndexKey(view);
        const decoded = decodeIndexKey(view);
        expect(pooled.equals(before)).toBe(true);
        for (const value of decoded) {
          if (value instanceof Uint8Array) expect(value.buffer).not.toBe(pooled.buffer);
        }
        expect(encodeIndexKey(decoded)).toEqual(encoded);
      }),
    );
  });
});
