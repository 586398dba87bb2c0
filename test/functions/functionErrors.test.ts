/**
 * Scenario: an app's functions fail, on the real functions runtime over a shard engine.
 * A function that throws something other than a deliberate error (a bug) fails with
 * FUNCTION_FAILED, an Internal error whose message names the function and a request id
 * and nothing of what was thrown; the runtime logs the stack under that function and
 * request id. A deliberate AppError reaches the caller as APP_ERROR with the data it
 * carries (a mutation that throws it writes nothing); an AppError whose data is not a
 * Cairn value is a failure of the function. (What a function prints, and how all of this
 * reaches clients, is test/server/functionErrors.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { App } from "../../src/functions/App.js";
import { resolveCatalog } from "../../src/functions/catalog.js";
import { FunctionRuntime } from "../../src/functions/FunctionRuntime.js";
import { SeededRandom } from "../../src/base/random.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { harnessPerTest } from "../support/shardHarness.js";
import { functions, schema } from "./errorsApp.js";
import { rejection } from "../support/rejection.js";

const app = { schema, functions };


describe("function errors", () => {
  const harness = harnessPerTest(memoryBucket);

  async function setup() {
    const h = await harness();
    const node = await h.writer("a");
    const loaded = App.fromModule(app, "bank app");
    const logged: string[] = [];
    const runtime = new FunctionRuntime({ app: loaded, catalog: await resolveCatalog(h.bucket, loaded.schema, new SeededRandom(7)), shard: node.engine, log: (line) => logged.push(line) });
    return { runtime, logged };
  }

  it("a bug is FUNCTION_FAILED (Internal): the caller gets a request id, the log the stack under it", async () => {
    const { runtime, logged } = await setup();
    const failed = await rejection(runtime.runMutation("bank:buggy"));
    expect(failed).toMatchObject({ code: "FUNCTION_FAILED", kind: "Internal" });
    const requestId = /request id ([0-9a-f]+)/.exec(failed.message)?.[1];
    expect(requestId).toBeDefined();
    expect(failed.message).toContain("bank:buggy");
    expect(failed.message).not.toContain("internal-detail-42");
    expect(failed.message).not.toContain("TypeError");
    expect(failed.details).toEqual({ path: "bank:buggy", requestId });
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain(`function bank:buggy failed (request ${requestId})`);
    expect(logged[0]).toContain("TypeError: cannot read internal-detail-42");
    expect(logged[0]).toMatch(/errorsApp\.ts:\d+/);
    expect((await runtime.runQuery("bank:count")).value).toBe(0);
  });

  it("a deliberate AppError reaches the caller with its data, and its mutation writes nothing", async () => {
    const { runtime, logged } = await setup();
    const refused = await rejection(runtime.runMutation("bank:withdraw", { amount: 5 }));
    expect(refused).toMatchObject({ code: "APP_ERROR", kind: "InvalidInput", data: { reason: "INSUFFICIENT_FUNDS", balance: 0, wanted: 5 } });
    expect(await rejection(runtime.runQuery("bank:refuse"))).toMatchObject({ code: "APP_ERROR", message: "closed on Sundays", data: "closed on Sundays" });
    expect((await runtime.runQuery("bank:count")).value).toBe(0);
    expect(logged).toEqual([]);
    // Data that is not a Cairn value cannot travel: a failure of the function.
    expect(await rejection(runtime.runQuery("bank:badData"))).toMatchObject({ code: "FUNCTION_FAILED", kind: "Internal" });
    expect(logged[0]).toContain("AppError whose data is not a Cairn value");
  });
});
