/**
 * The app of the sharding tests: messages sharded by channel (with an index that starts
 * with the shard key and one that does not), an unsharded settings table (shard 0), and
 * mutations that stay on their lane or try not to.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  messages: defineTable({ channel: v.string(), n: v.number(), body: v.string() }).index("by_channel", ["channel", "n"]).index("by_n", ["n"]).shardKey("channel"),
  settings: defineTable({ name: v.string(), value: v.string() }).index("by_name", ["name"]),
});
const { query, mutation } = functionsFor(schema);
export const functions = {
  messages: {
    send: mutation({
      args: { channel: v.string(), n: v.number(), body: v.string() },
      shardBy: "channel",
      handler: async (ctx, args) => ctx.db.insert("messages", args),
    }),
    sendMany: mutation({
      args: { channel: v.string(), from: v.number(), count: v.number() },
      shardBy: "channel",
      handler: async (ctx, { channel, from, count }) => {
        for (let n = from; n < from + count; n++) await ctx.db.insert("messages", { channel, n, body: `m${n}` });
      },
    }),
    sendTwice: mutation({
      args: { channel: v.string(), other: v.string() },
      shardBy: "channel",
      handler: async (ctx, { channel, other }) => {
        await ctx.db.insert("messages", { channel, n: 0, body: "first" });
        await ctx.db.insert("messages", { channel: other, n: 0, body: "second" });
      },
    }),
    countIn: mutation({
      args: { channel: v.string() },
      shardBy: (args: { channel: string }) => args.channel,
      handler: async (ctx, { channel }) => (await ctx.db.query("messages").withIndex("by_channel", (q) => q.eq("channel", channel)).collect()).length,
    }),
    countAll: mutation({
      args: { channel: v.string() },
      shardBy: "channel",
      handler: async (ctx) => (await ctx.db.query("messages").withIndex("by_n").collect()).length,
    }),
    move: mutation({
      args: { id: v.id("messages"), channel: v.string(), to: v.string() },
      shardBy: "channel",
      handler: async (ctx, { id, to }) => ctx.db.patch(id, { channel: to }),
    }),
    edit: mutation({
      args: { id: v.id("messages"), channel: v.string(), body: v.string() },
      shardBy: "channel",
      handler: async (ctx, { id, body }) => ctx.db.patch(id, { body }),
    }),
    byN: query({
      args: { order: v.union(v.literal("asc"), v.literal("desc")), take: v.number() },
      handler: async (ctx, { order, take }) => (await ctx.db.query("messages").withIndex("by_n").order(order).take(take)).map((m) => m.n),
    }),
    page: query({
      args: { cursor: v.union(v.string(), v.null()), numItems: v.number() },
      handler: async (ctx, { cursor, numItems }) => {
        const page = await ctx.db.query("messages").withIndex("by_n").paginate({ cursor, numItems });
        return { ns: page.page.map((m) => m.n), cursor: page.continueCursor, isDone: page.isDone };
      },
    }),
    inChannel: query({
      args: { channel: v.string() },
      handler: async (ctx, { channel }) => (await ctx.db.query("messages").withIndex("by_channel", (q) => q.eq("channel", channel)).collect()).map((m) => m.n),
    }),
    get: query({ args: { id: v.id("messages") }, handler: async (ctx, { id }) => (await ctx.db.get(id))?.body ?? null }),
  },
  settings: {
    set: mutation({ args: { name: v.string(), value: v.string() }, handler: async (ctx, args) => ctx.db.insert("settings", args) }),
    setFrom: mutation({
      args: { channel: v.string(), name: v.string() },
      shardBy: "channel",
      handler: async (ctx, { name }) => ctx.db.insert("settings", { name, value: "x" }),
    }),
  },
};

