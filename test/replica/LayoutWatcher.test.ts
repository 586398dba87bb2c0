/**
 * Scenario: a LayoutWatcher over a real (in-memory) bucket's `globals`. It says nothing
 * while the generation it watches is current, also while a reshard holds the lock; it
 * reports the layout retired once `globals` name another generation — on its own cadence,
 * or at once when asked to check (with a cadence far too long to matter) — exactly once,
 * with the reason; and a bucket whose globals are gone retires it too.
 */
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { globalsObject, openGlobals } from "../../src/manifest/Globals.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { LayoutWatcher, type LayoutRetired } from "../../src/replica/LayoutWatcher.js";

const random = new SeededRandom(7);
const watchers: LayoutWatcher[] = [];
afterEach(async () => {
  for (const watcher of watchers.splice(0)) await watcher.stop();
});

async function deployment() {
  const store = new MemoryObjectStore();
  await openGlobals(store, { clock: systemClock, random, numShards: 1 });
  const switchTo = (generation: number, numShards: number) =>
    globalsObject(store, random).update((current) => {
      const { version: _version, nonce: _nonce, ...fields } = current!;
      return { ...fields, generation, numShards, highestGeneration: Math.max(fields.highestGeneration, generation) };
    });
  return { store, switchTo };
}

function watch(store: MemoryObjectStore, intervalMs: number, duringReshardMs = intervalMs) {
  const retired: LayoutRetired[] = [];
  const errors: unknown[] = [];
  const watcher = new LayoutWatcher({ store, random, clock: systemClock, generation: 0, intervalMs, duringReshardMs, onRetired: (why) => retired.push(why), onError: (error) => errors.push(error) });
  watchers.push(watcher);
  watcher.start();
  return { watcher, retired, errors };
}

async function eventually(predicate: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`condition never became true: ${predicate.toString()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("LayoutWatcher", () => {
  it("reports a switched generation once, with the reason, on its cadence", async () => {
    const { store, switchTo } = await deployment();
    const { watcher, retired, errors } = watch(store, 10);
    // Several cadences pass on the current generation: nothing to report.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(retired).toEqual([]);
    await switchTo(1, 3);
    await eventually(() => retired.length > 0);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(retired).toHaveLength(1);
    expect(retired[0]).toMatchObject({ openedGeneration: 0, currentGeneration: 1, numShards: 3 });
    expect(retired[0]!.reason).toMatch(/resharded to 3 shard\(s\) \(layout generation 0 → 1\)/);
    expect(watcher.retiredLayout).toEqual(retired[0]);
    expect(errors).toEqual([]);
  });

  it("checks at once when asked, whatever its cadence", async () => {
    const { store, switchTo } = await deployment();
    const { watcher, retired } = watch(store, 3_600_000);
    await switchTo(2, 2);
    watcher.check();
    await eventually(() => retired.length > 0);
    expect(retired[0]).toMatchObject({ currentGeneration: 2 });
  });

  it("retires the layout when the globals are gone", async () => {
    const { store } = await deployment();
    const { watcher, retired } = watch(store, 3_600_000);
    await store.delete("globals");
    watcher.check();
    await eventually(() => retired.length > 0);
    expect(retired[0]).toMatchObject({ currentGeneration: null });
  });

  it("says nothing while a reshard holds the lock but has not switched", async () => {
    const { store } = await deployment();
    await globalsObject(store, random).update((current) => {
      const { version: _version, nonce: _nonce, ...fields } = current!;
      return { ...fields, highestGeneration: 1, reshard: { owner: "reshard-x", expiresAt: Date.now() + 60_000, generation: 1, toShards: 2, startedAt: Date.now() } };
    });
    const { watcher, retired, errors } = watch(store, 3_600_000, 10);
    watcher.check();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(retired).toEqual([]);
    expect(errors).toEqual([]);
  });
});
