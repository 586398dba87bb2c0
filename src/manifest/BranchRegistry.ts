import { z } from "zod";
import { CairnError, hasErrorCode, type Random } from "../base/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { bucketLayout } from "./bucketLayout.js";
import { CasObject, jsonCasCodec, type CasSnapshot } from "./CasObject.js";

/**
 * Branches of a deployment register in the parent (DESIGN.md §10a), as consumers do: a
 * registration names, per shard of one layout generation, the objects the branch reads
 * from the parent — a snapshot and a contiguous run of segments — and holds them until
 * `expiresAt`. The parent's GC and layout switches never delete what a live registration
 * holds; an expired one holds nothing (the branch then cannot read below its fork).
 *
 * Invariants:
 * - A registration is written before the branch's first object, and checked against the
 *   parent after it is written (createBranch): what it holds is then kept, because GC
 *   reads registrations only after its own deciding manifest CAS (collectGarbage).
 * - A registration that cannot be read holds nothing back and is reported, as a malformed
 *   consumer watermark is.
 */
export const BRANCH_REGISTRATION_FORMAT = 1;
export const BRANCH_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

const heldShardSchema = z.object({
  shard: z.number().int().min(0),
  /** The snapshot the branch's shard starts from (SnapshotPointer.key), or null: from the log's first segment. */
  snapshotKey: z.string().min(1).nullable(),
  /** Its record (`s{shard}/snapshots/…`), when it has one. */
  recordKey: z.string().min(1).nullable(),
  /** Segments logFrom..logThrough (inclusive; none when logThrough < logFrom) are read from the parent. */
  logFrom: z.number().int().min(0),
  logThrough: z.number().int().min(-1),
});

export const branchRegistrationSchema = z.object({
  format: z.literal(BRANCH_REGISTRATION_FORMAT),
  version: z.number().int().min(1),
  nonce: z.string().min(1),
  branchId: z.string().regex(BRANCH_ID_PATTERN),
  /** Where the branch lives (for people reading the registry). */
  url: z.string().min(1),
  /** The branch's deploymentId (null until its globals exist). */
  deploymentId: z.string().nullable(),
  /** The parent's layout generation whose objects are held. */
  generation: z.number().int().min(0),
  forkTs: z.number().int().min(0),
  /** Milliseconds since the Unix epoch. */
  createdAt: z.number().int().min(0),
  /** Held while now < expiresAt; each renewal moves it to now + ttlMs. */
  expiresAt: z.number().int().min(0),
  ttlMs: z.number().int().min(1),
  shards: z.array(heldShardSchema),
});

export type BranchRegistration = z.infer<typeof branchRegistrationSchema>;
export type HeldShard = z.infer<typeof heldShardSchema>;

const registrationCodec = jsonCasCodec(branchRegistrationSchema, "BRANCH_REGISTRATION_INVALID", "branch registration");

export function branchRegistrationObject(parentRoot: ObjectStore, branchId: string, random: Random): CasObject<BranchRegistration> {
  if (!BRANCH_ID_PATTERN.test(branchId)) {
    throw new CairnError("INVALID_ARGUMENT", `a branch id must match ${BRANCH_ID_PATTERN}, got ${JSON.stringify(branchId)}`);
  }
  return new CasObject(parentRoot, bucketLayout.branchRegistration(branchId), registrationCodec, random);
}

export interface RegistryScan {
  readonly registrations: readonly CasSnapshot<BranchRegistration>[];
  readonly malformed: readonly { readonly key: string; readonly reason: string }[];
}

/** Every registration in the parent's root (one LIST and a GET each: GC cadence, not the hot path). */
export async function readBranchRegistry(parentRoot: ObjectStore, random: Random): Promise<RegistryScan> {
  const registrations: CasSnapshot<BranchRegistration>[] = [];
  const malformed: { key: string; reason: string }[] = [];
  const prefix = bucketLayout.branchRegistrationsPrefix();
  for await (const entry of parentRoot.list(prefix)) {
    const branchId = entry.key.slice(prefix.length);
    if (!BRANCH_ID_PATTERN.test(branchId)) {
      malformed.push({ key: entry.key, reason: "the key does not name a branch" });
      continue;
    }
    try {
      const read = await new CasObject(parentRoot, entry.key, registrationCodec, random).read();
      if (read !== null) registrations.push(read);
    } catch (error) {
      if (!hasErrorCode(error, "BRANCH_REGISTRATION_INVALID")) throw error;
      malformed.push({ key: entry.key, reason: (error as Error).message });
    }
  }
  return { registrations, malformed };
}

/** What live registrations hold of one shard of one generation. */
export interface ShardHolds {
  /** Segments with a seqno in one of these inclusive ranges are kept. */
  readonly segmentRanges: readonly { readonly from: number; readonly through: number }[];
  /** Snapshot key prefixes kept (their parts). */
  readonly snapshotKeys: ReadonlySet<string>;
  /** Snapshot record keys kept. */
  readonly recordKeys: ReadonlySet<string>;
}

export const NO_HOLDS: ShardHolds = { segmentRanges: [], snapshotKeys: new Set(), recordKeys: new Set() };

export function holdsOf(registrations: readonly BranchRegistration[], generation: number, shard: number, nowMs: number): ShardHolds {
  const segmentRanges: { from: number; through: number }[] = [];
  const snapshotKeys = new Set<string>();
  const recordKeys = new Set<string>();
  for (const registration of registrations) {
    if (registration.generation !== generation || nowMs >= registration.expiresAt) continue;
    for (const held of registration.shards) {
      if (held.shard !== shard) continue;
      if (held.logThrough >= held.logFrom) segmentRanges.push({ from: held.logFrom, through: held.logThrough });
      if (held.snapshotKey !== null) snapshotKeys.add(held.snapshotKey);
      if (held.recordKey !== null) recordKeys.add(held.recordKey);
    }
  }
  return { segmentRanges, snapshotKeys, recordKeys };
}

export function holdsSegment(holds: ShardHolds, seqno: number): boolean {
  return holds.segmentRanges.some((range) => range.from <= seqno && seqno <= range.through);
}

/** The generations live registrations hold (a layout switch keeps them instead of deleting them). */
export function heldGenerations(registrations: readonly BranchRegistration[], nowMs: number): Set<number> {
  return new Set(registrations.filter((registration) => nowMs < registration.expiresAt).map((registration) => registration.generation));
}
