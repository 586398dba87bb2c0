import { errorKindOf, prefetchInOrder, systemRandom } from "../base/index.js";
import { bucketLayout, parseSegmentSeqno, type Manifest, type SnapshotPointer, ShardManifest } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { LogValidator, LOG_START, type LogPosition, readSegment } from "../segments/index.js";
import { readSnapshotParts } from "../snapshots/index.js";

/**
 * Reads one shard's manifest, log and snapshot and checks everything a reader relies on
 * (`cairn verify`), writing nothing:
 * - the manifest parses and belongs to the deployment and shard;
 * - the log is contiguous from logStart (a segment after a gap is never read by anyone);
 * - every segment from logStart passes its checksum and header checks, chains to the
 *   segment before it, has strictly increasing timestamps and no epoch above the
 *   manifest's (the validity rule of DESIGN.md §4, as a reader applies it);
 * - the chain meets the snapshot: the segment at the snapshot's seqno has its hash, epoch
 *   and ts, or the log starts right after it;
 * - every recorded fence at or above logStart is a fence segment of that epoch;
 * - the snapshot's parts are all there, each passes its checks, their combined hash and
 *   counts are the pointer's;
 * - the tail hint is not beyond the log's end (that means lost segments).
 * Segments below logStart are counted as strays, not checked: GC's sweep removes them.
 */
export interface VerifyShardOptions {
  readonly store: ObjectStore;
  readonly deploymentId: string;
  readonly shard: number;
  /** GETs in flight at most. Default 16. */
  readonly fetchConcurrency?: number;
  readonly onProgress?: (progress: VerifyProgress) => void;
}

export interface VerifyProgress {
  readonly shard: number;
  readonly phase: "log" | "snapshot";
  readonly done: number;
  readonly total: number;
}

export interface ShardVerification {
  readonly shard: number;
  readonly epoch: number | null;
  readonly logStart: number | null;
  /** The first empty slot at or above logStart: where the next segment goes. */
  readonly tail: number | null;
  readonly segmentsChecked: number;
  /** Lower-epoch leftovers every reader skips. */
  readonly segmentsSkipped: number;
  readonly straysBelowLogStart: number;
  readonly snapshot: { readonly seqno: number; readonly parts: number; readonly documents: number } | null;
  /** Everything wrong, one sentence each; empty when the shard is sound. */
  readonly problems: readonly string[];
}

const VERIFY_FETCH_CONCURRENCY_DEFAULT = 16;

export async function verifyShard(options: VerifyShardOptions): Promise<ShardVerification> {
  const { store, shard } = options;
  const problems: string[] = [];
  let manifest: Manifest;
  try {
    manifest = await new ShardManifest(store, shard, options.deploymentId, systemRandom).refresh();
  } catch (error) {
    if (errorKindOf(error) === "Unavailable") throw error;
    problems.push(`the manifest cannot be used: ${messageOf(error)}`);
    return { shard, epoch: null, logStart: null, tail: null, segmentsChecked: 0, segmentsSkipped: 0, straysBelowLogStart: 0, snapshot: null, problems };
  }
  const listing = await listLog(store, manifest, problems);
  const log = await checkLog(options, manifest, listing.tail, problems);
  const snapshot = manifest.snapshot === null ? null : await checkSnapshot({ ...options, inheritedFrom: manifest.inheritedFrom }, manifest.snapshot, problems);
  if (manifest.snapshot !== null && manifest.snapshot.epoch > manifest.epoch) {
    problems.push(`the snapshot's epoch ${manifest.snapshot.epoch} is above the manifest's epoch ${manifest.epoch}`);
  }
  if (manifest.tailHint >= listing.tail) {
    problems.push(`the tail hint ${manifest.tailHint} is beyond the log's last segment ${listing.tail - 1}: segments were lost`);
  }
  return {
    shard,
    epoch: manifest.epoch,
    logStart: manifest.logStart,
    tail: listing.tail,
    segmentsChecked: log.checked,
    segmentsSkipped: log.skipped,
    straysBelowLogStart: listing.strays,
    snapshot,
    problems,
  };
}

/** One LIST of the log: where the contiguous log from logStart ends, strays, gaps. */
async function listLog(store: ObjectStore, manifest: Manifest, problems: string[]): Promise<{ tail: number; strays: number }> {
  const { shard, logStart } = manifest;
  let strays = 0;
  let tail = logStart;
  const beyondGap: number[] = [];
  for await (const entry of store.list(bucketLayout.logPrefix(shard))) {
    const seqno = parseSegmentSeqno(shard, entry.key);
    if (seqno === null) problems.push(`${entry.key} under the log is not a segment key`);
    else if (seqno < logStart) strays++;
    else if (seqno === tail && beyondGap.length === 0) tail++;
    else beyondGap.push(seqno);
  }
  if (beyondGap.length > 0) {
    problems.push(
      `${beyondGap.length} segment(s) lie beyond a gap at seqno ${tail} (first ${beyondGap[0]}): readers stop at the gap and never see them`,
    );
  }
  return { tail, strays };
}

