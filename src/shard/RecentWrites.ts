import { firstAfterTs } from "../base/index.js";
import type { ReadSet, WrittenKey } from "./WriteUnit.js";
import { WrittenKeyIndex } from "./WrittenKeyIndex.js";

/**
 * The keys written by recently committed units, for optimistic-concurrency checks
 * (DESIGN.md §7): a transaction that read at `readTs` conflicts with every write
 * committed after `readTs` that touches what it read.
 *
 * Invariant: `horizonTs` is the highest ts ever evicted; a transaction whose `readTs`
 * is below it cannot be checked and is treated as conflicting (it re-runs on a fresh
 * snapshot), never as clean. `newest` holds, for every key of a unit not yet evicted,
 * the newest ts that wrote it.
 */
interface CommittedUnit {
  readonly ts: number;
  /** Its place in the writer's queue (0: none); seqs increase with ts. */
  readonly seq: number;
  readonly keys: readonly WrittenKey[];
}

/** What an evicted unit's slot holds until it is compacted away. */
const NO_KEYS: readonly WrittenKey[] = [];

export class RecentWrites {
  private units: CommittedUnit[] = [];
  private head = 0;
  private horizonTs = 0;
  private readonly newest = new WrittenKeyIndex();
  /** Written keys of the units held (a key written by two units counts twice). */
  private keys = 0;

  constructor(
    /** Units kept at most; older ones are evicted first. */
    private readonly unitsMax: number,
    /** Units older than this many microseconds below the newest are evicted. */
    private readonly windowMicros: number,
    /**
     * Written keys kept at most (~250 bytes each): what bounds memory when units are large
     * (a bulk insert's unit writes thousands of keys; 100,000 such units would be GiBs).
     */
    private readonly keysMax = Number.POSITIVE_INFINITY,
  ) {}

  /** Written keys of the units held. */
  get keysHeld(): number {
    return this.keys;
  }

  /** Records a committed unit; `ts` (and `seq`, when given) must exceed every earlier one. */
  add(ts: number, keys: readonly WrittenKey[], seq = 0): void {
    this.units.push({ ts, seq, keys });
    this.keys += keys.length;
    this.newest.update(keys, (current) => Math.max(current ?? 0, ts));
    this.evict(ts);
  }

  /** Whether a write committed after `readTs` touches what `readSet` covers: O(read set), not O(writes). */
  touches(readTs: number, readSet: ReadSet): boolean {
    if (readTs < this.horizonTs) return true;
    return this.newest.touches(readSet, (ts) => ts > readTs);
  }

  /** Whether a write committed after `readTs` satisfies `conflictsWith` (O(writes since readTs)). */
  conflicts(readTs: number, conflictsWith: (key: WrittenKey) => boolean): boolean {
    if (readTs < this.horizonTs) return true;
    for (let index = this.firstAfter(readTs); index < this.units.length; index++) {
      if (this.units[index]!.keys.some(conflictsWith)) return true;
    }
    return false;
  }

  /** The ts the unit of queue seq `seq` committed at, or null when it is not held (evicted, or never added). */
  tsOfSeq(seq: number): number | null {
    let low = this.head;
    let high = this.units.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.units[middle]!.seq < seq) low = middle + 1;
      else high = middle;
    }
    const unit = this.units[low];
    return unit !== undefined && unit.seq === seq ? unit.ts : null;
  }

  /** Forgets everything: after a restore the history these keys described is gone. */
  reset(horizonTs: number): void {
    this.units = [];
    this.head = 0;
    this.keys = 0;
    this.horizonTs = horizonTs;
    this.newest.clear();
  }

  private firstAfter(readTs: number): number {
    return firstAfterTs(this.units, this.head, readTs);
  }

  private evict(newestTs: number): void {
    while (
      this.head < this.units.length &&
      (this.units.length - this.head > this.unitsMax || this.keys > this.keysMax || this.units[this.head]!.ts < newestTs - this.windowMicros)
    ) {
      const evicted = this.units[this.head]!;
      this.horizonTs = Math.max(this.horizonTs, evicted.ts);
      this.keys -= evicted.keys.length;
      // Its slot is compacted away later: drop its keys now.
      this.units[this.head] = { ts: evicted.ts, seq: evicted.seq, keys: NO_KEYS };
      // A key written again later keeps that later ts.
      this.newest.update(evicted.keys, (current) => (current === evicted.ts ? undefined : current));
      this.head++;
    }
    // Compact occasionally so the array does not grow without bound.
    if (this.head > 1024 && this.head * 2 > this.units.length) {
      this.units = this.units.slice(this.head);
      this.head = 0;
    }
  }
}
