import { describe, expect, it } from "vitest";
import type { Value } from "../../src/model/Value.js";
import { StateHarness, frameOfType, outcomeOf } from "./stateHarness.js";

/**
 * Scenario: a connected client runs actions, sets its token and talks over broadcast
 * topics, and its connection drops in the middle.
 */
describe("actions", () => {
  it("resolve with the decoded value, reject with the server's error", async () => {
    const client = new StateHarness();
    client.connectAt(1);
    const ok = client.act("mail:send", { to: "x" });
    const failed = client.act("mail:send", {});
    expect(frameOfType(client.takeSent(), "Action")).toEqual([
      { type: "Action", requestId: 1, path: "mail:send", args: { to: "x" } },
      { type: "Action", requestId: 2, path: "mail:send", args: {} },
    ]);
    client.receive({ type: "ActionResponse", requestId: 1, success: true, value: { $bytes: "AQI=" } });
    client.receive({ type: "ActionResponse", requestId: 2, success: false, error: { code: "FUNCTION_FAILED", kind: "InvalidInput", message: "no" } });
    expect(await outcomeOf(ok)).toEqual({ state: "resolved", value: new Uint8Array([1, 2]) });
    expect(await outcomeOf(failed)).toMatchObject({ state: "rejected", error: { code: "FUNCTION_FAILED" } });
  });

  it("in flight when the connection drops reject with CONNECTION_LOST and are not re-sent", async () => {
    const client = new StateHarness();
    client.connectAt(1);
    const lost = client.act("mail:send", {});
    client.lose();
    const later = client.act("mail:send", { n: 2 });
    expect(await outcomeOf(lost)).toMatchObject({ state: "rejected", error: { code: "CONNECTION_LOST", kind: "Unavailable" } });
    client.connect();
    // Only the action made while disconnected goes out, after the ConnectAck.
    expect(frameOfType(client.takeSent(), "Action")).toEqual([{ type: "Action", requestId: 2, path: "mail:send", args: { n: 2 } }]);
    expect(await outcomeOf(later)).toEqual({ state: "pending" });
  });
});

describe("auth", () => {
  it("resolves with the subject, rejects a refused token, and pairs answers with SetAuths in order", async () => {
    const client = new StateHarness();
    client.connectAt(1);
    const accepted = client.step((state) => state.setAuth("good"));
    const refused = client.step((state) => state.setAuth("bad"));
    expect(client.takeSent()).toEqual([
      { type: "SetAuth", token: "good" },
      { type: "SetAuth", token: "bad" },
    ]);
    client.receive({ type: "AuthResponse", success: true, subject: "alice" });
    client.receive({ type: "AuthResponse", success: false, subject: null, error: { code: "UNAUTHENTICATED", kind: "InvalidInput", message: "bad signature" } });
    expect(await outcomeOf(accepted)).toEqual({ state: "resolved", value: "alice" });
    expect(await outcomeOf(refused)).toMatchObject({ state: "rejected", error: { code: "UNAUTHENTICATED", message: "bad signature" } });
    // The server's session went anonymous with the refusal: the refused token is not re-sent.
    client.lose();
    client.connect();
    expect(frameOfType(client.takeSent(), "SetAuth")).toEqual([]);
  });

  it("re-sends the token right after each ConnectAck, and reports a refusal nobody awaits", async () => {
    const client = new StateHarness();
    client.connectAt(1);
    const accepted = client.step((state) => state.setAuth("t1"));
    client.receive({ type: "AuthResponse", success: true, subject: "alice" });
    expect(await outcomeOf(accepted)).toEqual({ state: "resolved", value: "alice" });
    client.lose();
    client.connect();
    expect(client.takeSent()[0]).toEqual({ type: "SetAuth", token: "t1" });
    client.receive({ type: "AuthResponse", success: false, subject: null, error: { code: "UNAUTHENTICATED", kind: "InvalidInput", message: "expired" } });
    expect(client.errors).toMatchObject([{ code: "UNAUTHENTICATED", message: "expired" }]);
    client.lose();
    client.connect();
    expect(frameOfType(client.takeSent(), "SetAuth")).toEqual([]);
  });

  it("forgets an expired token without taking the answer of a SetAuth in flight", async () => {
    const client = new StateHarness();
    client.connectAt(1);
    const first = client.step((state) => state.setAuth("t1"));
    client.receive({ type: "AuthResponse", success: true, subject: "alice" });
    await outcomeOf(first);
    const second = client.step((state) => state.setAuth("t2"));
    client.receive({ type: "AuthExpired", error: { code: "UNAUTHENTICATED", kind: "InvalidInput", message: "the session's token expired" } });
    expect(client.errors).toMatchObject([{ code: "UNAUTHENTICATED" }]);
    client.receive({ type: "AuthResponse", success: true, subject: "bob" });
    expect(await outcomeOf(second)).toEqual({ state: "resolved", value: "bob" });
  });

  it("answers a call whose SetAuth was lost with the reconnect's SetAuth", async () => {
    const client = new StateHarness();
    client.connectAt(1);
    const pending = client.step((state) => state.setAuth("t1"));
    client.lose();
    client.connect();
    expect(client.takeSent()[0]).toEqual({ type: "SetAuth", token: "t1" });
    client.receive({ type: "AuthResponse", success: true, subject: "bob" });
    expect(await outcomeOf(pending)).toEqual({ state: "resolved", value: "bob" });
  });

  it("sends no SetAuth after a reconnect when anonymous, and refuses an empty token", async () => {
    const client = new StateHarness();
    client.connectAt(1);
    const anonymous = client.step((state) => state.setAuth(null));
    client.lose();
    client.connect();
    expect(frameOfType(client.takeSent(), "SetAuth")).toEqual([]);
    expect(await outcomeOf(anonymous)).toEqual({ state: "resolved", value: null });
    expect(await outcomeOf(client.step((state) => state.setAuth("")))).toMatchObject({ state: "rejected", error: { code: "INVALID_ARGUMENT" } });
  });
});

