import { defineSchema, defineTable, v } from "cairn";

/** The demo app's data: chat messages in channels, and named counters. */
export const schema = defineSchema({
  messages: defineTable({
    channel: v.string(),
    author: v.string(),
    body: v.string(),
  }).index("by_channel", ["channel"]),
  counters: defineTable({
    name: v.string(),
    value: v.number(),
  }).index("by_name", ["name"]),
});
