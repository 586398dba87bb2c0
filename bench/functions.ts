/**
 * Functions runtime benchmark against the S3 test endpoint (in a child process) at
 * 20 ± 5 ms per request (15 ms + uniform [0, 10] ms, the "uniform" model of
 * bench:commit). Local SQLite files live in a temp dir, removed at the end.
 *
 * 1. Raw engine: `--clients` concurrent writers on an empty shard, each looping "commit a
 *    blind one-document insert with one index entry, await it" (bench:commit's phase 3).
 * 2. Functions, distinct documents: the same number of clients, each looping
 *    `runMutation("notes:add")` — argument validation, a handler inserting one document
 *    (schema-checked, two system index entries), OCC read set, commit. Target: ≥ 0.8×
 *    phase 1's mutations/s.
 * 3. Contention: `--hot-clients` clients each looping `counters:bump` on one of
 *    `--hot-documents` counters picked at random (get, patch value + 1): commits/s,
 *    re-runs per commit, mutations that gave up; the counters' total is checked against
 *    the commits acknowledged.
 * 5. The realistic mutation through the runtime: `--clients` clients each looping
 *    `runMutation("rows:move")` with a receipt (clientId, seq) on a shard of
 *    `--move-documents` rows — read one random row, move it to another group (its index
 *    entry moves), OCC read set: mutations/s, p50/p99, and the main thread's busy time per
 *    mutation (event-loop utilization × wall time / mutations; folds and checkpoints run on
 *    worker threads and are not in it). Target (issue 27): ≤ 60 µs. Profile it with
 *    `node --expose-gc --cpu-prof --import tsx bench/functions.ts --phases 5`.
 * 4. Reads on a warm local store of `--read-documents` documents (groups of 100 by an
 *    index), latency off: `runQuery("rows:get")` of a random id and
 *    `runQuery("rows:group")` (a 100-row index range), each timed end to end through the
 *    runtime, after a full GC (the earlier phases' garbage belongs to other deployments).
 *    Targets: get p50 ≤ 20 µs, 100-row range p50 ≤ 1 ms.
 *
 *   npm run bench:functions [-- --clients 1000 --seconds 10 --read-documents 100000]
 *
 * Prints a table, then one line of JSON with every figure. Progress goes to stderr.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { SeededRandom, systemRandom } from "../src/base/random.js";
import { App } from "../src/functions/App.js";
import { resolveCatalog } from "../src/functions/catalog.js";
import { FunctionRuntime } from "../src/functions/FunctionRuntime.js";
import { openBenchWriter, type BenchWriter } from "./commitSupport/BenchWriter.js";
import { measureConcurrentWriters } from "./commitSupport/concurrentWriters.js";
import { round, summarizeLatencies, type LatencySummary } from "./kit/LatencySummary.js";
import { LATENCY_MODELS } from "./kit/latencyModels.js";
import { RemoteEndpoint } from "./kit/RemoteEndpoint.js";
import { flag, parseFlags } from "./kit/flags.js";
import { formatTable, latencies, printReport, verdict, type TableLine } from "./kit/report.js";
import * as benchApp from "./functionsSupport/benchApp.js";
import { progressPrinter } from "./kit/progress.js";

const progress = progressPrinter();

const options = parseFlags(process.argv.slice(2), {
  name: "bench:functions",
  description: "the functions runtime: mutations/s, hot documents, the realistic mutation's main-thread cost, query latency",
  flags: {
    clients: flag.wholeNumber("phases 1, 2 and 5: concurrent clients", 1_000),
    seconds: flag.seconds("measured seconds of each closed loop", 10),
    warmupSeconds: flag.seconds("warm-up seconds before each window", 3, { zeroAllowed: true }),
    hotClients: flag.wholeNumber("phase 3: clients on the hot counters", 100),
    hotDocuments: flag.wholeNumber("phase 3: hot counters", 10),
    readDocuments: flag.wholeNumber("phase 4: documents in the warm store", 100_000),
    readSamples: flag.wholeNumber("phase 4: timed gets (a tenth as many 100-row ranges)", 20_000),
    moveDocuments: flag.wholeNumber("phase 5: rows the realistic mutation moves among", 100_000),
    phases: flag.phases([1, 2, 3, 4, 5]),
    /** The writers' pipelineDepth (segments in flight); null: the engine's default. */
    pipelineDepth: flag.optionalWholeNumber("the writers' pipelineDepth", { absent: "the engine's" }),
  },
});

