/**
 * Local materialization benchmark (file-backed SQLite in a temporary directory):
 * - apply throughput in documents/s, each document written with two index entries, in
 *   batches of 1,000, against the raw better-sqlite3 rate of inserting the same rows into
 *   the same schema with plain prepared INSERTs in one transaction per batch;
 * - `get` latency over random ids and `indexScan` latency for 100 rows, with the apply
 *   run's documents loaded;
 * - dump and restore of 1,000,000 small documents (with their two index entries each):
 *   time of each, and the process's peak RSS sampled throughout.
 *
 *   npm run bench:local [-- --apply-documents 200000 --dump-documents 1000000]
 *
 * Prints a table, then exactly one line of JSON with every figure. Never asserted in tests.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import Database from "better-sqlite3";
import { randomInt, SeededRandom } from "../src/base/random.js";
import { type ApplyBatch, type DumpChunk, LocalStore } from "../src/local/index.js";
import { configure, dataTablesSql, SECONDARY_INDEXES_SQL } from "../src/local/schema.js";
import { type DocumentId, newDocumentId } from "../src/model/DocumentId.js";
import { documentIndexKey } from "../src/model/IndexKey.js";

const BATCH_DOCUMENTS = 1_000;
const TABLE_NUMBER = 1;
const BY_SCORE = 1;
const BY_NAME = 2;
const GET_SAMPLES = 100_000;
const SCAN_SAMPLES = 10_000;
const SCAN_ROWS = 100;
/** Apply/raw runs alternate this many times; the best of each is reported (others share the machine). */
const THROUGHPUT_ROUNDS = 3;

interface Options {
  readonly applyDocuments: number;
  readonly dumpDocuments: number;
}

function parseOptions(argv: readonly string[]): Options {
  const valueOf = (name: string, fallback: number) => {
    const at = argv.indexOf(name);
    if (at < 0) return fallback;
    const value = Number(argv[at + 1]);
    if (!Number.isSafeInteger(value) || value < BATCH_DOCUMENTS) throw new Error(`${name} needs an integer >= ${BATCH_DOCUMENTS}`);
    return value;
  };
  return { applyDocuments: valueOf("--apply-documents", 200_000), dumpDocuments: valueOf("--dump-documents", 1_000_000) };
}

// ---- data -----------------------------------------------------------------------------

/** Batch `index` of a deterministic stream: small documents at ts = index + 1, two index entries each. */
function makeBatch(random: SeededRandom, index: number, idsOut?: DocumentId[]): ApplyBatch {
  const ts = index + 1;
  const revisions = [];
  const indexUpdates = [];
  for (let n = 0; n < BATCH_DOCUMENTS; n++) {
    const id = newDocumentId(TABLE_NUMBER, random);
    idsOut?.push(id);
    const score = randomInt(random, 1_000_000);
    const name = `user-${randomInt(random, 100_000)}`;
    revisions.push({ tableNumber: TABLE_NUMBER, id, ts, value: JSON.stringify({ name, score, active: true }), prevTs: null });
    indexUpdates.push({ indexId: BY_SCORE, key: documentIndexKey([score], ts, id), ts, docId: id });
    indexUpdates.push({ indexId: BY_NAME, key: documentIndexKey([name], ts, id), ts, docId: id });
  }
  return { revisions, indexUpdates, receipts: [], meta: { appliedSeqno: index, epoch: 1, lastHash: `h${index}`, frontierTs: ts } };
}

// ---- measurements ---------------------------------------------------------------------

function documentsPerSecond(documents: number, elapsedMs: number): number {
  return Math.round((documents / elapsedMs) * 1000);
}

function timeApply(path: string, batches: readonly ApplyBatch[]): number {
  const store = LocalStore.open({ path, shard: 0, deploymentId: "bench" });
  const started = performance.now();
  for (const batch of batches) store.apply(batch);
  const elapsedMs = performance.now() - started;
  store.close();
  return elapsedMs;
}

