import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnError, hasErrorCode, type Clock, type Random } from "../base/index.js";
import { LocalStore } from "../local/index.js";
import { CasObject, bucketLayout, manifestCodec, type Manifest, type SnapshotPointer } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { LogValidator, readLog, type RecordBatch } from "../segments/index.js";
import { readSnapshotPayloads, readSnapshotRecords, type EncodedSnapshotPayload, type RestoreProgress } from "../snapshots/index.js";
import { ingestSegment, positionFromMeta } from "./ingestSegment.js";
import { MergedDump } from "./MergedDump.js";

/**
 * One shard's state at a past timestamp, as a dump (DESIGN.md §10a): the newest recorded
 * snapshot at or before `atTs` whose log is still there, overlaid by the log after it up
 * to `atTs` — all of a segment that closes at or before it, and of the one that
 * straddles it only the revisions, index entries and receipts stamped at or before it.
 * Nothing in the bucket is written.
 *
 * How: the log after the base is replayed into a temporary SQLite file that starts at
 * the base's position and holds only those changes (small next to the state for any
 * recent ts); then the base's parts stream through a MergedDump with the changes' newest
 * rows, removals included, in dump order. The state itself is never built: a restore
 * decodes and encodes the base once instead of loading it into SQLite and reading it
 * back.
 *
 * Invariants:
 * - Segments are judged by the validity rule (epochs, chain, checksums) exactly as a
 *   reader judges them; a fenced writer's leftover is skipped.
 * - Everything applied was still at or above `logStart` on a manifest read after it was
 *   read: GC raises logStart before it deletes, so no collected slot's late create (a
 *   zombie's) is ever taken for the log. If retention let the start move meanwhile, the
 *   ts fell out of the window while we read: RESTORE_OUT_OF_RANGE. All of that is
 *   checked before `use` sees a row. The base's parts are read afterwards, verified by
 *   their checksums and the snapshot's combined hash, so a snapshot is never half read:
 *   one GC collected meanwhile is RESTORE_OUT_OF_RANGE (no longer recorded: the ts left
 *   the window), one still recorded but missing a part is SNAPSHOT_MISSING (damage).
 * - A ts the log has not closed yet is refused: past the last segment's maxTs, a writer
 *   may still create a segment stamped at or before it (a pipelined flush in flight), so
 *   such a state is not settled. A ts at least `settledAfterMs` in the past is settled
 *   whatever the log's end (an idle shard): no live writer stamps that far back. So is
 *   every ts of a shard whose writer handed it back (stopped gracefully, flights drained).
 * - Memory is bounded as in any catch-up (applies wait for the local store's room), and
 *   then by one chunk of each side of the merge and the parts read ahead.
 */
export interface StateAtOptions {
  /** The store of the shard's layout generation. */
  readonly store: ObjectStore;
  readonly deploymentId: string;
  readonly shard: number;
  /** Hybrid-logical µs: the state of every commit stamped at or before it. */
  readonly atTs: number;
  readonly random: Random;
  readonly clock: Clock;
  /** Where the temporary SQLite file of the changes goes (removed at the end). */
  readonly workDirectory: string;
  /** A ts this far in the past is settled on every shard (default RESTORE_SETTLED_AFTER_MS_DEFAULT). */
  readonly settledAfterMs: number | undefined;
  readonly fetchConcurrency?: number;
  readonly onProgress?: (progress: StateAtProgress) => void;
}

export type StateAtProgress =
  | RestoreProgress
  | { readonly phase: "replay"; readonly shard: number; readonly seqno: number; readonly ts: number; readonly atTs: number };

export interface StateAtRead {
  /** The snapshot it started from (null: the log from its very first segment). */
  readonly base: SnapshotPointer | null;
  readonly segmentsApplied: number;
}

/** A ts this far in the past is settled on every shard, however long ago its last commit. */
export const RESTORE_SETTLED_AFTER_MS_DEFAULT = 2 * 60 * 1000;

/** Log GETs in flight while replaying. */
const REPLAY_FETCH_CONCURRENCY = 16;

/**
 * Hands `use` the shard's state at `atTs` as a dump (documents, index entries, receipts,
 * in dump order), then closes it and deletes the temporary file whatever happens.
 * Settledness is judged at the clock's now.
 */