interface LoopFigures {
  readonly clients: number;
  readonly measuredSeconds: number;
  readonly mutations: number;
  readonly mutationsPerSecond: number;
  readonly latency: LatencySummary;
}

async function main(): Promise<void> {
  const directory = await mkdtemp(join(tmpdir(), "cairn-bench-functions-"));
  const latencyModel = LATENCY_MODELS.uniform;
  progress("starting the S3 test endpoint in a child process…");
  const endpoint = await RemoteEndpoint.start(latencyModel);
  try {
    await endpoint.latencyOn();
    progress(`1. raw engine: ${options.clients} concurrent writers, ${options.warmupSeconds} s warm-up + ${options.seconds} s…`);
    const raw = !options.phases.includes(1) ? skippedRaw() : await measureConcurrentWriters(endpoint, directory, { writers: options.clients, seconds: options.seconds, warmupSeconds: options.warmupSeconds, withIndex: true });
    progress(`2. functions: ${options.clients} concurrent clients calling notes:add…`);
    const distinct = options.phases.includes(2) ? await measureDistinct(endpoint, directory) : skippedLoop();
    progress(`3. contention: ${options.hotClients} clients on ${options.hotDocuments} hot counters…`);
    const contention = options.phases.includes(3) ? await measureContention(endpoint, directory) : skippedContention();
    progress(`5. the realistic mutation: ${options.clients} clients calling rows:move on ${options.moveDocuments} rows…`);
    const realistic = options.phases.includes(5) ? await measureRealistic(endpoint, directory) : skippedRealistic();
    await endpoint.latencyOff();
    progress(`4. reads on a warm store of ${options.readDocuments} documents…`);
    const reads = options.phases.includes(4) ? await measureReads(endpoint, directory) : skippedReads();
    const ratio = round(distinct.mutationsPerSecond / raw.mutationsPerSecond, 2);
    const summary = {
      latencyModel: latencyModel.description,
      raw: { clients: raw.writers, mutationsPerSecond: raw.mutationsPerSecond, commit: raw.commit },
      distinct: { ...distinct, ratioToRaw: ratio, ratioTarget: 0.8 },
      contention,
      realistic,
      reads,
    };
    const ran = (phase: 1 | 2 | 3 | 4 | 5, section: readonly TableLine[]): readonly TableLine[] => (options.phases.includes(phase) ? section : []);
    const lines: TableLine[] = [
      `bench:functions — S3 test endpoint, ${latencyModel.description}`,
      ...(options.phases.includes(1) || options.phases.includes(2) ? [`1–2. ${options.clients} concurrent clients, distinct documents (empty shard; ${options.seconds} s windows)`] : []),
      ...ran(1, [
        ["raw engine commits/s (1 doc + 1 index entry)", String(raw.mutationsPerSecond), ""],
        ["  commit p50 / p99", latencies(raw.commit), ""],
      ]),
      ...ran(2, [
        ["functions mutations/s (notes:add: 1 doc + its by_creation entry)", String(distinct.mutationsPerSecond), ""],
        ["  call p50 / p99", latencies(distinct.latency), ""],
        ...(options.phases.includes(1) ? [["  ratio to raw", ratio.toFixed(2), verdict(ratio >= 0.8, "≥ 0.80")] as const] : []),
      ]),
      ...ran(3, [
        `3. ${options.hotClients} clients on ${options.hotDocuments} hot counters (get + patch)`,
        ["commits/s", String(contention.commitsPerSecond), ""],
        ["re-runs per commit", contention.rerunsPerCommit.toFixed(2), ""],
        ["  of them: queued behind a re-run / lost an OCC race", `${contention.deferralsPerCommit.toFixed(2)} / ${contention.conflictsPerCommit.toFixed(2)}`, ""],
        ["gave up (WRITE_CONFLICT after all attempts)", String(contention.gaveUp), ""],
        ["first runs that waited their turn on the counter", contention.turnsWaitedPerCommit.toFixed(2), ""],
        ["main thread busy per commit", `${contention.mainThreadMicrosPerCommit} µs`, ""],
        ["commits per segment", contention.commitsPerSegment.toFixed(1), ""],
        ["  call p50 / p99", latencies(contention.latency), ""],
        ["counters' total = commits acknowledged", contention.totalMatches ? "yes" : "NO", ""],
      ]),
      ...ran(5, [
        `5. the realistic mutation (rows:move: get + patch moving its index entry, a receipt), ${options.clients} clients on ${realistic.documents} rows`,
        ["mutations/s", String(realistic.mutationsPerSecond), ""],
        ["  call p50 / p99", latencies(realistic.latency), ""],
        ["main thread busy per mutation (event-loop utilization)", `${realistic.mainThreadMicrosPerMutation} µs`, verdict(realistic.mainThreadMicrosPerMutation <= 60, "≤ 60 µs")],
        ["process CPU per mutation (all threads)", `${realistic.cpuMicrosPerMutation} µs`, ""],
      ]),
      ...ran(4, [
        `4. reads through the runtime, warm local store of ${reads.documents} documents (latency off)`,
        ["runQuery get p50 / p99", `${reads.get.p50Us} / ${reads.get.p99Us} µs`, verdict(reads.get.p50Us <= 20, "p50 ≤ 20 µs")],
        ["runQuery 100-row index range p50 / p99", `${reads.range.p50Us} / ${reads.range.p99Us} µs`, verdict(reads.range.p50Us <= 1000, "p50 ≤ 1,000 µs")],
      ]),
    ];
    printReport(formatTable(lines), summary);
  } finally {
    await endpoint.close();
    await rm(directory, { recursive: true, force: true });
  }
}