/** The same rows through plain prepared INSERTs, same schema, same pragmas, one transaction per batch. */
function timeRawInserts(path: string, batches: readonly ApplyBatch[]): number {
  const db = new Database(path);
  configure(db);
  db.exec(dataTablesSql("") + SECONDARY_INDEXES_SQL);
  const insertDocument = db.prepare("INSERT INTO documents (table_number, id, ts, value, prev_ts) VALUES (?, ?, ?, ?, ?)");
  const insertEntry = db.prepare("INSERT INTO index_entries (index_id, key, ts, doc_id) VALUES (?, ?, ?, ?)");
  const insertBatch = db.transaction((batch: ApplyBatch) => {
    for (const row of batch.revisions) insertDocument.run(row.tableNumber, row.id, row.ts, row.value, row.prevTs);
    for (const row of batch.indexUpdates) insertEntry.run(row.indexId, row.key, row.ts, row.docId);
  });
  const started = performance.now();
  for (const batch of batches) insertBatch(batch);
  const elapsedMs = performance.now() - started;
  db.close();
  return elapsedMs;
}

interface Percentiles {
  readonly p50Us: number;
  readonly p99Us: number;
}

function percentiles(samplesNs: BigInt64Array | bigint[]): Percentiles {
  const sorted = [...samplesNs].map(Number).sort((left, right) => left - right);
  const at = (fraction: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]! / 10) / 100;
  return { p50Us: at(0.5), p99Us: at(0.99) };
}

function timeGets(store: LocalStore, ids: readonly DocumentId[], ts: number, random: SeededRandom): Percentiles {
  const samples: bigint[] = [];
  for (let sample = 0; sample < GET_SAMPLES; sample++) {
    const id = ids[randomInt(random, ids.length)]!;
    const started = process.hrtime.bigint();
    const found = store.get(id, ts);
    samples.push(process.hrtime.bigint() - started);
    if (found === null) throw new Error(`document ${id} missing`);
  }
  return percentiles(samples);
}

function timeScans(store: LocalStore, ts: number, random: SeededRandom): Percentiles {
  const samples: bigint[] = [];
  for (let sample = 0; sample < SCAN_SAMPLES; sample++) {
    // Scores are uniform in [0, 1e6): start anywhere below the top so 100 rows exist.
    const start = documentIndexKey([randomInt(random, 900_000)], 0, newDocumentId(TABLE_NUMBER, random));
    const order = sample % 2 === 0 ? "asc" : "desc";
    const range = order === "asc" ? { start, end: null } : { start: new Uint8Array(0), end: start };
    const started = process.hrtime.bigint();
    const rows = store.indexScan(BY_SCORE, range, ts, order, SCAN_ROWS);
    samples.push(process.hrtime.bigint() - started);
    if (rows.length !== SCAN_ROWS && order === "asc") throw new Error(`scan returned ${rows.length} rows`);
  }
  return percentiles(samples);
}

/** Peak RSS, sampled whenever the work yields a chunk. */
class RssSampler {
  peakBytes = 0;

  sample(): void {
    this.peakBytes = Math.max(this.peakBytes, process.memoryUsage().rss);
  }
}

function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function* sampled(cursorChunks: AsyncIterable<DumpChunk>, sampler: RssSampler): AsyncGenerator<DumpChunk> {
  for await (const chunk of cursorChunks) {
    sampler.sample();
    yield chunk;
  }
}

async function* chunksOf(store: LocalStore): AsyncGenerator<DumpChunk> {
  const cursor = await store.openDumpCursor();
  try {
    for (let chunk = cursor.next(); chunk !== null; chunk = cursor.next()) yield chunk;
  } finally {
    cursor.close();
  }
}

