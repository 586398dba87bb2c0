/**
 * Scenario: a functions runtime on a real shard engine (LocalStore, memory bucket) reports
 * one log entry per top-level call as it settles: its outcome, level, duration, error
 * (with the thrown stack only for FUNCTION_FAILED) and what it printed with console.*, at
 * every level. Output is bounded: a 1 MiB line is cut at 8 Ki characters, a call printing
 * 10,000 lines keeps 64 and counts the rest. An action's nested calls add their lines to
 * the action's entry and report nothing of their own; a call started by work a mutation
 * merely kicked off (a listener of the segments its commit applied) is a call of its own.
 * Whether lines also reach the console is the runtime's choice (echoConsole).
 */
import { format } from "node:util";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { AppError, CONSOLE_LEVELS, defineSchema, defineTable, functionsFor, v, type FunctionLogEntry } from "../../src/functions/index.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { harnessPerTest } from "../support/shardHarness.js";

// What reaches the real console: captured before any runtime patches it (the patch echoes through what it found).
const echoed: string[] = [];
for (const method of CONSOLE_LEVELS) console[method] = (...args: unknown[]) => echoed.push(`${method} ${format(...args)}`);

const MIB = 1024 * 1024;
/** The runtime's clock: handlers move it to give a call a known duration. */
let clock = new ManualClock();

const schema = defineSchema({ notes: defineTable({ text: v.string() }) });
const { query, mutation, action, internalQuery, internalMutation } = functionsFor(schema);
const functions = {
  logs: {
    levels: query({
      args: {},
      handler: async () => {
        console.log("a log", { n: 1 });
        console.info("an info");
        console.warn("a warning");
        console.error("an error");
        console.debug("a debug line");
        return null;
      },
    }),
    quiet: query({ args: {}, handler: async () => (console.log("hello %s", "world"), null) }),
    slow: query({ args: {}, handler: async () => (clock.advance(25), null) }),
    warns: mutation({
      args: {},
      handler: async (ctx) => {
        await ctx.db.insert("notes", { text: "n" });
        console.warn("careful");
      },
    }),
    buggy: mutation({
      args: {},
      handler: async () => {
        console.log("about to fail");
        throw new TypeError("cannot read secret-detail");
      },
    }),
    refuse: query({ args: {}, handler: async () => { throw new AppError("closed on Sundays"); } }),
    huge: query({ args: {}, handler: async () => (console.log("x".repeat(MIB)), null) }),
    flood: query({
      args: {},
      handler: async () => {
        for (let line = 0; line < 10_000; line++) {
          if (line === 9_000) console.error("late error");
          else console.log(`line ${line}`);
        }
        return null;
      },
    }),
    count: query({ args: {}, handler: async (ctx) => (console.log("counting"), (await ctx.db.query("notes").collect()).length) }),
    inner: internalQuery({ args: {}, handler: async () => (console.warn("inner"), 1) }),
    innerFails: internalQuery({ args: {}, handler: async () => { throw new AppError("no"); } }),
    bump: internalMutation({
      args: {},
      handler: async (ctx) => {
        console.log("bump");
        await ctx.db.insert("notes", { text: "bumped" });
      },
    }),
    outer: action({
      args: {},
      handler: async (ctx) => {
        console.log("outer");
        await ctx.runQuery("logs:inner");
        await ctx.runMutation("logs:bump");
        try {
          await ctx.runQuery("logs:innerFails");
        } catch {
          console.log("caught");
        }
        return "done";
      },
    }),
  },
};

