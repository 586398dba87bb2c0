import { flag, parseFlags, type FlagValues } from "../kit/flags.js";
import { LATENCY_MODEL_NAMES } from "../kit/latencyModels.js";

/**
 * The commit benchmark's sizes, one flag each (`--name value`); the defaults are the
 * sizes the benchmark is specified at.
 */
export const BENCH_PHASES = [1, 2, 3, 4, 5, 6] as const;
export type BenchPhase = (typeof BENCH_PHASES)[number];

const COMMIT_BENCH_FLAGS = {
  /** Which phases run, in order (`--phases 1,5`). */
  phases: flag.phases(BENCH_PHASES),
  /** The latency the endpoint injects while measuring (see ../kit/latencyModels.ts). */
  latency: flag.choice("the latency the endpoint injects while measuring", LATENCY_MODEL_NAMES, "s3-standard"),
  /** Sequential samples of each baseline round trip (PUT, PUT + conditional GET). */
  roundTrips: flag.wholeNumber("phase 1: sequential samples of each baseline round trip", 300),
  /** Sequential one-document commits per verify mode. */
  commits: flag.wholeNumber("phase 2: sequential one-document commits per verify mode", 300),
  /** Concurrent writers on one shard, each committing one document at a time. */
  writers: flag.wholeNumber("phase 3: concurrent writers on one shard", 1_000),
  /** Measured seconds of the concurrent run, after the warm-up. */
  seconds: flag.seconds("phase 3: measured seconds", 10),
  warmupSeconds: flag.seconds("phase 3: warm-up seconds", 2),
  /** Also write one index entry per document in the concurrent run. */
  withIndex: flag.switch("phase 3: also write one index entry per document"),
  /** Documents in the bootstrap snapshot. */
  documents: flag.wholeNumber("phase 4: documents in the bootstrap snapshot", 1_000_000),
  /** Documents per write unit while building a large shard (phases 4 and 5). */
  buildUnitDocuments: flag.wholeNumber("phases 4 and 5: documents per write unit while building a large shard", 1_000),
  /** Segments committed after the snapshot (replayed by the cold bootstrap). */
  tailSegments: flag.wholeNumber("phase 4: segments committed after the snapshot", 1_000),
  /** Documents per tail segment. */
  tailSegmentDocuments: flag.wholeNumber("phase 4: documents per tail segment", 10),
  /** Segments committed before the warm restart. */
  warmSegments: flag.wholeNumber("phase 4: segments committed before the warm restart", 100),
  /** Documents the open-loop shard holds before anything is measured. */
  openLoopDocuments: flag.wholeNumber("phase 5: documents the shard holds before anything is measured", 1_000_000),
  /** First arrival rate tried (mutations/s); doubled while sustained, halved while not. */
  openLoopStartRate: flag.wholeNumber("phase 5: first arrival rate tried, mutations/s", 200),
  /** Highest arrival rate tried. */
  openLoopMaxRate: flag.wholeNumber("phase 5: highest arrival rate tried, mutations/s", 100_000),
  /** Bisection steps between the highest sustained and the lowest unsustained rate. */
  openLoopBisections: flag.wholeNumber("phase 5: bisection steps between the highest sustained and the lowest unsustained rate", 3, 0),
  /** Per rate step: seconds of arrivals before the measured window, then the window. */
  openLoopWarmupSeconds: flag.seconds("phase 5: warm-up seconds per rate step", 2),
  openLoopSeconds: flag.seconds("phase 5: measured seconds per rate step", 6),
  /**
   * Least length of the request-count window; it is extended (up to a limit) until a
   * snapshot and a GC pass have completed inside it. Above the default GC interval (60 s),
   * so a GC pass always falls inside.
   */
  openLoopCostSeconds: flag.seconds("phase 5: least length of the request-count window", 70),
  /** Arrival rate of the request-count window; null: the highest sustained rate found. */
  openLoopCostRate: flag.optionalWholeNumber("phase 5: arrival rate of the request-count window", { absent: "the highest sustained rate" }),
  /** Rates measured one window each before the search (`--open-loop-rates 1000,3000,6000`), for fixed-rate p50/p99. */
  openLoopRates: flag.wholeNumbers("phase 5: rates measured one window each before the search", []),
  serveDocuments: flag.wholeNumber("phase 6: rows `cairn serve` is filled with before its open loop", 1_000_000),
  serveRate: flag.wholeNumber("phase 6: rows:move arrivals a second at `cairn serve`", 3_000),
  serveSeconds: flag.seconds("phase 6: seconds of the open loop at `cairn serve`", 30),
  serveFrom: flag.choice("phase 6: run the built package (dist/, built first, as an installed `cairn`) or the sources through tsx (as `npm start`)", ["package", "source"], "package"),
  serveHeapMib: flag.optionalWholeNumber("phase 6: `cairn serve --heap-mib` (0: no limit of its own)", { absent: "serve's default", min: 0 }),
  /**
   * How the measured writer checks a created segment before acknowledging it: "always" (the
   * default: a GET of the manifest per check) or "lease" (none while its lease surely holds).
   */
  verify: flag.choice("phase 5: how the measured writer checks each created segment before acknowledging it", ["always", "lease"], "always"),
  /** The measured writer's pipelineDepth (segments in flight); null: the engine's default. */
  pipelineDepth: flag.optionalWholeNumber("the measured writer's pipelineDepth", { absent: "the engine's" }),
  /**
   * Length of the idle window whose requests are scaled to one shard-hour. One default GC
   * interval: a window of whole intervals holds as many GC passes as an hour has per
   * interval, so the scaled figure is not skewed by where a pass fell.
   */
  idleSeconds: flag.seconds("phase 5: idle window scaled to one shard-hour", 120),
  /**
   * Where the bootstrap child processes write CPU profiles (`node --cpu-prof`), or null.
   * (The benchmark's own process is profiled with `node --cpu-prof --import tsx bench/commit.ts`;
   * Node refuses --cpu-prof in NODE_OPTIONS, so children need it passed explicitly.)
   */
  childCpuProfileDirectory: flag.optionalText("phase 4: where the bootstrap children write CPU profiles", "dir", { name: "child-cpu-prof-dir" }),
};

export type CommitBenchOptions = FlagValues<typeof COMMIT_BENCH_FLAGS>;

export function parseCommitBenchOptions(argv: readonly string[]): CommitBenchOptions {
  return parseFlags(argv, {
    name: "bench:commit",
    description: "the shard engine's commits against an S3 latency model, bootstrap, and S3 requests per mutation under open-loop load",
    flags: COMMIT_BENCH_FLAGS,
    check: consistencyProblem,
  });
}

function consistencyProblem(options: CommitBenchOptions): string | null {
  if ((options.phases.includes(2) || options.phases.includes(3)) && !options.phases.includes(1)) {
    return "--phases: phases 2 and 3 are judged against phase 1's round trips; include 1";
  }
  if (options.documents < options.buildUnitDocuments) return "--documents must be at least --build-unit-documents";
  if (options.openLoopStartRate > options.openLoopMaxRate) return "--open-loop-start-rate must not exceed --open-loop-max-rate";
  return null;
}
