import { CairnError, SCHEDULED_JOBS_PER_CALL_MAX } from "../base/index.js";
import { parseDocumentId, routeOfId, type DocumentId, type Value, type ValueObject } from "../model/index.js";
import type { App } from "./App.js";
import type { Catalog } from "./catalog.js";
import type { DatabaseWriter } from "./Database.js";
import { finishedJob, jobFields, jobOf, nextTickMs, SCHEDULED_FUNCTIONS_TABLE, type CronSchedule, type JobState, type ScheduledJob } from "./scheduledFunctions.js";
import { validateWith } from "./validate.js";

/**
 * `ctx.scheduler`: runs a mutation or an action later. From a mutation, a job is a
 * document of `_scheduled_functions` written in the mutation's own commit (it exists iff
 * the mutation committed); from an action, each call is a small mutation of its own.
 * The function must exist and be a mutation or an action, and its arguments must pass its
 * validator, when it is scheduled (FUNCTION_NOT_FOUND, INVALID_ARGUMENT): a job never
 * fails later for what could be known now. Returns the job's id, whose document a query
 * reads with `ctx.db.system.get(id)`.
 */
export interface Scheduler {
  /** Runs `path` with `args` `delayMs` milliseconds after this function's `ctx.now()` (0: as soon as the writer can). */
  runAfter(delayMs: number, path: string, args?: Record<string, unknown>): Promise<DocumentId>;
  /** Runs `path` at `time` (ms since the epoch, or a Date); a time past is as soon as possible. */
  runAt(time: number | Date, path: string, args?: Record<string, unknown>): Promise<DocumentId>;
  /**
   * Cancels a job that has not run: it will not run. A running action goes on (its
   * outcome is not recorded over the cancellation); a finished job is left as it is.
   */
  cancel(id: DocumentId): Promise<void>;
}

/** A mutation's scheduler: its jobs are written with its other writes, on its shard. */
export class MutationScheduler implements Scheduler {
  private scheduled = 0;
  /** The earliest time a job of this run is due (null: it scheduled none): its runner is woken for it once the commit is durable. */
  earliestMs: number | null = null;

  constructor(
    private readonly db: DatabaseWriter,
    private readonly app: App,
    private readonly catalog: Catalog,
    private readonly nowMs: number,
    /** The route of the run's shard (its jobs' ids carry it). */
    private readonly route: Uint8Array,
  ) {}

  async runAfter(delayMs: number, path: string, args: Record<string, unknown> = {}): Promise<DocumentId> {
    if (typeof delayMs !== "number" || !Number.isFinite(delayMs) || delayMs < 0) {
      throw new CairnError("INVALID_ARGUMENT", `scheduler.runAfter takes a delay of zero or more milliseconds, not ${String(delayMs)}`);
    }
    return this.schedule(this.nowMs + delayMs, path, args);
  }

  async runAt(time: number | Date, path: string, args: Record<string, unknown> = {}): Promise<DocumentId> {
    return this.schedule(timeMs(time), path, args);
  }

  async cancel(id: DocumentId): Promise<void> {
    const job = await this.job(id);
    if (job === null) throw new CairnError("DOCUMENT_NOT_FOUND", `scheduler.cancel: no scheduled job ${String(id)}`, { details: { id } });
    if (job.state.kind === "pending" || job.state.kind === "inProgress") this.db.replaceSystem(job._id, finishedJob(job, { kind: "canceled" }, this.nowMs));
  }

