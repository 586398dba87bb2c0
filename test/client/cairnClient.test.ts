import { beforeEach, describe, expect, it } from "vitest";
import { functionReference } from "../../src/client/api.js";
import { CairnClient } from "../../src/client/CairnClient.js";
import type { ConnectionState } from "../../src/client/ConnectionLifecycle.js";
import type { Random } from "../../src/client/Random.js";
import type { WebSocketConstructor } from "../../src/client/WebSocketLike.js";
import { SeededRandom } from "../../src/base/random.js";
import { FakeSocket, ManualTimers } from "./fakeSocket.js";
import { outcomeOf } from "./stateHarness.js";

/**
 * Scenario: the WebSocket driver over a fake socket and hand-fired timers: it connects,
 * answers protocol trouble by reconnecting with backoff, runs one-shot queries, and
 * closes for good.
 */
const get = functionReference<"query", { name: string }, number>("counters:get");
const increment = functionReference<"mutation", { name: string }, number>("counters:increment");
const sendMail = functionReference<"action", { to: string }, null>("mail:send");

/** Random whose floats are fixed (jitter at its lowest) and whose bytes are seeded. */
function lowJitter(): Random {
  const seeded = new SeededRandom(7);
  return { bytes: (length) => seeded.bytes(length), float: () => 0 };
}

function newClient(errors: unknown[] = []) {
  const timers = new ManualTimers();
  const client = new CairnClient("ws://cairn.test/sync", {
    WebSocket: FakeSocket as WebSocketConstructor,
    timers,
    random: lowJitter(),
    onError: (error) => errors.push(error),
    reconnectBackoffBaseMs: 100,
    reconnectBackoffMaxMs: 1_000,
  });
  return { client, timers, errors };
}

beforeEach(() => {
  FakeSocket.created = [];
});

