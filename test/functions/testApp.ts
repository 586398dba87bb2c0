/**
 * The app the functions tests run: named counters (test/support/counterApp.ts's, bumped
 * as `counters:increment`), the on-call doctors of the write-skew example, ordered items
 * for pagination and range tests, a table with a field of every value kind, and
 * functions that misbehave on purpose.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";
import { counters as namedCounters, countersTable } from "../support/counterApp.js";

export const schema = defineSchema({
  counters: countersTable,
  doctors: defineTable({ name: v.string(), onCall: v.boolean() }).index("by_onCall", ["onCall"]),
  items: defineTable({ n: v.number(), tag: v.string() }).index("by_n", ["n"]),
  everything: defineTable({
    s: v.string(),
    n: v.number(),
    i: v.int64(),
    b: v.boolean(),
    nul: v.null(),
    bytes: v.bytes(),
    arr: v.array(v.number()),
    obj: v.object({ x: v.string(), y: v.optional(v.number()) }),
    opt: v.optional(v.string()),
    u: v.union(v.string(), v.number()),
    lit: v.literal("a"),
    ref: v.optional(v.id("items")),
    any: v.optional(v.any()),
  }),
});

const { query, mutation, action, internalQuery, internalMutation } = functionsFor(schema);

const counters = { get: namedCounters.get, increment: namedCounters.bump };

const doctors = {
  add: mutation({
    args: { name: v.string() },
    handler: async (ctx, { name }) => ctx.db.insert("doctors", { name, onCall: true }),
  }),
  /** Goes off call only if another doctor stays on call. */
  goOffCall: mutation({
    args: { id: v.id("doctors") },
    handler: async (ctx, { id }) => {
      const onCall = await ctx.db.query("doctors").withIndex("by_onCall", (q) => q.eq("onCall", true)).collect();
      if (onCall.length < 2 || !onCall.some((doctor) => doctor._id === id)) return false;
      await ctx.db.patch(id, { onCall: false });
      return true;
    },
  }),
  onCall: query({
    handler: async (ctx) => (await ctx.db.query("doctors").withIndex("by_onCall", (q) => q.eq("onCall", true)).collect()).map((doctor) => doctor.name),
  }),
};

const items = {
  insert: mutation({
    args: { n: v.number(), tag: v.optional(v.string()) },
    handler: async (ctx, { n, tag }) => ctx.db.insert("items", { n, tag: tag ?? "" }),
  }),
  insertMany: mutation({
    args: { from: v.number(), count: v.number() },
    handler: async (ctx, { from, count }) => {
      const ids = [];
      for (let n = from; n < from + count; n++) ids.push(await ctx.db.insert("items", { n, tag: "" }));
      return ids;
    },
  }),
  remove: mutation({
    args: { id: v.id("items") },
    handler: async (ctx, { id }) => ctx.db.delete(id),
  }),
  removeMany: mutation({
    args: { ids: v.array(v.id("items")) },
    handler: async (ctx, { ids }) => {
      for (const id of ids) await ctx.db.delete(id);
    },
  }),
  retag: mutation({
    args: { id: v.id("items"), tag: v.string() },
    handler: async (ctx, { id, tag }) => ctx.db.patch(id, { tag }),
  }),
  page: query({
    args: { cursor: v.union(v.string(), v.null()), numItems: v.number(), order: v.optional(v.union(v.literal("asc"), v.literal("desc"))) },
    handler: async (ctx, { cursor, numItems, order }) => ctx.db.query("items").withIndex("by_n").order(order ?? "asc").paginate({ cursor, numItems }),
  }),
  take: query({
    args: { count: v.number(), order: v.optional(v.union(v.literal("asc"), v.literal("desc"))), atLeast: v.optional(v.number()) },
    handler: async (ctx, { count, order, atLeast }) =>
      (await ctx.db.query("items").withIndex("by_n", (q) => (atLeast === undefined ? q : q.gte("n", atLeast))).order(order ?? "asc").take(count)).map((item) => item.n),
  }),
  between: query({
    args: { low: v.number(), high: v.number() },
    handler: async (ctx, { low, high }) =>
      (await ctx.db.query("items").withIndex("by_n", (q) => q.gt("n", low).lte("n", high)).collect()).map((item) => item.n),
  }),
  get: query({
    args: { id: v.id("items") },
    handler: async (ctx, { id }) => ctx.db.get(id),
  }),
  all: query({ handler: async (ctx) => (await ctx.db.query("items").collect()).map((item) => item.n) }),
  byId: query({
    args: { order: v.optional(v.union(v.literal("asc"), v.literal("desc"))), after: v.optional(v.string()), upTo: v.optional(v.string()), count: v.number() },
    handler: async (ctx, { order, after, upTo, count }) =>
      (
        await ctx.db
          .query("items")
          .withIndex("by_id", (q) => {
            const lower = after === undefined ? q : q.gt("_id", after);
            return upTo === undefined ? lower : lower.lte("_id", upTo);
          })
          .order(order ?? "asc")
          .take(count)
      ).map((item) => item._id),
  }),
  byIdExactly: query({
    args: { id: v.string() },
    handler: async (ctx, { id }) => (await ctx.db.query("items").withIndex("by_id", (q) => q.eq("_id", id)).unique())?.n ?? null,
  }),
  byIdPage: query({
    args: { cursor: v.union(v.string(), v.null()), numItems: v.number() },
    handler: async (ctx, { cursor, numItems }) => ctx.db.query("items").withIndex("by_id").paginate({ cursor, numItems }),
  }),
  /** Inserts only while fewer than `max` items exist, counting them through by_id (a scan of the table keyspace). */
  insertIfFewer: mutation({
    args: { max: v.number(), n: v.number() },
    handler: async (ctx, { max, n }) => {
      const existing = await ctx.db.query("items").withIndex("by_id").take(max);
      if (existing.length >= max) return false;
      await ctx.db.insert("items", { n, tag: "" });
      const seen = await ctx.db.query("items").withIndex("by_id").collect();
      return seen.length;
    },
  }),
};

