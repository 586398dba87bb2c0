import { z } from "zod";
import { CairnError, hasErrorCode, randomHex, systemClock, systemRandom, type Clock, type Random } from "../base/index.js";
import {
  bucketLayout,
  branchRegistrationObject,
  BRANCH_ID_PATTERN,
  BRANCH_REGISTRATION_FORMAT,
  CasObject,
  generationPrefix,
  generationStore,
  GLOBALS_FORMAT,
  globalsObject,
  initialManifestFields,
  isLeaseLive,
  isReshardLockHeld,
  manifestCodec,
  MANIFEST_FORMAT,
  reshardInProgress,
  type Globals,
  type HeldShard,
  type Manifest,
  type SnapshotPointer,
} from "../manifest/index.js";
import { encodeParentLink, PARENT_LINK_FORMAT, PARENT_LINK_KEY, prefixRange, storeUrlWithin, type KeyRange, type ObjectStore } from "../objectstore/index.js";
import { encodeSegment, LOG_START, LogValidator, readLog, type LogPosition, type RecordBatch, type Segment } from "../segments/index.js";
import { readSnapshotRecords } from "../snapshots/index.js";
import { copyObject, placeMark, refuseNonEmptyTarget } from "./emptyTarget.js";
import { deletePrefixes } from "./layoutSwitchSteps.js";
import { commonFrontierTs } from "./logEnds.js";
import { checkHistoryRead, checkMoment, RESTORE_SETTLED_AFTER_MS_DEFAULT, restorableBase } from "./stateAt.js";

/**
 * `cairn branch`: a new deployment whose state is the parent's at one timestamp and that
 * writes its own log from there, sharing the parent's immutable objects below the fork
 * point instead of copying them (DESIGN.md §10a).
 *
 * Per shard, the fork is: the newest snapshot at or before the ts (as a restore chooses
 * it), the segments after it that close at or before the ts, and — when the ts falls
 * inside a segment — that segment cut to the records stamped at or before it, written
 * into the branch (the one object per shard a branch writes of the past). The branch's
 * manifest points at the parent's snapshot and continues the parent's seqnos, epochs and
 * hash chain; its root's parent link (InheritingObjectStore) makes the inherited keys
 * readable there, and its manifests' `inheritedFrom` accepts their headers.
 *
 * Steps:
 * 1. Check: the ts is settled and within the parent's history (a branch's not before its
 *    own fork, and its own parent still holding it); no reshard; the target is empty.
 * 2. Mark the target (`restoring`): nodes refuse it until globals exist.
 * 3. Find each shard's fork point (reads only: the manifest, the snapshot records, the
 *    log from the snapshot to the ts).
 * 4. Register in the parent (`branches/{id}`, with an expiry): from then on the parent's
 *    GC keeps what the branch reads. Then check it all still exists, after any GC pass
 *    that may have started before the registration ended (the manifest's `collecting`).
 * 5. Write the parent link, the schema catalog, the cut segments, the manifests, and the
 *    globals (a new deploymentId); remove the mark.
 *
 * Requests: a constant number per shard plus one GET per segment between the snapshot
 * and the fork (bounded by the snapshot cadence, not by the data), and nothing copied
 * but the cut segments. A run killed before the globals leaves the target refused by
 * nodes; a re-run with the same parent and ts starts it over under the same ids.
 */
export interface BranchOptions {
  /** The parent deployment's root (as opened: it may itself be a branch). */
  readonly parent: ObjectStore;
  /** The parent's root URL, as another process would open it (storeUrlWithin makes a path absolute). */
  readonly parentUrl: string;
  /** The branch's root, opened plainly (it has no parent link yet). */
  readonly target: ObjectStore;
  readonly targetUrl: string;
  /** Hybrid-logical µs: the branch starts with every commit stamped at or before it (default: the logs' common frontier, the newest settled moment). */
  readonly atTs?: number;
  /** How long the parent holds what the branch reads, from now (renewed by `cairn branch renew`). */
  readonly ttlMs: number;
  /** The registration's name in the parent (default: random). */
  readonly branchId?: string;
  /** Opens a store URL (the grandparent's, to check a branch of a branch). */
  readonly openStore: (url: string) => Promise<ObjectStore>;
  readonly settledAfterMs?: number;
  readonly onProgress?: (progress: BranchProgress) => void;
  readonly clock?: Clock;
  readonly random?: Random;
  /** How long to wait for a parent GC pass in progress to end (default 60 s). */
  readonly collectingWaitMs?: number;
}

