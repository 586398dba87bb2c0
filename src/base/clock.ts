/**
 * Time is injected everywhere in src/ so that the simulation can run many nodes on one
 * virtual clock. Nothing in src/ calls Date.now() or setTimeout directly.
 */
export interface Clock {
  /** Wall-clock milliseconds since the Unix epoch. May jump (NTP steps, an operator). */
  nowMs(): number;
  /**
   * Milliseconds on a clock that never goes backwards and never jumps, from an arbitrary
   * origin: for measuring how long something took on this node (a lease's remaining
   * time), never for comparing with other nodes.
   */
  monotonicMs(): number;
  /** Resolves after `ms` of this clock's time; rejects with the signal's reason if aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  nowMs: () => Date.now(),
  monotonicMs: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, Math.max(0, ms));
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/**
 * A clock whose time only moves when told to (or, with `autoAdvance`, jumps to the
 * earliest pending sleeper whenever asked). Sleepers wake in deadline order.
 */
export class ManualClock implements Clock {
  private currentMs: number;
  private sleepers: { wakeAtMs: number; resolve: () => void; order: number }[] = [];
  private sleeperCount = 0;

  constructor(startMs = 1_700_000_000_000) {
    this.currentMs = startMs;
  }

  nowMs(): number {
    return this.currentMs;
  }

  /** Manual time only moves forward, so it is its own monotonic clock. */
  monotonicMs(): number {
    return this.currentMs;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        reject(signal?.reason);
      };
      const sleeper = {
        wakeAtMs: this.currentMs + Math.max(0, ms),
        order: this.sleeperCount++,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      this.sleepers.push(sleeper);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Moves time forward by `ms`, waking every sleeper whose deadline has passed. */
  advance(ms: number): void {
    this.currentMs += ms;
    this.wakeDue();
  }

  /** Number of pending sleepers; the simulation advances time when all actors sleep. */
  get pendingSleepers(): number {
    return this.sleepers.length;
  }

  /** Jumps to the earliest sleeper's deadline and wakes it (and any due at the same time). */
  advanceToNextSleeper(): boolean {
    if (this.sleepers.length === 0) return false;
    const next = Math.min(...this.sleepers.map((s) => s.wakeAtMs));
    if (next > this.currentMs) this.currentMs = next;
    this.wakeDue();
    return true;
  }

  private wakeDue(): void {
    const due = this.sleepers
      .filter((s) => s.wakeAtMs <= this.currentMs)
      .sort((a, b) => a.wakeAtMs - b.wakeAtMs || a.order - b.order);
    this.sleepers = this.sleepers.filter((s) => s.wakeAtMs > this.currentMs);
    for (const sleeper of due) sleeper.resolve();
  }
}