describe("CairnClient over a socket", () => {
  it("connects, reports its lifecycle, and reconnects with backoff after a drop", () => {
    const { client, timers } = newClient();
    const states: ConnectionState[] = [];
    client.onConnectionChange((state) => states.push(state));
    expect(client.connectionState).toEqual({ state: "connecting", attempt: 0, url: "ws://cairn.test/sync" });
    const first = FakeSocket.latest();
    expect(first.url).toBe("ws://cairn.test/sync");
    first.accept();
    first.dropByServer();
    expect(timers.delays()).toEqual([50]);
    timers.fireAll();
    const second = FakeSocket.latest();
    second.dropByServer(); // failed before ConnectAck: the backoff grows
    expect(timers.delays()).toEqual([100]);
    timers.fireAll();
    FakeSocket.latest().accept();
    expect(states.map((state) => state.state)).toEqual(["connected", "waitingToReconnect", "connecting", "waitingToReconnect", "connecting", "connected"]);
    // The second socket never opened, so it sent nothing; the two that did began with Connect.
    const connects = FakeSocket.created.map((socket) => socket.sent[0]);
    expect(connects.map((connect) => connect?.type)).toEqual(["Connect", undefined, "Connect"]);
    const [firstConnect, , thirdConnect] = connects as unknown as [{ clientId: string; sessionId: string }, undefined, { clientId: string; sessionId: string }];
    expect([firstConnect.clientId, thirdConnect.clientId]).toEqual([client.clientId, client.clientId]);
    expect(firstConnect.sessionId).not.toBe(thirdConnect.sessionId);
    expect(client.clientId).toMatch(/^[0-9a-f]{32}$/);
    client.close();
  });

  it("resyncs on a Transition that does not start at its version: closes the socket and reconnects", () => {
    const { client, timers } = newClient();
    const socket = FakeSocket.latest();
    socket.accept();
    socket.deliver({ type: "Transition", startVersion: { querySet: 5, ts: 1 }, endVersion: { querySet: 6, ts: 2 }, modifications: [] });
    expect(socket.closedWith).toBe(4000);
    expect(client.connectionState.state).toBe("waitingToReconnect");
    socket.dropByServer(); // the old socket's late close event is ignored
    expect(timers.pending.size).toBe(1);
    timers.fireAll();
    expect(FakeSocket.created).toHaveLength(2);
    client.close();
  });

  it("reports a frame that does not parse and resyncs", () => {
    const { client, errors } = newClient();
    const socket = FakeSocket.latest();
    socket.accept();
    socket.deliver("{not json");
    expect(errors).toMatchObject([{ code: "PROTOCOL_INVALID" }]);
    expect(socket.closedWith).toBe(4000);
    client.close();
  });

  it("answers a one-shot query with its first result and unsubscribes", async () => {
    const { client } = newClient();
    const socket = FakeSocket.latest();
    socket.accept();
    const answer = client.query(get, { name: "a" });
    const failed = client.query(get, { name: "b" });
    socket.deliver({
      type: "Transition",
      startVersion: { querySet: 0, ts: 0 },
      endVersion: { querySet: 3, ts: 4 },
      modifications: [
        { type: "QueryUpdated", queryId: 1, value: 41, hash: "h" },
        { type: "QueryFailed", queryId: 2, error: { code: "FUNCTION_FAILED", kind: "InvalidInput", message: "no" }, hash: "e" },
      ],
    });
    expect(await outcomeOf(answer)).toEqual({ state: "resolved", value: 41 });
    expect(await outcomeOf(failed)).toMatchObject({ state: "rejected", error: { code: "FUNCTION_FAILED" } });
    const removals = socket.sent.flatMap((frame) => (frame.type === "ModifyQuerySet" ? frame.remove : []));
    expect(removals.sort()).toEqual([1, 2]);
    client.close();
  });

  it("gives a held result to a new subscriber after subscribe returns, and reports a throwing listener", async () => {
    const { client, errors } = newClient();
    const socket = FakeSocket.latest();
    socket.accept();
    const seen: number[] = [];
    client.subscribe(get, { name: "a" }, () => {
      throw new Error("listener bug");
    });
    client.subscribe(get, { name: "a" }, (value) => seen.push(value));
    socket.deliver({ type: "Transition", startVersion: { querySet: 0, ts: 0 }, endVersion: { querySet: 2, ts: 1 }, modifications: [{ type: "QueryUpdated", queryId: 1, value: 3, hash: "h" }] });
    expect(seen).toEqual([3]);
    expect(errors).toMatchObject([{ message: "listener bug" }]);
    const late: number[] = [];
    client.subscribe(get, { name: "a" }, (value) => late.push(value));
    expect(late).toEqual([]);
    await Promise.resolve();
    expect(late).toEqual([3]);
    client.close();
  });

  it("close rejects every waiting call with CONNECTION_LOST and stops reconnecting", async () => {
    const { client, timers } = newClient();
    const socket = FakeSocket.latest();
    socket.accept();
    const query = client.query(get, { name: "a" });
    const mutation = client.mutation(increment, { name: "a" });
    const action = client.action(sendMail, { to: "x" });
    client.close();
    for (const promise of [query, mutation, action]) expect(await outcomeOf(promise)).toMatchObject({ state: "rejected", error: { code: "CONNECTION_LOST" } });
    expect(socket.closedWith).toBe(1000);
    expect(client.connectionState).toEqual({ state: "closed" });
    socket.dropByServer();
    expect(timers.pending.size).toBe(0);
    expect(await outcomeOf(client.mutation(increment, { name: "a" }))).toMatchObject({ state: "rejected", error: { code: "CONNECTION_LOST" } });
  });

  it("rejects a second optimistic update and arguments that are not values", async () => {
    const { client } = newClient();
    const once = client.mutation(increment).withOptimisticUpdate(() => {});
    expect(() => once.withOptimisticUpdate(() => {})).toThrow(/already has an optimistic update/);
    expect(await outcomeOf(client.mutation(increment, { name: Symbol("x") as unknown as string }))).toMatchObject({ state: "rejected", error: { code: "VALUE_INVALID" } });
    client.close();
  });

  it("needs a ws:// URL and a WebSocket class (Node 20 has no global one)", () => {
    expect(() => new CairnClient("http://x", { WebSocket: FakeSocket as WebSocketConstructor })).toThrow(/ws:\/\/ or wss:\/\//);
    expect(() => new CairnClient("not a url", { WebSocket: FakeSocket as WebSocketConstructor })).toThrow(/not a URL/);
    if (!("WebSocket" in globalThis)) expect(() => new CairnClient("ws://x")).toThrow(/createNodeClient/);
  });
});
