import { rmSync } from "node:fs";
import { CairnError, errorKindOf, hasErrorCode, randomHex, type Timer, yieldToEventLoop } from "../base/index.js";
import { collectGarbage, type GarbageReport, ConsumerWatermarks } from "../gc/index.js";
import { LocalStore, type DumpChunk, type DumpCursor } from "../local/index.js";
import { type Manifest, type SnapshotPointer, ShardManifest, type LeaseOwner } from "../manifest/index.js";
import {
  LogValidator,
  type LogPosition,
  EMPTY_RECORD_BATCH,
  type RecordBatch,
  encodeSegment,
  type Segment,
  type SegmentKind,
} from "../segments/index.js";
import { writeSnapshot } from "../snapshots/index.js";
import { catchUp, restoreCurrentSnapshot, type CatchUpOptions, type CatchUpProgress, type CatchUpReport } from "./catchUp.js";
import { checkLocalPosition } from "./checkLocalPosition.js";
import { judgeCreatedSegment, type CommitVerdict } from "./commitVerdict.js";
import type { HybridClock } from "./HybridClock.js";
import {
  ENGINE_DRIVERS,
  PIPELINE_DEPTH_MAX,
  resolveTuning,
  validateEngineIdentity,
  type ShardEngineOptions,
  type ShardEngineTuning,
} from "./engineOptions.js";
import { ingestSegment, positionFromMeta } from "./ingestSegment.js";
import { PendingDocuments, type PendingRevision } from "./PendingDocuments.js";
import { PendingView } from "./PendingView.js";
import { RecentWrites } from "./RecentWrites.js";
import { WrittenKeyIndex } from "./WrittenKeyIndex.js";
import { appendSegment, type AppendContext } from "./SegmentAppender.js";
import {
  stampUnit,
  unitBytes,
  validateWriteUnit,
  writtenKeys,
  type CommitResult,
  type PendingReadToken,
  type WriteUnit,
  type ReadSet,
  type WrittenKey,
} from "./WriteUnit.js";

/**
 * One shard's engine on one node: materializes the shard's log into the local store and,
 * once it holds the lease, is the shard's only writer (DESIGN.md §4).
 *
 * Lifecycle (state.kind):
 *   following ──acquire──▶ writing ──relinquish──▶ following
 *   writing ──fenced (commit, heartbeat, GC)──▶ fenced
 *   writing ──unknown commit outcome / local failure──▶ poisoned
 *   writing ──step-down (heartbeats failing, below)──▶ poisoned ──newer epoch seen──▶ fenced
 *   fenced | poisoned ──acquire (re-open: re-acquire and catch up)──▶ writing
 *   any ──close──▶ closed
 * A relinquish that cannot clear the lease (the bucket is unreachable) still ends in
 * "following" — the lease then lapses by itself — and a failed acquire leaves the state it
 * started from, so acquire, relinquish and close always work next. Transitions (acquire,
 * relinquish, close) run one at a time.
 *
 * Invariants:
 * - A commit is acknowledged only after its segment's create succeeded and verification
 *   (DESIGN.md §4, commitVerdict) showed it durable; then it is applied locally before
 *   the caller hears. A write that may be durable is never reported as a definite
 *   failure: it fails with ENGINE_POISONED (outcome unknown) instead.
 * - Nothing is applied locally before a manifest read after its GET or create showed its
 *   slot uncollected: own segments after verification, others' through catch-up.
 * - Everything the local apply could refuse is refused by `commit`, by the same validator,
 *   before the unit is queued: nothing a reader cannot apply reaches the log.
 * - Up to pipelineDepth segments are in flight, each built at the slot after the one
 *   before and chained to it, and acknowledged strictly in log order; the first one that
 *   is not durable fails itself and every one after it (none acknowledged: no
 *   acknowledged write follows a hole). The slots up to PIPELINE_DEPTH_MAX - 1 past the
 *   fence, where a fenced writer's late creates may land, are written one at a time.
 * - Timestamps strictly increase along the log (the validator refuses anything else).
 * - Once fenced or poisoned, the engine acknowledges nothing until re-acquired.
 * - No acknowledgement rests on a lease that may have lapsed. A commit is acknowledged
 *   on one of two grounds (verifyCreated): (a) a manifest read after its create shows the
 *   slot uncollected (commitVerdict) — that needs no lease: a successor fences only after
 *   catching up to the tail, so a segment created in an uncollected slot is in the log
 *   (before the successor's fence, or its create failed against it), whoever holds the
 *   lease; or (b) in verify "lease", no read, because at the check — after the create
 *   answered — this node's monotonic clock gives the lease more than clockSkewMsMax
 *   still: no successor can have acquired, so none can have collected the slot. The
 *   lease's validity counts from the send time of the last renewal answered within
 *   heartbeatDeadlineMs: a renewal that hangs or answers late never extends it.
 * - On open, a local file whose position the bucket does not confirm is rebuilt from the
 *   bucket (event "local-rebuilt"), never trusted. A running follower judges its position
 *   again (confirmPosition: on its tailer's manifest cadence, on a chain break, on a
 *   skipped leftover and before an acquire) and rebuilds the same way, in one step for
 *   its readers: a bucket restored from an older copy is never silently skipped.
 *
 * Stepping down (issue 24 item 5): every heartbeat runs under heartbeatDeadlineMs; one
 * that fails or has not answered by then is a miss, and a renewal answered in time
 * resets the count. While renewals fail (a miss since the last success, or a heartbeat
 * unanswered), the writer steps down at heartbeatMissesMax misses, or at once when its
 * lease may have lapsed (less than clockSkewMsMax left: a timer, and checks before a
 * flush starts and after its durability check) — so beyond (a) and (b) it stops
 * acknowledging altogether once its lease may have lapsed. Stepping down fails units in
 * flight with ENGINE_POISONED (their create may still land: outcome unknown; a segment
 * that lands is left to catch-up, never acknowledged) and queued ones, and every later
 * commit, with NOT_WRITER (never sent; callers re-route); it stops the drivers, writes
 * nothing to the bucket (it does not answer: the lease lapses by itself), and ends
 * "poisoned" with the event `{type: "poisoned", stepDown: {reason, misses}}` — so a node
 * that treats "poisoned" as "no longer writing, go on as a standby" needs nothing new.
 * A late answer showing a newer epoch turns it "fenced". Nothing in the engine retries
 * afterwards; a lease watcher re-acquires (at once for its own lease) on its own cadence.
 * Idle leases (issue 27 item 6): a writer whose shard has taken no commit for idleAfterMs
 * renews for idleLeaseTtlMs every idleHeartbeatIntervalMs (an idle shard costs a sixth of
 * the requests); the next commit wakes the heartbeat driver to renew with the short lease
 * at once, beside its own flush, so a busy shard's failover is as fast as ever. A renewal
 * that shortens the lease also shortens this node's idea of it (never the other way
 * round): the lease validity above never outlives what the manifest says.
 * A writer that tries no heartbeat (no heartbeat driver, no call of `heartbeat()`) never
 * steps down by itself: like a paused process, it is fenced by the protocol. Nor does one
 * opened with stepDownOnFailedRenewals false (a reshard's lease holder, which commits
 * nothing): (a) and (b) still hold for it.
 *
 * Drivers (options.drivers, ENGINE_DRIVERS): heartbeat, maintenance and frontier run
 * while writing; "prune" runs from open to close and prunes local history whenever the
 * engine does not write (a writer prunes in its maintenance).
 */
/** What a follower's catch-up may skip (see CatchUpOptions). */
/** The writer a manifest names: its node id and the URL it serves at (null: none published). */
export interface LeaseOwnerLocation {
  readonly nodeId: string;
  readonly url: string | null;
}

export type FollowerCatchUpOptions = Pick<CatchUpOptions, "refreshWhenEmpty" | "vouching">;

export type EngineState =
  | { readonly kind: "following" }
  | { readonly kind: "writing"; readonly epoch: number }
  | { readonly kind: "fenced"; readonly error: CairnError }
  | { readonly kind: "poisoned"; readonly error: CairnError }
  | { readonly kind: "closed" };

export type EngineEvent =
  | { readonly type: "progress"; readonly shard: number; readonly progress: CatchUpProgress }
  /** `fenceHash`: the fence segment's hash; it is verified durable (wake hints vouch for it). */
  | { readonly type: "acquired"; readonly shard: number; readonly epoch: number; readonly fenceSeqno: number; readonly fenceHash: string }
  | { readonly type: "relinquished"; readonly shard: number; readonly epoch: number }
  | { readonly type: "fenced"; readonly shard: number; readonly error: CairnError }
  /**
   * The engine stopped writing: a commit's outcome is unknown or the local store failed, or
   * (with `stepDown`) the writer stepped down because its heartbeats failed — `error` is
   * then what it answers writes with (NOT_WRITER). Re-acquire to write again.
   */
  | { readonly type: "poisoned"; readonly shard: number; readonly error: CairnError; readonly stepDown?: StepDown }
  | { readonly type: "snapshot"; readonly shard: number; readonly pointer: SnapshotPointer }
  | { readonly type: "gc"; readonly shard: number; readonly report: GarbageReport }
  | { readonly type: "local-rebuilt"; readonly shard: number; readonly reason: string }
  /** This node learned of a newer epoch of the shard (a takeover): who writes it now. */
  | { readonly type: "writer-changed"; readonly shard: number; readonly epoch: number; readonly writer: LeaseOwnerLocation | null }
  | { readonly type: "pruned"; readonly shard: number; readonly minReadableTs: number; readonly rowsRemoved: number }
  | { readonly type: "driver-error"; readonly shard: number; readonly driver: string; readonly error: unknown }
  /**
   * A segment this writer created (`bytes` long) landed at `seqno`; its verification (a
   * manifest read) follows. Not yet known durable: nothing may be applied on its word alone.
   */
  | { readonly type: "created"; readonly shard: number; readonly seqno: number; readonly bytes: number }
  /**
   * A segment this writer created is verified durable and applied: `units` commits in
   * `bytes` at `seqno` (its hash `hash`, its stored form `content`: wake hints carry it),
   * `flushMs` from create to verified.
   */
  | {
      readonly type: "flushed";
      readonly shard: number;
      readonly kind: SegmentKind;
      readonly seqno: number;
      readonly hash: string;
      readonly units: number;
      readonly bytes: number;
      readonly content: Uint8Array;
      readonly flushMs: number;
    };

