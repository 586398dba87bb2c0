/**
 * Scenario: a replica's tailer (DESIGN.md §4 "Tail") following a real writer engine on one
 * bucket, each node with its own SQLite file and its own fault-injecting view of the
 * bucket. Time is a manual clock; the tailer's sleeps are recorded, so every claim about
 * its cadence is checked by counting polls and bucket GETs, never by measuring time.
 *
 * Writer "w" commits; follower "f" (a second engine, "following") is driven only by its
 * tailer. A test moves the clock to let the tailer's next poll run and reads what it did
 * from the follower's store call log.
 */
import { describe, expect, it } from "vitest";
import { errorKindOf, hasErrorCode } from "../../src/base/errors.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { ShardTailer, type TailerTuning } from "../../src/replica/ShardTailer.js";
import { encodeSegment, type Segment } from "../../src/segments/Segment.js";
import { EMPTY_RECORD_BATCH } from "../../src/segments/recordCodec.js";
import type { ShardEngineTuning } from "../../src/shard/engineOptions.js";
import type { CommitResult } from "../../src/shard/WriteUnit.js";
import { memoryBucket, s3EndpointBucket } from "../support/bucketFactories.js";
import { eventually, Gate } from "../support/Gate.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import { commitMany, insertUnit, type HarnessNode, type ShardHarness } from "../support/shardHarness.js";
import { fsBucket, RecordingClock, replicaHarnessPerTest, turns } from "./replicaSupport.js";

const TUNING: TailerTuning = { firstBackoffMs: 10, idlePollMs: 80, manifestRefreshMs: 400, watermarkIntervalMs: 1_000 };
const MANIFEST_KEY = bucketLayout.manifest(0);
const CONSUMER_KEY = bucketLayout.consumer(0, "f");
const segmentKey = (seqno: number) => bucketLayout.segment(0, seqno);

interface Rig {
  readonly h: ShardHarness;
  readonly writer: HarnessNode;
  readonly follower: HarnessNode;
  readonly tailer: ShardTailer;
  /** The tailer's clock: the harness's manual clock, recording the poll loop's waits. */
  readonly clock: RecordingClock;
  /** What the follower engine's listeners registered before the tailer saw. */
  readonly applied: Segment[];
  readonly restored: number[];
  readonly errors: { readonly error: unknown; readonly during: "poll" | "watermark" }[];
  commit(body?: unknown): Promise<CommitResult & { readonly id: DocumentId }>;
  /**
   * Waits until the poll loop sleeps again after the last wait this returned (it polled
   * once or more since), and returns that new wait's ms.
   */
  asleep(): Promise<number>;
  /** Loop waits made so far (the ones asleep() already saw and any since). */
  sleepCount(): number;
  /** How often the follower GET `key` since the last `resetReads`. */
  reads(key: string): number;
  resetReads(): void;
}

interface RigOptions {
  readonly tuning?: Partial<TailerTuning>;
  readonly publishWatermarks?: boolean;
  readonly writerTuning?: Partial<ShardEngineTuning>;
  readonly commitsBefore?: number;
}

/** The waits the poll loop can make with TUNING: firstBackoffMs doubling to idlePollMs. */
const LOOP_WAITS = new Set([10, 20, 40, 80]);

/**
 * Writer "w" with a few commits, follower "f" opened after them (caught up), and a tailer
 * on f (not started) whose listeners come after the test's own.
 */
async function buildRig(h: ShardHarness, cleanup: (step: () => unknown) => void, options: RigOptions = {}): Promise<Rig> {
  const writer = await h.writer("w", options.writerTuning ?? {});
  await commitMany(writer, h, options.commitsBefore ?? 2);
  const follower = await h.node("f");
  const clock = new RecordingClock(h.clock, (ms) => LOOP_WAITS.has(ms));
  const applied: Segment[] = [];
  const restored: number[] = [];
  const errors: { error: unknown; during: "poll" | "watermark" }[] = [];
  follower.engine.onSegmentApplied((segment) => applied.push(segment));
  follower.engine.onRestored((ts) => restored.push(ts));
  const tailer = new ShardTailer({
    engine: follower.engine,
    consumerId: "f",
    clock,
    tuning: { ...TUNING, ...options.tuning },
    onError: (error, during) => errors.push({ error, during }),
    publishWatermarks: options.publishWatermarks ?? false,
  });
  cleanup(() => {
    follower.store.releaseAll();
    return tailer.stop();
  });
  let seen = 0;
  return {
    h,
    writer,
    follower,
    tailer,
    clock,
    applied,
    restored,
    errors,
    commit: async (body = {}) => {
      const id = h.newId();
      const result = await writer.engine.commit(insertUnit(writer.engine, id, body));
      return { ...result, id };
    },
    asleep: async () => {
      await turns(1); // a sleep the test just ended (advance, wake) settles first
      await eventually(() => clock.sleeps.length > seen && clock.sleeping);
      seen = clock.sleeps.length;
      return clock.sleeps[seen - 1]!;
    },
    sleepCount: () => clock.sleeps.length,
    reads: (key) => follower.store.reads.filter((read) => read === key).length,
    resetReads: () => void follower.store.reads.splice(0),
  };
}

/** Lets the tailer poll until it waits idlePollMs between polls. */
async function settleAtIdle(r: Rig): Promise<void> {
  let delayMs = await r.asleep();
  while (delayMs < TUNING.idlePollMs) {
    r.h.clock.advance(delayMs);
    delayMs = await r.asleep();
  }
}

async function watermarkOf(r: Rig): Promise<number | null> {
  return (await r.follower.engine.watermarkStore.read("f"))?.appliedSeqno ?? null;
}

/** Successful writes of f's watermark object. */
const consumerWrites = (r: Rig) => r.follower.store.writes.filter((key) => key === CONSUMER_KEY).length;

