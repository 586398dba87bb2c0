/**
 * Scenario: a shard engine refuses bad options before it touches the bucket (a fractional
 * or NaN lease once wrote a manifest no other node could parse), every CAS object is
 * validated before it is written, the public surface fails with typed errors instead of
 * RangeErrors and TypeErrors, and the retention driver prunes history and receipts older
 * than their windows.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { errorKindOf, hasErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { LocalStore } from "../../src/local/index.js";
import { openGlobals } from "../../src/manifest/Globals.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";
import { HybridClock } from "../../src/shard/HybridClock.js";
import { ShardEngine } from "../../src/shard/ShardEngine.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import type { ShardEngineOptions } from "../../src/shard/engineOptions.js";
import { memoryBucket } from "../support/bucketFactories.js";
import { insertUnit, ShardHarness, TABLE } from "../support/shardHarness.js";

const code = (expected: string) => (error: unknown) => hasErrorCode(error, expected as never);

let harness: ShardHarness | undefined;
const directories: string[] = [];
afterEach(async () => {
  await harness?.close();
  harness = undefined;
  for (const directory of directories.splice(0)) rmSync(directory, { recursive: true, force: true });
});

async function bucketKeys(store: MemoryObjectStore): Promise<Map<string, string>> {
  const keys = new Map<string, string>();
  for await (const entry of store.list("")) keys.set(entry.key, entry.etag);
  return keys;
}

describe("shard engine options", () => {
  it("refuses bad tuning and identities with INVALID_ARGUMENT, before writing anything", async () => {
    const store = new MemoryObjectStore();
    const clock = new ManualClock();
    const random = new SeededRandom(1);
    const { deploymentId } = (await openGlobals(store, { clock, random, numShards: 1 })).value;
    const local = LocalStore.open({ path: ":memory:", shard: 0, deploymentId });
    const options: ShardEngineOptions = { store, deploymentId, shard: 0, local, nodeId: "node", clock, random, hybridClock: new HybridClock(clock) };
    const before = await bucketKeys(store);
    const badTunings: unknown[] = [
      { leaseTtlMs: 1.5 },
      { leaseTtlMs: Number.NaN },
      { leaseTtlMs: -1 },
      { leaseTtlMs: Number.POSITIVE_INFINITY },
      { heartbeatIntervalMs: 10_000 }, // not below the default lease of 10 s
      { leaseTtlMs: 2_000, clockSkewMsMax: 2_000, heartbeatIntervalMs: 500 },
      { verify: "sometimes" },
      { snapshotDeflate: "elsewhere" },
      { leaseTTLms: 5_000 }, // a typo is not silently ignored
      { fetchConcurrency: 0 },
      { flushUnitsMax: 2.5 },
      { tickWhenIdle: "yes" },
      { historyRetentionMs: -1 },
      "fast",
    ];
    for (const tuning of badTunings) {
      await expect(ShardEngine.open({ ...options, tuning: tuning as never }), JSON.stringify(tuning)).rejects.toSatisfy(
        code("INVALID_ARGUMENT"),
      );
    }
    const badIdentities: Partial<Record<keyof ShardEngineOptions, unknown>>[] = [
      { nodeId: "" },
      { nodeId: "has space" },
      { nodeId: 7 },
      { shard: -1 },
      { shard: 0.5 },
      { deploymentId: "not-hex" },
      { nodeUrl: "ftp://example.com" },
      { drivers: ["heartbeat", "gc"] },
    ];
    for (const identity of badIdentities) {
      await expect(ShardEngine.open({ ...options, ...identity } as never), JSON.stringify(identity)).rejects.toSatisfy(
        code("INVALID_ARGUMENT"),
      );
    }
    await expect(ShardEngine.open(null as never)).rejects.toSatisfy(code("INVALID_ARGUMENT"));
    expect(await bucketKeys(store)).toEqual(before);
    const engine = await ShardEngine.open({ ...options, tuning: { leaseTtlMs: 2_000, heartbeatIntervalMs: 500, clockSkewMsMax: 400 } });
    await engine.acquire();
    await engine.close();
    local.close();
  });

  it("never writes a manifest that would not parse back", async () => {
    const store = new MemoryObjectStore();
    const clock = new ManualClock();
    const random = new SeededRandom(2);
    const { deploymentId } = (await openGlobals(store, { clock, random, numShards: 1 })).value;
    const manifest = new ShardManifest(store, 0, deploymentId, random);
    await manifest.load();
    const before = await bucketKeys(store);
    await expect(manifest.acquire({ nodeId: "n", url: null }, Number.NaN, 1_000)).rejects.toSatisfy(code("INVALID_ARGUMENT"));
    await expect(manifest.acquire({ nodeId: "n", url: null }, clock.nowMs(), 0.5)).rejects.toSatisfy(code("INVALID_ARGUMENT"));
    expect(await bucketKeys(store)).toEqual(before);
    const other = new ShardManifest(store, 0, deploymentId, random);
    await expect(other.acquire({ nodeId: "m", url: null }, clock.nowMs(), 1_000)).resolves.toMatchObject({ epoch: 1 });
  });

  it("answers bad calls on the public surface with typed errors, not RangeError or TypeError", async () => {
    const directory = mkdtempSync(join(tmpdir(), "cairn-surface-"));
    directories.push(directory);
    const store = new MemoryObjectStore();
    const clock = new ManualClock();
    const sharded = await ShardedStore.open({ store, localDirectory: directory, nodeId: "n", numShards: 1, clock, random: new SeededRandom(3) });
    for (const shard of [1, -1, 0.5, Number.NaN]) expect(() => sharded.engine(shard)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    await sharded.acquireAll();
    const engine = sharded.engine(0);
    for (const unit of [undefined, null, "unit", { readTs: 0 }, { readTs: 0, documents: [], indexWrites: {} }]) {
      const error = await engine.commit(unit as never).catch((reason: unknown) => reason);
      expect(errorKindOf(error), String(error)).toBe("InvalidInput");
    }
    await sharded.close();
    await expect(
      ShardedStore.open({ store, localDirectory: directory, nodeId: "n", numShards: 1.5, clock }),
    ).rejects.toSatisfy(code("INVALID_ARGUMENT"));
    await expect(
      ShardedStore.open({ store, localDirectory: directory, nodeId: "n", clock, tuning: { leaseTtlMs: "long" as never } }),
    ).rejects.toSatisfy(code("INVALID_ARGUMENT"));
  });
});

describe("retention", () => {
  it("prunes local history and receipts older than their windows, never what the frontier reads", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const a = await h.writer("a", { historyRetentionMs: 60_000, receiptRetentionMs: 120_000 });
    const id = h.newId();
    const first = await a.engine.commit(insertUnit(a.engine, id, { v: 1 }, { clientId: "client", seq: 1 }));
    h.clock.advance(30_000);
    const second = await a.engine.commit({
      readTs: a.engine.readTs,
      documents: [{ tableNumber: TABLE, id, value: JSON.stringify({ v: 2 }), prevTs: first.ts }],
      indexWrites: [],
      receipt: { clientId: "client", seq: 2, result: '"ok"', route: null },
    });
    expect(a.local.get(id, first.ts)?.value).toBe(JSON.stringify({ v: 1 }));
    h.clock.advance(100_000); // now 130 s after the first commit
    await a.engine.runMaintenance();
    // The floor is now - 60 s, or the frontier when nothing was committed since.
    expect(a.local.meta().minReadableTs).toBe(Math.min(a.engine.readTs, (h.clock.nowMs() - 60_000) * 1000));
    expect(() => a.local.get(id, first.ts)).toThrow(expect.objectContaining({ code: "LOCAL_HISTORY_UNAVAILABLE" }));
    expect(a.local.get(id, a.engine.readTs)).toMatchObject({ ts: second.ts });
    expect(a.local.receipt("client", 1)).toBeNull(); // older than 120 s
    expect(a.local.receipt("client", 2)).not.toBeNull();
    expect(a.events).toContainEqual(expect.objectContaining({ type: "pruned" }));
  });

  it("keeps the receipt holding a client's floor past the receipt window, until the floor window ends", async () => {
    const h = (harness = await ShardHarness.create(memoryBucket));
    const a = await h.writer("a", { receiptRetentionMs: 60_000, receiptFloorRetentionMs: 600_000 });
    const receipt = (seq: number, floorSeq?: number) => ({ clientId: "phone", seq, result: '"ok"', route: null, owner: "user:ada", ...(floorSeq !== undefined ? { floorSeq } : {}) });
    const commitReceipt = (write: ReturnType<typeof receipt>) => a.engine.commit({ readTs: a.engine.readTs, documents: [], indexWrites: [], receipt: write });
    await commitReceipt(receipt(1));
    await commitReceipt(receipt(2));
    await commitReceipt(receipt(3));
    await commitReceipt(receipt(4, 2)); // acknowledged 1, not yet 2 or 3
    h.clock.advance(120_000);
    await a.engine.runMaintenance();
    // Past the receipt window: only the floor's holder is left (seq 1 went below the floor when folded).
    expect([1, 2, 3, 4].map((seq) => a.local.receipt("phone", seq)?.seq ?? null)).toEqual([null, null, null, 4]);
    expect(a.local.receiptFloor("phone", "user:ada")).toBe(2);
    h.clock.advance(600_000);
    // Another client's commit moves the frontier past seq 4 (nothing at the frontier is pruned).
    await a.engine.commit({ readTs: a.engine.readTs, documents: [], indexWrites: [], receipt: { ...receipt(1), clientId: "tablet" } });
    await a.engine.runMaintenance();
    expect(a.local.receipt("phone", 4)).toBeNull();
    expect(a.local.receiptFloor("phone", "user:ada")).toBe(0);
  });
});
