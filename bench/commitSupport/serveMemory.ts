import { spawnSync } from "node:child_process";
import { Agent, request as httpRequest } from "node:http";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { SeededRandom, randomInt } from "../../src/base/random.js";
import { round, summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import { peakRssBytes, resetPeakRss } from "../kit/peakRss.js";
import { progressPrinter } from "../kit/progress.js";
import type { RemoteEndpoint } from "../kit/RemoteEndpoint.js";
import { ServeChild } from "../kit/ServeChild.js";
import type { CommitBenchOptions } from "./options.js";
import { PoissonArrivals, runArrivals } from "../kit/PoissonArrivals.js";

const progress = progressPrinter("  ");

/** bench:functions' app: its `rows` table (an index by group) and the realistic `rows:move` mutation. */
const APP_PATH = "bench/functionsSupport/benchApp.ts";
/** Rows one `rows:fill` mutation inserts (a mutation writes at most 8,192 documents). */
const FILL_ROWS_PER_MUTATION = 1_000;
const FILL_MUTATIONS_IN_FLIGHT = 4;
/** Rows per group of `rows:fill`: a move changes a row's group, so its index entry moves. */
const GROUP_ROWS = 100;
/** How long the node is left idle after the fill before the open loop, so that its folds catch up. */
const SETTLE_MS = 2_000;

export type ServeMemoryOptions = Pick<CommitBenchOptions, "serveDocuments" | "serveRate" | "serveSeconds" | "serveHeapMib" | "serveFrom">;

/** One part of the phase: the node's VmHWM over it and what it did meanwhile. */
export interface ServeMemoryPart {
  readonly seconds: number;
  readonly vmHwmBytes: number | null;
}

export interface ServeMemoryFigures {
  /** What ran: the built package (as installed) or the sources through tsx. */
  readonly from: "package" | "source";
  /** The `--heap-mib` the node ran with (null: its default). */
  readonly heapMibFlag: number | null;
  /** Its heap limit as its metrics report it (old generation + V8's young generation). */
  readonly heapLimitBytes: number | null;
  readonly fill: ServeMemoryPart & { readonly documents: number; readonly documentsPerSecond: number };
  readonly openLoop: ServeMemoryPart & {
    readonly targetRate: number;
    readonly acknowledged: number;
    readonly failures: number;
    /** Failures by error code (or message), the most frequent first. */
    readonly failureCodes: Readonly<Record<string, number>>;
    readonly acknowledgedPerSecond: number;
    readonly latency: LatencySummary;
  };
  /** The node's JavaScript heap in use at the end (admin status; garbage included). */
  readonly heapUsedBytesAtEnd: number;
}

/**
 * Phase 6: `cairn serve`'s memory at a real store size, run as an operator runs it — the
 * built package (dist/, built first; `--serve-from source` runs the sources through tsx
 * as `npm start` does, ~70 MiB more for the loader in both threads) in a child process
 * (ServeChild) with Node's default flags over the S3 test endpoint, its default heap
 * limit unless `--serve-heap-mib` — with bench:functions' app:
 *
 * 1. Fill (latency off): `serveDocuments` rows through `rows:fill` mutations over HTTP,
 *    FILL_MUTATIONS_IN_FLIGHT at a time: sustained apply into the node's local store as
 *    fast as it takes them.
 * 2. Open loop (the selected latency on): `rows:move` of a random row at `serveRate`
 *    Poisson arrivals a second for `serveSeconds`, over HTTP, each started at once.
 *
 * Reported: the node's VmHWM over each part (reset between them), its heap limit, and
 * the heap it held at the end. The load runs in this process; the node's memory is its own.
 */
export async function measureServeMemory(endpoint: RemoteEndpoint, directory: string, options: ServeMemoryOptions): Promise<ServeMemoryFigures> {
  if (options.serveFrom === "package") buildPackage();
  await endpoint.latencyOff();
  const node = await ServeChild.start({
    from: options.serveFrom,
    name: "cairn serve",
    endpoint: endpoint.address,
    prefix: "serve-memory/",
    localDirectory: join(directory, "serve-memory"),
    appPath: APP_PATH,
    serveFlags: options.serveHeapMib === null ? [] : ["--heap-mib", String(options.serveHeapMib)],
    outputLinesMax: 200,
  });
  try {
    const heapLimitBytes = Number(/^cairn_heap_limit_bytes (\d+)$/m.exec(await node.metrics())?.[1] ?? Number.NaN);
    resetPeakRss(node.pid);
    const filled = await fill(node, options.serveDocuments);
    const fillPeak = peakRssBytes(node.pid);
    await sleep(SETTLE_MS);
    await endpoint.latencyOn();
    resetPeakRss(node.pid);
    const loop = await openLoop(node, filled.ids, options.serveRate, options.serveSeconds);
    const loopPeak = peakRssBytes(node.pid);
    const status = await node.adminStatus();
    return {
      from: options.serveFrom,
      heapMibFlag: options.serveHeapMib,
      heapLimitBytes: Number.isFinite(heapLimitBytes) ? heapLimitBytes : null,
      fill: { documents: options.serveDocuments, seconds: filled.seconds, documentsPerSecond: Math.round(options.serveDocuments / filled.seconds), vmHwmBytes: fillPeak },
      openLoop: { ...loop, vmHwmBytes: loopPeak },
      heapUsedBytesAtEnd: status.process.heapUsedBytes,
    };
  } finally {
    await node.stop();
    agent.destroy();
  }
}

/** `npm run build`: dist/ from the current sources, so that the package measured is this checkout. */
function buildPackage(): void {
  progress("building the package (npm run build) to run it as an installed `cairn`…");
  const built = spawnSync(process.execPath, ["scripts/buildPackage.mjs"], { stdio: ["ignore", "ignore", "inherit"] });
  if (built.status !== 0) throw new Error(`npm run build failed (exit ${built.status})`);
}

async function fill(node: ServeChild, documents: number): Promise<{ readonly ids: string[]; readonly seconds: number }> {
  progress(`fill: ${documents} rows through rows:fill, ${FILL_ROWS_PER_MUTATION} a mutation, ${FILL_MUTATIONS_IN_FLIGHT} in flight (latency off)…`);
  const startedMs = performance.now();
  const ids: string[] = [];
  let next = 0;
  let lastReport = 0;
  const lane = async () => {
    while (next < documents) {
      const from = next;
      const count = Math.min(FILL_ROWS_PER_MUTATION, documents - from);
      next += count;
      ids.push(...((await mutation(node, "rows:fill", { from, count, groupSize: GROUP_ROWS })) as string[]));
      if (ids.length - lastReport >= documents / 10) {
        lastReport = ids.length;
        progress(`  ${ids.length} rows, ${Math.round(ids.length / ((performance.now() - startedMs) / 1000))} rows/s; node VmHWM ${mib(peakRssBytes(node.pid))} MiB`);
      }
    }
  };
  await Promise.all(Array.from({ length: FILL_MUTATIONS_IN_FLIGHT }, lane));
  return { ids, seconds: round((performance.now() - startedMs) / 1000, 2) };
}

async function openLoop(node: ServeChild, ids: readonly string[], rate: number, seconds: number) {
  progress(`open loop: rows:move at ${rate}/s for ${seconds} s (latency on)…`);
  const random = new SeededRandom(61);
  const arrivals = new PoissonArrivals(random, rate);
  const latenciesMs: number[] = [];
  let failures = 0;
  const failureCodes = new Map<string, number>();
  const startedMs = performance.now();
  const endMs = startedMs + seconds * 1000;
  await runArrivals(arrivals, (dueMs) => dueMs < endMs, async (scheduledMs) => {
    const id = ids[randomInt(random, ids.length)]!;
    try {
      await mutation(node, "rows:move", { id, group: randomInt(random, ids.length / GROUP_ROWS) });
      latenciesMs.push(performance.now() - scheduledMs);
    } catch (error) {
      failures++;
      const code = error instanceof MutationError ? error.code : String((error as Error).cause ?? error).slice(0, 80);
      failureCodes.set(code, (failureCodes.get(code) ?? 0) + 1);
    }
  });
  const measuredSeconds = (performance.now() - startedMs) / 1000;
  return {
    targetRate: rate,
    seconds: round(measuredSeconds, 2),
    acknowledged: latenciesMs.length,
    failures,
    failureCodes: Object.fromEntries([...failureCodes].sort((a, b) => b[1] - a[1])),
    acknowledgedPerSecond: Math.round(latenciesMs.length / measuredSeconds),
    latency: summarizeLatencies(latenciesMs),
  };
}

/**
 * Keep-alive connections to the node, at most HTTP_CONNECTIONS_MAX, as a load balancer or
 * an app server in front of a node holds them; more requests at once wait for one. Enough
 * for the requests in flight at the default rate (3,000/s × ~150 ms ≈ 450): with 64, the
 * open loop measured the connections (64 ÷ 100 ms), not the node.
 */
const HTTP_CONNECTIONS_MAX = 512;
const agent = new Agent({ keepAlive: true, maxSockets: HTTP_CONNECTIONS_MAX });

async function mutation(node: ServeChild, path: string, args: unknown): Promise<unknown> {
  const body = JSON.stringify({ path, args });
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const request = httpRequest(new URL("api/mutation", node.url), { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
      response.on("error", reject);
    });
    request.on("error", reject);
    request.end(body);
  });
  const answer = JSON.parse(text) as { value?: unknown; error?: { code: string; message: string } };
  if (status !== 200) throw new MutationError(answer.error?.code ?? `HTTP ${status}`, `${path}: ${status} ${answer.error?.message ?? ""}`);
  return answer.value;
}

/** A mutation the node answered with an error. */
class MutationError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function mib(bytes: number | null): string {
  return bytes === null ? "-" : String(Math.round(bytes / 2 ** 20));
}
