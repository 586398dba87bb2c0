/**
 * The app of the query-filter tests: tasks numbered `n` (index `by_n`) with a status, a
 * priority and, on some, an `owner` object holding a city. Queries read `by_n` in either
 * order through `.filter(q => …)`: with the filter chosen by arguments (status and a
 * minimum priority) through each way of reading (`paginate`, `take`, `first`, `unique`,
 * `collect`); with the same conditions as two chained `.filter` calls; on the nested field
 * "owner.city"; with q.not/q.or; with q.neq on a field that may be missing; and one that
 * builds any filter from a small JSON description (`bySpec`, for random filters). `bad`
 * builds malformed filters, one per case. Mutations insert tasks (listed, or many in one
 * call) and patch a task found by its `n`.
 */
import { defineSchema, defineTable, functionsFor, paginationOptsValidator, v } from "../../src/functions/index.js";
import type { FilterBuilder, FilterExpression, FilterOperand } from "../../src/functions/index.js";

const owner = v.object({ city: v.string() });

export const schema = defineSchema({
  tasks: defineTable({ n: v.number(), status: v.string(), priority: v.number(), owner: v.optional(owner) }).index("by_n", ["n"]),
});

const { query, mutation } = functionsFor(schema);

const order = v.union(v.literal("asc"), v.literal("desc"));
const task = v.object({ n: v.number(), status: v.string(), priority: v.number(), owner: v.optional(owner) });

/**
 * A filter as JSON, for filters chosen at random by a test:
 * `{ op: "eq" | "neq" | "lt" | "lte" | "gt" | "gte", field, value? }` (no `value`: undefined),
 * `{ op: "and" | "or", items: [...] }`, `{ op: "not", item }`.
 */
export type FilterSpec =
  | { readonly op: "eq" | "neq" | "lt" | "lte" | "gt" | "gte"; readonly field: string; readonly value?: string | number | boolean | null }
  | { readonly op: "and" | "or"; readonly items: readonly FilterSpec[] }
  | { readonly op: "not"; readonly item: FilterSpec };

function expressionOf(q: FilterBuilder, spec: FilterSpec): FilterExpression {
  switch (spec.op) {
    case "and":
      return q.and(...spec.items.map((item) => expressionOf(q, item)));
    case "or":
      return q.or(...spec.items.map((item) => expressionOf(q, item)));
    case "not":
      return q.not(expressionOf(q, spec.item));
    default:
      return q[spec.op](q.field(spec.field), spec.value);
  }
}

/** `status` equal and `priority` at least `minPriority`, as one expression. */
const statusAndPriority = (status: string, minPriority: number) => (q: FilterBuilder) => q.and(q.eq(q.field("status"), status), q.gte(q.field("priority"), minPriority));

