/**
 * Scenario: the idle-shard ticks of a 3-shard writer (DESIGN.md §5), on a manual clock:
 * nothing is written while every shard is idle; a commit on one shard makes each other
 * shard tick at once (the leading edge) and then at most once per frontierTickMs, so the
 * common frontier passes the commit; the
 * ticks do not set each other off; without a reader of the frontier nobody ticks; and a
 * tick in flight does not hold the common frontier back (it holds no data), while a data
 * flush in flight does.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { newDocumentId } from "../../src/model/DocumentId.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { eventually, Gate } from "../support/Gate.js";
import { FaultyObjectStore } from "../support/FaultyObjectStore.js";
import { insertUnit } from "../support/shardHarness.js";
import { turns } from "../replica/replicaSupport.js";

const TICK_MS = 250;
const opened: ShardedStore[] = [];
afterEach(async () => {
  for (const sharded of opened.splice(0)) await sharded.close();
});

async function writer(frontierWanted?: () => boolean) {
  const clock = new ManualClock();
  const random = new SeededRandom(4);
  const sharded = await ShardedStore.open({
    store: new MemoryObjectStore(),
    localDirectory: ":memory:",
    nodeId: "w",
    numShards: 3,
    clock,
    random,
    ...(frontierWanted ? { frontierWanted } : {}),
  });
  opened.push(sharded);
  await sharded.acquireAll();
  const positions = () => sharded.engines.map((engine) => engine.position.nextSeqno);
  /** Lets `cadences` tick intervals pass, the engines' work between them included. */
  const idle = async (cadences: number) => {
    for (let at = 0; at < cadences; at++) {
      clock.advance(TICK_MS);
      await turns();
    }
  };
  const commitOn = (shard: number) => sharded.engines[shard]!.commit(insertUnit(sharded.engines[shard]!, newDocumentId(1, random), { shard }));
  return { sharded, clock, positions, idle, commitOn };
}

describe("idle-shard ticks", () => {
  it("none while all shards are idle; after a commit each other shard ticks once and the common frontier passes it", async () => {
    const w = await writer();
    const start = w.positions();
    await w.idle(20); // 5 s: heartbeats, but not one segment
    expect(w.positions()).toEqual(start);

    const committed = await w.commitOn(0);
    await w.idle(1);
    await eventually(() => w.sharded.engines.every((engine) => engine.readTs >= committed.ts));
    const after = w.positions();
    expect(after).toEqual([start[0]! + 1, start[1]! + 1, start[2]! + 1]);
    // The common frontier of the followers' view (each shard's last segment) is past the commit.
    expect(Math.min(...w.sharded.engines.map((engine) => engine.readTs))).toBeGreaterThanOrEqual(committed.ts);

    // The ticks are not commits: they do not make the other shards tick back.
    await w.idle(20);
    expect(w.positions()).toEqual(after);
  });

  it("a busy shard beside idle ones: each idle shard ticks at most once per frontierTickMs, however often the busy one commits", async () => {
    const w = await writer();
    const start = w.positions();
    let commits = 0;
    for (let cadence = 0; cadence < 6; cadence++) {
      for (let commit = 0; commit < 5; commit++, commits++) await w.commitOn(2);
      await w.idle(1);
    }
    await eventually(() => w.sharded.engines[0]!.readTs >= w.sharded.engines[2]!.readTs);
    const ticks = w.positions().map((next, shard) => next - start[shard]!);
    expect(ticks[2]).toBe(commits);
    // Ticks stay frontierTickMs apart: over 6 intervals, one at the first commit (the
    // leading edge, so a quiet shard's first commit is seen at once) and at most one per
    // interval after it.
    for (const idleShard of [0, 1]) {
      expect(ticks[idleShard]).toBeGreaterThanOrEqual(1);
      expect(ticks[idleShard]).toBeLessThanOrEqual(7);
    }
  });

  it("without a reader of the common frontier (no replica), an idle shard never ticks", async () => {
    const w = await writer(() => false);
    const start = w.positions();
    await w.commitOn(1);
    await w.idle(20);
    expect(w.positions()).toEqual([start[0]!, start[1]! + 1, start[2]!]);
  });

  it("a tick in flight leaves the common frontier at the clock; a data flush in flight holds it at its shard's last segment", async () => {
    const clock = new ManualClock();
    const random = new SeededRandom(5);
    const store = new FaultyObjectStore(new MemoryObjectStore(), random, clock);
    const sharded = await ShardedStore.open({ store, localDirectory: ":memory:", nodeId: "w", numShards: 2, clock, random });
    opened.push(sharded);
    await sharded.acquireAll();
    const [first, second] = sharded.engines as [typeof sharded.engines[0], typeof sharded.engines[0]];
    const gate = new Gate();
    store.inject({ operations: ["create"], keyPattern: /^s1\/log\//, effect: { until: gate.promise } });
    const committed = await first.commit(insertUnit(first, newDocumentId(1, random), { shard: 0 }));
    clock.advance(TICK_MS);
    await eventually(() => store.held === 1); // shard 1's tick is being created
    expect(second.readTs).toBeLessThan(committed.ts);
    expect(sharded.readTs).toBeGreaterThanOrEqual(committed.ts);
    gate.open();
    await eventually(() => store.held === 0 && second.readTs >= committed.ts);

    store.clear();
    const held = new Gate();
    store.inject({ operations: ["create"], keyPattern: /^s1\/log\//, effect: { until: held.promise } });
    const pending = second.commit(insertUnit(second, newDocumentId(1, random), { shard: 1 }));
    await eventually(() => store.held === 1); // shard 1's data segment is being created
    const later = await first.commit(insertUnit(first, newDocumentId(1, random), { shard: 0 }));
    expect(sharded.readTs).toBe(second.readTs);
    expect(sharded.readTs).toBeLessThan(later.ts);
    held.open();
    const landed = await pending;
    await eventually(() => sharded.readTs >= landed.ts);
  });
});
