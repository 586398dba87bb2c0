/**
 * Scenario: two real node processes over one directory bucket, each the writer of one of
 * a deployment's two shards (node b writes shard 1, node a shard 0), each following the
 * other's shard — as after two standbys each won some shards of a dead writer. Every
 * query reads both shards at the node's common frontier, so a commit on one shard is
 * visible only once the other shard's log has passed its ts: the idle shard's writer,
 * on another node, must close its frontier for it (DESIGN.md §5).
 *
 * A commit on either node shows in queries and live queries on both. Then node b is
 * SIGKILLed: shard 1 has no live writer, and node a's readers are held back only until
 * its lease lapses and node a takes the shard over. A shard that never gets a writer
 * holds reads back for good, and health (and a warning in the log) says which shard it is
 * and that it has none.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ChildProcess } from "node:child_process";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { apiOf } from "../../src/client/index.js";
import { createNodeClient } from "../../src/client/node.js";
import type { CairnClient } from "../../src/client/CairnClient.js";
import { laneOfValue } from "../../src/functions/routing.js";
import type { functions } from "../functions/shardedApp.js";
import type { NodeProcessConfig } from "../support/nodeProcess.js";
import { spawnServing } from "../support/spawnCairnServe.js";
import { within as waitWithin } from "../support/within.js";

const api = apiOf<typeof functions>();
const ADMIN_KEY = "multi-writer-test-admin-key";
/** Short leases: a dead writer's shard is taken over within seconds. */
const FAST_LEASES = { leaseTtlMs: 3_000, heartbeatIntervalMs: 1_000 };
/** A bound on a hang, not a timing assertion (the latencies seen are printed). */
const VISIBLE_WAIT_MS_MAX = 30_000;

const root = mkdtempSync(join(tmpdir(), "cairn-multi-writer-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const children: ChildProcess[] = [];
const clients: CairnClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const child of children.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    child.kill("SIGKILL");
    await new Promise((resolve) => child.once("close", resolve));
  }
});

async function node(config: Omit<NodeProcessConfig, "store" | "app" | "adminKey" | "local">, bucket = "bucket"): Promise<{ url: string; child: ChildProcess; output: () => string }> {
  const full: NodeProcessConfig = { store: join(root, bucket), app: "test/functions/shardedApp.ts", adminKey: ADMIN_KEY, local: join(root, `local-${config.nodeId}`), ...config };
  const { child, url } = await spawnServing(["test/support/nodeProcess.ts", JSON.stringify(full)]);
  children.push(child);
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.resume();
  return { url, child, output: () => output };
}

function client(url: string): CairnClient {
  const made = createNodeClient(`${url.replace(/^http/, "ws")}api/sync`, { reconnectBackoffBaseMs: 20, reconnectBackoffMaxMs: 300, onError: () => undefined });
  clients.push(made);
  return made;
}

function within(what: string, predicate: () => boolean | Promise<boolean>, startedMs = Date.now()): Promise<number> {
  return waitWithin("multi-writer", what, predicate, { startedMs, maxMs: VISIBLE_WAIT_MS_MAX });
}

async function queried(url: string): Promise<number[]> {
  const response = await fetch(`${url}api/query`, { method: "POST", body: JSON.stringify({ path: "messages:byN", args: { order: "asc", take: 100 } }) });
  return ((await response.json()) as { value: number[] }).value;
}

async function shardWriters(url: string): Promise<(string | null)[]> {
  const health = (await (await fetch(`${url}api/health`)).json()) as { shards: { writer: string | null; state: string }[] };
  return health.shards.map((shard) => (shard.state === "writing" ? "here" : shard.writer));
}

const channelOn = (lane: number) => Array.from({ length: 64 }, (_, i) => `room-${i}`).find((channel) => laneOfValue(channel, 2) === lane)!;

