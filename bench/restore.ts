/**
 * History benchmark (issue 28) against the S3 test endpoint (a child process; local
 * SQLite files in a temp dir, removed at the end).
 *
 * Build, with latency off: a 1-shard deployment of `--documents` (default 1,000,000)
 * ~100-byte documents (table `items`, 1,000 owners, a `by_owner` index entry each),
 * written in bulk mutations of 100 and snapshotted — then `--rewrites` (default 200,000)
 * of them rewritten in bulk mutations of 100 at `--rate` documents a second: the
 * history a restore replays (the log after the snapshot). The moment restored is the
 * middle of that history, so the restore reads the snapshot and replays half the log.
 *
 * 1. Restore, once per `--latencies` value (default 0 and 20 ms per request):
 *    `cairn restore --at <ts> --to <another prefix>` run as a user runs it, the CLI in a
 *    child process against s3:// URLs. Reported: wall time, documents/s (documents in
 *    the restored state / wall time), segments replayed, and the child's peak RSS (VmHWM).
 *    Targets: ≥ 50,000 documents/s, peak RSS ≤ 500 MiB.
 * 2. Branch: `cairn branch --at <the same ts> --to <another prefix>` in a child process,
 *    at each latency, of this deployment and of a small one (`--small-documents`, default
 *    10,000) with the same history of rewrites. Reported: wall time, requests by kind,
 *    bytes written. Target: independent of the deployment's size (nothing copied but the
 *    one segment cut at the fork).
 * 3. Export and import: `cairn export --at <the same ts> --to <a folder>`, then
 *    `cairn import --from <it>` into a new prefix (with the bench's app), each a child
 *    process at 0 ms per request. Reported: wall time, documents/s, peak RSS.
 * 4. Retention's storage: the bytes of log the rewrites wrote per second at the
 *    measured rate, what a 7-day window of such a log and its retained snapshots (one
 *    a day, each the size of the one measured) hold, and their price at S3 Standard's
 *    $0.023 per GB-month.
 *
 *   npm run bench:restore [-- --documents 1000000 --rewrites 200000 --latencies 0,20 --phases 1,2,3,4]
 *
 * Prints a table, then exactly one line of JSON with every figure. Progress goes to stderr.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { systemRandom } from "../src/base/random.js";
import { App } from "../src/functions/App.js";
import { resolveCatalog } from "../src/functions/catalog.js";
import { FunctionRuntime } from "../src/functions/FunctionRuntime.js";
import { RETENTION_MS_DEFAULT } from "../src/manifest/Globals.js";
import type { ObjectStore } from "../src/objectstore/ObjectStore.js";
import { ShardedStore } from "../src/shard/ShardedStore.js";
import { round } from "./kit/LatencySummary.js";
import { flag, parseFlags } from "./kit/flags.js";
import { LATENCY_MODELS } from "./kit/latencyModels.js";
import { RemoteEndpoint, storeUrlAt, type EndpointAddress } from "./kit/RemoteEndpoint.js";
import { watchPeakRss } from "./kit/peakRss.js";
import { progressPrinter, throttled } from "./kit/progress.js";
import { formatTable, printReport, verdict, type TableLine } from "./kit/report.js";
import { TsxChild } from "./kit/TsxChild.js";
import * as benchApp from "./restoreSupport/historyBenchApp.js";

const options = parseFlags(process.argv.slice(2), {
  name: "bench:restore",
  description: "`cairn restore` of a 1M-document deployment to the middle of its history, and what retention stores",
  flags: {
    documents: flag.wholeNumber("documents in the deployment", 1_000_000),
    rewrites: flag.wholeNumber("documents rewritten after the snapshot (the history a restore replays)", 200_000),
    rate: flag.wholeNumber("documents rewritten a second while building the history", 20_000),
    latencies: flag.wholeNumbers("ms per request of each restore run", [0, 20], { min: 0 }),
    smallDocuments: flag.wholeNumber("documents in the small deployment branched for comparison", 10_000),
    phases: flag.wholeNumbers("the phases to run (4, retention, is computed from the build)", [1, 2, 3, 4], { min: 1 }),
  },
});

const OWNERS = 1_000;
const BULK_DOCUMENTS = 100;
const BULK_IN_FLIGHT = 32;
const BODY = "x".repeat(70);
const OUTPUT_LINES_MAX = 1_000;
const BUILD_PROGRESS_INTERVAL_MS = 5_000;
/** S3 Standard storage, per GB-month. */
const STORAGE_DOLLARS_PER_GB_MONTH = 0.023;
const DAY_MS = 86_400_000;
const app = App.fromModule(benchApp, "restore bench app");
const progress = progressPrinter("[bench:restore] ");

