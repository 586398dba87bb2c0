/**
 * Scenario: standby takeover (DESIGN.md §9). Writer "a" holds the shard's lease and stops
 * renewing it (its engine runs no drivers: a hung or partitioned process); standbys watch
 * the lease with a LeaseWatcher on their own engines. The clock is manual and checks run
 * every millisecond, so a test places a check exactly on the lease's expiry, on the
 * expiry plus the tolerated skew, and one millisecond past it. Standbys' wall clocks may
 * be off (SkewedClock); what counts is the standby's own clock.
 */
import { describe, expect, it } from "vitest";
import type { Clock } from "../../src/base/clock.js";
import { hasErrorCode } from "../../src/base/errors.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import type { Manifest } from "../../src/manifest/Manifest.js";
import { LeaseWatcher } from "../../src/replica/LeaseWatcher.js";
import { memoryBucket, s3EndpointBucket } from "../support/bucketFactories.js";
import { eventually, Gate } from "../support/Gate.js";
import { commitMany, insertUnit, type HarnessNode, type ShardHarness } from "../support/shardHarness.js";
import { SkewedClock } from "../support/SkewedClock.js";
import { replicaHarnessPerTest, turns } from "./replicaSupport.js";

const TTL = 5_000;
const SKEW = 700;
const MANIFEST_KEY = bucketLayout.manifest(0);
const code = (expected: string) => (error: unknown) => hasErrorCode(error, expected as never);

describe("LeaseWatcher.lapsed", () => {
  const manifest = (writer: string | null, leaseExpiresAt: number): Manifest => ({
    format: 1,
    deploymentId: "0123456789abcdef0123456789abcdef",
    shard: 0,
    version: 3,
    nonce: "n",
    epoch: 2,
    writer: writer === null ? null : { nodeId: writer, url: null },
    leaseExpiresAt,
    logStart: 0,
    snapshot: null,
    tailHint: 0,
    fences: [],
    inheritedFrom: [],
    collecting: null,
  });
  const EXPIRES = 1_700_000_010_000;

  it("a relinquished lease (no writer) may be taken at once", () => {
    expect(LeaseWatcher.lapsed(manifest(null, EXPIRES), "me", EXPIRES - 60_000, SKEW)).toBe(true);
    expect(LeaseWatcher.lapsed(manifest(null, 0), "me", 0, SKEW)).toBe(true);
  });

  it("a lease naming this node may be taken at once (its previous run, or its own poisoned engine)", () => {
    expect(LeaseWatcher.lapsed(manifest("me", EXPIRES), "me", EXPIRES - 60_000, SKEW)).toBe(true);
    expect(LeaseWatcher.lapsed(manifest("me", EXPIRES), "me-too", EXPIRES - 60_000, SKEW)).toBe(false);
  });

  it("another node's lease lapses only once it expired more than maxClockSkewMs ago", () => {
    const other = manifest("other", EXPIRES);
    expect(LeaseWatcher.lapsed(other, "me", EXPIRES - 1, SKEW)).toBe(false);
    expect(LeaseWatcher.lapsed(other, "me", EXPIRES, SKEW)).toBe(false);
    expect(LeaseWatcher.lapsed(other, "me", EXPIRES + 1, SKEW)).toBe(false);
    expect(LeaseWatcher.lapsed(other, "me", EXPIRES + SKEW, SKEW)).toBe(false);
    expect(LeaseWatcher.lapsed(other, "me", EXPIRES + SKEW + 1, SKEW)).toBe(true);
    expect(LeaseWatcher.lapsed(other, "me", EXPIRES, 0)).toBe(false);
    expect(LeaseWatcher.lapsed(other, "me", EXPIRES + 1, 0)).toBe(true);
  });
});

interface Watched {
  readonly node: HarnessNode;
  readonly watcher: LeaseWatcher;
  readonly acquired: number[];
  readonly errors: unknown[];
  /** Every acquire the watcher started, and how it ended ("ok" or the error's code). */
  readonly attempts: string[];
  manifestReads(): number;
  manifestWrites(): number;
}

