import { Cron } from "croner";
import { CairnError } from "../base/index.js";
import { ROUTE_BYTES, type DocumentId, type Value, type ValueObject } from "../model/index.js";
import type { DocumentObject } from "./documents.js";
import { defineTable, type TableDefinition } from "./schema.js";
import { v } from "./values.js";

/**
 * The scheduler's system table, `_scheduled_functions`: one document per scheduled run of
 * a mutation or an action (ctx.scheduler.runAfter / runAt) and per tick of a cron. A job
 * is written in the transaction that schedules it, on that transaction's shard, so a
 * mutation that schedules work and then fails schedules nothing; the shard's writer runs
 * it when it is due (server/JobRunner) and records its outcome in the same document,
 * which is why a live query of the table shows a job's progress.
 *
 * The table is routed by id (ROUTED_BY_ID): a job's id carries the route of the
 * mutation that scheduled it (its shardBy value's, or the zero route, which jump hashing
 * sends to shard 0 under every shard count), so the job lives on that mutation's shard
 * and moves with its route in a reshard.
 *
 * States: pending → (an action: inProgress →) success | failed; pending or inProgress →
 * canceled. A finished job is kept SCHEDULED_JOBS_KEPT_MS, then deleted by its runner.
 */
export const SCHEDULED_FUNCTIONS_TABLE = "_scheduled_functions";
/** A system table's shard key when its documents are placed by the route their id carries, chosen at insert. */
export const ROUTED_BY_ID = "_id";
/** Shard 0 under every shard count: jump hashing keeps key 0 in bucket 0 (see model/shardFor). */
export const ZERO_ROUTE: Uint8Array = new Uint8Array(ROUTE_BYTES);

const cronSchedule = v.union(
  v.object({ kind: v.literal("interval"), ms: v.number() }),
  v.object({ kind: v.literal("cron"), expression: v.string(), timezone: v.optional(v.string()) }),
);

const jobState = v.union(
  v.object({ kind: v.literal("pending") }),
  v.object({ kind: v.literal("inProgress"), startedTime: v.number() }),
  v.object({ kind: v.literal("success") }),
  v.object({ kind: v.literal("failed"), error: v.string() }),
  v.object({ kind: v.literal("canceled") }),
);

export function scheduledFunctionsTable(): TableDefinition {
  const table = defineTable({
    /** The function's path, "module:name". */
    name: v.string(),
    kind: v.union(v.literal("mutation"), v.literal("action")),
    args: v.any(),
    scheduledTime: v.number(),
    completedTime: v.optional(v.number()),
    state: jobState,
    /** A cron's tick: the cron's name and schedule (the next tick is scheduled when this one finishes). */
    cron: v.optional(v.object({ name: v.string(), schedule: cronSchedule })),
  })
    .index("by_due", ["state.kind", "scheduledTime"])
    .index("by_pending_cron", ["state.kind", "cron.name"])
    .index("by_completion", ["completedTime"]);
  table.shardKeyField = ROUTED_BY_ID;
  return table;
}


export type CronSchedule = { readonly kind: "interval"; readonly ms: number } | { readonly kind: "cron"; readonly expression: string; readonly timezone?: string };

export type JobState =
  | { readonly kind: "pending" }
  | { readonly kind: "inProgress"; readonly startedTime: number }
  | { readonly kind: "success" }
  | { readonly kind: "failed"; readonly error: string }
  | { readonly kind: "canceled" };

/** A job's fields, as stored (its document without `_id`, `_creationTime`). */
export interface JobFields {
  readonly name: string;
  readonly kind: "mutation" | "action";
  readonly args: Value;
  readonly scheduledTime: number;
  readonly completedTime?: number;
  readonly state: JobState;
  readonly cron?: { readonly name: string; readonly schedule: CronSchedule };
}

export interface ScheduledJob extends JobFields {
  readonly _id: DocumentId;
  readonly _creationTime: number;
}

export function jobOf(document: DocumentObject): ScheduledJob {
  return document as unknown as ScheduledJob;
}

export function jobFields(job: ScheduledJob): JobFields {
  const { _id: _ignoredId, _creationTime: _ignoredTime, ...fields } = job;
  return fields;
}

/** The fields of `job` once it ended with `state` at `nowMs`. */
export function finishedJob(job: ScheduledJob, state: JobState, nowMs: number): ValueObject {
  return { ...jobFields(job), state, completedTime: nowMs } as unknown as ValueObject;
}

/**
 * When the tick after one due at `dueMs` is, seen at `nowMs`: the schedule's first time
 * after both (ticks missed while no writer ran are skipped, not run in a burst).
 */
export function nextTickMs(schedule: CronSchedule, dueMs: number, nowMs: number): number {
  const after = Math.max(dueMs, nowMs);
  if (schedule.kind === "interval") {
    const periods = Math.floor((after - dueMs) / schedule.ms) + 1;
    return dueMs + periods * schedule.ms;
  }
  const next = cronOf(schedule).nextRun(new Date(after));
  if (next === null) throw new CairnError("INVALID_ARGUMENT", `cron expression ${JSON.stringify(schedule.expression)} has no time after ${new Date(after).toISOString()}`);
  return next.getTime();
}

/** A paused croner job for `schedule` (it never fires on its own: only nextRun is asked of it). */
export function cronOf(schedule: Extract<CronSchedule, { kind: "cron" }>): Cron {
  try {
    return new Cron(schedule.expression, { paused: true, ...(schedule.timezone !== undefined ? { timezone: schedule.timezone } : {}) });
  } catch (error) {
    throw new CairnError("SCHEMA_INVALID", `cron expression ${JSON.stringify(schedule.expression)}${schedule.timezone !== undefined ? ` in ${schedule.timezone}` : ""} is invalid: ${(error as Error).message}`, {
      cause: error,
    });
  }
}
