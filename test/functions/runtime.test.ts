/**
 * Scenario: the functions runtime (DESIGN.md §7) on the real shard engine, on an
 * in-memory bucket and on the S3 test endpoint through the real AWS SDK: serializable
 * mutations by OCC (a hot counter, write skew), pagination under concurrent writes,
 * exact read ranges, receipts that answer a re-sent mutation across a restart and a
 * takeover, and every kind of bad call answered with a typed error that writes nothing.
 */
import { describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { App } from "../../src/functions/App.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";
import { rangesOverlap, type KeyRange } from "../../src/model/KeyRange.js";
import { SeededRandom } from "../../src/base/random.js";
import { newDocumentId } from "../../src/model/DocumentId.js";
import { BUCKET_FACTORIES } from "../support/bucketFactories.js";
import { runtimeOn } from "../support/functionsHarness.js";
import { harnessPerTest } from "../support/shardHarness.js";
import * as testApp from "./testApp.js";
import { rejection } from "../support/rejection.js";

const code = (expected: string) => (error: unknown) => hasErrorCode(error, expected as never);


function overlapsAny(reads: readonly KeyRange[], writes: readonly KeyRange[]): boolean {
  return reads.some((read) => writes.some((write) => rangesOverlap(read, write)));
}

describe.each(BUCKET_FACTORIES)("functions runtime on $name", (factory) => {
  const harness = harnessPerTest(factory);

  async function setup() {
    const h = await harness();
    const node = await h.writer("a");
    const runtime = await runtimeOn(h, node, testApp);
    return { h, node, runtime };
  }

  it("50 concurrent increments of one counter end at exactly 50, each conflict re-run", async () => {
    const { runtime } = await setup();
    const runs = await Promise.all(Array.from({ length: 50 }, () => runtime.runMutation("counters:increment", { name: "hot" })));
    expect((await runtime.runQuery("counters:get", { name: "hot" })).value).toBe(50);
    // Serializable: the increments saw 0..49, each exactly once.
    expect(runs.map((run) => run.value).sort((a, b) => (a as number) - (b as number))).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    const reruns = runs.reduce((sum, run) => sum + run.attempts - 1, 0);
    expect(reruns).toBe(runtime.conflicts + runtime.deferrals);
    expect(runtime.conflicts).toBeGreaterThan(0);
  });

  it("prevents write skew: of doctors going off call at once, one stays on call", async () => {
    const { runtime } = await setup();
    const ids = [];
    for (const name of ["ada", "bob", "cy", "di", "ed"]) ids.push((await runtime.runMutation("doctors:add", { name })).value);
    const results = await Promise.all(ids.map((id) => runtime.runMutation("doctors:goOffCall", { id })));
    expect(results.filter((run) => run.value === true)).toHaveLength(4);
    expect((await runtime.runQuery("doctors:onCall")).value).toHaveLength(1);
  });

  it("paginates 10,000 rows under concurrent inserts and deletes: every surviving row exactly once", async () => {
    const { runtime } = await setup();
    const ids: string[] = [];
    for (let from = 0; from < 10_000; from += 2_500) ids.push(...((await runtime.runMutation("items:insertMany", { from, count: 2_500 })).value as string[]));
    const random = new SeededRandom(3);
    const deleted = new Set<number>();
    const seen: number[] = [];
    const seenIds: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; ; page++) {
      const { value } = await runtime.runQuery("items:page", { cursor, numItems: 400 });
      const result = value as { page: { _id: string; n: number }[]; isDone: boolean; continueCursor: string };
      for (const item of result.page) {
        seen.push(item.n);
        seenIds.push(item._id);
      }
      if (result.isDone) break;
      cursor = result.continueCursor;
      // Between pages: delete 10 rows anywhere (some already read, some not yet) and insert 10 anywhere.
      const doomed: string[] = [];
      while (doomed.length < 10) {
        const n = Math.floor(random.float() * 10_000);
        if (deleted.has(n)) continue;
        deleted.add(n);
        doomed.push(ids[n]!);
      }
      await runtime.runMutation("items:removeMany", { ids: doomed });
      for (let k = 0; k < 10; k++) await runtime.runMutation("items:insert", { n: Math.floor(random.float() * 10_000) + 0.5 });
      expect(page).toBeLessThan(100);
    }
    expect(new Set(seenIds).size).toBe(seenIds.length);
    const seenSet = new Set(seen);
    for (let n = 0; n < 10_000; n++) if (!deleted.has(n)) expect(seenSet.has(n)).toBe(true);
  });
  it("records tight read ranges for take(n): a write just past the scanned rows does not intersect, one inside does", async () => {
    const { runtime } = await setup();
    await runtime.runMutation("items:insertMany", { from: 0, count: 100 });
    const ascending = await runtime.runQuery("items:take", { count: 10 });
    expect(ascending.value).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const descending = await runtime.runQuery("items:take", { count: 10, order: "desc" });
    expect(descending.value).toEqual([99, 98, 97, 96, 95, 94, 93, 92, 91, 90]);

    const justPast = await runtime.runMutation("items:insert", { n: 9.5 });
    expect(overlapsAny(ascending.readRanges, justPast.writeRanges)).toBe(false);
    expect(overlapsAny(descending.readRanges, justPast.writeRanges)).toBe(false);
    const inside = await runtime.runMutation("items:insert", { n: 8.5 });
    expect(overlapsAny(ascending.readRanges, inside.writeRanges)).toBe(true);
    const insideDescending = await runtime.runMutation("items:insert", { n: 90.5 });
    expect(overlapsAny(descending.readRanges, insideDescending.writeRanges)).toBe(true);
    expect(overlapsAny(ascending.readRanges, insideDescending.writeRanges)).toBe(false);

    // A patch that moves no index key still touches a returned document.
    const all = (await runtime.runQuery("items:page", { cursor: null, numItems: 200 })).value as { page: { _id: string; n: number }[] };
    const returned = all.page.find((item) => item.n === 3)!;
    const notReturned = all.page.find((item) => item.n === 50)!;
    expect(overlapsAny(ascending.readRanges, (await runtime.runMutation("items:retag", { id: returned._id, tag: "t" })).writeRanges)).toBe(true);
    expect(overlapsAny(ascending.readRanges, (await runtime.runMutation("items:retag", { id: notReturned._id, tag: "t" })).writeRanges)).toBe(false);

    // A get reads one point of the table keyspace.
    const got = await runtime.runQuery("items:get", { id: notReturned._id });
    expect(got.readRanges).toHaveLength(1);
    expect(overlapsAny(got.readRanges, (await runtime.runMutation("items:retag", { id: notReturned._id, tag: "u" })).writeRanges)).toBe(true);
    expect(overlapsAny(got.readRanges, (await runtime.runMutation("items:retag", { id: returned._id, tag: "u" })).writeRanges)).toBe(false);
    expect(got.readTs).toBeGreaterThan(0);
  });

  it("answers a re-sent (clientId, seq) from its receipt: after a restart and after a takeover by a fresh node", async () => {
    const { h, node, runtime } = await setup();
    const first = await runtime.runMutation("items:insert", { n: 1 }, { clientId: "client-1", seq: 7 });
    expect(first.replayed).toBe(false);
    const again = await runtime.runMutation("items:insert", { n: 1 }, { clientId: "client-1", seq: 7 });
    expect(again).toMatchObject({ value: first.value, ts: first.ts, replayed: true });
    const concurrent = await Promise.all([1, 2, 3].map(() => runtime.runMutation("items:insert", { n: 2 }, { clientId: "client-1", seq: 8 })));
    expect(new Set(concurrent.map((run) => run.value)).size).toBe(1);
    expect(concurrent.filter((run) => !run.replayed)).toHaveLength(1);

    await h.stop(node);
    const restarted = await h.writer("a");
    const afterRestart = await runtimeOn(h, restarted, testApp);
    expect(await afterRestart.runMutation("items:insert", { n: 1 }, { clientId: "client-1", seq: 7 })).toMatchObject({
      value: first.value,
      ts: first.ts,
      replayed: true,
    });
    await h.stop(restarted);
    const fresh = await h.writer("b");
    const afterTakeover = await runtimeOn(h, fresh, testApp);
    expect(await afterTakeover.runMutation("items:insert", { n: 1 }, { clientId: "client-1", seq: 7 })).toMatchObject({
      value: first.value,
      replayed: true,
    });
    expect((await afterTakeover.runQuery("items:all")).value).toEqual([1, 2]);
  });

  it("serves by_id from the documents in id order: ranges, pagination, read ranges and serializable scans", async () => {
    const { runtime } = await setup();
    const ids = ((await runtime.runMutation("items:insertMany", { from: 0, count: 30 })).value as string[]).slice();
    const sorted = [...ids].sort();
    expect((await runtime.runQuery("items:byId", { count: 100 })).value).toEqual(sorted);
    expect((await runtime.runQuery("items:byId", { count: 5, order: "desc" })).value).toEqual([...sorted].reverse().slice(0, 5));
    expect((await runtime.runQuery("items:byId", { count: 100, after: sorted[9]!, upTo: sorted[14]! })).value).toEqual(sorted.slice(10, 15));
    expect((await runtime.runQuery("items:byIdExactly", { id: ids[7]! })).value).toBe(7);
    expect((await runtime.runQuery("items:byIdExactly", { id: "not an id" })).value).toBeNull();

    // Pagination by id while rows come and go: every surviving row exactly once.
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < 20; page++) {
      const result = (await runtime.runQuery("items:byIdPage", { cursor, numItems: 7 })).value as { page: { _id: string }[]; isDone: boolean; continueCursor: string };
      seen.push(...result.page.map((item) => item._id));
      if (result.isDone) break;
      cursor = result.continueCursor;
      if (page === 1) {
        await runtime.runMutation("items:remove", { id: sorted[29]! });
        await runtime.runMutation("items:insert", { n: 100 });
      }
    }
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of sorted.slice(0, 29)) expect(seen).toContain(id);

    // take(5) by id reads exactly the table-keyspace range up to its fifth id.
    const firstFive = await runtime.runQuery("items:byId", { count: 5 });
    const remaining = (await runtime.runQuery("items:byId", { count: 100 })).value as string[];
    const inside = await runtime.runMutation("items:retag", { id: remaining[2]!, tag: "x" });
    const outside = await runtime.runMutation("items:retag", { id: remaining[10]!, tag: "x" });
    expect(overlapsAny(firstFive.readRanges, inside.writeRanges)).toBe(true);
    expect(overlapsAny(firstFive.readRanges, outside.writeRanges)).toBe(false);
  });

  it("keeps a by_id scan serializable: concurrent inserts that each check the count leave exactly the bound", async () => {
    const { runtime } = await setup();
    const runs = await Promise.all(Array.from({ length: 8 }, (_, n) => runtime.runMutation("items:insertIfFewer", { max: 3, n })));
    expect(runs.filter((run) => run.value !== false).map((run) => run.value).sort()).toEqual([1, 2, 3]);
    expect((await runtime.runQuery("items:all")).value).toHaveLength(3);
  });

  it("applies a (clientId, seq) once when two runtimes run it at once: the receipt is part of the read set", async () => {
    const { h, node, runtime } = await setup();
    const other = await runtimeOn(h, node, testApp);
    // A blind insert reads nothing: only the receipt's absence can make the second one conflict.
    const runs = await Promise.all([
      runtime.runMutation("items:insert", { n: 1 }, { clientId: "tablet", seq: 9 }),
      other.runMutation("items:insert", { n: 1 }, { clientId: "tablet", seq: 9 }),
    ]);
    expect(runs.filter((run) => run.replayed)).toHaveLength(1);
    expect(runs[0]!.value).toBe(runs[1]!.value);
    expect((await runtime.runQuery("items:all")).value).toEqual([1]);
  });

  it("applies a mutation once across an unknown commit outcome: the re-send after recovery is answered from its receipt", async () => {
    const { node, runtime } = await setup();
    // The segment create lands but its response is lost, and reading the slot back fails too.
    node.store.inject({ operations: ["create"], once: true, effect: "lose-response" });
    node.store.inject({ operations: ["get"], once: true, effect: "transient" });
    const unknown = await rejection(runtime.runMutation("counters:increment", { name: "once" }, { clientId: "phone", seq: 1 }));
    expect(unknown.code).toBe("ENGINE_POISONED");
    // Not retried as a conflict, not reported as a definite failure; no write is accepted until re-acquired.
    expect((await rejection(runtime.runMutation("counters:increment", { name: "once" }, { clientId: "phone", seq: 1 }))).code).toBe("ENGINE_POISONED");
    await node.engine.acquire();
    const resent = await runtime.runMutation("counters:increment", { name: "once" }, { clientId: "phone", seq: 1 });
    expect(resent).toMatchObject({ value: 1, replayed: true });
    expect((await runtime.runQuery("counters:get", { name: "once" })).value).toBe(1);
    expect((await runtime.runMutation("counters:increment", { name: "once" }, { clientId: "phone", seq: 2 })).value).toBe(2);
  });

  it("a mutation reads its own writes, through get and through indexes", async () => {
    const { runtime } = await setup();
    const { value } = await runtime.runMutation("misc:ownWrites");
    expect(value).toEqual({ index: "new", get: "patched", beforeMove: "patched", afterMove: null });
    expect((await runtime.runQuery("items:all")).value).toEqual([1_000_001]);
  });

  it("stores every value kind and reads it back unchanged", async () => {
    const { runtime } = await setup();
    const item = (await runtime.runMutation("items:insert", { n: 1 })).value as string;
    const doc = {
      s: "text ✓",
      n: -0,
      i: -(2n ** 63n),
      b: true,
      nul: null,
      bytes: new Uint8Array([0, 1, 255]),
      arr: [1, Number.NaN, Number.POSITIVE_INFINITY],
      obj: { x: "x" },
      u: 3,
      lit: "a",
      ref: item,
      any: { nested: [1n, { deep: new Uint8Array([9]) }] },
    };
    const id = (await runtime.runMutation("everything:insert", { doc })).value as string;
    const stored = (await runtime.runQuery("everything:get", { id })).value as Record<string, unknown>;
    expect(stored).toMatchObject({ ...doc, _id: id });
    expect(Object.is(stored["n"], -0)).toBe(true);
    expect(typeof stored["_creationTime"]).toBe("number");
  });

  it("refuses every bad call with a typed error that writes nothing and spares other callers", async () => {
    const { node, runtime } = await setup();
    const item = (await runtime.runMutation("items:insert", { n: 1 })).value as string;
    const counter = (await runtime.runMutation("counters:increment", { name: "c" })).value;
    expect(counter).toBe(1);
    const before = node.engine.position.nextSeqno;

    expect((await rejection(runtime.runQuery("nope:missing"))).code).toBe("FUNCTION_NOT_FOUND");
    expect((await rejection(runtime.runQuery("items:insert", { n: 1 }))).code).toBe("FUNCTION_NOT_FOUND");
    expect((await rejection(runtime.runMutation("items:page", {}))).code).toBe("FUNCTION_NOT_FOUND");
    expect((await rejection(runtime.runQuery("misc:secret"))).code).toBe("FUNCTION_NOT_FOUND");
    expect((await runtime.runQuery("misc:secret", {}, { internal: true })).value).toBe("internal");

    const wrongType = await rejection(runtime.runMutation("items:insert", { n: "one" }));
    expect(wrongType).toMatchObject({ code: "INVALID_ARGUMENT", details: { path: "args.n" } });
    expect((await rejection(runtime.runMutation("items:insert", {}))).details["path"]).toBe("args.n");
    expect((await rejection(runtime.runMutation("items:insert", { n: 1, extra: true }))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(runtime.runMutation("items:insert", "not an object"))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(runtime.runQuery("items:get", { id: "not-an-id" }))).details["path"]).toBe("args.id");
    expect((await rejection(runtime.runQuery("items:get", { id: counterId(runtime) }))).details["path"]).toBe("args.id");

    const full = { s: "", n: 1, i: 1n, b: false, nul: null, bytes: new Uint8Array(), arr: [], obj: { x: "" }, u: "u", lit: "a" };
    const nested = await rejection(runtime.runMutation("everything:insert", { doc: { ...full, obj: { x: 1 } } }));
    expect(nested).toMatchObject({ code: "INVALID_ARGUMENT", details: { path: "everything.obj.x" } });
    expect((await rejection(runtime.runMutation("everything:insert", { doc: { ...full, i: 1.5 } }))).details["path"]).toBe("everything.i");
    expect((await rejection(runtime.runMutation("everything:insert", { doc: { ...full, lit: "b" } }))).details["path"]).toBe("everything.lit");
    expect((await rejection(runtime.runMutation("everything:insert", { doc: { ...full, ref: counterId(runtime) } }))).details["path"]).toBe("everything.ref");
    expect((await rejection(runtime.runMutation("everything:insert", { doc: { ...full, _id: item } }))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(runtime.runMutation("everything:insert", { doc: { ...full, s: "\ud800" } }))).code).toBe("INVALID_ARGUMENT");

    expect((await rejection(runtime.runMutation("misc:huge"))).code).toBe("VALUE_TOO_LARGE");
    const thrown = await rejection(runtime.runMutation("misc:throws"));
    expect(thrown).toMatchObject({ code: "FUNCTION_FAILED", kind: "Internal" });
    expect(thrown.message).toMatch(/request id [0-9a-f]+/);
    expect((await rejection(runtime.runQuery("misc:badReturn"))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(runtime.runQuery("misc:typedReturn"))).details["path"]).toBe("result");
    expect((await rejection(runtime.runMutation("items:remove", { id: "0".repeat(5) }))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(runtime.runQuery("items:page", { cursor: "garbage!", numItems: 5 }))).code).toBe("INVALID_ARGUMENT");
    const otherOrder = ((await runtime.runQuery("items:page", { cursor: null, numItems: 1, order: "desc" })).value as { continueCursor: string }).continueCursor;
    expect((await rejection(runtime.runQuery("items:page", { cursor: otherOrder, numItems: 1 }))).message).toContain("another query");
    expect((await rejection(runtime.runQuery("items:page", { cursor: null, numItems: 0 }))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(runtime.runQuery("items:take", { count: 1_000_000 }))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(runtime.runMutation("items:insert", { n: 1 }, { clientId: "", seq: 1 }))).code).toBe("INVALID_ARGUMENT");
    expect((await rejection(runtime.runMutation("items:insert", { n: 1 }, { clientId: "c", seq: -1 }))).code).toBe("INVALID_ARGUMENT");

    // Nothing above reached the log, and a bad call among good ones harms none of them.
    expect(node.engine.position.nextSeqno).toBe(before);
    const mixed = await Promise.allSettled([
      runtime.runMutation("counters:increment", { name: "c" }),
      runtime.runMutation("misc:throws"),
      runtime.runMutation("items:insert", { n: "bad" }),
      runtime.runMutation("counters:increment", { name: "c" }),
    ]);
    expect(mixed.map((result) => result.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect((await runtime.runQuery("counters:get", { name: "c" })).value).toBe(3);
    expect((await runtime.runQuery("items:all")).value).toEqual([1]);
  });

  it("actions call queries and mutations, internal ones included; identities reach ctx.auth", async () => {
    const { runtime } = await setup();
    expect((await runtime.runAction("misc:callsInternal", { name: "x" })).value).toEqual({ secret: "internal", value: 100 });
    expect((await runtime.runQuery("misc:whoAmI", {}, { identity: { subject: "user-1" } })).value).toBe("user-1");
    expect((await runtime.runQuery("misc:whoAmI")).value).toBeNull();
  });
});

