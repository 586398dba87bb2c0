/**
 * Object-store benchmark: latency (p50/p99 at concurrency 1) and throughput (ops/s at
 * concurrency 64) of get, create, casPut and list, against the S3 test endpoint with no
 * injected latency, with 20 ms ± 5 ms per request (a same-region S3 round trip), and
 * against a directory store in a temporary directory.
 *
 *   npm run bench:objectstore [-- --ops 1000]
 *
 * Prints a table, then exactly one line of JSON with every figure. Bodies are 1 KiB (a
 * small manifest or segment); `list` lists a prefix of 100 keys (one page).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SeededRandom } from "../src/base/random.js";
import { FsObjectStore } from "../src/objectstore/FsObjectStore.js";
import type { ObjectStore } from "../src/objectstore/ObjectStore.js";
import { S3ObjectStore } from "../src/objectstore/S3ObjectStore.js";
import { startS3Endpoint, type S3Endpoint } from "../test/support/s3-endpoint/index.js";
import { flag, parseFlags } from "./kit/flags.js";
import { round, summarizeLatencies } from "./kit/LatencySummary.js";
import { progressPrinter } from "./kit/progress.js";
import { columns, printReport } from "./kit/report.js";

const progress = progressPrinter();

const LATENCY_CONCURRENCY = 1;
const THROUGHPUT_CONCURRENCY = 64;
const BODY_BYTES = 1024;
const GET_KEYS = 100;
const LIST_KEYS = 100;
const OPERATIONS = ["get", "create", "casPut", "list"] as const;
type Operation = (typeof OPERATIONS)[number];

interface Target {
  readonly name: string;
  readonly description: string;
  open(): Promise<{ store: ObjectStore; endpoint?: S3Endpoint; close(): Promise<void> }>;
}

interface Result {
  readonly target: string;
  readonly operation: Operation;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly opsPerSecond: number;
  /** S3 requests sent per operation in the throughput run (retries included); null for fs. */
  readonly requestsPerOperation: number | null;
}

const TARGETS: readonly Target[] = [
  {
    name: "s3-endpoint-0ms",
    description: "S3 test endpoint, no injected latency",
    open: () => openEndpointTarget(undefined),
  },
  {
    name: "s3-endpoint-20ms",
    description: "S3 test endpoint, 20 ms ± 5 ms per request",
    // The endpoint adds latencyMs plus uniform [0, jitterMs]: 15 + [0, 10] is 20 ± 5.
    open: () => openEndpointTarget({ latencyMs: 15, jitterMs: 10 }),
  },
  {
    name: "fs-tempdir",
    description: "directory store in a temporary directory",
    open: async () => {
      const root = await mkdtemp(join(tmpdir(), "cairn-bench-fs-"));
      const store = new FsObjectStore(root);
      return {
        store,
        close: async () => {
          await store.close();
          await rm(root, { recursive: true, force: true });
        },
      };
    },
  },
];

async function openEndpointTarget(latency: { latencyMs: number; jitterMs: number } | undefined) {
  const endpoint = await startS3Endpoint({ mode: "aws", seed: 1 });
  if (latency !== undefined) endpoint.faults.set([latency]);
  const store = new S3ObjectStore({
    bucket: endpoint.bucket,
    prefix: "bench/",
    region: endpoint.region,
    endpoint: endpoint.url,
    credentials: endpoint.credentials,
  });
  return {
    store,
    endpoint,
    close: async () => {
      await store.close();
      await endpoint.close();
    },
  };
}

async function main(): Promise<void> {
  const opsPerRun = parseFlags(process.argv.slice(2), {
    name: "bench:objectstore",
    description: "get, create, casPut and list latency and throughput against the S3 test endpoint (0 and 20 ms per request) and a directory store",
    flags: { ops: flag.wholeNumber("operations per run, each target and operation", 1000) },
  }).ops;
  const results: Result[] = [];
  for (const target of TARGETS) {
    progress(`benchmarking ${target.description} (${opsPerRun} ops per run)…`);
    const opened = await target.open();
    try {
      for (const operation of OPERATIONS) results.push(await benchmark(target.name, operation, opened, opsPerRun));
    } finally {
      await opened.close();
    }
  }
  printReport(tableOf(results, opsPerRun), {
    bench: "objectstore",
    opsPerRun,
    bodyBytes: BODY_BYTES,
    latencyConcurrency: LATENCY_CONCURRENCY,
    throughputConcurrency: THROUGHPUT_CONCURRENCY,
    node: process.version,
    results,
  });
}