interface History {
  readonly buildSeconds: number;
  readonly atTs: number;
  readonly snapshotBytes: number;
  readonly logBytes: number;
  readonly logSegments: number;
  readonly rewriteSeconds: number;
}

interface RestoreFigures {
  readonly latencyMs: number;
  readonly documents: number;
  readonly segmentsReplayed: number;
  readonly seconds: number;
  readonly documentsPerSecond: number;
  readonly peakRssMiB: number;
}

async function main(): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), "cairn-bench-restore-"));
  const endpoint = await RemoteEndpoint.start(LATENCY_MODELS.uniform);
  try {
    await endpoint.latencyOff();
    const history = await buildHistory(endpoint.store("source/"), join(directory, "build"), options.documents);
    const restores: RestoreFigures[] = [];
    for (const latencyMs of options.phases.includes(1) ? options.latencies : []) {
      if (latencyMs > 0) await endpoint.latencyRules([{ latencyMs }]);
      progress(`cairn restore of ${options.documents} documents at ${latencyMs} ms per request…`);
      restores.push(await measureRestore(endpoint.address, history.atTs, `restored-${latencyMs}ms/`, join(directory, `work-${latencyMs}`), latencyMs));
      await endpoint.latencyOff();
    }
    const branches: BranchFigures[] = [];
    const small = options.phases.includes(2) ? await buildHistory(endpoint.store("small/"), join(directory, "build-small"), options.smallDocuments) : null;
    for (const latencyMs of options.latencies) {
      if (small === null) break;
      for (const [prefix, documents, atTs] of [["source/", options.documents, history.atTs], ["small/", options.smallDocuments, small.atTs]] as const) {
        if (latencyMs > 0) await endpoint.latencyRules([{ latencyMs }]);
        progress(`cairn branch of ${documents} documents at ${latencyMs} ms per request…`);
        await endpoint.resetCounters();
        branches.push(await measureBranch(endpoint, prefix, atTs, `branch-${prefix}${latencyMs}ms/`, documents, latencyMs));
        await endpoint.latencyOff();
      }
    }
    const transfers = options.phases.includes(3) ? await measureExportImport(endpoint.address, history.atTs, directory) : [];
    report(history, restores, branches, transfers);
  } finally {
    await endpoint.close();
    await rm(directory, { recursive: true, force: true });
  }
}

