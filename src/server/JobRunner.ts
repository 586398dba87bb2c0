import {
  type Clock,
  CairnError,
  errorKindOf,
  hasErrorCode,
  SCHEDULED_JOBS_KEPT_MS,
  SCHEDULED_JOBS_RUNNING_MAX,
  SCHEDULER_POLL_MS,
  SCHEDULER_RETRY_MS,
} from "../base/index.js";
import type { FunctionRuntime, JobState, ScheduledJob } from "../functions/index.js";
import type { DocumentId, Value } from "../model/index.js";
import type { SyncBackend } from "../sync/index.js";

export interface JobRunnerOptions {
  readonly runtime: FunctionRuntime;
  /** The node's backend: a job's function on a shard written elsewhere is forwarded there, like a client's call. */
  readonly backend: SyncBackend;
  readonly shards: number;
  /** Whether this node writes `shard` now: only a shard's writer runs its jobs. */
  readonly writes: (shard: number) => boolean;
  readonly clock: Clock;
  readonly log: (line: string) => void;
  /**
   * How long after an action's job was marked running it is surely over (the action time
   * limit plus the clock skew between nodes): a job still running by then on no runner
   * here was left by a writer that stopped, and is recorded as failed, never run again.
   */
  readonly actionOverMs: number;
}

/**
 * Runs scheduled jobs (functions/scheduledFunctions.ts) on the shards this node writes,
 * one loop per shard: it reads the shard's due jobs from the local copy, runs up to
 * SCHEDULED_JOBS_RUNNING_MAX at a time, and sleeps until the next is due, a commit here
 * schedules an earlier one, a role change, or SCHEDULER_POLL_MS (jobs scheduled before a
 * takeover are found by that first read).
 *
 * Guarantees, whatever fails over or restarts:
 * - a job's mutation commits exactly once. On the job's own shard it runs with the job
 *   (MutationCallOptions.job: the job is read, and marked done in the same commit); on
 *   another shard it runs under the receipt key `_job:<id>` (a second run is answered from
 *   the receipt) and the job is marked done after it;
 * - a job's action runs at most once: the job is marked running in a commit of its own
 *   before the action starts; one found running that no runner here started is recorded
 *   as failed once it is surely over (actionOverMs), not run again;
 * - a failure the function itself decided (its error, bad arguments, a timeout) ends the
 *   job as failed; a passing one (a conflict, a failover, an unreachable writer) leaves it
 *   pending for another try after SCHEDULER_RETRY_MS;
 * - shard 0's writer installs the app's crons when it starts writing and when the app is
 *   reloaded (`_system:syncCrons`); a tick of a cron the app no longer declares is
 *   cancelled instead of run.
 */
export class JobRunner {
  private readonly loops: ShardLoop[];
  private stopped = false;

  constructor(options: JobRunnerOptions) {
    this.loops = Array.from({ length: options.shards }, (_, shard) => new ShardLoop(shard, options, () => this.stopped));
    options.runtime.onJobsScheduled((shard, dueMs) => this.loops[shard]?.scheduled(dueMs));
  }

  start(): void {
    for (const loop of this.loops) loop.start();
  }

  /** A shard's role changed: its loop looks at once (a new writer runs what was due). */
  rolesChanged(): void {
    for (const loop of this.loops) {
      loop.cronsInstalled = false;
      loop.wake();
    }
  }

  /** The app was replaced (`cairn dev`): its crons are installed again. */
  appReplaced(): void {
    this.rolesChanged();
  }

  /** Stops starting jobs and waits for the mutations running (actions running go on unrecorded: the next writer records them failed). */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops.map((loop) => loop.stop()));
  }
}

class ShardLoop {
  private running = new Map<DocumentId, Promise<void>>();
  /** Jobs whose last try failed for a passing reason, with when to try again. */
  private readonly retryAtMs = new Map<DocumentId, number>();
  private wakeUp: (() => void) | null = null;
  private woken = false;
  private loop: Promise<void> | null = null;
  cronsInstalled = false;
  private lastErrorLogMs = Number.NEGATIVE_INFINITY;
  /** When running actions and expired jobs were last looked for (monotonic). */
  private lastUpkeepMs = Number.NEGATIVE_INFINITY;
  /** The last look found more due than it had slots for. */
  private moreDue = false;

  constructor(
    private readonly shard: number,
    private readonly options: JobRunnerOptions,
    private readonly stopped: () => boolean,
  ) {}

  start(): void {
    this.loop ??= this.run();
  }

  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  scheduled(dueMs: number): void {
    if (dueMs <= this.options.clock.nowMs() + SCHEDULER_POLL_MS) this.wake();
  }

