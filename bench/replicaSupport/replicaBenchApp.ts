/**
 * The app bench:replica serves on every node: named counters (bench:sync's, one query and
 * one mutation each, so a benchmark chooses which subscription a commit affects) and
 * plain documents the catch-up load inserts, one per mutation, without an index.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  counters: defineTable({ name: v.string(), value: v.number() }).index("by_name", ["name"]),
  documents: defineTable({ writer: v.string(), n: v.number(), body: v.string() }),
});

const { query, mutation } = functionsFor(schema);

export const counters = {
  get: query({
    args: { name: v.string() },
    handler: async (ctx, { name }) => (await ctx.db.query("counters").withIndex("by_name", (q) => q.eq("name", name)).unique())?.value ?? 0,
  }),
  bump: mutation({
    args: { name: v.string() },
    handler: async (ctx, { name }) => {
      const row = await ctx.db.query("counters").withIndex("by_name", (q) => q.eq("name", name)).unique();
      if (row === null) {
        await ctx.db.insert("counters", { name, value: 1 });
        return 1;
      }
      await ctx.db.patch(row._id, { value: row.value + 1 });
      return row.value + 1;
    },
  }),
};

export const documents = {
  /** One document per call; the caller sizes `body`. */
  insert: mutation({
    args: { writer: v.string(), n: v.number(), body: v.string() },
    handler: async (ctx, document) => ctx.db.insert("documents", document),
  }),
};

export const functions = { counters, documents };
