import { round } from "../kit/LatencySummary.js";

/**
 * Whether an open-loop window kept up with its arrival rate and whether it sustained it,
 * from its figures alone (pure, so the criteria read in one place):
 *
 * - Kept up (keptUp): the backlog grew by at most backlogLimit(rate, bound) over the
 *   window, no failure, nothing left unfinished by the drain, and the backlog did not run
 *   away: throughput, whatever the latency. (Mutations settled inside the window equal
 *   the backlog at open plus the window's arrivals minus the backlog at close, so this is
 *   "completions kept pace with arrivals" up to the backlog's own fluctuation, which
 *   flushes acknowledging a batch at once make larger than a Poisson count's.)
 * - Sustained (sustainFailures): kept up, at least one commit, p99 within the latency
 *   bound, and a backlog at close within backlogLimit(rate, bound). If every mutation met
 *   the bound B, those in flight at any moment arrived within the last B, a Poisson count
 *   of mean λB; the limit allows λB plus three standard deviations, so chance does not
 *   fail a low rate, while a backlog that grows (arrivals outpacing completions) exceeds
 *   it within seconds.
 */
export interface JudgedWindow {
  readonly commit: { readonly samples: number; readonly p99Ms: number };
  readonly failures: number;
  /** Arrivals of the window still in flight when the drain gave up. */
  readonly unfinished: number;
  readonly backlogAtOpen: number;
  readonly backlogAtClose: number;
  readonly backlogLimit: number;
  readonly runaway: boolean;
  readonly abandoned: number;
}

/** Three standard deviations of a Poisson count over its mean. */
const BACKLOG_STANDARD_DEVIATIONS = 3;
/** The most mutations in flight a sustained rate leaves at the close of its window. */
export function backlogLimit(rate: number, latencyBoundMs: number): number {
  const mean = (rate * latencyBoundMs) / 1000;
  return Math.ceil(mean + BACKLOG_STANDARD_DEVIATIONS * Math.sqrt(mean));
}

/** Whether completions kept pace with arrivals (see above). */
export function keptUp(figures: JudgedWindow): boolean {
  return keptUpFailures(figures).length === 0;
}

/** The criteria of "sustained" a window failed (see above); empty when it sustained its rate. */
export function sustainFailures(figures: JudgedWindow, latencyBoundMs: number): string[] {
  const reasons = keptUpFailures(figures);
  if (figures.commit.samples === 0) reasons.push("no commit");
  else if (figures.commit.p99Ms > latencyBoundMs) reasons.push(`p99 ${figures.commit.p99Ms} ms > ${round(latencyBoundMs, 1)} ms`);
  if (!figures.runaway && figures.backlogAtClose > figures.backlogLimit) {
    reasons.push(`backlog ${figures.backlogAtClose} > ${figures.backlogLimit}`);
  }
  return reasons;
}

function keptUpFailures(figures: JudgedWindow): string[] {
  const reasons: string[] = [];
  if (figures.runaway) reasons.push(`backlog ran away (${figures.abandoned} arrivals left unstarted)`);
  const growth = figures.backlogAtClose - figures.backlogAtOpen;
  if (!figures.runaway && growth > figures.backlogLimit) reasons.push(`backlog grew by ${growth} > ${figures.backlogLimit}`);
  if (figures.failures > 0) reasons.push(`${figures.failures} failures`);
  if (figures.unfinished > 0) reasons.push(`${figures.unfinished} unfinished after the drain`);
  return reasons;
}
