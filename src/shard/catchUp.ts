import { CairnError, hasErrorCode } from "../base/errors.js";
import type { LocalStore } from "../local/index.js";
import type { Manifest } from "../manifest/Manifest.js";
import type { ShardManifest } from "../manifest/ShardManifest.js";
import type { ObjectStore } from "../objectstore/ObjectStore.js";
import type { LogValidator } from "../segments/LogValidator.js";
import { readLog } from "../segments/logReader.js";
import type { Segment } from "../segments/Segment.js";
import { restoreSnapshot, type RestoreProgress } from "../snapshots/restoreSnapshot.js";
import { ingestSegment, positionFromMeta } from "./ingestSegment.js";

/**
 * Brings the local store up to the end of the shard's log: restores the snapshot when
 * the local copy is behind what the log still holds (or far behind it), then applies
 * segments from the local position until the first empty slot.
 *
 * A reader never skips an empty slot. If the slot it stopped at was collected meanwhile
 * (the manifest's logStart moved past it), it starts over from the newer snapshot.
 */
export interface CatchUpOptions {
  readonly store: ObjectStore;
  readonly deploymentId: string;
  readonly manifest: ShardManifest;
  readonly local: LocalStore;
  readonly validator: LogValidator;
  readonly fetchConcurrency: number;
  /** Restore instead of replaying when the local copy trails the snapshot by more segments. */
  readonly restoreLagSegments: number;
  readonly onProgress?: (progress: CatchUpProgress) => void;
  /** Called after each applied (not skipped) segment, in log order. */
  readonly onApplied?: (segment: Segment) => void;
}

export type CatchUpProgress =
  | RestoreProgress
  | { readonly phase: "replay"; readonly shard: number; readonly seqno: number; readonly tailHint: number };

export interface CatchUpReport {
  readonly restoredFromSeqno: number | null;
  readonly segmentsApplied: number;
  readonly segmentsSkipped: number;
  /** The first empty slot: where the next segment goes. */
  readonly tail: number;
}

/** Bounds restarts caused by GC racing a slow reader; each restart makes real progress. */
const CATCH_UP_ROUNDS_MAX = 8;

export async function catchUp(options: CatchUpOptions): Promise<CatchUpReport> {
  const { manifest, validator } = options;
  let restoredFromSeqno: number | null = null;
  let segmentsApplied = 0;
  let segmentsSkipped = 0;
  for (let round = 1; round <= CATCH_UP_ROUNDS_MAX; round++) {
    const current = round === 1 ? manifest.current : await manifest.refresh();
    if (needsRestore(current, validator.position.nextSeqno, options.restoreLagSegments)) {
      restoredFromSeqno = await restoreCurrentSnapshot(options, current);
    }
    const start = validator.position.nextSeqno;
    if (start < current.logStart) {
      throw new CairnError(
        "LOG_GAP",
        `shard ${manifest.shard}: the log starts at ${current.logStart} but the local copy needs ${start} and no snapshot covers the gap`,
        { details: { shard: manifest.shard, logStart: current.logStart, needed: start } },
      );
    }
    const segments = readLog(options.store, {
      deploymentId: options.deploymentId,
      shard: manifest.shard,
      fromSeqno: start,
      concurrency: options.fetchConcurrency,
      knownTail: current.tailHint,
    });
    for await (const segment of segments) {
      if (ingestSegment(options.local, validator, segment) === "apply") {
        segmentsApplied++;
        options.onApplied?.(segment);
      } else {
        segmentsSkipped++;
      }
      options.onProgress?.({
        phase: "replay",
        shard: manifest.shard,
        seqno: segment.header.seqno,
        tailHint: current.tailHint,
      });
    }
    const tail = validator.position.nextSeqno;
    const after = await manifest.refresh();
    if (after.logStart <= tail) return { restoredFromSeqno, segmentsApplied, segmentsSkipped, tail };
  }
  throw new CairnError("TIMEOUT", `shard ${manifest.shard}: catch-up kept losing the race with garbage collection`);
}

function needsRestore(manifest: Manifest, nextSeqno: number, restoreLagSegments: number): boolean {
  const snapshot = manifest.snapshot;
  if (snapshot === null || nextSeqno > snapshot.seqno) return false;
  return nextSeqno < manifest.logStart || nextSeqno === 0 || snapshot.seqno - nextSeqno >= restoreLagSegments;
}

async function restoreCurrentSnapshot(options: CatchUpOptions, manifest: Manifest): Promise<number> {
  let current = manifest;
  for (let attempt = 1; ; attempt++) {
    const pointer = current.snapshot;
    if (pointer === null) throw new CairnError("INTERNAL", "restore requested without a snapshot");
    try {
      await restoreSnapshot({
        store: options.store,
        deploymentId: options.deploymentId,
        shard: options.manifest.shard,
        pointer,
        local: options.local,
        ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      });
      options.validator.reset(positionFromMeta(options.local.meta()));
      return pointer.seqno;
    } catch (error) {
      // The snapshot was superseded and collected while we read it: take the newer one.
      if (!hasErrorCode(error, "SNAPSHOT_MISSING") || attempt >= CATCH_UP_ROUNDS_MAX) throw error;
      current = await options.manifest.refresh();
    }
  }
}
