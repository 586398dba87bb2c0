/**
 * Scenario: the attacks of the hardening review (issue 7), each a reproduced way to break
 * the shard log, run against an in-memory bucket and the S3 test endpoint (and a real S3
 * server when CAIRN_TEST_S3_URL is set): zombies whose late creates land in collected
 * slots, followers whose cached manifest predates GC, a durable write whose verification
 * runs after the successor's GC, malformed write units, a bucket restored from an older
 * copy under nodes that kept their files, a warm restart whose position check races GC,
 * a relinquish that cannot reach the bucket, and a writer's wall clock stepped back under
 * "lease" verification.
 */
import { describe, expect, it } from "vitest";
import { errorKindOf, hasErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import { readSegment } from "../../src/segments/logReader.js";
import { fixedVouching } from "../../src/shard/catchUp.js";
import type { WriteUnit } from "../../src/shard/WriteUnit.js";
import { BUCKET_FACTORIES } from "../support/bucketFactories.js";
import type { FaultyObjectStore } from "../support/FaultyObjectStore.js";
import { eventually, Gate } from "../support/Gate.js";
import { commitMany, harnessPerTest, insertUnit, type HarnessNode, type ShardHarness } from "../support/shardHarness.js";
import { SkewedClock } from "../support/SkewedClock.js";

const TTL = 10_000;
const code = (expected: string) => (error: unknown) => hasErrorCode(error, expected as never);

/** Holds the next create of `node` at a gate: a process stalled just before its PUT arrives. */
function stallNextCreate(node: HarnessNode): Gate {
  const gate = new Gate();
  node.store.inject({ operations: ["create"], once: true, effect: { until: gate.promise } });
  return gate;
}


/**
 * After the current writer's lease lapsed: "b" takes over, snapshots right behind its
 * fence and collects everything below it, then commits `commitsAfter` units on top.
 */
async function successorCollects(h: ShardHarness, commitsAfter: number): Promise<HarnessNode> {
  h.clock.advance(TTL + 1);
  const b = await h.writer("b", { leaseTtlMs: TTL });
  await b.engine.snapshotNow();
  await b.engine.collectGarbageNow();
  await commitMany(b, h, commitsAfter);
  return b;
}

function exactKey(key: string): RegExp {
  return new RegExp(`^${key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
}

async function slotHolds(h: ShardHarness, seqno: number): Promise<boolean> {
  return (await h.bucket.get(bucketLayout.segment(0, seqno))) !== null;
}

describe.each(BUCKET_FACTORIES)("hardened shard log on $name", (factory) => {
  const setup = harnessPerTest(factory);

  /**
   * Writer "a" stalls a commit's create past its lease; "b" fences that slot, snapshots
   * it and collects it, then commits on; the zombie's create finally lands in the
   * collected slot, right below segments that chain to b's (collected) fence.
   */
  async function strayBelowLogStart(h: ShardHarness) {
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await a.engine.commit(insertUnit(a.engine, h.newId(), { before: true }));
    const follower = await h.node("follower"); // caches the manifest now, before any GC
    const gate = stallNextCreate(a);
    const zombieId = h.newId();
    const zombieCommit = a.engine.commit(insertUnit(a.engine, zombieId, { zombie: true }));
    await eventually(() => a.store.held === 1);
    const zombieSlot = a.engine.position.nextSeqno;
    h.clock.advance(TTL + 1);
    const b = await h.writer("b", { leaseTtlMs: TTL });
    expect(b.engine.position.nextSeqno).toBe(zombieSlot + 1); // b's fence took the zombie's slot
    await b.engine.snapshotNow();
    expect(await b.engine.collectGarbageNow()).toMatchObject({ logStartAfter: zombieSlot + 1 });
    await commitMany(b, h, 3);
    gate.open();
    await expect(zombieCommit).rejects.toSatisfy(code("FENCED"));
    expect(await slotHolds(h, zombieSlot)).toBe(true); // the stray sits in the collected slot
    return { a, b, follower, zombieId, zombieSlot };
  }

  it("a follower whose cached manifest predates GC never applies a stray below logStart", async () => {
    const h = await setup();
    const { b, follower, zombieId } = await strayBelowLogStart(h);
    await follower.engine.catchUpToTail();
    expect(follower.local.get(zombieId, follower.engine.readTs)).toBeNull();
    expect(follower.engine.position).toEqual(b.engine.position);
    // It keeps following, restarts warm, and can become the writer without breaking readers.
    await commitMany(b, h, 1);
    await follower.engine.catchUpToTail();
    expect(follower.engine.position).toEqual(b.engine.position);
    await h.stop(follower);
    await b.engine.relinquish();
    const again = await h.writer("follower", { leaseTtlMs: TTL });
    await commitMany(again, h, 1);
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(again.engine.position);
    expect(reader.local.get(zombieId, reader.engine.readTs)).toBeNull();
  });

  it("wake hints vouch only for segments their writer verified: the zombie's lost segment is never vouched, and the hash vouched for its slot does not admit the stray", async () => {
    const h = await setup();
    const { a, b, follower, zombieId, zombieSlot } = await strayBelowLogStart(h);
    // The zombie's flush was judged lost, so it announced nothing a hint could carry.
    expect(a.events.filter((event) => event.type === "flushed" && event.seqno >= zombieSlot)).toEqual([]);
    // What b announced, by seqno: its fence (in the slot the stray now occupies) and its commits.
    const vouched = new Map<number, string>();
    for (const event of b.events) {
      if (event.type === "acquired") vouched.set(event.fenceSeqno, event.fenceHash);
      if (event.type === "flushed") vouched.set(event.seqno, event.hash);
    }
    expect([...vouched.keys()].sort((x, y) => x - y)).toEqual([zombieSlot, zombieSlot + 1, zombieSlot + 2, zombieSlot + 3]);
    // Each announced hash is that of the bytes its writer created in that slot; the stray's differ.
    for (const [seqno, hash] of vouched) {
      const stored = await readSegment(h.bucket, { deploymentId: h.deploymentId, shard: 0, seqno });
      if (seqno === zombieSlot) expect(stored?.hash).not.toBe(hash);
      else expect(stored?.hash).toBe(hash);
    }
    // The follower's cached manifest predates GC; the stray fails the vouched hash, so the
    // round is judged by a manifest read, which restores the snapshot instead.
    await follower.engine.catchUpToTail({ vouching: fixedVouching(vouched) });
    expect(follower.local.get(zombieId, follower.engine.readTs)).toBeNull();
    expect(follower.engine.position).toEqual(b.engine.position);
  });

  it("a corrupt stray below logStart does not wedge a follower", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await commitMany(a, h, 2);
    const follower = await h.node("follower");
    const slot = a.engine.position.nextSeqno;
    await commitMany(a, h, 1); // slot `slot`
    await a.engine.snapshotNow();
    await a.engine.collectGarbageNow();
    await commitMany(a, h, 2);
    await h.bucket.create(bucketLayout.segment(0, slot), new TextEncoder().encode("not a segment"));
    await follower.engine.catchUpToTail();
    expect(follower.engine.position).toEqual(a.engine.position);
  });

  it("an acquirer whose stalled fence lands in a collected slot can still follow and re-acquire", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await commitMany(a, h, 1);
    await a.engine.relinquish();
    const c = await h.node("c", { leaseTtlMs: TTL });
    const gate = stallNextCreate(c);
    const takeover = c.engine.acquire();
    await eventually(() => c.store.held === 1);
    const fenceSlot = c.engine.position.nextSeqno;
    const b = await successorCollects(h, 3);
    gate.open();
    await expect(takeover).rejects.toSatisfy(code("FENCED"));
    expect(await slotHolds(h, fenceSlot)).toBe(true);
    expect(c.engine.state.kind).not.toBe("writing");
    expect(c.engine.position.nextSeqno).toBe(fenceSlot); // its stray fence was not applied
    await c.engine.catchUpToTail();
    expect(c.engine.position).toEqual(b.engine.position);
    await b.engine.relinquish();
    await c.engine.acquire();
    await commitMany(c, h, 1);
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(c.engine.position);
  });

  it("a zombie's write that the successor included is acknowledged, even when its verification runs after the GC", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    // The create lands at once; the manifest read that verifies it stalls past the lease.
    const gate = new Gate();
    a.store.inject({ operations: ["get"], keyPattern: /manifest$/, once: true, effect: { until: gate.promise } });
    const id = h.newId();
    const slot = a.engine.position.nextSeqno;
    const commit = a.engine.commit(insertUnit(a.engine, id, { durable: true }));
    await eventually(() => a.store.held === 1);
    h.clock.advance(TTL + 1);
    const b = await h.writer("b", { leaseTtlMs: TTL });
    expect(b.local.get(id, b.engine.readTs)).not.toBeNull(); // b included the zombie's segment
    await commitMany(b, h, 2);
    await b.engine.snapshotNow();
    expect((await b.engine.collectGarbageNow()).logStartAfter).toBeGreaterThan(slot);
    gate.open();
    await expect(commit).resolves.toMatchObject({ seqno: slot });
    expect(a.engine.state.kind).toBe("fenced");
    const reader = await h.node("reader");
    expect(reader.local.get(id, reader.engine.readTs)).not.toBeNull();
  });

  it("when the bucket cannot tell whether a collected zombie write was included, the outcome is unknown, never FENCED", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    const gate = new Gate();
    a.store.inject({ operations: ["get"], keyPattern: /manifest$/, once: true, effect: { until: gate.promise } });
    const id = h.newId();
    const commit = a.engine.commit(insertUnit(a.engine, id, { unknown: true }, { clientId: "client", seq: 1 }));
    await eventually(() => a.store.held === 1);
    h.clock.advance(TTL + 1);
    // Epoch 2 fences after a's segment but fails to record where: it gives the lease back.
    const c = await h.node("c", { leaseTtlMs: TTL });
    const fenceGate = stallNextCreate(c);
    const cTakeover = c.engine.acquire();
    await eventually(() => c.store.held === 1);
    c.store.inject({ operations: ["casPut"], once: true, effect: "unreachable" });
    fenceGate.open();
    await expect(cTakeover).rejects.toSatisfy(code("STORE_UNREACHABLE"));
    // Epoch 3 takes over, snapshots and collects past a's slot.
    const b = await h.writer("b", { leaseTtlMs: TTL });
    await commitMany(b, h, 2);
    await b.engine.snapshotNow();
    await b.engine.collectGarbageNow();
    gate.open();
    await expect(commit).rejects.toSatisfy(code("ENGINE_POISONED"));
    // It was in fact durable: its receipt answers a retry.
    const reader = await h.node("reader");
    expect(reader.local.receipt("client", 1)).not.toBeNull();
  });

  it("refuses every malformed write unit at commit with a typed error, and nothing reaches the log", async () => {
    const h = await setup();
    const a = await h.writer("a");
    const before = a.engine.position;
    const good = () => insertUnit(a.engine, h.newId(), { ok: true });
    const readTs = a.engine.readTs;
    const malformed: unknown[] = [
      { ...good(), documents: [{ ...good().documents[0]!, id: h.newId().toUpperCase() }] },
      { ...good(), indexWrites: [{ indexId: 1, key: new Uint8Array([0x02, 0x00]), docId: "not-a-document-id" }] },
      { ...good(), documents: [{ ...good().documents[0]!, prevTs: readTs + 5 }] },
      { ...good(), receipt: { clientId: "c", seq: 1, result: 42, route: null } },
      { ...good(), receipt: { clientId: "", seq: 1, result: "1", route: null } },
      { ...good(), receipt: { clientId: "c", seq: 1, result: "1", route: new Uint8Array(3) } },
      { ...good(), receipt: { clientId: "c", seq: 1, result: "1", route: "0123456789abcdef" } },
      { ...good(), receipt: { clientId: "c", seq: 1, result: "1" } },
      { ...good(), documents: [{ ...good().documents[0]!, value: 12 }] },
      { ...good(), documents: [{ ...good().documents[0]!, tableNumber: -1 }] },
      { ...good(), indexWrites: [{ indexId: 1, key: "a string", docId: null }] },
      { ...good(), documents: "not an array" },
      { ...good(), documents: [null] },
      { ...good(), readTs: "now" },
      { ...good(), conflictsWith: "yes" },
      null,
      42,
    ];
    for (const unit of malformed) {
      const error = await a.engine.commit(unit as WriteUnit).then(
        () => undefined,
        (reason: unknown) => reason,
      );
      expect(error, `unit ${JSON.stringify(unit)} must be refused`).toBeDefined();
      expect(errorKindOf(error), `${String(error)}`).toBe("InvalidInput");
    }
    expect(a.engine.position).toEqual(before);
    expect(a.engine.state.kind).toBe("writing");
    expect(await slotHolds(h, before.nextSeqno)).toBe(false);
    await a.engine.commit(good());
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(a.engine.position);
  });

  it("a warm restart on a bucket restored from an older copy rebuilds the local file instead of fencing past the hole", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await commitMany(a, h, 2);
    const backup = await h.backupBucket();
    await commitMany(a, h, 3); // acknowledged after the backup: the restore loses them
    await h.stop(a);
    await h.restoreBucket(backup);
    h.clock.advance(TTL + 1); // the restored manifest names a as the writer
    const again = await h.writer("a", { leaseTtlMs: TTL });
    expect(again.events).toContainEqual(expect.objectContaining({ type: "local-rebuilt" }));
    const committed = await again.engine.commit(insertUnit(again.engine, h.newId(), { after: "restore" }));
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(again.engine.position);
    expect(reader.engine.position.nextSeqno).toBe(committed.seqno + 1);
  });

  it("a warm restart racing GC past its position keeps its local file: a disagreement from a manifest read before the collection is checked again", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await commitMany(a, h, 2);
    const r = await h.node("r");
    const applied = r.engine.position.nextSeqno - 1;
    await h.stop(r);
    await commitMany(a, h, 2);
    // The restart reads the manifest, then its GET of the segment it applied last waits
    // while the writer snapshots and collects everything below its tail.
    const gate = new Gate();
    let restartStore: FaultyObjectStore | null = null;
    const restarting = h.node("r", {}, {
      beforeOpen: (store) => {
        restartStore = store;
        store.inject({ operations: ["get"], keyPattern: exactKey(bucketLayout.segment(0, applied)), once: true, effect: { until: gate.promise } });
      },
    });
    await eventually(() => restartStore?.held === 1);
    await a.engine.snapshotNow();
    expect(await a.engine.collectGarbageNow()).toMatchObject({ logStartAfter: a.engine.position.nextSeqno });
    expect(await slotHolds(h, applied)).toBe(false);
    gate.open();
    const again = await restarting;
    expect(again.events).not.toContainEqual(expect.objectContaining({ type: "local-rebuilt" }));
    expect(again.engine.position).toEqual(a.engine.position);
  });

  it("a local file with a newer epoch than the restored bucket is rebuilt, so it does not skip the bucket's new segments", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await commitMany(a, h, 1);
    const backup = await h.backupBucket(); // epoch 1
    await a.engine.relinquish();
    const b = await h.writer("b", { leaseTtlMs: TTL }); // epoch 2
    await b.engine.relinquish();
    const c = await h.writer("c", { leaseTtlMs: TTL }); // epoch 3
    await commitMany(c, h, 1);
    await h.stop(c);
    await h.stop(a);
    await h.stop(b);
    await h.restoreBucket(backup);
    h.clock.advance(TTL + 1);
    const x = await h.writer("x", { leaseTtlMs: TTL }); // epoch 2 again, in the restored bucket
    await commitMany(x, h, 4);
    const cAgain = await h.node("c");
    expect(cAgain.events).toContainEqual(expect.objectContaining({ type: "local-rebuilt" }));
    expect(cAgain.engine.position).toEqual(x.engine.position);
  });

  it("a relinquish that cannot reach the bucket leaves an engine that can re-acquire, commit and close", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await commitMany(a, h, 1);
    a.store.inject({ operations: ["casPut"], once: true, effect: "unreachable" });
    await expect(a.engine.relinquish()).rejects.toSatisfy(code("STORE_UNREACHABLE"));
    expect(a.engine.state.kind).toBe("following");
    await expect(a.engine.commit(insertUnit(a.engine, h.newId(), {}))).rejects.toSatisfy(code("NOT_WRITER"));
    await a.engine.acquire();
    expect(a.engine.state.kind).toBe("writing");
    await commitMany(a, h, 1);
    await a.engine.relinquish();
    expect((await new ShardManifest(h.bucket, 0, h.deploymentId, new SeededRandom(5)).load()).writer).toBeNull();
  });

  it('"lease" verification is not fooled by a wall clock stepped back: the zombie is not acknowledged', async () => {
    const h = await setup();
    const aClock = new SkewedClock(h.clock, 0);
    const a = await h.writer("a", { leaseTtlMs: TTL, verify: "lease", clockSkewMsMax: 1_000 }, { clock: aClock });
    await a.engine.heartbeat();
    aClock.offsetMs = -3_600_000; // NTP steps a's wall clock back by an hour
    const gate = stallNextCreate(a);
    const id = h.newId();
    const commit = a.engine.commit(insertUnit(a.engine, id, { stepped: true }));
    await eventually(() => a.store.held === 1);
    await successorCollects(h, 1);
    gate.open();
    await expect(commit).rejects.toSatisfy(code("FENCED"));
    const reader = await h.node("reader");
    expect(reader.local.get(id, reader.engine.readTs)).toBeNull();
  });

  it("GC ignores and reports malformed watermarks, and publish refuses bad ones", async () => {
    const h = await setup();
    const a = await h.writer("a");
    await commitMany(a, h, 3);
    await a.engine.snapshotNow();
    const watermarks = a.engine.watermarkStore;
    for (const bad of [Number.NaN, -5, 1.5, Number.POSITIVE_INFINITY]) {
      await expect(watermarks.publish("replica", bad, h.clock.nowMs())).rejects.toSatisfy(code("INVALID_ARGUMENT"));
    }
    await expect(watermarks.publish("replica", 1, Number.NaN)).rejects.toSatisfy(code("INVALID_ARGUMENT"));
    await expect(watermarks.publish("../escape", 1, h.clock.nowMs())).rejects.toSatisfy(code("INVALID_ARGUMENT"));
    const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
    await h.bucket.create(bucketLayout.consumer(0, "garbage"), new TextEncoder().encode("{not json"));
    await h.bucket.create(
      bucketLayout.consumer(0, "negative"),
      encode({ version: 1, nonce: "n", consumerId: "negative", appliedSeqno: -5, updatedAt: h.clock.nowMs() }),
    );
    await h.bucket.create(
      bucketLayout.consumer(0, "future"),
      encode({ version: 1, nonce: "n", consumerId: "future", appliedSeqno: 0, updatedAt: h.clock.nowMs() + 10 * 86_400_000 }),
    );
    const report = await a.engine.collectGarbageNow();
    expect(report).toMatchObject({ logStartAfter: a.engine.position.nextSeqno, heldBackBy: null });
    expect(report.malformedWatermarks.map((bad) => bad.consumerId).sort()).toEqual(["garbage", "negative"]);
    // And again: a malformed watermark never stops a later run.
    await commitMany(a, h, 1);
    await expect(a.engine.collectGarbageNow()).resolves.toBeDefined();
  });
});
