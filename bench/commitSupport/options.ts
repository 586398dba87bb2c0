import { CairnError } from "../../src/base/errors.js";
import { isLatencyModelName, LATENCY_MODEL_NAMES, type LatencyModelName } from "../kit/latencyModels.js";

/**
 * The commit benchmark's sizes, one flag each (`--name value`); the defaults are the
 * sizes the benchmark is specified at. Unknown flags and bad values are refused before
 * anything starts.
 */
export const BENCH_PHASES = [1, 2, 3, 4, 5] as const;
export type BenchPhase = (typeof BENCH_PHASES)[number];

export interface CommitBenchOptions {
  /** Which phases run, in order (`--phases 1,5`). */
  readonly phases: readonly BenchPhase[];
  /** The latency the endpoint injects while measuring (see latencyModels.ts). */
  readonly latency: LatencyModelName;
  /** Sequential samples of each baseline round trip (PUT, PUT + conditional GET). */
  readonly roundTrips: number;
  /** Sequential one-document commits per verify mode. */
  readonly commits: number;
  /** Concurrent writers on one shard, each committing one document at a time. */
  readonly writers: number;
  /** Measured seconds of the concurrent run, after the warm-up. */
  readonly seconds: number;
  readonly warmupSeconds: number;
  /** Also write one index entry per document in the concurrent run. */
  readonly withIndex: boolean;
  /** Documents in the bootstrap snapshot. */
  readonly documents: number;
  /** Documents per write unit while building a large shard (phases 4 and 5). */
  readonly buildUnitDocuments: number;
  /** Segments committed after the snapshot (replayed by the cold bootstrap). */
  readonly tailSegments: number;
  /** Documents per tail segment. */
  readonly tailSegmentDocuments: number;
  /** Segments committed before the warm restart. */
  readonly warmSegments: number;
  /** Documents the open-loop shard holds before anything is measured. */
  readonly openLoopDocuments: number;
  /** First arrival rate tried (mutations/s); doubled while sustained, halved while not. */
  readonly openLoopStartRate: number;
  /** Highest arrival rate tried. */
  readonly openLoopMaxRate: number;
  /** Bisection steps between the highest sustained and the lowest unsustained rate. */
  readonly openLoopBisections: number;
  /** Per rate step: seconds of arrivals before the measured window, then the window. */
  readonly openLoopWarmupSeconds: number;
  readonly openLoopSeconds: number;
  /**
   * Least length of the request-count window; it is extended (up to a limit) until a
   * snapshot and a GC pass have completed inside it.
   */
  readonly openLoopCostSeconds: number;
  /** Arrival rate of the request-count window; null: the highest sustained rate found. */
  readonly openLoopCostRate: number | null;
  /** Length of the idle window whose requests are scaled to one shard-hour. */
  readonly idleSeconds: number;
  /** Rates measured one window each before the search (`--open-loop-rates 1000,3000,6000`), for fixed-rate p50/p99. */
  readonly openLoopRates: readonly number[];
  /** The measured writer's pipelineDepth (segments in flight); null: the engine's default. */
  readonly pipelineDepth: number | null;
  /**
   * Where the bootstrap child processes write CPU profiles (`node --cpu-prof`), or null.
   * (The benchmark's own process is profiled with `node --cpu-prof --import tsx bench/commit.ts`;
   * Node refuses --cpu-prof in NODE_OPTIONS, so children need it passed explicitly.)
   */
  readonly childCpuProfileDirectory: string | null;
}

export const COMMIT_BENCH_DEFAULTS: CommitBenchOptions = {
  phases: BENCH_PHASES,
  latency: "s3-standard",
  roundTrips: 300,
  commits: 300,
  writers: 1_000,
  seconds: 10,
  warmupSeconds: 2,
  withIndex: false,
  documents: 1_000_000,
  buildUnitDocuments: 1_000,
  tailSegments: 1_000,
  tailSegmentDocuments: 10,
  warmSegments: 100,
  openLoopDocuments: 1_000_000,
  openLoopStartRate: 200,
  openLoopMaxRate: 100_000,
  openLoopBisections: 3,
  openLoopWarmupSeconds: 2,
  openLoopSeconds: 6,
  // Above the default GC interval (60 s), so a GC pass always falls inside.
  openLoopCostSeconds: 70,
  openLoopCostRate: null,
  openLoopRates: [],
  pipelineDepth: null,
  // One default GC interval: a window of whole intervals holds as many GC passes as an
  // hour has per interval, so the scaled figure is not skewed by where a pass fell.
  idleSeconds: 120,
  childCpuProfileDirectory: null,
};

/** How a numeric flag's value is read: a count from 1, a count from 0, or positive seconds. */
type ValueKind = "count" | "countFromZero" | "seconds";

type NumericOption = {
  [K in keyof CommitBenchOptions]: CommitBenchOptions[K] extends number ? K : never;
}[keyof CommitBenchOptions];

