import { createHash } from "node:crypto";
import { z } from "zod";
import { CairnError, hasErrorCode, randomHex, systemClock, systemRandom, type Clock, type Random } from "../base/index.js";
import type { LocalMeta } from "../local/index.js";
import {
  CasObject,
  GLOBALS_FORMAT,
  firstManifestFields,
  bucketLayout,
  generationStore,
  globalsObject,
  isReshardLockHeld,
  manifestCodec,
  reshardInProgress,
  type Globals,
  type Manifest,
} from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { writeSnapshot } from "../snapshots/index.js";
import { generationHolding } from "./generationHolding.js";
import type { MergedDump } from "./MergedDump.js";
import { checkMoment, withStateAt, workDirectoryOf, type StateAtProgress } from "./stateAt.js";
import { copyObject, placeMark, refuseNonEmptyTarget } from "./emptyTarget.js";
import { deletePrefixes } from "./layoutSwitchSteps.js";

/**
 * `cairn restore --to`: builds a new deployment whose state is exactly the source's at
 * one timestamp (DESIGN.md §10a). The source is only read.
 *
 * Steps:
 * 1. Check: the ts is a whole number of µs, not in the future; the source is a
 *    deployment not being resharded; the target is another root that holds nothing (or
 *    only this very restore, unfinished).
 * 2. Mark the target (`restoring`, create-only): until globals exist, a node opened on it
 *    refuses (RESTORE_UNFINISHED) instead of creating an empty deployment there.
 * 3. Per shard: stream its state at the ts (withStateAt: the snapshot at or before it
 *    merged with the log up to it) into the target as the first snapshot of a fresh log,
 *    with its manifest.
 * 4. Copy the schema catalog, create the target's globals (a new deploymentId, the
 *    source's shard count and retention), then remove the mark.
 *
 * A run killed anywhere leaves either no globals (nodes refuse the target; a re-run with
 * the same source and ts deletes what it finds there and starts over) or a finished
 * deployment (a re-run removes a mark left behind). Memory is bounded by one shard's
 * replayed log in SQLite's overlay and a few snapshot parts at a time.
 */
export interface RestoreOptions {
  readonly source: ObjectStore;
  readonly target: ObjectStore;
  /** Hybrid-logical µs: the state of every commit stamped at or before it. */
  readonly atTs: number;
  readonly onProgress?: (progress: RestoreToProgress) => void;
  /** Where the temporary SQLite files of the replayed log go (default: a fresh directory under the OS temp dir, removed at the end). */
  readonly workDirectory?: string;
  /** A ts this far in the past is settled on every shard, however long ago its last commit (default 2 min). */
  readonly settledAfterMs?: number;
  readonly clock?: Clock;
  readonly random?: Random;
}

export type RestoreToProgress =
  | { readonly phase: "cleanup"; readonly objectsDeleted: number }
  | (StateAtProgress & { readonly shards: number })
  | { readonly phase: "write"; readonly shard: number; readonly shards: number; readonly documents: number; readonly parts: number; readonly bytes: number }
  | { readonly phase: "written"; readonly shard: number; readonly shards: number; readonly documents: number };

export interface RestoreReport {
  /** The restored deployment's id (new: it is another deployment). */
  readonly deploymentId: string;
  readonly sourceDeploymentId: string;
  readonly atTs: number;
  readonly numShards: number;
  readonly documents: number;
  /** Per shard: the snapshot it started from (null: the log from its start) and the segments replayed after it. */
  readonly shards: readonly { readonly baseSeqno: number | null; readonly segmentsApplied: number; readonly documents: number }[];
  /** False when the target already held this finished restore (the run only tidied up). */
  readonly restored: boolean;
}

const RESTORE_MARK_FORMAT = 1;
const markSchema = z.object({
  format: z.literal(RESTORE_MARK_FORMAT),
  sourceDeploymentId: z.string().min(1),
  atTs: z.number().int().min(0),
  deploymentId: z.string().regex(/^[0-9a-f]{32}$/),
  startedAt: z.number().int().min(0),
});
type RestoreMark = z.infer<typeof markSchema>;