export async function withStateAt<T>(options: StateAtOptions, use: (state: MergedDump, read: StateAtRead) => Promise<T>): Promise<T> {
  const { store, shard } = options;
  const path = join(options.workDirectory, `at-${options.deploymentId}-${shard}.sqlite`);
  const remove = () => {
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
  };
  remove();
  const changes = LocalStore.open({ path, shard, deploymentId: options.deploymentId, clock: options.clock });
  let state: MergedDump | null = null;
  try {
    const manifestObject = new CasObject<Manifest>(store, bucketLayout.manifest(shard), manifestCodec, options.random);
    const before = (await manifestObject.read())?.value ?? null;
    // A shard that never opened has no history: empty at every ts.
    const base = before === null ? null : await baseOf(before, options);
    let segmentsApplied = 0;
    if (before !== null) {
      if (base !== null) await changes.restore([], { appliedSeqno: base.seqno, epoch: base.epoch, lastHash: base.hash, frontierTs: base.ts });
      segmentsApplied = await replayTo(changes, before, (base?.seqno ?? -1) + 1, manifestObject, options);
    }
    const baseRows =
      base === null || before === null
        ? noParts()
        : withPartProgress(
            readSnapshotPayloads({ store, deploymentId: options.deploymentId, inheritedFrom: before.inheritedFrom, shard, pointer: base }),
            base,
            shard,
            options.onProgress,
          );
    state = new MergedDump(baseRows, await changes.openDumpCursor({ includeRemovals: true }), (clientId, owner) => changes.receiptFloor(clientId, owner));
    try {
      return await use(state, { base, segmentsApplied });
    } catch (error) {
      if (base !== null && hasErrorCode(error, "SNAPSHOT_MISSING")) await throwIfCollected(base, error, options);
      throw error;
    }
  } finally {
    state?.close();
    changes.close();
    remove();
  }
}

/**
 * Replays the log from `firstSeqno` into `changes` (at the base's position) up to
 * `atTs`, then checks what was read against the manifest read afterwards
 * (checkHistoryRead); returns the segments applied.
 */
async function replayTo(
  changes: LocalStore,
  before: Manifest,
  firstSeqno: number,
  manifestObject: CasObject<Manifest>,
  options: StateAtOptions,
): Promise<number> {
  const { store, shard, atTs } = options;
  const validator = new LogValidator(shard, positionFromMeta(changes.meta()));
  let segmentsApplied = 0;
  let reachedEnd = true;
  for await (const segment of readLog(store, {
    deploymentId: options.deploymentId,
    inheritedFrom: before.inheritedFrom,
    shard,
    fromSeqno: validator.position.nextSeqno,
    concurrency: options.fetchConcurrency ?? REPLAY_FETCH_CONCURRENCY,
  })) {
    await changes.room();
    const { header } = segment;
    if (header.epoch >= validator.position.highestEpoch && header.minTs > atTs) {
      reachedEnd = false;
      break;
    }
    if (header.maxTs <= atTs || header.epoch < validator.position.highestEpoch) {
      if (ingestSegment(changes, validator, segment) === "apply") segmentsApplied++;
    } else {
      ingestSegment(changes, validator, { ...segment, records: recordsAtOrBelow(segment.records, atTs) });
      segmentsApplied++;
      reachedEnd = false;
      break;
    }
    options.onProgress?.({ phase: "replay", shard, seqno: header.seqno, ts: header.maxTs, atTs });
  }
  const after = (await manifestObject.read())?.value ?? before;
  checkHistoryRead({
    shard,
    atTs,
    firstSeqno,
    after,
    reachedEnd,
    lastMaxTs: validator.position.lastMaxTs,
    nowMs: options.clock.nowMs(),
    settledAfterMs: options.settledAfterMs ?? RESTORE_SETTLED_AFTER_MS_DEFAULT,
  });
  return segmentsApplied;
}

async function* noParts(): AsyncGenerator<never> {}

