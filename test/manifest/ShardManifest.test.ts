/**
 * Scenario: leases on a shard manifest — acquire bumps the epoch, a live lease held by
 * another node is refused, heartbeats renew, a stale owner is fenced without changing the
 * manifest, relinquish hands over at once, and a foreign deployment is refused.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { hasErrorCode } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import { openGlobals } from "../../src/manifest/Globals.js";
import { ShardManifest } from "../../src/manifest/ShardManifest.js";
import { MemoryObjectStore } from "../../src/objectstore/MemoryObjectStore.js";

const TTL = 10_000;
const writerA = { nodeId: "node-a", url: "http://a" };
const writerB = { nodeId: "node-b", url: null };

async function twoNodes() {
  const store = new MemoryObjectStore();
  const clock = new ManualClock();
  const a = new ShardManifest(store, 0, "d1", new SeededRandom(1));
  const b = new ShardManifest(store, 0, "d1", new SeededRandom(2));
  await a.load();
  await b.load();
  return { store, clock, a, b };
}

describe("ShardManifest", () => {
  it("creates the first manifest once: epoch 0, no writer, logStart 0", async () => {
    const { a, b } = await twoNodes();
    expect(a.current).toMatchObject({ epoch: 0, writer: null, logStart: 0, snapshot: null, version: 1 });
    expect(b.current).toEqual(a.current);
  });

  it("acquire bumps the epoch and refuses a live lease of another node", async () => {
    const { clock, a, b } = await twoNodes();
    const acquired = await a.acquire(writerA, clock.nowMs(), TTL);
    expect(acquired).toMatchObject({ epoch: 1, writer: writerA, leaseExpiresAt: clock.nowMs() + TTL });
    await expect(b.acquire(writerB, clock.nowMs() + TTL, TTL)).rejects.toSatisfy((error) =>
      hasErrorCode(error, "LEASE_HELD"),
    );
  });

  it("takes over after the lease expired, and the stale owner's heartbeat is fenced", async () => {
    const { clock, a, b } = await twoNodes();
    await a.acquire(writerA, clock.nowMs(), TTL);
    clock.advance(TTL + 1);
    const taken = await b.acquire(writerB, clock.nowMs(), TTL);
    expect(taken.epoch).toBe(2);
    const before = await b.refresh();
    await expect(a.heartbeat({ nodeId: "node-a", epoch: 1 }, clock.nowMs(), TTL, 5)).rejects.toSatisfy((error) =>
      hasErrorCode(error, "FENCED"),
    );
    expect(await b.refresh()).toEqual(before);
  });

  it("heartbeat renews the lease and raises the tail hint", async () => {
    const { clock, a } = await twoNodes();
    await a.acquire(writerA, clock.nowMs(), TTL);
    clock.advance(3_000);
    const renewed = await a.heartbeat({ nodeId: "node-a", epoch: 1 }, clock.nowMs(), TTL, 42);
    expect(renewed).toMatchObject({ leaseExpiresAt: clock.nowMs() + TTL, tailHint: 42, epoch: 1 });
  });

  it("relinquish lets a successor take over immediately", async () => {
    const { clock, a, b } = await twoNodes();
    await a.acquire(writerA, clock.nowMs(), TTL);
    await a.relinquish({ nodeId: "node-a", epoch: 1 });
    const taken = await b.acquire(writerB, clock.nowMs(), TTL);
    expect(taken).toMatchObject({ epoch: 2, writer: writerB });
  });

  it("serializes the owner's own updates so they never conflict with each other", async () => {
    const { clock, a } = await twoNodes();
    await a.acquire(writerA, clock.nowMs(), TTL);
    const owner = { nodeId: "node-a", epoch: 1 };
    await Promise.all([
      a.heartbeat(owner, clock.nowMs(), TTL, 1),
      a.updateAsOwner(owner, (fields) => ({ ...fields, logStart: 3 })),
      a.heartbeat(owner, clock.nowMs(), TTL, 7),
    ]);
    expect(await a.refresh()).toMatchObject({ logStart: 3, tailHint: 7, epoch: 1 });
  });

  it("refuses a manifest of another deployment", async () => {
    const { store } = await twoNodes();
    const foreign = new ShardManifest(store, 0, "another-deployment", new SeededRandom(3));
    await expect(foreign.load()).rejects.toMatchObject({ code: "DEPLOYMENT_MISMATCH" });
  });
});

describe("openGlobals", () => {
  it("creates the deployment once and every later node adopts it", async () => {
    const store = new MemoryObjectStore();
    const clock = new ManualClock();
    const [first, second] = await Promise.all([
      openGlobals(store, { clock, random: new SeededRandom(1), numShards: 2 }),
      openGlobals(store, { clock, random: new SeededRandom(2), numShards: 2 }),
    ]);
    expect(second.value.deploymentId).toBe(first.value.deploymentId);
    const later = await openGlobals(store, { clock, random: new SeededRandom(3) });
    expect(later.value).toMatchObject({ numShards: 2, deploymentId: first.value.deploymentId });
  });

  it("refuses a different shard count and a missing deployment when it must exist", async () => {
    const store = new MemoryObjectStore();
    const clock = new ManualClock();
    await expect(openGlobals(store, { clock, random: new SeededRandom(1), mustExist: true })).rejects.toMatchObject({
      code: "DEPLOYMENT_MISMATCH",
    });
    await openGlobals(store, { clock, random: new SeededRandom(1), numShards: 1 });
    await expect(openGlobals(store, { clock, random: new SeededRandom(1), numShards: 4 })).rejects.toMatchObject({
      code: "DEPLOYMENT_MISMATCH",
    });
    await expect(openGlobals(store, { clock, random: new SeededRandom(1), numShards: 0 })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
    });
  });
});
