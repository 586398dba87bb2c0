/**
 * Scenario: snapshots as objects in the bucket — a state larger than one part is split
 * into several checksummed parts and restored exactly; a flipped byte, a missing part or
 * a pointer whose combined hash is wrong is refused and leaves the local state as it was;
 * GC removes superseded snapshots and failed attempts but never the current one.
 */
import { afterEach, describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { routeOfValue } from "../../src/functions/routing.js";
import { LocalStore } from "../../src/local/index.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { newDocumentId, type DocumentId } from "../../src/model/DocumentId.js";
import { documentIndexKey } from "../../src/model/IndexKey.js";
import type { SnapshotPointer } from "../../src/manifest/Manifest.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { restoreSnapshot } from "../../src/snapshots/restoreSnapshot.js";
import { writeSnapshot } from "../../src/snapshots/writeSnapshot.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { insertUnit, ShardHarness } from "../support/shardHarness.js";

const DEPLOYMENT = "d".repeat(32);
const random = new SeededRandom(11);
const locals: LocalStore[] = [];
afterEach(() => {
  for (const local of locals.splice(0)) local.close();
});

function openLocal(): LocalStore {
  const local = LocalStore.open({ path: ":memory:", shard: 0, deploymentId: DEPLOYMENT });
  locals.push(local);
  return local;
}

const ROUTE = routeOfValue("channel-3");

/** A local store holding `count` documents (each ~200 bytes, one index entry) and two receipts, one with a route. */
function populated(count: number): { local: LocalStore; ids: DocumentId[] } {
  const local = openLocal();
  const ids = Array.from({ length: count }, () => newDocumentId(1, random));
  const ts = 1_000;
  local.apply({
    revisions: ids.map((id, index) => ({ tableNumber: 1, id, ts, value: JSON.stringify({ index, pad: "p".repeat(180) }), prevTs: null })),
    indexUpdates: ids.map((id, index) => ({ indexId: 4, key: documentIndexKey([index], ts, id), ts, docId: id })),
    receipts: [
      { clientId: "client", seq: 1, ts, result: '"done"', route: null },
      { clientId: "client", seq: 2, ts, result: '"routed"', route: ROUTE },
    ],
    meta: { appliedSeqno: 41, epoch: 3, lastHash: "a".repeat(64), frontierTs: ts },
  });
  return { local, ids };
}

async function snapshotOf(store: MemoryObjectStore, local: LocalStore, partBytesTarget: number) {
  return writeSnapshot({
    store,
    deploymentId: DEPLOYMENT,
    shard: 0,
    cursor: await local.openDumpCursor({ rowsPerChunk: 100 }),
    attemptId: "3-test",
    partBytesTarget,
  });
}

async function restoreInto(store: MemoryObjectStore, pointer: SnapshotPointer, local: LocalStore) {
  return restoreSnapshot({ store, deploymentId: DEPLOYMENT, shard: 0, pointer, local });
}

describe("snapshots", () => {
  it("splits a large state into parts and restores it exactly, with its log position", async () => {
    const store = new MemoryObjectStore();
    const { local, ids } = populated(3_000);
    const pointer = await snapshotOf(store, local, 64 * 1024);
    expect(pointer).toMatchObject({ seqno: 41, epoch: 3, ts: 1_000, documents: 3_000, hash: "a".repeat(64) });
    expect(pointer.parts).toBeGreaterThan(3);
    const target = openLocal();
    await restoreInto(store, pointer, target);
    expect(target.meta()).toMatchObject({ appliedSeqno: 41, epoch: 3, frontierTs: 1_000, minReadableTs: 1_000 });
    for (const id of [ids[0]!, ids[1_500]!, ids[2_999]!]) expect(target.get(id, 1_000)).toEqual(local.get(id, 1_000));
    const all = { start: new Uint8Array(0), end: null };
    expect(target.count(4, all, 1_000)).toBe(3_000);
    expect(target.receipt("client", 1)).toMatchObject({ result: '"done"', route: null });
    expect(Buffer.from(target.receipt("client", 2)!.route!)).toEqual(Buffer.from(ROUTE));
  });

  it("refuses a part with a flipped byte and keeps the old local state", async () => {
    const store = new MemoryObjectStore();
    const { local } = populated(500);
    const pointer = await snapshotOf(store, local, 16 * 1024);
    const key = bucketLayout.snapshotPart(pointer.key, 1);
    const stored = await store.get(key);
    if (stored === null || stored === "not-modified") throw new Error("part missing");
    const corrupted = Buffer.from(stored.body);
    corrupted[20] ^= 0x08;
    await store.delete(key);
    await store.create(key, corrupted);
    const { local: target, ids } = populated(3);
    await expect(restoreInto(store, pointer, target)).rejects.toMatchObject({ code: "SNAPSHOT_INVALID" });
    expect(target.get(ids[0]!, 1_000)).not.toBeNull();
    expect(target.meta().appliedSeqno).toBe(41);
  });

  it("reports a missing part as SNAPSHOT_MISSING and a wrong combined hash as SNAPSHOT_INVALID", async () => {
    const store = new MemoryObjectStore();
    const { local } = populated(500);
    const pointer = await snapshotOf(store, local, 16 * 1024);
    await expect(restoreInto(store, { ...pointer, sha256: "0".repeat(64) }, openLocal())).rejects.toMatchObject({
      code: "SNAPSHOT_INVALID",
    });
    await store.delete(bucketLayout.snapshotPart(pointer.key, pointer.parts - 1));
    const target = openLocal();
    await expect(restoreInto(store, pointer, target)).rejects.toMatchObject({ code: "SNAPSHOT_MISSING" });
    expect(target.meta().appliedSeqno).toBe(-1);
  });

  it("GC deletes superseded snapshots and failed attempts, never the current one", async () => {
    const harness = await ShardHarness.create(memoryBucket);
    try {
      const a = await harness.writer("a");
      await a.engine.commit(insertUnit(a.engine, harness.newId(), {}));
      const first = await a.engine.snapshotNow();
      // A crashed attempt at the same seqno left a part behind.
      const stray = bucketLayout.snapshotPart(bucketLayout.snapshotPrefix(0, first!.seqno, "9-crashed"), 0);
      await harness.bucket.create(stray, new Uint8Array([1, 2, 3]));
      await a.engine.commit(insertUnit(a.engine, harness.newId(), {}));
      const second = await a.engine.snapshotNow();
      const report = await a.engine.collectGarbageNow();
      // The first snapshot's part and its record, and the crashed attempt's part.
      expect(report.snapshotObjectsDeleted).toBe(3);
      const remaining = [];
      for await (const entry of harness.bucket.list(bucketLayout.snapshotsPrefix(0))) remaining.push(entry.key);
      expect(remaining).toEqual([bucketLayout.snapshotPart(second!.key, 0)]);
      const records = [];
      for await (const entry of harness.bucket.list(bucketLayout.snapshotRecordsPrefix(0))) records.push(entry.key);
      expect(records).toEqual([bucketLayout.snapshotRecord(0, second!.seqno, second!.key.split("/").at(-2)!)]);
    } finally {
      await harness.close();
    }
  });
});
