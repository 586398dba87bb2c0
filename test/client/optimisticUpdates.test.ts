import { describe, expect, it } from "vitest";
import type { OptimisticLocalStore } from "../../src/client/OptimisticUpdates.js";
import { functionReference } from "../../src/client/api.js";
import type { Value } from "../../src/model/Value.js";
import { StateHarness, outcomeOf, recorder } from "./stateHarness.js";

/**
 * Scenario: a chat client subscribes to a channel's messages and sends messages with an
 * optimistic update that appends the message locally. The server's results arrive later;
 * the update must stay layered over them until its mutation is covered, or fails.
 */
const list = functionReference<"query", { channel: string }, string[]>("messages:list");

function appendMessage(store: OptimisticLocalStore, args: unknown): void {
  const { channel, body } = args as { channel: string; body: string };
  const current = store.getQuery(list, { channel });
  if (current !== undefined) store.setQuery(list, { channel }, [...current, body]);
}

function chat() {
  const client = new StateHarness();
  client.connectAt(1);
  const seen = recorder();
  client.subscribe("messages:list", { channel: "c" }, seen.listener);
  client.transition({ querySet: 1, ts: 1 }, { querySet: 2, ts: 2 }, [{ type: "QueryUpdated", queryId: 1, value: ["hi"], hash: "h1" }]);
  client.takeSent();
  const send = (body: string): Promise<Value> => client.mutate("messages:send", { channel: "c", body }, { update: appendMessage, args: { channel: "c", body } });
  return { client, seen, send };
}

describe("optimistic updates", () => {
  it("are visible at once and layered, in mutation order, over later server results", () => {
    const { client, seen, send } = chat();
    void send("one");
    void send("two");
    expect(seen.updates).toEqual([["hi"], ["hi", "one"], ["hi", "one", "two"]]);
    // Someone else's message arrives before ours commit: ours stay on top of it.
    client.transition({ querySet: 2, ts: 2 }, { querySet: 2, ts: 3 }, [{ type: "QueryUpdated", queryId: 1, value: ["hi", "other"], hash: "h2" }]);
    expect(seen.updates.at(-1)).toEqual(["hi", "other", "one", "two"]);
  });

  it("are dropped when a Transition covers the commit, the moment the promise resolves", async () => {
    const { client, seen, send } = chat();
    const one = send("one");
    client.receive({ type: "MutationResponse", requestId: 1, success: true, value: "id1", ts: 4 });
    expect(seen.updates.at(-1)).toEqual(["hi", "one"]);
    client.transition({ querySet: 2, ts: 2 }, { querySet: 2, ts: 3 }, [{ type: "QueryUpdated", queryId: 1, value: ["hi", "x"], hash: "h2" }]);
    expect(seen.updates.at(-1)).toEqual(["hi", "x", "one"]);
    expect(await outcomeOf(one)).toEqual({ state: "pending" });
    client.transition({ querySet: 2, ts: 3 }, { querySet: 2, ts: 4 }, [{ type: "QueryUpdated", queryId: 1, value: ["hi", "x", "one!"], hash: "h3" }]);
    expect(seen.updates.at(-1)).toEqual(["hi", "x", "one!"]);
    expect(await outcomeOf(one)).toEqual({ state: "resolved", value: "id1" });
  });

  it("are dropped when their mutation fails, and the others stay", async () => {
    const { client, seen, send } = chat();
    const one = send("one");
    void send("two");
    client.receive({ type: "MutationResponse", requestId: 1, success: false, error: { code: "FUNCTION_FAILED", kind: "InvalidInput", message: "no" } });
    expect(seen.updates.at(-1)).toEqual(["hi", "two"]);
    expect(await outcomeOf(one)).toMatchObject({ state: "rejected", error: { code: "FUNCTION_FAILED" } });
  });

  it("do not call listeners whose visible result they leave equal", () => {
    const { client, seen } = chat();
    void client.mutate("messages:send", {}, { update: (store) => store.setQuery(list, { channel: "c" }, ["hi"]), args: {} });
    expect(seen.updates).toEqual([["hi"]]);
  });

  it("report an update that throws and keep the results it did not touch", () => {
    const { client, seen } = chat();
    void client.mutate("messages:send", {}, { update: () => { throw new Error("bug in update"); }, args: {} });
    expect(client.errors).toMatchObject([{ message: "bug in update" }]);
    expect(seen.updates).toEqual([["hi"]]);
  });
});
