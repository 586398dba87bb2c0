/**
 * Scenario: each validator of the `v` vocabulary accepts exactly its kind of Cairn value,
 * and reports the path of the first bad field through the runtime's validation (the
 * error every argument, document and return value gets).
 */
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { validateWith } from "../../src/functions/validate.js";
import { v } from "../../src/functions/values.js";
import { newDocumentId } from "../../src/model/DocumentId.js";

const tables = (name: string) => ({ users: 3, posts: 4 })[name as "users" | "posts"];
const accepts = (validator: Parameters<typeof validateWith>[0], input: unknown) =>
  validateWith(validator, input, { noun: "argument", root: "args" }, tables);
const refusal = (validator: Parameters<typeof validateWith>[0], input: unknown) => {
  try {
    accepts(validator, input);
  } catch (error) {
    return error as { code: string; details: { path: string } };
  }
  throw new Error("expected a refusal");
};

describe("the v vocabulary", () => {
  it("accepts exactly its kind of value", () => {
    const user = newDocumentId(3, new SeededRandom(1));
    const post = newDocumentId(4, new SeededRandom(2));
    const cases: [Parameters<typeof validateWith>[0], unknown[], unknown[]][] = [
      [v.string(), ["", "text ✓"], [1, null, undefined]],
      [v.number(), [0, -0, Number.NaN, Number.POSITIVE_INFINITY, 1.5], ["1", 1n]],
      [v.int64(), [0n, -(2n ** 63n), 2n ** 63n - 1n], [2n ** 63n, 1, "1"]],
      [v.boolean(), [true, false], [0, "true"]],
      [v.null(), [null], [undefined, 0]],
      [v.bytes(), [new Uint8Array([1, 2])], ["AQI=", [1, 2]]],
      [v.array(v.number()), [[], [1, 2]], [[1, "2"], { 0: 1 }]],
      [v.object({ a: v.string(), b: v.optional(v.number()) }), [{ a: "x" }, { a: "x", b: 1 }, { a: "x", b: undefined }], [{ a: "x", c: 1 }, { b: 1 }, []]],
      [v.union(v.string(), v.number()), ["a", 1], [true, null]],
      [v.literal("on"), ["on"], ["off", 1]],
      [v.id("users"), [user], [post, user.toUpperCase(), "not-an-id", 7]],
      [v.any(), [null, 1n, { nested: [new Uint8Array()] }], [undefined, new Date(0), { $bytes: "x" }, "\ud800"]],
    ];
    for (const [validator, good, bad] of cases) {
      for (const input of good) expect(() => accepts(validator, input), String(input)).not.toThrow();
      for (const input of bad) expect(refusal(validator, input).code, String(input)).toBe("INVALID_ARGUMENT");
    }
  });

  it("names the path of the first bad field and drops undefined fields from what it returns", () => {
    const shape = v.object({ items: v.array(v.object({ price: v.number() })), note: v.optional(v.string()) });
    expect(refusal(shape, { items: [{ price: 1 }, { price: "2" }] }).details.path).toBe("args.items[1].price");
    expect(accepts(shape, { items: [], note: undefined })).toEqual({ items: [] });
    expect(Object.hasOwn(accepts(shape, { items: [], note: undefined }) as object, "note")).toBe(false);
  });
});
