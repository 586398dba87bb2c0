import { type Clock, ConditionWaiters, CairnError, hasErrorCode } from "../base/index.js";
import type { ConsumerWatermarks } from "../gc/index.js";
import type { Segment, LogPosition } from "../segments/index.js";
import type { CatchUpReport, Vouching, EngineState } from "../shard/index.js";

import { WriterVouches } from "./WriterVouches.js";

/**
 * The log of `shard` reached `seqno` (a writer's wake hint; the messages that carry it are
 * in src/fleet/peerMessages.ts). `hash`: that segment's, verified durable by the writer;
 * `segment`: its bytes, sent along when small enough (HINT_SEGMENT_BYTES_MAX), so the
 * follower applies it without reading it. `verifying`: the segment was created and its
 * verification is under way; a hint with its hash follows (or none, if it turned out
 * not durable).
 */
export interface WakeHint {
  readonly shard: number;
  readonly seqno: number;
  readonly hash?: string;
  readonly segment?: Uint8Array;
  readonly verifying?: true;
}

/** What a tailer needs of its shard's engine (a ShardEngine in "following" state). */
export interface TailedEngine {
  readonly shard: number;
  readonly state: EngineState;
  readonly position: LogPosition;
  readonly readTs: number;
  readonly watermarkStore: ConsumerWatermarks;
  catchUpToTail(options?: { readonly refreshWhenEmpty?: boolean; readonly vouching?: Vouching }): Promise<CatchUpReport>;
  /** Judges the local copy against the manifest and rebuilds it if the bucket went back (the seqno rebuilt at, or null). */
  confirmPosition(): Promise<number | null>;
  onSegmentApplied(listener: (segment: Segment) => void): () => void;
  onRestored(listener: (frontierTs: number) => void): () => void;
}

export interface TailerTuning {
  /**
   * Longest wait between polls of a quiet tail. Default 1 s: 3,600 GETs per shard-hour
   * (~$0.0014 at S3 Standard's $0.0004 / 1,000) and ~0.5 s of extra latency on average
   * when wake hints are lost.
   */
  readonly idlePollMs: number;
  /** First wait after a poll that found nothing, doubling up to idlePollMs. Default 25 ms. */
  readonly firstBackoffMs: number;
  /**
   * While the tail is quiet, re-read the manifest at most this often (a poll that finds
   * segments always re-reads it). It notices GC collecting the empty slot a replica
   * waits at, a new snapshot to restore, and a bucket restored from an older copy (the
   * local position is judged against it: ShardEngine.confirmPosition, one more GET only
   * when the manifest's tail hint lags the position). Default 15 s: 240 conditional GETs
   * an hour.
   */
  readonly manifestRefreshMs: number;
  /**
   * Publish the consumer watermark at most this often while applying. Default 30 s: a
   * busy replica costs 120 PUTs an hour per shard (~$0.44 a month; at 1 s it would be
   * ~$13), and GC, which runs every minute and honours a watermark for 24 h, only keeps
   * up to 30 s more log for it.
   */
  readonly watermarkIntervalMs: number;
}

/** A watermark unchanged for this long is published again (well inside the 24 h consumer TTL). */
const WATERMARK_RENEWAL_MS = 60 * 60 * 1000;

/**
 * How long a round waits for the vouch of a segment its writer announced it is verifying
 * (one manifest read on the writer's side, running beside our GET) before it reads the
 * manifest itself.
 */
const ANNOUNCED_VOUCH_WAIT_MS = 1_000;

/**
 * A writer that hinted within this many idle polls is trusted to hint the next segment
 * too: the tailer then waits for that hint (or idlePollMs) instead of polling the empty
 * slot after the tail right away and backing off from firstBackoffMs. Under load that
 * saves two to four 404 GETs per segment (measured by bench:fleet); a hint lost while
 * trusted costs up to idlePollMs, as a lost hint always could.
 */
