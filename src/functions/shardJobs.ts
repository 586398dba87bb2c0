import type { LocalStore } from "../local/index.js";
import type { Catalog } from "./catalog.js";
import { QueryChain } from "./QueryChain.js";
import { ReadRecorder } from "./ReadRecorder.js";
import { jobOf, SCHEDULED_FUNCTIONS_TABLE, type ScheduledJob } from "./scheduledFunctions.js";
import type { DocumentObject } from "./documents.js";
import { SnapshotReads } from "./SnapshotReads.js";
import { STORAGE_TABLE } from "./storedFiles.js";

/**
 * Reads of one shard's own part of the system tables, for the node's background work.
 *
 * What one shard's scheduler runner needs to know of that shard's jobs, read from its
 * local copy at `readTs` (the shard's own, not the deployment's frontier: a writer runs
 * its jobs whatever the other shards do). The reads go through a run over that one lane
 * only, so a table routed by id (`_scheduled_functions`) is read there and nowhere else.
 */
export interface ShardJobs {
  /** Pending jobs due at or before `nowMs`, earliest first, at most `limit`. */
  readonly due: ScheduledJob[];
  /** When the earliest pending job after `nowMs` is due (null: none is). */
  readonly nextDueMs: number | null;
  /** Actions marked running (by this node or a writer before it), at most `limit`; only with `upkeep` (default). */
  readonly running: ScheduledJob[];
  /** Finished jobs that ended before `finishedBeforeMs`, at most `limit`; only with `upkeep`. */
  readonly expired: ScheduledJob[];
}

export async function readShardJobs(
  local: LocalStore,
  readTs: number,
  catalog: Catalog,
  options: { readonly nowMs: number; readonly limit: number; readonly finishedBeforeMs: number; readonly upkeep?: boolean },
): Promise<ShardJobs> {
  const reads = new SnapshotReads([local], readTs, catalog, new ReadRecorder(), null);
  try {
    const table = catalog.table(SCHEDULED_FUNCTIONS_TABLE);
    const query = () => new QueryChain(reads, table);
    const jobs = (documents: DocumentObject[]) => documents.map(jobOf);
    const { nowMs, limit, finishedBeforeMs } = options;
    const due = jobs(await query().withIndex("by_due", (q) => q.eq("state.kind", "pending").lte("scheduledTime", nowMs)).take(limit));
    const next = await query().withIndex("by_due", (q) => q.eq("state.kind", "pending").gt("scheduledTime", nowMs)).first();
    const upkeep = options.upkeep ?? true;
    const running = upkeep ? jobs(await query().withIndex("by_due", (q) => q.eq("state.kind", "inProgress")).take(limit)) : [];
    const expired = upkeep ? jobs(await query().withIndex("by_completion", (q) => q.gt("completedTime", null).lt("completedTime", finishedBeforeMs)).take(Math.min(limit, 1_000))) : [];
    return { due, nextDueMs: next === null ? null : jobOf(next).scheduledTime, running, expired };
  } finally {
    reads.finish();
  }
}

/** Whether a stored file's document on shard `local` (at `readTs`) refers to upload `upload`: its chunks are still someone's. */
export async function uploadReferenced(local: LocalStore, readTs: number, catalog: Catalog, upload: string): Promise<boolean> {
  const reads = new SnapshotReads([local], readTs, catalog, new ReadRecorder(), null);
  try {
    const table = catalog.table(STORAGE_TABLE);
    return (await new QueryChain(reads, table).withIndex("by_upload", (q) => q.eq("upload", upload)).first()) !== null;
  } finally {
    reads.finish();
  }
}
