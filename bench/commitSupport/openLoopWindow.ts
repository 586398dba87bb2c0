import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { setImmediate as yieldTurn, setTimeout as sleep } from "node:timers/promises";
import { hasErrorCode } from "../../src/base/errors.js";
import type { Random } from "../../src/base/random.js";
import type { ShardEngine } from "../../src/shard/ShardEngine.js";
import { eventsSince, type EngineEventCounts, type EngineEventTally } from "./EngineEventTally.js";
import { round, summarizeLatencies, type LatencySummary } from "../kit/LatencySummary.js";
import type { OpenLoopMutations, PlannedMutation } from "./openLoopMutations.js";
import { PoissonArrivals } from "../kit/PoissonArrivals.js";
import { backlogLimit, keptUp, sustainFailures } from "./windowVerdict.js";

/**
 * One open-loop run at a fixed arrival rate: Poisson arrivals for a warm-up, then a
 * measured window, each arrival starting a mutation at once without waiting for earlier
 * ones. Then arrivals stop and the mutations still in flight are awaited (the drain), so
 * that every arrival of the window is measured to its end and the next run starts empty.
 *
 * What is measured, for the arrivals of the window:
 * - commit latency from the arrival's scheduled time (not from when the event loop got
 *   to it) to its acknowledgement, so a late start counts against the engine;
 * - commits acknowledged inside the window per second (whatever their arrival time);
 * - conflicts (WRITE_CONFLICT: the document read was written after the read ts) and
 *   other failures, by code, neither in the latency samples;
 * - the backlog when the window opens and closes, and its peak: mutations in flight
 *   plus arrivals that fell due but wait for the event loop to start them;
 * - the process's CPU time (all of the engine, the S3 client and this driver; the
 *   endpoint runs in another process) per acknowledged commit and as cores busy, and
 *   the event loop's delay p99 and maximum;
 * - snapshots, GC passes and driver errors the engine reported inside the window.
 *
 * Whether the window kept up and sustained its rate is judged by windowVerdict.ts. A
 * backlog of BACKLOG_RUNAWAY_FACTOR times backlogLimit ends the run early (unless the
 * plan says otherwise): only a rate the engine cannot sustain gets there, and running on
 * would only lengthen the drain.
 */
export interface WindowPlan {
  readonly rate: number;
  readonly warmupSeconds: number;
  /** Least length of the measured window. */
  readonly measuredSeconds: number;
  /**
   * Whether a runaway backlog ends the run (default true: a rate search learns all it
   * needs). A window that must span a fixed stretch of time (request counts) keeps going.
   */
  readonly endOnRunaway?: boolean;
  /** Keeps the window open after measuredSeconds while this holds, for at most extensionSecondsMax more. */
  readonly extendWhile?: (inWindow: EngineEventCounts) => boolean;
  readonly extensionSecondsMax?: number;
  /** Started when the window opens and awaited when it closes (e.g. reset the endpoint's counters). */
  readonly onOpen?: () => Promise<void>;
  /** Awaited when the window closes, before the drain (e.g. read the endpoint's counters). */
  readonly onClose?: () => Promise<void>;
}

export interface WindowFigures extends EngineEventCounts {
  readonly targetRate: number;
  readonly measuredSeconds: number;
  readonly arrivals: number;
  readonly arrivalsPerSecond: number;
  /** Commits acknowledged inside the window, whenever they arrived. */
  readonly acknowledged: number;
  /** Mutations settled inside the window (committed, conflicted or failed) over its arrivals. */
  readonly completionRatio: number;
  readonly completionsPerSecond: number;
  readonly commit: LatencySummary;
  readonly updates: number;
  readonly inserts: number;
  readonly conflicts: number;
  readonly failures: number;
  readonly failureCodes: Readonly<Record<string, number>>;
  readonly backlogAtOpen: number;
  readonly backlogAtClose: number;
  readonly backlogPeak: number;
  readonly backlogLimit: number;
  /** The run ended early: the backlog reached BACKLOG_RUNAWAY_FACTOR × the limit. */
  readonly runaway: boolean;
  /** Arrivals of the window a runaway left unstarted (not in the latency samples). */
  readonly abandoned: number;
  readonly drainSeconds: number;
  /** Arrivals of the window still in flight when the drain gave up. */
  readonly unfinished: number;
  readonly cpuMicrosPerCommit: number;
  readonly cpuCores: number;
  readonly eventLoopDelayP99Ms: number;
  /** The longest the event loop was blocked in the window (one long block is one sample: p99 hides it). */
  readonly eventLoopDelayMaxMs: number;
  readonly sustained: boolean;
  /** Completions kept pace with arrivals, latency aside (see keptUp). */
  readonly keptUp: boolean;
  /** Why not sustained, one phrase per failed criterion; empty when sustained. */
  readonly notSustainedBecause: readonly string[];
}