const HINTS_TRUSTED_POLLS = 3;

/**
 * The reason a wait of the poll loop is cut short with: one constant, because an abort
 * without a reason builds a DOMException with a stack trace, once per wake hint.
 */
const WOKEN = Symbol("woken");

export const TAILER_DEFAULTS: TailerTuning = {
  idlePollMs: 1_000,
  firstBackoffMs: 25,
  manifestRefreshMs: 15_000,
  watermarkIntervalMs: 30_000,
};

export interface ShardTailerOptions {
  readonly engine: TailedEngine;
  /** This node's id: the name of its watermark under `consumers/`. */
  readonly consumerId: string;
  readonly clock: Clock;
  readonly tuning?: Partial<TailerTuning>;
  /** A poll or a watermark publish failed (the tailer goes on; the error shows in `status`). */
  readonly onError?: (error: unknown, during: "poll" | "watermark") => void;
  /** Whether to publish a watermark (default true; a node that will take over publishes too). */
  readonly publishWatermarks?: boolean;
}

export interface TailerStatus {
  readonly shard: number;
  /** "paused" while this node writes the shard: its own commits keep the store current. */
  readonly state: "tailing" | "paused" | "stopped";
  readonly appliedSeqno: number;
  readonly frontierTs: number;
  /**
   * How long ago the local copy was last known complete: the start of the last poll that
   * reached an empty slot at the local position. Null before the first such poll.
   */
  readonly stalenessMs: number | null;
  readonly lastError: { readonly code: string; readonly message: string } | null;
  readonly segmentsApplied: number;
  readonly restores: number;
}

/**
 * Follows one shard's log into the local store (DESIGN.md §4 Tail): polls the next slot,
 * and through the engine's catch-up validates (checksum, chain, epoch), judges against a
 * manifest read after the GET, and applies; restores the newest snapshot when GC passed
 * the local position. Every applied segment reaches the engine's applied listeners (the
 * node's sync handler) before anything here moves on: `waitFor` and the watermark only
 * advance after those listeners returned.
 *
 * Polling is adaptive: at once again after a poll that applied something, then waits
 * doubling from firstBackoffMs to idlePollMs while the tail is quiet. `wake` (a writer's
 * hint) cuts a wait short; a hint that carries the segment's hash (its writer verified
 * it durable) lets the round apply that segment without a manifest read, and a hint that
 * the writer is verifying a segment it created makes the round GET it at once and wait
 * for that vouch (WriterVouches). A failed poll (unreachable bucket, corrupt segment) is
 * reported, retried at idlePollMs, and never applies anything; the local copy keeps
 * serving what it has, and `status().stalenessMs` says how old that is.
 *
 * Lifecycle: created stopped; start → tailing → stop (final). While this node writes the
 * shard the loop makes no requests. stop waits for a poll in progress and, if asked,
 * removes the watermark.
 */
export class ShardTailer {
  readonly tuning: TailerTuning;
  private state: "tailing" | "stopped" = "stopped";
  private loop: Promise<void> | null = null;
  private sleeping: AbortController | null = null;
  private wakeRequested = false;
  /**
   * The highest seqno a hint named since the last poll began: if it is at or past the
   * position and the next slot reads empty, GC may have passed us.
   */
  private hintedThrough = -1;
  /** When the last wake hint came (monotonic ms). */
  private lastHintAtMs = Number.NEGATIVE_INFINITY;
  /** The highest seqno a hint named, and when that hint came. */
  private newestHint = { seqno: -1, atMs: Number.NEGATIVE_INFINITY };
  /** What the writer's hints vouched for, at or past the position. */
  private readonly vouches: WriterVouches;
  private lastManifestReadMs = Number.NEGATIVE_INFINITY;
  private caughtUpAtMs: number | null = null;
  private lastError: unknown = null;
  private segmentsApplied = 0;
  private restores = 0;
  private publishedSeqno: number | null = null;
  private publishedAtMs = Number.NEGATIVE_INFINITY;
  private watermarkScheduled = false;
  private watermarkWork: Promise<void> = Promise.resolve();
  private readonly stopping = new AbortController();
  private readonly waiters: ConditionWaiters;
  private readonly unlisten: (() => void)[];

