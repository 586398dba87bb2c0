import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import type { DocumentId } from "../../src/model/DocumentId.js";
import type { EngineEvent } from "../../src/shard/ShardEngine.js";
import type { ShardEngineTuning } from "../../src/shard/engineOptions.js";
import { openBenchWriter, type BenchWriter } from "./BenchWriter.js";
import { round } from "../kit/LatencySummary.js";
import type { RemoteEndpoint } from "../kit/RemoteEndpoint.js";
import { progressPrinter } from "../kit/progress.js";
import { TsxChild } from "../kit/TsxChild.js";
import type { PreloadRequest, PreloadResult } from "./preloadProtocol.js";

const progress = progressPrinter("  ");

/**
 * The open-loop phase's shard, holding `documents` documents before anything is
 * measured, built the way phase 4 builds its large shard: with latency off, a set-up
 * writer (maintenance driver off) in a child process (preloadProcess.ts) commits the
 * documents in units of `unitDocuments`, a few at a time, each with its index entry, then
 * snapshots, relinquishes and exits; the measured writer, in this process, opens the same local file with the engine's
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
  const idsPath = join(directory, `${WRITER_NAME}.ids`);
  const request: PreloadRequest = { address: endpoint.address, prefix: PREFIX, directory, writerName: WRITER_NAME, documents, unitDocuments, idsPath };
  const child = TsxChild.start("set-up writer", ["bench/commitSupport/preloadProcess.ts", JSON.stringify(request)], { stdout: "messages" });
  let built: PreloadResult;
  try {
    built = (await child.nextMessage()) as PreloadResult;
    await child.finished();
  } finally {
    await child.kill();
  }
  const ids = (await readFile(idsPath, "utf8")).split("\n") as DocumentId[];
  const { snapshot } = built;
  progress(`snapshot at seqno ${snapshot.seqno}: ${snapshot.parts} parts, ${snapshot.bytes} bytes; the measured writer opens the file…`);
  const localFileBytes = await fileBytes(built.localPath);
  const reopenStartedMs = performance.now();
  const writer = await openBenchWriter(endpoint.store(PREFIX), directory, WRITER_NAME, tuning, onEvent);
  return {
    writer,
    ids,
    figures: {
      documents,
      buildSeconds: built.buildSeconds,
      snapshotSeconds: built.snapshotSeconds,
      snapshotSeqno: snapshot.seqno,
      snapshotParts: snapshot.parts,
      snapshotBytes: snapshot.bytes,
      reopenSeconds: round((performance.now() - reopenStartedMs) / 1000, 2),
      localFileBytes,
    },
  };
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
