import { every, invalidArgument, randomInt, type Clock, type Random, type Timer, METRICS_HISTORY_MS, MUTATION_SAMPLES_PER_INTERVAL_MAX } from "../base/index.js";

/**
 * The last hour of this node's own figures, one point per interval, for the dashboard's
 * charts (`GET /api/admin/metrics`, docs/admin-api.md `MetricsPoint`): commits/s, the
 * mutation latency's p50 and p99, Transitions/s and object-store requests/s.
 *
 * Invariants:
 * - At most `historyMs / intervalMs` points are kept (360 by default): the oldest falls
 *   out as a new one comes.
 * - Memory per interval is bounded: at most `samplesMax` mutation durations are kept
 *   (MutationReservoir), whatever the rate.
 * - A sample never throws (it runs on a timer, with nobody to tell): a failing or
 *   decreasing transitions counter counts as no transitions in that interval.
 * - Time comes only from the injected Clock: points are stamped with `nowMs()`, rates are
 *   per second of `monotonicMs()` actually elapsed (a late timer does not inflate them).
 */
export interface MetricsPoint {
  /** When the interval ended, in ms since the epoch. */
  readonly time: number;
  readonly commitsPerSec: number;
  /** Null for an interval without mutations. */
  readonly mutationP50Ms: number | null;
  readonly mutationP99Ms: number | null;
  readonly transitionsPerSec: number;
  readonly storeRequestsPerSec: number;
}

/** One point per 10 s: 360 points an hour, fine enough to see a minute-long stall. */
export const METRICS_INTERVAL_MS_DEFAULT = 10_000;

export interface MetricsHistoryOptions {
  readonly clock: Clock;
  /** Picks which durations a busy interval keeps (reservoir sampling). */
  readonly random: Random;
  /** The sync handler's cumulative `transitionsCommitted` (SyncStats), read at each sample. */
  readonly transitionsCommitted: () => number;
  readonly intervalMs?: number;
  readonly historyMs?: number;
  readonly samplesMax?: number;
}

export class MetricsHistory {
  readonly intervalMs: number;
  private readonly clock: Clock;
  private readonly transitionsCommitted: () => number;
  private readonly capacity: number;
  /** Oldest first once full: `points[next]` is the oldest. */
  private readonly ring: MetricsPoint[] = [];
  private next = 0;
  private readonly durations: MutationReservoir;
  private commits = 0;
  private storeRequests = 0;
  private transitionsBefore: number;
  private intervalStartedMs: number;
  private readonly timer: Timer;

  constructor(options: MetricsHistoryOptions) {
    this.intervalMs = options.intervalMs ?? METRICS_INTERVAL_MS_DEFAULT;
    const historyMs = options.historyMs ?? METRICS_HISTORY_MS;
    if (!Number.isSafeInteger(this.intervalMs) || this.intervalMs < 1) throw invalidArgument(`intervalMs must be a positive integer, got ${String(this.intervalMs)}`);
    if (!Number.isSafeInteger(historyMs) || historyMs < this.intervalMs) throw invalidArgument(`historyMs must be an integer of at least intervalMs (${this.intervalMs}), got ${String(historyMs)}`);
    this.clock = options.clock;
    this.transitionsCommitted = options.transitionsCommitted;
    this.capacity = Math.floor(historyMs / this.intervalMs);
    this.durations = new MutationReservoir(options.random, options.samplesMax ?? MUTATION_SAMPLES_PER_INTERVAL_MAX);
    this.transitionsBefore = this.readTransitions() ?? 0;
    this.intervalStartedMs = this.clock.monotonicMs();
    this.timer = every(this.clock, this.intervalMs, () => this.sample());
  }

  /** `units` mutations landed in a durable segment this node wrote (a data "flushed" event). */
  commitsApplied(units: number): void {
    if (Number.isFinite(units) && units > 0) this.commits += units;
  }