  constructor(private readonly options: ShardTailerOptions) {
    this.tuning = { ...TAILER_DEFAULTS, ...options.tuning };
    for (const [name, value] of Object.entries(this.tuning)) {
      if (!Number.isSafeInteger(value) || value < 1) throw new CairnError("INVALID_ARGUMENT", `tailer ${name} must be a positive integer of ms, got ${String(value)}`);
    }
    const { engine } = options;
    this.waiters = new ConditionWaiters(options.clock);
    this.vouches = new WriterVouches(options.clock, ANNOUNCED_VOUCH_WAIT_MS);
    this.unlisten = [engine.onSegmentApplied(() => this.advanced()), engine.onRestored(() => this.advanced())];
  }

  get shard(): number {
    return this.options.engine.shard;
  }

  /** Starts (or resumes) polling. A stopped tailer stays stopped. */
  start(): void {
    if (this.state === "tailing" || this.stopping.signal.aborted) return;
    this.state = "tailing";
    this.watermarkDue();
    // A loop already running (a restart after stop is refused above) is only woken; a new
    // one polls at once by itself.
    if (this.loop !== null) this.wake();
    else this.loop = this.run().finally(() => (this.loop = null));
  }

  /** A hint that the log grew to `seqno` (a commit this node forwarded, or a writer's hint). */
  wake(seqno?: number): void {
    if (seqno !== undefined && seqno < this.options.engine.position.nextSeqno) return;
    if (seqno !== undefined) this.hintedThrough = Math.max(this.hintedThrough, seqno);
    this.wakeRequested = true;
    this.sleeping?.abort(WOKEN);
  }

  /**
   * A commit this node forwarded is durable at the writer: poll for it now, unless the
   * writer's hints are trusted (its hint brings the segment, often with its bytes, and a
   * poll now would mostly GET the empty slot before the segment is there).
   */
  committedElsewhere(): void {
    if (!this.hintsTrusted()) this.wake();
  }

  /**
   * A wake hint of the shard's writer, authenticated (WakeHintSender): its hash (and
   * bytes) vouch for the segment, so the next round applies it without a manifest read
   * (and without a GET). Only pass hints from an authenticated writer.
   */
  hinted(hint: WakeHint): void {
    const nowMs = this.options.clock.monotonicMs();
    this.lastHintAtMs = nowMs;
    if (hint.seqno < this.options.engine.position.nextSeqno) return;
    if (hint.seqno > this.newestHint.seqno) this.newestHint = { seqno: hint.seqno, atMs: nowMs };
    if (hint.hash !== undefined) {
      this.vouches.vouch(hint.seqno, hint.hash, hint.segment);
      this.vouches.forgetBelow(this.options.engine.position.nextSeqno);
    } else if (hint.verifying === true) {
      this.vouches.announce(hint.seqno);
    }
    this.wake(hint.seqno);
  }

  /**
   * Resolves true once the local frontier reaches `ts` (everything at or below it is
   * applied and announced), false if `timeoutMs` passed first.
   */
  waitFor(ts: number, timeoutMs: number): Promise<boolean> {
    return this.waiters.wait(() => this.options.engine.readTs >= ts, timeoutMs);
  }

  status(): TailerStatus {
    const { engine, clock } = this.options;
    const error = this.lastError;
    return {
      shard: engine.shard,
      state: this.state === "tailing" && engine.state.kind === "writing" ? "paused" : this.state,
      appliedSeqno: engine.position.nextSeqno - 1,
      frontierTs: engine.readTs,
      stalenessMs: engine.state.kind === "writing" ? 0 : this.caughtUpAtMs === null ? null : Math.max(0, Math.round(clock.monotonicMs() - this.caughtUpAtMs)),
      lastError: error === null ? null : describe(error),
      segmentsApplied: this.segmentsApplied,
      restores: this.restores,
    };
  }