describe("broadcasts", () => {
  it("add a topic with its first listener, remove it with its last, and deliver decoded events", () => {
    const client = new StateHarness();
    client.connectAt(1);
    const heard: [string, Value][] = [];
    const first = client.step((state) => state.addBroadcastListener("typing", (event) => heard.push(["first", event])));
    const second = client.step((state) => state.addBroadcastListener("typing", (event) => heard.push(["second", event])));
    expect(client.takeSent()).toEqual([{ type: "ModifyTopics", add: ["typing"], remove: [] }]);
    client.receive({ type: "Broadcast", topic: "typing", event: { who: "alice", at: { $integer: "3" } } });
    client.receive({ type: "Broadcast", topic: "other", event: 1 });
    expect(heard).toEqual([
      ["first", { who: "alice", at: 3n }],
      ["second", { who: "alice", at: 3n }],
    ]);
    client.step((state) => state.removeBroadcastListener(first));
    expect(client.takeSent()).toEqual([]);
    client.step((state) => state.removeBroadcastListener(second));
    expect(client.takeSent()).toEqual([{ type: "ModifyTopics", add: [], remove: ["typing"] }]);
  });

  it("publish while connected only, and refuse a topic the protocol would", () => {
    const client = new StateHarness();
    client.connectAt(1);
    client.step((state) => state.publish("typing", { who: "bob" }));
    expect(client.takeSent()).toEqual([{ type: "Publish", topic: "typing", event: { who: "bob" } }]);
    client.lose();
    client.step((state) => state.publish("typing", 1));
    expect(client.takeSent()).toEqual([]);
    expect(() => client.step((state) => state.publish("", 1))).toThrow(/topic/);
  });
});

describe("server errors and closing", () => {
  it("a FatalError is reported and asks for a resync", () => {
    const client = new StateHarness();
    client.connectAt(1);
    client.receive({ type: "FatalError", error: { code: "SESSION_OVERLOADED", kind: "Unavailable", message: "slow" } });
    expect(client.errors).toMatchObject([{ code: "SESSION_OVERLOADED" }]);
    expect(client.takeResync()).toMatch(/slow/);
  });

  it("close rejects what waits with CONNECTION_LOST and resolves what committed", async () => {
    const client = new StateHarness();
    client.connectAt(1);
    const committed = client.mutate("counters:increment", {});
    const unanswered = client.mutate("counters:increment", {});
    const action = client.act("mail:send", {});
    const auth = client.step((state) => state.setAuth("t"));
    client.receive({ type: "MutationResponse", requestId: 1, success: true, value: 1, ts: 9 });
    client.step((state) => state.close());
    expect(await outcomeOf(committed)).toEqual({ state: "resolved", value: 1 });
    for (const promise of [unanswered, action, auth]) expect(await outcomeOf(promise)).toMatchObject({ state: "rejected", error: { code: "CONNECTION_LOST" } });
    expect(await outcomeOf(client.mutate("counters:increment", {}))).toMatchObject({ state: "rejected", error: { code: "CONNECTION_LOST" } });
  });
});