export type BranchProgress =
  | { readonly phase: "fork"; readonly shard: number; readonly shards: number; readonly segmentsRead: number }
  | { readonly phase: "registered"; readonly branchId: string; readonly expiresAt: number }
  | { readonly phase: "written"; readonly shard: number; readonly shards: number };

export interface BranchReport {
  readonly branchId: string;
  readonly deploymentId: string;
  readonly parentDeploymentId: string;
  readonly forkTs: number;
  readonly numShards: number;
  readonly expiresAt: number;
  readonly shards: readonly ForkSummary[];
}

export interface ForkSummary {
  readonly shard: number;
  readonly snapshotSeqno: number | null;
  /** Parent segments the branch reads (inclusive; none when through < from). */
  readonly logFrom: number;
  readonly logThrough: number;
  /** The seqno of the cut segment the branch wrote, if the ts fell inside one. */
  readonly cutSeqno: number | null;
  /** Segments read to find the fork. */
  readonly segmentsRead: number;
}

/** Registrations hold for a week unless told otherwise: as long as a new deployment's retention. */
export const BRANCH_TTL_MS_DEFAULT = 7 * 24 * 60 * 60 * 1000;
const COLLECTING_WAIT_MS_DEFAULT = 60_000;
const COLLECTING_POLL_MS = 200;
const FORK_FETCH_CONCURRENCY = 16;

/** What refuses a branch after the target was marked: the run then leaves nothing behind. */
const REFUSALS = ["RESTORE_OUT_OF_RANGE", "RESHARD_IN_PROGRESS", "DEPLOYMENT_RESHARDED", "INVALID_ARGUMENT"] as const;

const BRANCH_MARK_FORMAT = 1;
const branchMarkSchema = z.object({
  format: z.literal(BRANCH_MARK_FORMAT),
  kind: z.literal("branch"),
  parentDeploymentId: z.string(),
  atTs: z.number().int(),
  branchId: z.string().regex(BRANCH_ID_PATTERN),
  deploymentId: z.string().regex(/^[0-9a-f]{32}$/),
  startedAt: z.number().int(),
});
type BranchMark = z.infer<typeof branchMarkSchema>;

interface ForkPoint {
  readonly shard: number;
  readonly base: SnapshotPointer | null;
  readonly recordKey: string | null;
  readonly logFrom: number;
  readonly logThrough: number;
  readonly cut: Segment | null;
  /** The position after the last segment the branch starts with. */
  readonly end: LogPosition;
  readonly segmentsRead: number;
  readonly parentManifest: Manifest;
}

