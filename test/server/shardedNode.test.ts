/**
 * Scenario: a writer node of a 3-shard deployment in this process on a directory bucket,
 * reached over real sockets: subscriptions over a sharded table (one that reads every
 * lane, one fixed to a channel's lane) update on commits to any lane, each Transition at
 * one ts; a cross-shard mutation is answered CROSS_SHARD_MUTATION, writes nothing, and
 * the session goes on; a restart on the same directory serves the same documents.
 */
import { afterEach, describe, expect, it } from "vitest";
import { App } from "../../src/functions/App.js";
import { laneOfValue } from "../../src/functions/routing.js";
import * as shardedApp from "../functions/shardedApp.js";
import { eventually, Gate } from "../support/Gate.js";
import { SocketClient, startTestNode } from "./serverHarness.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const CHANNELS = Array.from({ length: 12 }, (_, i) => `room-${i}`);

async function shardedNode(reuse: { directory?: string; keepDirectory?: boolean } = {}) {
  const started = await startTestNode({ app: App.fromModule(shardedApp, "sharded test app"), numShards: 3 }, reuse);
  cleanups.push(() => started.close());
  return started;
}

describe("a node of three shards", () => {
  it("updates subscriptions on commits to every lane, each Transition at one ts; refuses a cross-shard mutation and writes nothing", async () => {
    const { node } = await shardedNode();
    expect(new Set(CHANNELS.map((channel) => laneOfValue(channel, 3)))).toEqual(new Set([0, 1, 2]));
    const reader = await SocketClient.open(node.url);
    const writer = await SocketClient.open(node.url);
    cleanups.push(async () => (reader.close(), writer.close()));
    reader.write({ type: "Connect", sessionId: "r" });
    writer.write({ type: "Connect", sessionId: "w" });
    reader.write({
      type: "ModifyQuerySet",
      baseVersion: 0,
      newVersion: 1,
      add: [
        { queryId: 1, path: "messages:byN", args: { order: "asc", take: 100 } },
        { queryId: 2, path: "messages:inChannel", args: { channel: CHANNELS[3]! } },
      ],
      remove: [],
    });
    await reader.next((m) => m.type === "Transition");
    let lastTs = 0;
    for (const [n, channel] of CHANNELS.entries()) {
      writer.write({ type: "Mutation", requestId: n + 1, path: "messages:send", args: { channel, n, body: `m${n}` } });
      expect(await writer.next((m) => m.type === "MutationResponse")).toMatchObject({ requestId: n + 1, success: true });
      const update = await reader.next((m) => m.type === "Transition" && m.modifications.some((mod) => mod.type === "QueryUpdated" && mod.queryId === 1 && (mod.value as number[]).length === n + 1));
      if (update.type !== "Transition") throw new Error("not a Transition");
      expect(update.endVersion.ts).toBeGreaterThan(lastTs);
      lastTs = update.endVersion.ts;
    }
    expect(reader.frames.filter((m) => m.type === "Transition").flatMap((m) => (m.type === "Transition" ? m.modifications : [])).filter((mod) => mod.type === "QueryUpdated" && mod.queryId === 2).at(-1)).toMatchObject({ value: [3] });

    const other = CHANNELS.find((channel) => laneOfValue(channel, 3) !== laneOfValue(CHANNELS[0]!, 3))!;
    writer.write({ type: "Mutation", requestId: 100, path: "messages:sendTwice", args: { channel: CHANNELS[0]!, other } });
    expect(await writer.next((m) => m.type === "MutationResponse" && m.requestId === 100)).toMatchObject({ success: false, error: { code: "CROSS_SHARD_MUTATION" } });
    writer.write({ type: "Mutation", requestId: 101, path: "messages:send", args: { channel: other, n: 99, body: "after" } });
    expect(await writer.next((m) => m.type === "MutationResponse" && m.requestId === 101)).toMatchObject({ success: true });
    const final = await reader.next((m) => m.type === "Transition" && m.modifications.some((mod) => mod.type === "QueryUpdated" && mod.queryId === 1 && (mod.value as number[]).includes(99)));
    if (final.type !== "Transition") throw new Error("not a Transition");
    const byN = final.modifications.find((mod) => mod.type === "QueryUpdated" && mod.queryId === 1);
    // Nothing of the refused mutation ("first" at n 0 in CHANNELS[0]) was written.
    expect(byN).toMatchObject({ value: [...CHANNELS.keys(), 99] });
  });

  it("a commit on one lane reaches subscribers only once every lane's frontier passed it: never before an earlier commit still in flight elsewhere", async () => {
    const { node, store } = await shardedNode();
    const [held, free] = [CHANNELS.find((channel) => laneOfValue(channel, 3) === 1)!, CHANNELS.find((channel) => laneOfValue(channel, 3) === 2)!];
    const reader = await SocketClient.open(node.url);
    const writer = await SocketClient.open(node.url);
    cleanups.push(async () => (reader.close(), writer.close()));
    reader.write({ type: "Connect", sessionId: "r" });
    writer.write({ type: "Connect", sessionId: "w" });
    reader.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "messages:byN", args: { order: "asc", take: 100 } }], remove: [] });
    await reader.next((m) => m.type === "Transition");
    // Shard 1's next segment is stamped, then its create waits at the bucket.
    const gate = new Gate();
    store.inject({ operations: ["create"], keyPattern: /^s1\/log\//, once: true, effect: { until: gate.promise } });
    writer.write({ type: "Mutation", requestId: 1, path: "messages:send", args: { channel: held, n: 1, body: "slow" } });
    await eventually(() => store.held === 1);
    // Shard 2 commits after it (a later ts), durably: its sender (another session: a
    // session's mutations run in order) is answered at once…
    const second = await SocketClient.open(node.url);
    cleanups.push(async () => second.close());
    second.write({ type: "Connect", sessionId: "w2" });
    second.write({ type: "Mutation", requestId: 2, path: "messages:send", args: { channel: free, n: 2, body: "fast" } });
    expect(await second.next((m) => m.type === "MutationResponse" && m.requestId === 2)).toMatchObject({ success: true });
    // …but no reader sees it before shard 1's earlier commit lands: both arrive together.
    gate.open();
    expect(await writer.next((m) => m.type === "MutationResponse" && m.requestId === 1)).toMatchObject({ success: true });
    await reader.next((m) => m.type === "Transition" && m.modifications.some((mod) => mod.type === "QueryUpdated" && (mod.value as number[]).length === 2));
    const values = reader.frames.flatMap((m) => (m.type === "Transition" ? m.modifications : [])).flatMap((mod) => (mod.type === "QueryUpdated" ? [mod.value] : []));
    expect(values).not.toContainEqual([2]);
    expect(values.at(-1)).toEqual([1, 2]);
  });

  it("a restart on the same directory serves the documents of every lane", async () => {
    const first = await shardedNode({ keepDirectory: true });
    const post = (url: string, path: string, body: unknown) =>
      fetch(new URL(path, url), { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }).then(async (response) => (await response.json()) as { value: unknown });
    for (const [n, channel] of CHANNELS.entries()) await post(first.node.url, "/api/mutation", { path: "messages:send", args: { channel, n, body: "b" } });
    await first.close();
    cleanups.pop();
    const second = await shardedNode({ directory: first.directory });
    expect((await post(second.node.url, "/api/query", { path: "messages:byN", args: { order: "desc", take: 3 } })).value).toEqual([11, 10, 9]);
    const health = (await (await fetch(new URL("/api/health", second.node.url))).json()) as { shards: unknown[] };
    expect(health.shards).toHaveLength(3);
  });
});
