/**
 * The app the scheduler tests serve: counters bumped by scheduled mutations (each bump
 * also logs its job's tag, so a checker can count runs per job), a mutation that
 * schedules and one that schedules then fails, an action that schedules and one that is
 * scheduled (recording its runs), a mutation that always fails, cancellation, reads of
 * a job's state, and two crons when CRONS is set in the module that re-exports this.
 */
import { AppError, cronJobs, defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  counters: defineTable({ name: v.string(), value: v.number() }).index("by_name", ["name"]),
  runs: defineTable({ tag: v.string(), kind: v.string() }).index("by_tag", ["tag"]),
  /** Sharded by owner: a job scheduled on one shard may write on another. */
  notes: defineTable({ owner: v.string(), text: v.string() }).index("by_owner", ["owner"]).shardKey("owner"),
});

const { query, mutation, internalMutation, action, internalAction } = functionsFor(schema);

async function bump(ctx: Parameters<Parameters<typeof mutation>[0]["handler"]>[0], name: string, tag: string): Promise<number> {
  const existing = await ctx.db.query("counters").withIndex("by_name", (q) => q.eq("name", name)).unique();
  await ctx.db.insert("runs", { tag, kind: "mutation" });
  if (existing === null) {
    await ctx.db.insert("counters", { name, value: 1 });
    return 1;
  }
  await ctx.db.patch(existing._id, { value: existing.value + 1 });
  return existing.value + 1;
}