/** The base's parts, with a "restore" progress step as each is handed on. */
async function* withPartProgress(
  parts: AsyncGenerator<EncodedSnapshotPayload>,
  pointer: SnapshotPointer,
  shard: number,
  onProgress: ((progress: StateAtProgress) => void) | undefined,
): AsyncGenerator<EncodedSnapshotPayload> {
  let documents = 0;
  try {
    for await (const part of parts) {
      documents += part.header.documents;
      onProgress?.({ phase: "restore", shard, seqno: pointer.seqno, partsDone: part.header.part + 1, parts: pointer.parts, documents, documentsTotal: pointer.documents });
      yield part;
    }
  } finally {
    // Stopped early (the merge closed): the reader's prefetches are dropped too.
    await parts.return(undefined);
  }
}

/**
 * RESTORE_OUT_OF_RANGE when a base snapshot found missing is no longer recorded: GC
 * collected it while it was read (the ts left the window), which is no damage.
 */
async function throwIfCollected(base: SnapshotPointer, missing: unknown, options: StateAtOptions): Promise<void> {
  const recorded = (await readSnapshotRecords(options.store, options.shard)).records.some((record) => record.pointer.key === base.key);
  const manifest = await new CasObject<Manifest>(options.store, bucketLayout.manifest(options.shard), manifestCodec, options.random).read();
  if (recorded || manifest?.value.snapshot?.key === base.key) return;
  throw new CairnError(
    "RESTORE_OUT_OF_RANGE",
    `shard ${options.shard}'s snapshot ${base.seqno}, the base of its state at ts ${options.atTs}, was collected while it was being read: it left the retention window`,
    { cause: missing, details: { shard: options.shard, atTs: options.atTs, seqno: base.seqno } },
  );
}

/**
 * The checks every reader of a shard's past makes once it read the log from `firstSeqno`
 * (withStateAt, createBranch), against `after`, the manifest read after the reads:
 * - Nothing at or above logStart is ever deleted: with `firstSeqno` still at or above it,
 *   every segment read (and the empty slot that ended the log) was the log's; otherwise
 *   the ts left the retention window while it was read.
 * - A ts past the log's end (`reachedEnd`, `lastMaxTs`) is not settled while a writer is
 *   live and it is younger than `settledAfterMs`: a writer that handed the shard back
 *   drained its flights first, and nothing more comes.
 * RESTORE_OUT_OF_RANGE when either fails.
 */
export function checkHistoryRead(read: {
  readonly shard: number;
  readonly atTs: number;
  readonly firstSeqno: number;
  readonly after: Manifest;
  readonly reachedEnd: boolean;
  readonly lastMaxTs: number;
  readonly nowMs: number;
  readonly settledAfterMs: number;
}): void {
  const { shard, atTs, after } = read;
  if (after.logStart > read.firstSeqno) {
    throw new CairnError(
      "RESTORE_OUT_OF_RANGE",
      `shard ${shard}'s history at ts ${atTs} was collected while it was being read (logStart moved to ${after.logStart}): it left the retention window`,
      { details: { shard, atTs, logStart: after.logStart } },
    );
  }
  if (read.reachedEnd && after.writer !== null && atTs > read.lastMaxTs && atTs > (read.nowMs - read.settledAfterMs) * 1000) {
    throw new CairnError(
      "RESTORE_OUT_OF_RANGE",
      `ts ${atTs} is not settled on shard ${shard} yet: its log ends at ts ${read.lastMaxTs}, and a writer may still commit ` +
        `at or before ${atTs}; choose a time at least ${Math.ceil(read.settledAfterMs / 1000)} s in the past`,
      { details: { shard, atTs, frontierTs: read.lastMaxTs } },
    );
  }
}

