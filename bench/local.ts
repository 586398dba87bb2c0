/**
 * Local materialization benchmark at real store sizes (file-backed SQLite in a temp
 * directory, the production LocalStore with its overlay and fold worker). For each store
 * size N (default 1,000,000 and 5,000,000 users of ~190 bytes, two index entries each):
 *
 * 1. Bulk load: `restore` of a dump of the N users as a snapshot restore runs it
 *    (a bootstrap, a replica far behind), documents/s; generating the dump is timed
 *    apart and excluded.
 * 2. Sustained incremental apply on top: segments of 1,000 documents (80% new users,
 *    20% updates of preloaded ones, which also remove their two old index entries),
 *    applied as fast as the store takes them (awaiting `room()`, as catch-up does) in
 *    rounds of 50,000 documents generated beforehand, each timed until its last
 *    segment is folded into the file: documents/s.
 * 3. Catch-up as a replica runs it, continuing the same stream: segments of 1,000
 *    documents encoded beforehand as real log segment files, then read, decoded,
 *    verified and applied against the clock, continuously, with one flush at the end.
 * 4. The append-only floor, in the same run: the same rows appended to tables without
 *    any index, one transaction per 50,000 documents, generated beforehand.
 * 5. Reads at the end: `get` of random preloaded users and 100-row index scans from a
 *    random score, p50/p99, once everything is folded and again with ~30,000 documents
 *    still in the overlay.
 * 6. Peak RSS of the process and the largest size of the store's WAL file, sampled
 *    throughout; the kernel's own peak RSS of the process over each size (VmHWM, which
 *    no sample misses); and the live JS heap once the apply phase is over (after a full
 *    GC): the difference to the RSS is mostly garbage V8 collects lazily.
 *
 *   npm run bench:local [-- --sizes 1000000,5000000 --apply-documents 500000]
 *
 * Prints a table, then exactly one line of JSON with every figure. Never asserted in tests.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import Database from "better-sqlite3";
import { randomInt, SeededRandom } from "../src/base/random.js";
import { type ApplyBatch, type DumpChunk, LocalStore } from "../src/local/index.js";
import { CONNECTION_PRAGMAS } from "../src/local/schema.js";
import { documentIndexKey } from "../src/model/IndexKey.js";
import { decodeSegment, encodeSegment } from "../src/segments/Segment.js";
import { flag, parseFlags } from "./kit/flags.js";
import { BY_SCORE, IncrementalWrites, PreloadedUsers } from "./localSupport/dataset.js";
import { peakRssBytes, resetPeakRss } from "./kit/peakRss.js";
import { progressPrinter } from "./kit/progress.js";
import { columns, printReport } from "./kit/report.js";

const progress = progressPrinter();

const SEGMENT_DOCUMENTS = 1_000;
const UPDATE_FRACTION = 0.2;
/** Documents generated ahead and then applied against the clock (~50 MiB of rows, counted in the RSS). */
const ROUND_DOCUMENTS = 50_000;
const GET_SAMPLES = 50_000;
const SCAN_SAMPLES = 5_000;
const SCAN_ROWS = 100;
const OVERLAY_READ_DOCUMENTS = 30_000;

/** The store sizes measured, one flag each (`--sizes 1000000,5000000 --apply-documents 500000`). */
function parseOptions(argv: readonly string[]) {
  return parseFlags(argv, {
    name: "bench:local",
    description: "the local SQLite store: bulk load, sustained apply, catch-up, reads, memory",
    flags: {
      sizes: flag.wholeNumbers("store sizes, users each", [1_000_000, 5_000_000], { min: 10_000 }),
      applyDocuments: flag.wholeNumber("documents each apply phase writes", 500_000, SEGMENT_DOCUMENTS),
    },
  });
}

type Options = ReturnType<typeof parseOptions>;

