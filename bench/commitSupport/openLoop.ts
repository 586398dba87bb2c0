import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import type { ShardEngineTuning } from "../../src/shard/engineOptions.js";
import type { EndpointCounters } from "../kit/endpointProtocol.js";
import type { BenchLatencyModel } from "../kit/latencyModels.js";
import { round } from "../kit/LatencySummary.js";
import { OpenLoopMutations } from "./openLoopMutations.js";
import { EngineEventTally, type EngineEventCounts } from "./EngineEventTally.js";
import { runOpenLoopWindow, type OpenLoopTarget, type WindowFigures } from "./openLoopWindow.js";
import type { CommitBenchOptions } from "./options.js";
import { preloadShard, type PreloadFigures } from "./preloadedShard.js";
import { RateSearch } from "./RateSearch.js";
import type { RemoteEndpoint } from "../kit/RemoteEndpoint.js";
import { idleRequestCosts, mutationRequestCosts, type IdleRequestCosts, type MutationRequestCosts } from "./requestCosts.js";
import type { RoundTripFigures } from "./roundTrips.js";
import { progressPrinter } from "../kit/progress.js";

const progress = progressPrinter("  ");

/**
 * Phase 5: open-loop load on a shard that already holds `openLoopDocuments` documents
 * (preloadedShard.ts), with the engine's default tuning and its heartbeat and
 * maintenance drivers running, under the selected latency model.
 *
 * 1. Rate search (RateSearch): each step is an open-loop run at one Poisson arrival rate
 *    (openLoopWindow.ts: warm-up, measured window, drain), judged sustained or not
 *    against a p99 bound of OPEN_LOOP_P99_ROUND_TRIPS_MAX round trips, one round trip
 *    being phase 1's measured PUT p50, or the model's PUT p50 when phase 1 did not run;
 *    and kept up or not (the same criteria but the bound).
 * 2. Request costs: one more run, at the highest sustained rate (or --open-loop-cost-rate),
 *    whose window lasts at least openLoopCostSeconds and is extended until a snapshot and
 *    a GC pass have both completed inside it (COST_EXTENSION_SECONDS_MAX at most), so the
 *    requests per 1,000 mutations include maintenance at its default cadence.
 * 3. Idle: after one maintenance interval of quiet, the endpoint's requests over
 *    idleSeconds with no mutation at all, scaled to one shard-hour, counted once the shard
 *    is idle (idleAfterMs without a commit: its lease stretched, GC passes that find
 *    nothing skipped).
 */
export type OpenLoopOptions = Pick<
  CommitBenchOptions,
  | "openLoopDocuments"
  | "buildUnitDocuments"
  | "openLoopStartRate"
  | "openLoopMaxRate"
  | "openLoopBisections"
  | "openLoopWarmupSeconds"
  | "openLoopSeconds"
  | "openLoopCostSeconds"
  | "openLoopCostRate"
  | "idleSeconds"
  | "openLoopRates"
  | "pipelineDepth"
  | "verify"
>;

export const OPEN_LOOP_P99_ROUND_TRIPS_MAX = 6;

export interface LatencyBound {
  readonly roundTripMs: number;
  /** Where the round trip comes from. */
  readonly source: "phase 1 measured PUT p50" | "latency model PUT p50";
  readonly p99MsMax: number;
}

/** The engine tuning the measured writer ran with (the defaults), as far as request counts depend on it. */
export type MeasuredTuning = Pick<
  ShardEngineTuning,
  | "verify"
  | "pipelineDepth"
  | "heartbeatIntervalMs"
  | "maintenanceIntervalMs"
  | "snapshotEverySegments"
  | "snapshotEveryBytes"
  | "snapshotEveryMs"
  | "gcIntervalMs"
  | "gcSweepEveryRuns"
  | "flushUnitsMax"
>;

export interface OpenLoopFigures {
  readonly latencyModel: string;
  readonly store: PreloadFigures & { readonly documentsAtEnd: number };
  readonly tuning: MeasuredTuning;
  readonly latencyBound: LatencyBound;
  readonly steps: readonly WindowFigures[];
  readonly maxSustainedRate: number | null;
  /** The highest rate whose completions kept up with arrivals, p99 aside (throughput, not latency). */
  readonly maxKeptUpRate: number | null;
  readonly cost: WindowFigures & MutationRequestCosts & { readonly extendedForMaintenance: boolean };
  readonly idle: IdleRequestCosts & EngineEventCounts;
  readonly lastDriverError: string | null;
}

