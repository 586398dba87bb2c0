import type { BootstrapFigures, RunFigures } from "./bootstrap.js";
import type { ConcurrentFigures } from "./concurrentWriters.js";
import type { BenchLatencyModel, LatencyModelName } from "../kit/latencyModels.js";
import { round } from "../kit/LatencySummary.js";
import type { OpenLoopFigures } from "./openLoop.js";
import { openLoopLines } from "./openLoopReport.js";
import type { CommitBenchOptions } from "./options.js";
import { formatTable, latencies, mib, ms, perOperation, verdict, type Row, type TableLine } from "../kit/report.js";
import type { RoundTripFigures } from "./roundTrips.js";
import type { SequentialFigures } from "./sequentialCommits.js";
import type { ServeMemoryFigures } from "./serveMemory.js";
import { writerPeakRssRow, type WriterPeakRss } from "./writerPeakRss.js";

/**
 * The commit benchmark's figures as one JSON object, the targets they are judged
 * against, and the readable table printed before the JSON line. A phase that did not
 * run (`--phases`) is null in the JSON and absent from the table.
 */
export const TARGETS = {
  /** Sequential commit p50 over (PUT + conditional GET) p50, verify "always". */
  sequentialAlwaysRatioMax: 1.3,
  /** Sequential commit p50 over PUT p50, verify "lease". */
  sequentialLeaseRatioMax: 1.3,
  concurrentMutationsPerSecondMin: 10_000,
  /** Concurrent commit p99 in round trips, one round trip being the (PUT + conditional GET) p50. */
  concurrentP99RoundTripsMax: 6,
  /** `cairn serve`'s VmHWM at the store size of phase 6, over the fill and over the open loop. */
  servePeakRssMibMax: 500,
} as const;

export interface CommitBenchSummary {
  readonly bench: "commit";
  readonly node: string;
  readonly options: CommitBenchOptions;
  readonly endpoint: { readonly process: "child"; readonly latencyModel: LatencyModelName; readonly latency: string };
  /** Each phase's figures, or null when it did not run. */
  readonly roundTrips: RoundTripFigures | null;
  readonly sequential:
    | ({
        readonly always: SequentialFigures & { readonly ratioToPutGetP50: number };
        readonly lease: SequentialFigures & { readonly ratioToPutP50: number };
      } & WriterPeakRss)
    | null;
  readonly concurrent: (ConcurrentFigures & WriterPeakRss & { readonly roundTripMs: number; readonly p99RoundTrips: number }) | null;
  readonly bootstrap: (BootstrapFigures & WriterPeakRss) | null;
  readonly openLoop: (OpenLoopFigures & WriterPeakRss) | null;
  readonly serveMemory: ServeMemoryFigures | null;
  /** Null for a target whose phase (or phase 1, which it is judged against) did not run. */
  readonly targetsMet: Readonly<Record<keyof typeof TARGETS, boolean | null>>;
}

export interface MeasuredFigures {
  readonly roundTrips: RoundTripFigures | null;
  readonly sequential: ({ readonly always: SequentialFigures; readonly lease: SequentialFigures } & WriterPeakRss) | null;
  readonly concurrent: (ConcurrentFigures & WriterPeakRss) | null;
  readonly bootstrap: (BootstrapFigures & WriterPeakRss) | null;
  readonly openLoop: (OpenLoopFigures & WriterPeakRss) | null;
  readonly serveMemory: ServeMemoryFigures | null;
}

export function summarize(options: CommitBenchOptions, latencyModel: BenchLatencyModel, measured: MeasuredFigures): CommitBenchSummary {
  const { roundTrips, concurrent } = measured;
  const sequential = roundTrips === null || measured.sequential === null ? null : sequentialSummary(roundTrips, measured.sequential);
  const concurrentSummary =
    roundTrips === null || concurrent === null
      ? null
      : {
          ...concurrent,
          roundTripMs: roundTrips.putGet.p50Ms,
          p99RoundTrips: round(concurrent.commit.p99Ms / roundTrips.putGet.p50Ms, 2),
        };
  return {
    bench: "commit",
    node: process.version,
    options,
    endpoint: { process: "child", latencyModel: latencyModel.name, latency: latencyModel.description },
    roundTrips,
    sequential,
    concurrent: concurrentSummary,
    bootstrap: measured.bootstrap,
    openLoop: measured.openLoop,
    serveMemory: measured.serveMemory,
    targetsMet: {
      sequentialAlwaysRatioMax: sequential === null ? null : sequential.always.ratioToPutGetP50 <= TARGETS.sequentialAlwaysRatioMax,
      sequentialLeaseRatioMax: sequential === null ? null : sequential.lease.ratioToPutP50 <= TARGETS.sequentialLeaseRatioMax,
      concurrentMutationsPerSecondMin: concurrent === null ? null : concurrent.mutationsPerSecond >= TARGETS.concurrentMutationsPerSecondMin,
      concurrentP99RoundTripsMax: concurrentSummary === null ? null : concurrentSummary.p99RoundTrips <= TARGETS.concurrentP99RoundTripsMax,
      servePeakRssMibMax: measured.serveMemory === null ? null : servePeakMib(measured.serveMemory) <= TARGETS.servePeakRssMibMax,
    },
  };
}

