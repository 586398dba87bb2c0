/**
 * The app of the Convex-import test: users and their messages (sharded by channel, each
 * naming its author and maybe the message it replies to), with an int64, bytes and a float
 * field, so that every kind of value and of reference in a Convex export is exercised.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  users: defineTable({ name: v.string(), age: v.int64(), avatar: v.optional(v.bytes()) }),
  messages: defineTable({
    author: v.id("users"),
    channel: v.string(),
    body: v.string(),
    score: v.number(),
    replyTo: v.union(v.id("messages"), v.null()),
  })
    .index("by_channel", ["channel"])
    .shardKey("channel"),
});
const { query } = functionsFor(schema);
export const functions = {
  messages: {
    /** Every message with its author's name and the body it replies to, read through the references. */
    threads: query({
      args: {},
      handler: async (ctx) => {
        const out: { body: string; author: string; age: string; avatar: number | null; score: number; replyTo: string | null; channel: string }[] = [];
        for (const channel of ["general", "random", "dev"]) {
          for (const message of await ctx.db.query("messages").withIndex("by_channel", (q) => q.eq("channel", channel)).collect()) {
            const author = (await ctx.db.get(message.author))!;
            const parent = message.replyTo === null ? null : await ctx.db.get(message.replyTo);
            out.push({ body: message.body, author: author.name, age: String(author.age), avatar: author.avatar?.byteLength ?? null, score: message.score, replyTo: parent?.body ?? null, channel });
          }
        }
        return out.sort((a, b) => a.body.localeCompare(b.body));
      },
    }),
  },
};
