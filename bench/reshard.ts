/**
 * Reshard and sharded-commit benchmark against the S3 test endpoint (a child process, so
 * that its CPU does not compete with the measured process; local SQLite files in a temp
 * dir, removed at the end).
 *
 * 1. Reshard, once per `--latencies` value (default 0 and 20 ms per request, every
 *    request): a 1-shard deployment of `--documents` (default 1,000,000) documents of
 *    ~110 bytes (table `items`, sharded by `owner`, 10,000 owners, a `by_owner` and a
 *    `by_creation` index entry each, one receipt per 100-document bulk mutation), built with latency off
 *    through the functions runtime and snapshotted (the state a deployment that ran for a
 *    while is in), then `cairn reshard --to 4` run as a user runs it: the CLI in a child
 *    process against an s3:// URL. Reported: wall time, documents/s, and the child's peak
 *    RSS (VmHWM from /proc, polled), and the documents per new shard.
 * 2. Commit throughput, 1 shard vs `--compare-shards` (default 4): a node (ShardedStore +
 *    FunctionRuntime) on an empty deployment, `--clients` (default 1,000) closed-loop
 *    clients, each looping `items:add` (one document and its index entry, with a random
 *    owner of 10,000, so the documents spread over the shard key), under the latency model
 *    of `bench:commit` (`--latency`, default s3-standard). Mutations/s, commit p50/p99 and
 *    this process's CPU use over the window (a single event loop: 100% means CPU-bound).
 *    With `--open-loop-rate N` the same mutations arrive as a Poisson process of N a
 *    second instead, each started at once whatever is in flight, and latency runs from
 *    the scheduled arrival: whether one shard's flush holds the others' commits shows in
 *    the 4-shard p50/p99 against the 1-shard one at the same rate.
 *
 *   npm run bench:reshard [-- --documents 1000000 --latencies 0,20 --phases 1,2]
 *
 * Prints a table, then exactly one line of JSON with every figure. Progress goes to stderr.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { SeededRandom, systemRandom } from "../src/base/random.js";
import { PoissonArrivals, runArrivals } from "./kit/PoissonArrivals.js";
import { App } from "../src/functions/App.js";
import { resolveCatalog } from "../src/functions/catalog.js";
import { FunctionRuntime } from "../src/functions/FunctionRuntime.js";
import { ShardedStore } from "../src/shard/ShardedStore.js";
import { round, summarizeLatencies, type LatencySummary } from "./kit/LatencySummary.js";
import { flag, parseFlags } from "./kit/flags.js";
import { LATENCY_MODELS, LATENCY_MODEL_NAMES, type BenchLatencyModel } from "./kit/latencyModels.js";
import { RemoteEndpoint, storeUrlAt, type EndpointAddress } from "./kit/RemoteEndpoint.js";
import { watchPeakRss } from "./kit/peakRss.js";
import { progressPrinter, throttled } from "./kit/progress.js";
import { TsxChild } from "./kit/TsxChild.js";
import { formatTable, printReport, type TableLine } from "./kit/report.js";
import * as benchApp from "./reshardSupport/reshardBenchApp.js";

const options = parseFlags(process.argv.slice(2), {
  name: "bench:reshard",
  description: "`cairn reshard` of a 1-shard store, and commits on 1 vs several shards",
  flags: {
    documents: flag.wholeNumber("phase 1: documents in the store resharded", 1_000_000),
    latencies: flag.wholeNumbers("phase 1: ms per request of each reshard run", [0, 20], { min: 0 }),
    to: flag.wholeNumber("phase 1: shards to reshard to", 4, 2),
    phases: flag.phases([1, 2]),
    clients: flag.wholeNumber("phase 2: closed-loop clients", 1_000),
    openLoopRate: flag.optionalWholeNumber("phase 2: Poisson arrivals a second, each started at once, instead of closed-loop clients", { absent: "closed loop" }),
    compareShards: flag.wholeNumber("phase 2: shards compared with 1", 4),
    seconds: flag.seconds("phase 2: measured seconds", 10),
    warmupSeconds: flag.seconds("phase 2: warm-up seconds", 3, { zeroAllowed: true }),
    latency: flag.choice("phase 2: the latency model", LATENCY_MODEL_NAMES, "s3-standard"),
  },
});

const OWNERS = 10_000;
const BULK_DOCUMENTS = 100;
const BULK_IN_FLIGHT = 32;
/** How often the build says how far it got. */
const BUILD_PROGRESS_INTERVAL_MS = 5_000;
/** Lines of `cairn reshard`'s output kept: its report (a line per new shard) and, on failure, what it said. */
const RESHARD_OUTPUT_LINES_MAX = 10_000;
/** ~80 bytes of body: with owner, n and the system fields, ~110 bytes of document. */
const BODY = "x".repeat(80);
const app = App.fromModule(benchApp, "reshard bench app");
const progress = progressPrinter("[bench:reshard] ");