interface FunctionsWriter {
  readonly writer: BenchWriter;
  readonly runtime: FunctionRuntime;
}

/** A one-shard writer under its own prefix with the bench app's runtime on it; closing the writer closes the store. */
async function openFunctionsWriter(endpoint: RemoteEndpoint, directory: string, name: string): Promise<FunctionsWriter> {
  const store = endpoint.store(`${name}/`);
  const writer = await openBenchWriter(store, directory, name, options.pipelineDepth === null ? {} : { pipelineDepth: options.pipelineDepth });
  try {
    const app = App.fromModule(benchApp, "bench/functionsSupport/benchApp.ts");
    const catalog = await resolveCatalog(store, app.schema, systemRandom);
    return { writer, runtime: new FunctionRuntime({ app, catalog, shard: writer.engine }) };
  } catch (error) {
    await writer.close();
    throw error;
  }
}

/**
 * Runs `clients` loops of `call` for a warm-up and a measured window; counts the calls that
 * finished inside it, and the main thread's busy time (event-loop utilization) and the
 * process's CPU per call over the window.
 */
async function closedLoop(
  clients: number,
  call: (client: number, n: number) => Promise<unknown>,
): Promise<LoopFigures & { failures: Map<string, number>; mainThreadMicrosPerCall: number; cpuMicrosPerCall: number }> {
  const window = { measuring: false, stop: false, latenciesMs: [] as number[], failures: new Map<string, number>() };
  const loop = async (client: number) => {
    for (let n = 0; !window.stop; n++) {
      const startedMs = performance.now();
      try {
        await call(client, n);
      } catch (error) {
        const code = (error as { code?: string }).code ?? "UNKNOWN";
        if (window.measuring) window.failures.set(code, (window.failures.get(code) ?? 0) + 1);
        if (code !== "WRITE_CONFLICT") throw error;
        continue;
      }
      if (window.measuring) window.latenciesMs.push(performance.now() - startedMs);
    }
  };
  const running = Promise.all(Array.from({ length: clients }, (_, client) => loop(client)));
  const failed = running.then(() => {
    throw new Error("the clients stopped before the run ended");
  });
  try {
    await Promise.race([sleep(options.warmupSeconds * 1000), failed]);
    window.measuring = true;
    const busyAtOpen = performance.eventLoopUtilization();
    const cpuAtOpen = process.cpuUsage();
    const startedMs = performance.now();
    await Promise.race([sleep(options.seconds * 1000), failed]);
    window.measuring = false;
    const busy = performance.eventLoopUtilization(busyAtOpen);
    const cpu = process.cpuUsage(cpuAtOpen);
    const measuredSeconds = (performance.now() - startedMs) / 1000;
    const mutations = window.latenciesMs.length;
    return {
      mainThreadMicrosPerCall: Math.round((busy.active * 1000) / Math.max(1, mutations)),
      cpuMicrosPerCall: Math.round((cpu.user + cpu.system) / Math.max(1, mutations)),
      clients,
      measuredSeconds: round(measuredSeconds, 3),
      mutations,
      mutationsPerSecond: Math.round(mutations / measuredSeconds),
      latency: summarizeLatencies(window.latenciesMs),
      failures: window.failures,
    };
  } finally {
    window.stop = true;
    await running.catch(() => undefined);
    failed.catch(() => undefined);
  }
}