function sequentialSummary(roundTrips: RoundTripFigures, measured: NonNullable<MeasuredFigures["sequential"]>) {
  const { always, lease } = measured;
  return {
    always: { ...always, ratioToPutGetP50: round(always.commit.p50Ms / roundTrips.putGet.p50Ms, 3) },
    lease: { ...lease, ratioToPutP50: round(lease.commit.p50Ms / roundTrips.put.p50Ms, 3) },
    vmHwmBytes: measured.vmHwmBytes,
  };
}

export function formatSummaryTable(summary: CommitBenchSummary): string {
  return formatTable([
    `shard engine commit benchmark — S3 test endpoint in a child process; latency model ${summary.endpoint.latencyModel}: ${summary.endpoint.latency}`,
    ...(summary.roundTrips === null ? [] : roundTripRows(summary.roundTrips)),
    ...(summary.sequential === null || summary.roundTrips === null ? [] : sequentialRows(summary.sequential, summary.roundTrips, summary.targetsMet)),
    ...(summary.concurrent === null ? [] : concurrentRows(summary.concurrent, summary.targetsMet)),
    ...(summary.bootstrap === null ? [] : bootstrapRows(summary.bootstrap)),
    ...(summary.openLoop === null ? [] : openLoopLines(summary.openLoop)),
    ...(summary.serveMemory === null ? [] : serveMemoryRows(summary.serveMemory)),
  ]);
}

/** The higher of the node's two peaks (NaN when /proc had none). */
function servePeakMib(figures: ServeMemoryFigures): number {
  return Math.max(figures.fill.vmHwmBytes ?? Number.NaN, figures.openLoop.vmHwmBytes ?? Number.NaN) / 2 ** 20;
}

function serveMemoryRows(figures: ServeMemoryFigures): TableLine[] {
  const { fill, openLoop } = figures;
  const peak = (bytes: number | null) => (bytes === null ? "-" : mib(bytes));
  const limit = figures.heapMibFlag === null ? "its default" : figures.heapMibFlag === 0 ? "0 (none of its own)" : `${figures.heapMibFlag} MiB`;
  return [
    `6. \`cairn serve\` (${figures.from === "package" ? "the built package" : "the sources through tsx"}) in a child process, Node's default flags, --heap-mib ${limit} (heap limit ${figures.heapLimitBytes === null ? "-" : mib(figures.heapLimitBytes)} MiB)`,
    [`fill: ${fill.documents} rows by rows:fill over HTTP (latency off), rows/s`, String(fill.documentsPerSecond), ""],
    [`open loop: rows:move at ${openLoop.targetRate}/s for ${openLoop.seconds} s, acknowledged/s; p50 / p99`, `${openLoop.acknowledgedPerSecond}; ${latencies(openLoop.latency)}`, openLoop.failures > 0 ? `${openLoop.failures} failed: ${JSON.stringify(openLoop.failureCodes)}` : ""],
    [
      "node's peak RSS (kernel VmHWM) over the fill / the open loop, MiB",
      `${peak(fill.vmHwmBytes)} / ${peak(openLoop.vmHwmBytes)}`,
      verdict(servePeakMib(figures) <= TARGETS.servePeakRssMibMax, `≤ ${TARGETS.servePeakRssMibMax}`),
    ],
    ["node's JavaScript heap in use at the end (garbage included), MiB", mib(figures.heapUsedBytesAtEnd), ""],
  ];
}

function roundTripRows(roundTrips: RoundTripFigures): TableLine[] {
  return [
    `1. baseline round trips, sequential, ${roundTrips.put.samples} samples each, ${roundTrips.bodyBytes} B bodies`,
    ["PUT (create) p50 / p99", latencies(roundTrips.put), ""],
    ["PUT + conditional GET (304) p50 / p99", latencies(roundTrips.putGet), ""],
  ];
}

