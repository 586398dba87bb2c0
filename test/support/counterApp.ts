/**
 * Named counters, each read by one query and bumped by one mutation (which creates it at
 * 1), so a test or a benchmark chooses exactly which subscriptions a commit affects. The
 * apps of the sync and functions tests and of bench:sync and bench:replica serve them
 * beside their own tables: each takes `countersTable` into its schema and `counters` into
 * its functions (under its own names where it must).
 */
import { defineSchema, defineTable, functionsFor, v, type DatabaseReaderOf } from "../../src/functions/index.js";

export const countersTable = defineTable({ name: v.string(), value: v.number() }).index("by_name", ["name"]);

/** The counters alone. */
export const schema = defineSchema({ counters: countersTable });

const { query, mutation } = functionsFor(schema);

/** Counter `name`'s value: 0 until its first bump. */
export async function counterValue(db: DatabaseReaderOf<typeof schema>, name: string): Promise<number> {
  return (await db.query("counters").withIndex("by_name", (q) => q.eq("name", name)).unique())?.value ?? 0;
}

export const counters = {
  get: query({
    args: { name: v.string() },
    handler: async (ctx, { name }) => counterValue(ctx.db, name),
  }),
  /** Adds 1 to counter `name` (creating it at 1) and returns its new value. */
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