  /**
   * Stops polling and waits for a poll in progress. With `removeWatermark` (a graceful
   * shutdown) the watermark is deleted so that GC stops keeping segments for this node.
   */
  async stop(options: { readonly removeWatermark?: boolean } = {}): Promise<void> {
    this.state = "stopped";
    this.stopping.abort();
    this.sleeping?.abort(WOKEN);
    this.vouches.settleAll();
    await this.loop;
    for (const unlisten of this.unlisten) unlisten();
    await this.watermarkWork;
    this.waiters.settleAll();
    if (options.removeWatermark && (this.options.publishWatermarks ?? true)) {
      try {
        await this.options.engine.watermarkStore.remove(this.options.consumerId);
      } catch (error) {
        this.options.onError?.(error, "watermark");
      }
    }
  }

  /**
   * Deletes this node's watermark once any publish in flight has landed (a node that took
   * over the shard: its own GC must not wait for it).
   */
  async removeWatermark(): Promise<void> {
    this.publishedSeqno = null;
    await this.watermarkWork;
    await this.options.engine.watermarkStore.remove(this.options.consumerId);
  }

  // ---- the poll loop -------------------------------------------------------------------

  private async run(): Promise<void> {
    let delayMs = 0;
    while (this.state !== "stopped") {
      if (delayMs > 0) await this.sleep(delayMs);
      if (this.state !== "tailing") continue;
      // While this node writes the shard its own commits keep the store current.
      if (this.options.engine.state.kind === "writing" || this.options.engine.state.kind === "closed") {
        this.wakeRequested = false;
        delayMs = this.tuning.idlePollMs;
        continue;
      }
      this.wakeRequested = false;
      delayMs = await this.poll(delayMs);
      if (this.wakeRequested) delayMs = 0;
    }
  }

  /** One catch-up round trip; returns how long to wait before the next. */
  private async poll(previousDelayMs: number): Promise<number> {
    const { engine, clock } = this.options;
    const startedMs = clock.monotonicMs();
    const manifestDue = startedMs - this.lastManifestReadMs >= this.tuning.manifestRefreshMs;
    // A hinted segment exists: finding our next slot empty then means it was collected.
    const refreshWhenEmpty = this.hintedThrough >= engine.position.nextSeqno || manifestDue;
    this.hintedThrough = -1;
    try {
      const report = await engine.catchUpToTail({ refreshWhenEmpty, ...(this.vouches.size > 0 ? { vouching: this.vouches } : {}) });
      this.vouches.forgetBelow(engine.position.nextSeqno);
      const read = report.segmentsApplied + report.segmentsSkipped;
      // A round that ended at a vouched segment (tail null) skipped the manifest read.
      if ((report.tail !== null && (refreshWhenEmpty || read > 0)) || report.restoredFromSeqno !== null) this.lastManifestReadMs = startedMs;
      // On the manifest's cadence: is the local copy still the bucket's (not restored from an older copy)?
      const rebuiltAt = manifestDue ? await engine.confirmPosition() : null;
      if (report.restoredFromSeqno !== null || rebuiltAt !== null) this.restores++;
      this.segmentsApplied += report.segmentsApplied;
      // A round that ended at a vouched segment did not look past it: the local copy was
      // complete as of the newest hint it applied through (the writer hints every
      // segment, newest last), not as of this round.
      if (report.tail !== null) this.caughtUpAtMs = startedMs;
      else if (engine.position.nextSeqno > this.newestHint.seqno) this.caughtUpAtMs = Math.max(this.caughtUpAtMs ?? this.newestHint.atMs, this.newestHint.atMs);
      this.lastError = null;
      // A quiet replica renews its watermark now and then: one silent for the consumer TTL
      // (24 h) would no longer hold GC back although the replica is alive.
      const renewalDue = startedMs - this.publishedAtMs >= WATERMARK_RENEWAL_MS;
      if (report.segmentsApplied > 0 || report.restoredFromSeqno !== null || rebuiltAt !== null || renewalDue) this.watermarkDue(renewalDue);
      // The writer hints every segment it creates: wait for the next hint rather than poll
      // the empty slot (also right after a round its hints carried through the newest
      // hinted segment).
      const atNewestHint = report.tail === null && engine.position.nextSeqno > this.newestHint.seqno;
      if (this.hintsTrusted() && (report.tail !== null || atNewestHint)) return this.tuning.idlePollMs;
      if (read > 0 || rebuiltAt !== null) return 0;
      return previousDelayMs === 0 ? this.tuning.firstBackoffMs : Math.min(previousDelayMs * 2, this.tuning.idlePollMs);
    } catch (error) {
      // Nothing of a failed round is applied past what validated; the store keeps serving.
      this.vouches.forgetBelow(engine.position.nextSeqno);
      if (hasErrorCode(error, "INTERNAL") && engine.state.kind === "writing") return this.tuning.idlePollMs;
      this.lastError = error;
      this.options.onError?.(error, "poll");
      return this.tuning.idlePollMs;
    }
  }

