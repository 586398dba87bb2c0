import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

/**
 * The app `bench:restore` runs: items of 1,000 owners with an index by owner and n,
 * written in bulk to build a store, then rewritten in bulk to give it history (the log
 * after its snapshot that a restore replays).
 */
export const schema = defineSchema({
  items: defineTable({ owner: v.string(), n: v.number(), body: v.string(), version: v.number() }).index("by_owner", ["owner", "n"]),
});

const { mutation } = functionsFor(schema);

export const functions = {
  items: {
    /** `count` items of one owner, numbered from `from`. */
    addMany: mutation({
      args: { owner: v.string(), from: v.number(), count: v.number(), body: v.string() },
      handler: async (ctx, { owner, from, count, body }) => {
        for (let n = from; n < from + count; n++) await ctx.db.insert("items", { owner, n, body, version: 0 });
      },
    }),
    /** A new version of the items of one owner numbered in [from, from + count). */
    touchMany: mutation({
      args: { owner: v.string(), from: v.number(), count: v.number(), version: v.number() },
      handler: async (ctx, { owner, from, count, version }) => {
        const items = await ctx.db.query("items").withIndex("by_owner", (q) => q.eq("owner", owner).gte("n", from).lt("n", from + count)).collect();
        for (const item of items) await ctx.db.patch(item._id, { version });
        return items.length;
      },
    }),
  },
};
