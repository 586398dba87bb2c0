/**
 * Scenario: the frontier watch over made-up shard views on a manual clock. A common
 * frontier that stands still while another shard has newer commits is logged once, after
 * the stall bound, naming the shard that pins it, its writer and whether its lease is
 * live, and once more when it moves; an idle deployment (every shard at the same
 * frontier) is no stall. A followed shard whose tail has not been complete for the bound
 * is logged once with its last error, and again when it caught up; a shard this node
 * writes never is.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { FrontierWatch, type WatchedShard } from "../../src/server/FrontierWatch.js";

function shard(fields: Partial<WatchedShard> & { shard: number }): WatchedShard {
  return { frontierTs: 100, lastDataTs: 0, writer: "w", writerLive: true, writing: false, stalenessMs: 0, lastError: null, ...fields };
}

describe("frontier watch", () => {
  it("logs a held-back frontier once, naming the shard and its writer, and when it moves again", () => {
    const clock = new ManualClock();
    const lines: string[] = [];
    let shards = [shard({ shard: 0, frontierTs: 5_000_000, lastDataTs: 5_000_000 }), shard({ shard: 1, frontierTs: 1_000_000, writer: "gone", writerLive: false })];
    const watch = new FrontierWatch({ clock, log: (line) => lines.push(line), stallWarnMs: 5_000, shards: () => shards });
    watch.check();
    clock.advance(4_999);
    watch.check();
    expect(lines).toEqual([]);
    clock.advance(1);
    watch.check();
    clock.advance(10_000);
    watch.check();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^warning: frontier: has not advanced for 5\.0 s at ts 1000000, held back by shard 1 \(4000 ms behind the newest commit; writer gone \(its lease lapsed\)\).*waits for a takeover/);
    shards = [shards[0]!, shard({ shard: 1, frontierTs: 5_000_000 })];
    watch.check();
    expect(lines[1]).toMatch(/^frontier: moving again \(ts 5000000\) after 15\.0 s held back/);
  });

  it("does not call an idle deployment stalled, even with shards' fences or ticks at different ts", () => {
    const clock = new ManualClock();
    const lines: string[] = [];
    const shards = [shard({ shard: 0, frontierTs: 900, lastDataTs: 500 }), shard({ shard: 1, frontierTs: 600, lastDataTs: 0 })];
    const watch = new FrontierWatch({ clock, log: (line) => lines.push(line), stallWarnMs: 5_000, shards: () => shards });
    for (let step = 0; step < 10; step++) {
      watch.check();
      clock.advance(5_000);
    }
    expect(lines).toEqual([]);
  });

  it("logs a followed shard's lagging tail once with its last error, never a shard this node writes", () => {
    const clock = new ManualClock();
    const lines: string[] = [];
    let shards = [shard({ shard: 0, writing: true, stalenessMs: 0 }), shard({ shard: 1, stalenessMs: 7_000, lastError: "[STORE_UNAVAILABLE] boom", writer: "w1" })];
    const watch = new FrontierWatch({ clock, log: (line) => lines.push(line), stallWarnMs: 5_000, shards: () => shards });
    watch.check();
    watch.check();
    expect(lines).toEqual(["warning: shard 1: this node's tail has not been complete for 7.0 s (writer w1; last error: [STORE_UNAVAILABLE] boom): reads here lag the shard's log"]);
    shards = [shards[0]!, shard({ shard: 1, stalenessMs: 10 })];
    watch.check();
    expect(lines[1]).toBe("shard 1: this node's tail caught up again");
  });
});
