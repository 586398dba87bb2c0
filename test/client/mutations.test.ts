import { describe, expect, it } from "vitest";
import { SESSION_REQUESTS_IN_FLIGHT_MAX } from "../../src/base/limits.js";
import { MUTATION_RESEND_BACKOFF_BASE_MS, MUTATION_RESEND_BACKOFF_MAX_MS, MUTATION_RESENDS_MAX } from "../../src/client/limits.js";
import { StateHarness, outcomeOf, recorder } from "./stateHarness.js";

/**
 * Scenario: a connected client runs mutations; the server answers each with a
 * MutationResponse and then a Transition covering its commit ts. A mutation's promise
 * must wait for that Transition, so the caller sees its write in its subscriptions.
 */
describe("mutations", () => {
  it("sends requestId, path, encoded args and (clientId, seq) from 1", () => {
    const client = new StateHarness("client-x");
    client.connectAt(1);
    void client.mutate("counters:increment", { name: "a", by: undefined });
    void client.mutate("counters:increment", { name: "b", big: 2n });
    expect(client.takeSent()).toEqual([
      { type: "Mutation", requestId: 1, path: "counters:increment", args: { name: "a" }, clientId: "client-x", seq: 1 },
      { type: "Mutation", requestId: 2, path: "counters:increment", args: { name: "b", big: { $integer: "2" } }, clientId: "client-x", seq: 2 },
    ]);
  });

  it("resolves only once a Transition covers the commit ts, after the listeners saw the write", async () => {
    const client = new StateHarness();
    client.connectAt(1);
    const order: string[] = [];
    client.subscribe("counters:get", { name: "a" }, { onUpdate: (value) => order.push(`listener ${String(value)}`), onError: () => {} });
    const promise = client.mutate("counters:increment", { name: "a" });
    void promise.then((value) => order.push(`resolved ${String(value)}`));
    client.receive({ type: "MutationResponse", requestId: 1, success: true, value: { $integer: "1" }, ts: 10 });
    expect(await outcomeOf(promise)).toEqual({ state: "pending" });
    // A Transition short of ts 10 does not settle it.
    client.transition({ querySet: 2, ts: 1 }, { querySet: 2, ts: 9 }, []);
    client.takeResync();
    client.transition({ querySet: 1, ts: 1 }, { querySet: 2, ts: 9 }, [{ type: "QueryUpdated", queryId: 1, value: 0, hash: "h0" }]);
    expect(await outcomeOf(promise)).toEqual({ state: "pending" });
    client.transition({ querySet: 2, ts: 9 }, { querySet: 2, ts: 10 }, [{ type: "QueryUpdated", queryId: 1, value: 1, hash: "h1" }]);
    expect(await outcomeOf(promise)).toEqual({ state: "resolved", value: 1n });
    expect(order).toEqual(["listener 0", "listener 1", "resolved 1"]);
  });

  it("resolves at once when the version already covers the ts, and treats replayed as success", async () => {
    const client = new StateHarness();
    client.connectAt(20);
    const promise = client.mutate("counters:increment", { name: "a" });
    client.receive({ type: "MutationResponse", requestId: 1, success: true, value: 5, ts: 15, replayed: true });
    expect(await outcomeOf(promise)).toEqual({ state: "resolved", value: 5 });
  });

  it("rejects at once with the server's error, by MutationResponse or by ProtocolError", async () => {
    const client = new StateHarness();
    client.connectAt(1);
    const failed = client.mutate("messages:send", { body: "" });
    const refused = client.mutate("messages:send", { body: "x" });
    client.receive({ type: "MutationResponse", requestId: 1, success: false, error: { code: "FUNCTION_FAILED", kind: "InvalidInput", message: "a message needs a body" } });
    client.receive({ type: "ProtocolError", requestId: 2, error: { code: "SESSION_LIMIT_EXCEEDED", kind: "InvalidInput", message: "too many" } });
    expect(await outcomeOf(failed)).toMatchObject({ state: "rejected", error: { code: "FUNCTION_FAILED", message: "a message needs a body" } });
    expect(await outcomeOf(refused)).toMatchObject({ state: "rejected", error: { code: "SESSION_LIMIT_EXCEEDED" } });
    expect(client.errors).toEqual([]);
  });

  it("rejects with VALUE_INVALID a result that does not decode", async () => {
    const client = new StateHarness();
    client.connectAt(5);
    const promise = client.mutate("counters:increment", {});
    client.receive({ type: "MutationResponse", requestId: 1, success: true, value: { $float: "1.5" }, ts: 5 });
    expect(await outcomeOf(promise)).toMatchObject({ state: "rejected", error: { code: "VALUE_INVALID" } });
  });

  it("rejects arguments that are not values before sending anything", () => {
    const client = new StateHarness();
    client.connectAt(1);
    expect(() => client.mutate("counters:increment", { when: new Date() })).toThrow(/VALUE_INVALID|invalid value/);
    expect(client.takeSent()).toEqual([]);
  });

  it("reports a ProtocolError without a requestId through reportError", () => {
    const client = new StateHarness();
    client.connectAt(1);
    const listener = recorder();
    client.subscribe("counters:get", {}, listener.listener);
    client.receive({ type: "ProtocolError", error: { code: "PROTOCOL_INVALID", kind: "InvalidInput", message: "bad frame" } });
    expect(client.errors).toMatchObject([{ code: "PROTOCOL_INVALID", message: "bad frame" }]);
    expect(listener.errors).toEqual([]);
  });
});

