/**
 * Scenario: a writer that cannot reach the bucket stops acknowledging and steps down
 * (DESIGN.md §9, issue 24 item 5). Heartbeats run under heartbeatDeadlineMs; a heartbeat
 * that fails or does not answer in time is a miss, a success resets the count, and at
 * heartbeatMissesMax misses — or at once when its lease may have lapsed while renewals
 * fail — the writer steps down: units in flight fail as of unknown outcome
 * (ENGINE_POISONED), queued and later ones as never sent (NOT_WRITER), nothing is
 * acknowledged afterwards, no heartbeat is tried any more, and a standby takes over after
 * the lease with every acknowledged write in the log. A renewal that answers after its
 * deadline renews nothing here. Bad heartbeat tuning is refused with a clear message.
 * Time is a ManualClock moved by the test; the store's faults hold or fail bucket calls.
 */
import { afterEach, describe, expect, it } from "vitest";
import { hasErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import type { CommitResult } from "../../src/shard/WriteUnit.js";
import { resolveTuning } from "../../src/shard/engineOptions.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { eventually, Gate } from "../support/Gate.js";
import { type HarnessNode, insertUnit, ShardHarness } from "../support/shardHarness.js";

const code = (expected: string) => (error: unknown) => hasErrorCode(error, expected as never);

let harness: ShardHarness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function manifestOf(h: ShardHarness) {
  return new ShardManifest(h.bucket, 0, h.deploymentId, new SeededRandom(5)).load();
}

/** Lets timers and promise chains run a few turns (drivers woken by the manual clock). */
async function settle() {
  for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
}

/** How a commit ended: "acknowledged", or its error's code (settled at once, so never unhandled). */
function outcomeOf(commit: Promise<CommitResult>): Promise<string> {
  return commit.then(
    () => "acknowledged",
    (error: unknown) => String((error as { code?: unknown }).code),
  );
}

function failManifestWrites(node: HarnessNode): void {
  node.store.inject({ operations: ["casPut"], keyPattern: /\/manifest$/, effect: "transient" });
}

function stepDowns(node: HarnessNode) {
  return node.events.flatMap((event) => (event.type === "poisoned" && event.stepDown ? [event.stepDown] : []));
}

describe("heartbeat deadline and step-down", () => {
  it("a bucket that stops answering: the writer stops acknowledging before its lease can lapse, steps down after heartbeatMissesMax misses, and a standby takes over with every acknowledged write", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const a = await h.writer("a", { leaseTtlMs: 10_000, heartbeatIntervalMs: 1_000, heartbeatDeadlineMs: 500, heartbeatMissesMax: 3 });
    const standby = await h.node("standby", { leaseTtlMs: 10_000 });
    const acknowledged: DocumentId[] = [];
    for (let index = 0; index < 5; index++) {
      const id = h.newId();
      await a.engine.commit(insertUnit(a.engine, id, { index }));
      acknowledged.push(id);
    }
    const { leaseExpiresAt } = await manifestOf(h);

    // Every call of a's now hangs: a commit's create (in flight), then one queued behind it.
    const gate = new Gate();
    a.store.inject({ effect: { until: gate.promise } });
    const sent = outcomeOf(a.engine.commit(insertUnit(a.engine, h.newId(), { late: 1 })));
    await eventually(() => a.store.held === 1);
    const queued = outcomeOf(a.engine.commit(insertUnit(a.engine, h.newId(), { late: 2 })));

    // Heartbeats every second, each given 500 ms: three misses, well inside the lease.
    for (let step = 0; step < 40 && a.engine.state.kind === "writing"; step++) {
      h.clock.advance(250);
      await settle();
    }
    expect(a.engine.state.kind).toBe("poisoned");
    expect(h.clock.nowMs()).toBeLessThan(leaseExpiresAt - a.engine.tuning.clockSkewMsMax);
    expect(stepDowns(a)).toEqual([{ reason: "heartbeat-misses", misses: 3 }]);
    const misses = a.events.filter((event) => event.type === "driver-error" && event.driver === "heartbeat");
    expect(misses.map((event) => (event as { error: { code: string } }).error.code)).toEqual(["TIMEOUT", "TIMEOUT", "TIMEOUT"]);
    expect(await sent).toBe("ENGINE_POISONED"); // its create may still land: unknown
    expect(await queued).toBe("NOT_WRITER"); // never sent
    await expect(a.engine.commit(insertUnit(a.engine, h.newId(), {}))).rejects.toSatisfy(code("NOT_WRITER"));

    // Stepped down, it tries nothing more on its own (no heartbeat spinning on a dead bucket).
    const callsAfter = { ...a.store.calls };
    h.clock.advance(5_000);
    await settle();
    expect(a.store.calls).toEqual(callsAfter);

    // Once the lease lapsed, the standby takes over; a's calls then land late.
    h.clock.advance(leaseExpiresAt + 1 - h.clock.nowMs());
    await standby.engine.acquire();
    gate.open();
    await eventually(() => a.engine.state.kind === "fenced");
    for (const id of acknowledged) expect(standby.local.get(id, standby.engine.readTs)).not.toBeNull();
    expect(await sent).toBe("ENGINE_POISONED");
    await standby.engine.commit(insertUnit(standby.engine, h.newId(), {}));
    expect(a.events.filter((event) => event.type === "flushed")).toHaveLength(acknowledged.length);
  });

  it("the bucket refuses manifest writes: misses are counted, a success resets the count, and the third miss in a row steps down", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    // No heartbeat driver: the test beats by hand, and the clock stands still (the lease holds).
    const a = await h.writer("a", { heartbeatMissesMax: 3 });
    failManifestWrites(a);
    await expect(a.engine.heartbeat()).rejects.toSatisfy(code("STORE_TRANSIENT"));
    await expect(a.engine.heartbeat()).rejects.toSatisfy(code("STORE_TRANSIENT"));
    // Two misses under a live lease: still the writer, and commits (segment creates) still go through.
    expect(a.engine.state.kind).toBe("writing");
    await a.engine.commit(insertUnit(a.engine, h.newId(), {}));

    a.store.clear();
    await a.engine.heartbeat();
    failManifestWrites(a);
    await expect(a.engine.heartbeat()).rejects.toSatisfy(code("STORE_TRANSIENT"));
    await expect(a.engine.heartbeat()).rejects.toSatisfy(code("STORE_TRANSIENT"));
    expect(a.engine.state.kind).toBe("writing");
    await a.engine.commit(insertUnit(a.engine, h.newId(), {}));

    await expect(a.engine.heartbeat()).rejects.toSatisfy(code("STORE_TRANSIENT"));
    expect(a.engine.state.kind).toBe("poisoned");
    expect(stepDowns(a)).toEqual([{ reason: "heartbeat-misses", misses: 3 }]);
    await expect(a.engine.commit(insertUnit(a.engine, h.newId(), {}))).rejects.toSatisfy(code("NOT_WRITER"));

    // Recoverable: once the bucket takes writes again the node re-acquires its own lease.
    a.store.clear();
    await a.engine.acquire();
    await a.engine.commit(insertUnit(a.engine, h.newId(), {}));
  });

  it("an engine opened with stepDownOnFailedRenewals false (a reshard's lease holder) counts misses but keeps the lease until a heartbeat says otherwise", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const a = await h.writer("a", { leaseTtlMs: 10_000, heartbeatMissesMax: 2 }, { stepDownOnFailedRenewals: false });
    failManifestWrites(a);
    for (let miss = 0; miss < 3; miss++) await expect(a.engine.heartbeat()).rejects.toSatisfy(code("STORE_TRANSIENT"));
    h.clock.advance(20_000); // past the lease: still no step-down
    await settle();
    expect(a.engine.state.kind).toBe("writing");
    a.store.clear();
    await a.engine.heartbeat(); // nobody took the shard: it still owns it
    expect(stepDowns(a)).toEqual([]);
  });

  it.each(["always", "lease"] as const)(
    "verify %s: a commit in flight while heartbeats fail is not acknowledged once the lease's validity passed",
    async (verify) => {
      const h = (harness = await ShardHarness.create(memoryBucket));
      // Many misses allowed: only the lease's validity decides here.
      const a = await h.writer("a", { verify, leaseTtlMs: 10_000, clockSkewMsMax: 1_000, heartbeatMissesMax: 10 });
      await a.engine.commit(insertUnit(a.engine, h.newId(), {}));
      failManifestWrites(a);
      await expect(a.engine.heartbeat()).rejects.toSatisfy(code("STORE_TRANSIENT"));

      const gate = new Gate();
      a.store.inject({ operations: ["create"], effect: { until: gate.promise } });
      const sent = outcomeOf(a.engine.commit(insertUnit(a.engine, h.newId(), { late: 1 })));
      await eventually(() => a.store.held === 1);
      const queued = outcomeOf(a.engine.commit(insertUnit(a.engine, h.newId(), { late: 2 })));
      // From here less than clockSkewMsMax of the lease is left.
      h.clock.advance(9_000);
      await settle();
      expect(a.engine.state.kind).toBe("poisoned");
      expect(stepDowns(a)).toEqual([{ reason: "lease-lapsed", misses: 1 }]);

      // The create lands and would verify as durable: too late to acknowledge.
      gate.open();
      expect(await sent).toBe("ENGINE_POISONED");
      expect(await queued).toBe("NOT_WRITER");
      await settle();
      expect(a.events.filter((event) => event.type === "flushed")).toHaveLength(1); // the first commit only
    },
  );

  it("a renewal that answers after its deadline renews nothing: the writer steps down when the lease it last renewed in time may lapse", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const a = await h.writer("a", { leaseTtlMs: 10_000, clockSkewMsMax: 1_000, heartbeatDeadlineMs: 1_000 });
    const acquiredLease = (await manifestOf(h)).leaseExpiresAt;
    h.clock.advance(2_000);
    const gate = new Gate();
    a.store.inject({ operations: ["casPut"], keyPattern: /\/manifest$/, once: true, effect: { until: gate.promise } });
    const beat = a.engine.heartbeat().then(
      () => "renewed",
      (error: unknown) => String((error as { code?: unknown }).code),
    );
    await eventually(() => a.store.held === 1);
    h.clock.advance(1_000);
    expect(await beat).toBe("TIMEOUT");
    expect(a.engine.state.kind).toBe("writing");

    // The renewal lands after its deadline: the bucket's lease moved, this writer's did not.
    gate.open();
    await eventually(() => a.store.held === 0);
    await settle();
    expect((await manifestOf(h)).leaseExpiresAt).toBe(acquiredLease + 2_000);
    h.clock.advance(acquiredLease - 1_000 - h.clock.nowMs() - 1);
    await settle();
    expect(a.engine.state.kind).toBe("writing");
    h.clock.advance(1);
    await settle();
    expect(a.engine.state.kind).toBe("poisoned");
    expect(stepDowns(a)).toEqual([{ reason: "lease-lapsed", misses: 1 }]);
  });

  it("refuses heartbeat tuning that cannot work, with a message naming the rule", () => {
    const refusal = (tuning: object) => {
      try {
        resolveTuning(tuning);
      } catch (error) {
        return { code: (error as { code: string }).code, message: (error as Error).message };
      }
      return null;
    };
    expect(refusal({ heartbeatDeadlineMs: 10_000 })).toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringContaining("heartbeatDeadlineMs must be below leaseTtlMs"),
    });
    expect(refusal({ leaseTtlMs: 2_000, heartbeatIntervalMs: 500, heartbeatDeadlineMs: 2_500 })).toMatchObject({
      message: expect.stringContaining("heartbeatDeadlineMs must be below leaseTtlMs"),
    });
    for (const bad of [{ heartbeatDeadlineMs: 0 }, { heartbeatDeadlineMs: 1.5 }, { heartbeatMissesMax: 0 }, { heartbeatMissesMax: 2.5 }, { heartbeatMissesMax: 1_001 }]) {
      const refused = refusal(bad);
      expect(refused?.code).toBe("INVALID_ARGUMENT");
      expect(refused?.message).toContain(Object.keys(bad)[0]);
    }
    // The deadline follows the cadence unless set; three misses by default.
    expect(resolveTuning({})).toMatchObject({ heartbeatDeadlineMs: 3_000, heartbeatMissesMax: 3 });
    expect(resolveTuning({ leaseTtlMs: 2_000, heartbeatIntervalMs: 200 })).toMatchObject({ heartbeatDeadlineMs: 200 });
    expect(resolveTuning({ heartbeatIntervalMs: 2_000, heartbeatDeadlineMs: 500, heartbeatMissesMax: 5 })).toMatchObject({
      heartbeatDeadlineMs: 500,
      heartbeatMissesMax: 5,
    });
  });
});
