/**
 * Scenario: a fleet (DESIGN.md §9 "Fleet") of real node processes over one directory
 * bucket and six shards, with fast beats and short leases. Three nodes converge to the
 * rendezvous assignment of the six shards; a client on node A subscribed to a query over
 * every shard sees a mutation sent to node B for a shard node C owns; a fourth node joins
 * and only the shards rendezvous hashing gives it move (about a quarter), with no write
 * lost; a node SIGKILLed loses its shards to their new targets after its lease lapses and
 * every acknowledged write is still there exactly once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { apiOf } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import { assignment } from "../../src/fleet/index.js";
import { laneOfValue } from "../../src/functions/routing.js";
import type { functions } from "../functions/shardedApp.js";
import type { NodeProcessConfig } from "../support/nodeProcess.js";
import { runCairn } from "../support/runCairn.js";
import { spawnServing } from "../support/spawnCairnServe.js";
import { within as waitWithin } from "../support/within.js";

const api = apiOf<typeof functions>();
const ADMIN_KEY = "fleet-test-admin-key";
const SHARDS = 6;
/** Short leases and fast beats: ownership moves within a few seconds. */
const FAST = { engineTuning: { leaseTtlMs: 3_000, heartbeatIntervalMs: 1_000 }, fleet: { beatMs: 250, presenceTtlMs: 1_500 }, maxClockSkewMs: 200 } as const;
/** A bound on a hang, not a timing assertion (the latencies seen are printed). */
const WAIT_MS_MAX = 45_000;

const root = mkdtempSync(join(tmpdir(), "cairn-fleet-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const children: ChildProcess[] = [];
const clients: CairnClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(
    children.splice(0).map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("close", resolve));
    }),
  );
});

interface FleetNode {
  readonly nodeId: string;
  readonly url: string;
  readonly child: ChildProcess;
}

async function fleetNode(nodeId: string, bucket: string): Promise<FleetNode> {
  const config: NodeProcessConfig = { store: join(root, bucket), app: "test/functions/shardedApp.ts", adminKey: ADMIN_KEY, local: join(root, `${bucket}-local-${nodeId}`), nodeId, numShards: SHARDS, role: "fleet", ...FAST };
  const { child, url } = await spawnServing(["test/support/nodeProcess.ts", JSON.stringify(config)]);
  children.push(child);
  child.stdout!.resume();
  child.stderr!.resume();
  return { nodeId, url, child };
}

function client(url: string): CairnClient {
  const made = createNodeClient(`${url.replace(/^http/, "ws")}api/sync`, { reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 300, onError: () => undefined });
  clients.push(made);
  return made;
}

function within(what: string, predicate: () => boolean | Promise<boolean>, startedMs = Date.now()): Promise<number> {
  return waitWithin("fleet", what, predicate, { startedMs, maxMs: WAIT_MS_MAX });
}

interface Health {
  readonly shards: readonly { readonly writer: string | null; readonly state: string; readonly role: string }[];
  readonly fleet?: { readonly liveNodes: readonly string[] };
}

async function health(url: string): Promise<Health> {
  return (await (await fetch(`${url}api/health`)).json()) as Health;
}

/** Each shard's writer as every node sees it, once all of them agree and the writer says it writes it; else null. */
async function agreedWriters(nodes: readonly FleetNode[]): Promise<(string | null)[] | null> {
  const views = await Promise.all(nodes.map((node) => health(node.url)));
  const writers = views[0]!.shards.map((shard) => shard.writer);
  for (const [index, view] of views.entries()) {
    if (JSON.stringify(view.shards.map((shard) => shard.writer)) !== JSON.stringify(writers)) return null;
    for (const state of view.shards) if ((state.writer === nodes[index]!.nodeId) !== (state.state === "writing")) return null;
  }
  return writers;
}

async function converged(nodes: readonly FleetNode[], expected: readonly (string | null)[]): Promise<boolean> {
  return JSON.stringify(await agreedWriters(nodes)) === JSON.stringify(expected);
}

async function queried(url: string): Promise<number[]> {
  const response = await fetch(`${url}api/query`, { method: "POST", body: JSON.stringify({ path: "messages:byN", args: { order: "asc", take: 1000 } }) });
  return ((await response.json()) as { value: number[] }).value;
}

const channelOn = (lane: number) => Array.from({ length: 256 }, (_, i) => `room-${i}`).find((channel) => laneOfValue(channel, SHARDS) === lane)!;

