/**
 * The app test/client/outboxAuth.test.ts serves: named logs whose lines record who wrote
 * them (`ctx.auth`'s subject, or "anonymous"), in the order the mutations ran.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  logs: defineTable({ name: v.string(), lines: v.array(v.string()) }).index("by_name", ["name"]),
});

const { query, mutation } = functionsFor(schema);

export const log = {
  lines: query({
    args: { name: v.string() },
    handler: async (ctx, { name }) => (await ctx.db.query("logs").withIndex("by_name", (q) => q.eq("name", name)).first())?.lines ?? [],
  }),
  append: mutation({
    args: { name: v.string(), line: v.string() },
    handler: async (ctx, { name, line }) => {
      const author = (await ctx.auth.getUserIdentity())?.subject ?? "anonymous";
      const row = await ctx.db.query("logs").withIndex("by_name", (q) => q.eq("name", name)).first();
      if (row === null) await ctx.db.insert("logs", { name, lines: [`${author}:${line}`] });
      else await ctx.db.patch(row._id, { lines: [...row.lines, `${author}:${line}`] });
      return null;
    },
  }),
};

export const functions = { log };
