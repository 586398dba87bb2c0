import { v } from "cairn";
import { mutation, query } from "./functions.js";

export const get = query({
  args: { name: v.string() },
  handler: async (ctx, { name }) => {
    const counter = await ctx.db.query("counters").withIndex("by_name", (q) => q.eq("name", name)).unique();
    return counter?.value ?? 0;
  },
});

/** Adds `by` (default 1) to the counter, creating it at 0 first; returns the new value. */
export const increment = mutation({
  args: { name: v.string(), by: v.optional(v.number()) },
  handler: async (ctx, { name, by }) => {
    const counter = await ctx.db.query("counters").withIndex("by_name", (q) => q.eq("name", name)).unique();
    const value = (counter?.value ?? 0) + (by ?? 1);
    if (counter === null) await ctx.db.insert("counters", { name, value });
    else await ctx.db.patch(counter._id, { value });
    return value;
  },
});