/** Peak RSS, sampled every 25 ms the event loop allows and whenever the work passes by, overall and per phase. */
class RssSampler {
  peakBytes = 0;
  /** The store's WAL file at its largest (it is rewound, not shrunk: its size is its high-water mark). */
  peakWalBytes = 0;
  private phasePeak = 0;
  private phaseWalPeak = 0;
  readonly phases: Record<string, number> = {};
  readonly walPhases: Record<string, number> = {};
  private readonly timer = setInterval(() => this.sample(), 25).unref();

  constructor(private readonly walPath: string) {}

  stop(): void {
    clearInterval(this.timer);
  }

  sample(): void {
    if (existsSync(this.walPath)) {
      const wal = statSync(this.walPath).size;
      this.peakWalBytes = Math.max(this.peakWalBytes, wal);
      this.phaseWalPeak = Math.max(this.phaseWalPeak, wal);
    }
    const rss = process.memoryUsage().rss;
    this.peakBytes = Math.max(this.peakBytes, rss);
    this.phasePeak = Math.max(this.phasePeak, rss);
  }

  endPhase(name: string): void {
    this.sample();
    this.phases[name] = Math.round(this.phasePeak / 2 ** 20);
    this.walPhases[name] = Math.round(this.phaseWalPeak / 2 ** 20);
    this.phasePeak = 0;
    // The file keeps its size when SQLite rewinds it: a phase's figure is what the phase grew it to.
    this.phaseWalPeak = 0;
  }
}

function perSecond(count: number, elapsedMs: number): number {
  return Math.round((count / elapsedMs) * 1000);
}

interface Percentiles {
  readonly p50Us: number;
  readonly p99Us: number;
}

function percentiles(samplesNs: readonly bigint[]): Percentiles {
  const sorted = samplesNs.map(Number).sort((left, right) => left - right);
  const at = (fraction: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]! / 10) / 100;
  return { p50Us: at(0.5), p99Us: at(0.99) };
}

// ---- phases -------------------------------------------------------------------------------

/**
 * Restores the N users from a generated dump. Generating the rows is timed separately
 * and taken out: restore runs on this thread alone, so the difference is its own time.
 */
async function bulkLoad(store: LocalStore, users: PreloadedUsers, sampler: RssSampler): Promise<number> {
  let generatingMs = 0;
  async function* chunks(): AsyncGenerator<DumpChunk> {
    const dump = users.dump();
    let rows = 0;
    for (;;) {
      const started = performance.now();
      const step = dump.next();
      generatingMs += performance.now() - started;
      if (step.done === true) return;
      rows += step.value.rows.length;
      if (rows % 500_000 < step.value.rows.length) {
        sampler.sample();
        progress(`  bulk load: ${rows} of ${3 * users.count} rows`);
      }
      yield step.value;
    }
  }
  const started = performance.now();
  // As a snapshot restore runs it: rows verified by hash are not parsed again.
  const stats = await store.restore(chunks(), { appliedSeqno: -1, epoch: 1, lastHash: null, frontierTs: 1_000 }, { recordsChecked: true });
  const elapsedMs = performance.now() - started - generatingMs;
  if (stats.documents !== users.count || stats.indexEntries !== 2 * users.count) throw new Error(`restore reported ${JSON.stringify(stats)}`);
  sampler.sample();
  return perSecond(users.count, elapsedMs);
}

/**
 * Segments are generated a round of ROUND_DOCUMENTS at a time while the store is idle,
 * then applied and folded against the clock: the time counted is the store's alone, and
 * a round's tail (the last fold, with nothing left to apply) counts too.
 */
/** Documents per second, and the process's CPU (all threads) over the same clock, in cores. */
interface Throughput {
  readonly documentsPerSecond: number;
  readonly cores: number;
}

function coresOver(cpu: NodeJS.CpuUsage, elapsedMs: number): number {
  return Math.round(((cpu.user + cpu.system) / 1000 / elapsedMs) * 100) / 100;
}

