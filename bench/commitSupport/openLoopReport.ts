import { round } from "../kit/LatencySummary.js";
import type { OpenLoopFigures } from "./openLoop.js";
import { OPEN_LOOP_P99_ROUND_TRIPS_MAX } from "./openLoop.js";
import { UPDATE_FRACTION } from "./openLoopMutations.js";
import { writerPeakRssRow, type WriterPeakRss } from "./writerPeakRss.js";
import type { WindowFigures } from "./openLoopWindow.js";
import { columns, latencies, mib, ms, perOperation, verdict, type TableLine } from "../kit/report.js";

/** Phase 5's section of the benchmark table (see openLoop.ts for what each figure is). */
export function openLoopLines(figures: OpenLoopFigures & WriterPeakRss): TableLine[] {
  const { store, latencyBound, tuning } = figures;
  const updatePercent = Math.round(UPDATE_FRACTION * 100);
  const bound = `${OPEN_LOOP_P99_ROUND_TRIPS_MAX} × ${ms(latencyBound.roundTripMs)} (${latencyBound.source}) = ${ms(latencyBound.p99MsMax)}`;
  return [
    `5. open loop: Poisson arrivals on one shard of ${store.documents.toLocaleString("en-US")} documents`,
    {
      block: [
        `latency: ${figures.latencyModel}`,
        `mutation: read 1 random document at the read ts; ${updatePercent}% update it (prevTs = the version read, its index`,
        `  entry moved), ${100 - updatePercent}% insert one with its index entry; OCC read set on the document read; a receipt`,
        `engine: pipelineDepth ${tuning.pipelineDepth}, otherwise the default tuning; heartbeat and maintenance drivers running (verify ${tuning.verify}, heartbeat every`,
        `  ${tuning.heartbeatIntervalMs / 1000} s, snapshot every ${tuning.snapshotEverySegments} segments / ${mib(tuning.snapshotEveryBytes)} MiB / ` +
          `${tuning.snapshotEveryMs / 60_000} min, GC every ${tuning.gcIntervalMs / 1000} s)`,
        "limit: λB + 3√(λB), λB being the mutations in flight if every one took the bound B;",
        "kept up: the backlog grew by at most the limit over the window, no failure, no runaway;",
        `sustained: kept up, p99 <= ${bound},`,
        "  and the backlog at close within the limit.",
        "Latency runs from the scheduled arrival to the acknowledgement; the backlog counts arrivals not yet started.",
      ],
    },
    ["documents at start / at end", `${store.documents} / ${store.documentsAtEnd}`, ""],
    ["local SQLite MiB; snapshot parts / MiB", `${mib(store.localFileBytes)}; ${store.snapshotParts} / ${mib(store.snapshotBytes)}`, ""],
    ["set-up s (latency off): build / snapshot / re-open", `${store.buildSeconds} / ${store.snapshotSeconds} / ${store.reopenSeconds}`, ""],
    writerPeakRssRow(figures),
    `   rate steps: ${figures.steps[0]?.measuredSeconds ?? 0} s measured each, after a warm-up`,
    stepTable(figures.steps),
    { block: figures.steps.filter((step) => !step.sustained).map((step) => `  ${step.targetRate}/s not sustained: ${step.notSustainedBecause.join("; ")}`) },
    ["maximum sustained rate", rateText(figures.maxSustainedRate), ""],
    ["highest rate kept up (p99 aside)", rateText(figures.maxKeptUpRate), ""],
    ...costLines(figures),
    ...idleLines(figures),
    ...(figures.lastDriverError === null ? [] : [["last driver error", figures.lastDriverError, ""] as const]),
  ];
}

function rateText(rate: number | null): string {
  return rate === null ? "none" : `${rate} mutations/s`;
}

function stepTable(steps: readonly WindowFigures[]): TableLine {
  const header = [
    "rate/s",
    "arrived/s",
    "commits/s",
    "p50 / p99",
    "backlog open → close (peak) / limit",
    "conflicts",
    "failures",
    "CPU µs/commit",
    "cores",
    "loop p99 / max",
    "snap / GC",
    "kept up",
    "sustained",
  ];
  const rows = steps.map((step) => [
    String(step.targetRate),
    String(step.arrivalsPerSecond),
    String(step.completionsPerSecond),
    latencies(step.commit),
    `${step.backlogAtOpen} → ${step.backlogAtClose} (${step.backlogPeak}) / ${step.backlogLimit}`,
    String(step.conflicts),
    failureText(step),
    Number.isNaN(step.cpuMicrosPerCommit) ? "-" : String(step.cpuMicrosPerCommit),
    step.cpuCores.toFixed(2),
    `${ms(step.eventLoopDelayP99Ms)} / ${ms(step.eventLoopDelayMaxMs)}`,
    `${step.snapshots} / ${step.gcPasses}`,
    step.keptUp ? "yes" : "no",
    step.sustained ? "yes" : "no",
  ]);
  return columns(header, rows);
}

function costLines({ cost }: OpenLoopFigures): TableLine[] {
  const extended = cost.extendedForMaintenance ? ", extended until a snapshot and a GC pass fell inside" : "";
  return [
    `   request counts at ${cost.targetRate} mutations/s over ${cost.measuredSeconds} s${extended}`,
    ["snapshots / GC passes / driver errors", `${cost.snapshots} / ${cost.gcPasses} / ${cost.driverErrors}`, ""],
    ["commits/s; commit p50 / p99", `${cost.completionsPerSecond}; ${latencies(cost.commit)}`, verdict(cost.sustained, "sustained")],
    ["conflicts / failures (of arrivals)", `${cost.conflicts} / ${failureText(cost)} (of ${cost.arrivals})`, ""],
    ["CPU µs per commit / cores busy", `${cost.cpuMicrosPerCommit} / ${cost.cpuCores.toFixed(2)}`, ""],
    ["event loop delay p99 / max", `${ms(cost.eventLoopDelayP99Ms)} / ${ms(cost.eventLoopDelayMaxMs)}`, ""],
    ["S3 requests per 1,000 mutations", perOperation(cost.requestsPer1000Mutations), ""],
    ["PUT bytes per mutation", String(cost.putBytesPerMutation), ""],
    ["S3 Standard request cost per 1M mutations", `$${cost.dollarsPerMillionMutations.toFixed(4)}`, ""],
  ];
}

function idleLines({ idle, tuning }: OpenLoopFigures): TableLine[] {
  const sweepMinutes = (tuning.gcSweepEveryRuns * tuning.gcIntervalMs) / 60_000;
  return [
    `   idle shard: ${idle.measuredSeconds} s without mutations, scaled to one hour`,
    ["snapshots / GC passes / driver errors", `${idle.snapshots} / ${idle.gcPasses} / ${idle.driverErrors}`, ""],
    ["S3 requests per idle shard-hour", perOperation(idle.requestsPerHour), ""],
    [`  + GC's log sweep every ${sweepMinutes} min`, "not in the window", ""],
    ["S3 Standard cost per idle shard-hour / 30 days", `$${idle.dollarsPerHour.toFixed(4)} / $${round(idle.dollarsPerHour * 24 * 30, 2)}`, ""],
  ];
}

function failureText(window: WindowFigures): string {
  if (window.failures === 0) return "0";
  return `${window.failures} (${perOperation(window.failureCodes)})`;
}
