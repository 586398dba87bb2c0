/**
 * Scenario: a bank under concurrent transfers, checked for serializability the way an
 * auditor would. 40 clients each make 6 transfers between 8 accounts at once (a transfer
 * reads both balances, and moves money only if the payer can afford it, re-tiering both
 * accounts so their index entries move). Afterwards:
 * - money is conserved, and no balance is negative;
 * - replaying every call in timestamp order (commits at their commit ts, transfers that
 *   declined at the snapshot they read) on a model gives each call's own decision and the
 *   final balances: the concurrent history equals a serial one;
 * - every tier read through its index equals the same tier found by a full scan.
 */
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";
import { BUCKET_FACTORIES } from "../support/bucketFactories.js";
import { harnessPerTest } from "../support/shardHarness.js";

const ACCOUNTS = 8;
const CLIENTS = 40;
const TRANSFERS_PER_CLIENT = 6;
const OPENING_BALANCE = 100;

const schema = defineSchema({
  accounts: defineTable({ name: v.string(), balance: v.number(), tier: v.string() }).index("by_tier", ["tier"]),
});
const { query, mutation } = functionsFor(schema);
const tierOf = (balance: number) => (balance >= 150 ? "gold" : balance >= 50 ? "silver" : "bronze");

const bank = {
  open: mutation({
    args: { count: v.number() },
    handler: async (ctx, { count }) => {
      const ids = [];
      for (let n = 0; n < count; n++) ids.push(await ctx.db.insert("accounts", { name: `a${n}`, balance: OPENING_BALANCE, tier: tierOf(OPENING_BALANCE) }));
      return ids;
    },
  }),
  transfer: mutation({
    args: { from: v.id("accounts"), to: v.id("accounts"), amount: v.number() },
    handler: async (ctx, { from, to, amount }) => {
      const payer = (await ctx.db.get(from))!;
      const payee = (await ctx.db.get(to))!;
      if (payer.balance < amount) return false;
      await ctx.db.patch(from, { balance: payer.balance - amount, tier: tierOf(payer.balance - amount) });
      await ctx.db.patch(to, { balance: payee.balance + amount, tier: tierOf(payee.balance + amount) });
      return true;
    },
  }),
  all: query({ handler: async (ctx) => ctx.db.query("accounts").collect() }),
  tier: query({
    args: { tier: v.string() },
    handler: async (ctx, { tier }) => (await ctx.db.query("accounts").withIndex("by_tier", (q) => q.eq("tier", tier)).collect()).map((account) => account._id).sort(),
  }),
};

describe.each(BUCKET_FACTORIES)("serializable mutations on $name", (factory) => {
  const harness = harnessPerTest(factory);

  it("keep a bank's books under concurrent transfers equal to a serial replay", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const app = App.fromModule({ schema, functions: { bank } });
    const runtime = new FunctionRuntime({ app, catalog: await resolveCatalog(h.bucket, schema, new SeededRandom(1)), shard: node.engine });
    const ids = (await runtime.runMutation("bank:open", { count: ACCOUNTS })).value as string[];
    const random = new SeededRandom(99);
    const plans = Array.from({ length: CLIENTS }, () =>
      Array.from({ length: TRANSFERS_PER_CLIENT }, () => {
        const from = Math.floor(random.float() * ACCOUNTS);
        const to = (from + 1 + Math.floor(random.float() * (ACCOUNTS - 1))) % ACCOUNTS;
        return { from, to, amount: 1 + Math.floor(random.float() * 80) };
      }),
    );
    const calls: { from: number; to: number; amount: number; applied: boolean; ts: number }[] = [];
    await Promise.all(
      plans.map(async (plan) => {
        for (const transfer of plan) {
          const run = await runtime.runMutation("bank:transfer", { from: ids[transfer.from]!, to: ids[transfer.to]!, amount: transfer.amount });
          calls.push({ ...transfer, applied: run.value === true, ts: run.ts });
        }
      }),
    );

    const accounts = (await runtime.runQuery("bank:all")).value as { _id: string; balance: number; tier: string }[];
    expect(accounts.reduce((sum, account) => sum + account.balance, 0)).toBe(ACCOUNTS * OPENING_BALANCE);
    expect(accounts.every((account) => account.balance >= 0)).toBe(true);
    expect(calls.some((call) => call.applied)).toBe(true);
    expect(calls.some((call) => !call.applied)).toBe(true);

    // Serial replay: a commit at its ts; a declined transfer at the snapshot it read, after the commits at or below it.
    const applied = calls.filter((call) => call.applied);
    expect(new Set(applied.map((call) => call.ts)).size).toBe(applied.length);
    const ordered = [...calls].sort((left, right) => left.ts - right.ts || Number(right.applied) - Number(left.applied));
    const model = Array.from({ length: ACCOUNTS }, () => OPENING_BALANCE);
    for (const call of ordered) {
      const affordable = model[call.from]! >= call.amount;
      expect(affordable, `transfer of ${call.amount} at ts ${call.ts}`).toBe(call.applied);
      if (call.applied) {
        model[call.from]! -= call.amount;
        model[call.to]! += call.amount;
      }
    }
    expect(ids.map((id) => accounts.find((account) => account._id === id)!.balance)).toEqual(model);

    for (const tier of ["gold", "silver", "bronze"]) {
      const scanned = accounts.filter((account) => account.tier === tier).map((account) => account._id).sort();
      expect((await runtime.runQuery("bank:tier", { tier })).value, tier).toEqual(scanned);
      expect(scanned.every((id) => tierOf(accounts.find((account) => account._id === id)!.balance) === tier)).toBe(true);
    }
  });
});
