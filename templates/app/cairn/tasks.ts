import { AppError, v } from "cairn";
import { mutation, query } from "./functions.js";

const TEXT_CHARS_MAX = 500;

/** Every task, oldest first. A live query: clients subscribed to it see each change. */
export const list = query({
  handler: async (ctx) => ctx.db.query("tasks").take(200),
});

export const add = mutation({
  args: { text: v.string() },
  handler: async (ctx, { text }) => {
    const trimmed = text.trim();
    if (trimmed.length === 0) throw new AppError("a task needs some text");
    if (trimmed.length > TEXT_CHARS_MAX) throw new AppError(`a task is at most ${TEXT_CHARS_MAX} characters`);
    return ctx.db.insert("tasks", { text: trimmed, done: false });
  },
});

export const toggle = mutation({
  args: { id: v.id("tasks") },
  handler: async (ctx, { id }) => {
    const task = await ctx.db.get(id);
    if (task === null) throw new AppError("no such task");
    await ctx.db.patch(id, { done: !task.done });
  },
});

export const remove = mutation({
  args: { id: v.id("tasks") },
  handler: async (ctx, { id }) => {
    await ctx.db.delete(id);
  },
});
