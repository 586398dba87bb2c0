import { SYNC_RECENT_COMMITS_MAX, SYNC_RECENT_KEYS_MAX } from "../base/index.js";
import { IntervalIndex, type KeyRange } from "../model/index.js";

interface Commit {
  readonly ts: number;
  readonly writes: readonly KeyRange[];
}

/** What an evicted commit's slot holds until it is compacted away. */
const NO_WRITES: readonly KeyRange[] = [];

/**
 * The written keys of the last commits, oldest first. A query run at ts T installs its
 * read ranges in the subscription index only after it finished, by which time commits
 * above T may already have been matched against the index without it; `changedSince`
 * tells whether any of them touched what the run read.
 *
 * Invariants: commits are kept in ascending ts; at most SYNC_RECENT_COMMITS_MAX commits
 * and SYNC_RECENT_KEYS_MAX keys are kept; `evictedThroughTs` is the highest ts dropped,
 * and a question about anything at or before it is answered "changed" (a spare re-run,
 * never a missed update).
 */
export class RecentCommits {
  private readonly commits: Commit[] = [];
  private head = 0;
  private keys = 0;
  private evictedThroughTs = -1;

  add(ts: number, writes: readonly KeyRange[]): void {
    if (writes.length === 0) return;
    this.commits.push({ ts, writes });
    this.keys += writes.length;
    while (this.commits.length - this.head > SYNC_RECENT_COMMITS_MAX || (this.keys > SYNC_RECENT_KEYS_MAX && this.commits.length - this.head > 1)) {
      const oldest = this.commits[this.head]!;
      // Its slot is compacted away later: drop its ranges now.
      this.commits[this.head++] = { ts: oldest.ts, writes: NO_WRITES };
      this.keys -= oldest.writes.length;
      this.evictedThroughTs = oldest.ts;
    }
    if (this.head > 1024 && this.head * 2 > this.commits.length) {
      this.commits.splice(0, this.head);
      this.head = 0;
    }
  }

  /**
   * The whole state was replaced at `ts` (a snapshot restore): what changed below it is
   * unknown, so every question about an earlier ts is answered "changed".
   */
  replacedAt(ts: number): void {
    this.evictedThroughTs = Math.max(this.evictedThroughTs, ts);
    while (this.head < this.commits.length && this.commits[this.head]!.ts <= ts) {
      this.keys -= this.commits[this.head]!.writes.length;
      this.head++;
    }
  }

  /** Whether a commit above `ts` wrote a key inside `reads` (true when that is no longer known). */
  changedSince(ts: number, reads: readonly KeyRange[]): boolean {
    if (this.evictedThroughTs > ts) return true;
    const newer = this.newerThan(ts);
    if (newer.length === 0 || reads.length === 0) return false;
    const index = new IntervalIndex<true>();
    for (const range of reads) index.insert(range, true);
    return newer.some((commit) => commit.writes.some((write) => index.overlapping(write).length > 0));
  }

  private newerThan(ts: number): Commit[] {
    const found: Commit[] = [];
    for (let at = this.commits.length - 1; at >= this.head && this.commits[at]!.ts > ts; at--) found.push(this.commits[at]!);
    return found;
  }
}
