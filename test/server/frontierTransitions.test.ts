/**
 * Scenario: a writer node of two shards in this process, reached over real sockets. A
 * commit on shard 1 is held in flight (its segment's create waits at a gate) while a
 * session's own mutation commits on shard 0 at a later ts. The session is answered at
 * once, but no Transition it receives, and no query it adds meanwhile, may claim a ts
 * the node's common frontier has not reached: shard 1's older commit could still land
 * below it, and the client would have seen a state that never existed. Once shard 1's
 * commit lands, one Transition shows both writes.
 *
 * Then: an invalidation listener that throws loses nothing — the subscriptions of the
 * shard re-run as after a restore.
 */
import { afterEach, describe, expect, it } from "vitest";
import { App } from "../../src/functions/App.js";
import { laneOfValue } from "../../src/functions/routing.js";
import type { ServerMessage } from "../../src/sync/protocol.js";
import * as shardedApp from "../functions/shardedApp.js";
import { eventually, Gate } from "../support/Gate.js";
import { SocketClient, startTestNode } from "./serverHarness.js";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const channelOn = (lane: number) => Array.from({ length: 64 }, (_, i) => `room-${i}`).find((channel) => laneOfValue(channel, 2) === lane)!;

function transitions(client: SocketClient): Extract<ServerMessage, { type: "Transition" }>[] {
  return client.frames.filter((frame) => frame.type === "Transition");
}

/** The messages' `n`s the client's query `queryId` shows after every Transition it received. */
function shownStates(client: SocketClient, queryId: number): number[][] {
  const states: number[][] = [];
  for (const transition of transitions(client)) {
    for (const modification of transition.modifications) {
      if (modification.type === "QueryUpdated" && modification.queryId === queryId) states.push([...(modification.value as number[])].sort((a, b) => a - b));
    }
  }
  return states;
}

describe("Transitions of a writer of several shards", () => {
  it("never claim a ts above the common frontier while another shard's older commit is in flight, nor run an added query there", async () => {
    const started = await startTestNode({ app: App.fromModule(shardedApp, "sharded test app"), numShards: 2 });
    cleanups.push(() => started.close());
    const { node, store } = started;
    const frontier = () => node.handler.backend.readTs;

    const other = await SocketClient.open(node.url);
    const origin = await SocketClient.open(node.url);
    cleanups.push(() => (other.close(), origin.close()));
    other.write({ type: "Connect", sessionId: "other" });
    origin.write({ type: "Connect", sessionId: "origin" });
    await other.next((m) => m.type === "ConnectAck");
    await origin.next((m) => m.type === "ConnectAck");

    // Shard 1's next segment waits at the gate: its commit is stamped, then in flight.
    const gate = new Gate();
    cleanups.push(() => gate.open());
    store.inject({ operations: ["create"], keyPattern: /^s1\/log\//, once: true, effect: { until: gate.promise } });
    other.write({ type: "Mutation", requestId: 1, path: "messages:send", args: { channel: channelOn(1), n: 1, body: "older, on shard 1" } });
    await eventually(() => store.held === 1);
    const frontierWhileHeld = frontier();

    origin.write({ type: "Mutation", requestId: 1, path: "messages:send", args: { channel: channelOn(0), n: 2, body: "newer, on shard 0" } });
    const answer = await origin.next((m) => m.type === "MutationResponse");
    expect(answer).toMatchObject({ success: true });
    if (answer.type !== "MutationResponse" || !answer.success) throw new Error("unreachable");
    expect(answer.ts).toBeGreaterThan(frontierWhileHeld);

    // A query added now runs at the frontier: it shows neither write, never the newer alone.
    origin.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "messages:byN", args: { order: "asc", take: 100 } }], remove: [] });
    await origin.next((m) => m.type === "Transition");
    expect(frontier()).toBe(frontierWhileHeld);
    for (const transition of transitions(origin)) expect(transition.endVersion.ts).toBeLessThanOrEqual(frontierWhileHeld);
    expect(shownStates(origin, 1)).toEqual([[]]);

    gate.open();
    const covering = await origin.next((m) => m.type === "Transition" && m.endVersion.ts >= answer.ts);
    if (covering.type !== "Transition") throw new Error("unreachable");
    expect(shownStates(origin, 1).at(-1)).toEqual([1, 2]);
    // Every state shown existed: the newer write never without the older one.
    for (const state of shownStates(origin, 1)) expect(state.includes(2) && !state.includes(1)).toBe(false);
    expect(await other.next((m) => m.type === "MutationResponse")).toMatchObject({ success: true });
  });

  it("re-runs a shard's subscriptions when an invalidation listener throws, instead of losing the invalidation", async () => {
    const started = await startTestNode({ app: App.fromModule(shardedApp, "sharded test app"), numShards: 1 });
    cleanups.push(() => started.close());
    const { node } = started;
    const reader = await SocketClient.open(node.url);
    const writer = await SocketClient.open(node.url);
    cleanups.push(() => (reader.close(), writer.close()));
    reader.write({ type: "Connect", sessionId: "r" });
    writer.write({ type: "Connect", sessionId: "w" });
    reader.write({ type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "messages:byN", args: { order: "asc", take: 100 } }], remove: [] });
    await reader.next((m) => m.type === "Transition");

    // Make the handler's own matching throw once, as a bug or an unreadable record would.
    const handler = node.handler as unknown as { segmentApplied(segment: unknown): void };
    const original = handler.segmentApplied.bind(handler);
    let failures = 0;
    handler.segmentApplied = () => {
      failures++;
      handler.segmentApplied = original;
      throw new Error("injected failure of an invalidation listener");
    };
    writer.write({ type: "Mutation", requestId: 1, path: "messages:send", args: { channel: "a", n: 7, body: "x" } });
    expect(await writer.next((m) => m.type === "MutationResponse")).toMatchObject({ success: true });
    await reader.next((m) => m.type === "Transition" && m.modifications.some((mod) => mod.type === "QueryUpdated" && (mod.value as number[]).includes(7)));
    expect(failures).toBe(1);
  });
});