function watch(node: HarnessNode, clock: Clock, cleanup: (step: () => unknown) => void, options: { maxClockSkewMs?: number } = {}): Watched {
  const acquired: number[] = [];
  const errors: unknown[] = [];
  const attempts: string[] = [];
  const engine = node.engine;
  const watcher = new LeaseWatcher({
    // The real engine, with its acquires recorded.
    engine: {
      shard: engine.shard,
      get state() {
        return engine.state;
      },
      refreshManifest: () => engine.refreshManifest(),
      acquire: async () => {
        const index = attempts.push("running") - 1;
        try {
          await engine.acquire();
          attempts[index] = "ok";
        } catch (error) {
          attempts[index] = (error as { code?: string }).code ?? "?";
          throw error;
        }
      },
    },
    nodeId: node.name,
    clock,
    checkIntervalMs: 1,
    maxClockSkewMs: options.maxClockSkewMs ?? SKEW,
    onAcquired: () => acquired.push(clock.nowMs()),
    onError: (error) => errors.push(error),
  });
  watcher.start();
  cleanup(() => {
    node.store.releaseAll();
    return watcher.stop();
  });
  return {
    node,
    watcher,
    acquired,
    errors,
    attempts,
    manifestReads: () => node.store.reads.filter((key) => key === MANIFEST_KEY).length,
    manifestWrites: () => node.store.writes.filter((key) => key === MANIFEST_KEY).length,
  };
}

/** Moves the clock by `ms` (waking the watchers' 1 ms sleeps) and waits until every watcher's check after it has run. */
async function checkAfter(h: ShardHarness, ms: number, watched: readonly Watched[]): Promise<void> {
  const before = watched.map((entry) => entry.manifestReads());
  h.clock.advance(ms);
  await eventually(() => watched.every((entry, index) => entry.manifestReads() > before[index]!));
  await turns(); // an acquire the check decided on has started (and, in memory, got far)
}