/** The directory the caller gave (created if missing, kept), or a fresh one under the OS temp dir that `remove` deletes. */
export function workDirectoryOf(given: string | undefined, prefix: string): { readonly path: string; readonly remove: () => void } {
  if (given !== undefined) {
    mkdirSync(given, { recursive: true });
    return { path: given, remove: () => undefined };
  }
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * INVALID_ARGUMENT for a ts that is no ts, RESTORE_OUT_OF_RANGE for one in the future or
 * before the deployment existed: the checks every reader of the past makes first.
 */
export function checkMoment(
  atTs: number,
  deployment: { readonly deploymentId: string; readonly createdAt: number; readonly branch?: { readonly forkTs: number } | null },
  nowMs: number,
): void {
  if (!Number.isSafeInteger(atTs) || atTs < 0) {
    throw new CairnError("INVALID_ARGUMENT", `a ts must be a non-negative integer number of µs, not ${String(atTs)}`, { details: { atTs } });
  }
  if (atTs > nowMs * 1000) throw new CairnError("RESTORE_OUT_OF_RANGE", `ts ${atTs} (${isoOf(atTs)}) is in the future`, { details: { atTs } });
  // A branch's history starts in its parent, before it was created: how far back it reaches is its base snapshot's business.
  if (deployment.branch == null && atTs < deployment.createdAt * 1000) {
    throw new CairnError(
      "RESTORE_OUT_OF_RANGE",
      `ts ${atTs} (${isoOf(atTs)}) is before deployment ${deployment.deploymentId} was created (${new Date(deployment.createdAt).toISOString()})`,
      { details: { atTs, createdAt: deployment.createdAt } },
    );
  }
}

function isoOf(ts: number): string {
  return new Date(Math.floor(ts / 1000)).toISOString();
}

/**
 * Where the state at `atTs` is built from (see baseOf), or RESTORE_OUT_OF_RANGE before
 * anything is read but the manifest and the snapshot records: a caller checks every shard
 * this way before it writes anything.
 */
export async function restorableBase(
  options: Pick<StateAtOptions, "store" | "deploymentId" | "shard" | "atTs" | "random">,
): Promise<SnapshotPointer | null> {
  const manifest = (await new CasObject<Manifest>(options.store, bucketLayout.manifest(options.shard), manifestCodec, options.random).read())?.value ?? null;
  return manifest === null ? null : baseOf(manifest, options);
}

async function baseOf(manifest: Manifest, options: Pick<StateAtOptions, "store" | "deploymentId" | "shard" | "atTs">): Promise<SnapshotPointer | null> {
  checkDeployment(manifest, options);
  return chooseBase(manifest, (await readSnapshotRecords(options.store, options.shard)).records.map((record) => record.pointer), options);
}

/**
 * The newest snapshot at or before `atTs` whose following log is still there; null to
 * replay from the very first segment (only while nothing was ever collected).
 */
function chooseBase(manifest: Manifest, recorded: readonly SnapshotPointer[], options: Pick<StateAtOptions, "shard" | "atTs">): SnapshotPointer | null {
  const candidates = [...recorded];
  if (manifest.snapshot !== null && !candidates.some((pointer) => pointer.key === manifest.snapshot!.key)) candidates.push(manifest.snapshot);
  const usable = candidates.filter((pointer) => pointer.seqno + 1 >= manifest.logStart);
  let base: SnapshotPointer | null = null;
  for (const pointer of usable) {
    if (pointer.ts <= options.atTs && (base === null || pointer.seqno > base.seqno)) base = pointer;
  }
  if (base !== null || manifest.logStart === 0) return base;
  const earliest = usable.reduce<number | null>((low, pointer) => (low === null || pointer.ts < low ? pointer.ts : low), null);
  throw new CairnError(
    "RESTORE_OUT_OF_RANGE",
    `ts ${options.atTs} is before what shard ${options.shard} keeps` +
      (earliest === null ? "" : `: its history starts at ts ${earliest} (${new Date(Math.floor(earliest / 1000)).toISOString()})`) +
      `; the deployment's retention window is set in globals (retentionMs)`,
    { details: { shard: options.shard, atTs: options.atTs, earliestTs: earliest } },
  );
}

function checkDeployment(manifest: Manifest, options: Pick<StateAtOptions, "shard" | "deploymentId">): void {
  if (manifest.deploymentId !== options.deploymentId) {
    throw new CairnError("DEPLOYMENT_MISMATCH", `shard ${options.shard}'s manifest belongs to deployment ${manifest.deploymentId}, not ${options.deploymentId}`);
  }
}

/** The part of a segment's records stamped at or before `atTs`. */
function recordsAtOrBelow(records: RecordBatch, atTs: number): RecordBatch {
  return {
    revisions: records.revisions.filter((revision) => revision.ts <= atTs),
    indexUpdates: records.indexUpdates.filter((update) => update.ts <= atTs),
    receipts: records.receipts.filter((receipt) => receipt.ts <= atTs),
  };
}