async function sustainedApply(store: LocalStore, writes: IncrementalWrites, documents: number, sampler: RssSampler): Promise<Throughput> {
  let elapsedMs = 0;
  let cpu: NodeJS.CpuUsage = { user: 0, system: 0 };
  for (let applied = 0; applied < documents; ) {
    const round = Array.from({ length: Math.min(ROUND_DOCUMENTS, documents - applied) / SEGMENT_DOCUMENTS }, () => writes.batch());
    sampler.sample();
    const started = performance.now();
    const cpuBefore = process.cpuUsage();
    for (const batch of round) {
      await store.room();
      store.apply(batch);
      // A real apply loop awaits the network between segments; let the fold worker's answers in.
      await new Promise((resolve) => setImmediate(resolve));
    }
    sampler.sample();
    await store.flush();
    elapsedMs += performance.now() - started;
    const spent = process.cpuUsage(cpuBefore);
    cpu = { user: cpu.user + spent.user, system: cpu.system + spent.system };
    applied += round.length * SEGMENT_DOCUMENTS;
    const memory = process.memoryUsage();
    progress(`  apply: ${applied} of ${documents} documents, ${perSecond(applied, elapsedMs)} docs/s so far; rss ${Math.round(memory.rss / 2 ** 20)} heap ${Math.round(memory.heapUsed / 2 ** 20)}/${Math.round(memory.heapTotal / 2 ** 20)} external ${Math.round(memory.external / 2 ** 20)} MiB`);
  }
  sampler.sample();
  return { documentsPerSecond: perSecond(documents, elapsedMs), cores: coresOver(cpu, elapsedMs) };
}

/**
 * Catch-up as a replica runs it: the next `documents` of the stream are encoded as real
 * log segments (zlib, sha256 trailer) into files beforehand; then, against the clock,
 * each is read back, decoded and verified (`decodeSegment`), and applied, awaiting
 * `room()`, with one flush at the very end. Decoding is counted: a replica does it too.
 * The hash chain is not checked (the rounds before were not real segments).
 */
async function catchUpFromSegments(store: LocalStore, writes: IncrementalWrites, documents: number, dir: string, sampler: RssSampler): Promise<Throughput> {
  const segmentDir = join(dir, "segments");
  mkdirSync(segmentDir);
  const files: { path: string; seqno: number }[] = [];
  let prevHash: string | null = null;
  for (let n = 0; n < documents / SEGMENT_DOCUMENTS; n++) {
    const { revisions, indexUpdates, receipts, meta } = writes.batch();
    const seqno = meta.appliedSeqno!;
    const ts = meta.frontierTs!;
    const segment = encodeSegment(
      { deploymentId: "bench", shard: 0, seqno, epoch: 1, kind: "data", count: revisions.length, minTs: ts, maxTs: ts, prevHash, writer: "bench" },
      { revisions, indexUpdates, receipts },
    );
    prevHash = segment.hash;
    const path = join(segmentDir, `${seqno}.seg`);
    writeFileSync(path, segment.bytes);
    files.push({ path, seqno });
  }
  sampler.sample();
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  for (const [at, { path, seqno }] of files.entries()) {
    const segment = decodeSegment(readFileSync(path), { deploymentId: "bench", shard: 0, seqno });
    await store.room();
    store.apply({ ...segment.records, meta: { appliedSeqno: seqno, epoch: 1, lastHash: segment.hash, frontierTs: segment.header.maxTs } });
    // A real tailer awaits its GETs between segments; let the fold worker's answers in.
    await new Promise((resolve) => setImmediate(resolve));
    if (at % 100 === 99) progress(`  catch-up: ${(at + 1) * SEGMENT_DOCUMENTS} of ${documents} documents, ${perSecond((at + 1) * SEGMENT_DOCUMENTS, performance.now() - started)} docs/s so far`);
  }
  await store.flush();
  const elapsedMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  sampler.sample();
  rmSync(segmentDir, { recursive: true, force: true });
  return { documentsPerSecond: perSecond(documents, elapsedMs), cores: coresOver(cpu, elapsedMs) };
}