interface ReshardFigures {
  readonly latencyMs: number;
  readonly documents: number;
  readonly buildSeconds: number;
  readonly seconds: number;
  readonly documentsPerSecond: number;
  readonly peakRssMiB: number;
  readonly perShard: readonly number[];
}

interface ThroughputFigures {
  readonly shards: number;
  readonly clients: number;
  readonly mutations: number;
  readonly mutationsPerSecond: number;
  readonly commit: LatencySummary;
  readonly cpuPercent: number;
}

async function main(): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), "cairn-bench-reshard-"));
  const endpoint = await RemoteEndpoint.start(LATENCY_MODELS[options.latency]);
  try {
    const reshards: ReshardFigures[] = [];
    if (options.phases.includes(1)) {
      for (const latencyMs of options.latencies) reshards.push(await measureReshard(endpoint, directory, latencyMs));
    }
    const throughput: ThroughputFigures[] = [];
    if (options.phases.includes(2)) {
      for (const shards of [1, options.compareShards]) throughput.push(await measureThroughput(endpoint, directory, shards));
    }
    report(reshards, throughput, endpoint.latencyModel);
  } finally {
    await endpoint.close();
    await rm(directory, { recursive: true, force: true });
  }
}

async function measureReshard(endpoint: RemoteEndpoint, directory: string, latencyMs: number): Promise<ReshardFigures> {
  const prefix = `reshard-${latencyMs}ms/`;
  await endpoint.latencyOff();
  const buildStarted = performance.now();
  await buildDeployment(endpoint, prefix, join(directory, `build-${latencyMs}`));
  const buildSeconds = (performance.now() - buildStarted) / 1000;
  if (latencyMs > 0) await endpoint.latencyRules([{ latencyMs }]);
  progress(`reshard of ${options.documents} documents 1 → ${options.to} at ${latencyMs} ms per request…`);
  const started = performance.now();
  const run = await runReshardCli(endpoint.address, prefix, join(directory, `work-${latencyMs}`));
  const seconds = (performance.now() - started) / 1000;
  await endpoint.latencyOff();
  const perShard = [...run.stdout.matchAll(/^shard \d+: (\d+) document\(s\)/gm)].map((match) => Number(match[1]));
  const documents = perShard.reduce((sum, count) => sum + count, 0);
  if (documents !== options.documents) throw new Error(`the reshard wrote ${documents} documents, not ${options.documents}:\n${run.stdout}`);
  return {
    latencyMs,
    documents,
    buildSeconds: round(buildSeconds, 1),
    seconds: round(seconds, 1),
    documentsPerSecond: Math.round(documents / seconds),
    peakRssMiB: round(run.peakRssBytes / 2 ** 20, 0),
    perShard,
  };
}

