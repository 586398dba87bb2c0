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
