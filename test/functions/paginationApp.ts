/**
 * The app of the pagination tests: numbered items with a tag, an index by number and one
 * by tag then number, paginated queries over each (taking `paginationOpts` as
 * usePaginatedQuery sends it; one declares what it returns), and mutations that insert
 * and delete in bulk.
 */
import { defineSchema, defineTable, functionsFor, paginationOptsValidator, paginationResultValidator, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  items: defineTable({ n: v.number(), tag: v.string() }).index("by_n", ["n"]).index("by_tag", ["tag", "n"]),
});

const { query, mutation } = functionsFor(schema);

const order = v.optional(v.union(v.literal("asc"), v.literal("desc")));

const items = {
  page: query({
    args: { paginationOpts: paginationOptsValidator, order },
    handler: async (ctx, { paginationOpts, order }) => ctx.db.query("items").withIndex("by_n").order(order ?? "asc").paginate(paginationOpts),
  }),
  pageReturned: query({
    args: { paginationOpts: paginationOptsValidator },
    returns: paginationResultValidator(v.object({ _id: v.id("items"), _creationTime: v.number(), n: v.number(), tag: v.string() })),
    handler: async (ctx, { paginationOpts }) => ctx.db.query("items").withIndex("by_n").paginate(paginationOpts),
  }),
  pageOfTag: query({
    args: { paginationOpts: paginationOptsValidator, tag: v.string() },
    handler: async (ctx, { paginationOpts, tag }) => ctx.db.query("items").withIndex("by_tag", (q) => q.eq("tag", tag)).paginate(paginationOpts),
  }),
  all: query({
    args: { order },
    handler: async (ctx, { order }) => (await ctx.db.query("items").withIndex("by_n").order(order ?? "asc").collect()).map((item) => item.n),
  }),
  insert: mutation({
    args: { ns: v.array(v.number()), tag: v.optional(v.string()) },
    handler: async (ctx, { ns, tag }) => {
      const ids = [];
      for (const n of ns) ids.push(await ctx.db.insert("items", { n, tag: tag ?? "a" }));
      return ids;
    },
  }),
  removeByN: mutation({
    args: { ns: v.array(v.number()) },
    handler: async (ctx, { ns }) => {
      for (const n of ns) {
        const item = await ctx.db.query("items").withIndex("by_n", (q) => q.eq("n", n)).first();
        if (item !== null) await ctx.db.delete(item._id);
      }
    },
  }),
};

export const functions = { items };