describe.each([memoryBucket, fsBucket, s3EndpointBucket])("shard tailer on $name", (factory) => {
  const { setup, cleanup } = replicaHarnessPerTest(factory);

  const rig = async (options: RigOptions = {}) => buildRig(await setup(), cleanup, options);

  it("delivers each commit to the follower's earlier listeners, in log order, before waitFor resolves; nothing before a manifest read after the GET", async () => {
    const r = await rig();
    r.tailer.start();
    await r.asleep();
    const gate = new Gate();
    // The next manifest GET is held: the segment is read, but its slot is not yet judged.
    r.follower.store.inject({ operations: ["get"], keyPattern: /manifest$/, once: true, effect: { until: gate.promise } });
    const first = await r.commit({ n: 1 });
    let outcome: { reached: boolean; seen: number[]; value: string | undefined } | undefined;
    const waiting = r.tailer.waitFor(first.ts, 60_000).then((reached) => {
      outcome = { reached, seen: r.applied.map((segment) => segment.header.seqno), value: r.follower.local.get(first.id, first.ts)?.value };
    });
    r.tailer.wake(first.seqno);
    await eventually(() => r.follower.store.held === 1);
    await turns();
    expect(outcome).toBeUndefined();
    expect(r.applied).toEqual([]);
    expect(r.follower.engine.position.nextSeqno).toBe(first.seqno);
    gate.open();
    await waiting;
    expect(outcome).toEqual({ reached: true, seen: [first.seqno], value: JSON.stringify({ n: 1 }) });
    await r.asleep();
    expect(r.tailer.status()).toMatchObject({ state: "tailing", appliedSeqno: first.seqno, frontierTs: first.ts, segmentsApplied: 1, lastError: null, restores: 0 });

    // Several commits, one waiter each: every waiter resolves true, listeners saw all in order.
    const later = [await r.commit({ n: 2 }), await r.commit({ n: 3 }), await r.commit({ n: 4 })];
    const results: { index: number; seen: number }[] = [];
    const waiters = later.map((commit, index) =>
      r.tailer.waitFor(commit.ts, 60_000).then((reached) => {
        expect(reached).toBe(true);
        results.push({ index, seen: r.applied.length });
      }),
    );
    r.tailer.wake(later[2]!.seqno);
    await Promise.all(waiters);
    await r.asleep();
    expect(r.applied.map((segment) => segment.header.seqno)).toEqual([first.seqno, ...later.map((commit) => commit.seqno)]);
    expect(results.every((result) => result.seen === 4)).toBe(true);
    expect(r.follower.engine.position).toEqual(r.writer.engine.position);
    for (const [index, commit] of later.entries()) expect(r.follower.local.get(commit.id, commit.ts)?.value).toBe(JSON.stringify({ n: index + 2 }));
    expect(r.tailer.status().segmentsApplied).toBe(4);
  });

  it("after GC passed it (writer snapshots, no watermark holds the log), restores the snapshot and goes on applying", async () => {
    const r = await rig({ commitsBefore: 1 });
    r.tailer.start();
    await settleAtIdle(r);
    const next = r.follower.engine.position.nextSeqno;
    // The clock stands still: the tailer reads none of these before GC deletes them.
    const collected = [await r.commit({ c: 0 }), await r.commit({ c: 1 }), await r.commit({ c: 2 })];
    const pointer = await r.writer.engine.snapshotNow();
    expect(pointer?.seqno).toBe(collected[2]!.seqno);
    const report = await r.writer.engine.collectGarbageNow();
    expect(report).toMatchObject({ logStartAfter: collected[2]!.seqno + 1, heldBackBy: null });
    expect(await r.h.bucket.get(segmentKey(next))).toBeNull();
    const after = [await r.commit({ a: 0 }), await r.commit({ a: 1 })];
    const reached = r.tailer.waitFor(after[1]!.ts, 60_000);
    r.tailer.wake(after[1]!.seqno);
    await expect(reached).resolves.toBe(true);
    expect(r.restored).toEqual([pointer!.ts]);
    expect(r.applied.map((segment) => segment.header.seqno)).toEqual(after.map((commit) => commit.seqno));
    expect(r.tailer.status()).toMatchObject({ restores: 1, segmentsApplied: 2, lastError: null, appliedSeqno: after[1]!.seqno });
    expect(r.follower.engine.position).toEqual(r.writer.engine.position);
    for (const commit of [...collected, ...after]) expect(r.follower.local.get(commit.id, r.follower.engine.readTs)).not.toBeNull();
    expect(r.errors).toEqual([]);
  });
});