describe.each([memoryBucket, s3EndpointBucket])("standby takeover on $name", (factory) => {
  const { setup, cleanup } = replicaHarnessPerTest(factory);

  it.each([
    ["in step with the writer", 0],
    ["ahead of the writer by 300 ms", 300],
    ["behind the writer by 300 ms", -300],
  ])("a standby whose clock is %s takes over only once the lease expired more than maxClockSkewMs ago on its own clock", async (_name, offsetMs) => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL }); // drivers: none, so nothing renews the lease
    await commitMany(a, h, 2);
    const standbyClock = new SkewedClock(h.clock, offsetMs);
    const b = watch(await h.node("b", { leaseTtlMs: TTL }, { clock: standbyClock }), standbyClock, cleanup);
    const expiresAt = a.engine.manifestCurrent.leaseExpiresAt;
    const writesBefore = b.manifestWrites();

    // Checks at (standby clock) expiry, and at expiry + maxClockSkewMs: not yet.
    await checkAfter(h, expiresAt - standbyClock.nowMs(), [b]);
    expect(standbyClock.nowMs()).toBe(expiresAt);
    expect(b.node.engine.state.kind).toBe("following");
    await checkAfter(h, SKEW, [b]);
    expect(standbyClock.nowMs()).toBe(expiresAt + SKEW);
    expect(b.node.engine.state.kind).toBe("following");
    expect(b.manifestWrites()).toBe(writesBefore);
    expect(b.attempts).toEqual([]); // not even an attempt
    expect(b.acquired).toEqual([]);

    // One millisecond later it takes over: epoch + 1, the log caught up, the fence written.
    await checkAfter(h, 1, [b]);
    await eventually(() => b.acquired.length === 1);
    expect(b.acquired).toEqual([expiresAt + SKEW + 1]);
    expect(b.attempts).toEqual(["ok"]);
    expect(b.node.engine.state).toMatchObject({ kind: "writing", epoch: 2 });
    expect(b.node.engine.manifestCurrent.writer?.nodeId).toBe("b");
    expect(b.node.engine.position.nextSeqno).toBe(a.engine.position.nextSeqno + 1);
    expect(b.errors).toEqual([]);

    // The old writer wakes up: its next commit is fenced, and so is its heartbeat.
    const lost = h.newId();
    await expect(a.engine.commit(insertUnit(a.engine, lost, { stale: true }))).rejects.toSatisfy(code("FENCED"));
    await expect(a.engine.heartbeat()).rejects.toSatisfy(code("FENCED"));
    expect(a.engine.state.kind).toBe("fenced");
    const kept = await b.node.engine.commit(insertUnit(b.node.engine, h.newId(), { by: "b" }));
    const reader = await h.node("reader");
    expect(reader.engine.position.nextSeqno).toBe(kept.seqno + 1);
    expect(reader.local.get(lost, reader.engine.readTs)).toBeNull();

    // The new writer's watcher makes no more requests while it writes.
    const reads = b.manifestReads();
    h.clock.advance(1);
    h.clock.advance(1);
    await turns();
    expect(b.manifestReads()).toBe(reads);
  });

  it("the old writer's heartbeat after the takeover is fenced (before any commit)", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    const b = watch(await h.node("b", { leaseTtlMs: TTL }), h.clock, cleanup);
    await checkAfter(h, a.engine.manifestCurrent.leaseExpiresAt + SKEW + 1 - h.clock.nowMs(), [b]);
    await eventually(() => b.node.engine.state.kind === "writing");
    await expect(a.engine.heartbeat()).rejects.toSatisfy(code("FENCED"));
    expect(a.engine.state.kind).toBe("fenced");
    await expect(a.engine.commit(insertUnit(a.engine, h.newId(), {}))).rejects.toSatisfy(code("FENCED"));
  });

  it("two standbys racing for a lapsed lease: exactly one acquires; the other keeps watching without an error, and takes over when the winner's lease lapses", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await commitMany(a, h, 1);
    const b = watch(await h.node("b", { leaseTtlMs: TTL }), h.clock, cleanup);
    const c = watch(await h.node("c", { leaseTtlMs: TTL }), h.clock, cleanup);
    await checkAfter(h, a.engine.manifestCurrent.leaseExpiresAt + SKEW + 1 - h.clock.nowMs(), [b, c]);
    await eventually(() => b.acquired.length + c.acquired.length === 1);
    // Let the loser's acquire finish and a few more checks run.
    for (let step = 0; step < 5; step++) await checkAfter(h, 1, [b, c].filter((entry) => entry.node.engine.state.kind !== "writing"));
    const [winner, loser] = b.node.engine.state.kind === "writing" ? [b, c] : [c, b];
    expect(winner.node.engine.state.kind).toBe("writing");
    expect(loser.node.engine.state.kind).toBe("following");
    expect(winner.acquired).toHaveLength(1);
    expect(loser.acquired).toEqual([]);
    // Both saw the lapsed lease at the same check and tried; the loser's refusal is LEASE_HELD.
    expect(winner.attempts).toEqual(["ok"]);
    expect(loser.attempts).toEqual(["LEASE_HELD"]);
    expect(b.errors).toEqual([]);
    expect(c.errors).toEqual([]);
    expect(winner.node.engine.manifestCurrent.epoch).toBe(2);
    expect(loser.node.engine.manifestCurrent.writer?.nodeId).toBe(winner.node.name);

    // The winner stops renewing too (no drivers): the loser, still watching, takes over.
    const winnerExpiry = winner.node.engine.manifestCurrent.leaseExpiresAt;
    await checkAfter(h, winnerExpiry + SKEW - h.clock.nowMs(), [loser]);
    expect(loser.node.engine.state.kind).toBe("following");
    await checkAfter(h, 1, [loser]);
    await eventually(() => loser.acquired.length === 1);
    expect(loser.node.engine.state).toMatchObject({ kind: "writing", epoch: 3 });
    expect(loser.attempts).toEqual(["LEASE_HELD", "ok"]);
    await expect(winner.node.engine.commit(insertUnit(winner.node.engine, h.newId(), {}))).rejects.toSatisfy(code("FENCED"));
    expect(loser.errors).toEqual([]);
  });
});

