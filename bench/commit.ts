/**
 * Shard engine commit and bootstrap benchmark, against the S3 test endpoint with 20 ms ±
 * 5 ms of injected latency per request (uniform 15–25 ms: a same-region S3 round trip).
 * The endpoint runs in a child process so that its CPU does not compete with the
 * engine's event loop; local SQLite files live in a temp dir, removed at the end; time is
 * the system clock.
 *
 * 1. Baseline round trips: p50/p99 of a create (PUT) and of a create plus a conditional
 *    GET (PUT + GET), sequentially, through one S3ObjectStore.
 * 2. One client, sequential one-document commits, verify "always" and "lease": p50/p99
 *    and their ratio to the matching baseline.
 * 3. Concurrent writers on one shard, each looping "commit one document, await it":
 *    mutations/s, commit p50/p99, S3 requests per 1,000 mutations and the S3 Standard
 *    request cost per million mutations.
 * 4. Bootstrap of a large shard from a snapshot plus tail segments in a fresh process
 *    (time, documents/s, peak RSS), then a warm restart after new segments (time, GETs).
 *
 *   npm run bench:commit [-- --documents 1000000 --tail-segments 1000 --writers 1000 --seconds 10]
 *
 * Other flags: --round-trips, --commits, --warmup-seconds, --with-index,
 * --build-unit-documents, --tail-segment-documents, --warm-segments, --child-cpu-prof-dir
 * (see commitSupport/options.ts). Prints a table, then exactly one line of JSON with
 * every figure. Progress goes to stderr. Never asserted in tests. To profile the engine:
 *
 *   node --cpu-prof --import tsx bench/commit.ts [--child-cpu-prof-dir /tmp/profiles]
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { measureBootstrap } from "./commitSupport/bootstrap.js";
import { formatTable, summarize } from "./commitSupport/commitReport.js";
import { measureConcurrentWriters } from "./commitSupport/concurrentWriters.js";
import { parseCommitBenchOptions } from "./commitSupport/options.js";
import { RemoteEndpoint, SAME_REGION_LATENCY } from "./commitSupport/RemoteEndpoint.js";
import { measureRoundTrips } from "./commitSupport/roundTrips.js";
import { measureSequentialCommits } from "./commitSupport/sequentialCommits.js";

async function main(): Promise<void> {
  const options = parseCommitBenchOptions(process.argv.slice(2));
  const latency = `${SAME_REGION_LATENCY.latencyMs} ms + uniform [0, ${SAME_REGION_LATENCY.jitterMs}] ms`;
  const directory = await mkdtemp(join(tmpdir(), "cairn-bench-commit-"));
  progress("starting the S3 test endpoint in a child process…");
  const endpoint = await RemoteEndpoint.start();
  let measured;
  try {
    progress(`endpoint pid ${endpoint.pid} at ${endpoint.address.url}; latency ${latency}`);
    await endpoint.latencyOn();
    progress(`1. baseline round trips (${options.roundTrips} samples each)…`);
    const roundTrips = await measureRoundTrips(endpoint.store("round-trips/"), options.roundTrips);
    progress(`2. ${options.commits} sequential commits, verify "always" then "lease"…`);
    const always = await measureSequentialCommits(endpoint.store("sequential-always/"), directory, "always", options.commits);
    const lease = await measureSequentialCommits(endpoint.store("sequential-lease/"), directory, "lease", options.commits);
    progress(`3. ${options.writers} concurrent writers, ${options.warmupSeconds} s warm-up + ${options.seconds} s…`);
    const concurrent = await measureConcurrentWriters(endpoint, directory, options);
    progress(`4. bootstrap of ${options.documents} documents + ${options.tailSegments} tail segments…`);
    const bootstrap = await measureBootstrap(endpoint, directory, options);
    measured = { roundTrips, always, lease, concurrent, bootstrap };
  } finally {
    await endpoint.close();
    await rm(directory, { recursive: true, force: true });
  }
  const summary = summarize(options, latency, measured);
  process.stdout.write(formatTable(summary));
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

await main();
