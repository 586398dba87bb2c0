import { z } from "zod";
import { CairnError, hasErrorCode } from "../base/index.js";
import { encodeValueText, parseDocumentId, routeOfId, type DocumentId, type Value, type ValueObject } from "../model/index.js";
import { nextTickMs, SCHEDULED_FUNCTIONS_TABLE, ZERO_ROUTE, type ScheduledJob } from "./scheduledFunctions.js";
import type { StorageReader, StorageWriter } from "./FileStorage.js";
import { STORAGE_TABLE } from "./storedFiles.js";
import type { MutationScheduler } from "./Scheduler.js";
import type { DatabaseReader, DatabaseWriter } from "./Database.js";
import type { IndexRangeBuilder } from "./IndexRangeBuilder.js";
import { paginationOptsValidator } from "./paginationOptsValidator.js";
import { internalMutation, internalQuery, type AnyFunction, type ShardBy } from "./registration.js";
import { routeForDocument } from "./routing.js";
import { v } from "./values.js";

/**
 * The system functions (`_system:*`): generic reads and writes of any table for admins —
 * the dashboard's data browser and editor (docs/admin-api.md). They are internal
 * functions run by the same runtime as the app's: a page is an index range read with its
 * read set (so a live subscription updates as commits land), and a write goes through
 * `ctx.db`, validated against the schema, committed with a read set like any mutation,
 * on the shard its document lives on.
 */
export const SYSTEM_MODULE = "_system";

const bound = v.object({ value: v.any(), inclusive: v.boolean() });

/** A page of `table` along `index` (default by_creation): equalities on its first fields, then bounds on the next. */
const page = internalQuery({
  args: {
    table: v.string(),
    index: v.optional(v.string()),
    order: v.optional(v.union(v.literal("asc"), v.literal("desc"))),
    eq: v.optional(v.array(v.any())),
    lower: v.optional(bound),
    upper: v.optional(bound),
    paginationOpts: paginationOptsValidator,
  },
  handler: async (ctx, args) => {
    const db = ctx.db as unknown as DatabaseReader;
    const table = db.catalog.table(args.table);
    const indexName = args.index ?? "by_creation";
    const index = table.indexes.get(indexName);
    if (index === undefined) {
      throw new CairnError("INVALID_ARGUMENT", `table ${table.name} has no index ${JSON.stringify(indexName)} (it has ${[...table.indexes.keys()].join(", ")})`);
    }
    const equal = args.eq ?? [];
    const rangeField = index.keyFields[equal.length];
    if (equal.length > index.keyFields.length || ((args.lower !== undefined || args.upper !== undefined) && rangeField === undefined)) {
      throw new CairnError("INVALID_ARGUMENT", `index ${table.name}.${indexName} has ${index.keyFields.length} key fields (${index.keyFields.join(", ")}): ${equal.length} equalities${args.lower !== undefined || args.upper !== undefined ? " and a range" : ""} do not fit`);
    }
    const range = (q: IndexRangeBuilder) => {
      equal.forEach((value, position) => q.eq(index.keyFields[position]!, value as Value));
      if (args.lower !== undefined) q[args.lower.inclusive ? "gte" : "gt"](rangeField!, args.lower.value as Value);
      if (args.upper !== undefined) q[args.upper.inclusive ? "lte" : "lt"](rangeField!, args.upper.value as Value);
      return q;
    };
    return db.queryAny(table.name).withIndex(indexName, range).order(args.order ?? "asc").paginate(args.paginationOpts);
  },
});

const get = internalQuery({
  args: { id: v.string() },
  handler: (ctx, args) => (ctx.db as unknown as DatabaseReader).get(args.id as DocumentId),
});

const insert = internalMutation({
  args: { table: v.string(), document: z.record(z.string(), v.any()) },
  handler: (ctx, args) => {
    for (const name of ["_id", "_creationTime"]) {
      if (Object.hasOwn(args.document, name)) throw new CairnError("INVALID_ARGUMENT", `a new document may not set the system field ${name}: the database assigns it`);
    }
    return (ctx.db as unknown as DatabaseWriter).insert(args.table, args.document as ValueObject);
  },
});

