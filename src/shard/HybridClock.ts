import type { Clock } from "../base/index.js";

/**
 * Hybrid-logical timestamps (DESIGN.md §5): `ts = max(lastTs + 1, nowMicros)`, strictly
 * increasing on this node and close to wall-clock time, so timestamps of different shards
 * are comparable. One per node, shared by all its shards. A new writer first observes the
 * highest ts in the log so that it continues above it whatever its wall clock says.
 */
export class HybridClock {
  private lastTs = 0;

  constructor(private readonly clock: Clock) {}

  next(): number {
    const ts = Math.max(this.lastTs + 1, Math.floor(this.clock.nowMs() * 1000));
    this.lastTs = ts;
    return ts;
  }

  observe(ts: number): void {
    if (ts > this.lastTs) this.lastTs = ts;
  }

  get last(): number {
    return this.lastTs;
  }
}
