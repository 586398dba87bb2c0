/**
 * Replica benchmark: real `cairn serve` children — a writer, and a replica of it started
 * with `--replica` — over the S3 test endpoint (another child) at 20 ± 5 ms per request
 * (15 ms + uniform [0, 10] ms, bench:commit's "uniform" model), serving
 * bench/replicaSupport/replicaBenchApp.ts; every node's local store in a temp dir, removed
 * at the end. Clients are raw protocol sockets in this process.
 *
 * 1. Commit → Transition on a replica: client A on the replica subscribes to
 *    `counters:get {name: "latency"}`; client B on the writer bumps it `--samples` times
 *    (after `--warmups`), one at a time, each after a pause uniform in
 *    [`--spacing-min-ms`, `--spacing-max-ms`] from when A saw the previous bump, so the
 *    replica's adaptive poll is back at its idle interval (as a user meets it). Commit
 *    latency = B's send → B's MutationResponse; replica latency = B's send → A's
 *    Transition. Twice: on a pair with wake hints (target p50 ≤ commit p50 + 1 round trip
 *    + 10 ms), and on a second pair, its own deployment, with `--no-wake-hints` on both
 *    nodes (target ≤ commit p50 + half the idle poll + 2 round trips); that pair is
 *    stopped before phase 2.
 * 2. An idle replica's S3 requests: nothing committed for `--idle-seconds` (measured once
 *    its watermark shows its position, so no deferred publish is pending); the replica's
 *    /metrics store calls before and after, scaled to an hour, by operation (target ≤
 *    4,000 GETs per shard-hour at the 1 s idle poll), its PUTs told apart by object — the
 *    node registry's entry (the node's, not the shard's) and its watermark — from the
 *    growth of their CAS versions, and the dollars per replica-month at S3 Standard prices.
 * 3. Catch-up after a pause: the replica is SIGSTOPped for `--pause-seconds` while
 *    `--load-writers` closed-loop writers insert one ~`--document-bytes` document per
 *    mutation on the writer; then the load stops, the replica gets SIGCONT, and its
 *    /api/health is read until its appliedSeqno is the writer's: segments/s and docs/s.
 *    Its watermark (24 h TTL) must show its position before the pause, so GC keeps what
 *    it needs; whether the writer's snapshots led to a restore anyway is reported.
 *
 *   npm run bench:replica [-- --quick] [-- --phases 1,2,3 --samples 200 --warmups 10
 *       --spacing-min-ms 2000 --spacing-max-ms 3000 --server-warmup-commits 300
 *       --poll-interval-ms 1000 --idle-seconds 120 --pause-seconds 300 --load-writers 8
 *       --document-bytes 200 --seed 1]
 *
 * `--quick` is a smoke run of ~3 minutes (8 samples, 30 s idle, 20 s pause). Prints a
 * table, then one line of JSON with every figure. Progress goes to stderr.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { SeededRandom } from "../src/base/random.js";
import { round } from "./kit/LatencySummary.js";
import { LATENCY_MODELS } from "./kit/latencyModels.js";
import { RemoteEndpoint } from "./kit/RemoteEndpoint.js";
import { BenchSocket } from "./syncSupport/BenchSocket.js";
import { primeCounter, sequentialBumps } from "./syncSupport/sequentialBumps.js";
import { measureCatchUp, type CatchUpFigures } from "./replicaSupport/catchUpAfterPause.js";
import { Cleanup, stopOnSignal } from "./kit/Cleanup.js";
import { measureIdleRequests, type IdleRequestFigures } from "./replicaSupport/idleRequests.js";
import { NodePair, shardHealth } from "./replicaSupport/NodePair.js";
import { parseReplicaBenchOptions } from "./replicaSupport/options.js";
import { measureReplicaLatency, type ReplicaLatencyFigures } from "./replicaSupport/replicaLatency.js";
import { printReplicaReport, ROUND_TRIP_MS } from "./replicaSupport/replicaReport.js";
import { progressPrinter } from "./kit/progress.js";

const progress = progressPrinter();

const options = parseReplicaBenchOptions(process.argv.slice(2));
// This process's own S3 client (phase 3's look at the bucket) would warn about Node 20 like the nodes, which spawnCairnServe silences.
process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] = "true";
const APP_PATH = fileURLToPath(new URL("./replicaSupport/replicaBenchApp.ts", import.meta.url));
/** The counters a pair's writer creates: "warmup" (with warm-up commits), "probe" (the hint target) and phase 1's "latency". */
const COUNTER_DOCUMENTS = (options.serverWarmupCommits > 0 ? 1 : 0) + 1 + (options.phases.includes(1) ? 1 : 0);