/** Import batch size bound: one commit's worth of documents (a unit is at most 16 MiB). */
export const IMPORT_BATCH_DOCUMENTS_MAX = 1_000;

/**
 * `cairn import`: documents with the ids and creation times they were exported with, all
 * of one shard, in one commit. Answers how many were written and how many were there
 * already, identical (an import run again writes nothing twice).
 */
const importBatch = internalMutation({
  args: { documents: z.array(z.object({ table: z.string(), document: z.record(z.string(), v.any()) })).min(1).max(IMPORT_BATCH_DOCUMENTS_MAX) },
  handler: async (ctx, args) => {
    const db = ctx.db as unknown as DatabaseWriter;
    let written = 0;
    for (const { table, document } of args.documents) {
      if ((await db.importDocument(table, document)) === "written") written++;
    }
    return { written, unchanged: args.documents.length - written };
  },
});

const replace = internalMutation({
  args: { id: v.string(), document: z.record(z.string(), v.any()) },
  handler: async (ctx, args) => {
    await (ctx.db as unknown as DatabaseWriter).replace(args.id as DocumentId, args.document as ValueObject);
    return null;
  },
});

const remove = internalMutation({
  args: { id: v.string() },
  handler: async (ctx, args) => {
    await (ctx.db as unknown as DatabaseWriter).delete(args.id as DocumentId);
    return null;
  },
});

/** A write of one document runs on the shard the document lives on: its id's route, or its shard key's. */
const onDocumentsShard: ShardBy = {
  kind: "route",
  of: (args, catalog) => {
    const batch = (args as { documents?: { document?: { _id?: unknown } }[] }).documents;
    // An import batch: every document of it on one shard, the one its first id names (the runtime refuses any other).
    const { id, table, document } = (batch !== undefined ? { id: batch[0]?.document?._id } : args) as { id?: string; table?: string; document?: Record<string, unknown> };
    if (id !== undefined) return catalog.tableOfId(id).table.shardKey === null ? null : routeOfId(parseDocumentId(id));
    return routeForDocument(catalog.table(table), document ?? {});
  },
};

// ---- the scheduler's (Scheduler.ts, server/JobRunner) ---------------------------------

/** A job's or a stored file's own shard (a table routed by id): the route its id carries. */
const onIdsShard: ShardBy = {
  kind: "route",
  of: (args) => {
    const { id, ids } = args as { id?: unknown; ids?: unknown[] };
    return routeOfId(parseDocumentId(id ?? ids?.[0]));
  },
};

function schedulerOf(ctx: unknown): MutationScheduler {
  return (ctx as { scheduler: MutationScheduler }).scheduler;
}

/** An action's ctx.scheduler.runAt / runAfter: the job is written on shard 0. */
const scheduleJob = internalMutation({
  args: { dueMs: v.number(), path: v.string(), args: v.any() },
  handler: (ctx, args) => schedulerOf(ctx).schedule(args.dueMs, args.path, args.args as Record<string, unknown>),
});

/** An action's ctx.scheduler.cancel. */
const cancelJob = internalMutation({
  args: { id: v.string() },
  handler: async (ctx, args) => {
    await schedulerOf(ctx).cancel(args.id as DocumentId);
    return null;
  },
});

/** The runner starts an action's job: pending → inProgress, committed before the action runs (at most once). False: it is not pending any more. */
const startJob = internalMutation({
  args: { id: v.string() },
  handler: async (ctx, args) => {
    const scheduler = schedulerOf(ctx);
    const job = await scheduler.job(args.id as DocumentId);
    if (job === null || job.state.kind !== "pending") return false;
    scheduler.recordStart(job);
    return true;
  },
});