/** How far the request-count window may run past its least length waiting for a snapshot and a GC pass. */
const COST_EXTENSION_SECONDS_MAX = 240;

export function latencyBoundOf(roundTrips: RoundTripFigures | null, model: BenchLatencyModel): LatencyBound {
  const measured = roundTrips?.put.p50Ms;
  const roundTripMs = measured ?? model.putP50Ms;
  return {
    roundTripMs,
    source: measured === undefined ? "latency model PUT p50" : "phase 1 measured PUT p50",
    p99MsMax: round(OPEN_LOOP_P99_ROUND_TRIPS_MAX * roundTripMs, 2),
  };
}

export async function measureOpenLoop(
  endpoint: RemoteEndpoint,
  directory: string,
  options: OpenLoopOptions,
  latencyBound: LatencyBound,
): Promise<OpenLoopFigures> {
  const events = new EngineEventTally();
  const shard = await preloadShard(
    endpoint,
    directory,
    options.openLoopDocuments,
    options.buildUnitDocuments,
    (event) => events.observe(event),
    { verify: options.verify, ...(options.pipelineDepth === null ? {} : { pipelineDepth: options.pipelineDepth }) },
  );
  try {
    await endpoint.latencyOn();
    const target: OpenLoopTarget = {
      engine: shard.writer.engine,
      mutations: new OpenLoopMutations(new SeededRandom(41), shard.ids),
      events,
      random: new SeededRandom(43),
    };
    const { steps, maxSustainedRate, maxKeptUpRate } = await searchRate(target, options, latencyBound);
    const cost = await measureCost(endpoint, target, options, maxSustainedRate ?? Math.min(...steps.map((step) => step.targetRate)), latencyBound);
    // Quiet until the shard is idle (its lease stretched) and past one idle renewal: the steady state.
    const { tuning } = shard.writer.engine;
    const idle = await measureIdle(endpoint, target, options.idleSeconds, Math.max(tuning.maintenanceIntervalMs, tuning.idleAfterMs + tuning.idleHeartbeatIntervalMs));
    return {
      latencyModel: endpoint.latencyModel.description,
      store: { ...shard.figures, documentsAtEnd: target.mutations.documents },
      tuning: measuredTuning(shard.writer.engine.tuning),
      latencyBound,
      steps,
      maxSustainedRate,
      maxKeptUpRate,
      cost,
      idle,
      lastDriverError: events.lastDriverError,
    };
  } finally {
    await shard.writer.close();
  }
}

async function searchRate(
  target: OpenLoopTarget,
  options: OpenLoopOptions,
  bound: LatencyBound,
): Promise<{ steps: WindowFigures[]; maxSustainedRate: number | null; maxKeptUpRate: number | null }> {
  const search = new RateSearch({ startRate: options.openLoopStartRate, maxRate: options.openLoopMaxRate, bisections: options.openLoopBisections });
  const steps: WindowFigures[] = [];
  // Fixed rates first: p50/p99 where a reader wants them, whatever the search visits.
  for (const rate of options.openLoopRates) {
    progress(`${rate} mutations/s (fixed): ${options.openLoopWarmupSeconds} s warm-up + ${options.openLoopSeconds} s measured…`);
    const step = await runOpenLoopWindow(target, { rate, warmupSeconds: options.openLoopWarmupSeconds, measuredSeconds: options.openLoopSeconds }, bound.p99MsMax);
    steps.push(step);
    progress(`  ${step.completionsPerSecond} commits/s, p50 ${step.commit.p50Ms} ms, p99 ${step.commit.p99Ms} ms: ${verdictOf(step)}`);
    assertStillWriting(target, step);
  }
  for (let rate = search.next; rate !== null; rate = search.next) {
    progress(`${rate} mutations/s: ${options.openLoopWarmupSeconds} s warm-up + ${options.openLoopSeconds} s measured…`);
    const step = await runOpenLoopWindow(
      target,
      { rate, warmupSeconds: options.openLoopWarmupSeconds, measuredSeconds: options.openLoopSeconds },
      bound.p99MsMax,
    );
    steps.push(step);
    progress(`  ${step.completionsPerSecond} commits/s, p50 ${step.commit.p50Ms} ms, p99 ${step.commit.p99Ms} ms: ${verdictOf(step)}`);
    assertStillWriting(target, step);
    search.record(rate, step);
  }
  return { steps, maxSustainedRate: search.maxSustained, maxKeptUpRate: search.maxKeptUp };
}