/** The deployment: documents in bulk, a snapshot, then the rewrites at the given rate; returns the middle of the rewrites' history. */
async function buildHistory(store: ObjectStore, localDirectory: string, documents: number): Promise<History> {
  progress(`building ${documents} documents (latency off)…`);
  const started = performance.now();
  const sharded = await ShardedStore.open({ store, localDirectory, nodeId: "builder", numShards: 1 });
  let atTs = 0;
  let rewriteSeconds = 0;
  let snapshotBytes = 0;
  let snapshotSeqno = -1;
  try {
    await sharded.acquireAll();
    const engine = sharded.engines[0]!;
    const runtime = new FunctionRuntime({ app, catalog: await resolveCatalog(store, app.schema, systemRandom), shard: engine });
    const soFar = throttled(progress, BUILD_PROGRESS_INTERVAL_MS);
    const bulks = Math.ceil(documents / BULK_DOCUMENTS);
    await inParallel(bulks, async (bulk) => {
      const from = bulk * BULK_DOCUMENTS;
      await runtime.runMutation("items:addMany", { owner: `owner-${bulk % OWNERS}`, from, count: Math.min(BULK_DOCUMENTS, documents - from), body: BODY });
      soFar(`  ${from + BULK_DOCUMENTS} documents…`);
    });
    const snapshot = await engine.snapshotNow();
    snapshotBytes = snapshot?.bytes ?? 0;
    snapshotSeqno = snapshot?.seqno ?? -1;
    progress(`rewriting ${options.rewrites} documents at ${options.rate}/s…`);
    const rewriteBulks = Math.ceil(options.rewrites / BULK_DOCUMENTS);
    const rewriteStarted = performance.now();
    const middle = Math.floor(rewriteBulks / 2);
    await inParallel(rewriteBulks, async (bulk) => {
      // Paced: bulk k starts no sooner than k bulks' worth of the rate after the start.
      const due = rewriteStarted + (bulk * BULK_DOCUMENTS * 1000) / options.rate;
      if (due > performance.now()) await sleep(due - performance.now());
      const from = (bulk * BULK_DOCUMENTS) % documents;
      const run = await runtime.runMutation("items:touchMany", { owner: `owner-${(from / BULK_DOCUMENTS) % OWNERS}`, from, count: BULK_DOCUMENTS, version: 1 + Math.floor((bulk * BULK_DOCUMENTS) / documents) });
      if (bulk === middle) atTs = run.ts;
      soFar(`  ${(bulk + 1) * BULK_DOCUMENTS} rewritten…`);
    });
    rewriteSeconds = (performance.now() - rewriteStarted) / 1000;
  } finally {
    await sharded.close();
  }
  const buildSeconds = (performance.now() - started) / 1000;
  let logBytes = 0;
  let logSegments = 0;
  // The history after the snapshot: what the rewrites (and the acquire's fence) wrote.
  for await (const entry of store.list("s0/log/")) {
    if (!/^s0\/log\/\d{20}$/.test(entry.key)) continue;
    if (Number(entry.key.slice("s0/log/".length)) <= snapshotSeqno) continue;
    logBytes += entry.size;
    logSegments++;
  }
  await store.close();
  return { buildSeconds: round(buildSeconds, 1), atTs, snapshotBytes, logBytes, logSegments, rewriteSeconds: round(rewriteSeconds, 1) };
}

async function inParallel(count: number, run: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: BULK_IN_FLIGHT }, async () => {
      for (let index = next++; index < count; index = next++) await run(index);
    }),
  );
}

/** `cairn restore` in a child process, its peak RSS polled from /proc while it runs; its progress shows on stderr. */
async function measureRestore(address: EndpointAddress, atTs: number, targetPrefix: string, workDirectory: string, latencyMs: number): Promise<RestoreFigures> {
  const run = await timedCairn(
    "cairn restore",
    ["restore", "--store", storeUrlAt(address, "source/"), "--at", String(atTs), "--to", storeUrlAt(address, targetPrefix), "--work-dir", workDirectory],
    address,
  );
  const documents = Number(/, (\d+) document\(s\)\n/.exec(run.stdout)?.[1]);
  const segmentsReplayed = Number(/and (\d+) segment\(s\) after it/.exec(run.stdout)?.[1]);
  if (documents !== options.documents) throw new Error(`the restore wrote ${documents} documents, not ${options.documents}:\n${run.stdout}`);
  return {
    latencyMs,
    documents,
    segmentsReplayed,
    seconds: round(run.seconds, 1),
    documentsPerSecond: Math.round(documents / run.seconds),
    peakRssMiB: round(run.peakRssBytes / 2 ** 20, 0),
  };
}

interface BranchFigures {
  readonly latencyMs: number;
  readonly documents: number;
  readonly seconds: number;
  readonly requests: number;
  readonly gets: number;
  readonly puts: number;
  readonly lists: number;
  readonly bytesWritten: number;
}