describe("two nodes, each the writer of one shard", () => {
  it("show a commit on either in queries and live queries on both; a dead writer's shard holds readers back only until its lease lapses", async () => {
    // b first, so it creates the deployment; neither takes the other's shard over on its own.
    const b = await node({ nodeId: "b", numShards: 2, ownShards: [1], leaseCheckIntervalMs: 3_600_000, engineTuning: FAST_LEASES });
    const a = await node({ nodeId: "a", ownShards: [0], leaseCheckIntervalMs: 500, maxClockSkewMs: 200, engineTuning: FAST_LEASES });
    expect(await shardWriters(a.url)).toEqual(["here", "b"]);
    // b learns that a writes shard 0 from a's fence in the log (or its next manifest read).
    await within("b follows a's epoch of shard 0", async () => JSON.stringify(await shardWriters(b.url)) === JSON.stringify(["a", "here"]));

    const onA = client(a.url);
    const onB = client(b.url);
    let seenOnA: number[] = [];
    let seenOnB: number[] = [];
    onA.subscribe(api.messages.byN, { order: "asc", take: 100 }, (value) => (seenOnA = value));
    onB.subscribe(api.messages.byN, { order: "asc", take: 100 }, (value) => (seenOnB = value));

    const visibleEverywhere = (n: number) => async () => seenOnA.includes(n) && seenOnB.includes(n) && (await queried(a.url)).includes(n) && (await queried(b.url)).includes(n);
    let sentMs = Date.now();
    const first = onA.mutation(api.messages.send, { channel: channelOn(0), n: 1, body: "written by a on shard 0" });
    await within("a's commit (shard 0) visible on a and b", visibleEverywhere(1), sentMs);
    await first;

    sentMs = Date.now();
    const second = onB.mutation(api.messages.send, { channel: channelOn(1), n: 2, body: "written by b on shard 1" });
    await within("b's commit (shard 1) visible on a and b", visibleEverywhere(2), sentMs);
    await second;

    // Through the other node: a mutation sent to a for shard 1 is forwarded to b.
    sentMs = Date.now();
    const third = onA.mutation(api.messages.send, { channel: channelOn(1), n: 3, body: "sent to a, written by b" });
    await within("a forwarded commit (shard 1) visible on a and b", visibleEverywhere(3), sentMs);
    await third;

    const diedMs = Date.now();
    b.child.kill("SIGKILL");
    await new Promise((resolve) => b.child.once("close", resolve));
    const fourth = onA.mutation(api.messages.send, { channel: channelOn(0), n: 4, body: "written by a while shard 1 has no writer" });
    await within("a's commit visible after b died (a took shard 1 over; lease 3 s)", async () => seenOnA.includes(4) && (await queried(a.url)).includes(4), diedMs);
    await fourth;
    await within("a writes both shards", async () => JSON.stringify(await shardWriters(a.url)) === JSON.stringify(["here", "here"]));
    expect(seenOnA).toEqual([1, 2, 3, 4]);
  });

  it("say in health which shard holds reads back when it has no writer", async () => {
    // Shard 1 never gets a writer: a writes only shard 0 and checks no leases.
    const a = await node({ nodeId: "lonely", numShards: 2, ownShards: [0], leaseCheckIntervalMs: 3_600_000, engineTuning: FAST_LEASES, frontierStallWarnMs: 500 }, "bucket-without-a-writer");
    const onA = client(a.url);
    void onA.mutation(api.messages.send, { channel: channelOn(0), n: 1, body: "committed on shard 0, held back by shard 1" }).catch(() => undefined);
    type Health = { status: string; frontierHeldBy: { shard: number; heldBackMs: number; writer: string | null; writerLive: boolean } };
    let health: Health | undefined;
    await within("health names shard 1 as holding reads back", async () => {
      health = (await (await fetch(`${a.url}api/health`)).json()) as Health;
      return health.frontierHeldBy.heldBackMs > 0;
    });
    expect(health).toMatchObject({ status: "degraded", frontierHeldBy: { shard: 1, writer: null, writerLive: false } });
    // And the node's log says so, naming the shard and that it has no writer.
    await within("the log warns of the stalled frontier", () => /warning: frontier: has not advanced for [\d.]+ s at ts \d+, held back by shard 1 \(\d+ ms behind the newest commit; writer none\)/.test(a.output()));
    expect(await queried(a.url)).toEqual([]);
  });
});
