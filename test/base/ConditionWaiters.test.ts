import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { ConditionWaiters } from "../../src/base/ConditionWaiters.js";

const turns = () => new Promise((resolve) => setImmediate(resolve));

describe("ConditionWaiters", () => {
  it("settles true at once, at a notify that finds the condition holding, and false at the limit", async () => {
    const clock = new ManualClock();
    const waiters = new ConditionWaiters(clock);
    let value = 0;
    expect(await waiters.wait(() => value >= 0, 1_000)).toBe(true);
    const reached = waiters.wait(() => value >= 2, 1_000);
    const late = waiters.wait(() => value >= 5, 1_000);
    const settled: string[] = [];
    void reached.then(() => settled.push("reached"));
    void late.then(() => settled.push("late"));
    value = 1;
    waiters.notify();
    await turns();
    expect(settled).toEqual([]);
    value = 2;
    waiters.notify();
    expect(await reached).toBe(true);
    clock.advance(999);
    await turns();
    expect(settled).toEqual(["reached"]);
    clock.advance(1);
    expect(await late).toBe(false);
    expect(clock.pendingSleepers).toBe(0);
  });

  it("settles every waiter with its condition's value at settleAll, once, and leaves no timer behind", async () => {
    const clock = new ManualClock();
    const waiters = new ConditionWaiters(clock);
    let writing = false;
    const a = waiters.wait(() => writing, 1_000);
    const b = waiters.wait(() => !writing, 1_000);
    waiters.settleAll();
    expect(await a).toBe(false);
    expect(await b).toBe(true);
    writing = true;
    waiters.notify();
    clock.advance(2_000);
    expect(clock.pendingSleepers).toBe(0);
  });
});
