/**
 * The Cairn app the React browser test serves: tasks ordered by rank (paginated, one by
 * id, added, renamed, removed), a likes counter whose bump the test can hold on the server (to see the
 * optimistic value before the commit) or make fail, and a query that always throws.
 */
import { AppError, defineSchema, defineTable, functionsFor, paginationOptsValidator, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  tasks: defineTable({ title: v.string(), rank: v.number() }).index("by_rank", ["rank"]),
  likes: defineTable({ name: v.string(), count: v.number() }).index("by_name", ["name"]),
});

const { query, mutation } = functionsFor(schema);

/** Bumps of likes asked to wait wait here until the test releases them (this module runs in the test's process). */
export class HeldBumps {
  private release: (() => void) | null = null;
  private held: Promise<void> = Promise.resolve();
  /** Resolves once a held bump is waiting. */
  private arrived: (() => void) | null = null;
  whenWaiting: Promise<void> = Promise.resolve();

  /** From now on, held bumps wait for `open`. */
  close(): void {
    this.held = new Promise((resolve) => (this.release = resolve));
    this.whenWaiting = new Promise((resolve) => (this.arrived = resolve));
  }

  open(): void {
    this.release?.();
  }

  wait(): Promise<void> {
    this.arrived?.();
    return this.held;
  }
}

export const heldBumps = new HeldBumps();

const tasks = {
  page: query({
    args: { paginationOpts: paginationOptsValidator },
    handler: async (ctx, { paginationOpts }) => ctx.db.query("tasks").withIndex("by_rank").paginate(paginationOpts),
  }),
  get: query({
    args: { id: v.id("tasks") },
    handler: async (ctx, { id }) => ctx.db.get(id),
  }),
  ranks: query({
    handler: async (ctx) => (await ctx.db.query("tasks").withIndex("by_rank").collect()).map((task) => task.rank),
  }),
  add: mutation({
    args: { title: v.string(), rank: v.number() },
    handler: async (ctx, task) => ctx.db.insert("tasks", task),
  }),
  remove: mutation({
    args: { id: v.id("tasks") },
    handler: async (ctx, { id }) => ctx.db.delete(id),
  }),
  rename: mutation({
    args: { id: v.id("tasks"), title: v.string() },
    handler: async (ctx, { id, title }) => ctx.db.patch(id, { title }),
  }),
  broken: query({
    handler: async () => {
      throw new AppError("this query always fails");
    },
  }),
};

const likes = {
  get: query({
    args: { name: v.string() },
    handler: async (ctx, { name }) => (await ctx.db.query("likes").withIndex("by_name", (q) => q.eq("name", name)).unique())?.count ?? 0,
  }),
  bump: mutation({
    args: { name: v.string(), hold: v.optional(v.boolean()), fail: v.optional(v.boolean()) },
    handler: async (ctx, { name, hold, fail }) => {
      if (hold === true) await heldBumps.wait();
      if (fail === true) throw new AppError("the bump was refused");
      const row = await ctx.db.query("likes").withIndex("by_name", (q) => q.eq("name", name)).unique();
      if (row === null) await ctx.db.insert("likes", { name, count: 1 });
      else await ctx.db.patch(row._id, { count: row.count + 1 });
    },
  }),
};

export const functions = { tasks, likes };