describe("shard tailer (memory bucket)", () => {
  const { setup, cleanup } = replicaHarnessPerTest(memoryBucket);

  const rig = async (options: RigOptions = {}) => buildRig(await setup(), cleanup, options);

  describe("waitFor", () => {
    it("resolves true at once when the frontier is already there, false once the timeout passed on the clock", async () => {
      const r = await rig();
      r.tailer.start();
      await r.asleep();
      let now: boolean | undefined;
      void r.tailer.waitFor(r.follower.engine.readTs, 1_000_000).then((reached) => (now = reached));
      await turns(5);
      expect(now).toBe(true);

      const target = r.follower.engine.readTs + 1;
      let reached: boolean | undefined;
      const waiting = r.tailer.waitFor(target, 500).then((value) => (reached = value));
      r.h.clock.advance(499);
      await turns();
      expect(reached).toBeUndefined();
      r.h.clock.advance(1);
      await waiting;
      expect(reached).toBe(false);

      // A waiter still pending when the tailer stops resolves (false) instead of hanging.
      let atStop: boolean | undefined;
      const pending = r.tailer.waitFor(target, 1_000_000).then((value) => (atStop = value));
      await r.tailer.stop();
      await pending;
      expect(atStop).toBe(false);
    });

    it("a restore that reaches the waited ts resolves the waiter", async () => {
      const r = await rig();
      r.tailer.start();
      await settleAtIdle(r);
      const committed = await r.commit();
      await r.writer.engine.snapshotNow();
      await r.writer.engine.collectGarbageNow();
      const reached = r.tailer.waitFor(committed.ts, 60_000);
      r.tailer.wake(committed.seqno);
      await expect(reached).resolves.toBe(true);
      expect(r.restored).toHaveLength(1);
      expect(r.applied).toEqual([]);
    });
  });

  describe("adaptive polling", () => {
    it("a quiet tail costs one segment GET per poll, the manifest every manifestRefreshMs, waits doubling to idlePollMs; after applying, polls again at once", async () => {
      const r = await rig();
      const next = r.follower.engine.position.nextSeqno;
      r.resetReads();
      r.tailer.start();
      // Polling at start also reads the manifest once: the tailer has not read it yet.
      expect(await r.asleep()).toBe(TUNING.firstBackoffMs);
      expect(r.reads(MANIFEST_KEY)).toBe(1);
      expect(new Set(r.follower.store.reads)).toEqual(new Set([segmentKey(next), MANIFEST_KEY]));

      const expectedDelays = [20, 40, 80, 80, 80, 80, 80, 80, 80, 80, 80, 80, 80, 80];
      let delayMs = TUNING.firstBackoffMs;
      let sinceManifestMs = 0;
      let manifestRefreshes = 0;
      for (const expected of expectedDelays) {
        r.resetReads();
        r.h.clock.advance(delayMs);
        sinceManifestMs += delayMs;
        expect(await r.asleep()).toBe(expected);
        const refreshDue = sinceManifestMs >= TUNING.manifestRefreshMs;
        expect(r.follower.store.reads).toEqual(refreshDue ? [segmentKey(next), MANIFEST_KEY] : [segmentKey(next)]);
        if (refreshDue) {
          sinceManifestMs = 0;
          manifestRefreshes++;
        }
        delayMs = expected;
      }
      expect(manifestRefreshes).toBe(2); // at 470 ms and 870 ms of 870 ms of polling
      expect(r.follower.engine.position.nextSeqno).toBe(next);

      // Two segments appear; the poll that applies them is followed by another at once.
      const commits = [await r.commit(), await r.commit()];
      r.resetReads();
      const sleepsBefore = r.sleepCount();
      r.h.clock.advance(delayMs);
      expect(await r.asleep()).toBe(TUNING.firstBackoffMs);
      expect(r.sleepCount()).toBe(sleepsBefore + 1);
      expect(r.follower.engine.position.nextSeqno).toBe(commits[1]!.seqno + 1);
      // The applying poll probed the tail slot, and so did the one right after it. It read
      // the manifest when the first segment had arrived (beside the GETs for more), and
      // again because the second arrived after that read was sent.
      expect(r.reads(segmentKey(commits[1]!.seqno + 1))).toBe(2);
      expect(r.reads(MANIFEST_KEY)).toBe(2);
      expect(r.tailer.status().segmentsApplied).toBe(2);
    });

    it("wake() cuts a wait short; wake(seqno) below the local position is ignored; a wake during a poll polls again at once", async () => {
      const r = await rig();
      r.tailer.start();
      await settleAtIdle(r);
      const next = r.follower.engine.position.nextSeqno;
      r.resetReads();
      const sleeps = r.sleepCount();
      r.tailer.wake();
      expect(await r.asleep()).toBe(TUNING.idlePollMs);
      expect(r.reads(segmentKey(next))).toBe(1);

      // A stale hint (a seqno this node already has) changes nothing.
      r.tailer.wake(next - 1);
      await turns();
      expect(r.sleepCount()).toBe(sleeps + 1);
      expect(r.reads(segmentKey(next))).toBe(1);

      // A hint for a new segment: applied without the clock moving.
      const committed = await r.commit();
      r.tailer.wake(committed.seqno);
      await eventually(() => r.follower.engine.position.nextSeqno === committed.seqno + 1);

      // A hint that arrives while a poll is on the wire (its GET answered "empty" before the
      // commit landed) makes the tailer poll again as soon as that poll ends.
      await r.asleep();
      r.follower.store.inject({ operations: ["get"], keyPattern: /\/log\//, once: true, effect: { pauseAfterMs: 5 } });
      r.tailer.wake();
      await eventually(() => r.clock.pending === 0 && r.h.clock.pendingSleepers === 1);
      const late = await r.commit();
      r.tailer.wake(late.seqno);
      const sleepsDuringPoll = r.sleepCount();
      r.h.clock.advance(5); // the held answer (404) arrives; no tailer wait is due within 5 ms
      await eventually(() => r.follower.engine.position.nextSeqno === late.seqno + 1);
      expect(await r.asleep()).toBe(TUNING.firstBackoffMs);
      expect(r.sleepCount()).toBe(sleepsDuringPoll + 1);
    });
  });

  describe("wake hints that vouch for a segment (its hash, from the writer that verified it)", () => {
    async function quietRig() {
      const r = await rig();
      r.tailer.start();
      await settleAtIdle(r);
      r.resetReads();
      return r;
    }

    /** Commits one unit and returns it with the hash the writer announces for its segment. */
    async function commitVouched(r: Rig, body: unknown) {
      const committed = await r.commit(body);
      expect(r.writer.engine.position.nextSeqno).toBe(committed.seqno + 1);
      return { ...committed, hash: r.writer.engine.position.lastHash! };
    }

    it("GETs the hinted segment and applies it with no manifest read and no GET of the slot after it; it waits for the next hint, then probes that slot", async () => {
      const r = await quietRig();
      const readsAtApply: string[][] = [];
      r.follower.engine.onSegmentApplied(() => readsAtApply.push([...r.follower.store.reads]));
      const committed = await commitVouched(r, { v: 1 });
      const reached = r.tailer.waitFor(committed.ts, 60_000);
      r.tailer.hinted({ shard: 0, seqno: committed.seqno, hash: committed.hash });
      await expect(reached).resolves.toBe(true);
      expect(readsAtApply).toEqual([[segmentKey(committed.seqno)]]);
      // The writer hints every segment: the tailer waits for the next hint, not at the empty slot.
      expect(await r.asleep()).toBe(TUNING.idlePollMs);
      expect(r.follower.store.reads).toEqual([segmentKey(committed.seqno)]);
      r.h.clock.advance(TUNING.idlePollMs);
      await r.asleep();
      expect(r.follower.store.reads).toEqual([segmentKey(committed.seqno), segmentKey(committed.seqno + 1)]);
      expect(r.follower.local.get(committed.id, committed.ts)?.value).toBe(JSON.stringify({ v: 1 }));
      expect(r.tailer.status()).toMatchObject({ appliedSeqno: committed.seqno, lastError: null, segmentsApplied: 1 });
      expect(r.follower.engine.position).toEqual(r.writer.engine.position);
      // The vouched round skipped the manifest: the quiet tail's refresh cadence is unchanged.
      let delayMs = TUNING.idlePollMs;
      let elapsedMs = 0;
      while (r.reads(MANIFEST_KEY) === 0) {
        r.h.clock.advance(delayMs);
        elapsedMs += delayMs;
        delayMs = await r.asleep();
      }
      expect(elapsedMs).toBeLessThanOrEqual(TUNING.manifestRefreshMs + TUNING.idlePollMs);
    });

    it("applies a segment whose bytes came with the hint with no GET and no manifest read, and a second one hinted meanwhile", async () => {
      const r = await quietRig();
      const first = await commitVouched(r, { carried: 1 });
      const firstBytes = (await r.h.bucket.get(segmentKey(first.seqno)))!;
      const second = await commitVouched(r, { carried: 2 });
      const secondBytes = (await r.h.bucket.get(segmentKey(second.seqno)))!;
      if (firstBytes === "not-modified" || secondBytes === "not-modified") throw new Error("unconditional GET answered not-modified");
      const reached = r.tailer.waitFor(second.ts, 60_000);
      r.tailer.hinted({ shard: 0, seqno: first.seqno, hash: first.hash, segment: firstBytes.body });
      r.tailer.hinted({ shard: 0, seqno: second.seqno, hash: second.hash, segment: secondBytes.body });
      await expect(reached).resolves.toBe(true);
      expect(r.applied.map((segment) => segment.header.seqno)).toEqual([first.seqno, second.seqno]);
      expect(await r.asleep()).toBe(TUNING.idlePollMs);
      expect(r.follower.store.reads).toEqual([]);
      expect(r.follower.engine.position).toEqual(r.writer.engine.position);
      expect(r.follower.local.get(second.id, second.ts)?.value).toBe(JSON.stringify({ carried: 2 }));
      // Caught up as of the newest hint, though no poll reached the empty slot.
      expect(r.tailer.status().stalenessMs).toBe(0);
    });

    it.each([
      ["bytes of another segment", async (r: Rig, seqno: number) => (await r.h.bucket.get(segmentKey(seqno - 1)) as { body: Uint8Array }).body],
      ["corrupt bytes", async () => Buffer.from("not a segment at all")],
    ])("a hint whose %s do not hash to its vouch: the slot is read instead and the vouch holds", async (_name, bytesOf) => {
      const r = await quietRig();
      const committed = await commitVouched(r, { hostile: true });
      const reached = r.tailer.waitFor(committed.ts, 60_000);
      r.tailer.hinted({ shard: 0, seqno: committed.seqno, hash: committed.hash, segment: await bytesOf(r, committed.seqno) });
      await expect(reached).resolves.toBe(true);
      expect(r.follower.store.reads).toEqual([segmentKey(committed.seqno)]);
      expect(r.applied.map((segment) => segment.hash)).toEqual([committed.hash]);
      expect(r.follower.engine.position).toEqual(r.writer.engine.position);
      expect(r.errors).toEqual([]);
    });

    it.each([
      ["a hash that matches no segment", () => "0".repeat(64)],
      ["the hash of the segment before it", (r: Rig) => r.follower.engine.position.lastHash!],
    ])("a hint with %s is only a wake: the segment is applied after a manifest read, as without it", async (_name, forged) => {
      const r = await quietRig();
      const gate = new Gate();
      r.follower.store.inject({ operations: ["get"], keyPattern: /manifest$/, once: true, effect: { until: gate.promise } });
      const committed = await r.commit({ forged: true });
      const reached = r.tailer.waitFor(committed.ts, 60_000);
      r.tailer.hinted({ shard: 0, seqno: committed.seqno, hash: forged(r) });
      await eventually(() => r.follower.store.held === 1);
      await turns();
      expect(r.applied).toEqual([]);
      expect(r.follower.engine.position.nextSeqno).toBe(committed.seqno);
      gate.open();
      await expect(reached).resolves.toBe(true);
      expect(r.applied.map((segment) => segment.header.seqno)).toEqual([committed.seqno]);
      expect(r.errors).toEqual([]);
    });

    it("a hint that the writer is verifying a segment: GETs it at once, then applies it on the vouch that follows, with no manifest read", async () => {
      const r = await quietRig();
      const committed = await commitVouched(r, { announced: true });
      r.tailer.hinted({ shard: 0, seqno: committed.seqno, verifying: true });
      await eventually(() => r.reads(segmentKey(committed.seqno)) === 1);
      await turns();
      // Read, not applied: the round waits for the vouch rather than reading the manifest.
      expect(r.applied).toEqual([]);
      expect(r.follower.store.reads).toEqual([segmentKey(committed.seqno)]);
      const reached = r.tailer.waitFor(committed.ts, 60_000);
      r.tailer.hinted({ shard: 0, seqno: committed.seqno, hash: committed.hash });
      await expect(reached).resolves.toBe(true);
      await r.asleep();
      // Then the next poll probed the slot after it; the manifest was never read.
      expect(r.follower.store.reads).toEqual([segmentKey(committed.seqno), segmentKey(committed.seqno + 1)]);
      expect(r.follower.engine.position).toEqual(r.writer.engine.position);
    });

    it.each([
      ["never comes", async (_r: Rig) => undefined],
      ["comes with another hash", async (r: Rig) => r.tailer.hinted({ shard: 0, seqno: r.follower.engine.position.nextSeqno, hash: "0".repeat(64) })],
    ])("an announced vouch that %s: the segment is judged by a manifest read and applied", async (_name, follow) => {
      const r = await quietRig();
      const committed = await r.commit({ announced: true });
      r.tailer.hinted({ shard: 0, seqno: committed.seqno, verifying: true });
      await eventually(() => r.reads(segmentKey(committed.seqno)) === 1);
      await turns();
      expect(r.applied).toEqual([]);
      const reached = r.tailer.waitFor(committed.ts, 60_000);
      await follow(r);
      r.h.clock.advance(1_000); // the longest a round waits for an announced vouch
      await expect(reached).resolves.toBe(true);
      expect(r.reads(MANIFEST_KEY)).toBe(1);
      expect(r.applied.map((segment) => segment.header.seqno)).toEqual([committed.seqno]);
      expect(r.errors).toEqual([]);
    });

    it("without a vouch, the manifest read that judges a new segment goes out beside the GET looking for the next one", async () => {
      const r = await quietRig();
      const committed = await r.commit({ plain: true });
      const probe = new Gate();
      r.follower.store.inject({ operations: ["get"], keyPattern: new RegExp(`${segmentKey(committed.seqno + 1)}$`), once: true, effect: { until: probe.promise } });
      const reached = r.tailer.waitFor(committed.ts, 60_000);
      r.tailer.wake(committed.seqno);
      await eventually(() => r.follower.store.held === 1 && r.reads(MANIFEST_KEY) === 1);
      // Sent once the segment's GET had completed, before the probe of the next slot was.
      expect(r.follower.store.reads.slice(0, 3)).toEqual([segmentKey(committed.seqno), MANIFEST_KEY, segmentKey(committed.seqno + 1)]);
      probe.open();
      await expect(reached).resolves.toBe(true);
      expect(r.reads(MANIFEST_KEY)).toBe(1);
    });

    it("a vouched segment behind one that is not: the whole round waits for a manifest read", async () => {
      const r = await quietRig();
      const gate = new Gate();
      r.follower.store.inject({ operations: ["get"], keyPattern: /manifest$/, once: true, effect: { until: gate.promise } });
      const unhinted = await r.commit({ n: 1 });
      const hinted = await commitVouched(r, { n: 2 });
      const reached = r.tailer.waitFor(hinted.ts, 60_000);
      r.tailer.hinted({ shard: 0, seqno: hinted.seqno, hash: hinted.hash });
      await eventually(() => r.follower.store.held === 1);
      await turns();
      expect(r.applied).toEqual([]);
      gate.open();
      await expect(reached).resolves.toBe(true);
      expect(r.applied.map((segment) => segment.header.seqno)).toEqual([unhinted.seqno, hinted.seqno]);
    });

    it.each([
      ["by hash", false],
      ["with its bytes", true],
    ])("a segment a zombie created in a collected slot is never applied, though the hint vouched for the slot's original (%s)", async (_name, carryBytes) => {
      const r = await quietRig();
      // The clock stands still: the tailer reads none of this before GC deletes it.
      const original = await commitVouched(r, { original: true });
      const originalBytes = (await r.h.bucket.get(segmentKey(original.seqno))) as { body: Uint8Array };
      const after = await commitVouched(r, { after: true });
      const pointer = (await r.writer.engine.snapshotNow())!;
      expect(await r.writer.engine.collectGarbageNow()).toMatchObject({ logStartAfter: after.seqno + 1 });
      // A stalled create lands in the emptied slot: well formed, chained onto the follower's
      // position, with the writer's epoch, but not the bytes the writer verified there.
      const position = r.follower.engine.position;
      expect(position.nextSeqno).toBe(original.seqno);
      const epoch = r.writer.engine.state.kind === "writing" ? r.writer.engine.state.epoch : 0;
      const ts = position.lastMaxTs + 1;
      const stray = encodeSegment(
        { deploymentId: r.h.deploymentId, shard: 0, seqno: original.seqno, epoch, kind: "tick", count: 0, minTs: ts, maxTs: ts, prevHash: position.lastHash, writer: "w" },
        EMPTY_RECORD_BATCH,
      );
      await r.h.bucket.create(segmentKey(original.seqno), stray.bytes);
      r.tailer.hinted({ shard: 0, seqno: original.seqno, hash: original.hash, ...(carryBytes ? { segment: originalBytes.body } : {}) });
      // Carried, the original is applied from its bytes (it is the log's, verified by its
      // writer); by hash, the stray read from the slot is refused and the snapshot restored.
      await eventually(() => (carryBytes ? r.follower.engine.position.nextSeqno > original.seqno : r.tailer.status().restores === 1));
      if (!carryBytes) expect(r.restored).toEqual([pointer.ts]);
      r.tailer.hinted({ shard: 0, seqno: after.seqno, hash: after.hash });
      await eventually(() => r.follower.engine.position.nextSeqno === r.writer.engine.position.nextSeqno);
      expect(r.applied.map((segment) => segment.hash)).not.toContain(stray.hash);
      expect(r.follower.engine.position).toEqual(r.writer.engine.position);
      expect(r.follower.local.get(original.id, r.follower.engine.readTs)?.value).toBe(JSON.stringify({ original: true }));
      expect(r.errors).toEqual([]);
    });
  });

  describe("corruption", () => {
    async function quietRig() {
      const r = await rig();
      r.tailer.start();
      await settleAtIdle(r);
      return r;
    }

    /** The follower must stay where it was, serve its old state, and retry at idlePollMs. */
    async function expectStuckAndRetrying(r: Rig, slot: number, code: string, kept: { id: DocumentId; ts: number }) {
      const before = r.follower.engine.position;
      r.resetReads();
      r.h.clock.advance(TUNING.idlePollMs);
      expect(await r.asleep()).toBe(TUNING.idlePollMs);
      const status = r.tailer.status();
      expect(status.lastError?.code).toBe(code);
      expect(errorKindOf(r.errors[0]?.error)).toBe("Corruption");
      expect(r.errors.map((entry) => [entry.during, (entry.error as { code?: string }).code])).toEqual([["poll", code]]);
      expect(r.follower.engine.position).toEqual(before);
      expect(r.applied).toEqual([]);
      expect(r.follower.local.get(kept.id, r.follower.engine.readTs)?.ts).toBe(kept.ts);
      const stalenessMs = status.stalenessMs!;
      expect(stalenessMs).toBeGreaterThan(0);
      for (let retry = 1; retry <= 3; retry++) {
        r.h.clock.advance(TUNING.idlePollMs);
        expect(await r.asleep()).toBe(TUNING.idlePollMs);
        expect(r.reads(segmentKey(slot))).toBe(retry + 1);
        expect(r.tailer.status().stalenessMs).toBe(stalenessMs + retry * TUNING.idlePollMs);
        expect(r.follower.engine.position).toEqual(before);
      }
      expect(r.errors).toHaveLength(4);
    }

    it("a segment of garbage bytes in the next slot is never applied; the tailer reports SEGMENT_INVALID, keeps serving, and retries", async () => {
      const r = await quietRig();
      const kept = await r.commit({ kept: true });
      r.tailer.wake(kept.seqno);
      await eventually(() => r.follower.engine.position.nextSeqno === kept.seqno + 1);
      await r.asleep();
      r.applied.splice(0);
      const slot = kept.seqno + 1;
      await r.h.bucket.create(segmentKey(slot), new TextEncoder().encode("not a segment at all"));
      await expectStuckAndRetrying(r, slot, "SEGMENT_INVALID", kept);

      // Repaired (an operator removed the object; the writer's next commit takes the slot):
      // the tailer applies it and the error clears.
      await r.h.bucket.delete(segmentKey(slot));
      const repaired = await r.commit({ repaired: true });
      expect(repaired.seqno).toBe(slot);
      r.h.clock.advance(TUNING.idlePollMs);
      await eventually(() => r.follower.engine.position.nextSeqno === slot + 1);
      await r.asleep();
      expect(r.tailer.status()).toMatchObject({ lastError: null, stalenessMs: 0 });
    });

    it.each([
      ["a wrong prevHash", (hash: string | null, maxTs: number) => ({ prevHash: "ab".repeat(32) === hash ? "cd".repeat(32) : "ab".repeat(32), ts: maxTs + 1_000 })],
      ["a timestamp going back", (hash: string | null, maxTs: number) => ({ prevHash: hash, ts: maxTs })],
    ])("a well-formed segment with %s in the next slot breaks the chain: SEGMENT_CHAIN_BROKEN, never applied", async (_name, shape) => {
      const r = await quietRig();
      const kept = await r.commit({ kept: true });
      r.tailer.wake(kept.seqno);
      await eventually(() => r.follower.engine.position.nextSeqno === kept.seqno + 1);
      await r.asleep();
      r.applied.splice(0);
      const position = r.follower.engine.position;
      const slot = position.nextSeqno;
      const { prevHash, ts } = shape(position.lastHash, position.lastMaxTs);
      const epoch = r.writer.engine.state.kind === "writing" ? r.writer.engine.state.epoch : 0;
      const forged = encodeSegment(
        { deploymentId: r.h.deploymentId, shard: 0, seqno: slot, epoch, kind: "tick", count: 0, minTs: ts, maxTs: ts, prevHash, writer: "w" },
        EMPTY_RECORD_BATCH,
      );
      await r.h.bucket.create(segmentKey(slot), forged.bytes);
      await expectStuckAndRetrying(r, slot, "SEGMENT_CHAIN_BROKEN", kept);
    });

    it("a valid segment followed by a corrupt one in the same poll: the valid one is applied and announced, the corrupt one never", async () => {
      const r = await quietRig();
      const good = await r.commit({ good: true });
      await r.h.bucket.create(segmentKey(good.seqno + 1), new TextEncoder().encode("garbage"));
      const reached = r.tailer.waitFor(good.ts, 60_000);
      r.h.clock.advance(TUNING.idlePollMs);
      await expect(reached).resolves.toBe(true);
      expect(await r.asleep()).toBe(TUNING.idlePollMs);
      expect(r.follower.engine.position.nextSeqno).toBe(good.seqno + 1);
      expect(r.applied.map((segment) => segment.header.seqno)).toEqual([good.seqno]);
      expect(r.tailer.status()).toMatchObject({ appliedSeqno: good.seqno, frontierTs: good.ts, lastError: { code: "SEGMENT_INVALID" } });
      // The next polls retry the corrupt slot only.
      r.resetReads();
      r.h.clock.advance(TUNING.idlePollMs);
      expect(await r.asleep()).toBe(TUNING.idlePollMs);
      expect(r.follower.store.reads.filter((key) => key.includes("/log/"))).toEqual([segmentKey(good.seqno + 1)]);
      expect(r.applied).toHaveLength(1);
    });
  });

  describe("garbage collection passing the tailer", () => {
    it("with an expired watermark: GC collects what the tailer had not read; it restores and goes on", async () => {
      const r = await rig({ publishWatermarks: true, writerTuning: { consumerTtlMs: 60_000 } });
      r.tailer.start();
      const start = r.follower.engine.position.nextSeqno;
      await eventually(() => consumerWrites(r) === 1);
      expect(await watermarkOf(r)).toBe(start - 1);
      r.h.clock.advance(60_001); // the watermark is older than the writer's consumer TTL now
      const collected = [await r.commit(), await r.commit()];
      const pointer = (await r.writer.engine.snapshotNow())!;
      expect(await r.writer.engine.collectGarbageNow()).toMatchObject({ logStartAfter: collected[1]!.seqno + 1, heldBackBy: null });
      const after = await r.commit({ after: true });
      const reached = r.tailer.waitFor(after.ts, 60_000);
      r.tailer.wake(after.seqno);
      await expect(reached).resolves.toBe(true);
      expect(r.restored).toEqual([pointer.ts]);
      expect(r.tailer.status()).toMatchObject({ restores: 1, appliedSeqno: after.seqno });
      expect(r.follower.local.get(collected[0]!.id, r.follower.engine.readTs)).not.toBeNull();
      // The last publish was a minute ago: the restored and applied position is published at once.
      await eventually(() => consumerWrites(r) === 2);
      expect(await watermarkOf(r)).toBe(after.seqno);
    });

    it("the next slot collected and the tail otherwise quiet: the manifest re-read on its cadence finds it and restores", async () => {
      const r = await rig();
      r.tailer.start();
      // Poll 0 (t = 0) read the manifest; then polls at 10, 30, 70, 150, 230, 310, 390, 470.
      expect(await r.asleep()).toBe(10);
      const committed = await r.commit({ last: true });
      // The clock stands still, so no poll sees this commit before GC deletes its segment:
      // the tailer's next slot is empty for good, and nothing follows it.
      const pointer = (await r.writer.engine.snapshotNow())!;
      await r.writer.engine.collectGarbageNow();
      expect(await r.h.bucket.get(segmentKey(committed.seqno))).toBeNull();
      let elapsedMs = 0;
      let delayMs = 10;
      while (elapsedMs + delayMs < TUNING.manifestRefreshMs) {
        r.h.clock.advance(delayMs);
        elapsedMs += delayMs;
        delayMs = await r.asleep();
        expect(r.tailer.status().restores).toBe(0);
        expect(r.follower.engine.position.nextSeqno).toBe(committed.seqno);
      }
      r.h.clock.advance(delayMs); // the first poll at or past manifestRefreshMs
      await eventually(() => r.tailer.status().restores === 1);
      expect(r.restored).toEqual([pointer.ts]);
      expect(r.follower.engine.position).toEqual(r.writer.engine.position);
      expect(r.follower.local.get(committed.id, r.follower.engine.readTs)?.value).toBe(JSON.stringify({ last: true }));
      expect(r.errors).toEqual([]);
    });

    it("the next slot collected and the tail quiet: a wake with a seqno at or past the position re-reads the manifest at once and restores", async () => {
      const r = await rig();
      r.tailer.start();
      await settleAtIdle(r);
      const committed = await r.commit();
      await r.writer.engine.snapshotNow();
      await r.writer.engine.collectGarbageNow();
      r.resetReads();
      r.tailer.wake(committed.seqno);
      await eventually(() => r.tailer.status().restores === 1);
      expect(r.reads(MANIFEST_KEY)).toBeGreaterThanOrEqual(1);
      expect(r.follower.engine.position).toEqual(r.writer.engine.position);
      // A plain wake (no seqno) on a quiet tail does not buy a manifest read.
      await r.asleep();
      r.resetReads();
      r.tailer.wake();
      await r.asleep();
      expect(r.reads(MANIFEST_KEY)).toBe(0);
    });
  });

  describe("watermarks", () => {
    it("published at start and after applying, at most once per watermarkIntervalMs, with the newest applied seqno; not republished on a quiet tail", async () => {
      const r = await rig({ publishWatermarks: true });
      const start = r.follower.engine.position.nextSeqno - 1;
      r.tailer.start();
      await eventually(() => consumerWrites(r) === 1);
      expect(await r.follower.engine.watermarkStore.read("f")).toMatchObject({ consumerId: "f", appliedSeqno: start, updatedAt: r.h.clock.nowMs() });
      const first = await r.commit();
      r.tailer.wake(first.seqno);
      await eventually(() => r.follower.engine.position.nextSeqno === first.seqno + 1);
      const second = await r.commit();
      r.tailer.wake(second.seqno);
      await eventually(() => r.follower.engine.position.nextSeqno === second.seqno + 1);
      r.h.clock.advance(TUNING.watermarkIntervalMs - 1);
      await turns();
      expect(consumerWrites(r)).toBe(1);
      expect(await watermarkOf(r)).toBe(start);
      r.h.clock.advance(1);
      await eventually(() => consumerWrites(r) === 2);
      expect(await watermarkOf(r)).toBe(second.seqno); // never first.seqno: two applies, one publish
      // Quiet: time passes, nothing is applied, nothing is written.
      for (let step = 0; step < 5; step++) {
        r.h.clock.advance(TUNING.watermarkIntervalMs);
        await r.asleep();
      }
      expect(consumerWrites(r)).toBe(2);
      // The interval has long passed: the next apply publishes without waiting.
      const third = await r.commit();
      r.tailer.wake(third.seqno);
      await eventually(() => consumerWrites(r) === 3);
      expect(await watermarkOf(r)).toBe(third.seqno);
    });

    it("a live watermark holds GC back, so the tailer continues from the log without a restore", async () => {
      const r = await rig({ publishWatermarks: true });
      r.tailer.start();
      const first = await r.commit();
      r.tailer.wake(first.seqno);
      await eventually(() => r.follower.engine.position.nextSeqno === first.seqno + 1);
      r.h.clock.advance(TUNING.watermarkIntervalMs);
      await eventually(() => consumerWrites(r) === 2);
      expect(await watermarkOf(r)).toBe(first.seqno);
      const unread = [await r.commit(), await r.commit()];
      await r.writer.engine.snapshotNow();
      expect(await r.writer.engine.collectGarbageNow()).toMatchObject({ logStartAfter: first.seqno + 1, heldBackBy: first.seqno + 1 });
      r.tailer.wake(unread[1]!.seqno);
      await eventually(() => r.follower.engine.position.nextSeqno === unread[1]!.seqno + 1);
      expect(r.tailer.status().restores).toBe(0);
      expect(r.restored).toEqual([]);
      expect(r.applied.map((segment) => segment.header.seqno)).toEqual([first.seqno, ...unread.map((commit) => commit.seqno)]);
    });

    it("never published while this node writes the shard; the loop makes no bucket requests then ('paused')", async () => {
      const r = await rig({ publishWatermarks: true });
      const start = r.follower.engine.position.nextSeqno - 1;
      r.tailer.start();
      await eventually(() => consumerWrites(r) === 1);
      const applied = await r.commit();
      r.tailer.wake(applied.seqno);
      await eventually(() => r.follower.engine.position.nextSeqno === applied.seqno + 1);
      // A publish is now due at the end of the interval; before it, this node takes over.
      await r.writer.engine.relinquish();
      await r.follower.engine.acquire();
      expect(r.tailer.status()).toMatchObject({ state: "paused", stalenessMs: 0 });
      r.resetReads();
      const writesBefore = r.follower.store.writes.length;
      r.h.clock.advance(TUNING.watermarkIntervalMs);
      await r.follower.engine.commit(insertUnit(r.follower.engine, r.h.newId(), { by: "f" }));
      for (let step = 0; step < 4; step++) {
        r.h.clock.advance(TUNING.idlePollMs);
        await r.asleep();
      }
      await turns();
      expect(consumerWrites(r)).toBe(1);
      expect(await watermarkOf(r)).toBe(start);
      expect(r.follower.store.reads.filter((key) => key.includes("/log/"))).toEqual([]);
      expect(r.follower.store.writes.slice(writesBefore).filter((key) => !key.includes("/log/") && key !== MANIFEST_KEY)).toEqual([]);
      // Back to following: polling resumes.
      await r.follower.engine.relinquish();
      r.resetReads();
      r.h.clock.advance(TUNING.idlePollMs);
      await r.asleep();
      expect(r.reads(segmentKey(r.follower.engine.position.nextSeqno))).toBe(1);
      expect(r.tailer.status().state).toBe("tailing");
    });

    it("stop({removeWatermark: true}) removes the watermark", async () => {
      const removing = await rig({ publishWatermarks: true });
      removing.tailer.start();
      await eventually(() => consumerWrites(removing) === 1);
      await removing.tailer.stop({ removeWatermark: true });
      expect(await removing.follower.engine.watermarkStore.read("f")).toBeNull();
      expect(removing.tailer.status().state).toBe("stopped");
    });

    it("stop() without removeWatermark leaves the watermark where it was", async () => {
      const r = await rig({ publishWatermarks: true });
      r.tailer.start();
      await eventually(() => consumerWrites(r) === 1);
      const before = await r.follower.engine.watermarkStore.read("f");
      await r.tailer.stop();
      expect(await r.follower.engine.watermarkStore.read("f")).toEqual(before);
    });
  });

  describe("failures and lifecycle", () => {
    it("an unreachable bucket fails the poll through onError and status, applies nothing, and the tailer recovers when it is back", async () => {
      const r = await rig();
      r.tailer.start();
      await settleAtIdle(r);
      r.follower.store.inject({ operations: ["get"], effect: "unreachable" });
      const committed = await r.commit({ during: "outage" });
      r.h.clock.advance(TUNING.idlePollMs);
      expect(await r.asleep()).toBe(TUNING.idlePollMs);
      expect(r.tailer.status().lastError?.code).toBe("STORE_UNREACHABLE");
      expect(r.errors.map((entry) => [entry.during, (entry.error as { code?: string }).code])).toEqual([["poll", "STORE_UNREACHABLE"]]);
      expect(r.follower.engine.position.nextSeqno).toBe(committed.seqno);
      r.h.clock.advance(TUNING.idlePollMs);
      expect(await r.asleep()).toBe(TUNING.idlePollMs);
      expect(r.errors).toHaveLength(2);
      expect(r.applied).toEqual([]);
      r.follower.store.clear();
      r.h.clock.advance(TUNING.idlePollMs);
      await eventually(() => r.follower.engine.position.nextSeqno === committed.seqno + 1);
      await r.asleep();
      expect(r.tailer.status()).toMatchObject({ lastError: null, stalenessMs: 0, segmentsApplied: 1 });
      expect(r.errors).toHaveLength(2);
    });

    it("a segment read whose manifest read after it fails is not applied (the validity rule)", async () => {
      const r = await rig();
      r.tailer.start();
      await settleAtIdle(r);
      r.follower.store.inject({ operations: ["get"], keyPattern: /manifest$/, effect: "transient" });
      const committed = await r.commit();
      r.resetReads();
      r.tailer.wake(committed.seqno);
      expect(await r.asleep()).toBe(TUNING.idlePollMs);
      expect(r.reads(segmentKey(committed.seqno))).toBe(1);
      expect(r.tailer.status().lastError?.code).toBe("STORE_TRANSIENT");
      expect(r.follower.engine.position.nextSeqno).toBe(committed.seqno);
      expect(r.applied).toEqual([]);
      r.follower.store.clear();
      r.tailer.wake(committed.seqno);
      await eventually(() => r.follower.engine.position.nextSeqno === committed.seqno + 1);
    });

    it("a writer fenced by a takeover goes back to tailing: its tailer catches it up to the new writer's log", async () => {
      const h = await setup();
      const a = await h.writer("a", { leaseTtlMs: 5_000 });
      await commitMany(a, h, 1);
      const clock = new RecordingClock(h.clock, (ms) => LOOP_WAITS.has(ms));
      const tailer = new ShardTailer({ engine: a.engine, consumerId: "a", clock, tuning: TUNING, publishWatermarks: false });
      cleanup(() => tailer.stop());
      tailer.start();
      expect(tailer.status()).toMatchObject({ state: "paused", stalenessMs: 0 });
      a.store.reads.splice(0);
      h.clock.advance(5_001);
      const b = await h.writer("b", { leaseTtlMs: 5_000 });
      const byB = h.newId();
      const committed = await b.engine.commit(insertUnit(b.engine, byB, { by: "b" }));
      expect(a.store.reads.filter((key) => key.includes("/log/"))).toEqual([]); // paused: no polls
      await expect(a.engine.commit(insertUnit(a.engine, h.newId(), { stale: true }))).rejects.toSatisfy((error: unknown) => hasErrorCode(error, "FENCED"));
      expect(a.engine.state.kind).toBe("fenced");
      expect(a.engine.readTs).toBeLessThan(committed.ts);
      const reached = tailer.waitFor(committed.ts, 60_000);
      tailer.wake(); // what startNode does on "fenced"
      await expect(reached).resolves.toBe(true);
      expect(a.engine.position).toEqual(b.engine.position);
      expect(a.local.get(byB, a.engine.readTs)?.value).toBe(JSON.stringify({ by: "b" }));
      expect(tailer.status()).toMatchObject({ state: "tailing", lastError: null, appliedSeqno: committed.seqno });
    });

    it("stop() waits for the poll in progress; a stopped tailer makes no more requests, and start() does not revive it", async () => {
      const r = await rig();
      r.tailer.start();
      await settleAtIdle(r);
      const gate = new Gate();
      r.follower.store.inject({ operations: ["get"], once: true, effect: { until: gate.promise } });
      r.tailer.wake();
      await eventually(() => r.follower.store.held === 1);
      let stopped = false;
      const stopping = r.tailer.stop().then(() => (stopped = true));
      await turns();
      expect(stopped).toBe(false);
      gate.open();
      await stopping;
      expect(r.tailer.status().state).toBe("stopped");
      const reads = r.follower.store.reads.length;
      await r.commit();
      r.tailer.start();
      r.tailer.wake(r.writer.engine.position.nextSeqno - 1);
      r.h.clock.advance(10 * TUNING.idlePollMs);
      await turns();
      expect(r.follower.store.reads.length).toBe(reads);
      expect(r.tailer.status().state).toBe("stopped");
    });

    it("reports 'stopped' with unknown staleness before start, and refuses tuning that is not a positive integer of ms", async () => {
      const r = await rig();
      expect(r.tailer.status()).toMatchObject({ state: "stopped", stalenessMs: null, lastError: null, segmentsApplied: 0, restores: 0 });
      for (const tuning of [{ firstBackoffMs: 0 }, { idlePollMs: -1 }, { manifestRefreshMs: 1.5 }, { watermarkIntervalMs: Number.NaN }]) {
        let error: unknown;
        try {
          new ShardTailer({ engine: r.follower.engine, consumerId: "x", clock: r.clock, tuning });
        } catch (caught) {
          error = caught;
        }
        expect(hasErrorCode(error, "INVALID_ARGUMENT")).toBe(true);
      }
    });
  });
});
