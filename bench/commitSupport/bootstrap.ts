import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { CairnError } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import type { ShardEngine } from "../../src/shard/ShardEngine.js";
import type { BootstrapRequest, BootstrapResult } from "./bootstrapProtocol.js";
import { openBenchWriter } from "./BenchWriter.js";
import { round } from "../kit/LatencySummary.js";
import type { RemoteEndpoint } from "../kit/RemoteEndpoint.js";
import { TsxChild } from "../kit/TsxChild.js";
import { smallDocumentsUnit, type SmallDocumentsOptions } from "./smallDocuments.js";
import type { CommitBenchOptions } from "./options.js";
import { progressPrinter } from "../kit/progress.js";

const progress = progressPrinter("  ");

/**
 * Phase 4: bootstrap of a large shard. With latency off (set-up only), a writer commits
 * `documents` small documents in large units, snapshots, then commits `tailSegments`
 * small segments. With latency back on, a fresh child process opens the shard on an
 * empty local file (restore + replay). Then the writer commits `warmSegments` more
 * segments (latency off again) and another child re-opens the file the first one left
 * (warm restart: it must read only the new segments).
 *
 * The writer's maintenance driver is off, so no automatic snapshot or GC moves the log
 * under the measurement; its heartbeat runs (a manifest PUT every 3 s, never a GET).
 */
export type BootstrapOptions = Pick<
  CommitBenchOptions,
  "documents" | "buildUnitDocuments" | "tailSegments" | "tailSegmentDocuments" | "warmSegments" | "childCpuProfileDirectory"
>;

export interface BuildFigures {
  readonly documents: number;
  readonly seconds: number;
  readonly snapshotSeconds: number;
  readonly snapshotSeqno: number;
  readonly snapshotParts: number;
  readonly snapshotBytes: number;
  readonly tailSegments: number;
  readonly tailDocuments: number;
  readonly tailSeconds: number;
}

export type RunFigures = BootstrapResult & {
  /** Documents materialized per second of open (restored plus replayed). */
  readonly documentsPerSecond: number;
  /** GetObject requests the endpoint counted while the child ran (the writer sends none then). */
  readonly endpointGets: number;
  readonly endpointPuts: number;
};

export interface BootstrapFigures {
  readonly build: BuildFigures;
  readonly cold: RunFigures;
  readonly warm: RunFigures & { readonly newSegments: number };
}

/** Build units in flight at once: enough to keep the flush loop busy while the next units are made. */
const BUILD_UNITS_IN_FLIGHT = 4;
/** A driver interval that never elapses during a run (setTimeout caps delays at 2^31-1 ms). */
const DRIVER_NEVER_MS = 24 * 60 * 60 * 1000;
const PREFIX = "bootstrap/";

export async function measureBootstrap(endpoint: RemoteEndpoint, directory: string, options: BootstrapOptions): Promise<BootstrapFigures> {
  await endpoint.latencyOff();
  const tuning = { maintenanceIntervalMs: DRIVER_NEVER_MS };
  const writer = await openBenchWriter(endpoint.store(PREFIX), directory, "bootstrap-writer", tuning);
  try {
    const appender = new SegmentWriter(writer.engine, { random: new SeededRandom(21), label: "bootstrap", withIndex: false });
    const build = await buildSnapshotAndTail(appender, options);
    const request: BootstrapRequest = {
      address: endpoint.address,
      prefix: PREFIX,
      deploymentId: writer.deploymentId,
      localPath: join(directory, "bootstrap-reader.sqlite"),
    };
    const profileDirectory = options.childCpuProfileDirectory;
    const nodeFlags = profileDirectory === null ? [] : ["--cpu-prof", "--cpu-prof-dir", profileDirectory];
    const cold = await timedBootstrap(endpoint, request, "cold bootstrap", nodeFlags);
    await endpoint.latencyOff();
    progress(`writer commits ${options.warmSegments} more segments…`);
    await appender.commitSegments(options.warmSegments, options.tailSegmentDocuments);
    const warm = await timedBootstrap(endpoint, request, "warm restart", nodeFlags);
    return { build, cold, warm: { ...warm, newSegments: options.warmSegments } };
  } finally {
    await writer.close();
  }
}