function sequentialRows(
  sequential: NonNullable<CommitBenchSummary["sequential"]>,
  roundTrips: RoundTripFigures,
  targetsMet: CommitBenchSummary["targetsMet"],
): TableLine[] {
  const { always, lease } = sequential;
  return [
    `2. one client, ${always.commit.samples} sequential one-document commits per verify mode`,
    ['verify "always": commit p50 / p99', latencies(always.commit), ""],
    [
      `  p50 / (PUT+GET p50 ${ms(roundTrips.putGet.p50Ms)})`,
      always.ratioToPutGetP50.toFixed(2),
      verdict(targetsMet.sequentialAlwaysRatioMax === true, `<= ${TARGETS.sequentialAlwaysRatioMax}`),
    ],
    ['verify "lease": commit p50 / p99', latencies(lease.commit), ""],
    [
      `  p50 / (PUT p50 ${ms(roundTrips.put.p50Ms)})`,
      lease.ratioToPutP50.toFixed(2),
      verdict(targetsMet.sequentialLeaseRatioMax === true, `<= ${TARGETS.sequentialLeaseRatioMax}`),
    ],
    writerPeakRssRow(sequential),
  ];
}

function concurrentRows(
  concurrent: NonNullable<CommitBenchSummary["concurrent"]>,
  targetsMet: CommitBenchSummary["targetsMet"],
): TableLine[] {
  const perThousand = perOperation(concurrent.requestsPer1000Mutations);
  const index = concurrent.withIndex ? ", one index entry per document" : "";
  return [
    `3. ${concurrent.writers} concurrent writers on one shard, ${concurrent.measuredSeconds} s measured, verify "always"${index}`,
    [
      "mutations/s",
      String(concurrent.mutationsPerSecond),
      verdict(targetsMet.concurrentMutationsPerSecondMin === true, `>= ${TARGETS.concurrentMutationsPerSecondMin}`),
    ],
    ["commit p50 / p99", latencies(concurrent.commit), ""],
    [
      `  p99 in round trips (PUT+GET p50 ${ms(concurrent.roundTripMs)})`,
      concurrent.p99RoundTrips.toFixed(2),
      verdict(targetsMet.concurrentP99RoundTripsMax === true, `<= ${TARGETS.concurrentP99RoundTripsMax}`),
    ],
    ["segments / mutations per segment", `${concurrent.segments} / ${concurrent.mutationsPerSegment}`, ""],
    ["S3 requests per 1,000 mutations", perThousand, ""],
    ["PUT bytes per mutation", String(concurrent.putBytesPerMutation), ""],
    ["S3 Standard request cost per 1M mutations", `$${concurrent.dollarsPerMillionMutations.toFixed(4)}`, ""],
    writerPeakRssRow(concurrent),
  ];
}

function bootstrapRows(bootstrap: NonNullable<CommitBenchSummary["bootstrap"]>): TableLine[] {
  const { build, cold, warm } = bootstrap;
  return [
    `4. bootstrap: snapshot of ${build.documents} documents at seqno ${build.snapshotSeqno} + ${build.tailSegments} tail segments`,
    ["set-up (latency off): build / snapshot / tail s", `${build.seconds} / ${build.snapshotSeconds} / ${build.tailSeconds}`, ""],
    ["snapshot parts / MiB", `${build.snapshotParts} / ${(build.snapshotBytes / 2 ** 20).toFixed(1)}`, ""],
    writerPeakRssRow(bootstrap),
    ...runRows("cold (empty file): open s (restore + replay)", cold),
    ...runRows(`warm restart after ${warm.newSegments} new segments: open s`, warm),
  ];
}

function runRows(title: string, run: RunFigures): Row[] {
  const { gets } = run;
  const replaySeconds = run.openSeconds - run.restoreSeconds;
  const openSeconds =
    run.restoreSeconds > 0
      ? `${run.openSeconds.toFixed(2)} (${run.restoreSeconds.toFixed(2)} + ${replaySeconds.toFixed(2)})`
      : run.openSeconds.toFixed(3);
  const rss = `${mib(run.rssPeakSampledBytes)} / ${run.rssPeakKernelBytes === null ? "-" : mib(run.rssPeakKernelBytes)} (${mib(run.rssBaselineBytes)})`;
  const getCounts = `${run.endpointGets} / ${gets.log} (${gets.logMissing}) / ${gets.snapshot} / ${gets.manifest}`;
  const seqnos = gets.logSeqnoMin === null ? "none" : `${gets.logSeqnoMin}..${gets.logSeqnoMax}`;
  return [
    [title, openSeconds, ""],
    ["  documents materialized / per s", `${run.documentsAfter - run.documentsBefore} / ${run.documentsPerSecond}`, ""],
    ["  segments replayed", String(run.segmentsReplayed), ""],
    ["  peak RSS MiB sampled / kernel VmHWM (baseline)", rss, ""],
    ["  GETs: endpoint / log (empty slots) / snapshot / manifest", getCounts, ""],
    ["  log seqnos read", seqnos, ""],
  ];
}
