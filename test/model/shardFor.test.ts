/**
 * `shardFor` is part of the data format: these values are pinned, so a change to the
 * hash (which would strand every stored document in the wrong lane) fails here first.
 * The properties are jump hashing's: every shard in range, lanes filled evenly, and a
 * route that moves when the count grows by one moves to the new shard only.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { encodeIndexKey } from "../../src/model/IndexKey.js";
import { routeOfKey, shardFor, shardOfRoute } from "../../src/model/shardFor.js";
import type { Value } from "../../src/model/Value.js";
import { codeOf } from "../support/errorCode.js";

const key = (value: Value) => encodeIndexKey([value]);

describe("shardFor", () => {
  it.each([
    ["general", "1b5a37901220ab9b", [0, 0, 2, 2, 4, 14, 176]],
    ["random", "111d6eb43caf65a0", [0, 1, 1, 1, 1, 13, 196]],
    ["", "a8dc4f07b6003475", [0, 0, 2, 2, 2, 12, 181]],
    [42, "8f34cfff14be0412", [0, 1, 2, 2, 6, 9, 142]],
    [null, "dbc1b4c900ffe48d", [0, 1, 1, 1, 1, 7, 81]],
    [true, "e52d9c508c502347", [0, 1, 2, 2, 2, 2, 123]],
  ] as const)("routes %j the same way forever (route %s)", (value, route, shards) => {
    expect(Buffer.from(routeOfKey(key(value))).toString("hex")).toBe(route);
    expect([1, 2, 3, 4, 7, 16, 256].map((count) => shardFor(key(value), count))).toEqual(shards);
  });

  it("is the jump hash of the route: route 0 is always shard 0", () => {
    for (const count of [1, 2, 5, 256]) expect(shardOfRoute(new Uint8Array(8), count)).toBe(0);
  });

  it("fills lanes evenly and, growing N to N+1, moves routes only to the new shard", () => {
    const random = new SeededRandom(7);
    const routes = Array.from({ length: 20_000 }, () => random.bytes(8));
    for (const count of [2, 3, 4, 7]) {
      const sizes = new Array<number>(count).fill(0);
      for (const route of routes) {
        const shard = shardOfRoute(route, count);
        expect(shard).toBeGreaterThanOrEqual(0);
        expect(shard).toBeLessThan(count);
        sizes[shard]!++;
        const grown = shardOfRoute(route, count + 1);
        if (grown !== shard) expect(grown).toBe(count);
      }
      const expected = routes.length / count;
      // Five standard deviations of a binomial count: a real skew fails, chance does not.
      const tolerance = 5 * Math.sqrt(expected * (1 - 1 / count));
      for (const size of sizes) expect(Math.abs(size - expected)).toBeLessThan(tolerance);
    }
  });

  it.each([0, -1, 1.5, 257, Number.NaN])("refuses a shard count of %s", (count) => {
    expect(codeOf(() => shardFor(key("x"), count))).toBe("INVALID_ARGUMENT");
  });
});
