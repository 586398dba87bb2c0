/**
 * Where everything lives in the bucket (DESIGN.md §2). Keys are relative to the store's
 * root: the store URL's prefix is the deployment's root prefix.
 *
 * Seqnos are zero-padded to 20 digits so that lexical order is numeric order and LIST
 * returns segments in log order.
 */

const SEQNO_DIGITS = 20;

export function formatSeqno(seqno: number): string {
  return String(seqno).padStart(SEQNO_DIGITS, "0");
}

export const bucketLayout = {
  globals: () => "globals",
  /** The deployment's schema catalog: table and index numbers (functions/catalog). */
  schemaCatalog: () => "schema",
  manifest: (shard: number) => `s${shard}/manifest`,
  logPrefix: (shard: number) => `s${shard}/log/`,
  segment: (shard: number, seqno: number) => `s${shard}/log/${formatSeqno(seqno)}`,
  snapshotsPrefix: (shard: number) => `s${shard}/snap/`,
  /** One snapshot attempt; the attempt id keeps a crashed attempt's parts from colliding. */
  snapshotPrefix: (shard: number, seqno: number, attemptId: string) =>
    `s${shard}/snap/${formatSeqno(seqno)}/${attemptId}/`,
  snapshotPart: (prefix: string, part: number) => `${prefix}part-${String(part).padStart(6, "0")}`,
  /**
   * Records of complete snapshots, one per attempt that finished its parts, named by seqno
   * then attempt so that LIST returns them oldest first. They outlive the manifest's
   * pointer: retention (gc/retentionPlan) and restores choose among them.
   */
  snapshotRecordsPrefix: (shard: number) => `s${shard}/snapshots/`,
  snapshotRecord: (shard: number, seqno: number, attemptId: string) => `s${shard}/snapshots/${formatSeqno(seqno)}-${attemptId}`,
  consumersPrefix: (shard: number) => `s${shard}/consumers/`,
  consumer: (shard: number, consumerId: string) => `s${shard}/consumers/${consumerId}`,
  node: (nodeId: string) => `nodes/${nodeId}`,
  /** A branch's registration in its parent's root (BranchRegistry): what of the parent it holds, until when. */
  branchRegistrationsPrefix: () => "branches/",
  branchRegistration: (branchId: string) => `branches/${branchId}`,
  /** Present while `cairn restore` or `cairn branch` fills this root with a new deployment (globals come last). */
  restoring: () => "restoring",
} as const;

/** The seqno of a segment key under `logPrefix(shard)`, or null for a stray key. */
export function parseSegmentSeqno(shard: number, key: string): number | null {
  const prefix = bucketLayout.logPrefix(shard);
  if (!key.startsWith(prefix)) return null;
  const digits = key.slice(prefix.length);
  if (!/^\d{20}$/.test(digits)) return null;
  const seqno = Number(digits);
  return Number.isSafeInteger(seqno) ? seqno : null;
}

/** The seqno a snapshot key belongs to (`s{shard}/snap/{seqno}/…`), or null. */
export function parseSnapshotSeqno(shard: number, key: string): number | null {
  const prefix = bucketLayout.snapshotsPrefix(shard);
  if (!key.startsWith(prefix)) return null;
  const match = /^(\d{20})\//.exec(key.slice(prefix.length));
  if (!match) return null;
  const seqno = Number(match[1]);
  return Number.isSafeInteger(seqno) ? seqno : null;
}

/** The attempt id of a snapshot part prefix (`s{shard}/snap/{seqno}/{attemptId}/`), or null. */
export function snapshotAttemptOf(shard: number, prefix: string): string | null {
  const match = /^(\d{20})\/([^/]+)\/$/.exec(prefix.slice(bucketLayout.snapshotsPrefix(shard).length));
  return prefix.startsWith(bucketLayout.snapshotsPrefix(shard)) && match ? match[2]! : null;
}
