/**
 * Scenario: a writer's engine commits, snapshots twice and collects garbage twice; every
 * event it emits (acquired, flushed, snapshot, gc, …) goes to the maintenance log, which
 * keeps only the newest snapshot and GC run of the shard, stamped with the clock when
 * they came. Another shard's records stay apart, and a shard never maintained here has
 * none.
 */
import { describe, expect, it } from "vitest";
import { MaintenanceLog } from "../../src/server/MaintenanceLog.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { commitMany, ShardHarness } from "../support/shardHarness.js";

describe("maintenance log", () => {
  it("keeps each shard's newest snapshot and GC run from the engine's events", async () => {
    const harness = await ShardHarness.create(memoryBucket);
    const { clock } = harness;
    try {
      const a = await harness.writer("a");
      const log = new MaintenanceLog(clock);
      const feed = () => {
        for (const event of a.events.splice(0)) log.engineEvent(event);
      };
      await commitMany(a, harness, 2);
      feed();
      expect(log.of(0)).toEqual({ lastSnapshot: null, lastGc: null });
      await a.engine.snapshotNow();
      await a.engine.collectGarbageNow();
      feed();
      clock.advance(60_000);
      await commitMany(a, harness, 2);
      const second = (await a.engine.snapshotNow())!;
      feed();
      const snapshotAt = clock.nowMs();
      clock.advance(60_000);
      const gc = await a.engine.collectGarbageNow();
      feed();
      expect(log.of(0)).toEqual({
        lastSnapshot: { time: snapshotAt, seqno: second.seqno },
        lastGc: { time: clock.nowMs(), segmentsDeleted: gc.segmentsDeleted, logStartAfter: second.seqno + 1, heldBackBy: null },
      });
      expect(gc.segmentsDeleted).toBeGreaterThan(0);
      // Another shard's GC is kept apart; one never maintained here has nothing.
      log.engineEvent({ type: "gc", shard: 3, report: { ...gc, logStartAfter: 7, segmentsDeleted: 0, heldBackBy: 4 } });
      expect(log.of(3)).toEqual({ lastSnapshot: null, lastGc: { time: clock.nowMs(), segmentsDeleted: 0, logStartAfter: 7, heldBackBy: 4 } });
      expect(log.of(0).lastGc!.logStartAfter).toBe(second.seqno + 1);
      expect(log.of(1)).toEqual({ lastSnapshot: null, lastGc: null });
    } finally {
      await harness.close();
    }
  });
});
