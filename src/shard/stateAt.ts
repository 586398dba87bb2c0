import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CairnError, type Clock, type Random } from "../base/index.js";
import { LocalStore } from "../local/index.js";
import { CasObject, bucketLayout, manifestCodec, type Manifest, type SnapshotPointer } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { LogValidator, readLog, type RecordBatch } from "../segments/index.js";
import { readSnapshotRecords, restoreSnapshot, type RestoreProgress } from "../snapshots/index.js";
import { ingestSegment, positionFromMeta } from "./ingestSegment.js";

/**
 * Builds one shard's state at a past timestamp in an empty local store (DESIGN.md §10a):
 * the newest recorded snapshot at or before `atTs` whose log is still there, then the log
 * after it up to `atTs` — all of a segment that closes at or before it, and of the one
 * that straddles it only the revisions, index entries and receipts stamped at or before
 * it. Nothing in the bucket is written.
 *
 * Invariants:
 * - Segments are judged by the validity rule (epochs, chain, checksums) exactly as a
 *   reader judges them; a fenced writer's leftover is skipped.
 * - Everything applied was still at or above `logStart` on a manifest read after it was
 *   read: GC raises logStart before it deletes, so no collected slot's late create (a
 *   zombie's) is ever taken for the log. If retention let the start move meanwhile, the
 *   ts fell out of the window while we read: RESTORE_OUT_OF_RANGE.
 * - A ts the log has not closed yet is refused: past the last segment's maxTs, a writer
 *   may still create a segment stamped at or before it (a pipelined flush in flight), so
 *   such a state is not settled. A ts at least `settledAfterMs` in the past is settled
 *   whatever the log's end (an idle shard): no live writer stamps that far back. So is
 *   every ts of a shard whose writer handed it back (stopped gracefully, flights drained).
 * - Memory is bounded as in any catch-up: applies wait for the local store's room.
 */
export interface MaterializeAtOptions {
  /** The store of the shard's layout generation. */
  readonly store: ObjectStore;
  readonly deploymentId: string;
  readonly shard: number;
  /** Hybrid-logical µs: the state of every commit stamped at or before it. */
  readonly atTs: number;
  /** Empty, of `deploymentId` and `shard`. */
  readonly local: LocalStore;
  readonly random: Random;
  /** Now, in ms since the Unix epoch (the settledness check). */
  readonly nowMs: number;
  readonly settledAfterMs: number;
  readonly fetchConcurrency?: number;
  readonly onProgress?: (progress: MaterializeProgress) => void;
}

export type MaterializeProgress =
  | RestoreProgress
  | { readonly phase: "replay"; readonly shard: number; readonly seqno: number; readonly ts: number; readonly atTs: number };

export interface MaterializedShard {
  /** The snapshot it started from (null: the log from its very first segment). */
  readonly base: SnapshotPointer | null;
  readonly segmentsApplied: number;
}

/** A ts this far in the past is settled on every shard, however long ago its last commit. */
export const RESTORE_SETTLED_AFTER_MS_DEFAULT = 2 * 60 * 1000;

/** Log GETs in flight while replaying. */
const MATERIALIZE_FETCH_CONCURRENCY = 16;

