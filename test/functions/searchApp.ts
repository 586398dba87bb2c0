/**
 * The app the search tests run: messages with a search index on their body filtered by
 * channel and author, and functions to write, search and page through them.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  messages: defineTable({ channel: v.string(), author: v.string(), body: v.string() })
    .index("by_channel", ["channel"])
    .searchIndex("search_body", { searchField: "body", filterFields: ["channel", "author"] }),
  notes: defineTable({ text: v.optional(v.string()) }).searchIndex("search_text", { searchField: "text" }),
});

const { query, mutation } = functionsFor(schema);

const messages = {
  send: mutation({
    args: { channel: v.string(), author: v.string(), body: v.string() },
    handler: (ctx, args) => ctx.db.insert("messages", args),
  }),
  edit: mutation({
    args: { id: v.id("messages"), body: v.string() },
    handler: async (ctx, { id, body }) => {
      await ctx.db.patch(id, { body });
      return null;
    },
  }),
  remove: mutation({
    args: { id: v.id("messages") },
    handler: async (ctx, { id }) => {
      await ctx.db.delete(id);
      return null;
    },
  }),
  search: query({
    args: { text: v.string(), channel: v.optional(v.string()), author: v.optional(v.string()), limit: v.optional(v.number()) },
    handler: async (ctx, { text, channel, author, limit }) =>
      (
        await ctx.db
          .query("messages")
          .withSearchIndex("search_body", (q) => {
            q.search("body", text);
            if (channel !== undefined) q.eq("channel", channel);
            if (author !== undefined) q.eq("author", author);
            return q;
          })
          .take(limit ?? 10)
      ).map((message) => message.body),
  }),
  /** Each way of misusing a search index, by name. */
  misuse: query({
    args: { kind: v.string() },
    handler: async (ctx, { kind }) => {
      const table = ctx.db.query("messages");
      if (kind === "otherField") return table.withSearchIndex("search_body", (q) => q.search("channel" as never, "x")).take(1);
      if (kind === "undeclaredFilter") return table.withSearchIndex("search_body", (q) => q.search("body", "x").eq("body" as never, "y")).take(1);
      if (kind === "noSearch") return table.withSearchIndex("search_body", (q) => q.eq("channel", "y")).take(1);
      if (kind === "withIndex") return table.withIndex("search_body" as never).take(1);
      if (kind === "normalIndex") return table.withSearchIndex("by_channel" as never, (q) => q.search("body", "x")).take(1);
      if (kind === "tooMany") return table.withSearchIndex("search_body", (q) => q.search("body", "x")).take(5_000);
      return null;
    },
  }),
  /** Searches, then writes what it found into a note (a search inside a mutation sees its own writes). */
  searchInMutation: mutation({
    args: { text: v.string(), also: v.string() },
    handler: async (ctx, { text, also }) => {
      await ctx.db.insert("messages", { channel: "m", author: "m", body: also });
      return (await ctx.db.query("messages").withSearchIndex("search_body", (q) => q.search("body", text).eq("channel", "m")).collect()).map((message) => message.body);
    },
  }),
};

const notes = {
  add: mutation({ args: { text: v.optional(v.string()) }, handler: (ctx, args) => ctx.db.insert("notes", args) }),
  search: query({
    args: { text: v.string() },
    handler: async (ctx, { text }) => (await ctx.db.query("notes").withSearchIndex("search_text", (q) => q.search("text", text)).collect()).map((note) => note.text ?? null),
  }),
};

export const functions = { messages, notes };