const NUMERIC_FLAGS: Readonly<Record<string, readonly [NumericOption, ValueKind]>> = {
  "--round-trips": ["roundTrips", "count"],
  "--commits": ["commits", "count"],
  "--writers": ["writers", "count"],
  "--seconds": ["seconds", "seconds"],
  "--warmup-seconds": ["warmupSeconds", "seconds"],
  "--documents": ["documents", "count"],
  "--build-unit-documents": ["buildUnitDocuments", "count"],
  "--tail-segments": ["tailSegments", "count"],
  "--tail-segment-documents": ["tailSegmentDocuments", "count"],
  "--warm-segments": ["warmSegments", "count"],
  "--open-loop-documents": ["openLoopDocuments", "count"],
  "--open-loop-start-rate": ["openLoopStartRate", "count"],
  "--open-loop-max-rate": ["openLoopMaxRate", "count"],
  "--open-loop-bisections": ["openLoopBisections", "countFromZero"],
  "--open-loop-warmup-seconds": ["openLoopWarmupSeconds", "seconds"],
  "--open-loop-seconds": ["openLoopSeconds", "seconds"],
  "--open-loop-cost-seconds": ["openLoopCostSeconds", "seconds"],
  "--idle-seconds": ["idleSeconds", "seconds"],
};

/** Flags whose value is not a number (`--with-index` takes none). */
const OTHER_FLAGS = ["--phases", "--latency", "--open-loop-cost-rate", "--child-cpu-prof-dir", "--open-loop-rates", "--pipeline-depth"] as const;
type OtherFlag = (typeof OTHER_FLAGS)[number];

type MutableOptions = { -readonly [K in keyof CommitBenchOptions]: CommitBenchOptions[K] };

export function parseCommitBenchOptions(argv: readonly string[]): CommitBenchOptions {
  const options: MutableOptions = { ...COMMIT_BENCH_DEFAULTS };
  for (let at = 0; at < argv.length; at++) {
    const flag = argv[at] as string;
    if (flag === "--with-index") {
      options.withIndex = true;
      continue;
    }
    const numeric = NUMERIC_FLAGS[flag];
    if (numeric !== undefined) {
      const [name, kind] = numeric;
      options[name] = parseValue(flag, argv[++at], kind);
      continue;
    }
    if (!(OTHER_FLAGS as readonly string[]).includes(flag)) {
      const known = [...Object.keys(NUMERIC_FLAGS), ...OTHER_FLAGS, "--with-index"];
      throw new CairnError("INVALID_ARGUMENT", `unknown flag ${JSON.stringify(flag)}; known: ${known.join(" ")}`);
    }
    parseOtherFlag(options, flag as OtherFlag, argv[++at]);
  }
  checkConsistency(options);
  return options;
}

function parseOtherFlag(options: MutableOptions, flag: OtherFlag, text: string | undefined): void {
  switch (flag) {
    case "--phases":
      options.phases = parsePhases(text);
      return;
    case "--latency":
      if (!isLatencyModelName(text)) {
        throw new CairnError("INVALID_ARGUMENT", `--latency takes one of ${LATENCY_MODEL_NAMES.join(", ")}, got ${JSON.stringify(text)}`);
      }
      options.latency = text;
      return;
    case "--open-loop-cost-rate":
      options.openLoopCostRate = parseValue(flag, text, "count");
      return;
    case "--open-loop-rates": {
      const rates = (text ?? "").split(",").map((part) => Number(part.trim()));
      if (rates.length === 0 || !rates.every((rate) => Number.isSafeInteger(rate) && rate >= 1)) {
        throw new CairnError("INVALID_ARGUMENT", `--open-loop-rates takes a comma-separated list of positive integers, got ${JSON.stringify(text)}`);
      }
      options.openLoopRates = rates;
      return;
    }
    case "--pipeline-depth":
      options.pipelineDepth = parseValue(flag, text, "count");
      return;
    case "--child-cpu-prof-dir":
      if (text === undefined || text === "" || text.startsWith("--")) {
        throw new CairnError("INVALID_ARGUMENT", "--child-cpu-prof-dir takes a directory");
      }
      options.childCpuProfileDirectory = text;
      return;
  }
}

/** "1,5" → [1, 5]: known phases, each once, run in ascending order whatever the order given. */
function parsePhases(text: string | undefined): BenchPhase[] {
  const parts = (text ?? "").split(",").map((part) => Number(part.trim()));
  const valid = parts.length > 0 && parts.every((phase) => (BENCH_PHASES as readonly number[]).includes(phase));
  if (!valid || new Set(parts).size !== parts.length) {
    throw new CairnError("INVALID_ARGUMENT", `--phases takes a comma-separated list of ${BENCH_PHASES.join(", ")}, got ${JSON.stringify(text)}`);
  }
  return (parts as BenchPhase[]).sort((a, b) => a - b);
}

function checkConsistency(options: CommitBenchOptions): void {
  if ((options.phases.includes(2) || options.phases.includes(3)) && !options.phases.includes(1)) {
    throw new CairnError("INVALID_ARGUMENT", "--phases: phases 2 and 3 are judged against phase 1's round trips; include 1");
  }
  if (options.documents < options.buildUnitDocuments) {
    throw new CairnError("INVALID_ARGUMENT", "--documents must be at least --build-unit-documents");
  }
  if (options.openLoopStartRate > options.openLoopMaxRate) {
    throw new CairnError("INVALID_ARGUMENT", "--open-loop-start-rate must not exceed --open-loop-max-rate");
  }
}

function parseValue(flag: string, text: string | undefined, kind: ValueKind): number {
  const value = Number(text);
  const inRange =
    kind === "seconds" ? Number.isFinite(value) && value > 0 : Number.isSafeInteger(value) && value >= (kind === "count" ? 1 : 0);
  const valid = text !== undefined && text.trim() !== "" && inRange;
  if (!valid) {
    const wanted = kind === "seconds" ? "a positive number" : kind === "count" ? "a positive integer" : "an integer >= 0";
    throw new CairnError("INVALID_ARGUMENT", `${flag} takes ${wanted}, got ${JSON.stringify(text)}`);
  }
  return value;
}
