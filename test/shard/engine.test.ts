/**
 * Scenario: the shard engine's own behaviour around the protocol — warm restarts read
 * only new segments, drivers run on their cadences and a fenced heartbeat stops writes at
 * once, idle shards tick, relinquish drains the queue, optimistic concurrency refuses
 * stale reads, and bad units are refused before anything is queued.
 */
import { afterEach, describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { parseSegmentSeqno } from "../../src/manifest/bucketLayout.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import { newDocumentId } from "../../src/model/DocumentId.js";
import { documentIndexKey, encodeIndexKey } from "../../src/model/IndexKey.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { eventually, Gate } from "../support/Gate.js";
import { insertUnit, ShardHarness, TABLE } from "../support/shardHarness.js";

const TTL = 10_000;
const code = (expected: string) => (error: unknown) => hasErrorCode(error, expected as never);

let harness: ShardHarness;
afterEach(async () => {
  await harness?.close();
});

async function manifestOf(h: ShardHarness) {
  return new ShardManifest(h.bucket, 0, h.deploymentId, new SeededRandom(5)).load();
}

/** Lets timers and promise chains run a few turns (drivers woken by the manual clock). */
async function settle() {
  for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
}

describe("shard engine", () => {
  it("a warm restart reads only the segments written since it stopped", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const writer = await harness.writer("writer");
    for (let index = 0; index < 5; index++) await writer.engine.commit(insertUnit(writer.engine, harness.newId(), { index }));
    let reader = await harness.node("reader");
    const stoppedAt = reader.engine.position.nextSeqno;
    await harness.stop(reader);
    for (let index = 0; index < 3; index++) await writer.engine.commit(insertUnit(writer.engine, harness.newId(), { index }));
    reader = await harness.node("reader");
    const segmentReads = reader.store.reads
      .map((key) => parseSegmentSeqno(0, key))
      .filter((seqno): seqno is number => seqno !== null);
    // One GET confirms the local position against the bucket; the replay starts after it.
    expect(segmentReads.filter((seqno) => seqno < stoppedAt)).toEqual([stoppedAt - 1]);
    expect(Math.min(...segmentReads.filter((seqno) => seqno >= stoppedAt))).toBe(stoppedAt);
    expect(reader.engine.position).toEqual(writer.engine.position);
  });

  it("heartbeats on cadence, and a heartbeat that finds a newer epoch stops writes at once", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const a = await harness.writer("a", { leaseTtlMs: TTL, heartbeatIntervalMs: 1_000 });
    const firstLease = (await manifestOf(harness)).leaseExpiresAt;
    const casPutsOfAcquire = a.store.calls.casPut; // the epoch bump and the fence record
    harness.clock.advance(1_000);
    await eventually(() => a.store.calls.casPut > casPutsOfAcquire);
    expect((await manifestOf(harness)).leaseExpiresAt).toBe(firstLease + 1_000);

    // The next heartbeat stalls (a paused process); meanwhile b takes over.
    const gate = new Gate();
    a.store.inject({ operations: ["casPut"], once: true, effect: { until: gate.promise } });
    harness.clock.advance(1_000);
    await eventually(() => a.store.held === 1);
    harness.clock.advance(TTL + 1);
    const b = await harness.writer("b", { leaseTtlMs: TTL });
    gate.open();
    await eventually(() => a.engine.state.kind === "fenced");
    await expect(a.engine.commit(insertUnit(a.engine, harness.newId(), {}))).rejects.toSatisfy(code("FENCED"));
    await b.engine.commit(insertUnit(b.engine, harness.newId(), {}));
  });

  it("a lone shard never ticks: with nothing newer elsewhere, its frontier holds nobody back (ticks: frontierTicks.test.ts)", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const a = await harness.writer("a", { tickWhenIdle: true, heartbeatIntervalMs: 500, leaseTtlMs: TTL });
    await a.engine.commit(insertUnit(a.engine, harness.newId(), {}));
    const before = a.engine.position.nextSeqno;
    for (let step = 0; step < 8; step++) {
      harness.clock.advance(250);
      await settle();
    }
    await eventually(() => a.store.calls.casPut >= 3); // heartbeats ran
    expect(a.engine.position.nextSeqno).toBe(before);
  });

  it("takes a snapshot when the time cadence says so, from the maintenance driver", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const a = await harness.writer("a", {
      maintenanceIntervalMs: 1_000,
      snapshotEveryMs: 5_000,
      gcIntervalMs: 1e12,
      leaseTtlMs: 1e9,
    });
    await a.engine.commit(insertUnit(a.engine, harness.newId(), {}));
    for (let second = 0; second < 4; second++) {
      harness.clock.advance(1_000);
      await settle();
    }
    expect((await manifestOf(harness)).snapshot).toBeNull();
    harness.clock.advance(1_000);
    await eventually(() => a.store.writes.some((key) => key.includes("/snap/")));
    await eventually(() => a.store.calls.casPut >= 1);
    expect((await manifestOf(harness)).snapshot).toMatchObject({ seqno: 1 });
  });

  it("relinquish drains queued commits before handing over", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const a = await harness.writer("a");
    const commits = Array.from({ length: 20 }, () => a.engine.commit(insertUnit(a.engine, harness.newId(), {})));
    await a.engine.relinquish();
    await expect(Promise.all(commits)).resolves.toHaveLength(20);
    expect(await manifestOf(harness)).toMatchObject({ writer: null, leaseExpiresAt: 0 });
    await expect(a.engine.commit(insertUnit(a.engine, harness.newId(), {}))).rejects.toSatisfy(code("NOT_WRITER"));
  });

  it("refuses a transaction whose reads were overwritten after its read timestamp", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const a = await harness.writer("a");
    const id = harness.newId();
    await a.engine.commit(insertUnit(a.engine, id, { balance: 10 }));
    const readTs = a.engine.readTs;
    const touches = (written: { kind: string; id?: string }) => written.kind === "document" && written.id === id;
    const update = (balance: number) => ({
      readTs,
      documents: [{ tableNumber: TABLE, id, value: JSON.stringify({ balance }), prevTs: null }],
      indexWrites: [],
      conflictsWith: touches,
    });
    // Two transactions read at the same snapshot: the first queues, the second conflicts
    // with it while it is still in flight, and a third conflicts once it committed.
    const first = a.engine.commit(update(11));
    await expect(a.engine.commit(update(12))).rejects.toSatisfy(code("WRITE_CONFLICT"));
    await first;
    await expect(a.engine.commit(update(13))).rejects.toSatisfy(code("WRITE_CONFLICT"));
    await expect(a.engine.commit({ ...update(14), readTs: a.engine.readTs })).resolves.toBeDefined();
    expect(a.local.get(id, a.engine.readTs)?.value).toBe(JSON.stringify({ balance: 14 }));
  });

  it("checks a read set of documents and index ranges against committed, in-flight and queued writes", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const a = await harness.writer("a");
    const [id, other] = [harness.newId(), harness.newId()];
    const keyOf = (n: number, docId: typeof id) => documentIndexKey([n], 0, docId);
    await a.engine.commit({ ...insertUnit(a.engine, id, { n: 5 }), indexWrites: [{ indexId: 1, key: keyOf(5, id), docId: id }] });
    const readTs = a.engine.readTs;
    const write = (docId: typeof id, n: number) => ({
      readTs,
      documents: [{ tableNumber: TABLE, id: docId, value: JSON.stringify({ n }), prevTs: null }],
      indexWrites: [{ indexId: 1, key: keyOf(n, docId), docId }],
    });
    const range = (from: number, to: number) => ({ indexId: 1, start: encodeIndexKey([from]), end: encodeIndexKey([to]) });
    // In flight: `other` at n = 20. A reader of `other`, or of a range holding 20, conflicts.
    const inFlight = a.engine.commit(write(other, 20));
    await expect(a.engine.commit({ ...write(id, 6), readSet: { documents: [other] } })).rejects.toSatisfy(code("WRITE_CONFLICT"));
    await expect(a.engine.commit({ ...write(id, 6), readSet: { indexRanges: [range(10, 30)] } })).rejects.toSatisfy(code("WRITE_CONFLICT"));
    // Ranges and documents the write did not touch do not conflict (and this one commits).
    const clean = a.engine.commit({ ...write(id, 7), readSet: { documents: [id], indexRanges: [range(21, 30), range(0, 20)] } });
    await Promise.all([inFlight, clean]);
    // Committed since readTs: the same reads conflict; an unbounded range too; a fresh snapshot does not.
    await expect(a.engine.commit({ ...write(id, 8), readSet: { documents: [other] } })).rejects.toSatisfy(code("WRITE_CONFLICT"));
    await expect(a.engine.commit({ ...write(id, 8), readSet: { indexRanges: [{ indexId: 1, start: encodeIndexKey([15]), end: null }] } })).rejects.toSatisfy(
      code("WRITE_CONFLICT"),
    );
    await expect(a.engine.commit({ ...write(id, 8), readSet: { indexRanges: [{ ...range(10, 30), indexId: 2 }] } })).resolves.toBeDefined();
    await expect(
      a.engine.commit({ ...write(id, 9), readTs: a.engine.readTs, readSet: { documents: [other, id], indexRanges: [range(0, 100)] } }),
    ).resolves.toBeDefined();
    // A malformed read set is refused before anything is queued.
    await expect(a.engine.commit({ ...write(id, 10), readSet: { indexRanges: [{ indexId: -1, start: new Uint8Array(0), end: null }] } })).rejects.toSatisfy(
      code("INVALID_ARGUMENT"),
    );
  });

  it("refuses malformed units before queueing anything", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const a = await harness.writer("a", { unitBytesMax: 64 * 1024 });
    const follower = await harness.node("follower");
    const before = a.engine.position;
    const foreignId = newDocumentId(7, new SeededRandom(3));
    await expect(a.engine.commit(insertUnit(a.engine, foreignId, {}))).rejects.toSatisfy(code("DOCUMENT_ID_WRONG_TABLE"));
    await expect(a.engine.commit(insertUnit(a.engine, harness.newId(), { text: "x".repeat(100_000) }))).rejects.toSatisfy(
      code("BATCH_TOO_LARGE"),
    );
    await expect(a.engine.commit({ ...insertUnit(a.engine, harness.newId(), {}), readTs: a.engine.readTs + 1 })).rejects.toSatisfy(
      code("INVALID_ARGUMENT"),
    );
    await expect(a.engine.commit({ readTs: a.engine.readTs, documents: [], indexWrites: [] })).rejects.toSatisfy(
      code("INVALID_ARGUMENT"),
    );
    await expect(
      a.engine.commit({ readTs: 0, documents: [], indexWrites: [{ indexId: 1, key: new Uint8Array([0xee]), docId: null }] }),
    ).rejects.toSatisfy(code("INDEX_KEY_INVALID"));
    await expect(follower.engine.commit(insertUnit(follower.engine, harness.newId(), {}))).rejects.toSatisfy(code("NOT_WRITER"));
    expect(a.engine.position).toEqual(before);
    expect(a.engine.state.kind).toBe("writing");
  });
});