/**
 * The runner records how a job ended, unless it already has: a job pending or running
 * takes `state`; a cancelled one takes a success only when `ranAnyway` (a mutation on
 * another shard committed before the cancellation reached the job).
 */
const finishJob = internalMutation({
  args: {
    id: v.string(),
    state: v.union(v.object({ kind: v.literal("success") }), v.object({ kind: v.literal("failed"), error: v.string() }), v.object({ kind: v.literal("canceled") })),
    ranAnyway: v.optional(v.boolean()),
  },
  handler: async (ctx, args) => {
    const scheduler = schedulerOf(ctx);
    const job = await scheduler.job(args.id as DocumentId);
    if (job === null) return false;
    const open = job.state.kind === "pending" || job.state.kind === "inProgress";
    if (!open && !(job.state.kind === "canceled" && args.ranAnyway === true && args.state.kind === "success")) return false;
    scheduler.recordEnd(job, args.state);
    return true;
  },
});

/** Deletes finished jobs of one shard that ended before `before` (their keeping ran out). */
const deleteJobs = internalMutation({
  args: { ids: z.array(v.string()).min(1).max(1_000), before: v.number() },
  handler: async (ctx, args) => {
    const db = ctx.db as unknown as DatabaseWriter;
    let deleted = 0;
    for (const id of args.ids) {
      const job = await schedulerOf(ctx).job(id as DocumentId);
      if (job === null || job.completedTime === undefined || job.completedTime >= args.before) continue;
      if (job.state.kind === "pending" || job.state.kind === "inProgress") continue;
      db.deleteSystem(job._id);
      deleted++;
    }
    return deleted;
  },
});

const cronSchedule = v.union(
  v.object({ kind: v.literal("interval"), ms: v.number() }),
  v.object({ kind: v.literal("cron"), expression: v.string(), timezone: v.optional(v.string()) }),
);

/**
 * Installs the app's crons on shard 0: exactly one pending tick per declared cron, the
 * same one while its function, arguments and schedule stay the same (a restart changes
 * nothing), a new one when they changed; ticks of crons no longer declared are
 * cancelled. A cron whose arguments its function refuses is reported, not installed;
 * the others are.
 */
const syncCrons = internalMutation({
  args: { crons: z.array(z.object({ name: v.string(), path: v.string(), args: v.any(), schedule: cronSchedule })).max(1_000) },
  handler: async (ctx, args) => {
    const scheduler = schedulerOf(ctx);
    const db = ctx.db as unknown as DatabaseWriter;
    const nowMs = ctx.now();
    const pendingTicks = async (name?: string) =>
      (await db
        .queryAny(SCHEDULED_FUNCTIONS_TABLE)
        .withIndex("by_pending_cron", (q) => (name === undefined ? q.eq("state.kind", "pending").gte("cron.name", "") : q.eq("state.kind", "pending").eq("cron.name", name)))
        .collect()) as unknown as ScheduledJob[];
    const report = { installed: [] as string[], kept: [] as string[], canceled: 0, refused: [] as { name: string; error: string }[] };
    const declared = new Set<string>();
    for (const cron of args.crons) {
      declared.add(cron.name);
      const ticks = await pendingTicks(cron.name);
      const same = (tick: ScheduledJob) =>
        tick.name === cron.path && encodeValueText(tick.args) === encodeValueText(cron.args as Value) && encodeValueText(tick.cron!.schedule as unknown as Value) === encodeValueText(cron.schedule as unknown as Value);
      const kept = ticks.find(same);
      for (const tick of ticks) {
        if (tick === kept) continue;
        scheduler.recordEnd(tick, { kind: "canceled" });
        report.canceled++;
      }
      if (kept !== undefined) {
        report.kept.push(cron.name);
        continue;
      }
      try {
        scheduler.schedule(nextTickMs(cron.schedule, nowMs, nowMs), cron.path, cron.args as Record<string, unknown>, { name: cron.name, schedule: cron.schedule });
        report.installed.push(cron.name);
      } catch (error) {
        if (!hasErrorCode(error, "INVALID_ARGUMENT") && !hasErrorCode(error, "FUNCTION_NOT_FOUND")) throw error;
        report.refused.push({ name: cron.name, error: (error as Error).message });
      }
    }
    for (const tick of await pendingTicks()) {
      if (declared.has(tick.cron!.name)) continue;
      scheduler.recordEnd(tick, { kind: "canceled" });
      report.canceled++;
    }
    return report;
  },
});