export async function restoreObjectStore(options: RestoreOptions): Promise<RestoreReport> {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const { source, target, atTs } = options;
  const onProgress = options.onProgress ?? (() => undefined);
  const nowMs = clock.nowMs();
  if (source.description === target.description) {
    throw new CairnError("INVALID_ARGUMENT", `the restore's target is its source (${source.description}); restore into another bucket or prefix`);
  }
  const globals = (await globalsObject(source, random).read())?.value ?? null;
  if (globals === null) throw new CairnError("DEPLOYMENT_MISMATCH", `no Cairn deployment at ${source.description} (globals missing): nothing to restore`);
  checkMoment(atTs, globals, nowMs);
  if (isReshardLockHeld(globals, nowMs)) throw reshardInProgress(globals.reshard!);

  // The window is checked before the target is touched (withStateAt checks again, and
  // what only the log can tell — a ts not settled yet — cleans the target up below).
  const layout = await generationHolding(source, globals, atTs, random, nowMs);
  const sourceShards = generationStore(source, layout.generation);
  const prepared = await prepareTarget(target, globals, atTs, clock, random, onProgress);
  if (prepared.kind === "finished") {
    return { deploymentId: prepared.deploymentId, sourceDeploymentId: globals.deploymentId, atTs, numShards: layout.numShards, documents: 0, shards: [], restored: false };
  }
  const deploymentId = prepared.mark.deploymentId;
  const workDirectory = workDirectoryOf(options.workDirectory, "cairn-restore-");
  const shards: { baseSeqno: number | null; segmentsApplied: number; documents: number }[] = [];
  try {
    for (let shard = 0; shard < layout.numShards; shard++) {
      const materialize = {
        store: sourceShards,
        deploymentId: globals.deploymentId,
        shard,
        atTs,
        random,
        clock,
        settledAfterMs: options.settledAfterMs,
        workDirectory: workDirectory.path,
        onProgress: (step: StateAtProgress) => onProgress({ ...step, shards: layout.numShards }),
      };
      await withStateAt(materialize, async (state, read) => {
        const documents = await writeFirstSnapshot(target, { deploymentId, shard, frontierTs: atTs, chainSeed: "restore" }, state, random, (written) =>
          onProgress({ phase: "write", shard, shards: layout.numShards, ...written }),
        );
        shards.push({ baseSeqno: read.base?.seqno ?? null, segmentsApplied: read.segmentsApplied, documents });
        onProgress({ phase: "written", shard, shards: layout.numShards, documents });
      });
    }
  } catch (error) {
    // A refusal changes nothing: what this run wrote goes, the mark last. (Any other
    // failure leaves the mark: nodes refuse the target, and a re-run starts it over.)
    if (hasErrorCode(error, "RESTORE_OUT_OF_RANGE")) await emptyTarget(target, () => undefined, { keepMark: false }).catch(() => undefined);
    throw error;
  } finally {
    workDirectory.remove();
  }
  await copyObject(source, target, bucketLayout.schemaCatalog());
  await globalsObject(target, random).create({
    format: GLOBALS_FORMAT,
    deploymentId,
    numShards: layout.numShards,
    createdAt: clock.nowMs(),
    generation: 0,
    retired: [],
    highestGeneration: 0,
    retentionMs: globals.retentionMs,
    branch: null,
    reshard: null,
  });
  await target.delete(bucketLayout.restoring());
  return {
    deploymentId,
    sourceDeploymentId: globals.deploymentId,
    atTs,
    numShards: layout.numShards,
    documents: shards.reduce((sum, shard) => sum + shard.documents, 0),
    shards,
    restored: true,
  };
}

type PreparedTarget = { readonly kind: "fresh"; readonly mark: RestoreMark } | { readonly kind: "finished"; readonly deploymentId: string };