/** The same rows appended to index-less tables, generated outside the clock: the cost of writing the bytes at all. */
function appendOnlyFloor(path: string, writes: IncrementalWrites, documents: number): number {
  const db = new Database(path);
  for (const pragma of CONNECTION_PRAGMAS) db.pragma(pragma);
  db.exec(`CREATE TABLE documents (table_number INTEGER, id TEXT, ts INTEGER, value TEXT, prev_ts INTEGER);
    CREATE TABLE index_entries (index_id INTEGER, key BLOB, ts INTEGER, doc_id TEXT);`);
  const insertDocument = db.prepare("INSERT INTO documents VALUES (?, ?, ?, ?, ?)");
  const insertEntry = db.prepare("INSERT INTO index_entries VALUES (?, ?, ?, ?)");
  const insertRound = db.transaction((round: readonly ApplyBatch[]) => {
    for (const { revisions, indexUpdates } of round) {
      for (const row of revisions) insertDocument.run(row.tableNumber, row.id, row.ts, row.value, row.prevTs);
      for (const row of indexUpdates) insertEntry.run(row.indexId, row.key, row.ts, row.docId);
    }
  });
  let elapsedMs = 0;
  for (let applied = 0; applied < documents; ) {
    const round = Array.from({ length: Math.min(ROUND_DOCUMENTS, documents - applied) / SEGMENT_DOCUMENTS }, () => writes.batch());
    const started = performance.now();
    insertRound(round);
    elapsedMs += performance.now() - started;
    applied += round.length * SEGMENT_DOCUMENTS;
  }
  db.close();
  return perSecond(documents, elapsedMs);
}

function timeReads(store: LocalStore, users: PreloadedUsers, random: SeededRandom): { get: Percentiles; scan: Percentiles } {
  const ts = store.meta().frontierTs;
  const gets: bigint[] = [];
  for (let sample = 0; sample < GET_SAMPLES; sample++) {
    const id = users.id(randomInt(random, users.count));
    const started = process.hrtime.bigint();
    const found = store.get(id, ts);
    gets.push(process.hrtime.bigint() - started);
    if (found === null) throw new Error(`user ${id} missing`);
  }
  const scans: bigint[] = [];
  for (let sample = 0; sample < SCAN_SAMPLES; sample++) {
    // Preloaded scores are ranks 0..N-1 (new ones go up to 1e9): start where 100 rows follow.
    const start = documentIndexKey([randomInt(random, users.count - 1_000)], 0, users.id(0));
    const started = process.hrtime.bigint();
    const rows = store.indexScan(BY_SCORE, { start, end: null }, ts, "asc", SCAN_ROWS);
    scans.push(process.hrtime.bigint() - started);
    if (rows.length !== SCAN_ROWS) throw new Error(`scan returned ${rows.length} rows`);
  }
  return { get: percentiles(gets), scan: percentiles(scans) };
}

interface SizeFigures {
  readonly storeDocuments: number;
  readonly bulkLoadDocumentsPerSecond: number;
  readonly applyDocuments: number;
  readonly sustainedApplyDocumentsPerSecond: number;
  readonly sustainedApplyCores: number;
  readonly catchUpDocumentsPerSecond: number;
  /** CPU of the whole process (main thread, fold and checkpoint workers, V8's helpers) over the phase, in cores. */
  readonly catchUpCores: number;
  readonly appendOnlyFloorDocumentsPerSecond: number;
  readonly applyToFloorRatio: number;
  readonly folded: { readonly get: Percentiles; readonly scan100: Percentiles };
  readonly withOverlay: { readonly unfoldedRows: number; readonly get: Percentiles; readonly scan100: Percentiles };
  /** Sampled every 25 ms (RssSampler). */
  readonly peakRssMb: number;
  readonly peakRssMbByPhase: Record<string, number>;
  /** The kernel's high-water mark of this process's RSS over this size (VmHWM, reset as the size starts): no peak missed between samples. */
  readonly vmHwmBytes: number | null;
  readonly liveHeapAfterApplyMb: number;
  readonly largestWalMb: number;
  readonly largestWalMbByPhase: Record<string, number>;
}

