import { type Clock, ConditionWaiters } from "../base/index.js";
import type { Vouching } from "../shard/index.js";

/**
 * What a shard's writer told this replica in its wake hints (WakeHintSender): segments
 * it verified durable, by seqno and hash, and segments it created and is verifying. The
 * tailer's catch-up applies a vouched segment whose bytes hash to the vouched hash
 * without a manifest read, and waits (at most `expectWaitMs`) for a vouch that was
 * announced instead of making that read itself (CatchUpOptions `vouching`).
 *
 * Only hints of an authenticated writer (the admin key) belong here. A wrong hash costs
 * nothing but the manifest read it would have saved; an announced vouch that never
 * comes costs at most `expectWaitMs` of latency.
 *
 * Bounded: entries below the reader's position are dropped, and at most `entriesMax` of
 * each kind are kept (the lowest seqnos go first).
 */
export class WriterVouches implements Vouching {
  private readonly hashes = new Map<number, string>();
  /** Announced vouches: seqno → monotonic ms after which it is no longer waited for. */
  private readonly announced = new Map<number, number>();
  private readonly waiters: ConditionWaiters;

  constructor(
    private readonly clock: Clock,
    private readonly expectWaitMs: number,
    private readonly entriesMax = 256,
  ) {
    this.waiters = new ConditionWaiters(clock);
  }

  /** The writer verified the segment at `seqno` durable; its hash is `hash`. */
  vouch(seqno: number, hash: string): void {
    this.hashes.set(seqno, hash);
    this.announced.delete(seqno);
    trim(this.hashes, this.entriesMax);
    this.waiters.notify();
  }

  /** The writer created the segment at `seqno` and is verifying it: a vouch should follow. */
  announce(seqno: number): void {
    if (this.hashes.has(seqno)) return;
    this.announced.set(seqno, this.clock.monotonicMs() + this.expectWaitMs);
    trim(this.announced, this.entriesMax);
  }

  /** Drops what lies below `nextSeqno` (already applied or skipped). */
  forgetBelow(nextSeqno: number): void {
    let dropped = false;
    for (const map of [this.hashes, this.announced]) {
      for (const seqno of map.keys()) {
        if (seqno < nextSeqno) {
          map.delete(seqno);
          dropped = true;
        }
      }
    }
    if (dropped) this.waiters.notify();
  }

  get size(): number {
    return this.hashes.size + this.announced.size;
  }

  hashAt(seqno: number): string | undefined {
    return this.hashes.get(seqno);
  }

  expected(seqno: number): boolean {
    const until = this.announced.get(seqno);
    return until !== undefined && this.clock.monotonicMs() < until;
  }

  async settled(seqnos: readonly number[]): Promise<void> {
    const nowMs = this.clock.monotonicMs();
    const untilMs = Math.max(nowMs, ...seqnos.map((seqno) => this.announced.get(seqno) ?? nowMs));
    const done = () => seqnos.every((seqno) => this.hashes.has(seqno) || !this.announced.has(seqno));
    if (!(await this.waiters.wait(done, untilMs - nowMs))) {
      // Never came (the writer died or found the segment not durable): judge by the manifest.
      for (const seqno of seqnos) this.announced.delete(seqno);
    }
  }

  newest(from: number, to: number): number | null {
    let newest: number | null = null;
    for (const seqno of [...this.hashes.keys(), ...this.announced.keys()]) {
      if (seqno >= from && seqno <= to && (newest === null || seqno > newest) && (this.hashes.has(seqno) || this.expected(seqno))) newest = seqno;
    }
    return newest;
  }

  /** Ends every wait at once (the tailer stops). */
  settleAll(): void {
    this.announced.clear();
    this.waiters.settleAll();
  }
}

function trim(map: Map<number, unknown>, entriesMax: number): void {
  while (map.size > entriesMax) map.delete(Math.min(...map.keys()));
}
