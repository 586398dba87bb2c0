/**
 * A mutation's first run waits its turn on the document it reads first while another run
 * holds it (RunLanes, FunctionRuntime.prepare), then reads that run's queued write: runs
 * on one hot document stop losing optimistic-concurrency races to each other. What an
 * attacker tries: a holder that never finishes (its time limit must free the document),
 * a run that reads two documents at once, a run that only reads, and a run that fails
 * after it took the document.
 */
import { describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { App, defineSchema, defineTable, FunctionRuntime, functionsFor, resolveCatalog, v } from "../../src/functions/index.js";
import { LaneHold, RunLanes } from "../../src/functions/RunLanes.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import { SeededRandom } from "../../src/base/random.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { harnessPerTest } from "../support/shardHarness.js";

const schema = defineSchema({ counters: defineTable({ count: v.number() }) });
const { mutation } = functionsFor(schema);

/** Released by the test: a holder that waits for it keeps the document until then, or until its time limit. */
let gate: Promise<void> = Promise.resolve();

const counters = {
  create: mutation({ args: {}, handler: async (ctx) => ctx.db.insert("counters", { count: 0 }) }),
  bump: mutation({
    args: { id: v.id("counters") },
    handler: async (ctx, { id }) => {
      const counter = (await ctx.db.get(id))!;
      await ctx.db.patch(id, { count: counter.count + 1 });
      return counter.count + 1;
    },
  }),
  /** Reads the counter, then waits for the test's gate before writing. */
  slowBump: mutation({
    args: { id: v.id("counters") },
    handler: async (ctx, { id }) => {
      const counter = (await ctx.db.get(id))!;
      await gate;
      await ctx.db.patch(id, { count: counter.count + 1 });
      return counter.count + 1;
    },
  }),
  /** Reads the counter and then fails. */
  failing: mutation({
    args: { id: v.id("counters") },
    handler: async (ctx, { id }) => {
      await ctx.db.get(id);
      throw new Error("the handler's own failure");
    },
  }),
  /** Reads both counters at once, then bumps the first. */
  both: mutation({
    args: { a: v.id("counters"), b: v.id("counters") },
    handler: async (ctx, { a, b }) => {
      const [first, second] = await Promise.all([ctx.db.get(a), ctx.db.get(b)]);
      await ctx.db.patch(a, { count: first!.count + 1 });
      return first!.count + second!.count;
    },
  }),
  peek: mutation({ args: { id: v.id("counters") }, handler: async (ctx, { id }) => (await ctx.db.get(id))!.count }),
};

describe("a mutation's turn on a hot document", () => {
  const setup = harnessPerTest(memoryBucket);

  async function runtimeWith(functionRunMsMax?: number) {
    const h = await setup();
    const writer = await h.writer("writer", { pipelineDepth: 4 });
    const app = App.fromModule({ schema, functions: { counters } }, "turns app");
    const catalog = await resolveCatalog(h.bucket, app.schema, new SeededRandom(7));
    const runtime = new FunctionRuntime({ app, catalog, shard: writer.engine, ...(functionRunMsMax !== undefined ? { functionRunMsMax } : {}) });
    const id = (await runtime.runMutation("counters:create", {})).value as DocumentId;
    return { runtime, id, writer };
  }

  it("runs on one document read each other's queued writes instead of losing races", async () => {
    const { runtime, id } = await runtimeWith();
    const values = await Promise.all(Array.from({ length: 40 }, () => runtime.runMutation("counters:bump", { id })));
    expect(values.map((run) => run.value).sort((x, y) => (x as number) - (y as number))).toEqual(Array.from({ length: 40 }, (_, n) => n + 1));
    expect(values.every((run) => run.attempts === 1)).toBe(true);
    expect(runtime.conflicts).toBe(0);
    expect(runtime.documentTurnsWaited).toBeGreaterThan(0);
    expect((await runtime.runMutation("counters:peek", { id })).value).toBe(40);
  });

  it("a holder stuck until its time limit does not take the runs waiting behind it down", async () => {
    const { runtime, id } = await runtimeWith(300);
    let release!: () => void;
    gate = new Promise((resolve) => (release = resolve));
    try {
      const stuck = runtime.runMutation("counters:slowBump", { id }).then(
        () => "acknowledged",
        (error: unknown) => (hasErrorCode(error, "FUNCTION_TIMEOUT") ? "timed out" : error),
      );
      const behind = Promise.all(Array.from({ length: 5 }, () => runtime.runMutation("counters:bump", { id })));
      expect(await stuck).toBe("timed out");
      expect((await behind).map((run) => run.value).sort()).toEqual([1, 2, 3, 4, 5]);
      expect(runtime.documentTurnsWaited).toBeGreaterThan(0);
    } finally {
      release();
      gate = Promise.resolve();
    }
    // What the abandoned holder did after its release wrote nothing.
    expect((await runtime.runMutation("counters:peek", { id })).value).toBe(5);
  });

  it("a run that fails, or only reads, lets the next one in", async () => {
    const { runtime, id } = await runtimeWith();
    const outcomes = await Promise.all([
      runtime.runMutation("counters:failing", { id }).then(
        () => "ok",
        (error: unknown) => (hasErrorCode(error, "FUNCTION_FAILED") ? "failed" : error),
      ),
      runtime.runMutation("counters:peek", { id }).then((run) => run.value),
      runtime.runMutation("counters:bump", { id }).then((run) => run.value),
      runtime.runMutation("counters:peek", { id }).then((run) => run.value),
      runtime.runMutation("counters:bump", { id }).then((run) => run.value),
    ]);
    expect(outcomes[0]).toBe("failed");
    expect(outcomes[1]).toBe(0);
    expect([outcomes[2], outcomes[4]].sort()).toEqual([1, 2]);
    expect((await runtime.runMutation("counters:peek", { id })).value).toBe(2);
  });

  it("a run reading two documents at once reads one snapshot", async () => {
    const { runtime, id } = await runtimeWith();
    const other = (await runtime.runMutation("counters:create", {})).value as DocumentId;
    const runs = await Promise.all(
      Array.from({ length: 20 }, (_, n) => (n % 2 === 0 ? runtime.runMutation("counters:both", { a: id, b: other }) : runtime.runMutation("counters:bump", { id: other }))),
    );
    expect(runs).toHaveLength(20);
    expect((await runtime.runMutation("counters:peek", { id })).value).toBe(10);
    expect((await runtime.runMutation("counters:peek", { id: other })).value).toBe(10);
  });
});

describe("RunLanes", () => {
  it("lets runs into a lane one at a time, in the order they asked", async () => {
    const lanes = new RunLanes();
    const order: string[] = [];
    const leaveFirst = lanes.tryEnter("a")!;
    expect(lanes.tryEnter("a")).toBeNull();
    const second = lanes.enter("a").then((leave) => (order.push("second"), leave));
    const third = lanes.within("a", async () => void order.push("third"));
    expect(lanes.tryEnter("b")).not.toBeNull();
    await Promise.resolve();
    expect(order).toEqual([]);
    leaveFirst();
    leaveFirst(); // leaving twice is leaving once: the third run must still wait for the second
    const leaveSecond = await second;
    expect(order).toEqual(["second"]);
    leaveSecond();
    await third;
    expect(order).toEqual(["second", "third"]);
    expect(lanes.has("a")).toBe(false);
  });

  it("a lane is left when the job in it fails", async () => {
    const lanes = new RunLanes();
    await expect(lanes.within("a", async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(lanes.size).toBe(0);
  });

  it("a hold taken after its run ended is left at once", () => {
    const lanes = new RunLanes();
    const hold = new LaneHold();
    hold.end();
    hold.take(lanes.tryEnter("a")!);
    expect(lanes.has("a")).toBe(false);
    expect(hold.holding).toBe(false);
  });
});
