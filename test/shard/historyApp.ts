/**
 * The app of the history tests (retention, restore): notes sharded by channel, with an
 * index that starts with the shard key and one that does not, edited, renumbered (an
 * index entry moves) and deleted, so that a past state differs from the present in
 * documents and in index entries.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  notes: defineTable({ channel: v.string(), n: v.number(), body: v.string() }).index("by_channel", ["channel", "n"]).index("by_n", ["n"]).shardKey("channel"),
});
const { query, mutation } = functionsFor(schema);
export const functions = {
  notes: {
    add: mutation({
      args: { channel: v.string(), n: v.number(), body: v.string() },
      shardBy: "channel",
      handler: async (ctx, args) => ctx.db.insert("notes", args),
    }),
    edit: mutation({
      args: { id: v.id("notes"), channel: v.string(), body: v.string() },
      shardBy: "channel",
      handler: async (ctx, { id, body }) => ctx.db.patch(id, { body }),
    }),
    renumber: mutation({
      args: { id: v.id("notes"), channel: v.string(), n: v.number() },
      shardBy: "channel",
      handler: async (ctx, { id, n }) => ctx.db.patch(id, { n }),
    }),
    remove: mutation({
      args: { id: v.id("notes"), channel: v.string() },
      shardBy: "channel",
      handler: async (ctx, { id }) => ctx.db.delete(id),
    }),
    /** Every note, by n then id, through the index that spans the shards. */
    all: query({
      args: {},
      handler: async (ctx) => (await ctx.db.query("notes").withIndex("by_n").collect()).map(({ _id, channel, n, body }) => ({ id: _id, channel, n, body })),
    }),
    /** The notes of `ids` read one by one (null for one that does not exist): documents, not index entries. */
    byIds: query({
      args: { ids: v.array(v.id("notes")) },
      handler: async (ctx, { ids }) =>
        Promise.all(
          ids.map(async (id) => {
            const note = await ctx.db.get(id);
            return note === null ? null : { id: note._id, channel: note.channel, n: note.n, body: note.body };
          }),
        ),
    }),
    /** One channel's ns, through the index that starts with the shard key. */
    inChannel: query({
      args: { channel: v.string() },
      handler: async (ctx, { channel }) => (await ctx.db.query("notes").withIndex("by_channel", (q) => q.eq("channel", channel)).collect()).map((note) => note.n),
    }),
  },
};