async function measureDistinct(endpoint: RemoteEndpoint, directory: string): Promise<LoopFigures> {
  const { writer, runtime } = await openFunctionsWriter(endpoint, directory, "distinct");
  try {
    const { failures: _failures, ...figures } = await closedLoop(options.clients, (client, n) => runtime.runMutation("notes:add", { client: `c${client}`, n }));
    return figures;
  } finally {
    await writer.close();
  }
}

async function measureContention(endpoint: RemoteEndpoint, directory: string) {
  const { writer, runtime } = await openFunctionsWriter(endpoint, directory, "contention");
  try {
    const ids = (await runtime.runMutation("counters:create", { slots: options.hotDocuments })).value as string[];
    const random = new SeededRandom(11);
    // Every acknowledged bump, warm-up included, must show in the total; re-runs are counted over the whole run too.
    let acknowledged = 0;
    let attempts = 0;
    let segments = 0;
    writer.engine.onSegmentApplied(() => segments++);
    const figures = await closedLoop(options.hotClients, async () => {
      const run = await runtime.runMutation("counters:bump", { id: ids[Math.floor(random.float() * ids.length)]! });
      acknowledged++;
      attempts += run.attempts;
    });
    const total = (await runtime.runQuery("counters:total")).value as number;
    return {
      clients: options.hotClients,
      documents: options.hotDocuments,
      measuredSeconds: figures.measuredSeconds,
      commits: figures.mutations,
      commitsPerSecond: figures.mutationsPerSecond,
      rerunsPerCommit: round((attempts - acknowledged) / Math.max(1, acknowledged), 2),
      deferralsPerCommit: round(runtime.deferrals / Math.max(1, acknowledged), 2),
      conflictsPerCommit: round(runtime.conflicts / Math.max(1, acknowledged), 2),
      gaveUp: figures.failures.get("WRITE_CONFLICT") ?? 0,
      turnsWaitedPerCommit: round(runtime.documentTurnsWaited / Math.max(1, acknowledged), 2),
      commitsPerSegment: round(acknowledged / Math.max(1, segments), 1),
      mainThreadMicrosPerCommit: figures.mainThreadMicrosPerCall,
      latency: figures.latency,
      totalMatches: total === acknowledged,
    };
  } finally {
    await writer.close();
  }
}

async function measureRealistic(endpoint: RemoteEndpoint, directory: string) {
  const { writer, runtime } = await openFunctionsWriter(endpoint, directory, "realistic");
  try {
    await endpoint.latencyOff();
    const ids: string[] = [];
    for (let from = 0; from < options.moveDocuments; from += 5_000) {
      const count = Math.min(5_000, options.moveDocuments - from);
      ids.push(...((await runtime.runMutation("rows:fill", { from, count, groupSize: 100 })).value as string[]));
    }
    await writer.local.flush();
    await endpoint.latencyOn();
    (globalThis as { gc?: () => void }).gc?.();
    const random = new SeededRandom(17);
    const groups = Math.ceil(options.moveDocuments / 100);
    const { mainThreadMicrosPerCall, cpuMicrosPerCall, ...figures } = await closedLoop(options.clients, (client, n) =>
      runtime.runMutation(
        "rows:move",
        { id: ids[Math.floor(random.float() * ids.length)]!, group: Math.floor(random.float() * groups) },
        { clientId: `client-${client}`, seq: n + 1, ...(n > 0 ? { ackedThrough: n } : {}) },
      ),
    );
    return { documents: options.moveDocuments, ...figures, mainThreadMicrosPerMutation: mainThreadMicrosPerCall, cpuMicrosPerMutation: cpuMicrosPerCall };
  } finally {
    await writer.close();
  }
}