async function main(): Promise<void> {
  const startedMs = performance.now();
  const cleanup = new Cleanup(progress);
  signals = stopOnSignal(cleanup, progress);
  try {
    const directory = await mkdtemp(join(tmpdir(), "cairn-bench-replica-"));
    cleanup.add("removing the temp dir", () => rm(directory, { recursive: true, force: true }));
    const latencyModel = LATENCY_MODELS.uniform;
    progress("starting the S3 test endpoint in a child process…");
    const endpoint = await RemoteEndpoint.start(latencyModel);
    cleanup.add("closing the endpoint", () => endpoint.close());
    await endpoint.latencyOn();
    const random = new SeededRandom(options.seed);
    const stopProblems: string[] = [];
    const phases = new Set(options.phases);

    const hints = await startPair(cleanup, stopProblems, endpoint, directory, "hints", true);
    // This process's own look at the hints deployment (watermark, registry entry, manifest).
    const bucket = endpoint.store("hints/");
    cleanup.add("closing the bench's bucket client", () => bucket.close());
    const latencyHints = phases.has(1) ? await measureLatency(hints, "hints on", random) : null;

    let latencyPolling: ReplicaLatencyFigures | null = null;
    if (phases.has(1)) {
      const mark = cleanup.mark();
      const polling = await startPair(cleanup, stopProblems, endpoint, directory, "polling", false);
      latencyPolling = await measureLatency(polling, "hints off", random);
      progress("   stopping the hints-off pair…");
      await cleanup.runSince(mark);
    }

    let idle: IdleRequestFigures | null = null;
    if (phases.has(2)) {
      progress(`2. idle: counting the replica's store calls over ${options.idleSeconds} s with nothing committed…`);
      idle = await measureIdleRequests(hints, endpoint, bucket, options.idleSeconds, options.pollIntervalMs, ROUND_TRIP_MS, progress);
    }

    let catchUp: CatchUpFigures | null = null;
    if (phases.has(3)) {
      progress(`3. catch-up: the replica stopped for ${options.pauseSeconds} s while ${options.loadWriters} writers insert documents…`);
      catchUp = await measureCatchUp(hints, bucket, { pauseSeconds: options.pauseSeconds, loadWriters: options.loadWriters, documentBytes: options.documentBytes, random, progress });
    }

    const hintsSegments = (await shardHealth(hints.writer)).appliedSeqno + 1;
    progress("stopping the nodes…");
    await cleanup.run();
    printReplicaReport(
      {
        latencyModel: latencyModel.description,
        store: {
          hintsDeploymentDocuments: COUNTER_DOCUMENTS + (catchUp?.documents ?? 0),
          hintsDeploymentSegments: hintsSegments,
          pollingDeploymentDocuments: phases.has(1) ? COUNTER_DOCUMENTS : null,
        },
        latency: { hints: latencyHints, polling: latencyPolling },
        idle,
        catchUp,
        stopProblems,
        runSeconds: round((performance.now() - startedMs) / 1000, 1),
      },
      options,
    );
  } finally {
    await cleanup.run();
  }
  progress(`done in ${round((performance.now() - startedMs) / 1000, 1)} s`);
}

/** Starts a pair on its own prefix, warms its writer up (latency off) and, with hints, waits until the writer hints the replica. */
async function startPair(cleanup: Cleanup, stopProblems: string[], endpoint: RemoteEndpoint, directory: string, name: string, wakeHints: boolean): Promise<NodePair> {
  progress(`starting the ${name} pair: a writer, then a replica${wakeHints ? "" : ", both with --no-wake-hints"}…`);
  const pair = await NodePair.start({ name, endpoint: endpoint.address, directory, prefix: `${name}/`, appPath: APP_PATH, wakeHints, pollIntervalMs: options.pollIntervalMs });
  cleanup.add(`stopping the ${name} pair`, async () => stopProblems.push(...(await pair.stop())));
  progress(`   writer at ${pair.writer.url} (pid ${pair.writer.pid}), replica at ${pair.replica.url} (pid ${pair.replica.pid})`);
  const mutator = await BenchSocket.connect(pair.writer.syncUrl);
  try {
    if (options.serverWarmupCommits > 0) {
      progress(`   warming up: ${options.serverWarmupCommits} sequential commits on the writer, latency off…`);
      await endpoint.latencyOff();
      await sequentialBumps(mutator, await primeCounter(mutator, "warmup"), options.serverWarmupCommits);
      await endpoint.latencyOn();
    }
    if (wakeHints) {
      const waitedMs = await pair.awaitHintTarget(mutator);
      progress(`   the writer hints the replica (${(waitedMs / 1000).toFixed(1)} s after warming up)`);
    } else {
      await primeCounter(mutator, "probe");
    }
    await pair.awaitReplicaCaughtUp();
  } finally {
    await mutator.close();
  }
  return pair;
}

async function measureLatency(pair: NodePair, label: string, random: SeededRandom): Promise<ReplicaLatencyFigures> {
  const meanSeconds = (options.warmups + options.samples) * ((options.spacingMinMs + options.spacingMaxMs) / 2000);
  progress(`1. ${label}: ${options.warmups} + ${options.samples} spaced bumps on the writer, watched from the replica (~${Math.round(meanSeconds)} s)…`);
  return measureReplicaLatency(pair, label, { spacingMinMs: options.spacingMinMs, spacingMaxMs: options.spacingMaxMs, samples: options.samples, warmups: options.warmups, random, progress });
}

/** Set once main() started: whether a signal interrupted the run (what fails then is the interruption, not an error). */
let signals = null as { readonly interrupted: () => boolean } | null;

try {
  await main();
} catch (error) {
  // Interrupted: the signal handler exits once every child is stopped.
  if (!signals?.interrupted()) throw error;
}
