import { describe, expect, it } from "vitest";
import { MESSAGE_BYTES_MAX } from "../../src/base/index.js";
import { StateHarness, frameOfType, recorder } from "./stateHarness.js";

/**
 * Scenario: a client subscribes to queries, some with equal arguments, while connected;
 * the server answers with Transitions. Checks deduplication, reference counting, the
 * ModifyQuerySet version chain and how each kind of modification reaches listeners.
 */
describe("query set", () => {
  it("shares one queryId per (path, args text) and removes it with its last listener", () => {
    const client = new StateHarness();
    client.connectAt(5);
    const first = client.subscribe("messages:list", { channel: "a" });
    const second = client.subscribe("messages:list", { channel: "a" });
    const other = client.subscribe("messages:list", { channel: "b" });
    expect(client.takeSent()).toEqual([
      { type: "ModifyQuerySet", baseVersion: 1, newVersion: 2, add: [{ queryId: 1, path: "messages:list", args: { channel: "a" } }], remove: [] },
      { type: "ModifyQuerySet", baseVersion: 2, newVersion: 3, add: [{ queryId: 2, path: "messages:list", args: { channel: "b" } }], remove: [] },
    ]);
    client.step((state) => state.unsubscribe(first));
    expect(client.takeSent()).toEqual([]);
    client.step((state) => state.unsubscribe(second));
    client.step((state) => state.unsubscribe(second)); // twice is once
    expect(client.takeSent()).toEqual([{ type: "ModifyQuerySet", baseVersion: 3, newVersion: 4, add: [], remove: [1] }]);
    // The same pair subscribed again is a new query with a new id.
    client.subscribe("messages:list", { channel: "a" });
    expect(frameOfType(client.takeSent(), "ModifyQuerySet")[0]?.add).toEqual([{ queryId: 3, path: "messages:list", args: { channel: "a" } }]);
    expect(other.active).toBe(true);
  });

  it("tells arguments apart by their encoded text: field order and undefined fields", () => {
    const client = new StateHarness();
    client.connectAt(1);
    client.subscribe("messages:list", { channel: "a", limit: 5 });
    client.subscribe("messages:list", { channel: "a", limit: 5, cursor: undefined });
    client.subscribe("messages:list", { limit: 5, channel: "a" });
    client.subscribe("counters:get", { n: 1n });
    const adds = frameOfType(client.takeSent(), "ModifyQuerySet").flatMap((frame) => frame.add);
    expect(adds.map((add) => add.args)).toEqual([{ channel: "a", limit: 5 }, { limit: 5, channel: "a" }, { n: { $integer: "1" } }]);
  });

  it("applies a Transition that starts at the client's version and fires changed listeners only", () => {
    const client = new StateHarness();
    client.connectAt(5);
    const a = recorder();
    const b = recorder();
    client.subscribe("counters:get", { name: "a" }, a.listener);
    client.subscribe("counters:get", { name: "b" }, b.listener);
    client.takeSent();
    client.transition({ querySet: 1, ts: 5 }, { querySet: 3, ts: 6 }, [
      { type: "QueryUpdated", queryId: 1, value: 1, hash: "h1" },
      { type: "QueryUpdated", queryId: 2, value: { $integer: "7" }, hash: "h2" },
    ]);
    expect(a.updates).toEqual([1]);
    expect(b.updates).toEqual([7n]);
    // Query 2 re-sent with an equal value and query 1 unchanged: nobody hears of it.
    client.transition({ querySet: 3, ts: 6 }, { querySet: 3, ts: 7 }, [
      { type: "QueryUnchanged", queryId: 1, hash: "h1" },
      { type: "QueryUpdated", queryId: 2, value: { $integer: "7" }, hash: "h2" },
    ]);
    client.transition({ querySet: 3, ts: 7 }, { querySet: 3, ts: 8 }, [{ type: "QueryUpdated", queryId: 1, value: 2, hash: "h3" }]);
    expect(a.updates).toEqual([1, 2]);
    expect(b.updates).toEqual([7n]);
    expect(client.takeResync()).toBeNull();
  });

  it("asks for a resync when a Transition does not start exactly at the client's version", () => {
    for (const startVersion of [
      { querySet: 1, ts: 4 },
      { querySet: 0, ts: 5 },
    ]) {
      const client = new StateHarness();
      client.connectAt(5);
      const listener = recorder();
      client.subscribe("counters:get", { name: "a" }, listener.listener);
      client.transition(startVersion, { querySet: 2, ts: 6 }, [{ type: "QueryUpdated", queryId: 1, value: 1, hash: "h" }]);
      expect(client.takeResync()).toMatch(/does not start at/);
      expect(listener.updates).toEqual([]);
    }
  });

  it("reports a failed query to its listeners' onError and recovers on the next value", () => {
    const client = new StateHarness();
    client.connectAt(1);
    const listener = recorder();
    client.subscribe("counters:get", { name: "a" }, listener.listener);
    client.transition({ querySet: 1, ts: 1 }, { querySet: 2, ts: 2 }, [
      { type: "QueryFailed", queryId: 1, error: { code: "FUNCTION_FAILED", kind: "InvalidInput", message: "boom" }, hash: "e1" },
    ]);
    expect(listener.errors).toMatchObject([{ code: "FUNCTION_FAILED", message: "boom" }]);
    client.transition({ querySet: 2, ts: 2 }, { querySet: 2, ts: 3 }, [{ type: "QueryUpdated", queryId: 1, value: 3, hash: "h" }]);
    expect(listener.updates).toEqual([3]);
  });

  it("turns a value that does not decode into the query's error", () => {
    const client = new StateHarness();
    client.connectAt(1);
    const listener = recorder();
    client.subscribe("counters:get", { name: "a" }, listener.listener);
    client.transition({ querySet: 1, ts: 1 }, { querySet: 2, ts: 2 }, [{ type: "QueryUpdated", queryId: 1, value: { $bytes: "!" }, hash: "h" }]);
    expect(listener.errors).toMatchObject([{ code: "VALUE_INVALID" }]);
  });

  it("never calls a listener before its query has a result; a later listener gets the result held", () => {
    const client = new StateHarness();
    client.connectAt(1);
    const first = recorder();
    client.subscribe("counters:get", { name: "a" }, first.listener);
    client.step((state) => state.notifyListeners());
    expect(first.updates).toEqual([]);
    client.transition({ querySet: 1, ts: 1 }, { querySet: 2, ts: 2 }, [{ type: "QueryUpdated", queryId: 1, value: 9, hash: "h" }]);
    const second = recorder();
    client.subscribe("counters:get", { name: "a" }, second.listener);
    client.step((state) => state.notifyListeners());
    expect(second.updates).toEqual([9]);
    expect(first.updates).toEqual([9]);
  });

  it("forgets a result on QueryRemoved and ignores modifications of queries it dropped", () => {
    const client = new StateHarness();
    client.connectAt(1);
    const kept = recorder();
    const dropped = client.subscribe("counters:get", { name: "x" });
    client.subscribe("counters:get", { name: "a" }, kept.listener);
    client.step((state) => state.unsubscribe(dropped));
    // The server had not seen the removal yet when it ran this Transition.
    client.transition({ querySet: 1, ts: 1 }, { querySet: 3, ts: 2 }, [
      { type: "QueryUpdated", queryId: 1, value: 1, hash: "h1" },
      { type: "QueryUpdated", queryId: 2, value: 2, hash: "h2" },
    ]);
    expect(kept.updates).toEqual([2]);
    client.transition({ querySet: 3, ts: 2 }, { querySet: 4, ts: 3 }, [{ type: "QueryRemoved", queryId: 2 }]);
    client.lose();
    client.connect();
    const resubscribe = frameOfType(client.takeSent(), "ModifyQuerySet")[0];
    expect(resubscribe?.add).toEqual([{ queryId: 2, path: "counters:get", args: { name: "a" } }]);
  });

  it("re-subscribes in as many frames as keep each under the frame limit, so a reconnect never sends one too large", () => {
    const client = new StateHarness();
    client.connectAt(1);
    // Each query fits a frame on its own; the three together do not (MESSAGE_BYTES_MAX is 16 MiB).
    const big = (n: number) => ({ n, text: "€".repeat(2_000_000) });
    for (let n = 0; n < 3; n++) client.subscribe("messages:list", big(n));
    client.subscribe("messages:list", { channel: "small" });
    client.takeSent();
    client.lose();
    client.connect();
    const frames = frameOfType(client.takeSent(), "ModifyQuerySet");
    expect(frames.length).toBeGreaterThan(1);
    for (const frame of frames) expect(Buffer.byteLength(JSON.stringify(frame), "utf8")).toBeLessThanOrEqual(MESSAGE_BYTES_MAX);
    expect(frames.map((frame) => [frame.baseVersion, frame.newVersion])).toEqual(frames.map((_, at) => [at, at + 1]));
    expect(frames.flatMap((frame) => frame.add.map((entry) => entry.queryId))).toEqual([1, 2, 3, 4]);
  });
});
