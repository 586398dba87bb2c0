/**
 * Scenario: reading a log with look-ahead — segments come back in order up to the first
 * empty slot, and no GET is still running once the reader has returned.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { readLog } from "../../src/segments/logReader.js";
import { EMPTY_RECORD_BATCH } from "../../src/segments/recordCodec.js";
import { encodeSegment } from "../../src/segments/Segment.js";
import { FaultyObjectStore } from "../support/FaultyObjectStore.js";

async function logOf(count: number): Promise<MemoryObjectStore> {
  const bucket = new MemoryObjectStore();
  let prevHash: string | null = null;
  for (let seqno = 0; seqno < count; seqno++) {
    const segment = encodeSegment(
      { deploymentId: "d", shard: 0, seqno, epoch: 1, kind: "tick", count: 0, minTs: seqno + 1, maxTs: seqno + 1, prevHash, writer: "w" },
      EMPTY_RECORD_BATCH,
    );
    prevHash = segment.hash;
    await bucket.create(bucketLayout.segment(0, seqno), segment.bytes);
  }
  return bucket;
}

/** The store with every GET answering a few event-loop turns later, as over a network. */
function slow(bucket: MemoryObjectStore): MemoryObjectStore {
  const get = bucket.get.bind(bucket);
  bucket.get = async (key, options) => {
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    return get(key, options);
  };
  return bucket;
}

describe("readLog", () => {
  it("returns promptly when its consumer stops early, with fetches still queued", async () => {
    const bucket = slow(await logOf(20));
    const seqnos: number[] = [];
    for await (const segment of readLog(bucket, { deploymentId: "d", shard: 0, fromSeqno: 0, concurrency: 2, knownTail: 19 })) {
      seqnos.push(segment.header.seqno);
      if (seqnos.length === 3) break;
    }
    expect(seqnos).toEqual([0, 1, 2]);
  });

  it("yields segments in order to the first gap and leaves no GET running", async () => {
    const bucket = await logOf(10);
    const store = new FaultyObjectStore(bucket, new SeededRandom(1), new ManualClock());
    let inFlight = 0;
    const get = store.get.bind(store);
    store.get = async (key, options) => {
      inFlight++;
      try {
        // Let other GETs start before this one answers, as on a real network.
        for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
        return await get(key, options);
      } finally {
        inFlight--;
      }
    };
    const seqnos: number[] = [];
    for await (const segment of readLog(store, { deploymentId: "d", shard: 0, fromSeqno: 2, concurrency: 8, knownTail: 6 })) {
      seqnos.push(segment.header.seqno);
    }
    expect(seqnos).toEqual([2, 3, 4, 5, 6, 7, 8, 9]);
    expect(inFlight).toBe(0);
  });
});
