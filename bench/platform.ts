/**
 * Platform benchmark: the scheduler, file storage and full-text search (docs/functions.md:
 * "Scheduled functions and crons", "File storage", "Full-text search"), measured through
 * one `cairn serve` child process serving bench/platformSupport/platformBenchApp.ts, as a
 * user runs it. Its bucket is a directory in a temp dir by default (`--store s3`: the S3
 * test endpoint in another child, with `--latency`'s model); everything is removed at
 * the end. The load runs in this process; the node's CPU and memory are its own.
 *
 * 1. Scheduler lateness: an open loop sends one `bench:schedule` mutation over HTTP every
 *    `--slot-ms`, each scheduling (`ctx.scheduler.runAt`) the slot's share of
 *    `--jobs-per-second` `bench:tick` jobs due `--lead-ms` ahead, spread evenly over the
 *    slot, for `--scheduler-seconds`. Each tick records `ctx.now() − dueMs`. Reported:
 *    lateness (due → started) p50 / p99 / max, overall and by 5 s of due time; whether
 *    every job ran, and the last one's start (and the queue's drain) after the last due time.
 * 2. Files: 1 MiB and `--large-file-mib` files uploaded (streamed with http.request and a
 *    Content-Length, never held whole), downloaded whole (streamed) and in ranges, one
 *    transfer at a time; MB/s of each, and the node's peak RSS (VmHWM, reset at the phase's start).
 * 3. Search: `--documents` documents of ~20 words from a Zipf vocabulary of 5,000 words,
 *    inserted in batches through a mutation into a table with a search index
 *    (`search_body`: body, filtered by channel), then `--searches` searches of 1–3 common
 *    or rare terms with and without the channel filter over HTTP (POST /api/query):
 *    p50 / p99; then a live search subscribed with the client library, and `--live-writes`
 *    writes that each add a matching document: the writer's send → the subscriber's new result.
 *
 *   npm run bench:platform [-- --phases 1,2,3 --store directory|s3 --latency s3-standard
 *                             --jobs-per-second 1000 --scheduler-seconds 20 --documents 100000
 *                             --cpu-profile-dir DIR …]   (--help lists every flag)
 *
 * Prints a table, then exactly one line of JSON with every figure. Progress goes to stderr.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { Cleanup, stopOnSignal } from "./kit/Cleanup.js";
import { round } from "./kit/LatencySummary.js";
import { LATENCY_MODEL_NAMES, LATENCY_MODELS } from "./kit/latencyModels.js";
import { flag, parseFlags } from "./kit/flags.js";
import { progressPrinter } from "./kit/progress.js";
import { columns, formatTable, latencies, ms, printReport, type TableLine } from "./kit/report.js";
import { measureFileTransfers, type FileFigures, type FilePlan } from "./platformSupport/fileTransfers.js";
import type { NodeActivity } from "./platformSupport/nodeActivity.js";
import { startPlatformNode, type PlatformNode } from "./platformSupport/PlatformNode.js";
import { measureSchedulerLateness, type SchedulerFigures } from "./platformSupport/schedulerLateness.js";
import { measureSearch, type SearchFigures, type SearchPlan } from "./platformSupport/searchLatency.js";

const options = parseFlags(process.argv.slice(2), {
  name: "bench:platform",
  description: "the scheduler's lateness at 1,000 jobs/s, file upload/download throughput and memory, full-text search at 100k documents",
  flags: {
    phases: flag.phases([1, 2, 3]),
    store: flag.choice("where the node's bucket lives", ["directory", "s3"] as const, "directory"),
    latency: flag.choice("--store s3: the endpoint's latency model", LATENCY_MODEL_NAMES, "s3-standard"),
    jobsPerSecond: flag.wholeNumber("phase 1: jobs coming due a second", 1_000),
    schedulerSeconds: flag.wholeNumber("phase 1: seconds of jobs coming due", 20),
    slotMs: flag.wholeNumber("phase 1: one scheduling mutation every this many ms", 100),
    leadMs: flag.wholeNumber("phase 1: a slot's jobs come due this long after it is scheduled (the first; the last a slot later)", 1_500),
    largeFileMib: flag.wholeNumber("phase 2: the large file's size in MiB", 100),
    documents: flag.wholeNumber("phase 3: documents in the searched table", 100_000),
    searches: flag.wholeNumber("phase 3: searches measured", 500),
    liveWrites: flag.wholeNumber("phase 3: writes measured that change a live search", 50),
    cpuProfileDirectory: flag.optionalText("where the node writes a V8 CPU profile (it then runs on its main thread: --heap-mib 0)", "dir", { name: "cpu-profile-dir" }),
  },
});

// This process's own S3 client (--store s3: the bucket's size) would warn about Node 20 like the nodes, which spawnTsx silences.
process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] = "true";
const APP_PATH = "bench/platformSupport/platformBenchApp.ts";
const MIB = 2 ** 20;
/** A line of the node's output that reports a problem. */
const PROBLEM_LINE = /error|fail|tried again|refused|warn/i;
const progress = progressPrinter("[bench:platform] ");
const latencyModel = LATENCY_MODELS[options.latency];

