import PQueue from "p-queue";

/**
 * Yields `fetch(0) … fetch(count - 1)` in order while up to `concurrency` fetches run
 * ahead of the consumer. Memory is bounded by `concurrency` results.
 */
export async function* prefetchInOrder<T>(
  count: number,
  fetch: (index: number) => Promise<T>,
  concurrency: number,
): AsyncGenerator<T> {
  const queue = new PQueue({ concurrency });
  const pending = new Map<number, Promise<T>>();
  let nextToFetch = 0;
  try {
    for (let index = 0; index < count; index++) {
      while (nextToFetch < count && nextToFetch < index + concurrency) {
        const fetchIndex = nextToFetch++;
        const started = queue.add(() => fetch(fetchIndex)) as Promise<T>;
        // A prefetch the consumer never awaits (it stopped early) must not go unhandled.
        started.catch(() => undefined);
        pending.set(fetchIndex, started);
      }
      const result = await pending.get(index)!;
      pending.delete(index);
      yield result;
    }
  } finally {
    queue.clear();
  }
}