describe("a fleet of writers over one bucket", () => {
  it("converges to the rendezvous assignment, serves every shard on every node, and moves only a joining node's shards", { timeout: 180_000 }, async () => {
    const a = await fleetNode("alpha", "bucket-join");
    const b = await fleetNode("beta", "bucket-join");
    const c = await fleetNode("gamma", "bucket-join");
    const three = [a, b, c];
    const target3 = assignment(SHARDS, three.map((node) => node.nodeId));
    await within("three nodes converge to the rendezvous assignment", () => converged(three, target3));

    // A client on A sees a mutation sent to B for a shard C owns.
    // `cairn inspect` shows the live nodes, the shards each says it writes (as of its last
    // beat: asked again until the entries caught up), each shard's writer and the common frontier.
    const expectations = [
      /live nodes: 3/,
      ...three.map((node) => new RegExp(`node ${node.nodeId}: fleet at http://[^ ]+/, writes shard\\(s\\) ${target3.flatMap((owner, shard) => (owner === node.nodeId ? [shard] : [])).join(", ")},`)),
      ...target3.map((owner, shard) => new RegExp(`shard ${shard}: epoch \\d+, writer ${owner} \\(lease live`)),
      /common frontier: ts \d+ .*pinned by shard \d/,
    ];
    let inspected = "";
    await within("cairn inspect shows the fleet", async () => {
      const inspect = await runCairn(["inspect", "--store", join(root, "bucket-join")]);
      inspected = inspect.stdout;
      return inspect.code === 0 && expectations.every((expected) => expected.test(inspect.stdout));
    }).catch((error: unknown) => {
      throw new Error(`${(error as Error).message}; last output:\n${inspected}`);
    });

    // /metrics: the live nodes, and each shard's role and epoch.
    const metrics = await (await fetch(`${a.url}metrics`)).text();
    expect(metrics).toMatch(/^cairn_fleet_live_nodes 3$/m);
    for (const [shard, owner] of target3.entries()) {
      expect(metrics).toMatch(new RegExp(`^cairn_shard_role\\{shard="${shard}",role="${owner === "alpha" ? "writing" : "following"}"\\} 1$`, "m"));
      expect(metrics).toMatch(new RegExp(`^cairn_shard_epoch\\{shard="${shard}"\\} \\d+$`, "m"));
    }

    const shardOfC = target3.indexOf("gamma");
    expect(shardOfC).toBeGreaterThanOrEqual(0);
    const onA = client(a.url);
    const onB = client(b.url);
    let seenOnA: number[] = [];
    onA.subscribe(api.messages.byN, { order: "asc", take: 1000 }, (value) => (seenOnA = value));
    const sentMs = Date.now();
    await onB.mutation(api.messages.send, { channel: channelOn(shardOfC), n: 1, body: "sent to beta, written by gamma" });
    await within("a commit sent to beta for gamma's shard reaches alpha's subscriber", () => seenOnA.includes(1), sentMs);

    // Writes to every shard through every node, then a fourth node joins.
    let n = 1;
    const acknowledged: number[] = [1];
    for (const via of [onA, onB]) {
      for (let shard = 0; shard < SHARDS; shard++) {
        n++;
        await via.mutation(api.messages.send, { channel: channelOn(shard), n, body: `n${n}` });
        acknowledged.push(n);
      }
    }
    const d = await fleetNode("delta", "bucket-join");
    const four = [a, b, c, d];
    const target4 = assignment(SHARDS, four.map((node) => node.nodeId));
    const moved = target4.filter((owner, shard) => owner !== target3[shard]);
    // Rendezvous: only shards whose new target is the joining node move.
    expect(moved.every((owner) => owner === "delta")).toBe(true);
    console.log(`fleet: delta joins; ${moved.length} of ${SHARDS} shards move to it`);
    // Writes keep landing while ownership moves.
    const writing = (async () => {
      for (let round = 0; round < 3; round++) {
        for (let shard = 0; shard < SHARDS; shard++) {
          n++;
          await onA.mutation(api.messages.send, { channel: channelOn(shard), n, body: `n${n}` });
          acknowledged.push(n);
        }
      }
    })();
    await within("four nodes converge to the new assignment", () => converged(four, target4));
    await writing;
    await within("every acknowledged write is on every node, once", async () => {
      const views = await Promise.all(four.map((node) => queried(node.url)));
      return views.every((view) => JSON.stringify(view) === JSON.stringify(acknowledged));
    });
  });

  it("hands a SIGKILLed node's shards to their new targets after its lease, losing no acknowledged write", { timeout: 180_000 }, async () => {
    const nodes = [await fleetNode("alpha", "bucket-kill"), await fleetNode("beta", "bucket-kill"), await fleetNode("gamma", "bucket-kill")];
    const target3 = assignment(SHARDS, nodes.map((node) => node.nodeId));
    await within("three nodes converge", () => converged(nodes, target3));
    const [a, b, c] = nodes as [FleetNode, FleetNode, FleetNode];
    const onA = client(a.url);
    const acknowledged: number[] = [];
    for (let shard = 0; shard < SHARDS; shard++) {
      await onA.mutation(api.messages.send, { channel: channelOn(shard), n: shard + 1, body: "before the kill" });
      acknowledged.push(shard + 1);
    }
    const killedMs = Date.now();
    c.child.kill("SIGKILL");
    await new Promise((resolve) => c.child.once("close", resolve));
    const target2 = assignment(SHARDS, [a.nodeId, b.nodeId]);
    await within("the survivors take gamma's shards", () => converged([a, b], target2), killedMs);
    for (const shard of target3.flatMap((owner, index) => (owner === "gamma" ? [index] : []))) {
      const n = 100 + shard;
      await onA.mutation(api.messages.send, { channel: channelOn(shard), n, body: "after the kill" });
      acknowledged.push(n);
    }
    await within("every acknowledged write is on both survivors, once", async () => {
      const views = await Promise.all([a, b].map((node) => queried(node.url)));
      return views.every((view) => JSON.stringify(view) === JSON.stringify([...acknowledged].sort((x, y) => x - y)));
    });
  });
});