const FILE_PLANS: readonly FilePlan[] = [
  { sizeMiB: 1, uploads: 20, downloads: 20, ranges: 200, rangeBytes: 64 * 1024 },
  { sizeMiB: options.largeFileMib, uploads: 2, downloads: 3, ranges: 100, rangeBytes: MIB },
];

const SEARCH_PLAN: SearchPlan = {
  documents: options.documents,
  vocabulary: 5_000,
  zipfExponent: 1,
  wordsMin: 15,
  wordsMax: 25,
  channels: 10,
  batch: 500,
  batchesInFlight: 2,
  searches: options.searches,
  warmupSearches: 40,
  liveWrites: options.liveWrites,
  liveWarmups: 5,
};

async function main(): Promise<void> {
  const startedMs = performance.now();
  const cleanup = new Cleanup(progress);
  stopOnSignal(cleanup, progress);
  try {
    const directory = await mkdtemp(join(tmpdir(), "cairn-bench-platform-"));
    cleanup.add("removing the temp dir", () => rm(directory, { recursive: true, force: true }));
    const node = await startPlatformNode({
      store: options.store,
      latencyModel,
      directory,
      appPath: APP_PATH,
      cpuProfileDirectory: options.cpuProfileDirectory === null ? null : resolve(options.cpuProfileDirectory),
      cleanup,
      progress,
    });
    progress(`   serving at ${node.url} (pid ${node.pid})`);
    await node.latency(true);
    let scheduler: SchedulerFigures | null = null;
    let files: FileFigures | null = null;
    let search: SearchFigures | null = null;
    try {
      if (options.phases.includes(1)) {
        progress(`1. scheduler: ${options.jobsPerSecond} jobs due a second for ${options.schedulerSeconds} s…`);
        scheduler = await measureSchedulerLateness(
          node,
          { jobsPerSecond: options.jobsPerSecond, seconds: options.schedulerSeconds, slotMs: options.slotMs, leadMs: options.leadMs },
          progress,
        );
      }
      if (options.phases.includes(2)) {
        progress("2. files: uploads, whole and ranged downloads…");
        files = await measureFileTransfers(node, FILE_PLANS, progress);
      }
      if (options.phases.includes(3)) {
        progress(`3. search: ${options.documents.toLocaleString("en-US")} documents…`);
        search = await measureSearch(node, SEARCH_PLAN, progress);
      }
    } catch (error) {
      progress(`the node's last lines:\n${node.output.last(40)}`);
      throw error;
    }
    const runSeconds = round((performance.now() - startedMs) / 1000, 1);
    const nodeProblems = node.output
      .since(0)
      .filter((line) => PROBLEM_LINE.test(line.text))
      .map((line) => line.text);
    report(node, { scheduler, files, search, nodeProblems, runSeconds });
  } finally {
    await cleanup.run();
  }
  progress(`done in ${round((performance.now() - startedMs) / 1000, 1)} s`);
}