export interface OpenLoopTarget {
  readonly engine: ShardEngine;
  readonly mutations: OpenLoopMutations;
  readonly events: EngineEventTally;
  /** Draws the arrival gaps. */
  readonly random: Random;
}

const BACKLOG_RUNAWAY_FACTOR = 10;
/** A drain longer than this means the engine is stuck, not slow: the run reports what is left. */
const DRAIN_MS_MAX = 120_000;
/**
 * Arrivals started in one event-loop turn at most. When the loop lags (the engine is
 * busy), the arrivals that fell due meanwhile are started in turns of this many, with
 * I/O and timers (flush completions) between them, as a server's requests would
 * interleave; their latency still counts from their scheduled time.
 */
const ARRIVALS_PER_TURN_MAX = 64;
/** While a window may be extended, how often its condition is re-checked. */
const EXTENSION_CHECK_MS = 100;
const EVENT_LOOP_RESOLUTION_MS = 10;

export async function runOpenLoopWindow(target: OpenLoopTarget, plan: WindowPlan, latencyBoundMs: number): Promise<WindowFigures> {
  const run = new WindowRun(target, plan, latencyBoundMs);
  await run.arrive();
  await run.drain();
  return run.figures();
}

interface OpenedWindow {
  readonly atMs: number;
  readonly cpu: NodeJS.CpuUsage;
  readonly events: EngineEventCounts;
  readonly backlog: number;
  /** The onOpen hook's outcome: its error, or null once it succeeded. */
  readonly onOpen: Promise<unknown>;
}

interface ClosedWindow {
  readonly seconds: number;
  readonly cpuMicros: number;
  readonly events: EngineEventCounts;
  readonly backlog: number;
  readonly eventLoopDelayP99Ms: number;
  readonly eventLoopDelayMaxMs: number;
}

class WindowRun {
  private readonly arrivals: PoissonArrivals;
  private readonly limit: number;
  private readonly eventLoopDelay = monitorEventLoopDelay({ resolution: EVENT_LOOP_RESOLUTION_MS });
  private opened: OpenedWindow | null = null;
  private closed: ClosedWindow | null = null;
  private closedAtMs = Number.POSITIVE_INFINITY;
  private runaway = false;
  /** Scheduled times of arrivals that fell due, oldest first; those before dueHead were started. */
  private due: number[] = [];
  private dueHead = 0;
  /** Arrivals of the window never started because the run ran away. */
  private abandoned = 0;
  private inFlight = 0;
  private inFlightWindow = 0;
  private backlogPeak = 0;
  private onEmpty: (() => void) | null = null;
  private drainSeconds = 0;
  private readonly tally = {
    arrivals: 0,
    acknowledgedInWindow: 0,
    settledInWindow: 0,
    updates: 0,
    inserts: 0,
    conflicts: 0,
    failures: 0,
  };
  private readonly failureCodes: Record<string, number> = {};
  private readonly latenciesMs: number[] = [];

  constructor(
    private readonly target: OpenLoopTarget,
    private readonly plan: WindowPlan,
    private readonly latencyBoundMs: number,
  ) {
    this.arrivals = new PoissonArrivals(target.random, plan.rate);
    this.limit = backlogLimit(plan.rate, latencyBoundMs);
  }

