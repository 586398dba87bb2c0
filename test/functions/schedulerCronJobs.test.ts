/**
 * Crons as an app declares them (cronJobs) and the tick arithmetic the runner relies on
 * (nextTickMs): every malformed declaration is refused when the app is loaded, with the
 * cron named; ticks missed while no writer ran are skipped, never run in a burst.
 */
import { describe, expect, it } from "vitest";
import { App } from "../../src/functions/App.js";
import { cronJobs, defineSchema, defineTable, internalMutation, nextTickMs, query, v } from "../../src/functions/index.js";

const schema = defineSchema({ items: defineTable({ n: v.number() }) });
const functions = {
  tasks: {
    sweep: internalMutation({ args: { n: v.optional(v.number()) }, handler: () => null }),
    read: query({ args: {}, handler: () => null }),
  },
};

describe("cronJobs", () => {
  it("declares intervals and cron expressions, and an app lists them", () => {
    const crons = cronJobs().interval("sweep", { minutes: 5 }, "tasks:sweep", { n: 1 }).cron("nightly", "0 3 * * *", "tasks:sweep", {}, { timezone: "Europe/Paris" });
    const app = App.fromModule({ schema, functions, crons });
    expect(app.crons).toEqual([
      { name: "sweep", path: "tasks:sweep", args: { n: 1 }, schedule: { kind: "interval", ms: 300_000 } },
      { name: "nightly", path: "tasks:sweep", args: {}, schedule: { kind: "cron", expression: "0 3 * * *", timezone: "Europe/Paris" } },
    ]);
    expect(App.fromModule({ schema, functions }).crons).toEqual([]);
  });

  it("refuses every malformed declaration with SCHEMA_INVALID naming the cron", () => {
    const refusals: [string, () => unknown][] = [
      ["a duplicate name", () => cronJobs().interval("a", { seconds: 1 }, "tasks:sweep").interval("a", { seconds: 2 }, "tasks:sweep")],
      ["an empty name", () => cronJobs().interval("", { seconds: 1 }, "tasks:sweep")],
      ["a name of 65 characters", () => cronJobs().interval("x".repeat(65), { seconds: 1 }, "tasks:sweep")],
      ["two units", () => cronJobs().interval("a", { seconds: 1, minutes: 1 }, "tasks:sweep")],
      ["no unit", () => cronJobs().interval("a", {}, "tasks:sweep")],
      ["a fraction of a second", () => cronJobs().interval("a", { seconds: 1.5 }, "tasks:sweep")],
      ["zero", () => cronJobs().interval("a", { seconds: 0 }, "tasks:sweep")],
      ["a negative interval", () => cronJobs().interval("a", { minutes: -1 }, "tasks:sweep")],
      ["NaN", () => cronJobs().interval("a", { hours: Number.NaN }, "tasks:sweep")],
      ["a malformed expression", () => cronJobs().cron("a", "every day", "tasks:sweep")],
      ["an out-of-range field", () => cronJobs().cron("a", "61 * * * *", "tasks:sweep")],
      ["an unknown timezone", () => cronJobs().cron("a", "0 * * * *", "tasks:sweep", {}, { timezone: "Mars/Olympus" })],
      ["a path without a module", () => cronJobs().interval("a", { seconds: 1 }, "sweep")],
      ["arguments that are not an object", () => cronJobs().interval("a", { seconds: 1 }, "tasks:sweep", [] as never)],
      ["arguments that are not a value", () => cronJobs().interval("a", { seconds: 1 }, "tasks:sweep", { at: new Date() } as never)],
      ["an unknown function", () => App.fromModule({ schema, functions, crons: cronJobs().interval("a", { seconds: 1 }, "tasks:nothing") })],
      ["a query", () => App.fromModule({ schema, functions, crons: cronJobs().interval("a", { seconds: 1 }, "tasks:read") })],
      ["crons not made with cronJobs()", () => App.fromModule({ schema, functions, crons: { tick: "tasks:sweep" } })],
    ];
    for (const [what, declare] of refusals) {
      expect(declare, what).toThrow(expect.objectContaining({ code: "SCHEMA_INVALID" }));
    }
  });
});

describe("nextTickMs", () => {
  const minute = 60_000;

  it("is one interval after the tick when the tick ran on time", () => {
    expect(nextTickMs({ kind: "interval", ms: minute }, 10 * minute, 10 * minute + 5)).toBe(11 * minute);
  });

  it("skips the ticks missed while no writer ran, keeping the interval's phase", () => {
    expect(nextTickMs({ kind: "interval", ms: minute }, 10 * minute, 13 * minute + 30_000)).toBe(14 * minute);
    expect(nextTickMs({ kind: "interval", ms: minute }, 10 * minute, 14 * minute)).toBe(15 * minute);
  });

  it("takes the expression's next time after the tick or now, whichever is later, in the given timezone", () => {
    const at = Date.UTC(2026, 0, 1, 2, 0, 0);
    expect(nextTickMs({ kind: "cron", expression: "0 3 * * *" }, at, at)).toBe(Date.UTC(2026, 0, 1, 3, 0, 0));
    expect(nextTickMs({ kind: "cron", expression: "0 3 * * *" }, at, Date.UTC(2026, 0, 3, 12, 0, 0))).toBe(Date.UTC(2026, 0, 4, 3, 0, 0));
    // 03:00 in Paris is 02:00 UTC in winter.
    expect(nextTickMs({ kind: "cron", expression: "0 3 * * *", timezone: "Europe/Paris" }, at, at)).toBe(Date.UTC(2026, 0, 2, 2, 0, 0));
    // Six fields: seconds first.
    expect(nextTickMs({ kind: "cron", expression: "*/10 * * * * *" }, at + 1_000, at + 1_000)).toBe(at + 10_000);
  });
});
