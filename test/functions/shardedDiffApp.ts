/**
 * The sharded app of the diff tests (issue 30): messages sharded by channel, with an
 * index by channel (each range on one shard) and one by n (every range across shards),
 * diffable queries over both, and mutations that write one channel each.
 */
import { defineSchema, defineTable, functionsFor, paginationOptsValidator, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  messages: defineTable({ channel: v.string(), n: v.number(), body: v.string() }).index("by_channel", ["channel", "n"]).index("by_n", ["n"]).shardKey("channel"),
});

const { query, mutation } = functionsFor(schema);
const order = v.union(v.literal("asc"), v.literal("desc"));

const messages = {
  inChannel: query({
    args: { channel: v.string(), order, n: v.number() },
    handler: async (ctx, { channel, order, n }) => ctx.db.query("messages").withIndex("by_channel", (q) => q.eq("channel", channel)).order(order).take(n),
  }),
  byN: query({ args: { order, n: v.number() }, handler: async (ctx, { order, n }) => ctx.db.query("messages").withIndex("by_n").order(order).take(n) }),
  all: query({ args: {}, handler: async (ctx) => ctx.db.query("messages").withIndex("by_n").collect() }),
  page: query({ args: { paginationOpts: paginationOptsValidator }, handler: async (ctx, { paginationOpts }) => ctx.db.query("messages").withIndex("by_n").order("desc").paginate(paginationOpts) }),
  get: query({ args: { id: v.id("messages") }, handler: async (ctx, { id }) => ctx.db.get(id) }),
  send: mutation({ args: { channel: v.string(), n: v.number(), body: v.string() }, shardBy: "channel", handler: async (ctx, args) => ctx.db.insert("messages", args) }),
  edit: mutation({
    args: { channel: v.string(), id: v.id("messages"), n: v.optional(v.number()), body: v.optional(v.string()) },
    shardBy: "channel",
    handler: async (ctx, { id, n, body }) => ctx.db.patch(id, { ...(n === undefined ? {} : { n }), ...(body === undefined ? {} : { body }) }),
  }),
  remove: mutation({ args: { channel: v.string(), id: v.id("messages") }, shardBy: "channel", handler: async (ctx, { id }) => ctx.db.delete(id) }),
};

export const functions = { messages };
