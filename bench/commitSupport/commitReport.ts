import type { BootstrapFigures, RunFigures } from "./bootstrap.js";
import type { ConcurrentFigures } from "./concurrentWriters.js";
import { round } from "./LatencySummary.js";
import type { CommitBenchOptions } from "./options.js";
import type { RoundTripFigures } from "./roundTrips.js";
import type { SequentialFigures } from "./sequentialCommits.js";

/**
 * The commit benchmark's figures as one JSON object, the targets they are judged
 * against, and the readable table printed before the JSON line.
 */
export const TARGETS = {
  /** Sequential commit p50 over (PUT + conditional GET) p50, verify "always". */
  sequentialAlwaysRatioMax: 1.3,
  /** Sequential commit p50 over PUT p50, verify "lease". */
  sequentialLeaseRatioMax: 1.3,
  concurrentMutationsPerSecondMin: 10_000,
  /** Concurrent commit p99 in round trips, one round trip being the (PUT + conditional GET) p50. */
  concurrentP99RoundTripsMax: 6,
} as const;

export interface CommitBenchSummary {
  readonly bench: "commit";
  readonly node: string;
  readonly options: CommitBenchOptions;
  readonly endpoint: { readonly process: "child"; readonly latency: string };
  readonly roundTrips: RoundTripFigures;
  readonly sequential: {
    readonly always: SequentialFigures & { readonly ratioToPutGetP50: number };
    readonly lease: SequentialFigures & { readonly ratioToPutP50: number };
  };
  readonly concurrent: ConcurrentFigures & { readonly roundTripMs: number; readonly p99RoundTrips: number };
  readonly bootstrap: BootstrapFigures;
  readonly targetsMet: Readonly<Record<keyof typeof TARGETS, boolean>>;
}

export interface MeasuredFigures {
  readonly roundTrips: RoundTripFigures;
  readonly always: SequentialFigures;
  readonly lease: SequentialFigures;
  readonly concurrent: ConcurrentFigures;
  readonly bootstrap: BootstrapFigures;
}

export function summarize(options: CommitBenchOptions, latency: string, measured: MeasuredFigures): CommitBenchSummary {
  const { roundTrips, always, lease, concurrent, bootstrap } = measured;
  const roundTripMs = roundTrips.putGet.p50Ms;
  const ratioToPutGetP50 = round(always.commit.p50Ms / roundTripMs, 3);
  const ratioToPutP50 = round(lease.commit.p50Ms / roundTrips.put.p50Ms, 3);
  const p99RoundTrips = round(concurrent.commit.p99Ms / roundTripMs, 2);
  return {
    bench: "commit",
    node: process.version,
    options,
    endpoint: { process: "child", latency },
    roundTrips,
    sequential: { always: { ...always, ratioToPutGetP50 }, lease: { ...lease, ratioToPutP50 } },
    concurrent: { ...concurrent, roundTripMs, p99RoundTrips },
    bootstrap,
    targetsMet: {
      sequentialAlwaysRatioMax: ratioToPutGetP50 <= TARGETS.sequentialAlwaysRatioMax,
      sequentialLeaseRatioMax: ratioToPutP50 <= TARGETS.sequentialLeaseRatioMax,
      concurrentMutationsPerSecondMin: concurrent.mutationsPerSecond >= TARGETS.concurrentMutationsPerSecondMin,
      concurrentP99RoundTripsMax: p99RoundTrips <= TARGETS.concurrentP99RoundTripsMax,
    },
  };
}

type Row = readonly [measurement: string, value: string, target: string];

