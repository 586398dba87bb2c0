/**
 * The app bench:sync serves: named counters, each read by one query and bumped by one
 * mutation, so a benchmark chooses exactly which subscriptions a commit affects.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  counters: defineTable({ name: v.string(), value: v.number() }).index("by_name", ["name"]),
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

export const functions = { counters };