  /**
   * Starts every arrival as it falls due until the window closes, then the arrivals that
   * fell due before the close but were not started yet (none, unless the event loop
   * lagged). An arrival that fell due counts in the backlog whether started or not.
   */
  async arrive(): Promise<void> {
    const startedMs = performance.now();
    const opensAtMs = startedMs + this.plan.warmupSeconds * 1000;
    const closesAtMs = opensAtMs + this.plan.measuredSeconds * 1000;
    const extendedCloseMs = closesAtMs + (this.plan.extensionSecondsMax ?? 0) * 1000;
    let nextArrivalMs = startedMs + this.arrivals.nextGapMs();
    const enqueueDue = (nowMs: number) => {
      for (; nextArrivalMs <= nowMs; nextArrivalMs += this.arrivals.nextGapMs()) this.enqueue(nextArrivalMs);
    };
    for (;;) {
      const nowMs = performance.now();
      if (this.opened === null && nowMs >= opensAtMs) this.open(nowMs);
      enqueueDue(nowMs);
      this.startDue();
      if (this.runaway || (this.opened !== null && nowMs >= closesAtMs && !this.extended(nowMs, extendedCloseMs))) break;
      if (this.due.length > this.dueHead) {
        await yieldTurn();
        continue;
      }
      const boundaryMs = this.opened === null ? opensAtMs : nowMs < closesAtMs ? closesAtMs : nowMs + EXTENSION_CHECK_MS;
      await sleep(Math.max(0, Math.min(nextArrivalMs, boundaryMs) - performance.now()));
    }
    if (this.opened === null) this.open(performance.now());
    enqueueDue(performance.now());
    await this.close();
    if (this.runaway) {
      this.abandoned = this.due.length - this.dueHead;
      return;
    }
    while (this.due.length > this.dueHead) {
      this.startDue();
      await yieldTurn();
    }
  }

  /** Waits for every mutation in flight, at most DRAIN_MS_MAX. */
  async drain(): Promise<void> {
    const startedMs = performance.now();
    if (this.inFlight > 0) {
      const empty = new Promise<void>((resolve) => (this.onEmpty = resolve));
      const timeout = sleep(DRAIN_MS_MAX, undefined, { ref: false });
      await Promise.race([empty, timeout]);
    }
    this.drainSeconds = (performance.now() - startedMs) / 1000;
  }

  figures(): WindowFigures {
    const opened = this.opened!;
    const closed = this.closed!;
    const { arrivals, acknowledgedInWindow } = this.tally;
    const seconds = closed.seconds;
    const partial = {
      targetRate: this.plan.rate,
      measuredSeconds: round(seconds, 3),
      arrivals,
      arrivalsPerSecond: Math.round(arrivals / seconds),
      acknowledged: acknowledgedInWindow,
      completionRatio: arrivals === 0 ? 0 : round(this.tally.settledInWindow / arrivals, 3),
      completionsPerSecond: Math.round(acknowledgedInWindow / seconds),
      commit: summarizeLatencies(this.latenciesMs),
      updates: this.tally.updates,
      inserts: this.tally.inserts,
      conflicts: this.tally.conflicts,
      failures: this.tally.failures,
      failureCodes: { ...this.failureCodes },
      backlogAtOpen: opened.backlog,
      backlogAtClose: closed.backlog,
      backlogPeak: this.backlogPeak,
      backlogLimit: this.limit,
      runaway: this.runaway,
      abandoned: this.abandoned,
      drainSeconds: round(this.drainSeconds, 2),
      unfinished: this.inFlightWindow,
      cpuMicrosPerCommit: acknowledgedInWindow === 0 ? Number.NaN : Math.round(closed.cpuMicros / acknowledgedInWindow),
      cpuCores: round(closed.cpuMicros / (seconds * 1_000_000), 2),
      eventLoopDelayP99Ms: round(closed.eventLoopDelayP99Ms, 1),
      eventLoopDelayMaxMs: round(closed.eventLoopDelayMaxMs, 1),
      snapshots: closed.events.snapshots - opened.events.snapshots,
      gcPasses: closed.events.gcPasses - opened.events.gcPasses,
      driverErrors: closed.events.driverErrors - opened.events.driverErrors,
    };
    const notSustainedBecause = sustainFailures(partial, this.latencyBoundMs);
    return { ...partial, sustained: notSustainedBecause.length === 0, keptUp: keptUp(partial), notSustainedBecause };
  }

  private extended(nowMs: number, extendedCloseMs: number): boolean {
    const extendWhile = this.plan.extendWhile;
    if (extendWhile === undefined || nowMs >= extendedCloseMs) return false;
    return extendWhile(eventsSince(this.opened!.events, this.target.events.current));
  }

  private open(nowMs: number): void {
    this.eventLoopDelay.enable();
    this.opened = {
      atMs: nowMs,
      cpu: process.cpuUsage(),
      events: this.target.events.current,
      backlog: this.backlog,
      // Settled here, awaited at close: a failure must not surface as an unhandled rejection meanwhile.
      onOpen: (this.plan.onOpen?.() ?? Promise.resolve()).then(
        () => null,
        (error: unknown) => error ?? new Error("the window's onOpen hook failed"),
      ),
    };
  }