/** Checks the target and marks it (or finds this restore's own mark and clears what it left). */
async function prepareTarget(
  target: ObjectStore,
  source: Globals,
  atTs: number,
  clock: Clock,
  random: Random,
  onProgress: (progress: RestoreToProgress) => void,
): Promise<PreparedTarget> {
  const existing = await readMark(target);
  const targetGlobals = (await globalsObject(target, random).read())?.value ?? null;
  const ours = existing !== null && existing.sourceDeploymentId === source.deploymentId && existing.atTs === atTs;
  if (targetGlobals !== null) {
    if (ours && targetGlobals.deploymentId === existing.deploymentId) {
      // Killed between globals and the mark's removal: the restore itself is done.
      await target.delete(bucketLayout.restoring());
      return { kind: "finished", deploymentId: targetGlobals.deploymentId };
    }
    throw new CairnError(
      "RESTORE_TARGET_NOT_EMPTY",
      `${target.description} already holds a deployment (${targetGlobals.deploymentId}); restore into an empty bucket or prefix; nothing was changed`,
      { details: { deploymentId: targetGlobals.deploymentId } },
    );
  }
  if (existing !== null && !ours) {
    throw new CairnError(
      "RESTORE_UNFINISHED",
      `${target.description} holds an unfinished restore of deployment ${existing.sourceDeploymentId} at ts ${existing.atTs} (${isoOf(existing.atTs)}); ` +
        `re-run that restore to finish it, or delete the prefix; nothing was changed`,
      { details: { sourceDeploymentId: existing.sourceDeploymentId, atTs: existing.atTs } },
    );
  }
  if (existing !== null) {
    // Our own unfinished run: everything but the mark goes, and the run starts over.
    await emptyTarget(target, (objectsDeleted) => onProgress({ phase: "cleanup", objectsDeleted }), { keepMark: true });
    return { kind: "fresh", mark: existing };
  }
  await refuseNonEmptyTarget(target, "restore");
  const mark: RestoreMark = {
    format: RESTORE_MARK_FORMAT,
    sourceDeploymentId: source.deploymentId,
    atTs,
    deploymentId: randomHex(random, 16),
    startedAt: clock.nowMs(),
  };
  await placeMark(target, mark);
  return { kind: "fresh", mark };
}

/** Deletes everything under the target, the mark last (or not at all). */
async function emptyTarget(target: ObjectStore, onDeleted: (objectsDeleted: number) => void, options: { readonly keepMark: boolean }): Promise<void> {
  await deletePrefixes(target, [""], onDeleted, (key) => key !== bucketLayout.restoring());
  if (!options.keepMark) await target.delete(bucketLayout.restoring());
}

async function readMark(target: ObjectStore): Promise<RestoreMark | null> {
  const result = await target.get(bucketLayout.restoring());
  if (result === null) return null;
  if (result === "not-modified") throw new CairnError("INTERNAL", "unconditional GET answered not-modified");
  try {
    return markSchema.parse(JSON.parse(new TextDecoder().decode(result.body)));
  } catch {
    throw new CairnError("RESTORE_UNFINISHED", `${target.description} holds a restore mark that cannot be read; delete the prefix and restore again`);
  }
}

/**
 * A state (withStateAt's dump) as the first snapshot of a fresh log (seqno 0 stands for
 * it; the log starts at 1) and that shard's manifest, in `target`; returns the documents
 * written.
 * The snapshot closes at `frontierTs` (at least the newest ts in the state): new writers
 * continue above it.
 */
export async function writeFirstSnapshot(
  target: ObjectStore,
  first: { readonly deploymentId: string; readonly shard: number; readonly frontierTs: number; readonly chainSeed: string },
  state: MergedDump,
  random: Random,
  onWritten: (written: { readonly documents: number; readonly parts: number; readonly bytes: number }) => void,
): Promise<number> {
  const { deploymentId, shard } = first;
  const meta: LocalMeta = {
    shard,
    deploymentId,
    appliedSeqno: 0,
    epoch: 0,
    lastHash: firstChainHash(first.chainSeed, deploymentId, shard),
    frontierTs: first.frontierTs,
    minReadableTs: first.frontierTs,
  };
  const pointer = await writeSnapshot({
    store: target,
    deploymentId,
    shard,
    cursor: { meta, next: () => state.next(), close: () => state.close() },
    attemptId: `restore-${randomHex(random, 6)}`,
    onProgress: ({ documents, parts, bytes }) => onWritten({ documents, parts, bytes }),
    offThread: true,
  });
  await new CasObject<Manifest>(target, bucketLayout.manifest(shard), manifestCodec, random).create(firstManifestFields(deploymentId, shard, pointer));
  return pointer.documents;
}

/** The chain link a fresh log's first segment points back to (its snapshot stands for it): unique per seed, deployment and shard. */
function firstChainHash(seed: string, deploymentId: string, shard: number): string {
  return createHash("sha256").update(`cairn ${seed} ${deploymentId} shard ${shard}`).digest("hex");
}

function isoOf(ts: number): string {
  return new Date(Math.floor(ts / 1000)).toISOString();
}