/** A well-formed id of the counters table: the id validators must refuse it where an items id is expected. */
function counterId(runtime: FunctionRuntime): string {
  return newDocumentId(runtime.catalog.table("counters").number, new SeededRandom(5));
}

describe("functions runtime: re-runs and determinism", () => {
  const harness = harnessPerTest(BUCKET_FACTORIES[0]!);

  it("re-runs a mutation that lost a race with the same ctx.now() and ctx.random()", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const seen: { now: number; random: number }[] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started: () => void = () => undefined;
    const reading = new Promise<void>((resolve) => (started = resolve));
    const schema = defineSchema({ counters: defineTable({ name: v.string(), value: v.number() }).index("by_name", ["name"]) });
    const { mutation } = functionsFor(schema);
    const slow = mutation({
      handler: async (ctx) => {
        const counter = await ctx.db.query("counters").first();
        seen.push({ now: ctx.now(), random: ctx.random() });
        if (seen.length === 1) {
          started();
          await gate;
        }
        if (counter === null) await ctx.db.insert("counters", { name: "n", value: 1 });
        else await ctx.db.patch(counter._id, { value: counter.value + 1 });
        return seen.length;
      },
    });
    const fast = mutation({ handler: async (ctx) => ctx.db.insert("counters", { name: "n", value: 10 }) });
    const app = App.fromModule({ schema, functions: { c: { slow, fast } } });
    const runtime = new FunctionRuntime({ app, catalog: await resolveCatalog(h.bucket, schema, new SeededRandom(1)), shard: node.engine });
    const slowRun = runtime.runMutation("c:slow");
    await reading;
    await runtime.runMutation("c:fast");
    release();
    const run = await slowRun;
    expect(run.attempts).toBe(2);
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
    await expect(runtime.runMutation("c:fast").then(() => runtime.runMutation("c:slow"))).resolves.toMatchObject({ attempts: 1 });
  });

  it("fails a database call made after the handler returned", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const schema = defineSchema({ t: defineTable({ x: v.number() }) });
    const { mutation } = functionsFor(schema);
    let late: Promise<unknown> = Promise.resolve();
    const leaky = mutation({
      handler: async (ctx) => {
        late = new Promise((resolve) => setTimeout(resolve, 5)).then(() => ctx.db.insert("t", { x: 1 }));
        return null;
      },
    });
    const app = App.fromModule({ schema, functions: { m: { leaky } } });
    const runtime = new FunctionRuntime({ app, catalog: await resolveCatalog(h.bucket, schema, new SeededRandom(1)), shard: node.engine });
    await runtime.runMutation("m:leaky");
    await expect(late).rejects.toSatisfy(code("INVALID_ARGUMENT"));
  });
});

