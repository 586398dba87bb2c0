import {
  CairnError,
  systemClock,
  type Clock,
  ConditionWaiters,
  CONNECT_FRONTIER_WAIT_MS,
  SERVER_DRAIN_MS_MAX,
  SESSION_OVER_LIMITS_MS_MAX,
  every,
  type Timer,
} from "../base/index.js";
import { type DocumentRevision, IntervalIndex, type IntervalHandle, type KeyRange } from "../model/index.js";
import type { Segment } from "../segments/index.js";
import { DEFAULT_OUTBOX_LIMITS, type OutboxLimits } from "./Outbox.js";
import { CLOSE_CODES } from "./protocol.js";
import { RecentCommits } from "./RecentCommits.js";
import { RecentRevisions } from "./RecentRevisions.js";
import { ResumeRegistry } from "./ResumeRegistry.js";
import { Session, type LogSource, type SessionHost, type SessionTransport } from "./Session.js";
import { SharedQueryRuns } from "./SharedQueryRuns.js";
import type { SyncBackend } from "./SyncBackend.js";
import type { TokenVerifier } from "./TokenVerifier.js";
import { segmentWrites } from "./segmentWrites.js";

export interface SyncHandlerOptions {
  readonly backend: SyncBackend;
  /** Verifies SetAuth tokens; null refuses every token (anonymous sessions only). */
  readonly verifier?: TokenVerifier | null;
  readonly clock?: Clock;
  readonly log?: (line: string) => void;
  readonly outboxLimits?: OutboxLimits;
  /** How long a session may stay over its limits before it is disconnected. */
  readonly overLimitsMsMax?: number;
  /** How often sessions are checked for overstayed limits and expired tokens. */
  readonly sweepIntervalMs?: number;
  /** How long Connect waits for the frontier to reach the client's maxObservedTs (default CONNECT_FRONTIER_WAIT_MS). */
  readonly connectFrontierWaitMs?: number;
  /** The deployment's admin key: AdminAuth with it makes a session an admin's (default null: none can). */
  readonly adminKey?: string | null;
  /** The node's function logs, which admin sessions may follow (default null: none). */
  readonly logs?: LogSource | null;
}

/** What one connection gets from the handler: frames in, and a call when its socket closed. */
export interface SessionConnection {
  receive(text: string): void;
  closed(): void;
}

export interface SyncStats {
  readonly sessions: number;
  readonly subscriptions: number;
  readonly queuedFrames: number;
  readonly droppedFrames: number;
  readonly transitionsCommitted: number;
  readonly sharedRunHits: number;
  /** Query runs made for subscriptions (the misses of the shared runs). */
  readonly sharedRunMisses: number;
  /** Queries a reconnecting client re-added that were answered QueryUnchanged from its last session, not run. */
  readonly resumedQueries: number;
  /** Closed sessions' registrations kept for resume. */
  readonly resumableSessions: number;
  /** QueryDiffs sent: results moved by a commit's documents instead of a run. */
  readonly queryDiffs: number;
}

interface SubscriptionRef {
  readonly session: Session;
  readonly queryId: number;
}

/**
 * The node's sync handler (DESIGN.md §8): every session of the node, the subscription
 * index over their read ranges, and the feed of applied commits. The same entry point —
 * `segmentApplied` — serves a writer (its own commits) and a replica (segments it tails).
 *
 * A commit is matched against the interval index of every session's read ranges: only
 * sessions whose subscriptions it touched get work, plus sessions with a mutation
 * committing at that moment (the origin must see ts advance). The cost of a commit is
 * O(written keys · log(ranges) + affected subscriptions), independent of how many
 * subscriptions it does not touch.
 *
 * With several shards, a segment applied on one shard is announced only once every
 * shard's frontier has passed it (the backend's readTs, DESIGN.md §5): until then a query
 * could not read all shards at its ts. Segments wait in ts order; each Transition moves a
 * session to one ts at which every shard is complete.
 *
 * Invariants: `currentTs` only grows, never passes the backend's readTs, and every
 * announced commit at or below it has been matched; sessions are in `sessions` from
 * connect until closed, and their ranges leave the index when they close.
 */