/**
 * Why a writer stepped down: `misses` heartbeats in a row failed or missed their deadline
 * ("heartbeat-misses", at heartbeatMissesMax), or its lease may have lapsed while renewals
 * failed ("lease-lapsed").
 */
export interface StepDown {
  readonly reason: "heartbeat-misses" | "lease-lapsed";
  readonly misses: number;
}

/** The lease renewals of one epoch of writing. */
interface LeaseRenewal {
  readonly epoch: number;
  /** Consecutive heartbeats that failed or did not answer within heartbeatDeadlineMs. */
  misses: number;
  /** Heartbeats sent and neither answered nor past their deadline. */
  outstanding: number;
  /** Wakes when the lease may lapse while renewals fail (armed only then). */
  timer: Timer | null;
  steppedDown: boolean;
}

interface QueuedUnit {
  readonly unit: WriteUnit;
  /** Its place in the queue: seqs increase in log order (PendingView reads by them). */
  readonly seq: number;
  /** The revisions it writes, as pending ones (PendingDocuments). */
  readonly revisions: readonly PendingRevision[];
  /** What it writes; as many local rows as keys. */
  readonly keys: readonly WrittenKey[];
  readonly bytes: number;
  readonly resolve: (result: CommitResult) => void;
  readonly reject: (error: unknown) => void;
}

/** A segment between its build and its acknowledgement (pipelined group commit). */
interface Flight {
  readonly epoch: number;
  readonly kind: "data" | "tick";
  readonly batch: readonly QueuedUnit[];
  /** Local rows and bytes its batch adds when applied (what the overlay must have room for). */
  readonly rows: number;
  readonly bytes: number;
  /** The segment as built, or as rebuilt past a leftover (then with fresh stamps). */
  segment: Segment;
  stamps: readonly number[];
  readonly startedMs: number;
  /** How its create and verification ended; null while they run. */
  outcome: { readonly verdict: CommitVerdict } | { readonly error: unknown } | null;
  /** Failed or given up on with everything after it: its task ends without a word. */
  abandoned: boolean;
  /** Its create and verification (fly); settles without throwing. */
  task: Promise<void>;
}

export class ShardEngine {
  readonly shard: number;
  readonly tuning: ShardEngineTuning;
  private readonly manifest: ShardManifest;
  private readonly watermarks: ConsumerWatermarks;
  private readonly validator: LogValidator;
  private readonly recentWrites: RecentWrites;
  /** Keys of queued and in-flight units, with how many of them write each. */
  private readonly pendingKeys = new WrittenKeyIndex();
  /** The document revisions of queued and in-flight units: what a PendingView reads. */
  private readonly pendingDocuments = new PendingDocuments();
  /**
   * The seq of the last unit queued, and the seq through which no unit is pending any more:
   * the last one acknowledged, or — after an acquire — the last one queued before it (those
   * of an earlier epoch were acknowledged or failed). Never reset: seqs order units across epochs.
   */
  private unitsQueued = 0;
  private unitsAcknowledged = 0;
  /** settleRead callers waiting for units to be acknowledged (or the writer to stop). */
  private acknowledgedWaiters: (() => void)[] = [];
  private currentState: EngineState = { kind: "following" };
  private queue: QueuedUnit[] = [];
  /** Segments in flight, in log order: built, being created or verified, not yet acknowledged. */
  private flights: Flight[] = [];
  /** Where the log stands after the last segment built (null: none in flight, the validator's position). */
  private builtTail: LogPosition | null = null;
  /** Slots up to this one are built one at a time: a fenced writer's leftovers may still land there (PIPELINE_DEPTH_MAX). */
  private loneThroughSeqno = 0;
  /** Wakes the flush loop when a flight settles (it waits for a free slot). */
  private flightSettled: (() => void) | null = null;
  /** A manifest read asked for in this turn of the event loop, not started yet: verifications share it. */
  private nextVerifyRead: Promise<Manifest> | null = null;
  private readonly frontierListeners = new Set<() => void>();
  private flushLoop: Promise<void> | null = null;
  private accepting = false;
  private tickRequested = false;
  /** When a tick was last requested (monotonic ms): ticks are at least frontierTickMs apart. */
  private lastTickRequestedMs = Number.NEGATIVE_INFINITY;
  /** The tick frontierTickSoon deferred to the end of the current frontierTickMs, if any. */
  private deferredTick: Timer | null = null;
  /** The maxTs of the last data segment applied here: this writer's own, or another's it followed. */
  private lastDataAppliedTs = 0;
  /** On this node's monotonic clock: until when the lease is ours (for verify "lease"). */
  private leaseValidUntilMonotonicMs = 0;
  /** When this writer last took a commit (monotonic ms; its acquire counts as one): idle after idleAfterMs. */
  private lastCommitMonotonicMs = Number.NEGATIVE_INFINITY;
  /** Whether the last renewal sent was for the idle lease: the next commit takes the short one back at once. */
  private leaseStretched = false;
  /** Whether leaseValidUntilMonotonicMs counts from a stretched renewal: the next short one that succeeds sets it outright. */
  private validityStretched = false;
  /** Wakes the heartbeat driver from its wait (a commit on a shard whose lease is stretched). */
  private wakeHeartbeat: (() => void) | null = null;
  /** The current epoch's renewals (kept after it stopped writing, until the next acquire). */
  private renewal: LeaseRenewal | null = null;
  private drivers: AbortController | null = null;
  private driverTasks: Promise<void>[] = [];
  /** The drivers that run while not writing, from open to close ("prune"). */
  private followerDrivers: AbortController | null = null;
  private followerTasks: Promise<void>[] = [];
  private closing = false;
  private maintenance: Promise<unknown> = Promise.resolve();
  private catchingUp: Promise<unknown> = Promise.resolve();
  private transitions: Promise<unknown> = Promise.resolve();
  /** An acquire is between taking the lease and recording its fence. */
  private acquiring = false;
  private gcRuns = 0;
  private lastGcAtMs = 0;
  /** Snapshot records this engine's GC passes have read (they never change; gc/readSnapshotRecords). */
  private readonly knownSnapshotRecords = new Map<string, SnapshotPointer>();
  /** Segments this writer created (data and ticks), and how many there were at the last GC pass that found nothing to collect (null: it found something, or none ran). */
  private segmentsWritten = 0;
  private segmentsAtIdleGc: number | null = null;
  private sinceSnapshot = { segments: 0, bytes: 0, sinceMs: 0 };
  private readonly appliedListeners = new Set<(segment: Segment) => void>();
  private readonly restoredListeners = new Set<(frontierTs: number) => void>();
  /**
   * The manifest (its etag) the local position was last confirmed against: while it is
   * unchanged, the segments read since confirm the position by themselves.
   */
  private confirmedEtag: string | null = null;

  private constructor(private readonly options: ShardEngineOptions) {
    this.shard = options.shard;
    this.tuning = resolveTuning(options.tuning ?? {});
    this.manifest = new ShardManifest(options.store, options.shard, options.deploymentId, options.random);
    this.watermarks = new ConsumerWatermarks(options.store, options.shard, options.random);
    this.validator = new LogValidator(options.shard, positionFromMeta(options.local.meta()));
    this.recentWrites = new RecentWrites(this.tuning.recentWritesUnitsMax, this.tuning.recentWritesWindowMs * 1000, this.tuning.recentWritesKeysMax);
    this.manifest.onNewEpoch((manifest) =>
      this.emit({ type: "writer-changed", shard: this.shard, epoch: manifest.epoch, writer: manifest.writer === null ? null : { nodeId: manifest.writer.nodeId, url: manifest.writer.url } }),
    );
  }

  /**
   * Loads (or creates) the shard's manifest, checks the local file's position against the
   * bucket (rebuilding a local copy the bucket does not confirm) and catches the local
   * store up to the log's end. Every option is validated first (INVALID_ARGUMENT).
   */
  static async open(options: ShardEngineOptions): Promise<ShardEngine> {
    if (typeof options !== "object" || options === null) throw new CairnError("INVALID_ARGUMENT", "engine options must be an object");
    validateEngineIdentity(options);
    const meta = options.local.meta();
    if (meta.shard !== options.shard || meta.deploymentId !== options.deploymentId) {
      throw new CairnError("LOCAL_META_MISMATCH", `local store belongs to shard ${meta.shard} of ${meta.deploymentId}`);
    }
    const engine = new ShardEngine(options);
    let check = await checkLocalPosition(options.store, options.deploymentId, meta, await engine.manifest.load());
    // GC may collect the segment the copy applied last between the manifest read and its
    // GET: only a second manifest read and check that disagree too mean the bucket does
    // not confirm the copy (as in confirmPositionNow).
    if (check.kind === "disagrees") check = await checkLocalPosition(options.store, options.deploymentId, meta, await engine.manifest.refresh());
    if (check.kind === "disagrees") await engine.rebuildLocal(check.reason);
    engine.confirmedEtag = engine.manifest.currentEtag;
    if (options.catchUpOnOpen !== false) await engine.catchUpToTail();
    engine.sinceSnapshot = engine.countSinceSnapshot();
    engine.startFollowerDrivers();
    return engine;
  }

  /** Empties a local copy the bucket does not confirm, so catch-up rebuilds it from the bucket. */
  private async rebuildLocal(reason: string): Promise<void> {
    this.emit({ type: "local-rebuilt", shard: this.shard, reason });
    await this.options.local.reset();
    this.validator.reset(positionFromMeta(this.options.local.meta()));
  }

  get state(): EngineState {
    return this.currentState;
  }

  /** Segments this writer has in flight (created or being created, not yet acknowledged). */
  get segmentsInFlight(): number {
    return this.flights.length;
  }

  /** The log position the local store reflects. */
  get position(): LogPosition {
    return this.validator.position;
  }

  /** The timestamp every read should use now: everything at or below it is applied locally. */
  get readTs(): number {
    return this.validator.position.lastMaxTs;
  }

  /**
   * The highest ts through which this node knows the shard's log complete (DESIGN.md §5).
   * A writer with no data segment in flight is complete up to its hybrid clock: whatever
   * it commits next is stamped later (the clock is the node's, shared by its shards), and
   * ticks in flight hold no data. Else, and on a follower, the maxTs of the last applied
   * segment. What a read across shards takes the minimum of.
   */
  get closedTs(): number {
    if (this.currentState.kind === "writing" && !this.flights.some((flight) => flight.kind === "data")) {
      return Math.max(this.readTs, this.options.hybridClock.last);
    }
    return this.readTs;
  }

