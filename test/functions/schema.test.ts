/**
 * Scenario: schemas are checked when they are defined, and bound to a deployment's table
 * and index numbers that stay stable as the schema grows: adding tables and indexes keeps
 * every existing number (and so every stored document readable), an index added to a
 * table with data is backfilled while mutations run, and removing or retyping anything
 * is refused before anything is written.
 */
import { describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { backfillIndexes } from "../../src/functions/backfillIndexes.js";
import { planCatalog, resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";
import { schemaCatalogObject } from "../../src/manifest/SchemaCatalog.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { harnessPerTest } from "../support/shardHarness.js";

const code = (expected: string) => (error: unknown) => hasErrorCode(error, expected as never);

describe("defineSchema", () => {
  it("refuses inconsistent schemas with SCHEMA_INVALID naming the problem", () => {
    const bad: [string, () => unknown][] = [
      ["table name", () => defineSchema({ "bad-name": defineTable({ x: v.string() }) })],
      ["system field", () => defineSchema({ t: defineTable({ _secret: v.string() }) })],
      ["reserved index", () => defineSchema({ t: defineTable({ x: v.string() }).index("by_id", ["x"]) })],
      ["duplicate index", () => defineSchema({ t: defineTable({ x: v.string() }).index("a", ["x"]).index("a", ["x"]) })],
      ["unknown field", () => defineSchema({ t: defineTable({ x: v.string() }).index("a", ["y" as "x"]) })],
      ["empty index", () => defineSchema({ t: defineTable({ x: v.string() }).index("a", []) })],
      ["repeated field", () => defineSchema({ t: defineTable({ x: v.string() }).index("a", ["x", "x"]) })],
      ["shard key", () => defineSchema({ t: defineTable({ x: v.string() }).shardKey("y" as "x") })],
      ["not a validator", () => defineSchema({ t: defineTable({ x: 5 as never }) })],
      ["not a table", () => defineSchema({ t: {} as never })],
    ];
    for (const [what, define] of bad) {
      expect(define, what).toThrow(expect.objectContaining({ code: "SCHEMA_INVALID" }));
    }
    expect(() => defineSchema({ t: defineTable({ address: v.object({ city: v.string() }) }).index("by_city", ["address.city"]) })).not.toThrow();
  });

  it("refuses an app module without a schema or with malformed functions", () => {
    expect(() => App.fromModule({ functions: {} }, "app.ts")).toThrow(expect.objectContaining({ code: "SCHEMA_INVALID" }));
    const schema = defineSchema({ t: defineTable({ x: v.string() }) });
    expect(() => App.fromModule({ schema }, "app.ts")).toThrow(/must export `functions`/);
    expect(() => App.fromModule({ schema, functions: { "bad name": {} } }, "app.ts")).toThrow(/module name/);
    const { query } = functionsFor(schema);
    const app = App.fromModule({ schema, functions: { m: { q: query({ handler: () => 1 }), helper: () => 2, constant: 3 } } });
    expect(app.paths).toEqual(["m:q"]);
  });
});

describe("schema catalog", () => {
  const v1 = defineSchema({
    users: defineTable({ name: v.string() }).index("by_name", ["name"]),
    posts: defineTable({ author: v.id("users"), title: v.string() }).shardKey("author"),
  });

  it("numbers tables and indexes once; adding keeps every existing number", () => {
    const first = planCatalog(v1, null)!;
    // Every deployment has Cairn's system tables after the app's.
    expect(first.tables.map((table) => [table.name, table.number])).toEqual([["users", 1], ["posts", 2], ["_scheduled_functions", 3], ["_storage", 4]]);
    expect(first.tables[0]!.indexes.map((index) => [index.name, index.id, index.state])).toEqual([
      ["by_id", 1, "ready"],
      ["by_creation", 2, "ready"],
      ["by_name", 3, "ready"],
    ]);
    const stored = { ...first, version: 1, nonce: "n" };
    expect(planCatalog(v1, stored)).toBeNull();
    const v2 = defineSchema({
      users: defineTable({ name: v.string(), email: v.optional(v.string()) }).index("by_name", ["name"]).index("by_email", ["email"]),
      posts: defineTable({ author: v.id("users"), title: v.string() }).shardKey("author"),
      comments: defineTable({ body: v.string() }),
    });
    const second = planCatalog(v2, stored)!;
    expect(second.tables.map((table) => [table.name, table.number])).toEqual([["users", 1], ["posts", 2], ["comments", 5], ["_scheduled_functions", 3], ["_storage", 4]]);
    const users = second.tables[0]!.indexes;
    expect(users.slice(0, 3)).toEqual(first.tables[0]!.indexes);
    expect(users[3]).toMatchObject({ name: "by_email", state: "backfilling" });
    expect(second.tables[2]!.indexes.every((index) => index.state === "ready")).toBe(true);
    expect(second.tables.slice(3)).toEqual(first.tables.slice(2));
    const ids = second.tables.flatMap((table) => table.indexes.map((index) => index.id));
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("refuses removing a table or an index, retyping an index, or changing a shard key", () => {
    const stored = { ...planCatalog(v1, null)!, version: 1, nonce: "n" };
    const changes = {
      "removing a table": defineSchema({ users: defineTable({ name: v.string() }).index("by_name", ["name"]) }),
      "removing an index": defineSchema({
        users: defineTable({ name: v.string() }),
        posts: defineTable({ author: v.id("users"), title: v.string() }).shardKey("author"),
      }),
      "changing an index's fields": defineSchema({
        users: defineTable({ name: v.string(), nick: v.string() }).index("by_name", ["nick"]),
        posts: defineTable({ author: v.id("users"), title: v.string() }).shardKey("author"),
      }),
      "changing a shard key": defineSchema({
        users: defineTable({ name: v.string() }).index("by_name", ["name"]),
        posts: defineTable({ author: v.id("users"), title: v.string() }),
      }),
    };
    for (const [what, schema] of Object.entries(changes)) {
      expect(() => planCatalog(schema, stored), what).toThrow(expect.objectContaining({ code: "SCHEMA_CHANGE_REFUSED" }));
    }
  });

  it("resolves one catalog when nodes race to create it, and a refused change writes nothing", async () => {
    const store = new MemoryObjectStore();
    const resolved = await Promise.all([1, 2, 3].map((seed) => resolveCatalog(store, v1, new SeededRandom(seed))));
    expect(new Set(resolved.map((catalog) => catalog.table("posts").number)).size).toBe(1);
    const before = await schemaCatalogObject(store, new SeededRandom(0)).read();
    const shrunk = defineSchema({ users: defineTable({ name: v.string() }).index("by_name", ["name"]) });
    await expect(resolveCatalog(store, shrunk, new SeededRandom(4))).rejects.toSatisfy(code("SCHEMA_CHANGE_REFUSED"));
    expect((await schemaCatalogObject(store, new SeededRandom(0)).read())!.etag).toBe(before!.etag);
  });
});

describe("an index added to a table with data", () => {
  const harness = harnessPerTest(memoryBucket);

  it("is backfilled while mutations write the table, then answers like a full scan", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const before = defineSchema({ items: defineTable({ n: v.number(), tag: v.string() }) });
    const fill = functionsFor(before).mutation({
      args: { from: v.number(), count: v.number() },
      handler: async (ctx, { from, count }) => {
        for (let n = from; n < from + count; n++) await ctx.db.insert("items", { n, tag: `t${n % 7}` });
      },
    });
    const first = new FunctionRuntime({
      app: App.fromModule({ schema: before, functions: { items: { fill } } }),
      catalog: await resolveCatalog(h.bucket, before, new SeededRandom(1)),
      shard: node.engine,
    });
    await first.runMutation("items:fill", { from: 0, count: 1_300 });

    const after = defineSchema({ items: defineTable({ n: v.number(), tag: v.string() }).index("by_tag", ["tag"]), extra: defineTable({ x: v.number() }) });
    const { query, mutation } = functionsFor(after);
    const byTag = query({
      args: { tag: v.string() },
      handler: async (ctx, { tag }) => (await ctx.db.query("items").withIndex("by_tag", (q) => q.eq("tag", tag)).collect()).map((item) => item.n),
    });
    const scan = query({
      args: { tag: v.string() },
      handler: async (ctx, { tag }) => (await ctx.db.query("items").collect()).filter((item) => item.tag === tag).map((item) => item.n),
    });
    const retag = mutation({
      args: { n: v.number() },
      handler: async (ctx, { n }) => {
        const [item] = (await ctx.db.query("items").collect()).filter((candidate) => candidate.n === n);
        if (item) await ctx.db.patch(item._id, { tag: "t0" });
        await ctx.db.insert("items", { n: 10_000 + n, tag: "t0" });
      },
    });
    const catalog = await resolveCatalog(h.bucket, after, new SeededRandom(2));
    expect(catalog.table("items").number).toBe(first.catalog.table("items").number);
    const runtime = new FunctionRuntime({ app: App.fromModule({ schema: after, functions: { items: { byTag, scan, retag } } }), catalog, shard: node.engine });
    await expect(runtime.runQuery("items:byTag", { tag: "t0" })).rejects.toSatisfy(code("INDEX_NOT_READY"));

    // Rows the backfill has indexed already (n = 1, the first batch) and rows it has not
    // reached yet (1,299) are re-tagged while it runs: both must end up under their new tag.
    const progress: number[] = [];
    let firstBatch: () => void = () => undefined;
    const firstBatchDone = new Promise<void>((resolve) => (firstBatch = resolve));
    const backfill = backfillIndexes({
      catalog,
      shards: [node.engine],
      store: h.bucket,
      random: new SeededRandom(3),
      onProgress: (p) => {
        progress.push(p.documents);
        firstBatch();
      },
    });
    await firstBatchDone;
    await Promise.all([backfill, ...[1, 600, 1_299].map((n) => runtime.runMutation("items:retag", { n }))]);
    expect(progress.at(-1)).toBeGreaterThanOrEqual(1_300);
    expect(progress.length).toBeGreaterThan(1);
    for (const tag of ["t0", "t3"]) {
      const indexed = (await runtime.runQuery("items:byTag", { tag })).value as number[];
      const scanned = (await runtime.runQuery("items:scan", { tag })).value as number[];
      expect([...indexed].sort((a, b) => a - b)).toEqual([...scanned].sort((a, b) => a - b));
    }
    const stored = await schemaCatalogObject(h.bucket, new SeededRandom(0)).read();
    expect(stored!.value.tables[0]!.indexes.find((index) => index.name === "by_tag")!.state).toBe("ready");
    // A node starting later binds the index as ready.
    const later = await resolveCatalog(h.bucket, after, new SeededRandom(4));
    expect(later.table("items").indexes.get("by_tag")!.state).toBe("ready");
  });
});
