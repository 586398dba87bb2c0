import type { Clock } from "./clock.js";

interface Waiter {
  readonly holds: () => boolean;
  readonly settle: (held: boolean) => void;
}

/**
 * Callers waiting, each with a time limit, for a condition that only changes when its
 * owner says so (`notify`): a frontier reaching a ts, an engine becoming the writer.
 *
 * Invariants: every `wait` settles exactly once — true when its condition held at a
 * `notify` (or at once), otherwise its condition's value when the limit passed or at
 * `settleAll`; a settled waiter holds no timer and is no longer kept.
 */
export class ConditionWaiters {
  private readonly waiters = new Set<Waiter>();

  constructor(private readonly clock: Clock) {}

  wait(holds: () => boolean, timeoutMs: number): Promise<boolean> {
    if (holds()) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = new AbortController();
      const waiter: Waiter = {
        holds,
        settle: (held) => {
          if (!this.waiters.delete(waiter)) return;
          timer.abort();
          resolve(held);
        },
      };
      this.waiters.add(waiter);
      this.clock.sleep(timeoutMs, timer.signal).then(
        () => waiter.settle(holds()),
        () => undefined,
      );
    });
  }

  /** The owner changed what the conditions read: settle every waiter whose condition holds now. */
  notify(): void {
    for (const waiter of [...this.waiters]) if (waiter.holds()) waiter.settle(true);
  }

  /** Settles every waiter with its condition's current value (the owner stops). */
  settleAll(): void {
    for (const waiter of [...this.waiters]) waiter.settle(waiter.holds());
  }
}