/** `cairn branch` in a child process; the endpoint's counters (reset before) are its requests. */
async function measureBranch(endpoint: RemoteEndpoint, prefix: string, atTs: number, targetPrefix: string, documents: number, latencyMs: number): Promise<BranchFigures> {
  const run = await timedCairn("cairn branch", ["branch", "--store", storeUrlAt(endpoint.address, prefix), "--at", String(atTs), "--to", storeUrlAt(endpoint.address, targetPrefix)], endpoint.address);
  const counters = await endpoint.counters();
  const sum = (names: readonly string[], field: "requests" | "bytesIn") =>
    Object.entries(counters)
      .filter(([name]) => names.length === 0 || names.includes(name))
      .reduce((total, [, counted]) => total + counted[field], 0);
  return {
    latencyMs,
    documents,
    seconds: round(run.seconds, 2),
    requests: sum([], "requests"),
    gets: sum(["GetObject", "HeadObject", "HeadBucket"], "requests"),
    puts: sum(["PutObject", "DeleteObject", "DeleteObjects"], "requests"),
    lists: sum(["ListObjectsV2"], "requests"),
    bytesWritten: sum(["PutObject"], "bytesIn"),
  };
}

interface TransferFigures {
  readonly what: "export" | "import";
  readonly documents: number;
  readonly seconds: number;
  readonly documentsPerSecond: number;
  readonly peakRssMiB: number;
}

/** `cairn export` of the moment into a folder, then `cairn import` of that folder into a new deployment, each in a child process. */
async function measureExportImport(address: EndpointAddress, atTs: number, directory: string): Promise<TransferFigures[]> {
  const folder = join(directory, "export");
  progress(`cairn export of ${options.documents} documents…`);
  const exported = await timedCairn("cairn export", ["export", "--store", storeUrlAt(address, "source/"), "--at", String(atTs), "--to", folder], address);
  const exportedDocuments = Number(/: (\d+) document\(s\)\n/.exec(exported.stdout)?.[1]);
  progress(`cairn import of ${exportedDocuments} documents…`);
  const imported = await timedCairn(
    "cairn import",
    ["import", "--store", storeUrlAt(address, "imported/"), "--local", join(directory, "import-local"), "--from", folder, "--app", "bench/restoreSupport/historyBenchApp.ts"],
    address,
  );
  const importedDocuments = Number(/imported (\d+) document\(s\)/.exec(imported.stdout)?.[1]);
  if (exportedDocuments !== options.documents || importedDocuments !== options.documents) {
    throw new Error(`export wrote ${exportedDocuments} and import ${importedDocuments} documents, not ${options.documents}`);
  }
  const figures = (what: "export" | "import", run: { seconds: number; peakRssBytes: number }, documents: number): TransferFigures => ({
    what,
    documents,
    seconds: round(run.seconds, 1),
    documentsPerSecond: Math.round(documents / run.seconds),
    peakRssMiB: round(run.peakRssBytes / 2 ** 20, 0),
  });
  return [figures("export", exported, exportedDocuments), figures("import", imported, importedDocuments)];
}

/** A `cairn` command in a child process, its peak RSS polled from /proc while it runs; its stdout, seconds and peak RSS. */
async function timedCairn(name: string, args: readonly string[], address: EndpointAddress): Promise<{ stdout: string; seconds: number; peakRssBytes: number }> {
  const started = performance.now();
  const child = TsxChild.start(name, ["src/cli/main.ts", ...args], {
    stdout: "output",
    outputLinesMax: OUTPUT_LINES_MAX,
    echoStderr: true,
    env: { AWS_ACCESS_KEY_ID: address.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: address.credentials.secretAccessKey },
  });
  const peakRss = watchPeakRss(child.pid!);
  let code: number | null;
  let peakRssBytes = 0;
  try {
    code = await child.exitCode();
  } finally {
    peakRssBytes = peakRss.stop();
  }
  const seconds = (performance.now() - started) / 1000;
  if (code !== 0) throw new Error(`${name} exited with ${code}:\n${child.output.last(OUTPUT_LINES_MAX)}`);
  const stdout = child.output.since(0).filter((line) => line.stream === "stdout").map((line) => `${line.text}\n`).join("");
  return { stdout, seconds, peakRssBytes };
}