const everything = {
  insert: mutation({
    args: { doc: v.any() },
    handler: async (ctx, { doc }) => ctx.db.insert("everything", doc as never),
  }),
  get: query({ args: { id: v.id("everything") }, handler: async (ctx, { id }) => ctx.db.get(id) }),
};

const misc = {
  throws: mutation({
    handler: async (ctx) => {
      await ctx.db.insert("items", { n: -1, tag: "written before the throw" });
      throw new Error("boom");
    },
  }),
  huge: mutation({
    handler: async (ctx) => ctx.db.insert("items", { n: -2, tag: "x".repeat(1_100_000) }),
  }),
  secret: internalQuery({ handler: async () => "internal" }),
  bump: internalMutation({ args: { name: v.string() }, handler: async (ctx, { name }) => ctx.db.insert("counters", { name, value: 100 }) }),
  ownWrites: mutation({
    handler: async (ctx) => {
      const id = await ctx.db.insert("items", { n: 1_000_000, tag: "new" });
      const seenByIndex = await ctx.db.query("items").withIndex("by_n", (q) => q.eq("n", 1_000_000)).unique();
      await ctx.db.patch(id, { tag: "patched" });
      const seenByGet = await ctx.db.get(id);
      const movedAway = await ctx.db.query("items").withIndex("by_n", (q) => q.eq("n", 1_000_000)).first();
      await ctx.db.patch(id, { n: 1_000_001 });
      const afterMove = await ctx.db.query("items").withIndex("by_n", (q) => q.eq("n", 1_000_000)).first();
      return { index: seenByIndex?.tag ?? null, get: seenByGet?.tag ?? null, beforeMove: movedAway?.tag ?? null, afterMove };
    },
  }),
  deterministic: mutation({
    handler: async (ctx) => ({ now: ctx.now(), random: ctx.random() }),
  }),
  badReturn: query({ handler: async () => new Date(0) as never }),
  typedReturn: query({ returns: v.number(), handler: async () => "not a number" as never }),
  callsInternal: action({
    args: { name: v.string() },
    handler: async (ctx, { name }) => {
      const secret = await ctx.runQuery("misc:secret");
      await ctx.runMutation("misc:bump", { name });
      return { secret, value: await ctx.runQuery("counters:get", { name }) };
    },
  }),
  whoAmI: query({ handler: async (ctx) => (await ctx.auth.getUserIdentity())?.subject ?? null }),
};

export const functions = { counters, doctors, items, everything, misc };
