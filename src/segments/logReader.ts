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

/** A segment's bytes as another party delivered them (a writer's wake hint), with the hash they must have. */
export interface DeliveredSegment {
  readonly bytes: Uint8Array;
  readonly hash: string;
}

/**
 * The delivered segment at `address` when its bytes verify and hash to what was named
 * (the segment is then exactly the one the deliverer vouched for); null when they do not,
 * and the slot is read from the store instead.
 */
function deliveredSegment(delivered: DeliveredSegment, address: SegmentAddress): Segment | null {
  try {
    const segment = decodeSegment(delivered.bytes, address);
    return segment.hash === delivered.hash ? segment : null;
  } catch {
    return null;
  }
}

export interface ReadLogOptions {
  readonly deploymentId: string;
  /** Ancestors whose segments the log may hold too (Manifest.inheritedFrom). */
  readonly inheritedFrom?: readonly string[];
  readonly shard: number;
  readonly fromSeqno: number;
  /** GETs in flight at most. */
  readonly concurrency: number;
  /** Seqnos at or below this are known to exist: prefetch them at full concurrency. */
  readonly knownTail?: number;
  /**
   * Segments whose bytes are at hand already (a writer's wake hints): taken instead of a
   * GET when they verify and hash to the hash given with them, else the slot is read.
   */
  readonly delivered?: (seqno: number) => DeliveredSegment | undefined;
  readonly signal?: AbortSignal;
}

/**
 * Yields the segments at `fromSeqno, fromSeqno+1, …` in order until the first empty slot
 * (delivered ones without a GET). Up to `concurrency` GETs run ahead of the consumer. Below `knownTail` the window is
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
      const address = { deploymentId: options.deploymentId, shard: options.shard, seqno, inheritedFrom: options.inheritedFrom ?? [] };
      const handed = options.delivered?.(seqno);
      const segment = handed === undefined ? null : deliveredSegment(handed, address);
      if (segment !== null) {
        pending.set(seqno, Promise.resolve(segment));
        continue;
      }
      const fetch = queue.add(() => {
        options.signal?.throwIfAborted();
        const read = readSegment(store, address);
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
