/**
 * Scenario: schema changes beyond additions, on a real shard engine.
 *
 * - Removing a table or an index is refused unless the schema acknowledges it
 *   (`drop`), and the refusal says how; acknowledged, it is "dropping", its data is
 *   deleted through the log by the shard's writer (dropRemoved) — documents, and every
 *   entry of every index of theirs — and then it leaves the catalog; its number is never
 *   reused. A table or index being dropped cannot be declared again until it is gone.
 * - A changed field validator is checked against every stored document first: refused
 *   with the first offending ids (and nothing written) when any fails; accepted when all
 *   pass; accepted unchecked with `schemaValidation: false`.
 * - Malformed options are SCHEMA_INVALID.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { planCatalog, resolveCatalog } from "../../src/functions/catalog.js";
import { dropRemoved } from "../../src/functions/dropRemoved.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { defineSchema, defineTable, internalMutation, query, v, type AnySchema } from "../../src/functions/index.js";
import { schemaCatalogObject } from "../../src/manifest/index.js";
import { indexRange } from "../../src/model/index.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { rejection } from "../support/rejection.js";
import { harnessPerTest, type HarnessNode, type ShardHarness } from "../support/shardHarness.js";

const harness = harnessPerTest(memoryBucket);

const v1 = defineSchema({
  keep: defineTable({ n: v.number(), tag: v.string() }).index("by_tag", ["tag"]).searchIndex("search_tag", { searchField: "tag" }),
  old: defineTable({ n: v.number() }).index("by_n", ["n"]),
});

const fill = internalMutation({
  args: { count: v.number() },
  handler: async (ctx, { count }) => {
    for (let n = 0; n < count; n++) {
      await (ctx.db as never as { insert(table: string, value: object): Promise<string> }).insert("keep", { n, tag: `t${n % 3} word${n}` });
      await (ctx.db as never as { insert(table: string, value: object): Promise<string> }).insert("old", { n });
    }
  },
});

async function deployed(h: ShardHarness, node: HarnessNode, schema: AnySchema, seed: number, checked = true): Promise<FunctionRuntime> {
  const catalog = await resolveCatalog(h.bucket, schema, new SeededRandom(seed), checked ? { shards: [node.engine] } : undefined);
  return new FunctionRuntime({ app: App.fromModule({ schema, functions: { m: { fill } } }), catalog, shard: node.engine });
}

async function storedCatalog(h: ShardHarness) {
  return (await schemaCatalogObject(h.bucket, new SeededRandom(0)).read())!;
}

describe("schema evolution", () => {
  it("refuses a removal that is not acknowledged, and says how to acknowledge it", () => {
    const stored = { ...planCatalog(v1, null)!, version: 1, nonce: "n" };
    const withoutOld = defineSchema({ keep: v1.tables.keep });
    expect(() => planCatalog(withoutOld, stored)).toThrow(expect.objectContaining({ code: "SCHEMA_CHANGE_REFUSED", message: expect.stringContaining('drop: { tables: ["old"] }') }));
    const withoutIndex = defineSchema({ keep: defineTable({ n: v.number(), tag: v.string() }).searchIndex("search_tag", { searchField: "tag" }), old: v1.tables.old });
    expect(() => planCatalog(withoutIndex, stored)).toThrow(expect.objectContaining({ code: "SCHEMA_CHANGE_REFUSED", message: expect.stringContaining('drop: { indexes: ["keep.by_tag"] }') }));
    // Acknowledged: marked dropping, and the same schema again changes nothing more.
    const acknowledged = defineSchema({ keep: defineTable({ n: v.number(), tag: v.string() }).searchIndex("search_tag", { searchField: "tag" }) }, { drop: { tables: ["old"], indexes: ["keep.by_tag"] } });
    const planned = { ...planCatalog(acknowledged, stored)!, version: 2, nonce: "m" };
    expect(planned.tables.find((table) => table.name === "old")).toMatchObject({ state: "dropping", droppedShards: [] });
    expect(planned.tables.find((table) => table.name === "keep")!.indexes.find((index) => index.name === "by_tag")).toMatchObject({ state: "dropping" });
    expect(planCatalog(acknowledged, planned)).toBeNull();
    // Declared again while being dropped: refused.
    expect(() => planCatalog(v1, planned)).toThrow(expect.objectContaining({ code: "SCHEMA_CHANGE_REFUSED", message: expect.stringContaining("being dropped") }));
  });

  it("refuses malformed drop options", () => {
    const table = defineTable({ n: v.number() }).index("by_n", ["n"]);
    const malformed: [string, () => unknown][] = [
      ["a declared table", () => defineSchema({ t: table }, { drop: { tables: ["t"] } })],
      ["a declared index", () => defineSchema({ t: table }, { drop: { indexes: ["t.by_n"] } })],
      ["an index without its table", () => defineSchema({ t: table }, { drop: { indexes: ["by_n"] } })],
      ["not a list", () => defineSchema({ t: table }, { drop: { tables: "old" as never } })],
      ["schemaValidation not a boolean", () => defineSchema({ t: table }, { schemaValidation: "no" as never })],
    ];
    for (const [what, build] of malformed) expect(build, what).toThrow(expect.objectContaining({ code: "SCHEMA_INVALID" }));
  });

  it("drops an acknowledged table's documents and an index's entries through the log, then takes them out of the catalog", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const first = await deployed(h, node, v1, 1);
    await first.runMutation("m:fill", { count: 700 }, { internal: true });
    const before = await storedCatalog(h);
    const oldTable = before.value.tables.find((table) => table.name === "old")!;
    const byTag = before.value.tables.find((table) => table.name === "keep")!.indexes.find((index) => index.name === "by_tag")!;
    const readTs = () => node.engine.readTs;
    const countDocuments = (tableNumber: number) => node.engine.local.documentScan(tableNumber, { start: "", end: null }, readTs(), "asc", 10_000).length;
    const countEntries = (indexId: number) => node.engine.local.indexScan(indexId, indexRange(indexId, { equal: [] }), readTs(), "asc", 10_000).length;
    expect(countDocuments(oldTable.number)).toBe(700);
    expect(countEntries(byTag.id)).toBe(700);

    const v2 = defineSchema({ keep: defineTable({ n: v.number(), tag: v.string() }).searchIndex("search_tag", { searchField: "tag" }) }, { drop: { tables: ["old"], indexes: ["keep.by_tag"] } });
    const second = await deployed(h, node, v2, 2);
    expect(second.catalog.table("keep").indexes.has("by_tag")).toBe(false);
    const progress: string[] = [];
    const gone = await dropRemoved({ shards: [node.engine], store: h.bucket, random: new SeededRandom(3), onProgress: (p) => progress.push(`${p.what}:${p.rows}`) });
    expect(gone.sort()).toEqual(["index keep.by_tag", "table old"]);
    expect(progress.length).toBeGreaterThan(1);
    expect(countDocuments(oldTable.number)).toBe(0);
    expect(countEntries(byTag.id)).toBe(0);
    for (const index of oldTable.indexes) if (index.name !== "by_id") expect(countEntries(index.id), index.name).toBe(0);
    // The table kept its documents and its other index.
    expect(countDocuments(before.value.tables.find((table) => table.name === "keep")!.number)).toBe(700);
    const after = await storedCatalog(h);
    expect(after.value.tables.some((table) => table.name === "old")).toBe(false);
    expect(after.value.tables.find((table) => table.name === "keep")!.indexes.some((index) => index.name === "by_tag")).toBe(false);
    // Numbers are never reused: a table called "old" again is a new table.
    const v3 = defineSchema({ keep: v2.tables.keep, old: defineTable({ n: v.number() }) });
    const third = await deployed(h, node, v3, 4);
    expect(third.catalog.table("old").number).toBeGreaterThan(oldTable.number);
    expect(countDocuments(third.catalog.table("old").number)).toBe(0);
    // A second run finds nothing to do.
    expect(await dropRemoved({ shards: [node.engine], store: h.bucket, random: new SeededRandom(5) })).toEqual([]);
  });

  it("checks a changed validator against the stored documents: refused with the first offenders, accepted when they pass or unchecked", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const first = await deployed(h, node, v1, 1);
    await first.runMutation("m:fill", { count: 30 }, { internal: true });
    const before = await storedCatalog(h);
    // n becomes a string: every document offends; the first ten are named, nothing is written.
    const stringN = defineSchema({ keep: defineTable({ n: v.string(), tag: v.string() }).index("by_tag", ["tag"]).searchIndex("search_tag", { searchField: "tag" }), old: v1.tables.old });
    const refused = await rejection(deployed(h, node, stringN, 2));
    expect(refused).toMatchObject({ code: "SCHEMA_CHANGE_REFUSED" });
    const offending = (refused as unknown as { details: { offending: { table: string; id: string; problem: string }[] } }).details.offending;
    expect(offending).toHaveLength(10);
    expect(offending.every((entry) => entry.table === "keep" && entry.problem.includes("n"))).toBe(true);
    expect(refused.message).toContain("schemaValidation: false");
    expect((await storedCatalog(h)).value.version).toBe(before.value.version);
    // A change every document passes (n may be a number or a string; a new optional field): accepted.
    const widened = defineSchema({ keep: defineTable({ n: v.union(v.number(), v.string()), tag: v.string(), note: v.optional(v.string()) }).index("by_tag", ["tag"]).searchIndex("search_tag", { searchField: "tag" }), old: v1.tables.old });
    await deployed(h, node, widened, 3);
    expect((await storedCatalog(h)).value.version).toBeGreaterThan(before.value.version);
    // Refused again for a narrowing that one document fails…
    const tight = defineSchema({ keep: defineTable({ n: v.number(), tag: v.literal("t0 word0") }).index("by_tag", ["tag"]).searchIndex("search_tag", { searchField: "tag" }), old: v1.tables.old });
    const oneFails = await rejection(deployed(h, node, tight, 4));
    expect((oneFails as unknown as { details: { offending: unknown[] } }).details.offending).toHaveLength(10);
    // …and accepted unchecked when the schema says so.
    const unchecked = defineSchema(tight.tables, { schemaValidation: false });
    const runtime = await deployed(h, node, unchecked, 5);
    expect(runtime.catalog.table("keep")).toBeTruthy();
    // Documents already stored are read back as stored.
    const read = query({ args: {}, handler: async (ctx) => (await ctx.db.query("keep").take(1)).length });
    const app = new FunctionRuntime({ app: App.fromModule({ schema: unchecked, functions: { m: { read } } }), catalog: runtime.catalog, shard: node.engine });
    expect((await app.runQuery("m:read", {})).value).toBe(1);
  });
});