describe("functions runtime: bounds and misuse", () => {
  const harness = harnessPerTest(BUCKET_FACTORIES[0]!);

  it("bounds collect, take, writes per mutation and index ranges, with typed errors", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const schema = defineSchema({ t: defineTable({ a: v.number(), b: v.number() }).index("by_ab", ["a", "b"]) });
    const { query, mutation } = functionsFor(schema);
    const fill = mutation({
      args: { count: v.number() },
      handler: async (ctx, { count }) => {
        for (let i = 0; i < count; i++) await ctx.db.insert("t", { a: 1, b: i });
      },
    });
    const all = query({ handler: async (ctx) => (await ctx.db.query("t").collect()).length });
    const one = query({ handler: async (ctx) => ctx.db.query("t").withIndex("by_ab", (q) => q.eq("a", 1)).unique() });
    const misuse = query({
      args: { kind: v.string() },
      handler: async (ctx, { kind }) => {
        const table = ctx.db.query("t");
        if (kind === "skip") return table.withIndex("by_ab", (q) => q.eq("b", 1)).first();
        if (kind === "after-range") return table.withIndex("by_ab", (q) => q.gt("a", 0).eq("b", 1)).first();
        if (kind === "two-lower") return table.withIndex("by_ab", (q) => q.gt("a", 0).gte("a", 1)).first();
        if (kind === "no-index") return table.withIndex("by_c").first();
        if (kind === "order") return table.order("sideways" as never).first();
        if (kind === "table") return ctx.db.query("missing" as never).first();
        return table.withIndex("by_ab", (q) => q.eq("a", 1).gt("b", 5).lte("b", 7)).collect();
      },
    });
    const app = App.fromModule({ schema, functions: { t: { fill, all, one, misuse } } });
    const runtime = new FunctionRuntime({ app, catalog: await resolveCatalog(h.bucket, schema, new SeededRandom(1)), shard: node.engine });

    await expect(runtime.runMutation("t:fill", { count: 8_193 })).rejects.toSatisfy(code("FUNCTION_LIMIT_EXCEEDED"));
    expect((await runtime.runQuery("t:all")).value).toBe(0);
    for (let i = 0; i < 2; i++) await runtime.runMutation("t:fill", { count: 8_192 });
    await expect(runtime.runQuery("t:all")).resolves.toMatchObject({ value: 16_384 });
    await runtime.runMutation("t:fill", { count: 1 });
    await expect(runtime.runQuery("t:all")).rejects.toSatisfy(code("FUNCTION_LIMIT_EXCEEDED"));
    await expect(runtime.runQuery("t:one")).rejects.toSatisfy(code("QUERY_NOT_UNIQUE"));
    for (const kind of ["skip", "after-range", "two-lower", "no-index", "order", "table"]) {
      await expect(runtime.runQuery("t:misuse", { kind }), kind).rejects.toSatisfy(code("INVALID_ARGUMENT"));
    }
    const ranged = (await runtime.runQuery("t:misuse", { kind: "range" })).value as { b: number }[];
    expect(ranged.map((row) => row.b)).toEqual([6, 6, 7, 7]);
  });
});

