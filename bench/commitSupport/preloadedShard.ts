import { stat } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { CairnError } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import type { SnapshotPointer } from "../../src/manifest/Manifest.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import type { EngineEvent } from "../../src/shard/ShardEngine.js";
import type { ShardEngineTuning } from "../../src/shard/engineOptions.js";
import { openBenchWriter, type BenchWriter } from "./BenchWriter.js";
import { round } from "../kit/LatencySummary.js";
import { preloadUnit } from "./openLoopMutations.js";
import type { RemoteEndpoint } from "../kit/RemoteEndpoint.js";
import { progressPrinter } from "../kit/progress.js";

const progress = progressPrinter("  ");

/**
 * The open-loop phase's shard, holding `documents` documents before anything is
 * measured, built the way phase 4 builds its large shard: with latency off, a set-up
 * writer (maintenance driver off) commits the documents in units of `unitDocuments`,
 * BUILD_UNITS_IN_FLIGHT at a time, each with its index entry, then snapshots. It then
 * relinquishes, and the measured writer opens the same local file with the engine's
 * default tuning and every driver running: a warm open (the file is at the log's tail
 * and the snapshot covers it), so the measured engine's SQLite file holds every document
 * and its first maintenance steps find nothing overdue.
 */
export interface PreloadFigures {
  readonly documents: number;
  readonly buildSeconds: number;
  readonly snapshotSeconds: number;
  readonly snapshotSeqno: number;
  readonly snapshotParts: number;
  readonly snapshotBytes: number;
  /** Seconds for the measured writer's open and acquire on the built file. */
  readonly reopenSeconds: number;
  /** The local SQLite file (with its WAL) when the measured writer opened it. */
  readonly localFileBytes: number;
}

export interface PreloadedShard {
  readonly writer: BenchWriter;
  /** Ids of the preloaded documents, in no particular order. */
  readonly ids: DocumentId[];
  readonly figures: PreloadFigures;
}

const PREFIX = "open-loop/";
const WRITER_NAME = "open-loop";
/** Build units in flight at once: enough to keep the flush loop busy while the next units are made. */
const BUILD_UNITS_IN_FLIGHT = 4;
/** A driver interval that never elapses during the set-up (setTimeout caps delays at 2^31-1 ms). */
const DRIVER_NEVER_MS = 24 * 60 * 60 * 1000;

export async function preloadShard(
  endpoint: RemoteEndpoint,
  directory: string,
  documents: number,
  unitDocuments: number,
  onEvent: (event: EngineEvent) => void,
  /** The measured writer's tuning beyond the defaults. */
  tuning: Partial<ShardEngineTuning> = {},
): Promise<PreloadedShard> {
  await endpoint.latencyOff();
  const builder = await openBenchWriter(endpoint.store(PREFIX), directory, WRITER_NAME, { maintenanceIntervalMs: DRIVER_NEVER_MS });
  let built: BuiltShard;
  try {
    built = await buildAndSnapshot(builder, documents, unitDocuments);
  } finally {
    await builder.close();
  }
  const { pointer } = built;
  progress(`snapshot at seqno ${pointer.seqno}: ${pointer.parts} parts, ${pointer.bytes} bytes; the measured writer opens the file…`);
  const localFileBytes = await fileBytes(builder.localPath);
  const reopenStartedMs = performance.now();
  const writer = await openBenchWriter(endpoint.store(PREFIX), directory, WRITER_NAME, tuning, onEvent);
  return {
    writer,
    ids: built.ids,
    figures: {
      documents,
      buildSeconds: built.buildSeconds,
      snapshotSeconds: built.snapshotSeconds,
      snapshotSeqno: pointer.seqno,
      snapshotParts: pointer.parts,
      snapshotBytes: pointer.bytes,
      reopenSeconds: round((performance.now() - reopenStartedMs) / 1000, 2),
      localFileBytes,
    },
  };
}

interface BuiltShard {
  readonly ids: DocumentId[];
  readonly pointer: SnapshotPointer;
  readonly buildSeconds: number;
  readonly snapshotSeconds: number;
}

async function buildAndSnapshot(builder: BenchWriter, documents: number, unitDocuments: number): Promise<BuiltShard> {
  const startedMs = performance.now();
  const ids = await commitDocuments(builder, documents, unitDocuments);
  const builtMs = performance.now();
  progress(`built in ${round((builtMs - startedMs) / 1000, 1)} s; snapshotting…`);
  const pointer = await builder.engine.snapshotNow();
  if (pointer === null) throw new CairnError("INTERNAL", "the set-up writer had nothing new to snapshot");
  return {
    ids,
    pointer,
    buildSeconds: round((builtMs - startedMs) / 1000, 2),
    snapshotSeconds: round((performance.now() - builtMs) / 1000, 2),
  };
}

async function commitDocuments(builder: BenchWriter, total: number, unitDocuments: number): Promise<DocumentId[]> {
  progress(`set-up writer commits ${total} documents with one index entry each, in units of ${unitDocuments} (latency off)…`);
  const random = new SeededRandom(31);
  const createdAt = Date.now();
  const ids: DocumentId[] = [];
  let nextN = 0;
  const lane = async () => {
    while (nextN < total) {
      const count = Math.min(unitDocuments, total - nextN);
      const planned = preloadUnit(random, nextN, count, createdAt, builder.engine.readTs);
      nextN += count;
      await builder.engine.commit(planned.unit);
      ids.push(...planned.ids);
    }
  };
  await Promise.all(Array.from({ length: BUILD_UNITS_IN_FLIGHT }, lane));
  return ids;
}

async function fileBytes(path: string): Promise<number> {
  let bytes = 0;
  for (const file of [path, `${path}-wal`]) {
    try {
      bytes += (await stat(file)).size;
    } catch {
      // No WAL once the last connection checkpointed and removed it.
    }
  }
  return bytes;
}
