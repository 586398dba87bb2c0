/**
 * The app bench:sync serves:
 *
 * - the named counters of test/support/counterApp.ts (one query and one mutation each, so
 *   a benchmark chooses exactly which subscriptions a commit affects), and
 *   `counters:getFor`, which reads the same counter as `counters:get` but whose `viewer`
 *   argument makes each subscriber's query distinct, so the server runs it once per
 *   subscriber rather than once per commit;
 * - `counters:row`, the same counter as a one-row array (`take(1)`, returned as read: a
 *   diffable result, issue 30), and `counters:seed`, which creates many counters in one
 *   commit (phase 6's reconnect storm);
 * - `messages`, a chat channel's messages indexed by channel: `messages:page`, a page of
 *   one channel newest first, returned exactly as `paginate` reads it (diffable: the
 *   server keeps it current by QueryDiffs for clients that announce diffs), and
 *   `messages:send` / `messages:sendMany` (phase 5).
 */
import { defineSchema, defineTable, functionsFor, paginationOptsValidator, v } from "../../src/functions/index.js";
import { counters as sharedCounters, counterValue, countersTable } from "../../test/support/counterApp.js";

export const schema = defineSchema({
  counters: countersTable,
  messages: defineTable({ channel: v.string(), author: v.string(), body: v.string() }).index("by_channel", ["channel"]),
});

const { query, mutation } = functionsFor(schema);

const message = v.object({ author: v.string(), body: v.string() });

export const counters = {
  ...sharedCounters,
  getFor: query({
    args: { name: v.string(), viewer: v.number() },
    handler: async (ctx, { name }) => counterValue(ctx.db, name),
  }),
  /** Counter `name` as the one-row array its index read returns (empty until its first bump): diffable. */
  row: query({
    args: { name: v.string() },
    handler: async (ctx, { name }) => ctx.db.query("counters").withIndex("by_name", (q) => q.eq("name", name)).take(1),
  }),
  /** Creates each named counter at 0 (one commit; a benchmark names each counter once). */
  seed: mutation({
    args: { names: v.array(v.string()) },
    handler: async (ctx, { names }) => {
      for (const name of names) await ctx.db.insert("counters", { name, value: 0 });
      return names.length;
    },
  }),
  /** Adds 1 to each named counter (creating it at 1): one commit touching exactly their subscriptions. */
  bumpMany: mutation({
    args: { names: v.array(v.string()) },
    handler: async (ctx, { names }) => {
      const values: number[] = [];
      for (const name of names) {
        const row = await ctx.db.query("counters").withIndex("by_name", (q) => q.eq("name", name)).unique();
        if (row === null) {
          await ctx.db.insert("counters", { name, value: 1 });
          values.push(1);
        } else {
          await ctx.db.patch(row._id, { value: row.value + 1 });
          values.push(row.value + 1);
        }
      }
      return values;
    },
  }),
};

export const messages = {
  /** A page of `channel`'s messages, newest first, exactly as read (no map, no filter): diffable. */
  page: query({
    args: { channel: v.string(), paginationOpts: paginationOptsValidator },
    handler: async (ctx, { channel, paginationOpts }) =>
      ctx.db.query("messages").withIndex("by_channel", (q) => q.eq("channel", channel)).order("desc").paginate(paginationOpts),
  }),
  send: mutation({
    args: { channel: v.string(), author: v.string(), body: v.string() },
    handler: async (ctx, fields) => ctx.db.insert("messages", fields),
  }),
  sendMany: mutation({
    args: { channel: v.string(), messages: v.array(message) },
    handler: async (ctx, { channel, messages }) => {
      for (const fields of messages) await ctx.db.insert("messages", { channel, ...fields });
      return messages.length;
    },
  }),
};

export const functions = { counters, messages };