export async function createBranch(options: BranchOptions): Promise<BranchReport> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const { parent, target } = options;
  const onProgress = options.onProgress ?? (() => undefined);
  if (!Number.isSafeInteger(options.ttlMs) || options.ttlMs <= 0) {
    throw new CairnError("INVALID_ARGUMENT", `a branch's ttl must be a positive number of ms, not ${String(options.ttlMs)}`);
  }
  if (options.branchId !== undefined && !BRANCH_ID_PATTERN.test(options.branchId)) {
    throw new CairnError("INVALID_ARGUMENT", `a branch id must match ${BRANCH_ID_PATTERN}, got ${JSON.stringify(options.branchId)}`);
  }
  if (isInside(options.targetUrl, options.parentUrl)) {
    throw new CairnError("INVALID_ARGUMENT", `${options.targetUrl} is inside the parent deployment's root ${options.parentUrl}: put the branch beside it; nothing was changed`);
  }
  const globals = await readGlobals(parent, random);
  const atTs = options.atTs ?? (await commonFrontierTs(generationStore(parent, globals.generation), globals.deploymentId, globals.numShards, random, clock));
  const nowMs = clock.nowMs();
  checkMoment(atTs, globals, nowMs);
  if (isReshardLockHeld(globals, nowMs)) throw reshardInProgress(globals.reshard!);
  if (globals.branch !== null && globals.generation === 0) await checkOwnParent(globals, atTs, options.openStore, random, nowMs);
  const generation = globals.generation;
  const parentShards = generationStore(parent, generation);

  const mark = await prepareTarget(target, globals, atTs, options.branchId, clock, random);
  const registration = branchRegistrationObject(parent, mark.branchId, random);
  try {
    const forks: ForkPoint[] = [];
    for (let shard = 0; shard < globals.numShards; shard++) {
      const fork = await findFork(parentShards, globals, shard, atTs, mark.deploymentId, options, nowMs, random);
      forks.push(fork);
      onProgress({ phase: "fork", shard, shards: globals.numShards, segmentsRead: fork.segmentsRead });
    }
    const expiresAt = clock.nowMs() + options.ttlMs;
    const held: HeldShard[] = forks.map((fork) => ({
      shard: fork.shard,
      snapshotKey: fork.base?.key ?? null,
      recordKey: fork.recordKey,
      logFrom: fork.logFrom,
      logThrough: fork.logThrough,
    }));
    await registration.update((current) => {
      if (current !== null && current.deploymentId !== mark.deploymentId) {
        throw new CairnError("INVALID_ARGUMENT", `the parent already has a branch named "${mark.branchId}" (at ${current.url}); choose another --name; nothing was changed`, {
          details: { branchId: mark.branchId, url: current.url },
        });
      }
      return {
      format: BRANCH_REGISTRATION_FORMAT,
      branchId: mark.branchId,
      url: options.targetUrl,
      deploymentId: mark.deploymentId,
      generation,
      forkTs: atTs,
      createdAt: nowMs,
      expiresAt,
      ttlMs: options.ttlMs,
      shards: held,
      };
    });
    onProgress({ phase: "registered", branchId: mark.branchId, expiresAt });
    await checkStillHeld(parent, parentShards, globals, forks, options.collectingWaitMs ?? COLLECTING_WAIT_MS_DEFAULT, clock, random);

    await target.create(
      PARENT_LINK_KEY,
      encodeParentLink({
        format: PARENT_LINK_FORMAT,
        parentUrl: storeUrlWithin(options.parentUrl, generationPrefix(generation)),
        ranges: forks.flatMap(inheritedRanges),
      }),
    );
    await copyObject(parent, target, bucketLayout.schemaCatalog());
    for (const fork of forks) {
      await writeForkedShard(target, mark.deploymentId, globals.deploymentId, fork, random);
      onProgress({ phase: "written", shard: fork.shard, shards: globals.numShards });
    }
    await globalsObject(target, random).create({
      format: GLOBALS_FORMAT,
      deploymentId: mark.deploymentId,
      numShards: globals.numShards,
      createdAt: clock.nowMs(),
      generation: 0,
      retired: [],
      highestGeneration: 0,
      retentionMs: globals.retentionMs,
      branch: { id: mark.branchId, parentUrl: options.parentUrl, parentDeploymentId: globals.deploymentId, forkTs: atTs },
      reshard: null,
    });
    await target.delete(bucketLayout.restoring());
    return {
      branchId: mark.branchId,
      deploymentId: mark.deploymentId,
      parentDeploymentId: globals.deploymentId,
      forkTs: atTs,
      numShards: globals.numShards,
      expiresAt,
      shards: forks.map((fork) => ({
        shard: fork.shard,
        snapshotSeqno: fork.base?.seqno ?? null,
        logFrom: fork.logFrom,
        logThrough: fork.logThrough,
        cutSeqno: fork.cut?.header.seqno ?? null,
        segmentsRead: fork.segmentsRead,
      })),
    };
  } catch (error) {
    // A refusal changes nothing: our registration (never another branch's) and what this run wrote go, the mark last.
    if (REFUSALS.some((code) => hasErrorCode(error, code))) {
      const ours = (await registration.read().catch(() => null))?.value.deploymentId === mark.deploymentId;
      if (ours) await parent.delete(registration.key).catch(() => undefined);
      await deletePrefixes(target, [""], () => undefined, (key) => key !== bucketLayout.restoring())
        .then(() => target.delete(bucketLayout.restoring()))
        .catch(() => undefined);
    }
    throw error;
  }
}

