/**
 * Waits for `predicate` (polled every 20 ms), from `startedMs` on (default now), and prints
 * how long it took under `label`: multi-process tests report latencies, never assert
 * them. `maxMs` bounds a hang (an error naming `what`), not a timing.
 */
export async function within(label: string, what: string, predicate: () => boolean | Promise<boolean>, options: { startedMs?: number; maxMs?: number } = {}): Promise<number> {
  const startedMs = options.startedMs ?? Date.now();
  const maxMs = options.maxMs ?? 30_000;
  for (;;) {
    if (await predicate()) {
      const tookMs = Date.now() - startedMs;
      console.log(`${label}: ${what} after ${tookMs} ms`);
      return tookMs;
    }
    if (Date.now() - startedMs > maxMs) throw new Error(`${what}: not within ${maxMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