const jobs = {
  /** Bumps `name` and records the run under `tag` (internal: only the scheduler and actions call it). */
  bump: internalMutation({
    args: { name: v.string(), tag: v.string() },
    handler: (ctx, { name, tag }) => bump(ctx, name, tag),
  }),
  /** Schedules `count` bumps of `name`, `delayMs` from now, tagged `tag:i`; returns their job ids. */
  schedule: mutation({
    args: { name: v.string(), tag: v.string(), count: v.number(), delayMs: v.number() },
    handler: async (ctx, { name, tag, count, delayMs }) => {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) ids.push(await ctx.scheduler.runAfter(delayMs, "jobs:bump", { name, tag: `${tag}:${i}` }));
      return ids;
    },
  }),
  /** Schedules at an absolute time. */
  scheduleAt: mutation({
    args: { name: v.string(), tag: v.string(), atMs: v.number() },
    handler: (ctx, { name, tag, atMs }) => ctx.scheduler.runAt(atMs, "jobs:bump", { name, tag }),
  }),
  /** Schedules a bump, then fails: nothing is scheduled. */
  scheduleThenFail: mutation({
    args: { name: v.string() },
    handler: async (ctx, { name }) => {
      await ctx.scheduler.runAfter(0, "jobs:bump", { name, tag: "never" });
      throw new AppError("changed my mind");
    },
  }),
  /** Schedules whatever it is told (the bad-input tests). */
  scheduleAny: mutation({
    args: { path: v.string(), args: v.any(), delayMs: v.any() },
    handler: (ctx, { path, args, delayMs }) => ctx.scheduler.runAfter(delayMs as number, path, args as Record<string, unknown>),
  }),
  cancel: mutation({
    args: { id: v.string() },
    handler: async (ctx, { id }) => {
      await ctx.scheduler.cancel(id as never);
      return null;
    },
  }),
  /** Always fails: its job ends failed, and is not run again. */
  fail: internalMutation({
    args: { tag: v.string() },
    handler: async (ctx, { tag }) => {
      await ctx.db.insert("runs", { tag, kind: "failing" });
      throw new AppError(`failing on purpose (${tag})`);
    },
  }),
  scheduleFailing: mutation({
    args: { tag: v.string() },
    handler: (ctx, { tag }) => ctx.scheduler.runAfter(0, "jobs:fail", { tag }),
  }),
  /** An action scheduled: records its run through a mutation. */
  act: internalAction({
    args: { tag: v.string(), fail: v.optional(v.boolean()) },
    handler: async (ctx, { tag, fail }) => {
      await ctx.runMutation("jobs:record", { tag, kind: "action" });
      if (fail === true) throw new Error("the action fails on purpose");
      return tag;
    },
  }),
  record: internalMutation({
    args: { tag: v.string(), kind: v.string() },
    handler: async (ctx, { tag, kind }) => {
      await ctx.db.insert("runs", { tag, kind });
      return null;
    },
  }),
  scheduleAction: mutation({
    args: { tag: v.string(), fail: v.optional(v.boolean()) },
    handler: (ctx, { tag, fail }) => ctx.scheduler.runAfter(0, "jobs:act", { tag, ...(fail === true ? { fail } : {}) }),
  }),
  /** An action that schedules (not atomically: its own small commit). */
  scheduleFromAction: action({
    args: { name: v.string(), tag: v.string() },
    handler: (ctx, { name, tag }) => ctx.scheduler.runAfter(0, "jobs:bump", { name, tag }),
  }),
  /** Writes a note on its owner's shard. */
  note: internalMutation({
    args: { owner: v.string(), text: v.string() },
    shardBy: "owner",
    handler: async (ctx, { owner, text }) => {
      await ctx.db.insert("notes", { owner, text });
      return null;
    },
  }),
  /** Runs on `from`'s shard and schedules a note for each owner (on their shards). */
  scheduleNotes: mutation({
    args: { from: v.string(), owners: v.array(v.string()), text: v.string() },
    shardBy: "from",
    handler: async (ctx, { owners, text }) => {
      const ids: string[] = [];
      for (const owner of owners) ids.push(await ctx.scheduler.runAfter(0, "jobs:note", { owner, text }));
      return ids;
    },
  }),
  notesOf: query({
    args: { owner: v.string() },
    handler: async (ctx, { owner }) => (await ctx.db.query("notes").withIndex("by_owner", (q) => q.eq("owner", owner)).collect()).map((note) => note.text),
  }),
  /** A job's document, live. */
  job: query({
    args: { id: v.string() },
    handler: (ctx, { id }) => ctx.db.system.get(id as never),
  }),
  /** Jobs by state (a live view of the queue). */
  jobsIn: query({
    args: { state: v.string() },
    handler: async (ctx, { state }) => (await ctx.db.system.query("_scheduled_functions").withIndex("by_due", (q) => q.eq("state.kind", state)).collect()).length,
  }),
  /** A cron's ticks in `state`, as [scheduledTime, completedTime] pairs in time order. */
  ticks: query({
    args: { cron: v.string(), state: v.string() },
    handler: async (ctx, { cron, state }) =>
      (await ctx.db.system.query("_scheduled_functions").withIndex("by_pending_cron", (q) => q.eq("state.kind", state).eq("cron.name", cron)).collect())
        .map((tick) => [tick.scheduledTime, tick.completedTime ?? null])
        .sort((a, b) => (a[0] as number) - (b[0] as number)),
  }),
  /** Every job's id and state kind (a checker's view), at most `limit`. */
  allJobs: query({
    args: { limit: v.number() },
    handler: async (ctx, { limit }) => (await ctx.db.system.query("_scheduled_functions").take(limit)).map((job) => [job._id, job.state.kind, job.name]),
  }),
  counter: query({
    args: { name: v.string() },
    handler: async (ctx, { name }) => (await ctx.db.query("counters").withIndex("by_name", (q) => q.eq("name", name)).unique())?.value ?? 0,
  }),
  runsOf: query({
    args: { prefix: v.string() },
    handler: async (ctx, { prefix }) =>
      (await ctx.db.query("runs").withIndex("by_tag", (q) => q.gte("tag", prefix).lt("tag", `${prefix}\uffff`)).collect()).map((run) => `${run.kind}:${run.tag}`),
  }),
  /** Writes a system table directly: refused. */
  tamper: mutation({
    args: { id: v.string() },
    handler: async (ctx, { id }) => {
      await ctx.db.delete(id as never);
      return null;
    },
  }),
};

export const functions = { jobs };

/** Crons: a tick every second bumping "ticks", and a cron expression (every minute) that is never due in a test. */
export const crons = cronJobs()
  .interval("tick", { seconds: 1 }, "jobs:bump", { name: "ticks", tag: "tick" })
  .cron("minutely", "* * * * *", "jobs:record", { tag: "minute", kind: "cron" });