  get local() {
    return this.options.local;
  }

  get watermarkStore(): ConsumerWatermarks {
    return this.watermarks;
  }

  /** The last manifest this engine read or wrote (who writes the shard, until when). */
  get manifestCurrent() {
    return this.manifest.current;
  }

  /** Re-reads the shard's manifest (one conditional GET). */
  refreshManifest() {
    return this.manifest.refresh();
  }

  /** Listens to every segment applied locally (own commits and others'), in log order. */
  onSegmentApplied(listener: (segment: Segment) => void): () => void {
    this.appliedListeners.add(listener);
    return () => this.appliedListeners.delete(listener);
  }

  /**
   * Listens to snapshot restores during catch-up: the local state was replaced as a whole
   * (atomically for readers) at `frontierTs`, so everything read before may have changed.
   */
  onRestored(listener: (frontierTs: number) => void): () => void {
    this.restoredListeners.add(listener);
    return () => this.restoredListeners.delete(listener);
  }

  /**
   * Reads new segments as a follower (replica tailing, or before acquire). Calls are
   * serialized: the log position admits one reader at a time. See CatchUpOptions for
   * `refreshWhenEmpty` and `vouching`.
   */
  catchUpToTail(options: FollowerCatchUpOptions = {}): Promise<CatchUpReport> {
    // A follower's read must not run beside an acquire's fence append (it could apply the
    // fence before the acquirer does): while acquiring, the acquirer alone reads the log.
    return this.serializeCatchUp(() => (this.acquiring ? Promise.resolve(this.idleReport()) : this.catchUpOnce(options)));
  }

  private serializeCatchUp<T>(job: () => Promise<T>): Promise<T> {
    const run = this.catchingUp.then(job);
    this.catchingUp = run.catch(() => undefined);
    return run;
  }

  private idleReport(): CatchUpReport {
    return { restoredFromSeqno: null, segmentsApplied: 0, segmentsSkipped: 0, tail: this.validator.position.nextSeqno };
  }

  private async catchUpOnce(options: FollowerCatchUpOptions): Promise<CatchUpReport> {
    this.assertNotClosed();
    if (this.currentState.kind === "writing") {
      throw new CairnError("INTERNAL", "the writer's local store is the log's tail; it does not catch up");
    }
    // A writer that was just fenced may still settle its last flights (each applies its
    // own segment): the log position admits one reader at a time.
    await this.drainFlushes();
    const run = () =>
      catchUp({
        ...this.catchUpOptions(this.options.local, this.validator),
        onApplied: (segment) => this.notifyApplied(segment),
        onRestored: (frontierTs) => this.notifyRestored(frontierTs),
        refreshWhenEmpty: options.refreshWhenEmpty ?? true,
        ...(options.vouching ? { vouching: options.vouching } : {}),
      });
    let report: CatchUpReport;
    let rebuiltAt: number | null = null;
    try {
      report = await run();
    } catch (error) {
      // A segment that does not chain to the local copy: the copy may be what diverged (the
      // bucket was restored from an older copy). If the bucket confirms it, the log is corrupt.
      if (!hasErrorCode(error, "SEGMENT_CHAIN_BROKEN")) throw error;
      rebuiltAt = await this.confirmPositionNow(true);
      if (rebuiltAt === null) throw error;
      report = await run();
    }
    // A skipped leftover is how a local copy with a newer epoch than the bucket's would
    // skip every new segment: check the epoch against the manifest now.
    if (rebuiltAt === null && report.segmentsSkipped > 0) {
      rebuiltAt = await this.confirmPositionNow(false);
      if (rebuiltAt !== null) report = await run();
    }
    if (rebuiltAt !== null) report = { ...report, restoredFromSeqno: report.restoredFromSeqno ?? rebuiltAt };
    this.options.hybridClock.observe(this.validator.position.lastMaxTs);
    if (report.restoredFromSeqno !== null) this.recentWrites.reset(this.validator.position.lastMaxTs);
    await this.followNewerEpoch();
    return report;
  }

  /**
   * A segment of a newer epoch than the manifest this node last read (applied on a
   * writer's vouch, without a manifest read) means a takeover: read the manifest now,
   * so that who writes the shard — where writes are forwarded — follows the log at once.
   * A failed read is retried after the next round.
   */
  private async followNewerEpoch(): Promise<void> {
    if (this.validator.position.highestEpoch <= this.manifest.current.epoch) return;
    try {
      await this.manifest.refresh();
    } catch (error) {
      this.emit({ type: "driver-error", shard: this.shard, driver: "manifest-refresh", error });
    }
  }

  private catchUpOptions(local: LocalStore, validator: LogValidator): CatchUpOptions {
    return {
      store: this.options.store,
      deploymentId: this.options.deploymentId,
      manifest: this.manifest,
      local,
      validator,
      fetchConcurrency: this.tuning.fetchConcurrency,
      snapshotFetchConcurrency: this.tuning.snapshotFetchConcurrency,
      restoreLagSegments: this.tuning.restoreLagSegments,
      onProgress: (progress) => this.emit({ type: "progress", shard: this.shard, progress }),
    };
  }

  /**
   * Judges a follower's local copy against the manifest it last read (checkLocalPosition),
   * as `open` does: a tailer calls this on its manifest-read cadence. A bucket restored
   * from an older copy under a running follower (its local epoch or position above the
   * manifest's) is rebuilt from the bucket. Resolves the seqno the copy was rebuilt at, or
   * null when the bucket confirms it (or the engine writes: its copy is the log's tail).
   */
  confirmPosition(): Promise<number | null> {
    return this.serializeCatchUp(async () => {
      if (this.currentState.kind === "writing" || this.currentState.kind === "closed" || this.acquiring) return null;
      return this.confirmPositionNow(false);
    });
  }

  /**
   * The check itself, inside the catch-up serialization. Without `thorough`, a position
   * the cached manifest covers (epoch not above the manifest's, and seqno not above the
   * tail it knows of or the manifest unchanged since the last check) is taken as confirmed
   * at no cost; otherwise (a lagging tail hint, mostly) the manifest is re-read and the
   * bucket asked (one GET). A disagreement is confirmed by
   * a second manifest read and check (GC may collect the slot between the two reads of
   * one check) before the copy is rebuilt.
   */
  private async confirmPositionNow(thorough: boolean): Promise<number | null> {
    const covered = (manifest: Manifest) => {
      const meta = this.options.local.meta();
      const knownTail = Math.max(manifest.tailHint, ...manifest.fences.map((fence) => fence.seqno));
      return meta.epoch <= manifest.epoch && (meta.appliedSeqno <= knownTail || this.manifest.currentEtag === this.confirmedEtag);
    };
    if (!thorough && covered(this.manifest.current)) return null;
    let verdict: { readonly manifest: Manifest; readonly reason: string } | null = null;
    for (let attempt = 0; attempt < 2; attempt++) {
      const manifest = await this.manifest.refresh();
      if (!thorough && covered(manifest)) return null;
      const check = await checkLocalPosition(this.options.store, this.options.deploymentId, this.options.local.meta(), manifest);
      if (check.kind === "agrees") {
        this.confirmedEtag = this.manifest.currentEtag;
        return null;
      }
      verdict = { manifest, reason: check.reason };
    }
    await this.rebuildWhileServing(verdict!.reason, verdict!.manifest);
    return this.validator.position.nextSeqno - 1;
  }

  /**
   * Replaces a local copy the bucket does not confirm with the bucket's state, atomically
   * for readers (they see the old state, then the bucket's, never an empty or partial
   * one): the manifest's snapshot restored in place, or, with no snapshot to start from,
   * the log replayed into a copy beside this one that then replaces it. Catch-up goes on
   * from there.
   */
  private async rebuildWhileServing(reason: string, manifest: Manifest): Promise<void> {
    this.emit({ type: "local-rebuilt", shard: this.shard, reason });
    const snapshot = manifest.snapshot;
    if (snapshot !== null && snapshot.seqno + 1 >= manifest.logStart) {
      await restoreCurrentSnapshot({ ...this.catchUpOptions(this.options.local, this.validator), onRestored: (frontierTs) => this.notifyRestored(frontierTs) }, manifest, { restores: 0 });
    } else {
      await this.rebuildBeside();
    }
    this.recentWrites.reset(this.validator.position.lastMaxTs);
  }

  /** Replays the whole log into a copy beside the local file, then swaps it in (one restore). */
  private async rebuildBeside(): Promise<void> {
    const local = this.options.local;
    const path = local.filePath === ":memory:" ? ":memory:" : `${local.filePath}.rebuild`;
    removeSqliteFiles(path);
    const beside = LocalStore.open({ path, shard: this.shard, deploymentId: this.options.deploymentId, overlayBudget: local.overlayBudget });
    try {
      const validator = new LogValidator(this.shard, positionFromMeta(beside.meta()));
      await catchUp({ ...this.catchUpOptions(beside, validator), refreshWhenEmpty: true });
      const cursor = await beside.openDumpCursor();
      try {
        const { appliedSeqno, epoch, lastHash, frontierTs } = cursor.meta;
        // Every row was checked when it was applied to the copy beside.
        await local.restore(dumpChunks(cursor), { appliedSeqno, epoch, lastHash, frontierTs }, { recordsChecked: true });
      } finally {
        cursor.close();
      }
    } finally {
      beside.close();
      removeSqliteFiles(path);
    }
    this.validator.reset(positionFromMeta(local.meta()));
    this.notifyRestored(local.meta().frontierTs);
  }

  /**
   * Becomes the shard's writer (DESIGN.md §4 acquire): takes the lease with a new epoch,
   * catches up to the tail, creates the fence segment there, verifies it and records
   * where it landed in the manifest. Also re-opens a fenced or poisoned engine.
   */
  acquire(): Promise<void> {
    return this.serializeTransition(() => this.acquireNow());
  }

