/**
 * The search for the highest arrival rate a shard sustains, as a state machine over plain
 * verdicts (no engine, no clock), so its steps can be read and checked on their own. A
 * rate is *sustained* when it meets every criterion (latency bound included) and *kept
 * up* when it meets all but the latency bound (completions kept pace with arrivals).
 *
 *   probing up   — from startRate, double while the rate is kept up (the last step is
 *                  maxRate itself), so the steps also show where throughput ends when
 *                  the latency bound fails first; a rate not kept up, or maxRate, ends
 *                  the probing.
 *   probing down — when nothing probed sustained: halve below the lowest rate tried
 *                  until one sustains (then bisect) or the rate would drop below 1/s.
 *   bisecting    — try the midpoint between the highest sustained rate and the lowest
 *                  unsustained rate above it, `bisections` times at most, or until they
 *                  are within RESOLUTION of each other.
 *
 * Verdicts are taken as given: a rate that sustained once counts as sustained even if a
 * lower rate failed later (a snapshot may fall in one step and not in another); the
 * figures of every step are reported, so such noise stays visible.
 */
export interface RateVerdict {
  readonly sustained: boolean;
  readonly keptUp: boolean;
}

export interface RateSearchLimits {
  readonly startRate: number;
  readonly maxRate: number;
  readonly bisections: number;
}

type Phase = "probing-up" | "probing-down" | "bisecting" | "done";

/** Bisection stops once the failed rate is within 5% of the sustained one. */
const RESOLUTION = 1.05;

export class RateSearch {
  private phase: Phase = "probing-up";
  private nextRate: number;
  private bisectionsLeft: number;
  private sustained: number[] = [];
  private failed: number[] = [];
  private keptUp: number[] = [];

  constructor(private readonly limits: RateSearchLimits) {
    if (!(limits.startRate >= 1 && limits.startRate <= limits.maxRate)) {
      throw new RangeError(`the start rate ${limits.startRate} must lie in [1, maxRate ${limits.maxRate}]`);
    }
    this.nextRate = Math.round(limits.startRate);
    this.bisectionsLeft = limits.bisections;
  }

  /** The next rate to try, or null when the search is over. */
  get next(): number | null {
    return this.phase === "done" ? null : this.nextRate;
  }

  /** The highest rate that sustained, or null if none did. */
  get maxSustained(): number | null {
    return this.sustained.length === 0 ? null : Math.max(...this.sustained);
  }

  /** The highest rate whose completions kept up with its arrivals, latency aside. */
  get maxKeptUp(): number | null {
    return this.keptUp.length === 0 ? null : Math.max(...this.keptUp);
  }

  /** Records the verdict of the rate `next` named and moves on. */
  record(rate: number, verdict: RateVerdict): void {
    if (rate !== this.nextRate || this.phase === "done") throw new Error(`rate ${rate} was not the one asked for`);
    (verdict.sustained ? this.sustained : this.failed).push(rate);
    if (verdict.keptUp || verdict.sustained) this.keptUp.push(rate);
    switch (this.phase) {
      case "probing-up":
        this.afterProbeUp(rate, verdict.keptUp || verdict.sustained);
        return;
      case "probing-down":
        this.afterProbeDown(rate, verdict.sustained);
        return;
      case "bisecting":
        this.bisectionsLeft--;
        this.bisectOrEnd();
        return;
    }
  }

  private afterProbeUp(rate: number, keptUp: boolean): void {
    if (keptUp && rate < this.limits.maxRate) {
      this.nextRate = Math.min(rate * 2, this.limits.maxRate);
      return;
    }
    if (this.sustained.length === 0) this.probeDown(Math.min(...this.failed));
    else this.bisectOrEnd();
  }

  private probeDown(rate: number): void {
    const lower = Math.floor(rate / 2);
    if (lower < 1) this.phase = "done";
    else {
      this.phase = "probing-down";
      this.nextRate = lower;
    }
  }

  private afterProbeDown(rate: number, sustained: boolean): void {
    if (sustained) this.bisectOrEnd();
    else this.probeDown(rate);
  }

  private bisectOrEnd(): void {
    const low = this.maxSustained;
    const failedAbove = this.failed.filter((rate) => low !== null && rate > low);
    if (low === null || failedAbove.length === 0 || this.bisectionsLeft <= 0) {
      this.phase = "done";
      return;
    }
    const high = Math.min(...failedAbove);
    const middle = Math.round((low + high) / 2);
    if (high <= low * RESOLUTION || middle <= low || middle >= high) {
      this.phase = "done";
      return;
    }
    this.phase = "bisecting";
    this.nextRate = middle;
  }
}
