/**
 * Scenario: a client given several node URLs, over fake sockets and hand-fired timers.
 * It starts on a URL drawn through its Random, and after every failure — a socket that
 * never opens (a refused upgrade), a session the node ends (REPLICA_BEHIND, a stopping
 * server), a dropped connection — tries the next URL of its list, round robin, so a URL
 * that refused is not tried again before the others; the backoff grows once per cycle
 * through the list. On the next node it resumes: the Connect carries the ts it saw on the
 * last one, then its query set and its unanswered mutations go out with their original
 * (clientId, seq). A bad list (empty, a URL that is not ws:// or wss://, one listed twice)
 * is refused at construction with INVALID_ARGUMENT.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { SeededRandom } from "../../src/base/random.js";
import { functionReference } from "../../src/client/api.js";
import { CairnClient } from "../../src/client/CairnClient.js";
import type { ConnectionState } from "../../src/client/ConnectionLifecycle.js";
import { createNodeClient } from "../../src/client/node.js";
import { checkNodeUrls } from "../../src/client/NodeUrls.js";
import type { Random } from "../../src/client/Random.js";
import type { WebSocketConstructor } from "../../src/client/WebSocketLike.js";
import { CLOSE_CODES } from "../../src/sync/protocol.js";
import { FakeSocket, ManualTimers } from "./fakeSocket.js";
import { outcomeOf } from "./stateHarness.js";

const get = functionReference<"query", { name: string }, number>("counters:get");
const increment = functionReference<"mutation", { name: string }, number>("counters:increment");

const URLS = ["ws://a.test/api/sync", "ws://b.test/api/sync", "ws://c.test/api/sync"] as const;
const [A, B, C] = URLS;

/** Random whose first float is `first` (it picks the starting URL) and the rest 0 (jitter at its lowest); bytes seeded. */
function randomStartingWith(first: number): Random {
  const seeded = new SeededRandom(11);
  const floats = [first];
  return { bytes: (length) => seeded.bytes(length), float: () => floats.shift() ?? 0 };
}

function newClient(urls: string | readonly string[], firstFloat = 0) {
  const timers = new ManualTimers();
  const errors: unknown[] = [];
  const client = new CairnClient(urls, {
    WebSocket: FakeSocket as WebSocketConstructor,
    timers,
    random: randomStartingWith(firstFloat),
    onError: (error) => errors.push(error),
    reconnectBackoffBaseMs: 100,
    reconnectBackoffMaxMs: 1_000,
  });
  const states: ConnectionState[] = [];
  client.onConnectionChange((state) => states.push(state));
  return { client, timers, errors, states };
}

/** Fails the latest socket before it opens (a refused upgrade looks so to a browser), then fires the retry timer; the wait it had. */
function refuseAndRetry(timers: ManualTimers): number {
  FakeSocket.latest().dropByServer();
  const [delayMs] = timers.delays();
  timers.fireAll();
  return delayMs!;
}

beforeEach(() => {
  FakeSocket.created = [];
});

