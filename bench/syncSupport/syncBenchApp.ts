/**
 * The app bench:sync serves: named counters, each read by one query and bumped by one
 * mutation, so a benchmark chooses exactly which subscriptions a commit affects.
 * `counters:getFor` reads the same counter as `counters:get`, but its `viewer` argument
 * makes each subscriber's query distinct, so the server runs it once per subscriber
 * rather than once per commit.
 */
import { defineSchema, defineTable, functionsFor, v, type DatabaseReaderOf } from "../../src/functions/index.js";

export const schema = defineSchema({
  counters: defineTable({ name: v.string(), value: v.number() }).index("by_name", ["name"]),
});

const { query, mutation } = functionsFor(schema);

async function valueOf(db: DatabaseReaderOf<typeof schema>, name: string): Promise<number> {
  return (await db.query("counters").withIndex("by_name", (q) => q.eq("name", name)).unique())?.value ?? 0;
}

export const counters = {
  get: query({
    args: { name: v.string() },
    handler: async (ctx, { name }) => valueOf(ctx.db, name),
  }),
  getFor: query({
    args: { name: v.string(), viewer: v.number() },
    handler: async (ctx, { name }) => valueOf(ctx.db, name),
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
