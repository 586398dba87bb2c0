/**
 * The page's one source of time (the house rule: time only through one injected place):
 * the wall clock for "how long ago", and timers for polling and batched renders.
 */
export interface PageTimer {
  cancel(): void;
}

export const pageClock = {
  /** Milliseconds since the Unix epoch. */
  nowMs: (): number => Date.now(),
  /** Runs `run` once after `delayMs`. */
  after: (delayMs: number, run: () => void): PageTimer => {
    const timer = setTimeout(run, delayMs);
    return { cancel: () => clearTimeout(timer) };
  },
  /** Runs `run` every `intervalMs` until cancelled. */
  every: (intervalMs: number, run: () => void): PageTimer => {
    const timer = setInterval(run, intervalMs);
    return { cancel: () => clearInterval(timer) };
  },
};
