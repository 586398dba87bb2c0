/**
 * Child-process entry of phase 5's set-up (preloadedShard.ts): a set-up writer commits
 * the documents and snapshots them, then relinquishes and exits. A process of its own, so
 * that the measuring process's peak RSS is the measured writer's, not what building a
 * million documents left behind in V8's heap.
 *
 *   node --import tsx bench/commitSupport/preloadProcess.ts '<PreloadRequest JSON>'
 */
import { writeFile } from "node:fs/promises";
import { performance } from "node:perf_hooks";
import { CairnError } from "../../src/base/errors.js";
import { SeededRandom } from "../../src/base/random.js";
import type { DocumentId } from "../../src/model/DocumentId.js";
import { round } from "../kit/LatencySummary.js";
import { progressPrinter } from "../kit/progress.js";
import { storeAt } from "../kit/RemoteEndpoint.js";
import { openBenchWriter, type BenchWriter } from "./BenchWriter.js";
import { preloadUnit } from "./openLoopMutations.js";
import type { PreloadRequest, PreloadResult } from "./preloadProtocol.js";

const progress = progressPrinter("  ");
/** Build units in flight at once: enough to keep the flush loop busy while the next units are made. */
const BUILD_UNITS_IN_FLIGHT = 4;
/** A driver interval that never elapses during the set-up (setTimeout caps delays at 2^31-1 ms). */
const DRIVER_NEVER_MS = 24 * 60 * 60 * 1000;

const request = parseRequest(process.argv[2]);
const builder = await openBenchWriter(storeAt(request.address, request.prefix), request.directory, request.writerName, { maintenanceIntervalMs: DRIVER_NEVER_MS });
let result: PreloadResult;
try {
  const startedMs = performance.now();
  const ids = await commitDocuments(builder, request.documents, request.unitDocuments);
  const builtMs = performance.now();
  progress(`built in ${round((builtMs - startedMs) / 1000, 1)} s; snapshotting…`);
  const pointer = await builder.engine.snapshotNow();
  if (pointer === null) throw new CairnError("INTERNAL", "the set-up writer had nothing new to snapshot");
  await writeFile(request.idsPath, ids.join("\n"));
  result = {
    type: "result",
    localPath: builder.localPath,
    snapshot: { seqno: pointer.seqno, parts: pointer.parts, bytes: pointer.bytes },
    buildSeconds: round((builtMs - startedMs) / 1000, 2),
    snapshotSeconds: round((performance.now() - builtMs) / 1000, 2),
  };
} finally {
  await builder.close();
}
process.stdout.write(`${JSON.stringify(result)}\n`);

async function commitDocuments(writer: BenchWriter, total: number, unitDocuments: number): Promise<DocumentId[]> {
  progress(`set-up writer commits ${total} documents with one index entry each, in units of ${unitDocuments} (latency off, in a child process)…`);
  const random = new SeededRandom(31);
  const createdAt = Date.now();
  const ids: DocumentId[] = [];
  let nextN = 0;
  const lane = async () => {
    while (nextN < total) {
      const count = Math.min(unitDocuments, total - nextN);
      const planned = preloadUnit(random, nextN, count, createdAt, writer.engine.readTs);
      nextN += count;
      await writer.engine.commit(planned.unit);
      ids.push(...planned.ids);
    }
  };
  await Promise.all(Array.from({ length: BUILD_UNITS_IN_FLIGHT }, lane));
  return ids;
}

function parseRequest(text: string | undefined): PreloadRequest {
  try {
    const parsed = JSON.parse(text ?? "") as PreloadRequest;
    if (typeof parsed.directory !== "string" || typeof parsed.idsPath !== "string" || !Number.isSafeInteger(parsed.documents)) {
      throw new Error("missing directory, idsPath or documents");
    }
    return parsed;
  } catch (error) {
    throw new CairnError("INVALID_ARGUMENT", `preloadProcess takes one PreloadRequest JSON argument: ${String(error)}`);
  }
}
