/**
 * Scenario: idle leases (issue 27 item 6). A writer whose shard takes no commit for
 * idleAfterMs renews a stretched lease (idleLeaseTtlMs) at the idle cadence, a fraction
 * of the busy cadence's requests; the first commit after that takes the short lease back
 * at once, beside its own flush, so a busy shard fails over as fast as ever. A standby
 * waits out exactly the lease the manifest names: the stretched one for a writer that
 * died idle, the short one for a writer that died busy. A shortened lease also shortens
 * the writer's own idea of it (verify "lease" never trusts more than the manifest says).
 * Bad idle tuning is refused. Time is a ManualClock moved by the test.
 */
import { afterEach, describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import { resolveTuning, SHARD_ENGINE_DEFAULTS } from "../../src/shard/engineOptions.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { insertUnit, ShardHarness, type HarnessNode } from "../support/shardHarness.js";

let harness: ShardHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const TUNING = { leaseTtlMs: 10_000, heartbeatIntervalMs: 1_000, idleAfterMs: 5_000, idleLeaseTtlMs: 60_000, idleHeartbeatIntervalMs: 20_000 };

async function leaseLeftMs(h: ShardHarness): Promise<number> {
  const manifest = await new ShardManifest(h.bucket, 0, h.deploymentId, new SeededRandom(5)).load();
  return manifest.leaseExpiresAt - h.clock.nowMs();
}

/** Lets timers and promise chains run a few turns (drivers woken by the manual clock). */
async function settle() {
  for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
}

/** Moves the clock by `ms` in steps of `stepMs`, letting the drivers run at each. */
async function advance(h: ShardHarness, ms: number, stepMs = 250) {
  for (let moved = 0; moved < ms; moved += stepMs) {
    h.clock.advance(stepMs);
    await settle();
  }
}

/** Manifest writes `node` made while `during` ran: its renewals (nothing else writes the manifest here). */
async function renewalsDuring(node: HarnessNode, during: () => Promise<void>): Promise<number> {
  const before = node.store.calls.casPut;
  await during();
  return node.store.calls.casPut - before;
}

describe("idle leases", () => {
  it("stretch after idleAfterMs at a sixth of the cadence, and shrink back with the next commit before its idle cadence is up", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const a = await h.writer("a", TUNING);
    await a.engine.commit(insertUnit(a.engine, h.newId(), { n: 1 }));

    // Busy: renewed every second for the short lease.
    const busy = await renewalsDuring(a, () => advance(h, 4_000));
    expect(busy).toBeGreaterThanOrEqual(3);
    expect(await leaseLeftMs(h)).toBeLessThanOrEqual(10_000);

    // Idle from 5 s after the last commit on: the next renewal stretches the lease.
    await advance(h, 3_000);
    expect(await leaseLeftMs(h)).toBeGreaterThan(10_000);
    const idle = await renewalsDuring(a, () => advance(h, 60_000, 1_000));
    expect(idle).toBeLessThanOrEqual(4);
    expect(idle).toBeGreaterThanOrEqual(2);
    expect(await leaseLeftMs(h)).toBeGreaterThan(10_000);

    // A commit: the short lease is back now, long before the idle cadence's next renewal.
    await a.engine.commit(insertUnit(a.engine, h.newId(), { n: 2 }));
    await settle();
    expect(await leaseLeftMs(h)).toBeLessThanOrEqual(10_000);
    // And busy renewals go on at the short cadence.
    expect(await renewalsDuring(a, () => advance(h, 3_000))).toBeGreaterThanOrEqual(2);
    expect(await leaseLeftMs(h)).toBeLessThanOrEqual(10_000);
  });

  it("a standby waits out the stretched lease of a writer that died idle, and only the short one of a writer that died busy", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const a = await h.writer("a", TUNING);
    await a.engine.commit(insertUnit(a.engine, h.newId(), { n: 1 }));
    await advance(h, 8_000);
    expect(await leaseLeftMs(h)).toBeGreaterThan(10_000);
    // a dies idle: nothing of it reaches the bucket any more (a paused process, until the end of the test).
    const end = h.clock.nowMs() + 10 * 60_000;
    a.store.pauseUntil(end);
    const standby = await h.node("standby", { leaseTtlMs: 10_000 });
    h.clock.advance(12_000);
    const early = await standby.engine.acquire().then(
      () => "acquired",
      (error: unknown) => (hasErrorCode(error, "LEASE_HELD") ? "LEASE_HELD" : String(error)),
    );
    expect(early).toBe("LEASE_HELD");
    h.clock.advance(60_000);
    await standby.engine.acquire();
    expect(standby.engine.state.kind).toBe("writing");

    // The standby, busy, dies: the next one waits the short lease only.
    await standby.engine.commit(insertUnit(standby.engine, h.newId(), { n: 2 }));
    standby.store.pauseUntil(end);
    const third = await h.node("third", { leaseTtlMs: 10_000 });
    h.clock.advance(10_000 + SHARD_ENGINE_DEFAULTS.clockSkewMsMax);
    await third.engine.acquire();
    expect(third.engine.state.kind).toBe("writing");
    // The paused ones wake to find themselves fenced.
    h.clock.advance(end - h.clock.nowMs());
    await settle();
  });

  it("a shortened lease shortens the writer's own reckoning: renewals failing after it, the writer steps down before the short lease lapses, not the stretched one", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    // Misses alone never step it down here: only the lease's own end can.
    const a = await h.writer("a", { ...TUNING, heartbeatMissesMax: 1_000 });
    await a.engine.commit(insertUnit(a.engine, h.newId(), { n: 1 }));
    await advance(h, 8_000);
    expect(await leaseLeftMs(h)).toBeGreaterThan(10_000);
    await a.engine.commit(insertUnit(a.engine, h.newId(), { n: 2 }));
    await settle();
    expect(await leaseLeftMs(h)).toBeLessThanOrEqual(10_000);
    // From now on every renewal fails.
    a.store.inject({ operations: ["casPut"], keyPattern: /\/manifest$/, effect: "transient" });
    await advance(h, 10_000);
    const stepDown = a.events.find((event) => event.type === "poisoned");
    expect(stepDown).toMatchObject({ type: "poisoned", stepDown: { reason: "lease-lapsed" } });
  });

  it("a shortening renewal that fails, then one that succeeds: the writer's reckoning follows the manifest's short lease", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const a = await h.writer("a", { ...TUNING, heartbeatMissesMax: 1_000 });
    await a.engine.commit(insertUnit(a.engine, h.newId(), { n: 1 }));
    await advance(h, 8_000);
    expect(await leaseLeftMs(h)).toBeGreaterThan(10_000);
    // The renewal the commit sets off fails; the next one, a second later, lands.
    a.store.inject({ operations: ["casPut"], keyPattern: /\/manifest$/, effect: "transient", once: true });
    await a.engine.commit(insertUnit(a.engine, h.newId(), { n: 2 }));
    await advance(h, 1_500);
    expect(await leaseLeftMs(h)).toBeLessThanOrEqual(10_000);
    a.store.inject({ operations: ["casPut"], keyPattern: /\/manifest$/, effect: "transient" });
    await advance(h, 11_000);
    expect(a.events.find((event) => event.type === "poisoned")).toMatchObject({ stepDown: { reason: "lease-lapsed" } });
  });

  it("a stretching renewal that fails is tried again at the busy cadence, so one failure never costs the lease", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const a = await h.writer("a", TUNING);
    await a.engine.commit(insertUnit(a.engine, h.newId(), { n: 1 }));
    // The first renewal after idleAfterMs (the one that would stretch) fails.
    await advance(h, 4_500);
    a.store.inject({ operations: ["casPut"], keyPattern: /\/manifest$/, effect: "transient", once: true });
    await advance(h, 3_000);
    expect(a.events.some((event) => event.type === "driver-error")).toBe(true);
    // Tried again a second later, not 20 s later: the lease stretched and the writer writes on.
    expect(await leaseLeftMs(h)).toBeGreaterThan(10_000);
    await advance(h, 20_000, 1_000);
    expect(a.engine.state.kind).toBe("writing");
  });

  it("an idle shard skips GC passes that can find nothing new, and runs them again once it writes", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const a = await h.writer("a", { ...TUNING, maintenanceIntervalMs: 1_000, gcIntervalMs: 10_000 });
    await a.engine.commit(insertUnit(a.engine, h.newId(), { n: 1 }));
    const gcPasses = () => a.events.filter((event) => event.type === "gc").length;
    // Busy, then idle: passes run until one finds nothing while the shard is idle.
    await advance(h, 30_000, 500);
    const settled = gcPasses();
    expect(settled).toBeGreaterThanOrEqual(1);
    const lists = a.store.calls.list;
    await advance(h, 120_000, 1_000);
    expect(gcPasses()).toBe(settled);
    expect(a.store.calls.list).toBe(lists);
    // A new segment: the next pass runs.
    await a.engine.commit(insertUnit(a.engine, h.newId(), { n: 2 }));
    await advance(h, 12_000, 500);
    expect(gcPasses()).toBeGreaterThan(settled);
  });

  it("refuses idle tuning that would shorten the lease or let it lapse between idle heartbeats, and raises the idle defaults with a longer busy lease", () => {
    const refused = (overrides: object) => {
      try {
        resolveTuning(overrides);
        return null;
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(refused({ idleLeaseTtlMs: 5_000 })).toMatch(/idleLeaseTtlMs must be at least leaseTtlMs/);
    expect(refused({ idleHeartbeatIntervalMs: 60_000 })).toMatch(/idleHeartbeatIntervalMs must be at least heartbeatIntervalMs and below idleLeaseTtlMs/);
    expect(refused({ idleHeartbeatIntervalMs: 1_000 })).toMatch(/idleHeartbeatIntervalMs/);
    expect(refused({ idleAfterMs: 0 })).toMatch(/idleAfterMs/);
    const longLease = resolveTuning({ leaseTtlMs: 120_000, heartbeatIntervalMs: 30_000 });
    expect(longLease.idleLeaseTtlMs).toBe(120_000);
    expect(longLease.idleHeartbeatIntervalMs).toBe(30_000);
    // Equal leases turn stretching off (the idle cadence follows the idle lease down).
    expect(refused({ idleLeaseTtlMs: 10_000 })).toBeNull();
  });
});
