import type { Clock } from "../../src/base/clock.js";

/** A node's view of a shared clock, off by a fixed offset (clock skew between machines). */
export class SkewedClock implements Clock {
  constructor(
    private readonly base: Clock,
    private readonly offsetMs: number,
  ) {}

  nowMs(): number {
    return this.base.nowMs() + this.offsetMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.base.sleep(ms, signal);
  }
}
