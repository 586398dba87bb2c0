/**
 * The app bench:fleet serves on every node: chat messages sharded by channel (a channel's
 * messages all live on one shard, so a mutation commits on one shard's log), one mutation
 * that posts a message and one query that reads a channel's newest message number.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  messages: defineTable({ channel: v.string(), author: v.string(), n: v.number(), body: v.string() }).index("by_channel", ["channel", "n"]).shardKey("channel"),
});

const { query, mutation } = functionsFor(schema);

export const messages = {
  /** One message, inserted with its `by_channel` entry on the channel's shard. */
  send: mutation({
    args: { channel: v.string(), author: v.string(), n: v.number(), body: v.string() },
    shardBy: "channel",
    handler: async (ctx, message) => ctx.db.insert("messages", message),
  }),
  /** The highest message number in `channel` (0 when it has none): what the cross-node probe subscribes to. */
  latest: query({
    args: { channel: v.string() },
    handler: async (ctx, { channel }) => (await ctx.db.query("messages").withIndex("by_channel", (q) => q.eq("channel", channel)).order("desc").first())?.n ?? 0,
  }),
};

export const functions = { messages };
