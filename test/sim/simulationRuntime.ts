/**
 * What the seeded simulations share to run: the engine tuning that packs many leases,
 * snapshots and GC passes into seconds of virtual time, a node's faulty view of the
 * bucket, the supervisor that restarts a node whose start-up failed, and the driver that
 * moves the one ManualClock every actor waits on.
 */
import type { ManualClock } from "../../src/base/clock.js";
import { randomInt, type SeededRandom } from "../../src/base/random.js";
import type { ObjectStore } from "../../src/objectstore/ObjectStore.js";
import type { ShardEngineTuning } from "../../src/shard/engineOptions.js";
import { FaultyObjectStore } from "../support/FaultyObjectStore.js";

export const SIMULATION_TUNING: Partial<ShardEngineTuning> = {
  leaseTtlMs: 2_000,
  heartbeatIntervalMs: 500,
  clockSkewMsMax: 400,
  snapshotEverySegments: 6,
  snapshotEveryMs: 1_500,
  maintenanceIntervalMs: 300,
  gcIntervalMs: 800,
  gcSweepEveryRuns: 3,
  fetchConcurrency: 4,
  restoreLagSegments: 40,
  // The simulation's virtual time does not follow work on libuv's thread pool.
  snapshotDeflate: "inline",
};

/** Virtual time after the run's end by which every actor must have stopped. */
export const SHUTDOWN_GRACE_MS = 120_000;

/**
 * A node's view of the bucket: always some latency; with `faults`, occasional slow
 * requests (they widen the windows between a takeover's steps), transient errors and
 * lost responses of writes that landed.
 */
export function nodeStore(bucket: ObjectStore, random: SeededRandom, clock: ManualClock, faults: boolean): FaultyObjectStore {
  const store = new FaultyObjectStore(bucket, random, clock);
  store.inject({ effect: { delayMs: 5, jitterMs: 30 } });
  if (faults) {
    store.inject({ rate: 0.05, effect: { delayMs: 50, jitterMs: 500 } });
    store.inject({ rate: 0.01, effect: "transient" });
    store.inject({ operations: ["create", "casPut"], rate: 0.02, effect: "lose-response" });
  }
  return store;
}

/**
 * Now and then, before a writer's next batch, a stop-the-world pause longer than the
 * lease: its bucket calls, including the commits it is about to issue, stall and land
 * late. Or a pause right after a create landed: the write is in the bucket, its
 * verification runs only after the lease lapsed and a successor took over, snapshotted
 * and collected.
 */
export function maybeStallWriter(store: FaultyObjectStore, random: SeededRandom, clock: ManualClock): void {
  if (random.float() < 0.02) store.pauseUntil(clock.nowMs() + 2_000 + randomInt(random, 6_000));
  if (random.float() < 0.02) store.inject({ operations: ["create"], once: true, effect: { pauseAfterMs: 2_000, jitterMs: 4_000 } });
}

/** Opens with `open`, starting again after a failure as a supervisor would restart the node. */
export async function openWithRestarts<T>(open: () => Promise<T>, clock: ManualClock): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await open();
    } catch (error) {
      if (attempt >= 20) throw error;
      await clock.sleep(100);
    }
  }
}

/**
 * Runs all runnable work, then jumps virtual time to the next sleeper, until `work` ends.
 * Work that is still going long after `deadlineMs` of virtual time is a livelock (actors
 * waiting on something that never comes while drivers keep time moving): it fails fast.
 */
export async function driveUntilSettled(work: Promise<void>, clock: ManualClock, deadlineMs: number): Promise<void> {
  let finished = false;
  let failure: unknown = null;
  work.then(
    () => (finished = true),
    (error: unknown) => {
      failure = error;
      finished = true;
    },
  );
  while (!finished) {
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    if (finished) break;
    if (clock.nowMs() > deadlineMs) throw new Error("simulation did not finish: some actor never returned (livelock)");
    if (!clock.advanceToNextSleeper()) throw new Error("simulation deadlocked: nothing runnable and nobody sleeping");
  }
  if (failure !== null) throw failure;
}