  /** A mutation finished (call to durable answer) in `durationMs`. */
  mutationFinished(durationMs: number): void {
    if (Number.isFinite(durationMs)) this.durations.add(Math.max(0, durationMs));
  }

  /** One object-store request was made. */
  storeCall(): void {
    this.storeRequests++;
  }

  /** The kept points, oldest first. */
  points(): MetricsPoint[] {
    return [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
  }

  /** Stops sampling; the points stay readable. */
  stop(): void {
    this.timer.cancel();
  }

  /** Closes the current interval into a point and starts the next. */
  private sample(): void {
    const nowMonotonicMs = this.clock.monotonicMs();
    const elapsedMs = nowMonotonicMs - this.intervalStartedMs;
    const seconds = (elapsedMs > 0 ? elapsedMs : this.intervalMs) / 1000;
    const transitions = this.readTransitions();
    const transitionsDelta = transitions === null ? 0 : Math.max(0, transitions - this.transitionsBefore);
    if (transitions !== null) this.transitionsBefore = transitions;
    const [p50, p99] = this.durations.percentiles([0.5, 0.99]);
    this.push({
      time: this.clock.nowMs(),
      commitsPerSec: rounded(this.commits / seconds),
      mutationP50Ms: p50 == null ? null : rounded(p50),
      mutationP99Ms: p99 == null ? null : rounded(p99),
      transitionsPerSec: rounded(transitionsDelta / seconds),
      storeRequestsPerSec: rounded(this.storeRequests / seconds),
    });
    this.commits = 0;
    this.storeRequests = 0;
    this.durations.clear();
    this.intervalStartedMs = nowMonotonicMs;
  }

  private push(point: MetricsPoint): void {
    if (this.ring.length < this.capacity) {
      this.ring.push(point);
      return;
    }
    this.ring[this.next] = point;
    this.next = (this.next + 1) % this.capacity;
  }

  /** The cumulative counter, or null when it cannot be read (a handler not up yet, a bug). */
  private readTransitions(): number | null {
    try {
      const value = this.transitionsCommitted();
      return Number.isFinite(value) ? value : null;
    } catch {
      return null;
    }
  }
}

/**
 * One interval's mutation durations, bounded: the first `capacity` are kept as they come
 * (percentiles exact), and beyond that each new one replaces a random kept one with
 * probability capacity/seen (Vitter's algorithm R), so the kept ones stay a uniform
 * sample of all. Chosen over a log-scale histogram because the common case (fewer than
 * `capacity` mutations per interval) is then exact rather than within a bucket's width.
 */
export class MutationReservoir {
  private readonly kept: Float64Array;
  private seen = 0;

  constructor(
    private readonly random: Random,
    readonly capacity: number,
  ) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw invalidArgument(`samplesMax must be a positive integer, got ${String(capacity)}`);
    this.kept = new Float64Array(capacity);
  }

  /** Durations added since the last clear. */
  get count(): number {
    return this.seen;
  }

  /** Durations currently kept (at most `capacity`). */
  get keptCount(): number {
    return Math.min(this.seen, this.capacity);
  }

  add(value: number): void {
    if (this.seen < this.capacity) {
      this.kept[this.seen] = value;
    } else {
      const slot = randomInt(this.random, this.seen + 1);
      if (slot < this.capacity) this.kept[slot] = value;
    }
    this.seen++;
  }

  /** The nearest-rank percentile of the kept durations for each `q` in (0, 1], or nulls when none. */
  percentiles(qs: readonly number[]): (number | null)[] {
    const n = this.keptCount;
    if (n === 0) return qs.map(() => null);
    const sorted = this.kept.slice(0, n).sort();
    return qs.map((q) => sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!);
  }

  clear(): void {
    this.seen = 0;
  }
}

/** Three decimals: µs resolution for latencies, plenty for rates, and short JSON. */
function rounded(value: number): number {
  return Math.round(value * 1000) / 1000;
}