/** Walks the log from logStart to `tail` as a reader would, collecting problems. */
async function checkLog(
  options: VerifyShardOptions,
  manifest: Manifest,
  tail: number,
  problems: string[],
): Promise<{ checked: number; skipped: number }> {
  const { store, shard, deploymentId } = options;
  const { logStart, snapshot } = manifest;
  const anchored = startPosition(manifest, problems);
  const fences = new Map(manifest.fences.map((fence) => [fence.seqno, fence.epoch]));
  const total = tail - logStart;
  let validator: LogValidator | null = anchored === null ? null : new LogValidator(shard, anchored);
  let checked = 0;
  let skipped = 0;
  const segments = prefetchInOrder(
    total,
    (index) => readSegment(store, { deploymentId, shard, seqno: logStart + index, inheritedFrom: manifest.inheritedFrom }),
    options.fetchConcurrency ?? VERIFY_FETCH_CONCURRENCY_DEFAULT,
  );
  try {
    for await (const segment of segments) {
      if (segment === null) {
        problems.push(`segment ${logStart + checked} disappeared while it was being verified`);
        break;
      }
      const { header } = segment;
      // Unanchored (the segments before logStart are gone): trust the first one's link.
      validator ??= new LogValidator(shard, { nextSeqno: header.seqno, highestEpoch: header.epoch, lastHash: header.prevHash, lastMaxTs: header.minTs - 1 });
      if (validator.accept(segment) === "skip") skipped++;
      checked++;
      if (header.epoch > manifest.epoch) problems.push(`segment ${header.seqno} has epoch ${header.epoch}, above the manifest's ${manifest.epoch}`);
      const fenceEpoch = fences.get(header.seqno);
      if (fenceEpoch !== undefined && (header.kind !== "fence" || header.epoch !== fenceEpoch)) {
        problems.push(`the manifest records epoch ${fenceEpoch}'s fence at ${header.seqno}, but that segment is a ${header.kind} of epoch ${header.epoch}`);
      }
      if (snapshot !== null && header.seqno === snapshot.seqno) checkMeetsSnapshot(validator.position, snapshot, problems);
      options.onProgress?.({ shard, phase: "log", done: checked, total });
    }
  } catch (error) {
    if (errorKindOf(error) !== "Corruption") throw error;
    problems.push(messageOf(error));
  }
  return { checked, skipped };
}

/** Where a reader of the log stands before logStart, or null when nothing anchors it. */
function startPosition(manifest: Manifest, problems: string[]): LogPosition | null {
  const { logStart, snapshot } = manifest;
  if (logStart === 0) return LOG_START;
  if (snapshot !== null && snapshot.seqno === logStart - 1) {
    return { nextSeqno: logStart, highestEpoch: snapshot.epoch, lastHash: snapshot.hash, lastMaxTs: snapshot.ts };
  }
  if (snapshot === null || snapshot.seqno < logStart - 1) {
    problems.push(`the log starts at ${logStart} but no snapshot covers the seqnos below it: a new reader cannot catch up`);
  }
  return null;
}

function checkMeetsSnapshot(position: LogPosition, snapshot: SnapshotPointer, problems: string[]): void {
  if (position.lastHash !== snapshot.hash || position.highestEpoch !== snapshot.epoch || position.lastMaxTs !== snapshot.ts) {
    problems.push(`the snapshot at ${snapshot.seqno} does not match the log there (hash, epoch or ts differ)`);
  }
}

async function checkSnapshot(
  options: VerifyShardOptions & { readonly inheritedFrom: readonly string[] },
  pointer: SnapshotPointer,
  problems: string[],
): Promise<{ seqno: number; parts: number; documents: number }> {
  const { shard } = options;
  let parts = 0;
  let documents = 0;
  try {
    for await (const part of readSnapshotParts({ ...options, pointer })) {
      parts++;
      documents += part.header.documents;
      options.onProgress?.({ shard, phase: "snapshot", done: parts, total: pointer.parts });
    }
    if (documents !== pointer.documents) {
      problems.push(`the snapshot at ${pointer.seqno} holds ${documents} documents, its pointer says ${pointer.documents}`);
    }
  } catch (error) {
    const kind = errorKindOf(error);
    if (kind !== "Corruption" && kind !== "Conflict") throw error;
    problems.push(`the snapshot at ${pointer.seqno}: ${messageOf(error)}`);
  }
  return { seqno: pointer.seqno, parts, documents };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
