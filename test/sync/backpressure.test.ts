/**
 * Scenarios: clients that do not read. A paused reader's Transitions queue up to the
 * droppable bound, are dropped, and the session is resynced with one Transition once
 * the socket drains — the queue never grows with the commit rate, and the client ends
 * at the right result with an unbroken version chain. A client over its limits too long
 * is disconnected; one that sends requests without reading answers overflows its
 * response budget and is closed once. Other sessions are not delayed by either.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { OutboxLimits } from "../../src/sync/Outbox.js";
import { eventually } from "../support/Gate.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { harnessPerTest } from "../support/shardHarness.js";
import { syncFixture, type SyncFixture } from "./syncHarness.js";

const tightLimits: OutboxLimits = {
  sendBufferBytes: 400,
  droppableFramesMax: 5,
  droppableBytesMax: 1_000_000,
  responseFramesMax: 20,
  responseBytesMax: 1_000_000,
};

describe("backpressure", () => {
  const harness = harnessPerTest(memoryBucket);
  let fixture: SyncFixture | null = null;
  afterEach(async () => {
    await fixture?.handler.close(0);
    fixture = null;
  });

  it("drops a paused reader's Transitions past the bound and resyncs it once it reads again", async () => {
    const log: string[] = [];
    const f = (fixture = await syncFixture(await harness(), { outboxLimits: tightLimits, log: (line) => log.push(line) }));
    const slow = f.client({ paused: true });
    const fast = f.client();
    const writer = f.client();
    slow.connectionPrime();
    await Promise.all([fast.connect(), writer.connect()]);
    slow.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "counters:get", args: { name: "hot" } }], remove: [] });
    const fastQuery = await fast.subscribe("counters:get", { name: "hot" });
    let peakQueued = 0;
    let lastTs = 0;
    for (let bump = 1; bump <= 60; bump++) {
      lastTs = (await writer.mutate("counters:bump", { name: "hot" })).ts!;
      peakQueued = Math.max(peakQueued, f.handler.stats().queuedFrames);
    }
    // The fast reader is never held back by the slow one.
    await fast.reachTs(lastTs);
    expect(fast.valueOf(fastQuery)).toBe(60);
    expect(peakQueued).toBeLessThanOrEqual(tightLimits.droppableFramesMax + 2);
    expect(f.handler.stats().droppedFrames).toBeGreaterThan(0);
    expect(log.some((line) => line.includes("resynced"))).toBe(true);
    slow.resume();
    await slow.reachTs(lastTs);
    expect(slow.valueOf(1)).toBe(60);
    expect(slow.versionMismatches).toEqual([]);
    expect(slow.terminated).toBe(false);
  });

  it("disconnects a client that stays over its limits", async () => {
    const f = (fixture = await syncFixture(await harness(), { outboxLimits: tightLimits, overLimitsMsMax: 0, sweepIntervalMs: 5 }));
    const stuck = f.client({ paused: true });
    const writer = f.client();
    stuck.connectionPrime();
    await writer.connect();
    stuck.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "counters:get", args: { name: "c" } }], remove: [] });
    for (let bump = 0; bump < 10 && !stuck.terminated; bump++) await writer.mutate("counters:bump", { name: "c" });
    await eventually(() => stuck.terminated);
    expect(f.handler.sessionCount).toBe(1);
  });

  it("closes a session once when it sends requests without reading the answers, keeping its writes", async () => {
    const log: string[] = [];
    const f = (fixture = await syncFixture(await harness(), { outboxLimits: tightLimits, log: (line) => log.push(line) }));
    const flooder = f.client({ paused: true });
    flooder.connectionPrime();
    for (let request = 1; request <= 40; request++) {
      flooder.write({ type: "Mutation", requestId: request, path: "counters:bump", args: { name: "flood" }, clientId: "flooder", seq: request });
    }
    await eventually(() => flooder.terminated);
    expect(log.filter((line) => line.includes("response budget"))).toHaveLength(1);
    // What it committed stays committed and answerable from receipts.
    const committed = (await f.runtime.runQuery("counters:get", { name: "flood" })).value as number;
    expect(committed).toBeGreaterThan(0);
    const again = f.client();
    const ack = await again.connect({ clientId: "flooder", held: [1] });
    expect(ack.known).toEqual([1]);
  });
});