function report(history: History, restores: readonly RestoreFigures[], branches: readonly BranchFigures[], transfers: readonly TransferFigures[]): void {
  const logBytesPerSecond = history.logBytes / history.rewriteSeconds;
  const windowDays = RETENTION_MS_DEFAULT / DAY_MS;
  const logWindowBytes = logBytesPerSecond * (RETENTION_MS_DEFAULT / 1000);
  // One retained snapshot a day plus the current one, each about the size measured.
  const snapshotWindowBytes = history.snapshotBytes * (windowDays + 1);
  const gb = (bytes: number) => bytes / 1e9;
  const retention = {
    rewritesPerSecond: Math.round(options.rewrites / history.rewriteSeconds),
    logBytesPerSecond: Math.round(logBytesPerSecond),
    windowDays,
    logGB: round(gb(logWindowBytes), 2),
    snapshotsGB: round(gb(snapshotWindowBytes), 2),
    dollarsPerShardMonth: round(gb(logWindowBytes + snapshotWindowBytes) * STORAGE_DOLLARS_PER_GB_MONTH, 2),
    withoutRetentionDollarsPerShardMonth: round(gb(history.snapshotBytes) * STORAGE_DOLLARS_PER_GB_MONTH, 4),
  };
  const lines: TableLine[] = [
    `bench:restore — S3 test endpoint; 1 shard of ${options.documents} documents (~100 bytes, one index entry each), snapshotted, then ${options.rewrites} rewritten in bulks of ${BULK_DOCUMENTS}`,
    ["build (latency off)", `${history.buildSeconds} s; snapshot ${round(history.snapshotBytes / 2 ** 20, 1)} MiB; log after it ${history.logSegments} segments, ${round(history.logBytes / 2 ** 20, 1)} MiB`, ""],
    `1. cairn restore --at <the middle of the rewrites> --to <another prefix> (a child process, as a user runs it)`,
  ];
  for (const figures of restores) {
    lines.push([
      `${figures.documents} documents at ${figures.latencyMs} ms per request`,
      `${figures.seconds} s, ${figures.documentsPerSecond} documents/s, ${figures.segmentsReplayed} segments replayed, peak RSS ${figures.peakRssMiB} MiB`,
      verdict(figures.documentsPerSecond >= 50_000 && figures.peakRssMiB <= 500, "≥ 50,000/s, ≤ 500 MiB"),
    ]);
  }
  lines.push(`2. cairn branch --at <the same moment> --to <another prefix> (a child process): requests must not grow with the documents`);
  for (const figures of branches) {
    const small = branches.find((other) => other.latencyMs === figures.latencyMs && other.documents === options.smallDocuments)!;
    lines.push([
      `${figures.documents} documents at ${figures.latencyMs} ms per request`,
      `${figures.seconds} s, ${figures.requests} requests (${figures.gets} GET/HEAD, ${figures.puts} PUT/DELETE, ${figures.lists} LIST), ${round(figures.bytesWritten / 1024, 1)} KiB written`,
      figures === small ? "" : verdict(figures.requests <= small.requests * 1.25 + 10, `requests within 25% of ${options.smallDocuments} documents'`),
    ]);
  }
  lines.push(`3. cairn export --at <the same moment> to a folder, then cairn import of it into a new deployment (child processes, 0 ms per request)`);
  for (const figures of transfers) {
    lines.push([`${figures.what} of ${figures.documents} documents`, `${figures.seconds} s, ${figures.documentsPerSecond} documents/s, peak RSS ${figures.peakRssMiB} MiB`, verdict(figures.peakRssMiB <= 500, "≤ 500 MiB")]);
  }
  lines.push(
    `4. retention's storage at this history's rate (${retention.rewritesPerSecond} documents rewritten a second, ${round(logBytesPerSecond / 1024, 1)} KiB of log a second)`,
    [`${windowDays}-day window: log + ${windowDays + 1} snapshots`, `${retention.logGB} GB + ${retention.snapshotsGB} GB = $${retention.dollarsPerShardMonth} per shard-month`, ""],
    ["without retention (the current snapshot)", `$${retention.withoutRetentionDollarsPerShardMonth} per shard-month`, ""],
  );
  printReport(formatTable(lines), { benchmark: "restore", options, history, restores, branches, transfers, retention });
}

await main();