interface Figures {
  readonly scheduler: SchedulerFigures | null;
  readonly files: FileFigures | null;
  readonly search: SearchFigures | null;
  /** What the node printed that says something went wrong (a job tried again, a failed read…). */
  readonly nodeProblems: readonly string[];
  readonly runSeconds: number;
}

function report(node: PlatformNode, figures: Figures): void {
  const lines: TableLine[] = [
    `bench:platform — one cairn serve (child process), ${node.storeDescription}; load and clients in the benchmark process; ${figures.runSeconds} s`,
    ...schedulerSection(figures.scheduler),
    ...filesSection(figures.files),
    ...searchSection(figures.search),
    `node's output: ${figures.nodeProblems.length} line(s) reporting a problem${figures.nodeProblems.length === 0 ? "" : "; the first:"}`,
    ...(figures.nodeProblems.length === 0 ? [] : [{ block: figures.nodeProblems.slice(0, 5).map((line) => line.slice(0, 200)) }]),
  ];
  printReport(formatTable(lines), { benchmark: "platform", options, store: node.storeDescription, ...figures, nodeProblems: figures.nodeProblems.slice(0, 20) });
}

function schedulerSection(figures: SchedulerFigures | null): TableLine[] {
  if (figures === null) return [];
  const { load } = figures;
  return [
    `1. scheduler: ${figures.scheduled.toLocaleString("en-US")} jobs (internal mutation bench:tick, one insert each)`,
    {
      block: [
        `load: open loop, every ${load.slotMs} ms one mutation (HTTP) schedules ${figures.jobsPerSlot} jobs with runAt, due ${load.leadMs}–${load.leadMs + load.slotMs} ms later, evenly spread;`,
        `      ${load.jobsPerSecond.toLocaleString("en-US")} jobs come due a second for ${load.seconds} s`,
        `store: the jobs' documents (_scheduled_functions) + one tick document per job; bucket ${size(figures.bucket)} after the phase`,
      ],
    },
    ["lateness (due → started) p50 / p99 / max", `${latencies(figures.lateness)} / ${ms(figures.lateness.maxMs)}`, ""],
    ["jobs ran / scheduled", `${figures.ran.toLocaleString("en-US")} / ${figures.scheduled.toLocaleString("en-US")}`, figures.allRan ? "all ran" : "NOT ALL RAN"],
    ["  pending / failed when the wait ended", `${figures.pendingAtEnd} / ${figures.failedAtEnd}`, ""],
    ["last job started after the last was due", ms(figures.lastStartedAfterLastDueMs), ""],
    ["no job pending (seen by polling) after the last due", figures.drainedAfterLastDueMs === null ? "never (gave up)" : ms(figures.drainedAfterLastDueMs), ""],
    ["scheduling mutation (100 jobs) send → answer p50 / p99", latencies(figures.scheduleCall), ""],
    ["load generator's own send lateness, max", ms(figures.sendLateMsMax), ""],
    ["jobs started a second, first start → last", figures.startsPerSecond.toLocaleString("en-US"), `${load.jobsPerSecond.toLocaleString("en-US")} come due`],
    ...activityRows(figures.activity),
    columns(
      ["due window", "jobs", "p50", "p99", "max"],
      figures.windows.map((window) => [`${window.fromSeconds}–${window.toSeconds} s`, String(window.lateness.samples), ms(window.lateness.p50Ms), ms(window.lateness.p99Ms), ms(window.lateness.maxMs)]),
    ),
  ];
}

