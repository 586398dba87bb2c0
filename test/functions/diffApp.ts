/**
 * The app of the diff tests (issue 30): items with a group, a rank and a label, indexed by
 * group then rank and by rank alone; queries of every diffable read (a document by id,
 * take in both orders over an equality and over a rank range, collect, first and pinned
 * pages, the by_id index) and, as controls, queries that are not diffable (they look at
 * their rows, read twice, filter, or wrap the result).
 */
import { defineSchema, defineTable, functionsFor, paginationOptsValidator, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  items: defineTable({ group: v.string(), rank: v.number(), label: v.string() }).index("by_group", ["group", "rank"]).index("by_rank", ["rank"]),
  notes: defineTable({ text: v.string() }),
});

const { query, mutation } = functionsFor(schema);

const order = v.union(v.literal("asc"), v.literal("desc"));
const item = v.object({ group: v.string(), rank: v.number(), label: v.string() });

const items = {
  get: query({ args: { id: v.id("items") }, handler: async (ctx, { id }) => ctx.db.get(id) }),
  ofGroup: query({
    args: { group: v.string(), order, n: v.number() },
    handler: async (ctx, { group, order, n }) => await ctx.db.query("items").withIndex("by_group", (q) => q.eq("group", group)).order(order).take(n),
  }),
  ofRanks: query({
    args: { lo: v.number(), hi: v.number(), order, n: v.number() },
    handler: (ctx, { lo, hi, order, n }) => ctx.db.query("items").withIndex("by_rank", (q) => q.gte("rank", lo).lt("rank", hi)).order(order).take(n),
  }),
  allOfGroup: query({
    args: { group: v.string() },
    handler: async (ctx, { group }) => ctx.db.query("items").withIndex("by_group", (q) => q.eq("group", group)).collect(),
  }),
  byId: query({ args: { order, n: v.number() }, handler: async (ctx, { order, n }) => ctx.db.query("items").withIndex("by_id").order(order).take(n) }),
  page: query({
    args: { group: v.string(), order, paginationOpts: paginationOptsValidator },
    handler: async (ctx, { group, order, paginationOpts }) =>
      ctx.db.query("items").withIndex("by_group", (q) => q.eq("group", group)).order(order).paginate(paginationOpts),
  }),
  // Not diffable: each looks at, filters or wraps what it read, or reads twice.
  labels: query({
    args: { group: v.string() },
    handler: async (ctx, { group }) => (await ctx.db.query("items").withIndex("by_group", (q) => q.eq("group", group)).take(5)).map((row) => row.label),
  }),
  someOrNone: query({
    args: { group: v.string() },
    handler: async (ctx, { group }) => {
      const rows = await ctx.db.query("items").withIndex("by_group", (q) => q.eq("group", group)).take(5);
      return rows.length > 2 ? rows : [];
    },
  }),
  twoReads: query({
    args: { group: v.string() },
    handler: async (ctx, { group }) => {
      await ctx.db.query("notes").take(1);
      return ctx.db.query("items").withIndex("by_group", (q) => q.eq("group", group)).take(5);
    },
  }),
  filtered: query({
    args: { group: v.string() },
    handler: async (ctx, { group }) =>
      ctx.db
        .query("items")
        .withIndex("by_group", (q) => q.eq("group", group))
        .filter((q) => q.neq(q.field("label"), "x"))
        .take(5),
  }),
  wrapped: query({
    args: { group: v.string() },
    handler: async (ctx, { group }) => ({ rows: await ctx.db.query("items").withIndex("by_group", (q) => q.eq("group", group)).take(5) }),
  }),
  mutatedLater: query({
    args: { group: v.string() },
    handler: (ctx, { group }) => {
      const read = ctx.db.query("items").withIndex("by_group", (q) => q.eq("group", group)).take(5);
      void read.then((rows) => rows.pop());
      return read;
    },
  }),
  recentOnly: query({
    args: { group: v.string() },
    handler: async (ctx, { group }) =>
      ctx.db
        .query("items")
        .withIndex("by_group", (q) => q.eq("group", group).gte("rank", ctx.now() > 0 ? 0 : 1))
        .take(5),
  }),
  cloned: query({
    args: { group: v.string() },
    handler: async (ctx, { group }) => structuredClone(await ctx.db.query("items").withIndex("by_group", (q) => q.eq("group", group)).take(5)),
  }),
  first: query({ args: { group: v.string() }, handler: async (ctx, { group }) => ctx.db.query("items").withIndex("by_group", (q) => q.eq("group", group)).first() }),

  insert: mutation({ args: { items: v.array(item) }, handler: async (ctx, { items }) => Promise.all(items.map((fields) => ctx.db.insert("items", fields))) }),
  change: mutation({
    args: { edits: v.array(v.object({ id: v.id("items"), group: v.optional(v.string()), rank: v.optional(v.number()), label: v.optional(v.string()) })) },
    handler: async (ctx, { edits }) => {
      for (const { id, ...fields } of edits) await ctx.db.patch(id, fields);
    },
  }),
  remove: mutation({
    args: { ids: v.array(v.id("items")) },
    handler: async (ctx, { ids }) => {
      for (const id of ids) await ctx.db.delete(id);
    },
  }),
  note: mutation({ args: { text: v.string() }, handler: async (ctx, { text }) => ctx.db.insert("notes", { text }) }),
};

export const functions = { items };
