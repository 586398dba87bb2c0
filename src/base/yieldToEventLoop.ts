/**
 * Lets other work run (I/O callbacks, timers, other promise chains) before continuing:
 * long synchronous work (SQLite pruning) is cut into steps separated by this, so that
 * commits and reads are not held up behind it. It waits for no time at all.
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
