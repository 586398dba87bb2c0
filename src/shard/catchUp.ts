import { CairnError, hasErrorCode, CATCH_UP_ROUND_BYTES_MAX, CATCH_UP_ROUND_SEGMENTS_MAX } from "../base/index.js";
import type { LocalStore } from "../local/index.js";
import type { Manifest, ShardManifest } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { type DeliveredSegment, type LogValidator, readLog, type Segment } from "../segments/index.js";
import { restoreSnapshot, type RestoreProgress } from "../snapshots/index.js";
import { ingestSegment, positionFromMeta } from "./ingestSegment.js";

/**
 * Brings the local store up to the end of the shard's log: restores the snapshot when
 * the local copy is behind what the log still holds (or far behind it), then applies
 * segments from the local position until the first empty slot.
 *
 * Invariants:
 * - A segment is applied only when a manifest read *after* its GET completed shows its
 *   seqno >= logStart (DESIGN.md §4 validity). GC raises logStart before it deletes, so
 *   such a segment is the slot's original, never a stalled zombie's late create into a
 *   collected slot. Segments are read in rounds (bounded by count and bytes), and each
 *   round ends with one conditional GET of the manifest before any of it is applied. It
 *   is sent as soon as the round's first segment arrived, beside the GETs that look for
 *   more; segments that arrive after it was sent are judged by another read.
 * - Nothing below logStart is judged: a segment there that is corrupt or breaks the chain
 *   is a stray, not corruption; the reader restores the snapshot instead.
 * - A reader never skips an empty slot. If the slot it stopped at was collected meanwhile
 *   (logStart moved past it), it restores the newer snapshot and reads on from there.
 * - Every round refreshes the manifest, also when its reads failed, so an error never
 *   leaves the cached manifest older than the last segment read.
 * - The one exception to the manifest read: a round all of whose segments are *vouched*
 *   (their writer verified them durable, and the bytes read hash to what it named) is
 *   applied without it. A vouched segment whose bytes the writer sent along is not even
 *   read: the bytes are checked against the vouched hash instead. Verification was that same manifest read, made by the writer
 *   after its create; the hash proves the bytes are the ones it judged, not a zombie's
 *   late create into a collected slot. Such a round ends at the newest vouched segment
 *   without probing the slot after it: the caller's next round does that. A segment
 *   whose vouch is on its way (its writer said it is verifying it) also ends a round, and
 *   the round waits for the vouch (bounded by the giver) instead of reading the manifest;
 *   if none comes, the manifest read judges as always.
 */
export interface CatchUpOptions {
  readonly store: ObjectStore;
  readonly deploymentId: string;
  readonly manifest: ShardManifest;
  readonly local: LocalStore;
  readonly validator: LogValidator;
  readonly fetchConcurrency: number;
  /** Snapshot parts decoded ahead while restoring (default SNAPSHOT_FETCH_CONCURRENCY). */
  readonly snapshotFetchConcurrency?: number;
  /** Restore instead of replaying when the local copy trails the snapshot by more segments. */
  readonly restoreLagSegments: number;
  readonly onProgress?: (progress: CatchUpProgress) => void;
  /** Called after each applied (not skipped) segment, in log order. */
  readonly onApplied?: (segment: Segment) => void;
  /** Called after a snapshot replaced the local state, with the restored frontier ts. */
  readonly onRestored?: (frontierTs: number) => void;
  /**
   * Whether a round that found the next slot empty still re-reads the manifest (default
   * true). A tailer polling a quiet log passes false for most polls: the manifest GET is
   * only needed to judge segments it read, and to notice GC passing an empty slot, which
   * it checks on its own slower cadence.
   */
  readonly refreshWhenEmpty?: boolean;
  /**
   * What the shard's writer vouched for (the wake hints of an authenticated writer). Only
   * ever an optimisation: a segment whose bytes hash to anything else is judged by a
   * manifest read like any other.
   */
  readonly vouching?: Vouching;
}

