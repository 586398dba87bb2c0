/**
 * The app of the function-error tests (test/functions/functionErrors.test.ts on the
 * runtime, test/server/functionErrors.test.ts served): a bank whose functions fail by
 * accident (a bug) and on purpose (AppError), and functions that print.
 */
import { AppError, defineSchema, defineTable, functionsFor, v } from "../../src/functions/index.js";

export const schema = defineSchema({ accounts: defineTable({ owner: v.string(), balance: v.number() }) });
const { query, mutation, action, internalQuery } = functionsFor(schema);

export const functions = {
  bank: {
    buggy: mutation({
      args: {},
      handler: async (ctx) => {
        await ctx.db.insert("accounts", { owner: "ada", balance: 1 });
        const secret = "internal-detail-42";
        throw new TypeError(`cannot read ${secret}`);
      },
    }),
    withdraw: mutation({
      args: { amount: v.number() },
      handler: async (ctx, { amount }) => {
        await ctx.db.insert("accounts", { owner: "bob", balance: -amount });
        throw new AppError({ reason: "INSUFFICIENT_FUNDS", balance: 0, wanted: amount });
      },
    }),
    refuse: query({ args: {}, handler: async () => { throw new AppError("closed on Sundays"); } }),
    badData: query({ args: {}, handler: async () => { throw new AppError({ when: new Date() } as never); } }),
    count: query({ args: {}, handler: async (ctx) => (await ctx.db.query("accounts").collect()).length }),
    chatty: query({
      args: {},
      handler: async () => {
        console.log("balance checked", { owner: "ada" });
        return null;
      },
    }),
    inner: internalQuery({
      args: {},
      handler: async () => {
        console.warn("inner");
        return null;
      },
    }),
    outer: action({
      args: {},
      handler: async (ctx) => {
        console.log("outer");
        await ctx.runQuery("bank:inner");
        return null;
      },
    }),
  },
};
