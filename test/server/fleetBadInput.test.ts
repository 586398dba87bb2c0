/**
 * Scenario: two fleet node processes (DESIGN.md §9 "Fleet") with the same node id, over
 * one bucket and four shards, beside a node of another id.
 * 1. The second starts while the first is live: it waits out the first's presence entry
 *    once, sees it renewed, and fails to start with NODE_ID_IN_USE; the first keeps
 *    writing its shards at the same epochs, and the live presence entry stays its own.
 * 2. The first is frozen (SIGSTOP) long enough for its presence entry to lapse, the second
 *    starts under its id, then the first is thawed, all under a write load. The thawed
 *    one says another process holds its id; whoever ends up writing, never two writers
 *    acknowledge on one shard: every acknowledged write is in the bucket's logs exactly
 *    once and served by every node, and none reported failed is there.
 *    This one runs over the S3 test endpoint: over a directory, a process frozen inside a
 *    compare-and-swap keeps that key's lock for as long as it is frozen (age never breaks
 *    a directory lock, docs/operations.md), so the twin could not register its id until
 *    the thaw that the scenario only sends after the twin serves.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { apiOf } from "../../src/client/index.js";
import type { CairnError } from "../../src/base/index.js";
import { systemRandom } from "../../src/base/index.js";
import { assignment, liveNodes } from "../../src/fleet/index.js";
import { laneOfValue } from "../../src/functions/routing.js";
import type { ObjectStore } from "../../src/objectstore/index.js";
import type { functions } from "../functions/shardedApp.js";
import { converged, directoryStore, FAST, fleetClient, health, query, readShardLogs, s3EndpointStore, startFleetNode, stopEverything, within } from "./fleetHarness.js";

const api = apiOf<typeof functions>();
const SHARDS = 4;

const root = mkdtempSync(join(tmpdir(), "cairn-fleet-bad-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => stopEverything());

const channelOn = (lane: number) => Array.from({ length: 256 }, (_, i) => `room-${i}`).find((channel) => laneOfValue(channel, SHARDS) === lane)!;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every object key under `prefix`. */
async function keysUnder(store: ObjectStore, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const listed of store.list(prefix)) keys.push(listed.key);
  return keys.sort();
}

async function consumerKeys(store: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  for (let shard = 0; shard < SHARDS; shard++) keys.push(...(await keysUnder(store, `s${shard}/consumers/`)));
  return keys;
}