/** Hashes of segments their writer verified durable, and vouches announced but not yet given. */
export interface Vouching {
  /** The hash the writer vouched for at `seqno`, if it did. */
  hashAt(seqno: number): string | undefined;
  /**
   * The vouched segment's bytes, when the writer sent them along: read instead of a GET
   * (only if they hash to the vouched hash; else the slot is read as always).
   */
  segmentAt?(seqno: number): DeliveredSegment | undefined;
  /** Whether the writer said it is verifying the segment at `seqno` (a vouch should follow). */
  expected(seqno: number): boolean;
  /** Resolves once every one of `seqnos` is vouched for or no longer expected (the giver bounds the wait). */
  settled(seqnos: readonly number[]): Promise<void>;
  /** The highest seqno in [from, to] that is vouched for or expected, or null. */
  newest(from: number, to: number): number | null;
}

/** A Vouching of hashes known up front, none expected. */
export function fixedVouching(hashes: ReadonlyMap<number, string>): Vouching {
  return {
    hashAt: (seqno) => hashes.get(seqno),
    expected: () => false,
    settled: async () => undefined,
    newest: (from, to) => {
      let newest: number | null = null;
      for (const seqno of hashes.keys()) if (seqno >= from && seqno <= to && (newest === null || seqno > newest)) newest = seqno;
      return newest;
    },
  };
}

export type CatchUpProgress =
  | RestoreProgress
  | { readonly phase: "replay"; readonly shard: number; readonly seqno: number; readonly tailHint: number };

export interface CatchUpReport {
  readonly restoredFromSeqno: number | null;
  readonly segmentsApplied: number;
  readonly segmentsSkipped: number;
  /**
   * The first empty slot: where the next segment goes. Null when the last round ended at
   * the newest vouched segment and the slot after it was not read.
   */
  readonly tail: number | null;
}

/** Bounds restores caused by GC racing a slow reader; each one makes real progress. */
const CATCH_UP_RESTORES_MAX = 8;

/** What one read round fetched: segments in seqno order from the position, and why it stopped. */
interface ReadRound {
  readonly segments: readonly Segment[];
  /**
   * The manifest read the round started once its first segment's GET had completed (the
   * round then goes on reading beside it), and how many of the segments had completed
   * before it was sent: the segments it may judge. Null when the round read nothing, or
   * began with a segment vouched for or announced (its vouch may spare the read).
   */
  readonly early: { readonly manifest: Promise<Manifest>; readonly covers: number } | null;
  readonly end:
    | { readonly kind: "empty-slot"; readonly seqno: number }
    | { readonly kind: "bound" }
    /** Stopped after the newest vouched seqno without reading the slot after it. */
    | { readonly kind: "vouched-end" }
    /** A read failed (a transient error, or a segment that fails its checks) at `seqno`. */
    | { readonly kind: "failed"; readonly seqno: number; readonly error: unknown };
}

export async function catchUp(options: CatchUpOptions): Promise<CatchUpReport> {
  const { manifest, validator } = options;
  const counts = { restoredFromSeqno: null as number | null, segmentsApplied: 0, segmentsSkipped: 0, restores: 0 };
  // The cached manifest only decides whether to restore before reading (an optimisation:
  // a stale one costs a round); what gets applied is decided by the reads below.
  if (needsRestore(manifest.current, validator.position.nextSeqno, options.restoreLagSegments)) {
    counts.restoredFromSeqno = await restoreCurrentSnapshot(options, manifest.current, counts);
  }
  for (;;) {
    // A node far behind downloads faster than its local store folds: let the folds catch up.
    await options.local.room();
    const round = await readRound(options);
    if (options.refreshWhenEmpty === false && round.segments.length === 0 && round.end.kind === "empty-slot" && counts.restores === 0) {
      return { restoredFromSeqno: null, segmentsApplied: 0, segmentsSkipped: 0, tail: validator.position.nextSeqno };
    }
    await settleExpectedVouches(options, round);
    if (round.end.kind === "vouched-end" && round.segments.every((segment) => isVouched(options, segment))) {
      applyRound(options, round.segments, manifest.current, counts);
      return { restoredFromSeqno: counts.restoredFromSeqno, segmentsApplied: counts.segmentsApplied, segmentsSkipped: counts.segmentsSkipped, tail: null };
    }
    const current = await judgingManifest(options, round);
    // Also when a snapshot appeared far ahead while this reader was away (a replica
    // resumed after a pause): restoring it beats replaying thousands of segments.
    if (current.logStart > validator.position.nextSeqno || needsRestore(current, validator.position.nextSeqno, options.restoreLagSegments)) {
      counts.restoredFromSeqno = await restoreCurrentSnapshot(options, current, counts);
    }
    applyRound(options, round.segments, current, counts);
    const end = round.end;
    if (end.kind === "failed") {
      // A failure below logStart concerned a stray or a collected slot: read on from the snapshot.
      if (end.seqno < validator.position.nextSeqno) continue;
      throw end.error;
    }
    if (end.kind === "empty-slot" && end.seqno === validator.position.nextSeqno) {
      return {
        restoredFromSeqno: counts.restoredFromSeqno,
        segmentsApplied: counts.segmentsApplied,
        segmentsSkipped: counts.segmentsSkipped,
        tail: validator.position.nextSeqno,
      };
    }
  }
}

