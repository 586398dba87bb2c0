import { z } from "zod";
import { CairnError, isCasConflict, type Clock, SHARDS_MAX, randomHex, type Random } from "../base/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { bucketLayout } from "./bucketLayout.js";
import { CasObject, jsonCasCodec, type CasSnapshot } from "./CasObject.js";

/**
 * The deployment's identity, created once by whoever arrives first and adopted by every
 * node after. Every manifest carries the same deploymentId, so a local file or a bucket
 * of another deployment is recognised and refused.
 */
export const GLOBALS_FORMAT = 1;

/** A new deployment keeps every past state for 7 days (DESIGN.md §10a). */
export const RETENTION_MS_DEFAULT = 7 * 24 * 60 * 60 * 1000;
/** Longest retention: ~31 years, so `now - retention` stays an exact integer. */
export const RETENTION_MS_MAX = 1e12;

export const globalsSchema = z.object({
  format: z.literal(GLOBALS_FORMAT),
  version: z.number().int().min(1),
  nonce: z.string().min(1),
  deploymentId: z.string().regex(/^[0-9a-f]{32}$/),
  numShards: z.number().int().min(1).max(SHARDS_MAX),
  /** Milliseconds since the Unix epoch. */
  createdAt: z.number().int().min(0),
  /**
   * The layout generation the shards live in (layoutGeneration.ts): 0 until the first
   * reshard, then the generation each reshard wrote. Absent in globals of older builds.
   */
  generation: z.number().int().min(0).default(0),
  /**
   * Generations a reshard switched away from whose keys are not yet deleted: the reshard
   * (or the next one) deletes them and then drops them from this list.
   */
  retired: z
    .array(
      z.object({
        generation: z.number().int().min(0),
        numShards: z.number().int().min(1).max(SHARDS_MAX),
        /**
         * Kept until then (ms since the Unix epoch) instead of deleted at once: the layout an
         * in-place restore replaced, readable by a restore until its retention ends.
         */
        keepUntil: z.number().int().min(0).optional(),
        /** The newest ts of its logs when it stopped being current: it holds the deployment's history up to there. */
        closedAtTs: z.number().int().min(0).optional(),
      }),
    )
    .default([]),
  /**
   * The highest generation any reshard attempt took for itself (>= generation). Those
   * above `generation` never became current: leftovers of attempts that did not finish.
   */
  highestGeneration: z.number().int().min(0).default(0),
  /**
   * How far back every past state stays restorable (gc/retentionPlan); 0 keeps only the
   * current snapshot. New deployments get RETENTION_MS_DEFAULT; globals of older builds,
   * without the field, keep what they had: 0.
   */
  retentionMs: z.number().int().min(0).max(RETENTION_MS_MAX).default(0),
  /**
   * Set when this deployment is a branch of another (DESIGN.md §10a; `cairn branch`): its
   * generation-0 shards start with the parent's objects below the fork, read through the
   * root's parent link, and held in the parent by the registration `parentRoot`/branches/{id}.
   */
  branch: z
    .object({
      id: z.string().min(1),
      /** The parent deployment's root store URL. */
      parentUrl: z.string().min(1),
      parentDeploymentId: z.string().min(1),
      forkTs: z.number().int().min(0),
    })
    .nullable()
    .default(null),
  /** The reshard lock (ReshardLock.ts): who is resharding, until when; null when nobody is. */
  reshard: z
    .object({
      owner: z.string().min(1),
      /** Milliseconds since the Unix epoch; held while now <= this. */
      expiresAt: z.number().int().min(0),
      /** The generation the attempt writes into. */
      generation: z.number().int().min(1),
      toShards: z.number().int().min(1).max(SHARDS_MAX),
      startedAt: z.number().int().min(0),
    })
    .nullable()
    .default(null),
});

export type Globals = z.infer<typeof globalsSchema>;

export const globalsCodec = jsonCasCodec(globalsSchema, "GLOBALS_INVALID", "deployment globals");

export function globalsObject(store: ObjectStore, random: Random): CasObject<Globals> {
  return new CasObject(store, bucketLayout.globals(), globalsCodec, random);
}

export interface OpenGlobalsOptions {
  readonly clock: Clock;
  readonly random: Random;
  /** Shard count for a new deployment; an existing one must match when given. */
  readonly numShards?: number;
  /** Refuse to create a deployment (e.g. for `cairn inspect`): a missing one is an error. */
  readonly mustExist?: boolean;
  /** Retention of a new deployment (default RETENTION_MS_DEFAULT); an existing one keeps its own. */
  readonly retentionMs?: number;
}

/** Reads the deployment's globals, creating them if this is the first node ever. */
export async function openGlobals(store: ObjectStore, options: OpenGlobalsOptions): Promise<CasSnapshot<Globals>> {
  const object = globalsObject(store, options.random);
  const numShards = options.numShards;
  if (numShards !== undefined && (!Number.isInteger(numShards) || numShards < 1 || numShards > SHARDS_MAX)) {
    throw new CairnError("INVALID_ARGUMENT", `shard count must be an integer in 1..${SHARDS_MAX}, got ${numShards}`);
  }
  const retentionMs = options.retentionMs;
  if (retentionMs !== undefined && !(Number.isSafeInteger(retentionMs) && retentionMs >= 0 && retentionMs <= RETENTION_MS_MAX)) {
    throw new CairnError("INVALID_ARGUMENT", `retention must be an integer number of ms in 0..${RETENTION_MS_MAX}, got ${String(retentionMs)}`);
  }
  let existing = await object.read();
  if (existing === null) {
    if (options.mustExist) {
      throw new CairnError("DEPLOYMENT_MISMATCH", `no Cairn deployment at ${store.description} (globals missing)`);
    }
    // A restore fills the root and writes globals last: until then it is no deployment,
    // and creating an empty one here would make the restore's objects foreign to it.
    if ((await store.get(bucketLayout.restoring())) !== null) {
      throw new CairnError(
        "RESTORE_UNFINISHED",
        `${store.description} holds an unfinished \`cairn restore\`: re-run it to finish, or delete the prefix; nothing was changed`,
      );
    }
    try {
      existing = await object.create({
        format: GLOBALS_FORMAT,
        deploymentId: randomHex(options.random, 16),
        numShards: numShards ?? 1,
        createdAt: options.clock.nowMs(),
        generation: 0,
        retired: [],
        highestGeneration: 0,
        retentionMs: retentionMs ?? RETENTION_MS_DEFAULT,
        branch: null,
        reshard: null,
      });
    } catch (error) {
      if (!isCasConflict(error)) throw error;
      existing = await object.read();
      if (existing === null) throw new CairnError("INTERNAL", "globals vanished after a create conflict");
    }
  }
  if (numShards !== undefined && existing.value.numShards !== numShards) {
    throw new CairnError(
      "DEPLOYMENT_MISMATCH",
      `the deployment at ${store.description} has ${existing.value.numShards} shard(s), not ${numShards}; ` +
        `use \`cairn reshard\` to change the shard count`,
      { details: { expected: numShards, actual: existing.value.numShards } },
    );
  }
  return existing;
}
