import { invalidArgument, type Clock } from "../base/index.js";
import type { StoreOperation } from "../objectstore/index.js";

/**
 * What this node's object-store requests cost, estimated at S3 Standard's request prices
 * (docs/admin-api.md `Deployment.store`): a rolling count of requests per operation over
 * the last hour (StoreRequestWindow), and that count priced and extrapolated to an hour
 * (requestsCostPerHour). Storage and transfer are not counted: they depend on the bucket
 * as a whole, not on one node.
 */

/**
 * USD per 1,000 requests (S3 Standard, us-east-1), by ObservedObjectStore operation:
 * `get` is a GET (a conditional one answered 304 included); `create` and `casPut` are
 * conditional PUTs; `list` is a LIST (a `list` call reports once, though a long listing
 * is one LIST per 1,000 keys, so listings of big prefixes are undercounted); `delete` is
 * a DELETE, which is free; `deleteMany` is a DeleteObjects request, an HTTP POST, priced
 * as one to err high (it is one request per up to 1,000 keys, so it hardly shows).
 */
export const S3_STANDARD_REQUEST_PRICES_USD_PER_1000: Readonly<Record<StoreOperation, number>> = Object.freeze({
  get: 0.0004,
  create: 0.005,
  casPut: 0.005,
  delete: 0,
  deleteMany: 0.005,
  list: 0.005,
});

/** An operation not in the table (a newer adapter's) is priced as S3 prices "all other requests": like a GET. */
const OTHER_REQUEST_PRICE_USD_PER_1000 = 0.0004;

const HOUR_MS = 60 * 60 * 1000;

/**
 * The shortest window extrapolated from: in a node's first minute a handful of start-up
 * requests (manifest reads, the catalog, the registry) times 3,600/seconds-up would read
 * as dollars an hour. Below it the counts are priced as if they were a minute's.
 */
export const COST_EXTRAPOLATION_WINDOW_MS_MIN = 60_000;

export interface RequestsCost {
  /** The requests' cost over an hour at the window's rate, in USD. */
  readonly requestsUsd: number;
  /** USD per 1,000 requests, by operation. */
  readonly prices: Readonly<Record<StoreOperation, number>>;
}

/**
 * The cost of `counts` requests (by operation) made over `windowMs`, extrapolated to an
 * hour (a window shorter than COST_EXTRAPOLATION_WINDOW_MS_MIN counts as that long).
 * Counts that are not finite and non-negative count as 0.
 */
export function requestsCostPerHour(counts: Readonly<Record<string, number>>, windowMs: number): RequestsCost {
  let usd = 0;
  for (const [operation, count] of Object.entries(counts)) {
    if (!Number.isFinite(count) || count <= 0) continue;
    usd += (count * priceOf(operation)) / 1000;
  }
  const spanMs = Number.isFinite(windowMs) ? Math.max(windowMs, COST_EXTRAPOLATION_WINDOW_MS_MIN) : HOUR_MS;
  // Micro-dollars: finer than any price here yet short in JSON.
  return { requestsUsd: Math.round(((usd * HOUR_MS) / spanMs) * 1e6) / 1e6, prices: S3_STANDARD_REQUEST_PRICES_USD_PER_1000 };
}

function priceOf(operation: string): number {
  return Object.hasOwn(S3_STANDARD_REQUEST_PRICES_USD_PER_1000, operation)
    ? S3_STANDARD_REQUEST_PRICES_USD_PER_1000[operation as StoreOperation]
    : OTHER_REQUEST_PRICE_USD_PER_1000;
}

/** A minute per bucket: 60 small maps for the hour, and the window's edge at most a minute coarse. */
export const STORE_WINDOW_BUCKET_MS = 60_000;

/** The counts of the last hour, and how long a span they cover (shorter than an hour while the node is young). */
export interface StoreRequestCounts {
  readonly requestsLastHour: Readonly<Record<string, number>>;
  readonly windowMs: number;
}

/**
 * A rolling count of store requests per operation over the last `windowMs` (an hour), in
 * per-minute buckets on the monotonic clock (a wall-clock step neither loses nor doubles
 * a minute).
 *
 * Invariants:
 * - Memory is bounded by windowMs / bucketMs buckets, each a map over the operations seen.
 * - `lastHour` counts the buckets of the window's minutes: the current partial minute and
 *   the whole ones before it, back to windowMs; `windowMs` in its answer is exactly that
 *   span (or the time since the window was made, if shorter).
 */
export class StoreRequestWindow {
  private readonly buckets: ({ minute: number; counts: Map<string, number> } | null)[];
  private readonly startedMs: number;

  constructor(
    private readonly clock: Clock,
    windowMs = HOUR_MS,
    private readonly bucketMs = STORE_WINDOW_BUCKET_MS,
  ) {
    if (!Number.isSafeInteger(bucketMs) || bucketMs < 1) throw invalidArgument(`bucketMs must be a positive integer, got ${String(bucketMs)}`);
    if (!Number.isSafeInteger(windowMs) || windowMs < bucketMs || windowMs % bucketMs !== 0) {
      throw invalidArgument(`windowMs must be a whole number of buckets (${bucketMs} ms), got ${String(windowMs)}`);
    }
    this.buckets = Array.from({ length: windowMs / bucketMs }, () => null);
    this.startedMs = clock.monotonicMs();
  }

  /** One request of `operation` was made now. */
  record(operation: StoreOperation): void {
    const minute = this.minuteOf(this.clock.monotonicMs());
    const slot = this.slotOf(minute);
    let bucket = this.buckets[slot];
    if (bucket == null || bucket.minute !== minute) {
      bucket = { minute, counts: new Map() };
      this.buckets[slot] = bucket;
    }
    bucket.counts.set(operation, (bucket.counts.get(operation) ?? 0) + 1);
  }

  /** Requests per operation over the window, and the span it covers. */
  lastHour(): StoreRequestCounts {
    const nowMs = this.clock.monotonicMs();
    const current = this.minuteOf(nowMs);
    const oldest = current - this.buckets.length + 1;
    const counts: Record<string, number> = {};
    for (const bucket of this.buckets) {
      if (bucket == null || bucket.minute < oldest || bucket.minute > current) continue;
      for (const [operation, count] of bucket.counts) counts[operation] = (counts[operation] ?? 0) + count;
    }
    const spanMs = nowMs - oldest * this.bucketMs;
    return { requestsLastHour: counts, windowMs: Math.max(0, Math.min(spanMs, nowMs - this.startedMs)) };
  }

  private minuteOf(monotonicMs: number): number {
    return Math.floor(monotonicMs / this.bucketMs);
  }

  private slotOf(minute: number): number {
    const length = this.buckets.length;
    return ((minute % length) + length) % length;
  }
}