// ---- file storage's (FileStorage.ts, server/FileStore) ----------------------------------

/** An action's ctx.storage.getMetadata / getUrl. */
const fileMetadata = internalQuery({
  args: { id: v.string() },
  handler: (ctx, args) => (ctx as unknown as { storage: StorageReader }).storage.getMetadata(args.id as DocumentId) as unknown as Promise<Value>,
});

/** An action's ctx.storage.delete. */
const deleteFile = internalMutation({
  args: { id: v.string() },
  handler: async (ctx, args) => {
    await (ctx as unknown as { storage: StorageWriter }).storage.delete(args.id as DocumentId);
    return null;
  },
});

/** A finished upload's (or an action's store) file: its document, on shard 0. Its chunks are in the bucket already. */
const storeFile = internalMutation({
  args: { sha256: z.string().regex(/^[0-9a-f]{64}$/), size: z.number().int().min(0), contentType: v.optional(v.string()), upload: z.string().regex(/^[0-9a-f]{32}$/), chunkBytes: z.number().int().min(1) },
  handler: (ctx, args) => (ctx.db as unknown as DatabaseWriter).insertSystem(STORAGE_TABLE, args as unknown as ValueObject, ZERO_ROUTE),
});

const SYSTEM_FUNCTIONS: ReadonlyMap<string, AnyFunction> = new Map<string, AnyFunction>([
  [`${SYSTEM_MODULE}:fileMetadata`, fileMetadata as AnyFunction],
  [`${SYSTEM_MODULE}:deleteFile`, { ...(deleteFile as AnyFunction), shardBy: onIdsShard }],
  [`${SYSTEM_MODULE}:storeFile`, storeFile as AnyFunction],
  [`${SYSTEM_MODULE}:scheduleJob`, scheduleJob as AnyFunction],
  [`${SYSTEM_MODULE}:cancelJob`, { ...(cancelJob as AnyFunction), shardBy: onIdsShard }],
  [`${SYSTEM_MODULE}:startJob`, { ...(startJob as AnyFunction), shardBy: onIdsShard }],
  [`${SYSTEM_MODULE}:finishJob`, { ...(finishJob as AnyFunction), shardBy: onIdsShard }],
  [`${SYSTEM_MODULE}:deleteJobs`, { ...(deleteJobs as AnyFunction), shardBy: onIdsShard }],
  [`${SYSTEM_MODULE}:syncCrons`, syncCrons as AnyFunction],
  [`${SYSTEM_MODULE}:page`, page as AnyFunction],
  [`${SYSTEM_MODULE}:get`, get as AnyFunction],
  [`${SYSTEM_MODULE}:insert`, { ...(insert as AnyFunction), shardBy: onDocumentsShard }],
  [`${SYSTEM_MODULE}:replace`, { ...(replace as AnyFunction), shardBy: onDocumentsShard }],
  [`${SYSTEM_MODULE}:delete`, { ...(remove as AnyFunction), shardBy: onDocumentsShard }],
  [`${SYSTEM_MODULE}:importBatch`, { ...(importBatch as AnyFunction), shardBy: onDocumentsShard }],
]);

/** The system function at `path`, or undefined (not a system path, or no such function). */
export function systemFunction(path: string): AnyFunction | undefined {
  return path.startsWith(`${SYSTEM_MODULE}:`) ? SYSTEM_FUNCTIONS.get(path) : undefined;
}