  async stop(): Promise<void> {
    this.wake();
    await this.loop;
    // Mutations finish within their time limit; an action is abandoned to the next writer (actionOverMs).
    await Promise.all([...this.running.values()]);
  }

  private async run(): Promise<void> {
    const { clock } = this.options;
    while (!this.stopped()) {
      this.woken = false;
      let sleepMs = SCHEDULER_POLL_MS;
      if (this.options.writes(this.shard)) {
        try {
          sleepMs = await this.pass();
        } catch (error) {
          this.logError(`reading its jobs failed: ${(error as Error).message}`);
        }
      }
      if (this.woken || this.stopped()) continue;
      await new Promise<void>((resolve) => {
        const timer = clock.setTimer(Math.max(1, sleepMs), resolve);
        this.wakeUp = () => {
          timer.cancel();
          resolve();
        };
      });
      this.wakeUp = null;
    }
  }

  /** Starts what is due; returns how long to sleep before the next look. */
  private async pass(): Promise<number> {
    const { runtime, clock } = this.options;
    if (this.shard === 0 && !this.cronsInstalled) {
      // Tried again at the next look; the jobs run meanwhile.
      await this.installCrons().catch((error: unknown) => this.logError(`installing the crons failed: ${describeError(error)}`));
    }
    const nowMs = clock.nowMs();
    const free = SCHEDULED_JOBS_RUNNING_MAX - this.running.size;
    // The jobs running here are still pending until their commits land: read past them
    // (and past those waiting to be tried again). Running actions and expired jobs are
    // looked for once per poll, not at every refill.
    const upkeep = clock.monotonicMs() - this.lastUpkeepMs >= SCHEDULER_POLL_MS;
    if (upkeep) this.lastUpkeepMs = clock.monotonicMs();
    const jobs = await runtime.jobsOfShard(this.shard, {
      nowMs,
      limit: this.running.size + this.retryAtMs.size + free,
      finishedBeforeMs: nowMs - SCHEDULED_JOBS_KEPT_MS,
      upkeep,
    });
    let started = 0;
    let nextMs = jobs.nextDueMs ?? Number.POSITIVE_INFINITY;
    for (const job of jobs.due) {
      if (this.running.has(job._id)) continue;
      const retryAt = this.retryAtMs.get(job._id);
      if (retryAt !== undefined && retryAt > nowMs) {
        nextMs = Math.min(nextMs, retryAt);
        continue;
      }
      if (started >= free) break;
      started++;
      this.track(job._id, this.runJob(job));
    }
    for (const job of jobs.running) {
      if (this.running.has(job._id) || job.state.kind !== "inProgress" || job.state.startedTime + this.options.actionOverMs > nowMs) continue;
      this.track(job._id, this.finish(job, { kind: "failed", error: "the node running this action stopped before it finished; it ran at most once and is not run again" }));
    }
    if (jobs.expired.length > 0) await this.deleteExpired(jobs.expired, nowMs);
    // More due than we could start: look again once half the slots are free (track wakes us).
    this.moreDue = started >= free;
    if (this.moreDue) return SCHEDULER_POLL_MS;
    return Math.min(SCHEDULER_POLL_MS, nextMs - clock.nowMs());
  }

  private track(id: DocumentId, run: Promise<void>): void {
    const tracked = run
      .catch((error: unknown) => this.logError(`job ${id}: ${(error as Error)?.message ?? String(error)}`))
      .finally(() => {
        this.running.delete(id);
        // Refilled in halves: a look per finished job would read the due range once per job.
        if (this.moreDue && this.running.size <= SCHEDULED_JOBS_RUNNING_MAX / 2) this.wake();
        else if (this.running.size === 0) this.wake();
      });
    this.running.set(id, tracked);
  }

  private async runJob(job: ScheduledJob): Promise<void> {
    const declared = job.cron === undefined || this.options.runtime.app.crons.some((cron) => cron.name === job.cron!.name);
    if (!declared) {
      await this.finish(job, { kind: "canceled" });
      return;
    }
    if (job.kind === "action") {
      await this.runAction(job);
      return;
    }
    const { runtime, backend } = this.options;
    let onThisShard: boolean;
    try {
      onThisShard = runtime.mutationShard(job.name, job.args, { internal: true }) === this.shard;
    } catch (error) {
      // The function is gone or takes other arguments now (the app changed since it was scheduled).
      await this.ended(job, error);
      return;
    }
    try {
      if (onThisShard) {
        await runtime.runMutation(job.name, job.args, { internal: true, job: job._id });
        this.retryAtMs.delete(job._id);
        return;
      }
      await backend.runMutation(job.name, job.args, { identity: null, internal: true, clientId: `_job:${job._id}`, seq: 0 });
    } catch (error) {
      await this.ended(job, error);
      return;
    }
    this.retryAtMs.delete(job._id);
    await this.finish(job, { kind: "success" }, true);
  }