/** A stopped 1-shard deployment of `--documents` items under `prefix`, snapshotted. */
async function buildDeployment(endpoint: RemoteEndpoint, prefix: string, localDirectory: string): Promise<void> {
  progress(`building ${options.documents} documents on 1 shard (latency off)…`);
  const store = endpoint.store(prefix);
  const sharded = await ShardedStore.open({ store, localDirectory, nodeId: "builder", numShards: 1 });
  try {
    await sharded.acquireAll();
    const runtime = new FunctionRuntime({ app, catalog: await resolveCatalog(store, app.schema, systemRandom), shard: sharded.engines[0]! });
    const bulks = Math.ceil(options.documents / BULK_DOCUMENTS);
    let next = 0;
    const soFar = throttled(progress, BUILD_PROGRESS_INTERVAL_MS);
    const worker = async () => {
      for (let bulk = next++; bulk < bulks; bulk = next++) {
        const from = bulk * BULK_DOCUMENTS;
        const count = Math.min(BULK_DOCUMENTS, options.documents - from);
        await runtime.runMutation("items:addMany", { owner: `owner-${bulk % OWNERS}`, from, count, body: BODY }, { clientId: "builder", seq: bulk + 1 });
        soFar(`  ${from + count} documents…`);
      }
    };
    await Promise.all(Array.from({ length: BULK_IN_FLIGHT }, worker));
    await sharded.engines[0]!.snapshotNow();
  } finally {
    await sharded.close();
    await store.close();
  }
}

/** `cairn reshard` in a child process, its peak RSS polled from /proc while it runs; its progress shows on stderr. */
async function runReshardCli(address: EndpointAddress, prefix: string, workDirectory: string): Promise<{ stdout: string; peakRssBytes: number }> {
  const child = TsxChild.start("cairn reshard", ["src/cli/main.ts", "reshard", "--store", storeUrlAt(address, prefix), "--to", String(options.to), "--work-dir", workDirectory], {
    stdout: "output",
    outputLinesMax: RESHARD_OUTPUT_LINES_MAX,
    echoStderr: true,
    env: { AWS_ACCESS_KEY_ID: address.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: address.credentials.secretAccessKey },
  });
  const peakRss = watchPeakRss(child.pid!);
  let peakRssBytes = 0;
  let code: number | null;
  try {
    code = await child.exitCode();
  } finally {
    peakRssBytes = peakRss.stop();
  }
  const stdout = child.output.since(0).filter((line) => line.stream === "stdout").map((line) => `${line.text}\n`).join("");
  if (code !== 0) throw new Error(`cairn reshard exited with ${code}:\n${child.output.last(RESHARD_OUTPUT_LINES_MAX)}`);
  return { stdout, peakRssBytes };
}

async function measureThroughput(endpoint: RemoteEndpoint, directory: string, shards: number): Promise<ThroughputFigures> {
  const store = endpoint.store(`throughput-${shards}/`);
  await endpoint.latencyOff();
  const sharded = await ShardedStore.open({ store, localDirectory: join(directory, `throughput-${shards}`), nodeId: `node-${shards}`, numShards: shards });
  try {
    await sharded.acquireAll();
    const catalog = await resolveCatalog(store, app.schema, systemRandom);
    const runtime = new FunctionRuntime({ app, catalog, shards: { shards: sharded.engines, get readTs() { return sharded.readTs; } } });
    await endpoint.latencyOn();
    const load = options.openLoopRate === null ? `${options.clients} clients` : `${options.openLoopRate} arrivals/s`;
    progress(`${load} on ${shards} shard(s), ${options.warmupSeconds} s warm-up + ${options.seconds} s…`);
    const window = { measuring: false, stop: false, latenciesMs: [] as number[] };
    const add = (random: SeededRandom, n: number) => runtime.runMutation("items:add", { owner: `owner-${Math.floor(random.float() * OWNERS)}`, n, body: BODY });
    const loop = async (client: number) => {
      const random = new SeededRandom(client + 1);
      for (let n = 0; !window.stop; n++) {
        const startedMs = performance.now();
        await add(random, n);
        if (window.measuring) window.latenciesMs.push(performance.now() - startedMs);
      }
    };
    const arrive = async (rate: number) => {
      const random = new SeededRandom(shards);
      await runArrivals(new PoissonArrivals(random, rate), () => !window.stop, async (scheduledMs, n) => {
        const measured = window.measuring;
        await add(random, n);
        if (measured) window.latenciesMs.push(performance.now() - scheduledMs);
      });
    };
    const running = options.openLoopRate === null ? Promise.all(Array.from({ length: options.clients }, (_, client) => loop(client))) : arrive(options.openLoopRate);
    const failed = running.then(() => {
      throw new Error("the clients stopped before the run ended");
    });
    try {
      await Promise.race([sleep(options.warmupSeconds * 1000), failed]);
      window.measuring = true;
      const startedMs = performance.now();
      const cpuBefore = process.cpuUsage();
      await Promise.race([sleep(options.seconds * 1000), failed]);
      window.measuring = false;
      const cpu = process.cpuUsage(cpuBefore);
      const seconds = (performance.now() - startedMs) / 1000;
      if (options.openLoopRate !== null) {
        // Every arrival of the window counts, the slowest last to finish included.
        window.stop = true;
        await running;
      }
      const mutations = window.latenciesMs.length;
      return {
        shards,
        clients: options.clients,
        mutations,
        mutationsPerSecond: Math.round(mutations / seconds),
        commit: summarizeLatencies(window.latenciesMs),
        cpuPercent: Math.round(((cpu.user + cpu.system) / 1000 / (seconds * 1000)) * 100),
      };
    } finally {
      window.stop = true;
      await running.catch(() => undefined);
      failed.catch(() => undefined);
    }
  } finally {
    await endpoint.latencyOff();
    await sharded.close();
    await store.close();
  }
}