  private async acquireNow(): Promise<void> {
    this.assertNotClosed();
    if (this.currentState.kind === "writing") return;
    await this.drainFlushes();
    await this.stopDrivers();
    await this.options.beforeAcquire?.();
    // A local copy the bucket no longer confirms (restored from an older copy while this
    // node followed it) would put the fence past the bucket's tail, leaving a hole.
    await this.serializeCatchUp(() => this.confirmPositionNow(false));
    const { clock } = this.options;
    const nodeUrl = this.options.nodeUrl;
    const writer = { nodeId: this.options.nodeId, url: (typeof nodeUrl === "function" ? nodeUrl() : nodeUrl) ?? null };
    const sentAtMs = clock.monotonicMs();
    const acquired = await this.manifest.acquire(writer, clock.nowMs(), this.tuning.leaseTtlMs);
    this.leaseValidUntilMonotonicMs = sentAtMs + this.tuning.leaseTtlMs;
    this.lastCommitMonotonicMs = sentAtMs;
    this.leaseStretched = false;
    this.validityStretched = false;
    const epoch = acquired.epoch;
    const owner = { nodeId: this.options.nodeId, epoch };
    let fence: Segment;
    this.acquiring = true;
    try {
      await this.serializeCatchUp(() => this.catchUpOnce({}));
      const buildFence = (position: LogPosition) => this.buildSegment(epoch, "fence", 0, position, (hybridClock) => markerStamp(hybridClock.next()));
      fence = await appendSegment(this.appendContext(epoch, () => true), buildFence(this.validator.position), buildFence);
      const verdict = await this.verifyCreated(fence, epoch);
      if (verdict.kind !== "durable" || verdict.newerEpoch) {
        throw new CairnError("FENCED", `shard ${this.shard}: another writer acquired during our takeover`, {
          details: { shard: this.shard, epoch, verdict: verdict.kind },
        });
      }
      this.ingestOwn(fence);
      await this.manifest.recordFence(owner, fence.header.seqno);
    } catch (error) {
      await this.abandonLease(epoch, error);
      throw error;
    } finally {
      this.acquiring = false;
    }
    this.recentWrites.reset(fence.header.maxTs);
    this.unitsAcknowledged = this.unitsQueued;
    this.loneThroughSeqno = fence.header.seqno + PIPELINE_DEPTH_MAX - 1;
    this.renewal = { epoch, misses: 0, outstanding: 0, timer: null, steppedDown: false };
    this.currentState = { kind: "writing", epoch };
    this.accepting = true;
    this.startDrivers();
    this.emit({ type: "acquired", shard: this.shard, epoch, fenceSeqno: fence.header.seqno, fenceHash: fence.hash });
  }

  /** A takeover that failed halfway gives the lease back, so others need not wait it out. */
  private async abandonLease(epoch: number, cause: unknown): Promise<void> {
    if (hasErrorCode(cause, "FENCED")) return;
    try {
      await this.manifest.relinquish({ nodeId: this.options.nodeId, epoch });
    } catch {
      // The lease then simply expires.
    }
  }

