import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { CairnError } from "../../src/base/errors.js";
import type { Random } from "../../src/base/random.js";
import type { ObjectStore } from "../../src/objectstore/index.js";
import { SHARD_ENGINE_DEFAULTS } from "../../src/shard/engineOptions.js";
import { round } from "../kit/LatencySummary.js";
import { readShardState, type ShardBucketState } from "./bucketState.js";
import { DocumentLoad, type DocumentLoadFigures } from "./DocumentLoad.js";
import { type NodePair, shardHealth } from "./NodePair.js";
import { byRequestClass, difference, parseStoreCalls, type RequestClass } from "./storeCalls.js";

export interface CatchUpOptions {
  readonly pauseSeconds: number;
  readonly loadWriters: number;
  readonly documentBytes: number;
  readonly random: Random;
  readonly progress: (message: string) => void;
}

export interface CatchUpFigures {
  readonly pauseSeconds: number;
  /** The replica's position when it was stopped, and its watermark in the bucket then. */
  readonly pausedAtSeqno: number;
  readonly watermarkSeqno: number;
  readonly watermarkAgeMs: number;
  /** The writer's load during the pause. */
  readonly load: DocumentLoadFigures;
  /** The writer's last seqno when the load stopped: what the replica had to reach. */
  readonly targetSeqno: number;
  readonly segments: number;
  readonly documents: number;
  readonly documentsPerSegment: number;
  /** SIGCONT → the replica's first /api/health answer (it answers between catch-up rounds). */
  readonly firstAnswerMs: number;
  /**
   * SIGCONT → its /api/health first shows a seqno past pausedAtSeqno. A catch-up round
   * (up to 1,024 segments) is applied at once after its manifest read, so this is the end
   * of the first round, not the first GET.
   */
  readonly firstProgressMs: number;
  /** SIGCONT → its /api/health shows targetSeqno. */
  readonly catchUpMs: number;
  readonly segmentsPerSecond: number;
  readonly documentsPerSecond: number;
  /** Each change of the replica's appliedSeqno as /api/health showed it: ms after SIGCONT. */
  readonly progress: readonly { readonly atMs: number; readonly appliedSeqno: number }[];
  /** The replica's store calls from just before the pause to caught up, by request class. */
  readonly replicaRequests: Record<RequestClass, number>;
  readonly replicaGetsPerSegment: number;
  /** The bucket's shard 0 when the load stopped (GC must not have passed pausedAtSeqno + 1). */
  readonly bucketAtResume: ShardBucketState;
  /** Segments between the replica's position and the newest snapshot at resume (restoreLagSegments: a restore instead of a replay from that many). */
  readonly snapshotLeadSegments: number | null;
  readonly restoreLagSegments: number;
  /** What the nodes printed meanwhile: the writer's snapshots and GC passes, the replica's restores. */
  readonly writerSnapshots: number;
  readonly writerGcLines: readonly string[];
  readonly replicaRestoreLines: readonly string[];
  /** A restore happened: a "restoring snapshot" line, or far fewer GETs than segments. */
  readonly restored: boolean;
  readonly replicaLastError: string | null;
}

/** How often the replica's health is read while it catches up. */
const CATCH_UP_POLL_MS = 50;
/** Bound on the catch-up itself. */
const CATCH_UP_MS_MAX = 600_000;
/** Progress lines during the pause this often. */
const PROGRESS_EVERY_MS = 30_000;

/**
 * Phase 3: the replica is SIGSTOPped (its sockets stay open, its watermark stays in the
 * bucket) while closed-loop writers insert documents on the writer for `pauseSeconds`;
 * the load then stops, the replica gets SIGCONT, and its /api/health is read every
 * CATCH_UP_POLL_MS until it shows the writer's last seqno.
 *
 * Before the pause the replica's watermark must show its position: that is what keeps
 * the writer's GC (every 60 s, with a snapshot every 1,000 segments) from collecting the
 * segments the replica needs. Whether a restore happened anyway is reported.
 */
