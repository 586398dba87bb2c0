/**
 * Scenario: the demo app that `npm start` serves, loaded from its file as `cairn serve`
 * loads it, run on a real engine: chat messages sent and listed oldest first, paged, a
 * bad message refused, and a counter incremented concurrently; messages sent one after
 * another within one millisecond still list in the order they were sent.
 */
import { describe, expect, it } from "vitest";
import { systemClock, type Clock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { loadApp } from "../../src/functions/loadApp.js";
import { DEMO_APP_PATH } from "../../src/cli/serveCommand.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { harnessPerTest } from "../support/shardHarness.js";

describe("the demo app", () => {
  const harness = harnessPerTest(memoryBucket);

  it("sends, lists and pages messages, and counts", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const app = await loadApp(DEMO_APP_PATH);
    const runtime = new FunctionRuntime({ app, catalog: await resolveCatalog(h.bucket, app.schema, new SeededRandom(1)), shard: node.engine });
    for (const body of ["hello", "how are you?", "fine"]) await runtime.runMutation("messages:send", { channel: "general", author: "ada", body });
    await runtime.runMutation("messages:send", { channel: "random", author: "bob", body: "elsewhere" });
    const listed = (await runtime.runQuery("messages:list", { channel: "general", limit: 2 })).value as { body: string }[];
    expect(listed.map((message) => message.body)).toEqual(["how are you?", "fine"]);
    const first = (await runtime.runQuery("messages:page", { channel: "general", cursor: null, numItems: 2 })).value as { page: { body: string }[]; continueCursor: string };
    const second = (await runtime.runQuery("messages:page", { channel: "general", cursor: first.continueCursor, numItems: 2 })).value as { page: { body: string }[]; isDone: boolean };
    expect([...first.page, ...second.page].map((message) => message.body)).toEqual(["hello", "how are you?", "fine"]);
    expect(second.isDone).toBe(true);
    await expect(runtime.runMutation("messages:send", { channel: "general", author: "ada", body: "   " })).rejects.toMatchObject({ code: "APP_ERROR", data: "a message needs a body" });
    await Promise.all(Array.from({ length: 10 }, () => runtime.runMutation("counters:increment", { name: "visits" })));
    expect((await runtime.runQuery("counters:get", { name: "visits" })).value).toBe(10);
  });

  it("lists messages sent within one millisecond in the order they were sent", async () => {
    const h = await harness();
    const node = await h.writer("a");
    const app = await loadApp(DEMO_APP_PATH);
    // The wall clock stands still: every mutation starts in the same millisecond.
    const stopped: Clock = { nowMs: () => 1_800_000_000_000, monotonicMs: () => systemClock.monotonicMs(), sleep: (ms, signal) => systemClock.sleep(ms, signal), setTimer: systemClock.setTimer };
    const runtime = new FunctionRuntime({ app, catalog: await resolveCatalog(h.bucket, app.schema, new SeededRandom(1)), shard: node.engine, clock: stopped });
    const bodies = Array.from({ length: 20 }, (_, i) => `message ${i}`);
    for (const body of bodies) await runtime.runMutation("messages:send", { channel: "general", author: "ada", body });
    const listed = (await runtime.runQuery("messages:list", { channel: "general", limit: 20 })).value as { body: string; _creationTime: number }[];
    expect(listed.map((message) => message.body)).toEqual(bodies);
    const times = listed.map((message) => message._creationTime);
    expect(times.every((time, i) => i === 0 || time > times[i - 1]!)).toBe(true);
    expect(times[0]).toBe(1_800_000_000_000);
  });
});