  /** Writes a job due at `dueMs` (a cron's tick with `cron`). */
  schedule(dueMs: number, path: string, args: Record<string, unknown>, cron?: { readonly name: string; readonly schedule: CronSchedule }): DocumentId {
    if (++this.scheduled > SCHEDULED_JOBS_PER_CALL_MAX) {
      throw new CairnError("FUNCTION_LIMIT_EXCEEDED", `a function may schedule at most ${SCHEDULED_JOBS_PER_CALL_MAX} jobs; schedule one job that schedules the rest`, {
        details: { limit: SCHEDULED_JOBS_PER_CALL_MAX },
      });
    }
    const fn = this.app.lookupSchedulable(path);
    if (typeof args !== "object" || args === null || Array.isArray(args)) throw new CairnError("INVALID_ARGUMENT", `the arguments of a scheduled ${path} must be an object`);
    const checked = validateWith(fn.args, args, { noun: "argument", root: "args" }, this.catalog.tableNumberOf) as Value;
    const fields = { name: path, kind: fn.kind, args: checked, scheduledTime: dueMs, state: { kind: "pending" }, ...(cron !== undefined ? { cron } : {}) };
    const id = this.db.insertSystem(SCHEDULED_FUNCTIONS_TABLE, fields as unknown as ValueObject, this.route);
    this.earliestMs = Math.min(this.earliestMs ?? dueMs, dueMs);
    return id;
  }

  /** The job `id` as this run sees it (null: none); INVALID_ARGUMENT for an id of another table. */
  async job(id: DocumentId): Promise<ScheduledJob | null> {
    const { table } = this.catalog.tableOfId(id);
    if (table.name !== SCHEDULED_FUNCTIONS_TABLE) throw new CairnError("INVALID_ARGUMENT", `${String(id)} is a document of ${table.name}, not a scheduled job`, { details: { id } });
    const document = await this.db.get(id);
    return document === null ? null : jobOf(document);
  }

  /**
   * Records that `job` ended with `state`, in this run's commit; a cron's tick schedules
   * the cron's next tick with it (on the same shard: the id's route), so the cron goes on
   * exactly once per tick whether this tick succeeded or failed.
   */
  recordEnd(job: ScheduledJob, state: JobState): void {
    this.db.replaceSystem(job._id, finishedJob(job, state, this.nowMs));
    if (job.cron === undefined || state.kind === "canceled") return;
    const nextMs = nextTickMs(job.cron.schedule, job.scheduledTime, this.nowMs);
    const route = routeOfId(parseDocumentId(job._id));
    const fields = { name: job.name, kind: job.kind, args: job.args, scheduledTime: nextMs, state: { kind: "pending" }, cron: job.cron };
    this.db.insertSystem(SCHEDULED_FUNCTIONS_TABLE, fields as unknown as ValueObject, route);
    this.earliestMs = Math.min(this.earliestMs ?? nextMs, nextMs);
  }

  /** Marks an action's job running (`startedTime` now), in this run's commit. */
  recordStart(job: ScheduledJob): void {
    this.db.replaceSystem(job._id, { ...jobFields(job), state: { kind: "inProgress", startedTime: this.nowMs } } as unknown as ValueObject);
  }
}

/** An action's scheduler: each call commits through a system mutation (actions have no transaction of their own). */
export function actionScheduler(nowMs: () => number, runMutation: (path: string, args: Record<string, unknown>) => Promise<Value>): Scheduler {
  return {
    runAfter: async (delayMs, path, args = {}) => {
      if (typeof delayMs !== "number" || !Number.isFinite(delayMs) || delayMs < 0) {
        throw new CairnError("INVALID_ARGUMENT", `scheduler.runAfter takes a delay of zero or more milliseconds, not ${String(delayMs)}`);
      }
      return (await runMutation("_system:scheduleJob", { dueMs: nowMs() + delayMs, path, args: args as Value })) as DocumentId;
    },
    runAt: async (time, path, args = {}) => (await runMutation("_system:scheduleJob", { dueMs: timeMs(time), path, args: args as Value })) as DocumentId,
    cancel: async (id) => {
      await runMutation("_system:cancelJob", { id });
    },
  };
}

function timeMs(time: number | Date): number {
  const ms = time instanceof Date ? time.getTime() : time;
  if (typeof ms !== "number" || !Number.isFinite(ms)) throw new CairnError("INVALID_ARGUMENT", `scheduler.runAt takes a time (ms since the epoch, or a Date), not ${String(time)}`);
  return ms;
}
