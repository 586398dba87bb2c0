import { CairnError } from "../../src/base/errors.js";

/**
 * The commit benchmark's sizes, one flag each (`--name value`); the defaults are the
 * sizes the benchmark is specified at. Unknown flags and bad values are refused before
 * anything starts.
 */
export interface CommitBenchOptions {
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
  /** Documents per write unit while building the snapshot. */
  readonly buildUnitDocuments: number;
  /** Segments committed after the snapshot (replayed by the cold bootstrap). */
  readonly tailSegments: number;
  /** Documents per tail segment. */
  readonly tailSegmentDocuments: number;
  /** Segments committed before the warm restart. */
  readonly warmSegments: number;
  /**
   * Where the bootstrap child processes write CPU profiles (`node --cpu-prof`), or null.
   * (The benchmark's own process is profiled with `node --cpu-prof --import tsx bench/commit.ts`;
   * Node refuses --cpu-prof in NODE_OPTIONS, so children need it passed explicitly.)
   */
  readonly childCpuProfileDirectory: string | null;
}

export const COMMIT_BENCH_DEFAULTS: CommitBenchOptions = {
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
  childCpuProfileDirectory: null,
};

type NumericOption = Exclude<keyof CommitBenchOptions, "withIndex" | "childCpuProfileDirectory">;

const NUMERIC_FLAGS: Readonly<Record<string, NumericOption>> = {
  "--round-trips": "roundTrips",
  "--commits": "commits",
  "--writers": "writers",
  "--seconds": "seconds",
  "--warmup-seconds": "warmupSeconds",
  "--documents": "documents",
  "--build-unit-documents": "buildUnitDocuments",
  "--tail-segments": "tailSegments",
  "--tail-segment-documents": "tailSegmentDocuments",
  "--warm-segments": "warmSegments",
};

/** Seconds may be fractional (short runs while profiling); everything else counts things. */
const FRACTIONAL: ReadonlySet<NumericOption> = new Set(["seconds", "warmupSeconds"]);

export function parseCommitBenchOptions(argv: readonly string[]): CommitBenchOptions {
  const options: { -readonly [K in keyof CommitBenchOptions]: CommitBenchOptions[K] } = { ...COMMIT_BENCH_DEFAULTS };
  for (let at = 0; at < argv.length; at++) {
    const flag = argv[at] as string;
    if (flag === "--with-index") {
      options.withIndex = true;
      continue;
    }
    if (flag === "--child-cpu-prof-dir") {
      const directory = argv[++at];
      if (directory === undefined || directory === "" || directory.startsWith("--")) {
        throw new CairnError("INVALID_ARGUMENT", "--child-cpu-prof-dir takes a directory");
      }
      options.childCpuProfileDirectory = directory;
      continue;
    }
    const name = NUMERIC_FLAGS[flag];
    if (name === undefined) {
      const known = [...Object.keys(NUMERIC_FLAGS), "--with-index", "--child-cpu-prof-dir"];
      throw new CairnError("INVALID_ARGUMENT", `unknown flag ${JSON.stringify(flag)}; known: ${known.join(" ")}`);
    }
    options[name] = parseValue(flag, argv[++at], FRACTIONAL.has(name));
  }
  if (options.documents < options.buildUnitDocuments) {
    throw new CairnError("INVALID_ARGUMENT", "--documents must be at least --build-unit-documents");
  }
  return options;
}

function parseValue(flag: string, text: string | undefined, fractional: boolean): number {
  const value = Number(text);
  const inRange = fractional ? Number.isFinite(value) && value > 0 : Number.isSafeInteger(value) && value >= 1;
  const valid = text !== undefined && text.trim() !== "" && inRange;
  if (!valid) {
    throw new CairnError("INVALID_ARGUMENT", `${flag} takes a positive ${fractional ? "number" : "integer"}, got ${JSON.stringify(text)}`);
  }
  return value;
}
