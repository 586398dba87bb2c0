/**
 * Scenario: the shard log protocol of DESIGN.md §4, one `it` per property, each run
 * against an in-memory bucket and against the S3 test endpoint through the real AWS SDK.
 * Nodes share a manual clock; bucket calls are held, lost or failed on purpose with a
 * fault-injecting view of the bucket per node.
 */
import { describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { LocalStore } from "../../src/local/index.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import { readSegment } from "../../src/segments/logReader.js";
import { encodeSegment } from "../../src/segments/Segment.js";
import { EMPTY_RECORD_BATCH } from "../../src/segments/recordCodec.js";
import { HybridClock } from "../../src/shard/HybridClock.js";
import { ShardEngine } from "../../src/shard/ShardEngine.js";
import { BUCKET_FACTORIES } from "../support/bucketFactories.js";
import { eventually, Gate } from "../support/Gate.js";
import { harnessPerTest, insertUnit, type ShardHarness } from "../support/shardHarness.js";

const TTL = 10_000;
const code = (expected: string) => (error: unknown) => hasErrorCode(error, expected as never);

/**
 * Writer "a" starts a commit whose segment create stalls (held by a gate) and then loses
 * its lease: the clock moves past it while its heartbeat never runs. Opening the gate
 * lets the zombie's create reach the bucket.
 */
async function stallZombieCommit(h: ShardHarness) {
  const a = await h.writer("a", { leaseTtlMs: TTL });
  const gate = new Gate();
  a.store.inject({ operations: ["create"], once: true, effect: { until: gate.promise } });
  const zombieId = h.newId();
  const zombieCommit = a.engine.commit(insertUnit(a.engine, zombieId, { zombie: true }));
  await eventually(() => a.store.held === 1);
  h.clock.advance(TTL + 1);
  return { a, gate, zombieId, zombieCommit };
}

describe.each(BUCKET_FACTORIES)("shard protocol on $name", (factory) => {
  const setup = harnessPerTest(factory);

  it("first commit: acquire writes a fence, commits get increasing timestamps and are batched", async () => {
    const h = await setup();
    const a = await h.writer("a");
    expect(a.engine.position.nextSeqno).toBe(1); // the fence took slot 0
    const ids = Array.from({ length: 40 }, () => h.newId());
    const results = await Promise.all(ids.map((id, index) => a.engine.commit(insertUnit(a.engine, id, { index }))));
    const timestamps = results.map((result) => result.ts);
    expect(new Set(timestamps).size).toBe(40);
    expect([...timestamps].sort((x, y) => x - y)).toEqual(timestamps);
    // The first unit flushes alone; the rest accumulate behind it into few segments.
    const segments = new Set(results.map((result) => result.seqno));
    expect(segments.size).toBeLessThan(40);
    expect(results[0]!.seqno).toBe(1);
    for (const [index, id] of ids.entries()) {
      expect(a.local.get(id, a.engine.readTs)?.value).toBe(JSON.stringify({ index }));
    }
    const reader = await h.node("reader");
    expect(reader.local.get(ids[39]!, reader.engine.readTs)?.ts).toBe(timestamps[39]);
  });

  it("a live lease is refused", async () => {
    const h = await setup();
    await h.writer("a", { leaseTtlMs: TTL });
    const b = await h.node("b");
    await expect(b.engine.acquire()).rejects.toSatisfy(code("LEASE_HELD"));
    expect(b.engine.state.kind).toBe("following");
  });

  it("fences a stale writer: its commit and heartbeat fail and the manifest is unchanged", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await a.engine.commit(insertUnit(a.engine, h.newId(), { by: "a" }));
    h.clock.advance(TTL + 1);
    const b = await h.writer("b", { leaseTtlMs: TTL });
    const manifest = new ShardManifest(h.bucket, 0, h.deploymentId, new SeededRandom(5));
    const before = await manifest.load();
    const staleId = h.newId();
    await expect(a.engine.commit(insertUnit(a.engine, staleId, { by: "stale a" }))).rejects.toSatisfy(code("FENCED"));
    expect(a.engine.state.kind).toBe("fenced");
    await expect(a.engine.heartbeat()).rejects.toSatisfy(code("FENCED"));
    await expect(a.engine.commit(insertUnit(a.engine, h.newId(), {}))).rejects.toSatisfy(code("FENCED"));
    expect(await manifest.refresh()).toEqual(before);
    const reader = await h.node("reader");
    expect(reader.local.get(staleId, reader.engine.readTs)).toBeNull();
    await b.engine.commit(insertUnit(b.engine, h.newId(), { by: "b" }));
  });

  it("takes over after lease expiry, and immediately after relinquish", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    const first = h.newId();
    await a.engine.commit(insertUnit(a.engine, first, { v: 1 }));
    await a.engine.relinquish();
    const b = await h.writer("b", { leaseTtlMs: TTL });
    expect(b.local.get(first, b.engine.readTs)).not.toBeNull();
    const second = h.newId();
    await b.engine.commit(insertUnit(b.engine, second, { v: 2 }));
    // b crashes (never relinquishes): a may take over only once the lease expired.
    await expect(a.engine.acquire()).rejects.toSatisfy(code("LEASE_HELD"));
    h.clock.advance(TTL + 1);
    await a.engine.acquire();
    expect(a.local.get(second, a.engine.readTs)?.value).toBe(JSON.stringify({ v: 2 }));
    const manifest = await new ShardManifest(h.bucket, 0, h.deploymentId, new SeededRandom(5)).load();
    expect(manifest).toMatchObject({ epoch: 3, writer: { nodeId: "a" } });
  });

  it("a zombie's create that lands before the new writer's fence is included", async () => {
    const h = await setup();
    const { a, gate, zombieId, zombieCommit } = await stallZombieCommit(h);
    const b = await h.node("b", { leaseTtlMs: TTL });
    const fenceGate = new Gate();
    b.store.inject({ operations: ["create"], once: true, effect: { until: fenceGate.promise } });
    const takeover = b.engine.acquire();
    await eventually(() => b.store.held === 1);
    gate.open(); // the zombie's segment lands in the slot b is about to fence
    await expect(zombieCommit).resolves.toMatchObject({ seqno: 1 });
    fenceGate.open();
    await takeover;
    expect(b.engine.position.nextSeqno).toBe(3); // zombie at 1, fence at 2
    expect(b.local.get(zombieId, b.engine.readTs)).not.toBeNull();
    // The zombie learned from its verification that it was fenced, after acknowledging.
    expect(a.engine.state.kind).toBe("fenced");
  });

  it("a zombie's create that arrives after the new writer's fence is refused and invisible", async () => {
    const h = await setup();
    const { gate, zombieId, zombieCommit } = await stallZombieCommit(h);
    const b = await h.writer("b", { leaseTtlMs: TTL });
    gate.open();
    await expect(zombieCommit).rejects.toSatisfy(code("FENCED"));
    const reader = await h.node("reader");
    expect(reader.local.get(zombieId, reader.engine.readTs)).toBeNull();
    expect(b.engine.position.nextSeqno).toBe(reader.engine.position.nextSeqno);
  });

  it("skips a lower-epoch leftover past the fence, for the writer and every reader", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await a.engine.commit(insertUnit(a.engine, h.newId(), {}));
    await a.engine.relinquish();
    const b = await h.writer("b", { leaseTtlMs: TTL });
    const tail = b.engine.position.nextSeqno;
    // A leftover of epoch 1 at the tail, as an overlapping create of a fenced writer would leave.
    const leftover = encodeSegment(
      {
        deploymentId: h.deploymentId,
        shard: 0,
        seqno: tail,
        epoch: 1,
        kind: "tick",
        count: 0,
        minTs: 1,
        maxTs: 1,
        prevHash: null,
        writer: "a",
      },
      EMPTY_RECORD_BATCH,
    );
    await h.bucket.create(bucketLayout.segment(0, tail), leftover.bytes);
    const result = await b.engine.commit(insertUnit(b.engine, h.newId(), {}));
    expect(result.seqno).toBe(tail + 1);
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(b.engine.position);
  });

  it("a zombie writing into a garbage-collected slot is never acknowledged", async () => {
    const h = await setup();
    const { a, gate, zombieId, zombieCommit } = await stallZombieCommit(h);
    const zombieSlot = a.engine.position.nextSeqno;
    const b = await h.writer("b", { leaseTtlMs: TTL });
    for (let index = 0; index < 3; index++) await b.engine.commit(insertUnit(b.engine, h.newId(), { index }));
    await b.engine.snapshotNow();
    const report = await b.engine.collectGarbageNow();
    expect(report.logStartAfter).toBeGreaterThan(zombieSlot);
    expect(await h.bucket.get(bucketLayout.segment(0, zombieSlot))).toBeNull();
    gate.open(); // the stalled create lands in the collected slot
    await expect(zombieCommit).rejects.toSatisfy(code("FENCED"));
    expect(await h.bucket.get(bucketLayout.segment(0, zombieSlot))).not.toBeNull();
    const reader = await h.node("reader");
    expect(reader.local.get(zombieId, reader.engine.readTs)).toBeNull();
    expect((await b.engine.collectGarbageNow({ sweep: true })).straysDeleted).toBe(1);
  });

  it("resolves a lost create response and a lost manifest CAS response", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    a.store.inject({ operations: ["create"], once: true, effect: "lose-response" });
    const id = h.newId();
    const result = await a.engine.commit(insertUnit(a.engine, id, { lost: "create" }));
    expect(a.engine.state.kind).toBe("writing");
    a.store.inject({ operations: ["casPut"], once: true, effect: "lose-response" });
    await a.engine.heartbeat();
    expect(a.engine.state.kind).toBe("writing");
    const next = await a.engine.commit(insertUnit(a.engine, h.newId(), {}));
    expect(next.seqno).toBe(result.seqno + 1);
    const reader = await h.node("reader");
    expect(reader.local.get(id, reader.engine.readTs)?.ts).toBe(result.ts);
  });

  it("a flush whose outcome is unknown poisons the engine until it is re-opened", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    // The create lands but its response is lost, and reading the slot back fails too.
    a.store.inject({ operations: ["create"], once: true, effect: "lose-response" });
    a.store.inject({ operations: ["get"], once: true, effect: "transient" });
    const id = h.newId();
    await expect(a.engine.commit(insertUnit(a.engine, id, { unknown: true }, { clientId: "c", seq: 1 }))).rejects.toSatisfy(
      code("ENGINE_POISONED"),
    );
    expect(a.engine.state.kind).toBe("poisoned");
    await expect(a.engine.commit(insertUnit(a.engine, h.newId(), {}))).rejects.toSatisfy(code("ENGINE_POISONED"));
    await a.engine.acquire();
    // The write had in fact landed; after re-open its receipt answers a retry.
    expect(a.local.receipt("c", 1)).not.toBeNull();
    expect(a.local.get(id, a.engine.readTs)).not.toBeNull();
    await a.engine.commit(insertUnit(a.engine, h.newId(), {}));
  });

  it("snapshots on cadence and restores after the pre-snapshot segments were deleted", async () => {
    const h = await setup();
    const a = await h.writer("a", { snapshotEverySegments: 5, gcIntervalMs: Number.MAX_SAFE_INTEGER });
    const ids = [];
    for (let index = 0; index < 3; index++) {
      const id = h.newId();
      ids.push(id);
      await a.engine.commit(insertUnit(a.engine, id, { index }));
    }
    await a.engine.runMaintenance();
    let manifest = await new ShardManifest(h.bucket, 0, h.deploymentId, new SeededRandom(5)).load();
    expect(manifest.snapshot).toBeNull();
    for (let index = 3; index < 6; index++) {
      const id = h.newId();
      ids.push(id);
      await a.engine.commit(insertUnit(a.engine, id, { index }));
    }
    await a.engine.runMaintenance();
    manifest = await new ShardManifest(h.bucket, 0, h.deploymentId, new SeededRandom(5)).load();
    expect(manifest.snapshot).toMatchObject({ seqno: 6, documents: 6 });
    const tailId = h.newId();
    await a.engine.commit(insertUnit(a.engine, tailId, { tail: true }));
    const report = await a.engine.collectGarbageNow();
    expect(report).toMatchObject({ logStartBefore: 0, logStartAfter: 7, segmentsDeleted: 7 });
    for (let seqno = 0; seqno < 7; seqno++) expect(await h.bucket.get(bucketLayout.segment(0, seqno))).toBeNull();
    const reader = await h.node("reader");
    expect(reader.local.meta().minReadableTs).toBe(manifest.snapshot!.ts);
    for (const [index, id] of ids.entries()) {
      expect(reader.local.get(id, reader.engine.readTs)?.value).toBe(JSON.stringify({ index }));
    }
    expect(reader.local.get(tailId, reader.engine.readTs)).not.toBeNull();
    expect(reader.engine.position).toEqual(a.engine.position);
  });

  it("GC is held back by a lagging consumer until it advances, is removed, or expires", async () => {
    const h = await setup();
    const a = await h.writer("a", { consumerTtlMs: 60_000 });
    for (let index = 0; index < 6; index++) await a.engine.commit(insertUnit(a.engine, h.newId(), { index }));
    await a.engine.snapshotNow(); // through seqno 6
    const watermarks = a.engine.watermarkStore;
    await watermarks.publish("replica-1", 2, h.clock.nowMs());
    expect(await a.engine.collectGarbageNow()).toMatchObject({ logStartAfter: 3, heldBackBy: 3 });
    await watermarks.publish("replica-1", 4, h.clock.nowMs());
    expect(await a.engine.collectGarbageNow()).toMatchObject({ logStartBefore: 3, logStartAfter: 5 });
    await watermarks.remove("replica-1");
    expect(await a.engine.collectGarbageNow()).toMatchObject({ logStartAfter: 7, heldBackBy: null });

    for (let index = 0; index < 3; index++) await a.engine.commit(insertUnit(a.engine, h.newId(), { index }));
    await watermarks.publish("replica-2", 7, h.clock.nowMs());
    await a.engine.snapshotNow(); // through seqno 9
    expect(await a.engine.collectGarbageNow()).toMatchObject({ logStartAfter: 8 });
    h.clock.advance(60_001);
    expect(await a.engine.collectGarbageNow()).toMatchObject({ logStartAfter: 10, heldBackBy: null });
  });

  it("a stale writer's GC deletes nothing", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    for (let index = 0; index < 4; index++) await a.engine.commit(insertUnit(a.engine, h.newId(), { index }));
    await a.engine.snapshotNow();
    h.clock.advance(TTL + 1);
    await h.writer("b", { leaseTtlMs: TTL });
    const deletesBefore = a.store.calls.delete + a.store.calls.deleteMany;
    await expect(a.engine.collectGarbageNow()).rejects.toSatisfy(code("FENCED"));
    expect(a.store.calls.delete + a.store.calls.deleteMany).toBe(deletesBefore);
    for (let seqno = 0; seqno < 5; seqno++) expect(await h.bucket.get(bucketLayout.segment(0, seqno))).not.toBeNull();
  });

  it("refuses a corrupted segment (one flipped byte) with a clear error", async () => {
    const h = await setup();
    const a = await h.writer("a");
    await a.engine.commit(insertUnit(a.engine, h.newId(), { text: "hello" }));
    const key = bucketLayout.segment(0, 1);
    const stored = await h.bucket.get(key);
    if (stored === null || stored === "not-modified") throw new Error("segment missing");
    const corrupted = Buffer.from(stored.body);
    corrupted[corrupted.length >> 1] ^= 0x01;
    await h.bucket.delete(key);
    await h.bucket.create(key, corrupted);
    await expect(h.node("reader")).rejects.toThrow(/segment 1 of shard 0 is invalid: checksum mismatch/);
    await expect(readSegment(h.bucket, { deploymentId: h.deploymentId, shard: 0, seqno: 1 })).rejects.toSatisfy(
      code("SEGMENT_INVALID"),
    );
  });

  it("refuses a bucket of another deployment and a local file of another deployment", async () => {
    const h = await setup();
    await h.writer("a");
    const local = LocalStore.open({ path: ":memory:", shard: 0, deploymentId: "f".repeat(32) });
    const open = (deploymentId: string, store = local) =>
      ShardEngine.open({
        store: h.bucket,
        deploymentId,
        shard: 0,
        local: store,
        nodeId: "intruder",
        clock: h.clock,
        random: new SeededRandom(9),
        hybridClock: new HybridClock(h.clock),
      });
    await expect(open("f".repeat(32))).rejects.toSatisfy(code("DEPLOYMENT_MISMATCH"));
    await expect(open(h.deploymentId)).rejects.toSatisfy(code("LOCAL_META_MISMATCH"));
    local.close();
  });
});