async function measureSize(dir: string, size: number, options: Options): Promise<SizeFigures> {
  const path = join(dir, `store-${size}.sqlite`);
  if (!resetPeakRss()) progress("VmHWM could not be reset (/proc/self/clear_refs): its figure runs from the process's start");
  const sampler = new RssSampler(`${path}-wal`);
  const users = new PreloadedUsers(size);
  const store = LocalStore.open({ path, shard: 0, deploymentId: "bench" });
  try {
    progress(`${size} documents: bulk load…`);
    const bulkLoadDocumentsPerSecond = await bulkLoad(store, users, sampler);
    sampler.endPhase("bulkLoad");
    progress(`${size} documents: sustained apply of ${options.applyDocuments}…`);
    const writes = new IncrementalWrites(users, new SeededRandom(size), SEGMENT_DOCUMENTS, UPDATE_FRACTION);
    const sustained = await sustainedApply(store, writes, options.applyDocuments, sampler);
    sampler.endPhase("sustainedApply");
    // What the heap really holds (the peak RSS above includes garbage V8 had not collected yet).
    (globalThis as { gc?: () => void }).gc?.();
    const liveHeapAfterApplyMb = Math.round(process.memoryUsage().heapUsed / 2 ** 20);
    progress(`${size} documents: catch-up from ${options.applyDocuments / SEGMENT_DOCUMENTS} segment files…`);
    const catchUp = await catchUpFromSegments(
      store,
      new IncrementalWrites(users, new SeededRandom(size + 2), SEGMENT_DOCUMENTS, UPDATE_FRACTION, writes.position()),
      options.applyDocuments,
      dir,
      sampler,
    );
    sampler.endPhase("catchUp");
    progress(`${size} documents: append-only floor…`);
    const appendOnlyFloorDocumentsPerSecond = appendOnlyFloor(
      join(dir, `floor-${size}.sqlite`),
      new IncrementalWrites(users, new SeededRandom(size), SEGMENT_DOCUMENTS, UPDATE_FRACTION),
      options.applyDocuments,
    );
    progress(`${size} documents: reads…`);
    const random = new SeededRandom(7);
    const folded = timeReads(store, users, random);
    // The next writes stay (mostly) in the overlay while the reads run.
    const more = new IncrementalWrites(users, new SeededRandom(size + 1), SEGMENT_DOCUMENTS, 0);
    for (let batch = 0; batch < OVERLAY_READ_DOCUMENTS / SEGMENT_DOCUMENTS; batch++) {
      const next = more.batch();
      store.apply({ ...next, meta: { ...next.meta, appliedSeqno: store.meta().appliedSeqno + 1, frontierTs: store.meta().frontierTs + 1 } });
    }
    const unfoldedRows = store.unfoldedRows;
    const withOverlay = timeReads(store, users, random);
    sampler.endPhase("reads");
    return {
      storeDocuments: size,
      bulkLoadDocumentsPerSecond,
      applyDocuments: options.applyDocuments,
      sustainedApplyDocumentsPerSecond: sustained.documentsPerSecond,
      sustainedApplyCores: sustained.cores,
      catchUpDocumentsPerSecond: catchUp.documentsPerSecond,
      catchUpCores: catchUp.cores,
      appendOnlyFloorDocumentsPerSecond,
      applyToFloorRatio: Math.round((sustained.documentsPerSecond / appendOnlyFloorDocumentsPerSecond) * 100) / 100,
      folded: { get: folded.get, scan100: folded.scan },
      withOverlay: { unfoldedRows, get: withOverlay.get, scan100: withOverlay.scan },
      peakRssMb: Math.round(sampler.peakBytes / 2 ** 20),
      peakRssMbByPhase: sampler.phases,
      vmHwmBytes: peakRssBytes(),
      liveHeapAfterApplyMb,
      largestWalMb: Math.round(sampler.peakWalBytes / 2 ** 20),
      largestWalMbByPhase: sampler.walPhases,
    };
  } finally {
    sampler.stop();
    store.close();
  }
}

