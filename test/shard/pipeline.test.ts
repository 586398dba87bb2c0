/**
 * Scenario: pipelined group commit (DESIGN.md §4, issue 27 item 1). A writer with several
 * segments in flight acknowledges them strictly in log order, and the first one that is
 * not durable fails every one after it: no acknowledged write follows a hole. Each test
 * holds chosen bucket calls with gates to put the pipeline in the state it is about, then
 * lets a successor, GC or a lost response do the worst it can. Run against an in-memory
 * bucket and against the S3 test endpoint through the real AWS SDK (and radosgw in test:s3).
 */
import { describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import type { CommitResult } from "../../src/shard/WriteUnit.js";
import { PIPELINE_DEPTH_MAX } from "../../src/shard/engineOptions.js";
import { BUCKET_FACTORIES } from "../support/bucketFactories.js";
import { eventually, Gate } from "../support/Gate.js";
import { harnessPerTest, insertUnit, type HarnessNode, type ShardHarness } from "../support/shardHarness.js";

const TTL = 10_000;
const code = (expected: string) => (error: unknown) => hasErrorCode(error, expected as never);

/** A writer with `depth` segments allowed in flight, past the slots after its fence that it writes one at a time. */
async function pipelinedWriter(h: ShardHarness, name: string, depth = 4): Promise<HarnessNode> {
  const writer = await h.writer(name, { leaseTtlMs: TTL, pipelineDepth: depth });
  const fenceSeqno = writer.engine.position.nextSeqno - 1;
  while (writer.engine.position.nextSeqno <= fenceSeqno + PIPELINE_DEPTH_MAX - 1) {
    await writer.engine.commit(insertUnit(writer.engine, h.newId(), { warmUp: true }));
  }
  return writer;
}

function slotKey(seqno: number): RegExp {
  return new RegExp(`^${bucketLayout.segment(0, seqno).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`);
}

/** Holds the creates of `slots` on `node` until the returned gate opens. */
function holdCreates(node: HarnessNode, slots: readonly number[]): Gate {
  const gate = new Gate();
  for (const seqno of slots) node.store.inject({ operations: ["create"], keyPattern: slotKey(seqno), once: true, effect: { until: gate.promise } });
  return gate;
}

/** A commit tracked as it settles, so a test can tell which finished and in what order. */
interface Tracked {
  readonly id: ReturnType<ShardHarness["newId"]>;
  readonly promise: Promise<CommitResult>;
  settled: "pending" | "resolved" | "rejected";
}

/**
 * Commits one unit as its own segment: it is queued once the previous segments are in
 * flight, and waits until its own segment is too (`inFlight` of them in all).
 */
async function commitAlone(h: ShardHarness, node: HarnessNode, order: Tracked[], inFlight: number): Promise<Tracked> {
  const id = h.newId();
  const promise = node.engine.commit(insertUnit(node.engine, id, { n: order.length }));
  const tracked: Tracked = { id, promise, settled: "pending" };
  promise.then(
    () => {
      tracked.settled = "resolved";
      order.push(tracked);
    },
    () => {
      tracked.settled = "rejected";
      order.push(tracked);
    },
  );
  await eventually(() => node.engine.segmentsInFlight === inFlight);
  return tracked;
}

/**
 * Two segments in flight on `node`: the next slot's create held by `gate` (the `head`
 * commit's), and one more commit's segment built behind it (`behind`).
 */
async function headHeldThenOneBehind(h: ShardHarness, node: HarnessNode) {
  const slot = node.engine.position.nextSeqno;
  const gate = holdCreates(node, [slot]);
  const order: Tracked[] = [];
  const head = await commitAlone(h, node, order, 1);
  await eventually(() => node.store.held === 1);
  const behind = await commitAlone(h, node, order, 2);
  return { slot, gate, order, head, behind };
}

/** Lets the event loop turn a few times, so that whatever could settle has. */
async function settleTurns(turns = 20): Promise<void> {
  for (let turn = 0; turn < turns; turn++) await new Promise((resolve) => setImmediate(resolve));
}

describe.each(BUCKET_FACTORIES)("pipelined group commit on $name", (factory) => {
  const setup = harnessPerTest(factory);

  it("has several segments in flight and acknowledges them in log order: a later one verified first waits", async () => {
    const h = await setup();
    const a = await pipelinedWriter(h, "a");
    const { slot, gate, order, head: first, behind: second } = await headHeldThenOneBehind(h, a);
    const third = await commitAlone(h, a, order, 3);
    // The second and third segments are created and verified; the first is still held.
    await eventually(() => a.events.filter((event) => event.type === "created" && event.seqno > slot).length === 2);
    await settleTurns();
    expect([first.settled, second.settled, third.settled]).toEqual(["pending", "pending", "pending"]);
    const readTsBefore = a.engine.readTs;
    gate.open();
    const results = await Promise.all([first.promise, second.promise, third.promise]);
    expect(results.map((result) => result.seqno)).toEqual([slot, slot + 1, slot + 2]);
    expect(order).toEqual([first, second, third]);
    expect(results[0]!.ts).toBeGreaterThan(readTsBefore);
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(a.engine.position);
    for (const tracked of [first, second, third]) expect(reader.local.get(tracked.id, reader.engine.readTs)).not.toBeNull();
  });

  it("a fence landing between two in-flight segments fails both, unacknowledged, though the later one was created", async () => {
    const h = await setup();
    const a = await pipelinedWriter(h, "a");
    const { slot, gate, head: held, behind: landed } = await headHeldThenOneBehind(h, a);
    await eventually(() => a.events.some((event) => event.type === "created" && event.seqno === slot + 1));
    // The segment at slot + 1 is in the bucket and its own check found its slot uncollected:
    // only the hole before it keeps it from being acknowledged.
    h.clock.advance(TTL + 1);
    const b = await h.writer("b", { leaseTtlMs: TTL });
    expect(b.engine.position.nextSeqno).toBe(slot + 1); // b fenced at the hole
    gate.open();
    await expect(held.promise).rejects.toSatisfy(code("FENCED"));
    await expect(landed.promise).rejects.toSatisfy(code("FENCED"));
    expect(a.engine.state.kind).toBe("fenced");
    // a's segment past b's fence is a leftover: b steps over it, every reader skips it.
    const next = await b.engine.commit(insertUnit(b.engine, h.newId(), { by: "b" }));
    expect(next.seqno).toBe(slot + 2);
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(b.engine.position);
    expect(reader.local.get(held.id, reader.engine.readTs)).toBeNull();
    expect(reader.local.get(landed.id, reader.engine.readTs)).toBeNull();
  });

  it("a writer that dies with segments in flight: those before the hole are in the log, those after it never are", async () => {
    const h = await setup();
    const a = await pipelinedWriter(h, "a");
    const slot = a.engine.position.nextSeqno;
    const gate = holdCreates(a, [slot + 1]);
    const order: Tracked[] = [];
    const before = { id: h.newId() };
    // Acknowledged: its segment and the ones before it are durable.
    expect((await a.engine.commit(insertUnit(a.engine, before.id, { before: true }))).seqno).toBe(slot);
    const hole = await commitAlone(h, a, order, 1);
    await eventually(() => a.store.held === 1);
    const after = await commitAlone(h, a, order, 2);
    await eventually(() => a.events.some((event) => event.type === "created" && event.seqno === slot + 2));
    // a stops here for good (its held create never goes out while b takes over).
    h.clock.advance(TTL + 1);
    const b = await h.writer("b", { leaseTtlMs: TTL });
    expect(b.engine.position.nextSeqno).toBe(slot + 2); // fence at the hole, slot + 1
    expect(b.local.get(before.id, b.engine.readTs)).not.toBeNull();
    const next = await b.engine.commit(insertUnit(b.engine, h.newId(), { by: "b" }));
    expect(next.seqno).toBe(slot + 3); // stepped over a's leftover at slot + 2
    gate.open(); // the dead writer's last create arrives after all: refused
    await expect(hole.promise).rejects.toSatisfy(code("FENCED"));
    await expect(after.promise).rejects.toSatisfy(code("FENCED"));
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(b.engine.position);
    expect(reader.local.get(before.id, reader.engine.readTs)).not.toBeNull();
    expect(reader.local.get(hole.id, reader.engine.readTs)).toBeNull();
    expect(reader.local.get(after.id, reader.engine.readTs)).toBeNull();
  });

  it("segments that all landed but whose checks stalled past the lease are in the log, and acknowledged once checked", async () => {
    const h = await setup();
    const a = await pipelinedWriter(h, "a");
    const slot = a.engine.position.nextSeqno;
    const manifestReads = new Gate();
    a.store.inject({ operations: ["get"], keyPattern: /manifest$/, effect: { until: manifestReads.promise } });
    const order: Tracked[] = [];
    const commits: Tracked[] = [];
    for (let index = 1; index <= 3; index++) commits.push(await commitAlone(h, a, order, index));
    await eventually(() => a.events.filter((event) => event.type === "created" && event.seqno >= slot).length === 3);
    h.clock.advance(TTL + 1);
    const b = await h.writer("b", { leaseTtlMs: TTL });
    expect(b.engine.position.nextSeqno).toBe(slot + 4); // all three applied, fence after them
    for (const tracked of commits) expect(b.local.get(tracked.id, b.engine.readTs)).not.toBeNull();
    a.store.clear();
    manifestReads.open();
    const results = await Promise.all(commits.map((tracked) => tracked.promise));
    expect(results.map((result) => result.seqno)).toEqual([slot, slot + 1, slot + 2]);
    expect(order).toEqual(commits);
    expect(a.engine.state.kind).toBe("fenced"); // acknowledged, then stopped: b owns the shard
  });

  it("GC racing a stalled pipelined writer: its creates land in collected slots and none is acknowledged", async () => {
    const h = await setup();
    const a = await pipelinedWriter(h, "a");
    const slot = a.engine.position.nextSeqno;
    const gate = holdCreates(a, [slot, slot + 1, slot + 2]);
    const order: Tracked[] = [];
    const commits: Tracked[] = [];
    for (let index = 1; index <= 3; index++) {
      commits.push(await commitAlone(h, a, order, index));
      await eventually(() => a.store.held === index);
    }
    h.clock.advance(TTL + 1);
    const b = await h.writer("b", { leaseTtlMs: TTL });
    for (let index = 0; index < 4; index++) await b.engine.commit(insertUnit(b.engine, h.newId(), { index }));
    await b.engine.snapshotNow();
    const report = await b.engine.collectGarbageNow();
    expect(report.logStartAfter).toBeGreaterThan(slot + 2);
    gate.open(); // the stalled creates land in slots GC emptied
    for (const tracked of commits) await expect(tracked.promise).rejects.toSatisfy(code("FENCED"));
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(b.engine.position);
    for (const tracked of commits) expect(reader.local.get(tracked.id, reader.engine.readTs)).toBeNull();
    await eventually(() => a.engine.segmentsInFlight === 0);
    expect((await b.engine.collectGarbageNow({ sweep: true })).straysDeleted).toBeGreaterThanOrEqual(1);
  });

  it("lost create responses and failing checks with segments in flight: every acknowledged write is in the log once, in order", async () => {
    const h = await setup();
    const a = await pipelinedWriter(h, "a", PIPELINE_DEPTH_MAX);
    a.store.inject({ operations: ["create"], rate: 0.3, effect: "lose-response" });
    a.store.inject({ operations: ["create", "get"], rate: 0.5, effect: "next-turns" });
    const results: { id: ReturnType<ShardHarness["newId"]>; result: CommitResult }[] = [];
    const pending: Promise<void>[] = [];
    for (let index = 0; index < 60; index++) {
      const id = h.newId();
      pending.push(a.engine.commit(insertUnit(a.engine, id, { index })).then((result) => void results.push({ id, result })));
      if (index % 3 === 0) await settleTurns(2);
    }
    await Promise.all(pending);
    expect(a.engine.state.kind).toBe("writing");
    // Acknowledged in log order: seqnos and timestamps never go back.
    for (let index = 1; index < results.length; index++) {
      expect(results[index]!.result.seqno).toBeGreaterThanOrEqual(results[index - 1]!.result.seqno);
      expect(results[index]!.result.ts).toBeGreaterThan(results[index - 1]!.result.ts);
    }
    expect(a.events.some((event) => event.type === "created")).toBe(true);
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(a.engine.position);
    for (const { id, result } of results) expect(reader.local.get(id, reader.engine.readTs)?.ts).toBe(result.ts);
  });

  it("relinquish and restart drain the pipeline: nothing in flight is lost or left unanswered", async () => {
    const h = await setup();
    const a = await pipelinedWriter(h, "a");
    const { gate, order, head, behind } = await headHeldThenOneBehind(h, a);
    const commits: Tracked[] = [head, behind];
    for (let index = 3; index <= 4; index++) commits.push(await commitAlone(h, a, order, index));
    const queued = a.engine.commit(insertUnit(a.engine, h.newId(), { queued: true }));
    const stopping = a.engine.relinquish();
    await settleTurns();
    gate.open();
    await stopping;
    await Promise.all(commits.map((tracked) => tracked.promise));
    expect(order).toEqual(commits);
    await queued; // queued before the relinquish: committed, not dropped
    const b = await h.writer("b", { leaseTtlMs: TTL });
    for (const tracked of commits) expect(b.local.get(tracked.id, b.engine.readTs)).not.toBeNull();
    await a.engine.acquire().catch(() => undefined);
    expect(a.engine.state.kind).not.toBe("writing"); // b holds a live lease
  });

  it("writes the slots a fenced writer's pipeline may reach one at a time, and a depth of 1 never more", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL, pipelineDepth: PIPELINE_DEPTH_MAX });
    a.store.inject({ operations: ["create"], effect: "next-turns" });
    const loneThrough = a.engine.position.nextSeqno - 1 + PIPELINE_DEPTH_MAX - 1;
    let mostInFlightInLoneSlots = 0;
    const watch = () => {
      // The newest segment in flight is at position + inFlight - 1.
      const inFlight = a.engine.segmentsInFlight;
      if (a.engine.position.nextSeqno + inFlight - 1 <= loneThrough) mostInFlightInLoneSlots = Math.max(mostInFlightInLoneSlots, inFlight);
    };
    // A commit every turn while the lone slots fill: never two of them in flight.
    const pending: Promise<CommitResult>[] = [];
    while (a.engine.position.nextSeqno <= loneThrough) {
      pending.push(a.engine.commit(insertUnit(a.engine, h.newId(), { lone: true })));
      watch();
      await settleTurns(1);
      watch();
    }
    await Promise.all(pending);
    expect(mostInFlightInLoneSlots).toBe(1);
    // Past them, a segment is built while the one before it is still in flight.
    const { slot, gate, head: first, behind: second } = await headHeldThenOneBehind(h, a);
    gate.open();
    expect((await first.promise).seqno).toBe(slot);
    expect((await second.promise).seqno).toBe(slot + 1);
    await a.engine.relinquish();

    const single = await pipelinedWriter(h, "single", 1);
    single.store.inject({ operations: ["create"], effect: "next-turns" });
    let singleMost = 0;
    const singles: Promise<CommitResult>[] = [];
    for (let index = 0; index < 30; index++) {
      singles.push(single.engine.commit(insertUnit(single.engine, h.newId(), { index })));
      await settleTurns(1);
      singleMost = Math.max(singleMost, single.engine.segmentsInFlight);
    }
    await Promise.all(singles);
    expect(singleMost).toBe(1);
  });

  it("a flight given up on, stuck on an unanswering bucket, holds up neither a re-acquire nor a close; its late create is a leftover", async () => {
    const h = await setup();
    const a = await pipelinedWriter(h, "a");
    const slot = a.engine.position.nextSeqno;
    // The head's create fails before it reaches the bucket (outcome unknown to the writer);
    // the segment after it hangs until the gate opens.
    const failHead = new Gate();
    a.store.inject({ operations: ["create"], keyPattern: slotKey(slot), once: true, effect: { until: failHead.promise } });
    a.store.inject({ operations: ["create"], keyPattern: slotKey(slot), once: true, effect: "unreachable" });
    const stuck = holdCreates(a, [slot + 1]);
    const order: Tracked[] = [];
    const head = await commitAlone(h, a, order, 1);
    await eventually(() => a.store.held === 1);
    const behind = await commitAlone(h, a, order, 2);
    await eventually(() => a.store.held === 2);
    failHead.open();
    await expect(head.promise).rejects.toSatisfy(code("ENGINE_POISONED"));
    await expect(behind.promise).rejects.toSatisfy(code("ENGINE_POISONED"));
    expect(a.store.held).toBe(1); // the abandoned create is still out
    await a.engine.acquire(); // not held up by it
    const fenceSeqno = a.engine.position.nextSeqno - 1;
    const next = await a.engine.commit(insertUnit(a.engine, h.newId(), { after: "re-acquire" }));
    stuck.open(); // the old epoch's create arrives late: refused, or a leftover stepped over
    await eventually(() => a.store.held === 0);
    const last = await a.engine.commit(insertUnit(a.engine, h.newId(), { after: "leftover" }));
    expect(last.seqno).toBeGreaterThan(next.seqno);
    const reader = await h.node("reader");
    expect(reader.engine.position).toEqual(a.engine.position);
    expect(reader.local.get(behind.id, reader.engine.readTs)).toBeNull();

    // And a close with such a flight out returns at once (the failure is set up again,
    // past the slots after the new fence that are written one at a time).
    while (a.engine.position.nextSeqno <= fenceSeqno + PIPELINE_DEPTH_MAX - 1) await a.engine.commit(insertUnit(a.engine, h.newId(), {}));
    const again = a.engine.position.nextSeqno;
    const failAgain = new Gate();
    a.store.inject({ operations: ["create"], keyPattern: slotKey(again), once: true, effect: { until: failAgain.promise } });
    a.store.inject({ operations: ["create"], keyPattern: slotKey(again), once: true, effect: "unreachable" });
    const stuckAgain = holdCreates(a, [again + 1]);
    const first = await commitAlone(h, a, order, 1);
    await eventually(() => a.store.held === 1);
    const second = await commitAlone(h, a, order, 2);
    await eventually(() => a.store.held === 2);
    failAgain.open();
    await expect(first.promise).rejects.toSatisfy(code("ENGINE_POISONED"));
    await expect(second.promise).rejects.toSatisfy(code("ENGINE_POISONED"));
    expect(a.store.held).toBe(1);
    await a.engine.close();
    stuckAgain.open();
    // Let the late create land before the harness empties the bucket.
    await eventually(() => a.store.writes.includes(bucketLayout.segment(0, again + 1)));
  });
});