function activityRows(activity: NodeActivity): TableLine[] {
  return [
    ["node: commits a second; group-commit flushes a second × mutations each", `${activity.commitsPerSecond.toLocaleString("en-US")}; ${activity.flushesPerSecond} × ${activity.unitsPerFlush}`, ""],
    ["node: mean flush (segment created → durable)", ms(activity.flushMsMean), ""],
    ["node CPU / machine busy (cores)", `${activity.nodeCores} / ${activity.machineBusyCores} of ${activity.machineCores}`, ""],
  ];
}

function filesSection(figures: FileFigures | null): TableLine[] {
  if (figures === null) return [];
  const rows = figures.sizes.flatMap((size) => [
    [`${size.plan.sizeMiB} MiB`, "upload", String(size.upload.count), mbps(size.upload.mbPerSecond), ms(size.upload.latency.p50Ms)],
    ["", "download whole", String(size.download.count), mbps(size.download.mbPerSecond), ms(size.download.latency.p50Ms)],
    ["", `range ${size.plan.rangeBytes >= MIB ? `${size.plan.rangeBytes / MIB} MiB` : `${size.plan.rangeBytes / 1024} KiB`}`, String(size.range.count), mbps(size.range.mbPerSecond), `${ms(size.range.latency.p50Ms)}`],
  ]);
  return [
    `2. files: one transfer at a time over HTTP, streamed both ways (the bench never holds a whole file), every byte checked`,
    { block: [`store: chunks of 4 MiB in the bucket; bucket ${size(figures.bucket)} after the phase`] },
    columns(["file", "transfer", "count", "throughput", "p50 each"], rows, { leftAligned: 2 }),
    [
      "node's peak RSS (VmHWM) over the phase",
      `${figures.peakRssMiB} MiB`,
      figures.rssAtStartMiB === null ? "" : `RSS at the phase's start ${figures.rssAtStartMiB} MiB${figures.peakResetForPhase ? "" : " (VmHWM not reset: peak since the node's start)"}`,
    ],
  ];
}

function searchSection(figures: SearchFigures | null): TableLine[] {
  if (figures === null) return [];
  const { plan, fill, live } = figures;
  return [
    `3. search: ${plan.documents.toLocaleString("en-US")} documents in a table with a search index (body, filtered by channel)`,
    {
      block: [
        `store: ${plan.wordsMin}–${plan.wordsMax} words a document (${round(fill.words / plan.documents, 1)} on average, ${round(fill.bodyBytes / plan.documents, 0)} bytes of body) drawn from ${plan.vocabulary.toLocaleString("en-US")} words`,
        `       by Zipf's law (exponent ${plan.zipfExponent}), ${plan.channels} channels; bucket ${size(figures.bucket)} after the phase`,
        `fill: ${plan.batch} documents a mutation (HTTP), ${plan.batchesInFlight} in flight: ${fill.seconds} s, ${fill.documentsPerSecond.toLocaleString("en-US")} documents/s`,
        `queries: search:search (take 10) over HTTP, one at a time, 1–3 terms; common = ranks 1–100, rare = ranks 2,001–5,000`,
      ],
    },
    ...figures.queries.map((kind): TableLine => [`${kind.name}: p50 / p99 (${kind.latency.samples}, ${kind.meanResults} results each)`, latencies(kind.latency), ""]),
    ["all searches: p50 / p99 / max", `${latencies(figures.allQueries)} / ${ms(figures.allQueries.maxMs)}`, ""],
    { block: [`live: a client subscribed to search "${live.term}" in ${live.channel} (${live.initialResults} results before); another client adds a matching document, one write at a time`] },
    ["write's send → subscriber's new result p50 / p99", latencies(live.update), `${live.update.samples} writes`],
    ["  the write's own send → answer p50 / p99", latencies(live.commit), ""],
  ];
}

function size(bucket: { objects: number; bytes: number }): string {
  return `${bucket.objects.toLocaleString("en-US")} objects, ${round(bucket.bytes / MIB, 1)} MiB`;
}

function mbps(value: number): string {
  return `${value.toFixed(0)} MB/s`;
}

await main();
