import { type Clock, ConditionWaiters, VOUCHED_SEGMENT_BYTES_MAX } from "../base/index.js";
import type { DeliveredSegment } from "../segments/index.js";
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
 * comes costs at most `expectWaitMs` of latency. Bytes a hint carried are kept with
 * their hash and read instead of the slot (`segmentAt`); bytes that do not hash to it
 * are ignored by the reader, which then reads the slot.
 *
 * Bounded: entries below the reader's position are dropped, at most `entriesMax` of
 * each kind are kept (the lowest seqnos go first), and at most `bytesMax` of segment
 * bytes (the lowest seqnos lose theirs first, and are read from the bucket).
 */
export class WriterVouches implements Vouching {
  private readonly hashes = new Map<number, string>();
  /** Segment bytes hints carried, by seqno (each also in `hashes`). */
  private readonly segments = new Map<number, Uint8Array>();
  private segmentBytes = 0;
  /** Announced vouches: seqno → monotonic ms after which it is no longer waited for. */
  private readonly announced = new Map<number, number>();
  private readonly waiters: ConditionWaiters;

  constructor(
    private readonly clock: Clock,
    private readonly expectWaitMs: number,
    private readonly entriesMax = 256,
    private readonly bytesMax = VOUCHED_SEGMENT_BYTES_MAX,
  ) {
    this.waiters = new ConditionWaiters(clock);
  }

  /** The writer verified the segment at `seqno` durable; its hash is `hash` (its bytes `segment`, when sent). */
  vouch(seqno: number, hash: string, segment?: Uint8Array): void {
    this.hashes.set(seqno, hash);
    this.announced.delete(seqno);
    this.dropSegment(seqno);
    if (segment !== undefined && segment.byteLength <= this.bytesMax) {
      this.segments.set(seqno, segment);
      this.segmentBytes += segment.byteLength;
      while (this.segmentBytes > this.bytesMax) this.dropSegment(Math.min(...this.segments.keys()));
    }
    for (const dropped of trim(this.hashes, this.entriesMax)) this.dropSegment(dropped);
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
    for (const seqno of this.segments.keys()) if (seqno < nextSeqno) this.dropSegment(seqno);
    if (dropped) this.waiters.notify();
  }

  get size(): number {
    return this.hashes.size + this.announced.size;
  }

  hashAt(seqno: number): string | undefined {
    return this.hashes.get(seqno);
  }

  segmentAt(seqno: number): DeliveredSegment | undefined {
    const bytes = this.segments.get(seqno);
    const hash = this.hashes.get(seqno);
    return bytes === undefined || hash === undefined ? undefined : { bytes, hash };
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
    this.segments.clear();
    this.segmentBytes = 0;
    this.waiters.settleAll();
  }

  private dropSegment(seqno: number): void {
    const bytes = this.segments.get(seqno);
    if (bytes === undefined) return;
    this.segments.delete(seqno);
    this.segmentBytes -= bytes.byteLength;
  }
}

/** Drops the lowest seqnos past `entriesMax`; returns them. */
function trim(map: Map<number, unknown>, entriesMax: number): number[] {
  const dropped: number[] = [];
  while (map.size > entriesMax) {
    const lowest = Math.min(...map.keys());
    map.delete(lowest);
    dropped.push(lowest);
  }
  return dropped;
}
