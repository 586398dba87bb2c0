/**
 * Scenario: values travel through Cairn's lossless JSON encoding (wire and segments).
 * Every valid value — including -0, NaN, ±Infinity, int64 bigints, bytes and a
 * "__proto__" field — comes back exactly; everything that is not a value or not a
 * canonical encoding is refused with a typed error naming the bad part; size and depth
 * limits hold, also against hostile inputs (cycles, shared subtrees, 100k-deep JSON).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DOCUMENT_BYTES_MAX, VALUE_DEPTH_MAX } from "../../src/base/limits.js";
import type { Value } from "../../src/model/Value.js";
import { isValue, validateValue } from "../../src/model/Value.js";
import {
  decodeValue,
  decodeValueText,
  encodeValue,
  encodeValueText,
  utf8ByteLength,
} from "../../src/model/ValueJson.js";
import { sameValue, valueArbitrary } from "./valueArbitraries.js";

function errorOf(action: () => unknown): { code?: string; message?: string } {
  try {
    action();
  } catch (error) {
    return error as { code?: string; message?: string };
  }
  throw new Error("expected an error");
}

function nested(depth: number, leaf: Value = 1): Value {
  let value: Value = leaf;
  for (let level = 0; level < depth; level++) value = level % 2 === 0 ? [value] : { a: value };
  return value;
}

describe("encodeValue / decodeValue", () => {
  it("spells each kind of value as documented", () => {
    const cases: [Value, string][] = [
      [null, "null"],
      [true, "true"],
      [1.5, "1.5"],
      [-0, '{"$float":"-0"}'],
      [0, "0"],
      [Number.NaN, '{"$float":"NaN"}'],
      [Infinity, '{"$float":"Infinity"}'],
      [-Infinity, '{"$float":"-Infinity"}'],
      [-(2n ** 63n), '{"$integer":"-9223372036854775808"}'],
      [0n, '{"$integer":"0"}'],
      ["héllo", '"héllo"'],
      [Uint8Array.of(0, 255, 16), '{"$bytes":"AP8Q"}'],
      [new Uint8Array(0), '{"$bytes":""}'],
      [[1, [2n]], '[1,[{"$integer":"2"}]]'],
      [{ b: 1, a: { c: -0 } }, '{"b":1,"a":{"c":{"$float":"-0"}}}'],
    ];
    for (const [value, text] of cases) {
      expect(encodeValueText(value)).toBe(text);
      expect(sameValue(decodeValueText(text), value)).toBe(true);
    }
  });

  it("round-trips every generated value exactly, through JSON values and through text", () => {
    fc.assert(
      fc.property(valueArbitrary, (value) => {
        const json = encodeValue(value);
        expect(sameValue(decodeValue(json), value)).toBe(true);
        expect(sameValue(decodeValueText(encodeValueText(value)), value)).toBe(true);
        // The encoding is plain JSON: stringify and parse change nothing.
        expect(JSON.parse(JSON.stringify(json))).toEqual(json);
      }),
      { numRuns: 2000 },
    );
  });

  it("keeps a __proto__ field as data and never touches the prototype", () => {
    const value = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}') as Value;
    const decoded = decodeValueText(encodeValueText(value)) as Record<string, unknown>;
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(decoded, "__proto__")?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(sameValue(decoded as Value, value)).toBe(true);
  });

  it("accepts a Buffer as bytes and decodes it as a plain Uint8Array", () => {
    const decoded = decodeValue(encodeValue(Buffer.from([1, 2, 3])));
    expect(Object.getPrototypeOf(decoded)).toBe(Uint8Array.prototype);
    expect(Array.from(decoded as Uint8Array)).toEqual([1, 2, 3]);
  });

  it("accepts null-prototype objects", () => {
    const value = Object.assign(Object.create(null) as Record<string, Value>, { a: 1 });
    expect(encodeValueText(value)).toBe('{"a":1}');
  });
});

describe("invalid values", () => {
  class Price {
    amount = 1;
  }
  const sparse: Value[] = [1];
  sparse[2] = 3;
  const cases: [string, unknown, string][] = [
    ["undefined inside", { items: [1, 2, 3, { price: undefined }] }, ".items[3].price"],
    ["a function", { f: () => 1 }, ".f"],
    ["a symbol", [Symbol("s")], "[0]"],
    ["a Date", { when: new Date(0) }, ".when"],
    ["a Map", new Map(), "(root)"],
    ["a class instance", { price: new Price() }, ".price"],
    ["a sparse array", { list: sparse }, ".list[1]"],
    ["an Int8Array", Int8Array.of(1), "(root)"],
    ["a bigint above int64", { n: 2n ** 63n }, ".n"],
    ["a bigint below int64", -(2n ** 63n) - 1n, "(root)"],
    ["a lone surrogate", { s: "a\ud800" }, ".s"],
    ["an empty field name", { "": 1 }, "(root)"],
    ["a $ field name", { a: { $bytes: "AA==" } }, ".a"],
    ["a too long field name", { ["x".repeat(1025)]: 1 }, "(root)"],
    ["a symbol key", { [Symbol("k")]: 1 }, "(root)"],
    ["a field name with a lone surrogate", { "\udc00": 1 }, "(root)"],
    ["undefined at the top", undefined, "(root)"],
    ["a quoted path", { "a b": [undefined] }, '["a b"][0]'],
  ];
  for (const [name, value, path] of cases) {
    it(`refuses ${name} with VALUE_INVALID at ${path}`, () => {
      const error = errorOf(() => encodeValue(value as Value));
      expect(error.code).toBe("VALUE_INVALID");
      expect(error.message).toContain(`at ${path}:`);
      expect(isValue(value)).toBe(false);
      expect(errorOf(() => validateValue(value)).code).toBe("VALUE_INVALID");
    });
  }

  it("refuses an Array subclass", () => {
    class List extends Array<number> {}
    expect(errorOf(() => encodeValue(List.from([1]) as unknown as Value)).code).toBe("VALUE_INVALID");
  });

  it("accepts a field name of exactly 1024 characters", () => {
    expect(isValue({ ["x".repeat(1024)]: 1 })).toBe(true);
  });
});

describe("decoding refuses what encoding never produces", () => {
  const texts = [
    "-0",
    "-0.0",
    '{"$float":"nan"}',
    '{"$float":"1"}',
    '{"$float":0}',
    '{"$integer":"01"}',
    '{"$integer":"-0"}',
    '{"$integer":"+1"}',
    '{"$integer":"1e3"}',
    '{"$integer":" 1"}',
    '{"$integer":"9223372036854775808"}',
    '{"$integer":"-9223372036854775809"}',
    '{"$integer":"123456789012345678901234567890"}',
    '{"$bytes":"AB=="}',
    '{"$bytes":"AAA"}',
    '{"$bytes":"A==="}',
    '{"$bytes":"AA=A"}',
    '{"$bytes":"AA AA=="}',
    '{"$bytes":"AA-_"}',
    '{"$bytes":5}',
    '{"$unknown":"1"}',
    '{"$float":"-0","a":1}',
    '{"a":{"$bytes":"AA=="},"$b":1}',
    '{"":1}',
    '"\\ud800"',
    '{"\\udfff":1}',
    "[1,]",
    "",
  ];
  for (const text of texts) {
    it(`refuses ${JSON.stringify(text)} with VALUE_INVALID`, () => {
      expect(errorOf(() => decodeValueText(text)).code).toBe("VALUE_INVALID");
    });
  }

  it("refuses in-memory inputs that are not JSON", () => {
    for (const json of [undefined, 1n, Number.NaN, Infinity, Uint8Array.of(1), new Date(0), [undefined], () => 1]) {
      expect(errorOf(() => decodeValue(json)).code).toBe("VALUE_INVALID");
    }
  });

  it("accepts canonical bytes of every length modulo 3", () => {
    for (const text of ['{"$bytes":"AA=="}', '{"$bytes":"AAA="}', '{"$bytes":"AAAA"}', '{"$bytes":"/+8="}']) {
      expect(encodeValueText(decodeValueText(text))).toBe(text);
    }
  });
});

describe("limits", () => {
  it(`allows ${VALUE_DEPTH_MAX} nested containers and refuses one more, encoding and decoding`, () => {
    const deepest = nested(VALUE_DEPTH_MAX);
    const text = encodeValueText(deepest);
    expect(sameValue(decodeValueText(text), deepest)).toBe(true);
    expect(errorOf(() => encodeValue(nested(VALUE_DEPTH_MAX + 1))).code).toBe("VALUE_TOO_DEEP");
    expect(errorOf(() => decodeValueText(`[${text}]`)).code).toBe("VALUE_TOO_DEEP");
  });

  it("refuses a cyclic value with VALUE_TOO_DEEP instead of overflowing the stack", () => {
    const cyclic: { self?: unknown } = {};
    cyclic.self = cyclic;
    expect(errorOf(() => encodeValue(cyclic as Value)).code).toBe("VALUE_TOO_DEEP");
    expect(errorOf(() => validateValue(cyclic)).code).toBe("VALUE_TOO_DEEP");
  });

  it("refuses 100k-deep JSON text with VALUE_TOO_DEEP", () => {
    const depth = 100_000;
    expect(errorOf(() => decodeValueText("[".repeat(depth) + "]".repeat(depth))).code).toBe("VALUE_TOO_DEEP");
  });

  it(`allows a text of exactly ${DOCUMENT_BYTES_MAX} UTF-8 bytes and refuses one byte more`, () => {
    const fits = "x".repeat(DOCUMENT_BYTES_MAX - 2);
    expect(utf8ByteLength(encodeValueText(fits))).toBe(DOCUMENT_BYTES_MAX);
    expect(decodeValueText(encodeValueText(fits))).toBe(fits);
    expect(errorOf(() => encodeValueText(fits + "x")).code).toBe("VALUE_TOO_LARGE");
    expect(errorOf(() => decodeValueText(JSON.stringify(fits + "x"))).code).toBe("VALUE_TOO_LARGE");
  });

  it("counts UTF-8 bytes, not characters", () => {
    // "é" is 2 bytes and "😀" 4: the text has far fewer characters than bytes.
    const text = JSON.stringify("é".repeat(DOCUMENT_BYTES_MAX / 4) + "😀".repeat(DOCUMENT_BYTES_MAX / 8));
    expect(text.length).toBeLessThan(DOCUMENT_BYTES_MAX);
    expect(errorOf(() => decodeValueText(text)).code).toBe("VALUE_TOO_LARGE");
    expect(utf8ByteLength("é😀a")).toBe(7);
  });

  it("refuses a value whose shared subtrees would expand beyond the limit, without expanding them", () => {
    let shared: Value = "x".repeat(100);
    for (let level = 0; level < 60; level++) shared = [shared, shared];
    // 2^60 copies: only the early size estimate lets this finish.
    expect(errorOf(() => encodeValueText(shared)).code).toBe("VALUE_TOO_LARGE");
  });

  it("does not limit encodeValue (query results may exceed one document)", () => {
    const big = ["x".repeat(DOCUMENT_BYTES_MAX), "y"];
    expect(sameValue(decodeValue(encodeValue(big)), big)).toBe(true);
  });
});