  /**
   * Queues a write unit for the next group commit. Resolves once the unit is durable in
   * the bucket and applied locally; rejects with WRITE_CONFLICT (re-run the transaction),
   * FENCED, ENGINE_POISONED (outcome unknown: retry with the same receipt key) or an
   * InvalidInput error (nothing written).
   */
  commit(unit: WriteUnit): Promise<CommitResult> {
    try {
      return this.enqueue(unit);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * `commit`, with every refusal thrown at once: once it returns, the unit is queued — its
   * writes are pending (a PendingView shows them) and the promise settles with its
   * durability. A caller serializing transactions on a hot key moves on at that point.
   */
  enqueue(unit: WriteUnit): Promise<CommitResult> {
    const state = this.currentState;
    if (state.kind !== "writing" || !this.accepting) throw this.notWritingError();
    validateWriteUnit(unit, this.tuning.unitBytesMax);
    if (unit.readTs > this.readTs) {
      throw new CairnError("INVALID_ARGUMENT", `readTs ${unit.readTs} is ahead of the shard's frontier ${this.readTs}`);
    }
    this.checkApplicable(unit);
    const readSetConflicts = unit.pendingRead !== undefined ? this.pendingReadConflicts(unit, unit.pendingRead) : unit.readSet !== undefined && this.readSetConflicts(unit.readTs, unit.readSet);
    if (readSetConflicts || (unit.conflictsWith && this.conflicts(unit.readTs, unit.conflictsWith))) {
      throw new CairnError("WRITE_CONFLICT", `shard ${this.shard}: a write after ts ${unit.readTs} changed what the transaction read`);
    }
    return new Promise<CommitResult>((resolve, reject) => {
      const keys = writtenKeys(unit);
      this.pendingKeys.update(keys, (count) => (count ?? 0) + 1);
      const seq = ++this.unitsQueued;
      const revisions = this.pendingDocuments.add(seq, unit.documents);
      this.queue.push({ unit, seq, revisions, keys, bytes: unitBytes(unit), resolve, reject });
      this.kickFlush();
      this.lastCommitMonotonicMs = this.options.clock.monotonicMs();
      // Busy again: the short lease back now, not at the end of the idle cadence.
      if (this.leaseStretched) this.wakeHeartbeat?.();
    });
  }

  /**
   * Runs the local store's own apply validation on the unit's records, stamped with a
   * provisional ts: the real one is higher, and every ts-dependent rule (ts above the
   * readable floor, prevTs below ts) only gets easier to meet as ts grows.
   */
  private checkApplicable(unit: WriteUnit): void {
    try {
      this.options.local.checkApplicable(stampUnit(unit, this.readTs + 1, true));
    } catch (error) {
      if (!hasErrorCode(error, "LOCAL_APPLY_INVALID")) throw error;
      // Keep the model's precise code (DOCUMENT_ID_WRONG_TABLE, INDEX_KEY_INVALID, …) when it has one.
      const cause = (error as CairnError).cause;
      const code = errorKindOf(cause) === "InvalidInput" ? (cause as CairnError).code : "INVALID_ARGUMENT";
      throw new CairnError(code, `invalid write unit: ${(error as Error).message}`, { cause: error });
    }
  }

  /**
   * Renews the lease now (the heartbeat driver calls this on its cadence). A renewal that
   * fails, or does not answer within heartbeatDeadlineMs (TIMEOUT), is a miss: the writer
   * steps down at heartbeatMissesMax misses in a row, or at once if its lease may have
   * lapsed. Only a renewal answered within its deadline extends the lease here, by
   * leaseTtlMs from when it was sent; one that answers later renews nothing.
   */
  async heartbeat(): Promise<void> {
    const owner = this.owner();
    const renewal = this.renewal!;
    const { clock } = this.options;
    const sentAtMs = clock.monotonicMs();
    const idle = this.isIdle(sentAtMs);
    const ttlMs = idle ? this.tuning.idleLeaseTtlMs : this.tuning.leaseTtlMs;
    this.leaseStretched = idle;
    const renewing = this.guard(
      owner.epoch,
      this.manifest.heartbeat(owner, clock.nowMs(), ttlMs, this.validator.position.nextSeqno - 1),
    );
    renewal.outstanding++;
    this.watchLease(renewal);
    try {
      await this.withinDeadline(renewing, this.tuning.heartbeatDeadlineMs, `shard ${this.shard}: a heartbeat did not answer within ${this.tuning.heartbeatDeadlineMs} ms`);
    } catch (error) {
      renewal.outstanding--;
      if (!hasErrorCode(error, "FENCED")) this.heartbeatMissed(renewal);
      throw error;
    }
    renewal.outstanding--;
    if (!this.writesAt(renewal.epoch)) return;
    renewal.misses = 0;
    // A short renewal after a stretched one shortened the lease in the manifest: this node
    // counts on no more than it from now on (one answered late renewed nothing, above).
    this.leaseValidUntilMonotonicMs = this.validityStretched && !idle ? sentAtMs + ttlMs : Math.max(this.leaseValidUntilMonotonicMs, sentAtMs + ttlMs);
    this.validityStretched = idle;
    renewal.timer?.cancel();
    renewal.timer = null;
    if (renewal.outstanding > 0) this.watchLease(renewal);
  }

  /** `work`, or TIMEOUT once `ms` passed on the engine's clock (`work` goes on; its outcome is then ignored). */
  private withinDeadline<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.options.clock.setTimer(ms, () => reject(new CairnError("TIMEOUT", message, { details: { shard: this.shard, deadlineMs: ms } })));
      work.then(
        (value) => {
          timer.cancel();
          resolve(value);
        },
        (error: unknown) => {
          timer.cancel();
          reject(error);
        },
      );
    });
  }

  /** Whether the shard took no commit for idleAfterMs (and the tuning stretches idle leases at all). */
  private isIdle(nowMonotonicMs: number): boolean {
    return this.tuning.idleLeaseTtlMs > this.tuning.leaseTtlMs && nowMonotonicMs - this.lastCommitMonotonicMs >= this.tuning.idleAfterMs;
  }

  private heartbeatMissed(renewal: LeaseRenewal): void {
    if (!this.writesAt(renewal.epoch)) return;
    renewal.misses++;
    if (this.leaseMayHaveLapsed()) this.stepDown(renewal, "lease-lapsed");
    else if (renewal.misses >= this.tuning.heartbeatMissesMax) this.stepDown(renewal, "heartbeat-misses");
  }

  /**
   * Whether less than clockSkewMsMax of the lease is left on this node's monotonic clock:
   * a successor judging expiry by its own wall clock may take over from then on.
   */
  private leaseMayHaveLapsed(): boolean {
    return this.options.clock.monotonicMs() + this.tuning.clockSkewMsMax >= this.leaseValidUntilMonotonicMs;
  }

  /** Renewals are failing: one missed since the last success, or one is still unanswered. */
  private static renewalsFailing(renewal: LeaseRenewal): boolean {
    return renewal.misses > 0 || renewal.outstanding > 0;
  }

  /** While renewals fail, wakes when the lease may lapse (checkLease). */
  private watchLease(renewal: LeaseRenewal): void {
    if (renewal.timer !== null || this.options.stepDownOnFailedRenewals === false) return;
    const { clock } = this.options;
    const delayMs = Math.max(0, this.leaseValidUntilMonotonicMs - this.tuning.clockSkewMsMax - clock.monotonicMs());
    renewal.timer = clock.setTimer(delayMs, () => {
      renewal.timer = null;
      this.checkLease(renewal);
    });
  }

  /**
   * Steps the writer down if its renewals fail and its lease may have lapsed: from then on
   * it acknowledges nothing (DESIGN.md §9; see the header's "stepping down").
   */
  private checkLease(renewal: LeaseRenewal | null): void {
    if (renewal === null || !this.writesAt(renewal.epoch) || !ShardEngine.renewalsFailing(renewal)) return;
    if (this.leaseMayHaveLapsed()) this.stepDown(renewal, "lease-lapsed");
    else this.watchLease(renewal);
  }

  /**
   * Stops writing because the lease cannot be kept: units in flight fail with
   * ENGINE_POISONED (their segment may land: outcome unknown), queued ones and every later
   * commit with NOT_WRITER (never sent), the drivers stop, and the engine is "poisoned"
   * until re-acquired. Nothing is written to the bucket (it is not answering): the lease
   * lapses by itself.
   */
  private stepDown(renewal: LeaseRenewal, reason: StepDown["reason"]): void {
    if (!this.writesAt(renewal.epoch) || this.options.stepDownOnFailedRenewals === false) return;
    renewal.steppedDown = true;
    const { misses } = renewal;
    const why =
      reason === "lease-lapsed"
        ? `its lease may have lapsed while renewals failed or hung (${misses} missed)`
        : `${misses} heartbeats in a row failed or did not answer within ${this.tuning.heartbeatDeadlineMs} ms`;
    const details = { shard: this.shard, epoch: renewal.epoch, reason, misses };
    const unknown = new CairnError("ENGINE_POISONED", `shard ${this.shard}: the writer stepped down (${why}) while this write was in flight; whether it committed is unknown`, {
      details: { ...details, outcome: "unknown" },
    });
    this.abandonFlights(unknown);
    const notWriter = new CairnError("NOT_WRITER", `shard ${this.shard}: this node stepped down as the shard's writer (${why}); writes are refused, unsent, until it re-acquires`, {
      details,
    });
    this.becomeStopped("poisoned", notWriter, { reason, misses });
  }

  private writesAt(epoch: number): boolean {
    return this.currentState.kind === "writing" && this.currentState.epoch === epoch;
  }

  /**
   * The frontier driver's step: an idle shard whose frontier is below the newest commit
   * this node knows of on another shard — its own, or one it applied from another
   * writer's log — appends a tick, so readers of every shard's common frontier (on this
   * node and on others) see that commit. Its own tick is no data commit: idle shards
   * never keep each other ticking, on one node or across nodes.
   */
  frontierTick(): void {
    if (this.currentState.kind !== "writing" || !this.accepting || this.queue.length > 0 || this.flights.length > 0 || this.tickRequested) return;
    if ((this.options.frontierWanted?.() ?? true) === false) return;
    const newest = this.options.newestCommitTs?.() ?? this.lastDataTs;
    if (newest <= this.readTs) return;
    this.tickRequested = true;
    this.lastTickRequestedMs = this.options.clock.monotonicMs();
    this.kickFlush();
  }

  /**
   * Another shard of this node applied a data segment (its own commit, or one tailed from
   * another writer): tick now if this shard has not ticked within frontierTickMs, so the
   * first commit after a quiet spell reaches readers of the common frontier — on every
   * node — in about one round trip; else tick once that interval is over. Ticks stay at
   * least frontierTickMs apart, as the frontier driver's are.
   */
  frontierTickSoon(): void {
    if (!this.tuning.tickWhenIdle || this.deferredTick !== null || this.currentState.kind !== "writing") return;
    const sinceMs = this.options.clock.monotonicMs() - this.lastTickRequestedMs;
    if (sinceMs >= this.tuning.frontierTickMs) {
      this.frontierTick();
      return;
    }
    this.deferredTick = this.options.clock.setTimer(this.tuning.frontierTickMs - sinceMs, () => {
      this.deferredTick = null;
      this.frontierTick();
    });
  }

  /** The maxTs of the last data segment applied here, committed by this node or followed (0 before any). */
  get lastDataTs(): number {
    return this.lastDataAppliedTs;
  }

  /** Writes a snapshot of the current local state and points the manifest at it. */
  snapshotNow(): Promise<SnapshotPointer | null> {
    return this.serializeMaintenance(async () => {
      const owner = this.owner();
      const cursor = await this.options.local.openDumpCursor();
      if (cursor.meta.appliedSeqno <= (this.manifest.current.snapshot?.seqno ?? -1)) {
        cursor.close();
        return null;
      }
      const pointer = await writeSnapshot({
        store: this.options.store,
        deploymentId: this.options.deploymentId,
        shard: this.shard,
        cursor,
        attemptId: `${owner.epoch}-${randomHex(this.options.random, 4)}`,
        offThread: this.tuning.snapshotDeflate === "thread-pool",
      });
      await this.guard(
        owner.epoch,
        this.manifest.updateAsOwner(owner, (fields) =>
          fields.snapshot !== null && fields.snapshot.seqno >= pointer.seqno ? fields : { ...fields, snapshot: pointer },
        ),
      );
      this.sinceSnapshot = { segments: 0, bytes: 0, sinceMs: this.options.clock.nowMs() };
      this.emit({ type: "snapshot", shard: this.shard, pointer });
      return pointer;
    });
  }

  /** Runs one GC pass as the owner (the maintenance driver calls this on its cadence). */
  collectGarbageNow(options: { sweep?: boolean } = {}): Promise<GarbageReport> {
    return this.serializeMaintenance(async () => {
      const owner = this.owner();
      const report = await this.guard(
        owner.epoch,
        collectGarbage({
          store: this.options.store,
          manifest: this.manifest,
          owner,
          watermarks: this.watermarks,
          nowMs: this.options.clock.nowMs(),
          consumerTtlMs: this.tuning.consumerTtlMs,
          sweep: options.sweep ?? false,
          retentionMs: this.tuning.retentionMs,
          retainedSnapshotSpacingMs: this.tuning.retainedSnapshotSpacingMs,
          knownRecords: this.knownSnapshotRecords,
          ...(this.options.branchHolds ? { holds: this.options.branchHolds } : {}),
        }),
      );
      this.emit({ type: "gc", shard: this.shard, report });
      // Nothing collected and nothing held back: until new segments, another pass finds the same.
      const foundNothing = report.segmentsDeleted === 0 && report.snapshotObjectsDeleted === 0 && report.straysDeleted === 0 && report.heldBackBy === null;
      this.segmentsAtIdleGc = foundNothing ? this.segmentsWritten : null;
      return report;
    });
  }

  /**
   * Graceful stop of the writer: stops accepting units, drains the queue, stops the
   * drivers and clears the lease so a successor takes over at once. The engine is
   * "following" afterwards even if clearing the lease failed (that error is thrown; the
   * lease then lapses by itself at leaseExpiresAt), or "fenced" when a newer owner exists.
   */
  relinquish(): Promise<void> {
    return this.serializeTransition(() => this.relinquishNow());
  }

  private async relinquishNow(): Promise<void> {
    const state = this.currentState;
    if (state.kind !== "writing") return;
    this.accepting = false;
    this.tickRequested = false;
    // Drivers first: a heartbeat could otherwise request a tick after the drain.
    await this.stopDrivers();
    await this.drainFlushes();
    if (this.currentState.kind !== "writing") return;
    // From here on nothing is written under this epoch, whatever the CAS below does.
    this.currentState = { kind: "following" };
    this.stopWatchingLease();
    try {
      await this.manifest.relinquish({ nodeId: this.options.nodeId, epoch: state.epoch });
    } catch (error) {
      // Fenced: another node owns the shard already; say so rather than "following".
      if (hasErrorCode(error, "FENCED")) {
        this.currentState = { kind: "fenced", error: error as CairnError };
        this.emit({ type: "fenced", shard: this.shard, error: error as CairnError });
      }
      throw error;
    }
    this.emit({ type: "relinquished", shard: this.shard, epoch: state.epoch });
  }

  /**
   * Relinquishes if writing, then refuses everything. A lease that cannot be released
   * (the bucket is unreachable) simply expires; that is reported, not thrown. The caller
   * closes the local store.
   */
  close(): Promise<void> {
    this.closing = true;
    return this.serializeTransition(async () => {
      if (this.currentState.kind === "closed") return;
      await this.stopFollowerDrivers();
      try {
        await this.relinquishNow();
      } catch (error) {
        this.emit({ type: "driver-error", shard: this.shard, driver: "relinquish", error });
      }
      await this.stopDrivers();
      this.stopWatchingLease();
      // A fenced writer's last flights still settle into the local store the caller closes next.
      await this.drainFlushes();
      this.failQueued(new CairnError("ENGINE_CLOSED", `shard ${this.shard}'s engine was closed`));
      this.currentState = { kind: "closed" };
    });
  }

  private serializeTransition<T>(job: () => Promise<T>): Promise<T> {
    const run = this.transitions.then(job);
    this.transitions = run.catch(() => undefined);
    return run;
  }

  /**
   * Waits until no flush runs and no segment is in flight. Abandoned flights are not
   * waited for: they touch neither the local store nor the log position any more (a
   * create of theirs still out may land, a leftover like any fenced writer's), and one
   * stuck on an unanswering bucket must not hold up a stop or a re-acquire.
   */
  private async drainFlushes(): Promise<void> {
    while (this.flushLoop !== null || this.flights.length > 0) {
      await Promise.all([this.flushLoop, ...this.flights.map((flight) => flight.task)]);
    }
  }

  // ---- group commit ------------------------------------------------------------------
  //
  // Pipelined (DESIGN.md §4): the flush loop builds the next segment from the queue as soon
  // as fewer than pipelineDepth are in flight, each at the slot after the last one built
  // and chained to it. Every flight creates and verifies its segment on its own; flights
  // settle strictly in log order (settleFlights): a durable head is applied locally and
  // acknowledged, a failed one fails itself and every flight after it, unacknowledged.
  // Why that is safe: a segment is in the log iff it is valid and every slot before it is
  // filled, so by induction over the flights — each judged only once every one before it
  // was found durable — a created segment whose slot was never collected is in the log
  // (commitVerdict), and one after a failed segment is either past a successor's fence
  // (skipped by every reader) or waits on a slot whose fate is unknown.

  private kickFlush(): void {
    if (this.flushLoop !== null) return;
    this.flushLoop = this.runFlushes().finally(() => {
      this.flushLoop = null;
      if (this.currentState.kind === "writing" && (this.queue.length > 0 || this.tickRequested)) this.kickFlush();
    });
  }

  private async runFlushes(): Promise<void> {
    while (this.currentState.kind === "writing" && (this.queue.length > 0 || this.tickRequested)) {
      const epoch = this.currentState.epoch;
      // Nothing is sent once renewals fail and the lease may have lapsed: the writer steps down.
      this.checkLease(this.renewal);
      if (!this.writesAt(epoch)) break;
      if (this.flights.length >= this.depthNow()) {
        await new Promise<void>((resolve) => (this.flightSettled = resolve));
        continue;
      }
      if (this.queue.length === 0) {
        this.tickRequested = false;
        this.launch(epoch, [], "tick");
        continue;
      }
      if (!this.options.local.hasRoomFor(this.flightRows(), this.flightBytes())) {
        // Commits outpace the local store's folds: the next segment waits until its rows
        // fit beside those of the segments in flight, so memory stays bounded and the queue
        // (not the overlay) absorbs the burst.
        if (this.flights.length > 0) await new Promise<void>((resolve) => (this.flightSettled = resolve));
        else await this.waitForLocalRoom();
        continue;
      }
      // Group commit takes everything ready in this turn of the event loop: callers whose
      // commit follows a chain of promises (a function run after the previous flush
      // acknowledged it) would otherwise miss this segment by a few microtasks and wait a
      // whole flush for the next. Costs one event-loop turn, not a wait.
      await yieldToEventLoop();
      if (!this.writesAt(epoch) || this.queue.length === 0 || this.flights.length >= this.depthNow()) continue;
      this.launch(epoch, this.takeBatch(), "data");
    }
    if (this.currentState.kind !== "writing") this.failQueued(this.notWritingError());
  }

  private flightRows(): number {
    return this.flights.reduce((sum, flight) => sum + flight.rows, 0);
  }

  private flightBytes(): number {
    return this.flights.reduce((sum, flight) => sum + flight.bytes, 0);
  }

  /** How many segments may be in flight for the next slot: one in the slots a fenced writer's leftovers may still reach. */
  private depthNow(): number {
    const next = (this.builtTail ?? this.validator.position).nextSeqno;
    return next <= this.loneThroughSeqno ? 1 : this.tuning.pipelineDepth;
  }

  /** Never throws: a local store that closed or failed meanwhile stops the writer before anything is written. */
  private async waitForLocalRoom(): Promise<void> {
    try {
      await this.options.local.room();
    } catch (error) {
      this.becomeStopped(
        "poisoned",
        new CairnError("ENGINE_POISONED", `shard ${this.shard}: the local store failed; the engine refuses writes until re-acquired`, {
          cause: error,
          details: { shard: this.shard },
        }),
      );
    }
  }

  private takeBatch(): QueuedUnit[] {
    let bytes = 0;
    let count = 0;
    while (
      count < this.queue.length &&
      count < this.tuning.flushUnitsMax &&
      (count === 0 || bytes + this.queue[count]!.bytes <= this.tuning.flushBytesMax)
    ) {
      bytes += this.queue[count]!.bytes;
      count++;
    }
    return this.queue.splice(0, count);
  }

  /** Builds the next segment at the tail of what is built (stamping its units) and sends it on its way. */
  private launch(epoch: number, batch: readonly QueuedUnit[], kind: "data" | "tick"): void {
    let rows = 0;
    let bytes = 0;
    for (const queued of batch) {
      rows += queued.keys.length;
      bytes += queued.bytes;
    }
    const flight: Flight = { epoch, kind, batch, rows, bytes, segment: null!, stamps: [], startedMs: this.options.clock.monotonicMs(), outcome: null, abandoned: false, task: Promise.resolve() };
    this.buildFlight(flight, this.builtTail ?? this.validator.position);
    this.flights.push(flight);
    flight.task = this.fly(flight);
  }

  private buildFlight(flight: Flight, position: LogPosition): void {
    flight.segment = this.buildSegment(flight.epoch, flight.kind, flight.batch.length, position, (hybridClock) => {
      if (flight.kind === "tick") return markerStamp(hybridClock.next());
      const stamps = flight.batch.map(() => hybridClock.next());
      flight.stamps = stamps;
      // Units queued after these may have read their revisions: they take these stamps as prevTs.
      flight.batch.forEach((queued, index) => {
        for (const revision of queued.revisions) revision.stamp.ts = stamps[index]!;
      });
      const records = mergeBatches(flight.batch.map((queued, index) => stampUnit(queued.unit, stamps[index]!)));
      return { records, minTs: stamps[0]!, maxTs: stamps[stamps.length - 1]! };
    });
    this.builtTail = positionAfter(flight.segment);
  }

  /** A flight's create and verification; its outcome is judged in log order by settleFlights. Never throws. */
  private async fly(flight: Flight): Promise<void> {
    try {
      const context = this.appendContext(flight.epoch, () => this.flights.length === 1 && this.flights[0] === flight && !flight.abandoned);
      flight.segment = await appendSegment(context, flight.segment, (position) => {
        this.buildFlight(flight, position);
        return flight.segment;
      });
      if (flight.abandoned) return;
      this.emit({ type: "created", shard: this.shard, seqno: flight.segment.header.seqno, bytes: flight.segment.bytes.byteLength });
      flight.outcome = { verdict: await this.verifyCreated(flight.segment, flight.epoch) };
    } catch (error) {
      flight.outcome = { error };
    }
    if (!flight.abandoned) this.settleFlights();
  }

  /**
   * Acknowledges the flights at the head of the pipeline whose verification ended, in log
   * order, and fails everything from the first one that is not durable on.
   */
  private settleFlights(): void {
    while (this.flights.length > 0 && this.flights[0]!.outcome !== null) {
      const head = this.flights[0]!;
      const outcome = head.outcome!;
      let fencedAfter: boolean;
      try {
        if ("error" in outcome) throw outcome.error;
        fencedAfter = durableOrThrow(this.shard, head.segment, outcome.verdict).newerEpoch;
        // A durability check that ends once renewals failed past the lease's validity
        // acknowledges nothing: the writer steps down (failing every flight) instead.
        this.checkLease(this.renewal);
        if (head.abandoned) return;
        this.ingestOwn(head.segment);
      } catch (error) {
        this.failFlights(error);
        break;
      }
      this.flights.shift();
      if (this.flights.length === 0) this.builtTail = null;
      this.acknowledge(head);
      // A successor exists: build nothing more. The flights after this one are judged as
      // ever: a segment created in an uncollected slot after a durable one is durable too
      // (the successor fenced past it), one whose slot the successor took fails.
      if (fencedAfter) this.becomeStopped("fenced", new CairnError("FENCED", `shard ${this.shard}: a newer epoch took over after this commit`));
    }
    this.afterFlightsMoved();
  }

  private acknowledge(flight: Flight): void {
    const { segment, batch, stamps } = flight;
    this.emit({
      type: "flushed",
      shard: this.shard,
      kind: flight.kind,
      seqno: segment.header.seqno,
      hash: segment.hash,
      units: batch.length,
      bytes: segment.bytes.byteLength,
      content: segment.bytes,
      flushMs: this.options.clock.monotonicMs() - flight.startedMs,
    });
    // Committed units move from "in flight" to the recent writes before any caller
    // resumes, so a transaction reading at the new frontier does not conflict with them.
    batch.forEach((queued, index) => this.recentWrites.add(stamps[index]!, queued.keys, queued.seq));
    if (batch.length > 0) this.unitsAcknowledged = batch[batch.length - 1]!.seq;
    this.settlePending(batch);
    batch.forEach((queued, index) => queued.resolve({ ts: stamps[index]!, seqno: segment.header.seqno }));
    this.wakeAcknowledgedWaiters();
    this.sinceSnapshot.segments++;
    this.sinceSnapshot.bytes += segment.bytes.byteLength;
    this.segmentsWritten++;
  }

  /**
   * The head flight failed: it and every flight after it fail, none acknowledged — FENCED
   * when the head is definitely not in the log (then neither is anything after it: it lies
   * past the successor's fence), else ENGINE_POISONED (outcome unknown) — and the writer stops.
   */
  private failFlights(error: unknown): void {
    if (hasErrorCode(error, "FENCED")) {
      const fenced = error as CairnError;
      this.abandonFlights(fenced);
      this.becomeStopped("fenced", fenced);
      return;
    }
    const poisoned = new CairnError(
      "ENGINE_POISONED",
      `shard ${this.shard}: the outcome of a commit is unknown; the engine refuses writes until re-acquired`,
      { cause: error, details: { shard: this.shard, outcome: "unknown" } },
    );
    this.abandonFlights(poisoned);
    this.becomeStopped("poisoned", poisoned);
  }

  /** Fails every flight's units with `error`; their tasks end without a word (a segment that lands is left to catch-up). */
  private abandonFlights(error: unknown): void {
    const flights = this.flights;
    this.flights = [];
    this.builtTail = null;
    for (const flight of flights) {
      flight.abandoned = true;
      this.settlePending(flight.batch);
      for (const queued of flight.batch) queued.reject(error);
    }
    if (flights.length > 0) this.afterFlightsMoved();
  }

  /** A flight settled or was abandoned: the flush loop may build again, and the frontier may have moved. */
  private afterFlightsMoved(): void {
    const wake = this.flightSettled;
    this.flightSettled = null;
    wake?.();
    if (!this.flights.some((flight) => flight.kind === "data")) this.notifyFrontierMoved();
  }

  /**
   * Calls `listener` when `closedTs` may have moved without a segment being applied: the
   * last data segment in flight settled (its segment, if any, was announced before).
   */
  onFrontierMoved(listener: () => void): () => void {
    this.frontierListeners.add(listener);
    return () => this.frontierListeners.delete(listener);
  }

  private notifyFrontierMoved(): void {
    for (const listener of this.frontierListeners) {
      try {
        listener();
      } catch {
        // An observer's failure must not change the engine's behaviour.
      }
    }
  }

  /** Builds a segment of `kind` for `position` (the slot after it, chained to it). */
  private buildSegment(epoch: number, kind: SegmentKind, count: number, position: LogPosition, stamp: (hybridClock: HybridClock) => Stamped): Segment {
    const { hybridClock, deploymentId, nodeId } = this.options;
    hybridClock.observe(position.lastMaxTs);
    const { records, minTs, maxTs } = stamp(hybridClock);
    const header = { deploymentId, shard: this.shard, seqno: position.nextSeqno, epoch, kind, count, minTs, maxTs, prevHash: position.lastHash, writer: nodeId };
    return encodeSegment(header, records);
  }

  /**
   * How appendSegment reaches the log for a writer of `epoch`. A leftover at the slot is
   * taken in only while `lone()` (the segment is the only one in flight, or the fence).
   */
  private appendContext(epoch: number, lone: () => boolean): AppendContext {
    return {
      store: this.options.store,
      deploymentId: this.options.deploymentId,
      shard: this.shard,
      epoch,
      position: () => this.validator.position,
      ingest: async (leftover) => {
        const seqno = leftover.header.seqno;
        if (!lone()) {
          throw new CairnError("INTERNAL", `shard ${this.shard}: a leftover at slot ${seqno}, beyond where a fenced writer's pipeline reaches, while segments after it are in flight`, {
            details: { shard: this.shard, seqno },
          });
        }
        // The validity rule for a segment found at our tail: applied only if a manifest
        // read after its GET shows the slot uncollected and us still the owner.
        const manifest = await this.manifest.refresh();
        if (manifest.logStart > seqno || manifest.epoch > epoch) {
          throw new CairnError("FENCED", `shard ${this.shard}: epoch ${epoch} lost the shard while appending at ${seqno}`, {
            details: { shard: this.shard, seqno, logStart: manifest.logStart, manifestEpoch: manifest.epoch },
          });
        }
        if (!lone()) throw new CairnError("INTERNAL", `shard ${this.shard}: the writer stopped while taking in a leftover at slot ${seqno}`);
        if (ingestSegment(this.options.local, this.validator, leftover) === "apply") this.notifyApplied(leftover);
      },
    };
  }

  /**
   * DESIGN.md §4 verify: whether a segment this writer created is part of the log, from a
   * manifest read after the create (see commitVerdict). In "lease" mode the read is
   * skipped while this node's monotonic clock says the lease is ours for longer than the
   * tolerated clock skew: a wall clock stepped back cannot extend it.
   */
  private async verifyCreated(segment: Segment, epoch: number): Promise<CommitVerdict> {
    const { clock } = this.options;
    if (this.tuning.verify === "lease" && clock.monotonicMs() + this.tuning.clockSkewMsMax < this.leaseValidUntilMonotonicMs) {
      return { kind: "durable", newerEpoch: false };
    }
    return judgeCreatedSegment(await this.manifestReadFromNow(), segment.header.seqno, epoch);
  }

  /**
   * A manifest read sent after this call. Verifications that ask in the same turn of the
   * event loop (creates that answered together) share one GET: it is sent after all of them.
   */
  private manifestReadFromNow(): Promise<Manifest> {
    if (this.nextVerifyRead === null) {
      this.nextVerifyRead = Promise.resolve().then(() => {
        this.nextVerifyRead = null;
        return this.manifest.refresh();
      });
    }
    return this.nextVerifyRead;
  }

  private ingestOwn(segment: Segment): void {
    // Every unit passed checkApplicable when it was committed: no second pass over its records.
    if (ingestSegment(this.options.local, this.validator, segment, { recordsChecked: true }) !== "apply") {
      throw new CairnError("INTERNAL", `shard ${this.shard}: our own segment ${segment.header.seqno} was judged a leftover`);
    }
    this.notifyApplied(segment);
  }

  private becomeStopped(kind: "fenced" | "poisoned", error: CairnError, stepDown?: StepDown): void {
    if (this.currentState.kind !== "writing") return;
    this.currentState = { kind, error };
    this.wakeAcknowledgedWaiters();
    this.accepting = false;
    this.stopWatchingLease();
    this.failQueued(error);
    this.drivers?.abort();
    this.emit(
      kind === "fenced"
        ? { type: "fenced", shard: this.shard, error }
        : { type: "poisoned", shard: this.shard, error, ...(stepDown ? { stepDown } : {}) },
    );
  }

  private stopWatchingLease(): void {
    this.renewal?.timer?.cancel();
    if (this.renewal) this.renewal.timer = null;
  }

  /**
   * A newer epoch was found by work of `epoch`: a writer of that epoch stops at once; one
   * that stepped down meanwhile learns it was fenced (its late heartbeat, say).
   */
  private fencedAt(epoch: number, error: CairnError): void {
    if (this.writesAt(epoch)) {
      this.becomeStopped("fenced", error);
    } else if (this.currentState.kind === "poisoned" && this.renewal?.epoch === epoch && this.renewal.steppedDown && !this.acquiring) {
      this.currentState = { kind: "fenced", error };
      this.emit({ type: "fenced", shard: this.shard, error });
    }
  }

  private failQueued(error: unknown): void {
    const queued = this.queue;
    this.queue = [];
    this.settlePending(queued);
    for (const unit of queued) unit.reject(error);
  }

  /** Whether a write committed after `readTs`, or one queued or in flight, touches `readSet`. */
  private readSetConflicts(readTs: number, readSet: ReadSet): boolean {
    return this.recentWrites.touches(readTs, readSet) || this.pendingKeys.touches(readSet, () => true);
  }

  /**
   * The check for a transaction that read the pending state up to unit `through`: its
   * reads by id conflict only with writes of later units (pending, or committed after
   * that unit's ts); its ranges and receipts, which read the store at readTs alone, with
   * any write after readTs or pending, as ever.
   */
  private pendingReadConflicts(unit: WriteUnit, token: PendingReadToken): boolean {
    const state = this.currentState;
    if (state.kind !== "writing" || state.epoch !== token.epoch) return true;
    const { documents = [], ...rangesAndReceipts } = unit.readSet ?? {};
    if (this.readSetConflicts(unit.readTs, rangesAndReceipts)) return true;
    if (documents.length === 0) return false;
    for (const id of documents) if (this.pendingDocuments.writtenAfter(id, token.through)) return true;
    // Units are acknowledged in queue order: none after `through` is durable yet unless it is.
    if (token.through > this.unitsAcknowledged) return false;
    const throughTs = this.recentWrites.tsOfSeq(token.through);
    return throughTs === null || this.recentWrites.touches(Math.max(unit.readTs, throughTs), { documents });
  }

  /**
   * For a mutation run that read the pending state (`read.pendingRead`) and writes nothing:
   * resolves, once every unit it read is acknowledged, the ts it is serialized at (that of
   * the last unit its view saw: it read exactly the state there). WRITE_CONFLICT (run it
   * again) if what it read by range changed since its readTs or is pending, or if a unit
   * it read failed: its result must never rest on a write that is not durable.
   */
  async settleRead(read: Pick<WriteUnit, "readTs" | "readSet" | "conflictsWith"> & { readonly pendingRead: PendingReadToken }): Promise<number> {
    const token = read.pendingRead;
    const conflict = () => new CairnError("WRITE_CONFLICT", `shard ${this.shard}: what a read-only transaction read through pending writes changed or failed; it runs again`);
    const { documents: _readById, ...rangesAndReceipts } = read.readSet ?? {};
    if (!this.writesAt(token.epoch) || this.readSetConflicts(read.readTs, rangesAndReceipts)) throw conflict();
    if (read.conflictsWith && this.conflicts(read.readTs, read.conflictsWith)) throw conflict();
    while (this.unitsAcknowledged < token.through && this.writesAt(token.epoch)) {
      await new Promise<void>((resolve) => this.acknowledgedWaiters.push(resolve));
    }
    const ts = this.unitsAcknowledged >= token.through ? this.recentWrites.tsOfSeq(token.through) : null;
    if (ts === null) throw conflict();
    return ts;
  }

  private wakeAcknowledgedWaiters(): void {
    const waiters = this.acknowledgedWaiters;
    if (waiters.length === 0) return;
    this.acknowledgedWaiters = [];
    for (const wake of waiters) wake();
  }

  /**
   * A view of this writer's pending state for one run of a mutation (early lock release:
   * see PendingView), or null when the engine does not write.
   */
  pendingView(): PendingView | null {
    const state = this.currentState;
    if (state.kind !== "writing" || !this.accepting) return null;
    return new PendingView(this.shard, this.readTs, this.unitsQueued, this.unitsAcknowledged, state.epoch, this.pendingDocuments, this.pendingKeys, this.recentWrites);
  }

  /** A queued or in-flight unit left the pending state (committed or failed). */
  private settlePending(units: readonly QueuedUnit[]): void {
    for (const queued of units) {
      this.pendingKeys.update(queued.keys, (count) => (count === undefined || count <= 1 ? undefined : count - 1));
      if (queued.revisions.length > 0) this.pendingDocuments.remove(queued.revisions);
    }
  }

  private conflicts(readTs: number, conflictsWith: (key: WrittenKey) => boolean): boolean {
    if (this.recentWrites.conflicts(readTs, conflictsWith)) return true;
    const pending = (queued: QueuedUnit) => queued.keys.some(conflictsWith);
    return this.flights.some((flight) => flight.batch.some(pending)) || this.queue.some(pending);
  }

  // ---- drivers ------------------------------------------------------------------------

  private startDrivers(): void {
    const controller = new AbortController();
    this.drivers = controller;
    const drivers = this.options.drivers ?? ENGINE_DRIVERS;
    this.driverTasks = [];
    if (drivers.includes("heartbeat")) {
      this.driverTasks.push(this.heartbeatLoop(controller.signal));
    }
    if (drivers.includes("frontier") && this.tuning.tickWhenIdle) {
      this.driverTasks.push(
        this.driverLoop(controller.signal, "frontier", this.tuning.frontierTickMs, async () => {
          if (this.options.clock.monotonicMs() - this.lastTickRequestedMs >= this.tuning.frontierTickMs) this.frontierTick();
        }),
      );
    }
    if (drivers.includes("maintenance")) {
      this.driverTasks.push(
        this.driverLoop(controller.signal, "maintenance", this.tuning.maintenanceIntervalMs, () => this.runMaintenance()),
      );
    }
  }

  /** The drivers of a node that does not write the shard: started by open, stopped by close. */
  private startFollowerDrivers(): void {
    const drivers = this.options.drivers ?? ENGINE_DRIVERS;
    const controller = new AbortController();
    this.followerDrivers = controller;
    this.followerTasks = [];
    if (drivers.includes("prune")) this.followerTasks.push(this.pruneLoop(controller.signal));
  }

  private async stopFollowerDrivers(): Promise<void> {
    this.followerDrivers?.abort();
    this.followerDrivers = null;
    await Promise.all(this.followerTasks);
    this.followerTasks = [];
  }

  /**
   * The "prune" driver: local history's retention while this node does not write the
   * shard (a writer prunes in its maintenance driver), on the maintenance cadence.
   */
  private async pruneLoop(signal: AbortSignal): Promise<void> {
    while (await this.pause(this.tuning.maintenanceIntervalMs, signal)) {
      const kind = this.currentState.kind;
      if (kind === "closed") return;
      if (kind === "writing") continue;
      try {
        await this.pruneLocal();
      } catch (error) {
        this.emit({ type: "driver-error", shard: this.shard, driver: "prune", error });
      }
    }
  }

  /**
   * Resolves true after `ms` on the engine's clock, false once `signal` aborts. A timer,
   * not a sleep: a follower's upkeep never keeps the process alive by itself.
   */
  private pause(ms: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const onAbort = () => {
        timer.cancel();
        resolve(false);
      };
      const timer = this.options.clock.setTimer(ms, () => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      });
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  private async stopDrivers(): Promise<void> {
    this.deferredTick?.cancel();
    this.deferredTick = null;
    this.drivers?.abort();
    this.drivers = null;
    await Promise.all(this.driverTasks);
    this.driverTasks = [];
  }

  /**
   * The heartbeat driver: a renewal every heartbeatIntervalMs, or idleHeartbeatIntervalMs
   * while the lease is stretched — woken early by the first commit after that.
   */
  private async heartbeatLoop(signal: AbortSignal): Promise<void> {
    // A renewal that failed is tried again at the busy cadence, stretched or not: the lease
    // this node counts on is the last one that landed, maybe the short one.
    let failed = false;
    while (!signal.aborted) {
      const wake = new AbortController();
      const stop = () => wake.abort();
      signal.addEventListener("abort", stop, { once: true });
      this.wakeHeartbeat = stop;
      // Stretched and busy again (a commit came during the last renewal): renew at once.
      const waitMs =
        !this.leaseStretched || failed ? this.tuning.heartbeatIntervalMs : this.isIdle(this.options.clock.monotonicMs()) ? this.tuning.idleHeartbeatIntervalMs : 0;
      try {
        if (waitMs > 0) await this.options.clock.sleep(waitMs, wake.signal);
      } catch {
        // Woken by a commit, or stopped: the loop's condition tells which.
      } finally {
        signal.removeEventListener("abort", stop);
        this.wakeHeartbeat = null;
      }
      if (signal.aborted) return;
      if (this.currentState.kind !== "writing") return;
      try {
        await this.heartbeat();
        failed = false;
      } catch (error) {
        failed = true;
        if (!hasErrorCode(error, "FENCED")) this.emit({ type: "driver-error", shard: this.shard, driver: "heartbeat", error });
      }
    }
  }

  private async driverLoop(signal: AbortSignal, name: string, intervalMs: number, step: () => Promise<unknown>): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.options.clock.sleep(intervalMs, signal);
      } catch {
        return;
      }
      if (this.currentState.kind !== "writing") return;
      try {
        await step();
      } catch (error) {
        if (!hasErrorCode(error, "FENCED")) this.emit({ type: "driver-error", shard: this.shard, driver: name, error });
      }
    }
  }

  /** One maintenance step: a snapshot if the cadence says so, then GC if it is due. */
  async runMaintenance(): Promise<void> {
    const nowMs = this.options.clock.nowMs();
    const since = this.sinceSnapshot;
    const due =
      since.segments >= this.tuning.snapshotEverySegments ||
      since.bytes >= this.tuning.snapshotEveryBytes ||
      (since.segments > 0 && nowMs - since.sinceMs >= this.tuning.snapshotEveryMs);
    if (due) await this.snapshotNow();
    // An idle shard whose last pass found nothing, and that wrote nothing since, skips the
    // pass (its LISTs are most of an idle shard's requests after the heartbeats).
    const nothingNew = this.isIdle(this.options.clock.monotonicMs()) && this.segmentsAtIdleGc === this.segmentsWritten;
    if (nowMs - this.lastGcAtMs >= this.tuning.gcIntervalMs && !nothingNew) {
      this.lastGcAtMs = nowMs;
      this.gcRuns++;
      await this.collectGarbageNow({ sweep: this.gcRuns % this.tuning.gcSweepEveryRuns === 0 });
    }
    await this.pruneLocal();
  }

  /**
   * Retention (DESIGN.md §6, §8): drops local history older than historyRetentionMs and
   * receipts older than receiptRetentionMs (those holding a client's floor older than
   * receiptFloorRetentionMs), never anything a read at the frontier needs.
   * The work is cut into bounded steps with the event loop free in between, so a long
   * backlog never holds commits up.
   */
  async pruneLocal(): Promise<void> {
    const local = this.options.local;
    const nowMicros = this.options.clock.nowMs() * 1000;
    const frontier = this.readTs;
    const historyBelowTs = Math.max(0, Math.min(frontier, Math.floor(nowMicros - this.tuning.historyRetentionMs * 1000)));
    const receiptsBelowTs = Math.max(0, Math.min(frontier, Math.floor(nowMicros - this.tuning.receiptRetentionMs * 1000)));
    const floorsBelowTs = Math.max(0, Math.min(receiptsBelowTs, Math.floor(nowMicros - this.tuning.receiptFloorRetentionMs * 1000)));
    let rowsRemoved = 0;
    for (;;) {
      const step = await local.pruneHistoryStep(historyBelowTs, receiptsBelowTs, floorsBelowTs);
      rowsRemoved += step.documentsRemoved + step.indexEntriesRemoved + step.receiptsRemoved;
      if (step.done) break;
      await yieldToEventLoop();
      if (this.currentState.kind === "closed" || this.closing) return;
    }
    if (rowsRemoved > 0) this.emit({ type: "pruned", shard: this.shard, minReadableTs: local.meta().minReadableTs, rowsRemoved });
  }

  private serializeMaintenance<T>(job: () => Promise<T>): Promise<T> {
    const run = this.maintenance.then(job);
    this.maintenance = run.catch(() => undefined);
    return run;
  }

  // ---- helpers ------------------------------------------------------------------------

  /** Awaits `work`, done as the writer of `epoch`; a FENCED outcome stops that writer at once. */
  private async guard<T>(epoch: number, work: Promise<T>): Promise<T> {
    try {
      return await work;
    } catch (error) {
      if (hasErrorCode(error, "FENCED")) this.fencedAt(epoch, error as CairnError);
      throw error;
    }
  }

  private owner(): LeaseOwner {
    const state = this.currentState;
    if (state.kind !== "writing") throw this.notWritingError();
    return { nodeId: this.options.nodeId, epoch: state.epoch };
  }

  private notWritingError(): CairnError {
    const state = this.currentState;
    switch (state.kind) {
      case "fenced":
      case "poisoned":
        return state.error;
      case "closed":
        return new CairnError("ENGINE_CLOSED", `shard ${this.shard}'s engine is closed`);
      case "following":
        return new CairnError("NOT_WRITER", `this node does not own shard ${this.shard}`);
      case "writing":
        return new CairnError("NOT_WRITER", `shard ${this.shard} is relinquishing its lease`);
    }
  }

  private assertNotClosed(): void {
    if (this.currentState.kind === "closed") throw this.notWritingError();
  }

  private countSinceSnapshot() {
    const snapshotSeqno = this.manifest.current.snapshot?.seqno ?? -1;
    return {
      segments: Math.max(0, this.validator.position.nextSeqno - 1 - snapshotSeqno),
      bytes: 0,
      sinceMs: this.options.clock.nowMs(),
    };
  }

  /**
   * Tells every applied listener of `segment`. A listener that throws has not taken it in
   * (an invalidation it may have lost): every restored listener then hears of a restore
   * at the segment's maxTs, which makes the sync handler re-run the shard's subscriptions.
   */
  private notifyApplied(segment: Segment): void {
    if (segment.header.kind === "data") this.lastDataAppliedTs = Math.max(this.lastDataAppliedTs, segment.header.maxTs);
    let failed = false;
    for (const listener of this.appliedListeners) {
      try {
        listener(segment);
      } catch (error) {
        failed = true;
        this.emit({ type: "driver-error", shard: this.shard, driver: "applied-listener", error });
      }
    }
    if (failed) this.notifyRestored(segment.header.maxTs);
  }

  private notifyRestored(frontierTs: number): void {
    for (const listener of this.restoredListeners) {
      try {
        listener(frontierTs);
      } catch (error) {
        this.emit({ type: "driver-error", shard: this.shard, driver: "restored-listener", error });
      }
    }
  }

  private emit(event: EngineEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // An observer's failure must not change the engine's behaviour.
    }
  }
}