describe("shard engine followers", () => {
  it("serializes overlapping catch-ups so each segment is applied once", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const writer = await harness.writer("writer");
    const follower = await harness.node("follower");
    for (let index = 0; index < 6; index++) await writer.engine.commit(insertUnit(writer.engine, harness.newId(), { index }));
    const reports = await Promise.all([follower.engine.catchUpToTail(), follower.engine.catchUpToTail()]);
    expect(reports[0]!.segmentsApplied + reports[1]!.segmentsApplied).toBe(6);
    expect(follower.engine.position).toEqual(writer.engine.position);
  });
});

describe("shard engine hand-over", () => {
  it("a relinquish that finds a newer owner leaves the engine fenced, not half-writing", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const a = await harness.writer("a", { leaseTtlMs: TTL });
    harness.clock.advance(TTL + 1);
    await harness.writer("b", { leaseTtlMs: TTL });
    await expect(a.engine.relinquish()).rejects.toSatisfy(code("FENCED"));
    expect(a.engine.state.kind).toBe("fenced");
    await expect(a.engine.commit(insertUnit(a.engine, harness.newId(), {}))).rejects.toSatisfy(code("FENCED"));
  });
});

describe("shard engine backpressure", () => {
  const neverFoldsByItself = { minRows: 1_000_000, delayMs: 3_600_000 };

  it("holds the next segment while the local overlay is full, so a burst of commits never outgrows it", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const writer = await harness.writer("writer", { flushUnitsMax: 5 }, { fold: { ...neverFoldsByItself, overlayRowsMax: 20 } });
    const ids = Array.from({ length: 200 }, () => harness.newId());
    let mostUnfolded = 0;
    const results = await Promise.all(
      ids.map((id, index) =>
        writer.engine.commit(insertUnit(writer.engine, id, { index })).then((result) => {
          mostUnfolded = Math.max(mostUnfolded, writer.local.unfoldedRows);
          return result;
        }),
      ),
    );
    // Under the bound when a segment is taken, plus at most one segment of 5 one-row units.
    expect(mostUnfolded).toBeLessThanOrEqual(20 - 1 + 5);
    expect(new Set(results.map((result) => result.ts)).size).toBe(ids.length);
    for (const [index, id] of ids.entries()) {
      expect(writer.local.get(id, writer.engine.readTs)?.value).toBe(JSON.stringify({ index }));
    }
  });

  it("stops before writing anything when the local store closes while commits wait for room", async () => {
    harness = await ShardHarness.create(memoryBucket);
    const writer = await harness.writer("writer", {}, { fold: { ...neverFoldsByItself, overlayRowsMax: 1 } });
    await writer.engine.commit(insertUnit(writer.engine, harness.newId(), { first: true }));
    const before = writer.engine.position;
    // Queued (the store was open), then the store closes while the flush waits for room.
    const second = writer.engine.commit(insertUnit(writer.engine, harness.newId(), { second: true }));
    writer.local.close();
    await expect(second).rejects.toSatisfy(code("ENGINE_POISONED"));
    expect(writer.engine.state.kind).toBe("poisoned");
    expect(writer.engine.position).toEqual(before);
    await harness.crash(writer);
    const follower = await harness.node("follower");
    await follower.engine.catchUpToTail();
    expect(follower.engine.position).toEqual(before);
  });
});