  private async runAction(job: ScheduledJob): Promise<void> {
    const { backend } = this.options;
    try {
      const started = await backend.runMutation("_system:startJob", { id: job._id }, { identity: null, internal: true });
      if (started.value !== true) return;
    } catch (error) {
      this.retryLater(job, error);
      return;
    }
    let state: JobState;
    try {
      await backend.runAction(job.name, job.args, { identity: null, internal: true });
      state = { kind: "success" };
    } catch (error) {
      // Whatever stopped it, it ran (or may have): at most once, so it is over.
      state = { kind: "failed", error: describeError(error) };
    }
    await this.finish(job, state);
  }

  /** A job's run failed: over for a failure of the function, pending again for a passing one. */
  private async ended(job: ScheduledJob, error: unknown): Promise<void> {
    if (!isFinalFailure(error)) {
      this.retryLater(job, error);
      return;
    }
    this.retryAtMs.delete(job._id);
    await this.finish(job, { kind: "failed", error: describeError(error) });
  }

  private retryLater(job: ScheduledJob, error: unknown): void {
    this.retryAtMs.set(job._id, this.options.clock.nowMs() + SCHEDULER_RETRY_MS);
    this.logError(`job ${job._id} (${job.name}) will be tried again: ${describeError(error)}`);
  }

  /**
   * Records a job's end on its shard, through the backend: to whichever node writes the
   * shard now (this one lost it to a takeover while an action ran: the new writer takes
   * the outcome, which it would otherwise record as failed once actionOverMs passed).
   * Passing failures are retried until that, or until this node stops.
   */
  private async finish(job: ScheduledJob, state: Exclude<JobState, { kind: "pending" | "inProgress" }>, ranAnyway = false): Promise<void> {
    const { backend, clock } = this.options;
    const startedMs = clock.monotonicMs();
    for (;;) {
      try {
        await backend.runMutation("_system:finishJob", { id: job._id, state: state as unknown as Value, ...(ranAnyway ? { ranAnyway } : {}) }, { identity: null, internal: true });
        return;
      } catch (error) {
        if (isFinalFailure(error) || this.stopped() || clock.monotonicMs() - startedMs > this.options.actionOverMs) throw error;
        await clock.sleep(SCHEDULER_RETRY_MS);
      }
    }
  }

  private async deleteExpired(jobs: readonly ScheduledJob[], nowMs: number): Promise<void> {
    try {
      await this.options.backend.runMutation("_system:deleteJobs", { ids: jobs.map((job) => job._id), before: nowMs - SCHEDULED_JOBS_KEPT_MS }, { identity: null, internal: true });
    } catch (error) {
      this.logError(`deleting finished jobs failed: ${describeError(error)}`);
    }
  }

  private async installCrons(): Promise<void> {
    const { runtime, log } = this.options;
    const crons = runtime.app.crons.map((cron) => ({ name: cron.name, path: cron.path, args: cron.args, schedule: cron.schedule as unknown as Value }));
    // On the runtime itself (this node writes shard 0): Cairn's upkeep, not a call to count among the node's mutations.
    const run = await runtime.runMutation("_system:syncCrons", { crons }, { internal: true });
    this.cronsInstalled = true;
    const report = run.value as { installed: string[]; kept: string[]; canceled: number; refused: { name: string; error: string }[] };
    if (report.installed.length > 0 || report.canceled > 0) log(`crons: ${report.installed.length} installed, ${report.kept.length} unchanged, ${report.canceled} tick(s) cancelled`);
    for (const refused of report.refused) log(`cron ${JSON.stringify(refused.name)} is not installed: ${refused.error}`);
  }

  /** At most one line a minute per shard: a loop that fails keeps failing the same way. */
  private logError(line: string): void {
    const nowMs = this.options.clock.monotonicMs();
    if (nowMs - this.lastErrorLogMs < 60_000) return;
    this.lastErrorLogMs = nowMs;
    this.options.log(`shard ${this.shard}: scheduler: ${line}`);
  }
}

/** A failure the function decided (or its call can never succeed): the job is over. Anything else may pass. */
function isFinalFailure(error: unknown): boolean {
  if (!(error instanceof CairnError)) return true;
  return errorKindOf(error) === "InvalidInput" || hasErrorCode(error, "FUNCTION_FAILED");
}

function describeError(error: unknown): string {
  if (error instanceof CairnError) return `${error.code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
