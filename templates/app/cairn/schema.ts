import { defineSchema, defineTable, v } from "cairn";

/** The app's data: one table of tasks, listed oldest first (every table has by_creation). */
export const schema = defineSchema({
  tasks: defineTable({
    text: v.string(),
    done: v.boolean(),
  }),
});