/**
 * The durable verdict, or the error a flush fails with: FENCED when the segment is
 * definitely not in the log, ENGINE_POISONED (outcome unknown) when the bucket cannot tell.
 */
function durableOrThrow(shard: number, segment: Segment, verdict: CommitVerdict): { readonly newerEpoch: boolean } {
  const { seqno } = segment.header;
  switch (verdict.kind) {
    case "durable":
      return verdict;
    case "lost":
      throw new CairnError("FENCED", `shard ${shard}: segment ${seqno} is not part of the log: ${verdict.reason}`, {
        details: { shard, seqno },
      });
    case "unknown":
      throw new CairnError("ENGINE_POISONED", `shard ${shard}: whether segment ${seqno} is part of the log is unknown: ${verdict.reason}`, {
        details: { shard, seqno, outcome: "unknown" },
      });
  }
}

function* dumpChunks(cursor: DumpCursor): Generator<DumpChunk> {
  for (let chunk = cursor.next(); chunk !== null; chunk = cursor.next()) yield chunk;
}

function removeSqliteFiles(path: string): void {
  if (path === ":memory:") return;
  for (const suffix of ["", "-wal", "-shm"]) rmSync(`${path}${suffix}`, { force: true });
}

function mergeBatches(batches: readonly RecordBatch[]): RecordBatch {
  if (batches.length === 1) return batches[0]!;
  return {
    revisions: batches.flatMap((batch) => batch.revisions),
    indexUpdates: batches.flatMap((batch) => batch.indexUpdates),
    receipts: batches.flatMap((batch) => batch.receipts),
  };
}

/** The log position right after `segment`, as a reader that applied it would stand. */
function positionAfter(segment: Segment): LogPosition {
  const { header } = segment;
  return { nextSeqno: header.seqno + 1, highestEpoch: header.epoch, lastHash: segment.hash, lastMaxTs: header.maxTs };
}

interface Stamped {
  readonly records: RecordBatch;
  readonly minTs: number;
  readonly maxTs: number;
}

/** Fence and tick segments carry no records, only a timestamp that advances the frontier. */
function markerStamp(ts: number): Stamped {
  return { records: EMPTY_RECORD_BATCH, minTs: ts, maxTs: ts };
}
