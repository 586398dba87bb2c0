/**
 * Scenario: an index added to a sharded table that holds data, backfilled as a fleet
 * does it — each shard by its own writer (two runs standing in for two nodes, each with
 * its own catalog). After the first shard the stored catalog lists it and the index is
 * still "backfilling" for everyone (queries refuse it); after the last it is "ready" in
 * the catalog of the node that finished, and the other node learns so from the stored
 * catalog (refreshIndexStates) and answers queries on it with every shard's documents.
 * A re-run on a shard already done indexes nothing again.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { backfillIndexes } from "../../src/functions/backfillIndexes.js";
import { refreshIndexStates, resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { laneOfValue } from "../../src/functions/routing.js";
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";
import { schemaCatalogObject } from "../../src/manifest/index.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { shardSetOf } from "../support/shardedRuntime.js";

const SHARDS = 2;
const before = defineSchema({ notes: defineTable({ room: v.string(), n: v.number() }).shardKey("room") });
const after = defineSchema({ notes: defineTable({ room: v.string(), n: v.number() }).index("by_n", ["n"]).shardKey("room") });

function appOf(schema: typeof before | typeof after, withQuery: boolean) {
  const { query, mutation } = functionsFor(schema);
  const add = mutation({ args: { room: v.string(), n: v.number() }, shardBy: "room", handler: async (ctx, args) => ctx.db.insert("notes", args) });
  const byN = query({ args: {}, handler: async (ctx) => (await ctx.db.query("notes").withIndex("by_n" as never).collect()).map((note) => note.n) });
  return App.fromModule({ schema, functions: { notes: withQuery ? { add, byN } : { add } } }, "backfill test app");
}

describe("an index backfilled shard by shard", () => {
  const closing: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close();
  });

  it("is ready once every shard's writer has done its own, and every node learns it from the catalog", async () => {
    const store = new MemoryObjectStore();
    const sharded = await ShardedStore.open({ store, localDirectory: ":memory:", nodeId: "w", numShards: SHARDS, random: new SeededRandom(1) });
    closing.push(() => sharded.close());
    await sharded.acquireAll();
    const shards = shardSetOf(sharded);
    const first = new FunctionRuntime({ app: appOf(before, false), catalog: await resolveCatalog(store, before, new SeededRandom(2)), shards });
    const rooms = Array.from({ length: 20 }, (_, i) => `room-${i}`);
    expect(new Set(rooms.map((room) => laneOfValue(room, SHARDS)))).toEqual(new Set([0, 1]));
    for (const [n, room] of rooms.entries()) await first.runMutation("notes:add", { room, n });

    // Two nodes bind the new schema: the index is backfilling for both.
    const catalogA = await resolveCatalog(store, after, new SeededRandom(3));
    const catalogB = await resolveCatalog(store, after, new SeededRandom(4));
    const runtimeA = new FunctionRuntime({ app: appOf(after, true), catalog: catalogA, shards });
    const runtimeB = new FunctionRuntime({ app: appOf(after, true), catalog: catalogB, shards });
    await expect(runtimeA.runQuery("notes:byN", {})).rejects.toMatchObject({ code: "INDEX_NOT_READY" });

    // Node A writes shard 0: its part is recorded, the index is not ready yet.
    expect(await backfillIndexes({ catalog: catalogA, shards: sharded.engines, own: [0], store, random: new SeededRandom(5) })).toEqual([]);
    const stored = async () => (await schemaCatalogObject(store, new SeededRandom(0)).read())!.value.tables[0]!.indexes.find((index) => index.name === "by_n")!;
    expect(await stored()).toMatchObject({ state: "backfilling", backfilledShards: [0] });
    expect(await refreshIndexStates(store, new SeededRandom(6), catalogB)).toEqual([]);
    await expect(runtimeB.runQuery("notes:byN", {})).rejects.toMatchObject({ code: "INDEX_NOT_READY" });

    // Node B writes shard 1: done, and ready for B at once.
    const doneByB = await backfillIndexes({ catalog: catalogB, shards: sharded.engines, own: [1], store, random: new SeededRandom(7) });
    expect(doneByB).toEqual([{ table: "notes", index: "by_n", documents: rooms.filter((room) => laneOfValue(room, SHARDS) === 1).length }]);
    expect(await stored()).toEqual(expect.not.objectContaining({ backfilledShards: expect.anything() }));
    expect((await stored()).state).toBe("ready");
    const expected = rooms.map((_, n) => n);
    expect((await runtimeB.runQuery("notes:byN", {})).value).toEqual(expected);

    // Node A learns it from the stored catalog.
    expect(await refreshIndexStates(store, new SeededRandom(8), catalogA)).toEqual(["notes.by_n"]);
    expect((await runtimeA.runQuery("notes:byN", {})).value).toEqual(expected);
    // A run after it is ready does nothing.
    expect(await backfillIndexes({ catalog: catalogA, shards: sharded.engines, own: [0], store, random: new SeededRandom(9) })).toEqual([]);
  });
});