async function buildSnapshotAndTail(appender: SegmentWriter, options: BootstrapOptions): Promise<BuildFigures> {
  progress(`writer commits ${options.documents} documents in units of ${options.buildUnitDocuments} (latency off)…`);
  const startedMs = performance.now();
  await appender.commitDocuments(options.documents, options.buildUnitDocuments);
  const builtMs = performance.now();
  progress(`built in ${round((builtMs - startedMs) / 1000, 1)} s; snapshotting…`);
  const pointer = await appender.engine.snapshotNow();
  if (pointer === null) throw new CairnError("INTERNAL", "the writer had nothing new to snapshot");
  const snapshottedMs = performance.now();
  progress(`snapshot at seqno ${pointer.seqno}: ${pointer.parts} parts, ${pointer.bytes} bytes; ${options.tailSegments} tail segments…`);
  await appender.commitSegments(options.tailSegments, options.tailSegmentDocuments);
  return {
    documents: options.documents,
    seconds: round((builtMs - startedMs) / 1000, 2),
    snapshotSeconds: round((snapshottedMs - builtMs) / 1000, 2),
    snapshotSeqno: pointer.seqno,
    snapshotParts: pointer.parts,
    snapshotBytes: pointer.bytes,
    tailSegments: options.tailSegments,
    tailDocuments: options.tailSegments * options.tailSegmentDocuments,
    tailSeconds: round((performance.now() - snapshottedMs) / 1000, 2),
  };
}

/** The writer side of the set-up: numbers its documents on from one call to the next. */
class SegmentWriter {
  private nextN = 0;

  constructor(
    readonly engine: ShardEngine,
    private readonly documents: SmallDocumentsOptions,
  ) {}

  /** Commits `total` documents in units of `unitDocuments`, BUILD_UNITS_IN_FLIGHT units at a time. */
  async commitDocuments(total: number, unitDocuments: number): Promise<void> {
    const end = this.nextN + total;
    const lane = async () => {
      while (this.nextN < end) {
        const count = Math.min(unitDocuments, end - this.nextN);
        await this.commit(count);
      }
    };
    await Promise.all(Array.from({ length: BUILD_UNITS_IN_FLIGHT }, lane));
  }

  /** Commits `segments` units one after another, so that each becomes a segment of its own. */
  async commitSegments(segments: number, documentsPerSegment: number): Promise<void> {
    for (let segment = 0; segment < segments; segment++) await this.commit(documentsPerSegment);
  }

  private commit(count: number): Promise<unknown> {
    const firstN = this.nextN;
    this.nextN += count;
    return this.engine.commit(smallDocumentsUnit(this.documents, this.engine.readTs, count, firstN));
  }
}

/** Runs one bootstrap child with latency on and the endpoint's counters covering it alone. */
async function timedBootstrap(
  endpoint: RemoteEndpoint,
  request: BootstrapRequest,
  name: string,
  nodeFlags: readonly string[],
): Promise<RunFigures> {
  await endpoint.latencyOn();
  await endpoint.resetCounters();
  progress(`${name}: a fresh process opens the shard (latency on)${nodeFlags.length > 0 ? `, node ${nodeFlags.join(" ")}` : ""}…`);
  const child = TsxChild.start(name, ["bench/commitSupport/bootstrapProcess.ts", JSON.stringify(request)], { stdout: "messages", nodeFlags });
  let result: BootstrapResult;
  try {
    result = (await child.nextMessage()) as BootstrapResult;
    await child.finished();
  } finally {
    await child.kill();
  }
  const counters = await endpoint.counters();
  return {
    ...result,
    documentsPerSecond: Math.round((result.documentsAfter - result.documentsBefore) / result.openSeconds),
    endpointGets: counters.GetObject.requests,
    endpointPuts: counters.PutObject.requests,
  };
}
