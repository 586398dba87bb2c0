import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

/**
 * The app `bench:functions` runs: notes written by many clients (distinct documents),
 * hot counters many clients bump (contention), and grouped rows for reads.
 */
export const schema = defineSchema({
  notes: defineTable({ client: v.string(), n: v.number() }),
  counters: defineTable({ slot: v.number(), value: v.number() }),
  rows: defineTable({ group: v.number(), n: v.number(), text: v.string() }).index("by_group", ["group"]),
});

const { query, mutation } = functionsFor(schema);

export const functions = {
  notes: {
    add: mutation({
      args: { client: v.string(), n: v.number() },
      handler: async (ctx, { client, n }) => ctx.db.insert("notes", { client, n }),
    }),
  },
  counters: {
    create: mutation({
      args: { slots: v.number() },
      handler: async (ctx, { slots }) => {
        const ids = [];
        for (let slot = 0; slot < slots; slot++) ids.push(await ctx.db.insert("counters", { slot, value: 0 }));
        return ids;
      },
    }),
    bump: mutation({
      args: { id: v.id("counters") },
      handler: async (ctx, { id }) => {
        const counter = await ctx.db.get(id);
        if (counter === null) throw new Error(`no counter ${id}`);
        await ctx.db.patch(id, { value: counter.value + 1 });
        return counter.value + 1;
      },
    }),
    total: query({ handler: async (ctx) => (await ctx.db.query("counters").collect()).reduce((sum, counter) => sum + counter.value, 0) }),
  },
  rows: {
    fill: mutation({
      args: { from: v.number(), count: v.number(), groupSize: v.number() },
      handler: async (ctx, { from, count, groupSize }) => {
        const ids = [];
        for (let n = from; n < from + count; n++) {
          ids.push(await ctx.db.insert("rows", { group: Math.floor(n / groupSize), n, text: `row ${n} of the read benchmark` }));
        }
        return ids;
      },
    }),
    /** The realistic mutation: read a row, move it to another group (its index entry moves), return what it was. */
    move: mutation({
      args: { id: v.id("rows"), group: v.number() },
      handler: async (ctx, { id, group }) => {
        const row = await ctx.db.get(id);
        if (row === null) throw new Error(`no row ${id}`);
        await ctx.db.patch(id, { group, n: row.n + 1 });
        return row.group;
      },
    }),
    get: query({ args: { id: v.id("rows") }, handler: async (ctx, { id }) => ctx.db.get(id) }),
    group: query({
      args: { group: v.number() },
      handler: async (ctx, { group }) => ctx.db.query("rows").withIndex("by_group", (q) => q.eq("group", group)).take(100),
    }),
  },
};