// ---- phases -----------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const dir = mkdtempSync(join(tmpdir(), "cairn-bench-local-"));
  try {
    const results = { ...(await applyAndReads(dir, options)), ...(await dumpAndRestore(dir, options)) };
    printTable(results);
    console.log(JSON.stringify({ benchmark: "local", ...options, ...results }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function applyAndReads(dir: string, options: Options) {
  const random = new SeededRandom(1);
  const ids: DocumentId[] = [];
  const batches = Array.from({ length: options.applyDocuments / BATCH_DOCUMENTS }, (_, index) => makeBatch(random, index, ids));
  let applyMs = Number.POSITIVE_INFINITY;
  let rawMs = Number.POSITIVE_INFINITY;
  for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
    collectGarbage();
    rawMs = Math.min(rawMs, timeRawInserts(join(dir, `raw-${round}.sqlite`), batches));
    collectGarbage();
    applyMs = Math.min(applyMs, timeApply(join(dir, `apply-${round}.sqlite`), batches));
  }
  const store = LocalStore.open({ path: join(dir, "apply-0.sqlite"), shard: 0, deploymentId: "bench" });
  const ts = store.meta().frontierTs;
  const get = timeGets(store, ids, ts, random);
  const scan = timeScans(store, ts, random);
  store.close();
  const applyDocumentsPerSecond = documentsPerSecond(options.applyDocuments, applyMs);
  const rawDocumentsPerSecond = documentsPerSecond(options.applyDocuments, rawMs);
  return {
    applyDocumentsPerSecond,
    rawDocumentsPerSecond,
    applyToRawRatio: Math.round((applyDocumentsPerSecond / rawDocumentsPerSecond) * 100) / 100,
    getP50Us: get.p50Us,
    getP99Us: get.p99Us,
    scan100P50Us: scan.p50Us,
    scan100P99Us: scan.p99Us,
  };
}

async function dumpAndRestore(dir: string, options: Options) {
  const source = LocalStore.open({ path: join(dir, "dump-source.sqlite"), shard: 0, deploymentId: "bench" });
  const random = new SeededRandom(2);
  const loadStarted = performance.now();
  for (let index = 0; index < options.dumpDocuments / BATCH_DOCUMENTS; index++) source.apply(makeBatch(random, index));
  const loadMs = performance.now() - loadStarted;
  collectGarbage();
  const sampler = new RssSampler();
  sampler.sample();
  const rssBeforeBytes = sampler.peakBytes;

  const dumpStarted = performance.now();
  let dumpedRows = 0;
  for await (const chunk of sampled(chunksOf(source), sampler)) dumpedRows += chunk.rows.length;
  const dumpMs = performance.now() - dumpStarted;

  const target = LocalStore.open({ path: join(dir, "restore-target.sqlite"), shard: 0, deploymentId: "bench" });
  const { appliedSeqno, epoch, lastHash, frontierTs } = source.meta();
  const restoreStarted = performance.now();
  const stats = await target.restore(sampled(chunksOf(source), sampler), { appliedSeqno, epoch, lastHash, frontierTs });
  const restoreMs = performance.now() - restoreStarted;
  sampler.sample();
  if (stats.documents !== options.dumpDocuments || stats.indexEntries !== 2 * options.dumpDocuments) {
    throw new Error(`restore reported ${JSON.stringify(stats)}`);
  }
  source.close();
  target.close();
  return {
    loadDocumentsPerSecond: documentsPerSecond(options.dumpDocuments, loadMs),
    dumpRows: dumpedRows,
    dumpMs: Math.round(dumpMs),
    restoreMs: Math.round(restoreMs),
    rssBeforeDumpMb: Math.round(rssBeforeBytes / 2 ** 20),
    peakRssMb: Math.round(sampler.peakBytes / 2 ** 20),
    gcAvailable: typeof (globalThis as { gc?: unknown }).gc === "function",
  };
}

function printTable(results: Record<string, number | boolean>): void {
  const rows: [string, string, string][] = [
    ["apply (2 indexes, batches of 1000)", `${results.applyDocumentsPerSecond} docs/s`, ">= 100000 docs/s"],
    ["raw better-sqlite3 inserts", `${results.rawDocumentsPerSecond} docs/s`, ""],
    ["apply / raw", `${results.applyToRawRatio}`, ">= 0.5"],
    ["get p50 / p99", `${results.getP50Us} / ${results.getP99Us} µs`, "p50 <= 20 µs"],
    ["indexScan 100 rows p50 / p99", `${results.scan100P50Us} / ${results.scan100P99Us} µs`, ""],
    ["load for dump (apply)", `${results.loadDocumentsPerSecond} docs/s`, ""],
    ["dump (rows: docs + entries)", `${results.dumpMs} ms (${results.dumpRows} rows)`, ""],
    ["restore (streamed from a dump)", `${results.restoreMs} ms`, ""],
    ["RSS before dump / peak", `${results.rssBeforeDumpMb} / ${results.peakRssMb} MB`, "peak <= 400 MB"],
  ];
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => row[column]!.length), 6));
  const line = (cells: readonly string[]) => cells.map((cell, column) => cell.padEnd(widths[column]!)).join("  ");
  console.log(line(["measure", "result", "target"]));
  for (const row of rows) console.log(line(row));
}

await main();
