import { CairnError, type Clock, type Timer, LOG_FEED_FLUSH_INTERVAL_MS, LOG_FEED_FRAME_ENTRIES_MAX, LOG_FEED_FRAME_BYTES_MAX, LOG_FEED_PENDING_ENTRIES_MAX, LOG_FEED_PENDING_BYTES_MAX } from "../base/index.js";
import type { LogRing } from "./LogRing.js";
import type { LogEntry } from "./protocol.js";

/**
 * One subscriber's live view of the node's function log (an admin session's
 * `SubscribeLogs`, docs/admin-api.md): the ring's newest entries at once, then every new
 * one, in `LogEntries` frames.
 *
 * A flood of calls costs the subscriber a bounded amount: frames go out at most every
 * LOG_FEED_FLUSH_INTERVAL_MS, each with at most LOG_FEED_FRAME_ENTRIES_MAX entries and
 * LOG_FEED_FRAME_BYTES_MAX bytes (but at least one entry); entries wait in a buffer of at
 * most LOG_FEED_PENDING_ENTRIES_MAX entries and LOG_FEED_PENDING_BYTES_MAX bytes, past
 * which the oldest waiting ones are dropped and counted. So at most ~4 frames a second,
 * ~800 entries a second, reach a page however fast the node logs.
 *
 * Lifecycle: `idle` → start() → `live` → stop() → `stopped` (stop() from any state; a
 * `send` that throws during a flush also stops the feed: its session is gone).
 *
 * Invariants: entries are sent in id order, each at most once; `dropped` in every frame is
 * the number of entries this feed skipped so far (never decreasing); while live, a timer is
 * armed exactly when entries or an untold drop wait; after stop no frame is sent and no
 * timer or ring subscription is left.
 */

export interface LogEntriesFrame {
  readonly type: "LogEntries";
  /** Oldest first. */
  readonly entries: LogEntry[];
  /** Entries this feed skipped so far because its subscriber fell behind. */
  readonly dropped: number;
}


interface Waiting {
  readonly entry: LogEntry;
  readonly bytes: number;
}

type FeedState = "idle" | "live" | "stopped";

export class LogFeed {
  private state: FeedState = "idle";
  private readonly pending: Waiting[] = [];
  private pendingBytes = 0;
  private skipped = 0;
  private skippedTold = 0;
  private timer: Timer | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly ring: LogRing,
    private readonly clock: Clock,
    private readonly send: (frame: LogEntriesFrame) => void,
  ) {}

  /** Entries skipped so far. */
  get dropped(): number {
    return this.skipped;
  }

  /** Entries waiting for a frame. */
  get waiting(): number {
    return this.pending.length;
  }

  /** Sends the ring's newest entries at once, then follows the ring. */
  start(): void {
    if (this.state !== "idle") throw new CairnError("INTERNAL", `a log feed starts once (it is ${this.state})`);
    this.state = "live";
    try {
      this.send({ type: "LogEntries", entries: this.ring.newest(LOG_FEED_FRAME_ENTRIES_MAX, LOG_FEED_FRAME_BYTES_MAX), dropped: 0 });
    } catch (error) {
      this.stop();
      throw error;
    }
    this.unsubscribe = this.ring.subscribe((entry, bytes) => this.take(entry, bytes));
  }

  /** Ends the feed: nothing more is sent; the timer and the ring subscription are released. Idempotent. */
  stop(): void {
    this.state = "stopped";
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.timer?.cancel();
    this.timer = null;
    this.pending.length = 0;
    this.pendingBytes = 0;
  }

  private take(entry: LogEntry, bytes: number): void {
    if (this.state !== "live") return;
    this.pending.push({ entry, bytes });
    this.pendingBytes += bytes;
    while (this.pending.length > LOG_FEED_PENDING_ENTRIES_MAX || (this.pendingBytes > LOG_FEED_PENDING_BYTES_MAX && this.pending.length > 0)) {
      this.pendingBytes -= this.pending.shift()!.bytes;
      this.skipped++;
    }
    this.timer ??= this.clock.setTimer(LOG_FEED_FLUSH_INTERVAL_MS, () => this.flush());
  }

  /** Sends the oldest waiting entries that fit in a frame; re-arms the timer if more wait. */
  private flush(): void {
    this.timer = null;
    if (this.state !== "live") return;
    const entries: LogEntry[] = [];
    let bytes = 0;
    while (this.pending.length > 0 && entries.length < LOG_FEED_FRAME_ENTRIES_MAX) {
      const next = this.pending[0]!;
      if (entries.length > 0 && bytes + next.bytes > LOG_FEED_FRAME_BYTES_MAX) break;
      this.pending.shift();
      this.pendingBytes -= next.bytes;
      bytes += next.bytes;
      entries.push(next.entry);
    }
    if (entries.length === 0 && this.skipped === this.skippedTold) return;
    this.skippedTold = this.skipped;
    try {
      this.send({ type: "LogEntries", entries, dropped: this.skipped });
    } catch {
      // The subscriber cannot be reached any more (its session closed): nothing to tell it.
      this.stop();
      return;
    }
    if (this.pending.length > 0) this.timer = this.clock.setTimer(LOG_FEED_FLUSH_INTERVAL_MS, () => this.flush());
  }
}
