/**
 * The app of the fleet chaos tests: banks whose accounts live on the bank's shard
 * (sharded by `bank`), and transfers between two accounts of one bank — so each transfer
 * commits on one shard, and every bank's total stays what its accounts opened with at
 * every snapshot, whichever node serves it and whoever writes the shard. Each transfer
 * also records itself under a tag the caller chooses, so a checker can count it.
 */
import { defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({
  accounts: defineTable({ bank: v.string(), name: v.string(), balance: v.number() }).index("by_bank", ["bank", "name"]).shardKey("bank"),
  transfers: defineTable({ bank: v.string(), tag: v.string(), from: v.string(), to: v.string(), amount: v.number() }).index("by_bank", ["bank", "tag"]).shardKey("bank"),
});
const { query, mutation } = functionsFor(schema);

export const functions = {
  bank: {
    /** Opens the named accounts of `bank` with `balance` each; accounts it already has are left alone. */
    open: mutation({
      args: { bank: v.string(), names: v.array(v.string()), balance: v.number() },
      shardBy: "bank",
      handler: async (ctx, { bank, names, balance }) => {
        for (const name of names) {
          const existing = await ctx.db.query("accounts").withIndex("by_bank", (q) => q.eq("bank", bank).eq("name", name)).unique();
          if (existing === null) await ctx.db.insert("accounts", { bank, name, balance });
        }
      },
    }),
    /** Moves `amount` from one account of `bank` to another (balances may go negative); returns `tag`. */
    transfer: mutation({
      args: { bank: v.string(), from: v.string(), to: v.string(), amount: v.number(), tag: v.string() },
      shardBy: "bank",
      handler: async (ctx, { bank, from, to, amount, tag }) => {
        const source = await ctx.db.query("accounts").withIndex("by_bank", (q) => q.eq("bank", bank).eq("name", from)).unique();
        const target = await ctx.db.query("accounts").withIndex("by_bank", (q) => q.eq("bank", bank).eq("name", to)).unique();
        if (source === null || target === null) throw new Error(`no account ${from} or ${to} in bank ${bank}`);
        await ctx.db.patch(source._id, { balance: source.balance - amount });
        await ctx.db.patch(target._id, { balance: target.balance + amount });
        await ctx.db.insert("transfers", { bank, tag, from, to, amount });
        return tag;
      },
    }),
    /** Per bank, the sum of its balances and its number of accounts, at one snapshot over every shard. */
    totals: query({
      args: {},
      handler: async (ctx) => {
        const totals: Record<string, { total: number; accounts: number }> = {};
        for (const account of await ctx.db.query("accounts").withIndex("by_bank").collect()) {
          const entry = (totals[account.bank] ??= { total: 0, accounts: 0 });
          entry.total += account.balance;
          entry.accounts++;
        }
        return totals;
      },
    }),
    /** Every account's balance, keyed `bank/name`. */
    balances: query({
      args: {},
      handler: async (ctx) => Object.fromEntries((await ctx.db.query("accounts").withIndex("by_bank").collect()).map((account) => [`${account.bank}/${account.name}`, account.balance])),
    }),
    /** Every recorded transfer. */
    transfers: query({
      args: {},
      handler: async (ctx) => (await ctx.db.query("transfers").withIndex("by_bank").collect()).map(({ bank, tag, from, to, amount }) => ({ bank, tag, from, to, amount })),
    }),
  },
};
