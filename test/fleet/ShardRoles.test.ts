/**
 * Scenario: two nodes' role machines (ShardRoles) over real engines of one two-shard
 * deployment in a directory bucket. Node A acquires both shards, hands one over, node B
 * acquires it; B is then fenced by A taking it back, and follows once it hears of the new
 * writer. Every change a listener hears is a transition of ROLE_TRANSITIONS, in order; a
 * second acquire of one shard joins the first; an acquire refused by a live lease leaves
 * the role where it was; waiting for a shard to be written settles when its acquire ends.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/base/index.js";
import { ROLE_TRANSITIONS, ShardRoles, type RoleChange } from "../../src/fleet/index.js";
import { FsObjectStore } from "../../src/objectstore/index.js";
import { type EngineEvent, ShardedStore } from "../../src/shard/index.js";
import { SkewedClock } from "../support/SkewedClock.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A node's role machine over its engines; `aheadMs` sets its wall clock that far ahead (it sees others' leases as lapsed). */
async function node(root: string, store: FsObjectStore, nodeId: string, aheadMs = 0) {
  const changes: RoleChange[] = [];
  let roles: ShardRoles | null = null;
  const clock = new SkewedClock(systemClock, aheadMs);
  const sharded = await ShardedStore.open({
    store,
    localDirectory: join(root, nodeId),
    nodeId,
    numShards: 2,
    clock,
    onEvent: (event: EngineEvent) => roles?.engineEvent(event),
    tuning: { leaseTtlMs: 60_000, heartbeatIntervalMs: 20_000 },
  });
  roles = new ShardRoles({ engines: sharded.engines, nodeId, clock });
  roles.onChange((change) => changes.push(change));
  cleanups.push(() => sharded.close());
  return { sharded, roles, changes };
}

function checkTransitions(changes: readonly RoleChange[]): void {
  const last = new Map<number, string>();
  for (const change of changes) {
    expect(ROLE_TRANSITIONS[change.from]).toContain(change.to);
    expect(change.from).toBe(last.get(change.shard) ?? "following");
    last.set(change.shard, change.to);
  }
}

describe("shard roles", () => {
  it("moves each shard along the transition table: acquire, hand over, acquire elsewhere", async () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-roles-"));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    const store = new FsObjectStore(join(root, "bucket"));
    const a = await node(root, store, "node-a");
    const b = await node(root, store, "node-b");

    // Two acquires of one shard at once are one acquire.
    const first = a.roles.acquire(0);
    const second = a.roles.acquire(0);
    expect(a.roles.role(0)).toBe("acquiring");
    expect(a.roles.acquiring(0)).toBe(true);
    await Promise.all([first, second]);
    await a.roles.acquire(1);
    expect(a.roles.roles()).toEqual(["writing", "writing"]);
    expect(a.roles.writesEvery()).toBe(true);

    // B cannot take a live lease: refused, and its role is where it was.
    await expect(b.roles.acquire(1)).rejects.toMatchObject({ code: "LEASE_HELD" });
    expect(b.roles.role(1)).toBe("following");
    // A wait for a shard B does not get settles (false) when the acquire ends, not at its limit.
    const waited = b.roles.waitUntilWriting(1, 600_000);
    await expect(b.roles.acquire(1)).rejects.toMatchObject({ code: "LEASE_HELD" });
    expect(await waited).toBe(false);

    // A hands shard 1 over (drain, clear the lease) and B takes it at once.
    const writing = b.roles.waitUntilWriting(1, 600_000);
    await a.roles.handOver(1);
    expect(a.roles.role(1)).toBe("following");
    await b.roles.acquire(1);
    expect(await writing).toBe(true);
    expect(b.roles.roles()).toEqual(["following", "writing"]);
    expect(a.roles.writesEvery()).toBe(false);
    expect(a.roles.writesAny()).toBe(true);

    checkTransitions(a.changes);
    checkTransitions(b.changes);
    expect(a.changes.filter((change) => change.shard === 1).map((change) => change.to)).toEqual(["acquiring", "writing", "handingOver", "following"]);
    expect(b.changes.map((change) => change.to)).toEqual(["acquiring", "following", "acquiring", "following", "acquiring", "writing"]);
  });

  it("a writer whose lease another node took is fenced, and follows once it hears who writes now", async () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-roles-"));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    const store = new FsObjectStore(join(root, "bucket"));
    const a = await node(root, store, "node-a");
    // B's clock is an hour ahead: A's lease looks lapsed to it, as after a pause past the lease.
    const b = await node(root, store, "node-b", 3_600_000);
    await a.roles.acquire(0);
    await b.roles.acquire(0);
    expect(b.roles.role(0)).toBe("writing");
    // A still writes as far as it knows, until the bucket says otherwise.
    expect(a.roles.role(0)).toBe("writing");
    await expect(a.sharded.engines[0]!.heartbeat()).rejects.toMatchObject({ code: "FENCED" });
    // Fenced, and the read that fenced it named the new writer: A follows B.
    expect(a.roles.role(0)).toBe("following");
    expect(a.changes.at(-1)!.reason).toBe("shard written by node-b (epoch 2)");
    checkTransitions(a.changes);
    checkTransitions(b.changes);
    expect(a.changes.map((change) => change.to)).toEqual(["acquiring", "writing", "fenced", "following"]);
    expect(a.changes[2]!.reason).toMatch(/^fenced \(/);
  });

  it("refuses a transition the table does not have, and a hand-over while acquiring", async () => {
    const root = mkdtempSync(join(tmpdir(), "cairn-roles-"));
    cleanups.push(() => rmSync(root, { recursive: true, force: true }));
    const store = new FsObjectStore(join(root, "bucket"));
    const a = await node(root, store, "node-a");
    expect(ROLE_TRANSITIONS.following).not.toContain("writing");
    expect(ROLE_TRANSITIONS.closed).toEqual([]);
    const acquiring = a.roles.acquire(0);
    await expect(a.roles.handOver(0)).rejects.toMatchObject({ code: "ENGINE_CLOSED" });
    await acquiring;
    expect(() => a.roles.role(7)).toThrow(/no shard 7/);
    a.roles.closeAll();
    expect(a.roles.roles()).toEqual(["closed", "closed"]);
    await expect(a.roles.acquire(1)).rejects.toMatchObject({ code: "ENGINE_CLOSED" });
  });
});
