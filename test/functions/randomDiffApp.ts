/**
 * A random app for the diff model test (issue 30): 1–3 tables whose fields hold values of
 * any type (so index keys mix nulls, booleans, numbers, strings, arrays and objects, and
 * missing fields), each with 1–2 indexes over random field lists; generic queries of every
 * diffable read over any table and index, named by their arguments; one mutation that
 * applies a list of inserts, patches and deletions in one commit.
 */
import { randomInt, type Random } from "../../src/base/random.js";
import { defineSchema, defineTable, mutation, paginationOptsValidator, query, v } from "../../src/functions/index.js";
import type { Value } from "../../src/model/index.js";

export const FIELDS = ["a", "b", "c"] as const;

export interface RandomIndex {
  readonly table: string;
  readonly name: string;
  readonly fields: readonly string[];
}

/** The values fields take: every type index keys order, with ties likely. */
export const VALUES: readonly Value[] = [null, false, true, -1, 0, 2.5, 7, "", "a", "b", "é", [1, "x"], [1], { k: 1 }, 3n];

const order = v.union(v.literal("asc"), v.literal("desc"));
const range = { table: v.string(), index: v.string(), fields: v.array(v.string()), eq: v.array(v.any()), order };

function chain(ctx: { db: { query(table: string): any } }, { table, index, fields, eq, order }: { table: string; index: string; fields: string[]; eq: Value[]; order: "asc" | "desc" }) {
  return ctx.db
    .query(table)
    .withIndex(index, (q: any) => eq.reduce((built: any, value, at) => built.eq(fields[at]!, value), q))
    .order(order);
}

export function randomDiffApp(random: Random): { module: unknown; indexes: RandomIndex[] } {
  const tables: Record<string, ReturnType<typeof defineTable>> = {};
  const indexes: RandomIndex[] = [];
  const tableCount = 1 + randomInt(random, 3);
  for (let t = 0; t < tableCount; t++) {
    const name = `t${t}`;
    let table = defineTable({ a: v.optional(v.any()), b: v.optional(v.any()), c: v.optional(v.any()) });
    const indexCount = 1 + randomInt(random, 2);
    for (let i = 0; i < indexCount; i++) {
      const shuffled = [...FIELDS].sort(() => random.float() - 0.5);
      const fields = shuffled.slice(0, 1 + randomInt(random, 2));
      table = table.index(`i${i}`, fields);
      indexes.push({ table: name, name: `i${i}`, fields });
    }
    tables[name] = table;
  }
  const schema = defineSchema(tables);
  const functions = {
    q: {
      get: query({ args: { id: v.string() }, handler: async (ctx, { id }) => ctx.db.get(id as never) }),
      take: query({ args: { ...range, n: v.number() }, handler: async (ctx, args) => chain(ctx as never, args as never).take(args.n) }),
      all: query({ args: range, handler: async (ctx, args) => chain(ctx as never, args as never).collect() }),
      page: query({ args: { ...range, paginationOpts: paginationOptsValidator }, handler: async (ctx, args) => chain(ctx as never, args as never).paginate(args.paginationOpts) }),
    },
    m: {
      write: mutation({
        args: { ops: v.array(v.any()) },
        handler: async (ctx, { ops }) => {
          const ids: string[] = [];
          for (const op of ops as { kind: string; table?: string; id?: string; fields?: Record<string, Value> }[]) {
            if (op.kind === "insert") ids.push(await ctx.db.insert(op.table! as never, op.fields as never));
            else if (op.kind === "patch") await ctx.db.patch(op.id! as never, op.fields as never);
            else await ctx.db.delete(op.id! as never);
          }
          return ids;
        },
      }),
    },
  };
  return { module: { schema, functions }, indexes };
}
