/**
 * The app bench:platform serves (modelled on test/server/schedulerApp.ts, storageApp.ts
 * and test/functions/searchApp.ts):
 *
 * - `bench:schedule` schedules a batch of `bench:tick` jobs at given times; each tick, an
 *   internal mutation, records its start lateness (`ctx.now()` − the time it was due) in
 *   `ticks`, read back a page at a time by `bench:ticksPage`; `bench:jobsIn` counts the
 *   scheduler's jobs in a state (at most 1,000) so the benchmark sees when it has drained.
 * - `files:uploadUrl` hands out upload URLs.
 * - `search:addMany` inserts a batch of documents into `docs`, whose search index covers
 *   `body` filtered by `channel`; `search:add` inserts one; `search:search` runs a search
 *   (with or without the channel filter) and returns the bodies of its top results.
 */
import { defineSchema, defineTable, functionsFor, paginationOptsValidator, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  /** One row per tick that ran: when it was due and when it started (both wall-clock ms). */
  ticks: defineTable({ dueMs: v.number(), startedMs: v.number() }),
  docs: defineTable({ channel: v.string(), body: v.string() }).searchIndex("search_body", { searchField: "body", filterFields: ["channel"] }),
});

const { query, mutation, internalMutation } = functionsFor(schema);

/** How many jobs `bench:jobsIn` counts at most. */
export const JOBS_COUNTED_MAX = 1_000;

export const bench = {
  /** Schedules one `bench:tick` per due time (wall-clock ms); returns how many. */
  schedule: mutation({
    args: { dueMs: v.array(v.number()) },
    handler: async (ctx, { dueMs }) => {
      for (const due of dueMs) await ctx.scheduler.runAt(due, "bench:tick", { dueMs: due });
      return dueMs.length;
    },
  }),
  /** A scheduled job: records when it started against when it was due. */
  tick: internalMutation({
    args: { dueMs: v.number() },
    handler: async (ctx, { dueMs }) => {
      await ctx.db.insert("ticks", { dueMs, startedMs: ctx.now() });
      return null;
    },
  }),
  /** A page of ticks as [dueMs, startedMs] pairs. */
  ticksPage: query({
    args: { paginationOpts: paginationOptsValidator },
    handler: async (ctx, { paginationOpts }) => {
      const result = await ctx.db.query("ticks").paginate(paginationOpts);
      return { isDone: result.isDone, continueCursor: result.continueCursor, page: result.page.map((tick) => [tick.dueMs, tick.startedMs]) };
    },
  }),
  /** Jobs in `state` ("pending", "failed"…), at most JOBS_COUNTED_MAX. */
  jobsIn: query({
    args: { state: v.string() },
    handler: async (ctx, { state }) =>
      (await ctx.db.system.query("_scheduled_functions").withIndex("by_due", (q) => q.eq("state.kind", state)).take(JOBS_COUNTED_MAX)).length,
  }),
};

export const files = {
  uploadUrl: mutation({ args: {}, handler: (ctx) => ctx.storage.generateUploadUrl() }),
};

export const search = {
  /** Inserts a batch of documents (a mutation writes at most 8,192). */
  addMany: mutation({
    args: { docs: v.array(v.object({ channel: v.string(), body: v.string() })) },
    handler: async (ctx, { docs }) => {
      for (const doc of docs) await ctx.db.insert("docs", doc);
      return docs.length;
    },
  }),
  add: mutation({
    args: { channel: v.string(), body: v.string() },
    handler: async (ctx, doc) => {
      await ctx.db.insert("docs", doc);
      return null;
    },
  }),
  /** The bodies of the `limit` (default 10) most relevant documents. */
  search: query({
    args: { text: v.string(), channel: v.optional(v.string()), limit: v.optional(v.number()) },
    handler: async (ctx, { text, channel, limit }) =>
      (
        await ctx.db
          .query("docs")
          .withSearchIndex("search_body", (q) => {
            q.search("body", text);
            if (channel !== undefined) q.eq("channel", channel);
            return q;
          })
          .take(limit ?? 10)
      ).map((doc) => doc.body),
  }),
};

export const functions = { bench, files, search };