/** The figures of every size side by side, one row a measure, every column left-aligned. */
function tableOf(figures: readonly SizeFigures[]): string {
  const header = ["measure", ...figures.map((figure) => `${figure.storeDocuments.toLocaleString("en")} docs`), "target"];
  const rows: string[][] = [];
  const add = (label: string, cell: (figure: SizeFigures) => string, target: string) => rows.push([label, ...figures.map(cell), target]);
  add("bulk load (restore), docs/s", (f) => String(f.bulkLoadDocumentsPerSecond), ">= 100000");
  add("sustained apply, docs/s", (f) => String(f.sustainedApplyDocumentsPerSecond), ">= 50000");
  add("catch-up from segment files (read, decode, apply), docs/s", (f) => String(f.catchUpDocumentsPerSecond), ">= 50000");
  add("  CPU busy during sustained apply / catch-up, cores", (f) => `${f.sustainedApplyCores} / ${f.catchUpCores}`, "");
  add("append-only floor, docs/s", (f) => String(f.appendOnlyFloorDocumentsPerSecond), "");
  add("apply / floor", (f) => String(f.applyToFloorRatio), ">= 0.25");
  add("get p50 / p99 µs (folded)", (f) => `${f.folded.get.p50Us} / ${f.folded.get.p99Us}`, "p50 <= 20");
  add("100-row scan p50 / p99 µs (folded)", (f) => `${f.folded.scan100.p50Us} / ${f.folded.scan100.p99Us}`, "p50 <= 1000");
  add("get p50 / p99 µs (overlay)", (f) => `${f.withOverlay.get.p50Us} / ${f.withOverlay.get.p99Us}`, "p50 <= 20");
  add("100-row scan p50 / p99 µs (overlay)", (f) => `${f.withOverlay.scan100.p50Us} / ${f.withOverlay.scan100.p99Us}`, "p50 <= 1000");
  add("rows in the overlay during those reads", (f) => String(f.withOverlay.unfoldedRows), "");
  add("peak RSS, MiB", (f) => String(f.peakRssMb), "<= 500");
  add("  bulk load / apply / catch-up / reads", (f) => `${f.peakRssMbByPhase.bulkLoad} / ${f.peakRssMbByPhase.sustainedApply} / ${f.peakRssMbByPhase.catchUp} / ${f.peakRssMbByPhase.reads}`, "");
  add("peak RSS (kernel VmHWM), MiB", (f) => (f.vmHwmBytes === null ? "-" : String(Math.round(f.vmHwmBytes / 2 ** 20))), "<= 500");
  add("live JS heap after apply (after a GC), MiB", (f) => String(f.liveHeapAfterApplyMb), "");
  add("largest WAL file, MiB", (f) => String(f.largestWalMb), "");
  add("  bulk load / apply / catch-up / reads", (f) => `${f.largestWalMbByPhase.bulkLoad} / ${f.largestWalMbByPhase.sustainedApply} / ${f.largestWalMbByPhase.catchUp} / ${f.largestWalMbByPhase.reads}`, "");
  return `${columns(header, rows, { leftAligned: header.length }).block.join("\n")}\n`;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const figures: SizeFigures[] = [];
  for (const size of options.sizes) {
    const dir = mkdtempSync(join(tmpdir(), "cairn-bench-local-"));
    try {
      figures.push(await measureSize(dir, size, options));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const title = `store: N users of ~190-byte JSON with 2 index entries each; apply: segments of ${SEGMENT_DOCUMENTS} documents, ${UPDATE_FRACTION * 100}% updates`;
  printReport(`${title}\n${tableOf(figures)}`, { benchmark: "local", segmentDocuments: SEGMENT_DOCUMENTS, updateFraction: UPDATE_FRACTION, sizes: figures });
}

await main();
