/**
 * Scenario: a node's metrics history on a manual clock. Commits, mutation durations,
 * store requests and a cumulative Transitions counter are fed in; every 10 s of the
 * clock closes an interval into a point with per-second rates and exact percentiles. An
 * interval without mutations has null percentiles; the history keeps the newest 360
 * points, oldest first; a busy interval keeps a bounded sample of its durations; a
 * broken or reset counter never breaks sampling; stop() ends the timer.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/base/clock.js";
import { SeededRandom } from "../../src/base/random.js";
import { MetricsHistory, MutationReservoir } from "../../src/server/MetricsHistory.js";

function history(options: { transitions?: () => number; intervalMs?: number; samplesMax?: number } = {}) {
  const clock = new ManualClock();
  let transitions = 0;
  const metrics = new MetricsHistory({
    clock,
    random: new SeededRandom(7),
    transitionsCommitted: options.transitions ?? (() => transitions),
    ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
    ...(options.samplesMax !== undefined ? { samplesMax: options.samplesMax } : {}),
  });
  return { clock, metrics, addTransitions: (count: number) => (transitions += count) };
}

describe("metrics history", () => {
  it("closes each interval into a point of per-second rates and exact percentiles", () => {
    const { clock, metrics, addTransitions } = history();
    expect(metrics.intervalMs).toBe(10_000);
    metrics.commitsApplied(30);
    metrics.commitsApplied(20);
    // 1..100 ms, shuffled: nearest-rank p50 is 50, p99 is 99.
    const durations = Array.from({ length: 100 }, (_, index) => index + 1).sort((a, b) => ((a * 37) % 101) - ((b * 37) % 101));
    for (const duration of durations) metrics.mutationFinished(duration);
    for (let call = 0; call < 20; call++) metrics.storeCall();
    addTransitions(30);
    expect(metrics.points()).toEqual([]);
    clock.advance(10_000);
    expect(metrics.points()).toEqual([
      { time: clock.nowMs(), commitsPerSec: 5, mutationP50Ms: 50, mutationP99Ms: 99, transitionsPerSec: 3, storeRequestsPerSec: 2 },
    ]);
    clock.advance(10_000);
    expect(metrics.points()[1]).toEqual({ time: clock.nowMs(), commitsPerSec: 0, mutationP50Ms: null, mutationP99Ms: null, transitionsPerSec: 0, storeRequestsPerSec: 0 });
    metrics.stop();
  });

  it("divides by the time that passed when the timer fires late (a busy event loop)", () => {
    const { clock, metrics } = history();
    metrics.commitsApplied(300);
    // The manual clock jumps 30 s at once: the one timer due fires once, 20 s late.
    clock.advance(30_000);
    expect(metrics.points()).toEqual([expect.objectContaining({ time: clock.nowMs(), commitsPerSec: 10 })]);
    metrics.stop();
  });

  it("keeps the newest 360 points of the hour, oldest first", () => {
    const { clock, metrics } = history();
    const started = clock.nowMs();
    for (let interval = 1; interval <= 365; interval++) {
      metrics.commitsApplied(interval * 10);
      clock.advance(10_000);
    }
    const points = metrics.points();
    expect(points).toHaveLength(360);
    expect(points[0]!.time).toBe(started + 6 * 10_000);
    expect(points[0]!.commitsPerSec).toBe(6);
    expect(points.at(-1)!.time).toBe(started + 365 * 10_000);
    expect(points.at(-1)!.commitsPerSec).toBe(365);
    for (let index = 1; index < points.length; index++) expect(points[index]!.time - points[index - 1]!.time).toBe(10_000);
    metrics.stop();
  });

  it("ignores malformed figures and survives a counter that throws, goes backwards or is not a number", () => {
    let counter: () => number = () => 100;
    const { clock, metrics } = history({ transitions: () => counter() });
    metrics.commitsApplied(Number.NaN);
    metrics.commitsApplied(-5);
    metrics.commitsApplied(Number.POSITIVE_INFINITY);
    metrics.mutationFinished(Number.NaN);
    metrics.mutationFinished(-3);
    counter = () => 150;
    clock.advance(10_000);
    expect(metrics.points()[0]).toMatchObject({ commitsPerSec: 0, mutationP50Ms: 0, mutationP99Ms: 0, transitionsPerSec: 5 });
    counter = () => {
      throw new Error("handler not up");
    };
    clock.advance(10_000);
    counter = () => Number.NaN;
    clock.advance(10_000);
    // A new handler counts from 0: the drop is no negative rate, and counting goes on from it.
    counter = () => 20;
    clock.advance(10_000);
    counter = () => 120;
    clock.advance(10_000);
    expect(metrics.points().map((point) => point.transitionsPerSec)).toEqual([5, 0, 0, 0, 10]);
    metrics.stop();
  });

  it("stops sampling on stop(), keeping its points", () => {
    const { clock, metrics } = history({ intervalMs: 1_000 });
    for (let second = 0; second < 3; second++) clock.advance(1_000);
    expect(metrics.points()).toHaveLength(3);
    metrics.stop();
    metrics.stop();
    expect(clock.pendingSleepers).toBe(0);
    clock.advance(10_000);
    expect(metrics.points()).toHaveLength(3);
  });

  it("refuses an interval that is not a positive integer or longer than the history", () => {
    const clock = new ManualClock();
    const base = { clock, random: new SeededRandom(1), transitionsCommitted: () => 0 };
    for (const intervalMs of [0, -1, 1.5, Number.NaN]) expect(() => new MetricsHistory({ ...base, intervalMs })).toThrow(/intervalMs/);
    expect(() => new MetricsHistory({ ...base, intervalMs: 10_000, historyMs: 5_000 })).toThrow(/historyMs/);
    expect(() => new MetricsHistory({ ...base, samplesMax: 0 })).toThrow(/samplesMax/);
    expect(clock.pendingSleepers).toBe(0);
  });

  it("bounds a busy interval's durations to a uniform sample, then starts the next interval empty", () => {
    const { clock, metrics } = history({ samplesMax: 1_000 });
    // 50,000 durations 0..49,999 ms in one interval: only 1,000 are kept.
    for (let value = 0; value < 50_000; value++) metrics.mutationFinished((value * 7_919) % 50_000);
    clock.advance(10_000);
    const [point] = metrics.points();
    expect(Math.abs(point!.mutationP50Ms! - 25_000)).toBeLessThan(2_500);
    expect(Math.abs(point!.mutationP99Ms! - 49_500)).toBeLessThan(500);
    metrics.mutationFinished(4);
    clock.advance(10_000);
    expect(metrics.points()[1]).toMatchObject({ mutationP50Ms: 4, mutationP99Ms: 4 });
    metrics.stop();
  });
});

describe("mutation reservoir", () => {
  it("keeps every duration up to its capacity, then at most its capacity", () => {
    const reservoir = new MutationReservoir(new SeededRandom(3), 10);
    for (const value of [5, 1, 4, 2, 3]) reservoir.add(value);
    expect(reservoir.percentiles([0.5, 0.99, 1])).toEqual([3, 5, 5]);
    for (let value = 0; value < 1_000; value++) reservoir.add(value);
    expect(reservoir.count).toBe(1_005);
    expect(reservoir.keptCount).toBe(10);
    reservoir.clear();
    expect(reservoir.percentiles([0.5])).toEqual([null]);
  });
});
