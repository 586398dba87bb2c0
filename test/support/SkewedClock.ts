import type { Clock, Timer } from "../../src/base/clock.js";

/**
 * A node's view of a shared clock, off by an offset (clock skew between machines). The
 * offset may be changed to step the wall clock as NTP or an operator would; the monotonic
 * clock is the base's and never steps.
 */
export class SkewedClock implements Clock {
  constructor(
    private readonly base: Clock,
    public offsetMs: number,
  ) {}

  nowMs(): number {
    return this.base.nowMs() + this.offsetMs;
  }

  monotonicMs(): number {
    return this.base.monotonicMs();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return this.base.sleep(ms, signal);
  }

  setTimer(ms: number, callback: () => void): Timer {
    return this.base.setTimer(ms, callback);
  }
}