export async function materializeAt(options: MaterializeAtOptions): Promise<MaterializedShard> {
  const { store, shard, atTs, local } = options;
  const manifestObject = new CasObject<Manifest>(store, bucketLayout.manifest(shard), manifestCodec, options.random);
  const before = (await manifestObject.read())?.value ?? null;
  // A shard that never opened has no history: empty at every ts.
  if (before === null) return { base: null, segmentsApplied: 0 };
  const base = await baseOf(before, options);
  if (base !== null) {
    await restoreSnapshot({
      store,
      deploymentId: options.deploymentId,
      inheritedFrom: before.inheritedFrom,
      shard,
      pointer: base,
      local,
      offThread: true,
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
  }
  const validator = new LogValidator(shard, positionFromMeta(local.meta()));
  let segmentsApplied = 0;
  let reachedEnd = true;
  for await (const segment of readLog(store, {
    deploymentId: options.deploymentId,
    inheritedFrom: before.inheritedFrom,
    shard,
    fromSeqno: validator.position.nextSeqno,
    concurrency: options.fetchConcurrency ?? MATERIALIZE_FETCH_CONCURRENCY,
  })) {
    await local.room();
    const { header } = segment;
    if (header.epoch >= validator.position.highestEpoch && header.minTs > atTs) {
      reachedEnd = false;
      break;
    }
    if (header.maxTs <= atTs || header.epoch < validator.position.highestEpoch) {
      if (ingestSegment(local, validator, segment) === "apply") segmentsApplied++;
    } else {
      ingestSegment(local, validator, { ...segment, records: recordsAtOrBelow(segment.records, atTs) });
      segmentsApplied++;
      reachedEnd = false;
      break;
    }
    options.onProgress?.({ phase: "replay", shard, seqno: header.seqno, ts: header.maxTs, atTs });
  }
  const after = (await manifestObject.read())?.value ?? before;
  checkHistoryRead({ shard, atTs, firstSeqno: (base?.seqno ?? -1) + 1, after, reachedEnd, lastMaxTs: validator.position.lastMaxTs, nowMs: options.nowMs, settledAfterMs: options.settledAfterMs });
  return { base, segmentsApplied };
}

/**
 * The checks every reader of a shard's past makes once it read the log from `firstSeqno`
 * (materializeAt, createBranch), against `after`, the manifest read after the reads:
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

/**
 * The shard's state at `atTs` in a temporary SQLite file under `workDirectory`, handed to
 * `use` (a dump to write somewhere), then closed and deleted whatever happens. Settledness
 * is judged at the clock's now, with RESTORE_SETTLED_AFTER_MS_DEFAULT unless given.
 */
export async function withStateAt<T>(
  options: Omit<MaterializeAtOptions, "local" | "nowMs" | "settledAfterMs"> & {
    readonly workDirectory: string;
    readonly clock: Clock;
    readonly settledAfterMs: number | undefined;
  },
  use: (local: LocalStore, materialized: MaterializedShard) => Promise<T>,
): Promise<T> {
  const path = join(options.workDirectory, `at-${options.deploymentId}-${options.shard}.sqlite`);
  const remove = () => {
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
  };
  remove();
  const local = LocalStore.open({ path, shard: options.shard, deploymentId: options.deploymentId, clock: options.clock });
  try {
    const settledAfterMs = options.settledAfterMs ?? RESTORE_SETTLED_AFTER_MS_DEFAULT;
    return await use(local, await materializeAt({ ...options, local, nowMs: options.clock.nowMs(), settledAfterMs }));
  } finally {
    local.close();
    remove();
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
  options: Pick<MaterializeAtOptions, "store" | "deploymentId" | "shard" | "atTs" | "random">,
): Promise<SnapshotPointer | null> {
  const manifest = (await new CasObject<Manifest>(options.store, bucketLayout.manifest(options.shard), manifestCodec, options.random).read())?.value ?? null;
  return manifest === null ? null : baseOf(manifest, options);
}

async function baseOf(manifest: Manifest, options: Pick<MaterializeAtOptions, "store" | "deploymentId" | "shard" | "atTs">): Promise<SnapshotPointer | null> {
  checkDeployment(manifest, options);
  return chooseBase(manifest, (await readSnapshotRecords(options.store, options.shard)).records.map((record) => record.pointer), options);
}

/**
 * The newest snapshot at or before `atTs` whose following log is still there; null to
 * replay from the very first segment (only while nothing was ever collected).
 */
function chooseBase(manifest: Manifest, recorded: readonly SnapshotPointer[], options: Pick<MaterializeAtOptions, "shard" | "atTs">): SnapshotPointer | null {
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

function checkDeployment(manifest: Manifest, options: Pick<MaterializeAtOptions, "shard" | "deploymentId">): void {
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
