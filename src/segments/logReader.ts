import PQueue from "p-queue";
import { CairnError } from "../base/index.js";
import { bucketLayout } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { decodeSegment, type Segment, type SegmentAddress } from "./Segment.js";

/** GETs and verifies one segment; null when the slot is empty. */
export async function readSegment(store: ObjectStore, address: SegmentAddress): Promise<Segment | null> {
  const result = await store.get(bucketLayout.segment(address.shard, address.seqno));
  if (result === null) return null;
  if (result === "not-modified") throw new CairnError("INTERNAL", "unconditional GET answered not-modified");
  return decodeSegment(result.body, address);
}

export interface ReadLogOptions {
  readonly deploymentId: string;
  readonly shard: number;
  readonly fromSeqno: number;
  /** GETs in flight at most. */
  readonly concurrency: number;
  /** Seqnos at or below this are known to exist: prefetch them at full concurrency. */
  readonly knownTail?: number;
  readonly signal?: AbortSignal;
}

/**
 * Yields the segments at `fromSeqno, fromSeqno+1, …` in order until the first empty slot.
 * Up to `concurrency` GETs run ahead of the consumer. Below `knownTail` the window is
 * full at once; past it the window grows from 1 by doubling, so that reaching the end of
 * the log wastes few GETs on empty slots.
 */
export async function* readLog(store: ObjectStore, options: ReadLogOptions): AsyncGenerator<Segment> {
  const queue = new PQueue({ concurrency: options.concurrency });
  const pending = new Map<number, Promise<Segment | null>>();
  // Fetches that reached the store; queued ones are dropped by clear() and never settle.
  const started = new Set<Promise<Segment | null>>();
  const knownTail = options.knownTail ?? -1;
  let nextToYield = options.fromSeqno;
  let nextToFetch = options.fromSeqno;
  let speculative = 1;
  const schedule = () => {
    const windowEnd = Math.max(knownTail + 1, nextToYield + speculative);
    while (nextToFetch < windowEnd && pending.size < options.concurrency * 2) {
      const seqno = nextToFetch++;
      const fetch = queue.add(() => {
        options.signal?.throwIfAborted();
        const read = readSegment(store, { deploymentId: options.deploymentId, shard: options.shard, seqno });
        started.add(read);
        return read;
      }) as Promise<Segment | null>;
      // Unconsumed prefetches may fail after the consumer stopped; that is not an error.
      fetch.catch(() => undefined);
      pending.set(seqno, fetch);
    }
  };
  try {
    for (;;) {
      schedule();
      const fetch = pending.get(nextToYield);
      if (fetch === undefined) throw new CairnError("INTERNAL", "log prefetch window is empty");
      const segment = await fetch;
      pending.delete(nextToYield);
      if (segment === null) return;
      nextToYield++;
      if (nextToYield > knownTail) speculative = Math.min(speculative * 2, options.concurrency);
      yield segment;
    }
  } finally {
    // Nothing outlives the reader: queued GETs are dropped and started ones (past the
    // tail, at most `concurrency`) settle before it returns, so closing the store right
    // after a catch-up cannot break requests still on the wire.
    queue.clear();
    await Promise.allSettled(started);
  }
}
