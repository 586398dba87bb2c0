import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

/**
 * The app `bench:reshard` runs: items sharded by owner (10,000 owners), each with an index
 * entry that starts with the shard key, written in bulk to build a store and one at a
 * time by the throughput clients.
 */
export const schema = defineSchema({
  items: defineTable({ owner: v.string(), n: v.number(), body: v.string() }).index("by_owner", ["owner", "n"]).shardKey("owner"),
});

const { query, mutation } = functionsFor(schema);

export const functions = {
  items: {
    add: mutation({
      args: { owner: v.string(), n: v.number(), body: v.string() },
      shardBy: "owner",
      handler: async (ctx, args) => ctx.db.insert("items", args),
    }),
    /** `count` items of one owner (one shard), numbered from `from`. */
    addMany: mutation({
      args: { owner: v.string(), from: v.number(), count: v.number(), body: v.string() },
      shardBy: "owner",
      handler: async (ctx, { owner, from, count, body }) => {
        for (let n = from; n < from + count; n++) await ctx.db.insert("items", { owner, n, body });
      },
    }),
    ofOwner: query({
      args: { owner: v.string() },
      handler: async (ctx, { owner }) => (await ctx.db.query("items").withIndex("by_owner", (q) => q.eq("owner", owner)).collect()).length,
    }),
  },
};