/** GETs segments from the local position until an empty slot, a failure or the round's bounds. */
async function readRound(options: CatchUpOptions): Promise<ReadRound> {
  const { validator, manifest } = options;
  const segments: Segment[] = [];
  let early: ReadRound["early"] = null;
  let bytes = 0;
  let seqno = validator.position.nextSeqno;
  const roundEnd = seqno + CATCH_UP_ROUND_SEGMENTS_MAX - 1;
  // Only the newest segments end a round early: a reader far behind reads on to the tail.
  const newest = options.vouching?.newest(seqno, roundEnd) ?? null;
  const lastVouched = newest !== null && newest >= manifest.current.tailHint ? newest : null;
  const log = readLog(options.store, {
    deploymentId: options.deploymentId,
    inheritedFrom: manifest.current.inheritedFrom,
    shard: manifest.shard,
    fromSeqno: seqno,
    concurrency: options.fetchConcurrency,
    knownTail: Math.min(Math.max(manifest.current.tailHint, lastVouched ?? -1), roundEnd),
    ...(options.vouching?.segmentAt !== undefined ? { delivered: (at: number) => options.vouching!.segmentAt!(at) } : {}),
  });
  try {
    for await (const segment of log) {
      segments.push(segment);
      bytes += segment.bytes.byteLength;
      seqno++;
      // The manifest read that judges this segment goes out now, beside the GETs that
      // look for more (usually one finding the next slot empty), not after them.
      if (segments.length === 1 && !isVouched(options, segment) && !options.vouching?.expected(segment.header.seqno)) early = startEarlyRead(manifest);
      if (segments.length >= CATCH_UP_ROUND_SEGMENTS_MAX || bytes >= CATCH_UP_ROUND_BYTES_MAX) {
        return { segments, early, end: { kind: "bound" } };
      }
      if (lastVouched !== null && seqno > lastVouched) return { segments, early, end: { kind: "vouched-end" } };
    }
    return { segments, early, end: { kind: "empty-slot", seqno } };
  } catch (error) {
    return { segments, early, end: { kind: "failed", seqno, error } };
  }
}

/** Applies the round's segments that lie at or above the local position (all of them >= logStart). */
function applyRound(
  options: CatchUpOptions,
  segments: readonly Segment[],
  current: Manifest,
  counts: { segmentsApplied: number; segmentsSkipped: number },
): void {
  const { validator, local } = options;
  for (const segment of segments) {
    const { seqno } = segment.header;
    if (seqno < validator.position.nextSeqno) continue; // covered by a snapshot restored meanwhile
    if (seqno < current.logStart) {
      throw new CairnError("INTERNAL", `segment ${seqno} below logStart ${current.logStart} reached the apply step`);
    }
    if (ingestSegment(local, validator, segment) === "apply") {
      counts.segmentsApplied++;
      options.onApplied?.(segment);
    } else {
      counts.segmentsSkipped++;
    }
    options.onProgress?.({ phase: "replay", shard: validator.shard, seqno, tailHint: current.tailHint });
  }
}

function startEarlyRead(manifest: ShardManifest): NonNullable<ReadRound["early"]> {
  const read = manifest.refresh();
  // Awaited by judgingManifest; a round that fails before then must not leave it unhandled.
  read.catch(() => undefined);
  return { manifest: read, covers: 1 };
}

