/**
 * The app the sync tests serve: notes in channels (an index range per channel), named
 * counters (test/support/counterApp.ts), a query that reports the caller's identity, and
 * functions that fail.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";
import { counters, countersTable } from "../support/counterApp.js";

export const schema = defineSchema({
  notes: defineTable({ channel: v.string(), body: v.string() }).index("by_channel", ["channel"]),
  counters: countersTable,
});

const { query, mutation, action } = functionsFor(schema);

export const notes = {
  list: query({
    args: { channel: v.string() },
    handler: async (ctx, { channel }) => {
      const rows = await ctx.db.query("notes").withIndex("by_channel", (q) => q.eq("channel", channel)).collect();
      return rows.map((row) => row.body);
    },
  }),
  add: mutation({
    args: { channel: v.string(), body: v.string() },
    handler: async (ctx, { channel, body }) => {
      await ctx.db.insert("notes", { channel, body });
      return body.length;
    },
  }),
  /** Fails when the channel holds a note "boom": a query error that depends on data. */
  strict: query({
    args: { channel: v.string() },
    handler: async (ctx, { channel }) => {
      const rows = await ctx.db.query("notes").withIndex("by_channel", (q) => q.eq("channel", channel)).collect();
      if (rows.some((row) => row.body === "boom")) throw new Error("boom found");
      return rows.length;
    },
  }),
  fail: mutation({ args: {}, handler: async () => { throw new Error("nope"); } }),
  big: mutation({
    args: { chars: v.number() },
    handler: async (ctx, { chars }) => {
      await ctx.db.insert("notes", { channel: "big", body: "x".repeat(chars) });
      return null;
    },
  }),
};

export { counters };

export const users = {
  whoami: query({ args: {}, handler: async (ctx) => (await ctx.auth.getUserIdentity())?.subject ?? null }),
  echo: action({ args: { text: v.string() }, handler: async (ctx, { text }) => `${(await ctx.auth.getUserIdentity())?.subject ?? "anonymous"}: ${text}` }),
};

export const functions = { notes, counters, users };
