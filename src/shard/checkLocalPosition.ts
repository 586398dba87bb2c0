import type { LocalMeta } from "../local/index.js";
import type { Manifest } from "../manifest/index.js";
import type { ObjectStore } from "../objectstore/index.js";
import { readSegment } from "../segments/index.js";

/**
 * On open (a warm restart), and on a running follower (ShardEngine.confirmPosition), whether the local file's position still describes the
 * bucket's log (DESIGN.md §4 Open). A bucket restored from an older backup while nodes
 * kept their files, or a local file from another copy of the bucket, must not be trusted:
 * a writer would fence past the hole (acknowledged writes invisible to fresh readers), and
 * a file with a newer epoch would skip the bucket's new segments as fenced leftovers.
 *
 * The position (appliedSeqno a, epoch, lastHash) agrees when some witness in the bucket
 * confirms it, cheapest first:
 * - the local epoch is not above the manifest's (epochs only grow);
 * - a >= logStart: segment a exists and has the recorded hash (or is a leftover of an
 *   older epoch, which the local copy skipped);
 * - a = logStart - 1: the snapshot is at a with that hash, or segment a+1 chains to it;
 * - a < logStart - 1: a snapshot at or above logStart - 1 exists, and catch-up replaces
 *   the whole local state with it, so nothing of the file survives to be checked.
 */
export type PositionCheck = { readonly kind: "agrees" } | { readonly kind: "disagrees"; readonly reason: string };

const AGREES: PositionCheck = { kind: "agrees" };

export async function checkLocalPosition(
  store: ObjectStore,
  deploymentId: string,
  meta: LocalMeta,
  manifest: Manifest,
): Promise<PositionCheck> {
  const applied = meta.appliedSeqno;
  if (applied < 0) return AGREES;
  const disagrees = (reason: string): PositionCheck => ({ kind: "disagrees", reason });
  if (meta.epoch > manifest.epoch) {
    return disagrees(`the local copy holds epoch ${meta.epoch}, newer than the bucket's epoch ${manifest.epoch} (was the bucket restored from an older copy?)`);
  }
  const read = (seqno: number) => readSegment(store, { deploymentId, shard: meta.shard, seqno, inheritedFrom: manifest.inheritedFrom });
  if (applied >= manifest.logStart) {
    const segment = await read(applied);
    if (segment === null) return disagrees(`the local copy applied segment ${applied}, which the bucket does not hold (was the bucket restored from an older copy?)`);
    // A fenced writer's leftover the local copy skipped (its hash was never the chain's):
    // the next valid segment's link to lastHash checks the rest.
    if (segment.hash !== meta.lastHash && segment.header.epoch < meta.epoch) return AGREES;
    if (segment.hash !== meta.lastHash) return disagrees(`segment ${applied} in the bucket is not the one the local copy applied`);
    return AGREES;
  }
  if (applied === manifest.logStart - 1) {
    const snapshot = manifest.snapshot;
    if (snapshot !== null && snapshot.seqno === applied) {
      return snapshot.hash === meta.lastHash ? AGREES : disagrees(`the snapshot at ${applied} does not end with the segment the local copy applied`);
    }
    const next = await read(applied + 1);
    if (next !== null && next.header.prevHash === meta.lastHash) return AGREES;
    return disagrees(`segment ${applied + 1} in the bucket does not follow the segment the local copy applied at ${applied}`);
  }
  const snapshot = manifest.snapshot;
  if (snapshot !== null && snapshot.seqno + 1 >= manifest.logStart) return AGREES;
  return disagrees(`the local copy stopped at ${applied}, below the log's start ${manifest.logStart}, and no snapshot covers the gap`);
}
