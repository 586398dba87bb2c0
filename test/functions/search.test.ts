/**
 * Scenario: full-text search (`searchIndex`, `withSearchIndex`) through the functions
 * runtime on a real shard engine, the app in test/functions/searchApp.ts.
 *
 * - Terms: case, diacritics and punctuation do not matter; a document matches any of the
 *   query's terms; filters are equalities on the declared filter fields, in any
 *   combination (the first ones narrow the ranges read, the others are checked).
 * - Ranking: more of the query's terms, rarer terms, more occurrences and shorter texts
 *   rank higher, as BM25 has it; ties list the newest first.
 * - Maintenance: an edit moves a document between terms, a deletion removes it, a
 *   document whose search field is missing has no entries; a mutation's search sees its
 *   own writes.
 * - Liveness (read sets): a write of a document with one of the query's terms under its
 *   filters overlaps what the search read — inserting, editing into or out of a term,
 *   deleting — and a write of a document with none of the terms, or of another channel
 *   when the channel is given, does not.
 * - Bad input: any string of any bytes is a safe query (no syntax), more than 16 terms is
 *   INVALID_ARGUMENT, as are a search of another field, a filter on an undeclared field,
 *   a search index read with withIndex and a normal index with withSearchIndex; a schema
 *   with a malformed search index is SCHEMA_INVALID.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { backfillIndexes } from "../../src/functions/backfillIndexes.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { defineSchema, defineTable, internalMutation, query, v } from "../../src/functions/index.js";
import { rangesOverlap, type KeyRange } from "../../src/model/KeyRange.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { runtimeOn } from "../support/functionsHarness.js";
import { harnessPerTest } from "../support/shardHarness.js";
import { rejection } from "../support/rejection.js";
import * as searchApp from "./searchApp.js";

const harness = harnessPerTest(memoryBucket);

async function runtime(): Promise<FunctionRuntime> {
  const h = await harness();
  return runtimeOn(h, await h.writer("a"), searchApp);
}

async function send(run: FunctionRuntime, body: string, channel = "general", author = "ann"): Promise<string> {
  return (await run.runMutation("messages:send", { channel, author, body })).value as string;
}

async function search(run: FunctionRuntime, text: string, filters: { channel?: string; author?: string; limit?: number } = {}): Promise<string[]> {
  return (await run.runQuery("messages:search", { text, ...filters })).value as string[];
}

function overlaps(readRanges: readonly KeyRange[], writeRanges: readonly KeyRange[]): boolean {
  return readRanges.some((read) => writeRanges.some((write) => rangesOverlap(read, write)));
}

describe("full-text search", () => {
  it("matches terms whatever their case, accents and punctuation, any of the query's terms, under any filters", async () => {
    const run = await runtime();
    await send(run, "Café au lait, s'il vous plaît!");
    await send(run, "The CAFE is closed", "random");
    await send(run, "Tea at five", "general", "bob");
    await send(run, "nothing to see");
    expect((await search(run, "cafe")).sort()).toEqual(["Café au lait, s'il vous plaît!", "The CAFE is closed"].sort());
    expect(await search(run, "CAFÉ", { channel: "random" })).toEqual(["The CAFE is closed"]);
    expect((await search(run, "tea café")).sort()).toEqual(["Café au lait, s'il vous plaît!", "Tea at five", "The CAFE is closed"].sort());
    // The second filter field alone (not a prefix of the key): checked on each posting.
    expect(await search(run, "tea cafe", { author: "bob" })).toEqual(["Tea at five"]);
    expect(await search(run, "tea cafe", { channel: "general", author: "ann" })).toEqual(["Café au lait, s'il vous plaît!"]);
    expect(await search(run, "espresso")).toEqual([]);
    expect(await search(run, "  ,;! ")).toEqual([]);
  });

  it("ranks by relevance: more terms, rarer terms, more occurrences, shorter texts; ties newest first", async () => {
    const run = await runtime();
    for (let i = 0; i < 30; i++) await send(run, `common filler number ${i}`);
    await send(run, "rare word here");
    await send(run, "common rare together");
    await send(run, "common common common");
    await send(run, "common and then a great many other words that make this text long and diluted");
    const both = await search(run, "common rare", { limit: 3 });
    expect(both[0]).toBe("common rare together");
    expect(both[1]).toBe("rare word here");
    const common = await search(run, "common", { limit: 40 });
    expect(common[0]).toBe("common common common");
    expect(common.indexOf("common and then a great many other words that make this text long and diluted")).toBe(common.length - 1);
    // Equal scores: newest first.
    // A shorter text first ("common rare together" has 3 terms, the fillers 4)…
    expect(common.indexOf("common rare together")).toBeLessThan(common.indexOf("common filler number 29"));
    // …and equal scores newest first.
    expect(common.filter((body) => body.startsWith("common filler")).slice(0, 3)).toEqual(["common filler number 29", "common filler number 28", "common filler number 27"]);
  });

  it("follows edits and deletions, skips documents without the field, and sees a mutation's own writes", async () => {
    const run = await runtime();
    const id = await send(run, "apples and pears");
    expect(await search(run, "apples")).toEqual(["apples and pears"]);
    await run.runMutation("messages:edit", { id, body: "pears only" });
    expect(await search(run, "apples")).toEqual([]);
    expect(await search(run, "pears")).toEqual(["pears only"]);
    await run.runMutation("messages:remove", { id });
    expect(await search(run, "pears")).toEqual([]);
    await run.runMutation("notes:add", {});
    await run.runMutation("notes:add", { text: "a note" });
    expect((await run.runQuery("notes:search", { text: "note" })).value).toEqual(["a note"]);
    await send(run, "older kiwi", "m", "m");
    expect(((await run.runMutation("messages:searchInMutation", { text: "kiwi", also: "fresh kiwi kiwi" })).value as string[]).sort()).toEqual(["fresh kiwi kiwi", "older kiwi"]);
  });

  it("records exactly the terms' ranges under the filters: writes that could change the result overlap them, others do not", async () => {
    const run = await runtime();
    const kept = await send(run, "alpha beta");
    const other = await send(run, "gamma delta");
    const elsewhere = await send(run, "alpha in another channel", "random");
    const read = await run.runQuery("messages:search", { text: "alpha", channel: "general" });
    expect(read.value).toEqual(["alpha beta"]);
    const writes: [string, () => Promise<{ writeRanges: KeyRange[] }>, boolean][] = [
      ["a new document with the term", () => run.runMutation("messages:send", { channel: "general", author: "x", body: "alpha again" }), true],
      ["an edit adding the term", () => run.runMutation("messages:edit", { id: other, body: "gamma alpha" }), true],
      ["an edit removing the term", () => run.runMutation("messages:edit", { id: kept, body: "beta" }), true],
      ["a new document without the term", () => run.runMutation("messages:send", { channel: "general", author: "x", body: "omega" }), false],
      ["the term in another channel", () => run.runMutation("messages:send", { channel: "random", author: "x", body: "alpha" }), false],
      ["an edit of another channel's match", () => run.runMutation("messages:edit", { id: elsewhere, body: "alpha changed" }), false],
    ];
    for (const [what, write, expected] of writes) {
      const before = await run.runQuery("messages:search", { text: "alpha", channel: "general" });
      expect(overlaps(before.readRanges, (await write()).writeRanges), what).toBe(expected);
    }
  });

  it("takes any string safely and refuses malformed searches and search indexes", async () => {
    const run = await runtime();
    await send(run, "plain words");
    for (const text of ['"unclosed', "a OR b AND NOT c", "col:term*", "NEAR(a b)", "\u0000\uffff\u200b", "' ; DROP TABLE messages; --", "🙂 emoji"]) {
      expect(Array.isArray(await search(run, text)), text).toBe(true);
    }
    expect(await rejection(run.runQuery("messages:search", { text: Array.from({ length: 17 }, (_, i) => `t${i}`).join(" ") }))).toMatchObject({ code: "INVALID_ARGUMENT" });
    for (const kind of ["otherField", "undeclaredFilter", "noSearch", "withIndex", "normalIndex", "tooMany"]) {
      expect(await rejection(run.runQuery("messages:misuse", { kind })), kind).toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    const badSchemas: [string, () => unknown][] = [
      ["an unknown search field", () => defineSchema({ t: defineTable({ a: v.string() }).searchIndex("s", { searchField: "b" as never }) })],
      ["an unknown filter field", () => defineSchema({ t: defineTable({ a: v.string() }).searchIndex("s", { searchField: "a", filterFields: ["z" as never] }) })],
      ["the search field as a filter", () => defineSchema({ t: defineTable({ a: v.string() }).searchIndex("s", { searchField: "a", filterFields: ["a"] }) })],
      ["a name taken by an index", () => defineSchema({ t: defineTable({ a: v.string() }).index("s", ["a"]).searchIndex("s", { searchField: "a" }) })],
      ["a bad name", () => defineSchema({ t: defineTable({ a: v.string() }).searchIndex("1s", { searchField: "a" }) })],
    ];
    for (const [what, build] of badSchemas) expect(build, what).toThrow(expect.objectContaining({ code: "SCHEMA_INVALID" }));
  });

  it("backfills a search index added to a table that holds documents, and answers once it is ready", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const before = defineSchema({ posts: defineTable({ body: v.string(), tag: v.string() }) });
    const fill = internalMutation({
      args: { count: v.number() },
      handler: async (ctx, { count }) => {
        for (let n = 0; n < count; n++) await ctx.db.insert("posts", { body: `post ${n} ${n % 3 === 0 ? "fizz" : "buzz"}`, tag: `t${n % 2}` });
      },
    });
    const first = new FunctionRuntime({ app: App.fromModule({ schema: before, functions: { posts: { fill } } }), catalog: await resolveCatalog(h.bucket, before, new SeededRandom(1)), shard: node.engine });
    await first.runMutation("posts:fill", { count: 200 }, { internal: true });
    const after = defineSchema({ posts: defineTable({ body: v.string(), tag: v.string() }).searchIndex("search_body", { searchField: "body", filterFields: ["tag"] }) });
    const find = query({
      args: { text: v.string(), tag: v.string() },
      handler: async (ctx, { text, tag }) => (await ctx.db.query("posts").withSearchIndex("search_body", (q) => q.search("body", text).eq("tag", tag)).collect()).length,
    });
    const catalog = await resolveCatalog(h.bucket, after, new SeededRandom(2));
    const runtime = new FunctionRuntime({ app: App.fromModule({ schema: after, functions: { posts: { find } } }), catalog, shard: node.engine });
    expect(await rejection(runtime.runQuery("posts:find", { text: "fizz", tag: "t0" }))).toMatchObject({ code: "INDEX_NOT_READY" });
    await backfillIndexes({ catalog, shards: [node.engine], store: h.bucket, random: new SeededRandom(3) });
    // n % 3 == 0 and n % 2 == 0: n % 6 == 0, 34 of 0..199.
    expect((await runtime.runQuery("posts:find", { text: "fizz", tag: "t0" })).value).toBe(34);
    expect((await runtime.runQuery("posts:find", { text: "post", tag: "t1" })).value).toBe(100);
  });
});