async function measureCost(
  endpoint: RemoteEndpoint,
  target: OpenLoopTarget,
  options: OpenLoopOptions,
  searchedRate: number,
  bound: LatencyBound,
): Promise<OpenLoopFigures["cost"]> {
  const rate = options.openLoopCostRate ?? searchedRate;
  progress(`request counts at ${rate} mutations/s: at least ${options.openLoopCostSeconds} s, until a snapshot and a GC pass fell inside…`);
  let counters: EndpointCounters | undefined;
  const window = await runOpenLoopWindow(
    target,
    {
      rate,
      warmupSeconds: options.openLoopWarmupSeconds,
      measuredSeconds: options.openLoopCostSeconds,
      endOnRunaway: false,
      extendWhile: (inWindow) => inWindow.snapshots === 0 || inWindow.gcPasses === 0,
      extensionSecondsMax: COST_EXTENSION_SECONDS_MAX,
      onOpen: () => endpoint.resetCounters(),
      onClose: async () => {
        counters = await endpoint.counters();
      },
    },
    bound.p99MsMax,
  );
  assertStillWriting(target, window);
  if (counters === undefined || window.acknowledged === 0) throw new CairnError("INTERNAL", "the request-count window acknowledged no commit");
  progress(`  ${window.measuredSeconds} s, ${window.snapshots} snapshots, ${window.gcPasses} GC passes: ${verdictOf(window)}`);
  return {
    ...window,
    ...mutationRequestCosts(counters, window.acknowledged),
    extendedForMaintenance: window.measuredSeconds > options.openLoopCostSeconds + 0.5,
  };
}

async function measureIdle(
  endpoint: RemoteEndpoint,
  target: OpenLoopTarget,
  idleSeconds: number,
  quietMs: number,
): Promise<OpenLoopFigures["idle"]> {
  progress(`idle: ${quietMs / 1000} s of quiet, then ${idleSeconds} s counted…`);
  await sleep(quietMs);
  const before = target.events.current;
  await endpoint.resetCounters();
  const startedMs = performance.now();
  await sleep(idleSeconds * 1000);
  const counters = await endpoint.counters();
  const measuredSeconds = (performance.now() - startedMs) / 1000;
  const after = target.events.current;
  if (target.engine.state.kind !== "writing") throw new CairnError("INTERNAL", `the idle writer stopped: ${target.engine.state.kind}`);
  return {
    ...idleRequestCosts(counters, measuredSeconds),
    snapshots: after.snapshots - before.snapshots,
    gcPasses: after.gcPasses - before.gcPasses,
    driverErrors: after.driverErrors - before.driverErrors,
  };
}

/** A writer that stopped (fenced, poisoned) or a drain that gave up makes every later step meaningless. */
function assertStillWriting(target: OpenLoopTarget, window: WindowFigures): void {
  const state = target.engine.state;
  if (state.kind !== "writing") {
    const reason = "error" in state ? state.error.message : state.kind;
    throw new CairnError("INTERNAL", `the measured writer stopped during the ${window.targetRate}/s run: ${reason}`);
  }
  if (window.unfinished > 0) {
    throw new CairnError("INTERNAL", `${window.unfinished} mutations of the ${window.targetRate}/s run never finished`);
  }
}

function measuredTuning(tuning: ShardEngineTuning): MeasuredTuning {
  const { verify, heartbeatIntervalMs, maintenanceIntervalMs, snapshotEverySegments, snapshotEveryBytes, snapshotEveryMs } = tuning;
  const { gcIntervalMs, gcSweepEveryRuns, flushUnitsMax, pipelineDepth } = tuning;
  return {
    verify,
    pipelineDepth,
    heartbeatIntervalMs,
    maintenanceIntervalMs,
    snapshotEverySegments,
    snapshotEveryBytes,
    snapshotEveryMs,
    gcIntervalMs,
    gcSweepEveryRuns,
    flushUnitsMax,
  };
}

function verdictOf(window: WindowFigures): string {
  return window.sustained ? "sustained" : `not sustained (${window.notSustainedBecause.join("; ")})`;
}