/**
 * A manifest read made after every segment of the round had been read: the early one if
 * it covers them all, else a new one (after the early one settled, so reads stay ordered).
 */
async function judgingManifest(options: CatchUpOptions, round: ReadRound): Promise<Manifest> {
  if (round.early !== null) {
    if (round.early.covers >= round.segments.length) return round.early.manifest;
    await round.early.manifest.catch(() => undefined);
  }
  return options.manifest.refresh();
}

function isVouched(options: CatchUpOptions, segment: Segment): boolean {
  return options.vouching?.hashAt(segment.header.seqno) === segment.hash;
}

/**
 * A round of segments each vouched for or expected to be: waits for the expected vouches
 * (the writer's verification is one manifest read, running beside our GET) rather than
 * making that read itself. A round holding anything else is judged by the manifest anyway.
 */
async function settleExpectedVouches(options: CatchUpOptions, round: ReadRound): Promise<void> {
  const vouching = options.vouching;
  if (vouching === undefined || round.segments.length === 0 || round.early !== null) return;
  const waiting: number[] = [];
  for (const segment of round.segments) {
    if (isVouched(options, segment)) continue;
    if (!vouching.expected(segment.header.seqno)) return;
    waiting.push(segment.header.seqno);
  }
  if (waiting.length > 0) await vouching.settled(waiting);
}

function needsRestore(manifest: Manifest, nextSeqno: number, restoreLagSegments: number): boolean {
  const snapshot = manifest.snapshot;
  if (snapshot === null || nextSeqno > snapshot.seqno) return false;
  return nextSeqno < manifest.logStart || nextSeqno === 0 || snapshot.seqno - nextSeqno >= restoreLagSegments;
}

/** Restores the manifest's snapshot (a newer one if it was superseded and collected meanwhile). */
export async function restoreCurrentSnapshot(
  options: CatchUpOptions,
  manifest: Manifest,
  counts: { restores: number },
): Promise<number> {
  let current = manifest;
  for (;;) {
    const pointer = current.snapshot;
    if (pointer === null || pointer.seqno + 1 < current.logStart) {
      throw new CairnError(
        "LOG_GAP",
        `shard ${options.manifest.shard}: the log starts at ${current.logStart} but the local copy needs ` +
          `${options.validator.position.nextSeqno} and no snapshot covers the gap`,
        { details: { shard: options.manifest.shard, logStart: current.logStart, needed: options.validator.position.nextSeqno } },
      );
    }
    if (++counts.restores > CATCH_UP_RESTORES_MAX) {
      throw new CairnError("TIMEOUT", `shard ${options.manifest.shard}: catch-up kept losing the race with garbage collection`);
    }
    try {
      await restoreSnapshot({
        store: options.store,
        deploymentId: options.deploymentId,
        inheritedFrom: current.inheritedFrom,
        shard: options.manifest.shard,
        pointer,
        local: options.local,
        ...(options.snapshotFetchConcurrency !== undefined ? { fetchConcurrency: options.snapshotFetchConcurrency } : {}),
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
      options.validator.reset(positionFromMeta(options.local.meta()));
      options.onRestored?.(options.local.meta().frontierTs);
      return pointer.seqno;
    } catch (error) {
      // The snapshot was superseded and collected while we read it: take the newer one.
      if (!hasErrorCode(error, "SNAPSHOT_MISSING")) throw error;
      current = await options.manifest.refresh();
      // Not superseded: a branch's snapshot inherited from its parent, which let it go (DESIGN.md §10a).
      if (current.snapshot?.key === pointer.key && current.inheritedFrom.length > 0) {
        throw new CairnError(
          "BRANCH_PARENT_EXPIRED",
          `shard ${options.manifest.shard}: the snapshot this branch starts from (${pointer.key}, deployment ${current.inheritedFrom[0]}) is gone from its parent: ` +
            `the branch's registration there expired or was deleted, and the parent collected it`,
          { cause: error, details: { shard: options.manifest.shard, key: pointer.key } },
        );
      }
    }
  }
}
