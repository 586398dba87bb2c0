/**
 * Shard engine commit, bootstrap and open-loop benchmark against the S3 test endpoint.
 * The endpoint runs in a child process so that its CPU does not compete with the
 * engine's event loop; local SQLite files live in a temp dir, removed at the end; time
 * is the system clock.
 *
 * Latency model (`--latency`, default s3-standard; kit/latencyModels.ts),
 * injected per request while measuring:
 * - s3-standard: S3 Standard seen from the same region, lognormal per request: writes
 *   (PUT, DELETE) p50 28 ms / p99 75 ms, reads (GET, HEAD, LIST) p50 25 ms / p99 70 ms,
 *   plus 10 ms per MiB of request body (before S3 acts) and of response body (after).
 * - uniform: the earlier model, 15 ms + uniform [0, 10] ms, no tail, no size cost.
 *
 * 1. Baseline round trips: p50/p99 of a create (PUT, 512 B) and of a create plus a
 *    conditional GET (PUT + GET), sequentially, through one S3ObjectStore.
 * 2. One client, sequential one-document commits, verify "always" and "lease": p50/p99
 *    and their ratio to the matching baseline. An empty shard.
 * 3. Closed loop: `--writers` concurrent writers on one empty shard, each looping
 *    "commit a blind one-document insert (~60 B, optionally one index entry), await it":
 *    mutations/s, commit p50/p99, S3 requests per 1,000 mutations and the S3 Standard
 *    request cost per million mutations. Default tuning, drivers running.
 * 4. Bootstrap of a shard of `--documents` documents from a snapshot plus tail segments
 *    in a fresh process (time, documents/s, peak RSS), then a warm restart after new
 *    segments (time, GETs).
 * 5. Open loop on a shard that holds `--open-loop-documents` (default 1,000,000)
 *    documents with one index entry each, built with latency off (units, then a
 *    snapshot) and re-opened by the measured writer (engine defaults, heartbeat and
 *    maintenance drivers running). Mutations arrive as a seeded Poisson process at a
 *    fixed rate, each started at once whatever is still in flight. A mutation reads one
 *    random existing document at the engine's read ts, then (90%) updates it — prevTs
 *    the version read, its index entry moved (old key removed, new key written) — or
 *    (10%) inserts a new document with its index entry; every one carries an OCC read
 *    set on the document read and a receipt. Conflicts and failures are counted. Rates
 *    are searched (double, then bisect) for the highest one that sustains: p99 from
 *    scheduled arrival to acknowledgement within 6 round trips (phase 1's PUT p50, or
 *    the model's without phase 1), no failure, and a bounded backlog. Then S3 requests
 *    per 1,000 mutations over a window holding at least one snapshot and one GC pass, and
 *    requests per idle shard-hour. CPU per commit of this process is reported throughout.
 *
 * 6. `cairn serve`'s memory (commitSupport/serveMemory.ts): the built package in a child
 *    process, filled with `--serve-documents` rows over HTTP, then an open loop of
 *    `rows:move` at `--serve-rate`/s; its VmHWM over each part against ≤ 500 MiB.
 *
 * Phases 2 to 5 run their shard writer in this process (phase 5's set-up writer in a
 * child) and report its peak RSS over the phase as the kernel keeps it (VmHWM of
 * /proc/self/status, reset as the phase starts); phase 4's bootstrap children report
 * their own VmHWM beside a sampled peak.
 *
 *   npm run bench:commit [-- --phases 1,5 --latency s3-standard --open-loop-documents 1000000]
 *
 * Other flags: --round-trips, --commits, --writers, --seconds, --warmup-seconds,
 * --with-index, --documents, --build-unit-documents, --tail-segments,
 * --tail-segment-documents, --warm-segments, --open-loop-start-rate,
 * --open-loop-max-rate, --open-loop-bisections, --open-loop-warmup-seconds,
 * --open-loop-seconds, --open-loop-cost-seconds, --open-loop-cost-rate, --open-loop-rates,
 * --pipeline-depth, --idle-seconds, --child-cpu-prof-dir (see commitSupport/options.ts,
 * or --help). Prints a table, then exactly one line of JSON with every figure. Progress
 * goes to stderr. Never asserted in tests. To profile the engine:
 *
 *   node --cpu-prof --import tsx bench/commit.ts [--child-cpu-prof-dir /tmp/profiles]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { measureBootstrap } from "./commitSupport/bootstrap.js";
import { formatSummaryTable, summarize, type MeasuredFigures } from "./commitSupport/commitReport.js";
import { measureConcurrentWriters } from "./commitSupport/concurrentWriters.js";
import { LATENCY_MODELS } from "./kit/latencyModels.js";
import { latencyBoundOf, measureOpenLoop, OPEN_LOOP_P99_ROUND_TRIPS_MAX } from "./commitSupport/openLoop.js";
import { parseCommitBenchOptions, type BenchPhase, type CommitBenchOptions } from "./commitSupport/options.js";
import { RemoteEndpoint } from "./kit/RemoteEndpoint.js";
import { measureRoundTrips } from "./commitSupport/roundTrips.js";
import { measureSequentialCommits } from "./commitSupport/sequentialCommits.js";
import { measureServeMemory } from "./commitSupport/serveMemory.js";
import type { WriterPeakRss } from "./commitSupport/writerPeakRss.js";
import { peakRssBytes, resetPeakRss } from "./kit/peakRss.js";
import { progressPrinter } from "./kit/progress.js";
import { printReport } from "./kit/report.js";

const progress = progressPrinter();

async function main(): Promise<void> {
  const options = parseCommitBenchOptions(process.argv.slice(2));
  const latencyModel = LATENCY_MODELS[options.latency];
  const directory = await mkdtemp(join(tmpdir(), "cairn-bench-commit-"));
  progress("starting the S3 test endpoint in a child process…");
  const endpoint = await RemoteEndpoint.start(latencyModel);
  let measured: MeasuredFigures;
  try {
    progress(`endpoint pid ${endpoint.pid} at ${endpoint.address.url}; latency ${latencyModel.description}`);
    await endpoint.latencyOn();
    measured = await runPhases(endpoint, directory, options);
  } finally {
    await endpoint.close();
    await rm(directory, { recursive: true, force: true });
  }
  const summary = summarize(options, latencyModel, measured);
  printReport(formatSummaryTable(summary), summary);
}

async function runPhases(endpoint: RemoteEndpoint, directory: string, options: CommitBenchOptions): Promise<MeasuredFigures> {
  const runs = (phase: BenchPhase) => options.phases.includes(phase);
  let roundTrips = null;
  if (runs(1)) {
    progress(`1. baseline round trips (${options.roundTrips} samples each)…`);
    roundTrips = await measureRoundTrips(endpoint.store("round-trips/"), options.roundTrips);
  }
  let sequential = null;
  if (runs(2)) {
    progress(`2. ${options.commits} sequential commits, verify "always" then "lease"…`);
    sequential = await withWriterPeakRss(async () => {
      const always = await measureSequentialCommits(endpoint.store("sequential-always/"), directory, "always", options.commits);
      const lease = await measureSequentialCommits(endpoint.store("sequential-lease/"), directory, "lease", options.commits);
      return { always, lease };
    });
  }
  let concurrent = null;
  if (runs(3)) {
    progress(`3. ${options.writers} concurrent writers, ${options.warmupSeconds} s warm-up + ${options.seconds} s…`);
    concurrent = await withWriterPeakRss(() => measureConcurrentWriters(endpoint, directory, options));
  }
  let bootstrap = null;
  if (runs(4)) {
    progress(`4. bootstrap of ${options.documents} documents + ${options.tailSegments} tail segments…`);
    bootstrap = await withWriterPeakRss(() => measureBootstrap(endpoint, directory, options));
  }
  let openLoop = null;
  if (runs(5)) {
    const bound = latencyBoundOf(roundTrips, endpoint.latencyModel);
    progress(`5. open loop on ${options.openLoopDocuments} documents; p99 bound ${bound.p99MsMax} ms (${OPEN_LOOP_P99_ROUND_TRIPS_MAX} × ${bound.source})…`);
    openLoop = await withWriterPeakRss(() => measureOpenLoop(endpoint, directory, options, bound));
  }
  let serveMemory = null;
  if (runs(6)) {
    progress(`6. \`cairn serve\` filled with ${options.serveDocuments} rows, then rows:move at ${options.serveRate}/s: the node's memory…`);
    serveMemory = await measureServeMemory(endpoint, directory, options);
  }
  return { roundTrips, sequential, concurrent, bootstrap, openLoop, serveMemory };
}

/**
 * Runs a phase whose shard writer lives in this process (phases 2–5; phase 4's bootstrap
 * readers report their own peak) and adds this process's peak RSS over it: VmHWM, reset
 * as the phase starts so that it is the phase's own.
 */
async function withWriterPeakRss<T extends object>(measure: () => Promise<T>): Promise<T & WriterPeakRss> {
  if (!resetPeakRss()) progress("  VmHWM could not be reset (/proc/self/clear_refs): this phase's figure runs from the process's start");
  const figures = await measure();
  return { ...figures, vmHwmBytes: peakRssBytes() };
}

await main();