export class SyncHandler {
  readonly backend: SyncBackend;
  private readonly host: SessionHost;
  private readonly index = new IntervalIndex<SubscriptionRef>();
  private readonly sessions = new Set<Session>();
  private readonly committing = new Set<Session>();
  /** Sessions owed a commit item once `ts` reaches the commit ts of a mutation they were answered. */
  private readonly owed = new Map<Session, number>();
  private readonly listeners = new Map<string, Set<Session>>();
  private readonly shared = new SharedQueryRuns();
  private readonly recent = new RecentCommits();
  private readonly revisions = new RecentRevisions();
  private readonly resume: ResumeRegistry;
  private resumedQueries = 0;
  private queryDiffs = 0;
  /** Applied, not yet under the all-shard frontier; ascending ts. `null` writes: a restore. */
  private readonly held: { readonly ts: number; readonly writes: readonly KeyRange[] | null; readonly revisions: readonly DocumentRevision[] }[] = [];
  private readonly clock: Clock;
  private readonly log: (line: string) => void;
  private readonly overLimitsMsMax: number;
  private ts: number;
  private droppedBefore = 0;
  private transitionsCommitted = 0;
  private accepting = true;
  private readonly frontierWaiters: ConditionWaiters;
  /** Set by frontierFinal: nothing moves the frontier any more. */
  private frontierIsFinal = false;
  private sweeper: Timer | null;

  constructor(options: SyncHandlerOptions) {
    this.backend = options.backend;
    this.clock = options.clock ?? systemClock;
    this.frontierWaiters = new ConditionWaiters(this.clock);
    this.resume = new ResumeRegistry(this.clock);
    this.log = options.log ?? (() => undefined);
    this.overLimitsMsMax = options.overLimitsMsMax ?? SESSION_OVER_LIMITS_MS_MAX;
    this.ts = options.backend.readTs;
    this.host = this.sessionHost(options);
    this.sweeper = every(this.clock, options.sweepIntervalMs ?? 1_000, () => this.sweep());
  }

