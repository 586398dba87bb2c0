/**
 * Scenario: the dashboard's follower watermarks, read from a real bucket where followers
 * published them with ConsumerWatermarks. Every shard's followers come back by consumer
 * id, malformed ones left out; a second ask within 30 s is answered without touching the
 * bucket, and after 30 s the bucket is read again; callers asking while a read is in
 * flight share it; a shard whose read fails keeps its last good followers, says why, and
 * is not retried before 30 s pass.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { ConsumerWatermarks } from "../../src/gc/ConsumerWatermarks.js";
import { FsObjectStore } from "../../src/objectstore/FsObjectStore.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { followerWatermarks } from "../../src/server/followerWatermarks.js";
import { FaultyObjectStore } from "../support/FaultyObjectStore.js";
import { Gate } from "../support/Gate.js";

const directories: string[] = [];
afterEach(() => {
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

describe("follower watermarks", () => {
  it("reads every shard's followers from the bucket, by consumer id, leaving malformed ones out", async () => {
    const directory = mkdtempSync(join(tmpdir(), "cairn-watermarks-"));
    directories.push(directory);
    const store = new FsObjectStore(directory);
    const clock = new ManualClock();
    const random = new SeededRandom(1);
    await new ConsumerWatermarks(store, 0, random).publish("replica-b", 41, clock.nowMs() - 5_000);
    await new ConsumerWatermarks(store, 0, random).publish("replica-a", 17, clock.nowMs() - 1_000);
    await new ConsumerWatermarks(store, 2, random).publish("replica-a", -1, clock.nowMs());
    // Someone wrote garbage under shard 2's consumers: reported by readAll, not shown here.
    await store.create("s2/consumers/bogus", new TextEncoder().encode("{not json"));
    await store.create("s2/consumers/not a node id", new TextEncoder().encode("{}"));
    const reader = followerWatermarks({ store, random, clock, numShards: 3 });
    const shards = await reader.read();
    expect(shards).toEqual([
      {
        shard: 0,
        followers: [
          { consumerId: "replica-a", appliedSeqno: 17, updatedAt: clock.nowMs() - 1_000 },
          { consumerId: "replica-b", appliedSeqno: 41, updatedAt: clock.nowMs() - 5_000 },
        ],
        readAt: clock.nowMs(),
        error: null,
      },
      { shard: 1, followers: [], readAt: clock.nowMs(), error: null },
      { shard: 2, followers: [{ consumerId: "replica-a", appliedSeqno: -1, updatedAt: clock.nowMs() }], readAt: clock.nowMs(), error: null },
    ]);
    await store.close();
  });

  it("reads the bucket at most every 30 s, and shares a read in flight", async () => {
    const clock = new ManualClock();
    const random = new SeededRandom(2);
    const bucket = new MemoryObjectStore();
    const store = new FaultyObjectStore(bucket, random, clock);
    const watermarks = new ConsumerWatermarks(bucket, 0, random);
    await watermarks.publish("replica-a", 5, clock.nowMs());
    const reader = followerWatermarks({ store, random, clock, numShards: 2 });
    await reader.read();
    expect(store.calls.list).toBe(2);
    await watermarks.publish("replica-a", 9, clock.nowMs());
    clock.advance(29_999);
    expect((await reader.read())[0]!.followers[0]!.appliedSeqno).toBe(5);
    expect(store.calls.list).toBe(2);
    clock.advance(1);
    const gate = new Gate();
    store.inject({ operations: ["list"], effect: { until: gate.promise }, once: true });
    const first = reader.read();
    const second = reader.read();
    expect(second).toBe(first);
    gate.open();
    const [a, b] = await Promise.all([first, second]);
    expect(a).toBe(b);
    expect(a[0]!.followers[0]!.appliedSeqno).toBe(9);
    expect(store.calls.list).toBe(4);
  });

  it("keeps a failed shard's last good followers with the error, and waits 30 s before asking again", async () => {
    const clock = new ManualClock();
    const random = new SeededRandom(3);
    const bucket = new MemoryObjectStore();
    const store = new FaultyObjectStore(bucket, random, clock);
    await new ConsumerWatermarks(bucket, 0, random).publish("replica-a", 5, clock.nowMs());
    await new ConsumerWatermarks(bucket, 1, random).publish("replica-a", 7, clock.nowMs());
    const reader = followerWatermarks({ store, random, clock, numShards: 2 });
    const goodAt = clock.nowMs();
    await reader.read();
    clock.advance(30_000);
    await new ConsumerWatermarks(bucket, 1, random).publish("replica-a", 8, clock.nowMs());
    store.inject({ operations: ["list"], keyPattern: /^s0\//, effect: "unreachable" });
    const failed = await reader.read();
    expect(failed[0]).toEqual({
      shard: 0,
      followers: [{ consumerId: "replica-a", appliedSeqno: 5, updatedAt: goodAt }],
      readAt: goodAt,
      error: "[STORE_UNREACHABLE] injected: store unreachable for list s0/consumers/",
    });
    expect(failed[1]).toMatchObject({ followers: [{ appliedSeqno: 8 }], readAt: clock.nowMs(), error: null });
    const listsAfterFailure = store.calls.list;
    clock.advance(10_000);
    expect(await reader.read()).toBe(failed);
    expect(store.calls.list).toBe(listsAfterFailure);
    store.clear();
    clock.advance(20_000);
    const recovered = await reader.read();
    expect(recovered[0]).toEqual({ shard: 0, followers: [{ consumerId: "replica-a", appliedSeqno: 5, updatedAt: goodAt }], readAt: clock.nowMs(), error: null });
  });

  it("reads a shard that never answered as no followers with its error", async () => {
    const clock = new ManualClock();
    const random = new SeededRandom(4);
    const store = new FaultyObjectStore(new MemoryObjectStore(), random, clock);
    store.inject({ operations: ["list"], effect: "transient" });
    const reader = followerWatermarks({ store, random, clock, numShards: 1 });
    expect(await reader.read()).toEqual([{ shard: 0, followers: [], readAt: null, error: "[STORE_TRANSIENT] injected transient failure of list s0/consumers/" }]);
  });

  it("refuses a deployment without shards and a negative refresh", () => {
    const clock = new ManualClock();
    const base = { store: new MemoryObjectStore(), random: new SeededRandom(5), clock };
    expect(() => followerWatermarks({ ...base, numShards: 0 })).toThrow(/numShards/);
    expect(() => followerWatermarks({ ...base, numShards: 1, refreshMs: -1 })).toThrow(/refreshMs/);
  });
});