  /** Whether the writer hinted recently enough to be trusted to hint the next segment too. */
  private hintsTrusted(): boolean {
    return this.options.clock.monotonicMs() - this.lastHintAtMs < HINTS_TRUSTED_POLLS * this.tuning.idlePollMs;
  }

  private async sleep(ms: number): Promise<void> {
    if (this.wakeRequested && this.state === "tailing") return;
    const controller = new AbortController();
    this.sleeping = controller;
    try {
      await this.options.clock.sleep(ms, controller.signal);
    } catch {
      // Woken early.
    } finally {
      this.sleeping = null;
    }
  }

  // ---- frontier waiters and the watermark ----------------------------------------------

  /** Called after each applied segment or restore, once the engine's earlier listeners ran. */
  private advanced(): void {
    this.waiters.notify();
  }

  /** Publishes the watermark now, or once the interval since the last publish has passed. */
  private watermarkDue(renewal = false): void {
    if (!(this.options.publishWatermarks ?? true) || this.watermarkScheduled) return;
    if (renewal) this.publishedSeqno = null;
    this.watermarkScheduled = true;
    this.watermarkWork = this.watermarkWork.then(async () => {
      const { clock } = this.options;
      const waitMs = this.publishedAtMs + this.tuning.watermarkIntervalMs - clock.monotonicMs();
      try {
        if (waitMs > 0) await clock.sleep(waitMs, this.stopping.signal);
      } catch {
        // Stopping: the watermark is removed or left as it was.
      }
      this.watermarkScheduled = false;
      if (!this.stopping.signal.aborted) await this.publishWatermark();
    });
  }

  private async publishWatermark(): Promise<void> {
    const { engine, clock, consumerId } = this.options;
    const seqno = engine.position.nextSeqno - 1;
    // A writer keeps no watermark: its own GC would hold itself back with it.
    if (seqno === this.publishedSeqno || engine.state.kind === "writing") return;
    this.publishedAtMs = clock.monotonicMs();
    try {
      await engine.watermarkStore.publish(consumerId, seqno, Math.floor(clock.nowMs()));
      this.publishedSeqno = seqno;
    } catch (error) {
      this.options.onError?.(error, "watermark");
    }
  }
}

function describe(error: unknown): { code: string; message: string } {
  const code = typeof error === "object" && error !== null && typeof (error as { code?: unknown }).code === "string" ? (error as { code: string }).code : "INTERNAL";
  return { code, message: error instanceof Error ? error.message : String(error) };
}