export async function measureCatchUp(pair: NodePair, bucket: ObjectStore, options: CatchUpOptions): Promise<CatchUpFigures> {
  const { progress } = options;
  await pair.awaitReplicaCaughtUp();
  const watermark = await pair.awaitReplicaWatermark(bucket);
  const load = await DocumentLoad.open(pair.writer.syncUrl, options.loadWriters, options.documentBytes, options.random);
  try {
    const writerMark = pair.writer.output.mark();
    const replicaMark = pair.replica.output.mark();
    const callsBefore = parseStoreCalls(await pair.replica.metrics());
    const pausedAtSeqno = (await shardHealth(pair.replica)).appliedSeqno;
    pair.replica.pause();
    progress(`   replica (pid ${pair.replica.pid}) stopped at seqno ${pausedAtSeqno}; ${options.loadWriters} writers inserting for ${options.pauseSeconds} s…`);
    load.start();
    await waitWithProgress(options.pauseSeconds * 1000, async () => {
      const seqno = (await shardHealth(pair.writer)).appliedSeqno;
      progress(`   ${load.mutations} documents in ${seqno - pausedAtSeqno} segments so far`);
    });
    const loadFigures = await load.stop();
    const targetSeqno = (await shardHealth(pair.writer)).appliedSeqno;
    const bucketAtResume = await readShardState(bucket);
    progress(`   load stopped: ${loadFigures.mutations} documents, writer at seqno ${targetSeqno}; resuming the replica…`);
    const timing = await resumeAndAwait(pair, pausedAtSeqno, targetSeqno);
    const calls = byRequestClass(difference(parseStoreCalls(await pair.replica.metrics()), callsBefore));
    const segments = targetSeqno - pausedAtSeqno;
    const restoreLines = pair.replica.output.since(replicaMark).filter((line) => /restor/i.test(line.text)).map((line) => line.text);
    const writerLines = pair.writer.output.since(writerMark);
    const seconds = timing.catchUpMs / 1000;
    return {
      pauseSeconds: options.pauseSeconds,
      pausedAtSeqno,
      watermarkSeqno: watermark.appliedSeqno,
      watermarkAgeMs: Date.now() - watermark.updatedAt,
      load: loadFigures,
      targetSeqno,
      segments,
      documents: loadFigures.mutations,
      documentsPerSegment: round(loadFigures.mutations / Math.max(1, segments), 2),
      firstAnswerMs: round(timing.firstAnswerMs, 1),
      firstProgressMs: round(timing.firstProgressMs, 1),
      catchUpMs: round(timing.catchUpMs, 1),
      segmentsPerSecond: round(segments / seconds, 1),
      documentsPerSecond: round(loadFigures.mutations / seconds, 1),
      progress: timing.progress,
      replicaRequests: calls,
      replicaGetsPerSegment: round(calls.GET / Math.max(1, segments), 3),
      bucketAtResume,
      snapshotLeadSegments: bucketAtResume.snapshotSeqno === null ? null : bucketAtResume.snapshotSeqno - (pausedAtSeqno + 1),
      restoreLagSegments: SHARD_ENGINE_DEFAULTS.restoreLagSegments,
      writerSnapshots: writerLines.filter((line) => /snapshot at seqno/.test(line.text)).length,
      writerGcLines: writerLines.filter((line) => /gc:/.test(line.text)).map((line) => line.text),
      replicaRestoreLines: restoreLines,
      restored: restoreLines.length > 0 || calls.GET < segments / 2,
      replicaLastError: (await shardHealth(pair.replica)).lastError?.message ?? null,
    };
  } finally {
    pair.replica.resume();
    await load.close();
  }
}

interface ResumeTiming {
  readonly firstAnswerMs: number;
  readonly firstProgressMs: number;
  readonly catchUpMs: number;
  readonly progress: { readonly atMs: number; readonly appliedSeqno: number }[];
}

/** SIGCONT, then the replica's /api/health every CATCH_UP_POLL_MS until it shows `targetSeqno`. */
async function resumeAndAwait(pair: NodePair, pausedAtSeqno: number, targetSeqno: number): Promise<ResumeTiming> {
  const resumedMs = performance.now();
  pair.replica.resume();
  let firstAnswerMs: number | null = null;
  const progress: { atMs: number; appliedSeqno: number }[] = [];
  for (;;) {
    const shard = await shardHealth(pair.replica);
    const elapsedMs = performance.now() - resumedMs;
    firstAnswerMs ??= elapsedMs;
    if (shard.appliedSeqno !== (progress.at(-1)?.appliedSeqno ?? pausedAtSeqno)) progress.push({ atMs: round(elapsedMs, 1), appliedSeqno: shard.appliedSeqno });
    if (shard.appliedSeqno >= targetSeqno) return { firstAnswerMs, firstProgressMs: progress[0]?.atMs ?? elapsedMs, catchUpMs: elapsedMs, progress };
    if (elapsedMs > CATCH_UP_MS_MAX) throw new CairnError("TIMEOUT", `the replica reached seqno ${shard.appliedSeqno} of ${targetSeqno} in ${CATCH_UP_MS_MAX} ms`);
    await sleep(CATCH_UP_POLL_MS);
  }
}

async function waitWithProgress(totalMs: number, report: () => Promise<void>): Promise<void> {
  for (let waitedMs = 0; waitedMs < totalMs; waitedMs += PROGRESS_EVERY_MS) {
    await sleep(Math.min(PROGRESS_EVERY_MS, totalMs - waitedMs));
    if (waitedMs + PROGRESS_EVERY_MS < totalMs) await report();
  }
}