export function formatTable(summary: CommitBenchSummary): string {
  const rows: (Row | string)[] = [
    `shard engine commit benchmark — S3 test endpoint in a child process, ${summary.endpoint.latency} per request`,
    ...roundTripRows(summary),
    ...sequentialRows(summary),
    ...concurrentRows(summary),
    ...bootstrapRows(summary.bootstrap),
  ];
  const table = rows.filter((row): row is Row => typeof row !== "string");
  const widths = [0, 1, 2].map((column) => Math.max(...table.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      typeof row === "string"
        ? `\n${row}`
        : `  ${row[0].padEnd(widths[0]!)}  ${row[1].padStart(widths[1]!)}  ${row[2]}`.trimEnd(),
    )
    .join("\n")
    .concat("\n");
}

function roundTripRows({ roundTrips }: CommitBenchSummary): (Row | string)[] {
  return [
    `1. baseline round trips, sequential, ${roundTrips.put.samples} samples each, ${roundTrips.bodyBytes} B bodies`,
    ["PUT (create) p50 / p99", latencies(roundTrips.put), ""],
    ["PUT + conditional GET (304) p50 / p99", latencies(roundTrips.putGet), ""],
  ];
}

function sequentialRows({ sequential, roundTrips, targetsMet }: CommitBenchSummary): (Row | string)[] {
  const { always, lease } = sequential;
  return [
    `2. one client, ${always.commit.samples} sequential one-document commits per verify mode`,
    ['verify "always": commit p50 / p99', latencies(always.commit), ""],
    [
      `  p50 / (PUT+GET p50 ${ms(roundTrips.putGet.p50Ms)})`,
      always.ratioToPutGetP50.toFixed(2),
      verdict(targetsMet.sequentialAlwaysRatioMax, `<= ${TARGETS.sequentialAlwaysRatioMax}`),
    ],
    ['verify "lease": commit p50 / p99', latencies(lease.commit), ""],
    [
      `  p50 / (PUT p50 ${ms(roundTrips.put.p50Ms)})`,
      lease.ratioToPutP50.toFixed(2),
      verdict(targetsMet.sequentialLeaseRatioMax, `<= ${TARGETS.sequentialLeaseRatioMax}`),
    ],
  ];
}

function concurrentRows({ concurrent, targetsMet }: CommitBenchSummary): (Row | string)[] {
  const perThousand = Object.entries(concurrent.requestsPer1000Mutations)
    .map(([operation, count]) => `${operation} ${count}`)
    .join(", ");
  const index = concurrent.withIndex ? ", one index entry per document" : "";
  return [
    `3. ${concurrent.writers} concurrent writers on one shard, ${concurrent.measuredSeconds} s measured, verify "always"${index}`,
    [
      "mutations/s",
      String(concurrent.mutationsPerSecond),
      verdict(targetsMet.concurrentMutationsPerSecondMin, `>= ${TARGETS.concurrentMutationsPerSecondMin}`),
    ],
    ["commit p50 / p99", latencies(concurrent.commit), ""],
    [
      `  p99 in round trips (PUT+GET p50 ${ms(concurrent.roundTripMs)})`,
      concurrent.p99RoundTrips.toFixed(2),
      verdict(targetsMet.concurrentP99RoundTripsMax, `<= ${TARGETS.concurrentP99RoundTripsMax}`),
    ],
    ["segments / mutations per segment", `${concurrent.segments} / ${concurrent.mutationsPerSegment}`, ""],
    ["S3 requests per 1,000 mutations", perThousand, ""],
    ["PUT bytes per mutation", String(concurrent.putBytesPerMutation), ""],
    ["S3 Standard request cost per 1M mutations", `$${concurrent.dollarsPerMillionMutations.toFixed(4)}`, ""],
  ];
}

function bootstrapRows(bootstrap: BootstrapFigures): (Row | string)[] {
  const { build, cold, warm } = bootstrap;
  return [
    `4. bootstrap: snapshot of ${build.documents} documents at seqno ${build.snapshotSeqno} + ${build.tailSegments} tail segments`,
    ["set-up (latency off): build / snapshot / tail s", `${build.seconds} / ${build.snapshotSeconds} / ${build.tailSeconds}`, ""],
    ["snapshot parts / MiB", `${build.snapshotParts} / ${(build.snapshotBytes / 2 ** 20).toFixed(1)}`, ""],
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
  const rss = `${mib(run.rssPeakSampledBytes)} / ${mib(run.rssPeakKernelBytes)} (${mib(run.rssBaselineBytes)})`;
  const getCounts = `${run.endpointGets} / ${gets.log} (${gets.logMissing}) / ${gets.snapshot} / ${gets.manifest}`;
  const seqnos = gets.logSeqnoMin === null ? "none" : `${gets.logSeqnoMin}..${gets.logSeqnoMax}`;
  return [
    [title, openSeconds, ""],
    ["  documents materialized / per s", `${run.documentsAfter - run.documentsBefore} / ${run.documentsPerSecond}`, ""],
    ["  segments replayed", String(run.segmentsReplayed), ""],
    ["  peak RSS MiB sampled / kernel (baseline)", rss, ""],
    ["  GETs: endpoint / log (empty slots) / snapshot / manifest", getCounts, ""],
    ["  log seqnos read", seqnos, ""],
  ];
}

function latencies(summary: { p50Ms: number; p99Ms: number }): string {
  return `${ms(summary.p50Ms)} / ${ms(summary.p99Ms)}`;
}

function ms(value: number): string {
  return `${value.toFixed(1)} ms`;
}

function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
}

function verdict(met: boolean, target: string): string {
  return `${target} ${met ? "met" : "MISSED"}`;
}
