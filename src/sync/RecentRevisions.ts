import { firstAfterTs, SYNC_RECENT_REVISIONS_BYTES_MAX, SYNC_RECENT_REVISIONS_MAX } from "../base/index.js";
import type { DocumentRevision } from "../model/index.js";

/** Per revision: what the fields beyond its value's text cost (an estimate). */
const REVISION_OVERHEAD_BYTES = 96;

/**
 * The documents recent commits wrote, in the order the sync handler announced them (ts
 * order): what moves a diffable subscription from its result's ts to a commit's (DiffState).
 *
 * Invariants: revisions are kept in ascending ts; at most SYNC_RECENT_REVISIONS_MAX of
 * them and SYNC_RECENT_REVISIONS_BYTES_MAX of text; `knownAfterTs` is the highest ts
 * whose revisions may be missing (evicted, or a replaced store's), and a window starting
 * below it is answered null: the subscription runs again.
 */
export class RecentRevisions {
  private readonly revisions: DocumentRevision[] = [];
  private head = 0;
  private bytes = 0;
  private knownAfterTs = -1;

  /** The revisions of a commit (announced after every commit of a lower ts). */
  add(batch: readonly DocumentRevision[]): void {
    // A segment lists its units in commit order; sorted anyway if not, since windows are cut by ts.
    const revisions = batch.every((revision, at) => at === 0 || batch[at - 1]!.ts <= revision.ts) ? batch : [...batch].sort((a, b) => a.ts - b.ts);
    const last = this.revisions.at(-1);
    // Never expected (commits are announced in ts order), but a window could not be cut right: distrust what came before.
    if (last !== undefined && revisions.length > 0 && revisions[0]!.ts < last.ts) this.knownAfterTs = Math.max(this.knownAfterTs, last.ts);
    for (const revision of revisions) {
      this.revisions.push(revision);
      this.bytes += revisionBytes(revision);
    }
    while (this.revisions.length - this.head > SYNC_RECENT_REVISIONS_MAX || (this.bytes > SYNC_RECENT_REVISIONS_BYTES_MAX && this.revisions.length - this.head > 0)) {
      const oldest = this.revisions[this.head++]!;
      this.bytes -= revisionBytes(oldest);
      // Its commit may have other revisions still kept: the whole ts counts as unknown.
      this.knownAfterTs = Math.max(this.knownAfterTs, oldest.ts);
    }
    if (this.head > 4096 && this.head * 2 > this.revisions.length) {
      this.revisions.splice(0, this.head);
      this.head = 0;
    }
  }

  /** What was written through `ts` is unknown (a store replaced as a whole, new code): no window below it is answered. */
  unknownThrough(ts: number): void {
    this.knownAfterTs = Math.max(this.knownAfterTs, ts);
  }

  /** The revisions with `fromTs < ts <= toTs` in ts order; null when some of them are no longer known. */
  between(fromTs: number, toTs: number): DocumentRevision[] | null {
    if (fromTs < this.knownAfterTs) return null;
    const found: DocumentRevision[] = [];
    for (let at = firstAfterTs(this.revisions, this.head, fromTs); at < this.revisions.length && this.revisions[at]!.ts <= toTs; at++) found.push(this.revisions[at]!);
    return found;
  }
}

function revisionBytes(revision: DocumentRevision): number {
  return REVISION_OVERHEAD_BYTES + 2 * (revision.id.length + (revision.value?.length ?? 0));
}