  get currentTs(): number {
    return this.ts;
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** A new connection. Its first frame must be Connect. */
  connect(transport: SessionTransport): SessionConnection {
    if (!this.accepting) {
      transport.close(CLOSE_CODES.goingAway, "server stopping");
      return { receive: () => undefined, closed: () => undefined };
    }
    const session = new Session(this.host, transport);
    this.sessions.add(session);
    return { receive: (text) => session.receive(text), closed: () => session.close("socket closed") };
  }

  /**
   * A segment is applied locally (the engine's or a tailer's event): fan its writes out
   * once every shard's frontier has passed it.
   */
  segmentApplied(segment: Segment): void {
    let writes: readonly KeyRange[] | null;
    try {
      writes = segmentWrites(segment);
    } catch (error) {
      // Never lose an invalidation: what changed is unknown, so everything re-runs there.
      this.log(`sync: the writes of segment ${segment.header.seqno} of shard ${segment.header.shard} could not be read (${(error as Error).message}); re-running every subscription at its ts`);
      writes = null;
    }
    this.hold(segment.header.maxTs, writes, writes === null ? [] : segment.records.revisions);
  }

  /**
   * A shard's local state was replaced as a whole at `ts` (a replica restored a
   * snapshot): no key list says what changed, so every subscription of every session
   * re-runs there (once every shard's frontier has passed it).
   */
  storeRestored(ts: number): void {
    this.hold(ts, null, []);
  }

  /**
   * The functions were replaced (`cairn dev` reloaded the app): results cached or sent
   * were computed by the old code, so every subscription of every session re-runs at the
   * current frontier, as after a restore.
   */
  codeReplaced(): void {
    this.hold(this.backend.readTs, null, []);
  }

  /**
   * Announces what the all-shard frontier passed, in ts order: call when a shard's
   * frontier may have moved without a segment (a writer's idle shard).
   */
  frontierMoved(): void {
    const frontier = this.backend.readTs;
    while (this.held.length > 0 && this.held[0]!.ts <= frontier) {
      const { ts, writes, revisions } = this.held.shift()!;
      if (writes === null) {
        this.replacedAt(ts);
        continue;
      }
      try {
        this.commitApplied(ts, writes, revisions);
      } catch (error) {
        // Matching failed halfway: some sessions may have missed it, so all re-run at ts.
        this.log(`sync: matching the commit at ts ${ts} failed (${(error as Error).message}); re-running every subscription there`);
        this.replacedAt(ts);
      }
    }
  }

  private hold(ts: number, writes: readonly KeyRange[] | null, revisions: readonly DocumentRevision[]): void {
    let at = this.held.length;
    while (at > 0 && this.held[at - 1]!.ts > ts) at--;
    this.held.splice(at, 0, { ts, writes, revisions });
    this.frontierMoved();
  }

  private replacedAt(ts: number): void {
    this.ts = Math.max(this.ts, ts);
    this.recent.replacedAt(ts);
    this.revisions.unknownThrough(ts);
    this.shared.clear();
    this.resume.clear();
    for (const session of this.owedThrough(this.ts)) session.enqueueCommit(this.ts, [], []);
    for (const session of this.sessions) session.storeReplaced(ts);
    this.frontierReached();
  }

  /** Removes and returns the sessions owed a commit item at or below `ts`. */
  private owedThrough(ts: number): Session[] {
    const due: Session[] = [];
    for (const [session, owedTs] of this.owed) if (owedTs <= ts) due.push(session);
    for (const session of due) this.owed.delete(session);
    return due;
  }

  /**
   * Resolves true once commits through `ts` are applied and matched here (`currentTs >=
   * ts`), false if `timeoutMs` passes first: how a replica waits for a write it forwarded
   * or for a client that has seen a newer state than it has.
   */
  waitForTs(ts: number, timeoutMs: number): Promise<boolean> {
    if (this.frontierIsFinal) return Promise.resolve(this.ts >= ts);
    return this.frontierWaiters.wait(() => this.ts >= ts, timeoutMs);
  }

  /**
   * The node stopped following the log (its tailers and engines are stopping): the
   * frontier will not move again, so every waiter gets its answer now rather than hold
   * the process until its time limit.
   */
  frontierFinal(): void {
    this.frontierIsFinal = true;
    this.frontierWaiters.settleAll();
  }

  private frontierReached(): void {
    this.frontierWaiters.notify();
  }

  /**
   * Writes applied at `ts` (all keys as points or ranges of the query keyspaces), `ts` at
   * or below the backend's readTs: announced now.
   */
  private commitApplied(ts: number, writes: readonly KeyRange[], revisions: readonly DocumentRevision[]): void {
    if (ts <= this.ts && writes.length === 0) return;
    this.ts = Math.max(this.ts, ts);
    this.recent.add(ts, writes);
    this.revisions.add(revisions);
    const affected = new Map<Session, Set<number>>();
    for (const write of writes) {
      for (const { session, queryId } of this.index.overlapping(write)) {
        let ids = affected.get(session);
        if (ids === undefined) affected.set(session, (ids = new Set()));
        ids.add(queryId);
      }
    }
    for (const session of this.committing) if (!affected.has(session)) affected.set(session, new Set());
    for (const session of this.owedThrough(this.ts)) if (!affected.has(session)) affected.set(session, new Set());
    for (const [session, queryIds] of affected) {
      this.transitionsCommitted++;
      session.enqueueCommit(ts, queryIds, session.running === null ? [] : [session.running]);
    }
    this.frontierReached();
  }

  stats(): SyncStats {
    let subscriptions = 0;
    let queuedFrames = 0;
    let dropped = this.droppedBefore;
    for (const session of this.sessions) {
      subscriptions += session.subscriptionCount;
      queuedFrames += session.outbox.queuedFrames;
      dropped += session.outbox.droppedTotal;
    }
    const shared = this.shared.stats;
    return {
      sessions: this.sessions.size,
      subscriptions,
      queuedFrames,
      droppedFrames: dropped,
      transitionsCommitted: this.transitionsCommitted,
      sharedRunHits: shared.hits,
      sharedRunMisses: shared.misses,
      resumedQueries: this.resumedQueries,
      resumableSessions: this.resume.stats.sessions,
      queryDiffs: this.queryDiffs,
    };
  }

  /**
   * Stops accepting sessions, lets running requests finish and their answers leave
   * (bounded by SERVER_DRAIN_MS_MAX: mutations stay answerable from receipts after that),
   * then ends every session with FatalError SERVER_STOPPING and close code 1001.
   */
  async close(drainMsMax = SERVER_DRAIN_MS_MAX): Promise<void> {
    this.accepting = false;
    this.sweeper?.cancel();
    this.sweeper = null;
    const deadline = this.clock.monotonicMs() + drainMsMax;
    while ([...this.sessions].some((session) => session.requestCount > 0) && this.clock.monotonicMs() < deadline) {
      await this.clock.sleep(20);
    }
    // Answers already produced go out before the sessions end (bounded by the same deadline).
    while ([...this.sessions].some((session) => session.outbox.backlogged) && this.clock.monotonicMs() < deadline) {
      await this.clock.sleep(20);
    }
    const stopping = new CairnError("SERVER_STOPPING", "the server is stopping; reconnect");
    for (const session of [...this.sessions]) session.fatal(stopping, CLOSE_CODES.goingAway);
  }

  private sessionHost(options: SyncHandlerOptions): SessionHost {
    const handler = this;
    return {
      backend: this.backend,
      verifier: options.verifier ?? null,
      shared: this.shared,
      recent: this.recent,
      resume: this.resume,
      resumed: () => {
        this.resumedQueries++;
      },
      diffsSent: (count) => {
        this.queryDiffs += count;
      },
      outboxLimits: options.outboxLimits ?? DEFAULT_OUTBOX_LIMITS,
      connectFrontierWaitMs: options.connectFrontierWaitMs ?? CONNECT_FRONTIER_WAIT_MS,
      adminKey: options.adminKey ?? null,
      logs: options.logs ?? null,
      get currentTs() {
        return handler.ts;
      },
      waitForTs: (ts, timeoutMs) => this.waitForTs(ts, timeoutMs),
      diffStep: (state, ts) => state.advance(ts, () => this.revisions.between(state.ts, ts)),
      // Read ranges are made once per run (or diff row) and never changed: the index shares their bytes, not copies them per session.
      register: (session, queryId, ranges) => ranges.map((range) => this.index.insertShared(range, { session, queryId })),
      unregister: (handles: readonly IntervalHandle[]) => {
        for (const handle of handles) this.index.remove(handle);
      },
      mutationStarted: (session) => this.committing.add(session),
      mutationFinished: (session) => this.committing.delete(session),
      oweTransition: (session, ts) => {
        if (ts <= this.ts) session.enqueueCommit(this.ts, [], []);
        else this.owed.set(session, Math.max(ts, this.owed.get(session) ?? 0));
      },
      listen: (session, topic, on) => this.listen(session, topic, on),
      publish: (topic, eventText) => {
        for (const session of this.listeners.get(topic) ?? []) session.broadcast(eventText);
      },
      closed: (session) => {
        this.droppedBefore += session.outbox.droppedTotal;
        this.sessions.delete(session);
        this.committing.delete(session);
        this.owed.delete(session);
      },
      log: this.log,
    };
  }

  private listen(session: Session, topic: string, on: boolean): void {
    let set = this.listeners.get(topic);
    if (on) {
      if (set === undefined) this.listeners.set(topic, (set = new Set()));
      set.add(session);
    } else if (set !== undefined) {
      set.delete(session);
      if (set.size === 0) this.listeners.delete(topic);
    }
  }

  /** Disconnects sessions over their limits for too long; downgrades sessions whose token expired. */
  private sweep(): void {
    const nowMonotonic = this.clock.monotonicMs();
    const nowMs = this.clock.nowMs();
    for (const session of [...this.sessions]) {
      session.expireIdentity(nowMs);
      if (!session.backlogged) {
        session.overLimitsSinceMs = null;
        continue;
      }
      session.overLimitsSinceMs ??= nowMonotonic;
      if (nowMonotonic - session.overLimitsSinceMs >= this.overLimitsMsMax) {
        session.overloaded(`over its limits (socket full or resync pending) for ${Math.round((nowMonotonic - session.overLimitsSinceMs) / 1000)} s`);
      }
    }
  }
}