describe("a client of several nodes", () => {
  it("starts on the URL its Random draws, so clients spread over the list", () => {
    const starts = [0, 0.34, 0.67, 0.999999].map((first) => {
      const { client } = newClient(URLS, first);
      const url = FakeSocket.latest().url;
      expect(client.connectionState).toEqual({ state: "connecting", attempt: 0, url });
      client.close();
      return url;
    });
    expect(starts).toEqual([A, B, C, C]);
  });

  it("tries the next URL after each failure, round robin, backing off once per cycle through the list", () => {
    const { client, timers } = newClient(URLS, 0.5); // starts on b
    const delays = [refuseAndRetry(timers), refuseAndRetry(timers), refuseAndRetry(timers), refuseAndRetry(timers), refuseAndRetry(timers), refuseAndRetry(timers)];
    expect(FakeSocket.created.map((socket) => socket.url)).toEqual([B, C, A, B, C, A, B]);
    // Base 100 ms at the lowest jitter: 50 ms for each URL of the first cycle, 100 for the second, 200 for the third.
    expect(delays).toEqual([50, 50, 50, 100, 100, 100]);
    FakeSocket.latest().accept();
    expect(client.connectionState).toEqual({ state: "connected", url: B });
    client.close();
  });

  it("moves on from a node that ends the session (REPLICA_BEHIND, stopping) or drops it, never back to it next", () => {
    const { client, timers, errors, states } = newClient(URLS, 0); // starts on a
    FakeSocket.latest().accept(5);
    // a is stopping: FatalError SERVER_STOPPING, close 1001.
    FakeSocket.latest().deliver({ type: "FatalError", error: { code: "SERVER_STOPPING", kind: "Unavailable", message: "the server is stopping; reconnect" } });
    expect(client.connectionState).toMatchObject({ state: "waitingToReconnect", url: B });
    timers.fireAll();
    // b is behind the ts the client saw on a: it ends the session with REPLICA_BEHIND.
    const onB = FakeSocket.latest();
    onB.open();
    expect(onB.sent[0]).toMatchObject({ type: "Connect", maxObservedTs: 5 });
    onB.deliver({ type: "FatalError", error: { code: "REPLICA_BEHIND", kind: "Unavailable", message: "behind" } });
    onB.onclose?.({ code: CLOSE_CODES.behind, reason: "" });
    timers.fireAll();
    // c takes the session, and later drops it: the next attempt is a again.
    FakeSocket.latest().accept(6);
    FakeSocket.latest().dropByServer();
    expect(client.connectionState).toMatchObject({ state: "waitingToReconnect", attempt: 0, url: A });
    expect(FakeSocket.created.map((socket) => socket.url)).toEqual([A, B, C]);
    expect(errors).toMatchObject([{ code: "SERVER_STOPPING" }, { code: "REPLICA_BEHIND" }]);
    expect(states.map((state) => (state.state === "closed" ? "closed" : `${state.state} ${state.url}`))).toEqual([
      `connected ${A}`,
      `waitingToReconnect ${B}`,
      `connecting ${B}`,
      `waitingToReconnect ${C}`,
      `connecting ${C}`,
      `connected ${C}`,
      `waitingToReconnect ${A}`,
    ]);
    client.close();
  });

  it("resumes on the next node: the ts it saw, its query set with result hashes, its unanswered mutations with their (clientId, seq)", async () => {
    const { client, timers } = newClient([A, B], 0);
    const onA = FakeSocket.latest();
    onA.accept(3);
    const seen: number[] = [];
    client.subscribe(get, { name: "x" }, (value) => seen.push(value));
    onA.deliver({ type: "Transition", startVersion: { querySet: 0, ts: 0 }, endVersion: { querySet: 1, ts: 7 }, modifications: [{ type: "QueryUpdated", queryId: 1, value: 1, hash: "h1" }] });
    const inFlight = client.mutation(increment, { name: "x" });
    const sentOnA = onA.sent.find((frame) => frame.type === "Mutation");
    expect(sentOnA).toMatchObject({ clientId: client.clientId, seq: 1 });
    onA.dropByServer(); // a dies with the mutation unanswered
    const madeWhileAway = client.mutation(increment, { name: "x" });
    timers.fireAll();
    const onB = FakeSocket.latest();
    expect(onB.url).toBe(B);
    onB.open();
    expect(onB.sent[0]).toMatchObject({ type: "Connect", clientId: client.clientId, held: [1], ackedThrough: 0, maxObservedTs: 7 });
    onB.deliver({ type: "ConnectAck", deploymentId: "d", sessionId: (onB.sent[0] as { sessionId: string }).sessionId, known: [], results: [], ts: 7 });
    expect(onB.sent.slice(1)).toEqual([
      { type: "ModifyQuerySet", baseVersion: 0, newVersion: 1, add: [{ queryId: 1, path: "counters:get", args: { name: "x" }, resultHash: "h1" }], remove: [] },
      { type: "Mutation", requestId: 1, path: "counters:increment", args: { name: "x" }, clientId: client.clientId, seq: 1 },
      { type: "Mutation", requestId: 2, path: "counters:increment", args: { name: "x" }, clientId: client.clientId, seq: 2 },
    ]);
    onB.deliver({ type: "MutationResponse", requestId: 1, success: true, value: 2, ts: 8 });
    onB.deliver({ type: "MutationResponse", requestId: 2, success: true, value: 3, ts: 9 });
    onB.deliver({ type: "Transition", startVersion: { querySet: 0, ts: 0 }, endVersion: { querySet: 1, ts: 9 }, modifications: [{ type: "QueryUpdated", queryId: 1, value: 3, hash: "h3" }] });
    expect(await outcomeOf(inFlight)).toEqual({ state: "resolved", value: 2 });
    expect(await outcomeOf(madeWhileAway)).toEqual({ state: "resolved", value: 3 });
    expect(seen).toEqual([1, 3]);
    expect(client.connectionState).toEqual({ state: "connected", url: B });
    client.close();
  });

  it("keeps one URL as before: every attempt to it, the backoff growing per attempt", () => {
    const { client, timers } = newClient(A);
    const delays = [refuseAndRetry(timers), refuseAndRetry(timers), refuseAndRetry(timers)];
    expect(FakeSocket.created.map((socket) => socket.url)).toEqual([A, A, A, A]);
    expect(delays).toEqual([50, 100, 200]);
    expect(client.nodeUrls).toEqual([A]);
    client.close();
  });
});

describe("the URL list", () => {
  const WebSocket = FakeSocket as WebSocketConstructor;
  const refused = (urls: unknown) => {
    try {
      new CairnClient(urls as string[], { WebSocket });
    } catch (error) {
      return error;
    }
    throw new Error(`accepted ${JSON.stringify(urls)}`);
  };

  it("refuses an empty list, a URL that is not ws:// or wss://, a fragment, and a URL listed twice, with INVALID_ARGUMENT", () => {
    expect(refused([])).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/at least one URL/) });
    expect(refused([A, "http://b.test/"])).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/ws:\/\/ or wss:\/\/, not http:\/\/ \(the sync endpoint: ws:\/\/b\.test\/api\/sync\)/) });
    expect(refused(["https://b.test"])).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/wss:\/\/b\.test\/api\/sync/) });
    expect(refused(["ftp://b.test"])).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/not ftp:\/\//) });
    expect(refused([A, "b.test:80"])).toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(refused(["not a url"])).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/not a URL/) });
    expect(refused([`${A}#x`])).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/fragment/) });
    expect(refused([A, 7])).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/a URL is a string/) });
    expect(refused([A, B, A])).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/listed twice/) });
    // The same URL spelled differently (host case, the default port) is the same node.
    expect(refused(["ws://a.test/api/sync", "WS://A.TEST:80/api/sync"])).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/listed twice/) });
    expect(FakeSocket.created).toEqual([]);
  });

  it("accepts one URL or a list, as given; the Node entry too", () => {
    expect(checkNodeUrls(A)).toEqual([A]);
    expect(checkNodeUrls([B, A, "wss://c.test:8443/api/sync"])).toEqual([B, A, "wss://c.test:8443/api/sync"]);
    // Two nodes on one host differ by port or path.
    expect(checkNodeUrls(["ws://h.test:1/api/sync", "ws://h.test:2/api/sync"])).toHaveLength(2);
    expect(() => createNodeClient([])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => createNodeClient([A, A])).toThrow(/listed twice/);
  });
});
