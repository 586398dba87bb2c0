/**
 * Scenario: a follower engine (it never writes) prunes its local history older than
 * historyRetentionMs by itself, on the maintenance cadence, with no loop outside the
 * engine; an engine whose driver list leaves "prune" out does not; closing the engine
 * stops the driver (no timer of it is left on the clock).
 */
import { afterEach, describe, expect, it } from "vitest";
import { memoryBucket } from "../support/bucketFactories.js";
import { eventually } from "../support/Gate.js";
import { insertUnit, ShardHarness, TABLE } from "../support/shardHarness.js";

let harness: ShardHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe("a follower's own pruning", () => {
  it("prunes history older than its window on its own, only with the prune driver, and stops on close", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const writer = await h.writer("writer");
    const id = h.newId();
    const first = await writer.engine.commit(insertUnit(writer.engine, id, { v: 1 }));
    h.clock.advance(30_000);
    const second = await writer.engine.commit({
      readTs: writer.engine.readTs,
      documents: [{ tableNumber: TABLE, id, value: JSON.stringify({ v: 2 }), prevTs: first.ts }],
      indexWrites: [],
    });
    const tuning = { maintenanceIntervalMs: 1_000, historyRetentionMs: 10_000 };
    const follower = await h.node("follower", tuning, { drivers: ["prune"] });
    // The same tuning with an explicit driver list that leaves "prune" out (a test, a simulation).
    const without = await h.node("without", tuning, { drivers: [] });
    for (const node of [follower, without]) expect(node.local.get(id, first.ts)?.value).toBe(JSON.stringify({ v: 1 }));

    // 20 s later the first revision is older than the window at the frontier (second.ts).
    h.clock.advance(20_000);
    await eventually(() => follower.events.some((event) => event.type === "pruned"));
    expect(follower.engine.state.kind).toBe("following");
    expect(() => follower.local.get(id, first.ts)).toThrow(expect.objectContaining({ code: "LOCAL_HISTORY_UNAVAILABLE" }));
    expect(follower.local.get(id, follower.engine.readTs)).toMatchObject({ ts: second.ts });
    expect(without.events.some((event) => event.type === "pruned")).toBe(false);
    expect(without.local.get(id, first.ts)?.value).toBe(JSON.stringify({ v: 1 }));

    // Only the follower's prune driver waits on the clock; closing the engine ends it.
    expect(h.clock.pendingSleepers).toBe(1);
    await follower.engine.close();
    expect(h.clock.pendingSleepers).toBe(0);
    expect(follower.events.filter((event) => event.type === "driver-error")).toEqual([]);
  });
});
