import { z } from "zod";
import { jsonCasCodec, type CasCodec, type CasFields } from "./CasObject.js";

/**
 * A shard's manifest (DESIGN.md §4): the fence (epoch), the lease, the snapshot pointer
 * and the GC watermark. The commit point is the creation of a log segment, not a
 * manifest write, so the manifest changes only on acquire, heartbeat, snapshot and GC.
 */
export const MANIFEST_FORMAT = 1;

const writerSchema = z.object({
  nodeId: z.string().min(1),
  /** Where replicas forward mutations; null for writers that serve no network. */
  url: z.string().nullable(),
});

const seqno = z.number().int().min(0);

/**
 * How many recent epochs' fence positions a manifest keeps. A writer stalled past its
 * lease decides whether its segment in a since-collected slot was part of the log from
 * the next epoch's fence (see commitVerdict); a zombie older than 16 takeovers reports
 * an unknown outcome instead. 16 records are ~600 bytes of manifest.
 */
export const FENCE_RECORDS_MAX = 16;

/** Where the fence segment of `epoch` landed, recorded by its writer once verified. */
const fenceRecordSchema = z.object({
  epoch: z.number().int().min(1),
  seqno,
});

export const snapshotPointerSchema = z.object({
  /** State through this seqno. */
  seqno,
  /** maxTs of that segment: the snapshot's closed frontier. */
  ts: z.number().int().min(0),
  /** Epoch and hash of that segment, so a reader continues the epoch rule and chain. */
  epoch: z.number().int().min(0),
  hash: z.string().nullable(),
  /** Key prefix of the snapshot's parts. */
  key: z.string().min(1),
  parts: z.number().int().min(1),
  bytes: z.number().int().min(0),
  /** sha256 over the concatenated per-part hashes, in part order. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  documents: z.number().int().min(0),
});

export const manifestSchema = z.object({
  format: z.literal(MANIFEST_FORMAT),
  deploymentId: z.string().min(1),
  shard: z.number().int().min(0),
  version: z.number().int().min(1),
  nonce: z.string().min(1),
  epoch: z.number().int().min(0),
  writer: writerSchema.nullable(),
  /** Milliseconds since the Unix epoch; the writer's lease is live while now <= this. */
  leaseExpiresAt: z.number().int().min(0),
  /** Segments with seqno < logStart may be deleted; readers never read below it. */
  logStart: seqno,
  snapshot: snapshotPointerSchema.nullable(),
  /** Some seqno <= the real tail: where a reader may start probing for the end. */
  tailHint: z.number().int().min(-1),
  /** The fences of recent epochs, by increasing epoch (absent in manifests of older nodes). */
  fences: z.array(fenceRecordSchema).max(FENCE_RECORDS_MAX).default([]),
  /**
   * A branch's shard (DESIGN.md §10a): the deployments, nearest first, whose segments and
   * snapshot parts its log starts with (read through the store's parent link). Their
   * headers name those deployments, and are accepted as this shard's own.
   */
  inheritedFrom: z.array(z.string().min(1)).max(16).default([]),
  /**
   * Set by the owner's GC pass before it deletes anything, cleared after (collectGarbage):
   * a branch being created waits until no pass that may not have seen its registration
   * is still deleting.
   */
  collecting: z.object({ epoch: z.number().int().min(0), sinceMs: z.number().int().min(0) }).nullable().default(null),
});

export type Manifest = z.infer<typeof manifestSchema>;
export type WriterIdentity = z.infer<typeof writerSchema>;
export type SnapshotPointer = z.infer<typeof snapshotPointerSchema>;
export type FenceRecord = z.infer<typeof fenceRecordSchema>;

export const manifestCodec: CasCodec<Manifest> = jsonCasCodec(manifestSchema, "MANIFEST_INVALID", "manifest");

/** A new shard's manifest: no writer, epoch 0, an empty log starting at seqno 0. */
export function initialManifestFields(deploymentId: string, shard: number): CasFields<Manifest> {
  return {
    format: MANIFEST_FORMAT,
    deploymentId,
    shard,
    epoch: 0,
    writer: null,
    leaseExpiresAt: 0,
    logStart: 0,
    snapshot: null,
    tailHint: -1,
    fences: [],
    inheritedFrom: [],
    collecting: null,
  };
}

/**
 * The manifest of a fresh log that starts from a snapshot (a reshard's or restore's new
 * shard): the snapshot stands for seqno 0, the log starts after it, nobody writes yet.
 */
export function firstManifestFields(deploymentId: string, shard: number, snapshot: SnapshotPointer): CasFields<Manifest> {
  return { ...initialManifestFields(deploymentId, shard), logStart: 1, snapshot, tailHint: 0 };
}

export function isLeaseLive(manifest: Manifest, nowMs: number): boolean {
  return manifest.writer !== null && nowMs <= manifest.leaseExpiresAt;
}

/** `fences` with `record` added (replacing any record of an equal or later epoch), newest kept. */
export function withFenceRecord(fences: readonly FenceRecord[], record: FenceRecord): FenceRecord[] {
  return [...fences.filter((fence) => fence.epoch < record.epoch), record].slice(-FENCE_RECORDS_MAX);
}
