/**
 * Child-process entry: opens one shard's engine on a local file, as a node starting up
 * would, and reports how long `ShardEngine.open` took (restoring the snapshot if the file
 * is empty or far behind, then replaying the log to its tail), how many GETs of which
 * kind it sent, and the process's peak RSS (sampled, and the kernel's VmHWM). A fresh
 * process, so that the RSS is the bootstrap's alone. Never acquires the lease: the
 * benchmark's writer keeps it.
 *
 *   node --import tsx bench/commitSupport/bootstrapProcess.ts '<BootstrapRequest JSON>'
 */
import { performance } from "node:perf_hooks";
import { systemClock } from "../../src/base/clock.js";
import { CairnError } from "../../src/base/errors.js";
import { systemRandom } from "../../src/base/random.js";
import { LocalStore } from "../../src/local/index.js";
import { HybridClock } from "../../src/shard/HybridClock.js";
import { ShardEngine, type EngineEvent } from "../../src/shard/ShardEngine.js";
import { RSS_SAMPLE_INTERVAL_MS, type BootstrapRequest, type BootstrapResult } from "./bootstrapProtocol.js";
import { CountingObjectStore } from "./CountingObjectStore.js";
import { peakRssBytes } from "../kit/peakRss.js";
import { storeAt } from "../kit/RemoteEndpoint.js";

const SHARD = 0;

const request = parseRequest(process.argv[2]);
const rssBaselineBytes = process.memoryUsage().rss;
let rssPeakSampledBytes = rssBaselineBytes;
const sampleRss = () => {
  rssPeakSampledBytes = Math.max(rssPeakSampledBytes, process.memoryUsage().rss);
};
const sampler = setInterval(sampleRss, RSS_SAMPLE_INTERVAL_MS);

const store = new CountingObjectStore(storeAt(request.address, request.prefix), SHARD);
const local = LocalStore.open({ path: request.localPath, shard: SHARD, deploymentId: request.deploymentId });
const appliedSeqnoBefore = local.meta().appliedSeqno;
const documentsBefore = local.storedRows().documents;
const observed = {
  restoredDocuments: 0,
  restoredFromSeqno: null as number | null,
  firstReplayMs: null as number | null,
  segmentsReplayed: 0,
};
// The last restore event comes before the local swap-in (index build, rename), so the
// restore is timed up to the first replayed segment instead.
const onEvent = (event: EngineEvent) => {
  if (event.type !== "progress") return;
  const progress = event.progress;
  if (progress.phase === "restore") {
    observed.restoredDocuments = progress.documents;
    observed.restoredFromSeqno = progress.seqno;
  } else if (progress.phase === "replay") {
    observed.firstReplayMs ??= performance.now();
    observed.segmentsReplayed++;
  }
};

const startedMs = performance.now();
const engine = await ShardEngine.open({
  store,
  deploymentId: request.deploymentId,
  shard: SHARD,
  local,
  nodeId: `bench-bootstrap-${process.pid}`,
  clock: systemClock,
  random: systemRandom,
  hybridClock: new HybridClock(systemClock),
  onEvent,
});
const openedMs = performance.now();
sampleRss();
clearInterval(sampler);

const result: BootstrapResult = {
  type: "result",
  openSeconds: (openedMs - startedMs) / 1000,
  restoreSeconds: observed.restoredFromSeqno === null ? 0 : ((observed.firstReplayMs ?? openedMs) - startedMs) / 1000,
  restoredDocuments: observed.restoredDocuments,
  restoredFromSeqno: observed.restoredFromSeqno,
  segmentsReplayed: observed.segmentsReplayed,
  appliedSeqnoBefore,
  appliedSeqnoAfter: local.meta().appliedSeqno,
  documentsBefore,
  documentsAfter: local.storedRows().documents,
  rssBaselineBytes,
  rssPeakSampledBytes,
  rssPeakKernelBytes: peakRssBytes(),
  gets: store.getCounts(),
};
await engine.close();
local.close();
await store.close();
process.stdout.write(`${JSON.stringify(result)}\n`);

function parseRequest(text: string | undefined): BootstrapRequest {
  try {
    const parsed = JSON.parse(text ?? "") as BootstrapRequest;
    if (typeof parsed.localPath !== "string" || typeof parsed.deploymentId !== "string" || typeof parsed.prefix !== "string") {
      throw new Error("missing localPath, deploymentId or prefix");
    }
    return parsed;
  } catch (error) {
    throw new CairnError("INVALID_ARGUMENT", `bootstrapProcess takes one BootstrapRequest JSON argument: ${String(error)}`);
  }
}