describe("lease watcher (memory bucket)", () => {
  const { setup, cleanup } = replicaHarnessPerTest(memoryBucket);

  it("takes a relinquished lease at the next check, without waiting for any expiry", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    const b = watch(await h.node("b", { leaseTtlMs: TTL }), h.clock, cleanup);
    await checkAfter(h, 1, [b]);
    expect(b.node.engine.state.kind).toBe("following");
    const expiresAt = a.engine.manifestCurrent.leaseExpiresAt;
    await a.engine.relinquish();
    await checkAfter(h, 1, [b]);
    await eventually(() => b.acquired.length === 1);
    expect(h.clock.nowMs()).toBeLessThan(expiresAt);
    expect(b.node.engine.state.kind).toBe("writing");
  });

  it("a node restarted under its old id takes back the lease its previous run left, before it expires", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    await commitMany(a, h, 1);
    const expiresAt = a.engine.manifestCurrent.leaseExpiresAt;
    await h.crash(a);
    const again = watch(await h.node("a", { leaseTtlMs: TTL }), h.clock, cleanup);
    await checkAfter(h, 1, [again]);
    await eventually(() => again.acquired.length === 1);
    expect(h.clock.nowMs()).toBeLessThan(expiresAt);
    expect(again.node.engine.state).toMatchObject({ kind: "writing", epoch: 2 });
  });

  it("a writer whose own engine is poisoned (its lease names itself) re-acquires at the next check, without waiting out the lease", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    const watched = watch(a, h.clock, cleanup);
    const readsBefore = watched.manifestReads();
    await checkAfter(h, 1, []); // the watcher skips checks while its engine writes
    expect(watched.manifestReads()).toBe(readsBefore);
    // A flush whose outcome is unknown: the create lands, its answer and the read-back are lost.
    a.store.inject({ operations: ["create"], once: true, effect: "lose-response" });
    a.store.inject({ operations: ["get"], once: true, effect: "transient" });
    const id = h.newId();
    await expect(a.engine.commit(insertUnit(a.engine, id, { unknown: true }))).rejects.toSatisfy(code("ENGINE_POISONED"));
    expect(a.engine.state.kind).toBe("poisoned");
    const expiresAt = a.engine.manifestCurrent.leaseExpiresAt;
    await checkAfter(h, 1, [watched]);
    await eventually(() => watched.acquired.length === 1);
    expect(h.clock.nowMs()).toBeLessThan(expiresAt);
    expect(a.engine.state).toMatchObject({ kind: "writing", epoch: 2 });
    expect(a.local.get(id, a.engine.readTs)).not.toBeNull(); // the unknown write had landed
    expect(watched.errors).toEqual([]);
    await a.engine.commit(insertUnit(a.engine, h.newId(), {}));
  });

  it("a standby does not take a lease the writer keeps renewing", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    const b = watch(await h.node("b", { leaseTtlMs: TTL }), h.clock, cleanup);
    const firstExpiry = a.engine.manifestCurrent.leaseExpiresAt;
    for (let beat = 0; beat < 6; beat++) {
      await checkAfter(h, TTL / 2, [b]);
      await a.engine.heartbeat();
    }
    expect(h.clock.nowMs()).toBeGreaterThan(firstExpiry + SKEW); // without the heartbeats it would have lapsed
    expect(b.node.engine.state.kind).toBe("following");
    expect(b.errors).toEqual([]);
    await a.engine.commit(insertUnit(a.engine, h.newId(), {}));
  });

  it("reports errors other than LEASE_HELD and keeps watching; acquires once the bucket answers again", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    const b = watch(await h.node("b", { leaseTtlMs: TTL }), h.clock, cleanup);
    b.node.store.inject({ operations: ["get"], keyPattern: /manifest$/, effect: "unreachable" });
    const past = a.engine.manifestCurrent.leaseExpiresAt + SKEW + 1 - h.clock.nowMs();
    await checkAfter(h, past, [b]);
    await checkAfter(h, 1, [b]);
    expect(b.errors.length).toBeGreaterThanOrEqual(2);
    expect(b.errors.every((error) => hasErrorCode(error, "STORE_UNREACHABLE"))).toBe(true);
    expect(b.node.engine.state.kind).toBe("following");
    b.node.store.clear();
    await checkAfter(h, 1, [b]);
    await eventually(() => b.acquired.length === 1);
    expect(b.node.engine.state.kind).toBe("writing");
  });

  it("stop() ends the watch: a check in flight does not acquire, and no more checks run", async () => {
    const h = await setup();
    const a = await h.writer("a", { leaseTtlMs: TTL });
    const b = watch(await h.node("b", { leaseTtlMs: TTL }), h.clock, cleanup);
    const gate = new Gate();
    b.node.store.inject({ operations: ["get"], keyPattern: /manifest$/, once: true, effect: { until: gate.promise } });
    h.clock.advance(a.engine.manifestCurrent.leaseExpiresAt + SKEW + 1 - h.clock.nowMs());
    await eventually(() => b.node.store.held === 1);
    let stopped = false;
    const stopping = b.watcher.stop().then(() => (stopped = true));
    await turns();
    expect(stopped).toBe(false); // it waits for the check in flight
    gate.open();
    await stopping;
    const writes = b.manifestWrites();
    const reads = b.manifestReads();
    h.clock.advance(10);
    await turns();
    expect(b.node.engine.state.kind).toBe("following");
    expect(b.manifestWrites()).toBe(writes);
    expect(b.manifestReads()).toBe(reads);
    b.watcher.start(); // a stopped watcher stays stopped
    h.clock.advance(10);
    await turns();
    expect(b.manifestReads()).toBe(reads);
    expect(b.acquired).toEqual([]);
    expect(b.attempts).toEqual([]);
  });
});
