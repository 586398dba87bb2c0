/**
 * Scenario: the demo app that `npm start` serves, loaded from its file as `cairn serve`
 * loads it, run on a real engine: chat messages sent and listed oldest first, paged, a
 * bad message refused, and a counter incremented concurrently.
 */
import { describe, expect, it } from "vitest";
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
    await expect(runtime.runMutation("messages:send", { channel: "general", author: "ada", body: "   " })).rejects.toMatchObject({ code: "FUNCTION_FAILED" });
    await Promise.all(Array.from({ length: 10 }, () => runtime.runMutation("counters:increment", { name: "visits" })));
    expect((await runtime.runQuery("counters:get", { name: "visits" })).value).toBe(10);
  });
});