describe("requests in flight", () => {
  it("keeps at most SESSION_REQUESTS_IN_FLIGHT_MAX on the wire and sends the rest, in order, as answers come", () => {
    const client = new StateHarness();
    client.connectAt(1);
    // Rejections are expected (one is failed below, the rest never answered).
    for (let index = 0; index < SESSION_REQUESTS_IN_FLIGHT_MAX; index++) client.mutate("counters:increment", { index }).catch(() => {});
    void client.act("mail:send", {});
    void client.mutate("counters:increment", { index: "last" });
    expect(client.takeSent()).toHaveLength(SESSION_REQUESTS_IN_FLIGHT_MAX);
    client.receive({ type: "MutationResponse", requestId: 1, success: true, value: null, ts: 2 });
    expect(client.takeSent()).toMatchObject([{ type: "Action", requestId: SESSION_REQUESTS_IN_FLIGHT_MAX + 1 }]);
    client.receive({ type: "MutationResponse", requestId: 2, success: false, error: { code: "FUNCTION_FAILED", kind: "InvalidInput", message: "no" } });
    expect(client.takeSent()).toMatchObject([{ type: "Mutation", requestId: SESSION_REQUESTS_IN_FLIGHT_MAX + 2, seq: SESSION_REQUESTS_IN_FLIGHT_MAX + 1 }]);
  });

  it("re-sends a mutation with an unknown outcome with the same seq after a growing backoff, and rejects once the re-sends run out", async () => {
    const client = new StateHarness("client-u");
    client.connectAt(1);
    const promise = client.mutate("counters:increment", { name: "a" });
    client.takeSent();
    const unknown = { code: "WRITER_UNAVAILABLE", kind: "Unavailable", message: "lost", details: { outcomeUnknown: true } };
    const delays: (number | null)[] = [];
    for (let resend = 1; resend <= MUTATION_RESENDS_MAX; resend++) {
      client.receive({ type: "MutationResponse", requestId: 1, success: false, error: unknown });
      expect(await outcomeOf(promise)).toEqual({ state: "pending" });
      expect(client.takeSent()).toEqual([]);
      delays.push(client.takeResendAfterMs());
      client.step((state) => state.resendBackedOff());
      expect(client.takeSent()).toEqual([{ type: "Mutation", requestId: 1, path: "counters:increment", args: { name: "a" }, clientId: "client-u", seq: 1 }]);
    }
    expect(delays.slice(0, 3)).toEqual([MUTATION_RESEND_BACKOFF_BASE_MS, 2 * MUTATION_RESEND_BACKOFF_BASE_MS, 4 * MUTATION_RESEND_BACKOFF_BASE_MS]);
    expect(Math.max(...(delays as number[]))).toBe(MUTATION_RESEND_BACKOFF_MAX_MS);
    client.receive({ type: "MutationResponse", requestId: 1, success: false, error: unknown });
    expect(await outcomeOf(promise)).toMatchObject({ state: "rejected", error: { code: "WRITER_UNAVAILABLE" } });
    // A definite failure is not re-sent, and the next mutation acknowledges the settled seq 1.
    const definite = client.mutate("counters:increment", { name: "b" });
    expect(client.takeSent()).toEqual([{ type: "Mutation", requestId: 2, path: "counters:increment", args: { name: "b" }, clientId: "client-u", seq: 2, ackedThrough: 1 }]);
    client.receive({ type: "MutationResponse", requestId: 2, success: false, error: { ...unknown, details: { outcomeUnknown: false } } });
    expect(await outcomeOf(definite)).toMatchObject({ state: "rejected" });
    expect(client.takeResendAfterMs()).toBeNull();
  });
});