function report(reshards: readonly ReshardFigures[], throughput: readonly ThroughputFigures[], model: BenchLatencyModel): void {
  const lines: TableLine[] = [];
  if (reshards.length > 0) {
    lines.push(`1. cairn reshard 1 → ${options.to} of a snapshotted 1-shard store on the S3 test endpoint (~110-byte documents, two index entries each)`);
    for (const figures of reshards) {
      lines.push([
        `${figures.documents} documents at ${figures.latencyMs} ms per request`,
        `${figures.seconds} s, ${figures.documentsPerSecond} documents/s, peak RSS ${figures.peakRssMiB} MiB`,
        "peak RSS ≤ 500 MiB",
      ]);
      lines.push([`  documents per new shard`, figures.perShard.join(" / "), ""]);
    }
  }
  if (throughput.length > 0) {
    const load = options.openLoopRate === null ? `${options.clients} closed-loop clients` : `open loop: ${options.openLoopRate} Poisson arrivals a second`;
    lines.push(`2. ${load} calling items:add (random owner of ${OWNERS}), ${options.seconds} s window; latency: ${model.description}`);
    for (const figures of throughput) {
      lines.push([
        `${figures.shards} shard(s)`,
        `${figures.mutationsPerSecond} mutations/s (p50 ${figures.commit.p50Ms} ms, p99 ${figures.commit.p99Ms} ms), CPU ${figures.cpuPercent}% of a core`,
        "",
      ]);
    }
    if (throughput.length === 2 && options.openLoopRate === null) {
      lines.push([`ratio ${throughput[1]!.shards} : 1`, String(round(throughput[1]!.mutationsPerSecond / throughput[0]!.mutationsPerSecond, 2)), "≥ 2.5"]);
    }
    if (throughput.length === 2 && options.openLoopRate !== null) {
      // At one arrival rate, a shard whose flush held the others' commits would show in the many-shard p99.
      const [one, many] = throughput as [ThroughputFigures, ThroughputFigures];
      lines.push([`p99 ${many.shards} shards / 1 shard`, String(round(many.commit.p99Ms / one.commit.p99Ms, 2)), "≤ 1: no shard's flush holds another's commits"]);
    }
  }
  printReport(formatTable(lines), {
    benchmark: "reshard",
    options,
    reshards,
    throughput,
    ratio: throughput.length === 2 ? round(throughput[1]!.mutationsPerSecond / throughput[0]!.mutationsPerSecond, 2) : null,
  });
}

await main();