const tasks = {
  filtered: query({
    args: { status: v.string(), minPriority: v.number(), paginationOpts: paginationOptsValidator, order },
    handler: async (ctx, { status, minPriority, paginationOpts, order }) =>
      ctx.db.query("tasks").withIndex("by_n").order(order).filter(statusAndPriority(status, minPriority)).paginate(paginationOpts),
  }),
  take: query({
    args: { status: v.string(), minPriority: v.number(), count: v.number(), order },
    handler: async (ctx, { status, minPriority, count, order }) =>
      ctx.db.query("tasks").withIndex("by_n").order(order).filter(statusAndPriority(status, minPriority)).take(count),
  }),
  first: query({
    args: { status: v.string(), minPriority: v.number(), order },
    handler: async (ctx, { status, minPriority, order }) => ctx.db.query("tasks").withIndex("by_n").order(order).filter(statusAndPriority(status, minPriority)).first(),
  }),
  unique: query({
    args: { status: v.string(), minPriority: v.number(), order },
    handler: async (ctx, { status, minPriority, order }) => ctx.db.query("tasks").withIndex("by_n").order(order).filter(statusAndPriority(status, minPriority)).unique(),
  }),
  collect: query({
    args: { status: v.string(), minPriority: v.number(), order },
    handler: async (ctx, { status, minPriority, order }) => ctx.db.query("tasks").withIndex("by_n").order(order).filter(statusAndPriority(status, minPriority)).collect(),
  }),
  /** The conditions of `filtered` as two `.filter` calls. */
  chained: query({
    args: { status: v.string(), minPriority: v.number(), paginationOpts: paginationOptsValidator, order },
    handler: async (ctx, { status, minPriority, paginationOpts, order }) =>
      ctx.db
        .query("tasks")
        .withIndex("by_n")
        .order(order)
        .filter((q) => q.eq(q.field("status"), status))
        .filter((q) => q.gte(q.field("priority"), minPriority))
        .paginate(paginationOpts),
  }),
  /** Tasks whose owner's city equals `city` (no `city`: undefined, so the tasks without an owner). */
  ofCity: query({
    args: { city: v.optional(v.string()), order },
    handler: async (ctx, { city, order }) =>
      ctx.db
        .query("tasks")
        .withIndex("by_n")
        .order(order)
        .filter((q) => q.eq(q.field("owner.city"), city))
        .collect(),
  }),
  /** Tasks whose owner's city sorts before `bound`. */
  cityBelow: query({
    args: { bound: v.string(), order },
    handler: async (ctx, { bound, order }) =>
      ctx.db
        .query("tasks")
        .withIndex("by_n")
        .order(order)
        .filter((q) => q.lt(q.field("owner.city"), bound))
        .collect(),
  }),
  /** Tasks whose status is neither `a` nor `b`, a page. */
  neither: query({
    args: { a: v.string(), b: v.string(), paginationOpts: paginationOptsValidator, order },
    handler: async (ctx, { a, b, paginationOpts, order }) =>
      ctx.db
        .query("tasks")
        .withIndex("by_n")
        .order(order)
        .filter((q) => q.not(q.or(q.eq(q.field("status"), a), q.eq(q.field("status"), b))))
        .paginate(paginationOpts),
  }),
  /** Tasks whose `field` (perhaps missing on some or all) is not `value` (no `value`: undefined). */
  neq: query({
    args: { field: v.string(), value: v.optional(v.any()), order },
    handler: async (ctx, { field, value, order }) =>
      ctx.db
        .query("tasks")
        .withIndex("by_n")
        .order(order)
        .filter((q) => q.neq(q.field(field), value))
        .collect(),
  }),
  /** Each spec of `filters` as its own `.filter` call, read as `read` says. */
  bySpec: query({
    args: {
      filters: v.array(v.any()),
      order,
      read: v.union(v.literal("paginate"), v.literal("take"), v.literal("first"), v.literal("unique"), v.literal("collect")),
      count: v.optional(v.number()),
      paginationOpts: v.optional(paginationOptsValidator),
    },
    handler: async (ctx, { filters, order, read, count, paginationOpts }) => {
      let chain = ctx.db.query("tasks").withIndex("by_n").order(order);
      for (const spec of filters) chain = chain.filter((q) => expressionOf(q, spec as FilterSpec));
      switch (read) {
        case "paginate":
          return chain.paginate(paginationOpts!);
        case "take":
          return chain.take(count!);
        case "first":
          return chain.first();
        case "unique":
          return chain.unique();
        case "collect":
          return chain.collect();
      }
    },
  }),
  /** A malformed filter, one per `which`; each must fail the run with INVALID_ARGUMENT. */
  bad: query({
    args: { which: v.string() },
    handler: async (ctx, { which }) => {
      const chain = ctx.db.query("tasks").withIndex("by_n");
      const operand = (value: unknown) => chain.filter((q) => q.eq(q.field("status"), value as FilterOperand));
      switch (which) {
        case "filter of a string":
          return chain.filter("status" as never).collect();
        case "filter of an expression":
          return chain.filter({} as never).collect();
        case "empty field":
          return chain.filter((q) => q.eq(q.field(""), 1)).collect();
        case "empty path segment":
          return chain.filter((q) => q.eq(q.field("a..b"), 1)).collect();
        case "leading dot":
          return chain.filter((q) => q.eq(q.field(".a"), 1)).collect();
        case "trailing dot":
          return chain.filter((q) => q.eq(q.field("a."), 1)).collect();
        case "field of a number":
          return chain.filter((q) => q.eq(q.field(5 as never), 1)).collect();
        case "field of a bigint":
          return chain.filter((q) => q.eq(q.field(5n as never), 1)).collect();
        case "function operand":
          return operand(() => "open").collect();
        case "Date operand":
          return operand(new Date(0)).collect();
        case "Symbol operand":
          return operand(Symbol("open")).collect();
        case "function inside and":
          return chain.filter((q) => q.and(q.eq(q.field("status"), "open"), (() => true) as never)).collect();
        case "Date inside an object operand":
          return operand({ at: new Date(0) }).collect();
        case "filter that returns nothing":
          return chain.filter(((q: { eq: (a: unknown, b: unknown) => unknown }) => void q.eq(1, 1)) as never).collect();
        case "filter that returns a boolean":
          return chain.filter((() => true) as never).collect();
        case "cyclic operand": {
          const cyclic: Record<string, unknown> = {};
          cyclic.self = cyclic;
          return operand(cyclic).collect();
        }
        default:
          throw new Error(`no such case ${which}`);
      }
    },
  }),

  insert: mutation({
    args: { tasks: v.array(task) },
    handler: async (ctx, { tasks }) => {
      const ids = [];
      for (const fields of tasks) ids.push(await ctx.db.insert("tasks", fields));
      return ids;
    },
  }),
  /** `count` tasks numbered from `from`, all with the same status and priority. */
  bulkInsert: mutation({
    args: { from: v.number(), count: v.number(), status: v.string(), priority: v.number() },
    handler: async (ctx, { from, count, status, priority }) => {
      for (let i = 0; i < count; i++) await ctx.db.insert("tasks", { n: from + i, status, priority });
    },
  }),
  patchByN: mutation({
    args: { n: v.number(), status: v.optional(v.string()), priority: v.optional(v.number()) },
    handler: async (ctx, { n, status, priority }) => {
      const found = await ctx.db.query("tasks").withIndex("by_n", (q) => q.eq("n", n)).unique();
      if (found === null) throw new Error(`no task ${n}`);
      await ctx.db.patch(found._id, { ...(status === undefined ? {} : { status }), ...(priority === undefined ? {} : { priority }) });
    },
  }),
};

export const functions = { tasks };