  private async close(): Promise<void> {
    const opened = this.opened!;
    const cpu = process.cpuUsage(opened.cpu);
    this.eventLoopDelay.disable();
    this.closedAtMs = performance.now();
    this.closed = {
      seconds: (this.closedAtMs - opened.atMs) / 1000,
      cpuMicros: cpu.user + cpu.system,
      events: this.target.events.current,
      backlog: this.backlog,
      eventLoopDelayP99Ms: this.eventLoopDelay.percentile(99) / 1e6,
      eventLoopDelayMaxMs: this.eventLoopDelay.max / 1e6,
    };
    const onOpenError = await opened.onOpen;
    if (onOpenError !== null) throw onOpenError;
    await this.plan.onClose?.();
  }

  /** An arrival fell due: it joins the backlog until it is started. */
  private enqueue(scheduledMs: number): void {
    this.due.push(scheduledMs);
    if (this.inWindow(scheduledMs)) this.tally.arrivals++;
    this.checkBacklog();
  }

  /** Starts up to ARRIVALS_PER_TURN_MAX due arrivals, oldest first. */
  private startDue(): void {
    const end = Math.min(this.due.length, this.dueHead + ARRIVALS_PER_TURN_MAX);
    while (this.dueHead < end && !this.runaway) this.start(this.due[this.dueHead++]!);
    if (this.dueHead === this.due.length) {
      this.due = [];
      this.dueHead = 0;
    }
  }

  /** Whether an arrival scheduled at `scheduledMs` belongs to the measured window. */
  private inWindow(scheduledMs: number): boolean {
    return this.opened !== null && scheduledMs >= this.opened.atMs && (this.closed === null || scheduledMs <= this.closedAtMs);
  }

  /** Mutations in flight plus arrivals that fell due and wait to be started. */
  private get backlog(): number {
    return this.inFlight + this.due.length - this.dueHead;
  }

  private checkBacklog(): void {
    if (this.opened === null || this.closed !== null) return;
    this.backlogPeak = Math.max(this.backlogPeak, this.backlog);
    if (this.plan.endOnRunaway !== false && this.backlog >= BACKLOG_RUNAWAY_FACTOR * this.limit) this.runaway = true;
  }

  /** One arrival: read, plan and queue its mutation now; record how it ends. */
  private start(scheduledMs: number): void {
    const inWindow = this.inWindow(scheduledMs);
    const { engine, mutations } = this.target;
    let planned: PlannedMutation;
    try {
      planned = mutations.next(engine.readTs, (id, ts) => engine.local.get(id, ts));
    } catch (error) {
      if (inWindow) this.countFailure(error);
      return;
    }
    this.track(inWindow, +1);
    engine.commit(planned.unit).then(
      () => this.settled(inWindow, scheduledMs, planned, null),
      (error: unknown) => this.settled(inWindow, scheduledMs, planned, error),
    );
  }

  private settled(inWindow: boolean, scheduledMs: number, planned: PlannedMutation, error: unknown): void {
    this.track(inWindow, -1);
    if (this.opened !== null && this.closed === null) this.tally.settledInWindow++;
    if (error === null) {
      if (planned.insertedId !== null) this.target.mutations.remember(planned.insertedId);
      if (this.opened !== null && this.closed === null) this.tally.acknowledgedInWindow++;
      if (!inWindow) return;
      this.latenciesMs.push(performance.now() - scheduledMs);
      if (planned.kind === "update") this.tally.updates++;
      else this.tally.inserts++;
      return;
    }
    if (!inWindow) return;
    if (hasErrorCode(error, "WRITE_CONFLICT")) this.tally.conflicts++;
    else this.countFailure(error);
  }

  private track(inWindow: boolean, change: 1 | -1): void {
    this.inFlight += change;
    if (inWindow) this.inFlightWindow += change;
    this.checkBacklog();
    if (this.inFlight === 0) this.onEmpty?.();
  }

  private countFailure(error: unknown): void {
    this.tally.failures++;
    const code = typeof (error as { code?: unknown })?.code === "string" ? (error as { code: string }).code : "uncoded";
    this.failureCodes[code] = (this.failureCodes[code] ?? 0) + 1;
  }
}
