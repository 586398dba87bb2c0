import { AppError, v } from "cairn";
import { mutation, query } from "./functions.js";

const BODY_CHARS_MAX = 2_000;

/** The newest `limit` messages of a channel, oldest first. */
export const list = query({
  args: { channel: v.string(), limit: v.optional(v.number()) },
  handler: async (ctx, { channel, limit }) => {
    const newest = await ctx.db
      .query("messages")
      .withIndex("by_channel", (q) => q.eq("channel", channel))
      .order("desc")
      .take(Math.min(Math.max(Math.floor(limit ?? 50), 1), 500));
    return newest.reverse();
  },
});

/** One page of a channel's history, oldest first. */
export const page = query({
  args: { channel: v.string(), cursor: v.union(v.string(), v.null()), numItems: v.number() },
  handler: async (ctx, { channel, cursor, numItems }) =>
    ctx.db
      .query("messages")
      .withIndex("by_channel", (q) => q.eq("channel", channel))
      .paginate({ cursor, numItems }),
});

export const send = mutation({
  args: { channel: v.string(), author: v.string(), body: v.string() },
  handler: async (ctx, { channel, author, body }) => {
    if (body.trim().length === 0) throw new AppError("a message needs a body");
    if (body.length > BODY_CHARS_MAX) throw new AppError(`a message is at most ${BODY_CHARS_MAX} characters`);
    return ctx.db.insert("messages", { channel, author, body });
  },
});