/** Whether the root `inner` lies within (or is) the root `outer`: compared without query strings, as prefixes of whole path segments. */
function isInside(inner: string, outer: string): boolean {
  const path = (url: string) => url.replace(/[?#].*$/, "").replace(/\/*$/, "/");
  return path(inner).startsWith(path(outer));
}

async function readGlobals(parent: ObjectStore, random: Random): Promise<Globals> {
  const globals = (await globalsObject(parent, random).read())?.value ?? null;
  if (globals === null) throw new CairnError("DEPLOYMENT_MISMATCH", `no Cairn deployment at ${parent.description} (globals missing): nothing to branch`);
  return globals;
}

/** A branch of a branch: not before the parent's own fork, and only while its parent still holds it. */
async function checkOwnParent(globals: Globals, atTs: number, openStore: (url: string) => Promise<ObjectStore>, random: Random, nowMs: number): Promise<void> {
  const own = globals.branch!;
  if (atTs < own.forkTs) {
    throw new CairnError(
      "RESTORE_OUT_OF_RANGE",
      `ts ${atTs} is before this branch's fork (ts ${own.forkTs}): branch its parent (${own.parentUrl}) at that time instead`,
      { details: { atTs, forkTs: own.forkTs } },
    );
  }
  const grandparent = await openStore(own.parentUrl);
  try {
    const registration = (await branchRegistrationObject(grandparent, own.id, random).read())?.value ?? null;
    if (registration === null || nowMs >= registration.expiresAt) {
      throw new CairnError(
        "BRANCH_PARENT_EXPIRED",
        `the branch at ${own.parentUrl} no longer holds this deployment's past (registration ${own.id} ` +
          (registration === null ? "is gone" : `expired at ${new Date(registration.expiresAt).toISOString()}`) +
          `): its history below its fork may be collected, so it cannot be branched`,
        { details: { branchId: own.id, parentUrl: own.parentUrl } },
      );
    }
  } finally {
    await grandparent.close();
  }
}

/** Checks the target is empty (or holds this very branch, unfinished) and marks it. */
async function prepareTarget(target: ObjectStore, parent: Globals, atTs: number, branchId: string | undefined, clock: Clock, random: Random): Promise<BranchMark> {
  const existing = await readMark(target);
  const targetGlobals = (await globalsObject(target, random).read())?.value ?? null;
  if (targetGlobals !== null) {
    throw new CairnError(
      "RESTORE_TARGET_NOT_EMPTY",
      `${target.description} already holds a deployment (${targetGlobals.deploymentId}); branch into an empty bucket or prefix; nothing was changed`,
      { details: { deploymentId: targetGlobals.deploymentId } },
    );
  }
  if (existing !== null) {
    if (existing.parentDeploymentId !== parent.deploymentId || existing.atTs !== atTs || (branchId !== undefined && branchId !== existing.branchId)) {
      throw new CairnError(
        "RESTORE_UNFINISHED",
        `${target.description} holds an unfinished branch of deployment ${existing.parentDeploymentId} at ts ${existing.atTs}; ` +
          `re-run that branch to finish it, or delete the prefix; nothing was changed`,
        { details: { parentDeploymentId: existing.parentDeploymentId, atTs: existing.atTs } },
      );
    }
    // Our own unfinished run: everything but the mark goes, and the run starts over under its ids.
    await deletePrefixes(target, [""], () => undefined, (key) => key !== bucketLayout.restoring());
    return existing;
  }
  await refuseNonEmptyTarget(target, "branch");
  const mark: BranchMark = {
    format: BRANCH_MARK_FORMAT,
    kind: "branch",
    parentDeploymentId: parent.deploymentId,
    atTs,
    branchId: branchId ?? `b-${randomHex(random, 6)}`,
    deploymentId: randomHex(random, 16),
    startedAt: clock.nowMs(),
  };
  await placeMark(target, mark);
  return mark;
}

async function readMark(target: ObjectStore): Promise<BranchMark | null> {
  const result = await target.get(bucketLayout.restoring());
  if (result === null) return null;
  if (result === "not-modified") throw new CairnError("INTERNAL", "unconditional GET answered not-modified");
  let parsed: z.ZodSafeParseResult<BranchMark>;
  try {
    parsed = branchMarkSchema.safeParse(JSON.parse(new TextDecoder().decode(result.body)));
  } catch {
    parsed = { success: false } as never;
  }
  if (!parsed.success) {
    throw new CairnError("RESTORE_UNFINISHED", `${target.description} holds an unfinished restore (not a branch); finish that restore, or delete the prefix`);
  }
  return parsed.data;
}

/**
 * Where shard `shard`'s history at `atTs` is: its base snapshot, and the log after it read
 * (by the validity rule) up to the segment that reaches past the ts.
 */
async function findFork(
  store: ObjectStore,
  globals: Globals,
  shard: number,
  atTs: number,
  branchDeploymentId: string,
  options: BranchOptions,
  nowMs: number,
  random: Random,
): Promise<ForkPoint> {
  const manifestObject = new CasObject<Manifest>(store, bucketLayout.manifest(shard), manifestCodec, random);
  const manifest = (await manifestObject.read())?.value ?? null;
  if (manifest === null) {
    // A shard that never opened: the branch's starts empty too.
    return { shard, base: null, recordKey: null, logFrom: 0, logThrough: -1, cut: null, end: LOG_START, segmentsRead: 0, parentManifest: emptyManifest(globals.deploymentId, shard) };
  }
  const base = await restorableBase({ store, deploymentId: globals.deploymentId, shard, atTs, random });
  const records = base === null ? [] : (await readSnapshotRecords(store, shard)).records;
  const recordKey = records.find((record) => record.pointer.key === base?.key)?.key ?? null;
  const validator = new LogValidator(shard, base === null ? LOG_START : { nextSeqno: base.seqno + 1, highestEpoch: base.epoch, lastHash: base.hash, lastMaxTs: base.ts });
  const logFrom = validator.position.nextSeqno;
  let cut: Segment | null = null;
  let reachedEnd = true;
  let segmentsRead = 0;
  for await (const segment of readLog(store, {
    deploymentId: globals.deploymentId,
    inheritedFrom: manifest.inheritedFrom,
    shard,
    fromSeqno: logFrom,
    concurrency: FORK_FETCH_CONCURRENCY,
  })) {
    segmentsRead++;
    const { header } = segment;
    const leftover = header.epoch < validator.position.highestEpoch;
    if (!leftover && header.minTs > atTs) {
      reachedEnd = false;
      break;
    }
    if (!leftover && header.maxTs > atTs) {
      cut = cutSegment(segment, atTs, branchDeploymentId);
      reachedEnd = false;
      break;
    }
    validator.accept(segment);
  }
  const after = (await manifestObject.read())?.value ?? manifest;
  const settledAfterMs = options.settledAfterMs ?? RESTORE_SETTLED_AFTER_MS_DEFAULT;
  checkHistoryRead({ shard, atTs, firstSeqno: logFrom, after, reachedEnd, lastMaxTs: validator.position.lastMaxTs, nowMs, settledAfterMs });
  const logThrough = validator.position.nextSeqno - 1;
  const end = cut === null ? validator.position : { nextSeqno: cut.header.seqno + 1, highestEpoch: cut.header.epoch, lastHash: cut.hash, lastMaxTs: cut.header.maxTs };
  return { shard, base, recordKey, logFrom, logThrough, cut, end, segmentsRead, parentManifest: after };
}

/**
 * The part of `segment` stamped at or before `atTs`, as the branch's own segment at the
 * same slot: its header names the branch; its epoch and chain continue the parent's.
 */
function cutSegment(segment: Segment, atTs: number, branchDeploymentId: string): Segment | null {
  const records: RecordBatch = {
    revisions: segment.records.revisions.filter((revision) => revision.ts <= atTs),
    indexUpdates: segment.records.indexUpdates.filter((update) => update.ts <= atTs),
    receipts: segment.records.receipts.filter((receipt) => receipt.ts <= atTs),
  };
  const stamps = new Set([...records.revisions.map((r) => r.ts), ...records.indexUpdates.map((u) => u.ts), ...records.receipts.map((r) => r.ts)]);
  if (stamps.size === 0) return null;
  return encodeSegment({ ...segment.header, deploymentId: branchDeploymentId, count: stamps.size, minTs: Math.min(...stamps), maxTs: Math.max(...stamps) }, records);
}

/**
 * After the registration: the parent still has this layout, and every object the branch
 * will read is still there once no GC pass that may have missed the registration is
 * deleting (a pass marks the manifest before it reads registrations, and clears the mark
 * after its deletes).
 */
async function checkStillHeld(
  parent: ObjectStore,
  parentShards: ObjectStore,
  globals: Globals,
  forks: readonly ForkPoint[],
  waitMs: number,
  clock: Clock,
  random: Random,
): Promise<void> {
  const now = await readGlobals(parent, random);
  if (now.generation !== globals.generation) {
    throw new CairnError("DEPLOYMENT_RESHARDED", `the parent switched to layout generation ${now.generation} while the branch was being created; run it again`);
  }
  if (isReshardLockHeld(now, clock.nowMs())) throw reshardInProgress(now.reshard!);
  for (const fork of forks) {
    const manifestObject = new CasObject<Manifest>(parentShards, bucketLayout.manifest(fork.shard), manifestCodec, random);
    const deadline = clock.monotonicMs() + waitMs;
    for (;;) {
      const manifest = (await manifestObject.read())?.value ?? null;
      const collecting = manifest?.collecting ?? null;
      // A mark of an older epoch was left by a writer fenced mid-pass: nothing of it can still be deleting legitimately.
      if (manifest === null || collecting === null || collecting.epoch !== manifest.epoch || !isLeaseLive(manifest, clock.nowMs())) break;
      if (clock.monotonicMs() >= deadline) {
        throw new CairnError("STORE_TRANSIENT", `shard ${fork.shard} of the parent has been collecting garbage for over ${waitMs} ms; try again`);
      }
      await clock.sleep(COLLECTING_POLL_MS);
    }
    await checkPresent(parentShards, fork);
  }
}

async function checkPresent(store: ObjectStore, fork: ForkPoint): Promise<void> {
  const gone = (what: string) =>
    new CairnError("RESTORE_OUT_OF_RANGE", `shard ${fork.shard}'s ${what} was collected while the branch was being created: choose a later time`, {
      details: { shard: fork.shard },
    });
  if (fork.base !== null) {
    let parts = 0;
    for await (const entry of store.list(fork.base.key)) if (entry.key.slice(fork.base.key.length).startsWith("part-")) parts++;
    if (parts < fork.base.parts) throw gone(`snapshot at seqno ${fork.base.seqno}`);
  }
  if (fork.recordKey !== null && (await store.get(fork.recordKey)) === null) throw gone("snapshot record");
  if (fork.logThrough >= fork.logFrom) {
    let found = 0;
    const from = bucketLayout.segment(fork.shard, fork.logFrom);
    for await (const entry of store.list(bucketLayout.logPrefix(fork.shard), { startAfter: from.slice(0, -1) })) {
      if (entry.key < from) continue;
      if (entry.key > bucketLayout.segment(fork.shard, fork.logThrough)) break;
      found++;
    }
    if (found < fork.logThrough - fork.logFrom + 1) throw gone(`log from seqno ${fork.logFrom}`);
  }
}

/** The keys the branch reads from the parent for one shard: its snapshot (parts and record) and its run of segments. */
function inheritedRanges(fork: ForkPoint): KeyRange[] {
  const ranges: KeyRange[] = [];
  if (fork.base !== null) ranges.push(prefixRange(fork.base.key));
  if (fork.recordKey !== null) ranges.push({ from: fork.recordKey, through: fork.recordKey });
  if (fork.logThrough >= fork.logFrom) ranges.push({ from: bucketLayout.segment(fork.shard, fork.logFrom), through: bucketLayout.segment(fork.shard, fork.logThrough) });
  return ranges;
}

/** The cut segment (if any) and the manifest of one of the branch's shards. */
async function writeForkedShard(target: ObjectStore, deploymentId: string, parentDeploymentId: string, fork: ForkPoint, random: Random): Promise<void> {
  if (fork.cut !== null) await target.create(bucketLayout.segment(fork.shard, fork.cut.header.seqno), fork.cut.bytes);
  const tail = fork.end.nextSeqno - 1;
  await new CasObject<Manifest>(target, bucketLayout.manifest(fork.shard), manifestCodec, random).create({
    format: MANIFEST_FORMAT,
    deploymentId,
    shard: fork.shard,
    epoch: fork.end.highestEpoch,
    writer: null,
    leaseExpiresAt: 0,
    logStart: fork.logFrom,
    snapshot: fork.base,
    tailHint: tail,
    fences: [],
    inheritedFrom: [parentDeploymentId, ...fork.parentManifest.inheritedFrom],
    collecting: null,
  });
}

/** The manifest a shard that never opened would get: nothing of it is inherited. */
function emptyManifest(deploymentId: string, shard: number): Manifest {
  return { ...initialManifestFields(deploymentId, shard), version: 1, nonce: "none" };
}
