import type { GetCounts } from "./CountingObjectStore.js";
import type { EndpointAddress } from "../kit/RemoteEndpoint.js";

/** What the benchmark asks a bootstrap child (argv[2], JSON) and what it answers (one stdout line). */
export interface BootstrapRequest {
  readonly address: EndpointAddress;
  readonly prefix: string;
  readonly deploymentId: string;
  /** An empty path (cold bootstrap) or the file a previous bootstrap left (warm restart). */
  readonly localPath: string;
}

export interface BootstrapResult {
  readonly type: "result";
  /** Wall time of `ShardEngine.open`: manifest, restore if needed, replay to the tail. */
  readonly openSeconds: number;
  /**
   * Part of it spent restoring the snapshot: from the start until the first tail segment
   * was applied, or the whole open if none followed (0 when no snapshot was restored).
   */
  readonly restoreSeconds: number;
  readonly restoredDocuments: number;
  readonly restoredFromSeqno: number | null;
  readonly segmentsReplayed: number;
  readonly appliedSeqnoBefore: number;
  readonly appliedSeqnoAfter: number;
  /** Document rows in the local file before and after open (counted outside the timing). */
  readonly documentsBefore: number;
  readonly documentsAfter: number;
  readonly rssBaselineBytes: number;
  /** Highest `process.memoryUsage().rss` sampled every RSS_SAMPLE_INTERVAL_MS while opening. */
  readonly rssPeakSampledBytes: number;
  /** The kernel's high-water mark of the process's RSS (VmHWM of /proc/self/status; null where /proc has none). */
  readonly rssPeakKernelBytes: number | null;
  readonly gets: GetCounts;
}

export const RSS_SAMPLE_INTERVAL_MS = 10;