function skippedRealistic(): Awaited<ReturnType<typeof measureRealistic>> {
  return { documents: 0, ...skippedLoop(), failures: new Map(), mainThreadMicrosPerMutation: Number.NaN, cpuMicrosPerMutation: Number.NaN };
}

async function measureReads(endpoint: RemoteEndpoint, directory: string) {
  const { writer, runtime } = await openFunctionsWriter(endpoint, directory, "reads");
  try {
    const ids: string[] = [];
    const batch = 5_000;
    for (let from = 0; from < options.readDocuments; from += batch) {
      const count = Math.min(batch, options.readDocuments - from);
      ids.push(...((await runtime.runMutation("rows:fill", { from, count, groupSize: 100 })).value as string[]));
    }
    await writer.local.flush();
    // The earlier phases' garbage is not this node's: measure from a collected heap (npm script runs with --expose-gc).
    (globalThis as { gc?: () => void }).gc?.();
    const random = new SeededRandom(5);
    const groups = Math.ceil(options.readDocuments / 100);
    // Warm the page cache and the JIT before timing.
    for (let i = 0; i < 2_000; i++) await runtime.runQuery("rows:get", { id: ids[Math.floor(random.float() * ids.length)]! });
    for (let i = 0; i < 200; i++) await runtime.runQuery("rows:group", { group: Math.floor(random.float() * groups) });
    const getUs: number[] = [];
    for (let i = 0; i < options.readSamples; i++) {
      const id = ids[Math.floor(random.float() * ids.length)]!;
      const startedMs = performance.now();
      await runtime.runQuery("rows:get", { id });
      getUs.push((performance.now() - startedMs) * 1000);
    }
    const rangeUs: number[] = [];
    for (let i = 0; i < Math.max(1, Math.floor(options.readSamples / 10)); i++) {
      const group = Math.floor(random.float() * groups);
      const startedMs = performance.now();
      const { value } = await runtime.runQuery("rows:group", { group });
      rangeUs.push((performance.now() - startedMs) * 1000);
      if (!Array.isArray(value) || (group < groups - 1 && value.length !== 100)) throw new Error(`group ${group} returned ${String((value as unknown[]).length)} rows`);
    }
    const get = summarizeLatencies(getUs);
    const range = summarizeLatencies(rangeUs);
    return {
      documents: options.readDocuments,
      get: { samples: get.samples, p50Us: round(get.p50Ms, 1), p99Us: round(get.p99Ms, 1) },
      range: { samples: range.samples, rows: 100, p50Us: round(range.p50Ms, 1), p99Us: round(range.p99Ms, 1) },
    };
  } finally {
    await writer.close();
  }
}

// Placeholders for phases left out with --phases (NaN figures print as such).
function skippedLoop(): LoopFigures {
  return { clients: 0, measuredSeconds: 0, mutations: 0, mutationsPerSecond: Number.NaN, latency: summarizeLatencies([]) };
}

function skippedRaw() {
  return { writers: 0, mutationsPerSecond: Number.NaN, commit: summarizeLatencies([]) };
}

function skippedContention(): Awaited<ReturnType<typeof measureContention>> {
  const loop = skippedLoop();
  return { clients: 0, documents: 0, measuredSeconds: 0, commits: 0, commitsPerSecond: Number.NaN, rerunsPerCommit: Number.NaN, deferralsPerCommit: Number.NaN, conflictsPerCommit: Number.NaN, gaveUp: 0, turnsWaitedPerCommit: Number.NaN, commitsPerSegment: Number.NaN, mainThreadMicrosPerCommit: Number.NaN, latency: loop.latency, totalMatches: true };
}

function skippedReads(): Awaited<ReturnType<typeof measureReads>> {
  return { documents: 0, get: { samples: 0, p50Us: Number.NaN, p99Us: Number.NaN }, range: { samples: 0, rows: 100, p50Us: Number.NaN, p99Us: Number.NaN } };
}

await main();