describe("functions runtime: time limits", () => {
  const harness = harnessPerTest(BUCKET_FACTORIES[0]!);

  it("abandons a handler that never finishes with FUNCTION_TIMEOUT; nothing it wrote commits, and others proceed", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const schema = defineSchema({ t: defineTable({ x: v.number() }) });
    const { mutation, query } = functionsFor(schema);
    let late: Promise<unknown> = Promise.resolve();
    const hang = mutation({
      handler: async (ctx) => {
        await ctx.db.insert("t", { x: 1 });
        await new Promise<void>((resolve) => setTimeout(resolve, 2_000));
        late = ctx.db.insert("t", { x: 2 }).catch((error: unknown) => error);
        return null;
      },
    });
    const add = mutation({ handler: async (ctx) => ctx.db.insert("t", { x: 3 }) });
    const count = query({ handler: async (ctx) => (await ctx.db.query("t").collect()).length });
    const app = App.fromModule({ schema, functions: { t: { hang, add, count } } });
    const runtime = new FunctionRuntime({
      app,
      catalog: await resolveCatalog(h.bucket, schema, new SeededRandom(1)),
      shard: node.engine,
      functionRunMsMax: 100,
    });
    const before = node.engine.position.nextSeqno;
    await expect(runtime.runMutation("t:hang")).rejects.toSatisfy(code("FUNCTION_TIMEOUT"));
    expect(node.engine.position.nextSeqno).toBe(before);
    await runtime.runMutation("t:add");
    expect((await runtime.runQuery("t:count")).value).toBe(1);
    await new Promise<void>((resolve) => setTimeout(resolve, 2_100));
    expect(await late).toSatisfy(code("INVALID_ARGUMENT"));
    expect((await runtime.runQuery("t:count")).value).toBe(1);
    expect(() => new FunctionRuntime({ app, catalog: runtime.catalog, shard: node.engine, functionRunMsMax: 0 })).toThrow(/functionRunMsMax/);
  });
});