async function benchmark(
  target: string,
  operation: Operation,
  opened: { store: ObjectStore; endpoint?: S3Endpoint },
  opsPerRun: number,
): Promise<Result> {
  const { store, endpoint } = opened;
  const latencyRun = await prepare(store, operation, `${operation}-latency/`, LATENCY_CONCURRENCY);
  const latencies = await run(opsPerRun, LATENCY_CONCURRENCY, latencyRun);
  const throughputRun = await prepare(store, operation, `${operation}-throughput/`, THROUGHPUT_CONCURRENCY);
  endpoint?.resetCounters();
  const started = performance.now();
  await run(opsPerRun, THROUGHPUT_CONCURRENCY, throughputRun);
  const elapsedMs = performance.now() - started;
  const requests = endpoint === undefined ? null : totalRequests(endpoint);
  const latency = summarizeLatencies(latencies);
  return {
    target,
    operation,
    p50Ms: latency.p50Ms,
    p99Ms: latency.p99Ms,
    opsPerSecond: Math.round((opsPerRun / elapsedMs) * 1000),
    requestsPerOperation: requests === null ? null : round(requests / opsPerRun),
  };
}

/**
 * Seeds what `operation` needs under `prefix` and returns one operation per call:
 * `worker` is the runner lane (casPut chains stay per lane, so racers never conflict).
 */
async function prepare(
  store: ObjectStore,
  operation: Operation,
  prefix: string,
  lanes: number,
): Promise<(index: number, worker: number) => Promise<void>> {
  const random = new SeededRandom(42);
  const body = () => random.bytes(BODY_BYTES);
  switch (operation) {
    case "get": {
      await Promise.all(Array.from({ length: GET_KEYS }, (_, index) => store.create(`${prefix}${index}`, body())));
      return async (index) => {
        const result = await store.get(`${prefix}${index % GET_KEYS}`);
        if (result === null) throw new Error("benchmark key vanished");
      };
    }
    case "create":
      return async (index) => {
        await store.create(`${prefix}${index}`, body());
      };
    case "casPut": {
      const etags = await Promise.all(
        Array.from({ length: lanes }, async (_, lane) => (await store.create(`${prefix}${lane}`, body())).etag),
      );
      return async (_index, lane) => {
        etags[lane] = (await store.casPut(`${prefix}${lane}`, body(), etags[lane] as string)).etag;
      };
    }
    case "list": {
      await Promise.all(Array.from({ length: LIST_KEYS }, (_, index) => store.create(`${prefix}${index}`, body())));
      return async () => {
        let count = 0;
        for await (const entry of store.list(prefix)) count += entry.size > 0 ? 1 : 0;
        if (count !== LIST_KEYS) throw new Error(`listed ${count} keys, expected ${LIST_KEYS}`);
      };
    }
  }
}

/** Runs `total` operations on `concurrency` lanes; returns each operation's latency in ms. */
async function run(
  total: number,
  concurrency: number,
  operation: (index: number, lane: number) => Promise<void>,
): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const lane = async (laneIndex: number) => {
    for (let index = next++; index < total; index = next++) {
      const started = performance.now();
      await operation(index, laneIndex);
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, laneIndex) => lane(laneIndex)));
  return latencies;
}

function totalRequests(endpoint: S3Endpoint): number {
  return Object.values(endpoint.counters()).reduce((sum, counters) => sum + counters.requests, 0);
}

function tableOf(results: readonly Result[], opsPerRun: number): string {
  const header = ["target", "operation", "p50 ms", "p99 ms", `ops/s @${THROUGHPUT_CONCURRENCY}`, "S3 req/op"];
  const rows = results.map((result) => [
    result.target,
    result.operation,
    result.p50Ms.toFixed(2),
    result.p99Ms.toFixed(2),
    String(result.opsPerSecond),
    result.requestsPerOperation === null ? "-" : result.requestsPerOperation.toFixed(2),
  ]);
  const title = `object-store benchmark: ${opsPerRun} ops per run, ${BODY_BYTES} B bodies, latency at concurrency ${LATENCY_CONCURRENCY}`;
  return `${title}\n${columns(header, rows, { leftAligned: 2, rule: true }).block.join("\n")}\n`;
}

await main();
