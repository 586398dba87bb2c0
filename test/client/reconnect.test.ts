import { describe, expect, it } from "vitest";
import { StateHarness, frameOfType, outcomeOf, recorder } from "./stateHarness.js";

/**
 * Scenario: a client with subscriptions (some with results), a token, broadcast topics
 * and mutations in every stage loses its connection and connects again. The new session
 * must be rebuilt in order, with result hashes and the mutations' original (clientId, seq).
 */
describe("reconnect", () => {
  function busyClient() {
    const client = new StateHarness("client-r");
    client.connectAt(3);
    const counter = recorder();
    client.subscribe("counters:get", { name: "a" }, counter.listener);
    client.subscribe("messages:list", { channel: "c" });
    void client.step((state) => state.setAuth("token-1"));
    client.step((state) => state.addBroadcastListener("typing", () => {}));
    client.transition({ querySet: 1, ts: 3 }, { querySet: 3, ts: 4 }, [{ type: "QueryUpdated", queryId: 1, value: 1, hash: "hash-a" }]);
    client.receive({ type: "AuthResponse", success: true, subject: "user-1" });
    const answered = client.mutate("counters:increment", { name: "a" }); // seq 1, answered and covered below
    const inFlight = client.mutate("counters:increment", { name: "b" }); // seq 2, never answered
    client.receive({ type: "MutationResponse", requestId: 1, success: true, value: 2, ts: 5 });
    client.transition({ querySet: 3, ts: 4 }, { querySet: 3, ts: 5 }, [{ type: "QueryUpdated", queryId: 1, value: 2, hash: "hash-a2" }]);
    client.takeSent();
    return { client, counter, answered, inFlight };
  }

  it("sends Connect with held seqs, ackedThrough and maxObservedTs, then auth, topics, query set and mutations", async () => {
    const { client, answered } = busyClient();
    expect(await outcomeOf(answered)).toEqual({ state: "resolved", value: 2 });
    client.lose();
    const lateMutation = client.mutate("counters:increment", { name: "c" }); // seq 3, made while disconnected
    expect(client.takeSent()).toEqual([]);
    const connect = client.connect({ ts: 7 });
    expect(connect).toMatchObject({ type: "Connect", clientId: "client-r", held: [2], ackedThrough: 1, maxObservedTs: 5 });
    expect(client.takeSent()).toEqual([
      { type: "SetAuth", token: "token-1" },
      { type: "ModifyTopics", add: ["typing"], remove: [] },
      {
        type: "ModifyQuerySet",
        baseVersion: 0,
        newVersion: 1,
        add: [
          { queryId: 1, path: "counters:get", args: { name: "a" }, resultHash: "hash-a2" },
          { queryId: 2, path: "messages:list", args: { channel: "c" } },
        ],
        remove: [],
      },
      // Each carries ackedThrough: seq 1 is answered, so the server may prune its receipt.
      { type: "Mutation", requestId: 2, path: "counters:increment", args: { name: "b" }, clientId: "client-r", seq: 2, ackedThrough: 1 },
      { type: "Mutation", requestId: 3, path: "counters:increment", args: { name: "c" }, clientId: "client-r", seq: 3, ackedThrough: 1 },
    ]);
    expect(await outcomeOf(lateMutation)).toEqual({ state: "pending" });
  });

  it("uses a fresh sessionId per connection and starts each at version {0, 0}", () => {
    const { client } = busyClient();
    client.lose();
    const second = client.connect();
    client.lose();
    const third = client.connect();
    expect(second.sessionId).not.toEqual(third.sessionId);
    client.transition({ querySet: 3, ts: 5 }, { querySet: 1, ts: 6 }, []);
    expect(client.takeResync()).not.toBeNull();
    client.lose();
    client.connect();
    client.transition({ querySet: 0, ts: 0 }, { querySet: 1, ts: 6 }, []);
    expect(client.takeResync()).toBeNull();
  });

  it("keeps the value held when the server answers QueryUnchanged, without calling listeners", () => {
    const { client, counter } = busyClient();
    client.lose();
    client.connect();
    client.transition({ querySet: 0, ts: 0 }, { querySet: 1, ts: 6 }, [{ type: "QueryUnchanged", queryId: 1, hash: "hash-a2" }]);
    expect(counter.updates).toEqual([1, 2]);
    // The value is still there: a new listener of the same query gets it.
    const late = recorder();
    client.subscribe("counters:get", { name: "a" }, late.listener);
    client.step((state) => state.notifyListeners());
    expect(late.updates).toEqual([2]);
  });

  it("settles mutations the ConnectAck knows from their receipts without re-sending them", async () => {
    const { client, inFlight } = busyClient();
    client.lose();
    client.connect({ known: [2], results: [{ seq: 2, value: 9, ts: 8 }], ts: 8 });
    expect(frameOfType(client.takeSent(), "Mutation")).toEqual([]);
    expect(await outcomeOf(inFlight)).toEqual({ state: "pending" });
    client.transition({ querySet: 0, ts: 0 }, { querySet: 1, ts: 8 }, []);
    expect(await outcomeOf(inFlight)).toEqual({ state: "resolved", value: 9 });
    // Answered now: the next Connect holds nothing and acknowledges through seq 2.
    client.lose();
    expect(client.connect()).toMatchObject({ held: [], ackedThrough: 2, maxObservedTs: 8 });
  });

  it("re-sends a known seq whose result the ConnectAck lacks", () => {
    const { client } = busyClient();
    client.lose();
    client.connect({ known: [2], results: [] });
    expect(frameOfType(client.takeSent(), "Mutation").map((frame) => frame.seq)).toEqual([2]);
  });

  it("sends nothing between Connect and ConnectAck, and everything asked meanwhile after it", () => {
    const { client } = busyClient();
    client.lose();
    client.step((state) => state.connectionOpened("s"));
    client.takeSent();
    client.subscribe("counters:get", { name: "z" });
    void client.mutate("counters:increment", { name: "z" });
    client.step((state) => state.publish("typing", "dropped"));
    expect(client.takeSent()).toEqual([]);
    client.receive({ type: "ConnectAck", deploymentId: "d", sessionId: "s", known: [], results: [], ts: 0 });
    const sent = client.takeSent();
    expect(frameOfType(sent, "ModifyQuerySet")[0]?.add.map((add) => add.queryId)).toEqual([1, 2, 3]);
    expect(frameOfType(sent, "Mutation").map((frame) => frame.seq)).toEqual([2, 3]);
    expect(frameOfType(sent, "Publish")).toEqual([]);
  });
});
