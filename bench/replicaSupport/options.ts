import { flag, parseFlags, type FlagValues } from "../kit/flags.js";

/**
 * bench:replica's sizes, one flag each; the defaults are what the issue specifies, and
 * `--quick` swaps in a smoke-run preset (~3 minutes) for the flags not given explicitly.
 */
export const REPLICA_BENCH_PHASES = [1, 2, 3] as const;
export type ReplicaBenchPhase = (typeof REPLICA_BENCH_PHASES)[number];

/** What --quick changes (everything else keeps its default). */
export const QUICK_PRESET = {
  samples: 8,
  warmups: 1,
  serverWarmupCommits: 50,
  // One renewal of the node registry (every 30 s) falls inside it.
  idleSeconds: 30,
  pauseSeconds: 20,
} as const;

const REPLICA_BENCH_FLAGS = {
  phases: flag.phases(REPLICA_BENCH_PHASES),
  /** Phase 1: measured bumps per mode (with and without wake hints), after the warm-ups. */
  samples: flag.wholeNumber("phase 1: measured bumps per mode", 200),
  warmups: flag.wholeNumber("phase 1: unmeasured bumps per mode first", 10, 0),
  /**
   * Phase 1: the pause before each bump, uniform in [min, max] ms after the replica's
   * client saw the previous one. The default [2,000, 3,000] first outlasts the tailer's
   * backoff ramp (25 → 800 ms, ~1.7 s of waits and empty polls after a segment), so the
   * replica is at its idle poll, then lands at a random phase of that 1 s poll.
   */
  spacingMinMs: flag.wholeNumber("phase 1: least pause before a bump", 2_000, 0),
  spacingMaxMs: flag.wholeNumber("phase 1: longest pause before a bump", 3_000, 0),
  /** Commits each writer makes with the endpoint's latency off before anything is measured (JIT warm-up; the replica tails them). */
  serverWarmupCommits: flag.wholeNumber("commits per writer with latency off before measuring", 300, 0),
  /** The replicas' idle poll (`cairn serve --poll-interval-ms`). */
  pollIntervalMs: flag.wholeNumber("the replicas' idle poll", 1_000),
  /** Phase 2: the idle window whose replica requests are scaled to an hour. */
  idleSeconds: flag.wholeNumber("phase 2: idle window", 120),
  /** Phase 3: how long the replica stays SIGSTOPped while the writer takes the load. */
  pauseSeconds: flag.wholeNumber("phase 3: how long the replica is SIGSTOPped", 300),
  /** Phase 3: closed-loop writers (sync clients of the writer), one mutation in flight each. */
  loadWriters: flag.wholeNumber("phase 3: concurrent closed-loop writers", 8),
  /** Phase 3: the JSON size of each inserted document, roughly (its body is sized to reach it). */
  documentBytes: flag.wholeNumber("phase 3: size of each inserted document", 200, 100),
  /** Seeds the spacing and the document bodies. */
  seed: flag.wholeNumber("seed of the spacing and document bodies", 1, 0),
  quick: flag.switch(`smoke-run preset: ${Object.entries(QUICK_PRESET).map(([key, value]) => `${key} ${value}`).join(", ")}`),
};

export type ReplicaBenchOptions = FlagValues<typeof REPLICA_BENCH_FLAGS>;

export function parseReplicaBenchOptions(argv: readonly string[]): ReplicaBenchOptions {
  return parseFlags(argv, {
    name: "bench:replica",
    description: "commit → Transition on a replica (with and without wake hints), an idle replica's S3 requests, catch-up after a pause",
    flags: REPLICA_BENCH_FLAGS,
    presets: { quick: QUICK_PRESET },
    check: (options) => (options.spacingMaxMs < options.spacingMinMs ? "--spacing-max-ms must be at least --spacing-min-ms" : null),
  });
}
