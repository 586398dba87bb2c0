/**
 * Scenario: a node serving a branch keeps the parent holding what the branch reads
 * (BranchRenewal), over directory buckets and a manual clock: it renews at start and every
 * quarter of the registration's ttl, so a served branch never expires; a registration that
 * is gone is logged as an error once, not at every tick; a deployment that is no branch
 * starts no renewal.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { systemRandom } from "../../src/base/random.js";
import { App } from "../../src/functions/App.js";
import { branchRegistrationObject } from "../../src/manifest/BranchRegistry.js";
import { bucketLayout } from "../../src/manifest/bucketLayout.js";
import { openObjectStore } from "../../src/objectstore/index.js";
import { BranchRenewal } from "../../src/server/BranchRenewal.js";
import { createBranch } from "../../src/shard/createBranch.js";
import { ShardedStore } from "../../src/shard/ShardedStore.js";
import { shardedRuntime } from "../support/shardedRuntime.js";
import * as historyApp from "../shard/historyApp.js";

const root = mkdtempSync(join(tmpdir(), "cairn-branch-renewal-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const TTL_MS = 8 * 60_000;

async function until(what: string, predicate: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("a node serving a branch", () => {
  it("renews its registration at start and every quarter ttl, and logs a lost registration once", async () => {
    const parentUrl = join(root, "parent");
    const parent = await openObjectStore(parentUrl);
    const seed = await ShardedStore.open({ store: parent, localDirectory: join(root, "seed"), nodeId: "seed", numShards: 1 });
    await seed.acquireAll();
    const runtime = await shardedRuntime(seed, parent, App.fromModule(historyApp, "history"), systemRandom);
    const { ts } = await runtime.runMutation("notes:add", { channel: "a", n: 1, body: "one" });
    await seed.close();
    expect(await BranchRenewal.start({ store: parent, clock: new ManualClock(), random: systemRandom, log: () => undefined })).toBeNull();

    const clock = new ManualClock(Date.now() + 1_000);
    const branchUrl = join(root, "branch");
    const target = await openObjectStore(branchUrl);
    const created = await createBranch({ parent, parentUrl, target, targetUrl: branchUrl, atTs: ts, ttlMs: TTL_MS, branchId: "served", openStore: (url) => openObjectStore(url), settledAfterMs: 0, clock });
    await target.close();
    const branch = await openObjectStore(branchUrl);
    const registration = branchRegistrationObject(parent, "served", systemRandom);
    const expiresAt = async () => (await registration.read())!.value.expiresAt;
    expect(await expiresAt()).toBe(created.expiresAt);

    const lines: string[] = [];
    clock.advance(60_000);
    const renewal = (await BranchRenewal.start({ store: branch, clock, random: systemRandom, log: (line) => lines.push(line) }))!;
    expect(await expiresAt(), "renewed at start").toBe(clock.nowMs() + TTL_MS);
    // The clock moves only once the loop sleeps again: moved before its next sleep began, the
    // sleep would start from the moved time and the tick never come (a race the full suite's load hit).
    const asleep = () => until("the renewal sleeps", async () => clock.pendingSleepers > 0);
    for (let tick = 0; tick < 3; tick++) {
      await asleep();
      clock.advance(TTL_MS / 4);
      await until("renewed at the tick", async () => (await expiresAt()) === clock.nowMs() + TTL_MS);
    }
    expect(lines).toEqual([]);

    await parent.delete(bucketLayout.branchRegistration("served"));
    await asleep();
    clock.advance(TTL_MS / 4);
    await until("the loss is logged", async () => lines.length > 0);
    await asleep();
    clock.advance(TTL_MS / 4);
    await asleep();
    clock.advance(TTL_MS / 4);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^error: branch "served": .*BRANCH_NOT_FOUND|^error: branch "served": branch served is not registered/);
    await renewal.stop();
    await branch.close();
    await parent.close();
  }, 60_000);
});
