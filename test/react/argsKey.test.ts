/**
 * Scenario: the key a hook re-subscribes by. Equal arguments built anew give the same
 * key; arguments that differ in any value (kind, sign of zero, a nested field) give
 * different ones; an `undefined` field is a missing one; non-values share one key.
 */
import { describe, expect, it } from "vitest";
import { argsKey } from "../../src/react/argsKey.js";

describe("argsKey", () => {
  it("is equal for equal content and different for different values", () => {
    expect(argsKey({ a: [1, { b: "x" }], n: NaN })).toBe(argsKey({ a: [1, { b: "x" }], n: NaN }));
    expect(argsKey({ a: 1, b: undefined })).toBe(argsKey({ a: 1 }));
    expect(argsKey(undefined)).toBe(argsKey({}));
    const distinct = [
      { v: 1 },
      { v: 1n },
      { v: "1" },
      { v: [1] },
      { v: { x: 1 } },
      { v: 0 },
      { v: -0 },
      { v: new Uint8Array([1]) },
      { v: [1, 2] },
      { v: [[1, 2]] },
      { v: null },
      { v: true },
      { v: "true" },
      { v: Infinity },
      { v: "Infinity" },
      { w: 1 },
      { v: 1, w: 1 },
    ];
    expect(new Set(distinct.map(argsKey)).size).toBe(distinct.length);
  });

  it("gives every non-value one key, so a bad argument does not re-subscribe on every render", () => {
    expect(argsKey({ at: new Date(1) })).toBe(argsKey({ at: new Date(2) }));
    expect(argsKey({ f: () => 1 })).toBe(argsKey({ f: () => 2 }));
  });
});
