/**
 * Time is injected everywhere in src/ so that the simulation can run many nodes on one
 * virtual clock. Nothing in src/ calls Date.now() or setTimeout directly (test/injectedTimeAndRandomness
 * checks it).
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
  /**
   * Calls `callback` once after `ms` of this clock's time, unless cancelled first. A timer
   * never keeps the process alive by itself: background upkeep (a sweep, a ping, a fold)
   * must not hold up an exit.
   */
  setTimer(ms: number, callback: () => void): Timer;
}

/** A pending `Clock.setTimer` call. */
export interface Timer {
  /** Stops the callback from running; does nothing if it has run or was cancelled. */
  cancel(): void;
}

/**
 * Calls `tick` every `intervalMs` of `clock`'s time until cancelled (the next interval
 * starts as a tick begins, as with setInterval). Like `setTimer`, it never keeps the process alive.
 */
export function every(clock: Clock, intervalMs: number, tick: () => void): Timer {
  let cancelled = false;
  let current: Timer;
  const arm = () => {
    current = clock.setTimer(intervalMs, () => {
      if (cancelled) return;
      arm();
      tick();
    });
  };
  arm();
  return {
    cancel: () => {
      cancelled = true;
      current.cancel();
    },
  };
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
  setTimer: (ms, callback) => {
    const timer = setTimeout(callback, Math.max(0, ms));
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
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

  /** A timer is a sleeper that runs `callback` when it wakes. */
  setTimer(ms: number, callback: () => void): Timer {
    const sleeper = { wakeAtMs: this.currentMs + Math.max(0, ms), order: this.sleeperCount++, resolve: callback };
    this.sleepers.push(sleeper);
    return { cancel: () => (this.sleepers = this.sleepers.filter((s) => s !== sleeper)) };
  }

  /** Moves time forward by `ms`, waking every sleeper whose deadline has passed. */
  advance(ms: number): void {
    this.currentMs += ms;
    this.wakeDue();
  }

  /** Number of pending sleepers (timers included); the simulation advances time when all actors sleep. */
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
