/**
 * The app bench:replica serves on every node: the named counters of
 * test/support/counterApp.ts (one query and one mutation each, so a benchmark chooses
 * which subscription a commit affects) and plain documents the catch-up load inserts, one
 * per mutation, without an index.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";
import { counters, countersTable } from "../../test/support/counterApp.js";

export const schema = defineSchema({
  counters: countersTable,
  documents: defineTable({ writer: v.string(), n: v.number(), body: v.string() }),
});

const { mutation } = functionsFor(schema);

export { counters };

export const documents = {
  /** One document per call; the caller sizes `body`. */
  insert: mutation({
    args: { writer: v.string(), n: v.number(), body: v.string() },
    handler: async (ctx, document) => ctx.db.insert("documents", document),
  }),
};

export const functions = { counters, documents };