describe("two fleet nodes with one node id", () => {
  it("refuses the second while the first is live, and the first writes on undisturbed", { timeout: 90_000 }, async () => {
    const store = directoryStore(join(root, "bucket-refused"));
    const spec = (nodeId: string, local: string) => ({ nodeId, store, local: join(root, local), app: "test/functions/shardedApp.ts", numShards: SHARDS });
    // Beta first: alpha then joins as a follower of every shard, and keeps watermarks of the shards it follows.
    const beta = await startFleetNode(spec("beta", "refused-beta"));
    const alpha = await startFleetNode(spec("alpha", "refused-alpha"));
    const target = assignment(SHARDS, ["alpha", "beta"]);
    await within("two nodes converge", () => converged([alpha, beta], target));
    const bucket = await store.open();
    const epochsBefore = (await health(alpha)).shards.map((shard) => shard.epoch);
    const consumersBefore = await consumerKeys(bucket);
    const incarnationOfAlpha = async () => (await liveNodes(bucket, (await health(beta)).deploymentId, systemRandom, Date.now())).find((entry) => entry.nodeId === "alpha")?.incarnation;
    const presenceBefore = await incarnationOfAlpha();
    expect(presenceBefore).toBeDefined();

    const startedMs = Date.now();
    const refused = await startFleetNode(spec("alpha", "refused-alpha-twin")).then(
      () => null,
      (error: Error) => error.message,
    );
    console.log(`fleet bad input: the second "alpha" gave up after ${Date.now() - startedMs} ms:\n${refused}`);
    expect(refused, "the second process with alpha's id must not serve").not.toBeNull();
    expect(refused).toMatch(/NODE_ID_IN_USE/);
    expect(refused).toMatch(/another process is registered as node "alpha"/);

    // The first goes on: same writers, same epochs, its presence entry its own.
    const client = fleetClient([alpha, beta], 1);
    for (let shard = 0; shard < SHARDS; shard++) await client.mutation(api.messages.send, { channel: channelOn(shard), n: shard, body: "after the refusal" });
    const after = await health(alpha);
    expect(after.shards.map((shard) => shard.writer)).toEqual(target);
    expect(after.shards.map((shard) => shard.epoch)).toEqual(epochsBefore);
    expect(await incarnationOfAlpha(), "alpha's live presence entry is the first process's").toBe(presenceBefore);
    const consumersAfter = await consumerKeys(bucket);
    // The refused process claimed the id before writing anything under it: alpha's watermarks are untouched.
    expect(consumersAfter, "alpha's watermarks").toEqual(consumersBefore);
    const logs = await readShardLogs(bucket, after.deploymentId, SHARDS);
    for (const log of logs) expect(log.epochs.at(-1), `shard ${log.shard}: no epoch of the refused process`).toBe(epochsBefore[log.shard]);
  });

  it("never has two writers acknowledging on one shard when a frozen node's id is taken and it thaws", { timeout: 90_000 }, async () => {
    const store = await s3EndpointStore();
    const spec = (nodeId: string, local: string) => ({ nodeId, store, local: join(root, local), app: "test/functions/shardedApp.ts", numShards: SHARDS });
    const alpha = await startFleetNode(spec("alpha", "thawed-alpha"));
    const beta = await startFleetNode(spec("beta", "thawed-beta"));
    const target = assignment(SHARDS, ["alpha", "beta"]);
    await within("two nodes converge", () => converged([alpha, beta], target));

    // A load on every shard, from clients of beta (whose forwards reach whichever process writes).
    const clients = [fleetClient([beta], 0), fleetClient([beta], 0)];
    const outcomes = new Map<number, "acknowledged" | "failed" | "unknown">();
    let loading = true;
    let n = 0;
    const load = clients.map(async (client) => {
      while (loading) {
        const value = ++n;
        try {
          await client.mutation(api.messages.send, { channel: channelOn(value % SHARDS), n: value, body: `n${value}` });
          outcomes.set(value, "acknowledged");
        } catch (error) {
          const code = (error as CairnError).code;
          outcomes.set(value, code === "CONNECTION_LOST" || (error as CairnError).details?.["outcomeUnknown"] === true ? "unknown" : "failed");
          // A client that fails at once (closed after a failed assertion) must not spin in
          // microtasks: that starves timers and child-exit events, and the run hangs.
          await sleep(20);
        }
      }
    });
    await sleep(1_000);
    alpha.child.kill("SIGSTOP");
    // Past its presence TTL and the clock skew: its entry lapses (its leases may not yet).
    await sleep(FAST.fleet.presenceTtlMs + FAST.maxClockSkewMs + FAST.fleet.beatMs);
    const twin = await startFleetNode(spec("alpha", "thawed-alpha-twin"));
    alpha.child.kill("SIGCONT");
    const thawedMs = Date.now();
    await within("the thawed process says another process holds its id", () => /NODE_ID_IN_USE/.test(alpha.output), thawedMs);
    console.log(`fleet bad input: the thawed process logged: ${/.*NODE_ID_IN_USE.*/.exec(alpha.output)?.[0]}`);
    await within("beta and the twin agree on the assignment", () => converged([twin, beta], target), thawedMs);
    await sleep(2_000);
    loading = false;
    await Promise.all(load);
    const counts = { acknowledged: 0, failed: 0, unknown: 0 };
    for (const outcome of outcomes.values()) counts[outcome]++;
    console.log(`fleet bad input: ${outcomes.size} writes: ${JSON.stringify(counts)}; thawed process's shards ${JSON.stringify((await health(alpha)).shards.map((shard) => `${shard.role}/${shard.state}`))}`);

    const acknowledged = [...outcomes].filter(([, outcome]) => outcome === "acknowledged").map(([value]) => value).sort((a, b) => a - b);
    const failed = new Set([...outcomes].filter(([, outcome]) => outcome === "failed").map(([value]) => value));
    await within("every acknowledged write is on beta and the twin", async () => {
      const views = await Promise.all([beta, twin].map((node) => query<number[]>(node, "messages:byN", { order: "asc", take: 10_000 })));
      return views.every((view) => acknowledged.every((value) => view.includes(value)));
    });
    for (const node of [beta, twin]) {
      const view = await query<number[]>(node, "messages:byN", { order: "asc", take: 10_000 });
      expect(view.length, `${node.nodeId}: a write twice`).toBe(new Set(view).size);
      expect(view.filter((value) => failed.has(value)), `${node.nodeId}: writes reported failed`).toEqual([]);
    }
    const logs = await readShardLogs(await store.open(), (await health(beta)).deploymentId, SHARDS);
    const applied = logs.flatMap((log) => log.applied.map((receipt) => `${receipt.clientId}:${receipt.seq}`));
    expect(applied.length, "a receipt twice in the applied log").toBe(new Set(applied).size);
    for (const log of logs) console.log(`fleet bad input: shard ${log.shard}: epochs ${JSON.stringify([...log.writersByEpoch])}, ${log.applied.length} receipts applied, ${log.skipped.length} in skipped segments`);
    expect(logs.reduce((sum, log) => sum + log.applied.length, 0)).toBeGreaterThanOrEqual(acknowledged.length);
  });
});
