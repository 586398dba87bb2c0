import type { Clock } from "./clock.js";

/**
 * Runs `step` every `intervalMs` of `clock`'s time until `signal` aborts, each wait
 * starting once the previous step finished (steps never overlap); resolves once aborted.
 * A background loop's shape (a beat, a watch): stopping it is `abort()` then awaiting it.
 * `step` must not throw (a loop has nobody to tell): it handles its own errors.
 */
export async function repeatEvery(clock: Clock, intervalMs: number, signal: AbortSignal, step: () => Promise<void> | void): Promise<void> {
  while (!signal.aborted) {
    try {
      await clock.sleep(intervalMs, signal);
    } catch {
      return;
    }
    await step();
  }
}