describe("function logs", () => {
  const harness = harnessPerTest(memoryBucket);

  async function setup(options: { echoConsole?: boolean } = {}) {
    const h = await harness();
    const node = await h.writer("a");
    clock = new ManualClock();
    const app = App.fromModule({ schema, functions }, "logs app");
    const entries: FunctionLogEntry[] = [];
    const logged: string[] = [];
    const runtime = new FunctionRuntime({
      app,
      catalog: await resolveCatalog(h.bucket, app.schema, new SeededRandom(7)),
      shard: node.engine,
      clock,
      log: (line) => logged.push(line),
      onCallEnded: (entry) => entries.push(entry),
      ...options,
    });
    echoed.length = 0;
    return { runtime, entries, logged, node };
  }

  it("an ok call's entry holds its lines at every level; its level is the loudest line's", async () => {
    const { runtime, entries } = await setup();
    await runtime.runQuery("logs:levels");
    await runtime.runQuery("logs:quiet");
    await runtime.runMutation("logs:warns");
    expect(entries).toHaveLength(3);
    const [levels, quiet, warns] = entries as [FunctionLogEntry, FunctionLogEntry, FunctionLogEntry];
    expect(levels).toMatchObject({ path: "logs:levels", kind: "query", outcome: "ok", level: "error", time: clock.nowMs(), durationMs: 0 });
    expect(levels.requestId).toMatch(/^[0-9a-f]{16}$/);
    expect(levels.lines).toEqual([
      { level: "log", text: "a log { n: 1 }", time: clock.nowMs() },
      { level: "info", text: "an info", time: clock.nowMs() },
      { level: "warn", text: "a warning", time: clock.nowMs() },
      { level: "error", text: "an error", time: clock.nowMs() },
      { level: "debug", text: "a debug line", time: clock.nowMs() },
    ]);
    expect(levels.error).toBeUndefined();
    expect(levels.truncatedLines).toBeUndefined();
    expect(quiet).toMatchObject({ level: "info", outcome: "ok", lines: [{ level: "log", text: "hello world" }] });
    expect(warns).toMatchObject({ path: "logs:warns", kind: "mutation", level: "warn", outcome: "ok", lines: [{ level: "warn", text: "careful" }] });
    expect(new Set(entries.map((entry) => entry.requestId)).size).toBe(3);
    // Echoed as before: prefixed with path and request id.
    expect(echoed).toContain(`warn [logs:levels ${levels.requestId}] a warning`);
    expect(echoed).toContain(`log [logs:quiet ${quiet.requestId}] hello world`);
  });

  it("the duration is the runtime clock's monotonic time from start to settle", async () => {
    const { runtime, entries } = await setup();
    const before = clock.nowMs();
    await runtime.runQuery("logs:slow");
    expect(entries[0]).toMatchObject({ durationMs: 25, time: before + 25, lines: [] });
  });

  it("a bug's entry carries FUNCTION_FAILED with the thrown stack, under the request id the caller got", async () => {
    const { runtime, entries, logged } = await setup();
    const failed = (await runtime.runMutation("logs:buggy").then(
      () => expect.unreachable("logs:buggy succeeded"),
      (error: unknown) => error,
    )) as { code: string; details: { requestId: string } };
    expect(failed.code).toBe("FUNCTION_FAILED");
    expect(entries).toHaveLength(1);
    const entry = entries[0]!;
    expect(entry).toMatchObject({ path: "logs:buggy", kind: "mutation", outcome: "error", level: "error", requestId: failed.details.requestId });
    expect(entry.lines).toMatchObject([{ level: "log", text: "about to fail" }]);
    expect(entry.error?.code).toBe("FUNCTION_FAILED");
    expect(entry.error?.message).toContain(failed.details.requestId);
    expect(entry.error?.stack).toContain("TypeError: cannot read secret-detail");
    expect(entry.error?.stack).toMatch(/functionLogs\.test\.ts:\d+/);
    expect(logged[0]).toContain(`function logs:buggy failed (request ${failed.details.requestId})`);
  });

  it("a deliberate error (AppError, an unknown function, a bad argument) has its code and message and no stack", async () => {
    const { runtime, entries } = await setup();
    await expect(runtime.runQuery("logs:refuse")).rejects.toMatchObject({ code: "APP_ERROR" });
    await expect(runtime.runQuery("logs:nope")).rejects.toMatchObject({ code: "FUNCTION_NOT_FOUND" });
    await expect(runtime.runQuery("logs:quiet", { unexpected: 1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    // A recorded run reports its failure instead of throwing: the entry says it failed all the same.
    const recorded = await runtime.runQueryRecorded("logs:refuse");
    expect(recorded.outcome.kind).toBe("failed");
    expect(entries.map((entry) => [entry.path, entry.outcome, entry.level, entry.error?.code, entry.error?.stack])).toEqual([
      ["logs:refuse", "error", "error", "APP_ERROR", undefined],
      ["logs:nope", "error", "error", "FUNCTION_NOT_FOUND", undefined],
      ["logs:quiet", "error", "error", "INVALID_ARGUMENT", undefined],
      ["logs:refuse", "error", "error", "APP_ERROR", undefined],
    ]);
    expect(entries[0]!.error!.message).toBe("closed on Sundays");
  });

  it("a 1 MiB line is cut at 8 Ki characters, naming how much was cut", async () => {
    const { runtime, entries } = await setup();
    await runtime.runQuery("logs:huge");
    const text = entries[0]!.lines[0]!.text;
    expect(text).toBe(`${"x".repeat(8192)}… [${MIB - 8192} chars cut]`);
    expect(JSON.stringify(entries[0]).length).toBeLessThan(9 * 1024);
  });

  it("a call of an unknown function with a 1 MiB path, or one that is no string, keeps a bounded entry", async () => {
    const { runtime, entries } = await setup();
    await expect(runtime.runQuery("m:".padEnd(MIB, "p"))).rejects.toMatchObject({ code: "FUNCTION_NOT_FOUND" });
    await expect(runtime.runMutation({ not: "a path" } as never)).rejects.toMatchObject({ code: "FUNCTION_NOT_FOUND" });
    expect(entries[0]!.path).toMatch(/^m:p+… \[1040384 chars cut\]$/);
    expect(entries[0]!.error!.message.length).toBeLessThan(8300);
    expect(entries[1]!.path).toBe("[object Object]");
    expect(JSON.stringify(entries).length).toBeLessThan(40 * 1024);
  });

  it("a call printing 10,000 lines keeps the first 64 and counts the rest; a late error line still makes it an error", async () => {
    const { runtime, entries } = await setup();
    await runtime.runQuery("logs:flood");
    const entry = entries[0]!;
    expect(entry.lines).toHaveLength(64);
    expect(entry.lines[63]!.text).toBe("line 63");
    expect(entry.truncatedLines).toBe(10_000 - 64);
    expect(entry).toMatchObject({ outcome: "ok", level: "error" });
    // The console still gets every line (echo is on).
    expect(echoed).toHaveLength(10_000);
  });

  it("an action's nested calls add their lines to its one entry, under its request id", async () => {
    const { runtime, entries } = await setup();
    expect((await runtime.runAction("logs:outer")).value).toBe("done");
    expect(entries).toHaveLength(1);
    const entry = entries[0]!;
    expect(entry).toMatchObject({ path: "logs:outer", kind: "action", outcome: "ok", level: "warn" });
    expect(entry.lines.map((line) => [line.level, line.text])).toEqual([
      ["log", "outer"],
      ["warn", "inner"],
      ["log", "bump"],
      ["log", "caught"],
    ]);
    // The prefix names each nested function, with the action's request id.
    expect(echoed).toEqual([
      `log [logs:outer ${entry.requestId}] outer`,
      `warn [logs:inner ${entry.requestId}] inner`,
      `log [logs:bump ${entry.requestId}] bump`,
      `log [logs:outer ${entry.requestId}] caught`,
    ]);
  });

  it("a call started by what a mutation's commit set off (a subscription re-run) is a call of its own", async () => {
    const { runtime, entries, node } = await setup();
    const reruns: Promise<unknown>[] = [];
    node.engine.onSegmentApplied(() => void reruns.push(runtime.runQuery("logs:count")));
    await runtime.runMutation("logs:warns");
    await runtime.runAction("logs:outer");
    await Promise.all(reruns);
    expect(reruns.length).toBeGreaterThanOrEqual(2);
    const paths = entries.map((entry) => entry.path);
    expect(paths.filter((path) => path === "logs:count")).toHaveLength(reruns.length);
    expect(paths.filter((path) => path !== "logs:count")).toEqual(["logs:warns", "logs:outer"]);
    expect(new Set(entries.map((entry) => entry.requestId)).size).toBe(entries.length);
    const outer = entries.find((entry) => entry.path === "logs:outer")!;
    expect(outer.lines.map((line) => line.text)).not.toContain("counting");
  });

  it("with echoConsole off, lines go only into the entries", async () => {
    const { runtime, entries } = await setup({ echoConsole: false });
    await runtime.runQuery("logs:levels");
    await runtime.runAction("logs:outer");
    await runtime.runQuery("logs:flood");
    expect(echoed).toEqual([]);
    expect(entries.map((entry) => entry.lines.length)).toEqual([5, 4, 64]);
    // Output outside any function call is left alone.
    console.log("outside");
    expect(echoed).toEqual(["log outside"]);
  });

  it("a listener that throws is logged and leaves the call's outcome alone", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const app = App.fromModule({ schema, functions }, "logs app");
    const logged: string[] = [];
    const runtime = new FunctionRuntime({
      app,
      catalog: await resolveCatalog(h.bucket, app.schema, new SeededRandom(7)),
      shard: node.engine,
      log: (line) => logged.push(line),
      onCallEnded: () => {
        throw new Error("ring full of bees");
      },
      echoConsole: false,
    });
    expect((await runtime.runQuery("logs:inner", {}, { internal: true })).value).toBe(1);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/the log entry of logs:inner \(request [0-9a-f]+\) was not taken: ring full of bees/);
  });
});
