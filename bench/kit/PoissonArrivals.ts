import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import type { Random } from "../../src/base/random.js";

/**
 * Open-loop arrivals: a Poisson process of `ratePerSecond`, i.e. independent exponential
 * gaps with mean 1000 / ratePerSecond ms, drawn from a seeded Random so a run replays
 * the same arrival times. Arrivals never wait for completions: that independence is what
 * makes a backlog visible when the system falls behind.
 */
export class PoissonArrivals {
  constructor(
    private readonly random: Random,
    readonly ratePerSecond: number,
  ) {
    if (!(Number.isFinite(ratePerSecond) && ratePerSecond > 0)) throw new RangeError(`arrival rate must be > 0, got ${ratePerSecond}`);
  }

  /** Milliseconds from one arrival to the next. 1 − u lies in (0, 1], so the gap is finite. */
  nextGapMs(): number {
    return (-Math.log(1 - this.random.float()) * 1000) / this.ratePerSecond;
  }
}

/**
 * An open loop: `start(scheduledMs, n)` at each of `arrivals`' arrival times (performance.now()
 * clock), each at once whatever is still in flight, for as long as `goOn(dueMs)` holds for
 * the next one; resolves once every call started has settled. A call's rejection is its
 * caller's to record (`start` should not reject).
 */
export async function runArrivals(arrivals: PoissonArrivals, goOn: (dueMs: number) => boolean, start: (scheduledMs: number, n: number) => Promise<void>): Promise<void> {
  const inFlight = new Set<Promise<void>>();
  let dueMs = performance.now() + arrivals.nextGapMs();
  for (let n = 0; goOn(dueMs); n++, dueMs += arrivals.nextGapMs()) {
    const waitMs = dueMs - performance.now();
    if (waitMs > 1) await sleep(waitMs);
    const call = start(dueMs, n).catch(() => undefined);
    inFlight.add(call);
    void call.finally(() => inFlight.delete(call));
  }
  await Promise.all(inFlight);
}
