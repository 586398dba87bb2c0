import { Command, InvalidArgumentError } from "commander";

/**
 * bench:replica's sizes, one flag each; the defaults are what the issue specifies, and
 * `--quick` swaps in a smoke-run preset (~3 minutes) for the flags not given explicitly.
 * Unknown flags and bad values are refused before anything starts.
 */
export const REPLICA_BENCH_PHASES = [1, 2, 3] as const;
export type ReplicaBenchPhase = (typeof REPLICA_BENCH_PHASES)[number];

export interface ReplicaBenchOptions {
  readonly phases: readonly ReplicaBenchPhase[];
  /** Phase 1: measured bumps per mode (with and without wake hints), after the warm-ups. */
  readonly samples: number;
  readonly warmups: number;
  /**
   * Phase 1: the pause before each bump, uniform in [min, max] ms after the replica's
   * client saw the previous one. The default [2,000, 3,000] first outlasts the tailer's
   * backoff ramp (25 → 800 ms, ~1.7 s of waits and empty polls after a segment), so the
   * replica is at its idle poll, then lands at a random phase of that 1 s poll.
   */
  readonly spacingMinMs: number;
  readonly spacingMaxMs: number;
  /** Commits each writer makes with the endpoint's latency off before anything is measured (JIT warm-up; the replica tails them). */
  readonly serverWarmupCommits: number;
  /** The replicas' idle poll (`cairn serve --poll-interval-ms`). */
  readonly pollIntervalMs: number;
  /** Phase 2: the idle window whose replica requests are scaled to an hour. */
  readonly idleSeconds: number;
  /** Phase 3: how long the replica stays SIGSTOPped while the writer takes the load. */
  readonly pauseSeconds: number;
  /** Phase 3: closed-loop writers (sync clients of the writer), one mutation in flight each. */
  readonly loadWriters: number;
  /** Phase 3: the JSON size of each inserted document, roughly (its body is sized to reach it). */
  readonly documentBytes: number;
  /** Seeds the spacing and the document bodies. */
  readonly seed: number;
  readonly quick: boolean;
}

export const REPLICA_BENCH_DEFAULTS: ReplicaBenchOptions = {
  phases: REPLICA_BENCH_PHASES,
  samples: 200,
  warmups: 10,
  spacingMinMs: 2_000,
  spacingMaxMs: 3_000,
  serverWarmupCommits: 300,
  pollIntervalMs: 1_000,
  idleSeconds: 120,
  pauseSeconds: 300,
  loadWriters: 8,
  documentBytes: 200,
  seed: 1,
  quick: false,
};

/** What --quick changes (everything else keeps its default). */
export const QUICK_PRESET: Partial<ReplicaBenchOptions> = {
  samples: 8,
  warmups: 1,
  serverWarmupCommits: 50,
  // One renewal of the node registry (every 30 s) falls inside it.
  idleSeconds: 30,
  pauseSeconds: 20,
};

type NumericOption = { [K in keyof ReplicaBenchOptions]: ReplicaBenchOptions[K] extends number ? K : never }[keyof ReplicaBenchOptions];

/** Flag name → option, for the numeric flags. */
const NUMERIC_FLAGS: readonly { readonly flag: string; readonly key: NumericOption; readonly min: number; readonly help: string }[] = [
  { flag: "samples", key: "samples", min: 1, help: "phase 1: measured bumps per mode" },
  { flag: "warmups", key: "warmups", min: 0, help: "phase 1: unmeasured bumps per mode first" },
  { flag: "spacing-min-ms", key: "spacingMinMs", min: 0, help: "phase 1: least pause before a bump" },
  { flag: "spacing-max-ms", key: "spacingMaxMs", min: 0, help: "phase 1: longest pause before a bump" },
  { flag: "server-warmup-commits", key: "serverWarmupCommits", min: 0, help: "commits per writer with latency off before measuring" },
  { flag: "poll-interval-ms", key: "pollIntervalMs", min: 1, help: "the replicas' idle poll" },
  { flag: "idle-seconds", key: "idleSeconds", min: 1, help: "phase 2: idle window" },
  { flag: "pause-seconds", key: "pauseSeconds", min: 1, help: "phase 3: how long the replica is SIGSTOPped" },
  { flag: "load-writers", key: "loadWriters", min: 1, help: "phase 3: concurrent closed-loop writers" },
  { flag: "document-bytes", key: "documentBytes", min: 100, help: "phase 3: size of each inserted document" },
  { flag: "seed", key: "seed", min: 0, help: "seed of the spacing and document bodies" },
];

export function parseReplicaBenchOptions(argv: readonly string[]): ReplicaBenchOptions {
  const program = new Command()
    .name("bench:replica")
    .description("commit → Transition on a replica (with and without wake hints), an idle replica's S3 requests, catch-up after a pause")
    .option("--phases <list>", `phases to run, e.g. 1,3 (default ${REPLICA_BENCH_PHASES.join(",")})`, parsePhases)
    .option("--quick", `smoke-run preset: ${Object.entries(QUICK_PRESET).map(([key, value]) => `${key} ${value}`).join(", ")}`)
    .allowExcessArguments(false);
  for (const { flag, key, min, help } of NUMERIC_FLAGS) {
    program.option(`--${flag} <n>`, `${help} (default ${REPLICA_BENCH_DEFAULTS[key]})`, wholeNumber(min));
  }
  program.parse([...argv], { from: "user" });
  const given = program.opts<Record<string, unknown>>();
  const quick = given["quick"] === true;
  const options: Record<string, unknown> = { ...REPLICA_BENCH_DEFAULTS, ...(quick ? QUICK_PRESET : {}), quick };
  for (const key of ["phases", ...NUMERIC_FLAGS.map((flag) => flag.key)]) {
    if (given[key] !== undefined) options[key] = given[key];
  }
  const parsed = options as unknown as ReplicaBenchOptions;
  if (parsed.spacingMaxMs < parsed.spacingMinMs) program.error("error: --spacing-max-ms must be at least --spacing-min-ms");
  return parsed;
}

function wholeNumber(min: number): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(parsed) || parsed < min) throw new InvalidArgumentError(`expected a whole number ≥ ${min}`);
    return parsed;
  };
}

function parsePhases(list: string): ReplicaBenchPhase[] {
  const phases = list.split(",").map((item) => Number(item.trim()));
  for (const phase of phases) {
    if (!(REPLICA_BENCH_PHASES as readonly number[]).includes(phase)) throw new InvalidArgumentError(`expected some of ${REPLICA_BENCH_PHASES.join(",")}`);
  }
  return REPLICA_BENCH_PHASES.filter((phase) => phases.includes(phase));
}
