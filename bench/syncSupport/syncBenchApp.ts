/**
 * The app bench:sync serves: the named counters of test/support/counterApp.ts (one query
 * and one mutation each, so a benchmark chooses exactly which subscriptions a commit
 * affects), and `counters:getFor`, which reads the same counter as `counters:get` but
 * whose `viewer` argument makes each subscriber's query distinct, so the server runs it
 * once per subscriber rather than once per commit.
 */
import { functionsFor, v } from "../../src/functions/index.js";
import { counters as sharedCounters, counterValue, schema } from "../../test/support/counterApp.js";

export { schema };

const { query } = functionsFor(schema);

export const counters = {
  ...sharedCounters,
  getFor: query({
    args: { name: v.string(), viewer: v.number() },
    handler: async (ctx, { name }) => counterValue(ctx.db, name),
  }),
};

export const functions = { counters };
