import { describe, expect, it } from "vitest";
import { initialConnectionState, nextConnectionState, reconnectDelayMs, type ConnectionState } from "../../src/client/ConnectionLifecycle.js";
import { RECONNECT_BACKOFF_BASE_MS, RECONNECT_BACKOFF_MAX_MS } from "../../src/client/limits.js";
import type { Random } from "../../src/client/Random.js";

/**
 * Scenario: a connection fails three times, connects, drops, and is closed, each attempt
 * to the next of two URLs; the delays are computed, never waited for.
 */
const fixedRandom = (float: number): Random => ({ float: () => float, bytes: (length) => new Uint8Array(length) });

describe("connection lifecycle", () => {
  const delayOf = (attempt: number) => 1000 + attempt;

  it("walks the transition table, resetting the backoff after a ConnectAck and moving to the next URL on a close", () => {
    const states: ConnectionState[] = [initialConnectionState("ws://a")];
    let next = "ws://a";
    const step = (type: "connectAcked" | "socketClosed" | "retryTimerFired" | "closeRequested") => {
      if (type === "socketClosed") next = next === "ws://a" ? "ws://b" : "ws://a";
      states.push(nextConnectionState(states.at(-1)!, type === "socketClosed" ? { type, nextUrl: next } : { type }, delayOf));
    };
    step("socketClosed");
    step("retryTimerFired");
    step("socketClosed");
    step("retryTimerFired");
    step("connectAcked");
    step("socketClosed");
    step("retryTimerFired");
    step("closeRequested");
    step("closeRequested");
    expect(states).toEqual([
      { state: "connecting", attempt: 0, url: "ws://a" },
      { state: "waitingToReconnect", attempt: 0, delayMs: 1000, url: "ws://b" },
      { state: "connecting", attempt: 1, url: "ws://b" },
      { state: "waitingToReconnect", attempt: 1, delayMs: 1001, url: "ws://a" },
      { state: "connecting", attempt: 2, url: "ws://a" },
      { state: "connected", url: "ws://a" },
      { state: "waitingToReconnect", attempt: 0, delayMs: 1000, url: "ws://b" },
      { state: "connecting", attempt: 1, url: "ws://b" },
      { state: "closed" },
      { state: "closed" },
    ]);
  });

  it("refuses events its state cannot have", () => {
    expect(() => nextConnectionState({ state: "connected", url: "ws://a" }, { type: "retryTimerFired" }, delayOf)).toThrow(/assertion failed/);
    expect(() => nextConnectionState({ state: "closed" }, { type: "socketClosed", nextUrl: "ws://a" }, delayOf)).toThrow(/assertion failed/);
    expect(() => nextConnectionState({ state: "waitingToReconnect", attempt: 0, delayMs: 1, url: "ws://a" }, { type: "connectAcked" }, delayOf)).toThrow(/assertion failed/);
  });
});

describe("reconnect delay", () => {
  it("doubles from the base up to the ceiling, jittered over its upper half", () => {
    const low = [0, 1, 2, 3, 10, 200].map((attempt) => reconnectDelayMs(attempt, fixedRandom(0)));
    const high = [0, 1, 2, 3, 10, 200].map((attempt) => reconnectDelayMs(attempt, fixedRandom(0.999999)));
    expect(low).toEqual([150, 300, 600, 1200, 15000, 15000]);
    expect(high).toEqual([300, 600, 1200, 2400, 30000, 30000]);
    expect(RECONNECT_BACKOFF_BASE_MS).toBe(300);
    expect(RECONNECT_BACKOFF_MAX_MS).toBe(30_000);
  });

  it("takes its base and ceiling from options", () => {
    expect([0, 1, 2, 3].map((attempt) => reconnectDelayMs(attempt, fixedRandom(0), { baseMs: 10, maxMs: 30 }))).toEqual([5, 10, 15, 15]);
  });
});
